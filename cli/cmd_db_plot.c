/* loom: `loom db DIR --plot FILE.png|svg` -- a campaign's convergence drawn
 * by gnuplot (Debian's gnuplot-nox): the latency of every trial, the best so
 * far, the default schedule as a line and the failures marked (issue 17).
 * The gnuplot script, with the data in inline data blocks, is kept beside
 * the picture (FILE.gp) so the figure can be restyled and its data read.
 * Issue 27: the log y axis is labelled in 1-2-5 steps (gnuplot's default
 * labels only the powers of ten), the title counts the trials drawn (not the
 * re-measurement records, which only give the default line) and names the
 * target (the simulated target's name, or this machine's CPU model). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../search/database/database.h"
#include "../ship/replay.h"
#include "cli.h"

/* The default schedule's latency: the median of its last re-measurement,
 * else the last "baselines:" line of DIR/campaign.log after a campaign line
 * of this workload and target; NAN when unknown. */
static double default_latency(const char *dir, const loom_record *const *v, int n, uint64_t whash, const char *tfp)
{
    for (int i = n - 1; i >= 0; i--)
        if (v[i]->nsamples && v[i]->is_default && v[i]->status == LOOM_OK)
            return v[i]->latency_s;
    char path[4200], line[2048], key[64];
    snprintf(path, sizeof path, "%s/campaign.log", dir);
    snprintf(key, sizeof key, "(%016llx)", (unsigned long long)whash);
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    double d = NAN;
    int ours = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, " campaign: workload ") || strstr(line, " re-measurement: workload "))
            ours = strstr(line, key) && strstr(line, tfp);
        const char *b = strstr(line, " baselines: ");
        const char *ds = b ? strstr(b, "default schedule ") : NULL;
        if (ours && ds) {
            char *end;
            double x = strtod(ds + strlen("default schedule "), &end);
            if (end != ds + strlen("default schedule ") && isfinite(x) && x > 0)
                d = x;
        }
    }
    fclose(f);
    return d;
}

/* A readable name for target fingerprint fp into buf: "simulated NAME"
 * for "sim:NAME:HEX"; for "cpu:HEX", this machine's CPU model and core
 * count when fp is this machine's fingerprint (loom_ship_target_fp "cpu"),
 * else "another CPU". */
static void target_label(const char *fp, char *buf, size_t n)
{
    const char *colon = !strncmp(fp, "sim:", 4) ? strchr(fp + 4, ':') : NULL;
    if (colon) {
        snprintf(buf, n, "simulated %.*s", (int)(colon - fp - 4), fp + 4);
        return;
    }
    char here[128] = "";
    loom_error err;
    if (strncmp(fp, "cpu:", 4) || loom_ship_target_fp("cpu", here, sizeof here, &err) || strcmp(here, fp)) {
        snprintf(buf, n, "%s", strncmp(fp, "cpu:", 4) ? "a target" : "another CPU");
        return;
    }
    char line[512], model[256] = "this machine's CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            const char *m = strchr(line, ':') + 1;
            m += strspn(m, " \t");
            snprintf(model, sizeof model, "%.*s", (int)strcspn(m, "\n"), m);
            break;
        }
    if (f)
        fclose(f);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(buf, n, "%s, %ld core%s", model, cores, cores == 1 ? "" : "s");
}

/* The y axis (microseconds, log scale) from lo to hi: labelled ticks at 1, 2
 * and 5 times each power of ten (1 only when the range spans more than 4
 * decades, where 1-2-5 would crowd), the range widened to the ticks either
 * side of the data.  Labels: integers as integers (%g gives 1e+03), else
 * %g. */
static void write_ytics(FILE *f, double lo, double hi)
{
    if (!(lo > 0) || !(hi >= lo) || !isfinite(hi)) {
        fprintf(f, "set logscale y\n");
        return;
    }
    static const double m125[] = {1, 2, 5}, m1[] = {1};
    int dense = hi / lo <= 1e4;
    const double *m = dense ? m125 : m1;
    int nm = dense ? 3 : 1;
    double t[64];
    int nt = 0;
    for (int e = (int)floor(log10(lo)) - 1; e <= (int)ceil(log10(hi)) + 1; e++)
        for (int j = 0; j < nm && nt < 64; j++)
            t[nt++] = m[j] * pow(10, e); /* ascending, brackets [lo, hi] */
    int first = 0, last = nt - 1;
    while (first + 1 < nt && t[first + 1] <= lo * (1 + 1e-9))
        first++; /* the last tick at or under the data */
    while (last - 1 >= 0 && t[last - 1] >= hi * (1 - 1e-9))
        last--; /* the first tick at or over it */
    if (first == last) { /* the data is one tick's value: a tick either side */
        first -= first > 0;
        last += last < nt - 1;
    }
    double below = t[first], above = t[last];
    char list[2048] = "";
    size_t k = 0;
    for (int i = first; i <= last && k + 64 < sizeof list; i++) {
        char label[32];
        snprintf(label, sizeof label, t[i] >= 1 ? "%.0f" : "%g", t[i]);
        k += (size_t)snprintf(list + k, sizeof list - k, "%s\"%s\" %.9g", k ? ", " : "", label, t[i]);
    }
    /* a hair wider than the end ticks: gnuplot drops a label that rounding puts just outside */
    fprintf(f, "set logscale y\nset yrange [%.9g:%.9g]\nset ytics (%s)\n", below / 1.002, above * 1.002, list);
}

static int run_gnuplot(const char *script, char *out, size_t n)
{
    int fd[2];
    if (pipe(fd))
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t k = 0;
    ssize_t r;
    char sink[256];
    while ((r = read(fd[0], k < n - 1 ? out + k : sink, k < n - 1 ? n - 1 - k : sizeof sink)) > 0 ||
           (r < 0 && errno == EINTR))
        if (r > 0 && k < n - 1)
            k += (size_t)r;
    out[k] = 0;
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Write the script for the trials v[0..n) (file order) of one group. */
static int write_script(FILE *f, const char *out, const char *title, const loom_record *const *v, int n, double def)
{
    const char *ext = strrchr(out, '.');
    int svg = ext && !strcmp(ext, ".svg");
    double worst = 0, best = INFINITY, fastest = INFINITY;
    int nok = 0, nfail = 0, trial = 0;
    for (int i = 0; i < n; i++)
        if (!v[i]->nsamples) {
            if (v[i]->status == LOOM_OK && isfinite(v[i]->latency_s)) {
                worst = fmax(worst, v[i]->latency_s);
                fastest = fmin(fastest, v[i]->latency_s);
                nok++;
            } else {
                nfail++;
            }
        }
    double fail_y = (worst > 0 ? worst : 1e-3) * 1.5e6; /* failures drawn above the slowest trial (us) */
    fprintf(f, "# loom db --plot: %s\n# latencies in microseconds; trial = the record's rank among the trials "
               "in file order (re-measurements excluded)\n",
            title);
    fprintf(f, "$trials << EOD\n# trial latency_us record_line\n");
    for (int i = 0; i < n; i++)
        if (!v[i]->nsamples && ++trial && v[i]->status == LOOM_OK && isfinite(v[i]->latency_s))
            fprintf(f, "%d %.9g %d\n", trial, v[i]->latency_s * 1e6, v[i]->line);
    fprintf(f, "EOD\n$best << EOD\n# trial best_so_far_us\n");
    trial = 0;
    for (int i = 0; i < n; i++)
        if (!v[i]->nsamples) {
            trial++;
            if (v[i]->status == LOOM_OK && isfinite(v[i]->latency_s))
                best = fmin(best, v[i]->latency_s);
            if (isfinite(best))
                fprintf(f, "%d %.9g\n", trial, best * 1e6);
        }
    fprintf(f, "EOD\n$failed << EOD\n# trial y_us(drawn above the slowest trial) status record_line\n");
    trial = 0;
    for (int i = 0; i < n; i++)
        if (!v[i]->nsamples && ++trial && !(v[i]->status == LOOM_OK && isfinite(v[i]->latency_s)))
            fprintf(f, "%d %.9g %s %d\n", trial, fail_y, loom_record_status_name(v[i]->status), v[i]->line);
    fprintf(f, "EOD\n\n");
    if (svg)
        fprintf(f, "set terminal svg size 900,520 dynamic enhanced font 'sans,12' background rgb 'white'\n");
    else
        fprintf(f, "set terminal pngcairo size 900,520 font 'sans,10'\n");
    fprintf(f, "set output '");
    for (const char *p = out; *p; p++)
        fprintf(f, *p == '\'' ? "''" : "%c", *p);
    fprintf(f, "'\nset title \"");
    for (const char *p = title; *p; p++)
        fprintf(f, (*p == '"' || *p == '\\') ? "\\%c" : "%c", *p);
    fprintf(f, "\" noenhanced\nset xlabel 'trial'\nset ylabel 'latency (us, log scale)'\n"
               "set grid\nset key top right\nset xrange [0:%d]\n", trial + 1);
    double lo = fmin(fastest, isfinite(def) ? def : INFINITY), hi = fmax(worst, isfinite(def) ? def : 0);
    if (nfail)
        hi = fmax(hi, fail_y / 1e6);
    if (!isfinite(lo) && nfail)
        lo = fail_y / 1e6;
    write_ytics(f, lo * 1e6, hi * 1e6);
    fprintf(f, "plot ");
    const char *sep = "";
    if (nok) {
        fprintf(f, "$trials using 1:2 with points pt 7 ps 0.6 lc rgb '#888888' title 'trial latency', "
                   "$best using 1:2 with steps lw 2 lc rgb '#1f77b4' title 'best so far'");
        sep = ", ";
    }
    if (isfinite(def)) {
        fprintf(f, "%s%.9g with lines dt 2 lw 2 lc rgb '#2ca02c' title 'default schedule (%.4g us)'", sep, def * 1e6,
                def * 1e6);
        sep = ", ";
    }
    if (nfail)
        fprintf(f, "%s$failed using 1:2 with points pt 2 ps 1.2 lc rgb '#d62728' title 'failed (%d)'", sep, nfail);
    if (!nok && !isfinite(def) && !nfail)
        fprintf(f, "0 notitle");
    fprintf(f, "\n");
    return trial;
}

int cli_db_plot(loom_db *db, const char *dir, const uint64_t *whash, const char *out)
{
    const char *ext = strrchr(out, '.');
    if (!ext || (strcmp(ext, ".png") && strcmp(ext, ".svg"))) {
        fprintf(stderr, "loom db: --plot %s: the picture's name must end in .png or .svg\n", out);
        return EXIT_BADINPUT;
    }
    /* the (workload, target) group with the most records (of --workload when given) */
    const loom_record *pick = NULL;
    int most = 0, groups = 0;
    for (int i = 0; i < loom_db_count(db); i++) {
        const loom_record *r = loom_db_record(db, i);
        if (whash && r->workload_hash != *whash)
            continue;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) {
            const loom_record *q = loom_db_record(db, j);
            seen = q->workload_hash == r->workload_hash && !strcmp(q->target_fp, r->target_fp) &&
                   (!whash || q->workload_hash == *whash);
        }
        if (seen)
            continue;
        groups++;
        int c = 0;
        for (int j = i; j < loom_db_count(db); j++)
            c += loom_db_record(db, j)->workload_hash == r->workload_hash &&
                 !strcmp(loom_db_record(db, j)->target_fp, r->target_fp);
        if (c > most) {
            most = c;
            pick = r;
        }
    }
    if (!pick) {
        fprintf(stderr, "loom db: --plot: %s has no records%s\n", dir, whash ? " of that workload" : "");
        return EXIT_BADINPUT;
    }
    const loom_record **v = malloc((size_t)most * sizeof *v);
    if (!v) {
        fprintf(stderr, "loom db: out of memory\n");
        return EXIT_BADINPUT;
    }
    int n = 0;
    for (int i = 0; i < loom_db_count(db); i++) {
        const loom_record *r = loom_db_record(db, i);
        if (r->workload_hash == pick->workload_hash && !strcmp(r->target_fp, pick->target_fp))
            v[n++] = r;
    }
    double def = default_latency(dir, v, n, pick->workload_hash, pick->target_fp);
    int trials = 0, failed = 0;
    for (int i = 0; i < n; i++)
        if (!v[i]->nsamples) {
            trials++;
            failed += !(v[i]->status == LOOM_OK && isfinite(v[i]->latency_s));
        }
    char title[1024], gp[4200], tname[300], fails[48] = "", rem[80] = "";
    target_label(pick->target_fp, tname, sizeof tname);
    if (failed)
        snprintf(fails, sizeof fails, ", %d failed", failed);
    if (n > trials)
        snprintf(rem, sizeof rem, "; %d re-measurement record%s not drawn", n - trials, n - trials == 1 ? "" : "s");
    snprintf(title, sizeof title, "%s on %s (%s): %d trial%s%s%s", pick->workload_name, tname, pick->target_fp,
             trials, trials == 1 ? "" : "s", fails, rem);
    size_t stem = (size_t)(ext - out);
    snprintf(gp, sizeof gp, "%.*s.gp", (int)(stem < 4000 ? stem : 4000), out);
    FILE *f = fopen(gp, "w");
    if (!f) {
        fprintf(stderr, "loom db: cannot write %s: %s\n", gp, strerror(errno));
        free(v);
        return EXIT_BADINPUT;
    }
    write_script(f, out, title, v, n, def);
    free(v);
    if (fclose(f)) {
        fprintf(stderr, "loom db: cannot write %s: %s\n", gp, strerror(errno));
        return EXIT_BADINPUT;
    }
    char msg[2048];
    int rc = run_gnuplot(gp, msg, sizeof msg);
    if (rc == 127) {
        fprintf(stderr, "loom db: --plot needs gnuplot (Debian: apt-get install gnuplot-nox, or "
                        "scripts/install-deps.sh); the script is in %s\n", gp);
        return EXIT_BADINPUT;
    }
    if (rc) {
        fprintf(stderr, "loom db: gnuplot failed on %s (exit %d): %s\n", gp, rc, msg);
        return EXIT_BADINPUT;
    }
    printf("plotted %d trials of %s on %s (%s) into %s (gnuplot script with the data: %s)%s\n", trials,
           pick->workload_name, tname, pick->target_fp, out, gp,
           groups > 1 ? "; the directory has other workload/target groups: --workload W.loom picks one" : "");
    return 0;
}
