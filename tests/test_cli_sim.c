/* `loom run --target sim...`: the schedule is lowered and simulated, the JSON
 * says so, and a bad target is bad input. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

static int run(const char *args, char *out, size_t n)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s run %s 2>&1", loom_bin(), args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t len = fread(out, 1, n - 1, p);
    out[len] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(cli_sim, run_on_a_simulated_target_says_so)
{
    char out[8192];
    int rc = run("workloads/spmm.loom --data A=data/cora500_adj.mtx --param F=16 --target sim:spr-2c --json", out,
                 sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "\"simulated\":\ttrue"), "%s", out);
    cr_assert(strstr(out, "\"target\":\t\"sim:spr-2c:"), "%s", out);
    const char *l = strstr(out, "\"latency_s\":");
    cr_assert_not_null(l);
    cr_assert_gt(strtod(l + strlen("\"latency_s\":"), NULL), 0);
    /* the simulator's counters: per core cycles (the slowest is the latency
       of this one-region kernel plus the region's overhead), every cache
       level with at most as many misses as lookups, each level looked up
       by the misses of the level above */
    cJSON *root = cJSON_Parse(out);
    cr_assert_not_null(root, "%s", out);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "counters");
    cr_assert(cJSON_IsObject(c), "%s", out);
    const cJSON *cc = cJSON_GetObjectItemCaseSensitive(c, "core_cycles");
    cr_assert_eq(cJSON_GetArraySize(cc), 2, "spr-2c has 2 cores: %s", out);
    double cyc = cJSON_GetObjectItemCaseSensitive(root, "cycles")->valuedouble, busiest = 0;
    for (const cJSON *x = cc->child; x; x = x->next)
        busiest = x->valuedouble > busiest ? x->valuedouble : busiest;
    cr_expect_gt(busiest, 0);
    cr_expect_leq(busiest, cyc, "busiest core %g of %g cycles", busiest, cyc);
    cr_expect_gt(cJSON_GetObjectItemCaseSensitive(c, "instructions")->valuedouble, 0);
    cr_expect_gt(cJSON_GetObjectItemCaseSensitive(c, "loads")->valuedouble, 0);
    const cJSON *lv = cJSON_GetObjectItemCaseSensitive(c, "caches");
    cr_assert_eq(cJSON_GetArraySize(lv), 3, "spr-2c's L1d, L2 and L3: %s", out);
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(lv->child, "name")->valuestring, "L1d");
    double above = -1;
    for (const cJSON *e = lv->child; e; e = e->next) {
        double acc = cJSON_GetObjectItemCaseSensitive(e, "accesses")->valuedouble,
               miss = cJSON_GetObjectItemCaseSensitive(e, "misses")->valuedouble;
        const char *name = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
        cr_expect_leq(miss, acc, "%s: %g misses of %g lookups", name, miss, acc);
        if (above >= 0)
            cr_expect_float_eq(acc, above, 0.5, "lookups %g, misses above %g", acc, above);
        above = miss;
    }
    cJSON_Delete(root);
    /* the wider machine simulates the same kernel faster */
    char out2[8192];
    cr_assert_eq(run("workloads/spmm.loom --data A=data/cora500_adj.mtx --param F=16 --target sim:wide-64c --json",
                     out2, sizeof out2),
                 0, "%s", out2);
    double a = strtod(strstr(out, "\"latency_s\":") + 12, NULL), b = strtod(strstr(out2, "\"latency_s\":") + 12, NULL);
    cr_assert_lt(b, a, "wide-64c %g s vs spr-2c %g s", b, a);
    /* the cpu target is not simulated */
    cr_assert_eq(run("workloads/spmv.loom --data A=data/cora500_adj.mtx --json", out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "\"simulated\":\tfalse"), "%s", out);
}

Test(cli_sim, unknown_targets_are_bad_input)
{
    char out[4096];
    cr_assert_eq(run("workloads/spmv.loom --data A=data/cora500_adj.mtx --target gpu", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "unknown target 'gpu'"), "%s", out);
    cr_assert_eq(run("workloads/spmv.loom --data A=data/cora500_adj.mtx --target sim:nope", out, sizeof out), 2, "%s",
                 out);
    cr_assert(strstr(out, "nope"), "%s", out);
}
