/* Transformation modules (modules/module.h): the registry, design spaces,
 * the share of valid traces each workload's space samples, the Scorch
 * analysis, the default schedule (valid, replays, correct), and a user
 * module built out of tree against `make install` and loaded with
 * `loom sample --module`. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../modules/module.h"
#include "../runtime/measure/batch.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "../dsl/schedule/query.h"
#include "../runtime/machine/machine.h"
#include "fixture.h"

#define CORA "data/cora_adj.mtx"

typedef struct wl {
    const char *name, *file, *data1, *data2, *p1, *p2;
} wl;

static const wl WORKLOADS[] = {
    {"spmv", "workloads/spmv.loom", "A=" CORA, NULL, NULL, NULL},
    {"spmm", "workloads/spmm.loom", "A=" CORA, NULL, "F=64", NULL},
    {"sddmm", "workloads/sddmm.loom", "M=" CORA, NULL, "D=16", NULL},
    {"gcn", "workloads/gcn.loom", "A=" CORA, "X=data/cora_features.mtx", "F=8", NULL},
    {"gemm", "workloads/gemm.loom", NULL, NULL, "M=48", "K=40"},
    {"attention", "workloads/attention.loom", NULL, NULL, "N=40", "D=8"},
    {"attention_causal", "workloads/attention_causal.loom", NULL, NULL, "N=40", "D=8"},
    {"attention_band", "workloads/attention_band.loom", NULL, NULL, "N=40", "D=8"},
    {"sparse_attention", "workloads/sparse_attention.loom", "A=" CORA, NULL, "D=8", NULL},
};
#define NWL (int)(sizeof WORKLOADS / sizeof *WORKLOADS)

/* Parse and bind a workload with its data. */
static loom_dataset *load(const wl *w, loom_program **prog)
{
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_program_parse_file(w->file, prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec specs[2];
    loom_param_spec params[2];
    int ns = 0, np = 0;
    const char *data[2] = {w->data1, w->data2}, *par[2] = {w->p1, w->p2};
    for (int k = 0; k < 2; k++) {
        if (data[k]) {
            const char *eq = strchr(data[k], '=');
            snprintf(specs[ns].tensor, sizeof specs[ns].tensor, "%.*s", (int)(eq - data[k]), data[k]);
            snprintf(specs[ns].path, sizeof specs[ns].path, "%s", eq + 1);
            ns++;
        }
        if (par[k]) {
            const char *eq = strchr(par[k], '=');
            snprintf(params[np].name, sizeof params[np].name, "%.*s", (int)(eq - par[k]), par[k]);
            params[np].value = atoll(eq + 1);
            np++;
        }
    }
    loom_dataset *ds = NULL;
    cr_assert_eq(loom_dataset_load(*prog, specs, ns, params, np, 5, &ds, &err), LOOM_OK, "%s", err.msg);
    return ds;
}

static loom_status dummy_module(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err)
{
    (void)sch, (void)b, (void)err;
    ++*(int *)ctx->user;
    return LOOM_OK;
}

/* ---- registry and spaces ------------------------------------------------- */

Test(modules, registry_has_the_builtins_and_checks_names)
{
    loom_registry *r = loom_registry_new();
    cr_assert_not_null(r);
    const char *want[] = {"fuse-producers", "sparse-loop-order", "multi-level-tiling", "parallel-vectorize-unroll",
                          "random-compute-location", "reverse-compute-location", "dot-partial-sums"};
    for (int k = 0; k < 7; k++)
        cr_assert_eq(loom_registry_find(r, want[k], NULL, NULL), 0, "%s missing", want[k]);
    loom_error err;
    int calls = 0;
    cr_assert_eq(loom_registry_add(r, "multi-level-tiling", dummy_module, &calls, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "already registered"), "%s", err.msg);
    cr_assert_eq(loom_registry_add(r, "Bad Name", dummy_module, &calls, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_registry_add(r, "", dummy_module, &calls, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_registry_add(r, "counter", NULL, &calls, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_registry_add(r, "counter", dummy_module, &calls, &err), LOOM_OK);

    loom_space *s = NULL;
    cr_assert_eq(loom_space_new(r, "sparse-loop-order, nope", NULL, &s, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "unknown module 'nope'") && strstr(err.msg, "multi-level-tiling"), "%s", err.msg);
    cr_assert_null(s);
    cr_assert_eq(loom_space_new(r, " , ", NULL, &s, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_space_new(r, NULL, "gpu", &s, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_space_new(r, NULL, "sim", &s, &err), LOOM_OK);
    cr_assert_eq(loom_space_count(s), 8); /* attention-fusion first, reverse-compute-location last */
    cr_assert_str_eq(loom_space_module(s, 6), "dot-partial-sums");
    cr_assert_str_eq(loom_space_module(s, 7), "reverse-compute-location");
    loom_space_free(s);

    /* a user module runs once per block, consumers first, on its own block */
    cr_assert_eq(loom_space_new(r, "counter,counter", NULL, &s, &err), LOOM_OK);
    loom_program *prog = NULL;
    loom_dataset *ds = load(&WORKLOADS[5], &prog); /* attention: 5 statements */
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK);
    cr_assert_eq(loom_space_apply(s, sch, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(calls, 2 * prog->nstmts);
    cr_assert_eq(loom_registry_load(r, "/nonexistent/mod.so", &err), LOOM_ERR_IO);
    free(sch);
    loom_space_free(s);
    loom_registry_free(r);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* ---- Scorch's analysis ---------------------------------------------------- */

static int var_named(const loom_program *prog, int stmt, const char *name)
{
    for (int v = 0; v < prog->nvars; v++)
        if (prog->vars[v].stmt == stmt && !strcmp(prog->vars[v].name, name))
            return v;
    return -1;
}

Test(modules, scorch_rank_puts_sparse_filters_first_and_reuse_excludes_sparse)
{
    loom_program *prog = NULL;
    loom_dataset *ds = load(&WORKLOADS[1], &prog); /* spmm: C(i,f) += A(i,k) * B(k,f) */
    int rank[LOOM_MAX_VARS];
    loom_scorch_rank(prog, 0, rank);
    int i = var_named(prog, 0, "i"), k = var_named(prog, 0, "k"), f = var_named(prog, 0, "f");
    cr_assert_eq(rank[k], 0, "k is a sparse filter (compressed in A, dense in B)");
    cr_assert_eq(rank[i], 1);
    cr_assert_eq(rank[f], 2);
    cr_assert(loom_var_is_sparse(prog, 0, k) && !loom_var_is_sparse(prog, 0, f));
    cr_assert(loom_var_carries_reuse(prog, 0, f), "f: A does not use f");
    cr_assert(!loom_var_carries_reuse(prog, 0, k), "k is sparse");
    cr_assert_eq(loom_single_driver(prog, 0, k), loom_program_find_tensor(prog, "A"));
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK);
    cr_assert_eq(loom_scorch_outermost(sch, 0), i, "concordance puts i (A's row) outside k");
    free(sch);
    loom_dataset_free(ds);
    loom_program_free(prog);

    /* GEMM, all dense: mean level position orders i (0), k (0.5), j (1) */
    ds = load(&WORKLOADS[4], &prog);
    loom_scorch_rank(prog, 0, rank);
    cr_assert_lt(rank[var_named(prog, 0, "i")], rank[var_named(prog, 0, "k")]);
    cr_assert_lt(rank[var_named(prog, 0, "k")], rank[var_named(prog, 0, "j")]);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* ---- design spaces: valid share ----------------------------------------------- */

Test(modules, every_workload_space_samples_mostly_valid_traces_that_replay, .timeout = 300)
{
    loom_registry *r = loom_registry_new();
    loom_space *space = NULL;
    loom_error err;
    cr_assert_eq(loom_space_new(r, NULL, "cpu", &space, &err), LOOM_OK);
    loom_schedule *sch = malloc(sizeof *sch), *rep = malloc(sizeof *rep);
    loom_trace *t = loom_trace_new();
    loom_limits lim = loom_target_cpu_limits();
    const int N = 300;
    for (int w = 0; w < NWL; w++) {
        loom_program *prog = NULL;
        loom_dataset *ds = load(&WORKLOADS[w], &prog);
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, 42 + (unsigned long)w);
        int valid = 0, distinct = 0;
        uint64_t hashes[300];
        for (int k = 0; k < N; k++) {
            loom_trace_clear(t);
            cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK);
            sch->recorder = loom_trace_recorder;
            sch->recorder_ctx = t;
            cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s: %s", WORKLOADS[w].name, err.msg);
            cr_assert_eq(loom_trace_status(t, &err), LOOM_OK, "%s", err.msg);
            cr_assert_eq(loom_schedule_init(rep, prog, NULL, &err), LOOM_OK);
            cr_assert_eq(loom_trace_replay(t, rep, NULL, &err), LOOM_OK, "%s: %s", WORKLOADS[w].name, err.msg);
            cr_assert(loom_schedule_equal(sch, rep), "%s: replay gave another schedule", WORKLOADS[w].name);
            loom_violation v;
            valid += loom_validate(rep, &lim, &v, NULL) == LOOM_OK;
            uint64_t h = loom_schedule_hash(rep);
            int seen = 0;
            for (int q = 0; q < distinct && !seen; q++)
                seen = hashes[q] == h;
            if (!seen)
                hashes[distinct++] = h;
        }
        printf("modules: %-17s design space: %d/%d valid traces (%.1f%%), %d distinct schedules\n",
               WORKLOADS[w].name, valid, N, 100.0 * valid / N, distinct);
        fflush(stdout);
        cr_assert_geq(valid * 100, 80 * N, "%s: only %d of %d valid", WORKLOADS[w].name, valid, N);
        cr_assert_gt(distinct, 1, "%s: the space samples one schedule only", WORKLOADS[w].name);
        gsl_rng_free(rng);
        loom_dataset_free(ds);
        loom_program_free(prog);
    }
    loom_trace_free(t);
    free(sch);
    free(rep);
    loom_space_free(space);
    loom_registry_free(r);
}

/* ---- the default schedule ------------------------------------------------------ */

static const char *loop_names(const loom_schedule *sch, int s, char *buf, size_t n)
{
    buf[0] = 0;
    for (int p = 0; p < sch->stages[s].nloops; p++) {
        char nm[64];
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s", p ? " " : "", loom_iter_name(sch, s, sch->stages[s].loops[p].iter, nm, sizeof nm));
    }
    return buf;
}

Test(modules, default_schedule_of_spmm_is_scorchs)
{
    /* F = 256: the feature loop carries reuse and is longer than 128, so it
     * is tiled by 32, the outer tile right after i, the inner innermost */
    const wl spmm256 = {"spmm", "workloads/spmm.loom", "A=" CORA, NULL, "F=256", NULL};
    loom_program *prog = NULL;
    loom_dataset *ds = load(&spmm256, &prog);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK);
    cr_assert_eq(loom_default_schedule(sch, &err), LOOM_OK, "%s", err.msg);
    char buf[256];
    cr_assert_str_eq(loop_names(sch, 0, buf, sizeof buf), "i f.0 k f.1");
    cr_assert_eq(loom_iter_extent(sch, 0, sch->stages[0].loops[3].iter), 32);
    cr_assert_eq(sch->stages[0].loops[0].kind, LOOM_LOOP_PARALLEL);
    cr_assert_eq(sch->stages[0].loops[3].kind, LOOM_LOOP_VECTORIZED);
    /* Scorch's workspace: the 32-wide tile of the row, at f.0 (just outside
     * the nonzero loop) */
    cr_assert_eq(sch->stages[0].cache_iter, sch->stages[0].loops[1].iter);
    free(sch);
    loom_dataset_free(ds);
    loom_program_free(prog);

    /* F = 64: Scorch's order i, k (A's nonzeros), f; the row in a workspace
     * at i; f split once as [1, 64] (a constant trip count), vectorized */
    ds = load(&WORKLOADS[1], &prog);
    sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK);
    cr_assert_eq(loom_default_schedule(sch, &err), LOOM_OK, "%s", err.msg);
    cr_assert_str_eq(loop_names(sch, 0, buf, sizeof buf), "i k f.0 f.1");
    cr_assert_eq(loom_iter_extent(sch, 0, sch->stages[0].loops[2].iter), 1);
    cr_assert_eq(loom_iter_extent(sch, 0, sch->stages[0].loops[3].iter), 64);
    cr_assert_eq(sch->stages[0].loops[3].kind, LOOM_LOOP_VECTORIZED);
    cr_assert_eq(sch->stages[0].cache_iter, sch->stages[0].loops[0].iter);
    free(sch);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* The stream annotation of stage 0's workspace loop (0: none). */
static int64_t ws_stream_value(const loom_schedule *sch)
{
    const loom_stage *S = &sch->stages[0];
    for (int p = 0; p < S->nloops; p++)
        if (S->loops[p].iter == S->cache_iter)
            for (int a = 0; a < S->loops[p].nann; a++)
                if (!strcmp(S->loops[p].ann[a].key, LOOM_ANN_STREAM))
                    return S->loops[p].ann[a].value;
    return 0;
}

/* The default streams its row workspace out exactly when the output is
 * larger than the target's last-level cache (loom_limits.llc_bytes); with
 * the size unknown (0) it never does.  SpMM on Cora at F = 64: C is
 * 2708 x 64 x 4 = 693,248 bytes.  The streamed kernel is correct.  And the
 * host's llc_bytes is what Linux reports for cpu0's highest cache level. */
Test(modules, default_streams_an_output_larger_than_the_llc, .timeout = 120)
{
    loom_program *prog = NULL;
    loom_dataset *ds = load(&WORKLOADS[1], &prog);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    loom_limits lim = loom_target_cpu_limits();
    const int64_t sizes[3] = {0, 693248 - 1, 693248};
    const int64_t want[3] = {0, LOOM_STREAM_ON, 0};
    for (int k = 0; k < 3; k++) {
        lim.llc_bytes = sizes[k];
        cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_default_schedule_for(sch, &lim, &err), LOOM_OK, "%s", err.msg);
        cr_assert(sch->stages[0].cache_iter >= 0, "the default has Scorch's row workspace");
        cr_assert_eq(ws_stream_value(sch), want[k], "llc %lld bytes: stream %lld, want %lld", (long long)sizes[k],
                     (long long)ws_stream_value(sch), (long long)want[k]);
        if (want[k])
            fx_run_checked(sch, ds, "the default with a streamed workspace");
    }
    /* the host: the size of the highest level under /sys/.../cache */
    int64_t sys = 0;
    int best_level = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], unit = 0;
        int level = 0;
        long long size = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int ok = fscanf(f, "%d", &level) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!ok || !(f = fopen(path, "r")))
            continue;
        ok = fscanf(f, "%lld%c", &size, &unit) >= 1;
        fclose(f);
        int64_t bytes = (int64_t)size * (unit == 'K' ? 1024 : unit == 'M' ? 1 << 20 : 1);
        if (ok && (level > best_level || (level == best_level && bytes > sys))) {
            best_level = level;
            sys = bytes;
        }
    }
    if (sys > 0)
        cr_assert_eq(loom_limits_host().llc_bytes, sys);
    else
        cr_assert_geq(loom_limits_host().llc_bytes, 0);
    free(sch);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

Test(modules, default_schedule_is_valid_replays_without_rng_and_is_correct, .timeout = 600)
{
    loom_schedule *sched[NWL];
    loom_program *progs[NWL];
    loom_dataset *dss[NWL];
    loom_trace *t = loom_trace_new();
    loom_error err;
    for (int w = 0; w < NWL; w++) {
        dss[w] = load(&WORKLOADS[w], &progs[w]);
        sched[w] = malloc(sizeof(loom_schedule));
        loom_trace_clear(t);
        cr_assert_eq(loom_schedule_init(sched[w], progs[w], NULL, &err), LOOM_OK);
        sched[w]->recorder = loom_trace_recorder;
        sched[w]->recorder_ctx = t;
        cr_assert_eq(loom_default_schedule(sched[w], &err), LOOM_OK, "%s: %s", WORKLOADS[w].name, err.msg);
        loom_violation v;
        cr_assert_eq(loom_validate(sched[w], fx_cpu_limits(), &v, NULL), LOOM_OK, "%s: %s", WORKLOADS[w].name, v.msg);
        /* through JSON and back, replayed without a random generator */
        char *json = NULL;
        loom_trace *back = NULL;
        cr_assert_eq(loom_trace_to_json(t, progs[w], &json), LOOM_OK);
        cr_assert_eq(loom_trace_from_json(json, "<default>", &back, &err), LOOM_OK, "%s", err.msg);
        free(json);
        loom_schedule *rep = malloc(sizeof *rep);
        cr_assert_eq(loom_schedule_init(rep, progs[w], NULL, &err), LOOM_OK);
        cr_assert_eq(loom_trace_replay(back, rep, NULL, &err), LOOM_OK, "%s: %s", WORKLOADS[w].name, err.msg);
        cr_assert(loom_schedule_equal(rep, sched[w]), "%s: the default's trace replays to another schedule",
                  WORKLOADS[w].name);
        sched[w]->recorder = NULL;
        loom_trace_free(back);
        free(rep);
    }
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0;
    o.measure.min_repeats = 1;
    o.measure.warmup = 0;
    for (int w = 0; w < NWL; w++) {
        loom_reference *ref = NULL;
        cr_assert_eq(loom_reference_run(dss[w], &ref, &err), LOOM_OK, "%s", err.msg);
        loom_run_result res;
        cr_assert_eq(loom_run_batch((const loom_schedule *const *)&sched[w], 1, dss[w], ref, &o, 1, &res, &err),
                     LOOM_OK, "%s", err.msg);
        cr_assert_eq(res.status, LOOM_OK, "%s: default schedule: %s: %s", WORKLOADS[w].name,
                     loom_status_name(res.status), res.message);
        loom_reference_free(ref);
        free(sched[w]);
        loom_dataset_free(dss[w]);
        loom_program_free(progs[w]);
    }
    loom_trace_free(t);
}

/* ---- a user module, out of tree ------------------------------------------------ */

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

Test(modules, example_module_builds_against_the_install_and_its_decisions_appear, .timeout = 600)
{
    const char *bin = getenv("LOOM_BIN");
    char bdir[4096], tmp[] = "/tmp/loom-modtest-XXXXXX", cmd[16384];
    snprintf(bdir, sizeof bdir, "%s", bin ? bin : "build/loom");
    char *b = dirname(bdir);
    cr_assert_not_null(mkdtemp(tmp));
    /* `make install` builds `all` first: on a stale build it would relink
     * the loom binary while the suite's other tests are running it */
    snprintf(cmd, sizeof cmd, "make -s -q all B=%s", b);
    cr_assert_eq(sh(cmd), 0, "the build in %s is out of date: run make first (make test does)", b);
    snprintf(cmd, sizeof cmd, "make -s install B=%s PREFIX=%s/prefix > %s/install.log 2>&1", b, tmp, tmp);
    cr_assert_eq(sh(cmd), 0, "make install failed: see %s/install.log", tmp);
    /* the example, compiled out of tree with only what pkg-config says */
    snprintf(cmd, sizeof cmd,
             "cd %s && cp %s/examples/modules/pin_feature.c . && "
             "PKG_CONFIG_PATH=%s/prefix/lib/pkgconfig cc -std=c11 -Wall -Wextra -Werror -shared -fPIC pin_feature.c "
             "-o pin_feature.so $(PKG_CONFIG_PATH=%s/prefix/lib/pkgconfig pkg-config --cflags --libs loom) "
             "> build.log 2>&1",
             tmp, getcwd((char[4096]){0}, 4096), tmp, tmp);
    cr_assert_eq(sh(cmd), 0, "building the example failed: see %s/build.log", tmp);
    snprintf(cmd, sizeof cmd,
             "%s/prefix/bin/loom sample workloads/spmm.loom --data A=" CORA " --param F=64 --count 12 --seed 3 "
             "--out %s/traces --module %s/pin_feature.so > %s/sample.log 2>&1",
             tmp, tmp, tmp, tmp);
    cr_assert_eq(sh(cmd), 0, "loom sample --module failed: see %s/sample.log", tmp);
    /* every trace: a Split of the f loop whose inner factor is the module's
     * SampleCategorical over {W, 2W, 4W}; the decisions vary over the draws */
    int seen_dec[3] = {0};
    for (int k = 0; k < 12; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/traces/trace-%05d.json", tmp, k);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "%s missing", path);
        static char text[1 << 16];
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
        loom_trace *t = NULL;
        loom_error err;
        cr_assert_eq(loom_trace_from_json(text, path, &t, &err), LOOM_OK, "%s", err.msg);
        int found = 0;
        for (int i = 0; i + 2 < t->ninsts && !found; i++) {
            const loom_inst *c = &t->insts[i + 1];
            if (strcmp(loom_inst_kind_at(c->kind)->name, "SampleCategorical") || c->nattrs != 3 ||
                c->attrs[1] != 2 * c->attrs[0] || c->attrs[2] != 4 * c->attrs[0])
                continue;
            const loom_inst *sp = &t->insts[i + 2];
            cr_assert_str_eq(loom_inst_kind_at(sp->kind)->name, "Split");
            cr_assert_eq(sp->inputs[2], c->outputs[0], "the split's inner factor is the module's draw");
            cr_assert(c->decision[0] >= 0 && c->decision[0] < 3);
            seen_dec[c->decision[0]] = 1;
            found = 1;
        }
        cr_assert(found, "trace %d has no decision of the example module", k);
        loom_trace_free(t);
    }
    cr_assert_geq(seen_dec[0] + seen_dec[1] + seen_dec[2], 2, "the module's decision never varies");
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    sh(cmd);
}

/* ---- loom space, loom run's schedule choice ------------------------------------ */

static int run_cmd(const char *args, char *out, size_t n)
{
    const char *bin = getenv("LOOM_BIN");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin ? bin : "build/loom", args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t got = fread(out, 1, n - 1, p);
    out[got] = 0;
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

Test(modules, loom_space_prints_holes_and_a_size_estimate, .timeout = 60)
{
    static char out[1 << 16];
    cr_assert_eq(run_cmd("space workloads/spmm.loom --data A=" CORA " --param F=64 --draws 5", out, sizeof out), 0,
                 "%s", out);
    cr_assert(strstr(out, "loom_sample_loop_order(sch, b0") && strstr(out, "HOLE: 3 choices"),
              "SpMM has three legal loop orders: %s", out);
    cr_assert(strstr(out, "loom_pos_split(sch, ") && strstr(out, "loom_sample_perfect_tile("), "%s", out);
    cr_assert(strstr(out, "size estimate: about 10^"), "%s", out);
    cr_assert_eq(run_cmd("space workloads/spmm.loom --data A=" CORA " --modules sparse-loop-order,bogus", out,
                         sizeof out),
                 2);
    cr_assert(strstr(out, "unknown module 'bogus'"), "%s", out);
    /* a one-module space has only that module's holes */
    cr_assert_eq(run_cmd("space workloads/spmm.loom --data A=" CORA " --modules sparse-loop-order", out, sizeof out),
                 0, "%s", out);
    cr_assert_null(strstr(out, "perfect_tile"), "%s", out);
    cr_assert_eq(run_cmd("space --list", out, sizeof out), 0);
    cr_assert(strstr(out, "module random-compute-location") && strstr(out, "default cpu "), "%s", out);
}

Test(modules, loom_run_uses_the_default_schedule_unless_naive, .timeout = 300)
{
    static char out[1 << 16];
    cr_assert_eq(run_cmd("run workloads/spmm.loom --data A=" CORA " --param F=64 --min-time 0.001 --print-lir", out,
                         sizeof out),
                 0, "%s", out);
    cr_assert(strstr(out, "kernel     default schedule") && strstr(out, "vectorized"), "%s", out);
    cr_assert_eq(run_cmd("run workloads/spmm.loom --data A=" CORA " --param F=64 --min-time 0.001 --naive --print-lir",
                         out, sizeof out),
                 0, "%s", out);
    cr_assert(strstr(out, "kernel     naive loop nest") && !strstr(out, "vectorized"), "%s", out);
    cr_assert_eq(run_cmd("run workloads/spmm.loom --naive --trace x.json", out, sizeof out), 2);
    cr_assert(strstr(out, "--naive and --trace"), "%s", out);
}

Test(modules, random_compute_location_samples_locations_of_untiled_producers)
{
    loom_registry *r = loom_registry_new();
    loom_space *space = NULL;
    loom_error err;
    cr_assert_eq(loom_space_new(r, "random-compute-location,sparse-loop-order,parallel-vectorize-unroll", NULL,
                                &space, &err),
                 LOOM_OK, "%s", err.msg);
    loom_program *prog = NULL;
    loom_dataset *ds = load(&WORKLOADS[5], &prog); /* attention: S, m, P, l feed O */
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = loom_trace_new();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 9);
    int placed = 0, valid = 0, locations = 0;
    for (int k = 0; k < 50; k++) {
        loom_trace_clear(t);
        cr_assert_eq(loom_schedule_init(sch, prog, rng, &err), LOOM_OK);
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        cr_assert_eq(loom_space_apply(space, sch, &err), LOOM_OK, "%s", err.msg);
        for (int i = 0; i < t->ninsts; i++)
            locations += !strcmp(loom_inst_kind_at(t->insts[i].kind)->name, "SampleComputeLocation");
        for (int s = 0; s + 1 < sch->nstages; s++)
            placed += sch->stages[s].compute_at != LOOM_AT_ROOT;
        cr_assert_eq(sch->stages[sch->nstages - 1].compute_at, LOOM_AT_ROOT, "the output is never placed");
        loom_violation v;
        valid += loom_validate(sch, fx_cpu_limits(), &v, NULL) == LOOM_OK;
    }
    cr_assert_eq(locations, 50 * 4, "one location per producer per draw");
    cr_assert_gt(placed, 0, "some producer is inlined or computed at a loop");
    cr_assert_geq(valid, 40);
    gsl_rng_free(rng);
    loom_trace_free(t);
    free(sch);
    loom_space_free(space);
    loom_registry_free(r);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* Module lists come from the registry: docs/modules.md has a row for every
 * registered built-in module and names the default list, every built-in
 * has a one-line doc, and loom_registry_print lists them all (drift fails
 * here). */
Test(modules, docs_and_listing_name_every_builtin_module)
{
    loom_registry *r = loom_registry_new();
    cr_assert_not_null(r);
    char *doc = fx_slurp("docs/modules.md");
    char *listing = NULL;
    size_t llen = 0;
    FILE *out = open_memstream(&listing, &llen);
    cr_assert_eq(loom_registry_print(r, out), 0);
    fclose(out);
    cr_assert_gt(loom_registry_count(r), 0);
    for (int k = 0; k < loom_registry_count(r); k++) {
        const char *name = loom_registry_name(r, k), *d = loom_registry_doc(r, k);
        char row[96];
        snprintf(row, sizeof row, "| `%s` |", name);
        cr_assert(strstr(doc, row), "docs/modules.md has no row for built-in module %s", name);
        cr_assert(d && d[0], "built-in module %s has no doc line", name);
        snprintf(row, sizeof row, "module %s ", name);
        cr_assert(strstr(listing, row), "the listing misses %s:\n%s", name, listing);
    }
    cr_assert(strstr(doc, loom_default_modules("cpu")), "docs/modules.md does not name the default list %s",
              loom_default_modules("cpu"));
    free(listing);
    free(doc);
    loom_registry_free(r);
}
