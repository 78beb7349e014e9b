/* Lowering of fused reduction chains (lower_fusion.h): a max= reduction m
 * (the source) with the blocks rolled into its reduction loop
 * (RollingUpdate) and the blocks computed at that loop (ComputeAt), as one
 * pass over the reduced index -- FlashAttention's online softmax (Dao et
 * al. 2022, algorithm 1; Neptune's rolling update, Zhao et al. 2025, 4.1):
 *
 *   for the free loops of m (their kinds kept):
 *     acc_m = -inf; acc_r = identity (a scalar, or a local array over r's
 *     own free indices, e.g. O's row)
 *     for j over the reduced index (dense, causal/band range, or the
 *       positions of a compressed level):
 *       blocks computed at the loop: their value at (row, j), a local
 *       v = m's operand
 *       if v > acc_m: acc_r *= exp(a_r * (v - acc_m)) (skipped while acc_m
 *         is -inf: acc_r is still its identity); acc_m = v
 *       acc_r (+|max)= r's operand without its deferred divisions
 *     m = acc_m; r = acc_r / (each deferred divisor's acc, where it is not 0)
 *
 * The j loop runs in blocks of 16 keys (lower_fusion_keys.c): the block's
 * scores first, then one max update and rescale per block (lazily, only
 * when the max grows, as FlashAttention-2 does per tile), the block's
 * exponentials in one vectorized loop, then the rolled terms; a row costs
 * one exp per score plus one per block whose max is higher.
 * Sub-expressions of r's operand that do not depend on r's own free indices
 * are computed once per j, outside the loop over those indices. */
#include "lower_fusion.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_fusion_internal.h"

loom_status loom__fu_unsupported(fctx *c, const char *fmt, ...)
{
    if (c->status)
        return c->status;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return c->status = loom_error_set(c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, c->ms->line, 0,
                                      "rolling-update-layout: %s", msg);
}
#define unsupported loom__fu_unsupported

loom_status loom__fu_nomem(fctx *c)
{
    if (!c->status)
        c->status = loom_error_set(c->err, LOOM_ERR_NOMEM, c->prog->path, c->ms->line, 0,
                                   "out of memory while lowering");
    return c->status;
}

int loom__fu_app(fctx *c, lir_stmt *seq, lir_stmt *s)
{
    if (lir_append(c->f, seq, s)) {
        loom__fu_nomem(c);
        return -1;
    }
    return 0;
}

static int def_of(const fctx *c, int t) { return c->prog->tensors[t].def_stmt; }

static int inlined(const fctx *c, int t)
{
    int d = def_of(c, t);
    return d >= 0 && c->sch->stages[d].compute_at == LOOM_AT_INLINE;
}

static int values_buffer(fctx *c, int t)
{
    return lir_buffer_get(c->f, c->prog->tensors[t].role == LOOM_TENSOR_TEMP ? LIR_BUF_TEMP : LIR_BUF_VALS, t, 0);
}

#define tr loom__fu_tr
#define tr_hoist loom__fu_tr_hoist
#define find_access_of loom__fu_find_access_of

static const rolled *rolled_of(const fctx *c, int s)
{
    for (int k = 0; k < c->nr; k++)
        if (c->r[k].s == s)
            return &c->r[k];
    return NULL;
}

static lir_expr *dense_index(fctx *c, int t, const int *locals)
{
    const loom_tensor *T = &c->prog->tensors[t];
    lir_expr *e = T->order ? lir_var_ref(c->f, locals[0]) : lir_int(c->f, 0);
    for (int d = 1; d < T->order; d++)
        e = lir_bin(c->f, LIR_ADD, lir_bin(c->f, LIR_MUL, e, lir_dim(c->f, t, d)), lir_var_ref(c->f, locals[d]));
    return e;
}

/* The LIR locals of an access's indices under vm; -1 when one is unbound. */
static int access_locals(fctx *c, const loom_expr *E, const int *vm, int *loc)
{
    for (int d = 0; d < E->nidx; d++)
        if ((loc[d] = vm[E->idx[d]]) < 0)
            return unsupported(c, "%s is read at an index that is neither a loop of %s nor a free index of the rolled "
                                  "block",
                               c->prog->tensors[E->tensor].name, c->prog->tensors[c->ms->lhs].name);
    return 0;
}


/* vm for an inlined block's variables, from the access E under vm. */
static void enter(fctx *c, const loom_expr *E, const int *vm, int *vm2)
{
    const loom_stmt *ps = &c->prog->stmts[def_of(c, E->tensor)];
    memcpy(vm2, vm, sizeof(int) * MAXV);
    for (int d = 0; d < E->nidx; d++)
        vm2[ps->lhs_idx[d]] = vm[E->idx[d]];
}

static lir_expr *tr_access(fctx *c, const loom_expr *E, const int *vm)
{
    lir_func *f = c->f;
    int t = E->tensor, d = def_of(c, t);
    if (inlined(c, t)) {
        int vm2[MAXV];
        enter(c, E, vm, vm2);
        return tr(c, c->prog->stmts[d].rhs, vm2);
    }
    if (d == c->m)
        return lir_var_ref(f, c->accm);
    int loc[LOOM_MAX_ORDER];
    if (access_locals(c, E, vm, loc))
        return NULL;
    if (d >= 0 && c->pp_val[d] >= 0) {
        for (int k = 0; k < E->nidx; k++)
            if (loc[k] != c->pp_at[d][k]) {
                unsupported(c, "%s, computed at the loop, is read at other indices than the ones it is computed at",
                            c->prog->tensors[t].name);
                return NULL;
            }
        return lir_var_ref(f, c->pp_val[d]);
    }
    if (d >= 0 && rolled_of(c, d)) {
        unsupported(c, "rolled block %s is read other than as a deferred divisor", c->prog->tensors[t].name);
        return NULL;
    }
    const loom_tensor *T = &c->prog->tensors[t];
    if (loom_tensor_is_sparse(c->prog, t)) {
        int root = T->pattern_of >= 0 ? T->pattern_of : t;
        if (root != c->root || loc[T->format.mode[0]] != c->xv[c->var0] || loc[T->format.mode[1]] != c->xv[c->jvar]) {
            unsupported(c, "sparse %s is not read at the positions of the loop's mask", T->name);
            return NULL;
        }
        if (T->is_pattern)
            return lir_float(f, 1.0);
        lir_expr *p = lir_var_ref(f, c->posv);
        if (T->nbatch > 0) { /* one copy of the pattern per batch coordinate (program.h) */
            lir_expr *b = lir_var_ref(f, loc[0]);
            for (int k = 1; k < T->nbatch; k++)
                b = lir_bin(f, LIR_ADD, lir_bin(f, LIR_MUL, b, lir_dim(f, t, k)), lir_var_ref(f, loc[k]));
            p = lir_bin(f, LIR_ADD, lir_bin(f, LIR_MUL, b, lir_nnz(f, root)), p);
        }
        return lir_load(f, values_buffer(c, t), p);
    }
    return lir_load(f, values_buffer(c, t), dense_index(c, t, loc));
}

static int deferred(const fctx *c, const loom_expr *D)
{
    if (!c->cur || D->kind != LOOM_EXPR_ACCESS)
        return 0;
    int d = def_of(c, D->tensor);
    for (int k = 0; k < c->cur->rule.ndiv; k++)
        if (c->cur->rule.div[k] == d)
            return 1;
    return 0;
}

lir_expr *loom__fu_tr(fctx *c, int e, const int *vm)
{
    const loom_expr *E = &c->prog->exprs[e];
    lir_func *f = c->f;
    switch (E->kind) {
    case LOOM_EXPR_CONST: return lir_float(f, E->value);
    case LOOM_EXPR_ACCESS: return tr_access(c, E, vm);
    case LOOM_EXPR_NEG: return lir_neg(f, tr(c, E->args[0], vm));
    case LOOM_EXPR_ADD: return lir_bin(f, LIR_ADD, tr(c, E->args[0], vm), tr(c, E->args[1], vm));
    case LOOM_EXPR_SUB: return lir_bin(f, LIR_SUB, tr(c, E->args[0], vm), tr(c, E->args[1], vm));
    case LOOM_EXPR_MUL: return lir_bin(f, LIR_MUL, tr(c, E->args[0], vm), tr(c, E->args[1], vm));
    case LOOM_EXPR_DIV:
        if (deferred(c, &c->prog->exprs[E->args[1]]))
            return tr(c, E->args[0], vm);
        return lir_bin(f, LIR_DIV, tr(c, E->args[0], vm), tr(c, E->args[1], vm));
    case LOOM_EXPR_CALL:
        switch (E->fn) {
        case LOOM_FN_EXP: return lir_call(f, LIR_FN_EXP, tr(c, E->args[0], vm));
        case LOOM_FN_SQRT: return lir_call(f, LIR_FN_SQRT, tr(c, E->args[0], vm));
        case LOOM_FN_RELU: return lir_bin(f, LIR_MAX, tr(c, E->args[0], vm), lir_float(f, 0.0));
        case LOOM_FN_MAX: return lir_bin(f, LIR_MAX, tr(c, E->args[0], vm), tr(c, E->args[1], vm));
        case LOOM_FN_MIN: return lir_bin(f, LIR_MIN, tr(c, E->args[0], vm), tr(c, E->args[1], vm));
        }
    }
    return NULL;
}

/* Does e (inlined blocks expanded) read at an index bound to one of the
 * slice loops' locals? */
static int uses_extra(fctx *c, int e, const int *vm)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (inlined(c, E->tensor)) {
            int vm2[MAXV];
            enter(c, E, vm, vm2);
            return uses_extra(c, c->prog->stmts[def_of(c, E->tensor)].rhs, vm2);
        }
        for (int d = 0; d < E->nidx; d++)
            for (int k = 0; k < c->nextra_locals; k++)
                if (vm[E->idx[d]] == c->extra_locals[k])
                    return 1;
        return 0;
    }
    for (int k = 0; k < E->nargs; k++)
        if (uses_extra(c, E->args[k], vm))
            return 1;
    return 0;
}

/* Do vm and vm2 bind the indices that expression e reads alike? */
static int same_binding(const fctx *c, int e, const int *vm, const int *vm2)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (E->kind == LOOM_EXPR_CONST)
        return 1;
    if (E->kind == LOOM_EXPR_ACCESS) {
        for (int d = 0; d < E->nidx; d++)
            if (vm[E->idx[d]] != vm2[E->idx[d]])
                return 0;
        return 1;
    }
    for (int k = 0; k < E->nargs; k++)
        if (!same_binding(c, E->args[k], vm, vm2))
            return 0;
    return 1;
}

/* tr, with the sub-expressions that do not depend on the slice loops
 * computed once into locals in `hoist` (outside those loops). */
lir_expr *loom__fu_tr_hoist(fctx *c, int e, const int *vm, lir_stmt *hoist)
{
    const loom_expr *E = &c->prog->exprs[e];
    lir_func *f = c->f;
    if (E->kind == LOOM_EXPR_CONST)
        return lir_float(f, E->value);
    if (E->kind == LOOM_EXPR_ACCESS && inlined(c, E->tensor)) { /* hoist inside, where readers share it */
        int vm2[MAXV];
        enter(c, E, vm, vm2);
        return tr_hoist(c, c->prog->stmts[def_of(c, E->tensor)].rhs, vm2, hoist);
    }
    if (!uses_extra(c, e, vm)) {
        for (int k = 0; k < c->nhoist; k++)
            if (c->hoist_e[k] == e && same_binding(c, e, c->hoist_vm[k], vm))
                return lir_var_ref(f, c->hoist_var[k]);
        if (c->nhoist == 32) { /* every hoisted value is handed on through a local array */
            unsupported(c, "the rolled terms have more than 32 sub-expressions to compute once per key");
            return NULL;
        }
        int h = lir_new_var(f, "h", LIR_F32);
        lir_expr *v = tr(c, e, vm);
        if (h < 0 || !v || loom__fu_app(c, hoist, lir_let(f, h, v)))
            return NULL;
        c->hoist_e[c->nhoist] = e;
        memcpy(c->hoist_vm[c->nhoist], vm, sizeof(int) * MAXV);
        c->hoist_var[c->nhoist++] = h;
        return lir_var_ref(f, h);
    }
    switch (E->kind) {
    case LOOM_EXPR_ACCESS:
        if (inlined(c, E->tensor)) {
            int vm2[MAXV];
            enter(c, E, vm, vm2);
            return tr_hoist(c, c->prog->stmts[def_of(c, E->tensor)].rhs, vm2, hoist);
        }
        return tr_access(c, E, vm);
    case LOOM_EXPR_NEG: return lir_neg(f, tr_hoist(c, E->args[0], vm, hoist));
    case LOOM_EXPR_ADD:
    case LOOM_EXPR_SUB:
    case LOOM_EXPR_MUL:
    case LOOM_EXPR_DIV: {
        if (E->kind == LOOM_EXPR_DIV && deferred(c, &c->prog->exprs[E->args[1]]))
            return tr_hoist(c, E->args[0], vm, hoist);
        lir_binop op = E->kind == LOOM_EXPR_ADD ? LIR_ADD : E->kind == LOOM_EXPR_SUB ? LIR_SUB
                       : E->kind == LOOM_EXPR_MUL ? LIR_MUL : LIR_DIV;
        return lir_bin(f, op, tr_hoist(c, E->args[0], vm, hoist), tr_hoist(c, E->args[1], vm, hoist));
    }
    default: return tr(c, e, vm);
    }
}

/* r's vars that read m (through inlined blocks) -> m's vars. */
static void map_to_m(fctx *c, int e, const int *sub, int *rvm, int depth)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (depth > 64 || E->kind == LOOM_EXPR_CONST)
        return;
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (E->tensor == c->ms->lhs) {
            for (int d = 0; d < E->nidx; d++)
                if (sub[E->idx[d]] >= 0)
                    rvm[sub[E->idx[d]]] = c->ms->lhs_idx[d];
        } else if (inlined(c, E->tensor)) {
            const loom_stmt *ps = &c->prog->stmts[def_of(c, E->tensor)];
            int sub2[MAXV];
            memcpy(sub2, sub, sizeof sub2);
            for (int d = 0; d < E->nidx; d++)
                sub2[ps->lhs_idx[d]] = sub[E->idx[d]];
            map_to_m(c, ps->rhs, sub2, rvm, depth + 1);
        }
        return;
    }
    for (int k = 0; k < E->nargs; k++)
        map_to_m(c, E->args[k], sub, rvm, depth + 1);
}

/* The mask driving j: sparse accesses in m's operand and in the blocks
 * computed at the loop, mapped to m's variables. */
static int find_mask(fctx *c, int e, const int *sub, int depth)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (depth > 64 || E->kind == LOOM_EXPR_CONST)
        return 0;
    if (E->kind == LOOM_EXPR_ACCESS) {
        int t = E->tensor, d = def_of(c, t);
        const loom_tensor *T = &c->prog->tensors[t];
        if (d >= 0 && d != c->m && (inlined(c, t) || c->pp_val[d] == -2)) {
            const loom_stmt *ps = &c->prog->stmts[d];
            int sub2[MAXV];
            for (int v = 0; v < MAXV; v++)
                sub2[v] = -1;
            for (int k = 0; k < E->nidx; k++)
                sub2[ps->lhs_idx[k]] = sub[E->idx[k]];
            if (find_mask(c, ps->rhs, sub2, depth + 1))
                return c->status;
        }
        if (!loom_tensor_is_sparse(c->prog, t))
            return 0;
        int root = T->pattern_of >= 0 ? T->pattern_of : t;
        const loom_format *F = &c->prog->tensors[root].format;
        int v0 = sub[E->idx[T->format.mode[0]]], v1 = T->format.nlevels == 2 ? sub[E->idx[T->format.mode[1]]] : -1;
        if (F->nlevels != 2 || F->level[0] != LOOM_LEVEL_DENSE || F->level[1] == LOOM_LEVEL_DENSE || v1 != c->jvar ||
            v0 < 0 || c->prog->vars[v0].reduced)
            return unsupported(c, "sparse %s must be a (dense, compressed|range) mask over (a row index of %s, its "
                                  "reduced index)",
                               T->name, c->prog->tensors[c->ms->lhs].name);
        if (c->root >= 0 && (c->root != root || c->var0 != v0))
            return unsupported(c, "the loop would merge two sparse patterns (%s and %s)",
                               c->prog->tensors[c->root].name, c->prog->tensors[root].name);
        c->root = root;
        c->var0 = v0;
        return 0;
    }
    for (int k = 0; k < E->nargs; k++)
        if (find_mask(c, E->args[k], sub, depth + 1))
            return c->status;
    return 0;
}

lir_expr *loom__fu_red_combine(fctx *c, loom_assign_op op, lir_expr *a, lir_expr *b)
{
    return lir_bin(c->f, op == LOOM_ASSIGN_MAX ? LIR_MAX : LIR_ADD, a, b);
}

/* Open the slice loops of rolled block R into seq (innermost vectorized);
 * returns the innermost body and sets *lidx to the local (row-major) index. */
lir_stmt *loom__fu_slice_loops(fctx *c, rolled *R, lir_stmt *seq, lir_expr **lidx)
{
    lir_func *f = c->f;
    *lidx = lir_int(f, 0);
    c->nextra_locals = 0;
    for (int k = 0; k < R->nextra; k++) {
        int v = lir_new_var(f, c->prog->vars[R->extra[k]].name, LIR_I64);
        lir_stmt *loop = lir_for(f, v, lir_int(f, 0), lir_int(f, R->ext[k]),
                                 k == R->nextra - 1 ? LIR_LOOP_VECTORIZED : LIR_LOOP_SERIAL);
        if (v < 0 || loom__fu_app(c, seq, loop))
            return NULL;
        R->vm[R->extra[k]] = v;
        c->extra_locals[c->nextra_locals++] = v;
        *lidx = k == 0 ? lir_var_ref(f, v)
                       : lir_bin(f, LIR_ADD, lir_bin(f, LIR_MUL, *lidx, lir_int(f, R->ext[k])), lir_var_ref(f, v));
        seq = loop->body;
    }
    return seq;
}

lir_expr *loom__fu_acc_ref(fctx *c, const rolled *R, lir_expr *lidx)
{
    return R->buf >= 0 ? lir_load(c->f, R->buf, lidx) : lir_var_ref(c->f, R->acc);
}

lir_stmt *loom__fu_acc_set(fctx *c, const rolled *R, lir_expr *lidx, lir_expr *v)
{
    return R->buf >= 0 ? lir_store(c->f, R->buf, lidx, v) : lir_assign(c->f, R->acc, v);
}

/* Set up rolled block r: rule, variable map, slice. */
static int setup_rolled(fctx *c, int s, rolled *R)
{
    const loom_program *prog = c->prog;
    const loom_stmt *rs = &prog->stmts[s];
    R->s = s;
    R->buf = -1;
    if (loom_rolling_correction(c->sch, s, c->m, &R->rule, c->err))
        return c->status = LOOM_ERR_SEMANTIC;
    if (loom_tensor_is_sparse(prog, rs->lhs))
        return unsupported(c, "rolled block %s has a sparse output", prog->tensors[rs->lhs].name);
    int sub[MAXV], rvm[MAXV];
    for (int v = 0; v < MAXV; v++) {
        sub[v] = v;
        rvm[v] = -1;
        R->vm[v] = -1;
    }
    map_to_m(c, rs->rhs, sub, rvm, 0);
    rvm[rs->vars[rs->nfree]] = c->jvar;
    int covered[MAXV] = {0};
    R->nslice = 1;
    for (int k = 0; k < rs->nvars; k++) {
        int v = rs->vars[k];
        if (rvm[v] >= 0) {
            R->vm[v] = c->xv[rvm[v]];
            covered[rvm[v]] = 1;
        } else {
            if (R->nextra == LOOM_MAX_ORDER)
                return unsupported(c, "rolled block %s has too many own indices", prog->tensors[rs->lhs].name);
            R->extra[R->nextra] = v;
            R->ext[R->nextra] = loom_program_var_extent(prog, v);
            R->nslice *= R->ext[R->nextra++];
        }
    }
    for (int k = 0; k < c->ms->nvars; k++)
        if (!covered[c->ms->vars[k]])
            return unsupported(c, "rolled block %s does not index %s's %s %s", prog->tensors[rs->lhs].name,
                               prog->tensors[c->ms->lhs].name, k < c->ms->nfree ? "row index" : "reduced index",
                               prog->vars[c->ms->vars[k]].name);
    if (R->nslice > MAX_SLICE)
        return unsupported(c, "rolled block %s keeps %lld partials per row, more than %d",
                           prog->tensors[rs->lhs].name, (long long)R->nslice, MAX_SLICE);
    for (int k = 0; k < R->rule.ndiv; k++) {
        const rolled *D = rolled_of(c, R->rule.div[k]);
        if (!D || D->nslice != 1 || D->rule.ndiv)
            return unsupported(c, "deferred divisor %s of %s must be rolled before it, one value per row, without "
                                  "deferred divisions of its own",
                               prog->tensors[prog->stmts[R->rule.div[k]].lhs].name, prog->tensors[rs->lhs].name);
    }
    return 0;
}

int loom__has_rolled(const loom_schedule *sch, int s)
{
    for (int q = 0; q < sch->nstages; q++)
        if (sch->stages[q].rolling && sch->stages[q].at_stage == s)
            return 1;
    return 0;
}

int loom__fu_find_access_of(const loom_program *prog, int e, int t)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return E->tensor == t ? e : -1;
    if (E->kind == LOOM_EXPR_CONST)
        return -1;
    for (int k = 0; k < E->nargs; k++) {
        int r = find_access_of(prog, E->args[k], t);
        if (r >= 0)
            return r;
    }
    return -1;
}

/* After the j loop: m's value and the rolled blocks', deferred divisions
 * applied. */
static int finish_row(fctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    const loom_program *prog = c->prog;
    int loc[LOOM_MAX_ORDER];
    for (int d = 0; d < prog->tensors[c->ms->lhs].order; d++)
        loc[d] = c->xv[c->ms->lhs_idx[d]];
    if (loom__fu_app(c, seq, lir_store(f, values_buffer(c, c->ms->lhs), dense_index(c, c->ms->lhs, loc),
                              lir_var_ref(f, c->accm))))
        return c->status;
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        const loom_stmt *rs = &prog->stmts[R->s];
        lir_expr *lidx;
        lir_stmt *in = loom__fu_slice_loops(c, R, seq, &lidx);
        if (!in)
            return c->status ? c->status : loom__fu_nomem(c);
        int t = lir_new_var(f, "fin", LIR_F32);
        if (t < 0 || loom__fu_app(c, in, lir_let(f, t, loom__fu_acc_ref(c, R, lidx))))
            return c->status ? c->status : loom__fu_nomem(c);
        for (int q = 0; q < R->rule.ndiv; q++) {
            const rolled *D = rolled_of(c, R->rule.div[q]);
            lir_stmt *nz = lir_if(f, lir_bin(f, LIR_NE, lir_var_ref(f, D->acc), lir_float(f, 0.0)));
            if (loom__fu_app(c, in, nz) ||
                loom__fu_app(c, nz->body, lir_assign(f, t, lir_bin(f, LIR_DIV, lir_var_ref(f, t), lir_var_ref(f, D->acc)))))
                return c->status;
        }
        for (int d = 0; d < prog->tensors[rs->lhs].order; d++)
            loc[d] = R->vm[rs->lhs_idx[d]];
        if (loom__fu_app(c, in, lir_store(f, values_buffer(c, rs->lhs), dense_index(c, rs->lhs, loc), lir_var_ref(f, t))))
            return c->status;
    }
    return 0;
}

/* A local array of n floats (a unique name per key). */
int loom__fu_local_array(fctx *c, const char *prefix, int tensor, int key, int64_t n)
{
    int b = lir_buffer_get(c->f, LIR_BUF_LOCAL, tensor, key);
    if (b < 0) {
        loom__fu_nomem(c);
        return -1;
    }
    c->f->bufs[b].local_elems = n;
    snprintf(c->f->bufs[b].name, sizeof c->f->bufs[b].name, "%s_%s_%d", prefix, c->prog->tensors[tensor].name, key);
    return b;
}

/* Declare the running max and the rolled blocks' accumulators (identity)
 * in seq; key makes the local arrays' names unique. */
int loom__fu_declare_accs(fctx *c, lir_stmt *seq, int key)
{
    lir_func *f = c->f;
    const loom_program *prog = c->prog;
    c->accm = lir_new_var(f, "run_max", LIR_F32);
    if (c->accm < 0 || loom__fu_app(c, seq, lir_let(f, c->accm, lir_float(f, -INFINITY))))
        return c->status ? c->status : loom__fu_nomem(c);
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        const loom_stmt *rs = &prog->stmts[R->s];
        lir_expr *id = lir_float(f, rs->op == LOOM_ASSIGN_MAX ? -INFINITY : 0.0);
        char name[48];
        snprintf(name, sizeof name, "acc_%s", prog->tensors[rs->lhs].name);
        R->buf = -1;
        if (R->nslice == 1) {
            R->acc = lir_new_var(f, name, LIR_F32);
            if (R->acc < 0 || loom__fu_app(c, seq, lir_let(f, R->acc, id)))
                return c->status ? c->status : loom__fu_nomem(c);
        } else {
            R->buf = loom__fu_local_array(c, "racc", rs->lhs, key + R->s, R->nslice);
            if (R->buf < 0 || loom__fu_app(c, seq, lir_local(f, R->buf)) ||
                loom__fu_app(c, seq, lir_fill(f, R->buf, lir_int(f, R->nslice), id)))
                return c->status ? c->status : loom__fu_nomem(c);
        }
    }
    return 0;
}

/* Open the first n of the source's (row) loops into *seq, their kinds
 * kept; *seq becomes the innermost body. */
int loom__fu_open_rows(fctx *c, lir_stmt **seqp, int n)
{
    lir_func *f = c->f;
    const loom_program *prog = c->prog;
    const loom_stage *M = &c->sch->stages[c->m];
    lir_stmt *seq = *seqp;
    for (int d = 0; d < n; d++) {
        const loom_iter *I = &M->iters[M->loops[d].iter];
        lir_loop_kind kind = M->loops[d].kind == LOOM_LOOP_PARALLEL ? LIR_LOOP_PARALLEL : LIR_LOOP_SERIAL;
        if (I->kind == LOOM_ITER_VAR) {
            int v = I->var;
            lir_stmt *loop = lir_for(f, c->xv[v], lir_int(f, 0), lir_int(f, loom_program_var_extent(prog, v)), kind);
            if (loom__fu_app(c, seq, loop))
                return c->status;
            seq = loop->body;
            continue;
        }
        /* a fusion of two row loops: a = f / Eb, b = f - a * Eb */
        int va = M->iters[I->a].var, vb = M->iters[I->b].var;
        int64_t ea = loom_program_var_extent(prog, va), eb = loom_program_var_extent(prog, vb);
        int fv = lir_new_var(f, "fused", LIR_I64);
        lir_stmt *loop = lir_for(f, fv, lir_int(f, 0), lir_int(f, ea * eb), kind);
        if (fv < 0 || loom__fu_app(c, seq, loop) ||
            loom__fu_app(c, loop->body, lir_let(f, c->xv[va], lir_bin(f, LIR_DIV, lir_var_ref(f, fv), lir_int(f, eb)))) ||
            loom__fu_app(c, loop->body,
                lir_let(f, c->xv[vb],
                        lir_bin(f, LIR_SUB, lir_var_ref(f, fv),
                                lir_bin(f, LIR_MUL, lir_var_ref(f, c->xv[va]), lir_int(f, eb))))))
            return c->status ? c->status : loom__fu_nomem(c);
        seq = loop->body;
    }
    *seqp = seq;
    return 0;
}

static int lower_chain(fctx *c, int *emitted)
{
    lir_func *f = c->f;
    const loom_program *prog = c->prog;
    const loom_stage *M = &c->sch->stages[c->m];
    const loom_stmt *ms = c->ms;
    if (loom_tensor_is_sparse(prog, ms->lhs))
        return unsupported(c, "%s has a sparse output", prog->tensors[ms->lhs].name);
    /* m's loops: its free loops (unsplit), then the reduced index */
    for (int d = 0; d < M->nloops; d++) {
        const loom_iter *I = &M->iters[M->loops[d].iter];
        int ok = I->kind == LOOM_ITER_VAR && (d < M->nloops - 1) == !prog->vars[I->var].reduced;
        if (I->kind == LOOM_ITER_FUSE && d < M->nloops - 1) {
            const loom_iter *A = &M->iters[I->a], *B = &M->iters[I->b];
            ok = A->kind == LOOM_ITER_VAR && B->kind == LOOM_ITER_VAR && !prog->vars[A->var].reduced &&
                 !prog->vars[B->var].reduced;
        }
        if (!ok)
            return unsupported(c, "%s's loops must be its unsplit (or pairwise fused) row loops, then its reduced "
                                  "index innermost",
                               prog->tensors[ms->lhs].name);
    }
    c->jvar = ms->vars[ms->nfree];
    for (int v = 0; v < MAXV; v++)
        c->xv[v] = -1;
    for (int k = 0; k < ms->nvars; k++) {
        int v = ms->vars[k];
        c->xv[v] = lir_new_var(f, prog->vars[v].name, LIR_I64);
    }
    /* blocks computed at the loop (-2: to be computed) */
    for (int d = 0; d < LOOM_MAX_STMTS; d++)
        c->pp_val[d] = -1;
    for (int d = 0; d < c->sch->nstages; d++) {
        const loom_stage *D = &c->sch->stages[d];
        if (D->compute_at == LOOM_AT_LOOP && !D->at_after && D->at_stage == c->m) {
            if (d > c->m || D->at_iter != M->loops[M->nloops - 1].iter)
                return unsupported(c, "%s is computed at a loop of %s other than the rolled reduction loop",
                                   prog->tensors[prog->stmts[d].lhs].name, prog->tensors[ms->lhs].name);
            c->pp_val[d] = -2;
            emitted[d] = 1;
        }
    }
    c->root = c->var0 = -1;
    int sub[MAXV];
    for (int v = 0; v < MAXV; v++)
        sub[v] = v;
    if (find_mask(c, ms->rhs, sub, 0))
        return c->status;
    c->nr = 0;
    for (int q = 0; q < c->sch->nstages; q++)
        if (c->sch->stages[q].rolling && c->sch->stages[q].at_stage == c->m) {
            if (setup_rolled(c, q, &c->r[c->nr]))
                return c->status;
            c->nr++;
            emitted[q] = 1;
        }
    char buf[360];
    snprintf(buf, sizeof buf, "line %d: %s  (rolling update: %d block%s fused into its loop)", ms->line, ms->text,
             c->nr, c->nr == 1 ? "" : "s");
    if (loom__fu_app(c, f->body, lir_comment(f, buf)))
        return c->status;
    lir_stmt *seq = f->body;
    int tiled;
    if (loom__fu_tiled(c, &seq, &tiled))
        return c->status;
    if (tiled)
        return 0;
    if (loom__fu_open_rows(c, &seq, M->nloops - 1))
        return c->status;
    if (!M->splitk) {
        if (loom__fu_declare_accs(c, seq, 1000) || loom__fu_j_loop(c, seq) || finish_row(c, seq))
            return c->status;
        return 0;
    }
    return loom__fu_split_k_row(c, seq, M->loops[M->nloops - 1].kind == LOOM_LOOP_PARALLEL) || finish_row(c, seq) ? c->status : 0;
}

loom_status loom__lower_rolling(const loom_schedule *sch, lir_func *f, int s, int *emitted, loom_error *err)
{
    fctx *c = calloc(1, sizeof *c); /* large: off the stack */
    if (!c)
        return loom_error_set(err, LOOM_ERR_NOMEM, sch->prog->path, 0, 0, "out of memory while lowering");
    c->sch = sch;
    c->prog = sch->prog;
    c->f = f;
    c->err = err;
    c->m = s;
    c->ms = &sch->prog->stmts[s];
    c->chunk = -1;
    emitted[s] = 1;
    lower_chain(c, emitted);
    loom_status st = c->status;
    free(c);
    return st;
}
