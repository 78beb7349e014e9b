/* loom: lowering a Program with a loop nest per statement to LIR.
 *
 * A loom_nest gives, for every statement, the order of its index variables'
 * loops (outermost first) and each loop's kind.  It is the concrete part of
 * a schedule that this layer honours; the Schedule of the schedule-language
 * layer (splits, fusion, placement) lowers through the same rules.
 *
 * Lowering rules (TACO's, DESIGN.md "Level formats"):
 *  - a loop over index x visits, for every sparse operand with a level
 *    indexed by x, only that level's stored coordinates: one compressed
 *    level -> a position loop over pos[parent]..pos[parent+1]; several
 *    compressed levels of different patterns -> a coiteration (merge) loop
 *    over their intersection; range levels (causal, band) -> computed loop
 *    bounds, or guards when x is driven by a compressed level; otherwise a
 *    dense loop over the extent;
 *  - operands whose tensors share a pattern (an inferred sparse temporary
 *    and its source) and are indexed alike share positions;
 *  - concordant traversal: a compressed or range level is only reached
 *    inside the loop of its parent level's index, else lowering fails with
 *    rule `discordant-traversal`;
 *  - the left-hand side is reduced into a scalar accumulator when every
 *    reduced loop is inside every free loop, else read-modify-written after
 *    filling the output with the reduction's identity (0, or -inf for
 *    max=); outputs whose free loops do not visit every element are filled
 *    first as well.
 */
#ifndef LOOM_LOWER_H
#define LOOM_LOWER_H

#include "../dsl/program.h"
#include "lir.h"

typedef struct loom_nest_stmt {
    int nloops;                              /* == the statement's nvars */
    int var[LOOM_MAX_STMT_VARS];             /* program index vars, outermost first */
    lir_loop_kind kind[LOOM_MAX_STMT_VARS];  /* per loop */
} loom_nest_stmt;

typedef struct loom_nest {
    int nstmts;
    loom_nest_stmt s[LOOM_MAX_STMTS];
} loom_nest;

/* The default loop nest: per statement, the index variables in the order
 * they first appear on the right-hand side (lhs-only ones last), moved as
 * little as needed to make every sparse operand concordant (a stable
 * topological order); the outermost loop is PARALLEL when it is a free
 * (left-hand side) variable and not `serial`.
 * Errors: LOOM_ERR_SEMANTIC `discordant-traversal` when the sparse operands'
 * level orders form a cycle (e.g. A(i,j) csr with B(j,i) csr): the message
 * names both operands and suggests declaring one csc. */
loom_status loom_nest_default(const loom_program *prog, int serial, loom_nest *out, loom_error *err);

/* Lower prog with nest to a new LIR function (*out, free with lir_func_free).
 * Errors: LOOM_ERR_INVALID (nest does not list each statement's variables
 * exactly once), LOOM_ERR_SEMANTIC `discordant-traversal`,
 * `parallel-coiteration` (a PARALLEL loop that must be a merge loop),
 * LOOM_ERR_UNSUPPORTED (a level layout this lowering does not handle),
 * LOOM_ERR_NOMEM. */
loom_status loom_lower(const loom_program *prog, const loom_nest *nest, lir_func **out, loom_error *err);

#endif
