/* loom benchmarks: measured roofline (see roofline.h).
 *
 * Bandwidth: STREAM's triad (McCalpin), a[i] = b[i] + s * c[i], double,
 * arrays first-touched by the threads that use them (static schedule), best
 * of several runs.  Peak: a loop of independent FMAs per thread, as many
 * chains as fit the vector register file (latency 4 x 2 FMA ports needs >= 8
 * in flight), AVX-512 when the CPU has it (detected at run time), else
 * AVX2 with FMA, else scalar; checked against a second loop written in
 * assembly.
 */
#include "roofline.h"
#include "../dsl/ir/limits.h"

#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int last_threads;

int loom_bench_roofline_threads(void) { return last_threads; }

/* ---- bandwidth ------------------------------------------------------ */

static double triad_gbs(int threads)
{
    const size_t n = (size_t)LOOM_BENCH_TRIAD_MIB * 1024 * 1024 / sizeof(double);
    double *a = NULL, *b = NULL, *c = NULL;
    if (posix_memalign((void **)&a, 4096, n * sizeof(double)) ||
        posix_memalign((void **)&b, 4096, n * sizeof(double)) ||
        posix_memalign((void **)&c, 4096, n * sizeof(double))) {
        free(a);
        free(b);
        free(c);
        return -1.0;
    }
    /* First touch by the same static partition the triad uses. */
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = 1.0 + (double)(i & 7);
        c[i] = 2.0;
    }
    const double s = 3.0;
    double best = 1e30;
    const int runs = 8;
    for (int r = 0; r < runs; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static) num_threads(threads)
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
        double t = omp_get_wtime() - t0;
        if (r > 0 && t < best) /* the first run is a warm-up */
            best = t;
    }
    /* Keep the result alive and sanity-check it. */
    volatile double sink = a[n / 2] + a[n - 1];
    (void)sink;
    free(a);
    free(b);
    free(c);
    return 3.0 * (double)n * sizeof(double) / best / 1e9;
}

/* ---- FMA peak ------------------------------------------------------- */

/* The vector unit is detected at run time (loom_limits_host, dsl/ir/limits.h:
 * cpuid through __builtin_cpu_supports), not from -march macros, and each
 * loop is compiled for its ISA with a target attribute, so one binary
 * measures the peak of the machine it runs on (LOOM_HOST_ISA=avx2 measures
 * the AVX2 peak of an AVX-512 machine).
 *
 * The number of independent accumulator chains fits the register file: an
 * FMA has a latency of 4 cycles on the x86 cores here (Intel since Skylake,
 * AMD Zen 2-4) and two FMA pipes, so >= 8 chains keep both busy; the two
 * constants take two more registers.  AVX-512 has 32 zmm registers: 16
 * chains + 2.  AVX2 has 16 ymm registers: 12 chains + 2 (16 + 2 = 18 spilled
 * to the stack, and the loop then measured 64 of ~200 GFLOP/s on a Zen 3:
 * issue 12).  Agner Fog, "Instruction tables" (FMA latency/throughput). */
enum { ISA_SCALAR, ISA_AVX2, ISA_AVX512 };

static int fma_isa(void)
{
    loom_limits l = loom_limits_host();
    if (!l.fma)
        return ISA_SCALAR;
    return l.vector_lanes >= 16 ? ISA_AVX512 : l.vector_lanes == 8 ? ISA_AVX2 : ISA_SCALAR;
}

const char *loom_bench_roofline_isa(void)
{
    static const char *const names[] = {"scalar", "AVX2", "AVX-512"};
    return names[fma_isa()];
}

int loom_bench_roofline_vector_bits(void)
{
    int isa = fma_isa();
    return isa == ISA_AVX512 ? 512 : isa == ISA_AVX2 ? 256 : 32;
}

int loom_bench_roofline_registers(void) { return loom_limits_host().vector_registers; }

#define NACC512 16
#define NACC256 12
#define NACC_SCALAR 12
#define ACC16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define ACC12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

int loom_bench_roofline_chains(void)
{
    int isa = fma_isa();
    return isa == ISA_AVX512 ? NACC512 : isa == ISA_AVX2 ? NACC256 : NACC_SCALAR;
}

static int fma_lanes(void)
{
    int isa = fma_isa();
    return isa == ISA_AVX512 ? 16 : isa == ISA_AVX2 ? 8 : 1;
}

/* Run `iters` iterations of the chains' independent vector FMAs; returns a
 * value depending on every accumulator so nothing is optimised away.  The
 * accumulators are named variables (an array would live on the stack), and
 * an empty asm per accumulator and iteration keeps the compiler from folding
 * iterations. */
#define FMA_LOOP(NAME, ATTR, VEC, SET1, FMADD, ADD, CON, LIST)                                                      \
    ATTR static float NAME(long iters, float seed)                                                                 \
    {                                                                                                               \
        const VEC x = SET1(0.999999f), y = SET1(1e-6f);                                                             \
        LIST(DECL_##NAME)                                                                                           \
        for (long i = 0; i < iters; i++) {                                                                          \
            LIST(STEP_##NAME)                                                                                       \
            LIST(KEEP_##NAME)                                                                                       \
        }                                                                                                           \
        VEC s = SET1(0.0f);                                                                                         \
        LIST(SUM_##NAME)                                                                                            \
        float out[sizeof(VEC) / sizeof(float)];                                                                     \
        memcpy(out, &s, sizeof out);                                                                                \
        float t = 0;                                                                                                \
        for (size_t k = 0; k < sizeof out / sizeof out[0]; k++)                                                     \
            t += out[k];                                                                                            \
        return t;                                                                                                   \
    }
#define DECL_fma_loop512(j) __m512 a##j = _mm512_set1_ps(seed + (float)(j));
#define STEP_fma_loop512(j) a##j = _mm512_fmadd_ps(a##j, x, y);
#define KEEP_fma_loop512(j) __asm__ volatile("" : "+v"(a##j));
#define SUM_fma_loop512(j) s = _mm512_add_ps(s, a##j);
#define DECL_fma_loop256(j) __m256 a##j = _mm256_set1_ps(seed + (float)(j));
#define STEP_fma_loop256(j) a##j = _mm256_fmadd_ps(a##j, x, y);
#define KEEP_fma_loop256(j) __asm__ volatile("" : "+x"(a##j));
#define SUM_fma_loop256(j) s = _mm256_add_ps(s, a##j);
FMA_LOOP(fma_loop512, __attribute__((target("avx512f"))), __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps,
         "v", ACC16)
FMA_LOOP(fma_loop256, __attribute__((target("avx2,fma"))), __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps,
         "x", ACC12)

static float fma_loop_scalar(long iters, float seed)
{
    float acc[NACC_SCALAR];
    for (int j = 0; j < NACC_SCALAR; j++)
        acc[j] = seed + (float)j;
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < NACC_SCALAR; j++)
            acc[j] = acc[j] * 0.999999f + 1e-6f;
    float s = 0;
    for (int j = 0; j < NACC_SCALAR; j++)
        s += acc[j];
    return s;
}

static float fma_loop(long iters, float seed)
{
    int isa = fma_isa();
    return isa == ISA_AVX512 ? fma_loop512(iters, seed)
           : isa == ISA_AVX2 ? fma_loop256(iters, seed)
                             : fma_loop_scalar(iters, seed);
}

/* The second, independent measurement: the same throughput from a loop
 * written in assembly (register allocation and instruction selection not the
 * compiler's): 12 chains of vfmadd231ps on registers 0-11, the operands in
 * registers 14 and 15 (16 registers, so it fits AVX2 and AVX-512 alike);
 * each iteration is 12 FMAs x lanes x 2 FLOP.  Without vector FMA there is
 * no such loop: loom_bench_roofline_fma_asm returns 0. */
#define ASM_CHAINS 12
#define ASM_FMA_LOOP(R)                                                                                              \
    __asm__ volatile("vxorps " R(14) ", " R(14) ", " R(14) "\n\t"                                                     \
                     "vxorps " R(15) ", " R(15) ", " R(15) "\n\t"                                                     \
                     "vmovaps " R(14) ", " R(0) "\n\t"                                                              \
                     "vmovaps " R(14) ", " R(1) "\n\t"                                                              \
                     "vmovaps " R(14) ", " R(2) "\n\t"                                                              \
                     "vmovaps " R(14) ", " R(3) "\n\t"                                                              \
                     "vmovaps " R(14) ", " R(4) "\n\t"                                                              \
                     "vmovaps " R(14) ", " R(5) "\n\t"                                                              \
                     "vmovaps " R(14) ", " R(6) "\n\t"                                                              \
                     "vmovaps " R(14) ", " R(7) "\n\t"                                                              \
                     "vmovaps " R(14) ", " R(8) "\n\t"                                                              \
                     "vmovaps " R(14) ", " R(9) "\n\t"                                                              \
                     "vmovaps " R(14) ", " R(10) "\n\t"                                                             \
                     "vmovaps " R(14) ", " R(11) "\n\t"                                                             \
                     "1:\n\t"                                                                                       \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(0) "\n\t"                                               \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(1) "\n\t"                                               \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(2) "\n\t"                                               \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(3) "\n\t"                                               \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(4) "\n\t"                                               \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(5) "\n\t"                                               \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(6) "\n\t"                                               \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(7) "\n\t"                                               \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(8) "\n\t"                                               \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(9) "\n\t"                                               \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(10) "\n\t"                                              \
                     "vfmadd231ps " R(15) ", " R(14) ", " R(11) "\n\t"                                              \
                     "dec %0\n\t"                                                                                   \
                     "jnz 1b\n\t"                                                                                   \
                     : "+r"(iters)                                                                                  \
                     :                                                                                              \
                     : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
                       "xmm11", "xmm14", "xmm15")
#define ZMM(n) "%%zmm" #n
#define YMM(n) "%%ymm" #n
__attribute__((target("avx512f"))) static void fma_asm_loop512(long iters) { ASM_FMA_LOOP(ZMM); }
__attribute__((target("avx2,fma"))) static void fma_asm_loop256(long iters) { ASM_FMA_LOOP(YMM); }

static void fma_asm_loop(long iters)
{
    int isa = fma_isa();
    if (isa == ISA_AVX512)
        fma_asm_loop512(iters);
    else if (isa == ISA_AVX2)
        fma_asm_loop256(iters);
}

/* Best-of-3 FLOP rate of one of the two loops on `threads` threads (a
 * shorter first run warms the cores up).  ~0.1 s per run at 2-3 GHz. */
static double fma_gflops_of(int threads, int use_asm)
{
    const long iters = 16L * 1000 * 1000;
    double best = 1e30;
    volatile float sink = 0;
    for (int r = 0; r < 4; r++) {
        double t0 = 0, t = 0;
        float sum = 0;
        long n = r == 0 ? iters / 4 : iters;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
        {
#pragma omp barrier
#pragma omp master
            t0 = omp_get_wtime();
            if (use_asm)
                fma_asm_loop(n);
            else
                sum += fma_loop(n, (float)omp_get_thread_num());
#pragma omp barrier
#pragma omp master
            t = omp_get_wtime() - t0;
        }
        sink += sum;
        if (r > 0 && t < best)
            best = t;
    }
    (void)sink;
    double chains = use_asm ? ASM_CHAINS : loom_bench_roofline_chains();
    double flops = 2.0 * fma_lanes() * chains * (double)iters * threads;
    return flops / best / 1e9;
}

static double fma_gflops(int threads) { return fma_gflops_of(threads, 0); }

double loom_bench_roofline_fma_asm(int threads)
{
    if (threads <= 0)
        threads = omp_get_max_threads();
    if (fma_isa() == ISA_SCALAR)
        return 0.0;
    return fma_gflops_of(threads, 1);
}

int loom_bench_roofline(int threads, double *bw_gbs, double *peak_gflops)
{
    if (threads <= 0)
        threads = omp_get_max_threads();
    last_threads = threads;
    int rc = 0;
    if (bw_gbs) {
        double bw = triad_gbs(threads);
        if (bw < 0) {
            *bw_gbs = 0;
            rc = -1;
        } else {
            *bw_gbs = bw;
        }
    }
    if (peak_gflops)
        *peak_gflops = fma_gflops(threads);
    return rc;
}

#ifdef LOOM_ROOFLINE_MAIN
int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    double bw = 0, peak = 0;
    if (loom_bench_roofline(threads, &bw, &peak) != 0) {
        fprintf(stderr, "roofline: cannot allocate 3 x %d MiB for the triad\n", LOOM_BENCH_TRIAD_MIB);
        return 1;
    }
    int t = loom_bench_roofline_threads();
    double check = loom_bench_roofline_fma_asm(t);
    printf("roofline: bandwidth %.1f GB/s (triad, double, 3 x %d MiB, %d thread%s), "
           "fp32 FMA peak %.1f GFLOP/s (%d thread%s, %s: %d-bit vectors, %d vector registers, %d chains)\n",
           bw, LOOM_BENCH_TRIAD_MIB, t, t == 1 ? "" : "s", peak, t, t == 1 ? "" : "s",
           loom_bench_roofline_isa(), loom_bench_roofline_vector_bits(), loom_bench_roofline_registers(),
           loom_bench_roofline_chains());
    if (check > 0)
        printf("roofline: independent check, assembly FMA loop (%d chains): %.1f GFLOP/s, "
               "peak/check %.3f%s\n", ASM_CHAINS, check, peak / check,
               peak / check < 0.9 || peak / check > 1.1 ? " (off by over 10%: a loaded machine?)" : "");
    else
        printf("roofline: no vector FMA in this build: no independent check\n");
    return 0;
}
#endif
