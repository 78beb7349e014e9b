/* loom: integer work a completely unrolled loop's copies hoist out of the
 * rolled loops around them (sim.h "Hoisted copies", model 32), and the
 * prefetches they merge (model 93, below).  Declared in sim_impl.h.
 *
 * Merged prefetches (model 93; on calibrated targets, which have
 * peel_times).  A software prefetch in the body of a completely unrolled
 * loop whose copies prefetch ranges back to back -- its first element's
 * index is affine in the loop's variable with the range's length as the
 * coefficient, nothing else in it differs between the copies -- is one
 * prefetch of the copies' ranges together, issued by the first copy: GCC
 * 12 computes the address once and emits the copies' prefetcht0s at
 * constant offsets, so the later copies add neither the index load nor
 * its arithmetic, and the range's lines come as one run (sim.h "Software
 * prefetch": one first line paying a private level's stall, model 45; one
 * late range, model 50).  Why (issue 29, Zen 4, AVX-512, eightieth
 * session): SpMM mbeacxc F = 128 with F's tile [1, 1, 8, 16] (8 copies of a
 * zmm inside the nonzero loop, each prefetching its 16 floats 4 nonzeros
 * ahead) compiles to the assembly of the 128-wide vector loop and measured
 * 110.6 us against 110.9; simulated 196.6 us against 115.3 (8 index loads,
 * 8 address computations and 8 L2 stalls a nonzero), 115.7 now.  With the
 * same model's cc_unrolls (sim_regs.c: [1, 1, 4, 32] keeps its workspace in
 * registers, 164.2 -> 118.5 us, measured 110.9) and literal copies
 * (sim_chunk.c: [1, 1, 16, 8], 16 copies, 423.8 -> 122.0 us, measured
 * 134.2), mean Spearman over issue 29's 22 re-measured cells 0.8402 ->
 * 0.8425 (docs/simulator.md "Model 93"). */
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
    int lvar[LOOM_SIM_HOIST_DEPTH];    /* each loop's variable (-1: a while) */
    int64_t llo[LOOM_SIM_HOIST_DEPTH]; /* its first value when literal */
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

/* Model 93: 1 when e is affine in v, the variable of the completely
 * unrolled loop at depth k, and nothing else in e differs between that
 * loop's copies; *c its coefficient of v. */
static int copy_coef(const sx *e, const hoist_scan *h, int k, int v, int64_t *c)
{
    uint32_t bit = (uint32_t)1 << k;
    *c = 0;
    if (!e || e->kind == SX_CONST)
        return 1;
    if (e->kind == SX_VAR) {
        *c = e->var == v;
        return e->var == v || !(h->copy[e->var] & bit);
    }
    if (e->kind == SX_AFF) {
        for (int t = 0; t < e->nterm; t++) {
            if (e->tv[t] == v)
                *c += e->tc[t];
            else if (h->copy[e->tv[t]] & bit)
                return 0;
        }
        return 1;
    }
    if (e->kind == SX_BIN && (e->op == LIR_ADD || e->op == LIR_SUB || e->op == LIR_MUL)) {
        int64_t ca, cb;
        if (!copy_coef(e->a, h, k, v, &ca) || !copy_coef(e->b, h, k, v, &cb))
            return 0;
        if (e->op != LIR_MUL)
            *c = e->op == LIR_ADD ? ca + cb : ca - cb;
        else if (e->a->kind == SX_CONST)
            *c = e->a->ival * cb;
        else if (e->b->kind == SX_CONST)
            *c = ca * e->b->ival;
        else
            return ca == 0 && cb == 0;
        return 1;
    }
    return !(copy_mask(e, h) & bit); /* a load, min, max, ...: the same in every copy */
}

/* Model 93 ("Merged prefetches" above): the innermost loop around
 * prefetch s that runs more than once, when cc unrolls it completely and
 * its copies prefetch back to back, merges them. */
static void merge_prefetch(const hoist_scan *h, sst *s)
{
    int k = h->n - 1;
    while (k >= 0 && h->trip[k] == 1) /* loops of one iteration: no copies */
        k--;
    int64_t c;
    if (k < 0 || !h->complete[k] || h->trip[k] < 2 || h->lvar[k] < 0 || s->fill_size->kind != SX_CONST ||
        !copy_coef(s->value, h, k, h->lvar[k], &c) || c != s->fill_size->ival)
        return;
    s->merge_var = h->lvar[k];
    s->merge_lo = h->llo[k];
    s->merge_trip = (int)h->trip[k];
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
        h->lvar[h->n] = s->kind == SS_FOR ? s->var : -1;
        h->llo[h->n] = lit ? s->lo->ival : 0;
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
    case SS_PREFETCH: merge_prefetch(h, s); return;
    default: return;
    }
}

int loom__sim_hoist_copies(sprog *p, const loom_target *t, sst *root)
{
    if (t->peel_times <= 0) /* a calibrated target's rule (sim.h "Hoisted copies") */
        return 0;
    hoist_scan h = {calloc((size_t)p->nvars + 1, sizeof(int)), calloc((size_t)p->nvars + 1, sizeof(uint32_t)),
                    calloc((size_t)p->nvars + 1, 1), 0, {0}, {0}, {0}, {0}, p};
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
