/* A whole model shipped as one library (ship/model_ship.h, `loom replay
 * MODEL --emit-lib NAME`): the GCN on cora500, tuned briefly on the
 * simulator, shipped with every task's record, dlopen'd, its forward pass
 * called on the model's inputs and compared with the reference forward pass
 * (the reference interpreter of every call along the feeds, in double);
 * each kernel's own entry is exported too; bad names and the CLI. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../runtime/measure/reference.h"
#include "../search/model/model.h"
#include "../ship/model_ship.h"
#include "fixture.h"

static char dir_[256];

static void mk(void) { fx_tmpdir(dir_, sizeof dir_, "modelship"); }

static void rm(void) { fx_rmtree(dir_); }

TestSuite(model_ship, .init = mk, .fini = rm);

static loom_model *load(const char *path)
{
    loom_model *m = NULL;
    loom_error err;
    cr_assert_eq(loom_model_load(path, 1, &m, &err), LOOM_OK, "%s:%d: %s", err.file, err.line, err.msg);
    return m;
}

/* The reference forward pass's output (call out_call's tensor out_t), in
 * double: every call's reference on its inputs, fed ones taken from the
 * earlier calls' reference outputs (rounded to float, as a kernel's are).
 * Overwrites the fed inputs of m's data sets.  Returns malloc'd values. */
static double *reference_forward(loom_model *m, int out_call, int out_t, int64_t *n)
{
    loom_reference **ref = calloc((size_t)m->ncalls, sizeof *ref);
    cr_assert_not_null(ref);
    for (int k = 0; k < m->ncalls; k++) {
        for (int f = 0; f < m->nfeeds; f++) {
            const loom_model_feed *fd = &m->feeds[f];
            if (fd->dst != k)
                continue;
            loom_tensor_abi *dst = &m->calls[k].ds->t[fd->dst_tensor];
            const double *src = ref[fd->src]->vals[fd->src_tensor];
            cr_assert_eq(ref[fd->src]->nvals[fd->src_tensor], dst->nnz);
            for (int64_t i = 0; i < dst->nnz; i++)
                dst->vals[i] = (float)src[i];
        }
        loom_error e;
        cr_assert_eq(loom_reference_run(m->calls[k].ds, &ref[k], &e), LOOM_OK, "%s", e.msg);
    }
    *n = ref[out_call]->nvals[out_t];
    double *v = malloc(sizeof *v * (size_t)*n);
    cr_assert_not_null(v);
    memcpy(v, ref[out_call]->vals[out_t], sizeof *v * (size_t)*n);
    for (int k = 0; k < m->ncalls; k++)
        loom_reference_free(ref[k]);
    free(ref);
    return v;
}

/* The GCN model's entry: per call, the arrays of its non-fed inputs, then the output. */
typedef int (*gcn_fn)(const int32_t *, const int32_t *, const float *, const float *, const int32_t *,
                      const int32_t *, const float *, const float *, const int32_t *, const int32_t *,
                      const float *, float *);

static int tensor_of(const loom_model *m, int call, const char *name)
{
    const loom_program *p = m->calls[call].prog;
    for (int t = 0; t < p->ntensors; t++)
        if (!strcmp(p->tensors[t].name, name))
            return t;
    cr_assert_fail("call %s has no tensor %s", m->calls[call].name, name);
    return -1;
}

/* Call the shipped forward pass on m's inputs; returns the output (malloc'd). */
static float *call_gcn(void *so, const char *name, const loom_model *m, int64_t nout)
{
    gcn_fn fn = (gcn_fn)(uintptr_t)dlsym(so, name);
    cr_assert_not_null(fn, "%s is not exported", name);
    const loom_tensor_abi *X = &m->calls[0].ds->t[tensor_of(m, 0, "A")], *W1 = &m->calls[0].ds->t[tensor_of(m, 0, "B")];
    const loom_tensor_abi *A1 = &m->calls[1].ds->t[tensor_of(m, 1, "A")], *W2 = &m->calls[2].ds->t[tensor_of(m, 2, "B")];
    const loom_tensor_abi *A2 = &m->calls[3].ds->t[tensor_of(m, 3, "A")];
    float *out = malloc(sizeof *out * (size_t)nout);
    cr_assert_not_null(out);
    for (int64_t i = 0; i < nout; i++)
        out[i] = NAN;
    int rc = fn(X->pos[1], X->crd[1], X->vals, W1->vals, A1->pos[1], A1->crd[1], A1->vals, W2->vals, A2->pos[1],
                A2->crd[1], A2->vals, out);
    cr_assert_eq(rc, 0, "the forward pass returned %d", rc);
    return out;
}

static void assert_close(const float *got, const double *ref, int64_t n)
{
    double scale = 0;
    for (int64_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(ref[i]));
    cr_assert_gt(scale, 0, "the reference output is all zero: nothing is compared");
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - ref[i]) <= 1e-4 * scale, "output[%lld] = %g, reference %g", (long long)i, got[i],
                  ref[i]);
}

Test(model_ship, tuned_gcn_ships_as_one_library_that_matches_the_reference, .timeout = 300)
{
    loom_model *m = load("models/gcn2_cora500.model");
    char db[300];
    snprintf(db, sizeof db, "%s/db", dir_);
    loom_model_tune_opts o = loom_model_tune_defaults();
    o.tune.db_dir = db;
    o.tune.target = "sim:spr-2c";
    o.tune.batch = 4;
    o.tune.remeasure_rounds = 0;
    o.tune.search.threads = 2;
    o.trials = 16;
    loom_model_tune_result tr;
    loom_error err;
    cr_assert_eq(loom_model_tune(m, &o, &tr, &err), LOOM_OK, "%s", err.msg);
    loom_model_tune_result_free(&tr);

    loom_model_ship_result r;
    cr_assert_eq(loom_model_ship(m, db, "sim:spr-2c", "gcnt", dir_, 1, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.from_records, m->ntasks, "every task was tuned, %d shipped a record", r.from_records);
    for (int k = 0; k < m->ntasks; k++)
        cr_assert_gt(r.tasks[k].record_line, 0);
    cr_assert_str_eq(r.tasks[0].kernel, "gcnt_xw1");
    loom_model_ship_result_free(&r);

    char so_path[400];
    snprintf(so_path, sizeof so_path, "%s/libgcnt.so", dir_);
    void *so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(so, "%s", dlerror());
    /* each kernel's own entries and the model's signature */
    for (const char *k = "gcnt_xw1\0gcnt_agg1\0gcnt_hw2\0gcnt_agg2\0gcnt_xw1_abi\0gcnt_agg2_signature\0"; *k;
         k += strlen(k) + 1)
        cr_assert_not_null(dlsym(so, k), "%s is not exported", k);
    const char *sig = dlsym(so, "gcnt_signature");
    cr_assert_not_null(sig);
    cJSON *j = cJSON_Parse(sig);
    cr_assert_not_null(j, "the signature is not JSON: %s", sig);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "kind")->valuestring, "model");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "calls")), 4);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "kernels")), 4);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "tensors")), 6, "X, W1, A, W2, A and the output");
    cr_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "outputs"), 0)->valuestring, "agg2_H");
    cJSON_Delete(j);

    int oc = m->outputs[0].call, ot = m->outputs[0].tensor;
    int64_t n;
    double *ref = reference_forward(m, oc, ot, &n);
    cr_assert_eq(n, 500 * 7);
    float *got = call_gcn(so, "gcnt", m, n);
    assert_close(got, ref, n);
    free(got);
    free(ref);
    dlclose(so);
    loom_model_free(m);
}

Test(model_ship, refuses_names_whose_kernels_do_not_fit)
{
    loom_model *m = load("models/gcn2_cora500.model");
    loom_model_ship_result r;
    loom_error err;
    cr_assert_eq(loom_model_ship(m, NULL, NULL, "a_name_of_thirty_seven_characters_xx", dir_, 0, &r, &err),
                 LOOM_ERR_INVALID);
    cr_assert_not_null(strstr(err.msg, "longer than 40"), "%s", err.msg);
    cr_assert_eq(loom_model_ship(m, NULL, NULL, "loom_x", dir_, 0, &r, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_model_ship(m, NULL, NULL, "ok", "/nonexistent/dir", 0, &r, &err), LOOM_ERR_IO);
    loom_model_free(m);
}

static const char *loom_bin(void)
{
    const char *b = getenv("LOOM_BIN");
    return b ? b : "build/loom";
}

Test(model_ship, cli_ships_the_default_kernels_without_a_database, .timeout = 120)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s replay models/gcn2_cora500.model --emit-lib gcnd --lib-dir %s > %s/out.txt 2>&1",
             loom_bin(), dir_, dir_);
    int st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d", WEXITSTATUS(st));
    char p[400];
    for (const char *f = "libgcnd.so\0gcnd.c\0gcnd.h\0gcnd_agg1.c\0gcnd_hw2.h\0"; *f; f += strlen(f) + 1) {
        snprintf(p, sizeof p, "%s/%s", dir_, f);
        cr_assert_eq(access(p, F_OK), 0, "%s was not written", p);
    }
    snprintf(cmd, sizeof cmd, "%s replay models/gcn2_cora500.model --db %s/none --emit-lib gcnd --lib-dir %s 2>/dev/null",
             loom_bin(), dir_, dir_);
    st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "a missing database: exit %d", WEXITSTATUS(st));
}
