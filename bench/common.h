/* Shared code of the loom benchmarks (bench/). */
#ifndef LOOM_BENCH_COMMON_H
#define LOOM_BENCH_COMMON_H

/* The work a child runs: fill out[0..nout) (zeroed first). */
typedef void (*loom_bench_child_fn)(void *arg, double *out, int nout);

#define LOOM_BENCH_CHILD_MAX_OUT 16 /* doubles a child can send back */

/* Run fn(arg, out, nout) in a forked child and copy the child's nout doubles
 * into out[] through a pipe.  OpenMP (libgomp) and threaded BLAS do not
 * survive fork, and loom measures kernels in forked children, so a bench
 * runs any such code (the roofline, OpenBLAS, Eigen) in a child too and the
 * parent never starts a thread pool.  stdout/stderr are flushed first.
 * Returns 0 when the child delivered all nout doubles and exited with 0;
 * -1 when pipe/fork failed, nout is outside 1..LOOM_BENCH_CHILD_MAX_OUT, or
 * the child crashed, exited non-zero or sent fewer bytes (out is then
 * partly written). */
int loom_bench_run_in_child(loom_bench_child_fn fn, void *arg, double *out, int nout);

/* A loom_bench_child_fn that measures the machine with every thread
 * (loom_bench_roofline(0, ...), roofline.h): out[0] = bandwidth GB/s,
 * out[1] = fp32 FMA peak GFLOP/s, out[2] = threads used, out[3] =
 * loom_bench_roofline's return code (0: measured).  nout must be 4; arg is
 * unused. */
void loom_bench_roofline_child(void *arg, double *out, int nout);

/* The median of v[0..n) (n >= 1; the upper one of the middle two when n
 * is even), sorting v in place: the figure of the peers' timing loops
 * (blas_attention.c, ggml_attention.c).  Insertion sort: n <= 64. */
static inline double loom_bench_median(double *v, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && v[b] < v[b - 1]; b--) {
            double x = v[b];
            v[b] = v[b - 1];
            v[b - 1] = x;
        }
    return v[n / 2];
}

#endif
