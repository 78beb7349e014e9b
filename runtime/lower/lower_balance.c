/* Balanced row partition (issue 13; dsl/schedule/query.h LOOM_ANN_BALANCE): a
 * parallel row loop annotated "balance" = K runs as K chunks of about
 * nnz / K stored entries each instead of OpenMP's equal rows.  Chunk c
 * covers rows [b(c), b(c + 1)), b(c) = the first row r with
 * pos[r] >= c * nnz / K (a binary search of the pos array of the level
 * below the row index, made by each chunk for its two ends), b(K) = the row
 * count, so the chunks partition the rows whatever the data (empty rows, a
 * row longer than nnz / K: that chunk holds it alone and some are empty).
 * The row split of merge-path SpMM (Merrill and Garland, SC 2016) without
 * its split of long rows; MKL's and GraphBLAS's row-parallel kernels
 * balance their row blocks by nonzeros the same way.
 * Part of the loop layer (lower_internal.h): called by lower_loops.c, calls
 * only lower_ctx.c. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

int64_t loom__lw_balance_chunks(const lctx *c, int d)
{
    if (d < 0 || d >= c->S->nloops)
        return 0;
    const loom_loop *L = &c->S->loops[d];
    for (int k = 0; k < L->nann; k++)
        if (!strcmp(L->ann[k].key, LOOM_ANN_BALANCE))
            return L->ann[k].value > 0 ? L->ann[k].value : 0;
    return 0;
}

/* out = the first r in [0, n) with pb[r] >= t, or n: a binary search (two
 * complementary ifs, so no else is needed) */
static int lower_bound(lctx *c, lir_stmt *seq, int pb, lir_expr *n, lir_expr *t, int out, const char *tag)
{
    lir_func *f = c->f;
    char name[48];
    snprintf(name, sizeof name, "hi_%s", tag);
    int hi = loom_lir_new_var(f, name, LIR_I64);
    snprintf(name, sizeof name, "mid_%s", tag);
    int mid = loom_lir_new_var(f, name, LIR_I64);
    if (hi < 0 || mid < 0 || loom_lir_append(f, seq, loom_lir_let(f, out, loom_lir_int(f, 0))) ||
        loom_lir_append(f, seq, loom_lir_let(f, hi, n)))
        return loom__lw_fail_nomem(c);
    lir_stmt *wl = loom_lir_while(f, loom_lir_bin(f, LIR_LT, loom_lir_var_ref(f, out), loom_lir_var_ref(f, hi)));
    if (loom_lir_append(f, seq, wl))
        return loom__lw_fail_nomem(c);
    lir_expr *m = loom_lir_bin(f, LIR_DIV, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, out), loom_lir_var_ref(f, hi)),
                               loom_lir_int(f, 2));
    if (loom_lir_append(f, wl->body, loom_lir_let(f, mid, m)))
        return loom__lw_fail_nomem(c);
    lir_stmt *lt = loom_lir_if(f, loom_lir_bin(f, LIR_LT, loom_lir_load(f, pb, loom_lir_var_ref(f, mid)), t));
    lir_stmt *ge = loom_lir_if(f, loom_lir_bin(f, LIR_GE, loom_lir_load(f, pb, loom_lir_var_ref(f, mid)), t));
    if (loom_lir_append(f, wl->body, lt) || loom_lir_append(f, wl->body, ge) ||
        loom_lir_append(f, lt->body,
                        loom_lir_assign(f, out, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, mid), loom_lir_int(f, 1)))) ||
        loom_lir_append(f, ge->body, loom_lir_assign(f, hi, loom_lir_var_ref(f, mid))))
        return loom__lw_fail_nomem(c);
    return LOOM_OK;
}

int loom__lw_balanced_rows(lctx *c, int d, int x, int64_t K, lir_stmt **seq, lir_expr **lo, lir_expr **hi)
{
    lir_func *f = c->f;
    int t = loom_balance_tensor(c->sch, c->si, d);
    if (t < 0 || K < 1)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "balance-rows: loop %s is not the outermost loop over the rows of a "
                                          "CSR-like operand; a balanced row partition needs one",
                                          c->prog->vars[x].name);
    const loom_tensor *T = &c->prog->tensors[t];
    int root = T->pattern_of >= 0 ? T->pattern_of : t;
    int pb = loom_lir_buffer_get(f, LIR_BUF_POS, root, 1);
    char name[48];
    snprintf(name, sizeof name, "%s_chunk", c->prog->vars[x].name);
    int cv = loom_lir_new_var(f, name, LIR_I64);
    int nnz = loom_lir_new_var(f, "nnz_bal", LIR_I64);
    int b0 = loom_lir_new_var(f, "row_lo", LIR_I64), b1 = loom_lir_new_var(f, "row_hi", LIR_I64);
    if (pb < 0 || cv < 0 || nnz < 0 || b0 < 0 || b1 < 0)
        return loom__lw_fail_nomem(c);
    lir_stmt *loop = loom_lir_for(f, cv, loom_lir_int(f, 0), loom_lir_int(f, K), LIR_LOOP_PARALLEL);
    if (loom_lir_append(f, *seq, loop))
        return loom__lw_fail_nomem(c);
    lir_stmt *body = loop->body;
    lir_expr *n = loom__lw_var_extent(c, x);
    if (loom_lir_append(f, body, loom_lir_let(f, nnz, loom_lir_load(f, pb, n))))
        return loom__lw_fail_nomem(c);
    /* target of chunk c's start: c * nnz / K, of its end (c + 1) * nnz / K */
    lir_expr *t0 = loom_lir_bin(f, LIR_DIV, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, cv), loom_lir_var_ref(f, nnz)),
                                loom_lir_int(f, K));
    lir_expr *c1 = loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, cv), loom_lir_int(f, 1));
    lir_expr *t1 = loom_lir_bin(f, LIR_DIV, loom_lir_bin(f, LIR_MUL, c1, loom_lir_var_ref(f, nnz)), loom_lir_int(f, K));
    if (lower_bound(c, body, pb, loom__lw_var_extent(c, x), t0, b0, "lo") ||
        lower_bound(c, body, pb, loom__lw_var_extent(c, x), t1, b1, "hi"))
        return c->status;
    /* the last chunk ends at the last row (trailing empty rows included) */
    lir_stmt *last = loom_lir_if(f, loom_lir_bin(f, LIR_GE, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, cv), loom_lir_int(f, 1)),
                                                 loom_lir_int(f, K)));
    if (loom_lir_append(f, body, last) || loom_lir_append(f, last->body, loom_lir_assign(f, b1, loom__lw_var_extent(c, x))))
        return loom__lw_fail_nomem(c);
    *seq = body;
    *lo = loom_lir_var_ref(f, b0);
    *hi = loom_lir_var_ref(f, b1);
    return LOOM_OK;
}
