"""Tuning campaigns and shipping their best schedule, over libloom.so
(ship/api.h: loom_api_tune, in a new process run by _tune_worker.py;
loom_api_emit_lib)."""
import json
import os
import subprocess
import sys
import tempfile

from ._lib import LoomError, call_json, library


def _tune_in_fresh_process(args):
    """Run loom_api_tune(**args) in a fresh Python process and return its
    JSON text.  The process is `sys.executable _tune_worker.py` (a plain
    subprocess, not multiprocessing): it imports nothing of the caller, so
    `loom.tune` works at a script's top level without an `if __name__ ==
    "__main__":` guard (multiprocessing's spawn re-runs the caller's main
    module in the child, which then tried to start a campaign of its own).
    Why a fresh process at all: a campaign measures each kernel in a child
    it forks, and a child forked from a process that has run an OpenMP
    parallel region before (a shipped kernel called through load_kernel,
    say) hangs in GCC's libgomp, whose thread pool the child inherits
    without its threads: every kernel then timed out.  The new process has
    run no OpenMP code.  It loads the libloom.so this process found
    (LOOM_LIBRARY); its progress goes to this process's stderr."""
    if not sys.executable:
        raise LoomError(7, "loom.tune runs the campaign with this Python interpreter, and sys.executable is "
                           "empty (an embedded Python); run `loom tune` instead")
    env = dict(os.environ, LOOM_LIBRARY=library()._name)
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_tune_worker.py")
    fd, result = tempfile.mkstemp(prefix="loom-tune-", suffix=".json")
    os.close(fd)
    try:
        p = subprocess.Popen([sys.executable, worker, result], stdin=subprocess.PIPE, env=env)
        try:
            p.communicate(json.dumps(args).encode())
        finally:
            if p.poll() is None:  # interrupted (KeyboardInterrupt): the records so far are safe in db
                p.terminate()
                p.wait()
        with open(result) as f:
            text = f.read()
        if not text:
            raise LoomError(10, "the tuning process (%s %s) ended without a result (exit code %s)"
                            % (sys.executable, worker, p.returncode))
        res = json.loads(text)
    finally:
        os.unlink(result)
    if "ok" in res:
        return res["ok"]
    if "loom" in res:
        raise LoomError(res["loom"][0], res["loom"][1])
    raise LoomError(10, "the tuning process failed: %s" % res["error"])


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


def tune(workload, data=None, params=None, trials=64, db="loom-db", target="cpu", seed=1, batch=16,
         remeasure=None):
    """Run a tuning campaign (as `loom tune`): the workload file's design space
    on its data (data: {tensor: FILE.mtx or a scipy.sparse matrix}, params:
    {size: int}), `trials` records in campaign directory `db` (resumes when it
    holds records) in rounds of `batch` (16, as `loom tune`), on `target`
    ("cpu", or the simulator: "sim", "sim:NAME").
    Returns a dict: workload, target, trials, measured, best_latency_s,
    default_latency_s, naive_latency_s, best_gflops, best_trace.  Raises
    LoomError with the library's message.

    The campaign runs in a new Python process (this interpreter running
    loom/_tune_worker.py, which imports nothing of the caller's script), so
    a script may call loom.tune at its top level, with or without an
    `if __name__ == "__main__":` guard; this call waits for it, its progress
    goes to stderr, and interrupting this call (Ctrl-C) ends the campaign
    with its records kept in `db` (the same call resumes).  A new process
    because a campaign forks a child per measurement, and a child forked
    from a process that has run OpenMP code (a kernel called through
    load_kernel) hangs: see _tune_in_fresh_process."""
    d, p, tmp = _inputs(data, params)
    try:
        text = _tune_in_fresh_process({"workload": os.fspath(workload), "data": d.decode(), "params": p.decode(),
                                       "target": target, "trials": int(trials), "db": os.fspath(db),
                                       "seed": int(seed), "batch": int(batch),
                                       "remeasure": -1 if remeasure is None else int(remeasure)})
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
