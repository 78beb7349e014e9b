/* Loop transformations of the schedule language (schedule.h): Split, Fuse,
 * Reorder, PosSplit, loop kinds, Annotate. */
#include <stdio.h>
#include <string.h>

#include "query.h"
#include "schedule_internal.h"
#include "../ir/domain.h"

/* ---- loop transformations -------------------------------------------- */

static int var_has_range(const loom_schedule *sch, int stage, int v);

/* Blocks placed inside a loop stay inside it when the loop is split or
 * fused (as in TVM, where compute_at moved them into its body): they follow
 * the loop that now binds the same indices innermost. */
static void follow_location(loom_schedule *sch, int stage, int old_iter, int new_iter)
{
    for (int q = 0; q < sch->nstages; q++) {
        loom_stage *Q = &sch->stages[q];
        int placed_here = Q->compute_at == LOOM_AT_LOOP && Q->at_stage == stage;
        for (int f = 0; f < loom_stage_field_count(); f++) {
            const loom_stage_field *F = loom_stage_field_at(f);
            int *x = loom_stage_field_ptr(Q, F);
            if (*x == old_iter && ((F->kind == LOOM_FIELD_OWN_ITER && q == stage) ||
                                   (F->kind == LOOM_FIELD_AT_ITER && placed_here)))
                *x = new_iter;
        }
    }
}

loom_status loom_split(loom_schedule *sch, int loop_rv, int n, const int *factor_rvs, const int64_t *factors,
                       int *out_loop_rvs, loom_error *err)
{
    int s, pos;
    loom_status st = loom__loop_pos(sch, loop_rv, &s, &pos, err);
    if (st)
        return st;
    loom_stage *S = &sch->stages[s];
    int iter = S->loops[pos].iter;
    char nm[64];
    loom_iter_name(sch, s, iter, nm, sizeof nm);
    if (n < 2 || n > LOOM_MAX_INST_IO - 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "split of loop %s into %d parts: need 2..%d", nm, n,
                              LOOM_MAX_INST_IO - 1);
    const loom_iter *it = &S->iters[iter];
    if (it->kind == LOOM_ITER_VAR && loom_var_is_compressed(sch, s, it->var))
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "split-sparse-coordinate: loop %s iterates a compressed level's coordinates; split its "
                              "position space with PosSplit instead",
                              nm);
    if (it->kind == LOOM_ITER_POS)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "split-position-chunk: loop %s is a tile of a position split; choose PosSplit's chunk "
                              "size instead (splitting a position tile again is not supported)",
                              nm);
    int64_t E = loom_iter_extent(sch, s, iter);
    if (E <= 0)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "split-dynamic-extent: loop %s has a data-dependent extent; split a loop with a static "
                              "extent",
                              nm);
    if (S->niters + n > LOOM_MAX_ITERS || S->nloops + n - 1 > LOOM_MAX_LOOPS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many loops in block %s",
                              sch->prog->tensors[sch->prog->stmts[s].lhs].name);
    int64_t f[LOOM_MAX_INST_IO];
    int inferred = -1;
    for (int k = 0; k < n; k++) {
        if (factor_rvs) {
            st = loom__expr_value(sch, factor_rvs[k], &f[k], err);
            if (st)
                return st;
        } else
            f[k] = factors[k];
        if (f[k] <= 0) {
            if (inferred >= 0)
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                      "split of loop %s: only one factor may be inferred (factors %d and %d are not "
                                      "positive)",
                                      nm, inferred, k);
            inferred = k;
            f[k] = 0;
        }
    }
    for (int k = 0; k < n; k++)
        if (f[k] > E)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "split-factor-too-large: factor %lld of loop %s exceeds its extent %lld", (long long)f[k],
                                  nm, (long long)E);
    if (inferred < 0) {
        int64_t prod = 1; /* each factor <= E: stop before it can overflow */
        for (int k = 0; k < n && prod < E; k++)
            prod *= f[k];
        if (prod < E)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "split-too-small: factors of loop %s multiply to %lld < its extent %lld", nm,
                                  (long long)prod, (long long)E);
    }
    int first = S->niters;
    for (int k = 0; k < n; k++) {
        loom_iter *c = &S->iters[S->niters++];
        memset(c, 0, sizeof *c);
        c->kind = LOOM_ITER_SPLIT;
        c->var = loom_iter_var(S, iter);
        c->parent = iter;
        c->a = c->b = c->tensor = -1;
        c->index = k;
        c->nparts = n;
        c->factor = f[k];
        c->first_child = c->fused_into = -1;
    }
    S->iters[iter].first_child = first;
    follow_location(sch, s, iter, first + n - 1);
    memmove(&S->loops[pos + n], &S->loops[pos + 1], sizeof(loom_loop) * (size_t)(S->nloops - pos - 1));
    for (int k = 0; k < n; k++) {
        memset(&S->loops[pos + k], 0, sizeof(loom_loop));
        S->loops[pos + k].iter = first + k;
    }
    S->nloops += n - 1;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = loop_rv;
    for (int k = 0; k < n; k++) {
        if (factor_rvs)
            inst.inputs[inst.ninputs++] = factor_rvs[k];
        else
            inst.attrs[inst.nattrs++] = factors[k];
        out_loop_rvs[k] = loom__new_rv(sch, LOOM_RV_LOOP, s, first + k, 0, err);
        if (out_loop_rvs[k] < 0)
            return LOOM_ERR_INVALID;
        inst.outputs[inst.noutputs++] = out_loop_rvs[k];
    }
    loom_inst_record(sch, LOOM_INST_SPLIT, &inst);
    return LOOM_OK;
}

static int range_at(const loom_program *prog, int t, const int *idx, int v)
{
    const loom_tensor *T = &prog->tensors[t];
    for (int l = 0; l < T->format.nlevels; l++)
        if (T->format.level[l] == LOOM_LEVEL_RANGE && idx[T->format.mode[l]] == v)
            return 1;
    return 0;
}

static int expr_range_at(const loom_program *prog, int e, int v)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return range_at(prog, E->tensor, E->idx, v);
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    for (int k = 0; k < E->nargs; k++)
        if (expr_range_at(prog, E->args[k], v))
            return 1;
    return 0;
}

static int var_has_range(const loom_schedule *sch, int stage, int v)
{
    const loom_stmt *st = &sch->prog->stmts[stage];
    return expr_range_at(sch->prog, st->rhs, v) || range_at(sch->prog, st->lhs, st->lhs_idx, v);
}

loom_status loom_fuse(loom_schedule *sch, const int *loop_rvs, int n, int *out_loop_rv, loom_error *err)
{
    if (n < 2 || n > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "fuse needs 2..%d loops, got %d", LOOM_MAX_INST_IO, n);
    int s0 = -1, pos0 = -1;
    for (int k = 0; k < n; k++) {
        int s, pos;
        loom_status st = loom__loop_pos(sch, loop_rvs[k], &s, &pos, err);
        if (st)
            return st;
        if (k == 0) {
            s0 = s;
            pos0 = pos;
        } else if (s != s0 || pos != pos0 + k)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "fuse-not-adjacent: fused loops must be adjacent, outer to inner, in one block");
    }
    loom_stage *S = &sch->stages[s0];
    for (int k = 0; k < n; k++) {
        int iter = S->loops[pos0 + k].iter;
        char nm[64];
        loom_iter_name(sch, s0, iter, nm, sizeof nm);
        int v = loom_iter_var(S, iter);
        if (S->iters[iter].kind == LOOM_ITER_POS || (v >= 0 && (loom_var_is_compressed(sch, s0, v) ||
                                                                 var_has_range(sch, s0, v))))
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "fuse-sparse: loop %s iterates a sparse level (compressed or masked); only dense "
                                  "loops can be fused",
                                  nm);
        if (loom_iter_extent(sch, s0, iter) <= 0)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "fuse-dynamic-extent: loop %s has a data-dependent extent", nm);
    }
    if (S->niters + n - 1 > LOOM_MAX_ITERS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many loops in block %s",
                              sch->prog->tensors[sch->prog->stmts[s0].lhs].name);
    int acc = S->loops[pos0].iter;
    for (int k = 1; k < n; k++) {
        int b = S->loops[pos0 + k].iter;
        loom_iter *f = &S->iters[S->niters];
        memset(f, 0, sizeof *f);
        f->kind = LOOM_ITER_FUSE;
        f->var = f->parent = f->tensor = -1;
        f->a = acc;
        f->b = b;
        f->first_child = f->fused_into = -1;
        S->iters[acc].fused_into = S->niters;
        S->iters[b].fused_into = S->niters;
        follow_location(sch, s0, acc, S->niters);
        follow_location(sch, s0, b, S->niters);
        acc = S->niters++;
    }
    memset(&S->loops[pos0], 0, sizeof(loom_loop));
    S->loops[pos0].iter = acc;
    memmove(&S->loops[pos0 + 1], &S->loops[pos0 + n], sizeof(loom_loop) * (size_t)(S->nloops - pos0 - n));
    S->nloops -= n - 1;
    int rv = loom__new_rv(sch, LOOM_RV_LOOP, s0, acc, 0, err);
    if (rv < 0)
        return LOOM_ERR_INVALID;
    *out_loop_rv = rv;
    loom_inst inst = {0};
    for (int k = 0; k < n; k++)
        inst.inputs[inst.ninputs++] = loop_rvs[k];
    inst.outputs[inst.noutputs++] = rv;
    loom_inst_record(sch, LOOM_INST_FUSE, &inst);
    return LOOM_OK;
}

loom_status loom_reorder(loom_schedule *sch, const int *loop_rvs, int n, loom_error *err)
{
    if (n < 1 || n > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "reorder needs 1..%d loops, got %d", LOOM_MAX_INST_IO,
                              n);
    int s0 = -1, pos[LOOM_MAX_LOOPS];
    for (int k = 0; k < n; k++) {
        int s;
        loom_status st = loom__loop_pos(sch, loop_rvs[k], &s, &pos[k], err);
        if (st)
            return st;
        if (k == 0)
            s0 = s;
        else if (s != s0)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "reorder: loops of different blocks");
        for (int j = 0; j < k; j++)
            if (pos[j] == pos[k])
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "reorder: loop given twice");
    }
    loom_stage *S = &sch->stages[s0];
    int slots[LOOM_MAX_LOOPS];
    memcpy(slots, pos, sizeof(int) * (size_t)n);
    for (int a = 1; a < n; a++) /* insertion sort of the occupied positions */
        for (int b = a; b > 0 && slots[b - 1] > slots[b]; b--) {
            int t = slots[b];
            slots[b] = slots[b - 1];
            slots[b - 1] = t;
        }
    loom_loop moved[LOOM_MAX_LOOPS];
    for (int k = 0; k < n; k++)
        moved[k] = S->loops[pos[k]];
    for (int k = 0; k < n; k++)
        S->loops[slots[k]] = moved[k];
    loom_inst inst = {0};
    for (int k = 0; k < n && k < LOOM_MAX_INST_IO; k++)
        inst.inputs[inst.ninputs++] = loop_rvs[k];
    loom_inst_record(sch, LOOM_INST_REORDER, &inst);
    return LOOM_OK;
}

loom_status loom_pos_split(loom_schedule *sch, int loop_rv, const char *tensor, int64_t factor, int factor_rv,
                           int *out_loop_rvs, loom_error *err)
{
    int s, pos;
    loom_status st = loom__loop_pos(sch, loop_rv, &s, &pos, err);
    if (st)
        return st;
    loom_stage *S = &sch->stages[s];
    int iter = S->loops[pos].iter;
    char nm[64];
    loom_iter_name(sch, s, iter, nm, sizeof nm);
    if (factor_rv >= 0) {
        st = loom__expr_value(sch, factor_rv, &factor, err);
        if (st)
            return st;
    }
    if (factor < 0) /* 0: the whole row (one chunk per segment, issue 13) */
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "pos split of loop %s: factor %lld must be >= 1 (or 0: the whole row)", nm,
                              (long long)factor);
    const loom_program *prog = sch->prog;
    int t = loom_program_find_tensor(prog, tensor);
    if (t < 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "pos split of loop %s: no tensor %s", nm, tensor);
    if (S->iters[iter].kind != LOOM_ITER_VAR)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "pos-on-split-loop: loop %s is already split; PosSplit applies to the loop of an index",
                              nm);
    int v = S->iters[iter].var;
    /* the tensor must be read (or written) with a compressed level at v */
    const loom_stmt *stm = &prog->stmts[s];
    int found = 0;
    int roots[LOOM_MAX_EXPRS / 4], nroots = 0;
    for (int e = 0; e < prog->nexprs; e++) {
        const loom_expr *E = &prog->exprs[e];
        if (E->kind != LOOM_EXPR_ACCESS || E->nidx == 0 || prog->vars[E->idx[0]].stmt != s)
            continue;
        if (!loom__access_compressed_at(prog, E->tensor, E->idx, v))
            continue;
        int root = prog->tensors[E->tensor].pattern_of >= 0 ? prog->tensors[E->tensor].pattern_of : E->tensor;
        int seen = 0;
        for (int k = 0; k < nroots; k++)
            seen |= roots[k] == root;
        if (!seen && nroots < (int)(sizeof roots / sizeof *roots))
            roots[nroots++] = root;
        if (E->tensor == t)
            found = 1;
    }
    if (loom__access_compressed_at(prog, stm->lhs, stm->lhs_idx, v) && stm->lhs == t)
        found = 1;
    if (!found)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "pos-on-dense-level: loop %s does not iterate a compressed level of %s; PosSplit needs "
                              "the loop of an index that %s stores compressed",
                              nm, tensor, tensor);
    if (nroots > 1)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "pos-split-coiteration: loop %s merges %d sparse patterns; the position space of one "
                              "of them does not cover the others",
                              nm, nroots);
    if (loom__lhs_assembled_at(prog, s, v))
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "pos-split-coiteration: loop %s merges %s's pattern with %s's assembled output "
                              "pattern; the position space of one does not cover the merge",
                              nm, tensor, prog->tensors[stm->lhs].name);
    if (loom__stmt_is_union(prog, s))
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "pos-split-coiteration: loop %s is merged as a union (a sum with a sparse operand, docs "
                              "\"Sparse semantics\"); the position space of %s does not cover it",
                              nm, tensor);
    if (S->niters + 2 > LOOM_MAX_ITERS || S->nloops + 1 > LOOM_MAX_LOOPS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many loops in block %s",
                              prog->tensors[stm->lhs].name);
    int first = S->niters;
    for (int k = 0; k < 2; k++) {
        loom_iter *c = &S->iters[S->niters++];
        memset(c, 0, sizeof *c);
        c->kind = LOOM_ITER_POS;
        c->var = v;
        c->parent = iter;
        c->a = c->b = -1;
        c->tensor = t;
        c->index = k;
        c->nparts = 2;
        c->factor = k == 0 ? 0 : factor;
        c->first_child = c->fused_into = -1;
    }
    S->iters[iter].first_child = first;
    follow_location(sch, s, iter, first + 1);
    memmove(&S->loops[pos + 2], &S->loops[pos + 1], sizeof(loom_loop) * (size_t)(S->nloops - pos - 1));
    memset(&S->loops[pos], 0, 2 * sizeof(loom_loop));
    S->loops[pos].iter = first;
    S->loops[pos + 1].iter = first + 1;
    S->nloops++;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = loop_rv;
    if (factor_rv >= 0)
        inst.inputs[inst.ninputs++] = factor_rv;
    else
        inst.attrs[inst.nattrs++] = factor;
    snprintf(inst.sattr, sizeof inst.sattr, "%s", tensor);
    for (int k = 0; k < 2; k++) {
        out_loop_rvs[k] = loom__new_rv(sch, LOOM_RV_LOOP, s, first + k, 0, err);
        if (out_loop_rvs[k] < 0)
            return LOOM_ERR_INVALID;
        inst.outputs[inst.noutputs++] = out_loop_rvs[k];
    }
    loom_inst_record(sch, LOOM_INST_POS_SPLIT, &inst);
    return LOOM_OK;
}

static loom_status set_kind(loom_schedule *sch, int loop_rv, loom_loop_kind kind, int unroll, int inst_kind,
                            loom_error *err)
{
    int s, pos;
    loom_status st = loom__loop_pos(sch, loop_rv, &s, &pos, err);
    if (st)
        return st;
    sch->stages[s].loops[pos].kind = kind;
    sch->stages[s].loops[pos].unroll = unroll;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = loop_rv;
    if (kind == LOOM_LOOP_UNROLLED)
        inst.attrs[inst.nattrs++] = unroll;
    loom_inst_record(sch, inst_kind, &inst);
    return LOOM_OK;
}

loom_status loom_parallel(loom_schedule *sch, int loop_rv, loom_error *err)
{
    return set_kind(sch, loop_rv, LOOM_LOOP_PARALLEL, 0, LOOM_INST_PARALLEL, err);
}

loom_status loom_vectorize(loom_schedule *sch, int loop_rv, loom_error *err)
{
    return set_kind(sch, loop_rv, LOOM_LOOP_VECTORIZED, 0, LOOM_INST_VECTORIZE, err);
}

loom_status loom_unroll(loom_schedule *sch, int loop_rv, int factor, loom_error *err)
{
    if (factor < 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "unroll factor %d must be >= 1", factor);
    return set_kind(sch, loop_rv, LOOM_LOOP_UNROLLED, factor, LOOM_INST_UNROLL, err);
}

static loom_status put_ann(loom_annotation *ann, int *nann, const char *key, int64_t value, loom_error *err)
{
    for (int k = 0; k < *nann; k++)
        if (strcmp(ann[k].key, key) == 0) {
            ann[k].value = value;
            return LOOM_OK;
        }
    if (*nann >= LOOM_MAX_ANN)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many annotations (max %d)", LOOM_MAX_ANN);
    snprintf(ann[*nann].key, sizeof ann[*nann].key, "%s", key);
    ann[*nann].value = value;
    (*nann)++;
    return LOOM_OK;
}

loom_status loom_annotate(loom_schedule *sch, int rv, const char *key, int value_rv, int64_t value, loom_error *err)
{
    if (!key || !*key || strlen(key) >= sizeof(((loom_annotation *)0)->key))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "annotation key must be 1..%zu characters",
                              sizeof(((loom_annotation *)0)->key) - 1);
    loom_status st;
    if (value_rv >= 0 && (st = loom__expr_value(sch, value_rv, &value, err)))
        return st;
    if (rv < 0 || rv >= sch->nrvs)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "random variable %d does not exist", rv);
    if (sch->rvs[rv].kind == LOOM_RV_BLOCK) {
        loom_stage *S = &sch->stages[sch->rvs[rv].stage];
        st = put_ann(S->ann, &S->nann, key, value, err);
    } else {
        int s, pos;
        if ((st = loom__loop_pos(sch, rv, &s, &pos, err)))
            return st;
        loom_loop *L = &sch->stages[s].loops[pos];
        st = put_ann(L->ann, &L->nann, key, value, err);
    }
    if (st)
        return st;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = rv;
    if (value_rv >= 0)
        inst.inputs[inst.ninputs++] = value_rv;
    else
        inst.attrs[inst.nattrs++] = value;
    snprintf(inst.sattr, sizeof inst.sattr, "%s", key);
    loom_inst_record(sch, LOOM_INST_ANNOTATE, &inst);
    return LOOM_OK;
}

