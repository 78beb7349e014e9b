/* search/: the tuner's lowest file -- the campaign log, measuring one
 * schedule (CPU or simulator), the default schedule as a candidate; tune.c
 * (the campaign) and tune_remeasure.c (the final re-measurement) both call
 * these, and neither calls the other's internals back (no call cycle). */
#include "tune.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../costmodel/features.h"
#include "../costmodel/model.h"
#include "../modules/module.h"
#include "../runtime/measure/batch.h"
#include "../runtime/measure/build.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target.h"
#include "../traces/validate.h"
#include "database.h"
#include "tune_internal.h"

void loom__tune_log(tune_ctx *c, const char *fmt, ...)
{
    if (!c->log)
        return;
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(c->log, "%s ", ts);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->log, fmt, ap);
    va_end(ap);
    fputc('\n', c->log);
    fflush(c->log);
}

double loom__tune_measure_one(tune_ctx *c, const loom_schedule *sch, loom_status *status, char *msg,
                                   size_t nmsg)
{
    if (c->simulated) {
        lir_func *f = NULL;
        loom_error e;
        loom_error_clear(&e);
        loom_sim_result sr;
        memset(&sr, 0, sizeof sr);
        loom_status st = loom_lower(sch, &f, &e);
        if (!st)
            st = loom_sim_run(f, c->ds, &c->target, &sr, &e);
        if (f)
            loom_lir_func_free(f);
        *status = st;
        snprintf(msg, nmsg, "%s", st ? e.msg : "");
        return st ? INFINITY : sr.latency_s;
    }
    loom_run_result r;
    loom_error e;
    loom_error_clear(&e);
    c->batch = NULL;
    loom_status st = loom_run_batch_ex(&sch, 1, c->ds, c->ref, &c->o->run, NULL, &r, NULL, &e);
    if (st) {
        *status = st;
        snprintf(msg, nmsg, "%s", e.msg);
        return INFINITY;
    }
    *status = r.status;
    snprintf(msg, nmsg, "%s", r.message);
    return r.status == LOOM_OK ? r.latency_s : INFINITY;
}

/* Build the default into s (freshly initialised) and t: the space's
 * default (loom_space_default) when it applies and validates with the
 * space's limits, else loom_default_schedule_for; *in_space says which,
 * and why_not (n bytes) why not. */
static loom_status build_default(tune_ctx *c, loom_schedule *s, loom_trace *t, int *in_space, char *why_not,
                                 size_t n, loom_error *err)
{
    const loom_limits *lim = c->space ? loom_space_limits(c->space) : NULL;
    *in_space = 0;
    s->recorder = loom_trace_recorder;
    s->recorder_ctx = t;
    if (c->space) {
        loom_error e;
        loom_violation v;
        loom_error_clear(&e);
        if (loom_space_default(c->space, s, &e) == LOOM_OK && loom_trace_status(t, &e) == LOOM_OK) {
            if (loom_validate(s, lim, &v, NULL) == LOOM_OK) {
                *in_space = 1;
                s->recorder = NULL;
                s->recorder_ctx = NULL;
                return LOOM_OK;
            }
            snprintf(why_not, n, "it is invalid: %s", v.msg);
        } else {
            snprintf(why_not, n, "%s", e.msg);
        }
        loom_trace_clear(t);
        loom_status st = loom_schedule_init(s, c->prog, NULL, err);
        if (st)
            return st;
        s->recorder = loom_trace_recorder;
        s->recorder_ctx = t;
    }
    loom_status st = loom_default_schedule_for(s, lim, err); /* the target's limits */
    s->recorder = NULL;
    s->recorder_ctx = NULL;
    return st ? st : loom_trace_status(t, err);
}

/* The default schedule as a candidate (used by the baselines in tune.c and by
 * the re-measurement; here, below tune.c, so the two files do not call each
 * other). */
loom_status loom__tune_default(tune_ctx *c, loom_candidate *def, loom_error *err)
{
    memset(def, 0, sizeof *def);
    def->sch = malloc(sizeof *def->sch);
    def->trace = loom_trace_new();
    if (!def->sch || !def->trace) {
        loom_candidate_free(def);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    int in_space = 0;
    char why_not[sizeof err->msg] = "";
    loom_status st = loom_schedule_init(def->sch, c->prog, NULL, err);
    if (!st)
        st = build_default(c, def->sch, def->trace, &in_space, why_not, sizeof why_not, err);
    if (st) {
        loom_candidate_free(def);
        return st;
    }
    def->hash = loom_schedule_hash(def->sch);
    c->foreign_default = !in_space && c->space ? def->hash : 0;
    if (!in_space && c->space)
        loom__tune_log(c, "the default schedule is modules/default.c's, not the space's default (%s)", why_not);
    return LOOM_OK;
}
