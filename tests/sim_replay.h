/* Replaying a campaign's trace on the simulator, for the simulator's tests
 * (tests/test_sim_kernels.c, tests/test_sim_cycles.c): replay_sim (with its
 * test hooks), replay_workload, and GEMM 512's campaign trace. */
#ifndef LOOM_TEST_SIM_REPLAY_H
#define LOOM_TEST_SIM_REPLAY_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../traces/trace.h"

#include "sim_fixture.h"

/* Test hooks of replay_sim: reunroll puts the "unroll" hints the lowering
 * dropped back (the loop as it was, UNROLLED 4: what a loop codegen does not
 * vectorize keeps); want_c keeps the generated C in last_c (the caller
 * frees it). */
static int reunroll, want_c;
static char *last_c;

static inline void put_unroll_back(lir_stmt *s)
{
    if (!s)
        return;
    for (int i = 0; s->kind == LIR_S_SEQ && i < s->nitems; i++)
        put_unroll_back(s->items[i]);
    if (s->kind == LIR_S_FOR && s->unroll_hint && s->loop_kind == LIR_LOOP_SERIAL) {
        s->loop_kind = LIR_LOOP_UNROLLED;
        s->unroll = 4;
    }
    put_unroll_back(s->body);
    put_unroll_back(s->els);
}

/* Replay trace JSON text with instruction inst's decision set to choice,
 * lower it and simulate it on tg. */
static inline loom_sim_result replay_sim(const char *json, int inst, int choice, loom_program *prog, loom_dataset *ds,
                                  const loom_target *tg)
{
    loom_error err;
    loom_trace *t;
    cr_assert_eq(loom_trace_from_json(json, "<trace>", &t, &err), LOOM_OK, "%s", err.msg);
    loom_decision *d = calloc((size_t)t->ninsts, sizeof *d);
    for (int i = 0; i < t->ninsts; i++) {
        d[i].n = t->insts[i].ndecision;
        memcpy(d[i].v, t->insts[i].decision, sizeof d[i].v);
    }
    d[inst].v[0] = choice;
    loom_schedule *s = malloc(sizeof *s);
    cr_assert_eq(loom_schedule_init(s, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_trace_replay(t, s, d, &err), LOOM_OK, "%s", err.msg);
    lir_func *f;
    cr_assert_eq(loom_lower(s, &f, &err), LOOM_OK, "%s", err.msg);
    if (reunroll)
        put_unroll_back(f->body);
    if (want_c)
        cr_assert_eq(loom_codegen_c(f, "k", &last_c, &err), LOOM_OK, "%s", err.msg);
    loom_sim_result r;
    cr_assert_eq(loom_sim_run(f, ds, tg, &r, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(f);
    free(s), free(d);
    loom_trace_free(t);
    return r;
}

/* replay_sim of json (instruction inst's decision set to choice) on the
 * workload file bound to its data (nspec files) and sizes (npar). */
static inline loom_sim_result replay_workload(const char *workload, const loom_data_spec *spec, int nspec,
                                       const loom_param_spec *par, int npar, const char *json, int inst, int choice,
                                       const loom_target *tg)
{
    loom_error err;
    loom_program *prog;
    cr_assert_eq(loom_program_parse_file(workload, &prog, &err), LOOM_OK, "%s", err.msg);
    loom_dataset *ds;
    cr_assert_eq(loom_dataset_load(prog, spec, nspec, par, npar, 1, &ds, &err), LOOM_OK, "%s", err.msg);
    loom_sim_result r = replay_sim(json, inst, choice, prog, ds, tg);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return r;
}

/* A GEMM campaign's schedule (workloads/gemm.loom, an AVX2 record of
 * bench/fidelity_1t.py): C tiles of `rows` (instruction 4's categorical,
 * 1..8) x 16 columns in a cache-write workspace, k inside, the rows unrolled
 * completely and the 16 columns vectorized.  Here M = 48, N = K = 64 on a
 * 256-bit target with 16 vector registers: 2 vectors of B per k, which the
 * row copies share. */
static const char *GEMM_TRACE __attribute__((unused)) = /* not every includer replays it */ "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"53edc6af5fb2e23b\", \"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", \"l2\", \"l3\"]], [\"SampleCategorical\", [], [[0], [1]], [\"v4\"]], [\"SampleCategorical\", [], [[1, 2, 4, 8, 16, 32, 64], [1, 1, 1, 1, 1, 1, 1]], [\"v5\"]], [\"SampleCategorical\", [], [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8]], [\"v6\"]], [\"Split\", [\"l1\", \"v4\", \"v5\", \"v6\"], [], [\"l7\", \"l8\", \"l9\"]], [\"SamplePerfectTile\", [\"l2\"], [2, -1], [\"v10\", \"v11\"]], [\"Split\", [\"l2\", \"v10\", \"v11\"], [], [\"l12\", \"l13\"]], [\"SamplePerfectTile\", [\"l3\"], [3, 32], [\"v14\", \"v15\", \"v16\"]], [\"Split\", [\"l3\", \"v14\", \"v15\", \"v16\"], [], [\"l17\", \"l18\", \"l19\"]], [\"SampleCategorical\", [], [[0, 1], [0.5, 0.5]], [\"v20\"]], [\"Reorder\", [\"l17\", \"l12\", \"l7\", \"l8\", \"l18\", \"l13\", \"l9\", \"l19\"], [], []], [\"CacheWrite\", [\"b0\", \"l18\"], [], []], [\"SampleCategorical\", [], [[0, 1], [0.5, 0.5]], [\"v21\"]], [\"PackPanel\", [\"b0\", \"l12\", \"v21\"], [\"B\"], []], [\"Parallel\", [\"l17\"], [], []], [\"Annotate\", [\"l9\", \"v6\"], [\"unroll\"], []], [\"Vectorize\", [\"l19\"], [], []]], \"decisions\": [[2, 0], [3, 0], [4, 5], [6, [2, 32]], [8, [1, 4, 16]], [10, 1], [13, 1]]}";

#endif
