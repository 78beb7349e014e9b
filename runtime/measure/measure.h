/* loom: measuring a kernel in an isolated child process.
 *
 * The parent forks; the child runs the kernel (warm-up runs, then repeats
 * until at least min_seconds of kernel time and at least min_repeats runs)
 * and sends each run's wall time back through a pipe.  The parent waits at
 * most time_limit seconds, then kills the child (SIGKILL).  A kernel that
 * crashes (any signal), returns non-zero, or exceeds the limit is reported in
 * the result; the parent never dies with it.  The latency is the median of
 * the timed runs (DESIGN.md "Measure").  Outputs the kernel writes into
 * shared memory (the data set's outputs) are visible to the parent after the
 * call.  The parent must not have run OpenMP code before forking (libgomp
 * does not survive fork); loom's tuner never does.
 */
#ifndef LOOM_MEASURE_H
#define LOOM_MEASURE_H

#include "../../dsl/error.h"
#include "../../dsl/util.h"
#include "../kernel_abi.h"

typedef struct loom_measure_opts {
    double min_seconds;   /* total timed kernel time to reach; default 0.1 s */
    int min_repeats;      /* at least this many timed runs; default 3 */
    int max_repeats;      /* at most this many timed runs; default 10000 */
    int warmup;           /* untimed runs first; default 1 */
    double time_limit;    /* seconds for the whole child; default 10 s */
} loom_measure_opts;

/* The defaults above. */
loom_measure_opts loom_measure_defaults(void);

typedef struct loom_measurement {
    loom_status status;   /* LOOM_OK, LOOM_ERR_RUN (crash / non-zero return),
                             LOOM_ERR_TIMEOUT */
    double latency;       /* median seconds per run (valid when status is OK) */
    double min, max;      /* fastest and slowest run, seconds */
    int repeats;          /* timed runs */
    double total_seconds; /* wall time of the whole measurement, parent side */
    int signal;           /* the signal that killed the child, or 0 */
    int exit_code;        /* the kernel's non-zero return, or 0 */
    char message[256];    /* e.g. "kernel crashed: SIGSEGV (Segmentation fault)",
                             "kernel exceeded the time limit of 10.0 s" */
} loom_measurement;

/* Measure fn(args).  opts may be NULL for the defaults.  Returns LOOM_OK
 * when the measurement itself could be made (whatever the kernel did: see
 * out->status), or LOOM_ERR_RUN with err filled when fork/pipe failed. */
loom_status loom_measure(loom_kernel_fn fn, loom_tensor_abi *args, const loom_measure_opts *opts,
                         loom_measurement *out, loom_error *err);

/* loom_now_seconds (the monotonic clock) lives in dsl/util.h, included
 * above; it stays reachable through this header. */

#endif
