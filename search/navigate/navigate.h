/* loom: navigation -- interactive scheduling over a design space with
 * strong soundness and strong completeness (Honeybee for FuseFlow,
 * Williams et al., LATTE 2026: "Programming by Navigation"), and partial
 * traces (pinned decisions) shared with `loom tune --pin`.
 *
 * Holes.  A design space (modules/module.h) is one probabilistic program;
 * its holes are the sampling instructions it calls, numbered by their
 * ordinal: ?1 is the first sampler the program calls, ?2 the second ...
 * (loom_decider_fn counts them in dsl/schedule/schedule.h's sch->nsampled).  The
 * program is re-run from the start for every state, with the decided holes
 * forced through the decision hook, so a hole that exists only under some
 * earlier choice appears once that choice is made, and the numbers of the
 * holes after it may change with it.
 *
 * Choices.  The candidate decisions of a hole, computed from the schedule
 * as the program stands when the sampler is called (loom_nav_candidates):
 *   SamplePerfectTile   every ordered tuple of positive tiles whose product
 *                       is the loop's extent, innermost <= max_innermost;
 *                       a data-dependent extent: [0 (inferred), powers of
 *                       two 1..max_innermost (-1: 64) ...]  (dsl/schedule/sample.c)
 *   SampleCategorical   every index whose probability is > 0
 *   SampleLoopOrder     every index of the legal orders (at most 4096)
 *   SampleComputeLocation  loom_compute_location_candidates
 *   SampleFusionGroup   every subset (bit mask) of the offered edges
 * A schedule of the space is a sequence of choices, one per hole the
 * program calls; it is valid when the program runs (no module error), no
 * forced choice was repaired, loom_validate accepts it with the space's
 * limits and loom_lower lowers it.
 *
 * Default of a hole: while every sampler before it took the default
 * schedule's decision (modules/module.h loom_default_build: the campaign's
 * first record and `loom run`'s kernel), that schedule's decision at this
 * sampler ordinal, so the sketch with every hole open -- and `defaults` from
 * the start -- is the default schedule (tests/test_default_same.c).  Off
 * that path (or when the default schedule is modules/default.c's, not a
 * trace of the space: an attention chain), the design space's prior where
 * it has one (the loop order's prior, the most probable categorical index),
 * else at the root, no fusion, untiled [extent, 1, ..., 1].  When no valid
 * completion has the default, the first choice that has one.
 *
 * The menu.  At the current hole, a choice is offered iff some completion of
 * the state with it is valid.  Two methods (loom_nav_state.method):
 *   "enumeration"  every completion of the state is run (an odometer over the
 *                  holes in program order) when there are at most
 *                  enum_limit of them: the menu is exact (sound and
 *                  complete), and so is the remaining size;
 *   "witness"      otherwise: a choice is offered when its default
 *                  completion or one of LOOM_NAV_WITNESS_TRIES random
 *                  completions is valid (a witness: sound; a choice whose
 *                  valid completions are rare may be missing); the size is
 *                  the product of the open holes' candidate counts (an upper
 *                  bound of this sketch's shape).
 * docs/navigation.md has the proof sketch.
 */
#ifndef LOOM_NAVIGATE_H
#define LOOM_NAVIGATE_H

#include <stdint.h>
#include <stdio.h>

#include "../../modules/module.h"
#include "../../traces/trace.h"
#include "../../traces/validate.h"

#define LOOM_NAV_MAX_HOLES 256      /* holes (sampler ordinals) a state may have */
#define LOOM_NAV_ENUM_LIMIT 20000   /* default: enumerate at most this many completions */
#define LOOM_NAV_MAX_CHOICES 4096   /* candidates of one hole considered */
#define LOOM_NAV_WITNESS_TRIES 8    /* random completions tried per choice (witness method) */

/* One decision: the sampler kind (LOOM_INST_SAMPLE_*) and its value (n
 * entries: SamplePerfectTile's tiles, else one: an index, a location or a
 * mask). */
typedef struct loom_nav_value {
    int kind;
    int n;
    int64_t v[LOOM_MAX_INST_IO];
} loom_nav_value;

/* 1 if a and b are the same decision of the same kind. */
int loom_nav_value_equal(const loom_nav_value *a, const loom_nav_value *b);

/* Print a value as JSON: an array for SamplePerfectTile, an integer else. */
void loom_nav_value_print(const loom_nav_value *a, FILE *out);

/* 1 for the five sampling kinds (the instructions that are holes). */
int loom_nav_is_sampler(int kind);

/* The candidate decisions of a sampler about to run (the arguments of a
 * loom_decider_fn), in a fixed order, at most max into out; *pref receives
 * the index of the default (see above).  Returns the count (0: none). */
int loom_nav_candidates(const loom_schedule *sch, int kind, const loom_inst *proto, loom_nav_value *out, int max,
                        int *pref);

/* ---- partial traces: pinned decisions ----------------------------------- */

/* Decisions pinned by sampler ordinal (0-based: ?1 is ordinal 0). */
typedef struct loom_pins {
    int n;
    int ordinal[LOOM_NAV_MAX_HOLES];   /* increasing */
    loom_nav_value value[LOOM_NAV_MAX_HOLES];
} loom_pins;

/* The pins of trace t: the decisions of its sampling instructions, all of
 * them (insts NULL) or those at instruction indices insts[0..ninsts).
 * Errors: LOOM_ERR_INVALID "instruction I is not a sampling instruction",
 * an index out of range, more than LOOM_NAV_MAX_HOLES samplers. */
loom_status loom_pins_from_trace(const loom_trace *t, const int *insts, int ninsts, loom_pins *out,
                                 loom_error *err);

/* A loom_decider_fn forcing the pins (ctx: a const loom_pins *): at a
 * pinned ordinal whose kind matches, the pinned decision; else 0 (draw). */
int loom_pins_decider(void *ctx, const loom_schedule *sch, int ordinal, int kind, const loom_inst *proto,
                      int64_t *decision);

/* 1 when trace t carries every pin (its ordinal-th sampler has the pin's
 * kind and decision), else 0. */
int loom_pins_hold(const loom_pins *p, const loom_trace *t);

/* The pins as a JSON array (what a database record of a pinned campaign
 * stores, database.h "pins"): one object per pin, in increasing sampler
 * order, {"sampler": ordinal (0-based), "kind": loom_inst kind,
 * "decision": [values]}.  *out malloc'd (the caller frees it).
 * Errors: LOOM_ERR_NOMEM. */
loom_status loom_pins_to_json(const loom_pins *p, char **out);

/* Inverse of loom_pins_to_json into *p.  Errors: LOOM_ERR_DATA "pins:
 * expected an array of ..." for text that is not such an array (NULL
 * included); *p is then empty. */
loom_status loom_pins_from_json(const char *text, loom_pins *p, loom_error *err);

/* A partial trace as JSON: loom_trace_to_json's document with one more
 * key, "pinned": [instruction indices of the pinned samplers] (ascending;
 * the pins must hold in t).  Old readers ignore the key; the trace stays a
 * complete one (its other decisions are a valid completion), so `loom run
 * --trace` runs it.  *out malloc'd.  Errors: those of loom_trace_to_json;
 * LOOM_ERR_INVALID when a pin does not hold in t. */
loom_status loom_partial_trace_to_json(const loom_trace *t, const loom_program *prog, const loom_pins *p,
                                       char **out, loom_error *err);

/* Read a trace and its pins: "pinned" as above; without the key every
 * decision of the trace is pinned (an old trace pins everything).  *t is
 * the caller's (loom_trace_free).  Errors: those of loom_trace_from_json;
 * LOOM_ERR_DATA "$.pinned: ..." for a member that is not an array of
 * sampling instruction indices. */
loom_status loom_partial_trace_from_json(const char *text, const char *source_name, loom_trace **t, loom_pins *p,
                                         loom_error *err);

/* ---- the navigation engine ----------------------------------------------- */

typedef struct loom_nav loom_nav;

/* One hole of the current sketch. */
typedef struct loom_nav_hole {
    int ordinal;          /* printed ?ordinal+1 */
    int inst;             /* its instruction index in the sketch's trace */
    int kind;             /* LOOM_INST_SAMPLE_* */
    int decided;          /* 1: decided by the user; 0: open (value: the sketch's default completion) */
    int ncand;            /* its candidate count where the sketch calls it */
    loom_nav_value value;
} loom_nav_hole;

/* One menu entry of the current hole. */
typedef struct loom_nav_choice {
    loom_nav_value value;
    int is_default;
    long completions;     /* valid completions with this choice (enumeration); -1 unknown (witness) */
} loom_nav_choice;

/* What a state looks like. */
typedef struct loom_nav_state {
    int nholes;                 /* holes of the sketch (decided and open) */
    int nopen;
    int current;                /* index into the holes of the current hole; -1: complete */
    int complete;               /* every hole decided */
    int sketch_valid;           /* 1: the sketch (open holes at their defaults) is a valid schedule */
    const char *method;         /* "enumeration" or "witness" */
    double size;                /* valid completions: exact (enumeration) or an estimate */
    int size_exact;
    const char *size_method;    /* how size was computed */
    long runs;                  /* design-space runs made so far (cost) */
    int default_in_space;       /* 1: the holes' defaults follow the default schedule
                                   (loom_default_build), which is the space's default */
    const char *default_why_not; /* else why not (loom_default_info.why_not; the
                                   navigator's, valid while it lives) */
} loom_nav_state;

/* A navigator over `space` for the bound program `prog`, validating with
 * `lim` (NULL: the space's limits); enum_limit <= 0: LOOM_NAV_ENUM_LIMIT
 * (the enumeration is tried when the sketch's open holes have at most 4 x
 * enum_limit candidate combinations, and given up past enum_limit runs).
 * prog and space must outlive it; free it with loom_nav_free (NULL is
 * fine).  Starts with every hole open.  Not thread-safe (one navigator per
 * thread; the space may be shared).
 * Errors: LOOM_ERR_NOMEM; the space failing to run (its error);
 * LOOM_ERR_SEMANTIC when the space has no valid schedule. */
loom_status loom_nav_new(const loom_program *prog, const loom_space *space, const loom_limits *lim, long enum_limit,
                         loom_nav **out, loom_error *err);
void loom_nav_free(loom_nav *nav);

/* The state, the holes of the sketch (in program order) and the menu of
 * the current hole (in candidate order), valid until the next command;
 * loom_nav_holes sets *n, loom_nav_menu returns the count (0 when the
 * state is complete).  The arrays belong to the navigator. */
void loom_nav_get_state(const loom_nav *nav, loom_nav_state *st);
const loom_nav_hole *loom_nav_holes(const loom_nav *nav, int *n);
int loom_nav_menu(const loom_nav *nav, const loom_nav_choice **menu);

/* The sketch: the trace and schedule of the state with the open holes at
 * their defaults (a valid complete schedule when sketch_valid). */
const loom_trace *loom_nav_trace(const loom_nav *nav);
const loom_schedule *loom_nav_schedule(const loom_nav *nav);

/* Commands.  Each recomputes the state; on error the state is unchanged.
 *   pick      decide the current hole with menu entry k (LOOM_ERR_INVALID
 *             out of range or complete)
 *   default   the current hole's default
 *   defaults  every open hole its default (the sketch, when valid)
 *   undo      revert the last command that changed the decisions
 *             (LOOM_ERR_INVALID "nothing to undo")
 *   goto      make hole ?ordinal+1 (open, in the sketch) the current one
 *   adopt     decide every hole with the decisions of trace t (a complete
 *             schedule of the space, e.g. a campaign's best; LOOM_ERR_INVALID
 *             when it contradicts a decided hole or is not a valid schedule
 *             of the space)
 * pick, default, defaults and adopt can be undone; goto cannot (it only
 * moves the current hole, and any command that decides resets it).
 * Errors besides those named: LOOM_ERR_NOMEM; a design-space run failing
 * for another reason than an invalid schedule (its error). */
loom_status loom_nav_pick(loom_nav *nav, int k, loom_error *err);
loom_status loom_nav_default(loom_nav *nav, loom_error *err);
loom_status loom_nav_defaults(loom_nav *nav, loom_error *err);
loom_status loom_nav_undo(loom_nav *nav, loom_error *err);
loom_status loom_nav_goto(loom_nav *nav, int ordinal, loom_error *err);
loom_status loom_nav_adopt(loom_nav *nav, const loom_trace *t, loom_error *err);

/* The decided holes as pins (for loom_tune's pins and save). */
void loom_nav_pins(const loom_nav *nav, loom_pins *out);

/* Print the sketch: the design space's program as C calls (the sketch's
 * trace), each hole marked "?N = value" when decided, "?N open: C choices,
 * default value" when open, the current hole with "<-- current". */
void loom_nav_print_sketch(const loom_nav *nav, FILE *out);

/* The schedule as it stands when the current hole's sampler is called
 * (the instructions before it applied, the sketch's decisions before it),
 * and in *proto that sampler's inputs and attrs (proto->kind set); NULL
 * when the state is complete or that run fails.  Computed on the first
 * call after a command (one more run of the design space), so the commands
 * themselves cost no more.  Both belong to the navigator, valid until the
 * next command. */
const loom_schedule *loom_nav_call(loom_nav *nav, const loom_inst **proto);

/* What decision v (a menu entry of the current hole) means, in the
 * schedule's words, into buf (cap bytes; "" when there is nothing to add):
 *   SampleLoopOrder    the loops outermost first, "[i, k, f]" (index
 *                      variables, as `loom plan describe` names orders;
 *                      split loops by their own names, "k.p0")
 *   SamplePerfectTile  the loop and its tiles, "f: 4 x 4 x 1 x 1" (0:
 *                      "inferred")
 *   SampleCategorical  what the value feeds in the sketch's trace, e.g.
 *                      "workspace at f.1: yes, stream stores: yes",
 *                      "unroll f.3: x4", "prefetch on k.p1: 16 entries
 *                      ahead", "split k's positions: chunks of 8"
 *   SampleComputeLocation  "inline", "root", "at the consumer's loop N"
 *   SampleFusionGroup  "fuse: T1 into Z1, ..." or "fuse: nothing" */
void loom_nav_describe(loom_nav *nav, const loom_nav_value *v, char *buf, size_t cap);

/* The current hole's context for a menu header, into buf: a tiling's loop,
 * its extent and tile count ("loop f (extent 16) of block C into 4 tiles,
 * outermost first"); a loop order's or compute location's block and loops
 * with their extents ("block C, loops i (500), k (500, sparse), f (16)");
 * "" otherwise. */
void loom_nav_context(loom_nav *nav, char *buf, size_t cap);

/* The default completion of menu entry k: *out (the caller's) receives its
 * trace and sch (caller's, may be NULL) its schedule.  Errors:
 * LOOM_ERR_INVALID (k out of range), LOOM_ERR_NOMEM. */
loom_status loom_nav_choice_completion(loom_nav *nav, int k, loom_trace **out, loom_schedule *sch,
                                       loom_error *err);

#endif
