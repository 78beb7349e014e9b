/* The simulator: LIR -> the simulator's form (constant-folded integer
 * expressions, float work reduced to its memory accesses and static
 * costs), buffer addresses, and the public entry points (sim.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_impl.h"

typedef struct pool_blk {
    struct pool_blk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} pool_blk;

typedef struct bctx {
    unsigned char *scaled; /* per var: 1 not an induction variable, 2 such a var an index scales (model 35) */
    const lir_func *f;
    const loom_dataset *ds;
    const loom_target *t;
    sprog *p;
    pool_blk *pool;
    int nsites;
    int oom;
    loom_error *err;
    loom_status st;
} bctx;

static void *palloc(bctx *c, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!c->pool || c->pool->used + n > c->pool->cap) {
        size_t cap = n > 65536 ? n : 65536;
        pool_blk *b = malloc(sizeof *b + cap);
        if (!b) {
            c->oom = 1;
            return NULL;
        }
        b->next = c->pool;
        b->used = 0;
        b->cap = cap;
        c->pool = b;
    }
    void *r = c->pool->data + c->pool->used;
    c->pool->used += n;
    memset(r, 0, n);
    return r;
}

/* ---- integer expressions ---- */

static sx *mk(bctx *c, int kind)
{
    sx *e = palloc(c, sizeof *e);
    if (e)
        e->kind = kind;
    return e;
}

static sx *iexpr(bctx *c, const lir_expr *e, double *iops);

static sx *konst(bctx *c, int64_t v)
{
    sx *r = mk(c, SX_CONST);
    if (r)
        r->ival = v;
    return r;
}

/* affine form of e (children already rewritten): 1 and *a filled, or 0 */
static int affine_of(const sx *e, sx *a)
{
    memset(a, 0, sizeof *a);
    a->kind = SX_AFF;
    switch (e->kind) {
    case SX_CONST: a->ival = e->ival; return 1;
    case SX_VAR:
        a->nterm = 1;
        a->tv[0] = e->var;
        a->tc[0] = 1;
        return 1;
    case SX_AFF: *a = *e; return 1;
    case SX_NEG: {
        if (!affine_of(e->a, a))
            return 0;
        a->ival = -a->ival;
        for (int k = 0; k < a->nterm; k++)
            a->tc[k] = -a->tc[k];
        return 1;
    }
    case SX_BIN: {
        sx x, y;
        if (e->op != LIR_ADD && e->op != LIR_SUB && e->op != LIR_MUL)
            return 0;
        if (!affine_of(e->a, &x) || !affine_of(e->b, &y))
            return 0;
        if (e->op == LIR_MUL) {
            if (x.nterm && y.nterm)
                return 0;
            sx *v = x.nterm ? &x : &y;
            int64_t k = x.nterm ? y.ival : x.ival;
            *a = *v;
            a->ival *= k;
            for (int t = 0; t < a->nterm; t++)
                a->tc[t] *= k;
            return 1;
        }
        int64_t sg = e->op == LIR_SUB ? -1 : 1;
        *a = x;
        a->ival += sg * y.ival;
        for (int t = 0; t < y.nterm; t++) {
            int found = 0;
            for (int u = 0; u < a->nterm && !found; u++)
                if (a->tv[u] == y.tv[t]) {
                    a->tc[u] += sg * y.tc[t];
                    found = 1;
                }
            if (!found) {
                if (a->nterm == SX_MAXTERM)
                    return 0;
                a->tv[a->nterm] = y.tv[t];
                a->tc[a->nterm++] = sg * y.tc[t];
            }
        }
        return 1;
    }
    default: return 0;
    }
}

static sx *iexpr0(bctx *c, const lir_expr *e, double *iops);

/* integer expression, constant-folded, affine subtrees flattened */
/* integer expression, constant-folded, affine subtrees flattened.  The
 * integer operators of an affine subtree cost no instruction (model 4):
 * cc strength-reduces affine index arithmetic into induction variables and
 * addressing modes; the rest (loads, min/max, divides, compares) count. */
static sx *iexpr(bctx *c, const lir_expr *e, double *iops)
{
    double own = 0;
    sx *r = iexpr0(c, e, &own);
    if (r && (r->kind == SX_BIN || r->kind == SX_NEG)) {
        sx a;
        if (affine_of(r, &a))
            *r = a;
    }
    if (r && (r->kind == SX_AFF || r->kind == SX_CONST || r->kind == SX_VAR))
        own = 0;
    *iops += own;
    return r;
}

static sx *iexpr0(bctx *c, const lir_expr *e, double *iops)
{
    if (!e)
        return konst(c, 0);
    const loom_dataset *ds = c->ds;
    switch (e->kind) {
    case LIR_E_INT: return konst(c, e->ival);
    case LIR_E_FLOAT: return konst(c, 0);
    case LIR_E_DIM: return konst(c, ds->t[e->tensor].dims[e->dim]);
    case LIR_E_NNZ: return konst(c, ds->t[e->tensor].nnz);
    case LIR_E_VAR: {
        if (c->p->var_f32[e->var])
            return konst(c, 0);
        sx *r = mk(c, SX_VAR);
        if (r)
            r->var = e->var;
        return r;
    }
    case LIR_E_LOAD: {
        sx *r = mk(c, SX_LOAD);
        if (!r)
            return NULL;
        r->buf = e->buf;
        r->site = c->nsites++;
        r->a = iexpr(c, e->a, iops);
        return r;
    }
    case LIR_E_BIN: {
        if (e->type == LIR_BOOL && ((e->a && e->a->type == LIR_F32) || (e->b && e->b->type == LIR_F32))) {
            /* a comparison of floats, whose values the simulator does not
             * track (split-K's test that a chunk saw a key, pm > -inf):
             * modelled as true, the common case */
            *iops += 1;
            return konst(c, 1);
        }
        sx *a = iexpr(c, e->a, iops), *b = iexpr(c, e->b, iops);
        if (!a || !b)
            return NULL;
        if (a->kind == SX_CONST && b->kind == SX_CONST)
            return konst(c, loom__sim_int_op(e->op, a->ival, b->ival));
        if (e->type != LIR_I64 && e->type != LIR_BOOL && e->a->type == LIR_F32)
            return konst(c, 0);
        sx *r = mk(c, SX_BIN);
        if (r) {
            r->op = e->op;
            r->a = a;
            r->b = b;
        }
        /* model 36: an integer min or max is a compare and a conditional move (sim.h "Address
           arithmetic") */
        *iops += e->op == LIR_MIN || e->op == LIR_MAX ? 2 : 1;
        return r;
    }
    case LIR_E_NEG:
    case LIR_E_NOT: {
        sx *a = iexpr(c, e->a, iops);
        if (!a)
            return NULL;
        if (a->kind == SX_CONST)
            return konst(c, e->kind == LIR_E_NEG ? -a->ival : !a->ival);
        sx *r = mk(c, e->kind == LIR_E_NEG ? SX_NEG : SX_NOT);
        if (r)
            r->a = a;
        *iops += 1;
        return r;
    }
    case LIR_E_CALL: return konst(c, 0);
    }
    return konst(c, 0);
}

/* ---- float work: accesses and static costs ---- */

typedef struct accl {
    sacc a[64];
    int n;
} accl;

/* FMA-pipe cycles of a LIR call: its operator row's cost class (dsl/ir/op.h). */
static double call_cycles(const loom_target *t, lir_fn fn)
{
    const loom_op_row *r = loom_op_get(fn);
    switch (r ? r->cost : LOOM_OP_COST_DIV) {
    case LOOM_OP_COST_EXP: return t->exp_cycles;
    case LOOM_OP_COST_DIV: return t->div_cycles;
    case LOOM_OP_COST_FP: break;
    }
    return 1.0;
}

static void fwork(bctx *c, const lir_expr *e, accl *L, scost *k)
{
    if (!e)
        return;
    const loom_target *t = c->t;
    switch (e->kind) {
    case LIR_E_INT:
    case LIR_E_FLOAT:
    case LIR_E_DIM:
    case LIR_E_NNZ:
    case LIR_E_VAR: return;
    case LIR_E_LOAD:
        if (L->n >= 64) {
            c->st = loom_error_set(c->err, LOOM_ERR_UNSUPPORTED, NULL, 0, 0,
                                   "simulator: a statement with more than 64 loads");
            return;
        }
        L->a[L->n].buf = e->buf;
        L->a[L->n].site = c->nsites++;
        L->a[L->n].index = iexpr(c, e->a, &k->iops);
        L->n++;
        k->loads += 1;
        return;
    case LIR_E_BIN:
        fwork(c, e->a, L, k);
        fwork(c, e->b, L, k);
        if (e->a && e->a->type != LIR_F32 && e->b && e->b->type != LIR_F32) {
            k->iops += 1;
            return;
        }
        switch (e->op) {
        case LIR_ADD:
        case LIR_SUB: {
            int fused = (e->a->kind == LIR_E_BIN && e->a->op == LIR_MUL) ||
                        (e->b->kind == LIR_E_BIN && e->b->op == LIR_MUL);
            k->fp += fused ? 0 : 1; /* the multiply already took the FMA slot */
            k->fadd += fused ? 0 : 1;
            k->flops += 1;
            return;
        }
        case LIR_DIV:
            k->fp += t->div_cycles;
            k->flops += 1;
            return;
        case LIR_MIN:
        case LIR_MAX:
            k->fadd += 1;
            k->fp += 1;
            k->flops += 1;
            return;
        case LIR_MUL:
            k->fp += 1;
            k->flops += 1;
            return;
        default: k->fp += 1; return;
        }
    case LIR_E_NEG:
    case LIR_E_NOT:
        fwork(c, e->a, L, k);
        k->fp += 1;
        k->fadd += 1;
        return;
    case LIR_E_CALL:
        fwork(c, e->a, L, k);
        fwork(c, e->b, L, k);
        k->fp += call_cycles(t, e->fn);
        k->flops += 1;
        return;
    }
}

/* ---- accumulations (the latency chain of sim.h) ---- */

/* 1 if a and b are the same integer expression */
static int sx_equal(const sx *a, const sx *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind || a->op != b->op || a->var != b->var || a->buf != b->buf || a->ival != b->ival ||
        a->nterm != b->nterm)
        return 0;
    for (int k = 0; k < a->nterm; k++)
        if (a->tv[k] != b->tv[k] || a->tc[k] != b->tc[k])
            return 0;
    return sx_equal(a->a, b->a) && sx_equal(a->b, b->b);
}

/* 1 if e reads variable v */
static int reads_var(const lir_expr *e, int v)
{
    if (!e)
        return 0;
    if (e->kind == LIR_E_VAR)
        return e->var == v;
    return reads_var(e->a, v) || reads_var(e->b, v);
}

/* ---- statements ---- */

static sst *stmt(bctx *c, const lir_stmt *s);

static sst *mkst(bctx *c, int kind)
{
    sst *r = palloc(c, sizeof *r);
    if (r) {
        r->kind = kind;
        r->var = -1;
        r->hoist_share = 1;
        r->fvar = -1;
        r->store_buf = -1;
        r->fill_buf = -1;
        r->site = -1;
    }
    return r;
}

/* A float local's assignment: 3 a sum, var = var +/- x (cc keeps its order:
 * no -ffast-math), 2 another update from itself, 0 neither (sst rmw). */
static int local_update(const lir_stmt *s)
{
    if (!reads_var(s->value, s->var))
        return 0;
    const lir_expr *v = s->value;
    return v->kind == LIR_E_BIN && (v->op == LIR_ADD || v->op == LIR_SUB) && v->a && v->a->kind == LIR_E_VAR &&
                   v->a->var == s->var
               ? 3
               : 2;
}

/* A vector loop r (from s): its whole-body cost, memory sites and
 * invariant selects; -1 out of memory. */
static int vector_setup(bctx *c, const lir_stmt *s, sst *r)
{
    int sites[512], ns = 0;
    loom__sim_body_cost(r->body, &r->vbody, sites, &ns, 512);
    loom__sim_int_sites(r->body, sites, &ns, 512);
    r->vsites = palloc(c, sizeof(int) * (size_t)(ns ? ns : 1));
    if (!r->vsites)
        return -1;
    memcpy(r->vsites, sites, sizeof(int) * (size_t)ns);
    r->nvsites = ns;
    r->affine_body = loom__sim_affine_body(r->body);
    r->vinner = loom__sim_has_loop(r->body);
    r->inv_selects = loom__sim_invariant_selects(c->f, s);
    if (r->inv_selects < 0) {
        c->oom = 1;
        return -1;
    }
    return 0;
}

/* Does a body hold a serial FOR of run-time bounds (not below another
 * FOR)?  sim.h "Loop set-up" (model 44). */
static int holds_rt_loop(const sst *s)
{
    if (!s)
        return 0;
    if (s->kind == SS_FOR)
        return !s->vec && s->rt_bounds;
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++)
        if (holds_rt_loop(s->items[i]))
            return 1;
    return holds_rt_loop(s->body) || holds_rt_loop(s->els);
}

/* 1 if s is a FOR of literal bounds that runs once */
static int one_iteration(const sst *s)
{
    return s->kind == SS_FOR && s->lo->kind == SX_CONST && s->hi->kind == SX_CONST && s->hi->ival - s->lo->ival == 1;
}

/* The statements of block b in program order into out (at most cap; *n
 * counts them all), the blocks of its loops of one iteration inlined: such
 * a loop re-reads nothing, its body runs once per iteration of b's loop. */
static void flatten_block(sst *b, sst **out, int *n, int cap)
{
    for (int i = 0; b && b->kind == SS_SEQ && i < b->items_n; i++) {
        sst *it = b->items[i];
        if (one_iteration(it) && it->body && it->body->kind == SS_SEQ) {
            flatten_block(it->body, out, n, cap);
            continue;
        }
        if (*n < cap)
            out[*n] = it;
        ++*n;
    }
}

/* Marks the fills of r's body (a block; its loops of one iteration
 * inlined) that a loop of run-time bounds follows (sim.h "Independent
 * chains"): a CSR row's workspace, the row loop around it (model 56), or a
 * pass over part of the row's columns, the tile loop around it (model 83)
 * -- each zeroing starts chains that wait for nothing before it. */
static void mark_row_fills(sst *r)
{
    enum { CAP = 64 };
    sst *items[CAP];
    int n = 0;
    flatten_block(r->body, items, &n, CAP);
    if (n > CAP)
        return; /* a block this long is no row's: left summed */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; items[i]->kind == SS_FILL && j < n && !items[i]->row_scope; j++)
            items[i]->row_scope = items[j]->kind == SS_FOR && items[j]->rt_bounds;
}

/* A FOR statement (stmt's LIR_S_FOR). */
static sst *for_stmt(bctx *c, const lir_stmt *s)
{
    sst *r = mkst(c, SS_FOR);
    if (!r)
        return NULL;
    r->var = s->var;
    r->lo = iexpr(c, s->lo, &r->c.iops);
    r->hi = iexpr(c, s->hi, &r->c.iops);
    r->loop_kind = s->loop_kind;
    r->par_chunk = s->par_chunk;
    r->unroll = s->unroll > 0 ? s->unroll : 1;
    r->inv_unroll = 1.0 / r->unroll;
    r->site = c->nsites++;
    r->body = stmt(c, s->body);
    if (!r->lo || !r->hi || !r->body)
        return NULL;
    r->has_par = s->loop_kind == LIR_LOOP_PARALLEL || r->body->has_par;
    int autovec = c->t->autovectorize && (s->loop_kind == LIR_LOOP_SERIAL || s->loop_kind == LIR_LOOP_UNROLLED) &&
                  r->lo->kind == SX_CONST && r->hi->kind == SX_CONST && r->hi->ival - r->lo->ival >= 2 &&
                  loom__sim_simple_body(r->body);
    /* sim.h "Vectors", model 53: cc vectorizes a float sum over a loop of
       run-time bounds too (gathers, an in-order sum), on calibrated targets */
    int rtvec = !autovec && c->t->autovectorize && c->t->issue_chain_norm > 0 &&
                s->loop_kind == LIR_LOOP_SERIAL && !(r->lo->kind == SX_CONST && r->hi->kind == SX_CONST) &&
                loom__sim_simple_body(r->body) && !loom__sim_body_stores(r->body);
    r->sum_var = rtvec ? loom__sim_float_sum_var(r->body) : -1;
    rtvec = rtvec && r->sum_var >= 0;
    autovec = autovec || rtvec;
    r->rt_pieces = rtvec;
    r->vec = s->loop_kind == LIR_LOOP_VECTORIZED || autovec;
    /* sim.h "Outer-loop vectors", model 28: cc vectorizes across an outer
       loop only when the loops in its body have literal bounds */
    if (r->vec && loom__sim_has_loop(r->body) && !loom__sim_loops_literal(r->body))
        r->vec = 0;
    r->has_red = s->loop_kind == LIR_LOOP_VECTORIZED && s->red_var >= 0 ? (s->red_max ? 2 : 1) : 0;
    /* sim.h "Vectors", model 55: codegen gives a sum of two iterations safelen(2), and cc keeps two
       scalar partial sums */
    if (r->has_red == 1 && c->t->issue_chain_norm > 0 && loom_lir_is_pair_reduction(s)) {
        r->vec = 0;
        r->has_red = 0;
        r->pair_sum = s->red_var + 1;
    }
    r->fold_left = autovec && s->loop_kind != LIR_LOOP_VECTORIZED && (rtvec || loom__sim_has_float_sum(r->body));
    /* GCC keeps a workspace in registers only when it unrolls the
       vector loop over it completely; `#pragma GCC unroll u` with fewer
       than the loop's vector iterations leaves a loop, and the
       workspace in memory */
    if (r->vec && s->loop_kind == LIR_LOOP_UNROLLED && r->lo->kind == SX_CONST && r->hi->kind == SX_CONST) {
        int64_t lanes = loom__sim_lanes(c->t);
        if ((r->hi->ival - r->lo->ival + lanes - 1) / lanes > r->unroll)
            loom__sim_spill_workspaces(c->p, r->body);
    }
    /* sim.h "Vectors": a few vector iterations cc counts (literal bounds, not a
       tensor's dimension), peeled completely (model 15; the target's peel_times) */
    if (r->vec && c->t->peel_times > 0 && s->lo->kind == LIR_E_INT && s->hi->kind == LIR_E_INT) {
        int64_t lanes = loom__sim_lanes(c->t), n = r->hi->ival - r->lo->ival;
        /* sim.h "Vector pieces" (model 39) */
        r->pieces = n > 0 && n % lanes != 0;
        r->peeled = (r->pieces ? loom__sim_pieces(n, lanes) : (n + lanes - 1) / lanes) <= c->t->peel_times;
    }
    if (!r->vec && s->loop_kind == LIR_LOOP_UNROLLED && loom__sim_tile_pressure(c->p, c->t, r))
        c->oom = 1;
    loom__sim_find_guard(r, c->p->nvars);
    r->rt_bounds = !(r->lo->kind == SX_CONST && r->hi->kind == SX_CONST); /* model 44 */
    int64_t peel = loom__sim_peeled_copies(c->t, s, r, c->p->nvars);
    if (peel < 0) {
        c->oom = 1;
        peel = 0;
    }
    if (peel) { /* model 63: c unrolled copies, each run of at most c positions inside them */
        r->loop_kind = LIR_LOOP_UNROLLED;
        r->unroll = (int)peel;
        r->inv_unroll = r->rt_bounds ? 1.0 / r->unroll : 0; /* model 68: no loop is left */
    }
    r->rt_inner = holds_rt_loop(r->body);
    loom__sim_mark_for(c->p, c->t, s, r, peel > 0); /* models 64 and 65 */
    mark_row_fills(r);
    return r->vec && vector_setup(c, s, r) ? NULL : r;
}

static sst *stmt(bctx *c, const lir_stmt *s)
{
    if (!s || c->st != LOOM_OK)
        return NULL;
    sst *r = NULL;
    switch (s->kind) {
    case LIR_S_SEQ:
        r = mkst(c, SS_SEQ);
        if (!r)
            return NULL;
        r->items = palloc(c, sizeof(sst *) * (size_t)(s->nitems ? s->nitems : 1));
        if (!r->items)
            return NULL;
        for (int i = 0; i < s->nitems; i++) {
            sst *it = stmt(c, s->items[i]);
            if (!it)
                return NULL;
            if (it->kind != SS_NOP)
                r->items[r->items_n++] = it;
            r->has_par |= it->has_par;
        }
        for (int i = 0; i < r->items_n; i++) /* model 38 */
            if (r->items[i]->kind == SS_FILL) {
                int dense = 1;
                for (int j = i + 1; j < r->items_n && dense; j++)
                    dense = loom__sim_loops_literal(r->items[j]);
                r->items[i]->dense_scope = dense;
            }
        return r;
    case LIR_S_COMMENT:
    case LIR_S_BARRIER:
    case LIR_S_LOCAL: return mkst(c, SS_NOP);
    case LIR_S_FOR: return for_stmt(c, s);
    case LIR_S_WHILE:
        r = mkst(c, SS_WHILE);
        if (!r)
            return NULL;
        r->cond = iexpr(c, s->cond, &r->c.iops);
        r->c.iops += 1;
        r->body = stmt(c, s->body);
        if (r->body)
            r->has_par = r->body->has_par;
        return r->cond && r->body ? r : NULL;
    case LIR_S_IF:
        r = mkst(c, SS_IF);
        if (!r)
            return NULL;
        r->cond = iexpr(c, s->cond, &r->c.iops);
        r->c.iops += 1;
        r->site = c->nsites++;
        r->body = stmt(c, s->body);
        if (s->els)
            r->els = stmt(c, s->els);
        r->has_par = (r->body && r->body->has_par) || (r->els && r->els->has_par);
        return r->cond && r->body && (!s->els || r->els) ? r : NULL;
    case LIR_S_LET:
    case LIR_S_ASSIGN:
        if (!c->p->var_f32[s->var]) {
            r = mkst(c, SS_SETI);
            if (!r)
                return NULL;
            r->var = s->var;
            r->value = iexpr(c, s->value, &r->c.iops);
            if (c->scaled && c->scaled[s->var] == 2) /* model 35: GCC's imul of it by a row length */
                r->c.iops += 1;
            return r->value ? r : NULL;
        }
        __attribute__((fallthrough)); /* float work */
    case LIR_S_STORE: {
        r = mkst(c, SS_WORK);
        if (!r)
            return NULL;
        accl *L = malloc(sizeof *L);
        if (!L) {
            c->oom = 1;
            return NULL;
        }
        L->n = 0;
        fwork(c, s->value, L, &r->c);
        if (s->kind == LIR_S_STORE) {
            r->store_buf = s->buf;
            r->store_site = c->nsites++;
            r->store_temp = s->buf >= 0 && s->buf < c->f->nbufs && c->f->bufs[s->buf].kind == LIR_BUF_TEMP;
            r->store_index = iexpr(c, s->index, &r->c.iops);
            r->c.stores += 1;
        }
        r->nacc = L->n;
        r->acc = palloc(c, sizeof(sacc) * (size_t)(L->n ? L->n : 1));
        if (r->acc)
            memcpy(r->acc, L->a, sizeof(sacc) * (size_t)L->n);
        free(L);
        if (s->kind == LIR_S_STORE)
            for (int i = 0; r->acc && i < r->nacc && !r->rmw; i++) {
                r->rmw = r->acc[i].buf == r->store_buf && sx_equal(r->acc[i].index, r->store_index);
                r->self_load = r->rmw ? i + 1 : 0;
            }
        else {
            r->rmw = local_update(s);
            r->fvar = s->var;
        }
        return r->acc ? r : NULL;
    }
    case LIR_S_FILL:
        r = mkst(c, SS_FILL);
        if (!r)
            return NULL;
        r->fill_buf = s->buf;
        r->fill_size = iexpr(c, s->size, &r->c.iops);
        return r->fill_size ? r : NULL;
    case LIR_S_STREAM:
        r = mkst(c, SS_STREAM);
        if (!r)
            return NULL;
        r->fill_buf = s->buf;
        r->src_buf = s->src;
        r->value = iexpr(c, s->index, &r->c.iops);
        r->fill_size = iexpr(c, s->size, &r->c.iops);
        return r->value && r->fill_size ? r : NULL;
    case LIR_S_PREFETCH:
        r = mkst(c, SS_PREFETCH);
        if (!r)
            return NULL;
        r->site = c->nsites++; /* model 103: its ranges' stride, as a load site's misses' (sim_prefetch.c) */
        r->fill_buf = s->buf;
        r->value = iexpr(c, s->index, &r->c.iops);
        r->fill_size = iexpr(c, s->size, &r->c.iops);
        /* sim.h "Software prefetch" (model 30): a literal count of lines,
           at most the target's peel_times, is unrolled completely */
        r->peeled = c->t->peel_times > 0 && s->size && s->size->kind == LIR_E_INT &&
                    (s->size->ival + 15) / 16 <= c->t->peel_times;
        return r->value && r->fill_size ? r : NULL;
    }
    c->st = loom_error_set(c->err, LOOM_ERR_UNSUPPORTED, NULL, 0, 0, "simulator: unknown LIR statement kind %d",
                           (int)s->kind);
    return NULL;
}

/* readable length of pos[l] / crd[l] of tensor t, from its format */
static void level_lengths(const loom_dataset *ds, int tensor, int64_t poslen[], int64_t crdlen[])
{
    const loom_tensor *T = &ds->prog->tensors[tensor];
    const loom_tensor_abi *a = &ds->t[tensor];
    int64_t P = 1;
    for (int l = 0; l < T->format.nlevels && l < LOOM_ABI_MAX_ORDER; l++) {
        poslen[l] = crdlen[l] = 0;
        if (T->format.level[l] == LOOM_LEVEL_DENSE || !a->pos[l]) {
            P *= a->dims[T->format.mode[l]];
            continue;
        }
        poslen[l] = P + 1;
        P = a->pos[l][P];
        crdlen[l] = a->crd[l] ? P : 0;
    }
}

void loom__sim_prog_free(sprog *p)
{
    if (!p)
        return;
    pool_blk *blk = p->pool_;
    while (blk) {
        pool_blk *n = blk->next;
        free(blk);
        blk = n;
    }
    free(p->var_f32);
    free(p);
}

loom_status loom__sim_prog_build(const lir_func *f, const loom_dataset *ds, const loom_target *t, sprog **out,
                           loom_error *err)
{
    *out = NULL;
    sprog *p = calloc(1, sizeof *p);
    if (!p)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "simulator: out of memory");
    bctx c = {.f = f, .ds = ds, .t = t, .p = p, .err = err, .st = LOOM_OK};
    p->f = f;
    p->nvars = f->nvars;
    p->nbufs = f->nbufs;
    p->var_f32 = calloc((size_t)(f->nvars ? f->nvars : 1), 1);
    if (!p->var_f32) {
        free(p);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "simulator: out of memory");
    }
    for (int v = 0; v < f->nvars; v++)
        p->var_f32[v] = f->vars[v].type == LIR_F32;
    p->bufs = palloc(&c, sizeof(sbuf) * (size_t)(f->nbufs ? f->nbufs : 1));
    uint64_t addr = (uint64_t)1 << 32;
    for (int i = 0; p->bufs && i < f->nbufs; i++) {
        const lir_buffer *b = &f->bufs[i];
        sbuf *B = &p->bufs[i];
        B->name = b->name;
        B->base = addr;
        int64_t elems = 0;
        const loom_tensor_abi *a = b->tensor >= 0 && b->tensor < ds->ntensors ? &ds->t[b->tensor] : NULL;
        int64_t poslen[LOOM_ABI_MAX_ORDER] = {0}, crdlen[LOOM_ABI_MAX_ORDER] = {0};
        switch (b->kind) {
        case LIR_BUF_VALS: elems = a ? a->nnz : 0; break;
        case LIR_BUF_POS:
        case LIR_BUF_CRD:
            if (a && b->level >= 0 && b->level < LOOM_ABI_MAX_ORDER) {
                level_lengths(ds, b->tensor, poslen, crdlen);
                B->ints = b->kind == LIR_BUF_POS ? a->pos[b->level] : a->crd[b->level];
                elems = b->kind == LIR_BUF_POS ? poslen[b->level] : crdlen[b->level];
                if (!B->ints)
                    elems = 0;
                B->elems = elems;
            }
            break;
        case LIR_BUF_TEMP:
        case LIR_BUF_PARTIAL: {
            double dummy = 0;
            sx *e = iexpr(&c, b->size, &dummy);
            elems = e && e->kind == SX_CONST ? e->ival : (a ? a->nnz : 0);
            break;
        }
        case LIR_BUF_LOCAL:
            elems = b->local_elems;
            B->local = 1;
            B->vecs = (elems * 32 + t->vector_bits - 1) / t->vector_bits;
            /* model 25: its vectors and the register its updates' broadcast goes through, unless
               its FMAs are slower than a spilled vector's round trip (sim.h "Register-resident
               workspaces") */
            B->reg = elems > 0 && elems * 32 <= (int64_t)t->vector_registers * t->vector_bits &&
                     (B->vecs + LOOM_SIM_TILE_TEMP_REGISTERS <= t->vector_registers ||
                      (double)B->vecs / t->fma_units >= LOOM_SIM_SPILL_ROUND_TRIP_CYCLES);
            B->reg_elems = elems;
            /* model 37: cc unrolls its vector loop completely (<= peel_times vectors) and keeps all
               but the vectors that do not fit; the spilled ones' round trip is a chain (sim.h
               "Register-resident workspaces") */
            if (!B->reg && t->peel_times > 0 && elems > 0 && B->vecs <= t->peel_times &&
                t->vector_registers > LOOM_SIM_TILE_TEMP_REGISTERS) {
                int64_t lanes = loom__sim_lanes(t);
                B->reg = 1;
                B->reg_elems = (t->vector_registers - LOOM_SIM_TILE_TEMP_REGISTERS) * lanes;
                B->spill_chain = 1;
            }
            B->over = t->peel_times > 0 && !B->reg && elems > 0 && /* model 33 */
                      (double)B->vecs / t->fma_units >= LOOM_SIM_SPILL_ROUND_TRIP_CYCLES;
            /* model 60: a packed panel is read from memory (sim.h "Register-resident workspaces") */
            if (b->restrict_ptr && t->peel_times > 0)
                B->reg = B->over = 0;
            break;
        }
        if (elems < 0)
            elems = 0;
        /* 4-byte elements, 4 KiB aligned, one spare page between buffers;
         * LOCAL workspaces get a 1 MiB slot per core (see loom__sim_exec) */
        uint64_t bytes = (uint64_t)elems * 4;
        B->bytes = bytes;
        if (B->local)
            bytes = (uint64_t)LOOM_SIM_MAX_CORES << 20;
        addr += ((bytes + 4095) & ~(uint64_t)4095) + 4096;
    }
    if (loom__sim_rolled_workspaces(p, t, f) < 0) /* model 25 */
        c.oom = 1;
    c.scaled = calloc((size_t)(f->nvars ? f->nvars : 1), 1);
    if (!c.scaled)
        c.oom = 1;
    else
        loom__sim_mark_scaled(f->body, p->var_f32, c.scaled); /* model 35 */
    p->root = c.oom ? NULL : stmt(&c, f->body);
    free(c.scaled);
    c.scaled = NULL;
    if (p->root && loom__sim_hoist_copies(p, t, p->root) < 0) /* model 32 */
        c.oom = 1;
    p->nsites = c.nsites;
    p->pool_ = c.pool;
    if (c.st != LOOM_OK || c.oom || !p->root || !p->bufs) {
        loom_status st = c.st != LOOM_OK ? c.st
                                         : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "simulator: out of memory");
        loom__sim_prog_free(p);
        return st;
    }
    *out = p;
    return LOOM_OK;
}

loom_status loom_sim_run_budget(const lir_func *f, const loom_dataset *ds, const loom_target *t, double budget,
                                loom_sim_result *out, loom_error *err)
{
    return loom_sim_run_until(f, ds, t, budget, 0, out, err);
}

loom_status loom_sim_run_until(const lir_func *f, const loom_dataset *ds, const loom_target *t, double budget,
                               double deadline, loom_sim_result *out, loom_error *err)
{
    memset(out, 0, sizeof *out);
    if (!f || !ds || !t)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "simulator: NULL kernel, data set or target");
    if (t->cores < 1 || t->cores > LOOM_SIM_MAX_CORES)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "simulator: target %s has %d cores (1..%d supported)",
                              t->name, t->cores, LOOM_SIM_MAX_CORES);
    if (t->ncaches < 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "simulator: target %s has no cache level", t->name);
    sprog *p = NULL;
    loom_status st = loom__sim_prog_build(f, ds, t, &p, err);
    if (st != LOOM_OK)
        return st;
    if (budget <= 0) /* the target's (model 21), else the default */
        budget = t->sample_budget > 0 ? t->sample_budget : LOOM_SIM_EVENT_BUDGET;
    st = loom__sim_exec(p, t, budget, deadline, out, err);
    loom__sim_prog_free(p);
    return st;
}

loom_status loom_sim_run(const lir_func *f, const loom_dataset *ds, const loom_target *t, loom_sim_result *out,
                         loom_error *err)
{
    return loom_sim_run_budget(f, ds, t, 0, out, err);
}

void loom_sim_summary(const loom_sim_result *r, const loom_target *t, char *buf, size_t n)
{
    double us = r->latency_s * 1e6;
    char samp[64] = "";
    if (r->sampled)
        snprintf(samp, sizeof samp, ", sampled %.1f%% of outer iterations and scaled", 100 * r->sample_fraction);
    snprintf(buf, n,
             "simulated %.1f us on %s (%d cores, %.0f cycles): %.3g FLOP, %.3g loads, %.3g stores, L1 misses %.3g, "
             "DRAM %.3g bytes%s",
             us, t->name, t->cores, r->cycles, r->flops, r->loads, r->stores, r->misses[0], r->dram_bytes, samp);
}
