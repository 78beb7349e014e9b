/* Read-only queries on programs and schedules (query.h). */
#include "query.h"
#include "../ir/domain.h"

#include "schedule_internal.h"

int loom_iter_var(const loom_stage *S, int it)
{
    while (it >= 0 && it < S->niters) {
        const loom_iter *I = &S->iters[it];
        if (I->kind == LOOM_ITER_VAR || I->kind == LOOM_ITER_POS)
            return I->var;
        if (I->kind != LOOM_ITER_SPLIT)
            return -1; /* a fusion iterates several variables */
        it = I->parent;
    }
    return -1;
}

int loom_iter_derives_from(const loom_stage *S, int it, int x)
{
    if (it < 0 || it >= S->niters)
        return 0;
    const loom_iter *I = &S->iters[it];
    switch (I->kind) {
    case LOOM_ITER_VAR:
    case LOOM_ITER_POS: return I->var == x;
    case LOOM_ITER_SPLIT: return loom_iter_derives_from(S, I->parent, x);
    case LOOM_ITER_FUSE: return loom_iter_derives_from(S, I->a, x) || loom_iter_derives_from(S, I->b, x);
    }
    return 0;
}

int loom_loop_of_iter(const loom_stage *S, int iter)
{
    for (int p = 0; p < S->nloops; p++)
        if (S->loops[p].iter == iter)
            return p;
    return -1;
}

int loom_tile_loop(const loom_stage *S, int it, int L)
{
    int pos = loom_loop_of_iter(S, it), fu = S->iters[it].fused_into;
    for (int p = 0; pos < 0 && fu >= 0 && p <= L && p < S->nloops; p++)
        if (S->loops[p].iter == fu && S->iters[fu].fused_into < 0)
            pos = p;
    return pos;
}

int loom_first_consumer(const loom_program *prog, int s)
{
    for (int c = s + 1; c < prog->nstmts; c++)
        if (loom_expr_reads(prog, prog->stmts[c].rhs, prog->stmts[s].lhs))
            return c;
    return -1;
}

int loom_stage_readers(const loom_schedule *sch, int s, int *readers)
{
    const loom_program *prog = sch->prog;
    int n = 0, work[LOOM_MAX_STMTS], nwork = 0, seen[LOOM_MAX_STMTS] = {0};
    work[nwork++] = s;
    while (nwork) {
        int t = prog->stmts[work[--nwork]].lhs;
        for (int r = s + 1; r < sch->nstages; r++) {
            if (seen[r] || !loom_expr_reads(prog, prog->stmts[r].rhs, t))
                continue;
            seen[r] = 1;
            if (sch->stages[r].compute_at == LOOM_AT_INLINE)
                work[nwork++] = r;
            else
                readers[n++] = r;
        }
    }
    return n;
}

int loom_stage_rolled_into(const loom_schedule *sch, int s, int iter)
{
    for (int q = 0; q < sch->nstages; q++) {
        const loom_stage *Q = &sch->stages[q];
        if (Q->rolling && Q->at_stage == s && (iter < 0 || Q->at_iter == iter))
            return 1;
    }
    return 0;
}

int loom_expr_find_access(const loom_program *prog, int e, int t)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return E->tensor == t ? e : -1;
    if (E->kind == LOOM_EXPR_CONST)
        return -1;
    for (int k = 0; k < E->nargs; k++) {
        int r = loom_expr_find_access(prog, E->args[k], t);
        if (r >= 0)
            return r;
    }
    return -1;
}

/* The walk of loom_single_driver over the accesses of expression e. */
static int driver_walk(const loom_program *prog, int e, int x, int *found, int *root_found)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    if (E->kind != LOOM_EXPR_ACCESS) {
        for (int k = 0; k < E->nargs; k++)
            if (driver_walk(prog, E->args[k], x, found, root_found))
                return 1;
        return 0;
    }
    if (!loom__access_compressed_at(prog, E->tensor, E->idx, x))
        return 0;
    const loom_tensor *T = &prog->tensors[E->tensor];
    int root = T->pattern_of >= 0 ? T->pattern_of : E->tensor;
    if (*root_found >= 0 && root != *root_found)
        return 1; /* a second pattern: a merge */
    *root_found = root;
    if (*found < 0)
        *found = E->tensor;
    return 0;
}

int loom_single_driver(const loom_program *prog, int s, int x)
{
    if (s < 0 || s >= prog->nstmts)
        return -1;
    if (loom__stmt_is_union(prog, s) || loom__lhs_assembled_at(prog, s, x))
        return -1; /* a union's merge, or one with an assembled output, is not one pattern's positions */
    int found = -1, root_found = -1;
    if (driver_walk(prog, prog->stmts[s].rhs, x, &found, &root_found))
        return -1;
    return found;
}

int loom_balance_tensor(const loom_schedule *sch, int s, int p)
{
    if (s < 0 || s >= sch->nstages || p != 0 || sch->stages[s].nloops < 1)
        return -1;
    const loom_stage *S = &sch->stages[s];
    const loom_iter *I = &S->iters[S->loops[0].iter];
    const loom_program *prog = sch->prog;
    if (I->kind != LOOM_ITER_VAR)
        return -1;
    int x = I->var, t = -1;
    for (int e = 0; e < prog->nexprs; e++) {
        const loom_expr *E = &prog->exprs[e];
        if (E->kind != LOOM_EXPR_ACCESS || E->nidx < 2 || prog->vars[E->idx[0]].stmt != s)
            continue;
        const loom_format *F = &prog->tensors[E->tensor].format;
        for (int l = 0; l < F->nlevels; l++)
            if (E->idx[F->mode[l]] == x && F->level[l] != LOOM_LEVEL_DENSE)
                return -1; /* x is a sparse (compressed, range) level somewhere: not a plain row loop */
        if (t < 0 && F->nlevels >= 2 && F->level[0] == LOOM_LEVEL_DENSE && F->level[1] == LOOM_LEVEL_COMPRESSED &&
            E->idx[F->mode[0]] == x)
            t = E->tensor;
    }
    return t;
}

/* The first dense input read in expression e with x as its first index. */
static int gathered_row(const loom_program *prog, int e, int x)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_CONST)
        return -1;
    if (E->kind == LOOM_EXPR_ACCESS) {
        const loom_tensor *T = &prog->tensors[E->tensor];
        return T->role == LOOM_TENSOR_INPUT && !loom_tensor_is_sparse(prog, E->tensor) && E->nidx >= 1 &&
                       E->idx[0] == x
                   ? E->tensor
                   : -1;
    }
    for (int k = 0; k < E->nargs; k++) {
        int r = gathered_row(prog, E->args[k], x);
        if (r >= 0)
            return r;
    }
    return -1;
}

int loom_prefetch_tensor(const loom_schedule *sch, int s, int p)
{
    if (s < 0 || s >= sch->nstages || p < 0 || p >= sch->stages[s].nloops)
        return -1;
    const loom_stage *S = &sch->stages[s];
    const loom_iter *I = &S->iters[S->loops[p].iter];
    const loom_program *prog = sch->prog;
    int x, t;
    if (I->kind == LOOM_ITER_VAR && loom_var_is_compressed(sch, s, I->var))
        x = I->var, t = loom_single_driver(prog, s, x);
    else if (I->kind == LOOM_ITER_POS && I->index == 1)
        x = I->var, t = I->tensor;
    else
        return -1;
    int e = t >= 0 ? loom_expr_find_access(prog, prog->stmts[s].rhs, t) : -1;
    if (e < 0)
        return -1;
    const loom_expr *E = &prog->exprs[e];
    const loom_format *F = &prog->tensors[t].format;
    int l = F->nlevels - 1;
    if (l < 0 || F->level[l] != LOOM_LEVEL_COMPRESSED || E->idx[F->mode[l]] != x)
        return -1; /* x is not the tensor's last, compressed level */
    return gathered_row(prog, prog->stmts[s].rhs, x);
}

int loom_workspace_split_ok(const loom_schedule *sch, int s, int L)
{
    if (s < 0 || s >= sch->nstages || L < 0 || L >= sch->stages[s].nloops)
        return 0;
    const loom_stmt *st = &sch->prog->stmts[s];
    return loom__region_split_ok(sch, s, L, st->lhs_idx, sch->prog->tensors[st->lhs].order);
}

int loom__region_split_ok(const loom_schedule *sch, int s, int L, const int *vars, int nvars)
{
    const loom_stage *S = &sch->stages[s];
    for (int d = 0; d < nvars; d++) {
        int v = vars[d], inside = 0, outside = 0;
        for (int p = 0; p < S->nloops; p++)
            if (loom_iter_var(S, S->loops[p].iter) == v)
                *(p > L ? &inside : &outside) += 1;
        if (!inside || !outside)
            continue;
        const loom_iter *V = NULL;
        for (int i = 0; i < S->niters; i++)
            if (S->iters[i].kind == LOOM_ITER_VAR && S->iters[i].var == v)
                V = &S->iters[i];
        if (!V || V->first_child < 0 || S->iters[V->first_child].kind != LOOM_ITER_SPLIT)
            return 0;
        int n = S->iters[V->first_child].nparts, seen_inside = 0;
        for (int k = 0; k < n; k++) {
            /* a tile fused into a loop outside the workspace loop (the
             * parallel i.0 x j.0 of a GEMM) counts there, as the lowering does */
            int posk = loom_tile_loop(S, V->first_child + k, L);
            if (posk < 0)
                return 0; /* a nested split */
            if (posk > L)
                seen_inside = 1;
            else if (seen_inside)
                return 0; /* the tiles inside are not the innermost ones */
        }
    }
    return 1;
}
