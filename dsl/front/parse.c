/* loom: the `.loom` workload parser -- a recursive-descent parser over the
 * hand-written lexer of lex.c, that builds a loom_program directly, checking the
 * meaning of each line as it goes (DESIGN.md "The workload language").  This
 * file: declarations, expressions, the program; parse_stmt.c: statements. */
#include "../ir/program.h"
#include "parse_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 200          /* expression nesting */
#define MAX_PARAM_VALUE ((int64_t)INT32_MAX) /* int32 coordinates (kernel_abi.h) */

loom_status loom__perr(parser *P, loom_status st, int line, int col, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return loom_error_set(P->err, st, P->path, line < 1 ? 1 : line, col < 1 ? 1 : col, "%s",
                          msg);
}


loom_status loom__advance(parser *P)
{
    return loom__lex(&P->lx, &P->tok, P->path, P->err);
}

tk_kind loom__peek(parser *P)
{
    lexer copy = P->lx;
    token t;
    if (loom__lex(&copy, &t, P->path, NULL) != LOOM_OK)
        return TK_ERROR;
    return t.kind;
}

/* A short description of a token for "found X". */
const char *loom__tokdesc(parser *P, const token *t, char *buf, size_t n)
{
    switch (t->kind) {
    case TK_EOF: return "end of input";
    case TK_NL: return "end of line";
    case TK_ERROR: return "an invalid token";
    default: break;
    }
    size_t len = t->len > 40 ? 40 : t->len;
    snprintf(buf, n, "'%.*s'", (int)len, P->lx.text + t->pos);
    return buf;
}


int loom__at_end(const parser *P) { return P->tok.kind == TK_NL || P->tok.kind == TK_EOF; }

/* Find or create a size symbol. */
static loom_status get_size(parser *P, const token *t, int *out)
{
    loom_program *prog = P->prog;
    int s = loom_program_find_size(prog, t->name);
    if (s < 0) {
        if (prog->nsizes >= LOOM_MAX_SIZES)
            return loom__perr(P, LOOM_ERR_SEMANTIC, t->line, t->col,
                        "too many sizes: loom supports at most %d size symbols", LOOM_MAX_SIZES);
        s = prog->nsizes++;
        loom_size *sz = &prog->sizes[s];
        memset(sz, 0, sizeof *sz);
        snprintf(sz->name, sizeof sz->name, "%s", t->name);
        sz->line = t->line;
    }
    *out = s;
    return LOOM_OK;
}

/* ---- declarations ----------------------------------------------------- */

loom_status loom__parse_param(parser *P)
{
    DECL_FOUND;
    loom_program *prog = P->prog;
    TRY(loom__advance(P)); /* 'param' */
    token name = P->tok; /* an identifier: checked by the caller */
    int s = loom_program_find_size(prog, name.name);
    if (s >= 0 && prog->sizes[s].is_param)
        return loom__perr(P, LOOM_ERR_SEMANTIC, name.line, name.col,
                    "param %s is declared twice (first in line %d)", name.name,
                    prog->sizes[s].line);
    TRY(loom__advance(P));
    if (P->tok.kind != TK_ASSIGN)
        return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                    "expected '=' after param %s, found %s", name.name, FOUND(P));
    TRY(loom__advance(P));
    token val = P->tok;
    if (val.kind == TK_MINUS || (val.kind == TK_NUM && !val.is_int) ||
        (val.kind == TK_NUM && val.ival <= 0 && !val.too_big))
        return loom__perr(P, LOOM_ERR_SEMANTIC, val.line, val.col,
                    "param %s must be a positive integer, found %s", name.name, FOUND(P));
    if (val.kind != TK_NUM)
        return loom__perr(P, LOOM_ERR_PARSE, val.line, val.col,
                    "expected a positive integer value for param %s, found %s", name.name,
                    FOUND(P));
    if (val.too_big || val.ival > MAX_PARAM_VALUE)
        return loom__perr(P, LOOM_ERR_SEMANTIC, val.line, val.col,
                    "param %s = %s is too large (at most %lld)", name.name, FOUND(P),
                    (long long)MAX_PARAM_VALUE);
    TRY(loom__advance(P));
    if (!loom__at_end(P))
        return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                    "unexpected %s after param %s = %lld (expected end of line)", FOUND(P),
                    name.name, (long long)val.ival);
    TRY(get_size(P, &name, &s));
    loom_size *sz = &prog->sizes[s];
    sz->is_param = 1;
    sz->def_value = val.ival;
    sz->value = val.ival;
    sz->bound = 1;
    sz->line = name.line;
    snprintf(sz->origin, sizeof sz->origin, "param default");
    return LOOM_OK;
}

loom_status loom__parse_tensor(parser *P)
{
    DECL_FOUND;
    loom_program *prog = P->prog;
    TRY(loom__advance(P)); /* 'tensor' */
    token name = P->tok;
    if (loom_op_find_call(name.name))
        return loom__perr(P, LOOM_ERR_SEMANTIC, name.line, name.col,
                    "'%s' is a built-in function and cannot name a tensor", name.name);
    int prev = loom_program_find_tensor(prog, name.name);
    if (prev >= 0)
        return loom__perr(P, LOOM_ERR_SEMANTIC, name.line, name.col,
                    prog->tensors[prev].role == LOOM_TENSOR_TEMP
                        ? "tensor %s is already defined: line %d assigns it as a temporary; "
                          "declare it before that statement"
                        : "tensor %s is declared twice (first in line %d)",
                    name.name, prog->tensors[prev].line);
    TRY(loom__advance(P));
    if (P->tok.kind != TK_LP)
        return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                    "expected '(' and the dimensions after tensor %s, found %s", name.name,
                    FOUND(P));
    TRY(loom__advance(P));
    int order = 0, dims[LOOM_MAX_ORDER];
    if (P->tok.kind != TK_RP) {
        for (;;) {
            if (P->tok.kind != TK_IDENT)
                return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                            "expected a size name (an identifier such as N) in the dimensions "
                            "of %s, found %s",
                            name.name, FOUND(P));
            if (order == LOOM_MAX_ORDER)
                return loom__perr(P, LOOM_ERR_SEMANTIC, P->tok.line, P->tok.col,
                            "tensor %s has more than %d dimensions", name.name, LOOM_MAX_ORDER);
            TRY(get_size(P, &P->tok, &dims[order]));
            order++;
            TRY(loom__advance(P));
            if (P->tok.kind == TK_COMMA) {
                TRY(loom__advance(P));
                continue;
            }
            if (P->tok.kind == TK_RP)
                break;
            return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                        "expected ',' or ')' in the dimensions of %s, found %s", name.name,
                        FOUND(P));
        }
    }
    TRY(loom__advance(P)); /* ')' */
    token ftok = P->tok;
    if (ftok.kind != TK_IDENT)
        return loom__perr(P, LOOM_ERR_PARSE, ftok.line, ftok.col,
                    "expected a format after the dimensions of %s (dense, csr, dcsr, csc, causal, "
                    "band(W)), found %s",
                    name.name, FOUND(P));
    loom_format_kind kind;
    int width = 0;
    if (strcmp(ftok.name, "dense") == 0)
        kind = LOOM_FORMAT_DENSE;
    else if (strcmp(ftok.name, "csr") == 0)
        kind = LOOM_FORMAT_CSR;
    else if (strcmp(ftok.name, "dcsr") == 0)
        kind = LOOM_FORMAT_DCSR;
    else if (strcmp(ftok.name, "csc") == 0)
        kind = LOOM_FORMAT_CSC;
    else if (strcmp(ftok.name, "causal") == 0)
        kind = LOOM_FORMAT_CAUSAL;
    else if (strcmp(ftok.name, "band") == 0)
        kind = LOOM_FORMAT_BAND;
    else
        return loom__perr(P, LOOM_ERR_PARSE, ftok.line, ftok.col,
                    "unknown format '%s' (expected dense, csr, dcsr, csc, causal, band(W))",
                    ftok.name);
    TRY(loom__advance(P));
    if (kind == LOOM_FORMAT_BAND) {
        if (P->tok.kind != TK_LP)
            return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                        "expected '(' and a width after band (as in band(32)), found %s",
                        FOUND(P));
        TRY(loom__advance(P));
        if (P->tok.kind != TK_NUM || !P->tok.is_int || P->tok.too_big ||
            P->tok.ival > 1000000000)
            return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                        "expected a non-negative integer band width, found %s", FOUND(P));
        width = (int)P->tok.ival;
        TRY(loom__advance(P));
        if (P->tok.kind != TK_RP)
            return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                        "expected ')' after the band width, found %s", FOUND(P));
        TRY(loom__advance(P));
    }
    loom_format fmt;
    loom_error ferr;
    loom_error_clear(&ferr);
    if (loom_format_make(kind, order, width, &fmt, &ferr) != LOOM_OK)
        return loom__perr(P, LOOM_ERR_SEMANTIC, ftok.line, ftok.col, "tensor %s: %s", name.name,
                    ferr.msg);
    int output = 0;
    if (P->tok.kind == TK_IDENT && strcmp(P->tok.name, "output") == 0) {
        output = 1;
        if (kind == LOOM_FORMAT_CAUSAL || kind == LOOM_FORMAT_BAND)
            return loom__perr(P, LOOM_ERR_SEMANTIC, ftok.line, ftok.col,
                        "tensor %s is %s, a pattern (no values), so it can only be an input; "
                        "drop `output`",
                        name.name, loom_format_name(kind));
        TRY(loom__advance(P));
    }
    if (!loom__at_end(P))
        return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                    output ? "unexpected %s after the declaration of tensor %s (expected end of "
                             "line)"
                           : "unexpected %s after the format of tensor %s (expected `output` or "
                             "end of line)",
                    FOUND(P), name.name);
    if (prog->ntensors >= LOOM_MAX_TENSORS)
        return loom__perr(P, LOOM_ERR_SEMANTIC, name.line, name.col,
                    "too many tensors: loom supports at most %d", LOOM_MAX_TENSORS);
    int t = prog->ntensors++;
    loom_tensor *tt = &prog->tensors[t];
    memset(tt, 0, sizeof *tt);
    snprintf(tt->name, sizeof tt->name, "%s", name.name);
    tt->order = order;
    for (int d = 0; d < order; d++)
        tt->dim_size[d] = dims[d];
    tt->format = fmt;
    tt->role = output ? LOOM_TENSOR_OUTPUT : LOOM_TENSOR_INPUT;
    tt->is_pattern = kind == LOOM_FORMAT_CAUSAL || kind == LOOM_FORMAT_BAND;
    tt->pattern_of = -1;
    if (loom_tensor_is_sparse(prog, t) && !output)
        tt->pattern_of = t;
    tt->format_inferred = 0;
    tt->def_stmt = -1;
    tt->line = name.line;
    P->decl_col[t] = name.col;
    return LOOM_OK;
}

/* ---- statements ------------------------------------------------------- */

/* The statement variable named `name`, or -1. */
int loom__stmt_var(parser *P, const char *name)
{
    for (int i = 0; i < P->nsv; i++)
        if (strcmp(P->prog->vars[P->sv[i]].name, name) == 0)
            return i;
    return -1;
}

loom_status loom__new_stmt_var(parser *P, const token *t, int size, int reduced, int *out)
{
    loom_program *prog = P->prog;
    if (P->nsv >= LOOM_MAX_STMT_VARS)
        return loom__perr(P, LOOM_ERR_SEMANTIC, t->line, t->col,
                    "too many index variables in one statement (at most %d)",
                    LOOM_MAX_STMT_VARS);
    if (prog->nvars >= LOOM_MAX_VARS)
        return loom__perr(P, LOOM_ERR_SEMANTIC, t->line, t->col,
                    "too many index variables: loom supports at most %d in a workload",
                    LOOM_MAX_VARS);
    int v = prog->nvars++;
    loom_index_var *iv = &prog->vars[v];
    memset(iv, 0, sizeof *iv);
    snprintf(iv->name, sizeof iv->name, "%s", t->name);
    iv->stmt = prog->nstmts;
    iv->size = size;
    iv->reduced = reduced;
    P->sv[P->nsv] = v;
    P->sv_used_rhs[P->nsv] = 0;
    *out = P->nsv++;
    return LOOM_OK;
}

static loom_status new_expr(parser *P, loom_expr_kind kind, int line, int col, int *out)
{
    loom_program *prog = P->prog;
    if (prog->nexprs >= LOOM_MAX_EXPRS)
        return loom__perr(P, LOOM_ERR_SEMANTIC, line, col,
                    "the workload's expressions are too large (at most %d nodes in all)",
                    LOOM_MAX_EXPRS);
    int e = prog->nexprs++;
    loom_expr *x = &prog->exprs[e];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->tensor = -1;
    x->line = line;
    x->col = col;
    *out = e;
    return LOOM_OK;
}

/* Is `name` assigned (a line that starts with `name(`) or declared in a line
 * after the current one?  Returns that line (0 if not) and sets *declared. */
static int find_later(parser *P, const char *name, int *declared)
{
    const char *s = P->lx.text;
    size_t n = P->lx.len, p = P->tok.pos, nl = strlen(name);
    int line = P->tok.line;
    *declared = 0;
    for (;;) {
        while (p < n && s[p] != '\n')
            p++;
        if (p >= n)
            return 0;
        p++;
        line++;
        size_t q = p;
        while (q < n && (s[q] == ' ' || s[q] == '\t'))
            q++;
        int decl = 0;
        if (q + 6 < n && strncmp(s + q, "tensor", 6) == 0 && (s[q + 6] == ' ' || s[q + 6] == '\t')) {
            decl = 1;
            q += 6;
            while (q < n && (s[q] == ' ' || s[q] == '\t'))
                q++;
        }
        if (q + nl <= n && strncmp(s + q, name, nl) == 0 &&
            (q + nl == n || !loom__is_alnum((unsigned char)s[q + nl]))) {
            q += nl;
            while (q < n && (s[q] == ' ' || s[q] == '\t'))
                q++;
            if (q < n && s[q] == '(') {
                *declared = decl;
                return line;
            }
        }
    }
}


/* Parse `(i, j, ...)` after a tensor name; the current token is '('. */
static loom_status parse_access(parser *P, const token *name, int t, int *out)
{
    DECL_FOUND;
    loom_program *prog = P->prog;
    const loom_tensor *tt = &prog->tensors[t];
    int e = -1;
    TRY(new_expr(P, LOOM_EXPR_ACCESS, name->line, name->col, &e));
    prog->exprs[e].tensor = t;
    TRY(loom__advance(P)); /* '(' */
    int n = 0;
    if (P->tok.kind != TK_RP) {
        for (;;) {
            token it = P->tok;
            if (it.kind != TK_IDENT)
                return loom__perr(P, LOOM_ERR_PARSE, it.line, it.col,
                            "expected an index variable in the index list of %s, found %s",
                            name->name, FOUND(P));
            if (n >= tt->order)
                return loom__perr(P, LOOM_ERR_SEMANTIC, name->line, name->col,
                            "tensor %s has %d dimension%s but line %d gives it more indices",
                            tt->name, tt->order, tt->order == 1 ? "" : "s", name->line);
            int sv = loom__stmt_var(P, it.name);
            int dsize = tt->dim_size[n];
            if (sv < 0) {
                TRY(loom__new_stmt_var(P, &it, dsize, 1, &sv));
            } else {
                int v = P->sv[sv];
                for (int k = 0; k < n; k++)
                    if (prog->exprs[e].idx[k] == v)
                        return loom__perr(P, LOOM_ERR_SEMANTIC, it.line, it.col,
                                    "index %s appears twice in the access of %s; loom "
                                    "accesses need distinct indices (diagonals are not "
                                    "supported)",
                                    it.name, tt->name);
                loom_index_var *iv = &prog->vars[v];
                if (iv->size < 0) {
                    iv->size = dsize;
                } else if (iv->size != dsize) {
                    const loom_size *a = &prog->sizes[iv->size], *b = &prog->sizes[dsize];
                    if (a->is_param && b->is_param && a->def_value != b->def_value)
                        return loom__perr(P, LOOM_ERR_SEMANTIC, it.line, it.col,
                                    "index %s ranges over %s = %lld and, as dimension %d of %s, "
                                    "over %s = %lld: both are params with different defaults",
                                    it.name, a->name, (long long)a->def_value, n + 1, tt->name,
                                    b->name, (long long)b->def_value);
                }
            }
            P->sv_used_rhs[sv] = 1;
            prog->exprs[e].idx[n++] = P->sv[sv];
            TRY(loom__advance(P));
            if (P->tok.kind == TK_COMMA) {
                TRY(loom__advance(P));
                continue;
            }
            if (P->tok.kind == TK_RP)
                break;
            return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                        "expected ',' or ')' after index list of %s, found %s", name->name,
                        FOUND(P));
        }
    }
    if (n != tt->order)
        return loom__perr(P, LOOM_ERR_SEMANTIC, name->line, name->col,
                    "tensor %s has %d dimension%s but line %d gives it %d ind%s", tt->name,
                    tt->order, tt->order == 1 ? "" : "s", name->line, n, n == 1 ? "ex" : "ices");
    prog->exprs[e].nidx = n;
    TRY(loom__advance(P)); /* ')' */
    *out = e;
    return LOOM_OK;
}

static loom_status parse_primary(parser *P, int *out)
{
    DECL_FOUND;
    loom_program *prog = P->prog;
    token t = P->tok;
    if (t.kind == TK_NUM) {
        int e = -1;
        TRY(new_expr(P, LOOM_EXPR_CONST, t.line, t.col, &e));
        prog->exprs[e].value = t.num;
        TRY(loom__advance(P));
        *out = e;
        return LOOM_OK;
    }
    if (t.kind == TK_LP) {
        TRY(loom__advance(P));
        TRY(loom__parse_expr(P, out));
        if (P->tok.kind != TK_RP)
            return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                        "expected ')' to close the '(' at column %d, found %s", t.col,
                        FOUND(P));
        return loom__advance(P);
    }
    if (t.kind != TK_IDENT)
        return loom__perr(P, LOOM_ERR_PARSE, t.line, t.col,
                    "expected an expression (a number, a tensor access, a call or '('), found %s",
                    FOUND(P));
    TRY(loom__advance(P));
    if (P->tok.kind != TK_LP)
        return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                    loom__stmt_var(P, t.name) >= 0
                        ? "expected '(' after '%s', found %s (an index variable is not a value; "
                          "write a tensor access NAME(i, ...))"
                        : "expected '(' after '%s', found %s (a tensor access is NAME(i, ...), "
                          "a call is exp(...))",
                    t.name, FOUND(P));
    const loom_op_row *fr = loom_op_find_call(t.name);
    if (fr) {
        int want = fr->arity;
        int args[2], nargs = 0;
        TRY(loom__advance(P)); /* '(' */
        for (;;) {
            int a;
            TRY(loom__parse_expr(P, &a));
            if (nargs >= want)
                return loom__perr(P, LOOM_ERR_SEMANTIC, t.line, t.col, "%s takes %d argument%s",
                            t.name, want, want == 1 ? "" : "s");
            args[nargs++] = a;
            if (P->tok.kind == TK_COMMA) {
                TRY(loom__advance(P));
                continue;
            }
            if (P->tok.kind == TK_RP)
                break;
            return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                        "expected ',' or ')' in the arguments of %s, found %s", t.name,
                        FOUND(P));
        }
        if (nargs != want)
            return loom__perr(P, LOOM_ERR_SEMANTIC, t.line, t.col, "%s takes %d argument%s, not %d",
                        t.name, want, want == 1 ? "" : "s", nargs);
        TRY(loom__advance(P)); /* ')' */
        int e = -1;
        TRY(new_expr(P, LOOM_EXPR_CALL, t.line, t.col, &e));
        prog->exprs[e].fn = (loom_fn)loom_op_id(fr);
        prog->exprs[e].nargs = nargs;
        for (int a = 0; a < nargs; a++)
            prog->exprs[e].args[a] = args[a];
        *out = e;
        return LOOM_OK;
    }
    int ti = loom_program_find_tensor(prog, t.name);
    if (ti < 0 || (P->cur_lhs < 0 && strcmp(t.name, P->cur_lhs_name) == 0)) {
        if (strcmp(t.name, P->cur_lhs_name) == 0)
            return loom__perr(P, LOOM_ERR_SEMANTIC, t.line, t.col,
                        "temporary %s is read on the right of the statement that assigns it; "
                        "a statement cannot read the tensor it defines",
                        t.name);
        int declared = 0, later = find_later(P, t.name, &declared);
        if (later && declared)
            return loom__perr(P, LOOM_ERR_SEMANTIC, t.line, t.col,
                        "unknown tensor '%s': it is declared later, in line %d; declare tensors "
                        "before the statements that use them",
                        t.name, later);
        if (later)
            return loom__perr(P, LOOM_ERR_SEMANTIC, t.line, t.col,
                        "unknown tensor '%s': it is assigned later, in line %d; a temporary must "
                        "be assigned before it is read",
                        t.name, later);
        return loom__perr(P, LOOM_ERR_SEMANTIC, t.line, t.col,
                    "unknown tensor '%s': declare it with `tensor %s(...) FORMAT` or assign it "
                    "in an earlier statement",
                    t.name, t.name);
    }
    const loom_tensor *tt = &prog->tensors[ti];
    if (tt->role == LOOM_TENSOR_OUTPUT && tt->def_stmt < 0) {
        if (ti == P->cur_lhs)
            return loom__perr(P, LOOM_ERR_SEMANTIC, t.line, t.col,
                        "output %s is read on the right of the statement that assigns it; a "
                        "statement cannot read the tensor it defines",
                        t.name);
        int declared = 0, later = find_later(P, t.name, &declared);
        if (later && !declared)
            return loom__perr(P, LOOM_ERR_SEMANTIC, t.line, t.col,
                        "output %s is read before it is assigned (it is assigned later, in line "
                        "%d)",
                        t.name, later);
        return loom__perr(P, LOOM_ERR_SEMANTIC, t.line, t.col,
                    "output %s is read but no earlier statement assigns it", t.name);
    }
    return parse_access(P, &t, ti, out);
}

/* The row of form `form` whose symbol is the current token (precedence prec, 0: any), or NULL. */
static const loom_op_row *symbol_at(const parser *P, loom_op_form form, int prec)
{
    if (P->tok.kind == TK_EOF || P->tok.kind == TK_NL || P->tok.kind == TK_ERROR)
        return NULL;
    return loom_op_find_symbol(form, P->lx.text + P->tok.pos, P->tok.len, prec);
}

static loom_status parse_unary(parser *P, int *out)
{
    const loom_op_row *r = symbol_at(P, LOOM_OP_PREFIX, 0);
    if (!r)
        return parse_primary(P, out);
    token m = P->tok;
    if (++P->depth > MAX_DEPTH)
        return loom__perr(P, LOOM_ERR_PARSE, m.line, m.col,
                    "expression nested too deeply (at most %d levels)", MAX_DEPTH);
    TRY(loom__advance(P));
    int a = -1, e = -1;
    TRY(parse_unary(P, &a));
    P->depth--;
    TRY(new_expr(P, loom_op_expr_kind(r), m.line, m.col, &e));
    P->prog->exprs[e].nargs = 1;
    P->prog->exprs[e].args[0] = a;
    *out = e;
    return LOOM_OK;
}

static loom_status binary(parser *P, loom_expr_kind kind, int l, int r, int *out)
{
    int e = -1;
    const loom_expr *le = &P->prog->exprs[l];
    TRY(new_expr(P, kind, le->line, le->col, &e));
    P->prog->exprs[e].nargs = 2;
    P->prog->exprs[e].args[0] = l;
    P->prog->exprs[e].args[1] = r;
    *out = e;
    return LOOM_OK;
}

/* Left-associative infix operators of precedence prec and tighter (rows of op.h). */
static loom_status parse_infix(parser *P, int prec, int *out)
{
    if (prec > LOOM_OP_PREC_INFIX_MAX)
        return parse_unary(P, out);
    int l;
    TRY(parse_infix(P, prec + 1, &l));
    const loom_op_row *r;
    while ((r = symbol_at(P, LOOM_OP_INFIX, prec))) {
        TRY(loom__advance(P));
        int rr;
        TRY(parse_infix(P, prec + 1, &rr));
        TRY(binary(P, loom_op_expr_kind(r), l, rr, &l));
    }
    *out = l;
    return LOOM_OK;
}

loom_status loom__parse_expr(parser *P, int *out)
{
    if (++P->depth > MAX_DEPTH)
        return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                    "expression nested too deeply (at most %d levels)", MAX_DEPTH);
    int l;
    TRY(parse_infix(P, 1, &l));
    P->depth--;
    *out = l;
    return LOOM_OK;
}
