/* loom: data sets -- building loom_tensor_abi arrays from Matrix Market
 * coordinates, generated dense inputs, computed causal/band patterns and
 * shared-memory outputs (see dataset.h). */
#include "dataset_internal.h"
#include "../../dsl/ir/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <gsl/gsl_rng.h>

/* ---- small helpers ---------------------------------------------------- */

void loom_range_bounds(const loom_format *f, int64_t i, int64_t ncols, int64_t *lo, int64_t *hi)
{
    int64_t l = 0, h = ncols;
    if (f && f->kind == LOOM_FORMAT_CAUSAL) {
        l = 0;
        h = i + 1 < ncols ? i + 1 : ncols;
    } else if (f && f->kind == LOOM_FORMAT_BAND) {
        int64_t w = f->band_width;
        l = i - w > 0 ? i - w : 0;
        h = i + w + 1 < ncols ? i + w + 1 : ncols;
    }
    if (h < 0)
        h = 0;
    if (l > h)
        l = h;
    *lo = l;
    *hi = h;
}

/* prod(dims[0..order)) into *out; 0 on overflow of int64 / size_t floats. */
static int dims_product(const int64_t *dims, int order, int64_t *out)
{
    int64_t p = 1;
    for (int d = 0; d < order; d++) {
        if (dims[d] < 0)
            return 0;
        if (dims[d] != 0 && p > INT64_MAX / dims[d])
            return 0;
        p *= dims[d];
    }
    if ((uint64_t)p > SIZE_MAX / sizeof(float))
        return 0;
    *out = p;
    return 1;
}

static int format_is_sparse(const loom_format *f, int order)
{
    for (int l = 0; l < order && l < LOOM_MAX_ORDER; l++)
        if (f->level[l] != LOOM_LEVEL_DENSE)
            return 1;
    return 0;
}

void loom_tensor_abi_free_arrays(loom_tensor_abi *t)
{
    if (!t)
        return;
    for (int l = 0; l < LOOM_ABI_MAX_ORDER; l++) {
        free(t->pos[l]);
        free(t->crd[l]);
        t->pos[l] = t->crd[l] = NULL;
    }
    free(t->vals);
    t->vals = NULL;
}

/* ---- building from coordinates ------------------------------------------ */

/* Arrays on LOOM_DATA_ALIGN (dataset.h), freed with free(). */
static void *alloc_aligned(size_t bytes)
{
    size_t b = (bytes + LOOM_DATA_ALIGN - 1) / LOOM_DATA_ALIGN * LOOM_DATA_ALIGN;
    return aligned_alloc(LOOM_DATA_ALIGN, b ? b : LOOM_DATA_ALIGN);
}

static int32_t *alloc_i32(int64_t n)
{
    return alloc_aligned((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
}

static float *alloc_f32(int64_t n)
{
    return alloc_aligned((size_t)(n > 0 ? n : 1) * sizeof(float));
}

loom_status loom_tensor_from_coo(const loom_coo *coo, const loom_format *f,
                                 const int64_t dims[2], loom_tensor_abi *out,
                                 loom_error *err)
{
    if (!coo || !f || !dims || !out)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_tensor_from_coo: NULL argument");
    memset(out, 0, sizeof *out);
    if (dims[0] <= 0 || dims[1] <= 0 || dims[0] > INT32_MAX || dims[1] > INT32_MAX)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_tensor_from_coo: dims %lld x %lld out of range",
                              (long long)dims[0], (long long)dims[1]);
    if (coo->nrows > dims[0] || coo->ncols > dims[1])
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "a %lld x %lld matrix does not fit a %lld x %lld tensor",
                              (long long)coo->nrows, (long long)coo->ncols,
                              (long long)dims[0], (long long)dims[1]);
    const int64_t nr = dims[0], nc = dims[1], nnz = coo->nnz;
    out->order = 2;
    out->dims[0] = nr;
    out->dims[1] = nc;

    switch (f->kind) {
    case LOOM_FORMAT_DENSE: {
        int64_t total;
        if (!dims_product(dims, 2, &total) || !(out->vals = alloc_f32(total)))
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0,
                                  "cannot allocate a dense %lld x %lld tensor", (long long)nr,
                                  (long long)nc);
        memset(out->vals, 0, (size_t)(total ? total : 1) * sizeof(float));
        for (int64_t k = 0; k < nnz; k++)
            out->vals[(int64_t)coo->row[k] * nc + coo->col[k]] = coo->val[k];
        out->nnz = total;
        return LOOM_OK;
    }
    case LOOM_FORMAT_CSR: {
        loom_status st = loom_pos_array_check(nr, nnz, "rows", NULL, err);
        if (st != LOOM_OK)
            return st;
        int32_t *pos = alloc_i32(nr + 1), *crd = alloc_i32(nnz);
        float *vals = alloc_f32(nnz);
        if (!pos || !crd || !vals) {
            free(pos), free(crd), free(vals);
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0,
                                  "cannot allocate a csr tensor with %lld entries",
                                  (long long)nnz);
        }
        memset(pos, 0, (size_t)(nr + 1) * sizeof *pos);
        for (int64_t k = 0; k < nnz; k++) {
            pos[coo->row[k] + 1]++;
            crd[k] = coo->col[k];
            vals[k] = coo->val[k];
        }
        for (int64_t i = 0; i < nr; i++)
            pos[i + 1] += pos[i];
        out->pos[1] = pos;
        out->crd[1] = crd;
        out->vals = vals;
        out->nnz = nnz;
        return LOOM_OK;
    }
    case LOOM_FORMAT_CSC: {
        loom_status st = loom_pos_array_check(nc, nnz, "columns", NULL, err);
        if (st != LOOM_OK)
            return st;
        int32_t *pos = alloc_i32(nc + 1), *crd = alloc_i32(nnz), *next = alloc_i32(nc);
        float *vals = alloc_f32(nnz);
        if (!pos || !crd || !vals || !next) {
            free(pos), free(crd), free(vals), free(next);
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0,
                                  "cannot allocate a csc tensor with %lld entries",
                                  (long long)nnz);
        }
        memset(pos, 0, (size_t)(nc + 1) * sizeof *pos);
        for (int64_t k = 0; k < nnz; k++)
            pos[coo->col[k] + 1]++;
        for (int64_t j = 0; j < nc; j++)
            pos[j + 1] += pos[j];
        memcpy(next, pos, (size_t)nc * sizeof *next);
        /* entries come in (row, col) order, so rows ascend within a column */
        for (int64_t k = 0; k < nnz; k++) {
            int32_t q = next[coo->col[k]]++;
            crd[q] = coo->row[k];
            vals[q] = coo->val[k];
        }
        free(next);
        out->pos[1] = pos;
        out->crd[1] = crd;
        out->vals = vals;
        out->nnz = nnz;
        return LOOM_OK;
    }
    case LOOM_FORMAT_DCSR: {
        int64_t nnr = 0;
        for (int64_t k = 0; k < nnz; k++)
            if (k == 0 || coo->row[k] != coo->row[k - 1])
                nnr++;
        int32_t *pos0 = alloc_i32(2), *crd0 = alloc_i32(nnr), *pos1 = alloc_i32(nnr + 1),
                *crd1 = alloc_i32(nnz);
        float *vals = alloc_f32(nnz);
        if (!pos0 || !crd0 || !pos1 || !crd1 || !vals) {
            free(pos0), free(crd0), free(pos1), free(crd1), free(vals);
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0,
                                  "cannot allocate a dcsr tensor with %lld entries",
                                  (long long)nnz);
        }
        pos0[0] = 0;
        pos0[1] = (int32_t)nnr;
        int64_t q = -1;
        pos1[0] = 0;
        for (int64_t k = 0; k < nnz; k++) {
            if (k == 0 || coo->row[k] != coo->row[k - 1]) {
                q++;
                crd0[q] = coo->row[k];
                pos1[q + 1] = (int32_t)k;
            }
            pos1[q + 1] = (int32_t)(k + 1);
            crd1[k] = coo->col[k];
            vals[k] = coo->val[k];
        }
        out->pos[0] = pos0;
        out->crd[0] = crd0;
        out->pos[1] = pos1;
        out->crd[1] = crd1;
        out->vals = vals;
        out->nnz = nnz;
        return LOOM_OK;
    }
    case LOOM_FORMAT_CAUSAL:
    case LOOM_FORMAT_BAND:
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "%s patterns are computed from the sizes, not read from "
                              "coordinates", f->kind == LOOM_FORMAT_CAUSAL ? "causal" : "band");
    }
    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "unknown format kind %d",
                          (int)f->kind);
}

/* ---- the data set ------------------------------------------------------- */

static int ds_own(loom_dataset *ds, void *p, size_t bytes, int shared)
{
    if (!p)
        return 0;
    if (ds->nowned_ >= (int)(sizeof ds->owned_ / sizeof ds->owned_[0]))
        return -1;
    ds->owned_[ds->nowned_] = p;
    ds->owned_bytes_[ds->nowned_] = bytes;
    ds->owned_shared_[ds->nowned_] = shared;
    ds->nowned_++;
    return 0;
}

/* Zeroed floats in memory shared with forked children. */
static float *ds_shared_floats(loom_dataset *ds, int64_t n)
{
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (ds_own(ds, p, bytes, 1) != 0) {
        munmap(p, bytes);
        return NULL;
    }
    return p;
}

void loom_dataset_free(loom_dataset *ds)
{
    if (!ds)
        return;
    for (int i = 0; i < ds->nowned_; i++) {
        if (ds->owned_shared_[i])
            munmap(ds->owned_[i], ds->owned_bytes_[i]);
        else
            free(ds->owned_[i]);
    }
    free(ds);
}

void loom_dataset_fill_outputs(loom_dataset *ds, float value)
{
    if (!ds || !ds->prog)
        return;
    for (int t = 0; t < ds->ntensors; t++) {
        if (ds->prog->tensors[t].role != LOOM_TENSOR_OUTPUT || !ds->t[t].vals)
            continue;
        float *v = ds->t[t].vals;
        for (int64_t k = 0; k < ds->t[t].nnz; k++)
            v[k] = value;
    }
}

uint64_t loom_tensor_data_hash(uint64_t h, const loom_tensor_abi *a, const loom_format *f)
{
    int order = a->order < LOOM_ABI_MAX_ORDER ? a->order : LOOM_ABI_MAX_ORDER;
    h = loom_fnv1a(h, a->dims, (size_t)order * sizeof a->dims[0]);
    int64_t parents = 1;
    for (int l = 0; l < order; l++) {
        if (!a->pos[l]) {
            parents *= a->dims[f->mode[l]];
            continue;
        }
        h = loom_fnv1a(h, a->pos[l], (size_t)(parents + 1) * sizeof(int32_t));
        int64_t children = a->pos[l][parents];
        if (a->crd[l])
            h = loom_fnv1a(h, a->crd[l], (size_t)children * sizeof(int32_t));
        parents = children;
    }
    if (a->vals)
        h = loom_fnv1a(h, a->vals, (size_t)a->nnz * sizeof(float));
    return h;
}

typedef struct load_ctx {
    loom_program *prog;
    loom_dataset *ds;
    loom_coo coo[LOOM_MAX_TENSORS];
    const char *path[LOOM_MAX_TENSORS];
    int has_file[LOOM_MAX_TENSORS];
    int state[LOOM_MAX_TENSORS]; /* 0 not built, 1 building, 2 built */
} load_ctx;

static loom_status nomem(const char *tname, int64_t n, const char *what, loom_error *err)
{
    return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0,
                          "tensor %s: cannot allocate %lld %s", tname, (long long)n, what);
}

/* Move every array of b into the data set's ownership and into *a. */
static loom_status adopt(loom_dataset *ds, loom_tensor_abi *b, loom_tensor_abi *a,
                         const char *tname, loom_error *err)
{
    void **slots[2 * LOOM_ABI_MAX_ORDER + 1];
    int n = 0;
    for (int l = 0; l < LOOM_ABI_MAX_ORDER; l++) {
        slots[n++] = (void **)&b->pos[l];
        slots[n++] = (void **)&b->crd[l];
    }
    slots[n++] = (void **)&b->vals;
    for (int i = 0; i < n; i++) {
        if (ds_own(ds, *slots[i], 0, 0) != 0) {
            for (int k = i; k < n; k++) /* not owned yet */
                free(*slots[k]);
            for (int k = 0; k < n; k++)
                *slots[k] = NULL;
            return nomem(tname, 1, "ownership slots", err);
        }
    }
    *a = *b;
    return LOOM_OK;
}

static loom_status build_range(load_ctx *c, int t, loom_error *err)
{
    const loom_tensor *tt = &c->prog->tensors[t];
    loom_tensor_abi *a = &c->ds->t[t];
    const loom_format *f = &tt->format;
    if (tt->order != 2 || f->level[0] != LOOM_LEVEL_DENSE || f->level[1] != LOOM_LEVEL_RANGE)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, c->prog->path, tt->line, 0,
                              "tensor %s: a %s pattern needs a 2-D (dense, range) layout",
                              tt->name, loom_format_name(f->kind));
    int64_t nr = a->dims[f->mode[0]], nc = a->dims[f->mode[1]];
    int64_t total = 0, lo, hi;
    for (int64_t i = 0; i < nr; i++) {
        loom_range_bounds(f, i, nc, &lo, &hi);
        total += hi - lo;
    }
    if (total > INT32_MAX)
        return loom_error_set(err, LOOM_ERR_BIND, c->prog->path, tt->line, 0,
                              "tensor %s: the %s pattern of a %lld x %lld tensor has %lld "
                              "entries, more than int32 positions allow; use smaller sizes",
                              tt->name, loom_format_name(f->kind), (long long)nr,
                              (long long)nc, (long long)total);
    int32_t *pos = alloc_i32(nr + 1), *crd = alloc_i32(total);
    if (!pos || !crd || ds_own(c->ds, pos, 0, 0) != 0) {
        free(pos);
        free(crd);
        return nomem(tt->name, total, "pattern entries", err);
    }
    if (ds_own(c->ds, crd, 0, 0) != 0) {
        free(crd);
        return nomem(tt->name, total, "pattern entries", err);
    }
    int64_t q = 0;
    pos[0] = 0;
    for (int64_t i = 0; i < nr; i++) {
        loom_range_bounds(f, i, nc, &lo, &hi);
        for (int64_t j = lo; j < hi; j++)
            crd[q++] = (int32_t)j;
        pos[i + 1] = (int32_t)q;
    }
    a->pos[1] = pos;
    a->crd[1] = crd;
    a->vals = NULL;
    a->nnz = total;
    return LOOM_OK;
}

static loom_status build_generated(load_ctx *c, int t, loom_error *err)
{
    const loom_tensor *tt = &c->prog->tensors[t];
    loom_tensor_abi *a = &c->ds->t[t];
    int64_t n;
    if (!dims_product(a->dims, a->order, &n))
        return nomem(tt->name, INT64_MAX, "floats (dims overflow)", err);
    float *v = alloc_f32(n);
    if (!v || ds_own(c->ds, v, 0, 0) != 0) {
        free(v);
        return nomem(tt->name, n, "floats", err);
    }
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return nomem(tt->name, 1, "random generators", err);
    /* one stream per tensor: adding a tensor does not change the others */
    gsl_rng_set(r, (unsigned long)(c->ds->seed * 1000003ULL + (uint64_t)t));
    for (int64_t k = 0; k < n; k++) {
        /* 24 random bits: -1 + m * 2^-23 is exact in float and lies in [-1, 1) */
        unsigned long m = (gsl_rng_get(r) & 0xffffffffUL) >> 8;
        v[k] = (float)m * (1.0f / 8388608.0f) - 1.0f;
    }
    gsl_rng_free(r);
    a->vals = v;
    a->nnz = n;
    return LOOM_OK;
}

static loom_status build_tensor(load_ctx *c, int t, loom_error *err);

loom_status loom__assemble_csr(const loom_dataset *ds, int t, int32_t **pos_out, int32_t **crd_out, int64_t *nnz_out,
                               loom_error *err);

/* A csr output whose pattern its statement assembles: build the operands,
 * then the symbolic pass (runtime/data/assemble.c) gives pos/crd. */
static loom_status assemble_output(load_ctx *c, int t, loom_error *err)
{
    const loom_program *prog = c->prog;
    loom_dataset *ds = c->ds;
    const loom_stmt *st = &prog->stmts[prog->tensors[t].def_stmt];
    for (int e = 0; e < prog->nexprs; e++) {
        const loom_expr *x = &prog->exprs[e];
        if (x->kind == LOOM_EXPR_ACCESS && x->tensor != t && loom_expr_reads(prog, st->rhs, x->tensor)) {
            loom_status r = build_tensor(c, x->tensor, err);
            if (r != LOOM_OK)
                return r;
        }
    }
    loom_tensor_abi *a = &ds->t[t];
    loom_tensor_abi b = *a;
    memset(b.pos, 0, sizeof b.pos);
    memset(b.crd, 0, sizeof b.crd);
    b.vals = NULL;
    loom_status r = loom__assemble_csr(ds, t, &b.pos[1], &b.crd[1], &b.nnz, err);
    if (r != LOOM_OK)
        return r;
    return adopt(ds, &b, a, prog->tensors[t].name, err);
}

static loom_status build_tensor(load_ctx *c, int t, loom_error *err)
{
    loom_program *prog = c->prog;
    loom_dataset *ds = c->ds;
    const loom_tensor *tt = &prog->tensors[t];
    loom_tensor_abi *a = &ds->t[t];
    const loom_format *f = &tt->format;

    if (c->state[t] == 2)
        return LOOM_OK;
    if (c->state[t] == 1)
        return loom_error_set(err, LOOM_ERR_INVALID, prog->path, tt->line, 0,
                              "tensor %s: its pattern source refers back to itself", tt->name);
    c->state[t] = 1;

    if (tt->order < 0 || tt->order > LOOM_ABI_MAX_ORDER)
        return loom_error_set(err, LOOM_ERR_INVALID, prog->path, tt->line, 0,
                              "tensor %s has order %d (at most %d)", tt->name, tt->order,
                              LOOM_ABI_MAX_ORDER);
    a->order = tt->order;
    for (int d = 0; d < tt->order; d++) {
        a->dims[d] = loom_program_dim(prog, t, d);
        if (a->dims[d] <= 0)
            return loom_error_set(err, LOOM_ERR_BIND, prog->path, tt->line, 0,
                                  "tensor %s: dimension %d (size %s) is not bound", tt->name,
                                  d + 1,
                                  tt->dim_size[d] >= 0 && tt->dim_size[d] < prog->nsizes
                                      ? prog->sizes[tt->dim_size[d]].name
                                      : "?");
    }
    int sparse = format_is_sparse(f, tt->order);
    loom_status st = LOOM_OK;

    if (tt->role == LOOM_TENSOR_INPUT) {
        if (c->has_file[t]) {
            loom_tensor_abi b;
            st = loom_tensor_from_coo(&c->coo[t], f, a->dims, &b, err);
            if (st != LOOM_OK) {
                if (err && err->file[0] == '\0')
                    snprintf(err->file, sizeof err->file, "%s", c->path[t]);
                return st;
            }
            st = adopt(ds, &b, a, tt->name, err);
        } else if (f->kind == LOOM_FORMAT_CAUSAL || f->kind == LOOM_FORMAT_BAND) {
            st = build_range(c, t, err);
        } else if (sparse) {
            return loom_error_set(err, LOOM_ERR_BIND, prog->path, tt->line, 0,
                                  "tensor %s is %s and needs data: --data %s=FILE.mtx",
                                  tt->name, loom_format_name(f->kind), tt->name);
        } else {
            st = build_generated(c, t, err);
        }
    } else {
        /* outputs and temporaries */
        if (sparse && tt->pattern_of == t && tt->role == LOOM_TENSOR_OUTPUT && tt->def_stmt >= 0) {
            /* an assembled pattern (dsl/ir/domain.h): the symbolic pass over
             * the statement's operands, built first (assemble.c) */
            st = assemble_output(c, t, err);
            if (st != LOOM_OK)
                return st;
        } else if (sparse) {
            int p = tt->pattern_of;
            if (p < 0 || p >= prog->ntensors || p == t)
                return loom_error_set(err, LOOM_ERR_INVALID, prog->path, tt->line, 0,
                                      "sparse tensor %s has no pattern source", tt->name);
            st = build_tensor(c, p, err);
            if (st != LOOM_OK)
                return st;
            const loom_tensor *pt = &prog->tensors[p];
            const loom_tensor_abi *pa = &ds->t[p];
            /* nb leading batch dimensions above the pattern's levels */
            int nb = tt->nbatch - pt->nbatch;
            int ok = nb >= 0 && pt->order + nb == tt->order && pt->format.nlevels == f->nlevels;
            for (int l = 0; ok && l < f->nlevels; l++)
                ok = (pt->format.level[l] == LOOM_LEVEL_DENSE) ==
                         (f->level[l] == LOOM_LEVEL_DENSE) &&
                     pt->format.mode[l] + nb == f->mode[l] &&
                     pa->dims[pt->format.mode[l]] == a->dims[f->mode[l]];
            if (!ok)
                return loom_error_set(err, LOOM_ERR_UNSUPPORTED, prog->path, tt->line, 0,
                                      "tensor %s (%s) cannot share the pattern of %s (%s): "
                                      "their levels or sizes differ",
                                      tt->name, loom_format_name(f->kind), pt->name,
                                      loom_format_name(pt->format.kind));
            for (int l = 0; l < LOOM_ABI_MAX_ORDER; l++) {
                a->pos[l] = pa->pos[l]; /* aliased: owned by the source */
                a->crd[l] = pa->crd[l];
            }
            a->nnz = pa->nnz;
            for (int d = 0; d < nb; d++)
                a->nnz *= a->dims[d];
        } else {
            int64_t n;
            if (!dims_product(a->dims, a->order, &n))
                return nomem(tt->name, INT64_MAX, "floats (dims overflow)", err);
            a->nnz = n;
        }
        if (tt->role == LOOM_TENSOR_OUTPUT) {
            a->vals = ds_shared_floats(ds, a->nnz);
            if (!a->vals)
                return loom_error_set(err, LOOM_ERR_NOMEM, prog->path, tt->line, 0,
                                      "tensor %s: cannot map %lld shared floats: %s", tt->name,
                                      (long long)a->nnz, strerror(errno));
        } else {
            a->vals = NULL;
        }
    }
    if (st == LOOM_OK)
        c->state[t] = 2;
    return st;
}

static int find_tensor(const loom_program *prog, const char *name)
{
    for (int t = 0; t < prog->ntensors; t++)
        if (strcmp(prog->tensors[t].name, name) == 0)
            return t;
    return -1;
}

static void list_tensors(const loom_program *prog, char *buf, size_t n, int inputs_only)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int t = 0; t < prog->ntensors && used + 1 < n; t++) {
        if (inputs_only && prog->tensors[t].role != LOOM_TENSOR_INPUT)
            continue;
        int k = snprintf(buf + used, n - used, "%s%s", used ? ", " : "",
                         prog->tensors[t].name);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

loom_status loom_dataset_load(loom_program *prog, const loom_data_spec *specs, int nspecs,
                              const loom_param_spec *params, int nparams, uint64_t seed,
                              loom_dataset **out, loom_error *err)
{
    if (out)
        *out = NULL;
    if (!prog || !out || (nspecs > 0 && !specs) || (nparams > 0 && !params) || nspecs < 0 ||
        nparams < 0 || prog->ntensors < 0 || prog->ntensors > LOOM_MAX_TENSORS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_dataset_load: invalid argument");
    load_ctx *c = calloc(1, sizeof *c);
    loom_dataset *ds = calloc(1, sizeof *ds);
    if (!c || !ds) {
        free(c);
        free(ds);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "cannot allocate a data set");
    }
    c->prog = prog;
    c->ds = ds;
    ds->prog = prog;
    ds->ntensors = prog->ntensors;
    ds->seed = seed;
    loom_status st = LOOM_OK;
    char list[512];

    for (int i = 0; i < nspecs; i++) {
        const loom_data_spec *sp = &specs[i];
        int t = find_tensor(prog, sp->tensor);
        if (t < 0) {
            list_tensors(prog, list, sizeof list, 1);
            st = loom_error_set(err, LOOM_ERR_BIND, NULL, 0, 0,
                                "--data %s=%s: the workload has no tensor %s (inputs: %s)",
                                sp->tensor, sp->path, sp->tensor, list);
            goto fail;
        }
        const loom_tensor *tt = &prog->tensors[t];
        if (tt->role != LOOM_TENSOR_INPUT) {
            st = loom_error_set(err, LOOM_ERR_BIND, NULL, 0, 0,
                                "--data %s=%s: tensor %s is %s; it is computed, not read "
                                "(give data only for inputs)",
                                sp->tensor, sp->path, tt->name,
                                tt->role == LOOM_TENSOR_OUTPUT ? "an output" : "a temporary");
            goto fail;
        }
        if (c->has_file[t]) {
            st = loom_error_set(err, LOOM_ERR_BIND, NULL, 0, 0,
                                "tensor %s is given data twice (--data %s=%s and --data %s=%s)",
                                tt->name, tt->name, c->path[t], tt->name, sp->path);
            goto fail;
        }
        if (tt->format.kind == LOOM_FORMAT_CAUSAL || tt->format.kind == LOOM_FORMAT_BAND) {
            st = loom_error_set(err, LOOM_ERR_BIND, NULL, 0, 0,
                                "--data %s=%s: tensor %s is a %s pattern, computed from the "
                                "sizes; it takes no data",
                                sp->tensor, sp->path, tt->name, loom_format_name(tt->format.kind));
            goto fail;
        }
        if (tt->order != 2) {
            st = loom_error_set(err, LOOM_ERR_BIND, sp->path, 0, 0,
                                "--data %s=%s: tensor %s has %d dimension%s, but only 2-D "
                                "(matrix) files are read",
                                sp->tensor, sp->path, tt->name, tt->order,
                                tt->order == 1 ? "" : "s");
            goto fail;
        }
        if (tt->dim_size[0] < 0 || tt->dim_size[0] >= prog->nsizes || tt->dim_size[1] < 0 ||
            tt->dim_size[1] >= prog->nsizes) {
            st = loom_error_set(err, LOOM_ERR_INVALID, prog->path, tt->line, 0,
                                "tensor %s: dimension sizes are not set", tt->name);
            goto fail;
        }
        st = loom_mtx_read(sp->path, &c->coo[t], err);
        if (st != LOOM_OK)
            goto fail;
        c->has_file[t] = 1;
        c->path[t] = sp->path;
        char origin[96];
        snprintf(origin, sizeof origin, "data %s rows", tt->name);
        st = loom_program_bind_size(prog, prog->sizes[tt->dim_size[0]].name, c->coo[t].nrows,
                                    origin, err);
        if (st != LOOM_OK)
            goto fail;
        snprintf(origin, sizeof origin, "data %s cols", tt->name);
        st = loom_program_bind_size(prog, prog->sizes[tt->dim_size[1]].name, c->coo[t].ncols,
                                    origin, err);
        if (st != LOOM_OK)
            goto fail;
    }
    for (int i = 0; i < nparams; i++) {
        st = loom_program_bind_size(prog, params[i].name, params[i].value, "--param", err);
        if (st != LOOM_OK)
            goto fail;
    }
    /* a sparse input without data is the cause, an unbound size only the symptom */
    for (int t = 0; t < prog->ntensors; t++) {
        const loom_tensor *tt = &prog->tensors[t];
        if (tt->role == LOOM_TENSOR_INPUT && !c->has_file[t] && loom_tensor_is_sparse(prog, t) &&
            tt->format.kind != LOOM_FORMAT_CAUSAL && tt->format.kind != LOOM_FORMAT_BAND) {
            st = loom_error_set(err, LOOM_ERR_BIND, prog->path, tt->line, 0,
                                "tensor %s is %s and needs data: --data %s=FILE.mtx", tt->name,
                                loom_format_name(tt->format.kind), tt->name);
            goto fail;
        }
    }
    st = loom_program_finish_binding(prog, err);
    if (st != LOOM_OK)
        goto fail;
    st = loom__dataset_plan(prog, c->coo, c->has_file, c->path, err);
    if (st != LOOM_OK)
        goto fail;

    for (int t = 0; t < prog->ntensors; t++) {
        st = build_tensor(c, t, err);
        if (st != LOOM_OK)
            goto fail;
    }
    uint64_t h = LOOM_FNV_OFFSET;
    for (int t = 0; t < prog->ntensors; t++)
        if (prog->tensors[t].role == LOOM_TENSOR_INPUT)
            h = loom_tensor_data_hash(h, &ds->t[t], &prog->tensors[t].format);
    ds->fingerprint = h;

    for (int t = 0; t < LOOM_MAX_TENSORS; t++)
        loom_coo_free(&c->coo[t]);
    free(c);
    *out = ds;
    return LOOM_OK;

fail:
    for (int t = 0; t < LOOM_MAX_TENSORS; t++)
        loom_coo_free(&c->coo[t]);
    free(c);
    loom_dataset_free(ds);
    return st;
}
