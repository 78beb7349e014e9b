/* Navigation (search/navigate/navigate.h, issue 18): strong soundness and strong
 * completeness, exhaustively on enumerable spaces (SpMM and SDDMM on small
 * data, attention at a small N); partial traces; goto and undo.
 *
 * The reference set of valid schedules is found here by an enumeration of
 * our own (an odometer over every sampler's candidates, through the decision
 * hook), each schedule judged by serialising its trace, reading it back,
 * replaying it on a fresh schedule, loom_validate and loom_lower -- none of
 * the navigator's table, witness or menu code. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/machine/machine.h"
#include "../runtime/lower/lir.h"
#include "../runtime/lower/lower.h"
#include "../search/navigate/navigate.h"
#include "fixture.h"

typedef struct space_env {
    loom_program *prog;
    loom_dataset *ds;
    loom_registry *reg;
    loom_space *space;
    loom_limits lim;
} space_env;

static void env_open(space_env *e, const char *workload, const char *const *args, int nargs, const char *modules)
{
    loom_error err;
    e->prog = fx_bind(workload, args, nargs, 1, &e->ds);
    e->reg = loom_registry_new();
    cr_assert_not_null(e->reg);
    cr_assert_eq(loom_space_new(e->reg, modules, "sim", &e->space, &err), LOOM_OK, "%s", err.msg);
    e->lim = *loom_space_limits(e->space);
}

static void env_close(space_env *e)
{
    loom_space_free(e->space);
    loom_registry_free(e->reg);
    loom_dataset_free(e->ds);
    loom_program_free(e->prog);
}

/* ---- the independent enumeration ------------------------------------------------ */

typedef struct strset {
    char **s;
    int n, cap;
} strset;

static int set_has(const strset *S, const char *x)
{
    for (int k = 0; k < S->n; k++)
        if (!strcmp(S->s[k], x))
            return 1;
    return 0;
}

static void set_add(strset *S, const char *x)
{
    if (set_has(S, x))
        return;
    if (S->n == S->cap) {
        S->cap = S->cap ? 2 * S->cap : 256;
        S->s = realloc(S->s, sizeof(char *) * (size_t)S->cap);
        cr_assert_not_null(S->s);
    }
    S->s[S->n++] = strdup(x);
}

static void set_free(strset *S)
{
    for (int k = 0; k < S->n; k++)
        free(S->s[k]);
    free(S->s);
}

/* The decisions of every sampler of t, as text: the schedule's identity. */
static void signature(const loom_trace *t, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < t->ninsts && at + 64 < n; i++) {
        const loom_inst *in = &t->insts[i];
        if (!loom_nav_is_sampler(in->kind))
            continue;
        at += (size_t)snprintf(buf + at, n - at, "%d:", in->kind);
        for (int k = 0; k < in->ndecision; k++)
            at += (size_t)snprintf(buf + at, n - at, "%lld,", (long long)in->decision[k]);
        at += (size_t)snprintf(buf + at, n - at, ";");
    }
}

/* 1 when t is a valid schedule: through JSON, replayed fresh, validated and lowered. */
static int independently_valid(const space_env *e, const loom_trace *t)
{
    char *json = NULL;
    if (loom_trace_to_json(t, e->prog, &json) != LOOM_OK)
        return 0;
    loom_trace *back = NULL;
    loom_error err;
    int ok = loom_trace_from_json(json, "enum", &back, &err) == LOOM_OK;
    free(json);
    loom_schedule *sch = malloc(sizeof *sch);
    ok = ok && sch && loom_schedule_init(sch, e->prog, NULL, &err) == LOOM_OK &&
         loom_trace_replay(back, sch, NULL, &err) == LOOM_OK;
    loom_violation v;
    ok = ok && loom_validate(sch, &e->lim, &v, NULL) == LOOM_OK;
    lir_func *f = NULL;
    ok = ok && loom_lower(sch, &f, &err) == LOOM_OK;
    loom_lir_func_free(f);
    /* the replay gives back the same decisions (nothing repaired) */
    ok = ok && loom_trace_equal(back, t);
    loom_trace_free(back);
    free(sch);
    return ok;
}

typedef struct odo {
    int idx[LOOM_NAV_MAX_HOLES], nidx;
    int ncand[LOOM_NAV_MAX_HOLES], chosen[LOOM_NAV_MAX_HOLES], nholes;
    loom_nav_value *cands;
} odo;

static int odo_decide(void *ctx, const loom_schedule *sch, int ord, int kind, const loom_inst *proto,
                      int64_t *decision)
{
    odo *o = ctx;
    int pref, nc = loom_nav_candidates(sch, kind, proto, o->cands, LOOM_NAV_MAX_CHOICES, &pref);
    for (int j = o->nholes; j < ord; j++)
        o->ncand[j] = 1, o->chosen[j] = 0; /* decided by a module */
    o->nholes = ord + 1;
    int c = ord < o->nidx ? o->idx[ord] : 0;
    o->ncand[ord] = nc;
    o->chosen[ord] = c;
    if (c >= nc)
        return 0;
    memcpy(decision, o->cands[c].v, sizeof(int64_t) * (size_t)o->cands[c].n);
    return o->cands[c].n;
}

/* Every valid schedule of the space, by their signatures; *total counts all. */
static void enumerate_valid(const space_env *e, strset *valid, long *total)
{
    odo *o = calloc(1, sizeof *o);
    o->cands = malloc(sizeof *o->cands * LOOM_NAV_MAX_CHOICES);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = loom_trace_new();
    cr_assert(o && o->cands && sch && t);
    *total = 0;
    char sig[8192];
    for (;;) {
        loom_error err;
        loom_trace_clear(t);
        o->nholes = 0;
        cr_assert_eq(loom_schedule_init(sch, e->prog, NULL, &err), LOOM_OK);
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        sch->decider = odo_decide;
        sch->decider_ctx = o;
        int ran = loom_space_apply(e->space, sch, &err) == LOOM_OK && loom_trace_status(t, &err) == LOOM_OK;
        sch->recorder = NULL;
        sch->decider = NULL;
        (*total)++;
        if (ran && independently_valid(e, t)) {
            signature(t, sig, sizeof sig);
            set_add(valid, sig);
        }
        int j = o->nholes - 1;
        while (j >= 0 && o->chosen[j] + 1 >= o->ncand[j])
            j--;
        if (j < 0)
            break;
        for (int k = 0; k < j; k++)
            o->idx[k] = o->chosen[k];
        o->idx[j] = o->chosen[j] + 1;
        o->nidx = j + 1;
        cr_assert_lt(*total, 200000, "the test's space is too large to enumerate");
    }
    loom_trace_free(t);
    free(sch);
    free(o->cands);
    free(o);
}

/* ---- navigation, depth first ----------------------------------------------------- */

typedef struct dfs {
    const space_env *e;
    loom_nav *nav;
    strset reached;
    long states, picks;
} dfs;

/* Explore every choice of every state reachable from the current one (in
 * program order); returns the number of valid complete schedules reached. */
static long explore(dfs *D)
{
    loom_nav_state st;
    loom_nav_get_state(D->nav, &st);
    D->states++;
    cr_assert(st.sketch_valid, "a reachable state has no valid completion (soundness)");
    cr_assert_str_eq(st.method, "enumeration");
    if (st.complete) {
        const loom_trace *t = loom_nav_trace(D->nav);
        cr_assert(independently_valid(D->e, t), "navigation reached an invalid schedule");
        char sig[8192];
        signature(t, sig, sizeof sig);
        set_add(&D->reached, sig);
        cr_assert_eq(st.size, 1);
        return 1;
    }
    const loom_nav_choice *menu;
    int n = loom_nav_menu(D->nav, &menu);
    cr_assert_gt(n, 0, "an open hole with an empty menu (soundness)");
    int ndef = 0;
    long sum = 0, below = 0;
    for (int k = 0; k < n; k++) {
        ndef += menu[k].is_default;
        sum += menu[k].completions;
    }
    cr_assert_eq(ndef, 1, "exactly one default per menu");
    cr_assert_eq((double)sum, st.size, "the menu's completions add up to the remaining size");
    for (int k = 0; k < n; k++) {
        loom_error err;
        long expect = 0;
        {
            const loom_nav_choice *m2;
            loom_nav_menu(D->nav, &m2);
            expect = m2[k].completions;
        }
        cr_assert_eq(loom_nav_pick(D->nav, k, &err), LOOM_OK, "%s", err.msg);
        D->picks++;
        long got = explore(D);
        cr_assert_gt(got, 0, "an offered choice led to no valid schedule (soundness)");
        cr_assert_eq(got, expect, "choice %d: %ld schedules reached, the menu said %ld", k, got, expect);
        below += got;
        cr_assert_eq(loom_nav_undo(D->nav, &err), LOOM_OK, "%s", err.msg);
    }
    return below;
}

static void check_space_lim(const char *workload, const char *const *args, int nargs, const char *modules,
                            long min_valid, const loom_limits *narrow)
{
    space_env e;
    env_open(&e, workload, args, nargs, modules);
    if (narrow) /* validated for a smaller machine than the space was shaped for: some schedules are invalid */
        e.lim = *narrow;
    strset valid = {0};
    long total = 0;
    enumerate_valid(&e, &valid, &total);
    cr_assert_geq(valid.n, min_valid, "%s: only %d valid schedules of %ld", workload, valid.n, total);
    if (narrow)
        cr_assert_lt(valid.n, total, "%s: every schedule is valid on the narrow machine: the test shows nothing", workload);
    dfs D = {.e = &e};
    loom_error err;
    /* an exact navigator: SpMM F = 4 has about 30000 completions since issue
     * 13's three-way register tile, over the default LOOM_NAV_ENUM_LIMIT */
    cr_assert_eq(loom_nav_new(e.prog, e.space, &e.lim, 200000, &D.nav, &err), LOOM_OK, "%s", err.msg);
    loom_nav_state st;
    loom_nav_get_state(D.nav, &st);
    cr_assert_eq(st.size, (double)valid.n, "%s: the navigator counts %.0f valid schedules, enumeration %d", workload,
                 st.size, valid.n);
    long got = explore(&D);
    cr_assert_eq(got, valid.n);
    /* completeness: every valid schedule was reached, and nothing else */
    cr_assert_eq(D.reached.n, valid.n, "%s: navigation reached %d schedules, the space has %d valid", workload,
                 D.reached.n, valid.n);
    for (int k = 0; k < valid.n; k++)
        cr_assert(set_has(&D.reached, valid.s[k]), "%s: valid schedule %s is not reachable", workload, valid.s[k]);
    fprintf(stderr, "navigate %s: %d valid of %ld schedules; %ld states, %ld picks, %ld runs\n", workload, valid.n,
            total, D.states, D.picks, st.runs);
    loom_nav_free(D.nav);
    set_free(&D.reached);
    set_free(&valid);
    env_close(&e);
}

static loom_limits narrow_machine(void)
{
    loom_limits narrow = loom_target_cpu_limits();
    narrow.vector_lanes = 2;
    narrow.max_vector_factor = 1;
    narrow.cores = 2;
    narrow.max_workspace_bytes = 64;
    return narrow;
}

static void check_space(const char *workload, const char *const *args, int nargs, const char *modules,
                        long min_valid)
{
    check_space_lim(workload, args, nargs, modules, min_valid, NULL);
}

Test(navigate, spmm_sound_and_complete, .timeout = 120)
{
    const char *args[] = {"A=tests/data/ref_a34.mtx", "F=4"};
    check_space("workloads/spmm.loom", args, 2, NULL, 2);
}

Test(navigate, sddmm_sound_and_complete, .timeout = 120)
{
    const char *args[] = {"M=tests/data/ref_a34.mtx", "D=4"};
    check_space("workloads/sddmm.loom", args, 2, NULL, 2);
}

Test(navigate, attention_sound_and_complete, .timeout = 120)
{
    /* the structural holes: fusion group, compute locations, loop orders
     * (tiling and annotations multiply the space past an exhaustive test) */
    const char *args[] = {"N=4", "D=2"};
    check_space("workloads/attention.loom", args, 2, "attention-fusion,fuse-producers,sparse-loop-order", 2);
}

/* A space shaped for the host validated for a machine with 2-lane vectors,
 * one vector per loop, 2 cores and 64-byte workspaces: the menus must leave
 * out every choice whose completions are all invalid there. */
Test(navigate, spmm_narrow_machine_sound_and_complete, .timeout = 300)
{
    const char *args[] = {"A=data/cora500_adj.mtx", "F=4"};
    loom_limits narrow = narrow_machine();
    check_space_lim("workloads/spmm.loom", args, 2, NULL, 2, &narrow);
}

/* ---- partial traces and `loom tune --pin` ------------------------------------------ */

#include <unistd.h>

#include "../search/database/database.h"
#include "../search/tune/tune.h"

/* Decide the first two holes with a choice other than the default. */
static void pick_non_defaults(loom_nav *nav, int n)
{
    for (int h = 0; h < n; h++) {
        const loom_nav_choice *menu;
        int m = loom_nav_menu(nav, &menu), k = 0;
        while (k < m - 1 && menu[k].is_default)
            k++;
        loom_error err;
        cr_assert_eq(loom_nav_pick(nav, k, &err), LOOM_OK, "%s", err.msg);
    }
}

Test(navigate, partial_trace_round_trip)
{
    space_env e;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=8"};
    env_open(&e, "workloads/spmm.loom", args, 2, NULL);
    loom_nav *nav = NULL;
    loom_error err;
    cr_assert_eq(loom_nav_new(e.prog, e.space, NULL, 0, &nav, &err), LOOM_OK, "%s", err.msg);
    pick_non_defaults(nav, 2);
    loom_pins pins, back;
    loom_nav_pins(nav, &pins);
    cr_assert_eq(pins.n, 2);
    char *json = NULL;
    cr_assert_eq(loom_partial_trace_to_json(loom_nav_trace(nav), e.prog, &pins, &json, &err), LOOM_OK, "%s", err.msg);
    cr_assert_not_null(strstr(json, "\"pinned\": ["));
    loom_trace *t = NULL;
    cr_assert_eq(loom_partial_trace_from_json(json, "p.json", &t, &back, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(back.n, 2);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(back.ordinal[k], pins.ordinal[k]);
        cr_assert(loom_nav_value_equal(&back.value[k], &pins.value[k]));
    }
    /* an old reader: the same trace, the key ignored */
    loom_trace *plain = NULL;
    cr_assert_eq(loom_trace_from_json(json, "p.json", &plain, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_trace_equal(plain, loom_nav_trace(nav)));
    /* a trace without "pinned" pins every sampler */
    char *full = NULL;
    cr_assert_eq(loom_trace_to_json(plain, e.prog, &full), LOOM_OK);
    loom_trace *t2 = NULL;
    cr_assert_eq(loom_partial_trace_from_json(full, "f.json", &t2, &back, &err), LOOM_OK, "%s", err.msg);
    int nsamplers = 0;
    for (int i = 0; i < plain->ninsts; i++)
        nsamplers += loom_nav_is_sampler(plain->insts[i].kind);
    cr_assert_eq(back.n, nsamplers);
    /* a pinned index that is not a sampler is refused */
    char *bad = strdup(json);
    char *at = strstr(bad, "\"pinned\": [");
    snprintf(at, strlen(at) + 1, "\"pinned\": [0]}");
    loom_trace *t3 = NULL;
    cr_assert_eq(loom_partial_trace_from_json(bad, "b.json", &t3, &back, &err), LOOM_ERR_DATA);
    cr_assert_not_null(strstr(err.msg, "$.pinned"), "%s", err.msg);
    free(bad);
    free(full);
    free(json);
    loom_trace_free(t);
    loom_trace_free(t2);
    loom_trace_free(plain);
    loom_nav_free(nav);
    env_close(&e);
}

/* A campaign with pins on the simulator: every record carries them, and it
 * still explores the other holes. */
Test(navigate, tune_with_pins_keeps_them, .timeout = 300)
{
    space_env e;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=8"};
    env_open(&e, "workloads/spmm.loom", args, 2, NULL);
    loom_nav *nav = NULL;
    loom_error err;
    cr_assert_eq(loom_nav_new(e.prog, e.space, NULL, 0, &nav, &err), LOOM_OK, "%s", err.msg);
    pick_non_defaults(nav, 2);
    loom_pins pins;
    loom_nav_pins(nav, &pins);
    char dir[] = "/tmp/loom_nav_tuneXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.trials = 24;
    o.batch = 8;
    o.target = "sim:spr-2c";
    o.workload_name = "spmm";
    o.search.population = 32;
    o.search.generations = 2;
    o.search.init_min_unmeasured = 8;
    o.search.threads = 1;
    o.remeasure_rounds = 0;
    o.pins = &pins;
    loom_tune_result r;
    cr_assert_eq(loom_tune(e.prog, e.ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_gt(r.trials, 4, "the pinned campaign made %d trials", r.trials);
    loom_db *db = NULL;
    cr_assert_eq(loom_db_open(dir, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    int n = loom_db_count(db), checked = 0;
    strset distinct = {0};
    for (int i = 0; i < n; i++) {
        const loom_record *rec = loom_db_record(db, i);
        if (!rec->trace_json)
            continue;
        loom_trace *t = NULL;
        cr_assert_eq(loom_trace_from_json(rec->trace_json, "rec", &t, &err), LOOM_OK, "%s", err.msg);
        cr_assert(loom_pins_hold(&pins, t), "record %d does not carry the pinned decisions", i);
        char sig[8192];
        signature(t, sig, sizeof sig);
        set_add(&distinct, sig);
        loom_trace_free(t);
        checked++;
    }
    cr_assert_geq(checked, r.trials);
    cr_assert_gt(distinct.n, 4, "the campaign explored %d schedules", distinct.n);
    set_free(&distinct);
    loom_db_close(db);
    loom_nav_free(nav);
    env_close(&e);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- a pinned campaign's answer (issue 27) ----------------------------------------- */

#include "../ship/replay.h"

/* Pin a non-default loop order (the first SampleLoopOrder hole with a
 * choice) of SpMM on Cora; an 8-trial campaign on the simulator with its
 * re-measurement: the reported best, the best trace and what replay (and
 * so --emit-lib) ships all carry the pin, even when the default is faster,
 * which the result shows for comparison only. */
Test(navigate, a_pinned_campaign_answers_with_the_pins, .timeout = 300)
{
    space_env e;
    const char *args[] = {"A=data/cora_adj.mtx", "F=16"};
    env_open(&e, "workloads/spmm.loom", args, 2, NULL);
    loom_nav *nav = NULL;
    loom_error err;
    cr_assert_eq(loom_nav_new(e.prog, e.space, NULL, 0, &nav, &err), LOOM_OK, "%s", err.msg);
    loom_nav_state stt;
    loom_nav_get_state(nav, &stt);
    int pinned = 0;
    for (int h = 0; h < stt.nholes && !pinned; h++) {
        cr_assert_eq(loom_nav_goto(nav, h, &err), LOOM_OK, "%s", err.msg);
        const loom_nav_choice *menu;
        int m = loom_nav_menu(nav, &menu);
        if (m < 2 || menu[0].value.kind != LOOM_INST_SAMPLE_LOOP_ORDER)
            continue;
        int k = menu[0].is_default ? 1 : 0;
        cr_assert_eq(loom_nav_pick(nav, k, &err), LOOM_OK, "%s", err.msg);
        pinned = 1;
    }
    cr_assert(pinned, "no loop order with a choice in SpMM's space");
    loom_pins pins;
    loom_nav_pins(nav, &pins);
    cr_assert_eq(pins.n, 1);
    char dir[] = "/tmp/loom_nav_pinXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.trials = 8;
    o.batch = 8;
    o.target = "sim:spr-2c";
    o.workload_name = "spmm";
    o.search.population = 32;
    o.search.generations = 2;
    o.search.init_min_unmeasured = 8;
    o.search.threads = 1;
    o.pins = &pins;
    loom_tune_result r;
    cr_assert_eq(loom_tune(e.prog, e.ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.pinned, 1);
    cr_assert(isfinite(r.best_latency_s) && isfinite(r.default_latency_s));
    /* the default is shown (re-measured with the others) but never the answer */
    int def_seen = 0;
    for (int k = 0; k < r.nremeasured; k++)
        def_seen |= r.remeasured[k].is_default;
    cr_assert(def_seen, "the default was not re-measured for comparison");
    int nchosen = 0;
    for (int k = 0; k < r.nremeasured; k++)
        if (r.remeasured[k].chosen) {
            nchosen++;
            cr_assert(r.remeasured[k].eligible && !r.remeasured[k].is_default, "the chosen schedule lacks the pins");
            cr_assert(r.remeasured[k].median_s == r.best_latency_s);
        }
    cr_assert_eq(nchosen, 1);
    if (r.default_latency_s < r.best_latency_s)
        cr_assert(r.default_faster && !r.best_is_default, "the faster unpinned default was returned");
    cr_log_info("pinned best %g s, unpinned default %g s", r.best_latency_s, r.default_latency_s);
    /* the best trace */
    FILE *f = fopen(r.best_trace, "r");
    cr_assert_not_null(f, "%s", r.best_trace);
    char *text = calloc(1, 1 << 20);
    cr_assert_gt(fread(text, 1, (1 << 20) - 1, f), 0);
    fclose(f);
    loom_trace *bt = NULL;
    cr_assert_eq(loom_trace_from_json(text, "best", &bt, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_pins_hold(&pins, bt), "best-spmm.json does not carry the pinned loop order");
    /* what replay ships (--emit-lib lowers this schedule) */
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = NULL;
    loom_ship_best_info info;
    cr_assert_eq(loom_ship_best(dir, e.prog, e.ds, "sim:spr-2c", 0, sch, &t, &info, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(info.pinned, 1);
    cr_assert(loom_pins_hold(&pins, t), "replay ships a schedule without the pinned loop order");
    cr_assert(fabs(info.latency_s - r.best_latency_s) <= 1e-12 * r.best_latency_s, "replay %g s, tune %g s",
              info.latency_s, r.best_latency_s);
    /* every record -- trials and re-measurements -- carries the pins and says so */
    loom_db *db = NULL;
    cr_assert_eq(loom_db_open_readonly(dir, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    for (int i = 0; i < loom_db_count(db); i++) {
        const loom_record *x = loom_db_record(db, i);
        loom_trace *xt = NULL;
        cr_assert_eq(loom_trace_from_json(x->trace_json, "rec", &xt, &err), LOOM_OK, "%s", err.msg);
        cr_assert(loom_pins_hold(&pins, xt), "record %d does not carry the pins", i + 1);
        cr_assert_not_null(x->pins_json, "record %d does not store the campaign's pins", i + 1);
        loom_trace_free(xt);
    }
    loom_db_close(db);
    loom_trace_free(t);
    loom_trace_free(bt);
    free(sch);
    free(text);
    loom_nav_free(nav);
    env_close(&e);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- goto and the witness method --------------------------------------------------- */

/* Deciding holes out of order: from the start, goto any hole, pick any
 * choice, then defaults: always a valid complete schedule. */
Test(navigate, goto_any_hole_then_defaults_is_valid, .timeout = 300)
{
    space_env e;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=8"};
    env_open(&e, "workloads/spmm.loom", args, 2, NULL);
    e.lim = narrow_machine();
    loom_nav *nav = NULL;
    loom_error err;
    cr_assert_eq(loom_nav_new(e.prog, e.space, &e.lim, 0, &nav, &err), LOOM_OK, "%s", err.msg);
    int nh, tried = 0;
    const loom_nav_hole *h0 = loom_nav_holes(nav, &nh);
    int ords[LOOM_NAV_MAX_HOLES];
    for (int k = 0; k < nh; k++)
        ords[k] = h0[k].ordinal;
    cr_assert_eq(loom_nav_goto(nav, 999, &err), LOOM_ERR_INVALID);
    for (int k = 0; k < nh; k++) {
        cr_assert_eq(loom_nav_goto(nav, ords[k], &err), LOOM_OK, "%s", err.msg);
        loom_nav_state st;
        loom_nav_get_state(nav, &st);
        int cur_n;
        const loom_nav_hole *hs = loom_nav_holes(nav, &cur_n);
        cr_assert_eq(hs[st.current].ordinal, ords[k]);
        const loom_nav_choice *menu;
        int n = loom_nav_menu(nav, &menu);
        cr_assert_gt(n, 0);
        for (int c = 0; c < n; c++) {
            cr_assert_eq(loom_nav_goto(nav, ords[k], &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(loom_nav_pick(nav, c, &err), LOOM_OK, "%s", err.msg);
            loom_nav_get_state(nav, &st);
            cr_assert(st.sketch_valid);
            if (!st.complete)
                cr_assert_eq(loom_nav_defaults(nav, &err), LOOM_OK, "%s", err.msg);
            loom_nav_get_state(nav, &st);
            cr_assert(st.complete);
            cr_assert(independently_valid(&e, loom_nav_trace(nav)), "goto ?%d, choice %d: invalid", ords[k] + 1, c);
            tried++;
            while (loom_nav_undo(nav, &err) == LOOM_OK)
                ;
        }
    }
    cr_assert_gt(tried, 10);
    cr_assert_eq(loom_nav_undo(nav, &err), LOOM_ERR_INVALID, "nothing left to undo");
    loom_nav_free(nav);
    env_close(&e);
}

/* The witness method (a navigator told to enumerate at most 10 completions)
 * offers a subset of the exact menu at every state of random walks, and every
 * walk ends at a valid schedule. */
Test(navigate, witness_menus_are_sound, .timeout = 120)
{
    space_env e;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=8"};
    env_open(&e, "workloads/spmm.loom", args, 2, NULL);
    e.lim = narrow_machine();
    loom_nav *wit = NULL, *ex = NULL;
    loom_error err;
    cr_assert_eq(loom_nav_new(e.prog, e.space, &e.lim, 10, &wit, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_nav_new(e.prog, e.space, &e.lim, 0, &ex, &err), LOOM_OK, "%s", err.msg);
    loom_nav_state st;
    loom_nav_get_state(wit, &st);
    cr_assert_str_eq(st.method, "witness");
    cr_assert(!st.size_exact);
    unsigned seed = 7;
    int witness_states = 0;
    for (int walk = 0; walk < 12; walk++) {
        for (int step = 0; step < 64; step++) {
            loom_nav_state sw, se;
            loom_nav_get_state(wit, &sw);
            loom_nav_get_state(ex, &se);
            cr_assert(sw.sketch_valid);
            cr_assert_eq(sw.complete, se.complete);
            if (sw.complete)
                break;
            witness_states += !strcmp(sw.method, "witness");
            const loom_nav_choice *mw, *me;
            int nw = loom_nav_menu(wit, &mw), ne = loom_nav_menu(ex, &me);
            cr_assert_gt(nw, 0);
            for (int a = 0; a < nw; a++) {
                int found = 0;
                for (int b = 0; b < ne && !found; b++)
                    found = loom_nav_value_equal(&mw[a].value, &me[b].value);
                cr_assert(found, "the witness menu offers a choice without a valid completion");
            }
            seed = seed * 1103515245u + 12345u;
            int pick = (int)((seed >> 16) % (unsigned)nw), at = -1;
            for (int b = 0; b < ne && at < 0; b++)
                if (loom_nav_value_equal(&mw[pick].value, &me[b].value))
                    at = b;
            cr_assert_eq(loom_nav_pick(wit, pick, &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(loom_nav_pick(ex, at, &err), LOOM_OK, "%s", err.msg);
        }
        loom_nav_get_state(wit, &st);
        cr_assert(st.complete);
        cr_assert(independently_valid(&e, loom_nav_trace(wit)));
        cr_assert(loom_trace_equal(loom_nav_trace(wit), loom_nav_trace(ex)));
        while (loom_nav_undo(wit, &err) == LOOM_OK)
            ;
        while (loom_nav_undo(ex, &err) == LOOM_OK)
            ;
    }
    cr_assert_gt(witness_states, 5, "the witness method was hardly used");
    loom_nav_free(wit);
    loom_nav_free(ex);
    env_close(&e);
}

/* Issue 27: the loop order menu names its loops -- each entry a distinct
 * permutation of SpMM's i, k, f -- and an entry out of range is refused in
 * the menu's numbers (1..n). */
Test(navigate, menus_name_loops_and_count_from_one)
{
    space_env e;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=8"};
    env_open(&e, "workloads/spmm.loom", args, 2, NULL);
    loom_nav *nav = NULL;
    loom_error err;
    cr_assert_eq(loom_nav_new(e.prog, e.space, NULL, 0, &nav, &err), LOOM_OK, "%s", err.msg);
    const loom_nav_choice *menu;
    int n = loom_nav_menu(nav, &menu);
    cr_assert_geq(n, 2);
    cr_assert_eq(menu[0].value.kind, LOOM_INST_SAMPLE_LOOP_ORDER, "SpMM's first hole is its loop order");
    char seen[8][128];
    for (int k = 0; k < n && k < 8; k++) {
        loom_nav_describe(nav, &menu[k].value, seen[k], sizeof seen[k]);
        int i = 0, kk = 0, f = 0;
        char copy[sizeof seen[0]];
        memcpy(copy, seen[k], sizeof copy);
        cr_assert_eq(copy[0], '[', "%s", seen[k]);
        for (char *tok = strtok(copy, "[], "); tok; tok = strtok(NULL, "[], ")) {
            i += !strcmp(tok, "i");
            kk += !strcmp(tok, "k");
            f += !strcmp(tok, "f");
        }
        cr_assert(i == 1 && kk == 1 && f == 1, "not a permutation of i, k, f: %s", seen[k]);
        for (int q = 0; q < k; q++)
            cr_assert_str_neq(seen[q], seen[k]);
    }
    char ctx[256];
    loom_nav_context(nav, ctx, sizeof ctx);
    cr_assert_not_null(strstr(ctx, "f (8)"), "%s", ctx);
    cr_assert_neq(loom_nav_pick(nav, n, &err), LOOM_OK);
    char want[64];
    snprintf(want, sizeof want, "choice %d out of range 1..%d", n + 1, n);
    cr_assert_not_null(strstr(err.msg, want), "%s", err.msg);
    loom_nav_free(nav);
    env_close(&e);
}
