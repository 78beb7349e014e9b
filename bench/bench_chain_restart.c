/* Standalone (no loom): simulator model 34's evidence (docs/simulator.md
 * "Model 34").  A segment is L dependent FMAs whose operands are loaded --
 * SDDMM's dot product over a nonzero, unrolled as GCC unrolls it -- and it
 * either restarts from zero (each segment's chain independent of the last)
 * or carries the previous segment's value (one chain through all of them).
 * The carried time is the FMA latency times L; the restarted time shows how
 * many segments the core runs at once.  Prints, per L and vector width, the
 * time per segment in TSC ticks and restarted / carried: 1 means no
 * overlap, 1/k means k segments side by side.
 *
 * usage: bench_chain_restart  (about a second) */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 64
#define ROW_FLOATS 256

#define KERNEL(NAME, VEC, W, LOAD, FMA, MUL, ZERO, SET1, STORE, L)                                        \
    __attribute__((noinline)) static void NAME(int n, const float *q, const float *kv, const int *idx,  \
                                               float *out, int carry)                                  \
    {                                                                                                  \
        VEC c = ZERO();                                                                                \
        for (int i = 0; i < n; i++) {                                                                  \
            const float *kr = kv + (size_t)idx[i] * ROW_FLOATS;                                        \
            VEC m = SET1(out[512 + (i & 7)]);                                                          \
            VEC x = carry ? c : ZERO();                                                                \
            _Pragma("GCC unroll 64") for (int k = 0; k < L; k++)                                       \
                x = FMA(MUL(m, LOAD(q + k * W)), LOAD(kr + k * W), x);                                 \
            STORE(out + (i & 15) * W, x);                                                              \
            c = x;                                                                                     \
        }                                                                                              \
    }

#define AVX2_KERNEL(L)                                                                                     \
    KERNEL(avx2_##L, __m256, 8, _mm256_loadu_ps, _mm256_fmadd_ps, _mm256_mul_ps, _mm256_setzero_ps,      \
           _mm256_set1_ps, _mm256_storeu_ps, L)
AVX2_KERNEL(4)
AVX2_KERNEL(8)
AVX2_KERNEL(16)
AVX2_KERNEL(32)
#ifdef __AVX512F__
#define AVX512_KERNEL(L)                                                                                   \
    KERNEL(avx512_##L, __m512, 16, _mm512_loadu_ps, _mm512_fmadd_ps, _mm512_mul_ps, _mm512_setzero_ps,   \
           _mm512_set1_ps, _mm512_storeu_ps, L)
AVX512_KERNEL(4)
AVX512_KERNEL(8)
AVX512_KERNEL(16)
AVX512_KERNEL(32)
#endif

typedef void (*kernel)(int, const float *, const float *, const int *, float *, int);

static double ticks(kernel f, int n, const float *q, const float *kv, const int *idx, float *out, int carry)
{
    double best = 1e30;
    for (int r = 0; r < 20; r++) {
        uint64_t t0 = __rdtsc();
        f(n, q, kv, idx, out, carry);
        double t = (double)(__rdtsc() - t0) / n;
        best = t < best ? t : best;
    }
    return best;
}

int main(void)
{
    float *q = aligned_alloc(64, 4096 * sizeof(float)), *out = aligned_alloc(64, 4096 * sizeof(float));
    float *kv = aligned_alloc(64, ROWS * ROW_FLOATS * sizeof(float));
    int n = 1 << 16, *idx = malloc((size_t)n * sizeof(int));
    if (!q || !out || !kv || !idx)
        return 1;
    for (int i = 0; i < 4096; i++)
        q[i] = 1e-3f * (float)i, out[i] = 1e-3f;
    for (int i = 0; i < ROWS * ROW_FLOATS; i++)
        kv[i] = 1e-4f * (float)(i % 97);
    srand(1);
    for (int i = 0; i < n; i++)
        idx[i] = rand() % ROWS;
    struct {
        const char *isa;
        int L;
        kernel f;
    } k[] = {{"avx2", 4, avx2_4}, {"avx2", 8, avx2_8}, {"avx2", 16, avx2_16}, {"avx2", 32, avx2_32},
#ifdef __AVX512F__
             {"avx512", 4, avx512_4}, {"avx512", 8, avx512_8}, {"avx512", 16, avx512_16}, {"avx512", 32, avx512_32},
#endif
    };
    printf("restarted FMA chains with loaded operands (TSC ticks per segment, min of 20 runs of %d)\n", n);
    printf("%-7s %3s %10s %10s %18s\n", "isa", "L", "carried", "restarted", "restarted/carried");
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        double c = ticks(k[i].f, n, q, kv, idx, out, 1), r = ticks(k[i].f, n, q, kv, idx, out, 0);
        printf("%-7s %3d %10.2f %10.2f %18.3f\n", k[i].isa, k[i].L, c, r, r / c);
    }
    return 0;
}
