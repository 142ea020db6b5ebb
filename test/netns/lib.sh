# SPDX-License-Identifier: MIT
# Sourced by the tests across two network namespaces: two "hosts" joined
# by a veth pair, named uniquely from $$, torn down on exit.  After
# nf_setup: $nsa/$nsb (namespaces), $va/$vb (their veth ends), $addr_a,
# $addr_b, and $out (a scratch folder, removed on exit).  nf_in NS CMD
# runs a command in a namespace as a user of zsm would: provider tcp,
# no ZSM_DOMAIN (each side takes its veth by itself).
# shellcheck shell=sh

nf_skip() {
	echo "SKIP: $*"
	exit 77
}
nf_fail() {
	echo "FAIL: $*"
	status=1
}

# Extra cleanup steps (kill a helper) go in nf_cleanup_hook.
nf_cleanup_hook=:
nf_cleanup() {
	eval "$nf_cleanup_hook"
	ip netns del "$nsa" 2>/dev/null
	ip netns del "$nsb" 2>/dev/null
	[ -n "${ZSM_NETNS_KEEP:-}" ] && cp -r "$out" "$ZSM_NETNS_KEEP"; rm -rf "$out"
}

nf_setup() {
	[ "$(id -u)" = 0 ] || nf_skip "needs root to create network namespaces"
	command -v ip >/dev/null 2>&1 || nf_skip "needs ip(8) (iproute2)"
	# Short unique names: interface names stop at 15 characters.
	id=$$
	nsa=zsm-a-$id nsb=zsm-b-$id
	va=zsa$id vb=zsb$id
	net=10.$((200 + id % 50)).$((id / 50 % 250)).
	addr_a=${net}1 addr_b=${net}2
	out=$(mktemp -d)
	status=0
	trap nf_cleanup EXIT
	trap 'exit 1' INT TERM
	ip netns add "$nsa" 2>"$out/err" ||
		nf_skip "cannot create a network namespace: $(cat "$out/err")"
	ip netns add "$nsb" &&
		ip link add "$va" type veth peer name "$vb" &&
		ip link set "$va" netns "$nsa" &&
		ip link set "$vb" netns "$nsb" &&
		ip -n "$nsa" addr add "$addr_a/24" dev "$va" &&
		ip -n "$nsb" addr add "$addr_b/24" dev "$vb" &&
		ip -n "$nsa" link set lo up && ip -n "$nsb" link set lo up &&
		ip -n "$nsa" link set "$va" up && ip -n "$nsb" link set "$vb" up ||
		nf_skip "cannot build the veth pair between the namespaces"
}

# nf_links N, after nf_setup: N links between the hosts in all, the
# first being $va-$vb; each further one k is veth zs<k>a$id-zs<k>b$id on
# a /30 of its own.  Sets $links_a and $links_b (each side's interfaces,
# link by link) and $addrs_b (rank 1's address on each link).
nf_links() {
	links_a=$va links_b=$vb addrs_b=$addr_b
	k=1
	while [ $k -lt "$1" ]; do
		la=zs${k}a$id lb=zs${k}b$id
		sub=10.$((150 + id % 50)).$((id / 50 % 250))
		ip link add "$la" type veth peer name "$lb" &&
			ip link set "$la" netns "$nsa" &&
			ip link set "$lb" netns "$nsb" &&
			ip -n "$nsa" addr add "$sub.$((4 * k + 1))/30" dev "$la" &&
			ip -n "$nsb" addr add "$sub.$((4 * k + 2))/30" dev "$lb" &&
			ip -n "$nsa" link set "$la" up &&
			ip -n "$nsb" link set "$lb" up ||
			nf_skip "cannot build veth pair $k between the namespaces"
		links_a="$links_a $la" links_b="$links_b $lb"
		addrs_b="$addrs_b $sub.$((4 * k + 2))"
		k=$((k + 1))
	done
}

# IPATH_NO_BACKTRACE and HFI_NO_BACKTRACE: Debian's libfabric loads the
# psm libraries, whose crash handler can hang a process that crashed
# (issue 12, case 9); a crash must end the test, not stall it.
# ZSM_NETNS_PROVIDER: the ranks' provider (default tcp, which on
# libfabric 2.6 is its own tcp endpoint; tcp;ofi_rxm reproduces the
# link cut that 2.6's rxm does not always fail in time, docs/results.md).
nf_in() {
	ns=$1
	shift
	ip netns exec "$ns" env -u ZSM_DOMAIN \
		ZSM_PROVIDER="${ZSM_NETNS_PROVIDER:-tcp}" \
		IPATH_NO_BACKTRACE=1 HFI_NO_BACKTRACE=1 "$@"
}

# nf_wait_line FILE PATTERN SECONDS: wait until FILE has a line matching
# PATTERN; 1 when it never came.
nf_wait_line() {
	i=0
	while [ $i -lt $(($3 * 10)) ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# nf_pair NAME ARGS...: zsm-netfault rank 0 in $nsa and rank 1 in $nsb,
# with ARGS (plus --rank and --ctl), a host identity of its own each
# (ZSM_HOSTID) and $nf_env in the environment of both; their output goes to $out/NAME.0 and .1 (printed), and $?
# is 0 when both passed (rank 1: when it exited $nf_want1, 0 unless set:
# 137 for a rank 1 that rank 0 kills).
nf_pair() {
	name=$1
	shift
	ctl=$out/$name.ctl
	# shellcheck disable=SC2086
	nf_in "$nsa" ZSM_HOSTID=netns-a $nf_env "$netfault" --rank 0 \
		--ctl "$ctl" "$@" >"$out/$name.0" 2>"$out/$name.0.err" &
	p0=$!
	# shellcheck disable=SC2086
	nf_in "$nsb" ZSM_HOSTID=netns-b $nf_env "$netfault" --rank 1 --ctl "$ctl" "$@" \
		>"$out/$name.1" 2>"$out/$name.1.err"
	r1=$?
	wait $p0
	r0=$?
	cat "$out/$name.0" "$out/$name.1"
	# What the plugin said about it, once per kind of line.
	for r in 0 1; do
		grep -h 'WARN' "$out/$name.$r.err" | sed 's/^.*NET\/zsm: //' |
			sort | uniq -c | sort -rn | head -n 8 |
			sed "s/^/rank $r's plugin:/"
	done
	if [ $r0 != 0 ] || [ $r1 != "${nf_want1:-0}" ]; then
		echo "-- $name: rank 0 exited $r0, rank 1 exited $r1; their stderr (last lines):"
		tail -n 15 "$out/$name.0.err" "$out/$name.1.err"
		return 1
	fi
	return 0
}
