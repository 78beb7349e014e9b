/* loom: which local workspaces the simulator keeps in registers (sim.h
 * "Register-resident workspaces"): the rules that take a workspace out of
 * the register file after sim.c has built the statements below it --
 * model 7's partial unroll and model 13's tiles whose unrolled copies share
 * loads.  Declared in sim_impl.h. */
#include <stdlib.h>

#include "sim_impl.h"

/* ---- a partial unroll (model 7) ---- */

void loom__sim_spill_workspaces(sprog *p, const sst *s)
{
    if (!s)
        return;
    if (s->kind == SS_WORK && s->store_buf >= 0)
        p->bufs[s->store_buf].reg = 0;
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++)
        loom__sim_spill_workspaces(p, s->items[i]);
    loom__sim_spill_workspaces(p, s->body);
    loom__sim_spill_workspaces(p, s->els);
}

/* ---- register tiles and the loads their unrolled copies share (model 13) ---- */

/* 1 if e reads a variable marked in dep */
static int sx_reads(const sx *e, const unsigned char *dep)
{
    if (!e)
        return 0;
    if (e->kind == SX_VAR)
        return dep[e->var];
    if (e->kind == SX_AFF)
        for (int k = 0; k < e->nterm; k++)
            if (dep[e->tv[k]])
                return 1;
    return sx_reads(e->a, dep) || sx_reads(e->b, dep);
}

typedef struct tile_scan {
    unsigned char *dep;   /* variables that differ between the unrolled loop's copies */
    int64_t copies;       /* the unrolled loop's trip */
    int64_t shared;       /* vector registers the shared loads hold */
    int tiles[8], ntiles; /* register-resident workspaces the copies update */
} tile_scan;

/* Walk the body of a completely unrolled loop (sim.h "Register-resident
 * workspaces"): mark the lets computed from its variable; in each vector
 * loop of constant trip below it, count the vectors of the loads whose
 * index reads no marked variable (the copies share them, and cc keeps them
 * in registers unless it folds them: sim.h "Unrolled copies") and note the
 * register-resident workspaces it stores to. */
static void tile_walk(const sprog *p, const loom_target *t, const sst *s, tile_scan *w, int64_t nvec)
{
    if (!s)
        return;
    switch (s->kind) {
    case SS_SETI:
        if (sx_reads(s->value, w->dep))
            w->dep[s->var] = 1;
        return;
    case SS_SEQ:
        for (int i = 0; i < s->items_n; i++)
            tile_walk(p, t, s->items[i], w, nvec);
        return;
    case SS_FOR: {
        int64_t lanes = t->vector_bits / 32 > 0 ? t->vector_bits / 32 : 1;
        if (s->vec && s->lo->kind == SX_CONST && s->hi->kind == SX_CONST)
            nvec = (s->hi->ival - s->lo->ival + lanes - 1) / lanes;
        tile_walk(p, t, s->body, w, nvec);
        return;
    }
    case SS_IF:
        tile_walk(p, t, s->body, w, nvec);
        tile_walk(p, t, s->els, w, nvec);
        return;
    case SS_WORK:
        if (nvec <= 0)
            return;
        for (int i = 0; i < s->nacc; i++) {
            const sbuf *B = &p->bufs[s->acc[i].buf];
            int folded = loom_target_folds_shared_load(t, w->copies, nvec);
            if (!B->reg && !sx_reads(s->acc[i].index, w->dep) && !folded)
                w->shared += nvec;
        }
        if (s->store_buf >= 0 && p->bufs[s->store_buf].reg && w->ntiles < 8)
            w->tiles[w->ntiles++] = s->store_buf;
        return;
    default: return;
    }
}

int loom__sim_tile_pressure(sprog *p, const loom_target *t, const sst *r)
{
    if (!r->body || r->lo->kind != SX_CONST || r->hi->kind != SX_CONST || r->hi->ival - r->lo->ival > r->unroll)
        return 0;
    tile_scan w = {calloc((size_t)p->nvars + 1, 1), r->hi->ival - r->lo->ival, 0, {0}, 0};
    if (!w.dep)
        return -1;
    w.dep[r->var] = 1;
    tile_walk(p, t, r->body, &w, 0);
    for (int i = 0; i < w.ntiles && w.shared > 0; i++) {
        sbuf *B = &p->bufs[w.tiles[i]];
        if (B->vecs + w.shared + LOOM_SIM_TILE_TEMP_REGISTERS > t->vector_registers &&
            (double)B->vecs / t->fma_units < LOOM_SIM_SPILL_ROUND_TRIP_CYCLES)
            B->reg = 0;
    }
    free(w.dep);
    return 0;
}
