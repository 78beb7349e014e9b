/* The navigation engine (navigate.h): states, menus by enumeration or by
 * witnesses, the sketch, and the commands. */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/lower/lir.h"
#include "../../runtime/lower/lower.h"
#include "navigate_internal.h"

/* ---- runs -------------------------------------------------------------------- */

static int decide(void *vctx, const loom_schedule *sch, int ord, int kind, const loom_inst *proto, int64_t *decision)
{
    run_ctx *rc = vctx;
    if (ord >= MAXH) {
        rc->inconsistent = 1;
        return 0;
    }
    for (int j = rc->nholes; j < ord; j++) /* samplers the modules decided themselves */
        rc->rec[j].kind = -1;
    rc->nholes = ord + 1;
    hole_rec *h = &rc->rec[ord];
    loom_nav_value *cands = rc->nav->cands;
    int pref, nc = loom_nav_candidates(sch, kind, proto, cands, LOOM_NAV_MAX_CHOICES, &pref);
    const loom_nav_value *dv = !rc->off_default && ord < rc->nav->ndflt ? &rc->nav->dflt[ord] : NULL;
    for (int k = 0; dv && k < nc; k++) /* on the default's path: the default schedule's decision */
        if (loom_nav_value_equal(&cands[k], dv)) {
            pref = k;
            break;
        }
    h->kind = kind;
    h->ncand = nc;
    h->pref = pref;
    h->chosen = -1;
    if (ord == rc->want && rc->want_cands) {
        memcpy(rc->want_cands, cands, sizeof *cands * (size_t)nc);
        rc->nwant = nc;
    }
    if (ord == rc->want && rc->want_sch) {
        loom_schedule_copy(rc->want_sch, sch);
        *rc->want_proto = *proto;
        rc->want_proto->kind = kind;
        rc->have_want_sch = 1;
    }
    if (nc == 0) {
        rc->inconsistent = 1;
        return 0;
    }
    int c = 0;
    if (rc->force && rc->force->decided[ord]) {
        const loom_nav_value *fv = &rc->force->value[ord];
        c = -1;
        for (int k = 0; k < nc && c < 0; k++)
            if (loom_nav_value_equal(&cands[k], fv))
                c = k;
        if (c < 0) { /* not a choice here: this state has no such schedule */
            rc->inconsistent = 1;
            c = 0;
        }
    } else if (ord < rc->nidx) {
        c = rc->idx[ord];
        if (c >= nc) {
            rc->inconsistent = 1;
            c = nc - 1;
        }
    } else if (rc->fill == FILL_DEFAULT) {
        c = pref;
    } else if (rc->fill == FILL_RANDOM) {
        c = (int)gsl_rng_uniform_int(rc->nav->rng, (unsigned long)nc);
    }
    h->chosen = c;
    h->val = cands[c];
    if (!dv || !loom_nav_value_equal(&h->val, dv))
        rc->off_default = 1;
    memcpy(decision, h->val.v, sizeof(int64_t) * (size_t)h->val.n);
    return h->val.n;
}

/* Run the space under rc into t / sch; *valid: it ran, no forced choice was
 * refused or repaired, the validator and the lowering accept it. */
static loom_status nav_run(loom_nav *nav, run_ctx *rc, loom_trace *t, loom_schedule *sch, int *valid,
                           loom_error *err)
{
    rc->nav = nav;
    rc->nholes = 0;
    rc->inconsistent = 0;
    rc->off_default = 0;
    rc->nwant = 0;
    rc->have_want_sch = 0;
    *valid = 0;
    nav->runs++;
    loom_trace_clear(t);
    loom_status st = loom_schedule_init(sch, nav->prog, nav->rng, err);
    if (st)
        return st;
    sch->recorder = loom_trace_recorder;
    sch->recorder_ctx = t;
    sch->decider = decide;
    sch->decider_ctx = rc;
    loom_error e;
    st = loom_space_apply(nav->space, sch, &e);
    sch->recorder = NULL;
    sch->decider = NULL;
    if (st == LOOM_ERR_NOMEM)
        return loom_error_set(err, st, NULL, 0, 0, "%s", e.msg);
    if (st || loom_trace_status(t, &e) || rc->inconsistent)
        return LOOM_OK;
    for (int j = rc->nholes; j < sch->nsampled && j < MAXH; j++)
        rc->rec[j].kind = -1;
    rc->nholes = sch->nsampled < MAXH ? sch->nsampled : MAXH;
    /* every sampler kept the decision given (no repair); fixed ones are read back */
    for (int i = 0, j = 0; i < t->ninsts && j < rc->nholes; i++) {
        const loom_inst *in = &t->insts[i];
        if (!loom_nav_is_sampler(in->kind))
            continue;
        hole_rec *h = &rc->rec[j++];
        loom_nav_value v = {.kind = in->kind, .n = in->ndecision};
        memcpy(v.v, in->decision, sizeof(int64_t) * (size_t)in->ndecision);
        if (h->kind < 0) {
            h->val = v;
            h->ncand = 1;
            h->chosen = h->pref = 0;
        } else if (!loom_nav_value_equal(&v, &h->val))
            return LOOM_OK;
    }
    loom_violation viol;
    if (loom_validate(sch, &nav->lim, &viol, NULL) != LOOM_OK)
        return LOOM_OK;
    lir_func *f = NULL;
    if (loom_lower_for(sch, &nav->lim, &f, &e) != LOOM_OK) /* lowered for the navigation's target */
        return LOOM_OK;
    loom_lir_func_free(f);
    *valid = 1;
    return LOOM_OK;
}

/* ---- the enumeration table ---------------------------------------------------- */

static int grow(void **p, long *cap, long need, size_t elem)
{
    if (need <= *cap)
        return 0;
    long nc = *cap ? *cap : 1024;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

static int add_leaf(loom_nav *nav, const run_ctx *rc, int valid)
{
    if (nav->nleaves == nav->capleaves) {
        long nc = nav->capleaves ? 2 * nav->capleaves : 1024;
        long *lo = realloc(nav->leaf_off, (size_t)nc * sizeof *lo);
        if (!lo)
            return -1;
        nav->leaf_off = lo;
        int *nh = realloc(nav->leaf_nh, (size_t)nc * sizeof *nh);
        if (!nh)
            return -1;
        nav->leaf_nh = nh;
        unsigned char *lv = realloc(nav->leaf_valid, (size_t)nc);
        if (!lv)
            return -1;
        nav->leaf_valid = lv;
        nav->capleaves = nc;
    }
    if (grow((void **)&nav->hoff, &nav->caphoff, nav->nhoff + rc->nholes, sizeof(long)))
        return -1;
    long L = nav->nleaves++;
    nav->leaf_off[L] = nav->nhoff;
    nav->leaf_nh[L] = rc->nholes;
    nav->leaf_valid[L] = (unsigned char)valid;
    for (int j = 0; j < rc->nholes; j++) {
        const hole_rec *h = &rc->rec[j];
        if (grow((void **)&nav->pool, &nav->cappool, nav->npool + 1 + h->val.n, sizeof(int64_t)))
            return -1;
        nav->hoff[nav->nhoff++] = nav->npool;
        int64_t hdr = (int64_t)(h->val.kind + 1) | (int64_t)(h->chosen == h->pref) << 8 | (int64_t)h->val.n << 16;
        nav->pool[nav->npool++] = hdr;
        memcpy(nav->pool + nav->npool, h->val.v, sizeof(int64_t) * (size_t)h->val.n);
        nav->npool += h->val.n;
    }
    return 0;
}

static const int64_t *leaf_hole(const loom_nav *nav, long L, int j)
{
    return j < nav->leaf_nh[L] ? nav->pool + nav->hoff[nav->leaf_off[L] + j] : NULL;
}

static int hole_kind(const int64_t *h) { return (int)(h[0] & 0xff) - 1; }
static int hole_pref(const int64_t *h) { return (int)(h[0] >> 8 & 1); }
static int hole_n(const int64_t *h) { return (int)(h[0] >> 16); }

static int hole_is(const int64_t *h, const loom_nav_value *v)
{
    if (!h || hole_kind(h) != v->kind || hole_n(h) != v->n)
        return 0;
    return memcmp(h + 1, v->v, sizeof(int64_t) * (size_t)v->n) == 0;
}

static void hole_value(const int64_t *h, loom_nav_value *v)
{
    v->kind = hole_kind(h);
    v->n = hole_n(h);
    memcpy(v->v, h + 1, sizeof(int64_t) * (size_t)v->n);
}

static void drop_table(loom_nav *nav)
{
    nav->have_table = 0;
    nav->nleaves = nav->nhoff = nav->npool = 0;
}

/* Enumerate every completion of nav->d (odometer over the open holes in
 * program order).  *built 0 when there are more than enum_limit. */
static loom_status build_table(loom_nav *nav, int *built, loom_error *err)
{
    drop_table(nav);
    *built = 0;
    int idx[MAXH] = {0}, valid;
    run_ctx *rc = nav->rc;
    memset(rc, 0, sizeof *rc);
    rc->force = &nav->d;
    rc->idx = idx;
    rc->want = -1;
    rc->fill = FILL_FIRST;
    for (;;) {
        loom_status st = nav_run(nav, rc, nav->trace, nav->sch, &valid, err);
        if (st)
            return st;
        if (nav->nleaves >= nav->enum_limit) {
            drop_table(nav);
            return LOOM_OK;
        }
        if (add_leaf(nav, rc, valid))
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        /* the last open hole with a next candidate */
        int j = rc->nholes - 1;
        while (j >= 0 && (rc->rec[j].kind < 0 || nav->d.decided[j] || rc->rec[j].chosen + 1 >= rc->rec[j].ncand))
            j--;
        if (j < 0)
            break;
        for (int k = 0; k < j; k++)
            idx[k] = rc->rec[k].chosen < 0 ? 0 : rc->rec[k].chosen;
        idx[j] = rc->rec[j].chosen + 1;
        rc->nidx = j + 1;
    }
    nav->base = nav->d;
    nav->have_table = 1;
    *built = 1;
    return LOOM_OK;
}

static int table_applies(const loom_nav *nav)
{
    if (!nav->have_table)
        return 0;
    for (int j = 0; j < MAXH; j++)
        if (nav->base.decided[j] &&
            (!nav->d.decided[j] || !loom_nav_value_equal(&nav->base.value[j], &nav->d.value[j])))
            return 0;
    return 1;
}

static int consistent(const loom_nav *nav, long L, const dec_state *d)
{
    if (!nav->leaf_valid[L])
        return 0;
    for (int j = 0; j < MAXH; j++)
        if (d->decided[j] && !nav->base.decided[j] && !hole_is(leaf_hole(nav, L, j), &d->value[j]))
            return 0;
    return 1;
}

/* The witness of d: among the valid consistent leaves, hole by hole in
 * program order, the default where some leaf has it, else the first; -1
 * when none.  *count receives the number of valid consistent leaves. */
long loom__nav_table_witness(const loom_nav *nav, const dec_state *d, long *count)
{
    long *set = malloc(sizeof(long) * (size_t)(nav->nleaves + 1)), n = 0;
    if (!set)
        return -2;
    for (long L = 0; L < nav->nleaves; L++)
        if (consistent(nav, L, d))
            set[n++] = L;
    *count = n;
    for (int j = 0; n > 1 && j < MAXH; j++) {
        if (d->decided[j])
            continue;
        long pick = -1;
        for (long k = 0; k < n && pick < 0; k++) {
            const int64_t *h = leaf_hole(nav, set[k], j);
            if (h && hole_pref(h))
                pick = set[k];
        }
        if (pick < 0)
            pick = set[0];
        const int64_t *ph = leaf_hole(nav, pick, j);
        if (!ph)
            continue;
        loom_nav_value v;
        hole_value(ph, &v);
        long m = 0;
        for (long k = 0; k < n; k++)
            if (hole_is(leaf_hole(nav, set[k], j), &v))
                set[m++] = set[k];
        n = m;
    }
    long w = n ? set[0] : -1;
    free(set);
    return w;
}

/* ---- states ------------------------------------------------------------------- */

/* The default completion of `force`, else the first valid of
 * LOOM_NAV_WITNESS_TRIES random ones (rng seeded 1, 2, ...: the same force
 * gives the same witness every time, so a choice offered by a witness keeps
 * it once picked).  Leaves the last run in rc / t / sch. */
loom_status loom__nav_witness_search(loom_nav *nav, const dec_state *force, run_ctx *rc, loom_trace *t,
                                  loom_schedule *sch, int *valid, loom_error *err)
{
    rc->force = force;
    rc->idx = NULL;
    rc->nidx = 0;
    rc->fill = FILL_DEFAULT;
    loom_status st = nav_run(nav, rc, t, sch, valid, err);
    for (int k = 1; !st && !*valid && k <= LOOM_NAV_WITNESS_TRIES; k++) {
        gsl_rng_set(nav->rng, (unsigned long)k);
        rc->fill = FILL_RANDOM;
        st = nav_run(nav, rc, t, sch, valid, err);
    }
    return st;
}

/* Run the full decisions of leaf L into the sketch. */
loom_status loom__nav_run_leaf(loom_nav *nav, long L, dec_state *tmp, run_ctx *rc, loom_trace *t, loom_schedule *sch,
                            int *valid, loom_error *err)
{
    memset(tmp->decided, 0, sizeof tmp->decided);
    for (int j = 0; j < nav->leaf_nh[L]; j++) {
        tmp->decided[j] = 1;
        hole_value(leaf_hole(nav, L, j), &tmp->value[j]);
    }
    rc->force = tmp;
    rc->idx = NULL;
    rc->nidx = 0;
    rc->fill = FILL_FIRST;
    return nav_run(nav, rc, t, sch, valid, err);
}

static loom_status enum_menu(loom_nav *nav, int k, const loom_nav_value *def)
{
    int n = 0;
    for (long L = 0; L < nav->nleaves; L++) {
        if (!consistent(nav, L, &nav->d))
            continue;
        const int64_t *h = leaf_hole(nav, L, k);
        if (!h || hole_kind(h) != nav->sk_rc->rec[k].kind)
            continue;
        int at = -1;
        for (int m = 0; m < n && at < 0; m++)
            if (hole_is(h, &nav->menu[m].value))
                at = m;
        if (at < 0) {
            if (n >= LOOM_NAV_MAX_CHOICES)
                continue;
            at = n++;
            hole_value(h, &nav->menu[at].value);
            nav->menu[at].completions = 0;
            nav->menu[at].is_default = loom_nav_value_equal(&nav->menu[at].value, def);
        }
        nav->menu[at].completions++;
    }
    nav->nmenu = n;
    return LOOM_OK;
}

/* Set up nav->rc to replay the sketch's recorded decisions (tmp holds
 * them) and fill the rest with defaults.  The run context. */
static run_ctx *force_sketch(loom_nav *nav, dec_state *tmp)
{
    run_ctx *rc = nav->rc;
    memset(tmp->decided, 0, sizeof tmp->decided);
    for (int j = 0; j < nav->sk_rc->nholes; j++)
        if (nav->sk_rc->rec[j].kind >= 0) {
            tmp->decided[j] = 1;
            tmp->value[j] = nav->sk_rc->rec[j].val;
        }
    rc->force = tmp;
    rc->idx = NULL;
    rc->nidx = 0;
    rc->fill = FILL_DEFAULT;
    return rc;
}

static loom_status witness_menu(loom_nav *nav, int k, const loom_nav_value *def, dec_state *tmp, loom_error *err)
{
    /* the hole's candidates where the sketch calls it */
    run_ctx *rc = force_sketch(nav, tmp);
    rc->want = k;
    rc->want_cands = nav->menu_cands;
    int valid;
    loom_status st = nav_run(nav, rc, nav->trace, nav->sch, &valid, err);
    rc->want = -1;
    int nc = rc->nwant;
    nav->nmenu = 0;
    for (int c = 0; c < nc && c < 256 && !st; c++) {
        *tmp = nav->d;
        tmp->decided[k] = 1;
        tmp->value[k] = nav->menu_cands[c];
        st = loom__nav_witness_search(nav, tmp, rc, nav->trace, nav->sch, &valid, err);
        if (valid) {
            loom_nav_choice *m = &nav->menu[nav->nmenu++];
            m->value = nav->menu_cands[c];
            m->completions = -1;
            m->is_default = loom_nav_value_equal(&m->value, def);
        }
    }
    return st;
}

/* Run the sketch's decisions once more, keeping the schedule as it stands
 * when the current hole's sampler is called (what its menu entries mean:
 * loom_nav_call). */
static loom_status snapshot_current(loom_nav *nav, dec_state *tmp, loom_error *err)
{
    nav->have_at = 0;
    if (nav->current < 0)
        return LOOM_OK;
    run_ctx *rc = force_sketch(nav, tmp);
    rc->want = nav->holes[nav->current].ordinal;
    rc->want_sch = nav->at_sch;
    rc->want_proto = &nav->at_proto;
    int valid;
    loom_status st = nav_run(nav, rc, nav->trace, nav->sch, &valid, err);
    nav->have_at = rc->have_want_sch;
    rc->want = -1;
    rc->want_sch = NULL;
    return st;
}

/* Recompute the sketch, the holes, the size and the menu from nav->d. */
loom_status loom__nav_compute_state(loom_nav *nav, loom_error *err)
{
    dec_state *tmp = malloc(sizeof *tmp);
    if (!tmp)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = LOOM_OK;
    int valid = 0;
    if (!table_applies(nav)) {
        drop_table(nav);
        /* the default completion's shape gives the estimate */
        st = loom__nav_witness_search(nav, &nav->d, nav->sk_rc, nav->sk_trace, nav->sk_sch, &valid, err);
        double est = 1;
        for (int j = 0; j < nav->sk_rc->nholes; j++)
            if (nav->sk_rc->rec[j].kind >= 0 && !nav->d.decided[j])
                est *= nav->sk_rc->rec[j].ncand;
        if (!st && est <= 4.0 * (double)nav->enum_limit) {
            int built;
            st = build_table(nav, &built, err);
        }
        nav->size = est;
    }
    if (!st && nav->have_table) {
        long count = 0, w = loom__nav_table_witness(nav, &nav->d, &count);
        if (w == -2)
            st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        else if (w >= 0)
            st = loom__nav_run_leaf(nav, w, tmp, nav->sk_rc, nav->sk_trace, nav->sk_sch, &valid, err);
        else /* no valid completion: show the default one (invalid) */
            st = loom__nav_witness_search(nav, &nav->d, nav->sk_rc, nav->sk_trace, nav->sk_sch, &valid, err);
        nav->method = "enumeration";
        nav->size = (double)count;
        nav->size_exact = 1;
        snprintf(nav->size_method, sizeof nav->size_method,
                 "exact: %ld valid of %ld completions enumerated", count, nav->nleaves);
    } else if (!st) {
        if (!valid) /* show the default completion even when invalid */
            st = loom__nav_witness_search(nav, &nav->d, nav->sk_rc, nav->sk_trace, nav->sk_sch, &valid, err);
        nav->method = "witness";
        nav->size_exact = 0;
        snprintf(nav->size_method, sizeof nav->size_method,
                 "upper-bound estimate: the product of the candidate counts of the open holes of this sketch "
                 "(the holes after a choice may change with it); over %ld completions: not enumerated",
                 nav->enum_limit);
    }
    nav->sk_valid = valid;
    /* the holes and the current one */
    nav->nholes = 0;
    nav->current = -1;
    for (int j = 0; j < nav->sk_rc->nholes && !st; j++) {
        const hole_rec *h = &nav->sk_rc->rec[j];
        if (h->kind < 0)
            continue;
        loom_nav_hole *H = &nav->holes[nav->nholes];
        H->ordinal = j;
        H->inst = loom_trace_sampler_inst(nav->sk_trace, j);
        H->kind = h->kind;
        H->decided = nav->d.decided[j];
        H->ncand = h->ncand;
        H->value = h->val;
        if (!H->decided && (nav->current < 0 || j == nav->goto_ord))
            nav->current = nav->nholes;
        nav->nholes++;
    }
    nav->nmenu = 0;
    if (!st && nav->current >= 0) {
        const loom_nav_hole *H = &nav->holes[nav->current];
        if (nav->have_table)
            st = enum_menu(nav, H->ordinal, &H->value);
        else
            st = witness_menu(nav, H->ordinal, &H->value, tmp, err);
        int has_def = 0;
        for (int m = 0; m < nav->nmenu; m++)
            has_def |= nav->menu[m].is_default;
        if (!has_def && nav->nmenu > 0)
            nav->menu[0].is_default = 1;
    }
    nav->have_at = 0; /* loom_nav_call runs it again when asked */
    free(tmp);
    return st;
}

/* ---- life cycle and queries ------------------------------------------------- */

void loom_nav_free(loom_nav *nav)
{
    if (!nav)
        return;
    if (nav->rng)
        gsl_rng_free(nav->rng);
    free(nav->sch);
    free(nav->sk_sch);
    free(nav->at_sch);
    loom_trace_free(nav->trace);
    loom_trace_free(nav->sk_trace);
    free(nav->cands);
    free(nav->menu_cands);
    free(nav->menu);
    free(nav->rc);
    free(nav->sk_rc);
    free(nav->undo);
    free(nav->leaf_off);
    free(nav->leaf_nh);
    free(nav->leaf_valid);
    free(nav->hoff);
    free(nav->pool);
    free(nav->dflt);
    free(nav);
}

/* The default schedule of the space (loom_default_build) into nav->dinfo
 * and, when it is the space's default, its decisions by sampler ordinal
 * into nav->dflt: the holes' defaults along its path.  A workload without
 * any default schedule is not an error here (dinfo.why_not says why). */
static loom_status nav_default(loom_nav *nav, loom_error *err)
{
    loom_trace *t = nav->trace;
    loom_trace_clear(t);
    loom_status st = loom_schedule_init(nav->sch, nav->prog, NULL, err);
    if (st)
        return st;
    nav->sch->recorder = loom_trace_recorder;
    nav->sch->recorder_ctx = t;
    loom_error e;
    loom_error_clear(&e);
    st = loom_default_build(nav->space, NULL, nav->sch, &nav->dinfo, &e);
    nav->sch->recorder = NULL;
    nav->sch->recorder_ctx = NULL;
    if (st == LOOM_ERR_NOMEM)
        return loom_error_set(err, st, NULL, 0, 0, "%s", e.msg);
    if (!st)
        st = loom_trace_status(t, &e);
    if (st) {
        nav->dinfo.in_space = 0;
        snprintf(nav->dinfo.why_not, sizeof nav->dinfo.why_not, "no default schedule: %.900s", e.msg);
        return LOOM_OK;
    }
    loom_violation v;
    if (nav->dinfo.in_space && loom_validate(nav->sch, &nav->lim, &v, NULL) != LOOM_OK) {
        /* validated with a smaller machine than the space was shaped for */
        nav->dinfo.in_space = 0;
        snprintf(nav->dinfo.why_not, sizeof nav->dinfo.why_not,
                 "the default schedule is invalid with navigation's limits: %.900s", v.msg);
    }
    if (!nav->dinfo.in_space)
        return LOOM_OK;
    nav->dflt = malloc(sizeof *nav->dflt * MAXH);
    if (!nav->dflt)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int i; nav->ndflt < MAXH && (i = loom_trace_sampler_inst(t, nav->ndflt)) >= 0; nav->ndflt++) {
        loom_nav_value *v = &nav->dflt[nav->ndflt];
        v->kind = t->insts[i].kind;
        v->n = t->insts[i].ndecision;
        memcpy(v->v, t->insts[i].decision, sizeof(int64_t) * (size_t)v->n);
    }
    return LOOM_OK;
}

loom_status loom_nav_new(const loom_program *prog, const loom_space *space, const loom_limits *lim, long enum_limit,
                         loom_nav **out, loom_error *err)
{
    *out = NULL;
    loom_nav *nav = calloc(1, sizeof *nav);
    if (!nav)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    nav->prog = prog;
    nav->space = space;
    nav->lim = lim ? *lim : *loom_space_limits(space);
    nav->enum_limit = enum_limit > 0 ? enum_limit : LOOM_NAV_ENUM_LIMIT;
    nav->goto_ord = -1;
    nav->rng = gsl_rng_alloc(gsl_rng_mt19937);
    nav->sch = malloc(sizeof *nav->sch);
    nav->sk_sch = malloc(sizeof *nav->sk_sch);
    nav->at_sch = malloc(sizeof *nav->at_sch);
    nav->trace = loom_trace_new();
    nav->sk_trace = loom_trace_new();
    nav->cands = malloc(sizeof *nav->cands * LOOM_NAV_MAX_CHOICES);
    nav->menu_cands = malloc(sizeof *nav->menu_cands * LOOM_NAV_MAX_CHOICES);
    nav->menu = malloc(sizeof *nav->menu * LOOM_NAV_MAX_CHOICES);
    nav->rc = calloc(1, sizeof *nav->rc);
    nav->sk_rc = calloc(1, sizeof *nav->sk_rc);
    if (!nav->rng || !nav->sch || !nav->sk_sch || !nav->at_sch || !nav->trace || !nav->sk_trace || !nav->cands ||
        !nav->menu_cands || !nav->menu || !nav->rc || !nav->sk_rc) {
        loom_nav_free(nav);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    nav->rc->want = nav->sk_rc->want = -1;
    loom_status st = nav_default(nav, err);
    if (!st)
        st = loom__nav_compute_state(nav, err);
    if (!st && !nav->sk_valid)
        st = loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                            "the design space has no valid schedule that navigation could find (%s method): try "
                            "other modules or parameters",
                            nav->method);
    if (st) {
        loom_nav_free(nav);
        return st;
    }
    *out = nav;
    return LOOM_OK;
}

void loom_nav_get_state(const loom_nav *nav, loom_nav_state *st)
{
    memset(st, 0, sizeof *st);
    st->nholes = nav->nholes;
    for (int k = 0; k < nav->nholes; k++)
        st->nopen += !nav->holes[k].decided;
    st->current = nav->current;
    st->complete = st->nopen == 0;
    st->sketch_valid = nav->sk_valid;
    st->method = nav->method;
    st->size = nav->size;
    st->size_exact = nav->size_exact;
    st->size_method = nav->size_method;
    st->runs = nav->runs;
    st->default_in_space = nav->dinfo.in_space;
    st->default_why_not = nav->dinfo.why_not;
}

const loom_nav_hole *loom_nav_holes(const loom_nav *nav, int *n)
{
    *n = nav->nholes;
    return nav->holes;
}

int loom_nav_menu(const loom_nav *nav, const loom_nav_choice **menu)
{
    *menu = nav->menu;
    return nav->nmenu;
}

const loom_trace *loom_nav_trace(const loom_nav *nav) { return nav->sk_trace; }
const loom_schedule *loom_nav_schedule(const loom_nav *nav) { return nav->sk_sch; }

const loom_schedule *loom_nav_call(loom_nav *nav, const loom_inst **proto)
{
    if (nav->current < 0)
        return NULL;
    if (!nav->have_at) {
        dec_state *tmp = malloc(sizeof *tmp);
        loom_error e;
        if (!tmp || snapshot_current(nav, tmp, &e) != LOOM_OK)
            nav->have_at = 0;
        free(tmp);
    }
    if (!nav->have_at)
        return NULL;
    *proto = &nav->at_proto;
    return nav->at_sch;
}

void loom_nav_pins(const loom_nav *nav, loom_pins *out)
{
    out->n = 0;
    for (int j = 0; j < MAXH; j++)
        if (nav->d.decided[j]) {
            out->ordinal[out->n] = j;
            out->value[out->n++] = nav->d.value[j];
        }
}
