#!/bin/sh
# SPDX-License-Identifier: MIT
# Two hosts on one machine: two network namespaces joined by a veth pair,
# each side its own ZSM_HOSTID.  The conformance kit runs as rank 0 in one
# (given --rank/--nranks) and rank 1 in the other (given Open MPI's
# variables, as mpirun would), then zsm-bench runs one pair the same way
# with Slurm's variables.  Needs root and ip(8); skips (77) without them.
#
# usage: netns.sh ZSM-CONFORMANCE ZSM-BENCH PLUGIN.so
set -u
kit=$1 bench=$2 plugin=$3

. "$(dirname "$0")/lib.sh"
nf_setup

tx_bytes() {
	ip -n "$1" -s -j link show "$2" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])' 2>/dev/null ||
		echo 0
}

rdv=$addr_a:29400
tx0=$(tx_bytes "$nsa" "$va")
nf_in "$nsa" ZSM_HOSTID=netns-a "$kit" --rendezvous "$rdv" --rank 0 \
	--nranks 2 --join-timeout 60 "$plugin" >"$out/k0" 2>"$out/k0.err" &
pid=$!
nf_in "$nsb" ZSM_HOSTID=netns-b OMPI_COMM_WORLD_RANK=1 \
	OMPI_COMM_WORLD_SIZE=2 "$kit" --rendezvous "$rdv" --join-timeout 60 \
	"$plugin" >"$out/k1" 2>"$out/k1.err"
rc1=$?
wait $pid
rc0=$?
tx1=$(tx_bytes "$nsa" "$va")
echo "== zsm-conformance, rank 0 in $nsa ($addr_a), rank 1 in $nsb ($addr_b)"
cat "$out/k0"
[ $rc0 = 0 ] || nf_fail "rank 0 of the kit exited $rc0"
[ $rc1 = 0 ] || nf_fail "rank 1 of the kit exited $rc1"
grep -q '^[0-9]* passed, 0 failed, [0-9]* skipped$' "$out/k0" ||
	nf_fail "the kit's summary has failures (or none)"
# Only the GPU check may skip, for want of a GPU, peer_closes, a zsm
# rule the kit checks only with --zsm-rules (loopback-v12 runs it), and
# vdevice, for want of a second device to fuse (netns-rails-2 runs it).
if grep '^SKIP' "$out/k0" | grep -v '^SKIP gpu_buffers' |
	grep -v '^SKIP peer_closes' | grep -v '^SKIP vdevice' | grep -q .; then
	nf_fail "a check other than gpu_buffers, peer_closes and vdevice skipped"
fi
grep -q '^PASS data_sizes' "$out/k0" || nf_fail "data_sizes did not pass"
# data_sizes alone sends 1 GiB from rank 0: it must have crossed the veth.
moved=$((tx1 - tx0))
echo "veth $va (rank 0's side) sent $moved bytes during the run"
[ "$moved" -gt 1073741824 ] ||
	nf_fail "only $moved bytes crossed the veth: the ranks did not talk over it"
# Each plugin must take the other for a different host (init_cycles
# connects a process to itself, which is the same host: leave it out).
nf_in "$nsa" ZSM_HOSTID=netns-a ZSM_CLIENT_LOG=info "$kit" \
	--rendezvous "$rdv" --rank 0 --nranks 2 --join-timeout 60 \
	--only order,many_comms "$plugin" >"$out/h0" 2>"$out/h0.err" &
pid=$!
nf_in "$nsb" ZSM_HOSTID=netns-b ZSM_CLIENT_LOG=info "$kit" \
	--rendezvous "$rdv" --rank 1 --nranks 2 --join-timeout 60 \
	--only order,many_comms "$plugin" >"$out/h1" 2>"$out/h1.err"
wait $pid
grep -q '^2 passed, 0 failed' "$out/h0" || nf_fail "the logged run failed"
for side in 0 1; do
	if grep -q 'same host' "$out/h$side.err"; then
		nf_fail "rank $side's plugin took its peer for the same host"
	elif ! grep -q 'other host' "$out/h$side.err"; then
		nf_fail "rank $side's plugin logged no 'other host' comm"
	fi
	grep -q 'cross-memory attach' "$out/h$side.err" &&
		nf_fail "rank $side took the same-host transport across hosts"
done

echo "== zsm-bench, Slurm's variables"
nf_in "$nsa" ZSM_HOSTID=netns-a SLURM_PROCID=0 SLURM_NTASKS=2 "$bench" \
	--plugin "$plugin" --rendezvous "$rdv" --sizes 4096,1048576 --reps 3 \
	>"$out/b0" 2>"$out/b0.err" &
pid=$!
nf_in "$nsb" ZSM_HOSTID=netns-b SLURM_PROCID=1 SLURM_NTASKS=2 "$bench" \
	--plugin "$plugin" --rendezvous "$rdv" --sizes 4096,1048576 --reps 3 \
	>"$out/b1" 2>"$out/b1.err"
rc1=$?
wait $pid
rc0=$?
cat "$out/b0"
[ $rc0 = 0 ] && [ $rc1 = 0 ] ||
	{ nf_fail "zsm-bench exited $rc0 (rank 0) and $rc1 (rank 1)"; tail -n 20 "$out/b0.err" "$out/b1.err"; }
grep -q '^stream  *1M ' "$out/b0" || nf_fail "zsm-bench printed no 1 MiB stream row"

if [ $status != 0 ]; then
	echo "-- stderr of the kit's ranks (last lines)"
	tail -n 20 "$out/k0.err" "$out/k1.err" "$out/h0.err" "$out/h1.err"
fi
exit $status
