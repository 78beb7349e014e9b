/* Running many schedules at once (batch.h). */
#include "batch.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lower/codegen.h"
#include "../lower/lower.h"

loom_run_opts loom_run_defaults(void)
{
    loom_run_opts o;
    memset(&o, 0, sizeof o);
    o.measure = loom_measure_defaults();
    return o;
}

static void check_one(const loom_program *prog, loom_dataset *ds, const loom_reference *ref, loom_run_result *res)
{
    res->latency_s = res->m.latency;
    res->flops = ref->flops;
    res->gflops = res->latency_s > 0 ? res->flops / res->latency_s / 1e9 : 0;
    loom_check chk;
    loom_reference_check(ds, ref, &chk);
    res->correct = chk.correct;
    res->max_rel_err = chk.max_rel_err;
    res->tol = chk.tol;
    if (!chk.correct) {
        res->status = LOOM_ERR_WRONG;
        snprintf(res->message, sizeof res->message,
                 "wrong result: %s[%lld] = %.9g but the reference gives %.9g (relative error %.3g > %.3g)",
                 chk.worst_tensor >= 0 ? prog->tensors[chk.worst_tensor].name : "?", (long long)chk.worst_index,
                 chk.worst_got, chk.worst_want, chk.max_rel_err, chk.tol);
    } else if (res->m.unreliable) { /* the stall warning goes with the figure (its record keeps it) */
        snprintf(res->message, sizeof res->message, "%s", res->m.message);
    }
}

/* One shared object's worth of kernels. */
typedef struct chunk {
    int m;                    /* kernels */
    int *which;               /* schedule index of each kernel */
    lir_func **fs;
    char (*names)[32];
    const char **entries;
    char *src;                /* the batch source (NULL when codegen failed) */
    loom_status st;           /* codegen failure, else LOOM_OK */
    char msg[1024];
    int whole_ok;             /* the batch object built */
    loom_module whole;
    int *single_ok;           /* fallback: kernel j built alone */
    loom_module *single;
    loom_status *single_st;
    char (*single_msg)[1024];
    double compile_s;
    int cached;
} chunk;

typedef struct build_queue {
    pthread_mutex_t lock;
    int next, nchunks;
    chunk *chunks;
    const loom_build_opts *bo;
    int failures;
} build_queue;

/* Build one chunk: the batch object, or each kernel alone when that fails. */
static void build_chunk(chunk *c, const loom_build_opts *bo, int *failures)
{
    if (c->st)
        return;
    loom_error le;
    loom_error_clear(&le);
    if (loom_build(c->src, c->entries[0], bo, &c->whole, &le) == LOOM_OK) {
        c->whole_ok = 1;
        c->compile_s = c->whole.compile_seconds;
        c->cached = c->whole.cached;
        return;
    }
    (*failures)++;
    if (c->m == 1) {
        c->st = le.status ? le.status : LOOM_ERR_BUILD;
        snprintf(c->msg, sizeof c->msg, "%s", le.msg);
        return;
    }
    for (int j = 0; j < c->m; j++) {
        char *src = NULL;
        loom_error e2;
        loom_error_clear(&e2);
        loom_status st = loom_codegen_c(c->fs[j], c->entries[j], &src, &e2);
        if (!st)
            st = loom_build(src, c->entries[j], bo, &c->single[j], &e2);
        free(src);
        if (st) {
            c->single_st[j] = st;
            snprintf(c->single_msg[j], sizeof c->single_msg[j], "%s", e2.msg);
        } else {
            c->single_ok[j] = 1;
            c->compile_s += c->single[j].compile_seconds;
        }
    }
}

static void *build_worker(void *arg)
{
    build_queue *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        int i = q->next < q->nchunks ? q->next++ : -1;
        pthread_mutex_unlock(&q->lock);
        if (i < 0)
            return NULL;
        int fails = 0;
        build_chunk(&q->chunks[i], q->bo, &fails);
        if (fails) {
            pthread_mutex_lock(&q->lock);
            q->failures += fails;
            pthread_mutex_unlock(&q->lock);
        }
    }
}

static void chunk_free(chunk *c)
{
    for (int j = 0; j < c->m; j++) {
        if (c->fs[j])
            loom_lir_func_free(c->fs[j]);
        if (c->single_ok[j])
            loom_module_close(&c->single[j]);
    }
    if (c->whole_ok)
        loom_module_close(&c->whole);
    free(c->which), free(c->fs), free(c->names), free(c->entries), free(c->src);
    free(c->single_ok), free(c->single), free(c->single_st), free(c->single_msg);
}

static int chunk_alloc(chunk *c, int cap)
{
    memset(c, 0, sizeof *c);
    size_t n = (size_t)cap;
    c->which = calloc(n, sizeof *c->which);
    c->fs = calloc(n, sizeof *c->fs);
    c->names = calloc(n, sizeof *c->names);
    c->entries = calloc(n, sizeof *c->entries);
    c->single_ok = calloc(n, sizeof *c->single_ok);
    c->single = calloc(n, sizeof *c->single);
    c->single_st = calloc(n, sizeof *c->single_st);
    c->single_msg = calloc(n, sizeof *c->single_msg);
    return c->which && c->fs && c->names && c->entries && c->single_ok && c->single && c->single_st &&
                   c->single_msg
               ? 0
               : -1;
}

/* Build every chunk with `jobs` workers. */
static loom_status build_all(chunk *chunks, int nchunks, const loom_build_opts *bo, int jobs, int *failures,
                             loom_error *err)
{
    build_queue q = {.next = 0, .nchunks = nchunks, .chunks = chunks, .bo = bo, .failures = 0};
    if (jobs > nchunks)
        jobs = nchunks;
    if (jobs <= 1) {
        for (int i = 0; i < nchunks; i++)
            build_chunk(&chunks[i], bo, &q.failures);
        *failures = q.failures;
        return LOOM_OK;
    }
    pthread_mutex_init(&q.lock, NULL);
    pthread_t th[64];
    if (jobs > 64)
        jobs = 64;
    int started = 0;
    for (; started < jobs; started++)
        if (pthread_create(&th[started], NULL, build_worker, &q) != 0)
            break;
    if (started == 0) {
        pthread_mutex_destroy(&q.lock);
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "could not start a compiler worker thread");
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&q.lock);
    *failures = q.failures;
    return LOOM_OK;
}

loom_status loom_run_batch_ex(const loom_schedule *const *schedules, int n, loom_dataset *ds,
                              const loom_reference *ref, const loom_run_opts *opts, const loom_batch_opts *bopts,
                              loom_run_result *results, loom_batch_stats *stats, loom_error *err)
{
    loom_run_opts defaults = loom_run_defaults();
    loom_batch_opts bdef = {0};
    loom_batch_stats sdummy;
    if (!opts)
        opts = &defaults;
    if (!bopts)
        bopts = &bdef;
    if (!stats)
        stats = &sdummy;
    memset(stats, 0, sizeof *stats);
    int csize = bopts->chunk > 0 ? bopts->chunk : 32;
    int jobs = bopts->jobs > 0 ? bopts->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1)
        jobs = 1;
    if (n <= 0)
        return LOOM_OK;
    const loom_program *prog = ds->prog;
    int maxchunks = (n + csize - 1) / csize;
    chunk *chunks = calloc((size_t)maxchunks, sizeof *chunks);
    int *slot_chunk = malloc((size_t)n * sizeof *slot_chunk), *slot_j = malloc((size_t)n * sizeof *slot_j);
    if (!chunks || !slot_chunk || !slot_j) {
        free(chunks), free(slot_chunk), free(slot_j);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    loom_status status = LOOM_OK;
    int nchunks = 0;

    /* 1. lower every schedule, fill chunks, generate each chunk's source */
    double t0 = loom_now_seconds();
    for (int k = 0; k < n && !status; k++) {
        loom_run_result *r = &results[k];
        memset(r, 0, sizeof *r);
        slot_chunk[k] = slot_j[k] = -1;
        lir_func *f = NULL;
        loom_error le;
        loom_error_clear(&le);
        loom_status st = loom_lower_for(schedules[k], opts->limits, &f, &le);
        if (st) {
            r->status = st;
            snprintf(r->message, sizeof r->message, "%s", le.msg);
            continue;
        }
        if (nchunks == 0 || chunks[nchunks - 1].m == csize) {
            if (chunk_alloc(&chunks[nchunks], csize)) {
                nchunks++;
                loom_lir_func_free(f);
                status = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
                break;
            }
            nchunks++;
        }
        chunk *c = &chunks[nchunks - 1];
        int j = c->m++;
        c->fs[j] = f;
        c->which[j] = k;
        snprintf(c->names[j], sizeof c->names[j], "loom_kernel_%d", j);
        c->entries[j] = c->names[j];
        slot_chunk[k] = nchunks - 1;
        slot_j[k] = j;
    }
    for (int i = 0; i < nchunks && !status; i++) {
        chunk *c = &chunks[i];
        loom_error le;
        loom_error_clear(&le);
        c->st = loom_codegen_c_batch((const lir_func *const *)c->fs, c->m, c->entries, &c->src, &le);
        if (c->st)
            snprintf(c->msg, sizeof c->msg, "%s", le.msg);
    }
    double t1 = loom_now_seconds();
    stats->lower_s = t1 - t0;
    stats->chunks = nchunks;

    /* 2. compile the chunks in parallel */
    if (!status)
        status = build_all(chunks, nchunks, &opts->build, jobs, &stats->chunk_failures, err);
    double t2 = loom_now_seconds();
    stats->build_s = t2 - t1;

    /* 3. measure one kernel at a time, in schedule order */
    for (int k = 0; k < n && !status; k++) {
        loom_run_result *r = &results[k];
        if (bopts->stop && *bopts->stop) {
            for (; k < n; k++) {
                results[k].status = LOOM_ERR_RUN;
                snprintf(results[k].message, sizeof results[k].message, "not measured: the batch was stopped");
            }
            break;
        }
        if (slot_chunk[k] >= 0) {
            chunk *c = &chunks[slot_chunk[k]];
            int j = slot_j[k];
            void *handle = NULL;
            if (c->st) {
                r->status = c->st;
                snprintf(r->message, sizeof r->message, "%s", c->msg);
            } else if (c->whole_ok) {
                handle = c->whole.handle;
            } else if (c->single_ok[j]) {
                handle = c->single[j].handle;
            } else {
                r->status = c->single_st[j] ? c->single_st[j] : LOOM_ERR_BUILD;
                snprintf(r->message, sizeof r->message, "%s", c->single_msg[j]);
            }
            r->compile_seconds = c->compile_s / c->m;
            r->cached = c->whole_ok ? c->cached : c->single_ok[j] ? c->single[j].cached : 0;
            if (handle) {
                loom_kernel_fn fn = (loom_kernel_fn)(uintptr_t)dlsym(handle, c->entries[j]);
                if (!fn) {
                    r->status = LOOM_ERR_RUN;
                    snprintf(r->message, sizeof r->message, "symbol %s missing from the batch object",
                             c->entries[j]);
                } else {
                    loom_dataset_fill_outputs(ds, 12345.0f);
                    if (loom_measure(fn, ds->t, &opts->measure, &r->m, err)) {
                        status = LOOM_ERR_RUN;
                        break;
                    }
                    if (r->m.status != LOOM_OK) {
                        r->status = r->m.status;
                        snprintf(r->message, sizeof r->message, "%s", r->m.message);
                    } else {
                        check_one(prog, ds, ref, r);
                    }
                }
            }
        }
        if (bopts->on_result)
            bopts->on_result(bopts->ctx, k, r);
    }
    stats->measure_s = loom_now_seconds() - t2;
    for (int i = 0; i < nchunks; i++)
        chunk_free(&chunks[i]);
    free(chunks), free(slot_chunk), free(slot_j);
    return status;
}

loom_status loom_run_batch(const loom_schedule *const *schedules, int n, loom_dataset *ds,
                           const loom_reference *ref, const loom_run_opts *opts, int chunk,
                           loom_run_result *results, loom_error *err)
{
    loom_batch_opts b = {.chunk = chunk};
    return loom_run_batch_ex(schedules, n, ds, ref, opts, &b, results, NULL, err);
}
