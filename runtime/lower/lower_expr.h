/* loom: the one expression translator of the lowering (issue 28): a Program
 * expression to a LIR value, operator by operator from the operator table
 * (dsl/ir/op.h).  Private to runtime/lower/.  Both lowerings use it -- the
 * statement lowering (lower.c: operands at group positions, union
 * coiteration's presence guards) and the fused-chain lowering
 * (lower_fusion_util.c: operands at the chain's locals, deferred divisors,
 * hoisting) -- and differ only in the callbacks below.  It calls only lir.c
 * and the table; the callbacks are how the callers hand their own cases in
 * (a function pointer is not a use for scripts/check-cycles.sh). */
#ifndef LOOM_LOWER_EXPR_H
#define LOOM_LOWER_EXPR_H

#include "lir.h"

typedef struct loom_xlate loom_xlate;
struct loom_xlate {
    lir_func *f;
    const loom_program *prog;
    void *ctx; /* the caller's state, for its callbacks */
    /* An ACCESS expression's value (required); NULL when it failed (the
     * caller has recorded why) or on out of memory. */
    lir_expr *(*access)(const loom_xlate *x, int e);
    /* An operator's operand; NULL here means loom__xlate itself. */
    lir_expr *(*operand)(const loom_xlate *x, int e);
    /* Optional: a caller's own lowering of operator expression e with row r
     * (union guards, a deferred divisor): return 1 with *out set to use it,
     * 0 for the row's lowering. */
    int (*special)(const loom_xlate *x, int e, const loom_op_row *r, lir_expr **out);
};

/* Expression e of x->prog as a LIR value in x->f: a constant, an access
 * (x->access), or an operator by its row.  NULL on failure or out of
 * memory (NULL operands propagate). */
lir_expr *loom__xlate(const loom_xlate *x, int e);

/* Row r applied to operands already lowered (b NULL for one operand): a LIR
 * operator, or a call of the row (LOOM_OP_LOWER_CALL). */
lir_expr *loom__xlate_op(lir_func *f, const loom_op_row *r, lir_expr *a, lir_expr *b);

#endif
