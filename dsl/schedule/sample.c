/* The sampling instructions of a schedule -- the holes of a probabilistic
 * schedule program (schedule.h "sampling"; DESIGN.md "Instructions").
 *
 * Sources:
 * - SamplePerfectTile and SampleCategorical follow Apache TVM MetaSchedule's
 *   src/s_tir/schedule/primitive/sampling.cc (Shao et al., NeurIPS 2022;
 *   /work/shared/research/metaschedule.md section 3): factorise the extent,
 *   split every prime's exponent among the tiles (n == 2: x ~ U{0..e} to the
 *   outer tile; exponent 1: a uniform slot; otherwise stars and bars, i.e. a
 *   sample without replacement of n-1 bar positions among e+n-1 slots),
 *   rejection on max_innermost, and the inner-to-outer repair of a replayed
 *   decision (whose innermost tile loom keeps within max_innermost).  Two deliberate differences: factorisation is trial division
 *   (MetaSchedule uses an Euler sieve of primes below 65536; the factors are
 *   the same) and a data-dependent extent samples powers of two for the
 *   inner tiles (MetaSchedule returns [-1, 1, ..., 1]), since loom's position
 *   loops have no static extent but still tile well by powers of two.
 * - Random numbers come from GSL (gsl_rng, mt19937 in loom): integers with
 *   gsl_rng_uniform_int(r, n) (uniform on 0..n-1, unbiased: GSL rejects the
 *   top partial bucket), probabilities with gsl_rng_uniform (uniform [0, 1)).
 *   SampleCategorical walks the cumulative sums of the (unnormalised)
 *   probabilities instead of building gsl_ran_discrete_preproc's alias table
 *   each call: one uniform draw, O(n), no allocation.
 * - Legal loop orders follow AutoSparse (Lacouture et al. 2025): the
 *   compiler enumerates the orders that keep every sparse operand's
 *   traversal concordant (TACO's rule: a compressed/range level is iterated
 *   inside its parent level's loop) and every split's children in order; the
 *   enumeration is a backtracking topological sort in lexicographic order.
 */
#include <math.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "query.h"
#include "schedule_internal.h"

/* Upper bound on the orders SampleLoopOrder enumerates (its decision range). */
/* Rejection sampling tries before SamplePerfectTile gives up. */
#define LOOM_SAMPLE_MAX_TRIES 10000

static const char *block_name(const loom_schedule *sch, int stage)
{
    return sch->prog->tensors[sch->prog->stmts[sch->stages[stage].stmt].lhs].name;
}

/* ---- SamplePerfectTile ------------------------------------------------ */

typedef struct prime_power {
    int64_t p;
    int e;
} prime_power;

/* Trial division; an int64 has at most 15 distinct prime factors. */
static int factorize(int64_t x, prime_power *out)
{
    int n = 0;
    for (int64_t p = 2; p <= x / p; p += (p == 2 ? 1 : 2)) {
        if (x % p)
            continue;
        int e = 0;
        while (x % p == 0) {
            x /= p;
            e++;
        }
        out[n].p = p;
        out[n].e = e;
        n++;
    }
    if (x > 1) {
        out[n].p = x;
        out[n].e = 1;
        n++;
    }
    return n;
}

static int64_t ipow(int64_t p, int e)
{
    int64_t r = 1;
    while (e-- > 0)
        r *= p;
    return r;
}

/* MetaSchedule's SamplePerfectTile(extent, n_splits) without the
 * max_innermost rejection (the caller loops). */
static void perfect_tile_once(gsl_rng *rng, int64_t extent, int n, const prime_power *f, int nf, int64_t *out)
{
    if (n == 1) {
        out[0] = extent;
        return;
    }
    for (int k = 0; k < n; k++)
        out[k] = 1;
    if (extent == 1)
        return;
    if (n == 2) {
        for (int i = 0; i < nf; i++) {
            int x = (int)gsl_rng_uniform_int(rng, (unsigned long)f[i].e + 1);
            out[0] *= ipow(f[i].p, x);
            out[1] *= ipow(f[i].p, f[i].e - x);
        }
        return;
    }
    for (int i = 0; i < nf; i++) {
        if (f[i].e == 1) {
            out[gsl_rng_uniform_int(rng, (unsigned long)n)] *= f[i].p;
            continue;
        }
        /* stars and bars: n-1 bars among e+n-1 slots, drawn without
         * replacement (partial Fisher-Yates), sorted; the gaps between
         * consecutive bars are the exponents of the n tiles */
        int m = f[i].e + n - 1; /* <= 63 + 15 */
        int slots[96], bars[LOOM_MAX_INST_IO + 1];
        for (int k = 0; k < m; k++)
            slots[k] = k;
        for (int k = 0; k < n - 1; k++) {
            int j = k + (int)gsl_rng_uniform_int(rng, (unsigned long)(m - k));
            int t = slots[k];
            slots[k] = slots[j];
            slots[j] = t;
            bars[k] = slots[k];
        }
        for (int a = 1; a < n - 1; a++) /* insertion sort */
            for (int b = a; b > 0 && bars[b - 1] > bars[b]; b--) {
                int t = bars[b];
                bars[b] = bars[b - 1];
                bars[b - 1] = t;
            }
        bars[n - 1] = m;
        for (int k = 0, last = -1; k < n; k++) {
            int x = bars[k] - last - 1;
            last = bars[k];
            out[k] *= ipow(f[i].p, x);
        }
    }
}

/* The decision hook (schedule.h loom_decider_fn): count the sampler and,
 * when it has no decision, ask sch->decider; returns the decision to use
 * (`decision`, buf when the hook decided, or NULL: draw). */
const int64_t *loom__ask_decider(loom_schedule *sch, const int64_t *decision, int kind, int input,
                                 const int64_t *attrs, const double *fattrs, int nattrs, int64_t *buf)
{
    int ordinal = sch->nsampled++;
    if (decision || !sch->decider)
        return decision;
    loom_inst proto = {0};
    proto.kind = kind;
    if (input >= 0)
        proto.inputs[proto.ninputs++] = input;
    for (int k = 0; k < nattrs && k < LOOM_MAX_INST_IO; k++)
        proto.attrs[proto.nattrs++] = attrs[k];
    for (int k = 0; fattrs && k < nattrs && k < LOOM_MAX_INST_IO; k++)
        proto.fattrs[k] = fattrs[k];
    return sch->decider(sch->decider_ctx, sch, ordinal, kind, &proto, buf) > 0 ? buf : NULL;
}

loom_status loom_sample_perfect_tile(loom_schedule *sch, int loop_rv, int n, int max_innermost,
                                     const int64_t *decision, int64_t *decision_out, int *out_expr_rvs,
                                     loom_error *err)
{
    int s, pos;
    loom_status st = loom__loop_pos(sch, loop_rv, &s, &pos, err);
    if (st)
        return st;
    char nm[64];
    int iter = sch->stages[s].loops[pos].iter;
    loom_iter_name(sch, s, iter, nm, sizeof nm);
    if (n < 1 || n > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SamplePerfectTile of loop %s into %d tiles: need 1..%d", nm, n, LOOM_MAX_INST_IO);
    if (max_innermost != -1 && max_innermost < 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SamplePerfectTile of loop %s: max_innermost %d must be >= 1 (or -1: no limit)", nm,
                              max_innermost);
    int64_t asked[LOOM_MAX_INST_IO];
    decision = loom__ask_decider(sch, decision, LOOM_INST_SAMPLE_PERFECT_TILE, loop_rv, (int64_t[]){n, max_innermost},
                                 NULL, 2, asked);
    if (!decision && !sch->rng)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "sampling needs a random generator");
    if (sch->nrvs + n > LOOM_MAX_RVS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "too many random variables (%d): the schedule program is too long", LOOM_MAX_RVS);
    gsl_rng *rng = sch->rng;
    int64_t extent = loom_iter_extent(sch, s, iter);
    int64_t tiles[LOOM_MAX_INST_IO];

    if (extent <= 0) {
        /* data-dependent extent: outermost inferred (0), inner tiles powers
         * of two 1..max_innermost (-1: 64) */
        if (decision) {
            if (decision[0] != 0)
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                      "SamplePerfectTile of loop %s (data-dependent extent): decision tile 0 is "
                                      "%lld, expected 0 (inferred)",
                                      nm, (long long)decision[0]);
            for (int k = 1; k < n; k++)
                if (decision[k] < 1)
                    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                          "SamplePerfectTile of loop %s: decision tile %d is %lld, expected >= 1",
                                          nm, k, (long long)decision[k]);
            memcpy(tiles, decision, sizeof(int64_t) * (size_t)n);
        } else {
            int64_t cap = max_innermost == -1 ? 64 : max_innermost;
            int rungs = 0; /* powers of two 2^0 .. 2^(rungs-1) <= cap */
            while (rungs < 62 && ((int64_t)1 << rungs) <= cap)
                rungs++;
            tiles[0] = 0;
            for (int k = 1; k < n; k++)
                tiles[k] = (int64_t)1 << gsl_rng_uniform_int(rng, (unsigned long)rungs);
        }
    } else if (decision) {
        /* MetaSchedule's repair, inner to outer: a tile that no longer
         * divides what is left becomes what is left (a tile < 1 too); the
         * innermost keeps within max_innermost: it becomes the largest
         * divisor of the extent that fits ({7, 5} on 64 with a limit of 16
         * is {4, 16}, not {1, 64}) */
        memcpy(tiles, decision, sizeof(int64_t) * (size_t)n);
        int64_t len = extent;
        for (int k = n - 1; k > 0; --k) {
            int capped = k == n - 1 && max_innermost != -1;
            if (tiles[k] < 1 || len % tiles[k] != 0 || (capped && tiles[k] > max_innermost)) {
                tiles[k] = len;
                if (capped)
                    for (tiles[k] = len < max_innermost ? len : max_innermost; len % tiles[k]; tiles[k]--)
                        ;
            }
            len /= tiles[k];
        }
        tiles[0] = len;
    } else if (n == 1 && max_innermost != -1 && extent > max_innermost) {
        /* the one tile is the extent itself: no draw can help */
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SamplePerfectTile of loop %s (extent %lld) into 1 tile: no tiling with innermost <= "
                              "%d",
                              nm, (long long)extent, max_innermost);
    } else {
        prime_power f[16];
        int nf = factorize(extent, f);
        int tries = 0;
        for (;;) {
            perfect_tile_once(rng, extent, n, f, nf, tiles);
            if (max_innermost == -1 || tiles[n - 1] <= max_innermost)
                break;
            if (++tries >= LOOM_SAMPLE_MAX_TRIES)
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                      "SamplePerfectTile of loop %s (extent %lld) into %d tiles: no tiling with "
                                      "innermost <= %d found in %d tries",
                                      nm, (long long)extent, n, max_innermost, LOOM_SAMPLE_MAX_TRIES);
        }
    }

    loom_inst inst = {0};
    inst.ninputs = 1;
    inst.inputs[0] = loop_rv;
    inst.nattrs = 2;
    inst.attrs[0] = n;
    inst.attrs[1] = max_innermost;
    for (int k = 0; k < n; k++) {
        int rv = loom__new_rv(sch, LOOM_RV_EXPR, -1, -1, tiles[k], err);
        if (rv < 0)
            return LOOM_ERR_INVALID; /* not reached: capacity checked above */
        out_expr_rvs[k] = rv;
        inst.outputs[inst.noutputs++] = rv;
        inst.decision[inst.ndecision++] = tiles[k];
    }
    if (decision_out)
        memcpy(decision_out, tiles, sizeof(int64_t) * (size_t)n);
    loom_inst_record(sch, LOOM_INST_SAMPLE_PERFECT_TILE, &inst);
    return LOOM_OK;
}

/* ---- SampleCategorical ------------------------------------------------ */

loom_status loom_sample_categorical(loom_schedule *sch, int n, const int64_t *candidates, const double *probs,
                                    const int64_t *decision, int64_t *decision_out, int *out_expr_rv,
                                    loom_error *err)
{
    if (n < 1 || n > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "SampleCategorical of %d candidates: need 1..%d",
                              n, LOOM_MAX_INST_IO);
    double sum = 0;
    for (int k = 0; k < n; k++) {
        if (!isfinite(probs[k]) || probs[k] < 0)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "SampleCategorical: probability %d is %g, expected a finite value >= 0", k,
                                  probs[k]);
        sum += probs[k];
    }
    if (!(sum > 0))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SampleCategorical: the probabilities sum to 0; give at least one positive");
    int64_t index, asked[LOOM_MAX_INST_IO];
    decision = loom__ask_decider(sch, decision, LOOM_INST_SAMPLE_CATEGORICAL, -1, candidates, probs, n, asked);
    if (decision) {
        index = decision[0];
        if (index < 0 || index >= n) /* not repaired, as in MetaSchedule */
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "SampleCategorical: decision %lld out of range 0..%d", (long long)index, n - 1);
    } else {
        if (!sch->rng)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "sampling needs a random generator");
        /* cumulative walk: the first k with u < p_0 + ... + p_k; a zero
         * probability never matches; rounding past the end falls back to
         * the last positive candidate */
        double u = gsl_rng_uniform(sch->rng) * sum, cum = 0;
        index = -1;
        for (int k = 0; k < n && index < 0; k++) {
            cum += probs[k];
            if (probs[k] > 0 && u < cum)
                index = k;
        }
        for (int k = n - 1; index < 0 && k >= 0; k--)
            if (probs[k] > 0)
                index = k;
    }
    int rv = loom__new_rv(sch, LOOM_RV_EXPR, -1, -1, candidates[index], err);
    if (rv < 0)
        return LOOM_ERR_INVALID;
    *out_expr_rv = rv;
    if (decision_out)
        decision_out[0] = index;
    loom_inst inst = {0};
    inst.nattrs = n;
    for (int k = 0; k < n; k++) {
        inst.attrs[k] = candidates[k];
        inst.fattrs[k] = probs[k];
    }
    inst.noutputs = 1;
    inst.outputs[0] = rv;
    inst.ndecision = 1;
    inst.decision[0] = index;
    loom_inst_record(sch, LOOM_INST_SAMPLE_CATEGORICAL, &inst);
    return LOOM_OK;
}

/* ---- legal loop orders -------------------------------------------------- */

/* pred[b] bit a: the loop at current position a must come before the loop
 * at position b. */
typedef struct order_graph {
    int n;
    uint32_t pred[LOOM_MAX_LOOPS];
} order_graph;

/* Does a loop whose provenance is `anc` (bit i: derives from iter i) derive
 * from index variable v? */
static int derives_from_var(const loom_stage *S, uint64_t anc, int v)
{
    for (int i = 0; i < S->niters; i++)
        if ((anc >> i & 1) && (S->iters[i].kind == LOOM_ITER_VAR || S->iters[i].kind == LOOM_ITER_POS) &&
            S->iters[i].var == v)
            return 1;
    return 0;
}

static void add_before(order_graph *g, int a, int b)
{
    if (a != b) /* a loop cannot be ordered against itself: not a reorder question */
        g->pred[b] |= (uint32_t)1 << a;
}

/* Concordant traversal of one access: every non-dense level l >= 1 is
 * iterated inside the loops of its parent level's variable. */
static void access_constraints(const loom_schedule *sch, const loom_stage *S, const uint64_t *anc, int t,
                               const int *idx, order_graph *g)
{
    const loom_program *prog = sch->prog;
    const loom_format *F = &prog->tensors[t].format;
    for (int l = 1; l < F->nlevels; l++) {
        if (F->level[l] == LOOM_LEVEL_DENSE)
            continue;
        int vp = idx[F->mode[l - 1]], vc = idx[F->mode[l]];
        if (vp == vc)
            continue;
        for (int a = 0; a < g->n; a++) {
            if (!derives_from_var(S, anc[a], vp))
                continue;
            for (int b = 0; b < g->n; b++)
                if (derives_from_var(S, anc[b], vc))
                    add_before(g, a, b);
        }
    }
}

static void expr_constraints(const loom_schedule *sch, const loom_stage *S, const uint64_t *anc, int e,
                             order_graph *g)
{
    const loom_expr *E = &sch->prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (loom_tensor_is_sparse(sch->prog, E->tensor))
            access_constraints(sch, S, anc, E->tensor, E->idx, g);
        return;
    }
    if (E->kind == LOOM_EXPR_CONST)
        return;
    for (int k = 0; k < E->nargs && k < 2; k++)
        expr_constraints(sch, S, anc, E->args[k], g);
}

static void build_graph(const loom_schedule *sch, int stage, order_graph *g)
{
    const loom_stage *S = &sch->stages[stage];
    memset(g, 0, sizeof *g);
    g->n = S->nloops;
    /* provenance of every iter: itself plus everything it derives from
     * (iters are append-only, so parents have smaller ids) */
    uint64_t iter_anc[LOOM_MAX_ITERS];
    for (int i = 0; i < S->niters; i++) {
        const loom_iter *it = &S->iters[i];
        uint64_t m = (uint64_t)1 << i;
        if ((it->kind == LOOM_ITER_SPLIT || it->kind == LOOM_ITER_POS) && it->parent >= 0 && it->parent < i)
            m |= iter_anc[it->parent];
        if (it->kind == LOOM_ITER_FUSE) {
            if (it->a >= 0 && it->a < i)
                m |= iter_anc[it->a];
            if (it->b >= 0 && it->b < i)
                m |= iter_anc[it->b];
        }
        iter_anc[i] = m;
    }
    uint64_t anc[LOOM_MAX_LOOPS];
    for (int p = 0; p < g->n; p++) {
        int it = S->loops[p].iter;
        anc[p] = it >= 0 && it < S->niters ? iter_anc[it] : 0;
    }
    /* (1) the children of one split keep their order: whatever derives
     * from child x precedes whatever derives from child y > x */
    for (int P = 0; P < S->niters; P++) {
        int c0 = S->iters[P].first_child;
        if (c0 < 0 || c0 >= S->niters)
            continue;
        int nparts = S->iters[c0].nparts;
        for (int x = 0; x < nparts; x++)
            for (int y = x + 1; y < nparts; y++) {
                int cx = c0 + x, cy = c0 + y;
                if (cy >= S->niters)
                    continue;
                for (int a = 0; a < g->n; a++)
                    if (anc[a] >> cx & 1)
                        for (int b = 0; b < g->n; b++)
                            if (anc[b] >> cy & 1)
                                add_before(g, a, b);
            }
    }
    /* (2) concordant traversal of every sparse operand (and a sparse lhs) */
    const loom_stmt *st = &sch->prog->stmts[S->stmt];
    expr_constraints(sch, S, anc, st->rhs, g);
    if (loom_tensor_is_sparse(sch->prog, st->lhs))
        access_constraints(sch, S, anc, st->lhs, st->lhs_idx, g);
}

/* 1 if the precedence graph has a cycle (Kahn's algorithm). */
static int has_cycle(const order_graph *g)
{
    uint32_t placed = 0;
    for (int round = 0; round < g->n; round++) {
        int found = 0;
        for (int c = 0; c < g->n && !found; c++)
            if (!(placed >> c & 1) && (g->pred[c] & ~placed) == 0) {
                placed |= (uint32_t)1 << c;
                found = 1;
            }
        if (!found)
            return 1;
    }
    return 0;
}

typedef struct enum_ctx {
    const order_graph *g;
    int cur[LOOM_MAX_LOOPS];
    int count, max;
    int (*orders)[LOOM_MAX_LOOPS]; /* NULL: count only */
    int want;                      /* copy order number `want` into want_out */
    int *want_out;
} enum_ctx;

/* Backtracking over positions; the candidates at each position are tried
 * in increasing current position, so orders come out lexicographically.
 * A loop is a candidate once all its predecessors are placed: on an acyclic
 * graph every prefix extends, so there are no dead ends.  Returns 1 to stop. */
static int enum_rec(enum_ctx *c, int pos, uint32_t placed)
{
    const order_graph *g = c->g;
    if (pos == g->n) {
        if (c->orders)
            memcpy(c->orders[c->count], c->cur, sizeof(int) * (size_t)g->n);
        if (c->want_out && c->count == c->want)
            memcpy(c->want_out, c->cur, sizeof(int) * (size_t)g->n);
        c->count++;
        return c->count >= c->max;
    }
    for (int l = 0; l < g->n; l++) {
        if ((placed >> l & 1) || (g->pred[l] & ~placed))
            continue;
        c->cur[pos] = l;
        if (enum_rec(c, pos + 1, placed | (uint32_t)1 << l))
            return 1;
    }
    return 0;
}

static int enumerate(const order_graph *g, int (*orders)[LOOM_MAX_LOOPS], int max, int want, int *want_out)
{
    if (max <= 0 || has_cycle(g))
        return 0;
    enum_ctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.max = max;
    c.orders = orders;
    c.want = want;
    c.want_out = want_out;
    enum_rec(&c, 0, 0);
    return c.count;
}

/* Also accepts orders == NULL: then the orders are only counted (up to max). */
int loom_legal_loop_orders(const loom_schedule *sch, int stage, int (*orders)[LOOM_MAX_LOOPS], int max)
{
    if (!sch || stage < 0 || stage >= sch->nstages || max <= 0)
        return 0;
    order_graph g;
    build_graph(sch, stage, &g);
    return enumerate(&g, orders, max, -1, NULL);
}

/* ---- SampleLoopOrder ------------------------------------------------------ */

loom_status loom_sample_loop_order(loom_schedule *sch, int block_rv, int prior, double prior_weight,
                                   const int64_t *decision, int64_t *decision_out, int *out_expr_rv,
                                   loom_error *err)
{
    int s;
    loom_status st = loom__block_stage(sch, block_rv, &s, err);
    if (st)
        return st;
    int64_t asked[LOOM_MAX_INST_IO];
    decision = loom__ask_decider(sch, decision, LOOM_INST_SAMPLE_LOOP_ORDER, block_rv, (int64_t[]){prior}, NULL, 1,
                                 asked);
    if (!decision && !sch->rng)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "sampling needs a random generator");
    if (!(prior_weight >= 0 && prior_weight <= 1))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "SampleLoopOrder of block %s: prior weight %g must be in [0, 1]", block_name(sch, s),
                              prior_weight);
    if (sch->nrvs >= LOOM_MAX_RVS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "too many random variables (%d): the schedule program is too long", LOOM_MAX_RVS);
    order_graph g;
    build_graph(sch, s, &g);
    int order[LOOM_MAX_LOOPS];
    int64_t index;
    int count, have_order = 0;
    if (decision) {
        /* Replay: enumerate only up to the decided order (not all of them,
         * which dominated replay time); a decision past the end is repaired
         * to the last order, as when counting first. */
        index = decision[0];
        if (index < 0) /* repair to the nearest legal index */
            index = 0;
        if (index >= LOOM_SAMPLE_MAX_ORDERS)
            index = LOOM_SAMPLE_MAX_ORDERS - 1;
        count = enumerate(&g, NULL, (int)index + 1, (int)index, order);
        if (count > 0 && index >= count) {
            index = count - 1;
            count = enumerate(&g, NULL, count, (int)index, order);
        }
        have_order = 1;
    } else
        count = enumerate(&g, NULL, LOOM_SAMPLE_MAX_ORDERS, -1, NULL);
    if (count == 0)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "discordant-traversal: block %s has no loop order that traverses every sparse operand "
                              "in its level order and keeps split loops in order",
                              block_name(sch, s));
    if (decision) {
        /* index and order set above */
    } else if (count == 1) {
        index = 0;
    } else if (prior >= 0 && prior < count) {
        /* the prior gets prior_weight, the other count-1 orders share the rest */
        if (gsl_rng_uniform(sch->rng) < prior_weight)
            index = prior;
        else {
            int64_t r = (int64_t)gsl_rng_uniform_int(sch->rng, (unsigned long)(count - 1));
            index = r < prior ? r : r + 1;
        }
    } else {
        /* no prior (or one outside the enumeration): uniform */
        index = (int64_t)gsl_rng_uniform_int(sch->rng, (unsigned long)count);
    }
    if (!have_order)
        enumerate(&g, NULL, (int)index + 1, (int)index, order);
    loom_stage *S = &sch->stages[s];
    loom_loop moved[LOOM_MAX_LOOPS];
    for (int k = 0; k < S->nloops; k++)
        moved[k] = S->loops[order[k]];
    memcpy(S->loops, moved, sizeof(loom_loop) * (size_t)S->nloops);

    int rv = loom__new_rv(sch, LOOM_RV_EXPR, -1, -1, index, err);
    if (rv < 0)
        return LOOM_ERR_INVALID; /* not reached: capacity checked above */
    *out_expr_rv = rv;
    if (decision_out)
        decision_out[0] = index;
    loom_inst inst = {0};
    inst.ninputs = 1;
    inst.inputs[0] = block_rv;
    inst.nattrs = 1; /* dsl/schedule/inst.c: attrs [prior], fattrs [prior_weight] */
    inst.attrs[0] = prior;
    inst.fattrs[0] = prior_weight;
    inst.noutputs = 1;
    inst.outputs[0] = rv;
    inst.ndecision = 1;
    inst.decision[0] = index;
    loom_inst_record(sch, LOOM_INST_SAMPLE_LOOP_ORDER, &inst);
    return LOOM_OK;
}

/* ---- SampleComputeLocation ------------------------------------------- */

/* The first later stage that reads stage s's tensor, or -1. */
/* Loop candidates at `consumer` are only offered where every other reader
 * of stage s already runs inside them (Honeybee's strong soundness: only
 * valid next steps are offered; blocks are sampled consumers first, so the
 * readers are placed already).  Returns the deepest loop position k such
 * that every reader other than the consumer is placed at a loop of the
 * consumer at depth >= k (LOOM_MAX_LOOPS when there is none; -1 when some
 * reader is elsewhere).  Inlined readers are looked through. */
static int readers_depth(const loom_schedule *sch, int s, int consumer)
{
    int deepest = LOOM_MAX_LOOPS, readers[LOOM_MAX_STMTS];
    int n = loom_stage_readers(sch, s, readers);
    for (int k = 0; k < n; k++) {
        const loom_stage *R = &sch->stages[readers[k]];
        if (readers[k] == consumer)
            continue;
        if (R->compute_at != LOOM_AT_LOOP || R->at_after || R->at_stage != consumer)
            return -1;
        int depth = loom_loop_of_iter(&sch->stages[consumer], R->at_iter);
        if (depth < deepest)
            deepest = depth;
    }
    return deepest;
}

static int prog_order(const loom_schedule *sch, int s)
{
    return sch->prog->tensors[sch->prog->stmts[s].lhs].order;
}


int loom_compute_location_candidates(const loom_schedule *sch, int s, int64_t *cand)
{
    /* a fusion group (SampleFusionGroup) keeps a fused producer inside its
     * consumer and an unfused one at the root; when a fused producer has no
     * place left inside, root stays (the validator's fusion-group rule
     * rejects the schedule) */
    int nc = loom__location_candidates(sch, s, cand), fuse = sch->stages[s].fuse;
    if (fuse == LOOM_FUSE_FREE)
        return nc;
    /* a fused block that a fused producer which cannot be inlined (a
     * reduction) will be placed into keeps loops for it: not inlined */
    int keep_loops = 0;
    for (int q = 0; q < s && fuse == LOOM_FUSE_YES && !keep_loops; q++)
        keep_loops = sch->stages[q].fuse == LOOM_FUSE_YES && loom_first_consumer(sch->prog, q) == s && !loom_can_inline(sch, q);
    int m = 0;
    for (int k = 0; k < nc; k++)
        if ((fuse == LOOM_FUSE_NO) == (cand[k] == LOOM_AT_ROOT) && !(keep_loops && cand[k] == LOOM_AT_INLINE))
            cand[m++] = cand[k];
    if (m == 0 && keep_loops) /* no loop either: inlined is the only place inside */
        for (int k = 0; k < nc; k++)
            if (cand[k] == LOOM_AT_INLINE)
                cand[m++] = cand[k];
    if (m == 0)
        cand[m++] = LOOM_AT_ROOT;
    return m;
}

int loom__location_candidates(const loom_schedule *sch, int s, int64_t *cand)
{
    /* candidates in MetaSchedule's order: inline (if legal), root, then the
     * loops of the first consumer from the outermost down to (not including)
     * its first reduction loop */
    int nc = 0;
    if (sch->stages[s].compute_at == LOOM_AT_INLINE || loom_can_inline(sch, s))
        cand[nc++] = LOOM_AT_INLINE;
    cand[nc++] = LOOM_AT_ROOT;
    int consumer = loom_first_consumer(sch->prog, s);
    if (consumer >= 0) {
        const loom_stage *C = &sch->stages[consumer];
        int map[LOOM_MAX_ORDER];
        int deepest = readers_depth(sch, s, consumer); /* Honeybee's strong soundness */
        if (C->compute_at != LOOM_AT_INLINE && loom_compute_at_map(sch, s, consumer, map) == 0)
            for (int k = 0; k < C->nloops && k <= deepest && !loom_iter_reduces(sch, consumer, C->loops[k].iter); k++) {
                /* inside a parallel loop that does not index the block, every
                 * thread would write the same slice: stop there */
                if (C->loops[k].kind == LOOM_LOOP_PARALLEL) {
                    int indexes = 0, v = loom_iter_var(C, C->loops[k].iter);
                    for (int d = 0; d < prog_order(sch, s); d++)
                        indexes |= map[d] >= 0 && map[d] == v;
                    if (!indexes)
                        break;
                }
                cand[nc++] = k;
            }
    }
    return nc;
}

loom_status loom_sample_compute_location(loom_schedule *sch, int block_rv, const int64_t *decision,
                                         int64_t *decision_out, int *out_expr_rv, loom_error *err)
{
    int s;
    loom_status st = loom__block_stage(sch, block_rv, &s, err);
    if (st)
        return st;
    int64_t cand[2 + LOOM_MAX_LOOPS];
    int64_t asked[LOOM_MAX_INST_IO];
    decision = loom__ask_decider(sch, decision, LOOM_INST_SAMPLE_COMPUTE_LOCATION, block_rv, NULL, NULL, 0, asked);
    int nc = loom_compute_location_candidates(sch, s, cand);
    int consumer = loom_first_consumer(sch->prog, s);
    int64_t d;
    if (decision) {
        /* keep a legal decision, else the nearest earlier candidate, else
         * root (the first candidate when a fusion group removed root) */
        d = sch->stages[s].fuse == LOOM_FUSE_YES ? cand[0] : LOOM_AT_ROOT;
        for (int k = 0; k < nc; k++)
            if (cand[k] <= decision[0])
                d = cand[k];
    } else {
        if (!sch->rng)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "sampling needs a random generator");
        d = cand[gsl_rng_uniform_int((gsl_rng *)sch->rng, (unsigned long)nc)];
    }
    int rv = loom__new_rv(sch, LOOM_RV_EXPR, -1, -1, d, err);
    if (rv < 0)
        return LOOM_ERR_INVALID;
    if (sch->stages[s].rolling) {
        /* a block rolled into its source's loop (RollingUpdate) keeps its
         * place: the decision is recorded, so a trace sampled with the
         * fusion off replays with it on */
    } else if (d >= 0) {
        sch->stages[s].compute_at = LOOM_AT_LOOP;
        sch->stages[s].at_after = 0;
        sch->stages[s].at_stage = consumer;
        sch->stages[s].at_iter = sch->stages[consumer].loops[d].iter;
    } else {
        sch->stages[s].compute_at = (int)d;
        sch->stages[s].at_stage = sch->stages[s].at_iter = -1;
    }
    if (decision_out)
        decision_out[0] = d;
    *out_expr_rv = rv;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    inst.outputs[inst.noutputs++] = rv;
    inst.decision[0] = d;
    inst.ndecision = 1;
    loom_inst_record(sch, LOOM_INST_SAMPLE_COMPUTE_LOCATION, &inst);
    return LOOM_OK;
}
