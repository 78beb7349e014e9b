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
 * SpMM 0.06-0.13.
 *
 * Model 73: an accumulation into a kernel-internal intermediate counts as a
 * workspace's.  gcn2's T1 = X W1 keeps T1's row in a register across X's
 * positions (model 54); with the lowering's offset form of that loop
 * (codegen.c accumulating_position_loop) T1 in chunks of 16 measured
 * 0.98-1.01x unsplit on the seed-3 AVX2 records, simulated 1.09x with its
 * exits exposed, 1.05x now (GCN2 seed-3 AVX2 0.776 -> 0.789 on the
 * re-measured records; docs/simulator.md "Models 72 and 73").
 *
 * Model 100: the chain hides a workspace chunk loop's exits only as far as
 * it outlasts the core's other bounds.  Such a loop's trip changes from or
 * to c count in ctr.bexpw (unscaled by branch memory, as model 65's); they
 * cost branch_miss_cycles each past what the chain leaves beyond the
 * core's issue and pipe bound, its memory term and its level bandwidth,
 * added after those bounds (loom__sim_finish): a mispredicted exit stops
 * the loads the level's bandwidth would serve.  Why (issue 29, Zen 4,
 * AVX-512): mbeacxc SpMM F = 128 (rows of about 100 nonzeros, 8 zmm FMAs
 * and loads a position, bound by its one 512-bit FMA pipe and by L2, where
 * each accumulator's chain takes 4 cycles a position) in chunks of 8, 16
 * or 32 measured 1.008-1.011x unsplit over 30 pairs of records (chunks of
 * 2 and 4, which cc unrolls into copies, 1.002-1.009x), simulated
 * 0.997-1.002x -- the exits hidden under a chain a quarter of the bound;
 * 1.012x now.  Cora F = 32 (2 zmm a position) is chain-bound and keeps
 * its exits hidden; an intermediate cc keeps in registers (model 73's
 * gcn2 T1 in chunks of 16, measured 0.98-1.01x unsplit) is left out:
 * exposed, T1's chunks simulated 2.0x unsplit.  Mean Spearman over the
 * 22 re-measured cells 0.8807 -> 0.8900, none under 0.8 (mbeacxc AVX-512
 * 0.771 / 0.792 -> 0.824 / 0.838, PubMed AVX2 +0.035, Facebook +0.016 /
 * +0.017); held out (seed-7 campaigns, both ISAs) 0.8883 -> 0.8965
 * (docs/simulator.md "Model 100"). */
#include <math.h>
#include <stdlib.h>

#include "sim_impl.h"

/* Does s (or a statement below it) store into a local workspace, or (with
 * temps) accumulate into a kernel-internal intermediate (model 73: a row cc
 * keeps in registers across the positions, model 54)? */
static int stores_workspace(const sprog *p, const sst *s, int temps)
{
    if (!s)
        return 0;
    if (s->kind == SS_WORK)
        return s->store_buf >= 0 && (p->bufs[s->store_buf].local || (temps && s->rmw && s->store_temp));
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++)
        if (stores_workspace(p, s->items[i], temps))
            return 1;
    return stores_workspace(p, s->body, temps) || stores_workspace(p, s->els, temps);
}

/* c for a PosSplit chunk's loop [0, min(c, rest)) of literal c, else 0 */
static int64_t chunk_literal(const lir_stmt *s)
{
    const lir_expr *h = s->hi;
    if (s->lo->kind != LIR_E_INT || s->lo->ival != 0 || h->kind != LIR_E_BIN || h->op != LIR_MIN)
        return 0;
    return h->a->kind == LIR_E_INT ? h->a->ival : h->b->kind == LIR_E_INT ? h->b->ival : 0;
}

/* c for a loop [0, min(c, rest)) (c >= 2) that cc keeps a loop, else 0. */
static int kept_chunk(const lir_stmt *s, const sst *r, int peeled)
{
    int64_t c = peeled || r->vec ? 0 : chunk_literal(s);
    if (c < 2 || c > (int64_t)1 << 30 || (r->loop_kind == LIR_LOOP_UNROLLED && r->unroll >= c))
        return 0;
    return (int)c;
}

/* The exits of unrolled run-time loops (model 94; only on targets with
 * issue_chain_norm).  Read from GCC 12's assembly (-O3 -march=native, Zen
 * 4, AVX-512) of issue 29's Cora SpMM F = 32 records: a PosSplit chunk
 * [0, min(c, rest)) that cc unrolls into c copies -- model 63's peeling, or
 * a `#pragma GCC unroll u` with u >= c -- tests for the chunk's end after
 * every copy but the last (chunks of 4: 3 compares and branches; of 16
 * under unroll 16: 16 copies), so a position costs (c - 1) / c of a loop
 * test, where the simulator charged 1 / c; any other loop of run-time trip
 * under the pragma stays a rolled loop, one copy (the nonzero loop under
 * unroll 4 or 16, a chunk of 8 or 16 under unroll 4), where the simulator
 * charged 1 / u a position and took a row of at most u nonzeros for u
 * unrolled copies sharing their loads.  Pairs of records that differ only
 * in the pragma (unroll 1 -> 4 or 16, 17-22 pairs each on the seed-5
 * AVX-512 and seed-6 AVX2 sets) measured 1.00-1.01x and simulated
 * 0.95-0.97x; 1.00x now.  Mean Spearman over the
 * 22 re-measured cells 0.8425 -> 0.8499: bcsstk16 +0.054 / +0.020, Cora
 * +0.004-0.045, GCN2 +0.008 / +0.010, no cell lower (docs/simulator.md
 * "Model 94"). */
void loom__sim_mark_for(const sprog *p, const loom_target *t, const lir_stmt *s, sst *r, int peeled)
{
    r->phase = loom__sim_pack_phase(p, t, r);
    int kept = t->issue_chain_norm > 0 ? kept_chunk(s, r, peeled) : 0, ws = kept && stores_workspace(p, r->body, 1);
    r->exposed_chunk = ws ? 0 : kept;                                 /* model 65 */
    r->exposed_ws = ws && stores_workspace(p, r->body, 0) ? kept : 0; /* model 100: a workspace's, not model 73's */
    r->chunk_inner = chunk_literal(s) != 0;
    if (t->issue_chain_norm > 0 && r->rt_bounds && !r->vec && r->loop_kind == LIR_LOOP_UNROLLED) { /* model 94 */
        int64_t c = chunk_literal(s);
        if (c >= 2 && r->unroll >= c) {
            r->inv_unroll = (double)(c - 1) / (double)c; /* c copies, an exit test after each but the last */
        } else { /* `#pragma GCC unroll` on a loop of run-time trip: GCC 12 leaves it rolled */
            r->loop_kind = LIR_LOOP_SERIAL;
            r->unroll = 1;
            r->inv_unroll = 1;
        }
    }
}

/* Literal loops GCC unrolls unasked (model 68; only on targets with
 * issue_chain_norm, which loom calibrate writes).  GCC 12 at -O3 unrolls a
 * loop of literal trip completely when its copies are few and small
 * (its cunroll pass, within --param max-completely-peel-times and
 * max-completely-peeled-insns) and the loop holds no call -- codegen's
 * memset of a workspace is one; in the assembly read, a tile's guard (an
 * if) kept the loop too.  A serial loop of at most
 * LOOM_SIM_PEEL_MAX_POSITIONS iterations whose copies issue at most
 * LOOM_SIM_PEEL_MAX_INSTRUCTIONS (peel_size, strict) is simulated as
 * those copies: no loop instructions, and (sim_hoist.c) what every copy
 * computes alike -- a position, the column index it loads from crd --
 * once per instance; a broadcast the copies share is loaded once (sim.h
 * "Unrolled copies"), and a one-vector copy's shared broadcast needs no
 * shuffle (model 39's shuffle is for a later piece of one loop).  Why
 * (issue 29, Zen 5, AVX2 and AVX-512): SpMM F = 32 split into 4 x 8 (or
 * 2 x 16, 8 x 4) with the 4 outside a one-position chunk loop compiles to
 * the same assembly as the 32-wide vector loop -- a crd load, a broadcast
 * and 4 FMAs a nonzero -- and ran as fast (bcsstk16 seed-3 AVX2: 137.3-
 * 137.9 us against 134.9-140.1), simulated 251-262 us against 123-133 (a
 * rolled loop reloading crd and A in every copy), now 130.9-131.7.  Read
 * from the assembly too: GCN2's T2 reduction in 2 f a step is unrolled (two
 * rows, no guard), in
 * 4 f under a 64-row tile's guard it is not; SDDMM's 2 x 32 partial sums
 * are.  docs/simulator.md "Model 68": mean Spearman 0.8526 -> 0.8542. */

/* The instructions an iteration of b issues, as models 63 and 68 count them
 * for cc's complete unrolling (LOOM_SIM_PEEL_MAX_INSTRUCTIONS): 2 a
 * statement, a vector loop's vectors, a literal loop's trip times its body;
 * a run-time loop too many -- and, for model 68 (on: not NULL), a vector
 * reduction (a tree of loops), a fill (cc's memset, a call GCC will not
 * copy) or an if.  For model 63 (a chunk, on NULL) a vector reduction is
 * its vectors and LOOM_SIM_PEEL_TREE_STEP a halving of its tree (model
 * 101).  Model 93: with on, an integer assignment counts only
 * when it reads a variable on (the loop's own, and those assigned from it,
 * which it turns on, and those of an inner loop of more than one
 * iteration); the others are the same in every copy, which GCC's invariant
 * motion takes out of the loop before cunroll weighs it -- and an empty asm
 * (the lowering's `__asm__("")`, SS_NOP) counts 1, as GCC's size estimate
 * has it. */
static double peel_size(const sst *b, int64_t lanes, unsigned char *on)
{
    if (!b)
        return 0;
    if (b->kind == SS_SEQ) {
        double n = 0;
        for (int i = 0; i < b->items_n; i++)
            n += peel_size(b->items[i], lanes, on);
        return n;
    }
    if (on && (b->kind == SS_FILL || b->kind == SS_IF))
        return HUGE_VAL;
    if (on && b->kind == SS_NOP)
        return 1;
    if (on && b->kind == SS_SETI) {
        if (!loom__sim_sx_reads(b->value, on))
            return 0;
        on[b->var] = 1;
        return 2;
    }
    if (b->kind != SS_FOR)
        return 2;
    if (b->lo->kind != SX_CONST || b->hi->kind != SX_CONST || (b->has_red && on))
        return HUGE_VAL;
    int64_t n = b->hi->ival - b->lo->ival;
    if (b->has_red) { /* model 101: a chunk's vector reduction, its vectors and a halving tree (model 79's width) */
        int64_t w = n >= lanes ? lanes : n >= 8 ? 8 : 4;
        return (double)((n + lanes - 1) / lanes) + LOOM_SIM_PEEL_TREE_STEP * log2((double)(w < lanes ? w : lanes));
    }
    if (on && !b->vec && n > 1 && b->var >= 0) /* an inner loop's own statements vary with it (one of trip 1 is folded) */
        on[b->var] = 1;
    return b->vec ? (double)((n + lanes - 1) / lanes) : (double)n * peel_size(b->body, lanes, on);
}

/* Model 68's limits as model 93 has them: a literal loop of at most the
 * target's peel_times iterations (GCC's max-completely-peel-times) whose
 * copies' varying statements issue at most LOOM_SIM_PEEL_MAX_INSTRUCTIONS
 * (nvars: the program's integer variables).  -1: out of memory. */
static int64_t literal_copies(const loom_target *t, const sst *r, int nvars)
{
    int64_t n = r->hi->ival - r->lo->ival;
    if (n < 2 || n > t->peel_times)
        return 0;
    unsigned char *on = calloc((size_t)nvars + 1, 1);
    if (!on)
        return -1;
    on[r->var] = 1;
    double size = (double)n * peel_size(r->body, loom__sim_lanes(t), on);
    free(on);
    return size <= LOOM_SIM_PEEL_MAX_INSTRUCTIONS ? n : 0;
}

int64_t loom__sim_peeled_copies(const loom_target *t, const lir_stmt *s, const sst *r, int nvars)
{
    if (t->issue_chain_norm <= 0 || r->vec || s->loop_kind != LIR_LOOP_SERIAL)
        return 0;
    if (!r->rt_bounds) /* model 68: a literal trip */
        return literal_copies(t, r, nvars);
    int64_t n = chunk_literal(s); /* model 63 */
    if (n < 2 || n > LOOM_SIM_PEEL_MAX_POSITIONS ||
        (double)n * peel_size(r->body, loom__sim_lanes(t), NULL) > LOOM_SIM_PEEL_MAX_INSTRUCTIONS)
        return 0;
    return n;
}
