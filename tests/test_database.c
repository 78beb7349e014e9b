/* The tuning database (search/database/database.h): round trip of every field,
 * queries, the measured-set, torn and malformed lines (a writer killed with
 * SIGKILL and restarted, the data fingerprint, pins: test_database_recovery.c).  `loom db` is tested in
 * test_cli_db.c (same suite). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../dsl/ir/program.h"
#include "../runtime/data/dataset.h"
#include "../search/database/database.h"
#include "../traces/trace.h"
#include "db_fixture.h"

/* ---- round trip ---------------------------------------------------------- */

Test(database, round_trip_every_field)
{
    char tmp[64], dir[128];
    db_make_tmpdir(tmp, sizeof tmp);
    FMT(dir, "%s/campaign/a", tmp); /* created with its parents */
    char *warnings;
    loom_db *db = db_open_warn(dir, &warnings);
    cr_assert_eq(loom_db_count(db), 0);
    cr_assert_str_eq(warnings, "");
    free(warnings);
    cr_assert_str_eq(loom_db_dir(db), dir);

    const loom_status sts[] = {LOOM_OK,          LOOM_ERR_BUILD, LOOM_ERR_RUN,    LOOM_ERR_TIMEOUT,
                               LOOM_ERR_WRONG,   LOOM_ERR_UNSUPPORTED, LOOM_ERR_INVALID, LOOM_ERR_SEMANTIC};
    const char *names[] = {"ok", "build-error", "run-error", "timeout", "wrong", "lower-error", "invalid",
                           "lower-error"};
    const int n = (int)(sizeof sts / sizeof sts[0]);
    char traces[8][1024];
    for (int i = 0; i < n; i++) {
        uint64_t w = 0xfedcba9876543210ULL + (uint64_t)i;
        loom_record r = db_rec_make(w, "cpu:3f2a\"quoted\"", 0x8000000000000001ULL * (uint64_t)(i + 1), sts[i],
                                 i == 0 ? 1.2345678901234567e-5 : (i == 4 ? 3e-4 : INFINITY), 1714567890.125 + i,
                                 i == 0 ? "" : "line one\nline \"two\"\ttab \xc3\xa9");
        snprintf(traces[i], sizeof traces[i], "%s", db_trace_text(w, i % 2 ? 8 : 2));
        r.trace_json = traces[i];
        r.workload_name = i % 2 ? "gemm" : "spmm";
        r.workload_text = i % 2 ? NULL : "tensor A(N, K) csr\n# \"comment\"\n";
        r.flops = i * 1e6;
        r.compile_s = i * 0.5;
        r.core_line_ns = i % 3 ? 100.5 * i : 0; /* 0: not measured, left out of the line */
        cr_assert_str_eq(loom_record_status_name(sts[i]), names[i]);
        db_append_ok(db, &r);
        const loom_record *m = loom_db_record(db, i);
        cr_assert_eq(m->line, i + 1, "appended record %d at line %d", i, m->line);
    }
    cr_assert_null(loom_db_record(db, n));
    cr_assert_null(loom_db_record(db, -1));
    loom_db_close(db);

    db = db_open_warn(dir, &warnings);
    cr_assert_str_eq(warnings, "", "unexpected warnings: %s", warnings);
    free(warnings);
    cr_assert_eq(loom_db_count(db), n);
    cr_assert_eq(loom_db_skipped(db), 0);
    for (int i = 0; i < n; i++) {
        const loom_record *r = loom_db_record(db, i);
        cr_assert_eq(r->workload_hash, 0xfedcba9876543210ULL + (uint64_t)i);
        cr_assert_str_eq(r->workload_name, i % 2 ? "gemm" : "spmm");
        if (i % 2)
            cr_assert_null(r->workload_text);
        else
            cr_assert_str_eq(r->workload_text, "tensor A(N, K) csr\n# \"comment\"\n");
        cr_assert_str_eq(r->data_fp, DB_DATA_FP);
        cr_assert_str_eq(r->target_fp, "cpu:3f2a\"quoted\"");
        cr_assert_eq(r->schedule_hash, 0x8000000000000001ULL * (uint64_t)(i + 1));
        if (i == 0)
            cr_assert_eq(r->latency_s, 1.2345678901234567e-5, "latency not exact: %.17g", r->latency_s);
        else if (i == 4)
            cr_assert_eq(r->latency_s, 3e-4);
        else
            cr_assert(isinf(r->latency_s) && r->latency_s > 0, "failed latency %g", r->latency_s);
        cr_assert_eq(r->flops, i * 1e6);
        cr_assert_eq(r->compile_s, i * 0.5);
        /* SEMANTIC and UNSUPPORTED share "lower-error", which loads as UNSUPPORTED */
        cr_assert_eq(r->status, sts[i] == LOOM_ERR_SEMANTIC ? LOOM_ERR_UNSUPPORTED : sts[i]);
        cr_assert_str_eq(r->message, i == 0 ? "" : "line one\nline \"two\"\ttab \xc3\xa9");
        cr_assert_eq(r->time, 1714567890.125 + i);
        cr_assert_eq(r->core_line_ns, i % 3 ? 100.5 * i : 0, "record %d: core_line_ns %g", i, r->core_line_ns);
        cr_assert_eq(r->line, i + 1);
        /* the trace round trips through loom_trace_from_json */
        loom_trace *a = NULL, *b = NULL;
        loom_error err;
        cr_assert_eq(loom_trace_from_json(r->trace_json, "loaded", &a, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_trace_from_json(traces[i], "orig", &b, &err), LOOM_OK, "%s", err.msg);
        cr_assert(loom_trace_equal(a, b), "trace %d differs after the round trip", i);
        cr_assert_eq(a->workload, r->workload_hash);
        loom_trace_free(a);
        loom_trace_free(b);
    }
    loom_db_close(db);

    /* the line format: a trace object, not a string; null latency; keys named in the header */
    char path[256];
    db_records_path(dir, path, sizeof path);
    char *text = db_read_all(path, NULL);
    cr_assert_eq(db_count_lines(text), n);
    char *l2 = db_nth_line(text, 2);
    cJSON *o = cJSON_Parse(l2);
    cr_assert_not_null(o);
    cr_assert(cJSON_IsObject(cJSON_GetObjectItem(o, "trace")));
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "latency_s")));
    cr_assert_str_eq(cJSON_GetObjectItem(o, "format")->valuestring, "loom-record");
    cr_assert_eq(cJSON_GetObjectItem(o, "version")->valuedouble, 1);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "status")->valuestring, "build-error");
    cr_assert_str_eq(cJSON_GetObjectItem(o, "workload")->valuestring, "fedcba9876543211");
    cr_assert_null(cJSON_GetObjectItem(o, "workload_text"), "NULL workload_text is left out");
    cr_assert_float_eq(cJSON_GetObjectItem(o, "core_line_ns")->valuedouble, 100.5, 1e-12);
    cJSON_Delete(o);
    free(l2);
    char *l1 = db_nth_line(text, 1);
    cr_assert_null(strstr(l1, "core_line_ns"), "a record not measured on two cores has no core_line_ns: %s", l1);
    free(l1);
    free(text);
    db_remove_tree(tmp);
}

Test(database, status_names_parse_back)
{
    for (int s = LOOM_OK; s <= LOOM_ERR_WRONG; s++) {
        loom_status back;
        const char *name = loom_record_status_name((loom_status)s);
        cr_assert_neq(strcmp(name, "unknown"), 0, "status %d has no name", s);
        cr_assert_eq(loom_record_status_parse(name, &back), 0, "%s", name);
        cr_assert_eq(back, s == LOOM_ERR_SEMANTIC ? LOOM_ERR_UNSUPPORTED : (loom_status)s, "%s", name);
    }
    loom_status back;
    cr_assert_eq(loom_record_status_parse("crashed", &back), -1);
    cr_assert_str_eq(loom_record_status_name((loom_status)99), "unknown");
}

Test(database, append_rejects_bad_records)
{
    char tmp[64];
    db_make_tmpdir(tmp, sizeof tmp);
    char *warnings;
    loom_db *db = db_open_warn(tmp, &warnings);
    free(warnings);
    loom_error err;
    struct {
        const char *what, *expect;
    } cases[] = {{"ok-inf", "finite latency_s"}, {"no-target", "target_fp"},     {"bad-data", "data_fp"},
                 {"not-json", "not a JSON object"}, {"not-trace", "trace"},      {"nan-time", "finite"},
                 {"neg-line", "core_line_ns"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        loom_record r = db_rec_make(1, "cpu:x", 2, LOOM_OK, 1e-3, 1.0, "");
        if (!strcmp(cases[c].what, "ok-inf"))
            r.latency_s = INFINITY;
        else if (!strcmp(cases[c].what, "no-target"))
            r.target_fp = NULL;
        else if (!strcmp(cases[c].what, "bad-data"))
            r.data_fp = "xyz";
        else if (!strcmp(cases[c].what, "not-json"))
            r.trace_json = "[1, 2";
        else if (!strcmp(cases[c].what, "not-trace"))
            r.trace_json = "{\"format\": \"loom-trace\", \"version\": 7}";
        else if (!strcmp(cases[c].what, "neg-line"))
            r.core_line_ns = -1;
        else
            r.time = NAN;
        loom_error_clear(&err);
        cr_assert_eq(loom_db_append(db, &r, &err), LOOM_ERR_INVALID, "%s accepted", cases[c].what);
        cr_assert(strstr(err.msg, cases[c].expect), "%s: '%s' lacks '%s'", cases[c].what, err.msg, cases[c].expect);
    }
    cr_assert_eq(loom_db_count(db), 0);
    loom_db_close(db);
    char path[256];
    db_records_path(tmp, path, sizeof path);
    size_t len;
    free(db_read_all(path, &len));
    cr_assert_eq(len, 0, "a rejected record wrote %zu bytes", len);

    /* read-only: append fails, nothing created for a missing directory */
    loom_db *ro = NULL;
    cr_assert_eq(loom_db_open_readonly(tmp, NULL, &ro, &err), LOOM_OK, "%s", err.msg);
    loom_record r = db_rec_make(1, "cpu:x", 2, LOOM_OK, 1e-3, 1.0, "");
    cr_assert_eq(loom_db_append(ro, &r, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "read-only"), "%s", err.msg);
    loom_db_close(ro);
    char missing[128];
    FMT(missing, "%s/nope", tmp);
    cr_assert_eq(loom_db_open_readonly(missing, NULL, &ro, &err), LOOM_ERR_IO);
    cr_assert(strstr(err.msg, "no such directory"), "%s", err.msg);
    struct stat sb;
    cr_assert_neq(stat(missing, &sb), 0, "open_readonly created %s", missing);
    /* a file where the directory should be */
    FMT(missing, "%s/records.jsonl", tmp);
    cr_assert_eq(loom_db_open(missing, NULL, &ro, &err), LOOM_ERR_IO);
    cr_assert(strstr(err.msg, "not a directory"), "%s", err.msg);
    db_remove_tree(tmp);
}

/* ---- queries --------------------------------------------------------------- */

Test(database, query_best_first)
{
    char tmp[64];
    db_make_tmpdir(tmp, sizeof tmp);
    char *warnings;
    loom_db *db = db_open_warn(tmp, &warnings);
    free(warnings);
    const uint64_t W = 0x1111, V = 0x2222;
    /* (status, latency, time), appended out of order */
    struct {
        loom_status st;
        double lat, time;
    } rs[] = {{LOOM_ERR_BUILD, INFINITY, 50},  {LOOM_OK, 3e-3, 10},       {LOOM_ERR_WRONG, 1e-6, 20},
              {LOOM_OK, 1e-5, 40},           {LOOM_ERR_TIMEOUT, INFINITY, 5}, {LOOM_OK, 2e-4, 30},
              {LOOM_OK, 1e-5, 60}};
    int n = (int)(sizeof rs / sizeof rs[0]);
    for (int i = 0; i < n; i++) {
        loom_record r = db_rec_make(W, "cpu:a", 100 + (uint64_t)i, rs[i].st, rs[i].lat, rs[i].time, "m");
        db_append_ok(db, &r);
        /* noise: another target, another workload, each faster than everything */
        r = db_rec_make(W, "cpu:b", 100 + (uint64_t)i, LOOM_OK, 1e-9, rs[i].time, "");
        db_append_ok(db, &r);
        r = db_rec_make(V, "cpu:a", 100 + (uint64_t)i, LOOM_OK, 1e-9, rs[i].time, "");
        db_append_ok(db, &r);
    }
    for (int pass = 0; pass < 2; pass++) {
        const loom_record **v = NULL;
        int k = loom_db_query(db, W, "cpu:a", &v);
        cr_assert_eq(k, n);
        /* ok by latency (tie 1e-5: file order), then failed by time (wrong has
         * a latency but is not ok) */
        const uint64_t expect[] = {103, 106, 105, 101, 104, 102, 100};
        for (int i = 0; i < k; i++) {
            cr_assert_eq(v[i]->workload_hash, W);
            cr_assert_str_eq(v[i]->target_fp, "cpu:a");
            cr_assert_eq(v[i]->schedule_hash, expect[i], "pass %d rank %d: schedule %" PRIu64 ", expected %" PRIu64,
                         pass, i, v[i]->schedule_hash, expect[i]);
        }
        free(v);
        const loom_record *b = loom_db_best(db, W, "cpu:a");
        cr_assert_not_null(b);
        cr_assert_eq(b->schedule_hash, 103);
        cr_assert_null(loom_db_best(db, W, "cpu:none"));
        cr_assert_eq(loom_db_query(db, 0x3333, "cpu:a", &v), 0);
        cr_assert_null(v);
        /* the same after a reload */
        loom_db_close(db);
        db = db_open_warn(tmp, &warnings);
        cr_assert_str_eq(warnings, "");
        free(warnings);
        cr_assert_eq(loom_db_count(db), 3 * n);
    }
    loom_db_close(db);
    db_remove_tree(tmp);
}

Test(database, has_measured_set)
{
    char tmp[64];
    db_make_tmpdir(tmp, sizeof tmp);
    char *warnings;
    loom_db *db = db_open_warn(tmp, &warnings);
    free(warnings);
    cr_assert_eq(loom_db_has(db, 1, "cpu:a", 1), 0, "empty database");
    /* enough records to grow the hash set several times */
    const int n = 700;
    for (int i = 0; i < n; i++) {
        uint64_t sched = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
        loom_record r = db_rec_make(1 + (uint64_t)(i % 3), i % 2 ? "cpu:a" : "cpu:b", sched,
                                 i % 5 ? LOOM_OK : LOOM_ERR_RUN, i % 5 ? 1e-3 : INFINITY, i, "");
        db_append_ok(db, &r);
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            uint64_t sched = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
            uint64_t w = 1 + (uint64_t)(i % 3);
            const char *t = i % 2 ? "cpu:a" : "cpu:b", *other = i % 2 ? "cpu:b" : "cpu:a";
            cr_assert_eq(loom_db_has(db, w, t, sched), 1, "record %d not found (pass %d)", i, pass);
            /* same schedule, another target or workload: a different candidate */
            cr_assert_eq(loom_db_has(db, w, other, sched), 0, "record %d found under the other target", i);
            cr_assert_eq(loom_db_has(db, w % 3 + 1, t, sched), 0, "record %d found under another workload", i);
            cr_assert_eq(loom_db_has(db, w, t, sched + 1), 0);
        }
        loom_db_close(db);
        db = db_open_warn(tmp, &warnings);
        free(warnings);
    }
    loom_db_close(db);
    db_remove_tree(tmp);
}

/* ---- torn and malformed lines ----------------------------------------------- */

Test(database, torn_last_line)
{
    char tmp[64], path[256];
    db_make_tmpdir(tmp, sizeof tmp);
    db_records_path(tmp, path, sizeof path);
    char *warnings;
    loom_db *db = db_open_warn(tmp, &warnings);
    free(warnings);
    for (int i = 0; i < 5; i++) {
        loom_record r = db_rec_make(7, "cpu:a", 10 + (uint64_t)i, LOOM_OK, 1e-3 * (i + 1), i, "ok");
        db_append_ok(db, &r);
    }
    loom_db_close(db);
    /* cut the 5th line in the middle (a writer killed mid-record) */
    size_t len;
    char *text = db_read_all(path, &len);
    char *l5 = strstr(text, "\n") ;
    for (int i = 0; i < 3; i++)
        l5 = strchr(l5 + 1, '\n');
    size_t start5 = (size_t)(l5 + 1 - text);
    size_t cut = start5 + (len - start5) / 2;
    cr_assert(truncate(path, (off_t)cut) == 0);
    free(text);

    db = db_open_warn(tmp, &warnings);
    cr_assert_eq(loom_db_count(db), 4);
    cr_assert_eq(loom_db_skipped(db), 1);
    char expect[512];
    FMT(expect, "%s:5: skipped: torn last line", path);
    cr_assert(strstr(warnings, expect), "warnings '%s' lack '%s'", warnings, expect);
    cr_assert_eq(db_count_lines(warnings), 1);
    free(warnings);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(loom_db_record(db, i)->schedule_hash, 10 + (uint64_t)i);
    /* the next append is a valid line of its own */
    loom_record r = db_rec_make(7, "cpu:a", 99, LOOM_ERR_TIMEOUT, INFINITY, 99, "after the crash");
    db_append_ok(db, &r);
    cr_assert_eq(loom_db_record(db, 4)->line, 6, "torn line 5 ended, the record is line 6");
    cr_assert(loom_db_has(db, 7, "cpu:a", 99));
    loom_db_close(db);

    text = db_read_all(path, &len);
    cr_assert_eq(text[len - 1], '\n');
    cr_assert_eq(db_count_lines(text), 6);
    char *l6 = db_nth_line(text, 6);
    cJSON *o = cJSON_Parse(l6);
    cr_assert_not_null(o, "line 6 is not JSON: %s", l6);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "message")->valuestring, "after the crash");
    cJSON_Delete(o);
    free(l6);
    free(text);

    db = db_open_warn(tmp, &warnings);
    cr_assert_eq(loom_db_count(db), 5);
    FMT(expect, "%s:5: skipped: not valid JSON", path);
    cr_assert(strstr(warnings, expect), "warnings '%s' lack '%s'", warnings, expect);
    cr_assert_eq(db_count_lines(warnings), 1);
    free(warnings);
    const loom_record *last = loom_db_record(db, 4);
    cr_assert_eq(last->schedule_hash, 99);
    cr_assert_eq(last->status, LOOM_ERR_TIMEOUT);
    cr_assert_eq(last->line, 6);
    cr_assert_str_eq(last->message, "after the crash");
    loom_db_close(db);
    db_remove_tree(tmp);
}

Test(database, garbage_lines_skipped_and_named)
{
    char tmp[64], path[256];
    db_make_tmpdir(tmp, sizeof tmp);
    db_records_path(tmp, path, sizeof path);
    char *warnings;
    loom_db *db = db_open_warn(tmp, &warnings);
    free(warnings);
    for (int i = 0; i < 3; i++) {
        loom_record r = db_rec_make(7, "cpu:a", 10 + (uint64_t)i, LOOM_OK, 1e-3, i, "");
        db_append_ok(db, &r);
    }
    loom_db_close(db);
    char *text = db_read_all(path, NULL);
    char *l1 = db_nth_line(text, 1), *l2 = db_nth_line(text, 2), *l3 = db_nth_line(text, 3);
    size_t cap = strlen(text) * 2 + 256;
    char *mixed = malloc(cap);
    /* lines: 1 ok, 2 garbage, 3 ok, 4 empty, 5 an array, 6 an object with text after it, 7 ok,
     * 8 binary junk */
    int n = snprintf(mixed, cap, "%s\nthis is not json {\n%s\n\n[1, 2, 3]\n%s trailing\n%s\n\x01\xff\xfe\n", l1, l2,
                     l3, l3);
    db_write_all(path, mixed, (size_t)n);
    db = db_open_warn(tmp, &warnings);
    cr_assert_eq(loom_db_count(db), 3);
    cr_assert_eq(loom_db_skipped(db), 5);
    const int lines[] = {1, 3, 7};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(loom_db_record(db, i)->line, lines[i]);
    const char *expect[] = {":2: skipped: not valid JSON near byte", ":4: skipped: empty line",
                            ":5: skipped: expected a JSON object, got an array",
                            ":6: skipped: not valid JSON: text after the object", ":8: skipped: not valid JSON"};
    for (int i = 0; i < 5; i++) {
        char e[512];
        FMT(e, "%s%s", path, expect[i]);
        cr_assert(strstr(warnings, e), "warnings '%s' lack '%s'", warnings, e);
    }
    cr_assert_eq(db_count_lines(warnings), 5);
    free(warnings);
    loom_db_close(db);
    free(l1);
    free(l2);
    free(l3);
    free(mixed);
    free(text);
    db_remove_tree(tmp);
}

/* Replace (or add, or with NULL remove) member `key` of a good line and return the new line. */
static char *mutate(const char *good, const char *key, cJSON *value)
{
    cJSON *o = cJSON_Parse(good);
    cr_assert_not_null(o);
    if (value && !cJSON_ReplaceItemInObjectCaseSensitive(o, key, value))
        cJSON_AddItemToObject(o, key, value); /* an optional key the good line does not have */
    else if (!value)
        cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

Test(database, wrong_field_types_named)
{
    char tmp[64], path[256];
    db_make_tmpdir(tmp, sizeof tmp);
    db_records_path(tmp, path, sizeof path);
    char *warnings;
    loom_db *db = db_open_warn(tmp, &warnings);
    free(warnings);
    loom_record r = db_rec_make(7, "cpu:a", 10, LOOM_OK, 1e-3, 1, "");
    r.workload_text = "text";
    db_append_ok(db, &r);
    loom_db_close(db);
    char *text = db_read_all(path, NULL);
    char *good = db_nth_line(text, 1);
    free(text);

    struct {
        const char *key;
        cJSON *value;
        const char *why;
    } cases[] = {
        {"format", cJSON_CreateString("loom-trace"), "field 'format': expected \"loom-record\""},
        {"version", cJSON_CreateNumber(2), "field 'version': unsupported version 2"},
        {"version", cJSON_CreateString("1"), "field 'version': expected a number, got a string"},
        {"workload", cJSON_CreateNumber(7), "field 'workload': expected a string, got a number"},
        {"workload", cJSON_CreateString("12345"), "field 'workload': expected 16 hex digits"},
        {"workload_name", cJSON_CreateNull(), "field 'workload_name': expected a string, got null"},
        {"workload_text", cJSON_CreateArray(), "field 'workload_text': expected a string, got an array"},
        {"data", cJSON_CreateTrue(), "field 'data': expected a string, got a boolean"},
        {"data", cJSON_CreateString("zz112233aabbccdd"), "field 'data': expected 16 hex digits"},
        {"target", cJSON_CreateObject(), "field 'target': expected a string, got an object"},
        {"schedule", cJSON_CreateString("000000000000000g"), "field 'schedule': expected 16 hex digits"},
        {"status", cJSON_CreateString("crashed"), "field 'status': unknown status 'crashed'"},
        {"status", cJSON_CreateNumber(0), "field 'status': expected a string, got a number"},
        {"latency_s", cJSON_CreateString("fast"), "field 'latency_s': expected a number or null, got a string"},
        {"latency_s", cJSON_CreateNull(), "field 'latency_s': null, but the status is ok"},
        {"latency_s", cJSON_CreateNumber(-1), "field 'latency_s': negative"},
        {"flops", cJSON_CreateNull(), "field 'flops': expected a number, got null"},
        {"compile_s", cJSON_CreateString("0"), "field 'compile_s': expected a number, got a string"},
        {"message", cJSON_CreateNumber(1), "field 'message': expected a string, got a number"},
        {"time", cJSON_CreateFalse(), "field 'time': expected a number, got a boolean"},
        {"core_line_ns", cJSON_CreateString("106"), "field 'core_line_ns': expected a number >= 0"},
        {"core_line_ns", cJSON_CreateNumber(-3), "field 'core_line_ns': expected a number >= 0"},
        {"trace", cJSON_CreateString("{}"), "field 'trace': expected an object, got a string"},
        {"trace", cJSON_CreateObject(), "field 'trace': "},
        {"trace", NULL, "missing field 'trace'"},
        {"message", NULL, "missing field 'message'"},
        {"latency_s", NULL, "missing field 'latency_s'"},
    };
    int nc = (int)(sizeof cases / sizeof cases[0]);
    size_t cap = 1 << 16, len = 0;
    char *file = malloc(cap);
    for (int c = 0; c < nc; c++) {
        char *line = mutate(good, cases[c].key, cases[c].value);
        len += (size_t)snprintf(file + len, cap - len, "%s\n", line);
        cr_assert_lt(len, cap);
        free(line);
    }
    len += (size_t)snprintf(file + len, cap - len, "%s\n", good); /* still loads */
    db_write_all(path, file, len);
    free(file);

    db = db_open_warn(tmp, &warnings);
    cr_assert_eq(loom_db_count(db), 1, "only the good line loads");
    cr_assert_eq(loom_db_record(db, 0)->line, nc + 1);
    cr_assert_str_eq(loom_db_record(db, 0)->workload_text, "text");
    cr_assert_eq(loom_db_skipped(db), nc);
    for (int c = 0; c < nc; c++) {
        char e[600];
        FMT(e, "%s:%d: skipped: %s", path, c + 1, cases[c].why);
        cr_assert(strstr(warnings, e), "case %d (%s): warnings lack '%s':\n%s", c, cases[c].key, e, warnings);
    }
    free(warnings);
    loom_db_close(db);
    /* a missing workload_text is fine */
    char *line = mutate(good, "workload_text", NULL);
    db_write_all(path, line, strlen(line)); /* no newline, but complete */
    free(line);
    db = db_open_warn(tmp, &warnings);
    cr_assert_eq(loom_db_count(db), 1, "%s", warnings);
    cr_assert_null(loom_db_record(db, 0)->workload_text);
    free(warnings);
    loom_db_close(db);
    free(good);
    db_remove_tree(tmp);
}
