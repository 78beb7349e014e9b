#!/bin/sh
# Build ggml's CPU library for bench_attention's ggml column (ggml is not a
# Debian package).  Usage: build_ggml.sh OUTDIR
# Source, first found: $GGML_SRC (a ggml source tree); $GGML_GIT (a ggml git
# directory, bare or not: its HEAD is exported with git archive); the
# default $GGML_GIT_DEFAULT.  Builds with cmake (CPU only, static, native
# ISA, no OpenMP: ggml's own thread pool) into OUTDIR/build and writes
#   OUTDIR/cflags   -DLOOM_HAVE_GGML -isystem <include> -include OUTDIR/ggml_desc.h
#                   (LOOM_GGML_DESC: the revision and how it was built)
#   OUTDIR/libs     the static libraries and -lstdc++ -lpthread -lm
# or, when there is no source or the build fails, empty files and a message
# on stderr (bench_attention then prints that ggml is absent).  Idempotent:
# an existing build is reused.
# $GGML_ISA=avx2 builds for AVX2 + FMA + F16C only (no AVX-512: GGML_NATIVE
# off), the fair reference for a loom run with LOOM_HOST_ISA=avx2; build it
# into its own OUTDIR.  Default (unset): -march=native.
set -u
OUT=${1:?usage: build_ggml.sh OUTDIR}
GGML_GIT_DEFAULT=${GGML_GIT_DEFAULT:-/work/.mirror/ggml-org+ggml/repo}
mkdir -p "$OUT"
: > "$OUT/cflags"
: > "$OUT/libs"
absent() {
    echo "build_ggml.sh: $*; bench_attention runs without the ggml column" >&2
    exit 0
}
SRC=${GGML_SRC:-}
DESC=""
if [ -z "$SRC" ]; then
    GIT=${GGML_GIT:-$GGML_GIT_DEFAULT}
    [ -d "$GIT" ] || absent "no ggml source (set GGML_SRC to a source tree or GGML_GIT to a git directory)"
    SRC="$OUT/src"
    REV=$(git --git-dir="$GIT" rev-parse HEAD 2>/dev/null) || absent "$GIT is not a git directory"
    if [ ! -f "$SRC/.rev" ] || [ "$(cat "$SRC/.rev")" != "$REV" ]; then
        rm -rf "$SRC" "$OUT/build"
        mkdir -p "$SRC"
        git --git-dir="$GIT" archive HEAD | tar -x -C "$SRC" || absent "git archive of $GIT failed"
        echo "$REV" > "$SRC/.rev"
    fi
    DESC="ggml $(echo "$REV" | cut -c1-12) ($(git --git-dir="$GIT" log -1 --format=%cs HEAD 2>/dev/null))"
else
    DESC="ggml from $SRC"
fi
[ -f "$SRC/CMakeLists.txt" ] || absent "$SRC has no CMakeLists.txt"
command -v cmake >/dev/null || absent "cmake is not installed (apt-get install cmake)"
B="$OUT/build"
ISA=${GGML_ISA:-native}
case "$ISA" in
native) ISA_FLAGS="-DGGML_NATIVE=ON"; ISA_DESC="-march=native" ;;
avx2) ISA_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF"
      ISA_DESC="AVX2+FMA (GGML_ISA=avx2)" ;;
*) absent "GGML_ISA=$ISA is not native or avx2" ;;
esac
OLD_ISA=native; [ -f "$OUT/isa" ] && OLD_ISA=$(cat "$OUT/isa")
[ "$OLD_ISA" != "$ISA" ] && rm -rf "$B"
if [ ! -f "$B/src/libggml-cpu.a" ]; then
    echo "build_ggml.sh: building $DESC in $B (a few minutes)" >&2
    cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF $ISA_FLAGS \
        -DGGML_OPENMP=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DGGML_CUDA=OFF \
        -DGGML_METAL=OFF -DGGML_VULKAN=OFF > "$OUT/cmake.log" 2>&1 || absent "cmake configure failed ($OUT/cmake.log)"
    cmake --build "$B" -j"$(nproc)" > "$OUT/build.log" 2>&1 || absent "ggml build failed ($OUT/build.log)"
    echo "$ISA" > "$OUT/isa"
fi
for l in libggml.a libggml-cpu.a libggml-base.a; do
    [ -f "$B/src/$l" ] || absent "the build has no $l"
done
ABS_SRC=$(cd "$SRC" && pwd)
ABS_B=$(cd "$B" && pwd)
ABS_OUT=$(cd "$OUT" && pwd)
printf '#define LOOM_GGML_DESC "%s, CPU, %s, static"\n' "$DESC" "$ISA_DESC" > "$OUT/ggml_desc.h"
echo "-DLOOM_HAVE_GGML -isystem $ABS_SRC/include -include $ABS_OUT/ggml_desc.h" > "$OUT/cflags"
echo "$ABS_B/src/libggml.a $ABS_B/src/libggml-cpu.a $ABS_B/src/libggml-base.a -lstdc++ -lpthread -lm" > "$OUT/libs"
echo "build_ggml.sh: $DESC ready" >&2
