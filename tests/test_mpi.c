/* build/loom-mpi (cli/mpi/, docs/distributed.md; issue 31): campaigns with
 * measurement workers on MPI, under `mpirun -np 3` on this host.  Every test
 * skips with a message when mpirun or build/loom-mpi is absent (make test
 * builds loom-mpi when Open MPI is installed: `make mpi`).
 *
 *   - on the simulator, the database equals a single-process campaign's with
 *     the same seed, record for record (wall-clock fields aside);
 *   - a short CPU campaign: every trial measured and checked by a worker;
 *   - a worker killed mid-campaign: reported, its candidate requeued, every
 *     trial recorded once;
 *   - rank 0 killed mid-campaign: the workers exit, a rerun resumes from the
 *     database with nothing lost and every trial recorded once;
 *   - a rank with other data or another target is refused, naming its host
 *     (another target accepted with --allow-mixed-targets);
 *   - --broadcast-data: ranks without the file get rank 0's;
 *   - a whole model (MODEL.model) on the simulator: its tasks' candidates
 *     share the workers, and the database equals `loom tune MODEL`'s with the
 *     same seed; a rank whose model binds a task to other data is refused,
 *     naming its host and the task. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

/* containers often forbid the shared-memory transport's single copy (CMA, ptrace): off */
#define MPIRUN                                                                                                     \
    "mpirun --allow-run-as-root --oversubscribe --enable-recovery --mca btl_vader_single_copy_mechanism none -np 3 "
/* --pretrain-budget 0: pre-training without a time budget, so that a slow build (ASan) or a loaded
 * machine pre-trains the same model in both campaigns (a budget in seconds cut it at different points
 * and swapped two records of a batch under ASan) */
#define SIM_ARGS                                                                                                   \
    "workloads/spmm.loom --data A=data/cora500_adj.mtx --param F=16 --target sim:spr-2c --batch 4 --seed 5 "      \
    "--remeasure 0 --pretrain-budget 0 --quiet "
/* the kill tests: the random strategy (a cheap search), so that the campaign is all measurement */
#define KILL_ARGS SIM_ARGS "--strategy random --trials 32 "

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

static const char *mpi_bin(void)
{
    const char *b = getenv("LOOM_MPI_BIN");
    return b ? b : "build/loom-mpi";
}

/* Skip unless mpirun and loom-mpi are there. */
static void need_mpi(void)
{
    if (system("command -v mpirun >/dev/null 2>&1") != 0)
        cr_skip_test("mpirun not found: Open MPI is not installed (make mpi installs it)");
    if (access(mpi_bin(), X_OK) != 0)
        cr_skip_test("%s not built (make mpi builds it when Open MPI is installed)", mpi_bin());
}

/* The test's directories, removed when its process exits. */
static char temp_made[4][600];
static int ntemp;

static void rm_temp(void)
{
    for (int i = 0; i < ntemp; i++)
        fx_rmtree(temp_made[i]);
}

/* A fresh directory under /tmp (at most 4 a test). */
static void temp_dir(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "/tmp/loom-mpi-test-%s-%d", tag, (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", buf, buf);
    cr_assert_eq(system(cmd), 0);
    cr_assert_lt(ntemp, 4, "more than 4 temporary directories in one test");
    if (ntemp == 0)
        atexit(rm_temp);
    snprintf(temp_made[ntemp++], sizeof temp_made[0], "%s", buf);
}

/* Run cmd through sh with output to out; its exit status (-1: killed). */
static int sh(const char *cmd, const char *out)
{
    char full[8192];
    snprintf(full, sizeof full, "%s > %s 2>&1", cmd, out);
    int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* mpirun --enable-recovery exits 0 whatever rank 0 returned (Open MPI
 * 4.1): rank 0's own status is loom-mpi's last line. */
static void assert_rank0_ok(const char *out)
{
    char *log = fx_slurp(out);
    cr_assert(strstr(log, "loom-mpi: rank 0 exits with status 0\n"), "rank 0 failed: %s", log);
    free(log);
}

/* Start cmd in the background (output to out); its pid. */
static pid_t start(const char *cmd, const char *out)
{
    char full[8192];
    snprintf(full, sizeof full, "exec %s > %s 2>&1", cmd, out);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", full, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Wait up to secs for pid: its exit status, -1 when killed, -2 when still running (then killed). */
static int wait_for(pid_t pid, double secs)
{
    for (int k = 0; k < (int)(secs * 20); k++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        usleep(50000);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -2;
}

/* The file's text, or NULL while it does not exist (fx_slurp asserts). */
static char *slurp(const char *path)
{
    return access(path, R_OK) == 0 ? fx_slurp(path) : NULL;
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

/* The pid after `marker` ("... (pid P)") in file path, waiting up to secs; 0 if none. */
static int pid_after(const char *path, const char *marker, double secs)
{
    for (int k = 0; k < (int)(secs * 20); k++) {
        char *t = slurp(path);
        const char *m = t ? strstr(t, marker) : NULL;
        const char *p = m ? strstr(m, "(pid ") : NULL;
        int pid = p ? atoi(p + 5) : 0;
        free(t);
        if (pid > 0)
            return pid;
        usleep(50000);
    }
    return 0;
}

static void wait_lines(const char *path, int n, double secs)
{
    for (int k = 0; k < (int)(secs * 20) && count_lines(path) < n; k++)
        usleep(50000);
}

/* The trial records of DIR (re-measurements excluded), each as its JSON
 * text without the wall-clock fields ("time", "compile_s"); *n of them. */
static char **trial_records(const char *dir, int *n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/records.jsonl", dir);
    char *text = fx_slurp(path);
    cr_assert_not_null(text, "no %s", path);
    char **out = calloc(4096, sizeof *out);
    *n = 0;
    for (char *line = strtok(text, "\n"); line && *n < 4096; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        cr_assert_not_null(j, "a torn record in %s: %.80s", path, line);
        if (!cJSON_GetObjectItem(j, "nsamples") && !cJSON_GetObjectItem(j, "remeasure")) {
            cJSON_DeleteItemFromObject(j, "time");
            cJSON_DeleteItemFromObject(j, "compile_s");
            out[(*n)++] = cJSON_PrintUnformatted(j);
        }
        cJSON_Delete(j);
    }
    free(text);
    return out;
}

/* Every schedule of the records appears once. */
static void assert_once(char **recs, int n)
{
    for (int i = 0; i < n; i++) {
        const char *a = strstr(recs[i], "\"schedule\":\"");
        cr_assert_not_null(a);
        for (int j = i + 1; j < n; j++)
            cr_assert_neq(strncmp(a, strstr(recs[j], "\"schedule\":\""), 30), 0, "schedule recorded twice: %.40s",
                          a);
    }
}

static void free_records(char **recs, int n)
{
    for (int i = 0; i < n; i++)
        free(recs[i]);
    free(recs);
}

Test(mpi, sim_database_equals_a_single_process_campaign, .timeout = 120)
{
    need_mpi();
    char one[256], many[256], cmd[2048], out[600];
    temp_dir(one, sizeof one, "one");
    temp_dir(many, sizeof many, "many");
    snprintf(cmd, sizeof cmd, "%s tune " SIM_ARGS "--trials 16 --db %s", loom_bin(), one);
    snprintf(out, sizeof out, "%s/out.txt", one);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    snprintf(cmd, sizeof cmd, MPIRUN "%s tune " SIM_ARGS "--trials 16 --db %s --workers mpi", mpi_bin(), many);
    snprintf(out, sizeof out, "%s/out.txt", many);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    assert_rank0_ok(out);
    char *log = fx_slurp(out);
    cr_assert(strstr(log, "rank 1 on host") && strstr(log, "rank 2 on host"), "both workers joined: %s", log);
    free(log);
    int n1 = 0, n2 = 0;
    char **a = trial_records(one, &n1), **b = trial_records(many, &n2);
    cr_assert_eq(n1, 16);
    cr_assert_eq(n2, n1, "%d records under MPI, %d in one process", n2, n1);
    for (int i = 0; i < n1; i++)
        cr_assert_str_eq(b[i], a[i], "record %d differs", i);
    free_records(a, n1), free_records(b, n2);
}

Test(mpi, short_cpu_campaign_measured_and_checked_by_workers, .timeout = 180)
{
    need_mpi();
    char dir[256], cmd[2048], out[600];
    temp_dir(dir, sizeof dir, "cpu");
    snprintf(cmd, sizeof cmd,
             MPIRUN "%s tune workloads/spmv.loom --data A=data/cora500_adj.mtx --trials 4 --batch 2 --seed 3 "
                    "--remeasure 0 --quiet --db %s --workers mpi",
             mpi_bin(), dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    int rc = sh(cmd, out);
    char *log = fx_slurp(out);
    cr_assert_eq(rc, 0, "%s", log);
    assert_rank0_ok(out);
    cr_assert(strstr(log, "joined, target cpu:"), "%s", log);
    /* the workers measured the search's candidates, rank 0 did not */
    cr_assert(strstr(log, "candidates measured by workers") && !strstr(log, "no worker left"), "%s", log);
    free(log);
    int n = 0, ok = 0;
    char **recs = trial_records(dir, &n);
    cr_assert_eq(n, 4);
    assert_once(recs, n);
    for (int i = 0; i < n; i++) { /* measured on the CPU and checked: none wrong */
        cr_assert(strstr(recs[i], "\"target\":\"cpu:") && strstr(recs[i], "\"flops\":"), "%s", recs[i]);
        cr_assert(!strstr(recs[i], "\"status\":\"wrong\""), "a worker's kernel was wrong: %s", recs[i]);
        ok += strstr(recs[i], "\"status\":\"ok\"") != NULL;
    }
    cr_assert_gt(ok, 0, "no trial measured ok");
    free_records(recs, n);
}

Test(mpi, killed_worker_is_reported_and_every_trial_recorded_once, .timeout = 180)
{
    need_mpi();
    char dir[256], cmd[2048], out[600], recs_path[600];
    temp_dir(dir, sizeof dir, "killw");
    snprintf(cmd, sizeof cmd, MPIRUN "%s tune " KILL_ARGS "--db %s --workers mpi --worker-timeout 2",
             mpi_bin(), dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(recs_path, sizeof recs_path, "%s/records.jsonl", dir);
    pid_t job = start(cmd, out);
    int victim = pid_after(out, "rank 2 on host", 60);
    cr_assert_gt(victim, 0, "rank 2 never joined: %s", fx_slurp(out));
    wait_lines(recs_path, 3, 60);
    cr_assert_eq(kill(victim, SIGKILL), 0);
    int rc = wait_for(job, 120);
    char *log = fx_slurp(out);
    cr_assert_eq(rc, 0, "%s", log);
    assert_rank0_ok(out);
    cr_assert(strstr(log, "rank 2 on host") && strstr(log, "declared dead"), "the dead worker was reported: %s", log);
    free(log);
    int n = 0;
    char **recs = trial_records(dir, &n);
    cr_assert_eq(n, 32, "every trial recorded");
    assert_once(recs, n);
    free_records(recs, n);
}

Test(mpi, killed_rank_0_resumes_with_nothing_lost, .timeout = 180)
{
    need_mpi();
    char dir[256], cmd[2048], out[600], recs_path[600];
    temp_dir(dir, sizeof dir, "kill0");
    snprintf(cmd, sizeof cmd, MPIRUN "%s tune " KILL_ARGS "--db %s --workers mpi --worker-timeout 2",
             mpi_bin(), dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(recs_path, sizeof recs_path, "%s/records.jsonl", dir);
    pid_t job = start(cmd, out);
    int rank0 = pid_after(out, "rank 0 on host", 60);
    cr_assert_gt(rank0, 0, "%s", fx_slurp(out));
    wait_lines(recs_path, 6, 60);
    cr_assert_eq(kill(rank0, SIGKILL), 0);
    /* the workers hear nothing from rank 0 and exit: mpirun ends */
    int rc = wait_for(job, 60);
    cr_assert_neq(rc, -2, "the job outlived rank 0: %s", fx_slurp(out));
    char *before = fx_slurp(recs_path);
    cr_assert_not_null(before);
    int had = count_lines(recs_path);
    cr_assert_lt(had, 32, "rank 0 was killed mid-campaign");
    /* rerun: it resumes */
    char out2[600];
    snprintf(out2, sizeof out2, "%s/out2.txt", dir);
    cr_assert_eq(sh(cmd, out2), 0, "%s", fx_slurp(out2));
    assert_rank0_ok(out2);
    char *after = fx_slurp(recs_path);
    /* nothing lost: every whole line written before the kill is still there, first */
    char *last_nl = strrchr(before, '\n');
    if (last_nl)
        last_nl[1] = '\0';
    cr_assert_eq(strncmp(after, before, strlen(before)), 0, "the records before the kill changed");
    /* the rerun counted every whole record as resumed and measured only the rest */
    char want[80];
    snprintf(want, sizeof want, "(%d resumed, %d measured now", had, 32 - had);
    char *log2 = fx_slurp(out2);
    cr_assert(strstr(log2, want), "no '%s' in: %s", want, log2);
    free(log2);
    free(before), free(after);
    int n = 0;
    char **recs = trial_records(dir, &n);
    cr_assert_eq(n, 32, "every trial recorded once the campaign resumed");
    assert_once(recs, n);
    free_records(recs, n);
}

/* Rank 2 loads other data: refused, naming its host; the campaign finishes
 * with rank 1.  Then rank 2 on another simulated target: refused without
 * --allow-mixed-targets, accepted with it (its results say where they
 * were measured). */
Test(mpi, mismatched_ranks_are_refused_naming_the_host, .timeout = 180)
{
    need_mpi();
    char dir[256], cmd[4096], out[600];
    temp_dir(dir, sizeof dir, "mixed");
    const char *common = "tune workloads/spmm.loom --param F=16 --batch 4 --seed 5 --remeasure 0 --quiet "
                         "--strategy random --workers mpi";
    snprintf(cmd, sizeof cmd,
             MPIRUN "sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then D=data/cora_adj.mtx; else "
                    "D=data/cora500_adj.mtx; fi; exec %s %s --trials 4 --target sim:spr-2c --data A=$D --db %s/a'",
             mpi_bin(), common, dir);
    snprintf(out, sizeof out, "%s/out-a.txt", dir);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    assert_rank0_ok(out);
    char *log = fx_slurp(out), host[64] = "";
    gethostname(host, sizeof host - 1);
    char want[200];
    snprintf(want, sizeof want, "rank 2 on host %s refused: its data fingerprint", host);
    cr_assert(strstr(log, want), "no '%s' in: %s", want, log);
    free(log);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/a", dir);
    int n = 0;
    char **recs = trial_records(sub, &n);
    cr_assert_eq(n, 4);
    free_records(recs, n);
    /* another target on rank 2 */
    const char *sw = "sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then T=sim:wide-64c; else T=sim:spr-2c; fi; exec";
    snprintf(cmd, sizeof cmd, MPIRUN "%s %s %s --trials 4 --target $T --data A=data/cora500_adj.mtx --db %s/b'", sw, mpi_bin(),
             common, dir);
    snprintf(out, sizeof out, "%s/out-b.txt", dir);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    assert_rank0_ok(out);
    log = fx_slurp(out);
    cr_assert(strstr(log, "refused: its target fingerprint sim:wide-64c"), "%s", log);
    free(log);
    snprintf(cmd, sizeof cmd, MPIRUN "%s %s %s --trials 8 --target $T --data A=data/cora500_adj.mtx --db %s/c "
                                     "--allow-mixed-targets'",
             sw, mpi_bin(), common, dir);
    snprintf(out, sizeof out, "%s/out-c.txt", dir);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    assert_rank0_ok(out);
    log = fx_slurp(out);
    cr_assert(!strstr(log, "refused"), "%s", log);
    free(log);
    snprintf(sub, sizeof sub, "%s/c/records.jsonl", dir);
    log = fx_slurp(sub);
    cr_assert(strstr(log, "target sim:wide-64c"), "no record measured on rank 2's target: %s", log);
    free(log);
}

/* --broadcast-data: ranks 1 and 2 name a file that does not exist; rank 0
 * sends them its data and both join (same data fingerprint).  Without it they
 * cannot start, rank 0 says so naming their host, and measures alone. */
Test(mpi, broadcast_data_reaches_ranks_without_the_file, .timeout = 120)
{
    need_mpi();
    char dir[256], cmd[4096], out[600];
    temp_dir(dir, sizeof dir, "bcast");
    const char *sw = "sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 0 ]; then D=data/cora500_adj.mtx; else "
                     "D=/nonexistent/cora500_adj.mtx; fi; exec";
    const char *common = "tune workloads/spmm.loom --param F=16 --target sim:spr-2c --batch 4 --seed 5 "
                         "--remeasure 0 --quiet --strategy random --trials 8 --workers mpi --data A=$D";
    snprintf(cmd, sizeof cmd, MPIRUN "%s %s %s --db %s/a --broadcast-data'", sw, mpi_bin(), common, dir);
    snprintf(out, sizeof out, "%s/out-a.txt", dir);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    assert_rank0_ok(out);
    char *log = fx_slurp(out);
    cr_assert(strstr(log, "rank 1 on host") && strstr(log, "rank 2 on host") && strstr(log, "joined"), "%s", log);
    cr_assert(!strstr(log, "could not start") && !strstr(log, "no worker left"), "%s", log);
    free(log);
    snprintf(cmd, sizeof cmd, MPIRUN "%s %s %s --db %s/b'", sw, mpi_bin(), common, dir);
    snprintf(out, sizeof out, "%s/out-b.txt", dir);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    assert_rank0_ok(out);
    log = fx_slurp(out);
    char host[64] = "", want[160];
    gethostname(host, sizeof host - 1);
    snprintf(want, sizeof want, "rank 2 on host %s could not start", host);
    cr_assert(strstr(log, want) && strstr(log, "no worker left"), "%s", log);
    free(log);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/b", dir);
    int n = 0;
    char **recs = trial_records(sub, &n);
    cr_assert_eq(n, 8, "rank 0 measured every trial itself");
    free_records(recs, n);
}

/* --worker-limit: a candidate's limit counts from its start on the worker;
 * one that overruns is killed there, recorded as a timeout saying so, and
 * the worker goes on with the next. */
Test(mpi, worker_limit_counts_from_the_start_on_the_worker, .timeout = 120)
{
    need_mpi();
    char dir[256], cmd[2048], out[600];
    temp_dir(dir, sizeof dir, "limit");
    snprintf(cmd, sizeof cmd,
             MPIRUN "%s tune " SIM_ARGS "--strategy random --trials 6 --db %s --workers mpi --worker-limit 0.000001",
             mpi_bin(), dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    assert_rank0_ok(out);
    int n = 0, timeouts = 0;
    char **recs = trial_records(dir, &n);
    cr_assert_eq(n, 6, "every trial recorded, the timed-out ones too");
    for (int i = 0; i < n; i++)
        if (strstr(recs[i], "\"status\":\"timeout\"")) {
            cr_assert(strstr(recs[i], "counted from the start on the worker"), "%s", recs[i]);
            timeouts++;
        }
    /* the first record is the default schedule, measured on rank 0 (the baselines); the search's are the workers' */
    cr_assert_eq(timeouts, n - 1, "%d of %d trials timed out on the workers", timeouts, n);
    free_records(recs, n);
}

/* Rank 0's campaign fails before it has a runner (--db is a file): it
 * releases the workers, every rank ends (none waits for the others), and
 * its last line gives its status (mpirun --enable-recovery exits 0). */
Test(mpi, rank_0_failing_early_ends_every_rank, .timeout = 120)
{
    need_mpi();
    char dir[256], cmd[2048], out[600], file[300];
    temp_dir(dir, sizeof dir, "early");
    snprintf(file, sizeof file, "%s/not-a-dir", dir);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    snprintf(cmd, sizeof cmd, MPIRUN "%s tune " SIM_ARGS "--trials 4 --db %s --workers mpi", mpi_bin(), file);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    pid_t job = start(cmd, out);
    int rc = wait_for(job, 60);
    char *log = fx_slurp(out);
    cr_assert_neq(rc, -2, "the job did not end: %s", log);
    cr_assert(strstr(log, "not a directory") && strstr(log, "loom-mpi: rank 0 exits with status 2"), "%s", log);
    free(log);
}

/* A two-task model on cora500 (as tests/test_model_tune.c's light tasks:
 * seconds on the simulator) in dir/NAME.model; the second task's matrix is
 * vec_data (a file under data/).  Paths are absolute: a model's are
 * relative to its own folder. */
static void write_model(const char *dir, const char *name, const char *vec_data, char *path, size_t n)
{
    char cwd[512];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    snprintf(path, n, "%s/%s.model", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "model small\n"
               "task agg %s/workloads/spmm.loom --data A=%s/data/cora500_adj.mtx -p F=16 --runs 2\n"
               "task vec %s/workloads/spmv.loom --data A=%s/data/%s\n",
            cwd, cwd, cwd, cwd, vec_data);
    fclose(f);
}

#define MODEL_ARGS "--target sim:spr-2c --batch 4 --seed 5 --remeasure 0 --pretrain 0 --quiet "

/* How many records of recs name the workload `name` ("workload_name"). */
static int records_of(char **recs, int n, const char *name)
{
    char want[128];
    snprintf(want, sizeof want, "\"workload_name\":\"%s\"", name);
    int k = 0;
    for (int i = 0; i < n; i++)
        k += strstr(recs[i], want) != NULL;
    return k;
}

Test(mpi, model_campaign_database_equals_a_single_process_campaign, .timeout = 120)
{
    need_mpi();
    char one[256], many[256], model[400], cmd[2048], out[600];
    temp_dir(one, sizeof one, "model-one");
    temp_dir(many, sizeof many, "model-many");
    write_model(one, "small", "cora500_adj.mtx", model, sizeof model);
    snprintf(cmd, sizeof cmd, "%s tune %s " MODEL_ARGS "--trials 16 --db %s", loom_bin(), model, one);
    snprintf(out, sizeof out, "%s/out.txt", one);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    snprintf(cmd, sizeof cmd, MPIRUN "%s tune %s " MODEL_ARGS "--trials 16 --db %s --workers mpi", mpi_bin(), model,
             many);
    snprintf(out, sizeof out, "%s/out.txt", many);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    assert_rank0_ok(out);
    char *log = fx_slurp(out);
    cr_assert(strstr(log, "the model's tasks share them") && strstr(log, "rank 1 on host") &&
                  strstr(log, "rank 2 on host"), "both workers joined the model campaign: %s", log);
    /* the workers measured the search's candidates (every task's), rank 0 only the baselines */
    cr_assert(strstr(log, "candidates measured by workers") && !strstr(log, "no worker left") &&
                  !strstr(log, "refused"), "%s", log);
    free(log);
    int n1 = 0, n2 = 0;
    char **a = trial_records(one, &n1), **b = trial_records(many, &n2);
    cr_assert_eq(n1, 16);
    cr_assert(records_of(a, n1, "agg") > 1 && records_of(a, n1, "vec") > 1, "both tasks were tuned");
    cr_assert_eq(n2, n1, "%d records under MPI, %d in one process", n2, n1);
    for (int i = 0; i < n1; i++)
        cr_assert_str_eq(b[i], a[i], "record %d differs", i);
    free_records(a, n1), free_records(b, n2);
}

/* Rank 2's model binds task vec to other data: refused, naming its host and
 * the task; rank 1 measures every task's candidates. */
Test(mpi, model_rank_with_other_data_is_refused_naming_host_and_task, .timeout = 120)
{
    need_mpi();
    char dir[256], model[400], other[400], cmd[4096], out[600];
    temp_dir(dir, sizeof dir, "model-mixed");
    write_model(dir, "small", "cora500_adj.mtx", model, sizeof model);
    write_model(dir, "other", "cora_adj.mtx", other, sizeof other);
    snprintf(cmd, sizeof cmd,
             MPIRUN "sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then M=%s; else M=%s; fi; "
                    "exec %s tune $M " MODEL_ARGS "--trials 8 --db %s/db --workers mpi'",
             other, model, mpi_bin(), dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    cr_assert_eq(sh(cmd, out), 0, "%s", fx_slurp(out));
    assert_rank0_ok(out);
    char *log = fx_slurp(out), host[64] = "", want[200];
    gethostname(host, sizeof host - 1);
    snprintf(want, sizeof want, "rank 2 on host %s refused: its data fingerprint of task vec", host);
    cr_assert(strstr(log, want), "no '%s' in: %s", want, log);
    cr_assert(strstr(log, "rank 1 on host") && strstr(log, "joined") && strstr(log, "candidates measured by workers"),
              "%s", log);
    free(log);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/db", dir);
    int n = 0;
    char **recs = trial_records(sub, &n);
    cr_assert_eq(n, 8);
    assert_once(recs, n);
    free_records(recs, n);
}
