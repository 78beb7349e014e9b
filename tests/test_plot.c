/* `loom db DIR --plot FILE` (issue 17): the picture gnuplot draws is given
 * exactly the campaign's series -- every trial's latency, the running best,
 * the failures at their trial numbers, the default schedule -- checked in
 * the script's data blocks against the records read through the database
 * API, and the SVG carries them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../search/database.h"

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s missing", path);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    return text;
}

/* The lines of data block `name` ("$trials") parsed as up to 3 numbers
 * each into x[], y[]; returns how many lines. */
static int block(const char *gp, const char *name, double *x, double *y, char st[][32], int max)
{
    char head[64];
    snprintf(head, sizeof head, "%s << EOD\n", name);
    const char *p = strstr(gp, head);
    cr_assert_not_null(p, "no data block %s", name);
    p += strlen(head);
    int n = 0;
    while (strncmp(p, "EOD", 3)) {
        if (*p != '#') {
            cr_assert_lt(n, max);
            char s[32] = "";
            cr_assert_geq(sscanf(p, "%lf %lf %31s", &x[n], &y[n], s), 2, "bad line in %s: %.40s", name, p);
            if (st)
                snprintf(st[n], 32, "%s", s);
            n++;
        }
        p = strchr(p, '\n');
        cr_assert_not_null(p);
        p++;
    }
    return n;
}

Test(plot, the_plot_is_given_the_campaigns_series, .timeout = 300)
{
    if (sh("command -v gnuplot > /dev/null 2>&1") != 0)
        cr_skip_test("gnuplot is not installed (apt-get install gnuplot-nox)");
    char dir[] = "/tmp/loom-plot-XXXXXX", cmd[4096];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "%s tune workloads/spmm.loom --data A=data/cora500_adj.mtx --param F=16 --trials 10 --batch 5 "
             "--target sim --remeasure 0 -q --db %s/db > %s/tune.log 2>&1",
             loom_bin(), dir, dir);
    cr_assert_eq(sh(cmd), 0, "the campaign failed: see %s/tune.log", dir);
    /* a failed trial at the end: the last record again, timed out */
    snprintf(cmd, sizeof cmd,
             "tail -n 1 %s/db/records.jsonl | sed -e 's/\"status\":\"ok\"/\"status\":\"timeout\"/' "
             "-e 's/\"latency_s\":[-0-9.e+]*/\"latency_s\":null/' -e 's/\"message\":\"\"/\"message\":\"killed\"/' "
             ">> %s/db/records.jsonl",
             dir, dir);
    cr_assert_eq(sh(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s db %s/db --plot %s/conv.svg > %s/plot.log 2>&1", loom_bin(), dir, dir, dir);
    cr_assert_eq(sh(cmd), 0, "loom db --plot failed: see %s/plot.log", dir);

    loom_db *db = NULL;
    loom_error err;
    snprintf(cmd, sizeof cmd, "%s/db", dir);
    cr_assert_eq(loom_db_open_readonly(cmd, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    int n = loom_db_count(db);
    cr_assert_eq(n, 11, "expected 10 trials and the failed one, got %d records", n);
    snprintf(cmd, sizeof cmd, "%s/conv.gp", dir);
    const char *gp = slurp(cmd);
    static double x[64], y[64], bx[64], by[64], fx[8], fy[8];
    static char st[8][32];
    int nt = block(gp, "$trials", x, y, NULL, 64);
    int nb = block(gp, "$best", bx, by, NULL, 64);
    int nf = block(gp, "$failed", fx, fy, st, 8);
    cr_assert_eq(nt, 10);
    cr_assert_eq(nb, 11);
    cr_assert_eq(nf, 1);
    double best = INFINITY;
    for (int i = 0; i < 10; i++) {
        const loom_record *r = loom_db_record(db, i);
        cr_assert_eq((int)x[i], i + 1);
        cr_assert_float_eq(y[i], r->latency_s * 1e6, 1e-6 * r->latency_s * 1e6, "trial %d", i + 1);
        best = fmin(best, r->latency_s);
        cr_assert_float_eq(by[i], best * 1e6, 1e-6 * best * 1e6, "best so far at %d", i + 1);
    }
    cr_assert_float_eq(by[10], best * 1e6, 1e-6 * best * 1e6, "the failure does not change the best");
    cr_assert_eq((int)fx[0], 11);
    cr_assert_str_eq(st[0], "timeout");
    cr_assert(strstr(gp, "title 'default schedule ("), "no default schedule line:\n%s", gp);
    cr_assert(strstr(gp, "title 'failed (1)'"), "%s", gp);
    loom_db_close(db);
    snprintf(cmd, sizeof cmd, "%s/conv.svg", dir);
    const char *svg = slurp(cmd);
    cr_assert(strstr(svg, "<svg"), "not an SVG");
    cr_assert(strstr(svg, "best so far") && strstr(svg, "trial latency") && strstr(svg, "failed (1)"),
              "the SVG lacks the series' titles");
    /* a name gnuplot cannot draw into is refused */
    snprintf(cmd, sizeof cmd, "%s db %s/db --plot %s/conv.pdf 2> /dev/null", loom_bin(), dir, dir);
    cr_assert_eq(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sh(cmd);
}
