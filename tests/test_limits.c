/* Target limits reach the design space (issue 15): a space is shaped by the
 * limits of the target it is for, handed to every module through
 * loom_space_apply, and a `loom tune --target sim:wide-64c` campaign
 * proposes schedules that only that machine's 64 cores call for.
 *
 * The signal: parallel-vectorize-unroll fuses the two outer loops of a
 * block before parallelising them when the outer loop has fewer than
 * cores x 16 iterations (MetaSchedule's max_jobs_per_core).  SpMM on the
 * 500-row piece of Cora has 500 rows: fewer than 64 x 16 = 1024, not fewer
 * than 2 x 16 = 32.  So on wide-64c some schedules fuse the row loop (or
 * any outer loop of 32 iterations or more) into their parallel loop; on
 * spr-2c (2 cores) only outer loops shorter than 32 are fused. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../dsl/ir/limits.h"
#include "../modules/module.h"
#include "../runtime/target/target.h"
#include "../search/database/database.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "fixture.h"

#define ROWS 500       /* data/cora500_adj.mtx */
#define SMALL_JOBS 32  /* spr-2c: 2 cores x 16 jobs per core */

/* The longest outer part of a fused parallel loop of sch (0: none). */
static int64_t fused_parallel_outer(const loom_schedule *sch)
{
    int64_t best = 0;
    for (int s = 0; s < sch->nstages; s++)
        for (int p = 0; p < sch->stages[s].nloops; p++) {
            const loom_loop *L = &sch->stages[s].loops[p];
            const loom_iter *I = &sch->stages[s].iters[L->iter];
            if (L->kind != LOOM_LOOP_PARALLEL || I->kind != LOOM_ITER_FUSE)
                continue;
            int64_t e = loom_iter_extent(sch, s, I->a);
            if (e > best)
                best = e;
        }
    return best;
}

static loom_limits target_limits(const char *name)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_load(name, &t, &err), LOOM_OK, "%s", err.msg);
    return loom_target_limits(&t);
}

/* Draws (seeds 1..n) of the default space with `lim`: how many valid ones
 * fuse an outer loop of SMALL_JOBS iterations or more into a parallel loop. */
static int draws_with_long_parallel(const loom_program *prog, const loom_limits *lim, int n, int *valid)
{
    loom_error err;
    loom_error_clear(&err);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    cr_assert_eq(loom_space_new(reg, NULL, "sim", &space, &err), LOOM_OK, "%s", err.msg);
    loom_space_set_limits(space, lim);
    cr_assert_eq(loom_space_limits(space)->cores, lim->cores);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    loom_schedule *sch = malloc(sizeof *sch);
    int count = 0;
    *valid = 0;
    for (int d = 1; d <= n; d++) {
        gsl_rng_set(rng, (unsigned long)d);
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        if (loom_validate(sch, lim, &v, NULL) != LOOM_OK)
            continue;
        ++*valid;
        count += fused_parallel_outer(sch) >= SMALL_JOBS;
    }
    free(sch);
    gsl_rng_free(rng);
    loom_space_free(space);
    loom_registry_free(reg);
    return count;
}

Test(limits, a_space_is_shaped_by_its_targets_limits)
{
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_limits small = target_limits("spr-2c"), wide = target_limits("wide-64c");
    cr_assert_eq(small.cores, 2);
    cr_assert_eq(wide.cores, 64);
    int vs, vw;
    int ns = draws_with_long_parallel(prog, &small, 200, &vs);
    int nw = draws_with_long_parallel(prog, &wide, 200, &vw);
    printf("limits: SpMM cora500 (%d rows), 200 draws: an outer loop >= %d fused into the parallel loop in %d of %d "
           "valid (spr-2c), %d of %d (wide-64c)\n",
           ROWS, SMALL_JOBS, ns, vs, nw, vw);
    cr_assert_gt(vs, 0);
    cr_assert_gt(vw, 0);
    cr_assert_eq(ns, 0, "2 cores x 16 jobs: only outer loops shorter than 32 are fused");
    cr_assert_gt(nw, 0, "64 cores x 16 jobs > 500 rows: the row loop is fused before parallelising");
    /* a space made without loom_space_set_limits has the host's */
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    loom_error err;
    cr_assert_eq(loom_space_new(reg, NULL, NULL, &space, &err), LOOM_OK, "%s", err.msg);
    loom_limits host = loom_target_cpu_limits();
    const loom_limits *got = loom_space_limits(space);
    cr_assert(got->vector_lanes == host.vector_lanes && got->max_vector_factor == host.max_vector_factor &&
              got->cores == host.cores && got->max_workspace_bytes == host.max_workspace_bytes);
    loom_space_free(space);
    loom_registry_free(reg);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* Records of a campaign directory whose replayed schedule fuses an outer
 * loop of SMALL_JOBS iterations or more into a parallel loop. */
static int records_with_long_parallel(const char *dir, const loom_program *prog, int *n)
{
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open(dir, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    *n = loom_db_count(db);
    int count = 0;
    loom_schedule *sch = malloc(sizeof *sch);
    for (int i = 0; i < *n; i++) {
        loom_trace *t = NULL;
        cr_assert_eq(loom_trace_from_json(loom_db_record(db, i)->trace_json, "record", &t, &err), LOOM_OK, "%s",
                     err.msg);
        cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_trace_replay(t, sch, NULL, &err), LOOM_OK, "%s", err.msg);
        count += fused_parallel_outer(sch) >= SMALL_JOBS;
        loom_trace_free(t);
    }
    free(sch);
    loom_db_close(db);
    return count;
}

Test(limits, loom_tune_on_wide_64c_searches_that_machines_space, .timeout = 300)
{
    const char *bin = getenv("LOOM_BIN") ? getenv("LOOM_BIN") : "build/loom";
    char tmpl[] = "/tmp/loom-test-limits-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    const char *targets[2] = {"spr-2c", "wide-64c"};
    int longp[2], n[2];
    for (int k = 0; k < 2; k++) {
        char cmd[800];
        snprintf(cmd, sizeof cmd,
                 "%s tune workloads/spmm.loom --data A=data/cora500_adj.mtx --param F=16 --target sim:%s --trials 16 --remeasure 0 "
                 "--batch 8 --population 32 --threads 2 --db %s/%s -q >/dev/null 2>&1",
                 bin, targets[k], dir, targets[k]);
        int rc = system(cmd);
        cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "loom tune --target sim:%s: status %d", targets[k], rc);
        char db[400];
        snprintf(db, sizeof db, "%s/%s", dir, targets[k]);
        longp[k] = records_with_long_parallel(db, prog, &n[k]);
        cr_assert_eq(n[k], 16);
    }
    printf("limits: loom tune SpMM cora500, 16 trials: an outer loop >= %d fused into the parallel loop in %d "
           "records (spr-2c), %d (wide-64c)\n",
           SMALL_JOBS, longp[0], longp[1]);
    cr_assert_eq(longp[0], 0);
    cr_assert_gt(longp[1], 0, "the wide-64c campaign measured no schedule shaped by its 64 cores");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    loom_dataset_free(ds);
    loom_program_free(prog);
}
