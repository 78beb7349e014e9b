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

/* Run s when it is integer book-keeping only -- assignments, ifs and
 * while loops on pure expressions (the balanced row split's binary
 * searches for its chunk's rows, model 69) -- into tmp: 0, or -1 when it
 * holds anything else or the evaluations run out. */
static int pure_run(const sprog *p, const sst *s, int64_t *tmp, int64_t *left)
{
    int ok = 1;
    if (!s)
        return 0;
    switch (s->kind) {
    case SS_NOP: return 0;
    case SS_SETI:
        tmp[s->var] = loom__sim_pure_eval(p, tmp, s->value, &ok);
        return ok ? 0 : -1;
    case SS_SEQ:
        for (int i = 0; i < s->items_n; i++)
            if (pure_run(p, s->items[i], tmp, left) < 0)
                return -1;
        return 0;
    case SS_IF: {
        int64_t c = loom__sim_pure_eval(p, tmp, s->cond, &ok);
        return ok ? pure_run(p, c ? s->body : s->els, tmp, left) : -1;
    }
    case SS_WHILE:
        for (;;) {
            if (--*left < 0)
                return -1;
            int64_t c = loom__sim_pure_eval(p, tmp, s->cond, &ok);
            if (!ok)
                return -1;
            if (!c)
                return 0;
            if (pure_run(p, s->body, tmp, left) < 0)
                return -1;
        }
    default: return -1;
    }
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
        } else if (t->kind == SS_WHILE || t->kind == SS_IF) {
            if (pure_run(p, t, tmp, left) < 0)
                return -1;
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
