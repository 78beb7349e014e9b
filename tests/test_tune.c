/* Tests for search/tune/tune.c and the `loom tune` / `loom replay` commands: a
 * campaign records every candidate, survives crashing and hanging kernels,
 * resumes after SIGKILL without losing or re-measuring a record, and its
 * best record replays into a C file that, compiled separately, computes
 * what the reference computes. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../runtime/measure/reference.h"
#include "../search/database/database.h"
#include "../search/tune/tune.h"
#include "fixture.h"

static char dir_[256];

static void mk(void)
{
    snprintf(dir_, sizeof dir_, "/tmp/loom-test-tune-XXXXXX");
    cr_assert_not_null(mkdtemp(dir_));
}

static void rm(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir_);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir_);
}

TestSuite(tune, .init = mk, .fini = rm);

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

static loom_program *load_spmm(loom_dataset **ds, int F)
{
    char f[32];
    snprintf(f, sizeof f, "F=%d", F);
    const char *args[] = {"A=data/cora500_adj.mtx", f};
    return fx_bind("workloads/spmm.loom", args, 2, 1, ds);
}

static loom_tune_opts quick(const char *db, int trials)
{
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = db;
    o.trials = trials;
    o.batch = 6;
    o.workload_name = "spmm";
    o.search.population = 24;
    o.search.generations = 1;
    o.search.init_min_unmeasured = 8;
    o.run.measure.min_seconds = 0;
    o.run.measure.min_repeats = 1;
    o.run.measure.warmup = 0;
    o.run.measure.time_limit = 2;
    o.run.build.cflags = "-O1 -march=native -fopenmp -fPIC -shared -std=c11";
    o.remeasure_rounds = 0; /* trials only (test_tune_guard.c tests the re-measurement) */
    return o;
}

/* A compiler wrapper that makes entry loom_kernel_1 of every batch object
 * segfault and loom_kernel_2 spin forever. */
static void write_bad_cc(const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("#!/bin/sh\n"
          "src=\"\"\n"
          "for a in \"$@\"; do case \"$a\" in *.c) src=\"$a\";; esac; done\n"
          "tmp=\"${src%.c}.inj.c\"\n"
          "cp \"$src\" \"$tmp\"\n"
          "if grep -q 'loom_kernel_1(' \"$src\"; then printf '%s\\n' '#undef loom_kernel_1' "
          "'int loom_kernel_1(loom_tensor_abi *loom_t) { (void)loom_t; *(volatile int *)0 = 0; return 0; }' >> "
          "\"$tmp\"; fi\n"
          "if grep -q 'loom_kernel_2(' \"$src\"; then printf '%s\\n' '#undef loom_kernel_2' "
          "'int loom_kernel_2(loom_tensor_abi *loom_t) { (void)loom_t; for (volatile int i = 0;; i++) {} return 0; }' "
          ">> \"$tmp\"; fi\n"
          "for a in \"$@\"; do shift; case \"$a\" in *.c) set -- \"$@\" \"$tmp\";; *) set -- \"$@\" \"$a\";; esac; done\n"
          "exec cc -Dloom_kernel_1=loom_kernel_1_orig -Dloom_kernel_2=loom_kernel_2_orig \"$@\"\n",
          f);
    fclose(f);
    chmod(path, 0755);
}

static int two_cpus(void)
{
    cpu_set_t c;
    return sched_getaffinity(0, sizeof c, &c) == 0 && CPU_COUNT(&c) >= 2;
}

Test(tune, crashing_and_hanging_candidates_are_records, .timeout = 300)
{
    loom_dataset *ds = NULL;
    loom_program *prog = load_spmm(&ds, 16);
    char db[300], cc[300];
    snprintf(db, sizeof db, "%s/db", dir_);
    snprintf(cc, sizeof cc, "%s/badcc", dir_);
    write_bad_cc(cc);
    loom_tune_opts o = quick(db, 14);
    o.run.build.cc = cc;
    o.run.build.cache_dir = dir_;
    o.run.measure.time_limit = 1;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.trials, 14);
    cr_assert_gt(r.failed_by_status[LOOM_ERR_RUN], 0, "no crash was recorded");
    cr_assert_gt(r.failed_by_status[LOOM_ERR_TIMEOUT], 0, "no hang was recorded");
    cr_assert(isfinite(r.best_latency_s), "the campaign found nothing that works");
    loom_db *d = NULL;
    cr_assert_eq(loom_db_open(db, NULL, &d, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_db_count(d), 14);
    int crash = 0, hang = 0, ok = 0, probed = 0;
    for (int i = 0; i < loom_db_count(d); i++) {
        const loom_record *rec = loom_db_record(d, i);
        crash += rec->status == LOOM_ERR_RUN;
        hang += rec->status == LOOM_ERR_TIMEOUT;
        if (rec->status != LOOM_OK)
            cr_assert(rec->message && rec->message[0], "a failed record without a message");
        /* a kernel measured on two cores keeps the machine's state then (database.h core_line_ns; 0
           when the probe gave up, a thread descheduled past 50 ms: measure.h) */
        if (rec->status == LOOM_OK && two_cpus() && rec->core_line_ns != 0) {
            probed++;
            cr_assert(rec->core_line_ns > 1 && rec->core_line_ns >= r.core_line_min_ns &&
                          rec->core_line_ns <= r.core_line_max_ns,
                      "record %d: core_line_ns %g outside the campaign's %g-%g", i, rec->core_line_ns,
                      r.core_line_min_ns, r.core_line_max_ns);
        }
        ok += rec->status == LOOM_OK;
    }
    if (two_cpus())
        cr_assert_gt(probed, 0, "none of the %d measured records kept the machine's state", ok);
    cr_assert_eq(crash, r.failed_by_status[LOOM_ERR_RUN]);
    cr_assert_eq(hang, r.failed_by_status[LOOM_ERR_TIMEOUT]);
    loom_db_close(d);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = 0, c, last = '\n';
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n')
            n++;
        last = c;
    }
    fclose(f);
    (void)last;
    return n;
}

static pid_t spawn_tune(const char *db, int trials, const char *cache)
{
    char t[16];
    snprintf(t, sizeof t, "%d", trials);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        setenv("LOOM_CACHE", cache, 1);
        int fd = open("/dev/null", 1);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(loom_bin(), loom_bin(), "tune", "workloads/spmm.loom", "--data", "A=data/cora500_adj.mtx", "--param",
              "F=16", "--trials", t, "--db", db, "--batch", "4", "--population", "24", "--seed", "3", "-q",
              (char *)NULL);
        _exit(127);
    }
    return pid;
}

Test(tune, sigkill_and_resume_lose_nothing_and_remeasure_nothing, .timeout = 300)
{
    char db[300], recs[400], cache[300];
    snprintf(db, sizeof db, "%s/db", dir_);
    snprintf(recs, sizeof recs, "%s/records.jsonl", db);
    snprintf(cache, sizeof cache, "%s/cache", dir_);
    pid_t pid = spawn_tune(db, 24, cache);
    /* kill it once some records exist (or give up waiting after 120 s) */
    struct timespec pause = {0, 20 * 1000 * 1000};
    for (int k = 0; k < 6000 && count_lines(recs) < 6; k++)
        nanosleep(&pause, NULL);
    int before = count_lines(recs);
    cr_assert_geq(before, 6, "the campaign wrote no records");
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFSIGNALED(status) || WIFEXITED(status));
    loom_error err;
    loom_db *d = NULL;
    cr_assert_eq(loom_db_open(db, NULL, &d, &err), LOOM_OK, "%s", err.msg);
    int kept = loom_db_count(d);
    cr_assert_geq(kept, before, "records were lost");
    loom_db_close(d);
    /* restart with the same budget: it finishes the rest */
    pid = spawn_tune(db, 24, cache);
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the resumed campaign failed");
    cr_assert_eq(loom_db_open(db, NULL, &d, &err), LOOM_OK, "%s", err.msg);
    int n = loom_db_count(d), trials = 0;
    for (int i = 0; i < n; i++)
        trials += loom_db_record(d, i)->nsamples == 0; /* re-measurement records are not trials */
    cr_assert_eq(trials, 24, "trial records after the resumed campaign: %d", trials);
    /* no schedule measured twice as a trial */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            cr_assert(loom_db_record(d, i)->nsamples || loom_db_record(d, j)->nsamples ||
                          loom_db_record(d, i)->schedule_hash != loom_db_record(d, j)->schedule_hash,
                      "lines %d and %d measured the same schedule", loom_db_record(d, j)->line,
                      loom_db_record(d, i)->line);
    loom_db_close(d);
}

Test(tune, replayed_c_file_compiled_separately_matches_the_reference, .timeout = 300)
{
    loom_dataset *ds = NULL;
    loom_program *prog = load_spmm(&ds, 32);
    char db[300];
    snprintf(db, sizeof db, "%s/db", dir_);
    loom_tune_opts o = quick(db, 8);
    o.run.build.cflags = NULL; /* the default flags: part of the target fingerprint `loom replay` looks up */
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert(isfinite(r.best_latency_s));
    cr_assert(isfinite(r.default_latency_s));
    cr_assert(r.best_trace[0] && access(r.best_trace, R_OK) == 0);
    /* loom replay writes the C file; compile it with plain cc, load it, run it */
    char cfile[400], trace[400], so[400], cmd[2000];
    snprintf(cfile, sizeof cfile, "%s/best.c", dir_);
    snprintf(trace, sizeof trace, "%s/best.json", dir_);
    snprintf(so, sizeof so, "%s/best.so", dir_);
    snprintf(cmd, sizeof cmd,
             "%s replay --db %s workloads/spmm.loom --data A=data/cora500_adj.mtx --param F=32 --emit-c %s "
             "--emit-trace %s > /dev/null",
             loom_bin(), db, cfile, trace);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    cr_assert_eq(access(trace, R_OK), 0);
    snprintf(cmd, sizeof cmd, "cc -std=c11 -O2 -fopenmp -fPIC -shared -o %s %s", so, cfile);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    loom_kernel_fn fn = (loom_kernel_fn)(uintptr_t)dlsym(h, "loom_kernel");
    cr_assert_not_null(fn);
    loom_reference *ref = NULL;
    cr_assert_eq(loom_reference_run(ds, &ref, &err), LOOM_OK, "%s", err.msg);
    loom_dataset_fill_outputs(ds, 777.0f);
    cr_assert_eq(fn(ds->t), 0);
    loom_check chk;
    loom_reference_check(ds, ref, &chk);
    cr_assert(chk.correct, "the replayed kernel differs from the reference: %g > %g", chk.max_rel_err, chk.tol);
    dlclose(h);
    loom_reference_free(ref);
    /* replay refuses a database without this workload */
    snprintf(cmd, sizeof cmd,
             "%s replay --db %s workloads/spmv.loom --data A=data/cora500_adj.mtx --emit-c %s/x.c 2>/dev/null",
             loom_bin(), db, dir_);
    int rc = system(cmd);
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "replay of a workload with no record: exit %d", rc);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

Test(tune, bad_arguments_are_clear_errors)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s tune workloads/spmm.loom --db %s/db 2>/dev/null", loom_bin(), dir_);
    int rc = system(cmd);
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "missing --trials");
    snprintf(cmd, sizeof cmd,
             "%s tune workloads/spmm.loom --data A=data/cora500_adj.mtx --trials 4 --db %s/db --strategy annealing "
             "2>&1 | grep -q 'unknown strategy'",
             loom_bin(), dir_);
    cr_assert_eq(system(cmd), 0, "an unknown strategy is named");
    snprintf(cmd, sizeof cmd,
             "%s tune workloads/spmm.loom --data A=data/cora500_adj.mtx --trials 4 --db %s/db --target gpu 2>&1 | "
             "grep -q \"unknown target 'gpu'\"",
             loom_bin(), dir_);
    cr_assert_eq(system(cmd), 0, "an unknown target is named");
    snprintf(cmd, sizeof cmd, "%s tune --help | grep -q -- '--strategy'", loom_bin());
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s replay --help | grep -q -- '--emit-c'", loom_bin());
    cr_assert_eq(system(cmd), 0);
}


/* On the simulator a campaign is deterministic: the same seed writes the
 * same database byte for byte; another seed does not. */
Test(tune, simulator_campaigns_are_byte_identical, .timeout = 300)
{
    loom_dataset *ds = NULL;
    loom_program *prog = load_spmm(&ds, 16);
    char db[3][300];
    for (int k = 0; k < 3; k++) {
        snprintf(db[k], sizeof db[k], "%s/sim%d", dir_, k);
        loom_tune_opts o = quick(db[k], 30);
        o.target = "sim:spr-2c";
        o.search.seed = k < 2 ? 5 : 6;
        o.search.population = 48;
        o.search.generations = 2;
        o.search.threads = k == 0 ? 1 : 2;
        loom_tune_result r;
        loom_error err;
        loom_error_clear(&err);
        cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(r.trials, 30);
        cr_assert(strncmp(r.target_fp, "sim:", 4) == 0, "%s", r.target_fp);
    }
    char p0[400], p1[400], p2[400];
    snprintf(p0, sizeof p0, "%s/records.jsonl", db[0]);
    snprintf(p1, sizeof p1, "%s/records.jsonl", db[1]);
    snprintf(p2, sizeof p2, "%s/records.jsonl", db[2]);
    char *a = fx_slurp(p0), *b = fx_slurp(p1), *c = fx_slurp(p2);
    cr_assert(strlen(a) > 1000);
    cr_assert_str_eq(a, b, "same seed (1 and 2 threads), different databases");
    cr_assert_str_neq(a, c, "another seed gave the same database");
    free(a), free(b), free(c);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* Issue 26: a pre-trained simulator campaign -- the model ranks from round
 * 0, so every round runs the generations, the fresh samples shared with the
 * population, the recycled traces and schedules and the local exploration
 * -- writes the same records with the same seed whatever the thread count,
 * for both population strategies (metaschedule's advance retires every
 * member); another seed does not. */
Test(tune, pretrained_simulator_campaigns_are_byte_identical, .timeout = 300)
{
    loom_dataset *ds = NULL;
    loom_program *prog = load_spmm(&ds, 16);
    for (int strat = 0; strat < 2; strat++) {
        char *text[3];
        for (int k = 0; k < 3; k++) {
            char db[300];
            snprintf(db, sizeof db, "%s/pre%d-%d", dir_, strat, k);
            loom_tune_opts o = quick(db, 24);
            o.target = "sim:spr-2c";
            o.batch = 8;
            o.pretrain = 24;
            o.pretrain_budget_s = 0;
            o.search.strategy = strat ? LOOM_STRATEGY_METASCHEDULE : LOOM_STRATEGY_EVOLUTIONARY;
            o.search.seed = k < 2 ? 11 : 12;
            o.search.population = 40;
            o.search.generations = 2;
            o.search.threads = k == 0 ? 1 : 2;
            loom_tune_result r;
            loom_error err;
            loom_error_clear(&err);
            cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(r.trials, 24);
            cr_assert_gt(r.pretrained, 0, "the campaign was not pre-trained");
            char path[400];
            snprintf(path, sizeof path, "%s/records.jsonl", db);
            text[k] = fx_slurp(path);
        }
        cr_assert(strlen(text[0]) > 1000);
        cr_assert_str_eq(text[0], text[1], "%s: same seed (1 and 2 threads), different databases",
                         strat ? "metaschedule" : "evolutionary");
        cr_assert_str_neq(text[0], text[2], "%s: another seed gave the same database",
                          strat ? "metaschedule" : "evolutionary");
        for (int k = 0; k < 3; k++)
            free(text[k]);
    }
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* Issue 7: a campaign on attention_causal.loom chooses a fused schedule by
 * itself.  On the simulator (deterministic, so this is exact) a 48-trial
 * campaign with the default design space and search -- one warm-up round,
 * like bench/bench_attention.c's campaigns -- must end with a best record
 * whose replayed schedule has a rolled stage (RollingUpdate), faster than
 * the default (unfused) schedule. */
#include "../traces/trace.h"

Test(tune, causal_attention_campaign_chooses_a_fused_schedule, .timeout = 300)
{
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/attention_causal.loom", NULL, 0, 0, &ds);
    char db[300];
    snprintf(db, sizeof db, "%s/causal", dir_);
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = db;
    o.trials = 48;
    o.workload_name = "attention_causal";
    o.target = "sim:spr-2c";
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.trials, 48);
    cr_assert(isfinite(r.best_latency_s) && isfinite(r.default_latency_s));
    cr_assert_lt(r.best_latency_s, r.default_latency_s, "the campaign did not beat the default schedule");
    char *text = fx_slurp(r.best_trace);
    loom_trace *t = NULL;
    cr_assert_eq(loom_trace_from_json(text, r.best_trace, &t, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_trace_replay(t, sch, NULL, &err), LOOM_OK, "%s", err.msg);
    int rolled = fx_rolled_stages(sch);
    printf("tune: attention_causal on sim:spr-2c, 48 trials: best %.1f us (%s), default %.1f us\n",
           r.best_latency_s * 1e6, rolled ? "fused" : "unfused", r.default_latency_s * 1e6);
    cr_assert_gt(rolled, 0, "the campaign's best schedule is not fused");
    free(sch);
    loom_trace_free(t);
    free(text);
    loom_dataset_free(ds);
    loom_program_free(prog);
}
