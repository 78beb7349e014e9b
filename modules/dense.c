/* The design space of a dense contraction (GEMM and its relatives: X.W of a
 * GCN layer, Q.K^T and P.V of unfused attention) -- the BLAS-class kernel
 * that TVM's CPU rules reach (../shared/research/metaschedule.md 7:
 * MultiLevelTiling "SSRSRS" with cache_write of the output tile,
 * ParallelizeVectorizeUnroll), expressed with loom's primitives:
 *
 *   batch.. i.0 j.0 | k.0 | i.1 j.1 | k.1 | i.2 j.2
 *   `---parallel---'          CacheWrite here: the register tile
 *                                             i.2 (unrolled) x j.2 (vector)
 *
 * j is the output's last index (unit stride in the output and in the
 * operand whose last index it is: the vector loop); i the output index
 * before it (the rows of the register tile, each a broadcast of the other
 * operand); k.0 x k.1 the reduction, blocked so the operand panels stay in
 * cache; the workspace at j.1 holds the i.2 x j.2 register tile, added into
 * C once per k.0 block (CacheWrite's accumulating copy-out, dsl/schedule/schedule.h).
 * gcc keeps such a tile (a constant-extent local array, its row loop fully
 * unrolled, its column loop `omp simd`) in vector registers: measured with
 * gcc 12 -O3 on Zen 4, the inner loop is one broadcast and j.2 / lanes FMAs
 * per row, no loads or stores of the tile.  The register tile is bounded by
 * the target's register file (lim->vector_registers: i.2 <= regs / 2, j.2
 * <= 4 vectors of lim->vector_lanes); the other tiles are free.  i.2 need
 * not divide the rows (tile_rows below): AVX2's 6 x 16 tile at 1024.
 * The operand indexed by j (B) may be packed at k.0 (PackPanel), and the
 * outer loops may take GotoBLAS's panel order j.0 k.0 i.0 (sample_panel_order
 * below), which the default takes when every core gets a column panel.
 * Packing A as well (an MR x k.1 panel, interleaved) is not offered: by hand
 * in the panel order it was slower (GEMM 1024^3, AVX2, one thread: 0.87x
 * OpenBLAS packed vs 0.95x unpacked; with k.1 = 512 0.91x vs 0.96x): the
 * six A rows stream from L1 well enough and the copy costs more.
 *
 * A stage the space does not fit (a sparse operand, a placed or tiled
 * block, no reduction, a one-dimensional output, an output index that is no
 * operand's last index) is left to multi-level-tiling's general rules. */
#include <string.h>

#include "builtin.h"

static int regs_of(const loom_limits *lim)
{
    return lim->vector_registers > 0 ? lim->vector_registers : 16;
}

static int lanes_of(const loom_limits *lim)
{
    return lim->vector_lanes > 0 ? lim->vector_lanes : 4;
}

/* Does some dense operand of expression e have var x as its last index? */
static int last_index_somewhere(const loom_program *prog, int e, int x)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return E->nidx > 0 && E->idx[E->nidx - 1] == x;
    for (int a = 0; a < E->nargs && E->kind != LOOM_EXPR_CONST; a++)
        if (last_index_somewhere(prog, E->args[a], x))
            return 1;
    return 0;
}

/* Is every tensor expression e reads dense? */
static int reads_dense(const loom_program *prog, int e)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return !loom_tensor_is_sparse(prog, E->tensor);
    for (int a = 0; a < E->nargs && E->kind != LOOM_EXPR_CONST; a++)
        if (!reads_dense(prog, E->args[a]))
            return 0;
    return 1;
}

int loom__dense_applies(const loom_schedule *sch, int s)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[s];
    const loom_stage *S = &sch->stages[s];
    int order = prog->tensors[st->lhs].order;
    if (S->compute_at != LOOM_AT_ROOT || S->nloops < 3 || loom__fusion_claimed(sch, s) == 1 || S->cache_iter >= 0 ||
        S->rfactor_iter >= 0 || order < 2 || st->nfree == st->nvars || loom_tensor_is_sparse(prog, st->lhs) ||
        !reads_dense(prog, st->rhs))
        return 0;
    for (int p = 0; p < S->nloops; p++) {
        const loom_iter *I = &S->iters[S->loops[p].iter];
        if (I->kind != LOOM_ITER_VAR || S->loops[p].kind != LOOM_LOOP_SERIAL || S->loops[p].nann > 0 ||
            loom_iter_extent(sch, s, S->loops[p].iter) <= 0)
            return 0; /* tiled, annotated or data-dependent already */
    }
    int j = st->lhs_idx[order - 1], i = st->lhs_idx[order - 2];
    return i != j && last_index_somewhere(prog, st->rhs, j);
}

/* The tile decisions of one draw; NULL members are sampled. */
typedef struct dense_tiles {
    const int64_t *i3, *j3, *k2;
} dense_tiles;

static loom_status tile(loom_schedule *sch, int loop, int n, int max_inner, const int64_t *dec, int *tiles, int *out,
                        loom_error *err)
{
    loom_status rc = loom_sample_perfect_tile(sch, loop, n, max_inner, dec, NULL, tiles, err);
    return rc ? rc : loom_split(sch, loop, n, tiles, NULL, out, err);
}

/* The i.1 tiles offered (rows of register tiles per cache block). */
static const int64_t I1_CHOICES[] = {1, 2, 4, 8, 16, 32, 64};
#define N_I1 ((int)(sizeof I1_CHOICES / sizeof I1_CHOICES[0]))

/* The most register-tile rows offered: i.2 <= vector_registers / 2. */
static int64_t mr_cap(const loom_limits *lim, int64_t E)
{
    int64_t cap = regs_of(lim) / 2;
    return cap < E ? cap : E;
}

/* The row tiles i.0 x i.1 x i.2 (issue 12: non-dividing register tiles).
 * i.2 (MR, the register tile's rows) is SampleCategorical over 1..cap,
 * divisor of the extent or not, weighted by MR (more accumulators); i.1
 * SampleCategorical over 1, 2, 4, .. 64 (<= the extent); i.0 inferred
 * (ceil), recorded as a one-candidate categorical so Split's factors are
 * all ExprRVs.  A tiling that overhangs the extent is legal (Split guards
 * it); the lowering clamps the operand rows of the overhanging register
 * tile and drops its rows in the copy-out (runtime/lower/lower_loops.c), so
 * MR = 6 at 1024 rows (AVX2's 6 x 16 tile) or 8 at 2708 costs only the
 * last tile's extra rows.  dec (the default): {ignored, i.1, MR}. */
static loom_status tile_rows(loom_schedule *sch, int loop, const loom_limits *lim, const int64_t *dec, int *tiles,
                             int *out, loom_error *err)
{
    int s = sch->rvs[loop].stage;
    int64_t E = loom_iter_extent(sch, s, sch->rvs[loop].iter), cand[64], i1c[N_I1];
    double w[64], u[N_I1];
    int64_t cap = mr_cap(lim, E), d1 = 0, d2 = 0;
    int n1 = 0, n2 = 0;
    for (int64_t m = 1; m <= cap && n2 < 64; m++) {
        if (dec && dec[2] == m)
            d2 = n2;
        w[n2] = (double)m;
        cand[n2++] = m;
    }
    for (int k = 0; k < N_I1 && I1_CHOICES[k] <= E; k++) {
        if (dec && dec[1] == I1_CHOICES[k])
            d1 = n1;
        u[n1] = 1.0;
        i1c[n1++] = I1_CHOICES[k];
    }
    static const int64_t INFERRED[1] = {0};
    static const double ONE[1] = {1.0};
    const int64_t zero = 0;
    loom_status rc = loom_sample_categorical(sch, 1, INFERRED, ONE, dec ? &zero : NULL, NULL, &tiles[0], err);
    if (!rc)
        rc = loom_sample_categorical(sch, n1, i1c, u, dec ? &d1 : NULL, NULL, &tiles[1], err);
    if (!rc)
        rc = loom_sample_categorical(sch, n2, cand, w, dec ? &d2 : NULL, NULL, &tiles[2], err);
    return rc ? rc : loom_split(sch, loop, 3, tiles, NULL, out, err);
}

/* Is a producer fused into stage s by the fusion group (SampleFusionGroup,
 * drawn before: blocks are visited consumers first)?  It is computed at one
 * of s's loops, so the outer tiles stay separate loops (a loop fused over
 * i x j leaves it no place: compute-at-fused-loop). */
static int has_fused_producer(const loom_schedule *sch, int s)
{
    for (int p = 0; p < s; p++)
        if (sch->stages[p].fuse == LOOM_FUSE_YES && loom_first_consumer(sch->prog, p) == s)
            return 1;
    return 0;
}

/* The operand worth packing: a dense input read with the output's last
 * index j as its own last index (B of C = A B: its k x j panel is streamed
 * once per row of register tiles); -1 when none. */
static int packable_operand(const loom_schedule *sch, int s)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[s];
    int jv = st->lhs_idx[prog->tensors[st->lhs].order - 1], idx[LOOM_MAX_ORDER];
    for (int t = 0; t < prog->ntensors; t++) {
        int n = t == st->lhs || prog->tensors[t].role == LOOM_TENSOR_TEMP || loom_tensor_is_sparse(prog, t)
                    ? -1
                    : loom__pack_idx(prog, s, t, idx);
        if (n >= 2 && idx[n - 1] == jv)
            return t;
    }
    return -1;
}

/* The panel order (issue 12, GotoBLAS / BLIS's loop order): j.0 k.0 i.0
 * instead of i.0 j.0 k.0, so a packed k.1 x (j.1 x j.2) panel of the operand
 * indexed by j (PackPanel at k.0) is copied once per column panel and
 * reused by every row of the output, not once per i.0 row block; the
 * parallel loop is then j.0 alone.  A SampleCategorical {0, 1} offered when
 * there is a packable operand, no batch loop, no fused producer and no
 * j-first order from before; the default takes it when j.0 gives every core
 * a panel and the panel fits LOOM_MAX_PACK_BYTES (measured with gcc 12 -O3
 * -mno-avx512f on Zen 4, GEMM 1024^3, one thread, CPU time against
 * OpenBLAS's Haswell sgemm: 0.71-0.77x without packing, 0.80x packed at k.0
 * under i.0, 0.92-0.96x in this order).  The decision steers the Reorder the
 * module records (a mutation of it replays the recorded order; the
 * loop-order mutator changes the order itself). */
static loom_status sample_panel_order(loom_schedule *sch, int s, const loom_limits *lim, const dense_tiles *dec,
                                      int nbatch, int j_first, int *panel, loom_error *err)
{
    *panel = 0;
    if (nbatch > 0 || j_first || has_fused_producer(sch, s) || packable_operand(sch, s) < 0)
        return LOOM_OK;
    static const int64_t ONOFF[2] = {0, 1};
    static const double HALF[2] = {0.5, 0.5};
    /* the default: a column panel per core, and B's k.1 x (j.1 x j.2) panel fits the pack's budget
     * (without the pack the order only loses the fused parallel loop) */
    int64_t want = dec && dec->j3 && dec->k2 && dec->j3[0] >= (int64_t)(lim->cores > 0 ? lim->cores : 1) &&
                   dec->k2[1] * dec->j3[1] * dec->j3[2] * 4 <= LOOM_MAX_PACK_BYTES;
    int rv;
    loom_status rc = loom_sample_categorical(sch, 2, ONOFF, HALF, dec && dec->j3 ? &want : NULL, NULL, &rv, err);
    *panel = !rc && sch->rvs[rv].value == 1;
    return rc;
}

/* Split i, j and the first reduced var k, then reorder to
 * batch.. i0 j0 k0 <other reduced> i1 j1 k1 i2 j2 (j0 i0 ... j1 i1 when j's
 * loop came first; j0 k0 i0 i1 j1 .. in the panel order); out: the loops
 * [outer two of level 0 (j0 first in the panel order), outer two of level
 * 1, i2, j2], the i.2 tile's ExprRV and whether the panel order was taken. */
static loom_status split_and_order(loom_schedule *sch, int b, int s, const loom_limits *lim, const dense_tiles *dec,
                                   int *lp, int *nbatch, int *batch, int *vi2, int *k0, int *panel, loom_error *err)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[s];
    int order = prog->tensors[st->lhs].order;
    int jv = st->lhs_idx[order - 1], iv = st->lhs_idx[order - 2], kv = st->vars[st->nfree];
    int loops[LOOM_MAX_LOOPS], n, ti[3] = {-1, -1, -1}, tj[3], tk[2], oi[3] = {-1, -1, -1}, oj[3] = {-1, -1, -1}, ok[2] = {-1, -1};
    int others[LOOM_MAX_LOOPS], nothers = 0, j_first = 0, seen_i = 0;
    *nbatch = 0;
    loom_status rc = loom_get_loops(sch, b, loops, &n, err);
    for (int p = 0; !rc && p < n; p++) {
        int x = sch->stages[s].iters[sch->rvs[loops[p]].iter].var;
        seen_i |= x == iv;
        if (x == jv && !seen_i)
            j_first = 1; /* a loop order decided before (a plan's dataflow order) */
        if (x == jv)
            rc = tile(sch, loops[p], 3, 4 * lanes_of(lim), dec ? dec->j3 : NULL, tj, oj, err);
        else if (x == iv)
            rc = tile_rows(sch, loops[p], lim, dec ? dec->i3 : NULL, ti, oi, err);
        else if (x == kv)
            rc = tile(sch, loops[p], 2, -1, dec ? dec->k2 : NULL, tk, ok, err);
        else if (prog->vars[x].reduced)
            others[nothers++] = loops[p];
        else
            batch[(*nbatch)++] = loops[p];
    }
    if (!rc)
        rc = sample_panel_order(sch, s, lim, dec, *nbatch, j_first, panel, err);
    if (rc)
        return rc;
    int perm[LOOM_MAX_LOOPS], m = 0;
    if (*panel) {
        perm[m++] = oj[0], perm[m++] = ok[0];
        for (int q = 0; q < nothers; q++)
            perm[m++] = others[q];
        perm[m++] = oi[0], perm[m++] = oi[1], perm[m++] = oj[1], perm[m++] = ok[1], perm[m++] = oi[2],
        perm[m++] = oj[2];
        const int got[6] = {oj[0], oi[0], oi[1], oj[1], oi[2], oj[2]};
        memcpy(lp, got, sizeof got);
        *vi2 = ti[2];
        *k0 = ok[0];
        return loom_reorder(sch, perm, m, err);
    }
    for (int q = 0; q < *nbatch; q++)
        perm[m++] = batch[q];
    /* the outer tiles keep the order i and j had (j first when an earlier
     * module, e.g. a plan's dataflow order, put it first); the register
     * tile is always i.2 j.2, j.2 vectorized */
    int a0 = j_first ? oj[0] : oi[0], b0 = j_first ? oi[0] : oj[0];
    int a1 = j_first ? oj[1] : oi[1], b1 = j_first ? oi[1] : oj[1];
    perm[m++] = a0, perm[m++] = b0, perm[m++] = ok[0];
    for (int q = 0; q < nothers; q++)
        perm[m++] = others[q];
    perm[m++] = a1, perm[m++] = b1, perm[m++] = ok[1], perm[m++] = oi[2], perm[m++] = oj[2];
    const int got[6] = {a0, b0, a1, b1, oi[2], oj[2]};
    memcpy(lp, got, sizeof got);
    *vi2 = ti[2];
    *k0 = ok[0];
    return loom_reorder(sch, perm, m, err);
}

/* PackPanel of that operand's k.1 x (j.1 x j.2) panel at k.0, a sampled
 * on/off decision (the default: on in the panel order, off otherwise),
 * offered when the panel fits LOOM_MAX_PACK_BYTES with the tiles drawn. */
static loom_status maybe_pack(loom_schedule *sch, int b, int s, int k0, int is_default, int panel, loom_error *err)
{
    int t = packable_operand(sch, s);
    if (t < 0 || k0 < 0)
        return LOOM_OK;
    static const int64_t ONOFF[2] = {0, 1};
    static const double HALF[2] = {0.5, 0.5};
    const int64_t off = panel ? 1 : 0;
    int on;
    /* does the panel fit with these tiles? */
    loom_stage *S = &sch->stages[s];
    int pi = S->pack_iter, pt = S->pack_tensor;
    S->pack_iter = sch->rvs[k0].iter;
    S->pack_tensor = t;
    int64_t elems = loom_pack_panel_elems(sch, s);
    S->pack_iter = pi;
    S->pack_tensor = pt;
    loom_status rc = LOOM_OK;
    if (rc || elems < 0 || elems * 4 > LOOM_MAX_PACK_BYTES)
        return LOOM_OK;
    rc = loom_sample_categorical(sch, 2, ONOFF, HALF, is_default ? &off : NULL, NULL, &on, err);
    return rc ? rc : loom_pack_panel(sch, b, k0, sch->prog->tensors[t].name, on, err);
}

loom_status loom__dense_schedule(loom_schedule *sch, int b, const loom_limits *lim, const int64_t *i3,
                                 const int64_t *j3, const int64_t *k2, loom_error *err)
{
    int s = sch->rvs[b].stage;
    const dense_tiles dec = {i3, j3, k2};
    int lp[6] = {-1, -1, -1, -1, -1, -1}, batch[LOOM_MAX_LOOPS], nbatch, vi2 = -1, k0 = -1, panel = 0;
    loom_status rc = split_and_order(sch, b, s, lim, i3 ? &dec : NULL, lp, &nbatch, batch, &vi2, &k0, &panel, err);
    /* the register tile: accumulated in a local workspace at j.1, copied
     * (added, once per k.0 block) into the output */
    if (!rc)
        rc = loom_cache_write(sch, b, lp[3], err);
    if (!rc)
        rc = maybe_pack(sch, b, s, k0, i3 != NULL, panel, err);
    /* the outer tiles fused into one parallel loop (MetaSchedule fuses
     * while the extent is below cores x jobs; here i.0 x j.0, whose extent
     * the tiles decide); with batch loops (heads), those fused instead */
    int fuse[LOOM_MAX_LOOPS] = {lp[0], lp[1]}, nf = has_fused_producer(sch, s) || panel ? 1 : 2, par = lp[0];
    if (nbatch > 0) {
        memcpy(fuse, batch, sizeof(int) * (size_t)nbatch);
        nf = nbatch;
        par = batch[0];
    }
    if (!rc && nf > 1)
        rc = loom_fuse(sch, fuse, nf, &par, err);
    if (!rc)
        rc = loom_parallel(sch, par, err);
    if (!rc)
        rc = loom_annotate(sch, lp[4], LOOM_ANN_UNROLL, vi2, 0, err);
    if (!rc)
        rc = loom_vectorize(sch, lp[5], err);
    return rc;
}

loom_status loom__dense_tiling(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    if (ctx->defaults) { /* loom_space_default: the default schedule's tiles */
        int64_t i3[3], j3[3], k2[2];
        loom__dense_default_tiles(sch, sch->rvs[b].stage, ctx->limits, i3, j3, k2);
        return loom__dense_schedule(sch, b, ctx->limits, i3, j3, k2, err);
    }
    return loom__dense_schedule(sch, b, ctx->limits, NULL, NULL, NULL, err);
}

int loom__dense_owned(const loom_schedule *sch, int s)
{
    const loom_stage *S = &sch->stages[s];
    if (S->cache_iter < 0 || S->nloops == 0 || S->loops[S->nloops - 1].kind != LOOM_LOOP_VECTORIZED)
        return 0;
    for (int p = 0; p < S->nloops; p++)
        if (S->loops[p].kind == LOOM_LOOP_PARALLEL)
            return 1;
    return 0;
}

int64_t loom__divisor_at_most(int64_t e, int64_t cap)
{
    for (int64_t d = cap < e ? cap : e; d > 1; d--)
        if (e % d == 0)
            return d;
    return 1;
}

void loom__dense_default_tiles(const loom_schedule *sch, int s, const loom_limits *lim, int64_t *i3, int64_t *j3,
                               int64_t *k2)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[s];
    int order = prog->tensors[st->lhs].order, regs = regs_of(lim), lanes = lanes_of(lim);
    int64_t Ei = loom_program_var_extent(prog, st->lhs_idx[order - 2]);
    int64_t Ej = loom_program_var_extent(prog, st->lhs_idx[order - 1]);
    int64_t Ek = loom_program_var_extent(prog, st->vars[st->nfree]);
    /* the register tile: MR rows x nv vectors; the most accumulators MR x nv
     * that fit, ties to more vectors per row (fewer rows of the broadcast
     * operand streamed).  Fit, measured with gcc 12 -O3 on Zen 4 (GEMM
     * 1024^3 and 960^3, one thread, CPU time, against OpenBLAS sgemm):
     * with 16 registers (-mno-avx512f) 6 x 2 ymm (12 accumulators + 2
     * operand vectors + 1 broadcast) ran at 1.0x, 8 x 2 (16, spilling) at
     * 0.76x, so MR x nv + nv + 1 <= regs; with 32 registers 8 x 4 zmm ran
     * at 0.95-1.0x (the broadcast is an FMA memory operand, {1to16}) and
     * 5 or 6 x 4 at 0.96x, 12 x 2 at 0.73x, so MR x nv <= regs there. */
    /* MR need not divide the rows (tile_rows: the overhang is clamped and
     * dropped), so it is scored by the useful accumulators nv x Ei /
     * ceil(Ei / MR): 6 x 2 ymm at 1024 rows (5.99 useful rows of 6) beats
     * the dividing 4 x 2 */
    int64_t best_mr = 1, best_nr = loom__divisor_at_most(Ej, lanes);
    double best = 0;
    for (int nv = 1; nv <= 4; nv++) {
        int64_t nr = (int64_t)nv * lanes;
        if (Ej % nr)
            continue;
        int64_t cap = regs >= 32 ? regs / nv : (regs - nv - 1) / nv, space = mr_cap(lim, Ei);
        cap = cap < space ? cap : space;
        for (int64_t mr = 1; mr <= cap; mr++) {
            double useful = (double)nv * (double)Ei / (double)((Ei + mr - 1) / mr);
            if (useful >= best - 1e-9) {
                best = useful;
                best_mr = mr;
                best_nr = nr;
            }
        }
    }
    /* the cache tiles: k.1 up to 256 (an MR x k.1 panel of one operand and a
     * k.1 x j.1*NR panel of the other in L1/L2), j.1 * NR up to 128 columns,
     * i.1 * MR up to 64 rows, while the parallel level keeps >= 2 jobs per
     * core */
    int64_t k1 = loom__divisor_at_most(Ek, 256);
    if (k1 < 64 && Ek <= 4096)
        k1 = Ek; /* no useful divisor (Cora's 1433 is prime): one block */
    int64_t j1 = loom__divisor_at_most(Ej / best_nr, 128 / best_nr > 0 ? 128 / best_nr : 1);
    int c1 = 0;
    for (int k = 0; k < N_I1; k++)
        if (I1_CHOICES[k] <= Ei && I1_CHOICES[k] * best_mr <= 64)
            c1 = k;
    int64_t blocks_j = Ej / (best_nr * j1);
    while (c1 > 0 && (Ei + I1_CHOICES[c1] * best_mr - 1) / (I1_CHOICES[c1] * best_mr) * blocks_j < 2 * (int64_t)lim->cores)
        c1--;
    int64_t i1 = I1_CHOICES[c1];
    i3[0] = (Ei + best_mr * i1 - 1) / (best_mr * i1), i3[1] = i1, i3[2] = best_mr;
    j3[0] = Ej / (best_nr * j1), j3[1] = j1, j3[2] = best_nr;
    k2[0] = Ek / k1, k2[1] = k1;
}

/* ---- AddRFactor ---------------------------------------------------------- */

/* Does expression e read a temporary (a block that another module may place
 * inside this one's loops: rfactor cannot be combined with placements)? */
static int reads_temp(const loom_program *prog, int e)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return prog->tensors[E->tensor].role == LOOM_TENSOR_TEMP;
    for (int a = 0; a < E->nargs && E->kind != LOOM_EXPR_CONST; a++)
        if (reads_temp(prog, E->args[a]))
            return 1;
    return 0;
}

int loom__dense_rfactor_applies(const loom_schedule *sch, int s, const loom_limits *lim)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[s];
    const loom_stage *S = &sch->stages[s];
    if (S->compute_at != LOOM_AT_ROOT || S->nloops == 0 || loom__fusion_claimed(sch, s) == 1 || S->cache_iter >= 0 ||
        S->rfactor_iter >= 0 || st->nfree == st->nvars || loom_tensor_is_sparse(prog, st->lhs) ||
        !reads_dense(prog, st->rhs) || reads_temp(prog, st->rhs))
        return 0;
    int64_t free_iters = 1;
    for (int p = 0; p < S->nloops; p++) {
        const loom_iter *I = &S->iters[S->loops[p].iter];
        int64_t e = loom_iter_extent(sch, s, S->loops[p].iter);
        if (I->kind != LOOM_ITER_VAR || S->loops[p].kind != LOOM_LOOP_SERIAL || S->loops[p].nann > 0 || e <= 0)
            return 0;
        if (!prog->vars[I->var].reduced)
            free_iters *= e;
    }
    int64_t ek = loom_program_var_extent(prog, st->vars[st->nfree]);
    return free_iters < lim->cores && ek >= 2 * (int64_t)lim->cores;
}

loom_status loom__dense_rfactor(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    (void)ctx;
    int s = sch->rvs[b].stage;
    const loom_stmt *st = &sch->prog->stmts[s];
    int kv = st->vars[st->nfree], loops[LOOM_MAX_LOOPS], n, tk[2], ok[2];
    loom_status rc = loom_get_loops(sch, b, loops, &n, err);
    for (int p = 0; !rc && p < n; p++)
        if (sch->stages[s].iters[sch->rvs[loops[p]].iter].var == kv) {
            rc = tile(sch, loops[p], 2, -1, NULL, tk, ok, err);
            break;
        }
    if (rc)
        return rc;
    /* the partials' loop outermost, then the others in their order */
    rc = loom_get_loops(sch, b, loops, &n, err);
    int perm[LOOM_MAX_LOOPS], m = 0;
    perm[m++] = ok[0];
    for (int p = 0; p < n; p++)
        if (loops[p] != ok[0] && sch->rvs[loops[p]].iter != sch->rvs[ok[0]].iter)
            perm[m++] = loops[p];
    if (!rc)
        rc = loom_reorder(sch, perm, m, err);
    if (!rc)
        rc = loom_rfactor(sch, ok[0], err);
    if (!rc)
        rc = loom_parallel(sch, ok[0], err);
    return rc;
}
