"""Tuning campaigns and shipping their best schedule, over libloom.so
(ship/api.h: loom_api_tune, loom_api_emit_lib)."""
import json
import os
import tempfile

from ._lib import call_json, library


def _inputs(data, params):
    """data {tensor: path or scipy.sparse matrix}, params {size: int} as the
    C API's NAME=VALUE lines; matrices are written to temporary Matrix Market
    files (returned so the caller removes them)."""
    lines, tmp = [], []
    for k, v in (data or {}).items():
        if not isinstance(v, (str, os.PathLike)):
            import scipy.io
            f = tempfile.NamedTemporaryFile(suffix=".mtx", delete=False)
            f.close()
            scipy.io.mmwrite(f.name, v)
            tmp.append(f.name)
            v = f.name
        lines.append("%s=%s" % (k, os.fspath(v)))
    plines = ["%s=%d" % (k, int(v)) for k, v in (params or {}).items()]
    return "\n".join(lines).encode(), "\n".join(plines).encode(), tmp


def tune(workload, data=None, params=None, trials=64, db="loom-db", target="cpu", seed=1, batch=64,
         remeasure=None):
    """Run a tuning campaign (as `loom tune`): the workload file's design space
    on its data (data: {tensor: FILE.mtx or a scipy.sparse matrix}, params:
    {size: int}), `trials` records in campaign directory `db` (resumes when it
    holds records), on `target` ("cpu", or the simulator: "sim", "sim:NAME").
    Returns a dict: workload, target, trials, measured, best_latency_s,
    default_latency_s, naive_latency_s, best_gflops, best_trace.  Raises
    LoomError with the library's message."""
    d, p, tmp = _inputs(data, params)
    try:
        text = call_json(library().loom_api_tune, os.fspath(workload).encode(), d, p, target.encode(), int(trials),
                         os.fspath(db).encode(), int(seed), int(batch), -1 if remeasure is None else int(remeasure))
    finally:
        for f in tmp:
            os.unlink(f)
    return json.loads(text)


def emit_lib(workload, data=None, params=None, db="loom-db", name="kernel", dir=".", target="cpu", any_data=False):
    """Replay the best record of campaign `db` (as `loom replay --emit-lib`)
    and ship it as dir/NAME.c, dir/NAME.h and dir/libNAME.so.  Returns a dict:
    library, header, source, line, latency_s, signature; pass it (or its
    "library") to loom.load_kernel.  Raises LoomError."""
    d, p, tmp = _inputs(data, params)
    try:
        text = call_json(library().loom_api_emit_lib, os.fspath(workload).encode(), d, p, os.fspath(db).encode(),
                         target.encode(), 1 if any_data else 0, name.encode(), os.fspath(dir).encode())
    finally:
        for f in tmp:
            os.unlink(f)
    return json.loads(text)
