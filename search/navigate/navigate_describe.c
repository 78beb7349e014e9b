/* What a hole's choices mean, in the schedule's words (navigate.h,
 * loom_nav_describe / loom_nav_context): loop orders by their loops' names
 * (the names `loom plan describe` gives them: plan.h), tiles by the loop
 * they split, categoricals by the instruction their value feeds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../dsl/schedule/inst.h"
#include "../../dsl/schedule/query.h"
#include "navigate.h"
#include "../plan/plan.h"

static const char *loop_name(const loom_schedule *sch, int rv, char *buf, size_t n)
{
    if (rv < 0 || rv >= sch->nrvs)
        return "?";
    return loom_iter_name(sch, sch->rvs[rv].stage, sch->rvs[rv].iter, buf, n);
}

/* Legal order v of the block as "[i, k, f]": index variables (plan.h's
 * text) when each loop is one variable, else the loops' own names. */
static void order_meaning(const loom_schedule *sch, const loom_inst *proto, int64_t v, char *buf, size_t cap)
{
    int s = sch->rvs[proto->inputs[0]].stage, len = 0;
    const loom_stage *S = &sch->stages[s];
    int(*orders)[LOOM_MAX_LOOPS] = malloc(sizeof(int[LOOM_MAX_LOOPS]) * (size_t)(v + 1));
    int n = orders ? loom_plan_stage_orders(sch, s, orders, &len, (int)v + 1) : 0;
    int distinct = n > v, seen[LOOM_MAX_VARS] = {0};
    for (int q = 0; distinct && q < len; q++) {
        int x = orders[v][q];
        distinct = x >= 0 && x < LOOM_MAX_VARS && !seen[x];
        if (distinct)
            seen[x] = 1;
    }
    if (distinct) {
        loom_plan_order_text(sch->prog, orders[v], len, buf, cap);
    } else if (n > v) { /* split loops: name each by its loop */
        int(*pos)[LOOM_MAX_LOOPS] = malloc(sizeof(int[LOOM_MAX_LOOPS]) * (size_t)(v + 1));
        size_t l = (size_t)snprintf(buf, cap, "[");
        if (pos && loom_legal_loop_orders(sch, s, pos, (int)v + 1) > v)
            for (int q = 0; q < S->nloops && l < cap; q++) {
                char nm[64];
                l += (size_t)snprintf(buf + l, cap - l, "%s%s", q ? ", " : "",
                                      loom_iter_name(sch, s, S->loops[pos[v][q]].iter, nm, sizeof nm));
            }
        if (l < cap)
            snprintf(buf + l, cap - l, "]");
        free(pos);
    } else {
        snprintf(buf, cap, "legal order %lld", (long long)v);
    }
    free(orders);
}

static void tile_meaning(const loom_schedule *sch, const loom_inst *proto, const loom_nav_value *v, char *buf,
                         size_t cap)
{
    char nm[64];
    size_t l = (size_t)snprintf(buf, cap, "%s: ", loop_name(sch, proto->inputs[0], nm, sizeof nm));
    for (int k = 0; k < v->n && l < cap; k++) {
        if (v->v[k] == 0)
            l += (size_t)snprintf(buf + l, cap - l, "%sinferred", k ? " x " : "");
        else
            l += (size_t)snprintf(buf + l, cap - l, "%s%lld", k ? " x " : "", (long long)v->v[k]);
    }
}

/* The words for categorical value x flowing into instruction `in` (of the
 * sketch's trace; its loops named in the sketch's schedule). */
static size_t feed_meaning(const loom_schedule *sch, const loom_inst *in, int64_t x, char *buf, size_t cap)
{
    char nm[64];
    const char *yes = x ? "yes" : "no";
    if (in->kind == LOOM_INST_CACHE_WRITE && in->ninputs == 3)
        return (size_t)snprintf(buf, cap, "workspace at %s: %s", loop_name(sch, in->inputs[1], nm, sizeof nm), yes);
    if (in->kind == LOOM_INST_POS_SPLIT)
        return x ? (size_t)snprintf(buf, cap, "split %s's positions: chunks of %lld", loop_name(sch, in->inputs[0], nm,
                                                                                               sizeof nm), (long long)x)
                 : (size_t)snprintf(buf, cap, "split %s's positions: no (whole rows)",
                                    loop_name(sch, in->inputs[0], nm, sizeof nm));
    if (in->kind != LOOM_INST_ANNOTATE) {
        const loom_inst_kind *K = loom_inst_kind_at(in->kind);
        return (size_t)snprintf(buf, cap, "%s value %lld", K ? K->name : "?", (long long)x);
    }
    const char *key = in->sattr, *loop = loop_name(sch, in->inputs[0], nm, sizeof nm);
    if (!strcmp(key, LOOM_ANN_STREAM))
        return (size_t)snprintf(buf, cap, "stream stores: %s", x == LOOM_STREAM_ON ? "yes" : "no");
    if (!strcmp(key, LOOM_ANN_UNROLL))
        return x > 1 ? (size_t)snprintf(buf, cap, "unroll %s: x%lld", loop, (long long)x)
                     : (size_t)snprintf(buf, cap, "unroll %s: no", loop);
    if (!strcmp(key, LOOM_ANN_BALANCE))
        return x ? (size_t)snprintf(buf, cap, "balance %s: %lld chunks of equal nonzeros", loop, (long long)x)
                 : (size_t)snprintf(buf, cap, "balance %s: no (equal rows)", loop);
    if (!strcmp(key, LOOM_ANN_PREFETCH))
        return x ? (size_t)snprintf(buf, cap, "prefetch on %s: %lld entries ahead", loop, (long long)x)
                 : (size_t)snprintf(buf, cap, "prefetch on %s: no", loop);
    if (!strcmp(key, LOOM_ANN_PARTIAL_SUMS))
        return (size_t)snprintf(buf, cap, "partial sums on %s: %s", loop, yes);
    return (size_t)snprintf(buf, cap, "%s on %s: %lld", key, loop, (long long)x);
}

/* A categorical: the instructions its value feeds in the sketch. */
static void categorical_meaning(loom_nav *nav, const loom_nav_hole *H, int64_t idx, char *buf, size_t cap)
{
    const loom_trace *t = loom_nav_trace(nav);
    const loom_schedule *sch = loom_nav_schedule(nav);
    buf[0] = 0;
    if (H->inst < 0 || H->inst >= t->ninsts || idx < 0 || idx >= t->insts[H->inst].nattrs)
        return;
    const loom_inst *c = &t->insts[H->inst];
    int64_t x = c->attrs[idx];
    int rv = c->noutputs ? c->outputs[0] : -1, nfeeds = 0;
    size_t l = 0;
    for (int i = H->inst + 1; i < t->ninsts && l < cap && nfeeds < 3; i++) {
        const loom_inst *in = &t->insts[i];
        int feeds = 0;
        for (int k = 0; k < in->ninputs; k++)
            feeds |= in->inputs[k] == rv;
        if (!feeds || loom_nav_is_sampler(in->kind))
            continue;
        if (nfeeds++)
            l += (size_t)snprintf(buf + l, cap - l, ", ");
        if (l < cap)
            l += feed_meaning(sch, in, x, buf + l, cap - l);
    }
    if (!nfeeds)
        snprintf(buf, cap, "value %lld", (long long)x);
}

static void fusion_meaning(const loom_schedule *sch, int64_t mask, char *buf, size_t cap)
{
    int prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS];
    int ne = loom_fusion_edges(sch, prod, cons, NULL);
    const loom_program *prog = sch->prog;
    size_t l = (size_t)snprintf(buf, cap, "fuse: ");
    int any = 0;
    for (int e = 0; e < ne && e < 62 && l < cap; e++)
        if (mask >> e & 1)
            l += (size_t)snprintf(buf + l, cap - l, "%s%s into %s", any++ ? ", " : "",
                                  prog->tensors[prog->stmts[prod[e]].lhs].name,
                                  prog->tensors[prog->stmts[cons[e]].lhs].name);
    if (!any)
        snprintf(buf, cap, "fuse: nothing");
}

void loom_nav_describe(loom_nav *nav, const loom_nav_value *v, char *buf, size_t cap)
{
    const loom_inst *proto = NULL;
    const loom_schedule *at = loom_nav_call(nav, &proto);
    loom_nav_state st;
    loom_nav_get_state(nav, &st);
    int nh;
    const loom_nav_hole *holes = loom_nav_holes(nav, &nh);
    buf[0] = 0;
    if (st.current < 0 || cap == 0)
        return;
    if (v->kind == LOOM_INST_SAMPLE_CATEGORICAL)
        categorical_meaning(nav, &holes[st.current], v->v[0], buf, cap);
    else if (v->kind == LOOM_INST_SAMPLE_COMPUTE_LOCATION)
        snprintf(buf, cap, "%s", v->v[0] == LOOM_AT_INLINE ? "inline" : v->v[0] == LOOM_AT_ROOT ? "root" : "");
    if (v->kind == LOOM_INST_SAMPLE_COMPUTE_LOCATION && v->v[0] >= 0)
        snprintf(buf, cap, "at the consumer's loop %lld (0 = outermost)", (long long)v->v[0]);
    if (!at)
        return;
    if (v->kind == LOOM_INST_SAMPLE_LOOP_ORDER)
        order_meaning(at, proto, v->v[0], buf, cap);
    else if (v->kind == LOOM_INST_SAMPLE_PERFECT_TILE)
        tile_meaning(at, proto, v, buf, cap);
    else if (v->kind == LOOM_INST_SAMPLE_FUSION_GROUP)
        fusion_meaning(at, v->v[0], buf, cap);
}

void loom_nav_context(loom_nav *nav, char *buf, size_t cap)
{
    const loom_inst *proto = NULL;
    const loom_schedule *at = loom_nav_call(nav, &proto);
    buf[0] = 0;
    if (!at || cap == 0)
        return;
    char nm[64];
    const loom_program *prog = at->prog;
    int kind = proto->kind;
    if (kind == LOOM_INST_SAMPLE_PERFECT_TILE) {
        const loom_rv *r = &at->rvs[proto->inputs[0]];
        int64_t e = loom_iter_extent(at, r->stage, r->iter);
        char ext[32] = "data-dependent";
        if (e > 0)
            snprintf(ext, sizeof ext, "%lld", (long long)e);
        snprintf(buf, cap, "loop %s (extent %s) of block %s into %d tiles, outermost first",
                 loom_iter_name(at, r->stage, r->iter, nm, sizeof nm), ext,
                 prog->tensors[prog->stmts[r->stage].lhs].name, (int)proto->attrs[0]);
    } else if (kind == LOOM_INST_SAMPLE_LOOP_ORDER || kind == LOOM_INST_SAMPLE_COMPUTE_LOCATION) {
        int s = at->rvs[proto->inputs[0]].stage;
        const loom_stage *S = &at->stages[s];
        size_t l = (size_t)snprintf(buf, cap, "block %s, loops", prog->tensors[prog->stmts[s].lhs].name);
        for (int q = 0; q < S->nloops && l < cap; q++) {
            int64_t e = loom_iter_extent(at, s, S->loops[q].iter);
            int x = loom_iter_var(S, S->loops[q].iter);
            int sparse = x >= 0 && loom_var_is_compressed(at, s, x);
            char ext[32] = "data-dependent";
            if (e > 0)
                snprintf(ext, sizeof ext, "%lld", (long long)e);
            l += (size_t)snprintf(buf + l, cap - l, "%s %s (%s%s)", q ? "," : "",
                                  loom_iter_name(at, s, S->loops[q].iter, nm, sizeof nm), ext,
                                  sparse ? ", sparse" : "");
        }
    }
}
