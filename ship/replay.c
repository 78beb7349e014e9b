/* The best record of a campaign, replayed (replay.h); moved here from
 * cli/cmd_tune.c so that the Python package can ship kernels too. */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/target.h"
#include "../search/database.h"
#include "../search/tune.h"
#include "../traces/validate.h"

loom_status loom_ship_target_fp(const char *target, char *tfp, size_t n, loom_error *err)
{
    if (!strcmp(target, "cpu")) {
        loom_run_opts ro = loom_run_defaults();
        loom_cpu_target_fingerprint(&ro, tfp, n);
        return LOOM_OK;
    }
    if (!strncmp(target, "cpu:", 4) || (!strncmp(target, "sim:", 4) && strchr(target + 4, ':'))) {
        snprintf(tfp, n, "%s", target); /* a fingerprint, as `loom db` shows it */
        return LOOM_OK;
    }
    /* a simulator target, named as `loom tune --target` names it */
    size_t tl = strlen(target);
    const char *name = !strcmp(target, "sim") ? "host" : !strncmp(target, "sim:", 4) ? target + 4
                       : tl > 5 && !strcmp(target + tl - 5, ".json") ? target : NULL;
    if (!name)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "unknown target '%s' (cpu, sim, sim:NAME, FILE.json or a fingerprint)", target);
    loom_target tg;
    loom_status st = loom_target_load(name, &tg, err);
    if (st)
        return st;
    loom_target_fingerprint(&tg, tfp, n);
    return LOOM_OK;
}

/* The record to take from recs[0..n) (best first): the winner of the
 * last re-measurement (lowest median), else the fastest ok trial record;
 * only records of data dfp unless it is NULL.  NULL when there is none. */
static const loom_record *pick_best(const loom_record **recs, int n, const char *dfp)
{
    const loom_record *last_re = NULL;
    for (int i = 0; i < n; i++)
        if (recs[i]->nsamples && (!dfp || !strcmp(recs[i]->data_fp, dfp)) &&
            (!last_re || recs[i]->line > last_re->line))
            last_re = recs[i];
    for (int i = 0; i < n && last_re; i++)
        if (recs[i]->status == LOOM_OK && recs[i]->nsamples && recs[i]->time == last_re->time &&
            !strcmp(recs[i]->data_fp, last_re->data_fp))
            return recs[i];
    for (int i = 0; i < n; i++)
        if (recs[i]->status == LOOM_OK && (!dfp || !strcmp(recs[i]->data_fp, dfp)))
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
    loom_status st = loom_ship_target_fp(target ? target : "cpu", info->target_fp, sizeof info->target_fp, err);
    if (st)
        return st;
    loom_db *db = NULL;
    const loom_record **recs = NULL;
    loom_trace *t = NULL;
    if ((st = loom_db_open_readonly(dbdir, stderr, &db, err))) /* no lock: replay while a campaign runs */
        return st;
    int n = loom_db_query(db, loom_program_hash(prog), info->target_fp, &recs);
    char dfp[17];
    snprintf(dfp, sizeof dfp, "%016llx", (unsigned long long)loom_data_fingerprint(ds));
    const loom_record *best = pick_best(recs, n, any_data ? NULL : dfp);
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
    loom_limits lim = loom_limits_host();
    loom_violation v;
    if (loom_validate(sch, &lim, &v, NULL)) {
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
