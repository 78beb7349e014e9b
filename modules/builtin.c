/* The built-in transformation modules (module.h, docs/modules.md): their
 * table (below, one row per module: name, function, one-line doc) is the
 * only list; `loom space --list` prints it from the registry.  Blocks of a
 * fused chain (loom__fusion_claimed) are left alone by the others. */
#include <stdio.h>
#include <string.h>

#include "builtin.h"
#include "../traces/validate.h"

/* MetaSchedule's DefaultLLVM constants (schedule_rule.cc; metaschedule.md 7). */
#define MAX_INNERMOST 64     /* MultiLevelTiling max_innermost_factor */
/* ... for a free loop of a block with a compressed loop (issue 13): a whole 512-byte row
 * of F = 128 floats as the innermost tile, so the register tile of the
 * row (the default's whole row, accumulated in a workspace) is in the
 * space; with 64 a 128-wide row had a tile loop outside the nonzero loop,
 * which then ran twice per row (measured on web-NotreDame, F = 128, one
 * thread: 1.28x slower than the whole row).  parallel-vectorize-unroll
 * splits such a tile again for the vector width, inside the nonzero loop. */
#define SPARSE_MAX_INNERMOST 128
#define JOBS_PER_CORE 16     /* ParallelizeVectorizeUnroll max_jobs_per_core */
#define MAX_VECTORIZE 64     /* max_vectorize_extent */
#define LOOP_ORDER_PRIOR 0.5 /* probability of Scorch's order in SampleLoopOrder */

static int stage_of(const loom_schedule *sch, int block_rv)
{
    return sch->rvs[block_rv].stage;
}

void loom__structure_keys(const loom_schedule *sch, int s, const char *structure, int64_t *key)
{
    const loom_stage *S = &sch->stages[s];
    int len = (int)strlen(structure);
    for (int p = 0; p < S->nloops; p++) {
        const loom_iter *I = &S->iters[S->loops[p].iter];
        int j = 0;
        if (I->kind == LOOM_ITER_SPLIT || I->kind == LOOM_ITER_POS)
            j = I->index;
        char want = loom_iter_reduces(sch, s, S->loops[p].iter) ? 'R' : 'S';
        int level = -1, seen = 0;
        for (int c = 0; c < len; c++)
            if (structure[c] == want) {
                level = c;
                if (seen++ == j)
                    break;
            }
        if (level < 0)
            level = len;
        key[p] = (int64_t)level * 64 + p;
    }
}

int loom__vectorizable(const loom_schedule *sch, int s, int p, int64_t max_extent)
{
    const loom_stage *S = &sch->stages[s];
    int it = S->loops[p].iter;
    int64_t e = loom_iter_extent(sch, s, it);
    const loom_iter *I = &S->iters[it];
    if (e <= 1 || e > max_extent)
        return 0;
    if (I->kind == LOOM_ITER_VAR && loom_var_is_compressed(sch, s, I->var))
        return 0;
    if (I->kind == LOOM_ITER_VAR && loom_var_is_sparse(sch->prog, s, I->var))
        return 0; /* a range loop (causal, band) has computed bounds */
    if (!loom_iter_reduces(sch, s, it))
        return 1;
    /* a reduced innermost loop vectorizes only into a scalar accumulator:
     * every reduced loop inside every free loop */
    int last_free = -1, first_red = S->nloops;
    for (int q = 0; q < S->nloops; q++) {
        if (loom_iter_reduces(sch, s, S->loops[q].iter)) {
            if (q < first_red)
                first_red = q;
        } else
            last_free = q;
    }
    return first_red > last_free;
}

int loom__parallelizable(const loom_schedule *sch, int s)
{
    const loom_stage *S = &sch->stages[s];
    if (S->nloops == 0 || loom_iter_reduces(sch, s, S->loops[0].iter))
        return 0;
    const loom_iter *I = &S->iters[S->loops[0].iter];
    int x = loom_iter_var(S, S->loops[0].iter);
    if (x < 0)
        return 1; /* a fusion of free static loops: dense */
    if (I->kind == LOOM_ITER_POS)
        return 1; /* the chunks of one pattern's positions */
    /* a merge of several sparse patterns is a while loop, not a for */
    if (loom_var_is_compressed(sch, s, x) && loom_single_driver(sch->prog, s, x) < 0)
        return 0;
    return 1;
}

/* ---- fuse-producers, random-compute-location ----------------------------- */

/* fuse-producers: modules/fuse_producers.c (loom__fuse_producers). */

/* MetaSchedule's RandomComputeLocation (metaschedule.md 7, "Other rules"):
 * a block that is not an output, has a consumer, is at the root and whose
 * loops are not tiled samples its compute location. */
static loom_status random_compute_location(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    (void)ctx;
    int s = stage_of(sch, b);
    const loom_program *prog = sch->prog;
    const loom_stage *S = &sch->stages[s];
    if (prog->tensors[prog->stmts[s].lhs].role == LOOM_TENSOR_OUTPUT || loom_first_consumer(prog, s) < 0 ||
        S->compute_at != LOOM_AT_ROOT || S->nloops == 0)
        return LOOM_OK;
    for (int p = 0; p < S->nloops; p++)
        if (S->iters[S->loops[p].iter].kind != LOOM_ITER_VAR)
            return LOOM_OK;
    int v;
    return loom_sample_compute_location(sch, b, NULL, NULL, &v, err);
}

/* ---- sparse-loop-order ----------------------------------------------- */

/* Scorch's order (loom_scorch_rank, made concordant) as the prior of a
 * SampleLoopOrder over the legal orders.  A block computed inside another
 * block's loop or inlined is not ordered here: fuse-producers orders a fused
 * one once it is placed. */
static loom_status sparse_loop_order(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    (void)ctx;
    int s = stage_of(sch, b);
    const loom_stage *S = &sch->stages[s];
    if (S->compute_at != LOOM_AT_ROOT || S->nloops < 2 || loom__fusion_claimed(sch, s) == 1 ||
        loom__dense_applies(sch, s)) /* the dense space orders its loops itself */
        return LOOM_OK;
    int order[LOOM_MAX_LOOPS], v;
    return loom_sample_loop_order(sch, b, loom_scorch_order(sch, s, order), LOOP_ORDER_PRIOR, NULL, NULL, &v, err);
}

/* ---- multi-level-tiling ------------------------------------------------ */

/* The register tile (issue 13; Scorch's SpMM workspace): after the
 * reorder, a CacheWrite at the loop just outside the first reduction loop,
 * switched on or off by a SampleCategorical {0, 1, 2} (loom_cache_write_if;
 * 2 also streams the copy-out: the same value annotates the loop "stream",
 * dsl/schedule/query.h LOOM_ANN_STREAM, issue 13),
 * so the output tile of the free loops inside it (the inner tiles of F for
 * SpMM) is accumulated in a local workspace across the nonzero loop and
 * written out once.  Only for a dense output, when some free loop lies
 * inside that loop (a workspace of more than one element); the validator
 * bounds its size (workspace-too-large). */
/* The loop register_tile offers a workspace at (the loop just outside the
 * first reduction loop), or -1 when it offers none: a kernel output only
 * (a temporary may be placed in a consumer's loop later), and not when
 * parallel-vectorize-unroll will fuse the outer loop with the next (fewer
 * rows than cores x 16 jobs): a workspace needs each output index in loops
 * of its own (cache-write-fused).  A function of the loop structure only,
 * not of any decision, so parallel-vectorize-unroll asks it too. */
int loom__epilogue_values(const loom_schedule *sch, int s, int64_t *vals)
{
    int chain[LOOM_MAX_STMTS], n = loom_epilogue_chain(sch, s, chain), m = 0;
    vals[m++] = 0;
    for (int k = 1; k <= n; k++)
        if (sch->stages[chain[k - 1]].compute_at != LOOM_AT_INLINE)
            vals[m++] = k;
    return m;
}

int64_t loom__free_tile(const loom_schedule *sch, int s, const loom_limits *lim, int64_t e, int64_t *min_tiled)
{
    int chain[LOOM_MAX_STMTS];
    int64_t rows, chunk;
    if (e <= 0 || loom_epilogue_chain(sch, s, chain) == 0) {
        *min_tiled = LOOM__SCORCH_MIN_TILED;
        return e > 0 ? loom__divisor_at_most(e, LOOM__SCORCH_TILE) : LOOM__SCORCH_TILE;
    }
    loom_register_tile(lim, 1, e, &rows, &chunk);
    *min_tiled = chunk;
    return chunk;
}

int loom__ws_candidate(const loom_schedule *sch, int s, const loom_limits *lim)
{
    const loom_stage *S = &sch->stages[s];
    const loom_program *prog = sch->prog;
    int chain[LOOM_MAX_STMTS];
    /* a kernel output, or a temporary whose copy-out can evaluate its
     * consumers (an epilogue chain: it stays at the root) */
    int role = prog->tensors[prog->stmts[s].lhs].role;
    if ((role != LOOM_TENSOR_OUTPUT && !(role == LOOM_TENSOR_TEMP && loom_epilogue_chain(sch, s, chain) > 0)) ||
        loom_tensor_is_sparse(prog, prog->stmts[s].lhs))
        return -1;
    int64_t e0 = S->nloops ? loom_iter_extent(sch, s, S->loops[0].iter) : 0;
    if (e0 > 0 && e0 < (int64_t)lim->cores * JOBS_PER_CORE)
        return -1;
    int first_red = -1, free_inside = 0;
    for (int p = 0; p < S->nloops; p++) {
        if (loom_iter_var(S, S->loops[p].iter) < 0)
            return -1; /* a fused loop: cache-write-fused */
        if (loom_iter_reduces(sch, s, S->loops[p].iter)) {
            if (first_red < 0)
                first_red = p;
        } else if (first_red >= 0)
            free_inside = 1;
    }
    if (first_red < 1 || !free_inside || !loom_workspace_split_ok(sch, s, first_red - 1))
        return -1;
    return first_red - 1;
}

/* The default schedule's register tile (modules/default.c): a workspace,
 * streamed out when the output is larger than the last-level cache. */
int64_t loom__default_ws(const loom_schedule *sch, int s, const loom_limits *lim)
{
    const loom_program *prog = sch->prog;
    const loom_tensor *t = &prog->tensors[prog->stmts[s].lhs];
    int64_t bytes = (int64_t)sizeof(float);
    for (int k = 0; k < t->order; k++)
        bytes *= prog->sizes[t->dim_size[k]].value;
    return lim->llc_bytes > 0 && bytes > lim->llc_bytes ? LOOM_STREAM_ON : 1;
}

/* The epilogue of the register tile's copy-out (issue 30; query.h
 * LOOM_ANN_EPILOGUE): when the block's temporary is consumed elementwise
 * (its epilogue chain), a SampleCategorical over 0 and each chain length
 * whose last stage stores, uniform; the default the longest.  Inert when
 * the workspace decision is off. */
static loom_status sample_epilogue(loom_schedule *sch, int loop, int s, const loom_module_ctx *ctx, loom_error *err)
{
    int64_t vals[LOOM_MAX_STMTS + 1];
    double probs[LOOM_MAX_STMTS + 1];
    int m = loom__epilogue_values(sch, s, vals), v;
    if (m < 2)
        return LOOM_OK;
    for (int k = 0; k < m; k++)
        probs[k] = 1;
    const int64_t def = m - 1; /* the index of that value */
    loom_status rc = loom_sample_categorical(sch, m, vals, probs, ctx->defaults ? &def : NULL, NULL, &v, err);
    return rc ? rc : loom_annotate(sch, loop, LOOM_ANN_EPILOGUE, v, 0, err);
}

static loom_status register_tile(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    /* 0: no workspace, 1: a workspace, 2 (LOOM_STREAM_ON): a workspace
     * copied out with non-temporal stores (dsl/schedule/query.h LOOM_ANN_STREAM) */
    static const int64_t ONOFF[] = {0, 1, LOOM_STREAM_ON};
    static const double UNIFORM[] = {1, 1, 1};
    int L = loom__ws_candidate(sch, stage_of(sch, b), ctx->limits);
    if (L < 0)
        return LOOM_OK;
    int loops[LOOM_MAX_LOOPS], n, v;
    const int64_t def = loom__default_ws(sch, stage_of(sch, b), ctx->limits); /* the index of that value */
    loom_status rc = loom_get_loops(sch, b, loops, &n, err);
    if (!rc)
        rc = loom_sample_categorical(sch, 3, ONOFF, UNIFORM, ctx->defaults ? &def : NULL, NULL, &v, err);
    if (!rc)
        rc = loom_cache_write_if(sch, b, loops[L], v, err);
    if (!rc)
        rc = loom_annotate(sch, loops[L], LOOM_ANN_STREAM, v, 0, err);
    return rc ? rc : sample_epilogue(sch, loops[L], stage_of(sch, b), ctx, err);
}

/* The default schedule's tiles of a loop of extent e (modules/default.c,
 * Scorch's add_tile): whole up to 128 (LOOM__SCORCH_MIN_TILED), the innermost
 * tile; else 32 wide (LOOM__SCORCH_TILE, or the largest divisor of e below it),
 * the rest in the tile just outside the reduction (level 1 of a free
 * loop's 4: the outer tile right after the outermost loop) or outermost (a
 * reduced loop's 2). */
static void scorch_tiles(const loom_schedule *sch, int s, const loom_limits *lim, int64_t e, int nt, int64_t *tiles)
{
    for (int k = 0; k < nt; k++)
        tiles[k] = 1;
    if (e <= 0) {
        tiles[0] = 0; /* data-dependent: inferred */
        return;
    }
    int64_t min_tiled, d = loom__free_tile(sch, s, lim, e, &min_tiled);
    if (e <= min_tiled) {
        tiles[nt - 1] = e;
        return;
    }
    tiles[nt - 1] = d;
    tiles[nt == 4 ? 1 : 0] = e / d;
}

/* MetaSchedule's MultiLevelTiling with structure "SSRSRS" (CPU) restricted
 * by Scorch's rule: only dense variables that carry reuse are tiled (4
 * levels if free, 2 if reduced, SamplePerfectTile with max innermost 64),
 * never the first variable of Scorch's order (it is the parallel loop); a
 * loop over the positions of one compressed pattern is split with PosSplit
 * (a SampleCategorical chunk size, 0 = the whole row: the unsplit loop of
 * the default schedule; with tiles [1, 1, 1, F] of the feature loop, whose
 * extent-1 tiles the lowering drops, the default's kernel is a point of the
 * space, issue 13).  The loops are then reordered to the
 * structure, as close as the concordance rules allow.  Applies to blocks at
 * the root with untiled loops. */
static loom_status multi_level_tiling(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    static const char *STRUCTURE = "SSRSRS";
    /* 0: the whole row (no position split; the default schedule's loop) */
    static const int64_t CHUNKS[] = {0, 1, 2, 4, 8, 16, 32};
    static const double UNIFORM[] = {1, 1, 1, 1, 1, 1, 1};
    int s = stage_of(sch, b);
    const loom_program *prog = sch->prog;
    const loom_stage *S = &sch->stages[s];
    if (S->compute_at != LOOM_AT_ROOT || S->nloops == 0 || loom__fusion_claimed(sch, s) == 1)
        return LOOM_OK;
    if (loom__dense_applies(sch, s))
        return loom__dense_tiling(sch, b, ctx, err); /* modules/dense.c */
    if (loom__dense_rfactor_applies(sch, s, ctx->limits))
        return loom__dense_rfactor(sch, b, ctx, err); /* AddRFactor */
    for (int p = 0; p < S->nloops; p++)
        if (S->iters[S->loops[p].iter].kind != LOOM_ITER_VAR)
            return LOOM_OK; /* tiled already */
    int first = loom_scorch_outermost(sch, s);
    int loops[LOOM_MAX_LOOPS], n, sparse = 0;
    loom_status rc = loom_get_loops(sch, b, loops, &n, err);
    for (int k = 0; !rc && k < n; k++)
        sparse |= loom_var_is_compressed(sch, s, sch->stages[s].iters[sch->rvs[loops[k]].iter].var);
    for (int k = 0; !rc && k < n; k++) {
        int x = sch->stages[s].iters[sch->rvs[loops[k]].iter].var;
        int out[LOOM_MAX_INST_IO], tiles[LOOM_MAX_INST_IO];
        if (loom_var_is_compressed(sch, s, x)) {
            int t = loom_single_driver(prog, s, x);
            if (t < 0)
                continue;
            int v;
            rc = loom_sample_categorical(sch, 7, CHUNKS, UNIFORM, NULL, NULL, &v, err);
            if (!rc)
                rc = loom_pos_split(sch, loops[k], prog->tensors[t].name, 0, v, out, err);
        } else if (x != first && loom_var_carries_reuse(prog, s, x) &&
                   loom_iter_extent(sch, s, sch->rvs[loops[k]].iter) > 1) {
            int nt = prog->vars[x].reduced ? 2 : 4;
            int64_t def[4];
            scorch_tiles(sch, s, ctx->limits, loom_iter_extent(sch, s, sch->rvs[loops[k]].iter), nt, def);
            rc = loom_sample_perfect_tile(sch, loops[k], nt,
                                          prog->vars[x].reduced || !sparse ? MAX_INNERMOST : SPARSE_MAX_INNERMOST,
                                          ctx->defaults ? def : NULL, NULL, tiles, err);
            if (!rc)
                rc = loom_split(sch, loops[k], nt, tiles, NULL, out, err);
        }
    }
    if (rc)
        return rc;
    if (sch->stages[s].nloops < 2)
        return LOOM_OK;
    int64_t key[LOOM_MAX_LOOPS];
    loom__structure_keys(sch, s, STRUCTURE, key);
    int order[LOOM_MAX_LOOPS];
    if (loom_closest_legal_order(sch, s, key, order) < 0)
        return LOOM_OK; /* no legal order: the validator will say so */
    rc = loom_get_loops(sch, b, loops, &n, err);
    int perm[LOOM_MAX_LOOPS];
    for (int p = 0; p < n; p++)
        perm[p] = loops[order[p]];
    if (!rc)
        rc = loom_reorder(sch, perm, n, err);
    return rc ? rc : register_tile(sch, b, ctx, err);
}

/* ---- parallel-vectorize-unroll ------------------------------------------ */

/* The source of a fused chain (attention-fusion): its outer row loop
 * parallel, fused first with the next row loop while its extent is below
 * cores x 16 jobs (several heads: (h, i) -> one parallel loop of h x i rows,
 * as bench/bench_attention.c's multi-head schedule), when both are unsplit
 * row loops (the fused lowering takes pairwise-fused row loops).  Nothing
 * for a rolled block, a block computed at a loop (the scores), a source
 * whose rolled loop is parallel already (split-K chunks) or whose outer
 * loop is. */
static loom_status fused_source_parallel(loom_schedule *sch, int b, const int *loops, int n, const loom_limits *lim,
                                         loom_error *err)
{
    int s = stage_of(sch, b);
    const loom_stage *S = &sch->stages[s];
    if (S->rolling || S->compute_at != LOOM_AT_ROOT || !loom__parallelizable(sch, s) ||
        S->loops[S->nloops - 1].kind == LOOM_LOOP_PARALLEL || loom_iter_reduces(sch, s, S->loops[0].iter) ||
        S->loops[0].kind == LOOM_LOOP_PARALLEL)
        return LOOM_OK;
    int par = loops[0];
    loom_status rc;
    int64_t e0 = loom_iter_extent(sch, s, S->loops[0].iter);
    if (n > 2 && e0 > 0 && e0 < (int64_t)lim->cores * JOBS_PER_CORE && !loom_iter_reduces(sch, s, S->loops[1].iter) &&
        loom_iter_extent(sch, s, S->loops[1].iter) > 0 && S->iters[S->loops[0].iter].kind == LOOM_ITER_VAR &&
        S->iters[S->loops[1].iter].kind == LOOM_ITER_VAR && S->loops[1].kind == LOOM_LOOP_SERIAL) {
        int pair[2] = {loops[0], loops[1]};
        /* a sparse or masked second loop does not fuse (fuse-sparse): the
         * outer loop alone is parallel then */
        if ((rc = loom_fuse(sch, pair, 2, &par, err)) && rc != LOOM_ERR_SEMANTIC)
            return rc;
    }
    return loom_parallel(sch, par, err);
}

/* A balanced row partition (issue 13; dsl/schedule/query.h LOOM_ANN_BALANCE) of a
 * parallel row loop of a CSR-like operand: chunks of equal nonzeros, their
 * count a SampleCategorical over {0 (off: equal rows), 1, 4, 16} x cores
 * feeding a "balance" annotation.  Nothing for other loops. */
static loom_status sample_balance(loom_schedule *sch, int s, int par, const loom_limits *lim, loom_error *err)
{
    const loom_stage *S = &sch->stages[s];
    if (S->loops[0].iter != sch->rvs[par].iter || loom_balance_tensor(sch, s, 0) < 0)
        return LOOM_OK;
    int64_t cores = lim->cores > 0 ? lim->cores : 1;
    const int64_t chunks[] = {0, cores, 4 * cores, 16 * cores};
    static const double UNIFORM[] = {1, 1, 1, 1};
    int v;
    loom_status rc = loom_sample_categorical(sch, 4, chunks, UNIFORM, NULL, NULL, &v, err);
    return rc ? rc : loom_annotate(sch, par, LOOM_ANN_BALANCE, v, 0, err);
}

/* sparse-prefetch: software prefetch of gathered rows (issue 13;
 * dsl/schedule/query.h LOOM_ANN_PREFETCH), after parallel-vectorize-unroll (the
 * loops' kinds are final): on each serial loop over the positions of a
 * compressed last level that gathers rows of a dense input
 * (loom_prefetch_tensor: SpMM's and SDDMM's nonzero loop, SpMV's), a
 * SampleCategorical over the distance {0 (none), 4, 16, 64} entries ahead
 * feeding a "prefetch" annotation.  The distances span a 512-byte row of
 * F = 128 floats (a few entries cover a memory latency) to short rows
 * (F = 16, SpMV: tens of entries). */
static loom_status sparse_prefetch(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    (void)ctx;
    static const int64_t DIST[] = {0, 4, 16, 64};
    static const double UNIFORM[] = {1, 1, 1, 1};
    int s = stage_of(sch, b);
    int loops[LOOM_MAX_LOOPS], n, any = 0;
    if (sch->stages[s].compute_at == LOOM_AT_INLINE || sch->stages[s].rolling || loom__fusion_claimed(sch, s) == 1)
        return LOOM_OK; /* a fused chain's blocks are the fused lowering's */
    for (int p = 0; p < sch->stages[s].nloops; p++)
        any |= sch->stages[s].loops[p].kind == LOOM_LOOP_SERIAL && loom_prefetch_tensor(sch, s, p) >= 0;
    if (!any)
        return LOOM_OK; /* no instruction at all (the traces of other blocks stay as they were) */
    loom_status rc = loom_get_loops(sch, b, loops, &n, err);
    for (int p = 0; !rc && p < n; p++) {
        const loom_stage *S = &sch->stages[s];
        if (S->loops[p].kind != LOOM_LOOP_SERIAL || loom_prefetch_tensor(sch, s, p) < 0)
            continue;
        int v;
        rc = loom_sample_categorical(sch, 4, DIST, UNIFORM, NULL, NULL, &v, err);
        if (!rc)
            rc = loom_annotate(sch, loops[p], LOOM_ANN_PREFETCH, v, 0, err);
    }
    return rc;
}

/* MetaSchedule's ParallelizeVectorizeUnroll, applied as primitives: the
 * outer free loop parallel (fused with the next free loop while its extent
 * is below cores x 16 jobs), the innermost loop vectorized when it is a
 * constant, legal extent up to min(64, the target's width limit) (a longer
 * constant loop is split first with SamplePerfectTile, innermost <= 64), and
 * an unroll factor sampled from {1, 4, 16} for the innermost serial loop
 * (Annotate(loop, "unroll", v): the lowering unrolls a serial loop so
 * annotated, as MetaSchedule's unroll annotations).
 * A block computed inside another block's loop is not parallel (it runs in
 * that loop's parallel region); an inlined block has no loops. */
static loom_status parallel_vectorize_unroll(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    static const int64_t UNROLL[] = {1, 4, 16};
    static const double UNIFORM[] = {1, 1, 1};
    int s = stage_of(sch, b);
    loom_stage *S = &sch->stages[s];
    if (S->compute_at == LOOM_AT_INLINE || S->nloops == 0 || loom__dense_owned(sch, s))
        return LOOM_OK;
    loom_limits lim = *ctx->limits;
    int loops[LOOM_MAX_LOOPS], n;
    loom_status rc = loom_get_loops(sch, b, loops, &n, err);
    if (rc)
        return rc;
    if (loom__fusion_claimed(sch, s) == 1) /* a fused chain: only its source's row loops parallel */
        return fused_source_parallel(sch, b, loops, n, &lim, err);
    if (S->compute_at == LOOM_AT_ROOT && loom__parallelizable(sch, s)) {
        int64_t e0 = loom_iter_extent(sch, s, S->loops[0].iter);
        int par = loops[0];
        if (n > 2 && e0 > 0 && e0 < (int64_t)lim.cores * JOBS_PER_CORE &&
            !loom_iter_reduces(sch, s, S->loops[1].iter) && loom_iter_extent(sch, s, S->loops[1].iter) > 0) {
            int pair[2] = {loops[0], loops[1]};
            rc = loom_fuse(sch, pair, 2, &par, err);
            if (rc == LOOM_ERR_SEMANTIC) /* fuse-sparse: the outer loop alone */
                rc = LOOM_OK, par = loops[0];
            else if (rc)
                return rc;
            rc = loom_get_loops(sch, b, loops, &n, err);
        }
        if (!rc)
            rc = loom_parallel(sch, par, err);
        if (!rc)
            rc = sample_balance(sch, s, par, &lim, err);
    }
    int64_t width = (int64_t)lim.vector_lanes * lim.max_vector_factor;
    int64_t maxv = width < MAX_VECTORIZE ? width : MAX_VECTORIZE;
    int vectorized = 0;
    if (!rc && n > 1 && S->loops[n - 1].kind == LOOM_LOOP_SERIAL) {
        int64_t e = loom_iter_extent(sch, s, S->loops[n - 1].iter);
        /* not inside a workspace's loop (offered, on or off): a split of a
         * tile there is a nested split the workspace cannot take
         * (cache-write-split); the long loop stays serial, and the C
         * compiler vectorizes it (the default's whole row of F = 128) */
        int ws = S->compute_at == LOOM_AT_ROOT ? loom__ws_candidate(sch, s, &lim) : -1;
        if (e > maxv && (ws < 0 || ws >= n - 1) && loom__vectorizable(sch, s, n - 1, e)) {
            int tiles[2], out[2];
            rc = loom_sample_perfect_tile(sch, loops[n - 1], 2, (int)maxv, NULL, NULL, tiles, err);
            if (!rc)
                rc = loom_split(sch, loops[n - 1], 2, tiles, NULL, out, err);
            if (!rc)
                rc = loom_get_loops(sch, b, loops, &n, err);
        }
        if (!rc && loom__vectorizable(sch, s, n - 1, maxv)) {
            rc = loom_vectorize(sch, loops[n - 1], err);
            vectorized = 1;
        }
    }
    int target = n - 1 - vectorized;
    if (!rc && target >= 0 && S->loops[target].kind == LOOM_LOOP_SERIAL) {
        int v;
        rc = loom_sample_categorical(sch, 3, UNROLL, UNIFORM, NULL, NULL, &v, err);
        /* an annotation whose value is the sampled RV (not Unroll with the
         * drawn constant), so a mutated decision changes it on replay */
        if (!rc)
            rc = loom_annotate(sch, loops[target], LOOM_ANN_UNROLL, v, 0, err);
    }
    return rc;
}

/* ---- the table ------------------------------------------------------------ */

static const struct {
    const char *name;
    loom_module_fn fn;
    const char *doc;
} BUILTINS[] = {
    {"fuse-producers", loom__fuse_producers,
     "SampleFusionGroup on the last block, then SampleComputeLocation of each temporary (fuse_producers.c)"},
    {"sparse-loop-order", sparse_loop_order, "SampleLoopOrder with Scorch's order as its prior"},
    {"multi-level-tiling", multi_level_tiling,
     "MetaSchedule's SSRSRS tiling with Scorch's reuse rule, PosSplit, a register-tile workspace; the dense space "
     "(dense.c) for dense contractions"},
    {"parallel-vectorize-unroll", parallel_vectorize_unroll,
     "outer loop parallel (balanced rows sampled), inner loop vectorized, a sampled unroll"},
    {"random-compute-location", random_compute_location, "MetaSchedule's RandomComputeLocation"},
    {"sparse-prefetch", sparse_prefetch, "a sampled prefetch distance on a nonzero loop gathering dense rows"},
    {"attention-fusion", loom__attention_fusion,
     "unfused or rolling update of a softmax chain, split-K, scores computed in the key loop (fusion.c)"},
    {"reverse-compute-location", loom__reverse_compute_location,
     "ReverseComputeAt of an elementwise consumer at a sampled loop of its producer (reverse_location.c)"},
    {"dot-partial-sums", loom__dot_partial_sums,
     "partial sums on a sampled dot product's vectorized reduction loop (partial_sums.c)"},
};

int loom__builtin_count(void) { return (int)(sizeof BUILTINS / sizeof *BUILTINS); }

loom_module_fn loom__builtin(int k, const char **name, const char **doc)
{
    *name = BUILTINS[k].name;
    *doc = BUILTINS[k].doc;
    return BUILTINS[k].fn;
}
