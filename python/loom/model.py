"""Calling a whole model shipped by loom (libNAME.so from `loom replay
MODEL.model --emit-lib NAME`, docs/models.md "Shipping a model"): one call
runs the forward pass with the tuned kernels."""
import ctypes

from .kernel import Kernel


class Model(Kernel):
    """A shipped model's forward pass.  Call it with the model's inputs --
    every input of every call that is not fed by an earlier call, named
    CALL_TENSOR (e.g. xw1_A, xw1_B, agg1_A for the GCN), positionally in that
    order or by name -- as a kernel takes them (SciPy CSR / NumPy, or torch
    tensors); it returns the model's output (a tuple when there are several,
    in the order of `outputs`).  Attributes: name, signature (the library's
    JSON), inputs, outputs, calls (each call's name, kernel, runs and
    whether it ships a tuned record), kernels ({kernel name: Kernel}: each
    task's own entry in the same library).  Intermediates never leave the
    library."""

    def __init__(self, path, name=None):
        super().__init__(path, name)
        if self.signature.get("kind") != "model":
            raise ValueError("%s is a kernel library, not a model (load it with loom.load_kernel)" % self.path)
        self.calls = self.signature["calls"]
        self.kernels = {k["name"]: _Bound(self._lib, k) for k in self.signature["kernels"]}

    def __repr__(self):
        return "<loom model %s: %s(%s) -> %s, %d calls>" % (self.signature["model"], self.name,
                                                            ", ".join(self.inputs), ", ".join(self.outputs),
                                                            len(self.calls))


class _Bound(Kernel):
    """One task's kernel inside a model library (same handle, own entry)."""

    def __init__(self, lib, sig):  # pylint: disable=super-init-not-called
        self.path, self.name, self._lib, self.signature = lib._name, sig["name"], lib, sig
        self._tensors = sig["tensors"]
        self.sizes = {s["name"]: s["value"] for s in sig["sizes"]}
        self.inputs = [t["name"] for t in self._tensors if t["role"] == "input" and t["args"]]
        self.outputs = [t["name"] for t in self._tensors if t["role"] == "output"]
        nargs = sum(len(t["args"]) for t in self._tensors)
        self._fn = getattr(lib, self.name)
        self._fn.argtypes = [ctypes.c_int64] * len(self.sizes) + [ctypes.c_void_p] * nargs
        self._fn.restype = ctypes.c_int


def load_model(path, name=None):
    """Load a model library shipped by loom (libNAME.so from `loom replay
    MODEL.model --emit-lib NAME`; `name` defaults to NAME from the file
    name).  Returns a Model.  Raises OSError (cannot load), ValueError (not a
    loom library, or a single kernel's: use load_kernel)."""
    if isinstance(path, dict):
        path = path["library"]
    return Model(path, name)


