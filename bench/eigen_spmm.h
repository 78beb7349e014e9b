/* loom benchmarks: Eigen's sparse x dense product as the peer of loom's
 * SpMM kernel (C API over bench/eigen_spmm.cpp). */
#ifndef LOOM_BENCH_EIGEN_SPMM_H
#define LOOM_BENCH_EIGEN_SPMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C = A * B with A an n x k CSR matrix (pos: n+1 offsets, crd: column of
 * each of the pos[n] entries, vals: their values) and B a dense row-major
 * k x F matrix; C is dense row-major n x F.  A and B are copied into an
 * Eigen::SparseMatrix<float, RowMajor, int> and a row-major dense matrix
 * outside the timed region; then `C.noalias() = A * B` runs once untimed
 * and is repeated (at least 3 times) until min_seconds of product time have
 * passed.  Returns the median seconds per product (-1 on a bad argument or
 * an exception) and writes the product into C.  Eigen parallelises this
 * product with OpenMP (row-major sparse x row-major dense, nnz*F > 20000)
 * over Eigen::nbThreads() threads. */
double loom_bench_eigen_spmm(int64_t n, int64_t k, const int32_t *pos, const int32_t *crd,
                             const float *vals, int64_t F, const float *B, float *C,
                             double min_seconds);

/* Threads Eigen uses for the product (Eigen::nbThreads()). */
int loom_bench_eigen_threads(void);

/* "3.4.0" */
const char *loom_bench_eigen_version(void);

#ifdef __cplusplus
}
#endif

#endif
