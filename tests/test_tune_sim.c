/* The search on the simulator (issue "simulator target": search tests run
 * on the simulator, deterministically): a design space small enough to
 * enumerate -- SpMM on the 500-node piece of Cora, F = 16 -- is enumerated
 * by drawing it until no new schedule appears, every distinct valid schedule
 * is simulated, and each strategy's campaign (same budget, same seeds) is
 * scored by how many trials it needed to record a schedule within 5% of the
 * enumerated optimum. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../modules/module.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../search/database/database.h"
#include "../search/tune/tune.h"
#include "fixture.h"

#define BUDGET 160
/* The default list without sparse-prefetch (issue 13), whose four distances
 * make the space 4x larger (49980 schedules): too many to simulate each
 * here.  bench/bench_search_sim.sh runs the strategies on the full spaces. */
#define SPACE "attention-fusion,fuse-producers,sparse-loop-order,multi-level-tiling,parallel-vectorize-unroll"

/* FNV-1a of the lowered program's printed loop tree: schedules that lower to
 * the same program simulate the same (the simulator is a deterministic
 * function of the program, the data and the target), and the space's 18374
 * schedules lower to about 6400 programs -- each simulated once. */
static uint64_t lir_hash(const lir_func *f)
{
    char *text = NULL;
    size_t len = 0;
    FILE *ms = open_memstream(&text, &len);
    cr_assert_not_null(ms);
    loom_lir_print(f, ms);
    cr_assert_eq(fclose(ms), 0);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)text[i]) * 1099511628211ULL;
    free(text);
    return h;
}

static int seen_before(uint64_t *seen, int *n, int cap, uint64_t h)
{
    for (int i = 0; i < *n; i++)
        if (seen[i] == h)
            return 1;
    cr_assert_lt(*n, cap, "the space is not small");
    seen[(*n)++] = h;
    return 0;
}

static double enumerate_optimum(loom_program *prog, loom_dataset *ds, const loom_target *t, int *ndistinct, int *nprog)
{
    loom_error err;
    loom_error_clear(&err);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    cr_assert_eq(loom_space_new(reg, SPACE, "sim", &space, &err), LOOM_OK, "%s", err.msg);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_limits lim = loom_target_limits(t);
    int cap = 1 << 16, n = 0, nprograms = 0, since_new = 0;
    uint64_t *seen = calloc((size_t)cap, sizeof *seen), *programs = calloc((size_t)cap, sizeof *programs);
    cr_assert(seen && programs);
    double best = INFINITY;
    /* draw until 20000 draws in a row bring nothing new */
    for (int draw = 0; since_new < 20000 && draw < 2000000; draw++) {
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        since_new++;
        if (loom_validate(sch, &lim, &v, &err) != LOOM_OK)
            continue;
        if (seen_before(seen, &n, cap, loom_schedule_hash(sch)))
            continue;
        since_new = 0;
        lir_func *f = NULL;
        loom_sim_result r;
        if (loom_lower(sch, &f, &err) == LOOM_OK && !seen_before(programs, &nprograms, cap, lir_hash(f)) &&
            loom_sim_run(f, ds, t, &r, &err) == LOOM_OK && r.latency_s < best)
            best = r.latency_s;
        if (f)
            loom_lir_func_free(f);
    }
    *ndistinct = n;
    *nprog = nprograms;
    cr_assert_gt(nprograms, 0);
    cr_assert_leq(nprograms, n);
    free(programs);
    free(seen);
    free(sch);
    gsl_rng_free(rng);
    loom_space_free(space);
    loom_registry_free(reg);
    return best;
}

/* Trials (in database order) until a record within 5% of opt, or -1. */
static int trials_to_reach(const char *dir, double opt, double *best)
{
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open(dir, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    int at = -1;
    *best = INFINITY;
    for (int i = 0; i < loom_db_count(db); i++) {
        const loom_record *r = loom_db_record(db, i);
        if (r->status == LOOM_OK && r->latency_s < *best)
            *best = r->latency_s;
        if (at < 0 && r->status == LOOM_OK && r->latency_s <= opt * 1.05)
            at = i + 1;
    }
    loom_db_close(db);
    return at;
}

Test(tune_sim, strategies_against_the_enumerated_optimum, .timeout = 600)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    int ndistinct = 0, nprog = 0;
    double opt = enumerate_optimum(prog, ds, &t, &ndistinct, &nprog);
    cr_assert(isfinite(opt));
    printf("tune_sim: SpMM on cora500 (F=16), target spr-2c: %d distinct valid schedules (%d distinct programs), "
           "optimum %.4g s\n",
           ndistinct, nprog, opt);
    char tmpl[] = "/tmp/loom-test-tunesim-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    const char *names[3] = {"evolutionary", "metaschedule", "random"};
    int need[3][3];
    for (int s = 0; s < 3; s++)
        for (int seed = 0; seed < 3; seed++) {
            char db[400];
            snprintf(db, sizeof db, "%s/%s-%d", dir, names[s], seed);
            loom_tune_opts o = loom_tune_defaults();
            o.db_dir = db;
            o.trials = BUDGET;
            o.batch = 16;
            o.target = "sim:spr-2c";
            o.workload_name = "spmm";
            o.modules = SPACE;
            o.search.strategy = (loom_strategy_kind)loom_strategy_find(names[s]);
            o.search.seed = 100 + (uint64_t)seed;
            o.search.population = 128;
            o.model_min_records = 32;
            o.no_default_trial = 1; /* the search alone */
            o.remeasure_rounds = 0; /* (it would add the default schedule, outside the design space) */
            loom_tune_result r;
            cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
            double best;
            need[s][seed] = trials_to_reach(db, opt, &best);
            cr_assert_geq(best, opt * (1 - 1e-9), "a campaign beat the enumerated optimum: the enumeration missed it");
        }
    for (int s = 0; s < 3; s++)
        printf("tune_sim: %-12s trials to within 5%% of the optimum (budget %d; seeds 100-102): %d, %d, %d "
               "(-1: not reached)\n",
               names[s], BUDGET, need[s][0], need[s][1], need[s][2]);
    fflush(stdout);
    for (int seed = 0; seed < 3; seed++)
        cr_assert_gt(need[0][seed], 0, "evolutionary search did not reach 5%% of the optimum in %d trials (seed %d)",
                     BUDGET, 100 + seed);
    char cmd[500];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* ---- the end of a campaign (issues 26, 33) ---------------------------------- */

#include "../ship/replay.h"

static int file_lines(const char *dir)
{
    char path[400];
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    int n = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

static loom_tune_opts end_opts(const char *dir, int trials)
{
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.trials = trials;
    o.batch = 8;
    o.target = "sim:spr-2c";
    o.workload_name = "spmm";
    o.search.population = 32;
    o.search.generations = 2;
    o.search.init_min_unmeasured = 8;
    o.search.threads = 1;
    return o;
}

/* Re-running a finished campaign 10 times leaves its database at most one
 * re-measurement larger (issue 33): the recent re-measurement is read back. */
Test(tune_sim, rerunning_a_finished_campaign_does_not_grow_the_file, .timeout = 300)
{
    loom_dataset *ds = NULL;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    char dir[] = "/tmp/loom_rerunXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    loom_tune_opts o = end_opts(dir, 8);
    loom_tune_result r, first;
    loom_error err;
    cr_assert_eq(loom_tune(prog, ds, &o, &first, &err), LOOM_OK, "%s", err.msg);
    cr_assert_gt(first.nremeasured, 1);
    cr_assert_eq(first.reused, 0);
    int lines0 = file_lines(dir);
    for (int k = 0; k < 10; k++) {
        cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "run %d: %s", k + 2, err.msg);
        cr_assert_eq(r.measured, 0, "run %d measured %d trials", k + 2, r.measured);
        cr_assert_eq(r.reused, 1, "run %d re-measured again", k + 2);
        cr_assert_eq(r.nremeasured, first.nremeasured);
        cr_assert(r.best_latency_s == first.best_latency_s, "run %d: best %g, first %g", k + 2, r.best_latency_s,
                  first.best_latency_s);
    }
    int lines = file_lines(dir);
    cr_assert_leq(lines, lines0 + first.nremeasured, "%d lines after 11 runs, %d after the first", lines, lines0);
    /* asked for, a new re-measurement is made (and appended) */
    o.remeasure_again = 1;
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.reused, 0);
    cr_assert_eq(file_lines(dir), lines + r.nremeasured);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* A sampled-lucky record -- a schedule slower than the default whose trial
 * figure says 1000x faster -- is re-measured, loses to the default, and
 * neither the campaign's result, its best trace nor replay takes it (issue
 * 26: the final choice is the best of the re-measured, the default included). */
Test(tune_sim, a_lucky_sample_is_never_crowned_over_the_default, .timeout = 300)
{
    loom_dataset *ds = NULL;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    char dir[] = "/tmp/loom_luckyXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    loom_tune_opts o = end_opts(dir, 16);
    loom_tune_result r;
    loom_error err;
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    double def = r.default_latency_s;
    cr_assert(isfinite(def));
    /* the slowest ok trial slower than the default, recorded again as a lucky sample */
    loom_db *db = NULL;
    cr_assert_eq(loom_db_open(dir, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    const loom_record *slow = NULL;
    for (int i = 0; i < loom_db_count(db); i++) {
        const loom_record *x = loom_db_record(db, i);
        if (!x->nsamples && x->status == LOOM_OK && x->latency_s > def * 1.05 && (!slow || x->latency_s > slow->latency_s))
            slow = x;
    }
    cr_assert_not_null(slow, "no trial slower than the default (%g s) among %d records", def, loom_db_count(db));
    loom_record lucky = *slow;
    lucky.latency_s = slow->latency_s / 1000;
    lucky.time = slow->time + 1000;
    lucky.nsamples = 0;
    lucky.samples = NULL;
    uint64_t lucky_hash = slow->schedule_hash;
    double slow_lat = slow->latency_s;
    cr_assert_eq(loom_db_append(db, &lucky, &err), LOOM_OK, "%s", err.msg);
    loom_db_close(db);
    /* a trial after the last re-measurement: the rerun re-measures */
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.reused, 0);
    cr_assert_lt(r.sampled_best_latency_s, def, "the lucky sample is the campaign's sampled minimum");
    int seen = 0;
    for (int k = 0; k < r.nremeasured; k++)
        if (r.remeasured[k].schedule == lucky_hash) {
            seen = 1;
            cr_assert_geq(r.remeasured[k].median_s, slow_lat * 0.999, "the lucky schedule re-measured faster");
        }
    cr_assert(seen, "the lucky schedule was not re-measured");
    cr_assert_leq(r.best_latency_s, r.default_latency_s, "best %g s slower than the default %g s", r.best_latency_s,
                  r.default_latency_s);
    /* the best trace and replay take the same schedule, never the lucky one */
    char *text = NULL;
    {
        FILE *f = fopen(r.best_trace, "r");
        cr_assert_not_null(f, "%s", r.best_trace);
        text = calloc(1, 1 << 20);
        cr_assert_gt(fread(text, 1, (1 << 20) - 1, f), 0);
        fclose(f);
    }
    loom_schedule *sch = malloc(sizeof *sch), *sch2 = malloc(sizeof *sch2);
    loom_trace *t = NULL, *bt = NULL;
    loom_ship_best_info info;
    cr_assert_eq(loom_ship_best(dir, prog, ds, "sim:spr-2c", 0, sch, &t, &info, &err), LOOM_OK, "%s", err.msg);
    cr_assert(info.remeasured);
    cr_assert_leq(info.latency_s, r.default_latency_s);
    cr_assert_neq(loom_schedule_hash(sch), lucky_hash, "replay ships the lucky schedule");
    cr_assert_eq(loom_trace_from_json(text, "best", &bt, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_init(sch2, prog, NULL, &err), LOOM_OK);
    cr_assert_eq(loom_trace_replay(bt, sch2, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_hash(sch2), loom_schedule_hash(sch), "best trace and replay disagree");
    loom_trace_free(t);
    loom_trace_free(bt);
    free(sch);
    free(sch2);
    free(text);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    loom_dataset_free(ds);
    loom_program_free(prog);
}
