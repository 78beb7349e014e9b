/* loom: one tuning record <-> one JSON line of the database file (see
 * database.h for the format), below database.c: parsing a line into a
 * record with the reason a bad line is skipped, and a record into its
 * line. */
#include "database.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../traces/trace.h"
#include "database_internal.h"

#define FORMAT_NAME "loom-record"
#define FORMAT_VERSION 1

/* ---- records ------------------------------------------------------------ */

void loom__db_record_free(loom_record *r)
{
    if (!r)
        return;
    free(r->workload_name);
    free(r->workload_text);
    free(r->data_fp);
    free(r->target_fp);
    free(r->trace_json);
    free(r->message);
    free(r->samples);
    free(r->pins_json);
    free(r);
}

char *loom__db_dup_or_null(const char *s, int *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

static int is_hex16(const char *s)
{
    if (strlen(s) != 16)
        return 0;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return 0;
    }
    return 1;
}

static void hex16(uint64_t v, char buf[17])
{
    snprintf(buf, 17, "%016" PRIx64, v);
}

/* ---- one line -> one record ------------------------------------------------ */

static const char *json_type_name(const cJSON *it)
{
    if (cJSON_IsString(it))
        return "a string";
    if (cJSON_IsNumber(it))
        return "a number";
    if (cJSON_IsBool(it))
        return "a boolean";
    if (cJSON_IsNull(it))
        return "null";
    if (cJSON_IsArray(it))
        return "an array";
    if (cJSON_IsObject(it))
        return "an object";
    return "an invalid value";
}

/* The member `key`, or NULL after writing "missing field" to why. */
static const cJSON *field(const cJSON *o, const char *key, char *why, size_t n)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it)
        snprintf(why, n, "missing field '%s'", key);
    return it;
}

static int get_string(const cJSON *o, const char *key, const char **out, char *why, size_t n)
{
    const cJSON *it = field(o, key, why, n);
    if (!it)
        return -1;
    if (!cJSON_IsString(it) || !it->valuestring) {
        snprintf(why, n, "field '%s': expected a string, got %s", key, json_type_name(it));
        return -1;
    }
    *out = it->valuestring;
    return 0;
}

static int get_hex(const cJSON *o, const char *key, uint64_t *out, char *why, size_t n)
{
    const char *s;
    if (get_string(o, key, &s, why, n))
        return -1;
    if (!is_hex16(s)) {
        snprintf(why, n, "field '%s': expected 16 hex digits, got '%.40s'", key, s);
        return -1;
    }
    *out = strtoull(s, NULL, 16);
    return 0;
}

/* A finite number; with null_ok, null gives INFINITY. */
static int get_number(const cJSON *o, const char *key, int null_ok, double *out, char *why, size_t n)
{
    const cJSON *it = field(o, key, why, n);
    if (!it)
        return -1;
    if (null_ok && cJSON_IsNull(it)) {
        *out = INFINITY;
        return 0;
    }
    if (!cJSON_IsNumber(it)) {
        snprintf(why, n, "field '%s': expected a number%s, got %s", key, null_ok ? " or null" : "",
                 json_type_name(it));
        return -1;
    }
    if (!isfinite(it->valuedouble)) {
        snprintf(why, n, "field '%s': expected a finite number", key);
        return -1;
    }
    *out = it->valuedouble;
    return 0;
}

/* Check that `text` is a trace loom_trace_from_json accepts.  0, or -1 with
 * why ("field 'trace': ..."); -2 when out of memory. */
static int check_trace(const char *text, char *why, size_t n)
{
    loom_trace *t = NULL;
    loom_error e;
    loom_error_clear(&e);
    loom_status st = loom_trace_from_json(text, NULL, &t, &e);
    loom_trace_free(t);
    if (st == LOOM_ERR_NOMEM)
        return -2;
    if (st) {
        snprintf(why, n, "field 'trace': %s", e.msg);
        return -1;
    }
    return 0;
}

/* 1 if text is a JSON array. */
static int json_is_array_text(const char *text)
{
    cJSON *p = cJSON_Parse(text);
    int ok = p && cJSON_IsArray(p);
    cJSON_Delete(p);
    return ok;
}

/* The optional "pins" array into r->pins_json (malloc'd, compact).  0; -1
 * with why; -2 out of memory. */
static int get_pins(const cJSON *o, loom_record *r, char *why, size_t n)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "pins");
    if (!p || cJSON_IsNull(p))
        return 0;
    if (!cJSON_IsArray(p)) {
        snprintf(why, n, "field 'pins': expected an array, got %s", json_type_name(p));
        return -1;
    }
    r->pins_json = cJSON_PrintUnformatted(p);
    return r->pins_json ? 0 : -2;
}

/* The optional "remeasure" object into r (samples malloc'd).  0; -1 with
 * why; -2 out of memory. */
static int get_remeasure(const cJSON *o, loom_record *r, char *why, size_t n)
{
    r->load = NAN;
    const cJSON *rm = cJSON_GetObjectItemCaseSensitive(o, "remeasure");
    if (!rm || cJSON_IsNull(rm))
        return 0;
    if (!cJSON_IsObject(rm)) {
        snprintf(why, n, "field 'remeasure': expected an object, got %s", json_type_name(rm));
        return -1;
    }
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(rm, "samples");
    int k = cJSON_IsArray(sa) ? cJSON_GetArraySize(sa) : 0;
    if (k < 1 || k > LOOM_DB_MAX_SAMPLES) {
        snprintf(why, n, "field 'remeasure.samples': expected an array of 1..%d numbers or nulls",
                 LOOM_DB_MAX_SAMPLES);
        return -1;
    }
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(rm, "default");
    const cJSON *wi = cJSON_GetObjectItemCaseSensitive(rm, "winner");
    if (wi && !cJSON_IsBool(wi)) {
        snprintf(why, n, "field 'remeasure.winner': expected a boolean, got %s", json_type_name(wi));
        return -1;
    }
    r->is_winner = wi && cJSON_IsTrue(wi);
    const cJSON *ld = cJSON_GetObjectItemCaseSensitive(rm, "load");
    const cJSON *co = cJSON_GetObjectItemCaseSensitive(rm, "cores");
    if ((d && !cJSON_IsBool(d)) || (ld && !cJSON_IsNull(ld) && !(cJSON_IsNumber(ld) && ld->valuedouble >= 0)) ||
        (co && !(cJSON_IsNumber(co) && co->valuedouble >= 0 && co->valuedouble < 1e6))) {
        snprintf(why, n, "field 'remeasure': 'default' must be a boolean, 'load' a number >= 0 or null, 'cores' "
                         "a count");
        return -1;
    }
    double *v = malloc(sizeof *v * (size_t)k);
    if (!v)
        return -2;
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, sa)
    {
        if (cJSON_IsNull(it))
            v[i++] = INFINITY;
        else if (cJSON_IsNumber(it) && isfinite(it->valuedouble) && it->valuedouble >= 0)
            v[i++] = it->valuedouble;
        else {
            free(v);
            snprintf(why, n, "field 'remeasure.samples': item %d is not a number >= 0 or null", i);
            return -1;
        }
    }
    r->samples = v;
    r->nsamples = k;
    r->is_default = d && cJSON_IsTrue(d);
    r->load = ld && cJSON_IsNumber(ld) ? ld->valuedouble : NAN;
    r->cores = co ? (int)co->valuedouble : 0;
    return 0;
}

/* Build a record from a parsed line.  0; -1 with why; -2 out of memory. */
int loom__db_record_from_json(const cJSON *o, loom_record **out, char *why, size_t n)
{
    *out = NULL;
    if (!cJSON_IsObject(o)) {
        snprintf(why, n, "expected a JSON object, got %s", json_type_name(o));
        return -1;
    }
    const char *fmt, *name, *text = NULL, *data, *target, *status, *message;
    double version;
    loom_record r;
    memset(&r, 0, sizeof r);
    if (get_string(o, "format", &fmt, why, n))
        return -1;
    if (strcmp(fmt, FORMAT_NAME)) {
        snprintf(why, n, "field 'format': expected \"%s\", got \"%.40s\"", FORMAT_NAME, fmt);
        return -1;
    }
    if (get_number(o, "version", 0, &version, why, n))
        return -1;
    if (version != FORMAT_VERSION) {
        snprintf(why, n, "field 'version': unsupported version %g (this loom reads %d)", version, FORMAT_VERSION);
        return -1;
    }
    if (get_hex(o, "workload", &r.workload_hash, why, n) || get_string(o, "workload_name", &name, why, n))
        return -1;
    const cJSON *wt = cJSON_GetObjectItemCaseSensitive(o, "workload_text");
    if (wt && !cJSON_IsNull(wt)) {
        if (!cJSON_IsString(wt)) {
            snprintf(why, n, "field 'workload_text': expected a string, got %s", json_type_name(wt));
            return -1;
        }
        text = wt->valuestring;
    }
    /* a record of an older loom carries the hash of the workload's text:
       matched by the structural hash when its text parses (issue 14) */
    r.workload_hash = loom_workload_hash_upgrade(r.workload_hash, text);
    if (get_string(o, "data", &data, why, n))
        return -1;
    if (!is_hex16(data)) {
        snprintf(why, n, "field 'data': expected 16 hex digits, got '%.40s'", data);
        return -1;
    }
    if (get_string(o, "target", &target, why, n))
        return -1;
    if (!*target) {
        snprintf(why, n, "field 'target': empty");
        return -1;
    }
    if (get_hex(o, "schedule", &r.schedule_hash, why, n) || get_string(o, "status", &status, why, n))
        return -1;
    if (loom_record_status_parse(status, &r.status)) {
        snprintf(why, n, "field 'status': unknown status '%.40s'", status);
        return -1;
    }
    if (get_number(o, "latency_s", 1, &r.latency_s, why, n) || get_number(o, "flops", 0, &r.flops, why, n) ||
        get_number(o, "compile_s", 0, &r.compile_s, why, n) || get_string(o, "message", &message, why, n) ||
        get_number(o, "time", 0, &r.time, why, n))
        return -1;
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(o, "core_line_ns");
    if (cl && !(cJSON_IsNumber(cl) && isfinite(cl->valuedouble) && cl->valuedouble >= 0)) {
        snprintf(why, n, "field 'core_line_ns': expected a number >= 0");
        return -1;
    }
    r.core_line_ns = cl ? cl->valuedouble : 0;
    if (r.status == LOOM_OK && !isfinite(r.latency_s)) {
        snprintf(why, n, "field 'latency_s': null, but the status is ok");
        return -1;
    }
    if (r.latency_s < 0) {
        snprintf(why, n, "field 'latency_s': negative (%g)", r.latency_s);
        return -1;
    }
    const cJSON *tr = field(o, "trace", why, n);
    if (!tr)
        return -1;
    if (!cJSON_IsObject(tr)) {
        snprintf(why, n, "field 'trace': expected an object, got %s", json_type_name(tr));
        return -1;
    }
    char *tj = cJSON_PrintUnformatted(tr);
    if (!tj)
        return -2;
    int rc = check_trace(tj, why, n);
    if (!rc)
        rc = get_remeasure(o, &r, why, n);
    if (!rc)
        rc = get_pins(o, &r, why, n);
    loom_record *p = rc ? NULL : malloc(sizeof *p);
    if (!p) {
        free(tj);
        free(r.samples);
        free(r.pins_json);
        return rc ? rc : -2;
    }
    *p = r;
    p->trace_json = tj;
    int oom = 0;
    p->workload_name = loom__db_dup_or_null(name, &oom);
    p->workload_text = loom__db_dup_or_null(text, &oom);
    p->data_fp = loom__db_dup_or_null(data, &oom);
    p->target_fp = loom__db_dup_or_null(target, &oom);
    p->message = loom__db_dup_or_null(message, &oom);
    if (oom) {
        loom__db_record_free(p);
        return -2;
    }
    *out = p;
    return 0;
}

/* ---- one record -> one line --------------------------------------------------- */

/* The "pins" array of rec into o.  1, or 0 when out of memory or not an array. */
static int add_pins(cJSON *o, const loom_record *rec)
{
    cJSON *p = cJSON_Parse(rec->pins_json);
    if (p && cJSON_IsArray(p) && cJSON_AddItemToObject(o, "pins", p))
        return 1;
    cJSON_Delete(p);
    return 0;
}

/* The "remeasure" object of rec into o.  1, or 0 when out of memory. */
static int add_remeasure(cJSON *o, const loom_record *rec)
{
    cJSON *rm = cJSON_AddObjectToObject(o, "remeasure");
    cJSON *sa = rm ? cJSON_AddArrayToObject(rm, "samples") : NULL;
    if (!sa)
        return 0;
    for (int i = 0; i < rec->nsamples; i++) {
        cJSON *v = isfinite(rec->samples[i]) ? cJSON_CreateNumber(rec->samples[i]) : cJSON_CreateNull();
        if (!v || !cJSON_AddItemToArray(sa, v)) {
            cJSON_Delete(v);
            return 0;
        }
    }
    if (rec->is_winner && !cJSON_AddBoolToObject(rm, "winner", 1))
        return 0;
    return cJSON_AddBoolToObject(rm, "default", rec->is_default != 0) &&
           (isfinite(rec->load) && rec->load >= 0 ? cJSON_AddNumberToObject(rm, "load", rec->load) != NULL
                                                  : cJSON_AddNullToObject(rm, "load") != NULL) &&
           cJSON_AddNumberToObject(rm, "cores", rec->cores > 0 ? rec->cores : 0);
}

/* Check rec and serialise it as one line of JSON (no '\n').  *line is
 * malloc'd; *trace_out (the canonical trace text) too. */
loom_status loom__db_record_to_line(const loom_record *rec, char **line, char **trace_out, loom_error *err)
{
    *line = NULL;
    *trace_out = NULL;
    const char *bad = NULL;
    if (!rec->workload_name)
        bad = "workload_name is NULL";
    else if (!rec->data_fp || !is_hex16(rec->data_fp))
        bad = "data_fp must be 16 hex digits";
    else if (!rec->target_fp || !*rec->target_fp || strchr(rec->target_fp, '\n'))
        bad = "target_fp must be a non-empty string";
    else if (!rec->trace_json)
        bad = "trace_json is NULL";
    else if (rec->status == LOOM_OK && !(isfinite(rec->latency_s) && rec->latency_s >= 0))
        bad = "an ok record needs a finite latency_s >= 0";
    else if (rec->latency_s < 0)
        bad = "latency_s is negative";
    else if (!isfinite(rec->flops) || !isfinite(rec->compile_s) || !isfinite(rec->time))
        bad = "flops, compile_s and time must be finite";
    else if (!(isfinite(rec->core_line_ns) && rec->core_line_ns >= 0))
        bad = "core_line_ns must be finite and >= 0";
    else if (!strcmp(loom_record_status_name(rec->status), "unknown"))
        bad = "status is not a loom_status";
    else if (rec->pins_json && !json_is_array_text(rec->pins_json))
        bad = "pins_json is not a JSON array";
    else if (rec->nsamples < 0 || rec->nsamples > LOOM_DB_MAX_SAMPLES || (rec->nsamples && !rec->samples))
        bad = "nsamples must be 0..LOOM_DB_MAX_SAMPLES, with samples";
    for (int i = 0; !bad && i < rec->nsamples; i++)
        if (!(rec->samples[i] >= 0)) /* INFINITY is fine: a failed round */
            bad = "samples must be >= 0 (or INFINITY for a failed round)";
    if (bad)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_db_append: %s", bad);

    cJSON *tr = cJSON_Parse(rec->trace_json);
    if (!tr || !cJSON_IsObject(tr)) {
        cJSON_Delete(tr);
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_db_append: trace_json is not a JSON object (give loom_trace_to_json's text)");
    }
    char *tj = cJSON_PrintUnformatted(tr);
    char why[1200];
    int rc = tj ? check_trace(tj, why, sizeof why) : -2;
    if (rc) {
        free(tj);
        cJSON_Delete(tr);
        if (rc == -2)
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "loom_db_append: out of memory");
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_db_append: %s", why);
    }

    char w[17], s[17];
    hex16(rec->workload_hash, w);
    hex16(rec->schedule_hash, s);
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "format", FORMAT_NAME) &&
             cJSON_AddNumberToObject(o, "version", FORMAT_VERSION) && cJSON_AddStringToObject(o, "workload", w) &&
             cJSON_AddStringToObject(o, "workload_name", rec->workload_name) &&
             (!rec->workload_text || cJSON_AddStringToObject(o, "workload_text", rec->workload_text)) &&
             cJSON_AddStringToObject(o, "data", rec->data_fp) && cJSON_AddStringToObject(o, "target", rec->target_fp) &&
             cJSON_AddStringToObject(o, "schedule", s) &&
             cJSON_AddStringToObject(o, "status", loom_record_status_name(rec->status)) &&
             (isfinite(rec->latency_s) ? cJSON_AddNumberToObject(o, "latency_s", rec->latency_s) != NULL
                                       : cJSON_AddNullToObject(o, "latency_s") != NULL) &&
             cJSON_AddNumberToObject(o, "flops", rec->flops) && cJSON_AddNumberToObject(o, "compile_s", rec->compile_s) &&
             cJSON_AddStringToObject(o, "message", rec->message ? rec->message : "") &&
             cJSON_AddNumberToObject(o, "time", rec->time);
    if (ok && rec->core_line_ns > 0)
        ok = cJSON_AddNumberToObject(o, "core_line_ns", rec->core_line_ns) != NULL;
    if (ok && rec->nsamples > 0)
        ok = add_remeasure(o, rec);
    if (ok && rec->pins_json)
        ok = add_pins(o, rec);
    if (ok) {
        ok = cJSON_AddItemToObject(o, "trace", tr);
        if (ok)
            tr = NULL; /* owned by o now */
    }
    char *txt = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    cJSON_Delete(tr);
    if (!txt) {
        free(tj);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "loom_db_append: out of memory");
    }
    *line = txt;
    *trace_out = tj;
    return LOOM_OK;
}
