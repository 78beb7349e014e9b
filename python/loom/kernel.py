"""Calling a shipped kernel library (libNAME.so from `loom replay --emit-lib`)
on SciPy / NumPy / PyTorch data, through its typed entry point."""
import ctypes
import json
import os

import numpy as np

# return codes of a shipped kernel (ship/ship.h)
_CODES = {1: (MemoryError, "out of memory (a temporary could not be allocated)"),
          2: (ValueError, "a size differs from the sizes the kernel was tuned for"),
          3: (ValueError, "a required array is NULL")}


def _aligned_zeros(dims):
    """Zeros of float32 and shape dims whose data starts on 64 bytes (a cache
    line), as loom's own datasets (runtime/data/dataset.h LOOM_DATA_ALIGN):
    numpy's large arrays start 16 bytes past a page, and a 512-bit load of
    such a row splits two lines.  A view of a slightly larger array."""
    n = 1
    for d in dims:
        n *= int(d)
    buf = np.zeros(n + 16, dtype=np.float32)
    off = (-buf.ctypes.data % 64) // 4
    return buf[off:off + n].reshape(dims)


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def _is_torch(x):
    t = _torch()
    return t is not None and isinstance(x, t.Tensor)


def _is_scipy_sparse(x):
    try:
        import scipy.sparse as sp
    except ImportError:
        return False
    return sp.issparse(x)


def _kind(x):
    if _is_scipy_sparse(x):
        return "scipy.sparse %s matrix" % x.format
    if _is_torch(x):
        return "torch tensor (layout %s)" % str(x.layout).replace("torch.", "")
    return type(x).__module__ + "." + type(x).__name__


def _no_grad(what, name, x):
    """Refuse a torch tensor that requires grad (what: "tensor" or "out= for";
    name: the tensor's): a loom kernel computes no gradient, so its result
    would silently drop out of the autograd graph.  Refused rather than
    detached so that a training loop cannot lose a step unnoticed."""
    if x.requires_grad:
        raise TypeError("%s %s requires grad: loom kernels compute no gradients, so autograd would silently "
                        "lose this step; pass %s.detach() (the result is then not part of the autograd graph)"
                        % (what, name, name))


def _index32(a, what):
    """a as a C-contiguous int32 numpy array (no copy when it already is)."""
    a = np.asarray(a)
    if a.dtype != np.int32:
        if a.size and (a.max() > np.iinfo(np.int32).max or a.min() < 0):
            raise ValueError("%s: indices do not fit in int32" % what)
        a = a.astype(np.int32)  # a copy: loom's positions and coordinates are int32
    return np.ascontiguousarray(a)


class Kernel:
    """A shipped kernel: call it with the workload's inputs (positionally in
    declaration order, or by tensor name); it returns the output (a tuple when
    there are several).  Attributes: name, signature (the library's JSON),
    inputs, outputs (tensor names), sizes ({name: value}: fixed).  A torch
    tensor that requires grad is refused with TypeError (the kernel has no
    backward; pass .detach() to use it outside autograd)."""

    def __init__(self, path, name=None):
        path = os.path.abspath(os.fspath(path))
        if name is None:
            base = os.path.basename(path)
            if not (base.startswith("lib") and base.endswith(".so")):
                raise ValueError("cannot tell the kernel's name from %r (expected libNAME.so); pass name=" % base)
            name = base[3:-3]
        self.path = path
        self.name = name
        self._lib = ctypes.CDLL(path)
        try:
            sig = ctypes.c_char.in_dll(self._lib, name + "_signature")
        except ValueError:
            raise ValueError("%s has no %s_signature: not a kernel library shipped by loom "
                             "(loom replay --emit-lib %s)" % (path, name, name)) from None
        self.signature = json.loads(ctypes.string_at(ctypes.addressof(sig)).decode())
        self._tensors = self.signature["tensors"]
        self.sizes = {s["name"]: s["value"] for s in self.signature.get("sizes", [])}  # a model's: none
        self.inputs = [t["name"] for t in self._tensors if t["role"] == "input" and t["args"]]
        self.outputs = [t["name"] for t in self._tensors if t["role"] == "output"]
        nargs = sum(len(t["args"]) for t in self._tensors)
        self._fn = getattr(self._lib, name)
        self._fn.argtypes = [ctypes.c_int64] * len(self.sizes) + [ctypes.c_void_p] * nargs
        self._fn.restype = ctypes.c_int

    def __repr__(self):
        return "<loom kernel %s(%s) -> %s, sizes %s>" % (self.name, ", ".join(self.inputs),
                                                         ", ".join(self.outputs), self.sizes)

    # ---- inputs ---------------------------------------------------------

    def _dense(self, t, x):
        name, dims = t["name"], tuple(t["dims"])
        if _is_scipy_sparse(x) or (_is_torch(x) and x.layout != _torch().strided):
            raise TypeError("tensor %s is dense %s: got a %s; pass a dense array (e.g. .toarray() / "
                            ".to_dense())" % (name, "x".join(map(str, dims)), _kind(x)))
        if _is_torch(x):
            if x.device.type != "cpu":
                raise TypeError("tensor %s: a %s tensor; loom kernels run on the CPU (.cpu())" % (name, x.device))
            _no_grad("tensor", name, x)
            x = x.numpy()  # shares memory
        if not isinstance(x, np.ndarray):
            raise TypeError("tensor %s: expected a numpy array or a torch tensor, got %s" % (name, _kind(x)))
        if x.dtype != np.float32:
            raise TypeError("tensor %s: expected float32, got %s (convert with .astype(numpy.float32) or "
                            ".float())" % (name, x.dtype))
        if tuple(x.shape) != dims:
            raise ValueError("tensor %s: expected shape %s (the sizes the kernel was tuned for), got %s"
                             % (name, dims, tuple(x.shape)))
        x = np.ascontiguousarray(x)  # no copy when row-major already
        return [x], x

    def _sparse(self, t, x):
        name, dims, fmt = t["name"], tuple(t["dims"]), t["format"]
        if fmt not in ("csr", "csc") or t["levels"] != ["dense", "compressed"]:
            raise NotImplementedError("tensor %s is %s: the Python package passes csr and csc tensors; call "
                                      "the C entry %s for others" % (name, fmt, self.name))
        torch = _torch()
        if _is_scipy_sparse(x):
            if x.format != fmt:
                raise TypeError("tensor %s is %s: got a %s (convert with .to%s())" % (name, fmt, _kind(x), fmt))
            if x.dtype != np.float32:
                raise TypeError("tensor %s: expected float32 values, got %s (convert with "
                                ".astype(numpy.float32))" % (name, x.dtype))
            if tuple(x.shape) != dims:
                raise ValueError("tensor %s: expected shape %s (the sizes the kernel was tuned for), got %s"
                                 % (name, dims, tuple(x.shape)))
            if not x.has_canonical_format:
                raise ValueError("tensor %s: indices must be sorted without duplicates (call "
                                 ".sum_duplicates())" % name)
            pos, crd, vals = x.indptr, x.indices, x.data
        elif _is_torch(x) and x.layout in (torch.sparse_csr, torch.sparse_csc):
            want = torch.sparse_csr if fmt == "csr" else torch.sparse_csc
            if x.layout != want:
                raise TypeError("tensor %s is %s: got a %s" % (name, fmt, _kind(x)))
            if x.dtype != torch.float32:
                raise TypeError("tensor %s: expected float32 values, got %s (.float())" % (name, x.dtype))
            _no_grad("tensor", name, x)
            if tuple(x.shape) != dims:
                raise ValueError("tensor %s: expected shape %s (the sizes the kernel was tuned for), got %s"
                                 % (name, dims, tuple(x.shape)))
            if fmt == "csr":
                pos, crd = x.crow_indices(), x.col_indices()
            else:
                pos, crd = x.ccol_indices(), x.row_indices()
            pos, crd, vals = pos.numpy(), crd.numpy(), x.values().numpy()
        else:
            raise TypeError("tensor %s is %s %s: expected a scipy.sparse %s matrix or a torch sparse %s tensor, "
                            "got %s" % (name, fmt, "x".join(map(str, dims)), fmt, fmt.upper(), _kind(x)))
        pos = _index32(pos, "tensor %s" % name)
        crd = _index32(crd, "tensor %s" % name)
        vals = np.ascontiguousarray(vals)
        if pos.shape != (dims[t["modes"][0]] + 1,) or crd.shape[0] < pos[-1] or vals.shape[0] < pos[-1]:
            raise ValueError("tensor %s: inconsistent %s arrays" % (name, fmt))
        return [pos, crd, vals], (pos, crd, vals)

    # ---- the call -------------------------------------------------------

    def __call__(self, *args, out=None, **named):
        sizes, arrays, held, results, use_torch = self._prepare(args, out, named)
        self._run(sizes, arrays)
        ret = []
        for name in self.outputs:
            r = results[name]
            ret.append(self._wrap(r, held, use_torch))
        return ret[0] if len(ret) == 1 else tuple(ret)

    def bind(self, *args, out=None, **named):
        """Check and convert the inputs once; returns (run, result): run() calls
        the C entry again on the same arrays (no conversion: for timing loops),
        result() wraps the outputs as a call would return them."""
        sizes, arrays, held, results, use_torch = self._prepare(args, out, named)
        ptrs = sizes + [a.ctypes.data for a in arrays]

        def run():
            rc = self._fn(*ptrs)
            if rc:
                self._raise(rc)

        def result():
            ret = [self._wrap(results[name], held, use_torch) for name in self.outputs]
            return ret[0] if len(ret) == 1 else tuple(ret)
        run._keep = arrays  # the arrays live as long as run
        return run, result

    def _raise(self, rc):
        exc, msg = _CODES.get(rc, (RuntimeError, "failed"))
        raise exc("%s returned %d: %s" % (self.name, rc, msg))

    def _run(self, sizes, arrays):
        rc = self._fn(*sizes, *[a.ctypes.data for a in arrays])
        if rc:
            self._raise(rc)

    def _prepare(self, args, out, named):
        if len(args) > len(self.inputs):
            raise TypeError("%s takes %d inputs (%s), got %d" % (self.name, len(self.inputs),
                                                                  ", ".join(self.inputs), len(args)))
        given = dict(zip(self.inputs, args))
        for k, v in named.items():
            if k not in self.inputs:
                raise TypeError("%s has no input %r (inputs: %s)" % (self.name, k, ", ".join(self.inputs)))
            if k in given:
                raise TypeError("input %s given twice" % k)
            given[k] = v
        missing = [n for n in self.inputs if n not in given]
        if missing:
            raise TypeError("%s: missing input%s %s" % (self.name, "s" if len(missing) > 1 else "",
                                                       ", ".join(missing)))
        use_torch = any(_is_torch(v) for v in given.values())
        outs = out if isinstance(out, dict) else ({self.outputs[0]: out} if out is not None else {})
        arrays, held, results = [], {}, {}
        for t in self._tensors:
            if not t["args"]:
                continue
            if t["role"] == "input":
                x = given[t["name"]]
                conv = self._dense if t["format"] == "dense" else self._sparse
                arrs, held[t["name"]] = conv(t, x)
            elif t["format"] == "dense":
                arrs = [self._output(t, outs.get(t["name"]), t["dims"])]
                results[t["name"]] = arrs[0]
            elif not t["caller_pattern"]:
                src = self._tensors[t["pattern_of"]]["name"]
                nnz = int(held[src][0][-1]) if src in held else None
                if nnz is None:
                    raise NotImplementedError("output %s shares the pattern of %s, which is not an input"
                                              % (t["name"], src))
                arrs = [self._output(t, outs.get(t["name"]), [nnz])]
                results[t["name"]] = (arrs[0], src)
            else:
                raise NotImplementedError("output %s has a pattern assembled from the operands; call the C "
                                          "entry %s with that pattern" % (t["name"], self.name))
            arrays.extend(arrs)
        sizes = [self.sizes[s["name"]] for s in self.signature.get("sizes", [])]
        return sizes, arrays, held, results, use_torch

    def _output(self, t, given, dims):
        dims = tuple(dims)
        if given is None:
            return _aligned_zeros(dims)
        if _is_torch(given):
            _no_grad("out= for", t["name"], given)
            given = given.numpy()
        if not isinstance(given, np.ndarray) or given.dtype != np.float32 or tuple(given.shape) != dims \
                or not given.flags.c_contiguous or not given.flags.writeable:
            raise ValueError("out for %s: expected a writable C-contiguous float32 array of shape %s"
                             % (t["name"], dims))
        return given

    def _wrap(self, r, held, use_torch):
        if isinstance(r, tuple):  # sparse output on an input's pattern
            vals, src = r
            pos, crd, _ = held[src]
            t = next(x for x in self._tensors if x["name"] == src)
            shape = tuple(next(x for x in self._tensors if x["name"] == src)["dims"])
            if use_torch:
                torch = _torch()
                make = torch.sparse_csr_tensor if t["format"] == "csr" else torch.sparse_csc_tensor
                return make(torch.from_numpy(pos), torch.from_numpy(crd), torch.from_numpy(vals), size=shape)
            import scipy.sparse as sp
            make = sp.csr_matrix if t["format"] == "csr" else sp.csc_matrix
            return make((vals, crd, pos), shape=shape)
        if use_torch:
            return _torch().from_numpy(r)
        return r


def load_kernel(path, name=None):
    """Load a kernel library shipped by loom (libNAME.so; `name` defaults to
    NAME from the file name, or a dict as loom.emit_lib returns).  Returns a
    Kernel.  Raises OSError (cannot load), ValueError (not a loom kernel)."""
    if isinstance(path, dict):
        path = path["library"]
    return Kernel(path, name)
