/* `loom plan describe`'s JSON (plan.h): the proposer's context. */
#include "plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../../dsl/schedule/query.h"

#define MAX_PLANS 1024 /* plans listed (every fusion mask up to 10 offered edges) */

static const char *op_name(const loom_program *prog, int s) { return prog->tensors[prog->stmts[s].lhs].name; }

static void add_cost(cJSON *o, const loom_plan_ctx *c, const loom_plan_cost *k)
{
    cJSON_AddNumberToObject(o, "flops", k->flops);
    cJSON_AddNumberToObject(o, "bytes", k->bytes);
    cJSON_AddNumberToObject(o, "intensity", k->intensity);
    cJSON_AddStringToObject(o, "roofline", k->compute_bound ? "compute-bound" : "memory-bound");
    cJSON_AddNumberToObject(o, "roofline_us", k->roofline_s * 1e6);
    (void)c;
}

static cJSON *names(const loom_program *prog, const int *ops, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < n; k++)
        cJSON_AddItemToArray(a, cJSON_CreateString(op_name(prog, ops[k])));
    return a;
}

static cJSON *var_names(const loom_program *prog, const int *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < n; k++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[k] >= 0 ? prog->vars[v[k]].name : "?"));
    return a;
}

static cJSON *shape(const loom_program *prog, int t)
{
    cJSON *a = cJSON_CreateArray();
    for (int d = 0; d < prog->tensors[t].order; d++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)loom_program_dim(prog, t, d)));
    return a;
}

static cJSON *operators(const loom_plan_ctx *c)
{
    const loom_program *prog = c->prog;
    cJSON *a = cJSON_CreateArray();
    for (int s = 0; s < prog->nstmts; s++) {
        const loom_stmt *st = &prog->stmts[s];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", op_name(prog, s));
        cJSON_AddStringToObject(o, "statement", st->text);
        cJSON_AddItemToObject(o, "shape", shape(prog, st->lhs));
        cJSON_AddStringToObject(o, "format", loom_format_name(prog->tensors[st->lhs].format.kind));
        cJSON_AddItemToObject(o, "free_indices", var_names(prog, st->vars, st->nfree));
        cJSON_AddItemToObject(o, "reduced_indices", var_names(prog, st->vars + st->nfree, st->nvars - st->nfree));
        cJSON *rd = cJSON_CreateArray();
        for (int t = 0; t < prog->ntensors; t++)
            if (loom_expr_reads(prog, st->rhs, t))
                cJSON_AddItemToArray(rd, cJSON_CreateString(prog->tensors[t].name));
        cJSON_AddItemToObject(o, "reads", rd);
        cJSON_AddNumberToObject(o, "iteration_points", c->ref ? (double)c->ref->stmt_points[s] : 0);
        loom_plan_group g = {.nops = 1, .ops = {s}, .root = s};
        loom_plan_cost k;
        loom_plan_group_cost(c, &g, &k);
        add_cost(o, c, &k);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* nnz per row of a sparse input: mean, max, coefficient of variation. */
static cJSON *inputs(const loom_plan_ctx *c)
{
    const loom_program *prog = c->prog;
    cJSON *a = cJSON_CreateArray();
    for (int t = 0; t < prog->ntensors; t++) {
        const loom_tensor *T = &prog->tensors[t];
        if (T->role != LOOM_TENSOR_INPUT)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", T->name);
        cJSON_AddItemToObject(o, "shape", shape(prog, t));
        cJSON_AddStringToObject(o, "format", loom_format_name(T->format.kind));
        const loom_tensor_abi *A = c->ds ? &c->ds->t[t] : NULL;
        if (T->pattern_of == t && A && A->pos[1] && T->order == 2) {
            int64_t rows = A->dims[0], mx = 0;
            double sum = 0, sq = 0;
            for (int64_t r = 0; r < rows; r++) {
                int64_t n = A->pos[1][r + 1] - A->pos[1][r];
                sum += (double)n;
                sq += (double)n * (double)n;
                if (n > mx)
                    mx = n;
            }
            double mean = rows ? sum / (double)rows : 0, var = rows ? sq / (double)rows - mean * mean : 0;
            cJSON_AddNumberToObject(o, "nnz", (double)A->nnz);
            cJSON_AddNumberToObject(o, "density", (double)A->nnz / ((double)A->dims[0] * (double)A->dims[1]));
            cJSON *r = cJSON_AddObjectToObject(o, "nnz_per_row");
            cJSON_AddNumberToObject(r, "mean", mean);
            cJSON_AddNumberToObject(r, "max", (double)mx);
            cJSON_AddNumberToObject(r, "cv", mean > 0 ? sqrt(var > 0 ? var : 0) / mean : 0);
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *edges(const loom_plan_ctx *c)
{
    const loom_program *prog = c->prog;
    cJSON *a = cJSON_CreateArray();
    for (int p = 0; p < prog->nstmts; p++) {
        if (prog->tensors[prog->stmts[p].lhs].role != LOOM_TENSOR_TEMP)
            continue;
        for (int q = p + 1; q < prog->nstmts; q++) {
            if (!loom_expr_reads(prog, prog->stmts[q].rhs, prog->stmts[p].lhs))
                continue;
            char why[256] = "";
            int first, legal = loom_fusion_edge_legal(c->fresh, p, &first, why, sizeof why);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "producer", op_name(prog, p));
            cJSON_AddStringToObject(o, "consumer", op_name(prog, q));
            cJSON_AddBoolToObject(o, "fusable", legal == 1 && first == q);
            if (legal != 1)
                cJSON_AddStringToObject(o, "reason", legal == 0 ? why : "a softmax chain: attention-fusion's");
            cJSON_AddItemToArray(a, o);
        }
    }
    return a;
}

static cJSON *group_json(const loom_plan_ctx *c, const loom_plan_group *g, int with_orders)
{
    const loom_program *prog = c->prog;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", g->name);
    cJSON_AddItemToObject(o, "ops", names(prog, g->ops, g->nops));
    cJSON_AddStringToObject(o, "root", op_name(prog, g->root));
    if (with_orders) {
        int(*orders)[LOOM_MAX_LOOPS] = malloc(sizeof(int[LOOM_MAX_LOOPS]) * LOOM_PLAN_MAX_ORDERS);
        cJSON *lo = cJSON_CreateArray();
        if (orders) {
            int len, n = loom_plan_orders(c, g->root, orders, &len, LOOM_PLAN_MAX_ORDERS);
            for (int k = 0; k < n; k++)
                cJSON_AddItemToArray(lo, var_names(prog, orders[k], len));
            free(orders);
        }
        cJSON_AddItemToObject(o, "legal_dataflow_orders", lo);
    }
    loom_plan_cost k;
    loom_plan_group_cost(c, g, &k);
    add_cost(o, c, &k);
    return o;
}

typedef struct ranked {
    double t;
    int64_t mask;
} ranked;

static int by_time(const void *a, const void *b)
{
    double x = ((const ranked *)a)->t, y = ((const ranked *)b)->t;
    return x < y ? -1 : x > y;
}

/* Every admissible group (the multi-op ones, from every mask) and every
 * plan (mask), ranked by roofline time. */
static void groups_and_plans(const loom_plan_ctx *c, cJSON *root)
{
    int64_t nmask = c->nedges >= 10 ? MAX_PLANS : (int64_t)1 << c->nedges;
    cJSON *ga = cJSON_AddArrayToObject(root, "admissible_groups");
    uint32_t seen[MAX_PLANS * 2];
    int nseen = 0;
    loom_plan p;
    ranked *rk = malloc(sizeof *rk * (size_t)nmask);
    for (int64_t m = 0; m < nmask; m++) {
        loom_plan_from_mask(c, m, &p);
        for (int k = 0; k < p.ngroups; k++) {
            uint32_t set = 0;
            for (int q = 0; q < p.groups[k].nops; q++)
                set |= 1u << p.groups[k].ops[q];
            int dup = 0;
            for (int q = 0; q < nseen && !dup; q++)
                dup = seen[q] == set;
            if (dup || nseen >= MAX_PLANS * 2)
                continue;
            seen[nseen++] = set;
            cJSON_AddItemToArray(ga, group_json(c, &p.groups[k], 1));
        }
        loom_plan_cost k;
        loom_plan_cost_of(c, &p, &k);
        if (rk) {
            rk[m].t = k.roofline_s;
            rk[m].mask = m;
        }
    }
    cJSON *pa = cJSON_AddArrayToObject(root, "plans");
    if (!rk)
        return;
    qsort(rk, (size_t)nmask, sizeof *rk, by_time);
    for (int64_t r = 0; r < nmask; r++) {
        loom_plan_from_mask(c, rk[r].mask, &p);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "fusion_mask", (double)rk[r].mask);
        cJSON *gs = cJSON_AddArrayToObject(o, "fusion_groups");
        for (int k = 0; k < p.ngroups; k++) {
            cJSON *g = cJSON_CreateObject();
            cJSON_AddStringToObject(g, "name", p.groups[k].name);
            cJSON_AddItemToObject(g, "ops", names(c->prog, p.groups[k].ops, p.groups[k].nops));
            cJSON_AddItemToArray(gs, g);
        }
        loom_plan_cost k;
        loom_plan_cost_of(c, &p, &k);
        add_cost(o, c, &k);
        cJSON_AddItemToArray(pa, o);
    }
    free(rk);
}

loom_status loom_plan_describe(const loom_plan_ctx *c, char **out, loom_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "loom-plan-context");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "workload", c->prog->path);
    cJSON *t = cJSON_AddObjectToObject(root, "target");
    cJSON_AddStringToObject(t, "name", c->target->name);
    cJSON_AddNumberToObject(t, "peak_gflops", c->peak_flops / 1e9);
    cJSON_AddNumberToObject(t, "bandwidth_gbs", c->bandwidth / 1e9);
    cJSON_AddNumberToObject(t, "balance_flops_per_byte", c->balance);
    cJSON_AddStringToObject(root, "schema",
                            "{\"fusion_groups\": [{\"name\": STRING, \"ops\": [OPERATOR NAMES], "
                            "\"dataflow_order\": [INDEX NAMES of the group's root, outermost first]}]}: every "
                            "operator in exactly one group; a group is one tree of fusable edges; the order one of "
                            "the group root's legal_dataflow_orders (omit it to let the tuner choose)");
    cJSON_AddItemToObject(root, "operators", operators(c));
    cJSON_AddItemToObject(root, "inputs", inputs(c));
    cJSON_AddItemToObject(root, "edges", edges(c));
    groups_and_plans(c, root);
    *out = cJSON_Print(root);
    cJSON_Delete(root);
    if (!*out)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory printing the plan context");
    return LOOM_OK;
}
