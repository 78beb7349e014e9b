/* SuiteSparse:GraphBLAS as a peer of loom's SpMM (graphblas_spmm.h). */
#include "graphblas_spmm.h"

#include <GraphBLAS.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

const char *loom_bench_graphblas_version(void)
{
    static char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", GxB_IMPLEMENTATION_MAJOR, GxB_IMPLEMENTATION_MINOR, GxB_IMPLEMENTATION_SUB);
    return v;
}

#define OK(call)                                                                                                   \
    do {                                                                                                           \
        if ((call) != GrB_SUCCESS) {                                                                               \
            fprintf(stderr, "graphblas_spmm: %s failed\n", #call);                                                 \
            goto done;                                                                                             \
        }                                                                                                          \
    } while (0)

double loom_bench_graphblas_spmm(int64_t n, int64_t k, const int32_t *pos, const int32_t *crd, const float *vals,
                                 int64_t F, const float *B, float *C, double min_seconds)
{
    if (n < 1 || k < 1 || F < 1 || !pos || !B || !C || (pos[n] > 0 && (!crd || !vals)))
        return -1;
    double result = -1;
    int64_t nnz = pos[n];
    GrB_Matrix A = NULL, Bm = NULL, Cm = NULL;
    GrB_Index *Ap = malloc(sizeof *Ap * (size_t)(n + 1)), *Aj = malloc(sizeof *Aj * (size_t)(nnz ? nnz : 1));
    float *Ax = malloc(sizeof *Ax * (size_t)(nnz ? nnz : 1)), *Bx = malloc(sizeof *Bx * (size_t)(k * F));
    GrB_Index *I = malloc(sizeof *I * (size_t)(n * F)), *J = malloc(sizeof *J * (size_t)(n * F));
    float *X = malloc(sizeof *X * (size_t)(n * F));
    double *t = malloc(sizeof *t * 4096);
    if (GrB_init(GrB_NONBLOCKING) != GrB_SUCCESS || !Ap || !Aj || !Ax || !Bx || !I || !J || !X || !t)
        goto done;
    for (int64_t i = 0; i <= n; i++)
        Ap[i] = (GrB_Index)pos[i];
    for (int64_t p = 0; p < nnz; p++)
        Aj[p] = (GrB_Index)crd[p], Ax[p] = vals[p];
    memcpy(Bx, B, sizeof *Bx * (size_t)(k * F));
    /* the imports take the arrays over (and NULL the pointers) */
    OK(GxB_Matrix_import_CSR(&A, GrB_FP32, (GrB_Index)n, (GrB_Index)k, &Ap, &Aj, (void **)&Ax,
                             sizeof(GrB_Index) * (GrB_Index)(n + 1), sizeof(GrB_Index) * (GrB_Index)(nnz ? nnz : 1),
                             sizeof(float) * (GrB_Index)(nnz ? nnz : 1), false, false, NULL));
    OK(GxB_Matrix_import_FullR(&Bm, GrB_FP32, (GrB_Index)k, (GrB_Index)F, (void **)&Bx,
                               sizeof(float) * (GrB_Index)(k * F), false, NULL));
    OK(GrB_Matrix_new(&Cm, GrB_FP32, (GrB_Index)n, (GrB_Index)F));
    OK(GxB_Matrix_Option_set(Cm, GxB_FORMAT, GxB_BY_ROW));
    int reps = 0;
    double spent = 0;
    for (int r = -1; reps < 4096 && (reps < 3 || spent < min_seconds); r++) {
        double t0 = now();
        OK(GrB_mxm(Cm, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A, Bm, NULL));
        OK(GrB_Matrix_wait(Cm, GrB_MATERIALIZE));
        double dt = now() - t0;
        if (r >= 0) /* the first run is untimed */
            t[reps++] = dt, spent += dt;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    /* C may be sparse (an empty row of A gives an empty row of C) */
    GrB_Index nv = (GrB_Index)(n * F);
    OK(GrB_Matrix_extractTuples_FP32(I, J, X, &nv, Cm));
    memset(C, 0, sizeof *C * (size_t)(n * F));
    for (GrB_Index e = 0; e < nv; e++)
        C[I[e] * (GrB_Index)F + J[e]] = X[e];
    result = t[reps / 2];
done:
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&Bm);
    GrB_Matrix_free(&Cm);
    free(Ap), free(Aj), free(Ax), free(Bx), free(I), free(J), free(X), free(t);
    GrB_finalize();
    return result;
}
