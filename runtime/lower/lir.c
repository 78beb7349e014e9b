#include "lir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lir_arena_block {
    lir_arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *loom_lir_alloc(lir_func *f, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    lir_arena_block *b = f->arena;
    if (!b || b->used + n > b->cap) {
        size_t cap = n > 65536 ? n : 65536;
        lir_arena_block *nb = malloc(sizeof *nb + cap);
        if (!nb)
            return NULL;
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        f->arena = nb;
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

lir_func *loom_lir_func_new(const loom_program *prog)
{
    lir_func *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->prog = prog;
    f->body = loom_lir_seq(f);
    if (!f->body) {
        free(f);
        return NULL;
    }
    return f;
}

void loom_lir_func_free(lir_func *f)
{
    if (!f)
        return;
    lir_arena_block *b = f->arena;
    while (b) {
        lir_arena_block *n = b->next;
        free(b);
        b = n;
    }
    free(f->vars);
    free(f->bufs);
    free(f);
}

int loom_lir_new_var(lir_func *f, const char *name, lir_type type)
{
    if (f->nvars == f->cap_vars) {
        int cap = f->cap_vars ? 2 * f->cap_vars : 32;
        lir_var *v = realloc(f->vars, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        f->vars = v;
        f->cap_vars = cap;
    }
    /* unique name: base, base_1, base_2 ... */
    char cand[40];
    snprintf(cand, sizeof cand, "%s", name);
    for (int k = 1;; k++) {
        int clash = 0;
        for (int i = 0; i < f->nvars; i++)
            if (strcmp(f->vars[i].name, cand) == 0) {
                clash = 1;
                break;
            }
        if (!clash)
            break;
        snprintf(cand, sizeof cand, "%.24s_%d", name, k);
    }
    lir_var *v = &f->vars[f->nvars];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", cand);
    v->type = type;
    return f->nvars++;
}

int loom_lir_buffer_get(lir_func *f, lir_buf_kind kind, int tensor, int level)
{
    for (int i = 0; i < f->nbufs; i++) {
        const lir_buffer *b = &f->bufs[i];
        if (b->kind == kind && b->tensor == tensor &&
            (kind == LIR_BUF_VALS || kind == LIR_BUF_TEMP || kind == LIR_BUF_PARTIAL || b->level == level))
            return i;
    }
    if (f->nbufs == f->cap_bufs) {
        int cap = f->cap_bufs ? 2 * f->cap_bufs : 16;
        lir_buffer *nb = realloc(f->bufs, (size_t)cap * sizeof *nb);
        if (!nb)
            return -1;
        f->bufs = nb;
        f->cap_bufs = cap;
    }
    lir_buffer *b = &f->bufs[f->nbufs];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    b->tensor = tensor;
    b->level = level;
    const char *tn = f->prog->tensors[tensor].name;
    switch (kind) {
    case LIR_BUF_VALS: snprintf(b->name, sizeof b->name, "%s_vals", tn); b->elem = LIR_F32; break;
    case LIR_BUF_TEMP: snprintf(b->name, sizeof b->name, "%s_vals", tn); b->elem = LIR_F32; break;
    case LIR_BUF_POS: snprintf(b->name, sizeof b->name, "%s%d_pos", tn, level + 1); b->elem = LIR_I64; break;
    case LIR_BUF_CRD: snprintf(b->name, sizeof b->name, "%s%d_crd", tn, level + 1); b->elem = LIR_I64; break;
    case LIR_BUF_LOCAL: snprintf(b->name, sizeof b->name, "ws_%s", tn); b->elem = LIR_F32; break;
    case LIR_BUF_PARTIAL: snprintf(b->name, sizeof b->name, "rfp_%s", tn); b->elem = LIR_F32; break;
    }
    return f->nbufs++;
}

static lir_expr *new_expr(lir_func *f, lir_expr_kind k, lir_type t)
{
    lir_expr *e = loom_lir_alloc(f, sizeof *e);
    if (e) {
        e->kind = k;
        e->type = t;
        e->var = e->buf = e->tensor = e->dim = -1;
    }
    return e;
}

lir_expr *loom_lir_int(lir_func *f, int64_t v)
{
    lir_expr *e = new_expr(f, LIR_E_INT, LIR_I64);
    if (e)
        e->ival = v;
    return e;
}

lir_expr *loom_lir_float(lir_func *f, double v)
{
    lir_expr *e = new_expr(f, LIR_E_FLOAT, LIR_F32);
    if (e)
        e->fval = v;
    return e;
}

lir_expr *loom_lir_var_ref(lir_func *f, int var)
{
    if (var < 0)
        return NULL;
    lir_expr *e = new_expr(f, LIR_E_VAR, f->vars[var].type);
    if (e)
        e->var = var;
    return e;
}

lir_expr *loom_lir_dim(lir_func *f, int tensor, int dim)
{
    lir_expr *e = new_expr(f, LIR_E_DIM, LIR_I64);
    if (e) {
        e->tensor = tensor;
        e->dim = dim;
    }
    return e;
}

lir_expr *loom_lir_nnz(lir_func *f, int tensor)
{
    lir_expr *e = new_expr(f, LIR_E_NNZ, LIR_I64);
    if (e)
        e->tensor = tensor;
    return e;
}

lir_expr *loom_lir_load(lir_func *f, int buf, lir_expr *index)
{
    if (buf < 0 || !index)
        return NULL;
    lir_expr *e = new_expr(f, LIR_E_LOAD, f->bufs[buf].elem);
    if (e) {
        e->buf = buf;
        e->a = index;
    }
    return e;
}

lir_expr *loom_lir_bin(lir_func *f, lir_binop op, lir_expr *a, lir_expr *b)
{
    if (!a || !b)
        return NULL;
    lir_type t = (op >= LIR_LT) ? LIR_BOOL : (a->type == LIR_F32 || b->type == LIR_F32) ? LIR_F32 : LIR_I64;
    lir_expr *e = new_expr(f, LIR_E_BIN, t);
    if (e) {
        e->op = op;
        e->a = a;
        e->b = b;
    }
    return e;
}

lir_expr *loom_lir_neg(lir_func *f, lir_expr *a)
{
    if (!a)
        return NULL;
    lir_expr *e = new_expr(f, LIR_E_NEG, a->type);
    if (e)
        e->a = a;
    return e;
}

lir_expr *loom_lir_not(lir_func *f, lir_expr *a)
{
    if (!a)
        return NULL;
    lir_expr *e = new_expr(f, LIR_E_NOT, LIR_BOOL);
    if (e)
        e->a = a;
    return e;
}

lir_expr *loom_lir_call2(lir_func *f, lir_fn fn, lir_expr *a, lir_expr *b)
{
    const loom_op_row *r = loom_op_get(fn);
    if (!a || !r || (r->arity == 2 && !b))
        return NULL;
    lir_expr *e = new_expr(f, LIR_E_CALL, LIR_F32);
    if (e) {
        e->fn = fn;
        e->a = a;
        e->b = r->arity == 2 ? b : NULL;
    }
    return e;
}

lir_expr *loom_lir_call(lir_func *f, lir_fn fn, lir_expr *a) { return loom_lir_call2(f, fn, a, NULL); }

static lir_stmt *new_stmt(lir_func *f, lir_stmt_kind k)
{
    lir_stmt *s = loom_lir_alloc(f, sizeof *s);
    if (s) {
        s->kind = k;
        s->var = s->buf = -1;
    }
    return s;
}

lir_stmt *loom_lir_seq(lir_func *f) { return new_stmt(f, LIR_S_SEQ); }

int loom_lir_append(lir_func *f, lir_stmt *seq, lir_stmt *s)
{
    if (!seq || !s)
        return -1;
    if (seq->nitems == seq->cap) {
        int cap = seq->cap ? 2 * seq->cap : 8;
        lir_stmt **items = loom_lir_alloc(f, (size_t)cap * sizeof *items);
        if (!items)
            return -1;
        if (seq->nitems)
            memcpy(items, seq->items, (size_t)seq->nitems * sizeof *items);
        seq->items = items;
        seq->cap = cap;
    }
    seq->items[seq->nitems++] = s;
    return 0;
}

lir_stmt *loom_lir_for(lir_func *f, int var, lir_expr *lo, lir_expr *hi, lir_loop_kind kind)
{
    if (var < 0 || !lo || !hi)
        return NULL;
    lir_stmt *s = new_stmt(f, LIR_S_FOR);
    if (!s)
        return NULL;
    s->var = var;
    s->lo = lo;
    s->hi = hi;
    s->loop_kind = kind;
    s->red_var = -1;
    s->body = loom_lir_seq(f);
    return s->body ? s : NULL;
}

lir_stmt *loom_lir_while(lir_func *f, lir_expr *cond)
{
    if (!cond)
        return NULL;
    lir_stmt *s = new_stmt(f, LIR_S_WHILE);
    if (!s)
        return NULL;
    s->cond = cond;
    s->body = loom_lir_seq(f);
    return s->body ? s : NULL;
}

lir_stmt *loom_lir_if(lir_func *f, lir_expr *cond)
{
    if (!cond)
        return NULL;
    lir_stmt *s = new_stmt(f, LIR_S_IF);
    if (!s)
        return NULL;
    s->cond = cond;
    s->body = loom_lir_seq(f);
    return s->body ? s : NULL;
}

lir_stmt *loom_lir_let(lir_func *f, int var, lir_expr *value)
{
    if (var < 0 || !value)
        return NULL;
    lir_stmt *s = new_stmt(f, LIR_S_LET);
    if (s) {
        s->var = var;
        s->value = value;
    }
    return s;
}

lir_stmt *loom_lir_assign(lir_func *f, int var, lir_expr *value)
{
    if (var < 0 || !value)
        return NULL;
    lir_stmt *s = new_stmt(f, LIR_S_ASSIGN);
    if (s) {
        s->var = var;
        s->value = value;
    }
    return s;
}

lir_stmt *loom_lir_store(lir_func *f, int buf, lir_expr *index, lir_expr *value)
{
    if (buf < 0 || !index || !value)
        return NULL;
    lir_stmt *s = new_stmt(f, LIR_S_STORE);
    if (s) {
        s->buf = buf;
        s->index = index;
        s->value = value;
        f->bufs[buf].written = 1;
    }
    return s;
}

lir_stmt *loom_lir_fill(lir_func *f, int buf, lir_expr *size, lir_expr *value)
{
    if (buf < 0 || !size || !value)
        return NULL;
    lir_stmt *s = new_stmt(f, LIR_S_FILL);
    if (s) {
        s->buf = buf;
        s->size = size;
        s->value = value;
        f->bufs[buf].written = 1;
    }
    return s;
}

lir_stmt *loom_lir_stream(lir_func *f, int buf, lir_expr *index, int src, lir_expr *size)
{
    if (buf < 0 || src < 0 || !index || !size)
        return NULL;
    lir_stmt *s = new_stmt(f, LIR_S_STREAM);
    if (s) {
        f->bufs[buf].written = 1;
        s->buf = buf;
        s->src = src;
        s->index = index;
        s->size = size;
    }
    return s;
}

/* Does s hold a loop or a streaming store? */
static int holds_loop_or_stream(const lir_stmt *s)
{
    if (!s)
        return 0;
    switch (s->kind) {
    case LIR_S_SEQ:
        for (int i = 0; i < s->nitems; i++)
            if (holds_loop_or_stream(s->items[i]))
                return 1;
        return 0;
    case LIR_S_FOR:
    case LIR_S_WHILE:
    case LIR_S_STREAM: return 1;
    case LIR_S_IF: return holds_loop_or_stream(s->body) || holds_loop_or_stream(s->els);
    default: return 0;
    }
}

int64_t loom_lir_literal_trip(const lir_stmt *s)
{
    if (!s || s->kind != LIR_S_FOR || !s->lo || !s->hi || s->lo->kind != LIR_E_INT || s->hi->kind != LIR_E_INT)
        return -1;
    return s->hi->ival - s->lo->ival;
}

int loom_lir_is_pair_reduction(const lir_stmt *s)
{
    return s && s->loop_kind == LIR_LOOP_VECTORIZED && s->red_var >= 0 && loom_lir_literal_trip(s) == 2;
}

int loom_lir_is_tree_reduction(const lir_stmt *s)
{
    if (!s || s->kind != LIR_S_FOR || s->loop_kind != LIR_LOOP_VECTORIZED || s->red_var < 0 || !s->lo || !s->hi ||
        s->lo->kind != LIR_E_INT || holds_loop_or_stream(s->body))
        return 0;
    return (s->hi->kind == LIR_E_INT && s->hi->ival - s->lo->ival >= 4) || (s->hi->kind == LIR_E_DIM && s->lo->ival == 0);
}

/* 1 when expression e loads from buffer buf */
static int expr_reads(const lir_expr *e, int buf)
{
    if (!e)
        return 0;
    if (e->kind == LIR_E_LOAD && e->buf == buf)
        return 1;
    return expr_reads(e->a, buf) || expr_reads(e->b, buf);
}

/* bit 1: statement s reads buffer buf; bit 2: it writes buf */
static int touches(const lir_stmt *s, int buf)
{
    if (!s)
        return 0;
    int r = 0;
    switch (s->kind) {
    case LIR_S_SEQ:
        for (int i = 0; i < s->nitems; i++)
            r |= touches(s->items[i], buf);
        return r;
    case LIR_S_FOR: r = expr_reads(s->lo, buf) || expr_reads(s->hi, buf); break;
    case LIR_S_WHILE:
    case LIR_S_IF: r = expr_reads(s->cond, buf); break;
    case LIR_S_LET:
    case LIR_S_ASSIGN: r = expr_reads(s->value, buf); break;
    case LIR_S_STORE: r = (expr_reads(s->index, buf) || expr_reads(s->value, buf)) | (s->buf == buf ? 2 : 0); break;
    case LIR_S_FILL: r = expr_reads(s->value, buf) | (s->buf == buf ? 2 : 0); break;
    case LIR_S_STREAM: r = (expr_reads(s->index, buf) || s->src == buf) | (s->buf == buf ? 2 : 0); break;
    case LIR_S_PREFETCH: r = expr_reads(s->index, buf); break;
    default: return 0;
    }
    return r | touches(s->body, buf) | touches(s->els, buf);
}

/* 1 when expression e reads a pos array, itself or through a variable an
 * item of seq before item upto declares */
static int reads_pos(const lir_func *f, const lir_expr *e, const lir_stmt *seq, int upto)
{
    if (!e)
        return 0;
    if (e->kind == LIR_E_LOAD && e->buf >= 0 && e->buf < f->nbufs && f->bufs[e->buf].kind == LIR_BUF_POS)
        return 1;
    if (e->kind == LIR_E_VAR)
        for (int j = upto - 1; j >= 0; j--)
            if (seq->items[j]->kind == LIR_S_LET && seq->items[j]->var == e->var)
                return reads_pos(f, seq->items[j]->value, seq, j);
    return reads_pos(f, e->a, seq, upto) || reads_pos(f, e->b, seq, upto);
}

int loom_lir_workspace_row_loop(const lir_func *f, const lir_stmt *seq, int i)
{
    if (!f || !seq || seq->kind != LIR_S_SEQ || i < 0 || i >= seq->nitems - 1)
        return 0;
    const lir_stmt *s = seq->items[i];
    if (s->kind != LIR_S_FOR || (s->loop_kind != LIR_LOOP_SERIAL && s->loop_kind != LIR_LOOP_UNROLLED) ||
        s->nonempty || !s->lo || !s->hi || loom_lir_literal_trip(s) >= 0 ||
        !(reads_pos(f, s->lo, seq, i) || reads_pos(f, s->hi, seq, i)))
        return 0;
    for (int j = 0; j < i; j++) {
        const lir_stmt *l = seq->items[j];
        if (l->kind != LIR_S_LOCAL || !(touches(s->body, l->buf) & 2))
            continue;
        int reads = 0, writes = 0;
        for (int k = i + 1; k < seq->nitems; k++) {
            int t = touches(seq->items[k], l->buf);
            reads |= t & 1;
            writes |= t & 2;
        }
        if (reads && !writes)
            return 1;
    }
    return 0;
}

/* ---- loops codegen marks `omp simd` (loom_lir_is_simd_safe) ---- */

#define SIMD_NOT_AFFINE INT64_MIN

typedef struct simd_scan {
    int var;          /* the loop's variable */
    int64_t *coef;    /* per variable: its stride in the loop variable (0: invariant), for lets of the body */
    unsigned char *let; /* 1 for a variable the body declares */
    int nstores;
    const lir_stmt *stores[16];
} simd_scan;

/* e's stride in the loop variable when e is affine in it, SIMD_NOT_AFFINE otherwise */
static int64_t simd_coef(const simd_scan *w, const lir_expr *e)
{
    if (!e)
        return SIMD_NOT_AFFINE;
    switch (e->kind) {
    case LIR_E_INT:
    case LIR_E_FLOAT:
    case LIR_E_DIM:
    case LIR_E_NNZ: return 0;
    case LIR_E_VAR: return e->var == w->var ? 1 : w->let[e->var] ? w->coef[e->var] : 0;
    case LIR_E_LOAD: return simd_coef(w, e->a) == 0 ? 0 : SIMD_NOT_AFFINE;
    case LIR_E_NEG: {
        int64_t c = simd_coef(w, e->a);
        return c == SIMD_NOT_AFFINE ? c : -c;
    }
    case LIR_E_BIN: {
        int64_t a = simd_coef(w, e->a), b = simd_coef(w, e->b);
        if (a == SIMD_NOT_AFFINE || b == SIMD_NOT_AFFINE)
            return SIMD_NOT_AFFINE;
        if (e->op == LIR_ADD)
            return a + b;
        if (e->op == LIR_SUB)
            return a - b;
        if (e->op == LIR_MUL && a == 0 && b == 0)
            return 0;
        if (e->op == LIR_MUL && a == 0 && e->a->kind == LIR_E_INT)
            return e->a->ival * b;
        if (e->op == LIR_MUL && b == 0 && e->b->kind == LIR_E_INT)
            return e->b->ival * a;
        return a == 0 && b == 0 ? 0 : SIMD_NOT_AFFINE;
    }
    case LIR_E_NOT:
    case LIR_E_CALL: {
        int64_t a = e->a ? simd_coef(w, e->a) : 0, b = e->b ? simd_coef(w, e->b) : 0;
        return a == 0 && b == 0 ? 0 : SIMD_NOT_AFFINE;
    }
    }
    return SIMD_NOT_AFFINE;
}

int loom_lir_expr_equal(const lir_expr *a, const lir_expr *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind || a->ival != b->ival || a->var != b->var || a->buf != b->buf || a->tensor != b->tensor ||
        a->dim != b->dim || a->op != b->op || a->fn != b->fn || (a->kind == LIR_E_FLOAT && a->fval != b->fval))
        return 0;
    return loom_lir_expr_equal(a->a, b->a) && loom_lir_expr_equal(a->b, b->b);
}

/* 1 when every load in e of a buffer the loop stores to reads that store's element */
static int simd_loads_ok(const simd_scan *w, const lir_expr *e)
{
    if (!e)
        return 1;
    if (e->kind == LIR_E_LOAD) {
        int64_t c = simd_coef(w, e->a);
        if (c != 0 && c != 1) /* a gather or a strided load: left to the compiler */
            return 0;
        for (int i = 0; i < w->nstores; i++)
            if (w->stores[i]->buf == e->buf && !loom_lir_expr_equal(w->stores[i]->index, e->a))
                return 0;
    }
    return simd_loads_ok(w, e->a) && simd_loads_ok(w, e->b);
}

/* pass 0: lets' strides and the stores; pass 1: the loads.  1 when the body qualifies. */
static int simd_walk(simd_scan *w, const lir_stmt *s, int pass)
{
    if (!s)
        return 1;
    switch (s->kind) {
    case LIR_S_SEQ:
        for (int i = 0; i < s->nitems; i++)
            if (!simd_walk(w, s->items[i], pass))
                return 0;
        return 1;
    case LIR_S_COMMENT: return 1;
    case LIR_S_LET:
        if (pass == 0) {
            w->let[s->var] = 1;
            w->coef[s->var] = simd_coef(w, s->value);
            return 1;
        }
        return simd_loads_ok(w, s->value);
    case LIR_S_STORE:
        if (pass == 0) {
            int64_t c = simd_coef(w, s->index);
            if (c != 1 || w->nstores >= 16) /* contiguous stores only */
                return 0;
            for (int i = 0; i < w->nstores; i++) /* one element of a buffer per iteration */
                if (w->stores[i]->buf == s->buf && !loom_lir_expr_equal(w->stores[i]->index, s->index))
                    return 0;
            w->stores[w->nstores++] = s;
            return 1;
        }
        return simd_loads_ok(w, s->index) && simd_loads_ok(w, s->value);
    default: return 0; /* loops, ifs, assignments, fills, prefetches, streams, barriers, locals */
    }
}

int loom_lir_is_simd_safe(const lir_func *f, const lir_stmt *s)
{
    if (!f || !s || s->kind != LIR_S_FOR || s->loop_kind != LIR_LOOP_SERIAL || !s->lo || !s->hi ||
        s->lo->kind != LIR_E_INT || s->hi->kind != LIR_E_INT || s->hi->ival - s->lo->ival < 2 || s->var < 0 ||
        s->var >= f->nvars)
        return 0;
    simd_scan w = {s->var, calloc((size_t)f->nvars, sizeof(int64_t)), calloc((size_t)f->nvars, 1), 0, {0}};
    int ok = w.coef && w.let && simd_walk(&w, s->body, 0) && w.nstores > 0 && simd_walk(&w, s->body, 1);
    free(w.coef);
    free(w.let);
    return ok;
}

lir_stmt *loom_lir_barrier(lir_func *f) { return new_stmt(f, LIR_S_BARRIER); }

lir_stmt *loom_lir_prefetch(lir_func *f, int buf, lir_expr *index, lir_expr *size)
{
    if (buf < 0 || !index || !size)
        return NULL;
    lir_stmt *s = new_stmt(f, LIR_S_PREFETCH);
    if (s) {
        s->buf = buf;
        s->index = index;
        s->size = size;
    }
    return s;
}

lir_stmt *loom_lir_local(lir_func *f, int buf)
{
    if (buf < 0)
        return NULL;
    lir_stmt *s = new_stmt(f, LIR_S_LOCAL);
    if (s)
        s->buf = buf;
    return s;
}

lir_stmt *loom_lir_comment(lir_func *f, const char *text)
{
    lir_stmt *s = new_stmt(f, LIR_S_COMMENT);
    if (!s)
        return NULL;
    size_t n = strlen(text);
    char *c = loom_lir_alloc(f, n + 1);
    if (!c)
        return NULL;
    memcpy(c, text, n + 1);
    s->text = c;
    return s;
}

/* ---- printing ------------------------------------------------------- */

static const char *binop_str(lir_binop op)
{
    static const char *s[] = {"+", "-", "*", "/", "min", "max", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
    return s[op];
}

static void print_expr(const lir_func *f, const lir_expr *e, FILE *out)
{
    switch (e->kind) {
    case LIR_E_INT: fprintf(out, "%lld", (long long)e->ival); break;
    case LIR_E_FLOAT: fprintf(out, "%g", e->fval); break;
    case LIR_E_VAR: fprintf(out, "%s", f->vars[e->var].name); break;
    case LIR_E_DIM: fprintf(out, "%s.dims[%d]", f->prog->tensors[e->tensor].name, e->dim); break;
    case LIR_E_NNZ: fprintf(out, "%s.nnz", f->prog->tensors[e->tensor].name); break;
    case LIR_E_LOAD:
        fprintf(out, "%s[", f->bufs[e->buf].name);
        print_expr(f, e->a, out);
        fputc(']', out);
        break;
    case LIR_E_BIN:
        if (e->op == LIR_MIN || e->op == LIR_MAX) {
            fprintf(out, "%s(", binop_str(e->op));
            print_expr(f, e->a, out);
            fputs(", ", out);
            print_expr(f, e->b, out);
            fputc(')', out);
        } else {
            fputc('(', out);
            print_expr(f, e->a, out);
            fprintf(out, " %s ", binop_str(e->op));
            print_expr(f, e->b, out);
            fputc(')', out);
        }
        break;
    case LIR_E_NEG: fputs("-", out); print_expr(f, e->a, out); break;
    case LIR_E_NOT: fputs("!", out); print_expr(f, e->a, out); break;
    case LIR_E_CALL: {
        const loom_op_row *r = loom_op_get(e->fn);
        fprintf(out, "%s(", r ? r->name : "?");
        print_expr(f, e->a, out);
        if (e->b) {
            fputs(", ", out);
            print_expr(f, e->b, out);
        }
        fputc(')', out);
        break;
    }
    }
}

static void print_stmt(const lir_func *f, const lir_stmt *s, int ind, FILE *out)
{
    static const char *kinds[] = {"serial", "parallel", "vectorized", "unrolled"};
    if (s->kind == LIR_S_SEQ) {
        for (int i = 0; i < s->nitems; i++)
            print_stmt(f, s->items[i], ind, out);
        return;
    }
    fprintf(out, "%*s", 2 * ind, "");
    switch (s->kind) {
    case LIR_S_FOR:
        fprintf(out, "for %s in [", f->vars[s->var].name);
        print_expr(f, s->lo, out);
        fputs(", ", out);
        print_expr(f, s->hi, out);
        fprintf(out, ") %s%s\n", kinds[s->loop_kind], s->nonempty ? " nonempty" : "");
        print_stmt(f, s->body, ind + 1, out);
        break;
    case LIR_S_WHILE:
        fputs("while ", out);
        print_expr(f, s->cond, out);
        fputc('\n', out);
        print_stmt(f, s->body, ind + 1, out);
        break;
    case LIR_S_IF:
        fputs("if ", out);
        print_expr(f, s->cond, out);
        fputc('\n', out);
        print_stmt(f, s->body, ind + 1, out);
        if (s->els) {
            fprintf(out, "%*selse\n", 2 * ind, "");
            print_stmt(f, s->els, ind + 1, out);
        }
        break;
    case LIR_S_LET:
        fprintf(out, "let %s = ", f->vars[s->var].name);
        print_expr(f, s->value, out);
        fputc('\n', out);
        break;
    case LIR_S_ASSIGN:
        fprintf(out, "%s = ", f->vars[s->var].name);
        print_expr(f, s->value, out);
        fputc('\n', out);
        break;
    case LIR_S_STORE:
        fprintf(out, "%s[", f->bufs[s->buf].name);
        print_expr(f, s->index, out);
        fputs("] = ", out);
        print_expr(f, s->value, out);
        fputc('\n', out);
        break;
    case LIR_S_FILL:
        fprintf(out, "fill %s[0 .. ", f->bufs[s->buf].name);
        print_expr(f, s->size, out);
        fputs(") = ", out);
        print_expr(f, s->value, out);
        fputc('\n', out);
        break;
    case LIR_S_COMMENT: fprintf(out, "# %s\n", s->text); break;
    case LIR_S_BARRIER: fputs("barrier\n", out); break;
    case LIR_S_STREAM:
        fprintf(out, "stream %s[", f->bufs[s->buf].name);
        print_expr(f, s->index, out);
        fputs(" .. +", out);
        print_expr(f, s->size, out);
        fprintf(out, ") = %s[0 ..]\n", f->bufs[s->src].name);
        break;
    case LIR_S_PREFETCH:
        fprintf(out, "prefetch %s[", f->bufs[s->buf].name);
        print_expr(f, s->index, out);
        fputs(" .. +", out);
        print_expr(f, s->size, out);
        fputs(")\n", out);
        break;
    case LIR_S_LOCAL:
        fprintf(out, "local %s[%lld]\n", f->bufs[s->buf].name, (long long)f->bufs[s->buf].local_elems);
        break;
    case LIR_S_SEQ: break;
    }
}

void loom_lir_print(const lir_func *f, FILE *out)
{
    for (int i = 0; i < f->nbufs; i++) {
        const lir_buffer *b = &f->bufs[i];
        if (b->kind == LIR_BUF_TEMP || b->kind == LIR_BUF_PARTIAL) {
            fprintf(out, "alloc %s[", b->name);
            print_expr(f, b->size, out);
            fputs("]\n", out);
        }
    }
    print_stmt(f, f->body, 0, out);
}
