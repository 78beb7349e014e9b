/* Lowering of union coiteration (docs/schedule-language.md "Sparse
 * semantics"): TACO's merge of sorted coordinate lists (Kjolstad et al.,
 * OOPSLA 2017, section 5: a while loop that advances every operand whose
 * coordinate is the minimum, with one case per lattice point).  Here the
 * cases are one guarded body: each operand group gets a presence flag at
 * the merged index, the body runs where the statement's domain (a union of
 * intersections of groups) holds, and an operand that is absent reads as 0.
 *
 * Supported: every sparse operand group's only non-dense level is its last,
 * compressed (csr, csc); range patterns (causal, band) and dcsr under a union
 * are refused (union-coiteration-format).  A union term that does not
 * constrain the merged index (`A(i,j) + 1`, a dense bias) makes the merge a
 * dense loop with a cursor per operand, which must stay serial
 * (union-coiteration-loop for parallel or vectorized). */
#include "lower_internal.h"

#include <stdio.h>
#include <string.h>

/* The groups of every sparse access under e (through inlined producers);
 * *ovf set when a group number does not fit a domain atom. */
static uint64_t groups_under(lctx *c, int e, int *ovf)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (loom__lw_inlined(c, E->tensor)) {
            int saved[LOOM_MAX_ORDER];
            const loom_stmt *ps = loom__lw_enter_inline(c, E, saved);
            uint64_t m = groups_under(c, ps->rhs, ovf);
            loom__lw_leave_inline(c, ps, E->nidx, saved);
            return m;
        }
        if (!loom_tensor_is_sparse(c->prog, E->tensor))
            return 0;
        int idx[LOOM_MAX_ORDER];
        loom__lw_mapped_idx(c, E, idx);
        int gi = loom__lw_group_for(c, E->tensor, idx);
        if (gi >= LOOM_DOMAIN_MAX_ATOMS) {
            *ovf = 1;
            return 0;
        }
        return (uint64_t)1 << gi;
    }
    uint64_t m = 0;
    for (int k = 0; k < E->nargs && k < 2; k++)
        m |= groups_under(c, E->args[k], ovf);
    return m;
}

/* The domain (dsl/ir/domain.h) of expression e over operand groups: the same
 * rules as loom_expr_domain, through inlined producers (collect_groups
 * has made every group already). */
void loom__lw_domain_of(lctx *c, int e, loom_domain *d)
{
    const loom_expr *E = &c->prog->exprs[e];
    switch (E->kind) {
    case LOOM_EXPR_ACCESS:
        if (loom__lw_inlined(c, E->tensor)) {
            int saved[LOOM_MAX_ORDER];
            const loom_stmt *ps = loom__lw_enter_inline(c, E, saved);
            loom__lw_domain_of(c, ps->rhs, d);
            loom__lw_leave_inline(c, ps, E->nidx, saved);
        } else if (loom_tensor_is_sparse(c->prog, E->tensor)) {
            int idx[LOOM_MAX_ORDER];
            loom__lw_mapped_idx(c, E, idx);
            loom_domain_atom(d, loom__lw_group_for(c, E->tensor, idx)); /* overflow past 64 groups */
        } else {
            loom_domain_universe(d);
        }
        return;
    case LOOM_EXPR_CONST:
        loom_domain_universe(d);
        return;
    default: {
        /* an operator: its row's sparsity rule over the operands' domains */
        const loom_op_row *r = loom_op_of_expr(E);
        loom_op_sparsity rule = r ? r->sparsity : LOOM_OP_SPARSE_MASK;
        loom_domain a[2];
        int n = 0, ovf = 0;
        uint64_t mask = 0;
        if (rule == LOOM_OP_SPARSE_MASK) /* every group read under the arguments */
            mask = groups_under(c, e, &ovf);
        else
            for (; n < E->nargs && n < 2; n++)
                loom__lw_domain_of(c, E->args[n], &a[n]);
        loom_domain_apply(rule, a, n, mask, ovf, d);
        return;
    }
    }
}

/* Union mode: where every sparse access under e is stored (the mask rule for
 * functions), as a condition on presence flags; NULL when always. */
lir_expr *loom__lw_all_present(lctx *c, int e)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (E->kind == LOOM_EXPR_CONST)
        return NULL;
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (loom__lw_inlined(c, E->tensor)) {
            int saved[LOOM_MAX_ORDER];
            const loom_stmt *ps = loom__lw_enter_inline(c, E, saved);
            lir_expr *r = loom__lw_all_present(c, ps->rhs);
            loom__lw_leave_inline(c, ps, E->nidx, saved);
            return r;
        }
        if (!loom_tensor_is_sparse(c->prog, E->tensor))
            return NULL;
        int idx[LOOM_MAX_ORDER];
        loom__lw_mapped_idx(c, E, idx);
        int gi = loom__lw_group_for(c, E->tensor, idx);
        return c->has[gi] >= 0 ? loom_lir_var_ref(c->f, c->has[gi]) : NULL;
    }
    lir_expr *r = NULL;
    for (int k = 0; k < E->nargs && k < 2; k++) {
        lir_expr *a = loom__lw_all_present(c, E->args[k]);
        if (a)
            r = r ? loom_lir_bin(c->f, LIR_AND, r, a) : a;
    }
    return r;
}

/* Union mode: presence of operator e by its row's sparsity rule; NULL when always. */
static lir_expr *present_op(lctx *c, int e)
{
    const loom_expr *E = &c->prog->exprs[e];
    const loom_op_row *r = loom_op_of_expr(E);
    if (!r || r->sparsity == LOOM_OP_SPARSE_MASK)
        return loom__lw_all_present(c, e);
    lir_expr *a = loom__lw_present(c, E->args[0]);
    if (r->sparsity == LOOM_OP_SPARSE_KEEP || r->arity < 2)
        return a;
    lir_expr *b = loom__lw_present(c, E->args[1]);
    if (r->sparsity == LOOM_OP_SPARSE_UNION)
        return a && b ? loom_lir_bin(c->f, LIR_OR, a, b) : NULL;
    return a && b ? loom_lir_bin(c->f, LIR_AND, a, b) : a ? a : b;
}

/* Union mode: presence of e by the algebra (a sum where either side is, a
 * product where both are, a function where all_present); NULL when always. */
lir_expr *loom__lw_present(lctx *c, int e)
{
    const loom_expr *E = &c->prog->exprs[e];
    switch (E->kind) {
    case LOOM_EXPR_ACCESS:
        if (loom__lw_inlined(c, E->tensor)) {
            int saved[LOOM_MAX_ORDER];
            const loom_stmt *ps = loom__lw_enter_inline(c, E, saved);
            lir_expr *r = loom__lw_present(c, ps->rhs);
            loom__lw_leave_inline(c, ps, E->nidx, saved);
            return r;
        }
        return loom__lw_all_present(c, e);
    case LOOM_EXPR_CONST:
        return NULL;
    default:
        return present_op(c, e);
    }
}

int loom__lw_union_begin(lctx *c)
{
    for (int gi = 0; gi < LOOM_MAX_EXPRS / 2 + 2; gi++)
        c->has[gi] = -1;
    c->nuval = 0;
    c->pre = NULL;
    if (!c->union_mode)
        return LOOM_OK;
    for (int gi = 0; gi < c->ngroups; gi++) {
        const group *g = &c->g[gi];
        const loom_format *F = group_format(c, gi);
        for (int l = 0; l < g->nlevels; l++) {
            int last = l == g->nlevels - 1;
            if ((F->level[l] != LOOM_LEVEL_DENSE && !last) || (last && F->level[l] != LOOM_LEVEL_COMPRESSED))
                return c->status = loom_error_set(
                           c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, c->st->line, 0,
                           "union-coiteration-format: statement `%s` sums sparse operands (a union), and %s is "
                           "%s; loom merges a union only over operands whose last level alone is compressed "
                           "(csr, csc); declare it csr or split the sum through a dense temporary",
                           c->st->text, c->prog->tensors[g->root].name, loom_format_name(F->kind));
        }
    }
    return LOOM_OK;
}

/* The domain's condition with the presence flags known so far (a group
 * without a flag yet counts as present: an inner merge checks it); NULL when
 * it is always true. */
static lir_expr *domain_cond(lctx *c)
{
    lir_func *f = c->f;
    lir_expr *any = NULL;
    for (int t = 0; t < c->dom.nterms; t++) {
        lir_expr *all = NULL;
        for (int gi = 0; gi < c->ngroups && gi < LOOM_DOMAIN_MAX_ATOMS; gi++) {
            if (!(c->dom.term[t] >> gi & 1) || c->has[gi] < 0)
                continue;
            lir_expr *h = loom_lir_var_ref(f, c->has[gi]);
            all = all ? loom_lir_bin(f, LIR_AND, all, h) : h;
        }
        if (!all)
            return NULL; /* this term holds everywhere */
        any = any ? loom_lir_bin(f, LIR_OR, any, all) : all;
    }
    return any;
}

/* Cursor of group C[k] at x: coordinate local (the extent when exhausted)
 * and presence flag, into seq. */
static int cursor_step(lctx *c, lir_stmt *seq, int x, int gi, int l, int endv, int *crdv)
{
    lir_func *f = c->f;
    group *g = &c->g[gi];
    char name[64];
    int cb = loom_lir_buffer_get(f, LIR_BUF_CRD, g->root, l);
    snprintf(name, sizeof name, "%s_%s", c->prog->vars[x].name, c->prog->tensors[g->root].name);
    *crdv = loom_lir_new_var(f, name, LIR_I64);
    if (*crdv < 0 || loom_lir_append(f, seq, loom_lir_let(f, *crdv, loom__lw_var_extent(c, x))))
        return loom__lw_fail_nomem(c);
    lir_stmt *iff = loom_lir_if(f, loom_lir_bin(f, LIR_LT, loom_lir_var_ref(f, g->pos[l]), loom_lir_var_ref(f, endv)));
    if (loom_lir_append(f, seq, iff) ||
        loom_lir_append(f, iff->body, loom_lir_assign(f, *crdv, loom_lir_load(f, cb, loom_lir_var_ref(f, g->pos[l])))))
        return loom__lw_fail_nomem(c);
    return LOOM_OK;
}

int loom__lw_union_loop(lctx *c, int d, lir_stmt *seq, int x, lir_loop_kind kind, const int *C, const int *Cl,
                        int nC, int nR)
{
    lir_func *f = c->f;
    char name[64];
    if (nR > 0)
        return c->status = loom_error_set(c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, c->st->line, 0,
                                          "union-coiteration-format: index %s merges a union with a range "
                                          "pattern (causal/band), which loom does not lower",
                                          c->prog->vars[x].name);
    /* dense when some term has no group at x */
    uint64_t atx = 0;
    for (int k = 0; k < nC; k++)
        if (C[k] < LOOM_DOMAIN_MAX_ATOMS)
            atx |= (uint64_t)1 << C[k];
    int dense = 0;
    for (int t = 0; t < c->dom.nterms; t++)
        if (!(c->dom.term[t] & atx))
            dense = 1;
    if (kind == LIR_LOOP_PARALLEL || (dense && kind == LIR_LOOP_VECTORIZED))
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "%s: the loop over %s merges a union of %d sparse operand%s and cannot "
                                          "be %s; %s an enclosing loop instead",
                                          kind == LIR_LOOP_PARALLEL ? "parallel-coiteration" : "union-coiteration-loop",
                                          c->prog->vars[x].name, nC, nC > 1 ? "s" : "",
                                          kind == LIR_LOOP_PARALLEL ? "parallel" : "vectorized",
                                          kind == LIR_LOOP_PARALLEL ? "parallelize" : "vectorize");
    /* cursors: p = pos[parent], end = pos[parent + 1] */
    int endv[LOOM_MAX_EXPRS / 2 + 2], crdv[LOOM_MAX_EXPRS / 2 + 2];
    lir_expr *live = NULL;
    for (int k = 0; k < nC; k++) {
        group *g = &c->g[C[k]];
        int l = Cl[k];
        int pb = loom_lir_buffer_get(f, LIR_BUF_POS, g->root, l);
        snprintf(name, sizeof name, "p%s%d", c->prog->tensors[g->root].name, l + 1);
        g->pos[l] = loom_lir_new_var(f, name, LIR_I64);
        snprintf(name, sizeof name, "end%s%d", c->prog->tensors[g->root].name, l + 1);
        endv[k] = loom_lir_new_var(f, name, LIR_I64);
        if (g->pos[l] < 0 || endv[k] < 0 ||
            loom_lir_append(f, seq, loom_lir_let(f, g->pos[l], loom_lir_load(f, pb, loom__lw_parent_pos(c, C[k], l)))) ||
            loom_lir_append(f, seq, loom_lir_let(f, endv[k], loom_lir_load(f, pb, loom_lir_bin(f, LIR_ADD, loom__lw_parent_pos(c, C[k], l),
                                                                          loom_lir_int(f, 1))))))
            return loom__lw_fail_nomem(c);
        lir_expr *lt = loom_lir_bin(f, LIR_LT, loom_lir_var_ref(f, g->pos[l]), loom_lir_var_ref(f, endv[k]));
        live = live ? loom_lir_bin(f, LIR_OR, live, lt) : lt;
    }
    lir_stmt *loop, *body;
    if (dense) {
        c->xv[x] = loom_lir_new_var(f, c->prog->vars[x].name, LIR_I64);
        if (c->xv[x] < 0)
            return loom__lw_fail_nomem(c);
        loop = loom_lir_for(f, c->xv[x], loom_lir_int(f, 0), loom__lw_var_extent(c, x), kind);
        if (loom_lir_append(f, seq, loop))
            return loom__lw_fail_nomem(c);
        loom__lw_note_loop(c, d, loop);
        body = loop->body;
        for (int k = 0; k < nC; k++)
            if (cursor_step(c, body, x, C[k], Cl[k], endv[k], &crdv[k]))
                return c->status;
    } else {
        loop = loom_lir_while(f, live);
        if (loom_lir_append(f, seq, loop))
            return loom__lw_fail_nomem(c);
        body = loop->body;
        lir_expr *mn = NULL;
        for (int k = 0; k < nC; k++) {
            if (cursor_step(c, body, x, C[k], Cl[k], endv[k], &crdv[k]))
                return c->status;
            mn = mn ? loom_lir_bin(f, LIR_MIN, mn, loom_lir_var_ref(f, crdv[k])) : loom_lir_var_ref(f, crdv[k]);
        }
        c->xv[x] = loom_lir_new_var(f, c->prog->vars[x].name, LIR_I64);
        if (c->xv[x] < 0 || loom_lir_append(f, body, loom_lir_let(f, c->xv[x], mn)))
            return loom__lw_fail_nomem(c);
    }
    for (int k = 0; k < nC; k++) {
        group *g = &c->g[C[k]];
        snprintf(name, sizeof name, "has%s%d", c->prog->tensors[g->root].name, Cl[k] + 1);
        c->has[C[k]] = loom_lir_new_var(f, name, LIR_BOOL);
        if (c->has[C[k]] < 0 ||
            loom_lir_append(f, body, loom_lir_let(f, c->has[C[k]], loom_lir_bin(f, LIR_EQ, loom_lir_var_ref(f, crdv[k]),
                                                                 loom_lir_var_ref(f, c->xv[x])))))
            return loom__lw_fail_nomem(c);
    }
    lir_stmt *inner = body;
    if (loom__lw_guard_into(c, domain_cond(c), &inner) || loom__lw_bind_positions(c, x, inner) ||
        c->inner(c, d, inner))
        return c->status;
    for (int k = 0; k < nC; k++) {
        int pv = c->g[C[k]].pos[Cl[k]];
        if (loom_lir_append(f, body, loom_lir_assign(f, pv, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, pv),
                                                          loom_lir_var_ref(f, c->has[C[k]])))))
            return loom__lw_fail_nomem(c);
    }
    return LOOM_OK;
}

lir_expr *loom__lw_union_guard(lctx *c, lir_expr *cond, lir_expr *val)
{
    lir_func *f = c->f;
    if (!cond || !val)
        return val;
    if (!c->pre) {
        loom__lw_fail_nomem(c);
        return NULL;
    }
    int v = loom_lir_new_var(f, "u", LIR_F32);
    lir_stmt *iff = loom_lir_if(f, cond);
    if (v < 0 || loom_lir_append(f, c->pre, loom_lir_let(f, v, loom_lir_float(f, 0.0))) || loom_lir_append(f, c->pre, iff) ||
        loom_lir_append(f, iff->body, loom_lir_assign(f, v, val))) {
        loom__lw_fail_nomem(c);
        return NULL;
    }
    return loom_lir_var_ref(f, v);
}

lir_expr *loom__lw_union_value(lctx *c, int gi, int t, lir_expr *load)
{
    if (c->has[gi] < 0)
        return load;
    for (int k = 0; k < c->nuval; k++)
        if (c->uval_g[k] == gi && c->uval_t[k] == t)
            return loom_lir_var_ref(c->f, c->uval_v[k]);
    lir_expr *v = loom__lw_union_guard(c, loom_lir_var_ref(c->f, c->has[gi]), load);
    if (v && c->nuval < LOOM_MAX_EXPRS / 2 + 2 && v->kind == LIR_E_VAR) {
        c->uval_g[c->nuval] = gi;
        c->uval_t[c->nuval] = t;
        c->uval_v[c->nuval++] = v->var;
    }
    return v;
}
