/* The model file (search/model/model.h, docs/models.md): every bad file is
 * refused with its file and line and the problem; identical calls (same
 * workload hash and data fingerprint) become one task whose weight is the
 * sum of their runs; the default outputs; the example models load. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../search/model/model.h"

static char dir_[256], root_[PATH_MAX];

static void mk(void)
{
    snprintf(dir_, sizeof dir_, "/tmp/loom-modelfile-XXXXXX");
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

TestSuite(model_file, .init = mk, .fini = rm);

/* Write text to DIR/name with every "@" replaced by the source root. */
static const char *write_model(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir_, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (const char *p = text; *p; p++)
        p[0] == '@' ? fputs(root_, f) : fputc(*p, f);
    fclose(f);
    return path;
}

typedef struct bad_case {
    const char *text;
    int line;
    const char *says;
} bad_case;

#define SPMM "task %s @/workloads/spmm.loom --data A=@/data/cora500_adj.mtx -p F=16\n"
#define T1 "task t1 @/workloads/spmm.loom --data A=@/data/cora500_adj.mtx -p F=16\n"
#define T2 "task t2 @/workloads/spmm.loom --data A=@/data/cora500_adj.mtx -p F=7\n"

static const bad_case BAD[] = {
    {"model a\nmodel b\n", 2, "model is named twice"},
    {"# comment\n\nfrob x\n", 3, "unknown keyword 'frob'"},
    {"task 1x @/workloads/spmm.loom\n", 1, "task name '1x' is not an identifier"},
    {"task t\n", 1, "task expects NAME WORKLOAD.loom"},
    {T1 "task t1 @/workloads/spmv.loom --data A=@/data/cora500_adj.mtx\n", 2, "task t1 is already declared at line 1"},
    {"task t @/workloads/spmm.loom --frob 3\n", 1, "task t: unknown option '--frob'"},
    {"task t @/workloads/spmm.loom --runs 0\n", 1, "task t: --runs expects 1..1000000, got '0'"},
    {"task t @/workloads/spmm.loom -p F=abc\n", 1, "task t: -p expects SIZE=INT"},
    {"task t @/workloads/spmm.loom --data A\n", 1, "task t: --data expects TENSOR=FILE, got 'A'"},
    {"task t @/workloads/spmm.loom --runs\n", 1, "task t: --runs expects a value"},
    {"\ntask t @/workloads/nope.loom\n", 2, "task t: "},
    {"task t @/workloads/spmm.loom --data A=@/data/nope.mtx\n", 1, "nope.mtx"},
    {"task t @/workloads/spmm.loom\n", 1, "task t: "}, /* A is csr and needs data */
    {T1 T2 "feed t1.C t2.B\n", 3, "feed expects TASK.TENSOR -> TASK.TENSOR"},
    {T1 T2 "feed zz.C -> t2.B\n", 3, "unknown task 'zz'"},
    {T1 T2 "feed t1.Q -> t2.B\n", 3, "task t1 ("},
    {T1 T2 "feed t1 -> t2.B\n", 3, "'t1' is not TASK.TENSOR"},
    {T1 T2 "feed t2.C -> t1.B\n", 3, "task t1 does not run after task t2"},
    {T1 T2 "feed t1.C -> t2.C\n", 3, "t2.C is not an input of task t2"},
    {T1 T2 "feed t1.B -> t2.B\n", 3, "t1.B is not an output of task t1"},
    {T1 T2 "feed t1.C -> t2.B\n", 3, "shapes differ: t1.C is 500x16, t2.B is 500x7"},
    {T1 T2 "feed t1.C -> t2.A\n", 3, "t2.A is given by --data A="},
    {T1 "task t3 @/workloads/spmm.loom --data A=@/data/cora500_adj.mtx -p F=16\n"
        "feed t1.C -> t3.B\n\nfeed t1.C -> t3.B\n",
     5, "t3.B is already fed on line 3"},
    {T1 "output t1.B\n", 2, "output: t1.B is not an output of task t1"},
    {T1 "output t1.C\noutput t1.C\n", 3, "output t1.C is already named on line 2"},
    {"# nothing but a comment\n\n", 2, "no task"},
    {T1 "model\n", 2, "model expects one NAME"},
};

Test(model_file, every_bad_file_names_its_line_and_problem)
{
    for (size_t k = 0; k < sizeof BAD / sizeof *BAD; k++) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu.model", k);
        const char *path = write_model(name, BAD[k].text);
        loom_model *m = (loom_model *)1;
        loom_error err;
        loom_error_clear(&err);
        loom_status st = loom_model_load(path, 1, &m, &err);
        cr_assert_neq(st, LOOM_OK, "case %zu loaded", k);
        cr_assert_null(m, "case %zu: *out not NULL on error", k);
        cr_assert_str_eq(err.file, path, "case %zu: file '%s'", k, err.file);
        cr_assert_eq(err.line, BAD[k].line, "case %zu: line %d, want %d (%s)", k, err.line, BAD[k].line, err.msg);
        cr_assert_not_null(strstr(err.msg, BAD[k].says), "case %zu: '%s' does not say '%s'", k, err.msg, BAD[k].says);
        char buf[1600];
        char want[600];
        snprintf(want, sizeof want, "%s:%d: ", path, BAD[k].line);
        cr_assert_eq(strncmp(loom_error_format(&err, buf, sizeof buf), want, strlen(want)), 0,
                     "case %zu: formatted '%s', want it to start with '%s'", k, buf, want);
    }
}

Test(model_file, a_missing_file_is_an_io_error)
{
    loom_model *m = NULL;
    loom_error err;
    char path[300];
    snprintf(path, sizeof path, "%s/none.model", dir_);
    cr_assert_eq(loom_model_load(path, 1, &m, &err), LOOM_ERR_IO);
    cr_assert_str_eq(err.file, path);
}

/* Calls of one workload on the same data (one of them fed by another) are
 * one task whose weight is the sum of their runs; other data or sizes are
 * other tasks. */
Test(model_file, identical_calls_are_one_task_weighted_by_their_runs)
{
    const char *path = write_model("dedup.model", "model dedup\n"
                                                  "task a @/workloads/spmm.loom --data A=@/data/cora500_adj.mtx -p F=16 --runs 2\n"
                                                  "task b @/workloads/spmm.loom --data A=@/data/cora500_adj.mtx -p F=8\n"
                                                  "task c @/workloads/spmm.loom --param F=16 --data A=@/data/cora500_adj.mtx --runs 3\n"
                                                  "task d @/workloads/spmm.loom --data A=@/data/cora_adj.mtx -p F=16\n"
                                                  "task e @/workloads/spmm.loom --data A=@/data/cora500_adj.mtx -p F=16\n"
                                                  "feed a.C -> c.B\n");
    loom_model *m = NULL;
    loom_error err;
    cr_assert_eq(loom_model_load(path, 1, &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_str_eq(m->name, "dedup");
    cr_assert_eq(m->ncalls, 5);
    cr_assert_eq(m->ntasks, 3, "%d tasks", m->ntasks);
    /* a, c, e: one task named after its first call; weight 2 + 3 + 1 */
    cr_assert_eq(m->calls[0].task, 0);
    cr_assert_eq(m->calls[2].task, 0);
    cr_assert_eq(m->calls[4].task, 0);
    cr_assert_eq(m->tasks[0].call, 0);
    cr_assert_eq(m->tasks[0].ncalls, 3);
    cr_assert_eq(m->tasks[0].weight, 6);
    cr_assert_eq(m->calls[1].task, 1, "other sizes, another task");
    cr_assert_eq(m->tasks[1].weight, 1);
    cr_assert_eq(m->calls[3].task, 2, "other data, another task");
    cr_assert_eq(m->tasks[0].workload_hash, m->tasks[2].workload_hash, "the same workload");
    cr_assert_neq(m->tasks[0].data_fp, m->tasks[2].data_fp);
    /* the default outputs: every output that feeds nothing (a.C is fed) */
    cr_assert_eq(m->noutputs, 4);
    for (int k = 0; k < m->noutputs; k++)
        cr_assert_neq(m->outputs[k].call, 0, "a.C feeds c.B: not a model output");
    cr_assert_eq(m->nfeeds, 1);
    cr_assert_eq(m->feeds[0].src, 0);
    cr_assert_eq(m->feeds[0].dst, 2);
    loom_model_free(m);
}

/* Paths are taken relative to the model file's folder. */
Test(model_file, the_example_models_load)
{
    const char *models[] = {"models/gcn2_cora.model", "models/gcn2_cora500.model"};
    for (int k = 0; k < 2; k++) {
        loom_model *m = NULL;
        loom_error err;
        cr_assert_eq(loom_model_load(models[k], 1, &m, &err), LOOM_OK, "%s: %s:%d: %s", models[k], err.file, err.line,
                     err.msg);
        cr_assert_eq(m->ncalls, 4);
        cr_assert_eq(m->ntasks, 4, "four different kernels");
        cr_assert_eq(m->nfeeds, 3);
        cr_assert_eq(m->noutputs, 1);
        cr_assert_eq(m->outputs[0].call, 3);
        loom_model_free(m);
    }
}
