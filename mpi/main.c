/* loom-mpi: `loom tune` with measurement workers on MPI (issue 31;
 * docs/distributed.md; mpi_runner.h).
 *
 *   mpirun -np N build/loom-mpi tune WORKLOAD.loom --trials T --db DIR [loom tune's options]
 *          [--workers mpi] [--worker-timeout S] [--worker-limit S] [--allow-mixed-targets]
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

#include "../cli/cli.h"
#include "mpi_runner.h"

static const char *HELP =
    "usage: mpirun -np N loom-mpi tune WORKLOAD.loom --trials T --db DIR [options]\n"
    "\n"
    "`loom tune` (every option of `loom tune --help`) with measurement workers on MPI:\n"
    "rank 0 runs the search and owns the database; ranks 1..N-1 measure (or simulate)\n"
    "candidates, one at a time each, asking for the next when idle.  Every rank loads\n"
    "the workload and data from the same paths; a rank whose data or target fingerprint\n"
    "differs from rank 0's is refused (its host is named).  docs/distributed.md.\n"
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
    "\n"
    "Start it with `mpirun --enable-recovery` so that the job survives a dead worker (Open\n"
    "MPI 4.1 has no ULFM; without it mpirun ends every rank when one dies, and the\n"
    "campaign resumes from its database when rerun).\n";

static loom_mpi_config cfg;

/* The campaign on this rank: rank 0 tunes with the MPI runner, the others serve. */
static loom_status mpi_tune(loom_program *prog, loom_dataset *ds, const loom_tune_opts *opts, loom_tune_result *res,
                            loom_error *err)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cfg.whash = loom_program_hash(prog);
    if (rank == 0) {
        loom_tune_opts o = *opts;
        o.runner_new = loom_mpi_runner_new;
        o.runner_ctx = &cfg;
        return loom_tune(prog, ds, &o, res, err);
    }
    int rc = loom_mpi_worker_serve(prog, ds, opts, &cfg);
    fflush(NULL);
    if (rc >= 2) /* a rank died: MPI_Finalize would wait for it */
        _exit(rc == 2 ? 0 : 1);
    MPI_Finalize();
    exit(rc);
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
        argv[out++] = argv[i];
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
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
        cli_tune_fn = mpi_tune;
        rc = cmd_tune(argc - 2, argv + 2);
    }
    fflush(NULL);
    if (loom_mpi_dead_workers() > 0) /* MPI_Finalize would wait for the dead rank (no ULFM) */
        _exit(rc);
    MPI_Finalize();
    return rc;
}
