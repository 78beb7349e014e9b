/* loom: the one expression translator (see lower_expr.h). */
#include "lower_expr.h"

lir_expr *loom__xlate_op(lir_func *f, const loom_op_row *r, lir_expr *a, lir_expr *b)
{
    static const lir_binop BIN[] = {
        [LOOM_OP_LOWER_ADD] = LIR_ADD, [LOOM_OP_LOWER_SUB] = LIR_SUB, [LOOM_OP_LOWER_MUL] = LIR_MUL,
        [LOOM_OP_LOWER_DIV] = LIR_DIV, [LOOM_OP_LOWER_MIN] = LIR_MIN, [LOOM_OP_LOWER_MAX] = LIR_MAX,
    };
    switch (r->lower) {
    case LOOM_OP_LOWER_CALL: return loom_lir_call2(f, loom_op_id(r), a, b);
    case LOOM_OP_LOWER_NEG: return loom_lir_neg(f, a);
    default: return loom_lir_bin(f, BIN[r->lower], a, r->arity == 2 ? b : loom_lir_float(f, r->lower_const));
    }
}

lir_expr *loom__xlate(const loom_xlate *x, int e)
{
    const loom_expr *E = &x->prog->exprs[e];
    if (E->kind == LOOM_EXPR_CONST)
        return loom_lir_float(x->f, E->value);
    if (E->kind == LOOM_EXPR_ACCESS)
        return x->access(x, e);
    const loom_op_row *r = loom_op_of_expr(E);
    lir_expr *out = NULL;
    if (!r || (x->special && x->special(x, e, r, &out)))
        return out;
    lir_expr *(*operand)(const loom_xlate *, int) = x->operand ? x->operand : loom__xlate;
    /* the second operand first: the order the two translators had (the
     * compiler evaluated the call's arguments right to left), so locals
     * keep their numbers in the generated C */
    lir_expr *b = r->arity == 2 ? operand(x, E->args[1]) : NULL;
    lir_expr *a = operand(x, E->args[0]);
    return loom__xlate_op(x->f, r, a, b);
}
