/* Opening and closing a tuning campaign (tune.h, tune_internal.h): the
 * options' defaults, the target handle and its runner, the database, the
 * log, the design space and the cost model; at the end the result, the
 * best trace and the log's last line.  tune.c (the rounds) calls these. */
#include "tune.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../costmodel/features.h"
#include "../../costmodel/model.h"
#include "../../modules/module.h"
#include "../../runtime/runner/runner.h"
#include "../../runtime/target/target.h"
#include "../database/database.h"
#include "../navigate/navigate.h"
#include "tune_internal.h"

loom_tune_opts loom_tune_defaults(void)
{
    loom_tune_opts o;
    memset(&o, 0, sizeof o);
    o.batch = 16; /* chosen on bench/bench_suite.sh: docs/tuning.md "Batch size" */
    o.target = "cpu";
    o.search = loom_search_defaults();
    o.run = loom_run_defaults();
    o.model_min_records = 100;
    o.remeasure_rounds = 5;
    o.remeasure_budget_s = LOOM_TUNE_DECISIVE_BUDGET_S;
    return o;
}

void loom_cpu_target_fingerprint(const loom_run_opts *run, char *buf, size_t n)
{
    loom_target_cpu_fingerprint(run ? run->build.cc : NULL, run ? run->build.cflags : NULL, buf, n);
}

/* The campaign's target handle (runtime/target/target.h loom_target_open),
 * chosen once: its limits shape the space, the validator and the lowering,
 * its fingerprint goes into every record; and its runner
 * (runtime/runner/runner.h). */
static loom_status open_target(tune_ctx *c, loom_error *err)
{
    loom_status st = LOOM_OK;
    if (c->o->target_handle)
        c->target = *c->o->target_handle;
    else
        st = loom_target_open(c->o->target ? c->o->target : "cpu", c->o->run.build.cc, c->o->run.build.cflags,
                              &c->target, err);
    if (st)
        return st;
    c->simulated = c->target.kind == LOOM_TARGET_SIM;
    c->lim = c->target.limits;
    snprintf(c->target_fp, sizeof c->target_fp, "%s", c->target.fingerprint);
    return LOOM_OK;
}

/* The design space: the built-ins plus opts->module_libs (user modules first
 * when opts->modules is NULL, then the target's default list). */
static loom_status space_with_libs(tune_ctx *c, const loom_tune_opts *opts, loom_error *err)
{
    const char *kind = c->simulated ? "sim" : "cpu";
    int builtins = loom_registry_count(c->reg);
    loom_status st;
    for (int k = 0; k < opts->nmodule_libs; k++)
        if ((st = loom_registry_load(c->reg, opts->module_libs[k], err)))
            return st;
    if (opts->modules || loom_registry_count(c->reg) == builtins)
        return loom_space_new(c->reg, opts->modules, kind, &c->space, err);
    char list[2048] = "";
    for (int k = builtins; k < loom_registry_count(c->reg); k++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s,", loom_registry_name(c->reg, k));
    }
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s", loom_default_modules(kind));
    return loom_space_new(c->reg, list, kind, &c->space, err);
}

loom_status loom__tune_open(tune_ctx *c, loom_program *prog, loom_dataset *ds, const loom_tune_opts *opts,
                             loom_tune_result *res, int campaign, loom_error *err)
{
    memset(res, 0, sizeof *res);
    res->best_latency_s = res->default_latency_s = res->naive_latency_s = res->default_record_s = INFINITY;
    res->sampled_best_latency_s = res->sampled_default_latency_s = INFINITY;
    res->last_spearman = res->last_topk_recall = res->load_avg = res->best_1thread_s = NAN;
    memset(c, 0, sizeof *c);
    c->prog = prog;
    c->ds = ds;
    c->o = opts;
    c->res = res;
    c->best_latency = INFINITY;
    c->t_start = loom_now_seconds();
    if (!prog || !ds || !opts || !opts->db_dir || (campaign && (opts->trials <= 0 || opts->batch <= 0)))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "a campaign needs a bound workload, data, a database directory, trials > 0 and "
                              "batch > 0");
    c->threads = opts->search.threads > 0 ? opts->search.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (c->threads < 1)
        c->threads = 1;
    c->whash = loom_program_hash(prog);
    c->dfp = loom_data_fingerprint(ds);
    loom_status st = open_target(c, err);
    if (st)
        return st;
    snprintf(res->target_fp, sizeof res->target_fp, "%s", c->target_fp);
    res->limits = c->lim;
    if (opts->pins && opts->pins->n > 0 && loom_pins_to_json(opts->pins, &c->pins_json))
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    res->pinned = opts->pins ? opts->pins->n : 0;
    if ((st = loom_db_open(opts->db_dir, opts->warn ? opts->warn : stderr, &c->db, err)))
        return st;
    char path[1100];
    snprintf(path, sizeof path, "%s/campaign.log", opts->db_dir);
    c->log = fopen(path, "a");
    if (!c->log)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot open the campaign log: %s", strerror(errno));
    loom_search_opts so = opts->search;
    loom__tune_log(c, "%s: workload %s (%016llx), data %016llx, target %s, strategy %s, seed %llu, trials %d, batch %d",
                   campaign ? "campaign" : "re-measurement", opts->workload_name ? opts->workload_name : "?",
                   (unsigned long long)c->whash, (unsigned long long)c->dfp, c->target_fp,
                   loom_strategy_name(so.strategy), (unsigned long long)so.seed, opts->trials, opts->batch);
    double t_ref = loom_now_seconds();
    int ref_hit = 0;
    if ((st = loom_reference_run_cached(ds, NULL, &ref_hit, &c->ref, err)))
        return st;
    loom__tune_log(c, "reference outputs %s in %.2f s (runtime/measure/reference.h)",
                   ref_hit ? "read from the cache" : "computed by the interpreter", loom_now_seconds() - t_ref);
    st = opts->runner_new ? opts->runner_new(opts->runner_ctx, &c->target, ds, c->ref, &opts->run, &c->runner, err)
                          : loom_runner_new(&c->target, ds, c->ref, &opts->run, &c->runner, err);
    if (st)
        return st;
    loom__tune_log(c, "target %s (%s runner): %d vector lanes, vector factor <= %d, %d cores, workspaces <= %lld "
                   "bytes, %d vector registers",
                   c->target_fp, c->runner->kind, c->lim.vector_lanes, c->lim.max_vector_factor, c->lim.cores,
                   (long long)c->lim.max_workspace_bytes, loom_limits_registers(&c->lim));
    /* the space also in a re-measurement: the default schedule is its default (loom__tune_default) */
    c->reg = loom_registry_new();
    if (!c->reg)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if ((st = space_with_libs(c, opts, err)))
        return st;
    loom_space_set_limits(c->space, &c->lim); /* the space is shaped by the target, not the host */
    if (!campaign)
        return LOOM_OK;
    if ((st = loom_data_stats_compute(ds, &c->stats, err)))
        return st;
    c->nfeat = loom_feature_count();
    loom_cost_model_opts mo = loom_cost_model_defaults(c->nfeat);
    mo.seed = so.seed;
    mo.nthread = 1; /* XGBoost with more threads starts libgomp's pool in this process, and the forked
                       measurement children could not run OpenMP kernels (costmodel/model.h) */
    if (opts->model_min_records > 0)
        mo.min_records = opts->model_min_records;
    if ((st = loom_cost_model_new(&mo, &c->model, err)))
        return st;
    c->group = loom_fnv1a(loom_fnv1a(c->whash, &c->dfp, sizeof c->dfp), c->target_fp, strlen(c->target_fp));
    return LOOM_OK;
}

/* Write the best trace to DIR/best-NAME.json (atomically: a temporary file
 * renamed).  Its path goes to res->best_trace, "" when it failed. */
static void write_best(tune_ctx *c)
{
    loom_tune_result *res = c->res;
    res->best_trace[0] = '\0';
    if (!c->best_json)
        return;
    char path[1024], tmp[1200];
    snprintf(path, sizeof path, "%s/best-%s.json", c->o->db_dir,
             c->o->workload_name ? c->o->workload_name : "workload");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    int ok = fputs(c->best_json, f) >= 0 && fputc('\n', f) != EOF;
    ok = fclose(f) == 0 && ok; /* fclose exactly once, even when it fails (a full disk) */
    if (ok && rename(tmp, path) == 0)
        snprintf(res->best_trace, sizeof res->best_trace, "%s", path);
    else
        unlink(tmp);
}

void loom__tune_finish(tune_ctx *c, loom_search *search)
{
    loom_tune_result *res = c->res;
    if (search) {
        const loom_search_stats *ss = loom_search_get_stats(search);
        c->invalid = ss->sample_invalid + ss->mutate_invalid;
        res->invalid = c->invalid;
        loom_search_free(search);
    }
    if (!res->remeasure_rounds) {
        res->best_latency_s = res->sampled_best_latency_s = c->best_latency;
        res->sampled_default_latency_s = res->default_latency_s;
    }
    res->best_gflops = isfinite(res->best_latency_s) && res->best_latency_s > 0
                           ? c->best_flops / res->best_latency_s / 1e9 : 0;
    res->trials = c->ok + c->failed;
    res->measured = c->measured_now;
    memcpy(res->failed_by_status, c->by_status, sizeof res->failed_by_status);
    res->costmodel_s = c->costmodel_s;
    res->compile_s = c->compile_s;
    res->measure_s = c->measure_s;
    res->total_s = loom_now_seconds() - c->t_start;
    if (c->db && !c->stop)
        write_best(c);
    if (c->log) {
        loom__tune_log(c,
                       "done: %d trials (%d resumed, %d measured now), best %.6g s (sampled %.6g s), default %.6g s, "
                       "naive %.6g s; wall %.1f s: search %.1f s, cost model %.1f s, compile %.1f s, measure %.1f s",
                       res->trials, res->resumed, res->measured, res->best_latency_s, res->sampled_best_latency_s,
                       res->default_latency_s, res->naive_latency_s, res->total_s, res->search_s, res->costmodel_s,
                       res->compile_s, res->measure_s);
        fclose(c->log);
    }
    free(c->best_json);
    free(c->pins_json);
    free(c->measured);
    if (c->model)
        loom_cost_model_free(c->model);
    if (c->space)
        loom_space_free(c->space);
    if (c->reg)
        loom_registry_free(c->reg);
    loom_runner_free(c->runner);
    if (c->ref)
        loom_reference_free(c->ref);
    loom_db_close(c->db);
}

