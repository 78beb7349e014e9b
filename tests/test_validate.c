/* The validator: every rule has a schedule that breaks it, and the rule name
 * it reports is checked; valid schedules pass and lower. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/schedule/schedule.h"
#include "../runtime/lower/lower.h"
#include "../traces/validate.h"
#include "fixture.h"

static loom_program *prog_of(const char *path_or_text, int is_text)
{
    loom_program *p = NULL;
    loom_error err;
    loom_status st = is_text ? loom_program_parse_string(path_or_text, "<test>", &p, &err)
                             : loom_program_parse_file(path_or_text, &p, &err);
    cr_assert_eq(st, LOOM_OK, "%s", err.msg);
    for (int z = 0; z < p->nsizes; z++)
        if (!p->sizes[z].bound)
            cr_assert_eq(loom_program_bind_size(p, p->sizes[z].name, 64, "test", &err), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(p, &err), LOOM_OK, "%s", err.msg);
    return p;
}

static loom_schedule *sched(const loom_program *p)
{
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_init(s, p, NULL, &err), LOOM_OK, "%s", err.msg);
    return s;
}

static int loops(loom_schedule *s, const char *block, int *out)
{
    loom_error err;
    int b, n;
    cr_assert_eq(loom_get_block(s, block, &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(s, b, out, &n, &err), LOOM_OK);
    return n;
}

static loom_limits limits(void)
{
    loom_limits l = {.vector_lanes = 16, .max_vector_factor = 4, .cores = 2, .max_workspace_bytes = 1024};
    return l;
}

static void expect_rule(const loom_schedule *s, const char *rule)
{
    loom_violation v;
    loom_error err;
    loom_limits lim = limits();
    cr_assert_eq(loom_validate(s, &lim, &v, &err), LOOM_ERR_SEMANTIC, "expected %s, schedule was valid", rule);
    cr_assert_str_eq(v.rule, rule, "got %s", v.msg);
    cr_assert(strncmp(v.msg, rule, strlen(rule)) == 0, "message starts with the rule: %s", v.msg);
    cr_assert_str_eq(err.msg, v.msg);
    cr_assert_geq(v.stage, 0);
    cr_assert_geq(v.loop, 0);
}

static void expect_valid_and_lowers(const loom_schedule *s)
{
    loom_violation v;
    loom_limits lim = limits();
    cr_assert_eq(loom_validate(s, &lim, &v, NULL), LOOM_OK, "%s", v.msg);
    lir_func *f = NULL;
    loom_error err;
    cr_assert_eq(loom_lower(s, &f, &err), LOOM_OK, "valid but does not lower: %s", err.msg);
    loom_lir_func_free(f);
}

/* The names tests, the search and `loom sample` count by: present, and
 * loom_validator_rules is the table in its order. */
Test(validate, rule_names_are_stable)
{
    const char *want[] = {"discordant-traversal", "pos-order", "parallel-reduction", "parallel-coiteration",
                          "nested-parallel", "vectorize-not-innermost", "vectorize-dynamic-extent",
                          "vectorize-too-wide", "vectorize-carried-reduction", "compute-at-lost", "producer-coverage",
                          "compute-at-accumulates", "compute-at-race", "cache-write-partial", "workspace-too-large",
                          "reverse-coverage", "rolling-update", "pos-whole-row-outer", "balance-rows",
                          "cache-write-split", "register-tile", "fusion-group", "pack-panel-loop",
                          "pack-panel-too-large", "prefetch-gather", "partial-sums", "stream-store", "epilogue", "workspace-spills"};
    int n;
    const char *const *r = loom_validator_rules(&n);
    cr_assert_eq(n, (int)(sizeof want / sizeof *want));
    cr_assert_eq(n, loom_validate_rule_count());
    for (int k = 0; k < n; k++) {
        const loom_validate_rule *R = loom_validate_rule_at(k);
        cr_assert(R && R->check && R->doc && R->doc[0], "row %d", k);
        cr_assert_str_eq(r[k], R->name);
        int found = 0;
        for (int j = 0; j < n; j++)
            found |= !strcmp(want[j], R->name);
        cr_assert(found, "rule %s is not one of the stable names", R->name);
    }
    cr_assert_null(loom_validate_rule_at(n));
    cr_assert_null(loom_validate_rule_at(-1));
}

/* docs/schedule-language.md's validator table names every rule of the
 * table (drift fails here). */
Test(validate, docs_name_every_rule)
{
    char *doc = fx_slurp("docs/schedule-language.md");
    for (int k = 0; k < loom_validate_rule_count(); k++) {
        char want[64];
        snprintf(want, sizeof want, "`%s`", loom_validate_rule_at(k)->name);
        cr_assert(strstr(doc, want), "docs/schedule-language.md does not name rule %s", want);
    }
    free(doc);
}

/* A rule added by one row (loom_validate_register_rule): listed, enforced
 * by loom_validate and loom_validate_stage, after the built-in rules. */
static loom_status no_unroll_over_4(const loom_rule_ctx *c)
{
    for (int p = 0; p < c->S->nloops; p++)
        if (c->S->loops[p].unroll > 4)
            return loom_rule_violate(c, "test-unroll-over-4", p, "in block %s, loop %d is unrolled %d times",
                                     c->block, p, c->S->loops[p].unroll);
    return LOOM_OK;
}

Test(validate, a_rule_added_by_one_row_is_listed_and_enforced)
{
    loom_validate_rule R = {"test-unroll-over-4", LOOM_RULE_LOOPS, no_unroll_over_4,
                            "a loop unrolled more than 4 times (test_validate.c)"};
    loom_error err;
    int before = loom_validate_rule_count();
    cr_assert_eq(loom_validate_register_rule(&R, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_validate_rule_count(), before + 1);
    int n;
    const char *const *names = loom_validator_rules(&n);
    cr_assert_str_eq(names[n - 1], "test-unroll-over-4");
    /* listed by `loom validate --rules`'s printer */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    cr_assert_eq(loom_validate_print_rules(out), 0);
    fclose(out);
    cr_assert(strstr(text, "test-unroll-over-4") && strstr(text, "unrolled more than 4 times"), "%s", text);
    free(text);
    /* enforced */
    loom_program *p = prog_of("workloads/spmm.loom", 0);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS], nl = loops(s, "C", l);
    loom_limits lim = limits();
    loom_violation v;
    cr_assert_eq(loom_unroll(s, l[nl - 1], 4, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_validate(s, &lim, &v, NULL), LOOM_OK, "%s", v.msg);
    cr_assert_eq(loom_unroll(s, l[nl - 1], 8, &err), LOOM_OK, "%s", err.msg);
    expect_rule(s, "test-unroll-over-4");
    cr_assert_eq(loom_validate_stage(s, 0, &lim, &v, NULL), LOOM_ERR_SEMANTIC);
    cr_assert_str_eq(v.rule, "test-unroll-over-4");
    /* a second row of the same name, a bad name, no check: refused */
    cr_assert_eq(loom_validate_register_rule(&R, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "exists already"), "%s", err.msg);
    loom_validate_rule bad = R;
    bad.name = "Bad Name";
    cr_assert_eq(loom_validate_register_rule(&bad, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "[a-z0-9-]"), "%s", err.msg);
    bad.name = "test-no-check";
    bad.check = NULL;
    cr_assert_eq(loom_validate_register_rule(&bad, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_validate_rule_count(), before + 1);
    free(s);
    loom_program_free(p);
}

Test(validate, default_schedules_are_valid)
{
    const char *w[] = {"workloads/spmv.loom", "workloads/spmm.loom", "workloads/sddmm.loom",
                       "workloads/gcn.loom", "workloads/gemm.loom", "workloads/attention.loom",
                       "workloads/attention_causal.loom", "workloads/attention_band.loom",
                       "workloads/sparse_attention.loom"};
    for (size_t k = 0; k < sizeof w / sizeof *w; k++) {
        loom_program *p = prog_of(w[k], 0);
        loom_schedule *s = malloc(sizeof *s);
        loom_error err;
        cr_assert_eq(loom_schedule_naive(s, p, 0, &err), LOOM_OK, "%s: %s", w[k], err.msg);
        expect_valid_and_lowers(s);
        free(s);
        loom_program_free(p);
    }
}

/* The validator has no default target: NULL limits are refused with a
 * message naming what to pass, for the whole schedule and for one stage,
 * even for a schedule that is valid on any target (issue 28: a trace tuned
 * for one target is never checked against the host by accident). */
Test(validate, null_limits_are_an_error_not_the_host)
{
    loom_program *p = prog_of("workloads/spmv.loom", 0);
    loom_schedule *s = malloc(sizeof *s);
    loom_error err;
    cr_assert_eq(loom_schedule_naive(s, p, 0, &err), LOOM_OK, "%s", err.msg);
    loom_violation v;
    loom_limits lim = limits();
    cr_assert_eq(loom_validate(s, &lim, &v, NULL), LOOM_OK, "precondition: valid with limits: %s", v.msg);
    loom_error_clear(&err);
    cr_assert_eq(loom_validate(s, NULL, &v, &err), LOOM_ERR_INVALID);
    cr_assert_str_eq(v.rule, "", "not a rule's violation: %s", v.rule);
    cr_assert_not_null(strstr(err.msg, "no limits given"), "%s", err.msg);
    cr_assert_not_null(strstr(v.msg, "loom_target_cpu_limits"), "the message names what to pass: %s", v.msg);
    cr_assert_eq(loom_validate_stage(s, 0, NULL, &v, &err), LOOM_ERR_INVALID);
    cr_assert_not_null(strstr(err.msg, "loom_validate_stage"), "%s", err.msg);
    cr_assert_eq(loom_validate(s, NULL, NULL, NULL), LOOM_ERR_INVALID, "v and err may be NULL");
    free(s);
    loom_program_free(p);
}

Test(validate, discordant_traversal)
{
    loom_program *p = prog_of("workloads/spmm.loom", 0);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS];
    loops(s, "C", l); /* i, k, f */
    int order[2] = {l[1], l[0]};
    cr_assert_eq(loom_reorder(s, order, 2, NULL), LOOM_OK);
    expect_rule(s, "discordant-traversal");
    /* and the same for a causal (range) level: S's j outside i */
    free(s);
    loom_program_free(p);
    p = prog_of("workloads/attention_causal.loom", 0);
    s = sched(p);
    loops(s, "S", l); /* i, j, d */
    int o2[2] = {l[1], l[0]};
    cr_assert_eq(loom_reorder(s, o2, 2, NULL), LOOM_OK);
    expect_rule(s, "discordant-traversal");
    free(s);
    loom_program_free(p);
}

Test(validate, discordant_through_a_split_parent)
{
    /* split i; put k between the two tiles of i: k is outside i's inner tile */
    loom_program *p = prog_of("workloads/spmm.loom", 0);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS], t[2];
    loops(s, "C", l);
    int64_t fac[2] = {0, 8};
    cr_assert_eq(loom_split(s, l[0], 2, NULL, fac, t, NULL), LOOM_OK);
    int order[2] = {l[1], t[1]}; /* loops now i.0, i.1, k, f -> i.0, k, i.1, f */
    cr_assert_eq(loom_reorder(s, order, 2, NULL), LOOM_OK);
    expect_rule(s, "discordant-traversal");
    free(s);
    loom_program_free(p);
}

Test(validate, pos_order)
{
    loom_program *p = prog_of("workloads/spmm.loom", 0);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS], t[2];
    loops(s, "C", l);
    cr_assert_eq(loom_pos_split(s, l[1], "A", 8, -1, t, NULL), LOOM_OK);
    int order[2] = {t[1], t[0]};
    cr_assert_eq(loom_reorder(s, order, 2, NULL), LOOM_OK);
    expect_rule(s, "pos-order");
    free(s);
    loom_program_free(p);
}

Test(validate, parallel_reduction)
{
    loom_program *p = prog_of("workloads/spmv.loom", 0);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS];
    loops(s, "y", l); /* i, k */
    cr_assert_eq(loom_parallel(s, l[1], NULL), LOOM_OK);
    expect_rule(s, "parallel-reduction");
    free(s);
    loom_program_free(p);
}

Test(validate, parallel_coiteration)
{
    loom_program *p = prog_of("tensor A(N, N) dcsr\ntensor B(N, N) dcsr\ntensor y(N) dense output\n"
                              "y(i) = A(i, j) * B(i, j)\n",
                              1);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS];
    loops(s, "y", l); /* i (merge of A and B's rows), j */
    cr_assert_eq(loom_parallel(s, l[0], NULL), LOOM_OK);
    expect_rule(s, "parallel-coiteration");
    free(s);
    loom_program_free(p);
}

Test(validate, nested_parallel)
{
    loom_program *p = prog_of("workloads/gemm.loom", 0);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS];
    loops(s, "C", l); /* i, k, j  -> make it i, j, k */
    int order[2] = {l[2], l[1]};
    cr_assert_eq(loom_reorder(s, order, 2, NULL), LOOM_OK);
    cr_assert_eq(loom_parallel(s, l[0], NULL), LOOM_OK);
    cr_assert_eq(loom_parallel(s, l[2], NULL), LOOM_OK);
    expect_rule(s, "nested-parallel");
    free(s);
    loom_program_free(p);
}

Test(validate, vectorize_not_innermost)
{
    loom_program *p = prog_of("workloads/gemm.loom", 0);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS];
    loops(s, "C", l);
    cr_assert_eq(loom_vectorize(s, l[1], NULL), LOOM_OK);
    expect_rule(s, "vectorize-not-innermost");
    free(s);
    loom_program_free(p);
}

Test(validate, vectorize_dynamic_extent)
{
    loom_program *p = prog_of("workloads/spmv.loom", 0);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS];
    loops(s, "y", l); /* k iterates A's compressed level: a data-dependent extent */
    cr_assert_eq(loom_vectorize(s, l[1], NULL), LOOM_OK);
    expect_rule(s, "vectorize-dynamic-extent");
    free(s);
    loom_program_free(p);
}

Test(validate, vectorize_too_wide_then_fixed_by_split)
{
    loom_program *p = prog_of("workloads/spmm.loom", 0); /* F = 64 default; limit 16 x 4 = 64 */
    loom_error err;
    cr_assert_eq(loom_program_bind_size(p, "F", 256, "test", &err), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(p, &err), LOOM_OK);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS], t[2];
    loops(s, "C", l);
    cr_assert_eq(loom_vectorize(s, l[2], NULL), LOOM_OK);
    expect_rule(s, "vectorize-too-wide");
    free(s);
    s = sched(p);
    loops(s, "C", l);
    int64_t fac[2] = {0, 32};
    cr_assert_eq(loom_split(s, l[2], 2, NULL, fac, t, NULL), LOOM_OK);
    cr_assert_eq(loom_vectorize(s, t[1], NULL), LOOM_OK);
    expect_valid_and_lowers(s);
    free(s);
    loom_program_free(p);
}

Test(validate, vectorize_carried_reduction)
{
    /* gemm's default order i, k, j: k reduces outside j, so C is
     * read-modify-written; vectorizing k would carry C between lanes */
    loom_program *p = prog_of("workloads/gemm.loom", 0);
    loom_error err;
    cr_assert_eq(loom_program_bind_size(p, "K", 32, "test", &err), LOOM_OK); /* within 16 lanes x 4 */
    cr_assert_eq(loom_program_finish_binding(p, &err), LOOM_OK);
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS];
    loops(s, "C", l); /* i, k, j */
    int order[2] = {l[2], l[1]};
    /* i, j, k: reduction innermost, scalar accumulator: vectorizing k is fine */
    cr_assert_eq(loom_reorder(s, order, 2, NULL), LOOM_OK);
    cr_assert_eq(loom_vectorize(s, l[1], NULL), LOOM_OK);
    expect_valid_and_lowers(s);
    free(s);
    /* a 3-loop statement with the reduction in the middle, vectorized inner
     * reduction tile: k.1 innermost but j inside k.0 */
    s = sched(p);
    loops(s, "C", l); /* i, k, j */
    int t[2];
    int64_t fac[2] = {0, 8};
    cr_assert_eq(loom_split(s, l[1], 2, NULL, fac, t, NULL), LOOM_OK); /* i, k.0, k.1, j */
    int o2[2] = {l[2], t[1]};                                          /* i, k.0, j, k.1 */
    cr_assert_eq(loom_reorder(s, o2, 2, NULL), LOOM_OK);
    cr_assert_eq(loom_vectorize(s, t[1], NULL), LOOM_OK);
    expect_rule(s, "vectorize-carried-reduction");
    free(s);
    loom_program_free(p);
}

Test(validate, cache_write_rules)
{
    loom_program *p = prog_of("workloads/spmm.loom", 0); /* F = 64 */
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS], b;
    loops(s, "C", l); /* i, k, f */
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    /* at k: the reduction loop itself holds the workspace: partial values */
    cr_assert_eq(loom_cache_write(s, b, l[1], NULL), LOOM_OK);
    expect_rule(s, "cache-write-partial");
    /* at i: a 64-float row (256 bytes) fits the 1 KiB limit */
    cr_assert_eq(loom_cache_write(s, b, l[0], NULL), LOOM_OK);
    expect_valid_and_lowers(s);
    free(s);
    loom_error err;
    cr_assert_eq(loom_program_bind_size(p, "F", 512, "test", &err), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(p, &err), LOOM_OK);
    s = sched(p);
    loops(s, "C", l);
    cr_assert_eq(loom_get_block(s, "C", &b, NULL), LOOM_OK);
    cr_assert_eq(loom_cache_write(s, b, l[0], NULL), LOOM_OK); /* 2 KiB > 1 KiB */
    expect_rule(s, "workspace-too-large");
    free(s);
    loom_program_free(p);
}

/* register-tile: a loop shaped for more vector registers (or lanes) than
 * the target has; the target's own shape is valid and lowers */
Test(validate, register_tile)
{
    loom_program *p = prog_of("workloads/attention.loom", 0);
    const char *keys[] = {"vector_registers", "vector_lanes"};
    const int64_t too_many[] = {64, 32}; /* limits(): 16 lanes, 32 registers (the default for 16 lanes) */
    for (int k = 0; k < 2; k++) {
        loom_schedule *s = sched(p);
        int l[LOOM_MAX_LOOPS];
        int n = loops(s, "m", l);
        cr_assert_eq(loom_annotate(s, l[n - 1], keys[k], -1, too_many[k], NULL), LOOM_OK);
        expect_rule(s, "register-tile");
        free(s);
    }
    loom_schedule *s = sched(p);
    int l[LOOM_MAX_LOOPS];
    int n = loops(s, "m", l);
    cr_assert_eq(loom_annotate(s, l[n - 1], "vector_lanes", -1, 16, NULL), LOOM_OK);
    cr_assert_eq(loom_annotate(s, l[n - 1], "vector_registers", -1, 32, NULL), LOOM_OK);
    expect_valid_and_lowers(s);
    free(s);
    loom_program_free(p);
}
