/* Fusion plans (search/plan/plan.h, `loom plan`; issue 16): reading and checking
 * plans (one message per fault), the cost estimate, the describe JSON,
 * and a design space that follows a plan, whose kernels are checked
 * against the reference. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <math.h>

#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../search/plan/plan.h"
#include "../search/tune/tune.h"
#include "../traces/validate.h"
#include "fixture.h"

typedef struct env {
    loom_program *prog;
    loom_dataset *ds;
    loom_reference *ref;
    loom_target t;
    loom_plan_ctx c;
} env;

static void setup(env *e, const char *workload)
{
    const char *args[] = {"A=data/cora500_adj.mtx", "X=data/cora500_features.mtx", "F=8", "C=4"};
    loom_error err;
    e->prog = fx_bind(workload, args, 4, 1, &e->ds);
    cr_assert_eq(loom_target_load("host", &e->t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_reference_run(e->ds, &e->ref, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_plan_ctx_init(&e->c, e->prog, e->ds, e->ref, &e->t, &err), LOOM_OK, "%s", err.msg);
}

static void teardown(env *e)
{
    loom_plan_ctx_free(&e->c);
    loom_reference_free(e->ref);
    loom_dataset_free(e->ds);
    loom_program_free(e->prog);
}

/* Parse `json` on gcn2 and expect a refusal whose message has every needle. */
static void refused(env *e, const char *json, const char *n1, const char *n2, const char *n3)
{
    loom_plan *p = NULL;
    int n = -1;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_plan_parse(&e->c, json, "test", &p, &n, &err), LOOM_ERR_SEMANTIC, "accepted: %s", json);
    cr_assert_null(p);
    const char *needles[] = {n1, n2, n3};
    for (int k = 0; k < 3; k++)
        cr_assert(!needles[k] || strstr(err.msg, needles[k]), "'%s' not in: %s", needles[k], err.msg);
}

#define ALL_SINGLE                                                                                              \
    "{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":[\"Z1\"]},{\"name\":\"c\",\"ops\":[\"H1\"]},"      \
    "{\"name\":\"d\",\"ops\":[\"T2\"]}"

Test(plan, each_fault_has_its_own_message)
{
    env e;
    setup(&e, "workloads/gcn2.loom");
    refused(&e, "{\"name\":\"p\",\"fusion_groups\":[" ALL_SINGLE ",{\"name\":\"e\",\"ops\":[\"H2\",\"Foo\"]}]}",
            "plan p, group e", "unknown op Foo", "T1, Z1, H1, T2, H2");
    refused(&e, "{\"name\":\"p\",\"fusion_groups\":[" ALL_SINGLE ",{\"name\":\"e\",\"ops\":[\"H2\",\"T2\"]}]}",
            "plan p", "op T2 is in two groups, d and e", NULL);
    refused(&e, "{\"name\":\"p\",\"fusion_groups\":[" ALL_SINGLE "]}", "plan p", "op H2 is in no group", NULL);
    /* T1 -> Z1 is a gather through A's column index: not offered */
    refused(&e,
            "{\"name\":\"p\",\"fusion_groups\":[{\"name\":\"g\",\"ops\":[\"T1\",\"Z1\"]},{\"name\":\"h\",\"ops\":[\"H1\"]},"
            "{\"name\":\"k\",\"ops\":[\"T2\",\"H2\"]}]}",
            "plan p, group g", "op T1 cannot be fused into Z1", "recompute all of T1");
    /* j (A's compressed level) outside i */
    refused(&e,
            "{\"name\":\"p\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":[\"Z1\"],"
            "\"dataflow_order\":[\"j\",\"i\",\"f\"]},{\"name\":\"c\",\"ops\":[\"H1\"]},{\"name\":\"d\",\"ops\":[\"T2\"]},"
            "{\"name\":\"e\",\"ops\":[\"H2\"]}]}",
            "plan p, group b: illegal dataflow order [j, i, f] for op Z1", "legal orders: [i, j, f]", NULL);
    refused(&e,
            "{\"name\":\"p\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":[\"Z1\"],"
            "\"dataflow_order\":[\"i\",\"q\",\"f\"]},{\"name\":\"c\",\"ops\":[\"H1\"]},{\"name\":\"d\",\"ops\":[\"T2\"]},"
            "{\"name\":\"e\",\"ops\":[\"H2\"]}]}",
            "group b: illegal dataflow order: index q is not an index of op Z1", NULL, NULL);
    /* two ops of a group that do not feed each other */
    refused(&e,
            "{\"name\":\"p\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\",\"H1\"]},{\"name\":\"b\",\"ops\":[\"Z1\"]},"
            "{\"name\":\"d\",\"ops\":[\"T2\"]},{\"name\":\"e\",\"ops\":[\"H2\"]}]}",
            "plan p, group a: ops T1 and H1 are not connected", NULL, NULL);
    teardown(&e);
}

Test(plan, a_list_of_plans_is_read_with_masks_roots_and_orders)
{
    env e;
    setup(&e, "workloads/gcn2.loom");
    const char *json =
        "[{\"name\":\"u\",\"fusion_groups\":[" ALL_SINGLE ",{\"name\":\"e\",\"ops\":[\"H2\"]}]},"
        "{\"name\":\"f\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":[\"Z1\",\"H1\","
        "\"T2\"],\"dataflow_order\":[\"i\",\"f\",\"c\"]},{\"name\":\"e\",\"ops\":[\"H2\"]}]}]";
    loom_plan *p = NULL;
    int n = 0;
    loom_error err;
    cr_assert_eq(loom_plan_parse(&e.c, json, "test", &p, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_assert_eq(p[0].mask, 0);
    cr_assert_eq(p[1].mask, 3, "both offered edges (Z1->H1, H1->T2) fused");
    cr_assert_eq(p[1].groups[1].root, 3, "T2 is the root of Z1, H1, T2");
    cr_assert_eq(p[1].groups[1].norder, 3);
    /* cost: fusion keeps the FLOPs here (Z1 and H1 computed once per row)
     * and saves the temporaries' round trips */
    loom_plan_cost u, f;
    loom_plan_cost_of(&e.c, &p[0], &u);
    loom_plan_cost_of(&e.c, &p[1], &f);
    cr_assert_float_eq(f.flops, u.flops, 1e-6 * u.flops);
    double z1 = 4.0 * 500 * 8, h1 = 4.0 * 500 * 8; /* Z1, H1: 500 x 8 floats */
    cr_assert_float_eq(u.bytes - f.bytes, 2 * z1 + 2 * h1, 1e-6, "saved %g", u.bytes - f.bytes);
    cr_assert_float_eq(f.intensity, f.flops / f.bytes, 1e-12);
    cr_assert_eq(f.compute_bound, f.intensity >= e.c.balance);
    cr_assert_float_eq(u.flops, e.ref->flops, 1e-6 * u.flops, "the unfused FLOPs are the reference's count");
    free(p);
    teardown(&e);
}

Test(plan, describe_lists_operators_edges_groups_and_every_plan)
{
    env e;
    setup(&e, "workloads/sage2.loom");
    char *txt = NULL;
    loom_error err;
    cr_assert_eq(loom_plan_describe(&e.c, &txt, &err), LOOM_OK, "%s", err.msg);
    cJSON *d = cJSON_Parse(txt);
    cr_assert_not_null(d);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d, "operators")), e.prog->nstmts);
    int plans = cJSON_GetArraySize(cJSON_GetObjectItem(d, "plans"));
    cr_assert_eq(plans, 1 << e.c.nedges, "one plan per fusion mask");
    cr_assert_gt(e.c.nedges, 0);
    int fusable = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "edges"))
    {
        fusable += cJSON_IsTrue(cJSON_GetObjectItem(x, "fusable"));
        if (!cJSON_IsTrue(cJSON_GetObjectItem(x, "fusable")))
            cr_assert(cJSON_IsString(cJSON_GetObjectItem(x, "reason")), "an edge not offered says why");
    }
    cr_assert_eq(fusable, e.c.nedges);
    /* plans are ranked by their roofline time */
    double last = 0;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "plans"))
    {
        double t = cJSON_GetObjectItem(x, "roofline_us")->valuedouble;
        cr_assert_geq(t, last);
        last = t;
    }
    /* A's statistics from the data: 500 rows, 2050 stored */
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "inputs")) if (!strcmp(cJSON_GetObjectItem(x, "name")->valuestring,
                                                                         "A"))
    {
        cr_assert_float_eq(cJSON_GetObjectItem(x, "nnz")->valuedouble, 2050, 0);
        cr_assert_float_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(x, "nnz_per_row"), "mean")->valuedouble, 4.1, 1e-9);
    }
    cJSON_Delete(d);
    free(txt);
    teardown(&e);
}

/* The index variables a loop derives from, outer first (a fused loop:
 * both of its loops). */
static void loop_vars(const loom_stage *T, int it, int *vars, int *n)
{
    while (it >= 0 && T->iters[it].kind == LOOM_ITER_SPLIT)
        it = T->iters[it].parent;
    if (it < 0 || *n >= 8)
        return;
    if (T->iters[it].kind == LOOM_ITER_FUSE) {
        loop_vars(T, T->iters[it].a, vars, n);
        loop_vars(T, T->iters[it].b, vars, n);
        return;
    }
    vars[(*n)++] = T->iters[it].var;
}

/* Every draw of a plan's space has the plan's fusion and order, is valid
 * where the validator says so, and its kernel matches the reference. */
Test(plan, draws_follow_the_plan_and_compute_the_right_result, .timeout = 300)
{
    env e;
    setup(&e, "workloads/gcn2.loom");
    const char *json = "{\"name\":\"f\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":"
                       "[\"Z1\",\"H1\"],\"dataflow_order\":[\"i\",\"f\"]},{\"name\":\"d\",\"ops\":[\"T2\"],"
                       "\"dataflow_order\":[\"c\",\"i\",\"f\"]},{\"name\":\"e\",\"ops\":[\"H2\"],"
                       "\"dataflow_order\":[\"i\",\"j\",\"c\"]}]}";
    loom_plan *p = NULL;
    int n = 0;
    loom_error err;
    cr_assert_eq(loom_plan_parse(&e.c, json, "test", &p, &n, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&e.t);
    loom_registry *reg = NULL;
    loom_space *sp = NULL;
    cr_assert_eq(loom_plan_space(&p[0], &lim, &reg, &sp, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *s = malloc(sizeof *s);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int valid = 0, z1 = 1, h1 = 2, t2 = 3;
    for (int k = 0; k < 12; k++) {
        gsl_rng_set(rng, (unsigned long)k + 1);
        cr_assert_eq(loom_schedule_init(s, e.prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(sp, s, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(s->stages[z1].fuse, LOOM_FUSE_YES);
        cr_assert_eq(s->stages[h1].fuse, LOOM_FUSE_NO);
        cr_assert_eq(s->stages[0].fuse, LOOM_FUSE_NO);
        /* T2's loops, outermost first: the first derived from c comes
         * before the first derived from i (tiling keeps the plan's order
         * among the free loops and moves reductions inside) */
        const loom_stage *T = &s->stages[t2];
        int first_c = -1, first_i = -1, vi = e.prog->stmts[t2].vars[0], vc = e.prog->stmts[t2].vars[1];
        int pos = 0;
        for (int q = 0; q < T->nloops; q++) {
            int vars[8], nv = 0;
            loop_vars(T, T->loops[q].iter, vars, &nv);
            for (int a = 0; a < nv; a++, pos++) {
                if (vars[a] == vc && first_c < 0)
                    first_c = pos;
                if (vars[a] == vi && first_i < 0)
                    first_i = pos;
            }
        }
        cr_assert(first_c >= 0 && first_i > first_c, "draw %d: c at %d, i at %d", k, first_c, first_i);
        loom_violation v;
        if (loom_validate(s, &lim, &v, NULL) != LOOM_OK)
            continue;
        valid++;
        if (valid <= 2)
            fx_run_checked(s, e.ds, "a draw of the fused plan");
    }
    cr_assert_gt(valid, 0, "no valid draw of the fused plan");
    gsl_rng_free(rng);
    free(s);
    loom_space_free(sp);
    loom_registry_free(reg);
    free(p);
    teardown(&e);
}

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

Test(plan, cli_describe_and_score, .timeout = 300)
{
    static char out[1 << 20];
    const char *data = "workloads/gcn2.loom --data A=data/cora500_adj.mtx --data X=data/cora500_features.mtx";
    char args[1024], path[] = "/tmp/loom-plan-XXXXXX";
    cr_assert_eq(run_loom((snprintf(args, sizeof args, "plan describe %s", data), args), out, sizeof out), 0, "%s",
                 out);
    cr_assert(strstr(out, "\"legal_dataflow_orders\""), "%s", out);
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char *bad = "{\"fusion_groups\":[{\"name\":\"g\",\"ops\":[\"T1\",\"Z1\",\"H1\",\"T2\",\"H2\"]}]}";
    cr_assert_eq(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    /* an illegal plan is a verdict, not a failure (exit 0), unless --strict */
    snprintf(args, sizeof args, "plan score %s %s", path, data);
    cr_assert_eq(run_loom(args, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "op T1 cannot be fused into Z1"), "%s", out);
    snprintf(args, sizeof args, "plan score %s %s --strict", path, data);
    cr_assert_eq(run_loom(args, out, sizeof out), 1, "%s", out);
    FILE *f = fopen(path, "w");
    fputs("[{\"name\":\"unfused\",\"fusion_groups\":[" ALL_SINGLE ",{\"name\":\"e\",\"ops\":[\"H2\"]}]},"
          "{\"name\":\"relu\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":[\"Z1\","
          "\"H1\"]},{\"name\":\"d\",\"ops\":[\"T2\"]},{\"name\":\"e\",\"ops\":[\"H2\"]}]}]",
          f);
    fclose(f);
    snprintf(args, sizeof args, "plan score %s %s --fills 3 --json", path, data);
    cr_assert_eq(run_loom(args, out, sizeof out), 0, "%s", out);
    cJSON *d = cJSON_Parse(out);
    cr_assert_not_null(d, "%s", out);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d, "plans")), 2);
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "plans"))
    {
        cr_assert_gt(cJSON_GetObjectItem(x, "valid_fills")->valueint, 0);
        cr_assert_gt(cJSON_GetObjectItem(x, "simulated_s")->valuedouble, 0);
    }
    cJSON_Delete(d);
    unlink(path);
}

/* `loom tune --plans`: the plans' valid fills are measured first (here on
 * the simulator, deterministic), so the campaign's best is at least as
 * good as the best plan fill. */
Test(plan, tune_seeded_with_plans_records_them_first, .timeout = 600)
{
    env e;
    setup(&e, "workloads/gcn2.loom");
    const char *json = "[{\"name\":\"r\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":"
                       "[\"Z1\",\"H1\"]},{\"name\":\"d\",\"ops\":[\"T2\"]},{\"name\":\"e\",\"ops\":[\"H2\"]}]}]";
    loom_plan *p = NULL;
    int n = 0, nseeds = 0;
    loom_error err;
    cr_assert_eq(loom_plan_parse(&e.c, json, "test", &p, &n, &err), LOOM_OK, "%s", err.msg);
    loom_target sim;
    cr_assert_eq(loom_target_load("spr-2c", &sim, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&sim);
    loom_trace **seeds = NULL;
    cr_assert_eq(loom_plan_fills(&e.c, p, n, 3, 1, &lim, &seeds, &nseeds, &err), LOOM_OK, "%s", err.msg);
    cr_assert_gt(nseeds, 0);
    /* the seeds' simulated latencies */
    double best_seed = INFINITY;
    loom_schedule *s = malloc(sizeof *s);
    for (int k = 0; k < nseeds; k++) {
        cr_assert_eq(loom_schedule_init(s, e.prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_trace_replay(seeds[k], s, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(s->stages[1].fuse, LOOM_FUSE_YES, "Z1 fused in every fill");
        lir_func *f = NULL;
        loom_sim_result r;
        cr_assert_eq(loom_lower(s, &f, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_sim_run(f, e.ds, &sim, &r, &err), LOOM_OK, "%s", err.msg);
        loom_lir_func_free(f);
        if (r.latency_s < best_seed)
            best_seed = r.latency_s;
    }
    char tmpl[] = "/tmp/loom-plan-tune-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = tmpl;
    o.trials = nseeds + 8;
    o.batch = 4;
    o.target = "sim:spr-2c";
    o.workload_name = "gcn2";
    o.remeasure_rounds = 0;
    o.no_default_trial = 1;
    o.seeds = seeds;
    o.nseeds = nseeds;
    loom_tune_result r;
    cr_assert_eq(loom_tune(e.prog, e.ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_leq(r.best_latency_s, best_seed * (1 + 1e-9), "campaign %g s, best plan fill %g s", r.best_latency_s,
                  best_seed);
    char log[512], line[2048];
    snprintf(log, sizeof log, "%s/campaign.log", tmpl);
    FILE *f = fopen(log, "r");
    cr_assert_not_null(f);
    int seen = 0;
    while (fgets(line, sizeof line, f))
        seen += strstr(line, " seed ") != NULL && !strstr(line, "skipped") && !strstr(line, "campaign:");
    fclose(f);
    cr_assert_eq(seen, nseeds, "every distinct seed measured (log lines %d)", seen);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
    cr_assert_eq(system(cmd), 0);
    for (int k = 0; k < nseeds; k++)
        loom_trace_free(seeds[k]);
    free(seeds);
    free(s);
    free(p);
    teardown(&e);
}

/* Issue 27: a file of 3 legal and 2 illegal plans gets 5 verdicts, every
 * fault of each illegal plan, exit 0 (1 with --strict), and with --json one
 * object with an entry per plan. */
static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(plan, score_gives_every_plan_its_verdict_and_all_faults, .timeout = 300)
{
    static char out[1 << 20];
    const char *data = "workloads/gcn2.loom --data A=data/cora500_adj.mtx --data X=data/cora500_features.mtx";
    char args[1024], path[] = "/tmp/loom-plan-verdictsXXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    /* legal: unfused, relu, relu (renamed); illegal: "bad1" (an unknown op and
     * an unfusable group: 2 faults), "bad2" (T1 twice, Q unknown, 4 ops in no
     * group: 6 faults) */
    const char *plans =
        "[{\"name\":\"unfused\",\"fusion_groups\":[" ALL_SINGLE ",{\"name\":\"e\",\"ops\":[\"H2\"]}]},"
        "{\"name\":\"bad1\",\"fusion_groups\":[{\"name\":\"g\",\"ops\":[\"T1\",\"Z1\",\"H1\",\"T2\",\"H2\",\"NOPE\"]}]},"
        "{\"name\":\"relu\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":[\"Z1\","
        "\"H1\"]},{\"name\":\"d\",\"ops\":[\"T2\"]},{\"name\":\"e\",\"ops\":[\"H2\"]}]},"
        "{\"name\":\"bad2\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\",\"T1\"]},{\"name\":\"b\",\"ops\":"
        "[\"Q\"]}]},"
        "{\"name\":\"relu2\",\"fusion_groups\":[{\"name\":\"a\",\"ops\":[\"T1\"]},{\"name\":\"b\",\"ops\":[\"Z1\","
        "\"H1\"]},{\"name\":\"d\",\"ops\":[\"T2\"]},{\"name\":\"e\",\"ops\":[\"H2\"]}]}]";
    cr_assert_eq(write(fd, plans, strlen(plans)), (ssize_t)strlen(plans));
    close(fd);
    snprintf(args, sizeof args, "plan score %s %s --fills 1 --pretrain 4", path, data);
    cr_assert_eq(run_loom(args, out, sizeof out), 0, "%s", out);
    cr_assert_eq(count(out, " legal\n"), 3, "%s", out);
    cr_assert_eq(count(out, " illegal: "), 2, "%s", out);
    cr_assert(strstr(out, "unknown op NOPE") && strstr(out, "op T1 cannot be fused into Z1"),
              "both faults of bad1: %s", out);
    cr_assert(strstr(out, "unknown op Q") && strstr(out, "op T1 is in two groups") &&
                  strstr(out, "op H2 is in no group"),
              "every fault of bad2: %s", out);
    cr_assert(strstr(out, "5 plans: 3 legal, 2 illegal"), "%s", out);
    snprintf(args, sizeof args, "plan score %s %s --fills 1 --pretrain 4 --strict", path, data);
    cr_assert_eq(run_loom(args, out, sizeof out), 1, "%s", out);
    /* --json: the whole output is one JSON object */
    snprintf(args, sizeof args, "plan score %s %s --fills 1 --pretrain 4 --json", path, data);
    cr_assert_eq(run_loom(args, out, sizeof out), 0, "%s", out);
    cJSON *d = cJSON_Parse(out);
    cr_assert_not_null(d, "not one JSON object: %s", out);
    const cJSON *ps = cJSON_GetObjectItem(d, "plans");
    cr_assert_eq(cJSON_GetArraySize(ps), 5, "%s", out);
    cr_assert_eq(cJSON_GetObjectItem(d, "legal")->valueint, 3);
    cr_assert_eq(cJSON_GetObjectItem(d, "illegal")->valueint, 2);
    int legal = 0, faults[6] = {0};
    const cJSON *x;
    cJSON_ArrayForEach(x, ps)
    {
        const char *v = cJSON_GetObjectItem(x, "verdict")->valuestring;
        int idx = cJSON_GetObjectItem(x, "index")->valueint;
        cr_assert(idx >= 1 && idx <= 5);
        faults[idx] = cJSON_GetArraySize(cJSON_GetObjectItem(x, "faults"));
        if (!strcmp(v, "legal")) {
            legal++;
            cr_assert_gt(cJSON_GetObjectItem(x, "simulated_s")->valuedouble, 0);
        } else
            cr_assert_str_eq(v, "illegal");
    }
    cr_assert_eq(legal, 3);
    cr_assert_eq(faults[1] + faults[3] + faults[5], 0, "legal plans have no faults");
    cr_assert_eq(faults[2], 2, "bad1's faults");
    cr_assert_eq(faults[4], 6, "bad2's faults");
    cJSON_Delete(d);
    unlink(path);
}

/* 1 if s holds (at any depth) a vector loop whose body has a loop with a
 * bound that is not a literal: a `for f vectorized` around a CSR row's
 * nonzeros. */
static int outer_vector_over_data_loop(const lir_stmt *s, int in_vector)
{
    if (!s)
        return 0;
    if (s->kind == LIR_S_FOR && in_vector && (s->lo->kind != LIR_E_INT || s->hi->kind != LIR_E_INT))
        return 1;
    int v = in_vector || (s->kind == LIR_S_FOR && s->loop_kind == LIR_LOOP_VECTORIZED);
    for (int i = 0; s->kind == LIR_S_SEQ && i < s->nitems; i++)
        if (outer_vector_over_data_loop(s->items[i], v))
            return 1;
    return outer_vector_over_data_loop(s->body, v) || outer_vector_over_data_loop(s->els, v);
}

/* Simulator model 28 (runtime/sim/sim.h "Outer-loop vectors"): GCC 12 does
 * not vectorize `for f vectorized` across a loop over a CSR row's nonzeros
 * (the relu-fused plan's Z1 computed inside H1's loop); it runs the f loop
 * as scalar code, so the simulator charges the nonzero loop once per f,
 * not once per vector of f.  Every such draw's simulated instructions are
 * at least two per (row, f, nonzero) -- a load of T1 and an FMA each --
 * where model 20 charged one pass per vector: at F = 32 and 8 or 16 lanes,
 * 2-4 passes of a few instructions a nonzero. */
Test(plan, a_vector_loop_over_a_rows_nonzeros_is_simulated_as_scalar, .timeout = 300)
{
    const char *text = "param F = 32\ntensor A(N, N) csr\ntensor T1(N, F) dense\ntensor H1(N, F) dense output\n"
                       "Z1(i, f) = A(i, j) * T1(j, f)\nH1(i, f) = relu(Z1(i, f))\n";
    const char *data[] = {"A=data/cora500_adj.mtx", NULL}, *params[] = {"F=32", NULL};
    fx_loaded L = fx_load(NULL, text, data, params, 1);
    loom_error err;
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_plan_ctx c;
    cr_assert_eq(loom_plan_ctx_init(&c, L.prog, L.ds, NULL, &t, &err), LOOM_OK, "%s", err.msg);
    const char *json = "{\"name\":\"fused\",\"fusion_groups\":[{\"name\":\"agg\",\"ops\":[\"Z1\",\"H1\"],"
                       "\"dataflow_order\":[\"i\",\"f\"]}]}";
    loom_plan *p = NULL;
    int n = 0;
    cr_assert_eq(loom_plan_parse(&c, json, "test", &p, &n, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    loom_registry *reg = NULL;
    loom_space *sp = NULL;
    cr_assert_eq(loom_plan_space(&p[0], &lim, &reg, &sp, &err), LOOM_OK, "%s", err.msg);
    double nnz = -1, F = 32;
    for (int k = 0; k < L.prog->ntensors; k++)
        if (!strcmp(L.prog->tensors[k].name, "A"))
            nnz = (double)L.ds->t[k].nnz;
    cr_assert_gt(nnz, 0, "A's nonzeros");
    loom_schedule *s = malloc(sizeof *s);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int found = 0;
    for (int k = 0; k < 40 && found < 3; k++) {
        gsl_rng_set(rng, (unsigned long)k + 1);
        cr_assert_eq(loom_schedule_init(s, L.prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(sp, s, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        if (loom_validate(s, &lim, &v, NULL) != LOOM_OK)
            continue;
        lir_func *f = NULL;
        cr_assert_eq(loom_lower(s, &f, &err), LOOM_OK, "%s", err.msg);
        if (outer_vector_over_data_loop(f->body, 0)) {
            found++;
            loom_sim_result r;
            cr_assert_eq(loom_sim_run(f, L.ds, &t, &r, &err), LOOM_OK, "%s", err.msg);
            cr_log_info("draw %d: %.0f instructions simulated, %.0f nonzeros x F = %.0f", k, r.instructions, nnz,
                        nnz * F);
            cr_expect_geq(r.instructions, 2 * nnz * F, "draw %d: %g instructions for %g (row, f, nonzero) triples",
                          k, r.instructions, nnz * F);
        }
        loom_lir_func_free(f);
    }
    cr_assert_gt(found, 0, "no draw of the fused plan put a vector loop around the row's nonzeros");
    gsl_rng_free(rng);
    free(s);
    loom_space_free(sp);
    loom_registry_free(reg);
    free(p);
    loom_plan_ctx_free(&c);
    fx_unload(&L);
}
