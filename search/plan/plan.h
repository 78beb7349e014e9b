/* loom: fusion plans -- AutoSparse's interface on loom's compiler (issue 16;
 * docs/plans.md).
 *
 * Source: Lacouture et al., "LLM-Guided Autoscheduling for Large-Scale
 * Sparse Machine Learning" (AutoSparse, 2025): a plan is a partition of the
 * operators into fusion groups, each with a dataflow (loop) order; the
 * compiler enumerates the legal groups and orders, estimates FLOPs and
 * bytes from the shapes and the sparsity, classifies each against the
 * machine balance, and validates and scores plans handed in from outside
 * (an LLM, a person, another search) in the JSON schema
 *     {"fusion_groups": [{"name": "G1", "ops": ["Z1", "H1"],
 *                         "dataflow_order": ["i", "f", "j"]}, ...]}
 * (one plan, or a JSON list of them).
 *
 * In loom an operator is a statement (its block, named by the tensor it
 * assigns), an edge is a temporary written by one operator and read by
 * another, a group is a tree of fused edges (SampleFusionGroup's decision,
 * dsl/schedule/fusion_group.c), and a group's dataflow order is the loop order of
 * its root (the operator whose result leaves the group): SampleLoopOrder's
 * decision on that block.  A plan fixes those decisions; the design space
 * fills every other hole (tiles, parallel loops, unrolling).
 *
 * Cost estimate (symbolic, per operator, then summed): FLOPs = the
 * reference's count of the operator's actual iteration points (their
 * intersections included) x its arithmetic; bytes = every tensor it reads
 * and writes moved once (4-byte values; a sparse input's coordinates and
 * row pointers too).  Fusing p into c removes p's write and c's read of
 * p's temporary and multiplies p's FLOPs by the recomputation its place
 * inside c implies (the extents of c's free loops above the place that do
 * not index p; points(c)/points(p) for an inlined p).  Intensity = FLOPs /
 * bytes; the roofline class compares it with the target's balance, peak
 * FLOP/s (cores x FMA units x fp32 lanes x 2 x GHz) over memory bandwidth
 * (Williams et al., "Roofline", CACM 2009); the roofline time is
 * max(FLOPs / peak, bytes / bandwidth). */
#ifndef LOOM_PLAN_H
#define LOOM_PLAN_H

#include "../../costmodel/features.h"
#include "../../costmodel/model.h"
#include "../../dsl/schedule/schedule.h"
#include "../../runtime/data/dataset.h"
#include "../../runtime/measure/reference.h"
#include "../../runtime/target/target.h"
#include "../../modules/module.h"
#include "../../traces/trace.h"

#define LOOM_PLAN_MAX_ORDERS 64 /* legal orders listed per group */

typedef struct loom_plan_group {
    char name[64];
    int nops;
    int ops[LOOM_MAX_STMTS]; /* stages, in the plan's order */
    int root;                /* the op whose result leaves the group */
    int norder;              /* 0: no dataflow order given (the design space draws it) */
    int order[LOOM_MAX_LOOPS]; /* program index variables, outermost first */
} loom_plan_group;

typedef struct loom_plan {
    char name[64];
    int ngroups;
    loom_plan_group groups[LOOM_MAX_STMTS];
    int64_t mask; /* SampleFusionGroup's decision */
} loom_plan;

typedef struct loom_plan_cost {
    double flops, bytes, intensity; /* intensity in FLOP/byte */
    double roofline_s;              /* max(flops / peak, bytes / bandwidth) */
    int compute_bound;              /* intensity >= the target's balance */
} loom_plan_cost;

/* What plans are checked and costed against: a bound program, its data,
 * the reference's counts, a target, and the fresh schedule's edges. */
typedef struct loom_plan_ctx {
    const loom_program *prog;
    const loom_dataset *ds;
    const loom_reference *ref;
    const loom_target *target;
    double peak_flops, bandwidth, balance; /* FLOP/s, byte/s, FLOP/byte */
    loom_schedule *fresh;                  /* owned */
    int nedges;                            /* offered edges (bit k of a mask) */
    int prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS];
} loom_plan_ctx;

/* Set up *c (all pointers borrowed; they must outlive it; ref and t may
 * be NULL when plans are only read and drawn, not costed).  Errors:
 * LOOM_ERR_INVALID (unbound program), LOOM_ERR_NOMEM.  Free with
 * loom_plan_ctx_free. */
loom_status loom_plan_ctx_init(loom_plan_ctx *c, const loom_program *prog, const loom_dataset *ds,
                               const loom_reference *ref, const loom_target *t, loom_error *err);
void loom_plan_ctx_free(loom_plan_ctx *c);

/* Read plans in AutoSparse's schema from JSON text (one object or a list).
 * *plans is malloc'd (free it), *n their count.  Each plan is checked: an
 * unknown op, an op in two groups, an op in no group, a group whose ops are
 * not one tree of offered edges (a fusion the compiler does not offer, with
 * its reason), a dataflow order that is not one of the group root's legal
 * orders (listing them) -- each a LOOM_ERR_SEMANTIC message naming the plan,
 * the group and the op.  Malformed JSON or fields: LOOM_ERR_PARSE.  The
 * first fault of the first illegal plan is the error (loom_plan_check
 * reports them all). */
loom_status loom_plan_parse(const loom_plan_ctx *c, const char *json, const char *source, loom_plan **plans, int *n,
                            loom_error *err);

/* The verdict of one plan read by loom_plan_check: legal when no fault was
 * found; else every fault, each a message as loom_plan_parse's (naming
 * the plan, the group and the op) with its status (LOOM_ERR_PARSE: a
 * malformed field; LOOM_ERR_SEMANTIC: an unknown op, an op in two groups
 * or in none, a fusion the compiler does not offer, an illegal order).
 * nfaults counts them all; the first LOOM_PLAN_MAX_FAULTS are kept. */
#define LOOM_PLAN_MAX_FAULTS 16
typedef struct loom_plan_verdict {
    int legal;
    int nfaults;
    loom_status status[LOOM_PLAN_MAX_FAULTS];
    char fault[LOOM_PLAN_MAX_FAULTS][1024];
} loom_plan_verdict;

/* Read plans as loom_plan_parse does, but check every plan to the end:
 * each gets its verdict with all its faults (per group: each unknown op,
 * each op in two groups, each op in no group, then each group's structure
 * and, when that holds, its order; a group with a fault in its structure
 * is not checked further).  *plans and *verdicts (malloc'd, *n of each,
 * the caller frees both) are filled even when some plans are illegal; an
 * illegal plan's loom_plan is partial and must not be used.  Errors only
 * for the file: LOOM_ERR_PARSE (not JSON; neither an object nor a list),
 * LOOM_ERR_NOMEM. */
loom_status loom_plan_check(const loom_plan_ctx *c, const char *json, const char *source, loom_plan **plans,
                            loom_plan_verdict **verdicts, int *n, loom_error *err);

/* The plan of a SampleFusionGroup mask (every order left to the space). */
void loom_plan_from_mask(const loom_plan_ctx *c, int64_t mask, loom_plan *p);

/* Estimated cost of one group and of a whole plan. */
void loom_plan_group_cost(const loom_plan_ctx *c, const loom_plan_group *g, loom_plan_cost *out);
void loom_plan_cost_of(const loom_plan_ctx *c, const loom_plan *p, loom_plan_cost *out);

/* The legal dataflow orders of stage s (as program index variables), at
 * most max; returns the count. */
int loom_plan_orders(const loom_plan_ctx *c, int s, int (*orders)[LOOM_MAX_LOOPS], int *norder, int max);

/* The same for stage s of any schedule sch (its loops as they stand: a
 * split loop is named by its index variable); loom_plan_orders is this on
 * c->fresh.  Navigation names SampleLoopOrder's choices with it. */
int loom_plan_stage_orders(const loom_schedule *sch, int s, int (*orders)[LOOM_MAX_LOOPS], int *norder, int max);

/* An order of program index variables as text, "[i, k, f]" ("?" for -1),
 * into buf (cap bytes, truncated). */
void loom_plan_order_text(const loom_program *prog, const int *o, int n, char *buf, size_t cap);

/* The proposer's context as JSON (malloc'd text): operators with shapes,
 * formats, sparsity statistics and costs; edges (offered or not, with the
 * reason); every admissible group (connected sets of offered edges) with
 * its legal orders, FLOPs, bytes, intensity and roofline class; and the
 * plans of every fusion mask with their cost.  Errors: LOOM_ERR_NOMEM. */
loom_status loom_plan_describe(const loom_plan_ctx *c, char **out, loom_error *err);

/* A design space whose every draw follows plan p: the CPU module list
 * with "plan-fusion" before fuse-producers (SampleFusionGroup with the
 * plan's mask; fuse-producers then leaves the group as it is) and
 * "plan-order" after sparse-loop-order (a group root with a dataflow order
 * gets a SampleLoopOrder whose decision is that order).  Every other hole
 * is the space's: placements inside a fused consumer, tiles, parallel
 * loops, unrolling.  p must outlive the space.  *reg and *sp are the
 * caller's (loom_space_free, loom_registry_free).  Errors: LOOM_ERR_NOMEM;
 * applying the space fails (LOOM_ERR_SEMANTIC) when a plan order is not
 * legal as the loops stand. */
loom_status loom_plan_space(const loom_plan *p, const loom_limits *lim, loom_registry **reg, loom_space **sp,
                            loom_error *err);

/* Valid draws of each plan's space (loom_plan_space): up to per_plan per
 * plan, from draws seeded seed, seed+1, ... (at most 8 x per_plan tried
 * per plan), validated with lim.  *out (malloc'd, *nout owned traces) is
 * the caller's: loom_trace_free each, then free.  A plan with no valid
 * draw adds none.  Errors: LOOM_ERR_NOMEM. */
loom_status loom_plan_fills(const loom_plan_ctx *c, const loom_plan *plans, int n, int per_plan, uint64_t seed,
                            const loom_limits *lim, loom_trace ***out, int *nout, loom_error *err);

/* ---- the cost model's score of a plan (search/plan/plan_model.c) ----------- */

/* A cost model saved by loom_cost_model_save (a campaign's
 * DIR/cost_model.json) for scoring plans; *out is the caller's
 * (loom_cost_model_free).  Errors: those of loom_cost_model_load
 * (LOOM_ERR_IO: missing or unreadable; LOOM_ERR_DATA: not a loom model, or
 * a model for another feature width); LOOM_ERR_DATA when the saved model was
 * never trained (its scores would be a random hash); LOOM_ERR_NOMEM. */
loom_status loom_plan_model_load(const char *path, loom_cost_model **out, loom_error *err);

/* A cost model pre-trained on the simulator for c's workload and data, as
 * `loom tune --pretrain N` does (search/tune/tune_pretrain.c; TLP's and
 * MetaSchedule's transfer, with the simulator as the source): up to n
 * distinct valid schedules of the default CPU design space (limits of
 * c->target; draws seeded from seed) are simulated on c->target over
 * c->ds, their features (st: loom_data_stats_compute of c->ds) labelled
 * within one group (best latency / latency, a failure 0), and XGBoost
 * trained on them (costmodel/model.h).  *out is the caller's
 * (loom_cost_model_free), *ntrained the schedules it was trained on.
 * c needs ds and target.  Errors: LOOM_ERR_INVALID (no data or target, n <
 * 2); LOOM_ERR_RUN (fewer than 2 schedules simulated; XGBoost failed);
 * LOOM_ERR_NOMEM. */
loom_status loom_plan_model_pretrain(const loom_plan_ctx *c, const loom_data_stats *st, int n, uint64_t seed,
                                     loom_cost_model **out, int *ntrained, loom_error *err);

/* The model's score of schedule sch (higher = predicted faster; comparable
 * between schedules of one workload and data; in [0, 1] roughly, as the
 * labels are): its features (loom_features_of_schedule with st) predicted
 * by m.  *score is NaN on error.  Errors: those of loom_lower,
 * loom_features_extract and loom_cost_model_predict. */
loom_status loom_plan_model_score(loom_cost_model *m, const loom_data_stats *st, const loom_schedule *sch,
                                  double *score, loom_error *err);

#endif
