/* Pre-training the cost model on the simulator (search/tune_pretrain.c,
 * issue 13): a campaign with opts.pretrain trains its model before the
 * first round, and its log says which model ranked each batch; without it
 * the first batches are ranked by nothing (an untrained model). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../search/tune.h"
#include "fixture.h"

/* The campaign log of a 16-trial simulated SpMM campaign (cora500, F=16)
 * with `pretrain` pre-training schedules, malloc'd. */
static char *campaign_log(int pretrain, loom_tune_result *r)
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
