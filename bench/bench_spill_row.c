/* Standalone (no loom): simulator model 37's evidence (docs/simulator.md
 * "Model 37").  SpMM's row workspace of W floats accumulated over a row's
 * stored entries, written as loom's lowering writes it (a float array the
 * vectorized loop updates, `omp simd`), against the same row as two passes
 * of W / 2.  Built for 256-bit vectors (-mno-avx512f, as loom builds AVX2
 * kernels) W = 128 is 16 ymm: GCC 12 unrolls the loop completely and keeps
 * all but 2 in registers, a reload, an FMA and a store of the other 2 per
 * stored entry -- the chain a spilled accumulator waits on.  B's rows are
 * 8 and in L1 by default: the time is the core's alone, not the memory's.
 * With an argument B has that many rows, each stored entry's row drawn at
 * random (xorshift64, a fixed seed): 496 rows (254 KB, mbeacxc's B at F = 128)
 * put them in L2, where the one pass takes 1.08-1.09x the two (1.16-1.20x
 * in L1; Zen 5, 2026-12-05: docs/simulator.md "Model 61").  The forms are
 * bench/spmm_row_forms.h's, over one CSR row of n stored entries;
 * bench_row_order runs them over a real matrix's rows.
 * Prints ns per stored entry for one pass of W and for two of W / 2, and
 * their ratio, in 3 rounds (the first warms up).
 *
 * usage: bench_spill_row [rows of B]  (about 2 seconds) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "spmm_row_forms.h"

int main(int argc, char **argv)
{
    const int64_t rows = argc > 1 ? atol(argv[1]) : 8;
    if (rows < 1 || rows > (1 << 20)) {
        fprintf(stderr, "bench_spill_row: rows of B must be 1..%d, not %s\n", 1 << 20, argv[1]);
        return 2;
    }
    const int64_t n = 4096;
    const int reps = 2000;
    float *a = malloc(sizeof(float) * n), *B = aligned_alloc(64, sizeof(float) * (size_t)rows * W);
    int *crd = malloc(sizeof(int) * n);
    float out[W];
    const int pos[2] = {0, (int)n}; /* one row of n stored entries */
    if (!a || !B || !crd)
        return 1;
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int64_t i = 0; i < n; i++) {
        a[i] = 1e-3f * (float)(i % 7);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 (Marsaglia 2003) */
        crd[i] = argc > 1 ? (int)(x % (uint64_t)rows) : (int)(i * 5 % 8);
    }
    for (int64_t i = 0; i < rows * W; i++)
        B[i] = 1.0f;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        for (int it = 0; it < reps; it++)
            one_pass(pos, crd, a, B, out, 1);
        double t1 = now();
        for (int it = 0; it < reps; it++)
            two_passes(pos, crd, a, B, out, 1);
        double t2 = now();
        printf("round %d: ns per stored entry: one pass of %d floats %.3f, two of %d %.3f (ratio %.3f; check %g)\n",
               r, W, (t1 - t0) / (reps * (double)n) * 1e9, W / 2, (t2 - t1) / (reps * (double)n) * 1e9,
               (t1 - t0) / (t2 - t1), out[3]);
    }
    free(a), free(B), free(crd);
    return 0;
}
