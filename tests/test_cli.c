/* The `loom` command as a user runs it: help, exit codes, JSON output,
 * error messages that name the file and line. */
#include <cjson/cJSON.h>
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

/* Run `loom ARGS`, capture stdout and stderr; return the exit code. */
static int run_loom(const char *args, char *out, size_t nout, char *errbuf, size_t nerr)
{
    char cmd[2048];
    char errfile[] = "/tmp/loom-cli-err-XXXXXX";
    int fd = mkstemp(errfile);
    cr_assert_geq(fd, 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s %s 2>%s", loom_bin(), args, errfile);
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

Test(cli, help_documents_every_run_flag)
{
    cr_assert_eq(run_loom("--help", out, sizeof out, err, sizeof err), 0);
    cr_assert(strstr(out, "run WORKLOAD") != NULL, "%s", out);
    cr_assert_eq(run_loom("run --help", out, sizeof out, err, sizeof err), 0);
    const char *flags[] = {"--data", "--param", "--json", "--seed", "--serial", "--min-time", "--time-limit",
                           "--emit-c", "--print-lir", "exit codes"};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        cr_assert(strstr(out, flags[i]) != NULL, "run --help lacks %s", flags[i]);
}

Test(cli, unknown_command_and_option_exit_2)
{
    cr_assert_eq(run_loom("frobnicate", out, sizeof out, err, sizeof err), 2);
    cr_assert(strstr(err, "unknown command 'frobnicate'") != NULL, "%s", err);
    cr_assert_eq(run_loom("run workloads/spmv.loom --bogus", out, sizeof out, err, sizeof err), 2);
    cr_assert(strstr(err, "unknown option '--bogus'") != NULL, "%s", err);
    cr_assert_eq(run_loom("run workloads/spmm.loom --param F=abc", out, sizeof out, err, sizeof err), 2);
    cr_assert(strstr(err, "positive integer") != NULL, "%s", err);
}

Test(cli, malformed_workload_names_file_and_line)
{
    char path[] = "/tmp/loom-cli-bad-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char *text = "tensor A(N, K) csr\ntensor y(N) dense output\ny(i) = A(i, k) * \n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "run %s --data A=data/cora_adj.mtx", path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 2);
    char where[128];
    snprintf(where, sizeof where, "%s:3:", path);
    cr_assert(strstr(err, where) != NULL, "error names file and line 3: %s", err);
    unlink(path);
}

Test(cli, missing_data_and_bad_matrix_exit_2)
{
    cr_assert_eq(run_loom("run workloads/spmm.loom", out, sizeof out, err, sizeof err), 2);
    cr_assert(strstr(err, "--data A=") != NULL, "tells how to give data: %s", err);
    cr_assert_eq(run_loom("run workloads/spmm.loom --data A=tests/data/bad_index_zero.mtx", out, sizeof out, err,
                          sizeof err),
                 2);
    cr_assert(strstr(err, "bad_index_zero.mtx:") != NULL, "names the matrix file: %s", err);
}

Test(cli, json_run_is_correct_and_complete, .timeout = 120)
{
    int rc = run_loom("run workloads/spmm.loom --data A=data/cora_adj.mtx --param F=16 --json --min-time 0.01",
                      out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d, stderr: %s", rc, err);
    cJSON *o = cJSON_Parse(out);
    cr_assert_not_null(o, "stdout is one JSON object: %s", out);
    const char *keys[] = {"workload", "latency_s", "flops", "gflops", "correct", "max_rel_err", "status"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        cr_assert_not_null(cJSON_GetObjectItem(o, keys[i]), "missing %s", keys[i]);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "correct")));
    cr_assert_eq(cJSON_GetObjectItem(o, "flops")->valuedouble, 2.0 * 10556 * 16);
    double lat = cJSON_GetObjectItem(o, "latency_s")->valuedouble;
    double gf = cJSON_GetObjectItem(o, "gflops")->valuedouble;
    cr_assert_gt(lat, 0.0);
    cr_assert_float_eq(gf, 2.0 * 10556 * 16 / lat / 1e9, 1e-6 * gf);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "sizes"), "F")->valuedouble, 16.0);
    cJSON_Delete(o);
}

Test(cli, emit_c_writes_a_standalone_kernel, .timeout = 120)
{
    char path[] = "/tmp/loom-cli-kernel-XXXXXX.c";
    int fd = mkstemps(path, 2);
    cr_assert_geq(fd, 0);
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "run workloads/sddmm.loom --data M=data/cora_adj.mtx --min-time 0.01 --emit-c %s", path);
    cr_assert_eq(run_loom(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    /* it compiles on its own, strictly */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cc -std=c11 -fopenmp -c -o /dev/null %s 2>&1", path);
    cr_assert_eq(system(cmd), 0, "generated C does not compile standalone");
    unlink(path);
}
