#!/bin/sh
# Build the peer simulators benches/bench_peers.py compares raidlab against:
#
#   MQSim     (SSD, C++)  https://github.com/CMU-SAFARI/MQSim
#   DiskSim 4 (HDD, C)    https://github.com/westerndigitalcorporation/DiskSim
#                         (PDL's DiskSim 4.0 with the 64-bit LBA patch: its tree
#                         EXPERIMENTAL/Linux_64bit_LBA_20130807_Generic, see below)
#
# Sources come from $RAIDLAB_PEERS_SRC when set (a directory holding mqsim/ and
# disksim/ source trees, e.g. unpacked release archives), otherwise from a shallow
# `git clone` of the public repositories into the cache. MQSim builds as its Makefile
# builds it (-O3 -g), DiskSim with -O2 added to its unoptimised Makefiles, into
#
#   ${RAIDLAB_PEERS_DIR:-target/peers}/mqsim/MQSim
#   ${RAIDLAB_PEERS_DIR:-target/peers}/disksim/src/disksim   (parameter files in ../valid)
#
# A peer already built is kept (FORCE=1 rebuilds). A peer whose sources cannot be had
# or whose build fails is skipped with one line saying why (the build log stays next to
# it); the script then still exits 0, and the benchmark leaves that peer's rows out.
#
#   sh benches/peers/build.sh [mqsim] [disksim]      # default: both

set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${RAIDLAB_PEERS_DIR:-$ROOT/target/peers}
SRC=${RAIDLAB_PEERS_SRC:-}
FORCE=${FORCE:-0}
JOBS=$(nproc 2>/dev/null || echo 1)
mkdir -p "$CACHE" || { echo "peers: cannot create $CACHE"; exit 0; }
CACHE=$(cd "$CACHE" && pwd)

# To stderr: fetch() prints its result on stdout.
skip() { echo "peers: $1 skipped: $2" >&2; }

need() {  # need PEER TOOL...: every tool on PATH, or say which is missing
    peer=$1; shift
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || { skip "$peer" "\`$tool\` not found (needed to build it)"; return 1; }
    done
}

# fetch NAME URL: print the source directory of NAME, cloning it into the cache if needed
fetch() {
    if [ -n "$SRC" ]; then
        [ -d "$SRC/$1" ] || { skip "$1" "no $SRC/$1 (RAIDLAB_PEERS_SRC)"; return 1; }
        echo "$SRC/$1"
        return 0
    fi
    dest=$CACHE/src/$1
    if [ ! -d "$dest/.git" ]; then
        need "$1" git || return 1
        rm -rf "$dest"
        mkdir -p "$CACHE/src"
        if ! GIT_TERMINAL_PROMPT=0 git clone --quiet --depth 1 "$2" "$dest" >"$CACHE/$1.clone.log" 2>&1; then
            skip "$1" "cannot clone $2 (offline? see $CACHE/$1.clone.log)"
            rm -rf "$dest"
            return 1
        fi
    fi
    echo "$dest"
}

# version DIR: the commit of a git checkout, else "unversioned"
version() { git -C "$1" rev-parse --short HEAD 2>/dev/null || echo unversioned; }

build_mqsim() {
    out=$CACHE/mqsim
    if [ "$FORCE" != 1 ] && [ -x "$out/MQSim" ]; then return 0; fi
    need mqsim make g++ || return 0
    src=$(fetch mqsim https://github.com/CMU-SAFARI/MQSim) || return 0
    [ -f "$src/src/main.cpp" ] || { skip mqsim "$src does not look like MQSim (no src/main.cpp)"; return 0; }
    echo "peers: building MQSim $(version "$src") with its Makefile's -O3 (a few minutes)"
    rm -rf "$out" && mkdir -p "$out" && (cd "$src" && tar -cf - --exclude=.git .) | (cd "$out" && tar -xf -)
    # The Makefile's own flags (-O3 -g), with its warnings silenced (-w).
    # checkdirs first: `make -j all` may compile before it has made the build/ tree.
    if (cd "$out" && make checkdirs && make -j"$JOBS" CC_FLAGS="-std=c++11 -O3 -g -w" MQSim) >"$CACHE/mqsim.build.log" 2>&1 \
        && [ -x "$out/MQSim" ]; then
        version "$src" >"$out/VERSION"
        echo "peers: MQSim built: $out/MQSim"
    else
        skip mqsim "build failed (see $CACHE/mqsim.build.log)"
        rm -f "$out/MQSim"
    fi
}

build_disksim() {
    out=$CACHE/disksim
    if [ "$FORCE" != 1 ] && [ -x "$out/src/disksim" ]; then return 0; fi
    need disksim make gcc g++ bison flex perl || return 0
    src=$(fetch disksim https://github.com/westerndigitalcorporation/DiskSim) || return 0
    # A DiskSim 4.0 tree is the directory holding src/disksim_main.c: the top of a plain
    # release archive, or one of the trees in Western Digital's repository. Of those, the
    # one taken is EXPERIMENTAL/Linux_64bit_LBA_20130807_Generic (PDL's 4.0 with the
    # 64-bit patch), not STABLE/DiskSim_Linux_Generic_2.01.016: STABLE logs every command
    # (src/disksim_simresult.c) and looks each completion up in that log linearly, so a
    # run of N requests costs O(N^2) (150k of 500k requests took 2 CPU minutes here).
    trees=$(find "$src" -maxdepth 4 -path '*/src/disksim_main.c' 2>/dev/null | sort)
    top=
    for main in $trees; do
        [ -e "$(dirname "$main")/disksim_simresult.c" ] || { top=$main; break; }
    done
    [ -n "$top" ] || top=$(echo "$trees" | head -n 1)
    [ -n "$top" ] || { skip disksim "no DiskSim 4 tree under $src (no src/disksim_main.c)"; return 0; }
    top=$(dirname "$(dirname "$top")")
    echo "peers: building DiskSim $(version "$src") with -O2 (a few minutes)"
    rm -rf "$out" && mkdir -p "$out" && (cd "$top" && tar -cf - --exclude=.git .) | (cd "$out" && tar -xf -)
    # DiskSim's Makefiles build with -g and no optimisation: add -O2 to each library's
    # flags and to the simulator's. -fcommon: gcc >= 10 rejects its tentative
    # definitions shared between files otherwise.
    sed -i -E 's/^(CFLAGS ?= ?)-g /\1-O2 -g -fcommon /; s/^DEBUG_OFLAGS = -g /DEBUG_OFLAGS = -O2 -g /' \
        "$out/libddbg/Makefile" "$out/libparam/Makefile" "$out/diskmodel/Makefile" "$out/src/Makefile"
    # The simulator's target is disksim64 in the 64-bit trees, disksim in PDL's; a
    # binary shipped in the tree is removed so that make builds it.
    target=disksim
    grep -q '^disksim64 *:' "$out/src/Makefile" && target=disksim64
    rm -f "$out/src/disksim" "$out/src/disksim64"
    # One fix, no change to the model: the 64-bit patch made band_blknos (first block of
    # each zone) 64-bit but still allocates it at sizeof(int), so filling it overruns
    # the heap (valgrind: invalid writes in setup_band_blknos); the parameter parser
    # then reads garbage names and crashes, or the LBN mapping reads past the table.
    sed -i 's/band_blknos = malloc(layout->bands_len \* sizeof(int));/band_blknos = malloc(layout->bands_len * sizeof(*layout->band_blknos));/' \
        "$out/diskmodel/layout_g1_load.c"
    # Only the libraries and the simulator (the layout test programs are not needed).
    if (cd "$out" && make -C libddbg && make -C libparam && make -C diskmodel modules libdiskmodel.a \
            && make -C src $target && { [ $target = disksim ] || cp src/$target src/disksim; }) \
            >"$CACHE/disksim.build.log" 2>&1 \
        && [ -x "$out/src/disksim" ]; then
        version "$src" >"$out/VERSION"
        echo "peers: DiskSim built: $out/src/disksim"
    else
        skip disksim "build failed (see $CACHE/disksim.build.log)"
        rm -f "$out/src/disksim"
    fi
}

[ $# -gt 0 ] || set -- mqsim disksim
for peer in "$@"; do
    case $peer in
        mqsim) build_mqsim ;;
        disksim) build_disksim ;;
        *) echo "peers: unknown peer $peer (mqsim, disksim)" ;;
    esac
done
exit 0
