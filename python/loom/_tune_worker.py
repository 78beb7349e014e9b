"""The process loom.tune starts for a campaign (campaign.py).

Run as `PYTHON _tune_worker.py RESULT_FILE` with LOOM_LIBRARY set to the
libloom.so the caller loaded and the campaign's arguments as one JSON object
on stdin.  It loads _lib.py by its path -- not the loom package, not numpy,
and nothing of the caller's script (multiprocessing's spawn re-ran the
caller's top level, so `loom.tune` outside `if __name__ == "__main__":`
failed) -- calls loom_api_tune and writes {"ok": result JSON text},
{"loom": [status, message]} or {"error": text} to RESULT_FILE.  The
campaign's progress goes to the inherited stderr."""
import importlib.util
import json
import os
import sys


def _load_lib_module():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib.py")
    spec = importlib.util.spec_from_file_location("_loom_lib", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv):
    out = argv[1]
    try:
        lib = _load_lib_module()
        a = json.load(sys.stdin)
        try:
            text = lib.call_json(lib.library().loom_api_tune, a["workload"].encode(), a["data"].encode(),
                                 a["params"].encode(), a["target"].encode(), int(a["trials"]), a["db"].encode(),
                                 int(a["seed"]), int(a["batch"]), int(a["remeasure"]))
            res = {"ok": text}
        except lib.LoomError as e:
            res = {"loom": [e.code, e.detail]}
    except BaseException as e:  # noqa: BLE001 -- reported to the caller
        res = {"error": "%s: %s" % (type(e).__name__, e)}
    with open(out, "w") as f:
        json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
