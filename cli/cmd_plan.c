/* loom: `loom plan describe` and `loom plan score` -- fusion plans from
 * outside (search/plan/plan.h, docs/plans.md; AutoSparse's interface). */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../modules/module.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/batch.h"
#include "../runtime/measure/pipeline.h"
#include "../runtime/runner/runner.h"
#include "../search/plan/plan.h"
#include "cli.h"

static const char *PLAN_HELP =
    "usage: loom plan describe WORKLOAD.loom [options]\n"
    "       loom plan score PLAN.json WORKLOAD.loom [options]\n"
    "\n"
    "Fusion plans (AutoSparse's interface; docs/plans.md).  `describe` prints, as JSON,\n"
    "what a proposer (an LLM, a person, another search) needs: the operators with\n"
    "their shapes and FLOPs/bytes, the sparse inputs' statistics (nnz, nnz per row:\n"
    "mean, max, cv), the producer->consumer edges (fusable or not, and why), every\n"
    "admissible fusion group with its legal dataflow orders, FLOPs, bytes, operational\n"
    "intensity and roofline class against the target's balance, and every plan\n"
    "(fusion choice) ranked by its roofline time.\n"
    "\n"
    "`score` reads plans in the schema\n"
    "  {\"fusion_groups\": [{\"name\": \"G1\", \"ops\": [\"Z1\", \"H1\"], \"dataflow_order\": [\"i\", \"f\", \"j\"]}]}\n"
    "(one plan, or a list), checks every plan to the end and gives each its verdict,\n"
    "legal or illegal with all its faults (unknown op, op in two groups, op in no group,\n"
    "a fusion the compiler does not offer, an illegal order: each its own message\n"
    "naming the plan, group and op); for each legal plan it fills every other hole from\n"
    "the design space (--fills draws, seeds --seed..), simulates each fill on the\n"
    "target and keeps the best, and prints the plans ranked: estimated FLOPs, bytes, intensity,\n"
    "roofline class, the cost model's score of the best fill (higher = predicted\n"
    "faster), simulated latency, and with --measure the measured latency of the\n"
    "best fill on this machine (checked against the reference).  The cost model is\n"
    "--model FILE or --db DIR's, else one pre-trained on the simulator for this\n"
    "workload and data (as `loom tune --pretrain N`; the output says which).\n"
    "\n"
    "options:\n"
    "  --target NAME        the simulator's target (targets/NAME.json or a file; default host)\n"
    "  --fills N            design-space draws per plan (default 8, 1..256)\n"
    "  --seed S             first seed of the draws (default 1)\n"
    "  --measure            also compile, run and check the best fill of each plan\n"
    "  --model FILE         score with this saved cost model (a campaign's cost_model.json)\n"
    "  --db DIR             score with the cost model of the campaign in DIR (DIR/cost_model.json)\n"
    "  --pretrain N         without --model/--db: pre-train the model on N simulated schedules\n"
    "                       of the default design space (default 64, 2..100000)\n"
    "  --json               one JSON object (score): every plan, legal or not, an entry of\n"
    "                       \"plans\" with its \"verdict\" and \"faults\"; \"legal\"/\"illegal\" counts\n"
    "  --strict             exit 1 when a plan is illegal, has no valid fill or measures wrong\n"
    "  --out FILE           write describe's JSON to FILE instead of stdout\n"
    "  --data NAME=FILE     read tensor NAME from a Matrix Market file (repeatable)\n"
    "  --param NAME=INT     bind size NAME (repeatable)\n"
    "  -h, --help           this text\n"
    "exit codes: 0 done (score: the plan file parsed; illegal plans are counted, not an\n"
    "error, unless --strict), 1 with --strict a plan illegal, without a valid fill or\n"
    "measured wrong, 2 bad input (unreadable file, not JSON, neither a plan nor a list)\n";

typedef struct plan_opts {
    const char *target, *out, *model, *db;
    uint64_t fills, seed, pretrain;
    int measure, json, strict;
} plan_opts;

typedef struct scored {
    int plan;
    const loom_plan_verdict *verdict;
    loom_plan_cost cost;
    double sim_s, run_s, score; /* score: the cost model's, NaN when none */
    int valid_fills, run_ok;
    char note[1600];
    char *trace_json; /* the best fill's trace (loom_trace_to_json, malloc'd), or NULL */
} scored;

/* Draw one trace of the CPU design space with seed `seed`. */
static loom_status draw(const loom_space *sp, const loom_program *prog, uint64_t seed, loom_schedule *sch,
                        loom_trace *t, loom_error *err)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    gsl_rng_set(rng, (unsigned long)seed);
    loom_trace_clear(t);
    loom_status st = loom_schedule_init(sch, prog, rng, err);
    if (!st) {
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        st = loom_space_apply(sp, sch, err);
        if (!st)
            st = loom_trace_status(t, err);
        sch->recorder = NULL;
    }
    gsl_rng_free(rng);
    return st;
}

/* The best simulated fill of plan p (its schedule in best). */
static void score_plan(const loom_plan_ctx *c, const loom_plan *p, const plan_opts *o, scored *r,
                       loom_schedule *best, loom_trace **best_trace)
{
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = loom_trace_new();
    loom_limits lim = c->target->limits; /* the target handle's */
    loom_runner *runner = NULL;          /* its simulator runner (runtime/runner/runner.h) */
    loom_runner_result *res = malloc(sizeof *res);
    loom_registry *reg = NULL;
    loom_space *sp = NULL;
    loom_error err;
    loom_error_clear(&err);
    r->sim_s = -1;
    uint64_t fills = o->fills;
    if (!res || loom_runner_sim_new(c->target, c->ds, NULL, &runner, &err) ||
        loom_plan_space(p, &lim, &reg, &sp, &err)) {
        snprintf(r->note, sizeof r->note, "%s", err.msg);
        fills = 0;
    }
    for (uint64_t k = 0; sch && t && k < fills; k++) {
        loom_error_clear(&err);
        if (draw(sp, c->prog, o->seed + k, sch, t, &err)) {
            snprintf(r->note, sizeof r->note, "%s", err.msg);
            continue;
        }
        loom_violation v;
        if (loom_validate(sch, &lim, &v, NULL)) {
            snprintf(r->note, sizeof r->note, "invalid fill: %s: %s", v.rule, v.msg);
            continue;
        }
        double lat = loom_runner_run_one(runner, sch, res, NULL);
        if (res->status) {
            snprintf(r->note, sizeof r->note, "%s", res->message);
            continue;
        }
        r->valid_fills++;
        if (r->sim_s < 0 || lat < r->sim_s) {
            r->sim_s = lat;
            loom_schedule_copy(best, sch);
            loom_trace *cp = NULL;
            if (loom_trace_copy(t, &cp, &err) == LOOM_OK) {
                loom_trace_free(*best_trace);
                *best_trace = cp;
            }
        }
    }
    if (r->valid_fills && r->valid_fills < (int)fills && r->note[0]) {
        char last[sizeof r->note];
        snprintf(last, sizeof last, "%s", r->note);
        snprintf(r->note, sizeof r->note, "%d of %d fills refused; the last: %.1500s", (int)fills - r->valid_fills,
                 (int)fills, last);
    }
    loom_runner_free(runner);
    free(res);
    loom_space_free(sp);
    loom_registry_free(reg);
    loom_trace_free(t);
    free(sch);
}

static int by_latency(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->verdict->legal != y->verdict->legal)
        return x->verdict->legal ? -1 : 1;
    if (!x->verdict->legal)
        return x->plan - y->plan;
    double u = x->run_s > 0 ? x->run_s : x->sim_s, w = y->run_s > 0 ? y->run_s : y->sim_s;
    if ((u < 0) != (w < 0))
        return u < 0 ? 1 : -1;
    return u < w ? -1 : u > w;
}

static cJSON *plan_json(const loom_plan *plans, const scored *x, int rank)
{
    cJSON *o = cJSON_CreateObject();
    const loom_plan_verdict *v = x->verdict;
    cJSON_AddStringToObject(o, "name", plans[x->plan].name);
    cJSON_AddNumberToObject(o, "index", x->plan + 1);
    cJSON_AddStringToObject(o, "verdict", v->legal ? "legal" : "illegal");
    cJSON *fa = cJSON_AddArrayToObject(o, "faults");
    for (int f = 0; f < v->nfaults && f < LOOM_PLAN_MAX_FAULTS; f++)
        cJSON_AddItemToArray(fa, cJSON_CreateString(v->fault[f]));
    if (!v->legal) {
        cJSON_AddNumberToObject(o, "nfaults", v->nfaults);
        return o;
    }
    cJSON_AddNumberToObject(o, "rank", rank);
    cJSON_AddNumberToObject(o, "flops", x->cost.flops);
    cJSON_AddNumberToObject(o, "bytes", x->cost.bytes);
    cJSON_AddNumberToObject(o, "intensity", x->cost.intensity);
    cJSON_AddStringToObject(o, "roofline", x->cost.compute_bound ? "compute-bound" : "memory-bound");
    cJSON_AddNumberToObject(o, "valid_fills", x->valid_fills);
    if (isfinite(x->score))
        cJSON_AddNumberToObject(o, "model_score", x->score);
    if (x->sim_s >= 0)
        cJSON_AddNumberToObject(o, "simulated_s", x->sim_s);
    cJSON *tr = x->trace_json ? cJSON_Parse(x->trace_json) : NULL;
    if (tr) /* the best fill, for `loom run --trace` or a one-thread measurement (bench/fidelity_1t.py) */
        cJSON_AddItemToObject(o, "trace", tr);
    if (x->run_s > 0)
        cJSON_AddNumberToObject(o, "measured_s", x->run_s);
    if (x->note[0])
        cJSON_AddStringToObject(o, "note", x->note);
    return o;
}

static void print_json(const loom_plan_ctx *c, const loom_plan *plans, const scored *s, int n, int nillegal,
                       const char *model_desc)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "target", c->target->name);
    cJSON_AddNumberToObject(root, "balance_flops_per_byte", c->balance);
    cJSON_AddStringToObject(root, "cost_model", model_desc);
    cJSON_AddNumberToObject(root, "legal", n - nillegal);
    cJSON_AddNumberToObject(root, "illegal", nillegal);
    cJSON *a = cJSON_AddArrayToObject(root, "plans");
    for (int k = 0; k < n; k++)
        cJSON_AddItemToArray(a, plan_json(plans, &s[k], k + 1));
    char *txt = cJSON_Print(root);
    printf("%s\n", txt ? txt : "{}");
    free(txt);
    cJSON_Delete(root);
}

static void print_row(const loom_plan *plans, const scored *x, int rank, const plan_opts *o)
{
    const loom_plan_verdict *v = x->verdict;
    if (!v->legal) {
        printf("%-4s %-20s illegal: %d fault%s\n", "-", plans[x->plan].name, v->nfaults,
               v->nfaults == 1 ? "" : "s");
        for (int f = 0; f < v->nfaults && f < LOOM_PLAN_MAX_FAULTS; f++)
            printf("     - %s\n", v->fault[f]);
        if (v->nfaults > LOOM_PLAN_MAX_FAULTS)
            printf("     (%d more not kept)\n", v->nfaults - LOOM_PLAN_MAX_FAULTS);
        return;
    }
    char sim[32] = "-", run[32] = "-", sc[32] = "-";
    if (isfinite(x->score))
        snprintf(sc, sizeof sc, "%.4f", x->score);
    if (x->sim_s >= 0)
        snprintf(sim, sizeof sim, "%.1f us", x->sim_s * 1e6);
    if (x->run_s > 0)
        snprintf(run, sizeof run, "%.1f us%s", x->run_s * 1e6, x->run_ok ? "" : "!");
    printf("%-4d %-20s %11.3f %11.3f %9.3f %-13s %2d/%-3d %8s %12s %12s  legal\n", rank, plans[x->plan].name,
           x->cost.flops / 1e6, x->cost.bytes / 1e6, x->cost.intensity,
           x->cost.compute_bound ? "compute-bound" : "memory-bound", x->valid_fills, (int)o->fills, sc, sim, run);
    if (x->note[0])
        printf("     %s\n", x->note);
}

static void print_scores(const loom_plan_ctx *c, const loom_plan *plans, const scored *s, int n, const plan_opts *o,
                         const char *model_desc)
{
    int nillegal = 0;
    for (int k = 0; k < n; k++)
        nillegal += !s[k].verdict->legal;
    if (o->json) {
        print_json(c, plans, s, n, nillegal, model_desc);
        return;
    }
    printf("target %s: peak %.1f GFLOP/s, bandwidth %.1f GB/s, balance %.2f FLOP/byte\n", c->target->name,
           c->peak_flops / 1e9, c->bandwidth / 1e9, c->balance);
    printf("cost model: %s\n", model_desc);
    printf("%-4s %-20s %11s %11s %9s %-13s %6s %8s %12s %12s  %s\n", "rank", "plan", "MFLOP", "MB", "FLOP/B",
           "roofline", "fills", "score", "simulated", "measured", "verdict");
    for (int k = 0; k < n; k++)
        print_row(plans, &s[k], k + 1, o);
    printf("score: the cost model's prediction for the best simulated fill (higher = predicted faster)\n");
    if (o->measure)
        printf("measured on this machine under whatever load it has (median of runs); '!' = wrong or failed\n");
    printf("%d plan%s: %d legal, %d illegal\n", n, n == 1 ? "" : "s", n - nillegal, nillegal);
}

/* The model scoring the plans (--model, --db, else pre-trained), with a
 * sentence saying which into desc. */
static loom_status open_model(const loom_plan_ctx *c, const loom_data_stats *st, const plan_opts *o,
                              loom_cost_model **m, char *desc, size_t ndesc, loom_error *err)
{
    if (o->model || o->db) {
        char path[1100];
        if (o->model)
            snprintf(path, sizeof path, "%s", o->model);
        else
            snprintf(path, sizeof path, "%s/cost_model.json", o->db);
        loom_status s = loom_plan_model_load(path, m, err);
        if (s == LOOM_ERR_IO && o->db) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            return loom_error_set(err, LOOM_ERR_IO, path, 0, 0,
                                  "%s has no cost model (a campaign saves DIR/cost_model.json when its model "
                                  "retrains, from 100 measured records by default): %.300s",
                                  o->db, why);
        }
        if (!s)
            snprintf(desc, ndesc, "%s (a saved campaign model)", path);
        return s;
    }
    int ntrained = 0;
    loom_status s = loom_plan_model_pretrain(c, st, (int)o->pretrain, o->seed, m, &ntrained, err);
    if (!s)
        snprintf(desc, ndesc,
                 "pre-trained here on %d simulated schedules of the default design space (target %s, this data); "
                 "no --model or --db given",
                 ntrained, c->target->name);
    return s;
}

/* Score legal plan k (fills, model, measurement) into *x; returns 1 when
 * --strict would call it a failure (no valid fill, a wrong measurement). */
static int score_one(const loom_plan_ctx *c, const loom_plan *p, loom_dataset *ds, const plan_opts *o,
                     loom_cost_model *model, const loom_data_stats *stats, loom_schedule *best, scored *x)
{
    loom_error err;
    int bad = 0;
    loom_plan_cost_of(c, p, &x->cost);
    loom_trace *bt = NULL;
    score_plan(c, p, o, x, best, &bt);
    if (bt && loom_trace_to_json(bt, c->prog, &x->trace_json) != LOOM_OK)
        x->trace_json = NULL;
    loom_trace_free(bt);
    if (!x->valid_fills)
        bad = 1;
    else if (loom_plan_model_score(model, stats, best, &x->score, &err))
        snprintf(x->note, sizeof x->note, "cost model: %s", err.msg);
    if (o->measure && x->valid_fills) {
        loom_run_opts ro = loom_run_defaults();
        loom_run_result res;
        if (loom_pipeline_run_schedule(best, ds, c->ref, &ro, &res, &err) == LOOM_OK) {
            x->run_s = res.latency_s;
            x->run_ok = res.status == LOOM_OK && res.correct;
            if (!x->run_ok) {
                snprintf(x->note, sizeof x->note, "measured: %s", res.message);
                bad = 1;
            }
        }
    }
    return bad;
}

static int do_score(const loom_plan_ctx *c, const char *plan_path, loom_dataset *ds, const plan_opts *o)
{
    char *text = cli_read_text(plan_path);
    if (!text) {
        fprintf(stderr, "loom plan score: cannot read %s\n", plan_path);
        return EXIT_BADINPUT;
    }
    loom_error err;
    loom_error_clear(&err);
    loom_plan *plans = NULL;
    loom_plan_verdict *verdicts = NULL;
    int n = 0, nlegal = 0;
    loom_status st = loom_plan_check(c, text, plan_path, &plans, &verdicts, &n, &err);
    free(text);
    if (st) {
        fprintf(stderr, "loom plan score: %s: %s\n", plan_path, err.msg);
        return EXIT_BADINPUT;
    }
    for (int k = 0; k < n; k++)
        nlegal += verdicts[k].legal;
    scored *s = calloc((size_t)(n > 0 ? n : 1), sizeof *s);
    loom_schedule *best = malloc(sizeof *best);
    loom_data_stats *stats = malloc(sizeof *stats);
    loom_cost_model *model = NULL;
    char desc[1400] = "none (no legal plan to score)";
    if (!s || !best || !stats)
        st = loom_error_set(&err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (!st && nlegal)
        st = loom_data_stats_compute(ds, stats, &err);
    if (!st && nlegal)
        st = open_model(c, stats, o, &model, desc, sizeof desc, &err);
    int rc = st ? EXIT_BADINPUT : 0;
    if (st)
        cli_print_err("plan", &err);
    for (int k = 0; k < n && !st; k++) {
        s[k] = (scored){.plan = k, .verdict = &verdicts[k], .score = NAN, .sim_s = -1};
        if (!verdicts[k].legal)
            rc = o->strict ? EXIT_WRONG : rc;
        else if (score_one(c, &plans[k], ds, o, model, stats, best, &s[k]) && o->strict)
            rc = EXIT_WRONG;
    }
    if (!st) {
        qsort(s, (size_t)n, sizeof *s, by_latency);
        print_scores(c, plans, s, n, o, desc);
    }
    loom_cost_model_free(model);
    free(stats);
    free(best);
    for (int k = 0; s && k < n; k++)
        free(s[k].trace_json);
    free(s);
    free(plans);
    free(verdicts);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    static cli_inputs in;
    memset(&in, 0, sizeof in);
    plan_opts o = {"host", NULL, NULL, NULL, 8, 1, 64, 0, 0, 0};
    const char *pos[3] = {NULL, NULL, NULL};
    int npos = 0;
    enum { TARGET, FILLS, SEED, MEASURE, JSON, OUT, MODEL, DB, PRETRAIN, STRICT };
    static const cli_opt opts[] = {{"target", 0, 1, TARGET},  {"fills", 0, 1, FILLS}, {"seed", 0, 1, SEED},
                                   {"measure", 0, 0, MEASURE}, {"json", 0, 0, JSON},   {"out", 0, 1, OUT},
                                   {"model", 0, 1, MODEL},     {"db", 0, 1, DB},       {"pretrain", 0, 1, PRETRAIN},
                                   {"strict", 0, 0, STRICT}};
    static cli_args args;
    cli_args_init(&args, "plan", argc, argv, PLAN_HELP, opts, (int)(sizeof opts / sizeof *opts), &in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == TARGET)
            o.target = val;
        else if (id == FILLS) {
            if (cli_parse_range("plan", "--fills", val, 1, 256, NULL, &o.fills))
                return EXIT_BADINPUT;
        } else if (id == SEED) {
            if (cli_parse_u64("plan", "--seed", val, &o.seed))
                return EXIT_BADINPUT;
        } else if (id == PRETRAIN) {
            if (cli_parse_range("plan", "--pretrain", val, 2, 100000, "schedules", &o.pretrain))
                return EXIT_BADINPUT;
        } else if (id == MODEL)
            o.model = val;
        else if (id == DB)
            o.db = val;
        else if (id == MEASURE)
            o.measure = 1;
        else if (id == JSON)
            o.json = 1;
        else if (id == STRICT)
            o.strict = 1;
        else if (id == OUT)
            o.out = val;
        else if (npos < 3)
            pos[npos++] = val;
        else {
            fprintf(stderr, "loom plan: unexpected argument '%s' (see loom plan --help)\n", val);
            return EXIT_BADINPUT;
        }
    }
    if (o.model && o.db) {
        fprintf(stderr, "loom plan: give --model FILE or --db DIR, not both\n");
        return EXIT_BADINPUT;
    }
    int describe = npos == 2 && !strcmp(pos[0], "describe"), score = npos == 3 && !strcmp(pos[0], "score");
    if (!describe && !score) {
        fprintf(stderr, "loom plan: expected `describe WORKLOAD.loom` or `score PLAN.json WORKLOAD.loom` (see loom "
                        "plan --help)\n");
        return EXIT_BADINPUT;
    }
    const char *workload = pos[npos - 1];
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    int rc = cli_load_workload("plan", workload, &in, 1, 1, &prog, &ds);
    if (rc)
        return rc;
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    loom_reference *ref = NULL;
    loom_plan_ctx c;
    memset(&c, 0, sizeof c);
    if (loom_target_load(o.target, &t, &err) || loom_reference_run(ds, &ref, &err) ||
        loom_plan_ctx_init(&c, prog, ds, ref, &t, &err)) {
        cli_print_err("plan", &err);
        rc = EXIT_BADINPUT;
    } else if (describe) {
        char *txt = NULL;
        if (loom_plan_describe(&c, &txt, &err)) {
            cli_print_err("plan", &err);
            rc = EXIT_BADINPUT;
        } else {
            FILE *f = o.out ? fopen(o.out, "w") : stdout;
            if (!f) {
                fprintf(stderr, "loom plan describe: cannot write %s\n", o.out);
                rc = EXIT_BADINPUT;
            } else {
                fprintf(f, "%s\n", txt);
                if (f != stdout)
                    fclose(f);
            }
        }
        free(txt);
    } else
        rc = do_score(&c, pos[1], ds, &o);
    loom_plan_ctx_free(&c);
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return rc;
}

int cli_plan_seeds(const char *path, const loom_program *prog, const loom_limits *lim, loom_trace ***seeds, int *n)
{
    *seeds = NULL;
    *n = 0;
    char *text = cli_read_text(path);
    if (!text) {
        fprintf(stderr, "loom tune: cannot read --plans %s\n", path);
        return EXIT_BADINPUT;
    }
    loom_error err;
    loom_error_clear(&err);
    loom_plan_ctx c;
    loom_plan *plans = NULL;
    int np = 0, rc = 0;
    if (loom_plan_ctx_init(&c, prog, NULL, NULL, NULL, &err) || loom_plan_parse(&c, text, path, &plans, &np, &err) ||
        loom_plan_fills(&c, plans, np, 4, 1, lim, seeds, n, &err)) {
        fprintf(stderr, "loom tune: --plans %s: %s\n", path, err.msg);
        rc = EXIT_BADINPUT;
    } else if (*n == 0) {
        fprintf(stderr, "loom tune: --plans %s: no plan has a valid schedule in the design space\n", path);
        rc = EXIT_BADINPUT;
    }
    loom_plan_ctx_free(&c);
    free(plans);
    free(text);
    return rc;
}

void cli_plan_seeds_free(loom_trace **seeds, int n)
{
    for (int k = 0; k < n; k++)
        loom_trace_free(seeds[k]);
    free(seeds);
}
