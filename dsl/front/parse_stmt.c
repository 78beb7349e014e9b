/* The `.loom` parser: statements (parse_internal.h). */
#include "parse_internal.h"
#include "../ir/domain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void stmt_text(parser *P, const token *first, char *buf, size_t n)
{
    const char *s = P->lx.text;
    size_t b = first->pos - (size_t)(first->col - 1), e = b;
    while (e < P->lx.len && s[e] != '\n' && s[e] != '#')
        e++;
    while (b < e && (s[b] == ' ' || s[b] == '\t'))
        b++;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r'))
        e--;
    size_t len = e - b < n - 1 ? e - b : n - 1;
    memcpy(buf, s + b, len);
    buf[len] = '\0';
}

/* A declared csr output with no pattern source: assemble its pattern when
 * its statement fits loom__assembly_plan (domain.h; then *src = lt and
 * pattern_of = lt); otherwise *src stays -1, and a union that cannot be
 * assembled is an error naming why. */
static loom_status assembled_source(parser *P, int lt, int s, int rhs, const int *lhs_vars, const token *lhs,
                                    int union_refused, int *src)
{
    loom_program *prog = P->prog;
    loom_tensor *tt = &prog->tensors[lt];
    loom_stmt tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.lhs = lt;
    tmp.rhs = rhs;
    tmp.lhs_idx[0] = lhs_vars[0];
    tmp.lhs_idx[1] = lhs_vars[1];
    tmp.line = lhs->line;
    loom_assembly plan;
    int saved = prog->nstmts;
    prog->stmts[s] = tmp; /* rewritten in full by the caller */
    prog->nstmts = s + 1;
    loom_error aerr;
    loom_status ast = loom__assembly_plan(prog, s, &plan, &aerr);
    prog->nstmts = saved;
    if (ast == LOOM_OK) {
        tt->pattern_of = lt;
        *src = lt;
    } else if (union_refused) {
        return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                    "output %s is declared %s but the right side is non-zero on the union of several "
                    "patterns that loom cannot assemble: %s",
                    lhs->name, loom_format_name(tt->format.kind), aerr.msg);
    }
    return LOOM_OK;
}

static void format_vars(const loom_program *prog, const int *vars, int n, char *buf, size_t sz)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < n && used < sz; k++) {
        int w = snprintf(buf + used, sz - used, "%s%s", k ? ", " : "", prog->vars[vars[k]].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* The lhs tensor `lhs` may be assigned here: not an input, not assigned
 * before.  *lt its index, or -1 for a new temporary. */
static loom_status check_lhs(parser *P, const token *lhs, int *lt)
{
    loom_program *prog = P->prog;
    int s = prog->nstmts;
    if (loom_op_find_call(lhs->name))
        return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                    "'%s' is a built-in function and cannot be assigned", lhs->name);
    if (s >= LOOM_MAX_STMTS)
        return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                    "too many statements: loom supports at most %d", LOOM_MAX_STMTS);
    *lt = loom_program_find_tensor(prog, lhs->name);
    if (*lt < 0)
        return LOOM_OK;
    const loom_tensor *tt = &prog->tensors[*lt];
    if (tt->role == LOOM_TENSOR_INPUT)
        return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                    "tensor %s is an input (declared in line %d without `output`) but line %d "
                    "assigns it; add `output` to its declaration, or drop its declaration to "
                    "make it a temporary",
                    lhs->name, tt->line, lhs->line);
    if (tt->role == LOOM_TENSOR_OUTPUT && tt->def_stmt >= 0)
        return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                    "output %s is assigned twice (lines %d and %d); each tensor is assigned "
                    "by exactly one statement",
                    lhs->name, prog->stmts[tt->def_stmt].line, lhs->line);
    if (tt->role == LOOM_TENSOR_TEMP)
        return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                    "tensor %s is assigned twice (lines %d and %d); each tensor is assigned "
                    "by exactly one statement",
                    lhs->name, tt->line, lhs->line);
    return LOOM_OK;
}

/* The index list of the lhs, `(i, j)`: P->tok is the name on entry and the
 * token after ')' on exit; *nl indices, their columns and statement vars. */
static loom_status parse_lhs_indices(parser *P, const token *lhs, int lt, int *nl,
                                     int *lhs_col, int *lhs_sv)
{
    DECL_FOUND;
    loom_program *prog = P->prog;
    TRY(loom__advance(P));
    if (P->tok.kind != TK_LP)
        return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                    "expected '(' and an index list after %s, found %s", lhs->name, FOUND(P));
    TRY(loom__advance(P));
    int n = 0;
    if (P->tok.kind != TK_RP) {
        for (;;) {
            token it = P->tok;
            if (it.kind != TK_IDENT)
                return loom__perr(P, LOOM_ERR_PARSE, it.line, it.col,
                            "expected an index variable in the index list of %s, found %s",
                            lhs->name, FOUND(P));
            if (lt >= 0 && n >= prog->tensors[lt].order)
                return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                            "tensor %s has %d dimension%s but line %d gives it more indices",
                            lhs->name, prog->tensors[lt].order,
                            prog->tensors[lt].order == 1 ? "" : "s", lhs->line);
            if (n >= LOOM_MAX_ORDER)
                return loom__perr(P, LOOM_ERR_SEMANTIC, it.line, it.col,
                            "too many indices on %s: a tensor has at most %d dimensions",
                            lhs->name, LOOM_MAX_ORDER);
            if (loom__stmt_var(P, it.name) >= 0)
                return loom__perr(P, LOOM_ERR_SEMANTIC, it.line, it.col,
                            "index %s appears twice in the access of %s; loom accesses need "
                            "distinct indices (diagonals are not supported)",
                            it.name, lhs->name);
            int sv;
            TRY(loom__new_stmt_var(P, &it, lt >= 0 ? prog->tensors[lt].dim_size[n] : -1, 0, &sv));
            lhs_col[n] = it.col;
            lhs_sv[n++] = sv;
            TRY(loom__advance(P));
            if (P->tok.kind == TK_COMMA) {
                TRY(loom__advance(P));
                continue;
            }
            if (P->tok.kind == TK_RP)
                break;
            return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                        "expected ',' or ')' after index list of %s, found %s", lhs->name,
                        FOUND(P));
        }
    }
    if (lt >= 0 && n != prog->tensors[lt].order)
        return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                    "tensor %s has %d dimension%s but line %d gives it %d ind%s", lhs->name,
                    prog->tensors[lt].order, prog->tensors[lt].order == 1 ? "" : "s", lhs->line,
                    n, n == 1 ? "ex" : "ices");
    *nl = n;
    return loom__advance(P); /* ')' */
}

/* The assignment operator (=, +=, max=); P->tok is after it on exit. */
static loom_status parse_assign_op(parser *P, const token *lhs, loom_assign_op *op)
{
    DECL_FOUND;
    token optok = P->tok;
    if (optok.kind == TK_ASSIGN) {
        *op = LOOM_ASSIGN_SET;
    } else if (optok.kind == TK_PLUSEQ) {
        *op = LOOM_ASSIGN_ADD;
    } else if (optok.kind == TK_MAXEQ) {
        *op = LOOM_ASSIGN_MAX;
    } else if (optok.kind == TK_IDENT && strcmp(optok.name, "max") == 0 && loom__peek(P) == TK_ASSIGN) {
        *op = LOOM_ASSIGN_MAX;
        TRY(loom__advance(P));
    } else {
        return loom__perr(P, LOOM_ERR_PARSE, optok.line, optok.col,
                    "expected '=', '+=' or 'max=' after the index list of %s, found %s",
                    lhs->name, FOUND(P));
    }
    return loom__advance(P);
}

/* A declared output assigned by statement s: a sparse one takes its
 * pattern from an operand indexed exactly like it (SDDMM-style). */
static loom_status define_output(parser *P, const token *lhs, int lt, const int *lhs_vars, int nl,
                                 int rhs, int s)
{
    loom_program *prog = P->prog;
    loom_tensor *tt = &prog->tensors[lt];
    if (loom_tensor_is_sparse(prog, lt)) {
        /* pattern source: a sparse operand with exactly the lhs indices whose
         * pattern holds the whole domain of the right-hand side (it is in every
         * union term: `A(i,j) + B(i,j)` has none, docs "Sparse semantics") */
        int src = -1, union_refused = 0;
        TRY(loom__domain_pattern_source(P, rhs, lhs_vars, nl, &src, &union_refused));
        char ib[160];
        format_vars(prog, lhs_vars, nl, ib, sizeof ib);
        if (src < 0 && tt->role == LOOM_TENSOR_OUTPUT && tt->format.kind == LOOM_FORMAT_CSR)
            TRY(assembled_source(P, lt, s, rhs, lhs_vars, lhs, union_refused, &src));
        if (src < 0 && union_refused)
            return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                        "output %s is declared %s but the right side is non-zero on the "
                        "union of several patterns (a sum or difference of sparse operands, "
                        "docs/schedule-language.md \"Sparse semantics\"); loom assembles "
                        "a new pattern only for a csr output: declare %s csr or dense",
                        lhs->name, loom_format_name(tt->format.kind), lhs->name);
        if (src < 0)
            return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                        "output %s is declared %s but no sparse operand with indices (%s) "
                        "gives its pattern; loom computes sparse outputs only at the stored "
                        "entries of such an operand (SDDMM-style); declare %s dense",
                        lhs->name, loom_format_name(tt->format.kind), ib, lhs->name);
        const loom_format *sf = &prog->tensors[src].format;
        if (src != lt && (sf->kind != tt->format.kind || sf->band_width != tt->format.band_width))
            return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs->col,
                        "output %s is declared %s but its pattern comes from %s, which is "
                        "%s; declare %s %s",
                        lhs->name, loom_format_name(tt->format.kind), prog->tensors[src].name,
                        loom_format_name(sf->kind), lhs->name, loom_format_name(sf->kind));
        tt->pattern_of = src == lt ? lt : prog->tensors[src].pattern_of;
    }
    tt->def_stmt = s;
    return LOOM_OK;
}

/* The statement's meaning: it reads a tensor, every lhs index has an
 * extent, and max= has something to reduce. */
static loom_status check_meaning(parser *P, int e0, const token *first, const token *lhs,
                                 const token *optok, loom_assign_op op, int nl,
                                 const int *lhs_col, const int *lhs_sv)
{
    loom_program *prog = P->prog;
    int naccess = 0;
    for (int e = e0; e < prog->nexprs; e++)
        if (prog->exprs[e].kind == LOOM_EXPR_ACCESS)
            naccess++;
    if (naccess == 0)
        return loom__perr(P, LOOM_ERR_SEMANTIC, first->line, first->col,
                    "the right side of line %d reads no tensor; a statement computes from tensor "
                    "accesses (a constant alone has no iteration space)",
                    lhs->line);
    for (int k = 0; k < nl; k++)
        if (!P->sv_used_rhs[lhs_sv[k]])
            return loom__perr(P, LOOM_ERR_SEMANTIC, lhs->line, lhs_col[k],
                        "index %s on the left of line %d appears on no tensor on the right, so it "
                        "has no extent",
                        prog->vars[P->sv[lhs_sv[k]]].name, lhs->line);
    if (op == LOOM_ASSIGN_MAX && P->nsv == nl)
        return loom__perr(P, LOOM_ERR_SEMANTIC, optok->line, optok->col,
                    "reduction with no possible meaning: max= needs an index on the right that is "
                    "not on the left");
    return LOOM_OK;
}

loom_status loom__parse_stmt(parser *P)
{
    DECL_FOUND;
    loom_program *prog = P->prog;
    token lhs = P->tok;
    int s = prog->nstmts, lt;
    TRY(check_lhs(P, &lhs, &lt));
    P->cur_lhs = lt;
    snprintf(P->cur_lhs_name, sizeof P->cur_lhs_name, "%s", lhs.name);
    P->cur_line = lhs.line;
    P->nsv = 0;
    int nl = 0, lhs_col[LOOM_MAX_ORDER], lhs_sv[LOOM_MAX_ORDER];
    TRY(parse_lhs_indices(P, &lhs, lt, &nl, lhs_col, lhs_sv));
    token optok = P->tok;
    loom_assign_op op = LOOM_ASSIGN_SET;
    TRY(parse_assign_op(P, &lhs, &op));
    token first = P->tok;
    int e0 = prog->nexprs, rhs;
    P->depth = 0;
    TRY(loom__parse_expr(P, &rhs));
    if (!loom__at_end(P))
        return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                    P->tok.kind == TK_RP
                        ? "unexpected %s after the end of the statement (unbalanced parentheses?)"
                        : "expected an operator or end of line after the expression, found %s",
                    FOUND(P));
    TRY(check_meaning(P, e0, &first, &lhs, &optok, op, nl, lhs_col, lhs_sv));
    int lhs_vars[LOOM_MAX_ORDER];
    for (int k = 0; k < nl; k++)
        lhs_vars[k] = P->sv[lhs_sv[k]];
    if (lt < 0)
        TRY(loom__define_temp(P, lhs.name, lhs_vars, nl, rhs, lhs.line, lhs.col, s, &lt));
    else
        TRY(define_output(P, &lhs, lt, lhs_vars, nl, rhs, s));
    loom_stmt *st = &prog->stmts[s];
    memset(st, 0, sizeof *st);
    st->lhs = lt;
    for (int k = 0; k < nl; k++)
        st->lhs_idx[k] = lhs_vars[k];
    st->op = op;
    st->rhs = rhs;
    st->nvars = P->nsv;
    for (int i = 0; i < P->nsv; i++)
        st->vars[i] = P->sv[i];
    st->nfree = nl;
    st->line = lhs.line;
    stmt_text(P, &lhs, st->text, sizeof st->text);
    prog->nstmts = s + 1;
    return loom__scope_reductions(P, s);
}
