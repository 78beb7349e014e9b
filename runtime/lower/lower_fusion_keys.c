/* Lowering of a fused chain's loop over the reduced index in blocks of
 * keys (lower_fusion.h, lower_fusion_internal.h): split from
 * lower_fusion.c, which opens and closes the row; lower_fusion_util.c
 * translates the expressions. */
#include <math.h>

#include "lower_fusion_internal.h"

#define unsupported loom__fu_unsupported
#define tr loom__fu_tr
#define tr_hoist loom__fu_tr_hoist
#define find_access_of loom_expr_find_access /* dsl/schedule/query.h */

/* Keys per block: the scores of a block are computed into a local array,
 * the running max is raised once per block (one rescale of the rolled
 * accumulators per block, not per key), the exponentials of the block are
 * one vectorized loop (libmvec's expf, codegen.c), and the rolled terms
 * follow (FlashAttention-2's per-tile online softmax, Dao 2023, alg. 1,
 * with the tile in registers/L1 rather than shared memory). */
#define KEY_BLOCK 16

enum { ITER_DENSE, ITER_COMPRESSED, ITER_RANGE };

typedef struct jiter {
    int mode;
    int lo;   /* RANGE: the local holding the row's first j */
    int pb, cb; /* pos / crd buffers of the mask's level 1 */
} jiter;

/* The locals of the iteration at `it` (j's value, or a position). */
static int iter_lets(fctx *c, const jiter *J, lir_stmt *seq, lir_expr *it)
{
    lir_func *f = c->f;
    int j = c->xv[c->jvar];
    if (J->mode == ITER_COMPRESSED)
        return loom__fu_app(c, seq, loom_lir_let(f, c->posv, it)) ||
               loom__fu_app(c, seq, loom_lir_let(f, j, loom_lir_load(f, J->cb, loom_lir_var_ref(f, c->posv))));
    if (loom__fu_app(c, seq, loom_lir_let(f, j, it)))
        return -1;
    if (J->mode == ITER_RANGE) {
        lir_expr *p = loom_lir_bin(f, LIR_ADD, loom_lir_load(f, J->pb, loom_lir_var_ref(f, c->xv[c->var0])),
                              loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, j), loom_lir_var_ref(f, J->lo)));
        return loom__fu_app(c, seq, loom_lir_let(f, c->posv, p));
    }
    return 0;
}

/* A reduction over one index whose extent is a multiple of LANES (e.g. a
 * score's dot product), into local val: LANES partial accumulators in a
 * local array, then a halving tree over them.  An `omp simd` reduction
 * clause would instead end in a chain of LANES dependent scalar adds per
 * score, which GCC 12 emits in order (measured: about 70% of the fused
 * attention kernel's time).  LANES is two of the target's vectors
 * (c->dot_lanes: the rolled loop's vector_lanes annotation or the host's,
 * as a power of two) when the extent allows, so that two independent FMA
 * chains feed the two FMA pipes (4 registers with their operands: they fit
 * any register file), else one vector; 0 (no lane reduction) when the
 * extent is not a multiple of one vector. */
static int64_t dot_lanes(const fctx *c, int64_t ext)
{
    int64_t L = c->dot_lanes;
    return ext % (2 * L) == 0 ? 2 * L : ext % L == 0 ? L : 0;
}
#define LANES lanes
static int lane_reduction(fctx *c, lir_stmt *body, const loom_stmt *ps, int *vm, int val)
{
    lir_func *f = c->f;
    int v = ps->vars[ps->nfree];
    int64_t ext = loom_program_var_extent(c->prog, v), lanes = dot_lanes(c, ext);
    int lb = loom__fu_local_array(c, "lanes", ps->lhs, 2002, LANES);
    int d0 = loom_lir_new_var(f, "d0", LIR_I64), l = loom_lir_new_var(f, "l", LIR_I64);
    vm[v] = loom_lir_new_var(f, c->prog->vars[v].name, LIR_I64);
    if (lb < 0 || d0 < 0 || l < 0 || vm[v] < 0 || loom__fu_app(c, body, loom_lir_local(f, lb)) ||
        loom__fu_app(c, body, loom_lir_fill(f, lb, loom_lir_int(f, LANES), loom_lir_float(f, ps->op == LOOM_ASSIGN_MAX ? -INFINITY : 0.0))))
        return c->status ? c->status : loom__fu_nomem(c);
    lir_stmt *outer = loom_lir_for(f, d0, loom_lir_int(f, 0), loom_lir_int(f, ext / LANES), LIR_LOOP_SERIAL);
    lir_stmt *inner = loom_lir_for(f, l, loom_lir_int(f, 0), loom_lir_int(f, LANES), LIR_LOOP_VECTORIZED);
    if (loom__fu_app(c, body, outer) || loom__fu_app(c, outer->body, inner) ||
        loom__fu_app(c, inner->body, loom_lir_let(f, vm[v], loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, d0),
                                                                                     loom_lir_int(f, LANES)),
                                                              loom_lir_var_ref(f, l)))))
        return c->status ? c->status : loom__fu_nomem(c);
    lir_expr *rhs = tr(c, ps->rhs, vm);
    if (c->status || !rhs)
        return c->status ? c->status : loom__fu_nomem(c);
    if (loom__fu_app(c, inner->body, loom_lir_store(f, lb, loom_lir_var_ref(f, l),
                                               loom__fu_red_combine(c, ps->op, loom_lir_load(f, lb, loom_lir_var_ref(f, l)), rhs))))
        return c->status;
    for (int w = LANES / 2; w >= 2; w /= 2) {
        lir_stmt *half = loom_lir_for(f, l, loom_lir_int(f, 0), loom_lir_int(f, w), LIR_LOOP_VECTORIZED);
        lir_expr *sum = loom__fu_red_combine(c, ps->op, loom_lir_load(f, lb, loom_lir_var_ref(f, l)),
                                             loom_lir_load(f, lb, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, l), loom_lir_int(f, w))));
        if (loom__fu_app(c, body, half) || loom__fu_app(c, half->body, loom_lir_store(f, lb, loom_lir_var_ref(f, l), sum)))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    return loom__fu_app(c, body, loom_lir_assign(f, val, loom__fu_red_combine(c, ps->op, loom_lir_load(f, lb, loom_lir_int(f, 0)),
                                                                         loom_lir_load(f, lb, loom_lir_int(f, 1)))))
               ? c->status
               : 0;
}

/* Phase 1 of a key: the blocks computed at the loop, into their locals. */
static int computed_at(fctx *c, lir_stmt *body)
{
    lir_func *f = c->f;
    const loom_program *prog = c->prog;
    for (int d = 0; d < c->m; d++) {
        if (c->pp_val[d] != -2)
            continue;
        const loom_stmt *ps = &prog->stmts[d];
        int e = find_access_of(prog, c->ms->rhs, ps->lhs);
        if (e < 0)
            return unsupported(c, "%s is computed at the loop of %s but %s does not read it directly",
                               prog->tensors[ps->lhs].name, prog->tensors[c->ms->lhs].name,
                               prog->tensors[c->ms->lhs].name);
        int vm[MAXV];
        for (int v = 0; v < MAXV; v++)
            vm[v] = -1;
        for (int k = 0; k < prog->exprs[e].nidx; k++) {
            vm[ps->lhs_idx[k]] = c->xv[prog->exprs[e].idx[k]];
            c->pp_at[d][k] = vm[ps->lhs_idx[k]];
        }
        int val = loom_lir_new_var(f, prog->tensors[ps->lhs].name, LIR_F32);
        if (val < 0 || loom__fu_app(c, body, loom_lir_let(f, val, loom_lir_float(f, ps->op == LOOM_ASSIGN_MAX ? -INFINITY : 0.0))))
            return c->status;
        int nred = ps->nvars - ps->nfree;
        if (nred == 1 && dot_lanes(c, loom_program_var_extent(prog, ps->vars[ps->nfree])) > 0) {
            if (lane_reduction(c, body, ps, vm, val))
                return c->status;
            c->pp_val[d] = val;
            continue;
        }
        lir_stmt *seq = body;
        for (int k = ps->nfree; k < ps->nvars; k++) {
            int v = ps->vars[k];
            vm[v] = loom_lir_new_var(f, prog->vars[v].name, LIR_I64);
            lir_stmt *loop = loom_lir_for(f, vm[v], loom_lir_int(f, 0), loom_lir_int(f, loom_program_var_extent(prog, v)),
                                     k == ps->nvars - 1 ? LIR_LOOP_VECTORIZED : LIR_LOOP_SERIAL);
            if (vm[v] < 0 || loom__fu_app(c, seq, loop))
                return c->status;
            if (k == ps->nvars - 1) {
                loop->red_var = val;
                loop->red_max = ps->op == LOOM_ASSIGN_MAX;
            }
            seq = loop->body;
        }
        lir_expr *rhs = tr(c, ps->rhs, vm);
        if (c->status || !rhs)
            return c->status ? c->status : loom__fu_nomem(c);
        if (loom__fu_app(c, seq, loom_lir_assign(f, val, nred ? loom__fu_red_combine(c, ps->op, loom_lir_var_ref(f, val), rhs) : rhs)))
            return c->status;
        c->pp_val[d] = val;
    }
    return 0;
}

/* The max update to the value of local v, with the rescale. */
static int raise_max(fctx *c, lir_stmt *body, int v)
{
    lir_func *f = c->f;
    lir_stmt *grow = loom_lir_if(f, loom_lir_bin(f, LIR_GT, loom_lir_var_ref(f, v), loom_lir_var_ref(f, c->accm)));
    lir_stmt *seen = loom_lir_if(f, loom_lir_bin(f, LIR_GT, loom_lir_var_ref(f, c->accm), loom_lir_float(f, -INFINITY)));
    if (loom__fu_app(c, body, grow) || loom__fu_app(c, grow->body, seen))
        return c->status;
    int corr_var[LOOM_MAX_STMTS];
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        if (R->rule.coef == 0)
            continue;
        int cv = -1;
        for (int q = 0; q < k; q++) /* one exp per distinct correction */
            if (c->r[q].rule.coef == R->rule.coef)
                cv = corr_var[q];
        if (cv < 0) {
            cv = loom_lir_new_var(f, "corr", LIR_F32);
            lir_expr *ce = loom_lir_call(f, LIR_FN_EXP, loom_lir_bin(f, LIR_MUL, loom_lir_float(f, R->rule.coef),
                                                           loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, v), loom_lir_var_ref(f, c->accm))));
            if (cv < 0 || loom__fu_app(c, seen->body, loom_lir_let(f, cv, ce)))
                return c->status;
        }
        corr_var[k] = cv;
        lir_expr *lidx;
        lir_stmt *in = loom__fu_slice_loops(c, R, seen->body, &lidx);
        if (!in)
            return c->status ? c->status : loom__fu_nomem(c);
        lir_stmt *st = loom__fu_acc_set(c, R, lidx, loom_lir_bin(f, LIR_MUL, loom__fu_acc_ref(c, R, lidx), loom_lir_var_ref(f, cv)));
        if (c->prog->stmts[R->s].op == LOOM_ASSIGN_MAX) { /* -inf * 0 would be NaN */
            lir_stmt *g = loom_lir_if(f, loom_lir_bin(f, LIR_GT, loom__fu_acc_ref(c, R, lidx), loom_lir_float(f, -INFINITY)));
            if (loom__fu_app(c, in, g))
                return c->status;
            in = g->body;
        }
        if (loom__fu_app(c, in, st))
            return c->status;
    }
    return loom__fu_app(c, grow->body, loom_lir_assign(f, c->accm, loom_lir_var_ref(f, v))) ? c->status : 0;
}

/* One block of keys [ib, ib + nb) (locals ib, nb) into body:
 *   1. per key: the blocks computed at the loop and m's operand, into
 *      local arrays;
 *   2. the block's max (a vectorized max reduction), one max update;
 *   3a. per key, vectorized: the rolled terms' sub-expressions that do not
 *      depend on their own indices (the exponentials), into local arrays;
 *   3b. per key: the rolled terms (O's row: a vectorized loop over it). */
static int key_block(fctx *c, const jiter *J, lir_stmt *decls, lir_stmt *body, int ib, int nb)
{
    lir_func *f = c->f;
    int jj = loom_lir_new_var(f, "jj", LIR_I64);
    if (jj < 0)
        return loom__fu_nomem(c);
#define IT() loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, ib), loom_lir_var_ref(f, jj))
    /* 1 */
    lir_stmt *p1 = loom_lir_for(f, jj, loom_lir_int(f, 0), loom_lir_var_ref(f, nb), LIR_LOOP_SERIAL);
    if (loom__fu_app(c, body, p1) || iter_lets(c, J, p1->body, IT()) || computed_at(c, p1->body))
        return c->status ? c->status : loom__fu_nomem(c);
    int sblk[LOOM_MAX_STMTS];
    for (int d = 0; d < c->m; d++) {
        sblk[d] = -1;
        if (c->pp_val[d] < 0)
            continue;
        sblk[d] = loom__fu_local_array(c, "blk", c->prog->stmts[d].lhs, 2000, KEY_BLOCK);
        if (sblk[d] < 0 || loom__fu_app(c, decls, loom_lir_local(f, sblk[d])) ||
            loom__fu_app(c, p1->body, loom_lir_store(f, sblk[d], loom_lir_var_ref(f, jj), loom_lir_var_ref(f, c->pp_val[d]))))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    int cblk = loom__fu_local_array(c, "cand", c->ms->lhs, 2001, KEY_BLOCK);
    lir_expr *mv = tr(c, c->ms->rhs, c->xv);
    if (c->status || !mv || cblk < 0 || loom__fu_app(c, decls, loom_lir_local(f, cblk)) ||
        loom__fu_app(c, p1->body, loom_lir_store(f, cblk, loom_lir_var_ref(f, jj), mv)))
        return c->status ? c->status : loom__fu_nomem(c);
    /* 2 */
    int bm = loom_lir_new_var(f, "blk_max", LIR_F32);
    lir_stmt *p2 = loom_lir_for(f, jj, loom_lir_int(f, 0), loom_lir_var_ref(f, nb), LIR_LOOP_VECTORIZED);
    if (bm < 0 || !p2 || loom__fu_app(c, body, loom_lir_let(f, bm, loom_lir_float(f, -INFINITY))) || loom__fu_app(c, body, p2) ||
        loom__fu_app(c, p2->body, loom_lir_assign(f, bm, loom_lir_bin(f, LIR_MAX, loom_lir_var_ref(f, bm),
                                                           loom_lir_load(f, cblk, loom_lir_var_ref(f, jj))))))
        return c->status ? c->status : loom__fu_nomem(c);
    p2->red_var = bm;
    p2->red_max = 1;
    if (raise_max(c, body, bm))
        return c->status;
    /* 3a, 3b */
    lir_stmt *pa = loom_lir_for(f, jj, loom_lir_int(f, 0), loom_lir_var_ref(f, nb), LIR_LOOP_VECTORIZED);
    lir_stmt *pb = loom_lir_for(f, jj, loom_lir_int(f, 0), loom_lir_var_ref(f, nb), LIR_LOOP_SERIAL);
    if (loom__fu_app(c, body, pa) || loom__fu_app(c, body, pb) || iter_lets(c, J, pa->body, IT()) ||
        iter_lets(c, J, pb->body, IT()))
        return c->status ? c->status : loom__fu_nomem(c);
#undef IT
    for (int d = 0; d < c->m; d++)
        if (sblk[d] >= 0 &&
            (loom__fu_app(c, pa->body, loom_lir_let(f, c->pp_val[d], loom_lir_load(f, sblk[d], loom_lir_var_ref(f, jj)))) ||
             loom__fu_app(c, pb->body, loom_lir_let(f, c->pp_val[d], loom_lir_load(f, sblk[d], loom_lir_var_ref(f, jj))))))
            return c->status;
    lir_stmt *hoist = loom_lir_seq(f), *loads = loom_lir_seq(f);
    if (loom__fu_app(c, pa->body, hoist) || loom__fu_app(c, pb->body, loads))
        return c->status;
    c->nhoist = 0;
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        const loom_stmt *rs = &c->prog->stmts[R->s];
        lir_expr *lidx;
        lir_stmt *in = loom__fu_slice_loops(c, R, pb->body, &lidx);
        if (!in)
            return c->status ? c->status : loom__fu_nomem(c);
        c->cur = R;
        lir_expr *term = tr_hoist(c, rs->rhs, R->vm, hoist);
        c->cur = NULL;
        if (c->status || !term)
            return c->status ? c->status : loom__fu_nomem(c);
        if (loom__fu_app(c, in, loom__fu_acc_set(c, R, lidx, loom__fu_red_combine(c, rs->op, loom__fu_acc_ref(c, R, lidx), term))))
            return c->status;
    }
    for (int k = 0; k < c->nhoist; k++) { /* 3a's values handed to 3b through local arrays */
        int hb = loom__fu_local_array(c, "hblk", c->ms->lhs, 2100 + k, KEY_BLOCK);
        int h = c->hoist_var[k];
        if (hb < 0 || loom__fu_app(c, decls, loom_lir_local(f, hb)) ||
            loom__fu_app(c, pa->body, loom_lir_store(f, hb, loom_lir_var_ref(f, jj), loom_lir_var_ref(f, h))) ||
            loom__fu_app(c, loads, loom_lir_let(f, h, loom_lir_load(f, hb, loom_lir_var_ref(f, jj)))))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    return 0;
}

/* The blocked loop over [clo, chi) of J's iteration variable, into seq. */
static int blocked_loop(fctx *c, const jiter *J, lir_stmt *seq, lir_expr *clo, lir_expr *chi)
{
    lir_func *f = c->f;
    int ib = loom_lir_new_var(f, "jb", LIR_I64), hi = loom_lir_new_var(f, "jb_end", LIR_I64), nb = loom_lir_new_var(f, "nb", LIR_I64);
    lir_stmt *decls = loom_lir_seq(f);
    if (ib < 0 || hi < 0 || nb < 0 || loom__fu_app(c, seq, decls) || loom__fu_app(c, seq, loom_lir_let(f, ib, clo)) ||
        loom__fu_app(c, seq, loom_lir_let(f, hi, chi)))
        return c->status ? c->status : loom__fu_nomem(c);
    lir_stmt *w = loom_lir_while(f, loom_lir_bin(f, LIR_LT, loom_lir_var_ref(f, ib), loom_lir_var_ref(f, hi)));
    if (loom__fu_app(c, seq, w) ||
        loom__fu_app(c, w->body, loom_lir_let(f, nb, loom_lir_bin(f, LIR_MIN, loom_lir_int(f, KEY_BLOCK),
                                                        loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, hi), loom_lir_var_ref(f, ib))))) ||
        key_block(c, J, decls, w->body, ib, nb) ||
        loom__fu_app(c, w->body, loom_lir_assign(f, ib, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, ib), loom_lir_int(f, KEY_BLOCK)))))
        return c->status ? c->status : loom__fu_nomem(c);
    return 0;
}

/* The loop over j (one chunk of it under split-K), into seq. */
int loom__fu_j_loop(fctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    lir_expr *clo, *chi;
    jiter J = {ITER_DENSE, -1, -1, -1};
    if (c->root < 0) {
        if (loom__fu_chunk_bounds(c, seq, loom_lir_int(f, 0), loom_lir_int(f, loom_program_var_extent(c->prog, c->jvar)), &clo, &chi))
            return c->status;
        return blocked_loop(c, &J, seq, clo, chi);
    }
    const loom_format *F = &c->prog->tensors[c->root].format;
    lir_expr *i = loom_lir_var_ref(f, c->xv[c->var0]);
    J.pb = loom_lir_buffer_get(f, LIR_BUF_POS, c->root, 1);
    c->posv = loom_lir_new_var(f, "pj", LIR_I64);
    if (F->level[1] == LOOM_LEVEL_COMPRESSED) {
        J.mode = ITER_COMPRESSED;
        J.cb = loom_lir_buffer_get(f, LIR_BUF_CRD, c->root, 1);
        if (loom__fu_chunk_bounds(c, seq, loom_lir_load(f, J.pb, i), loom_lir_load(f, J.pb, loom_lir_bin(f, LIR_ADD, i, loom_lir_int(f, 1))),
                                  &clo, &chi))
            return c->status;
        return blocked_loop(c, &J, seq, clo, chi);
    }
    /* range: causal [0, min(i+1, n)), band [max(0, i-w), min(n, i+w+1)) */
    J.mode = ITER_RANGE;
    lir_expr *n = loom_lir_dim(f, c->root, F->mode[1]);
    int lo = loom_lir_new_var(f, "jlo", LIR_I64), hi = loom_lir_new_var(f, "jhi", LIR_I64);
    lir_expr *loe, *hie;
    if (F->kind == LOOM_FORMAT_CAUSAL) {
        loe = loom_lir_int(f, 0);
        hie = loom_lir_bin(f, LIR_MIN, loom_lir_bin(f, LIR_ADD, i, loom_lir_int(f, 1)), n);
    } else {
        loe = loom_lir_bin(f, LIR_MAX, loom_lir_int(f, 0), loom_lir_bin(f, LIR_SUB, i, loom_lir_int(f, F->band_width)));
        hie = loom_lir_bin(f, LIR_MIN, n, loom_lir_bin(f, LIR_ADD, loom_lir_var_ref(f, c->xv[c->var0]), loom_lir_int(f, F->band_width + 1)));
    }
    J.lo = lo;
    if (loom__fu_app(c, seq, loom_lir_let(f, lo, loe)) || loom__fu_app(c, seq, loom_lir_let(f, hi, hie)) ||
        loom__fu_chunk_bounds(c, seq, loom_lir_var_ref(f, lo), loom_lir_var_ref(f, hi), &clo, &chi))
        return c->status;
    return blocked_loop(c, &J, seq, clo, chi);
}
