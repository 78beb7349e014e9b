/* loom benchmarks: the OpenBLAS unfused attention (blas_attention.h). */
#include "blas_attention.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <unistd.h>

#include "openblas_core.h"

#include "../dsl/ir/util.h" /* loom_now_seconds */
#include "common.h"

/* Softmax of `rows` rows of S (row r is query row row0 + r), in place;
 * under a causal mask row i keeps keys 0..i and zeroes the rest. */
static void softmax_rows(const blas_job *J, float *S, int64_t row0, int64_t rows)
{
    int64_t N = J->N;
    for (int64_t r = 0; r < rows; r++) {
        float *row = S + r * N;
        int64_t hi = J->causal ? row0 + r + 1 : N;
        float m = -INFINITY, l = 0;
        for (int64_t j = 0; j < hi; j++)
            m = row[j] > m ? row[j] : m;
        for (int64_t j = 0; j < hi; j++) {
            row[j] = expf(row[j] - m);
            l += row[j];
        }
        float inv = 1.0f / l;
        for (int64_t j = 0; j < hi; j++)
            row[j] *= inv;
        for (int64_t j = hi; j < N; j++)
            row[j] = 0;
    }
}

static void blas_attention(const blas_job *J, float *S)
{
    int64_t N = J->N, D = J->D;
    for (int64_t h = 0; h < J->H; h++) {
        const float *Q = J->Q + h * N * D, *K = J->K + h * N * D, *V = J->V + h * N * D;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)N, (int)D, 0.125f, Q, (int)D, K, (int)D,
                    0.0f, S, (int)N);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < N; i++)
            softmax_rows(J, S + i * N, i, 1);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)D, (int)N, 1.0f, S, (int)N, V, (int)D,
                    0.0f, J->O + h * N * D, (int)D);
    }
}

/* The other usual parallelisation: the threads split the (head, part of
 * the query rows) pairs and each runs single-threaded sgemm on its own
 * slice of S -- no OpenBLAS thread pool spinning beside OpenMP's.  S holds
 * nt slices of ceil(N / nt) rows. */
static void blas_split(const blas_job *J, float *S, int nt)
{
    int64_t N = J->N, D = J->D, part = (N + nt - 1) / nt;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t u = 0; u < J->H * nt; u++) {
        int64_t h = u / nt, r0 = (u % nt) * part, r1 = r0 + part < N ? r0 + part : N;
        if (r1 <= r0)
            continue;
        float *Sp = S + (size_t)omp_get_thread_num() * (size_t)(part * N);
        const float *Q = J->Q + h * N * D + r0 * D, *K = J->K + h * N * D, *V = J->V + h * N * D;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(r1 - r0), (int)N, (int)D, 0.125f, Q, (int)D, K,
                    (int)D, 0.0f, Sp, (int)N);
        softmax_rows(J, Sp, r0, r1 - r0);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(r1 - r0), (int)D, (int)N, 1.0f, Sp, (int)N, V,
                    (int)D, 0.0f, J->O + h * N * D + r0 * D, (int)D);
    }
}

static void blas_run(const blas_job *J, float *S, int nt)
{
    if (J->split)
        blas_split(J, S, nt);
    else
        blas_attention(J, S);
}

void loom_bench_blas_child(void *arg, double *out, int nout)
{
    (void)nout;
    const blas_job *J = arg;
    int nt = (int)sysconf(_SC_NPROCESSORS_ONLN);
    openblas_set_num_threads(J->split ? 1 : nt);
    size_t rows = J->split ? (size_t)nt * (size_t)((J->N + nt - 1) / nt) : (size_t)J->N;
    float *S = malloc(sizeof(float) * rows * (size_t)J->N);
    if (!S)
        _exit(1);
    blas_run(J, S, nt); /* warm-up; leaves O for the check */
    double t[64];
    int n = 0;
    double start = loom_now_seconds();
    while (n < 64 && (n < 3 || loom_now_seconds() - start < 1.0)) {
        double t0 = loom_now_seconds();
        blas_run(J, S, nt);
        t[n++] = loom_now_seconds() - t0;
    }
    out[0] = loom_bench_median(t, n);
    free(S);
}
