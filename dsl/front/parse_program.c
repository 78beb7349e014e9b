/* The `.loom` parser's entry points (program.h): a whole program, from a
 * string or a file.  The lexer, declarations and expressions are in
 * parse.c, statements in parse_stmt.c; this file drives them, so that
 * parse.c does not call back into the statement parser. */
#include "parse_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole program: declarations and statements line by line, then the
 * checks that need the whole text. */
static loom_status parse_program(parser *P)
{
    DECL_FOUND;
    loom_program *prog = P->prog;
    TRY(loom__advance(P));
    for (;;) {
        if (P->tok.kind == TK_NL) {
            TRY(loom__advance(P));
            continue;
        }
        if (P->tok.kind == TK_EOF)
            break;
        if (P->tok.kind != TK_IDENT)
            return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                        "expected `param`, `tensor` or a statement at the start of a line, found "
                        "%s",
                        FOUND(P));
        int is_param = strcmp(P->tok.name, "param") == 0;
        int is_tensor = strcmp(P->tok.name, "tensor") == 0;
        tk_kind next = is_param || is_tensor ? loom__peek(P) : TK_ERROR;
        if (is_param && next == TK_IDENT) {
            TRY(loom__parse_param(P));
        } else if (is_tensor && next == TK_IDENT) {
            TRY(loom__parse_tensor(P));
        } else if ((is_param || is_tensor) && next != TK_LP && next != TK_ERROR) {
            /* a keyword not followed by a name (a tensor named `tensor` is
               still possible: `tensor(i) = ...`) */
            TRY(loom__advance(P));
            return loom__perr(P, LOOM_ERR_PARSE, P->tok.line, P->tok.col,
                        is_param ? "expected a size name after `param` (as in param N = 64), "
                                   "found %s"
                                 : "expected a tensor name after `tensor` (as in tensor A(N, K) "
                                   "csr), found %s",
                        FOUND(P));
        } else {
            TRY(loom__parse_stmt(P));
        }
    }
    for (int t = 0; t < prog->ntensors; t++) {
        const loom_tensor *tt = &prog->tensors[t];
        if (tt->role == LOOM_TENSOR_OUTPUT && tt->def_stmt < 0)
            return loom__perr(P, LOOM_ERR_SEMANTIC, tt->line, P->decl_col[t],
                        "output %s is declared in line %d but never assigned; add a statement "
                        "%s(...) = ...",
                        tt->name, tt->line, tt->name);
    }
    /* an index over two params with different defaults (a param declared
       after the statement escapes the check made while parsing it) */
    for (int e = 0; e < prog->nexprs; e++) {
        const loom_expr *x = &prog->exprs[e];
        if (x->kind != LOOM_EXPR_ACCESS)
            continue;
        const loom_tensor *tt = &prog->tensors[x->tensor];
        for (int d = 0; d < x->nidx; d++) {
            const loom_index_var *iv = &prog->vars[x->idx[d]];
            const loom_size *a = &prog->sizes[iv->size], *b = &prog->sizes[tt->dim_size[d]];
            if (a != b && a->is_param && b->is_param && a->def_value != b->def_value)
                return loom__perr(P, LOOM_ERR_SEMANTIC, x->line, x->col,
                            "index %s ranges over %s = %lld and, as dimension %d of %s, over "
                            "%s = %lld: both are params with different defaults",
                            iv->name, a->name, (long long)a->def_value, d + 1, tt->name, b->name,
                            (long long)b->def_value);
        }
    }
    if (prog->nstmts == 0)
        return loom__perr(P, LOOM_ERR_SEMANTIC, P->tok.line, 1,
                    "the workload has no statements: add one such as C(i, j) += A(i, k) * "
                    "B(k, j)");
    return LOOM_OK;
}

/* ---- entry points ----------------------------------------------------- */

static loom_status parse_text(const char *text, size_t len, const char *name,
                              loom_program **out, loom_error *err)
{
    if (out)
        *out = NULL;
    const char *path = name ? name : "<string>";
    if (!text || !out)
        return loom_error_set(err, LOOM_ERR_INVALID, path, 0, 0,
                              "loom_program_parse: no text or no output pointer");
    loom_program *prog = calloc(1, sizeof *prog);
    parser *P = calloc(1, sizeof *P);
    if (!prog || !P) {
        free(prog);
        free(P);
        return loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0,
                              "out of memory allocating a program");
    }
    snprintf(prog->path, sizeof prog->path, "%s", path);
    size_t keep = len < LOOM_MAX_SOURCE - 1 ? len : LOOM_MAX_SOURCE - 1;
    memcpy(prog->source, text, keep);
    prog->source[keep] = '\0';
    P->lx.text = text;
    P->lx.len = len;
    P->lx.line = 1;
    P->prog = prog;
    P->err = err;
    P->path = prog->path;
    P->cur_lhs = -1;
    loom_status st = parse_program(P);
    free(P);
    if (st != LOOM_OK) {
        free(prog);
        return st;
    }
    *out = prog;
    return LOOM_OK;
}

loom_status loom_program_parse_string(const char *text, const char *name, loom_program **out,
                                      loom_error *err)
{
    return parse_text(text, text ? strlen(text) : 0, name, out, err);
}

loom_status loom_program_parse_file(const char *path, loom_program **out, loom_error *err)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return loom_error_set(err, LOOM_ERR_INVALID, path, 0, 0,
                              "loom_program_parse_file: no path or no output pointer");
    FILE *f = fopen(path, "rb");
    if (!f)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot open workload %s: %s", path,
                              strerror(errno));
    char *buf;
    size_t len;
    int e = loom_read_stream(f, (size_t)64 << 20, &buf, &len);
    fclose(f);
    if (e == ENOMEM)
        return loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0, "out of memory reading %s", path);
    if (e == EFBIG)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "workload %s is too large (over 64 MiB)", path);
    if (e)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot read workload %s: %s", path, strerror(e));
    loom_status st = parse_text(buf, len, path, out, err);
    free(buf);
    return st;
}

/* Re-hash a stored record's program text (program.h); it parses, so it
 * lives with the parser, above the IR. */
uint64_t loom_workload_hash_upgrade(uint64_t stored, const char *text)
{
    static _Thread_local uint64_t memo_text = 0, memo_hash = 0;
    static _Thread_local int memo_valid = 0;
    if (!text || loom_program_text_hash(text) != stored)
        return stored;
    if (memo_valid && memo_text == stored)
        return memo_hash;
    loom_program *prog = NULL;
    loom_error err;
    loom_error_clear(&err);
    if (loom_program_parse_string(text, "<record>", &prog, &err) != LOOM_OK)
        return stored;
    uint64_t h = loom_program_hash(prog);
    loom_program_free(prog);
    memo_text = stored;
    memo_hash = h;
    memo_valid = 1;
    return h;
}
