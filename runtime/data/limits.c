/* loom: limits on what a data set may allocate (see dataset.h).
 *
 * Everything here runs before the first large allocation, so a hostile size
 * (a Matrix Market header, --param) is refused with a message naming where
 * it came from instead of ending in an out-of-memory kill. */
#include "dataset_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

uint64_t loom_data_max_bytes(void)
{
    const char *e = getenv("LOOM_DATA_MAX_BYTES");
    if (e && *e && *e != '-') {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(e, &end, 10);
        if (!errno && *end == '\0' && v > 0)
            return v;
    }
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    uint64_t lim = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : (uint64_t)1 << 34;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < lim)
        lim = rl.rlim_cur;
    if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < lim)
        lim = rl.rlim_cur;
    return lim / 2;
}

loom_status loom_pos_array_check(int64_t parents, int64_t nnz, const char *what,
                                 const char *file, loom_error *err)
{
    int64_t cap = LOOM_POS_PER_ENTRY * (nnz + 1);
    if (cap < LOOM_POS_MIN_FREE)
        cap = LOOM_POS_MIN_FREE;
    if (parents <= cap)
        return LOOM_OK;
    return loom_error_set(err, LOOM_ERR_DATA, file, 0, 0,
                          "%lld %s but only %lld stored entries: a compressed level over them "
                          "needs a %lld-entry position array, and loom allows at most %d per "
                          "stored entry or %d, whichever is larger (here %lld); declare the "
                          "tensor dcsr, whose positions grow with the non-empty rows only, or "
                          "drop the empty rows and columns",
                          (long long)parents, what, (long long)nnz, (long long)parents + 1,
                          LOOM_POS_PER_ENTRY, LOOM_POS_MIN_FREE, (long long)cap);
}

/* n * m, or -1 when it does not fit int64. */
static int64_t mul(int64_t n, int64_t m)
{
    if (n < 0 || m < 0 || (m != 0 && n > INT64_MAX / m))
        return -1;
    return n * m;
}

/* Stored entries of a causal / band pattern of nr x nc, without looping. */
static int64_t range_entries(const loom_format *f, int64_t nr, int64_t nc)
{
    if (f->kind == LOOM_FORMAT_CAUSAL) {
        int64_t k = nr < nc ? nr : nc; /* rows 0..k-1 store i+1 columns */
        int64_t tri = mul(k, k + 1);
        int64_t rest = mul(nr - k, nc);
        return tri < 0 || rest < 0 || tri / 2 > INT64_MAX - rest ? -1 : tri / 2 + rest;
    }
    int64_t w = f->band_width < 0 ? 0 : f->band_width;
    int64_t per = w > (INT64_MAX - 1) / 2 ? nc : (2 * w + 1 < nc ? 2 * w + 1 : nc);
    return mul(nr, per); /* an upper bound: rows near the edges store fewer */
}

/* "K = 2708 (data A cols: data/cora_adj.mtx), F = 1000000 (--param)" for the
 * dimensions of tensor t. */
static void describe_dims(const loom_program *prog, int t, const int *has_file,
                          const char *const *path, char *buf, size_t n)
{
    const loom_tensor *tt = &prog->tensors[t];
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < tt->order && d < LOOM_MAX_ORDER && used + 1 < n; d++) {
        int s = tt->dim_size[d];
        if (s < 0 || s >= prog->nsizes)
            continue;
        const loom_size *sz = &prog->sizes[s];
        const char *file = NULL;
        char tname[LOOM_MAX_NAME] = "";
        if (strncmp(sz->origin, "data ", 5) == 0 && sscanf(sz->origin + 5, "%31s", tname) == 1) {
            int ft = loom_program_find_tensor(prog, tname);
            if (ft >= 0 && has_file[ft])
                file = path[ft];
        }
        int w = snprintf(buf + used, n - used, "%s%s = %lld (%s%s%s)", d ? ", " : "", sz->name,
                         (long long)sz->value, sz->origin, file ? ": " : "", file ? file : "");
        if (w < 0)
            break;
        used += (size_t)w;
        if (used >= n)
            break;
    }
}

/* Bytes tensor t will take, or -1 when that overflows; for file inputs the
 * position arrays are checked too. */
static loom_status tensor_bytes(const loom_program *prog, int t, const loom_coo *coo,
                                const int *has_file, const char *const *path, int64_t *out,
                                loom_error *err)
{
    const loom_tensor *tt = &prog->tensors[t];
    const loom_format *f = &tt->format;
    int64_t dims[LOOM_MAX_ORDER] = {0}, prod = 1;
    for (int d = 0; d < tt->order && d < LOOM_MAX_ORDER; d++) {
        dims[d] = loom_program_dim(prog, t, d);
        prod = prod < 0 ? -1 : mul(prod, dims[d]);
    }
    *out = 0;
    if (tt->role == LOOM_TENSOR_TEMP)
        return LOOM_OK; /* the kernel allocates temporaries */
    if (tt->role == LOOM_TENSOR_INPUT && has_file[t]) {
        const loom_coo *c = &coo[t];
        int64_t nnz = c->nnz;
        switch (f->kind) {
        case LOOM_FORMAT_CSR:
        case LOOM_FORMAT_CSC: {
            int row = f->kind == LOOM_FORMAT_CSR;
            loom_status st = loom_pos_array_check(row ? dims[0] : dims[1], nnz,
                                                  row ? "rows" : "columns", path[t], err);
            if (st != LOOM_OK)
                return st;
            *out = 4 * ((row ? dims[0] : dims[1]) + 1) + 8 * nnz;
            return LOOM_OK;
        }
        case LOOM_FORMAT_DCSR:
            *out = 4 * (3 + 2 * nnz) + 8 * nnz;
            return LOOM_OK;
        default:
            *out = mul(prod, 4);
            return LOOM_OK;
        }
    }
    if (f->kind == LOOM_FORMAT_CAUSAL || f->kind == LOOM_FORMAT_BAND) {
        int64_t total = tt->order == 2 ? range_entries(f, dims[0], dims[1]) : -1;
        if (tt->order == 2 && (total < 0 || total > INT32_MAX)) {
            char dd[512];
            describe_dims(prog, t, has_file, path, dd, sizeof dd);
            return loom_error_set(err, LOOM_ERR_BIND, prog->path, tt->line, 0,
                                  "tensor %s: the %s pattern with %s has more than %d entries, "
                                  "the int32 positions of the kernel ABI; use smaller sizes",
                                  tt->name, loom_format_name(f->kind), dd, INT32_MAX);
        }
        *out = total < 0 ? 0 : 4 * (dims[0] + 1 + total);
        if (tt->role == LOOM_TENSOR_OUTPUT)
            *out += 4 * total;
        return LOOM_OK;
    }
    if (tt->role == LOOM_TENSOR_OUTPUT && tt->pattern_of >= 0 && tt->pattern_of < prog->ntensors &&
        loom_tensor_is_sparse(prog, t)) {
        int p = tt->pattern_of;
        *out = has_file[p] ? 4 * coo[p].nnz : 0; /* computed patterns: counted above */
        return LOOM_OK;
    }
    *out = mul(prod, 4); /* generated dense inputs, dense outputs */
    return LOOM_OK;
}

loom_status loom__dataset_plan(const loom_program *prog, const loom_coo *coo, const int *has_file,
                               const char *const *path, loom_error *err)
{
    const uint64_t max = loom_data_max_bytes();
    uint64_t total = 0;
    int big = -1;
    int64_t big_bytes = 0;
    for (int t = 0; t < prog->ntensors; t++) {
        int64_t b;
        loom_status st = tensor_bytes(prog, t, coo, has_file, path, &b, err);
        if (st != LOOM_OK)
            return st;
        if (b < 0 || (uint64_t)b > UINT64_MAX / 2 - total) {
            total = UINT64_MAX / 2;
            big = t;
            big_bytes = INT64_MAX;
            break;
        }
        total += (uint64_t)b;
        if (big < 0 || b > big_bytes) {
            big = t;
            big_bytes = b;
        }
    }
    if (total <= max || big < 0)
        return LOOM_OK;
    const loom_tensor *tt = &prog->tensors[big];
    char dd[512];
    describe_dims(prog, big, has_file, path, dd, sizeof dd);
    return loom_error_set(err, LOOM_ERR_BIND, prog->path, tt->line, 0,
                          "the data set needs %.3g GB, more than the %.3g GB limit (half the "
                          "memory this process may use; LOOM_DATA_MAX_BYTES overrides); the "
                          "largest tensor is %s (%s, %.3g GB) with %s; give smaller sizes",
                          (double)total / 1e9, (double)max / 1e9, tt->name,
                          loom_format_name(tt->format.kind), (double)big_bytes / 1e9, dd);
}
