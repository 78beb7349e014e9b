/* SpMM's row workspace of W = 128 floats, the two forms loom's lowering
 * writes for it -- one pass of 128 (GCC 12 unrolls the vector loop
 * completely; built for 256-bit vectors it spills 2 of the 16 ymm) and
 * two passes of 64 over the same stored entries -- over the CSR rows
 * [pos[i], pos[i + 1]) of rows 0..m-1: C[i][f] = sum_p a[p] B[crd[p]][f].
 * Shared by the standalone benches bench_spill_row.c (one long row) and
 * bench_row_order.c (a real matrix's rows).  B is row-major, W floats a
 * row; C is m x W. */
#ifndef LOOM_BENCH_SPMM_ROW_FORMS_H
#define LOOM_BENCH_SPMM_ROW_FORMS_H

#include <stdint.h>
#include <time.h>

#define W 128

/* seconds on the monotonic clock */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void one_pass(const int *pos, const int *crd, const float *restrict a,
                                               const float *restrict B, float *restrict C, int m)
{
    for (int i = 0; i < m; i++) {
        float ws[W];
        for (int f = 0; f < W; f++)
            ws[f] = 0;
        for (int p = pos[i]; p < pos[i + 1]; p++) {
            int64_t k = crd[p];
            __asm__(""); /* as loom's lowering: keeps GCC from vectorizing the entries' loop */
#pragma omp simd
            for (int64_t f = 0; f < W; f++)
                ws[f] = ws[f] + a[p] * B[k * W + f];
        }
        for (int f = 0; f < W; f++)
            C[(int64_t)i * W + f] = ws[f];
    }
}

__attribute__((noinline)) static void two_passes(const int *pos, const int *crd, const float *restrict a,
                                                 const float *restrict B, float *restrict C, int m)
{
    for (int i = 0; i < m; i++)
        for (int h = 0; h < 2; h++) {
            float ws[W / 2];
            for (int f = 0; f < W / 2; f++)
                ws[f] = 0;
            for (int p = pos[i]; p < pos[i + 1]; p++) {
                int64_t k = crd[p];
                __asm__("");
#pragma omp simd
                for (int64_t f = 0; f < W / 2; f++)
                    ws[f] = ws[f] + a[p] * B[k * W + h * (W / 2) + f];
            }
            for (int f = 0; f < W / 2; f++)
                C[(int64_t)i * W + h * (W / 2) + f] = ws[f];
        }
}

#endif
