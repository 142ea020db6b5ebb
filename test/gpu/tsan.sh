#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tsan.sh: test/tsan.sh (the suites under ThreadSanitizer) on the GPU
# machine, whose cores take it in minutes where the 2-core development
# machine needs about 40.  Runs ON that machine, from the repo root, with
# .debs carried (test/gpu/fetch-debs.sh):
#
#     ZSM_TSAN_SUITES="unit ce" bash test/gpu/tsan.sh
#
# The build folder (/tmp/zsm-tsan) outlives the command while the machine
# stays warm, so the suites can be split over several commands, each
# within the device's 10-minute limit.  Writes $OUT/tsan.log (the
# summary), $OUT/tsan-meson.log and, when there are reports, the first
# few process logs; exits as test/tsan.sh does.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/out}
BUILD=${ZSM_BUILD:-/tmp/zsm-tsan}
mkdir -p "$OUT"

. "$here/deps.sh"
zsm_gpu_deps "$repo" "${ZSM_DEPS:-/tmp/zsm-deps}" "$OUT/tsan-deps.log" || exit 1
export ZSM_TSAN_JOBS=${ZSM_TSAN_JOBS:-$(( $(nproc) / 2 ))}
sh "$repo/test/tsan.sh" "$BUILD" >"$OUT/tsan.log" 2>&1
rc=$?
cp "$BUILD/tsan-meson.log" "$OUT/" 2>/dev/null
n=0
for f in $(grep -l '^SUMMARY: ThreadSanitizer' "$BUILD"/tsan-logs/tsan.* 2>/dev/null); do
    [ $n -lt 5 ] || break
    cp "$f" "$OUT/"
    n=$((n + 1))
done
tail -n 40 "$OUT/tsan.log"
exit $rc
