/* The output before a statement's nest (lower_internal.h
 * loom__lw_init_output): the identity filled into the whole output, an
 * rfactor's partials, or -- for a block placed at a loop that accumulates
 * through memory -- only the slice it computes there.  Called by lower.c;
 * calls lower_ctx.c and lir.c. */
#include "lower_internal.h"

#include <stdio.h>

/* Does every free loop visit every element of the lhs? */
static int lhs_fully_covered(lctx *c)
{
    for (int k = 0; k < c->st->nfree; k++) {
        int x = c->st->vars[k];
        for (int gi = 0; gi < c->ngroups; gi++) {
            if (gi == c->lhs_group)
                continue;
            const group *g = &c->g[gi];
            const loom_format *F = group_format(c, gi);
            for (int l = 0; l < g->nlevels; l++)
                if (g->var[l] == x && F->level[l] != LOOM_LEVEL_DENSE)
                    return 0;
        }
    }
    return 1;
}

/* The slice a block placed at a loop computes there -- its dense tensor with
 * the indices the location fixes at their values and every other index over
 * its whole dimension -- reset to the reduction's identity, so the block may
 * accumulate through memory (a reduction loop outside a free loop, e.g. a
 * row of SpMM's Z(i, :) += A(i, j) T(j, :) computed at loop i of its
 * consumer) and be recomputed at every iteration of the location without
 * adding up.  The innermost index runs in a vectorized loop.  Returns
 * c->status. */
static int fill_slice(lctx *c, lir_stmt *seq)
{
    lir_func *f = c->f;
    const loom_stmt *st = c->st;
    const loom_tensor *T = &c->prog->tensors[st->lhs];
    lir_stmt *in = seq;
    lir_expr *e = loom_lir_int(f, 0);
    for (int d = 0; d < T->order; d++) {
        int x = st->lhs_idx[d];
        lir_expr *v;
        if (c->fixed[x] >= 0)
            v = loom_lir_var_ref(f, c->fixed[x]);
        else {
            char name[48];
            snprintf(name, sizeof name, "z_%s_%s", T->name, c->prog->vars[x].name);
            int w = loom_lir_new_var(f, name, LIR_I64);
            lir_stmt *loop = w < 0 ? NULL
                                   : loom_lir_for(f, w, loom_lir_int(f, 0), loom_lir_dim(f, st->lhs, d),
                                                  d == T->order - 1 ? LIR_LOOP_VECTORIZED : LIR_LOOP_SERIAL);
            if (!loop || loom_lir_append(f, in, loop))
                return loom__lw_fail_nomem(c);
            in = loop->body;
            v = loom_lir_var_ref(f, w);
        }
        e = d == 0 ? v : loom_lir_bin(f, LIR_ADD, loom_lir_bin(f, LIR_MUL, e, loom_lir_dim(f, st->lhs, d)), v);
    }
    return loom_lir_append(f, in, loom_lir_store(f, c->lhs_buf, e, loom__lw_identity(c))) ? loom__lw_fail_nomem(c)
                                                                                          : LOOM_OK;
}

/* What the output needs before block c's nest (into target): an rfactor's
 * partials filled with the identity; else, when the nest accumulates
 * through memory or skips elements, the output (a placed block: its slice)
 * filled with it.  Returns c->status. */
int loom__lw_init_output(lctx *c, lir_stmt *target)
{
    lir_func *f = c->f;
    const loom_stmt *st = c->st;
    /* a workspace is initialised per iteration: only elements the loops
     * never reach need the output filled first */
    if (c->rf_iter >= 0) {
        if (loom_lir_append(f, target, loom_lir_fill(f, c->rf_buf, f->bufs[c->rf_buf].size, loom__lw_identity(c))))
            return loom__lw_fail_nomem(c);
        c->lhs_buf_global = c->lhs_buf;
        c->lhs_buf = c->rf_buf;
    } else if ((!c->scalar_acc && (c->ws_depth < 0 || c->ws_accum)) || !lhs_fully_covered(c)) {
        if (c->S->compute_at == LOOM_AT_LOOP) {
            /* placed: only its slice is recomputed here, so only the slice is
             * reset -- for a dense tensor reducing through memory, the case
             * the validator's compute-at-race checks the threads' slices of */
            int accum = !c->scalar_acc && (c->ws_depth < 0 || c->ws_accum);
            if (!accum)
                return c->status = loom_error_set(
                           c->err, LOOM_ERR_SEMANTIC, c->prog->path, st->line, 0,
                           "compute-at-accumulates: block %s skips elements of its output (a free index runs over a "
                           "sparse operand's entries), so where it is placed the elements it never reaches would "
                           "keep stale values; compute it at the root",
                           c->prog->tensors[st->lhs].name);
            if (loom_tensor_is_sparse(c->prog, st->lhs) || c->epi_k > 0)
                return c->status = loom_error_set(
                           c->err, LOOM_ERR_SEMANTIC, c->prog->path, st->line, 0,
                           "compute-at-accumulates: block %s reduces through memory (a reduction loop outside a free "
                           "loop) %s, so its slice cannot be reset where it is placed and recomputing it would add "
                           "up; keep its reductions innermost or compute it at the root",
                           c->prog->tensors[st->lhs].name,
                           c->epi_k > 0 ? "through a copy-out epilogue" : "into a sparse tensor");
            if (fill_slice(c, target))
                return c->status;
        } else if (loom_lir_append(f, target, loom_lir_fill(f, c->lhs_buf, loom__lw_tensor_size(c, st->lhs), loom__lw_identity(c))))
            return loom__lw_fail_nomem(c);
    }
    return LOOM_OK;
}
