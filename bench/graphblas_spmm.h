/* loom benchmarks: SuiteSparse:GraphBLAS's sparse x dense product as a peer
 * of loom's SpMM kernel (Debian libgraphblas-dev; scripts/install-deps.sh
 * --bench). */
#ifndef LOOM_BENCH_GRAPHBLAS_SPMM_H
#define LOOM_BENCH_GRAPHBLAS_SPMM_H

#include <stdint.h>

/* C = A * B with A an n x k CSR matrix (pos: n+1 offsets, crd: the column
 * of each of the pos[n] entries, vals: their values) and B a dense
 * row-major k x F matrix; C (dense row-major n x F) receives the product.
 * A is imported as a GrB_FP32 CSR matrix and B as a full row-major one
 * (GxB_Matrix_import_CSR / _FullR, copies made outside the timed region);
 * GrB_mxm with GrB_PLUS_TIMES_SEMIRING_FP32 into a row-major C, then
 * GrB_Matrix_wait, runs once untimed and is repeated (at least 3 times)
 * until min_seconds of product time have passed.  Returns the median
 * seconds per product, -1 on a bad argument, a GraphBLAS error or no
 * memory.  GraphBLAS parallelises with OpenMP over all threads: call it in
 * a forked child (bench/common.h).  Calls GrB_init and GrB_finalize. */
double loom_bench_graphblas_spmm(int64_t n, int64_t k, const int32_t *pos, const int32_t *crd, const float *vals,
                                 int64_t F, const float *B, float *C, double min_seconds);

/* "7.4.0" (GxB_IMPLEMENTATION_*). */
const char *loom_bench_graphblas_version(void);

#endif
