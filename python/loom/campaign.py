"""Tuning campaigns and shipping their best schedule, over libloom.so
(ship/api.h: loom_api_tune, loom_api_emit_lib)."""
import json
import multiprocessing
import os
import tempfile

from ._lib import LoomError, call_json, library


def _tune_child(args, conn):
    """loom_api_tune(*args) in the spawned process; the result or the error
    goes back through conn."""
    try:
        conn.send(("ok", call_json(library().loom_api_tune, *args)))
    except LoomError as e:
        conn.send(("loom", e.code, e.detail))
    except BaseException as e:  # noqa: BLE001 -- reported to the caller
        conn.send(("error", "%s: %s" % (type(e).__name__, e)))
    finally:
        conn.close()


def _tune_in_fresh_process(args):
    """Run loom_api_tune in a freshly spawned Python process.  A campaign
    measures each kernel in a child it forks, and a child forked from a
    process that has run an OpenMP parallel region before (a shipped kernel
    called through load_kernel, say) hangs in GCC's libgomp, whose thread
    pool the child inherits without its threads: every kernel then timed
    out.  A spawned process has run no OpenMP code."""
    ctx = multiprocessing.get_context("spawn")
    r, w = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_tune_child, args=(args, w), daemon=True)
    p.start()
    w.close()
    try:
        try:
            res = r.recv()
        except EOFError:
            p.join()
            raise LoomError(10, "the tuning process ended without a result (exit code %s)" % p.exitcode)
        p.join()
    finally:
        if p.is_alive():
            p.terminate()
            p.join()
        r.close()
    if res[0] == "ok":
        return res[1]
    if res[0] == "loom":
        raise LoomError(res[1], res[2])
    raise LoomError(10, "the tuning process failed: %s" % res[1])


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
    LoomError with the library's message.  The campaign runs in a spawned
    Python process (see _tune_in_fresh_process: OpenMP code that ran in this
    one would make every measurement time out)."""
    d, p, tmp = _inputs(data, params)
    try:
        text = _tune_in_fresh_process((os.fspath(workload).encode(), d, p, target.encode(), int(trials),
                                       os.fspath(db).encode(), int(seed), int(batch),
                                       -1 if remeasure is None else int(remeasure)))
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
