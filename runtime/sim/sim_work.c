/* What the sampler counts before it samples, from integer expressions
 * alone (sim.h "Sampling" and "Guarded iterations"): the value of an
 * expression that reads only variables, constants and index (POS/CRD)
 * data, and the work of one iteration of a loop (model 21). */
#include "sim_impl.h"

int64_t loom__sim_pure_eval_slow(const sprog *p, const int64_t *vars, const sx *e, int *ok)
{
    switch (e->kind) {
    case SX_CONST:
    case SX_VAR:
    case SX_AFF: return loom__sim_pure_eval(p, vars, e, ok);
    case SX_LOAD: {
        int64_t i = loom__sim_pure_eval(p, vars, e->a, ok);
        const sbuf *B = p ? &p->bufs[e->buf] : NULL;
        if (!B || !B->ints || i < 0 || i >= B->elems) {
            *ok = 0;
            return 0;
        }
        return B->ints[i];
    }
    case SX_NEG: return -loom__sim_pure_eval(p, vars, e->a, ok);
    case SX_NOT: return !loom__sim_pure_eval(p, vars, e->a, ok);
    case SX_BIN: {
        int64_t a = loom__sim_pure_eval(p, vars, e->a, ok);
        if (e->op == LIR_AND && !a)
            return 0;
        if (e->op == LIR_OR && a)
            return 1;
        return loom__sim_int_op(e->op, a, loom__sim_pure_eval(p, vars, e->b, ok));
    }
    }
    *ok = 0;
    return 0;
}

/* iteration v of loop s at depth below the loop being weighed */
static double iter_work(const sprog *p, const sst *s, int var, int64_t v, int64_t *tmp, int depth, int64_t *left)
{
    if (--*left < 0)
        return -1;
    tmp[var] = v;
    const sst *b = s->body;
    int n = b && b->kind == SS_SEQ ? b->items_n : b ? 1 : 0;
    for (int i = 0; i < n; i++) {
        const sst *t = b->kind == SS_SEQ ? b->items[i] : b;
        int ok = 1;
        if (t->kind == SS_SETI) {
            tmp[t->var] = loom__sim_pure_eval(p, tmp, t->value, &ok);
            if (!ok)
                return -1;
        } else if (t->kind == SS_FOR) {
            int64_t lo = loom__sim_pure_eval(p, tmp, t->lo, &ok), hi = loom__sim_pure_eval(p, tmp, t->hi, &ok);
            if (!ok)
                return -1;
            if (depth >= 2 || t->vec)
                return 1 + (double)(hi > lo ? hi - lo : 0);
            double w = 1;
            for (int64_t u = lo; u < hi; u++) {
                double x = iter_work(p, t, t->var, u, tmp, depth + 1, left);
                if (x < 0)
                    return -1;
                w += x;
            }
            return w;
        } else if (t->kind != SS_FILL && t->kind != SS_NOP && t->kind != SS_PREFETCH && t->kind != SS_WORK &&
                   t->kind != SS_STREAM)
            return -1;
    }
    return 1;
}

double loom__sim_iter_work(const sprog *p, const sst *s, int var, int64_t v, int64_t *tmp, int64_t *left)
{
    return iter_work(p, s, var, v, tmp, 0, left);
}
