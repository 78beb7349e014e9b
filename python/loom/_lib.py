"""Finding and loading libloom.so (the C library) through ctypes."""
import ctypes
import ctypes.util
import os

_here = os.path.dirname(os.path.abspath(__file__))
_lib = None


class LoomError(RuntimeError):
    """An error reported by the C library: `status` is its loom_status name,
    the message says what is wrong and what to do."""

    STATUS = ["OK", "PARSE", "SEMANTIC", "BIND", "DATA", "IO", "NOMEM", "UNSUPPORTED",
              "INVALID", "BUILD", "RUN", "TIMEOUT", "WRONG"]

    def __init__(self, status, message):
        self.code, self.detail = status, message  # as the library returned them
        self.status = self.STATUS[status] if 0 <= status < len(self.STATUS) else str(status)
        super().__init__("%s (loom status %s)" % (message, self.status))


def _candidates():
    env = os.environ.get("LOOM_LIBRARY")
    if env:
        yield env
    yield os.path.join(_here, "..", "..", "build", "libloom.so")  # a checkout (PYTHONPATH=python): its build
    yield os.path.join(_here, "libloom.so")                      # bundled by setup.py (pip install)
    found = ctypes.util.find_library("loom")
    if found:
        yield found


def library():
    """The loaded libloom.so (a ctypes.CDLL), loaded on first use from
    $LOOM_LIBRARY, the checkout's build/ (when the package is used from the
    checkout), the package's own copy (pip install), or the system's library
    path.  Raises OSError saying where it looked."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        c = ctypes
        lib.loom_api_version.restype = c.c_int
        lib.loom_api_tune.argtypes = [c.c_char_p, c.c_char_p, c.c_char_p, c.c_char_p, c.c_int, c.c_char_p,
                                      c.c_uint64, c.c_int, c.c_int, c.POINTER(c.c_void_p), c.c_char_p, c.c_size_t]
        lib.loom_api_emit_lib.argtypes = [c.c_char_p, c.c_char_p, c.c_char_p, c.c_char_p, c.c_char_p, c.c_int,
                                          c.c_char_p, c.c_char_p, c.POINTER(c.c_void_p), c.c_char_p, c.c_size_t]
        lib.loom_api_db_records.argtypes = [c.c_char_p, c.POINTER(c.c_void_p), c.c_char_p, c.c_size_t]
        lib.loom_api_free.argtypes = [c.c_void_p]
        _lib = lib
        return lib
    raise OSError("libloom.so not found (tried: %s); build it with `make` in the loom checkout, "
                  "install it (`make install`), or set LOOM_LIBRARY=/path/to/libloom.so" % "; ".join(tried))


def call_json(fn, *args):
    """Call a loom_api_* function whose last three arguments are (char **json,
    char *errbuf, size_t errn); return the JSON text or raise LoomError."""
    lib = library()
    out = ctypes.c_void_p()
    err = ctypes.create_string_buffer(2048)
    rc = fn(*args, ctypes.byref(out), err, len(err))
    if rc != 0:
        raise LoomError(rc, err.value.decode(errors="replace"))
    try:
        # the library writes UTF-8; errors="replace" keeps one bad byte (a
        # message from an older libloom) from making the whole answer unreadable
        return ctypes.string_at(out.value).decode(errors="replace")
    finally:
        lib.loom_api_free(out)
