/* Shared test helpers (fixture.h). */
#include "fixture.h"

#include <criterion/criterion.h>

#include "../runtime/machine/machine.h"
#include "../runtime/measure/pipeline.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

loom_program *fx_bind(const char *workload, const char *const *args, int n, uint64_t seed, loom_dataset **ds)
{
    loom_error err;
    loom_error_clear(&err);
    loom_program *prog = NULL;
    cr_assert_eq(loom_program_parse_file(workload, &prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec specs[LOOM_MAX_TENSORS];
    loom_param_spec params[LOOM_MAX_SIZES];
    memset(specs, 0, sizeof specs);
    memset(params, 0, sizeof params);
    int ns = 0, np = 0;
    for (int k = 0; k < n; k++) {
        const char *a = args[k];
        if (!a)
            continue;
        const char *eq = strchr(a, '=');
        cr_assert_not_null(eq, "fixture argument '%s' is not NAME=VALUE", a);
        size_t vl = strlen(eq + 1);
        int is_file = strchr(eq + 1, '/') || (vl > 4 && !strcmp(eq + 1 + vl - 4, ".mtx"));
        if (is_file) {
            cr_assert_lt(ns, LOOM_MAX_TENSORS);
            snprintf(specs[ns].tensor, sizeof specs[ns].tensor, "%.*s", (int)(eq - a), a);
            snprintf(specs[ns].path, sizeof specs[ns].path, "%s", eq + 1);
            ns++;
        } else {
            cr_assert_lt(np, LOOM_MAX_SIZES);
            snprintf(params[np].name, sizeof params[np].name, "%.*s", (int)(eq - a), a);
            params[np].value = atoll(eq + 1);
            np++;
        }
    }
    cr_assert_eq(loom_dataset_load(prog, specs, ns, params, np, seed, ds, &err), LOOM_OK, "%s", err.msg);
    return prog;
}

fx_loaded fx_load(const char *path, const char *text, const char *const *data, const char *const *params,
                  uint64_t seed)
{
    fx_loaded L = {0};
    loom_error err;
    loom_error_clear(&err);
    loom_status st = path ? loom_program_parse_file(path, &L.prog, &err)
                          : loom_program_parse_string(text, "<test>", &L.prog, &err);
    cr_assert_eq(st, LOOM_OK, "parse: %s", err.msg);
    loom_data_spec specs[LOOM_MAX_TENSORS];
    loom_param_spec ps[LOOM_MAX_SIZES];
    int ns = 0, np = 0;
    for (; data && data[ns]; ns++) {
        const char *eq = strchr(data[ns], '=');
        cr_assert(eq && ns < LOOM_MAX_TENSORS, "bad data argument '%s'", data[ns]);
        snprintf(specs[ns].tensor, sizeof specs[ns].tensor, "%.*s", (int)(eq - data[ns]), data[ns]);
        snprintf(specs[ns].path, sizeof specs[ns].path, "%s", eq + 1);
    }
    for (; params && params[np]; np++) {
        const char *eq = strchr(params[np], '=');
        cr_assert(eq && np < LOOM_MAX_SIZES, "bad param argument '%s'", params[np]);
        snprintf(ps[np].name, sizeof ps[np].name, "%.*s", (int)(eq - params[np]), params[np]);
        ps[np].value = atoll(eq + 1);
    }
    st = loom_dataset_load(L.prog, specs, ns, ps, np, seed, &L.ds, &err);
    cr_assert_eq(st, LOOM_OK, "data: %s", err.msg);
    return L;
}

void fx_unload(fx_loaded *L)
{
    loom_dataset_free(L->ds);
    loom_program_free(L->prog);
    L->ds = NULL;
    L->prog = NULL;
}

int fx_rolled_stages(const loom_schedule *sch)
{
    int n = 0;
    for (int q = 0; q < sch->nstages; q++)
        n += sch->stages[q].rolling != 0;
    return n;
}

void fx_run_checked(const loom_schedule *sch, loom_dataset *ds, const char *what)
{
    fx_run_checked_cflags(sch, ds, NULL, what);
}

void fx_run_checked_cflags(const loom_schedule *sch, loom_dataset *ds, const char *cflags, const char *what)
{
    loom_run_opts o = loom_run_defaults();
    o.build.cflags = cflags;
    o.measure.min_seconds = 0.002;
    o.measure.min_repeats = 1;
    o.measure.time_limit = 60;
    o.measure.stall_retries = 0; /* a correctness check: a stalled run need not be re-run */
    loom_run_result res;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_pipeline_run_schedule(sch, ds, NULL, &o, &res, &err), LOOM_OK, "%s: %s", what, err.msg);
    cr_assert_eq(res.status, LOOM_OK, "%s: %s", what, res.message);
    cr_assert(res.correct, "%s: wrong result (max rel err %g, tol %g)", what, res.max_rel_err, res.tol);
    cr_log_info("%s: %.3f ms", what, res.latency_s * 1e3);
}

char *fx_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    return b;
}

const loom_limits *fx_cpu_limits(void)
{
    static loom_limits l;
    l = loom_target_cpu_limits();
    return &l;
}

void fx_tmpdir(char *dir, size_t n, const char *tag)
{
    snprintf(dir, n, "/tmp/loom-%s-XXXXXX", tag);
    cr_assert_not_null(mkdtemp(dir), "cannot make %s", dir);
}

void fx_rmtree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}
