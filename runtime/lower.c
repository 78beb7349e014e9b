/* Lowering: Program + loop nest -> LIR.  The rules are in lower.h. */
#include "lower.h"

#include <math.h>
#include <stdio.h>
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
    lir_func *f;
    loom_error *err;
    int si;                        /* statement index */
    const loom_stmt *st;
    const loom_nest_stmt *ns;
    int ngroups;
    group g[LOOM_MAX_EXPRS / 2 + 2];
    int expr_group[LOOM_MAX_EXPRS];/* group of a sparse access expr, -1 dense */
    int lhs_group;                 /* -1 when the lhs is dense */
    int xv[LOOM_MAX_VARS];         /* LIR local of a program index var, -1 unbound */
    int depth_of[LOOM_MAX_VARS];   /* loop depth of a statement var */
    int scalar_acc, has_red, last_free_depth;
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

static int tensor_sparse_level(const loom_tensor *t, int l) { return t->format.level[l] != LOOM_LEVEL_DENSE; }

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

static void collect_groups(lctx *c, int e)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        c->expr_group[e] = loom_tensor_is_sparse(c->prog, E->tensor) ? group_for(c, E->tensor, E->idx) : -1;
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
        int gi = c->expr_group[e];
        if (gi < 0)
            return lir_load(f, values_buffer(c, E->tensor), dense_index(c, E->tensor, E->idx));
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

static lir_expr *lhs_index(lctx *c)
{
    if (c->lhs_group >= 0)
        return lir_var_ref(c->f, c->g[c->lhs_group].pos[c->g[c->lhs_group].nlevels - 1]);
    return dense_index(c, c->st->lhs, c->st->lhs_idx);
}

static lir_expr *combine(lctx *c, lir_expr *old, lir_expr *val)
{
    return lir_bin(c->f, c->st->op == LOOM_ASSIGN_MAX ? LIR_MAX : LIR_ADD, old, val);
}

static int emit_body(lctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    lir_expr *val = translate(c, c->st->rhs);
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

static int lower_depth(lctx *c, int d, lir_stmt *seq);

static int inner(lctx *c, int d, lir_stmt *seq)
{
    int x = c->ns->var[d];
    if (bind_positions(c, x, seq))
        return c->status;
    if (c->has_red && c->scalar_acc && d == c->last_free_depth && begin_acc(c, seq))
        return c->status;
    if (lower_depth(c, d + 1, seq))
        return c->status;
    if (c->has_red && c->scalar_acc && d == c->last_free_depth && end_acc(c, seq))
        return c->status;
    return LOOM_OK;
}

static int lower_depth(lctx *c, int d, lir_stmt *seq)
{
    lir_func *f = c->f;
    if (d == c->ns->nloops)
        return emit_body(c, seq);
    int x = c->ns->var[d];
    lir_loop_kind kind = c->ns->kind[d];
    int C[LOOM_MAX_EXPRS / 2 + 2], nC = 0; /* compressed groups (group, level) */
    int Cl[LOOM_MAX_EXPRS / 2 + 2];
    int R[LOOM_MAX_EXPRS / 2 + 2], Rl[LOOM_MAX_EXPRS / 2 + 2], nR = 0;
    for (int gi = 0; gi < c->ngroups; gi++) {
        const group *g = &c->g[gi];
        const loom_format *F = group_format(c, gi);
        for (int l = 0; l < g->nlevels; l++) {
            if (g->var[l] != x || F->level[l] == LOOM_LEVEL_DENSE)
                continue;
            if (l > 0 && g->pos[l - 1] < 0)
                return c->status = loom_error_set(
                           c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                           "discordant-traversal: tensor %s's %s level %d (index %s) is iterated outside the loop "
                           "of its parent level (index %s); reorder the loops so %s is inside %s, or declare %s csc",
                           c->prog->tensors[g->root].name, loom_level_kind_name(F->level[l]), l + 1,
                           c->prog->vars[x].name, c->prog->vars[g->var[l - 1]].name, c->prog->vars[x].name,
                           c->prog->vars[g->var[l - 1]].name, c->prog->tensors[g->root].name);
            if (F->level[l] == LOOM_LEVEL_COMPRESSED) {
                C[nC] = gi;
                Cl[nC++] = l;
            } else {
                R[nR] = gi;
                Rl[nR++] = l;
            }
        }
    }
    char name[48];
    snprintf(name, sizeof name, "%s", c->prog->vars[x].name);
    c->xv[x] = lir_new_var(f, name, LIR_I64);
    if (c->xv[x] < 0)
        return fail_nomem(c);

    /* range lo/hi, computed from the (outer) parent coordinate */
    lir_expr *rlo[LOOM_MAX_EXPRS / 2 + 2], *rhi[LOOM_MAX_EXPRS / 2 + 2];
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

    if (nC == 0) {
        lir_expr *lo = lir_int(f, 0), *hi = var_extent(c, x);
        for (int k = 0; k < nR; k++) {
            lo = k == 0 ? rlo[k] : lir_bin(f, LIR_MAX, lo, rlo[k]);
            hi = lir_bin(f, LIR_MIN, hi, rhi[k]);
        }
        lir_stmt *loop = lir_for(f, c->xv[x], lo, hi, kind);
        if (lir_append(f, seq, loop))
            return fail_nomem(c);
        return inner(c, d, loop->body);
    }

    /* guard for range levels when x is driven by compressed levels */
    lir_expr *guard = NULL;
    for (int k = 0; k < nR; k++) {
        lir_expr *in = lir_bin(f, LIR_AND, lir_bin(f, LIR_GE, lir_var_ref(f, c->xv[x]), rlo[k]),
                               lir_bin(f, LIR_LT, lir_var_ref(f, c->xv[x]), rhi[k]));
        guard = guard ? lir_bin(f, LIR_AND, guard, in) : in;
    }

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
        lir_stmt *body = loop->body;
        if (guard) {
            lir_stmt *iff = lir_if(f, guard);
            if (lir_append(f, body, iff))
                return fail_nomem(c);
            body = iff->body;
        }
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
    if (inner(c, d, iff->body))
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

static loom_status check_nest(const loom_program *prog, const loom_nest *nest, loom_error *err)
{
    if (nest->nstmts != prog->nstmts)
        return loom_error_set(err, LOOM_ERR_INVALID, prog->path, 0, 0,
                              "the loop nest has %d statements but the program has %d", nest->nstmts, prog->nstmts);
    for (int s = 0; s < prog->nstmts; s++) {
        const loom_stmt *st = &prog->stmts[s];
        const loom_nest_stmt *ns = &nest->s[s];
        if (ns->nloops != st->nvars)
            return loom_error_set(err, LOOM_ERR_INVALID, prog->path, st->line, 0,
                                  "the loop nest of statement %d has %d loops but the statement has %d index variables",
                                  s + 1, ns->nloops, st->nvars);
        for (int k = 0; k < st->nvars; k++) {
            int found = 0;
            for (int j = 0; j < ns->nloops; j++)
                found += ns->var[j] == st->vars[k];
            if (found != 1)
                return loom_error_set(err, LOOM_ERR_INVALID, prog->path, st->line, 0,
                                      "the loop nest of statement %d lists index %s %d times (expected once)", s + 1,
                                      prog->vars[st->vars[k]].name, found);
        }
    }
    return LOOM_OK;
}

static loom_status lower_stmt(lctx *c)
{
    const loom_stmt *st = c->st;
    lir_func *f = c->f;
    for (int e = 0; e < LOOM_MAX_EXPRS; e++)
        c->expr_group[e] = -1;
    c->ngroups = 0;
    collect_groups(c, st->rhs);
    c->lhs_group = loom_tensor_is_sparse(c->prog, st->lhs) ? group_for(c, st->lhs, st->lhs_idx) : -1;
    c->lhs_buf = values_buffer(c, st->lhs);
    if (c->lhs_buf < 0)
        return fail_nomem(c);

    c->has_red = st->nvars > st->nfree;
    c->last_free_depth = -1;
    int first_red_depth = c->ns->nloops;
    for (int d = 0; d < c->ns->nloops; d++) {
        int v = c->ns->var[d];
        if (c->ns->kind[d] == LIR_LOOP_PARALLEL && c->prog->vars[v].reduced)
            return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, st->line, 0,
                                              "parallel-reduction: the loop over %s reduces into %s and cannot be "
                                              "parallel without rfactor",
                                              c->prog->vars[v].name, c->prog->tensors[st->lhs].name);
        if (c->prog->vars[v].reduced) {
            if (d < first_red_depth)
                first_red_depth = d;
        } else
            c->last_free_depth = d;
    }
    c->scalar_acc = !c->has_red || first_red_depth > c->last_free_depth;

    char buf[320];
    snprintf(buf, sizeof buf, "line %d: %s", st->line, st->text);
    if (lir_append(f, f->body, lir_comment(f, buf)))
        return fail_nomem(c);
    if (!c->scalar_acc || !lhs_fully_covered(c))
        if (lir_append(f, f->body, lir_fill(f, c->lhs_buf, tensor_size(c, st->lhs), identity(c))))
            return fail_nomem(c);
    lir_stmt *seq = lir_seq(f);
    if (lir_append(f, f->body, seq))
        return fail_nomem(c);
    if (c->has_red && c->scalar_acc && c->last_free_depth < 0 && begin_acc(c, seq))
        return c->status;
    if (lower_depth(c, 0, seq))
        return c->status;
    if (c->has_red && c->scalar_acc && c->last_free_depth < 0 && end_acc(c, seq))
        return c->status;
    return LOOM_OK;
}

loom_status loom_lower(const loom_program *prog, const loom_nest *nest, lir_func **out, loom_error *err)
{
    *out = NULL;
    loom_status st = check_nest(prog, nest, err);
    if (st)
        return st;
    lir_func *f = lir_func_new(prog);
    static __thread lctx ctx; /* large: keep it off the stack */
    lctx *c = &ctx;
    memset(c, 0, sizeof *c);
    c->prog = prog;
    c->f = f;
    c->err = err;
    if (!f)
        return loom_error_set(err, LOOM_ERR_NOMEM, prog->path, 0, 0, "out of memory while lowering");
    /* temporaries' buffers first, so codegen allocates them up front */
    for (int t = 0; t < prog->ntensors; t++)
        if (prog->tensors[t].role == LOOM_TENSOR_TEMP) {
            int b = lir_buffer_get(f, LIR_BUF_TEMP, t, 0);
            c->st = &prog->stmts[0];
            if (b < 0)
                return lir_func_free(f), fail_nomem(c);
            f->bufs[b].size = tensor_size(c, t);
        }
    for (int s = 0; s < prog->nstmts; s++) {
        c->si = s;
        c->st = &prog->stmts[s];
        c->ns = &nest->s[s];
        for (int v = 0; v < LOOM_MAX_VARS; v++)
            c->xv[v] = -1;
        if (lower_stmt(c)) {
            lir_func_free(f);
            return c->status;
        }
    }
    *out = f;
    return LOOM_OK;
}

/* ---- the default nest ----------------------------------------------- */

static void appearance(const loom_program *prog, int e, int *order, int *n)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        for (int d = 0; d < E->nidx; d++) {
            int seen = 0;
            for (int k = 0; k < *n; k++)
                seen |= order[k] == E->idx[d];
            if (!seen)
                order[(*n)++] = E->idx[d];
        }
        return;
    }
    if (E->kind == LOOM_EXPR_CONST)
        return;
    for (int k = 0; k < E->nargs; k++)
        appearance(prog, E->args[k], order, n);
}

/* edges parent-var -> child-var of one sparse access */
static void add_edges(const loom_program *prog, int t, const int *idx, int before[][LOOM_MAX_STMT_VARS],
                      const int *slot)
{
    const loom_tensor *T = &prog->tensors[t];
    if (!loom_tensor_is_sparse(prog, t))
        return;
    for (int l = 1; l < T->format.nlevels; l++) {
        if (!tensor_sparse_level(T, l))
            continue;
        int a = slot[idx[T->format.mode[l - 1]]], b = slot[idx[T->format.mode[l]]];
        before[b][a] = 1; /* a must come before b */
    }
}

static void edges_expr(const loom_program *prog, int e, int before[][LOOM_MAX_STMT_VARS], const int *slot)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        add_edges(prog, E->tensor, E->idx, before, slot);
        return;
    }
    if (E->kind == LOOM_EXPR_CONST)
        return;
    for (int k = 0; k < E->nargs; k++)
        edges_expr(prog, E->args[k], before, slot);
}

loom_status loom_nest_default(const loom_program *prog, int serial, loom_nest *out, loom_error *err)
{
    memset(out, 0, sizeof *out);
    out->nstmts = prog->nstmts;
    for (int s = 0; s < prog->nstmts; s++) {
        const loom_stmt *st = &prog->stmts[s];
        int order[LOOM_MAX_STMT_VARS + LOOM_MAX_ORDER], n = 0;
        appearance(prog, st->rhs, order, &n);
        for (int k = 0; k < st->nfree; k++) {
            int seen = 0;
            for (int j = 0; j < n; j++)
                seen |= order[j] == st->vars[k];
            if (!seen)
                order[n++] = st->vars[k];
        }
        int slot[LOOM_MAX_VARS];
        for (int v = 0; v < LOOM_MAX_VARS; v++)
            slot[v] = 0;
        for (int k = 0; k < n; k++)
            slot[order[k]] = k;
        int before[LOOM_MAX_STMT_VARS][LOOM_MAX_STMT_VARS];
        memset(before, 0, sizeof before);
        edges_expr(prog, st->rhs, before, slot);
        add_edges(prog, st->lhs, st->lhs_idx, before, slot);
        int placed[LOOM_MAX_STMT_VARS] = {0};
        loom_nest_stmt *ns = &out->s[s];
        ns->nloops = n;
        for (int pos = 0; pos < n; pos++) {
            int pick = -1;
            for (int k = 0; k < n && pick < 0; k++) {
                if (placed[k])
                    continue;
                int ready = 1;
                for (int j = 0; j < n; j++)
                    if (before[k][j] && !placed[j])
                        ready = 0;
                if (ready)
                    pick = k;
            }
            if (pick < 0)
                return loom_error_set(err, LOOM_ERR_SEMANTIC, prog->path, st->line, 0,
                                      "discordant-traversal: no loop order of `%s` traverses every sparse operand in "
                                      "its level order (their level orders form a cycle); declare one of them csc "
                                      "(or csr) so their orders agree",
                                      st->text);
            placed[pick] = 1;
            ns->var[pos] = order[pick];
            ns->kind[pos] = LIR_LOOP_SERIAL;
        }
        if (!serial && n > 0 && !prog->vars[ns->var[0]].reduced)
            ns->kind[0] = LIR_LOOP_PARALLEL;
    }
    return LOOM_OK;
}
