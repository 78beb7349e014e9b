/* The round control (search/tune/tune.h no_round_control; issue 26,
 * "measurement you can trust"): after every search round of a CPU campaign
 * the best earlier schedule is run once more, and a round whose control
 * runs >= LOOM_TUNE_DRIFT_RATIO x its record is reported as run on a slower
 * host and kept out of the cost model.  The "CPU" here is a runner that
 * stands in for the local one (loom_tune_opts.runner_new): the simulator
 * of sim:spr-2c, deterministic, slowed down 2x while the test says the host
 * drifts -- so a steady host gives ratio 1.0 exactly and the drift is known.
 * While slowed it also reports the machine's other state (a cache line
 * between two cores 450 ns a round trip instead of 100: runtime/measure's
 * core-to-core probe), so the tuner's record of the machine's state is
 * checked on the same campaigns (tune.h core_line_moves). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/runner/runner.h"
#include "../search/database/database.h"
#include "../search/tune/tune.h"
#include "fixture.h"

static char dir_[256];

static void mk(void) { fx_tmpdir(dir_, sizeof dir_, "roundctl"); }

static void rm(void) { fx_rmtree(dir_); }

TestSuite(round_control, .init = mk, .fini = rm);

/* the host is 2x slower while drift_lo_ <= trials recorded < drift_hi_ */
static int drift_lo_, drift_hi_, done_;
static loom_target spr_;

static double factor(void) { return done_ >= drift_lo_ && done_ < drift_hi_ ? 2.0 : 1.0; }

static void on_progress(void *ctx, const loom_tune_progress *p)
{
    (void)ctx;
    done_ = p->done;
}

static loom_status slow_run(loom_runner *r, const loom_measure_candidate *cands, int n, const loom_runner_opts *o,
                            loom_runner_result *results, loom_batch_stats *stats, loom_error *err)
{
    loom_runner *inner = r->impl;
    loom_runner_opts in = o ? *o : (loom_runner_opts){0};
    in.on_result = NULL; /* reported below, scaled as the results come */
    in.ctx = NULL;
    loom_status st = loom_runner_run(inner, cands, n, &in, results, stats, err);
    for (int k = 0; k < n && !st; k++) {
        if (results[k].status == LOOM_OK)
            results[k].latency_s *= factor();
        results[k].m.core_line_ns = factor() > 1 ? 450 : 100;
        if (o && o->on_result)
            o->on_result(o->ctx, k, &results[k]); /* records it: on_progress moves done_ */
    }
    return st;
}

static void slow_free(loom_runner *r)
{
    loom_runner_free(r->impl);
    r->impl = NULL;
}

static loom_status slow_new(void *ctx, const loom_target *t, loom_dataset *ds, const loom_reference *ref,
                            const loom_run_opts *run, loom_runner **out, loom_error *err)
{
    (void)ctx, (void)run;
    loom_runner *inner = NULL;
    loom_status st = loom_runner_sim_new(&spr_, ds, ref, &inner, err);
    if (st)
        return st;
    loom_runner *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    *r = (loom_runner){.kind = "slow", .target = t, .ds = ds, .ref = ref, .run = slow_run, .free = slow_free,
                       .impl = inner};
    *out = r;
    return LOOM_OK;
}

static loom_tune_result campaign(const char *name, int lo, int hi, int no_control, char *log, size_t nlog)
{
    loom_dataset *ds = NULL;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_target_open("sim:spr-2c", NULL, NULL, &spr_, &err), LOOM_OK, "%s", err.msg);
    char db[300];
    snprintf(db, sizeof db, "%s/%s", dir_, name);
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = db;
    o.trials = 40;
    o.batch = 8;
    o.workload_name = "spmm";
    o.pretrain = 0;
    o.remeasure_rounds = 0;
    o.search.population = 32;
    o.search.generations = 1;
    o.runner_new = slow_new;
    o.progress = on_progress;
    o.no_round_control = no_control;
    drift_lo_ = lo, drift_hi_ = hi, done_ = 0;
    loom_tune_result r;
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.trials, 40);
    char path[400];
    snprintf(path, sizeof path, "%s/campaign.log", db);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no %s", path);
    size_t m = fread(log, 1, nlog - 1, f);
    log[m] = 0;
    fclose(f);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return r;
}

Test(round_control, a_steady_host_flags_no_round, .timeout = 300)
{
    static char log[1 << 20];
    loom_tune_result r = campaign("steady", 1000, 1000, 0, log, sizeof log);
    cr_assert_eq(r.drifted_rounds, 0, "%d rounds flagged on a steady host", r.drifted_rounds);
    /* the simulator is deterministic: every control re-ran at exactly its record */
    cr_assert_float_eq(r.max_drift, 1.0, 1e-9, "max drift %g", r.max_drift);
    cr_assert_null(strstr(log, "the host was slower"));
    /* one machine state throughout */
    cr_assert_eq(r.core_line_moves, 0);
    cr_assert_eq(r.core_line_min_ns, 100);
    cr_assert_eq(r.core_line_max_ns, 100);
    cr_assert_null(strstr(log, "machine state"));
}

/* The host runs 2x slower from the 17th record to the 26th: the round that
 * ends inside that window has its control re-run at 2x its record. */
Test(round_control, a_round_on_a_slower_host_is_flagged_and_logged, .timeout = 300)
{
    static char log[1 << 20];
    loom_tune_result r = campaign("drift", 17, 26, 0, log, sizeof log);
    printf("round control: %d round(s) flagged, largest control ratio %.2f\n", r.drifted_rounds, r.max_drift);
    cr_assert_geq(r.drifted_rounds, 1, "no round flagged");
    cr_assert_leq(r.drifted_rounds, 2, "%d rounds flagged for a drift of 9 records", r.drifted_rounds);
    cr_assert_float_eq(r.max_drift, 2.0, 1e-9, "max drift %g", r.max_drift);
    const char *at = strstr(log, "the host was slower");
    cr_assert_not_null(at, "campaign.log does not say so");
    /* the machine's state moved away from the campaign's first figures and back: two moves, each
       logged, and every record keeps the state it was measured in */
    cr_assert_eq(r.core_line_moves, 2, "%d moves of the machine's state", r.core_line_moves);
    cr_assert_eq(r.core_line_min_ns, 100);
    cr_assert_eq(r.core_line_max_ns, 450);
    const char *mv = strstr(log, "machine state: a cache line between two cores now takes 450 ns");
    cr_assert_not_null(mv, "campaign.log does not log the move");
    cr_assert_not_null(strstr(mv, "now takes 100 ns"), "campaign.log does not log the move back");
    char db[300];
    snprintf(db, sizeof db, "%s/drift", dir_);
    loom_db *d = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open_readonly(db, NULL, &d, &err), LOOM_OK, "%s", err.msg);
    int slow = 0;
    for (int i = 0; i < loom_db_count(d); i++) {
        double ns = loom_db_record(d, i)->core_line_ns;
        cr_assert(ns == 100 || ns == 450, "record %d: core_line_ns %g", i + 1, ns);
        slow += ns == 450;
    }
    cr_assert_geq(slow, 1, "no record kept the slow state");
    loom_db_close(d);
    /* and with the control off nothing is measured again nor flagged */
    loom_tune_result off = campaign("off", 17, 26, 1, log, sizeof log);
    cr_assert_eq(off.drifted_rounds, 0);
    cr_assert_eq(off.max_drift, 0);
}

/* A host that turns 2x slower at the 17th record and stays so: the round
 * of the change is flagged, not every round after it (the control is then
 * compared against its own re-run after the last round). */
Test(round_control, a_host_that_settles_slower_flags_one_round, .timeout = 300)
{
    static char log[1 << 20];
    loom_tune_result r = campaign("settled", 17, 1000, 0, log, sizeof log);
    printf("round control, settled host: %d round(s) flagged\n", r.drifted_rounds);
    cr_assert_eq(r.drifted_rounds, 1, "%d rounds flagged for one change of speed", r.drifted_rounds);
    cr_assert_float_eq(r.max_drift, 2.0, 1e-9, "max drift %g", r.max_drift);
    cr_assert_eq(r.core_line_moves, 1, "%d moves of the machine's state for one change", r.core_line_moves);
}
