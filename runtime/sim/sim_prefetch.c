/* A software prefetch's lines (issue 13; sim.h "Software prefetch", models
 * 30, 45, 102 and 103; sim.h "Late prefetches", model 50): sim_exec.c
 * exec_prefetch evaluates the range, this brings its lines in. */
#include <math.h>

#include "sim_impl.h"
#include "sim_machine.h"

/* Model 103: does the range beginning at line l0 continue the constant
 * stride of the prefetch's earlier ranges, as model 49's stride prefetcher
 * follows a load site's misses (within the target's stride_prefetch_lines)?
 * The hardware would have brought such a range's lines for the demand
 * loads as well; the state is kept outside functional warming. */
static int continues_stride(simx *X, core *C, int site, uint64_t l0)
{
    if (X->t->stride_prefetch_lines <= 0 || C->warming)
        return 0;
    uint64_t last = C->last_miss[site];
    int64_t d = (int64_t)(l0 - last);
    int on = last && d == C->last_stride[site] && (d < 0 ? -d : d) <= X->t->stride_prefetch_lines;
    C->last_stride[site] = d;
    C->last_miss[site] = l0;
    return on;
}

void loom__sim_prefetch_lines(struct simx *X, struct core *C, const sst *s, uint64_t a0, uint64_t a1)
{
    int lines = a1 > a0 ? (int)(((a1 - 1) >> X->line_shift) - (a0 >> X->line_shift) + 1) : 0;
    int strided = continues_stride(X, C, s->site, a0 >> X->line_shift);
    for (uint64_t line = a0 >> X->line_shift; (line << X->line_shift) < a1; line++) {
        if (X->seen)
            sampled_first_touch(X, C, s->fill_buf, line);
        int lev = line_access(X, C, line, 0);
        for (int l = 1; l <= lev && l < X->first_shared; l++) /* model 90 (sim_machine.h "Level bandwidth") */
            C->c.pf_acc[l] += 1;
        /* sim.h "Software prefetch" (model 45): a line a private level
           past L1 holds costs the stall its demand access would have --
           the range's first line; the rest of a long range streams from
           there at once, a range shorter than LOOM_SIM_PAIR_RUN_LINES
           comes in 128-byte pairs, as model 77's demand run (model 102),
           unless it continues the prefetch's stride (model 103) */
        int first = line == a0 >> X->line_shift;
        int pair = lines < LOOM_SIM_PAIR_RUN_LINES && !(line & 1) && !strided;
        if (lev > 0 && lev < X->first_shared && X->t->issue_chain_norm > 0 && (first || pair))
            C->c.stall += X->stall_lat[lev];
        /* sim.h "Late prefetches" (model 50): a line from a shared level
           or memory is on its way until that level's latency has passed */
        if (lev >= X->first_shared && X->t->issue_chain_norm > 0) {
            pf_slot *q = &C->pf[pf_slot_of(line)];
            C->npf += !q->line;
            q->line = line + 1;
            q->stamp = C->warming ? -HUGE_VAL : core_clock(X, C); /* model 91: warming keeps no clock, never late */
            q->lev = lev;
            q->lines = lines;
        }
        C->c.iops += 1; /* model 98: an issue slot and an address, not a load port's data path */
        if (!s->peeled) { /* cc's prefetch loop: the address, the counter, compare and branch */
            C->c.iops += 3;
            C->c.br += 1;
        }
    }
}
