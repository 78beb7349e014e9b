/* The sparse design space (issue 13): the default schedule's kernel is a
 * point of it (a whole-row position split, PosSplit chunk 0, and the tiles
 * [1, 1, 1, F] of the feature loop, whose extent-1 tiles the lowering
 * drops), the whole-row split computes the right values on a skewed
 * matrix, and its validator rule is broken by a schedule. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../modules/module.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../traces/validate.h"
#include "fixture.h"

static lir_func *lower_ok(loom_schedule *sch)
{
    loom_error err;
    loom_error_clear(&err);
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
    return f;
}

/* 1 if the schedule has a whole-row position split, every split tile but
 * the innermost of extent 1 and a register tile (CacheWrite): the draw that
 * should be the default's kernel. */
static int default_like(const loom_schedule *sch)
{
    const loom_stage *S = &sch->stages[0];
    int whole = 0;
    if (S->cache_iter < 0)
        return 0; /* the default accumulates the row in a workspace (CacheWrite) */
    for (int i = 0; i < S->niters; i++) {
        const loom_iter *I = &S->iters[i];
        if (I->kind == LOOM_ITER_POS && I->index == 1 && I->factor == 0)
            whole = 1;
        if (I->kind == LOOM_ITER_POS && I->index == 1 && I->factor != 0)
            return 0;
        if (I->kind == LOOM_ITER_SPLIT && I->index < I->nparts - 1 && loom_iter_extent(sch, 0, i) != 1)
            return 0;
    }
    if (S->nloops < 1 || S->iters[S->loops[0].iter].kind != LOOM_ITER_VAR)
        return 0; /* the default's row loop is outermost and not fused */
    for (int p = 0; p < S->nloops; p++)
        for (int a = 0; a < S->loops[p].nann; a++)
            if (S->loops[p].ann[a].value > 1)
                return 0; /* an unroll the default does not have */
    return whole;
}

/* Draw the space on SpMM (cora500, F = 16) until a draw is the default's
 * kernel: its simulated run must then count exactly what the default's
 * does (cycles, instructions, loads, stores, misses), the schedules differ
 * only in extent-1 loops and a chunk loop that runs once. */
Test(sparse_space, default_schedule_is_in_the_space, .timeout = 300)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    loom_schedule *def = malloc(sizeof *def), *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(def, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_default_schedule_for(def, &lim, &err), LOOM_OK, "%s", err.msg);
    lir_func *fd = lower_ok(def);
    loom_sim_result rd, rs;
    cr_assert_eq(loom_sim_run(fd, ds, &t, &rd, &err), LOOM_OK, "%s", err.msg);

    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    cr_assert_eq(loom_space_new(reg, NULL, "sim", &space, &err), LOOM_OK, "%s", err.msg);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    int found = 0, draws = 0;
    for (; draws < 100000 && !found; draws++) {
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        if (!default_like(sch) || loom_validate(sch, &lim, &v, &err) != LOOM_OK)
            continue;
        /* the loop order must be the default's too (i, k, f) */
        lir_func *fs = lower_ok(sch);
        cr_assert_eq(loom_sim_run(fs, ds, &t, &rs, &err), LOOM_OK, "%s", err.msg);
        loom_lir_func_free(fs);
        if (rs.loads != rd.loads || rs.stores != rd.stores)
            continue; /* another loop order */
        found = 1;
    }
    cr_assert(found, "no draw of %d is the default's kernel", draws);
    printf("sparse_space: the default's kernel drawn after %d draws: %.6g s (default %.6g s)\n", draws,
           rs.latency_s, rd.latency_s);
    cr_assert_eq(rs.cycles, rd.cycles, "sampled %.17g cycles, default %.17g", rs.cycles, rd.cycles);
    cr_assert_eq(rs.instructions, rd.instructions, "sampled %.17g instructions, default %.17g", rs.instructions,
                 rd.instructions);
    cr_assert_eq(rs.flops, rd.flops);
    cr_assert_eq(rs.misses[0], rd.misses[0]);
    cr_assert_eq(rs.dram_bytes, rd.dram_bytes);
    fx_run_checked(sch, ds, "the default-like draw");
    loom_lir_func_free(fd);
    gsl_rng_free(rng);
    loom_space_free(space);
    loom_registry_free(reg);
    free(def);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* A whole-row position split (chunk 0) by hand on a skewed matrix (one
 * dense row, many empty ones): the kernel matches the reference; and a
 * parallel outer loop of such a split is refused (pos-whole-row-outer). */
Test(sparse_space, whole_row_split_runs_and_its_rule_breaks, .timeout = 120)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=tests/data/skew_rows.mtx", "F=8"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, loops[LOOM_MAX_LOOPS], n, out[2];
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(n, 3);
    /* the loops in the order i, k, f; k (compressed) split whole */
    int li = -1, lk = -1, lf = -1;
    for (int p = 0; p < n; p++) {
        const char *nm = prog->vars[sch->stages[0].iters[sch->rvs[loops[p]].iter].var].name;
        *(strcmp(nm, "i") == 0 ? &li : strcmp(nm, "k") == 0 ? &lk : &lf) = loops[p];
    }
    int perm[3] = {li, lk, lf};
    cr_assert_eq(loom_reorder(sch, perm, 3, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_pos_split(sch, lk, "A", 0, -1, out, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_parallel(sch, li, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_cpu_limits();
    loom_violation v;
    cr_assert_eq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "%s", v.msg);
    fx_run_checked(sch, ds, "whole-row position split");
    /* the generated C has no chunk loop */
    lir_func *f = lower_ok(sch);
    char *c = NULL;
    cr_assert_eq(loom_codegen_c(f, "k", &c, &err), LOOM_OK, "%s", err.msg);
    cr_assert_null(strstr(c, "k_p0 <"), "a chunk loop was emitted:\n%s", c);
    free(c);
    loom_lir_func_free(f);

    cr_assert_eq(loom_unroll(sch, out[0], 4, &err), LOOM_OK, "%s", err.msg);
    cr_assert_neq(loom_validate(sch, &lim, &v, &err), LOOM_OK);
    cr_assert_str_eq(v.rule, "pos-whole-row-outer", "%s", v.msg);
    /* a negative chunk is refused by the primitive */
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_pos_split(sch, loops[n - 1], "A", -1, -1, out, &err), LOOM_ERR_INVALID);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* SpMM on skew_rows (rows 1-8 full: most nonzeros in the first rows) with
 * the row loop parallel, the nonzero loop whole, the feature loop
 * vectorized, and a balanced row partition of K chunks. */
static void balanced_spmm(loom_schedule *sch, const loom_program *prog, int64_t K)
{
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    int li = -1, lk = -1, lf = -1;
    for (int p = 0; p < n; p++) {
        const char *nm = prog->vars[sch->stages[0].iters[sch->rvs[loops[p]].iter].var].name;
        *(strcmp(nm, "i") == 0 ? &li : strcmp(nm, "k") == 0 ? &lk : &lf) = loops[p];
    }
    int perm[3] = {li, lk, lf};
    cr_assert_eq(loom_reorder(sch, perm, 3, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_parallel(sch, li, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_vectorize(sch, lf, &err), LOOM_OK, "%s", err.msg);
    if (K > 0)
        cr_assert_eq(loom_annotate(sch, li, "balance", -1, K, &err), LOOM_OK, "%s", err.msg);
}

/* Balanced rows: correct for chunk counts from 1 to more chunks than rows;
 * the simulator's busiest core has less work than with equal rows; the
 * validator's balance-rows rule refuses the annotation elsewhere. */
Test(sparse_space, balanced_rows_correct_and_even, .timeout = 180)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=tests/data/skew_rows.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    const int64_t Ks[] = {1, 2, 7, 32, 200};
    for (size_t k = 0; k < sizeof Ks / sizeof *Ks; k++) {
        balanced_spmm(sch, prog, Ks[k]);
        loom_violation v;
        cr_assert_eq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "K=%lld: %s", (long long)Ks[k], v.msg);
        char what[64];
        snprintf(what, sizeof what, "balanced rows, K = %lld", (long long)Ks[k]);
        fx_run_checked(sch, ds, what);
    }
    /* simulated: the busiest of 2 cores, equal rows against K = 2 */
    double busiest[2];
    for (int bal = 0; bal < 2; bal++) {
        balanced_spmm(sch, prog, bal ? 2 : 0);
        lir_func *f = lower_ok(sch);
        loom_sim_result r;
        cr_assert_eq(loom_sim_run(f, ds, &t, &r, &err), LOOM_OK, "%s", err.msg);
        busiest[bal] = fmax(r.core_cycles[0], r.core_cycles[1]);
        loom_lir_func_free(f);
    }
    printf("sparse_space: skew_rows F=16, busiest core %.0f cycles with equal rows, %.0f balanced\n", busiest[0],
           busiest[1]);
    cr_assert_lt(busiest[1], 0.9 * busiest[0]);

    /* balance-rows: on a serial row loop, and on the feature loop */
    balanced_spmm(sch, prog, 4);
    sch->stages[0].loops[0].kind = LOOM_LOOP_SERIAL;
    loom_violation v;
    cr_assert_neq(loom_validate(sch, &lim, &v, &err), LOOM_OK);
    cr_assert_str_eq(v.rule, "balance-rows", "%s", v.msg);
    balanced_spmm(sch, prog, 0);
    int b, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_annotate(sch, loops[n - 1], "balance", -1, 4, &err), LOOM_OK, "%s", err.msg);
    cr_assert_neq(loom_validate(sch, &lim, &v, &err), LOOM_OK);
    cr_assert_str_eq(v.rule, "balance-rows", "%s", v.msg);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* The register tile (CacheWrite at the loop outside the nonzero loop, the
 * multi-level-tiling decision of issue 13): SpMM with F = 16 split [2, 8],
 * loops i, f.0, k, f.1, with the enable decision 0 and 1 of
 * loom_cache_write_if at f.0: the decision is obeyed, both kernels are
 * correct and differ (the workspace is in the lowered kernel). */
Test(sparse_space, register_tile_correct_and_fewer_stores, .timeout = 120)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=tests/data/skew_rows.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    double stores[2];
    char *code[2];
    for (int ws = 0; ws < 2; ws++) {
        cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        int b, loops[LOOM_MAX_LOOPS], n, fo[2];
        cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
        int li = -1, lk = -1, lf = -1;
        for (int p = 0; p < n; p++) {
            const char *nm = prog->vars[sch->stages[0].iters[sch->rvs[loops[p]].iter].var].name;
            *(strcmp(nm, "i") == 0 ? &li : strcmp(nm, "k") == 0 ? &lk : &lf) = loops[p];
        }
        const int64_t f[2] = {2, 8};
        cr_assert_eq(loom_split(sch, lf, 2, NULL, f, fo, &err), LOOM_OK, "%s", err.msg);
        int perm[4] = {li, fo[0], lk, fo[1]};
        cr_assert_eq(loom_reorder(sch, perm, 4, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_parallel(sch, li, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_vectorize(sch, fo[1], &err), LOOM_OK, "%s", err.msg);
        int v;
        const int64_t onoff[2] = {0, 1}, pick = ws;
        const double w[2] = {1, 1};
        cr_assert_eq(loom_sample_categorical(sch, 2, onoff, w, &pick, NULL, &v, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_cache_write_if(sch, b, fo[0], v, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(sch->stages[0].cache_iter >= 0, ws, "the enable decision %d was not obeyed", ws);
        loom_limits lim = loom_target_limits(&t);
        loom_violation viol;
        cr_assert_eq(loom_validate(sch, &lim, &viol, &err), LOOM_OK, "%s", viol.msg);
        fx_run_checked(sch, ds, ws ? "register tile" : "no register tile");
        lir_func *fn = lower_ok(sch);
        loom_sim_result r;
        cr_assert_eq(loom_sim_run(fn, ds, &t, &r, &err), LOOM_OK, "%s", err.msg);
        stores[ws] = r.stores;
        cr_assert_eq(loom_codegen_c(fn, "k", &code[ws], &err), LOOM_OK, "%s", err.msg);
        loom_lir_func_free(fn);
    }
    printf("sparse_space: SpMM skew_rows F=16, simulated stores %.0f without the register tile, %.0f with\n",
           stores[0], stores[1]);
    cr_assert_str_neq(code[0], code[1], "the workspace did not change the kernel");

    /* cache-write-split: the loops i, f.1, k, f.0 with the workspace at
     * f.1 iterate f outside it by its inner tile and inside by its outer */
    {
        loom_limits lim = loom_target_limits(&t);
        cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        int b, loops[LOOM_MAX_LOOPS], n, fo[2];
        cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
        int li = -1, lk = -1, lf = -1;
        for (int p = 0; p < n; p++) {
            const char *nm = prog->vars[sch->stages[0].iters[sch->rvs[loops[p]].iter].var].name;
            *(strcmp(nm, "i") == 0 ? &li : strcmp(nm, "k") == 0 ? &lk : &lf) = loops[p];
        }
        const int64_t f[2] = {2, 8};
        cr_assert_eq(loom_split(sch, lf, 2, NULL, f, fo, &err), LOOM_OK, "%s", err.msg);
        int perm[4] = {li, fo[1], lk, fo[0]};
        cr_assert_eq(loom_reorder(sch, perm, 4, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_cache_write(sch, b, fo[1], &err), LOOM_OK, "%s", err.msg);
        loom_violation viol;
        cr_assert_neq(loom_validate(sch, &lim, &viol, &err), LOOM_OK);
        cr_assert_str_eq(viol.rule, "cache-write-split", "%s", viol.msg);
    }
    free(code[0]);
    free(code[1]);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* SpMM F = 128 with the feature loop split [2, 4, 16] and the nonzero loop
 * between the 4 and the 16 -- a workspace of 64 floats per half row, its
 * stored entries run once per 16 columns, as campaigns draw it: the
 * innermost loop of 16 is marked `#pragma omp simd` (lir.h
 * loom_lir_is_simd_safe; GCC 12 unrolled it to 16 scalar FMAs, loads and
 * stores without the mark), and the kernel computes the right values
 * (fixture.h fx_run_checked: against the reference interpreter). */
Test(sparse_space, a_short_feature_tile_is_marked_simd_and_correct, .timeout = 120)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=tests/data/skew_rows.mtx", "F=128"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, loops[LOOM_MAX_LOOPS], n, fo[3];
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    int li = -1, lk = -1, lf = -1;
    for (int p = 0; p < n; p++) {
        const char *nm = prog->vars[sch->stages[0].iters[sch->rvs[loops[p]].iter].var].name;
        *(strcmp(nm, "i") == 0 ? &li : strcmp(nm, "k") == 0 ? &lk : &lf) = loops[p];
    }
    const int64_t f[3] = {2, 4, 16};
    cr_assert_eq(loom_split(sch, lf, 3, NULL, f, fo, &err), LOOM_OK, "%s", err.msg);
    int perm[5] = {li, fo[0], fo[1], lk, fo[2]};
    cr_assert_eq(loom_reorder(sch, perm, 5, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_cache_write(sch, b, fo[0], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_parallel(sch, li, &err), LOOM_OK, "%s", err.msg);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    loom_violation viol;
    cr_assert_eq(loom_validate(sch, &lim, &viol, &err), LOOM_OK, "%s", viol.msg);
    fx_run_checked(sch, ds, "feature tile [2, 4, 16]");
    lir_func *fn = lower_ok(sch);
    char *c = NULL;
    cr_assert_eq(loom_codegen_c(fn, "k", &c, &err), LOOM_OK, "%s", err.msg);
    const char *loop = strstr(c, "f_2 = 0; f_2 < 16; f_2++)");
    cr_assert_not_null(loop, "no canonical loop of 16 over the inner feature tile:\n%s", c);
    const char *mark = strstr(c, "#pragma omp simd\n");
    int marked = 0;
    for (; mark && mark < loop; mark = strstr(mark + 1, "#pragma omp simd\n"))
        marked = strspn(mark + strlen("#pragma omp simd\n"), " ") + strlen("for (int64_t ") ==
                 (size_t)(loop - mark - strlen("#pragma omp simd\n"));
    cr_expect(marked, "the loop of 16 is not marked omp simd:\n%s", c);
    free(c);
    loom_lir_func_free(fn);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* Software prefetch of gathered rows (the "prefetch" annotation, issue 13):
 * SpMM on skew_rows with the nonzero loop prefetching D entries ahead is
 * correct for distances from 1 to beyond the last entry (the position is
 * clamped), the generated C prefetches, the simulator counts the prefetched
 * lines as loads and its stalls drop on Cora at F = 128; the validator's
 * prefetch-gather rule refuses the annotation on the row loop and on the
 * feature loop. */
Test(sparse_space, prefetch_correct_simulated_and_rule, .timeout = 180)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=tests/data/skew_rows.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(&t);
    int b, loops[LOOM_MAX_LOOPS], n;
    const int64_t Ds[] = {1, 4, 64, 100000};
    for (size_t k = 0; k < sizeof Ds / sizeof *Ds; k++) {
        balanced_spmm(sch, prog, 0);
        cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_annotate(sch, loops[1], LOOM_ANN_PREFETCH, -1, Ds[k], &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        cr_assert_eq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "D=%lld: %s", (long long)Ds[k], v.msg);
        char what[64];
        snprintf(what, sizeof what, "prefetch %lld entries ahead", (long long)Ds[k]);
        fx_run_checked(sch, ds, what);
        lir_func *f = lower_ok(sch);
        char *c = NULL;
        cr_assert_eq(loom_codegen_c(f, "k", &c, &err), LOOM_OK, "%s", err.msg);
        cr_assert_not_null(strstr(c, "__builtin_prefetch"), "no prefetch in:\n%s", c);
        free(c);
        loom_lir_func_free(f);
    }
    /* The feature index split f = 2 x 8 with its outer tile outside the
     * nonzero loop (i, f.0, k, f.1): each pass over the row's nonzeros reads
     * 8 of B's 16 columns, and prefetches those 8 (at crd * 16 + f.0 * 8),
     * not the whole row; with f wholly outside (i, f, k), one element.  The
     * unsplit nest above prefetches the row (its 16 elements, a literal). */
    for (int whole_f_outside = 0; whole_f_outside < 2; whole_f_outside++) {
        cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
        int li = -1, lk = -1, lf = -1, fo[2];
        for (int p = 0; p < n; p++) {
            const char *nm = prog->vars[sch->stages[0].iters[sch->rvs[loops[p]].iter].var].name;
            *(strcmp(nm, "i") == 0 ? &li : strcmp(nm, "k") == 0 ? &lk : &lf) = loops[p];
        }
        if (whole_f_outside) {
            int perm[3] = {li, lf, lk};
            cr_assert_eq(loom_reorder(sch, perm, 3, &err), LOOM_OK, "%s", err.msg);
        } else {
            const int64_t fs[2] = {2, 8};
            cr_assert_eq(loom_split(sch, lf, 2, NULL, fs, fo, &err), LOOM_OK, "%s", err.msg);
            int perm[4] = {li, fo[0], lk, fo[1]};
            cr_assert_eq(loom_reorder(sch, perm, 4, &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(loom_vectorize(sch, fo[1], &err), LOOM_OK, "%s", err.msg);
        }
        cr_assert_eq(loom_parallel(sch, li, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_annotate(sch, lk, LOOM_ANN_PREFETCH, -1, 4, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        cr_assert_eq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "%s", v.msg);
        fx_run_checked(sch, ds, whole_f_outside ? "f outside the prefetching nonzero loop"
                                                : "f's outer tile outside the prefetching nonzero loop");
        lir_func *f = lower_ok(sch);
        char *c = NULL;
        cr_assert_eq(loom_codegen_c(f, "k", &c, &err), LOOM_OK, "%s", err.msg);
        const char *want = whole_f_outside ? "pf_n = 1;" : "pf_n = 8;";
        cr_assert_not_null(strstr(c, want), "no prefetch of the tile's span (%s) in:\n%s", want, c);
        free(c);
        loom_lir_func_free(f);
    }
    {
        balanced_spmm(sch, prog, 0);
        cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_annotate(sch, loops[1], LOOM_ANN_PREFETCH, -1, 4, &err), LOOM_OK, "%s", err.msg);
        lir_func *f = lower_ok(sch);
        char *c = NULL;
        cr_assert_eq(loom_codegen_c(f, "k", &c, &err), LOOM_OK, "%s", err.msg);
        /* the whole row, as a literal (F = 16 is bound): cc unrolls the loop over its lines */
        cr_assert_not_null(strstr(c, "pf_n = 16;"), "the unsplit nest did not prefetch the row's 16 literal elements:\n%s", c);
        free(c);
        loom_lir_func_free(f);
    }
    /* prefetch-gather: on the parallel row loop, on the vectorized feature loop */
    for (int at = 0; at < 3; at += 2) {
        balanced_spmm(sch, prog, 0);
        cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_annotate(sch, loops[at], LOOM_ANN_PREFETCH, -1, 16, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        cr_assert_neq(loom_validate(sch, &lim, &v, &err), LOOM_OK);
        cr_assert_str_eq(v.rule, "prefetch-gather", "%s", v.msg);
    }
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);

    /* simulated on Cora, F = 128 (B: 1.4 MB): prefetched lines are loads,
     * and the stalls of the rows' first lines are hidden */
    const char *cargs[] = {"A=data/cora_adj.mtx", "F=128"};
    prog = fx_bind("workloads/spmm.loom", cargs, 2, 1, &ds);
    sch = malloc(sizeof *sch);
    loom_sim_result r[2];
    for (int pf = 0; pf < 2; pf++) {
        balanced_spmm(sch, prog, 0);
        cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
        if (pf)
            cr_assert_eq(loom_annotate(sch, loops[1], LOOM_ANN_PREFETCH, -1, 16, &err), LOOM_OK, "%s", err.msg);
        lir_func *f = lower_ok(sch);
        cr_assert_eq(loom_sim_run(f, ds, &t, &r[pf], &err), LOOM_OK, "%s", err.msg);
        loom_lir_func_free(f);
    }
    printf("sparse_space: cora F=128 simulated: %.4g s, %.0f loads, %.0f memory cycles without prefetch; "
           "%.4g s, %.0f loads, %.0f memory cycles prefetching 16 ahead\n",
           r[0].latency_s, r[0].loads, r[0].memory_cycles, r[1].latency_s, r[1].loads, r[1].memory_cycles);
    cr_assert_gt(r[1].loads, r[0].loads);
    cr_assert_lt(r[1].memory_cycles, r[0].memory_cycles);
    /* Model 30 (sim.h "Software prefetch"): the row's 8 lines are a literal
     * count, so on a target whose cc peels up to 16 iterations completely
     * the prefetch loop costs no counter, compare or branch: 8 branches and
     * 24 integer operations fewer a nonzero, the same lines loaded */
    loom_sim_result peeled;
    loom_target tp = t;
    tp.peel_times = 16;
    {
        lir_func *f = lower_ok(sch); /* still the prefetching schedule */
        cr_assert_eq(loom_sim_run(f, ds, &tp, &peeled, &err), LOOM_OK, "%s", err.msg);
        loom_lir_func_free(f);
    }
    cr_assert_eq(t.peel_times, 0, "spr-2c has no peel_times: the loop costs its overhead there");
    /* the same rows sampled (the same statements run), their counts scaled to all of Cora's */
    double nnz = (double)ds->t[0].nnz;
    cr_expect_float_eq(peeled.loads, r[1].loads, 1e-9 * r[1].loads, "the same lines prefetched");
    cr_expect_float_eq(r[1].branches - peeled.branches, 8 * nnz, 0.03 * 8 * nnz, "8 branches a nonzero fewer: %g -> %g",
                       r[1].branches, peeled.branches);
    cr_expect_float_eq(r[1].instructions - peeled.instructions, 3 * 8 * nnz, 0.03 * 3 * 8 * nnz,
                       "24 instructions a nonzero fewer (the loop's 3 integer operations a line): %g -> %g",
                       r[1].instructions, peeled.instructions);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}
