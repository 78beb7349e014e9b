/* `loom db DIR` as a user runs it (suite `database`, with test_database.c):
 * groups and best-first order, GFLOP/s, --limit, --json, --workload, a torn
 * line's warning, exit codes and help. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../dsl/ir/program.h"
#include "../runtime/measure/measure.h"
#include "../search/database/database.h"
#include "db_fixture.h"
#include "fixture.h"

#define FMT(buf, ...) cr_assert_lt(snprintf(buf, sizeof buf, __VA_ARGS__), (int)sizeof buf, "%s: too long", #buf)

static const char *DATA_FP = "00112233aabbccdd";

static void make_tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/loom-clidb-XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
}

static void remove_tree(const char *dir)
{
    char cmd[600];
    FMT(cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static void records_path(const char *dir, char *buf, size_t n)
{
    cr_assert_lt(snprintf(buf, n, "%s/records.jsonl", dir), (int)n);
}

/* ---- loom db ------------------------------------------------------------------- */

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

static char out[1 << 16], errb[1 << 14];

/* Run `loom ARGS` (TZ=UTC), capture stdout and stderr; return the exit code. */
static int run_loom(const char *args)
{
    char cmd[4096];
    char errfile[] = "/tmp/loom-clidb-err-XXXXXX";
    int fd = mkstemp(errfile);
    cr_assert_geq(fd, 0);
    close(fd);
    FMT(cmd, "TZ=UTC %s %s 2>%s", loom_bin(), args, errfile);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    FILE *e = fopen(errfile, "r");
    size_t m = e ? fread(errb, 1, sizeof errb - 1, e) : 0;
    errb[m] = 0;
    if (e)
        fclose(e);
    unlink(errfile);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static uint64_t workload_hash(const char *path)
{
    loom_program *p;
    loom_error err;
    cr_assert_eq(loom_program_parse_file(path, &p, &err), LOOM_OK, "%s", err.msg);
    uint64_t h = loom_program_hash(p);
    loom_program_free(p);
    return h;
}

Test(database, cli_db, .timeout = 60)
{
    char tmp[64], args[512];
    make_tmpdir(tmp, sizeof tmp);
    uint64_t spmm = workload_hash("workloads/spmm.loom"), gemm = workload_hash("workloads/gemm.loom");
    loom_db *db = NULL;
    loom_error e;
    cr_assert_eq(loom_db_open(tmp, NULL, &db, &e), LOOM_OK, "%s", e.msg);
    struct {
        uint64_t w;
        loom_status st;
        double lat;
        const char *msg;
    } rs[] = {{spmm, LOOM_OK, 3e-3, ""},
              {spmm, LOOM_ERR_BUILD, INFINITY, "cc: error: expected ';' before '}' token"},
              {spmm, LOOM_OK, 1e-5, ""},
              {spmm, LOOM_ERR_WRONG, 2e-5, "max relative error 0.5 > tolerance 1e-4"},
              {spmm, LOOM_OK, 2e-4, ""},
              {gemm, LOOM_OK, 1e-2, ""}};
    for (int i = 0; i < 6; i++) {
        char trace[256];
        FMT(trace,
            "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"%016" PRIx64
            "\", \"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]]], \"decisions\": []}",
            rs[i].w);
        loom_record r = {.workload_hash = rs[i].w, .workload_name = rs[i].w == spmm ? "spmm" : "gemm",
                         .data_fp = (char *)DATA_FP, .target_fp = "cpu:aaaa", .trace_json = trace,
                         .schedule_hash = 500 + (uint64_t)i, .latency_s = rs[i].lat, .flops = 2e6,
                         .status = rs[i].st, .message = (char *)rs[i].msg, .time = 1714567890 + i};
        cr_assert_eq(loom_db_append(db, &r, &e), LOOM_OK, "%s", e.msg);
    }
    loom_db_close(db);

    FMT(args, "db %s", tmp);
    cr_assert_eq(run_loom(args), 0, "stderr: %s", errb);
    cr_assert_str_eq(errb, "");
    char head[256];
    FMT(head, "spmm (workload %016" PRIx64 ") on cpu:aaaa, data %s: 5 records: 3 ok, 1 build-error, 1 wrong", spmm,
        DATA_FP);
    char *hs = strstr(out, head), *hg = strstr(out, "gemm (workload ");
    cr_assert(hs && hg, "headers missing:\n%s", out);
    cr_assert_lt(hg, hs, "groups are sorted by workload name");
    /* best first: 10 us, 200 us, 3 ms, then the failed ones by time */
    char *r1 = strstr(hs, "10.0 us"), *r2 = strstr(hs, "200.0 us"), *r3 = strstr(hs, "3.000 ms");
    char *r4 = strstr(hs, "build-error  "), *r5 = strstr(hs, "wrong  ");
    cr_assert(r1 && r2 && r3 && r4 && r5, "rows missing:\n%s", out);
    cr_assert(r1 < r2 && r2 < r3 && r3 < r4 && r4 < r5, "rows out of order:\n%s", out);
    cr_assert(strstr(hs, "200.00"), "GFLOP/s of 2e6 FLOPs in 10 us:\n%s", out);
    cr_assert(strstr(hs, "cc: error: expected ';' before '}' token"), "%s", out);
    cr_assert(strstr(out, "2024-05-01 12:51:30"), "measured time (UTC):\n%s", out);

    FMT(args, "db %s --limit 2", tmp);
    cr_assert_eq(run_loom(args), 0);
    cr_assert(strstr(out, "... 3 more (--limit 0 shows all)"), "%s", out);
    cr_assert_null(strstr(out, "3.000 ms"), "%s", out);

    FMT(args, "db %s --json --limit 0", tmp);
    cr_assert_eq(run_loom(args), 0, "%s", errb);
    cJSON *o = cJSON_Parse(out);
    cr_assert_not_null(o, "not JSON: %s", out);
    cr_assert_eq(cJSON_GetObjectItem(o, "records")->valuedouble, 6);
    cJSON *groups = cJSON_GetObjectItem(o, "groups");
    cr_assert_eq(cJSON_GetArraySize(groups), 2);
    cJSON *g = cJSON_GetArrayItem(groups, 1);
    cr_assert_str_eq(cJSON_GetObjectItem(g, "workload_name")->valuestring, "spmm");
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(g, "counts"), "ok")->valuedouble, 3);
    cJSON *recs = cJSON_GetObjectItem(g, "records");
    cr_assert_eq(cJSON_GetArraySize(recs), 5);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(recs, 0), "latency_s")->valuedouble, 1e-5);
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(recs, 3), "latency_s")));
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(recs, 4), "status")->valuestring, "wrong");
    cJSON_Delete(o);

    FMT(args, "db %s --workload workloads/gemm.loom", tmp);
    cr_assert_eq(run_loom(args), 0, "%s", errb);
    cr_assert(strstr(out, "gemm (workload"), "%s", out);
    cr_assert_null(strstr(out, "spmm (workload"), "%s", out);

    /* a torn last line: a warning naming it, still exit 0 */
    char path[256], line[64];
    records_path(tmp, path, sizeof path);
    FILE *f = fopen(path, "a");
    fputs("{\"format\":\"loom-rec", f);
    fclose(f);
    FMT(args, "db %s", tmp);
    cr_assert_eq(run_loom(args), 0);
    FMT(line, "records.jsonl:7: skipped: torn last line");
    cr_assert(strstr(errb, line), "stderr: %s", errb);
    cr_assert(strstr(out, "6 records (1 line skipped)"), "%s", out);

    /* errors */
    FMT(args, "db %s/missing", tmp);
    cr_assert_eq(run_loom(args), 2);
    cr_assert(strstr(errb, "loom db: ") && strstr(errb, "no such directory"), "%s", errb);
    struct stat sb;
    FMT(path, "%s/missing", tmp);
    cr_assert_neq(stat(path, &sb), 0, "loom db created the directory");
    FMT(path, "%s/empty", tmp);
    cr_assert_eq(mkdir(path, 0777), 0);
    FMT(args, "db %s", path);
    cr_assert_eq(run_loom(args), 2);
    cr_assert(strstr(errb, "not a tuning database"), "%s", errb);
    FMT(args, "db %s --frobnicate", tmp);
    cr_assert_eq(run_loom(args), 2);
    cr_assert(strstr(errb, "unknown option '--frobnicate'"), "%s", errb);
    FMT(args, "db %s --limit many", tmp);
    cr_assert_eq(run_loom(args), 2);
    cr_assert(strstr(errb, "--limit"), "%s", errb);
    FMT(args, "db %s --workload %s/none.loom", tmp, tmp);
    cr_assert_eq(run_loom(args), 2);
    cr_assert_eq(run_loom("db"), 2);
    cr_assert(strstr(errb, "no directory given"), "%s", errb);

    cr_assert_eq(run_loom("db --help"), 0);
    const char *flags[] = {"--workload", "--limit", "--json", "--help"};
    for (int i = 0; i < 4; i++)
        cr_assert(strstr(out, flags[i]), "help lacks %s", flags[i]);
    cr_assert_eq(run_loom("--help"), 0);
    cr_assert(strstr(out, "  db DIR"), "top-level help lacks db:\n%s", out);
    remove_tree(tmp);
}

/* ---- loom db --fidelity ---- */

static double *fid_ranks(const double *v, int n)
{
    double *r = malloc(sizeof *r * (size_t)n);
    for (int i = 0; i < n; i++) { /* rank = values below + half the ties (average rank) */
        double below = 0, same = 0;
        for (int j = 0; j < n; j++)
            below += v[j] < v[i], same += v[j] == v[i];
        r[i] = below + (same - 1) / 2;
    }
    return r;
}

/* Sampled schedules of SpMM on cora500 recorded as CPU measurements with
 * latencies the test chose: `loom db --fidelity --json` reports the rows it
 * simulated, and its Spearman, top-1 regret and pairs-apart figures equal
 * what this test computes from those rows (ranks, pairs and ties written
 * here, sharing no code with cmd_db_fidelity.c). */
Test(database, cli_db_fidelity, .timeout = 120)
{
    char tmp[64], dbdir[128], sdir[128], args[1024];
    make_tmpdir(tmp, sizeof tmp);
    FMT(sdir, "%s/s", tmp);
    FMT(dbdir, "%s/db", tmp);
    const char *data = "--data A=data/cora500_adj.mtx --param F=16";
    FMT(args, "sample workloads/spmm.loom %s --count 12 --out %s --target sim", data, sdir);
    cr_assert_eq(run_loom(args), 0, "%s", errb);
    const char *bind[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", bind, 2, 1, &ds);
    char dfp[17];
    snprintf(dfp, sizeof dfp, "%016llx", (unsigned long long)loom_data_fingerprint(ds));
    uint64_t wh = loom_program_hash(prog);
    loom_db *db = NULL;
    loom_error e;
    cr_assert_eq(loom_db_open(dbdir, NULL, &db, &e), LOOM_OK, "%s", e.msg);
    double lat[12];
    for (int i = 0; i < 12; i++) {
        char path[256];
        FMT(path, "%s/trace-%05d.json", sdir, i);
        char *trace = db_read_all(path, NULL);
        lat[i] = 1e-4 * (1.0 + 0.1 * i) * (i % 3 == 1 ? 2.5 : 1.0); /* three groups, some pairs within 25% */
        loom_record r = {.workload_hash = wh, .workload_name = "spmm", .data_fp = dfp, .target_fp = "cpu:aaaa",
                         .trace_json = trace, .schedule_hash = 900 + (uint64_t)i, .latency_s = lat[i],
                         .flops = 2e6, .status = LOOM_OK, .message = "", .time = 1714567890 + i};
        cr_assert_eq(loom_db_append(db, &r, &e), LOOM_OK, "%s", e.msg);
        free(trace);
    }
    /* a 13th schedule whose measurement flagged itself unreliable (stalled
     * runs): left out, though within --max-slowdown of the best */
    {
        char path[256];
        FMT(path, "%s/trace-%05d.json", sdir, 0);
        char *trace = db_read_all(path, NULL);
        loom_record r = {.workload_hash = wh, .workload_name = "spmm", .data_fp = dfp, .target_fp = "cpu:aaaa",
                         .trace_json = trace, .schedule_hash = 912, .latency_s = 1.5e-4, .flops = 2e6,
                         .status = LOOM_OK,
                         .message = LOOM_MEASURE_UNRELIABLE ": 6 of 9 counted runs stalled (7 stalled in all)",
                         .time = 1714567990};
        cr_assert_eq(loom_db_append(db, &r, &e), LOOM_OK, "%s", e.msg);
        free(trace);
    }
    loom_db_close(db);
    loom_dataset_free(ds);
    loom_program_free(prog);

    FMT(args, "db %s --fidelity --workload workloads/spmm.loom %s --target targets/spr-2c.json --json --max-slowdown 0",
        dbdir, data);
    cr_assert_eq(run_loom(args), 0, "%s", errb);
    cJSON *all = cJSON_Parse(out);
    cr_assert_not_null(all, "%s", out);
    int kept_all = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(all, "rows"));
    cJSON_Delete(all);
    FMT(args, "db %s --fidelity --workload workloads/spmm.loom %s --target targets/spr-2c.json --json --apart 25",
        dbdir, data);
    cr_assert_eq(run_loom(args), 0, "%s", errb);
    cJSON *o = cJSON_Parse(out);
    cr_assert_not_null(o, "%s", out);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(o, "rows");
    int n = cJSON_GetArraySize(rows);
    cr_assert_geq(n, 6, "rows that simulate: %d\n%s", n, out);
    /* the flagged record is the one left out (schedule 912 would fail the
     * row check below), and --max-slowdown 0 keeps it */
    cr_expect_eq(kept_all, n + 1, "rows with --max-slowdown 0: %d, without: %d", kept_all, n);
    cr_expect_eq(cJSON_GetObjectItemCaseSensitive(o, "dropped_stalled")->valueint, 1);
    double meas[12], sim[12], best = INFINITY, fav_meas = 0, fav_sim = INFINITY;
    for (int i = 0; i < n; i++) {
        const cJSON *r = cJSON_GetArrayItem(rows, i);
        meas[i] = cJSON_GetObjectItemCaseSensitive(r, "measured_s")->valuedouble;
        sim[i] = cJSON_GetObjectItemCaseSensitive(r, "simulated_s")->valuedouble;
        int k = (int)strtol(cJSON_GetObjectItemCaseSensitive(r, "schedule")->valuestring, NULL, 16) - 900;
        cr_assert(k >= 0 && k < 12, "schedule %d", k);
        cr_expect_float_eq(meas[i], lat[k], 1e-12 * lat[k], "row %d: measured %g, recorded %g", i, meas[i], lat[k]);
        cr_expect(sim[i] > 0 && isfinite(sim[i]));
        best = fmin(best, meas[i]);
        if (sim[i] < fav_sim)
            fav_sim = sim[i], fav_meas = meas[i];
    }
    /* Spearman: Pearson of the ranks */
    double *ra = fid_ranks(sim, n), *rb = fid_ranks(meas, n), ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++)
        ma += ra[i] / n, mb += rb[i] / n;
    for (int i = 0; i < n; i++)
        sab += (ra[i] - ma) * (rb[i] - mb), saa += (ra[i] - ma) * (ra[i] - ma), sbb += (rb[i] - mb) * (rb[i] - mb);
    free(ra), free(rb);
    double rho = sab / sqrt(saa * sbb);
    cr_expect_float_eq(cJSON_GetObjectItemCaseSensitive(o, "spearman")->valuedouble, rho, 1e-9);
    cr_expect_float_eq(cJSON_GetObjectItemCaseSensitive(o, "top1_regret")->valuedouble, fav_meas / best, 1e-12);
    /* pairs more than 1.25x apart, and the share ordered alike */
    long long pairs = 0;
    double alike = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            double hi = meas[i] > meas[j] ? meas[i] : meas[j], lo = meas[i] > meas[j] ? meas[j] : meas[i];
            if (hi <= 1.25 * lo)
                continue;
            pairs++;
            int same = (sim[i] < sim[j]) == (meas[i] < meas[j]);
            alike += sim[i] == sim[j] ? 0.5 : same;
        }
    cr_assert_gt(pairs, 0);
    cr_assert_lt(pairs, (long long)n * (n - 1) / 2, "some pairs lie within 25%%");
    cr_expect_eq((long long)cJSON_GetObjectItemCaseSensitive(o, "pairs_apart")->valuedouble, pairs);
    cr_expect_float_eq(cJSON_GetObjectItemCaseSensitive(o, "pair_agreement")->valuedouble, alike / pairs, 1e-12);
    cr_expect_float_eq(cJSON_GetObjectItemCaseSensitive(o, "apart")->valuedouble, 1.25, 1e-12);
    cJSON_Delete(o);

    /* the human report says the same; a bad --apart is named */
    FMT(args, "db %s --fidelity --workload workloads/spmm.loom %s --target targets/spr-2c.json", dbdir, data);
    cr_assert_eq(run_loom(args), 0, "%s", errb);
    char want[128];
    FMT(want, "pairs measured over 1.25x apart: %lld, ordered alike", pairs);
    cr_expect(strstr(out, want), "%s", out);
    FMT(args, "db %s --fidelity --workload workloads/spmm.loom %s --apart 0", dbdir, data);
    cr_expect_eq(run_loom(args), 2);
    cr_expect(strstr(errb, "--apart"), "%s", errb);
    remove_tree(tmp);
}
