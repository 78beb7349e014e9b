/* Phases (model 64; sim.h "Cycles" points here; only on targets with
 * issue_chain_norm, which loom calibrate writes).
 *
 * A core's counters in a region are combined into cycles once (sim.h
 * "Cycles"): its ports, issue slots, chain and memory terms overlap, as they
 * do in a loop whose iterations mix them.  A loop that copies a packed panel
 * (PackPanel's local copy, which codegen declares as a `float *restrict`
 * array) does not mix with what follows: the tiles that read the panel wait
 * for its stores, and it runs for thousands of instructions, past any
 * reorder window.  So the outermost such loop (every store below it into a
 * packed panel, nothing but loops and integer lets beside them) counts into
 * a second set of counters (core.c2, swapped in for the loop; the work
 * counter that budgets the sampling keeps running), both sets are scaled by
 * the sampling alike (sim_exec.c chunk_scale), each is combined into cycles
 * on its own -- the copy bound by its loads, stores and misses, its misses
 * dense enough to overlap each other (sim_cycles.c, "Exposed misses") --
 * and a core's phases add up (loom__sim_finish).
 *
 * Why (issue 29, Zen 5, AVX-512, 2 threads): GEMM 512 x 512 with 8-row
 * tiles of 32 columns ran 10.0 us slower packed than unpacked with 8 rows of
 * A, 10.5 us with 16 (the copy of eight 512 x 64 panels, four a core: about
 * 4.5 cycles a line copied); counted with the tiles' FMAs the copy hid
 * under them as the rows grew -- simulated 3.1 us more at 8 rows, 1.0 at 32
 * -- and with 512 rows packing was simulated 0.93x where it measured
 * 1.03-1.09x.  As a phase it costs 6.6 us at 8 rows and 6.3 at 32.  On the
 * 32 cells of the fresh record sets (docs/simulator.md "Model 64") mean
 * Spearman 0.8374 -> 0.8401: GCN2, whose W2 panel is packed, 0.649 / 0.622
 * / 0.733 -> 0.688 / 0.628 / 0.768 (seed-4 AVX-512 unchanged), GEMM seed-4
 * AVX-512 0.650 -> 0.662, GEMM AVX2 -0.004 / -0.005 (its packing measured
 * 0.96-0.99x, simulated 0.99-1.00x before and after); nothing else moves
 * (no other workload packs). */
#include "sim_impl.h"
#include "sim_machine.h"

/* Does s only loop, let integers and store into packed panels?  *stores
 * counts its stores. */
static int pack_only(const sprog *p, const sst *s, int *stores)
{
    if (!s)
        return 1;
    switch (s->kind) {
    case SS_SEQ:
        for (int i = 0; i < s->items_n; i++)
            if (!pack_only(p, s->items[i], stores))
                return 0;
        return 1;
    case SS_FOR:
        return !s->has_par && pack_only(p, s->body, stores);
    case SS_SETI:
    case SS_NOP:
        return 1;
    case SS_WORK:
        if (s->store_buf < 0 || s->store_buf >= p->f->nbufs || !p->f->bufs[s->store_buf].restrict_ptr)
            return 0;
        (*stores)++;
        return 1;
    default:
        return 0;
    }
}

int loom__sim_pack_phase(const sprog *p, const loom_target *t, const sst *r)
{
    int stores = 0;
    return t->issue_chain_norm > 0 && r->kind == SS_FOR && !r->has_par && !r->vec && pack_only(p, r->body, &stores) &&
           stores > 0;
}

void loom__sim_phase_swap(core *C)
{
    ctr t = C->c;
    C->c = C->c2;
    C->c.events = t.events; /* one running count, in the counters in use */
    C->c2 = t;
    C->c2.events = 0;
}
