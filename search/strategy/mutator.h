/* loom: mutators -- how search proposes a neighbour of a measured or
 * promising trace by changing one decision (DESIGN.md "Search";
 * MetaSchedule, src/meta_schedule/mutator/: MutateTileSize,
 * MutateComputeLocation, MutateUnroll, MutateParallel).
 *
 * A mutator reads a trace, picks one sampling instruction of its kind and
 * proposes a new decision for it.  The trace is then replayed with that
 * decision (replay repairs what no longer fits, the MetaSchedule way) and
 * the validator checks the result: the child is kept only if both pass.
 *
 * Kinds and what they change:
 *   tile-size        SamplePerfectTile with >= 2 tiles: move a divisor d > 1
 *                    of tile x to tile y (MetaSchedule's MutateTileSize);
 *                    y innermost only while d * tiles[y] <= max_innermost.
 *                    For a data-dependent extent (tiles are powers of two,
 *                    the outermost inferred = 0) an inner tile is doubled or
 *                    halved within 1..max_innermost.
 *   categorical      SampleCategorical whose value is not an unroll or
 *                    parallel annotation: another index, drawn with the
 *                    remaining probabilities (MetaSchedule's rule for
 *                    categorical decisions).
 *   compute-location SampleComputeLocation: another of the locations legal
 *                    at that point of the trace (MutateComputeLocation).
 *   loop-order       SampleLoopOrder: another legal order, uniformly (loom's
 *                    own: AutoSparse-style loop-order search).
 *   parallel         SampleCategorical feeding Annotate(key "parallel...")
 *                    (MutateParallel's role: how many outer loops run in
 *                    parallel).
 *   unroll           SampleCategorical feeding Annotate(key "unroll...")
 *                    (MutateUnroll).
 *
 * Default weights on a CPU target are MetaSchedule's LLVM ones (tile size
 * 0.9, compute location 0.05, unroll 0.03, parallel 0.02) with 0.05 each
 * for the two kinds MetaSchedule lacks (categorical, loop order), then
 * normalised over the kinds the trace has.
 */
#ifndef LOOM_MUTATOR_H
#define LOOM_MUTATOR_H

#include <gsl/gsl_rng.h>

#include "../../traces/trace.h"
#include "../../traces/validate.h"

typedef enum loom_mutator_kind {
    LOOM_MUTATE_TILE_SIZE = 0,
    LOOM_MUTATE_CATEGORICAL,
    LOOM_MUTATE_COMPUTE_LOCATION,
    LOOM_MUTATE_LOOP_ORDER,
    LOOM_MUTATE_PARALLEL,
    LOOM_MUTATE_UNROLL,
    LOOM_MUTATOR_COUNT
} loom_mutator_kind;

/* Stable names: "tile-size", "categorical", "compute-location",
 * "loop-order", "parallel", "unroll"; NULL out of range. */
const char *loom_mutator_name(loom_mutator_kind k);

#define LOOM_MUTATOR_PIN_WORDS 4
typedef struct loom_mutator_weights {
    double w[LOOM_MUTATOR_COUNT];   /* relative; 0 disables a kind */
    /* Pinned samplers (`loom tune --pin`, search/navigate/navigate.h): bit j set =
     * the j-th sampling instruction of a trace (its sampler ordinal) is never
     * mutated, and a mutant whose replay changed its decision is rejected
     * (invalid, rule "pinned").  All 0 (the defaults): none. */
    uint64_t pinned[LOOM_MUTATOR_PIN_WORDS];
} loom_mutator_weights;

/* The default weights for a target kind ("cpu" or "sim"; NULL = "cpu";
 * both use the CPU weights above). */
loom_mutator_weights loom_mutator_defaults(const char *target_kind);

/* The kind of mutator that can change instruction i of t, or -1 when i is
 * not a sampling instruction any mutator handles. */
int loom_mutator_kind_of(const loom_trace *t, int i);

/* Propose a new decision for one instruction of kind `kind` in t (chosen
 * uniformly among the eligible ones, retried a few times when the chosen
 * one has no alternative).  prog is the trace's bound program (needed to
 * replay the prefix for compute-location and loop-order); scratch is a
 * schedule the function may overwrite.  On success *inst receives the
 * instruction index and *dec the new decision (dec->n > 0), which differs
 * from the recorded one.  Errors: LOOM_ERR_INVALID "no <kind> decision to
 * mutate" (the trace has no eligible instruction, or none with an
 * alternative), or a prefix replay failure. */
loom_status loom_mutate_propose(const loom_trace *t, const loom_program *prog, loom_mutator_kind kind,
                                gsl_rng *rng, loom_schedule *scratch, int *inst, loom_decision *dec,
                                loom_error *err);

/* What loom_mutate_trace did. */
typedef struct loom_mutation {
    loom_mutator_kind kind;   /* the mutator used */
    int inst;                 /* the instruction changed */
    int replay_failed;        /* 1: the mutant did not replay (err says why) */
    int invalid;              /* 1: replayed, but the validator rejected it */
    loom_violation violation; /* when invalid */
} loom_mutation;

/* One mutation step: choose a mutator kind by weight among those t has an
 * eligible instruction for, propose, replay the mutated trace on `out_sch`
 * (re-initialised here for prog, recording into `out`, which is cleared
 * first) and validate it with `lim`.  Returns LOOM_OK when the child is
 * valid (out and out_sch hold it).  Otherwise info says what happened and
 * the status is LOOM_ERR_INVALID (no mutator applies, the mutant did not
 * replay, or it is invalid: the message names the mutator, the instruction
 * and the reason or validator rule).  scratch is overwritten. */
loom_status loom_mutate_trace(const loom_trace *t, const loom_program *prog, const loom_mutator_weights *w,
                              const loom_limits *lim, gsl_rng *rng, loom_schedule *scratch, loom_trace *out,
                              loom_schedule *out_sch, loom_mutation *info, loom_error *err);

/* Uniform crossover of two traces of one design space (a genetic operator
 * MetaSchedule does not have; Holland, "Adaptation in Natural and
 * Artificial Systems", 1975; Syswerda, "Uniform crossover in genetic
 * algorithms", ICGA 1989): the child is a replayed with, at every sampling
 * instruction where a and b hold the same sampler (same index, kind,
 * candidates and decision length) with different decisions, b's decision
 * taken with probability 1/2 -- at least one from each parent, so the
 * child is neither.  Pinned samplers of w keep a's decision; w's kind
 * weights are not used.  Replay repairs what no longer fits and the
 * validator checks the child, as in loom_mutate_trace (out, out_sch,
 * scratch-free).  *ntaken receives the number of decisions taken from b.
 * Errors: LOOM_ERR_INVALID "crossover: the parents differ in N decisions"
 * (N < 2: the child would be a parent), or the child did not replay or is
 * invalid (info says which, as in loom_mutate_trace; info->kind is 0);
 * LOOM_ERR_NOMEM. */
loom_status loom_crossover_trace(const loom_trace *a, const loom_trace *b, const loom_program *prog,
                                 const loom_mutator_weights *w, const loom_limits *lim, gsl_rng *rng,
                                 loom_trace *out, loom_schedule *out_sch, loom_mutation *info, int *ntaken,
                                 loom_error *err);

/* The child of t with the decision overrides decs (t->ninsts entries, as
 * loom_trace_replay takes them; NULL: none): replayed into out / out_sch
 * (re-initialised for prog) and checked as loom_mutate_trace checks a
 * mutant -- the recording, w's pins, the validator with lim.  what names
 * the change in messages ("local-model step"; NULL: "child").  Errors: as
 * loom_mutate_trace (info->replay_failed or info->invalid says which). */
loom_status loom_replay_child(const loom_trace *t, const loom_decision *decs, const loom_program *prog,
                              const loom_mutator_weights *w, const loom_limits *lim, const char *what, loom_trace *out,
                              loom_schedule *out_sch, loom_mutation *info, loom_error *err);

#endif
