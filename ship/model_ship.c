/* A whole model shipped as one C library (model_ship.h). */
#include "model_ship.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/ir/util.h"
#include "../modules/module.h"
#include "../runtime/lower/lower.h"
#include "../runtime/target/target.h"
#include "replay.h"
#include "ship.h"

#define sb_printf loom_strbuf_printf
typedef loom_strbuf sbuf;

void loom_model_ship_result_free(loom_model_ship_result *r)
{
    if (!r)
        return;
    free(r->tasks);
    r->tasks = NULL;
}

typedef struct ship_ctx {
    const loom_model *m;
    const char *db, *target, *name, *dir;
    loom_target tg;
    cJSON **ksig;                /* per task: its kernel's signature */
    loom_model_ship_result *res;
} ship_ctx;

static loom_status task_err(const ship_ctx *s, int task, const loom_error *e, loom_error *err)
{
    const loom_model_call *c = &s->m->calls[s->m->tasks[task].call];
    return loom_error_set(err, e->status, s->m->path, c->line, 0, "task %s: %s", c->name, e->msg);
}

/* Task k's schedule: its best record in the database, else the default. */
static loom_status task_schedule(ship_ctx *s, int k, loom_schedule *sch, loom_error *e)
{
    const loom_model_call *c = &s->m->calls[s->m->tasks[k].call];
    loom_model_ship_task *t = &s->res->tasks[k];
    if (s->db) {
        loom_ship_best_info info;
        loom_status st = loom_ship_best(s->db, c->prog, c->ds, s->target, 0, sch, NULL, &info, e);
        if (!st) {
            t->from_record = 1;
            t->record_line = info.line;
            t->record_latency_s = info.latency_s;
            return LOOM_OK;
        }
        if (st != LOOM_ERR_WRONG)
            return st;
        snprintf(t->why_default, sizeof t->why_default, "%.1000s", e->msg);
        loom_error_clear(e);
    }
    loom_status st = loom_schedule_init(sch, c->prog, NULL, e);
    return st ? st : loom_default_build(NULL, &s->tg.limits, sch, NULL, e);
}

/* Write task k's kernel (NAME_TASK.c, .h) and keep its signature. */
static loom_status ship_task(ship_ctx *s, int k, loom_error *err)
{
    const loom_model_call *c = &s->m->calls[s->m->tasks[k].call];
    loom_model_ship_task *t = &s->res->tasks[k];
    snprintf(t->kernel, sizeof t->kernel, "%s_%s", s->name, c->name);
    loom_schedule *sch = malloc(sizeof *sch);
    if (!sch)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_error e;
    loom_error_clear(&e);
    lir_func *f = NULL;
    char *csrc = NULL, *hsrc = NULL, *sig = NULL, path[4200];
    loom_status st = task_schedule(s, k, sch, &e);
    if (!st) /* the library runs on this CPU: a simulated target's schedule is lowered for it */
        st = loom_lower_for(sch, s->tg.kind == LOOM_TARGET_SIM ? NULL : &s->tg.limits, &f, &e);
    char origin[1400];
    if (t->from_record)
        snprintf(origin, sizeof origin, "loom replay %s: task %s of model %s, best record of %s (line %d): %.6g s on %s.",
                 s->m->path, c->name, s->m->name, s->db, t->record_line, t->record_latency_s, s->tg.fingerprint);
    else
        snprintf(origin, sizeof origin, "loom replay %s: task %s of model %s, its default schedule.", s->m->path,
                 c->name, s->m->name);
    if (!st)
        st = loom_ship_sources(f, t->kernel, origin, &csrc, &hsrc, &sig, &e);
    if (!st && !(s->ksig[k] = cJSON_Parse(sig)))
        st = loom_error_set(&e, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (!st && !(snprintf(path, sizeof path, "%s/%s.c", s->dir, t->kernel), st = loom_ship_write_text(path, csrc, &e)))
        snprintf(path, sizeof path, "%s/%s.h", s->dir, t->kernel), st = loom_ship_write_text(path, hsrc, &e);
    free(csrc), free(hsrc), free(sig);
    if (f)
        loom_lir_func_free(f);
    free(sch);
    return st ? task_err(s, k, &e, err) : LOOM_OK;
}

/* ---- the forward pass ---------------------------------------------------- */

static cJSON *call_tensors(const ship_ctx *s, int call)
{
    return cJSON_GetObjectItem(s->ksig[s->m->calls[call].task], "tensors");
}

static int is_output(const loom_model *m, int call, int t)
{
    for (int o = 0; o < m->noutputs; o++)
        if (m->outputs[o].call == call && m->outputs[o].tensor == t)
            return 1;
    return 0;
}

/* The feed into (call, t), or -1. */
static int feed_into(const loom_model *m, int call, int t)
{
    for (int f = 0; f < m->nfeeds; f++)
        if (m->feeds[f].dst == call && m->feeds[f].dst_tensor == t)
            return f;
    return -1;
}

/* 1: (call, t) is an intermediate, allocated by the entry. */
static int is_intermediate(const loom_model *m, int call, int t)
{
    if (is_output(m, call, t))
        return 0;
    for (int f = 0; f < m->nfeeds; f++)
        if (m->feeds[f].src == call && m->feeds[f].src_tensor == t)
            return 1;
    return 0;
}

/* 1: (call, t) takes arguments of the model's entry. */
static int is_param(const ship_ctx *s, int call, const cJSON *T)
{
    int t = cJSON_GetObjectItem(T, "index")->valueint;
    return cJSON_GetArraySize(cJSON_GetObjectItem(T, "args")) > 0 && feed_into(s->m, call, t) < 0 &&
           !is_intermediate(s->m, call, t);
}

/* The C expression of the vals of call's tensor t (an output or fed input). */
static void vals_expr(const ship_ctx *s, int call, int t, char *buf, size_t n)
{
    int f;
    while ((f = feed_into(s->m, call, t)) >= 0) {
        call = s->m->feeds[f].src;
        t = s->m->feeds[f].src_tensor;
    }
    const char *tn = s->m->calls[call].prog->tensors[t].name;
    if (is_intermediate(s->m, call, t))
        snprintf(buf, n, "loom_tmp_%s_%s", s->m->calls[call].name, tn);
    else
        snprintf(buf, n, "%s_%s_vals", s->m->calls[call].name, tn);
}

static int64_t dense_count(const cJSON *T)
{
    int64_t n = 1;
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItem(T, "dims")) n *= (int64_t)d->valuedouble;
    return n;
}

static void entry_prototype(sbuf *b, const ship_ctx *s)
{
    sb_printf(b, "int %s(", s->name);
    int first = 1;
    for (int k = 0; k < s->m->ncalls; k++) {
        const cJSON *T, *a;
        cJSON_ArrayForEach(T, call_tensors(s, k))
        {
            if (!is_param(s, k, T))
                continue;
            int out = !strcmp(cJSON_GetObjectItem(T, "role")->valuestring, "output");
            cJSON_ArrayForEach(a, cJSON_GetObjectItem(T, "args"))
            {
                size_t l = strlen(a->valuestring);
                int v = l >= 5 && !strcmp(a->valuestring + l - 5, "_vals");
                sb_printf(b, "%s%s%s_%s", first ? "" : ", ",
                          v ? (out ? "float *" : "const float *") : "const int32_t *", s->m->calls[k].name,
                          a->valuestring);
                first = 0;
            }
        }
    }
    sb_printf(b, "%s)", first ? "void" : "");
}

/* One call: its kernel's typed entry, runs times. */
static void entry_call(sbuf *b, const ship_ctx *s, int k)
{
    const loom_model_call *c = &s->m->calls[k];
    const cJSON *sig = s->ksig[c->task], *z, *T, *a;
    sb_printf(b, "    for (int loom_r = 0; loom_r < %d && !loom_rc; loom_r++) /* %s */\n        loom_rc = %s(", c->runs,
              c->name, s->res->tasks[c->task].kernel);
    int first = 1;
    cJSON_ArrayForEach(z, cJSON_GetObjectItem(sig, "sizes"))
    {
        sb_printf(b, "%s%lld", first ? "" : ", ", (long long)cJSON_GetObjectItem(z, "value")->valuedouble);
        first = 0;
    }
    cJSON_ArrayForEach(T, cJSON_GetObjectItem(sig, "tensors"))
    {
        int t = cJSON_GetObjectItem(T, "index")->valueint;
        char ex[256];
        cJSON_ArrayForEach(a, cJSON_GetObjectItem(T, "args"))
        {
            if (is_param(s, k, T))
                snprintf(ex, sizeof ex, "%s_%s", c->name, a->valuestring);
            else
                vals_expr(s, k, t, ex, sizeof ex);
            sb_printf(b, "%s%s", first ? "" : ", ", ex);
            first = 0;
        }
    }
    sb_printf(b, ");\n");
}

static void entry(sbuf *b, const ship_ctx *s)
{
    const loom_model *m = s->m;
    sb_printf(b, "LOOM_SHIP_EXPORT ");
    entry_prototype(b, s);
    sb_printf(b, "\n{\n    int loom_rc = 0;\n");
    const cJSON *T;
    for (int k = 0; k < m->ncalls; k++)
        cJSON_ArrayForEach(T, call_tensors(s, k))
        {
            int t = cJSON_GetObjectItem(T, "index")->valueint;
            if (is_intermediate(m, k, t))
                sb_printf(b, "    float *loom_tmp_%s_%s = aligned_alloc(64, (sizeof(float) * %lld + 64) / 64 * 64);\n",
                          m->calls[k].name, m->calls[k].prog->tensors[t].name, (long long)dense_count(T));
        }
    sb_printf(b, "    if (0");
    for (int k = 0; k < m->ncalls; k++)
        cJSON_ArrayForEach(T, call_tensors(s, k))
        {
            int t = cJSON_GetObjectItem(T, "index")->valueint;
            if (is_intermediate(m, k, t))
                sb_printf(b, " || !loom_tmp_%s_%s", m->calls[k].name, m->calls[k].prog->tensors[t].name);
        }
    sb_printf(b, ")\n        loom_rc = 1;\n");
    for (int k = 0; k < m->ncalls; k++)
        entry_call(b, s, k);
    for (int k = 0; k < m->ncalls; k++)
        cJSON_ArrayForEach(T, call_tensors(s, k))
        {
            int t = cJSON_GetObjectItem(T, "index")->valueint;
            if (is_intermediate(m, k, t))
                sb_printf(b, "    free(loom_tmp_%s_%s);\n", m->calls[k].name, m->calls[k].prog->tensors[t].name);
        }
    sb_printf(b, "    return loom_rc;\n}\n");
}

/* ---- the signature --------------------------------------------------------- */

/* The entry's tensors, flattened; pattern_of remapped (-1: not among them). */
static loom_status sig_tensors(const ship_ctx *s, cJSON *arr, loom_error *err)
{
    int idx[LOOM_MODEL_MAX_CALLS][LOOM_MAX_TENSORS]; /* 32 KiB */
    int n = 0;
    for (int k = 0; k < s->m->ncalls; k++) {
        const cJSON *T;
        cJSON_ArrayForEach(T, call_tensors(s, k))
        {
            int t = cJSON_GetObjectItem(T, "index")->valueint;
            idx[k][t] = is_param(s, k, T) ? n++ : -1;
        }
    }
    for (int k = 0; k < s->m->ncalls; k++) {
        const cJSON *T, *a;
        cJSON_ArrayForEach(T, call_tensors(s, k))
        {
            int t = cJSON_GetObjectItem(T, "index")->valueint;
            if (idx[k][t] < 0)
                continue;
            cJSON *o = cJSON_Duplicate(T, 1);
            char nm[256];
            snprintf(nm, sizeof nm, "%s_%s", s->m->calls[k].name, cJSON_GetObjectItem(T, "name")->valuestring);
            for (int j = 0; o && j < cJSON_GetArraySize(arr); j++)
                if (!strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, j), "name")->valuestring, nm)) {
                    cJSON_Delete(o);
                    return loom_error_set(err, LOOM_ERR_INVALID, s->m->path, s->m->calls[k].line, 0,
                                          "task %s: two arguments of the model's entry are named %s: rename a task",
                                          s->m->calls[k].name, nm);
                }
            if (!o)
                return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
            cJSON_ReplaceItemInObject(o, "name", cJSON_CreateString(nm));
            cJSON_AddStringToObject(o, "call", s->m->calls[k].name);
            cJSON_AddStringToObject(o, "tensor", cJSON_GetObjectItem(T, "name")->valuestring);
            int p = cJSON_GetObjectItem(T, "pattern_of")->valueint;
            cJSON_ReplaceItemInObject(o, "pattern_of", cJSON_CreateNumber(p >= 0 && p < LOOM_MAX_TENSORS ? idx[k][p] : -1));
            cJSON *args = cJSON_CreateArray();
            cJSON_ArrayForEach(a, cJSON_GetObjectItem(T, "args"))
            {
                snprintf(nm, sizeof nm, "%s_%s", s->m->calls[k].name, a->valuestring);
                cJSON_AddItemToArray(args, cJSON_CreateString(nm));
            }
            cJSON_ReplaceItemInObject(o, "args", args);
            cJSON_AddItemToArray(arr, o);
        }
    }
    return LOOM_OK;
}

static cJSON *sig_calls(const ship_ctx *s)
{
    cJSON *calls = cJSON_CreateArray();
    for (int k = 0; k < s->m->ncalls; k++) {
        const loom_model_call *c = &s->m->calls[k];
        const loom_model_ship_task *t = &s->res->tasks[c->task];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", c->name);
        cJSON_AddStringToObject(o, "task", s->m->calls[s->m->tasks[c->task].call].name);
        cJSON_AddStringToObject(o, "kernel", t->kernel);
        cJSON_AddNumberToObject(o, "runs", c->runs);
        cJSON_AddBoolToObject(o, "from_record", t->from_record);
        cJSON_AddNumberToObject(o, "record_line", t->record_line);
        cJSON_AddItemToArray(calls, o);
    }
    return calls;
}

static cJSON *sig_feeds(const ship_ctx *s)
{
    cJSON *feeds = cJSON_CreateArray();
    for (int f = 0; f < s->m->nfeeds; f++) {
        const loom_model_feed *fd = &s->m->feeds[f];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "src", s->m->calls[fd->src].name);
        cJSON_AddStringToObject(o, "src_tensor", s->m->calls[fd->src].prog->tensors[fd->src_tensor].name);
        cJSON_AddStringToObject(o, "dst", s->m->calls[fd->dst].name);
        cJSON_AddStringToObject(o, "dst_tensor", s->m->calls[fd->dst].prog->tensors[fd->dst_tensor].name);
        cJSON_AddItemToArray(feeds, o);
    }
    return feeds;
}

static loom_status signature(const ship_ctx *s, char **out, loom_error *err)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", s->name);
    cJSON_AddStringToObject(j, "kind", "model");
    cJSON_AddStringToObject(j, "model", s->m->name);
    cJSON_AddNumberToObject(j, "abi_version", 1);
    cJSON_AddItemToObject(j, "calls", sig_calls(s));
    cJSON_AddItemToObject(j, "feeds", sig_feeds(s));
    cJSON *outs = cJSON_AddArrayToObject(j, "outputs");
    char nm[256];
    for (int o = 0; o < s->m->noutputs; o++) {
        const loom_model_output *mo = &s->m->outputs[o];
        snprintf(nm, sizeof nm, "%s_%s", s->m->calls[mo->call].name, s->m->calls[mo->call].prog->tensors[mo->tensor].name);
        cJSON_AddItemToArray(outs, cJSON_CreateString(nm));
    }
    cJSON *ks = cJSON_AddArrayToObject(j, "kernels");
    for (int k = 0; k < s->m->ntasks; k++)
        cJSON_AddItemToArray(ks, cJSON_Duplicate(s->ksig[k], 1));
    loom_status st = sig_tensors(s, cJSON_AddArrayToObject(j, "tensors"), err);
    *out = st ? NULL : cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!st && !*out)
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return st;
}

/* ---- the files ----------------------------------------------------------- */

static void c_escape(sbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            sb_printf(b, "\\");
        sb_printf(b, "%c", *s);
    }
}

static void model_c(sbuf *b, const ship_ctx *s, const char *sig)
{
    sb_printf(b, "/* %s.c -- the forward pass of model %s (%s), shipped by loom (ship/model_ship.h);\n"
                 " * %s.h documents the entry.  Build with the kernels' files:\n"
                 " * cc %s %s.c",
              s->name, s->m->name, s->m->path, s->name, loom_ship_cflags(), s->name);
    for (int k = 0; k < s->m->ntasks; k++)
        sb_printf(b, " %s.c", s->res->tasks[k].kernel);
    sb_printf(b, " -o lib%s.so -lm */\n#include <stdint.h>\n#include <stdlib.h>\n", s->name);
    for (int k = 0; k < s->m->ntasks; k++)
        sb_printf(b, "#include \"%s.h\"\n", s->res->tasks[k].kernel);
    sb_printf(b, "#if defined(__GNUC__)\n#define LOOM_SHIP_EXPORT __attribute__((visibility(\"default\")))\n"
                 "#else\n#define LOOM_SHIP_EXPORT\n#endif\n\nLOOM_SHIP_EXPORT const char %s_signature[] = \"",
              s->name);
    c_escape(b, sig);
    sb_printf(b, "\";\n\n");
    entry(b, s);
}

static void model_h(sbuf *b, const ship_ctx *s)
{
    sb_printf(b, "/* %s.h -- the forward pass of model %s (%s), shipped by loom (ship/model_ship.h).\n"
                 " * Link with -L. -l%s (OpenMP is a dependency).  The entry runs the model's calls in order:\n",
              s->name, s->m->name, s->m->path, s->name);
    for (int k = 0; k < s->m->ncalls; k++) {
        const loom_model_call *c = &s->m->calls[k];
        const loom_model_ship_task *t = &s->res->tasks[c->task];
        sb_printf(b, " *   %-16s %d x %s (%s)\n", c->name, c->runs, t->kernel,
                  t->from_record ? "its tuned record" : "the default schedule");
    }
    sb_printf(b, " * Arguments: per call, the arrays of its kernel's typed entry (see NAME_TASK.h) prefixed\n"
                 " * with the call's name, except fed inputs and intermediates (allocated by the entry).\n"
                 " * Returns 0 done, else the first non-zero return of a kernel (1 out of memory, 2 a size\n"
                 " * differs, 3 a NULL array).  Sizes are fixed.  No global state.\n */\n"
                 "#ifndef %s_LOOM_MODEL_H\n#define %s_LOOM_MODEL_H\n\n#include <stdint.h>\n\n"
                 "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
              s->name, s->name);
    entry_prototype(b, s);
    sb_printf(b, ";\n\n/* The facts above as JSON (calls, feeds, outputs, kernels, tensors). */\n"
                 "extern const char %s_signature[];\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n",
              s->name);
}

static loom_status write_model(ship_ctx *s, int build, loom_error *err)
{
    char *sig = NULL;
    loom_status st = signature(s, &sig, err);
    if (st)
        return st;
    sbuf c = {0}, h = {0};
    model_c(&c, s, sig);
    model_h(&h, s);
    free(sig);
    char cp[4200], hp[4200], so[4200];
    snprintf(cp, sizeof cp, "%s/%s.c", s->dir, s->name);
    snprintf(hp, sizeof hp, "%s/%s.h", s->dir, s->name);
    snprintf(so, sizeof so, "%s/lib%s.so", s->dir, s->name);
    if (c.oom || h.oom)
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory generating the model library");
    if (!st)
        st = loom_ship_write_text(cp, c.s, err);
    if (!st)
        st = loom_ship_write_text(hp, h.s, err);
    free(c.s), free(h.s);
    int n = s->m->ntasks + 1;
    char(*paths)[4200] = st || !build ? NULL : malloc(sizeof *paths * (size_t)n);
    const char **pp = paths ? malloc(sizeof *pp * (size_t)n) : NULL;
    if (!st && build && pp) {
        pp[0] = cp;
        for (int k = 0; k < s->m->ntasks; k++) {
            snprintf(paths[k + 1], sizeof paths[k + 1], "%s/%s.c", s->dir, s->res->tasks[k].kernel);
            pp[k + 1] = paths[k + 1];
        }
        st = loom_ship_build(pp, n, so, err);
    } else if (!st && build) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    free(pp), free(paths);
    return st;
}

static loom_status check_name(const loom_model *m, const char *name, loom_error *err)
{
    char k[128];
    if (!loom_ship_name_ok(name))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "'%s' cannot name a model library: use a C identifier of 1..40 characters, not a C "
                              "keyword, not starting with loom_",
                              name ? name : "(null)");
    for (int t = 0; t < m->ntasks; t++) {
        snprintf(k, sizeof k, "%s_%s", name, m->calls[m->tasks[t].call].name);
        if (!loom_ship_name_ok(k))
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "'%s' cannot name a model library: its kernel %s would be longer than 40 "
                                  "characters (use a shorter name)",
                                  name, k);
    }
    return LOOM_OK;
}

loom_status loom_model_ship(const loom_model *m, const char *db_dir, const char *target, const char *name,
                            const char *dir, int build, loom_model_ship_result *res, loom_error *err)
{
    memset(res, 0, sizeof *res);
    loom_status st = check_name(m, name, err);
    if (st)
        return st;
    ship_ctx s = {.m = m, .db = db_dir, .target = target ? target : "cpu", .name = name, .dir = dir, .res = res};
    s.ksig = calloc((size_t)m->ntasks, sizeof *s.ksig);
    res->tasks = calloc((size_t)m->ntasks, sizeof *res->tasks);
    st = s.ksig && res->tasks ? loom_target_open(s.target, NULL, NULL, &s.tg, err)
                              : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int k = 0; k < m->ntasks && !st; k++)
        st = ship_task(&s, k, err);
    for (int k = 0; k < m->ntasks && !st; k++)
        res->from_records += res->tasks[k].from_record;
    if (!st)
        st = write_model(&s, build, err);
    for (int k = 0; s.ksig && k < m->ntasks; k++)
        cJSON_Delete(s.ksig[k]);
    free(s.ksig);
    if (st)
        loom_model_ship_result_free(res);
    return st;
}
