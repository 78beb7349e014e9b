/* Binding a model's tasks, grouping them, its outputs (model.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../dsl/ir/util.h"
#include "../database/database.h"
#include "model_internal.h"

loom_status loom__model_err(const loom__model_line *L, loom_status status, loom_error *err, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return loom_error_set(err, status, L->path, L->line, 0, "%s", msg);
}

/* The workload's text, or NULL (it is read for the records, not needed). */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len;
    if (loom_read_stream(f, (size_t)16 << 20, &buf, &len))
        buf = NULL;
    fclose(f);
    return buf;
}

loom_status loom__model_bind(loom_model_call *c, const loom__model_line *L, uint64_t seed, loom_error *err)
{
    loom_error e;
    loom_error_clear(&e);
    char where[1400];
    if (loom_program_parse_file(c->workload, &c->prog, &e))
        return loom__model_err(L, e.status, err, "task %s: %s", c->name, loom_error_format(&e, where, sizeof where));
    if (loom_dataset_load(c->prog, c->data, c->ndata, c->params, c->nparams, seed, &c->ds, &e))
        return loom__model_err(L, e.status, err, "task %s: %s", c->name, loom_error_format(&e, where, sizeof where));
    c->workload_text = read_text(c->workload);
    return LOOM_OK;
}

int loom__model_tensor(const loom_model *m, const char *ref, const loom__model_line *L, int *call, loom_error *err)
{
    const char *dot = strchr(ref, '.');
    if (!dot || dot == ref || !dot[1] || strchr(dot + 1, '.')) {
        loom__model_err(L, LOOM_ERR_PARSE, err, "'%s' is not TASK.TENSOR", ref);
        return -1;
    }
    size_t n = (size_t)(dot - ref);
    for (int k = 0; k < m->ncalls; k++) {
        const loom_model_call *c = &m->calls[k];
        if (strlen(c->name) != n || strncmp(c->name, ref, n))
            continue;
        int t = loom_program_find_tensor(c->prog, dot + 1);
        if (t < 0 || c->prog->tensors[t].role == LOOM_TENSOR_TEMP) {
            loom__model_err(L, LOOM_ERR_SEMANTIC, err, "task %s (%s) has no tensor '%s'", c->name, c->workload, dot + 1);
            return -1;
        }
        *call = k;
        return t;
    }
    loom__model_err(L, LOOM_ERR_SEMANTIC, err, "unknown task '%.*s' in '%s' (a task is declared before the lines that name it)",
                    (int)n, ref, ref);
    return -1;
}

/* 1 when call k's output tensor t feeds some later call. */
static int feeds_something(const loom_model *m, int k, int t)
{
    for (int f = 0; f < m->nfeeds; f++)
        if (m->feeds[f].src == k && m->feeds[f].src_tensor == t)
            return 1;
    return 0;
}

loom_status loom__model_finish(loom_model *m, loom_error *err)
{
    m->tasks = calloc((size_t)m->ncalls, sizeof *m->tasks);
    if (!m->tasks)
        return loom_error_set(err, LOOM_ERR_NOMEM, m->path, 0, 0, "out of memory");
    for (int k = 0; k < m->ncalls; k++) {
        loom_model_call *c = &m->calls[k];
        uint64_t wh = loom_program_hash(c->prog), fp = loom_data_fingerprint(c->ds);
        int t = 0;
        while (t < m->ntasks && (m->tasks[t].workload_hash != wh || m->tasks[t].data_fp != fp))
            t++;
        if (t == m->ntasks)
            m->tasks[m->ntasks++] = (loom_model_task){.call = k, .workload_hash = wh, .data_fp = fp};
        m->tasks[t].ncalls++;
        m->tasks[t].weight += c->runs;
        c->task = t;
    }
    if (m->noutputs)
        return LOOM_OK;
    for (int k = 0; k < m->ncalls; k++)
        for (int t = 0; t < m->calls[k].prog->ntensors; t++)
            if (m->calls[k].prog->tensors[t].role == LOOM_TENSOR_OUTPUT && !feeds_something(m, k, t))
                m->outputs[m->noutputs++] = (loom_model_output){.call = k, .tensor = t, .line = 0};
    return LOOM_OK;
}

void loom_model_free(loom_model *m)
{
    if (!m)
        return;
    for (int k = 0; m->calls && k < m->ncalls; k++) {
        loom_dataset_free(m->calls[k].ds);
        loom_program_free(m->calls[k].prog);
        free(m->calls[k].workload_text);
    }
    free(m->calls);
    free(m->feeds);
    free(m->outputs);
    free(m->tasks);
    free(m);
}
