/* loom: integer work a completely unrolled loop's copies hoist out of the
 * rolled loops around them (sim.h "Hoisted copies", model 32).  Declared in
 * sim_impl.h. */
#include <stdint.h>
#include <stdlib.h>

#include "sim_impl.h"

/* The walk keeps, per integer variable, the loops around the innermost
 * place its value changes (vary; a completely unrolled loop's variable is a
 * constant in each copy: 0), and for each loop around the statement it
 * visits whether cc unrolls it completely and the trip it hoists work past
 * (0: nothing is hoisted past it -- a parallel loop, a while, a loop of
 * run-time bounds). */
typedef struct hoist_scan {
    int *vary;
    uint32_t *copy; /* per variable: the depths of the unrolled loops whose copies it differs in */
    unsigned char *defs; /* per variable: 2 when assigned more than once */
    int n;
    int complete[LOOM_SIM_HOIST_DEPTH];
    int64_t trip[LOOM_SIM_HOIST_DEPTH];
    const sprog *p;
} hoist_scan;

/* the loops around the innermost change of anything e reads (a load: n,
 * but a load of index data, which the kernel never writes, is a value of
 * its index: model 68) */
static int vary_depth(const sx *e, const hoist_scan *h)
{
    if (!e || e->kind == SX_CONST)
        return 0;
    if (e->kind == SX_LOAD && !h->p->bufs[e->buf].ints)
        return h->n;
    int d = 0;
    if (e->kind == SX_VAR)
        d = h->vary[e->var];
    if (e->kind == SX_AFF)
        for (int k = 0; k < e->nterm; k++)
            d = h->vary[e->tv[k]] > d ? h->vary[e->tv[k]] : d;
    int a = vary_depth(e->a, h), b = vary_depth(e->b, h);
    d = a > d ? a : d;
    return b > d ? b : d;
}

/* the depths of the unrolled loops whose copies compute e differently */
static uint32_t copy_mask(const sx *e, const hoist_scan *h)
{
    if (!e || e->kind == SX_CONST)
        return 0;
    uint32_t m = e->kind == SX_VAR ? h->copy[e->var] : 0;
    for (int k = 0; e->kind == SX_AFF && k < e->nterm; k++)
        m |= h->copy[e->tv[k]];
    return m | copy_mask(e->a, h) | copy_mask(e->b, h);
}

static void count_defs(const sst *s, unsigned char *defs)
{
    if (!s)
        return;
    if ((s->kind == SS_SETI || s->kind == SS_FOR) && s->var >= 0 && defs[s->var] < 2)
        defs[s->var]++;
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++)
        count_defs(s->items[i], defs);
    count_defs(s->body, defs);
    count_defs(s->els, defs);
}

static void walk(hoist_scan *h, sst *s)
{
    if (!s)
        return;
    switch (s->kind) {
    case SS_SEQ:
        for (int i = 0; i < s->items_n; i++)
            walk(h, s->items[i]);
        return;
    case SS_IF:
        walk(h, s->body);
        walk(h, s->els);
        return;
    case SS_FOR:
    case SS_WHILE: {
        if (h->n >= LOOM_SIM_HOIST_DEPTH)
            return; /* a deeper nest: its work is charged per execution */
        int lit = s->kind == SS_FOR && s->lo->kind == SX_CONST && s->hi->kind == SX_CONST;
        int64_t trip = lit ? s->hi->ival - s->lo->ival : 0;
        int complete = lit && !s->vec && s->loop_kind == LIR_LOOP_UNROLLED && trip <= s->unroll;
        int once = lit && !s->vec && s->loop_kind == LIR_LOOP_SERIAL && trip == 1; /* model 57: no loop */
        h->complete[h->n] = complete;
        h->trip[h->n] = lit && trip > 0 && s->loop_kind != LIR_LOOP_PARALLEL ? trip : 0;
        h->n++;
        if (s->kind == SS_FOR) {
            h->vary[s->var] = (complete || once) && h->defs[s->var] < 2 ? 0 : h->n;
            h->copy[s->var] = complete ? (uint32_t)1 << (h->n - 1) : 0;
        }
        walk(h, s->body);
        h->n--;
        return;
    }
    case SS_SETI: {
        int d = h->defs[s->var] < 2 ? vary_depth(s->value, h) : h->n;
        /* copies of a completely unrolled loop between the value's change
           (d) and the statement: each copy's value is invariant in the
           rolled loops in between, which cc hoists it out of; and the
           copies compute the same value, which cc computes once (model 68) */
        uint32_t differ = h->defs[s->var] < 2 ? copy_mask(s->value, h) : ~(uint32_t)0;
        int copies = 0;
        for (int k = d; k < h->n; k++)
            copies |= h->complete[k];
        if (copies) {
            double share = 1;
            for (int k = h->n - 1; k >= d; k--) {
                if (h->complete[k]) { /* model 68: the same in every copy, computed once */
                    if (!(differ >> k & 1))
                        share /= (double)(h->trip[k] > 0 ? h->trip[k] : 1);
                    continue;
                }
                if (h->trip[k] <= 0)
                    break;
                share /= (double)h->trip[k];
            }
            s->hoist_share = share;
        }
        h->vary[s->var] = d;
        h->copy[s->var] = differ;
        return;
    }
    default: return;
    }
}

int loom__sim_hoist_copies(sprog *p, const loom_target *t, sst *root)
{
    if (t->peel_times <= 0) /* a calibrated target's rule (sim.h "Hoisted copies") */
        return 0;
    hoist_scan h = {calloc((size_t)p->nvars + 1, sizeof(int)), calloc((size_t)p->nvars + 1, sizeof(uint32_t)),
                    calloc((size_t)p->nvars + 1, 1), 0, {0}, {0}, p};
    if (!h.vary || !h.copy || !h.defs) {
        free(h.vary);
        free(h.copy);
        free(h.defs);
        return -1;
    }
    count_defs(root, h.defs);
    walk(&h, root);
    free(h.vary);
    free(h.copy);
    free(h.defs);
    return 0;
}
