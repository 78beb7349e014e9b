/* search/: the tuner's lowest file -- the campaign log, measuring one
 * schedule (the campaign's runner: CPU or simulator), the default schedule as a candidate; tune.c
 * (the campaign) and tune_remeasure.c (the final re-measurement) both call
 * these, and neither calls the other's internals back (no call cycle). */
#include "tune.h"
#include <dlfcn.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../../costmodel/features.h"
#include "../../costmodel/model.h"
#include "../../modules/module.h"
#include "../../runtime/runner/runner.h"
#include "../../runtime/target/target.h"
#include "../../traces/validate.h"
#include "../database/database.h"
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

double loom__tune_median(const double *v, int n)
{
    double w[LOOM_TUNE_MAX_ROUNDS];
    if (n <= 0)
        return 0;
    n = n < LOOM_TUNE_MAX_ROUNDS ? n : LOOM_TUNE_MAX_ROUNDS;
    memcpy(w, v, sizeof(double) * (size_t)n);
    gsl_sort(w, 1, (size_t)n);
    return gsl_stats_median_from_sorted_data(w, 1, (size_t)n);
}

void loom__tune_record_init(const tune_ctx *c, loom_record *r, char dfp[17])
{
    snprintf(dfp, 17, "%016llx", (unsigned long long)c->dfp);
    memset(r, 0, sizeof *r);
    r->workload_hash = c->whash;
    r->workload_name = (char *)(c->o->workload_name ? c->o->workload_name : "workload");
    r->workload_text = (char *)c->o->workload_text;
    r->data_fp = dfp;
    r->target_fp = (char *)c->target_fp; /* not owned: loom_db_append copies */
}

double loom__tune_measure_one(tune_ctx *c, const loom_schedule *sch, loom_status *status, char *msg,
                                   size_t nmsg)
{
    loom_runner_result r;
    c->batch = NULL;
    double lat = loom_runner_run_one(c->runner, sch, &r, status);
    c->line_ns = r.m.core_line_ns;
    snprintf(msg, nmsg, "%s", r.message);
    return lat;
}

/* Build the default into s (freshly initialised) and t: "the default
 * schedule" of the campaign's space and target (modules/module.h
 * loom_default_build: the space's default when it validates with the
 * space's limits, else modules/default.c's); *in_space says which, and
 * why_not (n bytes) why not. */
static loom_status build_default(tune_ctx *c, loom_schedule *s, loom_trace *t, int *in_space, char *why_not,
                                 size_t n, loom_error *err)
{
    loom_default_info info;
    s->recorder = loom_trace_recorder;
    s->recorder_ctx = t;
    loom_status st = loom_default_build(c->space, NULL, s, &info, err);
    s->recorder = NULL;
    s->recorder_ctx = NULL;
    *in_space = info.in_space;
    snprintf(why_not, n, "%s", info.why_not);
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

double loom__tune_measure_one_thread(tune_ctx *c, const loom_schedule *sch)
{
    if (c->simulated)
        return NAN;
    /* The kernels' OpenMP runtime (libgomp, loaded into this process by
     * runtime/measure/build.c) read OMP_NUM_THREADS when it was loaded, so
     * setting the variable now would not reach the measuring child; its
     * nthreads ICV would.  The child is forked from this thread and inherits
     * the ICV; omp_set_num_threads does not start libgomp's thread pool. */
    void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    int (*get)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    if (!set || !get)
        return NAN;
    int before = get();
    set(1);
    loom_status st;
    char msg[512];
    double lat = loom__tune_measure_one(c, sch, &st, msg, sizeof msg);
    set(before);
    return st == LOOM_OK ? lat : NAN;
}
