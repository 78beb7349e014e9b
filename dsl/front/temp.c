/* A statement's temporaries and where their pattern comes from
 * (parse_internal.h: loom__define_temp, loom__domain_pattern_source).  Kept
 * apart from the statement parser so that the reduction scope (scope.c),
 * which defines temporaries of its own, does not call back into it. */
#include "parse_internal.h"
#include "../ir/domain.h"

#include <stdio.h>
#include <string.h>

/* The pattern source of a statement's left-hand side (indices lhs_vars):
 * the first sparse access of the right-hand side with exactly those indices
 * such that every term of the right-hand side's domain (domain.h) holds an
 * access of the same pattern with the same indices, so that every point the
 * statement reaches is stored in that pattern.  *src is -1 when there is
 * none; *union_refused is 1 when a candidate existed but a union term
 * escapes it.  Errors: those of loom_expr_domain. */
loom_status loom__domain_pattern_source(parser *P, int rhs, const int *lhs_vars, int nl, int *src, int *union_refused)
{
    const loom_program *prog = P->prog;
    loom_domain dom;
    int acc[LOOM_DOMAIN_MAX_ATOMS], na = 0;
    *src = -1;
    *union_refused = 0;
    if (nl == 0)
        return LOOM_OK;
    TRY(loom_expr_domain(prog, rhs, &dom, acc, &na, P->err));
    uint64_t match[LOOM_DOMAIN_MAX_ATOMS];
    for (int a = 0; a < na; a++) {
        const loom_expr *x = &prog->exprs[acc[a]];
        match[a] = 0;
        if (x->nidx != nl || !loom_tensor_is_sparse(prog, x->tensor))
            continue;
        int same = 1;
        for (int k = 0; k < nl; k++)
            if (x->idx[k] != lhs_vars[k])
                same = 0;
        if (!same)
            continue;
        /* atoms of the same pattern with the same indices */
        int root = prog->tensors[x->tensor].pattern_of;
        for (int b = 0; b < na; b++) {
            const loom_expr *y = &prog->exprs[acc[b]];
            if (y->nidx == nl && prog->tensors[y->tensor].pattern_of == root &&
                !memcmp(y->idx, x->idx, sizeof(int) * (size_t)nl))
                match[a] |= (uint64_t)1 << b;
        }
    }
    for (int a = 0; a < na && *src < 0; a++) {
        if (!match[a])
            continue;
        int covers = 1;
        for (int t = 0; t < dom.nterms; t++)
            if (!(dom.term[t] & match[a]))
                covers = 0;
        if (covers)
            *src = prog->exprs[acc[a]].tensor;
        else
            *union_refused = 1;
    }
    return LOOM_OK;
}

/* The first sparse access in expression e indexed by the last k of
 * vars[0..n) for some k < n (the leading vars are batch indices it does
 * not use), or -1; *nb the number of leading vars. */
static int batched_source(const loom_program *prog, int e, const int *vars, int n, int *nb, int depth)
{
    if (e < 0 || e >= prog->nexprs || depth > LOOM_MAX_EXPRS)
        return -1;
    const loom_expr *x = &prog->exprs[e];
    if (x->kind == LOOM_EXPR_ACCESS) {
        int k = x->nidx, b = n - k;
        if (k == 0 || b <= 0 || !loom_tensor_is_sparse(prog, x->tensor))
            return -1;
        for (int d = 0; d < k; d++)
            if (x->idx[d] != vars[b + d])
                return -1;
        *nb = b;
        return x->tensor;
    }
    if (x->kind == LOOM_EXPR_CONST)
        return -1;
    for (int a = 0; a < x->nargs && a < 2; a++) {
        int t = batched_source(prog, x->args[a], vars, n, nb, depth + 1);
        if (t >= 0)
            return t;
    }
    return -1;
}

loom_status loom__define_temp(parser *P, const char *name, const int *vars, int n, int rhs,
                              int line, int col, int s, int *out)
{
    loom_program *prog = P->prog;
    if (prog->ntensors >= LOOM_MAX_TENSORS)
        return loom__perr(P, LOOM_ERR_SEMANTIC, line, col,
                    "too many tensors: loom supports at most %d", LOOM_MAX_TENSORS);
    /* Scorch's pattern source under the algebra's domain (G1, docs "Sparse
     * semantics"), else a pattern below dense batch indices when the right
     * side is no union (a mask restricts its indices for every other index,
     * issue 14) */
    int src = -1, nb = 0, union_refused = 0;
    TRY(loom__domain_pattern_source(P, rhs, vars, n, &src, &union_refused));
    if (src < 0 && !union_refused) {
        loom_domain dom;
        int acc[LOOM_DOMAIN_MAX_ATOMS], na = 0;
        TRY(loom_expr_domain(prog, rhs, &dom, acc, &na, P->err));
        if (dom.nterms <= 1)
            src = batched_source(prog, rhs, vars, n, &nb, 0);
    }
    if (src >= 0 && prog->tensors[src].nbatch + nb + prog->tensors[src].format.nlevels != n)
        src = -1; /* not a pattern below dense batch dimensions: dense */
    int lt = prog->ntensors++;
    loom_tensor *tt = &prog->tensors[lt];
    memset(tt, 0, sizeof *tt);
    snprintf(tt->name, sizeof tt->name, "%s", name);
    tt->order = n;
    for (int k = 0; k < n; k++)
        tt->dim_size[k] = prog->vars[vars[k]].size;
    tt->role = LOOM_TENSOR_TEMP;
    tt->format_inferred = 1;
    tt->line = line;
    tt->def_stmt = s;
    if (src >= 0) {
        tt->format = prog->tensors[src].format;
        tt->pattern_of = prog->tensors[src].pattern_of;
        tt->nbatch = prog->tensors[src].nbatch + nb;
        for (int l = 0; l < tt->format.nlevels; l++)
            tt->format.mode[l] += nb;
    } else {
        loom_format_make(LOOM_FORMAT_DENSE, n, 0, &tt->format, NULL);
        tt->pattern_of = -1;
    }
    tt->is_pattern = 0;
    *out = lt;
    return LOOM_OK;
}
