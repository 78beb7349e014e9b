/* Helpers shared by the tuning database's test files (test_database.c,
 * test_database_recovery.c): scratch directories, whole-file I/O, records
 * and traces to append, opening a database with its warnings captured.
 * Declared in db_fixture.h. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db_fixture.h"
#include "fixture.h"

void db_make_tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/loom-db-XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
}

void db_remove_tree(const char *dir)
{
    char cmd[600];
    FMT(cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

char *db_read_all(const char *path, size_t *len)
{
    char *buf = fx_slurp(path);
    struct stat st; /* the bytes read, NULs included: the file does not change meanwhile */
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    if (len)
        *len = (size_t)st.st_size;
    return buf;
}

void db_write_all(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

void db_records_path(const char *dir, char *buf, size_t n)
{
    cr_assert_lt(snprintf(buf, n, "%s/records.jsonl", dir), (int)n);
}

/* A trace in loom_trace_to_json's format (GetBlock, GetLoops, a tile sampler
 * and a Split), recorded for workload w. */
const char *db_trace_text(uint64_t w, int tile)
{
    static char buf[1024];
    FMT(buf,
        "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"%016" PRIx64 "\", \"insts\": "
        "[[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", \"l2\", \"l3\"]], "
        "[\"SamplePerfectTile\", [\"l3\"], [2, 16], [\"v4\", \"v5\"]], "
        "[\"Split\", [\"l3\", \"v4\", \"v5\"], [], [\"l6\", \"l7\"]]], \"decisions\": [[2, [%d, %d]]]}",
        w, tile, 64 / tile);
    return buf;
}

const char *const DB_DATA_FP = "00112233aabbccdd";

/* A record with borrowed strings (trace_json points to a static buffer of
 * db_trace_text: copy before the next call). */
loom_record db_rec_make(uint64_t w, const char *target, uint64_t sched, loom_status st, double lat,
                            double time, const char *msg)
{
    loom_record r;
    memset(&r, 0, sizeof r);
    r.workload_hash = w;
    r.workload_name = "spmm";
    r.workload_text = NULL;
    r.data_fp = (char *)DB_DATA_FP;
    r.target_fp = (char *)target;
    r.trace_json = (char *)db_trace_text(w, 4);
    r.schedule_hash = sched;
    r.latency_s = lat;
    r.flops = 2e6;
    r.compile_s = 0.25;
    r.status = st;
    r.message = (char *)msg;
    r.time = time;
    return r;
}

loom_db *db_open_ok(const char *dir, char **warnbuf, size_t *warnlen, FILE **warn)
{
    *warn = open_memstream(warnbuf, warnlen);
    cr_assert_not_null(*warn);
    loom_db *db = NULL;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_db_open(dir, *warn, &db, &err);
    cr_assert_eq(st, LOOM_OK, "open %s: %s", dir, err.msg);
    cr_assert_not_null(db);
    fflush(*warn);
    return db;
}

/* Open quietly; the warnings text is returned in *warnings (caller frees). */
loom_db *db_open_warn(const char *dir, char **warnings)
{
    size_t len;
    FILE *w;
    loom_db *db = db_open_ok(dir, warnings, &len, &w);
    fclose(w);
    return db;
}

void db_append_ok(loom_db *db, const loom_record *r)
{
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_db_append(db, r, &err);
    cr_assert_eq(st, LOOM_OK, "append: %s", err.msg);
}

int db_count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Line k (1-based) of text into a malloc'd string, or NULL. */
char *db_nth_line(const char *text, int k)
{
    const char *p = text;
    for (int i = 1; i < k && p; i++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p || !*p)
        return NULL;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}
