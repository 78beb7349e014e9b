/* Campaign guards (issue 14) and the final re-measurement (issue 12), end
 * to end through build/loom (LOOM_BIN) and loom_tune: two campaigns on one
 * directory, a campaign whose database hits a file size limit
 * (RLIMIT_FSIZE as `ulimit -f` sets it, SIGXFSZ at its default: loom
 * ignores it, so write(2) fails with EFBIG as on a full disk), and
 * a CPU campaign whose result is the re-measured median, not the sampled
 * minimum. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../search/database/database.h"
#include "../search/tune/tune.h"
#include "../ship/replay.h"
#include "fixture.h"

static char dir_[256];

static void mk(void) { fx_tmpdir(dir_, sizeof dir_, "tuneguard"); }

static void rm(void) { fx_rmtree(dir_); }

TestSuite(tuneguard, .init = mk, .fini = rm);

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

/* Start `loom tune` on SpMM (cora500, F=16) into db with stderr to errfile;
 * fsize > 0 limits the size of every file it writes. */
static pid_t spawn(const char *db, const char *target, int trials, const char *errfile, long fsize)
{
    char t[16];
    snprintf(t, sizeof t, "%d", trials);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        char cache[400];
        snprintf(cache, sizeof cache, "%s/cache", dir_);
        setenv("LOOM_CACHE", cache, 1);
        FILE *e = freopen(errfile, "w", stderr);
        if (!e || !freopen("/dev/null", "w", stdout))
            _exit(126);
        if (fsize > 0) {
            /* the default action (death), as under a shell's ulimit -f: loom
               itself must ignore SIGXFSZ to see EFBIG (issue 33) */
            signal(SIGXFSZ, SIG_DFL);
            struct rlimit rl = {(rlim_t)fsize, (rlim_t)fsize};
            if (setrlimit(RLIMIT_FSIZE, &rl))
                _exit(125);
        }
        execl(loom_bin(), loom_bin(), "tune", "workloads/spmm.loom", "--data", "A=data/cora500_adj.mtx", "--param",
              "F=16", "--trials", t, "--db", db, "--batch", "4", "--population", "24", "--seed", "3", "--target",
              target, "--remeasure", "2", "-q", (char *)NULL);
        _exit(127);
    }
    return pid;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert_not_null(b);
    b[fread(b, 1, (size_t)n, f)] = 0;
    fclose(f);
    return b;
}

static int count_lines(const char *path)
{
    char *t = slurp(path);
    int n = 0;
    for (char *p = t; *p; p++)
        n += *p == '\n';
    free(t);
    return n;
}

/* Every line of records.jsonl loads: no warning, count == lines. */
static int all_lines_load(const char *db)
{
    char recs[400];
    snprintf(recs, sizeof recs, "%s/records.jsonl", db);
    char *warn = NULL;
    size_t wl = 0;
    FILE *w = open_memstream(&warn, &wl);
    loom_db *d = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open_readonly(db, w, &d, &err), LOOM_OK, "%s", err.msg);
    fclose(w);
    int n = loom_db_count(d);
    cr_assert_eq(loom_db_skipped(d), 0, "lines skipped: %s", warn);
    cr_assert_eq(n, count_lines(recs), "records %d, lines %d", n, count_lines(recs));
    loom_db_close(d);
    free(warn);
    return n;
}

Test(tuneguard, a_second_campaign_on_a_busy_directory_refuses, .timeout = 300)
{
    char db[300], recs[400], e1[300], e2[300];
    snprintf(db, sizeof db, "%s/db", dir_);
    snprintf(recs, sizeof recs, "%s/records.jsonl", db);
    snprintf(e1, sizeof e1, "%s/err1", dir_);
    snprintf(e2, sizeof e2, "%s/err2", dir_);
    /* a CPU campaign: it compiles and measures for seconds after its first record */
    pid_t first = spawn(db, "cpu", 12, e1, 0);
    struct timespec pause = {0, 20 * 1000 * 1000};
    for (int k = 0; k < 6000 && count_lines(recs) < 1; k++)
        nanosleep(&pause, NULL);
    cr_assert_geq(count_lines(recs), 1, "the first campaign wrote nothing");
    pid_t second = spawn(db, "cpu", 12, e2, 0);
    int s2, s1;
    waitpid(second, &s2, 0);
    int first_done = waitpid(first, &s1, WNOHANG) == first;
    char *msg = slurp(e2);
    cr_assert(!first_done, "the first campaign finished before the second started: the test proves nothing");
    cr_assert(WIFEXITED(s2) && WEXITSTATUS(s2) == 2, "the second campaign exited %d: %s",
              WIFEXITED(s2) ? WEXITSTATUS(s2) : -1, msg);
    char want[64];
    snprintf(want, sizeof want, "process %ld holds its lock", (long)first);
    cr_assert_not_null(strstr(msg, want), "no '%s' in: %s", want, msg);
    cr_assert_not_null(strstr(msg, db), "the message does not name the directory: %s", msg);
    free(msg);
    waitpid(first, &s1, 0);
    char *m1 = slurp(e1);
    cr_assert(WIFEXITED(s1) && WEXITSTATUS(s1) == 0, "the first campaign failed: %s", m1);
    free(m1);
    int n = all_lines_load(db);
    loom_db *d = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open_readonly(db, NULL, &d, &err), LOOM_OK, "%s", err.msg);
    int trials = 0;
    for (int i = 0; i < n; i++)
        if (!loom_db_record(d, i)->nsamples) {
            trials++;
            for (int j = 0; j < i; j++)
                cr_assert(loom_db_record(d, j)->nsamples ||
                              loom_db_record(d, j)->schedule_hash != loom_db_record(d, i)->schedule_hash,
                          "lines %d and %d measured one schedule twice", j + 1, i + 1);
        }
    cr_assert_eq(trials, 12, "trial records: %d", trials);
    loom_db_close(d);
    /* now free: a rerun resumes (nothing left to measure) */
    pid_t again = spawn(db, "cpu", 12, e2, 0);
    waitpid(again, &s2, 0);
    cr_assert(WIFEXITED(s2) && WEXITSTATUS(s2) == 0, "the lock outlived the campaign");
}

/* Remove every file of db but records.jsonl, as an operator clearing what
 * looks stale would.  Returns how many were removed. */
static int remove_all_but_records(const char *db)
{
    DIR *d = opendir(db);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "records.jsonl"))
            continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", db, e->d_name);
        n += unlink(p) == 0;
    }
    closedir(d);
    return n;
}

Test(tuneguard, removing_the_directorys_files_does_not_let_a_second_campaign_in, .timeout = 300)
{
    char db[300], recs[400], e1[300], e2[300];
    snprintf(db, sizeof db, "%s/db", dir_);
    snprintf(recs, sizeof recs, "%s/records.jsonl", db);
    snprintf(e1, sizeof e1, "%s/err1", dir_);
    snprintf(e2, sizeof e2, "%s/err2", dir_);
    /* a simulated campaign of 2000 trials runs for many seconds; it is killed below */
    pid_t first = spawn(db, "sim:spr-2c", 2000, e1, 0);
    struct timespec pause = {0, 20 * 1000 * 1000};
    for (int k = 0; k < 6000 && count_lines(recs) < 3; k++)
        nanosleep(&pause, NULL);
    cr_assert_geq(count_lines(recs), 3, "the first campaign wrote nothing");
    int removed = remove_all_but_records(db);
    cr_assert_gt(removed, 0, "the campaign's directory held nothing to remove: the test proves nothing");
    pid_t second = spawn(db, "sim:spr-2c", 2000, e2, 0);
    int s2, s1;
    waitpid(second, &s2, 0);
    int first_done = waitpid(first, &s1, WNOHANG) == first;
    char *msg = slurp(e2);
    cr_assert(!first_done, "the first campaign finished before the second started: the test proves nothing");
    kill(first, SIGKILL);
    waitpid(first, &s1, 0);
    cr_assert(WIFEXITED(s2) && WEXITSTATUS(s2) == 2, "the second campaign exited %d: %s",
              WIFEXITED(s2) ? WEXITSTATUS(s2) : -1, msg);
    char want[64];
    snprintf(want, sizeof want, "process %ld holds its lock", (long)first);
    cr_assert_not_null(strstr(msg, want), "no '%s' in: %s", want, msg);
    free(msg);
    /* the killed campaign may leave a torn last line; every other line is a
       record, and no schedule was measured twice */
    loom_db *d = NULL;
    loom_error err;
    cr_assert_eq(loom_db_open_readonly(db, NULL, &d, &err), LOOM_OK, "%s", err.msg);
    cr_assert_leq(loom_db_skipped(d), 1);
    int n = loom_db_count(d);
    cr_assert_geq(n, 3);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            cr_assert(loom_db_record(d, i)->nsamples || loom_db_record(d, j)->nsamples ||
                          loom_db_record(d, j)->schedule_hash != loom_db_record(d, i)->schedule_hash,
                      "lines %d and %d measured one schedule twice", loom_db_record(d, j)->line,
                      loom_db_record(d, i)->line);
    loom_db_close(d);
}

Test(tuneguard, a_write_failure_stops_the_campaign_and_says_what_is_safe, .timeout = 300)
{
    char db[300], recs[400], e1[300];
    snprintf(db, sizeof db, "%s/db", dir_);
    snprintf(recs, sizeof recs, "%s/records.jsonl", db);
    snprintf(e1, sizeof e1, "%s/err1", dir_);
    /* records are ~1.5 kB: `ulimit -f 40` (40 KiB) stops the 60-trial campaign midway */
    const long limit = 40 * 1024;
    pid_t pid = spawn(db, "sim:spr-2c", 60, e1, limit);
    int s;
    waitpid(pid, &s, 0);
    char *msg = slurp(e1);
    cr_assert(WIFEXITED(s), "the campaign died of a signal (%d): %s", WIFSIGNALED(s) ? WTERMSIG(s) : 0, msg);
    cr_assert_eq(WEXITSTATUS(s), 2, "the campaign exited %d, not 2: %s", WEXITSTATUS(s), msg);
    const char *p = strstr(msg, " records are safe in ");
    cr_assert_not_null(p, "no 'K records are safe in FILE': %s", msg);
    while (p > msg && p[-1] >= '0' && p[-1] <= '9')
        p--;
    int k = atoi(p);
    cr_assert_not_null(strstr(msg, recs), "the message does not name the file: %s", msg);
    cr_assert_gt(k, 0);
    cr_assert_lt(k, 60, "the limit did not bite");
    struct stat sb;
    cr_assert_eq(stat(recs, &sb), 0);
    cr_assert_leq(sb.st_size, limit);
    int n = all_lines_load(db);
    cr_assert_eq(n, k, "the message says %d records are safe, the file holds %d: %s", k, n, msg);
    char *text = slurp(recs);
    cr_assert(text[0] && text[strlen(text) - 1] == '\n', "the file ends in a partial line");
    free(text);
    free(msg);
}

Test(tuneguard, the_result_is_the_remeasured_median, .timeout = 300)
{
    loom_dataset *ds = NULL;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    char db[300];
    snprintf(db, sizeof db, "%s/db", dir_);
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = db;
    o.trials = 8;
    o.batch = 4;
    o.workload_name = "spmm";
    o.search.population = 24;
    o.search.generations = 1;
    o.search.init_min_unmeasured = 8;
    o.run.measure.min_seconds = 0;
    o.run.measure.min_repeats = 3;
    o.run.measure.warmup = 1;
    o.run.build.cflags = "-O1 -march=native -fopenmp -fPIC -shared -std=c11";
    o.remeasure_rounds = 3;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.trials, 8);
    /* 3 rounds, or with decisive rounds (3 more while the lowest median and
       the default were contested, up to LOOM_TUNE_DECISIVE_ROUNDS x 3) */
    int R = r.remeasure_rounds;
    cr_assert(R >= 3 && R % 3 == 0 && R <= 3 * LOOM_TUNE_DECISIVE_ROUNDS, "%d rounds", R);
    /* decisive rounds stop when the choice is no longer contested, or at the cap */
    cr_assert(R == 3 * LOOM_TUNE_DECISIVE_ROUNDS || !loom_tune_contested(r.remeasured, r.nremeasured),
              "%d rounds, and the lowest median and the default are still contested", R);
    /* the top 5 distinct and the default (one of them when it is in the top 5) */
    cr_assert(r.nremeasured == 5 || r.nremeasured == 6, "%d re-measured", r.nremeasured);
    int ndef = 0;
    for (int k = 0; k < r.nremeasured; k++) {
        ndef += r.remeasured[k].is_default;
        if (k)
            cr_assert_leq(r.remeasured[k - 1].median_s, r.remeasured[k].median_s, "not sorted by median");
        cr_assert_eq(r.remeasured[k].rounds, R);
    }
    cr_assert_eq(ndef, 1, "the default schedule is not among the re-measured");
    /* the result is the winner's median, not the campaign's minimum: the
       lowest median, or on a loaded machine the default when the lowest
       median does not also beat the default's fastest round */
    const loom_tune_remeasured *win = NULL;
    for (int k = 0; k < r.nremeasured; k++)
        if (r.remeasured[k].chosen) {
            cr_assert_null(win, "two chosen schedules");
            win = &r.remeasured[k];
        }
    cr_assert_not_null(win, "no chosen schedule");
    cr_assert(win == &r.remeasured[0] || (r.load_guard && r.undecided && win->is_default),
              "the choice is neither the lowest median nor the loaded machine's default");
    cr_assert(!r.load_guard || (win->is_default && win != &r.remeasured[0]),
              "load_guard set, but it did not put the default over a lower median");
    cr_assert(r.best_latency_s == win->median_s, "best %g, winner's median %g", r.best_latency_s, win->median_s);
    cr_assert_leq(r.best_latency_s, r.default_latency_s, "the best is slower than the default");
    /* ... which is the minimum over the trial records */
    loom_db *d = NULL;
    cr_assert_eq(loom_db_open_readonly(db, NULL, &d, &err), LOOM_OK, "%s", err.msg);
    double sampled = INFINITY;
    int nre = 0;
    for (int i = 0; i < loom_db_count(d); i++) {
        const loom_record *x = loom_db_record(d, i);
        if (!x->nsamples) {
            if (x->status == LOOM_OK && x->latency_s < sampled)
                sampled = x->latency_s;
            continue;
        }
        /* a re-measurement record: its samples give the summary's figures */
        nre++;
        cr_assert_eq(x->nsamples, R);
        int found = 0;
        for (int k = 0; k < r.nremeasured; k++) {
            const loom_tune_remeasured *m = &r.remeasured[k];
            if (m->schedule != x->schedule_hash)
                continue;
            found = 1;
            double v[3 * LOOM_TUNE_DECISIVE_ROUNDS];
            for (int a = 0; a < R; a++)
                v[a] = x->samples[a];
            for (int a = 0; a < R; a++) /* sort the rounds */
                for (int b = a + 1; b < R; b++)
                    if (v[b] < v[a]) {
                        double t = v[a];
                        v[a] = v[b];
                        v[b] = t;
                    }
            double lo = v[0], mid = R % 2 ? v[R / 2] : 0.5 * (v[R / 2 - 1] + v[R / 2]), hi = v[R - 1];
            /* JSON keeps 17 significant digits: equal up to the last bit */
#define NEAR(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b))
            cr_assert(NEAR(m->min_s, lo) && NEAR(m->max_s, hi) && NEAR(m->median_s, mid) && NEAR(x->latency_s, mid),
                      "schedule %016llx: summary %a/%a/%a, record samples %a .. %a lat %a", (unsigned long long)m->schedule,
                      m->min_s, m->median_s, m->max_s, v[0], v[R - 1], x->latency_s);
            cr_assert_eq(x->is_default, m->is_default);
        }
        cr_assert(found, "a re-measurement record of a schedule the summary does not list");
        cr_assert_eq(x->cores, (int)sysconf(_SC_NPROCESSORS_ONLN));
    }
    cr_assert_eq(nre, r.nremeasured);
    cr_assert(NEAR(r.sampled_best_latency_s, sampled), "sampled best %g, minimum over the trials %g",
              r.sampled_best_latency_s, sampled);
    loom_db_close(d);
    /* loom db shows the re-measurement with its spread, the winner first */
    char cmd[600], out[8192];
    snprintf(cmd, sizeof cmd, "%s db %s --limit 2", loom_bin(), db);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = 0;
    cr_assert_eq(pclose(p), 0, "%s", out);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)r.remeasured[0].schedule);
    const char *blk = strstr(out, "re-measured ");
    cr_assert_not_null(blk, "%s", out);
    char rounds_txt[40];
    snprintf(rounds_txt, sizeof rounds_txt, "%d rounds interleaved", R);
    cr_assert_not_null(strstr(blk, rounds_txt), "%s", out);
    const char *row = strstr(blk, "     1  ");
    cr_assert(row && strstr(row, "(min ") && strstr(row, hex) && strstr(row, hex) < strchr(row, '\n'),
              "the first re-measured row is not the winner %s: %s", hex, out);
    /* re-measurement records are not trials: a rerun resumes with 8 and measures none */
    loom_tune_result r2;
    o.remeasure_rounds = 0;
    cr_assert_eq(loom_tune(prog, ds, &o, &r2, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r2.resumed, 8);
    cr_assert_eq(r2.measured, 0);
    cr_assert_eq(r2.remeasure_rounds, 0);
    cr_assert(NEAR(r2.best_latency_s, sampled), "without re-measurement the result is the sampled minimum");
    /* decisive rounds within a time budget (loom_tune_decisive_fits): with
       a budget no round fits, a re-measurement stops after its first 3
       rounds; when those leave the choice contested, the log says the budget
       stopped them (without the budget the campaign would make 3 more) */
    loom_tune_result r3;
    o.remeasure_rounds = 3;
    o.remeasure_again = 1;
    o.remeasure_budget_s = 1e-9;
    cr_assert_eq(loom_tune(prog, ds, &o, &r3, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r3.measured, 0);
    cr_assert_eq(r3.remeasure_rounds, 3, "a budget of 1 ns made %d rounds", r3.remeasure_rounds);
    char logp[340];
    snprintf(logp, sizeof logp, "%s/campaign.log", db);
    char *log = slurp(logp);
    cr_assert_not_null(log);
    if (loom_tune_contested(r3.remeasured, r3.nremeasured))
        cr_assert_not_null(strstr(log, "would pass the decisive rounds' budget of 1e-09 s"), "%s", log);
    free(log);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* loom_tune_decisive_fits (tune.h): R more rounds at the pace of the rounds
 * made so far must end within the decisive rounds' budget. */
Test(tuneguard, decisive_rounds_stop_at_their_time_budget)
{
    /* 5 rounds in 10 s: 2 s a round, 5 more take 10 s */
    cr_assert_eq(loom_tune_decisive_fits(10, 0, 5, 5, 10), 1, "10 s of 10 fit");
    cr_assert_eq(loom_tune_decisive_fits(10, 0, 5, 5, 9.99), 0);
    /* 10 rounds in 10 + 10 s: 2 s a round, 10 s spent, 5 more reach 20 s */
    cr_assert_eq(loom_tune_decisive_fits(10, 10, 10, 5, 20), 1);
    cr_assert_eq(loom_tune_decisive_fits(10, 10, 10, 5, 19), 0);
    /* the pace is every round's: slow decisive rounds count (5 + 25 s over 10 rounds: 3 s a round) */
    cr_assert_eq(loom_tune_decisive_fits(5, 25, 10, 5, 40), 1);
    cr_assert_eq(loom_tune_decisive_fits(5, 25, 10, 5, 39), 0);
    /* no limit */
    cr_assert_eq(loom_tune_decisive_fits(1e6, 1e6, 5, 5, 0), 1);
    cr_assert_eq(loom_tune_decisive_fits(1e6, 1e6, 5, 5, -1), 1);
    /* nonsense counts never fit */
    cr_assert_eq(loom_tune_decisive_fits(1, 0, 4, 5, 100), 0, "fewer rounds made than a batch");
    cr_assert_eq(loom_tune_decisive_fits(1, 0, 5, 0, 100), 0, "an empty batch");
    /* the library's default */
    cr_assert_eq(loom_tune_defaults().remeasure_budget_s, LOOM_TUNE_DECISIVE_BUDGET_S);
}

/* loom_tune_contested (tune.h "Decisive rounds"): more rounds are made only
 * when the lowest median is not the default and the two medians' notches
 * (median +- 1.58 IQR / sqrt(rounds), McGill, Tukey and Larsen 1978)
 * overlap; ineligible (pinned-out) schedules take no part.  Figures in us,
 * 9 rounds each: a notch is +- 1.58 / 3 x IQR = +- 0.5267 IQR. */
Test(tuneguard, contested_means_the_notches_of_the_lowest_median_and_the_default_overlap)
{
    loom_tune_remeasured s[3];
    s[0] = (loom_tune_remeasured){.eligible = 1, .rounds = 9, .q1_s = 95, .median_s = 100, .q3_s = 105}; /* lowest */
    s[1] = (loom_tune_remeasured){.eligible = 1, .rounds = 9, .q1_s = 120, .median_s = 130, .q3_s = 140};
    s[2] = (loom_tune_remeasured){.eligible = 1, .is_default = 1, .rounds = 9, .q1_s = 105, .median_s = 110,
                                  .q3_s = 115};
    /* notches [94.73, 105.27] and [104.73, 115.27] overlap */
    cr_assert_eq(loom_tune_contested(s, 3), 1);
    s[2].median_s = 111; /* [105.73, 116.27]: apart */
    cr_assert_eq(loom_tune_contested(s, 3), 0);
    s[2].rounds = 9 + 5; /* 5 of its 14 rounds failed: n = 9 still */
    s[2].failed_rounds = 5;
    cr_assert_eq(loom_tune_contested(s, 3), 0);
    s[2].failed_rounds = 8; /* n = 6: notch +- 0.645 IQR = [104.55, 117.45], overlapping again */
    cr_assert_eq(loom_tune_contested(s, 3), 1);
    s[2] = (loom_tune_remeasured){.eligible = 1, .is_default = 1, .rounds = 9, .q1_s = 90, .median_s = 95,
                                  .q3_s = 100};
    cr_assert_eq(loom_tune_contested(s, 3), 0, "the default is the lowest median: nothing to decide");
    s[2].median_s = 110;
    s[2].q1_s = 105;
    s[2].q3_s = 115;
    s[2].eligible = 0; /* a pinned campaign's default is for comparison only */
    cr_assert_eq(loom_tune_contested(s, 3), 0, "no eligible default");
    s[2].eligible = 1;
    s[0].eligible = 0; /* the lowest is pinned out: s[1] (median 130) is slower than the default */
    cr_assert_eq(loom_tune_contested(s, 3), 0);
    s[1].q1_s = 103; /* now the lowest eligible: [102.73, 113.27] against [104.73, 115.27] */
    s[1].median_s = 108;
    s[1].q3_s = 113;
    cr_assert_eq(loom_tune_contested(s, 3), 1);
    s[1].median_s = INFINITY; /* every round of s[1] failed */
    cr_assert_eq(loom_tune_contested(s, 3), 0);
    cr_assert_eq(loom_tune_contested(s, 0), 0);
}

/* A campaign on a machine loaded by busy processes (one per core, started
 * and stopped here, each bounded by alarm(2)): when the load has stopped,
 * the schedule it crowned re-measures no slower than the default (issue
 * 26: under load a median can crown a schedule 20-40x slower).  Each is
 * judged by its fastest of 7 interleaved rounds, not its median: CI runs
 * other tests beside this one, and their load only ever adds time, so the
 * minimum is the figure noise disturbs least.  The bound is 1.5x, not 1x:
 * two schedules of the same speed still differ by noise. */
Test(tuneguard, a_loaded_machine_does_not_crown_a_slower_schedule, .timeout = 300)
{
    loom_dataset *ds = NULL;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    char db[300];
    snprintf(db, sizeof db, "%s/loaded", dir_);
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    pid_t busy[8];
    int nbusy = ncpu < 8 ? ncpu : 8;
    for (int k = 0; k < nbusy; k++) {
        busy[k] = fork();
        cr_assert_neq(busy[k], -1);
        if (busy[k] == 0) {
            alarm(120); /* bounded even if this test dies */
            volatile unsigned long x = 0;
            for (;;)
                x++;
        }
    }
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = db;
    o.trials = 8;
    o.batch = 4;
    o.workload_name = "spmm";
    o.search.population = 24;
    o.search.generations = 1;
    o.search.init_min_unmeasured = 8;
    o.run.measure.min_seconds = 0.01;
    o.run.measure.min_repeats = 3;
    o.run.build.cflags = "-O1 -march=native -fopenmp -fPIC -shared -std=c11";
    o.remeasure_rounds = 3;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_tune(prog, ds, &o, &r, &err);
    for (int k = 0; k < nbusy; k++) {
        kill(busy[k], SIGKILL);
        waitpid(busy[k], NULL, 0);
    }
    cr_assert_eq(st, LOOM_OK, "%s", err.msg);
    cr_assert_leq(r.best_latency_s, r.default_latency_s, "under load: best %g s, default %g s", r.best_latency_s,
                  r.default_latency_s);
    cr_assert(!r.load_guard || (r.best_is_default && r.undecided && r.noisy),
              "the load guard kept a schedule other than the default");
    /* what was crowned, and the default, re-measured after the load */
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = NULL;
    loom_ship_best_info info;
    cr_assert_eq(loom_ship_best(db, prog, ds, r.target_fp, 0, sch, &t, &info, &err), LOOM_OK, "%s", err.msg);
    uint64_t crowned = loom_schedule_hash(sch);
    o.remeasure_rounds = 7;
    o.remeasure_again = 1;
    loom_tune_result q;
    double crowned_s = NAN, default_s = NAN;
    /* Whether the machine is quiet again is measured, not assumed: when the
     * crowned schedule misses the bound in a re-measurement that saw load
     * (rounds runtime/measure flagged stalled -- the kernel's threads were
     * descheduled -- or a spread over 2x: a process outside this test still
     * loads a core), that re-measurement cannot judge the crowning, so it
     * is taken again, up to 5 times, a second apart.  The CI of 2026-11-30
     * failed here with the fastest of 7 rounds of the crowned schedule at
     * 7.8 ms against the default's 2.9 us, beside other tests. */
    for (int attempt = 0; attempt < 5; attempt++) {
        if (attempt)
            sleep(1);
        cr_assert_eq(loom_tune_remeasure(prog, ds, &o, &q, &err), LOOM_OK, "%s", err.msg);
        crowned_s = default_s = NAN;
        for (int k = 0; k < q.nremeasured; k++) {
            if (q.remeasured[k].schedule == crowned)
                crowned_s = q.remeasured[k].min_s;
            if (q.remeasured[k].is_default)
                default_s = q.remeasured[k].min_s;
        }
        if (!(crowned_s > 1.5 * default_s) || !(q.stalled_rounds || q.noisy))
            break;
        cr_log_info("after the load: crowned %g s, default %g s with %d stalled rounds (noisy %d, load %.2f): "
                    "re-measured again",
                    crowned_s, default_s, q.stalled_rounds, q.noisy, q.load_avg);
    }
    cr_assert(isfinite(crowned_s) && isfinite(default_s), "crowned %g s, default %g s", crowned_s, default_s);
    cr_log_info("loaded campaign: best %g s, default %g s (load %.2f, noisy %d, undecided %d, %d stalled rounds, "
                "default crowned %d); after the load: crowned %g s, default %g s, fastest rounds (load %.2f, %d "
                "stalled rounds)",
                r.best_latency_s, r.default_latency_s, r.load_avg, r.noisy, r.undecided, r.stalled_rounds,
                r.best_is_default, crowned_s, default_s, q.load_avg, q.stalled_rounds);
    cr_assert_leq(crowned_s, 1.5 * default_s,
                  "the crowned schedule re-measures at %g s, the default at %g s (%d stalled rounds)", crowned_s,
                  default_s, q.stalled_rounds);
    loom_trace_free(t);
    free(sch);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* A schedule whose campaign figure lies far outside its re-measured spread
 * (here: its trial record copied with a figure 1000x faster, as a window
 * of the machine twice as fast would leave it, only more so) makes the
 * summary say the machine's capacity changed (issue 33); the naive nest's
 * figure then comes from the same rounds. */
Test(tuneguard, a_changed_window_is_reported, .timeout = 300)
{
    loom_dataset *ds = NULL;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    char db[300];
    snprintf(db, sizeof db, "%s/window", dir_);
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = db;
    o.trials = 4;
    o.batch = 4;
    o.workload_name = "spmm";
    o.search.population = 24;
    o.search.generations = 1;
    o.search.init_min_unmeasured = 4;
    o.run.measure.min_seconds = 0;
    o.run.measure.min_repeats = 3;
    o.run.build.cflags = "-O1 -march=native -fopenmp -fPIC -shared -std=c11";
    o.remeasure_rounds = 3;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.naive_remeasured, 1, "the naive nest was not in the re-measurement rounds");
    loom_db *d = NULL;
    cr_assert_eq(loom_db_open(db, NULL, &d, &err), LOOM_OK, "%s", err.msg);
    const loom_record *best = loom_db_best(d, loom_program_hash(prog), r.target_fp);
    cr_assert_not_null(best);
    loom_record fast = *best;
    fast.nsamples = 0;
    fast.samples = NULL;
    fast.is_winner = 0;
    fast.latency_s = best->latency_s / 1000;
    fast.time = best->time + 1;
    cr_assert_eq(loom_db_append(d, &fast, &err), LOOM_OK, "%s", err.msg);
    loom_db_close(d);
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.reused, 0);
    /* what each re-measured schedule's campaign figure and rounds were: the
     * failure message carries them (this test failed 2 of ~14 full-suite
     * runs with a ratio of ~1.3, never alone; the cause is not known) */
    char seen[1400] = "";
    for (int k = 0; k < r.nremeasured; k++) {
        const loom_tune_remeasured *q = &r.remeasured[k];
        size_t l = strlen(seen);
        snprintf(seen + l, sizeof seen - l, " [%016llx%s sampled %.3g min %.3g median %.3g max %.3g failed %d/%d]",
                 (unsigned long long)q->schedule, q->schedule == fast.schedule_hash ? " (the fast copy)" : "",
                 q->sampled_s, q->min_s, q->median_s, q->max_s, q->failed_rounds, q->rounds);
    }
    cr_assert_geq(r.window_changed, 1, "no window change reported;%s", seen);
    cr_assert_geq(r.window_ratio, 100, "ratio %g (load %.2f, stalled rounds %d);%s", r.window_ratio, r.load_avg,
                  r.stalled_rounds, seen);
    cr_assert_leq(r.best_latency_s, r.default_latency_s);
    loom_dataset_free(ds);
    loom_program_free(prog);
}
