/* Lowering: Schedule -> LIR.  The rules are in lower.h. */
#include "lower.h"
#include "lower_fusion.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXG (LOOM_MAX_EXPRS)

/* A group of operands that share positions: same pattern root and the same
 * index variable at every level. */
typedef struct group {
    int root;                      /* tensor owning the pos/crd arrays */
    int nlevels;
    int var[LOOM_MAX_ORDER];       /* program var per level */
    int pos[LOOM_MAX_ORDER];       /* LIR local: position at level l, -1 unbound */
    int lo[LOOM_MAX_ORDER];        /* LIR local: lo of a range level */
} group;

typedef struct lctx {
    const loom_program *prog;
    const loom_schedule *sch;
    lir_func *f;
    loom_error *err;
    int si;                        /* statement (= stage) index */
    const loom_stmt *st;
    const loom_stage *S;
    int ngroups;
    group g[LOOM_MAX_EXPRS / 2 + 2];
    int vmap[LOOM_MAX_VARS];       /* index var substitution while inside an inlined
                                      producer's expression (identity otherwise) */
    int lhs_group;                 /* -1 when the lhs is dense */
    int xv[LOOM_MAX_VARS];         /* LIR local of a program index var, -1 unbound */
    int itv[LOOM_MAX_ITERS];       /* LIR local holding an iter's value, -1 unbound */
    int pos_start[LOOM_MAX_ITERS]; /* POS outer iter: LIR locals of its range start/end */
    int pos_end[LOOM_MAX_ITERS];
    int fixed[LOOM_MAX_VARS];      /* placed stage: LIR local giving an index its value
                                      from the location, -1 when it iterates */
    int skip[LOOM_MAX_LOOPS];      /* placed stage: the loop is not emitted (fixed index) */
    int *emitted;                  /* per stage: 1 once lowered (shared by all contexts) */
    int scalar_acc, has_red, last_free_depth;
    int ws_depth;                  /* CacheWrite: position of the workspace loop, -1 */
    int ws_buf, ws_active, lhs_buf_global;
    int ws_base[LOOM_MAX_ORDER];   /* LIR locals: the output coordinate of local 0 */
    int64_t ws_ext[LOOM_MAX_ORDER];/* local extent per output dimension */
    int ws_guard[LOOM_MAX_ORDER];  /* 1: base + local may pass the extent */
    int rf_iter;                   /* RFactor: the reduction loop's iter, -1 */
    int rf_buf;                    /* its partials buffer */
    int acc;                       /* LIR local of the scalar accumulator */
    int lhs_buf;
    loom_status status;
} lctx;

static loom_status fail_nomem(lctx *c)
{
    if (c->status == LOOM_OK)
        c->status = loom_error_set(c->err, LOOM_ERR_NOMEM, c->prog->path, c->st ? c->st->line : 0, 0,
                                   "out of memory while lowering");
    return c->status;
}


static int values_buffer(lctx *c, int t)
{
    const loom_tensor *T = &c->prog->tensors[t];
    return lir_buffer_get(c->f, T->role == LOOM_TENSOR_TEMP ? LIR_BUF_TEMP : LIR_BUF_VALS, t, 0);
}

/* Group for an access of tensor t with index vars idx[] (per dimension). */
static int group_for(lctx *c, int t, const int *idx)
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
static int inlined_tensor(const lctx *c, int t)
{
    int d = c->prog->tensors[t].def_stmt;
    return d >= 0 && c->sch->stages[d].compute_at == LOOM_AT_INLINE;
}

/* An access's indices under the current substitution. */
static void mapped_idx(const lctx *c, const loom_expr *E, int *idx)
{
    for (int d = 0; d < E->nidx; d++)
        idx[d] = c->vmap[E->idx[d]];
}

/* Enter the inlined producer of an access: map its lhs variables to the
 * access's (mapped) indices; `saved` keeps what to restore. */
static const loom_stmt *enter_inline(lctx *c, const loom_expr *E, int *saved)
{
    const loom_stmt *ps = &c->prog->stmts[c->prog->tensors[E->tensor].def_stmt];
    int idx[LOOM_MAX_ORDER];
    mapped_idx(c, E, idx);
    for (int d = 0; d < E->nidx; d++) {
        saved[d] = c->vmap[ps->lhs_idx[d]];
        c->vmap[ps->lhs_idx[d]] = idx[d];
    }
    return ps;
}

static void leave_inline(lctx *c, const loom_stmt *ps, int n, const int *saved)
{
    for (int d = n - 1; d >= 0; d--)
        c->vmap[ps->lhs_idx[d]] = saved[d];
}

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

static const loom_format *group_format(const lctx *c, int gi) { return &c->prog->tensors[c->g[gi].root].format; }

/* A (tensor, dimension) indexed by var v in the statement, for its extent. */
static lir_expr *var_extent(lctx *c, int v)
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
                return lir_dim(c->f, E->tensor, d);
    }
    for (int d = 0; d < L->order; d++)
        if (st->lhs_idx[d] == v)
            return lir_dim(c->f, st->lhs, d);
    return NULL;
}

/* lo/hi of a range level `l` of group gi, given the parent coordinate. */
static void range_bounds(lctx *c, int gi, int l, lir_expr **lo, lir_expr **hi)
{
    const group *g = &c->g[gi];
    const loom_format *F = group_format(c, gi);
    lir_func *f = c->f;
    lir_expr *parent = lir_var_ref(f, c->xv[g->var[l - 1]]);
    lir_expr *ncols = lir_dim(f, g->root, F->mode[l]);
    if (F->kind == LOOM_FORMAT_CAUSAL) {
        *lo = lir_int(f, 0);
        *hi = lir_bin(f, LIR_MIN, lir_bin(f, LIR_ADD, parent, lir_int(f, 1)), ncols);
    } else { /* band */
        int64_t w = F->band_width;
        *lo = lir_bin(f, LIR_MAX, lir_int(f, 0), lir_bin(f, LIR_SUB, parent, lir_int(f, w)));
        *hi = lir_bin(f, LIR_MIN, ncols, lir_bin(f, LIR_ADD, lir_var_ref(f, c->xv[g->var[l - 1]]), lir_int(f, w + 1)));
    }
}

static lir_expr *parent_pos(lctx *c, int gi, int l)
{
    return l == 0 ? lir_int(c->f, 0) : lir_var_ref(c->f, c->g[gi].pos[l - 1]);
}

/* Row-major linear index of a dense access. */
static lir_expr *dense_index(lctx *c, int t, const int *idx)
{
    const loom_tensor *T = &c->prog->tensors[t];
    if (T->order == 0)
        return lir_int(c->f, 0);
    lir_expr *e = lir_var_ref(c->f, c->xv[idx[0]]);
    for (int d = 1; d < T->order; d++)
        e = lir_bin(c->f, LIR_ADD, lir_bin(c->f, LIR_MUL, e, lir_dim(c->f, t, d)), lir_var_ref(c->f, c->xv[idx[d]]));
    return e;
}

static lir_expr *translate(lctx *c, int e)
{
    const loom_expr *E = &c->prog->exprs[e];
    lir_func *f = c->f;
    switch (E->kind) {
    case LOOM_EXPR_CONST: return lir_float(f, E->value);
    case LOOM_EXPR_ACCESS: {
        const loom_tensor *T = &c->prog->tensors[E->tensor];
        if (inlined_tensor(c, E->tensor)) {
            int saved[LOOM_MAX_ORDER];
            const loom_stmt *ps = enter_inline(c, E, saved);
            lir_expr *v = translate(c, ps->rhs);
            leave_inline(c, ps, E->nidx, saved);
            return v;
        }
        int idx[LOOM_MAX_ORDER];
        mapped_idx(c, E, idx);
        if (!loom_tensor_is_sparse(c->prog, E->tensor))
            return lir_load(f, values_buffer(c, E->tensor), dense_index(c, E->tensor, idx));
        int gi = group_for(c, E->tensor, idx); /* collected already: found, not made */
        if (T->is_pattern)
            return lir_float(f, 1.0);
        return lir_load(f, values_buffer(c, E->tensor), lir_var_ref(f, c->g[gi].pos[c->g[gi].nlevels - 1]));
    }
    case LOOM_EXPR_NEG: return lir_neg(f, translate(c, E->args[0]));
    case LOOM_EXPR_ADD: return lir_bin(f, LIR_ADD, translate(c, E->args[0]), translate(c, E->args[1]));
    case LOOM_EXPR_SUB: return lir_bin(f, LIR_SUB, translate(c, E->args[0]), translate(c, E->args[1]));
    case LOOM_EXPR_MUL: return lir_bin(f, LIR_MUL, translate(c, E->args[0]), translate(c, E->args[1]));
    case LOOM_EXPR_DIV: return lir_bin(f, LIR_DIV, translate(c, E->args[0]), translate(c, E->args[1]));
    case LOOM_EXPR_CALL:
        switch (E->fn) {
        case LOOM_FN_EXP: return lir_call(f, LIR_FN_EXP, translate(c, E->args[0]));
        case LOOM_FN_SQRT: return lir_call(f, LIR_FN_SQRT, translate(c, E->args[0]));
        case LOOM_FN_RELU: return lir_bin(f, LIR_MAX, translate(c, E->args[0]), lir_float(f, 0.0));
        case LOOM_FN_MAX: return lir_bin(f, LIR_MAX, translate(c, E->args[0]), translate(c, E->args[1]));
        case LOOM_FN_MIN: return lir_bin(f, LIR_MIN, translate(c, E->args[0]), translate(c, E->args[1]));
        }
    }
    return NULL;
}

static lir_expr *identity(lctx *c)
{
    return lir_float(c->f, c->st->op == LOOM_ASSIGN_MAX ? -INFINITY : 0.0);
}

static lir_expr *tensor_size(lctx *c, int t);

static lir_expr *lhs_index(lctx *c)
{
    if (c->ws_active) {
        /* row-major over the workspace's extents; local = x - base */
        const loom_stmt *st = c->st;
        lir_expr *e = NULL;
        for (int d = 0; d < c->prog->tensors[st->lhs].order; d++) {
            lir_expr *loc = lir_bin(c->f, LIR_SUB, lir_var_ref(c->f, c->xv[st->lhs_idx[d]]),
                                    lir_var_ref(c->f, c->ws_base[d]));
            e = e ? lir_bin(c->f, LIR_ADD, lir_bin(c->f, LIR_MUL, e, lir_int(c->f, c->ws_ext[d])), loc) : loc;
        }
        return e ? e : lir_int(c->f, 0);
    }
    if (c->lhs_group >= 0)
        return lir_var_ref(c->f, c->g[c->lhs_group].pos[c->g[c->lhs_group].nlevels - 1]);
    lir_expr *e = dense_index(c, c->st->lhs, c->st->lhs_idx);
    if (c->rf_iter >= 0) {
        /* partial copy number r: the rfactor loop's value */
        const loom_iter *R = &c->S->iters[c->rf_iter];
        int r = R->kind == LOOM_ITER_VAR ? c->xv[R->var] : c->itv[c->rf_iter];
        e = lir_bin(c->f, LIR_ADD, lir_bin(c->f, LIR_MUL, lir_var_ref(c->f, r), tensor_size(c, c->st->lhs)), e);
    }
    return e;
}

static lir_expr *combine(lctx *c, lir_expr *old, lir_expr *val)
{
    return lir_bin(c->f, c->st->op == LOOM_ASSIGN_MAX ? LIR_MAX : LIR_ADD, old, val);
}

static int emit_body(lctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    lir_expr *val = translate(c, c->st->rhs);
    if (!val && c->status == LOOM_OK)
        return c->status = loom_error_set(c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, c->st->line, 0,
                                          "block %s: an index of its statement is bound by no loop of this "
                                          "schedule (lowering does not support it)",
                                          c->prog->tensors[c->st->lhs].name);
    lir_stmt *s;
    if (c->has_red && c->scalar_acc)
        s = lir_assign(f, c->acc, combine(c, lir_var_ref(f, c->acc), val));
    else if (!c->has_red)
        s = lir_store(f, c->lhs_buf, lhs_index(c), val);
    else
        s = lir_store(f, c->lhs_buf, lhs_index(c), combine(c, lir_load(f, c->lhs_buf, lhs_index(c)), val));
    return lir_append(f, seq, s) ? fail_nomem(c) : LOOM_OK;
}

static int begin_acc(lctx *c, lir_stmt *seq)
{
    char name[48];
    snprintf(name, sizeof name, "acc_%s", c->prog->tensors[c->st->lhs].name);
    c->acc = lir_new_var(c->f, name, LIR_F32);
    return lir_append(c->f, seq, lir_let(c->f, c->acc, identity(c))) ? fail_nomem(c) : LOOM_OK;
}

static int end_acc(lctx *c, lir_stmt *seq)
{
    return lir_append(c->f, seq, lir_store(c->f, c->lhs_buf, lhs_index(c), lir_var_ref(c->f, c->acc)))
               ? fail_nomem(c)
               : LOOM_OK;
}

/* After index x is bound: positions of dense levels and range levels whose
 * parent is known.  Range levels get their position from the range start. */
static int bind_positions(lctx *c, int x, lir_stmt *seq)
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
            g->pos[l] = lir_new_var(f, name, LIR_I64);
            lir_expr *v;
            if (F->level[l] == LOOM_LEVEL_DENSE) {
                v = l == 0 ? lir_var_ref(f, c->xv[x])
                           : lir_bin(f, LIR_ADD,
                                     lir_bin(f, LIR_MUL, parent_pos(c, gi, l), lir_dim(f, g->root, F->mode[l])),
                                     lir_var_ref(f, c->xv[x]));
            } else { /* range: pos[parent] + (x - lo) */
                int pb = lir_buffer_get(f, LIR_BUF_POS, g->root, l);
                v = lir_bin(f, LIR_ADD, lir_load(f, pb, parent_pos(c, gi, l)),
                            lir_bin(f, LIR_SUB, lir_var_ref(f, c->xv[x]), lir_var_ref(f, g->lo[l])));
            }
            if (lir_append(f, seq, lir_let(f, g->pos[l], v)))
                return fail_nomem(c);
        }
    }
    return LOOM_OK;
}


/* A vectorized loop inside the scalar accumulator's scope reduces into it. */
static void note_loop(lctx *c, int d, lir_stmt *loop)
{
    /* the unroll factor of every unrolled loop (variable, position, split or
     * fused); a serial loop annotated "unroll" = k > 1 (MetaSchedule's
     * unroll annotation, whose value a sampled ExprRV may give) is unrolled
     * k times */
    if (d >= 0 && d < c->S->nloops) {
        const loom_loop *L = &c->S->loops[d];
        if (loop->loop_kind == LIR_LOOP_UNROLLED && L->unroll > 0)
            loop->unroll = L->unroll;
        if (loop->loop_kind == LIR_LOOP_SERIAL)
            for (int k = 0; k < L->nann; k++)
                if (!strcmp(L->ann[k].key, "unroll") && L->ann[k].value > 1) {
                    loop->loop_kind = LIR_LOOP_UNROLLED;
                    loop->unroll = (int)(L->ann[k].value < 1 << 20 ? L->ann[k].value : 1 << 20);
                }
    }
    if (loop->loop_kind == LIR_LOOP_VECTORIZED && c->has_red && c->scalar_acc && d > c->last_free_depth) {
        loop->red_var = c->acc;
        loop->red_max = c->st->op == LOOM_ASSIGN_MAX;
    }
}

static int lower_depth(lctx *c, int d, lir_stmt *seq);

/* Open the rest of the nest below loop d (which bound its iter). */
static int emit_placed(lctx *c, int d, lir_stmt *seq, int after);
static int ws_begin(lctx *c, lir_stmt *seq);
static int ws_end(lctx *c, lir_stmt *seq);
static int guard_into(lctx *c, lir_expr *cond, lir_stmt **seq);

static int inner(lctx *c, int d, lir_stmt *seq)
{
    if (emit_placed(c, d, seq, 0))
        return c->status;
    if (d == c->ws_depth && ws_begin(c, seq))
        return c->status;
    if (c->has_red && c->scalar_acc && d == c->last_free_depth && begin_acc(c, seq))
        return c->status;
    if (lower_depth(c, d + 1, seq))
        return c->status;
    if (c->has_red && c->scalar_acc && d == c->last_free_depth && end_acc(c, seq))
        return c->status;
    if (d == c->ws_depth && ws_end(c, seq))
        return c->status;
    if (emit_placed(c, d, seq, 1))
        return c->status;
    return LOOM_OK;
}

/* The index var of an iter (through splits), -2 for fused iters. */
static int iter_root_var(const loom_stage *S, int it)
{
    const loom_iter *I = &S->iters[it];
    if (I->kind == LOOM_ITER_VAR || I->kind == LOOM_ITER_POS)
        return I->var;
    if (I->kind == LOOM_ITER_SPLIT)
        return iter_root_var(S, I->parent);
    return -2;
}

/* CacheWrite: at the start of an iteration of the workspace loop, declare
 * the workspace, compute each output dimension's base coordinate and fill
 * it with the identity; stores go to it until ws_end copies it out. */
static int ws_begin(lctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    const loom_stmt *st = c->st;
    const loom_stage *S = c->S;
    int L = c->ws_depth, order = c->prog->tensors[st->lhs].order;
    int64_t elems = 1;
    char name[48];
    for (int d = 0; d < order; d++) {
        int v = st->lhs_idx[d];
        int inside = 0, outside = 0;
        for (int p = 0; p < S->nloops; p++)
            if (iter_root_var(S, S->loops[p].iter) == v)
                *(p > L ? &inside : &outside) += 1;
        lir_expr *base;
        c->ws_guard[d] = 0;
        if (!inside) {
            c->ws_ext[d] = 1;
            base = lir_var_ref(f, c->xv[v]);
        } else {
            /* the loops inside must be the innermost tiles of one split (or
             * the whole unsplit index) */
            const loom_iter *V = NULL;
            for (int i = 0; i < S->niters; i++)
                if (S->iters[i].kind == LOOM_ITER_VAR && S->iters[i].var == v)
                    V = &S->iters[i];
            int64_t E = loom_program_var_extent(c->prog, v), ext = 1;
            base = lir_int(f, 0);
            if (!outside) {
                for (int p = L + 1; p < S->nloops; p++)
                    if (iter_root_var(S, S->loops[p].iter) == v)
                        ext *= loom_iter_extent(c->sch, c->si, S->loops[p].iter);
                if (V && V->first_child < 0)
                    ext = E;
            } else {
                if (!V || V->first_child < 0 || S->iters[V->first_child].kind != LOOM_ITER_SPLIT)
                    goto unsupported;
                int n = S->iters[V->first_child].nparts, m = -1;
                for (int k = 0; k < n; k++) {
                    int it = V->first_child + k, posk = -1;
                    for (int p = 0; p < S->nloops; p++)
                        if (S->loops[p].iter == it)
                            posk = p;
                    if (posk < 0)
                        goto unsupported; /* a nested split */
                    if (posk <= L) {
                        if (m >= 0)
                            goto unsupported; /* not a prefix */
                    } else if (m < 0)
                        m = k;
                }
                for (int k = m; k < n; k++)
                    ext *= loom_iter_extent(c->sch, c->si, V->first_child + k);
                /* base = (sum of the outer tiles' values, in tile units) * ext */
                lir_expr *b = NULL;
                for (int k = 0; k < m; k++) {
                    lir_expr *t = lir_var_ref(f, c->itv[V->first_child + k]);
                    b = b ? lir_bin(f, LIR_ADD, lir_bin(f, LIR_MUL, b,
                                                        lir_int(f, loom_iter_extent(c->sch, c->si, V->first_child + k))),
                                    t)
                          : t;
                }
                base = lir_bin(f, LIR_MUL, b, lir_int(f, ext));
            }
            c->ws_ext[d] = ext;
            c->ws_guard[d] = 1;
        }
        snprintf(name, sizeof name, "base_%s", c->prog->vars[v].name);
        c->ws_base[d] = lir_new_var(f, name, LIR_I64);
        if (c->ws_base[d] < 0 || lir_append(f, seq, lir_let(f, c->ws_base[d], base)))
            return fail_nomem(c);
        elems *= c->ws_ext[d];
    }
    c->ws_buf = lir_buffer_get(f, LIR_BUF_LOCAL, c->st->lhs, c->si);
    if (c->ws_buf < 0)
        return fail_nomem(c);
    f->bufs[c->ws_buf].local_elems = elems;
    if (lir_append(f, seq, lir_local(f, c->ws_buf)) ||
        lir_append(f, seq, lir_fill(f, c->ws_buf, lir_int(f, elems), identity(c))))
        return fail_nomem(c);
    c->lhs_buf_global = c->lhs_buf;
    c->lhs_buf = c->ws_buf;
    c->ws_active = 1;
    return LOOM_OK;
unsupported:
    return c->status = loom_error_set(c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, st->line, 0,
                                      "cache-write-split: %s's workspace needs each output index either outside its "
                                      "loop or iterated inside it by the innermost tiles of one split",
                                      c->prog->tensors[st->lhs].name);
}

static int ws_end(lctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    const loom_stmt *st = c->st;
    int order = c->prog->tensors[st->lhs].order;
    c->ws_active = 0;
    c->lhs_buf = c->lhs_buf_global;
    /* for each local element: lhs[base + local] = ws[local] (guarded) */
    lir_stmt *body = seq;
    int lv[LOOM_MAX_ORDER];
    lir_expr *guard = NULL;
    char name[48];
    for (int d = 0; d < order; d++) {
        lv[d] = -1;
        if (c->ws_ext[d] == 1)
            continue;
        snprintf(name, sizeof name, "w_%s", c->prog->vars[st->lhs_idx[d]].name);
        lv[d] = lir_new_var(f, name, LIR_I64);
        lir_stmt *loop = lir_for(f, lv[d], lir_int(f, 0), lir_int(f, c->ws_ext[d]),
                                 d == order - 1 ? LIR_LOOP_VECTORIZED : LIR_LOOP_SERIAL);
        if (lv[d] < 0 || lir_append(f, body, loop))
            return fail_nomem(c);
        body = loop->body;
        if (c->ws_guard[d]) {
            lir_expr *in = lir_bin(f, LIR_LT, lir_bin(f, LIR_ADD, lir_var_ref(f, c->ws_base[d]), lir_var_ref(f, lv[d])),
                                   lir_dim(f, st->lhs, d));
            guard = guard ? lir_bin(f, LIR_AND, guard, in) : in;
        }
    }
    lir_expr *gidx = NULL, *lidx = NULL;
    for (int d = 0; d < order; d++) {
        lir_expr *loc = lv[d] >= 0 ? lir_var_ref(f, lv[d]) : lir_int(f, 0);
        lir_expr *glob = lir_bin(f, LIR_ADD, lir_var_ref(f, c->ws_base[d]), loc);
        gidx = gidx ? lir_bin(f, LIR_ADD, lir_bin(f, LIR_MUL, gidx, lir_dim(f, st->lhs, d)), glob) : glob;
        lidx = lidx ? lir_bin(f, LIR_ADD, lir_bin(f, LIR_MUL, lidx, lir_int(f, c->ws_ext[d])), loc) : loc;
    }
    if (!gidx)
        gidx = lidx = lir_int(f, 0);
    if (guard_into(c, guard, &body))
        return c->status;
    if (lir_append(f, body, lir_store(f, c->lhs_buf, gidx, lir_load(f, c->ws_buf, lidx))))
        return fail_nomem(c);
    return LOOM_OK;
}

static int discordant(lctx *c, const group *g, int l, int x)
{
    const loom_format *F = &c->prog->tensors[g->root].format;
    return c->status = loom_error_set(
               c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
               "discordant-traversal: tensor %s's %s level %d (index %s) is iterated outside the loop of its parent "
               "level (index %s); reorder the loops so %s is inside %s, or declare %s csc",
               c->prog->tensors[g->root].name, loom_level_kind_name(F->level[l]), l + 1, c->prog->vars[x].name,
               c->prog->vars[g->var[l - 1]].name, c->prog->vars[x].name, c->prog->vars[g->var[l - 1]].name,
               c->prog->tensors[g->root].name);
}

/* Collect the compressed (C) and range (R) levels at index x. */
static int levels_at(lctx *c, int x, int *C, int *Cl, int *nC, int *R, int *Rl, int *nR)
{
    *nC = *nR = 0;
    for (int gi = 0; gi < c->ngroups; gi++) {
        const group *g = &c->g[gi];
        const loom_format *F = group_format(c, gi);
        for (int l = 0; l < g->nlevels; l++) {
            if (g->var[l] != x || F->level[l] == LOOM_LEVEL_DENSE)
                continue;
            if (l > 0 && g->pos[l - 1] < 0)
                return discordant(c, g, l, x);
            if (F->level[l] == LOOM_LEVEL_COMPRESSED) {
                C[*nC] = gi;
                Cl[(*nC)++] = l;
            } else {
                R[*nR] = gi;
                Rl[(*nR)++] = l;
            }
        }
    }
    return LOOM_OK;
}

/* LET lo/hi of every range level at x into seq (parent coordinates bound);
 * returns the guard lo <= x < hi (all of them), or NULL if none. */
static int range_lets(lctx *c, int nR, const int *R, const int *Rl, lir_stmt *seq, lir_expr **rlo, lir_expr **rhi)
{
    lir_func *f = c->f;
    char name[48];
    for (int k = 0; k < nR; k++) {
        lir_expr *lo, *hi;
        range_bounds(c, R[k], Rl[k], &lo, &hi);
        snprintf(name, sizeof name, "lo%s%d", c->prog->tensors[c->g[R[k]].root].name, Rl[k] + 1);
        int lov = lir_new_var(f, name, LIR_I64);
        snprintf(name, sizeof name, "hi%s%d", c->prog->tensors[c->g[R[k]].root].name, Rl[k] + 1);
        int hiv = lir_new_var(f, name, LIR_I64);
        if (lir_append(f, seq, lir_let(f, lov, lo)) || lir_append(f, seq, lir_let(f, hiv, hi)))
            return fail_nomem(c);
        c->g[R[k]].lo[Rl[k]] = lov;
        rlo[k] = lir_var_ref(f, lov);
        rhi[k] = lir_var_ref(f, hiv);
    }
    return LOOM_OK;
}

static lir_expr *range_guard(lctx *c, int x, int nR, lir_expr **rlo, lir_expr **rhi)
{
    lir_func *f = c->f;
    lir_expr *guard = NULL;
    for (int k = 0; k < nR; k++) {
        lir_expr *in = lir_bin(f, LIR_AND, lir_bin(f, LIR_GE, lir_var_ref(f, c->xv[x]), rlo[k]),
                               lir_bin(f, LIR_LT, lir_var_ref(f, c->xv[x]), rhi[k]));
        guard = guard ? lir_bin(f, LIR_AND, guard, in) : in;
    }
    return guard;
}

/* Wrap the rest of *seq in `if (cond)`; *seq becomes the if's body. */
static int guard_into(lctx *c, lir_expr *cond, lir_stmt **seq)
{
    if (!cond)
        return LOOM_OK;
    lir_stmt *iff = lir_if(c->f, cond);
    if (lir_append(c->f, *seq, iff))
        return fail_nomem(c);
    *seq = iff->body;
    return LOOM_OK;
}

/* Index x got its value (expression v, already in a local): bind it, its
 * range guards and the positions that depend on it.  *seq may be narrowed
 * by guards. */
static int bind_var(lctx *c, int x, lir_expr *v, lir_expr *extra_guard, lir_stmt **seq)
{
    lir_func *f = c->f;
    int C[LOOM_MAX_EXPRS / 2 + 2], Cl[LOOM_MAX_EXPRS / 2 + 2], nC;
    int R[LOOM_MAX_EXPRS / 2 + 2], Rl[LOOM_MAX_EXPRS / 2 + 2], nR;
    if (levels_at(c, x, C, Cl, &nC, R, Rl, &nR))
        return c->status;
    if (nC > 0) /* the primitives refuse this; a hand-built schedule may not */
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "split-sparse-coordinate: index %s is stored compressed; split its position "
                                          "space (PosSplit) instead of its coordinates",
                                          c->prog->vars[x].name);
    c->xv[x] = lir_new_var(f, c->prog->vars[x].name, LIR_I64);
    if (c->xv[x] < 0 || lir_append(f, *seq, lir_let(f, c->xv[x], v)))
        return fail_nomem(c);
    lir_expr *rlo[LOOM_MAX_EXPRS / 2 + 2], *rhi[LOOM_MAX_EXPRS / 2 + 2];
    if (range_lets(c, nR, R, Rl, *seq, rlo, rhi))
        return c->status;
    lir_expr *g = range_guard(c, x, nR, rlo, rhi);
    if (extra_guard)
        g = g ? lir_bin(f, LIR_AND, extra_guard, g) : extra_guard;
    if (guard_into(c, g, seq))
        return c->status;
    return bind_positions(c, x, *seq);
}

/* Iter `it` has its value in local itv[it]: propagate to its parent split,
 * or, for a VAR, bind the index. */
static int iter_bound(lctx *c, int it, lir_stmt **seq)
{
    const loom_stage *S = c->S;
    const loom_iter *I = &S->iters[it];
    lir_func *f = c->f;
    if (I->kind == LOOM_ITER_VAR)
        return bind_var(c, I->var, lir_var_ref(f, c->itv[it]), NULL, seq);
    if (I->kind != LOOM_ITER_SPLIT)
        return LOOM_OK;
    const loom_iter *P = &S->iters[I->parent];
    for (int k = 0; k < I->nparts; k++)
        if (c->itv[P->first_child + k] < 0)
            return LOOM_OK; /* not all tiles open yet */
    /* parent = ((c0 * e1 + c1) * e2 + c2) ... */
    lir_expr *v = lir_var_ref(f, c->itv[P->first_child]);
    int64_t span = loom_iter_extent(c->sch, c->si, P->first_child);
    for (int k = 1; k < I->nparts; k++) {
        int64_t e = loom_iter_extent(c->sch, c->si, P->first_child + k);
        v = lir_bin(f, LIR_ADD, lir_bin(f, LIR_MUL, v, lir_int(f, e)), lir_var_ref(f, c->itv[P->first_child + k]));
        span *= e;
    }
    int64_t E = loom_iter_extent(c->sch, c->si, I->parent);
    char name[48];
    char nm[40];
    snprintf(name, sizeof name, "%s", loom_iter_name(c->sch, c->si, I->parent, nm, sizeof nm));
    for (char *p = name; *p; p++)
        if (*p == '.')
            *p = '_';
    if (P->kind == LOOM_ITER_VAR) {
        lir_expr *guard = span > E ? lir_bin(f, LIR_LT, v, lir_int(f, E)) : NULL;
        /* bind_var LETs the var itself; the guard uses the expression */
        return bind_var(c, P->var, v, guard, seq);
    }
    c->itv[I->parent] = lir_new_var(f, name, LIR_I64);
    if (c->itv[I->parent] < 0 || lir_append(f, *seq, lir_let(f, c->itv[I->parent], v)))
        return fail_nomem(c);
    if (span > E && guard_into(c, lir_bin(f, LIR_LT, lir_var_ref(f, c->itv[I->parent]), lir_int(f, E)), seq))
        return c->status;
    return iter_bound(c, I->parent, seq);
}

static int lower_var_loop(lctx *c, int d, lir_stmt *seq, int x, lir_loop_kind kind)
{
    lir_func *f = c->f;
    int C[LOOM_MAX_EXPRS / 2 + 2], Cl[LOOM_MAX_EXPRS / 2 + 2], nC;
    int R[LOOM_MAX_EXPRS / 2 + 2], Rl[LOOM_MAX_EXPRS / 2 + 2], nR;
    if (levels_at(c, x, C, Cl, &nC, R, Rl, &nR))
        return c->status;
    char name[48];
    snprintf(name, sizeof name, "%s", c->prog->vars[x].name);
    c->xv[x] = lir_new_var(f, name, LIR_I64);
    if (c->xv[x] < 0)
        return fail_nomem(c);
    lir_expr *rlo[LOOM_MAX_EXPRS / 2 + 2], *rhi[LOOM_MAX_EXPRS / 2 + 2];
    if (range_lets(c, nR, R, Rl, seq, rlo, rhi))
        return c->status;

    if (nC == 0) {
        lir_expr *lo = lir_int(f, 0), *hi = var_extent(c, x);
        for (int k = 0; k < nR; k++) {
            lo = k == 0 ? rlo[k] : lir_bin(f, LIR_MAX, lo, rlo[k]);
            hi = lir_bin(f, LIR_MIN, hi, rhi[k]);
        }
        lir_stmt *loop = lir_for(f, c->xv[x], lo, hi, kind);
        if (lir_append(f, seq, loop))
            return fail_nomem(c);
        note_loop(c, d, loop);
        if (bind_positions(c, x, loop->body))
            return c->status;
        return inner(c, d, loop->body);
    }

    lir_expr *guard = range_guard(c, x, nR, rlo, rhi);
    if (nC == 1) {
        group *g = &c->g[C[0]];
        int l = Cl[0];
        int pb = lir_buffer_get(f, LIR_BUF_POS, g->root, l), cb = lir_buffer_get(f, LIR_BUF_CRD, g->root, l);
        snprintf(name, sizeof name, "p%s%d", c->prog->tensors[g->root].name, l + 1);
        g->pos[l] = lir_new_var(f, name, LIR_I64);
        lir_expr *lo = lir_load(f, pb, parent_pos(c, C[0], l));
        lir_expr *hi = lir_load(f, pb, lir_bin(f, LIR_ADD, parent_pos(c, C[0], l), lir_int(f, 1)));
        lir_stmt *loop = lir_for(f, g->pos[l], lo, hi, kind);
        if (lir_append(f, seq, loop) ||
            lir_append(f, loop->body, lir_let(f, c->xv[x], lir_load(f, cb, lir_var_ref(f, g->pos[l])))))
            return fail_nomem(c);
        note_loop(c, d, loop);
        lir_stmt *body = loop->body;
        if (guard_into(c, guard, &body) || bind_positions(c, x, body))
            return c->status;
        return inner(c, d, body);
    }

    /* coiteration: intersection merge of nC sorted coordinate lists */
    if (kind == LIR_LOOP_PARALLEL)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "parallel-coiteration: the loop over %s merges %d sparse operands and "
                                          "cannot be parallel; parallelize an enclosing loop instead",
                                          c->prog->vars[x].name, nC);
    int endv[LOOM_MAX_EXPRS / 2 + 2], crdv[LOOM_MAX_EXPRS / 2 + 2];
    lir_expr *cond = NULL;
    for (int k = 0; k < nC; k++) {
        group *g = &c->g[C[k]];
        int l = Cl[k];
        int pb = lir_buffer_get(f, LIR_BUF_POS, g->root, l);
        snprintf(name, sizeof name, "p%s%d", c->prog->tensors[g->root].name, l + 1);
        g->pos[l] = lir_new_var(f, name, LIR_I64);
        snprintf(name, sizeof name, "end%s%d", c->prog->tensors[g->root].name, l + 1);
        endv[k] = lir_new_var(f, name, LIR_I64);
        if (lir_append(f, seq, lir_let(f, g->pos[l], lir_load(f, pb, parent_pos(c, C[k], l)))) ||
            lir_append(f, seq,
                       lir_let(f, endv[k], lir_load(f, pb, lir_bin(f, LIR_ADD, parent_pos(c, C[k], l), lir_int(f, 1))))))
            return fail_nomem(c);
        lir_expr *lt = lir_bin(f, LIR_LT, lir_var_ref(f, g->pos[l]), lir_var_ref(f, endv[k]));
        cond = cond ? lir_bin(f, LIR_AND, cond, lt) : lt;
    }
    lir_stmt *wl = lir_while(f, cond);
    if (lir_append(f, seq, wl))
        return fail_nomem(c);
    lir_expr *mn = NULL;
    for (int k = 0; k < nC; k++) {
        group *g = &c->g[C[k]];
        int cb = lir_buffer_get(f, LIR_BUF_CRD, g->root, Cl[k]);
        snprintf(name, sizeof name, "%s_%s", c->prog->vars[x].name, c->prog->tensors[g->root].name);
        crdv[k] = lir_new_var(f, name, LIR_I64);
        if (lir_append(f, wl->body, lir_let(f, crdv[k], lir_load(f, cb, lir_var_ref(f, g->pos[Cl[k]])))))
            return fail_nomem(c);
        mn = mn ? lir_bin(f, LIR_MIN, mn, lir_var_ref(f, crdv[k])) : lir_var_ref(f, crdv[k]);
    }
    if (lir_append(f, wl->body, lir_let(f, c->xv[x], mn)))
        return fail_nomem(c);
    lir_expr *all = NULL;
    for (int k = 0; k < nC; k++) {
        lir_expr *eq = lir_bin(f, LIR_EQ, lir_var_ref(f, crdv[k]), lir_var_ref(f, c->xv[x]));
        all = all ? lir_bin(f, LIR_AND, all, eq) : eq;
    }
    if (guard)
        all = lir_bin(f, LIR_AND, all, guard);
    lir_stmt *iff = lir_if(f, all);
    if (lir_append(f, wl->body, iff))
        return fail_nomem(c);
    if (bind_positions(c, x, iff->body) || inner(c, d, iff->body))
        return c->status;
    for (int k = 0; k < nC; k++) {
        int pv = c->g[C[k]].pos[Cl[k]];
        lir_expr *adv = lir_bin(f, LIR_ADD, lir_var_ref(f, pv),
                                lir_bin(f, LIR_EQ, lir_var_ref(f, crdv[k]), lir_var_ref(f, c->xv[x])));
        if (lir_append(f, wl->body, lir_assign(f, pv, adv)))
            return fail_nomem(c);
    }
    return LOOM_OK;
}

/* The group and level of the compressed level of `tensor` at index x. */
static int pos_group(lctx *c, int tensor, int x, int *level)
{
    const loom_tensor *T = &c->prog->tensors[tensor];
    int root = T->pattern_of >= 0 ? T->pattern_of : tensor;
    for (int gi = 0; gi < c->ngroups; gi++) {
        const group *g = &c->g[gi];
        if (g->root != root)
            continue;
        const loom_format *F = group_format(c, gi);
        for (int l = 0; l < g->nlevels; l++)
            if (g->var[l] == x && F->level[l] == LOOM_LEVEL_COMPRESSED) {
                *level = l;
                return gi;
            }
    }
    return -1;
}

static int lower_pos_loop(lctx *c, int d, lir_stmt *seq, int it, lir_loop_kind kind)
{
    lir_func *f = c->f;
    const loom_iter *I = &c->S->iters[it];
    int x = I->var, l;
    int gi = pos_group(c, I->tensor, x, &l);
    if (gi < 0)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "pos-on-dense-level: %s has no compressed level at index %s",
                                          c->prog->tensors[I->tensor].name, c->prog->vars[x].name);
    group *g = &c->g[gi];
    int outer = c->S->iters[I->parent].first_child, innr = outer + 1;
    char name[48];
    if (I->index == 0) {
        if (l > 0 && g->pos[l - 1] < 0)
            return discordant(c, g, l, x);
        int pb = lir_buffer_get(f, LIR_BUF_POS, g->root, l);
        snprintf(name, sizeof name, "start%s%d", c->prog->tensors[g->root].name, l + 1);
        c->pos_start[outer] = lir_new_var(f, name, LIR_I64);
        snprintf(name, sizeof name, "end%s%d", c->prog->tensors[g->root].name, l + 1);
        c->pos_end[outer] = lir_new_var(f, name, LIR_I64);
        if (lir_append(f, seq, lir_let(f, c->pos_start[outer], lir_load(f, pb, parent_pos(c, gi, l)))) ||
            lir_append(f, seq,
                       lir_let(f, c->pos_end[outer], lir_load(f, pb, lir_bin(f, LIR_ADD, parent_pos(c, gi, l), lir_int(f, 1))))))
            return fail_nomem(c);
        int64_t fac = c->S->iters[innr].factor;
        lir_expr *len = lir_bin(f, LIR_SUB, lir_var_ref(f, c->pos_end[outer]), lir_var_ref(f, c->pos_start[outer]));
        lir_expr *chunks = lir_bin(f, LIR_DIV, lir_bin(f, LIR_ADD, len, lir_int(f, fac - 1)), lir_int(f, fac));
        snprintf(name, sizeof name, "%s_p0", c->prog->vars[x].name);
        c->itv[it] = lir_new_var(f, name, LIR_I64);
        lir_stmt *loop = lir_for(f, c->itv[it], lir_int(f, 0), chunks, kind);
        if (lir_append(f, seq, loop))
            return fail_nomem(c);
        note_loop(c, d, loop);
        return inner(c, d, loop->body);
    }
    if (c->itv[outer] < 0)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "pos-order: the inner loop of %s's position split is outside its outer loop",
                                          c->prog->vars[x].name);
    int64_t fac = I->factor;
    snprintf(name, sizeof name, "%s_p1", c->prog->vars[x].name);
    c->itv[it] = lir_new_var(f, name, LIR_I64);
    /* The last chunk is short.  A vectorized inner loop keeps its constant
     * extent and guards each lane; any other runs to min(factor, what is
     * left), so a chunk longer than the segment costs nothing. */
    int bounded = kind != LIR_LOOP_VECTORIZED;
    lir_expr *hi = lir_int(f, fac);
    if (bounded)
        hi = lir_bin(f, LIR_MIN, hi,
                     lir_bin(f, LIR_SUB, lir_var_ref(f, c->pos_end[outer]),
                             lir_bin(f, LIR_ADD, lir_var_ref(f, c->pos_start[outer]),
                                     lir_bin(f, LIR_MUL, lir_var_ref(f, c->itv[outer]), lir_int(f, fac)))));
    lir_stmt *loop = lir_for(f, c->itv[it], lir_int(f, 0), hi, kind);
    if (lir_append(f, seq, loop))
        return fail_nomem(c);
    note_loop(c, d, loop);
    lir_stmt *body = loop->body;
    snprintf(name, sizeof name, "p%s%d", c->prog->tensors[g->root].name, l + 1);
    g->pos[l] = lir_new_var(f, name, LIR_I64);
    lir_expr *p = lir_bin(f, LIR_ADD, lir_var_ref(f, c->pos_start[outer]),
                          lir_bin(f, LIR_ADD, lir_bin(f, LIR_MUL, lir_var_ref(f, c->itv[outer]), lir_int(f, fac)),
                                  lir_var_ref(f, c->itv[it])));
    if (lir_append(f, body, lir_let(f, g->pos[l], p)))
        return fail_nomem(c);
    if (!bounded &&
        guard_into(c, lir_bin(f, LIR_LT, lir_var_ref(f, g->pos[l]), lir_var_ref(f, c->pos_end[outer])), &body))
        return c->status;
    /* the coordinate, then other operands' range guards and positions */
    int cb = lir_buffer_get(f, LIR_BUF_CRD, g->root, l);
    int C[LOOM_MAX_EXPRS / 2 + 2], Cl[LOOM_MAX_EXPRS / 2 + 2], nC;
    int R[LOOM_MAX_EXPRS / 2 + 2], Rl[LOOM_MAX_EXPRS / 2 + 2], nR;
    if (levels_at(c, x, C, Cl, &nC, R, Rl, &nR))
        return c->status;
    if (nC > 1)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "pos-split-coiteration: index %s merges %d sparse patterns",
                                          c->prog->vars[x].name, nC);
    c->xv[x] = lir_new_var(f, c->prog->vars[x].name, LIR_I64);
    if (lir_append(f, body, lir_let(f, c->xv[x], lir_load(f, cb, lir_var_ref(f, g->pos[l])))))
        return fail_nomem(c);
    lir_expr *rlo[LOOM_MAX_EXPRS / 2 + 2], *rhi[LOOM_MAX_EXPRS / 2 + 2];
    if (range_lets(c, nR, R, Rl, body, rlo, rhi) || guard_into(c, range_guard(c, x, nR, rlo, rhi), &body) ||
        bind_positions(c, x, body))
        return c->status;
    return inner(c, d, body);
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
            if (bind_var(c, x, lir_var_ref(f, c->fixed[x]), NULL, &seq))
                return c->status;
        }
        return inner(c, d, seq);
    }
    switch (I->kind) {
    case LOOM_ITER_VAR: {
        if (lower_var_loop(c, d, seq, I->var, kind))
            return c->status;
        return LOOM_OK;
    }
    case LOOM_ITER_POS: return lower_pos_loop(c, d, seq, it, kind);
    case LOOM_ITER_SPLIT:
    case LOOM_ITER_FUSE: {
        char name[48], nm[40];
        snprintf(name, sizeof name, "%s", loom_iter_name(c->sch, c->si, it, nm, sizeof nm));
        for (char *p = name; *p; p++)
            if (*p == '.')
                *p = '_';
        c->itv[it] = lir_new_var(f, name, LIR_I64);
        int64_t E = loom_iter_extent(c->sch, c->si, it);
        lir_stmt *loop = lir_for(f, c->itv[it], lir_int(f, 0), lir_int(f, E), kind);
        if (c->itv[it] < 0 || lir_append(f, seq, loop))
            return fail_nomem(c);
        note_loop(c, d, loop);
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
                c->itv[srcs[k]] = lir_new_var(f, name, LIR_I64);
                lir_expr *v = lir_bin(f, k == 0 ? LIR_DIV : LIR_SUB, lir_var_ref(f, c->itv[it]), lir_int(f, Eb));
                if (k == 1) /* b = f - (f / Eb) * Eb */
                    v = lir_bin(f, LIR_SUB, lir_var_ref(f, c->itv[it]),
                                lir_bin(f, LIR_MUL, lir_var_ref(f, c->itv[srcs[0]]), lir_int(f, Eb)));
                if (lir_append(f, body, lir_let(f, c->itv[srcs[k]], v)))
                    return fail_nomem(c);
            }
            if (iter_bound(c, I->a, &body) || iter_bound(c, I->b, &body))
                return c->status;
        } else if (iter_bound(c, it, &body))
            return c->status;
        return inner(c, d, body);
    }
    }
    return LOOM_OK;
}

/* Does every free loop visit every element of the lhs? */
static int lhs_fully_covered(lctx *c)
{
    for (int k = 0; k < c->st->nfree; k++) {
        int x = c->st->vars[k];
        for (int gi = 0; gi < c->ngroups; gi++) {
            if (gi == c->lhs_group)
                continue;
            const group *g = &c->g[gi];
            const loom_format *F = group_format(c, gi);
            for (int l = 0; l < g->nlevels; l++)
                if (g->var[l] == x && F->level[l] != LOOM_LEVEL_DENSE)
                    return 0;
        }
    }
    return 1;
}

static lir_expr *tensor_size(lctx *c, int t)
{
    const loom_tensor *T = &c->prog->tensors[t];
    if (loom_tensor_is_sparse(c->prog, t))
        return lir_nnz(c->f, t);
    lir_expr *e = lir_int(c->f, 1);
    for (int d = 0; d < T->order; d++)
        e = d == 0 ? lir_dim(c->f, t, 0) : lir_bin(c->f, LIR_MUL, e, lir_dim(c->f, t, d));
    return e;
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
    c->lhs_group = loom_tensor_is_sparse(c->prog, st->lhs) ? group_for(c, st->lhs, st->lhs_idx) : -1;
    c->lhs_buf = values_buffer(c, st->lhs);
    if (c->lhs_buf < 0)
        return fail_nomem(c);

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
        c->rf_buf = lir_buffer_get(f, LIR_BUF_PARTIAL, st->lhs, 0);
        if (c->rf_buf < 0)
            return fail_nomem(c);
        f->bufs[c->rf_buf].size = lir_bin(f, LIR_MUL, lir_int(f, loom_iter_extent(c->sch, c->si, c->rf_iter)),
                                         tensor_size(c, st->lhs));
    }
    c->ws_depth = -1;
    for (int d = 0; d < c->S->nloops; d++)
        if (c->S->loops[d].iter == c->S->cache_iter)
            c->ws_depth = d;
    if (c->S->cache_iter >= 0 && (c->ws_depth < 0 || first_red_depth <= c->ws_depth))
        return c->status = loom_error_set(
                   c->err, LOOM_ERR_SEMANTIC, c->prog->path, st->line, 0,
                   "cache-write-partial: %s's workspace loop %s: a reduction loop is not inside it, so the "
                   "workspace would be copied out before its values are complete",
                   c->prog->tensors[st->lhs].name, c->ws_depth < 0 ? "no longer exists" : "is misplaced");

    char buf[320];
    snprintf(buf, sizeof buf, "line %d: %s%s", st->line, st->text,
             c->S->compute_at == LOOM_AT_LOOP ? "  (computed here, for this iteration)" : "");
    if (lir_append(f, target, lir_comment(f, buf)))
        return fail_nomem(c);
    /* a workspace is initialised per iteration: only elements the loops
     * never reach need the output filled first */
    if (c->rf_iter >= 0) {
        if (lir_append(f, target, lir_fill(f, c->rf_buf, f->bufs[c->rf_buf].size, identity(c))))
            return fail_nomem(c);
        c->lhs_buf_global = c->lhs_buf;
        c->lhs_buf = c->rf_buf;
    } else if ((!c->scalar_acc && c->ws_depth < 0) || !lhs_fully_covered(c)) {
        if (c->S->compute_at == LOOM_AT_LOOP)
            return c->status = loom_error_set(
                       c->err, LOOM_ERR_SEMANTIC, c->prog->path, st->line, 0,
                       "compute-at-accumulates: block %s reduces through memory (its reduction loops are not all "
                       "inside its free loops, or its loops skip elements), so recomputing its slice at a loop would "
                       "accumulate twice; keep its reductions innermost or compute it at the root",
                       c->prog->tensors[st->lhs].name);
        if (lir_append(f, target, lir_fill(f, c->lhs_buf, tensor_size(c, st->lhs), identity(c))))
            return fail_nomem(c);
    }
    lir_stmt *seq = lir_seq(f);
    if (lir_append(f, target, seq))
        return fail_nomem(c);
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
        int e = lir_new_var(f, "rf_e", LIR_I64), r = lir_new_var(f, "rf_r", LIR_I64);
        int a = lir_new_var(f, "rf_acc", LIR_F32);
        lir_expr *size = tensor_size(c, st->lhs);
        lir_stmt *le = lir_for(f, e, lir_int(f, 0), size, par ? LIR_LOOP_PARALLEL : LIR_LOOP_SERIAL);
        lir_stmt *lr = lir_for(f, r, lir_int(f, 0), lir_int(f, loom_iter_extent(c->sch, c->si, c->rf_iter)),
                               LIR_LOOP_SERIAL);
        if (lir_append(f, target, le) || lir_append(f, le->body, lir_let(f, a, identity(c))) ||
            lir_append(f, le->body, lr) ||
            lir_append(f, lr->body,
                       lir_assign(f, a, combine(c, lir_var_ref(f, a),
                                                lir_load(f, c->rf_buf,
                                                         lir_bin(f, LIR_ADD,
                                                                 lir_bin(f, LIR_MUL, lir_var_ref(f, r), tensor_size(c, st->lhs)),
                                                                 lir_var_ref(f, e)))))) ||
            lir_append(f, le->body, lir_store(f, c->lhs_buf_global, lir_var_ref(f, e), lir_var_ref(f, a))))
            return fail_nomem(c);
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
                return fail_nomem(c);
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
                        inside |= iter_root_var(c->S, c->S->loops[l].iter) == pv;
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
            return fail_nomem(c);
        for (int dd = 0; dd < c->prog->tensors[qs->lhs].order; dd++)
            if (map[dd] >= 0 && c->xv[map[dd]] >= 0)
                k->fixed[qs->lhs_idx[dd]] = c->xv[map[dd]];
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
        lir_stmt *sub = lir_seq(c->f);
        loom_status st = lir_append(c->f, seq, sub) ? fail_nomem(c) : lower_stmt(k, sub);
        if (st)
            c->status = k->status ? k->status : st;
        free(k);
        if (c->status)
            return c->status;
    }
    return LOOM_OK;
}

loom_status loom_lower(const loom_schedule *sch, lir_func **out, loom_error *err)
{
    *out = NULL;
    const loom_program *prog = sch->prog;
    lir_func *f = lir_func_new(prog);
    int emitted[LOOM_MAX_STMTS] = {0};
    lctx *c = f ? ctx_new(sch, f, err, 0, emitted) : NULL;
    if (!c) {
        lir_func_free(f);
        return loom_error_set(err, LOOM_ERR_NOMEM, prog->path, 0, 0, "out of memory while lowering");
    }
    /* temporaries' buffers first, so codegen allocates them up front */
    for (int t = 0; t < prog->ntensors; t++)
        if (prog->tensors[t].role == LOOM_TENSOR_TEMP &&
            sch->stages[prog->tensors[t].def_stmt].compute_at != LOOM_AT_INLINE) {
            int b = lir_buffer_get(f, LIR_BUF_TEMP, t, 0);
            c->st = &prog->stmts[0];
            if (b < 0) {
                loom_status st = fail_nomem(c);
                free(c);
                lir_func_free(f);
                return st;
            }
            f->bufs[b].size = tensor_size(c, t);
        }
    free(c);
    for (int s = 0; s < prog->nstmts; s++) {
        if (sch->stages[s].compute_at != LOOM_AT_ROOT)
            continue; /* inlined: evaluated where read; placed: lowered at its loop */
        if (loom__has_rolled(sch, s)) { /* a fused reduction chain (RollingUpdate) */
            loom_status st = loom__lower_rolling(sch, f, s, emitted, err);
            if (st) {
                lir_func_free(f);
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
            lir_func_free(f);
            return st;
        }
    }
    for (int s = 0; s < prog->nstmts; s++)
        if (sch->stages[s].compute_at == LOOM_AT_LOOP && !emitted[s]) {
            lir_func_free(f);
            return loom_error_set(err, LOOM_ERR_SEMANTIC, prog->path, prog->stmts[s].line, 0,
                                  "compute-at-lost: block %s is placed at a loop that no longer exists (split, "
                                  "fused, or its block inlined)",
                                  prog->tensors[prog->stmts[s].lhs].name);
        }
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
