#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# nccl-vs-socket.sh: NCCL through zsm's network path against NCCL's own
# Socket transport, on the GPU machine, under MPS (issue 34, item 6).
# Two ranks on GPU 0 as two hosts (nccl_check.py --one-gpu gives each its
# NCCL_HOSTID), over loopback, in three variants:
#
#     zsm      the plugin, ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_CE=0
#     socket   NCCL_NET=Socket with its defaults
#     socket1  NCCL_NET=Socket, NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1
#              (the faster of the two under MPS in ../shared/gpu-machine.md)
#
# Each run checks sendrecv, all_reduce and all_gather exactly (float32)
# at 1, 16 and 256 MiB, then times them at those sizes.  A round runs the
# three variants once, in an order rotated every round so that no variant
# always goes first; all rounds share one machine start and one build.
# Without MPS the two ranks take turns on the GPU by time slices, which
# hides every transport's speed: MPS lets their kernels run at once.
#
# Runs ON that machine from the repo root with .debs carried:
#
#     bash test/gpu/nccl-vs-socket.sh [-r ROUNDS] [--quick]
#
# -r: rounds (default 5).  --quick: 64 KiB and 1 MiB, one round, a dry run.
# -v: the variants, comma-separated (default zsm,socket,socket1).  A zsm
# variant may add settings, each a dash and a letter with its value, for
# finding where zsm's time goes: pN ZSM_NET_PATHS=N, dN ZSM_NET_DUPLEX=N,
# tN ZSM_NET_TX_PUMPS=N, aN ZSM_PROXY_ASSIST=N, i ZSM_PROXY=inline, eK
# FI_OFI_RXM_EAGER_LIMIT=K KiB (rxm's eager protocol up to K KiB instead
# of its rendezvous; zsm refuses more than 64 MiB) (so zsm-p4-d0 is 4
# paths without duplex endpoints).  --base SO: variants named base
# (base-p4, ...) run that plugin instead of this tree's build, to
# compare two builds of zsm alternated in one run.
# Prints, per op and size, each variant's median bus bandwidth over the
# rounds and each zsm variant's over the best socket one's, and writes that table to
# $OUT/nccl-vs-socket.log, every run's result to $OUT/nccl-vs-socket.json
# and the runs' logs and JSONs to $OUT/nccl-vs-socket-raw.tar.gz (the
# device tool brings back eight files at most).  Exit 0 only when every
# run passed with exact results on the transport it was meant to use;
# the ratio is information, never a gate.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
BUILD=${ZSM_BUILD:-/tmp/zsm-build}
PY=${PYTHON:-python3}
raw=${ZSM_NVS_RAW:-/tmp/zsm-nccl-vs-socket}
variants=(zsm socket socket1)
ops=sendrecv,all_reduce,all_gather

usage() {
	echo "usage: bash test/gpu/nccl-vs-socket.sh [-r ROUNDS] [-v VARIANTS] [--base SO] [--quick]" >&2
	echo "  (-h for what it does)" >&2
	exit 2
}
rounds='' quick=0 base=
while [ $# -gt 0 ]; do
	case $1 in
	-r) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
	-r*) rounds=${1#-r}; shift ;;
	-v) [ $# -ge 2 ] || usage; IFS=, read -r -a variants <<<"$2"; shift 2 ;;
	--base) [ $# -ge 2 ] || usage; base=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "nccl-vs-socket.sh: unknown argument '$1'" >&2; usage ;;
	esac
done
[ -n "$rounds" ] || rounds=$([ $quick = 1 ] && echo 1 || echo 5)
case $rounds in
'' | *[!0-9]* | 0) echo "nccl-vs-socket.sh: -r wants a whole number >= 1, not '$rounds'" >&2; usage ;;
esac
# zsm_env VARIANT: the settings a zsm variant adds, one per line.
zsm_env() {
	local w
	# the words after the name's zsm or base
	IFS=- read -r -a w <<<"${1#*[em]}"
	for w in "${w[@]}"; do
		case $w in
		'') ;;
		p[1-8]) echo "ZSM_NET_PATHS=${w#p}" ;;
		d[01]) echo "ZSM_NET_DUPLEX=${w#d}" ;;
		t[1-4]) echo "ZSM_NET_TX_PUMPS=${w#t}" ;;
		a[01]) echo "ZSM_PROXY_ASSIST=${w#a}" ;;
		i) echo "ZSM_PROXY=inline" ;;
		e[1-9] | e[1-9][0-9] | e[1-9][0-9][0-9] | e[1-9][0-9][0-9][0-9] | e[1-6][0-9][0-9][0-9][0-9])
			echo "FI_OFI_RXM_EAGER_LIMIT=$((${w#e} * 1024))" ;;
		*) return 1 ;;
		esac
	done
}
for v in "${variants[@]}"; do
	case $v in
	socket | socket1) ;;
	zsm | zsm-*) zsm_env "$v" >/dev/null && continue ;&
	base | base-*) [ -n "$base" ] && zsm_env "$v" >/dev/null && continue ;&
	*) echo "nccl-vs-socket.sh: unknown variant '$v'" >&2; usage ;;
	esac
done
case " ${variants[*]} " in
*" socket "* | *" socket1 "*) ;;
*) echo "nccl-vs-socket.sh: -v needs socket or socket1, the baseline" >&2; usage ;;
esac
if [ $quick = 1 ]; then
	sizes=65536,1048576 iters=(--warmup 1 --iters 3)
else
	sizes=1048576,16777216,268435456 iters=(--warmup 2 --iters 10)
fi

mkdir -p "$OUT"
rm -rf "$raw"
mkdir -p "$raw"
sum="$OUT/nccl-vs-socket.log"
: >"$sum"
fail=0
say() { echo "$*" | tee -a "$sum"; }

build() {
	local log="$OUT/nccl-vs-socket-build.log"
	# shellcheck source=test/gpu/deps.sh
	. "$here/deps.sh"
	zsm_gpu_deps "$repo" "${ZSM_DEPS:-/tmp/zsm-deps}" "$log" >/dev/null || return 1
	{ [ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" "$repo" -Dbuildtype=release
	  ninja -C "$BUILD"; } >>"$log" 2>&1 || { tail -n 20 "$log"; return 1; }
	plugin=$BUILD/plugin/libnccl-net-zsm.so
}

# The daemon outlives this shell unless told to quit, and a second start
# on a fresh machine would find the first one's pipe.
mps_dir=/tmp/zsm-nvs-mps
export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
mps_on=0
mps_start() {
	mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
	nvidia-cuda-mps-control -d || return 1
	mps_on=1
	trap mps_stop EXIT
	trap 'exit 130' INT TERM
}
# shellcheck disable=SC2317  # the EXIT trap calls it
mps_stop() {
	[ "$mps_on" = 1 ] || return 0
	echo quit | nvidia-cuda-mps-control
	mps_on=0
}

# Every variant gets the same base: bootstrap and Socket on loopback (the
# machine reaches nothing else), NVLink multicast off, and INFO lines that
# name the transport each channel took.
# shellcheck disable=SC2054  # NCCL_DEBUG_SUBSYS takes a comma list
common=(NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=lo NCCL_NET_PLUGIN_REF_COUNT=1
	NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET CUDA_MODULE_LOADING=EAGER
	TORCH_NCCL_ASYNC_ERROR_HANDLING=1)
variant_env() {
	case $1 in
	zsm* | base*) echo NCCL_NET_PLUGIN="$([ "${1#base}" = "$1" ] && echo "$plugin" || echo "$base")" \
			NCCL_NET=zsm ZSM_PROVIDER=tcp ZSM_DOMAIN=lo ZSM_CE=0
		zsm_env "$1" ;;
	socket) echo NCCL_NET_PLUGIN=none NCCL_NET=Socket ;;
	socket1) echo NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1 ;;
	esac
}

# One run: exact checks, then bandwidth, of one variant.  A run that passed
# on the wrong transport (NCCL fell back, or zsm took ce) is a failure.
run_one() { # variant round
	local v=$1 r=$2 label="$1-r$2" log rc want vias cma
	log="$raw/nccl-$label.log"
	# shellcheck disable=SC2046  # variant_env's words are VAR=value, no spaces
	env "${common[@]}" $(variant_env "$v") timeout -k 10 180 \
		"$PY" "$here/nccl_check.py" --one-gpu --label "$label" --out "$raw" \
		--timeout 150 --ops "$ops" --dtypes float32 --sizes "$sizes" \
		--bw-sizes "$sizes" "${iters[@]}" >"$log" 2>&1
	rc=$?
	want=$(case $v in zsm* | base*) echo 'via NET/zsm' ;; *) echo 'via NET/Socket' ;; esac)
	vias=$(grep -c "$want" "$log")
	cma=$(grep -c 'cross-memory attach' "$log")
	say "round $r $v: rc $rc, $vias '$want' lines, $SECONDS s;" \
		"$(grep -E "^\[$label\] (PASS|FAIL)" "$log" | tail -n 1)"
	if [ $rc != 0 ] || [ "$vias" = 0 ] || [ "$cma" != 0 ]; then
		fail=1
		[ "$cma" != 0 ] && say "  FAIL: zsm took ce ($cma lines) on the network path"
		{ grep -E "^\[$label\] (rank [0-9]+ (ERROR|MISMATCH)|killing)|NCCL WARN" "$log" ||
			tail -n 5 "$log"; } | head -n 5 | sed 's/^/  /' | tee -a "$sum"
	fi
}

# Medians over the rounds, from the runs' JSONs; its exit status says
# whether every run is there, passed, and measured every op and size.
table() {
	"$PY" - "$raw" "$rounds" "$ops" "$sizes" "$OUT/nccl-vs-socket.json" "${variants[@]}" <<'EOF'
import json, os, statistics, sys
raw, rounds, ops, sizes, out = sys.argv[1:6]
variants = sys.argv[6:]
ops, sizes = ops.split(","), [int(s) for s in sizes.split(",")]
runs, bad = {}, []
for v in variants:
    for r in range(1, int(rounds) + 1):
        p = os.path.join(raw, "nccl-%s-r%d.json" % (v, r))
        try:
            with open(p) as f:
                runs[(v, r)] = json.load(f)
        except (OSError, ValueError) as e:
            bad.append("%s round %d: no result (%s)" % (v, r, e))
            continue
        if not runs[(v, r)]["pass"]:
            bad.append("%s round %d: did not pass" % (v, r))
with open(out, "w") as f:
    json.dump([dict(variant=v, round=r, **j) for (v, r), j in sorted(runs.items())], f, indent=1)
hdr = "%-11s %7s" % ("op", "size") + "".join("%10s" % v for v in variants)
print("median busbw GB/s over %s rounds (float32)" % rounds)
socks = [v for v in variants if v.startswith("socket")]
zsms = [v for v in variants if not v.startswith("socket")]
print(hdr + "".join("  %s/sock" % v for v in zsms))
for op in ops:
    for size in sizes:
        med = {}
        for v in variants:
            bw = [b["busbw_gbps"] for (vv, r), j in runs.items() if vv == v
                  for b in j["bandwidth"] if b["op"] == op and b["size"] == size]
            if len(bw) != int(rounds):
                bad.append("%s %s %d: %d of %s rounds measured" % (v, op, size, len(bw), rounds))
            med[v] = statistics.median(bw) if bw else float("nan")
        base = max(med[v] for v in socks)
        label = "%dMiB" % (size >> 20) if size >= 1 << 20 else "%dKiB" % (size >> 10)
        print("%-11s %7s" % (op, label) + "".join("%10.3f" % med[v] for v in variants)
              + "".join("  %*.2f" % (len(v) + 5, med[v] / base if base > 0 else float("nan"))
                        for v in zsms))
for b in bad:
    print("FAIL: " + b)
print("every run passed its exact checks and timed every op and size: %s"
      % ("no" if bad else "yes"))
sys.exit(1 if bad else 0)
EOF
}

build || { say "build: FAIL"; exit 1; }
say "build: PASS ($SECONDS s)"
mps_start || { say "MPS: nvidia-cuda-mps-control -d failed"; exit 1; }
say "MPS: control daemon started, pipes in $CUDA_MPS_PIPE_DIRECTORY"
say "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
for ((r = 1; r <= rounds; r++)); do
	for ((k = 0; k < ${#variants[@]}; k++)); do
		run_one "${variants[(r - 1 + k) % ${#variants[@]}]}" $r
	done
	[ $r = 1 ] && say "MPS servers: $(echo get_server_list | nvidia-cuda-mps-control | tr '\n' ' ')"
done
grep -hE '^\[[a-z0-9]+-r1\] rank 0:' "$raw"/nccl-zsm-r1.log 2>/dev/null | tee -a "$sum"
table | tee -a "$sum" || fail=1
tar -C "$raw" -czf "$OUT/nccl-vs-socket-raw.tar.gz" . 2>/dev/null
say "nccl-vs-socket: $([ $fail = 0 ] && echo PASS || echo FAIL) ($SECONDS s)"
exit $fail
