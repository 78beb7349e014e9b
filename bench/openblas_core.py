"""Which OpenBLAS kernels a Python benchmark's dense peer runs (bench/openblas_core.h for Python).

Debian's OpenBLAS 0.3.21 (what numpy and torch load: libblas.so.3 -> openblas-pthread) is built
DYNAMIC_ARCH: it picks its kernels by the CPU when the library loads, reading OPENBLAS_CORETYPE
first.  It predates the Emerald Rapids Xeon (family 6 model 207) and falls back to its generic
Prescott (SSE3) kernels there: a 1024 x 1024 float32 matmul on one thread ran 32 GFLOP/s against
SkylakeX's 147 (2026-11-30), a dense peer 4.6x too slow.  choose() -- call it after the
bench has unset the environment's OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE and before numpy or torch
is imported -- sets OPENBLAS_CORETYPE as the C benches do:
  - one already set (by the bench's own logic) is kept;
  - LOOM_HOST_ISA=avx2 (or sse): loom's kernels are built without AVX-512, so OpenBLAS is held
    to the same ISA: Haswell (Nehalem);
  - else, when OpenBLAS's own choice (openblas_get_corename, asked in a subprocess so that this
    process loads OpenBLAS only once the variable is set) is a pre-AVX2 name: SkylakeX when the
    CPU has AVX-512 F, VL, BW and DQ (/proc/cpuinfo), Haswell with AVX2 and FMA.
note() then says what ran, for the benchmark's header.  Nothing happens off x86-64.
"""
import os
import platform
import subprocess
import sys

GENERIC = {"unknown", "katmai", "coppermine", "northwood", "prescott", "banias", "atom", "core2", "penryn",
           "dunnington", "nehalem"}
LIBS = ("libblas.so.3", "libopenblas.so.0")  # what numpy and torch link (Debian's alternatives), then OpenBLAS's own


def _loaded_openblas():
    return any("openblas" in line for line in open("/proc/self/maps"))


def choose():
    if os.environ.get("OPENBLAS_CORETYPE"):
        return
    for v in ("LOOM_BENCH_OPENBLAS_SET", "LOOM_BENCH_OPENBLAS_DETECTED"):  # what note() reads: this run's only
        os.environ.pop(v, None)
    want, isa = None, os.environ.get("LOOM_HOST_ISA")
    if isa in ("avx2", "sse"):
        want = "Haswell" if isa == "avx2" else "Nehalem"
    elif platform.machine() == "x86_64":
        core = subprocess.run([sys.executable, os.path.abspath(__file__)], stdout=subprocess.PIPE,
                              text=True).stdout.strip()  # corename() in a fresh process (below)
        flags = next((set(line.split(":", 1)[1].split()) for line in open("/proc/cpuinfo")
                      if line.startswith("flags")), set())
        if core.lower() in GENERIC and {"avx512f", "avx512vl", "avx512bw", "avx512dq"} <= flags:
            want = "SkylakeX"
        elif core.lower() in GENERIC and {"avx2", "fma"} <= flags:
            want = "Haswell"
        if want:
            os.environ["LOOM_BENCH_OPENBLAS_DETECTED"] = core
    if not want:
        return
    os.environ["OPENBLAS_CORETYPE"] = os.environ["LOOM_BENCH_OPENBLAS_SET"] = want
    if _loaded_openblas():  # too late for this process: run it again (argv unchanged)
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable] + sys.argv)


def corename():
    """openblas_get_corename() of the OpenBLAS this process loaded (loads it if not yet)."""
    import ctypes
    for n in LIBS:
        try:
            h = ctypes.CDLL(n)
            h.openblas_get_corename.restype = ctypes.c_char_p
            return h.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return "no OpenBLAS"


def note():
    """'SkylakeX kernels (OPENBLAS_CORETYPE set by the bench: OpenBLAS detected Prescott on this host)',
    or the core OpenBLAS picked itself."""
    det = os.environ.get("LOOM_BENCH_OPENBLAS_DETECTED")
    if os.environ.get("LOOM_BENCH_OPENBLAS_SET") and det:
        return "%s kernels (OPENBLAS_CORETYPE set by the bench: OpenBLAS detected %s on this host)" % (corename(), det)
    if os.environ.get("LOOM_BENCH_OPENBLAS_SET"):
        return "%s kernels (OPENBLAS_CORETYPE set by the bench for LOOM_HOST_ISA)" % corename()
    return "%s kernels" % corename()


if __name__ == "__main__":  # what choose() asks: the core OpenBLAS picks with the environment as it is
    print(corename())
