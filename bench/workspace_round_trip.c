/* Standalone (no loom): what a row workspace's round trip through the stack
 * costs -- the evidence for codegen's guarded row loop (runtime/lower/lir.h
 * loom_lir_workspace_row_loop, docs/simulator.md "A workspace's round trip").
 *
 * SpMM C = A B over a pattern matrix A (CSR, values 1.0 read from an
 * array), B of F floats a row, in the C loom emits for a CacheWrite
 * workspace at the row loop (rows split statically over the OpenMP
 * threads): `float ws[F]; memset(ws, 0, ...)`, the row's positions each
 * adding A's value times its B row into ws (`omp simd`, behind the empty
 * asm statement that keeps loom's position loops scalar), then the copy-out
 * of ws into C's row (`omp simd`).  Two forms of the same computation:
 *   plain    the position loop, then the copy-out (loom before 932020a);
 *   guarded  if (the row is nonempty) { the loop, its bound said nonempty;
 *            the copy-out } else { the copy-out }  (loom's codegen now).
 * GCC 12 keeps ws in registers inside the loop either way; in the plain form
 * the loop's exit meets the path that skips an empty row, and there it
 * stores the registers to the stack for the copy-out to reload.  Build it
 * with loom's flags (the Makefile's target does, for AVX-512 and AVX2:
 * without loom's -mmove-max / -mstore-max, GCC 12's AVX2 code for the
 * guarded form kept the workspace in memory at every position, 1.3-3x
 * slower).  Times are the fastest of R runs after a warm-up, each form's C
 * checked against the other's (sums of small integers, exact in float); the
 * forms take turns.
 *
 * On the Zen 4 host of 2026-12-07 (AVX-512 on 256-bit halves, 2 threads):
 * bcsstk16 F = 32 (59 nonzeros a row) the guarded form 0.90x the plain one,
 * as loom's own kernels (147 -> 132 us).
 *
 * usage: workspace_round_trip [MATRIX.mtx ...] [-r R]
 *   default matrices: data/cora_adj.mtx and, under $LOOM_SHARED_DATA or
 *   ../shared/data, suitesparse/bcsstk16.mtx and facebook/facebook_adj.mtx
 *   (each absent one skipped with a message); R: runs a form (default 60). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mtx_csr.h"

#define NONEMPTY(lo, hi)                                                                                     \
    __extension__({                                                                                          \
        int64_t hi_ = (hi);                                                                                  \
        if (hi_ <= (lo))                                                                                     \
            __builtin_unreachable();                                                                         \
        hi_;                                                                                                 \
    })

static float *vals; /* A's values: ones */

/* one position: ws += A's value times B's row crd[p] (the accumulation loom emits) */
#define ADD_ROW(F)                                                                                           \
    {                                                                                                        \
        const float *b = B + (size_t)crd[p] * F;                                                          \
        __asm__("");                                                                                         \
        _Pragma("omp simd") for (int64_t f = 0; f < F; f++) ws[f] = ws[f] + V[p] * b[f];                       \
    }
/* the arrays as restrict locals, as in loom's kernels */
#define LOCALS                                                                                               \
    const int *restrict pos = a->pos, *restrict crd = a->crd;                                                \
    const float *restrict V = vals;                                                                          \
    const int64_t n = a->n;
#define COPY_OUT(F) _Pragma("omp simd") for (int64_t f = 0; f < F; f++) C[(size_t)i * F + f] = ws[f];

/* one form: a function running the row loop given (F floats a row) on every row */
#define FORM(NAME, F, ...)                                                                                   \
    static void NAME(const csr *a, const float *restrict B, float *restrict C)                              \
    {                                                                                                        \
        LOCALS                                                                                               \
        _Pragma("omp parallel for schedule(static)") for (int64_t i = 0; i < n; i++)                        \
        {                                                                                                    \
            float ws[F];                                                                                     \
            memset(ws, 0, sizeof ws);                                                                        \
            __VA_ARGS__                                                                                      \
        }                                                                                                    \
    }
#define PLAIN_ROW(F)                                                                                         \
    for (int64_t p = pos[i], e = pos[i + 1]; p < e; p++)                                                     \
        ADD_ROW(F)                                                                                           \
    COPY_OUT(F)
#define GUARDED_ROW(F)                                                                                       \
    if (pos[i] < pos[i + 1]) {                                                                               \
        for (int64_t p = pos[i], e = NONEMPTY(pos[i], pos[i + 1]); p < e; p++)                               \
            ADD_ROW(F)                                                                                       \
        COPY_OUT(F)                                                                                          \
    } else {                                                                                                 \
        COPY_OUT(F)                                                                                          \
    }
#define FORMS(F)                                                                                             \
    FORM(plain_##F, F, PLAIN_ROW(F))                                                                         \
    FORM(guarded_##F, F, GUARDED_ROW(F))
FORMS(32)
FORMS(128)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

typedef void (*form)(const csr *, const float *restrict, float *restrict);

/* both forms at F on a, the fastest of runs each; 1 when their C differ */
static int compare(const char *path, const csr *a, int F, form plain, form guarded, int runs)
{
    size_t n = (size_t)a->n * F;
    float *B = aligned_alloc(64, sizeof(float) * n), *C = aligned_alloc(64, sizeof(float) * n),
          *C0 = malloc(sizeof(float) * n);
    for (size_t k = 0; k < n; k++)
        B[k] = (float)(k % 7);
    plain(a, B, C0);
    guarded(a, B, C);
    int differ = memcmp(C0, C, sizeof(float) * n) != 0;
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < runs && !differ; r++)
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            (k ? guarded : plain)(a, B, C);
            double t = now() - t0;
            if (t < best[k])
                best[k] = t;
        }
    if (differ)
        printf("workspace_round_trip: %s F = %d: the guarded form computed another C\n", path, F);
    else
        printf("  %-40s F = %3d: plain %9.1f us, guarded %9.1f us: %.3fx\n", path, F, best[0] * 1e6, best[1] * 1e6,
               best[1] / best[0]);
    free(B), free(C), free(C0);
    return differ;
}

int main(int argc, char **argv)
{
    const char *env = getenv("LOOM_SHARED_DATA");
    char bc[4096], fb[4096];
    snprintf(bc, sizeof bc, "%s/suitesparse/bcsstk16.mtx", env ? env : "../shared/data");
    snprintf(fb, sizeof fb, "%s/facebook/facebook_adj.mtx", env ? env : "../shared/data");
    const char *defaults[] = {"data/cora_adj.mtx", bc, fb}, *paths[64];
    int np = 0, runs = 60;
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "-r") && k + 1 < argc)
            runs = atoi(argv[++k]);
        else if (np < 64)
            paths[np++] = argv[k];
    }
    if (np == 0)
        for (int k = 0; k < 3; k++)
            paths[np++] = defaults[k];
    printf("workspace_round_trip: %d threads, fastest of %d runs a form; guarded / plain\n", omp_get_max_threads(),
           runs);
    int bad = 0;
    for (int k = 0; k < np; k++) {
        csr a;
        if (!read_mtx(paths[k], &a)) {
            printf("  %s is absent or not a square coordinate matrix; skipped\n", paths[k]);
            continue;
        }
        printf("  %s: %d rows, %.1f nonzeros a row\n", paths[k], a.n, (double)a.nnz / a.n);
        vals = malloc(sizeof(float) * (size_t)a.nnz);
        for (int p = 0; p < a.nnz; p++)
            vals[p] = 1;
        bad |= compare(paths[k], &a, 32, plain_32, guarded_32, runs);
        bad |= compare(paths[k], &a, 128, plain_128, guarded_128, runs);
        free(a.pos), free(a.crd), free(vals);
    }
    return bad;
}
