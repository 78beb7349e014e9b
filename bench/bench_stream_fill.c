/* loom bench: what a workspace's zero fill costs a kernel that streams
 * (runtime/lower/codegen.c, STREAM_HELPERS, loom_stream_zero).
 *
 * A kernel whose workspace copy-out is streamed writes each output row
 * with non-temporal stores and zeroes its workspace row before the next.
 * GCC 12 expands a memset of a 512-byte row as `rep stosq` (generic
 * tuning, and -march=native on Intel's Emerald Rapids); on Intel a
 * fast-string store waits for the non-temporal stores before it to reach
 * memory.  This times, one thread, over a buffer of MiB megabytes written
 * in rows of ROW bytes:
 *   stream      non-temporal stores only;
 *   rep stos    the same, with a ROW-byte `rep stosq` into an L1-resident
 *               row before each output row (the memset GCC emitted);
 *   vector      the same zeros stored by a vector loop (loom_stream_zero);
 *   ordinary    ordinary stores with the rep stos fill, for comparison.
 * Prints ns per 64-byte line, best of 20 passes.
 *
 * Usage: build/bench/bench_stream_fill [MiB [ROW]]   (default 16 512)
 * Standalone (no loom), x86-64 with AVX only. */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static float row[4096] __attribute__((aligned(64)));

enum { STREAM, REP_STOS, VECTOR, ORDINARY };

static double pass(float *c, size_t n, size_t per_row, int mode)
{
    __m256 v = _mm256_set1_ps(1.0f);
    double t0 = now();
    for (size_t i = 0; i < n; i += per_row) {
        if (mode == REP_STOS || mode == ORDINARY) {
            void *d = row;
            size_t q = per_row / 2; /* 8-byte words */
            __asm__ volatile("rep stosq" : "+D"(d), "+c"(q) : "a"(0) : "memory");
        } else if (mode == VECTOR) {
            float *d = row;
            for (size_t j = 0; j < per_row; j += 8) {
                _mm256_storeu_ps(d + j, _mm256_setzero_ps());
                __asm__("" : "+r"(d));
            }
        }
        __asm__ volatile("" ::: "memory");
        for (size_t j = 0; j < per_row; j += 8) {
            if (mode == ORDINARY)
                _mm256_store_ps(c + i + j, v);
            else
                _mm256_stream_ps(c + i + j, v);
        }
    }
    _mm_sfence();
    return now() - t0;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 16, rowb = argc > 2 ? strtoul(argv[2], NULL, 10) : 512;
    if (mib < 1 || rowb < 64 || rowb % 64 || rowb > sizeof row) {
        fprintf(stderr, "usage: %s [MiB >= 1 [ROW bytes: a multiple of 64, at most %zu]]\n", argv[0], sizeof row);
        return 2;
    }
    size_t n = (mib << 20) / 4, per_row = rowb / 4;
    n -= n % per_row;
    float *c = aligned_alloc(64, n * 4);
    if (!c) {
        fprintf(stderr, "%s: cannot allocate %zu MiB\n", argv[0], mib);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        c[i] = 0;
    static const char *const NAME[] = {"stream", "stream + rep stos fill", "stream + vector fill",
                                       "ordinary + rep stos fill"};
    printf("%zu MiB in rows of %zu bytes, one thread, best of 20 passes\n", mib, rowb);
    for (int mode = STREAM; mode <= ORDINARY; mode++) {
        double best = 1e30;
        for (int r = 0; r < 20; r++) {
            double t = pass(c, n, per_row, mode);
            best = t < best ? t : best;
        }
        printf("  %-26s %7.2f ns a line (%.1f GB/s)\n", NAME[mode], best * 1e9 / (double)(n / 16),
               (double)n * 4 / best * 1e-9);
    }
    free(c);
    return 0;
}
