/* The instruction kinds (dsl/schedule/inst.h): the apply adapter of every built-in
 * kind (replay re-executes a recorded instruction through it) and the table
 * of traits, one row per kind, indexed by loom_inst_kind_id; kinds
 * registered at run time follow the built-in rows. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "inst.h"

/* ---- the generic check of an instruction against its row (inst.h) -------- */

#define BAD_INST(...) loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, __VA_ARGS__)

static int has_sattr(const loom_inst *inst)
{
    return memchr(inst->sattr, '\0', sizeof inst->sattr) != NULL && inst->sattr[0] != '\0';
}

/* The inputs: as many as the row takes, each an RV of sch of a kind its
 * position allows.  *constant_form: the constants are in attrs. */
static loom_status check_inputs(const loom_schedule *sch, const loom_inst_kind *K, const loom_inst *inst,
                                int *constant_form, loom_error *err)
{
    int from = K->consts.from, n = inst->ninputs;
    *constant_form = from > 0 && n == from && (from < K->min_args || inst->nattrs > 0);
    if (!*constant_form && (n < K->min_args || n > K->max_args))
        return from > 0 ? BAD_INST("%s takes %d (constant %ss) or %d..%d inputs, got %d", K->name, from,
                                   K->consts.what, K->min_args, K->max_args, n)
                        : BAD_INST("%s takes %d..%d inputs, got %d", K->name, K->min_args, K->max_args, n);
    for (int k = 0; sch && k < n; k++) {
        int r = inst->inputs[k];
        if (r < 0 || r >= sch->nrvs)
            return BAD_INST("%s: input %d is RV %d, not one of the schedule's %d", K->name, k, r, sch->nrvs);
        if (!(loom_inst_kind_arg_mask(K, k) & (1 << sch->rvs[r].kind)))
            return BAD_INST("%s: input %d (RV %d) has the wrong kind", K->name, k, r);
    }
    return LOOM_OK;
}

/* The constants of the constant form, in attrs. */
static loom_status check_consts(const loom_inst_kind *K, const loom_inst *inst, loom_error *err)
{
    const loom_const_args *C = &K->consts;
    int lo = K->min_args - C->from, hi = K->max_args - C->from;
    if (inst->nattrs < lo || inst->nattrs > hi)
        return BAD_INST("%s takes %d..%d constant %ss, got %d", K->name, lo, hi, C->what, inst->nattrs);
    for (int k = 0; k < inst->nattrs; k++)
        if (inst->attrs[k] < C->lo || inst->attrs[k] > C->hi)
            return BAD_INST("%s: constant %s %lld is not in %lld..%lld%s", K->name, C->what, (long long)inst->attrs[k],
                            (long long)C->lo, (long long)C->hi, C->note ? C->note : "");
    return LOOM_OK;
}

/* The attr fields: integers in range, a name or key in sattr. */
static loom_status check_fields(const loom_inst_kind *K, const loom_inst *inst, loom_error *err)
{
    int nint = 0, nreal = 0, list = 0;
    for (int f = 0; f < LOOM_INST_MAX_ATTRS; f++) {
        const loom_attr_field *A = &K->attrs[f];
        if ((A->codec == LOOM_ATTR_NAME || A->codec == LOOM_ATTR_KEY) && !has_sattr(inst))
            return BAD_INST("%s needs %s", K->name, A->what);
        list |= A->codec == LOOM_ATTR_INT_LIST;
        nreal += A->codec == LOOM_ATTR_REAL;
        if (A->codec != LOOM_ATTR_INT)
            continue;
        if (nint < inst->nattrs &&
            (inst->attrs[nint] < A->lo || inst->attrs[nint] > A->hi || (A->nonzero && inst->attrs[nint] == 0)))
            return BAD_INST("%s: %s = %lld is not in %lld..%lld%s", K->name, A->what, (long long)inst->attrs[nint],
                            (long long)A->lo, (long long)A->hi, A->nonzero ? " (nor 0)" : "");
        nint++;
    }
    /* a recorder may add an integer rendering of a real field: ignored;
     * a kind with a constant form keeps its constants in attrs instead */
    int lo = list ? 1 : nint, hi = list ? LOOM_MAX_INST_IO : nint + nreal;
    if (K->consts.from == 0 && (inst->nattrs < lo || inst->nattrs > hi))
        return BAD_INST("%s takes %d..%d attrs, got %d", K->name, lo, hi, inst->nattrs);
    return LOOM_OK;
}

static loom_status check_decision(const loom_inst_kind *K, const loom_inst *inst, loom_error *err)
{
    int nd = inst->ndecision, want = -1;
    if (nd < 0 || nd > LOOM_MAX_INST_IO || (K->decision == LOOM_DECISION_NONE && nd))
        return BAD_INST("%s: a decision with %d entries", K->name, nd);
    if (K->decision == LOOM_DECISION_INDEX && nd > 1)
        return BAD_INST("%s: the decision is one index, got %d entries", K->name, nd);
    if (K->decision == LOOM_DECISION_PER_OUTPUT)
        want = K->out.rule == LOOM_OUT_ATTR0 ? (int)inst->attrs[0] : K->out.rule == LOOM_OUT_FIXED ? K->out.n : -1;
    if (want >= 0 && nd && nd != want)
        return BAD_INST("%s: the decision has %d entries, expected %d (one per output)", K->name, nd, want);
    return LOOM_OK;
}

loom_status loom_inst_check(const loom_schedule *sch, const loom_inst *inst, loom_error *err)
{
    const loom_inst_kind *K = loom_inst_kind_at(inst->kind);
    if (!K)
        return BAD_INST("instruction kind %d is not in the table", inst->kind);
    if (inst->ninputs < 0 || inst->ninputs > LOOM_MAX_INST_IO || inst->nattrs < 0 || inst->nattrs > LOOM_MAX_INST_IO)
        return BAD_INST("%s: %d inputs, %d attrs (0..%d each)", K->name, inst->ninputs, inst->nattrs, LOOM_MAX_INST_IO);
    int constant_form;
    loom_status st = check_inputs(sch, K, inst, &constant_form, err);
    if (!st && constant_form)
        st = check_consts(K, inst, err);
    else if (!st && K->consts.from > 0 && inst->nattrs)
        st = BAD_INST("%s takes its %ss either as RV inputs or as constant attrs, not both", K->name, K->consts.what);
    if (!st)
        st = check_fields(K, inst, err);
    return st ? st : check_decision(K, inst, err);
}

loom_status loom_inst_apply(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                            int *noutputs, loom_error *err)
{
    *noutputs = 0;
    loom_status st = loom_inst_check(sch, inst, err);
    return st ? st : loom_inst_kind_at(inst->kind)->apply(sch, inst, decision_out, outputs, noutputs, err);
}

#undef BAD_INST

/* The adapters below run after loom_inst_check: the row's arity, kinds,
 * ranges, names and decision sizes hold. */

/* The optional last input k (an enable RV), or -1. */
static int opt_input(const loom_inst *inst, int k)
{
    return inst->ninputs > k ? inst->inputs[k] : -1;
}

/* ---- getters --------------------------------------------------------- */

static loom_status apply_get_block(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                   int *noutputs, loom_error *err)
{
    (void)decision_out;
    loom_status st = loom_get_block(sch, inst->sattr, &outputs[0], err);
    *noutputs = st ? 0 : 1;
    return st;
}

static loom_status apply_get_loops(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                   int *noutputs, loom_error *err)
{
    (void)decision_out;
    return loom_get_loops(sch, inst->inputs[0], outputs, noutputs, err);
}

static loom_status apply_get_producers(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                       int *outputs, int *noutputs, loom_error *err)
{
    (void)decision_out;
    return loom_get_producers(sch, inst->inputs[0], outputs, noutputs, err);
}

static loom_status apply_get_consumers(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                       int *outputs, int *noutputs, loom_error *err)
{
    (void)decision_out;
    return loom_get_consumers(sch, inst->inputs[0], outputs, noutputs, err);
}

/* ---- loop transformations -------------------------------------------- */

static loom_status apply_split(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                               int *noutputs, loom_error *err)
{
    (void)decision_out;
    int rv_form = inst->ninputs > 1, n = rv_form ? inst->ninputs - 1 : inst->nattrs;
    loom_status st = loom_split(sch, inst->inputs[0], n, rv_form ? &inst->inputs[1] : NULL,
                                rv_form ? NULL : inst->attrs, outputs, err);
    *noutputs = st ? 0 : n;
    return st;
}

static loom_status apply_fuse(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                              int *noutputs, loom_error *err)
{
    (void)decision_out;
    loom_status st = loom_fuse(sch, inst->inputs, inst->ninputs, &outputs[0], err);
    *noutputs = st ? 0 : 1;
    return st;
}

static loom_status apply_reorder(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                 int *noutputs, loom_error *err)
{
    (void)decision_out, (void)outputs, (void)noutputs;
    return loom_reorder(sch, inst->inputs, inst->ninputs, err);
}

static loom_status apply_pos_split(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                   int *noutputs, loom_error *err)
{
    (void)decision_out;
    loom_status st = loom_pos_split(sch, inst->inputs[0], inst->sattr, inst->nattrs ? inst->attrs[0] : 0,
                                    opt_input(inst, 1), outputs, err);
    *noutputs = st ? 0 : 2;
    return st;
}

/* ---- loop kinds and annotations --------------------------------------- */

static loom_status apply_parallel(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                  int *noutputs, loom_error *err)
{
    (void)decision_out, (void)outputs, (void)noutputs;
    return loom_parallel(sch, inst->inputs[0], err);
}

static loom_status apply_vectorize(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                   int *noutputs, loom_error *err)
{
    (void)decision_out, (void)outputs, (void)noutputs;
    return loom_vectorize(sch, inst->inputs[0], err);
}

static loom_status apply_unroll(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                int *noutputs, loom_error *err)
{
    (void)decision_out, (void)outputs, (void)noutputs;
    return loom_unroll(sch, inst->inputs[0], (int)inst->attrs[0], err);
}

static loom_status apply_annotate(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                  int *noutputs, loom_error *err)
{
    (void)decision_out, (void)outputs, (void)noutputs;
    return loom_annotate(sch, inst->inputs[0], inst->sattr, opt_input(inst, 1), inst->nattrs ? inst->attrs[0] : 0,
                         err);
}

/* ---- samplers ------------------------------------------------------- */

/* The recorded decision, or NULL: draw. */
#define DECISION(inst) ((inst)->ndecision ? (inst)->decision : NULL)

static loom_status apply_sample_perfect_tile(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                             int *outputs, int *noutputs, loom_error *err)
{
    int n = (int)inst->attrs[0];
    int64_t used[LOOM_MAX_INST_IO];
    loom_status st =
        loom_sample_perfect_tile(sch, inst->inputs[0], n, (int)inst->attrs[1], DECISION(inst), used, outputs, err);
    if (st)
        return st;
    if (decision_out)
        memcpy(decision_out, used, sizeof(int64_t) * (size_t)n);
    *noutputs = n;
    return LOOM_OK;
}

/* A sampler of one index and one output (decision[0]). */
static loom_status one_index(loom_status st, int64_t used, int64_t *decision_out, int *noutputs)
{
    if (!st && decision_out)
        decision_out[0] = used;
    *noutputs = st ? 0 : 1;
    return st;
}

static loom_status apply_sample_categorical(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                            int *outputs, int *noutputs, loom_error *err)
{
    int64_t used = 0;
    loom_status st = loom_sample_categorical(sch, inst->nattrs, inst->attrs, inst->fattrs, DECISION(inst), &used,
                                             &outputs[0], err);
    return one_index(st, used, decision_out, noutputs);
}

static loom_status apply_sample_loop_order(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                           int *outputs, int *noutputs, loom_error *err)
{
    int64_t used = 0; /* the weight is fattrs[0]; a second attr (an integer rendering of it) is ignored */
    loom_status st = loom_sample_loop_order(sch, inst->inputs[0], (int)inst->attrs[0], inst->fattrs[0],
                                            DECISION(inst), &used, &outputs[0], err);
    return one_index(st, used, decision_out, noutputs);
}

static loom_status apply_compute_inline(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                        int *outputs, int *noutputs, loom_error *err)
{
    (void)decision_out, (void)outputs, (void)noutputs;
    return loom_compute_inline(sch, inst->inputs[0], err);
}

static loom_status apply_sample_compute_location(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                                 int *outputs, int *noutputs, loom_error *err)
{
    int64_t used = 0;
    loom_status st = loom_sample_compute_location(sch, inst->inputs[0], DECISION(inst), &used, &outputs[0], err);
    return one_index(st, used, decision_out, noutputs);
}

static loom_status apply_sample_fusion_group(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                             int *outputs, int *noutputs, loom_error *err)
{
    int64_t used = 0;
    loom_status st = loom_sample_fusion_group(sch, inst->inputs[0], DECISION(inst), &used, &outputs[0], err);
    return one_index(st, used, decision_out, noutputs);
}

#undef DECISION

/* ---- placement: (block, loop[, enable]) ------------------------------ */

#define BLOCK_LOOP_ENABLE(fn, primitive)                                                                           \
    static loom_status fn(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,           \
                          int *noutputs, loom_error *err)                                                          \
    {                                                                                                              \
        (void)decision_out, (void)outputs, (void)noutputs;                                                          \
        return primitive(sch, inst->inputs[0], inst->inputs[1], opt_input(inst, 2), err);                          \
    }
BLOCK_LOOP_ENABLE(apply_compute_at, loom_compute_at_if)
BLOCK_LOOP_ENABLE(apply_cache_write, loom_cache_write_if)
BLOCK_LOOP_ENABLE(apply_reverse_compute_at, loom_reverse_compute_at_if)
BLOCK_LOOP_ENABLE(apply_rolling_update, loom_rolling_update)
#undef BLOCK_LOOP_ENABLE

static loom_status apply_pack_panel(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                    int *noutputs, loom_error *err)
{
    (void)decision_out, (void)outputs, (void)noutputs;
    return loom_pack_panel(sch, inst->inputs[0], inst->inputs[1], inst->sattr, opt_input(inst, 2), err);
}

static loom_status apply_rfactor(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                 int *noutputs, loom_error *err)
{
    (void)decision_out, (void)outputs, (void)noutputs;
    return loom_rfactor(sch, inst->inputs[0], err);
}

static loom_status apply_split_k_update(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                        int *outputs, int *noutputs, loom_error *err)
{
    (void)decision_out, (void)outputs, (void)noutputs;
    return loom_split_k_update(sch, inst->inputs[0], inst->inputs[1], opt_input(inst, 2),
                               inst->nattrs ? inst->attrs[0] : 0, err);
}

/* ---- the table ------------------------------------------------------- */

#define B LOOM_ARG_BLOCK
#define L LOOM_ARG_LOOP
#define E LOOM_ARG_EXPR
#define MAXIO LOOM_MAX_INST_IO
#define ONE(k) {LOOM_OUT_FIXED, k, 1}
#define TENSOR_NAME {LOOM_ATTR_NAME, "the tensor name", 0, 0, 0}

static const loom_inst_kind builtin[LOOM_INST_NBUILTIN] = {
    [LOOM_INST_GET_BLOCK] = {.name = "GetBlock", .aliases = {"GetSBlock"}, /* TVM #18689 renamed it */
                             .is_pure = 1, .attrs = {TENSOR_NAME}, .out = ONE(LOOM_RV_BLOCK),
                             .c_call = "loom_get_block(sch, %s)", .apply = apply_get_block},
    [LOOM_INST_GET_LOOPS] = {.name = "GetLoops", .is_pure = 1, .min_args = 1, .max_args = 1, .args = {B},
                             .out = {LOOM_OUT_ANY, LOOM_RV_LOOP, 0}, .c_call = "loom_get_loops(sch, %i0)",
                             .apply = apply_get_loops},
    [LOOM_INST_GET_PRODUCERS] = {.name = "GetProducers", .is_pure = 1, .min_args = 1, .max_args = 1, .args = {B},
                                 .out = {LOOM_OUT_ANY, LOOM_RV_BLOCK, 0},
                                 .c_call = "loom_get_producers(sch, %i0)", .apply = apply_get_producers},
    [LOOM_INST_GET_CONSUMERS] = {.name = "GetConsumers", .is_pure = 1, .min_args = 1, .max_args = 1, .args = {B},
                                 .out = {LOOM_OUT_ANY, LOOM_RV_BLOCK, 0},
                                 .c_call = "loom_get_consumers(sch, %i0)", .apply = apply_get_consumers},
    [LOOM_INST_SPLIT] = {.name = "Split", .min_args = 3, .max_args = MAXIO, .args = {L, E},
                         .consts = {1, -1, INT32_MAX, "factor", " (0 or -1 = inferred)"},
                         .out = {LOOM_OUT_PER_ARG, LOOM_RV_LOOP, 0},
                         .c_call = "loom_split(sch, %i0, %nA, NULL, (int64_t[]){%A})",
                         .c_call_more = "loom_split(sch, %i0, %nI1, (int[]){%I1}, NULL)", .apply = apply_split},
    [LOOM_INST_FUSE] = {.name = "Fuse", .min_args = 2, .max_args = MAXIO, .args = {L}, .out = ONE(LOOM_RV_LOOP),
                        .c_call = "loom_fuse(sch, (int[]){%I0}, %nI0)", .apply = apply_fuse},
    [LOOM_INST_REORDER] = {.name = "Reorder", .min_args = 1, .max_args = MAXIO, .args = {L},
                           .c_call = "loom_reorder(sch, (int[]){%I0}, %nI0)", .apply = apply_reorder},
    [LOOM_INST_POS_SPLIT] = {.name = "PosSplit", .min_args = 2, .max_args = 2, .args = {L, E},
                             .consts = {1, 0, INT32_MAX, "factor", " (0 = the whole row)"}, .attrs = {TENSOR_NAME},
                             .out = {LOOM_OUT_FIXED, LOOM_RV_LOOP, 2},
                             .c_call = "loom_pos_split(sch, %i0, %s, %a0, -1)",
                             .c_call_more = "loom_pos_split(sch, %i0, %s, 0, %i1)", .apply = apply_pos_split},
    [LOOM_INST_PARALLEL] = {.name = "Parallel", .min_args = 1, .max_args = 1, .args = {L},
                            .c_call = "loom_parallel(sch, %i0)", .apply = apply_parallel},
    [LOOM_INST_VECTORIZE] = {.name = "Vectorize", .min_args = 1, .max_args = 1, .args = {L},
                             .c_call = "loom_vectorize(sch, %i0)", .apply = apply_vectorize},
    [LOOM_INST_UNROLL] = {.name = "Unroll", .min_args = 1, .max_args = 1, .args = {L},
                          .attrs = {{LOOM_ATTR_INT, "the unroll factor", 1, 1 << 20, 0}},
                          .c_call = "loom_unroll(sch, %i0, %a0)", .apply = apply_unroll},
    [LOOM_INST_ANNOTATE] = {.name = "Annotate", .min_args = 2, .max_args = 2, .args = {B | L, E},
                            .consts = {1, INT64_MIN, INT64_MAX, "value", NULL},
                            .attrs = {{LOOM_ATTR_KEY, "the annotation key", 0, 0, 0}},
                            .c_call = "loom_annotate(sch, %i0, %s, -1, %a0)",
                            .c_call_more = "loom_annotate(sch, %i0, %s, %i1, 0)", .apply = apply_annotate},
    [LOOM_INST_SAMPLE_PERFECT_TILE] = {.name = "SamplePerfectTile", .is_pure = 1,
                                       .decision = LOOM_DECISION_PER_OUTPUT, .min_args = 1, .max_args = 1,
                                       .args = {L},
                                       .attrs = {{LOOM_ATTR_INT, "n", 1, MAXIO, 0},
                                                 {LOOM_ATTR_INT, "max_innermost", -1, INT32_MAX, 1}},
                                       .out = {LOOM_OUT_ATTR0, LOOM_RV_EXPR, 0},
                                       .c_call = "loom_sample_perfect_tile(sch, %i0, %a0, %a1)",
                                       .apply = apply_sample_perfect_tile},
    [LOOM_INST_SAMPLE_CATEGORICAL] = {.name = "SampleCategorical", .is_pure = 1, .decision = LOOM_DECISION_INDEX,
                                      .attrs = {{LOOM_ATTR_INT_LIST, "a candidate", 0, 0, 0},
                                                {LOOM_ATTR_PROB_LIST, "a probability", 0, 0, 0}},
                                      .out = ONE(LOOM_RV_EXPR),
                                      .c_call = "loom_sample_categorical(sch, %nA, (int64_t[]){%A}, (double[]){%F})",
                                      .apply = apply_sample_categorical},
    [LOOM_INST_SAMPLE_LOOP_ORDER] = {.name = "SampleLoopOrder", .is_pure = 1, .decision = LOOM_DECISION_INDEX,
                                     .min_args = 1, .max_args = 1, .args = {B},
                                     .attrs = {{LOOM_ATTR_INT, "the prior", -1, INT32_MAX, 0},
                                               {LOOM_ATTR_REAL, "the prior weight", 0, 0, 0}},
                                     .out = ONE(LOOM_RV_EXPR), .c_call = "loom_sample_loop_order(sch, %i0, %a0, %f0)",
                                     .apply = apply_sample_loop_order},
    [LOOM_INST_COMPUTE_INLINE] = {.name = "ComputeInline", .min_args = 1, .max_args = 1, .args = {B},
                                  .c_call = "loom_compute_inline(sch, %i0)", .apply = apply_compute_inline},
    /* it samples and places the block: not pure */
    [LOOM_INST_SAMPLE_COMPUTE_LOCATION] = {.name = "SampleComputeLocation", .decision = LOOM_DECISION_INDEX,
                                           .min_args = 1, .max_args = 1, .args = {B}, .out = ONE(LOOM_RV_EXPR),
                                           .c_call = "loom_sample_compute_location(sch, %i0)",
                                           .apply = apply_sample_compute_location},
    [LOOM_INST_COMPUTE_AT] = {.name = "ComputeAt", .min_args = 2, .max_args = 3, .args = {B, L, E},
                              .c_call = "loom_compute_at(sch, %i0, %i1)",
                              .c_call_more = "loom_compute_at_if(sch, %i0, %i1, %i2)", .apply = apply_compute_at},
    [LOOM_INST_CACHE_WRITE] = {.name = "CacheWrite", .min_args = 2, .max_args = 3, .args = {B, L, E},
                               .c_call = "loom_cache_write(sch, %i0, %i1)",
                               .c_call_more = "loom_cache_write_if(sch, %i0, %i1, %i2)", .apply = apply_cache_write},
    [LOOM_INST_RFACTOR] = {.name = "RFactor", .min_args = 1, .max_args = 1, .args = {L},
                           .c_call = "loom_rfactor(sch, %i0)", .apply = apply_rfactor},
    [LOOM_INST_REVERSE_COMPUTE_AT] = {.name = "ReverseComputeAt", .min_args = 2, .max_args = 3, .args = {B, L, E},
                                      .c_call = "loom_reverse_compute_at(sch, %i0, %i1)",
                                      .c_call_more = "loom_reverse_compute_at_if(sch, %i0, %i1, %i2)",
                                      .apply = apply_reverse_compute_at},
    [LOOM_INST_ROLLING_UPDATE] = {.name = "RollingUpdate", .min_args = 2, .max_args = 3, .args = {B, L, E},
                                  .c_call = "loom_rolling_update(sch, %i0, %i1, %i2)", .apply = apply_rolling_update},
    [LOOM_INST_SPLIT_K_UPDATE] = {.name = "SplitKUpdate", .min_args = 3, .max_args = 3, .args = {B, L, E},
                                  .consts = {2, 1, INT32_MAX, "factor", NULL},
                                  .c_call = "loom_split_k_update(sch, %i0, %i1, -1, %a0)",
                                  .c_call_more = "loom_split_k_update(sch, %i0, %i1, %i2, 0)",
                                  .apply = apply_split_k_update},
    /* it constrains the placements of the temporaries: not pure */
    [LOOM_INST_SAMPLE_FUSION_GROUP] = {.name = "SampleFusionGroup", .decision = LOOM_DECISION_INDEX,
                                       .min_args = 1, .max_args = 1, .args = {B}, .out = ONE(LOOM_RV_EXPR),
                                       .c_call = "loom_sample_fusion_group(sch, %i0)",
                                       .apply = apply_sample_fusion_group},
    [LOOM_INST_PACK_PANEL] = {.name = "PackPanel", .min_args = 2, .max_args = 3, .args = {B, L, E},
                              .attrs = {TENSOR_NAME}, .c_call = "loom_pack_panel(sch, %i0, %i1, %s, -1)",
                              .c_call_more = "loom_pack_panel(sch, %i0, %i1, %s, %i2)", .apply = apply_pack_panel},
};

#undef B
#undef L
#undef E
#undef MAXIO
#undef ONE
#undef TENSOR_NAME

/* ---- kinds registered at run time ---------------------------------- */

static loom_inst_kind registered[LOOM_INST_MAX_REGISTERED];
static int nregistered; /* rows [0, nregistered) are complete: read with acquire */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

int loom_inst_kind_count(void)
{
    return LOOM_INST_NBUILTIN + __atomic_load_n(&nregistered, __ATOMIC_ACQUIRE);
}

const loom_inst_kind *loom_inst_kind_at(int k)
{
    if (k >= 0 && k < LOOM_INST_NBUILTIN)
        return &builtin[k];
    if (k >= LOOM_INST_NBUILTIN && k < loom_inst_kind_count())
        return &registered[k - LOOM_INST_NBUILTIN];
    return NULL;
}

int loom_inst_kind_find(const char *name)
{
    if (!name)
        return -1;
    int n = loom_inst_kind_count();
    for (int k = 0; k < n; k++)
        if (strcmp(loom_inst_kind_at(k)->name, name) == 0)
            return k;
    for (int k = 0; k < n; k++) {
        const loom_inst_kind *K = loom_inst_kind_at(k);
        for (int a = 0; a < LOOM_INST_MAX_ALIASES && K->aliases[a]; a++)
            if (strcmp(K->aliases[a], name) == 0)
                return k;
    }
    return -1;
}

int loom_inst_kind_min_inputs(const loom_inst_kind *K)
{
    return K->consts.from > 0 && K->consts.from < K->min_args ? K->consts.from : K->min_args;
}

int loom_inst_kind_arg_mask(const loom_inst_kind *K, int k)
{
    if (k < 0 || k >= K->max_args)
        return 0;
    int last = 0;
    for (int p = 0; p < LOOM_INST_MAX_ARG_SIG && p <= k; p++)
        if (K->args[p])
            last = K->args[p];
    return last;
}

#define BAD_ROW(...) loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, __VA_ARGS__)

static loom_status check_attrs(const loom_inst_kind *K, const char *nm, loom_error *err)
{
    int nint = 0, nstr = 0, end = 0;
    for (int f = 0; f < LOOM_INST_MAX_ATTRS; f++) {
        const loom_attr_field *A = &K->attrs[f];
        if (A->codec == LOOM_ATTR_END) {
            end = 1;
            continue;
        }
        if (end)
            return BAD_ROW("kind %s: attr field %d follows the end of the list", nm, f);
        if (A->codec < LOOM_ATTR_END || A->codec > LOOM_ATTR_PROB_LIST)
            return BAD_ROW("kind %s: attr field %d has no codec %d", nm, f, (int)A->codec);
        if (!A->what)
            return BAD_ROW("kind %s: attr field %d has no description", nm, f);
        if (A->codec == LOOM_ATTR_NAME || A->codec == LOOM_ATTR_KEY)
            nstr++;
        if (A->codec == LOOM_ATTR_INT && (nint++, A->lo > A->hi))
            return BAD_ROW("kind %s: attr field %d has an empty range", nm, f);
        if (A->codec == LOOM_ATTR_INT_LIST && (f > 0 || nint))
            return BAD_ROW("kind %s: an INT_LIST attr must be the first and only integer field", nm);
        if (A->codec == LOOM_ATTR_PROB_LIST && (f == 0 || K->attrs[f - 1].codec != LOOM_ATTR_INT_LIST))
            return BAD_ROW("kind %s: a PROB_LIST attr must follow an INT_LIST", nm);
    }
    if (nstr > 1)
        return BAD_ROW("kind %s: at most one name or key attr (there is one sattr)", nm);
    if (K->consts.from > 0 && (nint || K->attrs[0].codec == LOOM_ATTR_INT_LIST))
        return BAD_ROW("kind %s: constant arguments and integer attrs would share attrs[]", nm);
    return LOOM_OK;
}

loom_status loom_inst_kind_check(const loom_inst_kind *K, loom_error *err)
{
    if (!K || !K->name || !K->name[0] || strlen(K->name) > 63)
        return BAD_ROW("an instruction kind needs a name of 1..63 characters");
    const char *nm = K->name;
    if (!K->apply || !K->c_call)
        return BAD_ROW("kind %s needs an apply function and a C template", nm);
    if (K->min_args < 0 || K->min_args > K->max_args || K->max_args > LOOM_MAX_INST_IO)
        return BAD_ROW("kind %s: arguments %d..%d are not within 0..%d", nm, K->min_args, K->max_args,
                       LOOM_MAX_INST_IO);
    if (K->max_args > 0 && !K->args[0])
        return BAD_ROW("kind %s: argument 0 has no kind mask", nm);
    for (int p = 0; p < LOOM_INST_MAX_ARG_SIG; p++)
        if (K->args[p] & ~(LOOM_ARG_BLOCK | LOOM_ARG_LOOP | LOOM_ARG_EXPR))
            return BAD_ROW("kind %s: argument %d has an unknown kind mask %d", nm, p, K->args[p]);
    if (K->consts.from < 0 || (K->consts.from > 0 && (K->consts.from >= K->max_args || !K->consts.what ||
                                                      K->consts.lo > K->consts.hi)))
        return BAD_ROW("kind %s: constant arguments from %d need a position below %d, a description and a range",
                       nm, K->consts.from, K->max_args);
    loom_status st = check_attrs(K, nm, err);
    if (st)
        return st;
    const loom_out_sig *O = &K->out;
    if (O->rule < LOOM_OUT_NONE || O->rule > LOOM_OUT_ATTR0 || (O->rule != LOOM_OUT_NONE &&
                                                               (O->kind < LOOM_RV_BLOCK || O->kind > LOOM_RV_EXPR)))
        return BAD_ROW("kind %s: output rule %d of RV kind %d", nm, (int)O->rule, (int)O->kind);
    if (O->rule == LOOM_OUT_FIXED && (O->n < 1 || O->n > LOOM_MAX_INST_IO))
        return BAD_ROW("kind %s: a fixed output count must be 1..%d, got %d", nm, LOOM_MAX_INST_IO, O->n);
    if (O->rule == LOOM_OUT_PER_ARG && K->max_args < 2)
        return BAD_ROW("kind %s: one output per argument needs arguments past the first", nm);
    if (O->rule == LOOM_OUT_ATTR0 && K->attrs[0].codec != LOOM_ATTR_INT)
        return BAD_ROW("kind %s: an output count from attrs[0] needs an integer first attr", nm);
    if (K->decision < LOOM_DECISION_NONE || K->decision > LOOM_DECISION_PER_OUTPUT ||
        (K->decision != LOOM_DECISION_NONE && O->rule == LOOM_OUT_NONE))
        return BAD_ROW("kind %s: a decision (kind %d) needs outputs", nm, (int)K->decision);
    return LOOM_OK;
}

static int name_taken(const char *name)
{
    return name && loom_inst_kind_find(name) >= 0;
}

loom_status loom_inst_kind_register(const loom_inst_kind *K, int *kind, loom_error *err)
{
    loom_status st = loom_inst_kind_check(K, err);
    if (st)
        return st;
    pthread_mutex_lock(&reg_lock);
    int n = nregistered;
    if (n >= LOOM_INST_MAX_REGISTERED)
        st = BAD_ROW("cannot register kind %s: %d kinds are registered already (LOOM_INST_MAX_REGISTERED)", K->name,
                     n);
    else if (name_taken(K->name))
        st = BAD_ROW("cannot register kind %s: the name is a kind's name or alias already", K->name);
    for (int a = 0; !st && a < LOOM_INST_MAX_ALIASES; a++)
        if (name_taken(K->aliases[a]) || (K->aliases[a] && !strcmp(K->aliases[a], K->name)))
            st = BAD_ROW("cannot register kind %s: its alias %s is taken", K->name, K->aliases[a]);
    if (!st) {
        registered[n] = *K;
        __atomic_store_n(&nregistered, n + 1, __ATOMIC_RELEASE);
        *kind = LOOM_INST_NBUILTIN + n;
    }
    pthread_mutex_unlock(&reg_lock);
    return st;
}

int loom_inst_kind_is_sampler(int k)
{
    const loom_inst_kind *K = loom_inst_kind_at(k);
    return K && K->decision != LOOM_DECISION_NONE;
}
