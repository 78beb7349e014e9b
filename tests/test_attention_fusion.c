/* Attention fusion (issue 7): the new attention workloads, RollingUpdate's
 * correction rule and refusals, its trace round trip and validator rule,
 * and fused kernels checked against the reference interpreter on every
 * attention workload (dense, causal, band, GQA, decode, sparse attention on
 * Cora), including rows whose max grows at every step, rows with a single
 * stored entry and an empty row. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/pipeline.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "fixture.h"

typedef fx_loaded loaded;

static loaded load(const char *path, const char *text, const char *const *data, const char *const *params)
{
    return fx_load(path, text, data, params, 11);
}

static void unload(loaded *L) { fx_unload(L); }

/* The fused schedule: P inlined, S computed at m's reduction loop (or left
 * at the root), l and O rolled into that loop; the naive schedule's
 * parallel row loop kept.  Returns LOOM_OK or the first refusal. */
static loom_status fuse(loom_schedule *sch, int s_at_loop, loom_error *err)
{
    int m, S, P, l, O, loops[LOOM_MAX_LOOPS], n;
    loom_status st;
    if ((st = loom_get_block(sch, "m", &m, err)) || (st = loom_get_block(sch, "S", &S, err)) ||
        (st = loom_get_block(sch, "P", &P, err)) || (st = loom_get_block(sch, "l", &l, err)) ||
        (st = loom_get_block(sch, "O", &O, err)) || (st = loom_get_loops(sch, m, loops, &n, err)))
        return st;
    if ((st = loom_parallel(sch, loops[0], err)))
        return st;
    if (s_at_loop) {
        /* S's reductions innermost (its free indices are fixed at the loop) */
        int sl[LOOM_MAX_LOOPS], ns, order[LOOM_MAX_LOOPS], k = 0, sstage = sch->rvs[S].stage;
        if ((st = loom_get_loops(sch, S, sl, &ns, err)))
            return st;
        for (int red = 0; red < 2; red++)
            for (int q = 0; q < ns; q++)
                if (loom_iter_reduces(sch, sstage, sch->rvs[sl[q]].iter) == red)
                    order[k++] = sl[q];
        if ((st = loom_reorder(sch, order, ns, err)) || (st = loom_compute_at(sch, S, loops[n - 1], err)))
            return st;
    }
    if ((st = loom_compute_inline(sch, P, err)) || (st = loom_rolling_update(sch, l, loops[n - 1], -1, err)) ||
        (st = loom_rolling_update(sch, O, loops[n - 1], -1, err)))
        return st;
    return LOOM_OK;
}

static void run_fused(const char *path, const char *text, const char *const *data, const char *const *params,
                      int s_at_loop, const char *what)
{
    loaded L = load(path, text, data, params);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK, "%s: %s", what, err.msg);
    cr_assert_eq(fuse(sch, s_at_loop, &err), LOOM_OK, "%s: fuse: %s", what, err.msg);
    loom_violation v;
    cr_assert_eq(loom_validate(sch, fx_cpu_limits(), &v, NULL), LOOM_OK, "%s: %s", what, v.msg);
    /* one fused loop nest: the LIR holds the running max */
    char *src = NULL;
    cr_assert_eq(loom_pipeline_schedule_source(sch, &src, &err), LOOM_OK, "%s: %s", what, err.msg);
    cr_assert(strstr(src, "run_max"), "%s: no rolling update in the kernel", what);
    cr_assert(strstr(src, "corr"), "%s: no correction in the kernel", what);
    free(src);
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0.005;
    o.measure.min_repeats = 2;
    o.measure.time_limit = 60;
    loom_run_result res;
    cr_assert_eq(loom_pipeline_run_schedule(sch, L.ds, NULL, &o, &res, &err), LOOM_OK, "%s: %s", what, err.msg);
    cr_assert_eq(res.status, LOOM_OK, "%s: %s: %s", what, loom_status_name(res.status), res.message);
    cr_assert(res.correct, "%s: fused kernel differs from the reference (max rel err %g, tol %g)", what,
              res.max_rel_err, res.tol);
    cr_log_info("%s: fused %.3f ms, %.2f GFLOP/s", what, res.latency_s * 1e3, res.gflops);
    free(sch);
    unload(&L);
}

/* ---- the new workloads, unfused ------------------------------------------ */

static void run_default(const char *path, const char *const *params)
{
    loaded L = load(path, NULL, NULL, params);
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0.005;
    o.measure.min_repeats = 2;
    loom_run_result res;
    loom_error err;
    cr_assert_eq(loom_pipeline_run(L.prog, L.ds, NULL, &o, &res, &err), LOOM_OK, "%s: %s", path, err.msg);
    cr_assert_eq(res.status, LOOM_OK, "%s: %s", path, res.message);
    cr_assert(res.correct, "%s: not correct (%g)", path, res.max_rel_err);
    unload(&L);
}

Test(attention_workloads, gqa_runs_correctly)
{
    const char *p[] = {"N=64", NULL};
    run_default("workloads/attention_gqa.loom", p);
}

Test(attention_workloads, decode_runs_correctly)
{
    const char *p[] = {"M=1024", NULL};
    run_default("workloads/attention_decode.loom", p);
}

Test(attention_workloads, gqa_shares_key_value_heads)
{
    /* K and V have one head per group (G), Q and O one per query head (G x R) */
    loaded L = load("workloads/attention_gqa.loom", NULL, NULL, NULL);
    int K = loom_program_find_tensor(L.prog, "K"), Q = loom_program_find_tensor(L.prog, "Q");
    cr_assert_eq(L.prog->tensors[K].order, 3);
    cr_assert_eq(L.prog->tensors[Q].order, 4);
    cr_assert_eq(loom_program_dim(L.prog, K, 0), loom_program_dim(L.prog, Q, 0));
    cr_assert_gt(loom_program_dim(L.prog, Q, 1), 1, "several query heads per group");
    unload(&L);
}

/* ---- fused kernels equal the reference ----------------------------------- */

Test(rolling_update, dense_attention) { run_fused("workloads/attention.loom", NULL, NULL, NULL, 1, "attention"); }
Test(rolling_update, dense_attention_s_at_root)
{
    run_fused("workloads/attention.loom", NULL, NULL, NULL, 0, "attention, S at root");
}
Test(rolling_update, causal) { run_fused("workloads/attention_causal.loom", NULL, NULL, NULL, 1, "causal"); }
Test(rolling_update, causal_s_at_root)
{
    run_fused("workloads/attention_causal.loom", NULL, NULL, NULL, 0, "causal, S at root");
}
Test(rolling_update, band) { run_fused("workloads/attention_band.loom", NULL, NULL, NULL, 1, "band"); }
Test(rolling_update, gqa)
{
    const char *p[] = {"N=64", NULL};
    run_fused("workloads/attention_gqa.loom", NULL, NULL, p, 1, "gqa");
}
Test(rolling_update, decode)
{
    const char *p[] = {"M=2048", NULL};
    run_fused("workloads/attention_decode.loom", NULL, NULL, p, 1, "decode");
}
Test(rolling_update, sparse_attention_cora500)
{
    /* 92 of cora500's rows hold a single stored entry */
    const char *d[] = {"A=data/cora500_adj.mtx", NULL};
    run_fused("workloads/sparse_attention.loom", NULL, d, NULL, 1, "sparse_attention cora500");
}
Test(rolling_update, sparse_attention_cora)
{
    const char *d[] = {"A=data/cora_adj.mtx", NULL};
    run_fused("workloads/sparse_attention.loom", NULL, d, NULL, 1, "sparse_attention cora");
}
Test(rolling_update, sparse_attention_cora_s_at_root)
{
    const char *d[] = {"A=data/cora_adj.mtx", NULL};
    run_fused("workloads/sparse_attention.loom", NULL, d, NULL, 0, "sparse_attention cora, S at root");
}
Test(rolling_update, sparse_mask_empty_and_single_rows)
{
    const char *d[] = {"A=tests/data/attn_mask.mtx", NULL};
    const char *p[] = {"D=16", NULL};
    run_fused("workloads/sparse_attention.loom", NULL, d, p, 1, "8x8 mask with an empty row");
}

/* Scores given as data: row 0 grows at every step, so the running max and
 * the correction change at every j; row 4 jumps by 3 per step. */
static const char *RAMP = "tensor X(N, M) dense\n"
                          "tensor V(M, E) dense\n"
                          "tensor O(N, E) dense output\n"
                          "S(i, j) = X(i, j) * 1.0\n"
                          "m(i) max= S(i, j)\n"
                          "P(i, j) = exp(S(i, j) - m(i))\n"
                          "l(i) += P(i, j)\n"
                          "O(i, e) += P(i, j) * V(j, e) / l(i)\n";

Test(rolling_update, max_changes_every_step)
{
    const char *d[] = {"X=tests/data/attn_ramp.mtx", NULL};
    const char *p[] = {"E=8", NULL};
    run_fused(NULL, RAMP, d, p, 1, "ramp scores, S at the loop");
    run_fused(NULL, RAMP, d, p, 0, "ramp scores, S at root");
}

/* ---- the correction rule --------------------------------------------------- */

static loom_program *parse(const char *text)
{
    loom_program *p = NULL;
    loom_error err;
    cr_assert_eq(loom_program_parse_string(text, "<t>", &p, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_program_finish_binding(p, &err), LOOM_OK, "%s", err.msg);
    return p;
}

/* Roll block `r` into m's reduction loop (after inlining P when present). */
static loom_status roll(loom_schedule *sch, const char *r, loom_error *err)
{
    int m, b, loops[LOOM_MAX_LOOPS], n;
    loom_get_block(sch, "m", &m, NULL);
    loom_get_loops(sch, m, loops, &n, NULL);
    if (loom_get_block(sch, r, &b, err))
        return LOOM_ERR_INVALID;
    return loom_rolling_update(sch, b, loops[n - 1], -1, err);
}

#define HEAD "param N = 8\nparam M = 8\ntensor X(N, M) dense\ntensor V(M, N) dense\n"

Test(rolling_rule, softmax_terms)
{
    loom_program *p = parse(HEAD "tensor O(N, N) dense output\n"
                                 "m(i) max= X(i, j)\n"
                                 "P(i, j) = exp(X(i, j) - m(i))\n"
                                 "l(i) += P(i, j)\n"
                                 "O(i, e) += P(i, j) * V(j, e) / l(i)\n");
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, p, NULL, &err), LOOM_OK);
    int P;
    loom_get_block(sch, "P", &P, NULL);
    cr_assert_eq(loom_compute_inline(sch, P, &err), LOOM_OK);
    cr_assert_eq(roll(sch, "l", &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(roll(sch, "O", &err), LOOM_OK, "%s", err.msg);
    loom_rolling_rule rule;
    cr_assert_eq(loom_rolling_correction(sch, 2, 0, &rule, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(rule.coef, -1.0, "l: c = exp(m_old - m_new)");
    cr_assert_eq(rule.ndiv, 0);
    cr_assert_eq(loom_rolling_correction(sch, 3, 0, &rule, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(rule.coef, -1.0, "O: the same correction");
    cr_assert_eq(rule.ndiv, 1, "O's division by l is deferred");
    cr_assert_eq(rule.div[0], 2);
    free(sch);
    loom_program_free(p);
}

Test(rolling_rule, products_and_quotients)
{
    /* exp(2x - 2m) * exp(x - m) / exp(-m): a = -2 - 1 + 1 = -2; a term
     * without m keeps c = 1 */
    loom_program *p = parse(HEAD "tensor O(N) dense output\ntensor Z(N) dense output\n"
                                 "m(i) max= X(i, j)\n"
                                 "O(i) += exp(2 * X(i, j) - m(i) * 2) * exp(X(i, j) - m(i)) / exp(0 - m(i)) * V(j, i)\n"
                                 "Z(i) max= X(i, j) * 3\n");
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, p, NULL, &err), LOOM_OK);
    cr_assert_eq(roll(sch, "O", &err), LOOM_OK, "%s", err.msg);
    loom_rolling_rule rule;
    cr_assert_eq(loom_rolling_correction(sch, 1, 0, &rule, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(rule.coef, -2.0);
    /* Z does not read m: not a rolling update of m */
    cr_assert_neq(roll(sch, "Z", &err), LOOM_OK);
    cr_assert(strstr(err.msg, "rolling-update-source"), "%s", err.msg);
    free(sch);
    loom_program_free(p);
}

static void expect_refused(const char *stmt, const char *rule, const char *reason)
{
    char text[1024];
    snprintf(text, sizeof text, HEAD "tensor R(N) dense output\nm(i) max= X(i, j)\n%s\n", stmt);
    loom_program *p = parse(text);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, p, NULL, &err), LOOM_OK);
    loom_schedule *before = malloc(sizeof *before);
    memcpy(before, sch, sizeof *before);
    cr_assert_neq(roll(sch, "R", &err), LOOM_OK, "%s was accepted", stmt);
    cr_assert(strstr(err.msg, rule), "%s: expected %s, got: %s", stmt, rule, err.msg);
    cr_assert(strstr(err.msg, reason), "%s: the reason should mention '%s': %s", stmt, reason, err.msg);
    cr_assert(loom_schedule_equal(before, sch), "a refused RollingUpdate changed the schedule");
    free(before);
    free(sch);
    loom_program_free(p);
}

Test(rolling_rule, refusals_name_their_reason)
{
    /* the issue's example: a max over exp(x) * m has no positive correction */
    expect_refused("R(i) max= exp(X(i, j)) * m(i)", "rolling-update-no-correction", "factor");
    /* since issue 14 a sum wraps X alone (TACO's reduction scope): R =
       R_sum_j - m reduces nothing and is no rolling source */
    expect_refused("R(i) += X(i, j) - m(i)", "rolling-update-source", "read m");
    expect_refused("R(i) += exp(X(i, j) * m(i))", "rolling-update-no-correction", "not linear");
    expect_refused("R(i) += exp(X(i, j) + m(i) * m(i))", "rolling-update-no-correction", "not linear");
    expect_refused("R(i) += exp(X(i, j) - m(i)) + 1", "rolling-update-source", "read m"); /* the +1 once */
    expect_refused("R(i) += sqrt(exp(X(i, j) - m(i)))", "rolling-update-no-correction", "other than exp");
}

Test(rolling_rule, order_of_rolls_and_inlining)
{
    loom_program *p = parse(HEAD "tensor O(N, N) dense output\n"
                                 "m(i) max= X(i, j)\n"
                                 "P(i, j) = exp(X(i, j) - m(i))\n"
                                 "l(i) += P(i, j)\n"
                                 "O(i, e) += P(i, j) * V(j, e) / l(i)\n");
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, p, NULL, &err), LOOM_OK);
    /* P still stored at the root: computed after m, with the final max */
    cr_assert_neq(roll(sch, "l", &err), LOOM_OK);
    cr_assert(strstr(err.msg, "rolling-update-reads-later") && strstr(err.msg, "P"), "%s", err.msg);
    int P;
    loom_get_block(sch, "P", &P, NULL);
    cr_assert_eq(loom_compute_inline(sch, P, &err), LOOM_OK);
    /* O divides by l, which is not rolled yet */
    cr_assert_neq(roll(sch, "O", &err), LOOM_OK);
    cr_assert(strstr(err.msg, "rolling-update-reads-later") && strstr(err.msg, " l,"), "%s", err.msg);
    cr_assert_eq(roll(sch, "l", &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(roll(sch, "O", &err), LOOM_OK, "%s", err.msg);
    cr_assert_neq(roll(sch, "O", &err), LOOM_OK, "rolled twice");
    free(sch);
    loom_program_free(p);
}

/* ---- traces and the validator ------------------------------------------------ */

Test(rolling_update, trace_round_trip_and_print)
{
    loaded L = load("workloads/attention_causal.loom", NULL, NULL, NULL);
    loom_schedule *sch = malloc(sizeof *sch), *again = malloc(sizeof *again);
    loom_error err;
    loom_trace *t = loom_trace_new();
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK);
    sch->recorder = loom_trace_recorder;
    sch->recorder_ctx = t;
    cr_assert_eq(fuse(sch, 1, &err), LOOM_OK, "%s", err.msg);
    char *json = NULL;
    cr_assert_eq(loom_trace_to_json(t, L.prog, &json), LOOM_OK);
    cr_assert(strstr(json, "[\"RollingUpdate\", [\"b"), "%s", json);
    loom_trace *back = NULL;
    cr_assert_eq(loom_trace_from_json(json, "<test>", &back, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_init(again, L.prog, NULL, &err), LOOM_OK);
    cr_assert_eq(loom_trace_replay(back, again, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_schedule_equal(sch, again), "replayed schedule differs");
    cr_assert_eq(again->stages[3].rolling, 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    loom_trace_print_c(t, L.prog, mem);
    fclose(mem);
    cr_assert(strstr(buf, "loom_rolling_update(sch, ") && strstr(buf, ", -1);"), "%s", buf);
    free(buf);
    free(json);
    loom_trace_free(t);
    loom_trace_free(back);
    free(sch);
    free(again);
    unload(&L);
}

Test(rolling_update, validator_rolling_update_rule)
{
    loaded L = load("workloads/attention.loom", NULL, NULL, NULL);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK);
    cr_assert_eq(fuse(sch, 0, &err), LOOM_OK, "%s", err.msg);
    loom_violation v;
    cr_assert_eq(loom_validate(sch, fx_cpu_limits(), &v, NULL), LOOM_OK, "%s", v.msg);
    /* reordering m's loops afterwards: the rolled loop is no longer innermost */
    int m, loops[LOOM_MAX_LOOPS], n;
    loom_get_block(sch, "m", &m, NULL);
    loom_get_loops(sch, m, loops, &n, NULL);
    int swapped[2] = {loops[1], loops[0]};
    sch->stages[1].loops[0].kind = LOOM_LOOP_SERIAL;
    cr_assert_eq(loom_reorder(sch, swapped, 2, &err), LOOM_OK, "%s", err.msg);
    cr_assert_neq(loom_validate(sch, fx_cpu_limits(), &v, NULL), LOOM_OK);
    cr_assert_str_eq(v.rule, "rolling-update", "%s", v.msg);
    free(sch);
    unload(&L);
}

/* ---- the attention-fusion module ----------------------------------------------- */

#include "../modules/module.h"

#define SPACE "attention-fusion,fuse-producers,sparse-loop-order,multi-level-tiling,parallel-vectorize-unroll"

static int first_categorical(const loom_trace *t)
{
    for (int i = 0; i < t->ninsts; i++)
        if (!strcmp(loom_inst_kind_at(t->insts[i].kind)->name, "SampleCategorical"))
            return i;
    return -1;
}

static void module_case(const char *path, const char *const *data, const char *const *params)
{
    loaded L = load(path, NULL, data, params);
    loom_registry *r = loom_registry_new();
    loom_space *space = NULL;
    loom_error err;
    cr_assert_eq(loom_space_new(r, SPACE, NULL, &space, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *sch = malloc(sizeof *sch), *rep = malloc(sizeof *rep);
    loom_trace *t = loom_trace_new();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    int fused = 0, unfused = 0, ran_fused = 0, ran_unfused = 0, flipped = 0;
    for (int k = 0; k < 24; k++) {
        loom_trace_clear(t);
        cr_assert_eq(loom_schedule_init(sch, L.prog, rng, &err), LOOM_OK);
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s: %s", path, err.msg);
        int c = first_categorical(t);
        cr_assert_geq(c, 0, "%s: attention-fusion sampled nothing", path);
        int f = fx_rolled_stages(sch) > 0;
        cr_assert_eq(f, t->insts[c].decision[0] == 1, "the decision says whether the chain is fused");
        fused += f;
        unfused += !f;
        loom_violation v;
        if (loom_validate(sch, fx_cpu_limits(), &v, NULL) != LOOM_OK)
            continue;
        if (f ? ran_fused < 2 : ran_unfused < 1) {
            fx_run_checked(sch, L.ds, f ? "module, fused" : "module, unfused");
            *(f ? &ran_fused : &ran_unfused) += 1;
        }
        /* the mutator's move: flip the decision and replay */
        if (flipped < 2) {
            loom_decision *d = calloc((size_t)t->ninsts, sizeof *d);
            for (int i = 0; i < t->ninsts; i++) {
                d[i].n = t->insts[i].ndecision;
                memcpy(d[i].v, t->insts[i].decision, sizeof d[i].v);
            }
            d[c].v[0] = !t->insts[c].decision[0];
            cr_assert_eq(loom_schedule_init(rep, L.prog, NULL, &err), LOOM_OK);
            cr_assert_eq(loom_trace_replay(t, rep, d, &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(fx_rolled_stages(rep) > 0, !f, "the flipped decision switches the fusion");
            if (loom_validate(rep, fx_cpu_limits(), &v, NULL) == LOOM_OK) {
                fx_run_checked(rep, L.ds, "module, flipped");
                flipped++;
            } else
                cr_log_info("flipped trace invalid: %s", v.msg);
            free(d);
        }
    }
    cr_assert_gt(fused, 0, "%s: never fused", path);
    cr_assert_gt(unfused, 0, "%s: never unfused", path);
    cr_assert_gt(ran_fused, 0, "%s: no valid fused schedule", path);
    cr_assert_gt(flipped, 0, "%s: no flipped trace validated", path);
    gsl_rng_free(rng);
    loom_trace_free(t);
    free(sch);
    free(rep);
    loom_space_free(space);
    loom_registry_free(r);
    unload(&L);
}

Test(attention_fusion_module, causal, .timeout = 600)
{
    const char *p[] = {"N=128", NULL};
    module_case("workloads/attention_causal.loom", NULL, p);
}

Test(attention_fusion_module, sparse_attention_cora500, .timeout = 600)
{
    const char *d[] = {"A=data/cora500_adj.mtx", NULL};
    module_case("workloads/sparse_attention.loom", d, NULL);
}

Test(attention_fusion_module, gqa, .timeout = 600)
{
    const char *p[] = {"N=32", NULL};
    module_case("workloads/attention_gqa.loom", NULL, p);
}

/* ---- split-K update ------------------------------------------------------------- */

static void run_split_k(const char *path, const char *text, const char *const *data, const char *const *params,
                        int64_t factor, int par_chunks, const char *what)
{
    loaded L = load(path, text, data, params);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK);
    cr_assert_eq(fuse(sch, 1, &err), LOOM_OK, "%s: %s", what, err.msg);
    int m, loops[LOOM_MAX_LOOPS], n;
    loom_get_block(sch, "m", &m, NULL);
    loom_get_loops(sch, m, loops, &n, NULL);
    cr_assert_eq(loom_split_k_update(sch, m, loops[n - 1], -1, factor, &err), LOOM_OK, "%s: %s", what, err.msg);
    loom_violation v;
    if (par_chunks) {
        /* parallel chunks: legal once split, and nested under a parallel row loop is not */
        cr_assert_eq(loom_parallel(sch, loops[n - 1], &err), LOOM_OK);
        cr_assert_neq(loom_validate(sch, fx_cpu_limits(), &v, NULL), LOOM_OK);
        cr_assert_str_eq(v.rule, "nested-parallel", "%s", v.msg);
        sch->stages[sch->rvs[m].stage].loops[0].kind = LOOM_LOOP_SERIAL;
    }
    cr_assert_eq(loom_validate(sch, fx_cpu_limits(), &v, NULL), LOOM_OK, "%s: %s", what, v.msg);
    char *src = NULL;
    cr_assert_eq(loom_pipeline_schedule_source(sch, &src, &err), LOOM_OK, "%s: %s", what, err.msg);
    cr_assert(strstr(src, "chunk"), "%s: no chunk loop", what);
    free(src);
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0.005;
    o.measure.min_repeats = 2;
    loom_run_result res;
    cr_assert_eq(loom_pipeline_run_schedule(sch, L.ds, NULL, &o, &res, &err), LOOM_OK, "%s: %s", what, err.msg);
    cr_assert_eq(res.status, LOOM_OK, "%s: %s", what, res.message);
    cr_assert(res.correct, "%s: split-K kernel differs from the reference (%g, tol %g)", what, res.max_rel_err,
              res.tol);
    cr_log_info("%s: split-K %lld: %.3f ms", what, (long long)factor, res.latency_s * 1e3);
    /* the simulator runs it too: the combine loop's test that a chunk saw a
     * key compares floats (pm > -inf), which it once read as integers */
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s: %s", what, err.msg);
    loom_target t;
    cr_assert_eq(loom_target_load("spr-2c", &t, &err), LOOM_OK, "%s", err.msg);
    loom_sim_result sr;
    cr_assert_eq(loom_sim_run(f, L.ds, &t, &sr, &err), LOOM_OK, "%s: simulator: %s", what, err.msg);
    cr_assert_gt(sr.latency_s, 0, "%s: simulated time", what);
    loom_lir_func_free(f);
    free(sch);
    unload(&L);
}

Test(split_k_update, decode_parallel_chunks)
{
    const char *p[] = {"H=1", "M=4096", NULL};
    run_split_k("workloads/attention_decode.loom", NULL, NULL, p, 8, 1, "decode H=1");
}
Test(split_k_update, decode_rows_parallel)
{
    const char *p[] = {"M=1000", NULL};
    run_split_k("workloads/attention_decode.loom", NULL, NULL, p, 3, 0, "decode, 3 chunks of 1000");
}
Test(split_k_update, causal_more_chunks_than_keys)
{
    /* the first rows have fewer keys than chunks: empty chunks are skipped */
    run_split_k("workloads/attention_causal.loom", NULL, NULL, NULL, 16, 0, "causal");
}
Test(split_k_update, band) { run_split_k("workloads/attention_band.loom", NULL, NULL, NULL, 4, 1, "band"); }
Test(split_k_update, sparse_cora500)
{
    const char *d[] = {"A=data/cora500_adj.mtx", NULL};
    run_split_k("workloads/sparse_attention.loom", NULL, d, NULL, 4, 0, "sparse cora500");
}
Test(split_k_update, sparse_mask_empty_and_single_rows)
{
    const char *d[] = {"A=tests/data/attn_mask.mtx", NULL};
    const char *p[] = {"D=16", NULL};
    run_split_k("workloads/sparse_attention.loom", NULL, d, p, 2, 1, "8x8 mask");
}
Test(split_k_update, ramp_scores)
{
    const char *d[] = {"X=tests/data/attn_ramp.mtx", NULL};
    const char *p[] = {"E=8", NULL};
    run_split_k(NULL, RAMP, d, p, 3, 0, "ramp scores, 3 chunks");
    run_split_k(NULL, RAMP, d, p, 7, 1, "ramp scores, 7 parallel chunks");
}

Test(split_k_update, refusals)
{
    loaded L = load("workloads/attention.loom", NULL, NULL, NULL);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK);
    int m, O, loops[LOOM_MAX_LOOPS], n;
    loom_get_block(sch, "m", &m, NULL);
    loom_get_block(sch, "O", &O, NULL);
    loom_get_loops(sch, m, loops, &n, NULL);
    cr_assert_neq(loom_split_k_update(sch, m, loops[n - 1], -1, 0, &err), LOOM_OK);
    cr_assert(strstr(err.msg, "split-k-factor"), "%s", err.msg);
    cr_assert_neq(loom_split_k_update(sch, m, loops[0], -1, 4, &err), LOOM_OK);
    cr_assert(strstr(err.msg, "split-k-source"), "%s", err.msg);
    cr_assert_neq(loom_split_k_update(sch, O, loops[n - 1], -1, 4, &err), LOOM_OK);
    cr_assert(strstr(err.msg, "split-k-source"), "%s", err.msg);
    /* without rolled blocks, a parallel reduction loop stays a race */
    cr_assert_eq(loom_split_k_update(sch, m, loops[n - 1], -1, 4, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_parallel(sch, loops[n - 1], &err), LOOM_OK);
    loom_violation v;
    cr_assert_neq(loom_validate(sch, fx_cpu_limits(), &v, NULL), LOOM_OK);
    cr_assert_str_eq(v.rule, "parallel-reduction", "%s", v.msg);
    free(sch);
    unload(&L);
}

Test(attention_fusion_module, decode_one_head_samples_parallel_split_k, .timeout = 600)
{
    if (loom_target_cpu_limits().cores < 2)
        cr_skip_test("one core: the module parallelizes rows, not chunks");
    const char *p[] = {"H=1", "M=2048", NULL};
    loaded L = load("workloads/attention_decode.loom", NULL, NULL, p);
    loom_registry *r = loom_registry_new();
    loom_space *space = NULL;
    loom_error err;
    cr_assert_eq(loom_space_new(r, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *sch = malloc(sizeof *sch);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    int found = 0, valid = 0;
    for (int k = 0; k < 40; k++) {
        cr_assert_eq(loom_schedule_init(sch, L.prog, rng, &err), LOOM_OK);
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        loom_violation v;
        if (loom_validate(sch, fx_cpu_limits(), &v, NULL) != LOOM_OK)
            continue;
        valid++;
        const loom_stage *M = &sch->stages[1];
        if (fx_rolled_stages(sch) && M->splitk > 1 && M->loops[M->nloops - 1].kind == LOOM_LOOP_PARALLEL && found < 2) {
            fx_run_checked(sch, L.ds, "decode, sampled parallel split-K");
            found++;
        }
    }
    cr_assert_gt(found, 0, "no valid parallel split-K schedule sampled (%d valid)", valid);
    gsl_rng_free(rng);
    free(sch);
    loom_space_free(space);
    loom_registry_free(r);
    unload(&L);
}
