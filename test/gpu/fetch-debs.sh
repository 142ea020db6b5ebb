#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# fetch-debs.sh: download (not install) the Debian 12 packages that the GPU
# machine needs to build and run zsm: libfabric and its runtime dependencies,
# the libfabric headers and tools (fi_info, fi_pingpong), and cmocka.
#
# Run as root on the Debian 12 development machine, from anywhere:
#     test/gpu/fetch-debs.sh
# The packages land in <repo>/.debs/ (git-ignored); pass ".debs" in the
# carry list of the GPU run so that test/gpu/run.sh finds them there.
# Running it again downloads only what is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dest="$repo/.debs"
limit_mib=50      # hard limit on the folder's size
warn_mib=40       # "well under" the limit

pkgs=(
    # runtime of libfabric 1.17
    libfabric1 libibverbs1 librdmacm1 libpsm2-2 libpsm-infinipath1
    libnl-3-200 libnl-route-3-200 ibverbs-providers
    # libpsm2 needs libnuma.so.1, which a bare Ubuntu image may lack
    libnuma1
    # headers + pkg-config file, and fi_info / fi_pingpong
    libfabric-dev libfabric-bin
    # unit-test framework
    libcmocka0 libcmocka-dev
)

if ! command -v apt-get >/dev/null; then
    echo "fetch-debs: apt-get not found (this must run on the Debian 12 machine)" >&2
    exit 1
fi
if [ -r /etc/os-release ]; then
    # shellcheck disable=SC1091
    . /etc/os-release
    if [ "${ID:-}" != debian ] || [ "${VERSION_ID:-}" != 12 ]; then
        echo "fetch-debs: warning: this is ${PRETTY_NAME:-unknown}, not Debian 12" >&2
    fi
fi

mkdir -p "$dest"
cd "$dest"

missing=()
for p in "${pkgs[@]}"; do
    if compgen -G "${p}_*.deb" >/dev/null; then
        echo "have   $(compgen -G "${p}_*.deb" | head -n1)"
    else
        missing+=("$p")
    fi
done

if [ "${#missing[@]}" -gt 0 ]; then
    echo "fetch  ${missing[*]}"
    # apt-get download as root warns that it cannot drop privileges to _apt
    # for a folder it does not own; that is harmless here.
    if ! apt-get download "${missing[@]}"; then
        echo "fetch-debs: apt-get download failed; try 'apt-get update' first" >&2
        exit 1
    fi
fi

# every package must now be present exactly once
rc=0
for p in "${pkgs[@]}"; do
    n=$(compgen -G "${p}_*.deb" | wc -l)
    if [ "$n" -ne 1 ]; then
        echo "fetch-debs: expected one ${p}_*.deb in $dest, found $n" >&2
        rc=1
    fi
done

bytes=$(cat ./*.deb | wc -c)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1048576 }')
echo "total  $(compgen -G '*.deb' | wc -l) packages, $bytes bytes ($mib MiB) in $dest"
if [ "$bytes" -ge $((limit_mib * 1048576)) ]; then
    echo "fetch-debs: $mib MiB is over the $limit_mib MiB limit" >&2
    exit 1
elif [ "$bytes" -ge $((warn_mib * 1048576)) ]; then
    echo "fetch-debs: warning: $mib MiB is close to the $limit_mib MiB limit" >&2
fi
exit "$rc"
