/* Exposed chunk exits (model 65; sim.h "Branch memory" points here; only
 * on targets with issue_chain_norm, which loom calibrate writes).
 *
 * PosSplit cuts a row's positions into chunks: a loop over the chunks and,
 * inside it, a loop over [0, min(c, rest)).  Where cc keeps the inner loop a
 * loop -- model 63 did not make it copies, and no unroll annotation of c or
 * more covers it -- its exit after a full chunk and after the remainder
 * changes from one instance to the next.  Where the positions accumulate
 * into no workspace, each trip change from or to c (sim_exec.c) counts in
 * ctr.bexp, not in bmiss: branch memory (sim.h, model 58) does not scale
 * it, and it costs branch_miss_cycles past what is left of the core's chain
 * after the other misses (model 23), in loom__sim_finish.
 *
 * Why (issue 29, Zen 5, AVX-512, 2 threads): SDDMM Cora D = 64 with chunks
 * of 4 (each position an independent 64-wide dot product, the tree
 * reduction too large to peel) ran 1.15-1.31x its unsplit schedule on Cora
 * and 0.97-1.07x on a copy of Cora whose every row holds a multiple of 4
 * nonzeros: the penalty is the remainder chunk's exits, all of them, where
 * branch memory left 1.6%.  SpMM Cora F = 32 with chunks of 4 ran 1.09-1.15x
 * unsplit on both matrices: positions that accumulate into the row's
 * workspace hide those exits under the row's chain, and what is left is
 * instructions, which the simulator already counts.  On the 32 cells of the
 * fresh record sets (docs/simulator.md "Model 65") mean Spearman 0.8401 ->
 * 0.8434: SDDMM +0.008 / +0.009 / +0.058 / +0.014, GCN2 seed-3 AVX2 +0.018,
 * nothing else moves.  Counting every chunk loop, peeled or not, lost Cora
 * SpMM 0.06-0.13. */
#include "sim_impl.h"

/* Does s (or a statement below it) store into a local workspace? */
static int stores_workspace(const sprog *p, const sst *s)
{
    if (!s)
        return 0;
    if (s->kind == SS_WORK)
        return s->store_buf >= 0 && p->bufs[s->store_buf].local;
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++)
        if (stores_workspace(p, s->items[i]))
            return 1;
    return stores_workspace(p, s->body) || stores_workspace(p, s->els);
}

/* c for a loop [0, min(c, rest)) (c >= 2) that cc keeps a loop and whose
 * positions accumulate into no workspace, else 0. */
static int exposed_chunk(const sprog *p, const lir_stmt *s, const sst *r, int peeled)
{
    const lir_expr *h = s->hi;
    if (peeled || r->vec || s->lo->kind != LIR_E_INT || s->lo->ival != 0 || h->kind != LIR_E_BIN || h->op != LIR_MIN)
        return 0;
    int64_t c = h->a->kind == LIR_E_INT ? h->a->ival : h->b->kind == LIR_E_INT ? h->b->ival : 0;
    if (c < 2 || c > (int64_t)1 << 30 || (r->loop_kind == LIR_LOOP_UNROLLED && r->unroll >= c))
        return 0;
    return stores_workspace(p, r->body) ? 0 : (int)c;
}

void loom__sim_mark_for(const sprog *p, const loom_target *t, const lir_stmt *s, sst *r, int peeled)
{
    r->phase = loom__sim_pack_phase(p, t, r);
    r->exposed_chunk = t->issue_chain_norm > 0 ? exposed_chunk(p, s, r, peeled) : 0;
}
