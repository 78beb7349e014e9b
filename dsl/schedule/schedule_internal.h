/* Private helpers shared by dsl/schedule/schedule.c, dsl/schedule/sample.c and dsl/schedule/inst.c. */
#ifndef LOOM_SCHEDULE_INTERNAL_H
#define LOOM_SCHEDULE_INTERNAL_H

#include "schedule.h"

/* Append an RV; returns its index or -1 (err filled: too many RVs). */
int loom__new_rv(loom_schedule *sch, loom_rv_kind kind, int stage, int iter, int64_t value, loom_error *err);

/* Resolve a LoopRV to its stage and current loop position.  Errors: not a
 * LoopRV, or its loop no longer exists (split or fused away). */
loom_status loom__loop_pos(const loom_schedule *sch, int loop_rv, int *stage, int *pos, loom_error *err);

/* Resolve a BlockRV to its stage. */
loom_status loom__block_stage(const loom_schedule *sch, int block_rv, int *stage, loom_error *err);

/* Resolve an ExprRV to its value. */
loom_status loom__expr_value(const loom_schedule *sch, int expr_rv, int64_t *value, loom_error *err);

/* The default loop order of statement s (DESIGN.md / lower.h): index
 * variables in the order they first appear on the right-hand side (lhs-only
 * ones last), moved as little as needed to make every sparse operand
 * concordant (stable topological order).  order[] receives program var ids.
 * Errors: LOOM_ERR_SEMANTIC `discordant-traversal` for cyclic level orders. */
loom_status loom__default_order(const loom_program *prog, int s, int *order, int *n, loom_error *err);

/* 1 if the access of tensor t with indices idx has a compressed level
 * indexed by v. */
int loom__access_compressed_at(const loom_program *prog, int t, const int *idx, int v);

/* The candidate locations of stage s (loom_compute_location_candidates)
 * before a fusion group narrows them. */
int loom__location_candidates(const loom_schedule *sch, int s, int64_t *cand);

/* Count a sampler call (sch->nsampled) and, when `decision` is NULL, ask
 * the decision hook (schedule.h loom_decider_fn) with the sampler's kind,
 * its input RV (-1: none) and attrs / fattrs (either may be NULL).
 * Returns `decision`, buf when the hook decided, or NULL (draw). */
const int64_t *loom__ask_decider(loom_schedule *sch, const int64_t *decision, int kind, int input,
                                 const int64_t *attrs, const double *fattrs, int nattrs, int64_t *buf);

#endif
