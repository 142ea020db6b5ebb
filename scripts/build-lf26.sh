#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds libfabric 2.6 from TARBALL (../shared/libfabric-2.6.0's, a git
# archive: autogen runs first) into DIR/prefix, with the providers zsm's
# tests run on without special hardware: tcp (2.x's own RDM endpoint),
# rxm over it, and sockets (rma-plan's provider with ordered atomics).
# A build from the same tarball and script already in DIR is kept.
# Needs autoconf, automake and libtool (scripts/setup-debian.sh).
#
#     sh scripts/build-lf26.sh TARBALL DIR
set -eu
[ $# -eq 2 ] || { echo "usage: $0 TARBALL DIR" >&2; exit 2; }
src=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)
# The tarball and this script (its configure line) name a build.
sum=$(cat "$src" "$0" | sha256sum | cut -d ' ' -f 1)
if [ -e "$dir/prefix/lib/libfabric.so" ] &&
	[ "$(cat "$dir/prefix/.tarball" 2>/dev/null)" = "$sum" ]; then
	echo "lf26: libfabric 2.6 already built in $dir/prefix"
	exit 0
fi
rm -rf "$dir/src" "$dir/prefix"
mkdir -p "$dir/src"
tar -C "$dir/src" -xJf "$src"
log=$dir/build.log
start=$(date +%s)
if ! (cd "$dir"/src/libfabric-* && ./autogen.sh &&
	./configure --prefix="$dir/prefix" --disable-static \
		--disable-dependency-tracking --enable-only \
		--enable-tcp --enable-rxm --enable-sockets &&
	make -j"$(nproc)" install) >"$log" 2>&1; then
	tail -n 30 "$log"
	echo "lf26: building libfabric 2.6 failed (all of it in $log)"
	exit 1
fi
echo "$sum" >"$dir/prefix/.tarball"
echo "lf26: libfabric 2.6 built in $dir/prefix in $(($(date +%s) - start)) s"
