/* The reverse-compute-location module (modules/reverse_location.c, issue
 * 12): it draws ReverseComputeAt of an elementwise consumer into its
 * producer's loop on the GCN models, the draws it makes validate and
 * compute the right values, a mutated decision moves the block on replay,
 * and the validator rules it can hit break (reverse-coverage: a tile of the
 * producer, a fused or split consumer loop its location fixes; nested-
 * parallel: a parallel consumer loop the location does not fix;
 * fusion-group: an unfused block computed inside its consumer). */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../modules/module.h"
#include "../runtime/lower/lower.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "fixture.h"

/* The stage placed by ReverseComputeAt (not a rolled one), or -1. */
static int reverse_placed(const loom_schedule *sch, int from)
{
    for (int s = from; s < sch->nstages; s++)
        if (sch->stages[s].compute_at == LOOM_AT_LOOP && sch->stages[s].at_after && !sch->stages[s].rolling)
            return s;
    return -1;
}

static const char *name_of(const loom_schedule *sch, int s) { return sch->prog->tensors[sch->prog->stmts[s].lhs].name; }

/* Draw the CPU default space `draws` times on a GCN model; count the draws
 * with a consumer placed by ReverseComputeAt, per consumer, and check the
 * first `run` valid ones numerically. */
static void count_draws(const char *workload, int draws, int run, int *placed_valid, int *by_stage)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=data/cora500_adj.mtx", "X=data/cora500_features.mtx", "F=8", "C=4"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind(workload, args, 4, 5, &ds);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = *loom_space_limits(space);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    loom_schedule *sch = malloc(sizeof *sch);
    *placed_valid = 0;
    for (int d = 0; d < draws; d++) {
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        int any = 0;
        for (int s = reverse_placed(sch, 0); s >= 0; s = reverse_placed(sch, s + 1)) {
            by_stage[s]++;
            any = 1;
            /* the consumer is elementwise and its producer comes before it */
            cr_assert_lt(sch->stages[s].at_stage, s);
            cr_assert_eq(prog->stmts[s].nvars, prog->stmts[s].nfree, "%s reduces", name_of(sch, s));
        }
        loom_violation v;
        if (!any || loom_validate(sch, &lim, &v, NULL) != LOOM_OK)
            continue;
        if ((*placed_valid)++ < run) {
            char what[96];
            snprintf(what, sizeof what, "%s draw %d (epilogue fused)", workload, d);
            fx_run_checked(sch, ds, what);
        }
    }
    free(sch);
    gsl_rng_free(rng);
    loom_space_free(space);
    loom_registry_free(reg);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

Test(reverse_location, the_module_draws_epilogues_on_gcn_models_and_they_are_correct, .timeout = 600)
{
    struct {
        const char *w, *consumer, *producer;
    } want[] = {{"workloads/gcn2.loom", "H1", "Z1"},
                {"workloads/gcn2_norm.loom", "H1", "Z1"},
                {"workloads/gcn2_norm.loom", "U1", "T1"}};
    for (int k = 0; k < 3; k++) {
        int by_stage[LOOM_MAX_STMTS] = {0}, valid = 0;
        count_draws(want[k].w, 200, 3, &valid, by_stage);
        loom_program *prog = NULL;
        loom_error err;
        cr_assert_eq(loom_program_parse_file(want[k].w, &prog, &err), LOOM_OK, "%s", err.msg);
        int c = -1;
        for (int s = 0; s < prog->nstmts; s++)
            if (!strcmp(prog->tensors[prog->stmts[s].lhs].name, want[k].consumer))
                c = s;
        cr_assert_geq(c, 0);
        printf("reverse_location: %s: %s placed in %s's loop in %d of 200 draws (%d valid draws with an epilogue)\n",
               want[k].w, want[k].consumer, want[k].producer, by_stage[c], valid);
        for (int s = 0; s < prog->nstmts; s++)
            if (by_stage[s] && s != c)
                printf("reverse_location: %s: also %s placed in %d draws\n", want[k].w,
                       prog->tensors[prog->stmts[s].lhs].name, by_stage[s]);
        cr_assert_gt(by_stage[c], 0, "%s: the module never placed %s in %s", want[k].w, want[k].consumer,
                     want[k].producer);
        cr_assert_gt(valid, 0, "%s: no valid draw with an epilogue", want[k].w);
        loom_program_free(prog);
    }
}

/* A recorded draw with the epilogue on replays with its decision flipped to
 * 0 into the same schedule with the consumer at the root, and back. */
Test(reverse_location, a_mutated_decision_moves_the_block_on_replay, .timeout = 120)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=data/cora500_adj.mtx", "X=data/cora500_features.mtx", "F=8", "C=4"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/gcn2_norm.loom", args, 4, 5, &ds);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    loom_schedule *sch = malloc(sizeof *sch), *rep = malloc(sizeof *rep);
    int done = 0;
    for (int d = 0; d < 200 && !done; d++) {
        loom_trace *tr = loom_trace_new();
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK, "%s", err.msg);
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = tr;
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        int s = reverse_placed(sch, 0);
        if (s < 0) {
            loom_trace_free(tr);
            continue;
        }
        /* the enabled ReverseComputeAt of s: its enable input's sampler */
        int k_en = -1;
        for (int k = 0; k < tr->ninsts; k++) {
            const loom_inst *I = &tr->insts[k];
            if (I->kind != LOOM_INST_REVERSE_COMPUTE_AT || I->ninputs != 3)
                continue;
            for (int j = 0; j < k; j++)
                if (tr->insts[j].kind == LOOM_INST_SAMPLE_CATEGORICAL && tr->insts[j].noutputs == 1 &&
                    tr->insts[j].outputs[0] == I->inputs[2] && tr->insts[j].decision[0] == 1)
                    k_en = j;
        }
        cr_assert_geq(k_en, 0, "no enabled ReverseComputeAt recorded for %s", name_of(sch, s));
        /* switch every enabled placement of the trace off: s goes to the root */
        for (int k = 0; k < tr->ninsts; k++) {
            loom_inst *I = &tr->insts[k];
            if (I->kind != LOOM_INST_REVERSE_COMPUTE_AT || I->ninputs != 3)
                continue;
            for (int j = 0; j < k; j++)
                if (tr->insts[j].kind == LOOM_INST_SAMPLE_CATEGORICAL && tr->insts[j].outputs[0] == I->inputs[2])
                    tr->insts[j].decision[0] = 0;
        }
        cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_trace_replay(tr, rep, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(rep->stages[s].compute_at, LOOM_AT_ROOT, "%s still placed after the flip", name_of(rep, s));
        cr_assert_eq(reverse_placed(rep, 0), -1);
        tr->insts[k_en].decision[0] = 1;
        cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_trace_replay(tr, rep, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(rep->stages[s].compute_at, LOOM_AT_LOOP);
        cr_assert(rep->stages[s].at_after);
        loom_trace_free(tr);
        done = 1;
    }
    cr_assert(done, "no draw of gcn2_norm placed an epilogue");
    free(sch);
    free(rep);
    gsl_rng_free(rng);
    loom_space_free(space);
    loom_registry_free(reg);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* ---- the rules the module can hit, broken by hand on SpMM + relu ---------- */

typedef struct rfx {
    loom_program *prog;
    loom_dataset *ds;
    loom_schedule *sch;
} rfx;

static rfx rsetup(void)
{
    rfx r;
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    r.prog = fx_bind("tests/data/spmm_relu.loom", args, 2, 3, &r.ds);
    r.sch = malloc(sizeof *r.sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(r.sch, r.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    return r;
}

static void rteardown(rfx *r)
{
    free(r->sch);
    loom_program_free(r->prog);
    loom_dataset_free(r->ds);
}

static int rloops(rfx *r, const char *block, int *out)
{
    loom_error err;
    int b, n;
    cr_assert_eq(loom_get_block(r->sch, block, &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(r->sch, b, out, &n, &err), LOOM_OK, "%s", err.msg);
    return n;
}

static void place_r(rfx *r, int loop)
{
    int l[LOOM_MAX_LOOPS], b;
    loom_error err;
    rloops(r, "C", l);
    cr_assert_eq(loom_get_block(r->sch, "R", &b, &err), LOOM_OK);
    cr_assert_eq(loom_reverse_compute_at(r->sch, b, l[loop], &err), LOOM_OK, "%s", err.msg);
}

static void rule_is(rfx *r, const char *rule)
{
    loom_violation v;
    if (!rule) {
        cr_assert_eq(loom_validate(r->sch, fx_cpu_limits(), &v, NULL), LOOM_OK, "%s", v.msg);
        return;
    }
    cr_assert_eq(loom_validate(r->sch, fx_cpu_limits(), &v, NULL), LOOM_ERR_SEMANTIC, "expected %s", rule);
    cr_assert_str_eq(v.rule, rule, "%s", v.msg);
}

/* R's row loop parallel (as parallel-vectorize-unroll leaves it before the
 * module runs): a loop its location fixes is not emitted, so it is valid
 * and correct; R's f loop parallel instead is nested-parallel. */
Test(reverse_location, a_parallel_consumer_loop_fixed_by_the_location_is_fine)
{
    rfx r = rsetup();
    int lc[LOOM_MAX_LOOPS], lr[LOOM_MAX_LOOPS];
    loom_error err;
    rloops(&r, "C", lc);
    cr_assert_eq(loom_parallel(r.sch, lc[0], &err), LOOM_OK);
    rloops(&r, "R", lr);
    cr_assert_eq(loom_parallel(r.sch, lr[0], &err), LOOM_OK);
    cr_assert_eq(loom_vectorize(r.sch, lr[1], &err), LOOM_OK);
    place_r(&r, 0);
    rule_is(&r, NULL);
    fx_run_checked(r.sch, r.ds, "R (parallel i, vectorized f) at the end of C's parallel row");
    rteardown(&r);

    r = rsetup();
    rloops(&r, "C", lc);
    cr_assert_eq(loom_parallel(r.sch, lc[0], &err), LOOM_OK);
    rloops(&r, "R", lr);
    cr_assert_eq(loom_parallel(r.sch, lr[1], &err), LOOM_OK);
    place_r(&r, 0);
    rule_is(&r, "nested-parallel");
    rteardown(&r);
}

/* R's loops fused (i, f) or its row loop split: the location fixes i, the
 * lowering binds it once and cannot iterate a part of a fused or split
 * loop -- reverse-coverage (before this rule the fused case failed in the
 * lowering, compute-at-fused-loop, after passing the validator). */
Test(reverse_location, a_fused_or_split_consumer_loop_the_location_fixes_breaks_reverse_coverage)
{
    rfx r = rsetup();
    int lr[LOOM_MAX_LOOPS], out;
    loom_error err;
    rloops(&r, "R", lr);
    cr_assert_eq(loom_fuse(r.sch, lr, 2, &out, &err), LOOM_OK, "%s", err.msg);
    place_r(&r, 0);
    rule_is(&r, "reverse-coverage");
    rteardown(&r);

    r = rsetup();
    int parts[2];
    rloops(&r, "R", lr);
    cr_assert_eq(loom_split(r.sch, lr[0], 2, NULL, (int64_t[]){-1, 4}, parts, &err), LOOM_OK, "%s", err.msg);
    place_r(&r, 0);
    rule_is(&r, "reverse-coverage");
    rteardown(&r);
}

/* A tile loop of C's split f (f.0 outside C's reduction is impossible in
 * C's order; reorder f's outer tile outermost): at f.0 only a tile of f is
 * complete, and the lowering would make R iterate all of f --
 * reverse-coverage, the "whole-index coverage" the module relies on. */
Test(reverse_location, a_tile_of_the_producer_breaks_reverse_coverage)
{
    rfx r = rsetup();
    int l[LOOM_MAX_LOOPS], parts[2];
    loom_error err;
    rloops(&r, "C", l); /* i, k, f */
    cr_assert_eq(loom_split(r.sch, l[2], 2, NULL, (int64_t[]){2, 8}, parts, &err), LOOM_OK, "%s", err.msg);
    int n = rloops(&r, "C", l); /* i, k, f.0, f.1 */
    cr_assert_eq(n, 4);
    int order[4] = {l[0], l[2], l[1], l[3]}; /* i, f.0, k, f.1 */
    cr_assert_eq(loom_reorder(r.sch, order, 4, &err), LOOM_OK, "%s", err.msg);
    place_r(&r, 1); /* f.0 */
    rule_is(&r, "reverse-coverage");
    rteardown(&r);
}

/* The fusion-group rule lets an unfused block be an epilogue of its
 * producer, and still refuses it inside its consumer (gcn2: H1 with its
 * edge H1 -> T2 unfused). */
Test(reverse_location, fusion_group_allows_an_epilogue_of_an_unfused_block)
{
    const char *args[] = {"A=data/cora500_adj.mtx", "X=data/cora500_features.mtx", "F=8", "C=4"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/gcn2.loom", args, 4, 5, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, bz, v, lz[LOOM_MAX_LOOPS], lt[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "H2", &b, &err), LOOM_OK);
    /* no edge fused */
    cr_assert_eq(loom_sample_fusion_group(sch, b, (int64_t[]){0}, NULL, &v, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "H1", &b, &err), LOOM_OK);
    cr_assert_eq(loom_get_block(sch, "Z1", &bz, &err), LOOM_OK);
    cr_assert_eq(loom_get_loops(sch, bz, lz, &n, &err), LOOM_OK);
    cr_assert_eq(loom_reverse_compute_at(sch, b, lz[0], &err), LOOM_OK, "%s", err.msg);
    loom_violation vio;
    cr_assert_eq(loom_validate(sch, fx_cpu_limits(), &vio, NULL), LOOM_OK, "%s", vio.msg);
    fx_run_checked(sch, ds, "gcn2, H1 at the end of Z1's row");
    int bt;
    cr_assert_eq(loom_get_block(sch, "T2", &bt, &err), LOOM_OK);
    cr_assert_eq(loom_get_loops(sch, bt, lt, &n, &err), LOOM_OK);
    cr_assert_eq(loom_compute_at(sch, b, lt[0], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_validate(sch, fx_cpu_limits(), &vio, NULL), LOOM_ERR_SEMANTIC);
    cr_assert_str_eq(vio.rule, "fusion-group", "%s", vio.msg);
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}
