/* Software prefetch of gathered rows (issue 13; dsl/schedule/query.h
 * LOOM_ANN_PREFETCH): in the body of a loop over the positions of a
 * compressed level annotated "prefetch" = D, before this entry's work, the
 * row of the dense operand that the entry D positions ahead gathers is
 * prefetched: B[crd[min(p + D, nnz - 1)] * row .. + row) for SpMM's
 * B[k, :] (row = the product of B's other dimensions).  The indirect
 * prefetch of Ainsworth and Jones (CGO 2017): the hardware prefetchers
 * follow B's lines within a row but cannot guess the next row, so on a
 * matrix whose B does not fit in cache (web-NotreDame: 167 MB at F = 128)
 * every row starts with a full memory latency.  The position is clamped to
 * the last stored entry, so no index is read out of bounds; a prefetch
 * never faults and never changes a value.
 * When the row's index is split with tiles outside the loop, only the
 * tile's part of the row is prefetched (below).
 * Part of the loop layer (lower_internal.h): called by lower_loops.c, calls
 * only lower_ctx.c and lir.c.  It also puts the compiler barrier in a
 * nonzero loop inside a workspace (below). */
#include <string.h>

#include "lower_internal.h"
#include "../../dsl/schedule/query.h"

static int64_t prefetch_distance(const lctx *c, int d)
{
    if (d < 0 || d >= c->S->nloops)
        return 0;
    const loom_loop *L = &c->S->loops[d];
    for (int k = 0; k < L->nann; k++)
        if (!strcmp(L->ann[k].key, LOOM_ANN_PREFETCH))
            return L->ann[k].value > 0 ? L->ann[k].value : 0;
    return 0;
}

/* The elements of one row of dense tensor b: the product of its dimensions
 * after the first (a fresh expression per call: LIR trees are not shared).
 * A bound dimension is a literal, as the loops' extents are (a replayed
 * schedule is specialised to its sizes, docs/shipping.md), so cc counts the
 * prefetch loop's lines and unrolls it completely.  Measured (Facebook
 * F = 128, AVX-512, Zen 5, one thread, CPU time): prefetching a whole row of
 * B 16 entries ahead ran 3.25-3.37 ms with the row's length read from the
 * tensor (a loop of 8 lines, a counter and a branch a line) and 2.11-2.23 ms
 * with the literal 128; without the prefetch, 2.48-2.49 ms.
 * docs/simulator.md, "Model 30: a prefetch loop of literal lines". */
static lir_expr *row_elems(const lctx *c, const loom_tensor *B, int b)
{
    lir_func *f = c->f;
    lir_expr *row = loom_lir_int(f, 1);
    for (int k = 1; k < B->order; k++) {
        int64_t n = loom_program_dim(c->prog, b, k);
        lir_expr *dim = n > 0 ? loom_lir_int(f, n) : loom_lir_dim(f, b, k);
        row = k == 1 ? dim : loom_lir_bin(f, LIR_MUL, row, dim);
    }
    return row;
}

int loom__lw_prefetch(lctx *c, int d, int root, int l, int posv, lir_stmt *body)
{
    /* Inside a CacheWrite workspace, GCC 12 (-O3 -march=znver4) vectorizes
     * the nonzero loop itself as a reduction into the workspace, gathering
     * the rows of B of two entries at a time: SpMM on web-NotreDame at
     * F = 128 with a whole-row workspace ran 96 ms against 34 ms with this
     * barrier (one thread, CPU time; a software prefetch in the loop had
     * the same effect).  The feature loop inside still vectorizes. */
    if (c->ws_active && loom_lir_append(c->f, body, loom_lir_barrier(c->f)))
        return loom__lw_fail_nomem(c);
    int64_t D = prefetch_distance(c, d);
    if (D <= 0)
        return LOOM_OK;
    lir_func *f = c->f;
    int b = loom_prefetch_tensor(c->sch, c->si, d);
    const loom_format *F = &c->prog->tensors[root].format;
    if (b < 0 || l != F->nlevels - 1)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "prefetch-gather: loop %d of the statement is not a loop over the last "
                                          "compressed level's positions that gathers rows of a dense input",
                                          d);
    const loom_tensor *B = &c->prog->tensors[b];
    int cb = loom_lir_buffer_get(f, LIR_BUF_CRD, root, l), vb = loom_lir_buffer_get(f, LIR_BUF_VALS, b, 0);
    if (cb < 0 || vb < 0)
        return loom__lw_fail_nomem(c);
    /* min(p + D, nnz - 1): the loop runs, so nnz >= 1 */
    lir_expr *ahead = loom_lir_bin(f, LIR_MIN, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, posv), loom_lir_int(f, D)),
                                   loom_lir_bin(f, LIR_SUB, loom_lir_nnz(f, root), loom_lir_int(f, 1)));
    lir_expr *at = loom_lir_bin(f, LIR_MUL, loom_lir_load(f, cb, ahead), row_elems(c, B, b)), *size = NULL;
    /* Only the part of the row this pass reads: when the row's index is
     * split and some of its tiles run outside this loop (a register tile of
     * 64 of F = 128's columns, the nonzeros walked once per tile), each pass
     * prefetches its own tile, B[crd * row + base .. + ext), not the whole
     * row again.  Measured (Facebook F = 128, AVX-512, 2 threads): the
     * 2 x 64 split prefetching whole rows ran 3.53 ms against 2.77 ms for
     * the unsplit row; docs/simulator.md "Prefetched rows of a split". */
    int e = loom_expr_find_access(c->prog, c->st->rhs, b);
    if (e >= 0 && B->order == 2) {
        int v = c->prog->exprs[e].idx[1], overhang = 0, outside = 0;
        int64_t ext = 0;
        lir_expr *base = NULL;
        if (v >= 0 && !loom__lw_region_dim(c, d, v, &base, &ext, &overhang, &outside) && outside && !overhang &&
            ext > 0 && ext < loom_program_var_extent(c->prog, v)) {
            at = loom_lir_bin(f, LIR_ADD, at, base);
            size = loom_lir_int(f, ext);
        }
    }
    if (!at || loom_lir_append(f, body, loom_lir_prefetch(f, vb, at, size ? size : row_elems(c, B, b))))
        return loom__lw_fail_nomem(c);
    return LOOM_OK;
}
