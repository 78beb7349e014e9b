/* The trace commands of `loom` as a user runs them: sample, validate,
 * show, run --trace; exit codes, messages, determinism, help. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../dsl/ir/program.h"
#include "../traces/trace.h"

/* snprintf into an array, failing the test if it does not fit */
#define FMT(buf, ...) cr_assert_lt(snprintf(buf, sizeof buf, __VA_ARGS__), (int)sizeof buf, "%s: too long", #buf)

#define SPMM "workloads/spmm.loom --data A=data/cora_adj.mtx --param F=16"

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

/* Run `loom ARGS`, capture stdout and stderr; return the exit code. */
static int run_loom(const char *args, char *out, size_t nout, char *errbuf, size_t nerr)
{
    char cmd[4096];
    char errfile[] = "/tmp/loom-clitrace-err-XXXXXX";
    int fd = mkstemp(errfile);
    cr_assert_geq(fd, 0);
    close(fd);
    FMT(cmd, "%s %s 2>%s", loom_bin(), args, errfile);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, nout - 1, p);
    out[n] = 0;
    int st = pclose(p);
    FILE *e = fopen(errfile, "r");
    size_t m = e ? fread(errbuf, 1, nerr - 1, e) : 0;
    errbuf[m] = 0;
    if (e)
        fclose(e);
    unlink(errfile);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char out[1 << 16], err[1 << 14];

static void make_tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/loom-clitrace-XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
}

static void remove_tree(const char *dir)
{
    char cmd[600];
    FMT(cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void write_all(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fputs(text, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Names of the files in dir, sorted; returns the count (at most max). */
static int list_dir(const char *dir, char names[][256], int max)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        cr_assert_lt(n, max);
        snprintf(names[n++], 256, "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, 256, cmp_name);
    return n;
}

/* `loom sample` spmm into dir; returns the exit code (stdout in out). */
static int sample(const char *dir, int count, int seed, int valid_only)
{
    char args[1024];
    FMT(args, "sample " SPMM " --count %d --seed %d --out %s%s", count, seed, dir,
             valid_only ? " --valid-only" : "");
    return run_loom(args, out, sizeof out, err, sizeof err);
}

/* A valid sampled spmm trace in a new temp dir: *path receives its file. */
static void valid_trace(char *dir, size_t ndir, char *path, size_t npath)
{
    make_tmpdir(dir, ndir);
    cr_assert_eq(sample(dir, 20, 3, 1), 0, "%s", err);
    char names[32][256];
    int n = list_dir(dir, names, 32);
    cr_assert_gt(n, 0, "no valid trace among 20 draws: %s", out);
    snprintf(path, npath, "%s/%s", dir, names[0]);
}

static uint64_t workload_hash(const char *path)
{
    loom_program *prog = NULL;
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_parse_file(path, &prog, &e), LOOM_OK, "%s", e.msg);
    uint64_t h = loom_program_hash(prog);
    loom_program_free(prog);
    return h;
}

/* ---- sample ------------------------------------------------------------- */

Test(cli_trace, sample_writes_every_draw_and_each_loads, .timeout = 60)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    char sub[128];
    FMT(sub, "%s/nested/out", dir); /* mkdir -p */
    cr_assert_eq(sample(sub, 20, 1, 0), 0, "%s", err);
    cr_assert(strstr(out, "20 written") != NULL, "%s", out);
    char names[64][256];
    int n = list_dir(sub, names, 64);
    cr_assert_eq(n, 20, "20 trace files, got %d", n);
    for (int i = 0; i < n; i++) {
        char want[32];
        FMT(want, "trace-%05d.json", i);
        cr_assert_str_eq(names[i], want);
        char path[1024];
        FMT(path, "%s/%s", sub, names[i]);
        char *text = read_all(path);
        loom_trace *t = NULL;
        loom_error e;
        loom_error_clear(&e);
        cr_assert_eq(loom_trace_from_json(text, path, &t, &e), LOOM_OK, "%s: %s", path, e.msg);
        cr_assert_gt(t->ninsts, 0);
        cr_assert(t->has_workload);
        cr_assert_eq(t->workload, workload_hash("workloads/spmm.loom"));
        loom_trace_free(t);
        free(text);
    }
    remove_tree(dir);
}

Test(cli_trace, sample_valid_only_writes_the_valid_ones, .timeout = 120)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    cr_assert_eq(sample(dir, 20, 7, 1), 0, "%s", err);
    long nwritten = -1, nvalid = -1, ninvalid = -1;
    const char *p = strstr(out, "): ");
    cr_assert_not_null(p, "%s", out);
    cr_assert_eq(sscanf(p, "): %ld written to %*s %ld valid, %ld invalid", &nwritten, &nvalid, &ninvalid), 3,
                 "summary: %s", out);
    cr_assert_eq(nvalid + ninvalid, 20, "%s", out);
    cr_assert_eq(nwritten, nvalid, "%s", out);
    char names[64][256];
    int n = list_dir(dir, names, 64);
    cr_assert_eq(n, nvalid, "%d files, %ld valid", n, nvalid);
    /* each written trace is one `loom validate` accepts */
    for (int i = 0; i < n; i++) {
        char args[2048];
        FMT(args, "validate %s/%s " SPMM, dir, names[i]);
        cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 0, "%s: %s%s", names[i], out, err);
        cr_assert(strstr(out, "valid") == out, "%s", out);
    }
    remove_tree(dir);
}

Test(cli_trace, sample_is_deterministic_per_seed, .timeout = 60)
{
    char a[64], b[64], c[64];
    make_tmpdir(a, sizeof a);
    make_tmpdir(b, sizeof b);
    make_tmpdir(c, sizeof c);
    cr_assert_eq(sample(a, 20, 11, 0), 0, "%s", err);
    cr_assert_eq(sample(b, 20, 11, 0), 0, "%s", err);
    cr_assert_eq(sample(c, 20, 12, 0), 0, "%s", err);
    int differs = 0;
    for (int i = 0; i < 20; i++) {
        char pa[128], pb[128], pc[128];
        FMT(pa, "%s/trace-%05d.json", a, i);
        FMT(pb, "%s/trace-%05d.json", b, i);
        FMT(pc, "%s/trace-%05d.json", c, i);
        char *ta = read_all(pa), *tb = read_all(pb), *tc = read_all(pc);
        cr_assert_str_eq(ta, tb, "same seed, different %s", pa);
        differs |= strcmp(ta, tc) != 0;
        free(ta);
        free(tb);
        free(tc);
    }
    cr_assert(differs, "seeds 11 and 12 drew the same 20 traces");
    remove_tree(a);
    remove_tree(b);
    remove_tree(c);
}

Test(cli_trace, sample_needs_count_and_out)
{
    cr_assert_eq(run_loom("sample " SPMM " --out /tmp/loom-clitrace-never", out, sizeof out, err, sizeof err), 2);
    cr_assert(strstr(err, "loom sample: --count") != NULL, "%s", err);
    cr_assert_eq(run_loom("sample " SPMM " --count 0 --out /tmp/loom-clitrace-never", out, sizeof out, err,
                          sizeof err),
                 2);
    cr_assert_eq(access("/tmp/loom-clitrace-never", F_OK), -1, "no directory for a bad command");
}

/* ---- validate ------------------------------------------------------------ */

Test(cli_trace, validate_accepts_a_sampled_valid_trace, .timeout = 60)
{
    char dir[64], path[1024], args[512];
    valid_trace(dir, sizeof dir, path, sizeof path);
    FMT(args, "validate %s " SPMM, path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 0, "%s%s", out, err);
    cr_assert_str_eq(out, "valid\n");
    remove_tree(dir);
}

/* spmm's loops before any transform: l1 = i (free), l2 = k (reduced, a
 * position loop over A), l3 = f (free). */
static void hand_trace(const char *path, uint64_t hash, const char *last)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"%016llx\",\n"
             " \"insts\": [[\"GetBlock\", [], [\"C\"], [\"b0\"]],\n"
             "           [\"GetLoops\", [\"b0\"], [], [\"l1\", \"l2\", \"l3\"]],\n"
             "           %s],\n"
             " \"decisions\": []}\n",
             (unsigned long long)hash, last);
    write_all(path, text);
}

Test(cli_trace, validate_names_the_broken_rule)
{
    char dir[64], path[128], args[512];
    make_tmpdir(dir, sizeof dir);
    FMT(path, "%s/edited.json", dir);
    uint64_t h = workload_hash("workloads/spmm.loom");

    /* the same trace without the bad instruction is valid: the edit is the cause */
    hand_trace(path, h, "[\"Parallel\", [\"l1\"], [], []]");
    FMT(args, "validate %s " SPMM, path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 0, "%s%s", out, err);

    hand_trace(path, h, "[\"Vectorize\", [\"l1\"], [], []]");
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 1, "%s%s", out, err);
    cr_assert(strstr(out, "invalid: vectorize-not-innermost:") != NULL, "%s", out);

    hand_trace(path, h, "[\"Parallel\", [\"l2\"], [], []]");
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 1, "%s%s", out, err);
    cr_assert(strstr(out, "invalid: parallel-reduction:") != NULL, "%s", out);

    /* run refuses it too, before compiling anything */
    FMT(args, "run " SPMM " --trace %s", path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 1, "%s%s", out, err);
    cr_assert(strstr(err, "loom run:") && strstr(err, "parallel-reduction"), "%s", err);
    remove_tree(dir);
}

Test(cli_trace, validate_reports_a_replay_failure)
{
    char dir[64], path[128], args[512];
    make_tmpdir(dir, sizeof dir);
    FMT(path, "%s/nosuchblock.json", dir);
    char text[512];
    snprintf(text, sizeof text,
             "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"%016llx\", \"insts\": "
             "[[\"GetBlock\", [], [\"Z\"], [\"b0\"]]], \"decisions\": []}",
             (unsigned long long)workload_hash("workloads/spmm.loom"));
    write_all(path, text);
    FMT(args, "validate %s " SPMM, path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 1, "%s%s", out, err);
    cr_assert(strstr(out, "replay failed") && strstr(out, "GetBlock"), "%s", out);
    remove_tree(dir);
}

Test(cli_trace, validate_malformed_trace_exits_2, .timeout = 60)
{
    char dir[64], path[1024], bad[1200], args[4096];
    valid_trace(dir, sizeof dir, path, sizeof path);
    char *text = read_all(path);

    /* truncated */
    FMT(bad, "%s/truncated.json", dir);
    text[strlen(text) / 2] = 0;
    write_all(bad, text);
    FMT(args, "validate %s " SPMM, bad);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 2, "%s%s", out, err);
    cr_assert(strstr(err, "not valid JSON") || strstr(err, "$."), "%s", err);
    cr_assert(strstr(err, "loom validate:") && strstr(err, "truncated.json"), "names the file: %s", err);
    free(text);

    /* well-formed JSON, wrong document: the message names the path inside it */
    FMT(bad, "%s/kind.json", dir);
    char doc[512];
    snprintf(doc, sizeof doc,
             "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"%016llx\", \"insts\": "
             "[[\"GetBlock\", [], [\"C\"], [\"b0\"]], [\"Splitt\", [], [], []]], \"decisions\": []}",
             (unsigned long long)workload_hash("workloads/spmm.loom"));
    write_all(bad, doc);
    FMT(args, "validate %s " SPMM, bad);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 2, "%s%s", out, err);
    cr_assert(strstr(err, "$.insts[1][0]") != NULL, "%s", err);

    /* and show says the same */
    FMT(args, "show %s", bad);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 2, "%s%s", out, err);
    cr_assert(strstr(err, "loom show:") && strstr(err, "$.insts[1][0]"), "%s", err);
    remove_tree(dir);
}

Test(cli_trace, trace_of_another_workload_exits_2, .timeout = 60)
{
    char dir[64], path[1024], args[4096];
    valid_trace(dir, sizeof dir, path, sizeof path);
    FMT(args, "validate %s workloads/sddmm.loom --data M=data/cora_adj.mtx", path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 2, "%s%s", out, err);
    char want[32];
    FMT(want, "%016llx", (unsigned long long)workload_hash("workloads/sddmm.loom"));
    cr_assert(strstr(err, "hash") && strstr(err, want), "names the hashes: %s", err);
    FMT(want, "%016llx", (unsigned long long)workload_hash("workloads/spmm.loom"));
    cr_assert(strstr(err, want) != NULL, "names the trace's hash: %s", err);
    /* run checks it too */
    FMT(args, "run workloads/sddmm.loom --data M=data/cora_adj.mtx --trace %s", path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 2, "%s%s", out, err);
    cr_assert(strstr(err, "loom run:") && strstr(err, "hash"), "%s", err);
    remove_tree(dir);
}

/* ---- run --trace, show --------------------------------------------------- */

Test(cli_trace, run_trace_is_correct_and_reports_the_trace, .timeout = 180)
{
    char dir[64], path[1024], args[4096];
    valid_trace(dir, sizeof dir, path, sizeof path);
    FMT(args, "run " SPMM " --trace %s --json --min-time 0.01", path);
    int rc = run_loom(args, out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    cJSON *o = cJSON_Parse(out);
    cr_assert_not_null(o, "stdout is one JSON object: %s", out);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "correct")), "%s", out);
    cJSON *tr = cJSON_GetObjectItem(o, "trace");
    cr_assert(cJSON_IsString(tr), "%s", out);
    cr_assert_str_eq(tr->valuestring, path);
    cr_assert_eq(cJSON_GetObjectItem(o, "flops")->valuedouble, 2.0 * 10556 * 16);
    cJSON_Delete(o);

    /* the human report names the trace */
    FMT(args, "run " SPMM " --trace %s --min-time 0.01", path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 0, "%s%s", out, err);
    cr_assert(strstr(out, "kernel     trace ") && strstr(out, "correct    yes"), "%s", out);
    remove_tree(dir);
}

Test(cli_trace, show_prints_c_calls_with_decisions, .timeout = 60)
{
    char dir[64], path[1024], args[4096];
    valid_trace(dir, sizeof dir, path, sizeof path);
    FMT(args, "show %s", path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(out, "int b0 = loom_get_block(sch, \"C\");") != NULL, "%s", out);
    cr_assert(strstr(out, "/* decision: ") != NULL, "%s", out);
    /* with the workload: same text, checked against its hash */
    char *plain = strdup(out);
    FMT(args, "show %s --workload workloads/spmm.loom", path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(out, plain);
    free(plain);
    FMT(args, "show %s --workload workloads/sddmm.loom", path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "hash") != NULL, "%s", err);
    remove_tree(dir);
}

/* ---- help ------------------------------------------------------------------ */

Test(cli_trace, help_lists_every_command_and_flag)
{
    cr_assert_eq(run_loom("--help", out, sizeof out, err, sizeof err), 0);
    const char *cmds[] = {"run WORKLOAD", "show TRACE", "validate TRACE", "sample WORKLOAD"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        cr_assert(strstr(out, cmds[i]) != NULL, "loom --help lacks %s", cmds[i]);

    struct {
        const char *cmd;
        const char *flags[12];
    } h[] = {
        {"run --help", {"--trace", "--force", "--data", "--param", "--json", "--seed", "--serial", "--min-time",
                        "--time-limit", "--emit-c", "--print-lir", "exit codes"}},
        {"show --help", {"--workload", "--data", "--param", "--force", "--help", "exit codes"}},
        {"validate --help", {"--data", "--param", "--force", "--help", "exit codes"}},
        {"sample --help", {"--count", "--seed", "--out", "--valid-only", "--data", "--param", "--help", "exit codes"}},
    };
    for (size_t i = 0; i < sizeof h / sizeof *h; i++) {
        cr_assert_eq(run_loom(h[i].cmd, out, sizeof out, err, sizeof err), 0, "%s", h[i].cmd);
        for (int f = 0; f < 12 && h[i].flags[f]; f++)
            cr_assert(strstr(out, h[i].flags[f]) != NULL, "%s lacks %s", h[i].cmd, h[i].flags[f]);
    }
    /* an unknown option is named, exit 2 */
    cr_assert_eq(run_loom("sample workloads/spmm.loom --bogus", out, sizeof out, err, sizeof err), 2);
    cr_assert(strstr(err, "loom sample: unknown option '--bogus'") != NULL, "%s", err);
}
