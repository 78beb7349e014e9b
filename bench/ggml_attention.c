/* ggml's CPU flash attention for bench_attention (ggml_attention.h).
 *
 * Layouts (ggml.h, ggml_flash_attn_ext): q [D, N, H, 1], k and v
 * [D, N, H, 1] (v not transposed), mask [N_kv, N_q] F16, result
 * [D, H, N, 1] (permuted), ne0 fastest.  loom's [H][N][D] arrays are
 * exactly q, k, v's memory order; the result is copied back to [H][N][D]. */
#include "ggml_attention.h"

#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/ir/util.h" /* loom_now_seconds */
#include "common.h"

#ifdef LOOM_HAVE_GGML
#include <math.h>

#include "ggml-cpu.h"
#include "ggml.h"

#ifndef LOOM_GGML_DESC
#define LOOM_GGML_DESC "ggml (source build)"
#endif

int loom_bench_ggml_available(const char **what)
{
    if (what)
        *what = LOOM_GGML_DESC;
    return 1;
}

void loom_bench_ggml_child(void *arg, double *out, int nout)
{
    const ggml_attn_job *J = arg;
    int nt = (int)sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("OMP_NUM_THREADS"); /* as many threads as loom's kernels and OpenBLAS */
    if (env && atoi(env) > 0)
        nt = atoi(env);
    int64_t H = J->H, N = J->N, D = J->D;
    size_t data = (size_t)(3 * H * N * D + H * N * D) * sizeof(float) + (size_t)(N * N) * 2;
    struct ggml_init_params ip = {data + 64 * ggml_tensor_overhead() + ggml_graph_overhead() + (1 << 20), NULL, 0};
    struct ggml_context *ctx = ggml_init(ip);
    if (!ctx)
        _exit(1);
    struct ggml_tensor *q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, D, N, H);
    struct ggml_tensor *k = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, D, N, H);
    struct ggml_tensor *v = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, D, N, H);
    struct ggml_tensor *mask = NULL;
    memcpy(q->data, J->Q, sizeof(float) * (size_t)(H * N * D));
    memcpy(k->data, J->K, sizeof(float) * (size_t)(H * N * D));
    memcpy(v->data, J->V, sizeof(float) * (size_t)(H * N * D));
    if (J->causal) {
        mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, N, N);
        ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), ninf = ggml_fp32_to_fp16(-INFINITY);
        ggml_fp16_t *m = mask->data;
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < N; j++)
                m[i * N + j] = j <= i ? zero : ninf;
    }
    struct ggml_tensor *res = ggml_flash_attn_ext(ctx, q, k, v, mask, J->scale, 0.0f, 0.0f);
    ggml_flash_attn_ext_set_prec(res, GGML_PREC_F32);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, res);
    /* a persistent thread pool, as llama.cpp runs ggml: without one every
       ggml_graph_compute starts its worker threads anew, and on this VM a
       one-head 512 x 512 causal call (under a ms of work) then read 7.4 ms,
       its threads having 1.03 CPUs on average (2026-12-01) */
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(nt);
    struct ggml_threadpool *tp = ggml_threadpool_new(&tpp);
    if (!tp)
        _exit(1);
    struct ggml_cplan plan = ggml_graph_plan(gf, nt, tp);
    void *work = plan.work_size ? malloc(plan.work_size) : NULL;
    if (plan.work_size && !work)
        _exit(1);
    plan.work_data = work;
    if (ggml_graph_compute(gf, &plan) != GGML_STATUS_SUCCESS) /* warm-up; leaves the result */
        _exit(1);
    const float *r = res->data; /* [N][H][D] */
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < N; i++)
            memcpy(J->O + (h * N + i) * D, r + (i * H + h) * D, sizeof(float) * (size_t)D);
    double t[64];
    int n = 0;
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    double start = loom_now_seconds();
    while (n < 64 && (n < 3 || loom_now_seconds() - start < 1.0)) {
        double t0 = loom_now_seconds();
        if (ggml_graph_compute(gf, &plan) != GGML_STATUS_SUCCESS)
            _exit(1);
        t[n++] = loom_now_seconds() - t0;
    }
    double wall = loom_now_seconds() - start;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    if (nout >= 3) {
        out[1] = wall > 0 ? ((double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec)) / wall : 0;
        out[2] = nt;
    }
    out[0] = loom_bench_median(t, n);
    free(work);
    ggml_threadpool_free(tp);
    ggml_free(ctx);
}

#else /* no ggml in this build */

int loom_bench_ggml_available(const char **what)
{
    if (what)
        *what = "ggml not built (bench/build_ggml.sh found no source: set GGML_SRC to a ggml source tree or "
                "GGML_GIT to a ggml git directory)";
    return 0;
}

void loom_bench_ggml_child(void *arg, double *out, int nout)
{
    (void)arg;
    (void)out;
    (void)nout;
    _exit(1);
}

#endif
