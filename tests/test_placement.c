/* Placement primitives (dsl/schedule/placement.c): compute-at and
 * reverse-compute-at, their rules in the validator, lowered, compiled, run
 * and checked against the reference. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule_fixture.h"

/* Reorder a block's loops: free (left-hand side) loops first, in their
 * current order, then the reduced ones. */
static void reductions_innermost(fixture *fx, const char *block)
{
    int l[LOOM_MAX_LOOPS], o[LOOM_MAX_LOOPS], k = 0;
    loom_error err;
    int n = loops(fx, block, l);
    for (int pass = 0; pass < 2; pass++)
        for (int q = 0; q < n; q++) {
            const loom_rv *r = &fx->sch.rvs[l[q]];
            int var = fx->sch.stages[r->stage].iters[r->iter].var;
            if (fx->prog->vars[var].reduced == pass)
                o[k++] = l[q];
        }
    cr_assert_eq(loom_reorder(&fx->sch, o, n, &err), LOOM_OK, "%s", err.msg);
}

static void place(fixture *fx, const char *producer, const char *consumer, int loop, loom_status want)
{
    loom_error err;
    int b, l[LOOM_MAX_LOOPS];
    loops(fx, consumer, l);
    cr_assert_eq(loom_get_block(&fx->sch, producer, &b, &err), LOOM_OK);
    cr_assert_eq(loom_compute_at(&fx->sch, b, l[loop], &err), want, "%s at %s: %s", producer, consumer, err.msg);
}

/* Row-wise fused attention's placements: S, m, P and l at O's first loop. */
static void softmax_at_rows(fixture *fx)
{
    place(fx, "S", "O", 0, LOOM_OK);
    place(fx, "m", "O", 0, LOOM_OK);
    place(fx, "P", "O", 0, LOOM_OK);
    place(fx, "l", "O", 0, LOOM_OK);
}

/* Row-wise fused attention: every stage computed inside O's row loop, which
 * is parallel (each row's slices are its own). */
Test(schedule, compute_at_fuses_attention_rows)
{
    const char *w[] = {"workloads/attention.loom", "workloads/attention_causal.loom",
                       "workloads/sparse_attention.loom"};
    const char *d[] = {NULL, NULL, "A=data/cora_adj.mtx"};
    const char *p[] = {"N=64", "N=64", "D=16"};
    for (int k = 0; k < 3; k++) {
        fixture *fx = setup(w[k], d[k], p[k]);
        reductions_innermost(fx, "S"); /* i, j, d: the dot product innermost */
        const char *producers[] = {"S", "m", "P", "l"};
        for (int q = 0; q < 4; q++)
            place(fx, producers[q], "O", 0, LOOM_OK);
        int l[LOOM_MAX_LOOPS];
        loom_error err;
        loops(fx, "O", l);
        cr_assert_eq(loom_parallel(&fx->sch, l[0], &err), LOOM_OK);
        expect_valid(fx);
        char *src = source(fx);
        /* one parallel loop: every stage is inside it */
        char *par = strstr(src, "#pragma omp parallel for");
        cr_assert_not_null(par, "%s", src);
        cr_assert_null(strstr(par + 1, "#pragma omp parallel for"), "a single parallel region:\n%s", src);
        cr_assert(strstr(par, "computed here") != NULL, "producers inside the row loop:\n%s", src);
        free(src);
        expect_correct(fx, w[k]);
        teardown(fx);
    }
}

static fixture *setup_gcn(void)
{
    fixture *fx = calloc(1, sizeof *fx);
    loom_error err;
    cr_assert_eq(loom_program_parse_file("workloads/gcn.loom", &fx->prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec spec[2] = {{"A", "data/cora_adj.mtx"}, {"X", "data/cora_features.mtx"}};
    loom_param_spec par = {"F", 8};
    cr_assert_eq(loom_dataset_load(fx->prog, spec, 2, &par, 1, 3, &fx->ds, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_reference_run(fx->ds, &fx->ref, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_naive(&fx->sch, fx->prog, 1, &err), LOOM_OK, "%s", err.msg);
    return fx;
}

/* GCN: T = X W computed per edge inside H's neighbour loop (recomputed, but
 * never materialised ahead); with H's row loop parallel that is a race. */
Test(schedule, compute_at_gcn_per_edge_and_race)
{
    fixture *fx = setup_gcn();
    reductions_innermost(fx, "T");   /* T: i, g, f -> i, f, g */
    place(fx, "T", "H", 1, LOOM_OK); /* H: i, j, f -> at j */
    expect_valid(fx);
    expect_correct(fx, "gcn T at H.j");
    int l[LOOM_MAX_LOOPS];
    loom_error err;
    loops(fx, "H", l);
    cr_assert_eq(loom_parallel(&fx->sch, l[0], &err), LOOM_OK);
    expect_rule(fx, "compute-at-race");
    teardown(fx);
}

Test(schedule, compute_at_rules)
{
    /* l stays at the root but reads P, which is computed one row at a time */
    fixture *fx = setup("workloads/attention.loom", NULL, "N=16");
    reductions_innermost(fx, "S");
    place(fx, "S", "O", 0, LOOM_OK);
    place(fx, "m", "O", 0, LOOM_OK);
    place(fx, "P", "O", 0, LOOM_OK);
    expect_rule(fx, "producer-coverage");
    /* placing l there too fixes it */
    place(fx, "l", "O", 0, LOOM_OK);
    expect_valid(fx);
    /* splitting O's row loop keeps the placed blocks inside it (they follow
     * the inner tile, which binds the same rows), as TVM's compute_at does */
    int l[LOOM_MAX_LOOPS], t[2];
    loom_error err;
    loops(fx, "O", l);
    int64_t fac[2] = {0, 4};
    cr_assert_eq(loom_split(&fx->sch, l[0], 2, NULL, fac, t, &err), LOOM_OK);
    cr_assert_eq(fx->sch.stages[0].at_iter, fx->sch.rvs[t[1]].iter, "S follows the inner row tile");
    expect_valid(fx);
    expect_correct(fx, "fused rows after splitting the row loop");
    teardown(fx);

    /* inlining the block a location belongs to loses the location */
    fx = setup("workloads/attention.loom", NULL, "N=16");
    reductions_innermost(fx, "m");
    place(fx, "m", "P", 0, LOOM_OK);
    int bp;
    cr_assert_eq(loom_get_block(&fx->sch, "P", &bp, &err), LOOM_OK);
    cr_assert_eq(loom_compute_inline(&fx->sch, bp, &err), LOOM_OK, "%s", err.msg);
    expect_rule(fx, "compute-at-lost");
    teardown(fx);

    /* a dense producer that accumulates through memory (order i, d, j: d
     * outside j) has its slice, S's row, reset where it is placed */
    fx = setup("workloads/attention.loom", NULL, "N=16");
    loops(fx, "S", l); /* i, d, j */
    softmax_at_rows(fx);
    const loom_stage *S = &fx->sch.stages[0];
    cr_assert(fx->prog->vars[S->iters[S->loops[1].iter].var].reduced, "S's default order reduces d outside j");
    expect_valid(fx);
    char *src = source(fx);
    const char *at = strstr(src, "(computed here, for this iteration)");
    cr_assert(at && strstr(at, "for (int64_t z_S_j = 0; z_S_j < S_d1; z_S_j++)") != NULL,
              "S's row reset in O's row loop:\n%s", src);
    free(src);
    expect_correct(fx, "S's rows reset and accumulated at O's row loop");
    /* O's row loop parallel: each thread resets and accumulates its own rows */
    loops(fx, "O", l);
    cr_assert_eq(loom_parallel(&fx->sch, l[0], &err), LOOM_OK, "%s", err.msg);
    expect_valid(fx);
    expect_correct(fx, "S's rows reset and accumulated at O's parallel row loop");
    teardown(fx);

    /* placed at the outer tile of a parallel row loop: the lowering binds i
     * only in the inner tile, so S's slice there is all of S, and every
     * thread would reset and add into all of it (a race) */
    fx = setup("workloads/attention.loom", NULL, "N=16");
    loops(fx, "O", l);
    cr_assert_eq(loom_split(&fx->sch, l[0], 2, NULL, fac, t, &err), LOOM_OK);
    cr_assert_eq(loom_parallel(&fx->sch, t[0], &err), LOOM_OK, "%s", err.msg);
    softmax_at_rows(fx);
    expect_rule(fx, "compute-at-race");
    teardown(fx);

    /* a sparse producer has no dense slice to reset: its reductions stay innermost */
    fx = setup("workloads/sparse_attention.loom", "A=data/cora500_adj.mtx", "D=8");
    int n = loops(fx, "S", l); /* i, j, d */
    cr_assert_eq(n, 3);
    int o[3] = {l[0], l[2], l[1]};
    cr_assert_eq(loom_reorder(&fx->sch, o, 3, &err), LOOM_OK, "%s", err.msg);
    softmax_at_rows(fx);
    expect_rule(fx, "compute-at-accumulates");
    teardown(fx);

    /* a producer cannot go into an earlier block */
    fx = setup("workloads/attention.loom", NULL, "N=16");
    place(fx, "P", "S", 0, LOOM_ERR_SEMANTIC);
    teardown(fx);
}

Test(schedule, compute_at_sparse_index_is_refused_by_lowering)
{
    /* S(i, j) reads A(i, j) compressed at j: placing S at O's j loop would
     * need a search in A's row for the given j */
    fixture *fx = setup("workloads/sparse_attention.loom", "A=data/cora_adj.mtx", "D=8");
    reductions_innermost(fx, "S");
    const char *producers[] = {"m", "l"};
    for (int q = 0; q < 2; q++)
        place(fx, producers[q], "O", 0, LOOM_OK);
    place(fx, "S", "O", 1, LOOM_OK);
    place(fx, "P", "O", 1, LOOM_OK);
    char *src = NULL;
    loom_error err;
    cr_assert_neq(loom_pipeline_schedule_source(&fx->sch, &src, &err), LOOM_OK);
    cr_assert(strstr(err.msg, "compute-at-") != NULL || strstr(err.msg, "coverage") != NULL, "%s", err.msg);
    free(src);
    teardown(fx);
}

/* An inlined reader reads where its own readers are: with P inlined, S's
 * slice still maps to O's rows (no race), and a reader of P left at the
 * root is a coverage violation. */
Test(schedule, compute_at_looks_through_inlined_readers)
{
    fixture *fx = setup("workloads/attention.loom", NULL, "N=32");
    reductions_innermost(fx, "S");
    const char *producers[] = {"S", "m", "l"};
    for (int q = 0; q < 3; q++)
        place(fx, producers[q], "O", 0, LOOM_OK);
    loom_error err;
    int b, l[LOOM_MAX_LOOPS];
    cr_assert_eq(loom_get_block(&fx->sch, "P", &b, &err), LOOM_OK);
    cr_assert_eq(loom_compute_inline(&fx->sch, b, &err), LOOM_OK, "%s", err.msg);
    loops(fx, "O", l);
    cr_assert_eq(loom_parallel(&fx->sch, l[0], &err), LOOM_OK);
    expect_valid(fx);
    expect_correct(fx, "rows fused, P inlined, parallel rows");
    teardown(fx);

    fx = setup("workloads/attention.loom", NULL, "N=32");
    reductions_innermost(fx, "S");
    place(fx, "S", "O", 0, LOOM_OK);
    place(fx, "m", "O", 0, LOOM_OK);
    cr_assert_eq(loom_get_block(&fx->sch, "P", &b, &err), LOOM_OK);
    cr_assert_eq(loom_compute_inline(&fx->sch, b, &err), LOOM_OK, "%s", err.msg);
    expect_rule(fx, "producer-coverage"); /* l, at the root, reads S through P */
    teardown(fx);
}

static void reverse_place(fixture *fx, const char *consumer, const char *producer, int loop, loom_status want)
{
    loom_error err;
    int b, l[LOOM_MAX_LOOPS];
    loops(fx, producer, l);
    cr_assert_eq(loom_get_block(&fx->sch, consumer, &b, &err), LOOM_OK);
    cr_assert_eq(loom_reverse_compute_at(&fx->sch, b, l[loop], &err), want, "%s in %s: %s", consumer, producer,
                 err.msg);
}

/* Epilogue fusion: R = relu(C) computed at the end of each row of the SpMM,
 * the row loop parallel; and attention's O at the end of each row of l. */
Test(schedule, reverse_compute_at_epilogues)
{
    fixture *fx = setup("tests/data/spmm_relu.loom", "A=data/cora_adj.mtx", NULL);
    reverse_place(fx, "R", "C", 0, LOOM_OK);
    int l[LOOM_MAX_LOOPS];
    loom_error err;
    loops(fx, "C", l);
    cr_assert_eq(loom_parallel(&fx->sch, l[0], &err), LOOM_OK);
    expect_valid(fx);
    char *src = source(fx);
    char *par = strstr(src, "#pragma omp parallel for");
    cr_assert_not_null(par);
    cr_assert(strstr(par, "computed here") != NULL, "R inside C's row loop:\n%s", src);
    free(src);
    expect_correct(fx, "spmm + relu epilogue");
    /* at C's f loop (inside the reduction over k) C's row is not complete */
    reverse_place(fx, "R", "C", 2, LOOM_OK);
    expect_rule(fx, "reverse-coverage");
    teardown(fx);

    fx = setup("workloads/attention.loom", NULL, "N=32");
    reverse_place(fx, "O", "l", 0, LOOM_OK);
    expect_rule(fx, "compute-at-accumulates"); /* O's order i, j, e: j outside e */
    reductions_innermost(fx, "O");
    expect_valid(fx);
    expect_correct(fx, "O at the end of each row of l");
    teardown(fx);

    fx = setup("workloads/attention.loom", NULL, "N=32");
    reverse_place(fx, "S", "O", 0, LOOM_ERR_SEMANTIC); /* O comes after S */
    reverse_place(fx, "l", "S", 0, LOOM_ERR_SEMANTIC); /* l does not read S */
    teardown(fx);
}
