/* loom: traces -- the recorded list of instructions of a schedule program,
 * their random variables and decisions; recording, replay, equality,
 * printing as C calls and JSON in and out (DESIGN.md "Traces"; MetaSchedule
 * trace.cc: AsJSON, ApplyJSONToSchedule, AsPython).
 *
 * RV numbering.  A trace numbers its random variables with one counter in
 * the order instructions define them (their outputs), whatever their kind:
 * b0 l1 l2 l3 v4 v5 ...  Instruction inputs and outputs in a loom_trace are
 * these trace RV indices (not a schedule's: the recorder translates them).
 * An RV is printed as a kind letter ('b' block, 'l' loop, 'v' integer)
 * followed by its index, as in MetaSchedule.
 *
 * Instructions are laid out as in the recording contract of dsl/schedule/inst.h
 * (kind, inputs, attrs, fattrs, sattr, outputs, decision).  Everything here
 * is generic over the table of instruction kinds (dsl/schedule/inst.h): a kind's row
 * gives its signature, JSON codec, decision and C form.
 */
#ifndef LOOM_TRACE_H
#define LOOM_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "../dsl/ir/error.h"
#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"

typedef struct loom_trace {
    int ninsts;
    int cap_insts;
    loom_inst *insts;         /* ninsts instructions, in execution order */
    int nrvs;                 /* RVs 0..nrvs-1 are defined */
    int cap_rvs;
    loom_rv_kind *rv_kinds;   /* the kind of each trace RV */
    int has_workload;         /* 1 when loaded from JSON */
    uint64_t workload;        /* the loaded "workload" hash (loom_program_hash) */
    /* recorder state: schedule RV -> trace RV (-1: not recorded) */
    int *rec_map;             /* LOOM_MAX_RVS entries, allocated on first record */
    loom_status rec_status;   /* first recording failure, LOOM_OK if none */
    char rec_msg[256];        /* its reason */
} loom_trace;

/* A decision override for loom_trace_replay: n > 0 replaces the recorded
 * decision with v[0..n); n == 0 keeps the recorded one; n < 0 draws a fresh
 * one (needs the schedule's rng). */
typedef struct loom_decision {
    int n;
    int64_t v[LOOM_MAX_INST_IO];
} loom_decision;

/* ---- life cycle ------------------------------------------------------- */

/* A new empty trace (free with loom_trace_free), or NULL when out of
 * memory. */
loom_trace *loom_trace_new(void);

/* Free a trace and everything it owns (NULL is fine). */
void loom_trace_free(loom_trace *t);

/* Empty the trace (instructions, RVs, recorder state) keeping its memory. */
void loom_trace_clear(loom_trace *t);

/* Make room for ninsts instructions and nrvs RVs (exactly that many when
 * the trace has less), so that recording that many appends without
 * growing the arrays step by step (issue 26: a child replayed from its
 * parent's trace reserves the parent's length once instead of reallocating
 * 16, 32, 64, 128... instructions of ~0.8 KB each).  Nothing recorded
 * changes.  Errors: LOOM_ERR_NOMEM (the trace is unchanged). */
loom_status loom_trace_reserve(loom_trace *t, int ninsts, int nrvs, loom_error *err);

/* A deep copy of src into a new trace (free with loom_trace_free).  The
 * recorder state is not copied.  Errors: LOOM_ERR_NOMEM. */
loom_status loom_trace_copy(const loom_trace *src, loom_trace **out, loom_error *err);

/* Copy src's instructions and RVs into the existing trace t (cleared
 * first, its memory reused: loom_trace_reserve), as loom_trace_copy does
 * into a new one.  Errors: LOOM_ERR_NOMEM (t is left empty). */
loom_status loom_trace_copy_into(loom_trace *t, const loom_trace *src, loom_error *err);

/* Append one instruction whose inputs and outputs are trace RV indices.
 * Checks the kind exists, the input count is within its row's (dsl/schedule/inst.h),
 * every input is an RV defined earlier of the kind its position takes, and
 * the counts are within LOOM_MAX_INST_IO; defines the outputs, which must be
 * the next RV indices in order (t->nrvs, t->nrvs + 1, ...), with the kind
 * the row gives its outputs.
 * Errors: LOOM_ERR_INVALID with the reason; LOOM_ERR_NOMEM. */
loom_status loom_trace_append(loom_trace *t, const loom_inst *inst, loom_error *err);

/* The RV kind a kind's outputs have (block, loop or integer); -1 for a
 * kind without outputs or an unknown kind. */
int loom_trace_output_kind(int kind);

/* ---- recording -------------------------------------------------------- */

/* A loom_recorder_fn: set sch->recorder = loom_trace_recorder and
 * sch->recorder_ctx = a loom_trace * (after loom_schedule_init, which
 * clears both).  Each recorded instruction is appended with its schedule
 * RVs translated to trace RVs (outputs get the next trace indices), so the
 * trace is self-contained even when recording starts mid-program.  The
 * recorder cannot return errors: the first failure (out of memory, an input
 * RV the trace never saw, too many instructions) is kept in t->rec_status /
 * t->rec_msg, later instructions are dropped, and loom_trace_status reports
 * it. */
void loom_trace_recorder(void *trace, const loom_inst *inst);

/* LOOM_OK, or the recording failure (err filled with its reason). */
loom_status loom_trace_status(const loom_trace *t, loom_error *err);

/* ---- replay ----------------------------------------------------------- */

/* Re-execute every instruction of `t` on `sch`, which must be freshly
 * initialised (loom_schedule_init) for the same program, through the
 * registry's apply functions.  Trace RVs are mapped to the schedule's RVs as
 * instructions define them.  Samplers use the recorded decision, or
 * decisions[i] for instruction i when `decisions` is not NULL (an array of
 * t->ninsts entries, see loom_decision); SamplePerfectTile and
 * SampleLoopOrder repair a decision that no longer fits, SampleCategorical
 * fails on an index out of range.  When sch->recorder is set the
 * primitives record the replayed trace anew (with the decisions used).
 * Errors: whatever the failing primitive returns, with the message prefixed
 * by "instruction I (Kind): " (I 0-based, as in $.insts[I] and decisions); LOOM_ERR_INVALID for a trace whose
 * instruction uses an RV not defined before it, or whose instruction
 * produced a different number of outputs than the trace names; the
 * recording failure of `t` if it has one.  On failure the schedule is left
 * with the instructions before I applied. */
loom_status loom_trace_replay(const loom_trace *t, loom_schedule *sch, const loom_decision *decisions,
                              loom_error *err);

/* As loom_trace_replay, but only instructions [0, ninsts) (ninsts < 0 or
 * past the end: all of them), and when rv_map is not NULL (t->nrvs
 * entries) it receives the schedule RV of every trace RV defined so far
 * (-1 for the others).  Mutators use it to see the schedule as it was when
 * a sampling instruction ran (its candidates then).  Errors: as
 * loom_trace_replay. */
loom_status loom_trace_replay_prefix(const loom_trace *t, int ninsts, loom_schedule *sch,
                                     const loom_decision *decisions, int *rv_map, loom_error *err);

/* 1 if a and b have the same instructions: kinds, inputs, attrs (and
 * fattrs and sattr where the kind uses them), outputs and decisions; else
 * 0.  The workload hash and recorder state are not compared. */
int loom_trace_equal(const loom_trace *a, const loom_trace *b);

/* ---- printing as C ----------------------------------------------------- */

/* Print the trace as the C calls that would produce it (MetaSchedule's
 * AsPython, in C).  The form, one instruction per line:
 *   no output:       loom_parallel(sch, l6);
 *   one output:      int b0 = loom_get_block(sch, "C");
 *   several outputs: loom_get_loops(sch, b0) -> l1, l2, l3;
 * Arguments are the API's, in its order, without the output and error
 * arguments (error checks are elided); arrays are compound literals
 * ((int[]){v4, v5}, (int64_t[]){4, 0}, (double[]){0.5, 0.5}).  Samplers
 * end with their decision as a comment: decision: [4, 16] (tiles) or
 * decision: 2 (an index).  A first comment line names the workload
 * (the hash of `prog`, which may be NULL) and the instruction count. */
void loom_trace_print_c(const loom_trace *t, const loom_program *prog, FILE *out);

/* ---- JSON (traces/json.c) ----------------------------------------------- */

/* Serialise as one line of JSON in DESIGN.md's format:
 *   {"format": "loom-trace", "version": 1, "workload": "<16 hex>",
 *    "insts": [[kind, inputs, attrs, outputs], ...],
 *    "decisions": [[inst_index, decision], ...]}
 * Each instruction as its kind's row (dsl/schedule/inst.h) says: inputs are RV
 * names, or integers for the arguments that may be constants (Split's
 * factors, PosSplit's factor, Annotate's value, SplitKUpdate's factor);
 * attrs one JSON element per attr field: GetBlock ["C"], PosSplit ["A"],
 * Annotate ["key"], Unroll [factor], SamplePerfectTile [n, max_innermost],
 * SampleCategorical [[candidates], [probs]], SampleLoopOrder [prior,
 * prior_weight], others [].  Decisions are sparse (only samplers with a
 * decision), an array for a decision with one entry per output
 * (SamplePerfectTile's tiles), an integer index otherwise.  `prog` gives the workload
 * hash (NULL: the trace's loaded hash, or 0).  Same trace, same string.
 * *out is malloc'd (caller frees); NULL on failure.  Errors: the trace's
 * recording failure status (its reason: loom_trace_status); LOOM_ERR_NOMEM. */
loom_status loom_trace_to_json(const loom_trace *t, const loom_program *prog, char **out);

/* Parse a trace from JSON text in the format above (`source_name` is used as
 * the file name in messages; may be NULL).  On success *out is a new trace
 * (free with loom_trace_free) with its workload hash.  Kind names are looked
 * up with aliases; unknown object keys are ignored.  Errors, each naming the
 * JSON path: LOOM_ERR_PARSE "not valid JSON near byte B (line L, column C)"
 * (with ": nested deeper than 1000 levels, the JSON reader's limit
 * (cJSON's CJSON_NESTING_LIMIT)" when that is why);
 * LOOM_ERR_DATA for a wrong document: "$.format: expected \"loom-trace\"",
 * "$.version: unsupported version 2 (this loom reads 1)", "$.workload: ...",
 * a member of the wrong JSON type ("$.insts[2][1]: expected an array"),
 * "$.insts[2][0]: unknown instruction kind 'Splitt'", "$.insts[3][1][0]: RV
 * 'l9' used before it is defined", an RV of the wrong kind for its position,
 * wrong input / attr / output counts, output names other than the next
 * counter value ("$.insts[1][3][0]: expected output name 'l1', got 'l2'"),
 * a decision for an instruction without one, given twice, or of the wrong
 * shape ("$.decisions[0][1]: decision for SamplePerfectTile must be an array
 * of integers"); LOOM_ERR_INVALID for NULL text; LOOM_ERR_NOMEM.  Decision
 * values out of range are not checked here: replay reports them through
 * the sampler. */
loom_status loom_trace_from_json(const char *text, const char *source_name, loom_trace **out, loom_error *err);

/* The nesting depth of JSON text at byte pos (the arrays and objects open
 * there, strings skipped): 1 when cJSON's parser stopped because the depth
 * reached CJSON_NESTING_LIMIT (cjson/cJSON.h, 1000), else 0.  For readers'
 * messages (traces/json.c, search/database/database.c): the parser alone reports
 * only where it stopped.  n: the text's length. */
int loom__json_too_deep(const char *text, size_t n, size_t pos);

/* ---- private to traces/ (trace.c and json.c) ---------------------------- */

/* RV name of trace RV i into buf ("b0", "l1", "v4"). */
const char *loom__trace_rv_name(const loom_trace *t, int rv, char *buf, size_t n);

/* Instruction index of the ordinal-th (0-based) sampling instruction of t
 * (loom_inst_kind_is_sampler), or -1 when t has fewer. */
int loom_trace_sampler_inst(const loom_trace *t, int ordinal);

#endif
