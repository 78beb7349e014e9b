/* loom benchmark (issue 13): SDDMM's dot product with partial sums
 * (LOOM_ANN_PARTIAL_SUMS, drawn by the dot-partial-sums module) against the
 * scalar accumulator, and both against the default schedule.
 *
 *   bench_sddmm_psum [--rounds R] [--reps N] [--D N] [MATRIX.mtx ...]
 *
 * S(i, j) = M(i, j) Q(i, d) K(j, d) (workloads/sddmm.loom) on each matrix
 * (default data/cora_adj.mtx) at D (default 64).  Schedules: the default
 * (i parallel, j, d vectorized, one simd reduction per entry), then i
 * parallel, j, d.0, d.1 vectorized for d tiles [D/W, W], W = 8, 16, 32, 64,
 * each with the scalar accumulator (a simd reduction per pass of d.0) and
 * with W partial sums folded once per entry.  Each kernel is lowered and
 * compiled by loom, checked against loom's reference, then run in this
 * process on ONE thread (OMP_NUM_THREADS=1), all interleaved (R rounds of N
 * runs of each); the figure is the minimum CPU time per run of the thread
 * (CLOCK_THREAD_CPUTIME_ID), with the ratio to the default.  Defaults: 10
 * rounds x 10 runs (seconds). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/query.h"
#include "../modules/module.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/data/dataset.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/build.h"
#include "../runtime/measure/reference.h"
#include "../traces/validate.h"
#include "../runtime/machine/machine.h"
#include "cputime.h"



#define CHECK(call)                                                                                                \
    do {                                                                                                           \
        if ((call) != LOOM_OK) {                                                                                   \
            fprintf(stderr, "bench_sddmm_psum: %s: %s\n", #call, err.msg);                                           \
            exit(2);                                                                                               \
        }                                                                                                          \
    } while (0)

#define MAXK 16

/* The default schedule (W = 0) or the d tiles [D / W, W] with d.1
 * vectorized, partial sums on or off; 0 when W does not divide D. */
static int schedule(loom_schedule *sch, int64_t D, int64_t W, int psum)
{
    loom_error err;
    if (!W) {
        CHECK(loom_default_build(NULL, NULL, sch, NULL, &err)); /* the campaign's default (module.h) */
        return 1;
    }
    if (D % W)
        return 0;
    int b, l[LOOM_MAX_LOOPS], n, parts[2];
    CHECK(loom_get_block(sch, "S", &b, &err));
    CHECK(loom_get_loops(sch, b, l, &n, &err));
    CHECK(loom_split(sch, l[2], 2, NULL, (int64_t[]){D / W, W}, parts, &err));
    CHECK(loom_get_loops(sch, b, l, &n, &err));
    CHECK(loom_parallel(sch, l[0], &err));
    CHECK(loom_vectorize(sch, l[n - 1], &err));
    if (psum)
        CHECK(loom_annotate(sch, l[n - 1], LOOM_ANN_PARTIAL_SUMS, -1, 1, &err));
    loom_limits cpu = loom_target_cpu_limits(); /* the CPU the bench runs on */
    loom_violation v;
    if (loom_validate(sch, &cpu, &v, NULL) != LOOM_OK) {
        fprintf(stderr, "bench_sddmm_psum: invalid schedule (W = %lld): %s\n", (long long)W, v.msg);
        return 0;
    }
    return 1;
}

static void one_case(const char *mtx, int64_t D, int rounds, int reps)
{
    loom_error err;
    loom_program *prog = NULL;
    CHECK(loom_program_parse_file("workloads/sddmm.loom", &prog, &err));
    loom_dataset *ds = loom_bench_load(prog, "M", mtx, "D", D, "bench_sddmm_psum");
    loom_reference *ref = NULL;
    CHECK(loom_reference_run(ds, &ref, &err));
    loom_schedule *sch = malloc(sizeof *sch);
    static const int64_t WS[] = {8, 16, 32, 64};
    loom_module mod[MAXK];
    loom_kernel_fn fn[MAXK];
    char label[MAXK][48];
    int nk = 0;
    for (int w = -1; w < 4; w++)
        for (int psum = 0; psum < (w < 0 ? 1 : 2); psum++) {
            CHECK(loom_schedule_init(sch, prog, NULL, &err));
            if (!schedule(sch, D, w < 0 ? 0 : WS[w], psum))
                continue;
            if (w < 0)
                snprintf(label[nk], sizeof label[nk], "default");
            else
                snprintf(label[nk], sizeof label[nk], "d [%lld, %lld] %s", (long long)(D / WS[w]), (long long)WS[w],
                         psum ? "partial sums" : "scalar acc");
            fn[nk] = loom_bench_build_kernel(sch, &mod[nk], NULL, "bench_sddmm_psum");
            loom_bench_check_kernel(fn[nk], ds, ref, "bench_sddmm_psum", label[nk]);
            nk++;
        }
    double mn[MAXK], med[MAXK];
    loom_bench_cpu_times(fn, nk, ds, rounds, reps, mn, med);
    const char *base = strrchr(mtx, '/') ? strrchr(mtx, '/') + 1 : mtx;
    for (int k = 0; k < nk; k++) {
        printf("%-18s D=%-3lld %-28s %9.1f us (median %9.1f)   default/this %.2f\n", base, (long long)D, label[k],
               mn[k] * 1e6, med[k] * 1e6, mn[0] / mn[k]);
        loom_module_close(&mod[k]);
    }
    free(sch);
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

int main(int argc, char **argv)
{
    setenv("OMP_NUM_THREADS", "1", 1); /* before the first kernel starts OpenMP */
    int rounds = 10, reps = 10, D = 64;
    const char *mtx[16];
    int nm = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--rounds") && a + 1 < argc)
            rounds = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--reps") && a + 1 < argc)
            reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--D") && a + 1 < argc)
            D = atoi(argv[++a]);
        else if (argv[a][0] != '-' && nm < 16)
            mtx[nm++] = argv[a];
        else {
            fprintf(stderr, "usage: bench_sddmm_psum [--rounds R] [--reps N] [--D N] [MATRIX.mtx ...]\n");
            return 2;
        }
    }
    if (rounds < 1 || reps < 1 || D < 1) {
        fprintf(stderr, "bench_sddmm_psum: --rounds, --reps and --D must be >= 1\n");
        return 2;
    }
    if (!nm)
        mtx[nm++] = "data/cora_adj.mtx";
    printf("SDDMM, one thread, min CPU time per run over %d interleaved rounds x %d runs (CLOCK_THREAD_CPUTIME_ID)\n",
           rounds, reps);
    for (int m = 0; m < nm; m++)
        one_case(mtx[m], D, rounds, reps);
    return 0;
}
