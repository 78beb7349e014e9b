/* search/: the lowest file -- option rows get/set/check, the Metropolis-Hastings acceptance
 * and temperature, seed mixing, and the pthread parallel-for that the
 * strategies, the population loop and the candidates share (search.c, the
 * strategy table, the options' defaults and the search object, sits above
 * them all). */
#include "search_internal.h"
#include "../../modules/module.h"
#include "../../runtime/target/target.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- options ---------------------------------------------------------------- */

double loom_search_option_get(const loom_search_opts *o, const loom_search_option *R)
{
    const char *p = (const char *)o + R->offset;
    return R->kind == LOOM_OPTION_REAL || R->kind == LOOM_OPTION_SHARE ? *(const double *)p : *(const int *)p;
}

void loom_search_option_set(loom_search_opts *o, const loom_search_option *R, double x)
{
    char *p = (char *)o + R->offset;
    if (R->kind == LOOM_OPTION_REAL || R->kind == LOOM_OPTION_SHARE)
        *(double *)p = x;
    else
        *(int *)p = (int)x;
}

int loom_search_option_ok(const loom_search_option *R, double x)
{
    switch (R->kind) {
    case LOOM_OPTION_INT: return x >= R->lo && x <= R->hi && x == (int)x;
    case LOOM_OPTION_REAL: return (R->lo_open ? x > R->lo : x >= R->lo) && x <= R->hi;
    case LOOM_OPTION_SHARE: return x >= 0 && x <= 1;
    case LOOM_OPTION_BOOL: return x == 0 || x == 1;
    case LOOM_OPTION_CHOICE: return x == R->choices[0].value || x == R->choices[1].value;
    }
    return 0;
}

int loom_mh_accept(double s_old, double s_new, double T, double u)
{
    if (s_new >= s_old)
        return 1;
    if (!(T > 0))
        return 0;
    return u < exp((s_new - s_old) / T);
}

double loom_mh_temperature(const loom_search_opts *o, int g)
{
    return o->t0 * pow(o->t_decay, g);
}

/* The seed is finalised before the first part is added: with z = seed +
 * a, campaign seed s at call c + 1 drew what seed s + 1 drew at call c, so
 * the random strategy's records of seeds 1 and 2 were the same schedules,
 * shifted by one batch (144 of 160 in common; found 2026-11-25). */
uint64_t loom_seed_mix(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t parts[4] = {0, a, b, c};
    uint64_t z = seed;
    for (int k = 0; k < 4; k++) {
        z += 0x9e3779b97f4a7c15ULL + parts[k];
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
    }
    return z;
}

/* ---- a pthread parallel-for ------------------------------------------------ */

typedef struct pf_ctx {
    pthread_mutex_t lock;
    int next, n;
    void (*fn)(void *, int, int);
    void *ctx;
} pf_ctx;

typedef struct pf_arg {
    pf_ctx *c;
    int worker;
} pf_arg;

static void *pf_worker(void *arg)
{
    pf_arg *a = arg;
    pf_ctx *c = a->c;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        int i = c->next < c->n ? c->next++ : -1;
        pthread_mutex_unlock(&c->lock);
        if (i < 0)
            return NULL;
        c->fn(c->ctx, i, a->worker);
    }
}

loom_status loom_parallel_for(int n, int threads, void (*fn)(void *ctx, int i, int worker), void *ctx,
                              loom_error *err)
{
    if (threads > n)
        threads = n;
    if (threads <= 1) {
        for (int i = 0; i < n; i++)
            fn(ctx, i, 0);
        return LOOM_OK;
    }
    if (threads > 64)
        threads = 64;
    pf_ctx c = {.next = 0, .n = n, .fn = fn, .ctx = ctx};
    pthread_mutex_init(&c.lock, NULL);
    pthread_t th[64];
    pf_arg args[64];
    int started = 0;
    for (; started < threads - 1; started++) {
        args[started] = (pf_arg){&c, started + 1};
        if (pthread_create(&th[started], NULL, pf_worker, &args[started]) != 0)
            break;
    }
    pf_arg self = {&c, 0};
    pf_worker(&self); /* the calling thread is worker 0 */
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    pthread_mutex_destroy(&c.lock);
    (void)err;
    return LOOM_OK;
}

loom_status loom__draw_distinct_valid(const loom_program *prog, const loom_space *sp, const loom_limits *lim,
                                      unsigned long seed, int n, loom_schedule **schs, int *m, loom_error *err)
{
    *m = 0;
    if (n <= 0)
        return LOOM_OK;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    uint64_t *seen = malloc(sizeof *seen * (size_t)n);
    if (!rng || !seen) {
        if (rng)
            gsl_rng_free(rng);
        free(seen);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    gsl_rng_set(rng, seed);
    loom_status st = LOOM_OK;
    for (int d = 0; d < 20 * n && *m < n; d++) {
        loom_schedule *s = schs[*m] ? schs[*m] : (schs[*m] = malloc(sizeof *s));
        if (!s) {
            st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
            break;
        }
        loom_error e;
        loom_violation v;
        if (loom_schedule_init(s, prog, rng, &e) || loom_space_apply(sp, s, &e) ||
            loom_validate(s, lim, &v, NULL) != LOOM_OK)
            continue;
        uint64_t h = loom_schedule_hash(s);
        int dup = 0;
        for (int k = 0; k < *m && !dup; k++)
            dup = seen[k] == h;
        if (!dup)
            seen[(*m)++] = h;
    }
    gsl_rng_free(rng);
    free(seen);
    return st;
}

/* ---- structural branches ------------------------------------------------------ */

static uint64_t mix(uint64_t h, int64_t v)
{
    return (h ^ (uint64_t)v) * 0x100000001b3ULL;
}

uint64_t loom_search_branch_key(const loom_schedule *sch)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int s = 0; sch && s < sch->nstages; s++) {
        const loom_stage *S = &sch->stages[s];
        h = mix(h, S->compute_at);
        h = mix(h, S->compute_at == LOOM_AT_LOOP ? S->at_stage * 2 + S->at_after : -1);
        h = mix(h, S->cache_iter >= 0);
        h = mix(h, S->pack_iter >= 0 ? S->pack_tensor : -1);
        h = mix(h, S->rfactor_iter >= 0);
        h = mix(h, S->rolling);
        h = mix(h, S->splitk > 1);
        h = mix(h, S->fuse);
    }
    return h ? h : 1;
}
