/* One default schedule everywhere (issue 32; modules/module.h
 * loom_default_build): `loom run` without a trace, a campaign's first
 * record (its default) and navigation's all-default schedule generate the
 * same C (--emit-c) -- GCN and SpMM on Cora, where the default is the
 * space's, and attention, where the space has no default and all of them
 * take modules/default.c's.  Before, `loom run` built modules/default.c's
 * kernel (GCN: `f < W_d1`), the campaign the space's (`f_3 < 16`, 2.8x
 * faster on the CPU) and navigation a third (untiled holes, no workspace:
 * 9x slower on the simulator).  All through the CLI (LOOM_BIN) on the
 * simulator, so the three are compared as a user gets them. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

/* Run a shell command (stdout+stderr); its output, malloc'd, and *rc. */
static char *run(const char *cmd, int *rc)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "cannot run %s", cmd);
    size_t cap = 1 << 16, len = 0, got;
    char *out = malloc(cap);
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 4096)
            out = realloc(out, cap *= 2);
    }
    out[len] = 0;
    int st = pclose(p);
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

static void must(const char *cmd)
{
    int rc;
    char *out = run(cmd, &rc);
    cr_assert_eq(rc, 0, "%s failed (%d): %s", cmd, rc, out);
    free(out);
}

/* The first record's trace of the campaign in db, written to path. */
static void first_record_trace(const char *db, const char *path)
{
    char f[600];
    snprintf(f, sizeof f, "%s/records.jsonl", db);
    char *text = fx_slurp(f);
    cr_assert_not_null(text, "no %s", f);
    char *nl = strchr(text, '\n');
    if (nl)
        *nl = 0;
    cJSON *rec = cJSON_Parse(text);
    cr_assert_not_null(rec, "the first record is not JSON: %.200s", text);
    char *tr = cJSON_PrintUnformatted(cJSON_GetObjectItem(rec, "trace"));
    cr_assert_not_null(tr, "the first record has no trace");
    FILE *o = fopen(path, "w");
    cr_assert_not_null(o);
    fputs(tr, o);
    fclose(o);
    free(tr);
    cJSON_Delete(rec);
    free(text);
}

/* `loom run --json`'s "default" object for args (no trace): which default
 * it built; *why gets why_not_space (malloc'd, "" when it is the space's). */
static const char *run_default_kind(const char *args, char **why)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s run %s --target sim --json 2>&1", loom_bin(), args);
    int rc;
    char *out = run(cmd, &rc);
    cr_assert_eq(rc, 0, "%s: %s", cmd, out);
    cJSON *o = cJSON_Parse(out);
    cr_assert_not_null(o, "not JSON: %s", out);
    const cJSON *d = cJSON_GetObjectItem(o, "default");
    cr_assert_not_null(d, "no \"default\" in %s", out);
    const char *target = cJSON_GetStringValue(cJSON_GetObjectItem(d, "target"));
    /* sim:host:FP, or the calibrated host sim:host-CPU:FP (runtime/target/calibrate.h) */
    cr_assert(target && !strncmp(target, "sim:host", 8) && (target[8] == ':' || target[8] == '-'),
              "the default's target is %s, not sim:host", target);
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "limits"), "cores")), "no limits: %s", out);
    const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(d, "schedule"));
    cr_assert_not_null(k);
    const char *kind = !strcmp(k, "space") ? "space" : !strcmp(k, "modules/default.c") ? "modules/default.c" : NULL;
    cr_assert_not_null(kind, "unknown default kind %s", k);
    const char *w = cJSON_GetStringValue(cJSON_GetObjectItem(d, "why_not_space"));
    *why = strdup(w ? w : "");
    cJSON_Delete(o);
    free(out);
    return kind;
}

/* The three defaults of `args` (a workload and its --data/--param) in dir:
 * run.c, tune.c, nav.c; asserts that they are the same file. */
static void three_defaults(const char *dir, const char *name, const char *args)
{
    char cmd[2000], db[400], tr[400], nav[400], c[3][400];
    const char *what[3] = {"loom run (no trace)", "the campaign's default record", "navigation's defaults"};
    for (int k = 0; k < 3; k++)
        snprintf(c[k], sizeof c[k], "%s/%s-%s.c", dir, name, k == 0 ? "run" : k == 1 ? "tune" : "nav");
    snprintf(cmd, sizeof cmd, "%s run %s --target sim --emit-c %s >/dev/null", loom_bin(), args, c[0]);
    must(cmd);

    snprintf(db, sizeof db, "%s/%s-db", dir, name);
    snprintf(tr, sizeof tr, "%s/%s-default.json", dir, name);
    snprintf(cmd, sizeof cmd,
             "%s tune %s --target sim --trials 1 --batch 1 --pretrain 0 --remeasure 0 --db %s >/dev/null 2>&1",
             loom_bin(), args, db);
    must(cmd);
    first_record_trace(db, tr);
    snprintf(cmd, sizeof cmd, "%s run %s --target sim --trace %s --emit-c %s >/dev/null", loom_bin(), args, tr, c[1]);
    must(cmd);

    snprintf(nav, sizeof nav, "%s/%s-nav.json", dir, name);
    snprintf(cmd, sizeof cmd,
             "printf 'defaults\\nsave %s\\nquit\\n' | %s navigate %s --target sim --no-consequences >/dev/null",
             nav, loom_bin(), args);
    must(cmd);
    snprintf(cmd, sizeof cmd, "%s run %s --target sim --trace %s --emit-c %s >/dev/null", loom_bin(), args, nav, c[2]);
    must(cmd);

    char *src[3];
    for (int k = 0; k < 3; k++) {
        src[k] = fx_slurp(c[k]);
        cr_assert(src[k] && strstr(src[k], "loom_kernel"), "%s: %s wrote no kernel", name, what[k]);
    }
    for (int k = 1; k < 3; k++)
        cr_expect_str_eq(src[k], src[0], "%s: %s generates other C than %s (diff %s %s)", name, what[k], what[0],
                         c[0], c[k]);
    for (int k = 0; k < 3; k++)
        free(src[k]);
}

static int have_cora(void)
{
    return access("data/cora_adj.mtx", R_OK) == 0 && access("data/cora_features.mtx", R_OK) == 0;
}

static char *tmpdir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/loom_default_same_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static void rm_rf(const char *dir)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

#define GCN "workloads/gcn.loom --data A=data/cora_adj.mtx --data X=data/cora_features.mtx"
#define SPMM "workloads/spmm.loom --data A=data/cora_adj.mtx"

Test(default_same, gcn_on_cora_run_campaign_and_navigation, .timeout = 120)
{
    if (!have_cora())
        cr_skip_test("data/cora_adj.mtx or data/cora_features.mtx is missing");
    char *why;
    cr_assert_str_eq(run_default_kind(GCN, &why), "space", "GCN's default is not the space's: %s", why);
    cr_assert_str_eq(why, "");
    free(why);
    char *dir = tmpdir();
    three_defaults(dir, "gcn", GCN);
    /* the kernel the issue measured: X.W with the constant trip count */
    char path[200];
    snprintf(path, sizeof path, "%s/gcn-run.c", dir);
    char *src = fx_slurp(path);
    cr_assert(src && !strstr(src, "f < W_d1"), "loom run still builds modules/default.c's X.W loop");
    free(src);
    rm_rf(dir);
}

Test(default_same, spmm_on_cora_run_campaign_and_navigation, .timeout = 120)
{
    if (!have_cora())
        cr_skip_test("data/cora_adj.mtx is missing");
    char *dir = tmpdir();
    three_defaults(dir, "spmm", SPMM " --param F=32");
    rm_rf(dir);
}

/* Attention has no default in the space (attention-fusion): loom run and
 * the campaign both take modules/default.c's, and say why; navigation says
 * its holes' defaults are the priors, not the default schedule. */
Test(default_same, attention_falls_back_alike, .timeout = 120)
{
    const char *args = "workloads/attention.loom --param N=64";
    char *why;
    cr_assert_str_eq(run_default_kind(args, &why), "modules/default.c");
    cr_assert(strstr(why, "attention-fusion") && strstr(why, "no default"), "why: %s", why);
    free(why);
    char *dir = tmpdir();
    char cmd[1200], db[200], tr[200], c[2][200];
    snprintf(c[0], sizeof c[0], "%s/run.c", dir);
    snprintf(c[1], sizeof c[1], "%s/tune.c", dir);
    snprintf(cmd, sizeof cmd, "%s run %s --target sim --emit-c %s >/dev/null", loom_bin(), args, c[0]);
    must(cmd);
    snprintf(db, sizeof db, "%s/db", dir);
    snprintf(tr, sizeof tr, "%s/default.json", dir);
    snprintf(cmd, sizeof cmd,
             "%s tune %s --target sim --trials 1 --batch 1 --pretrain 0 --remeasure 0 --db %s >/dev/null 2>&1",
             loom_bin(), args, db);
    must(cmd);
    first_record_trace(db, tr);
    snprintf(cmd, sizeof cmd, "%s run %s --target sim --trace %s --emit-c %s >/dev/null", loom_bin(), args, tr, c[1]);
    must(cmd);
    char *a = fx_slurp(c[0]), *b = fx_slurp(c[1]);
    cr_assert(a && b);
    cr_expect_str_eq(b, a, "attention: the campaign's default record and loom run's default differ");
    free(a);
    free(b);
    snprintf(cmd, sizeof cmd, "printf 'quit\\n' | %s navigate %s --target sim --no-consequences 2>&1", loom_bin(),
             args);
    int rc;
    char *out = run(cmd, &rc);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "the default schedule is not a schedule of this space (module attention-fusion"),
              "navigation does not say its defaults are not the default schedule: %s", out);
    free(out);
    rm_rf(dir);
}

/* loom_default_build's contract: both a space and limits is refused; no
 * space means the built-in default list shaped by the limits given (the
 * info carries them); attention's fallback names the module. */
#include "../runtime/machine/machine.h"
#include "../modules/module.h"

Test(default_same, loom_default_build_contract)
{
    loom_dataset *ds = NULL;
    const char *args[] = {"N=64"};
    loom_program *prog = fx_bind("workloads/attention.loom", args, 1, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    loom_error_clear(&err);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    cr_assert_eq(loom_space_new(reg, NULL, "cpu", &space, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_cpu_limits();
    lim.cores = 3;
    loom_default_info info;
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_default_build(space, &lim, sch, &info, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "not both"), "%s", err.msg);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_default_build(NULL, &lim, sch, &info, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(info.limits.cores, 3, "the limits given are not the ones used");
    cr_assert_eq(info.in_space, 0);
    cr_assert(strstr(info.why_not, "attention-fusion"), "why: %s", info.why_not);
    /* the same as modules/default.c's with those limits */
    loom_schedule *ref = malloc(sizeof *ref);
    cr_assert_eq(loom_schedule_init(ref, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_default_schedule_for(ref, &lim, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_schedule_hash(sch), loom_schedule_hash(ref));
    free(ref);
    free(sch);
    loom_space_free(space);
    loom_registry_free(reg);
    loom_program_free(prog);
    loom_dataset_free(ds);
}
