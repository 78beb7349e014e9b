/* loom benchmarks: an unfused attention on OpenBLAS, bench_attention's
 * BLAS baseline (split out of bench_attention.c beside ggml_attention.h,
 * the other peer).  Per head S = Q K^T / 8 (cblas_sgemm), a row softmax
 * (masked to keys <= the query under a causal mask: the usual unfused
 * practice computes the full products), O = S V (cblas_sgemm).  Two
 * parallelisations: OpenBLAS's threads inside each sgemm with an OpenMP
 * softmax, or OpenMP over (head, part of the query rows) with
 * single-threaded sgemm on each thread's slice of S.
 *
 * Like ggml, it runs in a forked child (common.h loom_bench_run_in_child):
 * loom measures kernels in forked children and a process with a live
 * thread pool must not fork. */
#ifndef LOOM_BENCH_BLAS_ATTENTION_H
#define LOOM_BENCH_BLAS_ATTENTION_H

#include <stdint.h>

typedef struct blas_job {
    int64_t H, N, D;
    int causal;
    const float *Q, *K, *V;
    float *O;  /* the data set's output (shared memory) */
    int split; /* 0: threaded sgemm per head, OpenMP softmax; 1: OpenMP over
                  (head, row part), single-threaded sgemm (blas_split) */
} blas_job;

/* A loom_bench_child_fn: job `arg` on as many threads as online cores
 * (openblas_set_num_threads: all of them for the threaded form, 1 for the
 * split one), one warm-up run that leaves O, then the median of >= 3 runs
 * and >= 1 s: out[0] = seconds (nout >= 1).  Exits the child with status 1
 * when its scratch (S, rows x N floats) cannot be allocated. */
void loom_bench_blas_child(void *arg, double *out, int nout);

#endif
