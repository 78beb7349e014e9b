/* The `.loom` lexer (lex.h). */
#include "lex.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


static int lch(const lexer *L, size_t p) { return p < L->len ? (unsigned char)L->text[p] : -1; }

loom_status loom__lex(lexer *L, token *t, const char *path, loom_error *err)
{
    memset(t, 0, sizeof *t);
    for (;;) {
        int c = lch(L, L->pos);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            L->pos++;
        } else if (c == '#') {
            while (L->pos < L->len && L->text[L->pos] != '\n')
                L->pos++;
        } else {
            break;
        }
    }
    t->line = L->line;
    t->col = (int)(L->pos - L->line_start) + 1;
    t->pos = L->pos;
    int c = lch(L, L->pos);
    if (c < 0) {
        t->kind = TK_EOF;
        return LOOM_OK;
    }
    if (c == '\n') {
        t->kind = TK_NL;
        t->len = 1;
        L->pos++;
        L->line++;
        L->line_start = L->pos;
        return LOOM_OK;
    }
    if (loom__is_alpha(c)) {
        size_t b = L->pos;
        while (loom__is_alnum(lch(L, L->pos)))
            L->pos++;
        t->len = L->pos - b;
        if (t->len >= LOOM_MAX_NAME)
            return loom_error_set(err, LOOM_ERR_PARSE, path, t->line, t->col,
                                  "identifier '%.*s...' is too long (at most %d characters)",
                                  20, L->text + b, LOOM_MAX_NAME - 1);
        memcpy(t->name, L->text + b, t->len);
        t->name[t->len] = '\0';
        t->kind = TK_IDENT;
        if (strcmp(t->name, "max") == 0 && lch(L, L->pos) == '=') {
            L->pos++;
            t->len++;
            t->kind = TK_MAXEQ;
        }
        return LOOM_OK;
    }
    if (loom__is_digit(c) || (c == '.' && loom__is_digit(lch(L, L->pos + 1)))) {
        size_t b = L->pos;
        int is_int = 1;
        while (loom__is_digit(lch(L, L->pos)))
            L->pos++;
        if (lch(L, L->pos) == '.') {
            is_int = 0;
            L->pos++;
            while (loom__is_digit(lch(L, L->pos)))
                L->pos++;
        }
        if (lch(L, L->pos) == 'e' || lch(L, L->pos) == 'E') {
            size_t q = L->pos + 1;
            if (lch(L, q) == '+' || lch(L, q) == '-')
                q++;
            if (!loom__is_digit(lch(L, q)))
                return loom_error_set(err, LOOM_ERR_PARSE, path, t->line, t->col,
                                      "malformed number '%.*s': expected digits after the exponent",
                                      (int)(q - b < 40 ? q - b : 40), L->text + b);
            is_int = 0;
            L->pos = q;
            while (loom__is_digit(lch(L, L->pos)))
                L->pos++;
        }
        t->len = L->pos - b;
        if (loom__is_alpha(lch(L, L->pos)) || lch(L, L->pos) == '.') {
            size_t q = L->pos;
            while (loom__is_alnum(lch(L, q)) || lch(L, q) == '.')
                q++;
            return loom_error_set(err, LOOM_ERR_PARSE, path, t->line, t->col,
                                  "malformed number '%.*s'", (int)(q - b < 40 ? q - b : 40),
                                  L->text + b);
        }
        if (t->len >= 64)
            return loom_error_set(err, LOOM_ERR_PARSE, path, t->line, t->col,
                                  "number '%.20s...' is too long", L->text + b);
        char buf[64];
        memcpy(buf, L->text + b, t->len);
        buf[t->len] = '\0';
        t->num = strtod(buf, NULL);
        if (!isfinite(t->num))
            return loom_error_set(err, LOOM_ERR_PARSE, path, t->line, t->col,
                                  "number '%s' is out of range", buf);
        t->is_int = is_int;
        if (is_int) {
            int64_t v = 0;
            for (size_t i = 0; i < t->len; i++) {
                int d = buf[i] - '0';
                if (v > (INT64_MAX - d) / 10) {
                    t->too_big = 1;
                    break;
                }
                v = v * 10 + d;
            }
            t->ival = v;
        }
        t->kind = TK_NUM;
        return LOOM_OK;
    }
    t->len = 1;
    L->pos++;
    switch (c) {
    case '(': t->kind = TK_LP; return LOOM_OK;
    case ')': t->kind = TK_RP; return LOOM_OK;
    case ',': t->kind = TK_COMMA; return LOOM_OK;
    case '=': t->kind = TK_ASSIGN; return LOOM_OK;
    case '-': t->kind = TK_MINUS; return LOOM_OK;
    case '*': t->kind = TK_STAR; return LOOM_OK;
    case '/': t->kind = TK_SLASH; return LOOM_OK;
    case '+':
        if (lch(L, L->pos) == '=') {
            L->pos++;
            t->len = 2;
            t->kind = TK_PLUSEQ;
        } else {
            t->kind = TK_PLUS;
        }
        return LOOM_OK;
    default:
        break;
    }
    L->pos--;
    if (c >= 0x80)
        return loom_error_set(err, LOOM_ERR_PARSE, path, t->line, t->col,
                              "non-ASCII byte 0x%02x: loom workloads are ASCII text", c);
    if (c < 0x20 || c == 0x7f)
        return loom_error_set(err, LOOM_ERR_PARSE, path, t->line, t->col,
                              "unexpected control character 0x%02x", c);
    return loom_error_set(err, LOOM_ERR_PARSE, path, t->line, t->col,
                          "unexpected character '%c'", c);
}

