/* What a statement tree of the simulator's form holds (sim.c's build
 * asks these of loop bodies: vector loops, unrolled copies, models 20, 28
 * and 38): float sums, simple and affine bodies, loops and their literal
 * bounds, whole-body costs and memory sites.  Declared in sim_impl.h. */
#include "sim_impl.h"

static void add_cost(scost *a, const scost *b)
{
    a->fp += b->fp;
    a->fadd += b->fadd;
    a->flops += b->flops;
    a->iops += b->iops;
    a->loads += b->loads;
    a->stores += b->stores;
}

/* The float local of the first float sum (WORK rmw 3) in a body without
 * loops or ifs; -1 none. */
int loom__sim_float_sum_var(const sst *s)
{
    if (!s)
        return -1;
    if (s->kind == SS_WORK)
        return s->rmw == 3 ? s->fvar : -1;
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++) {
        int v = loom__sim_float_sum_var(s->items[i]);
        if (v >= 0)
            return v;
    }
    return -1;
}

/* A float sum (WORK with rmw 3) in a body without loops or ifs. */
int loom__sim_has_float_sum(const sst *s)
{
    return loom__sim_float_sum_var(s) >= 0;
}

/* A store to memory (a WORK with a store buffer) anywhere in s. */
int loom__sim_body_stores(const sst *s)
{
    if (!s)
        return 0;
    if (s->kind == SS_WORK)
        return s->store_buf >= 0;
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++)
        if (loom__sim_body_stores(s->items[i]))
            return 1;
    return loom__sim_body_stores(s->body) || loom__sim_body_stores(s->els);
}

int loom__sim_simple_body(const sst *s)
{
    if (!s)
        return 1;
    switch (s->kind) {
    case SS_SEQ:
        for (int i = 0; i < s->items_n; i++)
            if (!loom__sim_simple_body(s->items[i]))
                return 0;
        return 1;
    case SS_SETI:
    case SS_WORK:
    case SS_NOP: return 1;
    default: return 0;
    }
}

/* whole-body static cost (both arms of ifs) and memory sites, for vector loops */
void loom__sim_body_cost(const sst *s, scost *k, int *sites, int *ns, int cap)
{
    if (!s)
        return;
    add_cost(k, &s->c);
    switch (s->kind) {
    case SS_SEQ:
        for (int i = 0; i < s->items_n; i++)
            loom__sim_body_cost(s->items[i], k, sites, ns, cap);
        return;
    case SS_IF:
        loom__sim_body_cost(s->body, k, sites, ns, cap);
        loom__sim_body_cost(s->els, k, sites, ns, cap);
        return;
    case SS_FOR:
    case SS_WHILE: loom__sim_body_cost(s->body, k, sites, ns, cap); return;
    case SS_WORK:
        for (int i = 0; i < s->nacc && *ns < cap; i++)
            sites[(*ns)++] = s->acc[i].site;
        if (s->store_buf >= 0 && *ns < cap)
            sites[(*ns)++] = s->store_site;
        return;
    default: return;
    }
}

static int sx_affine(const sx *e)
{
    return !e || e->kind == SX_CONST || e->kind == SX_VAR || e->kind == SX_AFF;
}

/* a simple body whose every integer expression is affine in the vars */
int loom__sim_affine_body(const sst *s)
{
    if (!s)
        return 1;
    switch (s->kind) {
    case SS_SEQ:
        for (int i = 0; i < s->items_n; i++)
            if (!loom__sim_affine_body(s->items[i]))
                return 0;
        return 1;
    case SS_SETI: return sx_affine(s->value);
    case SS_WORK:
        for (int i = 0; i < s->nacc; i++)
            if (!sx_affine(s->acc[i].index))
                return 0;
        return sx_affine(s->store_index);
    case SS_NOP: return 1;
    default: return 0;
    }
}

static void sx_sites(const sx *e, int *sites, int *ns, int cap)
{
    if (!e)
        return;
    if (e->kind == SX_LOAD && *ns < cap)
        sites[(*ns)++] = e->site;
    sx_sites(e->a, sites, ns, cap);
    sx_sites(e->b, sites, ns, cap);
}

void loom__sim_int_sites(const sst *s, int *sites, int *ns, int cap)
{
    if (!s)
        return;
    sx_sites(s->lo, sites, ns, cap);
    sx_sites(s->hi, sites, ns, cap);
    sx_sites(s->cond, sites, ns, cap);
    sx_sites(s->value, sites, ns, cap);
    sx_sites(s->store_index, sites, ns, cap);
    for (int i = 0; i < s->nacc; i++)
        sx_sites(s->acc[i].index, sites, ns, cap);
    for (int i = 0; i < s->items_n; i++)
        loom__sim_int_sites(s->items[i], sites, ns, cap);
    loom__sim_int_sites(s->body, sites, ns, cap);
    loom__sim_int_sites(s->els, sites, ns, cap);
}

/* 1 if s holds a loop (sim.h "Outer-loop vectors") */
int loom__sim_has_loop(const sst *s)
{
    if (!s)
        return 0;
    if (s->kind == SS_FOR || s->kind == SS_WHILE)
        return 1;
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++)
        if (loom__sim_has_loop(s->items[i]))
            return 1;
    return loom__sim_has_loop(s->body) || loom__sim_has_loop(s->els);
}

/* 1 if every loop in s is a FOR of literal bounds (sim.h "Outer-loop
 * vectors", model 28; a dense tile's fill, "Independent chains", model 38) */
int loom__sim_loops_literal(const sst *s)
{
    if (!s)
        return 1;
    if (s->kind == SS_WHILE)
        return 0;
    if (s->kind == SS_FOR && (s->lo->kind != SX_CONST || s->hi->kind != SX_CONST))
        return 0;
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++)
        if (!loom__sim_loops_literal(s->items[i]))
            return 0;
    return loom__sim_loops_literal(s->body) && loom__sim_loops_literal(s->els);
}

/* 1 if integer expression e reads a variable marked in on (sim_regs.c's
 * copies of a register tile, sim.c's CSR row fills, model 56) */
int loom__sim_sx_reads(const sx *e, const unsigned char *on)
{
    if (!e)
        return 0;
    if (e->kind == SX_VAR)
        return on[e->var];
    if (e->kind == SX_AFF)
        for (int k = 0; k < e->nterm; k++)
            if (on[e->tv[k]])
                return 1;
    return loom__sim_sx_reads(e->a, on) || loom__sim_sx_reads(e->b, on);
}
