/* loom-mpi's measurement worker (mpi_runner.h loom_mpi_worker_serve): hello,
 * then one candidate at a time, on the task its message names, in a forked
 * child with a time limit. */
#include <mpi.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../search/database/database.h"
#include "mpi_proto.h"
#include "mpi_runner.h"

typedef struct worker {
    const loom_tune_opts *o;
    const loom_mpi_config *cfg; /* the tasks */
    loom_target t;
    loom_reference **ref;    /* per task (CPU: its reference outputs) */
    loom_runner **runner;    /* per task */
    int lock_fd;             /* CPU: the host's measurement lock (one measurement at a time per host) */
    double last_heard;       /* loom_now_seconds() of rank 0's last message */
    pid_t child;             /* the measuring process (0: none yet, or it died) */
    int to_child, from_child;
    unsigned sleep_us;       /* the idle poll's current sleep (backs off to 2 ms) */
} worker;

/* Every task's reference (CPU) and runner, made before the measuring
 * process is forked so that it has them all. */
static loom_status setup_tasks(worker *w, loom_error *e)
{
    int n = w->cfg->ntasks;
    w->ref = calloc((size_t)(n > 0 ? n : 1), sizeof *w->ref);
    w->runner = calloc((size_t)(n > 0 ? n : 1), sizeof *w->runner);
    if (!w->ref || !w->runner)
        return loom_error_set(e, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = LOOM_OK;
    for (int k = 0; k < n && !st; k++) {
        loom_dataset *ds = w->cfg->tasks[k].ds;
        if (w->t.kind == LOOM_TARGET_CPU)
            st = loom_reference_run_cached(ds, NULL, NULL, &w->ref[k], e);
        if (!st)
            st = loom_runner_new(&w->t, ds, w->ref[k], &w->o->run, &w->runner[k], e);
    }
    return st;
}

/* The target, references and runners; the hello (*h, then the tasks'
 * ids: hlen bytes in all, malloc'd) that says so. */
static void setup(worker *w, loom_mpi_hello **hp, size_t *hlen)
{
    int n = w->cfg->ntasks;
    *hlen = sizeof **hp + sizeof(loom_mpi_task_id) * (size_t)n;
    loom_mpi_hello *h = *hp = calloc(1, *hlen);
    if (!h) {
        fprintf(stderr, "loom-mpi worker: out of memory\n");
        exit(1);
    }
    gethostname(h->host, sizeof h->host - 1);
    h->pid = (int)getpid();
    h->ntasks = n;
    loom_mpi_task_id *id = (loom_mpi_task_id *)(h + 1);
    for (int k = 0; k < n; k++)
        id[k] = (loom_mpi_task_id){w->cfg->tasks[k].whash, w->cfg->tasks[k].data_fp};
    loom_error e;
    loom_error_clear(&e);
    loom_status st = LOOM_OK;
    if (w->o->target_handle)
        w->t = *w->o->target_handle;
    else
        st = loom_target_open(w->o->target ? w->o->target : "cpu", w->o->run.build.cc, w->o->run.build.cflags,
                              &w->t, &e);
    if (!st)
        st = setup_tasks(w, &e);
    snprintf(h->target_fp, sizeof h->target_fp, "%s", w->t.fingerprint);
    h->status = st;
    snprintf(h->message, sizeof h->message, "%.500s", st ? e.msg : "");
    w->lock_fd = -1;
    if (!st && w->t.kind == LOOM_TARGET_CPU) {
        const char *dir = getenv("LOOM_CACHE");
        char path[1100];
        snprintf(path, sizeof path, "%s/loom-mpi-measure.lock", dir && *dir ? dir : "/tmp");
        w->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    }
}

/* The task whose workload hash and data fingerprint are id's: its index, -1 if none. */
static int find_task(const worker *w, loom_mpi_task_id id)
{
    for (int k = 0; k < w->cfg->ntasks; k++)
        if (w->cfg->tasks[k].whash == id.whash && w->cfg->tasks[k].data_fp == id.data_fp)
            return k;
    return -1;
}

/* Replay the trace on task k's program and run it (in the measuring process) into *r. */
static void child_measure(worker *w, int k, const char *json, loom_runner_result *r)
{
    memset(r, 0, sizeof *r);
    loom_error e;
    loom_error_clear(&e);
    loom_trace *t = NULL;
    loom_schedule *s = malloc(sizeof *s);
    loom_status st = s ? loom_trace_from_json(json, NULL, &t, &e) : LOOM_ERR_NOMEM;
    if (!st)
        st = loom_schedule_init(s, w->cfg->tasks[k].prog, NULL, &e);
    if (!st)
        st = loom_trace_replay(t, s, NULL, &e);
    if (!st) {
        loom_measure_candidate c = {s, json};
        loom_runner_opts ro = {.jobs = 1, .chunk = 1};
        st = loom_runner_run(w->runner[k], &c, 1, &ro, r, NULL, &e);
    }
    if (st) {
        r->status = st;
        r->latency_s = INFINITY;
        snprintf(r->message, sizeof r->message, "on the worker: %.1000s", e.msg);
    }
    loom_trace_free(t);
    free(s);
}

static int io_full(int fd, void *buf, size_t n, int writing)
{
    size_t off = 0;
    while (off < n) {
        ssize_t k = writing ? write(fd, (char *)buf + off, n - off) : read(fd, (char *)buf + off, n - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        off += (size_t)k;
    }
    return 0;
}

/* The measuring process: candidates (task index, length, trace JSON) in,
 * results out, until its input closes. */
static void child_loop(worker *w, int in, int out)
{
    for (;;) {
        uint32_t len = 0;
        int32_t k = 0;
        if (io_full(in, &k, sizeof k, 0) || io_full(in, &len, sizeof len, 0))
            _exit(0);
        if (k < 0 || k >= w->cfg->ntasks)
            _exit(1);
        char *json = malloc((size_t)len + 1);
        if (!json || io_full(in, json, len, 0))
            _exit(1);
        json[len] = '\0';
        loom_runner_result r;
        child_measure(w, k, json, &r);
        free(json);
        if (io_full(out, &r, sizeof r, 1))
            _exit(1);
    }
}

/* Fork the worker's measuring process (it measures candidate after
 * candidate; a fork per candidate cost ~40 ms on a loaded 2-core host).
 * -1 when it could not start. */
static int start_child(worker *w)
{
    int a[2], b[2];
    if (pipe(a))
        return -1;
    if (pipe(b)) {
        close(a[0]), close(a[1]);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(a[1]), close(b[0]);
        child_loop(w, a[0], b[1]);
    }
    close(a[0]), close(b[1]);
    if (pid < 0) {
        close(a[1]), close(b[0]);
        return -1;
    }
    w->child = pid;
    w->to_child = a[1];
    w->from_child = b[0];
    return 0;
}

/* End the measuring process (killed first when kill_it); its wait status. */
static int stop_child(worker *w, int kill_it)
{
    int ws = 0;
    if (w->child <= 0)
        return 0;
    close(w->to_child);
    if (kill_it)
        kill(w->child, SIGKILL);
    waitpid(w->child, &ws, 0);
    close(w->from_child);
    w->child = 0;
    return ws;
}

/* Receive every PING rank 0 sent (it is alive). */
static void drain_pings(worker *w)
{
    int flag = 1;
    while (flag) {
        MPI_Status s;
        if (MPI_Iprobe(0, LOOM_MPI_PING, MPI_COMM_WORLD, &flag, &s) != MPI_SUCCESS)
            return;
        if (flag) {
            char b;
            MPI_Recv(&b, 1, MPI_BYTE, 0, LOOM_MPI_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            w->last_heard = loom_now_seconds();
        }
    }
}

/* Wait for the measuring process's result: beats every second, the limit
 * counted from the candidate's start there.  A process that dies or
 * overruns is ended (the next candidate starts a new one). */
static void wait_child(worker *w, double t0, const loom_mpi_work_head *h, loom_mpi_result *out)
{
    double beat = t0;
    size_t got = 0;
    int timed_out = 0, dead = 0;
    while (got < sizeof out->r) {
        struct pollfd p = {w->from_child, POLLIN, 0};
        if (poll(&p, 1, 100) > 0) {
            ssize_t k = read(w->from_child, (char *)&out->r + got, sizeof out->r - got);
            if (k > 0)
                got += (size_t)k;
            else if (k == 0 || errno != EINTR) {
                dead = 1;
                break;
            }
            continue;
        }
        double now = loom_now_seconds();
        if (now - beat >= 1) {
            MPI_Send(&h->id, sizeof h->id, MPI_BYTE, 0, LOOM_MPI_BEAT, MPI_COMM_WORLD);
            beat = now;
        }
        drain_pings(w);
        if (now - t0 > h->limit_s) {
            timed_out = 1;
            break;
        }
    }
    out->worker_s = loom_now_seconds() - t0;
    if (!dead && !timed_out && out->worker_s <= h->limit_s)
        return;
    int ws = stop_child(w, !dead);
    memset(&out->r, 0, sizeof out->r);
    out->r.latency_s = INFINITY;
    out->r.status = dead ? LOOM_ERR_RUN : LOOM_ERR_TIMEOUT;
    if (!dead)
        snprintf(out->r.message, sizeof out->r.message,
                 "the worker's time limit of %g s (counted from the start on the worker) passed", h->limit_s);
    else
        snprintf(out->r.message, sizeof out->r.message, "the worker's measuring process died (%s %d)",
                 WIFSIGNALED(ws) ? "signal" : "exit", WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
}

/* Measure one candidate (the host's lock held on a CPU) into out. */
static void measure(worker *w, const loom_mpi_work_head *h, const char *json, loom_mpi_result *out)
{
    memset(out, 0, sizeof *out);
    out->id = h->id;
    if (w->lock_fd >= 0)
        while (flock(w->lock_fd, LOCK_EX) && errno == EINTR)
            ;
    double t0 = loom_now_seconds();
    uint32_t len = (uint32_t)strlen(json);
    int32_t k = find_task(w, h->task);
    if (k < 0) {
        out->r.status = LOOM_ERR_INVALID;
        out->r.latency_s = INFINITY;
        snprintf(out->r.message, sizeof out->r.message,
                 "on the worker: no task with workload hash %016llx and data fingerprint %016llx",
                 (unsigned long long)h->task.whash, (unsigned long long)h->task.data_fp);
    } else if (w->child <= 0 && start_child(w)) {
        out->r.status = LOOM_ERR_RUN;
        out->r.latency_s = INFINITY;
        snprintf(out->r.message, sizeof out->r.message, "the worker could not fork: %s", strerror(errno));
    } else if (io_full(w->to_child, &k, sizeof k, 1) || io_full(w->to_child, &len, sizeof len, 1) ||
               io_full(w->to_child, (void *)json, len, 1)) {
        int ws = stop_child(w, 1);
        out->r.status = LOOM_ERR_RUN;
        out->r.latency_s = INFINITY;
        snprintf(out->r.message, sizeof out->r.message, "the worker's measuring process died (status %d)", ws);
    } else {
        wait_child(w, t0, h, out);
    }
    if (w->lock_fd >= 0)
        flock(w->lock_fd, LOCK_UN);
}

/* Send n bytes to rank 0 with tag.  Not MPI_Send: a result (or a model's
 * hello) is larger than Open MPI's eager limit, and a rendezvous with a
 * dead rank 0 would never return; when rank 0 takes nothing and says
 * nothing for the timeout, the worker exits. */
static void send_to_0(worker *w, const void *buf, int n, int tag, const char *what)
{
    MPI_Request req;
    MPI_Isend(buf, n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &req);
    for (int done = 0; !done;) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            break;
        drain_pings(w);
        if (!done && loom_now_seconds() - w->last_heard > w->cfg->timeout_s) {
            fprintf(stderr, "loom-mpi worker: rank 0 took no %s and said nothing for %g s: presumed dead, "
                    "exiting\n", what, w->cfg->timeout_s);
            fflush(NULL);
            _exit(1); /* no MPI_Finalize: it would wait for the dead rank */
        }
        if (!done)
            usleep(200);
    }
    w->last_heard = loom_now_seconds();
}

/* Take the WORK message of size n, measure it and send the result. */
static void serve_work(worker *w, int n)
{
    char *buf = malloc((size_t)n + 1);
    if (!buf) {
        fprintf(stderr, "loom-mpi worker: out of memory\n");
        exit(1);
    }
    MPI_Recv(buf, n, MPI_BYTE, 0, LOOM_MPI_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    buf[n] = '\0';
    loom_mpi_work_head h;
    memcpy(&h, buf, sizeof h);
    loom_mpi_result res;
    measure(w, &h, buf + sizeof h, &res);
    free(buf);
    send_to_0(w, &res, sizeof res, LOOM_MPI_RESULT, "result");
}

/* The next message from rank 0: its tag and size (-1: rank 0 silent for the timeout). */
static int next_message(worker *w, int *n)
{
    for (;;) {
        int flag = 0;
        MPI_Status s;
        if (MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &s) != MPI_SUCCESS)
            return -1;
        if (flag) {
            w->sleep_us = 20;
            w->last_heard = loom_now_seconds();
            MPI_Get_count(&s, MPI_BYTE, n);
            return s.MPI_TAG;
        }
        if (loom_now_seconds() - w->last_heard > w->cfg->timeout_s)
            return -1;
        usleep(w->sleep_us);
        w->sleep_us = w->sleep_us < 2000 ? w->sleep_us * 2 : 2000;
    }
}

static int serve(worker *w, int rank)
{
    for (;;) {
        int n = 0, tag = next_message(w, &n);
        if (tag < 0) {
            fprintf(stderr, "loom-mpi worker %d: nothing from rank 0 for %g s: presumed dead, exiting\n", rank,
                    w->cfg->timeout_s);
            return 3;
        }
        if (tag == LOOM_MPI_WORK) {
            serve_work(w, n);
            continue;
        }
        char *b = calloc(1, (size_t)(n > 0 ? n : 1));
        MPI_Recv(b, n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (tag == LOOM_MPI_WELCOME && !((loom_mpi_welcome *)b)->accepted) /* stay, idle, until STOP */
            fprintf(stderr, "%s\n", ((loom_mpi_welcome *)b)->message);
        int stop = tag == LOOM_MPI_STOP, dead_peer = stop && b[0];
        free(b);
        if (stop)
            return dead_peer ? 2 : 0;
    }
}

int loom_mpi_worker_serve(const loom_tune_opts *opts, const loom_mpi_config *cfg)
{
    worker w = {.o = opts, .cfg = cfg, .sleep_us = 20};
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    loom_mpi_hello *h = NULL;
    size_t hlen = 0;
    setup(&w, &h, &hlen);
    w.last_heard = loom_now_seconds();
    send_to_0(&w, h, (int)hlen, LOOM_MPI_HELLO, "hello");
    signal(SIGPIPE, SIG_IGN); /* a measuring process that died: write fails, EPIPE */
    int rc = h->status ? 1 : serve(&w, rank);
    free(h);
    stop_child(&w, 0);
    for (int k = 0; k < cfg->ntasks; k++) {
        loom_runner_free(w.runner ? w.runner[k] : NULL);
        if (w.ref && w.ref[k])
            loom_reference_free(w.ref[k]);
    }
    free(w.runner), free(w.ref);
    if (w.lock_fd >= 0)
        close(w.lock_fd);
    return rc;
}

void loom_mpi_worker_failed(const char *why)
{
    loom_mpi_hello h;
    memset(&h, 0, sizeof h);
    gethostname(h.host, sizeof h.host - 1);
    h.pid = (int)getpid();
    h.status = LOOM_ERR_INVALID;
    snprintf(h.message, sizeof h.message, "%s", why);
    MPI_Send(&h, sizeof h, MPI_BYTE, 0, LOOM_MPI_HELLO, MPI_COMM_WORLD);
}
