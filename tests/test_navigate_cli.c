/* `loom navigate` (issue 18): a full --json session and a terminal session
 * through a pseudo-terminal (util-linux `script`), each ending with a saved
 * trace that `loom validate` accepts and `loom run --trace` runs correctly. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SPMM "workloads/spmm.loom --data A=data/cora500_adj.mtx --param F=4"

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

/* Run a shell command; its stdout+stderr into a malloc'd string. */
static char *run(const char *cmd, int *rc)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    size_t got;
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 4096) {
            cap *= 2;
            out = realloc(out, cap);
        }
    }
    out[len] = 0;
    int st = pclose(p);
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

/* The saved trace validates and runs correctly. */
static void check_saved(const char *file)
{
    char cmd[1024];
    int rc;
    snprintf(cmd, sizeof cmd, "%s validate %s %s 2>&1", loom_bin(), file, SPMM);
    char *out = run(cmd, &rc);
    cr_assert_eq(rc, 0, "loom validate: %s", out);
    cr_assert(strstr(out, "valid"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s run %s --trace %s 2>&1", loom_bin(), SPMM, file);
    out = run(cmd, &rc);
    cr_assert_eq(rc, 0, "loom run --trace: %s", out);
    cr_assert(strstr(out, "correct    yes"), "%s", out);
    free(out);
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static cJSON *response(char **cursor)
{
    char *line = *cursor, *nl = strchr(line, '\n');
    cr_assert_not_null(nl, "a response is missing; output so far: %s", line);
    *nl = 0;
    *cursor = nl + 1;
    cJSON *r = cJSON_Parse(line);
    cr_assert_not_null(r, "not JSON: %s", line);
    return r;
}

static int ok(const cJSON *r) { return cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")); }

static const cJSON *state(const cJSON *r) { return cJSON_GetObjectItem(r, "state"); }

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    cr_assert(cJSON_IsNumber(v), "no number %s", k);
    return v->valuedouble;
}

/* The decided flag of hole number h in a state. */
static int decided(const cJSON *st, int h)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(st, "holes")) if ((int)num(x, "hole") == h) return cJSON_IsTrue(
        cJSON_GetObjectItem(x, "decided"));
    cr_assert_fail("no hole %d", h);
    return 0;
}

Test(navigate_cli, json_session, .timeout = 300)
{
    char dir[] = "/tmp/loom_nav_jsonXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char req[512], saved[600], cmd[2048];
    snprintf(req, sizeof req, "%s/req.jsonl", dir);
    snprintf(saved, sizeof saved, "%s/saved.json", dir);
    FILE *f = fopen(req, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"cmd\": \"state\"}\n"
               "{\"cmd\": \"pick\", \"choice\": 2}\n"
               "{\"cmd\": \"default\"}\n"
               "{\"cmd\": \"undo\"}\n"
               "{\"cmd\": \"goto\", \"hole\": 6}\n"
               "{\"cmd\": \"show\"}\n"
               "{\"cmd\": \"pick\", \"choice\": 99}\n"
               "this is not json\n"
               "{\"cmd\": \"tune\", \"trials\": 16}\n"
               "{\"cmd\": \"save\", \"file\": \"%s\"}\n"
               "{\"cmd\": \"quit\"}\n",
            saved);
    fclose(f);
    /* --enum-limit: SpMM F = 4 has about 30000 completions since issue 13's
     * three-way register tile (the default limit is 20000) */
    snprintf(cmd, sizeof cmd, "%s navigate %s --target sim:spr-2c --enum-limit 100000 --db %s/db --json < %s 2>/dev/null", loom_bin(),
             SPMM, dir, req);
    int rc;
    char *out = run(cmd, &rc), *cur = out;
    cr_assert_eq(rc, 0, "%s", out);
    /* state: ?1 current, an exact count, a menu with one default */
    cJSON *r = response(&cur);
    cr_assert(ok(r));
    const cJSON *st = state(r);
    cr_assert_eq(num(st, "current"), 1);
    cr_assert_str_eq(cJSON_GetObjectItem(st, "method")->valuestring, "enumeration");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(st, "size_exact")));
    double size0 = num(st, "size");
    cr_assert_gt(size0, 100);
    int ndef = 0, nmenu = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(st, "menu"))
    {
        nmenu++;
        ndef += cJSON_IsTrue(cJSON_GetObjectItem(m, "default"));
        cr_assert_gt(num(m, "sim_latency_s"), 0);
    }
    cr_assert_geq(nmenu, 2);
    cr_assert_eq(ndef, 1);
    /* ?1 is SpMM's loop order: each entry names its loops, outermost first */
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(st, "menu"))
    {
        const cJSON *mean = cJSON_GetObjectItem(m, "meaning");
        cr_assert(cJSON_IsString(mean), "no meaning: %s", cJSON_PrintUnformatted(m));
        const char *t = mean->valuestring;
        cr_assert(t[0] == '[' && strstr(t, "i") && strstr(t, "k") && strstr(t, "f"), "not an order of i, k, f: %s", t);
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(m, "estimated")));
    }
    cr_assert_not_null(strstr(cJSON_GetObjectItem(st, "context")->valuestring, "loops i ("));
    cJSON_Delete(r);
    /* pick 2: ?1 decided, the space shrinks */
    r = response(&cur);
    cr_assert(ok(r));
    cr_assert(decided(state(r), 1));
    double size1 = num(state(r), "size");
    cr_assert_lt(size1, size0);
    cr_assert_eq(num(state(r), "current"), 2);
    cJSON_Delete(r);
    /* default: ?2 decided */
    r = response(&cur);
    cr_assert(ok(r));
    cr_assert(decided(state(r), 2));
    cJSON_Delete(r);
    /* undo: ?2 open again, the same size as after the pick */
    r = response(&cur);
    cr_assert(ok(r));
    cr_assert(!decided(state(r), 2));
    cr_assert_eq(num(state(r), "size"), size1);
    cJSON_Delete(r);
    /* goto ?6 */
    r = response(&cur);
    cr_assert(ok(r), "%s", cJSON_PrintUnformatted(r));
    cr_assert_eq(num(state(r), "current"), 6);
    cJSON_Delete(r);
    /* show: C code */
    r = response(&cur);
    cr_assert(ok(r));
    cr_assert_not_null(strstr(cJSON_GetObjectItem(r, "code")->valuestring, "kernel"));
    cJSON_Delete(r);
    /* a choice out of range is refused, the state unchanged */
    r = response(&cur);
    cr_assert(!ok(r));
    /* numbered as the menu is, from 1 */
    cr_assert_not_null(strstr(cJSON_GetObjectItem(r, "error")->valuestring, "choice 99 out of range 1.."), "%s",
                       cJSON_GetObjectItem(r, "error")->valuestring);
    cr_assert_eq(num(state(r), "size"), size1);
    cJSON_Delete(r);
    /* not JSON */
    r = response(&cur);
    cr_assert(!ok(r));
    cJSON_Delete(r);
    /* tune 16: the best schedule of the pinned campaign becomes the state */
    r = response(&cur);
    cr_assert(ok(r), "%s", cJSON_PrintUnformatted(r));
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(state(r), "complete")));
    cr_assert(decided(state(r), 1));
    cr_assert_gt(num(r, "best_latency_s"), 0);
    cJSON_Delete(r);
    /* save, quit */
    r = response(&cur);
    cr_assert(ok(r));
    cJSON_Delete(r);
    r = response(&cur);
    cr_assert(ok(r));
    cJSON_Delete(r);
    free(out);
    /* a partial trace: tune adopted the campaign's best, so every hole is decided and pinned */
    char *text = NULL;
    {
        FILE *g = fopen(saved, "r");
        cr_assert_not_null(g);
        text = calloc(1, 1 << 20);
        cr_assert_gt(fread(text, 1, (1 << 20) - 1, g), 0);
        fclose(g);
    }
    cr_assert_not_null(strstr(text, "\"pinned\": ["));
    free(text);
    check_saved(saved);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(navigate_cli, terminal_session_through_a_pty, .timeout = 300)
{
    int rc;
    char *which = run("command -v script", &rc);
    free(which);
    if (rc != 0)
        cr_skip_test("util-linux `script` is not installed");
    char dir[] = "/tmp/loom_nav_ptyXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char cmd[2048];
    /* the commands are typed into the pseudo-terminal one by one */
    snprintf(cmd, sizeof cmd,
             "(sleep 1; for c in 99 0 2 default 'goto ?5' 1 'tune 16' 'save %s/saved.json' quit; do echo \"$c\"; sleep "
             "1; done) | script -qfec \"%s navigate %s --target sim:spr-2c --db %s/db\" /dev/null 2>&1",
             dir, loom_bin(), SPMM, dir);
    char *out = run(cmd, &rc);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "(help lists the commands)"), "not a terminal session? %s", out);
    cr_assert_not_null(strstr(out, "<-- current"), "%s", out);
    cr_assert_not_null(strstr(out, "<- default"), "%s", out);
    cr_assert_not_null(strstr(out, "?1 = 1"), "the pick is not in the sketch: %s", out);
    /* the order menu names the loops; the tiles name their loop */
    cr_assert_not_null(strstr(out, "[1] [i, k, f]"), "the loop order menu does not name the loops: %s", out);
    cr_assert_not_null(strstr(out, "loops i (500), k (500, sparse), f (4)"), "%s", out);
    /* an entry out of range is refused in the menu's numbers (1-based) */
    cr_assert_not_null(strstr(out, "error: choice 99 out of range 1.."), "%s", out);
    cr_assert_not_null(strstr(out, "error: choice 0 out of range 1.."), "%s", out);
    cr_assert_not_null(strstr(out, "tune: best"), "%s", out);
    cr_assert_not_null(strstr(out, "every hole is decided"), "%s", out);
    cr_assert_not_null(strstr(out, "saved "), "%s", out);
    cr_assert_eq(count_of(out, "error:"), 2, "only the two refused choices: %s", out);
    free(out);
    char saved[600];
    snprintf(saved, sizeof saved, "%s/saved.json", dir);
    check_saved(saved);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Issue 27: every entry of a menu says what it decides and carries an
 * estimate up to --estimate-limit (the default's always; past the limit an
 * even sample, the others marked not estimated); "slowdown" is the
 * estimate over the default's and "slow" marks 3x or more. */
Test(navigate_cli, menus_speak_and_estimate, .timeout = 300)
{
    char dir[] = "/tmp/loom_nav_menusXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char req[512], cmd[2048];
    snprintf(req, sizeof req, "%s/req.jsonl", dir);
    FILE *f = fopen(req, "w");
    cr_assert_not_null(f);
    /* F = 16: the loop order, then f's four-way tiling (35 entries) */
    fprintf(f, "{\"cmd\": \"pick\", \"choice\": 1}\n{\"cmd\": \"pick\", \"choice\": 1}\n{\"cmd\": \"quit\"}\n");
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s navigate workloads/spmm.loom --data A=data/cora500_adj.mtx --param F=16 --target sim:spr-2c "
             "--estimate-limit 8 --json < %s 2>/dev/null",
             loom_bin(), req);
    int rc;
    char *out = run(cmd, &rc), *cur = out;
    cr_assert_eq(rc, 0, "%s", out);
    int tiles = 0, cats = 0;
    for (int step = 0; step < 2; step++) {
        cJSON *r = response(&cur);
        cr_assert(ok(r), "%s", cJSON_PrintUnformatted(r));
        const cJSON *st = state(r), *m;
        int n = 0, est = 0, def_est = 0;
        double def_lat = 0;
        cJSON_ArrayForEach(m, cJSON_GetObjectItem(st, "menu")) if (cJSON_IsTrue(cJSON_GetObjectItem(m, "default")))
            def_lat = cJSON_IsTrue(cJSON_GetObjectItem(m, "estimated")) ? num(m, "sim_latency_s") : 0;
        cJSON_ArrayForEach(m, cJSON_GetObjectItem(st, "menu"))
        {
            n++;
            const char *mean = cJSON_GetObjectItem(m, "meaning")->valuestring;
            const cJSON *v = cJSON_GetObjectItem(m, "value");
            if (cJSON_IsArray(v)) { /* a tiling: "f: a x b x c x d", the tuple's own numbers */
                tiles++;
                char want[64];
                snprintf(want, sizeof want, "f: %d x %d x %d x %d", cJSON_GetArrayItem(v, 0)->valueint,
                         cJSON_GetArrayItem(v, 1)->valueint, cJSON_GetArrayItem(v, 2)->valueint,
                         cJSON_GetArrayItem(v, 3)->valueint);
                cr_assert_str_eq(mean, want);
            } else if (strstr(mean, "positions")) {
                cats++; /* the position split's chunk, in its loop's words */
                cr_assert(strstr(mean, "split k's positions"), "%s", mean);
            }
            if (!cJSON_IsTrue(cJSON_GetObjectItem(m, "estimated")))
                continue;
            est++;
            def_est |= cJSON_IsTrue(cJSON_GetObjectItem(m, "default"));
            double lat = num(m, "sim_latency_s"), slow = num(m, "slowdown");
            cr_assert_gt(def_lat, 0);
            cr_assert_float_eq(slow, lat / def_lat, 1e-9 * slow);
            cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItem(m, "slow")), lat >= 3 * def_lat);
        }
        cr_assert_eq(est, (int)num(st, "estimated"));
        cr_assert(def_est, "the default is always estimated");
        if (n > 8)
            cr_assert(est >= 8 && est <= 9, "an even sample of 8 (and the default): %d of %d", est, n);
        else
            cr_assert_eq(est, n, "a menu within the limit is estimated whole");
        cJSON_Delete(r);
    }
    cr_assert_gt(tiles + cats, 0, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
