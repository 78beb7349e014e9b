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
        p->bufs[s->store_buf].reg = p->bufs[s->store_buf].over = 0;
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++)
        loom__sim_spill_workspaces(p, s->items[i]);
    loom__sim_spill_workspaces(p, s->body);
    loom__sim_spill_workspaces(p, s->els);
}

/* ---- register tiles and the loads their unrolled copies share (model 13) ---- */

typedef struct tile_scan {
    unsigned char *dep;   /* variables that differ between the unrolled loop's copies */
    int64_t copies;       /* the unrolled loop's trip */
    int64_t shared;       /* vector registers the shared loads hold */
    int tiles[8], ntiles; /* register-resident workspaces the copies update */
    int64_t tile_nvec[8]; /* the vectors of each one's vector loop, a copy */
    int folded;           /* a shared load of pieces cc folds into the FMAs (model 47) */
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
        if (loom__sim_sx_reads(s->value, w->dep))
            w->dep[s->var] = 1;
        return;
    case SS_SEQ:
        for (int i = 0; i < s->items_n; i++)
            tile_walk(p, t, s->items[i], w, nvec);
        return;
    case SS_FOR: {
        int64_t lanes = loom__sim_lanes(t);
        if (s->vec && s->lo->kind == SX_CONST && s->hi->kind == SX_CONST) {
            int64_t n = s->hi->ival - s->lo->ival;
            nvec = (n + lanes - 1) / lanes;
            if (t->peel_times > 0 && n > 0 && n % lanes) /* model 40: model 39's pieces, a register each */
                nvec = loom__sim_pieces(n, lanes);
        }
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
            int shared = !B->reg && !loom__sim_sx_reads(s->acc[i].index, w->dep);
            if (shared && !loom_target_folds_shared_load(t, w->copies, nvec))
                w->shared += nvec;
            else if (shared && nvec > 1)
                w->folded = 1;
        }
        if (s->store_buf >= 0 && (p->bufs[s->store_buf].reg || p->bufs[s->store_buf].over) && w->ntiles < 8) {
            w->tile_nvec[w->ntiles] = nvec;
            w->tiles[w->ntiles++] = s->store_buf;
        }
        return;
    default: return;
    }
}

int loom__sim_tile_pressure(sprog *p, const loom_target *t, const sst *r)
{
    if (!r->body || r->lo->kind != SX_CONST || r->hi->kind != SX_CONST || r->hi->ival - r->lo->ival > r->unroll)
        return 0;
    tile_scan w = {calloc((size_t)p->nvars + 1, 1), r->hi->ival - r->lo->ival, 0, {0}, 0, {0}, 0};
    if (!w.dep)
        return -1;
    w.dep[r->var] = 1;
    tile_walk(p, t, r->body, &w, 0);
    for (int i = 0; i < w.ntiles; i++) {
        sbuf *B = &p->bufs[w.tiles[i]];
        /* model 40: a copy's vectors are its vector loop's (a row of 7 lanes: three pieces, three
           registers), not the workspace's elements packed into full vectors */
        int64_t vecs = B->vecs;
        if (t->peel_times > 0 && w.copies * w.tile_nvec[i] > vecs)
            vecs = w.copies * w.tile_nvec[i];
        int64_t need = vecs + w.shared + LOOM_SIM_TILE_TEMP_REGISTERS;
        /* model 47: rows of pieces whose shared loads cc folds still load the pieces narrower
           than a register's half (a 2-lane piece: vmovq) into a register of their own */
        if (t->peel_times > 0 && w.folded && vecs != B->vecs)
            need += 1;
        /* model 71: GCC 12's SLP vectorizer packs the narrow pieces of neighbouring copies and
           takes LOOM_SIM_SLP_TEMP_REGISTERS for it; a tile of pieces that fits only without them
           spills (GCN2's 4-row AVX2 T2 tile: 14 of 16 counted, 3 stack round trips an f step in
           its assembly).  A tile already over the file is left as it was: its packing also saves
           accumulators (the 12-row AVX-512 tile's 84 floats in about 21-27 xmm, not 36 pieces),
           and charged on every tile the rule cost GCN2 seed-3 AVX-512 0.05 (docs/simulator.md
           "Model 71"). */
        if (t->peel_times > 0 && vecs != B->vecs && w.copies >= 2 && need <= t->vector_registers &&
            need + LOOM_SIM_SLP_TEMP_REGISTERS > t->vector_registers)
            need += LOOM_SIM_SLP_TEMP_REGISTERS;
        if (need > t->vector_registers && (double)vecs / t->fma_units < LOOM_SIM_SPILL_ROUND_TRIP_CYCLES)
            B->reg = 0;
        else if (t->peel_times > 0 && need > t->vector_registers && need - t->vector_registers < vecs) {
            /* model 33: cc spills what does not fit and keeps the rest */
            int64_t lanes = loom__sim_lanes(t);
            int64_t elems = B->reg_elems;
            B->reg = 1;
            B->spill_excess = loom__sim_spill_excess(need - t->vector_registers);
            B->spill_chain_share = (t->vector_bits >= 512 ? LOOM_SIM_SPILL_CHAIN_CYCLES_512 : LOOM_SIM_SPILL_CHAIN_CYCLES_256) /
                                   (double)(need - t->vector_registers); /* model 97 */
            B->reg_elems = vecs != B->vecs ? elems * (vecs - (need - t->vector_registers)) / vecs
                                           : (B->vecs - (need - t->vector_registers)) * lanes;
        }
    }
    free(w.dep);
    return 0;
}

/* ---- workspaces indexed by a rolled loop (model 25) ---- */

typedef struct roll_scan {
    sprog *p;
    int lanes;  /* floats a vector holds */
    int nvars, nbufs;
    int *depth; /* per variable: the deepest rolled loop (1 = outermost) its value reads; 0 none */
    int *decl;  /* per buffer: loops around its declaration (LIR_S_LOCAL) */
    int cur;    /* loops around the statement walked */
} roll_scan;

static int roll_depth(const roll_scan *w, const lir_expr *e)
{
    if (!e)
        return 0;
    int d = e->kind == LIR_E_VAR && e->var >= 0 && e->var < w->nvars ? w->depth[e->var] : 0;
    int a = roll_depth(w, e->a), b = roll_depth(w, e->b);
    return d > a ? (d > b ? d : b) : (a > b ? a : b);
}

/* a LOCAL workspace accumulated at an index that reads a rolled loop
 * below its declaration leaves the register file */
static void roll_access(roll_scan *w, int buf, const lir_expr *index)
{
    if (buf < 0 || buf >= w->nbufs || !w->p->bufs[buf].local || (!w->p->bufs[buf].reg && !w->p->bufs[buf].over))
        return;
    if (roll_depth(w, index) > w->decl[buf])
        w->p->bufs[buf].reg = w->p->bufs[buf].over = 0;
}

/* 1 when e reads buffers[buf][index] */
static int reads_element(const lir_expr *e, int buf, const lir_expr *index)
{
    if (!e)
        return 0;
    if (e->kind == LIR_E_LOAD && e->buf == buf && loom_lir_expr_equal(e->a, index))
        return 1;
    return reads_element(e->a, buf, index) || reads_element(e->b, buf, index);
}

static int holds_loop(const lir_stmt *s);

/* 1 when cc unrolls the loop s completely: literal bounds and at most
 * LOOM_SIM_CC_PEEL_TIMES iterations (a vector loop: vector iterations;
 * UNROLLED: at most its unroll), every loop inside unrolled completely too
 * (GCC 12's cunroll works from the innermost loop out: GEMM's copy-out of
 * a 6 x 64 tile, 6 rows of 4 zmm, is straight code).  Model 93: a vector
 * loop is also an innermost loop of literal bounds, which cc vectorizes
 * itself (as rolled() below has it) -- SpMM F = 128's tile [1, 1, 4, 32] is
 * 4 copies of 2 zmm, which GCC 12 unrolls and keeps in 8 registers (the
 * assembly of issue 29's mbeacxc records on Zen 4); counted in floats, the
 * 32 took the workspace out of the register file (sim_hoist.c "Merged
 * prefetches" has the measurements). */
static int cc_unrolls(const lir_stmt *s, int lanes)
{
    if (!s)
        return 1;
    switch (s->kind) {
    case LIR_S_SEQ:
        for (int i = 0; i < s->nitems; i++)
            if (!cc_unrolls(s->items[i], lanes))
                return 0;
        return 1;
    case LIR_S_WHILE: return 0;
    case LIR_S_IF: return cc_unrolls(s->body, lanes) && cc_unrolls(s->els, lanes);
    case LIR_S_FOR: {
        if (!s->lo || !s->hi || s->lo->kind != LIR_E_INT || s->hi->kind != LIR_E_INT)
            return 0;
        int64_t trip = s->hi->ival - s->lo->ival;
        if (s->loop_kind == LIR_LOOP_VECTORIZED || !holds_loop(s->body)) /* model 93 */
            trip = (trip + lanes - 1) / lanes;
        if (trip > LOOM_SIM_CC_PEEL_TIMES && !(s->loop_kind == LIR_LOOP_UNROLLED && trip <= s->unroll))
            return 0;
        return cc_unrolls(s->body, lanes);
    }
    default: return 1;
    }
}

/* 1 if s holds a loop */
static int holds_loop(const lir_stmt *s)
{
    if (!s)
        return 0;
    if (s->kind == LIR_S_FOR || s->kind == LIR_S_WHILE)
        return 1;
    for (int i = 0; s->kind == LIR_S_SEQ && i < s->nitems; i++)
        if (holds_loop(s->items[i]))
            return 1;
    return holds_loop(s->body) || holds_loop(s->els);
}

/* 1 when cc keeps the loop's iterations apart in the code: not a vector
 * loop (VECTORIZED, or an innermost loop of literal bounds, which cc
 * vectorizes: loom_lir_is_simd_safe), not one it unrolls completely */
static int rolled(const lir_stmt *s, int lanes)
{
    if (s->loop_kind == LIR_LOOP_VECTORIZED)
        return 0;
    if (s->lo && s->hi && s->lo->kind == LIR_E_INT && s->hi->kind == LIR_E_INT && !holds_loop(s->body))
        return 0; /* the vector loop cc makes of it (sim.h "Vectors": autovectorize) */
    return !cc_unrolls(s, lanes);
}

static void roll_walk(roll_scan *w, const lir_stmt *s)
{
    if (!s)
        return;
    switch (s->kind) {
    case LIR_S_SEQ:
        for (int i = 0; i < s->nitems; i++)
            roll_walk(w, s->items[i]);
        return;
    case LIR_S_LOCAL:
        if (s->buf >= 0 && s->buf < w->nbufs)
            w->decl[s->buf] = w->cur;
        return;
    case LIR_S_LET:
    case LIR_S_ASSIGN:
        if (s->var >= 0 && s->var < w->nvars) {
            int d = roll_depth(w, s->value);
            w->depth[s->var] = s->kind == LIR_S_ASSIGN && w->depth[s->var] > d ? w->depth[s->var] : d;
        }
        return;
    case LIR_S_STORE:
        if (reads_element(s->value, s->buf, s->index))
            roll_access(w, s->buf, s->index);
        return;
    case LIR_S_FOR:
        w->cur++;
        if (s->var >= 0 && s->var < w->nvars)
            w->depth[s->var] = rolled(s, w->lanes) ? w->cur : 0;
        roll_walk(w, s->body);
        w->cur--;
        return;
    case LIR_S_WHILE:
        w->cur++;
        roll_walk(w, s->body);
        w->cur--;
        return;
    case LIR_S_IF:
        roll_walk(w, s->body);
        roll_walk(w, s->els);
        return;
    default: return;
    }
}

int loom__sim_rolled_workspaces(sprog *p, const loom_target *t, const lir_func *f)
{
    roll_scan w = {p, t->vector_bits >= 64 ? t->vector_bits / 32 : 1, f->nvars, f->nbufs,
                   calloc((size_t)f->nvars + 1, sizeof(int)), calloc((size_t)f->nbufs + 1, sizeof(int)), 0};
    if (!w.depth || !w.decl) {
        free(w.depth);
        free(w.decl);
        return -1;
    }
    roll_walk(&w, f->body);
    free(w.depth);
    free(w.decl);
    return 0;
}
