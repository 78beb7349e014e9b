/* A model's forward pass (ship/model_run.h, `loom run MODEL`): the GCN on
 * cora500 as four kernels, checked against the reference forward pass and,
 * independently, against the reference interpreter of the one-program
 * 2-layer GCN (workloads/gcn2_norm.loom) on the same weights; tuned records
 * from a model campaign are run; a task of two calls with different inputs;
 * the CLI. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../runtime/measure/reference.h"
#include "../search/model/model.h"
#include "../ship/model_run.h"
#include "fixture.h"

static char dir_[256], root_[PATH_MAX];

static void mk(void)
{
    snprintf(dir_, sizeof dir_, "/tmp/loom-modelrun-XXXXXX");
    cr_assert_not_null(mkdtemp(dir_));
    cr_assert_not_null(getcwd(root_, sizeof root_));
}

static void rm(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir_);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir_);
}

TestSuite(model_run, .init = mk, .fini = rm);

static loom_model_run_opts quick(void)
{
    loom_model_run_opts o = loom_model_run_defaults();
    o.run.measure.min_seconds = 0.002;
    o.run.measure.time_limit = 60;
    return o;
}

static loom_model *load(const char *path)
{
    loom_model *m = NULL;
    loom_error err;
    cr_assert_eq(loom_model_load(path, 1, &m, &err), LOOM_OK, "%s:%d: %s", err.file, err.line, err.msg);
    return m;
}

/* Every call ran and was right; the latency is the runs-weighted sum. */
static void assert_ran(const loom_model *m, const loom_model_run_result *r)
{
    double sum = 0;
    for (int k = 0; k < m->ncalls; k++) {
        const loom_model_call_run *c = &r->calls[k];
        cr_assert_eq(c->status, LOOM_OK, "call %s: %s", m->calls[k].name, c->message);
        cr_assert(c->correct, "call %s: max relative error %g > %g", m->calls[k].name, c->max_rel_err, c->tol);
        cr_assert(isfinite(c->latency_s) && c->latency_s > 0);
        sum += m->calls[k].runs * c->latency_s;
    }
    cr_assert_float_eq(r->latency_s, sum, 1e-12 + 1e-9 * sum);
    cr_assert(r->correct, "end to end: max relative error %g, tolerance %g", r->max_rel_err, r->tol);
    cr_assert_leq(r->max_rel_err, r->tol);
    cr_assert_leq(r->tol, 1e-2);
}

Test(model_run, gcn_on_cora500_runs_end_to_end_and_matches_the_reference, .timeout = 300)
{
    loom_model *m = load("models/gcn2_cora500.model");
    loom_model_run_opts o = quick();
    loom_model_run_result r;
    loom_error err;
    cr_assert_eq(loom_model_run(m, &o, &r, &err), LOOM_OK, "%s", err.msg);
    assert_ran(m, &r);
    cr_assert_eq(r.from_records, 0, "no database: every call runs its default");
    loom_model_run_result_free(&r);
    loom_model_free(m);
}

/* A dense matrix (rows x cols, seeded values) as a Matrix Market file. */
static void write_dense(const char *path, int rows, int cols, unsigned seed)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", rows, cols, rows * cols);
    srand(seed);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            fprintf(f, "%d %d %.6f\n", i + 1, j + 1, (double)rand() / RAND_MAX * 2 - 1);
    fclose(f);
}

/* The model's output is the one-program 2-layer GCN's (gcn2_norm.loom),
 * whose reference shares nothing with the model's dataflow. */
Test(model_run, the_four_task_gcn_equals_the_one_program_gcn, .timeout = 300)
{
    char w1[400], w2[400], path[400];
    snprintf(w1, sizeof w1, "%s/w1.mtx", dir_);
    snprintf(w2, sizeof w2, "%s/w2.mtx", dir_);
    write_dense(w1, 1433, 16, 7);
    write_dense(w2, 16, 7, 8);
    snprintf(path, sizeof path, "%s/gcn.model", dir_);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "task xw1 %s/workloads/spmm.loom --data A=%s/data/cora500_features.mtx --data B=%s -p F=16\n"
            "task agg1 %s/models/gcn/gcn_agg_relu.loom --data A=%s/data/cora500_adj.mtx -p F=16\n"
            "task hw2 %s/workloads/gemm.loom -p M=500 -p K=16 -p N=7 --data B=%s\n"
            "task agg2 %s/models/gcn/gcn_agg.loom --data A=%s/data/cora500_adj.mtx -p F=7\n"
            "feed xw1.C -> agg1.T\nfeed agg1.H -> hw2.A\nfeed hw2.C -> agg2.T\n",
            root_, root_, w1, root_, root_, root_, w2, root_, root_);
    fclose(f);
    loom_model *m = load(path);
    cr_assert_eq(m->noutputs, 1);
    loom_model_run_opts o = quick();
    loom_model_run_result r;
    loom_error err;
    cr_assert_eq(loom_model_run(m, &o, &r, &err), LOOM_OK, "%s", err.msg);
    assert_ran(m, &r);
    char a1[64], a2[64], a3[420], a4[420];
    snprintf(a1, sizeof a1, "A=data/cora500_adj.mtx");
    snprintf(a2, sizeof a2, "X=data/cora500_features.mtx");
    snprintf(a3, sizeof a3, "W1=%s", w1);
    snprintf(a4, sizeof a4, "W2=%s", w2);
    const char *args[] = {a1, a2, a3, a4};
    loom_dataset *ds = NULL;
    loom_program *p = fx_bind("workloads/gcn2_norm.loom", args, 4, 1, &ds);
    loom_reference *ref = NULL;
    cr_assert_eq(loom_reference_run(ds, &ref, &err), LOOM_OK, "%s", err.msg);
    int h2 = loom_program_find_tensor(p, "H2");
    const loom_model_call *last = &m->calls[3];
    int h = loom_program_find_tensor(last->prog, "H");
    cr_assert_eq(ref->nvals[h2], last->ds->t[h].nnz);
    double maxref = 0, maxdiff = 0;
    for (int64_t i = 0; i < ref->nvals[h2]; i++) {
        maxref = fmax(maxref, fabs(ref->vals[h2][i]));
        maxdiff = fmax(maxdiff, fabs(ref->vals[h2][i] - last->ds->t[h].vals[i]));
    }
    cr_assert_gt(maxref, 0);
    cr_assert_lt(maxdiff / maxref, 1e-4, "the model's output differs from gcn2_norm's by %g (relative to %g)", maxdiff,
                 maxref);
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(p);
    loom_model_run_result_free(&r);
    loom_model_free(m);
}

/* One task (one kernel, two calls) whose second call is fed the first's
 * output: both run and the end-to-end result is checked. */
Test(model_run, a_task_of_two_calls_runs_on_each_calls_inputs, .timeout = 300)
{
    char path[400];
    snprintf(path, sizeof path, "%s/twice.model", dir_);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "task a %s/workloads/spmm.loom --data A=%s/data/cora500_adj.mtx -p F=8 --runs 2\n"
            "task b %s/workloads/spmm.loom --data A=%s/data/cora500_adj.mtx -p F=8\n"
            "feed a.C -> b.B\n",
            root_, root_, root_, root_);
    fclose(f);
    loom_model *m = load(path);
    cr_assert_eq(m->ntasks, 1);
    cr_assert_eq(m->tasks[0].weight, 3);
    loom_model_run_opts o = quick();
    loom_model_run_result r;
    loom_error err;
    cr_assert_eq(loom_model_run(m, &o, &r, &err), LOOM_OK, "%s", err.msg);
    assert_ran(m, &r);
    /* b's input is a's output, not its own generated B */
    int bt = loom_program_find_tensor(m->calls[1].prog, "B"), ct = loom_program_find_tensor(m->calls[0].prog, "C");
    cr_assert_eq(memcmp(m->calls[1].ds->t[bt].vals, m->calls[0].ds->t[ct].vals,
                        sizeof(float) * (size_t)m->calls[1].ds->t[bt].nnz),
                 0, "b did not run on a's output");
    loom_model_run_result_free(&r);
    loom_model_free(m);
}

/* ---- the CLI: tune on the simulator, then run the tuned records ---------------------- */

static int run_cmd(const char *cmd, char *out, size_t n)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert_not_null(p);
    size_t got = fread(out, 1, n - 1, p);
    out[got] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

static char out_[1 << 16];

Test(model_run, cli_tunes_a_model_then_runs_its_records, .timeout = 300)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s tune --help", loom_bin());
    cr_assert_eq(run_cmd(cmd, out_, sizeof out_), 0);
    cr_assert_not_null(strstr(out_, "loom tune MODEL.model"), "tune --help does not mention MODEL files");
    cr_assert_not_null(strstr(out_, "--task-scheduler"));
    snprintf(cmd, sizeof cmd,
             "%s tune models/gcn2_cora500.model --trials 16 --batch 4 --db %s/db --target sim:spr-2c --pretrain 0 "
             "--remeasure 1 --threads 2 -q",
             loom_bin(), dir_);
    cr_assert_eq(run_cmd(cmd, out_, sizeof out_), 0, "%s", out_);
    cr_assert_not_null(strstr(out_, "16 trials"), "%s", out_);
    cr_assert_not_null(strstr(out_, "end to end (sum of weight x best)"), "%s", out_);
    for (const char *t = "xw1\0agg1\0hw2\0agg2\0"; *t; t += strlen(t) + 1)
        cr_assert_not_null(strstr(out_, t), "the summary has no line for %s: %s", t, out_);
    snprintf(cmd, sizeof cmd, "%s run models/gcn2_cora500.model --db %s/db --target sim:spr-2c --min-time 0.002 --json",
             loom_bin(), dir_);
    cr_assert_eq(run_cmd(cmd, out_, sizeof out_), 0, "%s", out_);
    cr_assert_not_null(strstr(out_, "\"correct\":true"), "%s", out_);
    cr_assert_not_null(strstr(out_, "\"from_records\":4"), "every task has a record: %s", out_);
    /* bad input: the model file's line */
    char bad[400];
    snprintf(bad, sizeof bad, "%s/bad.model", dir_);
    FILE *f = fopen(bad, "w");
    cr_assert_not_null(f);
    fputs("# one line\ntask x nowhere.loom\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s run %s", loom_bin(), bad);
    cr_assert_eq(run_cmd(cmd, out_, sizeof out_), 2, "%s", out_);
    char want[500];
    snprintf(want, sizeof want, "%s:2:", bad);
    cr_assert_not_null(strstr(out_, want), "no file:line in '%s'", out_);
    snprintf(cmd, sizeof cmd, "%s tune %s --trials 4 --db %s/db2", loom_bin(), bad, dir_);
    cr_assert_eq(run_cmd(cmd, out_, sizeof out_), 2, "%s", out_);
    cr_assert_not_null(strstr(out_, want), "no file:line in '%s'", out_);
}
