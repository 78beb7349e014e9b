/* Split-K update (schedule.h loom_split_k_update; Neptune's split-K,
 * FlashDecoding): the rolled loop of a fused chain runs as chunks with
 * their own running max and partials, merged by a combine loop with the
 * rolling update's correction.  Part of the fused lowering
 * (lower_fusion.c). */
#include <math.h>
#include <stdio.h>

#include "lower_fusion_internal.h"

/* Split-K (FlashDecoding): chunks with their own partials (the chunk loop
 * parallel when `par`), then the combine loop into the row's accumulators. */
int loom__fu_split_k_row(fctx *c, lir_stmt *seq, int par)
{
    lir_func *f = c->f;
    const loom_program *prog = c->prog;
    int64_t F = c->sch->stages[c->m].splitk;
    int pm = loom__fu_local_array(c, "pm", c->ms->lhs, 3000, F), pr[LOOM_MAX_STMTS];
    if (pm < 0 || loom__fu_app(c, seq, loom_lir_local(f, pm)))
        return c->status ? c->status : loom__fu_nomem(c);
    for (int k = 0; k < c->nr; k++) {
        pr[k] = loom__fu_local_array(c, "pr", prog->stmts[c->r[k].s].lhs, 4000 + c->r[k].s, F * c->r[k].nslice);
        if (pr[k] < 0 || loom__fu_app(c, seq, loom_lir_local(f, pr[k])))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    c->nchunks = F;
    c->chunk = loom_lir_new_var(f, "chunk", LIR_I64);
    lir_stmt *cl = loom_lir_for(f, c->chunk, loom_lir_int(f, 0), loom_lir_int(f, F), par ? LIR_LOOP_PARALLEL : LIR_LOOP_SERIAL);
    if (c->chunk < 0 || loom__fu_app(c, seq, cl) || loom__fu_declare_accs(c, cl->body, 2000) || loom__fu_j_loop(c, cl->body))
        return c->status ? c->status : loom__fu_nomem(c);
    lir_expr *ch = loom_lir_var_ref(f, c->chunk);
    if (loom__fu_app(c, cl->body, loom_lir_store(f, pm, ch, loom_lir_var_ref(f, c->accm))))
        return c->status;
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        lir_expr *lidx;
        lir_stmt *in = loom__fu_slice_loops(c, R, cl->body, &lidx);
        if (!in || loom__fu_app(c, in, loom_lir_store(f, pr[k], loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, ch, loom_lir_int(f, R->nslice)), lidx),
                                        loom__fu_acc_ref(c, R, lidx))))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    c->chunk = -1;
    /* combine: M = max_c m_c; r = combine_c r_c * exp(a (M - m_c)) */
    if (loom__fu_declare_accs(c, seq, 1000))
        return c->status;
    int cv = loom_lir_new_var(f, "ck", LIR_I64);
    lir_stmt *mx = loom_lir_for(f, cv, loom_lir_int(f, 0), loom_lir_int(f, F), LIR_LOOP_SERIAL);
    if (cv < 0 || loom__fu_app(c, seq, mx) ||
        loom__fu_app(c, mx->body, loom_lir_assign(f, c->accm, loom_lir_bin(f, LIR_MAX, loom_lir_var_ref(f, c->accm), loom_lir_load(f, pm, loom_lir_var_ref(f, cv))))))
        return c->status ? c->status : loom__fu_nomem(c);
    int cw = loom_lir_new_var(f, "ck", LIR_I64);
    lir_stmt *cm = loom_lir_for(f, cw, loom_lir_int(f, 0), loom_lir_int(f, F), LIR_LOOP_SERIAL);
    lir_stmt *seen = loom_lir_if(f, loom_lir_bin(f, LIR_GT, loom_lir_load(f, pm, loom_lir_var_ref(f, cw)), loom_lir_float(f, -INFINITY)));
    if (cw < 0 || loom__fu_app(c, seq, cm) || loom__fu_app(c, cm->body, seen))
        return c->status ? c->status : loom__fu_nomem(c);
    for (int k = 0; k < c->nr; k++) {
        rolled *R = &c->r[k];
        const loom_stmt *rs = &prog->stmts[R->s];
        int sv = loom_lir_new_var(f, "scale", LIR_F32);
        lir_expr *se = loom_lir_call(f, LIR_FN_EXP, loom_lir_bin(f, LIR_MUL, loom_lir_float(f, R->rule.coef),
                                                       loom_lir_bin(f, LIR_SUB, loom_lir_var_ref(f, c->accm),
                                                               loom_lir_load(f, pm, loom_lir_var_ref(f, cw)))));
        if (sv < 0 || loom__fu_app(c, seen->body, loom_lir_let(f, sv, se)))
            return c->status ? c->status : loom__fu_nomem(c);
        lir_expr *lidx;
        lir_stmt *in = loom__fu_slice_loops(c, R, seen->body, &lidx);
        if (!in)
            return c->status ? c->status : loom__fu_nomem(c);
        lir_expr *part = loom_lir_load(f, pr[k], loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, cw), loom_lir_int(f, R->nslice)), lidx));
        if (rs->op == LOOM_ASSIGN_MAX) { /* -inf * 0 would be NaN */
            lir_stmt *g = loom_lir_if(f, loom_lir_bin(f, LIR_GT, part, loom_lir_float(f, -INFINITY)));
            if (loom__fu_app(c, in, g))
                return c->status;
            in = g->body;
            part = loom_lir_load(f, pr[k], loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, loom_lir_var_ref(f, cw), loom_lir_int(f, R->nslice)), lidx));
        }
        if (loom__fu_app(c, in, loom__fu_acc_set(c, R, lidx, loom__fu_red_combine(c, rs->op, loom__fu_acc_ref(c, R, lidx),
                                                       loom_lir_bin(f, LIR_MUL, part, loom_lir_var_ref(f, sv))))))
            return c->status;
    }
    return 0;
}

