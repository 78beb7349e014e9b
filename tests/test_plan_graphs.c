/* Fusion plans on the larger GNN graphs (issue 16): `loom plan describe`
 * and `loom plan score` on Facebook (real features) and PubMed (its real
 * graph, SYNTHETIC features of its real shape from scripts/synth_features.py,
 * as the real ones are absent).  Each test skips when ../shared/data lacks
 * the graph. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHARED "../shared/data"

static int exists(const char *p) { return access(p, R_OK) == 0; }

static int run(const char *cmdline, char *out, size_t nout)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s 2>&1", cmdline);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, nout - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

/* `loom plan describe` of workload on data; the parsed JSON (cJSON_Delete it). */
static cJSON *describe(const char *workload, const char *data, const char *path)
{
    static char out[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s plan describe %s %s --out %s", loom_bin(), workload, data, path);
    cr_assert_eq(run(cmd, out, sizeof out), 0, "%s: %s", cmd, out);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    static char text[1 << 22];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    cJSON *d = cJSON_Parse(text);
    cr_assert_not_null(d, "describe output is not JSON");
    return d;
}

static const cJSON *input(const cJSON *d, const char *name)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(d, "inputs"))
    {
        if (!strcmp(cJSON_GetObjectItem(x, "name")->valuestring, name))
            return x;
    }
    cr_assert_fail("no input %s", name);
    return NULL;
}

/* The header line (rows cols entries) of a Matrix Market file. */
static void mtx_header(const char *path, long *r, long *c, long *nnz)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[4096];
    while (fgets(line, sizeof line, f) && line[0] == '%')
        ;
    cr_assert_eq(sscanf(line, "%ld %ld %ld", r, c, nnz), 3, "%s: %s", path, line);
    fclose(f);
}

/* The shapes and counts describe reports are the files', every fusion
 * choice is listed (2^fusable edges), and each plan has a cost. */
static void check_describe(const cJSON *d, const char *adj, const char *feat)
{
    long r, c, nnz;
    mtx_header(adj, &r, &c, &nnz);
    const cJSON *a = input(d, "A");
    cr_assert_eq((long)cJSON_GetArrayItem(cJSON_GetObjectItem(a, "shape"), 0)->valuedouble, r);
    cr_assert_eq((long)cJSON_GetObjectItem(a, "nnz")->valuedouble, nnz);
    mtx_header(feat, &r, &c, &nnz);
    const cJSON *x = input(d, "X");
    cr_assert_eq((long)cJSON_GetArrayItem(cJSON_GetObjectItem(x, "shape"), 0)->valuedouble, r);
    cr_assert_eq((long)cJSON_GetArrayItem(cJSON_GetObjectItem(x, "shape"), 1)->valuedouble, c);
    cr_assert_eq((long)cJSON_GetObjectItem(x, "nnz")->valuedouble, nnz);
    int fusable = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(d, "edges")) fusable += cJSON_IsTrue(cJSON_GetObjectItem(e, "fusable"));
    cr_assert_gt(fusable, 0);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d, "plans")), 1 << fusable);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(d, "plans"))
    {
        cr_assert_gt(cJSON_GetObjectItem(e, "flops")->valuedouble, 0);
        cr_assert_gt(cJSON_GetObjectItem(e, "bytes")->valuedouble, 0);
    }
}

/* Score the first plan of describe's enumeration (the cheapest by roofline). */
static void score_first(const cJSON *d, const char *workload, const char *data, const char *dir)
{
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "plans"), 0);
    cJSON *plan = cJSON_CreateObject(), *groups = cJSON_AddArrayToObject(plan, "fusion_groups");
    cJSON_AddStringToObject(plan, "name", "first");
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(p, "fusion_groups"))
    {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", cJSON_GetObjectItem(g, "name")->valuestring);
        cJSON_AddItemToObject(x, "ops", cJSON_Duplicate(cJSON_GetObjectItem(g, "ops"), 1));
        cJSON_AddItemToArray(groups, x);
    }
    char path[300], cmd[2048];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    FILE *f = fopen(path, "w");
    char *txt = cJSON_Print(plan);
    fputs(txt, f);
    fclose(f);
    free(txt);
    cJSON_Delete(plan);
    static char out[1 << 16];
    snprintf(cmd, sizeof cmd, "%s plan score %s %s %s --fills 1 --pretrain 3 --json", loom_bin(), path, workload, data);
    cr_assert_eq(run(cmd, out, sizeof out), 0, "%s: %s", cmd, out);
    cJSON *s = cJSON_Parse(out);
    cr_assert_not_null(s, "%s", out);
    const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "plans"), 0);
    cr_assert_eq(cJSON_GetObjectItem(r, "valid_fills")->valueint, 1, "%s", out);
    cr_assert_gt(cJSON_GetObjectItem(r, "simulated_s")->valuedouble, 0, "%s", out);
    cr_assert(isfinite(cJSON_GetObjectItem(r, "model_score")->valuedouble), "%s", out);
    cJSON_Delete(s);
}

static void cleanup(const char *dir)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(plan_graphs, facebook_real_features, .timeout = 900)
{
    const char *adj = SHARED "/facebook/facebook_adj.mtx", *feat = SHARED "/facebook/facebook_features.mtx";
    if (!exists(adj) || !exists(feat))
        cr_skip_test("%s or %s absent (../shared/data not present): skipped", adj, feat);
    char dir[] = "/tmp/loom-plan-graphs-XXXXXX", path[300], data[600];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/describe.json", dir);
    snprintf(data, sizeof data, "--data A=%s --data X=%s --param C=4", adj, feat);
    cJSON *d = describe("workloads/sage2.loom", data, path);
    check_describe(d, adj, feat);
    cJSON_Delete(d);
    d = describe("workloads/gcn2.loom", data, path);
    check_describe(d, adj, feat);
    score_first(d, "workloads/gcn2.loom", data, dir);
    cJSON_Delete(d);
    cleanup(dir);
}

Test(plan_graphs, pubmed_synthetic_features, .timeout = 900)
{
    const char *adj = SHARED "/pubmed/pubmed_adj.mtx";
    if (!exists(adj))
        cr_skip_test("%s absent (../shared/data not present): skipped", adj);
    char dir[] = "/tmp/loom-plan-graphs-XXXXXX", path[300], feat[300], data[800], cmd[1200];
    static char out[1 << 16];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(feat, sizeof feat, "%s/pubmed_features_synthetic.mtx", dir);
    snprintf(cmd, sizeof cmd, "python3 scripts/synth_features.py 19717 500 0.10 %s --seed 1", feat);
    cr_assert_eq(run(cmd, out, sizeof out), 0, "%s: %s", cmd, out);
    cr_assert(strstr(out, "SYNTHETIC"), "%s", out);
    /* the file says what it is */
    FILE *f = fopen(feat, "r");
    char line[512], line2[512];
    cr_assert(f && fgets(line, sizeof line, f) && fgets(line2, sizeof line2, f));
    fclose(f);
    cr_assert(strstr(line2, "SYNTHETIC"), "%s", line2);
    snprintf(path, sizeof path, "%s/describe.json", dir);
    snprintf(data, sizeof data, "--data A=%s --data X=%s --param C=3", adj, feat);
    cJSON *d = describe("workloads/gcn2.loom", data, path);
    check_describe(d, adj, feat);
    const cJSON *x = input(d, "X");
    double dens = cJSON_GetObjectItem(x, "density")->valuedouble;
    cr_assert(dens > 0.09 && dens < 0.11, "PubMed's density is about 10%%, the synthetic one %g", dens);
    cJSON_Delete(d);
    d = describe("workloads/sage2.loom", data, path);
    check_describe(d, adj, feat);
    score_first(d, "workloads/sage2.loom", data, dir);
    cJSON_Delete(d);
    cleanup(dir);
}
