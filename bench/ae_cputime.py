#!/usr/bin/python3
"""The pruned autoencoder's layers, one thread, by thread CPU time (issue 30; bench/README.md).

    /usr/bin/python3 bench/ae_cputime.py [--out build/bench_models] [--ae 0.5,0.9,0.95,0.99] [--reps 30]

Per sparsity and layer (Y = act(W X + b), W the pruned out x in weight, X in x batch dense), the
minimum over --reps runs of the calling thread's CPU time (time.thread_time: what other processes
on a shared machine take is not counted, unlike wall time) of:

  - loom's kernels: the layer's own entry in the model libraries bench_models.py shipped
    (OUT/aeS/libae_default.so, libae_tuned.so);
  - OpenBLAS's dense GEMM: torch.addmm(b, W_dense, X) (PyTorch's F.linear path) + the activation;
  - PyTorch's CSR product: torch.sparse.mm(W_csr, X) + b + the activation.

Everything runs on ONE thread (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, torch.set_num_threads), with
the environment's OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, then OPENBLAS_CORETYPE set to the
host's core where OpenBLAS does not know the CPU (SkylakeX for its Prescott fallback on an AVX-512
host; Haswell with LOOM_HOST_ISA=avx2: bench/openblas_core.py); the header prints which ran.  GFLOP/s are of the useful work: 2 x nnz(W) x batch for the sparse forms,
2 x out x in x batch for the dense GEMM.  Run bench_models.py --ae ... first (it trains, prunes and
ships the libraries)."""
import argparse
import os
import sys

for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(v, None)
import openblas_core  # noqa: E402  (bench/, the script's directory)

openblas_core.choose()  # before numpy/torch load OpenBLAS
for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[v] = "1"
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ.setdefault("LOOM_LIBRARY", os.path.join(ROOT, "build", "libloom.so"))

import time  # noqa: E402
import warnings  # noqa: E402

warnings.filterwarnings("ignore")
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "python"))
import loom  # noqa: E402

LAYERS = ["enc1", "enc2", "dec1", "dec2"]


def openblas_config():
    import ctypes
    try:
        h = ctypes.CDLL("libopenblas.so.0")
        h.openblas_get_config.restype = ctypes.c_char_p
        return h.openblas_get_config().decode()
    except (OSError, AttributeError) as e:
        return "unknown (%s)" % e


def cpu_min(fn, reps):
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "build", "bench_models"))
    p.add_argument("--ae", default="0.5,0.9,0.95,0.99")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--batch", type=int, default=256)
    a = p.parse_args()
    torch.set_num_threads(1)
    print("# ae_cputime: 1 thread, minimum thread CPU time of %d runs; %s; load average %.1f" %
          (a.reps, openblas_config(), os.getloadavg()[0]))
    print("# OpenBLAS core: %s" % openblas_core.note())
    print("%-6s %-5s %5s %5s %6s %-14s %10s %9s %8s" % ("ae", "layer", "out", "in", "dens", "form", "cpu time",
                                                        "GFLOP/s", "vs BLAS"))
    rng = np.random.default_rng(0)
    ws = torch.load(os.path.join(a.out, "ae_weights.pt"))
    for s in [float(v) for v in a.ae.split(",") if v]:
        d = os.path.join(a.out, "ae%g" % s)
        libs = {}
        for nm in ("default", "tuned"):
            f = os.path.join(d, "libae_%s.so" % nm)
            if os.path.exists(f):
                libs["loom " + nm] = loom.load_model(f)
        for k, layer in enumerate(LAYERS):
            w = sp.csr_matrix(scipy.io.mmread(os.path.join(d, layer + ".mtx")), dtype=np.float32)
            w.sort_indices()
            o, i = w.shape
            x = np.ascontiguousarray(rng.random((i, a.batch), dtype=np.float32))
            b = np.ascontiguousarray(ws[layer + ".b"].numpy())
            act = torch.sigmoid if k == 3 else torch.relu
            wd, xt, bt = torch.from_numpy(w.toarray()), torch.from_numpy(x), torch.from_numpy(b)[:, None]
            wc = torch.sparse_csr_tensor(torch.from_numpy(w.indptr.astype(np.int64)),
                                         torch.from_numpy(w.indices.astype(np.int64)), torch.from_numpy(w.data),
                                         size=w.shape)
            forms = {"openblas dense": lambda: act(torch.addmm(bt, wd, xt)),
                     "torch csr": lambda: act(torch.sparse.mm(wc, xt) + bt)}
            for nm, lib in libs.items():
                kern = next(c["kernel"] for c in lib.calls if c["name"] == layer)
                run, _ = lib.kernels[kern].bind(W=w, X=x, b=b)
                forms[nm] = run
            t = {nm: cpu_min(fn, a.reps) for nm, fn in forms.items()}
            for nm, sec in t.items():
                fl = 2.0 * (o * i if nm == "openblas dense" else w.nnz) * a.batch
                print("%-6s %-5s %5d %5d %6.3f %-14s %8.3f ms %9.1f %7.2fx" % (
                    "ae%g" % s, layer, o, i, w.nnz / (o * i), nm, sec * 1e3, fl / sec * 1e-9,
                    t["openblas dense"] / sec), flush=True)


if __name__ == "__main__":
    main()
