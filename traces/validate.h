/* loom: the trace validator -- whole-schedule legality after replay
 * (DESIGN.md "The validator"; MetaSchedule's postprocessor checks, TACO's
 * preconditions, see shared/research/sparse.md "What TACO does not check").
 *
 * Replay already checks each primitive's own preconditions; the validator
 * then checks the schedule as a whole and returns the first violated rule,
 * in this order, with the stage and loop where it is:
 *
 *   discordant-traversal   a compressed or range level of an operand is
 *                          iterated by a loop outside the loops of its
 *                          parent level's index (random access into
 *                          compressed storage)
 *   pos-order              the inner loop of a position split is outside its
 *                          outer loop
 *   pos-whole-row-outer    the outer loop of a whole-row position split
 *                          (chunk 0: one iteration per row) has a kind or an
 *                          annotation (nothing for it to act on)
 *   parallel-reduction     a parallel loop derives from a reduced index (a
 *                          race on the output), unless it is the block's
 *                          rfactor loop (each iteration has its own partial)
 *   parallel-coiteration   a parallel loop must merge several sparse
 *                          patterns (a while loop, not a for)
 *   nested-parallel        a parallel loop inside another parallel loop of
 *                          the same block (more threads than cores)
 *   vectorize-not-innermost  a vectorized loop that is not the innermost
 *   vectorize-dynamic-extent a vectorized loop whose extent is not constant
 *   vectorize-too-wide     a vectorized loop longer than the target's limit
 *                          (lanes x max_vector_factor)
 *   vectorize-carried-reduction  a vectorized reduced loop whose statement
 *                          reduces through memory (some free loop is inside
 *                          a reduction loop), not into a scalar accumulator
 *   compute-at-lost        a block placed at a loop that no longer exists
 *   producer-coverage      a block computed one slice at a time inside a loop
 *                          is read by a block outside that loop (it would see
 *                          only the last slice)
 *   compute-at-accumulates a placed block that reduces through memory (its
 *                          recomputed slices would add up)
 *   compute-at-race        a placed block inside a parallel loop that does not
 *                          index it (every thread writes the same slice)
 *   cache-write-partial    a workspace loop that is itself a reduction loop,
 *                          or that no longer exists (a reduction loop outside
 *                          it is fine: the copy-out accumulates)
 *   workspace-too-large    a workspace larger than the target allows, or of
 *                          data-dependent size
 *   cache-write-split      an output index iterated both outside and inside
 *                          the workspace loop, but not as the innermost tiles
 *                          of one split (the lowering cannot index that
 *                          workspace; checked before workspace-too-large)
 *   reverse-coverage       a consumer computed inside its producer's loop
 *                          where the producer's slice is not complete, or that
 *                          reads what is computed later, or whose reduction
 *                          index the location fixes, or that fuses or splits
 *                          a loop whose index the location fixes (a fixed
 *                          loop is not emitted, so its kind -- parallel --
 *                          does not count for nested-parallel)
 *   rolling-update         a block rolled into a loop (RollingUpdate) whose
 *                          loop is no longer its source's innermost unsplit
 *                          reduction loop at the root, or whose correction
 *                          no longer holds (a block it reads or divides by
 *                          was moved since)
 *   balance-rows           a "balance" annotation (balanced row partition)
 *                          on a loop that is not the parallel outermost row
 *                          loop of a CSR-like operand at the root
 *   register-tile          a loop annotated with a vector shape
 *                          (vector_lanes, vector_registers: the fused
 *                          lowering's register tiles) wider or with more
 *                          registers than the target's (it would spill)
 *   fusion-group           a schedule that breaks its SampleFusionGroup: the
 *                          producer of a fused edge not inside its consumer
 *                          (inlined or at one of its loops), or the producer
 *                          of an unfused edge not at the root
 *   prefetch-gather        a "prefetch" annotation on a loop that is not a
 *                          serial loop over the positions of a compressed
 *                          last level gathering rows of a dense input
 *                          (loom_prefetch_tensor), or in an inlined or
 *                          rolled block
 *   partial-sums           a "partial_sums" annotation on a loop that is not
 *                          the innermost, vectorized reduction loop of
 *                          constant extent (<= LOOM_MAX_PARTIAL_SUMS) of a
 *                          block accumulating each output element in a
 *                          scalar (loom_partial_sums_ok)
 *   stream-store           a "stream" annotation (non-temporal copy-out)
 *                          on a loop that is not the loop of the block's
 *                          CacheWrite workspace, or with a reduction loop
 *                          outside that loop (the copy-out adds partials:
 *                          each output element written more than once), or
 *                          on an inlined, rolled or non-root block
 *
 * Rule names are stable: messages start with them, and tests and the search
 * count invalid candidates by them.
 */
#ifndef LOOM_VALIDATE_H
#define LOOM_VALIDATE_H

#include "../dsl/ir/limits.h" /* loom_limits, loom_limits_host */
#include "../dsl/schedule/schedule.h"

typedef struct loom_violation {
    char rule[32];   /* one of the rule names above */
    int stage;       /* the block's stage, -1 if none */
    int loop;        /* position of the loop in the stage, -1 if none */
    char msg[512];   /* "rule: what is wrong where, and what to do" */
} loom_violation;

/* Check sch.  Returns LOOM_OK when every rule holds, else
 * LOOM_ERR_SEMANTIC with *v (and err, when not NULL: same message) filled
 * for the first violation.  lim may be NULL for loom_limits_host(). */
loom_status loom_validate(const loom_schedule *sch, const loom_limits *lim, loom_violation *v, loom_error *err);

/* The rules of one stage s only (its fusion group, its loops, its
 * placement), as loom_validate checks them for s: LOOM_OK or
 * LOOM_ERR_SEMANTIC with *v filled.  For a module that asks whether a
 * change of one block is legal while other blocks are not scheduled yet
 * (modules/reverse_location.c). */
loom_status loom_validate_stage(const loom_schedule *sch, int s, const loom_limits *lim, loom_violation *v,
                                loom_error *err);

/* The rule names, in checking order; *n receives the count. */
const char *const *loom_validator_rules(int *n);

#endif
