/* loom benchmark (issue 12): the fused epilogue (ReverseComputeAt, drawn by
 * the reverse-compute-location module) against the separate pass.
 *
 *   bench_epilogue [--rounds R] [--reps N] [--F N]... [MATRIX.mtx ...]
 *
 * The GCN layer's SpMM and ReLU (workloads/gcn2.loom's Z1 = A T1 and
 * H1 = relu(Z1)): C(i, f) = A(i, k) B(k, f), R(i, f) = relu(C(i, f)), on
 * each matrix (default data/cora_adj.mtx) at each F (default 16 and 64).
 * Two schedules that differ only in where R is computed:
 *   separate  C: i parallel, k, f vectorized; then R: i parallel, f
 *             vectorized (two passes over the N x F result);
 *   fused     the same, R computed at the end of each iteration of C's row
 *             loop (ReverseComputeAt(R, i)), so it reads C's row from cache.
 * Both are lowered and compiled by loom (cc -O3 -march=native), checked
 * against loom's reference interpreter, then run in this process with ONE
 * thread (OMP_NUM_THREADS=1 is set before OpenMP starts), interleaved:
 * R rounds, each N runs of separate then N of fused.  The figure is the
 * minimum per-run CPU time of the thread (CLOCK_THREAD_CPUTIME_ID), which
 * other processes on a loaded machine disturb far less than wall time;
 * the median is printed too.  Defaults: 15 rounds x 20 runs (a few seconds).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/data/dataset.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/build.h"
#include "../runtime/measure/reference.h"
#include "../traces/validate.h"
#include "../runtime/machine/machine.h"
#include "cputime.h"

static const char *SRC = "param F = 16\n"
                         "tensor A(N, K) csr\n"
                         "tensor B(K, F) dense\n"
                         "tensor R(N, F) dense output\n"
                         "C(i, f) += A(i, k) * B(k, f)\n"
                         "R(i, f) = relu(C(i, f))\n";

#define CHECK(call)                                                                                                \
    do {                                                                                                           \
        if ((call) != LOOM_OK) {                                                                                   \
            fprintf(stderr, "bench_epilogue: %s: %s\n", #call, err.msg);                                           \
            exit(2);                                                                                               \
        }                                                                                                          \
    } while (0)

/* The schedule: C (i parallel, k, f vectorized), R (i parallel, f
 * vectorized), R at C's row loop when fused. */
static void schedule(loom_schedule *sch, int fused)
{
    loom_error err;
    int bc, br, lc[LOOM_MAX_LOOPS], lr[LOOM_MAX_LOOPS], n;
    CHECK(loom_get_block(sch, "C", &bc, &err));
    CHECK(loom_get_block(sch, "R", &br, &err));
    CHECK(loom_get_loops(sch, bc, lc, &n, &err));
    CHECK(loom_parallel(sch, lc[0], &err));
    CHECK(loom_vectorize(sch, lc[n - 1], &err));
    CHECK(loom_get_loops(sch, br, lr, &n, &err));
    CHECK(loom_parallel(sch, lr[0], &err));
    CHECK(loom_vectorize(sch, lr[n - 1], &err));
    if (fused)
        CHECK(loom_reverse_compute_at(sch, br, lc[0], &err));
    loom_limits cpu = loom_target_cpu_limits(); /* the CPU the bench runs on */
    loom_violation v;
    if (loom_validate(sch, &cpu, &v, NULL) != LOOM_OK) {
        fprintf(stderr, "bench_epilogue: invalid schedule: %s\n", v.msg);
        exit(2);
    }
}

static void one_case(const char *mtx, int F, int rounds, int reps)
{
    loom_error err;
    loom_program *prog = NULL;
    CHECK(loom_program_parse_string(SRC, "epilogue.loom", &prog, &err));
    loom_dataset *ds = loom_bench_load(prog, "A", mtx, "F", F, "bench_epilogue");
    loom_reference *ref = NULL;
    CHECK(loom_reference_run(ds, &ref, &err));
    loom_schedule *sch = malloc(sizeof *sch);
    loom_module mod[2];
    loom_kernel_fn fn[2];
    const char *dump = getenv("BENCH_EPILOGUE_DUMP"); /* DIR: the C to DIR/separate.c, DIR/fused.c */
    for (int k = 0; k < 2; k++) {
        CHECK(loom_schedule_init(sch, prog, NULL, &err));
        schedule(sch, k);
        char path[1024];
        if (dump)
            snprintf(path, sizeof path, "%s/%s.c", dump, k ? "fused" : "separate");
        fn[k] = loom_bench_build_kernel(sch, &mod[k], dump ? path : NULL, "bench_epilogue");
        loom_bench_check_kernel(fn[k], ds, ref, "bench_epilogue", k ? "fused" : "separate");
    }
    double mn[2], med[2];
    loom_bench_cpu_times(fn, 2, ds, rounds, reps, mn, med);
    const char *base = strrchr(mtx, '/') ? strrchr(mtx, '/') + 1 : mtx;
    printf("%-22s F=%-4d separate %8.1f us (median %8.1f)   fused %8.1f us (median %8.1f)   fused/separate %.3f\n",
           base, F, mn[0] * 1e6, med[0] * 1e6, mn[1] * 1e6, med[1] * 1e6, mn[1] / mn[0]);
    for (int k = 0; k < 2; k++)
        loom_module_close(&mod[k]);
    free(sch);
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

int main(int argc, char **argv)
{
    setenv("OMP_NUM_THREADS", "1", 1); /* before the first kernel starts OpenMP */
    int rounds = 15, reps = 20, nF = 0, F[8];
    const char *mtx[16];
    int nm = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--rounds") && a + 1 < argc)
            rounds = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--reps") && a + 1 < argc)
            reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--F") && a + 1 < argc && nF < 8)
            F[nF++] = atoi(argv[++a]);
        else if (argv[a][0] != '-' && nm < 16)
            mtx[nm++] = argv[a];
        else {
            fprintf(stderr, "usage: bench_epilogue [--rounds R] [--reps N] [--F N]... [MATRIX.mtx ...]\n");
            return 2;
        }
    }
    if (rounds < 1 || reps < 1) {
        fprintf(stderr, "bench_epilogue: --rounds and --reps must be >= 1\n");
        return 2;
    }
    if (!nm)
        mtx[nm++] = "data/cora_adj.mtx";
    if (!nF) {
        F[nF++] = 16;
        F[nF++] = 64;
    }
    printf("SpMM + ReLU epilogue, one thread, min CPU time per run over %d interleaved rounds x %d runs "
           "(CLOCK_THREAD_CPUTIME_ID)\n",
           rounds, reps);
    for (int m = 0; m < nm; m++)
        for (int k = 0; k < nF; k++)
            one_case(mtx[m], F[k], rounds, reps);
    return 0;
}
