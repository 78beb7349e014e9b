/* Tiled lowering of a fused reduction chain (lower_fusion.h): a rolled loop
 * annotated "row_tile" = BR and/or "key_tile" = BC runs FlashAttention-2's
 * tiling (Dao 2023, algorithm 1; Neptune, Zhao et al. 2025, section 5):
 * BR consecutive rows of the source's innermost row loop share every block
 * of BC keys, so each key block is read once per BR rows instead of once
 * per row, and the score block is a small matrix product held in registers.
 *
 *   pack: Kp[outer][jt][d][jj] = the key side of the score at key
 *         jt*BC + jj (0 past the end): the key operand in key-block-major
 *         order, the packing of a GEMM's B panel (Goto & van de Geijn 2008,
 *         section 5), computed once per kernel;
 *   for the row loops outside the tiled one, then the row tiles (parallel
 *   when the row loop was; cyclic under a causal or band mask, whose rows
 *   carry unequal work):
 *     Qs[r][d] = the row side of the score (constants folded in);
 *     running max[BR] = -inf; accumulators [BR] x (BC lanes | own slice)
 *     for each key block jb of the tile's key range (a causal or band
 *     mask's empty blocks are outside the range, so never visited):
 *       Sx[r][jj] = sum_d Qs[r][d] * Kp[jb/BC][d][jj]   (BR x BC in registers)
 *       if the block is full for every row (no mask edge, no partial tile):
 *         the fast path: per row one max update (rescale when it grows),
 *         the exponentials vectorized over the block, the rolled terms
 *         key by key with the rows innermost (O's rows stay in registers);
 *       else, a block the mask cuts (whole tile, whole block, every row
 *         has seen a key by its end) whose rolled terms vanish at a -inf
 *         score: its masked scores set to -inf, then the fast path;
 *       else the same per row, over the keys of the block that row sees.
 *     finish each row: m, then the rolled blocks with deferred divisions.
 *
 * The score block must have the form a product over one reduced index d of
 * factors that read the row (and not the key), factors that read the key
 * (and not the row), constants, and the mask pattern itself; anything else
 * (and a compressed mask, or split-K) keeps the untiled lowering, and the
 * generated C says why in a comment.  The tiles are annotations rather
 * than Split/Reorder of the source's loops because the rolled loop must be
 * innermost (rolling-update-loop) and a tuner's flipped decision must keep
 * the trace's instructions (MetaSchedule's mutators change decisions
 * only). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower_fusion_internal.h"

#define tr loom__fu_tr
#define tr_hoist loom__fu_tr_hoist
#define app loom__fu_app


static int ann_value(const loom_loop *L, const char *key)
{
    for (int k = 0; k < L->nann; k++)
        if (!strcmp(L->ann[k].key, key))
            return (int)L->ann[k].value;
    return 0;
}

/* Flatten a product into factors; -1 when e is not a product of accesses
 * and constants (a division by a constant is a constant factor). */
static int factors(fctx *c, tile *T, int e, int *fs, int *n)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (E->kind == LOOM_EXPR_MUL)
        return factors(c, T, E->args[0], fs, n) || factors(c, T, E->args[1], fs, n) ? -1 : 0;
    if (E->kind == LOOM_EXPR_DIV && c->prog->exprs[E->args[1]].kind == LOOM_EXPR_CONST &&
        c->prog->exprs[E->args[1]].value != 0) {
        T->cst /= c->prog->exprs[E->args[1]].value;
        return factors(c, T, E->args[0], fs, n);
    }
    if (E->kind == LOOM_EXPR_CONST) {
        T->cst *= E->value;
        return 0;
    }
    if (E->kind != LOOM_EXPR_ACCESS || *n == MAX_FACTORS)
        return -1;
    fs[(*n)++] = e;
    return 0;
}

/* Split the score block's operand into row and key sides; a reason on
 * failure. */
static const char *classify(fctx *c, tile *T)
{
    const loom_program *prog = c->prog;
    const loom_stmt *ps = &prog->stmts[T->sd];
    if (ps->nvars - ps->nfree != 1)
        return "the score block does not reduce over exactly one index";
    if (ps->op == LOOM_ASSIGN_MAX)
        return "the score block is a max= reduction";
    T->dvar = ps->vars[ps->nfree];
    T->ND = loom_program_var_extent(prog, T->dvar);
    int fs[MAX_FACTORS], n = 0;
    T->cst = 1.0;
    if (factors(c, T, ps->rhs, fs, &n))
        return "the score is not a product of accesses and constants";
    T->nq = T->nk = T->nouter = 0;
    for (int k = 0; k < n; k++) {
        const loom_expr *E = &prog->exprs[fs[k]];
        const loom_tensor *X = &prog->tensors[E->tensor];
        int has_i = 0, has_j = 0, has_d = 0;
        for (int q = 0; q < E->nidx; q++) {
            int v = E->idx[q];
            if (v == T->dvar)
                has_d = 1;
            else if (T->svar_m[v] == T->ivar)
                has_i = 1;
            else if (T->svar_m[v] == c->jvar)
                has_j = 1;
        }
        if (loom_tensor_is_sparse(prog, E->tensor)) {
            int root = X->pattern_of >= 0 ? X->pattern_of : E->tensor;
            if (!X->is_pattern || root != c->root)
                return "the score reads a sparse tensor with values";
            continue; /* the mask's pattern: 1 on every key the tile visits */
        }
        if (has_i && has_j)
            return "a factor of the score reads both the row and the key";
        if (X->def_stmt >= 0 && prog->tensors[E->tensor].role == LOOM_TENSOR_TEMP &&
            c->sch->stages[X->def_stmt].compute_at != LOOM_AT_ROOT)
            return "the score reads a temporary that is not stored";
        if (has_j) {
            T->kf[T->nk++] = fs[k];
            for (int q = 0; q < E->nidx; q++) {
                int v = E->idx[q], mv = v == T->dvar ? -1 : T->svar_m[v];
                if (mv < 0 || mv == c->jvar)
                    continue;
                int seen = 0;
                for (int o = 0; o < T->nouter; o++)
                    seen |= T->outer[o] == mv;
                if (!seen) {
                    T->outer[T->nouter] = mv;
                    T->outer_ext[T->nouter++] = loom_program_var_extent(prog, mv);
                }
            }
        } else {
            T->qf[T->nq++] = fs[k];
        }
        (void)has_d;
    }
    if (!T->nk)
        return "no factor of the score reads the key";
    return NULL;
}

/* The product of factors fs under vm, times cst (NULL: 1). */
static lir_expr *product(fctx *c, const int *fs, int n, const int *vm, double cst)
{
    lir_expr *e = cst != 1.0 ? loom_lir_float(c->f, cst) : NULL;
    for (int k = 0; k < n; k++) {
        lir_expr *x = tr(c, fs[k], vm);
        if (!x)
            return NULL;
        e = e ? loom_lir_bin(c->f, LIR_MUL, e, x) : x;
    }
    return e ? e : loom_lir_float(c->f, 1.0);
}

static lir_expr *V(fctx *c, int v) { return loom_lir_var_ref(c->f, v); }
static lir_expr *I(fctx *c, int64_t x) { return loom_lir_int(c->f, x); }
static lir_expr *B(fctx *c, lir_binop op, lir_expr *a, lir_expr *b) { return loom_lir_bin(c->f, op, a, b); }

/* Flattened index of the outer vars (their LIR locals in loc). */
static lir_expr *outer_index(fctx *c, const tile *T, const int *loc)
{
    lir_expr *e = I(c, 0);
    for (int o = 0; o < T->nouter; o++)
        e = B(c, LIR_ADD, B(c, LIR_MUL, e, I(c, T->outer_ext[o])), V(c, loc[o]));
    return e;
}

/* Kp's index of (outer x key block fo, d, key jj of the block). */
static lir_expr *pack_index(fctx *c, const tile *T, int fo, int d, int jj)
{
    return B(c, LIR_ADD, B(c, LIR_MUL, B(c, LIR_ADD, B(c, LIR_MUL, V(c, fo), I(c, T->ND)), V(c, d)), I(c, T->BC)), V(c, jj));
}

/* The pack loops, at the kernel's top level. */
static int emit_pack(fctx *c, tile *T)
{
    lir_func *f = c->f;
    const loom_stmt *ps = &c->prog->stmts[T->sd];
    int64_t outer_n = 1;
    for (int o = 0; o < T->nouter; o++)
        outer_n *= T->outer_ext[o];
    /* a kernel-allocated buffer; keyed by the key operand's tensor, whose
     * own partials (RFactor) it can never have: it is read, not reduced */
    T->pack = loom_lir_buffer_get(f, LIR_BUF_PARTIAL, c->prog->exprs[T->kf[0]].tensor, 0);
    if (T->pack < 0)
        return loom__fu_nomem(c);
    snprintf(f->bufs[T->pack].name, sizeof f->bufs[T->pack].name, "pk_%s",
             c->prog->tensors[c->prog->exprs[T->kf[0]].tensor].name);
    f->bufs[T->pack].size = I(c, outer_n * T->ntj * T->ND * T->BC);
    f->bufs[T->pack].written = 1;
    char msg[160];
    snprintf(msg, sizeof msg, "the key side of %s packed in blocks of %lld keys (row tile %lld)",
             c->prog->tensors[ps->lhs].name, (long long)T->BC, (long long)T->BR);
    if (app(c, f->body, loom_lir_comment(f, msg)))
        return c->status;
    int vm[MAXV], loc[LOOM_MAX_ORDER];
    for (int v = 0; v < MAXV; v++)
        vm[v] = -1;
    lir_stmt *seq = f->body;
    int fo = loom_lir_new_var(f, "po", LIR_I64), jt = loom_lir_new_var(f, "pt", LIR_I64), d = loom_lir_new_var(f, "pd", LIR_I64),
        jj = loom_lir_new_var(f, "pj", LIR_I64), j = loom_lir_new_var(f, "pkey", LIR_I64);
    if (fo < 0 || jt < 0 || d < 0 || jj < 0 || j < 0)
        return loom__fu_nomem(c);
    /* one parallel loop over (outer, key block) */
    lir_stmt *L = loom_lir_for(f, fo, I(c, 0), I(c, outer_n * T->ntj), LIR_LOOP_PARALLEL);
    if (app(c, seq, L) || app(c, L->body, loom_lir_let(f, jt, B(c, LIR_SUB, V(c, fo), B(c, LIR_MUL, B(c, LIR_DIV, V(c, fo), I(c, T->ntj)), I(c, T->ntj))))))
        return c->status ? c->status : loom__fu_nomem(c);
    int64_t stride = T->ntj;
    for (int o = T->nouter - 1; o >= 0; o--) {
        loc[o] = loom_lir_new_var(f, c->prog->vars[T->outer[o]].name, LIR_I64);
        if (loc[o] < 0 ||
            app(c, L->body, loom_lir_let(f, loc[o], B(c, LIR_SUB, B(c, LIR_DIV, V(c, fo), I(c, stride)),
                                                   B(c, LIR_MUL, B(c, LIR_DIV, V(c, fo), I(c, stride * T->outer_ext[o])),
                                                     I(c, T->outer_ext[o]))))))
            return c->status ? c->status : loom__fu_nomem(c);
        stride *= T->outer_ext[o];
    }
    const loom_stmt *S = &c->prog->stmts[T->sd];
    for (int k = 0; k < S->nvars; k++) {
        int v = S->vars[k];
        if (v == T->dvar)
            vm[v] = d;
        else if (T->svar_m[v] == c->jvar)
            vm[v] = j;
        else
            for (int o = 0; o < T->nouter; o++)
                if (T->outer[o] == T->svar_m[v])
                    vm[v] = loc[o];
    }
    /* the block's keys before the end, then its zero padding: two loops
     * without a branch (measured: a branch per element cost 3% of a
     * 12 x 512 x 64 kernel) */
    int pn = loom_lir_new_var(f, "pn", LIR_I64);
    lir_stmt *Ld = loom_lir_for(f, d, I(c, 0), I(c, T->ND), LIR_LOOP_SERIAL);
    lir_stmt *Lj = loom_lir_for(f, jj, I(c, 0), V(c, pn), LIR_LOOP_SERIAL);
    lir_stmt *Lz = loom_lir_for(f, jj, V(c, pn), I(c, T->BC), LIR_LOOP_SERIAL);
    lir_expr *val = product(c, T->kf, T->nk, vm, 1.0);
    if (pn < 0 || !val ||
        app(c, L->body, loom_lir_let(f, pn, B(c, LIR_MIN, I(c, T->BC), B(c, LIR_SUB, I(c, T->Nj), B(c, LIR_MUL, V(c, jt), I(c, T->BC)))))) ||
        app(c, L->body, Ld) || app(c, Ld->body, Lj) || app(c, Ld->body, Lz) ||
        app(c, Lj->body, loom_lir_let(f, j, B(c, LIR_ADD, B(c, LIR_MUL, V(c, jt), I(c, T->BC)), V(c, jj)))) ||
        app(c, Lj->body, loom_lir_store(f, T->pack, pack_index(c, T, fo, d, jj), val)) ||
        app(c, Lz->body, loom_lir_store(f, T->pack, pack_index(c, T, fo, d, jj), loom_lir_float(f, 0.0))))
        return c->status ? c->status : loom__fu_nomem(c);
    return 0;
}

/* The key range [lo, hi) of row `row` (an expression), by the mask. */
static void row_range(fctx *c, lir_expr *row, lir_expr **lo, lir_expr **hi)
{
    if (c->root < 0) {
        *lo = I(c, 0);
        *hi = I(c, loom_program_var_extent(c->prog, c->jvar));
        return;
    }
    const loom_format *F = &c->prog->tensors[c->root].format;
    int64_t n = loom_program_var_extent(c->prog, c->jvar);
    if (F->kind == LOOM_FORMAT_CAUSAL) {
        *lo = I(c, 0);
        *hi = B(c, LIR_MIN, B(c, LIR_ADD, row, I(c, 1)), I(c, n));
    } else {
        *lo = B(c, LIR_MAX, I(c, 0), B(c, LIR_SUB, row, I(c, F->band_width)));
        *hi = B(c, LIR_MIN, I(c, n), B(c, LIR_ADD, row, I(c, F->band_width + 1)));
    }
}

/* A loop over r (rows of the tile: all BR in the fast path, nr otherwise)
 * with i = i0 + r bound; returns its body. */
static lir_stmt *row_loop(fctx *c, tile *T, lir_stmt *seq, int full)
{
    lir_func *f = c->f;
    lir_stmt *L = loom_lir_for(f, T->r, I(c, 0), full ? I(c, T->BR) : V(c, T->nr), LIR_LOOP_SERIAL);
    if (full && T->BR > 1) {
        L->loop_kind = LIR_LOOP_UNROLLED;
        L->unroll = (int)T->BR;
    }
    if (app(c, seq, L) || app(c, L->body, loom_lir_let(f, c->xv[T->ivar], B(c, LIR_ADD, V(c, T->i0), V(c, T->r)))) ||
        app(c, L->body, loom_lir_let(f, c->accm, loom_lir_load(f, T->rmax, V(c, T->r)))))
        return NULL;
    return L->body;
}

/* A loop over jj (keys of the block row r sees) with j = jb + jj bound. */
static lir_stmt *key_loop(fctx *c, tile *T, lir_stmt *seq, int full, lir_loop_kind kind)
{
    lir_func *f = c->f;
    lir_expr *lo = I(c, 0), *hi = I(c, T->BC);
    if (!full) {
        lir_expr *rlo, *rhi;
        row_range(c, V(c, c->xv[T->ivar]), &rlo, &rhi);
        lo = B(c, LIR_MAX, I(c, 0), B(c, LIR_SUB, rlo, V(c, T->jb)));
        hi = B(c, LIR_MIN, I(c, T->BC), B(c, LIR_SUB, rhi, V(c, T->jb)));
    }
    lir_stmt *L = loom_lir_for(f, T->jj, lo, hi, kind);
    if (app(c, seq, L) || app(c, L->body, loom_lir_let(f, c->xv[c->jvar], B(c, LIR_ADD, V(c, T->jb), V(c, T->jj)))))
        return NULL;
    return L;
}

static lir_expr *rj(fctx *c, const tile *T, int64_t width) /* r * width + jj */
{
    return B(c, LIR_ADD, B(c, LIR_MUL, V(c, T->r), I(c, width)), V(c, T->jj));
}

/* The loops over a rolled block's own slice (its free vars beyond m's,
 * the last one vectorized) nested into *s; *s becomes the innermost body
 * and *lidx the slice's flattened index.  Returns c->status on failure. */
static int slice_loops(fctx *c, const rolled *R, lir_stmt **s, lir_expr **lidx)
{
    for (int x = 0; x < R->nextra; x++) {
        int v = R->vm[R->extra[x]];
        lir_stmt *L = loom_lir_for(c->f, v, I(c, 0), I(c, R->ext[x]), x == R->nextra - 1 ? LIR_LOOP_VECTORIZED : LIR_LOOP_SERIAL);
        if (app(c, *s, L))
            return c->status ? c->status : loom__fu_nomem(c);
        *lidx = x == 0 ? V(c, v) : B(c, LIR_ADD, B(c, LIR_MUL, *lidx, I(c, R->ext[x])), V(c, v));
        *s = L->body;
    }
    return 0;
}

/* The block's rows: max update, exponentials, rolled terms. */
static int block_rows(fctx *c, tile *T, lir_stmt *seq, int full)
{
    lir_func *f = c->f;
    /* 1. per row: the block max of m's operand, one max update + rescale */
    lir_stmt *rb = row_loop(c, T, seq, 0 /* a plain loop: the rescale branches */);
    if (!rb)
        return c->status ? c->status : loom__fu_nomem(c);
    int bm = loom_lir_new_var(f, "blk_max", LIR_F32);
    if (bm < 0 || app(c, rb, loom_lir_let(f, bm, loom_lir_float(f, -INFINITY))))
        return loom__fu_nomem(c);
    lir_stmt *kl = key_loop(c, T, rb, full, LIR_LOOP_VECTORIZED);
    if (!kl)
        return c->status ? c->status : loom__fu_nomem(c);
    kl->red_var = bm;
    kl->red_max = 1;
    if (app(c, kl->body, loom_lir_assign(f, bm, B(c, LIR_MAX, V(c, bm), loom_lir_load(f, T->cand, rj(c, T, T->BC))))))
        return c->status;
    lir_stmt *grow = loom_lir_if(f, B(c, LIR_GT, V(c, bm), V(c, c->accm)));
    lir_stmt *seen = loom_lir_if(f, B(c, LIR_GT, V(c, c->accm), loom_lir_float(f, -INFINITY)));
    if (app(c, rb, grow) || app(c, grow->body, seen) ||
        app(c, grow->body, loom_lir_store(f, T->rmax, V(c, T->r), V(c, bm))))
        return c->status;
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        if (R->rule.coef == 0)
            continue;
        int cv = loom_lir_new_var(f, "corr", LIR_F32);
        lir_expr *ce = loom_lir_call(f, LIR_FN_EXP, B(c, LIR_MUL, loom_lir_float(f, R->rule.coef), B(c, LIR_SUB, V(c, bm), V(c, c->accm))));
        int64_t w = R->nslice == 1 ? T->BC : R->nslice;
        int q = loom_lir_new_var(f, "q", LIR_I64);
        lir_stmt *L = loom_lir_for(f, q, I(c, 0), I(c, w), LIR_LOOP_VECTORIZED);
        lir_expr *ix = B(c, LIR_ADD, B(c, LIR_MUL, V(c, T->r), I(c, w)), V(c, q));
        lir_stmt *st = loom_lir_store(f, T->acc[k], ix, B(c, LIR_MUL, loom_lir_load(f, T->acc[k], ix), V(c, cv)));
        if (cv < 0 || q < 0 || app(c, seen->body, loom_lir_let(f, cv, ce)) || app(c, seen->body, L))
            return c->status ? c->status : loom__fu_nomem(c);
        if (c->prog->stmts[R->s].op == LOOM_ASSIGN_MAX) { /* -inf * 0 would be NaN */
            lir_stmt *g = loom_lir_if(f, B(c, LIR_GT, loom_lir_load(f, T->acc[k], ix), loom_lir_float(f, -INFINITY)));
            if (app(c, L->body, g) || app(c, g->body, st))
                return c->status;
        } else if (app(c, L->body, st))
            return c->status;
    }
    /* 2. per row, vectorized over keys: the hoisted sub-expressions of the
     *    rolled terms (the exponentials), and the terms of the rolled blocks
     *    with one value per row (l), into their lanes */
    lir_stmt *rb2 = row_loop(c, T, seq, 0);
    if (!rb2)
        return c->status ? c->status : loom__fu_nomem(c);
    lir_stmt *ka = key_loop(c, T, rb2, full, LIR_LOOP_VECTORIZED);
    if (!ka)
        return c->status ? c->status : loom__fu_nomem(c);
    for (int d = 0; d < c->m; d++)
        if (c->pp_val[d] >= 0 && app(c, ka->body, loom_lir_let(f, c->pp_val[d], loom_lir_load(f, T->sx, rj(c, T, T->BC)))))
            return c->status;
    lir_stmt *hoist = loom_lir_seq(f);
    if (app(c, ka->body, hoist))
        return c->status;
    c->nhoist = 0;
    lir_expr *terms[LOOM_MAX_STMTS] = {0};
    for (int k = 0; k < c->nr; k++) { /* translate every term once, sharing the hoisted values */
        rolled *R = &c->r[k];
        if (R->nslice > 1)
            for (int x = 0; x < R->nextra; x++)
                c->extra_locals[x] = R->vm[R->extra[x]] = loom_lir_new_var(f, c->prog->vars[R->extra[x]].name, LIR_I64);
        c->nextra_locals = R->nslice > 1 ? R->nextra : 0;
        c->cur = R;
        terms[k] = tr_hoist(c, c->prog->stmts[R->s].rhs, R->vm, hoist);
        c->cur = NULL;
        if (c->status || !terms[k])
            return c->status ? c->status : loom__fu_nomem(c);
        if (R->nslice == 1 &&
            app(c, ka->body, loom_lir_store(f, T->acc[k], rj(c, T, T->BC),
                                       loom__fu_red_combine(c, c->prog->stmts[R->s].op,
                                                            loom_lir_load(f, T->acc[k], rj(c, T, T->BC)), terms[k]))))
            return c->status;
    }
    for (int h = 0; h < c->nhoist; h++) {
        T->hblk[h] = loom__fu_local_array(c, "hblk", c->ms->lhs, 5100 + h, T->BR * T->BC);
        if (T->hblk[h] < 0)
            return loom__fu_nomem(c);
        if (h >= T->nhblk) { /* declared once, before the key blocks */
            if (app(c, T->decls, loom_lir_local(f, T->hblk[h])))
                return c->status;
            T->nhblk = h + 1;
        }
        if (app(c, ka->body, loom_lir_store(f, T->hblk[h], rj(c, T, T->BC), V(c, c->hoist_var[h]))))
            return c->status;
    }
    /* 3. the rolled blocks with a slice per row (O's row): keys outside,
     *    rows inside in the fast path (the rows' slices stay in registers
     *    while a key's slice of V is loaded once) */
    int any = 0;
    for (int k = 0; k < c->nr; k++)
        any |= c->r[k].nslice > 1;
    if (!any)
        return 0;
    if (full && T->o_rg > 0)
        for (int k = 0; k < c->nr; k++)
            if (c->r[k].nslice > 1)
                return loom__fu_o_tile(c, T, seq, k);
    lir_stmt *inner;
    if (full) {
        lir_stmt *kb = key_loop(c, T, seq, 1, LIR_LOOP_SERIAL);
        inner = kb ? row_loop(c, T, kb->body, 1) : NULL;
    } else {
        lir_stmt *rb3 = row_loop(c, T, seq, 0);
        lir_stmt *kb = rb3 ? key_loop(c, T, rb3, 0, LIR_LOOP_SERIAL) : NULL;
        inner = kb ? kb->body : NULL;
    }
    if (!inner)
        return c->status ? c->status : loom__fu_nomem(c);
    for (int d = 0; d < c->m; d++)
        if (c->pp_val[d] >= 0 && app(c, inner, loom_lir_let(f, c->pp_val[d], loom_lir_load(f, T->sx, rj(c, T, T->BC)))))
            return c->status;
    for (int h = 0; h < c->nhoist; h++)
        if (app(c, inner, loom_lir_let(f, c->hoist_var[h], loom_lir_load(f, T->hblk[h], rj(c, T, T->BC)))))
            return c->status;
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        if (R->nslice == 1)
            continue;
        /* the slice loops, with the locals the term was translated with */
        lir_stmt *s = inner;
        lir_expr *lidx = I(c, 0);
        if (slice_loops(c, R, &s, &lidx))
            return c->status;
        lir_expr *ix = B(c, LIR_ADD, B(c, LIR_MUL, V(c, T->r), I(c, R->nslice)), lidx);
        /* the term's expression tree is used once: translate again for the
         * second and later uses is not needed (one store per block) */
        if (app(c, s, loom_lir_store(f, T->acc[k], ix,
                                loom__fu_red_combine(c, c->prog->stmts[R->s].op, loom_lir_load(f, T->acc[k], ix), terms[k]))))
            return c->status;
    }
    return 0;
}

/* After the key blocks: m's value and the rolled blocks' for each row of
 * the tile, deferred divisions applied. */
static int finish_rows(fctx *c, tile *T, lir_stmt *seq)
{
    lir_func *f = c->f;
    const loom_program *prog = c->prog;
    lir_stmt *rf = row_loop(c, T, seq, 0);
    if (!rf)
        return c->status ? c->status : loom__fu_nomem(c);
    int loc[LOOM_MAX_ORDER];
    for (int d = 0; d < prog->tensors[c->ms->lhs].order; d++)
        loc[d] = c->xv[c->ms->lhs_idx[d]];
    lir_expr *mi = V(c, loc[0]);
    for (int d = 1; d < prog->tensors[c->ms->lhs].order; d++)
        mi = B(c, LIR_ADD, B(c, LIR_MUL, mi, loom_lir_dim(f, c->ms->lhs, d)), V(c, loc[d]));
    int mbuf = loom_lir_buffer_get(f, prog->tensors[c->ms->lhs].role == LOOM_TENSOR_TEMP ? LIR_BUF_TEMP : LIR_BUF_VALS, c->ms->lhs, 0);
    if (app(c, rf, loom_lir_store(f, mbuf, mi, V(c, c->accm))))
        return c->status;
    for (int k = 0; k < c->nr; k++) { /* one value per row first: they are the deferred divisors */
        rolled *R = &c->r[k];
        if (R->nslice != 1)
            continue;
        int q = loom_lir_new_var(f, "q", LIR_I64);
        R->acc = loom_lir_new_var(f, "fin", LIR_F32);
        lir_stmt *L = loom_lir_for(f, q, I(c, 0), I(c, T->BC), LIR_LOOP_SERIAL);
        lir_expr *id = loom_lir_float(f, prog->stmts[R->s].op == LOOM_ASSIGN_MAX ? -INFINITY : 0.0);
        if (q < 0 || R->acc < 0 || app(c, rf, loom_lir_let(f, R->acc, id)) || app(c, rf, L) ||
            app(c, L->body, loom_lir_assign(f, R->acc, loom__fu_red_combine(c, prog->stmts[R->s].op, V(c, R->acc),
                                                                         loom_lir_load(f, T->acc[k], B(c, LIR_ADD, B(c, LIR_MUL, V(c, T->r), I(c, T->BC)), V(c, q)))))))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        const loom_stmt *rs = &prog->stmts[R->s];
        lir_stmt *in = rf;
        lir_expr *lidx = I(c, 0);
        int t = loom_lir_new_var(f, "fin", LIR_F32);
        if (R->nslice == 1) {
            if (t < 0 || app(c, in, loom_lir_let(f, t, V(c, R->acc))))
                return c->status ? c->status : loom__fu_nomem(c);
        } else {
            if (slice_loops(c, R, &in, &lidx))
                return c->status;
            if (t < 0 || app(c, in, loom_lir_let(f, t, loom_lir_load(f, T->acc[k], B(c, LIR_ADD, B(c, LIR_MUL, V(c, T->r), I(c, R->nslice)), lidx)))))
                return c->status ? c->status : loom__fu_nomem(c);
        }
        for (int q = 0; q < R->rule.ndiv; q++) {
            const rolled *D = NULL;
            for (int z = 0; z < c->nr; z++)
                if (c->r[z].s == R->rule.div[q])
                    D = &c->r[z];
            lir_stmt *nz = loom_lir_if(f, B(c, LIR_NE, V(c, D->acc), loom_lir_float(f, 0.0)));
            if (app(c, in, nz) || app(c, nz->body, loom_lir_assign(f, t, B(c, LIR_DIV, V(c, t), V(c, D->acc)))))
                return c->status;
        }
        int l2[LOOM_MAX_ORDER];
        for (int d = 0; d < prog->tensors[rs->lhs].order; d++)
            l2[d] = R->vm[rs->lhs_idx[d]];
        lir_expr *oi = V(c, l2[0]);
        for (int d = 1; d < prog->tensors[rs->lhs].order; d++)
            oi = B(c, LIR_ADD, B(c, LIR_MUL, oi, loom_lir_dim(f, rs->lhs, d)), V(c, l2[d]));
        int ob = loom_lir_buffer_get(f, prog->tensors[rs->lhs].role == LOOM_TENSOR_TEMP ? LIR_BUF_TEMP : LIR_BUF_VALS, rs->lhs, 0);
        if (app(c, in, loom_lir_store(f, ob, oi, V(c, t))))
            return c->status;
    }
    return 0;
}

/* m's operand per (row, key) of the block into cand, when it is not the
 * score itself. */
static int cand_block(fctx *c, tile *T, lir_stmt *seq)
{
    lir_func *f = c->f;
    lir_stmt *rc = loom_lir_for(f, T->r, I(c, 0), I(c, T->BR), LIR_LOOP_SERIAL);
    lir_stmt *jc = loom_lir_for(f, T->jj, I(c, 0), I(c, T->BC), LIR_LOOP_VECTORIZED);
    if (app(c, seq, rc) || app(c, rc->body, loom_lir_let(f, c->xv[T->ivar], B(c, LIR_ADD, V(c, T->i0), V(c, T->r)))) ||
        app(c, rc->body, jc) || app(c, jc->body, loom_lir_let(f, c->xv[c->jvar], B(c, LIR_ADD, V(c, T->jb), V(c, T->jj)))))
        return c->status ? c->status : loom__fu_nomem(c);
    for (int d = 0; d < c->m; d++)
        if (c->pp_val[d] >= 0 && app(c, jc->body, loom_lir_let(f, c->pp_val[d], loom_lir_load(f, T->sx, rj(c, T, T->BC)))))
            return c->status;
    lir_expr *mv = tr(c, c->ms->rhs, c->xv);
    if (!mv || app(c, jc->body, loom_lir_store(f, T->cand, rj(c, T, T->BC), mv)))
        return c->status ? c->status : loom__fu_nomem(c);
    return 0;
}

/* Sx[r][jj] = -inf outside row r's key range, for every row of the tile. */
static int mask_block(fctx *c, tile *T, lir_stmt *seq)
{
    lir_func *f = c->f;
    lir_stmt *rb = loom_lir_for(f, T->r, I(c, 0), I(c, T->BR), LIR_LOOP_SERIAL);
    lir_expr *rlo, *rhi;
    row_range(c, B(c, LIR_ADD, V(c, T->i0), V(c, T->r)), &rlo, &rhi);
    lir_expr *a = B(c, LIR_MAX, I(c, 0), B(c, LIR_MIN, I(c, T->BC), B(c, LIR_SUB, rlo, V(c, T->jb))));
    lir_expr *b = B(c, LIR_MAX, I(c, 0), B(c, LIR_MIN, I(c, T->BC), B(c, LIR_SUB, rhi, V(c, T->jb))));
    lir_stmt *L1 = loom_lir_for(f, T->jj, I(c, 0), a, LIR_LOOP_VECTORIZED);
    lir_stmt *L2 = loom_lir_for(f, T->jj, b, I(c, T->BC), LIR_LOOP_VECTORIZED);
    if (!rb || !L1 || !L2 || app(c, seq, rb) || app(c, rb->body, L1) || app(c, rb->body, L2) ||
        app(c, L1->body, loom_lir_store(f, T->sx, rj(c, T, T->BC), loom_lir_float(f, -INFINITY))) ||
        app(c, L2->body, loom_lir_store(f, T->sx, rj(c, T, T->BC), loom_lir_float(f, -INFINITY))))
        return c->status ? c->status : loom__fu_nomem(c);
    return 0;
}

/* The tile body: Qs, accumulators, the key blocks, the rows' finish. */
static int tile_body(fctx *c, tile *T, lir_stmt *seq)
{
    lir_func *f = c->f;
    const loom_program *prog = c->prog;
    const loom_stmt *S = &prog->stmts[T->sd];
    int key = 5000;
    T->qs = loom__fu_local_array(c, "qs", c->ms->lhs, key++, T->BR * T->ND);
    T->sx = loom__fu_local_array(c, "sx", c->ms->lhs, key++, T->BR * T->BC);
    /* m's operand: the score itself (attention's m max= S) is read from Sx,
     * anything else is computed into its own block first */
    const loom_expr *ME = &prog->exprs[c->ms->rhs];
    int direct = ME->kind == LOOM_EXPR_ACCESS && ME->tensor == S->lhs;
    T->cand = direct ? T->sx : loom__fu_local_array(c, "cand", c->ms->lhs, key, T->BR * T->BC);
    key++;
    T->rmax = loom__fu_local_array(c, "rmax", c->ms->lhs, key++, T->BR);
    if (T->qs < 0 || T->sx < 0 || T->cand < 0 || T->rmax < 0 || app(c, seq, loom_lir_local(f, T->qs)) ||
        app(c, seq, loom_lir_local(f, T->sx)) || (!direct && app(c, seq, loom_lir_local(f, T->cand))) ||
        app(c, seq, loom_lir_local(f, T->rmax)) ||
        app(c, seq, loom_lir_fill(f, T->rmax, I(c, T->BR), loom_lir_float(f, -INFINITY))))
        return c->status ? c->status : loom__fu_nomem(c);
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        int64_t w = R->nslice == 1 ? T->BC : R->nslice;
        T->acc[k] = loom__fu_local_array(c, "tacc", prog->stmts[R->s].lhs, key++, T->BR * w);
        if (T->acc[k] < 0 || app(c, seq, loom_lir_local(f, T->acc[k])) ||
            app(c, seq, loom_lir_fill(f, T->acc[k], I(c, T->BR * w),
                                 loom_lir_float(f, prog->stmts[R->s].op == LOOM_ASSIGN_MAX ? -INFINITY : 0.0))))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    T->decls = loom_lir_seq(f);
    if (app(c, seq, T->decls) || app(c, seq, loom_lir_fill(f, T->qs, I(c, T->BR * T->ND), loom_lir_float(f, 0.0))))
        return c->status ? c->status : loom__fu_nomem(c);
    /* Qs[r][d] = row side (0 for rows past the end) */
    int vm[MAXV];
    for (int v = 0; v < MAXV; v++)
        vm[v] = -1;
    for (int k = 0; k < S->nvars; k++) {
        int v = S->vars[k];
        vm[v] = v == T->dvar ? T->dl : T->svar_m[v] >= 0 ? c->xv[T->svar_m[v]] : -1;
    }
    lir_stmt *rq = row_loop(c, T, seq, 0);
    if (!rq)
        return c->status ? c->status : loom__fu_nomem(c);
    /* row_loop runs r < nr; rows nr..BR stay 0 (filled above) */
    lir_stmt *ld = loom_lir_for(f, T->dl, I(c, 0), I(c, T->ND), LIR_LOOP_VECTORIZED);
    lir_expr *qv = product(c, T->qf, T->nq, vm, T->cst);
    if (!qv || app(c, rq, ld) ||
        app(c, ld->body, loom_lir_store(f, T->qs, B(c, LIR_ADD, B(c, LIR_MUL, V(c, T->r), I(c, T->ND)), V(c, T->dl)), qv)))
        return c->status ? c->status : loom__fu_nomem(c);
    /* the key blocks of the tile's range */
    lir_expr *tlo, *thi, *first_hi, *last_lo;
    row_range(c, V(c, T->i0), &tlo, &first_hi);
    lir_expr *last = B(c, LIR_SUB, B(c, LIR_ADD, V(c, T->i0), V(c, T->nr)), I(c, 1));
    row_range(c, last, &last_lo, &thi);
    int lo = loom_lir_new_var(f, "tlo", LIR_I64), hi = loom_lir_new_var(f, "thi", LIR_I64), fhi = loom_lir_new_var(f, "full_hi", LIR_I64),
        flo = loom_lir_new_var(f, "full_lo", LIR_I64);
    /* every row sees [last row's lo, first row's hi): blocks inside it are full */
    if (lo < 0 || hi < 0 || fhi < 0 || flo < 0 || app(c, seq, loom_lir_let(f, lo, tlo)) || app(c, seq, loom_lir_let(f, hi, thi)) ||
        app(c, seq, loom_lir_let(f, flo, last_lo)) || app(c, seq, loom_lir_let(f, fhi, first_hi)))
        return c->status ? c->status : loom__fu_nomem(c);
    lir_stmt *w = loom_lir_while(f, B(c, LIR_LT, V(c, T->jb), V(c, hi)));
    if (app(c, seq, loom_lir_let(f, T->jb, B(c, LIR_MUL, B(c, LIR_DIV, V(c, lo), I(c, T->BC)), I(c, T->BC)))) || app(c, seq, w))
        return c->status ? c->status : loom__fu_nomem(c);
    /* Sx = Qs x Kp block (BR x BC, d outermost: the rows' score vectors stay in registers) */
    int oloc[LOOM_MAX_ORDER];
    for (int o = 0; o < T->nouter; o++)
        oloc[o] = c->xv[T->outer[o]];
    lir_expr *kbase = B(c, LIR_MUL,
                        B(c, LIR_ADD, B(c, LIR_MUL, outer_index(c, T, oloc), I(c, T->ntj)), B(c, LIR_DIV, V(c, T->jb), I(c, T->BC))),
                        I(c, T->ND * T->BC));
    int kb = loom_lir_new_var(f, "kb", LIR_I64);
    if (kb < 0 || app(c, w->body, loom_lir_let(f, kb, kbase)) || loom__fu_sx_tile(c, T, w->body, kb))
        return c->status ? c->status : loom__fu_nomem(c);
    /* m's operand per (row, key) of the block */
    if (!direct && cand_block(c, T, w->body))
        return c->status ? c->status : loom__fu_nomem(c);
    /* full block for every row: no mask edge, all BR rows */
    lir_expr *full = B(c, LIR_AND, B(c, LIR_EQ, V(c, T->nr), I(c, T->BR)),
                       B(c, LIR_AND, B(c, LIR_GE, V(c, T->jb), V(c, flo)),
                         B(c, LIR_LE, B(c, LIR_ADD, V(c, T->jb), I(c, T->BC)), V(c, fhi))));
    if (loom__fu_masked_fast_ok(c, T, direct)) {
        /* A block the mask cuts, with all BR rows and all BC keys in range,
         * where every row has seen a key by the end of it (its range starts
         * before the block ends -- the ranges' starts grow with the row, so
         * the last row's is the latest -- and is not empty): mask, then the
         * fast path.  No row's running max is then -inf at the
         * exponentials, where -inf - -inf would be NaN. */
        int use = loom_lir_new_var(f, "fast", LIR_I64);
        lir_stmt *mk = loom_lir_if(f, B(c, LIR_AND, B(c, LIR_EQ, V(c, use), I(c, 0)),
                                        B(c, LIR_AND, B(c, LIR_EQ, V(c, T->nr), I(c, T->BR)),
                                          B(c, LIR_AND, B(c, LIR_LE, B(c, LIR_ADD, V(c, T->jb), I(c, T->BC)), I(c, T->Nj)),
                                            B(c, LIR_AND, B(c, LIR_LT, V(c, flo), B(c, LIR_ADD, V(c, T->jb), I(c, T->BC))),
                                              B(c, LIR_LT, V(c, flo), V(c, hi)))))));
        if (use < 0 || !mk || app(c, w->body, loom_lir_let(f, use, full)) || app(c, w->body, mk) ||
            app(c, mk->body, loom_lir_comment(f, "a block the mask cuts: masked scores to -inf, then the fast path")) ||
            mask_block(c, T, mk->body) || app(c, mk->body, loom_lir_assign(f, use, I(c, 1))))
            return c->status ? c->status : loom__fu_nomem(c);
        full = B(c, LIR_NE, V(c, use), I(c, 0));
    }
    lir_stmt *fu = loom_lir_if(f, full);
    fu->els = loom_lir_seq(f);
    if (app(c, w->body, fu) || block_rows(c, T, fu->body, 1) || block_rows(c, T, fu->els, 0) ||
        app(c, w->body, loom_lir_assign(f, T->jb, B(c, LIR_ADD, V(c, T->jb), I(c, T->BC)))))
        return c->status ? c->status : loom__fu_nomem(c);
    return finish_rows(c, T, seq);
}

/* Check the tiled form applies; a reason when it does not. */
static const char *applies(fctx *c, tile *T, int rt, int kt)
{
    const loom_program *prog = c->prog;
    const loom_stage *M = &c->sch->stages[c->m];
    if (M->splitk)
        return "split-K keeps whole rows";
    if (c->root >= 0 && prog->tensors[c->root].format.level[1] == LOOM_LEVEL_COMPRESSED)
        return "rows of a compressed mask share no keys";
    if (M->nloops < 2)
        return "the source has no row loop";
    const loom_iter *It = &M->iters[M->loops[M->nloops - 2].iter];
    if (It->kind == LOOM_ITER_VAR)
        T->ivar = It->var;
    else if (It->kind == LOOM_ITER_FUSE && M->iters[It->b].kind == LOOM_ITER_VAR)
        T->ivar = M->iters[It->b].var;
    else
        return "the innermost row loop is not an index of the source";
    if (c->root >= 0 && c->var0 != T->ivar)
        return "the mask's row index is not the tiled row loop";
    T->BR = rt > 1 ? rt : 1;
    T->BC = kt > 0 ? kt : 16;
    if (T->BC % 16 || T->BC > 256 || T->BR > 32)
        return "tiles must be at most 32 rows and a multiple of 16 keys up to 256";
    T->Ni = loom_program_var_extent(prog, T->ivar);
    T->Nj = loom_program_var_extent(prog, c->jvar);
    T->sd = -1;
    for (int d = 0; d < c->m; d++)
        if (c->pp_val[d] == -2) {
            if (T->sd >= 0)
                return "more than one block is computed at the loop";
            T->sd = d;
        }
    if (T->sd < 0)
        return "no score block is computed at the loop";
    for (int v = 0; v < MAXV; v++)
        T->svar_m[v] = -1;
    int e = loom_expr_find_access(prog, c->ms->rhs, prog->stmts[T->sd].lhs);
    if (e < 0)
        return "the source does not read the score block directly";
    for (int k = 0; k < prog->exprs[e].nidx; k++)
        T->svar_m[prog->stmts[T->sd].lhs_idx[k]] = prog->exprs[e].idx[k];
    const char *why = classify(c, T);
    if (why)
        return why;
    for (int k = 0; k < c->nr; k++) {
        if (c->r[k].nslice * T->BR > MAX_SLICE)
            return "a rolled block's slice times the row tile is too large";
        for (int x = 0; x < c->r[k].nextra; x++)
            if (c->r[k].extra[x] == T->ivar)
                return "a rolled block runs over the tiled row index";
    }
    if (T->BR * T->ND > MAX_SLICE)
        return "the row tile's operand is too large";
    /* register tiles fitted to the target (the rolled loop's vector shape):
     * rows per group and vectors per row, then partial sums over d up to 8
     * independent FMA chains (an FMA's latency x the FMA units) */
    int64_t regs = loom_limits_registers(&c->vl);
    loom__fu_regtile_shape(&c->vl, T->BR, T->BC, &T->sx_rg, &T->sx_nv, &T->sx_u);
    T->sx_np = 1;
    while (T->sx_rg * T->sx_nv * T->sx_np * 2 <= 8 && T->ND % (T->sx_np * 2) == 0 &&
           T->sx_rg * T->sx_nv * T->sx_np * 2 + 2 * T->sx_nv <= regs)
        T->sx_np *= 2;
    int nsl = 0, one = -1;
    for (int k = 0; k < c->nr; k++)
        if (c->r[k].nslice > 1) {
            nsl++;
            one = k;
        }
    T->o_rg = 0;
    T->o_n = nsl == 1 ? c->r[one].nslice : 0;
    if (nsl == 1 && c->r[one].nextra == 1)
        loom__fu_regtile_shape(&c->vl, T->BR, T->o_n, &T->o_rg, &T->o_nv, &T->o_u);
    T->ntj = (T->Nj + T->BC - 1) / T->BC;
    return NULL;
}

int loom__fu_tiled(fctx *c, lir_stmt **seqp, int *done)
{
    *done = 0;
    const loom_stage *M = &c->sch->stages[c->m];
    const loom_loop *J = &M->loops[M->nloops - 1];
    int rt = ann_value(J, LOOM_ANN_ROW_TILE), kt = ann_value(J, LOOM_ANN_KEY_TILE);
    if (rt <= 0 && kt <= 0)
        return 0;
    tile T;
    memset(&T, 0, sizeof T);
    const char *why = applies(c, &T, rt, kt);
    lir_func *f = c->f;
    if (why) {
        char msg[200];
        snprintf(msg, sizeof msg, "row_tile/key_tile not applied (untiled rolling update): %s", why);
        return app(c, f->body, loom_lir_comment(f, msg)) ? c->status : 0;
    }
    /* the running max (a local per row, loaded from rmax[r]) and the score
     * block's value (a local per (row, key), loaded from Sx) */
    c->accm = loom_lir_new_var(f, "run_max", LIR_F32);
    c->pp_val[T.sd] = loom_lir_new_var(f, c->prog->tensors[c->prog->stmts[T.sd].lhs].name, LIR_F32);
    if (c->accm < 0 || c->pp_val[T.sd] < 0)
        return loom__fu_nomem(c);
    {
        int e = loom_expr_find_access(c->prog, c->ms->rhs, c->prog->stmts[T.sd].lhs);
        for (int k = 0; k < c->prog->exprs[e].nidx; k++)
            c->pp_at[T.sd][k] = c->xv[c->prog->exprs[e].idx[k]];
    }
    if (emit_pack(c, &T))
        return c->status;
    /* the row loops outside the tiled one, as lower_chain opens them */
    lir_stmt *seq = *seqp;
    int n_open = M->nloops - 2;
    if (loom__fu_open_rows(c, &seq, n_open))
        return c->status;
    const loom_loop *RL = &M->loops[M->nloops - 2];
    const loom_iter *It = &M->iters[RL->iter];
    int64_t ntiles = (T.Ni + T.BR - 1) / T.BR;
    int par = RL->kind == LOOM_LOOP_PARALLEL;
    int tv = loom_lir_new_var(f, "tile", LIR_I64);
    T.i0 = loom_lir_new_var(f, "i0", LIR_I64);
    T.nr = loom_lir_new_var(f, "nr", LIR_I64);
    T.jb = loom_lir_new_var(f, "jb", LIR_I64);
    T.r = loom_lir_new_var(f, "r", LIR_I64);
    T.jj = loom_lir_new_var(f, "jj", LIR_I64);
    T.dl = loom_lir_new_var(f, c->prog->vars[T.dvar].name, LIR_I64);
    if (tv < 0 || T.i0 < 0 || T.nr < 0 || T.jb < 0 || T.r < 0 || T.jj < 0 || T.dl < 0)
        return loom__fu_nomem(c);
    lir_stmt *L;
    if (It->kind == LOOM_ITER_VAR) {
        L = loom_lir_for(f, tv, I(c, 0), I(c, ntiles), par ? LIR_LOOP_PARALLEL : LIR_LOOP_SERIAL);
        if (app(c, seq, L) || app(c, L->body, loom_lir_let(f, T.i0, B(c, LIR_MUL, V(c, tv), I(c, T.BR)))))
            return c->status ? c->status : loom__fu_nomem(c);
    } else { /* fused (a, i): a = f / ntiles, tile = f % ntiles */
        int va = M->iters[It->a].var;
        int64_t ea = loom_program_var_extent(c->prog, va);
        int fv = loom_lir_new_var(f, "fused", LIR_I64);
        L = loom_lir_for(f, fv, I(c, 0), I(c, ea * ntiles), par ? LIR_LOOP_PARALLEL : LIR_LOOP_SERIAL);
        if (fv < 0 || app(c, seq, L) || app(c, L->body, loom_lir_let(f, c->xv[va], B(c, LIR_DIV, V(c, fv), I(c, ntiles)))) ||
            app(c, L->body, loom_lir_let(f, T.i0, B(c, LIR_MUL, B(c, LIR_SUB, V(c, fv), B(c, LIR_MUL, V(c, c->xv[va]), I(c, ntiles))),
                                                I(c, T.BR)))))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    if (par && c->root >= 0)
        L->par_chunk = 1; /* triangular or banded work: deal the tiles out cyclically */
    if (app(c, L->body, loom_lir_let(f, T.nr, B(c, LIR_MIN, I(c, T.BR), B(c, LIR_SUB, I(c, T.Ni), V(c, T.i0))))))
        return c->status;
    if (tile_body(c, &T, L->body))
        return c->status;
    *done = 1;
    return 0;
}
