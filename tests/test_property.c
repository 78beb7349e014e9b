/* Property test of the schedule language and of the design spaces: for
 * every workload, sample random traces (several seeds) of the generic
 * schedule program (suite `property`) or of the real design space (the CPU
 * default module list, modules/module.h; suite `property_space`), write each
 * as JSON, load it back and replay it on a fresh schedule without a random
 * generator (it must give the same schedule), validate it, and compile and
 * run every distinct valid schedule on small real data, checking it against
 * the reference.  Zero wrong results, zero crashes; the share of valid
 * traces and the invalid ones by rule are printed (a design space must be at
 * least 80% valid).
 *
 * LOOM_SPACE_SAMPLES / LOOM_SPACE_MAX_RUN do for property_space what the
 * two below do for property (defaults 400 and 0 = all).
 *
 * LOOM_PROPERTY_SAMPLES sets the traces per workload (default 2000; `make
 * test` sets 700, and LOOM_SPACE_SAMPLES 300, to keep CI under 15 minutes;
 * `make check-property` keeps 2000 and 400);
 * LOOM_PROPERTY_MAX_RUN caps the distinct valid schedules compiled and run
 * per workload (default 0 = all of them: chunks of 48 kernels compiled on
 * every core, see runtime/measure/batch.h); LOOM_PROPERTY_CFLAGS overrides the
 * compiler flags (default -O0, which compiles the ~12,600 kernels in about
 * 4 minutes on 2 cores; `make check-property` runs them all again at -O1 with
 * the vectorizer, 2.5x slower to compile).  Graph workloads run on
 * a 500-node real piece of Cora so that every kernel, even a legal but
 * quadratic one, runs in milliseconds. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../dsl/schedule/schedule.h"
#include "../dsl/ir/util.h"
#include "../modules/generic.h"
#include "../modules/module.h"
#include "../runtime/measure/pipeline.h"
#include "../runtime/measure/batch.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "../runtime/machine/machine.h"
#include "fixture.h"

#define NSEEDS 4

static int samples_per_workload(int space)
{
    const char *e = getenv(space ? "LOOM_SPACE_SAMPLES" : "LOOM_PROPERTY_SAMPLES");
    int n = e ? atoi(e) : space ? 400 : 2000;
    return n >= NSEEDS ? n : NSEEDS;
}

static int max_run(int space)
{
    const char *e = getenv(space ? "LOOM_SPACE_MAX_RUN" : "LOOM_PROPERTY_MAX_RUN");
    return e ? atoi(e) : 0;
}

static void check(int space, const char *workload, const char *data1, const char *data2, const char *p1,
                  const char *p2)
{
    /* Correctness, not speed, is measured here, with two test processes on
     * two cores: OpenMP threads that spin at barriers while descheduled made
     * kernels 20x slower; passive waiting keeps them in milliseconds.  Set
     * before libgomp is loaded (the first build pins it). */
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    double t0 = loom_now_seconds();
    loom_error err;
    loom_error_clear(&err);
    const char *args[4] = {data1, data2, p1, p2};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind(workload, args, 4, 11, &ds);
    loom_reference *ref = NULL;
    cr_assert_eq(loom_reference_run(ds, &ref, &err), LOOM_OK, "%s", err.msg);

    int total = samples_per_workload(space), per_seed = total / NSEEDS;
    int nrules;
    const char *const *rules = loom_validator_rules(&nrules);
    cr_assert_leq(nrules, 64, "by_rule below is too small for %d rules", nrules);
    int by_rule[64] = {0}, valid = 0, invalid = 0; /* >= the validator's rule count */
    int cap = total, nuniq = 0;
    loom_schedule **uniq = calloc((size_t)cap, sizeof *uniq);
    uint64_t *hashes = calloc((size_t)cap, sizeof *hashes);
    loom_schedule *sch = malloc(sizeof *sch), *rep = malloc(sizeof *rep);
    loom_trace *tr = loom_trace_new();
    loom_limits lim = loom_target_cpu_limits();
    loom_registry *reg = loom_registry_new();
    loom_space *sp = NULL;
    cr_assert_not_null(reg);
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &sp, &err), LOOM_OK, "%s", err.msg);
    for (int seed = 0; seed < NSEEDS; seed++) {
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, 1000 + (unsigned long)seed);
        for (int k = 0; k < per_seed; k++) {
            loom_trace_clear(tr);
            cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
            sch->recorder = loom_trace_recorder;
            sch->recorder_ctx = tr;
            cr_assert_eq(space ? loom_space_apply(sp, sch, &err) : loom_generic_program(sch, &err), LOOM_OK,
                         "%s: sampling failed: %s", workload, err.msg);
            cr_assert_eq(loom_trace_status(tr, &err), LOOM_OK, "%s", err.msg);
            /* through JSON, then replay on a fresh schedule without a random
             * generator */
            char *json = NULL;
            loom_trace *back = NULL;
            cr_assert_eq(loom_trace_to_json(tr, prog, &json), LOOM_OK);
            cr_assert_eq(loom_trace_from_json(json, "<property>", &back, &err), LOOM_OK, "%s: %s", workload, err.msg);
            free(json);
            cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK);
            cr_assert_eq(loom_trace_replay(back, rep, NULL, &err), LOOM_OK, "%s: replay failed: %s", workload,
                         err.msg);
            loom_trace_free(back);
            cr_assert(loom_schedule_equal(sch, rep), "%s: replay gave another schedule", workload);
            loom_violation v;
            if (loom_validate(rep, &lim, &v, NULL) != LOOM_OK) {
                invalid++;
                for (int r = 0; r < nrules; r++)
                    if (!strcmp(rules[r], v.rule))
                        by_rule[r]++;
                continue;
            }
            valid++;
            uint64_t h = loom_schedule_hash(rep);
            int seen = 0;
            for (int u = 0; u < nuniq && !seen; u++)
                seen = hashes[u] == h && loom_schedule_equal(uniq[u], rep);
            if (seen)
                continue;
            uniq[nuniq] = malloc(sizeof(loom_schedule));
            loom_schedule_copy(uniq[nuniq], rep);
            hashes[nuniq++] = h;
        }
        gsl_rng_free(rng);
    }
    double t1 = loom_now_seconds();

    /* compile every distinct valid schedule (batched) and run it */
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0;
    o.measure.min_repeats = 1;
    o.measure.warmup = 0;
    o.measure.stall_retries = 0; /* correctness only: a stalled run (two test jobs on two cores) need not be re-run */
    o.measure.time_limit = 120; /* legal but slow schedules exist (a producer recomputed per row) */
    const char *cf = getenv("LOOM_PROPERTY_CFLAGS");
    o.build.cflags = cf ? cf : "-O0 -march=native -fopenmp -fPIC -shared -std=c11";
    int nrun = max_run(space) > 0 && max_run(space) < nuniq ? max_run(space) : nuniq;
    loom_run_result *res = calloc((size_t)(nuniq ? nuniq : 1), sizeof *res);
    loom_batch_opts bo = {.chunk = 48};
    loom_batch_stats bst;
    cr_assert_eq(loom_run_batch_ex((const loom_schedule *const *)uniq, nrun, ds, ref, &o, &bo, res, &bst, &err),
                 LOOM_OK, "%s", err.msg);
    int ok = 0;
    double slowest = 0, total_run = 0;
    for (int u = 0; u < nrun; u++) {
        if (res[u].status == LOOM_OK) {
            ok++;
            total_run += res[u].latency_s;
            if (res[u].latency_s > slowest)
                slowest = res[u].latency_s;
            continue;
        }
        loom_schedule_print(uniq[u], stderr);
        /* its kernel, for the reader of the failure (placements are not in the print) */
        char *src = NULL, path[256];
        const char *base = strrchr(workload, '/');
        snprintf(path, sizeof path, "build/property_failure_%s.c", base ? base + 1 : workload);
        FILE *out = loom_pipeline_schedule_source(uniq[u], &src, &err) == LOOM_OK ? fopen(path, "w") : NULL;
        int written = out && fputs(src, out) >= 0;
        if (out)
            written &= fclose(out) == 0;
        free(src);
        cr_assert_fail("%s: a valid schedule failed: %s: %s (its kernel: %s)", workload,
                       loom_status_name(res[u].status), res[u].message, written ? path : "not written");
    }
    double t2 = loom_now_seconds();
    char byrule[512] = "";
    for (int r = 0; r < nrules; r++)
        if (by_rule[r]) {
            size_t l = strlen(byrule);
            snprintf(byrule + l, sizeof byrule - l, " %s=%d", rules[r], by_rule[r]);
        }
    printf("%s %-34s traces %d, valid %d (%.1f%%), invalid %d%s%s; distinct valid schedules %d, %d compiled "
           "and run, %d correct; sample+replay+validate %.2f s, build+run %.2f s (lower %.2f, compile %.2f, run %.2f; kernels %.2f s, slowest %.3f s)\n",
           space ? "property_space" : "property", workload, valid + invalid, valid, 100.0 * valid / (valid + invalid), invalid, invalid ? ":" : "", byrule,
           nuniq, nrun, ok, t1 - t0, t2 - t1, bst.lower_s, bst.build_s, bst.measure_s, total_run, slowest);
    fflush(stdout);
    cr_assert_eq(ok, nrun);
    cr_assert_eq(valid + invalid, per_seed * NSEEDS);
    cr_assert_gt(valid, 0, "%s: no valid trace at all", workload);
    if (space)
        cr_assert_geq(valid * 100, 80 * (valid + invalid), "%s: under 80%% valid traces", workload);
    loom_space_free(sp);
    loom_registry_free(reg);

    for (int u = 0; u < nuniq; u++)
        free(uniq[u]);
    free(uniq);
    free(hashes);
    free(res);
    free(sch);
    free(rep);
    loom_trace_free(tr);
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* a real 500-node piece of Cora (data/README.md): every kernel runs, so the
 * data is small */
#define CORA "data/cora500_adj.mtx"

#define BOTH(name, ...)                                                                                         \
    Test(property, name, .timeout = 900) { check(0, __VA_ARGS__); }                                          \
    Test(property_space, name, .timeout = 900) { check(1, __VA_ARGS__); }

BOTH(spmv, "workloads/spmv.loom", "A=" CORA, NULL, NULL, NULL)
BOTH(spmm, "workloads/spmm.loom", "A=" CORA, NULL, "F=16", NULL)
/* 20 floats a row (issue 13's streamed copy-out): C's rows start unaligned,
   so loom_stream_copy's peel, streamed body and tail all run */
Test(property_space, spmm_f20, .timeout = 900)
{
    check(1, "workloads/spmm.loom", "A=" CORA, NULL, "F=20", NULL);
}
BOTH(sddmm, "workloads/sddmm.loom", "M=" CORA, NULL, "D=16", NULL)
BOTH(gcn, "workloads/gcn.loom", "A=" CORA, "X=data/cora500_features.mtx", "F=8", NULL)
BOTH(gemm, "workloads/gemm.loom", NULL, NULL, "M=24", "K=16")
/* the dense space only (modules/dense.c): extents whose tiles block K (the
   register tile's accumulating copy-out) */
Test(property_space, gemm_k_blocked, .timeout = 900)
{
    check(1, "workloads/gemm.loom", NULL, NULL, "M=12", "K=64");
}
/* a prime row count: every register tile of more than one row overhangs
   (issue 12's imperfect tiles: clamped operand rows, guarded copy-out) */
Test(property_space, gemm_prime_rows, .timeout = 900)
{
    check(1, "workloads/gemm.loom", NULL, NULL, "M=37", "K=16");
}
BOTH(attention, "workloads/attention.loom", NULL, NULL, "N=40", "D=8")
BOTH(attention_causal, "workloads/attention_causal.loom", NULL, NULL, "N=40", "D=8")
BOTH(attention_band, "workloads/attention_band.loom", NULL, NULL, "N=40", "D=8")
BOTH(sparse_attention, "workloads/sparse_attention.loom", "A=" CORA, NULL, "D=8", NULL)
/* union coiteration (docs "Sparse semantics"): Cora plus a shifted copy */
#define SHIFT "tests/data/cora500_shift.mtx"
BOTH(spadd, "workloads/spadd.loom", "A=" CORA, "B=" SHIFT, NULL, NULL)
BOTH(spmv_sum, "workloads/spmv_sum.loom", "A=" CORA, "B=" SHIFT, NULL, NULL)
BOTH(spmv_bias, "workloads/spmv_bias.loom", "A=" SHIFT, NULL, NULL, NULL)
/* sparse outputs with an assembled pattern */
BOTH(spadd_csr, "workloads/spadd_csr.loom", "A=" CORA, "B=" SHIFT, NULL, NULL)
BOTH(spgemm, "workloads/spgemm.loom", "A=" CORA, "B=" SHIFT, NULL, NULL)
/* whole GNN models (issue 16): the design space only */
Test(property_space, gcn2, .timeout = 900)
{
    check(1, "workloads/gcn2.loom", "A=" CORA, "X=data/cora500_features.mtx", "F=8", "C=4");
}
Test(property_space, gcn2_norm, .timeout = 900)
{
    check(1, "workloads/gcn2_norm.loom", "A=" CORA, "X=data/cora500_features.mtx", "F=8", "C=4");
}
Test(property_space, sage2, .timeout = 900)
{
    check(1, "workloads/sage2.loom", "A=" CORA, "X=data/cora500_features.mtx", "F=8", "C=4");
}
/* the design space only: the generic random program's 1341 distinct
   schedules take minutes to build and run */
Test(property_space, attention_graph_mha, .timeout = 900)
{
    check(1, "workloads/attention_graph_mha.loom", "M=" CORA, NULL, "H=2", "D=8");
}
