/* Program analysis for the modules and the default schedule (module.h):
 * Scorch's loop-order ranking and tiling candidates, PosSplit drivers, and
 * the legal loop order closest to a ranking. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"
#include "../dsl/ir/domain.h"

/* Scorch's selectivity constant rho (_CostModelConstants, sparse.md 1b). */
#define SCORCH_RHO 0.0014

/* Visit the accesses of statement s: its left-hand side (lhs = 1) and every
 * access on the right. */
typedef struct access_list {
    int n;
    int tensor[64];
    int idx[64][LOOM_MAX_ORDER];
    int nidx[64];
    int is_lhs[64];
} access_list;

static void collect(const loom_program *prog, int e, access_list *a)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (a->n < 64) {
            a->tensor[a->n] = E->tensor;
            a->nidx[a->n] = E->nidx;
            memcpy(a->idx[a->n], E->idx, sizeof E->idx);
            a->is_lhs[a->n] = 0;
            a->n++;
        }
        return;
    }
    if (E->kind == LOOM_EXPR_CONST)
        return;
    for (int k = 0; k < E->nargs; k++)
        collect(prog, E->args[k], a);
}

static void accesses(const loom_program *prog, int s, access_list *a)
{
    const loom_stmt *S = &prog->stmts[s];
    a->n = 0;
    collect(prog, S->rhs, a);
    const loom_tensor *L = &prog->tensors[S->lhs];
    if (a->n < 64) {
        a->tensor[a->n] = S->lhs;
        a->nidx[a->n] = L->order;
        memcpy(a->idx[a->n], S->lhs_idx, sizeof S->lhs_idx);
        a->is_lhs[a->n] = 1;
        a->n++;
    }
}

/* Level of access k that stores the dimension indexed by x, or -1. */
static int level_of(const loom_program *prog, const access_list *a, int k, int x)
{
    const loom_tensor *T = &prog->tensors[a->tensor[k]];
    for (int l = 0; l < T->format.nlevels; l++)
        if (a->idx[k][T->format.mode[l]] == x)
            return l;
    return -1;
}

int loom_var_is_sparse(const loom_program *prog, int stmt, int x)
{
    access_list a;
    accesses(prog, stmt, &a);
    for (int k = 0; k < a.n; k++) {
        if (a.is_lhs[k])
            continue;
        int l = level_of(prog, &a, k, x);
        if (l >= 0 && prog->tensors[a.tensor[k]].format.level[l] != LOOM_LEVEL_DENSE)
            return 1;
    }
    return 0;
}

int loom_var_carries_reuse(const loom_program *prog, int stmt, int x)
{
    if (loom_var_is_sparse(prog, stmt, x))
        return 0;
    const loom_stmt *S = &prog->stmts[stmt];
    access_list a;
    accesses(prog, stmt, &a);
    for (int k = 0; k < a.n; k++) {
        if (a.is_lhs[k] || level_of(prog, &a, k, x) < 0)
            continue;
        for (int v = 0; v < S->nvars; v++)
            if (level_of(prog, &a, k, S->vars[v]) < 0)
                return 1; /* this operand misses a variable: reused across it */
    }
    return 0;
}

void loom_scorch_rank(const loom_program *prog, int stmt, int *rank)
{
    const loom_stmt *S = &prog->stmts[stmt];
    access_list a;
    accesses(prog, stmt, &a);
    double score[LOOM_MAX_STMT_VARS], meanpos[LOOM_MAX_STMT_VARS];
    for (int v = 0; v < S->nvars; v++) {
        int x = S->vars[v], nsparse = 0, dense_other = 0, absent = 0, npos = 0;
        double pos = 0;
        for (int k = 0; k < a.n; k++) {
            int l = level_of(prog, &a, k, x);
            if (l >= 0) {
                pos += l;
                npos++;
            }
            if (a.is_lhs[k])
                continue;
            if (l < 0)
                absent = 1;
            else if (prog->tensors[a.tensor[k]].format.level[l] != LOOM_LEVEL_DENSE)
                nsparse++;
            else
                dense_other = 1;
        }
        int filter = nsparse > 0 && (dense_other || absent);
        score[v] = filter ? 1 - pow(SCORCH_RHO, nsparse) : 0;
        meanpos[v] = npos ? pos / npos : 0;
    }
    int order[LOOM_MAX_STMT_VARS];
    for (int v = 0; v < S->nvars; v++)
        order[v] = v;
    /* insertion sort: descending score, ascending mean position, statement order */
    for (int i = 1; i < S->nvars; i++)
        for (int j = i; j > 0; j--) {
            int p = order[j - 1], q = order[j];
            int swap = score[q] > score[p] || (score[q] == score[p] && meanpos[q] < meanpos[p]);
            if (!swap)
                break;
            order[j - 1] = q;
            order[j] = p;
        }
    for (int i = 0; i < S->nvars; i++)
        rank[S->vars[order[i]]] = i;
}

#define MAX_ENUM 4096

int loom_closest_legal_order(const loom_schedule *sch, int stage, const int64_t *key, int *order)
{
    int count = loom_legal_loop_orders(sch, stage, NULL, MAX_ENUM); /* count first: usually a few */
    if (count <= 0)
        return -1;
    int (*orders)[LOOM_MAX_LOOPS] = malloc(sizeof(int[LOOM_MAX_LOOPS]) * (size_t)count);
    if (!orders)
        return -1;
    int n = loom_legal_loop_orders(sch, stage, orders, count);
    int nl = sch->stages[stage].nloops, best = -1;
    for (int o = 0; o < n; o++) {
        if (best < 0) {
            best = o;
            continue;
        }
        for (int p = 0; p < nl; p++) {
            int64_t a = key[orders[o][p]], b = key[orders[best][p]];
            if (a != b) {
                if (a < b)
                    best = o;
                break;
            }
        }
    }
    if (best >= 0)
        memcpy(order, orders[best], sizeof(int) * (size_t)nl);
    free(orders);
    return best;
}

int loom_scorch_order(const loom_schedule *sch, int s, int *order)
{
    const loom_stage *S = &sch->stages[s];
    int rank[LOOM_MAX_VARS];
    loom_scorch_rank(sch->prog, s, rank);
    int64_t key[LOOM_MAX_LOOPS];
    for (int p = 0; p < S->nloops; p++) {
        int x = loom_iter_var(S, S->loops[p].iter);
        key[p] = (x >= 0 ? rank[x] : 0) * 64 + p;
    }
    return S->nloops == 0 ? -1 : loom_closest_legal_order(sch, s, key, order);
}

int loom_scorch_outermost(const loom_schedule *sch, int s)
{
    int order[LOOM_MAX_LOOPS];
    if (loom_scorch_order(sch, s, order) < 0)
        return -1;
    return loom_iter_var(&sch->stages[s], sch->stages[s].loops[order[0]].iter);
}
