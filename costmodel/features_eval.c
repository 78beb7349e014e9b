/* loom: abstract evaluation of LIR expressions for feature extraction:
 * mean values, linear parts over the enclosing loops, guard probabilities
 * (features.h, "Trip counts"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "features_internal.h"

int loom__feat_fail(ctx *c, loom_status s, const char *what)
{
    if (!c->status)
        c->status = loom_error_set(c->err, s, c->f->prog ? c->f->prog->path : NULL, 0, 0, "feature extraction: %s",
                                   what);
    return -1;
}

double loom__feat_finite_or(double x, double d)
{
    return isfinite(x) ? x : d;
}

/* ---- abstract values ------------------------------------------------ */

void loom__feat_av_const(aval *a, double m)
{
    memset(a, 0, sizeof *a);
    a->mean = loom__feat_finite_or(m, 0);
}

uint64_t loom__feat_av_mask(const ctx *c, const aval *a)
{
    uint64_t m = a->ndep | a->gat;
    for (int k = 0; k < c->depth; k++)
        if (a->coef[k] != 0)
            m |= (uint64_t)1 << k;
    return m;
}

static int av_is_const(const ctx *c, const aval *a)
{
    return loom__feat_av_mask(c, a) == 0 && a->half == 0 && a->gscale == 0;
}

void loom__feat_av_scale(aval *a, double k)
{
    a->mean *= k;
    a->half *= fabs(k);
    a->gscale *= k;
    for (int i = 0; i < MAXL; i++)
        a->coef[i] *= k;
}

void loom__feat_av_add(aval *a, const aval *b, double sign)
{
    a->mean += sign * b->mean;
    a->half += b->half;
    a->gscale += sign * b->gscale;
    a->ggap = fmax(a->ggap, b->ggap);
    a->ndep |= b->ndep;
    a->gat |= b->gat;
    a->flags |= b->flags;
    for (int i = 0; i < MAXL; i++)
        a->coef[i] += sign * b->coef[i];
}

static double tensor_dim(const ctx *c, int t, int d)
{
    if (t < 0 || t >= c->st->ntensors || d < 0 || d >= LOOM_MAX_ORDER)
        return 0;
    double v = (double)c->st->t[t].dims[d];
    return v > 0 ? v : (double)loom_program_dim(c->f->prog, t, d);
}

const loom_level_stats *loom__feat_buf_level(const ctx *c, const lir_buffer *b)
{
    if (b->tensor < 0 || b->tensor >= c->st->ntensors || b->level < 0 || b->level >= LOOM_MAX_ORDER)
        return NULL;
    return &c->st->t[b->tensor].level[b->level];
}

void loom__feat_eval(ctx *c, const lir_expr *e, aval *out);

/* Elements of buffer b (for footprints). */
double loom__feat_buf_elems(ctx *c, int bi)
{
    const lir_buffer *b = &c->f->bufs[bi];
    const loom_level_stats *ls;
    switch (b->kind) {
    case LIR_BUF_VALS:
        if (b->tensor >= 0 && b->tensor < c->st->ntensors) {
            const loom_tensor_stats *ts = &c->st->t[b->tensor];
            return (double)(ts->nnz > 0 ? ts->nnz : 1);
        }
        return 1;
    case LIR_BUF_POS: ls = loom__feat_buf_level(c, b); return ls ? (double)ls->segments + 1 : 1;
    case LIR_BUF_CRD: ls = loom__feat_buf_level(c, b); return ls && ls->entries > 0 ? (double)ls->entries : 1;
    case LIR_BUF_LOCAL: return (double)(b->local_elems > 0 ? b->local_elems : 1);
    case LIR_BUF_TEMP:
    case LIR_BUF_PARTIAL: {
        if (!b->size)
            return 1;
        int d = c->depth;
        c->depth = 0;
        aval a;
        loom__feat_eval(c, b->size, &a);
        c->depth = d;
        return fmax(1, a.mean);
    }
    }
    return 1;
}

void loom__feat_eval(ctx *c, const lir_expr *e, aval *out)
{
    aval a, b;
    if (!e) {
        loom__feat_av_const(out, 0);
        return;
    }
    switch (e->kind) {
    case LIR_E_INT: loom__feat_av_const(out, (double)e->ival); return;
    case LIR_E_FLOAT: loom__feat_av_const(out, e->fval); return;
    case LIR_E_VAR:
        if (e->var >= 0 && e->var < c->f->nvars)
            *out = c->vars[e->var];
        else
            loom__feat_av_const(out, 0);
        return;
    case LIR_E_DIM: loom__feat_av_const(out, tensor_dim(c, e->tensor, e->dim)); return;
    case LIR_E_NNZ:
        loom__feat_av_const(out, e->tensor >= 0 && e->tensor < c->st->ntensors ? (double)c->st->t[e->tensor].nnz : 0);
        return;
    case LIR_E_LOAD: {
        loom__feat_eval(c, e->a, &a);
        uint64_t m = loom__feat_av_mask(c, &a);
        const lir_buffer *bf = e->buf >= 0 && e->buf < c->f->nbufs ? &c->f->bufs[e->buf] : NULL;
        const loom_level_stats *ls = bf ? loom__feat_buf_level(c, bf) : NULL;
        if (bf && bf->kind == LIR_BUF_POS) {
            /* pos[l][s] ~ s * (mean entries per segment) */
            c->buf_index_read[e->buf] = 1;
            double per = ls ? ls->mean : 1;
            *out = a;
            loom__feat_av_scale(out, per);
            out->flags |= AV_POS;
            return;
        }
        if (bf && bf->kind == LIR_BUF_CRD) {
            /* a coordinate: uniform over the level's dimension */
            c->buf_index_read[e->buf] = 1;
            double n = ls ? (double)ls->extent : 1;
            loom__feat_av_const(out, (n - 1) / 2);
            out->half = (n - 1) / 2;
            out->ndep = out->gat = m;
            out->gscale = 1;
            out->ggap = ls && ls->mean > 0 ? fmax(1, n / ls->mean) : 1;
            out->flags = AV_CRD;
            return;
        }
        loom__feat_av_const(out, 0);
        out->ndep = m;
        return;
    }
    case LIR_E_NEG:
        loom__feat_eval(c, e->a, out);
        loom__feat_av_scale(out, -1);
        return;
    case LIR_E_NOT:
    case LIR_E_CALL: loom__feat_av_const(out, e->kind == LIR_E_NOT ? 0.5 : 0); return;
    case LIR_E_BIN: break;
    }
    loom__feat_eval(c, e->a, &a);
    loom__feat_eval(c, e->b, &b);
    switch (e->op) {
    case LIR_ADD:
    case LIR_SUB:
        *out = a;
        loom__feat_av_add(out, &b, e->op == LIR_ADD ? 1 : -1);
        return;
    case LIR_MUL:
        if (av_is_const(c, &b)) {
            *out = a;
            loom__feat_av_scale(out, b.mean);
        } else if (av_is_const(c, &a)) {
            *out = b;
            loom__feat_av_scale(out, a.mean);
        } else {
            loom__feat_av_const(out, a.mean * b.mean);
            out->half = a.half * fabs(b.mean) + b.half * fabs(a.mean);
            out->ndep = loom__feat_av_mask(c, &a) | loom__feat_av_mask(c, &b);
            out->gat = a.gat | b.gat;
            out->flags = a.flags | b.flags;
        }
        return;
    case LIR_DIV:
        if (av_is_const(c, &b) && b.mean != 0) {
            *out = a;
            loom__feat_av_scale(out, 1 / b.mean);
        } else {
            loom__feat_av_const(out, b.mean != 0 ? a.mean / b.mean : 0);
            out->ndep = loom__feat_av_mask(c, &a) | loom__feat_av_mask(c, &b);
            out->gat = a.gat | b.gat;
            out->flags = a.flags | b.flags;
        }
        return;
    case LIR_MIN:
    case LIR_MAX: {
        int take_a = e->op == LIR_MIN ? a.mean <= b.mean : a.mean >= b.mean;
        const aval *o = take_a ? &b : &a;
        *out = take_a ? a : b;
        out->ndep |= loom__feat_av_mask(c, o);
        out->gat |= o->gat;
        out->flags |= o->flags;
        return;
    }
    default: loom__feat_av_const(out, 0.5); return; /* comparisons and logic: see cond_prob */
    }
}

/* Spread of d over the enclosing loops: half-width of its range. */
static double av_spread(const ctx *c, const aval *d)
{
    double h = d->half;
    for (int k = 0; k < c->depth; k++)
        if (d->coef[k] != 0 && c->lv[k].trip > 1)
            h += fabs(d->coef[k]) * (c->lv[k].trip - 1) / 2;
    return h;
}

/* Fraction of the integer points of d (uniform over mean +- spread) with d >= t. */
static double prob_ge(const ctx *c, const aval *d, double t)
{
    double h = av_spread(c, d);
    if (h < 1e-9)
        return d->mean >= t - 1e-9 ? 1 : 0;
    double lo = d->mean - h, hi = d->mean + h;
    double p = (hi - fmax(lo, t) + 1) / (hi - lo + 1);
    return p < 0 ? 0 : p > 1 ? 1 : p;
}

static double innermost_match(const ctx *c)
{
    for (int k = c->depth - 1; k >= 0; k--)
        if (c->lv[k].is_while)
            return c->lv[k].match;
    return -1;
}

double loom__feat_cond_prob(ctx *c, const lir_expr *e);

/* An AND chain: independent factors, the equalities of a merge counted once. */
static void and_chain(ctx *c, const lir_expr *e, double *p, int *neq)
{
    if (e->kind == LIR_E_BIN && e->op == LIR_AND) {
        and_chain(c, e->a, p, neq);
        and_chain(c, e->b, p, neq);
    } else if (e->kind == LIR_E_BIN && e->op == LIR_EQ && innermost_match(c) >= 0) {
        (*neq)++;
    } else {
        *p *= loom__feat_cond_prob(c, e);
    }
}

double loom__feat_cond_prob(ctx *c, const lir_expr *e)
{
    if (!e)
        return 1;
    aval a, b;
    switch (e->kind) {
    case LIR_E_INT: return e->ival != 0;
    case LIR_E_FLOAT: return e->fval != 0;
    case LIR_E_NOT: return 1 - loom__feat_cond_prob(c, e->a);
    case LIR_E_BIN: break;
    default: return 0.5;
    }
    switch (e->op) {
    case LIR_AND: {
        double p = 1;
        int neq = 0;
        and_chain(c, e, &p, &neq);
        return neq ? p * innermost_match(c) : p;
    }
    case LIR_OR: {
        double pa = loom__feat_cond_prob(c, e->a), pb = loom__feat_cond_prob(c, e->b);
        return 1 - (1 - pa) * (1 - pb);
    }
    case LIR_LT:
    case LIR_LE:
    case LIR_GT:
    case LIR_GE: {
        loom__feat_eval(c, e->a, &a);
        loom__feat_eval(c, e->b, &b);
        int less = e->op == LIR_LT || e->op == LIR_LE;
        aval d = less ? b : a;
        loom__feat_av_add(&d, less ? &a : &b, -1);
        return prob_ge(c, &d, e->op == LIR_LT || e->op == LIR_GT ? 1 : 0);
    }
    case LIR_EQ:
    case LIR_NE: {
        double m = innermost_match(c);
        if (m < 0) {
            loom__feat_eval(c, e->a, &a);
            loom__feat_eval(c, e->b, &b);
            loom__feat_av_add(&a, &b, -1);
            double h = av_spread(c, &a);
            m = h < 1e-9 ? fabs(a.mean) < 0.5 : 1 / (2 * h + 1);
        }
        return e->op == LIR_EQ ? m : 1 - m;
    }
    default: return 0.5;
    }
}

/* ---- counting ------------------------------------------------------- */

void loom__feat_count_ops(const lir_expr *e, double *v, double m)
{
    if (!e)
        return;
    int ft = e->a && (e->a->type == LIR_F32 || (e->b && e->b->type == LIR_F32));
    switch (e->kind) {
    case LIR_E_BIN:
        switch (e->op) {
        case LIR_ADD:
        case LIR_SUB: v[ft ? SF_F_ADDSUB : SF_I_ADDSUB] += m; break;
        case LIR_MUL: v[ft ? SF_F_MUL : SF_I_MUL] += m; break;
        case LIR_DIV: v[ft ? SF_F_DIV : SF_I_DIV] += m; break;
        case LIR_AND:
        case LIR_OR: v[SF_BOOL_OP] += m; break;
        default: v[ft ? SF_F_MINMAX : SF_I_CMP] += m; break; /* min, max, comparisons */
        }
        loom__feat_count_ops(e->a, v, m);
        loom__feat_count_ops(e->b, v, m);
        return;
    case LIR_E_NEG:
        v[e->a && e->a->type == LIR_F32 ? SF_F_ADDSUB : SF_I_ADDSUB] += m;
        loom__feat_count_ops(e->a, v, m);
        return;
    case LIR_E_NOT: v[SF_BOOL_OP] += m; loom__feat_count_ops(e->a, v, m); return;
    case LIR_E_CALL: v[SF_F_MATH] += m; loom__feat_count_ops(e->a, v, m); loom__feat_count_ops(e->b, v, m); return;
    case LIR_E_LOAD: loom__feat_count_ops(e->a, v, m); return;
    default: return;
    }
}

/* pos/crd loads in e */
int loom__feat_index_loads(const ctx *c, const lir_expr *e)
{
    if (!e)
        return 0;
    int n = loom__feat_index_loads(c, e->a) + loom__feat_index_loads(c, e->b);
    if (e->kind == LIR_E_LOAD && e->buf >= 0 && e->buf < c->f->nbufs &&
        (c->f->bufs[e->buf].kind == LIR_BUF_POS || c->f->bufs[e->buf].kind == LIR_BUF_CRD))
        n++;
    return n;
}

int loom__feat_is_pos_load(const ctx *c, const lir_expr *e)
{
    return e && e->kind == LIR_E_LOAD && e->buf >= 0 && e->buf < c->f->nbufs && c->f->bufs[e->buf].kind == LIR_BUF_POS;
}

