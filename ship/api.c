/* The flat C API for foreign callers (api.h). */
#include "api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/ir/util.h"
#include "../runtime/data/dataset.h"
#include "../runtime/lower/lower.h"
#include "../search/database/database.h"
#include "../search/tune/tune.h"
#include "replay.h"
#include "ship.h"

int loom_api_version(void) { return 1; }

void loom_api_free(void *p) { free(p); }

static int fail(loom_status st, const loom_error *err, char *errbuf, size_t errn)
{
    if (errbuf && errn) {
        char buf[1600];
        snprintf(errbuf, errn, "%s", loom_error_format(err, buf, sizeof buf));
    }
    return (int)st;
}

/* "NAME=VALUE" lines into specs/params. */
static loom_status parse_inputs(const char *data, const char *params, loom_data_spec *specs, int *nspecs,
                                loom_param_spec *ps, int *nparams, loom_error *err)
{
    *nspecs = *nparams = 0;
    for (int which = 0; which < 2; which++) {
        const char *s = which ? params : data;
        while (s && *s) {
            const char *nl = strchr(s, '\n');
            size_t len = nl ? (size_t)(nl - s) : strlen(s);
            char line[1024];
            if (len >= sizeof line)
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "an input line is too long");
            memcpy(line, s, len);
            line[len] = 0;
            s = nl ? nl + 1 : s + len;
            if (!len)
                continue;
            char *eq = strchr(line, '=');
            if (!eq || eq == line || !eq[1] || (size_t)(eq - line) >= 32)
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "expected NAME=%s, got '%s'",
                                      which ? "INT" : "FILE.mtx", line);
            *eq = 0;
            if (!which) {
                if (*nspecs == LOOM_MAX_TENSORS || strlen(eq + 1) >= sizeof specs->path)
                    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many data files or a path too long");
                memcpy(specs[*nspecs].tensor, line, strlen(line) + 1);
                memcpy(specs[*nspecs].path, eq + 1, strlen(eq + 1) + 1);
                ++*nspecs;
            } else {
                char *end;
                long long v = strtoll(eq + 1, &end, 10);
                if (*end || v <= 0 || *nparams == LOOM_MAX_SIZES)
                    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                          "size %s expects a positive integer, got '%s'", line, eq + 1);
                memcpy(ps[*nparams].name, line, strlen(line) + 1); /* < 32: checked above */
                ps[*nparams].value = v;
                ++*nparams;
            }
        }
    }
    return LOOM_OK;
}

static loom_status load(const char *workload, const char *data, const char *params, loom_program **prog,
                        loom_dataset **ds, loom_error *err)
{
    loom_data_spec specs[LOOM_MAX_TENSORS];
    loom_param_spec ps[LOOM_MAX_SIZES];
    int ns, np;
    *prog = NULL;
    *ds = NULL;
    loom_status st = parse_inputs(data, params, specs, &ns, ps, &np, err);
    if (!st)
        st = loom_program_parse_file(workload, prog, err);
    if (!st)
        st = loom_dataset_load(*prog, specs, ns, ps, np, 1, ds, err);
    return st;
}

static void num(loom_strbuf *b, const char *key, double v)
{
    if (isfinite(v))
        loom_strbuf_printf(b, ", \"%s\": %.9g", key, v);
    else
        loom_strbuf_printf(b, ", \"%s\": null", key);
}

/* "spmm" from "workloads/spmm.loom" */
static void stem(const char *path, char *out, size_t n)
{
    const char *b = strrchr(path, '/');
    snprintf(out, n, "%s", b ? b + 1 : path);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = 0;
}

int loom_api_tune(const char *workload, const char *data, const char *params, const char *target, int trials,
                  const char *db, uint64_t seed, int batch, int remeasure, char **json, char *errbuf, size_t errn)
{
    loom_error err;
    loom_error_clear(&err);
    *json = NULL;
    if (!workload || !db || trials < 1)
        return fail(loom_error_set(&err, LOOM_ERR_INVALID, NULL, 0, 0, "a workload, a db directory and trials >= 1 "
                                                                        "are needed"),
                    &err, errbuf, errn);
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    loom_status st = load(workload, data, params, &prog, &ds, &err);
    char name[256];
    stem(workload, name, sizeof name);
    size_t tl = 0;
    char *text = NULL;
    FILE *wf = st ? NULL : fopen(workload, "rb");
    if (wf) {
        if (loom_read_stream(wf, (size_t)1 << 20, &text, &tl))
            text = NULL; /* the text is only stored in records */
        fclose(wf);
    }
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = db;
    o.trials = trials;
    if (target)
        o.target = target;
    o.search.seed = seed;
    if (batch > 0)
        o.batch = batch;
    if (remeasure >= 0)
        o.remeasure_rounds = remeasure;
    o.workload_name = name;
    o.workload_text = text;
    loom_tune_result r;
    if (!st)
        st = loom_tune(prog, ds, &o, &r, &err);
    if (!st) {
        loom_strbuf b = {0};
        loom_strbuf_printf(&b, "{\"workload\": \"%s\", \"target\": \"%s\", \"trials\": %d, \"measured\": %d", name,
                           r.target_fp, r.trials, r.measured);
        num(&b, "best_latency_s", r.best_latency_s);
        num(&b, "default_latency_s", r.default_latency_s);
        num(&b, "naive_latency_s", r.naive_latency_s);
        num(&b, "best_gflops", r.best_gflops);
        loom_strbuf_printf(&b, ", \"best_trace\": \"%s\"}", r.best_trace);
        if (b.oom) {
            free(b.s);
            st = loom_error_set(&err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        } else {
            *json = b.s;
        }
    }
    free(text);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return st ? fail(st, &err, errbuf, errn) : 0;
}

int loom_api_emit_lib(const char *workload, const char *data, const char *params, const char *db, const char *target,
                      int any_data, const char *name, const char *dir, char **json, char *errbuf, size_t errn)
{
    loom_error err;
    loom_error_clear(&err);
    *json = NULL;
    if (!workload || !db || !name || !dir)
        return fail(loom_error_set(&err, LOOM_ERR_INVALID, NULL, 0, 0, "a workload, a db, a name and a directory are "
                                                                        "needed"),
                    &err, errbuf, errn);
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    loom_schedule *sch = malloc(sizeof *sch);
    lir_func *f = NULL;
    loom_ship_best_info info;
    loom_status st = sch ? load(workload, data, params, &prog, &ds, &err)
                         : loom_error_set(&err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (!st)
        st = loom_ship_best(db, prog, ds, target ? target : "cpu", any_data, sch, NULL, &info, &err);
    if (!st)
        st = loom_lower_for(sch, &info.limits, &f, &err); /* for the target it was tuned and validated for */
    char origin[1400];
    if (!st) {
        snprintf(origin, sizeof origin, "loom (Python): workload %s, best record of %s (line %d): %.6g s on %s.",
                 workload, db, info.line, info.latency_s, info.target_fp);
        st = loom_ship_write(f, name, dir, origin, 1, &err);
    }
    char *c = NULL, *h = NULL, *sig = NULL;
    if (!st)
        st = loom_ship_sources(f, name, origin, &c, &h, &sig, &err);
    if (!st) {
        loom_strbuf b = {0};
        loom_strbuf_printf(&b, "{\"library\": \"%s/lib%s.so\", \"header\": \"%s/%s.h\", \"source\": \"%s/%s.c\", "
                               "\"line\": %d, \"latency_s\": %.9g, \"signature\": %s}",
                           dir, name, dir, name, dir, name, info.line, info.latency_s, sig);
        if (b.oom) {
            free(b.s);
            st = loom_error_set(&err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        } else {
            *json = b.s;
        }
    }
    free(c);
    free(h);
    free(sig);
    if (f)
        loom_lir_func_free(f);
    free(sch);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return st ? fail(st, &err, errbuf, errn) : 0;
}

static void json_string(loom_strbuf *b, const char *s)
{
    /* well-formed UTF-8 only (the loader repairs records; this is for any
       other string): a strict JSON reader refuses the whole text for one
       bad byte */
    loom_strbuf fixed = {0};
    size_t n = s ? strlen(s) : 0;
    if (s && loom_utf8_check(s, n) < n) {
        loom_utf8_repair(&fixed, s, n);
        s = fixed.oom ? "" : fixed.s;
    }
    loom_strbuf_puts(b, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            loom_strbuf_printf(b, "\\%c", c);
        else if (c < 0x20)
            loom_strbuf_printf(b, "\\u%04x", c);
        else
            loom_strbuf_put(b, (const char *)&c, 1);
    }
    loom_strbuf_puts(b, "\"");
    free(fixed.s);
}

/* , "warnings": [...] from the loader's warning text (one a line) */
static void warnings_json(loom_strbuf *b, const char *text)
{
    loom_strbuf_puts(b, ", \"warnings\": [");
    int k = 0;
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *line = strndup(p, len);
        if (!line) {
            b->oom = 1;
            break;
        }
        loom_strbuf_puts(b, k++ ? ", " : "");
        json_string(b, line);
        free(line);
        p += len + (nl != NULL);
    }
    loom_strbuf_puts(b, "]");
}

static void record_json(loom_strbuf *b, const loom_record *r)
{
    loom_strbuf_printf(b, "{\"line\": %d, \"workload\": \"%016llx\", \"workload_name\": ", r->line,
                       (unsigned long long)r->workload_hash);
    json_string(b, r->workload_name);
    loom_strbuf_puts(b, ", \"data\": ");
    json_string(b, r->data_fp);
    loom_strbuf_puts(b, ", \"target\": ");
    json_string(b, r->target_fp);
    loom_strbuf_printf(b, ", \"schedule\": \"%016llx\", \"status\": \"%s\"", (unsigned long long)r->schedule_hash,
                       loom_record_status_name(r->status));
    num(b, "latency_s", r->latency_s);
    num(b, "flops", r->flops);
    num(b, "compile_s", r->compile_s);
    loom_strbuf_puts(b, ", \"message\": ");
    json_string(b, r->message);
    num(b, "time", r->time);
    num(b, "core_line_ns", r->core_line_ns > 0 ? r->core_line_ns : NAN);
    if (r->nsamples) {
        loom_strbuf_puts(b, ", \"remeasure\": {\"samples\": [");
        for (int k = 0; k < r->nsamples; k++)
            isfinite(r->samples[k]) ? loom_strbuf_printf(b, "%s%.9g", k ? ", " : "", r->samples[k])
                                    : loom_strbuf_printf(b, "%snull", k ? ", " : "");
        loom_strbuf_printf(b, "], \"default\": %s", r->is_default ? "true" : "false");
        num(b, "load", r->load);
        loom_strbuf_printf(b, ", \"cores\": %d}", r->cores);
    } else {
        loom_strbuf_puts(b, ", \"remeasure\": null");
    }
    loom_strbuf_printf(b, ", \"trace\": %s}", r->trace_json ? r->trace_json : "null");
}

int loom_api_db_records(const char *dir, char **json, char *errbuf, size_t errn)
{
    loom_error err;
    loom_error_clear(&err);
    *json = NULL;
    loom_db *db = NULL;
    char *wtext = NULL;
    size_t wlen = 0;
    FILE *w = open_memstream(&wtext, &wlen); /* NULL: no warnings kept */
    loom_status st = dir ? loom_db_open_readonly(dir, w, &db, &err)
                         : loom_error_set(&err, LOOM_ERR_INVALID, NULL, 0, 0, "no directory");
    if (w)
        fclose(w);
    if (st) {
        free(wtext);
        return fail(st, &err, errbuf, errn);
    }
    loom_strbuf b = {0};
    loom_strbuf_printf(&b, "{\"skipped\": %d, \"repaired\": %d", loom_db_skipped(db), loom_db_repaired(db));
    warnings_json(&b, wtext);
    free(wtext);
    loom_strbuf_puts(&b, ", \"records\": [");
    for (int i = 0; i < loom_db_count(db); i++) {
        if (i)
            loom_strbuf_puts(&b, ",\n");
        record_json(&b, loom_db_record(db, i));
    }
    loom_strbuf_puts(&b, "]}");
    loom_db_close(db);
    if (b.oom) {
        free(b.s);
        return fail(loom_error_set(&err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory"), &err, errbuf, errn);
    }
    *json = b.s;
    return 0;
}
