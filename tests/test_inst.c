/* The table of instruction kinds (dsl/schedule/inst.h): every built-in row is well
 * formed, malformed rows are refused, and two primitives defined only here
 * (a sampler and a transformation, registered at run time with their rows)
 * record, print as C, go to JSON and back, load under an alias, replay (with
 * their decision or an override) and are checked on loading -- with nothing
 * in traces/ knowing them.  Criterion runs each test in its own process, so
 * registrations do not leak from one test to another. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/schedule/inst.h"
#include "../traces/trace.h"

/* ---- two test-only primitives ---------------------------------------------- */

/* TestPick(block, bound, bias): an integer in 0..bound-1 (bias is only
 * carried, to exercise a real attr).  A sampler: its decision is the value.
 * It makes its ExprRV through SampleCategorical with the recorder off. */
static loom_status test_pick(loom_schedule *sch, int block_rv, int64_t bound, double bias, const int64_t *decision,
                             int64_t *decision_out, int *out_rv, loom_error *err)
{
    if (block_rv < 0 || block_rv >= sch->nrvs || sch->rvs[block_rv].kind != LOOM_RV_BLOCK)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "test_pick: not a block RV");
    if (bound < 1 || bound > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "test_pick: bound %lld", (long long)bound);
    int64_t cand[LOOM_MAX_INST_IO];
    double prob[LOOM_MAX_INST_IO];
    for (int k = 0; k < bound; k++) {
        cand[k] = k;
        prob[k] = 1.0 / (double)bound;
    }
    loom_recorder_fn rec = sch->recorder;
    sch->recorder = NULL;
    int64_t used = 0;
    loom_status st = loom_sample_categorical(sch, (int)bound, cand, prob, decision, &used, out_rv, err);
    sch->recorder = rec;
    if (st)
        return st;
    if (decision_out)
        *decision_out = used;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    inst.attrs[inst.nattrs++] = bound;
    inst.fattrs[0] = bias;
    inst.outputs[inst.noutputs++] = *out_rv;
    inst.decision[inst.ndecision++] = used;
    loom_inst_record(sch, loom_inst_kind_find("TestPick"), &inst);
    return LOOM_OK;
}

/* TestMark(loop, key, value): annotates the loop with key = 1000 + value,
 * the value an ExprRV or a constant. */
static loom_status test_mark(loom_schedule *sch, int loop_rv, const char *key, int value_rv, int64_t value,
                             loom_error *err)
{
    int64_t v = value;
    if (value_rv >= 0) {
        if (value_rv >= sch->nrvs || sch->rvs[value_rv].kind != LOOM_RV_EXPR)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "test_mark: not an integer RV");
        v = sch->rvs[value_rv].value;
    }
    loom_recorder_fn rec = sch->recorder;
    sch->recorder = NULL;
    loom_status st = loom_annotate(sch, loop_rv, key, -1, 1000 + v, err);
    sch->recorder = rec;
    if (st)
        return st;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = loop_rv;
    if (value_rv >= 0)
        inst.inputs[inst.ninputs++] = value_rv;
    else
        inst.attrs[inst.nattrs++] = value;
    snprintf(inst.sattr, sizeof inst.sattr, "%s", key);
    loom_inst_record(sch, loom_inst_kind_find("TestMark"), &inst);
    return LOOM_OK;
}

static loom_status apply_pick(loom_schedule *sch, const loom_inst *in, int64_t *decision_out, int *outputs,
                              int *noutputs, loom_error *err)
{
    *noutputs = 0;
    loom_status st = test_pick(sch, in->inputs[0], in->attrs[0], in->fattrs[0], in->ndecision ? in->decision : NULL,
                               decision_out, &outputs[0], err);
    if (!st)
        *noutputs = 1;
    return st;
}

static loom_status apply_mark(loom_schedule *sch, const loom_inst *in, int64_t *decision_out, int *outputs,
                              int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    return test_mark(sch, in->inputs[0], in->sattr, in->ninputs > 1 ? in->inputs[1] : -1,
                     in->nattrs ? in->attrs[0] : 0, err);
}

/* their rows: all there is to adding them */
static const loom_inst_kind pick_row = {
    .name = "TestPick", .is_pure = 1, .decision = LOOM_DECISION_INDEX, .min_args = 1, .max_args = 1,
    .args = {LOOM_ARG_BLOCK},
    .attrs = {{LOOM_ATTR_INT, "the bound", 1, LOOM_MAX_INST_IO, 0}, {LOOM_ATTR_REAL, "the bias", 0, 0, 0}},
    .out = {LOOM_OUT_FIXED, LOOM_RV_EXPR, 1}, .c_call = "test_pick(sch, %i0, %a0, %f0)", .apply = apply_pick};

static const loom_inst_kind mark_row = {
    .name = "TestMark", .aliases = {"TestMarkOld"}, .min_args = 2, .max_args = 2,
    .args = {LOOM_ARG_LOOP, LOOM_ARG_EXPR}, .consts = {1, -50, 50, "value", NULL},
    .attrs = {{LOOM_ATTR_KEY, "the key", 0, 0, 0}}, .c_call = "test_mark(sch, %i0, %s, -1, %a0)",
    .c_call_more = "test_mark(sch, %i0, %s, %i1, 0)", .apply = apply_mark};

static int pick_kind, mark_kind;

static void register_both(void)
{
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_inst_kind_register(&pick_row, &pick_kind, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_inst_kind_register(&mark_row, &mark_kind, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(pick_kind, LOOM_INST_NBUILTIN);
    cr_assert_eq(mark_kind, LOOM_INST_NBUILTIN + 1);
    cr_assert_eq(loom_inst_kind_count(), LOOM_INST_NBUILTIN + 2);
}

static loom_program *gemm(void)
{
    loom_program *prog = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_program_parse_file("workloads/gemm.loom", &prog, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_program_finish_binding(prog, &err), LOOM_OK, "%s", err.msg);
    return prog;
}

/* GetBlock, GetLoops, TestPick (decision 3), TestMark with the picked RV,
 * TestMark with a constant. */
static loom_trace *record_program(const loom_program *prog, loom_schedule *sch)
{
    loom_error err;
    loom_error_clear(&err);
    loom_trace *t = loom_trace_new();
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    sch->recorder = loom_trace_recorder;
    sch->recorder_ctx = t;
    int b, loops[LOOM_MAX_LOOPS], n, v;
    int64_t three = 3, used = -1;
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(test_pick(sch, b, 5, 0.5, &three, &used, &v, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(used, 3);
    cr_assert_eq(test_mark(sch, loops[0], "tile", v, 0, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(test_mark(sch, loops[1], "depth", -1, 7, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_trace_status(t, &err), LOOM_OK, "%s", err.msg);
    sch->recorder = NULL;
    return t;
}

static int64_t ann(const loom_schedule *sch, int loop, const char *key)
{
    const loom_loop *L = &sch->stages[0].loops[loop];
    for (int a = 0; a < L->nann; a++)
        if (!strcmp(L->ann[a].key, key))
            return L->ann[a].value;
    return -1;
}

/* ---- the built-in rows ------------------------------------------------------- */

Test(inst_kinds, builtin_rows_are_well_formed_and_found_by_name)
{
    cr_assert_eq(loom_inst_kind_count(), LOOM_INST_NBUILTIN);
    for (int k = 0; k < LOOM_INST_NBUILTIN; k++) {
        const loom_inst_kind *K = loom_inst_kind_at(k);
        loom_error err;
        loom_error_clear(&err);
        cr_assert_not_null(K);
        cr_assert_eq(loom_inst_kind_check(K, &err), LOOM_OK, "row %d: %s", k, err.msg);
        cr_assert_eq(loom_inst_kind_find(K->name), k, "%s", K->name);
        for (int a = 0; a < LOOM_INST_MAX_ALIASES && K->aliases[a]; a++)
            cr_assert_eq(loom_inst_kind_find(K->aliases[a]), k, "%s", K->aliases[a]);
    }
    cr_assert_eq(loom_inst_kind_find("SplitKUpdate"), LOOM_INST_SPLIT_K_UPDATE);
    cr_assert_eq(loom_inst_kind_find("GetSBlock"), LOOM_INST_GET_BLOCK);
    cr_assert_null(loom_inst_kind_at(LOOM_INST_NBUILTIN));
}

/* The rule: traces/ is generic over the table, so no kind's name
 * appears there as a string. */
Test(inst_kinds, no_kind_name_is_spelled_in_traces)
{
    static const char *files[] = {"traces/trace.c", "traces/json.c", "traces/validate.c", "traces/trace.h"};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        FILE *in = fopen(files[f], "r");
        cr_assert_not_null(in, "%s (run from the repository root)", files[f]);
        static char text[1 << 17];
        size_t n = fread(text, 1, sizeof text - 1, in);
        fclose(in);
        text[n] = 0;
        for (int k = 0; k < LOOM_INST_NBUILTIN; k++) {
            char quoted[80];
            snprintf(quoted, sizeof quoted, "\"%s\"", loom_inst_kind_at(k)->name);
            cr_assert_null(strstr(text, quoted), "%s spells %s", files[f], quoted);
        }
    }
}

/* ---- malformed rows ------------------------------------------------------------ */

static void refused(const loom_inst_kind *K, const char *substr)
{
    loom_error err;
    loom_error_clear(&err);
    int kind = -7;
    cr_assert_eq(loom_inst_kind_register(K, &kind, &err), LOOM_ERR_INVALID, "accepted a row: %s", substr);
    cr_assert(strstr(err.msg, substr), "expected '%s' in '%s'", substr, err.msg);
    cr_assert_eq(kind, -7);
}

Test(inst_kinds, malformed_rows_are_refused)
{
    loom_inst_kind K = mark_row;
    K.name = "Split";
    refused(&K, "is a kind's name or alias already");
    K = mark_row;
    K.aliases[0] = "GetSBlock";
    refused(&K, "its alias GetSBlock is taken");
    K = mark_row;
    K.apply = NULL;
    refused(&K, "needs an apply function");
    K = mark_row;
    K.name = "";
    refused(&K, "a name of 1..63 characters");
    K = mark_row;
    K.max_args = LOOM_MAX_INST_IO + 1;
    refused(&K, "are not within 0..");
    K = mark_row;
    K.attrs[1] = (loom_attr_field){LOOM_ATTR_INT, "a weight", 1, 9, 0};
    refused(&K, "constant arguments and integer attrs would share attrs[]");
    K = pick_row;
    K.attrs[1] = (loom_attr_field){LOOM_ATTR_PROB_LIST, "a probability", 0, 0, 0};
    refused(&K, "a PROB_LIST attr must follow an INT_LIST");
    K = pick_row;
    K.out = (loom_out_sig){LOOM_OUT_NONE, LOOM_RV_BLOCK, 0};
    refused(&K, "a decision (kind 1) needs outputs");
    K = pick_row;
    K.out = (loom_out_sig){LOOM_OUT_ATTR0, LOOM_RV_EXPR, 0};
    K.attrs[0] = (loom_attr_field){LOOM_ATTR_REAL, "the bias", 0, 0, 0};
    K.attrs[1] = (loom_attr_field){0};
    refused(&K, "needs an integer first attr");
    K = pick_row;
    K.args[0] = 0;
    refused(&K, "argument 0 has no kind mask");
    cr_assert_eq(loom_inst_kind_count(), LOOM_INST_NBUILTIN);
}

Test(inst_kinds, the_registry_has_a_limit)
{
    char names[LOOM_INST_MAX_REGISTERED + 1][24];
    for (int k = 0; k <= LOOM_INST_MAX_REGISTERED; k++) {
        loom_inst_kind K = mark_row;
        K.aliases[0] = NULL;
        snprintf(names[k], sizeof names[k], "TestKind%d", k);
        K.name = names[k];
        int kind = -1;
        loom_error err;
        loom_error_clear(&err);
        loom_status st = loom_inst_kind_register(&K, &kind, &err);
        if (k < LOOM_INST_MAX_REGISTERED) {
            cr_assert_eq(st, LOOM_OK, "%s", err.msg);
            cr_assert_eq(kind, LOOM_INST_NBUILTIN + k);
        } else {
            cr_assert_eq(st, LOOM_ERR_INVALID);
            cr_assert(strstr(err.msg, "LOOM_INST_MAX_REGISTERED"), "%s", err.msg);
        }
    }
    cr_assert_eq(loom_inst_kind_count(), LOOM_INST_NBUILTIN + LOOM_INST_MAX_REGISTERED);
}

/* ---- a registered primitive through traces/ ------------------------------------- */

Test(inst_kinds, registered_primitives_record_print_and_round_trip)
{
    register_both();
    loom_program *prog = gemm();
    loom_schedule *sch = malloc(sizeof *sch), *rep = malloc(sizeof *rep);
    loom_trace *t = record_program(prog, sch);
    cr_assert_eq(t->ninsts, 5);
    cr_assert_eq(t->insts[2].kind, pick_kind);
    cr_assert_eq(t->insts[3].kind, mark_kind);
    cr_assert_eq(loom_trace_output_kind(pick_kind), LOOM_RV_EXPR);
    cr_assert_eq(loom_trace_output_kind(mark_kind), -1);
    cr_assert_eq(ann(sch, 0, "tile"), 1003);
    cr_assert_eq(ann(sch, 1, "depth"), 1007);

    /* JSON: the attr codecs, the constant argument and the decision as the rows say */
    char *json = NULL;
    cr_assert_eq(loom_trace_to_json(t, prog, &json), LOOM_OK);
    const char *want = "[\"TestPick\", [\"b0\"], [5, 0.5], [\"v4\"]], [\"TestMark\", [\"l1\", \"v4\"], [\"tile\"], []], "
                       "[\"TestMark\", [\"l2\", 7], [\"depth\"], []]], \"decisions\": [[2, 3]]}";
    cr_assert(strstr(json, want), "%s", json);
    loom_error err;
    loom_error_clear(&err);
    loom_trace *back = NULL;
    cr_assert_eq(loom_trace_from_json(json, "reg.json", &back, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_trace_equal(back, t));

    /* C */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    loom_trace_print_c(t, prog, f);
    fclose(f);
    cr_assert(strstr(buf, "int v4 = test_pick(sch, b0, 5, 0.5); /* decision: 3 */\n"), "%s", buf);
    cr_assert(strstr(buf, "test_mark(sch, l1, \"tile\", v4, 0);\n"), "%s", buf);
    cr_assert(strstr(buf, "test_mark(sch, l2, \"depth\", -1, 7);\n"), "%s", buf);
    free(buf);

    /* replay without an rng: the recorded decision; then an override */
    cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_trace_replay(back, rep, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_schedule_equal(sch, rep));
    loom_decision d[5] = {{0}};
    d[2].n = 1;
    d[2].v[0] = 4;
    cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_trace_replay(back, rep, d, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(ann(rep, 0, "tile"), 1004);
    cr_assert_eq(ann(rep, 1, "depth"), 1007);
    d[2].v[0] = 5; /* out of 0..4: the primitive refuses, replay names it */
    cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_neq(loom_trace_replay(back, rep, d, &err), LOOM_OK);
    cr_assert(strstr(err.msg, "instruction 2 (TestPick): "), "%s", err.msg);

    free(json);
    loom_trace_free(back);
    loom_trace_free(t);
    free(sch);
    free(rep);
    loom_program_free(prog);
}

#define HEAD "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"0123456789abcdef\", \"insts\": [" \
             "[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", \"l2\", \"l3\"]], "

static void load_error(const char *text, const char *substr)
{
    loom_trace *t = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_trace_from_json(text, "reg.json", &t, &err), LOOM_ERR_DATA, "loaded:\n%s", text);
    cr_assert_null(t);
    cr_assert(strstr(err.msg, substr), "expected '%s' in '%s'", substr, err.msg);
}

Test(inst_kinds, registered_primitives_are_checked_on_loading)
{
    register_both();
    loom_trace *t = NULL;
    loom_error err;
    /* an alias loads as the kind */
    const char *ok = HEAD "[\"TestMarkOld\", [\"l1\", -3], [\"k\"], []]], \"decisions\": []}";
    cr_assert_eq(loom_trace_from_json(ok, "reg.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(t->insts[2].kind, mark_kind);
    cr_assert_eq(t->insts[2].attrs[0], -3);
    loom_trace_free(t);
    load_error(HEAD "[\"TestPick\", [\"b0\"], [500, 0.5], [\"v4\"]]], \"decisions\": []}",
               "$.insts[2][2][0]: the bound 500 is out of range 1..24");
    load_error(HEAD "[\"TestPick\", [\"b0\"], [5, \"x\"], [\"v4\"]]], \"decisions\": []}",
               "$.insts[2][2][1]: the bias must be a number, got a string");
    load_error(HEAD "[\"TestPick\", [\"b0\"], [5, 0.5], [\"v4\", \"v5\"]]], \"decisions\": []}",
               "$.insts[2][3]: TestPick here has 1 output, got 2");
    load_error(HEAD "[\"TestMark\", [\"b0\", 1], [\"k\"], []]], \"decisions\": []}",
               "$.insts[2][1][0]: input 0 of TestMark must be a loop, got block RV 'b0'");
    load_error(HEAD "[\"TestMark\", [\"l1\", 99], [\"k\"], []]], \"decisions\": []}",
               "$.insts[2][1][1]: a constant value must be in -50..50, got 99");
    load_error(HEAD "[\"TestMark\", [\"l1\"], [\"k\"], []]], \"decisions\": []}",
               "$.insts[2][1]: expected an array of 2 elements, got 1");
    load_error(HEAD "[\"TestMark\", [\"l1\", 1], [], []]], \"decisions\": []}",
               "$.insts[2][2]: expected an array of 1 elements, got 0");
    load_error(HEAD "[\"TestMark\", [\"l1\", 1], [\"k\"], []]], \"decisions\": [[2, 0]]}",
               "$.decisions[0][0]: instruction 2 (TestMark) takes no decision");
    load_error(HEAD "[\"TestPick\", [\"b0\"], [5, 0.5], [\"v4\"]]], \"decisions\": [[2, [1]]]}",
               "$.decisions[0][1]: decision for TestPick must be an integer (an index), got an array");
    /* appending checks the row's signature too */
    t = loom_trace_new();
    loom_inst g = {.kind = LOOM_INST_GET_BLOCK, .noutputs = 1, .outputs = {0}, .sattr = "C"};
    cr_assert_eq(loom_trace_append(t, &g, &err), LOOM_OK, "%s", err.msg);
    loom_inst m = {.kind = mark_kind, .ninputs = 1, .inputs = {0}, .sattr = "k"};
    cr_assert_eq(loom_trace_append(t, &m, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "TestMark: input 0 (b0) has the wrong kind"), "%s", err.msg);
    loom_trace_free(t);
}

/* The shape checks come from the row (loom_inst_check): a registered kind
 * whose adapter checks nothing is refused bad arity, input kinds, ranges,
 * a missing key and an oversized decision before its apply runs; the
 * built-in adapters rely on the same check. */
static void apply_refused(loom_schedule *sch, const loom_inst *in, const char *substr)
{
    int64_t used[LOOM_MAX_INST_IO];
    int outs[LOOM_MAX_LOOPS + LOOM_MAX_STMTS + LOOM_MAX_INST_IO], nout = -1;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_inst_apply(sch, in, used, outs, &nout, &err), LOOM_ERR_INVALID, "expected '%s'", substr);
    cr_assert(strstr(err.msg, substr), "'%s' not in: %s", substr, err.msg);
    cr_assert_eq(nout, 0);
}

Test(inst_kinds, instruction_shape_is_checked_from_the_row)
{
    register_both();
    loom_program *prog = gemm();
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = record_program(prog, sch); /* RVs: 0 block C, 1.. its loops, then the picked value */
    int b = 0, l0 = 1, v = sch->nrvs - 1;
    cr_assert_eq(sch->rvs[v].kind, LOOM_RV_EXPR);
    loom_inst m = {.kind = mark_kind, .ninputs = 1, .nattrs = 1, .inputs = {l0}, .attrs = {7}, .sattr = "depth"};
    int64_t used[LOOM_MAX_INST_IO];
    int outs[LOOM_MAX_LOOPS + LOOM_MAX_STMTS + LOOM_MAX_INST_IO], nout;
    loom_error err;
    cr_assert_eq(loom_inst_apply(sch, &m, used, outs, &nout, &err), LOOM_OK, "%s", err.msg);
    loom_inst x = m;
    x.attrs[0] = 51; /* consts -50..50 */
    apply_refused(sch, &x, "constant value 51 is not in -50..50");
    x = m;
    x.inputs[0] = b; /* a block where a loop goes */
    apply_refused(sch, &x, "input 0 (RV 0) has the wrong kind");
    x = m;
    x.inputs[0] = sch->nrvs; /* no such RV */
    apply_refused(sch, &x, "not one of the schedule's");
    x = m;
    x.sattr[0] = 0;
    apply_refused(sch, &x, "needs the key");
    x = m;
    x.ninputs = 2, x.inputs[1] = v; /* an RV and a constant */
    apply_refused(sch, &x, "either as RV inputs or as constant attrs, not both");
    x = m;
    x.ninputs = 3, x.nattrs = 0;
    apply_refused(sch, &x, "takes 1 (constant values) or 2..2 inputs, got 3");
    loom_inst p = {.kind = pick_kind, .ninputs = 1, .nattrs = 1, .inputs = {b}, .attrs = {LOOM_MAX_INST_IO + 1}};
    char want[64];
    snprintf(want, sizeof want, "the bound = %d is not in 1..%d", LOOM_MAX_INST_IO + 1, LOOM_MAX_INST_IO);
    apply_refused(sch, &p, want);
    p.attrs[0] = 4;
    p.ndecision = 2;
    apply_refused(sch, &p, "the decision is one index, got 2 entries");
    p.ndecision = 0;
    p.nattrs = 3; /* one INT and one REAL field: at most 2 */
    apply_refused(sch, &p, "takes 1..2 attrs, got 3");
    /* a built-in kind: Unroll's factor range and SamplePerfectTile's decision size */
    loom_inst u = {.kind = LOOM_INST_UNROLL, .ninputs = 1, .nattrs = 1, .inputs = {l0}, .attrs = {0}};
    apply_refused(sch, &u, "the unroll factor = 0 is not in 1..1048576");
    loom_inst tile = {.kind = LOOM_INST_SAMPLE_PERFECT_TILE, .ninputs = 1, .nattrs = 2, .inputs = {l0},
                      .attrs = {2, 16}, .ndecision = 3, .decision = {1, 1, 1}};
    apply_refused(sch, &tile, "the decision has 3 entries, expected 2");
    loom_trace_free(t);
    free(sch);
    loom_program_free(prog);
}
