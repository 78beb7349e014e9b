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

#include "../search/database/database.h"

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

/* The y tick labels parsed from the script's `set ytics ("L" V, ...)` into
 * v[]; returns how many. */
static int ytics(const char *gp, double *v, char lab[][32], int max)
{
    const char *p = strstr(gp, "set ytics (");
    cr_assert_not_null(p, "no explicit y ticks:\n%s", gp);
    p += strlen("set ytics (");
    int n = 0;
    while (*p == '"') {
        cr_assert_lt(n, max);
        int used = 0;
        cr_assert_eq(sscanf(p, "\"%31[^\"]\" %lf%n", lab[n], &v[n], &used), 2, "bad tick at %.40s", p);
        n++;
        p += used;
        if (*p == ',')
            p += 2;
    }
    cr_assert_eq(*p, ')', "unterminated tick list at %.40s", p);
    return n;
}

/* Issue 27: the log axis was labelled only at 10 and 100, the title counted
 * 22 records where 16 trials were drawn (the re-measurement records), and
 * the target was only a hash.  Now: ticks at 1, 2 and 5 times powers of ten
 * that bracket every trial and the default line (and the SVG prints them),
 * the title's count is the number of trials in $trials and $failed, and the
 * simulated target is named. */
Test(plot, ticks_count_and_target_name, .timeout = 300)
{
    if (sh("command -v gnuplot > /dev/null 2>&1") != 0)
        cr_skip_test("gnuplot is not installed (apt-get install gnuplot-nox)");
    char dir[] = "/tmp/loom-plot2-XXXXXX", cmd[4096];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "%s tune workloads/spmm.loom --data A=data/cora500_adj.mtx --param F=16 --trials 12 --batch 6 "
             "--target sim:spr-2c --remeasure 2 -q --db %s/db > %s/tune.log 2>&1 && "
             "%s db %s/db --plot %s/conv.svg > %s/plot.log 2>&1",
             loom_bin(), dir, dir, loom_bin(), dir, dir, dir);
    cr_assert_eq(sh(cmd), 0, "the campaign or the plot failed: see %s/tune.log, plot.log", dir);
    loom_db *db = NULL;
    loom_error err;
    snprintf(cmd, sizeof cmd, "%s/db", dir);
    cr_assert_eq(loom_db_open_readonly(cmd, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    int n = loom_db_count(db), trials = 0;
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < n; i++) {
        const loom_record *r = loom_db_record(db, i);
        if (!r->nsamples)
            trials++;
        if (r->status == LOOM_OK) { /* trials and the re-measured default line */
            lo = fmin(lo, r->latency_s * 1e6);
            hi = fmax(hi, r->latency_s * 1e6);
        }
    }
    loom_db_close(db);
    cr_assert_eq(trials, 12);
    cr_assert_gt(n, trials, "expected re-measurement records besides the trials");
    snprintf(cmd, sizeof cmd, "%s/conv.gp", dir);
    const char *gp = slurp(cmd);
    static double x[64], y[64], fx[8], fy[8];
    int drawn = block(gp, "$trials", x, y, NULL, 64) + block(gp, "$failed", fx, fy, NULL, 8);
    cr_assert_eq(drawn, trials);
    char want[256];
    snprintf(want, sizeof want, ": %d trials; %d re-measurement records not drawn\"", drawn, n - trials);
    cr_assert(strstr(gp, want), "the title does not say '%s':\n%s", want, gp);
    cr_assert(strstr(gp, "set title \"spmm on simulated spr-2c (sim:spr-2c:"), "the target is not named:\n%s", gp);

    double v[64];
    static char lab[64][32];
    int nt = ytics(gp, v, lab, 64);
    cr_assert_geq(nt, 2);
    cr_assert_leq(v[0], lo * (1 + 1e-9), "the lowest tick %g is above the fastest latency %g", v[0], lo);
    cr_assert_geq(v[nt - 1], hi * (1 - 1e-9), "the highest tick %g is below the slowest latency %g", v[nt - 1], hi);
    for (int i = 0; i < nt; i++) {
        double m = v[i] / pow(10, floor(log10(v[i]) + 1e-9));
        cr_assert(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9, "tick %g is not 1, 2 or 5 x 10^k",
                  v[i]);
        if (i) {
            double step = v[i] / v[i - 1];
            cr_assert(fabs(step - 2) < 1e-9 || fabs(step - 2.5) < 1e-9, "ticks %g, %g skip a 1-2-5 step", v[i - 1],
                      v[i]);
        }
        cr_assert_float_eq(strtod(lab[i], NULL), v[i], 1e-9 * v[i], "label %s of tick %g", lab[i], v[i]);
    }
    snprintf(cmd, sizeof cmd, "%s/conv.svg", dir);
    const char *svg = slurp(cmd);
    for (int i = 0; i < nt; i++) {
        char t[64];
        snprintf(t, sizeof t, ">%.31s</tspan>", lab[i]);
        cr_assert(strstr(svg, t), "the SVG does not print tick %s", lab[i]);
    }
    cr_assert(strstr(svg, "simulated spr-2c"), "the SVG's title does not name the target");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sh(cmd);
}
