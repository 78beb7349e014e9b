#!/usr/bin/env python3
"""SciPy side of tests/test_scipy.c: a third computation of loom's sparse
algebra (docs/schedule-language.md "Sparse semantics") on real matrices.

  scipy_check.py derive IN.mtx OUTDIR
      writes OUTDIR/t.mtx, the transpose of IN, and OUTDIR/s.mtx, IN with
      entry (i, j) moved to (i, (j + 1) mod cols) and value 1 + (7i + j) mod 5
      (a second pattern that partly overlaps IN's, for symmetric matrices
      whose transpose is themselves)
  scipy_check.py check OP RESULT.f32 X.f32|- A.mtx B.mtx [D.mtx]
      computes OP with scipy.sparse in double precision and compares it with
      loom's float32 result (RESULT, raw little-endian): spadd C = A + B,
      spsub C = A - B (dense C, row-major), spmixed C = A .* B + D,
      spmv_sum y = (A + B) x with x read from X.f32, spgemm C = A B and
      spadd_csr C = A + B as csr (RESULT holds the values in the row-major
      order of C's stored entries, a structural zero included: the pattern
      is the union of the operands', not of the non-zeros).
Prints one line; exit status 0 when equal within fp32 tolerance, 1 if not.
"""
import sys

import numpy as np
import scipy.io
import scipy.sparse as sp


def load(path):
    return sp.csr_matrix(scipy.io.mmread(path), dtype=np.float64)


def derive(src, outdir):
    a = sp.coo_matrix(scipy.io.mmread(src))
    t = sp.coo_matrix((a.data.astype(np.float64), (a.col, a.row)), shape=(a.shape[1], a.shape[0]))
    scipy.io.mmwrite(outdir + "/t.mtx", t, field="real")
    rows, cols = a.row, (a.col + 1) % a.shape[1]
    vals = 1.0 + (7 * rows + a.col) % 5
    s = sp.coo_matrix((vals, (rows, cols)), shape=a.shape)
    s.sum_duplicates()
    scipy.io.mmwrite(outdir + "/s.mtx", s, field="real")


def pattern(m):
    """The stored pattern as a 0/1 csr (explicit zeros kept as stored)."""
    p = sp.csr_matrix((np.ones(m.nnz), m.indices, m.indptr), shape=m.shape)
    p.sum_duplicates()
    return p


def check(op, result, xfile, mats):
    a, b = load(mats[0]), load(mats[1])
    got = np.fromfile(result, dtype="<f4").astype(np.float64)
    if op == "spmv_sum":
        x = np.fromfile(xfile, dtype="<f4").astype(np.float64)
        want = (a + b) @ x
    elif op in ("spadd", "spsub", "spmixed"):
        if op == "spadd":
            want = (a + b).toarray().ravel()
        elif op == "spsub":
            want = (a - b).toarray().ravel()
        else:
            want = (a.multiply(b) + load(mats[2])).toarray().ravel()
    elif op in ("spadd_csr", "spgemm"):
        c = a + b if op == "spadd_csr" else a @ b
        # the pattern loom assembles: the union of the operands' patterns
        # (spadd) or every (i, j) with a k stored in A(i, :) and B(:, j)
        pat = pattern(a) + pattern(b) if op == "spadd_csr" else pattern(a) @ pattern(b)
        pat = sp.csr_matrix(pat)
        pat.sort_indices()
        c = sp.csr_matrix(c)
        rows = np.repeat(np.arange(pat.shape[0]), np.diff(pat.indptr))
        want = np.asarray(c[rows, pat.indices]).ravel()
    else:
        print("unknown op " + op)
        return 1
    if got.size != want.size:
        print("%s: loom gives %d values, scipy %d" % (op, got.size, want.size))
        return 1
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    err = np.abs(got - want)
    worst = int(np.argmax(err)) if err.size else 0
    ok = bool(np.all(err <= 1e-5 * scale + 1e-5 * np.abs(want)))
    print("%s: %d values, max abs error %.3g (scale %.3g)%s" % (
        op, want.size, float(err.max()) if err.size else 0.0, scale,
        "" if ok else "; worst at %d: loom %.9g, scipy %.9g" % (worst, got[worst], want[worst])))
    return 0 if ok else 1


def main(argv):
    if len(argv) >= 3 and argv[0] == "derive":
        derive(argv[1], argv[2])
        return 0
    if len(argv) >= 5 and argv[0] == "check":
        return check(argv[1], argv[2], argv[3], argv[4:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
