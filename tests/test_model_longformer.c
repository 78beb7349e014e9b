/* The Longformer-style layer as a model (models/longformer128.model: Q/K/V
 * projections, the windowed attention of 8 heads, the output projection with
 * the residual, two layernorms and the ReLU feed-forward block, sequence
 * 128): its tasks and weights, its forward pass against the reference forward
 * pass, and -- independently of the model's dataflow and the reference
 * interpreter -- against a direct double-precision implementation of the
 * layer written here from the calls' own inputs (which also checks that a
 * feed splits an N x 256 row into 8 heads of 32). Feeds that reshape. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../search/model/model.h"
#include "../ship/model_run.h"
#include "fixture.h"

enum { N = 128, E = 256, HEADS = 8, DH = 32, FF = 1024, WIN = 64 };

static loom_model *load(const char *path)
{
    loom_model *m = NULL;
    loom_error err;
    cr_assert_eq(loom_model_load(path, 1, &m, &err), LOOM_OK, "%s:%d: %s", err.file, err.line, err.msg);
    return m;
}

static int call_of(const loom_model *m, const char *name)
{
    for (int k = 0; k < m->ncalls; k++)
        if (!strcmp(m->calls[k].name, name))
            return k;
    cr_assert_fail("no call %s", name);
    return -1;
}

/* Call `call`'s tensor `t`: its values (as the forward pass left them) and
 * their count. */
static const float *vals(const loom_model *m, const char *call, const char *t, int64_t want)
{
    const loom_model_call *c = &m->calls[call_of(m, call)];
    int i = loom_program_find_tensor(c->prog, t);
    cr_assert_geq(i, 0, "%s has no tensor %s", call, t);
    cr_assert_eq(c->ds->t[i].nnz, want, "%s.%s holds %lld values, not %lld", call, t, (long long)c->ds->t[i].nnz,
                 (long long)want);
    return c->ds->t[i].vals;
}

/* y = x w + b (x n x k, w k x f), then relu when asked. */
static void linear(const float *x, const float *w, const float *b, int n, int k, int f, int relu, double *y)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < f; j++) {
            double s = b[j];
            for (int p = 0; p < k; p++)
                s += (double)x[i * k + p] * w[p * f + j];
            y[i * f + j] = relu && s < 0 ? 0 : s;
        }
}

static void layernorm(const double *y, const float *g, const float *b, double *z)
{
    for (int i = 0; i < N; i++) {
        double mu = 0, var = 0;
        for (int j = 0; j < E; j++)
            mu += y[i * E + j] / E;
        for (int j = 0; j < E; j++)
            var += (y[i * E + j] - mu) * (y[i * E + j] - mu) / E;
        for (int j = 0; j < E; j++)
            z[i * E + j] = (y[i * E + j] - mu) / sqrt(var + 1e-5) * g[j] + b[j];
    }
}

static int masked(int i, int j)
{
    return abs(i - j) <= WIN || i == 0 || j == 0;
}

/* Head h of query i over the mask: softmax(q k^T / sqrt(32)) v, into o. */
static void attend(const double *q, const double *k, const double *v, int h, int i, double *o)
{
    double mx = -INFINITY, l = 0, s[N];
    for (int j = 0; j < N; j++) {
        s[j] = -INFINITY;
        if (!masked(i, j))
            continue;
        s[j] = 0;
        for (int d = 0; d < DH; d++)
            s[j] += q[i * E + h * DH + d] * k[j * E + h * DH + d];
        s[j] /= sqrt(DH);
        mx = fmax(mx, s[j]);
    }
    for (int d = 0; d < DH; d++)
        o[i * E + h * DH + d] = 0;
    for (int j = 0; j < N; j++) {
        if (!masked(i, j))
            continue;
        double p = exp(s[j] - mx);
        l += p;
        for (int d = 0; d < DH; d++)
            o[i * E + h * DH + d] += p * v[j * E + h * DH + d];
    }
    for (int d = 0; d < DH; d++)
        o[i * E + h * DH + d] /= l;
}

/* The layer in double from the calls' own inputs (each call's generated X,
 * weights and biases); returns its output, N x E, malloc'd. */
static double *direct_layer(const loom_model *m)
{
    double *q = malloc(sizeof(double) * N * E), *k = malloc(sizeof(double) * N * E),
           *v = malloc(sizeof(double) * N * E), *o = malloc(sizeof(double) * N * E),
           *y = malloc(sizeof(double) * N * E), *z = malloc(sizeof(double) * N * E),
           *h = malloc(sizeof(double) * N * FF);
    float *zf = malloc(sizeof(float) * N * FF), *of = malloc(sizeof(float) * N * E);
    cr_assert(q && k && v && o && y && z && h && zf && of);
    const char *qkv[3] = {"q", "k", "v"};
    double *dst[3] = {q, k, v};
    for (int t = 0; t < 3; t++)
        linear(vals(m, qkv[t], "X", N * E), vals(m, qkv[t], "W", E * E), vals(m, qkv[t], "b", E), N, E, E, 0, dst[t]);
    for (int hh = 0; hh < HEADS; hh++)
        for (int i = 0; i < N; i++)
            attend(q, k, v, hh, i, o);
    for (int i = 0; i < N * E; i++)
        of[i] = (float)o[i];
    const float *x = vals(m, "o", "R", N * E);
    linear(of, vals(m, "o", "W", E * E), vals(m, "o", "b", E), N, E, E, 0, y);
    for (int i = 0; i < N * E; i++)
        y[i] += x[i];
    layernorm(y, vals(m, "ln1", "g", E), vals(m, "ln1", "b", E), z); /* z = Y1 */
    for (int i = 0; i < N * E; i++)
        zf[i] = (float)z[i];
    linear(zf, vals(m, "ff1", "W", E * FF), vals(m, "ff1", "b", FF), N, E, FF, 1, h);
    for (int i = 0; i < N * FF; i++)
        zf[i] = (float)h[i];
    linear(zf, vals(m, "ff2", "W", FF * E), vals(m, "ff2", "b", E), N, FF, E, 0, y);
    for (int i = 0; i < N * E; i++)
        y[i] += z[i];
    layernorm(y, vals(m, "ln2", "g", E), vals(m, "ln2", "b", E), o);
    free(q), free(k), free(v), free(y), free(z), free(h), free(zf), free(of);
    return o;
}

static int task_weight(const loom_model *m, const char *call)
{
    return m->tasks[m->calls[call_of(m, call)].task].weight;
}

Test(model_longformer, the_layer_is_nine_calls_of_six_tasks)
{
    loom_model *m = load("models/longformer128.model");
    cr_assert_eq(m->ncalls, 9);
    cr_assert_eq(m->ntasks, 6, "q/k/v are one task and so are the two layernorms: %d tasks", m->ntasks);
    cr_assert_eq(task_weight(m, "q"), 3);
    cr_assert_eq(m->calls[call_of(m, "k")].task, m->calls[call_of(m, "q")].task);
    cr_assert_eq(task_weight(m, "ln2"), 2);
    cr_assert_eq(task_weight(m, "attn"), 1);
    cr_assert_neq(m->calls[call_of(m, "o")].task, m->calls[call_of(m, "ff2")].task,
                  "the output projection (F=256) and the FFN's second product (F=1024) are different tasks");
    cr_assert_eq(m->noutputs, 1);
    loom_model_free(m);
}

Test(model_longformer, the_layer_runs_end_to_end_and_equals_a_direct_implementation, .timeout = 300)
{
    loom_model *m = load("models/longformer128.model");
    loom_model_run_opts o = loom_model_run_defaults();
    o.run.measure.min_seconds = 0.002;
    o.run.measure.time_limit = 60;
    loom_model_run_result r;
    loom_error err;
    cr_assert_eq(loom_model_run(m, &o, &r, &err), LOOM_OK, "%s", err.msg);
    for (int k = 0; k < m->ncalls; k++)
        cr_assert(r.calls[k].status == LOOM_OK && r.calls[k].correct, "call %s: %s (error %g, tolerance %g)",
                  m->calls[k].name, r.calls[k].message, r.calls[k].max_rel_err, r.calls[k].tol);
    cr_assert(r.correct, "against the reference forward pass: %g > %g", r.max_rel_err, r.tol);
    double *want = direct_layer(m);
    const float *got = vals(m, "ln2", "Z", N * E);
    double maxref = 0, maxdiff = 0;
    for (int i = 0; i < N * E; i++) {
        maxref = fmax(maxref, fabs(want[i]));
        maxdiff = fmax(maxdiff, fabs(want[i] - got[i]));
    }
    cr_assert_gt(maxref, 0);
    cr_assert_lt(maxdiff / maxref, 1e-4, "the layer's output differs from the direct one by %g (relative to %g)",
                 maxdiff, maxref);
    free(want);
    loom_model_run_result_free(&r);
    loom_model_free(m);
}

/* A feed may split or merge the dimensions after the first, never change
 * the first (a transpose-shaped reshape would silently scramble rows). */
Test(model_longformer, a_feed_keeps_the_first_dimension_and_the_element_count)
{
    char dir[] = "/tmp/loom-lformer-XXXXXX", path[300], root[1024];
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_not_null(getcwd(root, sizeof root));
    const char *bad[] = {"-p N=256", "-p N=128 -p F=512"};
    for (int b = 0; b < 2; b++) {
        snprintf(path, sizeof path, "%s/m%d.model", dir, b);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fprintf(f,
                "task q %s/models/longformer/lf_linear.loom -p N=128\n"
                "task o %s/models/longformer/lf_residual.loom %s\n"
                "feed q.Y -> o.H\n",
                root, root, bad[b]);
        fclose(f);
        loom_model *m = NULL;
        loom_error err;
        cr_assert_eq(loom_model_load(path, 1, &m, &err), LOOM_ERR_SEMANTIC, "%s accepted", bad[b]);
        cr_assert_not_null(strstr(err.msg, "shapes differ: q.Y is 128x256"), "%s", err.msg);
        cr_assert_eq(err.line, 3);
    }
    cr_assert_eq(remove(path), 0);
    snprintf(path, sizeof path, "%s/m0.model", dir);
    cr_assert_eq(remove(path), 0);
    cr_assert_eq(rmdir(dir), 0);
}
