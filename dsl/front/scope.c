/* TACO's reduction scope (parse_internal.h: loom__scope_reductions).
 *
 * TACO (Kjolstad et al., OOPSLA 2017, "concrete index notation"): a
 * reduction over index variable v wraps the smallest subexpression that uses
 * v.  loom evaluates a statement by reducing its whole right side over the
 * iteration points, which is the same thing when the path from the root to
 * that subexpression is linear in it (products, quotients by v-free
 * divisors, negation): the sum of c * f(v) is c times the sum.  Where the
 * path adds or subtracts a v-free term (a bias: y(i) = A(i, k) * x(k) +
 * b(i)), the subexpression gets a statement of its own that computes it into
 * a temporary, and the statement reads the temporary.  Two limits, so that
 * the softmax idioms keep their meaning: the scope never enters the
 * argument of a function call or a divisor (l(i) += exp(S(i, j) - m(i)) sums
 * the exps, as before), and max= keeps reducing its whole right side (the
 * max of S + b is the max of S plus b anyway).  So every consumer of the bound program (reference, lowering,
 * simulator, FLOP counts) sees the scoped reduction without knowing of it.
 */
#include "parse_internal.h"

#include <stdio.h>
#include <string.h>

/* 1 if expression e reads index variable v, not counting subtree `skip`. */
static int uses(const loom_program *prog, int e, int v, int skip, int depth)
{
    if (e < 0 || e >= prog->nexprs || e == skip || depth > LOOM_MAX_EXPRS)
        return 0;
    const loom_expr *x = &prog->exprs[e];
    if (x->kind == LOOM_EXPR_ACCESS) {
        for (int d = 0; d < x->nidx; d++)
            if (x->idx[d] == v)
                return 1;
        return 0;
    }
    if (x->kind == LOOM_EXPR_CONST)
        return 0;
    for (int a = 0; a < x->nargs && a < 2; a++)
        if (uses(prog, x->args[a], v, skip, depth + 1))
            return 1;
    return 0;
}

/* The smallest subexpression of statement st's right side that holds every
 * use of v; *parent and *argk locate it (-1 for the root); *linear is 1 when
 * summing the whole right side over v equals summing the subexpression. */
static int smallest_use(const loom_program *prog, const loom_stmt *st, int v, int *parent,
                        int *argk, int *linear)
{
    int e = st->rhs;
    *parent = *argk = -1;
    *linear = 1;
    for (int depth = 0; depth <= LOOM_MAX_EXPRS; depth++) {
        const loom_expr *x = &prog->exprs[e];
        if (x->kind == LOOM_EXPR_ACCESS || x->kind == LOOM_EXPR_CONST)
            return e;
        int n = 0, k = -1;
        for (int a = 0; a < x->nargs && a < 2; a++)
            if (uses(prog, x->args[a], v, -1, 0)) {
                n++;
                k = a;
            }
        /* the scope never enters a call's argument or a divisor */
        if (n != 1 || x->kind == LOOM_EXPR_CALL || (x->kind == LOOM_EXPR_DIV && k == 1))
            return e;
        *linear &= x->kind != LOOM_EXPR_ADD && x->kind != LOOM_EXPR_SUB;
        *parent = e;
        *argk = k;
        e = x->args[k];
    }
    return e;
}

/* Append to vars[*n] (capacity LOOM_MAX_STMT_VARS) every index variable
 * the accesses of e use, in order of first appearance, left to right. */
static void collect_vars(const loom_program *prog, int e, int *vars, int *n, int depth)
{
    if (e < 0 || e >= prog->nexprs || depth > LOOM_MAX_EXPRS)
        return;
    const loom_expr *x = &prog->exprs[e];
    if (x->kind == LOOM_EXPR_ACCESS) {
        for (int d = 0; d < x->nidx; d++) {
            int seen = 0;
            for (int k = 0; k < *n; k++)
                seen |= vars[k] == x->idx[d];
            if (!seen && *n < LOOM_MAX_STMT_VARS)
                vars[(*n)++] = x->idx[d];
        }
        return;
    }
    for (int a = 0; x->kind != LOOM_EXPR_CONST && a < x->nargs && a < 2; a++)
        collect_vars(prog, x->args[a], vars, n, depth + 1);
}

/* In subtree e, index variable `from` becomes `to`. */
static void rename_var(loom_program *prog, int e, int from, int to, int depth)
{
    if (e < 0 || e >= prog->nexprs || depth > LOOM_MAX_EXPRS)
        return;
    loom_expr *x = &prog->exprs[e];
    if (x->kind == LOOM_EXPR_ACCESS) {
        for (int d = 0; d < x->nidx; d++)
            if (x->idx[d] == from)
                x->idx[d] = to;
        return;
    }
    for (int a = 0; x->kind != LOOM_EXPR_CONST && a < x->nargs && a < 2; a++)
        rename_var(prog, x->args[a], from, to, depth + 1);
}

/* A tensor name not in use: "<lhs>_sum_<v>" (or _max_), then a number. */
static void temp_name(const loom_program *prog, const char *lhs, const char *v, int is_max,
                      char *buf, size_t n)
{
    for (int k = 0; k < 1000; k++) {
        char num[8] = "";
        if (k)
            snprintf(num, sizeof num, "%d", k);
        snprintf(buf, n, "%.12s_%s_%.8s%.3s", lhs, is_max ? "max" : "sum", v, num);
        if (loom_program_find_tensor(prog, buf) < 0)
            return;
    }
}

/* Move statements s.. one place up, keeping the program's references. */
static void make_room(loom_program *prog, int s)
{
    memmove(&prog->stmts[s + 1], &prog->stmts[s], (size_t)(prog->nstmts - s) * sizeof prog->stmts[0]);
    prog->nstmts++;
    for (int v = 0; v < prog->nvars; v++)
        if (prog->vars[v].stmt >= s)
            prog->vars[v].stmt++;
    for (int t = 0; t < prog->ntensors; t++)
        if (prog->tensors[t].def_stmt >= s)
            prog->tensors[t].def_stmt++;
}

/* Statement s reduces v over subexpression `sub` (argument argk of
 * `parent`): compute sub into a new temporary by a new statement s, and
 * read it in the old one, now s + 1. */
static loom_status hoist(parser *P, int s, int v, int sub, int parent, int argk)
{
    loom_program *prog = P->prog;
    const loom_stmt *o = &prog->stmts[s];
    const loom_expr *sx = &prog->exprs[sub];
    int line = o->line, col = sx->col;
    int all[LOOM_MAX_STMT_VARS], nall = 0, freev[LOOM_MAX_STMT_VARS], nfree = 0;
    int red[LOOM_MAX_STMT_VARS], nred = 0;
    collect_vars(prog, sub, all, &nall, 0);
    for (int k = 0; k < o->nfree; k++) /* the lhs's indices first, in its order */
        for (int a = 0; a < nall; a++)
            if (all[a] == o->lhs_idx[k])
                freev[nfree++] = all[a];
    for (int a = 0; a < nall; a++) {
        if (prog->vars[all[a]].reduced == 0)
            continue;
        if (uses(prog, o->rhs, all[a], sub, 0))
            freev[nfree++] = all[a]; /* reduced by the outer statement */
        else
            red[nred++] = all[a];
    }
    if (nfree > LOOM_MAX_ORDER || prog->nstmts >= LOOM_MAX_STMTS ||
        prog->nvars + nfree > LOOM_MAX_VARS || prog->nexprs >= LOOM_MAX_EXPRS)
        return loom__perr(P, LOOM_ERR_SEMANTIC, line, col,
                    "the reduction over %s in line %d wraps a subexpression (TACO's rule) that "
                    "needs a statement of its own, but %s; simplify the statement or split it "
                    "by hand",
                    prog->vars[v].name, line,
                    nfree > LOOM_MAX_ORDER ? "its temporary would have more than 4 indices"
                                           : "the program's tables are full");
    make_room(prog, s);
    loom_stmt *outer = &prog->stmts[s + 1];
    /* the new statement's variables: copies of the free ones, the reduced
       ones move over */
    int copy[LOOM_MAX_STMT_VARS];
    for (int k = 0; k < nfree; k++) {
        copy[k] = prog->nvars++;
        prog->vars[copy[k]] = prog->vars[freev[k]];
        prog->vars[copy[k]].stmt = s;
        prog->vars[copy[k]].reduced = 0;
        rename_var(prog, sub, freev[k], copy[k], 0);
    }
    for (int k = 0; k < nred; k++)
        prog->vars[red[k]].stmt = s;
    char name[LOOM_MAX_NAME];
    int is_max = outer->op == LOOM_ASSIGN_MAX;
    temp_name(prog, prog->tensors[outer->lhs].name, prog->vars[v].name, is_max, name, sizeof name);
    int t;
    TRY(loom__define_temp(P, name, copy, nfree, sub, line, col, s, &t));
    loom_stmt *st = &prog->stmts[s];
    memset(st, 0, sizeof *st);
    st->lhs = t;
    for (int k = 0; k < nfree; k++)
        st->lhs_idx[k] = st->vars[k] = copy[k];
    for (int k = 0; k < nred; k++)
        st->vars[nfree + k] = red[k];
    st->op = is_max ? LOOM_ASSIGN_MAX : LOOM_ASSIGN_SET;
    st->rhs = sub;
    st->nvars = nfree + nred;
    st->nfree = nfree;
    st->line = line;
    char text[sizeof st->text];
    snprintf(text, sizeof text, "%s = the %s over %s in `%.180s`", name, is_max ? "max" : "sum",
             prog->vars[v].name, outer->text);
    memcpy(st->text, text, sizeof text);
    /* the outer statement reads the temporary in sub's place */
    int a = prog->nexprs++;
    loom_expr *ax = &prog->exprs[a];
    memset(ax, 0, sizeof *ax);
    ax->kind = LOOM_EXPR_ACCESS;
    ax->tensor = t;
    ax->nidx = nfree;
    for (int k = 0; k < nfree; k++)
        ax->idx[k] = freev[k];
    ax->line = line;
    ax->col = col;
    if (parent < 0)
        outer->rhs = a;
    else
        prog->exprs[parent].args[argk] = a;
    int n = 0, left = 0;
    for (int k = 0; k < outer->nvars; k++) {
        int moved = 0;
        for (int r = 0; r < nred; r++)
            moved |= outer->vars[k] == red[r];
        if (!moved) {
            outer->vars[n++] = outer->vars[k];
            left += k >= outer->nfree;
        }
    }
    outer->nvars = n;
    if (!left && outer->op == LOOM_ASSIGN_MAX)
        outer->op = LOOM_ASSIGN_SET;
    return LOOM_OK;
}

/* The reduced variable of statement s whose reduction must be scoped, or
 * -1; its subexpression and where it hangs. */
static int needs_scope(const loom_program *prog, int s, int *sub, int *parent, int *argk)
{
    const loom_stmt *st = &prog->stmts[s];
    for (int k = st->nfree; k < st->nvars; k++) {
        int linear;
        *sub = smallest_use(prog, st, st->vars[k], parent, argk, &linear);
        if (*sub != st->rhs && st->op != LOOM_ASSIGN_MAX && !linear)
            return st->vars[k];
    }
    return -1;
}

static loom_status scope(parser *P, int s, int *end, int depth)
{
    int cur = s;
    for (;;) {
        int sub, parent, argk;
        int v = needs_scope(P->prog, cur, &sub, &parent, &argk);
        if (v < 0 || depth > LOOM_MAX_STMTS)
            break;
        TRY(hoist(P, cur, v, sub, parent, argk));
        int tend;
        TRY(scope(P, cur, &tend, depth + 1)); /* the new statement may need it too */
        cur = tend + 1;
    }
    *end = cur;
    return LOOM_OK;
}

loom_status loom__scope_reductions(parser *P, int s)
{
    int end;
    return scope(P, s, &end, 0);
}
