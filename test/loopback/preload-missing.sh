#!/bin/sh
# SPDX-License-Identifier: MIT
# zsm-conformance with ZSM_CLIENT_PRELOAD naming a library that does not
# exist: it must exit non-zero, name the variable and the library, and
# run no check.
#
# usage: preload-missing.sh ZSM-CONFORMANCE PLUGIN.so
set -u
kit=$1 plugin=$2
out=$(ZSM_CLIENT_PRELOAD="libzsm-no-such-lib.so.7" "$kit" --only order \
	"$plugin" 2>&1)
rc=$?
echo "$out"
status=0
[ $rc != 0 ] || { echo "FAIL: the kit exited 0"; status=1; }
echo "$out" | grep -q 'ZSM_CLIENT_PRELOAD: cannot load libzsm-no-such-lib.so.7' ||
	{ echo "FAIL: no error naming the variable and the library"; status=1; }
if echo "$out" | grep -q '^PASS\|^FAIL order\|passed,'; then
	echo "FAIL: a check ran"
	status=1
fi
exit $status
