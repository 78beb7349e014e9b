/* loom benchmarks: ggml's flash attention measured again and again in one
 * process (issue 26: why ggml's figure moves 30-40% between bench_attention
 * runs while loom's and OpenBLAS's move a few percent).
 *
 *   build/bench/ggml_repeat H N CAUSAL [CALLS]
 *
 * Runs bench_attention's own ggml measurement (ggml_attention.h
 * loom_bench_ggml_child: one ggml context, one warm-up, the median of >= 3
 * runs and >= 1 s) CALLS times (default 5) in this process on the same
 * inputs (D = 64, scale 0.125, uniform values in [-0.5, 0.5) from a fixed
 * seed) and prints each call's median in ms and GFLOP/s (Neptune's FLOPs:
 * 4 N^2 D per head, causal 2 N (N + 1) D, as bench_attention counts them).
 * Threads: as bench_attention's ggml column (online cores, OMP_NUM_THREADS
 * when set).  The output is not checked here: bench_attention checks the
 * same function's output against the reference.  Without ggml in the build
 * it says so and exits 1. */
#include <stdio.h>
#include <stdlib.h>

#include "ggml_attention.h"

int main(int argc, char **argv)
{
    const char *what = NULL;
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: ggml_repeat H N CAUSAL [CALLS]\n");
        return 2;
    }
    if (!loom_bench_ggml_available(&what)) {
        fprintf(stderr, "ggml_repeat: %s\n", what);
        return 1;
    }
    long H = atol(argv[1]), N = atol(argv[2]), calls = argc > 4 ? atol(argv[4]) : 5;
    int causal = atoi(argv[3]) != 0;
    if (H <= 0 || N <= 0 || calls <= 0 || H * N > (1L << 26)) {
        fprintf(stderr, "ggml_repeat: H, N and CALLS must be positive (H x N <= 2^26)\n");
        return 2;
    }
    const long D = 64;
    size_t n = (size_t)(H * N * D);
    float *Q = malloc(n * sizeof *Q), *K = malloc(n * sizeof *K), *V = malloc(n * sizeof *V),
          *O = malloc(n * sizeof *O);
    if (!Q || !K || !V || !O) {
        fprintf(stderr, "ggml_repeat: out of memory\n");
        return 1;
    }
    srand(7);
    for (size_t i = 0; i < n; i++) {
        Q[i] = (float)rand() / ((float)RAND_MAX + 1.0f) - 0.5f;
        K[i] = (float)rand() / ((float)RAND_MAX + 1.0f) - 0.5f;
        V[i] = (float)rand() / ((float)RAND_MAX + 1.0f) - 0.5f;
    }
    ggml_attn_job J = {H, N, D, causal, 0.125f, Q, K, V, O};
    double flops = causal ? 2.0 * H * (double)N * (double)(N + 1) * D : 4.0 * H * (double)N * N * D;
    printf("%s\nggml_flash_attn_ext %ld x %ld x %ld%s, %ld calls in one process\n", what, H, N, D,
           causal ? " causal" : "", calls);
    for (long c = 0; c < calls; c++) {
        double t = 0;
        loom_bench_ggml_child(&J, &t, 1);
        printf("call %ld: %.3f ms, %.1f GFLOP/s\n", c + 1, t * 1e3, flops / t * 1e-9);
        fflush(stdout);
    }
    free(Q), free(K), free(V), free(O);
    return 0;
}
