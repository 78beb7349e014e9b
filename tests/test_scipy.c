/* loom's sparse algebra on real matrices against SciPy (issue 14): a third
 * computation, sharing nothing with loom, of `A + B`, `A - B`, `(A + B) x`
 * and `A .* B + D` (dense results), `A + B` and SpGEMM `A B` with csr results
 * (loom's assembled pattern and values against scipy.sparse's, at the
 * pattern's positions) for pairs of real matrices: Cora (data/cora_adj.mtx) with
 * the transpose of the directed Cora graph when ../shared/data has it (else
 * of itself), PubMed, and bcsstk13 (from ../shared/data; each skipped with
 * a message when absent), each also with a shifted copy of itself (its
 * transpose is itself when symmetric).  The default schedule is compiled,
 * run and checked against loom's reference; its outputs are then written as
 * raw float32 and tests/scipy_check.py recomputes them with scipy.sparse in
 * double precision.  Skipped when no python3 with SciPy is found (Debian:
 * python3-scipy, scripts/install-deps.sh). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../runtime/measure/pipeline.h"
#include "fixture.h"

/* The first of /usr/bin/python3 (Debian's, where python3-scipy installs)
 * and python3 on the PATH that imports scipy; NULL if none. */
static const char *python_with_scipy(void)
{
    static const char *const cand[] = {"/usr/bin/python3", "python3"};
    for (size_t k = 0; k < sizeof cand / sizeof *cand; k++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s -c 'import scipy.sparse, scipy.io' >/dev/null 2>&1", cand[k]);
        if (system(cmd) == 0)
            return cand[k];
    }
    return NULL;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void write_f32(const char *path, const float *v, int64_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(v, sizeof(float), (size_t)n, f), (size_t)n);
    fclose(f);
}

/* Run `workload` (data: NULL-terminated "T=FILE"), the default schedule,
 * checked against the reference; write output `out` (and dense input `x` if
 * given) and have SciPy recompute operation `op` on the matrix files. */
static void run_and_compare(const char *py, const char *dir, const char *workload, const char *const *data,
                            const char *out, const char *x, const char *op, const char *const *mats)
{
    fx_loaded L = fx_load(workload, NULL, data, NULL, 5);
    loom_error err;
    loom_error_clear(&err);
    loom_schedule *sch = calloc(1, sizeof *sch);
    cr_assert(sch);
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_default_schedule(sch, &err), LOOM_OK, "%s: %s", workload, err.msg);
    fx_run_checked(sch, L.ds, workload);
    free(sch);
    char rpath[512], xpath[512], cmd[4096];
    snprintf(rpath, sizeof rpath, "%s/result.f32", dir);
    int t = loom_program_find_tensor(L.prog, out);
    cr_assert(t >= 0);
    write_f32(rpath, L.ds->t[t].vals, L.ds->t[t].nnz);
    snprintf(xpath, sizeof xpath, "-");
    if (x) {
        int tx = loom_program_find_tensor(L.prog, x);
        snprintf(xpath, sizeof xpath, "%s/x.f32", dir);
        write_f32(xpath, L.ds->t[tx].vals, L.ds->t[tx].nnz);
    }
    int n = snprintf(cmd, sizeof cmd, "%s tests/scipy_check.py check %s %s %s", py, op, rpath, xpath);
    for (int k = 0; mats[k]; k++)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " %s", mats[k]);
    snprintf(cmd + n, sizeof cmd - (size_t)n, " 2>&1");
    FILE *p = popen(cmd, "r");
    cr_assert(p, "cannot run %s", cmd);
    char line[1024] = "";
    char all[4096] = "";
    while (fgets(line, sizeof line, p))
        strncat(all, line, sizeof all - strlen(all) - 1);
    int rc = pclose(p);
    cr_log_info("%s on %s: %s", workload, mats[0], all);
    cr_assert_eq(rc, 0, "%s on %s %s: SciPy disagrees: %s", workload, mats[0], mats[1], all);
    fx_unload(&L);
}

/* The union workloads on (M, P) where P is M's partner. */
static void pair(const char *py, const char *dir, const char *m, const char *p, int dense_ok)
{
    char a[600], b[600], d[600];
    snprintf(a, sizeof a, "A=%s", m);
    snprintf(b, sizeof b, "B=%s", p);
    snprintf(d, sizeof d, "D=%s", m);
    const char *data2[] = {a, b, NULL}, *data3[] = {a, b, d, NULL};
    const char *mats2[] = {m, p, NULL}, *mats3[] = {m, p, m, NULL};
    run_and_compare(py, dir, "workloads/spmv_sum.loom", data2, "y", "x", "spmv_sum", mats2);
    run_and_compare(py, dir, "workloads/spadd_csr.loom", data2, "C", NULL, "spadd_csr", mats2);
    run_and_compare(py, dir, "workloads/spgemm.loom", data2, "C", NULL, "spgemm", mats2);
    if (!dense_ok)
        return; /* a dense N x N result is too large */
    run_and_compare(py, dir, "workloads/spadd.loom", data2, "C", NULL, "spadd", mats2);
    run_and_compare(py, dir, "workloads/spsub.loom", data2, "C", NULL, "spsub", mats2);
    run_and_compare(py, dir, "workloads/spmixed.loom", data3, "C", NULL, "spmixed", mats3);
}

/* Derive the transpose and the shifted copy of `m` (or take `partner` as the
 * transpose's source when it exists) and check both pairs. */
static void matrix(const char *m, const char *partner, int dense_ok)
{
    const char *py = python_with_scipy();
    if (!py)
        cr_skip_test("no python3 with SciPy (Debian: apt-get install python3-scipy)");
    if (!exists(m))
        cr_skip_test("%s is absent (../shared/data not present): skipped", m);
    char dir[] = "/tmp/loom_scipy_XXXXXX";
    cr_assert(mkdtemp(dir));
    char cmd[2048], t[600], s[600];
    const char *src = partner && exists(partner) ? partner : m;
    snprintf(cmd, sizeof cmd, "%s tests/scipy_check.py derive %s %s", py, src, dir);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    if (src != m) { /* the shifted copy is of m itself */
        snprintf(cmd, sizeof cmd, "%s tests/scipy_check.py derive %s %s/m", py, m, dir);
        char sub[600];
        snprintf(sub, sizeof sub, "%s/m", dir);
        mkdir(sub, 0700);
        cr_assert_eq(system(cmd), 0, "%s failed", cmd);
        snprintf(s, sizeof s, "%s/m/s.mtx", dir);
    } else {
        snprintf(s, sizeof s, "%s/s.mtx", dir);
    }
    snprintf(t, sizeof t, "%s/t.mtx", dir);
    pair(py, dir, m, t, dense_ok);
    pair(py, dir, m, s, dense_ok);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(scipy, cora_and_transpose, .timeout = 600)
{
    matrix("data/cora_adj.mtx", "../shared/data/cora/cora_adj_directed.mtx", 1);
}

Test(scipy, pubmed, .timeout = 600)
{
    matrix("../shared/data/pubmed/pubmed_adj.mtx", NULL, 0);
}

Test(scipy, bcsstk13, .timeout = 600)
{
    matrix("../shared/data/suitesparse/bcsstk13.mtx", NULL, 1);
}
