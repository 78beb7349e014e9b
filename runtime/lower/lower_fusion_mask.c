/* The masked fast path of the tiled fused lowering (lower_fusion_tile.c):
 * whether a block a causal or band mask cuts may take the register-tiled
 * path with its masked scores set to -inf (lower_fusion_internal.h
 * loom__fu_masked_fast_ok).
 *
 * FlashAttention's masking (Dao 2023, algorithm 1 with a causal mask): the
 * block is computed whole and its masked entries do not count.  That is
 * exact only when a masked entry adds nothing to any rolled block, checked
 * on the expressions (inlined temporaries expanded): m's operand is the
 * score itself, every rolled block reduces with +=, and its operand is 0
 * whenever the score is -inf -- a product or quotient with a factor exp(x)
 * where x goes to -inf with the score (the score plus or minus terms that
 * do not read it, times positive constants), the other factors not reading
 * the score. */
#include "lower_fusion_internal.h"

#define inlined loom__fu_inlined
#define def_of loom__fu_def_of

static int reads_score(fctx *c, const tile *T, int e)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (E->tensor == c->prog->stmts[T->sd].lhs)
            return 1;
        return inlined(c, E->tensor) ? reads_score(c, T, c->prog->stmts[def_of(c, E->tensor)].rhs) : 0;
    }
    for (int k = 0; k < E->nargs; k++)
        if (reads_score(c, T, E->args[k]))
            return 1;
    return 0;
}

static int positive_const(fctx *c, int e)
{
    const loom_expr *E = &c->prog->exprs[e];
    return E->kind == LOOM_EXPR_CONST && E->value > 0;
}

/* e is -inf when the score is -inf (and the rest is finite). */
static int to_minus_inf(fctx *c, const tile *T, int e)
{
    const loom_expr *E = &c->prog->exprs[e];
    switch (E->kind) {
    case LOOM_EXPR_ACCESS:
        if (E->tensor == c->prog->stmts[T->sd].lhs)
            return 1;
        return inlined(c, E->tensor) && to_minus_inf(c, T, c->prog->stmts[def_of(c, E->tensor)].rhs);
    case LOOM_EXPR_ADD:
        return (to_minus_inf(c, T, E->args[0]) && !reads_score(c, T, E->args[1])) ||
               (to_minus_inf(c, T, E->args[1]) && !reads_score(c, T, E->args[0]));
    case LOOM_EXPR_SUB:
        return to_minus_inf(c, T, E->args[0]) && !reads_score(c, T, E->args[1]);
    case LOOM_EXPR_MUL:
        return (to_minus_inf(c, T, E->args[0]) && positive_const(c, E->args[1])) ||
               (to_minus_inf(c, T, E->args[1]) && positive_const(c, E->args[0]));
    case LOOM_EXPR_DIV:
        return to_minus_inf(c, T, E->args[0]) && positive_const(c, E->args[1]);
    default:
        return 0;
    }
}

/* e is 0 when the score is -inf. */
static int to_zero(fctx *c, const tile *T, int e)
{
    const loom_expr *E = &c->prog->exprs[e];
    switch (E->kind) {
    case LOOM_EXPR_ACCESS:
        return inlined(c, E->tensor) && to_zero(c, T, c->prog->stmts[def_of(c, E->tensor)].rhs);
    case LOOM_EXPR_CALL:
        return E->fn == LOOM_FN_EXP && E->nargs == 1 && to_minus_inf(c, T, E->args[0]);
    case LOOM_EXPR_NEG:
        return to_zero(c, T, E->args[0]);
    case LOOM_EXPR_ADD:
    case LOOM_EXPR_SUB:
        return to_zero(c, T, E->args[0]) && to_zero(c, T, E->args[1]);
    case LOOM_EXPR_MUL:
        return (to_zero(c, T, E->args[0]) && !reads_score(c, T, E->args[1])) ||
               (to_zero(c, T, E->args[1]) && !reads_score(c, T, E->args[0]));
    case LOOM_EXPR_DIV:
        return to_zero(c, T, E->args[0]) && !reads_score(c, T, E->args[1]);
    default:
        return 0;
    }
}

int loom__fu_masked_fast_ok(fctx *c, const tile *T, int direct)
{
    if (c->root < 0 || !direct || T->BR < 1)
        return 0;
    for (int k = 0; k < c->nr; k++) {
        const loom_stmt *rs = &c->prog->stmts[c->r[k].s];
        if (rs->op != LOOM_ASSIGN_ADD || !to_zero(c, T, rs->rhs))
            return 0;
    }
    return 1;
}

