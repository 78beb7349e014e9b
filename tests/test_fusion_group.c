/* SampleFusionGroup (dsl/schedule/fusion_group.c; issue 16, AutoSparse's fusion
 * groups): which edges are offered, what a decision does to the placements,
 * replay through JSON, and the validator's fusion-group rule. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/schedule/query.h"
#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "fixture.h"

static loom_program *gcn2(loom_dataset **ds)
{
    const char *args[] = {"A=data/cora500_adj.mtx", "X=data/cora500_features.mtx", "F=8", "C=4"};
    return fx_bind("workloads/gcn2.loom", args, 4, 1, ds);
}

static int stage_named(const loom_program *p, const char *name)
{
    for (int s = 0; s < p->nstmts; s++)
        if (!strcmp(p->tensors[p->stmts[s].lhs].name, name))
            return s;
    cr_assert_fail("no statement assigns %s", name);
    return -1;
}

static int block(loom_schedule *s, const char *name)
{
    int b;
    loom_error err;
    cr_assert_eq(loom_get_block(s, name, &b, &err), LOOM_OK, "%s", err.msg);
    return b;
}

/* gcn2: T1 = X W1 is read by Z1 = A T1 through A's column index j (a
 * gather): fusing it would recompute all of T1 per row, so it is not
 * offered; Z1 -> H1 (relu) and H1 -> T2 (H1 W2, row by row) are; T2 -> H2
 * is a gather again. */
Test(fusion_group, gcn2_offers_the_row_local_edges_only)
{
    loom_dataset *ds;
    loom_program *p = gcn2(&ds);
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, p, NULL, &err), LOOM_OK, "%s", err.msg);
    int prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS], nk;
    int n = loom_fusion_edges(s, prod, cons, &nk);
    cr_assert_eq(nk, 4, "four temporaries with a reader");
    cr_assert_eq(n, 2);
    cr_assert_eq(prod[0], stage_named(p, "Z1"));
    cr_assert_eq(cons[0], stage_named(p, "H1"));
    cr_assert_eq(prod[1], stage_named(p, "H1"));
    cr_assert_eq(cons[1], stage_named(p, "T2"));
    char why[256];
    int c;
    cr_assert_eq(loom_fusion_edge_legal(s, stage_named(p, "T1"), &c, why, sizeof why), 0);
    cr_assert_eq(c, stage_named(p, "Z1"));
    cr_assert(strstr(why, "T1 cannot be placed inside Z1"), "%s", why);
    cr_assert_eq(loom_fusion_edge_legal(s, stage_named(p, "H2"), &c, why, sizeof why), -1, "the output has no edge");
    free(s);
    loom_dataset_free(ds);
    loom_program_free(p);
}

/* A program with a max= chain belongs to attention-fusion: nothing offered,
 * nothing constrained. */
Test(fusion_group, attention_is_left_to_attention_fusion)
{
    const char *args[] = {"N=16", "D=4"};
    loom_dataset *ds;
    loom_program *p = fx_bind("workloads/attention.loom", args, 2, 1, &ds);
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, p, NULL, &err), LOOM_OK, "%s", err.msg);
    int prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS], nk = -1;
    cr_assert_eq(loom_fusion_edges(s, prod, cons, &nk), 0);
    cr_assert_eq(nk, 0);
    free(s);
    loom_dataset_free(ds);
    loom_program_free(p);
}

/* A decision fuses exactly its edges: the fused producer gets only places
 * inside its consumer, the others only the root; the trace goes to JSON and
 * replays to the same decision and placements. */
Test(fusion_group, decision_narrows_locations_and_replays)
{
    loom_dataset *ds;
    loom_program *p = gcn2(&ds);
    loom_schedule *s = malloc(sizeof *s), *r = malloc(sizeof *r);
    loom_trace *tr = loom_trace_new();
    loom_error err;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    cr_assert_eq(loom_schedule_init(s, p, rng, &err), LOOM_OK, "%s", err.msg);
    s->recorder = loom_trace_recorder;
    s->recorder_ctx = tr;
    int v, hb = block(s, "H2");
    int64_t mask = 1, used = -1; /* Z1 -> H1 fused, H1 -> T2 not */
    cr_assert_eq(loom_sample_fusion_group(s, hb, &mask, &used, &v, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(used, 1);
    int z1 = stage_named(p, "Z1"), h1 = stage_named(p, "H1"), t1 = stage_named(p, "T1");
    cr_assert_eq(s->stages[z1].fuse, LOOM_FUSE_YES);
    cr_assert_eq(s->stages[h1].fuse, LOOM_FUSE_NO);
    cr_assert_eq(s->stages[t1].fuse, LOOM_FUSE_NO, "a temporary whose edge is not offered stays at the root");
    int64_t cand[2 + LOOM_MAX_LOOPS];
    int nc = loom_compute_location_candidates(s, h1, cand);
    cr_assert_eq(nc, 1);
    cr_assert_eq(cand[0], LOOM_AT_ROOT);
    nc = loom_compute_location_candidates(s, z1, cand);
    cr_assert_gt(nc, 0);
    for (int k = 0; k < nc; k++)
        cr_assert_neq(cand[k], LOOM_AT_ROOT, "a fused producer is offered only places inside its consumer");
    /* draw Z1's location: inside H1 */
    for (int k = 0; k < 8; k++) {
        int64_t d;
        loom_schedule *c = malloc(sizeof *c);
        loom_schedule_copy(c, s);
        c->recorder = NULL;
        cr_assert_eq(loom_sample_compute_location(c, block(c, "Z1"), NULL, &d, &v, &err), LOOM_OK, "%s", err.msg);
        cr_assert(c->stages[z1].compute_at == LOOM_AT_LOOP && c->stages[z1].at_stage == h1);
        free(c);
    }
    cr_assert_eq(loom_sample_compute_location(s, block(s, "Z1"), NULL, NULL, &v, &err), LOOM_OK, "%s", err.msg);
    char *json = NULL;
    cr_assert_eq(loom_trace_to_json(tr, p, &json), LOOM_OK);
    cr_assert(strstr(json, "\"SampleFusionGroup\""), "%s", json);
    loom_trace *back = NULL;
    cr_assert_eq(loom_trace_from_json(json, "test", &back, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_init(r, p, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_trace_replay(back, r, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r->stages[z1].fuse, LOOM_FUSE_YES);
    cr_assert_eq(r->stages[z1].compute_at, s->stages[z1].compute_at);
    cr_assert_eq(r->stages[z1].at_iter, s->stages[z1].at_iter);
    cr_assert_eq(loom_schedule_hash(r), loom_schedule_hash(s));
    free(json);
    loom_trace_free(back);
    loom_trace_free(tr);
    gsl_rng_free(rng);
    free(s);
    free(r);
    loom_dataset_free(ds);
    loom_program_free(p);
}

static void expect_rule(const loom_schedule *s, const char *needle)
{
    loom_violation v;
    loom_limits lim = {.vector_lanes = 4, .max_vector_factor = 16, .cores = 2, .max_workspace_bytes = 65536};
    cr_assert_neq(loom_validate(s, &lim, &v, NULL), LOOM_OK, "accepted");
    cr_assert_str_eq(v.rule, "fusion-group", "%s", v.msg);
    cr_assert(strstr(v.msg, needle), "%s", v.msg);
}

/* Breaking the group either way is the validator's fusion-group rule. */
Test(fusion_group, validator_rule_fusion_group)
{
    loom_dataset *ds;
    loom_program *p = gcn2(&ds);
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    int v, loops[LOOM_MAX_LOOPS], n;
    /* fused but left at the root */
    cr_assert_eq(loom_schedule_init(s, p, NULL, &err), LOOM_OK, "%s", err.msg);
    int64_t mask = 1;
    cr_assert_eq(loom_sample_fusion_group(s, block(s, "H2"), &mask, NULL, &v, &err), LOOM_OK, "%s", err.msg);
    expect_rule(s, "fuses Z1 into H1, but Z1 is computed at the root");
    /* not fused, but placed inside its consumer */
    cr_assert_eq(loom_schedule_init(s, p, NULL, &err), LOOM_OK, "%s", err.msg);
    mask = 0;
    cr_assert_eq(loom_sample_fusion_group(s, block(s, "H2"), &mask, NULL, &v, &err), LOOM_OK, "%s", err.msg);
    int hb = block(s, "H1");
    cr_assert_eq(loom_get_loops(s, hb, loops, &n, &err), LOOM_OK, "%s", err.msg);
    int zb = block(s, "Z1"), zl[LOOM_MAX_LOOPS], zn;
    cr_assert_eq(loom_get_loops(s, zb, zl, &zn, &err), LOOM_OK, "%s", err.msg);
    int order[] = {zl[0], zl[2], zl[1]}; /* i, f, j: the reduction innermost */
    cr_assert_eq(loom_reorder(s, order, 3, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_compute_at(s, zb, loops[0], &err), LOOM_OK, "%s", err.msg);
    expect_rule(s, "keeps Z1 in a group of its own");
    /* the same placement under the group that fuses it is valid */
    cr_assert_eq(loom_schedule_init(s, p, NULL, &err), LOOM_OK, "%s", err.msg);
    mask = 1;
    cr_assert_eq(loom_sample_fusion_group(s, block(s, "H2"), &mask, NULL, &v, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(s, block(s, "H1"), loops, &n, &err), LOOM_OK, "%s", err.msg);
    zb = block(s, "Z1");
    cr_assert_eq(loom_get_loops(s, zb, zl, &zn, &err), LOOM_OK, "%s", err.msg);
    int order2[] = {zl[0], zl[2], zl[1]};
    cr_assert_eq(loom_reorder(s, order2, 3, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_compute_at(s, zb, loops[0], &err), LOOM_OK, "%s", err.msg);
    loom_violation vv;
    loom_limits lim = {.vector_lanes = 4, .max_vector_factor = 16, .cores = 2, .max_workspace_bytes = 65536};
    cr_assert_eq(loom_validate(s, &lim, &vv, NULL), LOOM_OK, "%s", vv.msg);
    free(s);
    loom_dataset_free(ds);
    loom_program_free(p);
}

/* fuse-producers samples a fused block's loop order (SampleLoopOrder, Scorch's
 * order as the prior) instead of forcing its reductions innermost: placed at
 * H1's row loop, Z1's row Z1(i, :) += A(i, j) T1(j, :) may keep the nonzeros
 * of A's row outside the vectorizable feature loop (the lowering resets the
 * row there), and the reductions-innermost order stays reachable.  Both
 * orders are drawn, and the drawn schedules that place Z1 so validate. */
Test(fusion_group, fuse_producers_samples_a_fused_blocks_order)
{
    loom_dataset *ds;
    loom_program *p = gcn2(&ds);
    loom_registry *reg = loom_registry_new();
    loom_space *sp = NULL;
    loom_error err;
    cr_assert_not_null(reg);
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &sp, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *s = malloc(sizeof *s);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    int z1 = stage_named(p, "Z1"), h1 = stage_named(p, "H1"), outside = 0, inside = 0, valid_outside = 0;
    for (int k = 0; k < 400; k++) {
        cr_assert_eq(loom_schedule_init(s, p, rng, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_space_apply(sp, s, &err), LOOM_OK, "%s", err.msg);
        const loom_stage *Z = &s->stages[z1], *H = &s->stages[h1];
        if (Z->fuse != LOOM_FUSE_YES || Z->compute_at != LOOM_AT_LOOP || Z->at_stage != h1)
            continue;
        int L = loom_loop_of_iter(H, Z->at_iter);
        if (loom_iter_var(H, H->loops[L].iter) != p->stmts[h1].lhs_idx[0])
            continue; /* at H1's feature loop: Z1's only loop left is j */
        int first_red = Z->nloops, last_free = -1;
        for (int q = 0; q < Z->nloops; q++) {
            if (loom_iter_reduces(s, z1, Z->loops[q].iter))
                first_red = first_red < q ? first_red : q;
            else
                last_free = q;
        }
        if (first_red < last_free) {
            outside++;
            loom_violation v;
            valid_outside += loom_validate(s, fx_cpu_limits(), &v, NULL) == LOOM_OK;
        } else
            inside++;
    }
    cr_assert_gt(outside, 0, "Z1 placed at H1's row loop never kept A's nonzeros outside the feature loop");
    cr_assert_gt(inside, 0, "the reductions-innermost order was never drawn");
    cr_assert_gt(valid_outside, 0, "no draw with A's nonzeros outside the feature loop validated");
    gsl_rng_free(rng);
    free(s);
    loom_space_free(sp);
    loom_registry_free(reg);
    loom_dataset_free(ds);
    loom_program_free(p);
}

/* A block reducing through memory is recomputed where it is placed, and a
 * parallel loop further out must still give each thread its own slice:
 * gcn2 fully fused, Z1 at H1's row loop, H1 at T2's row loop.  With T2's
 * row loop parallel and whole, the row is fixed down the chain (H1's i,
 * then Z1's); split, with the parallel outer tile as H1's place, the row is
 * bound only in the inner tile, so every thread would reset all of Z1: the
 * validator's compute-at-race, and loom_placed_slices_split names T2's
 * loop.  With Z1's reductions innermost (a scalar accumulator) the rule
 * does not apply. */
Test(fusion_group, a_reset_slice_must_be_split_by_every_parallel_loop_around)
{
    loom_dataset *ds;
    loom_program *p = gcn2(&ds);
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    int z1 = stage_named(p, "Z1"), t2 = stage_named(p, "T2");
    for (int split = 0; split < 3; split++) {
        int v, l[LOOM_MAX_LOOPS], n, h[LOOM_MAX_LOOPS], z[LOOM_MAX_LOOPS];
        cr_assert_eq(loom_schedule_init(s, p, NULL, &err), LOOM_OK, "%s", err.msg);
        int64_t mask = 3; /* Z1 -> H1 and H1 -> T2 fused */
        cr_assert_eq(loom_sample_fusion_group(s, block(s, "H2"), &mask, NULL, &v, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_loops(s, block(s, "T2"), l, &n, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_iter_var(&s->stages[t2], s->rvs[l[0]].iter), p->stmts[t2].lhs_idx[0], "T2's row loop first");
        int row = l[0];
        if (split) {
            int64_t fac[2] = {0, 4};
            int t[2];
            cr_assert_eq(loom_split(s, l[0], 2, NULL, fac, t, &err), LOOM_OK, "%s", err.msg);
            row = t[0];
        }
        cr_assert_eq(loom_parallel(s, row, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_compute_at(s, block(s, "H1"), row, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_loops(s, block(s, "H1"), h, &n, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_loops(s, block(s, "Z1"), z, &n, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(n, 3);
        cr_assert(loom_iter_reduces(s, z1, s->rvs[z[1]].iter), "Z1's order i, j, f: the nonzeros outside f");
        if (split == 2) {
            int o[3] = {z[0], z[2], z[1]}; /* i, f, j */
            cr_assert_eq(loom_reorder(s, o, 3, &err), LOOM_OK, "%s", err.msg);
        }
        cr_assert_eq(loom_compute_at(s, block(s, "Z1"), h[0], &err), LOOM_OK, "%s", err.msg);
        loom_violation vv;
        int a = -1, q = -1, ok = loom_placed_slices_split(s, z1, &a, &q);
        loom_status st = loom_validate(s, fx_cpu_limits(), &vv, NULL);
        if (split == 1) {
            cr_assert_eq(ok, 0);
            cr_assert_eq(a, t2, "the loop that does not split Z1's slices is T2's");
            cr_assert_eq(q, 0);
            cr_assert_eq(st, LOOM_ERR_SEMANTIC);
            cr_assert_str_eq(vv.rule, "compute-at-race", "%s", vv.msg);
        } else {
            cr_assert_eq(ok, split == 0, "split %d", split);
            cr_assert_eq(st, LOOM_OK, "split %d: %s", split, vv.msg);
        }
    }
    free(s);
    loom_dataset_free(ds);
    loom_program_free(p);
}
