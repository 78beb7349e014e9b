/* loom: measuring a kernel in an isolated child process (see measure.h).
 *
 * Protocol: the child writes fixed-size records into a pipe (one per timed
 * run as soon as it finishes, so a later crash or hang still leaves the runs
 * made so far), then a DONE record, or a RETURN record when the kernel
 * returned non-zero.  The parent reads with poll() until DONE/RETURN, EOF,
 * the child's death or the time limit, and always reaps the child by pid. */
#include "measure.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

enum { REC_TIME = 1, REC_DONE = 2, REC_RETURN = 3 };

typedef struct rec {
    int32_t kind;
    int32_t code;  /* REC_RETURN: the kernel's return value */
    double value;  /* REC_TIME: seconds */
} rec;

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
    return o;
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

static void child_main(int fd, pid_t parent, loom_kernel_fn fn, loom_tensor_abi *args,
                       const loom_measure_opts *o)
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
    for (int i = 0; i < o->warmup; i++) {
        int rc = fn(args);
        if (rc != 0) {
            r.kind = REC_RETURN;
            r.code = rc;
            child_send(fd, &r);
            _exit(CHILD_RETURN);
        }
    }
    int count = 0;
    double total = 0;
    while (!((count >= o->min_repeats && total >= o->min_seconds) || count >= o->max_repeats)) {
        double t0 = loom_now_seconds();
        int rc = fn(args);
        double dt = loom_now_seconds() - t0;
        if (rc != 0) {
            r.kind = REC_RETURN;
            r.code = rc;
            child_send(fd, &r);
            _exit(CHILD_RETURN);
        }
        count++;
        total += dt;
        r.kind = REC_TIME;
        r.code = 0;
        r.value = dt;
        child_send(fd, &r);
    }
    r.kind = REC_DONE;
    r.code = count;
    r.value = total;
    child_send(fd, &r);
    _exit(CHILD_OK);
}

/* ---- parent --------------------------------------------------------------- */

typedef struct collect {
    double *times;
    int n, cap;
    int done;       /* DONE seen */
    int returned;   /* RETURN seen */
    int ret_code;
    int nomem;
    char buf[sizeof(rec) * 64];
    size_t have;    /* bytes of a partial record at the start of buf */
} collect;

static void consume(collect *c)
{
    size_t off = 0;
    while (c->have - off >= sizeof(rec)) {
        rec r;
        memcpy(&r, c->buf + off, sizeof r);
        off += sizeof r;
        if (r.kind == REC_TIME) {
            if (c->n == c->cap) {
                int nc = c->cap ? c->cap * 2 : 64;
                double *t = realloc(c->times, (size_t)nc * sizeof *t);
                if (!t) {
                    c->nomem = 1;
                    continue;
                }
                c->times = t;
                c->cap = nc;
            }
            c->times[c->n++] = r.value;
        } else if (r.kind == REC_DONE) {
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

/* The run count, min, max and median of the collected times (sorts them). */
static void summarize_times(collect *c, loom_measurement *out)
{
    out->repeats = c->n;
    if (c->n > 0) {
        double mn = c->times[0], mx = c->times[0];
        for (int i = 1; i < c->n; i++) {
            if (c->times[i] < mn)
                mn = c->times[i];
            if (c->times[i] > mx)
                mx = c->times[i];
        }
        out->min = mn;
        out->max = mx;
        qsort(c->times, (size_t)c->n, sizeof *c->times, cmp_double);
        out->latency = (c->n % 2) ? c->times[c->n / 2] : 0.5 * (c->times[c->n / 2 - 1] + c->times[c->n / 2]);
    }
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
        snprintf(out->message, sizeof out->message, "out of memory collecting the run times");
    } else if (c->n == 0) {
        out->status = LOOM_ERR_RUN;
        snprintf(out->message, sizeof out->message, "kernel made no timed runs");
    } else {
        out->status = LOOM_OK;
    }
}

loom_status loom_measure(loom_kernel_fn fn, loom_tensor_abi *args, const loom_measure_opts *opts,
                         loom_measurement *out, loom_error *err)
{
    if (!fn || !out)
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0,
                              "loom_measure: the kernel and the result must not be NULL");
    memset(out, 0, sizeof *out);

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

    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "cannot create a pipe to measure: %s",
                              strerror(errno));

    fflush(NULL); /* buffered output must not be written twice */
    pid_t parent = getpid();
    double t0 = loom_now_seconds();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "cannot fork to measure: %s",
                              strerror(e));
    }
    if (pid == 0) {
        close(pfd[0]);
        child_main(pfd[1], parent, fn, args, &o);
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

    summarize_times(&c, out);
    free(c.times);

    set_outcome(out, &c, status, timed_out, o.time_limit);
    return LOOM_OK;
}
