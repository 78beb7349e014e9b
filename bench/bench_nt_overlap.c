/* Standalone (no loom): do a kernel's non-temporal stores overlap its
 * loads' misses?  (docs/simulator.md "Model 39".)  SpMM's shape at PubMed
 * F = 128 with one stored entry a row: each of ROWS rows reads a row of B
 * (W floats) at a random index and writes a row of C (W floats), either
 * ordinary stores (into the caches, read for ownership) or non-temporal
 * stores (`_mm*_stream_ps`, as loom's cache write with the stream option:
 * runtime/lower/codegen.c LOOM_STREAM).  B and C are 10 MB each, together
 * more than a 16 MB last level.  Timed on every thread (OpenMP static
 * rows, as loom's kernels), back to back as a campaign measures them:
 *   load      the rows of B alone (their sum kept in a small array)
 *   store     C's rows alone (ordinary), nt-store the same non-temporal
 *   both      load + store in one loop; nt-both load + nt-store
 * and prints each in ns a row, then both / (load + store) and
 * both / max(load, store) for each kind of store: near 1 in the first
 * means the two costs add (no overlap), near 1 in the second that they
 * overlap.
 *
 * usage: bench_nt_overlap [NNZ]  (B rows a row of C, default 1; PubMed has 4.5 on
 * average; about 3 seconds at 1) */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define W 128
#define ROWS 19717 /* PubMed's nodes */
#define REPS 40

#if defined(__AVX512F__)
#define VW 16
#define NT_STORE(d, v) _mm512_stream_ps((d), _mm512_set1_ps(v))
#elif defined(__AVX__)
#define VW 8
#define NT_STORE(d, v) _mm256_stream_ps((d), _mm256_set1_ps(v))
#else
#define VW 4
#define NT_STORE(d, v) _mm_stream_ps((d), _mm_set1_ps(v))
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { LOAD, STORE, NT_STORE_ONLY, BOTH, NT_BOTH, NKIND };
static const char *NAMES[NKIND] = {"load", "store", "nt-store", "both", "nt-both"};

static int NNZ = 1; /* B rows read a row of C */

__attribute__((noinline)) static void run(int kind, const float *restrict B, float *restrict C, const int *restrict idx,
                                          float *restrict sums)
{
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < ROWS; r++) {
        float s = 0;
        if (kind == LOAD || kind == BOTH || kind == NT_BOTH) {
            for (int k = 0; k < NNZ; k++) {
                const float *b = B + (int64_t)idx[r * NNZ + k] * W;
#pragma omp simd reduction(+ : s)
                for (int f = 0; f < W; f++)
                    s += b[f];
            }
        } else {
            s = (float)r;
        }
        float *c = C + r * W;
        if (kind == STORE || kind == BOTH) {
#pragma omp simd
            for (int f = 0; f < W; f++)
                c[f] = s;
        } else if (kind == NT_STORE_ONLY || kind == NT_BOTH) {
            for (int f = 0; f < W; f += VW)
                NT_STORE(c + f, s);
        } else {
            sums[r & 1023] = s;
        }
    }
    _mm_sfence();
}

int main(int argc, char **argv)
{
    if (argc > 1)
        NNZ = atoi(argv[1]);
    if (NNZ < 1 || NNZ > 64) {
        fprintf(stderr, "usage: bench_nt_overlap [B ROWS A ROW OF C, 1..64]\n");
        return 2;
    }
    float *B = aligned_alloc(64, sizeof(float) * ROWS * W), *C = aligned_alloc(64, sizeof(float) * ROWS * W);
    int *idx = malloc(sizeof(int) * ROWS * NNZ);
    float *sums = calloc(1024, sizeof(float));
    if (!B || !C || !idx || !sums) {
        fprintf(stderr, "bench_nt_overlap: out of memory\n");
        return 1;
    }
    srand(1);
    for (int64_t i = 0; i < (int64_t)ROWS * W; i++)
        B[i] = (float)(i % 7), C[i] = 0;
    for (int r = 0; r < ROWS * NNZ; r++)
        idx[r] = rand() % ROWS;
    printf("bench_nt_overlap: %d rows of %d floats, %d of B's (random) a row of C, B and C %.1f MB each, %d threads, "
           "%d-float vectors\n",
           ROWS, W, NNZ, (double)ROWS * W * 4 / 1e6, omp_get_max_threads(), VW);
    double best[NKIND];
    for (int k = 0; k < NKIND; k++)
        best[k] = 1e30;
    for (int round = 0; round < 5; round++) /* kinds interleaved; the best of the rounds */
        for (int k = 0; k < NKIND; k++) {
            run(k, B, C, idx, sums);
            double t0 = now();
            for (int rep = 0; rep < REPS; rep++)
                run(k, B, C, idx, sums);
            double t = (now() - t0) / REPS / ROWS * 1e9;
            best[k] = t < best[k] ? t : best[k];
        }
    for (int k = 0; k < NKIND; k++)
        printf("%-9s %7.2f ns a row\n", NAMES[k], best[k]);
    double ld = best[LOAD];
    printf("ordinary stores: both / (load + store) %.2f, both / max %.2f\n", best[BOTH] / (ld + best[STORE]),
           best[BOTH] / (ld > best[STORE] ? ld : best[STORE]));
    printf("non-temporal:    both / (load + store) %.2f, both / max %.2f\n",
           best[NT_BOTH] / (ld + best[NT_STORE_ONLY]), best[NT_BOTH] / (ld > best[NT_STORE_ONLY] ? ld : best[NT_STORE_ONLY]));
    printf("checksum %g\n", (double)sums[0] + C[W]);
    free(B), free(C), free(idx), free(sums);
    return 0;
}
