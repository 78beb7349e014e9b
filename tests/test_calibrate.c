/* Tests of the calibrated host (runtime/target/calibrate.h, issue 29): one
 * quick calibration into a private cache, then what loom_target_load("host")
 * reads back, its figures' physical bounds, and the simulator on it being
 * deterministic.  No timing goals (bench/fidelity.sh has the figures). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/schedule/schedule.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/calibrate.h"
#include "../runtime/target/target.h"
#include "fixture.h"

static char cachedir[256];
static char *json_text;

/* Calibrate once (quick mode) into a fresh $LOOM_CACHE. */
static void calibrate_once(void)
{
    snprintf(cachedir, sizeof cachedir, "/tmp/loom-test-calib-XXXXXX");
    cr_assert_not_null(mkdtemp(cachedir));
    setenv("LOOM_CACHE", cachedir, 1);
    unsetenv("LOOM_CALIBRATE");
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_calibrate_run(1, NULL, NULL, &t, &json_text, &err), LOOM_OK, "%s", err.msg);
    char path[1100];
    cr_assert_eq(loom_calibrate_save(json_text, 1, path, sizeof path, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(access(path, R_OK), 0, "the calibration is cached at %s", path);
}

static double figure(const cJSON *figs, const char *key)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(figs, key);
    cr_assert_not_null(f, "figure %s present", key);
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(f, "source");
    cr_assert(cJSON_IsString(src) && src->valuestring[0], "figure %s names its source", key);
    return cJSON_GetObjectItemCaseSensitive(f, "value")->valuedouble;
}

static void check_bounds(const loom_target *t)
{
    cr_expect(t->ghz > 0.2 && t->ghz < 10, "clock %g GHz", t->ghz);
    cr_expect(t->fma_units >= 1 && t->fma_units <= 4);
    cr_expect(t->fadd_units >= 0 && t->fadd_units <= 4, "%d add pipes", t->fadd_units); /* model 70 */
    cr_expect(t->narrow_fma_units == 0 || (t->narrow_fma_units > t->fma_units && t->narrow_fma_units <= 8),
              "%d narrow FMA pipes beside %d", t->narrow_fma_units, t->fma_units); /* model 92 */
    for (int i = 0; i < t->ncaches; i++) {
        cr_expect_gt(t->caches[i].latency, 0, "%s latency", t->caches[i].name);
        if (i)
            cr_expect_gt(t->caches[i].latency, t->caches[i - 1].latency, "latency grows with the level");
    }
    cr_expect_gt(t->mem_latency_ns, 0);
    cr_expect_lt(t->caches[0].latency, t->caches[t->ncaches - 1].latency + t->mem_latency_ns * t->ghz,
                 "L1 latency below memory's");
    cr_expect_gt(t->core_bandwidth, 0);
    cr_expect_geq(t->mem_bandwidth, t->core_bandwidth, "the chip moves at least what one core does");
    cr_expect_gt(t->mem_miss_cost_ns, 0);
    cr_expect_gt(t->parallel_overhead_ns, 0);
    /* a fork and join of a few threads takes microseconds; a millisecond is
     * a time slice of another program measured instead (format 5) */
    cr_expect_lt(t->parallel_overhead_ns, 1e6, "an OpenMP region %g ns", t->parallel_overhead_ns);
    cr_expect(t->mlp >= 1 && t->mlp <= 32);
    /* branch memory (x86-64 hosts): the points the bench measured, each a
     * fraction of misses left, branches ascending */
#if defined(__x86_64__)
    cr_expect_geq(t->nbranch_memory, 2, "branch memory measured at %d points", t->nbranch_memory);
#endif
    for (int i = 0; i < t->nbranch_memory; i++) {
        cr_expect(t->branch_memory[i][1] >= 0 && t->branch_memory[i][1] <= 1, "fraction %g", t->branch_memory[i][1]);
        if (i)
            cr_expect_gt(t->branch_memory[i][0], t->branch_memory[i - 1][0]);
    }
}

static void check_figures(const loom_target *t)
{
    cJSON *root = cJSON_Parse(json_text);
    cr_assert_not_null(root);
    const cJSON *figs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "calibration"),
                                                         "figures");
    cr_assert(cJSON_IsObject(figs));
    for (const cJSON *f = figs->child; f; f = f->next)
        (void)figure(figs, f->string); /* every figure has a source */
    char key[64];
    snprintf(key, sizeof key, "%s.load_bandwidth", t->caches[0].name);
    double l1bw = figure(figs, key);
    /* memory cannot feed one core faster than its L1 does */
    cr_expect_lt(t->core_bandwidth, l1bw, "triad %g B/s below the L1 load bandwidth %g B/s", t->core_bandwidth, l1bw);
    cr_expect_lt(figure(figs, "memory.load_bandwidth"), l1bw);
    /* model 99: the non-temporal stores' rate with every thread, a figure of the target when the
       host has them (x86-64 does), below what L1 loads run at times the cores */
    cr_expect_eq(figure(figs, "memory.nt_bandwidth"), t->mem_nt_bandwidth);
#if defined(__x86_64__)
    cr_expect_gt(t->mem_nt_bandwidth, 0);
#endif
    cr_expect_lt(t->mem_nt_bandwidth, l1bw * t->cores, "%g B/s of non-temporal stores", t->mem_nt_bandwidth);
    cr_expect_gt(figure(figs, "barrier_ns"), 0);
    cr_expect_gt(figure(figs, "fma128.per_cycle"), 0);
    /* what the compiler tunes for: 3 (+ vectors) under GCC's Zen tuning,
     * 4 (zmm) or 3 (ymm) fixed under its generic one, else 0; the figure
     * and the target agree */
    /* model 15's keys: cc's complete peeling and the issue/chain norm, each with its source */
    cr_expect_eq((int)figure(figs, "peel_times"), t->peel_times);
    cr_expect_gt(t->peel_times, 0);
    cr_expect_eq(figure(figs, "issue_chain_norm"), t->issue_chain_norm);
    cr_expect_geq(t->issue_chain_norm, 1);
    /* model 19: the private levels past L1 serve a core at their measured load bandwidth */
    for (int l = 1; l < t->ncaches; l++)
        if (!t->caches[l].shared) {
            cr_expect_gt(t->caches[l].bandwidth, 0, "%s has no bandwidth", t->caches[l].name);
            cr_expect_lt(t->caches[l].bandwidth, 1e13, "%s: %g bytes/s", t->caches[l].name, t->caches[l].bandwidth);
        }
    /* model 21: the first shared level's bandwidth, between the memory
       triad's (it is nearer) and the level below's (it is farther), and the
       sampling budget, with its source */
    for (int l = 1; l < t->ncaches; l++)
        if (t->caches[l].shared && !t->caches[l - 1].shared) {
            cr_expect_gt(t->caches[l].bandwidth, 0, "%s has no bandwidth", t->caches[l].name);
            cr_expect_lt(t->caches[l].bandwidth, l1bw, "%s: %g bytes/s", t->caches[l].name, t->caches[l].bandwidth);
        }
    cr_expect_eq(figure(figs, "sample_budget"), t->sample_budget);
    cr_expect_geq(t->sample_budget, 1000);
    /* model 18's streamer look-ahead, with its source */
    cr_expect_eq((int)figure(figs, "stream_lines"), t->stream_lines);
    cr_expect_gt(t->stream_lines, 0);
    /* model 49's stride prefetch, with its source: none, or one of the
       chased strides (2, 31, 257, 4097 lines) */
    cr_expect_eq((int)figure(figs, "stride_prefetch_lines"), t->stride_prefetch_lines);
    int spl = t->stride_prefetch_lines;
    cr_expect(spl == 0 || spl == 2 || spl == 31 || spl == 257 || spl == 4097, "stride_prefetch_lines %d", spl);
    /* model 66's page size, with its source: the system's base page */
    cr_expect_eq((int)figure(figs, "page_bytes"), t->page_bytes);
    cr_expect_eq((long)t->page_bytes, sysconf(_SC_PAGESIZE));
    /* model 67's line transfer, with its source: none (one core, or the
       probe gave up), or above an L1 hit and below a memory access's worst */
    cr_expect_eq(figure(figs, "core_transfer_ns"), t->core_transfer_ns);
    cr_expect(t->core_transfer_ns == 0 || (t->core_transfer_ns > 1 && t->core_transfer_ns < 10000),
              "core_transfer_ns %g", t->core_transfer_ns);
    /* model 82's reorder window, with its source: not measured, or between
       the chases' first point (34 instructions) and their last (658) --
       every x86-64 core with AVX has a buffer in that range */
    cr_expect_eq(figure(figs, "reorder_window"), t->reorder_window);
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx"))
        cr_expect(t->reorder_window >= 34 && t->reorder_window <= 658, "reorder_window %g", t->reorder_window);
#endif
    double slc = figure(figs, "shared_load_copies");
    cr_expect_eq((int)slc, t->shared_load_copies, "figure %g, target %d", slc, t->shared_load_copies);
    const char *cc = getenv("LOOM_CC") && *getenv("LOOM_CC") ? getenv("LOOM_CC") : "cc";
    char cmd[600], line[512] = "";
    snprintf(cmd, sizeof cmd,
             "%s -march=native -Q --help=target 2>/dev/null | sed -n 's/^[[:space:]]*-mtune=[[:space:]]*//p'", cc);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    if (!fgets(line, sizeof line, p))
        line[0] = 0;
    pclose(p);
    line[strcspn(line, " \t\r\n")] = 0;
    int generic = !strcmp(line, "generic") && t->vector_bits >= 256;
    int want = !strncmp(line, "znver", 5) ? 3 : generic ? (t->vector_bits >= 512 ? 4 : 3) : 0;
    cr_expect_eq(t->shared_load_copies, want, "cc tunes for '%s': shared_load_copies %d", line,
                 t->shared_load_copies);
    cr_expect_eq(t->shared_load_fixed, generic, "cc tunes for '%s': shared_load_fixed %d", line,
                 t->shared_load_fixed);
    cJSON_Delete(root);
}

/* The default schedule of SpMM on cora500, simulated twice on t. */
static void check_deterministic(const loom_target *t)
{
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    lir_func *f = NULL;
    cr_assert_eq(loom_schedule_naive(s, prog, 0, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_lower(s, &f, &err), LOOM_OK, "%s", err.msg);
    loom_sim_result a, b;
    cr_assert_eq(loom_sim_run(f, ds, t, &a, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_sim_run(f, ds, t, &b, &err), LOOM_OK, "%s", err.msg);
    cr_expect_eq(memcmp(&a, &b, sizeof a), 0, "same figures twice: %.17g vs %.17g s", a.latency_s, b.latency_s);
    cr_expect(a.latency_s > 0 && isfinite(a.latency_s));
    loom_target cold = *t;
    cold.warm_caches = 0;
    loom_sim_result c;
    cr_assert_eq(loom_sim_run(f, ds, &cold, &c, &err), LOOM_OK, "%s", err.msg);
    cr_expect_lt(a.dram_bytes, c.dram_bytes, "warm caches read less from memory than cold ones");
    loom_lir_func_free(f);
    free(s);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

Test(calibrate, quick_calibration_loads_within_bounds_and_simulates_deterministically, .timeout = 240)
{
    calibrate_once();
    loom_target h;
    loom_error err;
    cr_assert_eq(loom_target_load("host", &h, &err), LOOM_OK, "%s", err.msg);
    char fp[16];
    loom_calibrate_fingerprint(fp, sizeof fp);
    char want[32];
    snprintf(want, sizeof want, "host-%s", fp);
    cr_expect_str_eq(h.name, want, "the calibrated target is named by the CPU fingerprint");
    cr_expect_gt(strlen(h.cpu), 0, "it names the CPU it was measured on");
    cr_expect(h.warm_caches);
    loom_target raw;
    cr_assert_eq(loom_target_host(&raw, &err), LOOM_OK);
    cr_expect_eq(h.cores, raw.cores);
    cr_expect_eq(h.vector_bits, raw.vector_bits);
    cr_expect_eq(h.caches[0].size, raw.caches[0].size, "cache sizes come from the machine");
    check_bounds(&h);
    check_figures(&h);
    check_deterministic(&h);
    /* LOOM_CALIBRATE=off: the uncalibrated model */
    setenv("LOOM_CALIBRATE", "off", 1);
    loom_target off;
    cr_assert_eq(loom_target_load("sim:host", &off, &err), LOOM_OK, "%s", err.msg);
    cr_expect_str_eq(off.name, "host");
    unsetenv("LOOM_CALIBRATE");
    free(json_text);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cachedir);
    cr_expect_eq(system(cmd), 0);
}

/* A target file with the calibrated keys parses, and a typo in them is
 * named. */
/* A one-core target whose "model" object is model_json must be rejected
 * as bad data, the message naming $.model.key. */
static void expect_bad_model(const char *model_json, const char *key)
{
    char js[1024], where[64];
    snprintf(js, sizeof js,
             "{\"name\": \"c\", \"cores\": 1, \"vector_bits\": 256, \"fma_units\": 2, \"ghz\": 3,"
             " \"caches\": [{\"name\": \"L1d\", \"size\": 32768, \"assoc\": 8, \"line\": 64,"
             " \"latency\": 4, \"shared\": false}], \"memory\": {\"bandwidth\": 1e10, \"latency_ns\": 90},"
             " \"model\": %s}",
             model_json);
    snprintf(where, sizeof where, "$.model.%s", key);
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_parse(js, "<c>", &t, &err), LOOM_ERR_DATA, "%s accepted", model_json);
    cr_expect(strstr(err.msg, where), "%s", err.msg);
}

Test(calibrate, calibrated_keys_parse)
{
    const char *ok = "{\"name\": \"c\", \"cpu\": \"X\", \"cores\": 1, \"vector_bits\": 256, \"fma_units\": 2,"
                     " \"fadd_units\": 2, \"narrow_fma_units\": 4, \"ghz\": 3, \"caches\": [{\"name\": \"L1d\", \"size\": 32768, \"assoc\": 8, \"line\": 64,"
                     " \"latency\": 4, \"shared\": false}, {\"name\": \"L2\", \"size\": 524288, \"assoc\": 8,"
                     " \"line\": 64, \"latency\": 14, \"shared\": false, \"miss_cost\": 1.5, \"bandwidth\": 1e11}],"
                     " \"memory\": {\"bandwidth\": 1e10, \"latency_ns\": 90, \"miss_cost_ns\": 7},"
                     " \"model\": {\"warm_caches\": true, \"shared_load_copies\": 3, \"peel_times\": 16,"
                     " \"issue_chain_norm\": 2, \"stream_lines\": 8, \"stride_prefetch_lines\": 257,"
                     " \"page_bytes\": 4096, \"core_transfer_ns\": 212.8, \"reorder_window\": 314,"
                     " \"sample_budget\": 5e6}, \"calibration\": {\"figures\": {}}}";
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_parse(ok, "<c>", &t, &err), LOOM_OK, "%s", err.msg);
    cr_expect_str_eq(t.cpu, "X");
    cr_expect_eq(t.caches[1].miss_cost, 1.5);
    cr_expect_eq(t.caches[1].bandwidth, 1e11);
    cr_expect_eq(t.mem_miss_cost_ns, 7);
    cr_expect(t.warm_caches);
    cr_expect_eq(t.shared_load_copies, 3);
    cr_expect_eq(t.peel_times, 16);
    cr_expect_eq(t.issue_chain_norm, 2);
    cr_expect_eq(t.stream_lines, 8);
    cr_expect_eq(t.stride_prefetch_lines, 257);
    cr_expect_eq(t.page_bytes, 4096);
    cr_expect_eq(t.core_transfer_ns, 212.8);
    cr_expect_eq(t.reorder_window, 314);
    cr_expect_eq(t.sample_budget, 5e6);
    cr_expect_eq(t.fadd_units, 2);
    cr_expect_eq(t.narrow_fma_units, 4);
    const char *bad_fadd = "{\"name\": \"c\", \"cores\": 1, \"vector_bits\": 256, \"fma_units\": 2,"
                           " \"fadd_units\": 1.5, \"ghz\": 3, \"caches\": [{\"name\": \"L1d\", \"size\": 32768,"
                           " \"assoc\": 8, \"line\": 64, \"latency\": 4, \"shared\": false}],"
                           " \"memory\": {\"bandwidth\": 1e10, \"latency_ns\": 90}}";
    cr_assert_eq(loom_target_parse(bad_fadd, "<c>", &t, &err), LOOM_ERR_DATA);
    cr_expect(strstr(err.msg, "$.fadd_units"), "%s", err.msg);
    expect_bad_model("{\"issue_chain_norm\": 0.5}", "issue_chain_norm");
    expect_bad_model("{\"sample_budget\": 10}", "sample_budget");
    expect_bad_model("{\"page_bytes\": 3000}", "page_bytes");
    expect_bad_model("{\"reorder_window\": 8}", "reorder_window");
    const char *bad = "{\"name\": \"c\", \"cores\": 1, \"vector_bits\": 256, \"fma_units\": 2, \"ghz\": 3,"
                      " \"caches\": [{\"name\": \"L1d\", \"size\": 32768, \"assoc\": 8, \"line\": 64, \"latency\": 4,"
                      " \"shared\": false}], \"memory\": {\"bandwidth\": 1e10, \"latency_ns\": 90,"
                      " \"miss_cost_ns\": -1}}";
    cr_assert_eq(loom_target_parse(bad, "<c>", &t, &err), LOOM_ERR_DATA);
    cr_expect(strstr(err.msg, "$.memory.miss_cost_ns"), "%s", err.msg);
    /* branch_memory: [branches, fraction] pairs, checked and named */
    static const struct {
        const char *points, *says;
    } bm[] = {{"[[1024, 0.1], [4096, 0.5]]", NULL},
              {"[[1024, 1.5]]", "$.model.branch_memory[0]: the fraction must be in [0, 1]"},
              {"[[1024, 0.1], [512, 0.5]]", "$.model.branch_memory[1]: branches must be ascending"},
              {"[[0, 0.1]]", "branches must be at least 1"},
              {"[1024, 0.1]", "$.model.branch_memory[0]: expected a pair"},
              {"[]", "expected an array of 1 to 8"}};
    expect_bad_model("{\"shared_load_copies\": 2.5}", "shared_load_copies");
    for (size_t i = 0; i < sizeof bm / sizeof bm[0]; i++) {
        char js[1024];
        snprintf(js, sizeof js,
                 "{\"name\": \"c\", \"cores\": 1, \"vector_bits\": 256, \"fma_units\": 2, \"ghz\": 3,"
                 " \"caches\": [{\"name\": \"L1d\", \"size\": 32768, \"assoc\": 8, \"line\": 64, \"latency\": 4,"
                 " \"shared\": false}], \"memory\": {\"bandwidth\": 1e10, \"latency_ns\": 90},"
                 " \"model\": {\"branch_memory\": %s}}",
                 bm[i].points);
        loom_status st = loom_target_parse(js, "<c>", &t, &err);
        if (!bm[i].says) {
            cr_assert_eq(st, LOOM_OK, "%s", err.msg);
            cr_expect_eq(t.nbranch_memory, 2);
            cr_expect_eq(t.branch_memory[1][0], 4096);
            cr_expect_eq(t.branch_memory[1][1], 0.5);
        } else {
            cr_expect_eq(st, LOOM_ERR_DATA, "%s accepted", bm[i].points);
            cr_expect(strstr(err.msg, bm[i].says), "%s: %s", bm[i].points, err.msg);
        }
    }
    /* a fingerprint changes with the calibrated keys, and not without them */
    loom_target u = t;
    char a[128], b[128];
    cr_assert_eq(loom_target_parse(ok, "<c>", &t, &err), LOOM_OK);
    u = t;
    u.warm_caches = 0;
    loom_target_fingerprint(&t, a, sizeof a);
    loom_target_fingerprint(&u, b, sizeof b);
    cr_expect_str_neq(a, b);
    u = t;
    u.nbranch_memory = 1;
    u.branch_memory[0][0] = 1024;
    u.branch_memory[0][1] = 0.2;
    loom_target_fingerprint(&u, b, sizeof b);
    cr_expect_str_neq(a, b, "branch memory enters the fingerprint");
    u = t;
    u.shared_load_copies = 0;
    loom_target_fingerprint(&u, b, sizeof b);
    cr_expect_str_neq(a, b, "shared_load_copies enters the fingerprint");
    u = t;
    u.reorder_window = 448;
    loom_target_fingerprint(&u, b, sizeof b);
    cr_expect_str_neq(a, b, "reorder_window enters the fingerprint");
    u = t;
    u.shared_load_fixed = !t.shared_load_fixed;
    loom_target_fingerprint(&u, b, sizeof b);
    cr_expect_str_neq(a, b, "shared_load_fixed enters the fingerprint");
}

/* The last level's effective size from the sweep (loom_calibrate_llc_size):
 * the times are written here by hand, the shapes the sweep meets (a
 * format-12 pointer chase's ns; a format-13 gathered line's below). */
Test(calibrate, last_level_size_is_the_step_in_the_chase_sweep)
{
    const double MiB = 1 << 20, reported = 260 * MiB;
    const double ws[5] = {4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB};
    /* a step between 8 and 16 MiB (Emerald Rapids VM, 2026-11-30) */
    const double step[5] = {44, 52, 137, 148, 182};
    cr_expect_eq(loom_calibrate_llc_size(ws, step, 5, reported), 8 * MiB);
    /* neighbours slowed 8 MiB already: the step is right after the first point */
    const double early[5] = {44, 130, 140, 150, 182};
    cr_expect_eq(loom_calibrate_llc_size(ws, early, 5, reported), 4 * MiB);
    /* flat: a level at least as large as the sweep keeps the reported size */
    const double flat[5] = {40, 41, 43, 45, 52};
    cr_expect_eq(loom_calibrate_llc_size(ws, flat, 5, reported), reported);
    /* never more than the reported size, and too few points say nothing */
    cr_expect_eq(loom_calibrate_llc_size(ws, step, 5, 6 * MiB), 6 * MiB);
    cr_expect_eq(loom_calibrate_llc_size(ws, step, 2, reported), reported);
    /* gathered lines on a Zen 5 VM (32 MiB L3 reported; 2026-12-02), 2 .. 64 MiB */
    const double gws[6] = {2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB};
    const double gat[6] = {0.47, 0.52, 0.68, 1.37, 1.90, 2.62};
    cr_expect_eq(loom_calibrate_llc_size(gws, gat, 6, 32 * MiB), 16 * MiB);
}

/* The reorder window from the chases' times (loom_calibrate_reorder_window,
 * model 82), written here by hand in the shapes the chases meet. */
Test(calibrate, reorder_window_is_the_step_in_the_chases)
{
    const double pairs[8] = {16, 48, 80, 112, 144, 152, 160, 192};
    /* Zen 4 (320 entries), 2026-12-06: one memory latency to 152 pairs, two from 160 */
    const double zen4[8] = {162, 157, 167, 171, 178, 180, 323, 329};
    cr_expect_eq(loom_calibrate_reorder_window(pairs, zen4, 8), (306 + 322) / 2.0);
    /* one slow run before the step is a burst of other work, not the step */
    const double burst[8] = {162, 157, 300, 171, 178, 180, 323, 329};
    cr_expect_eq(loom_calibrate_reorder_window(pairs, burst, 8), (306 + 322) / 2.0);
    /* the step measured from the least of the first four points, not the first */
    const double slow_first[8] = {400, 157, 167, 171, 500, 520, 530, 540};
    cr_expect_eq(loom_calibrate_reorder_window(pairs, slow_first, 8), (226 + 290) / 2.0);
    /* no step (a buffer larger than the chases reach), a step at the first
       point, too few points, and points not measured (0) say nothing */
    const double flat[8] = {162, 157, 167, 171, 178, 180, 190, 200};
    cr_expect_eq(loom_calibrate_reorder_window(pairs, flat, 8), 0);
    const double at_first[8] = {400, 400, 157, 160, 500, 520, 530, 540};
    cr_expect_eq(loom_calibrate_reorder_window(pairs, at_first, 8), 0);
    cr_expect_eq(loom_calibrate_reorder_window(pairs, zen4, 2), 0);
    const double none[8] = {0};
    cr_expect_eq(loom_calibrate_reorder_window(pairs, none, 8), 0);
}

/* reading `name` (element k) of a target file's calibration.readings */
static double reading(const cJSON *root, const char *name, int k)
{
    const cJSON *rd = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "calibration"), "readings");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rd, name);
    cr_assert_not_null(v, "reading %s kept in the file", name);
    return cJSON_IsArray(v) ? cJSON_GetArrayItem(v, k)->valuedouble : v->valuedouble;
}

static double calibrations(const cJSON *root)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "calibration"),
                                                      "calibrations");
    cr_assert(cJSON_IsNumber(n));
    return n->valuedouble;
}

/* A calibration folds an earlier one of the same CPU and mode in
 * (calibrate.h): each time the least, each rate the most, the last level's
 * sweep per working set the fastest, the branch figures together.  The
 * earlier file is the first calibration's with readings written here by
 * hand, so that each rule's pick is known. */
Test(calibrate, a_calibration_folds_the_earlier_readings_in, .timeout = 240)
{
    calibrate_once();
    cJSON *first = cJSON_Parse(json_text);
    cr_assert_not_null(first);
    cr_expect_eq(calibrations(first), 1);
    cJSON *rd = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(first, "calibration"), "readings");
    int nsweep = (int)reading(first, "nsweep", 0);
    cr_assert_gt(nsweep, 2, "the last level's sweep has %d points", nsweep);
    cJSON_ReplaceItemInObject(rd, "clock_ns", cJSON_CreateNumber(0.25));   /* faster than any run: kept */
    cJSON_ReplaceItemInObject(rd, "triad1", cJSON_CreateNumber(1000));     /* 1 TB/s: kept */
    cJSON_ReplaceItemInObject(rd, "omp_region", cJSON_CreateNumber(1e9));  /* a second: not kept */
    cJSON_ReplaceItemInObject(rd, "br_pred_ns", cJSON_CreateNumber(1e-6)); /* the branch group comes from here */
    cJSON_ReplaceItemInObject(rd, "br_random_ns", cJSON_CreateNumber(7));
    cJSON *sw = cJSON_GetObjectItemCaseSensitive(rd, "sweep_lat");
    for (int k = 0; k < nsweep; k++) /* a flat sweep: the level is at least the reported size */
        cJSON_ReplaceItemInArray(sw, k, cJSON_CreateNumber(0.001));
    char *earlier = cJSON_PrintUnformatted(first);
    loom_target t, host;
    loom_error err;
    char *folded = NULL;
    cr_assert_eq(loom_calibrate_run(1, earlier, NULL, &t, &folded, &err), LOOM_OK, "%s", err.msg);
    cJSON *out = cJSON_Parse(folded);
    cr_assert_not_null(out);
    cr_expect_eq(calibrations(out), 2);
    cr_expect(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(out, "calibration"),
                                                            "llc_disturbed")),
              "the file says whether the last level's sweeps were disturbed");
    for (int k = 0; k < nsweep; k++) /* the folded sweep's slowest reading is this run's: hi over 1.5 x 0.001 ns */
        cr_expect_gt(reading(out, "sweep_hi", k), 0.0015);
    /* disturbed means the sweeps disagree (hi over 1.5x the least, true of
       every point here) at the size kept or above.  The flat folded sweep
       keeps the reported size, so it is disturbed only where the sweep
       reaches that size: not on a 260 MiB Emerald Rapids L3, but on a 32 MiB
       Zen 5 one swept up to 32 MiB (2026-12-02). */
    cr_assert_eq(loom_target_host(&host, &err), LOOM_OK);
    int reaches = 0;
    for (int k = 0; k < nsweep; k++)
        reaches |= reading(out, "sweep_ws", k) >= (double)host.caches[host.ncaches - 1].size;
    cr_expect_eq(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(out, "calibration"),
                                                              "llc_disturbed")),
                 reaches, "disturbed exactly when a sweep point is at or above the kept (reported) size (%d)", reaches);
    cr_expect_eq(reading(out, "clock_ns", 0), 0.25);
    cr_expect_eq(reading(out, "triad1", 0), 1000);
    cr_expect_lt(reading(out, "omp_region", 0), 1e9, "this run's parallel region, the faster");
    cr_expect_eq(reading(out, "br_random_ns", 0), 7, "the branch figures of the run whose predictable branch ran fastest");
    cr_expect_eq(reading(out, "br_pred_ns", 0), 1e-6);
    for (int k = 0; k < nsweep; k++)
        cr_expect_eq(reading(out, "sweep_lat", k), 0.001);
    cr_expect_eq(reading(out, "llc_eff", 0), (double)host.caches[host.ncaches - 1].size,
                 "the size re-read from the folded (flat) sweep");
    cr_expect_eq(t.ghz, 4, "the folded clock maps to the target: %g GHz", t.ghz);
    check_bounds(&t);
    /* another mode (or CPU) is not folded: a fresh calibration */
    cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(first, "calibration"), "mode",
                              cJSON_CreateString("full"));
    char *other = cJSON_PrintUnformatted(first);
    char *fresh = NULL;
    cr_assert_eq(loom_calibrate_run(1, other, NULL, &t, &fresh, &err), LOOM_OK, "%s", err.msg);
    cJSON *f2 = cJSON_Parse(fresh);
    cr_expect_eq(calibrations(f2), 1);
    cr_expect_neq(reading(f2, "clock_ns", 0), 0.25);
    /* text that is no target file at all: a fresh calibration too */
    char *f3 = NULL;
    cr_assert_eq(loom_calibrate_run(1, "{not json", NULL, &t, &f3, &err), LOOM_OK, "%s", err.msg);
    cJSON *o3 = cJSON_Parse(f3);
    cr_expect_eq(calibrations(o3), 1);
    cJSON_Delete(o3);
    cJSON_Delete(f2);
    cJSON_Delete(out);
    cJSON_Delete(first);
    free(f3);
    free(fresh);
    free(other);
    free(folded);
    free(earlier);
    free(json_text);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cachedir);
    cr_expect_eq(system(cmd), 0);
}
