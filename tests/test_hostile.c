/* Hostile sizes (issue 14): a Matrix Market header claiming 2^31 rows or
 * 10^12 entries, a 10^8 x 10^8 header with one entry, a size line that
 * overstates nnz, files too large to read whole, --param 0 / -1 / huge.
 * Each runs `loom run` in a child whose address space is capped at 256 MiB
 * (not under AddressSanitizer, whose shadow memory needs terabytes of
 * address space) and CPU time at 20 s: it must exit 2 with a message that
 * names the file or flag and says what limit it broke -- not fail an
 * allocation ("cannot allocate"), not be killed. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

static char errtext[1 << 14];

/* Run loom with argv (NULL-terminated, without the program) under the caps;
 * stderr into errtext; returns the exit code (-signal when killed). */
static int run_capped(const char *const *args)
{
    char errfile[] = "/tmp/loom-hostile-err-XXXXXX";
    int fd = mkstemp(errfile);
    cr_assert_geq(fd, 0);
    const char *argv[32] = {loom_bin()};
    int n = 1;
    for (; args[n - 1] && n < 31; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
#if !defined(__SANITIZE_ADDRESS__)
        struct rlimit as = {(rlim_t)256 << 20, (rlim_t)256 << 20};
        setrlimit(RLIMIT_AS, &as);
#endif
        struct rlimit cpu = {20, 20};
        setrlimit(RLIMIT_CPU, &cpu);
        dup2(fd, 2);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    lseek(fd, 0, SEEK_SET);
    ssize_t m = read(fd, errtext, sizeof errtext - 1);
    errtext[m > 0 ? m : 0] = '\0';
    close(fd);
    unlink(errfile);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

static void write_file(char *path, const char *text)
{
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* `loom run spmm.loom --data A=FILE` on a file with `text`: exit 2, the
 * message names the file and contains `what`. */
static void expect_mtx_refused(const char *text, const char *what)
{
    char path[] = "/tmp/loom-hostile-XXXXXX";
    write_file(path, text);
    char data[64];
    snprintf(data, sizeof data, "A=%s", path);
    const char *args[] = {"run", "workloads/spmm.loom", "--data", data, NULL};
    int rc = run_capped(args);
    unlink(path);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, errtext);
    cr_assert(strstr(errtext, path) != NULL, "message does not name %s: %s", path, errtext);
    cr_assert(strstr(errtext, what) != NULL, "message lacks '%s': %s", what, errtext);
    cr_assert(strstr(errtext, "cannot allocate") == NULL, "an allocation was tried: %s", errtext);
}

Test(hostile, header_claiming_2_31_rows)
{
    expect_mtx_refused("%%MatrixMarket matrix coordinate pattern general\n2147483648 10 1\n1 1\n",
                       "does not fit int32");
}

Test(hostile, header_claiming_1e12_entries)
{
    expect_mtx_refused("%%MatrixMarket matrix coordinate real general\n10 10 1000000000000\n1 1 1\n",
                       "does not fit int32");
}

Test(hostile, size_line_overstating_nnz)
{
    expect_mtx_refused("%%MatrixMarket matrix coordinate real general\n10 10 2000000000\n1 1 1\n",
                       "an entry takes at least 4 bytes");
}

Test(hostile, hypersparse_header_csr)
{
    /* 10^8 x 10^8 with one entry: a csr row array would take 400 MB */
    expect_mtx_refused("%%MatrixMarket matrix coordinate pattern general\n100000000 100000000 1\n1 1\n",
                       "position array");
}

Test(hostile, hypersparse_header_dense_operand)
{
    /* as dcsr the matrix itself is small, but B (K x F) would be 25.6 GB */
    char wl[] = "/tmp/loom-hostile-wl-XXXXXX";
    write_file(wl, "param F = 64\ntensor A(N, K) dcsr\ntensor B(K, F) dense\n"
                   "tensor C(N, F) dense output\nC(i, f) += A(i, k) * B(k, f)\n");
    char mtx[] = "/tmp/loom-hostile-XXXXXX";
    write_file(mtx, "%%MatrixMarket matrix coordinate pattern general\n100000000 100000000 1\n1 1\n");
    char data[64];
    snprintf(data, sizeof data, "A=%s", mtx);
    const char *args[] = {"run", wl, "--data", data, NULL};
    int rc = run_capped(args);
    unlink(wl);
    unlink(mtx);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, errtext);
    cr_assert(strstr(errtext, "the data set needs") != NULL, "%s", errtext);
    cr_assert(strstr(errtext, mtx) != NULL, "the size's origin names %s: %s", mtx, errtext);
}

Test(hostile, matrix_file_over_the_cap_is_not_read)
{
    /* a 3 GB sparse file: refused from its size before a byte is read */
    char path[] = "/tmp/loom-hostile-big-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)3 << 30), 0);
    close(fd);
    char data[64];
    snprintf(data, sizeof data, "A=%s", path);
    const char *args[] = {"run", "workloads/spmm.loom", "--data", data, NULL};
    int rc = run_capped(args);
    unlink(path);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, errtext);
    cr_assert(strstr(errtext, path) && strstr(errtext, "limit on Matrix Market files"), "%s", errtext);
}

Test(hostile, trace_file_over_the_cap_is_not_read)
{
    char path[] = "/tmp/loom-hostile-big-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)3 << 30), 0);
    close(fd);
    const char *args[] = {"show", path, NULL};
    int rc = run_capped(args);
    unlink(path);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, errtext);
    cr_assert(strstr(errtext, path) && strstr(errtext, "limit on trace files"), "%s", errtext);
}

Test(hostile, target_file_over_the_cap_is_not_read)
{
    /* a 2 MiB file named as a target: refused from its size, naming it */
    char path[] = "/tmp/loom-hostile-target-XXXXXX.json";
    int fd = mkstemps(path, 5);
    char simpath[64];
    snprintf(simpath, sizeof simpath, "sim:%s", path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)2 << 20), 0);
    close(fd);
    const char *args[] = {"run", "workloads/spmm.loom", "--data", "A=data/cora_adj.mtx", "--param", "F=4",
                          "--target", simpath, NULL};
    int rc = run_capped(args);
    unlink(path);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, errtext);
    cr_assert(strstr(errtext, path) && strstr(errtext, "limit on target files"), "%s", errtext);
}

/* `loom run spmm.loom --data A=cora --param F=value`: exit 2 naming --param
 * and F, and containing `what`. */
static void expect_param_refused(const char *value, const char *what)
{
    char param[64];
    snprintf(param, sizeof param, "F=%s", value);
    const char *args[] = {"run", "workloads/spmm.loom", "--data", "A=data/cora_adj.mtx", "--param",
                          param, NULL};
    int rc = run_capped(args);
    cr_assert_eq(rc, 2, "--param %s: exit %d: %s", param, rc, errtext);
    cr_assert(strstr(errtext, "--param") && strstr(errtext, "F"), "names the flag: %s", errtext);
    cr_assert(strstr(errtext, what) != NULL, "--param %s: lacks '%s': %s", param, what, errtext);
    cr_assert(strstr(errtext, "cannot allocate") == NULL, "an allocation was tried: %s", errtext);
}

Test(hostile, param_zero_negative_and_huge)
{
    expect_param_refused("0", "positive integer");
    expect_param_refused("-1", "positive integer");
    expect_param_refused("99999999999999999999", "positive integer");
    expect_param_refused("3000000000", "int32");
    /* fits int32, but B and C would take 1.1 TB each: over the data limit
     * (half of the 256 MiB address space here, half the RAM without a cap) */
    expect_param_refused("100000000", "the data set needs");
}
