/* The evolutionary strategy's --local-cold-order (search.h local_cold_order):
 * a cold round -- round 0, the local model not fitted yet -- with a
 * pre-trained cost model measures the same schedules as without it, in the
 * cost model's order, and the model's own picks of the round first.  On the
 * simulator (deterministic): SDDMM on cora500, D = 16, pre-trained on 32
 * simulated schedules, the default then one round of 16. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../search/database/database.h"
#include "../search/tune/tune.h"
#include "fixture.h"

enum { BATCH = 16 };

/* the schedule hashes of round 0's records (the default's left out) */
static void round0(int order, double cold_share, uint64_t out[BATCH])
{
    const char *args[] = {"M=data/cora500_adj.mtx", "D=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/sddmm.loom", args, 2, 1, &ds);
    char dir[256];
    fx_tmpdir(dir, sizeof dir, "cold-order");
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.trials = 1 + BATCH;
    o.batch = BATCH;
    o.target = "sim:spr-2c";
    o.search.population = 128;
    o.search.threads = 2;
    o.pretrain = 32;
    o.pretrain_budget_s = 0; /* no time budget: the same pre-training on any machine */
    o.remeasure_rounds = 0;
    o.search.local_cold_order = order;
    o.search.local_share_cold = cold_share;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    loom_db *db = NULL;
    cr_assert_eq(loom_db_open_readonly(dir, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_db_count(db), 1 + BATCH);
    for (int i = 0; i < BATCH; i++)
        out[i] = loom_db_record(db, 1 + i)->schedule_hash;
    loom_db_close(db);
    fx_rmtree(dir);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

static int has(const uint64_t *v, int n, uint64_t h)
{
    for (int i = 0; i < n; i++)
        if (v[i] == h)
            return 1;
    return 0;
}

/* All of round 0 local (the default share): the same 16 children, in
 * another order. */
Test(cold_order, the_same_children_in_the_cost_models_order, .timeout = 300)
{
    uint64_t a[BATCH], b[BATCH];
    round0(0, 1.0, a);
    round0(1, 1.0, b);
    int same_place = 0;
    for (int i = 0; i < BATCH; i++) {
        cr_expect(has(a, BATCH, b[i]), "record %d of the ordered round is not among the unordered round's", i + 1);
        same_place += a[i] == b[i];
    }
    cr_expect_lt(same_place, BATCH, "the cost model's order is the draw order");
}

/* A quarter of round 0 the cost model's picks: measured first with the
 * option, last (after the local children) without it; the same 16. */
Test(cold_order, the_models_picks_first, .timeout = 300)
{
    uint64_t a[BATCH], b[BATCH];
    round0(0, 0.75, a);
    round0(1, 0.75, b);
    for (int i = 0; i < BATCH; i++)
        cr_expect(has(a, BATCH, b[i]), "record %d of the ordered round is not among the unordered round's", i + 1);
    for (int i = 0; i < 4; i++)
        cr_expect(has(a + 12, 4, b[i]), "record %d of the ordered round is not one of the model's 4 picks", i + 1);
}
