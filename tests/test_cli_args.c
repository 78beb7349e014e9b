/* The option parser the commands share (cli/args.c, getopt_long; issue 15):
 * every command names an unknown or abbreviated option and a missing value
 * the same way, takes --name=VALUE as well as --name VALUE, and options in
 * any order around the positional arguments.  Also issue 14's
 * "--time-limit 0.001 prints 0.0 s". */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

/* Run `loom ARGS`, stdout and stderr into *out (malloc'd); the exit code. */
static int run(const char *args, char **out)
{
    char tmpl[] = "/tmp/loom-test-cliargs-XXXXXX";
    int fd = mkstemp(tmpl);
    cr_assert_geq(fd, 0);
    close(fd);
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>&1", loom_bin(), args, tmpl);
    int rc = system(cmd);
    FILE *f = fopen(tmpl, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)n + 1);
    cr_assert_eq(fread(*out, 1, (size_t)n, f), (size_t)n);
    (*out)[n] = 0;
    fclose(f);
    unlink(tmpl);
    cr_assert(WIFEXITED(rc), "loom %s did not exit", args);
    return WEXITSTATUS(rc);
}

static const char *const COMMANDS[] = {"run",  "show",   "validate", "sample",   "db",
                                       "space", "tune", "replay", "navigate", "calibrate"};
#define NCMD (sizeof COMMANDS / sizeof *COMMANDS)

Test(cli_args, every_command_names_bad_options_the_same_way)
{
    for (size_t c = 0; c < NCMD; c++) {
        const char *cmd = COMMANDS[c];
        char args[300], want[300], *out;
        snprintf(args, sizeof args, "%s --frobnicate", cmd);
        cr_assert_eq(run(args, &out), 2, "loom %s --frobnicate", cmd);
        snprintf(want, sizeof want, "loom %s: unknown option '--frobnicate' (see loom %s --help)", cmd, cmd);
        cr_assert(strstr(out, want), "loom %s: %s", cmd, out);
        free(out);
        /* getopt_long would take "--he" for --help; loom takes exact names */
        snprintf(args, sizeof args, "%s --he", cmd);
        cr_assert_eq(run(args, &out), 2, "loom %s --he", cmd);
        snprintf(want, sizeof want, "loom %s: unknown option '--he'", cmd);
        cr_assert(strstr(out, want), "loom %s: %s", cmd, out);
        free(out);
        /* a value option at the end */
        snprintf(args, sizeof args, "%s x --data", cmd);
        int rc = run(args, &out);
        if (strcmp(cmd, "calibrate")) { /* calibrate takes no --data (db does since --fidelity) */
            cr_assert_eq(rc, 2);
            snprintf(want, sizeof want, "loom %s: --data needs a value (see loom %s --help)", cmd, cmd);
            cr_assert(strstr(out, want), "loom %s: %s", cmd, out);
        } else {
            cr_assert_eq(rc, 2);
            cr_assert(strstr(out, "unknown option '--data'"), "%s", out);
        }
        free(out);
        /* help, by either name, anywhere */
        snprintf(args, sizeof args, "%s -h", cmd);
        cr_assert_eq(run(args, &out), 0);
        cr_assert(strstr(out, "usage: loom"), "loom %s -h: %s", cmd, out);
        free(out);
        snprintf(args, sizeof args, "%s x --help", cmd);
        cr_assert_eq(run(args, &out), 0);
        cr_assert(strstr(out, "usage: loom"), "loom %s x --help: %s", cmd, out);
        free(out);
        /* a cluster of short options is not one */
        snprintf(args, sizeof args, "%s -hq", cmd);
        cr_assert_eq(run(args, &out), 2);
        cr_assert(strstr(out, "unknown option '-hq'"), "loom %s -hq: %s", cmd, out);
        free(out);
    }
}

Test(cli_args, values_attached_and_options_in_any_order)
{
    char *a, *b, *c;
    cr_assert_eq(run("space workloads/spmm.loom --data A=data/cora500_adj.mtx --seed 3 --draws 2", &a), 0);
    cr_assert_eq(run("space --seed=3 --draws=2 --data=A=data/cora500_adj.mtx workloads/spmm.loom", &b), 0);
    cr_assert_eq(run("space --draws 2 -- workloads/spmm.loom --seed 3 --data A=data/cora500_adj.mtx", &c), 2,
                 "after --, '--seed' is a second workload");
    cr_assert_str_eq(a, b, "the same design space whatever the spelling and order");
    cr_assert(strstr(c, "more than one workload ('workloads/spmm.loom' and '--seed')"), "%s", c);
    free(a), free(b), free(c);
    /* the command's own checks still see the flag's name */
    cr_assert_eq(run("tune workloads/spmm.loom --trials=0 --db /tmp/loom-never-made", &a), 2);
    cr_assert(strstr(a, "loom tune: --trials expects 1..10000000, got '0'"), "%s", a);
    free(a);
    cr_assert_eq(run("tune workloads/spmm.loom --generations 1001 --db /tmp/loom-never-made", &a), 2);
    cr_assert(strstr(a, "loom tune: --generations expects 0..1000, got '1001'"), "%s", a);
    free(a);
    /* the evolutionary strategy's local-exploration flags */
    const char *bad[][2] = {
        {"--local-share 1.5", "loom tune: --local-share expects a share in [0, 1], got '1.5'"},
        {"--local-share x", "loom tune: --local-share expects a share in [0, 1], got 'x'"},
        {"--local-crossover -0.1", "loom tune: --local-crossover expects a share in [0, 1], got '-0.1'"},
        {"--local-parents 0", "loom tune: --local-parents expects 1..1000, got '0'"},
        {"--local-pool 65", "loom tune: --local-pool expects 1..64, got '65'"},
        {"--local-model 2", "loom tune: --local-model expects 0 or 1, got '2'"},
        {"--local-share-cold 2", "loom tune: --local-share-cold expects a share in [0, 1], got '2'"},
        {"--mutate-by chance", "loom tune: --mutate-by expects 'instruction' or 'kind', got 'chance'"},
        {"--pretrain-budget -1", "loom tune: --pretrain-budget expects seconds >= 0 (0: no limit), got '-1'"},
        {"--pretrain-budget 2s", "loom tune: --pretrain-budget expects seconds >= 0 (0: no limit), got '2s'"},
        {"--remeasure-budget -1", "loom tune: --remeasure-budget expects seconds >= 0 (0: no limit), got '-1'"},
        {"--remeasure-budget 1m", "loom tune: --remeasure-budget expects seconds >= 0 (0: no limit), got '1m'"},
    };
    for (int k = 0; k < (int)(sizeof bad / sizeof *bad); k++) {
        char args[300];
        snprintf(args, sizeof args, "tune workloads/spmm.loom --trials 4 %s --db /tmp/loom-never-made", bad[k][0]);
        cr_assert_eq(run(args, &a), 2, "%s", args);
        cr_assert(strstr(a, bad[k][1]), "%s: %s", args, a);
        free(a);
    }
    cr_assert_eq(run("tune workloads/spmm.loom -q --quiet --json=1 --db /tmp/loom-never-made", &a), 2);
    cr_assert(strstr(a, "unknown option '--json=1'"), "a flag without a value takes none: %s", a);
    free(a);
}

Test(cli_args, a_short_time_limit_is_printed_as_given, .timeout = 300)
{
    char tmpl[] = "/tmp/loom-test-tl-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    char args[600], *out;
    snprintf(args, sizeof args,
             "tune workloads/spmm.loom --data A=data/cora_adj.mtx --trials 2 --batch 2 --population 8 --threads 1 "
             "--time-limit 0.001 --db %s/db -q",
             dir);
    run(args, &out);
    free(out);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "grep -q 'the time limit of 0.001 s' %s/db/records.jsonl", dir);
    cr_assert_eq(system(cmd), 0, "a timed-out record names the limit it exceeded (not '0.0 s')");
    snprintf(cmd, sizeof cmd, "grep -q 'the time limit of 0.0 s' %s/db/records.jsonl", dir);
    cr_assert_neq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* One message per bad numeric value (issue 33: `--trials -1` printed "expects
 * a non-negative integer" and then "expects 1..10000000"): exactly one
 * line, exit 2, naming the flag and its bounds. */
Test(cli_args, a_bad_number_gets_one_message)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"tune workloads/spmm.loom --db /nonexistent/x --trials -1", "--trials expects 1..10000000, got '-1'"},
        {"tune workloads/spmm.loom --db /nonexistent/x --trials 0", "--trials expects 1..10000000, got '0'"},
        {"tune workloads/spmm.loom --db /nonexistent/x --trials 2.5", "--trials expects 1..10000000, got '2.5'"},
        {"tune workloads/spmm.loom --db /nonexistent/x --trials 5 --batch -3", "--batch expects 1..100000"},
        {"tune workloads/spmm.loom --db /nonexistent/x --trials 5 --generations x", "--generations expects 0..1000"},
        {"tune workloads/spmm.loom --db /nonexistent/x --trials 5 --remeasure -1", "--remeasure expects 0.."},
        {"tune workloads/spmm.loom --db /nonexistent/x --trials 5 --pretrain -1", "--pretrain expects 0..100000 "
                                                                                 "schedules"},
        {"tune workloads/spmm.loom --db /nonexistent/x --trials 5 --local-parents 0", "--local-parents expects 1..1000"},
        {"tune workloads/spmm.loom --db /nonexistent/x --trials 5 --local-pool -1", "--local-pool expects 1..64"},
        {"sample workloads/spmm.loom --out /nonexistent/x --count -1", "--count expects 1..100000"},
        {"space workloads/spmm.loom --draws -1", "--draws expects 1..10000"},
        {"run workloads/spmm.loom --seed -1", "--seed expects a non-negative integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *out;
        int rc = run(cases[i].args, &out);
        cr_assert_eq(rc, 2, "loom %s: exit %d: %s", cases[i].args, rc, out);
        cr_assert_not_null(strstr(out, cases[i].want), "loom %s: no '%s' in: %s", cases[i].args, cases[i].want, out);
        int lines = 0;
        for (const char *p = out; *p; p++)
            lines += *p == '\n';
        cr_assert_eq(lines, 1, "loom %s printed %d lines: %s", cases[i].args, lines, out);
        free(out);
    }
}
