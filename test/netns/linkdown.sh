#!/bin/sh
# SPDX-License-Identifier: MIT
# Peers that vanish without closing (issue 12, case 10).  Two namespaces
# joined by a veth pair; in each, zsm-netfault holds 4 send and 4 receive
# comms with a stream of messages, a receive that waits and a send in
# flight on every comm, ZSM_PEER_CHECK_MS=1000 and ZSM_PEER_TIMEOUT_MS=
# 2000 (the default, 20 s, rides out outages of 10 s: liveness.sh).  Then:
#   down     one veth end is set down (ip link set down);
#   drop     every packet is dropped at both ends while the links stay up
#            (netem "loss 100%" where the kernel has netem, else a tc BPF
#            program, zsm-tamper drop);
# and every comm on both sides must fail all its requests with an error
# within $bound s of the cut (printed: when, and what error); then the
# network comes back, the old comms are closed, and fresh comms between
# the same two processes must carry byte-exact data.  Last, congest: the
# link stays up, every rank posts 160 sends of 256 KiB on each of 16 send
# comms and no receive for 12 s, so the provider's queues fill; no
# request may fail, and every byte must arrive.
#
# usage: linkdown.sh ZSM-NETFAULT ZSM-TAMPER PLUGIN.so [VARIANT...]
#   (VARIANT: down, drop, congest; all three by default)
# Needs root and ip(8); skips (77) without them.
set -u
netfault=$1 tamper=$2 plugin=$3
shift 3
variants=${*:-down drop congest}
. "$(dirname "$0")/lib.sh"

# The documented bound is ZSM_PEER_TIMEOUT_MS plus the provider's own
# limit; 20 s is generous for 2 s on a loaded machine and far below the
# 60 s outage (and TCP's 15 minutes).  ZSM_TEST_TIME_SCALE stretches it.
check_ms=1000 timeout_ms=2000
scale=${ZSM_TEST_TIME_SCALE:-1}
bound=$((20 * scale))

nf_setup
nf_cleanup_hook='for f in "$out"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done'

# The cut and the restore of each variant, as scripts that rank 0 runs
# (from its namespace: ip -n and ip netns exec reach either one).
cat >"$out/down.cut" <<EOF
ip -n $nsb link set $vb down
EOF
cat >"$out/down.restore" <<EOF
ip -n $nsb link set $vb up
EOF

if tc -n "$nsa" qdisc add dev "$va" root netem loss 100% 2>/dev/null; then
	tc -n "$nsa" qdisc del dev "$va" root
	drop_how="netem loss 100% on both veth ends"
	cat >"$out/drop.cut" <<EOF
tc -n $nsa qdisc add dev $va root netem loss 100% &&
tc -n $nsb qdisc add dev $vb root netem loss 100%
EOF
	cat >"$out/drop.restore" <<EOF
tc -n $nsa qdisc del dev $va root; tc -n $nsb qdisc del dev $vb root
EOF
else
	drop_how="zsm-tamper drop on both veth ends (no netem in this kernel)"
	# Both programs attached (their "attached" line), or the cut failed.
	cat >"$out/drop.cut" <<EOF
for side in "$nsa $va a" "$nsb $vb b"; do
	set -- \$side
	ip netns exec \$1 $tamper drop \$2 >$out/drop.\$3 2>&1 &
	echo \$! >$out/drop.\$3.pid
done
for s in a b; do
	i=0
	until grep -q attached $out/drop.\$s; do
		i=\$((i + 1))
		[ \$i -lt 100 ] || { cat $out/drop.\$s; exit 1; }
		sleep 0.1
	done
done
EOF
	cat >"$out/drop.restore" <<EOF
for s in a b; do
	pid=\$(cat $out/drop.\$s.pid)
	kill \$pid
	while kill -0 \$pid 2>/dev/null; do sleep 0.05; done
	rm -f $out/drop.\$s.pid
	cat $out/drop.\$s
done
EOF
	# A kernel that cannot run the program skips this variant only.
	# (ip netns exec execs the program: $! is the program itself.)
	ip netns exec "$nsa" "$tamper" drop "$va" >"$out/probe" 2>&1 &
	pid=$!
	nf_wait_line "$out/probe" 'attached\|SKIP' 10
	kill $pid 2>/dev/null
	wait $pid
	if ! grep -q attached "$out/probe"; then
		drop_skip=$(grep SKIP "$out/probe" || echo "zsm-tamper did not attach")
	fi
fi

nf_env="ZSM_PEER_CHECK_MS=$check_ms ZSM_PEER_TIMEOUT_MS=$timeout_ms"
ran=0
for v in $variants; do
	t0=$(date +%s)
	case $v in
	down | drop)
		if [ "$v" = drop ] && [ -n "${drop_skip:-}" ]; then
			echo "== drop: SKIP: $drop_skip"
			continue
		fi
		if [ "$v" = down ]; then
			echo "== down: ip link set $vb down in $nsb for the cut"
		else
			echo "== drop: $drop_how, links up"
		fi
		nf_pair "$v" --plugin "$plugin" --mode linkdown --comms 4 \
			--bound "$bound" --timeout $((180 * scale)) \
			--cut "sh $out/$v.cut" --restore "sh $out/$v.restore" ||
			nf_fail "$v: a comm did not fail within $bound s of the cut, or the fresh comms did not work"
		;;
	congest)
		echo "== congest: 16 comm pairs each way, 160 sends of 256 KiB on each, receives held back 12 s"
		nf_pair congest --plugin "$plugin" --mode congest --comms 16 \
			--depth 160 --size 262144 --hold 12 \
			--drain $((60 * scale)) --timeout $((240 * scale)) ||
			nf_fail "congest: a request failed (or data was wrong) while the queues were full"
		;;
	*)
		nf_fail "unknown variant $v"
		continue
		;;
	esac
	ran=$((ran + 1))
	echo "-- $v took $(($(date +%s) - t0)) s"
done
[ $ran -gt 0 ] || nf_skip "no variant could run"
[ $status = 0 ] && echo "PASS: $ran variants"
exit $status
