/* What back-to-back runs leave in the last cache level (issue 29; the lead
 * in docs/simulator.md "Model 88 and what the other errors are made of"):
 * a buffer of D bytes gathered one float a line in a random order, three
 * passes in a row after a 256 MiB sweep that empties the
 * caches; each pass's time a line against the first (cold) and against a
 * pass over 2 MiB already cached (warm).  kept = (cold - pass) / (cold -
 * warm) is the share of the buffer's lines the last level held when the
 * pass began: the second pass's after one run, the third's in the steady
 * state of back-to-back runs.  One thread, the best of 5 tries a size.
 * Build and run: make -C bench llc-keep. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static uint64_t rng = 88172645463325252ull;
static uint64_t xr(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static volatile float sink;
static double pass(const float *b, const uint32_t *idx, size_t n)
{
    double t0 = now();
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) { s0 += b[(size_t)idx[i] * 16]; s1 += b[(size_t)idx[i + 1] * 16]; s2 += b[(size_t)idx[i + 2] * 16]; s3 += b[(size_t)idx[i + 3] * 16]; }
    for (; i < n; i++) s0 += b[(size_t)idx[i] * 16];
    sink = s0 + s1 + s2 + s3;
    return (now() - t0) / (double)n;
}
static void sweep(float *big, size_t n) { for (size_t i = 0; i < n; i += 16) big[i] += 1; }
int main(void)
{
    size_t bign = (size_t)256 << 20 >> 2;
    float *big = aligned_alloc(64, bign * 4);
    memset(big, 0, bign * 4);
    double mbs[] = {2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48};
    printf("# D_MiB  cold_ns  second_ns  third_ns  warm2MiB_ns  kept2  kept3\n");
    for (size_t k = 0; k < sizeof mbs / sizeof *mbs; k++) {
        size_t bytes = (size_t)(mbs[k] * (1 << 20)), lines = bytes / 64;
        float *b = aligned_alloc(64, bytes);
        memset(b, 1, bytes);
        uint32_t *idx = malloc(lines * 4);
        for (size_t i = 0; i < lines; i++) idx[i] = (uint32_t)i;
        for (size_t i = lines - 1; i > 0; i--) { size_t j = xr() % (i + 1); uint32_t t = idx[i]; idx[i] = idx[j]; idx[j] = t; }
        double cold = 1e9, second = 1e9, third = 1e9;
        for (int rep = 0; rep < 5; rep++) {
            sweep(big, bign);
            double c = pass(b, idx, lines), s = pass(b, idx, lines), t = pass(b, idx, lines);
            if (c < cold) cold = c;
            if (s < second) second = s;
            if (t < third) third = t;
        }
        /* warm: a 2 MiB prefix of the same order, passed over until cached */
        size_t wl = ((size_t)2 << 20) / 64;
        uint32_t *widx = malloc(wl * 4);
        for (size_t i = 0; i < wl; i++) widx[i] = (uint32_t)(xr() % wl);
        double warm = 1e9;
        for (int rep = 0; rep < 8; rep++) { double w = pass(b, widx, wl); if (w < warm) warm = w; }
        printf("%7.0f  %7.2f  %9.2f  %8.2f  %11.2f  %5.2f  %5.2f\n", mbs[k], cold * 1e9, second * 1e9, third * 1e9, warm * 1e9,
               (cold - second) / (cold - warm), (cold - third) / (cold - warm));
        fflush(stdout);
        free(b); free(idx); free(widx);
    }
    return 0;
}
