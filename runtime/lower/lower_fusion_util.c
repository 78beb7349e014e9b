/* The building blocks of the fused-chain lowering (lower_fusion.h,
 * lower_fusion_internal.h), shared by its parts: errors, translating the
 * chain's expressions (with hoisting), accumulators and their slice loops,
 * the row loops, split-K chunk bounds.  The bottom layer of the fused
 * lowering: lower_fusion.c, lower_fusion_keys.c, lower_fusion_tile.c and
 * lower_splitk.c call it; it calls only lir.c and the one expression
 * translator (lower_expr.c), handing it the chain's accesses, deferred
 * divisors and hoisting through callbacks. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_expr.h"
#include "lower_fusion_internal.h"

#define unsupported loom__fu_unsupported
#define tr loom__fu_tr
#define tr_hoist loom__fu_tr_hoist
#define def_of loom__fu_def_of
#define inlined loom__fu_inlined
#define values_buffer loom__fu_values_buffer
#define rolled_of loom__fu_rolled_of
#define dense_index loom__fu_dense_index

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

loom_status loom__fu_nomem(fctx *c)
{
    if (!c->status)
        c->status = loom_error_set(c->err, LOOM_ERR_NOMEM, c->prog->path, c->ms->line, 0,
                                   "out of memory while lowering");
    return c->status;
}

int loom__fu_app(fctx *c, lir_stmt *seq, lir_stmt *s)
{
    if (loom_lir_append(c->f, seq, s)) {
        loom__fu_nomem(c);
        return -1;
    }
    return 0;
}

int loom__fu_def_of(const fctx *c, int t) { return c->prog->tensors[t].def_stmt; }

int loom__fu_inlined(const fctx *c, int t)
{
    int d = def_of(c, t);
    return d >= 0 && c->sch->stages[d].compute_at == LOOM_AT_INLINE;
}

int loom__fu_values_buffer(fctx *c, int t)
{
    return loom_lir_buffer_get(c->f, c->prog->tensors[t].role == LOOM_TENSOR_TEMP ? LIR_BUF_TEMP : LIR_BUF_VALS, t, 0);
}


const rolled *loom__fu_rolled_of(const fctx *c, int s)
{
    for (int k = 0; k < c->nr; k++)
        if (c->r[k].s == s)
            return &c->r[k];
    return NULL;
}

lir_expr *loom__fu_dense_index(fctx *c, int t, const int *locals)
{
    const loom_tensor *T = &c->prog->tensors[t];
    lir_expr *e = T->order ? loom_lir_var_ref(c->f, locals[0]) : loom_lir_int(c->f, 0);
    for (int d = 1; d < T->order; d++) {
        const loom_size *Z = &c->prog->sizes[T->dim_size[d]];
        lir_expr *n = c->const_dims && Z->bound ? loom_lir_int(c->f, Z->value) : loom_lir_dim(c->f, t, d);
        e = loom_lir_bin(c->f, LIR_ADD, loom_lir_bin(c->f, LIR_MUL, e, n), loom_lir_var_ref(c->f, locals[d]));
    }
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
        return loom_lir_var_ref(f, c->accm);
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
        return loom_lir_var_ref(f, c->pp_val[d]);
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
            return loom_lir_float(f, 1.0);
        lir_expr *p = loom_lir_var_ref(f, c->posv);
        if (T->nbatch > 0) { /* one copy of the pattern per batch coordinate (program.h) */
            lir_expr *b = loom_lir_var_ref(f, loc[0]);
            for (int k = 1; k < T->nbatch; k++)
                b = loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, b, loom_lir_dim(f, t, k)), loom_lir_var_ref(f, loc[k]));
            p = loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, b, loom_lir_nnz(f, root)), p);
        }
        return loom_lir_load(f, values_buffer(c, t), p);
    }
    return loom_lir_load(f, values_buffer(c, t), dense_index(c, t, loc));
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

/* The translator's state on the fused path: the variable map, and for
 * hoisting the sequence hoisted values go to (NULL: no hoisting). */
typedef struct fu_xctx {
    fctx *c;
    const int *vm;
    lir_stmt *hoist;
} fu_xctx;

static lir_expr *fu_access(const loom_xlate *x, int e)
{
    const fu_xctx *k = x->ctx;
    return tr_access(k->c, &k->c->prog->exprs[e], k->vm);
}

static lir_expr *fu_hoist_operand(const loom_xlate *x, int e)
{
    const fu_xctx *k = x->ctx;
    return tr_hoist(k->c, e, k->vm, k->hoist);
}

/* A deferred divisor is left out (the row's end divides); under hoisting, a
 * call is translated whole (not hoisted inside). */
static int fu_special(const loom_xlate *x, int e, const loom_op_row *r, lir_expr **out)
{
    const fu_xctx *k = x->ctx;
    const loom_expr *E = &k->c->prog->exprs[e];
    if (loom_op_id(r) == LOOM_OP_DIV && deferred(k->c, &k->c->prog->exprs[E->args[1]])) {
        *out = x->operand ? x->operand(x, E->args[0]) : loom__xlate(x, E->args[0]);
        return 1;
    }
    if (k->hoist && E->kind == LOOM_EXPR_CALL) {
        *out = tr(k->c, e, k->vm);
        return 1;
    }
    return 0;
}

lir_expr *loom__fu_tr(fctx *c, int e, const int *vm)
{
    fu_xctx k = {c, vm, NULL};
    loom_xlate x = {.f = c->f, .prog = c->prog, .ctx = &k, .access = fu_access, .special = fu_special};
    return loom__xlate(&x, e);
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
        return loom_lir_float(f, E->value);
    if (E->kind == LOOM_EXPR_ACCESS && inlined(c, E->tensor)) { /* hoist inside, where readers share it */
        int vm2[MAXV];
        enter(c, E, vm, vm2);
        return tr_hoist(c, c->prog->stmts[def_of(c, E->tensor)].rhs, vm2, hoist);
    }
    if (!uses_extra(c, e, vm)) {
        for (int k = 0; k < c->nhoist; k++)
            if (c->hoist_e[k] == e && same_binding(c, e, c->hoist_vm[k], vm))
                return loom_lir_var_ref(f, c->hoist_var[k]);
        if (c->nhoist == 32) { /* every hoisted value is handed on through a local array */
            unsupported(c, "the rolled terms have more than 32 sub-expressions to compute once per key");
            return NULL;
        }
        int h = loom_lir_new_var(f, "h", LIR_F32);
        lir_expr *v = tr(c, e, vm);
        if (h < 0 || !v || loom__fu_app(c, hoist, loom_lir_let(f, h, v)))
            return NULL;
        c->hoist_e[c->nhoist] = e;
        memcpy(c->hoist_vm[c->nhoist], vm, sizeof(int) * MAXV);
        c->hoist_var[c->nhoist++] = h;
        return loom_lir_var_ref(f, h);
    }
    if (E->kind == LOOM_EXPR_ACCESS) /* (an inlined block's was expanded above) */
        return tr_access(c, E, vm);
    fu_xctx k = {c, vm, hoist};
    loom_xlate x = {.f = f, .prog = c->prog, .ctx = &k, .access = fu_access, .operand = fu_hoist_operand,
                    .special = fu_special};
    return loom__xlate(&x, e);
}

lir_expr *loom__fu_red_combine(fctx *c, loom_assign_op op, lir_expr *a, lir_expr *b)
{
    return loom_lir_bin(c->f, op == LOOM_ASSIGN_MAX ? LIR_MAX : LIR_ADD, a, b);
}

/* Open the slice loops of rolled block R into seq (innermost vectorized);
 * returns the innermost body and sets *lidx to the local (row-major) index. */
lir_stmt *loom__fu_slice_loops(fctx *c, rolled *R, lir_stmt *seq, lir_expr **lidx)
{
    lir_func *f = c->f;
    *lidx = loom_lir_int(f, 0);
    c->nextra_locals = 0;
    for (int k = 0; k < R->nextra; k++) {
        int v = loom_lir_new_var(f, c->prog->vars[R->extra[k]].name, LIR_I64);
        lir_stmt *loop = loom_lir_for(f, v, loom_lir_int(f, 0), loom_lir_int(f, R->ext[k]),
                                 k == R->nextra - 1 ? LIR_LOOP_VECTORIZED : LIR_LOOP_SERIAL);
        if (v < 0 || loom__fu_app(c, seq, loop))
            return NULL;
        R->vm[R->extra[k]] = v;
        c->extra_locals[c->nextra_locals++] = v;
        *lidx = k == 0 ? loom_lir_var_ref(f, v)
                       : loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, *lidx, loom_lir_int(f, R->ext[k])), loom_lir_var_ref(f, v));
        seq = loop->body;
    }
    return seq;
}

lir_expr *loom__fu_acc_ref(fctx *c, const rolled *R, lir_expr *lidx)
{
    return R->buf >= 0 ? loom_lir_load(c->f, R->buf, lidx) : loom_lir_var_ref(c->f, R->acc);
}

lir_stmt *loom__fu_acc_set(fctx *c, const rolled *R, lir_expr *lidx, lir_expr *v)
{
    return R->buf >= 0 ? loom_lir_store(c->f, R->buf, lidx, v) : loom_lir_assign(c->f, R->acc, v);
}

/* A local array of n floats (a unique name per key). */
int loom__fu_local_array(fctx *c, const char *prefix, int tensor, int key, int64_t n)
{
    int b = loom_lir_buffer_get(c->f, LIR_BUF_LOCAL, tensor, key);
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
    c->accm = loom_lir_new_var(f, "run_max", LIR_F32);
    if (c->accm < 0 || loom__fu_app(c, seq, loom_lir_let(f, c->accm, loom_lir_float(f, -INFINITY))))
        return c->status ? c->status : loom__fu_nomem(c);
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        const loom_stmt *rs = &prog->stmts[R->s];
        lir_expr *id = loom_lir_float(f, rs->op == LOOM_ASSIGN_MAX ? -INFINITY : 0.0);
        char name[48];
        snprintf(name, sizeof name, "acc_%s", prog->tensors[rs->lhs].name);
        R->buf = -1;
        if (R->nslice == 1) {
            R->acc = loom_lir_new_var(f, name, LIR_F32);
            if (R->acc < 0 || loom__fu_app(c, seq, loom_lir_let(f, R->acc, id)))
                return c->status ? c->status : loom__fu_nomem(c);
        } else {
            R->buf = loom__fu_local_array(c, "racc", rs->lhs, key + R->s, R->nslice);
            if (R->buf < 0 || loom__fu_app(c, seq, loom_lir_local(f, R->buf)) ||
                loom__fu_app(c, seq, loom_lir_fill(f, R->buf, loom_lir_int(f, R->nslice), id)))
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
            lir_stmt *loop = loom_lir_for(f, c->xv[v], loom_lir_int(f, 0), loom_lir_int(f, loom_program_var_extent(prog, v)), kind);
            if (loom__fu_app(c, seq, loop))
                return c->status;
            seq = loop->body;
            continue;
        }
        /* a fusion of two row loops: a = f / Eb, b = f - a * Eb */
        int va = M->iters[I->a].var, vb = M->iters[I->b].var;
        int64_t ea = loom_program_var_extent(prog, va), eb = loom_program_var_extent(prog, vb);
        int fv = loom_lir_new_var(f, "fused", LIR_I64);
        lir_stmt *loop = loom_lir_for(f, fv, loom_lir_int(f, 0), loom_lir_int(f, ea * eb), kind);
        if (fv < 0 || loom__fu_app(c, seq, loop) ||
            loom__fu_app(c, loop->body, loom_lir_let(f, c->xv[va], loom_lir_bin(f, LIR_DIV, loom_lir_var_ref(f, fv), loom_lir_int(f, eb)))) ||
            loom__fu_app(c, loop->body,
                loom_lir_let(f, c->xv[vb],
                        loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, fv),
                                loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, c->xv[va]), loom_lir_int(f, eb))))))
            return c->status ? c->status : loom__fu_nomem(c);
        seq = loop->body;
    }
    *seqp = seq;
    return 0;
}

/* [lo, hi) narrowed to chunk c->chunk of c->nchunks (split-K): lets into
 * seq; returns 0 and the bounds in *clo, *chi. */
int loom__fu_chunk_bounds(fctx *c, lir_stmt *seq, lir_expr *lo, lir_expr *hi, lir_expr **clo, lir_expr **chi)
{
    lir_func *f = c->f;
    if (c->chunk < 0) {
        *clo = lo;
        *chi = hi;
        return 0;
    }
    int len = loom_lir_new_var(f, "len", LIR_I64), a = loom_lir_new_var(f, "clo", LIR_I64), b = loom_lir_new_var(f, "chi", LIR_I64);
    lir_expr *ch = loom_lir_var_ref(f, c->chunk), *n = loom_lir_int(f, c->nchunks);
    if (loom__fu_app(c, seq, loom_lir_let(f, len, loom_lir_bin(f, LIR_SUB, hi, lo))) ||
        loom__fu_app(c, seq, loom_lir_let(f, a, loom_lir_bin(f, LIR_ADD, lo, loom_lir_bin(f, LIR_DIV, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, len), ch), n)))) ||
        loom__fu_app(c, seq,
            loom_lir_let(f, b,
                    loom_lir_bin(f, LIR_ADD, lo,
                            loom_lir_bin(f, LIR_DIV,
                                    loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, len), loom_lir_bin(f, LIR_ADD, ch, loom_lir_int(f, 1))),
                                    n)))))
        return c->status ? c->status : loom__fu_nomem(c);
    *clo = loom_lir_var_ref(f, a);
    *chi = loom_lir_var_ref(f, b);
    return 0;
}
