/* Standalone (no loom): how far ahead a software prefetch of gathered rows
 * can run before its lines leave L1 unused -- the evidence for model 91
 * (docs/simulator.md "Model 91", runtime/sim/sim_machine.h pf_arrival).
 *
 * SpMM C = A B over a pattern matrix A (CSR, values 1) and B of F = 128
 * floats a row, as loom's SpMM schedules run it: rows split statically over
 * the OpenMP threads, a row's nonzeros in order, each adding its B row into a
 * 128-float accumulator (`omp simd`), the accumulator stored into C's row.
 * Each kernel prefetches B's row of the nonzero d positions ahead (the whole
 * 512-byte row, 8 lines; d = 0: none) with one hint: prefetcht0 (into L1,
 * what loom's lowering emits), or prefetcht1 / prefetcht2.  Times are the
 * fastest of R runs after one warm-up, in microseconds, and each kernel's
 * ratio to the kernel without a prefetch; the kernels take turns, so a
 * loaded machine slows them alike.  Every kernel's C is checked against the
 * first's (a sum of ones times B, exact in float).
 *
 * On the Zen 4 host of 2026-12-07 (32 KiB L1, 1 MiB L2, 16 MiB L3; Facebook,
 * B 11.5 MB) loom's own Facebook kernels measured 64 ahead with prefetcht0
 * 1.13-1.22x the 16-ahead one and about the kernel without, prefetcht1 /
 * prefetcht2 at 64 0.90-1.09x (bench/fidelity_s34_zen4_2026-12-07s77.txt).
 *
 * usage: prefetch_distance [MATRIX.mtx] [R]
 *   MATRIX: a Matrix Market pattern or real matrix (default:
 *   $LOOM_SHARED_DATA or ../shared/data, facebook/facebook_adj.mtx; a
 *   message and exit 0 when absent); R: runs a kernel (default 40). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mtx_csr.h"

enum { F = 128 };

/* One kernel: the prefetch distance and hint (0: prefetcht0, 1: t1, 2: t2). */
#define SPMM(NAME, HINT)                                                                                     \
    static void NAME(const csr *a, const float *restrict B, float *restrict C, int d)                       \
    {                                                                                                        \
        _Pragma("omp parallel for schedule(static)") for (int i = 0; i < a->n; i++)                         \
        {                                                                                                    \
            float acc[F];                                                                                    \
            memset(acc, 0, sizeof acc);                                                                      \
            for (int p = a->pos[i]; p < a->pos[i + 1]; p++) {                                                \
                if (d > 0) {                                                                                 \
                    int q = p + d < a->nnz ? p + d : a->nnz - 1;                                             \
                    const float *r = B + (size_t)a->crd[q] * F;                                              \
                    for (int l = 0; l < F; l += 16)                                                          \
                        __builtin_prefetch(r + l, 0, HINT);                                                  \
                }                                                                                            \
                const float *b = B + (size_t)a->crd[p] * F;                                                  \
                _Pragma("omp simd") for (int f = 0; f < F; f++) acc[f] += b[f];                             \
            }                                                                                                \
            memcpy(C + (size_t)i * F, acc, sizeof acc);                                                      \
        }                                                                                                    \
    }
SPMM(spmm_t0, 3)
SPMM(spmm_t1, 2)
SPMM(spmm_t2, 1)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    char def[4096];
    const char *env = getenv("LOOM_SHARED_DATA");
    snprintf(def, sizeof def, "%s/facebook/facebook_adj.mtx", env ? env : "../shared/data");
    const char *path = argc > 1 ? argv[1] : def;
    int runs = argc > 2 ? atoi(argv[2]) : 40;
    csr a;
    if (!read_mtx(path, &a)) {
        printf("prefetch_distance: %s is absent or not a square coordinate matrix; skipped\n", path);
        return 0;
    }
    float *B = aligned_alloc(64, sizeof(float) * (size_t)a.n * F);
    float *C = aligned_alloc(64, sizeof(float) * (size_t)a.n * F), *C0 = malloc(sizeof(float) * (size_t)a.n * F);
    for (size_t k = 0; k < (size_t)a.n * F; k++)
        B[k] = (float)(k % 7);
    struct {
        const char *name;
        void (*fn)(const csr *, const float *, float *, int);
        int d;
    } ks[] = {{"none", spmm_t0, 0},          {"t0 4 ahead", spmm_t0, 4},   {"t0 16 ahead", spmm_t0, 16},
              {"t0 32 ahead", spmm_t0, 32},  {"t0 64 ahead", spmm_t0, 64}, {"t1 64 ahead", spmm_t1, 64},
              {"t2 64 ahead", spmm_t2, 64}};
    enum { NK = sizeof ks / sizeof ks[0] };
    double best[NK];
    for (int k = 0; k < NK; k++) {
        best[k] = 1e30;
        ks[k].fn(&a, B, C, ks[k].d); /* warm-up, and the check */
        if (k == 0)
            memcpy(C0, C, sizeof(float) * (size_t)a.n * F);
        else if (memcmp(C0, C, sizeof(float) * (size_t)a.n * F)) {
            printf("prefetch_distance: %s computed another C\n", ks[k].name);
            return 1;
        }
    }
    for (int r = 0; r < runs; r++)
        for (int k = 0; k < NK; k++) {
            double t0 = now();
            ks[k].fn(&a, B, C, ks[k].d);
            double t = now() - t0;
            if (t < best[k])
                best[k] = t;
        }
    printf("prefetch_distance: %s, %d rows, %d nonzeros, B %.1f MB, F = %d, %d threads, fastest of %d runs\n",
           path, a.n, a.nnz, a.n * (double)F * 4 / 1e6, F, omp_get_max_threads(), runs);
    for (int k = 0; k < NK; k++)
        printf("  %-12s %9.1f us  %.3fx none\n", ks[k].name, best[k] * 1e6, best[k] / best[0]);
    free(a.pos), free(a.crd), free(B), free(C), free(C0);
    return 0;
}
