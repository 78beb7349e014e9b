/* Lowering of fused reduction chains (lower_fusion.h): a max= reduction m
 * (the source) with the blocks rolled into its reduction loop
 * (RollingUpdate) and the blocks computed at that loop (ComputeAt), as one
 * pass over the reduced index -- FlashAttention's online softmax (Dao et
 * al. 2022, algorithm 1; Neptune's rolling update, Zhao et al. 2025, 4.1):
 *
 *   for the free loops of m (their kinds kept):
 *     acc_m = -inf; acc_r = identity (a scalar, or a local array over r's
 *     own free indices, e.g. O's row)
 *     for j over the reduced index (dense, causal/band range, or the
 *       positions of a compressed level):
 *       blocks computed at the loop: their value at (row, j), a local
 *       v = m's operand
 *       if v > acc_m: acc_r *= exp(a_r * (v - acc_m)) (skipped while acc_m
 *         is -inf: acc_r is still its identity); acc_m = v
 *       acc_r (+|max)= r's operand without its deferred divisions
 *     m = acc_m; r = acc_r / (each deferred divisor's acc, where it is not 0)
 *
 * The j loop runs in blocks of 16 keys (lower_fusion_keys.c): the block's
 * scores first, then one max update and rescale per block (lazily, only
 * when the max grows, as FlashAttention-2 does per tile), the block's
 * exponentials in one vectorized loop, then the rolled terms; a row costs
 * one exp per score plus one per block whose max is higher.
 * Sub-expressions of r's operand that do not depend on r's own free indices
 * are computed once per j, outside the loop over those indices. */
#include "lower_fusion.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_fusion_internal.h"

#define unsupported loom__fu_unsupported
#define def_of loom__fu_def_of
#define inlined loom__fu_inlined
#define values_buffer loom__fu_values_buffer
#define rolled_of loom__fu_rolled_of
#define dense_index loom__fu_dense_index

/* r's vars that read m (through inlined blocks) -> m's vars. */
static void map_to_m(fctx *c, int e, const int *sub, int *rvm, int depth)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (depth > 64 || E->kind == LOOM_EXPR_CONST)
        return;
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (E->tensor == c->ms->lhs) {
            for (int d = 0; d < E->nidx; d++)
                if (sub[E->idx[d]] >= 0)
                    rvm[sub[E->idx[d]]] = c->ms->lhs_idx[d];
        } else if (inlined(c, E->tensor)) {
            const loom_stmt *ps = &c->prog->stmts[def_of(c, E->tensor)];
            int sub2[MAXV];
            memcpy(sub2, sub, sizeof sub2);
            for (int d = 0; d < E->nidx; d++)
                sub2[ps->lhs_idx[d]] = sub[E->idx[d]];
            map_to_m(c, ps->rhs, sub2, rvm, depth + 1);
        }
        return;
    }
    for (int k = 0; k < E->nargs; k++)
        map_to_m(c, E->args[k], sub, rvm, depth + 1);
}

/* The mask driving j: sparse accesses in m's operand and in the blocks
 * computed at the loop, mapped to m's variables. */
static int find_mask(fctx *c, int e, const int *sub, int depth)
{
    const loom_expr *E = &c->prog->exprs[e];
    if (depth > 64 || E->kind == LOOM_EXPR_CONST)
        return 0;
    if (E->kind == LOOM_EXPR_ACCESS) {
        int t = E->tensor, d = def_of(c, t);
        const loom_tensor *T = &c->prog->tensors[t];
        if (d >= 0 && d != c->m && (inlined(c, t) || c->pp_val[d] == -2)) {
            const loom_stmt *ps = &c->prog->stmts[d];
            int sub2[MAXV];
            for (int v = 0; v < MAXV; v++)
                sub2[v] = -1;
            for (int k = 0; k < E->nidx; k++)
                sub2[ps->lhs_idx[k]] = sub[E->idx[k]];
            if (find_mask(c, ps->rhs, sub2, depth + 1))
                return c->status;
        }
        if (!loom_tensor_is_sparse(c->prog, t))
            return 0;
        int root = T->pattern_of >= 0 ? T->pattern_of : t;
        const loom_format *F = &c->prog->tensors[root].format;
        int v0 = sub[E->idx[T->format.mode[0]]], v1 = T->format.nlevels == 2 ? sub[E->idx[T->format.mode[1]]] : -1;
        if (F->nlevels != 2 || F->level[0] != LOOM_LEVEL_DENSE || F->level[1] == LOOM_LEVEL_DENSE || v1 != c->jvar ||
            v0 < 0 || c->prog->vars[v0].reduced)
            return unsupported(c, "sparse %s must be a (dense, compressed|range) mask over (a row index of %s, its "
                                  "reduced index)",
                               T->name, c->prog->tensors[c->ms->lhs].name);
        if (c->root >= 0 && (c->root != root || c->var0 != v0))
            return unsupported(c, "the loop would merge two sparse patterns (%s and %s)",
                               c->prog->tensors[c->root].name, c->prog->tensors[root].name);
        c->root = root;
        c->var0 = v0;
        return 0;
    }
    for (int k = 0; k < E->nargs; k++)
        if (find_mask(c, E->args[k], sub, depth + 1))
            return c->status;
    return 0;
}

/* Set up rolled block r: rule, variable map, slice. */
static int setup_rolled(fctx *c, int s, rolled *R)
{
    const loom_program *prog = c->prog;
    const loom_stmt *rs = &prog->stmts[s];
    R->s = s;
    R->buf = -1;
    if (loom_rolling_correction(c->sch, s, c->m, &R->rule, c->err))
        return c->status = LOOM_ERR_SEMANTIC;
    if (loom_tensor_is_sparse(prog, rs->lhs))
        return unsupported(c, "rolled block %s has a sparse output", prog->tensors[rs->lhs].name);
    int sub[MAXV], rvm[MAXV];
    for (int v = 0; v < MAXV; v++) {
        sub[v] = v;
        rvm[v] = -1;
        R->vm[v] = -1;
    }
    map_to_m(c, rs->rhs, sub, rvm, 0);
    rvm[rs->vars[rs->nfree]] = c->jvar;
    int covered[MAXV] = {0};
    R->nslice = 1;
    for (int k = 0; k < rs->nvars; k++) {
        int v = rs->vars[k];
        if (rvm[v] >= 0) {
            R->vm[v] = c->xv[rvm[v]];
            covered[rvm[v]] = 1;
        } else {
            if (R->nextra == LOOM_MAX_ORDER)
                return unsupported(c, "rolled block %s has too many own indices", prog->tensors[rs->lhs].name);
            R->extra[R->nextra] = v;
            R->ext[R->nextra] = loom_program_var_extent(prog, v);
            R->nslice *= R->ext[R->nextra++];
        }
    }
    for (int k = 0; k < c->ms->nvars; k++)
        if (!covered[c->ms->vars[k]])
            return unsupported(c, "rolled block %s does not index %s's %s %s", prog->tensors[rs->lhs].name,
                               prog->tensors[c->ms->lhs].name, k < c->ms->nfree ? "row index" : "reduced index",
                               prog->vars[c->ms->vars[k]].name);
    if (R->nslice > MAX_SLICE)
        return unsupported(c, "rolled block %s keeps %lld partials per row, more than %d",
                           prog->tensors[rs->lhs].name, (long long)R->nslice, MAX_SLICE);
    for (int k = 0; k < R->rule.ndiv; k++) {
        const rolled *D = rolled_of(c, R->rule.div[k]);
        if (!D || D->nslice != 1 || D->rule.ndiv)
            return unsupported(c, "deferred divisor %s of %s must be rolled before it, one value per row, without "
                                  "deferred divisions of its own",
                               prog->tensors[prog->stmts[R->rule.div[k]].lhs].name, prog->tensors[rs->lhs].name);
    }
    return 0;
}

/* After the j loop: m's value and the rolled blocks', deferred divisions
 * applied. */
static int finish_row(fctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    const loom_program *prog = c->prog;
    int loc[LOOM_MAX_ORDER];
    for (int d = 0; d < prog->tensors[c->ms->lhs].order; d++)
        loc[d] = c->xv[c->ms->lhs_idx[d]];
    if (loom__fu_app(c, seq, loom_lir_store(f, values_buffer(c, c->ms->lhs), dense_index(c, c->ms->lhs, loc),
                              loom_lir_var_ref(f, c->accm))))
        return c->status;
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        const loom_stmt *rs = &prog->stmts[R->s];
        lir_expr *lidx;
        lir_stmt *in = loom__fu_slice_loops(c, R, seq, &lidx);
        if (!in)
            return c->status ? c->status : loom__fu_nomem(c);
        int t = loom_lir_new_var(f, "fin", LIR_F32);
        if (t < 0 || loom__fu_app(c, in, loom_lir_let(f, t, loom__fu_acc_ref(c, R, lidx))))
            return c->status ? c->status : loom__fu_nomem(c);
        for (int q = 0; q < R->rule.ndiv; q++) {
            const rolled *D = rolled_of(c, R->rule.div[q]);
            lir_stmt *nz = loom_lir_if(f, loom_lir_bin(f, LIR_NE, loom_lir_var_ref(f, D->acc), loom_lir_float(f, 0.0)));
            if (loom__fu_app(c, in, nz) ||
                loom__fu_app(c, nz->body, loom_lir_assign(f, t, loom_lir_bin(f, LIR_DIV, loom_lir_var_ref(f, t), loom_lir_var_ref(f, D->acc)))))
                return c->status;
        }
        for (int d = 0; d < prog->tensors[rs->lhs].order; d++)
            loc[d] = R->vm[rs->lhs_idx[d]];
        if (loom__fu_app(c, in, loom_lir_store(f, values_buffer(c, rs->lhs), dense_index(c, rs->lhs, loc), loom_lir_var_ref(f, t))))
            return c->status;
    }
    return 0;
}

static int lower_chain(fctx *c, int *emitted)
{
    lir_func *f = c->f;
    const loom_program *prog = c->prog;
    const loom_stage *M = &c->sch->stages[c->m];
    const loom_stmt *ms = c->ms;
    if (loom_tensor_is_sparse(prog, ms->lhs))
        return unsupported(c, "%s has a sparse output", prog->tensors[ms->lhs].name);
    /* m's loops: its free loops (unsplit), then the reduced index */
    for (int d = 0; d < M->nloops; d++) {
        const loom_iter *I = &M->iters[M->loops[d].iter];
        int ok = I->kind == LOOM_ITER_VAR && (d < M->nloops - 1) == !prog->vars[I->var].reduced;
        if (I->kind == LOOM_ITER_FUSE && d < M->nloops - 1) {
            const loom_iter *A = &M->iters[I->a], *B = &M->iters[I->b];
            ok = A->kind == LOOM_ITER_VAR && B->kind == LOOM_ITER_VAR && !prog->vars[A->var].reduced &&
                 !prog->vars[B->var].reduced;
        }
        if (!ok)
            return unsupported(c, "%s's loops must be its unsplit (or pairwise fused) row loops, then its reduced "
                                  "index innermost",
                               prog->tensors[ms->lhs].name);
    }
    c->jvar = ms->vars[ms->nfree];
    for (int v = 0; v < MAXV; v++)
        c->xv[v] = -1;
    for (int k = 0; k < ms->nvars; k++) {
        int v = ms->vars[k];
        c->xv[v] = loom_lir_new_var(f, prog->vars[v].name, LIR_I64);
    }
    /* blocks computed at the loop (-2: to be computed) */
    for (int d = 0; d < LOOM_MAX_STMTS; d++)
        c->pp_val[d] = -1;
    for (int d = 0; d < c->sch->nstages; d++) {
        const loom_stage *D = &c->sch->stages[d];
        if (D->compute_at == LOOM_AT_LOOP && !D->at_after && D->at_stage == c->m) {
            if (d > c->m || D->at_iter != M->loops[M->nloops - 1].iter)
                return unsupported(c, "%s is computed at a loop of %s other than the rolled reduction loop",
                                   prog->tensors[prog->stmts[d].lhs].name, prog->tensors[ms->lhs].name);
            c->pp_val[d] = -2;
            emitted[d] = 1;
        }
    }
    c->root = c->var0 = -1;
    int sub[MAXV];
    for (int v = 0; v < MAXV; v++)
        sub[v] = v;
    if (find_mask(c, ms->rhs, sub, 0))
        return c->status;
    c->nr = 0;
    for (int q = 0; q < c->sch->nstages; q++)
        if (c->sch->stages[q].rolling && c->sch->stages[q].at_stage == c->m) {
            if (setup_rolled(c, q, &c->r[c->nr]))
                return c->status;
            c->nr++;
            emitted[q] = 1;
        }
    char buf[360];
    snprintf(buf, sizeof buf, "line %d: %s  (rolling update: %d block%s fused into its loop)", ms->line, ms->text,
             c->nr, c->nr == 1 ? "" : "s");
    if (loom__fu_app(c, f->body, loom_lir_comment(f, buf)))
        return c->status;
    lir_stmt *seq = f->body;
    int tiled;
    if (loom__fu_tiled(c, &seq, &tiled))
        return c->status;
    if (tiled)
        return 0;
    if (loom__fu_open_rows(c, &seq, M->nloops - 1))
        return c->status;
    if (!M->splitk) {
        if (loom__fu_declare_accs(c, seq, 1000) || loom__fu_j_loop(c, seq) || finish_row(c, seq))
            return c->status;
        return 0;
    }
    return loom__fu_split_k_row(c, seq, M->loops[M->nloops - 1].kind == LOOM_LOOP_PARALLEL) || finish_row(c, seq) ? c->status : 0;
}

loom_status loom__lower_rolling(const loom_schedule *sch, const loom_limits *lim, lir_func *f, int s, int *emitted,
                                loom_error *err)
{
    fctx *c = calloc(1, sizeof *c); /* large: off the stack */
    if (!c)
        return loom_error_set(err, LOOM_ERR_NOMEM, sch->prog->path, 0, 0, "out of memory while lowering");
    c->sch = sch;
    c->prog = sch->prog;
    c->f = f;
    c->err = err;
    c->m = s;
    c->ms = &sch->prog->stmts[s];
    c->chunk = -1;
    /* the target's vector shape: annotated on the rolled loop by the module */
    c->vl = *lim; /* the target's (loom_lower_for) */
    const loom_stage *M = &sch->stages[s];
    if (M->nloops > 0) {
        const loom_loop *J = &M->loops[M->nloops - 1];
        for (int k = 0; k < J->nann; k++) {
            if (!strcmp(J->ann[k].key, LOOM_ANN_VECTOR_LANES) && J->ann[k].value >= 1 && J->ann[k].value <= 1024)
                c->vl.vector_lanes = (int)J->ann[k].value;
            if (!strcmp(J->ann[k].key, LOOM_ANN_VECTOR_REGISTERS) && J->ann[k].value >= 4 && J->ann[k].value <= 1024)
                c->vl.vector_registers = (int)J->ann[k].value;
        }
    }
    c->dot_lanes = 2;
    while (c->dot_lanes * 2 <= c->vl.vector_lanes)
        c->dot_lanes *= 2;
    emitted[s] = 1;
    lower_chain(c, emitted);
    loom_status st = c->status;
    free(c);
    return st;
}
