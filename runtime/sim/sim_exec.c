/* The simulator's execution: statements, vector iterations and sampling
 * (cores and caches: sim_machine.h, made in sim_setup.c; latency chains: sim_chain.c; a
 * region's cycles: sim_cycles.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../dsl/ir/util.h"
#include "sim_impl.h"
#include "sim_machine.h"

#define BLOCK 8           /* iterations per block (at most) of a loop of >= SAMPLE_MIN_TRIP iterations */
#define SAMPLE_MIN_TRIP 64 /* shorter loops run in blocks of one iteration */
#define WARM_BLOCKS 1      /* blocks of functional warming before a sampled block (warm_before) */

static int64_t rd(simx *X, int buf, int64_t i)
{
    const sbuf *B = &X->p->bufs[buf];
    if (B->ints && i >= 0 && i < B->elems)
        return B->ints[i];
    if (X->st == LOOM_OK)
        X->st = loom_error_set(X->err, LOOM_ERR_INVALID, NULL, 0, 0,
                               "simulator: read of %s[%lld] outside its %lld entries", B->name, (long long)i,
                               (long long)B->elems);
    return 0;
}

static int64_t ev_slow(simx *X, core *C, const sx *e);

/* n vector adds or shuffles: FP operations either kind of pipe takes (model 70) */
static inline void add_fadd(core *C, double n)
{
    C->c.fp += n;
    C->c.fadd += n;
}

/* the common forms inline (affine, a variable, a constant); the rest recurse */
static inline int64_t ev(simx *X, core *C, const sx *e)
{
    if (e->kind == SX_AFF) {
        int64_t v = e->ival;
        for (int k = 0; k < e->nterm; k++)
            v += e->tc[k] * C->vars[e->tv[k]];
        return v;
    }
    if (e->kind == SX_VAR)
        return C->vars[e->var];
    if (e->kind == SX_CONST)
        return e->ival;
    return ev_slow(X, C, e);
}

static int64_t ev_slow(simx *X, core *C, const sx *e)
{
    switch (e->kind) {
    case SX_CONST: return e->ival;
    case SX_VAR: return C->vars[e->var];
    case SX_AFF: {
        int64_t v = e->ival;
        for (int k = 0; k < e->nterm; k++)
            v += e->tc[k] * C->vars[e->tv[k]];
        return v;
    }
    case SX_LOAD: {
        int64_t i = ev(X, C, e->a);
        mem(X, C, e->site, e->buf, i, 0);
        return rd(X, e->buf, i);
    }
    case SX_NEG: return -ev(X, C, e->a);
    case SX_NOT: return !ev(X, C, e->a);
    case SX_BIN: {
        int64_t a = ev(X, C, e->a);
        if (e->op == LIR_AND && !a)
            return 0;
        if (e->op == LIR_OR && a)
            return 1;
        return loom__sim_int_op(e->op, a, ev(X, C, e->b));
    }
    }
    return 0;
}

/* ---- statements ---- */

static void exec(simx *X, core *C, const sst *s, int depth);

static void run_vector(simx *X, core *C, const sst *s, int64_t lo, int64_t hi, int depth)
{
    const loom_target *t = X->t;
    int V = X->lanes;
    if (hi > lo) { /* unswitched on each invariant select: an unpredictable branch (sim.h) */
        C->c.bmiss += LOOM_SIM_SELECT_MISS_RATE * s->inv_selects;
        C->c.br += s->inv_selects;
    }
    int spill_chained = 0; /* model 37: this instance waited a spill's round trip */
    C->vvecs = (hi - lo + V - 1) / V;
    for (int64_t v0 = lo, n; v0 < hi; v0 += n) {
        n = s->pieces      ? loom__sim_piece(v0 - lo, hi - lo, V)
            : s->rt_pieces ? loom__sim_rt_piece(v0 - lo, hi - lo, V)
            : hi - v0 < V  ? hi - v0
                           : V;
        if (s->vinner) { /* sim.h "Outer-loop vectors" (model 20) */
            double fl = C->c.flops;
            int vm = C->vmode;
            C->vmode = 0;
            C->vars[s->var] = v0;
            exec(X, C, s->body, depth + 1);
            C->vmode = vm;
            C->c.flops = fl + (C->c.flops - fl) * (double)n;
            C->c.iops += !s->peeled;
            C->c.br += !s->peeled;
            C->c.events += 1;
            continue;
        }
        for (int i = 0; i < s->nvsites; i++) {
            vsite *q = &C->vs[s->vsites[i]];
            q->lanes = 0;
            q->cls = 0;
        }
        C->vmode = 1;
        C->vmasked = 0;
        int64_t direct = s->affine_body && n > 2 ? 2 : n;
        for (int64_t l = 0; l < direct; l++) {
            C->vars[s->var] = v0 + l;
            C->vlane0 = l == 0;
            C->vfirst = l == 0 && v0 == lo;
            exec(X, C, s->body, depth + 1);
        }
        if (direct < n) {
            /* every address is affine in the lane: lanes 2.. extrapolate
             * each site's stride from lanes 0 and 1 (exact) */
            for (int i = 0; i < s->nvsites; i++) {
                vsite *q = &C->vs[s->vsites[i]];
                if (q->lanes != 2)
                    continue;
                int64_t d = (int64_t)(q->prev - q->first);
                if (!q->reg) {
                    /* lanes on the line the site touched last are L1 hits
                       (touch's first check), counted together */
                    const uint64_t *last = &C->last_line[s->vsites[i]];
                    double same = 0;
                    for (int64_t l = 2; l < n; l++) {
                        uint64_t a = q->first + (uint64_t)(l * d);
                        if (*last != (a >> X->line_shift) + 1) {
                            touch(X, C, s->vsites[i], q->buf, a, q->store);
                            continue;
                        }
                        /* this lane and the next ones on its line */
                        int64_t k = n - l;
                        if (d > 0) {
                            uint64_t room = (((a >> X->line_shift) + 1) << X->line_shift) - a;
                            k = (int64_t)((room + (uint64_t)d - 1) / (uint64_t)d);
                            k = k < n - l ? k : n - l;
                        } else if (d < 0)
                            k = 1;
                        same += (double)k;
                        l += k - 1;
                    }
                    C->c.acc[0] += same;
                }
                q->prev = q->first + (uint64_t)((n - 1) * d);
                q->lanes = (int)n;
                C->c.events += (double)(n - 2);
            }
            C->c.flops += s->vbody.flops * (double)(n - 2);
            C->vars[s->var] = v0 + n - 1;
        }
        C->vmode = 0;
        if (s->fold_left) { /* sim.h "Vectors": n - 1 more adds in the chain, a shuffle and an add a lane */
            if (s->rt_pieces) /* model 53: on the sum's segment */
                loom__sim_local_chain(C, s->sum_var, (double)(n - 1) * FP_LATENCY);
            else
                C->c.chain += (double)(n - 1) * FP_LATENCY;
            add_fadd(C, 2.0 * (double)n - 1);
        }
        C->c.fp += s->vbody.fp;
        C->c.fadd += s->vbody.fadd;
        if (2 * n <= V && t->narrow_fma_units > t->fma_units) /* model 92 (sim.h "Cycles") */
            C->c.fnarrow += s->vbody.fp;
        C->c.iops += s->vbody.iops + !s->peeled; /* sim.h "Vectors": a peeled loop has no loop op */
        C->c.br += !s->peeled;
        C->c.events += 1;
        for (int i = 0; i < s->nvsites; i++) {
            vsite *q = &C->vs[s->vsites[i]];
            if (!q->lanes)
                continue;
            if (q->reg) {
                q->lanes = 0;
                continue;
            }
            if (q->cls == 3) {
                C->c.gathers += q->lanes;
                C->c.extra += q->lanes * t->gather_cycles_per_lane;
            }
            if (!q->store && v0 == lo) { /* sim.h "Unrolled copies" */
                q->cse = C->unroll_epoch > 0 && q->inst_epoch == C->unroll_epoch && q->inst_first == q->first &&
                         q->cls != 3;
                /* too few copies for its vectors: cc folds it into each copy's FMA (model 13) */
                if (q->cse && loom_target_folds_shared_load(t, C->unroll_trip, (hi - lo + V - 1) / V))
                    q->cse = 0;
                q->inst_first = q->first;
                q->inst_epoch = C->unroll_epoch;
            }
            if (q->store) {
                const sbuf *B = &X->p->bufs[q->buf];
                C->c.st += 1;
                if (B->reg && B->spill_chain) { /* model 37: the spilled vectors' chains, side by side */
                    if (!spill_chained)
                        C->c.chain += LOOM_SIM_SPILL_ROUND_TRIP_CYCLES - FP_LATENCY;
                    spill_chained = 1;
                } else if (B->reg) {
                    spilled_update(&C->c, B); /* models 33, 81, 97 */
                }
            } else if (!q->cse && (q->cls != 1 || v0 == lo))
                C->c.ld += 1; /* a broadcast is loop-invariant: cc loads it once per instance */
            else if (q->cls == 1 && s->pieces && n > 1 && v0 > lo)
                add_fadd(C, 1); /* model 39: a narrower piece's broadcast, a shuffle of the first's */
            q->lanes = 0; /* a site shared by nested statements is charged once */
        }
        C->c.extra += (double)(C->vmasked < n ? C->vmasked : n) * t->masked_lane_cycles;
    }
    if (s->has_red == 1 && V > 1) { /* a sum: cc adds the lanes in order (no -ffast-math) */
        /* model 79: the lanes the loop fills -- a shorter loop's tree is LOOM_RW(trip) wide
           (codegen.c TREE_HELPERS: 8, else 4), not the vector's */
        int64_t w = hi - lo >= V ? V : hi - lo >= 8 ? 8 : 4;
        w = w < V ? w : V;
        add_fadd(C, (double)(w - 1));
        C->c.iops += (double)(w - 1); /* a shuffle per lane */
    } else if (s->has_red && V > 1)
        add_fadd(C, X->log2_lanes);
}

/* Budgeted loops (sim.h "Sampling"): blocks of a loop instance's
 * iterations [start, start + len * step) for core C, interleaved by the
 * caller for a parallel loop's chunks. */
typedef struct chunk {
    int64_t start, len, pos, simulated;
    int64_t step;      /* iteration k of the chunk is start + k * step: 1 for a
                          contiguous block, the core count for a cyclic schedule */
    int64_t blk;       /* iterations per block after the decision */
    int64_t pre_iters; /* iterations simulated before the stride was decided (the prefix) */
    int64_t from;      /* the iteration where the strided part begins (its first block always runs) */
    ctr pre;           /* the core's counters then */
    ctr pre2;          /* and its other phase's (model 64) */
    int64_t stride;    /* 0: undecided, 1: every block, k: every k-th */
    double events0, budget;
    double it_budget;  /* each iteration's budget, handed to the loops in its body */
    int var;           /* the loop variable */
    double ovh;        /* integer ops per iteration (loop overhead) */
    int copy0;         /* model 95: copies -- the core's copy around the loop, plus 1 (0: not copies) */
    int64_t first;     /* the loop iteration of the chunk's iteration 0; trip: the loop's */
    int64_t trip;
} chunk;

static void chunk_init(chunk *ch, int64_t start, int64_t len, int64_t step, double budget, double events)
{
    memset(ch, 0, sizeof *ch);
    ch->start = start;
    ch->len = len > 0 ? len : 0;
    ch->step = step;
    ch->budget = budget;
    ch->it_budget = ch->len <= 1 ? budget : budget / 2;
    ch->events0 = events;
}

/* After the prefix (spent events in pre_iters iterations): the block size
 * and the stride that fit the rest in what is left of the budget. */
static void decide(core *C, chunk *ch, double spent)
{
    ch->pre_iters = ch->simulated;
    ch->from = ch->pos;
    ch->pre = C->c;
    ch->pre2 = C->c2;
    double avg = spent / (double)ch->pre_iters, rest = avg * (double)(ch->len - ch->pos);
    double left = fmax(ch->budget - spent, ch->budget / 2);
    /* blocks of up to BLOCK consecutive iterations (their reuse of each
       other's lines is kept), small enough that two fit in what is left */
    double fit = floor(left / (2 * avg));
    ch->blk = ch->len < SAMPLE_MIN_TRIP || fit < 1 ? 1 : fit > BLOCK ? BLOCK : (int64_t)fit;
    ch->stride = rest > left ? (int64_t)ceil(rest / left) : 1;
}

/* Functional warming (sim.h "Sampling"; SMARTS, Wunderlich et al., ISCA
 * 2003): before a sampled block whose predecessor was skipped, the
 * skipped range's last WARM_BLOCKS blocks run with their counters thrown
 * away, so the block finds the caches, branch predictors, accumulation
 * chains and software-prefetched lines as the skipped iterations left
 * them.  The warm-up's events do not count against the budget. */
/* Iterations [q0, q1) of chunk ch, each with its share of the budget. */
static void run_iterations(simx *X, core *C, const sst *s, const chunk *ch, int64_t q0, int64_t q1, int depth)
{
    for (int64_t q = q0; q < q1 && X->st == LOOM_OK; q++) {
        C->vars[ch->var] = ch->start + q * ch->step;
        if (ch->copy0) /* model 95: each copy's loads are instructions of their own */
            C->copy = (int)(((int64_t)(ch->copy0 - 1) * ch->trip + ch->first + q) % LOOM_SIM_COPY_SITES) + 1;
        C->c.iops += ch->ovh;
        C->c.br += fmin(ch->ovh, 1); /* its branch: 1 / unroll of one for a FOR, one for a counted while */
        C->c.events += 1;
        C->lb = ch->it_budget;
        C->lb_e0 = C->c.events;
        exec(X, C, s->body, depth + 1);
    }
}

static void warm_before(simx *X, core *C, const sst *s, const chunk *ch, int depth)
{
    int64_t w = ch->blk * WARM_BLOCKS, p0 = ch->pos - w < ch->from ? ch->from : ch->pos - w;
    ctr keep = C->c, keep2 = C->c2;
    C->warming++;
    run_iterations(X, C, s, ch, p0, ch->pos, depth);
    C->warming--;
    C->c = keep;
    C->c2 = keep2;
    loom__sim_chain_new_group(C); /* the warm-up's chains overlap nothing counted */
}

/* One iteration of an undecided chunk (the prefix runs iteration by
 * iteration), or one block of a decided one (skipped unless it is a
 * stride-th block from the decision). */
static void run_block(simx *X, core *C, const sst *s, chunk *ch, int depth)
{
    int64_t n = 1;
    if (ch->stride) {
        n = ch->len - ch->pos < ch->blk ? ch->len - ch->pos : ch->blk;
        if (ch->stride > 1 && ((ch->pos - ch->from) / ch->blk) % ch->stride) {
            ch->pos += n;
            return;
        }
    }
    deadline_check(X);
    double skip = C->skip;
    if (ch->stride > 1 && ch->pos > ch->from) {
        C->skip = (skip > 1 ? skip : 1) * (double)ch->stride;
        warm_before(X, C, s, ch, depth);
    }
    run_iterations(X, C, s, ch, ch->pos, ch->pos + n, depth);
    C->skip = skip;
    ch->pos += n;
    ch->simulated += n;
    double spent = C->c.events - ch->events0;
    if (ch->stride == 0 && spent >= ch->budget / 16 && ch->pos < ch->len)
        decide(C, ch, spent);
}

/* c = pre + (c - pre) * s, except the work counter (events) */
static void scale_after(ctr *c, const ctr *pre, double s)
{
    double ev = c->events;
    double *a = (double *)c;
    const double *b = (const double *)pre;
    for (size_t i = 0; i < sizeof(ctr) / sizeof(double); i++)
        a[i] = b[i] + (a[i] - b[i]) * s;
    c->events = ev;
}

/* The scale of chunk ch's strided part (sim.h "Sampling", model 21): the
 * work (loom__sim_iter_work, sim_work.c) of all its iterations over that of
 * the simulated ones; 0 when an iteration's work is unknown or counting it
 * would take more evaluations than the chunk's own event budget. */
static double work_scale(simx *X, core *C, const sst *s, const chunk *ch)
{
    int64_t *tmp = malloc(sizeof(int64_t) * (size_t)(X->p->nvars > 0 ? X->p->nvars : 1));
    if (!tmp)
        return 0;
    memcpy(tmp, C->vars, sizeof(int64_t) * (size_t)X->p->nvars);
    double all = 0, sim = 0;
    int64_t left = (int64_t)ch->budget;
    for (int64_t q = ch->from; q < ch->len; q++) {
        double w = loom__sim_iter_work(X->p, s, ch->var, ch->start + q * ch->step, tmp, &left);
        if (w < 0) {
            free(tmp);
            return 0;
        }
        all += w;
        if (((q - ch->from) / ch->blk) % ch->stride == 0)
            sim += w;
    }
    free(tmp);
    return sim > 0 ? all / sim : 0;
}

/* Scale core C's counters for the blocks its chunk (of loop s) skipped:
 * the prefix simulated before the stride was decided counts once, the
 * strided part stands for all the iterations after the prefix (the first
 * block after the decision always runs, so a skipped block always has a
 * simulated one after the prefix), weighed by their work (work_scale; by
 * their count when it is unknown).  An outermost loop's iterations count
 * in sample_fraction. */
static void chunk_scale(simx *X, core *C, const sst *s, const chunk *ch, int outermost)
{
    if (outermost) {
        X->samp_sim += (double)(ch->simulated < ch->len ? ch->simulated : ch->len);
        X->samp_total += (double)ch->len;
    }
    if (ch->simulated <= 0 || ch->simulated >= ch->len || ch->simulated <= ch->pre_iters || !ch->stride)
        return;
    X->r->sampled = 1;
    double k = ch->stride > 1 ? work_scale(X, C, s, ch) : 0;
    if (k <= 0)
        k = (double)(ch->len - ch->pre_iters) / (double)(ch->simulated - ch->pre_iters);
    scale_after(&C->c, &ch->pre, k);
    scale_after(&C->c2, &ch->pre2, k);
}

/* sim.h "Loop set-up" (model 44): what an iteration of a loop whose body
 * holds a loop of run-time bounds adds for the pointers cc advances */
static double nest_iter_iops(const simx *X, const sst *s)
{
    return X->t->issue_chain_norm > 0 && s->rt_inner ? LOOM_SIM_NEST_ITER_IOPS : 0;
}

static void run_parallel(simx *X, const sst *s, int64_t lo, int64_t hi, int depth)
{
    loom__sim_flush(X, 0, NULL);
    X->in_parallel = 1;
    int p = X->ncores;
    int64_t n = hi > lo ? hi - lo : 0, q = n / p, rem = n % p;
    chunk ch[LOOM_SIM_MAX_CORES];
    int active = 0;
    for (int k = 0; k < p; k++)
        active += q + (k < rem) > 0;
    for (int k = 0; k < p; k++) {
        core *C = &X->cores[k];
        int64_t len = q + (k < rem);
        C->budget = X->budget / (active ? active : 1);
        if (s->par_chunk > 0) /* cyclic (schedule(static, 1)): core k runs k, k + p, ... */
            chunk_init(&ch[k], lo + k, len, p, C->budget, C->c.events);
        else
            chunk_init(&ch[k], lo + k * q + (k < rem ? k : rem), len, 1, C->budget, C->c.events);
        ch[k].var = s->var;
        ch[k].ovh = s->inv_unroll + nest_iter_iops(X, s);
        if (k)
            memcpy(C->vars, X->cores[0].vars, sizeof(int64_t) * (size_t)X->p->nvars);
        C->nest = 1;
    }
    for (int left = 1; left && X->st == LOOM_OK;) {
        left = 0;
        for (int k = 0; k < p; k++)
            if (ch[k].pos < ch[k].len) {
                run_block(X, &X->cores[k], s, &ch[k], depth);
                left |= ch[k].pos < ch[k].len;
            }
    }
    for (int k = 0; k < p; k++) {
        chunk_scale(X, &X->cores[k], s, &ch[k], 1);
        X->cores[k].nest = 0;
    }
    loom__sim_flush(X, 1, NULL);
    X->cores[0].budget = X->budget;
    X->cores[0].lb = X->budget;
    X->cores[0].lb_e0 = 0;
    X->in_parallel = 0;
}

/* A loop on one core (not vector code, not containing a parallel loop):
 * its budget is what is left of the enclosing iteration's (at least 1/16
 * of it); the sampling rule of sim.h. */
static void run_loop(simx *X, core *C, const sst *s, int64_t lo, int64_t hi, int64_t step, int var, double ovh,
                     int depth)
{
    double lb = C->lb, lb_e0 = C->lb_e0;
    int64_t len = step > 1 ? (hi - lo + step - 1) / step : hi - lo;
    /* sim.h "Guarded iterations": runs of iterations that pass the loop's
       guard equally often are sampled apart */
    int64_t cut[LOOM_SIM_GUARD_RUNS + 1] = {0, len};
    int runs = s->guard ? loom__sim_guard_runs(s, C->vars, var, lo, step, len, cut) : 0;
    if (runs < 2) {
        runs = 1;
        cut[1] = len;
    }
    int outermost = C->nest++ == 0, copy = C->copy;
    int copies = !s->vec && s->loop_kind == LIR_LOOP_UNROLLED && len <= s->unroll && X->t->stride_prefetch_lines > 0;
    for (int r = 0; r < runs && X->st == LOOM_OK; r++) {
        if (cut[r + 1] <= cut[r])
            continue;
        chunk ch;
        chunk_init(&ch, lo + cut[r] * step, cut[r + 1] - cut[r], step, fmax(lb - (C->c.events - lb_e0), lb / 16),
                   C->c.events);
        ch.var = var;
        ch.ovh = ovh;
        ch.copy0 = copies ? copy + 1 : 0;
        ch.first = cut[r];
        ch.trip = len;
        while (ch.pos < ch.len && X->st == LOOM_OK)
            run_block(X, C, s, &ch, depth);
        C->copy = copy;
        C->lb = lb;
        C->lb_e0 = lb_e0;
        chunk_scale(X, C, s, &ch, outermost);
    }
    C->nest--;
}

/* The variable of an expression that is just that variable, else -1. */
static int plain_var(const sx *e)
{
    if (e->kind == SX_VAR)
        return e->var;
    if (e->kind == SX_AFF && e->nterm == 1 && e->tc[0] == 1 && e->ival == 0)
        return e->tv[0];
    return -1;
}

/* A while loop that counts -- `while (v < hi)` whose body ends with
 * `v = v + step` (step > 0) and sets neither v elsewhere nor hi's
 * variable -- runs as a budgeted loop of ceil((hi - v) / step) iterations
 * (the lowering's key-block loops of fused attention).  Returns 0 (and
 * does nothing) for any other while loop. */
static int counted_while(simx *X, core *C, const sst *s, int depth)
{
    const sx *cd = s->cond;
    const sst *b = s->body;
    if (cd->kind != SX_BIN || cd->op != LIR_LT || b->kind != SS_SEQ || b->items_n < 1)
        return 0;
    int v = plain_var(cd->a), hv = cd->b->kind == SX_CONST ? -2 : plain_var(cd->b);
    const sst *inc = b->items[b->items_n - 1];
    if (v < 0 || hv == -1 || hv == v || inc->kind != SS_SETI || inc->var != v || inc->value->kind != SX_AFF ||
        inc->value->nterm != 1 || inc->value->tv[0] != v || inc->value->tc[0] != 1 || inc->value->ival <= 0)
        return 0;
    for (int i = 0; i < b->items_n - 1; i++)
        if (loom__sim_sets_var(b->items[i], v) || (hv >= 0 && loom__sim_sets_var(b->items[i], hv)))
            return 0;
    int64_t lo = C->vars[v], hi = ev(X, C, cd->b), step = inc->value->ival;
    int64_t n = hi > lo ? (hi - lo + step - 1) / step : 0;
    C->c.events += 1; /* the last condition, false */
    C->c.iops += s->c.iops;
    run_loop(X, C, s, lo, lo + n * step, step, v, s->c.iops, depth);
    C->vars[v] = lo + n * step;
    return 1;
}

/* A FILL: the buffer's lines written through the caches (sim.h "Fills"). */
static void exec_fill(simx *X, core *C, const sst *s)
{
    int64_t n = ev(X, C, s->fill_size);
    const sbuf *B = &X->p->bufs[s->fill_buf];
    if (C->bseg && B->local && !C->vmode && (s->dense_scope || s->row_scope)) /* sim.h "Independent chains", models 38, 56 */
        loom__sim_workspace_restart(C, s->fill_buf, s->row_scope);
    if (B->reg) { /* zeroing registers; model 46: none when cc folds the zero (sim.h "Register-resident workspaces") */
        if (!(s->dense_scope && X->t->issue_chain_norm > 0))
            C->c.iops += ceil((double)(n > 0 ? n : 0) * 32 / X->t->vector_bits);
        C->c.events += 1;
        return;
    }
    uint64_t a0 = B->base + (B->local ? (uint64_t)C->id << 20 : 0), a1 = a0 + (uint64_t)(n > 0 ? n : 0) * 4;
    double d0 = C->c.dram;
    for (uint64_t line = a0 >> X->line_shift; (line << X->line_shift) < a1; line++) {
        int hit = line_access(X, C, line, 1);
        C->c.events += 1;
        (void)hit; /* a fill streams: prefetched, no latency stall */
    }
    if (!B->local && !X->in_parallel && X->ncores > 1) { /* sim.h "Fills" */
        if (X->owner) { /* model 80: the other cores' share of the lines, core-to-core transfers (model 67) */
            int fs = X->first_shared < X->nlev ? X->first_shared : X->nlev;
            double lines = (double)(X->ncores - 1) / X->ncores * (double)((a1 - a0) >> X->line_shift);
            if (!C->warming) {
                C->c.xfer_miss += lines;
                C->c.stall += lines * X->stall_lat[fs];
            }
        } else
            C->c.dram = fmax(C->c.dram, d0 + 2.0 * (X->ncores - 1) / X->ncores * (double)(a1 - a0));
    }
    double vec_bytes = X->t->vector_bits / 8.0;
    double nst = ceil((double)(a1 - a0) / vec_bytes);
    C->c.st += nst;
    C->c.iops += nst;
}

/* A software prefetch (issue 13; sim.h "Software prefetch", models 30 and
 * 45; sim.h "Late prefetches", model 50): its lines come in through the
 * hierarchy (their misses and DRAM bytes count) without the stall of a
 * demand miss; one instruction per line, in the issue slots but not on a
 * load port (model 98: it brings no data to a register).  The later demand
 * access then finds them where they landed (sim_prefetch.c). */
static void exec_prefetch(simx *X, core *C, const sst *s)
{
    if (s->merge_trip > 1 && C->vars[s->merge_var] != s->merge_lo) { /* model 93: the first copy's, merged */
        C->c.events += 1;
        return;
    }
    int64_t i0 = ev(X, C, s->value), n = ev(X, C, s->fill_size) * (s->merge_trip > 1 ? s->merge_trip : 1);
    const sbuf *B = &X->p->bufs[s->fill_buf];
    uint64_t a0 = B->base + (uint64_t)i0 * 4 + (B->local ? (uint64_t)C->id << 20 : 0);
    uint64_t a1 = a0 + (uint64_t)(n > 0 ? n : 0) * 4;
    C->c.events += 1;
    if (!C->vmode)
        C->c.iops += s->c.iops;
    loom__sim_prefetch_lines(X, C, s, a0, a1); /* sim_prefetch.c */
}

/* A STREAM: non-temporal stores from a workspace. */
static void exec_stream(simx *X, core *C, const sst *s)
{
    /* non-temporal stores (issue 13): the workspace is read from L1
     * (its lines are the core's own), the destination's lines go to
     * memory through write-combining buffers without being read (no
     * read-for-ownership) and without a stall, and leave no copy in the
     * core's caches (a later read of them goes to memory; other cores'
     * copies are not modelled).  One vector load and one vector store per
     * vector.  Model 74: as loom_stream_copy (codegen.c) does, the
     * elements before the destination's first vector-aligned address and
     * after its last whole vector are copied one by one with ordinary
     * stores (a 7-float row on AVX2 or AVX-512: all of it). */
    int64_t i0 = ev(X, C, s->value), n = ev(X, C, s->fill_size);
    const sbuf *B = &X->p->bufs[s->fill_buf], *S = &X->p->bufs[s->src_buf];
    uint64_t a0 = B->base + (uint64_t)i0 * 4 + (B->local ? (uint64_t)C->id << 20 : 0);
    uint64_t a1 = a0 + (uint64_t)(n > 0 ? n : 0) * 4;
    uint64_t s0 = S->base + (S->local ? (uint64_t)C->id << 20 : 0);
    uint64_t vb = (uint64_t)X->t->vector_bits / 8, v0 = a0, v1 = a1;
    if (vb >= 16) {
        v0 = (a0 + vb - 1) / vb * vb;
        v1 = v0 < a1 ? v0 + (a1 - v0) / vb * vb : v0;
        if (v1 <= v0)
            v0 = v1 = a1; /* no whole vector: every element one by one */
    }
    C->c.events += 1;
    if (!C->vmode)
        C->c.iops += s->c.iops;
    for (uint64_t line = s0 >> X->line_shift; !S->reg && (line << X->line_shift) < s0 + (a1 - a0); line++)
        (void)line_access(X, C, line, 0);
    for (uint64_t a = a0 == v0 ? v1 : a0; a < a1; a = a + 4 == v0 ? v1 : a + 4) { /* head and tail one by one: a load, a store, the loop's count */
        (void)line_access(X, C, a >> X->line_shift, 1);
        C->c.ld += !S->reg;
        C->c.st += 1;
        C->c.iops += 2;
        C->c.br += 1;
    }
    for (uint64_t line = v0 >> X->line_shift; v1 > v0 && (line << X->line_shift) < v1; line++) {
        C->c.dram += (double)(1 << X->line_shift);
        C->c.nt += (double)(1 << X->line_shift);
        for (int l = 0; l < X->nlev; l++) /* a non-temporal store leaves no copy in this core's caches */
            (void)cache_evict(level(X, C, l), line);
    }
    double nvec = ceil((double)(v1 - v0) / (X->t->vector_bits / 8.0));
    C->c.ld += S->reg ? 0 : nvec;
    C->c.st += nvec;
    C->c.iops += nvec;
}

/* A FOR statement: the loop's set-up and guard, then its iterations run
 * as a parallel region, a vector loop, the sampled serial loop
 * (run_loop), or one by one when a parallel loop is below it. */
static void exec_for(simx *X, core *C, const sst *s, int depth)
{
    int64_t lo = ev(X, C, s->lo), hi = ev(X, C, s->hi);
    C->chunk_epoch += s->chunk_inner; /* model 75: a new chunk, an intermediate's row reloaded */
    /* sim.h "Single iterations" (model 57): cc removes a serial loop of
       literal bounds that runs once -- its body inline, no guard, counter
       or branch */
    if (!C->vmode && !s->rt_bounds && hi - lo == 1 && !s->vec && X->t->issue_chain_norm > 0 &&
        (s->loop_kind == LIR_LOOP_SERIAL || s->loop_kind == LIR_LOOP_UNROLLED)) {
        C->vars[s->var] = lo;
        C->c.events += 1;
        exec(X, C, s->body, depth + 1);
        return;
    }
    if (!C->vmode) {
        C->c.iops += s->c.iops;
        /* sim.h "Loop set-up" (model 44): a loop of run-time bounds cc keeps */
        if (X->t->issue_chain_norm > 0 && s->rt_bounds && !s->vec &&
            !(s->loop_kind == LIR_LOOP_UNROLLED && hi - lo <= s->unroll))
            C->c.iops += LOOM_SIM_LOOP_ENTRY_IOPS + (s->rt_inner ? LOOM_SIM_NEST_ENTRY_IOPS : 0);
        else if (s->rt_pieces && hi > lo) /* model 53: cc's trip tests for its vectors and epilogue */
            C->c.iops += LOOM_SIM_RT_VECTOR_SETUP_IOPS;
        C->c.br += 1; /* the loop's guard */
        int64_t trip = hi > lo ? hi - lo : 0;
        if (C->last_trip[s->site] != trip) {
            int c = s->exposed_chunk, w = s->exposed_ws; /* models 65, 100: a full chunk's boundary is not learned */
            if (c && (trip == c || C->last_trip[s->site] == c))
                C->c.bexp += 1;
            else if (w && (trip == w || C->last_trip[s->site] == w))
                C->c.bexpw += 1;
            else
                C->c.bmiss += 1;
        }
        C->last_trip[s->site] = trip;
    }
    /* a fully unrolled loop: its copies share loads (sim.h "Unrolled copies") */
    if (!C->vmode && !s->vec && s->loop_kind == LIR_LOOP_UNROLLED && hi - lo <= s->unroll) {
        C->unroll_epoch++;
        C->unroll_trip = hi - lo;
    }
    if (s->loop_kind == LIR_LOOP_PARALLEL && !X->in_parallel && C->id == 0) {
        run_parallel(X, s, lo, hi, depth);
        return;
    }
    if (s->vec && !C->vmode) {
        run_vector(X, C, s, lo, hi, depth);
        return;
    }
    if (!C->vmode && !s->has_par) {
        int pv = C->pair_var;
        if (s->pair_sum) { /* model 55: the pair's sum, then one add on the float local's chain */
            C->pair_var = s->pair_sum;
            loom__sim_local_chain(C, s->pair_sum - 1, FP_LATENCY);
            add_fadd(C, 1);
        }
        run_loop(X, C, s, lo, hi, 1, s->var, s->inv_unroll + nest_iter_iops(X, s), depth);
        C->pair_var = pv;
        return;
    }
    for (int64_t v = lo; v < hi && X->st == LOOM_OK; v++) {
        deadline_check(X);
        C->vars[s->var] = v;
        if (!C->vmode) {
            C->c.iops += s->inv_unroll;
            C->c.br += s->inv_unroll;
        }
        C->c.events += 1;
        exec(X, C, s->body, depth + 1);
    }
}

/* an error (X->st) stops the loops; statements run meanwhile only read */
static void exec(simx *X, core *C, const sst *s, int depth)
{
    switch (s->kind) {
    case SS_SEQ:
        for (int i = 0; i < s->items_n; i++)
            exec(X, C, s->items[i], depth);
        return;
    case SS_NOP: return;
    case SS_SETI: {
        double ld = C->c.ld;
        C->vars[s->var] = ev(X, C, s->value);
        C->c.ld = ld + (C->c.ld - ld) * s->hoist_share; /* model 68: an index load hoisted or shared */
        C->c.events += 1;
        if (!C->vmode)
            C->c.iops += (s->c.iops + 0.5) * s->hoist_share; /* the move itself: often free (register
                                                                renaming); model 32's hoisted copies */
        return;
    }
    case SS_WORK: {
        C->c.events += 1;
        /* sim.h "Independent chains", model 54: the intermediate's element this
           accumulation loads is still in a register from the loop instance before --
           within one instance of a PosSplit chunk's loop (model 75: GCC 12 reloads
           gcn2's T1 row at every chunk of 2; chunk_epoch counts the chunks begun) */
        int fwd = 0, have_si = 0;
        int64_t si = 0;
        if (s->self_load && s->store_temp && C->vmode && C->self_reg) {
            if (C->vfirst) {
                si = ev(X, C, s->store_index);
                have_si = 1;
                uint64_t key = (uint64_t)si + 1 + ((uint64_t)s->store_buf << 40);
                C->self_reg[s->store_site] = C->last_rmw[(size_t)s->store_site * LOOM_SIM_RMW_HISTORY] == key &&
                                             C->vvecs <= X->t->vector_registers / 2 &&
                                             C->self_epoch[s->store_site] == C->chunk_epoch;
                C->self_epoch[s->store_site] = C->chunk_epoch;
            }
            fwd = C->self_reg[s->store_site];
        }
        for (int i = 0; i < s->nacc; i++)
            if (!fwd || i != s->self_load - 1)
                mem(X, C, s->acc[i].site, s->acc[i].buf, ev(X, C, s->acc[i].index), 0);
        if (s->store_buf >= 0) {
            int64_t i = have_si ? si : ev(X, C, s->store_index);
            mem(X, C, s->store_site, s->store_buf, i, 1);
            if (s->rmw)
                loom__sim_accumulate(C, s, i, fwd || loom__sim_in_register(&X->p->bufs[s->store_buf], i));
        } else if (s->rmw && C->pair_var == s->fvar + 1 && !C->vmode)
            ; /* model 55: the pair's own chain, overlapped (sim.h "Vectors") */
        else if (s->rmw && (!C->vmode || C->vlane0))
            loom__sim_accumulate_local(C, s->fvar);
        else if (!s->rmw && s->fvar >= 0 && (!C->vmode || C->vlane0))
            loom__sim_local_restart(C, s->fvar);
        C->c.flops += s->c.flops;
        if (!C->vmode) {
            C->c.fp += s->c.fp;
            C->c.fadd += s->c.fadd;
            C->c.iops += s->c.iops;
        }
        return;
    }
    case SS_IF: {
        int64_t cnd = ev(X, C, s->cond);
        C->c.events += 1;
        if (C->vmode) {
            if (!cnd)
                C->vmasked++;
        } else {
            C->c.iops += s->c.iops;
            C->c.br += 1;
            unsigned char *b = &C->bpred[s->site];
            if ((*b >= 2) != (cnd != 0))
                C->c.bmiss += 1;
            if (cnd && *b < 3)
                (*b)++;
            else if (!cnd && *b > 0)
                (*b)--;
        }
        if (cnd)
            exec(X, C, s->body, depth);
        else if (s->els)
            exec(X, C, s->els, depth);
        return;
    }
    case SS_WHILE:
        if (!C->vmode && !s->has_par && counted_while(X, C, s, depth))
            return;
        for (;;) {
            int64_t cnd = ev(X, C, s->cond);
            C->c.events += 1;
            C->c.iops += s->c.iops;
            C->c.br += 1;
            if (!cnd || X->st != LOOM_OK)
                return;
            exec(X, C, s->body, depth + 1);
        }
    case SS_FILL:
        exec_fill(X, C, s);
        return;
    case SS_STREAM:
        exec_stream(X, C, s);
        return;
    case SS_PREFETCH:
        exec_prefetch(X, C, s);
        return;
    case SS_FOR:
        if (s->phase && !C->in_phase && !C->vmode) { /* model 64 */
            loom__sim_phase_swap(C);
            C->in_phase = 1;
            exec_for(X, C, s, depth);
            C->in_phase = 0;
            loom__sim_phase_swap(C);
        } else
            exec_for(X, C, s, depth);
        return;
    }
}

loom_status loom__sim_exec(const sprog *p, const loom_target *t, double budget, double deadline, loom_sim_result *out,
                           loom_error *err)
{
    simx X;
    memset(&X, 0, sizeof X);
    X.deadline = deadline;
    X.tick = 1;
    X.p = p;
    X.t = t;
    X.r = out;
    X.err = err;
    X.st = LOOM_OK;
    X.budget = budget;
    loom_status st = loom__sim_machine_init(&X, err);
    if (st != LOOM_OK)
        return st;
    X.cores[0].budget = budget;
    X.cores[0].lb = budget;
    exec(&X, &X.cores[0], p->root, 0);
    loom__sim_flush(&X, 0, NULL);
    if (X.st == LOOM_OK)
        loom__sim_finish(&X);
    free(X.rt);
    loom__sim_machine_free(&X);
    if (X.st != LOOM_OK) {
        st = X.st;
        memset(out, 0, sizeof *out);
        return st;
    }
    out->sample_fraction = X.samp_total > 0 ? X.samp_sim / X.samp_total : 1;
    if (!out->sampled)
        out->sample_fraction = 1;
    out->latency_s = out->cycles / (t->ghz * 1e9);
    return LOOM_OK;
}
