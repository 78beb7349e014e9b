/* Mutators (mutator.h). */
#include "mutator.h"
#include "../../dsl/schedule/inst.h"
#include "../../traces/trace.h"
#include "../../dsl/schedule/query.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[LOOM_MUTATOR_COUNT] = {"tile-size", "categorical", "compute-location",
                                                      "loop-order", "parallel", "unroll"};

const char *loom_mutator_name(loom_mutator_kind k)
{
    return (int)k >= 0 && k < LOOM_MUTATOR_COUNT ? names[k] : NULL;
}

loom_mutator_weights loom_mutator_defaults(const char *target_kind)
{
    (void)target_kind; /* the simulator models a CPU: same weights */
    loom_mutator_weights w = {0};
    w.w[LOOM_MUTATE_TILE_SIZE] = 0.9;
    w.w[LOOM_MUTATE_COMPUTE_LOCATION] = 0.05;
    w.w[LOOM_MUTATE_UNROLL] = 0.03;
    w.w[LOOM_MUTATE_PARALLEL] = 0.02;
    w.w[LOOM_MUTATE_CATEGORICAL] = 0.05;
    w.w[LOOM_MUTATE_LOOP_ORDER] = 0.05;
    return w;
}

/* registry indices of the kinds we look at, found once */
static struct {
    int tile, cat, loc, order, annotate, fgroup;
} K;
static pthread_once_t k_once = PTHREAD_ONCE_INIT;

static void find_kinds(void)
{
    K.tile = loom_inst_kind_find("SamplePerfectTile");
    K.cat = loom_inst_kind_find("SampleCategorical");
    K.loc = loom_inst_kind_find("SampleComputeLocation");
    K.order = loom_inst_kind_find("SampleLoopOrder");
    K.annotate = loom_inst_kind_find("Annotate");
    K.fgroup = loom_inst_kind_find("SampleFusionGroup");
}

/* The annotation key a categorical's value feeds, or NULL. */
static const char *feeds_annotation(const loom_trace *t, int i)
{
    int v = t->insts[i].outputs[0];
    for (int j = i + 1; j < t->ninsts; j++) {
        const loom_inst *x = &t->insts[j];
        if (x->kind == K.annotate && x->ninputs == 2 && x->inputs[1] == v)
            return x->sattr;
    }
    return NULL;
}

int loom_mutator_kind_of(const loom_trace *t, int i)
{
    pthread_once(&k_once, find_kinds);
    if (!t || i < 0 || i >= t->ninsts)
        return -1;
    const loom_inst *x = &t->insts[i];
    if (x->kind == K.tile)
        return x->ndecision >= 2 ? LOOM_MUTATE_TILE_SIZE : -1;
    if (x->kind == K.loc || x->kind == K.fgroup) /* a fusion group: placements too */
        return LOOM_MUTATE_COMPUTE_LOCATION;
    if (x->kind == K.order)
        return LOOM_MUTATE_LOOP_ORDER;
    if (x->kind == K.cat) {
        if (x->nattrs < 2)
            return -1;
        const char *key = feeds_annotation(t, i);
        if (key && strstr(key, LOOM_ANN_UNROLL))
            return LOOM_MUTATE_UNROLL;
        if (key && strstr(key, "parallel"))
            return LOOM_MUTATE_PARALLEL;
        return LOOM_MUTATE_CATEGORICAL;
    }
    return -1;
}

/* ---- per-kind proposals --------------------------------------------------- */

/* MetaSchedule's MutateTileSize on a static extent; powers of two on a
 * data-dependent one.  Returns 1 with a new decision, 0 when this
 * instruction has no alternative (after a few draws). */
static int propose_tile(const loom_inst *x, gsl_rng *rng, loom_decision *dec)
{
    int n = x->ndecision;
    int64_t maxin = x->nattrs >= 2 ? x->attrs[1] : -1;
    const int64_t *t = x->decision;
    int dynamic = t[0] == 0;
    for (int attempt = 0; attempt < 16; attempt++) {
        memcpy(dec->v, t, sizeof(int64_t) * (size_t)n);
        dec->n = n;
        if (dynamic) {
            /* tiles 1..n-1 are powers of two in [1, max_innermost] */
            int xk = 1 + (int)gsl_rng_uniform_int(rng, (unsigned long)(n - 1));
            int64_t lim = maxin > 0 ? maxin : 1024;
            int64_t v = t[xk];
            int up = gsl_rng_uniform_int(rng, 2) == 0;
            int64_t nv = up ? v * 2 : v / 2;
            if (nv < 1 || nv > lim)
                nv = up ? v / 2 : v * 2;
            if (nv < 1 || nv > lim || nv == v)
                continue;
            dec->v[xk] = nv;
            return 1;
        }
        /* pick x with tiles[x] > 1 */
        int cand[LOOM_MAX_INST_IO], nc = 0;
        for (int k = 0; k < n; k++)
            if (t[k] > 1)
                cand[nc++] = k;
        if (nc == 0)
            return 0;
        int xk = cand[gsl_rng_uniform_int(rng, (unsigned long)nc)];
        int yk = (int)gsl_rng_uniform_int(rng, (unsigned long)(n - 1));
        if (yk >= xk)
            yk++;
        /* divisors d > 1 of tiles[x] */
        int64_t divs[64];
        int nd = 0;
        for (int64_t d = 2; d <= t[xk] && nd < 64; d++)
            if (t[xk] % d == 0) {
                if (yk == n - 1 && maxin > 0 && d * t[yk] > maxin)
                    continue;
                divs[nd++] = d;
            }
        if (nd == 0)
            continue;
        int64_t d = divs[gsl_rng_uniform_int(rng, (unsigned long)nd)];
        dec->v[xk] = t[xk] / d;
        dec->v[yk] = t[yk] * d;
        return 1;
    }
    return 0;
}

/* Another categorical index, drawn with the remaining probabilities. */
static int propose_categorical(const loom_inst *x, gsl_rng *rng, loom_decision *dec)
{
    int n = x->nattrs;
    int64_t cur = x->ndecision > 0 ? x->decision[0] : -1;
    double total = 0;
    for (int k = 0; k < n; k++)
        if (k != cur && x->fattrs[k] > 0)
            total += x->fattrs[k];
    if (total <= 0)
        return 0;
    double r = gsl_rng_uniform(rng) * total;
    int pick = -1;
    for (int k = 0; k < n; k++) {
        if (k == cur || !(x->fattrs[k] > 0))
            continue;
        pick = k;
        r -= x->fattrs[k];
        if (r < 0)
            break;
    }
    if (pick < 0)
        return 0;
    dec->n = 1;
    dec->v[0] = pick;
    return 1;
}

/* Replay the prefix before instruction i on scratch; *stage = the stage of
 * the instruction's block input. */
static loom_status prefix_stage(const loom_trace *t, int i, const loom_program *prog, loom_schedule *scratch,
                                int *stage, loom_error *err)
{
    loom_status st = loom_schedule_init(scratch, prog, NULL, err);
    if (st)
        return st;
    int *map = malloc(sizeof(int) * (size_t)(t->nrvs > 0 ? t->nrvs : 1));
    if (!map)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    st = loom_trace_replay_prefix(t, i, scratch, NULL, map, err);
    if (!st) {
        int r = t->insts[i].inputs[0];
        int srv = r >= 0 && r < t->nrvs ? map[r] : -1;
        if (srv < 0 || srv >= scratch->nrvs || scratch->rvs[srv].kind != LOOM_RV_BLOCK)
            st = loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                "instruction %d: its block input is not defined before it", i);
        else
            *stage = scratch->rvs[srv].stage;
    }
    free(map);
    return st;
}

static int propose_location(const loom_trace *t, int i, const loom_program *prog, gsl_rng *rng,
                            loom_schedule *scratch, loom_decision *dec, loom_error *err, loom_status *st)
{
    int s;
    *st = prefix_stage(t, i, prog, scratch, &s, err);
    if (*st)
        return 0;
    if (t->insts[i].kind == K.fgroup) {
        /* SampleFusionGroup: fuse or unfuse one offered edge */
        int prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS];
        int ne = loom_fusion_edges(scratch, prod, cons, NULL);
        if (ne == 0)
            return 0;
        dec->n = 1;
        dec->v[0] = t->insts[i].decision[0] ^ ((int64_t)1 << gsl_rng_uniform_int(rng, (unsigned long)ne));
        return 1;
    }
    int64_t cand[2 + LOOM_MAX_LOOPS], alt[2 + LOOM_MAX_LOOPS];
    int nc = loom_compute_location_candidates(scratch, s, cand), na = 0;
    for (int k = 0; k < nc; k++)
        if (cand[k] != t->insts[i].decision[0])
            alt[na++] = cand[k];
    if (na == 0)
        return 0;
    dec->n = 1;
    dec->v[0] = alt[gsl_rng_uniform_int(rng, (unsigned long)na)];
    return 1;
}

static int propose_order(const loom_trace *t, int i, const loom_program *prog, gsl_rng *rng,
                         loom_schedule *scratch, loom_decision *dec, loom_error *err, loom_status *st)
{
    int s;
    *st = prefix_stage(t, i, prog, scratch, &s, err);
    if (*st)
        return 0;
    int count = loom_legal_loop_orders(scratch, s, NULL, LOOM_SAMPLE_MAX_ORDERS);
    if (count < 2)
        return 0;
    int64_t cur = t->insts[i].decision[0];
    int64_t v = (int64_t)gsl_rng_uniform_int(rng, (unsigned long)(count - 1));
    if (v >= cur && cur >= 0 && cur < count)
        v++;
    dec->n = 1;
    dec->v[0] = v;
    return 1;
}

/* kinds[i] = loom_mutator_kind_of(t, i) for every instruction (classifying
 * a categorical scans the instructions after it: done once per trace). */
static int *classify(const loom_trace *t)
{
    int *kinds = malloc(sizeof(int) * (size_t)(t->ninsts > 0 ? t->ninsts : 1));
    for (int i = 0; kinds && i < t->ninsts; i++)
        kinds[i] = loom_mutator_kind_of(t, i);
    return kinds;
}

/* loom_mutate_propose with the instructions already classified. */
static loom_status propose(const loom_trace *t, const int *kinds, const loom_program *prog, loom_mutator_kind kind,
                           gsl_rng *rng, loom_schedule *scratch, int *inst, loom_decision *dec, loom_error *err)
{
    int *elig = malloc(sizeof(int) * (size_t)(t->ninsts > 0 ? t->ninsts : 1));
    if (!elig)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    int ne = 0;
    for (int i = 0; i < t->ninsts; i++)
        if (kinds[i] == (int)kind)
            elig[ne++] = i;
    loom_status st = LOOM_OK;
    /* a few instructions, each tried at most once, in random order */
    for (int attempt = 0; attempt < 8 && ne > 0 && !st; attempt++) {
        int pick = (int)gsl_rng_uniform_int(rng, (unsigned long)ne);
        int i = elig[pick];
        elig[pick] = elig[--ne];
        memset(dec, 0, sizeof *dec);
        int ok = 0;
        switch (kind) {
        case LOOM_MUTATE_TILE_SIZE: ok = propose_tile(&t->insts[i], rng, dec); break;
        case LOOM_MUTATE_CATEGORICAL:
        case LOOM_MUTATE_PARALLEL:
        case LOOM_MUTATE_UNROLL: ok = propose_categorical(&t->insts[i], rng, dec); break;
        case LOOM_MUTATE_COMPUTE_LOCATION: ok = propose_location(t, i, prog, rng, scratch, dec, err, &st); break;
        case LOOM_MUTATE_LOOP_ORDER: ok = propose_order(t, i, prog, rng, scratch, dec, err, &st); break;
        default: break;
        }
        if (ok) {
            *inst = i;
            free(elig);
            return LOOM_OK;
        }
    }
    free(elig);
    if (st)
        return st;
    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "no %s decision to mutate", loom_mutator_name(kind));
}

loom_status loom_mutate_propose(const loom_trace *t, const loom_program *prog, loom_mutator_kind kind,
                                gsl_rng *rng, loom_schedule *scratch, int *inst, loom_decision *dec,
                                loom_error *err)
{
    if (!t || !prog || !rng || !scratch || !inst || !dec || (int)kind < 0 || kind >= LOOM_MUTATOR_COUNT)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_mutate_propose: bad argument");
    int *kinds = classify(t);
    if (!kinds)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = propose(t, kinds, prog, kind, rng, scratch, inst, dec, err);
    free(kinds);
    return st;
}

static int pinned_ordinal(const loom_mutator_weights *w, int j)
{
    return j < 64 * LOOM_MUTATOR_PIN_WORDS && (w->pinned[j / 64] >> (j % 64) & 1);
}

/* Pinned samplers (w->pinned) are not mutated: their kind is cleared. */
static void unpin(const loom_trace *t, const loom_mutator_weights *w, int *kinds)
{
    for (int i = 0, j = 0; i < t->ninsts; i++)
        if (loom_inst_kind_is_sampler(t->insts[i].kind) && pinned_ordinal(w, j++))
            kinds[i] = -1;
}

/* 1 when every pinned sampler of parent has the same decision in child. */
static int pins_kept(const loom_trace *parent, const loom_trace *child, const loom_mutator_weights *w)
{
    for (int j = 0; j < 64 * LOOM_MUTATOR_PIN_WORDS; j++) {
        if (!pinned_ordinal(w, j))
            continue;
        int a = loom_trace_sampler_inst(parent, j), b = loom_trace_sampler_inst(child, j);
        if (a < 0)
            continue;
        if (b < 0 || parent->insts[a].kind != child->insts[b].kind ||
            parent->insts[a].ndecision != child->insts[b].ndecision ||
            memcmp(parent->insts[a].decision, child->insts[b].decision,
                   sizeof(int64_t) * (size_t)parent->insts[a].ndecision))
            return 0;
    }
    return 1;
}

/* Replays t with the overrides decs into out / out_sch (re-initialised for
 * prog), then checks the recording, the pins of w and the validator (lim).
 * what names the change in messages ("tile-size mutation of instruction
 * 6"). */
static loom_status replay_child(const loom_trace *t, const loom_decision *decs, const loom_program *prog,
                                const loom_mutator_weights *w, const loom_limits *lim, loom_trace *out,
                                loom_schedule *out_sch, loom_mutation *info, const char *what, loom_error *err)
{
    loom_trace_clear(out);
    /* the child records as many instructions as its parent: room for them once */
    loom_status st = loom_trace_reserve(out, t->ninsts, t->nrvs, err);
    if (!st)
        st = loom_schedule_init(out_sch, prog, NULL, err);
    if (st)
        return st;
    out_sch->recorder = loom_trace_recorder;
    out_sch->recorder_ctx = out;
    loom_error e;
    loom_error_clear(&e);
    st = loom_trace_replay(t, out_sch, decs, &e);
    out_sch->recorder = NULL;
    out_sch->recorder_ctx = NULL;
    if (st) {
        info->replay_failed = 1;
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s did not replay: %s", what, e.msg);
    }
    if ((st = loom_trace_status(out, err)) != LOOM_OK)
        return st;
    loom_error e2;
    loom_error_clear(&e2);
    if (!pins_kept(t, out, w)) {
        info->invalid = 1;
        snprintf(info->violation.rule, sizeof info->violation.rule, "pinned");
        snprintf(info->violation.msg, sizeof info->violation.msg, "pinned: the replay changed a pinned decision");
        info->violation.stage = info->violation.loop = -1;
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s is invalid: %s", what, info->violation.msg);
    }
    if (loom_validate(out_sch, lim, &info->violation, &e2) != LOOM_OK) {
        info->invalid = 1;
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s is invalid: %s", what, info->violation.msg);
    }
    return LOOM_OK;
}

loom_status loom_mutate_trace(const loom_trace *t, const loom_program *prog, const loom_mutator_weights *w,
                              const loom_limits *lim, gsl_rng *rng, loom_schedule *scratch, loom_trace *out,
                              loom_schedule *out_sch, loom_mutation *info, loom_error *err)
{
    memset(info, 0, sizeof *info);
    info->inst = -1;
    /* which kinds have an eligible instruction */
    int *kinds = classify(t);
    if (!kinds)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    unpin(t, w, kinds);
    int have[LOOM_MUTATOR_COUNT] = {0};
    for (int i = 0; i < t->ninsts; i++)
        if (kinds[i] >= 0)
            have[kinds[i]] = 1;
    double total = 0;
    for (int k = 0; k < LOOM_MUTATOR_COUNT; k++)
        if (have[k] && w->w[k] > 0)
            total += w->w[k];
    if (total <= 0) {
        free(kinds);
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "no mutator applies to this trace");
    }
    /* the kind, by weight; a kind without an alternative falls back to the others */
    loom_status st = LOOM_ERR_INVALID;
    loom_decision *decs = NULL;
    int inst = -1;
    loom_decision dec;
    for (int tries = 0; tries < LOOM_MUTATOR_COUNT && total > 0; tries++) {
        double r = gsl_rng_uniform(rng) * total;
        int kind = -1;
        for (int k = 0; k < LOOM_MUTATOR_COUNT; k++) {
            if (!have[k] || !(w->w[k] > 0))
                continue;
            kind = k;
            r -= w->w[k];
            if (r < 0)
                break;
        }
        info->kind = (loom_mutator_kind)kind;
        st = propose(t, kinds, prog, (loom_mutator_kind)kind, rng, scratch, &inst, &dec, err);
        if (!st)
            break;
        total -= w->w[kind];
        have[kind] = 0;
    }
    free(kinds);
    if (st)
        return st;
    info->inst = inst;
    decs = calloc((size_t)t->ninsts, sizeof *decs);
    if (!decs)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    decs[inst] = dec;
    char what[96];
    snprintf(what, sizeof what, "%s mutation of instruction %d", loom_mutator_name(info->kind), inst);
    st = replay_child(t, decs, prog, w, lim, out, out_sch, info, what, err);
    free(decs);
    return st;
}

/* ---- crossover ------------------------------------------------------------- */

/* 1 when instruction i of a and of b are the same sampler (kind, attrs and
 * probabilities, decision length) with different decisions. */
static int crossable(const loom_trace *a, const loom_trace *b, int i)
{
    if (i >= b->ninsts)
        return 0;
    const loom_inst *x = &a->insts[i], *y = &b->insts[i];
    if (x->ndecision <= 0 || x->kind != y->kind || x->ndecision != y->ndecision || x->nattrs != y->nattrs ||
        !loom_inst_kind_is_sampler(x->kind))
        return 0;
    if (memcmp(x->attrs, y->attrs, sizeof(int64_t) * (size_t)x->nattrs) ||
        memcmp(x->fattrs, y->fattrs, sizeof(double) * (size_t)x->nattrs))
        return 0;
    return memcmp(x->decision, y->decision, sizeof(int64_t) * (size_t)x->ndecision) != 0;
}

loom_status loom_crossover_trace(const loom_trace *a, const loom_trace *b, const loom_program *prog,
                                 const loom_mutator_weights *w, const loom_limits *lim, gsl_rng *rng,
                                 loom_trace *out, loom_schedule *out_sch, loom_mutation *info, int *ntaken,
                                 loom_error *err)
{
    memset(info, 0, sizeof *info);
    info->inst = -1;
    *ntaken = 0;
    if (!a || !b || !prog || !w || !rng || !out || !out_sch)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_crossover_trace: bad argument");
    /* the samplers where the parents differ (pinned ones excluded) */
    int *diff = malloc(sizeof(int) * (size_t)(a->ninsts + 1));
    loom_decision *decs = calloc((size_t)a->ninsts + 1, sizeof *decs);
    if (!diff || !decs) {
        free(diff), free(decs);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    int nd = 0;
    for (int i = 0, j = 0; i < a->ninsts; i++) {
        int pinned = loom_inst_kind_is_sampler(a->insts[i].kind) && pinned_ordinal(w, j++);
        if (!pinned && crossable(a, b, i))
            diff[nd++] = i;
    }
    loom_status st;
    if (nd < 2) {
        /* one difference or none: the child would be a parent */
        st = loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "crossover: the parents differ in %d decision%s", nd,
                            nd == 1 ? "" : "s");
        goto out;
    }
    /* each differing decision from b with probability 1/2; at least one from
       each parent, so the child is neither */
    int take;
    do {
        take = 0;
        for (int k = 0; k < nd; k++) {
            decs[diff[k]].n = 0;
            if (gsl_rng_uniform(rng) < 0.5) {
                const loom_inst *y = &b->insts[diff[k]];
                decs[diff[k]].n = y->ndecision;
                memcpy(decs[diff[k]].v, y->decision, sizeof(int64_t) * (size_t)y->ndecision);
                take++;
            }
        }
    } while (take == 0 || take == nd);
    *ntaken = take;
    char what[96];
    snprintf(what, sizeof what, "crossover (%d of %d decisions from the second parent)", take, nd);
    st = replay_child(a, decs, prog, w, lim, out, out_sch, info, what, err);
out:
    free(diff), free(decs);
    return st;
}

loom_status loom_replay_child(const loom_trace *t, const loom_decision *decs, const loom_program *prog,
                              const loom_mutator_weights *w, const loom_limits *lim, const char *what, loom_trace *out,
                              loom_schedule *out_sch, loom_mutation *info, loom_error *err)
{
    memset(info, 0, sizeof *info);
    info->inst = -1;
    if (!t || !prog || !w || !out || !out_sch)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_replay_child: bad argument");
    return replay_child(t, decs, prog, w, lim, out, out_sch, info, what ? what : "child", err);
}
