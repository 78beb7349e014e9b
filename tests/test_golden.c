/* Golden behaviour test (issue 15): pins what the design spaces sample, how
 * traces replay and what the lowering emits, so that refactors which mean to
 * change nothing can show that they changed nothing.
 *
 * For every shipped workload (every .loom file under workloads/; the table below must list
 * each one), bound to the small data the property test uses, 200 traces are
 * sampled from the CPU design space (loom_space_apply over the default module
 * list) with a fixed seed.  Each trace goes to JSON, is read back and
 * replayed on a fresh schedule without a random generator (as in
 * test_property.c), and three FNV-1a 64-bit digests are taken per workload:
 *   trace     the concatenated trace JSON texts;
 *   schedule  every replayed schedule: loom_schedule_print's dump and
 *             loom_schedule_hash;
 *   c         the generated C (loom_lower + loom_codegen_c) of every trace
 *             the validator accepts (limits below).
 * The digests are in tests/data/golden/digests.txt; the test fails naming
 * each workload and which digests changed.  LOOM_GOLDEN_WRITE=1 rewrites the
 * file from the current code (do it only in a commit that changes a design
 * space or the lowering on purpose, and say why).
 *
 * Host independence.  The space and the validator get explicit limits
 * (GOLDEN_LIMITS: 4 lanes, factor 16, 2 cores, 64 KiB, 16 vector
 * registers, fma), so the digests are the same on an AVX2 and an AVX-512
 * host (the host's shape is detected at run time, dsl/ir/limits.h); the fused
 * lowering reads the vector shape the module annotated from those limits.
 * Code that still asks the host for its cores (sysconf) gets 2: this file
 * replaces sysconf in the test binary so that it answers 2 while
 * golden_cores is set (only in this test's own process: Criterion runs each
 * test in its own). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <glob.h>
#include <gsl/gsl_rng.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "fixture.h"
#include "../dsl/ir/util.h"

#define GOLDEN_FILE "tests/data/golden/digests.txt"
#define GOLDEN_TRACES 200
#define GOLDEN_SEED 20261124UL
#define GOLDEN_CORES 2
#define GOLDEN_LIMITS                                                                                               \
    ((loom_limits){.vector_lanes = 4, .max_vector_factor = 16, .cores = GOLDEN_CORES,                              \
                   .max_workspace_bytes = 64 * 1024, .vector_registers = 16, .fma = 1})

/* ---- sysconf with a forced core count -------------------------------- */

static int golden_cores; /* 0: answer as libc does */
static long (*real_sysconf)(int);
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void find_real_sysconf(void)
{
    real_sysconf = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
}

long sysconf(int name)
{
    if (golden_cores > 0 && (name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF))
        return golden_cores;
    pthread_once(&real_once, find_real_sysconf);
    return real_sysconf ? real_sysconf(name) : -1;
}

/* ---- digests ----------------------------------------------------------- */

#define FNV_OFFSET LOOM_FNV_OFFSET
#define fnv loom_fnv1a /* dsl/ir/util.h */

static uint64_t fnv_str(uint64_t h, const char *s)
{
    return fnv(h, s, strlen(s) + 1); /* with the NUL: a separator */
}

typedef struct golden {
    const char *name;   /* workload file stem */
    const char *args[4]; /* fx_bind arguments, NULL entries skipped */
} golden;

#define CORA "data/cora500_adj.mtx"
#define SHIFT "tests/data/cora500_shift.mtx"

/* the data and sizes of test_property.c; decode and gqa small as in
 * test_fusion_module.c */
static const golden workloads[] = {
    {"attention", {"N=40", "D=8"}},
    {"attention_band", {"N=40", "D=8"}},
    {"attention_causal", {"N=40", "D=8"}},
    {"attention_decode", {"M=256", "D=8"}},
    {"attention_gqa", {"N=32", "D=8"}},
    {"attention_graph_mha", {"M=" CORA, "H=2", "D=8"}},
    {"gcn", {"A=" CORA, "X=data/cora500_features.mtx", "F=8"}},
    {"gcn2", {"A=" CORA, "X=data/cora500_features.mtx", "F=8", "C=4"}},
    {"gcn2_norm", {"A=" CORA, "X=data/cora500_features.mtx", "F=8", "C=4"}},
    {"gemm", {"M=24", "K=16"}},
    {"sage2", {"A=" CORA, "X=data/cora500_features.mtx", "F=8", "C=4"}},
    {"sddmm", {"M=" CORA, "D=16"}},
    {"sparse_attention", {"A=" CORA, "D=8"}},
    {"spmm", {"A=" CORA, "F=16"}},
    {"spmv", {"A=" CORA}},
    {"spadd", {"A=" CORA, "B=" SHIFT}},
    {"spadd_csr", {"A=" CORA, "B=" SHIFT}},
    {"spgemm", {"A=" CORA, "B=" SHIFT}},
    {"spmixed", {"A=" CORA, "B=" SHIFT, "D=" CORA}},
    {"spmv_bias", {"A=" SHIFT}},
    {"spmv_sum", {"A=" CORA, "B=" SHIFT}},
    {"spsub", {"A=" CORA, "B=" SHIFT}},
};
#define NWORKLOADS ((int)(sizeof workloads / sizeof workloads[0]))

typedef struct digests {
    uint64_t trace, schedule, c;
    int valid;
} digests;

static void take_digests(const golden *g, digests *d)
{
    char path[256];
    snprintf(path, sizeof path, "workloads/%s.loom", g->name);
    loom_error err;
    loom_error_clear(&err);
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind(path, g->args, 4, 11, &ds);
    loom_registry *reg = loom_registry_new();
    loom_space *sp = NULL;
    cr_assert_not_null(reg);
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &sp, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = GOLDEN_LIMITS;
    if (golden_cores != GOLDEN_CORES) /* spaces_sample_on_more_cores */
        lim.cores = golden_cores;
    loom_space_set_limits(sp, &lim);
    loom_schedule *sch = malloc(sizeof *sch), *rep = malloc(sizeof *rep);
    loom_trace *tr = loom_trace_new();
    cr_assert(sch && rep && tr);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, GOLDEN_SEED);
    d->trace = d->schedule = d->c = FNV_OFFSET;
    d->valid = 0;
    for (int k = 0; k < GOLDEN_TRACES; k++) {
        loom_trace_clear(tr);
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = tr;
        cr_assert_eq(loom_space_apply(sp, sch, &err), LOOM_OK, "%s on %d cores: sampling failed: %s", g->name,
                     golden_cores, err.msg);
        cr_assert_eq(loom_trace_status(tr, &err), LOOM_OK, "%s", err.msg);
        char *json = NULL;
        loom_trace *back = NULL;
        cr_assert_eq(loom_trace_to_json(tr, prog, &json), LOOM_OK);
        d->trace = fnv_str(d->trace, json);
        cr_assert_eq(loom_trace_from_json(json, "<golden>", &back, &err), LOOM_OK, "%s: %s", g->name, err.msg);
        free(json);
        cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_trace_replay(back, rep, NULL, &err), LOOM_OK, "%s: replay: %s", g->name, err.msg);
        loom_trace_free(back);

        char *dump = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&dump, &len);
        cr_assert_not_null(f);
        loom_schedule_print(rep, f);
        fprintf(f, "hash %016llx\n", (unsigned long long)loom_schedule_hash(rep));
        fclose(f);
        d->schedule = fnv_str(d->schedule, dump);
        free(dump);

        loom_violation v;
        if (loom_validate(rep, &lim, &v, NULL) != LOOM_OK) {
            d->c = fnv_str(d->c, v.rule); /* which rule rejected it is behaviour too */
            continue;
        }
        d->valid++;
        lir_func *fn = NULL;
        char *c = NULL;
        cr_assert_eq(loom_lower(rep, &fn, &err), LOOM_OK, "%s: lowering a valid trace: %s", g->name, err.msg);
        cr_assert_eq(loom_codegen_c(fn, NULL, &c, &err), LOOM_OK, "%s: codegen: %s", g->name, err.msg);
        d->c = fnv_str(d->c, c);
        free(c);
        loom_lir_func_free(fn);
    }
    gsl_rng_free(rng);
    loom_trace_free(tr);
    free(sch);
    free(rep);
    loom_space_free(sp);
    loom_registry_free(reg);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* Every .loom file under workloads/ has a row in the table. */
static void check_table_complete(void)
{
    glob_t gl;
    cr_assert_eq(glob("workloads/*.loom", 0, NULL, &gl), 0, "no workloads/*.loom (run from the repository root)");
    for (size_t k = 0; k < gl.gl_pathc; k++) {
        const char *base = gl.gl_pathv[k] + strlen("workloads/");
        size_t n = strlen(base) - strlen(".loom");
        int found = 0;
        for (int w = 0; w < NWORKLOADS && !found; w++)
            found = strlen(workloads[w].name) == n && !strncmp(workloads[w].name, base, n);
        cr_expect(found, "%s has no row in test_golden.c's workload table: add one (its data as in "
                  "test_property.c) and regenerate with LOOM_GOLDEN_WRITE=1", gl.gl_pathv[k]);
    }
    globfree(&gl);
}

static int read_recorded(const char *name, digests *d)
{
    FILE *f = fopen(GOLDEN_FILE, "r");
    if (!f)
        return 0;
    char line[512], nm[128];
    unsigned long long t, s, c;
    int valid, found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        if (sscanf(line, "%127s trace=%llx schedule=%llx c=%llx valid=%d", nm, &t, &s, &c, &valid) == 5 &&
            !strcmp(nm, name)) {
            d->trace = t;
            d->schedule = s;
            d->c = c;
            d->valid = valid;
            found = 1;
        }
    }
    fclose(f);
    return found;
}

Test(golden, digests, .timeout = 600)
{
    golden_cores = GOLDEN_CORES;
    cr_assert_eq(loom_limits_host().cores, GOLDEN_CORES, "the sysconf override is not in effect");
    check_table_complete();
    const char *w = getenv("LOOM_GOLDEN_WRITE");
    int write = w && *w && strcmp(w, "0");
    digests got[NWORKLOADS];
    for (int k = 0; k < NWORKLOADS; k++)
        take_digests(&workloads[k], &got[k]);
    if (write) {
        FILE *f = fopen(GOLDEN_FILE, "w");
        cr_assert_not_null(f, "cannot write %s", GOLDEN_FILE);
        fprintf(f, "# tests/test_golden.c: FNV-1a 64 digests of %d sampled traces per workload (seed %lu):\n"
                   "# trace JSON, replayed schedules, generated C of the valid ones.  Regenerate with\n"
                   "# LOOM_GOLDEN_WRITE=1 only when a design space or the lowering changes on purpose.\n",
                GOLDEN_TRACES, GOLDEN_SEED);
        for (int k = 0; k < NWORKLOADS; k++)
            fprintf(f, "%s trace=%016llx schedule=%016llx c=%016llx valid=%d\n", workloads[k].name,
                    (unsigned long long)got[k].trace, (unsigned long long)got[k].schedule,
                    (unsigned long long)got[k].c, got[k].valid);
        cr_assert_eq(fclose(f), 0);
        cr_log_warn("wrote %s", GOLDEN_FILE);
        return;
    }
    char report[4096] = "";
    for (int k = 0; k < NWORKLOADS; k++) {
        digests want;
        size_t l = strlen(report);
        if (!read_recorded(workloads[k].name, &want)) {
            snprintf(report + l, sizeof report - l, "\n  %s: no digest recorded in %s", workloads[k].name,
                     GOLDEN_FILE);
            continue;
        }
        if (want.trace == got[k].trace && want.schedule == got[k].schedule && want.c == got[k].c &&
            want.valid == got[k].valid)
            continue;
        snprintf(report + l, sizeof report - l, "\n  %s:%s%s%s (valid traces %d, recorded %d)",
                 workloads[k].name, want.trace != got[k].trace ? " trace JSON changed;" : "",
                 want.schedule != got[k].schedule ? " replayed schedules changed;" : "",
                 want.c != got[k].c ? " generated C changed;" : "", got[k].valid, want.valid);
    }
    cr_assert(!report[0],
              "behaviour changed against %s:%s\nIf the change is on purpose (a design space or the lowering), "
              "regenerate with LOOM_GOLDEN_WRITE=1 in the same commit and say why.",
              GOLDEN_FILE, report);
}

/* The design spaces sample on hosts with more cores too (the modules fuse
 * row loops while a loop has fewer than cores x 16 rows): every draw of
 * every workload succeeds, replays and lowers when valid. */
Test(golden, spaces_sample_on_more_cores, .timeout = 600)
{
    static const int cores[] = {1, 3, 4, 8, 64};
    for (size_t c = 0; c < sizeof cores / sizeof *cores; c++) {
        golden_cores = cores[c];
        cr_assert_eq(loom_limits_host().cores, cores[c]);
        for (int k = 0; k < NWORKLOADS; k++) {
            digests d;
            take_digests(&workloads[k], &d);
            cr_assert_gt(d.valid, 0, "%s on %d cores: no valid trace", workloads[k].name, cores[c]);
        }
    }
}

/* The digests do not depend on the host's vector unit: the fused
 * workloads (whose kernels follow the target's vector shape) give the
 * recorded digests with the host detection forced to AVX2 and to SSE
 * (LOOM_HOST_ISA, dsl/ir/limits.h) as on this host. */
Test(golden, digests_do_not_depend_on_the_host_isa, .timeout = 600)
{
    static const char *const isas[] = {"avx2", "sse", "avx512"};
    golden_cores = GOLDEN_CORES;
    for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
        setenv("LOOM_HOST_ISA", isas[i], 1);
        for (int k = 0; k < NWORKLOADS; k++) {
            if (strncmp(workloads[k].name, "attention", 9) && strcmp(workloads[k].name, "sparse_attention"))
                continue;
            digests want, got;
            if (!read_recorded(workloads[k].name, &want))
                continue; /* golden::digests reports it */
            take_digests(&workloads[k], &got);
            cr_expect(want.trace == got.trace && want.schedule == got.schedule && want.c == got.c,
                      "%s with the host seen as %s: digests differ from %s", workloads[k].name, isas[i], GOLDEN_FILE);
        }
    }
    unsetenv("LOOM_HOST_ISA");
}
