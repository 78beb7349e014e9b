/* Lowering: the loops of a statement's nest and CacheWrite workspaces
 * (lower_internal.h; the rules are in lower.h). */
#include "lower_internal.h"
#include "../../dsl/schedule/schedule_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CacheWrite: at the start of an iteration of the workspace loop, declare
 * the workspace, compute each output dimension's base coordinate and fill
 * it with the identity; stores go to it until ws_end copies it out. */
int loom__lw_ws_begin(lctx *c, lir_stmt **seqp)
{
    lir_stmt *seq = *seqp;
    lir_expr *skip = NULL; /* base < extent of each overhanging dimension */
    lir_func *f = c->f;
    const loom_stmt *st = c->st;
    int L = c->ws_depth, order = c->prog->tensors[st->lhs].order;
    int64_t elems = 1;
    char name[48];
    for (int d = 0; d < order; d++) {
        int v = st->lhs_idx[d], outside = 0;
        lir_expr *base;
        if (loom__lw_region_dim(c, L, v, &base, &c->ws_ext[d], &c->ws_guard[d], &outside))
            return c->status = loom_error_set(
                       c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, st->line, 0,
                       "cache-write-split: %s's workspace needs each output index either outside its loop or iterated "
                       "inside it by the innermost tiles of one split",
                       c->prog->tensors[st->lhs].name);
        snprintf(name, sizeof name, "base_%s", c->prog->vars[v].name);
        c->ws_base[d] = loom_lir_new_var(f, name, LIR_I64);
        if (c->ws_base[d] < 0 || loom_lir_append(f, seq, loom_lir_let(f, c->ws_base[d], base)))
            return loom__lw_fail_nomem(c);
        if (c->ws_guard[d] && outside) {
            /* a tile wholly past the extent (an imperfect tiling's
             * overhang) computes nothing */
            lir_expr *in = loom_lir_bin(f, LIR_LT, loom_lir_var_ref(f, c->ws_base[d]), loom_lir_dim(f, st->lhs, d));
            skip = skip ? loom_lir_bin(f, LIR_AND, skip, in) : in;
        }
        elems *= c->ws_ext[d];
    }
    if (loom__lw_guard_into(c, skip, seqp))
        return c->status;
    seq = *seqp;
    c->ws_buf = loom_lir_buffer_get(f, LIR_BUF_LOCAL, c->st->lhs, c->si);
    if (c->ws_buf < 0)
        return loom__lw_fail_nomem(c);
    f->bufs[c->ws_buf].local_elems = elems;
    if (loom_lir_append(f, seq, loom_lir_local(f, c->ws_buf)) ||
        loom_lir_append(f, seq, loom_lir_fill(f, c->ws_buf, loom_lir_int(f, elems), loom__lw_identity(c))))
        return loom__lw_fail_nomem(c);
    c->lhs_buf_global = c->lhs_buf;
    c->lhs_buf = c->ws_buf;
    c->ws_active = 1;
    return LOOM_OK;
}

/* Vector order for the panel (GotoBLAS's packed B): when the operand's last
 * index is iterated inside the pack loop by two or more tiles of one split
 * whose innermost tile (nr, the register tile's width) has a loop, the
 * panel is laid out [last / nr][other indices][nr], so the register tile
 * streams it contiguously.  Sets pack_nr (0: row-major) and the tiles. */
static void vector_order(lctx *c, int L)
{
    const loom_stage *S = c->S;
    int n = c->pack_n;
    c->pack_nr = 0;
    if (n < 2 || c->pack_ext[n - 1] <= 1)
        return;
    int v = c->pack_var[n - 1];
    const loom_iter *V = NULL;
    for (int i = 0; i < S->niters; i++)
        if (S->iters[i].kind == LOOM_ITER_VAR && S->iters[i].var == v)
            V = &S->iters[i];
    if (!V || V->first_child < 0 || S->iters[V->first_child].kind != LOOM_ITER_SPLIT)
        return;
    int np = S->iters[V->first_child].nparts, last = V->first_child + np - 1, first = -1;
    for (int k = 0; k < np; k++) {
        int pos = loom_loop_of_iter(S, V->first_child + k);
        if (pos > L && first < 0)
            first = V->first_child + k;
    }
    int64_t nr = loom_iter_extent(c->sch, c->si, last);
    if (first < 0 || first == last || nr <= 1 || loom_loop_of_iter(S, last) <= L || c->pack_ext[n - 1] % nr ||
        c->pack_ext[n - 1] == nr)
        return;
    c->pack_nr = nr;
    c->pack_tile0 = first;
    c->pack_tile1 = last;
}

/* PackPanel: at the start of an iteration of the pack loop, copy the panel
 * of the packed operand (per index: its region inside the loop, loom__lw_region_dim)
 * into a local buffer, row-major over the local extents, the innermost copy
 * loop vectorized; an overhanging index reads its last row instead (those
 * rows are computed into dropped workspace rows, or guarded).  The block
 * then reads the operand from it (lower.c's translate, loom__lw_pack_index). */
int loom__lw_pack_begin(lctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    int t = c->S->pack_tensor, n = loom__pack_idx(c->prog, c->si, t, c->pack_var), L = c->pack_depth;
    int64_t elems = 1;
    char name[48];
    lir_expr *base[LOOM_MAX_ORDER];
    int over[LOOM_MAX_ORDER], outside;
    for (int d = 0; d < n; d++)
        if (n < 0 || loom__lw_region_dim(c, L, c->pack_var[d], &base[d], &c->pack_ext[d], &over[d], &outside))
            return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                              "pack-panel-loop: %s's panel of %s is not a region of tiles",
                                              c->prog->tensors[c->st->lhs].name, c->prog->tensors[t].name);
    c->pack_n = n;
    vector_order(c, L);
    for (int d = 0; d < n; d++) {
        snprintf(name, sizeof name, "pbase_%s", c->prog->vars[c->pack_var[d]].name);
        c->pack_base[d] = loom_lir_new_var(f, name, LIR_I64);
        if (c->pack_base[d] < 0 || loom_lir_append(f, seq, loom_lir_let(f, c->pack_base[d], base[d])))
            return loom__lw_fail_nomem(c);
        elems *= c->pack_ext[d];
    }
    c->pack_buf = loom_lir_buffer_get(f, LIR_BUF_LOCAL, t, c->si);
    if (c->pack_buf < 0)
        return loom__lw_fail_nomem(c);
    f->bufs[c->pack_buf].local_elems = elems;
    f->bufs[c->pack_buf].restrict_ptr = 1;
    if (loom_lir_append(f, seq, loom_lir_local(f, c->pack_buf)))
        return loom__lw_fail_nomem(c);
    lir_stmt *body = seq;
    int lv[LOOM_MAX_ORDER], last = -1, jo = -1;
    int64_t lext[LOOM_MAX_ORDER]; /* the copy loops' extents: the last index's is nr in vector order */
    for (int d = 0; d < n; d++) {
        lext[d] = c->pack_nr > 0 && d == n - 1 ? c->pack_nr : c->pack_ext[d];
        if (lext[d] > 1)
            last = d;
    }
    if (c->pack_nr > 0) { /* vector order: an outer loop over the nr-wide column blocks, so the
                           * copy's stores are contiguous (no division in the index) */
        snprintf(name, sizeof name, "p_%so", c->prog->vars[c->pack_var[n - 1]].name);
        jo = loom_lir_new_var(f, name, LIR_I64);
        lir_stmt *loop = jo < 0 ? NULL
                                : loom_lir_for(f, jo, loom_lir_int(f, 0), loom_lir_int(f, c->pack_ext[n - 1] / c->pack_nr),
                                               LIR_LOOP_SERIAL);
        if (!loop || loom_lir_append(f, body, loop))
            return loom__lw_fail_nomem(c);
        body = loop->body;
    }
    lir_expr *gidx = NULL, *lidx = NULL;
    for (int d = 0; d < n; d++) {
        lv[d] = -1;
        lir_expr *loc = loom_lir_int(f, 0);
        if (lext[d] > 1) {
            snprintf(name, sizeof name, "p_%s", c->prog->vars[c->pack_var[d]].name);
            lv[d] = loom_lir_new_var(f, name, LIR_I64);
            lir_stmt *loop = loom_lir_for(f, lv[d], loom_lir_int(f, 0), loom_lir_int(f, lext[d]),
                                          d == last ? LIR_LOOP_VECTORIZED : LIR_LOOP_SERIAL);
            if (lv[d] < 0 || loom_lir_append(f, body, loop))
                return loom__lw_fail_nomem(c);
            body = loop->body;
            loc = loom_lir_var_ref(f, lv[d]);
        }
        lir_expr *off = loc; /* the offset in the panel along index d */
        if (jo >= 0 && d == n - 1)
            off = loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, jo), loom_lir_int(f, c->pack_nr)),
                               loc);
        lir_expr *glob = loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, c->pack_base[d]), off);
        if (over[d])
            glob = loom_lir_bin(f, LIR_MIN, glob, loom_lir_bin(f, LIR_SUB, loom_lir_dim(f, t, d), loom_lir_int(f, 1)));
        gidx = gidx ? loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, gidx, loom_lir_dim(f, t, d)), glob) : glob;
        lidx = lidx ? loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, lidx, loom_lir_int(f, lext[d])), loc) : loc;
    }
    if (!gidx)
        gidx = lidx = loom_lir_int(f, 0);
    if (jo >= 0) { /* + (column block) * (the other extents x nr) */
        int64_t rest = elems / (c->pack_ext[n - 1] / c->pack_nr);
        lidx = loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, jo), loom_lir_int(f, rest)), lidx);
    }
    int vals = loom_lir_buffer_get(f, LIR_BUF_VALS, t, 0);
    if (vals < 0 || loom_lir_append(f, body, loom_lir_store(f, c->pack_buf, lidx, loom_lir_load(f, vals, gidx))))
        return loom__lw_fail_nomem(c);
    c->pack_active = 1;
    return LOOM_OK;
}

/* The packed panel's local index of the access whose index vars are idx
 * (row-major over the local extents, x - base per dimension; in vector
 * order the last index's tiles give its two parts, no division). */
lir_expr *loom__lw_pack_index(lctx *c, const int *idx)
{
    lir_func *f = c->f;
    lir_expr *e = NULL;
    int n = c->pack_n;
    for (int d = 0; d < n; d++) {
        lir_expr *loc = c->pack_ext[d] > 1 ? loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, c->xv[idx[d]]),
                                                          loom_lir_var_ref(f, c->pack_base[d]))
                                           : loom_lir_int(f, 0);
        int64_t ext = c->pack_ext[d];
        if (c->pack_nr > 0 && d == n - 1) {
            loc = loom_lir_var_ref(f, c->itv[c->pack_tile1]);
            ext = c->pack_nr;
        }
        e = e ? loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, e, loom_lir_int(f, ext)), loc) : loc;
    }
    if (c->pack_nr > 0) {
        lir_expr *a = NULL;
        for (int k = c->pack_tile0; k < c->pack_tile1; k++) {
            int64_t ek = loom_iter_extent(c->sch, c->si, k);
            if (ek == 1)
                continue; /* no loop, always 0 */
            lir_expr *tk = loom_lir_var_ref(f, c->itv[k]);
            a = a ? loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, a, loom_lir_int(f, ek)), tk) : tk;
        }
        if (a) {
            int64_t rest = 1;
            for (int d = 0; d < n - 1; d++)
                rest *= c->pack_ext[d];
            e = loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, a, loom_lir_int(f, rest * c->pack_nr)), e);
        }
    }
    return e ? e : loom_lir_int(f, 0);
}

/* The "stream" annotation of the workspace loop (LOOM_ANN_STREAM), 0 when
 * none. */
static int64_t ws_stream(const lctx *c)
{
    const loom_loop *L = &c->S->loops[c->ws_depth];
    for (int k = 0; k < L->nann; k++)
        if (!strcmp(L->ann[k].key, LOOM_ANN_STREAM))
            return L->ann[k].value;
    return 0;
}

/* The copy-out of a workspace annotated "stream" (issue 13): when each
 * output element is written once (no reduction loop outside the workspace
 * loop) and the workspace is one contiguous run of the output (extent 1 in
 * every dimension but the last, no guard on it), one LIR_S_STREAM writes
 * it with non-temporal stores.  Returns 1 when it did, 0 when the copy-out
 * stays ordinary stores (the validator's stream-store rule refuses the
 * accumulating case; other shapes fall back), -1 on an error. */
static int ws_end_stream(lctx *c, lir_stmt *seq, int order)
{
    if (c->ws_accum || c->epi_k > 0 || ws_stream(c) < LOOM_STREAM_ON)
        return 0; /* an epilogue's copy-out stores its last stage's values */
    for (int d = 0; d < order; d++)
        if ((d < order - 1 && c->ws_ext[d] != 1) || c->ws_guard[d])
            return 0;
    lir_func *f = c->f;
    const loom_stmt *st = c->st;
    lir_expr *gidx = NULL;
    for (int d = 0; d < order; d++) {
        lir_expr *glob = loom_lir_var_ref(f, c->ws_base[d]);
        gidx = gidx ? loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, gidx, loom_lir_dim(f, st->lhs, d)), glob) : glob;
    }
    if (loom_lir_append(f, seq, loom_lir_stream(f, c->lhs_buf, gidx, c->ws_buf, loom_lir_int(f, c->ws_ext[order - 1]))))
        return loom__lw_fail_nomem(c), -1;
    return 1;
}

int loom__lw_ws_end(lctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    const loom_stmt *st = c->st;
    int order = c->prog->tensors[st->lhs].order;
    c->ws_active = 0;
    c->lhs_buf = c->lhs_buf_global;
    int streamed = order > 0 ? ws_end_stream(c, seq, order) : 0;
    if (streamed)
        return streamed < 0 ? c->status : LOOM_OK;
    /* for each local element: lhs[base + local] = ws[local] (guarded) */
    lir_stmt *body = seq;
    int lv[LOOM_MAX_ORDER];
    lir_expr *guard = NULL;
    char name[48];
    for (int d = 0; d < order; d++) {
        lv[d] = -1;
        if (c->ws_ext[d] == 1)
            continue;
        snprintf(name, sizeof name, "w_%s", c->prog->vars[st->lhs_idx[d]].name);
        lv[d] = loom_lir_new_var(f, name, LIR_I64);
        lir_stmt *loop = loom_lir_for(f, lv[d], loom_lir_int(f, 0), loom_lir_int(f, c->ws_ext[d]),
                                 d == order - 1 ? LIR_LOOP_VECTORIZED : LIR_LOOP_SERIAL);
        if (lv[d] < 0 || loom_lir_append(f, body, loop))
            return loom__lw_fail_nomem(c);
        body = loop->body;
        if (c->ws_guard[d]) {
            lir_expr *in = loom_lir_bin(f, LIR_LT, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, c->ws_base[d]), loom_lir_var_ref(f, lv[d])),
                                   loom_lir_dim(f, st->lhs, d));
            guard = guard ? loom_lir_bin(f, LIR_AND, guard, in) : in;
        }
    }
    lir_expr *gidx = NULL, *lidx = NULL;
    for (int d = 0; d < order; d++) {
        lir_expr *loc = lv[d] >= 0 ? loom_lir_var_ref(f, lv[d]) : loom_lir_int(f, 0);
        lir_expr *glob = loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, c->ws_base[d]), loc);
        gidx = gidx ? loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, gidx, loom_lir_dim(f, st->lhs, d)), glob) : glob;
        lidx = lidx ? loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, lidx, loom_lir_int(f, c->ws_ext[d])), loc) : loc;
    }
    if (!gidx)
        gidx = lidx = loom_lir_int(f, 0);
    if (loom__lw_guard_into(c, guard, &body))
        return c->status;
    lir_expr *val = loom_lir_load(f, c->ws_buf, lidx);
    if (c->epi_k > 0) { /* the consumers' values, stored at the same coordinates */
        int gvar[LOOM_MAX_ORDER];
        for (int d = 0; d < order; d++) {
            snprintf(name, sizeof name, "e_%s", c->prog->vars[st->lhs_idx[d]].name);
            gvar[d] = loom_lir_new_var(f, name, LIR_I64);
            lir_expr *loc = lv[d] >= 0 ? loom_lir_var_ref(f, lv[d]) : loom_lir_int(f, 0);
            if (gvar[d] < 0 ||
                loom_lir_append(f, body, loom_lir_let(f, gvar[d], loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, c->ws_base[d]), loc))))
                return loom__lw_fail_nomem(c);
        }
        return c->epilogue(c, body, val, gvar);
    }
    if (c->ws_accum) /* a reduction loop outside: add this partial in */
        val = loom_lir_bin(f, st->op == LOOM_ASSIGN_MAX ? LIR_MAX : LIR_ADD, loom_lir_load(f, c->lhs_buf, gidx), val);
    if (loom_lir_append(f, body, loom_lir_store(f, c->lhs_buf, gidx, val)))
        return loom__lw_fail_nomem(c);
    return LOOM_OK;
}

static int discordant(lctx *c, const group *g, int l, int x)
{
    const loom_format *F = &c->prog->tensors[g->root].format;
    return c->status = loom_error_set(
               c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
               "discordant-traversal: tensor %s's %s level %d (index %s) is iterated outside the loop of its parent "
               "level (index %s); reorder the loops so %s is inside %s, or declare %s csc",
               c->prog->tensors[g->root].name, loom_level_kind_name(F->level[l]), l + 1, c->prog->vars[x].name,
               c->prog->vars[g->var[l - 1]].name, c->prog->vars[x].name, c->prog->vars[g->var[l - 1]].name,
               c->prog->tensors[g->root].name);
}

/* Collect the compressed (C) and range (R) levels at index x. */
static int levels_at(lctx *c, int x, int *C, int *Cl, int *nC, int *R, int *Rl, int *nR)
{
    *nC = *nR = 0;
    for (int gi = 0; gi < c->ngroups; gi++) {
        const group *g = &c->g[gi];
        const loom_format *F = group_format(c, gi);
        for (int l = 0; l < g->nlevels; l++) {
            if (g->var[l] != x || F->level[l] == LOOM_LEVEL_DENSE)
                continue;
            if (l > 0 && g->pos[l - 1] < 0)
                return discordant(c, g, l, x);
            if (F->level[l] == LOOM_LEVEL_COMPRESSED) {
                C[*nC] = gi;
                Cl[(*nC)++] = l;
            } else {
                R[*nR] = gi;
                Rl[(*nR)++] = l;
            }
        }
    }
    return LOOM_OK;
}

/* LET lo/hi of every range level at x into seq (parent coordinates bound);
 * returns the guard lo <= x < hi (all of them), or NULL if none. */
static int range_lets(lctx *c, int nR, const int *R, const int *Rl, lir_stmt *seq, lir_expr **rlo, lir_expr **rhi)
{
    lir_func *f = c->f;
    char name[48];
    for (int k = 0; k < nR; k++) {
        lir_expr *lo, *hi;
        loom__lw_range_bounds(c, R[k], Rl[k], &lo, &hi);
        snprintf(name, sizeof name, "lo%s%d", c->prog->tensors[c->g[R[k]].root].name, Rl[k] + 1);
        int lov = loom_lir_new_var(f, name, LIR_I64);
        snprintf(name, sizeof name, "hi%s%d", c->prog->tensors[c->g[R[k]].root].name, Rl[k] + 1);
        int hiv = loom_lir_new_var(f, name, LIR_I64);
        if (loom_lir_append(f, seq, loom_lir_let(f, lov, lo)) || loom_lir_append(f, seq, loom_lir_let(f, hiv, hi)))
            return loom__lw_fail_nomem(c);
        c->g[R[k]].lo[Rl[k]] = lov;
        rlo[k] = loom_lir_var_ref(f, lov);
        rhi[k] = loom_lir_var_ref(f, hiv);
    }
    return LOOM_OK;
}

static lir_expr *range_guard(lctx *c, int x, int nR, lir_expr **rlo, lir_expr **rhi)
{
    lir_func *f = c->f;
    lir_expr *guard = NULL;
    for (int k = 0; k < nR; k++) {
        lir_expr *in = loom_lir_bin(f, LIR_AND, loom_lir_bin(f, LIR_GE, loom_lir_var_ref(f, c->xv[x]), rlo[k]),
                               loom_lir_bin(f, LIR_LT, loom_lir_var_ref(f, c->xv[x]), rhi[k]));
        guard = guard ? loom_lir_bin(f, LIR_AND, guard, in) : in;
    }
    return guard;
}

/* Index x got its value (expression v, already in a local): bind it, its
 * range guards and the positions that depend on it.  *seq may be narrowed
 * by guards. */
int loom__lw_bind_var(lctx *c, int x, lir_expr *v, lir_expr *extra_guard, lir_stmt **seq)
{
    lir_func *f = c->f;
    int C[LOOM_MAX_EXPRS / 2 + 2], Cl[LOOM_MAX_EXPRS / 2 + 2], nC;
    int R[LOOM_MAX_EXPRS / 2 + 2], Rl[LOOM_MAX_EXPRS / 2 + 2], nR;
    if (levels_at(c, x, C, Cl, &nC, R, Rl, &nR))
        return c->status;
    if (nC > 0) /* the primitives refuse this; a hand-built schedule may not */
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "split-sparse-coordinate: index %s is stored compressed; split its position "
                                          "space (PosSplit) instead of its coordinates",
                                          c->prog->vars[x].name);
    c->xclamp[x] = 0;
    c->xv[x] = loom_lir_new_var(f, c->prog->vars[x].name, LIR_I64);
    if (c->xv[x] < 0 || loom_lir_append(f, *seq, loom_lir_let(f, c->xv[x], v)))
        return loom__lw_fail_nomem(c);
    lir_expr *rlo[LOOM_MAX_EXPRS / 2 + 2], *rhi[LOOM_MAX_EXPRS / 2 + 2];
    if (range_lets(c, nR, R, Rl, *seq, rlo, rhi))
        return c->status;
    lir_expr *g = range_guard(c, x, nR, rlo, rhi);
    if (extra_guard)
        g = g ? loom_lir_bin(f, LIR_AND, extra_guard, g) : extra_guard;
    if (loom__lw_guard_into(c, g, seq))
        return c->status;
    return loom__lw_bind_positions(c, x, *seq);
}

/* Does expression e read tensor t or a sparse tensor? */
static int reads_t_or_sparse(const loom_program *prog, int e, int t)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return E->tensor == t || loom_tensor_is_sparse(prog, E->tensor);
    for (int a = 0; a < E->nargs && E->kind != LOOM_EXPR_CONST; a++)
        if (reads_t_or_sparse(prog, E->args[a], t))
            return 1;
    return 0;
}

/* May output index x, whose split overhangs its extent, be bound without a
 * guard and read clamped?  Only inside a CacheWrite workspace that x's
 * inner tiles iterate (so each overhanging row has its own workspace row,
 * dropped by the copy-out's guard), with all operands dense, not reading
 * the output, and no block placed in this one (it would see x unguarded). */
static int clampable(lctx *c, int x)
{
    const loom_stmt *st = c->st;
    if (!c->ws_active || c->ngroups > 0 || reads_t_or_sparse(c->prog, st->rhs, st->lhs))
        return 0;
    int in_ws = 0;
    for (int d = 0; d < c->prog->tensors[st->lhs].order; d++)
        in_ws |= st->lhs_idx[d] == x && c->ws_ext[d] > 1 && c->ws_guard[d];
    for (int p = 0; in_ws && p < c->sch->nstages; p++)
        if (p != c->si && c->sch->stages[p].compute_at == LOOM_AT_LOOP && c->sch->stages[p].at_stage == c->si)
            return 0;
    return in_ws;
}

/* Iter `it` has its value in local itv[it]: propagate to its parent split,
 * or, for a VAR, bind the index. */
int loom__lw_iter_bound(lctx *c, int it, lir_stmt **seq)
{
    const loom_stage *S = c->S;
    const loom_iter *I = &S->iters[it];
    lir_func *f = c->f;
    if (I->kind == LOOM_ITER_VAR)
        return loom__lw_bind_var(c, I->var, loom_lir_var_ref(f, c->itv[it]), NULL, seq);
    if (I->kind != LOOM_ITER_SPLIT)
        return LOOM_OK;
    const loom_iter *P = &S->iters[I->parent];
    for (int k = 0; k < I->nparts; k++)
        if (c->itv[P->first_child + k] < 0)
            return LOOM_OK; /* not all tiles open yet */
    /* parent = ((c0 * e1 + c1) * e2 + c2) ..., a tile of extent 1 (always
     * 0) left out, so [1, .., 1, E] indexes as the untiled loop */
    lir_expr *v = NULL;
    int64_t span = 1;
    for (int k = 0; k < I->nparts; k++) {
        int64_t e = loom_iter_extent(c->sch, c->si, P->first_child + k);
        if (v && e != 1)
            v = loom_lir_bin(f, LIR_MUL, v, loom_lir_int(f, e));
        if (e != 1) {
            lir_expr *ck = loom_lir_var_ref(f, c->itv[P->first_child + k]);
            v = v ? loom_lir_bin(f, LIR_ADD, v, ck) : ck;
        }
        span *= e;
    }
    if (!v)
        v = loom_lir_int(f, 0);
    int64_t E = loom_iter_extent(c->sch, c->si, I->parent);
    char name[48];
    char nm[40];
    snprintf(name, sizeof name, "%s", loom_iter_name(c->sch, c->si, I->parent, nm, sizeof nm));
    for (char *p = name; *p; p++)
        if (*p == '.')
            *p = '_';
    if (P->kind == LOOM_ITER_VAR && span > E && clampable(c, P->var)) {
        /* an overhanging register tile in a workspace: no guard in the
         * tile (it would keep gcc from holding the tile in registers); its
         * rows past the extent compute from the last row's operands, into
         * workspace rows the copy-out drops (its own guard) */
        if (loom__lw_bind_var(c, P->var, v, NULL, seq))
            return c->status;
        int xc = loom_lir_new_var(f, "clamped", LIR_I64);
        lir_expr *m = loom_lir_bin(f, LIR_MIN, loom_lir_var_ref(f, c->xv[P->var]), loom_lir_int(f, E - 1));
        if (xc < 0 || loom_lir_append(f, *seq, loom_lir_let(f, xc, m)))
            return loom__lw_fail_nomem(c);
        c->xclamp[P->var] = xc + 1;
        return LOOM_OK;
    }
    if (P->kind == LOOM_ITER_VAR) {
        lir_expr *guard = span > E ? loom_lir_bin(f, LIR_LT, v, loom_lir_int(f, E)) : NULL;
        /* bind_var LETs the var itself; the guard uses the expression */
        return loom__lw_bind_var(c, P->var, v, guard, seq);
    }
    c->itv[I->parent] = loom_lir_new_var(f, name, LIR_I64);
    if (c->itv[I->parent] < 0 || loom_lir_append(f, *seq, loom_lir_let(f, c->itv[I->parent], v)))
        return loom__lw_fail_nomem(c);
    if (span > E && loom__lw_guard_into(c, loom_lir_bin(f, LIR_LT, loom_lir_var_ref(f, c->itv[I->parent]), loom_lir_int(f, E)), seq))
        return c->status;
    return loom__lw_iter_bound(c, I->parent, seq);
}

int loom__lw_lower_var_loop(lctx *c, int d, lir_stmt *seq, int x, lir_loop_kind kind)
{
    lir_func *f = c->f;
    int C[LOOM_MAX_EXPRS / 2 + 2], Cl[LOOM_MAX_EXPRS / 2 + 2], nC;
    int R[LOOM_MAX_EXPRS / 2 + 2], Rl[LOOM_MAX_EXPRS / 2 + 2], nR;
    if (levels_at(c, x, C, Cl, &nC, R, Rl, &nR))
        return c->status;
    if (c->union_mode && nC > 0) /* a sum of sparse operands: lower_merge.c */
        return loom__lw_union_loop(c, d, seq, x, kind, C, Cl, nC, nR);
    char name[48];
    c->xclamp[x] = 0;
    snprintf(name, sizeof name, "%s", c->prog->vars[x].name);
    c->xv[x] = loom_lir_new_var(f, name, LIR_I64);
    if (c->xv[x] < 0)
        return loom__lw_fail_nomem(c);
    lir_expr *rlo[LOOM_MAX_EXPRS / 2 + 2], *rhi[LOOM_MAX_EXPRS / 2 + 2];
    if (range_lets(c, nR, R, Rl, seq, rlo, rhi))
        return c->status;

    if (nC == 0) {
        lir_expr *lo = loom_lir_int(f, 0), *hi = loom__lw_var_extent(c, x);
        for (int k = 0; k < nR; k++) {
            lo = k == 0 ? rlo[k] : loom_lir_bin(f, LIR_MAX, lo, rlo[k]);
            hi = loom_lir_bin(f, LIR_MIN, hi, rhi[k]);
        }
        int64_t K = kind == LIR_LOOP_PARALLEL ? loom__lw_balance_chunks(c, d) : 0;
        if (K > 0) { /* equal-nonzero chunks of rows (lower_balance.c) */
            if (loom__lw_balanced_rows(c, d, x, K, &seq, &lo, &hi))
                return c->status;
            kind = LIR_LOOP_SERIAL;
        }
        lir_stmt *loop = loom_lir_for(f, c->xv[x], lo, hi, kind);
        if (loom_lir_append(f, seq, loop))
            return loom__lw_fail_nomem(c);
        loom__lw_note_loop(c, d, loop);
        if (loom__lw_bind_positions(c, x, loop->body))
            return c->status;
        return c->inner(c, d, loop->body);
    }

    lir_expr *guard = range_guard(c, x, nR, rlo, rhi);
    if (nC == 1) {
        group *g = &c->g[C[0]];
        int l = Cl[0];
        int pb = loom_lir_buffer_get(f, LIR_BUF_POS, g->root, l), cb = loom_lir_buffer_get(f, LIR_BUF_CRD, g->root, l);
        snprintf(name, sizeof name, "p%s%d", c->prog->tensors[g->root].name, l + 1);
        g->pos[l] = loom_lir_new_var(f, name, LIR_I64);
        lir_expr *lo = loom_lir_load(f, pb, loom__lw_parent_pos(c, C[0], l));
        lir_expr *hi = loom_lir_load(f, pb, loom_lir_bin(f, LIR_ADD, loom__lw_parent_pos(c, C[0], l), loom_lir_int(f, 1)));
        lir_stmt *loop = loom_lir_for(f, g->pos[l], lo, hi, kind);
        if (loom_lir_append(f, seq, loop) ||
            loom_lir_append(f, loop->body, loom_lir_let(f, c->xv[x], loom_lir_load(f, cb, loom_lir_var_ref(f, g->pos[l])))))
            return loom__lw_fail_nomem(c);
        loom__lw_note_loop(c, d, loop);
        lir_stmt *body = loop->body;
        if (loom__lw_prefetch(c, d, g->root, l, g->pos[l], body) || loom__lw_guard_into(c, guard, &body) ||
            loom__lw_bind_positions(c, x, body))
            return c->status;
        return c->inner(c, d, body);
    }

    /* coiteration: intersection merge of nC sorted coordinate lists */
    if (kind == LIR_LOOP_PARALLEL)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "parallel-coiteration: the loop over %s merges %d sparse operands and "
                                          "cannot be parallel; parallelize an enclosing loop instead",
                                          c->prog->vars[x].name, nC);
    int endv[LOOM_MAX_EXPRS / 2 + 2], crdv[LOOM_MAX_EXPRS / 2 + 2];
    lir_expr *cond = NULL;
    for (int k = 0; k < nC; k++) {
        group *g = &c->g[C[k]];
        int l = Cl[k];
        int pb = loom_lir_buffer_get(f, LIR_BUF_POS, g->root, l);
        snprintf(name, sizeof name, "p%s%d", c->prog->tensors[g->root].name, l + 1);
        g->pos[l] = loom_lir_new_var(f, name, LIR_I64);
        snprintf(name, sizeof name, "end%s%d", c->prog->tensors[g->root].name, l + 1);
        endv[k] = loom_lir_new_var(f, name, LIR_I64);
        if (loom_lir_append(f, seq, loom_lir_let(f, g->pos[l], loom_lir_load(f, pb, loom__lw_parent_pos(c, C[k], l)))) ||
            loom_lir_append(f, seq,
                       loom_lir_let(f, endv[k], loom_lir_load(f, pb, loom_lir_bin(f, LIR_ADD, loom__lw_parent_pos(c, C[k], l), loom_lir_int(f, 1))))))
            return loom__lw_fail_nomem(c);
        lir_expr *lt = loom_lir_bin(f, LIR_LT, loom_lir_var_ref(f, g->pos[l]), loom_lir_var_ref(f, endv[k]));
        cond = cond ? loom_lir_bin(f, LIR_AND, cond, lt) : lt;
    }
    lir_stmt *wl = loom_lir_while(f, cond);
    if (loom_lir_append(f, seq, wl))
        return loom__lw_fail_nomem(c);
    lir_expr *mn = NULL;
    for (int k = 0; k < nC; k++) {
        group *g = &c->g[C[k]];
        int cb = loom_lir_buffer_get(f, LIR_BUF_CRD, g->root, Cl[k]);
        snprintf(name, sizeof name, "%s_%s", c->prog->vars[x].name, c->prog->tensors[g->root].name);
        crdv[k] = loom_lir_new_var(f, name, LIR_I64);
        if (loom_lir_append(f, wl->body, loom_lir_let(f, crdv[k], loom_lir_load(f, cb, loom_lir_var_ref(f, g->pos[Cl[k]])))))
            return loom__lw_fail_nomem(c);
        mn = mn ? loom_lir_bin(f, LIR_MIN, mn, loom_lir_var_ref(f, crdv[k])) : loom_lir_var_ref(f, crdv[k]);
    }
    if (loom_lir_append(f, wl->body, loom_lir_let(f, c->xv[x], mn)))
        return loom__lw_fail_nomem(c);
    lir_expr *all = NULL;
    for (int k = 0; k < nC; k++) {
        lir_expr *eq = loom_lir_bin(f, LIR_EQ, loom_lir_var_ref(f, crdv[k]), loom_lir_var_ref(f, c->xv[x]));
        all = all ? loom_lir_bin(f, LIR_AND, all, eq) : eq;
    }
    if (guard)
        all = loom_lir_bin(f, LIR_AND, all, guard);
    lir_stmt *iff = loom_lir_if(f, all);
    if (loom_lir_append(f, wl->body, iff))
        return loom__lw_fail_nomem(c);
    if (loom__lw_bind_positions(c, x, iff->body) || c->inner(c, d, iff->body))
        return c->status;
    for (int k = 0; k < nC; k++) {
        int pv = c->g[C[k]].pos[Cl[k]];
        lir_expr *adv = loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, pv),
                                loom_lir_bin(f, LIR_EQ, loom_lir_var_ref(f, crdv[k]), loom_lir_var_ref(f, c->xv[x])));
        if (loom_lir_append(f, wl->body, loom_lir_assign(f, pv, adv)))
            return loom__lw_fail_nomem(c);
    }
    return LOOM_OK;
}

/* The group and level of the compressed level of `tensor` at index x. */
static int pos_group(lctx *c, int tensor, int x, int *level)
{
    const loom_tensor *T = &c->prog->tensors[tensor];
    int root = T->pattern_of >= 0 ? T->pattern_of : tensor;
    for (int gi = 0; gi < c->ngroups; gi++) {
        const group *g = &c->g[gi];
        if (g->root != root)
            continue;
        const loom_format *F = group_format(c, gi);
        for (int l = 0; l < g->nlevels; l++)
            if (g->var[l] == x && F->level[l] == LOOM_LEVEL_COMPRESSED) {
                *level = l;
                return gi;
            }
    }
    return -1;
}

static int pos_coordinate(lctx *c, int d, group *g, int l, int x, lir_stmt *body);

/* The outer loop of a whole-row position split (factor 0, issue 13): for a
 * serial loop no loop is emitted (it would run once; the inner loop reads
 * the segment's bounds itself, as the unsplit loop does); a loop given
 * another kind (which the validator refuses: pos-whole-row-outer) runs
 * 0..1. */
static int whole_row_outer(lctx *c, int d, lir_stmt *seq, int it, lir_loop_kind kind)
{
    lir_func *f = c->f;
    char name[48];
    snprintf(name, sizeof name, "%s_p0", c->prog->vars[c->S->iters[it].var].name);
    c->itv[it] = loom_lir_new_var(f, name, LIR_I64); /* never read: the inner loop runs over positions */
    if (c->itv[it] < 0)
        return loom__lw_fail_nomem(c);
    if (kind == LIR_LOOP_SERIAL)
        return c->inner(c, d, seq);
    lir_stmt *loop = loom_lir_for(f, c->itv[it], loom_lir_int(f, 0), loom_lir_int(f, 1), kind);
    if (loom_lir_append(f, seq, loop))
        return loom__lw_fail_nomem(c);
    loom__lw_note_loop(c, d, loop);
    return c->inner(c, d, loop->body);
}

int loom__lw_lower_pos_loop(lctx *c, int d, lir_stmt *seq, int it, lir_loop_kind kind)
{
    lir_func *f = c->f;
    const loom_iter *I = &c->S->iters[it];
    int x = I->var, l;
    int gi = pos_group(c, I->tensor, x, &l);
    if (gi < 0)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "pos-on-dense-level: %s has no compressed level at index %s",
                                          c->prog->tensors[I->tensor].name, c->prog->vars[x].name);
    if (c->union_mode)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "pos-split-coiteration: index %s is merged as a union (a sum of sparse "
                                          "operands), so the positions of %s alone do not cover it",
                                          c->prog->vars[x].name, c->prog->tensors[I->tensor].name);
    group *g = &c->g[gi];
    int outer = c->S->iters[I->parent].first_child, innr = outer + 1;
    char name[48];
    if (I->index == 0) {
        if (l > 0 && g->pos[l - 1] < 0)
            return discordant(c, g, l, x);
        if (c->S->iters[innr].factor == 0) /* the whole row: no chunk loop (issue 13) */
            return whole_row_outer(c, d, seq, it, kind);
        int pb = loom_lir_buffer_get(f, LIR_BUF_POS, g->root, l);
        snprintf(name, sizeof name, "start%s%d", c->prog->tensors[g->root].name, l + 1);
        c->pos_start[outer] = loom_lir_new_var(f, name, LIR_I64);
        snprintf(name, sizeof name, "end%s%d", c->prog->tensors[g->root].name, l + 1);
        c->pos_end[outer] = loom_lir_new_var(f, name, LIR_I64);
        if (loom_lir_append(f, seq, loom_lir_let(f, c->pos_start[outer], loom_lir_load(f, pb, loom__lw_parent_pos(c, gi, l)))) ||
            loom_lir_append(f, seq,
                       loom_lir_let(f, c->pos_end[outer], loom_lir_load(f, pb, loom_lir_bin(f, LIR_ADD, loom__lw_parent_pos(c, gi, l), loom_lir_int(f, 1))))))
            return loom__lw_fail_nomem(c);
        int64_t fac = c->S->iters[innr].factor;
        lir_expr *len = loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, c->pos_end[outer]), loom_lir_var_ref(f, c->pos_start[outer]));
        lir_expr *chunks = fac == 1 ? len : loom_lir_bin(f, LIR_DIV, loom_lir_bin(f, LIR_ADD, len, loom_lir_int(f, fac - 1)), loom_lir_int(f, fac));
        snprintf(name, sizeof name, "%s_p0", c->prog->vars[x].name);
        c->itv[it] = loom_lir_new_var(f, name, LIR_I64);
        lir_stmt *loop = loom_lir_for(f, c->itv[it], loom_lir_int(f, 0), chunks, kind);
        if (loom_lir_append(f, seq, loop))
            return loom__lw_fail_nomem(c);
        loom__lw_note_loop(c, d, loop);
        return c->inner(c, d, loop->body);
    }
    if (c->itv[outer] < 0)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "pos-order: the inner loop of %s's position split is outside its outer loop",
                                          c->prog->vars[x].name);
    int64_t fac = I->factor;
    snprintf(name, sizeof name, "%s_p1", c->prog->vars[x].name);
    c->itv[it] = loom_lir_new_var(f, name, LIR_I64);
    if (fac == 0) {
        /* the whole row: the position itself is the loop variable, as the
         * unsplit position loop (loom__lw_lower_var_loop) has it */
        snprintf(name, sizeof name, "p%s%d", c->prog->tensors[g->root].name, l + 1);
        g->pos[l] = loom_lir_new_var(f, name, LIR_I64);
        int pb = loom_lir_buffer_get(f, LIR_BUF_POS, g->root, l);
        lir_expr *lo = loom_lir_load(f, pb, loom__lw_parent_pos(c, gi, l));
        lir_expr *hi = loom_lir_load(f, pb, loom_lir_bin(f, LIR_ADD, loom__lw_parent_pos(c, gi, l), loom_lir_int(f, 1)));
        lir_stmt *loop = loom_lir_for(f, g->pos[l], lo, hi, kind);
        if (loom_lir_append(f, seq, loop))
            return loom__lw_fail_nomem(c);
        loom__lw_note_loop(c, d, loop);
        return pos_coordinate(c, d, g, l, x, loop->body);
    }
    /* The last chunk is short.  A vectorized inner loop keeps its constant
     * extent and guards each lane; any other runs to min(factor, what is
     * left), so a chunk longer than the segment costs nothing.  Chunks of
     * one position are never short (each chunk holds a position, below):
     * their loop runs [0, 1), which cc removes -- of min(1, what is left)
     * in an unrolled chunk loop GCC 12 kept a test, a branch and a flag a
     * nonzero (docs/simulator.md "Chunks of one position"). */
    int bounded = kind != LIR_LOOP_VECTORIZED && fac > 1;
    lir_expr *hi = loom_lir_int(f, fac);
    if (bounded)
        hi = loom_lir_bin(f, LIR_MIN, hi,
                     loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, c->pos_end[outer]),
                             loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, c->pos_start[outer]),
                                     loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, c->itv[outer]), loom_lir_int(f, fac)))));
    lir_stmt *loop = loom_lir_for(f, c->itv[it], loom_lir_int(f, 0), hi, kind);
    if (loom_lir_append(f, seq, loop))
        return loom__lw_fail_nomem(c);
    /* the chunk loop runs [0, chunks) (a position tile is never split again:
       transform.c split-position-chunk), so each chunk holds a position */
    loop->nonempty = bounded;
    loom__lw_note_loop(c, d, loop);
    lir_stmt *body = loop->body;
    snprintf(name, sizeof name, "p%s%d", c->prog->tensors[g->root].name, l + 1);
    g->pos[l] = loom_lir_new_var(f, name, LIR_I64);
    lir_expr *p = loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, c->pos_start[outer]),
                          loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, c->itv[outer]), loom_lir_int(f, fac)),
                                  loom_lir_var_ref(f, c->itv[it])));
    if (loom_lir_append(f, body, loom_lir_let(f, g->pos[l], p)))
        return loom__lw_fail_nomem(c);
    if (kind == LIR_LOOP_VECTORIZED && fac > 1 &&
        loom__lw_guard_into(c, loom_lir_bin(f, LIR_LT, loom_lir_var_ref(f, g->pos[l]), loom_lir_var_ref(f, c->pos_end[outer])), &body))
        return c->status;
    return pos_coordinate(c, d, g, l, x, body);
}

/* In the body of a position loop over level l of group g (index x): the
 * coordinate, then other operands' range guards and positions, then what
 * is below depth d. */
static int pos_coordinate(lctx *c, int d, group *g, int l, int x, lir_stmt *body)
{
    lir_func *f = c->f;
    int cb = loom_lir_buffer_get(f, LIR_BUF_CRD, g->root, l);
    int C[LOOM_MAX_EXPRS / 2 + 2], Cl[LOOM_MAX_EXPRS / 2 + 2], nC;
    int R[LOOM_MAX_EXPRS / 2 + 2], Rl[LOOM_MAX_EXPRS / 2 + 2], nR;
    if (levels_at(c, x, C, Cl, &nC, R, Rl, &nR))
        return c->status;
    if (nC > 1)
        return c->status = loom_error_set(c->err, LOOM_ERR_SEMANTIC, c->prog->path, c->st->line, 0,
                                          "pos-split-coiteration: index %s merges %d sparse patterns",
                                          c->prog->vars[x].name, nC);
    c->xv[x] = loom_lir_new_var(f, c->prog->vars[x].name, LIR_I64);
    if (loom_lir_append(f, body, loom_lir_let(f, c->xv[x], loom_lir_load(f, cb, loom_lir_var_ref(f, g->pos[l])))))
        return loom__lw_fail_nomem(c);
    if (loom__lw_prefetch(c, d, g->root, l, g->pos[l], body))
        return c->status;
    lir_expr *rlo[LOOM_MAX_EXPRS / 2 + 2], *rhi[LOOM_MAX_EXPRS / 2 + 2];
    if (range_lets(c, nR, R, Rl, body, rlo, rhi) || loom__lw_guard_into(c, range_guard(c, x, nR, rlo, rhi), &body) ||
        loom__lw_bind_positions(c, x, body))
        return c->status;
    return c->inner(c, d, body);
}
