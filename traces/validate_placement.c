/* The trace validator's placement rules (validate.h rows compute-at-lost,
 * producer-coverage, compute-at-accumulates, compute-at-race,
 * reverse-coverage, rolling-update, and fusion-group): where a block is
 * computed against the loops of the block it is placed in, rolled into or
 * fused with.  The rule table and the per-loop rules are validate.c. */
#include "validate_impl.h"

#include "../dsl/ir/domain.h"
#include "../dsl/schedule/query.h"

#include <stdio.h>
#include <string.h>

#define derives loom_iter_derives_from

/* A block c rolled into the reduction loop of its source p
 * (RollingUpdate): the loop must still be p's innermost, unsplit loop over
 * its reduced index, p at the root without rfactor or workspace. */
static loom_status check_rolling(const loom_schedule *sch, int c, loom_violation *v, loom_error *err)
{
    const loom_program *prog = sch->prog;
    const loom_stage *C = &sch->stages[c];
    int p = C->at_stage;
    const loom_stage *P = &sch->stages[p];
    const loom_stmt *ps = &prog->stmts[p];
    const char *cn = prog->tensors[prog->stmts[c].lhs].name, *pn = prog->tensors[ps->lhs].name;
    int L = loom_loop_of_iter(P, C->at_iter);
    if (P->compute_at == LOOM_AT_INLINE || L < 0)
        return violate(v, err, "compute-at-lost", c, -1,
                       "block %s is rolled into a loop of block %s that no longer exists; roll it again", cn, pn);
    const loom_iter *I = &P->iters[C->at_iter];
    if (L != P->nloops - 1 || I->kind != LOOM_ITER_VAR || ps->nvars - ps->nfree != 1 ||
        I->var != ps->vars[ps->nfree] || P->compute_at != LOOM_AT_ROOT || P->rfactor_iter >= 0 ||
        P->cache_iter >= 0)
        return violate(v, err, "rolling-update", c, -1,
                       "block %s is rolled into loop %s of block %s, which is no longer %s's innermost unsplit "
                       "reduction loop at the root (without rfactor or workspace)",
                       cn, loom_iter_name(sch, p, C->at_iter, (char[64]){0}, 64), pn, pn);
    loom_rolling_rule rule;
    loom_error e2;
    if (loom_rolling_correction(sch, c, p, &rule, &e2))
        return violate(v, err, "rolling-update", c, -1, "block %s, rolled into block %s's loop, has no correction any more: %s", cn, pn, e2.msg);
    for (int k = 0; k < rule.ndiv; k++)
        if (!sch->stages[rule.div[k]].rolling || sch->stages[rule.div[k]].at_stage != p)
            return violate(v, err, "rolling-update", c, -1, "block %s divides by %s, which is no longer rolled into the same loop", cn,
                           prog->tensors[prog->stmts[rule.div[k]].lhs].name);
    return LOOM_OK;
}

/* Does iter `it` of consumer stage C derive from a variable fixed by its
 * location?  1 yes, 0 no, -1 a fused loop mixing fixed and free ones (as
 * the lowering's iter_fixed). */
static int reverse_iter_fixed(const loom_stage *C, int it, const int *fixed)
{
    const loom_iter *I = &C->iters[it];
    switch (I->kind) {
    case LOOM_ITER_VAR:
    case LOOM_ITER_POS: return fixed[I->var];
    case LOOM_ITER_SPLIT: return reverse_iter_fixed(C, I->parent, fixed);
    case LOOM_ITER_FUSE: {
        int a = reverse_iter_fixed(C, I->a, fixed), b = reverse_iter_fixed(C, I->b, fixed);
        return a == b ? a : -1;
    }
    }
    return 0;
}

/* A consumer c computed at the end of each iteration of loop L of its
 * producer p (ReverseComputeAt). */
static loom_status check_reverse(const loom_schedule *sch, int c, loom_violation *v, loom_error *err)
{
    if (sch->stages[c].rolling)
        return check_rolling(sch, c, v, err);
    const loom_program *prog = sch->prog;
    const loom_stage *C = &sch->stages[c];
    int p = C->at_stage;
    const loom_stage *P = &sch->stages[p];
    const char *cn = prog->tensors[prog->stmts[c].lhs].name, *pn = prog->tensors[prog->stmts[p].lhs].name;
    int L = loom_loop_of_iter(P, C->at_iter);
    if (P->compute_at == LOOM_AT_INLINE || L < 0)
        return violate(v, err, "compute-at-lost", c, -1,
                       "block %s is placed at a loop of block %s that no longer exists; place it again", cn, pn);
    char nm[64], nm2[64];
    loom_iter_name(sch, p, C->at_iter, nm, sizeof nm);
    /* the producer's slice must be complete at the end of the iteration */
    for (int q = 0; q <= L; q++)
        if (loom_iter_reduces(sch, (int)(P - sch->stages), P->loops[q].iter))
            return violate(v, err, "reverse-coverage", c, -1,
                           "block %s is computed at the end of loop %s of block %s, but %s's reduction is not "
                           "complete there (reduction loop %s is outside)",
                           cn, nm, pn, pn, loom_iter_name(sch, p, P->loops[q].iter, nm2, sizeof nm2));
    const loom_stmt *ps = &prog->stmts[p];
    for (int d = 0; d < prog->tensors[ps->lhs].order; d++) {
        int pv = ps->lhs_idx[d], out = 0, in = 0;
        for (int q = 0; q < P->nloops; q++)
            if (loom_iter_var(P, P->loops[q].iter) == pv)
                *(q <= L ? &out : &in) += 1;
        if (out && in)
            return violate(v, err, "reverse-coverage", c, -1,
                           "block %s is computed at the end of loop %s of block %s, which covers only a tile of "
                           "index %s: %s would read a part of %s not computed yet",
                           cn, nm, pn, prog->vars[pv].name, cn, pn);
    }
    /* the consumer must not read what is computed after the producer */
    for (int t = 0; t < prog->ntensors; t++) {
        int def = prog->tensors[t].def_stmt;
        if (def > p && def != c && loom_expr_find_access(prog, prog->stmts[c].rhs, t) >= 0)
            return violate(v, err, "reverse-coverage", c, -1,
                           "block %s, computed inside block %s, reads %s, which is computed after %s", cn, pn,
                           prog->tensors[t].name, pn);
    }
    /* its fixed indices must be its own free ones; parallel loops around
     * must index its slice */
    int e = loom_expr_find_access(prog, prog->stmts[c].rhs, ps->lhs);
    const loom_expr *E = e >= 0 ? &prog->exprs[e] : NULL;
    for (int d = 0; E && d < E->nidx; d++) {
        int pv = ps->lhs_idx[d], bound = 0;
        for (int q = 0; q <= L; q++)
            bound |= loom_iter_var(P, P->loops[q].iter) == pv;
        if (bound && prog->vars[E->idx[d]].reduced)
            return violate(v, err, "reverse-coverage", c, -1,
                           "block %s reduces over %s, which its place inside loop %s of %s fixes: each "
                           "iteration would see one term; place it outside that loop",
                           cn, prog->vars[E->idx[d]].name, nm, pn);
    }
    /* the consumer's variables the location fixes (the lowering binds them
     * once and emits no loop for them: emit_placed) */
    int fixed[LOOM_MAX_VARS] = {0};
    for (int d = 0; E && d < E->nidx; d++) {
        int pv = ps->lhs_idx[d], out = 0, in = 0;
        for (int q = 0; q < P->nloops; q++)
            if (loom_iter_var(P, P->loops[q].iter) == pv)
                *(q <= L ? &out : &in) += 1;
        fixed[E->idx[d]] = out && !in;
    }
    for (int k = 0; k < C->nloops; k++) {
        int fx = reverse_iter_fixed(C, C->loops[k].iter, fixed);
        if (fx < 0 || (fx && C->iters[C->loops[k].iter].kind != LOOM_ITER_VAR))
            return violate(v, err, "reverse-coverage", c, k,
                           "block %s, computed at the end of loop %s of block %s, %s a loop whose index that "
                           "location fixes; the lowering binds a fixed index once and needs it unsplit and unfused",
                           cn, nm, pn, fx < 0 ? "fuses with a loop it iterates" : "splits");
    }
    for (int q = 0; q <= L; q++) {
        if (P->loops[q].kind != LOOM_LOOP_PARALLEL)
            continue;
        int pv = loom_iter_var(P, P->loops[q].iter), ok = 0;
        for (int d = 0; E && d < E->nidx && !ok; d++)
            ok = ps->lhs_idx[d] == pv && !prog->vars[E->idx[d]].reduced;
        if (!ok)
            return violate(v, err, "compute-at-race", c, -1,
                           "block %s is computed inside parallel loop %s of block %s, whose iterations would write "
                           "the same elements of %s",
                           cn, loom_iter_name(sch, p, P->loops[q].iter, nm, sizeof nm), pn, cn);
        for (int k = 0; k < C->nloops; k++) /* a fixed loop is not emitted: its kind does not matter */
            if (C->loops[k].kind == LOOM_LOOP_PARALLEL && !reverse_iter_fixed(C, C->loops[k].iter, fixed))
                return violate(v, err, "nested-parallel", c, k,
                               "block %s is computed inside parallel loop %s of block %s and has a parallel loop "
                               "itself",
                               cn, nm, pn);
    }
    int last_free = -1, first_red = C->nloops;
    for (int q = 0; q < C->nloops; q++) {
        if (loom_iter_reduces(sch, (int)(C - sch->stages), C->loops[q].iter)) {
            if (q < first_red)
                first_red = q;
        } else
            last_free = q;
    }
    if (first_red < last_free)
        return violate(v, err, "compute-at-accumulates", c, first_red,
                       "block %s, placed inside loop %s of block %s, reduces through memory; keep its reductions "
                       "innermost",
                       cn, nm, pn);
    return LOOM_OK;
}

/* A dense block that reduces through memory where it is placed resets and
 * accumulates its whole slice there (runtime/lower/lower_output.c fill_slice):
 * every parallel loop around it must split the slices
 * (loom_placed_slices_split), or two threads reset and add into the same
 * elements (a race the scalar accumulator never had: it writes the same
 * values). */
static loom_status check_slices_split(const loom_schedule *sch, int p, loom_violation *v, loom_error *err)
{
    const loom_program *prog = sch->prog;
    int a, q;
    if (loom_placed_slices_split(sch, p, &a, &q))
        return LOOM_OK;
    char nm[64];
    return violate(v, err, "compute-at-race", p, -1,
                   "block %s reduces through memory, so it resets and accumulates its slice where it is placed, "
                   "inside parallel loop %s of block %s, whose iterations would reset and add into the same "
                   "elements; place it where that loop's index fixes one of its own, or keep its reductions "
                   "innermost",
                   prog->tensors[prog->stmts[p].lhs].name,
                   loom_iter_name(sch, a, sch->stages[a].loops[q].iter, nm, sizeof nm),
                   prog->tensors[prog->stmts[a].lhs].name);
}

/* The placement rules of stage p (placed at a loop). */
loom_status loom__check_placement(const loom_schedule *sch, int p, loom_violation *v, loom_error *err)
{
    if (sch->stages[p].at_after)
        return check_reverse(sch, p, v, err);
    const loom_program *prog = sch->prog;
    const loom_stage *P = &sch->stages[p];
    int c = P->at_stage;
    const loom_stage *C = &sch->stages[c];
    const char *pn = prog->tensors[prog->stmts[p].lhs].name, *cn = prog->tensors[prog->stmts[c].lhs].name;
    int L = loom_loop_of_iter(C, P->at_iter);
    if (C->compute_at == LOOM_AT_INLINE || L < 0)
        return violate(v, err, "compute-at-lost", p, -1,
                       "block %s is placed at a loop of block %s that no longer exists (split, fused or inlined "
                       "since); place it again",
                       pn, cn);
    char nm[64];
    loom_iter_name(sch, c, P->at_iter, nm, sizeof nm);
    /* every reader must run inside that location, after the producer; an
     * inlined reader reads where its own readers are */
    int readers[LOOM_MAX_STMTS], nread = loom_stage_readers(sch, p, readers);
    for (int k = 0; k < nread; k++) {
        int r = readers[k];
        if (r == c)
            continue;
        const loom_stage *R = &sch->stages[r];
        int ok = R->compute_at == LOOM_AT_LOOP && R->at_stage == c &&
                 loom_loop_of_iter(C, R->at_iter) >= L;
        if (!ok)
            return violate(v, err, "producer-coverage", p, -1,
                           "block %s is computed one slice at a time inside loop %s of block %s, but block %s reads "
                           "it elsewhere and would see only the last slice; place %s inside that loop too, or %s at "
                           "the root",
                           pn, nm, cn, prog->tensors[prog->stmts[r].lhs].name,
                           prog->tensors[prog->stmts[r].lhs].name, pn);
    }
    /* recomputation must not accumulate: a dense block's slice is reset
     * where it is placed (runtime/lower/lower_output.c fill_slice); a sparse one's
     * reductions stay innermost */
    int last_free = -1, first_red = P->nloops;
    for (int q = 0; q < P->nloops; q++) {
        if (loom_iter_reduces(sch, (int)(P - sch->stages), P->loops[q].iter)) {
            if (q < first_red)
                first_red = q;
        } else
            last_free = q;
    }
    int accum = first_red < last_free; /* through memory: its slice is reset where it is placed */
    if (accum && loom_tensor_is_sparse(prog, prog->stmts[p].lhs))
        return violate(v, err, "compute-at-accumulates", p, first_red,
                       "block %s, placed inside loop %s of block %s, reduces through memory (a reduction loop is "
                       "outside a free loop) into a sparse tensor, so each recomputed slice would be added twice; "
                       "keep its reductions innermost or compute it at the root",
                       pn, nm, cn);
    /* a parallel loop at or around the location must split the slices */
    int map[LOOM_MAX_ORDER];
    int nmap = loom_compute_at_map(sch, p, c, map) < 0 ? 0 : prog->tensors[prog->stmts[p].lhs].order;
    for (int q = 0; q <= L; q++) {
        if (C->loops[q].kind != LOOM_LOOP_PARALLEL)
            continue;
        int ok = 0;
        for (int d = 0; d < nmap && !ok; d++)
            ok = map[d] >= 0 && derives(C, C->loops[q].iter, map[d]);
        if (!ok)
            return violate(v, err, "compute-at-race", p, -1,
                           "block %s is computed inside parallel loop %s of block %s, whose iterations would all "
                           "write the same elements of %s; place it inside a loop over one of its indices",
                           pn, loom_iter_name(sch, c, C->loops[q].iter, nm, sizeof nm), cn, pn);
        for (int k = 0; k < P->nloops; k++)
            if (P->loops[k].kind == LOOM_LOOP_PARALLEL)
                return violate(v, err, "nested-parallel", p, k,
                               "block %s is computed inside parallel loop %s of block %s and has a parallel loop "
                               "itself: nested parallel regions oversubscribe the cores",
                               pn, nm, cn);
    }
    return accum ? check_slices_split(sch, p, v, err) : LOOM_OK;
}

/* SampleFusionGroup's promise (dsl/schedule/fusion_group.c): a producer of a fused
 * edge runs inside its consumer (inlined, or at one of its loops), the
 * producer of an unfused edge at the root; and a fused edge is one the
 * compiler offers. */
loom_status loom__check_fusion_group(const loom_schedule *sch, int p, loom_violation *v, loom_error *err)
{
    const loom_stage *P = &sch->stages[p];
    if (P->fuse == LOOM_FUSE_FREE)
        return LOOM_OK;
    const loom_program *prog = sch->prog;
    const char *pn = prog->tensors[prog->stmts[p].lhs].name;
    int c = -1;
    for (int r = p + 1; r < sch->nstages && c < 0; r++)
        if (loom_expr_reads(prog, prog->stmts[r].rhs, prog->stmts[p].lhs))
            c = r;
    const char *cn = c >= 0 ? prog->tensors[prog->stmts[c].lhs].name : "(none)";
    if (P->fuse == LOOM_FUSE_YES && !(P->compute_at == LOOM_AT_INLINE ||
                                      (P->compute_at == LOOM_AT_LOOP && !P->at_after && P->at_stage == c)))
        return violate(v, err, "fusion-group", p, -1,
                       "the fusion group fuses %s into %s, but %s is computed %s: no location inside %s was left "
                       "for it (its consumer's loops as scheduled give no slice of it)",
                       pn, cn, pn, P->compute_at == LOOM_AT_ROOT ? "at the root" : "inside another block", cn);
    /* an epilogue computed inside its producer (ReverseComputeAt) is not
     * fused into its consumer: that is fine for an unfused edge */
    if (P->fuse == LOOM_FUSE_NO && P->compute_at != LOOM_AT_ROOT && !(P->compute_at == LOOM_AT_LOOP && P->at_after))
        return violate(v, err, "fusion-group", p, -1,
                       "the fusion group keeps %s in a group of its own (edge %s -> %s not fused), but %s is %s", pn,
                       pn, cn, pn, P->compute_at == LOOM_AT_INLINE ? "inlined" : "computed inside another block");
    return LOOM_OK;
}
