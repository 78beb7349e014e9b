"""A campaign directory's records (search/database/database.h), read by libloom.so."""
import json
import math
import os
import warnings

from ._lib import call_json, library


class LoomDatabaseWarning(UserWarning):
    """A line of a campaign's records.jsonl that was skipped (torn,
    malformed) or repaired (invalid UTF-8): the message names file and line."""


class Database:
    """The records of campaign directory `dir` (DIR/records.jsonl), read
    read-only through the C library (a running campaign may go on appending;
    call reload() to see new records).

    records: list of dicts in file order (line, workload, workload_name, data,
      target, schedule, status, latency_s (None when failed), flops,
      compile_s, message, time, core_line_ns (a cache line's round trip
      between two cores when measured, ns: the machine's state; None when
      not recorded), remeasure (None or {samples, default, load, cores}),
      trace);
    skipped: lines that were not valid records (torn, malformed);
    repaired: records kept after their invalid UTF-8 was replaced by U+FFFD;
    warnings: the loader's warnings (one string each, naming file and line),
      each also issued with warnings.warn (category LoomDatabaseWarning)."""

    def __init__(self, dir):
        self.dir = os.fspath(dir)
        self.reload()

    def reload(self):
        doc = json.loads(call_json(library().loom_api_db_records, self.dir.encode()))
        self.records = doc["records"]
        self.skipped = doc["skipped"]
        self.repaired = doc.get("repaired", 0)
        self.warnings = doc.get("warnings", [])
        for w in self.warnings:
            warnings.warn(w, LoomDatabaseWarning, stacklevel=2)
        return self

    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def groups(self):
        """{(workload_name, target): [records]} in file order."""
        g = {}
        for r in self.records:
            g.setdefault((r["workload_name"], r["target"]), []).append(r)
        return g

    def best(self, workload=None, target=None):
        """The best successful record per (workload, target) as {(workload_name,
        target): record}: the winner (lowest median) of the last
        re-measurement when there is one, else the fastest trial (the rule of
        `loom replay`).  With workload and/or target (a name, a target
        fingerprint), only those groups; with both, the record itself (None
        when there is none)."""
        out = {}
        for key, recs in self.groups().items():
            if (workload and key[0] != workload) or (target and key[1] != target):
                continue
            re = [r for r in recs if r["remeasure"]]
            pick = None
            if re:
                last = max(re, key=lambda r: r["line"])
                same = [r for r in re if r["status"] == "ok" and r["time"] == last["time"]]
                if same:
                    pick = min(same, key=lambda r: r["latency_s"])
            if pick is None:
                ok = [r for r in recs if r["status"] == "ok" and not r["remeasure"]
                      and r["latency_s"] is not None and math.isfinite(r["latency_s"])]
                pick = min(ok, key=lambda r: r["latency_s"]) if ok else None
            if pick is not None:
                out[key] = pick
        if workload and target:
            return out.get((workload, target))
        return out
