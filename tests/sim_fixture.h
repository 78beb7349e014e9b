/* Shared by the simulator's tests (tests/test_sim.c, tests/test_sim_bandwidth.c,
 * tests/test_sim_kernels.c): a hand-computable target, a scratch directory
 * for workload files, the Sapphire Rapids model of targets/, and a workload
 * lowered under the naive schedule (kern: load, sim, unload). */
#ifndef LOOM_TESTS_SIM_FIXTURE_H
#define LOOM_TESTS_SIM_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "fixture.h"

/* A one-core target whose model parameters make the arithmetic easy:
 * 1 GHz, one FMA pipe, one load and one store port, issue width 4, 512-bit
 * vectors (16 lanes), one private L1 level. */
static inline void tiny_target(loom_target *t, int cores, long long l1_bytes, int assoc)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"name\": \"tiny\", \"cores\": %d, \"vector_bits\": 512, \"fma_units\": 1, \"ghz\": 1.0,"
             " \"issue_width\": 4, \"load_ports\": 1, \"store_ports\": 1,"
             " \"caches\": [{\"name\": \"L1d\", \"size\": %lld, \"assoc\": %d, \"line\": 64, \"latency\": 4,"
             " \"shared\": false}],"
             " \"memory\": {\"bandwidth\": 1.28e11, \"core_bandwidth\": 6.4e10, \"latency_ns\": 100},"
             " \"model\": {\"mlp\": 2, \"overlap\": 0.5, \"gather_cycles_per_lane\": 0, \"masked_lane_cycles\": 0,"
             " \"branch_miss_cycles\": 10, \"parallel_overhead_ns\": 1000, \"autovectorize\": true}}",
             cores, l1_bytes, assoc);
    loom_error err;
    cr_assert_eq(loom_target_parse(json, "<tiny>", t, &err), LOOM_OK, "%s", err.msg);
}

static char tmpdir[256];

/* the test process removes its directory when it exits */
static void rm_tmpdir(void)
{
    if (tmpdir[0])
        fx_rmtree(tmpdir);
}

static inline const char *write_tmp(const char *name, const char *text)
{
    static char path[8][512];
    static int k;
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/loom-test-sim-XXXXXX");
        cr_assert_not_null(mkdtemp(tmpdir));
        atexit(rm_tmpdir);
    }
    char *p = path[k++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "w");
    cr_assert_not_null(fp);
    fputs(text, fp);
    fclose(fp);
    return p;
}

static inline loom_target spr(void)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_load("targets/spr-2c.json", &t, &err), LOOM_OK, "%s", err.msg);
    return t;
}

/* spr() as an AVX2 host loom calibrate wrote (8 lanes, 16 registers,
 * peel_times and issue_chain_norm set): the keys the calibrated-target
 * models (15, 34, 38, 39) need. */
static inline loom_target avx2_calibrated(void)
{
    loom_target t = spr();
    t.vector_bits = 256;
    t.vector_registers = 16;
    t.peel_times = 16;
    t.issue_chain_norm = 2;
    return t;
}

/* A workload (its text) lowered under the naive schedule, with its data:
 * tensor's matrix from mtx when tensor is not NULL (serial: no parallel
 * loop). */
typedef struct kern {
    loom_program *prog;
    loom_dataset *ds;
    lir_func *f;
} kern;

static inline void load(kern *k, const char *workload_text, const char *tensor, const char *mtx, int serial)
{
    loom_error err;
    memset(k, 0, sizeof *k);
    const char *w = write_tmp("w.loom", workload_text);
    cr_assert_eq(loom_program_parse_file(w, &k->prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec spec;
    if (tensor) {
        snprintf(spec.tensor, sizeof spec.tensor, "%s", tensor);
        snprintf(spec.path, sizeof spec.path, "%s", mtx);
    }
    cr_assert_eq(loom_dataset_load(k->prog, &spec, tensor ? 1 : 0, NULL, 0, 1, &k->ds, &err), LOOM_OK, "%s",
                 err.msg);
    loom_schedule *s = malloc(sizeof *s);
    cr_assert_eq(loom_schedule_naive(s, k->prog, serial, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_lower(s, &k->f, &err), LOOM_OK, "%s", err.msg);
    free(s);
}

static inline void unload(kern *k)
{
    loom_lir_func_free(k->f);
    loom_dataset_free(k->ds);
    loom_program_free(k->prog);
}

static inline loom_sim_result sim(kern *k, const loom_target *t)
{
    loom_sim_result r;
    loom_error err;
    cr_assert_eq(loom_sim_run(k->f, k->ds, t, &r, &err), LOOM_OK, "%s", err.msg);
    return r;
}

/* A dense workload (its text, written to file) under the naive serial
 * schedule, not lowered (load() lowers it), with its inputs generated: the schedule (the caller frees it), block `name`'s
 * handle and its *n loops (n must hold that many). */
static inline loom_schedule *naive_dense(const char *file, const char *text, const char *name, loom_program **prog,
                                  loom_dataset **ds, int *b, int *loops, int *n)
{
    loom_error err;
    cr_assert_eq(loom_program_parse_file(write_tmp(file, text), prog, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_dataset_load(*prog, NULL, 0, NULL, 0, 1, ds, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *s = malloc(sizeof *s);
    cr_assert_eq(loom_schedule_naive(s, *prog, 1, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(s, name, b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(s, *b, loops, n, &err), LOOM_OK, "%s", err.msg);
    return s;
}

/* A workload parsed from text with its dataset and an empty LIR function
 * to write by hand; lir_sim runs it on t and frees all three. */
typedef struct lir_kern {
    loom_program *prog;
    loom_dataset *ds;
    lir_func *f;
} lir_kern;

static inline lir_kern lir_kern_new_data(const char *name, const char *text, const loom_data_spec *data, int ndata)
{
    lir_kern k;
    loom_error err;
    cr_assert_eq(loom_program_parse_file(write_tmp(name, text), &k.prog, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_dataset_load(k.prog, data, ndata, NULL, 0, 1, &k.ds, &err), LOOM_OK, "%s", err.msg);
    k.f = loom_lir_func_new(k.prog);
    cr_assert_not_null(k.f);
    return k;
}

static inline lir_kern lir_kern_new(const char *name, const char *text)
{
    return lir_kern_new_data(name, text, NULL, 0);
}

static inline loom_sim_result lir_sim(lir_kern *k, const loom_target *t)
{
    loom_sim_result r;
    loom_error err;
    cr_assert_eq(loom_sim_run(k->f, k->ds, t, &r, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(k->f);
    loom_dataset_free(k->ds);
    loom_program_free(k->prog);
    return r;
}

/* workloads/spmm.loom bound to matrix argument a_arg ("A=FILE") and f_arg
 * ("F=N") into *ds, a schedule to fill (malloc'd) into *sch, and one core of
 * spr-2c into *t: the program. */
static inline loom_program *spmm_open(const char *a_arg, const char *f_arg, loom_dataset **ds, loom_schedule **sch,
                               loom_target *t)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {a_arg, f_arg};
    *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, ds);
    *sch = malloc(sizeof **sch);
    cr_assert_not_null(*sch);
    cr_assert_eq(loom_target_load("spr-2c", t, &err), LOOM_OK, "%s", err.msg);
    t->cores = 1;
    return prog;
}

/* SpMM's schedule sch initialised afresh on prog (workloads/spmm.loom):
 * its nonzero loop k, the second of C's loops. */
static inline int spmm_nonzero_loop(loom_schedule *sch, const loom_program *prog)
{
    loom_error err;
    int b, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_str_eq(prog->vars[sch->stages[0].iters[sch->rvs[loops[1]].iter].var].name, "k");
    return loops[1];
}

/* SpMM's schedule sch (workloads/spmm.loom) finished as a row kernel -- C's
 * workspace at the row loop, the last loop vectorized -- lowered and
 * simulated on t with the calibrated-only rules off (r[0], issue_chain_norm
 * 0: a hand-written core) and on (r[1], 2). */
static inline void spmm_row_sim_both(loom_schedule *sch, const loom_dataset *ds, loom_target *t, loom_sim_result r[2])
{
    loom_error err;
    int b, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_cache_write(sch, b, loops[0], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_vectorize(sch, loops[n - 1], &err), LOOM_OK, "%s", err.msg);
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
    for (int cal = 0; cal < 2; cal++) {
        t->issue_chain_norm = cal ? 2 : 0;
        cr_assert_eq(loom_sim_run(f, ds, t, &r[cal], &err), LOOM_OK, "%s", err.msg);
    }
    loom_lir_func_free(f);
}

#endif
