#!/bin/sh
# SPDX-License-Identifier: MIT
# Two processes on one host that may not read each other's memory (here:
# different users, as in two containers) must not use the same-host
# transport: the receiver says why once at INFO and the comm runs over the
# network, where the checks still pass.  The same pair as one user must
# take the same-host path.  Needs root (to start a process as nobody).
#
# usage: ce-fallback.sh ZSM-CONFORMANCE PLUGIN.so
set -u
kit=$1 plugin=$2
checks=order,grouped_n,send_too_large,data_sizes,many_comms
out=$(mktemp -d)
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
status=0
fail() {
	echo "FAIL: $*"
	status=1
}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to run a rank as another user"; exit 77; }
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: needs setpriv (util-linux)"; exit 77; }
nobody=$(id -u nobody 2>/dev/null) || { echo "SKIP: no user nobody"; exit 77; }
# nobody must be able to load the plugin and run the kit: a build folder
# under a private directory (mktemp -d) is not reachable for it, so both
# run from copies in $out.
cp "$kit" "$out/zsm-conformance" && cp "$plugin" "$out/libnccl-net-zsm.so" &&
	chmod 755 "$out/zsm-conformance" "$out/libnccl-net-zsm.so" ||
	{ echo "FAIL: cannot copy the kit and the plugin to $out"; exit 1; }
kit=$out/zsm-conformance plugin=$out/libnccl-net-zsm.so
setpriv --reuid="$nobody" --regid="$(id -g nobody)" --clear-groups \
	test -r "$plugin" -a -x "$kit" ||
	{ echo "SKIP: $plugin or $kit is not readable by nobody"; exit 77; }
port=$((20000 + $$ % 40000))

# pair TAG AS-NOBODY CHECKS: rank 0 (the sender) as root, rank 1 (the
# receiver) as root or nobody; logs in $out.
pair() {
	port=$((port + 1))
	run1=
	[ "$2" = yes ] && run1="setpriv --reuid=$nobody --regid=$(id -g nobody) --clear-groups"
	env ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_CLIENT_LOG=info "$kit" \
		--rendezvous 127.0.0.1:$port --rank 0 --nranks 2 --join-timeout 30 \
		--only $3 "$plugin" >"$out/$1-0" 2>"$out/$1-0.err" &
	pid=$!
	$run1 env ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_CLIENT_LOG=info HOME=/tmp \
		"$kit" --rendezvous 127.0.0.1:$port --rank 1 --nranks 2 \
		--join-timeout 30 --only $3 "$plugin" \
		>"$out/$1-1" 2>"$out/$1-1.err"
	echo $? >"$out/$1-1.rc"
	wait $pid
	echo $? >"$out/$1-0.rc"
}

echo "== receiver as nobody: must fall back to the network"
pair apart yes $checks
cat "$out/apart-0"
[ "$(cat "$out/apart-0.rc")" = 0 ] && [ "$(cat "$out/apart-1.rc")" = 0 ] ||
	fail "the kit failed: ranks exited $(cat "$out/apart-0.rc") and $(cat "$out/apart-1.rc")"
grep 'ce: pid' "$out/apart-1.err" | head -n 1
# Once per process (each check is one; many_comms has 64 comms), not once
# per comm.
n=$(grep -c 'use the network' "$out/apart-1.err")
[ "$n" -ge 1 ] && [ "$n" -le 5 ] ||
	fail "the receivers said 'use the network' $n times, not once per process"
grep -q 'Operation not permitted' "$out/apart-1.err" ||
	fail "the reason does not name the refused permission"
grep -q 'cross-memory attach' "$out/apart-1.err" &&
	fail "a comm took the same-host path anyway"

# Only which path it takes: conformance-default runs the whole catalog
# over the same-host path.
echo "== both as root: must take the same-host path"
pair together no order
[ "$(cat "$out/together-0.rc")" = 0 ] && [ "$(cat "$out/together-1.rc")" = 0 ] ||
	fail "the kit failed as one user"
grep -q 'cross-memory attach' "$out/together-1.err" ||
	fail "no comm took the same-host path as one user"
if [ $status != 0 ]; then
	tail -n 15 "$out/apart-1.err" "$out/together-1.err"
fi
exit $status
