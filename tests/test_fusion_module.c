/* ComputeAt with an enable input (loom_compute_at_if) and the
 * attention-fusion module's FlashAttention placement of the score block S
 * (issue 7): the 3-input ComputeAt through record, JSON, replay and print;
 * the module's fused draws (S computed at m's rolled loop, row_tile and
 * key_tile annotations), the flipped decision (S back at the root), the
 * valid share of the default design space on the attention workloads, and
 * fused draws run against the reference. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../runtime/measure/pipeline.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "../runtime/machine/machine.h"
#include "fixture.h"

static int stage_named(const loom_program *prog, const char *name)
{
    for (int s = 0; s < prog->nstmts; s++)
        if (!strcmp(prog->tensors[prog->stmts[s].lhs].name, name))
            return s;
    cr_assert_fail("no block %s", name);
    return -1;
}

/* S's reductions innermost, then ComputeAt(S, m's innermost loop, enable):
 * the hand schedule of bench/bench_attention.c with a sampled switch.
 * *v receives the switch's RV. */
static void place_scores(loom_schedule *sch, int64_t decision, int *v)
{
    static const int64_t CH[] = {0, 1};
    static const double PR[] = {1, 1};
    loom_error err;
    int S, m, sl[LOOM_MAX_LOOPS], ns, ml[LOOM_MAX_LOOPS], nm, order[LOOM_MAX_LOOPS], k = 0;
    cr_assert_eq(loom_sample_categorical(sch, 2, CH, PR, &decision, NULL, v, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "S", &S, &err), LOOM_OK);
    cr_assert_eq(loom_get_block(sch, "m", &m, &err), LOOM_OK);
    cr_assert_eq(loom_get_loops(sch, S, sl, &ns, &err), LOOM_OK);
    cr_assert_eq(loom_get_loops(sch, m, ml, &nm, &err), LOOM_OK);
    for (int red = 0; red < 2; red++)
        for (int q = 0; q < ns; q++)
            if (loom_iter_reduces(sch, sch->rvs[S].stage, sch->rvs[sl[q]].iter) == red)
                order[k++] = sl[q];
    cr_assert_eq(loom_reorder(sch, order, ns, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_compute_at_if(sch, S, ml[nm - 1], *v, &err), LOOM_OK, "%s", err.msg);
}

static loom_decision *decisions_of(const loom_trace *t)
{
    loom_decision *d = calloc((size_t)t->ninsts, sizeof *d);
    for (int i = 0; i < t->ninsts; i++) {
        d[i].n = t->insts[i].ndecision;
        memcpy(d[i].v, t->insts[i].decision, sizeof d[i].v);
    }
    return d;
}

static int first_of(const loom_trace *t, const char *kind)
{
    for (int i = 0; i < t->ninsts; i++)
        if (!strcmp(loom_inst_kind_at(t->insts[i].kind)->name, kind))
            return i;
    return -1;
}

/* ---- ComputeAt with an enable input ----------------------------------- */

Test(compute_at_if, switch_records_round_trips_and_flips)
{
    const char *args[] = {"N=32"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/attention.loom", args, 1, 1, &ds);
    int s = stage_named(prog, "S");
    loom_schedule *sch = malloc(sizeof *sch), *rep = malloc(sizeof *rep), *plain = malloc(sizeof *plain);
    loom_error err;
    loom_trace *t = loom_trace_new();
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK);
    sch->recorder = loom_trace_recorder;
    sch->recorder_ctx = t;
    int v;
    place_scores(sch, 1, &v);
    cr_assert_eq(sch->stages[s].compute_at, LOOM_AT_LOOP);
    cr_assert_eq(sch->stages[s].at_stage, stage_named(prog, "m"));
    int ca = first_of(t, "ComputeAt");
    cr_assert_geq(ca, 0);
    cr_assert_eq(t->insts[ca].ninputs, 3, "the enable input is recorded");
    cr_assert_eq(t->rv_kinds[t->insts[ca].inputs[2]], LOOM_RV_EXPR);

    /* JSON: the 3-input form survives a round trip and replays to the same schedule */
    char *json = NULL;
    cr_assert_eq(loom_trace_to_json(t, prog, &json), LOOM_OK);
    cr_assert(strstr(json, "[\"ComputeAt\", [\"b"), "%s", json);
    loom_trace *back = NULL;
    cr_assert_eq(loom_trace_from_json(json, "<test>", &back, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_trace_equal(t, back), "the round trip changed the trace");
    cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK);
    cr_assert_eq(loom_trace_replay(back, rep, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_schedule_equal(sch, rep), "replay differs");

    /* the flipped decision: the same instructions, S at the root, nothing else changed */
    loom_decision *d = decisions_of(back);
    int c = first_of(back, "SampleCategorical");
    d[c].v[0] = 0;
    cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK);
    cr_assert_eq(loom_trace_replay(back, rep, d, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(rep->stages[s].compute_at, LOOM_AT_ROOT);
    cr_assert_eq(loom_schedule_init(plain, prog, NULL, &err), LOOM_OK);
    int v0;
    place_scores(plain, 0, &v0);
    cr_assert(loom_schedule_equal(plain, rep), "a disabled ComputeAt must leave the schedule as it was");
    loom_violation vio;
    cr_assert_eq(loom_validate(rep, fx_cpu_limits(), &vio, NULL), LOOM_OK, "%s", vio.msg);
    /* enabled without the rolling update, P (unfused) reads S at the root */
    cr_assert_neq(loom_validate(sch, fx_cpu_limits(), &vio, NULL), LOOM_OK);
    cr_assert_str_eq(vio.rule, "producer-coverage", "%s", vio.msg);

    /* loom show prints the switch */
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    loom_trace_print_c(t, prog, mem);
    fclose(mem);
    char want[64];
    snprintf(want, sizeof want, ", v%d);", t->insts[ca].inputs[2]);
    cr_assert(strstr(buf, "loom_compute_at_if(sch, b") && strstr(buf, want), "%s", buf);

    /* a fourth input is refused when loading, with the JSON path */
    char *bad = malloc(strlen(json) + 16), vname[16];
    snprintf(vname, sizeof vname, "\"v%d\"]", t->insts[ca].inputs[2]);
    char *at = strstr(strstr(json, "[\"ComputeAt\""), vname);
    cr_assert_not_null(at);
    size_t pre = (size_t)(at - json) + strlen(vname) - 1;
    snprintf(bad, strlen(json) + 16, "%.*s, \"v1\"%s", (int)pre, json, json + pre);
    loom_trace *no = NULL;
    cr_assert_neq(loom_trace_from_json(bad, "<bad>", &no, &err), LOOM_OK, "4 inputs accepted: %s", bad);
    cr_assert(strstr(err.msg, "$.insts["), "%s", err.msg);
    free(bad);
    free(buf);
    free(d);
    free(json);
    loom_trace_free(back);
    loom_trace_free(t);
    free(sch);
    free(rep);
    free(plain);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

Test(compute_at_if, enable_must_be_an_integer_and_gates_the_rules)
{
    const char *args[] = {"N=32"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/attention.loom", args, 1, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch), *before = malloc(sizeof *before);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK);
    static const int64_t CH[] = {0, 1};
    static const double PR[] = {1, 1};
    int S, m, sl[LOOM_MAX_LOOPS], ns, ml[LOOM_MAX_LOOPS], nm, off, on;
    int64_t d0 = 0, d1 = 1;
    loom_get_block(sch, "S", &S, NULL);
    loom_get_block(sch, "m", &m, NULL);
    loom_get_loops(sch, S, sl, &ns, NULL);
    loom_get_loops(sch, m, ml, &nm, NULL);
    cr_assert_eq(loom_sample_categorical(sch, 2, CH, PR, &d0, NULL, &off, &err), LOOM_OK);
    cr_assert_eq(loom_sample_categorical(sch, 2, CH, PR, &d1, NULL, &on, &err), LOOM_OK);
    loom_schedule_copy(before, sch);
    /* a loop as the switch */
    cr_assert_eq(loom_compute_at_if(sch, S, ml[nm - 1], ml[0], &err), LOOM_ERR_INVALID);
    cr_assert(loom_schedule_equal(before, sch));
    /* m at a loop of S (an earlier block): refused when enabled, a recorded no-op when not */
    cr_assert_eq(loom_compute_at_if(sch, m, sl[0], on, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "compute-at-order"), "%s", err.msg);
    cr_assert_eq(loom_compute_at_if(sch, m, sl[0], off, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_schedule_equal(before, sch), "a disabled ComputeAt changed the schedule");
    /* enabled and without a switch: the same placement as loom_compute_at */
    cr_assert_eq(loom_compute_at_if(sch, S, ml[0], on, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_compute_at(before, S, ml[0], &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_schedule_equal(before, sch));
    free(sch);
    free(before);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* ---- the attention-fusion module: S at the rolled loop ------------------- */

/* The value the trace's categorical that feeds Annotate(key) drew, or -1. */
static int64_t annotated_draw(const loom_trace *t, const char *key)
{
    for (int j = 0; j < t->ninsts; j++) {
        const loom_inst *a = &t->insts[j];
        if (strcmp(loom_inst_kind_at(a->kind)->name, "Annotate") || strcmp(a->sattr, key) || a->ninputs != 2)
            continue;
        for (int i = 0; i < j; i++) {
            const loom_inst *c = &t->insts[i];
            if (!strcmp(loom_inst_kind_at(c->kind)->name, "SampleCategorical") && c->outputs[0] == a->inputs[1])
                return c->attrs[c->decision[0]];
        }
    }
    return -1;
}

static int64_t loop_ann(const loom_loop *L, const char *key)
{
    for (int k = 0; k < L->nann; k++)
        if (!strcmp(L->ann[k].key, key))
            return L->ann[k].value;
    return -1;
}

/* Draw `draws` schedules of the default CPU design space.  Every draw must
 * validate; the fused ones must have S computed at m's rolled loop with its
 * reductions innermost and its loops left serial, m's row loop parallel,
 * and the tile annotations equal to their draws, and most of them have a
 * row tile of 8 or more without a needless split-K (the prior favours the
 * shapes that ran fastest); the unfused ones S at the root.  Up to `run` fused draws (and one flipped to unfused) are run
 * against the reference.  Flipping a fused draw to 0 must give a valid
 * schedule with S at the root. */
static void space_case(const char *path, const char *const *args, int nargs, int draws, int run)
{
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind(path, args, nargs, 3, &ds);
    int s = stage_named(prog, "S"), m = stage_named(prog, "m");
    loom_registry *r = loom_registry_new();
    loom_space *space = NULL;
    loom_error err;
    cr_assert_eq(loom_space_new(r, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *sch = malloc(sizeof *sch), *rep = malloc(sizeof *rep);
    loom_trace *t = loom_trace_new();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 17);
    int valid = 0, fused = 0, ran = 0, flipped_ok = 0, flips = 0, up_ok = 0, ups = 0, fast = 0;
    int64_t rows = 1;
    for (int k = 0; k < prog->stmts[m].nfree; k++)
        rows *= loom_program_var_extent(prog, prog->stmts[m].vars[k]);
    for (int k = 0; k < draws; k++) {
        loom_trace_clear(t);
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK);
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s: %s", path, err.msg);
        loom_violation v;
        int ok = loom_validate(sch, fx_cpu_limits(), &v, NULL) == LOOM_OK;
        valid += ok;
        int c = first_of(t, "SampleCategorical");
        cr_assert_geq(c, 0);
        int f = fx_rolled_stages(sch) > 0;
        if (!ok) {
            cr_log_info("%s draw %d (%s) invalid: %s", path, k, f ? "fused" : "unfused", v.msg);
            /* fewer rows than cores: the module makes the rolled loop
             * parallel whatever the switches, a race unless fused and
             * split into chunks (split-K factor > 1) */
            cr_assert(rows < loom_target_cpu_limits().cores && (!f || sch->stages[m].splitk < 2) &&
                          !strcmp(v.rule, "parallel-reduction"),
                      "%s draw %d invalid: %s", path, k, v.msg);
        }
        cr_assert_eq(f, t->insts[c].decision[0] == 1, "%s: the first decision is the fusion switch", path);
        const loom_stage *S = &sch->stages[s], *M = &sch->stages[m];
        const loom_loop *J = &M->loops[M->nloops - 1];
        if (!f) {
            cr_assert_eq(S->compute_at, LOOM_AT_ROOT, "%s: unfused draw %d moved S", path, k);
        } else {
            fused++;
            cr_assert_eq(S->compute_at, LOOM_AT_LOOP, "%s: fused draw %d left S at %d", path, k, S->compute_at);
            cr_assert_eq(S->at_stage, m);
            cr_assert_eq(S->at_iter, J->iter, "S is computed at m's rolled (innermost) loop");
            cr_assert_eq(S->at_after, 0);
            int seen_red = 0;
            for (int q = 0; q < S->nloops; q++) {
                int red = loom_iter_reduces(sch, s, S->loops[q].iter);
                cr_assert(red || !seen_red, "%s: a free loop of S inside its reduction", path);
                seen_red |= red;
                cr_assert_eq(S->loops[q].kind, LOOM_LOOP_SERIAL, "%s: the other modules scheduled S's loop %d", path,
                             q);
            }
            cr_assert_eq(S->iters[S->loops[0].iter].kind, LOOM_ITER_VAR, "S's loops are not tiled");
            int64_t rt = loop_ann(J, "row_tile"), kt = loop_ann(J, "key_tile");
            cr_assert(rt == 1 || rt == 2 || rt == 4 || rt == 8 || rt == 12 || rt == 16, "row_tile %lld", (long long)rt);
            cr_assert(kt == 16 || kt == 32 || kt == 64, "key_tile %lld", (long long)kt);
            cr_assert_eq(rt, annotated_draw(t, "row_tile"), "row_tile is the sampled value");
            cr_assert_eq(kt, annotated_draw(t, "key_tile"), "key_tile is the sampled value");
            /* the shape that ran fastest (8+ rows, no split-K with rows to spare) */
            fast += rt >= 8 && (rows < loom_target_cpu_limits().cores || M->splitk < 2);
            if (rows >= loom_target_cpu_limits().cores)
                cr_assert_eq(M->loops[0].kind, LOOM_LOOP_PARALLEL, "%s: m's row loop is not parallel", path);
            if (prog->stmts[m].nfree >= 3 &&
                loom_program_var_extent(prog, prog->stmts[m].vars[0]) < 16 * (int64_t)loom_target_cpu_limits().cores)
                cr_assert_eq(M->iters[M->loops[0].iter].kind, LOOM_ITER_FUSE,
                             "%s: few heads: m's two outer row loops are fused into the parallel loop", path);
            if (ok && ran < run) {
                fx_run_checked(sch, ds, path);
                ran++;
            }
        }
        /* the categorical mutator's move: flip the switch, replay */
        loom_decision *d = decisions_of(t);
        d[c].v[0] = !d[c].v[0];
        cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK);
        cr_assert_eq(loom_trace_replay(t, rep, d, &err), LOOM_OK, "%s: %s", path, err.msg);
        free(d);
        int rok = loom_validate(rep, fx_cpu_limits(), &v, NULL) == LOOM_OK;
        if (f) {
            flips++;
            cr_assert_eq(rep->stages[s].compute_at, LOOM_AT_ROOT, "%s: flipped to 0, S must be at the root", path);
            cr_assert_eq(fx_rolled_stages(rep), 0);
            cr_assert(rok || (rows < loom_target_cpu_limits().cores && !strcmp(v.rule, "parallel-reduction")),
                      "%s: fused draw %d flipped to unfused is invalid: %s", path, k, v.msg);
            flipped_ok += rok;
            if (rok && flipped_ok == 1 && run > 0)
                fx_run_checked(rep, ds, "flipped to unfused");
        } else {
            ups++;
            up_ok += rok;
            if (!rok)
                cr_log_info("%s: unfused draw %d flipped to fused: %s", path, k, v.msg);
        }
    }
    fprintf(stderr,
            "fusion_module %s: %d/%d draws valid, %d fused; fused->unfused flips valid %d/%d, unfused->fused %d/%d\n",
            path, valid, draws, fused, flipped_ok, flips, up_ok, ups);
    if (rows >= loom_target_cpu_limits().cores)
        cr_assert_eq(valid, draws, "%s: %d of %d draws invalid", path, draws - valid, draws);
    cr_assert_gt(fused, 0, "%s: no fused draw", path);
    cr_assert_lt(fused, draws, "%s: no unfused draw", path);
    cr_assert_gt(ran, 0, "%s: no valid fused draw ran", path);
    cr_assert_gt(2 * fast, fused, "%s: only %d of %d fused draws have 8+ rows (and no needless split-K): the prior "
                 "should favour the tiles that ran fastest (modules/fusion.c)", path, fast, fused);
    gsl_rng_free(rng);
    loom_trace_free(t);
    free(sch);
    free(rep);
    loom_space_free(space);
    loom_registry_free(r);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

Test(fusion_module, attention, .timeout = 600)
{
    const char *a[] = {"N=64"};
    space_case("workloads/attention.loom", a, 1, 40, 2);
}

Test(fusion_module, causal, .timeout = 600)
{
    const char *a[] = {"N=64"};
    space_case("workloads/attention_causal.loom", a, 1, 40, 2);
}

Test(fusion_module, band, .timeout = 600)
{
    const char *a[] = {"N=96"};
    space_case("workloads/attention_band.loom", a, 1, 40, 1);
}

Test(fusion_module, gqa, .timeout = 600)
{
    const char *a[] = {"N=32"};
    space_case("workloads/attention_gqa.loom", a, 1, 40, 2);
}

Test(fusion_module, decode, .timeout = 600)
{
    const char *a[] = {"M=256"};
    space_case("workloads/attention_decode.loom", a, 1, 40, 2);
}

Test(fusion_module, decode_one_head, .timeout = 600)
{
    /* fewer rows than cores: the rolled loop is parallel (split-K chunks) */
    const char *a[] = {"H=1", "M=512"};
    space_case("workloads/attention_decode.loom", a, 2, 40, 1);
}

Test(fusion_module, sparse_attention_cora500, .timeout = 600)
{
    const char *a[] = {"A=data/cora500_adj.mtx"};
    space_case("workloads/sparse_attention.loom", a, 1, 40, 2);
}
