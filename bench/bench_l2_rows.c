/* Standalone (no loom): what a line served by L2 costs when a kernel reads
 * rows at random (SpMM's and SDDMM's gathered rows of B) against reading
 * the same working set in order -- the sixtieth session's evidence on the
 * level-bandwidth bound (runtime/sim/sim_machine.h "Level bandwidth";
 * docs/simulator.md "Model 61", the session's probes).
 *
 * A working set of S KiB is read as fragments of L lines (L * 64 bytes,
 * aligned to the fragment), the fragments in a random order (xorshift64,
 * a fixed seed; not a multiplicative hash, whose order modulo a power of
 * two is a constant stride) or in address order, each line as two 32-byte
 * vector loads added into 8 independent accumulators (no dependence from
 * one fragment to the next, so the time is the loads' and the lines'
 * transfers, not a chain).  Prints ns and cycles a line (cycles at the
 * GHz given, default 3.453, the Zen 5 host's calibrated clock) and bytes
 * a cycle, the best of 5 runs, for L = 4, 8, 16, 64, 128, 256 lines in
 * random order and for L = 8 in address order, at S = 256 KiB (in L2 on
 * the hosts loom has met: L2 of 1-2 MiB) and S = 24 KiB (in L1).
 *
 * usage: bench_l2_rows [GHz]  (about 3 seconds) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef float v8 __attribute__((vector_size(32)));

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ns a line over n fragments of L lines at base + idx[i] * L lines */
__attribute__((noinline)) static double pass(const float *base, const int *idx, int64_t n, int L, v8 *out)
{
    v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
    double t0 = now();
    for (int64_t i = 0; i < n; i++) {
        const float *p = base + (int64_t)idx[i] * 16 * L;
        for (int l = 0; l < L; l += 4) {
            const v8 *q = (const v8 *)(p + 16 * l);
            a0 += q[0], a1 += q[1], a2 += q[2], a3 += q[3];
            a4 += q[4], a5 += q[5], a6 += q[6], a7 += q[7];
        }
    }
    double t = now() - t0;
    *out += a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    return t * 1e9 / ((double)n * L);
}

static int run(int64_t kib, int L, int in_order, double ghz)
{
    int64_t bytes = kib * 1024, nf = bytes / (64 * L), n = 1 << 16;
    float *B = aligned_alloc(4096, (size_t)bytes);
    int *idx = malloc(sizeof(int) * (size_t)n);
    if (!B || !idx || nf < 1) {
        fprintf(stderr, "bench_l2_rows: out of memory\n");
        free(B), free(idx);
        return 1;
    }
    for (int64_t i = 0; i < bytes / 4; i++)
        B[i] = 1e-3f * (float)(i % 5);
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 (Marsaglia 2003) */
        idx[i] = in_order ? (int)(i % nf) : (int)(x % (uint64_t)nf);
    }
    v8 sink = {0};
    double best = 1e30;
    for (int r = 0; r < 6; r++) { /* the first warms */
        double t = pass(B, idx, n, L, &sink);
        if (r && t < best)
            best = t;
    }
    printf("%4ld KiB  %3d lines a fragment  %-9s  %.3f ns a line  %.2f cycles  %.1f bytes a cycle  (check %g)\n",
           (long)kib, L, in_order ? "in order" : "random", best, best * ghz, 64 / (best * ghz), (double)sink[0]);
    free(B), free(idx);
    return 0;
}

int main(int argc, char **argv)
{
    double ghz = argc > 1 ? atof(argv[1]) : 3.453;
    if (!(ghz > 0.1 && ghz < 10)) {
        fprintf(stderr, "bench_l2_rows: GHz must be between 0.1 and 10, not %s\n", argv[1]);
        return 2;
    }
    static const int frags[] = {4, 8, 16, 64, 128, 256};
    int bad = 0;
    for (int i = 0; i < 6; i++)
        bad |= run(256, frags[i], 0, ghz);
    bad |= run(256, 8, 1, ghz);
    bad |= run(24, 4, 0, ghz);
    bad |= run(24, 8, 0, ghz);
    return bad;
}
