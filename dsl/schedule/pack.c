/* PackPanel (schedule.h): an operand's panel copied into a contiguous local
 * buffer at a loop of the block (issue 12; GotoBLAS's packed B panel, TVM's
 * cache_read).  The lowering is runtime/lower/lower_loops.c's
 * loom__lw_pack_begin. */
#include <stdio.h>
#include <string.h>

#include "query.h"
#include "schedule_internal.h"

/* The index variables of stage s's reads of tensor t (all of them the
 * same): written to idx, their count returned; -1 when the block does not
 * read t or reads it at two different places. */
static int access_idx(const loom_program *prog, int e, int t, int *idx, int n)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (E->tensor != t)
            return n;
        if (n >= 0 && memcmp(idx, E->idx, sizeof(int) * (size_t)E->nidx) != 0)
            return -2;
        memcpy(idx, E->idx, sizeof(int) * (size_t)E->nidx);
        return E->nidx;
    }
    for (int a = 0; a < E->nargs && E->kind != LOOM_EXPR_CONST && n != -2; a++)
        n = access_idx(prog, E->args[a], t, idx, n);
    return n;
}

int loom__pack_idx(const loom_program *prog, int s, int t, int *idx)
{
    int n = access_idx(prog, prog->stmts[s].rhs, t, idx, -1);
    return n >= 0 ? n : -1;
}

int64_t loom_pack_panel_elems(const loom_schedule *sch, int s)
{
    const loom_stage *S = &sch->stages[s];
    if (S->pack_iter < 0 || S->pack_tensor < 0)
        return -1;
    int L = loom_loop_of_iter(S, S->pack_iter), idx[LOOM_MAX_ORDER];
    int n = loom__pack_idx(sch->prog, s, S->pack_tensor, idx);
    if (L < 0 || n < 0 || !loom__region_split_ok(sch, s, L, idx, n))
        return -1;
    int64_t elems = 1;
    for (int d = 0; d < n; d++) {
        int64_t ext = 1, inside = 0;
        for (int p = L + 1; p < S->nloops; p++)
            if (loom_iter_var(S, S->loops[p].iter) == idx[d]) {
                int64_t e = loom_iter_extent(sch, s, S->loops[p].iter);
                if (e <= 0)
                    return -1;
                ext *= e;
                inside = 1;
            }
        (void)inside;
        elems *= ext;
    }
    return elems;
}

static void record_pack(loom_schedule *sch, int block_rv, int loop_rv, const char *tensor, int enable_rv)
{
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    inst.inputs[inst.ninputs++] = loop_rv;
    if (enable_rv >= 0)
        inst.inputs[inst.ninputs++] = enable_rv;
    snprintf(inst.sattr, sizeof inst.sattr, "%s", tensor);
    loom_inst_record(sch, LOOM_INST_PACK_PANEL, &inst);
}

loom_status loom_pack_panel(loom_schedule *sch, int block_rv, int loop_rv, const char *tensor, int enable_rv,
                            loom_error *err)
{
    int s, c, pos;
    int64_t enable = 1;
    if (!tensor)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "PackPanel needs a tensor name");
    loom_status st = loom__block_stage(sch, block_rv, &s, err);
    if (!st)
        st = loom__loop_pos(sch, loop_rv, &c, &pos, err);
    if (!st && enable_rv >= 0)
        st = loom__expr_value(sch, enable_rv, &enable, err);
    if (st)
        return st;
    const loom_program *prog = sch->prog;
    const char *name = prog->tensors[prog->stmts[s].lhs].name;
    if (c != s)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "pack of %s in block %s: the loop belongs to block %s", tensor, name,
                              prog->tensors[prog->stmts[c].lhs].name);
    int t = loom_program_find_tensor(prog, tensor), idx[LOOM_MAX_ORDER];
    if (t < 0 || t == prog->stmts[s].lhs || loom_tensor_is_sparse(prog, t) ||
        prog->tensors[t].role == LOOM_TENSOR_TEMP || loom__pack_idx(prog, s, t, idx) < 0)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "pack-panel-tensor: block %s cannot pack %s: only a dense input the block reads (at "
                              "one index list) is packed, not its output, a sparse tensor or a temporary",
                              name, tensor);
    if (enable) {
        sch->stages[s].pack_iter = sch->stages[s].loops[pos].iter;
        sch->stages[s].pack_tensor = t;
    }
    record_pack(sch, block_rv, loop_rv, tensor, enable_rv);
    return LOOM_OK;
}
