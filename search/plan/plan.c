/* Fusion plans (plan.h; AutoSparse, Lacouture et al. 2025): the context,
 * legal orders, the cost estimate, reading and checking plans, and putting
 * a plan's decisions into a trace.  The describe JSON is in plan_describe.c. */
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_rng.h>

#include "../../dsl/schedule/inst.h"
#include "../../dsl/schedule/query.h"
#include "../../traces/validate.h"

static const char *op_name(const loom_program *prog, int s) { return prog->tensors[prog->stmts[s].lhs].name; }

loom_status loom_plan_ctx_init(loom_plan_ctx *c, const loom_program *prog, const loom_dataset *ds,
                               const loom_reference *ref, const loom_target *t, loom_error *err)
{
    memset(c, 0, sizeof *c);
    c->prog = prog;
    c->ds = ds;
    c->ref = ref;
    c->target = t;
    c->fresh = malloc(sizeof *c->fresh);
    if (!c->fresh)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory for a schedule");
    loom_status st = loom_schedule_init(c->fresh, prog, NULL, err);
    if (st) {
        free(c->fresh);
        c->fresh = NULL;
        return st;
    }
    c->nedges = loom_fusion_edges(c->fresh, c->prod, c->cons, NULL);
    if (!t)
        return LOOM_OK; /* plans are read and drawn, not costed */
    /* fp32 lanes x 2 FLOPs per FMA x FMA units x cores x GHz */
    c->peak_flops = (double)t->cores * (t->fma_units > 0 ? t->fma_units : 1) * (t->vector_bits / 32) * 2.0 *
                    t->ghz * 1e9;
    c->bandwidth = t->mem_bandwidth > 0 ? t->mem_bandwidth : 1e10;
    c->balance = c->peak_flops / c->bandwidth;
    return LOOM_OK;
}

void loom_plan_ctx_free(loom_plan_ctx *c)
{
    free(c->fresh);
    c->fresh = NULL;
}

int loom_plan_stage_orders(const loom_schedule *sch, int s, int (*orders)[LOOM_MAX_LOOPS], int *norder, int max)
{
    int (*tmp)[LOOM_MAX_LOOPS] = malloc(sizeof(int[LOOM_MAX_LOOPS]) * (size_t)(max > 0 ? max : 1));
    *norder = sch->stages[s].nloops;
    if (!tmp)
        return 0;
    const loom_stage *S = &sch->stages[s];
    int n = loom_legal_loop_orders(sch, s, tmp, max);
    for (int k = 0; k < n; k++)
        for (int q = 0; q < S->nloops; q++)
            orders[k][q] = loom_iter_var(S, S->loops[tmp[k][q]].iter);
    free(tmp);
    return n;
}

int loom_plan_orders(const loom_plan_ctx *c, int s, int (*orders)[LOOM_MAX_LOOPS], int *norder, int max)
{
    return loom_plan_stage_orders(c->fresh, s, orders, norder, max);
}

/* ---- cost ------------------------------------------------------------------ */

/* Bytes of tensor t moved once: its values (4 bytes each), and for a
 * sparse tensor with its own pattern, the coordinates and row pointers. */
static double tensor_bytes(const loom_plan_ctx *c, int t)
{
    const loom_tensor *T = &c->prog->tensors[t];
    double vals = c->ref && c->ref->vals[t] ? (double)c->ref->nvals[t] : 0;
    if (T->pattern_of < 0) {
        double n = 1;
        for (int d = 0; d < T->order; d++)
            n *= (double)loom_program_dim(c->prog, t, d);
        return 4.0 * n;
    }
    double b = 4.0 * vals;
    if (T->pattern_of == t && c->ds) {
        const loom_tensor_abi *A = &c->ds->t[t];
        b += 4.0 * (double)A->nnz + 4.0 * (double)(A->dims[0] + 1);
    }
    return b;
}

static void op_cost(const loom_plan_ctx *c, int s, double *flops, double *bytes)
{
    const loom_program *prog = c->prog;
    *flops = c->ref ? c->ref->stmt_flops[s] : 0;
    int seen[LOOM_MAX_TENSORS] = {0};
    double b = tensor_bytes(c, prog->stmts[s].lhs);
    seen[prog->stmts[s].lhs] = 1;
    for (int t = 0; t < prog->ntensors; t++)
        if (!seen[t] && loom_expr_reads(prog, prog->stmts[s].rhs, t)) {
            seen[t] = 1;
            b += tensor_bytes(c, t);
        }
    *bytes = b;
}

/* How many times fused producer p's work is done inside its consumer q:
 * at q's deepest offered loop, the extents of q's free loops down to it
 * that do not index p; inlined, points(q) / points(p). */
static double recompute(const loom_plan_ctx *c, int p, int q)
{
    int64_t cand[2 + LOOM_MAX_LOOPS];
    int nc = loom_compute_location_candidates(c->fresh, p, cand), deepest = -3;
    for (int k = 0; k < nc; k++)
        if (cand[k] > deepest)
            deepest = (int)cand[k];
    if (deepest == LOOM_AT_INLINE) {
        double pp = c->ref ? (double)c->ref->stmt_points[p] : 1, qq = c->ref ? (double)c->ref->stmt_points[q] : 1;
        return pp > 0 && qq > pp ? qq / pp : 1;
    }
    if (deepest < 0)
        return 1;
    int map[LOOM_MAX_ORDER];
    if (loom_compute_at_map(c->fresh, p, q, map) != 0)
        return 1;
    const loom_stage *Q = &c->fresh->stages[q];
    int order = c->prog->tensors[c->prog->stmts[p].lhs].order;
    double f = 1;
    for (int k = 0; k <= deepest && k < Q->nloops; k++) {
        int v = loom_iter_var(Q, Q->loops[k].iter), indexes = 0;
        for (int d = 0; d < order; d++)
            indexes |= v >= 0 && map[d] == v;
        if (!indexes) {
            int64_t e = loom_iter_extent(c->fresh, q, Q->loops[k].iter);
            f *= e > 0 ? (double)e : 1;
        }
    }
    return f;
}

static void finish_cost(const loom_plan_ctx *c, loom_plan_cost *out)
{
    out->intensity = out->bytes > 0 ? out->flops / out->bytes : 0;
    out->compute_bound = out->intensity >= c->balance;
    double tc = out->flops / c->peak_flops, tm = out->bytes / c->bandwidth;
    out->roofline_s = tc > tm ? tc : tm;
}

void loom_plan_group_cost(const loom_plan_ctx *c, const loom_plan_group *g, loom_plan_cost *out)
{
    memset(out, 0, sizeof *out);
    int in[LOOM_MAX_STMTS] = {0};
    for (int k = 0; k < g->nops; k++)
        in[g->ops[k]] = 1;
    for (int k = 0; k < g->nops; k++) {
        int s = g->ops[k];
        double f, b;
        op_cost(c, s, &f, &b);
        if (s != g->root) {
            /* fused into its consumer: recomputed there, its temporary
             * neither written nor read back */
            int q = -1;
            for (int e = 0; e < c->nedges; e++)
                if (c->prod[e] == s)
                    q = c->cons[e];
            if (q >= 0 && in[q]) {
                f *= recompute(c, s, q);
                b -= 2 * tensor_bytes(c, c->prog->stmts[s].lhs);
            }
        }
        out->flops += f;
        out->bytes += b;
    }
    if (out->bytes < 0)
        out->bytes = 0;
    finish_cost(c, out);
}

void loom_plan_cost_of(const loom_plan_ctx *c, const loom_plan *p, loom_plan_cost *out)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < p->ngroups; k++) {
        loom_plan_cost g;
        loom_plan_group_cost(c, &p->groups[k], &g);
        out->flops += g.flops;
        out->bytes += g.bytes;
    }
    finish_cost(c, out);
}

/* ---- plans from masks -------------------------------------------------------- */

/* The group root of stage s under mask: follow fused edges to the end. */
static int root_of(const loom_plan_ctx *c, int64_t mask, int s)
{
    for (int guard = 0; guard < LOOM_MAX_STMTS; guard++) {
        int next = -1;
        for (int e = 0; e < c->nedges; e++)
            if (c->prod[e] == s && (mask >> e & 1))
                next = c->cons[e];
        if (next < 0)
            return s;
        s = next;
    }
    return s;
}

void loom_plan_from_mask(const loom_plan_ctx *c, int64_t mask, loom_plan *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "mask%lld", (long long)mask);
    p->mask = mask;
    int gid[LOOM_MAX_STMTS];
    for (int s = 0; s < c->prog->nstmts; s++)
        gid[s] = -1;
    for (int s = c->prog->nstmts - 1; s >= 0; s--) {
        int r = root_of(c, mask, s);
        if (gid[r] < 0) {
            loom_plan_group *g = &p->groups[p->ngroups];
            gid[r] = p->ngroups++;
            g->root = r;
            snprintf(g->name, sizeof g->name, "%s", op_name(c->prog, r));
        }
        loom_plan_group *g = &p->groups[gid[r]];
        g->ops[g->nops++] = s;
    }
    /* ops in program order inside each group */
    for (int k = 0; k < p->ngroups; k++) {
        loom_plan_group *g = &p->groups[k];
        for (int a = 0; a < g->nops / 2; a++) {
            int t = g->ops[a];
            g->ops[a] = g->ops[g->nops - 1 - a];
            g->ops[g->nops - 1 - a] = t;
        }
    }
}

/* ---- reading and checking plans ---------------------------------------------- */

static int find_op(const loom_program *prog, const char *name)
{
    for (int s = 0; s < prog->nstmts; s++)
        if (!strcmp(op_name(prog, s), name))
            return s;
    return -1;
}

static void list_ops(const loom_program *prog, char *buf, size_t n)
{
    buf[0] = 0;
    for (int s = 0; s < prog->nstmts; s++) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s", s ? ", " : "", op_name(prog, s));
    }
}

void loom_plan_order_text(const loom_program *prog, const int *o, int n, char *buf, size_t cap)
{
    size_t l = (size_t)snprintf(buf, cap, "[");
    for (int q = 0; q < n && l < cap; q++)
        l += (size_t)snprintf(buf + l, cap - l, "%s%s", q ? ", " : "", o[q] >= 0 ? prog->vars[o[q]].name : "?");
    if (l < cap)
        snprintf(buf + l, cap - l, "]");
}

/* The group's structure: every op but one (the root) has its consumer in
 * the group through an offered edge. */
static loom_status check_group(const loom_plan_ctx *c, const char *pn, loom_plan_group *g, int64_t *mask,
                               loom_error *err)
{
    const loom_program *prog = c->prog;
    int in[LOOM_MAX_STMTS] = {0};
    for (int k = 0; k < g->nops; k++)
        in[g->ops[k]] = 1;
    g->root = -1;
    for (int k = 0; k < g->nops; k++) {
        int s = g->ops[k], q;
        char why[256];
        int legal = loom_fusion_edge_legal(c->fresh, s, &q, why, sizeof why);
        if (q >= 0 && in[q]) {
            if (legal != 1)
                return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                      "plan %s, group %s: op %s cannot be fused into %s: %s", pn, g->name,
                                      op_name(prog, s), op_name(prog, q),
                                      legal == 0 ? why : "the program's reductions chain is attention-fusion's");
            for (int e = 0; e < c->nedges; e++)
                if (c->prod[e] == s)
                    *mask |= (int64_t)1 << e;
            continue;
        }
        if (g->root >= 0)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "plan %s, group %s: ops %s and %s are not connected: each leaves the group (a "
                                  "group is one producer->consumer tree; split it in two)",
                                  pn, g->name, op_name(prog, g->root), op_name(prog, s));
        g->root = s;
    }
    return LOOM_OK;
}

static loom_status read_order(const loom_plan_ctx *c, const char *pn, loom_plan_group *g, const cJSON *arr,
                              loom_error *err)
{
    const loom_program *prog = c->prog;
    const loom_stage *S = &c->fresh->stages[g->root];
    int n = cJSON_GetArraySize(arr);
    if (n == 0)
        return LOOM_OK;
    int seen[LOOM_MAX_VARS] = {0};
    for (int k = 0; k < n; k++) {
        const cJSON *x = cJSON_GetArrayItem(arr, k);
        if (!cJSON_IsString(x) || k >= LOOM_MAX_LOOPS)
            return loom_error_set(err, LOOM_ERR_PARSE, NULL, 0, 0,
                                  "plan %s, group %s: dataflow_order must be a list of index names", pn, g->name);
        int v = -1;
        for (int q = 0; q < S->nloops; q++) {
            int x2 = loom_iter_var(S, S->loops[q].iter);
            if (x2 >= 0 && !strcmp(prog->vars[x2].name, x->valuestring))
                v = x2;
        }
        if (v < 0 || seen[v]) {
            char all[256];
            int o[LOOM_MAX_LOOPS];
            for (int q = 0; q < S->nloops; q++)
                o[q] = loom_iter_var(S, S->loops[q].iter);
            loom_plan_order_text(prog, o, S->nloops, all, sizeof all);
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "plan %s, group %s: illegal dataflow order: index %s %s op %s (its root), whose "
                                  "indices are %s",
                                  pn, g->name, x->valuestring, v < 0 ? "is not an index of" : "is repeated for",
                                  op_name(prog, g->root), all);
        }
        seen[v] = 1;
        g->order[g->norder++] = v;
    }
    int(*orders)[LOOM_MAX_LOOPS] = malloc(sizeof(int[LOOM_MAX_LOOPS]) * LOOM_PLAN_MAX_ORDERS);
    if (!orders)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int len, no = loom_plan_orders(c, g->root, orders, &len, LOOM_PLAN_MAX_ORDERS), ok = 0;
    for (int k = 0; k < no && !ok; k++)
        ok = len == g->norder && !memcmp(orders[k], g->order, sizeof(int) * (size_t)len);
    loom_status st = LOOM_OK;
    if (!ok) {
        char got[256], legal[1024] = "";
        loom_plan_order_text(prog, g->order, g->norder, got, sizeof got);
        for (int k = 0; k < no; k++) {
            char one[256];
            size_t l = strlen(legal);
            loom_plan_order_text(prog, orders[k], len, one, sizeof one);
            snprintf(legal + l, sizeof legal - l, "%s%s", k ? ", " : "", one);
        }
        st = loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                            "plan %s, group %s: illegal dataflow order %s for op %s: %s; legal orders: %s", pn,
                            g->name, got, op_name(prog, g->root),
                            len != g->norder ? "it must name every index of the op once"
                                             : "a sparse operand would be traversed out of its level order "
                                               "(random access into compressed storage)",
                            legal);
    }
    free(orders);
    return st;
}

/* A plan's faults as they are found (plan.h loom_plan_verdict). */
static void add_fault(loom_plan_verdict *v, const loom_error *e)
{
    if (v->nfaults < LOOM_PLAN_MAX_FAULTS) {
        v->status[v->nfaults] = e->status;
        snprintf(v->fault[v->nfaults], sizeof v->fault[0], "%s", e->msg);
    }
    v->nfaults++;
    v->legal = 0;
}

/* One group's name and ops: each unknown op and each op already in
 * another group is a fault of its own (the group keeps its other ops). */
static void read_group_ops(const loom_plan_ctx *c, loom_plan *p, const cJSON *g, int *owner, loom_plan_verdict *v)
{
    const loom_program *prog = c->prog;
    loom_plan_group *G = &p->groups[p->ngroups];
    const cJSON *gn = cJSON_GetObjectItemCaseSensitive(g, "name");
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(g, "ops");
    loom_error e;
    if (cJSON_IsString(gn))
        snprintf(G->name, sizeof G->name, "%s", gn->valuestring);
    else
        snprintf(G->name, sizeof G->name, "#%d", p->ngroups + 1);
    p->ngroups++;
    if (!cJSON_IsArray(ops) || cJSON_GetArraySize(ops) == 0) {
        loom_error_set(&e, LOOM_ERR_PARSE, NULL, 0, 0,
                       "plan %s, group %s: \"ops\" must be a non-empty list of operator names", p->name, G->name);
        add_fault(v, &e);
        return;
    }
    const cJSON *o;
    cJSON_ArrayForEach(o, ops)
    {
        int s = cJSON_IsString(o) ? find_op(prog, o->valuestring) : -1;
        if (s < 0) {
            char all[512];
            list_ops(prog, all, sizeof all);
            loom_error_set(&e, LOOM_ERR_SEMANTIC, NULL, 0, 0, "plan %s, group %s: unknown op %s (the operators are %s)",
                           p->name, G->name, cJSON_IsString(o) ? o->valuestring : "(not a string)", all);
            add_fault(v, &e);
        } else if (owner[s] >= 0) {
            loom_error_set(&e, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                           "plan %s: op %s is in two groups, %s and %s (each op belongs to exactly one)", p->name,
                           op_name(prog, s), p->groups[owner[s]].name, G->name);
            add_fault(v, &e);
        } else {
            owner[s] = p->ngroups - 1;
            G->ops[G->nops++] = s;
        }
    }
}

/* Every group's structure, then (when it holds) its dataflow order. */
static void check_groups(const loom_plan_ctx *c, loom_plan *p, const cJSON *gs, loom_plan_verdict *v)
{
    int k = 0;
    const cJSON *g;
    loom_error e;
    cJSON_ArrayForEach(g, gs)
    {
        loom_plan_group *G = &p->groups[k++];
        if (G->nops == 0)
            continue; /* its ops were faults already */
        if (check_group(c, p->name, G, &p->mask, &e)) {
            add_fault(v, &e);
            continue;
        }
        const cJSON *ord = cJSON_GetObjectItemCaseSensitive(g, "dataflow_order");
        if (ord && !cJSON_IsArray(ord)) {
            loom_error_set(&e, LOOM_ERR_PARSE, NULL, 0, 0,
                           "plan %s, group %s: dataflow_order must be a list of index names", p->name, G->name);
            add_fault(v, &e);
        } else if (ord && read_order(c, p->name, G, ord, &e)) {
            add_fault(v, &e);
        }
    }
}

/* Read plan #index into p, every fault found into v. */
static void read_plan(const loom_plan_ctx *c, const cJSON *obj, int index, loom_plan *p, loom_plan_verdict *v)
{
    const loom_program *prog = c->prog;
    memset(p, 0, sizeof *p);
    v->legal = 1;
    v->nfaults = 0;
    loom_error e;
    const cJSON *nm = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, "name") : NULL;
    if (cJSON_IsString(nm))
        snprintf(p->name, sizeof p->name, "%s", nm->valuestring);
    else
        snprintf(p->name, sizeof p->name, "#%d", index + 1);
    const cJSON *gs = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, "fusion_groups") : NULL;
    if (!cJSON_IsObject(obj) || !cJSON_IsArray(gs) || cJSON_GetArraySize(gs) == 0) {
        loom_error_set(&e, LOOM_ERR_PARSE, NULL, 0, 0, "plan %s: %s", p->name,
                       cJSON_IsObject(obj) ? "\"fusion_groups\" must be a non-empty list" : "a plan is an object");
        add_fault(v, &e);
        return;
    }
    if (cJSON_GetArraySize(gs) > LOOM_MAX_STMTS) {
        loom_error_set(&e, LOOM_ERR_SEMANTIC, NULL, 0, 0, "plan %s: %d groups for %d ops", p->name,
                       cJSON_GetArraySize(gs), prog->nstmts);
        add_fault(v, &e);
        return;
    }
    int owner[LOOM_MAX_STMTS];
    for (int s = 0; s < LOOM_MAX_STMTS; s++)
        owner[s] = -1;
    const cJSON *g;
    cJSON_ArrayForEach(g, gs) read_group_ops(c, p, g, owner, v);
    for (int s = 0; s < prog->nstmts; s++)
        if (owner[s] < 0) {
            loom_error_set(&e, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                           "plan %s: op %s is in no group (every op belongs to exactly one; a group of its own "
                           "leaves it unfused)",
                           p->name, op_name(prog, s));
            add_fault(v, &e);
        }
    check_groups(c, p, gs, v);
}

loom_status loom_plan_check(const loom_plan_ctx *c, const char *json, const char *source, loom_plan **plans,
                            loom_plan_verdict **verdicts, int *n, loom_error *err)
{
    *plans = NULL;
    *verdicts = NULL;
    *n = 0;
    cJSON *root = cJSON_Parse(json);
    if (!root)
        return loom_error_set(err, LOOM_ERR_PARSE, source, 0, 0, "not valid JSON (near \"%.20s\")",
                              cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "");
    int count = cJSON_IsArray(root) ? cJSON_GetArraySize(root) : 1;
    if (!cJSON_IsArray(root) && !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return loom_error_set(err, LOOM_ERR_PARSE, source, 0, 0, "a plan is an object, or a list of them");
    }
    loom_plan *ps = calloc((size_t)(count > 0 ? count : 1), sizeof *ps);
    loom_plan_verdict *vs = calloc((size_t)(count > 0 ? count : 1), sizeof *vs);
    if (!ps || !vs) {
        free(ps);
        free(vs);
        cJSON_Delete(root);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory for %d plans", count);
    }
    for (int k = 0; k < count; k++)
        read_plan(c, cJSON_IsArray(root) ? cJSON_GetArrayItem(root, k) : root, k, &ps[k], &vs[k]);
    cJSON_Delete(root);
    *plans = ps;
    *verdicts = vs;
    *n = count;
    return LOOM_OK;
}

loom_status loom_plan_parse(const loom_plan_ctx *c, const char *json, const char *source, loom_plan **plans, int *n,
                            loom_error *err)
{
    loom_plan_verdict *vs = NULL;
    int count = 0;
    loom_status st = loom_plan_check(c, json, source, plans, &vs, &count, err);
    for (int k = 0; k < count && !st; k++)
        if (!vs[k].legal) {
            int first = vs[k].status[0] == LOOM_ERR_PARSE || vs[k].status[0] == LOOM_ERR_SEMANTIC;
            st = loom_error_set(err, first ? vs[k].status[0] : LOOM_ERR_SEMANTIC, NULL, 0, 0, "%s", vs[k].fault[0]);
        }
    free(vs);
    if (st) {
        free(*plans);
        *plans = NULL;
        return st;
    }
    *n = count;
    return LOOM_OK;
}

/* ---- a design space that follows a plan ----------------------------------------- */

static int stage_of_block(const loom_schedule *sch, int b) { return sch->rvs[b].stage; }

/* plan-fusion: SampleFusionGroup with the plan's mask, on the last block
 * (before fuse-producers, which then leaves the group as it is). */
static loom_status plan_fusion(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    const loom_plan *p = ctx->user;
    if (stage_of_block(sch, b) != sch->nstages - 1)
        return LOOM_OK;
    int prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS], nk, v;
    loom_fusion_edges(sch, prod, cons, &nk);
    if (nk == 0)
        return p->mask ? loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "plan %s fuses operators of a program "
                                        "without fusion edges", p->name)
                       : LOOM_OK;
    return loom_sample_fusion_group(sch, b, &p->mask, NULL, &v, err);
}

/* plan-order: after sparse-loop-order, a group root with a dataflow order
 * gets SampleLoopOrder with the index of that order among its legal ones
 * as its loops stand. */
static loom_status plan_order(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    const loom_plan *p = ctx->user;
    int s = stage_of_block(sch, b), g = -1;
    for (int k = 0; k < p->ngroups; k++)
        if (p->groups[k].root == s && p->groups[k].norder > 0)
            g = k;
    const loom_stage *S = &sch->stages[s];
    if (g < 0 || S->compute_at != LOOM_AT_ROOT)
        return LOOM_OK;
    int(*orders)[LOOM_MAX_LOOPS] = malloc(sizeof(int[LOOM_MAX_LOOPS]) * LOOM_SAMPLE_MAX_ORDERS);
    if (!orders)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int no = loom_legal_loop_orders(sch, s, orders, LOOM_SAMPLE_MAX_ORDERS);
    int64_t found = -1;
    for (int k = 0; k < no && found < 0; k++) {
        int same = S->nloops == p->groups[g].norder;
        for (int q = 0; q < S->nloops && same; q++)
            same = loom_iter_var(S, S->loops[orders[k][q]].iter) == p->groups[g].order[q];
        if (same)
            found = k;
    }
    free(orders);
    if (found < 0)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "plan %s, group %s: its dataflow order is not a legal order of %s's loops as they stand",
                              p->name, p->groups[g].name, op_name(sch->prog, s));
    int v;
    return loom_sample_loop_order(sch, b, -1, 0, &found, NULL, &v, err);
}

loom_status loom_plan_space(const loom_plan *p, const loom_limits *lim, loom_registry **reg, loom_space **sp,
                            loom_error *err)
{
    *sp = NULL;
    *reg = loom_registry_new();
    if (!*reg)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = loom_registry_add(*reg, "plan-fusion", plan_fusion, (void *)p, err);
    if (!st)
        st = loom_registry_add(*reg, "plan-order", plan_order, (void *)p, err);
    /* the CPU list with the plan's modules around fuse-producers and
     * sparse-loop-order */
    const char *def = loom_default_modules("cpu");
    char names[512] = "";
    const char *q = def;
    while (!st && q && *q) {
        const char *e = strchr(q, ',');
        size_t n = e ? (size_t)(e - q) : strlen(q);
        char one[64];
        snprintf(one, sizeof one, "%.*s", (int)n, q);
        size_t l = strlen(names);
        if (!strcmp(one, "fuse-producers"))
            snprintf(names + l, sizeof names - l, "%splan-fusion,fuse-producers", l ? "," : "");
        else if (!strcmp(one, "sparse-loop-order"))
            snprintf(names + l, sizeof names - l, "%ssparse-loop-order,plan-order", l ? "," : "");
        else
            snprintf(names + l, sizeof names - l, "%s%s", l ? "," : "", one);
        q = e ? e + 1 : NULL;
    }
    if (!st)
        st = loom_space_new(*reg, names, "cpu", sp, err);
    if (!st && lim)
        loom_space_set_limits(*sp, lim);
    if (st) {
        loom_registry_free(*reg);
        *reg = NULL;
    }
    return st;
}

loom_status loom_plan_fills(const loom_plan_ctx *c, const loom_plan *plans, int n, int per_plan, uint64_t seed,
                            const loom_limits *lim, loom_trace ***out, int *nout, loom_error *err)
{
    *out = NULL;
    *nout = 0;
    loom_trace **ts = calloc((size_t)(n * per_plan > 0 ? n * per_plan : 1), sizeof *ts);
    loom_schedule *sch = malloc(sizeof *sch);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    loom_status st = ts && sch && rng ? LOOM_OK : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int m = 0;
    for (int k = 0; k < n && !st; k++) {
        loom_registry *reg = NULL;
        loom_space *sp = NULL;
        if ((st = loom_plan_space(&plans[k], lim, &reg, &sp, err)))
            break;
        /* up to 8 draws per fill wanted; the invalid ones are dropped */
        for (int d = 0, got = 0; d < 8 * per_plan && got < per_plan && !st; d++) {
            loom_trace *t = loom_trace_new();
            if (!t) {
                st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
                break;
            }
            gsl_rng_set(rng, (unsigned long)(seed + (uint64_t)d));
            loom_error e;
            loom_violation v;
            int ok = loom_schedule_init(sch, c->prog, rng, &e) == LOOM_OK;
            if (ok) {
                sch->recorder = loom_trace_recorder;
                sch->recorder_ctx = t;
                ok = loom_space_apply(sp, sch, &e) == LOOM_OK && loom_trace_status(t, &e) == LOOM_OK &&
                     loom_validate(sch, lim, &v, NULL) == LOOM_OK;
                sch->recorder = NULL;
            }
            if (ok) {
                ts[m++] = t;
                got++;
            } else
                loom_trace_free(t);
        }
        loom_space_free(sp);
        loom_registry_free(reg);
    }
    gsl_rng_free(rng);
    free(sch);
    if (st) {
        for (int k = 0; k < m; k++)
            loom_trace_free(ts[k]);
        free(ts);
        return st;
    }
    *out = ts;
    *nout = m;
    return LOOM_OK;
}
