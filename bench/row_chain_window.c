/* Standalone (no loom; x86-64 with AVX-512F): how far a core runs ahead of
 * a chain of FMAs into the next, independent one -- the evidence for the
 * seventy-sixth session's probe of model 62's row overlap on Zen 4
 * (docs/simulator.md "Model 89", probes).  4,096 rows of L steps (row
 * lengths L +- J% at random with an argument J), each step two dependent
 * 512-bit FMAs into the row's two accumulators, the operands (a) in
 * registers, (b) a broadcast loaded each step, (c) that and two 512-bit
 * loads of a 64-row table, as SpMM F = 32's nonzero; each row starts from
 * zero (restarted) or from the last row's sums (carried: one chain, 4
 * cycles a step).  Cycles a step, the clock taken from a dependent FMA (4
 * cycles).  Restarted rows that overlap run under 4 cycles a step; rows of
 * L steps overlapping by W steps take about 4 (L - W).
 *
 * On the Zen 4 host of 2026-12-07 (restarted rows): registers 2.0 (L <= 32),
 * 2.2 (64), 3.1 (128); with the loads 2.9-3.1 (L <= 32), 3.5 (64), 3.7 (128),
 * the same with row lengths +-50% -- about 25 steps (50 FMAs) of the next
 * row run ahead in registers, 9 with the loads, where model 62's window of
 * 314 instructions holds a 59-step bcsstk16 row whole (an earlier build of
 * the same loops, 2.4 / 3.0 / 3.9 with the loads, read 16).
 *
 * usage: row_chain_window [J]  (about a second) */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

#ifndef __AVX512F__
int main(void)
{
    puts("row_chain_window: needs AVX-512F (cc -march=native on this host has none)");
    return 0;
}
#else

#include "fma_clock.h"

#define ROWS 4096
static float table[64 * 32] __attribute__((aligned(64)));
static float avals[1 << 16];
static int len[ROWS];
static double tick; /* TSC ticks a core cycle */

#define KERNEL(NAME, BODY)                                                                                  \
    static double NAME(int carry)                                                                           \
    {                                                                                                       \
        __m512 c0 = _mm512_setzero_ps(), c1 = c0, b0 = _mm512_set1_ps(0.999f), b1 = b0;                     \
        double best = 1e30, steps = 0;                                                                      \
        for (int i = 0; i < ROWS; i++)                                                                      \
            steps += len[i];                                                                                \
        for (int r = 0; r < 10; r++) {                                                                      \
            uint64_t t0 = __rdtsc();                                                                        \
            int p = 0;                                                                                      \
            for (int i = 0; i < ROWS; i++) {                                                                \
                if (!carry) {                                                                               \
                    c0 = _mm512_setzero_ps();                                                               \
                    c1 = c0;                                                                                \
                }                                                                                           \
                for (int k = 0, n = len[i]; k < n; k++, p = (p + 1) & 0xffff) {                             \
                    BODY                                                                                    \
                }                                                                                           \
                __asm__ volatile("" : "+v"(c0), "+v"(c1));                                                  \
            }                                                                                               \
            uint64_t t1 = __rdtsc();                                                                        \
            if (t1 - t0 < best)                                                                             \
                best = (double)(t1 - t0);                                                                   \
        }                                                                                                   \
        volatile float s = _mm512_reduce_add_ps(c0) + _mm512_reduce_add_ps(c1) + _mm512_reduce_add_ps(b1);  \
        (void)s;                                                                                            \
        return best / steps / tick;                                                                         \
    }

KERNEL(in_registers, c0 = _mm512_fmadd_ps(b0, b1, c0); c1 = _mm512_fmadd_ps(b1, b0, c1);
       __asm__("" : "+v"(b0), "+v"(b1));)
KERNEL(broadcast, __m512 a = _mm512_set1_ps(avals[p]); c0 = _mm512_fmadd_ps(a, b0, c0);
       c1 = _mm512_fmadd_ps(a, b1, c1);)
KERNEL(with_loads, __m512 a = _mm512_set1_ps(avals[p]); const float *br = table + (p & 63) * 32;
       c0 = _mm512_fmadd_ps(a, _mm512_load_ps(br), c0); c1 = _mm512_fmadd_ps(a, _mm512_load_ps(br + 16), c1);)

int main(int argc, char **argv)
{
    int jitter = argc > 1 ? atoi(argv[1]) : 0;
    tick = fma_clock_ticks_per_cycle();
    for (int i = 0; i < 64 * 32; i++)
        table[i] = 1e-3f * (float)(i % 7);
    for (int i = 0; i < (1 << 16); i++)
        avals[i] = 0.5f;
    printf("cycles a step, restarted / carried rows; row lengths +-%d%%\n", jitter);
    int Ls[] = {4, 8, 16, 32, 64, 128};
    for (int i = 0; i < 6; i++) {
        int L = Ls[i], spread = L * jitter / 100;
        srand(7);
        for (int r = 0; r < ROWS; r++)
            len[r] = spread ? L - spread + rand() % (2 * spread + 1) : L;
        printf("L %3d  registers %.2f / %.2f  broadcast %.2f / %.2f  broadcast and 2 loads %.2f / %.2f\n", L,
               in_registers(0), in_registers(1), broadcast(0), broadcast(1), with_loads(0), with_loads(1));
    }
    return 0;
}
#endif
