/* A model's trial records in its database, in file order (model.h
 * loom_model_trajectory; the campaign's resume, model_tune.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../dsl/ir/util.h"
#include "../database/database.h"
#include "model_internal.h"

/* An open-addressing set of (task, schedule hash) keys. */
typedef struct seen_set {
    uint64_t *key;
    size_t cap;
} seen_set;

/* 1 when added, 0 when present. */
static int seen_add(seen_set *s, uint64_t k)
{
    if (!k)
        k = 1; /* 0 marks an empty slot */
    size_t i = (size_t)(k * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
    while (s->key[i]) {
        if (s->key[i] == k)
            return 0;
        i = (i + 1) & (s->cap - 1);
    }
    s->key[i] = k;
    return 1;
}

int loom__model_scan(const loom_model *m, const loom_db *db, const char *target_fp, loom__model_trial **out)
{
    *out = NULL;
    int n = loom_db_count(db);
    seen_set s = {NULL, 16};
    while (s.cap < 2 * (size_t)n + 16)
        s.cap *= 2;
    s.key = calloc(s.cap, sizeof *s.key);
    loom__model_trial *t = malloc(sizeof *t * (size_t)(n > 0 ? n : 1));
    char (*dfp)[17] = malloc(sizeof *dfp * (size_t)(m->ntasks > 0 ? m->ntasks : 1));
    if (!s.key || !t || !dfp) {
        free(s.key), free(t), free(dfp);
        return -1;
    }
    for (int k = 0; k < m->ntasks; k++)
        snprintf(dfp[k], sizeof dfp[k], "%016llx", (unsigned long long)m->tasks[k].data_fp);
    int got = 0;
    for (int i = 0; i < n; i++) {
        const loom_record *r = loom_db_record(db, i);
        if (r->nsamples || !r->data_fp || !r->target_fp || strcmp(r->target_fp, target_fp))
            continue; /* a re-measurement (not a trial), or another target */
        int k = 0;
        while (k < m->ntasks && (m->tasks[k].workload_hash != r->workload_hash || strcmp(dfp[k], r->data_fp)))
            k++;
        if (k == m->ntasks || !seen_add(&s, loom_fnv1a_u64(loom_fnv1a_u64(LOOM_FNV_OFFSET, (uint64_t)k), r->schedule_hash)))
            continue; /* not the model's, or a duplicate record (loom_tune counts it once) */
        t[got].task = k;
        t[got].latency_s = r->status == LOOM_OK ? r->latency_s : INFINITY;
        got++;
    }
    free(s.key), free(dfp);
    *out = t;
    return got;
}

int loom_model_trajectory(const loom_model *m, const char *dbdir, const char *target_fp, double **out,
                          loom_error *err)
{
    *out = NULL;
    loom_db *db = NULL;
    if (loom_db_open_readonly(dbdir, NULL, &db, err))
        return -1;
    loom__model_trial *t = NULL;
    int n = loom__model_scan(m, db, target_fp, &t);
    loom_db_close(db);
    double *best = malloc(sizeof *best * (size_t)(m->ntasks > 0 ? m->ntasks : 1));
    double *e = n >= 0 ? malloc(sizeof *e * (size_t)(n > 0 ? n : 1)) : NULL;
    if (n < 0 || !best || !e) {
        free(t), free(best), free(e);
        loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return -1;
    }
    for (int k = 0; k < m->ntasks; k++)
        best[k] = INFINITY;
    for (int i = 0; i < n; i++) {
        if (t[i].latency_s < best[t[i].task])
            best[t[i].task] = t[i].latency_s;
        double sum = 0;
        for (int k = 0; k < m->ntasks; k++)
            sum += m->tasks[k].weight * best[k];
        e[i] = sum;
    }
    free(t), free(best);
    *out = e;
    return n;
}
