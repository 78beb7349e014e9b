/* The tuning database's guards (issue 14) and its re-measurement records
 * (issue 12): a second writer process is refused while the first holds
 * the directory; an append that fails (a file size limit: RLIMIT_FSIZE, as
 * on a full file system) leaves only whole records and says so; a line too
 * long to read is reported with its number and the records after it load;
 * the "remeasure" object round-trips and older lines without it load. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../dsl/ir/util.h"
#include "../search/database/database.h"
#include "fixture.h"

static char dir_[256];

static void mk(void) { fx_tmpdir(dir_, sizeof dir_, "dbguard"); }

static void rm(void) { fx_rmtree(dir_); }

TestSuite(dbguard, .init = mk, .fini = rm);

static char trace_[1024];

/* A record whose trace loads (GetBlock, GetLoops, a tile sampler, Split). */
static loom_record rec(uint64_t sched, double lat)
{
    snprintf(trace_, sizeof trace_,
             "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"00000000000000aa\", \"insts\": "
             "[[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", \"l2\", \"l3\"]], "
             "[\"SamplePerfectTile\", [\"l3\"], [2, 16], [\"v4\", \"v5\"]], "
             "[\"Split\", [\"l3\", \"v4\", \"v5\"], [], [\"l6\", \"l7\"]]], \"decisions\": [[2, [4, 16]]]}");
    loom_record r;
    memset(&r, 0, sizeof r);
    r.workload_hash = 0xaa;
    r.workload_name = "spmm";
    r.data_fp = "00112233aabbccdd";
    r.target_fp = "cpu:0000000000000001";
    r.trace_json = trace_;
    r.schedule_hash = sched;
    r.latency_s = lat;
    r.flops = 1e6;
    r.status = LOOM_OK;
    r.message = "";
    r.time = 1.0;
    return r;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 65536 > cap) {
            cap = cap ? 2 * cap : 1 << 20;
            buf = realloc(buf, cap + 1);
            cr_assert_not_null(buf);
        }
        size_t r = fread(buf + n, 1, 65536, f);
        if (!r)
            break;
        n += r;
    }
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

static int lines_in(const char *s, size_t n)
{
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == '\n';
    return k;
}

/* ---- the lock -------------------------------------------------------------- */

Test(dbguard, a_second_writer_process_is_refused_with_the_holders_pid)
{
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open(dir_, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    loom_record r = rec(1, 1e-3);
    cr_assert_eq(loom_db_append(db, &r, &err), LOOM_OK, "%s", err.msg);
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(pfd[0]);
        loom_db *d2 = NULL;
        loom_error e2;
        loom_error_clear(&e2);
        loom_status st = loom_db_open(dir_, NULL, &d2, &e2);
        if (write(pfd[1], e2.msg, strlen(e2.msg)) < 0)
            _exit(9);
        /* a reader is never refused */
        loom_db *ro = NULL;
        int ro_ok = loom_db_open_readonly(dir_, NULL, &ro, &e2) == LOOM_OK && loom_db_count(ro) == 1;
        loom_db_close(ro);
        _exit(st == LOOM_ERR_IO && !d2 ? (ro_ok ? 0 : 3) : 2);
    }
    close(pfd[1]);
    char msg[2048] = "";
    ssize_t got = read(pfd[0], msg, sizeof msg - 1);
    msg[got > 0 ? got : 0] = 0;
    close(pfd[0]);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the second writer was not refused (exit %d): %s",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1, msg);
    char want[64];
    snprintf(want, sizeof want, "process %ld", (long)getpid());
    cr_assert_not_null(strstr(msg, want), "the message does not name the holder (%s): %s", want, msg);
    cr_assert_not_null(strstr(msg, dir_), "the message does not name the directory: %s", msg);
    loom_db_close(db);
    /* closed: the next writer gets it */
    pid = fork();
    if (pid == 0) {
        loom_db *d2 = NULL;
        loom_error e2;
        _exit(loom_db_open(dir_, NULL, &d2, &e2) == LOOM_OK && loom_db_count(d2) == 1 ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the lock outlived loom_db_close");
}

/* The lock is on the directory itself: no file an operator removes (an
 * old DIR/lock, anything but the records) undoes it, and a second writer
 * in the same process is refused as well (issue 33). */
Test(dbguard, no_removed_file_undoes_the_lock)
{
    loom_db *db = NULL;
    loom_error err;
    char old[400];
    snprintf(old, sizeof old, "%s/lock", dir_); /* what an older loom locked */
    FILE *f = fopen(old, "w");
    cr_assert_not_null(f);
    fclose(f);
    cr_assert_eq(loom_db_open(dir_, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(unlink(old), 0);
    loom_db *same = NULL;
    cr_assert_eq(loom_db_open(dir_, NULL, &same, &err), LOOM_ERR_IO, "a second writer in this process was let in");
    cr_assert_null(same);
    char want[64];
    snprintf(want, sizeof want, "process %ld holds its lock", (long)getpid());
    cr_assert_not_null(strstr(err.msg, want), "no '%s' in: %s", want, err.msg);
    /* a reader opening and closing the records does not release it */
    loom_db *ro = NULL;
    cr_assert_eq(loom_db_open_readonly(dir_, NULL, &ro, &err), LOOM_OK, "%s", err.msg);
    loom_db_close(ro);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        loom_db *d2 = NULL;
        loom_error e2;
        _exit(loom_db_open(dir_, NULL, &d2, &e2) == LOOM_ERR_IO && !d2 ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "another process was let in");
    loom_db_close(db);
    cr_assert_eq(loom_db_open(dir_, NULL, &db, &err), LOOM_OK, "closed, the lock stayed: %s", err.msg);
    loom_db_close(db);
}

Test(dbguard, a_killed_writer_leaves_no_stale_lock)
{
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(pfd[0]);
        loom_db *d = NULL;
        loom_error e;
        if (loom_db_open(dir_, NULL, &d, &e))
            _exit(1);
        if (write(pfd[1], "y", 1) != 1)
            _exit(2);
        pause();
        _exit(0);
    }
    close(pfd[1]);
    char ready = 0;
    cr_assert_eq(read(pfd[0], &ready, 1), 1, "the writer did not take its lock");
    close(pfd[0]);
    loom_db *d = NULL;
    loom_error err;
    /* while it lives, another process is refused */
    cr_assert_eq(loom_db_open(dir_, NULL, &d, &err), LOOM_ERR_IO, "a second writer was let in");
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    /* in another process (the lock does not exclude its own process) */
    pid = fork();
    if (pid == 0) {
        loom_db *d2 = NULL;
        loom_error e2;
        _exit(loom_db_open(dir_, NULL, &d2, &e2) == LOOM_OK ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a killed writer's lock stayed");
}

/* ---- write failures ----------------------------------------------------------- */

Test(dbguard, a_failed_append_leaves_whole_records_only)
{
    char path[400];
    snprintf(path, sizeof path, "%s/records.jsonl", dir_);
    /* one record's size, to set the limit in the middle of the 4th */
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open(dir_, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    loom_record r = rec(1, 1e-3);
    cr_assert_eq(loom_db_append(db, &r, &err), LOOM_OK, "%s", err.msg);
    loom_db_close(db);
    size_t one;
    free(slurp(path, &one));
    cr_assert_eq(unlink(path), 0);
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(pfd[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {(rlim_t)(3 * one + one / 2), (rlim_t)(3 * one + one / 2)};
        if (setrlimit(RLIMIT_FSIZE, &rl))
            _exit(9);
        loom_db *d = NULL;
        loom_error e;
        if (loom_db_open(dir_, NULL, &d, &e))
            _exit(8);
        int k = 0;
        loom_status st = LOOM_OK;
        for (; k < 10 && !st; k++) {
            loom_record x = rec((uint64_t)k + 1, 1e-3 * (k + 1));
            st = loom_db_append(d, &x, &e);
        }
        char out[1400];
        int n = snprintf(out, sizeof out, "%d %d %s", st, loom_db_count(d), e.msg);
        if (write(pfd[1], out, (size_t)n) < 0)
            _exit(7);
        loom_db_close(d);
        _exit(0);
    }
    close(pfd[1]);
    char out[1500] = "";
    ssize_t got = read(pfd[0], out, sizeof out - 1);
    out[got > 0 ? got : 0] = 0;
    close(pfd[0]);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exit %d", WEXITSTATUS(status));
    int st = -1, count = -1;
    cr_assert_eq(sscanf(out, "%d %d", &st, &count), 2, "%s", out);
    cr_assert_eq(st, LOOM_ERR_IO, "the append past the limit did not fail: %s", out);
    cr_assert_eq(count, 3, "records kept in memory: %d (%s)", count, out);
    cr_assert_not_null(strstr(out, "cannot write"), "%s", out);
    size_t len;
    char *txt = slurp(path, &len);
    cr_assert_eq(len, 3 * one, "the file has %zu bytes, 3 whole records are %zu: a partial line was left", len,
                 3 * one);
    cr_assert_eq(txt[len - 1], '\n');
    free(txt);
    char *warn = NULL;
    size_t wl = 0;
    FILE *w = open_memstream(&warn, &wl);
    loom_db *d = NULL;
    cr_assert_eq(loom_db_open_readonly(dir_, w, &d, &err), LOOM_OK, "%s", err.msg);
    fclose(w);
    cr_assert_eq(loom_db_count(d), 3);
    cr_assert_eq(loom_db_skipped(d), 0, "warnings: %s", warn);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(loom_db_record(d, i)->schedule_hash, (uint64_t)i + 1);
    loom_db_close(d);
    free(warn);
}

/* ---- unreadable lines ---------------------------------------------------------- */

Test(dbguard, a_line_too_long_is_named_and_later_records_load, .timeout = 60)
{
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open(dir_, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    loom_record r = rec(1, 1e-3);
    cr_assert_eq(loom_db_append(db, &r, &err), LOOM_OK, "%s", err.msg);
    loom_db_close(db);
    char path[400];
    snprintf(path, sizeof path, "%s/records.jsonl", dir_);
    /* line 2: longer than the reader keeps; line 3: a record; line 4: torn */
    FILE *f = fopen(path, "ab");
    cr_assert_not_null(f);
    size_t big = LOOM_DB_MAX_LINE + 1000;
    char *junk = malloc(big);
    cr_assert_not_null(junk);
    memset(junk, 'x', big);
    junk[0] = '{';
    cr_assert_eq(fwrite(junk, 1, big, f), big);
    free(junk);
    fputc('\n', f);
    fclose(f);
    cr_assert_eq(loom_db_open(dir_, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    r = rec(3, 3e-3);
    cr_assert_eq(loom_db_append(db, &r, &err), LOOM_OK, "%s", err.msg);
    loom_db_close(db);
    f = fopen(path, "ab");
    fputs("{\"format\": \"loom-rec", f); /* a writer killed mid-line */
    fclose(f);
    /* a resumed writer appends after a newline, never glued to the torn line */
    cr_assert_eq(loom_db_open(dir_, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    r = rec(5, 5e-3);
    cr_assert_eq(loom_db_append(db, &r, &err), LOOM_OK, "%s", err.msg);
    loom_db_close(db);

    char *warn = NULL;
    size_t wl = 0;
    FILE *w = open_memstream(&warn, &wl);
    cr_assert_eq(loom_db_open_readonly(dir_, w, &db, &err), LOOM_OK, "%s", err.msg);
    fclose(w);
    cr_assert_eq(loom_db_count(db), 3, "records: %d; warnings: %s", loom_db_count(db), warn);
    cr_assert_eq(loom_db_skipped(db), 2, "warnings: %s", warn);
    cr_assert_eq(loom_db_record(db, 0)->line, 1);
    cr_assert_eq(loom_db_record(db, 1)->line, 3);
    cr_assert_eq(loom_db_record(db, 1)->schedule_hash, 3u);
    cr_assert_eq(loom_db_record(db, 2)->line, 5);
    cr_assert_eq(loom_db_record(db, 2)->schedule_hash, 5u);
    char want[500];
    snprintf(want, sizeof want, "%s:2: skipped: a line of %zu bytes is longer than", path, big);
    cr_assert_not_null(strstr(warn, want), "no warning naming line 2 (%s): %s", want, warn);
    snprintf(want, sizeof want, "%s:4: skipped:", path);
    cr_assert_not_null(strstr(warn, want), "no warning naming line 4: %s", warn);
    loom_db_close(db);
    free(warn);
}

/* ---- re-measurement records ------------------------------------------------------ */

Test(dbguard, remeasure_object_round_trips_and_old_lines_load)
{
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open(dir_, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    loom_record r = rec(1, 2e-3); /* an ordinary trial: no remeasure key */
    cr_assert_eq(loom_db_append(db, &r, &err), LOOM_OK, "%s", err.msg);
    double s[4] = {2.5e-3, 2.1e-3, INFINITY, 2.2e-3};
    r = rec(1, 2.2e-3);
    r.nsamples = 4;
    r.samples = s;
    r.is_default = 1;
    r.load = 1.75;
    r.cores = 2;
    cr_assert_eq(loom_db_append(db, &r, &err), LOOM_OK, "%s", err.msg);
    double bad = -1;
    r.samples = &bad;
    r.nsamples = 1;
    cr_assert_eq(loom_db_append(db, &r, &err), LOOM_ERR_INVALID, "a negative sample was written");
    loom_db_close(db);
    char path[400];
    snprintf(path, sizeof path, "%s/records.jsonl", dir_);
    size_t len;
    char *txt = slurp(path, &len);
    cr_assert_eq(lines_in(txt, len), 2);
    char *second = strchr(txt, '\n') + 1;
    second[-1] = 0;
    cr_assert_null(strstr(txt, "remeasure"), "an ordinary trial got a remeasure key: %s", txt);
    cr_assert_not_null(strstr(second, "\"remeasure\":{\"samples\":[0.0025,0.0021,null,0.0022],\"default\":true,"
                                      "\"load\":1.75,\"cores\":2}"),
                       "%s", second);
    free(txt);
    cr_assert_eq(loom_db_open_readonly(dir_, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_db_count(db), 2);
    const loom_record *a = loom_db_record(db, 0), *b = loom_db_record(db, 1);
    cr_assert_eq(a->nsamples, 0);
    cr_assert_null(a->samples);
    cr_assert_eq(b->nsamples, 4);
    for (int i = 0; i < 4; i++)
        cr_assert(b->samples[i] == s[i], "sample %d: %g", i, b->samples[i]);
    cr_assert_eq(b->is_default, 1);
    cr_assert_float_eq(b->load, 1.75, 1e-12);
    cr_assert_eq(b->cores, 2);
    loom_db_close(db);
}

/* ---- invalid UTF-8 (issue 32) ------------------------------------------------------ */

/* The file as bytes with every "PLACEHOLDER" replaced by `with`. */
static void replace_in_file(const char *path, const char *with)
{
    size_t len;
    char *txt = slurp(path, &len);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    const char *p = txt, *q;
    while ((q = strstr(p, "PLACEHOLDER"))) {
        fwrite(p, 1, (size_t)(q - p), f);
        fputs(with, f);
        p = q + strlen("PLACEHOLDER");
    }
    fputs(p, f);
    fclose(f);
    free(txt);
}

Test(dbguard, a_record_with_invalid_utf8_loads_repaired_with_one_warning)
{
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open(dir_, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    for (int i = 1; i <= 3; i++) {
        loom_record r = rec((uint64_t)i, 1e-3 * i);
        if (i == 2) {
            r.status = LOOM_ERR_BUILD;
            r.latency_s = INFINITY;
            r.message = "cc: PLACEHOLDER";
        }
        cr_assert_eq(loom_db_append(db, &r, &err), LOOM_OK, "%s", err.msg);
    }
    loom_db_close(db);
    char path[400];
    snprintf(path, sizeof path, "%s/records.jsonl", dir_);
    /* what an older loom wrote: a Latin-1 compiler message, a stray byte */
    replace_in_file(path, "\xe9" "chec \xff end");
    char *warn = NULL;
    size_t wl = 0;
    FILE *w = open_memstream(&warn, &wl);
    cr_assert_eq(loom_db_open_readonly(dir_, w, &db, &err), LOOM_OK, "%s", err.msg);
    fclose(w);
    cr_assert_eq(loom_db_count(db), 3, "records: %d; warnings: %s", loom_db_count(db), warn);
    cr_assert_eq(loom_db_skipped(db), 0, "%s", warn);
    cr_assert_eq(loom_db_repaired(db), 1, "%s", warn);
    cr_assert_eq(lines_in(warn, wl), 1, "not one warning: %s", warn);
    char want[500];
    snprintf(want, sizeof want, "%s:2: repaired: invalid UTF-8", path);
    cr_assert_not_null(strstr(warn, want), "no '%s' in: %s", want, warn);
    for (int i = 0; i < 3; i++) {
        const loom_record *x = loom_db_record(db, i);
        cr_assert_eq(x->schedule_hash, (uint64_t)i + 1);
        cr_assert_eq(loom_utf8_check(x->message, strlen(x->message)), strlen(x->message), "line %d", i + 1);
    }
    cr_assert_str_eq(loom_db_record(db, 1)->message, "cc: \xef\xbf\xbd" "chec \xef\xbf\xbd end");
    cr_assert_eq(loom_db_record(db, 1)->status, LOOM_ERR_BUILD);
    loom_db_close(db);
    free(warn);
}

Test(dbguard, the_writer_never_emits_invalid_utf8)
{
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open(dir_, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    loom_record r = rec(1, INFINITY);
    r.status = LOOM_ERR_BUILD;
    r.message = "x.c:1: erreur: \xe9tiquette \xc3\xa9 ok, cut \xe2\x82";
    r.workload_text = "# caf\xe9\ntensor A(N) dense\n";
    cr_assert_eq(loom_db_append(db, &r, &err), LOOM_OK, "%s", err.msg);
    char *kept = strdup(loom_db_record(db, 0)->message); /* db's copy goes with db */
    cr_assert_str_eq(kept, "x.c:1: erreur: \xef\xbf\xbdtiquette \xc3\xa9 ok, cut \xef\xbf\xbd");
    loom_db_close(db);
    char path[400];
    snprintf(path, sizeof path, "%s/records.jsonl", dir_);
    size_t len;
    char *txt = slurp(path, &len);
    cr_assert_eq(loom_utf8_check(txt, len), len, "invalid UTF-8 at byte %zu of the file", loom_utf8_check(txt, len));
    free(txt);
    char *warn = NULL;
    size_t wl = 0;
    FILE *w = open_memstream(&warn, &wl);
    cr_assert_eq(loom_db_open_readonly(dir_, w, &db, &err), LOOM_OK, "%s", err.msg);
    fclose(w);
    cr_assert_eq(wl, 0, "warnings: %s", warn);
    cr_assert_str_eq(loom_db_record(db, 0)->message, kept);
    loom_db_close(db);
    free(kept);
    free(warn);
}

Test(dbguard, a_line_nested_too_deep_names_the_limit)
{
    char path[400];
    snprintf(path, sizeof path, "%s/records.jsonl", dir_);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fputs("{\"format\":\"loom-record\",\"trace\":", f);
    for (int i = 0; i < 5000; i++)
        fputc('[', f);
    for (int i = 0; i < 5000; i++)
        fputc(']', f);
    fputs("}\n", f);
    fclose(f);
    char *warn = NULL;
    size_t wl = 0;
    FILE *w = open_memstream(&warn, &wl);
    loom_db *db = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open_readonly(dir_, w, &db, &err), LOOM_OK, "%s", err.msg);
    fclose(w);
    cr_assert_eq(loom_db_skipped(db), 1);
    cr_assert_not_null(strstr(warn, ":1: skipped: not valid JSON near byte"), "%s", warn);
    cr_assert_not_null(strstr(warn, "nested deeper than the JSON reader's limit (cJSON's CJSON_NESTING_LIMIT, 1000"),
                       "%s", warn);
    loom_db_close(db);
    free(warn);
}
