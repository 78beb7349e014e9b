/* The target handle and the runner (issue 28): a campaign on a simulated
 * target validates and lowers with that target's limits, not the host's;
 * both runners return one result per candidate, in candidate order, with a
 * failing candidate among them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/schedule/query.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/runner/runner.h"
#include "../runtime/target/target.h"
#include "../search/database/database.h"
#include "../search/tune/tune.h"
#include "../traces/validate.h"
#include "fixture.h"

/* ---- the target handle ------------------------------------------------------ */

Test(target_runner, open_names_the_kind_limits_and_fingerprint)
{
    loom_error err;
    loom_target cpu, sim, fp;
    cr_assert_eq(loom_target_open("cpu", NULL, NULL, &cpu, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(cpu.kind, LOOM_TARGET_CPU);
    loom_limits host = loom_limits_host();
    cr_assert_eq(memcmp(&cpu.limits, &host, sizeof host), 0, "the CPU target's limits are not the host's");
    char want[128];
    loom_target_cpu_fingerprint(NULL, NULL, want, sizeof want);
    cr_assert_str_eq(cpu.fingerprint, want);
    cr_assert_eq(loom_target_open("sim:spr-2c", NULL, NULL, &sim, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(sim.kind, LOOM_TARGET_SIM);
    loom_limits tl = loom_target_limits(&sim);
    cr_assert_eq(memcmp(&sim.limits, &tl, sizeof tl), 0);
    loom_target_fingerprint(&sim, want, sizeof want);
    cr_assert_str_eq(sim.fingerprint, want);
    /* a record's fingerprint opens the same model and keeps the fingerprint given */
    cr_assert_eq(loom_target_open(sim.fingerprint, NULL, NULL, &fp, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(fp.kind, LOOM_TARGET_SIM);
    cr_assert_str_eq(fp.fingerprint, sim.fingerprint);
    cr_assert_eq(loom_target_open("gpu", NULL, NULL, &fp, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "unknown target 'gpu'"), "%s", err.msg);
}

/* ---- a campaign on sim:spr-2c uses spr-2c's limits -------------------------- */

/* The value of annotation key on any loop of sch, 0 when none. */
static int64_t annotation(const loom_schedule *sch, const char *key)
{
    for (int s = 0; s < sch->nstages; s++)
        for (int p = 0; p < sch->stages[s].nloops; p++)
            for (int k = 0; k < sch->stages[s].loops[p].nann; k++)
                if (!strcmp(sch->stages[s].loops[p].ann[k].key, key))
                    return sch->stages[s].loops[p].ann[k].value;
    return 0;
}

/* Remove the vector shape annotations (the lowering then takes the shape
 * from the limits it is given) and the row and key tiles (the untiled form:
 * its dot products are reduced over two of the target's vectors,
 * runtime/lower/lower_fusion_keys.c, so 32 lanes on spr-2c, 16 on AVX2). */
static void strip_vector_shape(loom_schedule *sch)
{
    for (int s = 0; s < sch->nstages; s++)
        for (int p = 0; p < sch->stages[s].nloops; p++) {
            loom_loop *L = &sch->stages[s].loops[p];
            int m = 0;
            for (int k = 0; k < L->nann; k++)
                if (strcmp(L->ann[k].key, LOOM_ANN_VECTOR_LANES) && strcmp(L->ann[k].key, LOOM_ANN_VECTOR_REGISTERS) &&
                    strcmp(L->ann[k].key, LOOM_ANN_ROW_TILE) && strcmp(L->ann[k].key, LOOM_ANN_KEY_TILE))
                    L->ann[m++] = L->ann[k];
            L->nann = m;
        }
}

static char *source_for(const loom_schedule *sch, const loom_limits *lim)
{
    loom_error err;
    lir_func *f = NULL;
    char *src = NULL;
    cr_assert_eq(loom_lower_for(sch, lim, &f, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_codegen_c(f, "k", &src, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(f);
    return src;
}

/* A fused record's schedule: on spr-2c its register tiles are shaped for 16
 * lanes, which the host's (forced AVX2) limits refuse; without the
 * annotations, the simulator runner lowers it with spr-2c's limits. */
static int check_fused(const loom_schedule *sch0, const loom_target *spr, const loom_limits *host, loom_dataset *ds)
{
    loom_violation v;
    loom_error err;
    cr_assert_eq(annotation(sch0, LOOM_ANN_VECTOR_LANES), spr->limits.vector_lanes,
                 "the space was not shaped by the target's limits");
    cr_assert_eq(loom_validate(sch0, &spr->limits, &v, &err), LOOM_OK, "%s", v.msg);
    cr_assert_neq(loom_validate(sch0, host, &v, &err), LOOM_OK, "the host's limits accept a 16-lane tile");
    cr_assert_str_eq(v.rule, "register-tile");
    loom_schedule *sch = malloc(sizeof *sch);
    loom_schedule_copy(sch, sch0);
    strip_vector_shape(sch);
    /* whether the lowering depends on the vector shape: it does when the
     * register tile differs (a two-vector tile on 16 lanes and 32
     * registers), not for one vector of keys per row, which keeps one loop
     * over the tile's width on every target (lower_fusion_regtile.c) */
    char *a = source_for(sch, &spr->limits), *b = source_for(sch, host);
    int differs = strcmp(a, b) != 0;
    char *dflt = NULL;
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_codegen_c(f, "k", &dflt, &err), LOOM_OK);
    loom_lir_func_free(f);
    cr_assert_str_eq(dflt, b, "loom_lower without a target is not the host's lowering");
    /* the runner's simulation is that of spr-2c's lowering */
    loom_sim_result want;
    cr_assert_eq(loom_lower_for(sch, &spr->limits, &f, &err), LOOM_OK);
    cr_assert_eq(loom_sim_run(f, ds, spr, &want, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(f);
    loom_runner *run = NULL;
    cr_assert_eq(loom_runner_new(spr, ds, NULL, NULL, &run, &err), LOOM_OK, "%s", err.msg);
    cr_assert_str_eq(run->kind, "sim");
    loom_runner_result res;
    loom_status st;
    double lat = loom_runner_run_one(run, sch, &res, &st);
    cr_assert_eq(st, LOOM_OK, "%s", res.message);
    cr_assert_eq(lat, want.latency_s);
    cr_assert_eq(res.sim.instructions, want.instructions);
    loom_runner_free(run);
    free(a), free(b), free(dflt), free(sch);
    return differs;
}

/* The commands take the target too: `loom validate --target` checks a
 * fused spr-2c trace with spr-2c's limits (valid) or the CPU's (refused);
 * `loom replay --target sim:spr-2c` validates the campaign's best with
 * spr-2c's (LOOM_HOST_ISA=avx2 is inherited from the test). */
static void check_cli(const char *dir, const char *trace_json)
{
    const char *bin = getenv("LOOM_BIN") ? getenv("LOOM_BIN") : "build/loom";
    char path[600], cmd[2400];
    snprintf(path, sizeof path, "%s/fused.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(trace_json, f);
    fclose(f);
    const char *w = "workloads/attention_causal.loom --param N=64 --param D=64";
    snprintf(cmd, sizeof cmd, "%s validate %s %s --target sim:spr-2c | grep -qx valid", bin, path, w);
    cr_assert_eq(system(cmd), 0, "loom validate --target sim:spr-2c refused spr-2c's trace");
    snprintf(cmd, sizeof cmd, "%s validate %s %s --target cpu | grep -q 'invalid: register-tile'", bin, path, w);
    cr_assert_eq(system(cmd), 0, "loom validate --target cpu (AVX2) accepted a 16-lane tile");
    snprintf(cmd, sizeof cmd, "%s replay --db %s %s --target sim:spr-2c --emit-c %s/best.c >/dev/null", bin, dir, w,
             dir);
    cr_assert_eq(system(cmd), 0, "loom replay --target sim:spr-2c failed");
}

Test(target_runner, tune_on_spr2c_validates_and_lowers_with_its_limits, .timeout = 300)
{
    /* this host has spr-2c's vector shape (AVX-512, 2 cores): make it an AVX2 machine, so the two
     * targets' limits differ (8 lanes and 16 registers here, 16 and 32 on spr-2c) */
    cr_assert_eq(setenv("LOOM_HOST_ISA", "avx2", 1), 0);
    loom_error err;
    loom_target spr;
    cr_assert_eq(loom_target_open("sim:spr-2c", NULL, NULL, &spr, &err), LOOM_OK, "%s", err.msg);
    loom_limits host = loom_target_cpu_limits();
    cr_assert_neq(host.vector_lanes, spr.limits.vector_lanes, "precondition: the limits differ");
    const char *params[] = {"N=64", "D=64", NULL};
    fx_loaded L = fx_load("workloads/attention_causal.loom", NULL, NULL, params, 1);
    char tmpl[] = "/tmp/loom-test-target-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.target = "sim:spr-2c";
    o.trials = 6;
    o.batch = 3;
    o.remeasure_rounds = 0;
    o.search.threads = 1;
    o.search.seed = 3;
    o.search.limits = host; /* ignored: a campaign's limits are its target's */
    o.workload_name = "attention_causal";
    loom_tune_result r;
    cr_assert_eq(loom_tune(L.prog, L.ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(memcmp(&r.limits, &spr.limits, sizeof r.limits), 0, "the campaign's limits are not spr-2c's");
    cr_assert_str_eq(r.target_fp, spr.fingerprint);
    /* every record says its target; the fused ones are shaped and valid for spr-2c only */
    loom_db *db = NULL;
    cr_assert_eq(loom_db_open(dir, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    int fused = 0, shaped = 0;
    for (int i = 0; i < loom_db_count(db); i++) {
        const loom_record *rec = loom_db_record(db, i);
        cr_assert_str_eq(rec->target_fp, spr.fingerprint);
        loom_trace *t = NULL;
        loom_schedule *sch = malloc(sizeof *sch);
        cr_assert_eq(loom_trace_from_json(rec->trace_json, NULL, &t, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK);
        cr_assert_eq(loom_trace_replay(t, sch, NULL, &err), LOOM_OK, "%s", err.msg);
        if (rec->status == LOOM_OK && fx_rolled_stages(sch) > 0 && annotation(sch, LOOM_ANN_VECTOR_LANES)) {
            shaped += check_fused(sch, &spr, &host, L.ds);
            if (!fused)
                check_cli(dir, rec->trace_json);
            fused++;
        }
        loom_trace_free(t);
        free(sch);
    }
    cr_assert_gt(fused, 0, "no fused schedule among %d records", loom_db_count(db));
    cr_assert_gt(shaped, 0, "no fused record of %d lowers differently with spr-2c's and the host's limits: "
                 "the comparison above proves nothing", fused);
    char log[1200], line[1024];
    snprintf(log, sizeof log, "%s/campaign.log", dir);
    FILE *f = fopen(log, "r");
    cr_assert_not_null(f);
    int said = 0;
    while (fgets(line, sizeof line, f))
        said |= strstr(line, "(sim runner): 16 vector lanes") != NULL;
    fclose(f);
    cr_assert(said, "the log does not say the target's limits");
    loom_db_close(db);
    fx_unload(&L);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- the runner interface ---------------------------------------------------- */

typedef struct seen {
    int order[8], n;
} seen;

static void on_result(void *ctx, int index, const loom_runner_result *res)
{
    (void)res;
    seen *s = ctx;
    if (s->n < 8)
        s->order[s->n++] = index;
}

/* Three candidates: the naive nest, the same with its reduction loop made
 * PARALLEL (it does not lower: parallel-reduction), the serial nest. */
static void three_candidates(const loom_program *prog, loom_schedule *sch)
{
    loom_error err;
    cr_assert_eq(loom_schedule_naive(&sch[0], prog, 0, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_naive(&sch[1], prog, 1, &err), LOOM_OK);
    cr_assert_eq(loom_schedule_naive(&sch[2], prog, 1, &err), LOOM_OK);
    loom_stage *S = &sch[1].stages[0];
    int made = 0;
    for (int p = 0; p < S->nloops && !made; p++)
        if (loom_iter_reduces(&sch[1], 0, S->loops[p].iter)) {
            S->loops[p].kind = LOOM_LOOP_PARALLEL;
            made = 1;
        }
    cr_assert(made, "SpMM's naive nest has no reduction loop");
}

static void check_batch(loom_runner *run, const loom_schedule *sch, int jobs)
{
    loom_measure_candidate c[3] = {{&sch[0], NULL}, {&sch[1], NULL}, {&sch[2], NULL}};
    loom_runner_result res[3];
    seen s = {{0}, 0};
    loom_runner_opts o = {.jobs = jobs, .on_result = on_result, .ctx = &s};
    loom_error err;
    cr_assert_eq(loom_runner_run(run, c, 3, &o, res, NULL, &err), LOOM_OK, "%s: %s", run->kind, err.msg);
    cr_assert_eq(s.n, 3, "%s: %d results reported", run->kind, s.n);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(s.order[k], k, "%s: results out of candidate order", run->kind);
    int local = !strcmp(run->kind, "local");
    for (int k = 0; k < 3; k += 2) {
        cr_assert_eq(res[k].status, LOOM_OK, "%s: candidate %d: %s", run->kind, k, res[k].message);
        cr_assert(isfinite(res[k].latency_s) && res[k].latency_s > 0);
        cr_assert_gt(res[k].flops, 0);
        cr_assert_eq(res[k].checked, local, "%s: checked %d", run->kind, res[k].checked);
        cr_assert_eq(res[k].correct, local);
        if (!local)
            cr_assert_eq(res[k].sim.latency_s, res[k].latency_s);
    }
    cr_assert_eq(res[1].status, LOOM_ERR_SEMANTIC, "%s: %s", run->kind, loom_status_name(res[1].status));
    cr_assert(isinf(res[1].latency_s));
    cr_assert(strstr(res[1].message, "parallel-reduction"), "%s: %s", run->kind, res[1].message);
}

Test(target_runner, both_runners_keep_candidate_order_past_a_failure, .timeout = 120)
{
    const char *data[] = {"A=data/cora500_adj.mtx", NULL};
    const char *params[] = {"F=16", NULL};
    fx_loaded L = fx_load("workloads/spmm.loom", NULL, data, params, 1);
    loom_schedule *sch = malloc(3 * sizeof *sch);
    three_candidates(L.prog, sch);
    loom_error err;
    loom_reference *ref = NULL;
    cr_assert_eq(loom_reference_run(L.ds, &ref, &err), LOOM_OK, "%s", err.msg);
    loom_target cpu, spr;
    cr_assert_eq(loom_target_open("cpu", NULL, NULL, &cpu, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_target_open("sim:spr-2c", NULL, NULL, &spr, &err), LOOM_OK, "%s", err.msg);
    loom_run_opts ro = loom_run_defaults();
    ro.measure.min_seconds = 0.001;
    ro.measure.min_repeats = 2;
    loom_runner *local = NULL, *sim = NULL;
    cr_assert_eq(loom_runner_new(&cpu, L.ds, ref, &ro, &local, &err), LOOM_OK, "%s", err.msg);
    cr_assert_str_eq(local->kind, "local");
    cr_assert_eq(loom_runner_new(&spr, L.ds, ref, NULL, &sim, &err), LOOM_OK, "%s", err.msg);
    cr_assert_str_eq(sim->kind, "sim");
    check_batch(local, sch, 1);
    check_batch(sim, sch, 1);
    check_batch(sim, sch, 2); /* threads: still reported in candidate order */
    /* a stopped batch: the candidates after the stop are not run */
    int stop = 1;
    loom_measure_candidate c[2] = {{&sch[0], NULL}, {&sch[2], NULL}};
    loom_runner_result res[2];
    loom_runner_opts o = {.stop = &stop};
    cr_assert_eq(loom_runner_run(sim, c, 2, &o, res, NULL, &err), LOOM_OK);
    cr_assert_eq(res[0].status, LOOM_ERR_RUN);
    cr_assert(strstr(res[0].message, "stopped"), "%s", res[0].message);
    /* a CPU runner needs the reference */
    loom_runner *bad = NULL;
    cr_assert_eq(loom_runner_new(&cpu, L.ds, NULL, NULL, &bad, &err), LOOM_ERR_INVALID);
    cr_assert_null(bad);
    loom_runner_free(local);
    loom_runner_free(sim);
    loom_reference_free(ref);
    free(sch);
    fx_unload(&L);
}
