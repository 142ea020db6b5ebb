#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run.sh: build zsm on the GPU machine and check it under NCCL through
# PyTorch, against NCCL's own socket transport.
#
# Runs ON the GPU machine (Ubuntu 24.04, root, no network), from the repo
# root, with the Debian 12 packages from test/gpu/fetch-debs.sh carried in
# .debs/:
#
#     bash test/gpu/run.sh [--quick] [--no-unit] [--no-socket] [--no-nccl]
#
# Steps: unpack .debs/*.deb into /tmp/zsm-deps; build into /tmp/zsm-build
# (with the unit tests when cmocka is there, and run them); fi_info sanity;
# test/gpu/nccl_check.py on 2 GPUs through the zsm plugin, then through
# NCCL's socket transport; a summary (PASS/FAIL, "via NET/zsm" count,
# bandwidth table).  Exit status 0 only when everything passed.
#
# Everything is logged under $OUT (default /tmp/out), 8 files at most:
#   build.log unit.log fi_info.log nccl-zsm.log nccl-zsm.json
#   nccl-socket.log nccl-socket.json summary.txt
#
# Knobs (environment):
#   ZSM_GPU_BUDGET   seconds for the whole script (default 570): the two NCCL
#                    runs get what the build and unit tests leave
#   ZSM_T_ZSM        upper bound for the zsm run (default 300 s)
#   ZSM_T_SOCKET     upper bound for the socket run (default 150 s)
#   ZSM_T_UNIT       bound for the unit, abi and loopback suites (default 150 s)
#   ZSM_MESON_ARGS   extra arguments for meson setup (e.g. -Dbuildtype=release)
#   PYTHON           interpreter with torch (default python3)
#   --cpu-gloo       (testing this script without GPUs) passed to nccl_check.py
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
DEPS=${ZSM_DEPS:-/tmp/zsm-deps}
BUILD=${ZSM_BUILD:-/tmp/zsm-build}
PY=${PYTHON:-python3}
BUDGET=${ZSM_GPU_BUDGET:-570}
T_ZSM=${ZSM_T_ZSM:-300}
T_SOCKET=${ZSM_T_SOCKET:-150}
T_UNIT=${ZSM_T_UNIT:-150}

quick=() gloo=() do_unit=1 do_socket=1 do_nccl=1
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=(--quick) ;;
    --no-unit) do_unit=0 ;;
    --no-socket) do_socket=0 ;;
    --no-nccl) do_nccl=0 do_socket=0 ;;
    --cpu-gloo) gloo=(--cpu-gloo --dtypes "float32,int8") ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

mkdir -p "$OUT"
# leave no stale result of an earlier run among the files this script writes
rm -f "$OUT"/{build,unit,fi_info,nccl-zsm,nccl-socket}.log "$OUT"/nccl-{zsm,socket}.json \
      "$OUT/summary.txt"
SECONDS=0
fail=0
results=()   # "name|PASS/FAIL/SKIP|detail"
record() { results+=("$1|$2|$3"); [ "$2" = FAIL ] && fail=1; echo "== $1: $2 ${3:+($3)}"; }
left() { echo $((BUDGET - SECONDS)); }

blog="$OUT/build.log"
: >"$blog"

# ---------------------------------------------------------------- 1. deps
. "$here/deps.sh"
zsm_gpu_deps "$repo" "$DEPS" "$blog" || exit 1
if ! pkg-config --exists libfabric; then
    record deps FAIL "pkg-config cannot find libfabric; see build.log"
    exit 1
fi
record deps PASS "${#debs[@]} packages, libfabric $(pkg-config --modversion libfabric)"

# ---------------------------------------------------------------- 2. build
tests=false
pkg-config --exists cmocka && tests=true
margs=()
if grep -q "option('cuda'" "$repo/meson_options.txt" 2>/dev/null &&
   [ -f /usr/local/cuda/include/cuda.h ]; then
    margs+=(-Dcuda=enabled -Dcudadir=/usr/local/cuda)
fi
# shellcheck disable=SC2206
margs+=(${ZSM_MESON_ARGS:-})

setup() {
    rm -rf "$BUILD"
    echo "# meson setup $BUILD $repo -Dtests=$1 ${margs[*]}" >>"$blog"
    meson setup "$BUILD" "$repo" -Dtests="$1" "${margs[@]}" >>"$blog" 2>&1
}
build_ok=0
if setup "$tests"; then
    :
elif [ "$tests" = true ]; then
    echo "# setup with tests failed; retrying without them" >>"$blog"
    record unit-setup FAIL "meson setup -Dtests=true failed; see build.log"
    tests=false
    setup false || true
fi
if [ -f "$BUILD/build.ninja" ]; then
    echo "# ninja -C $BUILD" >>"$blog"
    if ninja -C "$BUILD" >>"$blog" 2>&1; then
        build_ok=1
    fi
fi
plugin=""
if [ "$build_ok" = 1 ]; then
    plugin=$(find "$BUILD" -name 'libnccl-net-zsm.so' -type f -print -quit)
fi
if [ "$build_ok" != 1 ]; then
    record build FAIL "meson/ninja failed; tail of build.log:"
    tail -n 30 "$blog"
elif [ -z "$plugin" ]; then
    record build FAIL "no libnccl-net-zsm.so under $BUILD"
else
    deps_out=$(ldd "$plugin" 2>&1)
    printf '# ldd %s\n%s\n' "$plugin" "$deps_out" >>"$blog"
    if grep 'not found' <<<"$deps_out" >/dev/null; then
        record build FAIL "unresolved libraries: $(grep 'not found' <<<"$deps_out" | tr -s ' \n' ' ')"
    else
        record build PASS "$plugin, $((SECONDS)) s so far"
    fi
fi

# ---------------------------------------------------------------- 3. unit tests
ulog="$OUT/unit.log"
if [ "$do_unit" = 1 ] && [ "$build_ok" = 1 ] && [ "$tests" = true ]; then
    t=$T_UNIT
    echo "== unit tests (meson test, up to $t s)"
    timeout -k 10 "$t" meson test -C "$BUILD" --print-errorlogs \
        --suite unit --suite abi --suite loopback >"$ulog" 2>&1
    rc=$?
    line=$(grep -E '^(Ok|Fail|Timeout|Expected Fail|Unexpected Pass|Skipped):' "$ulog" | tr -s ' \n' ' ')
    if [ "$rc" = 0 ]; then
        record unit PASS "$line"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        record unit FAIL "timed out after $t s; $line"
    else
        record unit FAIL "rc $rc; $line; see unit.log"
        grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT|ERROR)' "$ulog" | sort -u | head -n 10
    fi
else
    why="disabled"
    [ "$tests" = true ] || why="cmocka not found or tests not configured"
    [ "$build_ok" = 1 ] || why="build failed"
    echo "unit tests not run: $why" >"$ulog"
    record unit SKIP "$why"
fi

# ---------------------------------------------------------------- 4. fi_info
flog="$OUT/fi_info.log"
echo "== fi_info -p 'tcp;ofi_rxm'"
if timeout 30 fi_info -p "tcp;ofi_rxm" >"$flog" 2>&1 && grep -q 'provider: tcp;ofi_rxm' "$flog"; then
    doms=$(grep -E '^ *domain:' "$flog" | awk '{print $2}' | sort -u | tr '\n' ' ')
    if grep -qE '^ *domain: lo$' "$flog"; then
        record fi_info PASS "domains: $doms"
    else
        record fi_info FAIL "no 'lo' domain for tcp;ofi_rxm (domains: $doms)"
    fi
else
    record fi_info FAIL "fi_info -p 'tcp;ofi_rxm' failed; see fi_info.log"
    tail -n 5 "$flog"
fi

# ---------------------------------------------------------------- 5. NCCL
# shellcheck disable=SC2054  # NCCL_DEBUG_SUBSYS takes a comma list
common=(
    NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_MNNVL_ENABLE=0 NCCL_NVLS_ENABLE=0
    TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
    TORCH_NCCL_ASYNC_ERROR_HANDLING=1 NCCL_ASYNC_ERROR_HANDLING=1
    # bootstrap over loopback in both runs (this box reaches nothing else)
    NCCL_SOCKET_IFNAME=lo
)

nccl_run() {  # label seconds env...
    local label=$1 t=$2
    shift 2
    local log="$OUT/nccl-$label.log"
    echo "== nccl_check $label (up to $t s)"
    {
        echo "# env: $* ${common[*]}"
        echo "# $PY $here/nccl_check.py --label $label --out $OUT --timeout $t ${quick[*]} ${gloo[*]}"
    } >"$log"
    env "${common[@]}" "$@" timeout -k 10 $((t + 30)) \
        "$PY" "$here/nccl_check.py" --label "$label" --out "$OUT" --timeout "$t" \
        "${quick[@]}" "${gloo[@]}" >>"$log" 2>&1
    local rc=$?
    grep -E "^\[$label\] (PASS|FAIL|SKIP|rank [0-9]+ (ERROR|MISMATCH)|killing)" "$log" | head -n 20
    return $rc
}

via=0
if [ "$do_nccl" = 0 ]; then
    record nccl-zsm SKIP "--no-nccl"
elif [ -n "$plugin" ]; then
    t=$(( $(left) - (do_socket ? T_SOCKET + 15 : 15) ))
    [ "$t" -gt "$T_ZSM" ] && t=$T_ZSM
    [ "$t" -lt 60 ] && t=60
    nccl_run zsm "$t" NCCL_NET_PLUGIN="$plugin" NCCL_NET=zsm NCCL_NET_PLUGIN_REF_COUNT=1 \
        ZSM_PROVIDER=tcp ZSM_DOMAIN=lo
    rc=$?
    via=$(grep -c 'via NET/zsm' "$OUT/nccl-zsm.log")
    warns=$(grep -c 'NCCL WARN' "$OUT/nccl-zsm.log")
    if [ "$rc" = 0 ] && [ "$via" -gt 0 ]; then
        record nccl-zsm PASS "$via 'via NET/zsm' lines, $warns NCCL WARN lines"
    elif [ "$rc" = 0 ]; then
        record nccl-zsm FAIL "checks passed but no 'via NET/zsm' line: NCCL did not use the plugin"
    else
        record nccl-zsm FAIL "rc $rc, $via 'via NET/zsm' lines, $warns NCCL WARN lines; see nccl-zsm.log"
        grep -m 5 'NCCL WARN' "$OUT/nccl-zsm.log"
    fi
else
    echo "no plugin built" >"$OUT/nccl-zsm.log"
    record nccl-zsm FAIL "not run: no plugin"
fi

if [ "$do_socket" = 1 ]; then
    t=$(( $(left) - 10 ))
    [ "$t" -gt "$T_SOCKET" ] && t=$T_SOCKET
    [ "$t" -lt 60 ] && t=60
    nccl_run socket "$t" NCCL_NET_PLUGIN=none NCCL_NET=Socket
    rc=$?
    vs=$(grep -c 'via NET/Socket' "$OUT/nccl-socket.log")
    if [ "$rc" = 0 ] && { [ "$vs" -gt 0 ] || [ "${#gloo[@]}" -gt 0 ]; }; then
        record nccl-socket PASS "$vs 'via NET/Socket' lines"
    elif [ "$rc" = 0 ]; then
        record nccl-socket FAIL "checks passed but no 'via NET/Socket' line"
    else
        record nccl-socket FAIL "rc $rc; see nccl-socket.log"
    fi
else
    record nccl-socket SKIP "--no-socket"
fi

# ---------------------------------------------------------------- 6. summary
summary="$OUT/summary.txt"
{
    echo "zsm GPU run: $( [ "$fail" = 0 ] && echo PASS || echo FAIL )  ($SECONDS s)"
    echo "via NET/zsm lines in nccl-zsm.log: $via"
    for l in zsm socket; do
        f="$OUT/nccl-$l.log"
        [ -f "$f" ] || continue
        grep -oE 'NET/Plugin: .*|Loaded net plugin .*|Using network .*|via NET/.*' "$f" |
            awk -v l="$l" '!seen[$1 $2]++ { print l " log: " $0 }' | head -n 4
    done
    echo
    for r in "${results[@]}"; do
        IFS='|' read -r name st detail <<<"$r"
        printf '%-12s %-4s %s\n' "$name" "$st" "$detail"
    done
    echo
    "$PY" - "$OUT/nccl-zsm.json" "$OUT/nccl-socket.json" <<'EOF'
import json, sys

def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception:
        return None

def fmt_size(b):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % scale == 0:
            return "%d %s" % (b // scale, unit)
    return "%d B" % b

z, s = load(sys.argv[1]), load(sys.argv[2])
for name, d in (("zsm", z), ("socket", s)):
    if d is None:
        print("%s: no result file" % name)
        continue
    info = d.get("info", {}).get("rank0", {})
    bad = [c for c in d.get("checks", []) if not c["ok"]]
    print("%s: %s; %d checks, %d failed; torch %s, nccl %s, %s; %.1f s" % (
        name, "PASS" if d.get("pass") else "FAIL", len(d.get("checks", [])),
        len(bad), info.get("torch", "?"), info.get("nccl", "?"),
        info.get("gpu", "?"), d.get("elapsed_s", 0)))
    for e in d.get("errors", [])[:5]:
        print("  error: %s" % e)
    for c in bad[:8]:
        print("  mismatch: %s %s %s: %s" % (c["op"], c["dtype"], fmt_size(c["size"]),
                                             "; ".join(c["mismatch"].values())))
    for k in d.get("skipped", [])[:5]:
        print("  skipped: %s %s %s" % (k["phase"], k.get("op", ""), fmt_size(k["size"])))

def table(d):
    return {(b["op"], b["size"]): b["busbw_gbps"] for b in (d or {}).get("bandwidth", [])}

tz, ts = table(z), table(s)
keys = sorted(set(tz) | set(ts), key=lambda k: (k[0], k[1]))
order = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "sendrecv"]
keys.sort(key=lambda k: (order.index(k[0]) if k[0] in order else 99, k[1]))
print()
print("busbw, GB/s (float32, median of timed iterations)")
print("| collective     |    size | busbw zsm | busbw socket | ratio |")
print("|----------------|--------:|----------:|-------------:|------:|")
for k in keys:
    a, b = tz.get(k), ts.get(k)
    ratio = "%.2f" % (a / b) if a is not None and b else "-"
    print("| %-14s | %7s | %9s | %12s | %5s |" % (
        k[0], fmt_size(k[1]),
        "%.3f" % a if a is not None else "-",
        "%.3f" % b if b is not None else "-", ratio))
EOF
} >"$summary" 2>&1
echo
cat "$summary"
exit "$fail"
