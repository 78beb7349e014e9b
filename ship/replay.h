/* loom: the best record of a campaign, replayed into a fixed schedule
 * (`loom replay`, the Python package's emit_lib; DESIGN.md "Database").
 */
#ifndef LOOM_SHIP_REPLAY_H
#define LOOM_SHIP_REPLAY_H

#include "../dsl/ir/error.h"
#include "../dsl/ir/limits.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/data/dataset.h"
#include "../traces/trace.h"

/* What loom_ship_best took. */
typedef struct loom_ship_best_info {
    int line;            /* its line in DIR/records.jsonl */
    double latency_s;    /* its latency (the re-measured median when remeasured) */
    int remeasured;      /* 1: the winner of the campaign's last re-measurement */
    char target_fp[128]; /* the target fingerprint the records were looked up by */
    int pinned;          /* pins of the campaign (its last record's, database.h "pins"); 0: unpinned */
    loom_limits limits;  /* the target's limits (runtime/target/target.h loom_target_open): the record
                            was validated with them; lower with them too (loom_lower_for) */
} loom_ship_best_info;

/* The target fingerprint of `target` as `loom tune --target` takes it
 * ("cpu", "sim", "sim:NAME", "sim:FILE.json", "FILE.json") or as `loom db`
 * prints it (a fingerprint, "cpu:<16 hex>" or "sim:NAME:<16 hex>", kept as
 * given), into buf: runtime/target/target.h loom_target_open's.
 * Errors: LOOM_ERR_INVALID (an unknown form), loom_target_load's (a
 * simulated fingerprint's NAME must still load: its limits are needed). */
loom_status loom_ship_target_fp(const char *target, char *buf, size_t n, loom_error *err);

/* Open the campaign directory dbdir read-only (a running campaign may
 * append meanwhile), take the best successful record of prog's workload on
 * `target` and (unless any_data) ds's data -- the winner of the last
 * re-measurement by median when there is one (the default schedule is
 * among its candidates, so what ships is never slower than the default as
 * re-measured: the choice `loom tune` reports), else the fastest trial;
 * when the campaign was pinned (`loom tune --pin`: its last record carries
 * "pins", search/database/database.h), only a record whose trace carries every pin --,
 * replay its trace on a fresh schedule *sch of the bound prog and validate
 * it with the target's limits (loom_target_open(target): the CPU's, or the
 * simulated model's; info->limits).  *trace (may be NULL) receives the trace (the
 * caller frees it with loom_trace_free).  Errors: LOOM_ERR_IO (no such
 * directory, unreadable database), LOOM_ERR_INVALID (bad target),
 * LOOM_ERR_WRONG (no successful record, or the record no longer replays or
 * validates: the message says which). */
loom_status loom_ship_best(const char *dbdir, const loom_program *prog, const loom_dataset *ds, const char *target,
                           int any_data, loom_schedule *sch, loom_trace **trace, loom_ship_best_info *info,
                           loom_error *err);

#endif
