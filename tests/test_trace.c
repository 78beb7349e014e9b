/* Traces (traces/trace.c, traces/json.c) and the instruction registry
 * (dsl/schedule/inst.c): recording, replay, JSON round trips, printing as C, and
 * every way a JSON trace can be wrong. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "../dsl/schedule/schedule.h"
#include "../traces/trace.h"

/* ---- fixtures ----------------------------------------------------------- */

static loom_program *load(const char *path, const char *size, int64_t value, const char *size2, int64_t value2)
{
    loom_program *prog = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_program_parse_file(path, &prog, &err), LOOM_OK, "%s", err.msg);
    if (size)
        cr_assert_eq(loom_program_bind_size(prog, size, value, "test", &err), LOOM_OK, "%s", err.msg);
    if (size2)
        cr_assert_eq(loom_program_bind_size(prog, size2, value2, "test", &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_program_finish_binding(prog, &err), LOOM_OK, "%s", err.msg);
    return prog;
}

static loom_program *spmm(void)
{
    return load("workloads/spmm.loom", "N", 2708, "K", 2708);
}

/* The position of the loop named `name` among the block's loops. */
static int loop_named(loom_schedule *sch, int block_rv, const int *loops, int n, const char *name)
{
    char buf[64];
    int s = sch->rvs[block_rv].stage;
    for (int p = 0; p < n; p++)
        if (!strcmp(loom_iter_name(sch, s, sch->rvs[loops[p]].iter, buf, sizeof buf), name))
            return p;
    cr_assert_fail("no loop %s", name);
    return -1;
}

#define OK(call)                                                                                                       \
    do {                                                                                                               \
        loom_error e_;                                                                                                 \
        loom_error_clear(&e_);                                                                                         \
        loom_status s_ = (call);                                                                                       \
        cr_assert_eq(s_, LOOM_OK, "%s: %s", #call, e_.msg);                                                            \
    } while (0)
#define ERR (&e_)

/* The schedule program of the tests (SpMM): every kind but
 * GetProducers/GetConsumers/Fuse/Reorder, which the attention program
 * covers. */
static void program_spmm(loom_schedule *sch)
{
    int b0, loops[LOOM_MAX_LOOPS], n, tiles[2], fs[2], order, cat, ks[2];
    OK(loom_get_block(sch, "C", &b0, ERR));
    OK(loom_get_loops(sch, b0, loops, &n, ERR));
    int f = loops[loop_named(sch, b0, loops, n, "f")];
    int k = loops[loop_named(sch, b0, loops, n, "k")];
    OK(loom_sample_perfect_tile(sch, f, 2, 16, NULL, NULL, tiles, ERR));
    OK(loom_split(sch, f, 2, tiles, NULL, fs, ERR));
    OK(loom_pos_split(sch, k, "A", 8, -1, ks, ERR));
    OK(loom_sample_loop_order(sch, b0, -1, 0.0, NULL, NULL, &order, ERR));
    OK(loom_get_loops(sch, b0, loops, &n, ERR));
    OK(loom_parallel(sch, loops[0], ERR));
    OK(loom_vectorize(sch, fs[1], ERR));
    OK(loom_unroll(sch, ks[1], 4, ERR));
    OK(loom_annotate(sch, loops[0], "chunk", -1, 16, ERR));
    int64_t cands[3] = {1, 2, 4};
    double probs[3] = {0.5, 0.25, 0.25};
    OK(loom_sample_categorical(sch, 3, cands, probs, NULL, NULL, &cat, ERR));
    OK(loom_annotate(sch, b0, "unroll_explicit", cat, 0, ERR));
}

typedef struct run {
    loom_program *prog;
    gsl_rng *rng;
    loom_schedule *sch;
    loom_trace *trace;
} run;

static run record(loom_program *prog, unsigned long seed, void (*program)(loom_schedule *))
{
    run r = {prog, gsl_rng_alloc(gsl_rng_mt19937), malloc(sizeof(loom_schedule)), loom_trace_new()};
    cr_assert(r.rng && r.sch && r.trace);
    gsl_rng_set(r.rng, seed);
    loom_error err;
    cr_assert_eq(loom_schedule_init(r.sch, prog, r.rng, &err), LOOM_OK, "%s", err.msg);
    r.sch->recorder = loom_trace_recorder;
    r.sch->recorder_ctx = r.trace;
    program(r.sch);
    cr_assert_eq(loom_trace_status(r.trace, &err), LOOM_OK, "%s", err.msg);
    return r;
}

static void run_free(run *r)
{
    gsl_rng_free(r->rng);
    free(r->sch);
    loom_trace_free(r->trace);
}

/* Replay t on a fresh schedule without an rng (decisions only), recording
 * into *retrace when not NULL. */
static loom_status replay_fresh(const loom_trace *t, loom_program *prog, loom_schedule *sch,
                                const loom_decision *dec, loom_trace *retrace, loom_error *err)
{
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, err), LOOM_OK, "%s", err->msg);
    if (retrace) {
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = retrace;
    }
    return loom_trace_replay(t, sch, dec, err);
}

static char *to_json(const loom_trace *t, const loom_program *prog)
{
    char *s = NULL;
    cr_assert_eq(loom_trace_to_json(t, prog, &s), LOOM_OK);
    cr_assert(s);
    return s;
}

/* ---- the registry ------------------------------------------------------ */

Test(trace_registry, kinds_and_aliases)
{
    static const char *names[] = {"GetBlock", "GetLoops", "GetProducers", "GetConsumers", "Split",
                                  "Fuse", "Reorder", "PosSplit", "Parallel", "Vectorize", "Unroll",
                                  "Annotate", "SamplePerfectTile", "SampleCategorical", "SampleLoopOrder",
                                  "ComputeInline", "SampleComputeLocation", "ComputeAt", "CacheWrite",
                                  "RFactor", "ReverseComputeAt", "RollingUpdate", "SplitKUpdate",
                                  "SampleFusionGroup", "PackPanel"};
    cr_assert_eq(loom_inst_kind_count(), 25);
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        int i = loom_inst_kind_find(names[k]);
        cr_assert_geq(i, 0, "%s", names[k]);
        const loom_inst_kind *K = loom_inst_kind_at(i);
        cr_assert_str_eq(K->name, names[k]);
        cr_assert(K->apply);
        int sampler = !strncmp(names[k], "Sample", 6), getter = !strncmp(names[k], "Get", 3);
        cr_assert_eq(K->decision != LOOM_DECISION_NONE, sampler, "%s", names[k]);
        /* SampleComputeLocation samples and places the block, SampleFusionGroup
         * constrains placements: not pure */
        cr_assert_eq(K->is_pure,
                     (sampler || getter) && strcmp(names[k], "SampleComputeLocation") &&
                         strcmp(names[k], "SampleFusionGroup"),
                     "%s", names[k]);
        cr_assert_eq(loom_trace_output_kind(i) >= 0,
                     strcmp(names[k], "Reorder") && strcmp(names[k], "Parallel") && strcmp(names[k], "Vectorize") &&
                         strcmp(names[k], "Unroll") && strcmp(names[k], "Annotate") &&
                         strcmp(names[k], "ComputeInline") && strcmp(names[k], "ComputeAt") &&
                         strcmp(names[k], "CacheWrite") && strcmp(names[k], "RFactor") &&
                         strcmp(names[k], "ReverseComputeAt") && strcmp(names[k], "RollingUpdate") &&
                         strcmp(names[k], "SplitKUpdate") && strcmp(names[k], "PackPanel"),
                     "%s", names[k]);
    }
    cr_assert_eq(loom_inst_kind_find("GetSBlock"), loom_inst_kind_find("GetBlock"));
    cr_assert_eq(loom_inst_kind_find("Splitt"), -1);
    cr_assert_eq(loom_inst_kind_find(NULL), -1);
    cr_assert_null(loom_inst_kind_at(-1));
    cr_assert_null(loom_inst_kind_at(25));
}

/* ---- recording and replay ------------------------------------------------ */

Test(trace_record, spmm_trace_shape)
{
    loom_program *prog = spmm();
    run r = record(prog, 1, program_spmm);
    loom_trace *t = r.trace;
    cr_assert_eq(t->ninsts, 13);
    /* RV numbering: one counter in definition order */
    cr_assert_eq(t->insts[0].outputs[0], 0);
    cr_assert_eq(t->rv_kinds[0], LOOM_RV_BLOCK);
    cr_assert_eq(t->insts[1].noutputs, 3);
    cr_assert_eq(t->insts[1].outputs[0], 1);
    cr_assert_eq(t->rv_kinds[3], LOOM_RV_LOOP);
    const loom_inst *spt = &t->insts[2];
    cr_assert_str_eq(loom_inst_kind_at(spt->kind)->name, "SamplePerfectTile");
    cr_assert_eq(spt->ndecision, 2);
    cr_assert_eq(spt->decision[0] * spt->decision[1], 64);
    cr_assert_leq(spt->decision[1], 16);
    cr_assert_eq(t->rv_kinds[spt->outputs[0]], LOOM_RV_EXPR);
    /* SampleLoopOrder keeps the contract's layout: attrs [prior], fattrs [weight] */
    const loom_inst *slo = &t->insts[5];
    cr_assert_str_eq(loom_inst_kind_at(slo->kind)->name, "SampleLoopOrder");
    cr_assert_eq(slo->nattrs, 1);
    cr_assert_eq(slo->attrs[0], -1);
    run_free(&r);
    loom_program_free(prog);
}

Test(trace_record, recording_started_late_is_reported)
{
    loom_program *prog = spmm();
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK);
    int b0, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "C", &b0, &err), LOOM_OK);
    loom_trace *t = loom_trace_new();
    sch->recorder = loom_trace_recorder;
    sch->recorder_ctx = t;
    cr_assert_eq(loom_get_loops(sch, b0, loops, &n, &err), LOOM_OK);
    cr_assert_eq(loom_trace_status(t, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "GetLoops: input 0 is schedule RV 0"), "%s", err.msg);
    char *s = NULL;
    cr_assert_eq(loom_trace_to_json(t, prog, &s), LOOM_ERR_INVALID);
    cr_assert_null(s);
    loom_schedule fresh;
    cr_assert_eq(replay_fresh(t, prog, &fresh, NULL, NULL, &err), LOOM_ERR_INVALID);
    loom_trace_free(t);
    free(sch);
    loom_program_free(prog);
}

Test(trace_replay, same_decisions_same_schedule_200_seeds)
{
    loom_program *prog = spmm();
    loom_schedule *fresh = malloc(sizeof *fresh);
    int distinct_tiles = 0;
    int64_t first_tile = -1;
    for (unsigned long seed = 0; seed < 200; seed++) {
        run r = record(prog, seed, program_spmm);
        loom_trace *again = loom_trace_new();
        loom_error err;
        cr_assert_eq(replay_fresh(r.trace, prog, fresh, NULL, again, &err), LOOM_OK, "seed %lu: %s", seed, err.msg);
        cr_assert(loom_schedule_equal(r.sch, fresh), "seed %lu", seed);
        cr_assert_eq(loom_schedule_hash(r.sch), loom_schedule_hash(fresh), "seed %lu", seed);
        cr_assert(loom_trace_equal(r.trace, again), "seed %lu: the replay records the same trace", seed);
        cr_assert_eq(fresh->nrvs, r.sch->nrvs);
        if (first_tile < 0)
            first_tile = r.trace->insts[2].decision[1];
        else if (r.trace->insts[2].decision[1] != first_tile)
            distinct_tiles = 1;
        loom_trace_free(again);
        run_free(&r);
    }
    cr_assert(distinct_tiles, "200 seeds all drew the same tile: the sampler is not being exercised");
    free(fresh);
    loom_program_free(prog);
}

Test(trace_replay, override_decisions_repair_and_resample)
{
    loom_program *prog = spmm();
    run r = record(prog, 7, program_spmm);
    loom_schedule *fresh = malloc(sizeof *fresh);
    loom_decision *dec = calloc((size_t)r.trace->ninsts, sizeof *dec);
    /* tiles that do not tile 64 are repaired (inner to outer) */
    dec[2].n = 2;
    dec[2].v[0] = 5;
    dec[2].v[1] = 7;
    /* a loop order index past the end is repaired to the last */
    dec[5].n = 1;
    dec[5].v[0] = 1000;
    loom_trace *again = loom_trace_new();
    loom_error err;
    cr_assert_eq(replay_fresh(r.trace, prog, fresh, dec, again, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(again->insts[2].decision[0] * again->insts[2].decision[1], 64);
    cr_assert_eq(again->insts[2].decision[1], 16); /* 7 does not divide 64: the most within max_innermost 16 */
    cr_assert_lt(again->insts[5].decision[0], 1000);
    /* n < 0 draws afresh: needs an rng */
    memset(dec, 0, sizeof *dec * (size_t)r.trace->ninsts);
    dec[11].n = -1;
    cr_assert_eq(replay_fresh(r.trace, prog, fresh, dec, NULL, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "instruction 11 (SampleCategorical): "), "%s", err.msg);
    cr_assert_eq(loom_schedule_init(fresh, prog, r.rng, &err), LOOM_OK);
    cr_assert_eq(loom_trace_replay(r.trace, fresh, dec, &err), LOOM_OK, "%s", err.msg);
    /* replaying a trace into itself is refused */
    cr_assert_eq(loom_schedule_init(fresh, prog, NULL, &err), LOOM_OK);
    fresh->recorder = loom_trace_recorder;
    fresh->recorder_ctx = r.trace;
    cr_assert_eq(loom_trace_replay(r.trace, fresh, NULL, &err), LOOM_ERR_INVALID);
    loom_trace_free(again);
    free(dec);
    free(fresh);
    run_free(&r);
    loom_program_free(prog);
}

/* The attention program covers the getters of related blocks, constant
 * splits, fuse and reorder. */
static void program_attention(loom_schedule *sch)
{
    int bO, bS, prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS], np, nc, loops[LOOM_MAX_LOOPS], n, ds[2], fused;
    OK(loom_get_block(sch, "O", &bO, ERR));
    OK(loom_get_producers(sch, bO, prod, &np, ERR));
    cr_assert_geq(np, 2);
    OK(loom_get_block(sch, "S", &bS, ERR));
    OK(loom_get_consumers(sch, bS, cons, &nc, ERR));
    cr_assert_geq(nc, 2);
    OK(loom_get_loops(sch, bO, loops, &n, ERR));
    int e = loops[loop_named(sch, bO, loops, n, "e")];
    int64_t factors[2] = {0, 16};
    OK(loom_split(sch, e, 2, NULL, factors, ds, ERR));
    OK(loom_fuse(sch, ds, 2, &fused, ERR));
    OK(loom_get_loops(sch, bO, loops, &n, ERR));
    int rev[LOOM_MAX_LOOPS];
    for (int k = 0; k < 2; k++)
        rev[k] = loops[n - 1 - k];
    OK(loom_reorder(sch, rev, 2, ERR));
    int tiles[3];
    OK(loom_sample_perfect_tile(sch, fused, 3, 8, NULL, NULL, tiles, ERR));
    int parts[3];
    OK(loom_split(sch, fused, 3, tiles, NULL, parts, ERR));
    OK(loom_unroll(sch, parts[2], 8, ERR));
}

Test(trace_replay, attention_all_getters_fuse_reorder)
{
    loom_program *prog = load("workloads/attention_causal.loom", NULL, 0, NULL, 0);
    loom_schedule *fresh = malloc(sizeof *fresh);
    for (unsigned long seed = 0; seed < 20; seed++) {
        run r = record(prog, seed, program_attention);
        loom_error err;
        cr_assert_eq(replay_fresh(r.trace, prog, fresh, NULL, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert(loom_schedule_equal(r.sch, fresh));
        char *a = to_json(r.trace, prog);
        loom_trace *back = NULL;
        cr_assert_eq(loom_trace_from_json(a, "mem", &back, &err), LOOM_OK, "%s\n%s", err.msg, a);
        cr_assert(loom_trace_equal(back, r.trace), "%s", a);
        char *b = to_json(back, prog);
        cr_assert_str_eq(a, b);
        free(a);
        free(b);
        loom_trace_free(back);
        run_free(&r);
    }
    free(fresh);
    loom_program_free(prog);
}

/* ---- JSON round trip ---------------------------------------------------- */

Test(trace_json, round_trip_replays_to_the_same_schedule)
{
    loom_program *prog = spmm();
    run r = record(prog, 42, program_spmm);
    char *a = to_json(r.trace, prog);
    char hash[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)loom_program_hash(prog));
    cr_assert(!strncmp(a, "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"", 52), "%s", a);
    cr_assert(strstr(a, hash), "%s", a);
    cr_assert(strstr(a, "[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", \"l2\", \"l3\"]]"),
              "%s", a);
    cr_assert(strstr(a, "[\"PosSplit\", [\"l2\", 8], [\"A\"], [\"l8\", \"l9\"]]"), "%s", a);
    cr_assert(strstr(a, "[\"SampleCategorical\", [], [[1, 2, 4], [0.5, 0.25, 0.25]], [\"v"), "%s", a);
    cr_assert(strstr(a, "\"decisions\": [[2, ["), "%s", a);

    loom_trace *back = NULL;
    loom_error err;
    cr_assert_eq(loom_trace_from_json(a, "mem.json", &back, &err), LOOM_OK, "%s", err.msg);
    cr_assert(back->has_workload);
    cr_assert_eq(back->workload, loom_program_hash(prog));
    cr_assert(loom_trace_equal(back, r.trace));
    loom_schedule *fresh = malloc(sizeof *fresh);
    cr_assert_eq(replay_fresh(back, prog, fresh, NULL, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_schedule_equal(fresh, r.sch));
    cr_assert_eq(loom_schedule_hash(fresh), loom_schedule_hash(r.sch));
    char *b = to_json(back, prog);
    cr_assert_str_eq(a, b);
    char *c = to_json(back, NULL); /* the loaded hash is kept */
    cr_assert_str_eq(a, c);
    free(a);
    free(b);
    free(c);
    free(fresh);
    loom_trace_free(back);
    run_free(&r);
    loom_program_free(prog);
}

Test(trace_json, copy_and_equal)
{
    loom_program *prog = spmm();
    run r = record(prog, 3, program_spmm);
    loom_trace *c = NULL;
    loom_error err;
    cr_assert_eq(loom_trace_copy(r.trace, &c, &err), LOOM_OK);
    cr_assert(loom_trace_equal(c, r.trace));
    c->insts[2].decision[0] += 1;
    cr_assert_not(loom_trace_equal(c, r.trace));
    c->insts[2].decision[0] -= 1;
    c->insts[10].attrs[0] = 17; /* Annotate's constant value */
    cr_assert_not(loom_trace_equal(c, r.trace));
    loom_trace_clear(c);
    cr_assert_eq(c->ninsts, 0);
    cr_assert_eq(c->nrvs, 0);
    loom_trace_free(c);
    loom_trace_free(NULL);
    run_free(&r);
    loom_program_free(prog);
}

/* ---- printing as C ------------------------------------------------------- */

Test(trace_print, c_calls_and_decisions)
{
    loom_program *prog = spmm();
    run r = record(prog, 5, program_spmm);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_trace_print_c(r.trace, prog, f);
    fclose(f);
    const loom_inst *spt = &r.trace->insts[2];
    char want[128];
    static const char *expect[] = {
        "int b0 = loom_get_block(sch, \"C\");\n",
        "loom_get_loops(sch, b0) -> l1, l2, l3;\n",
        "loom_split(sch, l3, 2, (int[]){v4, v5}, NULL) -> l6, l7;\n",
        "loom_pos_split(sch, l2, \"A\", 8, -1) -> l8, l9;\n",
        "int v10 = loom_sample_loop_order(sch, b0, -1, 0); /* decision: ",
        "loom_get_loops(sch, b0) -> l11, ",
        "loom_vectorize(sch, l7);\n",
        "loom_unroll(sch, l9, 4);\n",
        "\"chunk\", -1, 16);\n",
        "loom_sample_categorical(sch, 3, (int64_t[]){1, 2, 4}, (double[]){0.5, 0.25, 0.25}); /* decision: ",
        "loom_annotate(sch, b0, \"unroll_explicit\", v",
        "loom_parallel(sch, l",
    };
    for (size_t k = 0; k < sizeof expect / sizeof *expect; k++)
        cr_assert(strstr(buf, expect[k]), "missing %s in\n%s", expect[k], buf);
    snprintf(want, sizeof want,
             "loom_sample_perfect_tile(sch, l3, 2, 16) -> v4, v5; /* decision: [%lld, %lld] */\n",
             (long long)spt->decision[0], (long long)spt->decision[1]);
    cr_assert(strstr(buf, want), "missing %s in\n%s", want, buf);
    cr_assert(strstr(buf, "/* loom trace: 13 instructions, workload "), "%s", buf);
    free(buf);
    run_free(&r);
    loom_program_free(prog);
}

/* ---- malformed JSON: each error specific, with its $. path ---------------- */

#define HEAD "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"0123456789abcdef\", "
#define GOOD_INSTS                                                                                                     \
    "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", \"l2\", \"l3\"]], "      \
    "[\"SamplePerfectTile\", [\"l3\"], [2, 16], [\"v4\", \"v5\"]], [\"Split\", [\"l3\", \"v4\", \"v5\"], [], "         \
    "[\"l6\", \"l7\"]]], "
#define GOOD HEAD GOOD_INSTS "\"decisions\": [[2, [4, 16]]]}"

static void expect_error(const char *text, loom_status status, const char *substr)
{
    loom_trace *t = (loom_trace *)0x1;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_trace_from_json(text, "bad.json", &t, &err);
    cr_assert_eq(st, status, "status %s (%s) for\n%s", loom_status_name(st), err.msg, text);
    cr_assert_null(t);
    cr_assert(strstr(err.msg, substr), "expected '%s' in '%s'", substr, err.msg);
    cr_assert_str_eq(err.file, "bad.json");
}

Test(trace_json, good_document_from_design)
{
    loom_trace *t = NULL;
    loom_error err;
    cr_assert_eq(loom_trace_from_json(GOOD, "good.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(t->ninsts, 4);
    cr_assert_eq(t->nrvs, 8);
    cr_assert_eq(t->insts[2].ndecision, 2);
    cr_assert_eq(t->insts[2].decision[1], 16);
    cr_assert_eq(t->workload, 0x0123456789abcdefULL);
    char *s = NULL;
    cr_assert_eq(loom_trace_to_json(t, NULL, &s), LOOM_OK);
    cr_assert_str_eq(s, GOOD);
    loom_program *prog = spmm();
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(replay_fresh(t, prog, sch, NULL, NULL, &err), LOOM_OK, "%s", err.msg);
    free(sch);
    free(s);
    loom_trace_free(t);
    loom_program_free(prog);
}

Test(trace_json, truncated_at_several_offsets)
{
    size_t len = strlen(GOOD);
    size_t cuts[] = {0, 1, 17, 60, len / 2, len - 2, len - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
        char *text = strndup(GOOD, cuts[k]);
        expect_error(text, LOOM_ERR_PARSE, "not valid JSON near byte");
        free(text);
    }
    expect_error("{\"format\": \"loom-trace\",\n \"version\": 1,,}", LOOM_ERR_PARSE, "(line 2, column");
    expect_error(GOOD " trailing", LOOM_ERR_PARSE, "not valid JSON near byte");
}

/* A trace nested deeper than cJSON reads says so (issue 32: "not valid JSON
 * near byte 1000" alone); a nesting within the limit, or brackets inside a
 * string, do not claim it. */
Test(trace_json, nesting_too_deep_names_the_limit)
{
    const int deep = 100000;
    char *text = malloc((size_t)2 * deep + 64);
    cr_assert_not_null(text);
    int n = sprintf(text, "{\"format\": \"loom-trace\", \"insts\": ");
    for (int i = 0; i < deep; i++)
        text[n++] = '[';
    for (int i = 0; i < deep; i++)
        text[n++] = ']';
    strcpy(text + n, "}");
    expect_error(text, LOOM_ERR_PARSE, "nested deeper than 1000 levels, the JSON reader's limit (cJSON's "
                                       "CJSON_NESTING_LIMIT)");
    free(text);
    cr_assert_eq(loom__json_too_deep("[[[1,,]]]", 9, 5), 0);
    cr_assert_eq(loom__json_too_deep("\"[[[[\"", 6, 5), 0);
    loom_trace *t = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_neq(loom_trace_from_json("{\"x\": [[1,,]]}", NULL, &t, &err), LOOM_OK);
    cr_assert_null(strstr(err.msg, "nested deeper"), "%s", err.msg);
}

Test(trace_json, not_an_object)
{
    expect_error("[1, 2]", LOOM_ERR_DATA, "$: expected an object, got an array");
}

Test(trace_json, bad_format_tag)
{
    expect_error("{\"format\": \"tvm-trace\", \"version\": 1}", LOOM_ERR_DATA,
                 "$.format: expected \"loom-trace\", got \"tvm-trace\"");
    expect_error("{\"version\": 1}", LOOM_ERR_DATA, "$.format: missing");
}

Test(trace_json, unsupported_version)
{
    expect_error("{\"format\": \"loom-trace\", \"version\": 2}", LOOM_ERR_DATA,
                 "$.version: unsupported version 2 (this loom reads 1)");
}

Test(trace_json, wrong_types)
{
    expect_error("{\"format\": \"loom-trace\", \"version\": \"1\"}", LOOM_ERR_DATA,
                 "$.version: expected an integer, got a string");
    expect_error("{\"format\": \"loom-trace\", \"version\": 1, \"workload\": 12}", LOOM_ERR_DATA,
                 "$.workload: expected a string of 16 hex digits, got a number");
    expect_error("{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"xyz\"}", LOOM_ERR_DATA,
                 "$.workload: expected 16 hex digits");
    expect_error(HEAD "\"insts\": {}, \"decisions\": []}", LOOM_ERR_DATA, "$.insts: expected an array, got an object");
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"]]], \"decisions\": []}", LOOM_ERR_DATA,
                 "$.insts[0]: expected an array of 4 elements, got 3");
    expect_error(HEAD "\"insts\": [[7, [], [\"C\"], [\"b0\"]]], \"decisions\": []}", LOOM_ERR_DATA,
                 "$.insts[0][0]: expected an instruction kind name, got a number");
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", \"b0\", [], []]], "
                      "\"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[1][1]: expected an array, got a string");
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l3\"]], [\"SamplePerfectTile\", [\"l3\"], [2, \"16\"], [\"v4\", \"v5\"]]], "
                      "\"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[2][2][1]: max_innermost must be an integer, got a string");
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [3], [\"b0\"]]], \"decisions\": []}", LOOM_ERR_DATA,
                 "$.insts[0][2][0]: the tensor name must be a string, got a number");
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l3\"]], [\"Split\", [\"l3\", 4.5, 2], [], [\"l4\", \"l5\"]]], \"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[2][1][1]: a constant factor must be an integer, got 4.5");
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l3\"]], [\"Split\", [\"l3\", 99999999999, 2], [], [\"l4\", \"l5\"]]], \"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[2][1][1]: a constant factor must be in -1..2147483647");
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l3\"]], [\"SamplePerfectTile\", [\"l3\"], [2, 16], [\"v4\", \"v5\"]], "
                      "[\"Split\", [\"l3\", \"v4\", 2], [], [\"l6\", \"l7\"]]], \"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[3][1][2]: Split factors must be all integer RVs or all constants, not a mix");
    expect_error(HEAD GOOD_INSTS "\"decisions\": [[2, 4]]}", LOOM_ERR_DATA,
                 "$.decisions[0][1]: decision for SamplePerfectTile must be an array of integers");
    expect_error(HEAD GOOD_INSTS "\"decisions\": [[2, [4, \"16\"]]]}", LOOM_ERR_DATA,
                 "$.decisions[0][1]: decision for SamplePerfectTile must be an array of integers");
    expect_error(HEAD GOOD_INSTS "\"decisions\": {}}", LOOM_ERR_DATA, "$.decisions: expected an array, got an object");
    expect_error(HEAD GOOD_INSTS "\"decisions\": [[\"2\", [4, 16]]]}", LOOM_ERR_DATA,
                 "$.decisions[0][0]: expected an instruction index, got a string");
}

Test(trace_json, unknown_kind)
{
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l3\"]], [\"Splitt\", [\"l3\", 2, 32], [], [\"l4\", \"l5\"]]], \"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[2][0]: unknown instruction kind 'Splitt' (did you mean 'Split'?)");
    expect_error(HEAD "\"insts\": [[\"ComputeAtWhatever\", [], [], []]], \"decisions\": []}", LOOM_ERR_DATA,
                 "$.insts[0][0]: unknown instruction kind 'ComputeAtWhatever' (known: GetBlock, ");
}

Test(trace_json, rv_used_before_definition)
{
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l3\"]], [\"Parallel\", [\"l1\"], [], []], [\"Vectorize\", [\"l9\"], [], []]], "
                      "\"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[3][1][0]: RV 'l9' used before it is defined");
    expect_error(HEAD "\"insts\": [[\"GetLoops\", [\"b0\"], [], [\"l1\"]]], \"decisions\": []}", LOOM_ERR_DATA,
                 "$.insts[0][1][0]: RV 'b0' used before it is defined");
}

Test(trace_json, wrong_rv_kind)
{
    /* a loop where GetLoops needs a block */
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l3\"]], [\"GetLoops\", [\"l1\"], [], []]], \"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[2][1][0]: input 0 of GetLoops must be a block, got loop RV 'l1'");
    /* a loop where Split needs an integer factor */
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l3\"]], [\"Split\", [\"l3\", \"l1\", \"l2\"], [], [\"l4\", \"l5\"]]], "
                      "\"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[2][1][1]: input 1 of Split must be an integer, got loop RV 'l1'");
    /* a name whose letter disagrees with the RV's kind */
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l3\"]], [\"Parallel\", [\"b1\"], [], []]], \"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[2][1][0]: 'b1' names RV 1, which is a loop ('l1')");
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"Parallel\", [\"x0\"], [], []]], "
                      "\"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[1][1][0]: 'x0' is not an RV name");
}

Test(trace_json, output_names_follow_the_counter)
{
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l4\"]]], \"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[1][3][2]: expected output name 'l3', got 'l4'");
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"l0\"]]], \"decisions\": []}", LOOM_ERR_DATA,
                 "$.insts[0][3][0]: expected output name 'b0', got 'l0'");
    expect_error(HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", "
                      "\"l2\", \"l3\"]], [\"Split\", [\"l3\", 2, 32], [], [\"l4\"]]], \"decisions\": []}",
                 LOOM_ERR_DATA, "$.insts[2][3]: Split here has 2 outputs, got 1");
}

Test(trace_json, decisions_shape_and_targets)
{
    expect_error(HEAD GOOD_INSTS "\"decisions\": [[1, 0]]}", LOOM_ERR_DATA,
                 "$.decisions[0][0]: instruction 1 (GetLoops) takes no decision");
    expect_error(HEAD GOOD_INSTS "\"decisions\": [[9, 0]]}", LOOM_ERR_DATA,
                 "$.decisions[0][0]: instruction 9 does not exist (the trace has 4)");
    expect_error(HEAD GOOD_INSTS "\"decisions\": [[2, [4, 16]], [2, [8, 8]]]}", LOOM_ERR_DATA,
                 "$.decisions[1][0]: a second decision for instruction 2 (SamplePerfectTile)");
    expect_error(HEAD GOOD_INSTS "\"decisions\": [[2, [4, 4, 4]]]}", LOOM_ERR_DATA,
                 "$.decisions[0][1]: decision for SamplePerfectTile has 3 entries, instruction 2 has 2 outputs");
    expect_error(HEAD GOOD_INSTS "\"decisions\": [[2]]}", LOOM_ERR_DATA,
                 "$.decisions[0]: expected an array of 2 elements, got 1");
    expect_error(HEAD GOOD_INSTS "\"nodecisions\": []}", LOOM_ERR_DATA, "$.decisions: missing");
}

#define CATEGORICAL(decision)                                                                                          \
    HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"SampleCategorical\", [], [[1, 2, 4], [0.5, 0.25, "    \
         "0.25]], [\"v1\"]], [\"Annotate\", [\"b0\", \"v1\"], [\"unroll_explicit\"], []]], \"decisions\": [[1, " decision "]]}"

Test(trace_json, categorical_decision_out_of_range_fails_at_replay)
{
    loom_program *prog = spmm();
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = NULL;
    loom_error err;
    cr_assert_eq(loom_trace_from_json(CATEGORICAL("2"), "cat.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(replay_fresh(t, prog, sch, NULL, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(sch->stages[0].nann, 1);
    cr_assert_eq(sch->stages[0].ann[0].value, 4);
    loom_trace_free(t);
    cr_assert_eq(loom_trace_from_json(CATEGORICAL("7"), "cat.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(replay_fresh(t, prog, sch, NULL, NULL, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "instruction 1 (SampleCategorical): "), "%s", err.msg);
    cr_assert(strstr(err.msg, "out of range"), "%s", err.msg);
    loom_trace_free(t);
    expect_error(CATEGORICAL("[7]"), LOOM_ERR_DATA,
                 "$.decisions[0][1]: decision for SampleCategorical must be an integer (an index), got an array");
    free(sch);
    loom_program_free(prog);
}

Test(trace_json, replay_error_names_the_instruction)
{
    /* a legal document whose Split does not fit the workload: the factors
     * multiply to less than the extent */
    loom_program *prog = spmm();
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = NULL;
    loom_error err;
    const char *text = HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], "
                            "[\"l1\", \"l2\", \"l3\"]], [\"Split\", [\"l3\", 2, 4], [], [\"l4\", \"l5\"]]], "
                            "\"decisions\": []}";
    cr_assert_eq(loom_trace_from_json(text, "s.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(replay_fresh(t, prog, sch, NULL, NULL, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "instruction 2 (Split): split-too-small"), "%s", err.msg);
    loom_trace_free(t);
    /* a sampler without a decision and no rng */
    text = HEAD GOOD_INSTS "\"decisions\": []}";
    cr_assert_eq(loom_trace_from_json(text, "s.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(replay_fresh(t, prog, sch, NULL, NULL, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "instruction 2 (SamplePerfectTile): "), "%s", err.msg);
    /* GetLoops naming more loops than the block has */
    loom_trace_free(t);
    text = HEAD "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], "
                "[\"l1\", \"l2\"]]], \"decisions\": []}";
    cr_assert_eq(loom_trace_from_json(text, "s.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(replay_fresh(t, prog, sch, NULL, NULL, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "instruction 1 (GetLoops): produced 3 outputs, the trace names 2"), "%s", err.msg);
    loom_trace_free(t);
    free(sch);
    loom_program_free(prog);
}

Test(trace_json, alias_getsblock_loads_and_replays)
{
    const char *text = HEAD "\"insts\": [[\"GetSBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], "
                            "[\"l1\", \"l2\", \"l3\"]], [\"Parallel\", [\"l1\"], [], []]], \"decisions\": []}";
    loom_trace *t = NULL;
    loom_error err;
    cr_assert_eq(loom_trace_from_json(text, "alias.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_str_eq(loom_inst_kind_at(t->insts[0].kind)->name, "GetBlock");
    loom_program *prog = spmm();
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(replay_fresh(t, prog, sch, NULL, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(sch->stages[0].loops[0].kind, LOOM_LOOP_PARALLEL);
    /* written back under the current name */
    char *s = NULL;
    cr_assert_eq(loom_trace_to_json(t, prog, &s), LOOM_OK);
    cr_assert(strstr(s, "[\"GetBlock\", [], [\"C\"], [\"b0\"]]"), "%s", s);
    free(s);
    free(sch);
    loom_trace_free(t);
    loom_program_free(prog);
}

Test(trace_json, null_text)
{
    loom_trace *t = NULL;
    loom_error err;
    cr_assert_eq(loom_trace_from_json(NULL, "x", &t, &err), LOOM_ERR_INVALID);
    cr_assert_null(t);
}
