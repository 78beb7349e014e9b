/* loom benchmarks: the machine's roofline -- measured memory bandwidth
 * (STREAM-style triad) and fp32 FMA peak.
 *
 * Both use OpenMP.  A process that later forks loom's measuring children
 * must not call this itself (libgomp does not survive fork): run it in a
 * child process, as bench_spmm does.
 */
#ifndef LOOM_BENCH_ROOFLINE_H
#define LOOM_BENCH_ROOFLINE_H

/* Measure with `threads` OpenMP threads (<= 0: all the cores OpenMP sees).
 *  *bw_gbs:      best-of-N triad a[i] = b[i] + s*c[i] over three arrays of
 *                double (LOOM_BENCH_TRIAD_MIB MiB each, > any L3 here),
 *                counted as 3 x 8 bytes per element (STREAM's convention:
 *                write-allocate traffic not counted), in GB/s (1e9 B/s).
 *  *peak_gflops: best-of-N fp32 FMA throughput, as many independent vector
 *                accumulators per thread as fit the register file (16 on
 *                AVX-512, 12 on AVX2: loom_bench_roofline_chains()),
 *                GFLOP/s = 2 x lanes x FMAs / s summed over threads.
 * Returns 0, or -1 if the arrays could not be allocated (then *bw_gbs = 0).
 * Either pointer may be NULL to skip that measurement. */
int loom_bench_roofline(int threads, double *bw_gbs, double *peak_gflops);

/* Threads the last call used, and the ISA of the FMA loop ("AVX-512",
 * "AVX2", "scalar"), detected at run time (loom_limits_host, dsl/ir/limits.h:
 * cpuid; LOOM_HOST_ISA overrides), not from the compiler's -march. */
int loom_bench_roofline_threads(void);
const char *loom_bench_roofline_isa(void);

/* Vector bits of the FMA loop (512, 256, or 32 for scalar) and the host's
 * vector registers (32 with AVX-512, else 16). */
int loom_bench_roofline_vector_bits(void);
int loom_bench_roofline_registers(void);

/* Accumulator chains per thread of the peak's FMA loop: 16 with AVX-512
 * (32 registers), 12 with AVX2 (16 registers; two hold the constants). */
int loom_bench_roofline_chains(void);

/* An independent measurement of the same peak: a loop written in assembly
 * (12 chains of vfmadd231ps on fixed registers), GFLOP/s on `threads`
 * threads (<= 0: all).  The roofline's peak should be within 10% of it. */
double loom_bench_roofline_fma_asm(int threads);

#define LOOM_BENCH_TRIAD_MIB 128

#endif
