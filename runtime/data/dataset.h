/* loom: data sets -- the concrete tensors a workload runs on.
 *
 * A loom_dataset holds one loom_tensor_abi per tensor of a program (same
 * indices as program.tensors[]) and owns every array in it.  Inputs come
 * from Matrix Market files (--data NAME=FILE) or, for dense inputs without a
 * file, from a seeded generator; causal/band patterns are computed; output
 * values are allocated in memory shared with forked children (mmap
 * MAP_SHARED | MAP_ANONYMOUS), so a kernel measured in a child process
 * leaves its outputs where the parent can check them.
 */
#ifndef LOOM_DATASET_H
#define LOOM_DATASET_H

#include <stdint.h>

#include "../../dsl/ir/program.h"
#include "../lower/kernel_abi.h"

/* A sparse matrix read from a file, as coordinate lists (0-based), sorted by
 * (row, col), duplicates summed.  Owned by the caller; free with
 * loom_coo_free. */
typedef struct loom_coo {
    int64_t nrows, ncols, nnz;
    int32_t *row, *col;   /* nnz entries each */
    float *val;           /* nnz entries; 1.0 for pattern files */
    int is_pattern;       /* the file's field was `pattern` */
    int is_symmetric;     /* the file was symmetric (already expanded) */
} loom_coo;

/* Read a Matrix Market file (coordinate format; fields real, integer,
 * pattern; symmetry general or symmetric, the symmetric half expanded to
 * both triangles; every line starting with '%' is a comment, anywhere in the
 * header; 1-based indices checked against the size line; duplicates summed).
 * Errors (LOOM_ERR_IO, LOOM_ERR_DATA) name the file and line: missing or bad
 * banner, `array` format, complex field, unsupported symmetry, bad size line,
 * too few / too many entries, an index out of range, a non-numeric value, a
 * symmetric entry above the diagonal, nnz that overflow int32, and the
 * limits below. */
loom_status loom_mtx_read(const char *path, loom_coo *out, loom_error *err);

/* Limits of loom_mtx_read, checked before anything large is allocated:
 *  - the file: at most loom_mtx_max_bytes() bytes (LOOM_MTX_MAX_BYTES, 1 GiB,
 *    or the environment variable LOOM_MTX_MAX_BYTES when it holds a positive
 *    integer), checked with fstat before reading (and while reading a pipe);
 *    a file that does not start with "%%MatrixMarket" is not read past its
 *    first block;
 *  - rows, cols, nnz: at most INT32_MAX each (int32 coordinates and positions
 *    of runtime/lower/kernel_abi.h);
 *  - nnz: at most (bytes after the size line + 1) / 4, since an entry line
 *    takes at least 4 bytes ("1 1\n"), so a size line that overstates nnz is
 *    refused before the entry array is allocated.
 * The reader then needs about 16 bytes per entry (twice when the entries are
 * not sorted) besides the file's own bytes.  Errors: LOOM_ERR_DATA naming the
 * file (and the size line) and the limit. */
#define LOOM_MTX_MAX_BYTES ((uint64_t)1 << 30)
uint64_t loom_mtx_max_bytes(void);

/* loom_mtx_read on text already in memory: buf[0..len) with buf[len] == '\0'
 * (the buffer is modified: every '\n' becomes a NUL).  `name` is used in
 * messages (the file name; may be NULL).  Same results and errors as
 * loom_mtx_read, without the file-size cap and LOOM_ERR_IO. */
loom_status loom_mtx_parse(const char *name, char *buf, size_t len, loom_coo *out,
                           loom_error *err);

void loom_coo_free(loom_coo *coo);

/* ---- limits (runtime/data/limits.c) ----------------------------------
 * loom_dataset_load checks, before allocating anything, that the data set
 * fits these; a hostile size (a Matrix Market header claiming 10^8 rows for
 * one entry, --param F=10^12) gets an error naming the file or flag and the
 * limit, never an out-of-memory kill. */

/* A compressed level read from a file (csr rows, csc columns) needs a
 * position array of parents + 1 int32s, however few entries are stored; it
 * may have at most max(LOOM_POS_PER_ENTRY * (nnz + 1), LOOM_POS_MIN_FREE)
 * parents, so a 10^8 x 10^8 header with one entry is refused (400 MB for one
 * entry) while a graph with a few isolated vertices is not.  dcsr, whose
 * positions grow with the non-empty rows, has no such limit. */
#define LOOM_POS_PER_ENTRY 16
#define LOOM_POS_MIN_FREE (1 << 20)

/* LOOM_OK when a level over `parents` rows/columns (`what`: "rows" or
 * "columns") with nnz stored entries fits the rule above; else
 * LOOM_ERR_DATA naming `file` (may be NULL), the sizes and the limit. */
loom_status loom_pos_array_check(int64_t parents, int64_t nnz, const char *what,
                                 const char *file, loom_error *err);

/* The most bytes a data set may take: the environment variable
 * LOOM_DATA_MAX_BYTES when it holds a positive integer, else half of the
 * smallest of physical memory (sysconf), RLIMIT_AS and RLIMIT_DATA (the
 * other half is left to the reference check, the kernels' temporaries and
 * loom itself). */
uint64_t loom_data_max_bytes(void);

/* Where an input tensor's data comes from. */
typedef struct loom_data_spec {
    char tensor[32];      /* tensor name in the workload */
    char path[512];       /* Matrix Market file */
} loom_data_spec;

/* A size override from --param NAME=INT. */
typedef struct loom_param_spec {
    char name[32];
    int64_t value;
} loom_param_spec;

/* 64-bit FNV-1a (dsl/ir/util.h loom_fnv1a), continuing from h, of one tensor's
 * data: its dims, then level by level the pos and crd arrays of its
 * compressed levels (dense levels hash nothing), then its values (when it
 * has any); f is the tensor's format (which dims the levels store).  Equal
 * data give equal hashes; loom_dataset.fingerprint and the database's data
 * fingerprint are built from it. */
uint64_t loom_tensor_data_hash(uint64_t h, const loom_tensor_abi *a, const loom_format *f);

typedef struct loom_dataset {
    const loom_program *prog;    /* not owned; must outlive the dataset */
    int ntensors;
    loom_tensor_abi t[LOOM_MAX_TENSORS];
    uint64_t fingerprint;        /* hash of every input's dims, arrays and values */
    uint64_t seed;               /* seed of the dense generator */
    /* ownership bookkeeping (private) */
    void *owned_[LOOM_MAX_TENSORS * 8];
    size_t owned_bytes_[LOOM_MAX_TENSORS * 8];
    int owned_shared_[LOOM_MAX_TENSORS * 8];
    int nowned_;
} loom_dataset;

/* Bind and load.  In order: read each spec's file and bind the tensor's
 * dimension sizes from its shape (loom_program_bind_size with origin
 * "data NAME rows"/"data NAME cols"); apply params (origin "--param");
 * loom_program_finish_binding; then build every tensor:
 *  - inputs with a file: in the tensor's declared format (csr, csc, dcsr,
 *    or dense from a coordinate file, zeros elsewhere);
 *  - dense inputs without a file: uniform in [-1, 1) from gsl_rng mt19937
 *    seeded with `seed` (each tensor gets its own stream derived from
 *    seed and the tensor index, so adding a tensor does not change others);
 *  - causal/band inputs: pos/crd computed, vals NULL;
 *  - sparse inputs without a file: LOOM_ERR_BIND "tensor A is csr and needs
 *    data: --data A=FILE.mtx";
 *  - outputs: values zeroed in shared memory (sparse outputs: nnz of their
 *    pattern source, whose pos/crd they point to);
 *  - temporaries: dims only (sparse ones: the pattern source's pos/crd).
 * Before building, every tensor's bytes are summed and checked against
 * loom_data_max_bytes() (LOOM_ERR_BIND naming the largest tensor, its sizes
 * and where each came from: --param, the data file); file inputs stored csr
 * or csc against loom_pos_array_check (LOOM_ERR_DATA naming the file);
 * causal/band patterns against int32 positions (LOOM_ERR_BIND).
 * Errors: those of loom_mtx_read, loom_program_bind_size and
 * loom_program_finish_binding; LOOM_ERR_BIND for a spec naming an unknown
 * tensor, a temporary or an output, a file whose shape does not match the
 * tensor's order (only 2-D files are read), or a tensor given twice;
 * LOOM_ERR_NOMEM.
 * On success *out is owned by the caller (loom_dataset_free). */
/* The alignment, in bytes, of every array a dataset or loom_tensor_from_coo
 * builds (pos, crd, vals; the shared outputs are page-aligned; an output
 * pattern assembled from its operands keeps malloc's pos/crd): a cache line
 * on x86-64, so a row whose length is a multiple of 64 bytes never splits a
 * 512-bit load across two lines.  glibc's malloc aligns to 16 bytes, and
 * its large blocks (mmap) sit 16 bytes past a page: every 64-byte load of
 * their rows crossed a line.  A microbenchmark of fused attention's
 * streams on an Emerald Rapids core (K rows dotted with a query, then
 * V rows scaled into an accumulator; 256-byte rows from L2) ran 27.5
 * cycles a key with rows 16 bytes past a line against 12.6 aligned.  The
 * CPU suite's shipped winners (bench/trace_cputime, 2 threads, 6 runs of
 * each build alternated, 2026-12-01) ran on aligned data: bcsstk16 SpMM
 * F = 128 1.78x faster (median), PubMed F = 128 1.16x, SDDMM 1.06x, fused
 * attention 12 x 512 1.03x, GEMM 512 and Cora F = 128 within noise
 * (bench/alignment_emr_2026-12-01.txt).  Kernels stay correct on any alignment (their loads are
 * unaligned); a shipped kernel runs on its caller's arrays, and PyTorch's
 * CPU tensors are 64-byte aligned. */
#define LOOM_DATA_ALIGN 64

loom_status loom_dataset_load(loom_program *prog, const loom_data_spec *specs, int nspecs,
                              const loom_param_spec *params, int nparams, uint64_t seed,
                              loom_dataset **out, loom_error *err);

void loom_dataset_free(loom_dataset *ds);

/* Zero (or fill with `value`) the values of every output tensor. */
void loom_dataset_fill_outputs(loom_dataset *ds, float value);

/* Build a loom_tensor_abi in format `f` from coordinates (used by the
 * loader; exposed for tests and benchmarks).  `dims` are the logical sizes.
 * Arrays are allocated on LOOM_DATA_ALIGN bytes and returned through the
 * abi; the caller frees them with loom_tensor_abi_free_arrays (free()). */
loom_status loom_tensor_from_coo(const loom_coo *coo, const loom_format *f,
                                 const int64_t dims[2], loom_tensor_abi *out,
                                 loom_error *err);
void loom_tensor_abi_free_arrays(loom_tensor_abi *t);

/* lo/hi of the range level of a causal/band pattern for row i (ncols
 * columns): the stored columns of row i are [lo, hi). */
void loom_range_bounds(const loom_format *f, int64_t i, int64_t ncols, int64_t *lo, int64_t *hi);

#endif
