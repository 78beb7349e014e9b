/* loom benchmark: SpMM (workloads/spmm.loom) on the shared real matrices,
 * loom's default schedule (modules/module.h: Scorch's loop order, the
 * feature loop tiled by 32 with a workspace, parallel rows, vectorized
 * tile) and its naive loop nest against Eigen, placed on the measured
 * roofline; prints the default's speedup over the naive nest and its ratio
 * to Eigen.
 *
 *   bench_spmm [--quick] [--large] [--markdown] [--min-seconds S] [--best-of N]
 *
 * For each matrix and F in {32, 128}: parse the workload, load A from the
 * Matrix Market file (B is loom's seeded uniform [-1, 1) generator), compute
 * the reference (double precision), run loom's default schedule through the
 * pipeline (generate, compile, measure in a child, check), run Eigen's
 * sparse x dense product on the very same A and B, and check Eigen's output
 * against the same reference.
 *
 * OpenMP and fork: loom measures kernels in forked children, and libgomp
 * does not survive a fork once the parent has run a parallel region.  So
 * this process never runs OpenMP itself: the roofline and every Eigen run
 * happen in forked children (Eigen writes C into a shared mapping).
 *
 * Matrices: $LOOM_SHARED_DATA, else ../shared/data relative to the repo
 * root; an absent file is skipped with a message.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../dsl/ir/program.h"
#include "../dsl/ir/util.h"
#include "../modules/module.h"
#include "../runtime/data/dataset.h"
#include "../runtime/measure/pipeline.h"
#include "../runtime/measure/reference.h"
#include "eigen_spmm.h"
#include "common.h"
#include "roofline.h"

typedef struct matrix_entry {
    const char *name;
    const char *rel;  /* path under the shared data directory */
    int large;        /* only with --large */
    int quick;        /* part of --quick */
} matrix_entry;

static const matrix_entry MATRICES[] = {
    {"cora", "cora/cora_adj.mtx", 0, 1},
    {"pubmed", "pubmed/pubmed_adj.mtx", 0, 0},
    {"facebook", "facebook/facebook_adj.mtx", 0, 0},
    {"bcsstk13", "suitesparse/bcsstk13.mtx", 0, 1},
    {"bcsstk16", "suitesparse/bcsstk16.mtx", 0, 0},
    {"4elt", "suitesparse/4elt.mtx", 0, 0},
    {"mbeacxc", "suitesparse/mbeacxc.mtx", 0, 0},
    {"n1024-l1", "suitesparse/n1024-l1.mtx", 0, 0},
    {"web-NotreDame", "web-NotreDame/web-NotreDame.mtx", 1, 0},
};
static const int FS[] = {32, 128};

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- running OpenMP code in a forked child (common.h) ----------------- */

typedef struct eigen_job {
    int64_t n, k, F;
    const int32_t *pos, *crd;
    const float *vals, *B;
    float *C;  /* shared mapping */
    double min_seconds;
} eigen_job;

static void eigen_child(void *arg, double *out, int nout)
{
    (void)nout;
    eigen_job *j = arg;
    out[0] = loom_bench_eigen_spmm(j->n, j->k, j->pos, j->crd, j->vals, j->F, j->B, j->C,
                                   j->min_seconds);
    out[1] = loom_bench_eigen_threads();
}

/* ---- one (matrix, F) case --------------------------------------------- */

typedef struct row {
    char name[64];
    int64_t rows, cols, nnz, F;
    double loom_gflops, eigen_gflops; /* loom: the default schedule */
    double naive_gflops;              /* loom's naive loop nest */
    double bound_gflops;
    int loom_ok, eigen_ok;       /* correctness: 1 ok, 0 wrong, -1 did not run */
    double loom_err, eigen_err;  /* max relative error vs the reference */
    double tol;                  /* the check's tolerance */
    char note[640];
} row;

static double g_bw, g_peak;
static int g_eigen_threads;
static int g_markdown;

static void print_header(void)
{
    if (g_markdown) {
        printf("| matrix | rows | nnz | F | naive GFLOP/s | loom GFLOP/s | default/naive | Eigen GFLOP/s | loom/Eigen "
               "| loom %% of peak | roofline bound GFLOP/s | loom %% of bound | loom ok | Eigen ok |\n");
        printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
        return;
    }
    printf("%-14s %8s %9s %4s %9s %9s %7s %9s %7s %7s %9s %8s %5s %5s\n", "matrix", "rows", "nnz", "F",
           "naive", "loom", "l/naive", "Eigen", "l/E", "%peak", "bound", "%bound", "loom", "Eigen");
    printf("%-14s %8s %9s %4s %9s %9s %7s %9s %7s %7s %9s %8s %5s %5s\n", "", "", "", "", "GFLOP/s",
           "GFLOP/s", "", "GFLOP/s", "", "", "GFLOP/s", "", "ok", "ok");
}

static const char *okstr(int ok) { return ok > 0 ? "yes" : ok == 0 ? "NO" : "-"; }

static void fmt_num(char *buf, size_t n, double v, const char *fmt)
{
    if (v > 0 && isfinite(v))
        snprintf(buf, n, fmt, v);
    else
        snprintf(buf, n, "-");
}

static void print_row(const row *r)
{
    char lg[32], eg[32], ratio[32], pk[32], bd[32], pb[32], ng[32], sp[32];
    fmt_num(lg, sizeof lg, r->loom_gflops, "%.2f");
    fmt_num(ng, sizeof ng, r->naive_gflops, "%.2f");
    fmt_num(sp, sizeof sp, r->loom_gflops > 0 && r->naive_gflops > 0 ? r->loom_gflops / r->naive_gflops : 0, "%.2f");
    fmt_num(eg, sizeof eg, r->eigen_gflops, "%.2f");
    fmt_num(ratio, sizeof ratio,
            r->loom_gflops > 0 && r->eigen_gflops > 0 ? r->loom_gflops / r->eigen_gflops : 0,
            "%.2f");
    fmt_num(pk, sizeof pk, r->loom_gflops > 0 && g_peak > 0 ? 100 * r->loom_gflops / g_peak : 0,
            "%.1f");
    fmt_num(bd, sizeof bd, r->bound_gflops, "%.1f");
    fmt_num(pb, sizeof pb, r->loom_gflops > 0 && r->bound_gflops > 0 ? 100 * r->loom_gflops / r->bound_gflops : 0,
            "%.0f");
    if (g_markdown)
        printf("| %s | %lld | %lld | %lld | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r->name,
               (long long)r->rows, (long long)r->nnz, (long long)r->F, ng, lg, sp, eg, ratio, pk, bd, pb,
               okstr(r->loom_ok), okstr(r->eigen_ok));
    else
        printf("%-14s %8lld %9lld %4lld %9s %9s %7s %9s %7s %7s %9s %8s %5s %5s\n", r->name,
               (long long)r->rows, (long long)r->nnz, (long long)r->F, ng, lg, sp, eg, ratio, pk, bd, pb,
               okstr(r->loom_ok), okstr(r->eigen_ok));
    if (r->note[0])
        printf(g_markdown ? "<!-- note: %s -->\n" : "    note: %s\n", r->note);
    fflush(stdout);
}

static void print_error(const char *what, const loom_error *err)
{
    char buf[1400];
    fprintf(stderr, "bench_spmm: %s: %s\n", what, loom_error_format(err, buf, sizeof buf));
}

/* 1 when at least two of the n medians are within 25 % of the best. */
static int confirmed(const double *meds, int n)
{
    double best = 0;
    for (int i = 0; i < n; i++)
        if (best == 0 || meds[i] < best)
            best = meds[i];
    int close = 0;
    for (int i = 0; i < n; i++)
        if (meds[i] <= 1.25 * best)
            close++;
    return close >= 2;
}

/* Append "; " (when the note is not empty) and the formatted text to r->note. */
static void add_note(row *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(row *r, const char *fmt, ...)
{
    char text[sizeof r->note];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    size_t l = strlen(r->note);
    snprintf(r->note + l, sizeof r->note - l, "%s%s", l ? "; " : "", text);
}

/* Parse the workload and load matrix `path` as A with F columns; fills
 * r's shape.  0 on success, -1 (message printed) otherwise. */
static int load_case(const char *workload, const char *path, int F, loom_program **prog, loom_dataset **ds,
                     row *r)
{
    loom_error err;
    loom_error_clear(&err);
    if (loom_program_parse_file(workload, prog, &err) != LOOM_OK) {
        print_error("parsing the workload", &err);
        return -1;
    }
    loom_data_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.tensor, sizeof spec.tensor, "A");
    int plen = snprintf(spec.path, sizeof spec.path, "%s", path);
    if (plen < 0 || (size_t)plen >= sizeof spec.path) {
        fprintf(stderr, "bench_spmm: path too long: %s\n", path);
        return -1;
    }
    loom_param_spec param;
    memset(&param, 0, sizeof param);
    snprintf(param.name, sizeof param.name, "F");
    param.value = F;
    if (loom_dataset_load(*prog, &spec, 1, &param, 1, 42, ds, &err) != LOOM_OK) {
        print_error(path, &err);
        return -1;
    }
    int ta = loom_program_find_tensor(*prog, "A");
    int tb = loom_program_find_tensor(*prog, "B");
    int tc = loom_program_find_tensor(*prog, "C");
    if (ta < 0 || tb < 0 || tc < 0) {
        fprintf(stderr, "bench_spmm: %s lacks tensor A, B or C\n", workload);
        return -1;
    }
    loom_tensor_abi *A = &(*ds)->t[ta], *B = &(*ds)->t[tb], *C = &(*ds)->t[tc];
    r->rows = A->dims[0];
    r->cols = A->dims[1];
    r->nnz = A->nnz;
    if (!A->pos[1] || !A->crd[1] || !A->vals || !B->vals || !C->vals) {
        fprintf(stderr, "bench_spmm: %s: A is not loaded as CSR\n", path);
        return -1;
    }
    return 0;
}

/* The alternating rounds of one case: each kernel's medians and best, and
 * whether it has failed (then it is not run again). */
typedef struct rounds {
    double loom_best, eigen_best, naive_best;
    int loom_failed, eigen_failed, naive_failed;
    double loom_meds[64], eigen_meds[64];
    int nloom, neigen;
    char loom_note[300];
} rounds;

/* One run of loom's default kernel (checked against the reference). */
static void loom_round(const loom_schedule *def, loom_dataset *ds, const loom_reference *ref,
                       const loom_run_opts *opts, row *r, rounds *R)
{
    loom_error err;
    loom_error_clear(&err);
    loom_run_result res;
    memset(&res, 0, sizeof res);
    if (loom_pipeline_run_schedule(def, ds, ref, opts, &res, &err) != LOOM_OK) {
        print_error("loom pipeline", &err);
        snprintf(R->loom_note, sizeof R->loom_note, "loom pipeline failed: %.200s", err.msg);
        R->loom_failed = 1;
    } else if (res.status != LOOM_OK && res.status != LOOM_ERR_WRONG) {
        snprintf(R->loom_note, sizeof R->loom_note, "loom kernel: %s: %.200s", loom_status_name(res.status),
                 res.message);
        R->loom_failed = 1;
    } else {
        if (r->loom_ok != 0) /* wrong once: wrong */
            r->loom_ok = res.correct ? 1 : 0;
        if (res.max_rel_err > r->loom_err)
            r->loom_err = res.max_rel_err;
        r->tol = res.tol;
        if (!res.correct)
            snprintf(R->loom_note, sizeof R->loom_note, "loom output wrong: max rel err %.3g > tol %.3g",
                     res.max_rel_err, res.tol);
        if (res.latency_s > 0) {
            R->loom_meds[R->nloom++] = res.latency_s;
            if (R->loom_best == 0 || res.latency_s < R->loom_best)
                R->loom_best = res.latency_s;
        }
    }
}

/* loom's default kernel, the naive loop nest and Eigen on the same A and
 * B, alternately, best_of times each (more if the best is not confirmed);
 * the best median of each is kept (a filter for other processes'
 * interference).  Eigen runs in a child (OpenMP) and writes C into the
 * shared mapping job->C. */
static int run_rounds(const loom_program *prog, loom_dataset *ds, const loom_reference *ref,
                      const loom_run_opts *opts, eigen_job *job, int best_of, row *r, rounds *R)
{
    loom_error err;
    loom_error_clear(&err);
    loom_schedule *def = malloc(sizeof *def);
    if (!def || loom_schedule_init(def, prog, NULL, &err) || loom_default_build(NULL, NULL, def, NULL, &err)) {
        if (def)
            print_error("the default schedule", &err);
        free(def);
        return -1;
    }
    for (int rep = 0; rep < 3 * best_of && rep < 64; rep++) {
        /* Enough: best_of rounds, and each kernel's best median confirmed
         * by a second one within 25 % (else another process got in the
         * way: go on, up to 3 x best_of rounds). */
        if (rep >= best_of && (R->loom_failed || confirmed(R->loom_meds, R->nloom)) &&
            (R->eigen_failed || confirmed(R->eigen_meds, R->neigen)))
            break;
        if (!R->loom_failed)
            loom_round(def, ds, ref, opts, r, R);
        if (!R->naive_failed) {
            /* the naive loop nest (loom run --naive), for the speedup */
            loom_run_result res;
            memset(&res, 0, sizeof res);
            if (loom_pipeline_run(prog, ds, ref, opts, &res, &err) != LOOM_OK || res.status != LOOM_OK)
                R->naive_failed = 1;
            else if (res.latency_s > 0 && (R->naive_best == 0 || res.latency_s < R->naive_best))
                R->naive_best = res.latency_s;
        }
        if (!R->eigen_failed) {
            double eout[2] = {0, 0};
            if (loom_bench_run_in_child(eigen_child, job, eout, 2) != 0 || eout[0] <= 0) {
                R->eigen_failed = 1;
            } else {
                g_eigen_threads = (int)eout[1];
                R->eigen_meds[R->neigen++] = eout[0];
                if (R->eigen_best == 0 || eout[0] < R->eigen_best)
                    R->eigen_best = eout[0];
            }
        }
    }
    free(def);
    return 0;
}

/* The figures of r from the rounds; Eigen's last output (in shared_c) is
 * checked against the reference. */
static void finish_row(const rounds *R, double flops, loom_dataset *ds, const loom_reference *ref,
                       loom_tensor_abi *C, const float *shared_c, size_t shared_bytes, row *r)
{
    if (R->loom_best > 0)
        r->loom_gflops = flops / R->loom_best / 1e9;
    if (R->naive_best > 0)
        r->naive_gflops = flops / R->naive_best / 1e9;
    if (R->loom_note[0])
        add_note(r, "%s", R->loom_note);
    if (R->eigen_failed || R->eigen_best <= 0) {
        add_note(r, "Eigen run failed");
        return;
    }
    r->eigen_gflops = flops / R->eigen_best / 1e9;
    memcpy(C->vals, shared_c, shared_bytes);
    loom_check chk;
    loom_reference_check(ds, ref, &chk);
    r->eigen_ok = chk.correct ? 1 : 0;
    r->eigen_err = chk.max_rel_err;
    r->tol = chk.tol;
    if (!chk.correct)
        add_note(r, "Eigen output wrong: max rel err %.3g > tol %.3g", chk.max_rel_err, chk.tol);
}

/* Returns 0 when the case ran (even if a kernel was wrong), -1 when it could
 * not be set up. */
static int run_case(const char *workload, const char *name, const char *path, int F,
                    double min_seconds, int best_of, row *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->F = F;
    r->loom_ok = r->eigen_ok = -1;

    loom_error err;
    loom_error_clear(&err);
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    loom_reference *ref = NULL;
    float *shared_c = MAP_FAILED;
    size_t shared_bytes = 0;
    rounds *R = calloc(1, sizeof *R);
    int rc = -1;
    if (!R || load_case(workload, path, F, &prog, &ds, r))
        goto out;
    loom_tensor_abi *A = &ds->t[loom_program_find_tensor(prog, "A")];
    loom_tensor_abi *B = &ds->t[loom_program_find_tensor(prog, "B")];
    loom_tensor_abi *C = &ds->t[loom_program_find_tensor(prog, "C")];

    /* Roofline bound from compulsory traffic: A (vals + crd, pos), C, B. */
    double flops = 2.0 * (double)r->nnz * F;
    double bytes = (double)r->nnz * 8 + (double)(r->rows + 1) * 4 + (double)r->rows * F * 4 +
                   (double)r->cols * F * 4;
    double intensity = flops / bytes;
    r->bound_gflops = g_bw * intensity < g_peak ? g_bw * intensity : g_peak;

    if (loom_reference_run(ds, &ref, &err) != LOOM_OK) {
        print_error("reference", &err);
        goto out;
    }
    if (fabs(ref->flops - flops) > 0.5)
        snprintf(r->note, sizeof r->note, "reference counts %.0f FLOPs, 2*nnz*F = %.0f", ref->flops,
                 flops);

    loom_run_opts opts = loom_run_defaults();
    if (min_seconds > 0)
        opts.measure.min_seconds = min_seconds;
    shared_bytes = sizeof(float) * (size_t)r->rows * (size_t)F;
    shared_c = mmap(NULL, shared_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared_c == MAP_FAILED) {
        fprintf(stderr, "bench_spmm: mmap: %s\n", strerror(errno));
        goto out;
    }
    eigen_job job = {r->rows, r->cols, F, A->pos[1], A->crd[1], A->vals, B->vals, shared_c,
                     opts.measure.min_seconds};
    if (run_rounds(prog, ds, ref, &opts, &job, best_of, r, R))
        goto out;
    finish_row(R, flops, ds, ref, C, shared_c, shared_bytes, r);
    rc = 0;
out:
    if (shared_c != MAP_FAILED)
        munmap(shared_c, shared_bytes);
    free(R);
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_spmm [--quick] [--large] [--markdown] [--min-seconds S] [--best-of N]\n"
            "  --quick        only cora and bcsstk13\n"
            "  --large        also web-NotreDame (325729 rows, 1.5 M nonzeros)\n"
            "  --markdown     print the table as Markdown\n"
            "  --min-seconds  timed seconds per measurement (default: loom's, 0.1)\n"
            "  --best-of N    measure loom and Eigen N times each, alternately, and keep\n"
            "                 the best median of each (default 3; up to 3N times until the\n"
            "                 best is confirmed by a second median within 25%%)\n"
            "Run from the repository root.  Matrices: $LOOM_SHARED_DATA, else ../shared/data.\n");
}

int main(int argc, char **argv)
{
    double t_start = loom_now_seconds();
    int quick = 0, large = 0;
    double min_seconds = -1;
    int best_of = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--large"))
            large = 1;
        else if (!strcmp(argv[i], "--markdown"))
            g_markdown = 1;
        else if (!strcmp(argv[i], "--best-of") && i + 1 < argc && atoi(argv[i + 1]) > 0)
            best_of = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc)
            min_seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_spmm: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    /* Repo root: the current directory, or its parent when run from bench/. */
    const char *root = file_exists("workloads/spmm.loom") ? "."
                       : file_exists("../workloads/spmm.loom") ? ".."
                                                               : NULL;
    if (!root) {
        fprintf(stderr, "bench_spmm: workloads/spmm.loom not found; run from the repository root\n");
        return 2;
    }
    char workload[512], datadir[512];
    snprintf(workload, sizeof workload, "%s/workloads/spmm.loom", root);
    const char *env = getenv("LOOM_SHARED_DATA");
    if (env && env[0])
        snprintf(datadir, sizeof datadir, "%s", env);
    else
        snprintf(datadir, sizeof datadir, "%s/../shared/data", root);

    /* Roofline first (in a child: it runs OpenMP). */
    double load_before = 0;
    if (getloadavg(&load_before, 1) != 1)
        load_before = 0;
    double rl[4] = {0, 0, 0, 0};
    if (loom_bench_run_in_child(loom_bench_roofline_child, NULL, rl, 4) != 0 || rl[3] != 0) {
        fprintf(stderr, "bench_spmm: the roofline measurement failed\n");
    } else {
        g_bw = rl[0];
        g_peak = rl[1];
        int t = (int)rl[2];
        printf("roofline: bandwidth %.1f GB/s (triad, double, 3 x %d MiB, %d thread%s), "
               "fp32 FMA peak %.1f GFLOP/s (%d thread%s, %s)\n",
               g_bw, LOOM_BENCH_TRIAD_MIB, t, t == 1 ? "" : "s", g_peak, t, t == 1 ? "" : "s",
               loom_bench_roofline_isa());
    }
    if (load_before > 0.5)
        printf("note: load average %.2f at the start; other processes share the cores, "
               "so the figures may be noisy\n", load_before);
    const char *omp = getenv("OMP_NUM_THREADS");
    printf("spmm: %s, data %s; loom = the default schedule, naive = the naive loop nest (parallel outer loop, %s OpenMP threads); "
           "Eigen %s SparseMatrix<float,RowMajor> * row-major dense, OpenMP; B uniform [-1,1) seed 42; "
           "FLOPs = 2*nnz*F; bound = min(peak, bandwidth * 2*nnz*F / compulsory bytes)\n",
           workload, datadir, omp && omp[0] ? omp : "all", loom_bench_eigen_version());
    print_header();

    int ran = 0, setup_failed = 0, skipped = 0;
    int loom_failed = 0, loom_wrong = 0, near_miss = 0, eigen_bad = 0;
    double sum_log_ratio = 0, sum_log_speedup = 0;
    int nratio = 0, nspeedup = 0;
    for (size_t m = 0; m < sizeof MATRICES / sizeof MATRICES[0]; m++) {
        const matrix_entry *e = &MATRICES[m];
        if (e->large && !large)
            continue;
        if (quick && !e->quick)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", datadir, e->rel);
        if (!file_exists(path)) {
            printf("%-14s skipped: %s not found\n", e->name, path);
            skipped++;
            continue;
        }
        for (size_t f = 0; f < sizeof FS / sizeof FS[0]; f++) {
            row r;
            if (run_case(workload, e->name, path, FS[f], min_seconds, best_of, &r) != 0) {
                printf("%-14s F=%d: could not be set up (see above)\n", e->name, FS[f]);
                setup_failed++;
                continue;
            }
            print_row(&r);
            ran++;
            /* A wrong loom output counts as a failure when its error is
             * beyond fp32 rounding: more than twice the larger of the
             * tolerance and Eigen's error on the same data. */
            double yard = r.eigen_ok >= 0 && r.eigen_err > r.tol ? r.eigen_err : r.tol;
            if (r.loom_ok < 0)
                loom_failed++;
            else if (r.loom_ok == 0 && !(r.loom_err <= 2 * yard))
                loom_wrong++;
            else if (r.loom_ok == 0)
                near_miss++;
            if (r.eigen_ok != 1)
                eigen_bad++;
            if (r.loom_gflops > 0 && r.naive_gflops > 0) {
                sum_log_speedup += log(r.loom_gflops / r.naive_gflops);
                nspeedup++;
            }
            if (r.loom_gflops > 0 && r.eigen_gflops > 0) {
                sum_log_ratio += log(r.loom_gflops / r.eigen_gflops);
                nratio++;
            }
        }
    }
    if (nspeedup > 0)
        printf("geometric mean default schedule / naive nest over %d case%s: %.2f\n", nspeedup,
               nspeedup == 1 ? "" : "s", exp(sum_log_speedup / nspeedup));
    if (nratio > 0)
        printf("geometric mean loom/Eigen over %d case%s: %.2f\n", nratio, nratio == 1 ? "" : "s",
               exp(sum_log_ratio / nratio));
    if (ran > 0)
        printf("Eigen threads: %d; best of >= %d alternating measurements per kernel\n",
               g_eigen_threads, best_of);
    if (near_miss)
        printf("warning: in %d case%s loom misses the reference check's tolerance by less than 2x "
               "(and Eigen's error is of the same size, see the notes): fp32 rounding beyond what "
               "the tolerance allows, not counted as a loom failure\n",
               near_miss, near_miss == 1 ? "" : "s");
    printf("spmm: %d case%s run; loom: %d failed to run, %d wrong beyond rounding; "
           "Eigen: %d failed or wrong; %d case%s not set up; %d matri%s skipped; elapsed %.1f s\n",
           ran, ran == 1 ? "" : "s", loom_failed, loom_wrong, eigen_bad, setup_failed,
           setup_failed == 1 ? "" : "s", skipped, skipped == 1 ? "x" : "ces", loom_now_seconds() - t_start);
    return (setup_failed || loom_failed || loom_wrong) ? 1 : 0;
}
