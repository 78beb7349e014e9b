"""loom.load_model (issue 30): the 2-layer GCN on cora500 shipped as one
library by `loom replay MODEL --emit-lib` (default kernels: no database),
called from Python with SciPy/NumPy and with PyTorch inputs, compared with
the GCN computed independently in NumPy (float64); each task's own kernel
is reachable; a kernel library is not a model.  Run from the repository
root:  PYTHONPATH=python /usr/bin/python3 -m unittest python/tests/test_model.py
"""
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

import loom

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "models", "gcn2_cora500.model")


def loom_bin():
    if os.environ.get("LOOM_BIN"):
        return os.environ["LOOM_BIN"]
    if os.environ.get("LOOM_LIBRARY"):
        return os.path.join(os.path.dirname(os.environ["LOOM_LIBRARY"]), "loom")
    return os.path.join(ROOT, "build", "loom")


try:
    import scipy.io
    import scipy.sparse
except ImportError:
    scipy = None
try:
    import torch
except ImportError:
    torch = None


def gcn_numpy(A, X, W1, W2):
    """Kipf & Welling's 2-layer GCN with A_hat = D^-1/2 (A + I) D^-1/2, in float64."""
    A = A.astype(np.float64)
    n = 1.0 / np.sqrt(np.asarray(A.sum(axis=1)).ravel() + 1.0)
    def agg(T):
        U = n[:, None] * T
        return n[:, None] * (A @ U + U)
    H1 = np.maximum(agg(X.astype(np.float64) @ W1.astype(np.float64)), 0)
    return agg(H1 @ W2.astype(np.float64))


@unittest.skipIf(scipy is None, "SciPy is not installed")
class ShippedGcn(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="loom-pymodel-")
        out = subprocess.run([loom_bin(), "replay", MODEL, "--emit-lib", "gcnpy", "--lib-dir", cls.tmp],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if out.returncode:
            raise RuntimeError("loom replay failed:\n" + out.stdout)
        cls.model = loom.load_model(os.path.join(cls.tmp, "libgcnpy.so"))
        cls.A = scipy.io.mmread(os.path.join(ROOT, "data", "cora500_adj.mtx")).tocsr().astype(np.float32)
        cls.X = scipy.io.mmread(os.path.join(ROOT, "data", "cora500_features.mtx")).tocsr().astype(np.float32)
        cls.A.sum_duplicates()
        cls.X.sum_duplicates()
        rng = np.random.default_rng(5)
        cls.W1 = rng.standard_normal((cls.X.shape[1], 16)).astype(np.float32) * 0.1
        cls.W2 = rng.standard_normal((16, 7)).astype(np.float32)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_signature(self):
        m = self.model
        self.assertEqual(m.inputs, ["xw1_A", "xw1_B", "agg1_A", "hw2_B", "agg2_A"])
        self.assertEqual(m.outputs, ["agg2_H"])
        self.assertEqual([c["name"] for c in m.calls], ["xw1", "agg1", "hw2", "agg2"])
        self.assertFalse(any(c["from_record"] for c in m.calls))
        self.assertEqual(sorted(m.kernels), ["gcnpy_agg1", "gcnpy_agg2", "gcnpy_hw2", "gcnpy_xw1"])
        self.assertIn("gcnpy", repr(m))

    def test_forward_pass_matches_numpy(self):
        H = self.model(xw1_A=self.X, xw1_B=self.W1, agg1_A=self.A, hw2_B=self.W2, agg2_A=self.A)
        self.assertEqual(H.shape, (500, 7))
        ref = gcn_numpy(self.A, self.X, self.W1, self.W2)
        np.testing.assert_allclose(H, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
        # positionally, the same
        H2 = self.model(self.X, self.W1, self.A, self.W2, self.A)
        np.testing.assert_array_equal(H, H2)

    def test_bind_runs_again_on_the_same_arrays(self):
        run, result = self.model.bind(xw1_A=self.X, xw1_B=self.W1, agg1_A=self.A, hw2_B=self.W2, agg2_A=self.A)
        run()
        H = result()
        ref = gcn_numpy(self.A, self.X, self.W1, self.W2)
        np.testing.assert_allclose(H, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
        H[:] = 0
        run()
        np.testing.assert_allclose(result(), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())

    def test_a_task_kernel_alone(self):
        C = self.model.kernels["gcnpy_xw1"](self.X, self.W1)
        np.testing.assert_allclose(C, self.X.astype(np.float64) @ self.W1.astype(np.float64), rtol=1e-4, atol=1e-4)

    @unittest.skipIf(torch is None, "PyTorch is not installed")
    def test_torch_inputs(self):
        At = torch.sparse_csr_tensor(torch.from_numpy(self.A.indptr.astype(np.int64)),
                                     torch.from_numpy(self.A.indices.astype(np.int64)),
                                     torch.from_numpy(self.A.data), size=self.A.shape)
        Xt = torch.sparse_csr_tensor(torch.from_numpy(self.X.indptr.astype(np.int64)),
                                     torch.from_numpy(self.X.indices.astype(np.int64)),
                                     torch.from_numpy(self.X.data), size=self.X.shape)
        H = self.model(Xt, torch.from_numpy(self.W1), At, torch.from_numpy(self.W2), At)
        self.assertIsInstance(H, torch.Tensor)
        ref = gcn_numpy(self.A, self.X, self.W1, self.W2)
        np.testing.assert_allclose(H.numpy(), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())

    def test_wrong_inputs_are_refused(self):
        with self.assertRaises(ValueError):  # W1 of the wrong shape
            self.model(self.X, self.W1[:10], self.A, self.W2, self.A)
        with self.assertRaises(TypeError):
            self.model(self.X, self.W1, self.A, self.W2)  # agg2_A missing

    def test_a_kernel_library_is_not_a_model(self):
        lib = os.path.join(self.tmp, "k")
        os.makedirs(lib, exist_ok=True)
        out = subprocess.run([loom_bin(), "run", os.path.join(ROOT, "workloads", "gemm.loom"), "--param", "M=4", "--param",
                              "K=4", "--param", "N=4", "--emit-lib", "g4", "--lib-dir", lib, "--min-time", "0.001"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(out.returncode, 0, out.stdout)
        with self.assertRaises(ValueError):
            loom.load_model(os.path.join(lib, "libg4.so"))


SAGE = """model sage2_cora500
task xs1  {r}/workloads/spmm.loom            --data A={r}/data/cora500_features.mtx -p F=16
task xn1  {r}/workloads/spmm.loom            --data A={r}/data/cora500_features.mtx -p F=16
task agg1 {r}/models/sage/sage_agg_relu.loom --data A={r}/data/cora500_adj.mtx -p F=16
task hs2  {r}/workloads/gemm.loom            -p M=500 -p K=16 -p N=7
task hn2  {r}/workloads/gemm.loom            -p M=500 -p K=16 -p N=7
task agg2 {r}/models/sage/sage_agg.loom      --data A={r}/data/cora500_adj.mtx -p F=7
feed xs1.C -> agg1.S
feed xn1.C -> agg1.T
feed agg1.H -> hs2.A
feed agg1.H -> hn2.A
feed hs2.C -> agg2.S
feed hn2.C -> agg2.T
"""


@unittest.skipIf(scipy is None, "SciPy is not installed")
class ShippedSage(unittest.TestCase):
    """models/sage2_cora.model's form on cora500 against GraphSAGE (mean aggregator) in NumPy:
    the workloads' semantics (relu and the reduction's scope) are what PyG's SAGEConv computes."""

    def test_forward_pass_matches_numpy(self):
        tmp = tempfile.mkdtemp(prefix="loom-pysage-")
        try:
            path = os.path.join(tmp, "sage.model")
            with open(path, "w") as f:
                f.write(SAGE.format(r=ROOT))
            out = subprocess.run([loom_bin(), "replay", path, "--emit-lib", "sage", "--lib-dir", tmp],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(out.returncode, 0, out.stdout)
            m = loom.load_model(os.path.join(tmp, "libsage.so"))
            self.assertEqual(len(m.calls), 6)
            self.assertEqual(len(m.kernels), 4, "the self and neighbour products are one task each")
            A = scipy.io.mmread(os.path.join(ROOT, "data", "cora500_adj.mtx")).tocsr().astype(np.float32)
            X = scipy.io.mmread(os.path.join(ROOT, "data", "cora500_features.mtx")).tocsr().astype(np.float32)
            rng = np.random.default_rng(9)
            W = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in ((1433, 16), (1433, 16), (16, 7), (16, 7))]
            H = m(xs1_A=X, xs1_B=W[0], xn1_A=X, xn1_B=W[1], agg1_A=A, hs2_B=W[2], hn2_B=W[3], agg2_A=A)
            A64, X64 = A.astype(np.float64), X.astype(np.float64)
            deg = np.maximum(np.asarray(A64.sum(axis=1)).ravel(), 1)[:, None]
            H1 = np.maximum(X64 @ W[0] + (A64 @ (X64 @ W[1])) / deg, 0)
            ref = H1 @ W[2] + (A64 @ (H1 @ W[3])) / deg
            np.testing.assert_allclose(H, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
