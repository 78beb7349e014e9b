/* The fixture of the schedule tests (tests/test_schedule.c,
 * tests/test_placement.c): a workload bound to its data, its reference, and
 * a schedule to transform; lowered, compiled, run and checked against the
 * reference by expect_correct. */
#ifndef LOOM_TESTS_SCHEDULE_FIXTURE_H
#define LOOM_TESTS_SCHEDULE_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/schedule/schedule.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/pipeline.h"
#include "../traces/validate.h"
#include "fixture.h"

typedef struct fixture {
    loom_program *prog;
    loom_dataset *ds;
    loom_reference *ref;
    loom_schedule sch;
} fixture;

static inline fixture *setup(const char *path, const char *data, const char *param)
{
    fixture *fx = calloc(1, sizeof *fx);
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_program_parse_file(path, &fx->prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec spec;
    loom_param_spec par;
    int ns = 0, np = 0;
    if (data) {
        const char *eq = strchr(data, '=');
        snprintf(spec.tensor, sizeof spec.tensor, "%.*s", (int)(eq - data), data);
        snprintf(spec.path, sizeof spec.path, "%s", eq + 1);
        ns = 1;
    }
    if (param) {
        const char *eq = strchr(param, '=');
        snprintf(par.name, sizeof par.name, "%.*s", (int)(eq - param), param);
        par.value = atoll(eq + 1);
        np = 1;
    }
    cr_assert_eq(loom_dataset_load(fx->prog, &spec, ns, &par, np, 3, &fx->ds, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_reference_run(fx->ds, &fx->ref, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_naive(&fx->sch, fx->prog, 1, &err), LOOM_OK, "%s", err.msg);
    return fx;
}

static inline void teardown(fixture *fx)
{
    loom_reference_free(fx->ref);
    loom_dataset_free(fx->ds);
    loom_program_free(fx->prog);
    free(fx);
}

static inline void expect_correct(fixture *fx, const char *what)
{
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0.002;
    o.measure.min_repeats = 1;
    loom_run_result res;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_pipeline_run_schedule(&fx->sch, fx->ds, fx->ref, &o, &res, &err);
    if (st) {
        char *src = NULL;
        loom_schedule_print(&fx->sch, stderr);
        cr_assert_fail("%s: %s", what, err.msg);
        free(src);
    }
    if (res.status != LOOM_OK) {
        char *src = NULL;
        loom_pipeline_schedule_source(&fx->sch, &src, &err);
        loom_schedule_print(&fx->sch, stderr);
        cr_assert_fail("%s: %s: %s\n%s", what, loom_status_name(res.status), res.message, src ? src : "");
    }
    cr_assert(res.correct);
}

static inline int loops(fixture *fx, const char *block, int *out)
{
    loom_error err;
    int b, n;
    cr_assert_eq(loom_get_block(&fx->sch, block, &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(&fx->sch, b, out, &n, &err), LOOM_OK, "%s", err.msg);
    return n;
}

__attribute__((unused)) static char *source(fixture *fx)
{
    char *src = NULL;
    loom_error err;
    cr_assert_eq(loom_pipeline_schedule_source(&fx->sch, &src, &err), LOOM_OK, "%s", err.msg);
    return src;
}

static inline void expect_valid(fixture *fx)
{
    loom_violation v;
    cr_assert_eq(loom_validate(&fx->sch, fx_cpu_limits(), &v, NULL), LOOM_OK, "%s", v.msg);
}

static inline void expect_rule(fixture *fx, const char *rule)
{
    loom_violation v;
    cr_assert_eq(loom_validate(&fx->sch, fx_cpu_limits(), &v, NULL), LOOM_ERR_SEMANTIC, "expected %s", rule);
    cr_assert_str_eq(v.rule, rule, "%s", v.msg);
}

#endif
