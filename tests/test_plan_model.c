/* The cost model's score of fusion plans (`loom plan score`, search/plan/plan.h
 * loom_plan_model_*; issue 16): the score column is there and finite, it
 * comes from the model given (two different models score a plan
 * differently), and the output says which model scored. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../search/plan/plan.h"
#include "fixture.h"

#define DATA "workloads/gcn2.loom --data A=data/cora500_adj.mtx --data X=data/cora500_features.mtx --param F=8 --param C=4"

static const char *PLANS =
    "[{\"name\":\"unfused\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":[\"Z1\"]},"
    "{\"name\":\"c\",\"ops\":[\"H1\"]},{\"name\":\"d\",\"ops\":[\"T2\"]},{\"name\":\"e\",\"ops\":[\"H2\"]}]},"
    "{\"name\":\"relu\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":[\"Z1\",\"H1\"]},"
    "{\"name\":\"d\",\"ops\":[\"T2\"]},{\"name\":\"e\",\"ops\":[\"H2\"]}]},"
    "{\"name\":\"chain\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":[\"Z1\",\"H1\","
    "\"T2\"]},{\"name\":\"e\",\"ops\":[\"H2\"]}]}]";

static int run_loom(const char *args, char *out, size_t nout)
{
    char cmd[2048];
    const char *b = getenv("LOOM_BIN");
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", b ? b : "build/loom", args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, nout - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Pre-train a model on gcn2 (cora500) with `seed` and save it at path. */
static void save_model(uint64_t seed, int n, const char *path)
{
    const char *args[] = {"A=data/cora500_adj.mtx", "X=data/cora500_features.mtx", "F=8", "C=4"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/gcn2.loom", args, 4, 1, &ds);
    loom_error err;
    loom_target t;
    loom_plan_ctx c;
    cr_assert_eq(loom_target_load("host", &t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_plan_ctx_init(&c, prog, ds, NULL, &t, &err), LOOM_OK, "%s", err.msg);
    loom_data_stats *st = malloc(sizeof *st);
    cr_assert_eq(loom_data_stats_compute(ds, st, &err), LOOM_OK, "%s", err.msg);
    loom_cost_model *m = NULL;
    int ntrained = 0;
    cr_assert_eq(loom_plan_model_pretrain(&c, st, n, seed, &m, &ntrained, &err), LOOM_OK, "%s", err.msg);
    cr_assert_gt(ntrained, 1);
    cr_assert(loom_cost_model_trained(m));
    cr_assert_eq(loom_cost_model_save(m, path, &err), LOOM_OK, "%s", err.msg);
    loom_cost_model_free(m);
    free(st);
    loom_plan_ctx_free(&c);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* Score the plans with `model_arg`; fill score[k] per plan name (NaN when absent). */
static void scores_with(const char *plans, const char *model_arg, const char *names[3], double score[3], char *desc,
                        size_t ndesc)
{
    static char out[1 << 20];
    char args[2048];
    snprintf(args, sizeof args, "plan score %s %s --fills 2 --json %s", plans, DATA, model_arg);
    cr_assert_eq(run_loom(args, out, sizeof out), 0, "%s", out);
    cJSON *d = cJSON_Parse(out);
    cr_assert_not_null(d, "%s", out);
    const cJSON *cm = cJSON_GetObjectItem(d, "cost_model");
    cr_assert(cJSON_IsString(cm), "no cost_model in %s", out);
    snprintf(desc, ndesc, "%s", cm->valuestring);
    for (int k = 0; k < 3; k++)
        score[k] = NAN;
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "plans"))
    {
        const char *nm = cJSON_GetObjectItem(x, "name")->valuestring;
        const cJSON *s = cJSON_GetObjectItem(x, "model_score");
        for (int k = 0; k < 3; k++)
            if (!strcmp(nm, names[k]) && cJSON_IsNumber(s))
                score[k] = s->valuedouble;
    }
    cJSON_Delete(d);
}

Test(plan_model, two_models_score_plans_differently, .timeout = 600)
{
    char dir[] = "/tmp/loom-plan-model-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char plans[256], m1[256], m2[256], arg[300];
    snprintf(plans, sizeof plans, "%s/plans.json", dir);
    snprintf(m1, sizeof m1, "%s/m1.json", dir);
    snprintf(m2, sizeof m2, "%s/m2.json", dir);
    FILE *f = fopen(plans, "w");
    cr_assert_not_null(f);
    fputs(PLANS, f);
    fclose(f);
    save_model(1, 16, m1);
    save_model(99, 40, m2);
    const char *names[3] = {"unfused", "relu", "chain"};
    double s1[3], s2[3];
    char d1[1500], d2[1500];
    snprintf(arg, sizeof arg, "--model %s", m1);
    scores_with(plans, arg, names, s1, d1, sizeof d1);
    snprintf(arg, sizeof arg, "--model %s", m2);
    scores_with(plans, arg, names, s2, d2, sizeof d2);
    cr_assert(strstr(d1, m1), "the output names the model: %s", d1);
    cr_assert(strstr(d2, m2), "the output names the model: %s", d2);
    int differ = 0;
    for (int k = 0; k < 3; k++) {
        cr_assert(isfinite(s1[k]) && isfinite(s2[k]), "plan %s: scores %g and %g", names[k], s1[k], s2[k]);
        differ += s1[k] != s2[k];
    }
    cr_assert_gt(differ, 0, "two differently trained models gave the same scores (%g %g %g)", s1[0], s1[1], s1[2]);
    /* --db DIR reads DIR/cost_model.json */
    char db[320];
    snprintf(db, sizeof db, "%s/cost_model.json", dir);
    cr_assert_eq(rename(m2, db), 0);
    snprintf(db, sizeof db, "%s.meta", m2);
    char dbm[320];
    snprintf(dbm, sizeof dbm, "%s/cost_model.json.meta", dir);
    cr_assert_eq(rename(db, dbm), 0);
    double s3[3];
    snprintf(arg, sizeof arg, "--db %s", dir);
    scores_with(plans, arg, names, s3, d2, sizeof d2);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(s3[k], s2[k], "plan %s: --db gave %g, --model %g", names[k], s3[k], s2[k]);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Without --model or --db the model is pre-trained here, and the text output
 * says so and has a score column; a --db without a model is refused. */
Test(plan_model, default_model_is_pretrained_and_said, .timeout = 600)
{
    static char out[1 << 20];
    char dir[] = "/tmp/loom-plan-model-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char plans[256], args[2048];
    snprintf(plans, sizeof plans, "%s/plans.json", dir);
    FILE *f = fopen(plans, "w");
    cr_assert_not_null(f);
    fputs(PLANS, f);
    fclose(f);
    snprintf(args, sizeof args, "plan score %s %s --fills 2 --pretrain 12", plans, DATA);
    cr_assert_eq(run_loom(args, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "pre-trained here on"), "%s", out);
    cr_assert(strstr(out, " score "), "no score column: %s", out);
    /* every plan row carries a number in the score column (after the fills n/m) */
    int rows = 0;
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        int rank, valid, fills;
        char name[64], roof[32];
        double mf, mb, in, sc;
        if (sscanf(l, "%d %63s %lf %lf %lf %31s %d/%d %lf", &rank, name, &mf, &mb, &in, roof, &valid, &fills, &sc) ==
            9) {
            cr_assert(isfinite(sc), "%s", l);
            rows++;
        }
    }
    cr_assert_eq(rows, 3, "three scored plan rows in: %s", out);
    snprintf(args, sizeof args, "plan score %s %s --fills 2 --db %s", plans, DATA, dir);
    cr_assert_eq(run_loom(args, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "has no cost model"), "%s", out);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
