#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job: install what is missing, build, and run a two-process
# benchmark through the plugin's ncclNet table on this host.  Both ranks
# are on one host, so the data takes the same-host transport (ZSM_CE=1,
# the default); ZSM_CE=0 sends it over tcp on 127.0.0.1 instead.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/setup-debian.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
export ZSM_PROVIDER="${ZSM_PROVIDER:-tcp}" ZSM_DOMAIN="${ZSM_DOMAIN:-lo}"
build/tools/zsm-info | sed -n '1p;/^same-host/p;/^devices/,$p'
exec build/tools/zsm-bench --test both "$@"
