/* loom: the lexer of the `.loom` workload language (private to dsl/: the
 * parser in parse.c is its only user). */
#ifndef LOOM_LEX_H
#define LOOM_LEX_H

#include <stddef.h>
#include <stdint.h>

#include "../ir/program.h"


typedef enum tk_kind {
    TK_EOF = 0,
    TK_NL,
    TK_IDENT,
    TK_NUM,
    TK_LP,
    TK_RP,
    TK_COMMA,
    TK_ASSIGN, /* =    */
    TK_PLUSEQ, /* +=   */
    TK_MAXEQ,  /* max= */
    TK_PLUS,
    TK_MINUS,
    TK_STAR,
    TK_SLASH,
    TK_ERROR   /* only from peek() */
} tk_kind;

typedef struct token {
    tk_kind kind;
    int line, col;
    size_t pos, len;          /* the lexeme in the text */
    char name[LOOM_MAX_NAME]; /* TK_IDENT */
    double num;               /* TK_NUM */
    int is_int;               /* TK_NUM written without '.' or exponent */
    int64_t ival;             /* TK_NUM when is_int and not too_big */
    int too_big;              /* integer literal overflows int64 */
} token;

typedef struct lexer {
    const char *text;
    size_t len;
    size_t pos;
    int line;
    size_t line_start;
} lexer;

/* Character classes of names: [A-Za-z_][A-Za-z0-9_]*. */
static inline int loom__is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static inline int loom__is_digit(int c) { return c >= '0' && c <= '9'; }
static inline int loom__is_alnum(int c) { return loom__is_alpha(c) || loom__is_digit(c); }

/* The next token of L into *t: identifiers, numbers (with is_int / ival /
 * too_big for integer literals), punctuation, the operators = += max=, a
 * newline token per line end; comments (# to end of line) and blanks are
 * skipped.  Errors: LOOM_ERR_PARSE at path:line:col for a character that
 * starts no token, a malformed number, a name longer than LOOM_MAX_NAME - 1. */
loom_status loom__lex(lexer *L, token *t, const char *path, loom_error *err);

#endif
