#!/bin/sh
# SPDX-License-Identifier: MIT
# Corruption past TCP's checksum (issue 12, case 11).  Two namespaces
# joined by a veth pair with offloads off (real MSS-sized segments whose
# checksums the receiving side verifies).  Where rank 0's segments enter
# rank 1's veth end, zsm-tamper flips a byte in 1 of 1024 words of
# zsm-netfault's corrupt pattern, deep inside long TCP segments, and fixes
# the TCP checksum: only message data is hit, never a protocol header.  Rank 0 sends 4 comms x 48
# messages (16 KiB to 4 MiB: rxm's eager, segmented and rendezvous
# protocols), rank 1 checks every byte and counts the altered messages that
# test() reported as good receives.
#   run 1, checksum off (the default): the count is printed, not judged;
#   run 2, ZSM_CHECKSUM=1: one altered message reported as good fails.
# Both runs must have altered some message, or the test tested nothing.
#
# usage: corrupt.sh ZSM-NETFAULT ZSM-TAMPER PLUGIN.so
# Needs root, ip(8) and a kernel that runs tc BPF programs on a tcx link
# (Linux 6.6 or later); skips (77) without them.
set -u
netfault=$1 tamper=$2 plugin=$3
. "$(dirname "$0")/lib.sh"
scale=${ZSM_TEST_TIME_SCALE:-1}

nf_setup
nf_cleanup_hook='[ -f "$out/tamper.pid" ] && kill "$(cat "$out/tamper.pid")" 2>/dev/null'

for side in "$nsa $va" "$nsb $vb"; do
	# shellcheck disable=SC2086
	set -- $side
	ip netns exec "$1" "$tamper" offload-off "$2" 2>"$out/offload" ||
		echo "note: offloads stay on for $2 ($(tr '\n' ' ' <"$out/offload")): segments may be GSO packets"
done

# tamper_start RUN: the corrupt program on rank 1's ingress; 77 from it
# (the kernel cannot) skips the test with its reason.
tamper_start() {
	# (ip netns exec execs the program: $! is the program itself.)
	ip netns exec "$nsb" "$tamper" corrupt "$vb" >"$out/tamper.$1" 2>&1 &
	echo $! >"$out/tamper.pid"
	if ! nf_wait_line "$out/tamper.$1" 'attached\|SKIP' 10; then
		nf_fail "zsm-tamper did not attach in 10 s"
		cat "$out/tamper.$1"
		exit 1
	fi
	if grep -q SKIP "$out/tamper.$1"; then
		wait "$(cat "$out/tamper.pid")"
		rm -f "$out/tamper.pid"
		nf_skip "cannot alter packets in flight: $(grep SKIP "$out/tamper.$1" | sed 's/.*SKIP: //')"
	fi
}
# TCP segments that rank 1's kernel dropped for a bad checksum.
csum_errors() {
	ip netns exec "$nsb" cat /proc/net/snmp | awk '/^Tcp:/ {
		if (!n++) { for (i = 1; i <= NF; i++) if ($i == "InCsumErrors") k = i }
		else print (k ? $k : 0) }'
}

# tamper_stop RUN: detach, print its counters, set $altered.
tamper_stop() {
	pid=$(cat "$out/tamper.pid")
	kill "$pid"
	wait "$pid"
	rm -f "$out/tamper.pid"
	grep 'corrupt on' "$out/tamper.$1"
	altered=$(sed -n 's/.* altered=\([0-9]*\).*/\1/p' "$out/tamper.$1")
	altered=${altered:-0}
}

# run NAME ZSM_CHECKSUM-SETTING: one pair; sets $undetected, $detected.
run() {
	tamper_start "$1"
	nf_env=$2
	nf_pair "$1" --plugin "$plugin" --mode corrupt --comms 4 --msgs 48 \
		--drain $((60 * scale)) --timeout $((150 * scale))
	rc=$?
	tamper_stop "$1"
	# A segment whose checksum the tamper broke is dropped and resent by
	# TCP: then the test would be testing TCP, not zsm.
	bad_csum=$(csum_errors)
	echo "rank 1's TCP: $bad_csum segments dropped for a bad checksum so far"
	[ "${bad_csum:-0}" = 0 ] ||
		nf_fail "$1: the altered segments did not keep a valid TCP checksum"
	line=$(grep '^undetected=' "$out/$1.1")
	undetected=$(echo "$line" | sed -n 's/^undetected=\([0-9]*\).*/\1/p')
	detected=$(echo "$line" | sed -n 's/.* detected=\([0-9]*\).*/\1/p')
	undetected=${undetected:-0} detected=${detected:-0}
	[ "$altered" -gt 0 ] ||
		nf_fail "$1: zsm-tamper altered no segment: nothing was tested"
	[ $((undetected + detected)) -gt 0 ] ||
		nf_fail "$1: $altered segments altered, yet no message arrived altered"
	return $rc
}

echo "== checksum off (default): altered messages are counted, not judged"
run off "ZSM_CHECKSUM=0" ||
	nf_fail "off: the run itself failed (a hang, an error or a short message)"
echo "checksum off: $undetected altered messages reported as good receives, $detected reported as errors ($altered segments altered)"

echo "== ZSM_CHECKSUM=1: every altered message must be an error"
run on "ZSM_CHECKSUM=1" ||
	nf_fail "ZSM_CHECKSUM=1: $undetected altered messages reported as good receives (or the run failed)"
echo "ZSM_CHECKSUM=1: $undetected altered messages reported as good receives, $detected reported as errors ($altered segments altered)"
[ "$detected" -gt 0 ] ||
	nf_fail "ZSM_CHECKSUM=1 reported no altered message as an error"
[ $status = 0 ] && echo "PASS"
exit $status
