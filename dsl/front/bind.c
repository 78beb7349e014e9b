/* loom: binding size symbols to values (see program.h).
 *
 * Sizes unify through index variables: every dimension an index variable
 * indexes must have the same extent.  The unification is recomputed from the
 * statements on every call (programs are tiny), so the fixed-layout program
 * needs no extra bookkeeping.  Values a call derives carry the origin
 * "from index v in line L ..." and are recomputed by the next call, which
 * makes loom_program_finish_binding idempotent and lets later explicit
 * bindings replace derived ones. */
#include "../ir/program.h"

#include <stdint.h>
#include <string.h>

#define DERIVED_PREFIX "from index "
#define PARAM_DEFAULT "param default"

/* One use of an index variable: dimension `dim` of tensor `tensor`. */
typedef struct use {
    int var, tensor, dim, stmt;
} use;

#define MAX_USES (LOOM_MAX_EXPRS * LOOM_MAX_ORDER + LOOM_MAX_STMTS * LOOM_MAX_ORDER)

static int is_derived(const loom_size *s)
{
    return s->bound && strncmp(s->origin, DERIVED_PREFIX, strlen(DERIVED_PREFIX)) == 0;
}

static int is_default(const loom_size *s)
{
    return s->bound && s->is_param && strcmp(s->origin, PARAM_DEFAULT) == 0;
}

static int valid_size(const loom_program *prog, int s)
{
    return s >= 0 && s < prog->nsizes && s < LOOM_MAX_SIZES;
}

static int valid_tensor(const loom_program *prog, int t)
{
    return t >= 0 && t < prog->ntensors && t < LOOM_MAX_TENSORS;
}

static void add_use(const loom_program *prog, use *u, int *n, int var, int t, int d, int stmt)
{
    if (*n >= MAX_USES || var < 0 || var >= prog->nvars || !valid_tensor(prog, t) || d < 0 ||
        d >= prog->tensors[t].order || d >= LOOM_MAX_ORDER ||
        !valid_size(prog, prog->tensors[t].dim_size[d]))
        return;
    u[*n] = (use){var, t, d, stmt};
    (*n)++;
}

static void collect_expr(const loom_program *prog, int e, int stmt, int depth, use *u, int *n)
{
    if (e < 0 || e >= prog->nexprs || e >= LOOM_MAX_EXPRS || depth > LOOM_MAX_EXPRS)
        return;
    const loom_expr *x = &prog->exprs[e];
    if (x->kind == LOOM_EXPR_ACCESS) {
        for (int d = 0; d < x->nidx && d < LOOM_MAX_ORDER; d++)
            add_use(prog, u, n, x->idx[d], x->tensor, d, stmt);
        return;
    }
    if (x->kind == LOOM_EXPR_CONST)
        return;
    for (int a = 0; a < x->nargs && a < 2; a++)
        collect_expr(prog, x->args[a], stmt, depth + 1, u, n);
}

static int collect_uses(const loom_program *prog, use *u)
{
    int n = 0;
    for (int s = 0; s < prog->nstmts && s < LOOM_MAX_STMTS; s++) {
        const loom_stmt *st = &prog->stmts[s];
        if (valid_tensor(prog, st->lhs))
            for (int d = 0; d < prog->tensors[st->lhs].order && d < LOOM_MAX_ORDER; d++)
                add_use(prog, u, &n, st->lhs_idx[d], st->lhs, d, s);
        collect_expr(prog, st->rhs, s, 0, u, &n);
    }
    return n;
}

static int use_size(const loom_program *prog, const use *u)
{
    return prog->tensors[u->tensor].dim_size[u->dim];
}

/* Propagate known values along index variables until nothing changes.  With
 * strong_only, param defaults count as unknown (and may be overridden). */
static void propagate(loom_program *prog, const use *u, int n, int strong_only)
{
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int i = 0; i < n; i++) {
            const loom_size *src = &prog->sizes[use_size(prog, &u[i])];
            if (!src->bound || (strong_only && is_default(src)))
                continue;
            for (int j = 0; j < n; j++) {
                if (u[j].stmt != u[i].stmt || u[j].var != u[i].var)
                    continue;
                loom_size *dst = &prog->sizes[use_size(prog, &u[j])];
                if (dst == src || (dst->bound && !(strong_only && is_default(dst))))
                    continue;
                const loom_index_var *v = &prog->vars[u[i].var];
                int line = u[i].stmt >= 0 && u[i].stmt < prog->nstmts ? prog->stmts[u[i].stmt].line : 0;
                char vname[LOOM_MAX_NAME], sname[LOOM_MAX_NAME];
                memcpy(vname, v->name, sizeof vname);
                memcpy(sname, src->name, sizeof sname);
                vname[LOOM_MAX_NAME - 1] = sname[LOOM_MAX_NAME - 1] = '\0';
                dst->value = src->value;
                dst->bound = 1;
                snprintf(dst->origin, sizeof dst->origin, DERIVED_PREFIX "%s in line %d (= %s)",
                         vname, line, sname);
                changed = 1;
            }
        }
    }
}

static void list_sizes(const loom_program *prog, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int s = 0; s < prog->nsizes && s < LOOM_MAX_SIZES && used < n; s++) {
        int w = snprintf(buf + used, n - used, "%s%s", s ? ", " : "", prog->sizes[s].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

loom_status loom_program_bind_size(loom_program *prog, const char *name, int64_t value,
                                   const char *origin, loom_error *err)
{
    if (!prog || !name)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_program_bind_size: no program or no size name");
    const char *path = prog->path;
    if (!origin || !origin[0])
        origin = "--param";
    int s = loom_program_find_size(prog, name);
    if (s < 0) {
        char list[512];
        list_sizes(prog, list, sizeof list);
        if (prog->nsizes == 0)
            return loom_error_set(err, LOOM_ERR_BIND, path, 0, 0,
                                  "no size named '%s': this workload has no sizes", name);
        return loom_error_set(err, LOOM_ERR_BIND, path, 0, 0,
                              "no size named '%s' (%s): the sizes of this workload are %s", name,
                              origin, list);
    }
    if (value <= 0)
        return loom_error_set(err, LOOM_ERR_BIND, path, prog->sizes[s].line, 0,
                              "size %s must be a positive integer, not %lld (%s)", name,
                              (long long)value, origin);
    if (value > INT32_MAX)
        return loom_error_set(err, LOOM_ERR_BIND, path, prog->sizes[s].line, 0,
                              "size %s = %lld (%s) is larger than %d, the largest dimension "
                              "the kernel ABI's int32 coordinates hold", name, (long long)value,
                              origin, INT32_MAX);
    loom_size *sz = &prog->sizes[s];
    if (sz->bound && sz->value != value && !is_default(sz) && !is_derived(sz))
        return loom_error_set(err, LOOM_ERR_BIND, path, sz->line, 0,
                              "size %s is already %lld (%s); it cannot also be %lld (%s)", name,
                              (long long)sz->value, sz->origin, (long long)value, origin);
    if (sz->bound && sz->value == value && !is_default(sz) && !is_derived(sz))
        return LOOM_OK; /* same value: keep the first origin */
    sz->value = value;
    sz->bound = 1;
    snprintf(sz->origin, sizeof sz->origin, "%s", origin);
    return LOOM_OK;
}

loom_status loom_program_finish_binding(loom_program *prog, loom_error *err)
{
    if (!prog)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_program_finish_binding: no program");
    /* forget what the last call derived */
    for (int s = 0; s < prog->nsizes && s < LOOM_MAX_SIZES; s++) {
        loom_size *sz = &prog->sizes[s];
        if (!is_derived(sz))
            continue;
        if (sz->is_param) {
            sz->value = sz->def_value;
            snprintf(sz->origin, sizeof sz->origin, PARAM_DEFAULT);
        } else {
            sz->value = 0;
            sz->bound = 0;
            sz->origin[0] = '\0';
        }
    }
    use u[MAX_USES] = {{0, 0, 0, 0}};
    int n = collect_uses(prog, u);
    propagate(prog, u, n, 1); /* explicit bindings win over param defaults */
    propagate(prog, u, n, 0); /* then defaults fill what is left */

    for (int i = 0; i < n; i++) {
        const loom_size *a = &prog->sizes[use_size(prog, &u[i])];
        if (!a->bound)
            continue;
        for (int j = i + 1; j < n && u[j].stmt == u[i].stmt; j++) {
            if (u[j].var != u[i].var)
                continue;
            const loom_size *b = &prog->sizes[use_size(prog, &u[j])];
            if (!b->bound || b->value == a->value)
                continue;
            const loom_index_var *v = &prog->vars[u[i].var];
            int line = u[i].stmt < prog->nstmts ? prog->stmts[u[i].stmt].line : 0;
            return loom_error_set(
                err, LOOM_ERR_BIND, prog->path, line, 0,
                "index %s in line %d ranges over %s = %lld (%s, dimension %d) and %s = %lld "
                "(%s, dimension %d); %s comes from %s, %s from %s",
                v->name, line, a->name, (long long)a->value, prog->tensors[u[i].tensor].name,
                u[i].dim + 1, b->name, (long long)b->value, prog->tensors[u[j].tensor].name,
                u[j].dim + 1, a->name, a->origin, b->name, b->origin);
        }
    }
    for (int s = 0; s < prog->nsizes && s < LOOM_MAX_SIZES; s++) {
        const loom_size *sz = &prog->sizes[s];
        if (!sz->bound)
            return loom_error_set(err, LOOM_ERR_BIND, prog->path, sz->line, 0,
                                  "size %s never binds: give --param %s=INT or data for a tensor "
                                  "with a dimension of size %s",
                                  sz->name, sz->name, sz->name);
    }
    return LOOM_OK;
}

int64_t loom_program_var_extent(const loom_program *prog, int v)
{
    if (!prog || v < 0 || v >= prog->nvars || v >= LOOM_MAX_VARS)
        return 0;
    int s = prog->vars[v].size;
    if (!valid_size(prog, s) || !prog->sizes[s].bound)
        return 0;
    return prog->sizes[s].value;
}

int64_t loom_program_dim(const loom_program *prog, int t, int d)
{
    if (!prog || !valid_tensor(prog, t) || d < 0 || d >= prog->tensors[t].order ||
        d >= LOOM_MAX_ORDER)
        return 0;
    int s = prog->tensors[t].dim_size[d];
    if (!valid_size(prog, s) || !prog->sizes[s].bound)
        return 0;
    return prog->sizes[s].value;
}

/* Here beside loom_program_dim (bound sizes), not in program.c: program.c
 * calls nothing in bind.c (no call cycle). */
int64_t loom_tensor_batch_count(const loom_program *prog, int t)
{
    if (!prog || t < 0 || t >= prog->ntensors || t >= LOOM_MAX_TENSORS)
        return 1;
    int64_t n = 1;
    for (int d = 0; d < prog->tensors[t].nbatch && d < LOOM_MAX_ORDER; d++)
        n *= loom_program_dim(prog, t, d);
    return n;
}
