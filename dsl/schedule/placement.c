/* Placement of blocks (schedule.h): ComputeInline, ComputeAt (with an
 * optional enable input), CacheWrite, RFactor, ReverseComputeAt. */
#include <string.h>

#include "query.h"
#include "schedule_internal.h"

/* ---- placement ------------------------------------------------------- */

/* Is var x of stage A bound where A's placed producers run at its loop L
 * (every loop over x at or outside L, as the lowering binds an index once
 * all its loops have run: runtime/lower/lower.c emit_placed)? */
static int bound_at(const loom_stage *A, int L, int x)
{
    int in = 0, out = 0;
    for (int q = 0; q < A->nloops; q++)
        if (loom_iter_derives_from(A, A->loops[q].iter, x))
            *(q <= L ? &out : &in) += 1;
    return out && !in;
}

int loom_placed_slices_split(const loom_schedule *sch, int p, int *stage, int *loop)
{
    const loom_program *prog = sch->prog;
    int chain[LOOM_MAX_STMTS + 1], n = 0;
    for (int s = p; n <= LOOM_MAX_STMTS && sch->stages[s].compute_at == LOOM_AT_LOOP && !sch->stages[s].at_after;
         s = sch->stages[s].at_stage)
        chain[n++] = s;
    for (int k = 1; k <= n; k++) { /* the stage chain[k - 1] is placed in */
        int a = sch->stages[chain[k - 1]].at_stage;
        const loom_stage *A = &sch->stages[a];
        int L = loom_loop_of_iter(A, sch->stages[chain[k - 1]].at_iter);
        for (int q = 0; q <= L; q++) {
            if (A->loops[q].kind != LOOM_LOOP_PARALLEL)
                continue;
            /* the vars the loop fixes, carried down the placements to p */
            unsigned char set[LOOM_MAX_VARS] = {0}, next[LOOM_MAX_VARS];
            int any = 0;
            for (int x = 0; x < prog->nvars; x++)
                any |= set[x] = prog->vars[x].stmt == a && loom_iter_derives_from(A, A->loops[q].iter, x) &&
                                bound_at(A, L, x);
            for (int j = k - 1; j >= 0 && any; j--) {
                int map[LOOM_MAX_ORDER], pr = chain[j], cs = sch->stages[pr].at_stage;
                memset(next, 0, sizeof next);
                any = 0;
                if (loom_compute_at_map(sch, pr, cs, map) == 0)
                    for (int d = 0; d < prog->tensors[prog->stmts[pr].lhs].order; d++)
                        if (map[d] >= 0 && set[map[d]])
                            any = next[prog->stmts[pr].lhs_idx[d]] = 1;
                memcpy(set, next, sizeof set);
            }
            if (!any) {
                if (stage)
                    *stage = a;
                if (loop)
                    *loop = q;
                return 0;
            }
        }
    }
    return 1;
}

static loom_status inline_check(const loom_schedule *sch, int s, loom_error *err)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[s];
    const char *name = prog->tensors[st->lhs].name;
    if (st->nvars > st->nfree)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "inline-reduction: block %s reduces over %s; only a block without a reduction can be "
                              "inlined",
                              name, prog->vars[st->vars[st->nfree]].name);
    if (prog->tensors[st->lhs].role != LOOM_TENSOR_TEMP)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "inline-output: %s is an output of the workload and must be stored", name);
    int consumers = 0;
    for (int o = 0; o < sch->nstages; o++)
        if (o != s && loom_expr_reads(prog, prog->stmts[o].rhs, st->lhs))
            consumers++;
    if (!consumers)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0, "inline-no-consumer: no block reads %s", name);
    return LOOM_OK;
}

int loom_can_inline(const loom_schedule *sch, int stage)
{
    return sch->stages[stage].compute_at != LOOM_AT_INLINE && inline_check(sch, stage, NULL) == LOOM_OK;
}

loom_status loom_compute_inline(loom_schedule *sch, int block_rv, loom_error *err)
{
    int s;
    loom_status st = loom__block_stage(sch, block_rv, &s, err);
    if (st)
        return st;
    if ((st = inline_check(sch, s, err)))
        return st;
    sch->stages[s].compute_at = LOOM_AT_INLINE;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    loom_inst_record(sch, LOOM_INST_COMPUTE_INLINE, &inst);
    return LOOM_OK;
}

/* The access of tensor t in expression e (first found), or -1; *count
 * receives how many accesses with different indices there are. */
static int find_access(const loom_program *prog, int e, int t, int *first, int *differ)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (E->tensor == t) {
            if (*first < 0)
                *first = e;
            else if (memcmp(prog->exprs[*first].idx, E->idx, sizeof E->idx) != 0)
                *differ = 1;
        }
        return *first;
    }
    if (E->kind != LOOM_EXPR_CONST)
        for (int k = 0; k < E->nargs; k++)
            find_access(prog, E->args[k], t, first, differ);
    return *first;
}

static int placed_at(const loom_schedule *sch, int r, int c)
{
    /* r is c itself, or placed (transitively) at a loop of c */
    for (int guard = 0; guard <= sch->nstages; guard++) {
        if (r == c)
            return 1;
        if (sch->stages[r].compute_at != LOOM_AT_LOOP || sch->stages[r].at_after)
            return 0;
        r = sch->stages[r].at_stage;
    }
    return 0;
}

int loom_compute_at_map(const loom_schedule *sch, int p, int c, int *map)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *ps = &prog->stmts[p];
    int order = prog->tensors[ps->lhs].order;
    for (int d = 0; d < order; d++)
        map[d] = -1;
    /* readers of p, latest first, so a chain maps through its nearest reader */
    for (int r = sch->nstages - 1; r > p; r--) {
        /* an inlined reader reads where its own readers are: look through it */
        int through = sch->stages[r].compute_at == LOOM_AT_INLINE;
        if (!through && !placed_at(sch, r, c) && r != c)
            continue;
        int first = -1, differ = 0;
        find_access(prog, prog->stmts[r].rhs, ps->lhs, &first, &differ);
        if (first < 0)
            continue;
        if (differ)
            return -1;
        const loom_expr *E = &prog->exprs[first];
        int rmap[LOOM_MAX_ORDER];
        if (r == c && !through) {
            for (int d = 0; d < order; d++)
                rmap[d] = E->idx[d];
        } else {
            /* r's own variables map to c's through r's placement */
            int inner[LOOM_MAX_ORDER];
            if (loom_compute_at_map(sch, r, c, inner) < 0)
                return -1;
            const loom_stmt *rs = &prog->stmts[r];
            for (int d = 0; d < order; d++) {
                rmap[d] = -1;
                for (int k = 0; k < prog->tensors[rs->lhs].order; k++)
                    if (rs->lhs_idx[k] == E->idx[d])
                        rmap[d] = inner[k];
            }
        }
        for (int d = 0; d < order; d++)
            if (map[d] < 0)
                map[d] = rmap[d];
    }
    return 0;
}

static void record_compute_at(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv)
{
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    inst.inputs[inst.ninputs++] = loop_rv;
    if (enable_rv >= 0)
        inst.inputs[inst.ninputs++] = enable_rv;
    loom_inst_record(sch, LOOM_INST_COMPUTE_AT, &inst);
}

loom_status loom_compute_at(loom_schedule *sch, int block_rv, int loop_rv, loom_error *err)
{
    return loom_compute_at_if(sch, block_rv, loop_rv, -1, err);
}

loom_status loom_compute_at_if(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv, loom_error *err)
{
    int p, c, pos;
    int64_t enable = 1;
    loom_status st = loom__block_stage(sch, block_rv, &p, err);
    if (!st)
        st = loom__loop_pos(sch, loop_rv, &c, &pos, err);
    if (!st && enable_rv >= 0)
        st = loom__expr_value(sch, enable_rv, &enable, err);
    if (st)
        return st;
    if (!enable) {
        record_compute_at(sch, block_rv, loop_rv, enable_rv);
        return LOOM_OK;
    }
    const loom_program *prog = sch->prog;
    if (c <= p)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "compute-at-order: block %s can only be computed inside a block that comes after it; "
                              "block %s does not",
                              prog->tensors[prog->stmts[p].lhs].name, prog->tensors[prog->stmts[c].lhs].name);
    int map[LOOM_MAX_ORDER];
    loom_stage save = sch->stages[p];
    sch->stages[p].compute_at = LOOM_AT_LOOP;
    sch->stages[p].at_after = 0;
    sch->stages[p].at_stage = c;
    sch->stages[p].at_iter = sch->stages[c].loops[pos].iter;
    if (loom_compute_at_map(sch, p, c, map) < 0) {
        sch->stages[p] = save;
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "compute-at-reads: %s is read with different indices at that location; loom computes "
                              "one slice per location",
                              prog->tensors[prog->stmts[p].lhs].name);
    }
    record_compute_at(sch, block_rv, loop_rv, enable_rv);
    return LOOM_OK;
}

/* ---- CacheWrite ---------------------------------------------------------- */


int64_t loom_workspace_elems(const loom_schedule *sch, int s)
{
    const loom_stage *S = &sch->stages[s];
    if (S->cache_iter < 0)
        return -1;
    int L = loom_loop_of_iter(S, S->cache_iter);
    if (L < 0)
        return -1;
    const loom_stmt *st = &sch->prog->stmts[s];
    int64_t elems = 1;
    for (int d = 0; d < sch->prog->tensors[st->lhs].order; d++) {
        int v = st->lhs_idx[d];
        for (int p = L + 1; p < S->nloops; p++)
            if (loom_iter_var(S, S->loops[p].iter) == v) {
                int64_t e = loom_iter_extent(sch, s, S->loops[p].iter);
                if (e <= 0)
                    return -1;
                elems *= e;
            }
    }
    return elems;
}

static void record_cache_write(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv)
{
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    inst.inputs[inst.ninputs++] = loop_rv;
    if (enable_rv >= 0)
        inst.inputs[inst.ninputs++] = enable_rv;
    loom_inst_record(sch, LOOM_INST_CACHE_WRITE, &inst);
}

loom_status loom_cache_write(loom_schedule *sch, int block_rv, int loop_rv, loom_error *err)
{
    return loom_cache_write_if(sch, block_rv, loop_rv, -1, err);
}

loom_status loom_cache_write_if(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv, loom_error *err)
{
    int s, c, pos;
    int64_t enable = 1;
    loom_status st = loom__block_stage(sch, block_rv, &s, err);
    if (!st)
        st = loom__loop_pos(sch, loop_rv, &c, &pos, err);
    if (!st && enable_rv >= 0)
        st = loom__expr_value(sch, enable_rv, &enable, err);
    if (st)
        return st;
    if (!enable) { /* recorded, so a mutated decision switches it on on replay */
        record_cache_write(sch, block_rv, loop_rv, enable_rv);
        return LOOM_OK;
    }
    const loom_program *prog = sch->prog;
    const loom_stmt *stm = &prog->stmts[s];
    const char *name = prog->tensors[stm->lhs].name;
    if (c != s)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "cache write of %s: the loop belongs to block %s, not to %s", name,
                              prog->tensors[prog->stmts[c].lhs].name, name);
    if (loom_tensor_is_sparse(prog, stm->lhs))
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "cache-write-sparse: %s is sparse; its values already live at an operand's positions, "
                              "a workspace would add nothing",
                              name);
    const loom_stage *S = &sch->stages[s];
    for (int p = 0; p < S->nloops; p++)
        if (loom_iter_var(S, S->loops[p].iter) < 0) /* fused */
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "cache-write-fused: block %s has a fused loop; a workspace needs each output index "
                                  "iterated by its own loops",
                                  name);
    sch->stages[s].cache_iter = S->loops[pos].iter;
    record_cache_write(sch, block_rv, loop_rv, enable_rv);
    return LOOM_OK;
}

/* ---- RFactor --------------------------------------------------------------- */

static int iter_reduces(const loom_schedule *sch, int s, int it)
{
    const loom_iter *I = &sch->stages[s].iters[it];
    switch (I->kind) {
    case LOOM_ITER_VAR:
    case LOOM_ITER_POS: return sch->prog->vars[I->var].reduced;
    case LOOM_ITER_SPLIT: return iter_reduces(sch, s, I->parent);
    case LOOM_ITER_FUSE: return iter_reduces(sch, s, I->a) && iter_reduces(sch, s, I->b);
    }
    return 0;
}

loom_status loom_rfactor(loom_schedule *sch, int loop_rv, loom_error *err)
{
    int s, pos;
    loom_status st = loom__loop_pos(sch, loop_rv, &s, &pos, err);
    if (st)
        return st;
    const loom_program *prog = sch->prog;
    loom_stage *S = &sch->stages[s];
    int it = S->loops[pos].iter;
    char nm[64];
    loom_iter_name(sch, s, it, nm, sizeof nm);
    const char *name = prog->tensors[prog->stmts[s].lhs].name;
    if (!iter_reduces(sch, s, it))
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "rfactor-not-reduction: loop %s of block %s iterates a free index; rfactor applies to a "
                              "reduction loop",
                              nm, name);
    const loom_iter *I = &S->iters[it];
    if (loom_iter_extent(sch, s, it) <= 0 || (I->kind == LOOM_ITER_VAR && loom_var_is_compressed(sch, s, I->var)))
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "rfactor-dynamic-extent: loop %s has a data-dependent extent; split it (or its position "
                              "space) and rfactor a tile with a constant extent",
                              nm);
    if (loom_tensor_is_sparse(prog, prog->stmts[s].lhs))
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "rfactor-sparse-output: %s is sparse; rfactor keeps dense partial copies of the output",
                              name);
    S->rfactor_iter = it;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = loop_rv;
    loom_inst_record(sch, LOOM_INST_RFACTOR, &inst);
    return LOOM_OK;
}

/* ---- ReverseComputeAt ------------------------------------------------------- */

static void record_reverse_compute_at(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv)
{
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    inst.inputs[inst.ninputs++] = loop_rv;
    if (enable_rv >= 0)
        inst.inputs[inst.ninputs++] = enable_rv;
    loom_inst_record(sch, LOOM_INST_REVERSE_COMPUTE_AT, &inst);
}

loom_status loom_reverse_compute_at(loom_schedule *sch, int block_rv, int loop_rv, loom_error *err)
{
    return loom_reverse_compute_at_if(sch, block_rv, loop_rv, -1, err);
}

loom_status loom_reverse_compute_at_if(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv, loom_error *err)
{
    int c, p, pos;
    int64_t enable = 1;
    loom_status st = loom__block_stage(sch, block_rv, &c, err);
    if (!st)
        st = loom__loop_pos(sch, loop_rv, &p, &pos, err);
    if (!st && enable_rv >= 0)
        st = loom__expr_value(sch, enable_rv, &enable, err);
    if (st)
        return st;
    if (!enable) { /* recorded, so a mutated decision places the block on replay */
        record_reverse_compute_at(sch, block_rv, loop_rv, enable_rv);
        return LOOM_OK;
    }
    const loom_program *prog = sch->prog;
    const char *cn = prog->tensors[prog->stmts[c].lhs].name, *pn = prog->tensors[prog->stmts[p].lhs].name;
    if (p >= c)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "reverse-compute-at-order: block %s can only be computed inside a block that comes "
                              "before it; block %s does not",
                              cn, pn);
    int first = -1, differ = 0;
    find_access(prog, prog->stmts[c].rhs, prog->stmts[p].lhs, &first, &differ);
    if (first < 0 || differ)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "reverse-compute-at-reads: block %s %s %s", cn,
                              first < 0 ? "does not read" : "reads, at different indices,", pn);
    loom_stage *C = &sch->stages[c];
    C->compute_at = LOOM_AT_LOOP;
    C->at_after = 1;
    C->at_stage = p;
    C->at_iter = sch->stages[p].loops[pos].iter;
    record_reverse_compute_at(sch, block_rv, loop_rv, enable_rv);
    return LOOM_OK;
}
