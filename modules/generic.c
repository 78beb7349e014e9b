/* The generic random schedule program (generic.h). */
#include "generic.h"
#include "../dsl/ir/domain.h"

#include <stdio.h>
#include <string.h>


static loom_status block_program(loom_schedule *sch, int s, loom_error *err)
{
    const loom_program *prog = sch->prog;
    const char *name = prog->tensors[prog->stmts[s].lhs].name;
    int b, loops[LOOM_MAX_LOOPS], n, loc;
    loom_status st = loom_get_block(sch, name, &b, err);
    if (!st)
        st = loom_sample_compute_location(sch, b, NULL, NULL, &loc, err);
    if (!st && sch->stages[s].compute_at == LOOM_AT_INLINE)
        return LOOM_OK; /* its loops are never emitted: nothing more to choose */
    if (!st)
        st = loom_get_loops(sch, b, loops, &n, err);
    for (int k = 0; !st && k < n; k++) {
        const loom_rv *r = &sch->rvs[loops[k]];
        const loom_iter *I = &sch->stages[s].iters[r->iter];
        if (I->kind != LOOM_ITER_VAR)
            continue;
        int out[LOOM_MAX_INST_IO];
        if (loom_var_is_compressed(sch, s, I->var)) {
            int t = loom_single_driver(prog, s, I->var);
            if (t < 0)
                continue;
            static const int64_t cand[] = {1, 2, 4, 8, 16, 32};
            static const double probs[] = {1, 1, 1, 1, 1, 1};
            int v;
            st = loom_sample_categorical(sch, 6, cand, probs, NULL, NULL, &v, err);
            if (!st)
                st = loom_pos_split(sch, loops[k], prog->tensors[t].name, 0, v, out, err);
        } else if (loom_iter_extent(sch, s, r->iter) > 1) {
            int tiles[2];
            st = loom_sample_perfect_tile(sch, loops[k], 2, 64, NULL, NULL, tiles, err);
            if (!st)
                st = loom_split(sch, loops[k], 2, tiles, NULL, out, err);
        }
    }
    int v;
    if (!st)
        st = loom_sample_loop_order(sch, b, 0, 0.5, NULL, NULL, &v, err);
    if (!st)
        st = loom_get_loops(sch, b, loops, &n, err);
    /* a block placed inside a consumer's loop runs inside its parallel region */
    if (!st && n > 0 && !loom_iter_reduces(sch, s, sch->rvs[loops[0]].iter) && sch->stages[s].compute_at != LOOM_AT_LOOP)
        st = loom_parallel(sch, loops[0], err);
    if (!st && n > 1) {
        int64_t e = loom_iter_extent(sch, s, sch->rvs[loops[n - 1]].iter);
        const loom_iter *I = &sch->stages[s].iters[sch->rvs[loops[n - 1]].iter];
        int compressed = I->kind == LOOM_ITER_VAR && loom_var_is_compressed(sch, s, I->var);
        /* a reduced innermost loop vectorizes only into a scalar accumulator
         * (every reduced loop inside every free loop) */
        int last_free = -1, first_red = n;
        for (int q = 0; q < n; q++) {
            if (loom_iter_reduces(sch, s, sch->rvs[loops[q]].iter)) {
                if (q < first_red)
                    first_red = q;
            } else
                last_free = q;
        }
        int carried = loom_iter_reduces(sch, s, sch->rvs[loops[n - 1]].iter) && first_red < last_free;
        if (e > 1 && e <= 64 && !compressed && !carried)
            st = loom_vectorize(sch, loops[n - 1], err);
    }
    if (st) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        loom_error_set(err, st, NULL, 0, 0, "generic program, block %s: %s", name, msg);
    }
    return st;
}

loom_status loom_generic_program(loom_schedule *sch, loom_error *err)
{
    /* consumers first (MetaSchedule's post-order apply): a block samples its
     * location once its consumer's loops are final */
    for (int s = sch->nstages - 1; s >= 0; s--) {
        loom_status st = block_program(sch, s, err);
        if (st)
            return st;
    }
    return LOOM_OK;
}
