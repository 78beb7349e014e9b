/* loom: one store's feature vector (groups 1-5 and sparse) and the
 * combining rule (features.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "features_internal.h"

/* ---- accesses of a store -------------------------------------------- */

static int add_access(ctx *c, int buf, const aval *idx, int wr, double execs, double w)
{
    if (buf < 0 || buf >= c->f->nbufs)
        return 0;
    if (c->nacc == c->cap_acc) {
        int cap = c->cap_acc ? 2 * c->cap_acc : 16;
        access *na = realloc(c->acc, (size_t)cap * sizeof *na);
        if (!na)
            return loom__feat_fail(c, LOOM_ERR_NOMEM, "out of memory");
        c->acc = na;
        c->cap_acc = cap;
    }
    access *a = &c->acc[c->nacc++];
    memset(a, 0, sizeof *a);
    int n = c->depth;
    a->buf = buf;
    a->rd = !wr;
    a->wr = wr;
    a->gather = idx->gat != 0 || (idx->flags & AV_CRD);
    a->touch = loom__feat_av_mask(c, idx) & (n >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1));
    a->elems = loom__feat_buf_elems(c, buf);
    a->bytes = ELEM_BYTES * execs;
    double u = 1;
    int kstar = -1;
    for (int k = 0; k < n; k++)
        if (a->touch >> k & 1) {
            u *= c->lv[k].trip;
            kstar = k;
        }
    a->unique = fmin(fmin(u, a->elems), fmax(execs, execs > 0 ? 1 : 0));
    if (kstar < 0)
        a->stride = 0;
    else if (idx->coef[kstar] != 0)
        a->stride = fabs(idx->coef[kstar]);
    else if (idx->gat >> kstar & 1)
        a->stride = fabs(idx->gscale) * idx->ggap;
    else
        a->stride = 1;
    double per_line = fmin(1, fmax(a->stride, 1) * ELEM_BYTES / LINE_BYTES);
    a->lines = kstar < 0 ? (execs > 0 ? w : 0) : c->pre[kstar + 1] * w * fmin(1, a->stride * ELEM_BYTES / LINE_BYTES);
    if (kstar >= 0 && a->stride == 0)
        a->lines = c->pre[kstar + 1] * w * (ELEM_BYTES / LINE_BYTES);
    a->ulines = a->unique * per_line;
    return 0;
}

static int collect_loads(ctx *c, const lir_expr *e, double execs, double w)
{
    if (!e)
        return 0;
    if (collect_loads(c, e->a, execs, w) || collect_loads(c, e->b, execs, w))
        return -1;
    if (e->kind == LIR_E_LOAD) {
        aval idx;
        loom__feat_eval(c, e->a, &idx);
        return add_access(c, e->buf, &idx, 0, execs, w);
    }
    return 0;
}

static int cmp_access_bytes(const void *x, const void *y)
{
    const access *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->buf - b->buf;
}

/* Merge accesses of one buffer (in place); returns the count. */
static int merge_accesses(ctx *c)
{
    int n = 0;
    for (int i = 0; i < c->nacc; i++) {
        int j = 0;
        while (j < n && c->acc[j].buf != c->acc[i].buf)
            j++;
        if (j == n) {
            c->acc[n++] = c->acc[i];
            continue;
        }
        access *m = &c->acc[j], *a = &c->acc[i];
        if (a->bytes > m->bytes)
            m->stride = a->stride;
        m->rd |= a->rd;
        m->wr |= a->wr;
        m->gather |= a->gather;
        m->bytes += a->bytes;
        m->lines += a->lines;
        m->unique = fmax(m->unique, a->unique);
        m->ulines = fmax(m->ulines, a->ulines);
        m->touch |= a->touch;
    }
    qsort(c->acc, (size_t)n, sizeof *c->acc, cmp_access_bytes);
    return n;
}

/* Bytes all accesses touch inside level k (levels > k), MetaSchedule's reuse distance. */
static double bytes_inside(const ctx *c, int nacc, int k)
{
    double s = 0;
    for (int i = 0; i < nacc; i++) {
        double u = 1;
        for (int j = k + 1; j < c->depth; j++)
            if (c->acc[i].touch >> j & 1)
                u *= c->lv[j].trip;
        s += ELEM_BYTES * fmin(u, c->acc[i].elems);
    }
    return s;
}

/* Ordinal of where the loops of one kind are (features.h). */
static double kind_pos(const ctx *c, lir_loop_kind kind, const int *red)
{
    int code = 0, n = c->depth;
    for (int k = 0; k < n; k++) {
        if (c->lv[k].kind != kind)
            continue;
        int place = (k == n - 1) ? 0 : (k == 0 ? 2 : 1);
        int cd = (red[k] ? 4 : 1) + place;
        code = code == 0 || code == cd ? cd : 7;
    }
    return code;
}

static void ai_curve(const ctx *c, int nacc, double fops, double w, double *out)
{
    int n = c->depth;
    double x[MAXL + 1], y[MAXL + 1];
    /* point i: the innermost i loops */
    for (int i = 0; i <= n; i++) {
        int d = n - i; /* levels d .. n-1 */
        double prod = c->pre[n] / (c->pre[d] > 0 ? c->pre[d] : 1);
        double fl = fops * prod * w;
        double bytes = 0;
        for (int a = 0; a < nacc; a++) {
            double u = 1;
            for (int j = d; j < n; j++)
                if (c->acc[a].touch >> j & 1)
                    u *= c->lv[j].trip;
            bytes += ELEM_BYTES * fmin(u, c->acc[a].elems);
        }
        x[i] = log2(fmax(fl, 1));
        y[i] = bytes > 0 ? fl / bytes : 0;
    }
    double total = x[n];
    for (int s = 0; s < AI_SAMPLES; s++) {
        double target = total * (s + 1) / AI_SAMPLES;
        int i = 0;
        while (i < n && x[i] < target)
            i++;
        double v;
        if (i == 0 || x[i] <= x[i - 1])
            v = y[i];
        else
            v = y[i - 1] + (y[i] - y[i - 1]) * (target - x[i - 1]) / (x[i] - x[i - 1]);
        out[s] = fops > 0 ? v : 0;
    }
}

/* Group 2 of store r (features v, n loops deep): per merged access
 * (c->acc[0 .. nacc)) its bytes, lines, stride and reuse; records the
 * store's and the buffers' unique bytes.  Returns the bytes of all the
 * accesses (the store's work). */
static double buffer_features(ctx *c, store_rec *r, double *v, int nacc, int n)
{
    double work_bytes = 0;
    for (int i = 0; i < nacc; i++) {
        access *a = &c->acc[i];
        work_bytes += a->bytes;
        r->unique_bytes += ELEM_BYTES * a->unique;
        r->unique_lines += a->ulines;
        if (ELEM_BYTES * a->unique > c->buf_unique[a->buf])
            c->buf_unique[a->buf] = ELEM_BYTES * a->unique;
        if (i >= LOOM_FEAT_BUFS)
            continue;
        double *b = v + SF_B0_ACCESS + i * LOOM_FEAT_BUF_STRIDE;
        b[SF_B0_ACCESS - SF_B0_ACCESS] = a->rd && a->wr ? 2 : a->wr ? 1 : 0;
        b[SF_B0_BYTES - SF_B0_ACCESS] = a->bytes;
        b[SF_B0_UNIQUE_BYTES - SF_B0_ACCESS] = ELEM_BYTES * a->unique;
        b[SF_B0_LINES - SF_B0_ACCESS] = a->lines;
        b[SF_B0_UNIQUE_LINES - SF_B0_ACCESS] = a->ulines;
        b[SF_B0_STRIDE - SF_B0_ACCESS] = a->stride;
        b[SF_B0_GATHER - SF_B0_ACCESS] = a->gather;
        int k = n - 1;
        while (k >= 0 && ((a->touch >> k & 1) || c->lv[k].trip <= 1.0001))
            k--;
        double rtype = 0, rdis = 0, rct = 0;
        if (k >= 0) {
            rtype = 1;
            rct = c->lv[k].trip;
            rdis = bytes_inside(c, nacc, k);
        } else if (a->rd && a->wr) {
            rtype = 2;
            rct = 1;
        } else if (a->gather && a->bytes > ELEM_BYTES * a->unique * 1.0001) {
            rtype = 3;
            rct = a->bytes / (ELEM_BYTES * a->unique);
        }
        b[SF_B0_REUSE_TYPE - SF_B0_ACCESS] = rtype;
        b[SF_B0_REUSE_DIS_BYTES - SF_B0_ACCESS] = rdis;
        b[SF_B0_REUSE_CT - SF_B0_ACCESS] = rct;
    }
    return work_bytes;
}

/* Group 4: the allocation the store writes (buf >= 0), or its accumulator var. */
static void alloc_features(ctx *c, double *v, int buf, int var)
{
    if (buf >= 0) {
        const lir_buffer *B = &c->f->bufs[buf];
        switch (B->kind) {
        case LIR_BUF_TEMP:
            v[SF_ALLOC_KIND] = 1;
            v[SF_ALLOC_BYTES] = ELEM_BYTES * loom__feat_buf_elems(c, buf);
            v[SF_ALLOC_COUNT] = 1;
            break;
        case LIR_BUF_LOCAL:
            v[SF_ALLOC_KIND] = 2;
            v[SF_ALLOC_BYTES] = ELEM_BYTES * loom__feat_buf_elems(c, buf);
            v[SF_ALLOC_COUNT] = c->local_execs[buf];
            break;
        case LIR_BUF_PARTIAL:
            v[SF_ALLOC_KIND] = 3;
            v[SF_ALLOC_BYTES] = ELEM_BYTES * loom__feat_buf_elems(c, buf);
            v[SF_ALLOC_COUNT] = 1;
            break;
        default: break;
        }
    } else if (var >= 0) {
        v[SF_ALLOC_KIND] = 4;
        v[SF_ALLOC_BYTES] = ELEM_BYTES;
        v[SF_ALLOC_COUNT] = c->var_execs[var];
    }
}

/* A store: STORE buf[index] = value (var < 0), or an accumulator var = value. */
int loom__feat_record_store(ctx *c, int buf, const lir_expr *index, int var, const lir_expr *value, double w,
                        double idxl)
{
    if (c->nstores == c->cap_stores) {
        int cap = c->cap_stores ? 2 * c->cap_stores : 8;
        store_rec *ns = realloc(c->stores, (size_t)cap * sizeof *ns);
        if (!ns)
            return loom__feat_fail(c, LOOM_ERR_NOMEM, "out of memory");
        c->stores = ns;
        c->cap_stores = cap;
    }
    store_rec *r = &c->stores[c->nstores];
    memset(r, 0, sizeof *r);
    r->order = c->nstores++;
    double *v = r->v;
    int n = c->depth;
    double execs = c->pre[n] * w;

    /* group 1 */
    double ops[SF_COUNT_] = {0};
    loom__feat_count_ops(value, ops, 1);
    loom__feat_count_ops(index, ops, 1);
    double fops = ops[SF_F_ADDSUB] + ops[SF_F_MUL] + ops[SF_F_DIV] + ops[SF_F_MINMAX] + ops[SF_F_MATH];
    for (int k = SF_F_ADDSUB; k <= SF_BOOL_OP; k++)
        v[k] = ops[k] * execs;
    v[SF_FLOPS] = fops * execs;

    /* accesses */
    c->nacc = 0;
    aval widx;
    loom__feat_av_const(&widx, 0);
    if (buf >= 0) {
        loom__feat_eval(c, index, &widx);
        if (add_access(c, buf, &widx, 1, execs, w))
            return -1;
    }
    if (collect_loads(c, index, execs, w) || collect_loads(c, value, execs, w))
        return -1;
    double gathers = 0;
    for (int i = 0; i < c->nacc; i++) {
        if (c->acc[i].gather && c->acc[i].rd)
            gathers += execs;
        if (c->acc[i].wr)
            r->bytes_written += c->acc[i].bytes;
        else
            r->bytes_read += c->acc[i].bytes;
    }
    int nacc = merge_accesses(c);

    /* reduce loops */
    int red[MAXL];
    uint64_t wmask = buf >= 0 ? loom__feat_av_mask(c, &widx) : 0;
    int nred = 0;
    for (int k = 0; k < n; k++) {
        red[k] = buf >= 0 ? !(wmask >> k & 1) : (var >= 0 && k >= c->var_depth[var]);
        nred += red[k];
    }

    /* loop structure */
    v[SF_N_LOOPS] = n;
    v[SF_N_REDUCE_LOOPS] = nred;
    v[SF_INNER_TRIP] = n ? c->lv[n - 1].trip : 0;
    double vp = 1, pp = 1, um = 0;
    int nv = 0, np = 0;
    for (int k = 0; k < n; k++) {
        const level *L = &c->lv[k];
        if (L->kind == LIR_LOOP_VECTORIZED)
            vp *= L->trip, nv++;
        if (L->kind == LIR_LOOP_PARALLEL)
            pp *= L->trip, np++;
        if (L->kind == LIR_LOOP_UNROLLED)
            um = fmax(um, fmin(L->unroll > 0 ? L->unroll : 4, L->trip)); /* 0: codegen unrolls by 4 */
    }
    v[SF_VEC_PROD] = nv ? vp : 0;
    v[SF_PAR_PROD] = np ? pp : 0;
    v[SF_UNROLL_MAX] = um;
    v[SF_VEC_POS] = kind_pos(c, LIR_LOOP_VECTORIZED, red);
    v[SF_PAR_POS] = kind_pos(c, LIR_LOOP_PARALLEL, red);
    v[SF_UNROLL_POS] = kind_pos(c, LIR_LOOP_UNROLLED, red);

    /* group 2 */
    double work_bytes = buffer_features(c, r, v, nacc, n);

    /* group 3 */
    ai_curve(c, nacc, fops, w, v + SF_AI0);

    /* group 4 */
    alloc_features(c, v, buf, var);

    /* group 5 */
    v[SF_OUTER_PROD] = c->pre[n];
    v[SF_EXECS] = execs;

    /* sparse */
    double ptrip = 1;
    int npos = 0;
    for (int k = 0; k < n; k++) {
        const level *L = &c->lv[k];
        v[SF_POS_LOOPS] += L->is_pos;
        v[SF_COITER_LOOPS] += L->is_while;
        v[SF_POSSPLIT_LOOPS] += L->is_possplit;
        if (L->is_pos || L->is_while || L->is_possplit)
            ptrip *= L->trip, npos++;
    }
    v[SF_POS_TRIP] = npos ? ptrip : 0;
    v[SF_GATHERS] = gathers;
    double own_idx = (loom__feat_index_loads(c, value) + loom__feat_index_loads(c, index)) * execs;
    v[SF_INDEX_LOADS] = idxl + own_idx;
    c->index_loads += own_idx;
    v[SF_GUARD_PROB] = w;

    r->work = v[SF_FLOPS] + work_bytes / ELEM_BYTES;
    return 0;
}

/* ---- combining ------------------------------------------------------ */

static int cmp_store_work(const void *x, const void *y)
{
    const store_rec *a = x, *b = y;
    if (a->work != b->work)
        return a->work > b->work ? -1 : 1;
    return a->order - b->order;
}

void loom__feat_combine(ctx *c, double *out)
{
    memset(out, 0, sizeof(double) * LOOM_FEAT_D);
    double *sum = out + LOOM_FEAT_OFF_SUM;
    for (int i = 0; i < c->nstores; i++) {
        const store_rec *r = &c->stores[i];
        sum[SUM_FLOPS] += r->v[SF_FLOPS];
        sum[SUM_F_ADDSUB] += r->v[SF_F_ADDSUB];
        sum[SUM_F_MUL] += r->v[SF_F_MUL];
        sum[SUM_F_DIV] += r->v[SF_F_DIV];
        sum[SUM_F_MINMAX] += r->v[SF_F_MINMAX];
        sum[SUM_F_MATH] += r->v[SF_F_MATH];
        sum[SUM_INT_OPS] += r->v[SF_I_ADDSUB] + r->v[SF_I_MUL] + r->v[SF_I_DIV] + r->v[SF_I_CMP];
        sum[SUM_BOOL_OP] += r->v[SF_BOOL_OP];
        sum[SUM_BYTES_READ] += r->bytes_read;
        sum[SUM_BYTES_WRITTEN] += r->bytes_written;
        sum[SUM_UNIQUE_BYTES] += r->unique_bytes;
        sum[SUM_UNIQUE_LINES] += r->unique_lines;
        sum[SUM_GATHERS] += r->v[SF_GATHERS];
        sum[SUM_EXECS] += r->v[SF_EXECS];
    }
    sum[SUM_INDEX_LOADS] = c->index_loads;
    sum[SUM_N_STORES] = c->nstores;
    qsort(c->stores, (size_t)c->nstores, sizeof *c->stores, cmp_store_work);
    for (int s = 0; s < LOOM_FEAT_SLOTS && s < c->nstores; s++)
        memcpy(out + s * SF_COUNT_, c->stores[s].v, sizeof(double) * SF_COUNT_);

    double *kern = out + LOOM_FEAT_OFF_KERNEL;
    memcpy(kern, c->kern, sizeof c->kern);
    const lir_func *f = c->f;
    double foot = 0;
    for (int b = 0; b < f->nbufs; b++) {
        const lir_buffer *B = &f->bufs[b];
        foot += c->buf_unique[b];
        if ((B->kind == LIR_BUF_POS || B->kind == LIR_BUF_CRD) && c->buf_index_read[b])
            foot += ELEM_BYTES * loom__feat_buf_elems(c, b);
        if (B->kind == LIR_BUF_TEMP) {
            kern[KF_TEMP_BYTES] += ELEM_BYTES * loom__feat_buf_elems(c, b);
            kern[KF_TEMP_COUNT] += 1;
        }
        if (B->kind == LIR_BUF_PARTIAL) {
            kern[KF_PARTIAL_BYTES] += ELEM_BYTES * loom__feat_buf_elems(c, b);
            kern[KF_PARTIAL_COUNT] += 1;
        }
    }
    kern[KF_OP_INTENSITY] = foot > 0 ? sum[SUM_FLOPS] / foot : 0;

    /* the first two sparse tensors whose pos/crd the kernel reads */
    int seen[LOOM_MAX_TENSORS] = {0}, nsp = 0;
    for (int t = 0; t < c->st->ntensors && t < LOOM_MAX_TENSORS && nsp < LOOM_FEAT_SPARSE_OPS; t++) {
        for (int b = 0; b < f->nbufs; b++) {
            const lir_buffer *B = &f->bufs[b];
            if (B->tensor == t && (B->kind == LIR_BUF_POS || B->kind == LIR_BUF_CRD) && !seen[t])
                seen[t] = 1;
        }
        const loom_tensor_stats *ts = &c->st->t[t];
        if (!seen[t] || ts->row_level < 0)
            continue;
        const loom_level_stats *ls = &ts->level[ts->row_level];
        double *sp = out + LOOM_FEAT_OFF_SPARSE + nsp * SPF_COUNT_;
        sp[SP_SEGMENTS] = (double)ls->segments;
        sp[SP_NNZ] = (double)ls->entries;
        sp[SP_NNZ_MEAN] = ls->mean;
        sp[SP_NNZ_MAX] = ls->max;
        sp[SP_NNZ_CV] = ls->cv;
        nsp++;
    }
    for (int k = 0; k < LOOM_FEAT_D; k++)
        out[k] = isfinite(out[k]) ? fmin(fmax(out[k], -1e37), 1e37) : 0;
}

