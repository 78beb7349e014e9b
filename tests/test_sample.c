/* The sampling instructions (dsl/schedule/sample.c): SamplePerfectTile,
 * SampleCategorical, the legal loop orders and SampleLoopOrder. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "../dsl/schedule/schedule.h"

typedef struct fixture {
    loom_program *prog;
    loom_schedule *sch;
    gsl_rng *rng;
} fixture;

/* Parse `path`, bind "NAME=VALUE,NAME=VALUE" (may be NULL), finish binding,
 * and initialise a schedule with a seeded mt19937. */
static fixture setup(const char *path, const char *binds, unsigned long seed)
{
    fixture fx;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_program_parse_file(path, &fx.prog, &err), LOOM_OK, "%s", err.msg);
    if (binds) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", binds);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            char *eq = strchr(tok, '=');
            cr_assert(eq);
            *eq = 0;
            cr_assert_eq(loom_program_bind_size(fx.prog, tok, atoll(eq + 1), "test", &err), LOOM_OK, "%s", err.msg);
        }
    }
    cr_assert_eq(loom_program_finish_binding(fx.prog, &err), LOOM_OK, "%s", err.msg);
    fx.rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(fx.rng, seed);
    fx.sch = malloc(sizeof *fx.sch);
    cr_assert(fx.sch);
    cr_assert_eq(loom_schedule_init(fx.sch, fx.prog, fx.rng, &err), LOOM_OK, "%s", err.msg);
    return fx;
}

static void teardown(fixture *fx)
{
    free(fx->sch);
    gsl_rng_free(fx->rng);
    loom_program_free(fx->prog);
}

/* LoopRVs of block `block`'s loops; returns their count. */
static int loops_of(loom_schedule *sch, const char *block, int *out)
{
    loom_error err;
    int b, n;
    cr_assert_eq(loom_get_block(sch, block, &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, out, &n, &err), LOOM_OK, "%s", err.msg);
    return n;
}

static int block_of(loom_schedule *sch, const char *block)
{
    loom_error err;
    int b;
    cr_assert_eq(loom_get_block(sch, block, &b, &err), LOOM_OK, "%s", err.msg);
    return b;
}

/* Name of the loop at current position p of stage s. */
static const char *loop_name(const loom_schedule *sch, int s, int p, char *buf)
{
    return loom_iter_name(sch, s, sch->stages[s].loops[p].iter, buf, 64);
}

/* Position in order[] (of current positions) of the loop named `name`. */
static int where(const loom_schedule *sch, int s, const int *order, int n, const char *name)
{
    char buf[64];
    for (int k = 0; k < n; k++)
        if (strcmp(loop_name(sch, s, order[k], buf), name) == 0)
            return k;
    cr_assert_fail("no loop %s in stage %d", name, s);
    return -1;
}

/* ---- SamplePerfectTile --------------------------------------------------- */

Test(sample_tile, product_bounds_and_innermost_limit)
{
    static const int64_t extents[] = {1, 7, 64, 360, 2708};
    static const int maxes[] = {-1, 16, 1};
    for (size_t e = 0; e < sizeof extents / sizeof *extents; e++) {
        char binds[64];
        snprintf(binds, sizeof binds, "N=100,K=100,F=%lld", (long long)extents[e]);
        fixture fx = setup("workloads/spmm.loom", binds, 1234 + e);
        int l[LOOM_MAX_LOOPS];
        cr_assert_eq(loops_of(fx.sch, "C", l), 3);
        int f = l[2]; /* i, k, f */
        cr_assert_eq(loom_iter_extent(fx.sch, 0, fx.sch->rvs[f].iter), extents[e]);
        int saved = fx.sch->nrvs;
        for (int n = 1; n <= 5; n++)
            for (size_t m = 0; m < sizeof maxes / sizeof *maxes; m++)
                for (int draw = 0; draw < 2000; draw++) {
                    int64_t tiles[LOOM_MAX_INST_IO];
                    int rvs[LOOM_MAX_INST_IO];
                    loom_error err;
                    if (n == 1 && maxes[m] != -1 && extents[e] > maxes[m]) {
                        /* one tile is the extent: no tiling fits under the limit */
                        cr_assert_eq(loom_sample_perfect_tile(fx.sch, f, n, maxes[m], NULL, tiles, rvs, &err),
                                     LOOM_ERR_INVALID);
                        cr_assert(strstr(err.msg, "no tiling with innermost"), "%s", err.msg);
                        cr_assert_eq(fx.sch->nrvs, saved);
                        break;
                    }
                    cr_assert_eq(loom_sample_perfect_tile(fx.sch, f, n, maxes[m], NULL, tiles, rvs, &err), LOOM_OK,
                                 "extent %lld n %d: %s", (long long)extents[e], n, err.msg);
                    int64_t prod = 1;
                    for (int k = 0; k < n; k++) {
                        cr_assert_geq(tiles[k], 1);
                        cr_assert_eq(fx.sch->rvs[rvs[k]].kind, LOOM_RV_EXPR);
                        cr_assert_eq(fx.sch->rvs[rvs[k]].value, tiles[k]);
                        prod *= tiles[k];
                    }
                    cr_assert_eq(prod, extents[e], "extent %lld n %d: product %lld", (long long)extents[e], n,
                                 (long long)prod);
                    if (maxes[m] > 0 && n > 1)
                        cr_assert_leq(tiles[n - 1], maxes[m]);
                    fx.sch->nrvs = saved;
                }
        teardown(&fx);
    }
}

Test(sample_tile, two_tiles_of_4_are_uniform_over_the_exponent)
{
    fixture fx = setup("workloads/spmm.loom", "N=100,K=100,F=4", 7);
    int l[LOOM_MAX_LOOPS];
    loops_of(fx.sch, "C", l);
    int saved = fx.sch->nrvs, counts[5] = {0};
    const int draws = 3000;
    for (int d = 0; d < draws; d++) {
        int64_t t[2];
        int rvs[2];
        loom_error err;
        cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, -1, NULL, t, rvs, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(t[0] * t[1], 4);
        counts[t[0]]++;
        fx.sch->nrvs = saved;
    }
    /* x ~ U{0, 1, 2}: (1,4), (2,2), (4,1) each with probability 1/3 */
    double sigma = sqrt(draws * (1.0 / 3) * (2.0 / 3));
    for (int o = 1; o <= 4; o *= 2) {
        cr_assert_gt(counts[o], 0, "(%d, %d) never drawn", o, 4 / o);
        cr_assert_lt(fabs(counts[o] - draws / 3.0), 4 * sigma, "(%d,%d) drawn %d of %d", o, 4 / o, counts[o], draws);
    }
    teardown(&fx);
}

Test(sample_tile, three_tiles_are_stars_and_bars)
{
    /* 4 = 2^2 into 3 tiles: the 6 compositions of the exponent 2 into 3
     * parts are equally likely (MetaSchedule's stars and bars) */
    fixture fx = setup("workloads/spmm.loom", "N=100,K=100,F=4", 99);
    int l[LOOM_MAX_LOOPS];
    loops_of(fx.sch, "C", l);
    int saved = fx.sch->nrvs, counts[5][5] = {{0}};
    const int draws = 6000;
    for (int d = 0; d < draws; d++) {
        int64_t t[3];
        int rvs[3];
        loom_error err;
        cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 3, -1, NULL, t, rvs, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(t[0] * t[1] * t[2], 4);
        counts[t[0]][t[1]]++;
        fx.sch->nrvs = saved;
    }
    double sigma = sqrt(draws * (1.0 / 6) * (5.0 / 6));
    int seen = 0;
    for (int a = 1; a <= 4; a *= 2)
        for (int b = 1; a * b <= 4; b *= 2) {
            seen++;
            cr_assert_lt(fabs(counts[a][b] - draws / 6.0), 4 * sigma, "(%d,%d,%d) drawn %d of %d", a, b, 4 / a / b,
                         counts[a][b], draws);
        }
    cr_assert_eq(seen, 6);
    teardown(&fx);
}

Test(sample_tile, same_seed_same_sequence)
{
    fixture a = setup("workloads/spmm.loom", "N=100,K=100,F=360", 42);
    fixture b = setup("workloads/spmm.loom", "N=100,K=100,F=360", 42);
    int la[LOOM_MAX_LOOPS], lb[LOOM_MAX_LOOPS];
    loops_of(a.sch, "C", la);
    loops_of(b.sch, "C", lb);
    int sa = a.sch->nrvs, sb = b.sch->nrvs, differ = 0;
    int64_t first[4];
    for (int d = 0; d < 200; d++) {
        int64_t ta[4], tb[4];
        int ra[4], rb[4];
        loom_error err;
        cr_assert_eq(loom_sample_perfect_tile(a.sch, la[2], 4, 64, NULL, ta, ra, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_sample_perfect_tile(b.sch, lb[2], 4, 64, NULL, tb, rb, &err), LOOM_OK, "%s", err.msg);
        cr_assert_arr_eq(ta, tb, sizeof ta, "draw %d differs", d);
        if (d == 0)
            memcpy(first, ta, sizeof first);
        else if (memcmp(first, ta, sizeof ta))
            differ = 1;
        a.sch->nrvs = sa;
        b.sch->nrvs = sb;
    }
    cr_assert(differ, "200 draws of 4 tiles of 360 were all the same");
    teardown(&a);
    teardown(&b);
}

Test(sample_tile, decision_replay_and_repair)
{
    fixture fx = setup("workloads/spmm.loom", "N=100,K=100,F=64", 1);
    int l[LOOM_MAX_LOOPS];
    loops_of(fx.sch, "C", l);
    fx.sch->rng = NULL; /* replay needs no generator */
    loom_error err;
    int64_t out[4];
    int rvs[4];

    int64_t good[2] = {4, 16};
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, 16, good, out, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_arr_eq(out, good, sizeof good);
    cr_assert_eq(fx.sch->rvs[rvs[0]].value, 4);
    cr_assert_eq(fx.sch->rvs[rvs[1]].value, 16);

    int64_t bad[2] = {3, 5}; /* 5 does not divide 64: the inner tile takes all that fits max_innermost */
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, 16, bad, out, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(out[0] * out[1], 64);
    cr_assert_eq(out[0], 4);
    cr_assert_eq(out[1], 16);

    int64_t issue14[2] = {7, 5}; /* issue 14: became {1, 64} despite the limit of 16 */
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, 16, issue14, out, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(out[0], 4);
    cr_assert_eq(out[1], 16);
    int64_t odd[2] = {1, 5}; /* the largest divisor of 64 within 12 is 8 */
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, 12, odd, out, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(out[0], 8);
    cr_assert_eq(out[1], 8);
    int64_t over[2] = {1, 64}; /* divides, but over the limit: repaired too */
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, 16, over, out, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(out[1], 16);
    int64_t nolimit[2] = {3, 5}; /* max_innermost -1: MetaSchedule's rule, the inner tile takes all */
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, -1, nolimit, out, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(out[1], 64);

    int64_t bad3[3] = {2, 3, 8}; /* 8 | 64, then 3 does not divide 8 */
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 3, 16, bad3, out, rvs, &err), LOOM_OK, "%s", err.msg);
    int64_t want3[3] = {1, 8, 8};
    cr_assert_arr_eq(out, want3, sizeof want3);

    int64_t outer_off[2] = {3, 16}; /* only the outermost is wrong: it takes the rest */
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, 16, outer_off, out, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(out[0], 4);
    cr_assert_eq(out[1], 16);

    int64_t zero[2] = {8, 0}; /* a tile < 1 is repaired, never divides by 0 */
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, 16, zero, out, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(out[0] * out[1], 64);

    int before = fx.sch->nrvs;
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, 16, NULL, out, rvs, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "random generator"), "%s", err.msg);
    cr_assert_eq(fx.sch->nrvs, before, "a failed sample adds no RVs");
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 0, 16, good, out, rvs, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], LOOM_MAX_INST_IO + 1, 16, good, out, rvs, &err),
                 LOOM_ERR_INVALID);
    teardown(&fx);
}

Test(sample_tile, data_dependent_extent_uses_powers_of_two)
{
    fixture fx = setup("workloads/spmm.loom", "N=2708,K=2708,F=64", 5);
    int l[LOOM_MAX_LOOPS], p[2];
    loom_error err;
    loops_of(fx.sch, "C", l); /* i, k, f; k is A's compressed level */
    cr_assert_eq(loom_pos_split(fx.sch, l[1], "A", 8, -1, p, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_iter_extent(fx.sch, 0, fx.sch->rvs[p[0]].iter), 0, "the outer position loop is dynamic");
    int saved = fx.sch->nrvs, seen[7] = {0};
    for (int d = 0; d < 2000; d++) {
        int64_t t[3];
        int rvs[3];
        int mx = d % 2 ? 16 : -1;
        cr_assert_eq(loom_sample_perfect_tile(fx.sch, p[0], 3, mx, NULL, t, rvs, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(t[0], 0, "outermost is inferred");
        for (int k = 1; k < 3; k++) {
            cr_assert_geq(t[k], 1);
            cr_assert_eq(t[k] & (t[k] - 1), 0, "%lld is not a power of two", (long long)t[k]);
            cr_assert_leq(t[k], mx == -1 ? 64 : mx);
            seen[__builtin_ctzll((unsigned long long)t[k])]++;
        }
        fx.sch->nrvs = saved;
    }
    for (int k = 0; k <= 6; k++)
        cr_assert_gt(seen[k], 0, "tile %d never drawn", 1 << k);
    /* replay only validates */
    int64_t ok[3] = {0, 4, 2}, out[3];
    int rvs[3];
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, p[0], 3, 16, ok, out, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_arr_eq(out, ok, sizeof ok);
    int64_t bad[3] = {2, 4, 2};
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, p[0], 3, 16, bad, out, rvs, &err), LOOM_ERR_INVALID);
    int64_t bad2[3] = {0, 0, 2};
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, p[0], 3, 16, bad2, out, rvs, &err), LOOM_ERR_INVALID);
    teardown(&fx);
}

Test(sample_tile, loop_that_was_split_away_is_refused)
{
    fixture fx = setup("workloads/spmm.loom", "N=100,K=100,F=64", 5);
    int l[LOOM_MAX_LOOPS], out[2], rvs[2];
    int64_t t[2];
    loom_error err;
    loops_of(fx.sch, "C", l);
    int64_t fac[2] = {0, 8};
    cr_assert_eq(loom_split(fx.sch, l[2], 2, NULL, fac, out, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 2, 16, NULL, t, rvs, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, out[1], 2, -1, NULL, t, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(t[0] * t[1], 8);
    teardown(&fx);
}

/* ---- SampleCategorical ------------------------------------------------------ */

Test(sample_categorical, frequencies_within_three_sigma)
{
    fixture fx = setup("workloads/spmm.loom", "N=100,K=100", 2024);
    int64_t cand[3] = {10, 20, 30};
    double probs[3] = {0.2, 0.3, 0.5};
    int counts[3] = {0}, saved = fx.sch->nrvs;
    const int draws = 20000;
    for (int d = 0; d < draws; d++) {
        int64_t idx;
        int rv;
        loom_error err;
        cr_assert_eq(loom_sample_categorical(fx.sch, 3, cand, probs, NULL, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
        cr_assert(idx >= 0 && idx < 3);
        cr_assert_eq(fx.sch->rvs[rv].value, cand[idx]);
        counts[idx]++;
        fx.sch->nrvs = saved;
    }
    for (int k = 0; k < 3; k++) {
        double mean = draws * probs[k], sigma = sqrt(draws * probs[k] * (1 - probs[k]));
        cr_assert_lt(fabs(counts[k] - mean), 3 * sigma, "candidate %d drawn %d times, expected %.0f +- %.0f", k,
                     counts[k], mean, 3 * sigma);
    }
    teardown(&fx);
}

Test(sample_categorical, zero_probability_never_drawn_and_weights_need_not_sum_to_one)
{
    fixture fx = setup("workloads/spmm.loom", "N=100,K=100", 3);
    int64_t cand[4] = {1, 2, 3, 4};
    double probs[4] = {0, 3, 0, 1}; /* sums to 4 */
    int counts[4] = {0}, saved = fx.sch->nrvs;
    for (int d = 0; d < 8000; d++) {
        int64_t idx;
        int rv;
        loom_error err;
        cr_assert_eq(loom_sample_categorical(fx.sch, 4, cand, probs, NULL, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
        counts[idx]++;
        fx.sch->nrvs = saved;
    }
    cr_assert_eq(counts[0], 0);
    cr_assert_eq(counts[2], 0);
    cr_assert_gt(counts[1], 5600); /* expected 6000, sigma 39 */
    cr_assert_lt(counts[1], 6400);
    teardown(&fx);
}

Test(sample_categorical, decisions_and_errors)
{
    fixture fx = setup("workloads/spmm.loom", "N=100,K=100", 3);
    int64_t cand[3] = {7, 8, 9}, idx, dec;
    double probs[3] = {1, 1, 1};
    int rv;
    loom_error err;
    fx.sch->rng = NULL;
    dec = 2;
    cr_assert_eq(loom_sample_categorical(fx.sch, 3, cand, probs, &dec, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(idx, 2);
    cr_assert_eq(fx.sch->rvs[rv].value, 9);
    dec = 5;
    cr_assert_eq(loom_sample_categorical(fx.sch, 3, cand, probs, &dec, &idx, &rv, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "out of range"), "%s", err.msg);
    cr_assert(strstr(err.msg, "decision 5 out of range 0..2"), "%s", err.msg);
    dec = -1;
    cr_assert_eq(loom_sample_categorical(fx.sch, 3, cand, probs, &dec, &idx, &rv, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_sample_categorical(fx.sch, 3, cand, probs, NULL, &idx, &rv, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "random generator"), "%s", err.msg);
    fx.sch->rng = fx.rng;
    double neg[3] = {0.5, -0.1, 0.5}, zero[3] = {0, 0, 0};
    cr_assert_eq(loom_sample_categorical(fx.sch, 3, cand, neg, NULL, &idx, &rv, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_sample_categorical(fx.sch, 3, cand, zero, NULL, &idx, &rv, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_sample_categorical(fx.sch, 0, cand, probs, NULL, &idx, &rv, &err), LOOM_ERR_INVALID);
    teardown(&fx);
}

/* ---- legal loop orders ------------------------------------------------------- */

/* Every order has `a` before `b` (loop names); orders are distinct
 * permutations. */
static void check_orders(const loom_schedule *sch, int s, int (*orders)[LOOM_MAX_LOOPS], int count, const char *a,
                         const char *b)
{
    int n = sch->stages[s].nloops;
    for (int o = 0; o < count; o++) {
        int used = 0;
        for (int k = 0; k < n; k++) {
            cr_assert(orders[o][k] >= 0 && orders[o][k] < n);
            used |= 1 << orders[o][k];
        }
        cr_assert_eq(used, (1 << n) - 1, "order %d is not a permutation", o);
        if (a)
            cr_assert_lt(where(sch, s, orders[o], n, a), where(sch, s, orders[o], n, b), "order %d: %s after %s", o,
                         a, b);
        for (int p = 0; p < o; p++)
            cr_assert(memcmp(orders[o], orders[p], sizeof(int) * (size_t)n), "orders %d and %d are equal", p, o);
    }
}

Test(sample_orders, spmm_i_before_k)
{
    fixture fx = setup("workloads/spmm.loom", "N=2708,K=2708,F=64", 1);
    int orders[16][LOOM_MAX_LOOPS];
    cr_assert_eq(fx.sch->stages[0].nloops, 3);
    int count = loom_legal_loop_orders(fx.sch, 0, orders, 16);
    cr_assert_eq(count, 3, "3 of the 6 orders keep i outside k, got %d", count);
    check_orders(fx.sch, 0, orders, count, "i", "k");
    /* lexicographic: the first is the current order (legal) */
    cr_assert_eq(orders[0][0], 0);
    cr_assert_eq(orders[0][1], 1);
    cr_assert_eq(orders[0][2], 2);
    cr_assert_eq(loom_legal_loop_orders(fx.sch, 0, orders, 2), 2, "stops at max");
    cr_assert_eq(loom_legal_loop_orders(fx.sch, 0, NULL, 100), 3, "counts without storage");
    cr_assert_eq(loom_legal_loop_orders(fx.sch, 5, orders, 16), 0, "no such stage");
    teardown(&fx);
}

Test(sample_orders, sddmm_i_before_j)
{
    fixture fx = setup("workloads/sddmm.loom", "N=300,L=300", 1);
    int orders[16][LOOM_MAX_LOOPS];
    cr_assert_eq(fx.sch->stages[0].nloops, 3);
    int count = loom_legal_loop_orders(fx.sch, 0, orders, 16);
    cr_assert_eq(count, 3);
    check_orders(fx.sch, 0, orders, count, "i", "j");
    teardown(&fx);
}

Test(sample_orders, gemm_all_six)
{
    fixture fx = setup("workloads/gemm.loom", NULL, 1);
    int orders[16][LOOM_MAX_LOOPS];
    int count = loom_legal_loop_orders(fx.sch, 0, orders, 16);
    cr_assert_eq(count, 6);
    check_orders(fx.sch, 0, orders, count, NULL, NULL);
    teardown(&fx);
}

Test(sample_orders, causal_attention_range_level_i_before_j)
{
    fixture fx = setup("workloads/attention_causal.loom", NULL, 1);
    int orders[16][LOOM_MAX_LOOPS];
    cr_assert_eq(fx.sch->stages[0].nloops, 3); /* S(i, j): i, j, d */
    int count = loom_legal_loop_orders(fx.sch, 0, orders, 16);
    cr_assert_eq(count, 3);
    check_orders(fx.sch, 0, orders, count, "i", "j");
    teardown(&fx);
}

/* Independent brute force: all permutations of n loops in lexicographic
 * order, kept when every (before[r], after[r]) name pair is in order. */
static int next_perm(int *a, int n)
{
    int i = n - 2;
    while (i >= 0 && a[i] >= a[i + 1])
        i--;
    if (i < 0)
        return 0;
    int j = n - 1;
    while (a[j] <= a[i])
        j--;
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
    for (int l = i + 1, r = n - 1; l < r; l++, r--) {
        t = a[l];
        a[l] = a[r];
        a[r] = t;
    }
    return 1;
}

static int brute_force(const loom_schedule *sch, int s, const char *const *before, const char *const *after, int nr,
                       int (*out)[LOOM_MAX_LOOPS], int max)
{
    int n = sch->stages[s].nloops, perm[LOOM_MAX_LOOPS], count = 0, id[LOOM_MAX_LOOPS];
    int bpos[16], apos[16]; /* current positions of the named loops */
    for (int k = 0; k < n; k++)
        id[k] = k;
    for (int r = 0; r < nr; r++) {
        bpos[r] = where(sch, s, id, n, before[r]);
        apos[r] = where(sch, s, id, n, after[r]);
    }
    for (int k = 0; k < n; k++)
        perm[k] = k;
    do {
        int inv[LOOM_MAX_LOOPS], ok = 1; /* inv[current position] = new position */
        for (int k = 0; k < n; k++)
            inv[perm[k]] = k;
        for (int r = 0; r < nr && ok; r++)
            ok = inv[bpos[r]] < inv[apos[r]];
        if (ok) {
            if (count < max)
                memcpy(out[count], perm, sizeof(int) * (size_t)n);
            count++;
        }
    } while (next_perm(perm, n));
    return count;
}

Test(sample_orders, split_children_stay_ordered_matches_brute_force)
{
    fixture fx = setup("workloads/spmm.loom", "N=2708,K=2708,F=64", 1);
    int l[LOOM_MAX_LOOPS], out[2];
    loom_error err;
    loops_of(fx.sch, "C", l);
    int64_t fac[2] = {0, 16};
    cr_assert_eq(loom_split(fx.sch, l[2], 2, NULL, fac, out, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(fx.sch->stages[0].nloops, 4);
    static int got[64][LOOM_MAX_LOOPS], want[64][LOOM_MAX_LOOPS];
    const char *before[] = {"i", "f.0"}, *after[] = {"k", "f.1"};
    int nw = brute_force(fx.sch, 0, before, after, 2, want, 64);
    cr_assert_eq(nw, 6, "4!/2/2");
    int count = loom_legal_loop_orders(fx.sch, 0, got, 64);
    cr_assert_eq(count, nw);
    for (int o = 0; o < count; o++)
        cr_assert_arr_eq(got[o], want[o], sizeof(int) * 4, "order %d differs from the brute force", o);
    teardown(&fx);
}

Test(sample_orders, split_of_the_dense_row_level_stays_outside_k)
{
    fixture fx = setup("workloads/spmm.loom", "N=2708,K=2708,F=64", 1);
    int l[LOOM_MAX_LOOPS], out[2];
    loom_error err;
    loops_of(fx.sch, "C", l); /* i, k, f */
    int64_t fac[2] = {0, 16};
    cr_assert_eq(loom_split(fx.sch, l[0], 2, NULL, fac, out, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_split(fx.sch, l[2], 2, NULL, fac, out, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(fx.sch->stages[0].nloops, 5); /* i.0, i.1, k, f.0, f.1 */
    static int got[128][LOOM_MAX_LOOPS], want[128][LOOM_MAX_LOOPS];
    const char *before[] = {"i.0", "i.0", "i.1", "f.0"}, *after[] = {"i.1", "k", "k", "f.1"};
    int nw = brute_force(fx.sch, 0, before, after, 4, want, 128);
    cr_assert_eq(nw, 120 / 6 / 2);
    int count = loom_legal_loop_orders(fx.sch, 0, got, 128);
    cr_assert_eq(count, nw);
    for (int o = 0; o < count; o++)
        cr_assert_arr_eq(got[o], want[o], sizeof(int) * 5, "order %d", o);
    teardown(&fx);
}

Test(sample_orders, pos_split_children_derive_from_k)
{
    fixture fx = setup("workloads/spmm.loom", "N=2708,K=2708,F=64", 1);
    int l[LOOM_MAX_LOOPS], p[2];
    loom_error err;
    loops_of(fx.sch, "C", l);
    cr_assert_eq(loom_pos_split(fx.sch, l[1], "A", 8, -1, p, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(fx.sch->stages[0].nloops, 4); /* i, k.p0, k.p1, f */
    static int got[64][LOOM_MAX_LOOPS], want[64][LOOM_MAX_LOOPS];
    const char *before[] = {"i", "i", "k.p0"}, *after[] = {"k.p0", "k.p1", "k.p1"};
    int nw = brute_force(fx.sch, 0, before, after, 3, want, 64);
    cr_assert_eq(nw, 4);
    int count = loom_legal_loop_orders(fx.sch, 0, got, 64);
    cr_assert_eq(count, nw);
    for (int o = 0; o < count; o++)
        cr_assert_arr_eq(got[o], want[o], sizeof(int) * 4);
    teardown(&fx);
}

Test(sample_orders, nine_loops_match_brute_force_and_stay_fast)
{
    fixture fx = setup("workloads/gemm.loom", NULL, 1);
    int l[LOOM_MAX_LOOPS], out[3];
    loom_error err;
    loops_of(fx.sch, "C", l);
    int64_t fac[3] = {0, 4, 8};
    for (int k = 0; k < 3; k++)
        cr_assert_eq(loom_split(fx.sch, l[k], 3, NULL, fac, out, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(fx.sch->stages[0].nloops, 9);
    const char *before[] = {"i.0", "i.1", "j.0", "j.1", "k.0", "k.1"};
    const char *after[] = {"i.1", "i.2", "j.1", "j.2", "k.1", "k.2"};
    static int want[2000][LOOM_MAX_LOOPS], got[2000][LOOM_MAX_LOOPS];
    int nw = brute_force(fx.sch, 0, before, after, 6, want, 2000);
    cr_assert_eq(nw, 1680, "9! / 3!^3");
    int count = loom_legal_loop_orders(fx.sch, 0, got, 2000);
    cr_assert_eq(count, nw);
    for (int o = 0; o < count; o++)
        cr_assert_arr_eq(got[o], want[o], sizeof(int) * 9, "order %d", o);
    /* and a further split of an inner child: its children stay after i.0 */
    int l2[LOOM_MAX_LOOPS];
    int n2 = loops_of(fx.sch, "C", l2);
    cr_assert_eq(n2, 9);
    int64_t fac2[2] = {0, 2};
    cr_assert_eq(loom_split(fx.sch, l2[1], 2, NULL, fac2, out, &err), LOOM_OK, "%s", err.msg); /* i.1 */
    const char *b2[] = {"i.0", "i.0", "i.1.0", "i.1.0", "i.1.1", "j.0", "j.1", "k.0", "k.1"};
    const char *a2[] = {"i.1.0", "i.1.1", "i.1.1", "i.2", "i.2", "j.1", "j.2", "k.1", "k.2"};
    static int want2[1][LOOM_MAX_LOOPS];
    int nw2 = brute_force(fx.sch, 0, b2, a2, 9, want2, 1);
    cr_assert_eq(nw2, 3628800 / 24 / 6 / 6);
    cr_assert_eq(loom_legal_loop_orders(fx.sch, 0, NULL, 1 << 30), nw2);
    teardown(&fx);
}

Test(sample_orders, fused_dense_loops)
{
    fixture fx = setup("workloads/gemm.loom", NULL, 1);
    int l[LOOM_MAX_LOOPS], f;
    loom_error err;
    loops_of(fx.sch, "C", l); /* i, k, j or i, j, k */
    cr_assert_eq(loom_fuse(fx.sch, l, 2, &f, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_legal_loop_orders(fx.sch, 0, NULL, 100), 2);
    teardown(&fx);
}

/* ---- SampleLoopOrder ----------------------------------------------------------- */

Test(sample_loop_order, prior_with_weight_one_always_wins)
{
    fixture fx = setup("workloads/spmm.loom", "N=2708,K=2708,F=64", 11);
    int b = block_of(fx.sch, "C");
    loom_schedule *orig = malloc(sizeof *orig);
    loom_schedule_copy(orig, fx.sch);
    for (int d = 0; d < 200; d++) {
        loom_schedule_copy(fx.sch, orig);
        int64_t idx;
        int rv;
        loom_error err;
        cr_assert_eq(loom_sample_loop_order(fx.sch, b, 0, 1.0, NULL, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(idx, 0);
        cr_assert_eq(fx.sch->rvs[rv].value, 0);
        cr_assert(loom_schedule_equal(fx.sch, orig), "order 0 is the current order");
    }
    free(orig);
    teardown(&fx);
}

Test(sample_loop_order, prior_weight_and_uniform_frequencies)
{
    fixture fx = setup("workloads/spmm.loom", "N=2708,K=2708,F=64", 12);
    int b = block_of(fx.sch, "C");
    loom_schedule *orig = malloc(sizeof *orig);
    loom_schedule_copy(orig, fx.sch);
    int prior_counts[3] = {0}, uni_counts[3] = {0};
    const int draws = 3000;
    for (int d = 0; d < draws; d++) {
        int64_t idx;
        int rv;
        loom_error err;
        loom_schedule_copy(fx.sch, orig);
        cr_assert_eq(loom_sample_loop_order(fx.sch, b, 2, 0.5, NULL, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
        prior_counts[idx]++;
        loom_schedule_copy(fx.sch, orig);
        cr_assert_eq(loom_sample_loop_order(fx.sch, b, -1, 0, NULL, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
        uni_counts[idx]++;
    }
    double p[3] = {0.25, 0.25, 0.5};
    for (int k = 0; k < 3; k++) {
        double sp = sqrt(draws * p[k] * (1 - p[k])), su = sqrt(draws * (1.0 / 3) * (2.0 / 3));
        cr_assert_lt(fabs(prior_counts[k] - draws * p[k]), 4 * sp, "prior: order %d drawn %d", k, prior_counts[k]);
        cr_assert_lt(fabs(uni_counts[k] - draws / 3.0), 4 * su, "uniform: order %d drawn %d", k, uni_counts[k]);
    }
    free(orig);
    teardown(&fx);
}

Test(sample_loop_order, decisions_replay_and_repair)
{
    fixture fx = setup("workloads/spmm.loom", "N=2708,K=2708,F=64", 13);
    int b = block_of(fx.sch, "C");
    loom_error err;
    int l[LOOM_MAX_LOOPS];
    loops_of(fx.sch, "C", l);
    cr_assert_eq(loom_parallel(fx.sch, l[0], &err), LOOM_OK, "%s", err.msg); /* i: the kind must move with i */
    cr_assert_eq(fx.sch->stages[0].loops[0].kind, LOOM_LOOP_PARALLEL);
    int orders[16][LOOM_MAX_LOOPS];
    int count = loom_legal_loop_orders(fx.sch, 0, orders, 16);
    cr_assert_eq(count, 3);
    loom_schedule *orig = malloc(sizeof *orig), *again = malloc(sizeof *again);
    loom_schedule_copy(orig, fx.sch);
    for (int d = 0; d < 20; d++) {
        int64_t idx, idx2;
        int rv;
        loom_schedule_copy(fx.sch, orig);
        cr_assert_eq(loom_sample_loop_order(fx.sch, b, -1, 0, NULL, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
        for (int k = 0; k < 3; k++)
            cr_assert_eq(fx.sch->stages[0].loops[k].iter, orig->stages[0].loops[orders[idx][k]].iter,
                         "decision %lld applies order %lld", (long long)idx, (long long)idx);
        char buf[64];
        for (int k = 0; k < 3; k++)
            if (strcmp(loop_name(fx.sch, 0, k, buf), "i") == 0)
                cr_assert_eq(fx.sch->stages[0].loops[k].kind, LOOM_LOOP_PARALLEL, "the kind moves with the loop");
        loom_schedule_copy(again, orig);
        again->rng = NULL;
        cr_assert_eq(loom_sample_loop_order(again, b, -1, 0, &idx, &idx2, &rv, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(idx2, idx);
        cr_assert(loom_schedule_equal(again, fx.sch), "replaying decision %lld gives the same schedule",
                  (long long)idx);
    }
    int64_t big = 99, got;
    int rv;
    loom_schedule_copy(fx.sch, orig);
    cr_assert_eq(loom_sample_loop_order(fx.sch, b, -1, 0, &big, &got, &rv, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(got, count - 1, "repaired to the last legal order");
    cr_assert_eq(fx.sch->rvs[rv].value, count - 1);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(fx.sch->stages[0].loops[k].iter, orig->stages[0].loops[orders[count - 1][k]].iter);
    loom_schedule_copy(fx.sch, orig);
    fx.sch->rng = NULL;
    cr_assert_eq(loom_sample_loop_order(fx.sch, b, -1, 0, NULL, &got, &rv, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "random generator"), "%s", err.msg);
    cr_assert_eq(loom_sample_loop_order(fx.sch, l[0], -1, 0, &big, &got, &rv, &err), LOOM_ERR_INVALID,
                 "a loop is not a block");
    free(orig);
    free(again);
    teardown(&fx);
}

/* ---- recording ------------------------------------------------------------------ */

typedef struct rec_log {
    int n;
    loom_inst insts[16];
} rec_log;

static void recorder(void *ctx, const loom_inst *inst)
{
    rec_log *log = ctx;
    if (log->n < 16)
        log->insts[log->n] = *inst;
    log->n++;
}

static void expect_kind(const loom_inst *inst, const char *name)
{
    if (loom_inst_kind_find(name) < 0) {
        cr_log_warn("instruction kind %s is not registered (dsl/schedule/inst.c): name check skipped", name);
        return;
    }
    cr_assert_eq(inst->kind, loom_inst_kind_find(name));
    cr_assert_str_eq(loom_inst_kind_at(inst->kind)->name, name);
}

Test(sample_record, every_sampler_records_one_instruction)
{
    fixture fx = setup("workloads/spmm.loom", "N=100,K=100,F=64", 21);
    int l[LOOM_MAX_LOOPS];
    loops_of(fx.sch, "C", l);
    int b = block_of(fx.sch, "C");
    rec_log log = {0};
    fx.sch->recorder = recorder;
    fx.sch->recorder_ctx = &log;
    loom_error err;

    int64_t tiles[3];
    int rvs[3];
    cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 3, 16, NULL, tiles, rvs, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(log.n, 1);
    const loom_inst *in = &log.insts[0];
    expect_kind(in, "SamplePerfectTile");
    cr_assert_eq(in->ninputs, 1);
    cr_assert_eq(in->inputs[0], l[2]);
    cr_assert_eq(in->nattrs, 2);
    cr_assert_eq(in->attrs[0], 3);
    cr_assert_eq(in->attrs[1], 16);
    cr_assert_eq(in->noutputs, 3);
    cr_assert_eq(in->ndecision, 3);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(in->outputs[k], rvs[k]);
        cr_assert_eq(in->decision[k], tiles[k]);
    }

    int64_t cand[3] = {1, 4, 16}, idx;
    double probs[3] = {0.25, 0.25, 0.5};
    int rv;
    cr_assert_eq(loom_sample_categorical(fx.sch, 3, cand, probs, NULL, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(log.n, 2);
    in = &log.insts[1];
    expect_kind(in, "SampleCategorical");
    cr_assert_eq(in->ninputs, 0);
    cr_assert_eq(in->nattrs, 3);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(in->attrs[k], cand[k]);
        cr_assert_float_eq(in->fattrs[k], probs[k], 1e-12);
    }
    cr_assert_eq(in->noutputs, 1);
    cr_assert_eq(in->outputs[0], rv);
    cr_assert_eq(in->ndecision, 1);
    cr_assert_eq(in->decision[0], idx);

    cr_assert_eq(loom_sample_loop_order(fx.sch, b, 1, 0.75, NULL, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(log.n, 3, "SampleLoopOrder is one instruction (no GetLoops / Reorder)");
    in = &log.insts[2];
    expect_kind(in, "SampleLoopOrder");
    cr_assert_eq(in->ninputs, 1);
    cr_assert_eq(in->inputs[0], b);
    cr_assert_eq(in->nattrs, 1);
    cr_assert_eq(in->attrs[0], 1);
    cr_assert_float_eq(in->fattrs[0], 0.75, 1e-12);
    cr_assert_eq(in->noutputs, 1);
    cr_assert_eq(in->outputs[0], rv);
    cr_assert_eq(in->decision[0], idx);

    /* a failed sample records nothing */
    int64_t bad = 7;
    cr_assert_eq(loom_sample_categorical(fx.sch, 3, cand, probs, &bad, &idx, &rv, &err), LOOM_ERR_INVALID);
    cr_assert_eq(log.n, 3);
    teardown(&fx);
}

/* A recorded instruction, re-applied through the registry (dsl/schedule/inst.c) on
 * the schedule as it was before, gives the same schedule, RVs and decision. */
static void expect_replay(const loom_schedule *before, const loom_schedule *after, const loom_inst *inst)
{
    const loom_inst_kind *k = loom_inst_kind_at(inst->kind);
    cr_assert(k && k->apply, "kind %d has no apply", inst->kind);
    cr_assert(k->decision != LOOM_DECISION_NONE);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_schedule_copy(sch, before);
    sch->rng = NULL; /* the decision drives it */
    sch->recorder = NULL;
    int64_t dec[LOOM_MAX_INST_IO];
    int outs[LOOM_MAX_LOOPS], nout;
    loom_error err;
    cr_assert_eq(loom_inst_apply(sch, inst, dec, outs, &nout, &err), LOOM_OK, "%s: %s", k->name, err.msg);
    cr_assert_eq(nout, inst->noutputs);
    for (int j = 0; j < nout; j++) {
        cr_assert_eq(outs[j], inst->outputs[j]);
        cr_assert_eq(sch->rvs[outs[j]].value, after->rvs[outs[j]].value);
    }
    cr_assert_arr_eq(dec, inst->decision, sizeof(int64_t) * (size_t)inst->ndecision);
    cr_assert(loom_schedule_equal(sch, after), "%s replays to a different schedule", k->name);
    free(sch);
}

Test(sample_record, recorded_samplers_replay_through_the_registry)
{
    if (loom_inst_kind_find("SampleLoopOrder") < 0)
        cr_skip_test("the instruction registry (dsl/schedule/inst.c) has no SampleLoopOrder yet");
    fixture fx = setup("workloads/spmm.loom", "N=100,K=100,F=360", 31);
    int l[LOOM_MAX_LOOPS];
    loops_of(fx.sch, "C", l);
    int b = block_of(fx.sch, "C");
    rec_log log = {0};
    loom_schedule *before = malloc(sizeof *before);
    loom_error err;
    for (int round = 0; round < 20; round++) {
        int64_t tiles[4], idx;
        int rvs[4], rv;
        log.n = 0;
        fx.sch->recorder = recorder;
        fx.sch->recorder_ctx = &log;

        loom_schedule_copy(before, fx.sch);
        cr_assert_eq(loom_sample_perfect_tile(fx.sch, l[2], 4, 16, NULL, tiles, rvs, &err), LOOM_OK, "%s", err.msg);
        expect_replay(before, fx.sch, &log.insts[0]);

        int64_t cand[4] = {0, 16, 64, 512};
        double probs[4] = {1, 2, 3, 4};
        loom_schedule_copy(before, fx.sch);
        cr_assert_eq(loom_sample_categorical(fx.sch, 4, cand, probs, NULL, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
        expect_replay(before, fx.sch, &log.insts[1]);

        loom_schedule_copy(before, fx.sch);
        cr_assert_eq(loom_sample_loop_order(fx.sch, b, 0, 0.3, NULL, &idx, &rv, &err), LOOM_OK, "%s", err.msg);
        expect_replay(before, fx.sch, &log.insts[2]);
        cr_assert_eq(log.n, 3);
        fx.sch->recorder = NULL;
        fx.sch->nrvs = before->nrvs; /* keep the RV table small; the loops keep their new order */
    }
    free(before);
    teardown(&fx);
}
