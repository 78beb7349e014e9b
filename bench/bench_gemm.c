/* loom benchmark: dense GEMM (workloads/gemm.loom, C = A B, fp32) against
 * OpenBLAS's cblas_sgemm in the same run (issue 12).
 *
 *   bench_gemm [--trials N] [--quick] [--threads T] [--min-seconds S]
 *              [--db DIR] [--cases LIST]
 *
 * Cases: 256^3, 512^3, 1024^3 and "cora": A = Cora's 2708 x 1433 0/1
 * feature matrix read as a dense matrix (../shared/data/cora/
 * cora_features.mtx), B a 1433 x 16 weight (a GCN layer's X.W); "lfqkv"
 * (4096 x 256 x 256) and "lfffn" (M 4096, N 1024, K 256): the Longformer
 * layer's GEMMs at sequence 4096 (models/longformer/).  For each:
 *  - OpenBLAS sgemm on the same A and B, T threads, in a forked child
 *    (OpenMP and threaded BLAS do not survive fork, and loom measures its
 *    kernels in forked children: this process never starts a thread pool),
 *    its output checked against loom's reference;
 *  - loom's default schedule (modules/dense.c's decided tiles), measured
 *    and checked by the pipeline;
 *  - loom tuned: a campaign of N trials (default 128; loom_tune; 0 skips it),
 *    reported as the final re-measurement (loom_tune_remeasure: the top 5
 *    distinct schedules and the default, interleaved rounds, medians), not
 *    the campaign's minimum; min / median / max of the winner's rounds.
 * Every figure is GFLOP/s (2 M N K / seconds), its ratio to OpenBLAS and
 * its fraction of the roofline's FMA peak (bench/roofline.h, all threads),
 * and the 1-minute load average is printed: figures taken on a loaded
 * machine are noise (issue 12: over 2x spreads), the campaign marks them.
 *
 * Run from the repository root (make -C bench, then
 * build/bench/bench_gemm --quick for a 2-minute smoke run).  Campaign
 * databases go to DIR/gemm-CASE (default: a fresh directory under /tmp).
 *
 * LOOM_HOST_ISA=avx2 measures AVX2 on an AVX-512 host: loom builds its
 * kernels with -mno-avx512f, the roofline runs its AVX2 loop, and OpenBLAS
 * is run with OPENBLAS_CORETYPE=Haswell (set here, then the program runs
 * itself again); the "ISA:" line says what each side used. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "openblas_core.h"

#include "../dsl/ir/limits.h"
#include "../runtime/target/target.h"
#include "../dsl/ir/program.h"
#include "../dsl/ir/util.h"
#include "../modules/module.h"
#include "../runtime/data/dataset.h"
#include "../runtime/measure/build.h"
#include "../runtime/measure/pipeline.h"
#include "../runtime/measure/reference.h"
#include "../search/tune/tune.h"
#include "common.h"
#include "roofline.h"

/* OpenBLAS's own entry point (cblas.h of OpenBLAS declares it; the netlib
 * header may not) */
void openblas_set_num_threads(int num_threads);

typedef struct gemm_case {
    const char *name;
    int64_t M, N, K;
    int cora; /* A from Cora's features */
    int quick;
} gemm_case;

static const gemm_case CASES[] = {
    {"256", 256, 256, 256, 0, 1},
    {"512", 512, 512, 512, 0, 0},
    {"1024", 1024, 1024, 1024, 0, 1},
    {"cora", 2708, 16, 1433, 1, 0},
    /* the Longformer-style layer's GEMMs at sequence 4096 (bench_models.py --longformer): the Q/K/V and
     * output projections, and the feed-forward block's products */
    {"lfqkv", 4096, 256, 256, 0, 0},
    {"lfffn", 4096, 1024, 256, 0, 0},
};

typedef struct args {
    int trials, threads, quick;
    double min_seconds;
    const char *db, *cases, *root, *shared;
} args;

typedef struct blas_job {
    int64_t M, N, K;
    const float *A, *B;
    float *C; /* shared mapping */
    int threads;
    double min_seconds;
} blas_job;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* In a child: sgemm repeated until min_seconds (at least 5 runs, after one
 * warm-up); out[0] the median seconds, out[1] the minimum, out[2] the max. */
static void blas_child(void *arg, double *out, int nout)
{
    (void)nout;
    blas_job *j = arg;
    openblas_set_num_threads(j->threads);
    double t[256];
    int n = 0;
    double start = loom_now_seconds();
    for (int r = -1; r < 256; r++) {
        double t0 = loom_now_seconds();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)j->M, (int)j->N, (int)j->K, 1.0f, j->A,
                    (int)j->K, j->B, (int)j->N, 0.0f, j->C, (int)j->N);
        double dt = loom_now_seconds() - t0;
        if (r >= 0)
            t[n++] = dt;
        if (n >= 5 && loom_now_seconds() - start >= j->min_seconds)
            break;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    out[0] = t[n / 2];
    out[1] = t[0];
    out[2] = t[n - 1];
}

static void print_err(const char *what, const loom_error *err)
{
    fprintf(stderr, "bench_gemm: %s: %s\n", what, err->msg);
}

/* Parse gemm.loom and bind the case's sizes (Cora: A from the file). */
static int load_case(const args *a, const gemm_case *gc, loom_program **prog, loom_dataset **ds, char **text)
{
    loom_error err;
    loom_error_clear(&err);
    char path[512];
    snprintf(path, sizeof path, "%s/workloads/gemm.loom", a->root);
    if (loom_program_parse_file(path, prog, &err) != LOOM_OK) {
        print_err(path, &err);
        return -1;
    }
    loom_data_spec spec;
    memset(&spec, 0, sizeof spec);
    loom_param_spec params[3];
    memset(params, 0, sizeof params);
    int np = 0, nd = 0;
    if (gc->cora) {
        snprintf(spec.tensor, sizeof spec.tensor, "A");
        if (snprintf(spec.path, sizeof spec.path, "%.400s/cora/cora_features.mtx", a->shared) < 0)
            return -1;
        nd = 1;
    } else {
        snprintf(params[np].name, sizeof params[np].name, "M"), params[np++].value = gc->M;
        snprintf(params[np].name, sizeof params[np].name, "K"), params[np++].value = gc->K;
    }
    snprintf(params[np].name, sizeof params[np].name, "N"), params[np++].value = gc->N;
    if (loom_dataset_load(*prog, &spec, nd, params, np, 42, ds, &err) != LOOM_OK) {
        print_err(gc->cora ? spec.path : "binding sizes", &err);
        return -1;
    }
    FILE *f = fopen(path, "r");
    *text = NULL;
    if (f) {
        *text = calloc(1, 4096);
        if (*text && fread(*text, 1, 4095, f) == 0)
            (*text)[0] = '\0';
        fclose(f);
    }
    return 0;
}

typedef struct figs {
    double blas_s, blas_min, blas_max;
    double def_s;
    double tuned_s, tuned_min, tuned_max, tuned_sampled;
    int blas_ok, def_ok, tuned_ran, noisy, trials;
} figs;

static void run_blas(const args *a, loom_dataset *ds, const loom_reference *ref, const gemm_case *gc, figs *F)
{
    const loom_program *prog = ds->prog;
    int ta = loom_program_find_tensor(prog, "A"), tb = loom_program_find_tensor(prog, "B");
    int tc = loom_program_find_tensor(prog, "C");
    loom_tensor_abi *C = &ds->t[tc];
    size_t bytes = sizeof(float) * (size_t)(C->dims[0] * C->dims[1]);
    float *shared = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return;
    blas_job j = {C->dims[0], C->dims[1], ds->t[ta].dims[1], ds->t[ta].vals, ds->t[tb].vals, shared,
                  a->threads, a->min_seconds};
    (void)gc;
    double out[3] = {0, 0, 0};
    if (loom_bench_run_in_child(blas_child, &j, out, 3) == 0 && out[0] > 0) {
        F->blas_s = out[0], F->blas_min = out[1], F->blas_max = out[2];
        memcpy(C->vals, shared, bytes);
        loom_check chk;
        loom_reference_check(ds, ref, &chk);
        F->blas_ok = chk.correct;
    }
    munmap(shared, bytes);
}

static void run_loom(const args *a, loom_program *prog, loom_dataset *ds, const loom_reference *ref,
                     const gemm_case *gc, const char *text, figs *F)
{
    loom_error err;
    loom_error_clear(&err);
    loom_run_opts ro = loom_run_defaults();
    ro.measure.min_seconds = a->min_seconds;
    loom_schedule *def = malloc(sizeof *def);
    if (def && !loom_schedule_init(def, prog, NULL, &err) && !loom_default_build(NULL, NULL, def, NULL, &err)) {
        loom_run_result res;
        memset(&res, 0, sizeof res);
        if (loom_pipeline_run_schedule(def, ds, ref, &ro, &res, &err) == LOOM_OK && res.status == LOOM_OK) {
            F->def_s = res.latency_s;
            F->def_ok = res.correct;
        } else
            fprintf(stderr, "bench_gemm %s: default: %s\n", gc->name, res.message[0] ? res.message : err.msg);
    } else
        print_err("the default schedule", &err);
    free(def);
    if (a->trials <= 0)
        return;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/gemm-%s", a->db, gc->name);
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.trials = a->trials;
    o.workload_name = "gemm";
    o.workload_text = text;
    o.run = ro;
    loom_tune_result r;
    fprintf(stderr, "bench_gemm %s: campaign of %d trials in %s\n", gc->name, a->trials, dir);
    if (loom_tune(prog, ds, &o, &r, &err) != LOOM_OK) {
        print_err("campaign", &err);
        return;
    }
    F->tuned_ran = 1;
    F->trials = r.trials;
    F->tuned_s = r.best_latency_s;
    F->tuned_sampled = r.sampled_best_latency_s;
    F->noisy = r.noisy;
    F->tuned_min = F->tuned_max = r.best_latency_s;
    for (int k = 0; k < r.nremeasured; k++)
        if (!r.remeasured[k].is_default && r.remeasured[k].median_s == r.best_latency_s) {
            F->tuned_min = r.remeasured[k].min_s;
            F->tuned_max = r.remeasured[k].max_s;
            break;
        }
}

static void print_row(const gemm_case *gc, int64_t M, int64_t N, int64_t K, const figs *F, double peak)
{
    double fl = 2.0 * (double)M * (double)N * (double)K;
#define GF(s) ((s) > 0 ? fl / (s) / 1e9 : 0.0)
    printf("%-6s %5lld %5lld %5lld | %8.1f %s | %8.1f %5.2fx %4.0f%% %s |", gc->name, (long long)M, (long long)N,
           (long long)K, GF(F->blas_s), F->blas_ok ? "ok" : "--", GF(F->def_s),
           F->blas_s > 0 && F->def_s > 0 ? F->blas_s / F->def_s : 0.0, peak > 0 ? 100 * GF(F->def_s) / peak : 0.0,
           F->def_ok ? "ok" : "--");
    if (F->tuned_ran)
        printf(" %8.1f %5.2fx %4.0f%% [%.1f..%.1f] sampled %.1f%s\n", GF(F->tuned_s),
               F->blas_s > 0 && F->tuned_s > 0 ? F->blas_s / F->tuned_s : 0.0,
               peak > 0 ? 100 * GF(F->tuned_s) / peak : 0.0, GF(F->tuned_max), GF(F->tuned_min),
               GF(F->tuned_sampled), F->noisy ? " NOISY" : "");
    else
        printf(" (no campaign)\n");
#undef GF
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_gemm [--trials N] [--quick] [--threads T] [--min-seconds S] [--db DIR] [--cases LIST]\n"
            "  --trials N       tuning trials per case (default 128; 0: default schedule only)\n"
            "  --quick          cases 256 and 1024, 32 trials, 0.05 s per measurement\n"
            "  --threads T      threads for loom's kernels and OpenBLAS (default 2)\n"
            "  --cases LIST     comma-separated among 256,512,1024,cora,lfqkv,lfffn (default all)\n"
            "  --db DIR         campaign directories go to DIR/gemm-CASE (default /tmp/loom-bench-gemm-PID)\n"
            "Run from the repository root.  Cora: $LOOM_SHARED_DATA, else ../shared/data.\n");
}

int main(int argc, char **argv)
{
    /* OpenBLAS held to LOOM_HOST_ISA, or given the host's kernels when it
     * does not know the CPU (openblas_core.h): may run the program again */
    loom_bench_openblas_core(argv);
    args a = {128, 2, 0, 0.2, NULL, NULL, ".", NULL};
    int trials_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--quick"))
            a.quick = 1;
        else if (!strcmp(argv[i], "--trials") && v)
            a.trials = atoi(v), i++, trials_set = 1;
        else if (!strcmp(argv[i], "--threads") && v)
            a.threads = atoi(v), i++;
        else if (!strcmp(argv[i], "--min-seconds") && v)
            a.min_seconds = atof(v), i++;
        else if (!strcmp(argv[i], "--db") && v)
            a.db = v, i++;
        else if (!strcmp(argv[i], "--cases") && v)
            a.cases = v, i++;
        else {
            usage();
            return 2;
        }
    }
    if (a.quick) {
        a.min_seconds = 0.05;
        if (!trials_set)
            a.trials = 32;
    }
    if (a.threads < 1)
        a.threads = 1;
    char nt[16];
    snprintf(nt, sizeof nt, "%d", a.threads);
    setenv("OMP_NUM_THREADS", nt, 1); /* loom's kernels (measured in children) */
    struct stat st;
    if (stat("workloads/gemm.loom", &st) != 0) {
        a.root = "..";
        if (stat("../workloads/gemm.loom", &st) != 0) {
            fprintf(stderr, "bench_gemm: workloads/gemm.loom not found; run from the repository root\n");
            return 2;
        }
    }
    static char shared[400], dbdir[256];
    snprintf(shared, sizeof shared, "%s", getenv("LOOM_SHARED_DATA") ? getenv("LOOM_SHARED_DATA") : "");
    if (!shared[0])
        snprintf(shared, sizeof shared, "%s/../shared/data", a.root);
    a.shared = shared;
    if (!a.db) {
        snprintf(dbdir, sizeof dbdir, "/tmp/loom-bench-gemm-%ld", (long)getpid());
        a.db = dbdir;
    }

    double rl[4] = {0, 0, 0, 0};
    if (loom_bench_run_in_child(loom_bench_roofline_child, NULL, rl, 4) != 0 || rl[3] != 0)
        fprintf(stderr, "bench_gemm: the roofline could not be measured\n");
    double load[1] = {NAN};
    getloadavg(load, 1);
    printf("bench_gemm: fp32 GEMM C = A B, loom vs OpenBLAS sgemm, %d threads; roofline FMA peak %.1f GFLOP/s "
           "(%s, %d threads), load average %.2f%s\n",
           a.threads, rl[1], loom_bench_roofline_isa(), (int)rl[2], load[0],
           load[0] > 0.8 * a.threads ? " (LOADED: figures are noise)" : "");
    loom_limits host = loom_target_cpu_limits(); /* the CPU target's (runtime/machine/machine.h) */
    const char *isa = getenv("LOOM_HOST_ISA");
    printf("ISA: loom kernels for %s (%d-bit vectors, %d registers; cc %s)%s, OpenBLAS %s\n", loom_limits_host_isa(),
           host.vector_lanes * 32, loom_limits_registers(&host), loom_build_default_cflags(host.vector_lanes * 32),
           isa && *isa ? " (LOOM_HOST_ISA override)" : "", loom_bench_openblas_note());
    printf("GFLOP/s; ratios are to OpenBLAS; %%pk = of the FMA peak; tuned = re-measured median of the best "
           "schedule [max..min GFLOP/s over its rounds], sampled = the campaign's biased-low best\n");
    printf("%-6s %5s %5s %5s | %8s %2s | %8s %6s %5s %2s | %8s %6s %5s\n", "case", "M", "N", "K", "OpenBLAS", "",
           "default", "ratio", "%pk", "", "tuned", "ratio", "%pk");
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++) {
        const gemm_case *gc = &CASES[c];
        if (a.cases ? !strstr(a.cases, gc->name) : (a.quick && !gc->quick))
            continue;
        loom_program *prog = NULL;
        loom_dataset *ds = NULL;
        char *text = NULL;
        loom_reference *ref = NULL;
        loom_error err;
        figs F;
        memset(&F, 0, sizeof F);
        if (load_case(&a, gc, &prog, &ds, &text) == 0 && loom_reference_run(ds, &ref, &err) == LOOM_OK) {
            int ta = loom_program_find_tensor(prog, "A");
            int64_t M = ds->t[ta].dims[0], K = ds->t[ta].dims[1];
            int64_t N = ds->t[loom_program_find_tensor(prog, "B")].dims[1];
            run_blas(&a, ds, ref, gc, &F);
            run_loom(&a, prog, ds, ref, gc, text, &F);
            print_row(gc, M, N, K, &F, rl[1]);
            fflush(stdout);
        }
        loom_reference_free(ref);
        free(text);
        loom_dataset_free(ds);
        loom_program_free(prog);
    }
    return 0;
}
