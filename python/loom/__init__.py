"""loom from Python: tune sparse and attention tensor programs, ship the best
schedule as a kernel library, and call it on SciPy, NumPy and PyTorch data.

    import loom
    res = loom.tune("workloads/spmm.loom", data={"A": "data/cora_adj.mtx"},
                    params={"F": 64}, trials=64, db="runs/spmm")
    lib = loom.emit_lib("workloads/spmm.loom", data={"A": "data/cora_adj.mtx"},
                        params={"F": 64}, db="runs/spmm", name="spmm_cora", dir=".")
    spmm = loom.load_kernel(lib)          # or "./libspmm_cora.so"
    C = spmm(A_csr, B)                     # scipy.sparse CSR + numpy, or torch tensors
    loom.Database("runs/spmm").best()      # records as dicts
    gcn = loom.load_model("./libgcn.so")   # loom replay MODEL.model --emit-lib gcn
    logits = gcn(xw1_A=X, xw1_B=W1, agg1_A=A, hw2_B=W2, agg2_A=A)

Everything goes through the C library (libloom.so, ctypes) and the kernel
libraries `loom replay --emit-lib` writes; numpy is required, SciPy and
PyTorch are optional (docs/shipping.md).  Use Debian's /usr/bin/python3.
loom.tune runs the campaign in a new process, so a script may call it at
its top level (no `if __name__ == "__main__":` guard needed).
"""
from ._lib import LoomError, library
from .kernel import Kernel, load_kernel
from .model import Model, load_model
from .campaign import tune, emit_lib
from .database import Database, LoomDatabaseWarning

__all__ = ["LoomError", "library", "Kernel", "load_kernel", "Model", "load_model", "tune", "emit_lib", "Database", "LoomDatabaseWarning"]
__version__ = "0.1.0"
