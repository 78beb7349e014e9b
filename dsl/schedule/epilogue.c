/* The epilogue of a workspace's copy-out (query.h: LOOM_ANN_EPILOGUE,
 * loom_epilogue_chain, loom_epilogue_stages; issue 30).  One answer for the
 * module that samples it, the validator that checks it and the lowering
 * that emits it. */
#include "query.h"

#include <string.h>

#include "schedule_internal.h"

/* Is every access of expression e either the one read of t at idx (counted
 * in *nt) or a dense tensor defined before stage `before` (an input, or a
 * temporary written by an earlier statement)? */
static int operands_ok(const loom_program *prog, int e, int t, const int *idx, int order, int before, int *nt)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_CONST)
        return 1;
    if (E->kind != LOOM_EXPR_ACCESS) {
        for (int k = 0; k < E->nargs; k++)
            if (!operands_ok(prog, E->args[k], t, idx, order, before, nt))
                return 0;
        return 1;
    }
    if (E->tensor == t) {
        for (int d = 0; d < order; d++)
            if (E->idx[d] != idx[d])
                return 0;
        return ++*nt == 1;
    }
    const loom_tensor *T = &prog->tensors[E->tensor];
    if (loom_tensor_is_sparse(prog, E->tensor))
        return 0;
    return T->role != LOOM_TENSOR_TEMP || (T->def_stmt >= 0 && T->def_stmt < before);
}

/* May stage c (the only reader of t) be evaluated in the copy-out of stage
 * s's workspace, where each element of t is complete?  It reads t at its
 * own output indices (an element of c is the element of t at the same
 * coordinates: its index variables may be other ones than s's). */
static int stage_ok(const loom_schedule *sch, int s, int c, int t)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *P = &prog->stmts[s], *C = &prog->stmts[c];
    const loom_stage *S = &sch->stages[c];
    int order = prog->tensors[P->lhs].order, nt = 0;
    if (c <= s || C->nvars != C->nfree || C->op != LOOM_ASSIGN_SET || prog->tensors[C->lhs].order != order ||
        loom_tensor_is_sparse(prog, C->lhs) || S->rolling || S->rfactor_iter >= 0 ||
        (S->compute_at != LOOM_AT_ROOT && S->compute_at != LOOM_AT_INLINE))
        return 0;
    for (int q = 0; q < sch->nstages; q++) /* a block placed in c's loops would lose them */
        if (sch->stages[q].compute_at == LOOM_AT_LOOP && sch->stages[q].at_stage == c)
            return 0;
    return operands_ok(prog, C->rhs, t, C->lhs_idx, order, s, &nt) && nt == 1;
}

/* Does some sparse operand of s iterate a free (output) index with a level
 * that is not dense?  Then the loops skip output elements, which the
 * copy-out would never reach (an epilogue must write every element). */
static int skips_outputs(const loom_program *prog, int e, const loom_stmt *P)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    if (E->kind != LOOM_EXPR_ACCESS) {
        for (int k = 0; k < E->nargs; k++)
            if (skips_outputs(prog, E->args[k], P))
                return 1;
        return 0;
    }
    if (!loom_tensor_is_sparse(prog, E->tensor))
        return 0;
    const loom_format *F = &prog->tensors[E->tensor].format;
    for (int l = 0; l < F->nlevels; l++)
        for (int k = 0; k < P->nfree; k++)
            if (E->idx[F->mode[l]] == P->vars[k] && F->level[l] != LOOM_LEVEL_DENSE)
                return 1;
    return 0;
}

int loom_epilogue_chain(const loom_schedule *sch, int s, int *chain)
{
    if (!sch || s < 0 || s >= sch->nstages)
        return 0;
    const loom_program *prog = sch->prog;
    const loom_stmt *P = &prog->stmts[s];
    if (sch->stages[s].compute_at != LOOM_AT_ROOT || loom_tensor_is_sparse(prog, P->lhs) ||
        skips_outputs(prog, P->rhs, P))
        return 0;
    int n = 0, t = P->lhs;
    while (n < LOOM_MAX_STMTS && prog->tensors[t].role == LOOM_TENSOR_TEMP) {
        int c = -1, readers = 0;
        for (int r = 0; r < prog->nstmts; r++)
            if (loom_expr_reads(prog, prog->stmts[r].rhs, t))
                c = r, readers++;
        if (readers != 1 || !stage_ok(sch, s, c, t))
            break;
        chain[n++] = c;
        t = prog->stmts[c].lhs;
    }
    return n;
}

int loom_epilogue_value(const loom_schedule *sch, int s)
{
    if (!sch || s < 0 || s >= sch->nstages)
        return 0;
    const loom_stage *S = &sch->stages[s];
    int L = S->cache_iter >= 0 ? loom_loop_of_iter(S, S->cache_iter) : -1;
    if (L < 0)
        return 0;
    for (int k = 0; k < S->loops[L].nann; k++)
        if (!strcmp(S->loops[L].ann[k].key, LOOM_ANN_EPILOGUE))
            return (int)S->loops[L].ann[k].value;
    return 0;
}

int loom_epilogue_stages(const loom_schedule *sch, int s, int *chain)
{
    int k = loom_epilogue_value(sch, s);
    if (k <= 0)
        return 0;
    const loom_stage *S = &sch->stages[s];
    int L = loom_loop_of_iter(S, S->cache_iter);
    for (int p = 0; p < L; p++)
        if (loom_iter_reduces(sch, s, S->loops[p].iter))
            return -1; /* the copy-out adds partials: no element is complete there */
    int n = loom_epilogue_chain(sch, s, chain);
    if (k > n || sch->stages[chain[k - 1]].compute_at == LOOM_AT_INLINE)
        return -1;
    return k;
}
