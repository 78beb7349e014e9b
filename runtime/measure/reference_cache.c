/* The reference outputs cached on disk (reference.h:
 * loom_reference_run_cached).
 *
 * One file per program and input data, $LOOM_CACHE/ref/KEY.bin (the cache
 * directory of dsl/ir/util.h), KEY the FNV-1a of the program's workload hash,
 * its sizes, every input tensor's data (loom_tensor_data_hash) and
 * LOOM_REFERENCE_VERSION.  Layout, host byte order (a cache is per host):
 *
 *   "LOOMREF1", key (u64), ntensors (i32), nstmts (i32), flops (f64),
 *   max_reduction_len (i64), per statement stmt_flops (f64) and
 *   stmt_points (i64), per tensor nvals (i64) and a flag (u8: 1 when its
 *   values follow, the outputs only), the values (f64 x nvals), then the
 *   FNV-1a of every byte before it (u64).
 *
 * Temporaries are not kept (an attention's N x N scores would make the file
 * hundreds of megabytes): a loaded reference has their counts, not their
 * values (vals NULL).  A file that does not read back exactly -- short,
 * another key or layout, a checksum that differs, counts that do not match
 * the data set -- is a miss: the interpreter runs and the file is rewritten
 * (to a temporary name, then renamed, so readers never see half a file). */
#include "reference.h"

#include "../../dsl/ir/program.h"
#include "../../dsl/ir/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char REF_MAGIC[8] = {'L', 'O', 'O', 'M', 'R', 'E', 'F', '1'};

static uint64_t ref_key(const loom_dataset *ds)
{
    const loom_program *prog = ds->prog;
    uint64_t h = loom_fnv1a_u64(LOOM_FNV_OFFSET, loom_program_hash(prog));
    h = loom_fnv1a_u64(h, LOOM_REFERENCE_VERSION);
    for (int s = 0; s < prog->nsizes; s++)
        h = loom_fnv1a_u64(loom_fnv1a_str(h, prog->sizes[s].name), (uint64_t)prog->sizes[s].value);
    for (int t = 0; t < prog->ntensors && t < ds->ntensors; t++)
        if (prog->tensors[t].role == LOOM_TENSOR_INPUT)
            h = loom_tensor_data_hash(loom_fnv1a_u64(h, (uint64_t)t), &ds->t[t], &prog->tensors[t].format);
    return h;
}

/* A byte buffer being written or read, with the running checksum. */
typedef struct ref_buf {
    unsigned char *p;
    size_t n, cap, at;
    int bad;
} ref_buf;

static void put(ref_buf *b, const void *x, size_t n)
{
    if (b->bad)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) {
            b->bad = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, x, n);
    b->n += n;
}

static void get(ref_buf *b, void *x, size_t n)
{
    if (b->bad || b->at + n > b->n) {
        b->bad = 1;
        memset(x, 0, n);
        return;
    }
    memcpy(x, b->p + b->at, n);
    b->at += n;
}

static void ref_path(const char *dir, uint64_t key, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%016llx.bin", dir, (unsigned long long)key);
}

/* Serialise ref (the outputs' values) into b. */
static void ref_pack(const loom_dataset *ds, const loom_reference *ref, uint64_t key, ref_buf *b)
{
    const loom_program *prog = ds->prog;
    int32_t nt = prog->ntensors, ns = prog->nstmts;
    put(b, REF_MAGIC, sizeof REF_MAGIC);
    put(b, &key, sizeof key);
    put(b, &nt, sizeof nt);
    put(b, &ns, sizeof ns);
    put(b, &ref->flops, sizeof ref->flops);
    put(b, &ref->max_reduction_len, sizeof ref->max_reduction_len);
    for (int s = 0; s < ns; s++) {
        put(b, &ref->stmt_flops[s], sizeof ref->stmt_flops[s]);
        put(b, &ref->stmt_points[s], sizeof ref->stmt_points[s]);
    }
    for (int t = 0; t < nt; t++) {
        unsigned char has = prog->tensors[t].role == LOOM_TENSOR_OUTPUT && ref->vals[t];
        put(b, &ref->nvals[t], sizeof ref->nvals[t]);
        put(b, &has, 1);
        if (has)
            put(b, ref->vals[t], (size_t)ref->nvals[t] * sizeof(double));
    }
    uint64_t sum = loom_fnv1a(LOOM_FNV_OFFSET, b->p, b->n);
    put(b, &sum, sizeof sum);
}

/* The inputs of ref copied from ds as doubles (pattern tensors: NULL, value
 * 1 where stored); 0, or -1 when ds does not hold nvals values. */
static int ref_copy_input(const loom_dataset *ds, loom_reference *ref, int t)
{
    const loom_tensor *T = &ds->prog->tensors[t];
    const float *src = ds->t[t].vals;
    if (T->is_pattern || !src)
        return 0;
    if (ds->t[t].nnz != ref->nvals[t])
        return -1;
    ref->vals[t] = malloc((size_t)(ref->nvals[t] > 0 ? ref->nvals[t] : 1) * sizeof(double));
    if (!ref->vals[t])
        return -1;
    for (int64_t i = 0; i < ref->nvals[t]; i++)
        ref->vals[t][i] = (double)src[i];
    return 0;
}

/* Read b back into a new reference for ds; NULL when b is not an exact
 * image of this program's reference under key. */
static loom_reference *ref_unpack(const loom_dataset *ds, uint64_t key, ref_buf *b)
{
    const loom_program *prog = ds->prog;
    uint64_t sum;
    if (b->n < sizeof sum)
        return NULL;
    b->n -= sizeof sum;
    memcpy(&sum, b->p + b->n, sizeof sum);
    if (loom_fnv1a(LOOM_FNV_OFFSET, b->p, b->n) != sum)
        return NULL;
    char magic[8];
    uint64_t k;
    int32_t nt, ns;
    get(b, magic, sizeof magic);
    get(b, &k, sizeof k);
    get(b, &nt, sizeof nt);
    get(b, &ns, sizeof ns);
    if (b->bad || memcmp(magic, REF_MAGIC, sizeof magic) || k != key || nt != prog->ntensors || ns != prog->nstmts)
        return NULL;
    loom_reference *ref = calloc(1, sizeof *ref);
    if (!ref)
        return NULL;
    ref->ntensors = nt;
    get(b, &ref->flops, sizeof ref->flops);
    get(b, &ref->max_reduction_len, sizeof ref->max_reduction_len);
    for (int s = 0; s < ns; s++) {
        get(b, &ref->stmt_flops[s], sizeof ref->stmt_flops[s]);
        get(b, &ref->stmt_points[s], sizeof ref->stmt_points[s]);
    }
    for (int t = 0; t < nt && !b->bad; t++) {
        unsigned char has;
        get(b, &ref->nvals[t], sizeof ref->nvals[t]);
        get(b, &has, 1);
        int role = prog->tensors[t].role;
        if (b->bad || ref->nvals[t] < 0 || has != (role == LOOM_TENSOR_OUTPUT) ||
            (role == LOOM_TENSOR_OUTPUT && ref->nvals[t] != ds->t[t].nnz)) {
            b->bad = 1;
            break;
        }
        if (has) {
            size_t bytes = (size_t)ref->nvals[t] * sizeof(double);
            ref->vals[t] = malloc(bytes > 0 ? bytes : 1);
            if (!ref->vals[t])
                b->bad = 1;
            else
                get(b, ref->vals[t], bytes);
        } else if (role == LOOM_TENSOR_INPUT && ref_copy_input(ds, ref, t)) {
            b->bad = 1;
        }
    }
    if (b->bad || b->at != b->n) {
        loom_reference_free(ref);
        return NULL;
    }
    return ref;
}

static loom_reference *ref_load(const loom_dataset *ds, const char *path, uint64_t key)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    ref_buf b = {0};
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && st.st_size > 0 && (b.p = malloc((size_t)st.st_size)) != NULL)
        b.n = fread(b.p, 1, (size_t)st.st_size, f);
    fclose(f);
    loom_reference *ref = b.n == (size_t)st.st_size ? ref_unpack(ds, key, &b) : NULL;
    free(b.p);
    return ref;
}

/* Write ref to path through a temporary file and a rename; failures only
 * lose the cache entry. */
static void ref_store(const loom_dataset *ds, const loom_reference *ref, const char *dir, const char *path,
                      uint64_t key)
{
    ref_buf b = {0};
    ref_pack(ds, ref, key, &b);
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = !b.bad && loom_mkdir_p(dir) == 0 ? fopen(tmp, "wb") : NULL;
    if (f) {
        int ok = fwrite(b.p, 1, b.n, f) == b.n;
        ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, path))
            unlink(tmp);
    }
    free(b.p);
}

loom_status loom_reference_run_cached(const loom_dataset *ds, const char *cache_dir, int *hit, loom_reference **out,
                                      loom_error *err)
{
    if (hit)
        *hit = 0;
    if (!ds || !ds->prog || !out)
        return loom_reference_run(ds, out, err);
    char dir[1024], path[1100];
    if (cache_dir && *cache_dir)
        snprintf(dir, sizeof dir, "%s", cache_dir);
    else
        loom_cache_dir("ref", dir, sizeof dir);
    uint64_t key = ref_key(ds);
    ref_path(dir, key, path, sizeof path);
    if ((*out = ref_load(ds, path, key)) != NULL) {
        if (hit)
            *hit = 1;
        return LOOM_OK;
    }
    loom_status st = loom_reference_run(ds, out, err);
    if (st == LOOM_OK)
        ref_store(ds, *out, dir, path, key);
    return st;
}
