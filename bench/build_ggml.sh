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
if [ ! -f "$B/src/libggml-cpu.a" ]; then
    echo "build_ggml.sh: building $DESC in $B (a few minutes)" >&2
    cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON \
        -DGGML_OPENMP=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DGGML_CUDA=OFF \
        -DGGML_METAL=OFF -DGGML_VULKAN=OFF > "$OUT/cmake.log" 2>&1 || absent "cmake configure failed ($OUT/cmake.log)"
    cmake --build "$B" -j"$(nproc)" > "$OUT/build.log" 2>&1 || absent "ggml build failed ($OUT/build.log)"
fi
for l in libggml.a libggml-cpu.a libggml-base.a; do
    [ -f "$B/src/$l" ] || absent "the build has no $l"
done
ABS_SRC=$(cd "$SRC" && pwd)
ABS_B=$(cd "$B" && pwd)
ABS_OUT=$(cd "$OUT" && pwd)
printf '#define LOOM_GGML_DESC "%s, CPU, -march=native, static"\n' "$DESC" > "$OUT/ggml_desc.h"
echo "-DLOOM_HAVE_GGML -isystem $ABS_SRC/include -include $ABS_OUT/ggml_desc.h" > "$OUT/cflags"
echo "$ABS_B/src/libggml.a $ABS_B/src/libggml-cpu.a $ABS_B/src/libggml-base.a -lstdc++ -lpthread -lm" > "$OUT/libs"
echo "build_ggml.sh: $DESC ready" >&2
