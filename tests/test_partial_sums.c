/* Partial sums of SDDMM's dot product (issue 13; dsl/schedule/query.h
 * LOOM_ANN_PARTIAL_SUMS, modules/partial_sums.c): the lowered kernel keeps
 * d.1's extent of partial sums in a local array and folds them once; it
 * computes the right values for several tilings of d (and a d that is not a
 * multiple of the vector width), runs on the simulator with the same flop
 * count plus the fold's additions, the dot-partial-sums module draws both settings in the default
 * space, and rule partial-sums refuses the annotation on every other kind
 * of loop. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../modules/module.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/pipeline.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../traces/validate.h"
#include "fixture.h"

typedef struct sfx {
    loom_program *prog;
    loom_dataset *ds;
    loom_schedule *sch;
    int loops[LOOM_MAX_LOOPS], n; /* S's loops after tile(): i, j, d.0, d.1 */
} sfx;

/* SDDMM on cora500 at D; S's d split [d0, d1] (d0 = 0: d unsplit), the
 * inner loop vectorized; partial sums annotated on loop `at` (-1: none). */
static sfx tile(const char *D, int64_t d0, int64_t d1, int at, int vectorize)
{
    sfx x;
    const char *args[] = {"M=data/cora500_adj.mtx", D};
    x.prog = fx_bind("workloads/sddmm.loom", args, 2, 7, &x.ds);
    x.sch = malloc(sizeof *x.sch);
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_schedule_init(x.sch, x.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, l[LOOM_MAX_LOOPS], n, parts[2];
    cr_assert_eq(loom_get_block(x.sch, "S", &b, &err), LOOM_OK);
    cr_assert_eq(loom_get_loops(x.sch, b, l, &n, &err), LOOM_OK);
    cr_assert_eq(n, 3); /* i, j, d */
    if (d0 > 0)
        cr_assert_eq(loom_split(x.sch, l[2], 2, NULL, (int64_t[]){d0, d1}, parts, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(x.sch, b, x.loops, &x.n, &err), LOOM_OK);
    if (vectorize)
        cr_assert_eq(loom_vectorize(x.sch, x.loops[x.n - 1], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_parallel(x.sch, x.loops[0], &err), LOOM_OK, "%s", err.msg);
    if (at >= 0)
        cr_assert_eq(loom_annotate(x.sch, x.loops[at < x.n ? at : x.n - 1], LOOM_ANN_PARTIAL_SUMS, -1, 1, &err),
                     LOOM_OK, "%s", err.msg);
    return x;
}

static void untile(sfx *x)
{
    free(x->sch);
    loom_program_free(x->prog);
    loom_dataset_free(x->ds);
}

static const char *rule_of(const loom_schedule *sch)
{
    static __thread loom_violation v;
    return loom_validate(sch, fx_cpu_limits(), &v, NULL) == LOOM_OK ? NULL : v.rule;
}

Test(partial_sums, the_kernel_keeps_partial_sums_and_is_correct, .timeout = 300)
{
    static const struct {
        const char *D;
        int64_t d0, d1;
    } CASES[] = {{"D=64", 16, 4}, {"D=64", 4, 16}, {"D=64", 2, 32}, {"D=64", 0, 0}, {"D=7", 1, 7}};
    for (size_t k = 0; k < sizeof CASES / sizeof *CASES; k++) {
        sfx x = tile(CASES[k].D, CASES[k].d0, CASES[k].d1, 99, 1);
        const char *r = rule_of(x.sch);
        cr_assert_null(r, "case %zu: %s", k, r);
        char *src = NULL;
        loom_error err;
        cr_assert_eq(loom_pipeline_schedule_source(x.sch, &src, &err), LOOM_OK, "case %zu: %s", k, err.msg);
        cr_assert(strstr(src, "psum_S[") != NULL, "case %zu: no partial sums in\n%s", k, src);
        free(src);
        char what[64];
        snprintf(what, sizeof what, "SDDMM %s, d tiles [%lld, %lld], partial sums", CASES[k].D,
                 (long long)CASES[k].d0, (long long)CASES[k].d1);
        fx_run_checked(x.sch, x.ds, what);
        untile(&x);
    }
}

/* The simulator runs both settings; the flops are the data's own: the
 * same, plus at least the fold's 16 additions per stored entry. */
Test(partial_sums, the_simulator_runs_both_settings_and_counts_the_fold, .timeout = 120)
{
    loom_target t;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_sim_result r[2];
    int64_t nnz = 0;
    for (int k = 0; k < 2; k++) {
        sfx x = tile("D=64", 4, 16, k ? 99 : -1, 1);
        nnz = x.ds->t[0].nnz; /* M, the first tensor */
        lir_func *f = NULL;
        cr_assert_eq(loom_lower(x.sch, &f, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_sim_run(f, x.ds, &t, &r[k], &err), LOOM_OK, "%s", err.msg);
        loom_lir_func_free(f);
        untile(&x);
    }
    printf("partial_sums: simulated SDDMM cora500 D=64, d tiles [4, 16]: scalar accumulator %.0f cycles, "
           "partial sums %.0f cycles\n",
           r[0].cycles, r[1].cycles);
    cr_assert_gt(r[0].cycles, 0);
    cr_assert_gt(r[1].cycles, 0);
    /* the same products and sums, plus the fold: at least its 16 additions
     * per entry (the simulator also counts the fold loop's own reduction) */
    cr_assert_gt(nnz, 0);
    cr_assert_gt(r[1].flops, r[0].flops, "the fold's additions are not counted: %.17g vs %.17g flops", r[1].flops,
                 r[0].flops);
    /* exactly, when no loop was sampled (a sampled loop's counts are scaled
     * estimates, runtime/sim/sim.h) */
    if (!r[0].sampled && !r[1].sampled)
        cr_assert_geq(r[1].flops - r[0].flops, 16.0 * (double)nnz, "%.17g vs %.17g flops, nnz %lld", r[1].flops,
                  r[0].flops, (long long)nnz);
    cr_assert_neq(r[0].instructions, r[1].instructions, "the two settings lowered to the same kernel");
}

/* Rule partial-sums: the annotation on the outer d tile, on the row loop,
 * on a d.1 that is not vectorized; and with a free loop inside the
 * reduction (j innermost: no scalar accumulator). */
Test(partial_sums, rule_partial_sums_breaks)
{
    sfx x = tile("D=64", 16, 4, 2, 1); /* d.0 */
    cr_assert_str_eq(rule_of(x.sch), "partial-sums");
    untile(&x);
    x = tile("D=64", 16, 4, 0, 1); /* i */
    cr_assert_str_eq(rule_of(x.sch), "partial-sums");
    untile(&x);
    x = tile("D=64", 16, 4, 3, 0); /* d.1, serial */
    cr_assert_str_eq(rule_of(x.sch), "partial-sums");
    untile(&x);
    x = tile("D=64", 16, 4, -1, 0); /* i, j, d.0, d.1 -> i, d.0, d.1, j: d.1 not innermost either */
    loom_error err;
    int order[4] = {x.loops[0], x.loops[2], x.loops[3], x.loops[1]};
    cr_assert_eq(loom_reorder(x.sch, order, 4, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_annotate(x.sch, x.loops[3], LOOM_ANN_PARTIAL_SUMS, -1, 1, &err), LOOM_OK);
    cr_assert_str_eq(rule_of(x.sch), "partial-sums");
    /* 0 is "off": no rule */
    cr_assert_eq(loom_annotate(x.sch, x.loops[3], LOOM_ANN_PARTIAL_SUMS, -1, 0, &err), LOOM_OK);
    const char *r = rule_of(x.sch);
    cr_assert(r == NULL || strcmp(r, "partial-sums"), "%s", r);
    untile(&x);
}

/* The default space draws both settings on SDDMM (cora500, D = 64), each
 * with a validating schedule. */
Test(partial_sums, the_module_draws_both_settings, .timeout = 120)
{
    const char *args[] = {"M=data/cora500_adj.mtx", "D=64"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/sddmm.loom", args, 2, 7, &ds);
    loom_error err;
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = *loom_space_limits(space);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    loom_schedule *sch = malloc(sizeof *sch);
    int on = 0, off = 0;
    for (int d = 0; d < 200; d++) {
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        if (loom_validate(sch, &lim, &v, NULL) != LOOM_OK)
            continue;
        const loom_stage *S = &sch->stages[0];
        int drawn = 0;
        for (int k = 0; S->nloops && k < S->loops[S->nloops - 1].nann; k++)
            if (!strcmp(S->loops[S->nloops - 1].ann[k].key, LOOM_ANN_PARTIAL_SUMS))
                drawn = 1 + (S->loops[S->nloops - 1].ann[k].value > 0);
        on += drawn == 2;
        off += drawn == 1;
    }
    printf("partial_sums: 200 draws of the SDDMM space: partial sums on in %d valid draws, off in %d\n", on, off);
    cr_assert_gt(on, 0);
    cr_assert_gt(off, 0);
    free(sch);
    gsl_rng_free(rng);
    loom_space_free(space);
    loom_registry_free(reg);
    loom_program_free(prog);
    loom_dataset_free(ds);
}
