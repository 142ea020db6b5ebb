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
# and with the link back a fresh pair moves data byte-exact.
# Needs root and ip(8); skips (77) without them.
#
# usage: rails-linkdown.sh ZSM-BENCH PLUGIN.so
set -u
bench=$1 plugin=$2

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

echo "== a 16 MiB stream; $down (path 1) goes down after 3 s"
t0=$(date +%s)
run cut --test stream --sizes 16M --iters 1000000 --reps 1 --warmup 0 \
	--no-verify --timeout 120
sleep 3
ip -n "$nsa" link set "$down" down
wait $p0
r0=$?
t0e=$(($(date +%s) - t0))
wait $p1
r1=$?
t1e=$(($(date +%s) - t0))
echo "rank 0 exited $r0 after ${t0e} s, rank 1 exited $r1 after ${t1e} s"
for r in 0 1; do
	grep -h 'WARN' "$out/cut.$r.err" | sed 's/^.*NET\/zsm: //' |
		sed "s/^/rank $r's plugin: /"
	tail -n 1 "$out/cut.$r.err"
done
[ $r0 = 1 ] && [ $r1 = 1 ] ||
	nf_fail "both ranks should end with a failed transfer (1), not $r0 and $r1"
# 3 s before the cut, 2 s of silence, up to 2 probe rounds and the
# peer's exit: 20 s is far beyond any of it, and far below a hang.
[ $t1e -le 20 ] || nf_fail "the ranks took $t1e s to fail"
# Whichever side finds the fault first says so, naming path 1 and its
# own end of the link: its probe timed out, or (2.6's tcp;ofi_rxm, a cut
# before the stream's first message) the provider failed a send there;
# the other may then find its peer gone instead.
down_b=$(printf '%s\n' $links_b | sort | sed -n 2p)
grep -h "path 1 (NIC $down): " "$out/cut.0.err" >/dev/null ||
	grep -h "path 1 (NIC $down_b): " "$out/cut.1.err" >/dev/null ||
	nf_fail "no rank named path 1 and its NIC ($down, $down_b) for the fault"
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
exit $status
