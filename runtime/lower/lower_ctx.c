/* The context of lowering one statement (lower_internal.h): its out-of-memory
 * status, index extents, range bounds, operand group positions, reduction
 * identity, tensor sizes, loop notes and the region an index's inner tiles
 * cover.  The bottom layer of the statement lowering: lower.c,
 * lower_loops.c, lower_output.c and lower_prefetch.c call it; it calls only
 * lir.c. */
#include "lower_internal.h"
#include "../../dsl/schedule/query.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

loom_status loom__lw_fail_nomem(lctx *c)
{
    if (c->status == LOOM_OK)
        c->status = loom_error_set(c->err, LOOM_ERR_NOMEM, c->prog->path, c->st ? c->st->line : 0, 0,
                                   "out of memory while lowering");
    return c->status;
}

/* A (tensor, dimension) indexed by var v in the statement, for its extent. */
lir_expr *loom__lw_var_extent(lctx *c, int v)
{
    const loom_stmt *st = c->st;
    const loom_tensor *L = &c->prog->tensors[st->lhs];
    /* prefer inputs: their dims are always set */
    for (int e = 0; e < c->prog->nexprs; e++) {
        const loom_expr *E = &c->prog->exprs[e];
        if (E->kind != LOOM_EXPR_ACCESS || c->prog->vars[v].stmt != c->si)
            continue;
        for (int d = 0; d < E->nidx; d++)
            if (E->idx[d] == v)
                return loom_lir_dim(c->f, E->tensor, d);
    }
    for (int d = 0; d < L->order; d++)
        if (st->lhs_idx[d] == v)
            return loom_lir_dim(c->f, st->lhs, d);
    return NULL;
}

/* lo/hi of a range level `l` of group gi, given the parent coordinate. */
void loom__lw_range_bounds(lctx *c, int gi, int l, lir_expr **lo, lir_expr **hi)
{
    const group *g = &c->g[gi];
    const loom_format *F = group_format(c, gi);
    lir_func *f = c->f;
    lir_expr *parent = loom_lir_var_ref(f, c->xv[g->var[l - 1]]);
    lir_expr *ncols = loom_lir_dim(f, g->root, F->mode[l]);
    if (F->kind == LOOM_FORMAT_CAUSAL) {
        *lo = loom_lir_int(f, 0);
        *hi = loom_lir_bin(f, LIR_MIN, loom_lir_bin(f, LIR_ADD, parent, loom_lir_int(f, 1)), ncols);
    } else { /* band */
        int64_t w = F->band_width;
        *lo = loom_lir_bin(f, LIR_MAX, loom_lir_int(f, 0), loom_lir_bin(f, LIR_SUB, parent, loom_lir_int(f, w)));
        *hi = loom_lir_bin(f, LIR_MIN, ncols, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, c->xv[g->var[l - 1]]), loom_lir_int(f, w + 1)));
    }
}

lir_expr *loom__lw_parent_pos(lctx *c, int gi, int l)
{
    return l == 0 ? loom_lir_int(c->f, 0) : loom_lir_var_ref(c->f, c->g[gi].pos[l - 1]);
}

lir_expr *loom__lw_identity(lctx *c)
{
    return loom_lir_float(c->f, c->st->op == LOOM_ASSIGN_MAX ? -INFINITY : 0.0);
}

/* After index x is bound: positions of dense levels and range levels whose
 * parent is known.  Range levels get their position from the range start. */
int loom__lw_bind_positions(lctx *c, int x, lir_stmt *seq)
{
    lir_func *f = c->f;
    for (int gi = 0; gi < c->ngroups; gi++) {
        group *g = &c->g[gi];
        const loom_format *F = group_format(c, gi);
        for (int l = 0; l < g->nlevels; l++) {
            if (g->var[l] != x || g->pos[l] >= 0)
                continue;
            if (F->level[l] == LOOM_LEVEL_COMPRESSED)
                continue; /* bound by its loop */
            if (l > 0 && g->pos[l - 1] < 0)
                return c->status = loom_error_set(
                           c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                           "discordant-traversal: tensor %s's level %d (index %s) is reached outside the loop of its "
                           "parent level (index %s); put %s's loop inside %s's",
                           c->prog->tensors[g->root].name, l + 1, c->prog->vars[x].name,
                           c->prog->vars[g->var[l - 1]].name, c->prog->vars[x].name,
                           c->prog->vars[g->var[l - 1]].name);
            char name[48];
            snprintf(name, sizeof name, "p%s%d", c->prog->tensors[g->root].name, l + 1);
            g->pos[l] = loom_lir_new_var(f, name, LIR_I64);
            lir_expr *v;
            if (F->level[l] == LOOM_LEVEL_DENSE) {
                v = l == 0 ? loom_lir_var_ref(f, c->xv[x])
                           : loom_lir_bin(f, LIR_ADD,
                                     loom_lir_bin(f, LIR_MUL, loom__lw_parent_pos(c, gi, l), loom_lir_dim(f, g->root, F->mode[l])),
                                     loom_lir_var_ref(f, c->xv[x]));
            } else { /* range: pos[parent] + (x - lo) */
                int pb = loom_lir_buffer_get(f, LIR_BUF_POS, g->root, l);
                v = loom_lir_bin(f, LIR_ADD, loom_lir_load(f, pb, loom__lw_parent_pos(c, gi, l)),
                            loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, c->xv[x]), loom_lir_var_ref(f, g->lo[l])));
            }
            if (loom_lir_append(f, seq, loom_lir_let(f, g->pos[l], v)))
                return loom__lw_fail_nomem(c);
        }
    }
    return LOOM_OK;
}

/* Whether loop d is inside the scalar accumulator's scope and a loop
 * inside it is vectorized: that loop reduces into the accumulator (an `omp
 * simd reduction`, below). */
static int encloses_vector_reduction(const lctx *c, int d)
{
    if (!c->has_red || !c->scalar_acc || d <= c->last_free_depth || d == c->psum_depth)
        return 0;
    for (int k = d + 1; k < c->S->nloops; k++)
        if (c->S->loops[k].kind == LOOM_LOOP_VECTORIZED)
            return 1;
    return 0;
}

/* A vectorized loop inside the scalar accumulator's scope reduces into it.
 * A loop around such a reduction is never unrolled (issue 29): GCC 12
 * unrolls a loop under `#pragma GCC unroll k` (k > 1) before it vectorizes,
 * and the copies of the `omp simd reduction` loop inside stay scalar -- SDDMM
 * D=64 with d split 2 x 32 and the outer part unrolled ran 32 scalar
 * multiply-adds twice per nonzero, 3.9x the time of the unsplit schedule on
 * Cora (AVX-512, 2 threads); without the pragma both parts vectorize. */
void loom__lw_note_loop(lctx *c, int d, lir_stmt *loop)
{
    /* the unroll factor of every unrolled loop (variable, position, split or
     * fused); a serial loop annotated "unroll" = k > 1 (MetaSchedule's
     * unroll annotation, whose value a sampled ExprRV may give) is unrolled
     * k times */
    if (d >= 0 && d < c->S->nloops) {
        const loom_loop *L = &c->S->loops[d];
        int around_reduction = encloses_vector_reduction(c, d);
        if (loop->loop_kind == LIR_LOOP_UNROLLED && around_reduction)
            loop->loop_kind = LIR_LOOP_SERIAL;
        if (loop->loop_kind == LIR_LOOP_UNROLLED && L->unroll > 0)
            loop->unroll = L->unroll;
        if (loop->loop_kind == LIR_LOOP_SERIAL && !around_reduction)
            for (int k = 0; k < L->nann; k++)
                if (!strcmp(L->ann[k].key, LOOM_ANN_UNROLL) && L->ann[k].value > 1) {
                    loop->loop_kind = LIR_LOOP_UNROLLED;
                    loop->unroll = (int)(L->ann[k].value < 1 << 20 ? L->ann[k].value : 1 << 20);
                    loop->unroll_hint = 1;
                }
    }
    if (loop->loop_kind == LIR_LOOP_VECTORIZED && c->has_red && c->scalar_acc && d > c->last_free_depth &&
        d != c->psum_depth) { /* the partial sums' loop updates them elementwise */
        loop->red_var = c->acc;
        loop->red_max = c->st->op == LOOM_ASSIGN_MAX;
    }
}

/* Group for an access of tensor t with index vars idx[] (per dimension). */
int loom__lw_group_for(lctx *c, int t, const int *idx)
{
    const loom_tensor *T = &c->prog->tensors[t];
    int root = T->pattern_of >= 0 ? T->pattern_of : t;
    int var[LOOM_MAX_ORDER];
    for (int l = 0; l < T->format.nlevels; l++)
        var[l] = idx[T->format.mode[l]];
    for (int k = 0; k < c->ngroups; k++) {
        group *g = &c->g[k];
        if (g->root == root && g->nlevels == T->format.nlevels &&
            memcmp(g->var, var, sizeof(int) * (size_t)g->nlevels) == 0)
            return k;
    }
    group *g = &c->g[c->ngroups];
    memset(g, 0, sizeof *g);
    g->root = root;
    g->nlevels = T->format.nlevels;
    memcpy(g->var, var, sizeof var);
    for (int l = 0; l < LOOM_MAX_ORDER; l++)
        g->pos[l] = g->lo[l] = -1;
    return c->ngroups++;
}

/* Is tensor t computed by a stage that was inlined into its consumers? */
int loom__lw_inlined(const lctx *c, int t)
{
    int d = c->prog->tensors[t].def_stmt;
    return d >= 0 && c->sch->stages[d].compute_at == LOOM_AT_INLINE;
}

/* An access's indices under the current substitution. */
void loom__lw_mapped_idx(const lctx *c, const loom_expr *E, int *idx)
{
    for (int d = 0; d < E->nidx; d++)
        idx[d] = c->vmap[E->idx[d]];
}

/* Enter the inlined producer of an access: map its lhs variables to the
 * access's (mapped) indices; `saved` keeps what to restore. */
const loom_stmt *loom__lw_enter_inline(lctx *c, const loom_expr *E, int *saved)
{
    const loom_stmt *ps = &c->prog->stmts[c->prog->tensors[E->tensor].def_stmt];
    int idx[LOOM_MAX_ORDER];
    loom__lw_mapped_idx(c, E, idx);
    for (int d = 0; d < E->nidx; d++) {
        saved[d] = c->vmap[ps->lhs_idx[d]];
        c->vmap[ps->lhs_idx[d]] = idx[d];
    }
    return ps;
}

void loom__lw_leave_inline(lctx *c, const loom_stmt *ps, int n, const int *saved)
{
    for (int d = n - 1; d >= 0; d--)
        c->vmap[ps->lhs_idx[d]] = saved[d];
}

/* Wrap the rest of *seq in `if (cond)`; *seq becomes the if's body. */
int loom__lw_guard_into(lctx *c, lir_expr *cond, lir_stmt **seq)
{
    if (!cond)
        return LOOM_OK;
    lir_stmt *iff = loom_lir_if(c->f, cond);
    if (loom_lir_append(c->f, *seq, iff))
        return loom__lw_fail_nomem(c);
    *seq = iff->body;
    return LOOM_OK;
}

/* The part of index v that the loops inside loop position L iterate (a
 * CacheWrite workspace's or a packed panel's dimension, a prefetched row's
 * span: lower_prefetch.c): *ext (1 when all
 * of v's loops are outside L), *base its first coordinate, *overhang 1
 * when the tiles may pass the extent, *outside 1 when some of v's loops
 * are outside L.  Returns 0, or -1 when the loops inside are not the
 * innermost tiles of one split (or the whole unsplit index). */
int loom__lw_region_dim(lctx *c, int L, int v, lir_expr **base, int64_t *ext_out, int *overhang, int *outside_out)
{
    lir_func *f = c->f;
    const loom_stage *S = c->S;
    int inside = 0, outside = 0;
    for (int p = 0; p < S->nloops; p++)
        if (loom_iter_var(S, S->loops[p].iter) == v)
            *(p > L ? &inside : &outside) += 1;
    const loom_iter *V = NULL;
    for (int i = 0; i < S->niters; i++)
        if (S->iters[i].kind == LOOM_ITER_VAR && S->iters[i].var == v)
            V = &S->iters[i];
    /* a tile fused into a loop outside L (the parallel i.0 x j.0) is outside */
    if (V && V->first_child >= 0 && S->iters[V->first_child].kind == LOOM_ITER_SPLIT)
        for (int k = 0; k < S->iters[V->first_child].nparts; k++) {
            int fu = S->iters[V->first_child + k].fused_into;
            for (int p = 0; fu >= 0 && p <= L; p++)
                outside += S->loops[p].iter == fu && S->iters[fu].fused_into < 0;
        }
    *overhang = 0;
    *outside_out = outside;
    if (!inside) {
        *ext_out = 1;
        *base = loom_lir_var_ref(f, c->xv[v]);
        return 0;
    }
    int64_t E = loom_program_var_extent(c->prog, v), ext = 1;
    *base = loom_lir_int(f, 0);
    if (!outside) {
        for (int p = L + 1; p < S->nloops; p++)
            if (loom_iter_var(S, S->loops[p].iter) == v)
                ext *= loom_iter_extent(c->sch, c->si, S->loops[p].iter);
        if (V && V->first_child < 0)
            ext = E;
    } else {
        if (!V || V->first_child < 0 || S->iters[V->first_child].kind != LOOM_ITER_SPLIT)
            return -1;
        int n = S->iters[V->first_child].nparts, m = -1;
        for (int k = 0; k < n; k++) {
            /* a tile fused into a loop outside the workspace loop
             * (the parallel i.0 x j.0 of a GEMM): bound there */
            int posk = loom_tile_loop(S, V->first_child + k, L);
            if (posk < 0)
                return -1; /* a nested split */
            if (posk <= L) {
                if (m >= 0)
                    return -1; /* not a prefix */
            } else if (m < 0)
                m = k;
        }
        for (int k = m; k < n; k++)
            ext *= loom_iter_extent(c->sch, c->si, V->first_child + k);
        /* base = (sum of the outer tiles' values, in tile units) * ext */
        lir_expr *b = NULL;
        for (int k = 0; k < m; k++) {
            int64_t ek = loom_iter_extent(c->sch, c->si, V->first_child + k);
            if (ek == 1)
                continue; /* always 0 (and emitted as no loop: lower.c) */
            lir_expr *t = loom_lir_var_ref(f, c->itv[V->first_child + k]);
            b = b ? loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, b, loom_lir_int(f, ek)), t) : t;
        }
        *base = b ? loom_lir_bin(f, LIR_MUL, b, loom_lir_int(f, ext)) : loom_lir_int(f, 0);
    }
    *ext_out = ext;
    /* the copy-out needs a guard only where the tiles overhang the
     * extent (without it, it vectorizes) */
    int64_t cover = 1;
    if (V && V->first_child >= 0 && S->iters[V->first_child].kind == LOOM_ITER_SPLIT)
        for (int k = 0; k < S->iters[V->first_child].nparts; k++)
            cover *= loom_iter_extent(c->sch, c->si, V->first_child + k);
    else
        cover = ext;
    *overhang = cover != E;
    return 0;
}

lir_expr *loom__lw_tensor_size(lctx *c, int t)
{
    const loom_tensor *T = &c->prog->tensors[t];
    if (loom_tensor_is_sparse(c->prog, t))
        return loom_lir_nnz(c->f, t);
    lir_expr *e = loom_lir_int(c->f, 1);
    for (int d = 0; d < T->order; d++)
        e = d == 0 ? loom_lir_dim(c->f, t, 0) : loom_lir_bin(c->f, LIR_MUL, e, loom_lir_dim(c->f, t, d));
    return e;
}
