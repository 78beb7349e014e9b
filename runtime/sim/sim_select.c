/* loom: the float selects a vector loop's body holds that are invariant in
 * it (sim.h "Unswitched selects", model 5): an analysis of the LIR that
 * sim.c runs when it builds a vector loop.  Declared in sim_impl.h. */
#include <stdlib.h>

#include "sim_impl.h"

/* Mark in mark[] the variables s assigns (LET, ASSIGN, FOR). */
static void assigned_vars(const lir_stmt *s, unsigned char *mark, int nvars)
{
    if (!s)
        return;
    if ((s->kind == LIR_S_LET || s->kind == LIR_S_ASSIGN || s->kind == LIR_S_FOR) && s->var >= 0 && s->var < nvars)
        mark[s->var] = 1;
    for (int i = 0; s->kind == LIR_S_SEQ && i < s->nitems; i++)
        assigned_vars(s->items[i], mark, nvars);
    assigned_vars(s->body, mark, nvars);
    assigned_vars(s->els, mark, nvars);
}

/* 1 if e reads a marked variable */
static int reads_marked(const lir_expr *e, const unsigned char *mark, int nvars)
{
    if (!e)
        return 0;
    if (e->kind == LIR_E_VAR)
        return e->var >= 0 && e->var < nvars && mark[e->var];
    return reads_marked(e->a, mark, nvars) || reads_marked(e->b, mark, nvars);
}

/* Float min/max in e whose operands read no marked variable */
static int inv_selects_expr(const lir_expr *e, const unsigned char *mark, int nvars)
{
    if (!e)
        return 0;
    if (e->kind == LIR_E_BIN && (e->op == LIR_MIN || e->op == LIR_MAX) && e->type == LIR_F32 &&
        !reads_marked(e, mark, nvars))
        return 1;
    return inv_selects_expr(e->a, mark, nvars) + inv_selects_expr(e->b, mark, nvars);
}

static int inv_selects_stmt(const lir_stmt *s, const unsigned char *mark, int nvars)
{
    if (!s)
        return 0;
    int n = inv_selects_expr(s->value, mark, nvars) + inv_selects_expr(s->cond, mark, nvars);
    for (int i = 0; s->kind == LIR_S_SEQ && i < s->nitems; i++)
        n += inv_selects_stmt(s->items[i], mark, nvars);
    return n + inv_selects_stmt(s->body, mark, nvars) + inv_selects_stmt(s->els, mark, nvars);
}

int loom__sim_invariant_selects(const lir_func *f, const lir_stmt *s)
{
    unsigned char *mark = calloc((size_t)(f->nvars > 0 ? f->nvars : 1), 1);
    if (!mark)
        return -1;
    if (s->var >= 0 && s->var < f->nvars)
        mark[s->var] = 1;
    assigned_vars(s->body, mark, f->nvars);
    int n = inv_selects_stmt(s->body, mark, f->nvars);
    free(mark);
    return n;
}
