/* The tuning database (search/database/database.h), continued from
 * test_database.c: a writer killed with SIGKILL and restarted, the data
 * fingerprint, a pinned campaign's pins and the re-measurement's winner. */
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

/* ---- a writer killed with SIGKILL, restarted -------------------------------------- */

/* The child: open DIR, append records "seq N" forever (every other one with
 * a 256 KiB message, so a kill can land inside a write: Linux ends a write
 * to a regular file early when a fatal signal is pending). */
static void writer_child(const char *dir)
{
    loom_db *db = NULL;
    loom_error err;
    if (loom_db_open(dir, NULL, &db, &err))
        _exit(3);
    static char msg[300 * 1024];
    for (int seq = loom_db_count(db);; seq++) {
        int n = snprintf(msg, sizeof msg, "seq %d ", seq);
        size_t pad = seq % 2 == 0 ? 256 * 1024 : (size_t)(seq % 50);
        memset(msg + n, 'x', pad);
        msg[(size_t)n + pad] = 0;
        loom_record r = db_rec_make(42, "cpu:kill", (uint64_t)seq, seq % 4 ? LOOM_OK : LOOM_ERR_RUN,
                                 seq % 4 ? 1e-4 : INFINITY, seq, msg);
        if (loom_db_append(db, &r, &err))
            _exit(4);
    }
}

#define ROUNDS 6

Test(database, sigkill_loses_no_record, .timeout = 120)
{
    char tmp[64], path[256];
    db_make_tmpdir(tmp, sizeof tmp);
    db_records_path(tmp, path, sizeof path);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    int torn_rounds = 0, prev_count = 0;
    int torn_lines[ROUNDS], ntorn = 0;
    for (int round = 0; round < ROUNDS; round++) {
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0)
            writer_child(tmp);
        /* wait for this round's first record; then kill at a random moment
         * (even rounds) or as soon as the file ends mid-line, i.e. while the
         * child is inside a write (odd rounds; the write may still finish) */
        struct stat sb;
        off_t start = 0;
        if (stat(path, &sb) == 0)
            start = sb.st_size;
        for (int w = 0; w < 2000; w++) {
            if (stat(path, &sb) == 0 && sb.st_size > start)
                break;
            usleep(5000);
        }
        usleep((useconds_t)(rand() % 100000));
        if (round % 2) {
            FILE *f = fopen(path, "rb");
            cr_assert_not_null(f);
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (;;) {
                char last = '\n';
                if (fstat(fileno(f), &sb) == 0 && sb.st_size > 0 && pread(fileno(f), &last, 1, sb.st_size - 1) == 1 &&
                    last != '\n')
                    break;
                clock_gettime(CLOCK_MONOTONIC, &t1);
                if ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) > 500000000L)
                    break; /* give up waiting: kill wherever it is */
            }
            fclose(f);
        }
        cr_assert_eq(kill(pid, SIGKILL), 0);
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writer exited by itself (%d)", status);

        size_t len;
        char *text = db_read_all(path, &len);
        int complete = db_count_lines(text);
        int tail = len > 0 && text[len - 1] != '\n';
        /* where each line starts (one pass: the file can be large) */
        const char **starts = malloc((size_t)(complete + 1) * sizeof *starts);
        cr_assert_not_null(starts);
        starts[0] = text;
        for (int k = 1; k <= complete; k++)
            starts[k] = strchr(starts[k - 1], '\n') + 1;
        char *warnings;
        loom_db *db = db_open_warn(tmp, &warnings);
        int n = loom_db_count(db);
        cr_assert_gt(n, prev_count, "round %d: no new record", round);
        /* every line is a record or a torn one: nothing lost */
        cr_assert_eq(n + loom_db_skipped(db), complete + tail, "round %d: %d records + %d skipped != %d lines",
                     round, n, loom_db_skipped(db), complete + tail);
        for (int i = 0; i < n; i++) {
            const loom_record *r = loom_db_record(db, i);
            int seq = -1;
            cr_assert_eq(sscanf(r->message, "seq %d ", &seq), 1);
            cr_assert_eq(seq, i, "round %d: record %d is seq %d (a record was lost)", round, i, seq);
            cr_assert_eq(r->schedule_hash, (uint64_t)i);
            /* its line number points at its line */
            cr_assert(r->line >= 1 && r->line <= complete + tail, "record %d: line %d", i, r->line);
            const char *m = strstr(starts[r->line - 1], "\"message\":\"");
            cr_assert_not_null(m);
            size_t ml = strlen(r->message) < 20 ? strlen(r->message) : 20;
            cr_assert(!strncmp(m + 11, r->message, ml), "record %d: line %d is not it", i, r->line);
        }
        /* the only skipped lines: this round's torn tail and earlier rounds' torn lines */
        int skipped_here = 0;
        for (char *p = warnings; (p = strstr(p, "records.jsonl:")); p++) {
            int line = atoi(p + strlen("records.jsonl:"));
            int known = tail && line == complete + 1 && strstr(p, "torn last line") == strchr(p, ' ') + 10;
            for (int k = 0; k < ntorn; k++)
                known |= torn_lines[k] == line;
            cr_assert(known, "round %d: unexpected warning: %s", round, p);
            skipped_here++;
        }
        cr_assert_eq(skipped_here, loom_db_skipped(db));
        if (tail) {
            torn_rounds++;
            torn_lines[ntorn++] = complete + 1;
        }
        free(warnings);
        free(starts);
        free(text);
        prev_count = n;
        loom_db_close(db);
    }
    /* a restart appends a valid line */
    char *warnings;
    loom_db *db = db_open_warn(tmp, &warnings);
    free(warnings);
    loom_record r = db_rec_make(42, "cpu:kill", 1000000, LOOM_OK, 1e-4, 1, "the last one");
    db_append_ok(db, &r);
    int n = loom_db_count(db);
    loom_db_close(db);
    db = db_open_warn(tmp, &warnings);
    free(warnings);
    cr_assert_eq(loom_db_count(db), n);
    cr_assert_str_eq(loom_db_record(db, n - 1)->message, "the last one");
    loom_db_close(db);
    fprintf(stderr, "database/sigkill: %d records over %d killed writers, %d of them killed mid-line\n", n - 1,
            ROUNDS, torn_rounds);
    db_remove_tree(tmp);
}

/* ---- the data fingerprint ---------------------------------------------------------- */

static loom_dataset *load_ds(const char *workload, const loom_data_spec *specs, int ns, const char *pname,
                             int64_t pval, uint64_t seed, loom_program **prog)
{
    loom_error err;
    cr_assert_eq(loom_program_parse_file(workload, prog, &err), LOOM_OK, "%s", err.msg);
    loom_param_spec p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "%s", pname);
    p.value = pval;
    loom_dataset *ds = NULL;
    cr_assert_eq(loom_dataset_load(*prog, specs, ns, &p, 1, seed, &ds, &err), LOOM_OK, "%s", err.msg);
    return ds;
}

Test(database, data_fingerprint)
{
    loom_program *p1, *p2, *p3, *p4;
    loom_dataset *a = load_ds("workloads/gemm.loom", NULL, 0, "K", 16, 1, &p1);
    loom_dataset *b = load_ds("workloads/gemm.loom", NULL, 0, "K", 16, 1, &p2);
    loom_dataset *c = load_ds("workloads/gemm.loom", NULL, 0, "K", 16, 2, &p3); /* other seed */
    loom_dataset *d = load_ds("workloads/gemm.loom", NULL, 0, "K", 8, 1, &p4);  /* other size */
    uint64_t fa = loom_data_fingerprint(a);
    cr_assert_eq(fa, loom_data_fingerprint(b), "equal data, different fingerprints");
    cr_assert_neq(fa, loom_data_fingerprint(c));
    cr_assert_neq(fa, loom_data_fingerprint(d));
    int A = loom_program_find_tensor(p2, "A");
    float keep = b->t[A].vals[5];
    b->t[A].vals[5] = keep + 1.0f;
    cr_assert_neq(loom_data_fingerprint(b), fa, "one value changed, same fingerprint");
    b->t[A].vals[5] = keep;
    cr_assert_eq(loom_data_fingerprint(b), fa);
    /* outputs are not data */
    int C = loom_program_find_tensor(p2, "C");
    b->t[C].vals[0] = 42.0f;
    cr_assert_eq(loom_data_fingerprint(b), fa);
    loom_dataset_free(a);
    loom_dataset_free(b);
    loom_dataset_free(c);
    loom_dataset_free(d);
    loom_program_free(p1);
    loom_program_free(p2);
    loom_program_free(p3);
    loom_program_free(p4);

    /* sparse: one coordinate, one value */
    loom_data_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.tensor, sizeof s.tensor, "A");
    snprintf(s.path, sizeof s.path, "data/cora_adj.mtx");
    a = load_ds("workloads/spmm.loom", &s, 1, "F", 4, 1, &p1);
    b = load_ds("workloads/spmm.loom", &s, 1, "F", 4, 1, &p2);
    fa = loom_data_fingerprint(a);
    cr_assert_eq(fa, loom_data_fingerprint(b));
    A = loom_program_find_tensor(p2, "A");
    cr_assert_not_null(b->t[A].crd[1]);
    b->t[A].crd[1][3] ^= 1;
    cr_assert_neq(loom_data_fingerprint(b), fa, "one coordinate changed, same fingerprint");
    b->t[A].crd[1][3] ^= 1;
    b->t[A].vals[b->t[A].nnz - 1] *= 2.0f;
    cr_assert_neq(loom_data_fingerprint(b), fa, "the last value changed, same fingerprint");
    loom_dataset_free(a);
    loom_dataset_free(b);
    loom_program_free(p1);
    loom_program_free(p2);
}

/* A pinned campaign's "pins" and the re-measurement's "winner" round-trip
 * (what replay filters and picks by); pins that are not an array are
 * refused on append and named on load. */
#include "../search/navigate/navigate.h"

Test(database, pins_and_winner_round_trip)
{
    char dir[256];
    db_make_tmpdir(dir, sizeof dir);
    loom_pins p;
    memset(&p, 0, sizeof p);
    p.n = 2;
    p.ordinal[0] = 1;
    p.value[0].kind = LOOM_INST_SAMPLE_LOOP_ORDER;
    p.value[0].n = 1;
    p.value[0].v[0] = 2;
    p.ordinal[1] = 4;
    p.value[1].kind = LOOM_INST_SAMPLE_PERFECT_TILE;
    p.value[1].n = 3;
    p.value[1].v[0] = 4, p.value[1].v[1] = 2, p.value[1].v[2] = 1;
    char *pj = NULL;
    cr_assert_eq(loom_pins_to_json(&p, &pj), LOOM_OK);
    loom_db *db = db_open_warn(dir, &(char *){NULL});
    loom_record r = db_rec_make(7, "cpu:x", 11, LOOM_OK, 1e-5, 100, "");
    r.pins_json = pj;
    double s[2] = {1e-5, 2e-5};
    r.nsamples = 2;
    r.samples = s;
    r.is_winner = 1;
    db_append_ok(db, &r);
    r.pins_json = "{\"not\": \"an array\"}";
    loom_error err;
    cr_assert_eq(loom_db_append(db, &r, &err), LOOM_ERR_INVALID);
    cr_assert_not_null(strstr(err.msg, "pins_json"), "%s", err.msg);
    loom_db_close(db);
    char *warn = NULL;
    db = db_open_warn(dir, &warn);
    cr_assert_eq(loom_db_count(db), 1, "%s", warn);
    const loom_record *x = loom_db_record(db, 0);
    cr_assert(x->is_winner);
    cr_assert_not_null(x->pins_json);
    loom_pins back;
    cr_assert_eq(loom_pins_from_json(x->pins_json, &back, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(back.n, 2);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(back.ordinal[k], p.ordinal[k]);
        cr_assert(loom_nav_value_equal(&back.value[k], &p.value[k]));
    }
    cr_assert_neq(loom_pins_from_json("[{\"sampler\": 2}]", &back, &err), LOOM_OK);
    cr_assert_eq(back.n, 0);
    loom_db_close(db);
    free(warn);
    free(pj);
    db_remove_tree(dir);
}
