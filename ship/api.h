/* loom: a flat C API for foreign callers (the Python package python/loom
 * calls these through ctypes): strings in, JSON out, no structs to mirror.
 *
 * Inputs are given as text: `data` is "NAME=FILE.mtx" lines (one tensor per
 * line, separated by '\n'; NULL or "" for none), `params` "NAME=INT" lines.
 * Every function returns a loom_status (0 on success) and on failure writes
 * the formatted error (file:line: message, dsl/ir/error.h) into errbuf[0..errn)
 * (when errbuf is not NULL).  JSON results are malloc'd: free them with
 * loom_api_free.
 */
#ifndef LOOM_SHIP_API_H
#define LOOM_SHIP_API_H

#include <stddef.h>
#include <stdint.h>

/* The version of this API (1). */
int loom_api_version(void);

/* Run a tuning campaign (search/tune/tune.h loom_tune) of the workload file on
 * its data, `trials` records in campaign directory `db` (created if
 * missing; a directory holding records of this workload resumes), target
 * "cpu" (NULL) or a simulator target ("sim", "sim:NAME"), seed, batch
 * (<= 0: 64) and re-measurement rounds (< 0: the default 5).  *json gets
 * {"workload", "target", "trials", "measured", "best_latency_s",
 * "default_latency_s", "naive_latency_s", "best_gflops", "best_trace"}
 * (latencies null when nothing succeeded).  Errors: those of loading the
 * workload and data (LOOM_ERR_PARSE, _BIND, _DATA, _IO) and of loom_tune;
 * LOOM_ERR_INVALID for a malformed data/params line or trials < 1. */
int loom_api_tune(const char *workload, const char *data, const char *params, const char *target, int trials,
                  const char *db, uint64_t seed, int batch, int remeasure, char **json, char *errbuf, size_t errn);

/* Replay the best record of db (ship/replay.h loom_ship_best; target as
 * loom_api_tune took it; any_data: whatever data it was measured on) and
 * ship it as dir/NAME.c, dir/NAME.h and dir/libNAME.so (ship/ship.h).
 * *json gets {"library": path of the .so, "header", "source", "line",
 * "latency_s", "signature": the kernel's signature object}.  Errors: those
 * of loading, of loom_ship_best and of loom_ship_write. */
int loom_api_emit_lib(const char *workload, const char *data, const char *params, const char *db, const char *target,
                      int any_data, const char *name, const char *dir, char **json, char *errbuf, size_t errn);

/* The records of campaign directory dir (read-only: a running campaign may
 * append meanwhile; lines that are not valid records are skipped, and
 * counted; a record with ill-formed UTF-8 is repaired, search/database/database.h)
 * as {"skipped": N, "repaired": R, "warnings": ["DIR/records.jsonl:LINE:
 * skipped: ...", ...] (the loader's warnings, one a line, as loom db prints
 * them), "records": [{"line", "workload" (hash),
 * "workload_name", "data", "target", "schedule", "status" ("ok" or the
 * failure), "latency_s" (null when failed), "flops", "compile_s", "message",
 * "time", "core_line_ns" (the machine's state when measured, ns; null: not
 * recorded), "remeasure": null or {"samples", "default", "load", "cores"},
 * "trace": the trace object}, ...]} in file order (search/database/database.h).
 * Errors: LOOM_ERR_IO (no such directory, unreadable), LOOM_ERR_NOMEM. */
int loom_api_db_records(const char *dir, char **json, char *errbuf, size_t errn);

/* Free a string these functions returned (NULL is ignored). */
void loom_api_free(void *p);

#endif
