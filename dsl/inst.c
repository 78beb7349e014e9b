/* The instruction registry (schedule.h, DESIGN.md "Instructions"): one row
 * per instruction kind with its stable name, whether it is pure (getters and
 * samplers: removing one alone does not change the schedule), whether it
 * carries a decision (the samplers), and `apply`, which re-executes a
 * recorded instruction on a schedule (replay).
 *
 * The recording contract.  Every primitive that succeeds on a schedule with
 * a recorder calls it with a loom_inst laid out as below (RV = index into
 * the RV table of the schedule the primitive ran on).  `apply` takes an
 * instruction in exactly this layout, with its inputs already translated to
 * RV indices of the schedule it is applied to (traces/trace.c keeps the map
 * from trace RVs to schedule RVs), and writes the new RVs to `outputs`.
 *
 *   kind               inputs                  attrs / fattrs / sattr              outputs      decision
 *   GetBlock           -                       sattr = tensor name                 [b]          -
 *   GetLoops           [b]                     -                                   [l...]       -
 *   GetProducers       [b]                     -                                   [b...]       -
 *   GetConsumers       [b]                     -                                   [b...]       -
 *   Split              [l, v...] or [l]        [factors...] when constant          [l...]       -
 *   Fuse               [l, l...]               -                                   [l]          -
 *   Reorder            [l...]                  -                                   -            -
 *   PosSplit           [l] or [l, v]           sattr = tensor; [factor] if const   [l, l]       -
 *   Parallel           [l]                     -                                   -            -
 *   Vectorize          [l]                     -                                   -            -
 *   Unroll             [l]                     [factor]                            -            -
 *   Annotate           [b|l] or [b|l, v]       sattr = key; [value] if constant    -            -
 *   SamplePerfectTile  [l]                     [n, max_innermost]                  [v...n]      n tiles
 *   SampleCategorical  -                       candidates; fattrs = probs          [v]          [index]
 *   SampleLoopOrder    [b]                     [prior]; fattrs = [prior_weight]    [v]          [index]
 *   ComputeInline      [b]                     -                                   -            -
 *   ComputeAt          [b, l] or [b, l, v]     -  (v = 0: recorded, no change)      -            -
 *   CacheWrite, ReverseComputeAt  [b, l]       -                                   -            -
 *   RFactor            [l]                     -                                   -            -
 *   RollingUpdate      [b, l] or [b, l, v]     -                                   -            -
 *   SplitKUpdate       [b, l, v] or [b, l]     [factor] when constant                  -            -
 *
 * For every sampler the decision has as many entries as the instruction has
 * outputs.  apply() uses inst->decision when inst->ndecision > 0 (repaired
 * where the sampler repairs) and draws a fresh one with sch->rng otherwise;
 * the decision used is written to decision_out (LOOM_MAX_INST_IO entries),
 * when not NULL.  `outputs` must hold LOOM_MAX_LOOPS entries (GetLoops may
 * return more loops than a recorded instruction keeps).
 *
 * Names are stable and never reused; a renamed kind keeps its old name in
 * the alias table so old traces and databases still load.
 */
#include <stdio.h>
#include <string.h>

#include "schedule.h"

/* ---- argument checks ------------------------------------------------- */

static loom_status arity(const loom_inst *inst, const char *name, int min_in, int max_in, int min_attrs,
                         int max_attrs, loom_error *err)
{
    if (inst->ninputs < min_in || inst->ninputs > max_in || inst->ninputs > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s takes %d..%d inputs, got %d", name, min_in,
                              max_in, inst->ninputs);
    if (inst->nattrs < min_attrs || inst->nattrs > max_attrs || inst->nattrs > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s takes %d..%d attrs, got %d", name, min_attrs,
                              max_attrs, inst->nattrs);
    if (inst->ndecision < 0 || inst->ndecision > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s: decision with %d entries", name,
                              inst->ndecision);
    return LOOM_OK;
}

static int has_sattr(const loom_inst *inst)
{
    return memchr(inst->sattr, '\0', sizeof inst->sattr) != NULL && inst->sattr[0] != '\0';
}

/* ---- getters --------------------------------------------------------- */

static loom_status apply_get_block(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                   int *noutputs, loom_error *err)
{
    (void)decision_out;
    loom_status st = arity(inst, "GetBlock", 0, 0, 0, 0, err);
    if (st)
        return st;
    if (!has_sattr(inst))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "GetBlock needs a tensor name");
    st = loom_get_block(sch, inst->sattr, &outputs[0], err);
    *noutputs = st ? 0 : 1;
    return st;
}

static loom_status apply_get_loops(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                   int *noutputs, loom_error *err)
{
    (void)decision_out;
    loom_status st = arity(inst, "GetLoops", 1, 1, 0, 0, err);
    if (st)
        return st;
    *noutputs = 0;
    return loom_get_loops(sch, inst->inputs[0], outputs, noutputs, err);
}

static loom_status apply_get_producers(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                       int *outputs, int *noutputs, loom_error *err)
{
    (void)decision_out;
    loom_status st = arity(inst, "GetProducers", 1, 1, 0, 0, err);
    if (st)
        return st;
    *noutputs = 0;
    return loom_get_producers(sch, inst->inputs[0], outputs, noutputs, err);
}

static loom_status apply_get_consumers(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                       int *outputs, int *noutputs, loom_error *err)
{
    (void)decision_out;
    loom_status st = arity(inst, "GetConsumers", 1, 1, 0, 0, err);
    if (st)
        return st;
    *noutputs = 0;
    return loom_get_consumers(sch, inst->inputs[0], outputs, noutputs, err);
}

/* ---- loop transformations -------------------------------------------- */

static loom_status apply_split(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                               int *noutputs, loom_error *err)
{
    (void)decision_out;
    loom_status st = arity(inst, "Split", 1, LOOM_MAX_INST_IO, 0, LOOM_MAX_INST_IO - 1, err);
    if (st)
        return st;
    int n;
    if (inst->ninputs > 1) {
        if (inst->nattrs != 0)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "Split takes its factors either as integer RVs or as constant attrs, not both");
        n = inst->ninputs - 1;
        st = loom_split(sch, inst->inputs[0], n, &inst->inputs[1], NULL, outputs, err);
    } else {
        n = inst->nattrs;
        if (n < 2)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "Split needs at least 2 factors, got %d", n);
        st = loom_split(sch, inst->inputs[0], n, NULL, inst->attrs, outputs, err);
    }
    *noutputs = st ? 0 : n;
    return st;
}

static loom_status apply_fuse(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                              int *noutputs, loom_error *err)
{
    (void)decision_out;
    loom_status st = arity(inst, "Fuse", 2, LOOM_MAX_INST_IO, 0, 0, err);
    if (st)
        return st;
    st = loom_fuse(sch, inst->inputs, inst->ninputs, &outputs[0], err);
    *noutputs = st ? 0 : 1;
    return st;
}

static loom_status apply_reorder(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                 int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "Reorder", 1, LOOM_MAX_INST_IO, 0, 0, err);
    if (st)
        return st;
    return loom_reorder(sch, inst->inputs, inst->ninputs, err);
}

static loom_status apply_pos_split(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                   int *noutputs, loom_error *err)
{
    (void)decision_out;
    *noutputs = 0;
    loom_status st = arity(inst, "PosSplit", 1, 2, 0, 1, err);
    if (st)
        return st;
    if (!has_sattr(inst))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "PosSplit needs a tensor name");
    if ((inst->ninputs == 2) == (inst->nattrs == 1))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "PosSplit takes its factor either as an integer RV input or as a constant attr");
    int factor_rv = inst->ninputs == 2 ? inst->inputs[1] : -1;
    int64_t factor = inst->nattrs == 1 ? inst->attrs[0] : 0;
    st = loom_pos_split(sch, inst->inputs[0], inst->sattr, factor, factor_rv, outputs, err);
    *noutputs = st ? 0 : 2;
    return st;
}

/* ---- loop kinds and annotations --------------------------------------- */

static loom_status apply_parallel(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                  int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "Parallel", 1, 1, 0, 0, err);
    return st ? st : loom_parallel(sch, inst->inputs[0], err);
}

static loom_status apply_vectorize(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                   int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "Vectorize", 1, 1, 0, 0, err);
    return st ? st : loom_vectorize(sch, inst->inputs[0], err);
}

static loom_status apply_unroll(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "Unroll", 1, 1, 1, 1, err);
    if (st)
        return st;
    if (inst->attrs[0] < 1 || inst->attrs[0] > 1 << 20)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "unroll factor %lld must be 1..%d",
                              (long long)inst->attrs[0], 1 << 20);
    return loom_unroll(sch, inst->inputs[0], (int)inst->attrs[0], err);
}

static loom_status apply_annotate(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                  int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "Annotate", 1, 2, 0, 1, err);
    if (st)
        return st;
    if (!has_sattr(inst))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "Annotate needs a key");
    if ((inst->ninputs == 2) == (inst->nattrs == 1))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "Annotate takes its value either as an integer RV input or as a constant attr");
    int value_rv = inst->ninputs == 2 ? inst->inputs[1] : -1;
    int64_t value = inst->nattrs == 1 ? inst->attrs[0] : 0;
    return loom_annotate(sch, inst->inputs[0], inst->sattr, value_rv, value, err);
}

/* ---- samplers ------------------------------------------------------- */

static loom_status apply_sample_perfect_tile(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                             int *outputs, int *noutputs, loom_error *err)
{
    *noutputs = 0;
    loom_status st = arity(inst, "SamplePerfectTile", 1, 1, 2, 2, err);
    if (st)
        return st;
    int64_t n = inst->attrs[0], maxi = inst->attrs[1];
    if (n < 1 || n > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "SamplePerfectTile: n = %lld is not in 1..%d",
                              (long long)n, LOOM_MAX_INST_IO);
    if (maxi < -1 || maxi == 0 || maxi > INT32_MAX)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SamplePerfectTile: max_innermost = %lld must be -1 (no limit) or positive",
                              (long long)maxi);
    if (inst->ndecision != 0 && inst->ndecision != n)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SamplePerfectTile: the decision has %d tiles, expected n = %lld", inst->ndecision,
                              (long long)n);
    int64_t used[LOOM_MAX_INST_IO];
    st = loom_sample_perfect_tile(sch, inst->inputs[0], (int)n, (int)maxi, inst->ndecision ? inst->decision : NULL,
                                  used, outputs, err);
    if (st)
        return st;
    if (decision_out)
        memcpy(decision_out, used, sizeof(int64_t) * (size_t)n);
    *noutputs = (int)n;
    return LOOM_OK;
}

static loom_status apply_sample_categorical(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                            int *outputs, int *noutputs, loom_error *err)
{
    *noutputs = 0;
    loom_status st = arity(inst, "SampleCategorical", 0, 0, 1, LOOM_MAX_INST_IO, err);
    if (st)
        return st;
    if (inst->ndecision > 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SampleCategorical: the decision is one index, got %d entries", inst->ndecision);
    int64_t used = 0;
    st = loom_sample_categorical(sch, inst->nattrs, inst->attrs, inst->fattrs,
                                 inst->ndecision ? inst->decision : NULL, &used, &outputs[0], err);
    if (st)
        return st;
    if (decision_out)
        decision_out[0] = used;
    *noutputs = 1;
    return LOOM_OK;
}

static loom_status apply_sample_loop_order(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                           int *outputs, int *noutputs, loom_error *err)
{
    *noutputs = 0;
    /* attrs [prior]; a second attr (an integer rendering of the weight
     * some recorders add) is ignored: the weight is fattrs[0] */
    loom_status st = arity(inst, "SampleLoopOrder", 1, 1, 1, 2, err);
    if (st)
        return st;
    if (inst->ndecision > 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SampleLoopOrder: the decision is one index, got %d entries", inst->ndecision);
    if (inst->attrs[0] < -1 || inst->attrs[0] > INT32_MAX)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "SampleLoopOrder: prior %lld out of range",
                              (long long)inst->attrs[0]);
    int64_t used = 0;
    st = loom_sample_loop_order(sch, inst->inputs[0], (int)inst->attrs[0], inst->fattrs[0],
                                inst->ndecision ? inst->decision : NULL, &used, &outputs[0], err);
    if (st)
        return st;
    if (decision_out)
        decision_out[0] = used;
    *noutputs = 1;
    return LOOM_OK;
}

static loom_status apply_compute_inline(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                        int *outputs, int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "ComputeInline", 1, 1, 0, 0, err);
    return st ? st : loom_compute_inline(sch, inst->inputs[0], err);
}

static loom_status apply_sample_compute_location(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                                 int *outputs, int *noutputs, loom_error *err)
{
    *noutputs = 0;
    loom_status st = arity(inst, "SampleComputeLocation", 1, 1, 0, 0, err);
    if (st)
        return st;
    if (inst->ndecision > 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SampleComputeLocation: the decision is one location, got %d entries", inst->ndecision);
    int64_t used = 0;
    st = loom_sample_compute_location(sch, inst->inputs[0], inst->ndecision ? inst->decision : NULL, &used,
                                      &outputs[0], err);
    if (st)
        return st;
    if (decision_out)
        decision_out[0] = used;
    *noutputs = 1;
    return LOOM_OK;
}

static loom_status apply_compute_at(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                    int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "ComputeAt", 2, 3, 0, 0, err);
    return st ? st
              : loom_compute_at_if(sch, inst->inputs[0], inst->inputs[1], inst->ninputs == 3 ? inst->inputs[2] : -1,
                                   err);
}

static loom_status apply_cache_write(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                     int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "CacheWrite", 2, 2, 0, 0, err);
    return st ? st : loom_cache_write(sch, inst->inputs[0], inst->inputs[1], err);
}

static loom_status apply_rfactor(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                                 int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "RFactor", 1, 1, 0, 0, err);
    return st ? st : loom_rfactor(sch, inst->inputs[0], err);
}

static loom_status apply_reverse_compute_at(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                            int *outputs, int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "ReverseComputeAt", 2, 2, 0, 0, err);
    return st ? st : loom_reverse_compute_at(sch, inst->inputs[0], inst->inputs[1], err);
}

static loom_status apply_rolling_update(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                        int *outputs, int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "RollingUpdate", 2, 3, 0, 0, err);
    return st ? st
              : loom_rolling_update(sch, inst->inputs[0], inst->inputs[1], inst->ninputs == 3 ? inst->inputs[2] : -1,
                                    err);
}

static loom_status apply_split_k_update(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                        int *outputs, int *noutputs, loom_error *err)
{
    (void)decision_out;
    (void)outputs;
    *noutputs = 0;
    loom_status st = arity(inst, "SplitKUpdate", 2, 3, 0, 1, err);
    if (st)
        return st;
    if ((inst->ninputs == 3) == (inst->nattrs == 1))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SplitKUpdate takes its factor either as an integer RV input or as a constant attr");
    return loom_split_k_update(sch, inst->inputs[0], inst->inputs[1], inst->ninputs == 3 ? inst->inputs[2] : -1,
                               inst->nattrs ? inst->attrs[0] : 0, err);
}

/* ---- the table ------------------------------------------------------- */

static const loom_inst_kind kinds[] = {
    {"GetBlock", 1, 0, apply_get_block},
    {"GetLoops", 1, 0, apply_get_loops},
    {"GetProducers", 1, 0, apply_get_producers},
    {"GetConsumers", 1, 0, apply_get_consumers},
    {"Split", 0, 0, apply_split},
    {"Fuse", 0, 0, apply_fuse},
    {"Reorder", 0, 0, apply_reorder},
    {"PosSplit", 0, 0, apply_pos_split},
    {"Parallel", 0, 0, apply_parallel},
    {"Vectorize", 0, 0, apply_vectorize},
    {"Unroll", 0, 0, apply_unroll},
    {"Annotate", 0, 0, apply_annotate},
    {"SamplePerfectTile", 1, 1, apply_sample_perfect_tile},
    {"SampleCategorical", 1, 1, apply_sample_categorical},
    {"SampleLoopOrder", 1, 1, apply_sample_loop_order},
    {"ComputeInline", 0, 0, apply_compute_inline},
    {"SampleComputeLocation", 0, 1, apply_sample_compute_location},
    {"ComputeAt", 0, 0, apply_compute_at},
    {"CacheWrite", 0, 0, apply_cache_write},
    {"RFactor", 0, 0, apply_rfactor},
    {"ReverseComputeAt", 0, 0, apply_reverse_compute_at},
    {"RollingUpdate", 0, 0, apply_rolling_update},
    {"SplitKUpdate", 0, 0, apply_split_k_update},
};

/* Old name -> current name (TVM renamed GetBlock to GetSBlock in #18689;
 * loom keeps MetaSchedule's original spelling and accepts the new one). */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"GetSBlock", "GetBlock"},
};

#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

int loom_inst_kind_count(void)
{
    return NKINDS;
}

const loom_inst_kind *loom_inst_kind_at(int k)
{
    return k >= 0 && k < NKINDS ? &kinds[k] : NULL;
}

int loom_inst_kind_find(const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k < NKINDS; k++)
        if (strcmp(kinds[k].name, name) == 0)
            return k;
    for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++)
        if (strcmp(aliases[a].alias, name) == 0)
            return loom_inst_kind_find(aliases[a].name);
    return -1;
}
