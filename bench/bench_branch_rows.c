/* loom bench (issue 29, simulator model 8 "Branch memory", runtime/sim/sim.h):
 * does a repeated kernel pay for its row loops' exits?
 *
 * A CSR-shaped row loop -- N rows of random length 1..16, a counted inner
 * loop whose body is one integer add (1-cycle chain), so a mispredicted
 * exit is not hidden behind a long dependence chain -- timed over many
 * back-to-back runs on the same data (as loom's runner measures), against
 * the same rows sorted by length (whose exits any predictor gets right).
 * Where the predictor learns the repeated sequence, the two take the same
 * time; where it cannot hold it, the random order pays about a miss per
 * row.  Also the same rows with SpMM F = 16's body (one 16-float FMA chain
 * a nonzero, the row in a register workspace stored once a row), where a
 * miss hides behind the chain, and with the body GCC 12 makes of GCN2's
 * T1 = X W1 (simulator model 59, runtime/sim/sim.h "Independent chains"):
 * the same FMA chain, the row kept in a register but stored to C every
 * nonzero (an intermediate accumulated in place, no workspace), and that
 * body in the form loom prints such a loop since the sixty-eighth session
 * (an offset from the row's start: GCC keeps a byte offset, not a scaled
 * index; runtime/lower/codegen.c accumulating_position_loop).
 *
 * Usage: build/bench/bench_branch_rows [ROWS ...]   (default 2708 20000 80000)
 * Prints cycles per row (integer body) and per nonzero (the F = 16 bodies)
 * at the clock it measures (dependent adds), one thread.  Standalone: no
 * loom. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int32_t *pos, *crd;
static float *val, *B, *C;
static int n;

__attribute__((noinline)) static long rows_int(void)
{
    long s = 0;
    for (int i = 0; i < n; i++) {
        long r = 0;
        for (int p = pos[i], pe = pos[i + 1]; p < pe; p++) {
            __asm__("");
            r += crd[p];
        }
        s ^= r;
    }
    return s;
}

__attribute__((noinline)) static void rows_f16(void)
{
    for (int64_t i = 0; i < n; i++) {
        float ws[16] = {0};
        for (int64_t p = pos[i], pe = pos[i + 1]; p < pe; p++) {
            int64_t k = crd[p];
            __asm__("");
#pragma omp simd
            for (int f = 0; f < 16; f++)
                ws[f] = ws[f] + val[p] * B[k * 16 + f];
        }
#pragma omp simd
        for (int f = 0; f < 16; f++)
            C[i * 16 + f] = ws[f];
    }
}

/* GCN2's T1 = X W1 as loom emits it without a cache write: C's row is
 * loaded once a row, kept in a register across the nonzeros and stored
 * every nonzero (GCC 12 -O3: a vfmadd231ps and a vmovups a nonzero);
 * the sums grow from run to run, which changes no instruction. */
__attribute__((noinline)) static void rows_f16_stored(void)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = pos[i], pe = pos[i + 1]; p < pe; p++) {
            int64_t k = crd[p];
            __asm__("");
#pragma omp simd
            for (int f = 0; f < 16; f++)
                C[i * 16 + f] = C[i * 16 + f] + val[p] * B[k * 16 + f];
        }
}

/* the same, the positions counted as an offset from the row's start */
__attribute__((noinline)) static void rows_f16_stored_offset(void)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t p_lo = pos[i], p_len = pos[i + 1] - p_lo, p_at = 0; p_at < p_len; p_at++) {
            int64_t p = p_lo + p_at;
            int64_t k = crd[p];
            __asm__("");
#pragma omp simd
            for (int f = 0; f < 16; f++)
                C[i * 16 + f] = C[i * 16 + f] + val[p] * B[k * 16 + f];
        }
}

static double ghz(void)
{
    long reps = 50000000;
    uint64_t x = 0;
    double t0 = now();
    for (long i = 0; i < reps; i++)
        __asm__ volatile("add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0" : "+r"(x));
    return 4.0 * (double)reps / (now() - t0) / 1e9;
}

static void run(int rows, int sorted, double g)
{
    n = rows;
    int *deg = malloc(sizeof(int) * (size_t)n);
    srand(1);
    long ne = 0;
    for (int i = 0; i < n; i++) {
        deg[i] = 1 + rand() % 16;
        ne += deg[i];
    }
    if (sorted) { /* counting sort: the same lengths, ascending */
        int cnt[17] = {0}, q = 0;
        for (int i = 0; i < n; i++)
            cnt[deg[i]]++;
        for (int d = 0; d <= 16; d++)
            while (cnt[d]--)
                deg[q++] = d;
    }
    pos = calloc((size_t)n + 1, sizeof *pos);
    for (int i = 0; i < n; i++)
        pos[i + 1] = pos[i] + deg[i];
    crd = malloc(sizeof *crd * (size_t)ne);
    val = malloc(sizeof *val * (size_t)ne);
    for (long q = 0; q < ne; q++) {
        crd[q] = rand() % n;
        val[q] = 1;
    }
    B = aligned_alloc(64, sizeof *B * 16 * (size_t)n);
    C = aligned_alloc(64, sizeof *C * 16 * (size_t)n);
    for (long q = 0; q < 16L * n; q++)
        B[q] = (float)(q % 7);
    long reps = 50000000L / ne + 1;
    double bi = 1e30, bf = 1e30, bs = 1e30, bo = 1e30;
    long s = 0;
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (long k = 0; k < reps; k++)
            s += rows_int();
        double t = (now() - t0) / (double)reps;
        bi = t < bi ? t : bi;
        t0 = now();
        for (long k = 0; k < reps; k++)
            rows_f16();
        t = (now() - t0) / (double)reps;
        bf = t < bf ? t : bf;
        t0 = now();
        for (long k = 0; k < reps; k++)
            rows_f16_stored();
        t = (now() - t0) / (double)reps;
        bs = t < bs ? t : bs;
        t0 = now();
        for (long k = 0; k < reps; k++)
            rows_f16_stored_offset();
        t = (now() - t0) / (double)reps;
        bo = t < bo ? t : bo;
    }
    printf("%7d rows %-7s (~%ld branches a run): integer body %6.2f cycles/row, F=16 body %5.2f cycles/nonzero, "
           "stored every nonzero %5.2f, as an offset %5.2f%s\n",
           n, sorted ? "sorted" : "random", ne + 2L * n, bi * g * 1e9 / n, bf * g * 1e9 / (double)ne,
           bs * g * 1e9 / (double)ne, bo * g * 1e9 / (double)ne, s == 42 ? " " : "");
    free(deg);
    free(pos);
    free(crd);
    free(val);
    free(B);
    free(C);
}

int main(int argc, char **argv)
{
    int def[] = {2708, 20000, 80000}, nr = argc > 1 ? argc - 1 : 3;
    double g = ghz();
    printf("clock %.2f GHz (dependent adds); best of 7 timings, each over back-to-back runs on the same data\n", g);
    for (int k = 0; k < nr; k++) {
        int rows = argc > 1 ? atoi(argv[k + 1]) : def[k];
        if (rows < 1) {
            fprintf(stderr, "bench_branch_rows: '%s' is not a row count\n", argv[k + 1]);
            return 2;
        }
        run(rows, 0, g);
        run(rows, 1, g);
    }
    return 0;
}
