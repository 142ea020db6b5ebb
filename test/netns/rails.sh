#!/bin/sh
# SPDX-License-Identifier: MIT
# Two hosts joined by N links (network namespaces, a veth pair per link,
# each its own tcp domain), the NICs of each host grouped into one device
# (ZSM_NET_GROUP=all: veths are not on PCI):
#   1. zsm-info names one device over the N NICs;
#   2. the conformance kit passes between the hosts on it (data_sizes:
#      every size to 64 MiB at odd offsets, exact);
#   3. zsm-bench streams 64 MiB with each link carrying its even share of
#      the bytes, within 10 %;
#   4. a peer with one link (ZSM_DOMAIN names it): both use one path,
#      exact data, the bytes on that link alone;
#   5. RMA conformance between forked ranks of one host (as two hosts)
#      on its grouped device;
#   6. with every NIC a device (ZSM_NET_GROUP=nic), the kit's properties
#      and makeVDevice checks: NCCL's own fusion of devices 0 and 1.
# Needs root and ip(8); skips (77) without them.
#
# usage: rails.sh N ZSM-CONFORMANCE ZSM-BENCH ZSM-INFO PLUGIN.so
set -u
nlinks=$1 kit=$2 bench=$3 info=$4 plugin=$5

. "$(dirname "$0")/lib.sh"
nf_setup
nf_links "$nlinks"
export ZSM_NET_GROUP=all

tx_bytes() {
	ip -n "$1" -s -j link show "$2" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])' 2>/dev/null ||
		echo 0
}
# "IF BYTES" per line, rank 0's links: bytes sent since the last call.
tx_mark() {
	for l in $links_a; do echo "$l $(tx_bytes "$nsa" "$l")"; done >"$out/tx.$1"
}
tx_moved() {
	join "$out/tx.$1" "$out/tx.$2" | awk '{ print $1, $3 - $2 }'
}
# pair NAME ENV-B ARGS...: zsm-bench, rank 0 in $nsa and rank 1 (with
# the variables ENV-B, space-separated, or "") in $nsb.
pair() {
	name=$1 envb=$2
	shift 2
	nf_in "$nsa" ZSM_HOSTID=netns-a "$bench" --plugin "$plugin" \
		--rendezvous "$rdv" --rank 0 --nranks 2 "$@" \
		>"$out/$name.0" 2>"$out/$name.0.err" &
	pid=$!
	# shellcheck disable=SC2086
	nf_in "$nsb" ZSM_HOSTID=netns-b $envb "$bench" --plugin "$plugin" \
		--rendezvous "$rdv" --rank 1 --nranks 2 "$@" \
		>"$out/$name.1" 2>"$out/$name.1.err"
	rc1=$?
	wait $pid
	rc0=$?
	cat "$out/$name.0"
	[ $rc0 = 0 ] && [ $rc1 = 0 ] && return 0
	nf_fail "$name: zsm-bench exited $rc0 (rank 0) and $rc1 (rank 1)"
	tail -n 20 "$out/$name.0.err" "$out/$name.1.err"
	return 1
}
rdv=$addr_a:29400

echo "== 1. $nlinks links: $links_a"
nf_in "$nsa" "$info" >"$out/info" 2>&1
grep -E '^  \[[0-9]+\] name=|NICs:|paths per comm' "$out/info"
[ "$(grep -c '^  \[[0-9]*\] name=' "$out/info")" = 1 ] ||
	nf_fail "zsm-info shows other than one device"
grep -q "NICs: $nlinks NICs (ZSM_NET_GROUP=all)" "$out/info" ||
	nf_fail "zsm-info does not say the device spans the $nlinks NICs"

echo "== 2. zsm-conformance between the hosts"
nf_in "$nsa" ZSM_HOSTID=netns-a "$kit" --rendezvous "$rdv" --rank 0 \
	--nranks 2 --join-timeout 60 "$plugin" >"$out/k0" 2>"$out/k0.err" &
pid=$!
nf_in "$nsb" ZSM_HOSTID=netns-b "$kit" --rendezvous "$rdv" --rank 1 \
	--nranks 2 --join-timeout 60 "$plugin" >"$out/k1" 2>"$out/k1.err"
rc1=$?
wait $pid
rc0=$?
grep -E '^(PASS|FAIL|SKIP) |passed' "$out/k0"
[ $rc0 = 0 ] && [ $rc1 = 0 ] ||
	nf_fail "the kit's ranks exited $rc0 and $rc1"
grep -q '^PASS data_sizes' "$out/k0" || nf_fail "data_sizes did not pass"

echo "== 3. 64 MiB streams: each link's share of the bytes"
# 52 messages of 64 MiB (1 checked, 3 warm-up, 3 x 16 timed): a whole
# number of turns over 2 or 4 paths, so an even share is exact.
tx_mark s0
pair stream "" --test stream --sizes 64M --iters 16 --warmup 3 --reps 3
tx_mark s1
tx_moved s0 s1 >"$out/moved"
cat "$out/moved"
awk -v n="$nlinks" '{ b[NR] = $2; t += $2 }
	END {
		if (t < 3 * 16 * 64 * 1048576) { print "only " t " bytes"; exit 1 }
		for (i = 1; i <= NR; i++) {
			r = b[i] * n / t
			printf "link %d: %.3f of an even share\n", i, r
			if (r < 0.9 || r > 1.1) bad = 1
		}
		exit bad
	}' "$out/moved" || nf_fail "a link's share is not within 10 % of even"

echo "== 4. a peer with one link"
first_b=$(printf '%s\n' $links_b | sort | head -n 1)
tx_mark f0
pair fewer "ZSM_DOMAIN=$first_b" --sizes 0,4097,1M,16M --reps 3
tx_mark f1
tx_moved f0 f1 | sort >"$out/fewer"
cat "$out/fewer"
# Rank 0's link to that one is the first of its own by name too.
first_a=$(printf '%s\n' $links_a | sort | head -n 1)
awk -v one="$first_a" '$1 == one { on = $2 } $1 != one && $2 > 4 * 1048576 { bad = 1 }
	END { exit bad || on < 16 * 1048576 }' "$out/fewer" ||
	nf_fail "with a one-link peer the bytes did not stay on $first_a"

echo "== 5. RMA conformance on the grouped device"
nf_in "$nsa" ZSM_RMA=1 "$kit" --rma --ranks 2 --max-size 4M \
	--signals 2000 "$plugin" >"$out/rma" 2>"$out/rma.err"
rc=$?
grep -E '^(PASS|FAIL|SKIP) |passed' "$out/rma"
[ $rc = 0 ] || nf_fail "RMA conformance exited $rc"

echo "== 6. every NIC a device (ZSM_NET_GROUP=nic), fused by makeVDevice"
# v12 hands makeVDevice 8 slots, v9 to v11 4: both shapes.
for abi in 12 9; do
	nf_in "$nsa" ZSM_HOSTID=netns-a ZSM_NET_GROUP=nic "$kit" --abi $abi \
		--rendezvous "$rdv" --rank 0 --nranks 2 --join-timeout 60 \
		--only properties,vdevice "$plugin" >"$out/v0" 2>"$out/v0.err" &
	pid=$!
	nf_in "$nsb" ZSM_HOSTID=netns-b ZSM_NET_GROUP=nic "$kit" --abi $abi \
		--rendezvous "$rdv" --rank 1 --nranks 2 --join-timeout 60 \
		--only properties,vdevice "$plugin" >"$out/v1" 2>"$out/v1.err"
	rc1=$?
	wait $pid
	rc0=$?
	grep -E '^(PASS|FAIL|SKIP) |^# .*fuses|passed' "$out/v0"
	[ $rc0 = 0 ] && [ $rc1 = 0 ] && grep -q '^PASS vdevice' "$out/v0" ||
		nf_fail "v$abi: makeVDevice's check did not pass (ranks exited $rc0, $rc1)"
done

if [ $status != 0 ]; then
	echo "-- stderr (last lines)"
	tail -n 20 "$out/k0.err" "$out/k1.err" "$out/rma.err"
fi
exit $status
