/* Standalone bench programs' clock (no loom): TSC ticks a core cycle, from
 * a dependent chain of 512-bit FMAs taken as 4 cycles an FMA (Zen 4/5,
 * Sapphire Rapids: Agner Fog's instruction tables).  Needs AVX-512F. */
#ifndef LOOM_BENCH_FMA_CLOCK_H
#define LOOM_BENCH_FMA_CLOCK_H

#include <immintrin.h>
#include <stdint.h>
#include <x86intrin.h>

/* the least of 10 runs of 1,000,000 dependent FMAs, in TSC ticks a cycle */
static double fma_clock_ticks_per_cycle(void)
{
    __m512 x = _mm512_set1_ps(1.0f), m = _mm512_set1_ps(0.999f);
    double best = 1e30;
    for (int r = 0; r < 10; r++) {
        uint64_t t0 = __rdtsc();
        for (int i = 0; i < 1000000; i++) {
            x = _mm512_fmadd_ps(x, m, m);
            __asm__("" : "+v"(x));
        }
        uint64_t t1 = __rdtsc();
        if (t1 - t0 < best)
            best = (double)(t1 - t0);
    }
    volatile float keep = _mm512_reduce_add_ps(x);
    (void)keep;
    return best / 4e6;
}

#endif
