/* Pre-training the cost model on the simulator (search/tune/tune_pretrain.c,
 * issue 13): a campaign with opts.pretrain trains its model before the
 * first round, and its log says which model ranked each batch; without it
 * the first batches are ranked by nothing (an untrained model).  The
 * campaigns turn local exploration off (search.h local_share 0): by
 * default the evolutionary strategy's round 0 is all mutants of the
 * default in draw order, so the model would rank none of it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../search/database/database.h"
#include "../search/tune/tune.h"
#include "fixture.h"

/* The campaign log of a 16-trial simulated SpMM campaign (cora500, F=16)
 * with `pretrain` pre-training schedules, malloc'd. */
static char *campaign_log_budget(int pretrain, double budget_s, loom_tune_result *r)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    char tmpl[] = "/tmp/loom-test-pretrain-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.trials = 16;
    o.batch = 8;
    o.target = "sim:spr-2c";
    o.workload_name = "spmm";
    o.search.population = 64;
    o.remeasure_rounds = 0;
    o.pretrain = pretrain;
    o.pretrain_budget_s = budget_s;
    o.search.local_share = 0; /* the whole batch the model's (round 0 would be local: search.h) */
    cr_assert_eq(loom_tune(prog, ds, &o, r, &err), LOOM_OK, "%s", err.msg);
    char path[200];
    snprintf(path, sizeof path, "%s/campaign.log", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return strdup(buf);
}

static char *campaign_log(int pretrain, loom_tune_result *r)
{
    return campaign_log_budget(pretrain, 0, r);
}

/* --pretrain-budget (issue 26): a budget already spent when the
 * pre-training starts simulates (almost) nothing -- at most one schedule
 * per thread had started -- and says so; a budget the pre-training never
 * reaches changes nothing: the same schedules, the same model, the same
 * campaign as without a budget. */
Test(pretrain, time_budget, .timeout = 300)
{
    loom_tune_result r, r0;
    char *log = campaign_log_budget(48, 1e-9, &r);
    cr_expect_leq(r.pretrained, 2, "pre-trained on %d schedules under a 1 ns budget", r.pretrained);
    cr_expect_not_null(strstr(log, "time budget"), "the budget's stop is not in the log:\n%s", log);
    free(log);

    char *ref = campaign_log_budget(48, 0, &r0);
    char *big = campaign_log_budget(48, 3600, &r);
    cr_expect_eq(r.pretrained, 48);
    cr_expect_eq(r0.pretrained, 48);
    cr_expect_null(strstr(big, "time budget"), "%s", big);
    cr_expect_eq(r.best_latency_s, r0.best_latency_s, "best %g vs %g", r.best_latency_s, r0.best_latency_s);
    /* the log's lines hold timings: compare the pre-trained model's quality figures */
    const char *qa = strstr(ref, "held-out Spearman"), *qb = strstr(big, "held-out Spearman");
    cr_assert(qa && qb);
    cr_expect_eq(strncmp(qa, qb, 40), 0, "%.60s vs %.60s", qa, qb);
    free(ref);
    free(big);
}

/* Simulated latencies are cached across campaigns by structural hash
 * ($LOOM_CACHE/sim): a second campaign on the same workload, data and
 * target simulates none of its 48 schedules again, and its model is the
 * first one's (the same quality figures, the same best). */
Test(pretrain, simulation_cache_hits, .timeout = 300)
{
    char tmpl[] = "/tmp/loom-test-simcache-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    cr_assert_eq(setenv("LOOM_CACHE", dir, 1), 0);
    loom_tune_result r1, r2;
    char *a = campaign_log(48, &r1), *b = campaign_log(48, &r2);
    cr_expect_not_null(strstr(a, "48 simulated ok, 0 from the simulation cache"), "%s", a);
    cr_expect_not_null(strstr(b, "48 simulated ok, 48 from the simulation cache"), "%s", b);
    const char *qa = strstr(a, "held-out Spearman"), *qb = strstr(b, "held-out Spearman");
    cr_assert(qa && qb);
    cr_expect_eq(strncmp(qa, qb, 40), 0, "%.60s vs %.60s", qa, qb);
    cr_expect_eq(r1.best_latency_s, r2.best_latency_s);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    free(a);
    free(b);
}

Test(pretrain, model_ranks_the_first_batch, .timeout = 300)
{
    loom_tune_result r;
    char *log = campaign_log(48, &r);
    cr_assert_eq(r.pretrained, 48, "pre-trained on %d schedules", r.pretrained);
    const char *pre = strstr(log, "cost model pre-trained on 48 simulated schedules");
    const char *round0 = strstr(log, "round 0 search:");
    cr_assert_not_null(pre, "no pre-training line in:\n%s", log);
    cr_assert_not_null(round0);
    cr_assert_lt(pre, round0, "the model was trained after the first batch was generated");
    const char *eol = strchr(round0, '\n');
    cr_assert(eol && strstr(round0, "ranked by the cost model pre-trained on 48 simulated schedules") &&
                  strstr(round0, "ranked by the cost model pre-trained") < eol,
              "round 0 was not ranked by the pre-trained model:\n%s", log);
    cr_assert_null(strstr(log, "fresh samples picked"), "a round still used the warm-up:\n%s", log);
    free(log);

    /* without pre-training the first round is ranked by nothing */
    log = campaign_log(0, &r);
    cr_assert_eq(r.pretrained, 0);
    cr_assert_null(strstr(log, "pre-trained"));
    round0 = strstr(log, "round 0 search:");
    cr_assert_not_null(round0);
    cr_assert_not_null(strstr(round0, "ranked by nothing"), "%s", log);
    free(log);
}

/* A simulated campaign of `trials` trials (batch 8, seed 1, no
 * re-measurement) of `workload` on args into dir, pre-trained on
 * `pretrain` schedules and the records of xfer (NULL: none). */
static void campaign(const char *workload, const char *name, const char *const *args, int nargs, const char *dir,
                     int trials, int pretrain, const char *xfer, loom_tune_result *r)
{
    loom_error err;
    loom_error_clear(&err);
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind(workload, args, nargs, 1, &ds);
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.trials = trials;
    o.batch = 8;
    o.target = "sim:spr-2c";
    o.workload_name = name;
    o.search.population = 64;
    o.remeasure_rounds = 0;
    o.pretrain = pretrain;
    o.search.local_share = 0; /* the whole batch the model's (round 0 would be local: search.h) */
    const char *dirs[1] = {xfer};
    if (xfer) {
        o.transfer_dirs = dirs;
        o.ntransfer = 1;
    }
    cr_assert_eq(loom_tune(prog, ds, &o, r, &err), LOOM_OK, "%s", err.msg);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* The schedule hashes of records 1..8 of dir (the first batch: record 0 is
 * the default schedule), into h. */
static void first_batch(const char *dir, uint64_t h[8])
{
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open_readonly(dir, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    cr_assert_geq(loom_db_count(db), 9);
    for (int i = 0; i < 8; i++)
        h[i] = loom_db_record(db, i + 1)->schedule_hash;
    loom_db_close(db);
}

/* Transfer (opts.transfer_dirs, `loom tune --transfer`): an earlier
 * database holding SpMM on full Cora and SDDMM records; an SpMM campaign
 * on cora500 without pre-training on the simulator is pre-trained on the
 * SpMM records only (the SDDMM ones skipped and counted), its log says so
 * before round 0 and that round 0 was ranked by that model, and its first
 * batch differs from the same campaign's without transfer (ranked by
 * nothing: draw order). */
Test(pretrain, transfer_from_an_earlier_database, .timeout = 300)
{
    char tmpl[] = "/tmp/loom-test-transfer-XXXXXX";
    char *root = mkdtemp(tmpl);
    cr_assert_not_null(root);
    char src[128], with[128], without[128];
    snprintf(src, sizeof src, "%s/src", root);
    snprintf(with, sizeof with, "%s/with", root);
    snprintf(without, sizeof without, "%s/without", root);
    loom_tune_result r;
    const char *full[] = {"A=data/cora_adj.mtx", "F=16"};
    campaign("workloads/spmm.loom", "spmm", full, 2, src, 40, 0, NULL, &r);
    const char *sd[] = {"M=data/cora500_adj.mtx", "D=16"};
    campaign("workloads/sddmm.loom", "sddmm", sd, 2, src, 9, 0, NULL, &r);

    const char *small[] = {"A=data/cora500_adj.mtx", "F=16"};
    campaign("workloads/spmm.loom", "spmm", small, 2, with, 16, 0, src, &r);
    cr_assert_eq(r.pretrained, 0);
    cr_assert_geq(r.transferred, 30, "transferred %d of the 40 SpMM records", r.transferred);
    cr_assert_leq(r.transferred, 40);
    char path[200], want[160];
    snprintf(path, sizeof path, "%s/campaign.log", with);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    static char log[1 << 16];
    size_t n = fread(log, 1, sizeof log - 1, f);
    log[n] = '\0';
    fclose(f);
    snprintf(want, sizeof want, "cost model pre-trained on 0 simulated + %d transferred records", r.transferred);
    const char *pre = strstr(log, want), *round0 = strstr(log, "round 0 search:");
    cr_assert_not_null(pre, "no transfer line '%s' in:\n%s", want, log);
    cr_assert_not_null(round0);
    cr_assert_lt(pre, round0);
    cr_assert_not_null(strstr(pre, "records of other workloads skipped"), "%s", log);
    cr_assert_null(strstr(pre, " 0 records of other workloads skipped"), "the SDDMM records were not skipped:\n%s",
                   log);
    const char *eol = strchr(round0, '\n');
    const char *by = strstr(round0, "ranked by the cost model pre-trained on 0 simulated + ");
    cr_assert(by && by < eol, "round 0 was not ranked by the transferred model:\n%s", log);

    campaign("workloads/spmm.loom", "spmm", small, 2, without, 16, 0, NULL, &r);
    cr_assert_eq(r.transferred, 0);
    uint64_t a[8], b[8];
    first_batch(with, a);
    first_batch(without, b);
    int same = 0;
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 8; k++)
            same += a[i] == b[k];
    cr_assert_lt(same, 8, "the first batch with transfer is the untrained one's");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}
