/* The module registry, user modules (dlopen) and design spaces (module.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "module.h"
#include "../runtime/machine/machine.h"

#define MAX_NAME 64

typedef struct entry {
    char name[MAX_NAME];
    loom_module_fn fn;
    void *ctx;
    const char *doc; /* a built-in's one line, else NULL */
} entry;

struct loom_registry {
    int n, cap;
    entry *e;
    int nso;
    void *so[16]; /* dlopen handles */
};

struct loom_space {
    const loom_registry *r;
    loom_limits limits; /* the target's, handed to every module */
    int n;
    int idx[32]; /* registry entries, in order */
};

static const char *DEFAULT_CPU =
    "attention-fusion,fuse-producers,sparse-loop-order,multi-level-tiling,parallel-vectorize-unroll,sparse-prefetch,"
    "dot-partial-sums,reverse-compute-location";
static const char *DEFAULT_SIM =
    "attention-fusion,fuse-producers,sparse-loop-order,multi-level-tiling,parallel-vectorize-unroll,sparse-prefetch,"
    "dot-partial-sums,reverse-compute-location";

const char *loom_default_modules(const char *target_kind)
{
    if (!target_kind || !strcmp(target_kind, "cpu"))
        return DEFAULT_CPU;
    if (!strcmp(target_kind, "sim"))
        return DEFAULT_SIM;
    return NULL;
}

loom_registry *loom_registry_new(void)
{
    loom_registry *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    loom_error err;
    for (int k = 0; k < loom__builtin_count(); k++) {
        const char *name, *doc;
        loom_module_fn fn = loom__builtin(k, &name, &doc);
        if (loom_registry_add(r, name, fn, NULL, &err)) {
            loom_registry_free(r);
            return NULL;
        }
        r->e[r->n - 1].doc = doc;
    }
    return r;
}

void loom_registry_free(loom_registry *r)
{
    if (!r)
        return;
    free(r->e);
    for (int k = 0; k < r->nso; k++)
        dlclose(r->so[k]);
    free(r);
}

loom_status loom_registry_add(loom_registry *r, const char *name, loom_module_fn fn, void *ctx, loom_error *err)
{
    if (!r || !name || !fn)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_registry_add: NULL %s",
                              !r ? "registry" : !name ? "name" : "module function");
    size_t len = strlen(name);
    if (len == 0 || len >= MAX_NAME)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "module name '%s' must have 1..%d characters",
                              name, MAX_NAME - 1);
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "module name '%s': character '%c' is not one of [a-z0-9_-]", name, c);
    }
    if (loom_registry_find(r, name, NULL, NULL) == 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "module '%s' is already registered", name);
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        entry *e = realloc(r->e, (size_t)cap * sizeof *e);
        if (!e)
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory registering module %s", name);
        r->e = e;
        r->cap = cap;
    }
    entry *e = &r->e[r->n++];
    memcpy(e->name, name, len + 1);
    e->fn = fn;
    e->ctx = ctx;
    e->doc = NULL;
    return LOOM_OK;
}

loom_status loom_registry_load(loom_registry *r, const char *so_path, loom_error *err)
{
    if (!r || !so_path)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_registry_load: NULL argument");
    if (r->nso >= (int)(sizeof r->so / sizeof *r->so))
        return loom_error_set(err, LOOM_ERR_INVALID, so_path, 0, 0, "too many module libraries loaded (max %d)",
                              (int)(sizeof r->so / sizeof *r->so));
    void *h = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return loom_error_set(err, LOOM_ERR_IO, so_path, 0, 0, "cannot load module library: %s",
                              why ? why : "dlopen failed");
    }
    int (*init)(loom_registry *);
    void *sym = dlsym(h, "loom_module_init");
    memcpy(&init, &sym, sizeof init); /* object pointer -> function pointer without a pedantic cast warning */
    if (!sym) {
        dlclose(h);
        return loom_error_set(err, LOOM_ERR_INVALID, so_path, 0, 0,
                              "no loom_module_init symbol: a module library exports "
                              "int loom_module_init(loom_registry *r) (see docs/modules.md)");
    }
    int before = r->n;
    int rc = init(r);
    if (rc || r->n == before) {
        r->n = before; /* forget what a failed initialisation registered: its code goes away */
        dlclose(h);
        if (rc)
            return loom_error_set(err, LOOM_ERR_INVALID, so_path, 0, 0, "loom_module_init returned %d", rc);
        return loom_error_set(err, LOOM_ERR_INVALID, so_path, 0, 0, "loom_module_init registered no module");
    }
    r->so[r->nso++] = h;
    return LOOM_OK;
}

int loom_registry_count(const loom_registry *r) { return r ? r->n : 0; }

const char *loom_registry_name(const loom_registry *r, int k)
{
    return r && k >= 0 && k < r->n ? r->e[k].name : NULL;
}

const char *loom_registry_doc(const loom_registry *r, int k)
{
    return r && k >= 0 && k < r->n ? r->e[k].doc : NULL;
}

int loom_registry_print(const loom_registry *r, FILE *out)
{
    for (int k = 0; k < loom_registry_count(r); k++) {
        const char *doc = loom_registry_doc(r, k);
        if (fprintf(out, "module %-26s %s\n", loom_registry_name(r, k), doc ? doc : "(a user module)") < 0)
            return -1;
    }
    if (fprintf(out, "default cpu %s\ndefault sim %s\n", loom_default_modules("cpu"), loom_default_modules("sim")) < 0)
        return -1;
    return fflush(out) ? -1 : 0;
}

int loom_registry_find(const loom_registry *r, const char *name, loom_module_fn *fn, void **ctx)
{
    for (int k = 0; r && name && k < r->n; k++)
        if (!strcmp(r->e[k].name, name)) {
            if (fn)
                *fn = r->e[k].fn;
            if (ctx)
                *ctx = r->e[k].ctx;
            return 0;
        }
    return -1;
}

static int find_index(const loom_registry *r, const char *name)
{
    for (int k = 0; k < r->n; k++)
        if (!strcmp(r->e[k].name, name))
            return k;
    return -1;
}

loom_status loom_space_new(const loom_registry *r, const char *names, const char *target_kind, loom_space **out,
                           loom_error *err)
{
    *out = NULL;
    if (!r)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_space_new: NULL registry");
    if (!names) {
        names = loom_default_modules(target_kind);
        if (!names)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "unknown target kind '%s' (known: cpu, sim)", target_kind);
    }
    loom_space *s = calloc(1, sizeof *s);
    if (!s)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    s->r = r;
    s->limits = loom_target_cpu_limits(); /* until loom_space_set_limits gives the target's */
    const char *p = names;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *q = p;
        while (*q && *q != ',')
            q++;
        size_t len = (size_t)(q - p);
        while (len && p[len - 1] == ' ')
            len--;
        char name[MAX_NAME];
        int k = -1;
        if (len < MAX_NAME) {
            memcpy(name, p, len);
            name[len] = 0;
            k = find_index(r, name);
        }
        if (k < 0) {
            char known[1024] = "";
            for (int j = 0; j < r->n; j++) {
                size_t l = strlen(known);
                snprintf(known + l, sizeof known - l, "%s%s", j ? ", " : "", r->e[j].name);
            }
            loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "unknown module '%.*s' (known: %s)", (int)len, p,
                           known);
            free(s);
            return LOOM_ERR_INVALID;
        }
        if (s->n >= (int)(sizeof s->idx / sizeof *s->idx)) {
            free(s);
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many modules in one space (max %d)",
                                  (int)(sizeof s->idx / sizeof *s->idx));
        }
        s->idx[s->n++] = k;
        p = q;
    }
    if (s->n == 0) {
        free(s);
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "empty module list");
    }
    *out = s;
    return LOOM_OK;
}

void loom_space_free(loom_space *s) { free(s); }

int loom_space_count(const loom_space *s) { return s ? s->n : 0; }

const char *loom_space_module(const loom_space *s, int k)
{
    return s && k >= 0 && k < s->n ? s->r->e[s->idx[k]].name : NULL;
}

void loom_space_set_limits(loom_space *s, const loom_limits *lim)
{
    if (s && lim)
        s->limits = *lim;
}

const loom_limits *loom_space_limits(const loom_space *s)
{
    return &s->limits;
}

static loom_status apply(const loom_space *s, loom_schedule *sch, int defaults, loom_error *err)
{
    const loom_program *prog = sch->prog;
    for (int st = sch->nstages - 1; st >= 0; st--) {
        const char *bname = prog->tensors[prog->stmts[st].lhs].name;
        int b;
        loom_status rc = loom_get_block(sch, bname, &b, err);
        if (rc)
            return rc;
        for (int k = 0; k < s->n; k++) {
            const entry *e = &s->r->e[s->idx[k]];
            loom_module_ctx mc = {&s->limits, e->ctx, defaults};
            rc = e->fn(sch, b, &mc, err);
            if (rc) {
                char msg[sizeof err->msg];
                snprintf(msg, sizeof msg, "%s", err->msg);
                loom_error_set(err, rc, NULL, 0, 0, "module %s, block %s: %s", e->name, bname, msg);
                return rc;
            }
        }
    }
    return LOOM_OK;
}

loom_status loom_space_apply(const loom_space *s, loom_schedule *sch, loom_error *err)
{
    return apply(s, sch, 0, err);
}

/* ---- the space's default ------------------------------------------------- */

int loom_default_decider(void *ctx, const loom_schedule *sch, int ordinal, int kind, const loom_inst *proto,
                         int64_t *decision)
{
    (void)ctx, (void)ordinal;
    switch (kind) {
    case LOOM_INST_SAMPLE_CATEGORICAL: {
        int best = 0;
        for (int k = 1; k < proto->nattrs; k++)
            if (proto->fattrs[k] > proto->fattrs[best])
                best = k;
        decision[0] = best;
        return 1;
    }
    case LOOM_INST_SAMPLE_LOOP_ORDER:
        decision[0] = proto->attrs[0];
        return 1;
    case LOOM_INST_SAMPLE_COMPUTE_LOCATION:
        decision[0] = LOOM_AT_ROOT;
        return 1;
    case LOOM_INST_SAMPLE_PERFECT_TILE: {
        int n = (int)proto->attrs[0];
        int64_t cap = proto->attrs[1];
        const loom_rv *r = &sch->rvs[proto->inputs[0]];
        int64_t e = loom_iter_extent(sch, r->stage, r->iter);
        for (int k = 0; k < n; k++)
            decision[k] = 1;
        if (e <= 0) {
            decision[0] = 0; /* inferred */
            return n;
        }
        int64_t inner = loom__divisor_at_most(e, cap > 0 ? cap : e);
        decision[n - 1] = inner;
        decision[0] *= e / inner;
        return n;
    }
    default: /* SampleFusionGroup: no edge fused */
        decision[0] = 0;
        return 1;
    }
}

loom_status loom_space_default(const loom_space *s, loom_schedule *sch, loom_error *err)
{
    loom_decider_fn fn = sch->decider;
    void *fctx = sch->decider_ctx;
    sch->decider = loom_default_decider;
    sch->decider_ctx = NULL;
    loom_status rc = apply(s, sch, 1, err);
    sch->decider = fn;
    sch->decider_ctx = fctx;
    return rc;
}
