#!/usr/bin/python3
"""PyTorch peer of bench_spmm_tuned (issue 13): CSR SpMM (torch.sparse.mm)
and SDDMM (torch.sparse.sampled_addmm) on the arrays the bench wrote.

    torch_peer.py spmm|sddmm DIR MIN_SECONDS THREADS

DIR holds raw little-endian arrays written by bench_spmm_tuned.c
(write_torch_inputs): meta.txt ("n k F nnz"), pos.i32 (n + 1 row
positions), crd.i32 (nnz column coordinates), vals.f32 (nnz values), and
B.f32 (k x F, row-major) for spmm, or Q.f32 (n x F) and K.f32 (k x F) for
sddmm (S = M .* (Q K^T) at M's stored entries).  The operation runs once to
warm up, then until MIN_SECONDS have been spent (at least 3 runs, at most
4096), with torch.set_num_threads(THREADS).  The result goes to
DIR/out.f32 (spmm: C, n x F row-major; sddmm: S's nnz values in M's
order), which the bench checks against loom's reference.  Prints
"# OpenBLAS core: ..." (sampled_addmm runs on OpenBLAS: with no
OPENBLAS_CORETYPE in the environment, bench/openblas_core.py sets the
host's core where OpenBLAS does not know the CPU) and then one line:
"<median seconds> <threads> <torch version>".  Exits 3 when torch cannot be
imported or the operation is not supported on CPU (the bench then reports
the peer as absent), 2 on bad arguments.
"""
import os
import sys
import time


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("spmm", "sddmm"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, d, min_s, threads = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    import openblas_core  # bench/, the script's directory
    openblas_core.choose()  # before numpy/torch load OpenBLAS
    try:
        import numpy as np
        import torch
        import warnings
        warnings.filterwarnings("ignore", message=".*Sparse CSR tensor support is in beta.*")
    except ImportError as e:
        print("torch_peer: %s" % e, file=sys.stderr)
        return 3
    torch.set_num_threads(threads)
    print("# OpenBLAS core: %s" % openblas_core.note())
    with open(os.path.join(d, "meta.txt")) as f:
        n, k, F, nnz = (int(x) for x in f.read().split())

    def arr(name, dtype, count):
        a = np.fromfile(os.path.join(d, name), dtype=dtype)
        if a.size != count:
            raise SystemExit("torch_peer: %s holds %d values, expected %d" % (name, a.size, count))
        return torch.from_numpy(a)

    pos = arr("pos.i32", np.int32, n + 1).to(torch.int64)
    crd = arr("crd.i32", np.int32, nnz).to(torch.int64)
    vals = arr("vals.f32", np.float32, nnz)
    A = torch.sparse_csr_tensor(pos, crd, vals, size=(n, k))
    if kind == "spmm":
        B = arr("B.f32", np.float32, k * F).reshape(k, F)
        op = lambda: torch.sparse.mm(A, B)
    else:
        Q = arr("Q.f32", np.float32, n * F).reshape(n, F)
        KT = arr("K.f32", np.float32, k * F).reshape(k, F).t()
        # sampled_addmm(input, mat1, mat2, beta, alpha) = beta input + alpha (mat1 @ mat2) at input's
        # pattern; the mask's values multiply afterwards (S = M .* (Q K^T)), on the result's values
        op = lambda: torch.sparse.sampled_addmm(A, Q, KT, beta=0.0).values().mul_(vals)
    try:
        with torch.no_grad():
            out = op()
    except (RuntimeError, NotImplementedError) as e:
        print("torch_peer: %s not supported on this CPU build: %s" % (kind, e), file=sys.stderr)
        return 3
    times, spent = [], 0.0
    with torch.no_grad():
        while len(times) < 4096 and (len(times) < 3 or spent < min_s):
            t0 = time.perf_counter()
            out = op()
            dt = time.perf_counter() - t0
            times.append(dt)
            spent += dt
    times.sort()
    np.ascontiguousarray(out.numpy(), dtype=np.float32).tofile(os.path.join(d, "out.f32"))
    print("%.9g %d %s" % (times[len(times) // 2], torch.get_num_threads(), torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
