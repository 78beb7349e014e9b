/* Tests for dsl/schedule/query.c, the schedule queries every layer shares.
 *
 * Before they were shared, "the variable a loop iterates" had seven copies
 * (half answering -1 for a fused loop, half -2) and loom_single_driver two:
 * the modules' copy refused a variable that also indexes a range (causal,
 * band) level, although PosSplit accepts it and the lowering iterates it as
 * one compressed level with a range guard.  The tests below tie each query
 * to the primitive or lowering it must agree with, so such a drift fails. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/schedule/query.h"
#include "../dsl/schedule/schedule.h"
#include "fixture.h"

static loom_program *parse(const char *text)
{
    loom_program *prog = NULL;
    loom_error err;
    cr_assert_eq(loom_program_parse_string(text, "query_test", &prog, &err), LOOM_OK, "%s", err.msg);
    return prog;
}

static loom_schedule *schedule(const loom_program *prog)
{
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    return sch;
}

static int var_named(const loom_program *prog, int stmt, const char *name)
{
    for (int v = 0; v < prog->nvars; v++)
        if (prog->vars[v].stmt == stmt && !strcmp(prog->vars[v].name, name))
            return v;
    cr_assert_fail("no variable %s", name);
    return -1;
}

#define GEMM                                                                                                           \
    "param M = 16\nparam N = 12\nparam K = 8\n"                                                                       \
    "tensor A(M, K) dense\ntensor B(K, N) dense\ntensor C(M, N) dense output\n"                                        \
    "C(i, j) += A(i, k) * B(k, j)\n"

Test(query, iter_var_through_splits_and_fusions)
{
    loom_program *prog = parse(GEMM);
    loom_schedule *sch = schedule(prog);
    loom_error err;
    int b, loops[LOOM_MAX_LOOPS], n, tiles[2], fused;
    int i = var_named(prog, 0, "i"), j = var_named(prog, 0, "j"), k = var_named(prog, 0, "k");
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(n, 3); /* i, k, j: the order of first appearance on the right */
    int64_t f[2] = {4, 4};
    cr_assert_eq(loom_split(sch, loops[0], 2, NULL, f, tiles, &err), LOOM_OK, "%s", err.msg);
    int inner_k[2];
    int64_t g[2] = {3, 4};
    cr_assert_eq(loom_split(sch, loops[1], 2, NULL, g, inner_k, &err), LOOM_OK, "%s", err.msg);
    int pair[2] = {tiles[1], inner_k[0]};
    cr_assert_eq(loom_fuse(sch, pair, 2, &fused, &err), LOOM_OK, "%s", err.msg);
    const loom_stage *S = &sch->stages[0];
    /* loops now: i0, fused(i1, k0), k1, j */
    cr_assert_eq(S->nloops, 4);
    cr_assert_eq(loom_iter_var(S, S->loops[0].iter), i, "a split tile iterates its variable");
    cr_assert_eq(loom_iter_var(S, S->loops[1].iter), -1, "a fusion iterates several: -1, never -2");
    cr_assert_eq(loom_iter_var(S, S->loops[2].iter), k);
    cr_assert_eq(loom_iter_var(S, S->loops[3].iter), j, "an untouched loop is its VAR iter");
    cr_assert_eq(loom_iter_var(S, -1), -1);
    cr_assert_eq(loom_iter_var(S, S->niters), -1);
    /* derives_from follows fusions too; iter_var >= 0 implies derives_from */
    cr_assert(loom_iter_derives_from(S, S->loops[1].iter, i));
    cr_assert(loom_iter_derives_from(S, S->loops[1].iter, k));
    cr_assert_not(loom_iter_derives_from(S, S->loops[1].iter, j));
    cr_assert_not(loom_iter_derives_from(S, -1, i));
    for (int p = 0; p < S->nloops; p++) {
        int v = loom_iter_var(S, S->loops[p].iter);
        if (v >= 0)
            cr_assert(loom_iter_derives_from(S, S->loops[p].iter, v), "loop %d", p);
    }
    /* the SPLIT iters record the same variable as the query finds */
    for (int it = 0; it < S->niters; it++)
        if (S->iters[it].kind == LOOM_ITER_SPLIT)
            cr_assert_eq(S->iters[it].var, loom_iter_var(S, it), "iter %d", it);
    /* a primitive that refuses fused loops sees the fusion (CacheWrite) */
    cr_assert_eq(loom_cache_write(sch, b, tiles[0], &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "cache-write-fused"), "%s", err.msg);
    free(sch);
    loom_program_free(prog);
}

/* PosSplit accepts exactly the tensors loom_single_driver names: for every
 * compressed variable of every statement, PosSplit with the driver succeeds
 * when there is one, and with every tensor of the statement fails when
 * there is none. */
static void driver_agrees_with_pos_split(const char *text, int want_mixed_driver)
{
    loom_program *prog = parse(text);
    int checked = 0;
    for (int s = 0; s < prog->nstmts; s++) {
        const loom_stmt *st = &prog->stmts[s];
        for (int q = 0; q < st->nvars; q++) {
            int x = st->vars[q];
            loom_schedule *sch = schedule(prog);
            if (!loom_var_is_compressed(sch, s, x)) {
                cr_assert_eq(loom_single_driver(prog, s, x), -1, "%s: no compressed level", prog->vars[x].name);
                free(sch);
                continue;
            }
            loom_error err;
            int b, loops[LOOM_MAX_LOOPS], n, out[2], lp = -1;
            cr_assert_eq(loom_get_block(sch, prog->tensors[st->lhs].name, &b, &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
            for (int p = 0; p < n; p++)
                if (loom_iter_var(&sch->stages[s], sch->rvs[loops[p]].iter) == x)
                    lp = loops[p];
            cr_assert_geq(lp, 0);
            int d = loom_single_driver(prog, s, x);
            if (d >= 0) {
                cr_assert_eq(loom_pos_split(sch, lp, prog->tensors[d].name, 4, -1, out, &err), LOOM_OK,
                             "%s: PosSplit refuses the driver %s: %s", prog->vars[x].name, prog->tensors[d].name,
                             err.msg);
            } else {
                for (int t = 0; t < prog->ntensors; t++)
                    cr_assert_neq(loom_pos_split(sch, lp, prog->tensors[t].name, 4, -1, out, &err), LOOM_OK,
                                  "%s: no driver, but PosSplit accepts %s", prog->vars[x].name,
                                  prog->tensors[t].name);
            }
            if (want_mixed_driver && !strcmp(prog->vars[x].name, "j"))
                cr_assert_eq(d, loom_program_find_tensor(prog, "A"), "j: A drives it, W's band only guards it");
            checked++;
            free(sch);
        }
    }
    cr_assert_gt(checked, 0, "no compressed variable was checked");
    loom_program_free(prog);
}

Test(query, single_driver_agrees_with_pos_split)
{
    /* one pattern */
    driver_agrees_with_pos_split("param F = 8\nparam N = 32\nparam K = 16\ntensor A(N, K) csr\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
                                 "C(i, f) += A(i, k) * B(k, f)\n",
                                 0);
    /* a compressed level and a band (range) level at the same variable */
    driver_agrees_with_pos_split("param N = 64\ntensor A(N, N) csr\ntensor W(N, N) band(3)\n"
                                 "tensor X(N) dense\ntensor Y(N) dense output\n"
                                 "Y(i) += A(i, j) * W(i, j) * X(j)\n",
                                 1);
    /* two patterns merged: no single driver */
    driver_agrees_with_pos_split("param N = 64\ntensor A(N, N) csr\ntensor B(N, N) csr\n"
                                 "tensor X(N) dense\ntensor Y(N) dense output\n"
                                 "Y(i) += A(i, j) * B(i, j) * X(j)\n",
                                 0);
}

/* The lowering agrees: PosSplit on the compressed level of the mixed
 * compressed-and-band loop computes the right result. */
Test(query, pos_split_of_a_banded_compressed_loop_runs_correctly)
{
    const char *text = "tensor A(N, N) csr\ntensor W(N, N) band(3)\n"
                       "tensor X(N) dense\ntensor Y(N) dense output\n"
                       "Y(i) += A(i, j) * W(i, j) * X(j)\n";
    const char *data[] = {"A=data/cora500_adj.mtx", NULL};
    const char *params[] = {NULL};
    fx_loaded L = fx_load(NULL, text, data, params, 5);
    loom_schedule *sch = schedule(L.prog);
    loom_error err;
    int b, loops[LOOM_MAX_LOOPS], n, out[2];
    int j = var_named(L.prog, 0, "j");
    cr_assert_eq(loom_single_driver(L.prog, 0, j), loom_program_find_tensor(L.prog, "A"));
    cr_assert_eq(loom_get_block(sch, "Y", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_pos_split(sch, loops[1], "A", 4, -1, out, &err), LOOM_OK, "%s", err.msg);
    fx_run_checked(sch, L.ds, "pos split of j over A under W's band");
    free(sch);
    fx_unload(&L);
}

Test(query, rolled_into_names_the_loop)
{
    fx_loaded L = fx_load("workloads/attention.loom", NULL, (const char *[]){NULL},
                          (const char *[]){"N=16", "D=8", NULL}, 3);
    loom_schedule *sch = schedule(L.prog);
    loom_error err;
    int m, l, P, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "m", &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "l", &l, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "P", &P, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, m, loops, &n, &err), LOOM_OK, "%s", err.msg);
    int ms = sch->rvs[m].stage, ls = sch->rvs[l].stage;
    cr_assert_not(loom_stage_rolled_into(sch, ms, -1), "nothing rolled yet");
    cr_assert_eq(loom_compute_inline(sch, P, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_rolling_update(sch, l, loops[n - 1], -1, &err), LOOM_OK, "%s", err.msg);
    cr_assert(loom_stage_rolled_into(sch, ms, -1));
    cr_assert(loom_stage_rolled_into(sch, ms, sch->rvs[loops[n - 1]].iter));
    cr_assert_not(loom_stage_rolled_into(sch, ms, sch->rvs[loops[0]].iter), "rolled into the last loop only");
    cr_assert_not(loom_stage_rolled_into(sch, ls, -1), "l is rolled, nothing is rolled into it");
    free(sch);
    fx_unload(&L);
}

Test(query, find_access_is_the_first_in_tree_order)
{
    loom_program *prog = parse("param N = 4\ntensor A(N) dense\ntensor B(N) dense\ntensor Y(N) dense output\n"
                               "Y(i) = A(i) * B(i) + A(i) * 2\n");
    int a = loom_program_find_tensor(prog, "A"), bt = loom_program_find_tensor(prog, "B");
    int y = loom_program_find_tensor(prog, "Y");
    int rhs = prog->stmts[0].rhs;
    int e = loom_expr_find_access(prog, rhs, a);
    cr_assert_geq(e, 0);
    cr_assert_eq(prog->exprs[e].kind, LOOM_EXPR_ACCESS);
    cr_assert_eq(prog->exprs[e].tensor, a);
    /* the first A: no access of A has a smaller index among the leaves
     * left of it, i.e. it is the leftmost A (both are leaves of the tree;
     * the parser numbers leaves left to right) */
    for (int k = 0; k < prog->nexprs; k++)
        if (prog->exprs[k].kind == LOOM_EXPR_ACCESS && prog->exprs[k].tensor == a)
            cr_assert_geq(k, e);
    cr_assert_eq(prog->exprs[loom_expr_find_access(prog, rhs, bt)].tensor, bt);
    cr_assert_eq(loom_expr_find_access(prog, rhs, y), -1, "the output is not read");
    loom_program_free(prog);
}

Test(query, readers_look_through_inlined_blocks)
{
    fx_loaded L = fx_load("workloads/attention.loom", NULL, (const char *[]){NULL},
                          (const char *[]){"N=16", "D=8", NULL}, 3);
    loom_schedule *sch = schedule(L.prog);
    loom_error err;
    int b[5];
    const char *names[5] = {"S", "m", "P", "l", "O"};
    for (int k = 0; k < 5; k++) {
        cr_assert_eq(loom_get_block(sch, names[k], &b[k], &err), LOOM_OK, "%s", err.msg);
        b[k] = sch->rvs[b[k]].stage;
    }
    int r[LOOM_MAX_STMTS];
    /* nothing inlined: the direct readers */
    cr_assert_eq(loom_stage_readers(sch, b[0], r), 2, "S is read by m and P");
    cr_assert_eq(r[0], b[1]);
    cr_assert_eq(r[1], b[2]);
    int P;
    cr_assert_eq(loom_get_block(sch, "P", &P, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_compute_inline(sch, P, &err), LOOM_OK, "%s", err.msg);
    /* P inlined: S is read by m, and through P by l and O */
    cr_assert_eq(loom_stage_readers(sch, b[0], r), 3);
    cr_assert_eq(r[0], b[1]);
    cr_assert_eq(r[1], b[3]);
    cr_assert_eq(r[2], b[4]);
    cr_assert_eq(loom_stage_readers(sch, b[1], r), 2, "m is read through P only");
    cr_assert_eq(r[0], b[3]);
    cr_assert_eq(r[1], b[4]);
    cr_assert_eq(loom_stage_readers(sch, b[4], r), 0, "the output has no readers");
    free(sch);
    fx_unload(&L);
}

Test(query, loop_of_iter_follows_splits)
{
    loom_program *prog = parse(GEMM);
    loom_schedule *sch = schedule(prog);
    loom_error err;
    int b, loops[LOOM_MAX_LOOPS], n, tiles[2];
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    const loom_stage *S = &sch->stages[0];
    int k_iter = sch->rvs[loops[1]].iter;
    cr_assert_eq(loom_loop_of_iter(S, k_iter), 1);
    int64_t f[2] = {2, 4};
    cr_assert_eq(loom_split(sch, loops[1], 2, NULL, f, tiles, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_loop_of_iter(S, k_iter), -1, "split away");
    cr_assert_eq(loom_loop_of_iter(S, sch->rvs[tiles[0]].iter), 1);
    cr_assert_eq(loom_loop_of_iter(S, sch->rvs[tiles[1]].iter), 2);
    cr_assert_eq(loom_loop_of_iter(S, sch->rvs[loops[2]].iter), 3);
    free(sch);
    loom_program_free(prog);
}
