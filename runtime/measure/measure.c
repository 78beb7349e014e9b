/* loom: measuring a kernel in an isolated child process (see measure.h).
 *
 * Protocol: before forking, the parent maps a buffer shared with the child
 * (MAP_SHARED | MAP_ANONYMOUS).  The child writes each counted timed run's
 * wall and CPU seconds into it, then publishes the new count (a release
 * store), so a later crash or hang still leaves the runs made so far; no
 * system call per run reaches the parent.  At the end of the window the
 * child writes one DONE record into a pipe, or a RETURN record when the
 * kernel returned non-zero.  The parent reads with poll() until
 * DONE/RETURN, EOF, the child's death or the time limit, always reaps the
 * child by pid, and only then reads the shared buffer. */
#include "measure.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

enum { REC_DONE = 2, REC_RETURN = 3 };

typedef struct rec {
    int32_t kind;
    int32_t code;  /* REC_RETURN: the kernel's return value; REC_DONE: the count */
    double value;  /* REC_DONE: the counted runs' total seconds */
} rec;

/* The buffer shared with the child: a header, then wall[cap], cpu[cap],
 * runq[cap] and stalled[cap]. */
typedef struct shared_runs {
    int32_t count;           /* counted runs written so far (release store) */
    int32_t stalled;         /* stalled runs seen, re-run or counted */
    int32_t threads;         /* threads after the warm-up */
    int32_t cap;
    int32_t runq_probe;      /* 1: runq[] holds schedstat run-queue delays */
    int32_t pad_;
    double core_line_ns;     /* loom_measure_core_line_ns before the warm-up */
} shared_runs;

static double *runs_wall(shared_runs *sh) { return (double *)(sh + 1); }
static double *runs_cpu(shared_runs *sh) { return runs_wall(sh) + sh->cap; }
static double *runs_runq(shared_runs *sh) { return runs_cpu(sh) + sh->cap; }
static unsigned char *runs_stalled(shared_runs *sh) { return (unsigned char *)(runs_runq(sh) + sh->cap); }

static size_t runs_bytes(int cap)
{
    return sizeof(shared_runs) + (size_t)cap * (3 * sizeof(double) + 1);
}

/* Child exit codes (only reached when the pipe is unusable). */
enum { CHILD_OK = 0, CHILD_PIPE = 120, CHILD_RETURN = 121 };

loom_measure_opts loom_measure_defaults(void)
{
    loom_measure_opts o;
    o.min_seconds = 0.1;
    o.min_repeats = 3;
    o.max_repeats = 10000;
    o.warmup = 1;
    o.time_limit = 10.0;
    o.stall_retries = 10;
    return o;
}

int loom_measure_stalled_runq(double wall_s, double runq_s)
{
    return runq_s >= LOOM_STALL_RUNQ_FRACTION * wall_s && runq_s >= LOOM_STALL_MIN_OFFCPU_S;
}

int loom_measure_stalled(double wall_s, double cpu_s, int threads, long preemptions)
{
    if (threads < 1)
        threads = 1;
    double thread_time = (double)threads * wall_s;
    return preemptions >= 1 && cpu_s < LOOM_STALL_CPU_FRACTION * thread_time &&
           thread_time - cpu_s >= LOOM_STALL_MIN_OFFCPU_S;
}

static const char *signal_abbrev(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGALRM: return "SIGALRM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return NULL;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- child ---------------------------------------------------------------- */

static void child_send(int fd, const rec *r)
{
    const char *p = (const char *)r;
    size_t off = 0;
    while (off < sizeof *r) {
        ssize_t w = write(fd, p + off, sizeof *r - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            _exit(CHILD_PIPE); /* parent gone: nobody to report to */
        }
        off += (size_t)w;
    }
}

static void child_return(int fd, int rc)
{
    rec r;
    memset(&r, 0, sizeof r);
    r.kind = REC_RETURN;
    r.code = rc;
    child_send(fd, &r);
    _exit(CHILD_RETURN);
}

/* The threads of this process (Linux: /proc/self/status "Threads:"), or 1. */
static int count_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 1;
    char line[256];
    int n = 1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n >= 1 ? n : 1;
}

typedef struct timed_run {
    double wall, cpu; /* seconds */
    double runq;      /* seconds the threads waited on a run queue (runq_probe; 0 without) */
    long preemptions; /* involuntary context switches, all threads */
} timed_run;

/* The run-queue probe: one open /proc/self/task/TID/schedstat per thread of
 * the measuring process.  Linux's schedstat line is "on-CPU ns, run-queue
 * wait ns, timeslices" (Documentation/scheduler/sched-stats.rst, "/proc/<pid>/
 * schedstat"); the wait is what a descheduled thread accrues and what a
 * thread asleep at a barrier does not.  Opened after the warm-up, when the
 * kernel's OpenMP team exists. */
enum { RUNQ_MAX_THREADS = 64 };
typedef struct runq_probe {
    int fd[RUNQ_MAX_THREADS];
    int n; /* 0: no probe (not Linux, no schedstat, or sched_info off) */
} runq_probe;

/* The sums over the probed threads of the run-queue nanoseconds and the
 * timeslices run; -1 when a file cannot be read (pread at 0 re-reads a
 * seq_file). */
static int runq_read(const runq_probe *p, uint64_t *wait_ns, uint64_t *slices)
{
    *wait_ns = *slices = 0;
    for (int k = 0; k < p->n; k++) {
        char buf[128];
        ssize_t r = pread(p->fd[k], buf, sizeof buf - 1, 0);
        if (r <= 0)
            return -1;
        buf[r] = '\0';
        unsigned long long a, b, n;
        if (sscanf(buf, "%llu %llu %llu", &a, &b, &n) != 3)
            return -1;
        *wait_ns += b;
        *slices += n;
    }
    return 0;
}

static void runq_close(runq_probe *p)
{
    for (int k = 0; k < p->n; k++)
        close(p->fd[k]);
    p->n = 0;
}

/* Open the probe; p->n stays 0 unless every thread's file reads and the
 * accounting is live: the threads have run at least one timeslice (a Linux
 * whose sched_info accounting is off reports 0 timeslices and 0 wait, and a
 * zero wait would then hide every stall).  The on-CPU field is no test: it
 * is brought up to date only at a tick or a switch, so a fresh child that
 * ran its warm-up within one tick reads 0 there. */
static void runq_open(runq_probe *p)
{
    p->n = 0;
#ifdef __linux__
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (p->n == RUNQ_MAX_THREADS) { /* more threads than probes: a partial sum would hide stalls */
            runq_close(p);
            break;
        }
        char path[300]; /* d_name is at most 255 bytes */
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            runq_close(p);
            break;
        }
        p->fd[p->n++] = fd;
    }
    closedir(d);
    uint64_t wait, slices;
    if (p->n && (runq_read(p, &wait, &slices) || slices == 0))
        runq_close(p);
#endif
}

/* The process's CPU seconds (user + system, all threads) and involuntary
 * context switches so far: one getrusage call (about 4 us here, as much as
 * one CLOCK_PROCESS_CPUTIME_ID read; its CPU time is the same scheduler
 * figure, truncated to microseconds). */
static void usage_so_far(double *cpu, long *preemptions)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) != 0) {
        *cpu = 0;
        *preemptions = 0;
        return;
    }
    *cpu = (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    *preemptions = u.ru_nivcsw;
}

/* One timed run: the wall clock taken innermost, so getrusage's cost is
 * outside the kernel's figure. */
static int time_run(loom_kernel_fn fn, loom_tensor_abi *args, runq_probe *q, timed_run *t)
{
    double c0, c1;
    long p0, p1;
    uint64_t n0 = 0, w0 = 0, n1 = 0, w1 = 0;
    if (q->n && runq_read(q, &w0, &n0))
        runq_close(q); /* a thread ended: back to the getrusage rule */
    usage_so_far(&c0, &p0);
    double t0 = loom_now_seconds();
    int rc = fn(args);
    t->wall = loom_now_seconds() - t0;
    usage_so_far(&c1, &p1);
    if (q->n && runq_read(q, &w1, &n1))
        runq_close(q);
    t->cpu = c1 - c0;
    t->preemptions = p1 - p0;
    t->runq = q->n && w1 >= w0 ? 1e-9 * (double)(w1 - w0) : 0;
    return rc;
}

/* The window ends after max_repeats counted runs, or after min_repeats once
 * the counted runs that did not stall reach min_seconds (a stall's time is
 * not kernel time: counted, one 50 ms stall ended a window of a 20 us
 * kernel after 3 runs) or all timed runs reach WINDOW_STALL_FACTOR x
 * min_seconds (so a machine where every run stalls still ends the window). */
enum { WINDOW_STALL_FACTOR = 4 };

static int window_done(const loom_measure_opts *o, int count, double total, double window)
{
    if (count >= o->max_repeats)
        return 1;
    return count >= o->min_repeats &&
           (total >= o->min_seconds || window >= WINDOW_STALL_FACTOR * o->min_seconds);
}

static void child_main(int fd, pid_t parent, loom_kernel_fn fn, loom_tensor_abi *args,
                       const loom_measure_opts *o, shared_runs *sh)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent) /* the parent died before prctl took effect */
        _exit(CHILD_PIPE);

    /* A crash must kill the child with its signal, whatever handlers the
     * parent installed (sanitizers, test frameworks), so it is reported as
     * such; and no signal may be blocked. */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        signal(fatal[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    rec r;
    memset(&r, 0, sizeof r);
    double child_t0 = loom_now_seconds();
    /* before the kernel's first run: no OpenMP team spins beside the probe yet */
    sh->core_line_ns = loom_measure_core_line_ns();
    for (int i = 0; i < o->warmup; i++) {
        int rc = fn(args);
        if (rc != 0)
            child_return(fd, rc);
    }
    sh->threads = count_threads();
    runq_probe probe;
    runq_open(&probe);
    int count = 0, retries = 0;
    double total = 0;  /* counted runs that did not stall */
    double window = 0; /* every timed run */
    while (!window_done(o, count, total, window)) {
        timed_run t;
        int rc = time_run(fn, args, &probe, &t);
        if (rc != 0)
            child_return(fd, rc);
        window += t.wall;
        /* the run-queue rule while the probe lasts (it closes for good when a
         * thread's file stops reading); getrusage's rule otherwise */
        sh->runq_probe = probe.n > 0;
        int stalled = sh->runq_probe ? loom_measure_stalled_runq(t.wall, t.runq)
                                     : loom_measure_stalled(t.wall, t.cpu, sh->threads, t.preemptions);
        if (stalled) {
            sh->stalled++;
            /* Re-run a stalled run only while half of the time limit is left:
             * a slow kernel on a loaded machine (a 0.5 s default schedule
             * whose every run stalls) must end with its runs counted and
             * flagged, not be killed as a hang. */
            if (retries < o->stall_retries && loom_now_seconds() - child_t0 + t.wall < 0.5 * o->time_limit) {
                retries++;
                continue;
            }
        }
        runs_wall(sh)[count] = t.wall;
        runs_cpu(sh)[count] = t.cpu;
        runs_runq(sh)[count] = t.runq;
        runs_stalled(sh)[count] = (unsigned char)stalled;
        count++;
        __atomic_store_n(&sh->count, count, __ATOMIC_RELEASE);
        if (!stalled)
            total += t.wall;
    }
    r.kind = REC_DONE;
    r.code = count;
    r.value = total;
    child_send(fd, &r);
    _exit(CHILD_OK);
}

/* ---- parent --------------------------------------------------------------- */

typedef struct collect {
    int n;          /* counted runs (from the shared buffer) */
    int done;       /* DONE seen */
    int returned;   /* RETURN seen */
    int ret_code;
    int nomem;
    char buf[sizeof(rec) * 4];
    size_t have;    /* bytes of a partial record at the start of buf */
} collect;

static void consume(collect *c)
{
    size_t off = 0;
    while (c->have - off >= sizeof(rec)) {
        rec r;
        memcpy(&r, c->buf + off, sizeof r);
        off += sizeof r;
        if (r.kind == REC_DONE) {
            c->done = 1;
        } else if (r.kind == REC_RETURN) {
            c->returned = 1;
            c->ret_code = r.code;
        }
    }
    memmove(c->buf, c->buf + off, c->have - off);
    c->have -= off;
}

/* Read what is available (fd is non-blocking).  Returns 1 on EOF. */
static int drain(int fd, collect *c)
{
    for (;;) {
        ssize_t r = read(fd, c->buf + c->have, sizeof c->buf - c->have);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return 0; /* EAGAIN (or an error: treat as nothing more for now) */
        }
        if (r == 0)
            return 1;
        c->have += (size_t)r;
        consume(c);
    }
}

static pid_t wait_child(pid_t pid, int *status, int flags)
{
    pid_t w;
    do
        w = waitpid(pid, status, flags);
    while (w < 0 && errno == EINTR);
    return w;
}

/* The median of v[0..n) (sorts it); n >= 1. */
static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The run count, min, max and median of the counted runs, their median CPU
 * time and the stall counts, from the shared buffer (the child is gone). */
static void summarize_runs(shared_runs *sh, collect *c, loom_measurement *out)
{
    int n = __atomic_load_n(&sh->count, __ATOMIC_ACQUIRE);
    if (n < 0 || n > sh->cap)
        n = n < 0 ? 0 : sh->cap;
    c->n = n;
    out->repeats = n;
    out->threads = sh->threads;
    out->stalled_runs = sh->stalled;
    out->core_line_ns = sh->core_line_ns;
    if (n == 0)
        return;
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        c->nomem = 1;
        return;
    }
    const double *wall = runs_wall(sh), *cpu = runs_cpu(sh);
    out->min = out->max = wall[0];
    for (int i = 0; i < n; i++) {
        out->min = wall[i] < out->min ? wall[i] : out->min;
        out->max = wall[i] > out->max ? wall[i] : out->max;
        out->stalled_counted += runs_stalled(sh)[i];
        v[i] = wall[i];
    }
    out->latency = median_of(v, n);
    memcpy(v, cpu, (size_t)n * sizeof *v);
    out->cpu_s = median_of(v, n);
    out->runq_probe = sh->runq_probe;
    memcpy(v, runs_runq(sh), (size_t)n * sizeof *v);
    out->runq_s = sh->runq_probe ? median_of(v, n) : 0;
    free(v);
    out->unreliable = 2 * out->stalled_counted >= n;
}

/* The measurement's status and message, from how the child ended. */
static void set_outcome(loom_measurement *out, const collect *c, int status, int timed_out, double time_limit)
{
    if (timed_out) {
        out->status = LOOM_ERR_TIMEOUT;
        snprintf(out->message, sizeof out->message, "kernel exceeded the time limit of %g s",
                 time_limit);
    } else if (c->returned) {
        out->status = LOOM_ERR_RUN;
        out->exit_code = c->ret_code;
        snprintf(out->message, sizeof out->message, "kernel returned %d", c->ret_code);
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *ab = signal_abbrev(sig);
        const char *desc = strsignal(sig);
        out->status = LOOM_ERR_RUN;
        out->signal = sig;
        if (ab)
            snprintf(out->message, sizeof out->message, "kernel crashed: %s (%s)", ab,
                     desc ? desc : "unknown signal");
        else
            snprintf(out->message, sizeof out->message, "kernel crashed: signal %d (%s)", sig,
                     desc ? desc : "unknown signal");
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != CHILD_OK) {
        out->status = LOOM_ERR_RUN;
        snprintf(out->message, sizeof out->message,
                 "kernel exited the measuring process with status %d", WEXITSTATUS(status));
    } else if (!c->done) {
        out->status = LOOM_ERR_RUN;
        snprintf(out->message, sizeof out->message,
                 "the measuring process ended without reporting its runs");
    } else if (c->nomem) {
        out->status = LOOM_ERR_RUN;
        snprintf(out->message, sizeof out->message, "out of memory summarizing the run times");
    } else if (c->n == 0) {
        out->status = LOOM_ERR_RUN;
        snprintf(out->message, sizeof out->message, "kernel made no timed runs");
    } else {
        out->status = LOOM_OK;
        if (out->unreliable)
            snprintf(out->message, sizeof out->message,
                     LOOM_MEASURE_UNRELIABLE ": %d of %d counted runs stalled (%d stalled in all; threads "
                     "descheduled: the machine is too loaded to measure this kernel)",
                     out->stalled_counted, out->repeats, out->stalled_runs);
    }
}

/* opts (NULL: the defaults) with out-of-range values brought into range. */
static loom_measure_opts normalized_opts(const loom_measure_opts *opts)
{
    loom_measure_opts o = opts ? *opts : loom_measure_defaults();
    if (!(o.min_seconds >= 0))
        o.min_seconds = 0;
    if (o.max_repeats < 1)
        o.max_repeats = 1;
    if (o.min_repeats < 1)
        o.min_repeats = 1;
    if (o.min_repeats > o.max_repeats)
        o.min_repeats = o.max_repeats;
    if (o.warmup < 0)
        o.warmup = 0;
    if (!(o.time_limit > 0))
        o.time_limit = loom_measure_defaults().time_limit;
    if (o.stall_retries < 0)
        o.stall_retries = 0;
    return o;
}

loom_status loom_measure(loom_kernel_fn fn, loom_tensor_abi *args, const loom_measure_opts *opts,
                         loom_measurement *out, loom_error *err)
{
    if (!fn || !out)
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0,
                              "loom_measure: the kernel and the result must not be NULL");
    memset(out, 0, sizeof *out);

    loom_measure_opts o = normalized_opts(opts);
    int cap = o.max_repeats;
    size_t sh_bytes = runs_bytes(cap);
    shared_runs *sh = mmap(NULL, sh_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0,
                              "cannot map %zu bytes shared with the measuring process: %s", sh_bytes,
                              strerror(errno));
    sh->cap = cap; /* the rest of the fresh mapping is zero */

    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        int e = errno;
        munmap(sh, sh_bytes);
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "cannot create a pipe to measure: %s",
                              strerror(e));
    }

    fflush(NULL); /* buffered output must not be written twice */
    pid_t parent = getpid();
    double t0 = loom_now_seconds();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        munmap(sh, sh_bytes);
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "cannot fork to measure: %s",
                              strerror(e));
    }
    if (pid == 0) {
        close(pfd[0]);
        child_main(pfd[1], parent, fn, args, &o, sh);
        _exit(CHILD_OK); /* not reached */
    }
    close(pfd[1]);
    int fd = pfd[0];
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);

    collect c;
    memset(&c, 0, sizeof c);
    int status = 0, reaped = 0, timed_out = 0;
    double deadline = t0 + o.time_limit;

    for (;;) {
        if (drain(fd, &c) || c.done || c.returned)
            break;
        double left = deadline - loom_now_seconds();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        /* Wake at least every 50 ms to notice a dead child even if some other
         * process inherited the pipe's write end. */
        int ms = left > 0.05 ? 50 : (int)(left * 1000) + 1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, ms);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr == 0 && wait_child(pid, &status, WNOHANG) == pid) {
            reaped = 1;
            drain(fd, &c);
            break;
        }
    }

    /* The child normally exits right after its last record; one that
     * lingers (e.g. closed the pipe and hung) is still bound by the limit.
     * A pidfd (Linux >= 5.3) becomes readable the moment the child exits, so
     * the wait ends then; without one, naps of growing length (which
     * overshot a child's exit by up to half the wait: the property tests
     * measure thousands of short kernels). */
    int pidfd = -1;
#ifdef SYS_pidfd_open
    if (!reaped && !timed_out)
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    long nap_ns = 100000;
    while (!reaped && !timed_out) {
        pid_t w = wait_child(pid, &status, WNOHANG);
        if (w == pid || w < 0) {
            reaped = 1;
            if (w < 0)
                status = 0;
            break;
        }
        double left = deadline - loom_now_seconds();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        if (pidfd >= 0) {
            struct pollfd p = {.fd = pidfd, .events = POLLIN};
            if (poll(&p, 1, left > 1 ? 1000 : (int)(left * 1000) + 1) < 0 && errno != EINTR) {
                close(pidfd); /* nap from now on */
                pidfd = -1;
            }
            continue;
        }
        struct timespec nap = {0, nap_ns};
        nanosleep(&nap, NULL);
        if (nap_ns < 10000000)
            nap_ns *= 2;
    }
    if (pidfd >= 0)
        close(pidfd);
    if (timed_out && !reaped) {
        kill(pid, SIGKILL);
        if (wait_child(pid, &status, 0) != pid)
            status = 0;
        reaped = 1;
    }
    drain(fd, &c);
    close(fd);
    out->total_seconds = loom_now_seconds() - t0;

    summarize_runs(sh, &c, out);
    munmap(sh, sh_bytes);

    set_outcome(out, &c, status, timed_out, o.time_limit);
    return LOOM_OK;
}
