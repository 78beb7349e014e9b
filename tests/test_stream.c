/* Streaming (non-temporal) workspace copy-out (issue 13; the "stream"
 * annotation, dsl/schedule/query.h LOOM_ANN_STREAM): SpMM with a whole-row workspace
 * streamed out is correct against the reference for row widths that take
 * every path of loom_stream_copy (a 64-byte row, a row of 20 floats whose
 * rows start unaligned, a 512-byte row), parallel and serial; the generated
 * C streams and fences each thread's stores; the simulator writes the
 * streamed lines without reading them; the feature stream_bytes sees them;
 * the validator's stream-store rule refuses the annotation where the output
 * would be written more than once or where there is no workspace; and the
 * SpMM design space draws streamed schedules that validate and run
 * correctly. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../costmodel/features.h"
#include "../modules/module.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/build.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../traces/validate.h"
#include "fixture.h"

/* SpMM's loops i, k, f (that order); li/lk/lf their loop RVs */
static void spmm_loops(loom_schedule *sch, const loom_program *prog, int *b, int *li, int *lk, int *lf)
{
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "C", b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, *b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    for (int p = 0; p < n; p++) {
        const char *nm = prog->vars[sch->stages[0].iters[sch->rvs[loops[p]].iter].var].name;
        *(strcmp(nm, "i") == 0 ? li : strcmp(nm, "k") == 0 ? lk : lf) = loops[p];
    }
    int perm[3] = {*li, *lk, *lf};
    cr_assert_eq(loom_reorder(sch, perm, 3, &err), LOOM_OK, "%s", err.msg);
}

/* i (parallel unless serial), k, f: a whole-row workspace at i, its
 * copy-out annotated stream = value */
static void ws_spmm(loom_schedule *sch, const loom_program *prog, int parallel, int64_t value)
{
    loom_error err;
    loom_error_clear(&err);
    int b, li, lk, lf;
    spmm_loops(sch, prog, &b, &li, &lk, &lf);
    if (parallel)
        cr_assert_eq(loom_parallel(sch, li, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_cache_write(sch, b, li, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_annotate(sch, li, LOOM_ANN_STREAM, -1, value, &err), LOOM_OK, "%s", err.msg);
}

static char *gen_c(const loom_schedule *sch, lir_func **fout)
{
    loom_error err;
    loom_error_clear(&err);
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
    char *c = NULL;
    cr_assert_eq(loom_codegen_c(f, "k", &c, &err), LOOM_OK, "%s", err.msg);
    if (fout)
        *fout = f;
    else
        loom_lir_func_free(f);
    return c;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

Test(stream, correct_and_fenced, .timeout = 240)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    static const char *const FS[] = {"F=16", "F=20", "F=128"};
    for (size_t k = 0; k < sizeof FS / sizeof *FS; k++)
        for (int par = 0; par < 2; par++) {
            const char *args[] = {"A=tests/data/skew_rows.mtx", FS[k]};
            loom_dataset *ds = NULL;
            loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
            loom_schedule *sch = malloc(sizeof *sch);
            ws_spmm(sch, prog, par, LOOM_STREAM_ON);
            loom_violation v;
            cr_assert_eq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "%s: %s", FS[k], v.msg);
            char what[64];
            snprintf(what, sizeof what, "streamed workspace, %s, %s", FS[k], par ? "parallel" : "serial");
            fx_run_checked(sch, ds, what);
            char *c = gen_c(sch, NULL);
            /* the row's copy-out in each branch of its guard (lir.h loom_lir_workspace_row_loop) */
            cr_assert_eq(count(c, "loom_stream_copy(&C_vals"), 2, "%s: a streamed copy-out a branch:\n%s", what, c);
            cr_assert_eq(count(c, "if (A2_pos[pA1] < A2_pos[(pA1 + 1)]) {"), 1, "%s: the row's guard:\n%s", what, c);
            cr_assert_not_null(strstr(c, "_mm_sfence"), "%s", c);
            /* one fence per thread (the parallel loop's region) or one after the serial nest */
            cr_assert_eq(count(c, "loom_stream_fence();"), 1, "%s:\n%s", what, c);
            if (par) {
                cr_assert_not_null(strstr(c, "#pragma omp for schedule(static) nowait"), "%s", c);
                cr_assert_null(strstr(c, "omp parallel for"), "%s", c);
            }
            free(c);
            /* the same schedule with value 1 (a workspace, ordinary stores) */
            ws_spmm(sch, prog, par, 1);
            c = gen_c(sch, NULL);
            cr_assert_null(strstr(c, "loom_stream"), "%s", c);
            free(c);
            free(sch);
            loom_program_free(prog);
            loom_dataset_free(ds);
        }
}

/* A parallel loop under a serial one (i.0 serial, i.1 parallel, the
 * workspace at i.1): the parallel loop still fences each thread's stores,
 * and the serial loop fences after itself */
Test(stream, parallel_under_serial_fences_each_thread, .timeout = 120)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    const char *args[] = {"A=tests/data/skew_rows.mtx", "F=20"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    int b, li, lk, lf, io[2];
    spmm_loops(sch, prog, &b, &li, &lk, &lf);
    const int64_t f[2] = {0, 8};
    cr_assert_eq(loom_split(sch, li, 2, NULL, f, io, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_parallel(sch, io[1], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_cache_write(sch, b, io[1], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_annotate(sch, io[1], LOOM_ANN_STREAM, -1, LOOM_STREAM_ON, &err), LOOM_OK, "%s", err.msg);
    loom_violation v;
    cr_assert_eq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "%s", v.msg);
    fx_run_checked(sch, ds, "a streamed workspace at a parallel loop under a serial one");
    char *c = gen_c(sch, NULL);
    cr_assert_not_null(strstr(c, "#pragma omp for schedule(static) nowait"), "%s", c);
    cr_assert_eq(count(c, "loom_stream_fence();"), 2, "%s", c);
    free(c);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* Simulated on Cora at F = 128: the streamed copy-out reads none of C's
 * lines from memory (no read for ownership): the last level misses C's
 * lines (rows x F x 4 / 64) fewer times; and the stream_bytes feature
 * counts C's bytes exactly (rows x F x 4, each written once).  The DRAM
 * bytes come out equal in the simulator (C's lines read for ownership in
 * one, written by the streaming stores in the other; the dirty lines a run
 * leaves in the caches are not counted): the test compared them until
 * model 21, and passed on the sampling's error. */
Test(stream, simulated_and_featured, .timeout = 180)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    const char *args[] = {"A=data/cora_adj.mtx", "F=128"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_data_stats st;
    cr_assert_eq(loom_data_stats_compute(ds, &st, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_sim_result r[2];
    int fk = loom_feature_find("kernel.stream_bytes");
    cr_assert_geq(fk, 0, "no kernel.stream_bytes feature");
    int D = loom_feature_count();
    double *raw = malloc(sizeof(double) * (size_t)D);
    for (int s = 0; s < 2; s++) {
        ws_spmm(sch, prog, 1, s ? LOOM_STREAM_ON : 1);
        lir_func *f = NULL;
        free(gen_c(sch, &f));
        cr_assert_eq(loom_sim_run(f, ds, &t, &r[s], &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_features_extract_raw(f, &st, raw, &err), LOOM_OK, "%s", err.msg);
        double want = s ? 4.0 * 128 * (double)ds->t[0].dims[0] : 0;
        cr_assert(raw[fk] >= 0.99 * want && raw[fk] <= 1.01 * want + 1, "stream_bytes %g, expected %g", raw[fk], want);
        loom_lir_func_free(f);
    }
    int last = t.ncaches - 1;
    double c_lines = 4.0 * 128 * (double)ds->t[0].dims[0] / 64;
    printf("stream: cora F=128 simulated: %.4g s, %.4g last-level misses with ordinary stores; %.4g s, %.4g "
           "streamed (C: %.0f lines)\n",
           r[0].latency_s, r[0].misses[last], r[1].latency_s, r[1].misses[last], c_lines);
    cr_assert_lt(r[1].misses[last], r[0].misses[last] - 0.9 * c_lines);
    free(raw);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* Model 88 (runtime/sim/sim_machine.h "Warm caches"): a buffer a STREAM
 * writes leaves no line in the caches, so it neither counts toward whether
 * a warm target's data fits in half its last level nor is loaded before the
 * run.  Cora SpMM at F = 128 with C streamed, serial, on spr-2c with
 * warm_caches and a 4 MiB L3: A, B and C are 2.9 MB (more than half the L3:
 * the run started cold on model 87, A's and B's lines from memory), A and B
 * alone 1.5 MB (they fit: the run starts warm).  Warm, the only bytes to
 * memory are C's streamed rows, rows x 128 x 4 by hand (1.43 MB with A's
 * 40 KB; 2.23 MB on model 87, B's lines from memory as the run first
 * touches them). */
Test(stream, a_streamed_output_does_not_count_against_the_warm_rule, .timeout = 180)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    t.warm_caches = 1;
    t.caches[t.ncaches - 1].size = 4 << 20;
    const char *args[] = {"A=data/cora_adj.mtx", "F=128"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    ws_spmm(sch, prog, 0, LOOM_STREAM_ON);
    lir_func *f = NULL;
    free(gen_c(sch, &f));
    loom_sim_result r;
    cr_assert_eq(loom_sim_run(f, ds, &t, &r, &err), LOOM_OK, "%s", err.msg);
    double c_bytes = 4.0 * 128 * (double)ds->t[0].dims[0], b_bytes = 4.0 * 128 * (double)ds->t[0].dims[1];
    cr_log_info("streamed Cora F = 128 on a 4 MiB L3: %g DRAM bytes (C %g, B %g)", r.dram_bytes, c_bytes, b_bytes);
    cr_expect_geq(r.dram_bytes, 0.99 * c_bytes, "C's streamed rows go to memory: %g DRAM bytes", r.dram_bytes);
    cr_expect_lt(r.dram_bytes, c_bytes + 0.05 * b_bytes, "B was not prewarmed: %g DRAM bytes", r.dram_bytes);
    loom_lir_func_free(f);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* stream-store: on the nonzero loop (no workspace there), on a row loop
 * without a workspace, and on a workspace with the reduction outside it (the
 * copy-out adds partials: each element written once per nonzero chunk) */
/* The streamed copy's scalar head and tail (the elements before the first
 * aligned vector and after the last whole one) stay element moves.  GCC 12
 * recognises a plain `d[i] = s[i]` loop as a memcpy, and under the AVX2 and
 * SSE flags' -mmemcpy-strategy=vector_loop (runtime/measure/build.c)
 * expands a copy that short as a loop of one-byte moves: 28 iterations for
 * GCN2's 7-float output rows, which ran 11% slower for it (a 4-region gcn2
 * schedule on Cora, AVX2 flags on Emerald Rapids, 208 -> 176 us; issue 29,
 * found by comparing the simulator's instruction counts with callgrind's).
 * Compiled to assembly with the default 256- and 128-bit flags, for rows of
 * 7 and 20 floats, the kernel must load no single byte and call no memcpy.
 * Without the empty asm in loom_stream_copy's scalar loops this fails. */
Test(stream, copy_head_and_tail_are_element_moves, .timeout = 120)
{
    char dir[256], path[512], asm_[512], cmd[2048], line[512];
    fx_tmpdir(dir, sizeof dir, "stream-asm");
    static const char *const FS[] = {"F=7", "F=20"};
    static const int widths[] = {256, 128};
    for (size_t k = 0; k < sizeof FS / sizeof *FS; k++) {
        const char *args[] = {"A=tests/data/skew_rows.mtx", FS[k]};
        loom_dataset *ds = NULL;
        loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
        loom_schedule *sch = malloc(sizeof *sch);
        ws_spmm(sch, prog, 1, LOOM_STREAM_ON);
        char *c = gen_c(sch, NULL);
        snprintf(path, sizeof path, "%s/k.c", dir);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(c, f);
        fclose(f);
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
            snprintf(asm_, sizeof asm_, "%s/k%d.s", dir, widths[w]);
            snprintf(cmd, sizeof cmd, "cc %s -S %s -o %s 2>/dev/null", loom_build_default_cflags(widths[w]), path,
                     asm_);
            if (system(cmd) != 0)
                cr_skip_test("cc -S failed (no compiler?)");
            f = fopen(asm_, "r");
            cr_assert_not_null(f);
            int byte_loads = 0, calls = 0;
            while (fgets(line, sizeof line, f)) {
                byte_loads += strstr(line, "\tmovzbl\t") != NULL || strstr(line, "\tmovb\t(") != NULL;
                calls += strstr(line, "memcpy") != NULL;
            }
            fclose(f);
            cr_assert_eq(byte_loads, 0, "%s, %d-bit flags: the streamed copy moves single bytes (%s)", FS[k],
                         widths[w], asm_);
            cr_assert_eq(calls, 0, "%s, %d-bit flags: the streamed copy calls memcpy", FS[k], widths[w]);
        }
        free(c);
        free(sch);
        loom_program_free(prog);
        loom_dataset_free(ds);
    }
    fx_rmtree(dir);
}

Test(stream, rule_stream_store)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    const char *args[] = {"A=tests/data/skew_rows.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    int b, li, lk, lf;
    loom_violation v;
    for (int c = 0; c < 3; c++) {
        spmm_loops(sch, prog, &b, &li, &lk, &lf);
        int at = li;
        if (c == 0) {
            cr_assert_eq(loom_cache_write(sch, b, li, &err), LOOM_OK, "%s", err.msg);
            at = lk;
        } else if (c == 2) {
            /* i, k, f.0, f.1 with the workspace at f.0: k is outside it */
            int fo[2];
            const int64_t f[2] = {2, 8};
            cr_assert_eq(loom_split(sch, lf, 2, NULL, f, fo, &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(loom_cache_write(sch, b, fo[0], &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "the accumulating workspace: %s", v.msg);
            fx_run_checked(sch, ds, "an accumulating workspace, not streamed");
            at = fo[0];
        }
        cr_assert_eq(loom_annotate(sch, at, LOOM_ANN_STREAM, -1, LOOM_STREAM_ON, &err), LOOM_OK, "%s", err.msg);
        cr_assert_neq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "case %d validated", c);
        cr_assert_str_eq(v.rule, "stream-store", "case %d: %s", c, v.msg);
    }
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* The SpMM space (cora500, F = 128, cpu limits of the test target) draws
 * the three-way register-tile decision; the draws that stream validate,
 * stream in their C and compute the right values (the first few run). */
Test(stream, space_draws_streamed_schedules, .timeout = 300)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    const char *args[] = {"A=data/cora500_adj.mtx", "F=128"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    loom_space_set_limits(space, &lim);
    loom_schedule *sch = malloc(sizeof *sch);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    int streamed = 0, plain_ws = 0, ran = 0;
    for (int d = 0; d < 300 && ran < 3; d++) {
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        if (loom_validate(sch, &lim, &v, &err) != LOOM_OK)
            continue;
        const loom_stage *S = &sch->stages[0];
        int64_t sv = 0;
        for (int p = 0; p < S->nloops; p++)
            for (int a = 0; a < S->loops[p].nann; a++)
                if (!strcmp(S->loops[p].ann[a].key, LOOM_ANN_STREAM))
                    sv = S->loops[p].ann[a].value;
        if (S->cache_iter < 0)
            continue;
        if (sv < LOOM_STREAM_ON) {
            plain_ws++;
            continue;
        }
        streamed++;
        char *c = gen_c(sch, NULL);
        int has = strstr(c, "loom_stream_copy(&C_vals") != NULL;
        free(c);
        if (!has)
            continue; /* a workspace that is not one contiguous run keeps ordinary stores */
        fx_run_checked(sch, ds, "a streamed draw of the SpMM space");
        ran++;
    }
    printf("stream: SpMM cora500 F=128: %d streamed workspaces, %d ordinary ones drawn; %d streamed kernels run\n",
           streamed, plain_ws, ran);
    cr_assert_gt(plain_ws, 0);
    cr_assert_gt(ran, 0, "no draw streamed its copy-out");
    gsl_rng_free(rng);
    free(sch);
    loom_space_free(space);
    loom_registry_free(reg);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* GCN2 on cora500 (the two new tests below): Z1 = A T1 with a whole-row
 * workspace at its row loop i, streamed when stream is set; returns i's
 * loop RV. */
static int gcn2_z1_rows(loom_schedule *sch, const loom_program *prog, int stream)
{
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int z1, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "Z1", &z1, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, z1, loops, &n, &err), LOOM_OK, "%s", err.msg);
    int li = loops[0];
    cr_assert_str_eq(prog->vars[sch->stages[sch->rvs[li].stage].iters[sch->rvs[li].iter].var].name, "i");
    cr_assert_eq(loom_cache_write(sch, z1, li, &err), LOOM_OK, "%s", err.msg);
    if (stream)
        cr_assert_eq(loom_annotate(sch, li, LOOM_ANN_STREAM, -1, LOOM_STREAM_ON, &err), LOOM_OK, "%s", err.msg);
    return li;
}

/* stream-store, a block placed inside: GCN2's Z1 = A T1 with a whole-row
 * workspace streamed at its row loop is valid alone (and correct); with
 * H1 = relu(Z1) reverse-computed at that row loop it is refused -- the
 * relu would read each row right after the non-temporal store sent it
 * towards memory (measured 11x the loop's time on Cora, traces/validate.c
 * check_stream) -- and the same placement without the stream is valid. */
Test(stream, rule_stream_store_consumer_inside)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    const char *args[] = {"A=data/cora500_adj.mtx", "X=data/cora500_features.mtx"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/gcn2.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_violation v;
    for (int c = 0; c < 3; c++) { /* 0: streamed alone, 1: streamed with relu inside, 2: relu inside alone */
        int h1, li = gcn2_z1_rows(sch, prog, c < 2);
        if (c > 0) {
            cr_assert_eq(loom_get_block(sch, "H1", &h1, &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(loom_reverse_compute_at(sch, h1, li, &err), LOOM_OK, "%s", err.msg);
        }
        loom_status st = loom_validate(sch, &lim, &v, &err);
        if (c == 1) {
            cr_assert_neq(st, LOOM_OK, "streamed with the relu inside validated");
            cr_assert_str_eq(v.rule, "stream-store", "%s", v.msg);
            cr_assert(strstr(v.msg, "placed at one of its loops"), "%s", v.msg);
        } else {
            cr_assert_eq(st, LOOM_OK, "case %d: %s", c, v.msg);
            fx_run_checked(sch, ds, c == 0 ? "Z1 streamed" : "relu at Z1's rows");
        }
    }
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* The simulator (sim_exec.c exec_stream): a non-temporal store leaves no
 * copy of its lines in the core's caches, so a later pass that reads the
 * streamed output goes to memory for it.  GCN2 on cora500 with Z1's rows
 * streamed (the relu a pass of its own at the root), on a target with warm
 * caches (Z1's lines cached from the previous run, as on a calibrated
 * host): with ordinary stores Z1 never leaves the caches; streamed, it is
 * written to memory and read back from it -- twice its bytes more (before
 * the eviction the read back hit the stale cached copy: once). */
Test(stream, sim_streamed_lines_leave_the_caches)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    t.warm_caches = 1;
    loom_limits lim = loom_target_limits(&t);
    const char *args[] = {"A=data/cora500_adj.mtx", "X=data/cora500_features.mtx"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/gcn2.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_violation v;
    loom_sim_result r[2];
    double z1_bytes = 0;
    for (int c = 0; c < 2; c++) { /* 0: ordinary stores, 1: streamed */
        (void)gcn2_z1_rows(sch, prog, c);
        cr_assert_eq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "case %d: %s", c, v.msg);
        lir_func *f = NULL;
        cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_sim_run(f, ds, &t, &r[c], &err), LOOM_OK, "%s", err.msg);
        loom_lir_func_free(f);
        z1_bytes = 4.0 * (double)ds->t[prog->stmts[1].lhs].dims[0] * (double)ds->t[prog->stmts[1].lhs].dims[1];
    }
    cr_log_info("stream: gcn2 cora500 DRAM %.0f bytes ordinary, %.0f streamed; Z1 %.0f bytes; L1 misses %.0f, %.0f", r[0].dram_bytes,
                r[1].dram_bytes, z1_bytes, r[0].misses[0], r[1].misses[0]);
    cr_expect_geq(r[1].dram_bytes, r[0].dram_bytes + 1.9 * z1_bytes, "the streamed Z1 written and read back");
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* Model 74 (sim_exec.c exec_stream): loom_stream_copy moves the elements
 * before the destination's first vector-aligned address and after its last
 * whole vector one by one with ordinary stores, and a row of 7 floats holds
 * no whole vector on AVX2 or AVX-512: all of it.  gcn2's H2 rows streamed
 * so measured 1.07-1.08x the ordinary copy-out on the Zen 5 host (one-
 * decision pairs, issue 29's re-measured records) and simulated 1.01-1.02x
 * as one non-temporal vector a row.  SpMM on skew_rows at F = 7, the rows'
 * workspace streamed against copied out: at least 6 more stores a row, and
 * no more DRAM bytes (no line leaves by a streaming store).  Fails on model
 * 73 (one store a row either way). */
Test(stream, sim_a_row_shorter_than_a_vector_is_copied_by_elements)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    const char *args[] = {"A=tests/data/skew_rows.mtx", "F=7"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_sim_result r[2];
    for (int s = 0; s < 2; s++) {
        ws_spmm(sch, prog, 1, s ? LOOM_STREAM_ON : 1);
        lir_func *f = NULL;
        free(gen_c(sch, &f));
        cr_assert_eq(loom_sim_run(f, ds, &t, &r[s], &err), LOOM_OK, "%s", err.msg);
        loom_lir_func_free(f);
    }
    double rows = (double)ds->t[0].dims[0];
    cr_log_info("stream: F = 7, %g rows: stores %g copied out, %g streamed; DRAM %g, %g bytes", rows, r[0].stores,
                r[1].stores, r[0].dram_bytes, r[1].dram_bytes);
    cr_expect_geq(r[1].stores, r[0].stores + 6 * rows, "streamed %g stores, copied out %g", r[1].stores, r[0].stores);
    cr_expect_leq(r[1].dram_bytes, 1.01 * r[0].dram_bytes, "streamed %g DRAM bytes, copied out %g", r[1].dram_bytes,
                  r[0].dram_bytes);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* What the compiler makes of the C in src: `cc CFLAGS EXTRA -o k.EXT k.c`
 * (EXT "s" for -S, "i" for -E), read back as a string the caller frees. */
static char *compiled(const char *src, const char *cflags, const char *extra, const char *ext, const char *what)
{
    char dir[256], cpath[300], opath[300], cmd[1200];
    fx_tmpdir(dir, sizeof dir, "stream-cc");
    snprintf(cpath, sizeof cpath, "%s/k.c", dir);
    snprintf(opath, sizeof opath, "%s/k.%s", dir, ext);
    FILE *fp = fopen(cpath, "w");
    cr_assert_not_null(fp);
    fputs(src, fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "%s %s %s -o %s %s 2>&1", loom_build_cc(), cflags, extra, opath, cpath);
    cr_assert_eq(system(cmd), 0, "%s: %s failed", what, cmd);
    char *s = fx_slurp(opath);
    fx_rmtree(dir);
    return s;
}

/* The assembly of the C in src as a string (cc -S with loom's flags for
 * the host, GCC's generic tuning and memsets expanded as `rep stosq`, as
 * GCC 12 does for 512 bytes under -march=native on the Emerald Rapids
 * host: the AVX2 and SSE builds' own -mmemset-strategy is overridden, and
 * with it their LOOM_MEMSET_VECTOR_BYTES, so the check means the same on
 * every host); the caller frees it. */
static char *assembly(const char *src, const char *what)
{
    loom_limits host = loom_target_cpu_limits();
    return compiled(src, loom_build_default_cflags(host.vector_lanes * 32),
                    "-mtune=generic -mmemset-strategy=rep_8byte:-1:noalign -ULOOM_MEMSET_VECTOR_BYTES -S", "s", what);
}

/* SpMM on skew_rows at F = 128, its parallel rows' 512-byte workspace
 * streamed (the caller frees the schedule, program and dataset). */
static loom_schedule *streamed_f128(loom_program **prog, loom_dataset **ds)
{
    const char *args[] = {"A=tests/data/skew_rows.mtx", "F=128"};
    *prog = fx_bind("workloads/spmm.loom", args, 2, 1, ds);
    loom_schedule *sch = malloc(sizeof *sch);
    ws_spmm(sch, *prog, 1, LOOM_STREAM_ON);
    return sch;
}

/* A kernel that streams zeroes its workspace with vector stores, not a
 * memset: GCC expands a 512-byte memset as `rep stosq`, and a fast-string
 * store waits for the non-temporal stores before it to reach memory --
 * the streamed PubMed F = 128 SpMM ran 2.3x slower for it on an Intel
 * AVX-512 host (runtime/lower/codegen_helpers.c).  Checked in the
 * assembly with memsets expanded so, against the same C with the memset put
 * back, which GCC does expand so (the check can see it). */
Test(stream, zero_fill_is_no_fast_string_store, .timeout = 120)
{
    loom_dataset *ds = NULL;
    loom_program *prog = NULL;
    loom_schedule *sch = streamed_f128(&prog, &ds);
    char *c = gen_c(sch, NULL);
    cr_assert_eq(count(c, "loom_stream_zero(ws_C, 128);"), 1, "the workspace zeroed by loom_stream_zero:\n%s", c);
    /* memset only where the flags say a memset of 512 bytes is vector stores */
    cr_assert_eq(count(c, "memset(ws_C"), 1, "%s", c);
    cr_assert_eq(count(c, "#if defined(LOOM_MEMSET_VECTOR_BYTES) && LOOM_MEMSET_VECTOR_BYTES >= 512"), 1, "%s", c);
    char *s = assembly(c, "streamed");
    cr_assert_null(strstr(s, "rep stos"), "a fast-string store in the streamed kernel:\n%s", s);
    cr_assert_not_null(strstr(s, "movntps"), "no non-temporal store in the streamed kernel:\n%s", s);
    free(s);
    /* the counterfactual: the same C with the memset the fill was before */
    const char *call = "loom_stream_zero(ws_C, 128);", *mset = "memset(ws_C, 0, sizeof(float) * (size_t)(128));";
    char *at = strstr(c, call), *m = malloc(strlen(c) + strlen(mset) + 1);
    sprintf(m, "%.*s%s%s", (int)(at - c), c, mset, at + strlen(call));
    s = assembly(m, "memset");
    cr_assert_not_null(strstr(s, "rep stos"), "GCC no longer expands the 512-byte memset as rep stos: the check above "
                                              "sees nothing (%s)", loom_build_cc());
    free(s);
    free(m);
    free(c);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* A kernel that streams one statement's rows keeps memset for the zero
 * fills loom_stream_zero is not needed for: a small workspace (GCC expands
 * its memset as vector stores, never `rep stos`, and SRA keeps the
 * workspace in registers; loom_stream_zero's empty asm takes its address
 * and puts every accumulation into it through memory) and a kernel
 * intermediate's fill before the statements.  GCN2 on cora500 with Z1's
 * 16-float row workspace kept in registers and H2's 7-float rows streamed:
 * before, all four fills were loom_stream_zero and such a schedule on Cora
 * ran 1.35-1.64x the same one with ordinary stores on Zen 5 (issue 29;
 * runtime/lower/codegen.c stream_zero_fill).  The kernel stays correct. */
Test(stream, small_workspace_fills_keep_memset, .timeout = 120)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=data/cora500_adj.mtx", "X=data/cora500_features.mtx"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/gcn2.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    (void)gcn2_z1_rows(sch, prog, 0);
    int h2, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "H2", &h2, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, h2, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_parallel(sch, loops[0], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_cache_write(sch, h2, loops[0], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_annotate(sch, loops[0], LOOM_ANN_STREAM, -1, LOOM_STREAM_ON, &err), LOOM_OK, "%s", err.msg);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    loom_violation v;
    cr_assert_eq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "%s", v.msg);
    char *c = gen_c(sch, NULL);
    /* once a branch of the row's guard (lir.h loom_lir_workspace_row_loop) */
    cr_assert_eq(count(c, "loom_stream_copy(&H2_vals"), 2, "H2's rows are not streamed:\n%s", c);
    cr_assert_eq(count(c, "memset(ws_Z1, 0, sizeof(float) * (size_t)(16));"), 1, "Z1's workspace:\n%s", c);
    cr_assert_eq(count(c, "memset(ws_H2, 0, sizeof(float) * (size_t)(7));"), 1, "H2's workspace:\n%s", c);
    cr_assert_eq(count(c, "memset(T1_vals, 0"), 1, "the intermediate T1's fill:\n%s", c);
    cr_assert_eq(count(c, "loom_stream_zero(") - count(c, "loom_stream_zero(float"), 0,
                 "a fill by loom_stream_zero:\n%s", c);
    fx_run_checked(sch, ds, "H2 streamed, Z1's workspace in registers");
    free(c);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* A kernel that streams zeroes a workspace of a literal size with memset
 * under loom's x86 flags, whose -mmemset-strategy makes a memset of
 * up to 2 KiB vector stores (they define LOOM_MEMSET_VECTOR_BYTES; checked
 * by test_build.c workspace_fill_and_copy_are_vector_stores): GCC can then
 * keep the workspace in registers, where loom_stream_zero's empty asm keeps
 * it in memory -- a store and a reload of each vector a row, which made
 * PubMed F = 128's streamed schedules 1.04-1.08x the ordinary copy-out
 * under the AVX2 flags on Zen 5, and 1.5-1.6x under the AVX-512 flags on
 * Zen 4 before those took the strategy too (runtime/measure/build.c).  The
 * kernel built with the AVX2 flags is correct. */
Test(stream, workspace_fill_is_memset_under_vector_memset_flags, .timeout = 120)
{
#if !defined(__x86_64__)
    cr_skip_test("loom's string-op flags are x86-64's");
#else
    loom_dataset *ds = NULL;
    loom_program *prog = NULL;
    loom_schedule *sch = streamed_f128(&prog, &ds);
    char *c = gen_c(sch, NULL);
    /* the C tells whoever builds it elsewhere which flags keep the memset */
    cr_assert_eq(count(c, "-DLOOM_MEMSET_VECTOR_BYTES=2048"), 1, "the build comment:\n%.600s", c);
    static const int bits[] = {256, 128, 512};
    for (size_t k = 0; k < sizeof bits / sizeof *bits; k++) {
        char *pp = compiled(c, loom_build_default_cflags(bits[k]), "-E -P", "i", "preprocess");
        /* every x86 build defines LOOM_MEMSET_VECTOR_BYTES: one memset, no loom_stream_zero */
        int m = count(pp, "memset(ws_C, 0"), z = count(pp, "loom_stream_zero(ws_C");
        free(pp);
        cr_assert_eq(m, 1, "%d-bit flags: %d memsets of ws_C, expected 1", bits[k], m);
        cr_assert_eq(z, 0, "%d-bit flags: %d loom_stream_zero fills of ws_C, expected 0", bits[k], z);
    }
    free(c);
    if (!__builtin_cpu_supports("avx2"))
        cr_skip_test("the AVX2 build runs only on an AVX2 host");
    fx_run_checked_cflags(sch, ds, loom_build_default_cflags(256), "the AVX2 build of the streamed kernel");
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
#endif
}

/* Model 76 (runtime/sim/sim_setup.c first_touches, sim.h "Sampling"): a
 * sampled run's first touches of the gathered B are hits in the last level
 * only in the share of it the kernel's cached buffers leave.  Cora F = 128 on
 * spr-2c with a 2 MiB last level: B (1.4 MB) fits alone, B and C (1.4 MB
 * more) do not.  Copied out with ordinary stores, C's lines of the skipped
 * rows evict B's in the whole run; streamed, they bypass the caches.  On
 * Zen 4 the ordinary copy-out of Facebook F = 128 measured 1.2-1.4x the
 * streamed one, which the sampled simulation had at 0.98-1.0x (issue 29,
 * 2026-12-06).  Checked: sampled, the ordinary copy-out reads more from
 * memory than the streamed one, as the whole runs do (on model 75 the
 * sampled runs ordered them the other way). */
Test(stream, sampled_ordinary_copy_out_evicts_the_gathered_rows, .timeout = 180)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    t.caches[t.ncaches - 1].size = 2 << 20;
    t.warm_caches = 1; /* the warm rule (a calibrated host's) */
    const char *args[] = {"A=data/cora_adj.mtx", "F=128"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_sim_result r[2][2]; /* [streamed][whole] */
    for (int s = 0; s < 2; s++) {
        ws_spmm(sch, prog, 1, s ? LOOM_STREAM_ON : 1);
        lir_func *f = NULL;
        free(gen_c(sch, &f));
        for (int w = 0; w < 2; w++)
            cr_assert_eq(loom_sim_run_budget(f, ds, &t, w ? 1e9 : 2e5, &r[s][w], &err), LOOM_OK, "%s", err.msg);
        cr_assert(r[s][0].sampled && !r[s][1].sampled, "streamed %d: sampled %d, whole %d", s, r[s][0].sampled,
                  r[s][1].sampled);
        loom_lir_func_free(f);
    }
    double c_bytes = 4.0 * 128 * (double)ds->t[0].dims[0];
    printf("stream: cora F=128, 2 MiB last level, DRAM bytes ordinary / streamed: sampled %.4g / %.4g, whole %.4g / "
           "%.4g (C: %.4g bytes)\n",
           r[0][0].dram_bytes, r[1][0].dram_bytes, r[0][1].dram_bytes, r[1][1].dram_bytes, c_bytes);
    cr_assert_gt(r[0][1].dram_bytes - r[1][1].dram_bytes, 0, "whole runs");
    cr_assert_gt(r[0][0].dram_bytes - r[1][0].dram_bytes, 0, "sampled runs");
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}
