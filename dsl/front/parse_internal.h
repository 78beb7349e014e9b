/* loom: the `.loom` parser's state and the helpers its two files share
 * (private to dsl/: parse.c parses declarations and expressions,
 * parse_stmt.c statements). */
#ifndef LOOM_PARSE_INTERNAL_H
#define LOOM_PARSE_INTERNAL_H

#include "lex.h"
#include "../ir/op.h"
#include "../ir/program.h"
#include "../ir/util.h"

typedef struct parser {
    lexer lx;
    token tok;
    loom_program *prog;
    loom_error *err;
    const char *path;
    int depth;
    int decl_col[LOOM_MAX_TENSORS]; /* column of each declared tensor's name */
    /* the statement being parsed */
    int cur_lhs;                         /* lhs tensor if it exists, else -1 */
    char cur_lhs_name[LOOM_MAX_NAME];
    int cur_line;
    int nsv;                             /* statement variables so far */
    int sv[LOOM_MAX_STMT_VARS];          /* into prog->vars */
    int sv_used_rhs[LOOM_MAX_STMT_VARS];
} parser;

#define TRY LOOM_TRY /* util.h */

/* Set P->err to "path:line:col: msg" with status st; returns st. */
loom_status loom__perr(parser *P, loom_status st, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The next token into P->tok. */
loom_status loom__advance(parser *P);
/* The kind of the token after P->tok (TK_ERROR if it does not lex). */
tk_kind loom__peek(parser *P);
/* A description of token t for messages ("name 'x'", "end of line"), into buf. */
const char *loom__tokdesc(parser *P, const token *t, char *buf, size_t n);
/* 1 at the end of a line or of the text. */
int loom__at_end(const parser *P);
/* Index in P->sv of the statement variable `name`, or -1. */
int loom__stmt_var(parser *P, const char *name);
/* Add a statement variable for token t (its size, reduced or free); *out its index in P->sv. */
loom_status loom__new_stmt_var(parser *P, const token *t, int size, int reduced, int *out);
/* Parse an expression; *out its index in P->prog->exprs. */
loom_status loom__parse_expr(parser *P, int *out);
/* Parse one statement line (parse_stmt.c). */
loom_status loom__parse_stmt(parser *P);
/* Add temporary `name`, indexed by vars[0..n) and assigned by statement s
 * with right side rhs (temp.c); its format is inferred (Scorch: sparse with the
 * pattern of an operand indexed exactly like it, else dense).  *out its
 * index in tensors[].  Errors: LOOM_ERR_SEMANTIC when tensors[] is full. */
loom_status loom__define_temp(parser *P, const char *name, const int *vars, int n, int rhs,
                              int line, int col, int s, int *out);
/* The pattern source of a statement's left-hand side (temp.c): the first
 * sparse access of rhs indexed exactly by lhs_vars[0..nl) whose pattern
 * holds every term of rhs's domain (domain.h); *src is -1 when there is
 * none, *union_refused 1 when a candidate existed but a union term escapes
 * it.  Errors: those of loom_expr_domain. */
loom_status loom__domain_pattern_source(parser *P, int rhs, const int *lhs_vars, int nl, int *src, int *union_refused);
/* Parse a `param` line (parse.c); P->tok is `param` on entry. */
loom_status loom__parse_param(parser *P);
/* Parse a `tensor` line (parse.c); P->tok is `tensor` on entry. */
loom_status loom__parse_tensor(parser *P);
/* TACO's reduction scope (scope.c): a sum wraps the smallest
 * subexpression that uses its index variable (never entering a call's
 * argument or a divisor).  Where that differs from reducing the whole right
 * side of statement s (a v-free term added), the subexpression becomes a
 * temporary of its own statement, inserted before s (so `y(i) = A(i, j) *
 * x(j) + b(i)` is y_sum_j(i) = A(i, j) * x(j); y(i) = y_sum_j(i) + b(i)).
 * Errors: LOOM_ERR_SEMANTIC when a table of the program is full. */
loom_status loom__scope_reductions(parser *P, int s);

#define FOUND(P) loom__tokdesc((P), &(P)->tok, found_buf_, sizeof found_buf_)
#define DECL_FOUND char found_buf_[64]

#endif
