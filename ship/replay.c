/* The best record of a campaign, replayed (replay.h); moved here from
 * cli/cmd_tune.c so that the Python package can ship kernels too. */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/target/target.h"
#include "../search/database/database.h"
#include "../search/navigate/navigate.h"
#include "../search/tune/tune.h"
#include "../traces/validate.h"

loom_status loom_ship_target_fp(const char *target, char *tfp, size_t n, loom_error *err)
{
    loom_target tg;
    loom_status st = loom_target_open(target, NULL, NULL, &tg, err);
    if (!st)
        snprintf(tfp, n, "%s", tg.fingerprint);
    return st;
}

/* 1 when record r may be shipped: ok, of data dfp (unless NULL), and --
 * when the campaign is pinned (*pins non-empty) -- its trace carries every
 * pin (a pinned campaign re-measures the unpinned default for comparison
 * only). */
static int eligible(const loom_record *r, const char *dfp, const loom_pins *pins)
{
    if (r->status != LOOM_OK || (dfp && strcmp(r->data_fp, dfp)))
        return 0;
    if (!pins->n)
        return 1;
    loom_trace *t = NULL;
    loom_error e;
    int ok = !loom_trace_from_json(r->trace_json, NULL, &t, &e) && loom_pins_hold(pins, t);
    loom_trace_free(t);
    return ok;
}

/* The record to take from recs[0..n) (best first): the winner of the
 * last re-measurement (the record marked "winner", the choice `loom tune`
 * reported; in older records the lowest median among the eligible: the
 * default is among them, so what ships is never slower than the default as
 * re-measured), else the fastest
 * eligible trial record; only records of data dfp unless it is NULL.  The
 * campaign's pins are those of its last record (database.h "pins"); *pins
 * receives them.  NULL when there is none. */
static const loom_record *pick_best(const loom_record **recs, int n, const char *dfp, loom_pins *pins)
{
    const loom_record *last_re = NULL, *last = NULL;
    memset(pins, 0, sizeof *pins);
    for (int i = 0; i < n; i++) {
        if (dfp && strcmp(recs[i]->data_fp, dfp))
            continue;
        if (recs[i]->nsamples && (!last_re || recs[i]->line > last_re->line))
            last_re = recs[i];
        if (!last || recs[i]->line > last->line)
            last = recs[i];
    }
    loom_error e;
    if (last && last->pins_json && loom_pins_from_json(last->pins_json, pins, &e))
        memset(pins, 0, sizeof *pins);
    for (int pass = 0; pass < 2 && last_re; pass++) /* its marked winner, else (older records) the lowest median */
        for (int i = 0; i < n; i++)
            if (recs[i]->nsamples && recs[i]->time == last_re->time && !strcmp(recs[i]->data_fp, last_re->data_fp) &&
                (pass || recs[i]->is_winner) && eligible(recs[i], NULL, pins))
                return recs[i];
    for (int i = 0; i < n; i++)
        if (!recs[i]->nsamples && eligible(recs[i], dfp, pins))
            return recs[i];
    return NULL;
}

loom_status loom_ship_best(const char *dbdir, const loom_program *prog, const loom_dataset *ds, const char *target,
                           int any_data, loom_schedule *sch, loom_trace **trace, loom_ship_best_info *info,
                           loom_error *err)
{
    memset(info, 0, sizeof *info);
    if (trace)
        *trace = NULL;
    if (access(dbdir, F_OK) != 0)
        return loom_error_set(err, LOOM_ERR_IO, dbdir, 0, 0, "no such campaign directory");
    loom_target tg; /* the target handle: its fingerprint finds the records, its limits validate them */
    loom_status st = loom_target_open(target ? target : "cpu", NULL, NULL, &tg, err);
    if (st)
        return st;
    snprintf(info->target_fp, sizeof info->target_fp, "%s", tg.fingerprint);
    info->limits = tg.limits;
    loom_db *db = NULL;
    const loom_record **recs = NULL;
    loom_trace *t = NULL;
    if ((st = loom_db_open_readonly(dbdir, stderr, &db, err))) /* no lock: replay while a campaign runs */
        return st;
    int n = loom_db_query(db, loom_program_hash(prog), info->target_fp, &recs);
    char dfp[17];
    snprintf(dfp, sizeof dfp, "%016llx", (unsigned long long)loom_data_fingerprint(ds));
    loom_pins pins;
    const loom_record *best = pick_best(recs, n, any_data ? NULL : dfp, &pins);
    info->pinned = pins.n;
    if (!best) {
        st = loom_error_set(err, LOOM_ERR_WRONG, dbdir, 0, 0,
                            "no successful record of %s on this data and target (%s)%s", prog->path, info->target_fp,
                            any_data ? "" : "; --any-data takes one measured on other data");
        goto out;
    }
    info->line = best->line;
    info->latency_s = best->latency_s;
    info->remeasured = best->nsamples > 0;
    if ((st = loom_trace_from_json(best->trace_json, dbdir, &t, err))) {
        st = LOOM_ERR_WRONG;
        goto out;
    }
    if ((st = loom_schedule_init(sch, prog, NULL, err)))
        goto out;
    if (loom_trace_replay(t, sch, NULL, err)) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        st = loom_error_set(err, LOOM_ERR_WRONG, dbdir, best->line, 0, "the best record (line %d) does not replay: %.900s",
                            best->line, why);
        goto out;
    }
    loom_violation v;
    if (loom_validate(sch, &info->limits, &v, NULL)) {
        st = loom_error_set(err, LOOM_ERR_WRONG, dbdir, best->line, 0, "the best record (line %d) is invalid: %s: %.800s",
                            best->line, v.rule, v.msg);
        goto out;
    }
    if (trace) {
        *trace = t;
        t = NULL;
    }
out:
    loom_trace_free(t);
    free(recs);
    loom_db_close(db);
    return st;
}
