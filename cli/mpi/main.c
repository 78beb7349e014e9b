/* loom-mpi: `loom tune` with measurement workers on MPI (issue 31;
 * docs/distributed.md; mpi_runner.h).
 *
 *   mpirun -np N build/loom-mpi tune WORKLOAD.loom --trials T --db DIR [loom tune's options]
 *   mpirun -np N build/loom-mpi tune MODEL.model --trials T --db DIR [loom tune's options]
 *          [--workers mpi] [--worker-timeout S] [--worker-limit S] [--allow-mixed-targets]
 *          [--broadcast-data]
 *
 * A separate binary so that libloom and build/loom link no MPI (no libmpi
 * at load time, no MPI_Init in processes that fork measurement children,
 * loom works on hosts without Open MPI).
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../search/database/database.h"
#include "../../search/model/model.h"
#include "../cli.h"
#include "mpi_runner.h"

static const char *HELP =
    "usage: mpirun -np N loom-mpi tune WORKLOAD.loom --trials T --db DIR [options]\n"
    "       mpirun -np N loom-mpi tune MODEL.model --trials T --db DIR [options]\n"
    "\n"
    "`loom tune` (every option of `loom tune --help`) with measurement workers on MPI:\n"
    "rank 0 runs the search (for a model: the task scheduler and every task's search)\n"
    "and owns the database; ranks 1..N-1 measure (or simulate) candidates, one at a\n"
    "time each, asking for the next when idle; a model's tasks share the workers.  Every\n"
    "rank loads the workload (or model) and data from the same paths; a rank whose\n"
    "workload, data or target fingerprint differs from rank 0's is refused (its host,\n"
    "and a model's task, are named).  docs/distributed.md.\n"
    "\n"
    "options (besides loom tune's):\n"
    "  --workers mpi          accepted for symmetry with the issue's command line\n"
    "  --worker-timeout S     a measuring worker silent for S seconds is dead (its candidate\n"
    "                         goes back to the queue); a worker that hears nothing from\n"
    "                         rank 0 for S seconds exits (default 30)\n"
    "  --worker-limit S       seconds one candidate may take on a worker, counted from its\n"
    "                         start there (default 600)\n"
    "  --allow-mixed-targets  accept workers whose target fingerprint differs (results say\n"
    "                         the host and target they were measured on)\n"
    "  --broadcast-data       rank 0 reads every --data file and sends it to the other ranks\n"
    "                         (the data need exist only on rank 0's host; not for a model,\n"
    "                         whose task lines name their data)\n"
    "\n"
    "Start it with `mpirun --enable-recovery` so that the job survives a dead worker (Open\n"
    "MPI 4.1 has no ULFM; without it mpirun ends every rank when one dies, and the\n"
    "campaign resumes from its database when rerun).\n";

static loom_mpi_config cfg;
static int broadcast;            /* --broadcast-data */
static int in_campaign;          /* 1 once loom tune reached the campaign (mpi_tune) */
static char bdir[64];            /* a worker's directory of broadcast data ("" : none) */
static char *bfiles[64];         /* its files */
static int nbfiles;

/* Remove a worker's copies of the broadcast data (loaded by then). */
static void remove_broadcast(void)
{
    for (int k = 0; k < nbfiles; k++) {
        unlink(bfiles[k]);
        free(bfiles[k]);
    }
    nbfiles = 0;
    if (bdir[0])
        rmdir(bdir);
    bdir[0] = '\0';
}

/* A worker rank: serve cfg's tasks until STOP, then exit (never returns). */
static void serve_and_exit(const loom_tune_opts *opts)
{
    remove_broadcast();
    int rc = loom_mpi_worker_serve(opts, &cfg);
    fflush(NULL);
    if (rc >= 2) /* a rank died: MPI_Finalize would wait for it */
        _exit(rc == 2 ? 0 : 1);
    MPI_Finalize();
    exit(rc);
}

/* The campaign on this rank: rank 0 tunes with the MPI runner, the others serve. */
static loom_status mpi_tune(loom_program *prog, loom_dataset *ds, const loom_tune_opts *opts, loom_tune_result *res,
                            loom_error *err)
{
    static loom_mpi_task one;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    in_campaign = 1;
    one = (loom_mpi_task){prog, ds, NULL, loom_program_hash(prog), loom_data_fingerprint(ds)};
    cfg.tasks = &one;
    cfg.ntasks = 1;
    if (rank != 0)
        serve_and_exit(opts);
    loom_tune_opts o = *opts;
    o.runner_new = loom_mpi_runner_new;
    o.runner_ctx = &cfg;
    return loom_tune(prog, ds, &o, res, err);
}

/* A model campaign on this rank: rank 0 runs the task scheduler with the MPI
 * runner in every task's campaign; the others serve every task (each bound
 * to its data as rank 0's: the same model file, loaded with the same seed). */
static loom_status mpi_tune_model(loom_model *m, const loom_model_tune_opts *opts, loom_model_tune_result *res,
                                  loom_error *err)
{
    static loom_mpi_task tasks[LOOM_MODEL_MAX_CALLS];
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    in_campaign = 1;
    for (int k = 0; k < m->ntasks && k < LOOM_MODEL_MAX_CALLS; k++) {
        const loom_model_call *c = &m->calls[m->tasks[k].call];
        tasks[k] = (loom_mpi_task){c->prog, c->ds, c->name, m->tasks[k].workload_hash, m->tasks[k].data_fp};
    }
    cfg.tasks = tasks;
    cfg.ntasks = m->ntasks;
    if (rank != 0)
        serve_and_exit(&opts->tune);
    loom_model_tune_opts o = *opts;
    o.tune.runner_new = loom_mpi_runner_new;
    o.tune.runner_ctx = &cfg;
    return loom_model_tune(m, &o, res, err);
}

/* Take loom-mpi's own options out of argv (argc updated); -1 on a bad value. */
static int strip_options(int *argc, char **argv)
{
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        const char *a = argv[i];
        int val = !strcmp(a, "--workers") || !strcmp(a, "--worker-timeout") || !strcmp(a, "--worker-limit");
        if (val && i + 1 >= *argc) {
            fprintf(stderr, "loom-mpi: %s needs a value\n", a);
            return -1;
        }
        if (!strcmp(a, "--workers") && strcmp(argv[i + 1], "mpi")) {
            fprintf(stderr, "loom-mpi: --workers takes 'mpi', not '%s'\n", argv[i + 1]);
            return -1;
        }
        double *dst = !strcmp(a, "--worker-timeout") ? &cfg.timeout_s
                      : !strcmp(a, "--worker-limit") ? &cfg.limit_s : NULL;
        if (dst) {
            char *end;
            *dst = strtod(argv[i + 1], &end);
            if (*end || *dst <= 0) {
                fprintf(stderr, "loom-mpi: %s takes seconds > 0, not '%s'\n", a, argv[i + 1]);
                return -1;
            }
        }
        if (val) {
            i++;
            continue;
        }
        if (!strcmp(a, "--allow-mixed-targets")) {
            cfg.allow_mixed_targets = 1;
            continue;
        }
        if (!strcmp(a, "--broadcast-data")) {
            broadcast = 1;
            continue;
        }
        argv[out++] = argv[i];
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

/* Rank 0's bytes of file path to every rank (size -1: rank 0 could not
 * read it); the others' copy in *buf (malloc'd), its size returned. */
static long bcast_file(int rank, const char *path, char **buf)
{
    long n = -1;
    *buf = NULL;
    FILE *f = rank == 0 ? fopen(path, "rb") : NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        *buf = malloc((size_t)n + 1);
        if (!*buf || fread(*buf, 1, (size_t)n, f) != (size_t)n)
            n = -1;
    }
    if (f)
        fclose(f);
    MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (n < 0) {
        free(*buf);
        *buf = NULL;
        return -1;
    }
    if (rank != 0 && !(*buf = malloc((size_t)n + 1)))
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (long off = 0; off < n;) { /* MPI counts are ints: 1 GiB at a time */
        int part = n - off > (1L << 30) ? 1 << 30 : (int)(n - off);
        MPI_Bcast(*buf + off, part, MPI_BYTE, 0, MPI_COMM_WORLD);
        off += part;
    }
    return n;
}

/* --broadcast-data: rank 0 sends every --data FILE to the other ranks, which
 * write it under a temporary directory and load that instead (argv's value
 * replaced), so the data need exist only on rank 0's host.  A file rank 0
 * cannot read is left as it is (rank 0's loom tune then says why). */
static void broadcast_data(int argc, char **argv)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < argc; i++) {
        int eq = !strncmp(argv[i], "--data=", 7);
        if (strcmp(argv[i], "--data") && !eq)
            continue;
        char **val = eq ? NULL : (i + 1 < argc ? &argv[++i] : NULL);
        const char *spec = eq ? argv[i] + 7 : val ? *val : NULL;
        const char *file = spec ? strchr(spec, '=') : NULL;
        if (!file)
            continue;
        char *buf = NULL;
        long n = bcast_file(rank, file + 1, &buf);
        if (rank != 0 && n >= 0 && nbfiles < 64 && (bdir[0] || mkdtemp(strcpy(bdir, "/tmp/loom-mpi-data-XXXXXX")))) {
            const char *base = strrchr(file + 1, '/') ? strrchr(file + 1, '/') + 1 : file + 1;
            size_t len = strlen(bdir) + strlen(base) + 16, nl = (size_t)(file - spec);
            char *path = malloc(len), *arg = malloc(len + nl + 16);
            snprintf(path, len, "%s/%d-%s", bdir, nbfiles, base);
            FILE *f = path && arg ? fopen(path, "wb") : NULL;
            if (f && fwrite(buf, 1, (size_t)n, f) == (size_t)n && fclose(f) == 0) {
                snprintf(arg, len + nl + 16, "%s%.*s=%s", eq ? "--data=" : "", (int)nl, spec, path);
                *(eq ? &argv[i] : val) = arg; /* kept until exit: argv points at it */
                bfiles[nbfiles++] = path;
            } else {
                if (f)
                    fclose(f);
                fprintf(stderr, "loom-mpi: could not write the broadcast data to %s\n", path ? path : bdir);
                free(path), free(arg);
            }
        }
        free(buf);
    }
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(HELP, stdout);
        return 0;
    }
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    cfg = loom_mpi_config_defaults();
    int rc = EXIT_BADINPUT;
    if (argc < 2 || strcmp(argv[1], "tune"))
        fputs(HELP, stderr);
    else if (strip_options(&argc, argv) == 0) {
        if (broadcast && cli_names_model(argc - 2, argv + 2))
            fprintf(stderr, "loom-mpi: --broadcast-data is for one workload's --data: a model's task lines name "
                            "their data, which every rank must have\n");
        else if (broadcast)
            broadcast_data(argc, argv);
        cli_tune_fn = mpi_tune;
        cli_model_tune_fn = mpi_tune_model;
        rc = cmd_tune(argc - 2, argv + 2);
    }
    remove_broadcast();
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) /* the workers' summary, STOP to every one */
        loom_mpi_release_workers();
    if (rank == 0) /* mpirun --enable-recovery exits 0 whatever rank 0 returns (Open MPI 4.1) */
        fprintf(stderr, "loom-mpi: rank 0 exits with status %d\n", rc);
    if (rank != 0 && !in_campaign) /* rank 0 would wait for its hello */
        loom_mpi_worker_failed("its loom tune command failed before the campaign (its stderr says why)");
    fflush(NULL);
    if (loom_mpi_dead_workers() > 0) /* MPI_Finalize would wait for the dead rank (no ULFM) */
        _exit(rc);
    MPI_Finalize();
    return rc;
}
