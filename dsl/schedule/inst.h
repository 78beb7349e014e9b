/* loom: instruction kinds -- one table of traits, one row per kind of
 * recorded instruction (DESIGN.md "Instructions"; the models are TVM's
 * instruction traits, src/tir/schedule/primitive/ (one .cc per primitive), and Lua's lopcodes.h:
 * one enum, a commented row per opcode, tables indexed by it).
 *
 * A row says everything traces/ needs to know about a kind: its name and old
 * names, the kinds and counts of its inputs and which of them may be integer
 * constants, its attrs and their JSON codec, its outputs, its decision, its
 * purity, how it prints as a C call, and the function that re-applies it
 * (replay).  traces/ (recording, append checks, JSON in and out, replay,
 * printing) is generic over the rows: it never tests a kind by name.
 *
 * The recording contract.  Every primitive that succeeds on a schedule with
 * a recorder calls loom_inst_record with its kind and a loom_inst laid out
 * as its row says (RV = index into the RV table of the schedule it ran on):
 *   inputs   RVs, argument position k of kind args[k] (positions past the
 *            listed ones repeat the last listed mask); from position
 *            consts.from on, the arguments may instead all be integer
 *            constants, kept in attrs[0..) (the "constant form": then
 *            ninputs == consts.from);
 *   attrs    the row's attr fields in order: names and keys in sattr,
 *            integers in attrs[], reals in fattrs[] (a candidate list fills
 *            attrs[], its probabilities fattrs[] beside them);
 *   outputs  new RVs of kind out.kind, as many as out.rule says;
 *   decision for samplers: one index (LOOM_DECISION_INDEX) or one entry per
 *            output (LOOM_DECISION_PER_OUTPUT).
 * `apply` takes an instruction in exactly this layout (loom_inst_apply
 * checks it against the row first: an adapter re-checks nothing the row
 * states), with its inputs
 * already translated to RV indices of the schedule it is applied to; it uses
 * inst->decision when inst->ndecision > 0 (repaired where the sampler
 * repairs) and draws a fresh one with sch->rng otherwise, writes the decision
 * used to decision_out (LOOM_MAX_INST_IO entries) when not NULL, and the new
 * RVs to `outputs` (room for LOOM_MAX_LOOPS + LOOM_MAX_STMTS +
 * LOOM_MAX_INST_IO: GetLoops may return more loops than a recorded
 * instruction keeps).
 *
 * Adding a primitive: write its function (it records itself with its kind),
 * its apply adapter and its row (dsl/schedule/inst.c, for a built-in kind, with an
 * enum entry below), or register the row at run time with
 * loom_inst_kind_register (user modules, tests).  Nothing in traces/
 * changes.  docs/schedule-language.md "Adding a primitive".
 *
 * Names are stable and never reused; a renamed kind keeps its old name in
 * its aliases so old traces and databases still load.  Kind numbers are
 * indices into this process's table: traces store and exchange names. */
#ifndef LOOM_INST_H
#define LOOM_INST_H

#include "schedule.h"

/* The built-in kinds.  Per row: inputs / attrs / outputs / decision. */
typedef enum loom_inst_kind_id {
    LOOM_INST_GET_BLOCK = 0,      /* -            sattr tensor name        [b]        -           */
    LOOM_INST_GET_LOOPS,          /* [b]          -                        [l...]     -           */
    LOOM_INST_GET_PRODUCERS,      /* [b]          -                        [b...]     -           */
    LOOM_INST_GET_CONSUMERS,      /* [b]          -                        [b...]     -           */
    LOOM_INST_SPLIT,              /* [l, v...] or [l] + constant factors   [l...]     -           */
    LOOM_INST_FUSE,               /* [l, l...]    -                        [l]        -           */
    LOOM_INST_REORDER,            /* [l...]       -                        -          -           */
    LOOM_INST_POS_SPLIT,          /* [l, v] or [l] + constant factor; sattr tensor  [l, l]  -     */
    LOOM_INST_PARALLEL,           /* [l]          -                        -          -           */
    LOOM_INST_VECTORIZE,          /* [l]          -                        -          -           */
    LOOM_INST_UNROLL,             /* [l]          [factor]                 -          -           */
    LOOM_INST_ANNOTATE,           /* [b|l, v] or [b|l] + constant value; sattr key  -   -         */
    LOOM_INST_SAMPLE_PERFECT_TILE,/* [l]          [n, max_innermost]       [v...n]    n tiles     */
    LOOM_INST_SAMPLE_CATEGORICAL, /* -            candidates; fattrs probs [v]        index       */
    LOOM_INST_SAMPLE_LOOP_ORDER,  /* [b]          [prior]; fattrs [weight] [v]        index       */
    LOOM_INST_COMPUTE_INLINE,     /* [b]          -                        -          -           */
    LOOM_INST_SAMPLE_COMPUTE_LOCATION, /* [b]     -                        [v]        location    */
    LOOM_INST_COMPUTE_AT,         /* [b, l] or [b, l, v] (v = 0: recorded, no change)  -   -      */
    LOOM_INST_CACHE_WRITE,        /* [b, l]       -                        -          -           */
    LOOM_INST_RFACTOR,            /* [l]          -                        -          -           */
    LOOM_INST_REVERSE_COMPUTE_AT, /* [b, l]       -                        -          -           */
    LOOM_INST_ROLLING_UPDATE,     /* [b, l] or [b, l, v]                   -          -           */
    LOOM_INST_SPLIT_K_UPDATE,     /* [b, l, v] or [b, l] + constant factor -          -           */
    LOOM_INST_SAMPLE_FUSION_GROUP,/* [b]          -                        [v]        edge mask   */
    LOOM_INST_PACK_PANEL,         /* [b, l] or [b, l, v]; sattr tensor     -          -           */
    LOOM_INST_NBUILTIN            /* the number of built-in kinds */
} loom_inst_kind_id;

/* Kinds registered at run time get the numbers from LOOM_INST_NBUILTIN on,
 * at most this many of them. */
#define LOOM_INST_MAX_REGISTERED 16

/* Argument kinds, as masks (1 << loom_rv_kind), or'ed where either fits. */
#define LOOM_ARG_BLOCK (1 << LOOM_RV_BLOCK)
#define LOOM_ARG_LOOP (1 << LOOM_RV_LOOP)
#define LOOM_ARG_EXPR (1 << LOOM_RV_EXPR)

#define LOOM_INST_MAX_ARG_SIG 4   /* listed argument positions */
#define LOOM_INST_MAX_ATTRS 3     /* attr fields */
#define LOOM_INST_MAX_ALIASES 2

typedef enum loom_decision_kind {
    LOOM_DECISION_NONE = 0,       /* not a sampler */
    LOOM_DECISION_INDEX,          /* one integer (JSON: a number) */
    LOOM_DECISION_PER_OUTPUT,     /* one integer per output (JSON: an array) */
} loom_decision_kind;

/* How one attr field is stored and written as JSON (one element of the
 * instruction's attr array each). */
typedef enum loom_attr_codec {
    LOOM_ATTR_END = 0,            /* no more fields */
    LOOM_ATTR_NAME,               /* sattr: a string of 1..LOOM_MAX_NAME-1 characters */
    LOOM_ATTR_KEY,                /* sattr: an annotation key, 1..23 characters */
    LOOM_ATTR_INT,                /* the next attrs[] entry: an integer in lo..hi */
    LOOM_ATTR_REAL,               /* the next fattrs[] entry: a finite number */
    LOOM_ATTR_INT_LIST,           /* all of attrs[]: an array of 1..LOOM_MAX_INST_IO integers */
    LOOM_ATTR_PROB_LIST,          /* fattrs[] beside an INT_LIST before it: as many numbers >= 0 */
} loom_attr_codec;

typedef struct loom_attr_field {
    loom_attr_codec codec;
    const char *what;             /* in messages: "the unroll factor must be an integer" */
    int64_t lo, hi;               /* INT: the range */
    int nonzero;                  /* INT: 0 is refused even inside lo..hi */
} loom_attr_field;

/* Arguments that may be integer constants instead of RVs. */
typedef struct loom_const_args {
    int from;                     /* first such position; 0: none (position 0 is never one) */
    int64_t lo, hi;               /* their range */
    const char *what;             /* "factor", "value" */
    const char *note;             /* appended to the range message, or NULL */
} loom_const_args;

typedef enum loom_out_rule {
    LOOM_OUT_NONE = 0,            /* no outputs */
    LOOM_OUT_FIXED,               /* exactly n */
    LOOM_OUT_ANY,                 /* 0..LOOM_MAX_INST_IO (a getter: whatever the schedule has) */
    LOOM_OUT_PER_ARG,             /* one per argument after the first (a factor, a loop) */
    LOOM_OUT_ATTR0,               /* attrs[0] of them (a tile count) */
} loom_out_rule;

typedef struct loom_out_sig {
    loom_out_rule rule;
    loom_rv_kind kind;            /* of every output */
    int n;                        /* LOOM_OUT_FIXED */
} loom_out_sig;

typedef loom_status (*loom_inst_apply_fn)(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out,
                                          int *outputs, int *noutputs, loom_error *err);

/* The traits of one kind.  Zero fields mean "none". */
typedef struct loom_inst_kind {
    const char *name;                              /* stable, never reused */
    const char *aliases[LOOM_INST_MAX_ALIASES];    /* old names, NULL-padded */
    int is_pure;              /* getters and samplers that only sample: removing one alone changes no schedule */
    loom_decision_kind decision;
    int min_args, max_args;   /* argument positions: RVs or constants (as JSON lists them) */
    unsigned char args[LOOM_INST_MAX_ARG_SIG]; /* LOOM_ARG_* mask per position */
    loom_const_args consts;
    loom_attr_field attrs[LOOM_INST_MAX_ATTRS];
    loom_out_sig out;
    /* The call as C (loom_trace_print_c), a template: %iK input K's RV
     * name (-1 when absent), %IK the inputs from K comma-separated, %nIK
     * their count, %s sattr as a C string, %aK attrs[K] (0 when absent), %A
     * all attrs, %nA their count, %fK fattrs[K], %F fattrs[0..nattrs), %%.
     * c_call_more, when set, is used instead when the instruction has more
     * inputs than its fewest (RV factors rather than constants, an enable
     * RV). */
    const char *c_call, *c_call_more;
    loom_inst_apply_fn apply; /* re-execute on a schedule (replay) */
} loom_inst_kind;

/* Number of kinds (built-in and registered) and the traits of kind k, or
 * NULL when k is not a kind.  The returned row lives as long as the process. */
int loom_inst_kind_count(void);
const loom_inst_kind *loom_inst_kind_at(int k);

/* 1 when kind k is a sampler (its row records a decision: SamplePerfectTile,
 * SampleCategorical, SampleLoopOrder, SampleComputeLocation,
 * SampleFusionGroup and any registered kind with a decision), else 0 (also
 * for a k that is not a kind). */
int loom_inst_kind_is_sampler(int k);

/* Index of a kind by name or by an alias; -1 if unknown (or name NULL). */
int loom_inst_kind_find(const char *name);

/* Fewest RV inputs an instruction of kind K has (consts.from when it has a
 * constant form, else min_args). */
int loom_inst_kind_min_inputs(const loom_inst_kind *K);

/* The argument mask of position k of kind K (positions past the listed
 * ones take the last listed mask); 0 for k out of range. */
int loom_inst_kind_arg_mask(const loom_inst_kind *K, int k);

/* LOOM_OK when the row is well formed: a name of 1..63 characters, an
 * apply function and a C template; 0 <= min_args <= max_args <=
 * LOOM_MAX_INST_IO and an argument mask for position 0 when max_args > 0;
 * consts.from < max_args and no LOOM_ATTR_INT field beside a constant form
 * (both live in attrs); a PROB_LIST only right after an INT_LIST; outputs
 * that agree with the rule (PER_ARG needs args, ATTR0 an INT first field);
 * a decision only with outputs.  Else LOOM_ERR_INVALID naming the problem. */
loom_status loom_inst_kind_check(const loom_inst_kind *K, loom_error *err);

/* Add a kind at run time (a user module's or a test's primitive).  *K is
 * copied; the strings and the apply function it points to must live as
 * long as the process.  Returns the new kind number (>= LOOM_INST_NBUILTIN)
 * through *kind.  Thread safe; readers of other kinds are not disturbed.
 * Errors: LOOM_ERR_INVALID for a row loom_inst_kind_check refuses, or a
 * name or alias that is already a kind's name or alias;
 * LOOM_ERR_INVALID as well when LOOM_INST_MAX_REGISTERED kinds are registered already. */
loom_status loom_inst_kind_register(const loom_inst_kind *K, int *kind, loom_error *err);

/* LOOM_OK when instruction `inst` has the shape its kind's row states,
 * checked from the row alone (every kind's apply runs only after it):
 *   inputs    RV indices of sch (when sch is not NULL) of the kinds
 *             args[] allows, and as many as the row takes: min_args..max_args,
 *             or consts.from in the constant form;
 *   attrs     in the constant form, min_args - consts.from ..
 *             max_args - consts.from constants in consts.lo..hi; else none
 *             for a kind with a constant form ("either ... not both"), one
 *             or more for an INT_LIST, and otherwise at least one per INT
 *             field, each in its lo..hi (and not 0 when nonzero; entries
 *             past them are ignored, as the recorder drops them); a NAME or
 *             KEY field needs a non-empty, terminated sattr;
 *   decision  0..LOOM_MAX_INST_IO entries; at most one for
 *             LOOM_DECISION_INDEX; for LOOM_DECISION_PER_OUTPUT none or one
 *             per output (attrs[0] of them under LOOM_OUT_ATTR0, n under
 *             LOOM_OUT_FIXED).
 * Else LOOM_ERR_INVALID naming the kind and the problem. */
loom_status loom_inst_check(const loom_schedule *sch, const loom_inst *inst, loom_error *err);

/* Re-apply `inst` to sch (replay): loom_inst_check, then its kind's apply
 * with the same arguments (see the contract above).  Errors: those of
 * loom_inst_check (also LOOM_ERR_INVALID for a kind that is not in the
 * table), then the primitive's. */
loom_status loom_inst_apply(loom_schedule *sch, const loom_inst *inst, int64_t *decision_out, int *outputs,
                            int *noutputs, loom_error *err);

/* The recording half of a primitive: when sch has a recorder, set
 * inst->kind = kind and hand inst to it (see the contract above).  For
 * primitives outside dsl/; the built-in ones use the same path. */
void loom_inst_record(loom_schedule *sch, int kind, loom_inst *inst);

#endif
