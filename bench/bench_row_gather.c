/* Standalone (no loom): what a row gathered from memory costs beside a
 * gathered element (docs/simulator.md "Model 43").  Random rows of W floats
 * from a 256 MiB array, one thread, timed two ways:
 *   element  one float a row (s += B[idx[i] * W]): the shape of loom
 *            calibrate's memory gather, whose time a miss is the
 *            calibrated target's memory.miss_cost_ns
 *   row      the whole row, multiplied and added into 8 vector
 *            accumulators of 16 floats held in registers (SpMM's row of B
 *            at F = W, no output; GCC's vector extension, two halves a
 *            vector on an AVX2 host)
 * and prints ns a row and a line.  The simulator charges a row's first
 * three lines from memory a miss cost each and the rest the core's
 * memory bandwidth (sim.h "Cycles", memory; model 7's trained streams):
 * the row's time over that charge is the scale model 43 reads.
 *
 * usage: bench_row_gather [W]  (default 128; a multiple of 16, at most 1024; ~2 s) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef float vf __attribute__((vector_size(64)));

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int W = argc > 1 ? atoi(argv[1]) : 128;
    if (W < 16 || W % 16 || W > 1024) {
        fprintf(stderr, "bench_row_gather: W must be a multiple of 16 from 16 to 1024\n");
        return 2;
    }
    size_t nrows = ((size_t)256 << 20) / ((size_t)W * 4);
    int n = 2000000;
    float *B = aligned_alloc(64, nrows * (size_t)W * 4);
    int *idx = malloc((size_t)n * sizeof *idx);
    if (!B || !idx) {
        fprintf(stderr, "bench_row_gather: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < nrows * (size_t)W; i++)
        B[i] = 1.0f;
    srand(7);
    for (int i = 0; i < n; i++)
        idx[i] = (int)((size_t)rand() % nrows);
    double best_e = 1e30, best_r = 1e30;
    float s = 0, z = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now();
        for (int i = 0; i < n; i++)
            s += B[(size_t)idx[i] * (size_t)W];
        double te = (now() - t0) / n * 1e9;
        vf acc[8] = {{0}};
        t0 = now();
        for (int i = 0; i < n; i++) {
            const vf *r = (const vf *)(B + (size_t)idx[i] * (size_t)W);
            float a = 0.5f + (float)i * 1e-9f;
            for (int j = 0; j < W / 16; j++) /* accumulators in registers, as loom's row workspace */
                acc[j & 7] += a * r[j];
        }
        double tr = (now() - t0) / n * 1e9;
        for (int j = 0; j < 8; j++)
            for (int l = 0; l < 16; l++)
                z += acc[j][l];
        best_e = te < best_e ? te : best_e;
        best_r = tr < best_r ? tr : best_r;
    }
    printf("bench_row_gather: %zu rows of %d floats (%zu MiB), %d random rows, one thread, best of 3\n", nrows, W,
           nrows * (size_t)W * 4 >> 20, n);
    printf("element  %.2f ns a row (one float)\n", best_e);
    printf("row      %.2f ns a row, %.2f ns a line (%d lines)\n", best_r, best_r / (W / 16), W / 16);
    printf("row / element %.2f (checksum %g)\n", best_r / best_e, (double)(s + z));
    free(B);
    free(idx);
    return 0;
}
