/* loom: guarded iterations (sim.h "Guarded iterations", model 17).  A
 * loop whose body does all its work under one `if` -- the tile guard
 * `if (base_i < C_d0)` a split with a factor that does not divide its
 * extent leaves -- has iterations that do nothing.  sim.c finds the guard
 * when it builds the loop (loom__sim_find_guard); sim_exec.c's sampler
 * asks which iterations pass it (loom__sim_guard_span) and samples those
 * apart from the empty ones, instead of scaling the first blocks' work
 * over all of them.  Declared in sim_impl.h. */
#include <stdlib.h>

#include "sim_impl.h"

#define PATH_MAX 32                /* assignments and loops met on the way down to the guard */
#define SPAN_MAX_EVALS (1 << 16)   /* evaluations one loop's count may take */

/* 1 if e is computed from variables and constants alone (no load) */
static int sx_pure(const sx *e)
{
    if (!e)
        return 1;
    switch (e->kind) {
    case SX_CONST:
    case SX_VAR:
    case SX_AFF: return 1;
    case SX_NEG:
    case SX_NOT: return sx_pure(e->a);
    case SX_BIN: return sx_pure(e->a) && sx_pure(e->b);
    default: return 0;
    }
}

/* mark in m every variable e reads */
static void sx_mark(const sx *e, unsigned char *m)
{
    if (!e)
        return;
    if (e->kind == SX_VAR)
        m[e->var] = 1;
    if (e->kind == SX_AFF)
        for (int k = 0; k < e->nterm; k++)
            m[e->tv[k]] = 1;
    sx_mark(e->a, m);
    sx_mark(e->b, m);
}

/* e's value (a pure expression: sx_pure), as the generated C computes it */
static int64_t sx_eval(const sx *e, const int64_t *vars)
{
    int ok = 1;
    return loom__sim_pure_eval(NULL, vars, e, &ok);
}

int loom__sim_sets_var(const sst *s, int v)
{
    if (!s)
        return 0;
    if ((s->kind == SS_SETI || s->kind == SS_FOR) && s->var == v)
        return 1;
    for (int i = 0; s->kind == SS_SEQ && i < s->items_n; i++)
        if (loom__sim_sets_var(s->items[i], v))
            return 1;
    return loom__sim_sets_var(s->body, v) || loom__sim_sets_var(s->els, v);
}

/* The way down from r's body to its guard: through sequences whose other
 * statements only assign integers and through serial loops, collected in
 * order in path[].  NULL when the body has work beside a single if, or the
 * if has an else. */
static const sst *walk(const sst *r, const sst **path, int *npath)
{
    const sst *cur = r->body;
    *npath = 0;
    for (int depth = 0; cur && depth < 64; depth++) {
        if (cur->kind == SS_IF)
            return cur->els ? NULL : cur;
        if (cur->kind == SS_FOR) {
            if (cur->vec || cur->has_par || *npath >= PATH_MAX)
                return NULL;
            path[(*npath)++] = cur;
            cur = cur->body;
            continue;
        }
        if (cur->kind != SS_SEQ)
            return NULL;
        const sst *next = NULL;
        for (int i = 0; i < cur->items_n; i++) {
            const sst *it = cur->items[i];
            if (it->kind == SS_NOP || (it->kind == SS_SETI && next))
                continue; /* an assignment after the way down runs after the guard */
            if (it->kind == SS_SETI && *npath < PATH_MAX)
                path[(*npath)++] = it;
            else if (it->kind == SS_SETI || next)
                return NULL;
            else
                next = it;
        }
        cur = next;
    }
    return NULL;
}

void loom__sim_find_guard(sst *r, int nvars)
{
    r->guard = NULL;
    r->ngpath = 0;
    if (r->kind != SS_FOR || r->vec || r->has_par || nvars <= 0)
        return;
    const sst *path[PATH_MAX];
    int npath;
    const sst *g = walk(r, path, &npath);
    if (!g || !sx_pure(g->cond))
        return;
    unsigned char *need = calloc((size_t)nvars, 1);
    if (!need)
        return; /* no guard: the loop is sampled whole, as before model 17 */
    sx_mark(g->cond, need);
    /* what the count of passing iterations needs, latest first: the
       assignments the condition reads (through each other), and every loop
       on the way (enumerated when the condition reads its variable, else
       a factor of its trip count) */
    int keep[PATH_MAX] = {0}, nkeep = 0, ok = 1;
    for (int i = npath - 1; i >= 0 && ok; i--) {
        const sst *p = path[i];
        if (p->kind == SS_SETI && !need[p->var])
            continue;
        int reads = need[p->var];
        need[p->var] = 0;
        if (p->kind == SS_SETI) {
            ok = sx_pure(p->value);
            sx_mark(p->value, need);
        } else {
            ok = sx_pure(p->lo) && sx_pure(p->hi);
            sx_mark(p->lo, need);
            sx_mark(p->hi, need);
        }
        keep[i] = p->kind == SS_SETI || reads ? 1 : 2;
        ok = ok && ++nkeep <= LOOM_SIM_GUARD_STEPS;
    }
    /* what is left must stay fixed through r's iterations, except r's own
       variable, which the count must read */
    for (int v = 0; v < nvars && ok; v++)
        if (need[v] && v != r->var)
            ok = !loom__sim_sets_var(r->body, v);
    ok = ok && need[r->var];
    free(need);
    if (!ok)
        return;
    for (int i = 0; i < npath; i++)
        if (keep[i]) {
            r->gpath[r->ngpath] = path[i];
            r->genum[r->ngpath++] = keep[i] == 1;
        }
    r->guard = g;
}

/* The iterations below way-down step k that pass s's guard; *left counts
 * down the evaluations allowed (negative: too many, the count is void). */
static int64_t count(const sst *s, int k, int64_t *vars, int64_t *left)
{
    if (--*left < 0)
        return 0;
    if (k == s->ngpath)
        return sx_eval(s->guard->cond, vars) != 0;
    const sst *p = s->gpath[k];
    if (p->kind == SS_SETI) {
        vars[p->var] = sx_eval(p->value, vars);
        return count(s, k + 1, vars, left);
    }
    int64_t lo = sx_eval(p->lo, vars), hi = sx_eval(p->hi, vars), n = 0;
    if (hi <= lo)
        return 0;
    if (!s->genum[k]) {
        vars[p->var] = lo;
        return (hi - lo) * count(s, k + 1, vars, left);
    }
    for (int64_t v = lo; v < hi && *left >= 0; v++) {
        vars[p->var] = v;
        n += count(s, k + 1, vars, left);
    }
    return n;
}

int loom__sim_guard_runs(const sst *s, int64_t *vars, int var, int64_t lo, int64_t step, int64_t len, int64_t *cut)
{
    if (!s->guard || len < 2)
        return 0;
    int64_t keep[LOOM_SIM_GUARD_STEPS + 1], left = SPAN_MAX_EVALS, prev = -1;
    keep[0] = vars[var];
    for (int k = 0; k < s->ngpath; k++)
        keep[k + 1] = vars[s->gpath[k]->var];
    int runs = 0;
    for (int64_t q = 0; q < len && left >= 0 && runs <= LOOM_SIM_GUARD_RUNS; q++) {
        vars[var] = lo + q * step;
        int64_t w = count(s, 0, vars, &left);
        if (q == 0 || w != prev)
            cut[runs++] = q;
        prev = w;
    }
    for (int k = s->ngpath - 1; k >= 0; k--)
        vars[s->gpath[k]->var] = keep[k + 1];
    vars[var] = keep[0];
    /* one run: nothing to split; too many (a triangle) or too long to count:
       sampled whole */
    if (left < 0 || runs < 2 || runs > LOOM_SIM_GUARD_RUNS)
        return 0;
    cut[runs] = len;
    return runs;
}
