/* loom benchmarks: ggml's CPU flash attention (ggml_flash_attn_ext) as a
 * baseline for bench_attention.  ggml is not a Debian package: the bench
 * build (bench/build_ggml.sh, run by bench/Makefile) builds it from source
 * when it can find the source, and compiles ggml_attention.c with
 * LOOM_HAVE_GGML; otherwise the functions below say it is absent.
 *
 * Like OpenBLAS, ggml runs in a forked child (common.h
 * loom_bench_run_in_child): loom measures kernels in forked children and
 * a process with a live thread pool must not fork. */
#ifndef LOOM_BENCH_GGML_ATTENTION_H
#define LOOM_BENCH_GGML_ATTENTION_H

#include <stdint.h>

typedef struct ggml_attn_job {
    int64_t H, N, D;        /* heads, rows (= keys), head dimension */
    int causal;             /* 1: key j <= query i only */
    float scale;            /* the scores' factor (0.125 for D = 64) */
    const float *Q, *K, *V; /* [H][N][D] row-major, fp32 */
    float *O;               /* [H][N][D]: written (shared memory, checked by the caller) */
} ggml_attn_job;

/* 1 when this build has ggml; then *what (may be NULL) is a static string
 * naming the version and how it was built, else why it is absent. */
int loom_bench_ggml_available(const char **what);

/* A loom_bench_child_fn: ggml_flash_attn_ext on job `arg` (fp32 Q, K, V,
 * an F16 mask of 0 / -inf when causal, none otherwise; one graph over all
 * heads, as many threads as online cores or OMP_NUM_THREADS when set), one warm-up run that leaves O,
 * then the median of >= 3 runs and >= 1 s: out[0] = seconds.  With nout >=
 * 3 also out[1] = the child's CPU time over its wall time across the timed
 * runs (CLOCK_PROCESS_CPUTIME_ID: how many CPUs its threads had on average)
 * and out[2] = the threads ggml was given.  Exits the child with status 1
 * when ggml is absent or fails. */
void loom_bench_ggml_child(void *arg, double *out, int nout);

#endif
