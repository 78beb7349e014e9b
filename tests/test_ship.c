/* Shipping tuned kernels (issue 17, ship/ship.h): `loom replay --emit-lib`
 * writes NAME.c, NAME.h and libNAME.so; a C program (tests/ship/two_kernels.c)
 * links two of them and checks both against its own loops and that the
 * fixed sizes are enforced; a bad name is refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

/* Run a shell command; its exit status, output into out. */
static int sh(const char *cmd, char *out, size_t n)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert_not_null(p);
    size_t len = fread(out, 1, n - 1, p);
    out[len] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void tmpdir(char *dir, size_t n)
{
    snprintf(dir, n, "/tmp/loom-ship-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

/* A small simulated campaign, then its best record replayed as a library. */
static void tune_and_ship(const char *dir, const char *workload, const char *inputs, const char *name)
{
    char cmd[2048], out[8192];
    snprintf(cmd, sizeof cmd, "%s tune %s %s --trials 6 --batch 6 --target sim --remeasure 0 -q --db %s/db-%s",
             loom_bin(), workload, inputs, dir, name);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
    snprintf(cmd, sizeof cmd, "%s replay --db %s/db-%s %s %s --target sim --emit-lib %s --lib-dir %s", loom_bin(), dir,
             name, workload, inputs, name, dir);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
    cr_assert(strstr(out, "lib"), "%s", out);
    const char *ext[] = {".c", ".h"};
    for (int k = 0; k < 2; k++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/%s%s", dir, name, ext[k]);
        cr_assert_eq(access(p, R_OK), 0, "%s missing", p);
    }
    char so[1200];
    snprintf(so, sizeof so, "%s/lib%s.so", dir, name);
    cr_assert_eq(access(so, R_OK), 0, "%s missing", so);
}

Test(ship, a_program_links_two_shipped_kernels, .timeout = 300)
{
    char dir[64], cmd[4096], out[8192];
    tmpdir(dir, sizeof dir);
    tune_and_ship(dir, "workloads/spmm.loom", "--data A=data/cora500_adj.mtx --param F=16", "spmm_t");
    tune_and_ship(dir, "workloads/sddmm.loom", "--data M=data/cora500_adj.mtx --param D=8", "sddmm_t");
    /* the header says which sizes are fixed and documents the arrays */
    char h[1200];
    snprintf(h, sizeof h, "%s/spmm_t.h", dir);
    FILE *f = fopen(h, "r");
    cr_assert_not_null(f);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    cr_assert(strstr(text, "F = 16"), "%s", text);
    cr_assert(strstr(text, "A_pos1: int32[501]"), "%s", text);
    cr_assert(strstr(text, "int spmm_t(int64_t F, int64_t N, int64_t K, const int32_t *A_pos1"), "%s", text);
    cr_assert(strstr(text, "OpenMP"), "%s", text);
    /* only the entry points are exported: both libraries define a kernel and its version */
    snprintf(cmd, sizeof cmd, "cc -std=c11 -O1 -Wall -Werror -I%s tests/ship/two_kernels.c -o %s/two -L%s -lspmm_t "
             "-lsddmm_t -Wl,-rpath,%s -lm", dir, dir, dir, dir);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s\n%s", cmd, out);
    snprintf(cmd, sizeof cmd, "%s/two", dir);
    cr_assert_eq(sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "OK"), "%s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sh(cmd, out, sizeof out);
}

Test(ship, a_library_name_must_be_a_c_identifier)
{
    char out[4096], cmd[1024];
    snprintf(cmd, sizeof cmd, "%s run workloads/spmv.loom --data A=data/cora500_adj.mtx --emit-lib 2bad --lib-dir /tmp",
             loom_bin());
    cr_assert_eq(sh(cmd, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "C identifier"), "%s", out);
    snprintf(cmd, sizeof cmd, "%s run workloads/spmv.loom --data A=data/cora500_adj.mtx --emit-lib ok --lib-dir /nonexistent",
             loom_bin());
    cr_assert_eq(sh(cmd, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "not a directory"), "%s", out);
}
