/* Standalone (no loom): does the core prefetch lines read at a constant
 * stride (simulator model 49, docs/simulator.md "Model 49")?  One thread
 * reads N lines S lines apart, over and over, two ways each in address
 * order (a constant stride) and in a random order of the same lines (the
 * same lines, cache sets and pages, nothing to follow):
 *   chase  a pointer chase, each line holding the next one's address: the
 *          latency a line -- a prefetcher that follows the stride has the
 *          next line in L1 before the chase asks for it
 *   sum    one float a line summed into 8 accumulators, the offsets read
 *          in order from an array: the throughput a line, where the core's
 *          out-of-order window overlaps the misses either way
 * and prints ns a line and the random / strided ratio of each, at strides
 * of 1 to 4,097 lines (powers of two crowd a few cache sets: compare them
 * with their odd neighbours).  loom calibrate's stride_prefetch_lines is
 * the chase at 2, 31, 257 and 4,097 lines over 2,048 lines.  AMD's Software
 * Optimization Guide for Zen 4 and 5 ("L1 Stride Prefetcher": "uses the
 * L1 cache memory access history of individual instructions to fetch
 * additional lines when each access is a constant distance from the
 * previous").
 *
 * usage: bench_stride_lines [N]  (lines, default 2048, a multiple of 8; ~5 s) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double sum_ns(const float *A, const size_t *off, long n, long reps, float *sink)
{
    float s[8] = {0};
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        for (long k = 0; k < reps; k++)
            for (long i = 0; i < n; i += 8)
                for (int j = 0; j < 8; j++)
                    s[j] += A[off[i + j]];
        double t = (now() - t0) / ((double)reps * (double)n);
        if (t < best)
            best = t;
    }
    for (int j = 0; j < 8; j++)
        *sink += s[j];
    return best * 1e9;
}

static double chase_ns(char *mem, const size_t *off, long n, long steps, float *sink)
{
    for (long i = 0; i < n; i++)
        *(void **)(mem + off[i] * 4) = mem + off[(i + 1) % n] * 4;
    void *p = mem + off[0] * 4;
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        for (long s = 0; s < steps; s++)
            p = *(void **)p;
        double t = (now() - t0) / (double)steps;
        if (t < best)
            best = t;
    }
    *sink += (float)((uintptr_t)p & 1);
    return best * 1e9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2048;
    if (n < 64 || n % 8 || n > (1L << 14)) {
        fprintf(stderr, "bench_stride_lines: N must be a multiple of 8 from 64 to 16384\n");
        return 2;
    }
    static const long strides[] = {1, 2, 3, 16, 31, 32, 33, 257, 4097};
    int ns = (int)(sizeof strides / sizeof strides[0]);
    size_t span = ((size_t)n * 4097 * 64 + 4095) / 4096 * 4096; /* the largest stride's; only read lines are touched */
    char *mem = aligned_alloc(4096, span);
    size_t *off = malloc((size_t)n * sizeof *off), *perm = malloc((size_t)n * sizeof *perm);
    if (!mem || !off || !perm) {
        fprintf(stderr, "bench_stride_lines: out of memory\n");
        return 1;
    }
    srand(1);
    float sink = 0;
    long reps = 20000000 / n + 1;
    printf("# %ld lines, one thread; ns a line, the best of 5 timings\n", n);
    printf("%-8s %10s %10s %7s %10s %10s %7s\n", "stride", "chase-str", "chase-rnd", "rnd/str", "sum-str", "sum-rnd",
           "rnd/str");
    for (int k = 0; k < ns; k++) {
        long S = strides[k];
        for (long i = 0; i < n; i++)
            off[i] = perm[i] = (size_t)i * (size_t)S * 16; /* in floats */
        for (long i = n - 1; i > 0; i--) {
            long j = rand() % (i + 1);
            size_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (long i = 0; i < n; i++)
            ((float *)mem)[off[i] + 8] = (float)(i & 7); /* the summed float, beside the chase's pointer */
        double cs = chase_ns(mem, off, n, 4000000, &sink), cr = chase_ns(mem, perm, n, 4000000, &sink);
        for (long i = 0; i < n; i++)
            off[i] += 8, perm[i] += 8;
        double ss = sum_ns((const float *)mem, off, n, reps, &sink), sr = sum_ns((const float *)mem, perm, n, reps, &sink);
        printf("%-8ld %10.3f %10.3f %7.2f %10.3f %10.3f %7.2f\n", S, cs, cr, cr / cs, ss, sr, sr / ss);
    }
    if (sink == 1234.5f)
        printf("#\n");
    free(mem);
    free(off);
    free(perm);
    return 0;
}
