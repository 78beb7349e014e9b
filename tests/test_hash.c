/* The structural workload hash (issue 14): comments, spacing and index
 * names do not change a workload's identity, its whole text counts (also
 * past the 16 KiB the program keeps), and records and traces of the old
 * text hash still match. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../dsl/ir/program.h"
#include "../search/database/database.h"

static loom_program *parse(const char *text)
{
    loom_program *p = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_program_parse_string(text, "t.loom", &p, &err), LOOM_OK, "%s", err.msg);
    return p;
}

static uint64_t hash_of(const char *text)
{
    loom_program *p = parse(text);
    uint64_t h = loom_program_hash(p);
    loom_program_free(p);
    return h;
}

static const char *SPMM = "param F = 64\ntensor A(N, K) csr\ntensor B(K, F) dense\n"
                          "tensor C(N, F) dense output\nC(i, f) += A(i, k) * B(k, f)\n";

Test(hash, comments_spacing_and_index_names_keep_the_identity)
{
    uint64_t h = hash_of(SPMM);
    cr_assert_eq(hash_of("# SpMM, commented\nparam F = 64\n\ntensor A(N, K) csr   # the graph\n"
                         "tensor B(K, F)   dense\ntensor C(N, F) dense output\n"
                         "# the product\nC(r, c) += A(r, s) * B(s, c)   # r rows\n"),
                 h);
    /* what the program computes does change it */
    const char *other[] = {
        "param F = 64\ntensor A(N, K) dcsr\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
        "C(i, f) += A(i, k) * B(k, f)\n",
        "param F = 32\ntensor A(N, K) csr\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
        "C(i, f) += A(i, k) * B(k, f)\n",
        "param F = 64\ntensor A(N, K) csr\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
        "C(i, f) += A(i, k) * B(k, f) * 2\n",
        "param F = 64\ntensor A(N, K) csr\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
        "C(i, f) max= A(i, k) * B(k, f)\n",
        "param F = 64\ntensor A(N, K) csr\ntensor X(K, F) dense\ntensor C(N, F) dense output\n"
        "C(i, f) += A(i, k) * X(k, f)\n",
        "param F = 64\ntensor A(N, M) csr\ntensor B(M, F) dense\ntensor C(N, F) dense output\n"
        "C(i, f) += A(i, k) * B(k, f)\n",
    };
    for (size_t k = 0; k < sizeof other / sizeof *other; k++)
        cr_assert_neq(hash_of(other[k]), h, "variant %zu hashes like spmm", k);
}

Test(hash, the_whole_text_counts_past_a_long_comment)
{
    size_t pad = LOOM_MAX_SOURCE + 4096;
    char *a = malloc(pad + 512), *b = malloc(pad + 512);
    cr_assert(a && b);
    size_t n = 0;
    const char *line = "# a long comment line that pushes the program past sixteen KiB of text\n";
    while (n + strlen(line) < pad) {
        memcpy(a + n, line, strlen(line));
        n += strlen(line);
    }
    memcpy(b, a, n);
    snprintf(a + n, 512, "%s", SPMM);
    snprintf(b + n, 512, "%s", "param F = 64\ntensor A(N, K) csr\ntensor B(K, F) dense\n"
                               "tensor C(N, F) dense output\nC(i, f) max= A(i, k) * B(k, f)\n");
    /* the old text hash saw only the comment: the two shared records */
    cr_assert_eq(loom_program_text_hash(a), loom_program_text_hash(b));
    cr_assert_neq(hash_of(a), hash_of(b));
    cr_assert_eq(hash_of(a), hash_of(SPMM));
    free(a);
    free(b);
}

Test(hash, text_hash_is_the_old_fnv1a_of_the_text)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const char *c = SPMM; *c; c++) {
        h ^= (unsigned char)*c;
        h *= 0x100000001b3ULL;
    }
    cr_assert_eq(loom_program_text_hash(SPMM), h);
    cr_assert_eq(loom_program_text_hash("a"), 0xaf63dc4c8601ec8cULL); /* FNV-1a 64 test vector */
    /* an old hash is upgraded to the structural one; anything else is kept */
    cr_assert_eq(loom_workload_hash_upgrade(h, SPMM), hash_of(SPMM));
    cr_assert_eq(loom_workload_hash_upgrade(h ^ 1, SPMM), h ^ 1);
    cr_assert_eq(loom_workload_hash_upgrade(h, NULL), h);
    uint64_t bad = loom_program_text_hash("not a workload(");
    cr_assert_eq(loom_workload_hash_upgrade(bad, "not a workload("), bad);
}

/* A records.jsonl written by an older loom (the workload hash of the text)
 * loads with the structural hash, so a commented copy finds the record. */
Test(hash, old_records_match_by_the_structural_hash)
{
    char dir[] = "/tmp/loom_hash_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/" LOOM_DB_FILE, dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    uint64_t old = loom_program_text_hash(SPMM);
    char esc[512];
    size_t k = 0;
    for (const char *c = SPMM; *c; c++) {
        if (*c == '\n') {
            esc[k++] = '\\';
            esc[k++] = 'n';
        } else {
            esc[k++] = *c;
        }
    }
    esc[k] = '\0';
    fprintf(f,
            "{\"format\":\"loom-record\",\"version\":1,\"workload\":\"%016" PRIx64 "\",\"workload_name\":\"spmm\","
            "\"workload_text\":\"%s\",\"data\":\"00112233aabbccdd\",\"target\":\"cpu:test\","
            "\"schedule\":\"0000000000000001\",\"status\":\"ok\",\"latency_s\":0.001,\"flops\":1,"
            "\"compile_s\":0,\"message\":\"\",\"time\":1,\"trace\":{\"format\":\"loom-trace\",\"version\":1,"
            "\"workload\":\"%016" PRIx64 "\",\"insts\":[],\"decisions\":[]}}\n",
            old, esc, old);
    fclose(f);
    loom_db *db = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_db_open(dir, stderr, &db, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_db_count(db), 1, "the old record did not load");
    uint64_t commented = hash_of("# a comment added later\nparam F = 64\ntensor A(N, K) csr\n"
                                 "tensor B(K, F) dense\ntensor C(N, F) dense output\n"
                                 "C(i, f) += A(i, k) * B(k, f)  # C = A B\n");
    cr_assert_neq(commented, old);
    cr_assert_not_null(loom_db_best(db, commented, "cpu:test"));
    cr_assert_null(loom_db_best(db, old, "cpu:test"));
    loom_db_close(db);
    unlink(path);
    rmdir(dir);
}

/* A trace recorded by an older loom (the text hash) still validates
 * against its workload; another hash is still refused. */
Test(hash, old_traces_still_match_their_workload)
{
    const char *bin = getenv("LOOM_BIN") ? getenv("LOOM_BIN") : "build/loom";
    FILE *w = fopen("workloads/spmm.loom", "rb");
    cr_assert_not_null(w);
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, w);
    text[n] = '\0';
    fclose(w);
    char dir[] = "/tmp/loom_hash_trace_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    uint64_t hashes[2] = {loom_program_text_hash(text), loom_program_text_hash(text) ^ 0x10};
    for (int k = 0; k < 2; k++) {
        char path[256], cmd[1024];
        snprintf(path, sizeof path, "%s/t%d.json", dir, k);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fprintf(f, "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"%016" PRIx64 "\", "
                   "\"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]]], \"decisions\": []}\n",
                hashes[k]);
        fclose(f);
        snprintf(cmd, sizeof cmd, "%s validate %s workloads/spmm.loom --data A=data/cora500_adj.mtx >/dev/null 2>&1",
                 bin, path);
        int st = system(cmd);
        cr_assert(WIFEXITED(st));
        if (k == 0)
            cr_assert_eq(WEXITSTATUS(st), 0, "a trace with the old text hash is refused");
        else
            cr_assert_eq(WEXITSTATUS(st), 2, "a trace of another workload is accepted");
        unlink(path);
    }
    rmdir(dir);
}
