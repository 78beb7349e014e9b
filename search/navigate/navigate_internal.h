/* loom: the navigation engine's state (private to search/navigate/:
 * navigate.c -- runs, the enumeration table, states and menus, life cycle
 * and queries -- and navigate_commands.c -- the commands that change the
 * decisions, and printing; see navigate.h). */
#ifndef LOOM_NAVIGATE_INTERNAL_H
#define LOOM_NAVIGATE_INTERNAL_H

#include <gsl/gsl_rng.h>

#include "navigate.h"

#define MAXH LOOM_NAV_MAX_HOLES

/* The decided holes, by ordinal. */
typedef struct dec_state {
    int decided[MAXH];
    loom_nav_value value[MAXH];
} dec_state;

/* What one run saw of one sampler. */
typedef struct hole_rec {
    int kind;    /* -1: the module gave the decision itself (not a hole) */
    int ncand, chosen, pref;
    loom_nav_value val;
} hole_rec;

enum { FILL_FIRST, FILL_DEFAULT, FILL_RANDOM };

typedef struct run_ctx {
    loom_nav *nav;
    const dec_state *force;   /* forced by ordinal (may be NULL) */
    const int *idx;           /* odometer: candidate index of ordinals < nidx */
    int nidx;
    int fill;                 /* the other open holes */
    int want;                 /* ordinal whose candidates to keep, -1 */
    loom_nav_value *want_cands;
    int nwant;
    loom_schedule *want_sch;  /* receives the schedule at the wanted sampler's call (may be NULL) */
    loom_inst *want_proto;
    int have_want_sch;
    int nholes;
    hole_rec rec[MAXH];
    int inconsistent;
    int off_default;          /* 1: an earlier sampler left the space's default */
} run_ctx;

struct loom_nav {
    const loom_program *prog;
    const loom_space *space;
    loom_limits lim;
    long enum_limit;
    gsl_rng *rng;
    loom_schedule *sch;       /* scratch */
    loom_trace *trace;        /* scratch */
    loom_nav_value *cands;    /* LOOM_NAV_MAX_CHOICES scratch for the decider */
    loom_nav_value *menu_cands;
    run_ctx *rc;              /* scratch run context */
    dec_state d;              /* the decisions */
    dec_state *undo;
    int nundo, capundo;
    int goto_ord;
    /* the sketch */
    loom_trace *sk_trace;
    loom_schedule *sk_sch;
    int sk_valid;
    run_ctx *sk_rc;
    loom_nav_hole holes[MAXH];
    int nholes, current;
    loom_nav_choice *menu;
    int nmenu;
    loom_schedule *at_sch;    /* the schedule when the current hole's sampler is called */
    loom_inst at_proto;
    int have_at;
    /* the enumeration of the completions of `base` */
    int have_table;
    dec_state base;
    long nleaves, capleaves;
    long *leaf_off;           /* into hoff */
    int *leaf_nh;
    unsigned char *leaf_valid;
    long *hoff;               /* per leaf and ordinal: offset into pool */
    long nhoff, caphoff;
    int64_t *pool;            /* per hole: header kind | pref << 8 | n << 16, then the n values */
    long npool, cappool;
    /* the state */
    const char *method;
    double size;
    int size_exact;
    char size_method[256];
    long runs;
    /* the default schedule (loom_default_build): its decisions by sampler
     * ordinal when it is the space's default (ndflt samplers), else none */
    loom_default_info dinfo;
    int ndflt;
    loom_nav_value *dflt;
};

/* Recompute the state (holes, menus, the sketch) from nav->d.  Errors:
 * LOOM_ERR_NOMEM, those of a run (navigate.h loom_nav_pick). */
loom_status loom__nav_compute_state(loom_nav *nav, loom_error *err);

/* The default completion of `force`, else the first valid completion
 * (witness search): *valid 1 when one validates.  Leaves the last run in
 * rc / t / sch. */
loom_status loom__nav_witness_search(loom_nav *nav, const dec_state *force, run_ctx *rc, loom_trace *t,
                                     loom_schedule *sch, int *valid, loom_error *err);

/* The witness of d in the enumeration table: among the valid leaves
 * consistent with d, hole by hole in order (-1 when none); *count receives
 * the number of valid consistent leaves. */
long loom__nav_table_witness(const loom_nav *nav, const dec_state *d, long *count);

/* Run the full decisions of leaf L into rc / t / sch (tmp scratch);
 * *valid as loom__nav_witness_search's. */
loom_status loom__nav_run_leaf(loom_nav *nav, long L, dec_state *tmp, run_ctx *rc, loom_trace *t, loom_schedule *sch,
                               int *valid, loom_error *err);

#endif
