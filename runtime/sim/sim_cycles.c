/* The simulator's cycle model (sim.h "Cycles"): a region's cycles from the
 * counters its cores gathered -- compute, memory, their overlap, branch
 * memory, the level-bandwidth bound, the chip's DRAM bandwidth and the
 * parallel region's overhead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_impl.h"
#include "sim_machine.h"

/* The fraction of a core's data-dependent branch misses that still miss
 * once the predictor has learned the repeated run, looked up at m -- the
 * branches of the calibration's loop that miss as often as the core does
 * over the whole kernel (sim.h "Branch memory", model 58): the target's
 * points, interpolated in log(branches), held flat outside them; 1 without
 * points. */
static double branch_memory_left(const loom_target *t, double m)
{
    int n = t->nbranch_memory;
    if (n == 0 || m <= 0)
        return 1;
    if (m <= t->branch_memory[0][0])
        return t->branch_memory[0][1];
    for (int i = 1; i < n; i++)
        if (m <= t->branch_memory[i][0]) {
            double x0 = log(t->branch_memory[i - 1][0]), x1 = log(t->branch_memory[i][0]);
            double w = (log(m) - x0) / (x1 - x0);
            return t->branch_memory[i - 1][1] + w * (t->branch_memory[i][1] - t->branch_memory[i - 1][1]);
        }
    return t->branch_memory[n - 1][1];
}

/* A core's issue-slot bound and its latency chain together (sim.h
 * "Cycles", model 15): the target's issue_chain_norm p, (a^p + b^p)^(1/p);
 * the longer of the two without it. */
static double issue_and_chain(const loom_target *t, double a, double b)
{
    double p = t->issue_chain_norm, m = fmax(a, b);
    if (p <= 0 || m <= 0)
        return m;
    if (p == 2)
        return hypot(a, b);
    return m * pow(pow(a / m, p) + pow(b / m, p), 1 / p);
}

/* sim_machine.h "Level bandwidth" (models 19 and 27): a private level's bandwidth
 * time and the core's other cycles as their LOOM_SIM_LEVEL_BANDWIDTH_NORM
 * norm -- the longer of the two when the other is small, more than it when
 * both are near it. */
static double level_bandwidth_norm(double core, double level)
{
    double p = LOOM_SIM_LEVEL_BANDWIDTH_NORM, m = fmax(core, level);
    if (m <= 0 || level <= 0)
        return m;
    return m * pow(pow(core / m, p) + pow(level / m, p), 1 / p);
}

/* sim_machine.h "Shared pages" (models 22 and 87): each core's L1 misses on
 * tracked pages in the region were counted, raw per page (pg_visits) and in
 * its counters by buffer (pvis_buf, the first PVIS_BUFFERS buffers; pvis,
 * all of them), which the sampling scales; of each buffer's, the share
 * that fell on pages another core also stored to costs a transfer each.
 * Called by loom__sim_flush() at the end of a parallel region, before the
 * cores' counters are accounted; the tables are cleared for the next
 * region. */
static void shared_pages(simx *X)
{
    if (!X->pg_writer)
        return;
    int n = X->ncores;
    for (int k = 0; k < n; k++) {
        double all[PVIS_BUFFERS + 1] = {0}, shared[PVIS_BUFFERS + 1] = {0}; /* [PVIS_BUFFERS]: the other buffers */
        for (int b = 0; b < X->p->nbufs; b++) {
            if (!X->pg_writer[b])
                continue;
            int j = b < PVIS_BUFFERS ? b : PVIS_BUFFERS;
            uint64_t np = (X->p->bufs[b].bytes >> STREAM_PAGE_SHIFT) + 1;
            for (uint64_t pg = 0; pg < np; pg++) {
                double v = X->pg_visits[b][pg * (uint64_t)n + (uint64_t)k];
                all[j] += v;
                int16_t w = X->pg_writer[b][pg];
                if (w == -2 || (w >= 0 && w != k))
                    shared[j] += v;
            }
        }
        core *C = &X->cores[k];
        for (ctr *c = &C->c; c; c = c == &C->c ? &C->c2 : NULL) { /* each phase's own (model 64) */
            /* model 87: each buffer's misses scaled as its own sampled blocks were */
            double rest = c->pvis, n_xfer = 0;
            for (int j = 0; j < PVIS_BUFFERS; j++) {
                n_xfer += all[j] > 0 ? c->pvis_buf[j] * (shared[j] / all[j]) : 0;
                rest -= c->pvis_buf[j];
            }
            n_xfer += all[PVIS_BUFFERS] > 0 ? rest * (shared[PVIS_BUFFERS] / all[PVIS_BUFFERS]) : 0;
            c->stall += n_xfer * X->xfer_cost;
            X->r->page_transfers += n_xfer;
            c->pvis = 0;
            memset(c->pvis_buf, 0, sizeof c->pvis_buf);
        }
    }
    for (int b = 0; b < X->p->nbufs; b++) {
        if (!X->pg_writer[b])
            continue;
        uint64_t np = (X->p->bufs[b].bytes >> STREAM_PAGE_SHIFT) + 1;
        memset(X->pg_writer[b], 0xff, np * sizeof(int16_t));
        memset(X->pg_visits[b], 0, np * (uint64_t)n * sizeof(uint32_t));
    }
}

/* Core-to-core lines (model 67; a target's "core_transfer_ns", which loom
 * calibrate measures, with issue_chain_norm and two cores or more).  Each
 * line of a kernel buffer remembers the core that last stored to it; a
 * load by another core drops that core's stale private copies and misses
 * to the shared level, and the line's latency is the transfer's, exposed
 * by model 51's window rule like any other stalled miss: the loads a
 * reorder window holds overlap their transfers.  Why (issue 29): GCN2's
 * A T1 and A T2 read rows of T1 and T2 the other core wrote in the
 * statement before (about 2,170 lines a call); the forty-fifth session
 * charged each transfer alike and moved only the level, but the measured
 * statements differ by how many loads share the window -- seed-3 AVX-512's
 * favourite, peeled chunks of 2 at 15 instructions a nonzero against 11,
 * ran A T2 in 34.4 us against the best's 25.7 (51 against 40 with the
 * vCPUs farther apart), on a copy of Cora without remainders as well.
 * docs/simulator.md "Model 67": GCN2 0.705 / 0.621 / 0.766 / 0.648 ->
 * 0.764 / 0.665 / 0.821 / 0.713, seed-3 AVX-512's regret 1.16x -> 1.05x. */
int loom__sim_pages_init(simx *X)
{
    const sprog *p = X->p;
    X->xfer_cost = LOOM_SIM_PAGE_TRANSFER_MISSES * X->stall_lat[X->first_shared < X->nlev ? X->first_shared : X->nlev - 1];
    /* "Core-to-core lines" (model 67, above): each line's modifying core */
    X->line_xfer = X->t->core_transfer_ns * X->t->ghz;
    if (X->ncores >= 2 && X->line_xfer > 0 && X->t->issue_chain_norm > 0) {
        X->owner = calloc((size_t)p->nbufs, sizeof *X->owner);
        X->owner_line0 = calloc((size_t)p->nbufs, sizeof *X->owner_line0);
        if (!X->owner || !X->owner_line0)
            return -1;
        for (int b = 0; b < p->nbufs; b++) {
            const sbuf *B = &p->bufs[b];
            if (B->local || B->reg || B->bytes == 0)
                continue;
            X->owner_line0[b] = B->base >> X->line_shift;
            if (!(X->owner[b] = calloc((B->bytes >> X->line_shift) + 2, 1)))
                return -1;
        }
    }
    if (X->ncores < 2 || X->t->stream_lines <= 0) /* only with a streamer (sim_machine.h "Shared pages") */
        return 0;
    X->pg_writer = calloc((size_t)p->nbufs, sizeof *X->pg_writer);
    X->pg_visits = calloc((size_t)p->nbufs, sizeof *X->pg_visits);
    if (!X->pg_writer || !X->pg_visits)
        return -1;
    for (int b = 0; b < p->nbufs; b++) {
        const sbuf *B = &p->bufs[b];
        if (B->local || B->reg || B->bytes == 0)
            continue;
        uint64_t np = (B->bytes >> STREAM_PAGE_SHIFT) + 1;
        X->pg_writer[b] = malloc(np * sizeof(int16_t));
        X->pg_visits[b] = calloc(np * (uint64_t)X->ncores, sizeof(uint32_t));
        if (!X->pg_writer[b] || !X->pg_visits[b])
            return -1;
        memset(X->pg_writer[b], 0xff, np * sizeof(int16_t));
    }
    return 0;
}

void loom__sim_pages_free(simx *X)
{
    for (int b = 0; X->owner && b < X->p->nbufs; b++)
        free(X->owner[b]);
    free(X->owner);
    free(X->owner_line0);
    X->owner = NULL;
    X->owner_line0 = NULL;
    for (int b = 0; X->pg_writer && b < X->p->nbufs; b++)
        free(X->pg_writer[b]);
    for (int b = 0; X->pg_visits && b < X->p->nbufs; b++)
        free(X->pg_visits[b]);
    free(X->pg_writer);
    free(X->pg_visits);
    X->pg_writer = NULL;
    X->pg_visits = NULL;
}

/* sim.h "Exposed misses" (model 51; targets with issue_chain_norm, which
 * loom calibrate writes): the cycles a core's stalled demand misses cost
 * beyond their calibrated throughput figure (stall_lat / mlp each) when
 * few of them share the reorder window.  With instr instructions and m
 * such misses, w = max(1, LOOM_SIM_MISS_WINDOW_INSTRUCTIONS * m / instr)
 * misses are in flight together; a miss at a level of latency lat stalls
 * lat less the window's drain time (window / issue width), shared by the
 * w: max(0, (lat - window / issue_width) / w - stall_lat / mlp) more.
 * A line another core modified (model 67, sim_machine.h "Core-to-core
 * lines") is such a miss at the transfer's latency. */
static double exposed_miss_cycles(const simx *X, const ctr *c, double s, double instr)
{
    const loom_target *t = X->t;
    if (t->issue_chain_norm <= 0 || instr <= 0)
        return 0;
    double m = c->xfer_miss * s;
    for (int l = 1; l <= X->nlev; l++)
        m += c->stall_miss[l] * s;
    if (m <= 0)
        return 0;
    double w = fmax(1, LOOM_SIM_MISS_WINDOW_INSTRUCTIONS * m / instr);
    double drain = LOOM_SIM_MISS_WINDOW_INSTRUCTIONS / t->issue_width, extra = 0;
    for (int l = 1; l <= X->nlev; l++) {
        extra += c->stall_miss[l] * s * fmax(0, (level_latency(X, l) - drain) / w - X->stall_lat[l] / t->mlp);
    }
    if (c->xfer_miss > 0) { /* model 67: a line from another core, its throughput charge the shared level's */
        int fs = X->first_shared < X->nlev ? X->first_shared : X->nlev;
        extra += c->xfer_miss * s * fmax(0, (X->line_xfer - drain) / w - X->stall_lat[fs] / t->mlp);
    }
    return extra;
}

/* One core's terms in one region, kept until the kernel ends (sim.h
 * "Branch memory", model 58: the fraction of branch misses a core's
 * predictor leaves depends on its misses over the whole kernel). */
typedef struct rterm {
    int region, core, parallel;
    double comp;  /* the compute bound before extra cycles and branch misses */
    double extra, chain, braw, misses, memc, l2b, shb, dram;
    double l2pf; /* model 90: of the level-bandwidth bound, the prefetched lines' cycles, left out of the norm */
    double bexp, bexpw; /* mispredictions branch memory does not learn (models 65 and 100, sim_chunk.c) */
    double thru; /* model 100: the issue and pipe bound, before the chain */
    double stall; /* of memc: the demand misses' stall cycles, before the DRAM-bandwidth bound (model 61) */
    double wb_lines; /* dirty lines written back to memory (model 86) */
    double nt;       /* of dram: non-temporal stores' bytes (model 99) */
    double fp, ld, st, iops, br; /* for LOOM_SIM_DUMP; st also shares out model 86's write-backs */
} rterm;

/* Keep e; out of memory is the simulation's error (X->st). */
static void rterm_push(simx *X, const rterm *e)
{
    if (X->nrt == X->cap_rt) {
        int cap = X->cap_rt ? 2 * X->cap_rt : 64;
        rterm *n = realloc(X->rt, (size_t)cap * sizeof *n);
        if (!n) {
            if (X->st == LOOM_OK)
                X->st = loom_error_set(X->err, LOOM_ERR_NOMEM, NULL, 0, 0, "simulator: out of memory for region terms");
            return;
        }
        X->rt = n;
        X->cap_rt = cap;
    }
    X->rt[X->nrt++] = *e;
}

/* Push core k's terms from counters c (scaled by s) and account them;
 * clear c.  0 when c counted nothing. */
static int core_terms(simx *X, int k, ctr *c, double s, int parallel)
{
    const loom_target *t = X->t;
    loom_sim_result *r = X->r;
    if (c->events == 0 && c->iops == 0 && c->fp == 0) {
        memset(c, 0, sizeof *c);
        return 0;
    }
    double fp = c->fp * s, ld = c->ld * s, st = c->st * s, iops = c->iops * s;
    double instr = fp + ld + st + iops;
    rterm e = {.region = X->r->regions, .core = k, .parallel = parallel, .extra = c->extra * s,
               .chain = c->chain * s, .braw = c->bmiss * s * t->branch_miss_cycles, .misses = c->bmiss * s,
               .dram = c->dram * s, .fp = fp, .ld = ld, .st = st, .iops = iops, .br = c->br * s,
               .bexp = c->bexp * s, .bexpw = c->bexpw * s, .wb_lines = c->wb_lines * s, .nt = c->nt * s};
    /* Model 70: a target with add pipes beside its FMA pipes (fadd_units:
       AMD Zen's FADD pipes, which loom calibrate measures) runs the vector
       adds, shuffles and min / max (c->fadd) on either, the FMAs and
       multiplies on the FMA pipes only.  Issue 29, SDDMM Cora D = 64 on
       Zen 5 (AVX-512): the partial sums' 4 adds a nonzero beside 8 FMAs and
       multiplies measured 0.94-1.05x the plain dot product, simulated
       1.05-1.13x with every FP operation on the 2 FMA pipes; GCC 12's tree
       reduction's 5 adds and 4 shuffles a nonzero go to the add pipes too. */
    /* Model 92: on a target with narrow_fma_units (Zen 4: its 512-bit operations take both 256-bit
       pipes, so 2 ymm FMAs issue a cycle against 1 zmm) a vector piece of at most half the lanes
       takes fma_units / narrow_fma_units of a native operation's pipe slot.  Issue 29, GEMM 512 on
       Zen 4 (AVX-512): its tiles 8 or 4 columns wide measured 1.38-1.40x the 32-wide ones (10 pairs
       of records each), simulated 2.01-2.03x with every piece a whole slot, 1.46-1.48x with this. */
    double fpp = fp;
    if (t->narrow_fma_units > t->fma_units)
        fpp -= c->fnarrow * s * (1 - (double)t->fma_units / t->narrow_fma_units);
    e.comp = fpp / t->fma_units;
    if (t->fadd_units > 0)
        e.comp = fmax((fpp - c->fadd * s) / t->fma_units, fpp / (t->fma_units + t->fadd_units));
    e.comp = fmax(e.comp, ld / t->load_ports);
    e.comp = fmax(e.comp, st / t->store_ports);
    /* Model 78: a spilled update's cycles (model 33's LOOM_SIM_SPILL_UPDATE_CYCLES) are
       front-end work beside the instructions' issue slots, not cycles after the FMA pipes':
       GEMM 512's 8 x 64 AVX-512 tile (5 zmm spilled) on Zen 4, whose 32 FMAs a k take 32
       cycles on its one 512-bit pipe, measured 1.03x the best schedule (median of 47 and 39
       records; simulated 1.19-1.20x when they were added after the FMAs, 1.06x now). */
    double issue = instr / t->issue_width + c->spill * s;
    e.thru = fmax(e.comp, issue);
    e.comp = fmax(e.comp, issue_and_chain(t, issue, e.chain));
    /* Model 97: a register tile's spilled vectors wait on their round trips through memory, side
       by side -- a latency bound that contends with the FMA pipes' as a norm, not a max: GEMM
       512's 8 x 64 AVX-512 tile (5 zmm spilled, 16 cycles a k of round trip) took 1.007-1.016x the
       8 x 32 tile's time a FMA on Zen 4, whose FMAs take 32 cycles a k (sim_constants.h). */
    double sc = c->spill_chain * s, sm = fmax(e.comp, sc), q = LOOM_SIM_SPILL_CHAIN_NORM;
    if (sc > 0 && sm > 0)
        e.comp = sm * pow(pow(e.comp / sm, q) + pow(sc / sm, q), 1 / q);
    e.stall = c->stall * s / t->mlp + exposed_miss_cycles(X, c, s, instr);
    e.memc = fmax(e.stall, c->dram * s / (t->core_bandwidth / (t->ghz * 1e9)));
    /* sim_machine.h "Level bandwidth" (models 19, 27): the lines a private level
       past L1 serves this core's loads (not its stores' line fills, model
       42), at its bandwidth -- not a stall, a term that contends with the
       core's issue as a 4-norm */
    int pf_apart = t->issue_chain_norm > 0 && t->vector_bits < LOOM_SIM_PREFETCH_OVERLAP_BITS; /* model 90 */
    for (int l = 1; l < X->first_shared; l++)
        if (t->caches[l].bandwidth > 0) {
            double per_line = s * (double)(1 << X->line_shift) / (t->caches[l].bandwidth / (t->ghz * 1e9));
            double pf = pf_apart ? c->pf_acc[l] : 0, demand = fmax(0, c->acc[l] - c->fill_acc[l] - pf) * per_line;
            if (demand + pf * per_line > e.l2b + e.l2pf) {
                e.l2b = demand;
                e.l2pf = pf * per_line;
            }
        }
    /* sim_machine.h "Shared-level bandwidth" (model 21): the lines the first
       shared level serves this core's loads -- their lookups and the
       streamer's fetches from it that a load used; not stores' line
       fills (model 42) -- at its bandwidth, combined with the core's
       other cycles as a norm (-1: no such level) */
    e.shb = -1;
    if (X->first_shared < X->nlev && t->caches[X->first_shared].bandwidth > 0) {
        int fs = X->first_shared;
        e.shb = (c->acc[fs] - c->fill_acc[fs] + c->pf_useful - c->fill_pf) * s * (double)(1 << X->line_shift) /
                (t->caches[X->first_shared].bandwidth / (t->ghz * 1e9));
    }
    rterm_push(X, &e);
    r->flops += c->flops * s;
    r->instructions += instr;
    r->loads += c->ld * s;
    r->stores += c->st * s;
    r->gathers += c->gathers * s;
    r->branches += c->br * s;
    r->dram_bytes += c->dram * s;
    r->events += c->events;
    for (int l = 0; l < X->nlev; l++) {
        r->accesses[l] += c->acc[l] * s;
        r->misses[l] += c->miss[l] * s;
    }
    memset(c, 0, sizeof *c);
    return 1;
}

/* Model 99: a core's non-temporal stores (a streamed copy-out, sim_exec.c
 * exec_stream) drain through the chip's write path at the target's
 * nt_bandwidth (loom calibrate: non-temporal stores with every thread),
 * shared by the region's cores (`cores`, 1 outside a parallel region);
 * the core pays LOOM_SIM_NT_DRAIN_SHARE of the drain beside its other
 * cycles and finishes no sooner than the drain (sim_constants.h).  A
 * target without nt_bandwidth (written by hand, or calibrated before
 * format 21) keeps core_cycles. */
static double nt_drain(const loom_target *t, double core_cycles, double nt_bytes, int cores)
{
    if (t->mem_nt_bandwidth <= 0 || nt_bytes <= 0)
        return core_cycles;
    double drain = nt_bytes * cores / (t->mem_nt_bandwidth / (t->ghz * 1e9));
    return fmax(core_cycles + LOOM_SIM_NT_DRAIN_SHARE * drain, drain);
}

/* Account the counters every core gathered since the last flush as one
 * region (sim.h "Cycles"), scaling core k's by scale[k] (NULL: 1).  The
 * region's cycles are combined in loom__sim_finish, once every core's
 * branch misses over the kernel are known. */
void loom__sim_flush(simx *X, int parallel, const double *scale)
{
    loom_sim_result *r = X->r;
    int any = 0;
    if (parallel)
        shared_pages(X);
    for (int k = 0; k < X->ncores; k++) {
        double s = scale ? scale[k] : 1;
        if (X->cores[k].npf > 0) { /* model 50: the clock restarts with the counters */
            memset(X->cores[k].pf, 0, LOOM_SIM_PREFETCH_SLOTS * sizeof(pf_slot));
            X->cores[k].npf = 0;
        }
        any |= core_terms(X, k, &X->cores[k].c, s, parallel);
        any |= core_terms(X, k, &X->cores[k].c2, s, parallel); /* model 64: a phase of its own */
    }
    if (!any && !parallel)
        return;
    if (!any) { /* an empty parallel region still costs its fork and join */
        rterm e = {.region = X->r->regions, .core = -1, .parallel = parallel};
        rterm_push(X, &e);
    }
    r->regions++;
    r->parallel_regions += parallel;
}

/* sim_machine.h "Write-backs of a cold run" (model 86): on a warm-caches
 * target whose data does not fit, the stored buffers' bytes the run did not
 * write back to memory yet are DRAM bytes of the regions' cores, shared in
 * proportion to the stores each made, for the chip's bandwidth bound (not
 * the cores' memory terms: a write-back does not stall a core). */
static void cold_write_backs(simx *X)
{
    if (!X->cold_warm || X->stored_bytes <= 0)
        return;
    double written = 0, stores = 0;
    for (int i = 0; i < X->nrt; i++) {
        written += X->rt[i].wb_lines * (double)(1 << X->line_shift);
        stores += X->rt[i].core >= 0 ? X->rt[i].st : 0;
    }
    double rest = X->stored_bytes - written;
    if (stores <= 0 || rest <= 0)
        return;
    for (int i = 0; i < X->nrt; i++)
        if (X->rt[i].core >= 0)
            X->rt[i].dram += rest * X->rt[i].st / stores;
    X->r->dram_bytes += rest;
}

/* The kernel's cycles from the regions' terms (sim.h "Cycles"): each core's
 * branch misses scaled by what its predictor leaves of them over the whole
 * kernel (model 58, "Branch memory"), each region the longest of its
 * cores (a core's phases added up: sim_phase.c, model 64), at least its
 * DRAM bytes at the chip's bandwidth, plus the parallel overhead; regions
 * add up in program order. */
void loom__sim_finish(simx *X)
{
    const loom_target *t = X->t;
    loom_sim_result *r = X->r;
    double bw_chip = t->mem_bandwidth / (t->ghz * 1e9);
    double key[LOOM_SIM_MAX_CORES] = {0};
    cold_write_backs(X);
    for (int i = 0; i < X->nrt; i++)
        if (X->rt[i].core >= 0)
            key[X->rt[i].core] += X->rt[i].misses;
    for (int i = 0; i < X->nrt;) {
        int reg = X->rt[i].region, parallel = X->rt[i].parallel;
        double region = 0, dram = 0, per_core[LOOM_SIM_MAX_CORES] = {0};
        for (; i < X->nrt && X->rt[i].region == reg; i++) {
            const rterm *e = &X->rt[i];
            if (e->core < 0)
                continue;
            double left = branch_memory_left(t, LOOM_SIM_BRANCH_MEMORY_KEY * key[e->core]);
            /* sim.h "Hidden misses" (model 23; calibrated targets): a miss's refill
               overlaps the latency chain still executing, so only the miss cycles
               past the chain's cost, times what branch memory leaves */
            double bcyc = t->issue_chain_norm > 0 ? left * fmax(0, e->braw - e->chain) : left * e->braw;
            /* model 65 (sim_chunk.c): exposed chunk exits at their full cost, past the chain
               the other misses left */
            bcyc += fmax(0, e->bexp * t->branch_miss_cycles - fmax(0, e->chain - e->braw));
            double comp = e->comp + e->extra + bcyc;
            /* sim.h "Cycles", model 61 (calibrated targets): a memory term set by
               the misses' stalls overlaps the core's work less than one set by
               DRAM bandwidth */
            double overlap = t->issue_chain_norm > 0 && e->stall >= e->memc ? LOOM_SIM_STALL_OVERLAP : t->overlap;
            double core_cycles = fmax(comp, e->memc) + (1 - overlap) * fmin(comp, e->memc);
            core_cycles = level_bandwidth_norm(core_cycles, e->l2b);
            core_cycles = nt_drain(t, core_cycles, e->nt, parallel ? X->ncores : 1);
            /* model 100 (sim_chunk.c): a workspace chunk loop's exposed exits, past what the chain
               hides beyond the core's other bounds, after them */
            double bound = fmax(fmax(e->thru, e->memc), e->l2b);
            core_cycles += fmax(0, e->bexpw * t->branch_miss_cycles - fmax(0, e->chain - bound));
            if (e->l2pf > 0) /* model 90 (sim_machine.h "Level bandwidth"): the prefetched lines, a max */
                core_cycles = fmax(core_cycles, e->l2b + e->l2pf);
            if (e->shb >= 0)
                core_cycles = hypot(core_cycles, e->shb);
            if (X->dump) /* sim.h "Cycles": the terms this core's cycles combined, in cycles */
                fprintf(stderr,
                        "loom-sim-core par=%d core=%d fp=%.6g ld=%.6g st=%.6g iops=%.6g chain=%.6g extra=%.6g "
                        "bmiss=%.6g braw=%.6g bexp=%.6g br=%.6g memc=%.6g l2b=%.6g shb=%.6g cyc=%.6g\n",
                        parallel, e->core, e->fp, e->ld, e->st, e->iops, e->chain, e->extra, left * e->braw, e->braw,
                        e->bexp * t->branch_miss_cycles, e->br, e->memc, e->l2b, e->shb > 0 ? e->shb : 0, core_cycles);
            per_core[e->core] += core_cycles; /* model 64: a core's phases add up */
            dram += e->dram;
            r->core_cycles[e->core] += core_cycles;
            r->compute_cycles += comp;
            r->memory_cycles += e->memc;
            r->branch_misses += left * e->misses + e->bexp + e->bexpw;
        }
        for (int k = 0; k < LOOM_SIM_MAX_CORES; k++)
            region = fmax(region, per_core[k]);
        region = fmax(region, dram / bw_chip);
        if (parallel)
            region += t->parallel_overhead_ns * t->ghz;
        r->cycles += region;
    }
    free(X->rt);
    X->rt = NULL;
    X->nrt = X->cap_rt = 0;
}

