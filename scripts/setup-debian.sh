#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs what building and testing zsm needs on Debian 12, skipping what
# is already there.  Run as root.
set -eu
# gdb: test api-put-chain reads the call stack of a put at its write.
pkgs="gcc pkg-config meson ninja-build libfabric-dev libfabric-bin
libcmocka-dev valgrind python3 gdb"
# libfabric 2.6's source in ../shared is a git archive: autogen needs these
# (scripts/build-lf26.sh; scripts/test.sh builds it where it is there).
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$here/../shared/libfabric-2.6.0/libfabric-2.6.0.tar.xz" ]; then
	pkgs="$pkgs autoconf automake libtool make"
fi
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing
else
	echo "setup: everything needed is installed"
fi
