/* loom benchmark: fused attention (RollingUpdate, issue 7) against loom's
 * unfused default schedule and an unfused OpenBLAS implementation
 * (sgemm Q K^T, a row softmax, sgemm P V: ../shared/research/attention.md
 * section 3.3), at H x N x D = 12 x 512 x 64 and 1 x 4096 x 64, causal and
 * not, with the fraction of the machine's fp32 FMA peak (roofline.h).
 *
 * FLOPs are Neptune's model (attention.md section 4): 4 N^2 D per head, and
 * 2 N (N + 1) D per causal head; GFLOP/s = FLOPs / median latency.  Every
 * kernel, OpenBLAS's too, is checked against loom's reference interpreter
 * on the same data.
 *
 * The schedules:
 *  - fused: P inlined, S computed at m's key loop (one dot product per
 *    score), l and O rolled into that loop (RollingUpdate), the row loop
 *    parallel -- written by hand, not tuned;
 *  - unfused: loom_default_schedule (Scorch's heuristic), every block
 *    stored at the root.
 * The causal cases use the single-head causal workload (a causal pattern
 * is 2-D, so heads are separate kernels): a 12-head figure is the 1-head
 * latency x 12, the same GFLOP/s.  The OpenBLAS causal baseline computes
 * the full products and masks the softmax (the usual unfused practice), but
 * is credited with the causal FLOPs only.
 *
 * OpenMP/OpenBLAS and fork: loom measures kernels in forked children, so
 * the roofline and OpenBLAS run in forked children too (bench_spmm.c).
 * Usage: bench_attention [--quick] (--quick: 1 x 1024 instead of 4096).
 */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../dsl/program.h"
#include "../dsl/schedule.h"
#include "../modules/module.h"
#include "../runtime/pipeline.h"
#include "../traces/validate.h"
#include "roofline.h"

static const char *MH_DENSE = "param H = 12\nparam N = 512\nparam D = 64\n"
                              "tensor Q(H, N, D) dense\ntensor K(H, N, D) dense\ntensor V(H, N, D) dense\n"
                              "tensor O(H, N, D) dense output\n"
                              "S(h, i, j) = Q(h, i, d) * K(h, j, d) * 0.125\n"
                              "m(h, i) max= S(h, i, j)\n"
                              "P(h, i, j) = exp(S(h, i, j) - m(h, i))\n"
                              "l(h, i) += P(h, i, j)\n"
                              "O(h, i, e) += P(h, i, j) * V(h, j, e) / l(h, i)\n";
static const char *ONE_DENSE = "param N = 4096\nparam D = 64\n"
                               "tensor Q(N, D) dense\ntensor K(N, D) dense\ntensor V(N, D) dense\n"
                               "tensor O(N, D) dense output\n"
                               "S(i, j) = Q(i, d) * K(j, d) * 0.125\n"
                               "m(i) max= S(i, j)\n"
                               "P(i, j) = exp(S(i, j) - m(i))\n"
                               "l(i) += P(i, j)\n"
                               "O(i, e) += P(i, j) * V(j, e) / l(i)\n";
static const char *ONE_CAUSAL = "param N = 4096\nparam D = 64\n"
                                "tensor Q(N, D) dense\ntensor K(N, D) dense\ntensor V(N, D) dense\n"
                                "tensor W(N, N) causal\ntensor O(N, D) dense output\n"
                                "S(i, j) = W(i, j) * Q(i, d) * K(j, d) * 0.125\n"
                                "m(i) max= S(i, j)\n"
                                "P(i, j) = exp(S(i, j) - m(i))\n"
                                "l(i) += P(i, j)\n"
                                "O(i, e) += P(i, j) * V(j, e) / l(i)\n";

/* ---- forked children (bench_spmm.c's pattern) ------------------------- */

typedef void (*child_fn)(void *arg, double *out, int nout);

static int run_in_child(child_fn fn, void *arg, double *out, int nout)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        double buf[16] = {0};
        fn(arg, buf, nout);
        ssize_t want = (ssize_t)(sizeof(double) * (size_t)nout);
        ssize_t w = write(fd[1], buf, (size_t)want);
        _exit(w == want ? 0 : 1);
    }
    close(fd[1]);
    size_t want = sizeof(double) * (size_t)nout, got = 0;
    char *p = (char *)out;
    while (got < want) {
        ssize_t r = read(fd[0], p + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return got == want && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void roofline_child(void *arg, double *out, int nout)
{
    (void)arg;
    (void)nout;
    double bw = 0, peak = 0;
    loom_bench_roofline(0, &bw, &peak);
    out[0] = peak;
    out[1] = loom_bench_roofline_threads();
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- OpenBLAS unfused attention ---------------------------------------- */

typedef struct blas_job {
    int64_t H, N, D;
    int causal;
    const float *Q, *K, *V;
    float *O; /* the data set's output (shared memory) */
} blas_job;

static void blas_attention(const blas_job *J, float *S)
{
    int64_t N = J->N, D = J->D;
    for (int64_t h = 0; h < J->H; h++) {
        const float *Q = J->Q + h * N * D, *K = J->K + h * N * D, *V = J->V + h * N * D;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)N, (int)D, 0.125f, Q, (int)D, K, (int)D,
                    0.0f, S, (int)N);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < N; i++) {
            float *row = S + i * N;
            int64_t hi = J->causal ? i + 1 : N;
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
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)D, (int)N, 1.0f, S, (int)N, V, (int)D,
                    0.0f, J->O + h * N * D, (int)D);
    }
}

static void blas_child(void *arg, double *out, int nout)
{
    (void)nout;
    const blas_job *J = arg;
    openblas_set_num_threads((int)sysconf(_SC_NPROCESSORS_ONLN));
    float *S = malloc(sizeof(float) * (size_t)(J->N * J->N));
    if (!S)
        _exit(1);
    blas_attention(J, S); /* warm-up; leaves O for the check */
    double t[64];
    int n = 0;
    double start = now();
    while (n < 64 && (n < 3 || now() - start < 1.0)) {
        double t0 = now();
        blas_attention(J, S);
        t[n++] = now() - t0;
    }
    for (int a = 0; a < n; a++) /* median */
        for (int b = a + 1; b < n; b++)
            if (t[b] < t[a]) {
                double x = t[a];
                t[a] = t[b];
                t[b] = x;
            }
    out[0] = t[n / 2];
    free(S);
}

/* ---- one case ------------------------------------------------------------ */

static int fused_schedule(loom_schedule *sch, loom_error *err)
{
    int m, S, P, l, O, loops[LOOM_MAX_LOOPS], n, sl[LOOM_MAX_LOOPS], ns, order[LOOM_MAX_LOOPS], k = 0;
    if (loom_get_block(sch, "m", &m, err) || loom_get_block(sch, "S", &S, err) || loom_get_block(sch, "P", &P, err) ||
        loom_get_block(sch, "l", &l, err) || loom_get_block(sch, "O", &O, err) ||
        loom_get_loops(sch, m, loops, &n, err) || loom_parallel(sch, loops[0], err) ||
        loom_get_loops(sch, S, sl, &ns, err))
        return -1;
    for (int red = 0; red < 2; red++) /* S's reduction innermost: one dot product per score */
        for (int q = 0; q < ns; q++)
            if (loom_iter_reduces(sch, sch->rvs[S].stage, sch->rvs[sl[q]].iter) == red)
                order[k++] = sl[q];
    return loom_reorder(sch, order, ns, err) || loom_compute_at(sch, S, loops[n - 1], err) ||
                   loom_compute_inline(sch, P, err) || loom_rolling_update(sch, l, loops[n - 1], -1, err) ||
                   loom_rolling_update(sch, O, loops[n - 1], -1, err)
               ? -1
               : 0;
}

static void bench_case(const char *label, const char *text, int64_t H, int64_t N, int64_t D, int causal,
                       int64_t heads_factor, double peak)
{
    loom_program *prog = NULL;
    loom_error err;
    loom_error_clear(&err);
    loom_param_spec ps[1];
    snprintf(ps[0].name, sizeof ps[0].name, "N");
    ps[0].value = N;
    loom_dataset *ds = NULL;
    if (loom_program_parse_string(text, label, &prog, &err) ||
        loom_dataset_load(prog, NULL, 0, ps, 1, 7, &ds, &err)) {
        fprintf(stderr, "%s: %s\n", label, err.msg);
        loom_program_free(prog);
        return;
    }
    double t0 = now();
    loom_reference *ref = NULL;
    if (loom_reference_run(ds, &ref, &err)) {
        fprintf(stderr, "%s: reference: %s\n", label, err.msg);
        return;
    }
    double tref = now() - t0;
    double flops = (causal ? 2.0 * N * (N + 1) * D : 4.0 * N * N * D) * (double)(H * heads_factor);
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0.3;
    o.measure.min_repeats = 3;
    o.measure.time_limit = 600;
    double lat[2] = {0, 0};
    int ok[2] = {0, 0};
    for (int v = 0; v < 2; v++) {
        loom_schedule *sch = malloc(sizeof *sch);
        loom_violation vio;
        loom_run_result res;
        int st = loom_schedule_init(sch, prog, NULL, &err) != LOOM_OK;
        if (!st)
            st = v == 0 ? fused_schedule(sch, &err) : (loom_default_schedule(sch, &err) != LOOM_OK);
        if (!st)
            st = loom_validate(sch, NULL, &vio, &err) != LOOM_OK ||
                 loom_pipeline_run_schedule(sch, ds, ref, &o, &res, &err) != LOOM_OK;
        if (st || res.status != LOOM_OK)
            fprintf(stderr, "%s: %s: %s\n", label, v ? "unfused" : "fused", st ? err.msg : res.message);
        else {
            lat[v] = res.latency_s * (double)heads_factor;
            ok[v] = res.correct;
        }
        free(sch);
    }
    /* OpenBLAS on the same inputs, its output checked like loom's */
    blas_job J = {H, N, D, causal, NULL, NULL, NULL, NULL};
    for (int t = 0; t < prog->ntensors; t++) {
        const char *nm = prog->tensors[t].name;
        if (!strcmp(nm, "Q"))
            J.Q = ds->t[t].vals;
        if (!strcmp(nm, "K"))
            J.K = ds->t[t].vals;
        if (!strcmp(nm, "V"))
            J.V = ds->t[t].vals;
        if (!strcmp(nm, "O"))
            J.O = ds->t[t].vals;
    }
    double bl = 0;
    int bok = 0;
    loom_dataset_fill_outputs(ds, 0.0f);
    if (run_in_child(blas_child, &J, &bl, 1) == 0) {
        loom_check chk;
        loom_reference_check(ds, ref, &chk);
        bok = chk.correct;
        bl *= (double)heads_factor;
    }
    double gf = lat[0] > 0 ? flops / lat[0] / 1e9 : 0, gu = lat[1] > 0 ? flops / lat[1] / 1e9 : 0,
           gb = bl > 0 ? flops / bl / 1e9 : 0;
    printf("| %-22s | %9.2f | %6s | %9.2f | %6s | %9.2f | %6s | %6.1f%% | %5.2fx | %5.2fx | %6.1f |\n", label, gf,
           ok[0] ? "yes" : "NO", gu, ok[1] ? "yes" : "NO", gb, bok ? "yes" : "NO", peak > 0 ? 100 * gf / peak : 0,
           gu > 0 ? gf / gu : 0, gb > 0 ? gf / gb : 0, tref);
    fflush(stdout);
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    double rf[2] = {0, 0};
    if (run_in_child(roofline_child, NULL, rf, 2) != 0)
        fprintf(stderr, "bench_attention: roofline failed\n");
    printf("fp32 FMA peak %.1f GFLOP/s (%d threads, %s); OpenBLAS %s\n", rf[0], (int)rf[1],
           loom_bench_roofline_isa(), openblas_get_corename());
    printf("GFLOP/s = Neptune's FLOPs (4 N^2 D per head, causal 2 N (N+1) D) / median latency; "
           "fused = RollingUpdate hand schedule, unfused = loom's default schedule; all checked against the "
           "reference\n\n");
    printf("| %-22s | %9s | %6s | %9s | %6s | %9s | %6s | %7s | %6s | %6s | %6s |\n", "H x N x D", "fused", "ok",
           "unfused", "ok", "OpenBLAS", "ok", "% peak", "vs unf", "vs BLAS", "ref s");
    printf("|%s|\n", "------------------------|-----------|--------|-----------|--------|-----------|--------|---------|"
                     "--------|--------|--------");
    int64_t big = quick ? 1024 : 4096;
    char label[64];
    bench_case("12 x 512 x 64", MH_DENSE, 12, 512, 64, 0, 1, rf[0]);
    bench_case("12 x 512 x 64 causal", ONE_CAUSAL, 1, 512, 64, 1, 12, rf[0]);
    snprintf(label, sizeof label, "1 x %lld x 64", (long long)big);
    bench_case(label, ONE_DENSE, 1, big, 64, 0, 1, rf[0]);
    snprintf(label, sizeof label, "1 x %lld x 64 causal", (long long)big);
    bench_case(label, ONE_CAUSAL, 1, big, 64, 1, 1, rf[0]);
    return 0;
}
