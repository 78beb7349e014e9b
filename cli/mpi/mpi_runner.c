/* loom-mpi's runner on rank 0 (mpi_runner.h): the MPI implementation of
 * runtime/runner/runner.h.  Candidates go to idle workers one at a time
 * (a worker asks by sending its hello or its last result), results come
 * back in any order and are reported in candidate order. */
#include <mpi.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../search/database/database.h"
#include "mpi_proto.h"
#include "mpi_runner.h"

enum { W_PENDING, W_IDLE, W_BUSY, W_DEAD, W_REFUSED };

/* The seconds rank 0 waits for a worker's hello before calling it dead
 * (a CPU worker computes the reference outputs first). */
#define STARTUP_S 300.0

/* Workers declared dead (loom_mpi_dead_workers); 1 once a runner was made. */
static int dead_workers, runner_made;

typedef struct wstate {
    int state;
    MPI_Request req;         /* the WORK send in flight (MPI_REQUEST_NULL: none) */
    char *buf;               /* its buffer */
    char host[64];
    char target_fp[128];
    int pid;
    int cand;                /* the candidate it measures (W_BUSY) */
    int64_t id;              /* its dispatch id */
    double last_heard;       /* loom_now_seconds() of its last message (or of the dispatch) */
    double sent_at;          /* loom_now_seconds() of the dispatch */
} wstate;

typedef struct mpi_state {
    const loom_mpi_config *cfg;
    loom_run_opts run;
    loom_runner *local;      /* rank 0's own runner (a batch without traces, or no worker left) */
    int size;                /* ranks; w[1..size) are the workers */
    wstate *w;
    char host[64];
    char data_fp[20];
    double started;
    int64_t next_id;
    pthread_t ping;
    int ping_on, ping_stop;
    pthread_mutex_t mu;      /* w[].state between the run and the ping thread */
    int said_alone;          /* "no worker left" reported */
    long served;             /* results from workers */
    double worker_s, round_trip_s; /* summed: on the worker (child start to result), dispatch to result */
} mpi_state;

/* One loom_runner_run call. */
typedef struct call {
    const loom_measure_candidate *cands;
    const loom_runner_opts *o;
    loom_runner_result *results;
    int n;
    int *queue, nq;          /* candidates waiting for a worker (a stack: requeued ones go first) */
    unsigned char *done;
    int reported;            /* candidates [0, reported) were reported or given up */
    int busy;                /* workers measuring one of this call's candidates */
} call;

static FILE *logf_(mpi_state *s)
{
    return s->cfg->log ? s->cfg->log : stderr;
}

static void set_state(mpi_state *s, int rank, int state)
{
    pthread_mutex_lock(&s->mu);
    s->w[rank].state = state;
    pthread_mutex_unlock(&s->mu);
}

/* Rank 0 is alive: one byte to every worker that may listen, every second. */
static void *ping_main(void *arg)
{
    mpi_state *s = arg;
    char b = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int stop = s->ping_stop;
        for (int r = 1; r < s->size && !stop; r++)
            if (s->w[r].state != W_DEAD) /* refused ones too: they wait for STOP */
                MPI_Send(&b, 1, MPI_BYTE, r, LOOM_MPI_PING, MPI_COMM_WORLD);
        pthread_mutex_unlock(&s->mu);
        if (stop)
            return NULL;
        for (int k = 0; k < 10 && !__atomic_load_n(&s->ping_stop, __ATOMIC_RELAXED); k++)
            usleep(100000);
    }
}

/* ---- messages from the workers ---------------------------------------------------------- */

static void hello(mpi_state *s, int src, const loom_mpi_hello *h)
{
    wstate *w = &s->w[src];
    snprintf(w->host, sizeof w->host, "%s", h->host);
    snprintf(w->target_fp, sizeof w->target_fp, "%s", h->target_fp);
    w->pid = h->pid;
    loom_mpi_welcome wel;
    memset(&wel, 0, sizeof wel);
    if (h->status)
        snprintf(wel.message, sizeof wel.message, "loom-mpi: rank %d on host %s could not start: %s", src, h->host,
                 h->message);
    else if (h->whash != s->cfg->whash)
        snprintf(wel.message, sizeof wel.message,
                 "loom-mpi: rank %d on host %s refused: its workload (hash %016llx) is not rank 0's (%016llx on %s)",
                 src, h->host, (unsigned long long)h->whash, (unsigned long long)s->cfg->whash, s->host);
    else if (strcmp(h->data_fp, s->data_fp))
        snprintf(wel.message, sizeof wel.message,
                 "loom-mpi: rank %d on host %s refused: its data fingerprint %s differs from rank 0's %s (on %s); "
                 "every rank must load the same data",
                 src, h->host, h->data_fp, s->data_fp, s->host);
    else if (strcmp(h->target_fp, s->local->target->fingerprint) && !s->cfg->allow_mixed_targets)
        snprintf(wel.message, sizeof wel.message,
                 "loom-mpi: rank %d on host %s refused: its target fingerprint %s differs from rank 0's %s (on %s); "
                 "--allow-mixed-targets accepts it",
                 src, h->host, h->target_fp, s->local->target->fingerprint, s->host);
    else
        wel.accepted = 1;
    if (!h->status) /* a small message: Open MPI sends it eagerly */
        MPI_Send(&wel, sizeof wel, MPI_BYTE, src, LOOM_MPI_WELCOME, MPI_COMM_WORLD);
    if (!wel.accepted) {
        fprintf(logf_(s), "%s\n", wel.message);
        set_state(s, src, W_REFUSED);
        return;
    }
    fprintf(logf_(s), "loom-mpi: rank %d on host %s (pid %d) joined, target %s\n", src, h->host, h->pid,
            h->target_fp);
    set_state(s, src, W_IDLE);
}

static void result(mpi_state *s, call *c, int src, const loom_mpi_result *m)
{
    wstate *w = &s->w[src];
    if (w->state != W_BUSY || w->id != m->id) {
        fprintf(logf_(s), "loom-mpi: a late result from rank %d on host %s, ignored (its candidate was given to "
                "another worker)\n", src, w->host);
        return;
    }
    loom_runner_result *out = &c->results[w->cand];
    *out = m->r;
    if (strcmp(w->target_fp, s->local->target->fingerprint)) {
        size_t l = strlen(out->message);
        snprintf(out->message + l, sizeof out->message - l, "%smeasured on %s, target %s", l ? "; " : "", w->host,
                 w->target_fp);
    }
    c->done[w->cand] = 1;
    c->busy--;
    s->served++;
    s->worker_s += m->worker_s;
    s->round_trip_s += loom_now_seconds() - w->sent_at;
    MPI_Wait(&w->req, MPI_STATUS_IGNORE); /* received, since it answered */
    free(w->buf);
    w->buf = NULL;
    set_state(s, src, W_IDLE);
}

/* Handle one message if one is there: 1 if there was. */
static int receive(mpi_state *s, call *c)
{
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS || !flag)
        return 0;
    int n = 0, src = st.MPI_SOURCE;
    MPI_Get_count(&st, MPI_BYTE, &n);
    char *b = malloc((size_t)(n > 0 ? n : 1));
    if (!b)
        return 0;
    MPI_Recv(b, n, MPI_BYTE, src, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (s->w[src].state != W_DEAD && s->w[src].state != W_REFUSED)
        s->w[src].last_heard = loom_now_seconds();
    if (st.MPI_TAG == LOOM_MPI_HELLO && n == (int)sizeof(loom_mpi_hello) && s->w[src].state == W_PENDING)
        hello(s, src, (const loom_mpi_hello *)b);
    else if (st.MPI_TAG == LOOM_MPI_RESULT && n == (int)sizeof(loom_mpi_result) && c)
        result(s, c, src, (const loom_mpi_result *)b);
    free(b);
    return 1;
}

/* ---- dispatch and failures ----------------------------------------------------------------- */

static int send_work(mpi_state *s, call *c, int rank, int k)
{
    size_t len = strlen(c->cands[k].trace_json) + 1;
    char *buf = malloc(sizeof(loom_mpi_work_head) + len);
    if (!buf)
        return 0;
    loom_mpi_work_head h = {.id = ++s->next_id, .limit_s = s->cfg->limit_s};
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, c->cands[k].trace_json, len);
    /* not MPI_Send: a trace may be above the eager limit, and a rendezvous with a dead worker never ends */
    wstate *w = &s->w[rank];
    if (MPI_Isend(buf, (int)(sizeof h + len), MPI_BYTE, rank, LOOM_MPI_WORK, MPI_COMM_WORLD, &w->req) !=
        MPI_SUCCESS) {
        free(buf);
        return 0;
    }
    w->buf = buf;
    w->cand = k;
    w->id = h.id;
    w->last_heard = w->sent_at = loom_now_seconds();
    set_state(s, rank, W_BUSY);
    c->busy++;
    return 1;
}

static void dispatch(mpi_state *s, call *c)
{
    for (int r = 1; r < s->size && c->nq > 0; r++)
        if (s->w[r].state == W_IDLE) {
            int k = c->queue[c->nq - 1];
            if (send_work(s, c, r, k))
                c->nq--;
            else
                set_state(s, r, W_DEAD);
        }
}

/* Busy workers silent for the timeout are dead: their candidates go back
 * to the queue.  Pending ones that never said hello are dead too. */
static void find_dead(mpi_state *s, call *c)
{
    double now = loom_now_seconds();
    for (int r = 1; r < s->size; r++) {
        wstate *w = &s->w[r];
        if (w->state == W_BUSY && now - w->last_heard > s->cfg->timeout_s) {
            fprintf(logf_(s),
                    "loom-mpi: rank %d on host %s (pid %d) silent for %.0f s while measuring: declared dead; its "
                    "candidate goes back to the queue\n",
                    r, w->host, w->pid, now - w->last_heard);
            set_state(s, r, W_DEAD);
            dead_workers++;
            c->queue[c->nq++] = w->cand;
            c->busy--;
            MPI_Request_free(&w->req); /* its buffer stays allocated: the send may still read it */
            w->buf = NULL;
        } else if (w->state == W_PENDING && now - s->started > STARTUP_S) {
            fprintf(logf_(s), "loom-mpi: rank %d said nothing for %.0f s after the start: declared dead\n", r,
                    STARTUP_S);
            set_state(s, r, W_DEAD);
            dead_workers++;
        }
    }
}

int loom_mpi_dead_workers(void)
{
    return dead_workers;
}

void loom_mpi_release_workers(void)
{
    int size = 1;
    char b = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int k = 1; k < size && !runner_made; k++)
        MPI_Send(&b, 1, MPI_BYTE, k, LOOM_MPI_STOP, MPI_COMM_WORLD);
}

static int live_workers(mpi_state *s)
{
    int n = 0;
    for (int r = 1; r < s->size; r++)
        n += s->w[r].state == W_PENDING || s->w[r].state == W_IDLE || s->w[r].state == W_BUSY;
    return n;
}

/* No worker left: rank 0 measures the queue itself. */
static void run_queue_here(mpi_state *s, call *c)
{
    if (!s->said_alone && s->size > 1)
        fprintf(logf_(s), "loom-mpi: no worker left: rank 0 measures the rest on host %s\n", s->host);
    s->said_alone = 1;
    while (c->nq > 0) {
        int k = c->queue[--c->nq];
        loom_runner_opts ro = {.jobs = 1, .chunk = 1};
        loom_error e;
        loom_error_clear(&e);
        loom_status st = loom_runner_run(s->local, &c->cands[k], 1, &ro, &c->results[k], NULL, &e);
        if (st) {
            c->results[k].status = st;
            c->results[k].latency_s = INFINITY;
            snprintf(c->results[k].message, sizeof c->results[k].message, "%s", e.msg);
        }
        c->done[k] = 1;
    }
}

static void not_run(loom_runner_result *out)
{
    memset(out, 0, sizeof *out);
    out->status = LOOM_ERR_RUN;
    out->latency_s = INFINITY;
    snprintf(out->message, sizeof out->message, "not measured: the batch was stopped");
}

/* Report finished candidates in order; once stopped, the rest are not run. */
static void report(call *c)
{
    while (c->reported < c->n) {
        int k = c->reported;
        if (c->o->stop && *c->o->stop) {
            c->nq = 0;
            not_run(&c->results[k]);
            c->reported++;
            continue;
        }
        if (!c->done[k])
            return;
        c->reported++;
        if (c->o->on_result)
            c->o->on_result(c->o->ctx, k, &c->results[k]);
    }
}

static loom_status run_call(mpi_state *s, call *c)
{
    unsigned sleep_us = 20;
    while (c->reported < c->n || c->busy > 0) {
        dispatch(s, c);
        if (c->nq > 0 && live_workers(s) == 0)
            run_queue_here(s, c);
        int got = 0;
        while (receive(s, c))
            got = 1;
        find_dead(s, c);
        report(c);
        if (got) {
            sleep_us = 20;
        } else {
            usleep(sleep_us);
            sleep_us = sleep_us < 1000 ? sleep_us * 2 : 1000;
        }
    }
    return LOOM_OK;
}

static loom_status mpi_run(loom_runner *r, const loom_measure_candidate *cands, int n, const loom_runner_opts *o,
                           loom_runner_result *results, loom_batch_stats *stats, loom_error *err)
{
    mpi_state *s = r->impl;
    if (n <= 0)
        return LOOM_OK;
    for (int k = 0; k < n; k++)
        if (!cands[k].trace_json) /* the baselines: rank 0 runs the batch itself */
            return loom_runner_run(s->local, cands, n, o, results, stats, err);
    double t0 = loom_now_seconds();
    call c = {.cands = cands, .o = o, .results = results, .n = n};
    c.queue = malloc(sizeof *c.queue * (size_t)n);
    c.done = calloc((size_t)n, 1);
    if (!c.queue || !c.done) {
        free(c.queue), free(c.done);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (int k = 0; k < n; k++) /* a stack: candidate 0 on top */
        c.queue[c.nq++] = n - 1 - k;
    loom_status st = run_call(s, &c);
    free(c.queue), free(c.done);
    stats->measure_s = loom_now_seconds() - t0;
    return st;
}

static void mpi_free(loom_runner *r)
{
    mpi_state *s = r->impl;
    if (!s)
        return;
    if (s->ping_on) {
        pthread_mutex_lock(&s->mu);
        __atomic_store_n(&s->ping_stop, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->ping, NULL);
    }
    if (s->served)
        fprintf(logf_(s), "loom-mpi: %ld candidates measured by workers: %.4f s each on the worker, %.4f s from "
                "dispatch to result; %d worker%s declared dead\n",
                s->served, s->worker_s / (double)s->served, s->round_trip_s / (double)s->served, dead_workers,
                dead_workers == 1 ? "" : "s");
    char b = dead_workers > 0; /* 1: exit without MPI_Finalize (mpi_runner.h loom_mpi_worker_serve) */
    for (int k = 1; k < s->size; k++)
        if (s->w[k].state != W_DEAD)
            MPI_Send(&b, 1, MPI_BYTE, k, LOOM_MPI_STOP, MPI_COMM_WORLD);
    pthread_mutex_destroy(&s->mu);
    loom_runner_free(s->local);
    free(s->w);
}

loom_mpi_config loom_mpi_config_defaults(void)
{
    loom_mpi_config c;
    memset(&c, 0, sizeof c);
    c.timeout_s = 30;
    c.limit_s = 600;
    return c;
}

loom_status loom_mpi_runner_new(void *ctx, const loom_target *t, loom_dataset *ds, const loom_reference *ref,
                                const loom_run_opts *run, loom_runner **out, loom_error *err)
{
    *out = NULL;
    loom_runner *r = calloc(1, sizeof *r);
    mpi_state *s = calloc(1, sizeof *s);
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 1)
        size = 1;
    wstate *w = calloc((size_t)size, sizeof *w);
    if (!r || !s || !w) {
        free(r), free(s), free(w);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    s->cfg = ctx;
    s->run = run ? *run : loom_run_defaults();
    s->size = size;
    s->w = w;
    s->started = loom_now_seconds();
    for (int k = 0; k < size; k++)
        w[k].req = MPI_REQUEST_NULL;
    gethostname(s->host, sizeof s->host - 1);
    snprintf(s->data_fp, sizeof s->data_fp, "%016llx", (unsigned long long)loom_data_fingerprint(ds));
    pthread_mutex_init(&s->mu, NULL);
    runner_made = 1;
    *r = (loom_runner){.kind = "mpi", .target = t, .ds = ds, .ref = ref, .run = mpi_run, .free = mpi_free,
                       .impl = s, .needs_trace = 1};
    loom_status st = loom_runner_new(t, ds, ref, &s->run, &s->local, err);
    if (st) {
        loom_runner_free(r);
        return st;
    }
    fprintf(logf_(s), "loom-mpi: rank 0 on host %s (pid %d) runs the search and owns the database; %d worker rank%s\n",
            s->host, (int)getpid(), size - 1, size == 2 ? "" : "s");
    int level = 0;
    MPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE && size > 1)
        s->ping_on = pthread_create(&s->ping, NULL, ping_main, s) == 0;
    *out = r;
    return LOOM_OK;
}
