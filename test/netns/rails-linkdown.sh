#!/bin/sh
# SPDX-License-Identifier: MIT
# One link of several going down mid-stream (docs/net.md, "Devices over
# several NICs"): two hosts joined by 3 links, each side's NICs one
# device (ZSM_NET_GROUP=all), a 16 MiB stream between them, and the link
# of path 1 (neither path 0, which carries the comm's control messages,
# nor the link the ranks met over) taken down.  Both ranks' comms must
# fail within ZSM_PEER_TIMEOUT_MS (2 s here) and a few probe intervals,
# not hang; the rank that finds the fault first (silence, or a send the
# provider failed) says so once, naming path 1 and its end of the link;
# and with the link back a fresh pair moves data byte-exact.  Last, the
# same link dead from the start (zsm-tamper drops every packet it sends,
# the link up): the comm's handshake on path 0 works, path 1's never
# does, and both ranks must still fail within the same bound, one of them
# naming path 1 (a send waiting there for the path's first GRANT was
# once seen by no liveness check, and both ranks hung).
# Needs root and ip(8); skips (77) without them.
#
# usage: rails-linkdown.sh ZSM-BENCH PLUGIN.so ZSM-TAMPER
set -u
bench=$1 plugin=$2 tamper=$3

. "$(dirname "$0")/lib.sh"
nf_setup
nf_links 3
export ZSM_NET_GROUP=all ZSM_PEER_TIMEOUT_MS=2000
rdv=$addr_a:29400
# Rails go by name: the first is path 0, the second path 1; $va (the
# meeting link) sorts last.
down=$(printf '%s\n' $links_a | sort | sed -n 2p)
[ "$down" != "$va" ] || nf_fail "the link to take down is the meeting one"

run() {
	name=$1
	shift
	nf_in "$nsa" ZSM_HOSTID=netns-a "$bench" --plugin "$plugin" \
		--rendezvous "$rdv" --rank 0 --nranks 2 "$@" \
		>"$out/$name.0" 2>"$out/$name.0.err" &
	p0=$!
	nf_in "$nsb" ZSM_HOSTID=netns-b "$bench" --plugin "$plugin" \
		--rendezvous "$rdv" --rank 1 --nranks 2 "$@" \
		>"$out/$name.1" 2>"$out/$name.1.err" &
	p1=$!
}

# failed_in_time NAME: both ranks of run NAME failed their transfer (1)
# within 20 s of t0 (3 s before a cut, 2 s of silence, up to 2 probe
# rounds and the peer's exit: far beyond any of it, far below a hang),
# and one of them named path 1 and its own end of the link: its probe
# timed out, or (2.6's tcp;ofi_rxm, a cut before the stream's first
# message) the provider failed a send there; the other may then find its
# peer gone instead.
down_b=$(printf '%s\n' $links_b | sort | sed -n 2p)
failed_in_time() {
	wait $p0
	r0=$?
	t0e=$(($(date +%s) - t0))
	wait $p1
	r1=$?
	t1e=$(($(date +%s) - t0))
	echo "rank 0 exited $r0 after ${t0e} s, rank 1 exited $r1 after ${t1e} s"
	for r in 0 1; do
		grep -h 'WARN' "$out/$1.$r.err" | sed 's/^.*NET\/zsm: //' |
			sed "s/^/rank $r's plugin: /"
		tail -n 1 "$out/$1.$r.err"
	done
	[ $r0 = 1 ] && [ $r1 = 1 ] ||
		nf_fail "$1: both ranks should end with a failed transfer (1), not $r0 and $r1"
	[ $t1e -le 20 ] || nf_fail "$1: the ranks took $t1e s to fail"
	grep -h "path 1 (NIC $down): " "$out/$1.0.err" >/dev/null ||
		grep -h "path 1 (NIC $down_b): " "$out/$1.1.err" >/dev/null ||
		nf_fail "$1: no rank named path 1 and its NIC ($down, $down_b)"
}

echo "== a 16 MiB stream; $down (path 1) goes down after 3 s"
t0=$(date +%s)
run cut --test stream --sizes 16M --iters 1000000 --reps 1 --warmup 0 \
	--no-verify --timeout 120
sleep 3
ip -n "$nsa" link set "$down" down
failed_in_time cut
for r in 0 1; do
	[ "$(grep -c 'WARN.*nothing heard' "$out/cut.$r.err")" -le 1 ] ||
		nf_fail "rank $r said the silence more than once"
done

echo "== the link back up: a fresh pair, data checked"
ip -n "$nsa" link set "$down" up
sleep 1
run back --sizes 4097,1M,16M --reps 3
wait $p0
r0=$?
wait $p1
r1=$?
cat "$out/back.0"
[ $r0 = 0 ] && [ $r1 = 0 ] ||
	nf_fail "after the link came back zsm-bench exited $r0 and $r1"

echo "== $down dead from the start (every packet dropped, link up)"
nf_cleanup_hook='for f in "$out"/drop.*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done; sleep 0.2'
for side in "$nsa $down a" "$nsb $down_b b"; do
	set -- $side
	# ip netns exec execs the program: $! is zsm-tamper itself.
	ip netns exec "$1" "$tamper" drop "$2" >"$out/drop.$3" 2>&1 &
	echo $! >"$out/drop.$3.pid"
done
for s in a b; do
	nf_wait_line "$out/drop.$s" 'attached\|SKIP' 10
	grep -q attached "$out/drop.$s" || {
		cat "$out/drop.$s"
		# A kernel that cannot run the program skips this part only.
		grep -q SKIP "$out/drop.$s" && exit $status
		nf_fail "zsm-tamper did not attach on $s's end"
		exit $status
	}
done
t0=$(date +%s)
run dead --test stream --sizes 16M --iters 1000000 --reps 1 --warmup 0 \
	--no-verify --timeout 120
failed_in_time dead
exit $status
