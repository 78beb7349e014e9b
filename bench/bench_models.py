#!/usr/bin/python3
"""Whole models end to end beside PyTorch and Scorch (issue 30; docs/models.md).

    /usr/bin/python3 bench/bench_models.py [--datasets cora,citeseer,pubmed] [--models gcn,sage]
        [--trials 64] [--batch 16] [--threads 2] [--reps 30] [--out build/bench_models] [--no-scorch] [--no-tune]

Per data set and model (2-layer GCN, Kipf & Welling 2017, A_hat = D^-1/2 (A+I) D^-1/2;
2-layer GraphSAGE with the mean aggregator, Hamilton et al. 2017, PyG's SAGEConv without
bias; hidden 16, no bias, as Scorch's bench_gcn.py without --bias):

  1. weights: trained by PyTorch here, in seconds (Adam lr 0.01, weight decay 5e-4, dropout
     0.5, 200 epochs, 20 labelled nodes per class, 500 validation, 1000 test: Kipf &
     Welling's setup on a random split -- the Planetoid split's indices are not in
     ../shared/data) where the data set has labels (Cora; Facebook); else PyTorch's
     initialisation (Glorot) -- PubMed's features and Citeseer are synthetic (below);
  2. the model file (models/gcn2_cora.model's form; written to --out for every data set),
     tuned with `loom tune MODEL --trials N --db DIR` (the database is kept: a rerun
     resumes it) and shipped with `loom replay MODEL [--db DIR] --emit-lib NAME`: without
     --db the default kernels ("loom default"), with it the tuned ones ("loom tuned");
  3. every framework runs the forward pass on the same inputs in one process, interleaved
     (each repetition runs every framework once, in rotating order), --reps times after a
     warm-up; the medians are printed, with the ratios;
  4. the outputs are compared with PyTorch's (max |diff| / max |PyTorch|) and, where there are
     labels, the test accuracy of each framework's logits is printed.

Frameworks: "pytorch" torch.sparse.mm with CSR tensors for the sparse products and dense
torch.matmul (Debian's torch 1.13 has no MKL: ATen's own CSR kernel); "scorch" Scorch's
scorch.matmul on its STensors for every sparse product (../shared/peers/scorch; built by
its build.sh into build/peers/scorch; skipped with a message when it does not import);
"loom default" / "loom tuned": the model library's forward pass called through
loom.load_model's bind (the C entry on prepared arrays).

Data (../shared/data): cora real graph, features and labels; citeseer a SYNTHETIC graph of
Citeseer's size (3327 nodes, 4552 undirected edges, 3703 binary features with 105165
nonzeros: what ../shared/peers/scorch/run_gcn.py uses -- the real one is not in
../shared/data); pubmed the real graph with SYNTHETIC features (500 wide, 988031
nonzeros, TF-IDF-like); facebook (optional) real graph, features and labels.
Threads: OMP_NUM_THREADS and torch.set_num_threads are both --threads.

--longformer 512,1024,2048,4096: one Longformer-style layer (models/longformer128.model's nine calls
at each sequence length: Q/K/V projections, windowed attention of 8 heads of 32 over a window of 64
each side plus 1 global token, output projection + residual, layernorm, ReLU FFN 256-1024-256 +
residual, layernorm), tuned (--lf-trials, gradient task scheduler) and shipped, beside PyTorch's
nn.Linear/nn.LayerNorm layer with the attention dense-masked (torch.matmul + masked_fill + softmax)
or sparse (sampled_addmm + sparse softmax + sparse.mm), random weights, outputs compared; plus loom's
two GEMM kernels beside OpenBLAS (torch.addmm). The script re-runs itself without OPENBLAS_CORETYPE
and OPENBLAS_L2_SIZE, then sets the host's core where OpenBLAS does not know the CPU (SkylakeX for its
Prescott fallback on an AVX-512 host; Haswell with LOOM_HOST_ISA=avx2: bench/openblas_core.py), and
prints the kernel OpenBLAS ran.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SHARED = os.environ.get("LOOM_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))


# OpenBLAS's own choice of kernel for this CPU: an inherited OPENBLAS_CORETYPE (e.g. Haswell: AVX2 on
# an AVX-512 host) or OPENBLAS_L2_SIZE would handicap PyTorch's dense GEMMs, so the benchmark runs
# itself without them (they must be unset before torch loads OpenBLAS).
_BLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(v in os.environ for v in _BLAS_OVERRIDES) and "--help" not in sys.argv and "-h" not in sys.argv:
    _env = {k: v for k, v in os.environ.items() if k not in _BLAS_OVERRIDES}
    _env["LOOM_BENCH_UNSET_BLAS"] = ",".join("%s=%s" % (v, os.environ[v]) for v in _BLAS_OVERRIDES if v in os.environ)
    os.execve(sys.executable, [sys.executable] + sys.argv, _env)


def blas_info():
    """The BLAS torch loaded and the kernel OpenBLAS chose (openblas_get_config / _corename)."""
    import ctypes
    import re
    libs = sorted(set(re.findall(r"/\S*openblas\S*\.so[.0-9]*", open("/proc/self/maps").read())))
    for lib in libs:
        try:
            h = ctypes.CDLL(lib)
            h.openblas_get_config.restype = h.openblas_get_corename.restype = ctypes.c_char_p
            return "%s (kernel %s; %s)" % (h.openblas_get_config().decode(), h.openblas_get_corename().decode(), lib)
        except (OSError, AttributeError):
            continue
    return "no OpenBLAS loaded"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default="cora,citeseer,pubmed")
    p.add_argument("--models", default="gcn,sage")
    p.add_argument("--trials", type=int, default=64, help="loom tune trials per model (0: no tuning)")
    p.add_argument("--batch", type=int, default=16, help="loom tune --batch: the trials of one task scheduler step")
    p.add_argument("--remeasure", type=int, default=3,
                   help="loom tune --remeasure rounds (default 3): per task the best 5 schedules and the default "
                        "are re-measured together and the winner, never slower than the default, ships (0: the "
                        "campaign's fastest trial record ships)")
    p.add_argument("--tune-timeout", type=float, default=150,
                   help="seconds one model campaign may take (default 150; 0: no limit); then it is stopped, "
                        "its tasks re-measured, and what it found ships -- so the whole run is bounded")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", default=os.path.join(ROOT, "build", "bench_models"))
    p.add_argument("--loom", default=os.path.join(ROOT, "build", "loom"))
    p.add_argument("--ae", default="0.5,0.9,0.95,0.99",
                   help="the pruned autoencoder's sparsities ('' : none); Cora features, batch --ae-batch")
    p.add_argument("--ae-batch", type=int, default=256)
    p.add_argument("--ae-epochs", type=int, default=5, help="autoencoder training epochs (Scorch's: 20)")
    p.add_argument("--ae-trials", type=int, default=-1, help="loom tune trials per autoencoder (default --trials)")
    p.add_argument("--longformer", default="",
                   help="sequence lengths of the Longformer-style layer (e.g. 512,1024,2048,4096; default none): "
                        "Q/K/V projections, windowed attention (8 heads x 32, window 64 each side + 1 global token), "
                        "output projection, residuals, layernorms, FFN 256-1024-256 (models/longformer128.model's form)")
    p.add_argument("--lf-trials", type=int, default=64,
                   help="loom tune trials per Longformer sequence length (default 64; 0: default kernels only)")
    p.add_argument("--lf-batch", type=int, default=8, help="loom tune --batch for the Longformer layer (default 8)")
    p.add_argument("--lf-remeasure", type=int, default=3,
                   help="loom tune --remeasure rounds for the Longformer layer (default 3: each task ships the "
                        "re-measured winner among its best 5 and its default, so never a schedule slower than "
                        "the default that a loaded moment made look fast)")
    p.add_argument("--lf-reps", type=int, default=7, help="interleaved runs of the Longformer layer (default 7)")
    p.add_argument("--no-scorch", action="store_true")
    p.add_argument("--no-tune", action="store_true", help="ship whatever the database has (no loom tune)")
    return p.parse_args()


args = parse_args()
args.loom = os.path.abspath(args.loom)
args.out = os.path.abspath(args.out)
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.threads)
# OpenBLAS (PyTorch's dense products: Debian's torch links libblas.so.3 = OpenBLAS) picks its kernels
# by the CPU unless told otherwise: a session environment with OPENBLAS_CORETYPE=Haswell and
# OPENBLAS_L2_SIZE=512 made it run AVX2 kernels on an AVX-512 host.  Unset before numpy/torch load it;
# then the bench sets the host's core where OpenBLAS does not know the CPU (Prescott on Emerald Rapids:
# bench/openblas_core.py); the header prints what it runs (openblas_get_corename).
OPENBLAS_UNSET = {v: os.environ.pop(v) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if v in os.environ}
import openblas_core  # noqa: E402  (bench/, the script's directory)

openblas_core.choose()
os.environ.setdefault("LOOM_LIBRARY", os.path.join(os.path.dirname(args.loom), "libloom.so"))

import warnings  # noqa: E402

warnings.filterwarnings("ignore")
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "python"))
import loom  # noqa: E402

torch.set_num_threads(args.threads)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def openblas_info():
    """The OpenBLAS PyTorch runs: 'core CORE (config)', or why not known."""
    import ctypes
    for lib in ("libopenblas.so.0", "libblas.so.3"):
        try:
            h = ctypes.CDLL(lib)
            h.openblas_get_corename.restype = h.openblas_get_config.restype = ctypes.c_char_p
            return "core %s (%s; %d threads)" % (h.openblas_get_corename().decode(), h.openblas_get_config().decode(),
                                                  h.openblas_get_num_threads())
        except (OSError, AttributeError):
            continue
    return "not OpenBLAS (no openblas_get_corename)"


SCORCH_PEER = os.path.join(ROOT, "..", "shared", "peers", "scorch")


def find_scorch():
    """Scorch's source tree: $SCORCH_SRC, else build/peers/scorch/src; built there by the peer script
    (../shared/peers/scorch/build.sh, SCORCH_GIT=<git dir of bobbyyyan/scorch>) when missing and
    SCORCH_GIT is set.  Returns (module, STensor, description) or (None, None, why not)."""
    src = os.environ.get("SCORCH_SRC", os.path.join(ROOT, "build", "peers", "scorch", "src"))
    if not os.path.isdir(src) and os.environ.get("SCORCH_GIT") and "SCORCH_SRC" not in os.environ:
        log("# scorch: building it (%s/build.sh, SCORCH_GIT=%s)" % (SCORCH_PEER, os.environ["SCORCH_GIT"]))
        b = subprocess.run(["bash", os.path.join(SCORCH_PEER, "build.sh")], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if b.returncode:
            return None, None, "its build failed (%s/build.sh):\n%s" % (SCORCH_PEER, b.stdout[-2000:])
    if not os.path.isdir(src):
        return None, None, ("not built: SCORCH_GIT=<git dir of github.com/bobbyyyan/scorch> bash %s/build.sh "
                            "(or --no-scorch)" % SCORCH_PEER)
    sys.path.insert(0, src)
    try:
        import scorch as sc  # noqa: E402
        from scorch import STensor as st  # noqa: E402
        import scorch_ops  # noqa: E402,F401 -- its compiled kernels: the rows are Scorch's, not a fallback
    except Exception as e:  # noqa: BLE001 -- any import failure: run without it
        return None, None, "does not import from %s (%s: %s)" % (src, type(e).__name__, e)
    return sc, st, "%s (kernels %s)" % (os.path.dirname(sc.__file__), scorch_ops.__file__)


scorch, STensor, SCORCH_DESC = (None, None, "--no-scorch") if args.no_scorch else find_scorch()


# ---- data ------------------------------------------------------------------------

def read_csr(path):
    a = sp.csr_matrix(scipy.io.mmread(path), dtype=np.float32)
    a.sum_duplicates()
    a.sort_indices()
    return a


def random_graph(n, n_edges, rng):
    """Uniform random undirected simple graph with exactly n_edges edges (run_gcn.py's)."""
    edges = set()
    while len(edges) < n_edges:
        k = 2 * (n_edges - len(edges))
        for a, b in zip(rng.integers(0, n, k).tolist(), rng.integers(0, n, k).tolist()):
            if a != b:
                edges.add((min(a, b), max(a, b)))
                if len(edges) == n_edges:
                    break
    e = np.array(sorted(edges), dtype=np.int64)
    rows, cols = np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]])
    m = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)), shape=(n, n))
    m.sort_indices()
    return m


def random_features(n, f, nnz, rng, binary):
    flat = rng.choice(n * f, size=nnz, replace=False)
    rows, cols = np.divmod(flat, f)
    vals = np.ones(nnz, np.float32) if binary else rng.random(nnz, dtype=np.float32) * 0.2 + 0.01
    m = sp.csr_matrix((vals, (rows, cols)), shape=(n, f), dtype=np.float32)
    m.sum_duplicates()
    m.sort_indices()
    return m


def labels_of(path):
    with open(path) as f:
        return np.array([int(x) for x in f.read().split()], dtype=np.int64)


def load_dataset(name, rng):
    """(A pattern CSR with ones, X CSR, labels or None, classes, files {A, X} for the model file)."""
    d = os.path.join(args.out, name)
    os.makedirs(d, exist_ok=True)
    if name in ("cora", "facebook"):  # Cora: the repository's byte copies in data/ (make demo needs no more)
        src = os.path.join(ROOT, "data") if name == "cora" else os.path.join(SHARED, name)
        files = {"A": os.path.join(src, name + "_adj.mtx"), "X": os.path.join(src, name + "_features.mtx")}
        y = labels_of(os.path.join(src, name + "_labels.txt"))
        return read_csr(files["A"]), read_csr(files["X"]), y, int(y.max()) + 1, files
    if name == "citeseer":
        a = random_graph(3327, 4552, rng)
        x = random_features(3327, 3703, 105165, rng, True)
        classes = 6
    elif name == "pubmed":
        a = read_csr(os.path.join(SHARED, "pubmed", "pubmed_adj.mtx"))
        x = random_features(19717, 500, 988031, rng, False)
        classes = 3
    else:
        raise SystemExit("unknown data set %r (cora, citeseer, pubmed, facebook)" % name)
    a.data[:] = 1
    files = {"A": os.path.join(d, "adj.mtx"), "X": os.path.join(d, "features.mtx")}
    for key, m in (("A", a), ("X", x)):
        if not os.path.exists(files[key]):  # deterministic (seeded): kept, so the tuned records stay valid
            scipy.io.mmwrite(files[key] + ".tmp.mtx", m, field="real")
            os.replace(files[key] + ".tmp.mtx", files[key])
        else:  # what the records were tuned on
            m2 = read_csr(files[key])
            assert m2.shape == m.shape and m2.nnz == m.nnz, files[key]
    return read_csr(files["A"]), read_csr(files["X"]), None, classes, files


def gcn_norm(a):
    a = sp.csr_matrix(a, dtype=np.float64)
    a = a + sp.identity(a.shape[0], dtype=np.float64, format="csr")
    dinv = 1.0 / np.sqrt(np.asarray(a.sum(axis=1)).ravel())
    m = sp.csr_matrix(sp.diags(dinv) @ a @ sp.diags(dinv), dtype=np.float32)
    m.sort_indices()
    return m


def mean_norm(a):
    deg = np.maximum(np.asarray(a.sum(axis=1)).ravel(), 1)
    m = sp.csr_matrix(sp.diags(1.0 / deg) @ sp.csr_matrix(a, dtype=np.float64), dtype=np.float32)
    m.sort_indices()
    return m


def torch_csr(m):
    return torch.sparse_csr_tensor(torch.from_numpy(m.indptr.astype(np.int64)),
                                   torch.from_numpy(m.indices.astype(np.int64)),
                                   torch.from_numpy(m.data.astype(np.float32)), size=m.shape)


def torch_coo(m):
    c = m.tocoo()
    return torch.sparse_coo_tensor(np.vstack([c.row, c.col]).astype(np.int64), c.data.astype(np.float32),
                                   size=m.shape).coalesce()


def split(y, classes, rng):
    idx = rng.permutation(len(y))
    train = np.concatenate([idx[y[idx] == c][:20] for c in range(classes)])
    rest = np.setdiff1d(idx, train, assume_unique=True)
    rest = rest[rng.permutation(len(rest))]
    return train, rest[:500], rest[500:1500]


# ---- models: weights, PyTorch and Scorch forward passes, loom's inputs ---------------

def glorot(i, o, gen):
    r = (6.0 / (i + o)) ** 0.5
    return ((torch.rand(i, o, generator=gen) * 2 - 1) * r).requires_grad_()


def init_weights(kind, nf, classes, gen):
    if kind == "gcn":
        return {"W1": glorot(nf, 16, gen), "W2": glorot(16, classes, gen)}
    return {"Ws1": glorot(nf, 16, gen), "Wn1": glorot(nf, 16, gen), "Ws2": glorot(16, classes, gen),
            "Wn2": glorot(16, classes, gen)}


def forward(kind, mm, X, A, w, dropout=0.0):
    """The model on framework mm's sparse product (mm(S, D) = S D); A: A_hat (gcn) or D^-1 A (sage)."""
    if kind == "gcn":
        h = torch.relu(mm(A, mm(X, w["W1"])))
        h = F.dropout(h, dropout, training=dropout > 0)
        return mm(A, torch.matmul(h, w["W2"]))
    h = torch.relu(mm(X, w["Ws1"]) + mm(A, mm(X, w["Wn1"])))
    h = F.dropout(h, dropout, training=dropout > 0)
    return torch.matmul(h, w["Ws2"]) + mm(A, torch.matmul(h, w["Wn2"]))


def train(kind, X, A, y, classes, gen, rng):
    """Weights trained in Kipf & Welling's setup (random split); returns (weights, test nodes, seconds)."""
    w = init_weights(kind, X.shape[1], classes, gen)
    if y is None:
        return {k: v.detach() for k, v in w.items()}, None, 0.0
    tr, va, te = split(y, classes, rng)
    Xc, Ac, yt = torch_coo(X), torch_coo(A), torch.from_numpy(y)
    opt = torch.optim.Adam(list(w.values()), lr=0.01, weight_decay=5e-4)
    t0 = time.perf_counter()
    for _ in range(args.epochs):
        opt.zero_grad()
        out = forward(kind, torch.sparse.mm, Xc, Ac, w, dropout=0.5)
        F.cross_entropy(out[tr], yt[tr]).backward()
        opt.step()
    return {k: v.detach() for k, v in w.items()}, te, time.perf_counter() - t0


def loom_inputs(kind, X, A, w):
    n = lambda t: np.ascontiguousarray(t.numpy())  # noqa: E731
    if kind == "gcn":
        return dict(xw1_A=X, xw1_B=n(w["W1"]), agg1_A=A, hw2_B=n(w["W2"]), agg2_A=A)
    return dict(xs1_A=X, xs1_B=n(w["Ws1"]), xn1_A=X, xn1_B=n(w["Wn1"]), agg1_A=A, hs2_B=n(w["Ws2"]),
                hn2_B=n(w["Wn2"]), agg2_A=A)


MODEL_FILES = {
    "gcn": """model gcn2_{ds}
task xw1  {root}/workloads/spmm.loom          --data A={X} -p F=16
task agg1 {root}/models/gcn/gcn_agg_relu.loom --data A={A} -p F=16
task hw2  {root}/workloads/gemm.loom          -p M={n} -p K=16 -p N={c}
task agg2 {root}/models/gcn/gcn_agg.loom      --data A={A} -p F={c}
feed xw1.C -> agg1.T
feed agg1.H -> hw2.A
feed hw2.C -> agg2.T
output agg2.H
""",
    "sage": """model sage2_{ds}
task xs1  {root}/workloads/spmm.loom            --data A={X} -p F=16
task xn1  {root}/workloads/spmm.loom            --data A={X} -p F=16
task agg1 {root}/models/sage/sage_agg_relu.loom --data A={A} -p F=16
task hs2  {root}/workloads/gemm.loom            -p M={n} -p K=16 -p N={c}
task hn2  {root}/workloads/gemm.loom            -p M={n} -p K=16 -p N={c}
task agg2 {root}/models/sage/sage_agg.loom      --data A={A} -p F={c}
feed xs1.C -> agg1.S
feed xn1.C -> agg1.T
feed agg1.H -> hs2.A
feed agg1.H -> hn2.A
feed hs2.C -> agg2.S
feed hn2.C -> agg2.T
output agg2.H
""",
}


def run_loom(cmd, timeout=None, ok=(0,)):
    """Run a loom command; its output (exit codes in ok; else the run stops).  With a timeout (seconds) the
    command's whole process group (its measurement children too, which hold the model campaign's lock) is
    killed at it and None returned."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.communicate()
        return None
    if p.returncode not in ok:
        raise SystemExit("%s failed (%d):\n%s" % (" ".join(cmd), p.returncode, out))
    return out


def ship(kind, ds, files, n, c, text=None, trials=None, batch=None, remeasure=None):
    """The model file; tune it (unless --no-tune / --trials 0); the default and the tuned libraries."""
    d = os.path.join(args.out, ds)
    trials = args.trials if trials is None else trials
    path = os.path.join(d, "%s2_%s.model" % (kind, ds) if text is None else "%s.model" % kind)
    with open(path, "w") as f:
        f.write(text or MODEL_FILES[kind].format(ds=ds, root=ROOT, X=files["X"], A=files["A"], n=n, c=c))
    db = os.path.join(d, kind + "_db")
    libs = {}
    run_loom([args.loom, "replay", path, "--emit-lib", kind + "_default", "--lib-dir", d])
    libs["loom default"] = loom.load_model(os.path.join(d, "lib%s_default.so" % kind))
    if trials > 0:
        if not args.no_tune:
            t0 = time.perf_counter()
            if batch is None:
                batch = min(args.batch, max(1, trials // 4))  # each of the models' 4 tasks gets at least one round
            cmd = [args.loom, "tune", path, "--trials", str(trials), "--batch", str(batch), "--db", db,
                   "--remeasure", str(args.remeasure if remeasure is None else remeasure),
                   "--threads", str(args.threads), "-q"]
            s = run_loom(cmd, timeout=args.tune_timeout if args.tune_timeout > 0 else None)
            if s is None:  # killed at --tune-timeout: its records are safe; end it as a campaign ends (the
                # re-measurement of every task, the default included) without more trials
                log("  loom tune %s on %s: stopped at --tune-timeout %.0f s; re-measuring what it found" %
                    (kind, ds, args.tune_timeout))
                s = run_loom(cmd[:3] + ["--trials", "1"] + cmd[5:], ok=(0, 1))  # 1: a task had no record
                # yet (it ships its default schedule)
            log("  loom tune %s on %s: %.0f s\n%s" % (kind, ds, time.perf_counter() - t0,
                                                       "\n".join("    " + l for l in s.strip().splitlines())))
        run_loom([args.loom, "replay", path, "--db", db, "--emit-lib", kind + "_tuned", "--lib-dir", d])
        libs["loom tuned"] = loom.load_model(os.path.join(d, "lib%s_tuned.so" % kind))
    return libs


# ---- timing ---------------------------------------------------------------------

def interleaved(fns, warmup, reps):
    """Median seconds per framework: every repetition runs each once, in rotating order."""
    names = list(fns)
    for _ in range(warmup):
        for nm in names:
            fns[nm]()
    times = {nm: [] for nm in names}
    for r in range(reps):
        for k in range(len(names)):
            nm = names[(r + k) % len(names)]
            t0 = time.perf_counter()
            fns[nm]()
            times[nm].append(time.perf_counter() - t0)
    return {nm: statistics.median(t) for nm, t in times.items()}


def accuracy(logits, y, te):
    return float((np.asarray(logits).argmax(axis=1)[te] == y[te]).mean())


def bench_one(kind, ds, data, rng):
    a, x, y, classes, files = data
    gen = torch.Generator().manual_seed(args.seed)
    An = gcn_norm(a) if kind == "gcn" else mean_norm(a)
    cache = os.path.join(args.out, ds, kind + "_weights.pt")  # a rerun (other --threads) keeps the weights
    if os.path.exists(cache):
        w, te = torch.load(cache)
        train_s = 0.0
    else:
        w, te, train_s = train(kind, x, An, y, classes, gen, rng)
        torch.save((w, te), cache)
    libs = ship(kind, ds, files, a.shape[0], classes)
    Xt, At = torch_csr(x), torch_csr(An)
    fns, outs = {}, {}
    fns["pytorch"] = lambda: outs.__setitem__("pytorch", forward(kind, torch.sparse.mm, Xt, At, w))
    if scorch is not None:
        Xs, As = STensor.from_csr(Xt, "X"), STensor.from_csr(At, "A")
        smm = lambda s, d: scorch.matmul(s, d.contiguous(), format="dd")  # noqa: E731
        fns["scorch"] = lambda: outs.__setitem__("scorch", forward(kind, smm, Xs, As, w))
    results = {}
    for nm, lib in libs.items():
        run, result = lib.bind(**loom_inputs(kind, x, a, w))
        fns[nm] = run
        results[nm] = result
    with torch.no_grad():
        med = interleaved(fns, args.warmup, args.reps)
    ref = outs["pytorch"].numpy()
    scale = float(np.abs(ref).max())
    rows = []
    for nm in fns:
        o = outs[nm].numpy() if nm in outs else np.asarray(results[nm]())
        diff = float(np.abs(o - ref).max()) / scale
        acc = accuracy(o, y, te) if y is not None else None
        rows.append((nm, med[nm], diff, acc, float((o.argmax(1) == ref.argmax(1)).mean())))
    return rows, train_s


# ---- the pruned autoencoder --------------------------------------------------------

AE_DIMS = [1024, 512]  # Scorch's "small" hidden widths; input and output: Cora's 1433 features
AE_LAYERS = ["enc1", "enc2", "dec1", "dec2"]


def train_ae(x, gen):
    """A dense 4-layer autoencoder (relu, relu, relu, sigmoid; Scorch's architecture) trained on
    the Cora feature rows with PyTorch (Adam 1e-3, binary cross-entropy, batch 256, --ae-epochs);
    kept in --out/ae_weights.pt (a rerun loads it: the pruned matrices, and so the tuning
    records, stay the same)."""
    cache = os.path.join(args.out, "ae_weights.pt")
    if os.path.exists(cache):
        return torch.load(cache), 0.0
    dims = [x.shape[1]] + AE_DIMS + AE_DIMS[-2::-1] + [x.shape[1]]
    ws = {}
    for k, nm in enumerate(AE_LAYERS):
        ws[nm + ".W"] = glorot(dims[k + 1], dims[k], gen)
        ws[nm + ".b"] = torch.zeros(dims[k + 1], requires_grad=True)
    X = torch.from_numpy(x.toarray())
    opt = torch.optim.Adam(list(ws.values()), lr=1e-3)
    t0 = time.perf_counter()
    for _ in range(args.ae_epochs):
        for i in torch.randperm(X.shape[0], generator=gen).split(256):
            opt.zero_grad()
            F.binary_cross_entropy(ae_dense(X[i], ws), X[i]).backward()
            opt.step()
    ws = {k: v.detach() for k, v in ws.items()}
    torch.save(ws, cache)
    return ws, time.perf_counter() - t0


def ae_dense(x, ws):
    for k, nm in enumerate(AE_LAYERS):
        x = F.linear(x, ws[nm + ".W"], ws[nm + ".b"])
        x = torch.sigmoid(x) if k == 3 else torch.relu(x)
    return x


def ae_sparse(xt, ws, mm):
    """(batch columns) activations: every layer mm(W, X) + b with W sparse."""
    for k, nm in enumerate(AE_LAYERS):
        xt = mm(ws[nm + ".S"], xt) + ws[nm + ".b"][:, None]
        xt = torch.sigmoid(xt) if k == 3 else torch.relu(xt)
    return xt


def prune(ws, sparsity):
    """Global unstructured magnitude pruning (Han et al. 2015): one threshold over every weight."""
    mags = torch.cat([ws[nm + ".W"].abs().flatten() for nm in AE_LAYERS])
    thr = torch.quantile(mags[torch.randperm(mags.numel(), generator=torch.Generator().manual_seed(0))[:1000000]],
                         sparsity)
    out = dict(ws)
    for nm in AE_LAYERS:
        out[nm + ".W"] = ws[nm + ".W"] * (ws[nm + ".W"].abs() > thr)
    return out


def bench_ae(x, sparsities):
    gen = torch.Generator().manual_seed(args.seed)
    ws, train_s = train_ae(x, gen)
    log("  autoencoder: %s" % ("trained by PyTorch in %.1f s" % train_s if train_s else "weights from ae_weights.pt"))
    batch = torch.from_numpy(x[:args.ae_batch].toarray())
    xt = batch.t().contiguous()
    ok = True
    for s in sparsities:
        ds = "ae%g" % s
        d = os.path.join(args.out, ds)
        os.makedirs(d, exist_ok=True)
        wp = prune(ws, s)
        lines = ["model ae_%s" % ds.replace(".", "_")]
        inputs = {}
        for k, nm in enumerate(AE_LAYERS):
            m = sp.csr_matrix(wp[nm + ".W"].numpy())
            m.sort_indices()
            f = os.path.join(d, nm + ".mtx")
            if not os.path.exists(f):
                scipy.io.mmwrite(f + ".tmp.mtx", m, field="real")
                os.replace(f + ".tmp.mtx", f)
            wp[nm + ".S"] = torch_csr(m)
            lines.append("task %s %s/models/ae/ae_%s.loom --data W=%s -p B=%d" % (
                nm, ROOT, "sigmoid" if k == 3 else "relu", f, args.ae_batch))
            inputs[nm + "_W"] = m
            inputs[nm + "_b"] = np.ascontiguousarray(wp[nm + ".b"].numpy())
        inputs["enc1_X"] = np.ascontiguousarray(xt.numpy())
        lines += ["feed enc1.Y -> enc2.X", "feed enc2.Y -> dec1.X", "feed dec1.Y -> dec2.X", "output dec2.Y", ""]
        libs = ship("ae", ds, None, 0, 0, text="\n".join(lines),
                    trials=args.trials if args.ae_trials < 0 else args.ae_trials)
        fns, outs = {}, {}
        fns["pytorch dense"] = lambda: outs.__setitem__("pytorch dense", ae_dense(batch, wp).t())
        fns["pytorch"] = lambda: outs.__setitem__("pytorch", ae_sparse(xt, wp, torch.sparse.mm))
        if scorch is not None:
            for nm in AE_LAYERS:
                wp[nm + ".St"] = STensor.from_csr(wp[nm + ".S"], nm)
            sws = dict(wp)
            for nm in AE_LAYERS:
                sws[nm + ".S"] = wp[nm + ".St"]
            fns["scorch"] = lambda: outs.__setitem__(
                "scorch", ae_sparse(xt, sws, lambda a, b: scorch.matmul(a, b.contiguous(), format="dd")))
        results = {}
        for nm, lib in libs.items():
            fns[nm], results[nm] = lib.bind(**inputs)
        with torch.no_grad():
            med = interleaved(fns, args.warmup, args.reps)
        ref = outs["pytorch dense"].numpy()
        fast = min(med["pytorch"], med["pytorch dense"])
        for nm in fns:
            o = outs[nm].numpy() if nm in outs else np.asarray(results[nm]())
            diff = float(np.abs(o - ref).max()) / float(np.abs(ref).max())
            vs_s = "%8.2fx" % (med["scorch"] / med[nm]) if "scorch" in med else "%9s" % "-"
            print("%-9s %-5s %-13s %8.3f ms %8.2fx %s %10.2e %9s" % (
                "cora", "ae%g" % s, nm, med[nm] * 1e3, fast / med[nm], vs_s, diff, "n/a"), flush=True)
            ok &= diff < 1e-3
    return ok


# ---- the Longformer-style layer ------------------------------------------------------

LF_HEADS, LF_DH, LF_WINDOW, LF_D, LF_FF = 8, 32, 64, 256, 1024
LF_MODEL = """model longformer{n}
task q    {root}/models/longformer/lf_linear.loom   -p N={n}
task k    {root}/models/longformer/lf_linear.loom   -p N={n}
task v    {root}/models/longformer/lf_linear.loom   -p N={n}
task attn {root}/models/longformer/lf_attn.loom     --data A={mask}
task o    {root}/models/longformer/lf_residual.loom -p N={n} -p F=256
task ln1  {root}/models/longformer/lf_ln.loom       -p N={n}
task ff1  {root}/models/longformer/lf_ffn1.loom     -p N={n}
task ff2  {root}/models/longformer/lf_residual.loom -p N={n} -p F=1024
task ln2  {root}/models/longformer/lf_ln.loom       -p N={n}
feed q.Y   -> attn.Q
feed k.Y   -> attn.K
feed v.Y   -> attn.V
feed attn.O -> o.H
feed o.Y   -> ln1.Y
feed ln1.Z -> ff1.X
feed ln1.Z -> ff2.R
feed ff1.H -> ff2.H
feed ff2.Y -> ln2.Y
output ln2.Z
"""


def lf_mask(n):
    """The band |i - j| <= 64 plus the global token 0 (its row and column), CSR, value 1."""
    i = np.repeat(np.arange(n), 2 * LF_WINDOW + 1)
    j = i + np.tile(np.arange(-LF_WINDOW, LF_WINDOW + 1), n)
    keep = (j >= 0) & (j < n)
    rows = np.concatenate([i[keep], np.zeros(n, np.int64), np.arange(n)])
    cols = np.concatenate([j[keep], np.arange(n), np.zeros(n, np.int64)])
    m = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)), shape=(n, n))
    m.data[:] = 1
    m.sort_indices()
    return m


class LFLayer(torch.nn.Module):
    """The layer in PyTorch (post-layernorm, RoBERTa's/Longformer's block): nn.Linear projections,
    windowed attention over the mask in the dense masked form (one [8, N, N] score tensor:
    torch.matmul + masked_fill + softmax) or the sparse form (per head sampled_addmm over the CSR
    mask, torch.sparse.softmax, torch.sparse.mm), then Wo, residual, LayerNorm, the ReLU FFN,
    residual, LayerNorm."""

    def __init__(self, gen):
        super().__init__()
        self.q, self.k, self.v, self.o = (torch.nn.Linear(LF_D, LF_D) for _ in range(4))
        self.ff1, self.ff2 = torch.nn.Linear(LF_D, LF_FF), torch.nn.Linear(LF_FF, LF_D)
        self.ln1, self.ln2 = torch.nn.LayerNorm(LF_D), torch.nn.LayerNorm(LF_D)
        with torch.no_grad():
            for prm in self.parameters():  # random weights, biases and layernorm affines (seeded)
                prm.copy_(torch.randn(prm.shape, generator=gen) * (0.5 if prm.dim() == 1 else prm.shape[-1] ** -0.5))

    def heads(self, x, lin):
        return lin(x).view(-1, LF_HEADS, LF_DH).transpose(0, 1)  # [8, N, 32]

    def attn_dense(self, q, k, v, dense_mask):
        s = torch.matmul(q, k.transpose(1, 2)) * LF_DH ** -0.5
        return torch.matmul(torch.softmax(s.masked_fill(~dense_mask, float("-inf")), dim=-1), v)

    def attn_sparse(self, q, k, v, mask_csr):
        outs = []
        for h in range(LF_HEADS):
            s = torch.sparse.sampled_addmm(mask_csr, q[h].contiguous(), k[h].t().contiguous(), beta=0.0,
                                           alpha=LF_DH ** -0.5)
            p = torch.sparse.softmax(s.to_sparse_coo(), dim=1)
            outs.append(torch.sparse.mm(p, v[h].contiguous()))
        return torch.stack(outs)

    def forward(self, x, mask, sparse):
        q, k, v = self.heads(x, self.q), self.heads(x, self.k), self.heads(x, self.v)
        a = (self.attn_sparse if sparse else self.attn_dense)(q, k, v, mask)
        y1 = self.ln1(x + self.o(a.transpose(0, 1).reshape(-1, LF_D)))
        return self.ln2(y1 + self.ff2(torch.relu(self.ff1(y1))))


def lf_inputs(layer, x, mask):
    """The shipped library's arguments (docs/models.md): nn.Linear's weights transposed."""
    n = lambda t: np.ascontiguousarray(t.detach().numpy())  # noqa: E731
    d = {"attn_A": mask}
    for c, lin in (("q", layer.q), ("k", layer.k), ("v", layer.v), ("o", layer.o), ("ff1", layer.ff1),
                   ("ff2", layer.ff2)):
        d[c + "_W"], d[c + "_b"] = n(lin.weight.t()), n(lin.bias)
    for c in ("q", "k", "v"):
        d[c + "_X"] = n(x)
    d["o_R"] = n(x)
    for c, ln in (("ln1", layer.ln1), ("ln2", layer.ln2)):
        d[c + "_g"], d[c + "_b"] = n(ln.weight), n(ln.bias)
    return d


def lf_ship(n, d):
    f = os.path.join(d, "mask.mtx")
    if not os.path.exists(f):
        scipy.io.mmwrite(f + ".tmp.mtx", lf_mask(n), field="pattern")
        os.replace(f + ".tmp.mtx", f)
    text = LF_MODEL.format(n=n, root=ROOT, mask=f)
    return ship("lf", "lf%d" % n, None, 0, 0, text=text, trials=args.lf_trials, batch=args.lf_batch,
                remeasure=args.lf_remeasure)


def lf_gemms(n, lib, layer, x):
    """loom's GEMM kernels of the layer (the Q/K/V task: N x 256 x 256 + bias; the FFN's first:
    N x 256 x 1024 + bias, ReLU) beside OpenBLAS through torch (addmm, as nn.Linear runs it), on the
    same inputs, interleaved; GFLOP/s from 2 N K F."""
    name = lib.name
    xs = np.ascontiguousarray(x.numpy())
    cases = (("q", layer.q, False), ("ff1", layer.ff1, True))
    for task, lin, relu in cases:
        w, b = np.ascontiguousarray(lin.weight.detach().t().numpy()), lin.bias.detach().numpy().copy()
        wt, bt = torch.from_numpy(w), torch.from_numpy(b)
        run, res = lib.kernels["%s_%s" % (name, task)].bind(X=xs, W=w, b=b)
        if relu:
            fns = {"openblas": lambda: torch.relu(torch.addmm(bt, x, wt)), "loom": run}
        else:
            fns = {"openblas": lambda: torch.addmm(bt, x, wt), "loom": run}
        med = interleaved(fns, 2, max(15, 3 * args.lf_reps))
        ref = fns["openblas"]().numpy()
        fns["loom"]()
        diff = float(np.abs(np.asarray(res()) - ref).max()) / float(np.abs(ref).max())
        fl = 2.0 * n * lin.in_features * lin.out_features
        log("  lf%d GEMM %d x %d x %d (%s): OpenBLAS %.3f ms (%.0f GFLOP/s), loom %s %.3f ms (%.0f GFLOP/s): "
            "loom %.2fx; |diff| %.1e" % (n, n, lin.in_features, lin.out_features, task, med["openblas"] * 1e3,
                                         fl / med["openblas"] / 1e9, name, med["loom"] * 1e3,
                                         fl / med["loom"] / 1e9, med["openblas"] / med["loom"], diff))
        print("# lf%d GEMM %dx%dx%d: OpenBLAS %.3f ms, loom (%s) %.3f ms: loom %.2fx" % (
            n, n, lin.in_features, lin.out_features, med["openblas"] * 1e3, name, med["loom"] * 1e3,
            med["openblas"] / med["loom"]), flush=True)


def bench_longformer(seqs):
    ok = True
    for n in seqs:
        d = os.path.join(args.out, "lf%d" % n)
        os.makedirs(d, exist_ok=True)
        libs = lf_ship(n, d)
        mask = lf_mask(n)
        g = torch.Generator().manual_seed(args.seed)
        layer = LFLayer(g).eval()
        x = torch.randn(n, LF_D, generator=g)
        dense_mask, mask_t = torch.from_numpy(mask.toarray() > 0), torch_csr(mask)
        inputs = lf_inputs(layer, x, mask)
        fns, outs, results = {}, {}, {}
        fns["pytorch dense"] = lambda: outs.__setitem__("pytorch dense", layer(x, dense_mask, False))
        fns["pytorch"] = lambda: outs.__setitem__("pytorch", layer(x, mask_t, True))
        for nm, lib in libs.items():
            fns[nm], results[nm] = lib.bind(**inputs)
        t0 = time.perf_counter()
        with torch.no_grad():
            med = interleaved(fns, 1, args.lf_reps)
        log("  lf%d: %d interleaved runs in %.0f s" % (n, args.lf_reps + 1, time.perf_counter() - t0))
        with torch.no_grad():
            lf_gemms(n, libs.get("loom tuned", libs["loom default"]), layer, x)
        ref = outs["pytorch dense"].detach().numpy()
        fast = min(med["pytorch"], med["pytorch dense"])
        for nm in fns:
            o = outs[nm].detach().numpy() if nm in outs else np.asarray(results[nm]())
            diff = float(np.abs(o - ref).max()) / float(np.abs(ref).max())
            print("%-9s %-6s %-13s %8.3f ms %8.2fx %9s %10.2e %9s" % (
                "random", "lf%d" % n, nm, med[nm] * 1e3, fast / med[nm], "-", diff, "n/a"), flush=True)
            ok &= diff < 1e-3
    return ok


def main():
    os.makedirs(args.out, exist_ok=True)
    print("# bench_models: %d threads (OMP_NUM_THREADS, torch.set_num_threads), medians of %d interleaved "
          "runs after %d warm-up; loom tuned: %d trials per model (loom tune MODEL); torch %s (no MKL)" %
          (args.threads, args.reps, args.warmup, args.trials, torch.__version__))
    print("# BLAS: %s; the environment's OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset in this run (inherited: %s)" %
          (blas_info(), os.environ.get("LOOM_BENCH_UNSET_BLAS") or "none"))
    load = os.getloadavg()[0]
    print("# load average %.1f on %d cores%s" % (load, os.cpu_count() or 0,
                                                  ": a shared, busy machine -- latencies are noisy" if load > 1.5 else ""))
    print("# OpenBLAS core: %s" % openblas_core.note())
    print("# PyTorch's BLAS: OpenBLAS %s%s" % (openblas_info(), "; unset for it: " + ", ".join(
        "%s=%s" % kv for kv in OPENBLAS_UNSET.items()) if OPENBLAS_UNSET else ""))
    print("# scorch: %s" % SCORCH_DESC.splitlines()[0])
    print("# loom tune: --trials %d (autoencoder %d) --batch <= %d --remeasure %d per model" % (
        args.trials, args.trials if args.ae_trials < 0 else args.ae_trials, args.batch, args.remeasure))
    t_start = time.perf_counter()
    print("%-9s %-5s %-13s %11s %9s %9s %10s %9s" % ("data", "model", "framework", "latency", "vs torch",
                                                      "vs scorch", "|diff|", "test acc"))
    ok = True
    for ds in [d for d in args.datasets.split(",") if d]:
        rng = np.random.default_rng(args.seed)
        data = load_dataset(ds, rng)
        for kind in [k for k in args.models.split(",") if k]:
            rows, train_s = bench_one(kind, ds, data, np.random.default_rng(args.seed))
            lat = {r[0]: r[1] for r in rows}
            for nm, t, diff, acc, agree in rows:
                vs_s = "%8.2fx" % (lat["scorch"] / t) if "scorch" in lat else "%9s" % "-"
                print("%-9s %-5s %-13s %8.3f ms %8.2fx %s %10.2e %9s" % (
                    ds, kind, nm, t * 1e3, lat["pytorch"] / t, vs_s, diff,
                    "%.3f" % acc if acc is not None else "n/a"), flush=True)
                ok &= diff < 1e-3 and agree > 0.99
            log("  %s/%s: weights %s" % (ds, kind, "trained by PyTorch in %.1f s" % train_s if train_s
                                          else "Glorot-initialised (no labels)" if data[2] is None
                                          else "trained earlier (%s_weights.pt)" % kind))
    if args.ae:
        print("# pruned autoencoder (Cora features, %s, batch %d): 'vs torch' is against PyTorch's faster form "
              "(dense F.linear or torch.sparse.mm with CSR)" % ("-".join(map(str, [1433] + AE_DIMS + [AE_DIMS[0], 1433])),
                                                              args.ae_batch))
        ok &= bench_ae(load_dataset("cora", np.random.default_rng(args.seed))[1], [float(v) for v in args.ae.split(",")])
    if args.longformer:
        print("# Longformer-style layer (d 256, 8 heads x 32, window 64 each side + 1 global token, Q/K/V/O "
              "projections, residuals, 2 layernorms, FFN 256-1024-256 ReLU; random weights): medians of %d "
              "interleaved runs; 'vs torch' against PyTorch's faster form (dense masked softmax, or sampled_addmm "
              "+ sparse softmax + sparse.mm); loom tuned: %d trials per length in rounds of %d, --remeasure %d" %
              (args.lf_reps, args.lf_trials, args.lf_batch, args.lf_remeasure))
        ok &= bench_longformer([int(v) for v in args.longformer.split(",")])
    print("# wall time %.0f s" % (time.perf_counter() - t_start))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
