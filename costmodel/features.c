/* loom: per-store feature extraction from LIR: the walk over the loop tree
 * and the public functions (features.h documents the features, the
 * trip-count estimates and the combining rule). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/lower/lower.h"
#include "features_internal.h"

/* ---- the walk ------------------------------------------------------- */

static int walk_seq(ctx *c, const lir_stmt *s, double w, double idxl);

static int push_level(ctx *c, double trip, lir_loop_kind kind, int unroll)
{
    if (c->depth >= MAXL)
        return loom__feat_fail(c, LOOM_ERR_UNSUPPORTED, "loops nested deeper than 40 levels");
    level *L = &c->lv[c->depth];
    memset(L, 0, sizeof *L);
    L->trip = trip;
    L->kind = kind;
    L->unroll = unroll;
    c->pre[c->depth + 1] = c->pre[c->depth] * trip;
    c->depth++;
    c->kern[KF_N_LOOPS] += 1;
    if (c->depth == 1)
        c->kern[KF_N_NESTS] += 1;
    if (kind == LIR_LOOP_PARALLEL) {
        c->kern[KF_PAR_LOOPS] += 1;
        c->kern[KF_PAR_EXTENT] = fmax(c->kern[KF_PAR_EXTENT], trip);
    }
    if (kind == LIR_LOOP_VECTORIZED)
        c->kern[KF_VEC_LOOPS] += 1;
    return 0;
}

static int walk_for(ctx *c, const lir_stmt *s, double w, double idxl)
{
    aval lo, hi;
    loom__feat_eval(c, s->lo, &lo);
    loom__feat_eval(c, s->hi, &hi);
    double trip = loom__feat_finite_or(fmax(0, hi.mean - lo.mean), 0);
    double execs = c->pre[c->depth] * w;
    double nidx = (loom__feat_index_loads(c, s->lo) + loom__feat_index_loads(c, s->hi)) * execs;
    c->index_loads += nidx;
    uint64_t dep = loom__feat_av_mask(c, &lo) | loom__feat_av_mask(c, &hi);
    int flags = lo.flags | hi.flags;
    if (push_level(c, trip, s->loop_kind, s->unroll))
        return -1;
    level *L = &c->lv[c->depth - 1];
    L->is_pos = loom__feat_is_pos_load(c, s->lo) && loom__feat_is_pos_load(c, s->hi);
    L->is_possplit = !L->is_pos && (flags & AV_POS);
    if (s->var >= 0 && s->var < c->f->nvars) {
        aval *x = &c->vars[s->var];
        loom__feat_av_const(x, lo.mean + (trip >= 1 ? (trip - 1) / 2 : 0));
        x->coef[c->depth - 1] = 1;
        x->ndep = dep;
        c->var_depth[s->var] = c->depth;
        c->var_execs[s->var] = execs;
    }
    int r = walk_seq(c, s->body, w, idxl + nidx);
    c->depth--;
    return r;
}

/* The terms of an AND chain (an intersection merge), or of an OR chain (a
 * union merge, runtime/lower/lower_merge.c) when op is LIR_OR. */
static void flatten_op(const lir_expr *e, lir_binop op, const lir_expr **terms, int *n, int max)
{
    if (e && e->kind == LIR_E_BIN && e->op == op) {
        flatten_op(e->a, op, terms, n, max);
        flatten_op(e->b, op, terms, n, max);
    } else if (e && *n < max) {
        terms[(*n)++] = e;
    }
}

static void flatten_and(const lir_expr *e, const lir_expr **terms, int *n, int max)
{
    if (e && e->kind == LIR_E_BIN && e->op == LIR_AND) {
        flatten_and(e->a, terms, n, max);
        flatten_and(e->b, terms, n, max);
    } else if (e && *n < max) {
        terms[(*n)++] = e;
    }
}

/* A coiteration merge: trips and match probability (features.h). */
static int walk_while(ctx *c, const lir_stmt *s, double w, double idxl)
{
    const lir_expr *terms[16];
    int nt = 0;
    int is_union = s->cond && s->cond->kind == LIR_E_BIN && s->cond->op == LIR_OR;
    if (is_union)
        flatten_op(s->cond, LIR_OR, terms, &nt, 16);
    else
        flatten_and(s->cond, terms, &nt, 16);
    double len[16], sum = 0, prod = 1, maxlen = 0;
    int pv[16], k = 0;
    for (int i = 0; i < nt; i++) {
        const lir_expr *t = terms[i];
        if (t->kind != LIR_E_BIN || t->op != LIR_LT)
            continue;
        aval a, b;
        loom__feat_eval(c, t->a, &a);
        loom__feat_eval(c, t->b, &b);
        len[k] = fmax(0, b.mean - a.mean);
        pv[k] = t->a->kind == LIR_E_VAR ? t->a->var : -1;
        sum += len[k];
        prod *= len[k];
        maxlen = fmax(maxlen, len[k]);
        k++;
    }
    /* the merged dimension: the largest extent of the crd levels read in the body */
    double n = 0;
    for (int i = 0; s->body && i < s->body->nitems; i++) {
        const lir_stmt *it = s->body->items[i];
        /* a union merge reads its coordinates under `if (p < end)` */
        if (is_union && it->kind == LIR_S_IF && it->body && it->body->nitems == 1)
            it = it->body->items[0];
        if ((it->kind == LIR_S_LET || it->kind == LIR_S_ASSIGN) && it->value && it->value->kind == LIR_E_LOAD &&
            it->value->buf >= 0 && it->value->buf < c->f->nbufs && c->f->bufs[it->value->buf].kind == LIR_BUF_CRD) {
            const loom_level_stats *ls = loom__feat_buf_level(c, &c->f->bufs[it->value->buf]);
            if (ls)
                n = fmax(n, (double)ls->extent);
        }
    }
    n = fmax(n, fmax(maxlen, 1));
    double matches = k ? prod / pow(n, k - 1) : 0;
    double trip = k ? sum - matches : 0;
    if (is_union && k) {
        /* the union of k independent lists of len[i] of n coordinates:
         * n (1 - prod(1 - len[i] / n)) iterations */
        double miss = 1;
        for (int i = 0; i < k; i++)
            miss *= 1 - fmin(1, len[i] / n);
        trip = n * (1 - miss);
        matches = trip;
    }
    double execs = c->pre[c->depth] * w;
    if (push_level(c, trip, LIR_LOOP_SERIAL, 0))
        return -1;
    level *L = &c->lv[c->depth - 1];
    L->is_while = 1;
    L->match = trip > 0 ? matches / trip : 0;
    for (int i = 0; i < k; i++)
        if (pv[i] >= 0 && pv[i] < c->f->nvars && trip > 0) {
            c->vars[pv[i]].coef[c->depth - 1] = len[i] / trip;
            c->var_execs[pv[i]] = execs;
        }
    int r = walk_seq(c, s->body, w, idxl);
    c->depth--;
    return r;
}

static int walk_stmt(ctx *c, const lir_stmt *s, double w, double *idxl)
{
    double execs = c->pre[c->depth] * w;
    switch (s->kind) {
    case LIR_S_SEQ: return walk_seq(c, s, w, *idxl);
    case LIR_S_FOR: return walk_for(c, s, w, *idxl);
    case LIR_S_WHILE: return walk_while(c, s, w, *idxl);
    case LIR_S_IF: {
        double p = loom__feat_cond_prob(c, s->cond);
        double n = loom__feat_index_loads(c, s->cond) * execs;
        c->index_loads += n;
        if (s->body && walk_seq(c, s->body, w * p, *idxl + n))
            return -1;
        return s->els ? walk_seq(c, s->els, w * (1 - p), *idxl + n) : 0;
    }
    case LIR_S_LET:
    case LIR_S_ASSIGN: {
        if (s->var < 0 || s->var >= c->f->nvars)
            return 0;
        int is_f = c->f->vars[s->var].type == LIR_F32;
        int is_const = !s->value || s->value->kind == LIR_E_INT || s->value->kind == LIR_E_FLOAT;
        if (s->kind == LIR_S_LET) { /* before recording: a declaration reduces over no loop */
            c->var_depth[s->var] = c->depth;
            c->var_execs[s->var] = execs;
        }
        if (is_f && !is_const && loom__feat_record_store(c, -1, NULL, s->var, s->value, w, *idxl))
            return -1;
        double n = (is_f && !is_const) ? 0 : loom__feat_index_loads(c, s->value) * execs; /* a store counts its own */
        c->index_loads += n;
        *idxl += n;
        if (s->kind == LIR_S_LET) {
            aval *x = &c->vars[s->var];
            loom__feat_eval(c, s->value, x);
            /* the inner loop of a position split: p = start + outer * f + inner */
            int d = c->depth - 1;
            if (d >= 1 && (x->flags & AV_POS) && x->coef[d] != 0 && !c->lv[d].is_pos && !c->lv[d].is_possplit)
                for (int k = 0; k < d; k++)
                    if (c->lv[k].is_possplit) {
                        c->lv[d].is_possplit = 1;
                        break;
                    }
        }
        return 0;
    }
    case LIR_S_STORE: {
        int is_const = !s->value || s->value->kind == LIR_E_INT || s->value->kind == LIR_E_FLOAT;
        if (is_const) {
            c->kern[KF_FILL_BYTES] += ELEM_BYTES * execs;
            return 0;
        }
        return loom__feat_record_store(c, s->buf, s->index, -1, s->value, w, *idxl);
    }
    case LIR_S_FILL: {
        aval n;
        loom__feat_eval(c, s->size, &n);
        c->kern[KF_FILL_BYTES] += ELEM_BYTES * fmax(0, n.mean) * execs;
        return 0;
    }
    case LIR_S_LOCAL:
        if (s->buf >= 0 && s->buf < c->f->nbufs) {
            c->local_execs[s->buf] += execs;
            c->kern[KF_WS_COUNT] += 1;
            c->kern[KF_WS_BYTES] = fmax(c->kern[KF_WS_BYTES], ELEM_BYTES * loom__feat_buf_elems(c, s->buf));
        }
        return 0;
    case LIR_S_COMMENT:
    case LIR_S_BARRIER: return 0;
    case LIR_S_STREAM: {
        aval n;
        loom__feat_eval(c, s->size, &n);
        c->kern[KF_STREAM_BYTES] += ELEM_BYTES * fmax(0, n.mean) * execs;
        return 0;
    }
    case LIR_S_PREFETCH: {
        aval n;
        loom__feat_eval(c, s->size, &n);
        c->kern[KF_PREFETCH_BYTES] += ELEM_BYTES * fmax(0, n.mean) * execs;
        return 0;
    }
    }
    return 0;
}

static int walk_seq(ctx *c, const lir_stmt *s, double w, double idxl)
{
    if (!s)
        return 0;
    if (s->kind != LIR_S_SEQ)
        return walk_stmt(c, s, w, &idxl);
    for (int i = 0; i < s->nitems; i++)
        if (walk_stmt(c, s->items[i], w, &idxl))
            return -1;
    return 0;
}

/* ---- public --------------------------------------------------------- */

loom_status loom_features_extract_raw(const lir_func *f, const loom_data_stats *st, double *out, loom_error *err)
{
    if (!f || !st || !out || !f->prog)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_features_extract: the kernel, the data statistics and the output must not be NULL");
    memset(out, 0, sizeof(double) * LOOM_FEAT_D);
    if (st->ntensors != f->prog->ntensors)
        return loom_error_set(err, LOOM_ERR_INVALID, f->prog->path, 0, 0,
                              "loom_features_extract: the data statistics describe %d tensors, the kernel's program "
                              "has %d: compute them with loom_data_stats_compute on this workload's data set",
                              st->ntensors, f->prog->ntensors);
    ctx c;
    memset(&c, 0, sizeof c);
    c.f = f;
    c.st = st;
    c.err = err;
    c.pre[0] = 1;
    size_t nv = (size_t)(f->nvars > 0 ? f->nvars : 1), nb = (size_t)(f->nbufs > 0 ? f->nbufs : 1);
    c.vars = calloc(nv, sizeof *c.vars);
    c.var_depth = calloc(nv, sizeof *c.var_depth);
    c.var_execs = calloc(nv, sizeof *c.var_execs);
    c.local_execs = calloc(nb, sizeof *c.local_execs);
    c.buf_unique = calloc(nb, sizeof *c.buf_unique);
    c.buf_index_read = calloc(nb, 1);
    if (!c.vars || !c.var_depth || !c.var_execs || !c.local_execs || !c.buf_unique || !c.buf_index_read)
        loom__feat_fail(&c, LOOM_ERR_NOMEM, "out of memory");
    else if (walk_seq(&c, f->body, 1, 0) == 0)
        loom__feat_combine(&c, out);
    loom_status s = c.status;
    free(c.vars);
    free(c.var_depth);
    free(c.var_execs);
    free(c.local_execs);
    free(c.buf_unique);
    free(c.buf_index_read);
    free(c.stores);
    free(c.acc);
    if (s)
        memset(out, 0, sizeof(double) * LOOM_FEAT_D);
    return s;
}

loom_status loom_features_extract(const lir_func *f, const loom_data_stats *st, float *out, loom_error *err)
{
    double raw[LOOM_FEAT_D];
    loom_status s = loom_features_extract_raw(f, st, raw, err);
    if (!out)
        return s ? s : loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_features_extract: out is NULL");
    for (int k = 0; k < LOOM_FEAT_D; k++) {
        double x = s ? 0 : raw[k];
        if (loom_feature_is_log(k))
            x = x >= 0 ? log2(1 + x) : -log2(1 - x);
        out[k] = (float)x;
    }
    return s;
}

loom_status loom_features_of_schedule(const loom_schedule *sch, const loom_data_stats *st, float *out,
                                      loom_error *err)
{
    return loom_features_of_schedule_for(sch, NULL, st, out, err);
}

loom_status loom_features_of_schedule_for(const loom_schedule *sch, const loom_limits *lim,
                                          const loom_data_stats *st, float *out, loom_error *err)
{
    if (!sch || !out)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_features_of_schedule: the schedule and the output must not be NULL");
    lir_func *f = NULL;
    loom_status s = loom_lower_for(sch, lim, &f, err);
    if (s) {
        memset(out, 0, sizeof(float) * LOOM_FEAT_D);
        return s;
    }
    s = loom_features_extract(f, st, out, err);
    loom_lir_func_free(f);
    return s;
}
