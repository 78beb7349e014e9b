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

#include "../dsl/program.h"
#include "../dsl/schedule.h"
#include "../modules/module.h"
#include "../runtime/pipeline.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
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
    cr_assert_eq(loom_validate(rep, NULL, &vio, NULL), LOOM_OK, "%s", vio.msg);
    /* enabled without the rolling update, P (unfused) reads S at the root */
    cr_assert_neq(loom_validate(sch, NULL, &vio, NULL), LOOM_OK);
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
