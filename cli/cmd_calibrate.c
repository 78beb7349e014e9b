/* loom: `loom calibrate` -- measure this host and cache the simulator's
 * model of it (runtime/target/calibrate.h, issue 29). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/ir/util.h"
#include "../runtime/target/calibrate.h"
#include "cli.h"

static const char *CALIBRATE_HELP =
    "usage: loom calibrate [--show] [--quick] [--fresh] [--print]\n"
    "\n"
    "Measures this host with microbenchmarks (a few seconds; runtime/target/calibrate.h):\n"
    "the clock; per cache level the load latency (pointer chase), sequential load\n"
    "bandwidth and the time of a gathered (indexed) load; the last level's effective\n"
    "size; memory latency, triad bandwidth with one and every thread, store bandwidth\n"
    "with plain and non-temporal stores; FMAs per cycle per vector width; the cost of\n"
    "an OpenMP parallel region and of a barrier; whether cc vectorizes a gather loop;\n"
    "the reorder buffer's capacity (two pointer chases with fillers between their loads).\n"
    "Cache sizes, ways and lines come from the machine (sysfs, else sysconf).  Each\n"
    "figure is the best of several short runs (the OpenMP region and barrier: the\n"
    "least of the runs' medians); other programs running still lower the bandwidths,\n"
    "and a note says so when the load average is high: calibrate on a quiet machine.  The\n"
    "result is a target file (docs/simulator.md) naming the CPU it was measured on,\n"
    "every figure with its source, written to $LOOM_CACHE/targets/host-<fingerprint>.calN.json.\n"
    "Run again, it folds the cached calibration's readings in: each figure is the\n"
    "best of all the calibrations (the fastest time, the highest bandwidth or rate;\n"
    "the last level's size from the fastest sweep at each working set), since other\n"
    "programs only ever slow a reading down (--fresh: forget them).  `--target sim`,\n"
    "`sim:host`, a CPU campaign's\n"
    "pre-training, navigation's estimates and `loom plan score` use it; the first of\n"
    "them to need it calibrates when no file is cached (LOOM_CALIBRATE=quick: quick\n"
    "mode; LOOM_CALIBRATE=off: the uncalibrated host model).\n"
    "\n"
    "options:\n"
    "  --show      print the cached calibration (the target file) and measure nothing;\n"
    "              exit 2 when there is none\n"
    "  --quick     shorter runs (about a second; less precise): what tests use (a quick\n"
    "              calibration folds only into a quick one, a full one into a full one)\n"
    "  --fresh     do not fold the cached calibration in: replace it\n"
    "  --print     also print the target file written\n"
    "  -h, --help  this text\n"
    "\n"
    "exit codes: 0 calibrated (or shown), 1 the microbenchmarks failed (compiler,\n"
    "            child), 2 bad options, no cached calibration for --show, or the\n"
    "            cache is not writable\n";

static int show(void)
{
    char path[1100];
    loom_calibrate_path(path, sizeof path);
    char *txt = cli_read_text(path);
    if (!txt) {
        fprintf(stderr, "loom calibrate: no calibration of this CPU cached (%s: %s); run loom calibrate\n", path,
                strerror(errno));
        return EXIT_BADINPUT;
    }
    printf("# %s\n%s", path, txt);
    if (txt[0] && txt[strlen(txt) - 1] != '\n')
        printf("\n");
    free(txt);
    return 0;
}

int cmd_calibrate(int argc, char **argv)
{
    int want_show = 0, quick = 0, print = 0, fresh = 0;
    const char *extra = NULL;
    enum { SHOW, QUICK, PRINT, FRESH };
    static const cli_opt opts[] = {
        {"show", 0, 0, SHOW}, {"quick", 0, 0, QUICK}, {"print", 0, 0, PRINT}, {"fresh", 0, 0, FRESH}};
    static cli_args args;
    cli_args_init(&args, "calibrate", argc, argv, CALIBRATE_HELP, opts, (int)(sizeof opts / sizeof *opts), NULL);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == SHOW)
            want_show = 1;
        else if (id == QUICK)
            quick = 1;
        else if (id == PRINT)
            print = 1;
        else if (id == FRESH)
            fresh = 1;
        else if (!extra)
            extra = val; /* reported after the options: a bad option is named first */
    }
    if (extra) {
        fprintf(stderr, "loom calibrate: unexpected argument '%s' (see loom calibrate --help)\n", extra);
        return EXIT_BADINPUT;
    }
    if (want_show)
        return show();
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    char *json = NULL, path[1100];
    loom_calibrate_path(path, sizeof path);
    char *earlier = fresh ? NULL : cli_read_text(path); /* none cached: NULL */
    if (loom_calibrate_run(quick, earlier, stdout, &t, &json, &err)) {
        free(earlier);
        cli_print_err("calibrate", &err);
        return EXIT_WRONG;
    }
    free(earlier);
    loom_status st = loom_calibrate_save(json, 1, path, sizeof path, &err);
    if (!st) {
        printf("%s: %s, %.3g GHz, %d-bit vectors, %d FMA pipes, L1 %d / last level %d cycles, memory %.0f ns, "
               "%.1f GB/s one core, %.1f GB/s all, parallel region %.0f ns\n",
               path, t.name, t.ghz, t.vector_bits, t.fma_units, t.caches[0].latency, t.caches[t.ncaches - 1].latency,
               t.mem_latency_ns, t.core_bandwidth / 1e9, t.mem_bandwidth / 1e9, t.parallel_overhead_ns);
        if (print)
            printf("%s\n", json);
    } else {
        cli_print_err("calibrate", &err);
    }
    free(json);
    return st ? EXIT_BADINPUT : 0;
}
