/* The simulated machine's set-up and tear-down (sim_machine.h): each
 * core's counters, predictors and private caches, the shared levels, the
 * page tables of "Shared pages", warm caches (both sim_machine.h) and the touch bits of
 * "First touches in sampled blocks" (sim.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_impl.h"
#include "sim_machine.h"

void loom__sim_machine_free(simx *X)
{
    loom__sim_pages_free(X);
    for (int b = 0; X->seen && b < X->p->nbufs; b++)
        free(X->seen[b]);
    free(X->seen);
    free(X->compulsory);
    free(X->touches);
    free(X->firsts);
    X->seen = NULL;
    for (int k = 0; k < X->ncores && X->cores; k++) {
        core *C = &X->cores[k];
        free(C->vars);
        for (int l = 0; l < NLEV; l++) {
            free(C->priv[l].tags);
            free(C->priv[l].used);
        }
        free(C->last_miss);
        free(C->run);
        free(C->last_stride);
        free(C->pf);
        free(C->last_line);
        free(C->bpred);
        free(C->last_trip);
        free(C->last_rmw);
        free(C->self_reg);
        free(C->self_epoch);
        free(C->vs);
        free(C->fseg);
        free(C->bseg);
        free(C->sseg);
    }
    free(X->cores);
    for (int l = 0; l < NLEV; l++) {
        free(X->shared[l].tags);
        free(X->shared[l].used);
    }
}

/* Marks in st the buffers a STREAM statement writes (non-temporal stores:
 * their lines bypass the caches), and in w those a WORK statement stores to
 * or a FILL writes (model 86: their lines are written back to memory once
 * a cold run). */
static void mark_writes(const sst *s, unsigned char *st, unsigned char *w)
{
    if (!s)
        return;
    if (s->kind == SS_STREAM && s->fill_buf >= 0)
        st[s->fill_buf] = 1;
    if ((s->kind == SS_WORK && s->store_buf >= 0) || (s->kind == SS_FILL && s->fill_buf >= 0))
        w[s->kind == SS_WORK ? s->store_buf : s->fill_buf] = 1;
    for (int i = 0; i < s->items_n; i++)
        mark_writes(s->items[i], st, w);
    mark_writes(s->body, st, w);
    mark_writes(s->els, st, w);
}

/* Warm caches (sim_machine.h "Warm caches"): the lines of every buffer, in buffer order, as a
 * previous run leaves them -- all through the shared levels, and the last
 * 2x (largest private level) bytes through each core's private levels --
 * when they fit in the last level (else the run starts cold).  Nothing is
 * counted.  Only when they fit in half the last level: what a shared cache
 * keeps of one program next to its neighbours and set conflicts.  Model 88:
 * a buffer a STREAM statement writes is neither counted nor loaded (its
 * non-temporal stores leave no line in the caches).  Returns 1 when the
 * data does not fit (the run starts cold), else 0.  st: mark_writes's
 * streamed buffers. */
static int prewarm(simx *X, const unsigned char *st)
{
    const loom_cache_level *last = &X->t->caches[X->nlev - 1];
    uint64_t total = 0, cap = (uint64_t)last->size * (last->shared ? 1 : (uint64_t)X->ncores);
    for (int b = 0; b < X->p->nbufs; b++)
        total += X->p->bufs[b].local || st[b] ? 0 : X->p->bufs[b].bytes;
    if (total == 0 || 2 * total > cap) /* half the last level: other threads' lines, set conflicts */
        return total > 0;
    uint64_t tail = X->first_shared > 0 ? 2 * (uint64_t)X->t->caches[X->first_shared - 1].size : 0, seen = 0, ev;
    uint64_t lb = (uint64_t)1 << X->line_shift;
    for (int b = 0; b < X->p->nbufs; b++) {
        const sbuf *B = &X->p->bufs[b];
        if (B->local || st[b])
            continue;
        for (uint64_t a = B->base; a < B->base + B->bytes; a += lb, seen += lb) {
            uint64_t line = a >> X->line_shift;
            for (int l = X->first_shared; l < X->nlev; l++)
                cache_lookup(&X->shared[l], line, 0, &ev);
            for (int k = 0; k < X->ncores && seen + tail >= total; k++)
                for (int l = X->first_shared - 1; l >= 0; l--)
                    cache_lookup(&X->cores[k].priv[l], line, 0, &ev);
        }
    }
    return 0;
}

/* The touch bits of sampled_first_touch (sim_machine.h), for every buffer
 * that fits in the last level, and model 76's share of the last level the
 * warm rule's lines keep (sim.h "Sampling"): the last level's size over the
 * bytes of the buffers the kernel reaches through the caches (every
 * non-local buffer but those a STREAM statement writes), at most 1.  st, wr:
 * mark_writes's streamed and stored buffers.  Returns 0 when out of memory. */
static int first_touches(simx *X, const unsigned char *st, const unsigned char *wr)
{
    const sprog *p = X->p;
    uint64_t llc = (uint64_t)X->t->caches[X->nlev - 1].size;
    double cached = 0;
    for (int b = 0; b < p->nbufs; b++)
        if (!p->bufs[b].local && !st[b]) {
            cached += (double)p->bufs[b].bytes;
            X->stored_bytes += wr[b] ? (double)p->bufs[b].bytes : 0; /* model 86 */
        }
    X->llc_share = cached > (double)llc ? (double)llc / cached : 1;
    X->seen = calloc((size_t)p->nbufs, sizeof *X->seen);
    X->compulsory = calloc((size_t)p->nbufs, sizeof *X->compulsory);
    X->touches = calloc((size_t)p->nbufs, sizeof *X->touches);
    X->firsts = calloc((size_t)p->nbufs, sizeof *X->firsts);
    if (!X->seen || !X->compulsory || !X->touches || !X->firsts)
        return 0;
    for (int b = 0; b < p->nbufs; b++)
        if (!p->bufs[b].local && p->bufs[b].bytes <= llc &&
            !(X->seen[b] = calloc((size_t)((p->bufs[b].bytes >> X->line_shift) / 64 + 2), sizeof(uint64_t))))
            return 0;
    return 1;
}

loom_status loom__sim_machine_init(simx *X, loom_error *err)
{
    const loom_target *t = X->t;
    const sprog *p = X->p;
    X->nlev = t->ncaches;
    X->lanes = loom__sim_lanes(t);
    X->log2_lanes = log2((double)X->lanes);
    /* model 89 (sim_constants.h): the part of a level's latency past L1's scaled by the vector width */
    double wait_scale = t->vector_bits >= 512 ? LOOM_SIM_LOAD_WAIT_SCALE_512 : LOOM_SIM_LOAD_WAIT_SCALE_256;
    for (int l = 0; l < X->nlev; l++)
        X->load_wait[l] = l == 0 ? t->caches[0].latency
                                 : t->caches[0].latency + wait_scale * (t->caches[l].latency - t->caches[0].latency);
    X->first_shared = X->nlev;
    for (int l = 0; l < X->nlev; l++)
        if (t->caches[l].shared && X->first_shared == X->nlev)
            X->first_shared = l;
    while ((1 << X->line_shift) < t->caches[0].line)
        X->line_shift++;
    /* stall per independent miss, divided by mlp in loom__sim_flush(); a measured
     * miss_cost (calibrate.h) already includes the overlap */
    for (int l = 1; l < X->nlev; l++)
        X->stall_lat[l] = t->caches[l].miss_cost > 0 ? t->caches[l].miss_cost * t->mlp : t->caches[l].latency;
    X->stall_lat[X->nlev] = t->mem_miss_cost_ns > 0 ? t->mem_miss_cost_ns * t->ghz * t->mlp
                                                  : level_latency(X, X->nlev);
    X->ncores = t->cores;
    X->dump = getenv("LOOM_SIM_DUMP") != NULL; /* sim.h "Cycles", diagnostics */
    X->r->cores = t->cores;
    int nsites = p->nsites ? p->nsites : 1, nvars = p->nvars ? p->nvars : 1;
    X->cores = calloc((size_t)X->ncores, sizeof(core));
    int oom = !X->cores;
    for (int l = X->first_shared; l < X->nlev && !oom; l++)
        oom = cache_init(&X->shared[l], &t->caches[l], t->page_bytes);
    for (int k = 0; k < X->ncores && !oom; k++) {
        core *C = &X->cores[k];
        C->id = k;
        /* sim.h "Independent chains": model 34 on calibrated targets, model 26 on the others */
        C->grp_window = t->issue_chain_norm <= 0 ? LOOM_SIM_CHAIN_OVERLAP_INSTRUCTIONS
                        : t->reorder_window > 0   ? t->reorder_window /* model 82: the calibrated window */
                                                  : LOOM_SIM_REORDER_WINDOW_INSTRUCTIONS;
        C->grp_cut_bmiss = !(t->issue_chain_norm > 0);
        C->vars = calloc((size_t)nvars, sizeof(int64_t));
        size_t nstream = (size_t)nsites * (1 + LOOM_SIM_COPY_SITES); /* model 95: the copies' own, past the sites' */
        C->last_miss = calloc(nstream, sizeof(uint64_t));
        C->run = calloc(nstream, 1);
        C->last_stride = calloc(nstream, sizeof(int64_t));
        C->pf = calloc(LOOM_SIM_PREFETCH_SLOTS, sizeof(pf_slot));
        C->last_line = calloc((size_t)nsites, sizeof(uint64_t));
        C->bpred = calloc((size_t)nsites, 1);
        C->last_trip = calloc((size_t)nsites, sizeof(int64_t));
        C->last_rmw = calloc((size_t)nsites * LOOM_SIM_RMW_HISTORY, sizeof(uint64_t));
        C->vs = calloc((size_t)nsites, sizeof(vsite));
        C->fseg = calloc((size_t)nvars, sizeof(fseg));
        if (t->issue_chain_norm > 0) { /* models 38 and 41 */
            C->bseg = calloc((size_t)(p->nbufs > 0 ? p->nbufs : 1), sizeof(fseg));
            C->sseg = calloc((size_t)nsites, sizeof(fseg));
            C->self_reg = calloc((size_t)nsites, 1);
            C->self_epoch = calloc((size_t)nsites, sizeof(uint64_t));
        }
        oom = !C->vars || !C->last_miss || !C->last_stride || !C->pf || !C->run || !C->last_line || !C->bpred || !C->last_trip || !C->last_rmw || !C->vs ||
              !C->fseg || (t->issue_chain_norm > 0 && (!C->bseg || !C->sseg || !C->self_reg || !C->self_epoch));
        for (int l = 0; l < X->first_shared && !oom; l++)
            oom = cache_init(&C->priv[l], &t->caches[l], t->page_bytes);
        for (int l = 0; l < X->nlev; l++)
            C->lv[l] = l < X->first_shared ? &C->priv[l] : &X->shared[l];
        for (int i = 0; i < nsites && !oom; i++)
            C->last_trip[i] = -1;
    }
    if (oom) {
        loom__sim_machine_free(X);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "simulator: out of memory for %d cores' caches",
                              t->cores);
    }
    if (loom__sim_pages_init(X)) {
        loom__sim_machine_free(X);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "simulator: out of memory for the page tables");
    }
    /* the buffers STREAM statements write and those stores write, once for both uses */
    unsigned char *st = calloc((size_t)p->nbufs + 1, 1), *wr = calloc((size_t)p->nbufs + 1, 1);
    if (!st || !wr) {
        free(st);
        free(wr);
        loom__sim_machine_free(X);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "simulator: out of memory for the buffers' marks");
    }
    mark_writes(p->root, st, wr);
    int cold = !t->warm_caches || prewarm(X, st);
    X->cold_warm = cold && t->warm_caches; /* model 86 (sim_machine.h "Write-backs of a cold run") */
    int ok = !cold || first_touches(X, st, wr);
    free(st);
    free(wr);
    if (!ok) {
        loom__sim_machine_free(X);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "simulator: out of memory for the lines' touch bits");
    }
    return LOOM_OK;
}
