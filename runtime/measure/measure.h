/* loom: measuring a kernel in an isolated child process.
 *
 * The parent forks; the child runs the kernel (warm-up runs, then repeats
 * until at least min_seconds of kernel time and at least min_repeats runs),
 * writes each run's wall and CPU time into memory shared with the parent
 * (no system call and no wake-up of the parent per run; a crash or hang
 * mid-window still leaves the runs made so far) and reports the end of the
 * window through a pipe.  The parent waits at
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

#include "../../dsl/ir/error.h"
#include "../../dsl/ir/util.h"
#include "../lower/kernel_abi.h"

typedef struct loom_measure_opts {
    double min_seconds;   /* total timed kernel time to reach; default 0.1 s */
    int min_repeats;      /* at least this many timed runs; default 3 */
    int max_repeats;      /* at most this many timed runs; default 10000 */
    int warmup;           /* untimed runs first; default 1 */
    double time_limit;    /* seconds for the whole child; default 10 s */
    int stall_retries;    /* stalled runs (loom_measure_stalled) re-run instead of counted, at most
                             this many per window, and only while the child has used less than
                             half of time_limit (a slow kernel on a loaded machine is then
                             counted and flagged, not killed as a hang); later stalled runs are
                             counted (and flagged).  Default 10; 0 counts every run */
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
                             "kernel exceeded the time limit of 10.0 s"; with status OK, empty
                             unless `unreliable`: then the stall warning (see below) */
    /* The stall check (loom_measure_stalled), per timed run: */
    double cpu_s;         /* median CPU seconds the measuring process's threads used per counted
                             run (user + system, all threads: getrusage RUSAGE_SELF, microseconds) */
    int threads;          /* threads of the measuring process after the warm-up runs (the kernel's
                             OpenMP team; 1 for a serial kernel) */
    int runq_probe;       /* 1: runs were classified by their run-queue delay
                             (loom_measure_stalled_runq, Linux schedstat); 0: by the getrusage
                             rule (loom_measure_stalled) */
    double runq_s;        /* with runq_probe, the median seconds per counted run that the
                             process's threads spent runnable but waiting for a CPU (summed over
                             threads); 0 otherwise */
    int stalled_runs;     /* timed runs classified as stalled, re-run or counted */
    int stalled_counted;  /* of those, the ones counted in `repeats` (the retries ran out) */
    int unreliable;       /* 1 when at least half of the counted runs stalled, so the median is a
                             stall figure, not the kernel's: the machine is too loaded to measure
                             this kernel.  `latency` is still the median of the counted runs and
                             status stays OK; message says "figure unreliable: ..."
                             (LOOM_MEASURE_UNRELIABLE, which a tuning record's message then
                             begins with) */
    double core_line_ns;  /* the machine's state when this kernel was measured: a cache line's
                             round trip between two cores, ns (loom_measure_core_line_ns, run in
                             the measuring process before the kernel's first run); 0 when not
                             measured (one CPU, or the probe gave up) */
} loom_measurement;

/* The words a measurement's message, and so its tuning record's, begins
 * with when the figure is unreliable (`unreliable` above): `loom db
 * --fidelity` leaves such records out. */
#define LOOM_MEASURE_UNRELIABLE "figure unreliable"

/* Measure fn(args).  opts may be NULL for the defaults.  Each timed run is
 * checked for a stall: with loom_measure_stalled_runq (below) when the
 * child can read every thread's /proc/self/task/TID/schedstat (Linux with
 * sched_info accounting, which Debian's kernels have), else with
 * loom_measure_stalled (the getrusage rule).  A stalled run is re-run, at
 * most opts->stall_retries times a window, then counted; out reports the
 * stall counts and sets `unreliable` when the median is a stall figure.
 * Returns LOOM_OK when the measurement itself could be made (whatever the
 * kernel did: see out->status), or LOOM_ERR_RUN with err filled when the
 * shared buffer (max_repeats x 25 bytes), the pipe or the fork failed.
 * On the wait policy of libgomp under load (OMP_WAIT_POLICY=passive turned
 * 8-24 ms figures into 20-27 us here) see docs/tuning.md "One measurement". */
loom_status loom_measure(loom_kernel_fn fn, loom_tensor_abi *args, const loom_measure_opts *opts,
                         loom_measurement *out, loom_error *err);

/* The round trip of a cache line between two cores, in nanoseconds: two
 * threads pinned to the first two CPUs the process may run on pass a
 * counter in one line back and forth (32 warm-up round trips, then the
 * median of 5 batches of 48; about 0.1 ms at 500 ns).  0 when the process
 * may run on one CPU only, a thread could not be made or pinned, or the
 * probe did not finish within 50 ms (a descheduled thread).
 *
 * Why: it is what a kernel pays when a thread reads rows another thread
 * wrote in the previous parallel region (GCN2's aggregation after its
 * feature transform), and on a VM it is not a constant.  On 2026-12-03 (AMD
 * EPYC Zen 5 VM, 2 vCPUs) it read 430-570 ns for hours, and for spells of
 * about a minute the same two threads passed a line much faster (the vCPUs
 * then on one core complex): GCN2 Cora's aggregation statement ran 7.3 us
 * in those spells and 24-26 us outside them, the whole kernel 62 us in its
 * campaign and 98 us re-measured (docs/simulator.md "Per-region ground
 * truth, and a machine whose cores move").  A tuning record keeps the
 * figure its kernel was measured under (database.h core_line_ns) and `loom
 * tune` warns when it moves (loom_measure_core_line_moved). */
double loom_measure_core_line_ns(void);

/* 1 when two core-to-core figures (loom_measure_core_line_ns) differ by
 * more than LOOM_CORE_LINE_MOVED times either way -- kernels measured
 * under the two are not comparable when their threads share data -- else
 * 0 (also when either is 0: not measured).  Pure function.  The factor:
 * the two states measured on 2026-12-03 (above) differ by more than 3x;
 * one state's probes stay within 1.3x of each other. */
#define LOOM_CORE_LINE_MOVED 2.5
int loom_measure_core_line_moved(double first_ns, double now_ns);

/* The stall classifier.  A timed run of wall_s seconds in which the
 * measuring process's `threads` threads used cpu_s CPU seconds together and
 * were preempted (involuntary context switches, getrusage ru_nivcsw)
 * `preemptions` times is *stalled* when all three hold:
 *   - preemptions >= 1: some thread was taken off its CPU for another
 *     process (a thread waiting at a barrier or sleeping gives its CPU up
 *     voluntarily, which does not count);
 *   - cpu_s < LOOM_STALL_CPU_FRACTION * threads * wall_s: the threads were
 *     on a CPU for less than 3/4 of the run on average;
 *   - threads * wall_s - cpu_s >= LOOM_STALL_MIN_OFFCPU_S: the thread time
 *     lost is at least 200 us (noise and clock cost are microseconds).
 * threads < 1 counts as 1.  Returns 1 (stalled) or 0.  Pure function.
 *
 * Source of the thresholds (issue 32, measured 2026-11-28 on a shared
 * 2-vCPU AMD EPYC VM, Linux 6.18, HZ=250, libgomp's default wait policy,
 * SpMM F=16 on data/cora_adj.mtx, 2 OpenMP threads): with the other core
 * busy every run read 7.6-8.0 ms (the serial nest: 10.7 us) with
 * cpu / (threads * wall) = 0.49-0.50 (one thread descheduled, its partner
 * spinning at the barrier) and 2 preemptions a run; runs of that kernel
 * that did not stall had no preemption.  3/4 is halfway between that 1/2
 * and the 1 of a run whose threads all stayed on a CPU.  The floor stays
 * well under the ~4-8 ms (one scheduler tick or slice) of a stall.  The
 * CPU time of a thread running on another CPU is only brought up to date
 * at a scheduler tick (4 ms here), so the fraction alone would misjudge
 * short runs; the preemption condition guards against that.
 * Not detected: threads that gave their CPU up voluntarily yet waited
 * for one (GOMP_SPINCOUNT low enough that the waiting thread sleeps), and a
 * kernel that itself sleeps or blocks (loom's kernels do neither). */
#define LOOM_STALL_CPU_FRACTION 0.75
#define LOOM_STALL_MIN_OFFCPU_S 2e-4
int loom_measure_stalled(double wall_s, double cpu_s, int threads, long preemptions);

/* The stall classifier on the run-queue delay, used where Linux reports it.
 * A timed run of wall_s seconds whose process's threads together waited
 * runq_s seconds on a run queue (runnable, not running: the second field of
 * /proc/self/task/TID/schedstat, summed over the threads) is *stalled* when
 *   - runq_s >= LOOM_STALL_RUNQ_FRACTION * wall_s, and
 *   - runq_s >= LOOM_STALL_MIN_OFFCPU_S (above).
 * Returns 1 (stalled) or 0.  Pure function.
 *
 * Why it replaced the getrusage rule where it can: that rule reads CPU time
 * missing from threads x wall as preemption, but a kernel with a serial
 * stage (a pack, an unfused chain's serial statement) leaves its OpenMP
 * workers asleep at a barrier, and one preemption of the main thread by a
 * kworker or the parent's 50 ms poll then flags the run.  On 2026-11-29 (AMD
 * EPYC Zen 4 VM, 2 cores, quiet, Linux 6.18) 13 of the first 16 candidates
 * of a 48-trial campaign on attention_causal N=4096 were flagged unreliable
 * by it, with 3 to 13 stalled runs each re-run at up to 2 s a run; a sleeping
 * thread accrues no run-queue delay, so this rule does not flag them.
 * The fraction: with the other CPU busy (measure.h above, issue 32) a
 * descheduled thread waits most of the run; one quarter of the run's wall
 * time spent waiting, summed over threads, is far above the microseconds
 * of a wake-up from a barrier and well below that.  The floor is shared. */
#define LOOM_STALL_RUNQ_FRACTION 0.25
int loom_measure_stalled_runq(double wall_s, double runq_s);

/* loom_now_seconds (the monotonic clock) lives in dsl/ir/util.h, included
 * above; it stays reachable through this header. */

#endif
