/* The attention-fusion module (module.h; DESIGN.md "Transformation
 * modules"; Neptune, Zhao et al. 2025): for a chain of reductions -- a max=
 * reduction m and the later reductions that read it through temporaries
 * (softmax's l and O) -- a SampleCategorical chooses between the unfused
 * chain (0) and the rolling update (1): the temporaries between them are
 * inlined and every reduction of the chain is rolled into m's reduction
 * loop with RollingUpdate(block, loop, v), whose enable input is the
 * sampled v, so a mutated decision switches the fusion on replay.  The
 * module applies to the last reduction of a chain (blocks are visited
 * consumers first, so it runs before the other modules touch the chain)
 * and only when the fusion is legal on the schedule as it stands (tried on
 * a scratch copy first).  Then a second SampleCategorical draws the split-K
 * factor {1, 2, 4, 8} for SplitKUpdate (1: no split; it takes effect only
 * while the chain is rolled): uniformly when the source has fewer rows
 * than the target has cores (decoding one query), and then its rolled loop
 * is made Parallel (which the validator accepts only with rolled blocks
 * and a factor > 1); with more rows 1 has probability 37/40 and the others
 * 1/40 each (split chunks would run serially there and turn the tiled
 * lowering off).
 *
 * The scores (FlashAttention, Dao et al. 2022, Algorithm 1: S_ij computed
 * per block of keys, never stored whole).  When m reads a temporary
 * reduction S computed at the root (attention's S(i, j) = Q(i, d) K(j, d)),
 * S's loops are reordered so its reductions are innermost (when they are
 * not) and S is computed at m's rolled loop with ComputeAt(S, loop, v) --
 * the same v, so v = 1 is the FlashAttention schedule of
 * bench/bench_attention.c and v = 0 leaves S at the root, scheduled by the
 * other modules.  Last, two SampleCategoricals annotate the rolled loop for
 * the fused lowering: "row_tile" in {1, 2, 4, 8, 12, 16} (8, 12 and 16
 * at 3/11 each, 4 at 1/11, 1 and 2 at 1/22: few rows reload the keys per
 * row and ran at half the speed; 12 rows are two groups of 6 x 2 vectors
 * on 16 registers; FlashAttention's Br:
 * consecutive rows of m's innermost row loop processed together, sharing
 * each block of keys) and "key_tile" in {16, 32, 64} (Bc: keys per block);
 * a lowering that does not read them ignores them.  Two fixed annotations
 * follow: the target's "vector_lanes" and "vector_registers" (ctx->limits),
 * to which the lowering fits the dot product's lane accumulators and its
 * register tiles (loom_register_tile; two vectors per row when groups of
 * >= 6 rows fit: runtime/lower/lower_fusion_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "../traces/validate.h"

static int reduces(const loom_stmt *st) { return st->nvars > st->nfree; }

/* Does expression e read tensor t, looking through the non-reduction
 * temporaries defined after stage `after`? */
static int reads_via(const loom_program *prog, int e, int t, int after, int depth)
{
    const loom_expr *E = &prog->exprs[e];
    if (depth > 64 || E->kind == LOOM_EXPR_CONST)
        return 0;
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (E->tensor == t)
            return 1;
        int d = prog->tensors[E->tensor].def_stmt;
        return d > after && !reduces(&prog->stmts[d]) && reads_via(prog, prog->stmts[d].rhs, t, after, depth + 1);
    }
    for (int k = 0; k < E->nargs; k++)
        if (reads_via(prog, E->args[k], t, after, depth + 1))
            return 1;
    return 0;
}

/* The source of the chain that stage s belongs to, or -1. */
static int chain_source(const loom_program *prog, int s)
{
    const loom_stmt *st = &prog->stmts[s];
    if (!reduces(st) || st->nvars - st->nfree != 1)
        return -1;
    for (int m = s - 1; m >= 0; m--) {
        const loom_stmt *ms = &prog->stmts[m];
        if (ms->op == LOOM_ASSIGN_MAX && ms->nvars - ms->nfree == 1 && reads_via(prog, st->rhs, ms->lhs, m, 0))
            return m;
    }
    return -1;
}

int loom__fusion_claimed(const loom_schedule *sch, int s)
{
    const loom_stage *S = &sch->stages[s];
    if (S->rolling)
        return 1;
    /* computed at a rolled loop (the scores): one value per step there */
    if (S->compute_at == LOOM_AT_LOOP && !S->at_after && loom_stage_rolled_into(sch, S->at_stage, S->at_iter))
        return 1;
    for (int q = 0; q < sch->nstages; q++) {
        const loom_stage *Q = &sch->stages[q];
        if (!Q->rolling)
            continue;
        if (Q->at_stage == s)
            return 1; /* a source */
        /* a producer the source reads: kept at the root (its loops are
         * scheduled as usual) */
        const loom_program *prog = sch->prog;
        if (s < Q->at_stage && prog->tensors[prog->stmts[s].lhs].role == LOOM_TENSOR_TEMP &&
            reads_via(prog, prog->stmts[Q->at_stage].rhs, prog->stmts[s].lhs, s, 0))
            return 2;
    }
    return 0;
}

/* Inline the temporaries of the chain and roll its reductions (enable_rv:
 * the sampled switch, -1 on the scratch copy). */
static loom_status apply_chain(loom_schedule *sch, int m, int last, int enable_rv, loom_error *err)
{
    const loom_program *prog = sch->prog;
    int mb, loops[LOOM_MAX_LOOPS], n;
    loom_status st = loom_get_block(sch, prog->tensors[prog->stmts[m].lhs].name, &mb, err);
    if (!st)
        st = loom_get_loops(sch, mb, loops, &n, err);
    for (int t = m + 1; !st && t < last; t++) {
        const loom_stmt *ts = &prog->stmts[t];
        if (reduces(ts) || prog->tensors[ts->lhs].role != LOOM_TENSOR_TEMP || sch->stages[t].compute_at == LOOM_AT_INLINE)
            continue;
        int b;
        if (!(st = loom_get_block(sch, prog->tensors[ts->lhs].name, &b, err)))
            st = loom_compute_inline(sch, b, err);
    }
    for (int r = m + 1; !st && r <= last; r++) {
        if (chain_source(prog, r) != m)
            continue;
        int b;
        if (!(st = loom_get_block(sch, prog->tensors[prog->stmts[r].lhs].name, &b, err)))
            st = loom_rolling_update(sch, b, loops[n - 1], enable_rv, err);
    }
    return st;
}

/* The scores of source m: a temporary reduction computed at the root that
 * m reads directly (the first such block), or -1. */
static int scores_block(const loom_schedule *sch, int m)
{
    const loom_program *prog = sch->prog;
    for (int p = 0; p < m; p++) {
        const loom_stmt *ps = &prog->stmts[p];
        if (reduces(ps) && prog->tensors[ps->lhs].role == LOOM_TENSOR_TEMP &&
            sch->stages[p].compute_at == LOOM_AT_ROOT && loom_expr_reads(prog, prog->stmts[m].rhs, ps->lhs))
            return p;
    }
    return -1;
}

/* Reorder stage p's loops so its reductions are innermost (only when they
 * are not), then ComputeAt(p, loop, enable_rv). */
static loom_status place_scores(loom_schedule *sch, int p, int loop_rv, int enable_rv, loom_error *err)
{
    const loom_program *prog = sch->prog;
    int b, loops[LOOM_MAX_LOOPS], n, order[LOOM_MAX_LOOPS], k = 0, sorted = 1, seen_red = 0;
    loom_status st = loom_get_block(sch, prog->tensors[prog->stmts[p].lhs].name, &b, err);
    if (!st)
        st = loom_get_loops(sch, b, loops, &n, err);
    if (st)
        return st;
    for (int q = 0; q < n; q++) {
        int red = loom_iter_reduces(sch, p, sch->rvs[loops[q]].iter);
        if (!red && seen_red)
            sorted = 0;
        seen_red |= red;
    }
    if (!sorted) {
        for (int red = 0; red < 2; red++)
            for (int q = 0; q < n; q++)
                if (loom_iter_reduces(sch, p, sch->rvs[loops[q]].iter) == red)
                    order[k++] = loops[q];
        st = loom_reorder(sch, order, n, err);
    }
    return st ? st : loom_compute_at_if(sch, b, loop_rv, enable_rv, err);
}

/* The tile sizes the fused lowering reads, sampled and annotated on the
 * rolled loop (their values are the sampled RVs, so a mutated decision
 * changes them on replay), and the target's vector lanes and registers
 * (fixed values) that the lowering fits its register tiles to. */
static loom_status annotate_tiles(loom_schedule *sch, int loop_rv, const loom_limits *lim, loom_error *err)
{
    static const int64_t ROWS[] = {1, 2, 4, 8, 12, 16};
    /* 8, 12 and 16 rows are drawn 3/11 each, 4 rows 1/11, 1 and 2 rows
     * 1/22 each (kept for the mutators): with the register tiles of
     * lower_fusion_tile.c (one vector of keys per row, K reloaded per row
     * group) fewer rows ran at about half the speed -- 12 x 512 x 64, one
     * core, CPU time on a shared host, key tiles 16-64: AVX-512 4 rows
     * 73-99, 8 rows 114-117, 16 rows 114-132 GFLOP/s; AVX2 (8 lanes, 16
     * registers) 2 rows 28-35, 4 rows 33-34, 8 rows 55-65, 16 rows 65;
     * campaign of 48 trials (2 cores): 16 x 64 3.4 ms, 8 x 64 3.7 ms,
     * 2 x 16 7.5 ms.  32 rows measured no faster than 16 (not offered).
     * With the earlier 1/7, 1/7, 5/21 x 3 only 48% of the fused samples had
     * 8 or more rows and a 16-trial campaign could end on a 2-row tile at
     * half the speed.  12 rows: the register tiles of two vectors per row
     * need groups of at least 6 rows (lower_fusion_internal.h), which 16
     * registers (AVX2) allow only as 6 + 6: 12 x 512 x 64 on AVX2, one
     * thread, CPU time, machine shared: 70-71 GFLOP/s against 63-64 for the
     * best 8- and 16-row tiles (1.11x); on AVX-512 (12 rows x 2 vectors in
     * one group) 127-129 against 131-137 on 12 x 512, 140 against 135 on
     * 1 x 4096 -- a point for the search, not a default. */
    static const double RPROBS[] = {0.5, 0.5, 1, 3, 3, 3};
    static const int64_t KEYS[] = {16, 32, 64};
    static const double KPROBS[] = {1, 1, 1};
    int rv, kv;
    loom_status st = loom_sample_categorical(sch, 6, ROWS, RPROBS, NULL, NULL, &rv, err);
    if (!st)
        st = loom_annotate(sch, loop_rv, LOOM_ANN_ROW_TILE, rv, 0, err);
    if (!st)
        st = loom_sample_categorical(sch, 3, KEYS, KPROBS, NULL, NULL, &kv, err);
    if (!st)
        st = loom_annotate(sch, loop_rv, LOOM_ANN_KEY_TILE, kv, 0, err);
    if (!st)
        st = loom_annotate(sch, loop_rv, LOOM_ANN_VECTOR_LANES, -1, lim->vector_lanes, err);
    if (!st)
        st = loom_annotate(sch, loop_rv, LOOM_ANN_VECTOR_REGISTERS, -1, loom_limits_registers(lim), err);
    return st;
}

loom_status loom__attention_fusion(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    static const int64_t CHOICES[] = {0, 1};
    static const double PROBS[] = {1, 1};
    const loom_program *prog = sch->prog;
    int s = sch->rvs[b].stage;
    int m = chain_source(prog, s);
    if (m < 0 || sch->stages[s].compute_at != LOOM_AT_ROOT || sch->stages[m].compute_at != LOOM_AT_ROOT)
        return LOOM_OK;
    for (int q = s + 1; q < prog->nstmts; q++)
        if (chain_source(prog, q) == m)
            return LOOM_OK; /* not the last reduction of the chain */
    /* legal as the schedule stands?  (a scratch copy, not recorded) */
    loom_schedule *tmp = malloc(sizeof *tmp);
    if (!tmp)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_schedule_copy(tmp, sch);
    tmp->recorder = NULL;
    int ok = apply_chain(tmp, m, s, -1, NULL) == LOOM_OK;
    int scores = ok ? scores_block(tmp, m) : -1;
    if (scores >= 0) {
        /* placing S must not make a valid fused chain invalid */
        loom_violation vio;
        int valid = loom_validate(tmp, ctx->limits, &vio, NULL) == LOOM_OK;
        int mb, ml[LOOM_MAX_LOOPS], nl;
        if (loom_get_block(tmp, prog->tensors[prog->stmts[m].lhs].name, &mb, NULL) ||
            loom_get_loops(tmp, mb, ml, &nl, NULL) || place_scores(tmp, scores, ml[nl - 1], -1, NULL) ||
            (valid && loom_validate(tmp, ctx->limits, &vio, NULL) != LOOM_OK))
            scores = -1;
    }
    free(tmp);
    if (!ok)
        return LOOM_OK;
    static const int64_t FACTORS[] = {1, 2, 4, 8};
    /* split-K is the parallelism of a source with fewer rows than cores
     * (FlashDecoding); with more rows its chunks run serially inside a
     * parallel row loop, add the combine, and keep the tiled lowering off
     * (lower_fusion_tile.c): measured 12-13 ms against 5.2 ms for the best
     * tiled schedule at 12 x 512 x 64 (10-11 ms against 3.4 ms in a
     * 48-trial campaign).  Those factors stay in the space for the
     * mutators, at 1/40 each (a fused sample is then unsplit 37/40 times). */
    static const double FPROBS_FEW[] = {1, 1, 1, 1}, FPROBS_MANY[] = {37, 1, 1, 1};
    int64_t rows = 1;
    for (int k = 0; k < prog->stmts[m].nfree; k++)
        rows *= loom_program_var_extent(prog, prog->stmts[m].vars[k]);
    int few = rows < ctx->limits->cores;
    int v, fv, mb, loops[LOOM_MAX_LOOPS], n;
    /* No default here (loom_space_default): neither choice is the default
     * schedule's unfused chain with P materialized -- the unfused choice
     * inlines P, whose exp the output's loop then recomputes once per
     * column (6x the default's time simulated at 128 x 128 x 64), and the
     * rolling update with the prior's most probable tiles simulated 10-20x
     * slower -- so a campaign starts from modules/default.c's schedule. */
    if (ctx->defaults)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, NULL, 0, 0,
                              "no default: the default schedule's unfused chain is not a choice of this module");
    loom_status st = loom_sample_categorical(sch, 2, CHOICES, PROBS, NULL, NULL, &v, err);
    if (!st)
        st = apply_chain(sch, m, s, v, err);
    if (!st)
        st = loom_get_block(sch, prog->tensors[prog->stmts[m].lhs].name, &mb, err);
    if (!st)
        st = loom_get_loops(sch, mb, loops, &n, err);
    if (!st)
        st = loom_sample_categorical(sch, 4, FACTORS, few ? FPROBS_FEW : FPROBS_MANY, NULL, NULL, &fv, err);
    if (!st)
        st = loom_split_k_update(sch, mb, loops[n - 1], fv, 0, err);
    if (!st && few)
        st = loom_parallel(sch, loops[n - 1], err);
    if (!st && scores >= 0)
        st = place_scores(sch, scores, loops[n - 1], v, err);
    if (!st)
        st = annotate_tiles(sch, loops[n - 1], ctx->limits, err);
    return st;
}
