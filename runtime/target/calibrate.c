/* The host calibrated: microbenchmarks -> a target file (calibrate.h). */
#include "calibrate.h"

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../dsl/ir/limits.h"
#include "../../dsl/ir/util.h"
#include "../measure/build.h"
#include "calibrate_internal.h"

extern const char loom_calibrate_bench_text[]; /* calibrate_bench.inc, embedded by the Makefile */

static const long br_mem_bits[NBRMEM] = {2048, 8192, 32768, 65536, 131072, 524288};
/* model 49: strides of the strided chases, in lines -- none a power of two,
 * whose lines would crowd a few cache sets -- over STRIDE_CHASE_LINES lines,
 * twice a 64 KiB L1's */
static const long stride_lines[NSTRIDE] = {2, 31, 257, 4097};
#define STRIDE_CHASE_LINES 2048

typedef struct bench_fns {
    double (*clock)(long, int);
    double (*chase)(size_t, long, int);
    double (*read)(size_t, long, int, int);
    double (*gather)(size_t, long, int, int);
    double (*store)(size_t, int, int, int);
    double (*triad)(size_t, int, int);
    double (*fma)(int, long, int);
    double (*fma_add)(int, long, int);
    double (*omp)(int, int, int);
    int (*threads)(void);
    int (*vbytes)(void);
    double (*issue)(long, int);
    double (*branch)(long, int, int);
    double (*branch_memory)(long, int);
    double (*stride_chase)(long, long, int, long, int);
    int (*reorder)(size_t, long, int, double *, int);
    int (*reorder_pairs)(int);
} bench_fns;

/* ---- fingerprint and cache path ---- */

static void cpuinfo_field(const char *key, char *out, size_t n)
{
    out[0] = 0;
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp)
        return;
    char line[8192];
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, fp)) {
        const char *c = strchr(line, ':');
        if (!strncmp(line, key, kl) && (line[kl] == ' ' || line[kl] == '\t' || line[kl] == ':') && c) {
            snprintf(out, n, "%s", c + 1 + (c[1] == ' '));
            out[strcspn(out, "\n")] = 0;
            break;
        }
    }
    fclose(fp);
}

static void cpu_identity(char *buf, size_t n)
{
    char model[256], fam[32], mod[32], step[32];
    cpuinfo_field("model name", model, sizeof model);
    cpuinfo_field("cpu family", fam, sizeof fam);
    cpuinfo_field("model", mod, sizeof mod);
    cpuinfo_field("stepping", step, sizeof step);
    loom_limits hl = loom_target_cpu_limits(); /* the vector width kernels get here */
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(buf, n, "%s (family %s, model %s, stepping %s), %d-bit vectors%s, %ld cores",
             model[0] ? model : "unknown CPU", fam[0] ? fam : "?", mod[0] ? mod : "?", step[0] ? step : "?",
             hl.vector_lanes * 32, getenv("LOOM_HOST_ISA") && *getenv("LOOM_HOST_ISA") ? " (LOOM_HOST_ISA)" : "",
             nc > 0 ? nc : 1);
}

void loom_calibrate_fingerprint(char *buf, size_t n)
{
    char id[512];
    cpu_identity(id, sizeof id);
    snprintf(buf, n, "%08x", (unsigned)(loom_fnv1a_str(LOOM_FNV_OFFSET, id) & 0xffffffffu));
}

static void cache_dir(char *buf, size_t n) { loom_cache_dir("targets", buf, n); }

void loom_calibrate_path(char *buf, size_t n)
{
    char dir[1024], fp[16];
    cache_dir(dir, sizeof dir);
    loom_calibrate_fingerprint(fp, sizeof fp);
    snprintf(buf, n, "%s/host-%s.cal%d.json", dir, fp, LOOM_CALIBRATION_FORMAT);
}

/* ---- the child: run every microbenchmark ---- */

static double gmean(double a, double b) { return sqrt(a * b); }

/* Each level's latency, bandwidth and gather time at a working set inside
 * it: half of L1; the geometric mean of a middle level's size and the one
 * below; for the last level twice the level below, the least working set
 * that lives there.  A larger one is not safe on a VM: a slow pointer
 * chase over a last level shared with other tenants keeps few of its lines
 * there (Zen 5, 32 MiB L3 reported: 2 MiB chased at 12 ns, 4 MiB at 15-160
 * ns over six sweeps, 2026-12-02), and its "latency" was memory's. */
static void measure_levels(const bench_fns *f, const loom_target *h, int quick, craw *r)
{
    /* short runs, many of them: on a loaded machine the best short run is
     * the one no other process disturbed */
    int reps = quick ? 3 : 12;
    long nidx = 1L << 16, total = 8L << 20;
    r->nlev = h->ncaches;
    for (int i = 0; i <= h->ncaches; i++) {
        double ws;
        if (i == h->ncaches)
            ws = fmin(fmax(2 * r->llc_eff, 64.0 * (1 << 20)), 128.0 * (1 << 20));
        else if (i == 0)
            ws = (double)h->caches[0].size / 2;
        else if (i == h->ncaches - 1 && h->ncaches > 1)
            ws = 2.0 * (double)h->caches[i - 1].size; /* the last level: see below */
        else
            ws = gmean((double)h->caches[i - 1].size, (double)h->caches[i].size);
        r->ws[i] = ws;
        long steps = i == h->ncaches ? 5000 : i == 0 ? 100000 : 20000;
        r->lat_ns[i] = f->chase((size_t)ws, steps, i == h->ncaches ? (quick ? 2 : 5) : reps);
        r->rd_bw[i] = f->read((size_t)ws, total, 1, reps);
        r->gat_ns[i] = f->gather((size_t)ws, nidx, 0, reps);
    }
    r->gat_scalar_l1 = f->gather((size_t)r->ws[0], nidx, 3, reps);
    r->gat_auto_l1 = f->gather((size_t)r->ws[0], nidx, 2, reps);
}

double loom_calibrate_llc_size(const double *ws, const double *lat, int n, double reported)
{
    if (n < 3 || lat[n - 1] < 1.5 * lat[0])
        return reported; /* no step: the level is at least as large as the sweep */
    double mid = 0.5 * (lat[0] + lat[n - 1]);
    int j = 0;
    while (j + 1 < n && lat[j + 1] < mid)
        j++;
    return fmin(ws[j], reported);
}

double loom_calibrate_reorder_window(const double *pairs, const double *ns, int n)
{
    while (n > 0 && (pairs[n - 1] <= 0 || ns[n - 1] <= 0))
        n--;
    if (n < 3)
        return 0;
    double base = ns[0];
    for (int k = 1; k < 4 && k < n; k++)
        base = fmin(base, ns[k]);
    for (int k = 0; k < n; k++)
        if (ns[k] > 1.5 * base && (k + 1 == n || ns[k + 1] > 1.5 * base))
            return k == 0 ? 0 : (2 * pairs[k - 1] + 2 + 2 * pairs[k] + 2) / 2;
    return 0;
}

/* The last level's effective size: the time of a gathered line -- one load
 * a random line, independent loads as a kernel's gathered rows are, not a
 * pointer chase -- at doubling working sets, from twice the level below
 * (loom_calibrate_llc_size; calibration format 13).  Why gathers: what share
 * of a last level shared with other tenants a process keeps grows with
 * how fast it touches its lines.  On the Zen 5 host of 2026-12-02 (32 MiB
 * L3 reported) a chase, one line per 15-160 ns, kept 2-4 MiB; the
 * gathered lines kept 16 MiB (0.47-0.54 ns a line to 8 MiB, 0.84-1.37 at
 * 16, 2.5-2.8 at 64), and so did SpMM on PubMed F = 128, whose 10 MB B
 * streamed at 148 GB/s, three times memory's 44-62.  With the chase's 4 MiB
 * the simulator put PubMed at 2.7x its measured latency and ranked it at
 * Spearman 0.18 (AVX2 at 2 MiB: 0.69); with the gathers' 16 MiB 0.55 and
 * 0.86 (docs/simulator.md, thirty-seventh session).  measure_all runs
 * the sweep LLC_SWEEPS times, spread over the calibration, and keeps each
 * working set's fastest reading (pass > 0: fold into r's).  On a VM the
 * last level is shared with other tenants, and what share of it this host
 * gets moves within seconds: on the Emerald Rapids host (260 MiB L3
 * reported) eight back-to-back chase sweeps read 8 MiB at 51-143 ns and 4 MiB at
 * 34-130 ns (2026-12-02), and one AVX2 calibration's single sweep put the
 * level at 8 MiB where the AVX-512 one had found 16 MiB.  The issue-29
 * records, measured on that host, rank PubMed and Facebook F = 128 (B of
 * 10-11.5 MB) at 0.892 / 0.821 with 16 MiB and 0.824 / 0.644 with 8 MiB
 * (docs/simulator.md, thirty-fourth session).  A burst slows every run of
 * one sweep, so the best of back-to-back runs cannot see past it; the best
 * of sweeps seconds apart can, as the issue rate's three readings do. */
#define LLC_SWEEPS 6
static void sweep_llc(const bench_fns *f, const loom_target *h, int quick, craw *r, int pass)
{
    const loom_cache_level *last = &h->caches[h->ncaches - 1];
    double lo = h->ncaches > 1 ? 2.0 * (double)h->caches[h->ncaches - 2].size : (double)last->size / 8;
    double hi = fmin(2.0 * (double)last->size, (quick ? 32.0 : 64.0) * (1 << 20));
    int k = 0;
    for (double ws = lo; ws <= hi * 1.001 && k < NSWEEP; ws *= 2, k++) {
        long lines = (long)(ws / 64);
        double lat = f->gather((size_t)ws, 2 * lines > 65536 ? 2 * lines : 65536, 4, quick ? 1 : 2);
        r->sweep_ws[k] = ws;
        r->sweep_lat[k] = pass == 0 || lat < r->sweep_lat[k] ? lat : r->sweep_lat[k];
        r->sweep_hi[k] = pass == 0 || lat > r->sweep_hi[k] ? lat : r->sweep_hi[k];
    }
    r->nsweep = k;
    r->llc_eff = loom_calibrate_llc_size(r->sweep_ws, r->sweep_lat, k, (double)last->size);
}

/* The working set of the last level's sweep whose slowest reading was
 * over 1.5x its fastest (the first such, from the largest kept size up:
 * the one that decides the size), or -1: the sweeps agreed. */
static int llc_disturbed(const craw *r)
{
    for (int k = 0; k < (int)r->nsweep; k++)
        if (r->sweep_hi[k] > 1.5 * r->sweep_lat[k] && r->sweep_ws[k] >= r->llc_eff)
            return k;
    return -1;
}

/* The FMA rates with 16-, 32- and 64-byte vectors (those the host has),
 * each the best of this reading and the earlier ones in r (0 at first). */
static const int fma_widths[3] = {16, 32, 64};
static void fma_rates(const bench_fns *f, int reps, craw *r)
{
    for (int k = 0; k < 3; k++)
        r->fma[k] = fma_widths[k] <= r->vbytes ? fmax(r->fma[k], f->fma(fma_widths[k], 100000, reps)) : 0;
    r->fma_add = fmax(r->fma_add, f->fma_add((int)r->vbytes, 100000, reps));
}

static void measure_all(const bench_fns *f, const loom_target *h, int quick, craw *r)
{
    int reps = quick ? 3 : 15;
    memset(r, 0, sizeof *r);
    r->clock_ns = f->clock(100000, reps);
    /* the issue rate is measured three times -- here, after the OpenMP
       figures and at the end -- and the best kept: each measurement lasts a
       few ms, so other work on the core can slow all its runs.  One
       calibration on an Emerald Rapids host read 4 instead of 6, when every
       rerun read 6 (2026-12-01); the rest of the calibration between the
       three outlasts such a burst.  The FMA rates (twice more, after the
       OpenMP figures and at the end) and the clock (again at the end) are
       kept the same way: in a noisy minute of 2026-12-02 one calibration
       read 1.39 64-byte FMAs a cycle (rounded to 1 pipe) and 2.89 GHz on
       the 2-pipe, 2.99 GHz host */
    r->issue_per_ns = f->issue(50000, reps);
    sweep_llc(f, h, quick, r, 0);
    measure_levels(f, h, quick, r);
    sweep_llc(f, h, quick, r, 1);
    size_t mem = (size_t)r->ws[h->ncaches];
    int mreps = quick ? 1 : 3;
    r->threads = f->threads();
    r->st_bw = f->store(mem, 0, 1, mreps + 1);
    r->st_nt_bw = f->store(mem, 1, 1, mreps + 1);
    r->st_nt_all = f->store(mem, 1, (int)r->threads, mreps + 1);
    r->triad1 = f->triad(mem, 1, mreps);
    r->triadn = f->triad(mem, (int)r->threads, mreps);
    r->readn = f->read(mem, (long)mem, (int)r->threads, mreps);
    sweep_llc(f, h, quick, r, 2);
    r->vbytes = f->vbytes();
    fma_rates(f, reps, r);
    sweep_llc(f, h, quick, r, 3);
    r->omp_region = f->omp(0, 50, quick ? 12 : 25);
    r->omp_barrier = f->omp(1, 100, quick ? 12 : 25);
    sweep_llc(f, h, quick, r, 4);
    r->issue_per_ns = fmax(r->issue_per_ns, f->issue(50000, reps));
    fma_rates(f, reps, r); /* as the issue rate: a sibling thread's burst halves it */
    r->br_random_ns = f->branch(200000, 1, reps);
    r->br_pred_ns = f->branch(200000, 0, reps);
    for (int k = 0; k < NBRMEM; k++)
        r->br_mem_ns[k] = f->branch_memory(br_mem_bits[k], quick ? 2 : 4);
    for (int k = 0; k < NSTRIDE; k++) {
        r->stride_ns[k] = f->stride_chase(STRIDE_CHASE_LINES, stride_lines[k], 0, 20000, quick ? 3 : 7);
        r->stride_rand_ns[k] = f->stride_chase(STRIDE_CHASE_LINES, stride_lines[k], 1, 20000, quick ? 3 : 7);
    }
    int nrob = f->reorder(mem, 3000, quick ? 3 : 5, r->rob_ns, NROB);
    for (int k = 0; k < NROB; k++) {
        r->rob_pairs[k] = k < nrob ? f->reorder_pairs(k) : 0;
        r->rob_ns[k] = k < nrob ? r->rob_ns[k] : 0;
    }
    r->issue_per_ns = fmax(r->issue_per_ns, f->issue(50000, reps));
    fma_rates(f, reps, r);
    double clock2 = f->clock(100000, reps);
    if (clock2 > 0 && clock2 < r->clock_ns)
        r->clock_ns = clock2;
    sweep_llc(f, h, quick, r, 5); /* LLC_SWEEPS in all, spread over the calibration */
}

static loom_status load_fns(void *hdl, bench_fns *f, loom_error *err)
{
#define SYM(field, name)                                                                                               \
    do {                                                                                                               \
        *(void **)&f->field = dlsym(hdl, name);                                                                        \
        if (!f->field)                                                                                                 \
            return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "calibration: %s missing from the microbenchmarks", \
                                  name);                                                                               \
    } while (0)
    SYM(clock, "loom_calib_clock");
    SYM(chase, "loom_calib_chase");
    SYM(read, "loom_calib_read");
    SYM(gather, "loom_calib_gather");
    SYM(store, "loom_calib_store");
    SYM(triad, "loom_calib_triad");
    SYM(fma, "loom_calib_fma");
    SYM(fma_add, "loom_calib_fma_add");
    SYM(omp, "loom_calib_omp");
    SYM(threads, "loom_calib_threads");
    SYM(vbytes, "loom_calib_vector_bytes");
    SYM(issue, "loom_calib_issue");
    SYM(branch, "loom_calib_branch");
    SYM(branch_memory, "loom_calib_branch_memory");
    SYM(stride_chase, "loom_calib_stride_chase");
    SYM(reorder, "loom_calib_reorder");
    SYM(reorder_pairs, "loom_calib_reorder_pairs");
#undef SYM
    return LOOM_OK;
}

/* Run measure_all in a child (its OpenMP threads die with it). */
static loom_status run_child(const bench_fns *f, const loom_target *h, int quick, craw *r, loom_error *err)
{
    int fd[2];
    if (pipe(fd))
        return loom_error_set(err, LOOM_ERR_IO, NULL, 0, 0, "calibration: pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "calibration: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fd[0]);
        craw c;
        measure_all(f, h, quick, &c);
        ssize_t w = write(fd[1], &c, sizeof c);
        _exit(w == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fd[1]);
    size_t got = 0;
    struct pollfd p = {fd[0], POLLIN, 0};
    double deadline = loom_now_seconds() + 120;
    while (got < sizeof *r) {
        int left = (int)((deadline - loom_now_seconds()) * 1000);
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        ssize_t k = read(fd[0], (char *)r + got, sizeof *r - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd[0]);
    if (got < sizeof *r)
        kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got < sizeof *r)
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0,
                              "calibration: the microbenchmark child %s",
                              WIFSIGNALED(status) ? "was killed (timed out after 120 s, or crashed)" : "failed");
    return LOOM_OK;
}

/* ---- mapping the figures onto a target ---- */

static int bad_fig(double v) { return !isfinite(v) || v <= 0; }

static loom_status check_raw(const craw *r, int nlev, loom_error *err)
{
    const char *what = NULL;
    for (int i = 0; i <= nlev && !what; i++)
        if (bad_fig(r->lat_ns[i]) || bad_fig(r->rd_bw[i]) || bad_fig(r->gat_ns[i]))
            what = "a cache level's latency, bandwidth or gather time";
    if (!what && (bad_fig(r->triad1) || bad_fig(r->triadn) || bad_fig(r->st_bw)))
        what = "the memory bandwidth";
    if (!what && (bad_fig(r->omp_region) || bad_fig(r->omp_barrier)))
        what = "the OpenMP region or barrier";
    if (!what && bad_fig(r->fma[0]))
        what = "the FMA rate";
    if (what)
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "calibration: %s came out non-positive or not finite",
                              what);
    return LOOM_OK;
}

/* Clock, caches and memory into t, with their figures. */
static void map_memory(const craw *r, loom_target *t, figs *g)
{
    char src[256];
    /* A reading outside 0.2-10 GHz is no clock (a core that ran the adds
     * faster than one a cycle): /proc/cpuinfo's figure stands instead. */
    int clock_ok = r->clock_ns > 0.1 && r->clock_ns < 5;
    double ghz = clock_ok ? 1.0 / r->clock_ns : t->ghz;
    t->ghz = round(ghz * 1000) / 1000;
    loom__calib_fig(g, "ghz", t->ghz, "GHz",
        clock_ok ? "dependent register-to-register integer adds (1 cycle each), 8 per iteration, the best of two "
                   "runs, at the calibration's start and end"
                 : "not measured here (no inline adds, or a reading outside 0.2-10 GHz): /proc/cpuinfo");
    int prev = 0;
    for (int i = 0; i < t->ncaches; i++) {
        loom_cache_level *L = &t->caches[i];
        int cyc = (int)lround(r->lat_ns[i] * t->ghz);
        L->latency = cyc > prev ? cyc : prev + 1;
        prev = L->latency;
        char key[64];
        snprintf(src, sizeof src, "pointer chase over random lines, %.0f KiB working set, best run (made > the level "
                 "below)", r->ws[i] / 1024);
        snprintf(key, sizeof key, "%s.latency", L->name);
        loom__calib_fig(g, key, L->latency, "cycles", src);
        snprintf(src, sizeof src, "sequential loads, 8 vector accumulators, %.0f KiB, one thread", r->ws[i] / 1024);
        snprintf(key, sizeof key, "%s.load_bandwidth", L->name);
        loom__calib_fig(g, key, r->rd_bw[i] * 1e9, "bytes/s", src);
        snprintf(src, sizeof src, "s += x[idx[i]], random idx over %.0f KiB, omp simd", r->ws[i] / 1024);
        snprintf(key, sizeof key, "%s.gather_ns", L->name);
        loom__calib_fig(g, key, r->gat_ns[i], "ns per element", src);
        if (i > 0) /* an L1 hit never stalls */
            L->miss_cost = round(r->gat_ns[i] * t->ghz * 100) / 100;
        /* runtime/sim/sim_machine.h "Level bandwidth" (model 19, private levels) and
           "Shared-level bandwidth" (model 21, the first shared one) */
        if (i > 0 && (!L->shared || !t->caches[i - 1].shared))
            L->bandwidth = round(r->rd_bw[i] * 1e9 / 1e6) * 1e6;
    }
    int m = t->ncaches;
    double last_ns = t->caches[m - 1].latency / t->ghz;
    t->mem_latency_ns = round(fmax(1.0, r->lat_ns[m] - last_ns) * 10) / 10;
    snprintf(src, sizeof src, "pointer chase over %.0f MiB minus the last level's latency (the simulator adds both)",
             r->ws[m] / 1048576);
    loom__calib_fig(g, "memory.latency_ns", t->mem_latency_ns, "ns", src);
    t->core_bandwidth = round(r->triad1 * 1e9 / 1e6) * 1e6;
    t->mem_bandwidth = round(fmax(r->triadn, r->triad1) * 1e9 / 1e6) * 1e6;
    snprintf(src, sizeof src, "triad a = b + s c over %.0f MiB, one thread, 16 bytes per element (write-allocate "
             "counted)", r->ws[m] / 1048576);
    loom__calib_fig(g, "memory.core_bandwidth", t->core_bandwidth, "bytes/s", src);
    snprintf(src, sizeof src, "triad over %.0f MiB, %d threads (OpenMP static), 16 bytes per element",
             r->ws[m] / 1048576, (int)r->threads);
    loom__calib_fig(g, "memory.bandwidth", t->mem_bandwidth, "bytes/s", src);
    loom__calib_fig(g, "memory.load_bandwidth", r->rd_bw[m] * 1e9, "bytes/s",
        "sequential loads from memory, one thread");
    loom__calib_fig(g, "memory.load_bandwidth_all", r->readn * 1e9, "bytes/s",
        "sequential loads from memory, every thread");
    loom__calib_fig(g, "memory.gather_ns", r->gat_ns[m], "ns per element",
        "s += x[idx[i]], random idx over the memory set");
    t->mem_miss_cost_ns = round(r->gat_ns[m] * 100) / 100;
    loom__calib_fig(g, "memory.miss_cost_ns", t->mem_miss_cost_ns, "ns",
        "memory.gather_ns: one independent miss to memory, overlap included (levels' miss_cost likewise, in cycles)");
    t->warm_caches = 1;
    loom__calib_fig(g, "warm_caches", 1, "bool", "measured kernels run back to back: data that fits stays cached");
    loom__calib_fig(g, "memory.store_bandwidth", r->st_bw * 1e9, "bytes/s",
        "vector stores over the memory set, one thread");
    loom__calib_fig(g, "memory.nt_store_bandwidth", r->st_nt_bw * 1e9, "bytes/s",
        r->st_nt_bw > 0 ? "non-temporal vector stores (stream + sfence), one thread, after an untimed first pass"
                        : "no non-temporal stores here");
    /* model 99 (runtime/sim/sim_cycles.c): a kernel's non-temporal stores drain at this rate */
    t->mem_nt_bandwidth = r->st_nt_all > 0 ? round(r->st_nt_all * 1e9 / 1e6) * 1e6 : 0;
    loom__calib_fig(g, "memory.nt_bandwidth", t->mem_nt_bandwidth, "bytes/s",
        r->st_nt_all > 0 ? "non-temporal vector stores over the memory set, every thread (OpenMP, a contiguous share "
                           "each), after an untimed first pass"
                         : "no non-temporal stores here");
}

/* Issue width and the branch-miss penalty into t (kept when not measured). */
static void map_core(const craw *r, loom_target *t, figs *g)
{
    if (r->issue_per_ns > 0) {
        int w = (int)lround(r->issue_per_ns / t->ghz);
        t->issue_width = w < 2 ? 2 : w > 8 ? 8 : w;
    }
    loom__calib_fig(g, "issue_width", t->issue_width, "instructions per cycle",
        r->issue_per_ns > 0 ? "8 independent integer add chains (24 adds + 2 loop ops per iteration), the best of "
                              "three runs spread over the calibration, rounded (2..8)"
                            : "not measured here: 4");
    /* model 82: the reorder window (sim.h "Independent chains") */
    t->reorder_window = loom_calibrate_reorder_window(r->rob_pairs, r->rob_ns, NROB);
    loom__calib_fig(g, "reorder_window", t->reorder_window, "instructions",
        t->reorder_window > 0
            ? "two pointer chases through the memory set, a load of each an iteration, each followed by n pairs of "
              "an integer move and a vector add (n = 16..328): the midpoint of the last 2n + 2 whose iteration took "
              "under 1.5x the shortest and the first over it (loom_calibrate_reorder_window)"
            : "not measured (no step in the chases, or no x86-64 AVX form here): the simulator's 512");
    double pen = 2 * (r->br_random_ns - r->br_pred_ns) * t->ghz;
    if (r->br_random_ns > 0 && pen > 0)
        t->branch_miss_cycles = round(fmin(40, fmax(1, pen)) * 10) / 10;
    loom__calib_fig(g, "branch_miss_cycles", t->branch_miss_cycles, "cycles",
        r->br_random_ns > 0 && pen > 0
            ? "a branch on random bits (a miss every other iteration) against the same loop always taken, x2"
            : "not measured: targets/spr-2c.json's fitted value");
    /* branch memory: the extra time per branch of a repeated random sequence
     * over the unlearned one's (a single pass of 200000 is past what the
     * predictor holds), per point, keyed by the branches a pass executes:
     * the bit's and the loop's, 2 per bit */
    double unlearned = r->br_random_ns - r->br_pred_ns;
    t->nbranch_memory = 0;
    for (int k = 0; k < NBRMEM && unlearned > 0 && r->br_random_ns > 0; k++) {
        if (r->br_mem_ns[k] <= 0)
            break;
        double frac = fmin(1, fmax(0, (r->br_mem_ns[k] - r->br_pred_ns) / unlearned));
        frac = round(frac * 1000) / 1000;
        t->branch_memory[t->nbranch_memory][0] = (double)(br_mem_bits[k] * 2);
        t->branch_memory[t->nbranch_memory][1] = frac;
        t->nbranch_memory++;
        char key[64], src[200];
        snprintf(key, sizeof key, "branch_memory.%ld", br_mem_bits[k] * 2);
        snprintf(src, sizeof src,
                 "a loop over %ld random bits (%ld branches a pass with the loop's own) repeated, one pass to learn, "
                 "then >= 2^21 bits timed: extra time per bit over the unlearned sequence's, best of runs",
                 br_mem_bits[k], br_mem_bits[k] * 2);
        loom__calib_fig(g, key, frac, "fraction of misses left", src);
    }
}

/* Cache sizes, the FMA rate, OpenMP and gathers into t, with their figures. */
static void map_model(const craw *r, loom_target *t, figs *g)
{
    char src[512];
    loom_cache_level *last = &t->caches[t->ncaches - 1];
    long long per = (long long)last->line * last->assoc;
    long long eff = (long long)r->llc_eff / per * per;
    if (eff >= per && eff < last->size)
        last->size = eff;
    int o = snprintf(src, sizeof src, "gathered lines (one load a random 64-byte line, twice the set's lines, 4 independent sums) at %d working sets doubling from %.0f KiB, each the best of %d sweeps over the calibration (ns a line:",
                     (int)r->nsweep, r->sweep_ws[0] / 1024, LLC_SWEEPS);
    for (int k = 0; k < (int)r->nsweep && o > 0 && o < (int)sizeof src; k++)
        o += snprintf(src + o, sizeof src - (size_t)o, " %.2f", r->sweep_lat[k]); /* sub-ns times */
    if (o > 0 && o < (int)sizeof src)
        snprintf(src + o, sizeof src - (size_t)o, "): the largest whose next is below the midpoint of the first and "
                 "last (the reported size when the last is under 1.5x the first; loom_calibrate_llc_size)");
    loom__calib_fig(g, "llc.size", (double)last->size, "bytes", src);
    double native = 0, narrow = 0;
    for (int k = 0; k < 3; k++)
        if (r->fma[k] > 0) {
            char key[32];
            snprintf(key, sizeof key, "fma%d.per_cycle", fma_widths[k] * 8);
            snprintf(src, sizeof src, "12 independent FMA chains of %d-byte vectors, one thread, the best of three runs "
                     "spread over the calibration", fma_widths[k]);
            loom__calib_fig(g, key, r->fma[k] / t->ghz, "FMAs per cycle", src);
            if (fma_widths[k] == (int)r->vbytes || (fma_widths[k] == t->vector_bits / 8))
                native = r->fma[k] / t->ghz;
            else if (fma_widths[k] * 2 <= t->vector_bits / 8)
                narrow = fmax(narrow, r->fma[k] / t->ghz);
        }
    int units = (int)lround(native);
    t->fma_units = units < 1 ? 1 : units > 4 ? 4 : units;
    loom__calib_fig(g, "fma_units", t->fma_units, "pipes", "FMAs per cycle at the native vector width, rounded (1..4)");
    /* model 92: more FMAs a cycle at half the width (Zen 4's 512-bit operations take both 256-bit pipes) */
    int nunits = (int)lround(narrow);
    t->narrow_fma_units = nunits > t->fma_units ? (nunits > 8 ? 8 : nunits) : 0;
    loom__calib_fig(g, "narrow_fma_units", t->narrow_fma_units, "pipes",
                    "FMAs per cycle of vectors at most half the native width (the fastest of the narrower widths "
                    "above), rounded; 0 when not more than fma_units");
    /* model 70: pipes that take the adds beside the FMAs (Zen's FADD pipes) */
    int fadd = native > 0 && r->fma_add > 0 ? (int)lround(r->fma_add / t->ghz - native) : 0;
    t->fadd_units = fadd < 0 ? 0 : fadd > 4 ? 4 : fadd;
    loom__calib_fig(g, "fadd_units", t->fadd_units, "pipes",
                    "12 independent FMA chains and 12 add chains in one loop at 64-byte vectors, 7 and 7 at "
                    "narrower ones, one thread, the best of three runs: operations per cycle less the FMAs per "
                    "cycle alone, rounded (0..4)");
    /* A fork and join of a few hundred threads at most takes microseconds.
       Over 100 us a region is another program's time slice: a second core
       kept busy the whole time (make test's other job) delays every
       region's wake-up, so not even a run's median escapes it (8.0 ms a
       region on Emerald Rapids).  The uncalibrated model's figure then,
       which t holds until here (loom_target_host, machine.c's defaults). */
    char osrc[320];
    if (r->omp_region <= 1e5) {
        t->parallel_overhead_ns = round(r->omp_region);
        snprintf(osrc, sizeof osrc,
                 "an empty #pragma omp parallel region (fork, join) on every thread, each timed, the least of the "
                 "runs' medians");
    } else {
        snprintf(osrc, sizeof osrc,
                 "not measured: the runs' medians read %.0f ns a region, other programs' time slices (the machine "
                 "was loaded); the uncalibrated model's %g ns (runtime/machine/machine.c)",
                 r->omp_region, t->parallel_overhead_ns);
    }
    loom__calib_fig(g, "parallel_overhead_ns", t->parallel_overhead_ns, "ns", osrc);
    loom__calib_fig(g, "barrier_ns", r->omp_barrier, "ns",
        "#pragma omp barrier inside one region, every thread, each timed, the least of the runs' medians");
    double seq_cyc = 4.0 / (r->rd_bw[0] / t->ghz);
    double gl = r->gat_ns[0] * t->ghz - seq_cyc;
    t->gather_cycles_per_lane = round(fmin(16, fmax(0.25, gl)) * 100) / 100;
    loom__calib_fig(g, "gather_cycles_per_lane", t->gather_cycles_per_lane, "cycles",
        "L1 gathered element cycles minus a sequential element's (clamped to 0.25..16)");
    int m = t->ncaches;
    t->mlp = round(fmin(32, fmax(1, r->lat_ns[m] / r->gat_ns[m])) * 10) / 10;
    loom__calib_fig(g, "mlp", t->mlp, "misses",
        "memory chase latency / gathered element time at memory (misses overlapped)");
    double vec = r->gat_scalar_l1 / r->gat_auto_l1;
    loom__calib_fig(g, "gather_loop_vectorized", vec > 1.15 ? 1 : 0, "bool",
        "y[i] = 2 x[idx[i]] in L1: scalar (no-tree-vectorize) / cc -O3 -march=native time > 1.15");
    loom__calib_fig(g, "gather_loop_speedup", vec, "x", "scalar / auto-vectorized time of y[i] = 2 x[idx[i]] in L1");
    /* runtime/sim/sim_machine.h "Stride prefetch" (model 49): the largest stride up
       to which every strided chase ran in under half its permutation's
       time -- the next line was in L1 when the chase asked for it */
    t->stride_prefetch_lines = 0;
    for (int k = 0; k < NSTRIDE && r->stride_ns[k] > 0 && r->stride_ns[k] < 0.5 * r->stride_rand_ns[k]; k++)
        t->stride_prefetch_lines = (int)stride_lines[k];
    {
        char ssrc[400];
        int so = snprintf(ssrc, sizeof ssrc,
                          "pointer chases over %d lines a constant stride apart and over the same lines in a random "
                          "order (ns a step, strided / random:",
                          STRIDE_CHASE_LINES);
        for (int k = 0; k < NSTRIDE && so > 0 && so < (int)sizeof ssrc; k++)
            so += snprintf(ssrc + so, sizeof ssrc - (size_t)so, "%s %ld lines %.2f / %.2f", k ? "," : "", stride_lines[k],
                           r->stride_ns[k], r->stride_rand_ns[k]);
        if (so > 0 && so < (int)sizeof ssrc)
            snprintf(ssrc + so, sizeof ssrc - (size_t)so,
                     "): the largest stride up to which every strided chase took under half the random one's time");
        loom__calib_fig(g, "stride_prefetch_lines", t->stride_prefetch_lines, "lines", ssrc);
    }
    loom__calib_map_pages(t, g);
    loom__calib_map_transfers(t, g);
    map_core(r, t, g);
    static const char *kept = "not measured: targets/spr-2c.json's fitted value";
    loom__calib_fig(g, "overlap", t->overlap, "fraction", kept);
    loom__calib_fig(g, "masked_lane_cycles", t->masked_lane_cycles, "cycles", kept);
    loom__calib_fig(g, "exp_cycles", t->exp_cycles, "cycles", kept);
    loom__calib_fig(g, "div_cycles", t->div_cycles, "cycles", kept);
}

/* The target file's text for t with figures g (consumed). */
static char *target_json(const loom_target *t, const char *cpu, cJSON *figobj, int quick, double secs, const craw *r,
                         int count)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "cpu", cpu);
    cJSON_AddStringToObject(o, "description", t->description);
    cJSON_AddNumberToObject(o, "cores", t->cores);
    cJSON_AddNumberToObject(o, "vector_bits", t->vector_bits);
    cJSON_AddNumberToObject(o, "vector_registers", t->vector_registers);
    cJSON_AddBoolToObject(o, "fma", t->fma);
    cJSON_AddNumberToObject(o, "fma_units", t->fma_units);
    if (t->fadd_units > 0)
        cJSON_AddNumberToObject(o, "fadd_units", t->fadd_units);
    if (t->narrow_fma_units > t->fma_units)
        cJSON_AddNumberToObject(o, "narrow_fma_units", t->narrow_fma_units);
    cJSON_AddNumberToObject(o, "ghz", t->ghz);
    cJSON_AddNumberToObject(o, "issue_width", t->issue_width);
    cJSON_AddNumberToObject(o, "load_ports", t->load_ports);
    cJSON_AddNumberToObject(o, "store_ports", t->store_ports);
    cJSON *cs = cJSON_AddArrayToObject(o, "caches");
    for (int i = 0; i < t->ncaches; i++) {
        const loom_cache_level *L = &t->caches[i];
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "name", L->name);
        cJSON_AddNumberToObject(c, "size", (double)L->size);
        cJSON_AddNumberToObject(c, "assoc", L->assoc);
        cJSON_AddNumberToObject(c, "line", L->line);
        cJSON_AddNumberToObject(c, "latency", L->latency);
        cJSON_AddBoolToObject(c, "shared", L->shared);
        if (L->miss_cost > 0)
            cJSON_AddNumberToObject(c, "miss_cost", L->miss_cost);
        if (L->bandwidth > 0)
            cJSON_AddNumberToObject(c, "bandwidth", L->bandwidth);
        cJSON_AddItemToArray(cs, c);
    }
    cJSON *m = cJSON_AddObjectToObject(o, "memory");
    cJSON_AddNumberToObject(m, "bandwidth", t->mem_bandwidth);
    cJSON_AddNumberToObject(m, "core_bandwidth", t->core_bandwidth);
    if (t->mem_nt_bandwidth > 0)
        cJSON_AddNumberToObject(m, "nt_bandwidth", t->mem_nt_bandwidth);
    cJSON_AddNumberToObject(m, "latency_ns", t->mem_latency_ns);
    if (t->mem_miss_cost_ns > 0)
        cJSON_AddNumberToObject(m, "miss_cost_ns", t->mem_miss_cost_ns);
    cJSON *md = cJSON_AddObjectToObject(o, "model");
    cJSON_AddNumberToObject(md, "mlp", t->mlp);
    cJSON_AddNumberToObject(md, "overlap", t->overlap);
    cJSON_AddNumberToObject(md, "gather_cycles_per_lane", t->gather_cycles_per_lane);
    cJSON_AddNumberToObject(md, "masked_lane_cycles", t->masked_lane_cycles);
    cJSON_AddNumberToObject(md, "exp_cycles", t->exp_cycles);
    cJSON_AddNumberToObject(md, "div_cycles", t->div_cycles);
    cJSON_AddNumberToObject(md, "branch_miss_cycles", t->branch_miss_cycles);
    cJSON_AddNumberToObject(md, "parallel_overhead_ns", t->parallel_overhead_ns);
    cJSON_AddBoolToObject(md, "autovectorize", t->autovectorize);
    cJSON_AddBoolToObject(md, "warm_caches", t->warm_caches);
    if (t->shared_load_copies > 0)
        cJSON_AddNumberToObject(md, "shared_load_copies", t->shared_load_copies);
    if (t->shared_load_fixed)
        cJSON_AddBoolToObject(md, "shared_load_fixed", 1);
    if (t->peel_times > 0)
        cJSON_AddNumberToObject(md, "peel_times", t->peel_times);
    if (t->issue_chain_norm > 0)
        cJSON_AddNumberToObject(md, "issue_chain_norm", t->issue_chain_norm);
    if (t->stream_lines > 0)
        cJSON_AddNumberToObject(md, "stream_lines", t->stream_lines);
    if (t->stride_prefetch_lines > 0)
        cJSON_AddNumberToObject(md, "stride_prefetch_lines", t->stride_prefetch_lines);
    if (t->page_bytes > 0)
        cJSON_AddNumberToObject(md, "page_bytes", t->page_bytes);
    if (t->core_transfer_ns > 0)
        cJSON_AddNumberToObject(md, "core_transfer_ns", t->core_transfer_ns);
    if (t->reorder_window > 0)
        cJSON_AddNumberToObject(md, "reorder_window", t->reorder_window);
    if (t->sample_budget > 0)
        cJSON_AddNumberToObject(md, "sample_budget", t->sample_budget);
    if (t->nbranch_memory > 0) {
        cJSON *bm = cJSON_AddArrayToObject(md, "branch_memory");
        for (int i = 0; i < t->nbranch_memory; i++) {
            cJSON *pt = cJSON_CreateArray();
            cJSON_AddItemToArray(pt, cJSON_CreateNumber(t->branch_memory[i][0]));
            cJSON_AddItemToArray(pt, cJSON_CreateNumber(t->branch_memory[i][1]));
            cJSON_AddItemToArray(bm, pt);
        }
    }
    cJSON *l = cJSON_AddObjectToObject(o, "limits");
    cJSON_AddNumberToObject(l, "max_vector_factor", t->max_vector_factor);
    cJSON_AddNumberToObject(l, "max_workspace_bytes", (double)t->max_workspace_bytes);
    cJSON *cal = cJSON_AddObjectToObject(o, "calibration");
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    cJSON_AddStringToObject(cal, "date", date);
    cJSON_AddStringToObject(cal, "mode", quick ? "quick" : "full");
    cJSON_AddNumberToObject(cal, "seconds", round(secs * 100) / 100);
    cJSON_AddNumberToObject(cal, "calibrations", count);
    cJSON_AddBoolToObject(cal, "llc_disturbed", llc_disturbed(r) >= 0);
    cJSON_AddItemToObject(cal, "figures", figobj);
    cJSON_AddItemToObject(cal, "readings", loom__calib_readings_json(r));
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    return s;
}

/* The uncalibrated host with spr-2c's fitted model parameters as a base. */
static void base_target(loom_target *h)
{
    h->mlp = 3;
    h->overlap = 0.5;
    h->gather_cycles_per_lane = 3.0;
    h->masked_lane_cycles = 2.0;
}

loom_status loom_calibrate_run(int quick, const char *earlier, FILE *log, loom_target *out, char **json,
                               loom_error *err)
{
    double t0 = loom_now_seconds();
    if (json)
        *json = NULL;
    loom_target h;
    loom_status st = loom_target_host(&h, err);
    if (st)
        return st;
    base_target(&h);
    loom_module mod;
    memset(&mod, 0, sizeof mod);
    if ((st = loom_build(loom_calibrate_bench_text, "loom_calib_vector_bytes", NULL, &mod, err)))
        return st;
    bench_fns f;
    memset(&f, 0, sizeof f);
    craw r;
    if (log)
        fprintf(log, "calibrating %s (%s mode): clock, caches, memory, FMA, OpenMP...\n", h.description,
                quick ? "quick" : "full");
    if ((st = load_fns(mod.handle, &f, err)) || (st = run_child(&f, &h, quick, &r, err)) ||
        (st = check_raw(&r, h.ncaches, err))) {
        loom_module_close(&mod);
        return st;
    }
    loom_module_close(&mod);
    char fp[16], cpu[160];
    loom_calibrate_fingerprint(fp, sizeof fp);
    cpu_identity(cpu, sizeof cpu);
    craw e;
    int count = 1, before = 0;
    if (earlier && loom__calib_earlier_readings(earlier, cpu, quick, &e, &before)) {
        if (loom__calib_fold(&r, &e)) {
            count = before + 1;
            r.llc_eff = loom_calibrate_llc_size(r.sweep_ws, r.sweep_lat, (int)r.nsweep,
                                                (double)h.caches[h.ncaches - 1].size);
        }
        else if (log)
            fprintf(log, "note: the cached calibration measured another configuration (threads, vector width or "
                         "cache levels): not folded in\n");
    }
    figs g = {cJSON_CreateObject()};
    map_memory(&r, &h, &g);
    map_model(&r, &h, &g);
    loom__calib_map_compiler(&h, &g);
    snprintf(h.name, sizeof h.name, "host-%s", fp);
    snprintf(h.cpu, sizeof h.cpu, "%.159s", cpu);
    snprintf(h.description, sizeof h.description,
             "this host calibrated by loom calibrate (runtime/target/calibrate.h): %.400s", cpu);
    double secs = loom_now_seconds() - t0;
    char *txt = target_json(&h, cpu, g.obj, quick, secs, &r, count); /* llc_disturbed(&r): a key */
    if (!txt)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    /* read it back: the file and the target agree, and the parser checks it */
    st = loom_target_parse(txt, "calibration", out, err);
    if (!st && log) {
        fprintf(log, "calibrated in %.1f s\n", secs);
        if (count > 1)
            fprintf(log,
                    "folded into the %d earlier calibration%s of this CPU: each figure is the best reading of the %d "
                    "(the fastest time, the highest rate; `loom calibrate --fresh` starts over)\n",
                    count - 1, count > 2 ? "s" : "", count);
        /* other programs' threads share the cores: the best and median runs
           absorb much of it (the OpenMP region), the bandwidths and the
           last level's latency less (on the 2-core Emerald Rapids host under
           a load of 3.9: memory 18.6 against 65.7 GB/s) */
        double load[1];
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        if (getloadavg(load, 1) == 1 && ncpu > 0 && load[0] > 0.75 * (double)ncpu)
            fprintf(log,
                    "note: load average %.1f on %ld CPUs: other programs ran beside the calibration and its "
                    "bandwidths may read low; run `loom calibrate` again on a quiet machine (it keeps each figure's best "
                    "reading of the calibrations; --fresh replaces them)\n",
                    load[0], ncpu);
        int k = llc_disturbed(&r);
        if (k >= 0)
            fprintf(log,
                    "note: the last level's gathered line at %.0f MiB took %.2f-%.2f ns over the %d sweeps: other work "
                    "on this socket (another tenant, on a VM) uses the shared cache, and the size kept (%.0f MiB) may be less than "
                    "a quiet machine's; the simulator's F = 128 graph rankings depend on it (docs/simulator.md, "
                    "thirty-fourth session); run `loom calibrate` again when the host is quiet (it keeps each "
                    "working set's fastest sweep of all the calibrations)\n",
                    r.sweep_ws[k] / (1 << 20), r.sweep_lat[k], r.sweep_hi[k], LLC_SWEEPS * count,
                    (double)h.caches[h.ncaches - 1].size / (1 << 20));
    }
    if (st || !json)
        free(txt);
    else
        *json = txt;
    return st;
}

loom_status loom_calibrate_save(const char *json, int replace, char *path, size_t n, loom_error *err)
{
    char dir[1024], file[1100], tmp[1200];
    cache_dir(dir, sizeof dir);
    loom_calibrate_path(file, sizeof file);
    if (path)
        snprintf(path, n, "%s", file);
    if (loom_mkdir_p(dir))
        return loom_error_set(err, LOOM_ERR_IO, dir, 0, 0, "%s: cannot create the calibration cache: %s (set "
                              "LOOM_CACHE to a writable directory)", dir, strerror(errno));
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", file, (long)getpid());
    FILE *fp = fopen(tmp, "w");
    int ok = fp && fputs(json, fp) >= 0 && fputc('\n', fp) != EOF;
    ok = fp && !fclose(fp) && ok;
    if (ok && replace)
        ok = !rename(tmp, file);
    else if (ok) {
        ok = !link(tmp, file) || errno == EEXIST; /* the first writer wins */
        unlink(tmp);
    }
    if (!ok) {
        int e = errno;
        unlink(tmp);
        return loom_error_set(err, LOOM_ERR_IO, file, 0, 0, "%s: cannot write the calibration: %s", file, strerror(e));
    }
    return LOOM_OK;
}

loom_status loom_calibrate_first_use(int quick, loom_error *err)
{
    char path[1100];
    loom_calibrate_path(path, sizeof path);
    fprintf(stderr, "loom: no calibration of this CPU cached (%s): measuring it now, %s (loom calibrate)\n", path,
            quick ? "about a second" : "a few seconds");
    char *json = NULL;
    loom_target t;
    loom_status st = loom_calibrate_run(quick, NULL, NULL, &t, &json, err);
    if (!st)
        st = loom_calibrate_save(json, 0, NULL, 0, err);
    cJSON *root = st ? NULL : cJSON_Parse(json);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "calibration"),
                                                      "llc_disturbed")))
        fprintf(stderr, "loom: note: other work on this machine slowed the calibration's last-level cache readings "
                        "(its size kept: %.0f MiB); the simulator's ranking of inputs near that size depends on "
                        "it: run `loom calibrate` when the host is quiet (it folds into this calibration)\n",
                (double)t.caches[t.ncaches - 1].size / (1 << 20));
    cJSON_Delete(root);
    free(json);
    return st;
}
