/* loom-mpi's runner on rank 0 (mpi_runner.h): the MPI implementation of
 * runtime/runner/runner.h.  Candidates go to idle workers one at a time
 * (a worker asks by sending its hello or its last result), results come
 * back in any order and are reported in candidate order.  The workers are
 * a pool that outlives the runners: a model campaign makes a runner per
 * step of each task, and every one hands its task's candidates to the
 * same workers (the work message names the task). */
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

/* Workers declared dead (loom_mpi_dead_workers). */
static int dead_workers;

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

/* The workers, from the first runner to loom_mpi_release_workers. */
typedef struct pool {
    const loom_mpi_config *cfg;
    int size;                /* ranks; w[1..size) are the workers */
    wstate *w;
    char host[64];
    char target_fp[128];     /* rank 0's target (the first runner's) */
    double started;
    int64_t next_id;
    pthread_t ping;
    int ping_on, ping_stop;
    pthread_mutex_t mu;      /* w[].state between the run and the ping thread */
    int said_alone;          /* "no worker left" reported */
    long served;             /* results from workers */
    double worker_s, round_trip_s; /* summed: on the worker (child start to result), dispatch to result */
} pool;

static pool P;
static int pool_on;          /* 1 once the first runner started the pool */

/* One runner: one task's campaign (or re-measurement). */
typedef struct mpi_state {
    pool *p;
    loom_run_opts run;
    loom_runner *local;      /* rank 0's own runner (a batch without traces, or no worker left) */
    loom_mpi_task_id task;   /* the task its candidates are for */
} mpi_state;

/* One loom_runner_run call. */
typedef struct call {
    loom_mpi_task_id task;
    const loom_measure_candidate *cands;
    const loom_runner_opts *o;
    loom_runner_result *results;
    int n;
    int *queue, nq;          /* candidates waiting for a worker (a stack: requeued ones go first) */
    unsigned char *done;
    int reported;            /* candidates [0, reported) were reported or given up */
    int busy;                /* workers measuring one of this call's candidates */
} call;

static FILE *logf_(pool *s)
{
    return s->cfg->log ? s->cfg->log : stderr;
}

static void set_state(pool *s, int rank, int state)
{
    pthread_mutex_lock(&s->mu);
    s->w[rank].state = state;
    pthread_mutex_unlock(&s->mu);
}

/* Rank 0 is alive: one byte to every worker that may listen, every second. */
static void *ping_main(void *arg)
{
    pool *s = arg;
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

/* Why the worker's tasks (n after its hello) are not rank 0's, into msg; 0 when they are. */
static int tasks_differ(pool *s, int src, const loom_mpi_hello *h, int n, char *msg, size_t len)
{
    const loom_mpi_config *cfg = s->cfg;
    const loom_mpi_task_id *id = (const loom_mpi_task_id *)(h + 1);
    if (h->ntasks != cfg->ntasks || n != (int)(sizeof *h + sizeof *id * (size_t)h->ntasks))
        return snprintf(msg, len, "loom-mpi: rank %d on host %s refused: its campaign has %d task%s, rank 0's (on %s) "
                        "%d; every rank must tune the same workload or model", src, h->host, h->ntasks,
                        h->ntasks == 1 ? "" : "s", s->host, cfg->ntasks) > 0;
    for (int k = 0; k < cfg->ntasks; k++) {
        const loom_mpi_task *t = &cfg->tasks[k];
        const char *of = t->name ? " of task " : "", *name = t->name ? t->name : "";
        if (id[k].whash != t->whash)
            return snprintf(msg, len, "loom-mpi: rank %d on host %s refused: its workload%s%s (hash %016llx) is not "
                            "rank 0's (%016llx on %s)", src, h->host, of, name, (unsigned long long)id[k].whash,
                            (unsigned long long)t->whash, s->host) > 0;
        if (id[k].data_fp != t->data_fp)
            return snprintf(msg, len, "loom-mpi: rank %d on host %s refused: its data fingerprint%s%s %016llx differs "
                            "from rank 0's %016llx (on %s); every rank must load the same data", src, h->host, of,
                            name, (unsigned long long)id[k].data_fp, (unsigned long long)t->data_fp, s->host) > 0;
    }
    return 0;
}

static void hello(pool *s, int src, const loom_mpi_hello *h, int n)
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
    else if (tasks_differ(s, src, h, n, wel.message, sizeof wel.message))
        ;
    else if (strcmp(h->target_fp, s->target_fp) && !s->cfg->allow_mixed_targets)
        snprintf(wel.message, sizeof wel.message,
                 "loom-mpi: rank %d on host %s refused: its target fingerprint %s differs from rank 0's %s (on %s); "
                 "--allow-mixed-targets accepts it",
                 src, h->host, h->target_fp, s->target_fp, s->host);
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

static void result(pool *s, call *c, int src, const loom_mpi_result *m)
{
    wstate *w = &s->w[src];
    if (w->state != W_BUSY || w->id != m->id) {
        fprintf(logf_(s), "loom-mpi: a late result from rank %d on host %s, ignored (its candidate was given to "
                "another worker)\n", src, w->host);
        return;
    }
    loom_runner_result *out = &c->results[w->cand];
    *out = m->r;
    if (strcmp(w->target_fp, s->target_fp)) {
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
static int receive(pool *s, call *c)
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
    if (st.MPI_TAG == LOOM_MPI_HELLO && n >= (int)sizeof(loom_mpi_hello) && s->w[src].state == W_PENDING)
        hello(s, src, (const loom_mpi_hello *)b, n);
    else if (st.MPI_TAG == LOOM_MPI_RESULT && n == (int)sizeof(loom_mpi_result) && c)
        result(s, c, src, (const loom_mpi_result *)b);
    free(b);
    return 1;
}

/* ---- dispatch and failures ----------------------------------------------------------------- */

static int send_work(pool *s, call *c, int rank, int k)
{
    size_t len = strlen(c->cands[k].trace_json) + 1;
    char *buf = malloc(sizeof(loom_mpi_work_head) + len);
    if (!buf)
        return 0;
    loom_mpi_work_head h = {.id = ++s->next_id, .task = c->task, .limit_s = s->cfg->limit_s};
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

static void dispatch(pool *s, call *c)
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
static void find_dead(pool *s, call *c)
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

/* End the pool: the ping thread, the summary, STOP to every live worker. */
static void pool_end(pool *s)
{
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
    free(s->w);
    s->w = NULL;
}

void loom_mpi_release_workers(void)
{
    if (pool_on) {
        pool_end(&P);
        pool_on = 0;
        return;
    }
    int size = 1;
    char b = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int k = 1; k < size; k++)
        MPI_Send(&b, 1, MPI_BYTE, k, LOOM_MPI_STOP, MPI_COMM_WORLD);
}

static int live_workers(pool *s)
{
    int n = 0;
    for (int r = 1; r < s->size; r++)
        n += s->w[r].state == W_PENDING || s->w[r].state == W_IDLE || s->w[r].state == W_BUSY;
    return n;
}

/* No worker left: rank 0 measures the queue itself. */
static void run_queue_here(mpi_state *s, call *c)
{
    pool *p = s->p;
    if (!p->said_alone && p->size > 1)
        fprintf(logf_(p), "loom-mpi: no worker left: rank 0 measures the rest on host %s\n", p->host);
    p->said_alone = 1;
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
    pool *p = s->p;
    unsigned sleep_us = 20;
    while (c->reported < c->n || c->busy > 0) {
        dispatch(p, c);
        if (c->nq > 0 && live_workers(p) == 0)
            run_queue_here(s, c);
        int got = 0;
        while (receive(p, c))
            got = 1;
        find_dead(p, c);
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
    call c = {.task = s->task, .cands = cands, .o = o, .results = results, .n = n};
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
    if (s)
        loom_runner_free(s->local);
}

loom_mpi_config loom_mpi_config_defaults(void)
{
    loom_mpi_config c;
    memset(&c, 0, sizeof c);
    c.timeout_s = 30;
    c.limit_s = 600;
    return c;
}

/* Start the pool (the first runner): the workers, the ping thread. */
static loom_status pool_start(const loom_mpi_config *cfg, const loom_target *t, loom_error *err)
{
    pool *s = &P;
    memset(s, 0, sizeof *s);
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    s->size = size < 1 ? 1 : size;
    if (!(s->w = calloc((size_t)s->size, sizeof *s->w)))
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    s->cfg = cfg;
    s->started = loom_now_seconds();
    for (int k = 0; k < s->size; k++)
        s->w[k].req = MPI_REQUEST_NULL;
    gethostname(s->host, sizeof s->host - 1);
    snprintf(s->target_fp, sizeof s->target_fp, "%s", t->fingerprint);
    pthread_mutex_init(&s->mu, NULL);
    pool_on = 1;
    fprintf(logf_(s), "loom-mpi: rank 0 on host %s (pid %d) runs the search and owns the database; %d worker rank%s"
            "%s\n", s->host, (int)getpid(), s->size - 1, s->size == 2 ? "" : "s",
            cfg->ntasks > 1 ? "; the model's tasks share them" : "");
    int level = 0;
    MPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE && s->size > 1)
        s->ping_on = pthread_create(&s->ping, NULL, ping_main, s) == 0;
    return LOOM_OK;
}

/* The task of the campaign whose data set is ds: its index, -1 if none. */
static int find_task(const loom_mpi_config *cfg, const loom_dataset *ds)
{
    for (int k = 0; k < cfg->ntasks; k++)
        if (cfg->tasks[k].ds == ds)
            return k;
    return -1;
}

loom_status loom_mpi_runner_new(void *ctx, const loom_target *t, loom_dataset *ds, const loom_reference *ref,
                                const loom_run_opts *run, loom_runner **out, loom_error *err)
{
    *out = NULL;
    const loom_mpi_config *cfg = ctx;
    int k = find_task(cfg, ds);
    if (k < 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "the MPI runner: a data set that is none of the campaign's %d task%s", cfg->ntasks,
                              cfg->ntasks == 1 ? "" : "s");
    loom_status st = pool_on ? LOOM_OK : pool_start(cfg, t, err);
    if (st)
        return st;
    loom_runner *r = calloc(1, sizeof *r);
    mpi_state *s = calloc(1, sizeof *s);
    if (!r || !s) {
        free(r), free(s);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    s->p = &P;
    s->run = run ? *run : loom_run_defaults();
    s->task = (loom_mpi_task_id){cfg->tasks[k].whash, cfg->tasks[k].data_fp};
    *r = (loom_runner){.kind = "mpi", .target = t, .ds = ds, .ref = ref, .run = mpi_run, .free = mpi_free,
                       .impl = s, .needs_trace = 1};
    st = loom_runner_new(t, ds, ref, &s->run, &s->local, err);
    if (st) {
        loom_runner_free(r);
        return st;
    }
    *out = r;
    return LOOM_OK;
}
