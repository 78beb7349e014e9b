"""The Python package end to end (issue 17): tune SpMM on Cora for a few
trials through libloom.so, ship the best schedule as a kernel library, call
it with SciPy CSR + NumPy and with PyTorch tensors and compare with A @ B;
wrong dtype, shape and format raise clear exceptions; the campaign's records
read back as dicts.  Run from the repository root:
    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s python/tests
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

import loom

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORA = os.path.join(ROOT, "data", "cora_adj.mtx")
SPMM = os.path.join(ROOT, "workloads", "spmm.loom")
F = 32

try:
    import scipy.io
    import scipy.sparse
except ImportError:
    scipy = None
try:
    import torch
except ImportError:
    torch = None


@unittest.skipIf(scipy is None, "SciPy is not installed")
class TunedSpmm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="loom-py-")
        cls.db = os.path.join(cls.tmp, "db")
        cls.result = loom.tune(SPMM, data={"A": CORA}, params={"F": F}, trials=4, batch=4, remeasure=0, db=cls.db)
        cls.lib = loom.emit_lib(SPMM, data={"A": CORA}, params={"F": F}, db=cls.db, name="spmm_py", dir=cls.tmp)
        cls.kernel = loom.load_kernel(cls.lib)
        A = scipy.io.mmread(CORA).tocsr().astype(np.float32)
        A.sum_duplicates()
        cls.A = A
        rng = np.random.default_rng(7)
        cls.B = rng.standard_normal((A.shape[1], F)).astype(np.float32)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_campaign_result_and_library(self):
        self.assertEqual(self.result["trials"], 4)
        self.assertGreater(self.result["best_latency_s"], 0)
        self.assertTrue(os.path.exists(self.lib["library"]))
        self.assertEqual(self.kernel.inputs, ["A", "B"])
        self.assertEqual(self.kernel.outputs, ["C"])
        self.assertEqual(self.kernel.sizes["F"], F)

    def test_scipy_and_numpy(self):
        C = self.kernel(self.A, self.B)
        self.assertIsInstance(C, np.ndarray)
        self.assertEqual(C.ctypes.data % 64, 0, "an output the binding allocates starts on a cache line")
        self.assertTrue(C.flags.c_contiguous and C.flags.writeable)
        ref = (self.A.astype(np.float64) @ self.B.astype(np.float64))
        np.testing.assert_allclose(C, ref, rtol=1e-4, atol=1e-4)
        # by name, into a given output (no copy: the same array comes back)
        out = np.empty_like(C)
        C2 = self.kernel(B=self.B, A=self.A, out=out)
        self.assertIs(C2, out)
        np.testing.assert_array_equal(C2, C)

    def test_tune_after_calling_a_kernel(self):
        # the shipped kernel runs an OpenMP parallel region in this process;
        # a campaign started afterwards still measures (it runs in a new
        # process: a child forked from this one would hang in libgomp)
        self.kernel(self.A, self.B)
        db = os.path.join(self.tmp, "db-after")
        r = loom.tune(SPMM, data={"A": CORA}, params={"F": 8}, trials=2, batch=1, remeasure=0, db=db)
        self.assertEqual(r["measured"], 2)
        recs = list(loom.Database(db))
        self.assertEqual([x["status"] for x in recs], ["ok", "ok"], recs)

    @unittest.skipIf(torch is None, "PyTorch is not installed")
    def test_torch(self):
        A = self.A
        At = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)),
                                     torch.from_numpy(A.indices.astype(np.int64)),
                                     torch.from_numpy(A.data), size=A.shape)
        Bt = torch.from_numpy(self.B)
        C = self.kernel(At, Bt)
        self.assertIsInstance(C, torch.Tensor)
        ref = torch.sparse.mm(At.to_sparse_coo().double(), Bt.double())
        self.assertTrue(torch.allclose(C.double(), ref, rtol=1e-4, atol=1e-4))

    @unittest.skipIf(torch is None, "PyTorch is not installed")
    def test_requires_grad_is_refused(self):
        B = torch.from_numpy(self.B.copy()).requires_grad_()
        with self.assertRaisesRegex(TypeError, r"tensor B requires grad: loom kernels compute no gradients.*"
                                               r"B\.detach\(\)"):
            self.kernel(self.A, B)
        C = self.kernel(self.A, B.detach())  # detached: accepted
        self.assertFalse(C.requires_grad)

    def test_wrong_dtype(self):
        with self.assertRaisesRegex(TypeError, "tensor B: expected float32, got float64"):
            self.kernel(self.A, self.B.astype(np.float64))
        with self.assertRaisesRegex(TypeError, "tensor A: expected float32 values, got float64"):
            self.kernel(self.A.astype(np.float64), self.B)

    def test_wrong_shape(self):
        with self.assertRaisesRegex(ValueError, r"tensor B: expected shape \(2708, %d\).*got \(2708, 16\)" % F):
            self.kernel(self.A, self.B[:, :16].copy())

    def test_wrong_format(self):
        with self.assertRaisesRegex(TypeError, r"tensor A is csr: got a scipy.sparse csc matrix \(convert with "
                                               r"\.tocsr\(\)\)"):
            self.kernel(self.A.tocsc(), self.B)
        with self.assertRaisesRegex(TypeError, "tensor A is csr .*expected a scipy.sparse csr matrix"):
            self.kernel(self.A.toarray(), self.B)
        with self.assertRaisesRegex(TypeError, "tensor B is dense"):
            self.kernel(self.A, scipy.sparse.csr_matrix(self.B))

    def test_database(self):
        db = loom.Database(self.db)
        self.assertEqual(len(db), 4)
        self.assertEqual(db.skipped, 0)
        best = db.best()
        self.assertEqual(len(best), 1)
        (name, target), rec = next(iter(best.items()))
        self.assertEqual(name, "spmm")
        self.assertTrue(target.startswith("cpu:"))
        self.assertEqual(rec["status"], "ok")
        oks = [r["latency_s"] for r in db if r["status"] == "ok"]
        self.assertEqual(rec["latency_s"], min(oks))
        self.assertEqual(rec["line"], self.lib["line"])
        # the machine's state each kernel was measured under (None on one CPU)
        for r in db:
            if r["status"] == "ok" and len(os.sched_getaffinity(0)) >= 2:
                self.assertGreater(r["core_line_ns"], 1.0, r["line"])
            elif r["status"] == "ok":
                self.assertIsNone(r["core_line_ns"])


class CausalAttention(unittest.TestCase):
    """Temporaries and a range pattern through the typed entry: the causal
    mask W takes no argument (the entry builds it), S, m, P, l are allocated
    by the kernel.  Tuned on the simulator (quick, deterministic)."""

    def test_matches_numpy(self):
        tmp = tempfile.mkdtemp(prefix="loom-py-att-")
        try:
            wl = os.path.join(ROOT, "workloads", "attention_causal.loom")
            params = {"N": 40, "D": 8}
            db = os.path.join(tmp, "db")
            loom.tune(wl, params=params, trials=4, batch=4, target="sim", remeasure=0, db=db)
            lib = loom.emit_lib(wl, params=params, db=db, target="sim", name="att_causal", dir=tmp)
            k = loom.load_kernel(lib)
            self.assertEqual(k.inputs, ["Q", "K", "V"])
            rng = np.random.default_rng(3)
            Q, K, V = (rng.standard_normal((40, 8)).astype(np.float32) for _ in range(3))
            O = k(Q, K, V)
            S = (Q.astype(np.float64) @ K.T.astype(np.float64)) * 0.125
            S[np.triu_indices(40, 1)] = -np.inf
            P = np.exp(S - S.max(axis=1, keepdims=True))
            ref = (P / P.sum(axis=1, keepdims=True)) @ V.astype(np.float64)
            np.testing.assert_allclose(O, ref, rtol=1e-4, atol=1e-5)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


# A record line as database.h describes it (a trace the loader accepts).
TRACE = ('{"format": "loom-trace", "version": 1, "workload": "00000000000000aa", "insts": '
         '[["GetBlock", [], ["C"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]], '
         '["SamplePerfectTile", ["l3"], [2, 16], ["v4", "v5"]], '
         '["Split", ["l3", "v4", "v5"], [], ["l6", "l7"]]], "decisions": [[2, [4, 16]]]}')


def record_line(schedule, message):
    """One records.jsonl line (bytes); message: bytes, written as they are."""
    head = ('{"format":"loom-record","version":1,"workload":"00000000000000aa","workload_name":"spmm",'
            '"data":"00112233aabbccdd","target":"cpu:0000000000000001","schedule":"%016x",'
            '"status":"build-error","latency_s":null,"flops":0,"compile_s":0,"message":"' % schedule)
    return head.encode() + message + b'","time":1,"trace":' + TRACE.encode() + b'}\n'


class InvalidUtf8(unittest.TestCase):
    """Issue 32: one record whose message holds invalid UTF-8 (what an older
    loom wrote for a Latin-1 compiler message) made the whole database
    unreadable from Python; now it loads, repaired, with one warning."""

    def test_database_with_one_invalid_utf8_record_loads(self):
        tmp = tempfile.mkdtemp(prefix="loom-utf8-")
        try:
            with open(os.path.join(tmp, "records.jsonl"), "wb") as f:
                f.write(record_line(1, b"ok"))
                f.write(record_line(2, b"x.c:1: \xe9chec \xff"))
                f.write(record_line(3, b"caf\xc3\xa9"))
            with self.assertWarns(loom.LoomDatabaseWarning) as cm:
                db = loom.Database(tmp)
            self.assertEqual(len(db.records), 3)
            self.assertEqual(db.skipped, 0)
            self.assertEqual(db.repaired, 1)
            self.assertEqual(len(db.warnings), 1, db.warnings)
            self.assertIn("records.jsonl:2: repaired: invalid UTF-8", str(cm.warning))
            self.assertEqual([r["schedule"] for r in db.records], ["%016x" % k for k in (1, 2, 3)])
            self.assertEqual(db.records[0]["message"], "ok")
            self.assertEqual(db.records[1]["message"], "x.c:1: \ufffdchec \ufffd")
            self.assertEqual(db.records[2]["message"], "caf\u00e9")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class Errors(unittest.TestCase):
    def test_library_errors_are_loom_errors(self):
        with self.assertRaisesRegex(loom.LoomError, "no such campaign directory"):
            loom.emit_lib(SPMM, data={"A": CORA}, db="/nonexistent/db", name="x", dir="/tmp")
        with self.assertRaises(loom.LoomError):
            loom.Database("/nonexistent/db")

    def test_not_a_kernel(self):
        with self.assertRaises(ValueError):
            loom.load_kernel(loom.library()._name, name="spmm")


class TopLevelScript(unittest.TestCase):
    """A script that calls loom.tune at its top level, with no `if __name__
    == "__main__":` guard (issue 27: multiprocessing's spawn re-ran the
    script in the child, which failed with "An attempt has been made to
    start a new process before..." and LoomError "the tuning process ended
    without a result")."""

    def test_tune_at_top_level(self):
        tmp = tempfile.mkdtemp(prefix="loom-py-top-")
        try:
            script = os.path.join(tmp, "tune_top.py")
            with open(script, "w") as f:
                f.write(textwrap.dedent("""\
                    import json, loom
                    print("top level ran", flush=True)
                    r = loom.tune(%r, data={"A": %r}, params={"F": 8}, trials=2, batch=2, target="sim",
                                  remeasure=0, db=%r)
                    print("RESULT " + json.dumps(r))
                    """ % (SPMM, CORA, os.path.join(tmp, "db"))))
            pkg = os.path.dirname(os.path.dirname(os.path.abspath(loom.__file__)))
            env = dict(os.environ, PYTHONPATH=pkg + os.pathsep + os.environ.get("PYTHONPATH", ""))
            p = subprocess.run([sys.executable, script], cwd=tmp, env=env, capture_output=True, text=True,
                               timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(p.stdout.count("top level ran"), 1, "the script's top level ran again:\n" + p.stdout)
            line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
            self.assertEqual(len(line), 1, p.stdout + p.stderr)
            r = json.loads(line[0][len("RESULT "):])
            self.assertEqual(r["trials"], 2)
            self.assertGreater(r["best_latency_s"], 0)
            self.assertTrue(r["target"].startswith("sim:"), r["target"])
            self.assertEqual(len(loom.Database(os.path.join(tmp, "db"))), 2)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class InstallCheck(unittest.TestCase):
    """setup.py names the interpreter and refuses one without numpy or a
    bdist_wheel command (issue 27: the pyenv python3 first on PATH failed
    with "invalid command 'bdist_wheel'"); simulated by hiding the modules."""

    def test_interpreter_without_numpy_and_wheel_is_named(self):
        setup = os.path.join(ROOT, "python", "setup.py")
        code = ("import sys\n"
                "for m in ('numpy', 'wheel', 'wheel.bdist_wheel', 'setuptools.command.bdist_wheel'):\n"
                "    sys.modules[m] = None\n"
                "sys.argv = ['setup.py', '--name']\n"
                "exec(compile(open(%r).read(), %r, 'exec'), {'__file__': %r, '__name__': '__main__'})\n"
                % (setup, setup, setup))
        env = dict(os.environ)
        env.pop("LOOM_SKIP_PYTHON_CHECK", None)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("the Python interpreter installing this package, %s" % sys.executable, p.stderr)
        self.assertIn("lacks numpy", p.stderr)
        self.assertIn("'wheel' package", p.stderr)
        self.assertIn("/usr/bin/python3 -m pip install --no-index --no-build-isolation ./python", p.stderr)


if __name__ == "__main__":
    unittest.main()
