/* Standalone (no loom; x86-64 with AVX-512F): how many loads of each kind
 * the core's load path takes a cycle, from L1 -- the evidence for the
 * seventy-sixth session's probe of 512-bit loads on Zen 4 (docs/simulator.md
 * "Model 89").  Each test runs 8 independent instructions of one kind (or a
 * mix) over a 16 KiB buffer, 160,000 times, the best of 20 runs; the clock
 * is the time of a dependent FMA chain, taken as 4 cycles an FMA (Zen 4/5,
 * Sapphire Rapids: Agner Fog's instruction tables), so the figures are in
 * core cycles, not TSC ticks.
 *
 * On the Zen 4 host of 2026-12-07 (AVX-512 on 256-bit halves): a 512-bit load
 * 1.05 cycles, a 256-bit one 0.50, a 512-bit broadcast from memory 1.00 and
 * mixed with 512-bit loads 0.99 each, an FMA with a 512-bit memory operand
 * 1.05, a 32-bit general-purpose load 0.40: a 512-bit load takes the whole
 * path a cycle, two 256-bit loads share it.
 *
 * usage: load_path  (about a second) */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <x86intrin.h>

#ifndef __AVX512F__
int main(void)
{
    puts("load_path: needs AVX-512F (cc -march=native on this host has none)");
    return 0;
}
#else

#include "fma_clock.h"

static float buf[4096] __attribute__((aligned(64)));

#define REPS 20000
#define BLOCKS 8

/* ticks of one instruction of asm block INS (8 instructions, base in %0) */
#define TEST(NAME, INS)                                                                                      \
    static double NAME(void)                                                                                 \
    {                                                                                                        \
        double best = 1e30;                                                                                  \
        for (int r = 0; r < 20; r++) {                                                                       \
            uint64_t t0 = __rdtsc();                                                                         \
            for (int it = 0; it < REPS; it++) {                                                              \
                const float *p = buf;                                                                        \
                for (int j = 0; j < BLOCKS; j++, p += 128)                                                   \
                    __asm__ volatile(INS ::"r"(p)                                                            \
                                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "eax"); \
            }                                                                                                \
            uint64_t t1 = __rdtsc();                                                                         \
            if (t1 - t0 < best)                                                                              \
                best = (double)(t1 - t0);                                                                    \
        }                                                                                                    \
        return best / (REPS * BLOCKS * 8.0);                                                                 \
    }

TEST(zmm_load, "vmovaps (%0),%%zmm0\n vmovaps 64(%0),%%zmm1\n vmovaps 128(%0),%%zmm2\n vmovaps 192(%0),%%zmm3\n"
               "vmovaps 256(%0),%%zmm4\n vmovaps 320(%0),%%zmm5\n vmovaps 384(%0),%%zmm6\n vmovaps 448(%0),%%zmm7")
TEST(ymm_load, "vmovaps (%0),%%ymm0\n vmovaps 32(%0),%%ymm1\n vmovaps 64(%0),%%ymm2\n vmovaps 96(%0),%%ymm3\n"
               "vmovaps 128(%0),%%ymm4\n vmovaps 160(%0),%%ymm5\n vmovaps 192(%0),%%ymm6\n vmovaps 224(%0),%%ymm7")
TEST(zmm_bcast, "vbroadcastss (%0),%%zmm0\n vbroadcastss 64(%0),%%zmm1\n vbroadcastss 128(%0),%%zmm2\n"
                "vbroadcastss 192(%0),%%zmm3\n vbroadcastss 256(%0),%%zmm4\n vbroadcastss 320(%0),%%zmm5\n"
                "vbroadcastss 384(%0),%%zmm6\n vbroadcastss 448(%0),%%zmm7")
TEST(zmm_mix, "vmovaps (%0),%%zmm0\n vbroadcastss 64(%0),%%zmm1\n vmovaps 128(%0),%%zmm2\n vbroadcastss 192(%0),%%zmm3\n"
              "vmovaps 256(%0),%%zmm4\n vbroadcastss 320(%0),%%zmm5\n vmovaps 384(%0),%%zmm6\n"
              "vbroadcastss 448(%0),%%zmm7")
TEST(zmm_fma_mem, "vfmadd231ps (%0),%%zmm8,%%zmm0\n vfmadd231ps 64(%0),%%zmm8,%%zmm1\n vfmadd231ps 128(%0),%%zmm8,%%zmm2\n"
                  "vfmadd231ps 192(%0),%%zmm8,%%zmm3\n vfmadd231ps 256(%0),%%zmm8,%%zmm4\n"
                  "vfmadd231ps 320(%0),%%zmm8,%%zmm5\n vfmadd231ps 384(%0),%%zmm8,%%zmm6\n"
                  "vfmadd231ps 448(%0),%%zmm8,%%zmm7")
TEST(gp_load, "mov (%0),%%eax\n mov 64(%0),%%eax\n mov 128(%0),%%eax\n mov 192(%0),%%eax\n mov 256(%0),%%eax\n"
              "mov 320(%0),%%eax\n mov 384(%0),%%eax\n mov 448(%0),%%eax")

int main(void)
{
    double tick = fma_clock_ticks_per_cycle();
    printf("core cycles an instruction, from L1 (a dependent FMA taken as 4 cycles; %.3f TSC ticks a cycle)\n", tick);
    printf("  512-bit load              %.2f\n", zmm_load() / tick);
    printf("  256-bit load              %.2f\n", ymm_load() / tick);
    printf("  512-bit broadcast         %.2f\n", zmm_bcast() / tick);
    printf("  512-bit load / broadcast  %.2f\n", zmm_mix() / tick);
    printf("  FMA, 512-bit memory       %.2f\n", zmm_fma_mem() / tick);
    printf("  32-bit integer load       %.2f\n", gp_load() / tick);
    return 0;
}
#endif
