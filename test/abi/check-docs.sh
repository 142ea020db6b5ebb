#!/bin/sh
# SPDX-License-Identifier: MIT
# docs/configuration.md must be what zsm-info renders from the ZSM_* table.
set -eu
info="$1"
doc="$2"
if ! "$info" --params-md | diff -u "$doc" -; then
	echo "docs/configuration.md is stale: run"
	echo "  build/tools/zsm-info --params-md > docs/configuration.md"
	exit 1
fi
echo "docs/configuration.md is current"
