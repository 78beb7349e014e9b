/* Lowering: Schedule -> LIR.  The rules are in lower.h. */
#include "lower.h"
#include "lower_internal.h"
#include "lower_expr.h"
#include "lower_fusion.h"
#include "../machine/machine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int values_buffer(lctx *c, int t)
{
    const loom_tensor *T = &c->prog->tensors[t];
    return loom_lir_buffer_get(c->f, T->role == LOOM_TENSOR_TEMP ? LIR_BUF_TEMP : LIR_BUF_VALS, t, 0);
}

/* The helpers lower_merge.c shares live in lower_ctx.c (below both). */
#define group_for loom__lw_group_for
#define tensor_size loom__lw_tensor_size
#define inlined_tensor loom__lw_inlined
#define mapped_idx loom__lw_mapped_idx
#define enter_inline loom__lw_enter_inline
#define leave_inline loom__lw_leave_inline

static void collect_groups(lctx *c, int e)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (inlined_tensor(c, E->tensor)) {
            int saved[LOOM_MAX_ORDER];
            const loom_stmt *ps = enter_inline(c, E, saved);
            collect_groups(c, ps->rhs);
            leave_inline(c, ps, E->nidx, saved);
        } else if (loom_tensor_is_sparse(c->prog, E->tensor)) {
            int idx[LOOM_MAX_ORDER];
            mapped_idx(c, E, idx);
            group_for(c, E->tensor, idx);
        }
        return;
    }
    for (int k = 0; k < E->nargs && E->kind != LOOM_EXPR_CONST; k++)
        collect_groups(c, E->args[k]);
}


/* Row-major linear index of a dense access. */
static lir_expr *dense_index(lctx *c, int t, const int *idx)
{
    const loom_tensor *T = &c->prog->tensors[t];
    if (T->order == 0)
        return loom_lir_int(c->f, 0);
    /* a read (not the lhs) of an overhanging tile's row reads the clamped
     * index: the row it computes is one the copy-out drops */
    int rd = t != c->st->lhs;
#define IDX(d) (rd && c->xclamp[idx[d]] > 0 ? c->xclamp[idx[d]] - 1 : c->xv[idx[d]])
    lir_expr *e = loom_lir_var_ref(c->f, IDX(0));
    for (int d = 1; d < T->order; d++)
        e = loom_lir_bin(c->f, LIR_ADD, loom_lir_bin(c->f, LIR_MUL, e, loom_lir_dim(c->f, t, d)), loom_lir_var_ref(c->f, IDX(d)));
#undef IDX
    return e;
}

/* The value position of sparse tensor t at pattern position `pos`: a
 * tensor with batch dimensions (loom_tensor.nbatch) keeps one copy of the
 * pattern per batch coordinate, at batch * nnz(pattern) (program.h). */
static lir_expr *batched_pos(lctx *c, int t, const int *idx, lir_expr *pos)
{
    const loom_tensor *T = &c->prog->tensors[t];
    if (T->nbatch <= 0)
        return pos;
    lir_expr *b = loom_lir_var_ref(c->f, c->xv[idx[0]]);
    for (int d = 1; d < T->nbatch; d++)
        b = loom_lir_bin(c->f, LIR_ADD, loom_lir_bin(c->f, LIR_MUL, b, loom_lir_dim(c->f, t, d)), loom_lir_var_ref(c->f, c->xv[idx[d]]));
    int root = T->pattern_of >= 0 ? T->pattern_of : t;
    return loom_lir_bin(c->f, LIR_ADD, loom_lir_bin(c->f, LIR_MUL, b, loom_lir_nnz(c->f, root)), pos);
}

static lir_expr *translate(lctx *c, int e);

/* A tensor read at the statement's positions (an inlined producer's value,
 * a packed panel, a dense or a sparse operand). */
static lir_expr *tr_access(const loom_xlate *x, int e)
{
    lctx *c = x->ctx;
    const loom_expr *E = &c->prog->exprs[e];
    const loom_tensor *T = &c->prog->tensors[E->tensor];
    lir_func *f = c->f;
    if (c->epi_var >= 0 && E->tensor == c->epi_tensor) /* in an epilogue: the value just computed */
        return loom_lir_var_ref(f, c->epi_var);
    if (inlined_tensor(c, E->tensor)) {
        int saved[LOOM_MAX_ORDER];
        const loom_stmt *ps = enter_inline(c, E, saved);
        lir_expr *v = translate(c, ps->rhs);
        leave_inline(c, ps, E->nidx, saved);
        return v;
    }
    int idx[LOOM_MAX_ORDER];
    mapped_idx(c, E, idx);
    if (c->pack_active && E->tensor == c->S->pack_tensor &&
        !memcmp(idx, c->pack_var, sizeof(int) * (size_t)c->pack_n)) /* (not an inlined producer's read) */
        return loom_lir_load(f, c->pack_buf, loom__lw_pack_index(c, idx));
    if (!loom_tensor_is_sparse(c->prog, E->tensor))
        return loom_lir_load(f, values_buffer(c, E->tensor), dense_index(c, E->tensor, idx));
    int gi = group_for(c, E->tensor, idx); /* collected already: found, not made */
    if (T->is_pattern)
        return c->union_mode && c->has[gi] >= 0 ? loom__lw_union_guard(c, loom_lir_var_ref(f, c->has[gi]), loom_lir_float(f, 1.0))
                                                : loom_lir_float(f, 1.0);
    lir_expr *ld = loom_lir_load(f, values_buffer(c, E->tensor),
                                 batched_pos(c, E->tensor, idx, loom_lir_var_ref(f, c->g[gi].pos[c->g[gi].nlevels - 1])));
    return c->union_mode ? loom__lw_union_value(c, gi, E->tensor, ld) : ld;
}

/* Union coiteration: an operator whose value at absent operands (read as 0)
 * is not 0 under its rule is guarded by presence -- a function outside its
 * mask, a quotient by an absent operand. */
static int tr_union(const loom_xlate *x, int e, const loom_op_row *r, lir_expr **out)
{
    lctx *c = x->ctx;
    const loom_expr *E = &c->prog->exprs[e];
    if (!c->union_mode)
        return 0;
    if (r->sparsity == LOOM_OP_SPARSE_MASK) {
        lir_expr *cond = loom__lw_all_present(c, e);
        if (!cond)
            return 0;
        c->union_mode = 0; /* the call itself, once (its operands stay guarded) */
        lir_expr *v = translate(c, e);
        c->union_mode = 1;
        *out = loom__lw_union_guard(c, cond, v);
        return 1;
    }
    if (!r->union_guard)
        return 0;
    lir_expr *b = r->arity == 2 ? translate(c, E->args[1]) : NULL;
    *out = loom__lw_union_guard(c, loom__lw_present(c, e), loom__xlate_op(c->f, r, translate(c, E->args[0]), b));
    return 1;
}

static lir_expr *translate(lctx *c, int e)
{
    loom_xlate x = {.f = c->f, .prog = c->prog, .ctx = c, .access = tr_access, .special = tr_union};
    return loom__xlate(&x, e);
}


static lir_expr *lhs_index(lctx *c)
{
    if (c->ws_active) {
        /* row-major over the workspace's extents; local = x - base */
        const loom_stmt *st = c->st;
        lir_expr *e = NULL;
        for (int d = 0; d < c->prog->tensors[st->lhs].order; d++) {
            lir_expr *loc = loom_lir_bin(c->f, LIR_SUB, loom_lir_var_ref(c->f, c->xv[st->lhs_idx[d]]),
                                    loom_lir_var_ref(c->f, c->ws_base[d]));
            e = e ? loom_lir_bin(c->f, LIR_ADD, loom_lir_bin(c->f, LIR_MUL, e, loom_lir_int(c->f, c->ws_ext[d])), loc) : loc;
        }
        return e ? e : loom_lir_int(c->f, 0);
    }
    if (c->lhs_group >= 0)
        return batched_pos(c, c->st->lhs, c->st->lhs_idx,
                           loom_lir_var_ref(c->f, c->g[c->lhs_group].pos[c->g[c->lhs_group].nlevels - 1]));
    lir_expr *e = dense_index(c, c->st->lhs, c->st->lhs_idx);
    if (c->rf_iter >= 0) {
        /* partial copy number r: the rfactor loop's value */
        const loom_iter *R = &c->S->iters[c->rf_iter];
        int r = R->kind == LOOM_ITER_VAR ? c->xv[R->var] : c->itv[c->rf_iter];
        e = loom_lir_bin(c->f, LIR_ADD, loom_lir_bin(c->f, LIR_MUL, loom_lir_var_ref(c->f, r), tensor_size(c, c->st->lhs)), e);
    }
    return e;
}

static lir_expr *combine(lctx *c, lir_expr *old, lir_expr *val)
{
    return loom_lir_bin(c->f, c->st->op == LOOM_ASSIGN_MAX ? LIR_MAX : LIR_ADD, old, val);
}

static int emit_body(lctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    c->pre = seq; /* union mode: guarded values go before the store */
    c->nuval = 0;
    lir_expr *val = translate(c, c->st->rhs);
    c->pre = NULL;
    if (!val && c->status == LOOM_OK)
        return c->status = loom_error_set(c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, c->st->line, 0,
                                          "block %s: an index of its statement is bound by no loop of this "
                                          "schedule (lowering does not support it)",
                                          c->prog->tensors[c->st->lhs].name);
    lir_stmt *s;
    if (c->has_red && c->scalar_acc && c->psum_depth >= 0) {
        /* partial sums: the vectorized loop's lane-th sum, updated elementwise */
        int it = c->S->loops[c->psum_depth].iter, lane = c->itv[it];
        if (lane < 0 && c->S->iters[it].kind == LOOM_ITER_VAR) /* an unsplit loop binds its index */
            lane = c->xv[c->S->iters[it].var];
        if (lane < 0)
            return c->status = loom_error_set(c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, c->st->line, 0,
                                              "partial-sums: the loop of %s's partial sums has no value here",
                                              c->prog->tensors[c->st->lhs].name);
        s = loom_lir_store(f, c->psum_buf, loom_lir_var_ref(f, lane),
                           combine(c, loom_lir_load(f, c->psum_buf, loom_lir_var_ref(f, lane)), val));
    } else if (c->has_red && c->scalar_acc)
        s = loom_lir_assign(f, c->acc, combine(c, loom_lir_var_ref(f, c->acc), val));
    else if (!c->has_red)
        s = loom_lir_store(f, c->lhs_buf, lhs_index(c), val);
    else
        s = loom_lir_store(f, c->lhs_buf, lhs_index(c), combine(c, loom_lir_load(f, c->lhs_buf, lhs_index(c)), val));
    return loom_lir_append(f, seq, s) ? loom__lw_fail_nomem(c) : LOOM_OK;
}

static int begin_acc(lctx *c, lir_stmt *seq)
{
    char name[48];
    snprintf(name, sizeof name, "acc_%s", c->prog->tensors[c->st->lhs].name);
    c->acc = loom_lir_new_var(c->f, name, LIR_F32);
    if (loom_lir_append(c->f, seq, loom_lir_let(c->f, c->acc, loom__lw_identity(c))))
        return loom__lw_fail_nomem(c);
    if (c->psum_depth < 0)
        return LOOM_OK;
    /* partial sums, reset per output element */
    return loom_lir_append(c->f, seq, loom_lir_local(c->f, c->psum_buf)) ||
                   loom_lir_append(c->f, seq,
                                   loom_lir_fill(c->f, c->psum_buf, loom_lir_int(c->f, c->psum_ext), loom__lw_identity(c)))
               ? loom__lw_fail_nomem(c)
               : LOOM_OK;
}

/* Fold the partial sums into the accumulator (a vectorized reduction loop
 * once per output element). */
static int fold_psum(lctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    char name[48];
    snprintf(name, sizeof name, "w_%s", c->prog->tensors[c->st->lhs].name);
    int w = loom_lir_new_var(f, name, LIR_I64);
    lir_stmt *loop = loom_lir_for(f, w, loom_lir_int(f, 0), loom_lir_int(f, c->psum_ext), LIR_LOOP_VECTORIZED);
    if (w < 0 || !loop)
        return loom__lw_fail_nomem(c);
    loop->red_var = c->acc;
    loop->red_max = c->st->op == LOOM_ASSIGN_MAX;
    return loom_lir_append(f, seq, loop) ||
                   loom_lir_append(f, loop->body,
                                   loom_lir_assign(f, c->acc,
                                                   combine(c, loom_lir_var_ref(f, c->acc),
                                                           loom_lir_load(f, c->psum_buf, loom_lir_var_ref(f, w)))))
               ? loom__lw_fail_nomem(c)
               : LOOM_OK;
}

/* Partial sums of the dot product (LOOM_ANN_PARTIAL_SUMS), where they may
 * go (the validator refuses them elsewhere: partial-sums): c->psum_depth
 * and the local array's buffer, or psum_depth -1. */
static int psum_setup(lctx *c)
{
    lir_func *f = c->f;
    c->psum_depth = loom_partial_sums_loop(c->sch, c->si);
    if (c->psum_depth >= 0 && (!c->scalar_acc || c->union_mode || c->rf_iter >= 0 || c->ws_depth >= 0 ||
                               !loom_partial_sums_ok(c->sch, c->si, c->psum_depth)))
        c->psum_depth = -1;
    if (c->psum_depth < 0)
        return LOOM_OK;
    c->psum_ext = loom_iter_extent(c->sch, c->si, c->S->loops[c->psum_depth].iter);
    c->psum_buf = loom_lir_buffer_get(f, LIR_BUF_LOCAL, c->st->lhs, LOOM_MAX_STMTS + c->si);
    if (c->psum_buf < 0)
        return loom__lw_fail_nomem(c);
    f->bufs[c->psum_buf].local_elems = c->psum_ext;
    snprintf(f->bufs[c->psum_buf].name, sizeof f->bufs[c->psum_buf].name, "psum_%s",
             c->prog->tensors[c->st->lhs].name);
    return LOOM_OK;
}

static int end_acc(lctx *c, lir_stmt *seq)
{
    if (c->psum_depth >= 0 && fold_psum(c, seq))
        return c->status;
    return loom_lir_append(c->f, seq, loom_lir_store(c->f, c->lhs_buf, lhs_index(c), loom_lir_var_ref(c->f, c->acc)))
               ? loom__lw_fail_nomem(c)
               : LOOM_OK;
}

static int lower_depth(lctx *c, int d, lir_stmt *seq);

/* Open the rest of the nest below loop d (which bound its iter). */
static int emit_placed(lctx *c, int d, lir_stmt *seq, int after);

/* Lower what is below depth d into seq (c->inner: lower_loops.c calls it for a
 * loop's body). */
static int lower_inner(lctx *c, int d, lir_stmt *seq)
{
    if (emit_placed(c, d, seq, 0))
        return c->status;
    lir_stmt *in = seq; /* narrowed by the workspace's skip guard */
    if (d == c->ws_depth && loom__lw_ws_begin(c, &in))
        return c->status;
    if (d == c->pack_depth && loom__lw_pack_begin(c, in))
        return c->status;
    if (c->has_red && c->scalar_acc && d == c->last_free_depth && begin_acc(c, in))
        return c->status;
    if (lower_depth(c, d + 1, in))
        return c->status;
    if (c->has_red && c->scalar_acc && d == c->last_free_depth && end_acc(c, in))
        return c->status;
    if (d == c->pack_depth)
        c->pack_active = 0;
    if (d == c->ws_depth && loom__lw_ws_end(c, in))
        return c->status;
    if (emit_placed(c, d, seq, 1))
        return c->status;
    return LOOM_OK;
}

static int lower_depth(lctx *c, int d, lir_stmt *seq)
{
    lir_func *f = c->f;
    if (d == c->S->nloops)
        return emit_body(c, seq);
    const loom_loop *L = &c->S->loops[d];
    int it = L->iter;
    const loom_iter *I = &c->S->iters[it];
    lir_loop_kind kind = (lir_loop_kind)L->kind;
    if (c->skip[d]) {
        /* an index fixed by the location: bind it once, emit no loop */
        int x = I->var;
        if (c->xv[x] < 0) {
            if (loom_var_is_compressed(c->sch, c->si, x))
                return c->status = loom_error_set(
                           c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                           "compute-at-sparse-index: block %s is placed where its index %s is given, but %s is stored "
                           "compressed in it (a search, not a loop); place it outside that loop",
                           c->prog->tensors[c->st->lhs].name, c->prog->vars[x].name, c->prog->vars[x].name);
            if (loom__lw_bind_var(c, x, loom_lir_var_ref(f, c->fixed[x]), NULL, &seq))
                return c->status;
        }
        return lower_inner(c, d, seq);
    }
    switch (I->kind) {
    case LOOM_ITER_VAR: {
        if (loom__lw_lower_var_loop(c, d, seq, I->var, kind))
            return c->status;
        return LOOM_OK;
    }
    case LOOM_ITER_POS: return loom__lw_lower_pos_loop(c, d, seq, it, kind);
    case LOOM_ITER_SPLIT:
    case LOOM_ITER_FUSE: {
        char name[48], nm[40];
        snprintf(name, sizeof name, "%s", loom_iter_name(c->sch, c->si, it, nm, sizeof nm));
        for (char *p = name; *p; p++)
            if (*p == '.')
                *p = '_';
        c->itv[it] = loom_lir_new_var(f, name, LIR_I64);
        int64_t E = loom_iter_extent(c->sch, c->si, it);
        int shown = 0; /* annotations other than "stream" (the copy-out's, not the loop's) */
        for (int a = 0; a < L->nann; a++)
            shown += strcmp(L->ann[a].key, LOOM_ANN_STREAM) != 0;
        if (I->kind == LOOM_ITER_SPLIT && E == 1 && kind == LIR_LOOP_SERIAL && it != c->rf_iter && !shown) {
            /* a tile of extent 1 runs once: no loop, its index is 0 (issue
             * 13: an untiled loop is the tiles [1, .., 1, E]); one with an
             * annotation (unroll) keeps its loop, so the annotation stays
             * visible in the kernel */
            lir_stmt *at = seq; /* itv[it] is never read: loom__lw_iter_bound leaves extent-1 tiles out */
            if (c->itv[it] < 0)
                return loom__lw_fail_nomem(c);
            if (loom__lw_iter_bound(c, it, &at))
                return c->status;
            return lower_inner(c, d, at);
        }
        lir_stmt *loop = loom_lir_for(f, c->itv[it], loom_lir_int(f, 0), loom_lir_int(f, E), kind);
        if (c->itv[it] < 0 || loom_lir_append(f, seq, loop))
            return loom__lw_fail_nomem(c);
        loom__lw_note_loop(c, d, loop);
        lir_stmt *body = loop->body;
        if (L->kind == LOOM_LOOP_UNROLLED)
            loop->unroll = L->unroll;
        if (I->kind == LOOM_ITER_FUSE) {
            int64_t Eb = loom_iter_extent(c->sch, c->si, I->b);
            const int srcs[2] = {I->a, I->b};
            for (int k = 0; k < 2; k++) {
                snprintf(name, sizeof name, "%s", loom_iter_name(c->sch, c->si, srcs[k], nm, sizeof nm));
                for (char *p = name; *p; p++)
                    if (*p == '.')
                        *p = '_';
                c->itv[srcs[k]] = loom_lir_new_var(f, name, LIR_I64);
                lir_expr *v = loom_lir_bin(f, k == 0 ? LIR_DIV : LIR_SUB, loom_lir_var_ref(f, c->itv[it]), loom_lir_int(f, Eb));
                if (k == 1) /* b = f - (f / Eb) * Eb */
                    v = loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, c->itv[it]),
                                loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, c->itv[srcs[0]]), loom_lir_int(f, Eb)));
                if (loom_lir_append(f, body, loom_lir_let(f, c->itv[srcs[k]], v)))
                    return loom__lw_fail_nomem(c);
            }
            if (loom__lw_iter_bound(c, I->a, &body) || loom__lw_iter_bound(c, I->b, &body))
                return c->status;
        } else if (loom__lw_iter_bound(c, it, &body))
            return c->status;
        return lower_inner(c, d, body);
    }
    }
    return LOOM_OK;
}

/* The epilogue of a workspace's copy-out (lower_internal.h: c->epilogue):
 * each chain stage's right-hand side at the output coordinates gvar[],
 * its read of the previous tensor being the previous value (an inlined
 * stage is read through its reader's expression); the last one stored. */
static int epilogue_store(lctx *c, lir_stmt *body, lir_expr *val, const int *gvar)
{
    lir_func *f = c->f;
    const loom_stmt *P = c->st;
    int saved_xv[LOOM_MAX_VARS], saved_clamp[LOOM_MAX_VARS], saved_union = c->union_mode;
    memcpy(saved_xv, c->xv, sizeof saved_xv);
    memcpy(saved_clamp, c->xclamp, sizeof saved_clamp);
    c->union_mode = 0; /* the chain's operands are dense */
    c->epi_tensor = P->lhs;
    c->epi_var = loom_lir_new_var(f, "epi", LIR_F32);
    int rc = c->epi_var < 0 || loom_lir_append(f, body, loom_lir_let(f, c->epi_var, val));
    for (int j = 0; j < c->epi_k && !rc; j++) {
        int q = c->epi_chain[j];
        const loom_stmt *Q = &c->prog->stmts[q];
        for (int d = 0; d < c->prog->tensors[Q->lhs].order; d++) { /* its indices at the same coordinates */
            c->xv[Q->lhs_idx[d]] = gvar[d];
            c->xclamp[Q->lhs_idx[d]] = 0;
        }
        if (c->sch->stages[q].compute_at == LOOM_AT_INLINE)
            continue; /* read where its reader reads it */
        lir_expr *e = translate(c, Q->rhs);
        if (j == c->epi_k - 1) {
            rc = loom_lir_append(f, body, loom_lir_store(f, values_buffer(c, Q->lhs), dense_index(c, Q->lhs, Q->lhs_idx), e));
            break;
        }
        int v = loom_lir_new_var(f, "epi", LIR_F32);
        rc = v < 0 || loom_lir_append(f, body, loom_lir_let(f, v, e));
        c->epi_tensor = Q->lhs;
        c->epi_var = v;
    }
    memcpy(c->xv, saved_xv, sizeof saved_xv);
    memcpy(c->xclamp, saved_clamp, sizeof saved_clamp);
    c->union_mode = saved_union;
    c->epi_var = c->epi_tensor = -1;
    return rc ? loom__lw_fail_nomem(c) : LOOM_OK;
}

/* The epilogue the stage's copy-out evaluates (c->epi_k, c->epi_chain), or
 * an error when its annotation asks for what cannot be (validator rule
 * epilogue). */
static int epilogue_setup(lctx *c)
{
    c->epi_k = c->S->cache_iter >= 0 ? loom_epilogue_stages(c->sch, c->si, c->epi_chain) : 0;
    if (c->epi_k >= 0)
        return LOOM_OK;
    return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                      "epilogue: %s's workspace copy-out cannot evaluate the %d consumer stages its "
                                      "annotation asks for",
                                      c->prog->tensors[c->st->lhs].name, loom_epilogue_value(c->sch, c->si));
}

static loom_status lower_stmt(lctx *c, lir_stmt *target)
{
    const loom_stmt *st = c->st;
    lir_func *f = c->f;
    c->emitted[c->si] = 1;
    for (int v = 0; v < LOOM_MAX_VARS; v++)
        c->vmap[v] = v;
    c->ngroups = 0;
    collect_groups(c, st->rhs);
    /* union coiteration (lower_merge.c) unless the domain is the plain
     * intersection of every group: the lowering of every workload before it */
    loom__lw_domain_of(c, st->rhs, &c->dom);
    uint64_t every = c->ngroups >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << c->ngroups) - 1);
    c->union_mode = !loom_domain_is_intersection(&c->dom, every);
    if (c->union_mode && (c->dom.overflow || c->ngroups > LOOM_DOMAIN_MAX_ATOMS))
        return c->status = loom_error_set(c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, st->line, 0,
                                          "union-coiteration-format: statement `%s` has too many sparse operands "
                                          "or union terms to merge; split it through temporaries", st->text);
    if (loom__lw_union_begin(c))
        return c->status;
    c->lhs_group = loom_tensor_is_sparse(c->prog, st->lhs) ? group_for(c, st->lhs, st->lhs_idx) : -1;
    if (epilogue_setup(c))
        return c->status;
    /* with an epilogue the block's own tensor is never stored: the copy-out
     * writes the chain's last one (so no buffer is made for it) */
    c->lhs_buf = values_buffer(c, c->epi_k > 0 ? c->prog->stmts[c->epi_chain[c->epi_k - 1]].lhs : st->lhs);
    if (c->lhs_buf < 0)
        return loom__lw_fail_nomem(c);

    c->has_red = st->nvars > st->nfree;
    c->last_free_depth = -1;
    int first_red_depth = c->S->nloops;
    for (int d = 0; d < c->S->nloops; d++) {
        int red = loom_iter_reduces(c->sch, c->si, c->S->loops[d].iter);
        if (c->S->loops[d].kind == LOOM_LOOP_PARALLEL && red && c->S->loops[d].iter != c->S->rfactor_iter) {
            char nm[64];
            return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, st->line, 0,
                                              "parallel-reduction: loop %s reduces into %s and cannot be parallel "
                                              "without rfactor",
                                              loom_iter_name(c->sch, c->si, c->S->loops[d].iter, nm, sizeof nm),
                                              c->prog->tensors[st->lhs].name);
        }
        if (red) {
            if (d < first_red_depth)
                first_red_depth = d;
        } else
            c->last_free_depth = d;
    }
    c->scalar_acc = !c->has_red || first_red_depth > c->last_free_depth;
    c->rf_iter = c->S->rfactor_iter;
    if (c->rf_iter >= 0) {
        int found = 0;
        for (int d = 0; d < c->S->nloops; d++)
            found |= c->S->loops[d].iter == c->rf_iter;
        if (!found || c->S->compute_at == LOOM_AT_LOOP || c->S->cache_iter >= 0)
            return c->status = loom_error_set(
                       c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, st->line, 0,
                       "rfactor-combination: %s's rfactor loop %s", c->prog->tensors[st->lhs].name,
                       !found ? "no longer exists" : "cannot be combined with a placement or a workspace (yet)");
        c->scalar_acc = 0; /* each partial is read-modify-written */
        c->rf_buf = loom_lir_buffer_get(f, LIR_BUF_PARTIAL, st->lhs, 0);
        if (c->rf_buf < 0)
            return loom__lw_fail_nomem(c);
        f->bufs[c->rf_buf].size = loom_lir_bin(f, LIR_MUL, loom_lir_int(f, loom_iter_extent(c->sch, c->si, c->rf_iter)),
                                         tensor_size(c, st->lhs));
    }
    c->ws_depth = -1;
    for (int d = 0; d < c->S->nloops; d++)
        if (c->S->loops[d].iter == c->S->cache_iter)
            c->ws_depth = d;
    c->pack_depth = -1;
    for (int d = 0; d < c->S->nloops && c->S->pack_iter >= 0; d++)
        if (c->S->loops[d].iter == c->S->pack_iter)
            c->pack_depth = d;
    if (c->S->pack_iter >= 0 && (c->pack_depth < 0 || loom_pack_panel_elems(c->sch, c->si) < 0))
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, st->line, 0,
                                          "pack-panel-loop: %s's packed panel of %s %s",
                                          c->prog->tensors[st->lhs].name, c->prog->tensors[c->S->pack_tensor].name,
                                          c->pack_depth < 0 ? "has lost its loop" : "is not a region of tiles");
    if (c->S->cache_iter >= 0 &&
        (c->ws_depth < 0 || loom_iter_reduces(c->sch, c->si, c->S->loops[c->ws_depth].iter)))
        return c->status = loom_error_set(
                   c->err, LOOM_ERR_SEMANTIC, c->prog->path, st->line, 0,
                   "cache-write-partial: %s's workspace loop %s", c->prog->tensors[st->lhs].name,
                   c->ws_depth < 0 ? "no longer exists"
                                   : "is a reduction loop: its workspace would be copied out at every reduction step");
    /* a reduction loop outside the workspace loop (a K-blocked register
     * tile): each copy-out adds its partial into the output */
    c->ws_accum = c->ws_depth >= 0 && first_red_depth < c->ws_depth;
    if (psum_setup(c))
        return c->status;

    char buf[320];
    snprintf(buf, sizeof buf, "line %d: %s%s", st->line, st->text,
             c->S->compute_at == LOOM_AT_LOOP ? "  (computed here, for this iteration)" : "");
    if (loom_lir_append(f, target, loom_lir_comment(f, buf)))
        return loom__lw_fail_nomem(c);
    if (loom__lw_init_output(c, target))
        return c->status;
    lir_stmt *seq = loom_lir_seq(f);
    if (loom_lir_append(f, target, seq))
        return loom__lw_fail_nomem(c);
    if (c->has_red && c->scalar_acc && c->last_free_depth < 0 && begin_acc(c, seq))
        return c->status;
    if (lower_depth(c, 0, seq))
        return c->status;
    if (c->has_red && c->scalar_acc && c->last_free_depth < 0 && end_acc(c, seq))
        return c->status;
    if (c->rf_iter >= 0) {
        /* combine: out[e] = reduce over r of partial[r][e] */
        int par = 0;
        for (int d = 0; d < c->S->nloops; d++)
            par |= c->S->loops[d].kind == LOOM_LOOP_PARALLEL;
        int e = loom_lir_new_var(f, "rf_e", LIR_I64), r = loom_lir_new_var(f, "rf_r", LIR_I64);
        int a = loom_lir_new_var(f, "rf_acc", LIR_F32);
        lir_expr *size = tensor_size(c, st->lhs);
        lir_stmt *le = loom_lir_for(f, e, loom_lir_int(f, 0), size, par ? LIR_LOOP_PARALLEL : LIR_LOOP_SERIAL);
        lir_stmt *lr = loom_lir_for(f, r, loom_lir_int(f, 0), loom_lir_int(f, loom_iter_extent(c->sch, c->si, c->rf_iter)),
                               LIR_LOOP_SERIAL);
        if (loom_lir_append(f, target, le) || loom_lir_append(f, le->body, loom_lir_let(f, a, loom__lw_identity(c))) ||
            loom_lir_append(f, le->body, lr) ||
            loom_lir_append(f, lr->body,
                       loom_lir_assign(f, a, combine(c, loom_lir_var_ref(f, a),
                                                loom_lir_load(f, c->rf_buf,
                                                         loom_lir_bin(f, LIR_ADD,
                                                                 loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, r), tensor_size(c, st->lhs)),
                                                                 loom_lir_var_ref(f, e)))))) ||
            loom_lir_append(f, le->body, loom_lir_store(f, c->lhs_buf_global, loom_lir_var_ref(f, e), loom_lir_var_ref(f, a))))
            return loom__lw_fail_nomem(c);
        c->lhs_buf = c->lhs_buf_global;
    }
    return LOOM_OK;
}

static lctx *ctx_new(const loom_schedule *sch, lir_func *f, loom_error *err, int s, int *emitted)
{
    lctx *c = malloc(sizeof *c); /* large: keep it off the stack */
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    c->prog = sch->prog;
    c->sch = sch;
    c->f = f;
    c->err = err;
    c->emitted = emitted;
    c->si = s;
    c->st = &sch->prog->stmts[s];
    c->S = &sch->stages[s];
    for (int v = 0; v < LOOM_MAX_VARS; v++)
        c->xv[v] = c->fixed[v] = -1;
    for (int i = 0; i < LOOM_MAX_ITERS; i++)
        c->itv[i] = c->pos_start[i] = c->pos_end[i] = -1;
    c->rf_iter = -1;
    c->psum_depth = -1;
    c->inner = lower_inner;
    c->epilogue = epilogue_store;
    c->epi_tensor = c->epi_var = -1;
    return c;
}

/* Does iter `it` of stage S derive from a fixed index?  1 yes, 0 no, -1 a
 * fused loop mixing fixed and free indices. */
static int iter_fixed(const lctx *c, int it)
{
    const loom_iter *I = &c->S->iters[it];
    switch (I->kind) {
    case LOOM_ITER_VAR:
    case LOOM_ITER_POS: return c->fixed[I->var] >= 0;
    case LOOM_ITER_SPLIT: return iter_fixed(c, I->parent);
    case LOOM_ITER_FUSE: {
        int a = iter_fixed(c, I->a), b = iter_fixed(c, I->b);
        return a == b ? a : -1;
    }
    }
    return 0;
}

/* Lower the stages placed at loop d of c's stage (at its start: after = 0,
 * producers; at its end: after = 1, consumers), in program order, into
 * seq, their indices fixed to the location's values. */
static int emit_placed(lctx *c, int d, lir_stmt *seq, int after)
{
    const loom_schedule *sch = c->sch;
    int at_iter = c->S->loops[d].iter;
    for (int q = 0; q < sch->nstages; q++) {
        const loom_stage *Q = &sch->stages[q];
        if (Q->compute_at != LOOM_AT_LOOP || Q->at_stage != c->si || Q->at_iter != at_iter || Q->at_after != after)
            continue;
        int map[LOOM_MAX_ORDER];
        const loom_stmt *qs = &c->prog->stmts[q];
        lctx *k = NULL;
        if (after) {
            /* a consumer: its indices that read this block's tensor at bound
             * indices are fixed to them */
            k = ctx_new(sch, c->f, c->err, q, c->emitted);
            if (!k)
                return loom__lw_fail_nomem(c);
            for (int e = 0; e < c->prog->nexprs; e++) {
                const loom_expr *E = &c->prog->exprs[e];
                if (E->kind != LOOM_EXPR_ACCESS || E->tensor != c->st->lhs || E->nidx == 0 ||
                    c->prog->vars[E->idx[0]].stmt != q)
                    continue;
                for (int dd = 0; dd < E->nidx; dd++) {
                    /* bound here: every loop of that index is at or outside d
                     * (loops inside d have closed: their values are gone) */
                    int pv = c->st->lhs_idx[dd], inside = 0;
                    for (int l = d + 1; l < c->S->nloops; l++)
                        inside |= loom_iter_var(c->S, c->S->loops[l].iter) == pv;
                    if (!inside && c->xv[pv] >= 0)
                        k->fixed[E->idx[dd]] = c->xv[pv];
                }
            }
            goto lower_it;
        }
        if (loom_compute_at_map(sch, q, c->si, map) < 0)
            return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->prog->stmts[q].line, 0,
                                              "compute-at-reads: %s is read with different indices at its location",
                                              c->prog->tensors[c->prog->stmts[q].lhs].name);
        k = ctx_new(sch, c->f, c->err, q, c->emitted);
        if (!k)
            return loom__lw_fail_nomem(c);
        /* an index of this block bound here, or fixed by where this block is
         * itself placed (its loop over it may come later, unemitted) */
        for (int dd = 0; dd < c->prog->tensors[qs->lhs].order; dd++)
            if (map[dd] >= 0 && (c->xv[map[dd]] >= 0 || c->fixed[map[dd]] >= 0))
                k->fixed[qs->lhs_idx[dd]] = c->xv[map[dd]] >= 0 ? c->xv[map[dd]] : c->fixed[map[dd]];
    lower_it:
        for (int l = 0; l < Q->nloops; l++) {
            int fx = iter_fixed(k, Q->loops[l].iter);
            if (fx < 0) {
                free(k);
                return c->status = loom_error_set(
                           c->err, LOOM_ERR_SEMANTIC, c->prog->path, qs->line, 0,
                           "compute-at-fused-loop: block %s fuses a loop whose index its location fixes with one "
                           "it iterates; compute it elsewhere or do not fuse those loops",
                           c->prog->tensors[qs->lhs].name);
            }
            k->skip[l] = fx;
        }
        lir_stmt *sub = loom_lir_seq(c->f);
        loom_status st = loom_lir_append(c->f, seq, sub) ? loom__lw_fail_nomem(c) : lower_stmt(k, sub);
        if (st)
            c->status = k->status ? k->status : st;
        free(k);
        if (c->status)
            return c->status;
    }
    return LOOM_OK;
}

/* The stages some root block's copy-out evaluates (absorbed[s] = 1) and the
 * tensors no stage stores then (the block's own, and every chain tensor
 * before the last one the copy-out stores). */
static void epilogue_plan(const loom_schedule *sch, int *absorbed, int *unstored)
{
    const loom_program *prog = sch->prog;
    int chain[LOOM_MAX_STMTS];
    for (int s = 0; s < prog->nstmts; s++) {
        int k = sch->stages[s].compute_at == LOOM_AT_ROOT ? loom_epilogue_stages(sch, s, chain) : 0;
        if (k <= 0)
            continue; /* (an impossible one fails when the block is lowered) */
        unstored[prog->stmts[s].lhs] = 1;
        for (int j = 0; j < k; j++) {
            absorbed[chain[j]] = 1;
            if (j < k - 1)
                unstored[prog->stmts[chain[j]].lhs] = 1;
        }
    }
}

/* A vectorized loop of one iteration (a tile of 1 a schedule vectorizes)
 * becomes a serial loop: GCC 12 runs an `omp simd` loop of one iteration
 * as masked full-width vector code, and the loop around it then stays
 * scalar; without the pragma it unrolls the iteration away and vectorizes
 * the loop around when it can.  SDDMM Cora D = 64 with d split [64, 1]
 * (Zen 5, 2 threads, interleaved rounds, 14 schedules of the issue-29
 * campaigns): 0.83x the time on AVX-512, 0.79x on AVX2; GCN2, SpMM and
 * GEMM schedules with such a loop 0.99-1.01x (medians). */
static void drop_unit_vectors(lir_stmt *s)
{
    if (!s)
        return;
    for (int i = 0; s->kind == LIR_S_SEQ && i < s->nitems; i++)
        drop_unit_vectors(s->items[i]);
    if (s->kind == LIR_S_FOR && s->loop_kind == LIR_LOOP_VECTORIZED && loom_lir_literal_trip(s) == 1) {
        s->loop_kind = LIR_LOOP_SERIAL;
        s->red_var = -1;
    }
    drop_unit_vectors(s->body);
    drop_unit_vectors(s->els);
}

/* An "unroll" annotation on a loop codegen would vectorize (an innermost
 * loop of literal bounds, loom_lir_is_simd_safe) is dropped: the loop stays
 * serial and codegen marks it `#pragma omp simd`.  GCC 12 takes one pragma
 * per loop, and under `#pragma GCC unroll u` with u below the vector loop's
 * iterations it keeps a rolled loop of one vector a trip and the workspace
 * the loop accumulates into on the stack; without it it unrolls the vectors
 * completely (up to 16) and keeps the workspace in registers.  Measured
 * (mbeacxc F = 128, AVX-512, Zen 5, 2 threads): unroll 4 on SpMM's feature
 * loop ran 1.92x the time of no unroll over 5 record pairs (1.39-1.42x on
 * AVX2); docs/simulator.md, "Model 31". */
static void drop_unroll_hints(const lir_func *f, lir_stmt *s)
{
    if (!s)
        return;
    for (int i = 0; s->kind == LIR_S_SEQ && i < s->nitems; i++)
        drop_unroll_hints(f, s->items[i]);
    if (s->kind == LIR_S_FOR && s->loop_kind == LIR_LOOP_UNROLLED && s->unroll_hint) {
        s->loop_kind = LIR_LOOP_SERIAL;
        if (loom_lir_is_simd_safe(f, s))
            s->unroll = 0;
        else
            s->loop_kind = LIR_LOOP_UNROLLED;
    }
    drop_unroll_hints(f, s->body);
    drop_unroll_hints(f, s->els);
}

loom_status loom_lower(const loom_schedule *sch, lir_func **out, loom_error *err)
{
    return loom_lower_for(sch, NULL, out, err);
}

loom_status loom_lower_for(const loom_schedule *sch, const loom_limits *lim, lir_func **out, loom_error *err)
{
    loom_limits host;
    if (!lim) { /* no target given: the CPU target's (loom_lower, tests and tools) */
        host = loom_target_cpu_limits();
        lim = &host;
    }
    *out = NULL;
    const loom_program *prog = sch->prog;
    lir_func *f = loom_lir_func_new(prog);
    int emitted[LOOM_MAX_STMTS] = {0};
    lctx *c = f ? ctx_new(sch, f, err, 0, emitted) : NULL;
    if (!c) {
        loom_lir_func_free(f);
        return loom_error_set(err, LOOM_ERR_NOMEM, prog->path, 0, 0, "out of memory while lowering");
    }
    /* stages evaluated in a workspace's copy-out (LOOM_ANN_EPILOGUE) and the
     * tensors nobody stores then */
    int absorbed[LOOM_MAX_STMTS] = {0}, unstored[LOOM_MAX_TENSORS] = {0};
    epilogue_plan(sch, absorbed, unstored);
    /* temporaries' buffers first, so codegen allocates them up front */
    for (int t = 0; t < prog->ntensors; t++)
        if (prog->tensors[t].role == LOOM_TENSOR_TEMP && !unstored[t] &&
            sch->stages[prog->tensors[t].def_stmt].compute_at != LOOM_AT_INLINE) {
            int b = loom_lir_buffer_get(f, LIR_BUF_TEMP, t, 0);
            c->st = &prog->stmts[0];
            if (b < 0) {
                loom_status st = loom__lw_fail_nomem(c);
                free(c);
                loom_lir_func_free(f);
                return st;
            }
            f->bufs[b].size = tensor_size(c, t);
        }
    free(c);
    for (int s = 0; s < prog->nstmts; s++) {
        if (absorbed[s]) {
            emitted[s] = 1; /* evaluated in its producer's copy-out */
            continue;
        }
        if (sch->stages[s].compute_at != LOOM_AT_ROOT)
            continue; /* inlined: evaluated where read; placed: lowered at its loop */
        if (loom_stage_rolled_into(sch, s, -1)) { /* a fused reduction chain (RollingUpdate) */
            loom_status st = loom__lower_rolling(sch, lim, f, s, emitted, err);
            if (st) {
                loom_lir_func_free(f);
                return st;
            }
            continue;
        }
        c = ctx_new(sch, f, err, s, emitted);
        loom_status st = c ? lower_stmt(c, f->body) : LOOM_ERR_NOMEM;
        if (st && c)
            st = c->status ? c->status : st;
        free(c);
        if (st) {
            if (st == LOOM_ERR_NOMEM)
                loom_error_set(err, st, prog->path, 0, 0, "out of memory while lowering");
            loom_lir_func_free(f);
            return st;
        }
    }
    for (int s = 0; s < prog->nstmts; s++)
        if (sch->stages[s].compute_at == LOOM_AT_LOOP && !emitted[s]) {
            loom_lir_func_free(f);
            return loom_error_set(err, LOOM_ERR_SEMANTIC, prog->path, prog->stmts[s].line, 0,
                                  "compute-at-lost: block %s is placed at a loop that no longer exists (split, "
                                  "fused, or its block inlined)",
                                  prog->tensors[prog->stmts[s].lhs].name);
        }
    drop_unit_vectors(f->body);
    drop_unroll_hints(f, f->body);
    *out = f;
    return LOOM_OK;
}

loom_status loom_schedule_naive(loom_schedule *sch, const loom_program *prog, int serial, loom_error *err)
{
    loom_status st = loom_schedule_init(sch, prog, NULL, err);
    if (st || serial)
        return st;
    for (int s = 0; s < sch->nstages; s++) {
        loom_stage *S = &sch->stages[s];
        if (S->nloops == 0)
            continue;
        int x = S->iters[S->loops[0].iter].var;
        if (prog->vars[x].reduced)
            continue;
        /* a merge of several compressed patterns cannot be a parallel for */
        int roots[LOOM_MAX_TENSORS], nroots = 0;
        for (int e = 0; e < prog->nexprs; e++) {
            const loom_expr *E = &prog->exprs[e];
            if (E->kind != LOOM_EXPR_ACCESS || E->nidx == 0 || prog->vars[E->idx[0]].stmt != s)
                continue;
            const loom_tensor *T = &prog->tensors[E->tensor];
            for (int l = 0; l < T->format.nlevels; l++)
                if (T->format.level[l] == LOOM_LEVEL_COMPRESSED && E->idx[T->format.mode[l]] == x) {
                    int root = T->pattern_of >= 0 ? T->pattern_of : E->tensor, seen = 0;
                    for (int k = 0; k < nroots; k++)
                        seen |= roots[k] == root;
                    if (!seen)
                        roots[nroots++] = root;
                }
        }
        if (nroots <= 1)
            S->loops[0].kind = LOOM_LOOP_PARALLEL;
    }
    return LOOM_OK;
}
