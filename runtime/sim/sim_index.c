/* loom: the index variables cc multiplies by a row length (sim.h "Address
 * arithmetic", model 35): integer variables that are not induction
 * variables, marked on the LIR before sim.c builds the simulator's form.
 * Declared in sim_impl.h. */
#include "sim_impl.h"

/* e is not affine in induction variables: it reads memory, uses an operator
 * other than +, - and *, or reads a variable m marks as not one */
static int nonaffine(const lir_expr *e, const unsigned char *m)
{
    if (!e)
        return 0;
    switch (e->kind) {
    case LIR_E_LOAD: return 1;
    case LIR_E_VAR: return m[e->var] != 0;
    case LIR_E_BIN:
        if (e->op != LIR_ADD && e->op != LIR_SUB && e->op != LIR_MUL)
            return 1;
        return nonaffine(e->a, m) || nonaffine(e->b, m);
    case LIR_E_NEG: return nonaffine(e->a, m);
    default: return 0;
    }
}

/* e multiplies a variable m marks by a size (a literal other than +-1, a
 * dimension, a stored-entry count): mark it 2 */
static void mark_scaled_expr(const lir_expr *e, unsigned char *m)
{
    if (!e)
        return;
    if (e->kind == LIR_E_BIN && e->op == LIR_MUL)
        for (int side = 0; side < 2; side++) {
            const lir_expr *v = side ? e->b : e->a, *k = side ? e->a : e->b;
            if (v && k && v->kind == LIR_E_VAR && m[v->var] &&
                ((k->kind == LIR_E_INT && k->ival != 1 && k->ival != -1) || k->kind == LIR_E_DIM ||
                 k->kind == LIR_E_NNZ))
                m[v->var] = 2;
        }
    mark_scaled_expr(e->a, m);
    mark_scaled_expr(e->b, m);
}

/* In program order: integer variables assigned a value that is not affine
 * in induction variables (1), then those some index multiplies by a size
 * (2) -- GCC computes that product with an imul once per assignment (it
 * cannot strength-reduce a variable read from index data into an
 * induction variable, and reuses the product). */
void loom__sim_mark_scaled(const lir_stmt *s, const unsigned char *var_f32, unsigned char *m)
{
    if (!s)
        return;
    if ((s->kind == LIR_S_LET || s->kind == LIR_S_ASSIGN) && s->var >= 0 && !var_f32[s->var] && !m[s->var] &&
        nonaffine(s->value, m))
        m[s->var] = 1;
    mark_scaled_expr(s->lo, m);
    mark_scaled_expr(s->hi, m);
    mark_scaled_expr(s->cond, m);
    mark_scaled_expr(s->value, m);
    mark_scaled_expr(s->index, m);
    mark_scaled_expr(s->size, m);
    for (int i = 0; i < s->nitems; i++)
        loom__sim_mark_scaled(s->items[i], var_f32, m);
    loom__sim_mark_scaled(s->body, var_f32, m);
    loom__sim_mark_scaled(s->els, var_f32, m);
}
