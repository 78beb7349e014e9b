/* The register tile's epilogue (issue 30; dsl/schedule/query.h
 * LOOM_ANN_EPILOGUE, dsl/schedule/epilogue.c, runtime/lower/lower.c
 * epilogue_store): the pruned autoencoder's layer Y = act(W X + b) with the
 * CSR x dense product accumulated in a workspace over the dense batch
 * dimension and the bias and the activation evaluated at its copy-out.
 * Every kernel is checked against the reference interpreter (which shares
 * no code with the lowering) on a weight with empty rows (a row of Y is
 * then act(b)), at batch widths that are not a multiple of the vector
 * width, with a tile over the batch that overhangs it (a remainder tile);
 * the generated C allocates no temporary and reads the reduction's values
 * only from the workspace; the validator's rule epilogue refuses what the
 * copy-out cannot evaluate; the default's register tile fits the target's
 * registers (AVX-512 and AVX2 limits); the design space draws epilogues
 * that validate and run correctly. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/schedule/query.h"
#include "../modules/module.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../traces/validate.h"
#include "fixture.h"

#define WEIGHT "W=tests/data/ae_empty_rows.mtx"

static char *gen_c(const loom_schedule *sch)
{
    loom_error err;
    loom_error_clear(&err);
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
    char *c = NULL;
    cr_assert_eq(loom_codegen_c(f, "k", &c, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(f);
    return c;
}

static int stage_of(const loom_program *prog, const char *tensor)
{
    for (int s = 0; s < prog->nstmts; s++)
        if (!strcmp(prog->tensors[prog->stmts[s].lhs].name, tensor))
            return s;
    cr_assert_fail("no statement assigns %s", tensor);
    return -1;
}

/* The reduction block Z_sum_i by hand: loops o, n.0, i, n.1 (n split by
 * `tile`, 0 = unsplit: o, i, n with the workspace at o), a workspace at the
 * loop just outside i, annotated epilogue = k; Z inlined when inline_z. */
static void by_hand(loom_schedule *sch, const loom_program *prog, int64_t tile, int inline_z, int64_t k)
{
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, loops[LOOM_MAX_LOOPS], n, s = stage_of(prog, "Z_sum_i");
    if (inline_z) {
        int bz;
        cr_assert_eq(loom_get_block(sch, "Z", &bz, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_compute_inline(sch, bz, &err), LOOM_OK, "%s", err.msg);
    }
    cr_assert_eq(loom_get_block(sch, "Z_sum_i", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    int lo = -1, li = -1, ln = -1;
    for (int p = 0; p < n; p++) {
        const char *nm = prog->vars[sch->stages[s].iters[sch->rvs[loops[p]].iter].var].name;
        *(!strcmp(nm, "o") ? &lo : !strcmp(nm, "i") ? &li : &ln) = loops[p];
    }
    int at = lo;
    if (tile > 0) {
        const int64_t f[2] = {0, tile};
        int nn[2];
        cr_assert_eq(loom_split(sch, ln, 2, NULL, f, nn, &err), LOOM_OK, "%s", err.msg);
        int perm[4] = {lo, nn[0], li, nn[1]};
        cr_assert_eq(loom_reorder(sch, perm, 4, &err), LOOM_OK, "%s", err.msg);
        at = nn[0];
    } else {
        int perm[3] = {lo, li, ln};
        cr_assert_eq(loom_reorder(sch, perm, 3, &err), LOOM_OK, "%s", err.msg);
    }
    cr_assert_eq(loom_parallel(sch, lo, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_cache_write(sch, b, at, &err), LOOM_OK, "%s", err.msg);
    if (k > 0)
        cr_assert_eq(loom_annotate(sch, at, LOOM_ANN_EPILOGUE, -1, k, &err), LOOM_OK, "%s", err.msg);
}

/* relu and sigmoid layers, batch 21 (not a multiple of 8 or 16 lanes) and
 * 40; tiles over the batch: whole, 8 (21 = 2 x 8 + a 5-wide remainder tile
 * that overhangs) and 16; Z stored or inlined: the copy-out's values are
 * the reference's, and no temporary is allocated or stored */
Test(epilogue, by_hand_correct_with_remainders, .timeout = 300)
{
    static const char *const MODELS[] = {"models/ae/ae_relu.loom", "models/ae/ae_sigmoid.loom"};
    static const char *const BATCH[] = {"B=21", "B=40"};
    static const int64_t TILES[] = {0, 8, 16};
    for (size_t m = 0; m < 2; m++)
        for (size_t bb = 0; bb < 2; bb++)
            for (size_t t = 0; t < 3; t++)
                for (int inl = 0; inl < 2; inl++) {
                    const char *args[] = {WEIGHT, BATCH[bb]};
                    loom_dataset *ds = NULL;
                    loom_program *prog = fx_bind(MODELS[m], args, 2, 7, &ds);
                    loom_schedule *sch = malloc(sizeof *sch);
                    by_hand(sch, prog, TILES[t], inl, 2);
                    loom_violation v;
                    loom_error err;
                    loom_error_clear(&err);
                    cr_assert_eq(loom_validate(sch, fx_cpu_limits(), &v, &err), LOOM_OK, "%s", v.msg);
                    int chain[LOOM_MAX_STMTS];
                    cr_assert_eq(loom_epilogue_stages(sch, stage_of(prog, "Z_sum_i"), chain), 2);
                    char what[128];
                    snprintf(what, sizeof what, "%s %s tile %lld%s", MODELS[m], BATCH[bb], (long long)TILES[t],
                             inl ? " Z inlined" : "");
                    fx_run_checked(sch, ds, what);
                    char *c = gen_c(sch);
                    cr_assert_null(strstr(c, "alloc("), "%s: a temporary was allocated:\n%s", what, c);
                    cr_assert_null(strstr(c, "Z_sum_i_vals"), "%s: the reduction was stored:\n%s", what, c);
                    cr_assert_null(strstr(c, "Z_vals"), "%s: Z was stored:\n%s", what, c);
                    cr_assert_not_null(strstr(c, "float ws_Z_sum_i["), "%s: no workspace:\n%s", what, c);
                    free(c);
                    free(sch);
                    loom_program_free(prog);
                    loom_dataset_free(ds);
                }
}

/* epilogue = 1 with Z at the root: the copy-out stores Z (bias added), Y's
 * own pass applies the activation; only Z_sum_i goes unallocated */
Test(epilogue, bias_only_stores_z, .timeout = 120)
{
    const char *args[] = {WEIGHT, "B=21"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("models/ae/ae_sigmoid.loom", args, 2, 3, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    by_hand(sch, prog, 8, 0, 1);
    loom_violation v;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_validate(sch, fx_cpu_limits(), &v, &err), LOOM_OK, "%s", v.msg);
    fx_run_checked(sch, ds, "epilogue 1 (bias), Z stored");
    char *c = gen_c(sch);
    cr_assert_null(strstr(c, "Z_sum_i_vals"), "%s", c);
    cr_assert_not_null(strstr(c, "Z_vals = aligned_alloc(64, "), "%s", c);
    free(c);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* The validator's rule epilogue: more stages than the chain has, a last
 * asked stage that is inlined, a reduction loop outside the workspace loop;
 * and an epilogue on a loop without a workspace is inert (valid, nothing
 * fused) */
Test(epilogue, validator_refuses_impossible)
{
    const char *args[] = {WEIGHT, "B=21"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("models/ae/ae_relu.loom", args, 2, 3, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_violation v;
    loom_error err;
    loom_error_clear(&err);
    by_hand(sch, prog, 8, 0, 3);
    cr_assert_neq(loom_validate(sch, fx_cpu_limits(), &v, &err), LOOM_OK);
    cr_assert_str_eq(v.rule, "epilogue", "%s", v.msg);
    by_hand(sch, prog, 8, 1, 1); /* Z inlined: nothing to store Z into */
    cr_assert_neq(loom_validate(sch, fx_cpu_limits(), &v, &err), LOOM_OK);
    cr_assert_str_eq(v.rule, "epilogue", "%s", v.msg);
    /* i outside n.0: each copy-out adds a partial (no element complete) */
    int s = stage_of(prog, "Z_sum_i"), b, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "Z_sum_i", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    int lo = -1, li = -1, ln = -1;
    for (int p = 0; p < n; p++) {
        const char *nm = prog->vars[sch->stages[s].iters[sch->rvs[loops[p]].iter].var].name;
        *(!strcmp(nm, "o") ? &lo : !strcmp(nm, "i") ? &li : &ln) = loops[p];
    }
    int perm[3] = {lo, li, ln};
    cr_assert_eq(loom_reorder(sch, perm, 3, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_cache_write(sch, b, ln, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_annotate(sch, ln, LOOM_ANN_EPILOGUE, -1, 2, &err), LOOM_OK, "%s", err.msg);
    cr_assert_neq(loom_validate(sch, fx_cpu_limits(), &v, &err), LOOM_OK);
    cr_assert_str_eq(v.rule, "epilogue", "%s", v.msg);
    int chain[LOOM_MAX_STMTS];
    cr_assert_eq(loom_epilogue_stages(sch, s, chain), -1);
    /* no workspace: inert */
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "Z_sum_i", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_annotate(sch, loops[0], LOOM_ANN_EPILOGUE, -1, 2, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_validate(sch, fx_cpu_limits(), &v, &err), LOOM_OK, "%s", v.msg);
    cr_assert_eq(loom_epilogue_stages(sch, s, chain), 0);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* The chain stops where a consumer is not elementwise over the temporary:
 * SpMM's output (no temporary) has none; gcn2's first SpMM (Z1 read by
 * relu only) has one stage */
Test(epilogue, chain_shapes)
{
    int chain[LOOM_MAX_STMTS];
    loom_error err;
    loom_error_clear(&err);
    const char *a1[] = {"A=tests/data/skew_rows.mtx", "F=20"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", a1, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_epilogue_chain(sch, 0, chain), 0);
    loom_program_free(prog);
    loom_dataset_free(ds);
    const char *a2[] = {WEIGHT, "B=21"};
    prog = fx_bind("models/ae/ae_relu.loom", a2, 2, 1, &ds);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int s = stage_of(prog, "Z_sum_i");
    cr_assert_eq(loom_epilogue_chain(sch, s, chain), 2);
    cr_assert_eq(chain[0], stage_of(prog, "Z"));
    cr_assert_eq(chain[1], stage_of(prog, "Y"));
    cr_assert_eq(loom_epilogue_chain(sch, stage_of(prog, "Y"), chain), 0, "Y is an output");
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* The default schedule's register tile on AVX-512 (16 lanes, 32 registers)
 * and AVX2 (8 lanes, 16 registers) limits at B = 256: a workspace whose
 * accumulators plus as many operand vectors plus a broadcast fit the
 * registers (loom_register_tile's accounting), the whole epilogue, and the
 * kernel is right on this machine */
Test(epilogue, default_tile_fits_registers, .timeout = 240)
{
    const char *args[] = {WEIGHT, "B=256"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("models/ae/ae_relu.loom", args, 2, 5, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    int s = stage_of(prog, "Z_sum_i"), chain[LOOM_MAX_STMTS];
    static const int LANES[] = {16, 8}, REGS[] = {32, 16};
    int64_t elems[2];
    for (int k = 0; k < 2; k++) {
        loom_limits lim = *fx_cpu_limits();
        lim.vector_lanes = LANES[k];
        lim.vector_registers = REGS[k];
        lim.cores = 1; /* 23 rows: the register tile is offered from 16 rows per core */
        loom_error err;
        loom_error_clear(&err);
        cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_default_schedule_for(sch, &lim, &err), LOOM_OK, "%s", err.msg);
        cr_assert_geq(sch->stages[s].cache_iter, 0, "no workspace with %d lanes", LANES[k]);
        elems[k] = loom_workspace_elems(sch, s);
        int64_t vecs = (elems[k] + LANES[k] - 1) / LANES[k];
        cr_assert_gt(vecs, 1, "a one-vector tile is a latency-bound FMA chain");
        cr_assert_leq(2 * vecs + 1, REGS[k], "%lld floats do not fit %d registers", (long long)elems[k], REGS[k]);
        cr_assert_eq(loom_epilogue_stages(sch, s, chain), 2);
        loom_violation v;
        cr_assert_eq(loom_validate(sch, &lim, &v, &err), LOOM_OK, "%s", v.msg);
        if (k == 0 || LANES[k] <= fx_cpu_limits()->vector_lanes)
            fx_run_checked(sch, ds, LANES[k] == 16 ? "default, AVX-512 tile" : "default, AVX2 tile");
    }
    cr_assert_gt(elems[0], elems[1], "the wider target's tile is not wider");
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* The design space (cpu limits): draws with an active epilogue (1 or 2
 * stages) validate, run right, and some draws keep the temporaries */
Test(epilogue, space_draws_epilogues, .timeout = 300)
{
    const char *args[] = {WEIGHT, "B=21"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("models/ae/ae_relu.loom", args, 2, 9, &ds);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = *fx_cpu_limits();
    lim.cores = 1; /* 23 rows: the register tile is offered from 16 rows per core */
    loom_space_set_limits(space, &lim);
    loom_schedule *sch = malloc(sizeof *sch);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 30);
    int s = stage_of(prog, "Z_sum_i"), chain[LOOM_MAX_STMTS], fused = 0, plain = 0, ran = 0;
    for (int d = 0; d < 400 && ran < 3; d++) {
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        if (loom_validate(sch, &lim, &v, &err) != LOOM_OK)
            continue;
        int k = loom_epilogue_stages(sch, s, chain);
        cr_assert_geq(k, 0, "a valid draw whose epilogue cannot be");
        if (k == 0) {
            plain++;
            continue;
        }
        fused++;
        fx_run_checked(sch, ds, "a draw of the autoencoder space with an epilogue");
        ran++;
    }
    printf("epilogue: ae_relu B=21: %d draws with an epilogue, %d without; %d run\n", fused, plain, ran);
    cr_assert_gt(ran, 0, "no draw fused an epilogue");
    cr_assert_gt(plain, 0);
    gsl_rng_free(rng);
    free(sch);
    loom_space_free(space);
    loom_registry_free(reg);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* The validator's rule workspace-spills: a whole 256-float row as the
 * register tile is 16 AVX-512 vectors (fits 32 registers with the
 * broadcast) but 32 AVX2 vectors (16 registers): refused there; a 64-float
 * tile fits both; an SpMM output's workspace is not a register tile of a
 * temporary (its rule is workspace-too-large) */
Test(epilogue, validator_register_fit)
{
    const char *args[] = {WEIGHT, "B=256"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("models/ae/ae_relu.loom", args, 2, 3, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_limits avx512 = *fx_cpu_limits(), avx2 = *fx_cpu_limits();
    avx512.vector_lanes = 16, avx512.vector_registers = 32;
    avx2.vector_lanes = 8, avx2.vector_registers = 16;
    loom_violation v;
    loom_error err;
    loom_error_clear(&err);
    by_hand(sch, prog, 0, 0, 2);
    cr_assert_eq(loom_validate(sch, &avx512, &v, &err), LOOM_OK, "%s", v.msg);
    cr_assert_neq(loom_validate(sch, &avx2, &v, &err), LOOM_OK);
    cr_assert_str_eq(v.rule, "workspace-spills", "%s", v.msg);
    by_hand(sch, prog, 64, 0, 2);
    cr_assert_eq(loom_validate(sch, &avx2, &v, &err), LOOM_OK, "%s", v.msg);
    cr_assert_eq(loom_validate(sch, &avx512, &v, &err), LOOM_OK, "%s", v.msg);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}
