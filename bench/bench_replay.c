/* loom benchmark: trace replay throughput on one core.
 *
 *   bench_replay [--traces N] [--min-seconds S] [--seed N]
 *
 * Search replays and validates every mutant it proposes (DESIGN.md
 * "Search"), so "traces replayed and validated per second" bounds how many
 * candidates one core can look at; the design promises tens of thousands
 * per second ("Schedule representation").  For each workload:
 *
 *   1. parse it and bind its sizes without loading data (replay never reads
 *      data): spmm binds N = K = the rows / columns in the header of
 *      data/cora_adj.mtx (2708 x 2708) and F = 64; attention keeps its
 *      defaults (N = 256, D = 64);
 *   2. sample: N traces (default 2000) of loom_generic_program on a fresh
 *      schedule each, recorded with loom_trace_recorder, one gsl_rng
 *      (mt19937) seeded with --seed (default 1) -- timed as the sampling
 *      throughput (init + program + recording);
 *   3. check (untimed): replaying each trace gives a schedule with the same
 *      structural hash as the sampled one; the digest line is an FNV-1a hash
 *      of every replayed schedule's hash and validation verdict, so two
 *      builds (before / after an optimisation) that print the same digest
 *      replayed and validated the same traces identically;
 *   4. replay: for every trace, loom_schedule_init (no rng) +
 *      loom_trace_replay (no decision overrides) + loom_validate (host
 *      limits), passes over all traces repeated until >= --min-seconds
 *      (default 1 s).  Printed: traces/s and us per trace over the whole
 *      loop, and the split between init, replay and validate (each phase
 *      bracketed by clock_gettime, whose own cost (~20 ns a call) is in the
 *      total but not in the phases).
 *
 * Single-threaded.  Run from anywhere: the repository root is found from
 * the current directory or from this executable's path (build/bench/).
 * Exits non-zero when a workload cannot be set up, sampling fails, or a
 * replay fails or disagrees with the sampled schedule.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_rng.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../dsl/ir/util.h"
#include "../modules/generic.h"
#include "../traces/trace.h"
#include "../runtime/target/target.h"
#include "../traces/validate.h"

#define GOAL_PER_S 20000.0

static int file_exists(const char *p)
{
    return access(p, R_OK) == 0;
}

/* The repository root: "." when workloads/spmm.loom is there, else two
 * levels above this executable (build/bench/bench_replay). */
static int find_root(char *root, size_t n)
{
    if (file_exists("workloads/spmm.loom")) {
        snprintf(root, n, ".");
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0)
        return -1;
    exe[k] = '\0';
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash)
            return -1;
        *slash = '\0';
        char probe[PATH_MAX + 32];
        snprintf(probe, sizeof probe, "%s/workloads/spmm.loom", exe);
        if (file_exists(probe)) {
            snprintf(root, n, "%s", exe);
            return 0;
        }
    }
    return -1;
}

/* Rows and columns from a Matrix Market header (the first line that is not
 * a comment); 0 on failure. */
static int mtx_dims(const char *path, long *rows, long *cols)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int ok = -1;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '%' || line[0] == '\n')
            continue;
        long nnz;
        if (sscanf(line, "%ld %ld %ld", rows, cols, &nnz) == 3 && *rows > 0 && *cols > 0)
            ok = 0;
        break;
    }
    fclose(f);
    return ok;
}

typedef struct bind_kv {
    const char *name;
    long value;
} bind_kv;

static loom_program *load_program(const char *path, const bind_kv *kv, int nkv)
{
    loom_error err;
    loom_error_clear(&err);
    loom_program *prog = NULL;
    char buf[1400];
    if (loom_program_parse_file(path, &prog, &err)) {
        fprintf(stderr, "bench_replay: %s\n", loom_error_format(&err, buf, sizeof buf));
        return NULL;
    }
    for (int k = 0; k < nkv; k++)
        if (loom_program_bind_size(prog, kv[k].name, kv[k].value, "bench_replay", &err)) {
            fprintf(stderr, "bench_replay: %s\n", loom_error_format(&err, buf, sizeof buf));
            loom_program_free(prog);
            return NULL;
        }
    if (loom_program_finish_binding(prog, &err)) {
        fprintf(stderr, "bench_replay: %s\n", loom_error_format(&err, buf, sizeof buf));
        loom_program_free(prog);
        return NULL;
    }
    return prog;
}

/* "N = 256, D = 64" from the bound program. */
static const char *sizes_text(const loom_program *prog, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int z = 0; z < prog->nsizes; z++) {
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, "%s%s = %lld", z ? ", " : "", prog->sizes[z].name, (long long)prog->sizes[z].value);
    }
    return buf;
}

typedef struct rule_count {
    char rule[32];
    int n;
} rule_count;

static int bench_one(const char *label, const char *desc, const loom_program *prog, int ntraces,
                     double min_seconds, unsigned long seed)
{
    loom_error err;
    loom_error_clear(&err);
    loom_limits lim = loom_target_cpu_limits(); /* the CPU target's (runtime/machine/machine.h) */
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace **traces = calloc((size_t)ntraces, sizeof *traces);
    uint64_t *hashes = calloc((size_t)ntraces, sizeof *hashes);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    int rc = 1;
    if (!sch || !traces || !hashes || !rng) {
        fprintf(stderr, "bench_replay: out of memory\n");
        goto done;
    }
    gsl_rng_set(rng, seed);

    /* ---- sampling ---- */
    long insts = 0;
    double t0 = loom_now_seconds();
    for (int i = 0; i < ntraces; i++) {
        loom_trace *t = loom_trace_new();
        if (!t) {
            fprintf(stderr, "bench_replay: out of memory\n");
            goto done;
        }
        traces[i] = t;
        if (loom_schedule_init(sch, prog, rng, &err)) {
            fprintf(stderr, "bench_replay: %s: init: %s\n", label, err.msg);
            goto done;
        }
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        if (loom_generic_program(sch, &err) || loom_trace_status(t, &err)) {
            fprintf(stderr, "bench_replay: %s: sample %d: %s\n", label, i, err.msg);
            goto done;
        }
        hashes[i] = loom_schedule_hash(sch);
        insts += t->ninsts;
    }
    double t_sample = loom_now_seconds() - t0;

    /* ---- check (untimed): replay reproduces the sampled schedules ---- */
    uint64_t digest = LOOM_FNV_OFFSET;
    int nvalid = 0, nrules = 0;
    rule_count rules[32];
    for (int i = 0; i < ntraces; i++) {
        loom_violation v;
        if (loom_schedule_init(sch, prog, NULL, &err) || loom_trace_replay(traces[i], sch, NULL, &err)) {
            fprintf(stderr, "bench_replay: %s: replay of trace %d failed: %s\n", label, i, err.msg);
            goto done;
        }
        uint64_t h = loom_schedule_hash(sch);
        if (h != hashes[i]) {
            fprintf(stderr, "bench_replay: %s: trace %d replays to a different schedule than it was sampled as\n",
                    label, i);
            goto done;
        }
        loom_status st = loom_validate(sch, &lim, &v, NULL);
        digest = loom_fnv1a_u64(digest, h);
        digest = loom_fnv1a_u64(digest, (uint64_t)st);
        if (st == LOOM_OK) {
            nvalid++;
            continue;
        }
        for (const char *c = v.rule; *c; c++)
            digest = loom_fnv1a_u64(digest, (uint64_t)(unsigned char)*c);
        int k = 0;
        while (k < nrules && strcmp(rules[k].rule, v.rule))
            k++;
        if (k == nrules && nrules < 32) {
            snprintf(rules[nrules].rule, sizeof rules[nrules].rule, "%s", v.rule);
            rules[nrules++].n = 0;
        }
        if (k < nrules)
            rules[k].n++;
    }

    /* ---- timed replay ---- */
    double t_init = 0, t_replay = 0, t_valid = 0;
    long done_traces = 0;
    int passes = 0;
    t0 = loom_now_seconds();
    double elapsed = 0;
    do {
        for (int i = 0; i < ntraces; i++) {
            loom_violation v;
            double a = loom_now_seconds();
            loom_status st = loom_schedule_init(sch, prog, NULL, &err);
            double b = loom_now_seconds();
            if (!st)
                st = loom_trace_replay(traces[i], sch, NULL, &err);
            double c = loom_now_seconds();
            if (st) {
                fprintf(stderr, "bench_replay: %s: replay of trace %d failed: %s\n", label, i, err.msg);
                goto done;
            }
            (void)loom_validate(sch, &lim, &v, NULL);
            double d = loom_now_seconds();
            t_init += b - a;
            t_replay += c - b;
            t_valid += d - c;
        }
        done_traces += ntraces;
        passes++;
        elapsed = loom_now_seconds() - t0;
    } while (elapsed < min_seconds);

    double per_s = (double)done_traces / elapsed, us = 1e6 * elapsed / (double)done_traces;
    double n = (double)done_traces;
    printf("%s: %s\n", label, desc);
    printf("  traces    %d sampled (seed %lu), %.1f instructions each on average, %d stage%s\n", ntraces, seed,
           (double)insts / ntraces, prog->nstmts, prog->nstmts == 1 ? "" : "s");
    printf("  sample    %8.0f traces/s  %7.2f us/trace   (init + generic program + recording, %.2f s)\n",
           ntraces / t_sample, 1e6 * t_sample / ntraces, t_sample);
    printf("  replay    %8.0f traces/s  %7.2f us/trace   (init + replay + validate, %ld replays in %d passes, "
           "%.2f s, 1 core)\n",
           per_s, us, done_traces, passes, elapsed);
    printf("            init %.2f us (%.0f%%) + replay %.2f us (%.0f%%) + validate %.2f us (%.0f%%)\n",
           1e6 * t_init / n, 100 * t_init / elapsed, 1e6 * t_replay / n, 100 * t_replay / elapsed,
           1e6 * t_valid / n, 100 * t_valid / elapsed);
    printf("  valid     %d of %d", nvalid, ntraces);
    for (int k = 0; k < nrules; k++)
        printf("%s%s %d", k ? ", " : " (invalid: ", rules[k].rule, rules[k].n);
    printf("%s\n", nrules ? ")" : "");
    printf("  digest    %016llx\n", (unsigned long long)digest);
    printf("  goal      >= %.0f traces/s: %s\n", GOAL_PER_S, per_s >= GOAL_PER_S ? "met" : "NOT met");
    rc = 0;
done:
    if (traces)
        for (int i = 0; i < ntraces; i++)
            loom_trace_free(traces[i]);
    free(traces);
    free(hashes);
    free(sch);
    if (rng)
        gsl_rng_free(rng);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_replay [--traces N] [--min-seconds S] [--seed N]\n");
}

int main(int argc, char **argv)
{
    int ntraces = 2000;
    double min_seconds = 1.0;
    unsigned long seed = 1;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--traces") && a + 1 < argc)
            ntraces = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--min-seconds") && a + 1 < argc)
            min_seconds = atof(argv[++a]);
        else if (!strcmp(argv[a], "--seed") && a + 1 < argc)
            seed = strtoul(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (ntraces < 1 || !(min_seconds >= 0)) {
        usage(stderr);
        return 2;
    }
    char root[PATH_MAX];
    if (find_root(root, sizeof root)) {
        fprintf(stderr, "bench_replay: cannot find the repository root (workloads/spmm.loom): run it from there\n");
        return 1;
    }
    char path[PATH_MAX + 64], mtx[PATH_MAX + 64], desc[512];
    int rc = 0;

    /* spmm on Cora's shape */
    snprintf(mtx, sizeof mtx, "%s/data/cora_adj.mtx", root);
    long rows = 2708, cols = 2708;
    const char *shape_from = "data/cora_adj.mtx header";
    if (mtx_dims(mtx, &rows, &cols)) {
        rows = cols = 2708;
        shape_from = "Cora's size; data/cora_adj.mtx not readable";
    }
    bind_kv spmm_kv[] = {{"N", rows}, {"K", cols}, {"F", 64}};
    snprintf(path, sizeof path, "%s/workloads/spmm.loom", root);
    loom_program *prog = load_program(path, spmm_kv, 3);
    if (!prog)
        rc = 1;
    else {
        char sz[256];
        snprintf(desc, sizeof desc, "workloads/spmm.loom, %s (N, K from %s)", sizes_text(prog, sz, sizeof sz),
                 shape_from);
        rc |= bench_one("spmm", desc, prog, ntraces, min_seconds, seed);
        loom_program_free(prog);
    }

    /* attention with its defaults */
    snprintf(path, sizeof path, "%s/workloads/attention.loom", root);
    prog = load_program(path, NULL, 0);
    if (!prog)
        rc = 1;
    else {
        char sz[256];
        snprintf(desc, sizeof desc, "workloads/attention.loom, defaults: %s", sizes_text(prog, sz, sizeof sz));
        rc |= bench_one("attention", desc, prog, ntraces, min_seconds, seed);
        loom_program_free(prog);
    }
    return rc;
}
