#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# pingpong-vs-fi.sh: zsm's ping-pong (tools/zsm-bench through the plugin)
# against libfabric's own fi_pingpong, same provider (tcp;ofi_rxm over lo),
# same sizes, same iteration counts, run alternately and back to back.
#
#     bench/pingpong-vs-fi.sh [-b BUILD] [-r ROUNDS] [-s SIZES] [-i ITERS]
#                             [-p PORT] [-t SECONDS] [--raw FILE]
#
#   -b BUILD    meson build folder holding tools/zsm-bench and
#               plugin/libnccl-net-zsm.so (default: build, under the repo)
#   -r ROUNDS   rounds per size and tool (default 5); the medians are reported
#   -s SIZES    comma list, K/M/G suffixes are binary (default 8,1M,4M,16M,64M)
#   -i ITERS    round trips per run; default per size: 256 MiB / size,
#               clamped to 10..10000 (8 B: 10000, 1 MiB: 256, 64 MiB: 10)
#   -p PORT     first control port for fi_pingpong (default 47800); each run
#               takes the next free one
#   -t SECONDS  limit for one run of either tool (default 120)
#   --raw FILE  also write every sample as CSV: round,tool,size,iters,usec,gbps
#   --zsm-warmup N  warm-up round trips for zsm-bench (default 0, see below)
#
# Builds nothing: build first (meson setup build && ninja -C build).
#
# What is compared.  fi_pingpong prints, per run, "usec/xfer" = time /
# (2 * iterations), i.e. half a round trip, and "MB/sec" = all bytes moved
# in both directions / time / 1e6, which is the same as size / usec/xfer.
# zsm-bench --test pingpong writes usec = half a round trip and
# gbps = 2 * size * iters / time / 1e9.  Both bandwidths are therefore
# size / half-round-trip; this script computes GB/s = size / usec / 1000 from
# each tool's usec, so the two columns are computed identically.
# fi_pingpong has no untimed warm-up, so zsm-bench runs with --warmup 0 by
# default, and with --no-verify so that no untimed traffic precedes it either.
#
# Targets: bandwidth >= 0.95x fi_pingpong for sizes from 1 MiB to 64 MiB;
# 8-byte latency <= fi_pingpong + 2 us.  Exit 0 when all targets that apply
# pass, 1 when one fails, 2 on a usage or run error, 3 when zsm-bench or the
# plugin is missing (fi_pingpong alone is then measured and shown).
#
# This is a 2-core machine: each side of a ping-pong busy-polls a core, so
# any other load on the machine inflates both tools' latencies. The load
# average is printed before and after.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

build="$repo/build"
rounds=5
sizes_arg="8,1M,4M,16M,64M"
iters_fixed=0
port=47800
run_limit=120
raw=""
zsm_warmup=0

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    -b) build=$2; shift ;;
    -r) rounds=$2; shift ;;
    -s) sizes_arg=$2; shift ;;
    -i) iters_fixed=$2; shift ;;
    -p) port=$2; shift ;;
    -t) run_limit=$2; shift ;;
    --raw) raw=$2; shift ;;
    --zsm-warmup) zsm_warmup=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "pingpong-vs-fi: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
for v in rounds iters_fixed port run_limit zsm_warmup; do
    if ! [[ ${!v} =~ ^[0-9]+$ ]]; then
        echo "pingpong-vs-fi: $v must be a number, not '${!v}'" >&2
        exit 2
    fi
done
[ "$rounds" -ge 1 ] || { echo "pingpong-vs-fi: need at least one round" >&2; exit 2; }

to_bytes() {  # 8, 64K, 1M, 2G -> bytes
    local s=$1 n mult=1
    case "$s" in
    *[kK]) mult=1024; n=${s%?} ;;
    *[mM]) mult=1048576; n=${s%?} ;;
    *[gG]) mult=1073741824; n=${s%?} ;;
    *) n=$s ;;
    esac
    [[ $n =~ ^[0-9]+$ ]] || return 1
    echo $((n * mult))
}
human() {  # bytes -> 8 B / 1 MiB
    local b=$1
    if [ $((b % 1073741824)) = 0 ] && [ "$b" -ge 1073741824 ]; then echo "$((b / 1073741824)) GiB"
    elif [ $((b % 1048576)) = 0 ] && [ "$b" -ge 1048576 ]; then echo "$((b / 1048576)) MiB"
    elif [ $((b % 1024)) = 0 ] && [ "$b" -ge 1024 ]; then echo "$((b / 1024)) KiB"
    else echo "$b B"; fi
}
iters_for() {
    local size=$1 n
    if [ "$iters_fixed" -gt 0 ]; then echo "$iters_fixed"; return; fi
    n=$((268435456 / (size > 0 ? size : 1)))
    [ "$n" -lt 10 ] && n=10
    [ "$n" -gt 10000 ] && n=10000
    echo "$n"
}

sizes=()
IFS=',' read -r -a parts <<<"$sizes_arg"
for s in "${parts[@]}"; do
    b=$(to_bytes "$s") || { echo "pingpong-vs-fi: bad size '$s'" >&2; exit 2; }
    [ "$b" -ge 1 ] || { echo "pingpong-vs-fi: size must be >= 1" >&2; exit 2; }
    sizes+=("$b")
done

if ! command -v fi_pingpong >/dev/null; then
    echo "pingpong-vs-fi: fi_pingpong not found (apt-get install libfabric-bin)" >&2
    exit 2
fi
bench="$build/tools/zsm-bench"
plugin="$build/plugin/libnccl-net-zsm.so"
have_zsm=1
if [ ! -x "$bench" ]; then
    echo "pingpong-vs-fi: zsm-bench NOT FOUND at $bench -- build it first" \
         "(meson setup build && ninja -C build); measuring fi_pingpong only" >&2
    have_zsm=0
elif [ ! -f "$plugin" ]; then
    echo "pingpong-vs-fi: plugin NOT FOUND at $plugin -- build it first;" \
         "measuring fi_pingpong only" >&2
    have_zsm=0
fi

work=$(mktemp -d /tmp/pingpong-vs-fi.XXXXXX)
servers=()   # pids of the fi_pingpong servers this script started
# shellcheck disable=SC2317  # called through trap
cleanup() {
    local p
    for p in "${servers[@]}"; do
        [ -n "$p" ] && kill "$p" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_busy() {
    command -v ss >/dev/null || return 1
    [ -n "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]
}
next_port() {
    port=$((port + 1))
    while port_busy "$port"; do port=$((port + 1)); done
}

prov="tcp;ofi_rxm"
err=0

# Both runners run in this shell (not in $(...)) so the port counter and
# the server list persist; they leave "usec reported_gbps" in $result.
result=""

# fi_pingpong SIZE ITERS
run_fi() {
    local size=$1 iters=$2 spid line
    next_port
    timeout -k 5 "$run_limit" fi_pingpong -p "$prov" -e rdm -m tagged -I "$iters" -S "$size" \
        -B "$port" >"$work/fi-server.txt" 2>&1 &
    spid=$!
    servers+=("$spid")
    # wait (5 s at most) for the server's control port
    for _ in $(seq 50); do
        if ! command -v ss >/dev/null; then sleep 0.3; break; fi
        port_busy "$port" && break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    timeout -k 5 "$run_limit" fi_pingpong -p "$prov" -e rdm -m tagged -I "$iters" -S "$size" \
        -P "$port" 127.0.0.1 >"$work/fi-client.txt" 2>&1
    local rc=$?
    # the server ends by itself after the test; give it a moment, then stop it
    for _ in $(seq 20); do
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    servers=("${servers[@]/#$spid/}")
    if [ "$rc" != 0 ]; then
        echo "fi_pingpong size $size failed (rc $rc):" >&2
        tail -n 5 "$work/fi-client.txt" >&2
        return 1
    fi
    # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
    line=$(grep -E '^[0-9]' "$work/fi-client.txt" | tail -n 1)
    if [ -z "$line" ]; then
        echo "fi_pingpong size $size: no result line" >&2
        return 1
    fi
    # shellcheck disable=SC2086
    set -- $line
    result="$7 $(awk -v m="$6" 'BEGIN { printf "%.6f", m / 1000 }')"
}

# zsm-bench SIZE ITERS
run_zsm() {
    local size=$1 iters=$2 csv="$work/zsm.csv" row
    rm -f "$csv"
    # ZSM_CE=0: a same-host pair would otherwise take ce, not tcp.
    if ! ZSM_CE=0 ZSM_PROVIDER=tcp ZSM_DOMAIN=lo timeout -k 5 "$run_limit" "$bench" \
            --plugin "$plugin" --test pingpong --sizes "$size" --iters "$iters" \
            --warmup "$zsm_warmup" --no-verify --reps 1 --csv "$csv" \
            >"$work/zsm-out.txt" 2>&1; then
        echo "zsm-bench size $size failed:" >&2
        tail -n 5 "$work/zsm-out.txt" >&2
        return 1
    fi
    # plugin,test,size,gbps,usec
    row=$(awk -F, -v s="$size" '$2 == "pingpong" && $3 == s { print $5, $4 }' "$csv" | tail -n 1)
    if [ -z "$row" ]; then
        echo "zsm-bench size $size: no pingpong row in its CSV" >&2
        return 1
    fi
    result=$row
}

declare -A fi_us zsm_us   # size -> space-separated samples
[ -n "$raw" ] && echo "round,tool,size,iters,usec,gbps" >"$raw"

sample() {  # tool round size iters "usec reported_gbps"
    local tool=$1 r=$2 size=$3 iters=$4 us rep gb
    read -r us rep <<<"$5"
    gb=$(awk -v s="$size" -v u="$us" 'BEGIN { printf "%.4g", s / u / 1000 }')
    # both tools' own GB/s must agree with size / usec
    if awk -v a="$gb" -v b="$rep" 'BEGIN { exit !(b > 0.001 && (a / b > 1.02 || b / a > 1.02)) }'; then
        echo "warning: $tool size $size reported $rep GB/s, size/usec gives $gb" >&2
    fi
    printf '  round %d  %-11s %9s  iters %5d  %10.2f us  %10s GB/s\n' \
        "$r" "$tool" "$(human "$size")" "$iters" "$us" "$gb"
    [ -n "$raw" ] && echo "$r,$tool,$size,$iters,$us,$gb" >>"$raw"
    if [ "$tool" = fi_pingpong ]; then
        fi_us[$size]="${fi_us[$size]:-} $us"
    else
        zsm_us[$size]="${zsm_us[$size]:-} $us"
    fi
}

median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{ a[NR] = $1 } END {
    if (NR == 0) { print ""; exit }
    if (NR % 2) printf "%.2f\n", a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "# pingpong-vs-fi: provider $prov, domain lo, $rounds rounds, sizes: $(for s in "${sizes[@]}"; do printf '%s; ' "$(human "$s")"; done)"
echo "# fi_pingpong $(command -v fi_pingpong); zsm-bench $bench"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
start=$SECONDS
for r in $(seq "$rounds"); do
    for size in "${sizes[@]}"; do
        iters=$(iters_for "$size")
        # alternate which tool goes first, so drift hits both alike
        if [ $((r % 2)) = 1 ]; then order="fip zsm"; else order="zsm fip"; fi
        for tool in $order; do
            if [ "$tool" = fip ]; then
                if run_fi "$size" "$iters"; then
                    sample fi_pingpong "$r" "$size" "$iters" "$result"
                else
                    err=1
                fi
            elif [ "$have_zsm" = 1 ]; then
                if run_zsm "$size" "$iters"; then
                    sample zsm "$r" "$size" "$iters" "$result"
                else
                    err=1
                fi
            fi
        done
    done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg); $((SECONDS - start)) s"
echo

# ---------------------------------------------------------------- table
fail=0
echo "| size | fi_pingpong GB/s | fi_pingpong µs | zsm GB/s | zsm µs | bw ratio zsm/fi | Δ latency µs (zsm − fi) | target | result |"
echo "|---:|---:|---:|---:|---:|---:|---:|---|---|"
for size in "${sizes[@]}"; do
    fm=$(echo "${fi_us[$size]:-}" | median)
    zm=$(echo "${zsm_us[$size]:-}" | median)
    fg="-" zg="-" ratio="-" dl="-" target="-" res="-"
    [ -n "$fm" ] && fg=$(awk -v s="$size" -v u="$fm" 'BEGIN { printf "%.4g", s / u / 1000 }')
    [ -n "$zm" ] && zg=$(awk -v s="$size" -v u="$zm" 'BEGIN { printf "%.4g", s / u / 1000 }')
    if [ -n "$fm" ] && [ -n "$zm" ]; then
        ratio=$(awk -v f="$fm" -v z="$zm" 'BEGIN { printf "%.3f", f / z }')
        dl=$(awk -v f="$fm" -v z="$zm" 'BEGIN { printf "%+.2f", z - f }')
    fi
    if [ "$size" -ge 1048576 ] && [ "$size" -le 67108864 ]; then
        target="bw ≥ 0.95x"
        if [ "$ratio" != "-" ]; then
            if awk -v x="$ratio" 'BEGIN { exit !(x >= 0.95) }'; then res=PASS; else res=FAIL; fail=1; fi
        else
            res="n/a"
        fi
    elif [ "$size" = 8 ]; then
        target="lat ≤ fi + 2 µs"
        if [ "$dl" != "-" ]; then
            if awk -v x="$dl" 'BEGIN { exit !(x <= 2.0) }'; then res=PASS; else res=FAIL; fail=1; fi
        else
            res="n/a"
        fi
    fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
        "$(human "$size")" "$fg" "${fm:--}" "$zg" "${zm:--}" "$ratio" "$dl" "$target" "$res"
done
echo
echo "GB/s = size / median half-round-trip (1e9 B/s; equals fi_pingpong's MB/sec / 1000); medians of $rounds rounds."

if [ "$have_zsm" = 0 ]; then
    echo "RESULT: INCOMPLETE -- zsm-bench or the plugin is missing under $build (fi_pingpong only)"
    exit 3
fi
if [ "$err" = 1 ]; then
    echo "RESULT: ERROR -- some runs failed (see messages above)"
    exit 2
fi
if [ "$fail" = 1 ]; then
    echo "RESULT: FAIL -- a target was missed"
    exit 1
fi
echo "RESULT: PASS -- all targets met"
exit 0
