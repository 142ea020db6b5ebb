# SPDX-License-Identifier: MIT
#
# deps.sh: sourced by the GPU machine's scripts (run.sh, tsan.sh).
#
#     zsm_gpu_deps REPO DEPS LOG
#
# Unpacks REPO/.debs/*.deb (test/gpu/fetch-debs.sh fetched them on the
# Debian 12 machine) into DEPS and exports LD_LIBRARY_PATH, PATH and
# PKG_CONFIG_PATH so that meson finds libfabric and cmocka there.  Leaves
# the unpacked files in the array debs; returns 1, saying why, when there
# is nothing to unpack or an unpack fails.
zsm_gpu_deps() {
    local repo=$1 deps=$2 log=$3 d pc libdir pcdir
    echo "== unpacking .debs into $deps"
    shopt -s nullglob
    debs=("$repo"/.debs/*.deb)
    shopt -u nullglob
    if [ "${#debs[@]}" -eq 0 ]; then
        echo "no $repo/.debs/*.deb: run test/gpu/fetch-debs.sh on the dev machine" \
             "and carry .debs to this machine" | tee -a "$log" >&2
        return 1
    fi
    rm -rf "$deps"
    mkdir -p "$deps"
    for d in "${debs[@]}"; do
        # libnuma1 is only there for images that lack libnuma.so.1; a system
        # copy (maybe newer) wins, since LD_LIBRARY_PATH would shadow it
        case "${d##*/}" in
        libnuma1_*)
            if ldconfig -p 2>/dev/null | grep 'libnuma\.so\.1 ' >/dev/null; then
                echo "# skipping ${d##*/}: the system has libnuma.so.1" >>"$log"
                continue
            fi ;;
        esac
        if ! dpkg -x "$d" "$deps" >>"$log" 2>&1; then
            echo "dpkg -x $d failed" | tee -a "$log" >&2
            return 1
        fi
    done
    libdir="$deps/usr/lib/x86_64-linux-gnu"
    export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PATH="$deps/usr/bin:$PATH"
    # The .pc files name /usr; point them at the unpacked tree instead
    # (libfabric.pc through prefix=, cmocka.pc through literal -L/-I paths).
    pcdir="$deps/pkgconfig"
    mkdir -p "$pcdir"
    for pc in "$libdir"/pkgconfig/*.pc; do
        sed -E "s#(^prefix=|-L|-I)/usr([/[:space:]]|\$)#\1$deps/usr\2#g" "$pc" \
            >"$pcdir/$(basename "$pc")"
    done
    export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    {
        echo "# ${#debs[@]} packages unpacked: ${debs[*]##*/}"
        echo "# LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
        echo "# PKG_CONFIG_PATH=$PKG_CONFIG_PATH"
        echo "# pkg-config libfabric: $(pkg-config --modversion libfabric 2>&1)" \
             "$(pkg-config --cflags --libs libfabric 2>&1)"
        echo "# pkg-config cmocka: $(pkg-config --modversion cmocka 2>&1)" \
             "$(pkg-config --cflags --libs cmocka 2>&1)"
    } >>"$log"
}
