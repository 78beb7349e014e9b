/* Holes' candidates, pinned decisions and partial traces (navigate.h). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "navigate.h"

int loom_nav_is_sampler(int kind)
{
    return loom_inst_kind_is_sampler(kind);
}

int loom_nav_value_equal(const loom_nav_value *a, const loom_nav_value *b)
{
    if (a->kind != b->kind || a->n != b->n)
        return 0;
    for (int k = 0; k < a->n; k++)
        if (a->v[k] != b->v[k])
            return 0;
    return 1;
}

void loom_nav_value_print(const loom_nav_value *a, FILE *out)
{
    if (a->kind != LOOM_INST_SAMPLE_PERFECT_TILE) {
        fprintf(out, "%lld", (long long)(a->n ? a->v[0] : 0));
        return;
    }
    fputc('[', out);
    for (int k = 0; k < a->n; k++)
        fprintf(out, "%s%lld", k ? ", " : "", (long long)a->v[k]);
    fputc(']', out);
}

/* ---- candidates ------------------------------------------------------------ */

typedef struct tiles_gen {
    loom_nav_value *out;
    int max, count, n;
    int64_t mx;
    int64_t cur[LOOM_MAX_INST_IO];
} tiles_gen;

/* Ordered tuples cur[k..n) with product e, the last <= mx (-1: any); tile k
 * ascending, so [1, ..., e] comes first and [e, 1, ..., 1] last. */
static void gen_tiles(tiles_gen *g, int k, int64_t e)
{
    if (g->count >= g->max)
        return;
    if (k == g->n - 1) {
        if (g->mx != -1 && e > g->mx)
            return;
        g->cur[k] = e;
        loom_nav_value *v = &g->out[g->count++];
        v->kind = LOOM_INST_SAMPLE_PERFECT_TILE;
        v->n = g->n;
        memcpy(v->v, g->cur, sizeof(int64_t) * (size_t)g->n);
        return;
    }
    for (int64_t d = 1; d <= e && g->count < g->max; d++)
        if (e % d == 0) {
            g->cur[k] = d;
            gen_tiles(g, k + 1, e / d);
        }
}

static int tile_candidates(const loom_schedule *sch, const loom_inst *proto, loom_nav_value *out, int max, int *pref)
{
    const loom_rv *r = &sch->rvs[proto->inputs[0]];
    int64_t e = loom_iter_extent(sch, r->stage, r->iter);
    int n = (int)proto->attrs[0];
    int64_t mx = proto->attrs[1];
    if (n < 1 || n > LOOM_MAX_INST_IO)
        return 0;
    if (e <= 0) {
        /* data-dependent: [0, 2^a1, ...] with 2^a <= cap */
        int64_t cap = mx == -1 ? 64 : mx;
        int rungs = 0;
        while (rungs < 62 && ((int64_t)1 << rungs) <= cap)
            rungs++;
        int count = 0;
        int64_t idx[LOOM_MAX_INST_IO] = {0};
        for (;;) {
            if (count >= max)
                break;
            loom_nav_value *v = &out[count++];
            v->kind = LOOM_INST_SAMPLE_PERFECT_TILE;
            v->n = n;
            v->v[0] = 0;
            for (int k = 1; k < n; k++)
                v->v[k] = (int64_t)1 << idx[k];
            int k = n - 1;
            while (k >= 1 && ++idx[k] == rungs)
                idx[k--] = 0;
            if (k < 1)
                break;
        }
        *pref = 0; /* [0, 1, ..., 1] */
        return count;
    }
    tiles_gen g = {.out = out, .max = max, .n = n, .mx = mx};
    gen_tiles(&g, 0, e);
    /* the default: [e, 1, ..., 1] (untiled), else the last (outermost largest) */
    *pref = g.count ? g.count - 1 : 0;
    return g.count;
}

int loom_nav_candidates(const loom_schedule *sch, int kind, const loom_inst *proto, loom_nav_value *out, int max,
                        int *pref)
{
    *pref = 0;
    int count = 0;
    if (kind == LOOM_INST_SAMPLE_PERFECT_TILE)
        return tile_candidates(sch, proto, out, max, pref);
    if (kind == LOOM_INST_SAMPLE_CATEGORICAL) {
        double best = -1;
        for (int k = 0; k < proto->nattrs && count < max; k++) {
            if (!(proto->fattrs[k] > 0))
                continue;
            if (proto->fattrs[k] > best) {
                best = proto->fattrs[k];
                *pref = count;
            }
            out[count] = (loom_nav_value){.kind = kind, .n = 1, .v = {k}};
            count++;
        }
        return count;
    }
    if (kind == LOOM_INST_SAMPLE_LOOP_ORDER) {
        int s = sch->rvs[proto->inputs[0]].stage;
        int nord = loom_legal_loop_orders(sch, s, NULL, max);
        for (int k = 0; k < nord && count < max; k++)
            out[count++] = (loom_nav_value){.kind = kind, .n = 1, .v = {k}};
        if (proto->attrs[0] >= 0 && proto->attrs[0] < count)
            *pref = (int)proto->attrs[0];
        return count;
    }
    if (kind == LOOM_INST_SAMPLE_COMPUTE_LOCATION) {
        int s = sch->rvs[proto->inputs[0]].stage;
        int64_t cand[2 + LOOM_MAX_LOOPS];
        int nc = loom_compute_location_candidates(sch, s, cand);
        for (int k = 0; k < nc && count < max; k++) {
            if (cand[k] == LOOM_AT_ROOT)
                *pref = count;
            out[count++] = (loom_nav_value){.kind = kind, .n = 1, .v = {cand[k]}};
        }
        return count;
    }
    if (kind == LOOM_INST_SAMPLE_FUSION_GROUP) {
        int prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS];
        int ne = loom_fusion_edges(sch, prod, cons, NULL);
        int64_t nmask = ne >= 12 ? 4096 : (int64_t)1 << ne;
        for (int64_t m = 0; m < nmask && count < max; m++)
            out[count++] = (loom_nav_value){.kind = kind, .n = 1, .v = {m}};
        return count;
    }
    return 0;
}

/* ---- pins ------------------------------------------------------------------- */

static void value_of(const loom_inst *in, loom_nav_value *v)
{
    v->kind = in->kind;
    v->n = in->ndecision;
    memcpy(v->v, in->decision, sizeof(int64_t) * (size_t)in->ndecision);
}

loom_status loom_pins_from_trace(const loom_trace *t, const int *insts, int ninsts, loom_pins *out,
                                 loom_error *err)
{
    out->n = 0;
    int ord = 0;
    for (int i = 0; i < t->ninsts; i++) {
        if (!loom_nav_is_sampler(t->insts[i].kind))
            continue;
        int want = !insts;
        for (int k = 0; insts && k < ninsts; k++)
            want |= insts[k] == i;
        if (want) {
            if (out->n >= LOOM_NAV_MAX_HOLES)
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                      "more than %d pinned decisions: pin fewer", LOOM_NAV_MAX_HOLES);
            out->ordinal[out->n] = ord;
            value_of(&t->insts[i], &out->value[out->n]);
            out->n++;
        }
        ord++;
    }
    for (int k = 0; insts && k < ninsts; k++)
        if (insts[k] < 0 || insts[k] >= t->ninsts || !loom_nav_is_sampler(t->insts[insts[k]].kind))
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "pinned instruction %d is not a sampling instruction of the trace (%d instructions)",
                                  insts[k], t->ninsts);
    return LOOM_OK;
}

int loom_pins_decider(void *ctx, const loom_schedule *sch, int ordinal, int kind, const loom_inst *proto,
                      int64_t *decision)
{
    (void)sch;
    (void)proto;
    const loom_pins *p = ctx;
    for (int k = 0; k < p->n; k++)
        if (p->ordinal[k] == ordinal) {
            if (p->value[k].kind != kind)
                return 0;
            memcpy(decision, p->value[k].v, sizeof(int64_t) * (size_t)p->value[k].n);
            return p->value[k].n;
        }
    return 0;
}

int loom_pins_hold(const loom_pins *p, const loom_trace *t)
{
    for (int k = 0; k < p->n; k++) {
        int i = loom_trace_sampler_inst(t, p->ordinal[k]);
        if (i < 0)
            return 0;
        loom_nav_value v;
        value_of(&t->insts[i], &v);
        if (!loom_nav_value_equal(&v, &p->value[k]))
            return 0;
    }
    return 1;
}

/* ---- partial traces as JSON ------------------------------------------------- */

loom_status loom_partial_trace_to_json(const loom_trace *t, const loom_program *prog, const loom_pins *p,
                                       char **out, loom_error *err)
{
    *out = NULL;
    if (!loom_pins_hold(p, t))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "a pinned decision does not hold in the trace");
    char *text = NULL;
    loom_status st = loom_trace_to_json(t, prog, &text);
    if (st)
        return loom_error_set(err, st, NULL, 0, 0, "cannot serialise the trace");
    size_t len = strlen(text);
    char *res = malloc(len + 16 + (size_t)p->n * 8);
    if (!res) {
        free(text);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    while (len > 0 && text[len - 1] != '}')
        len--;
    if (len == 0) {
        free(text);
        free(res);
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "the trace's JSON has no closing brace");
    }
    memcpy(res, text, len - 1);
    size_t at = len - 1;
    at += (size_t)sprintf(res + at, ", \"pinned\": [");
    for (int k = 0; k < p->n; k++)
        at += (size_t)sprintf(res + at, "%s%d", k ? ", " : "", loom_trace_sampler_inst(t, p->ordinal[k]));
    sprintf(res + at, "]}");
    free(text);
    *out = res;
    return LOOM_OK;
}

loom_status loom_partial_trace_from_json(const char *text, const char *source_name, loom_trace **t, loom_pins *p,
                                         loom_error *err)
{
    *t = NULL;
    loom_status st = loom_trace_from_json(text, source_name, t, err);
    if (st)
        return st;
    cJSON *doc = cJSON_Parse(text);
    const cJSON *pin = doc ? cJSON_GetObjectItemCaseSensitive(doc, "pinned") : NULL;
    if (!pin) {
        cJSON_Delete(doc);
        return loom_pins_from_trace(*t, NULL, 0, p, err);
    }
    int n = cJSON_GetArraySize(pin), insts[LOOM_NAV_MAX_HOLES], k = 0;
    if (!cJSON_IsArray(pin) || n > LOOM_NAV_MAX_HOLES)
        st = loom_error_set(err, LOOM_ERR_DATA, source_name, 0, 0,
                            "$.pinned: expected an array of at most %d instruction indices", LOOM_NAV_MAX_HOLES);
    const cJSON *e;
    cJSON_ArrayForEach(e, pin)
    {
        if (st)
            break;
        if (!cJSON_IsNumber(e) || e->valuedouble != (double)(int)e->valuedouble)
            st = loom_error_set(err, LOOM_ERR_DATA, source_name, 0, 0, "$.pinned[%d]: expected an integer", k);
        else
            insts[k++] = (int)e->valuedouble;
    }
    cJSON_Delete(doc);
    if (!st)
        st = loom_pins_from_trace(*t, insts, k, p, err);
    if (st) {
        if (st == LOOM_ERR_INVALID) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            st = loom_error_set(err, LOOM_ERR_DATA, source_name, 0, 0, "$.pinned: %s", why);
        }
        loom_trace_free(*t);
        *t = NULL;
    }
    return st;
}

/* ---- pins as a JSON array (a database record's "pins") ---------------------- */

loom_status loom_pins_to_json(const loom_pins *p, char **out)
{
    *out = NULL;
    size_t cap = 64 + (size_t)p->n * (64 + 24 * LOOM_MAX_INST_IO), at = 0;
    char *s = malloc(cap);
    if (!s)
        return LOOM_ERR_NOMEM;
    at += (size_t)snprintf(s + at, cap - at, "[");
    for (int k = 0; k < p->n; k++) {
        at += (size_t)snprintf(s + at, cap - at, "%s{\"sampler\":%d,\"kind\":%d,\"decision\":[", k ? "," : "",
                               p->ordinal[k], p->value[k].kind);
        for (int j = 0; j < p->value[k].n; j++)
            at += (size_t)snprintf(s + at, cap - at, "%s%lld", j ? "," : "", (long long)p->value[k].v[j]);
        at += (size_t)snprintf(s + at, cap - at, "]}");
    }
    snprintf(s + at, cap - at, "]");
    *out = s;
    return LOOM_OK;
}

/* One member {"sampler":S,"kind":K,"decision":[...]} into p's slot k.  0 or -1. */
static int pin_from_json(const cJSON *m, loom_pins *p, int k)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(m, "sampler");
    const cJSON *kd = cJSON_GetObjectItemCaseSensitive(m, "kind");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(m, "decision");
    if (!cJSON_IsNumber(s) || !cJSON_IsNumber(kd) || !cJSON_IsArray(d) || s->valuedouble < 0 ||
        cJSON_GetArraySize(d) > LOOM_MAX_INST_IO || (k > 0 && (int)s->valuedouble <= p->ordinal[k - 1]))
        return -1;
    p->ordinal[k] = (int)s->valuedouble;
    p->value[k].kind = (int)kd->valuedouble;
    p->value[k].n = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, d)
    {
        if (!cJSON_IsNumber(v))
            return -1;
        p->value[k].v[p->value[k].n++] = (int64_t)v->valuedouble;
    }
    return 0;
}

loom_status loom_pins_from_json(const char *text, loom_pins *p, loom_error *err)
{
    memset(p, 0, sizeof *p);
    cJSON *a = text ? cJSON_Parse(text) : NULL;
    int bad = !a || !cJSON_IsArray(a) || cJSON_GetArraySize(a) > LOOM_NAV_MAX_HOLES;
    const cJSON *m;
    if (!bad)
        cJSON_ArrayForEach(m, a)
        {
            if (pin_from_json(m, p, p->n)) {
                bad = 1;
                break;
            }
            p->n++;
        }
    cJSON_Delete(a);
    if (bad) {
        memset(p, 0, sizeof *p);
        return loom_error_set(err, LOOM_ERR_DATA, NULL, 0, 0,
                              "pins: expected an array of at most %d {\"sampler\", \"kind\", \"decision\"} objects "
                              "in increasing sampler order",
                              LOOM_NAV_MAX_HOLES);
    }
    return LOOM_OK;
}
