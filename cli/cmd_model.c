/* loom: whole models -- `loom tune MODEL.model` (the task scheduler) and
 * `loom run MODEL.model` (the forward pass); docs/models.md, issue 30. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/ir/util.h"
#include "../runtime/target/target.h"
#include "../search/model/model.h"
#include "../ship/model_run.h"
#include "../ship/model_ship.h"
#include "cli.h"

static const char *RUN_MODEL_HELP =
    "usage: loom run MODEL.model [--db DIR] [options]\n"
    "\n"
    "Runs a model's forward pass end to end (docs/models.md): every task line of the\n"
    "model file, in order, runs its kernel -- its task's best record in DIR (the\n"
    "winner of the last re-measurement, as loom replay takes it), else the default\n"
    "schedule -- with the outputs of earlier tasks fed to later tasks' inputs as the\n"
    "model's feed lines say.  Each kernel is compiled, measured in a child process and\n"
    "checked against the reference on its actual inputs; the model's outputs are\n"
    "checked against the reference interpreter's forward pass over the same dataflow,\n"
    "within the sum of the calls' tolerances (at most 1e-2).  The end-to-end latency\n"
    "is the sum over calls of runs x the kernel's median time.\n"
    "\n"
    "options:\n"
    "  --db DIR             the model's tuning database (loom tune MODEL.model --db DIR);\n"
    "                       without it every task runs its default schedule\n"
    "  --target T           whose records to take, as loom tune took it (default cpu); a\n"
    "                       simulator target's records are run on this CPU\n"
    "  --min-time SEC       keep repeating each kernel until this much time (default 0.1)\n"
    "  --time-limit SEC     kill a kernel after this long (default 10)\n"
    "  --json               print one JSON object instead of the report\n"
    "  -h, --help           this text\n"
    "\n"
    "exit codes: 0 correct, 1 a kernel failed or the outputs differ from the reference,\n"
    "            2 bad input (the model file: file:line: problem)\n";

loom_status (*cli_model_tune_fn)(loom_model *, const loom_model_tune_opts *, loom_model_tune_result *,
                                 loom_error *) = loom_model_tune;

int cli_is_model_file(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 6 && !strcmp(path + n - 6, ".model");
}

int cli_names_model(int argc, char **argv)
{
    for (int k = 0; k < argc; k++)
        if (argv[k][0] != '-' && cli_is_model_file(argv[k]))
            return 1;
    return 0;
}

static int load_model(const char *cmd, const char *path, loom_model **m)
{
    loom_error err;
    loom_error_clear(&err);
    if (loom_model_load(path, 1, m, &err)) {
        cli_print_err(cmd, &err);
        return EXIT_BADINPUT;
    }
    return 0;
}

/* ---- loom tune MODEL ------------------------------------------------------- */

static void show_model_progress(void *ctx, const loom_model_progress *p)
{
    cli_progress *ps = ctx;
    if (!cli_progress_due(ps, p->done, p->total))
        return;
    char best[32], e2e[32];
    cli_human_time(p->task_best_s, best, sizeof best);
    cli_human_time(p->e2e_s, e2e, sizeof e2e);
    fprintf(stderr, "%sstep %d  task %s (x%d) trials %d best %s  model trials %d/%d  e2e estimate %s  %.0f s%s",
            ps->tty ? "\r\033[K" : "", p->step, p->task_name, p->weight, p->task_trials, best, p->done, p->total,
            isfinite(p->e2e_s) ? e2e : "? (a task has no result yet)", p->elapsed_s, ps->tty ? "" : "\n");
    fflush(stderr);
}

static void print_model_summary(const loom_model *m, const loom_model_tune_opts *o, const loom_model_tune_result *r)
{
    printf("model %s (%s): %d task%s from %d call%s; scheduler %s; %d trials (%d resumed, %d measured now) in %d "
           "steps of up to %d\n",
           m->name, m->path, m->ntasks, m->ntasks == 1 ? "" : "s", m->ncalls, m->ncalls == 1 ? "" : "s",
           loom_task_scheduler_name(o->scheduler), r->trials, r->resumed, r->measured, r->steps, r->batch);
    printf("  %-20s %6s %7s %7s %11s %11s %8s %13s\n", "task", "weight", "trials", "share", "best", "default",
           "speedup", "weight x best");
    for (int k = 0; k < m->ntasks; k++) {
        const loom_model_task_result *t = &r->tasks[k];
        char b[32], d[32], wb[32];
        cli_human_time(t->best_s, b, sizeof b);
        cli_human_time(t->default_s, d, sizeof d);
        cli_human_time(m->tasks[k].weight * t->best_s, wb, sizeof wb);
        double x = isfinite(t->best_s) && isfinite(t->default_s) ? t->default_s / t->best_s : 0;
        printf("  %-20s %6d %7d %6.1f%% %11s %11s %7.2fx %13s%s\n", m->calls[m->tasks[k].call].name,
               m->tasks[k].weight, t->trials, r->trials ? 100.0 * t->trials / r->trials : 0.0, b, d, x, wb,
               t->terminated ? "  (space exhausted)" : "");
    }
    char b[32], d[32];
    cli_human_time(r->e2e_best_s, b, sizeof b);
    cli_human_time(r->e2e_default_s, d, sizeof d);
    printf("  end to end (sum of weight x best) %s; default %s", b, d);
    if (isfinite(r->e2e_best_s) && isfinite(r->e2e_default_s))
        printf(" (%.2fx faster)", r->e2e_default_s / r->e2e_best_s);
    printf("\n  %s; records in %s/records.jsonl, steps in %s/model.log\n",
           o->tune.remeasure_rounds ? "best: the winner of its best schedules and the default re-measured together "
                                      "(medians; never slower than the default, what replay and run take)"
                                    : "best: sampled minimum over the trial records, default: its trial record "
                                      "(--remeasure R re-measures them together)",
           o->tune.db_dir, o->tune.db_dir);
}

static void add_time(cJSON *o, const char *key, double s)
{
    if (isfinite(s))
        cJSON_AddNumberToObject(o, key, s);
    else
        cJSON_AddNullToObject(o, key);
}

static void print_model_json(const loom_model *m, const loom_model_tune_opts *o, const loom_model_tune_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", m->name);
    cJSON_AddStringToObject(j, "target", r->target_fp);
    cJSON_AddStringToObject(j, "scheduler", loom_task_scheduler_name(o->scheduler));
    cJSON_AddNumberToObject(j, "trials", r->trials);
    cJSON_AddNumberToObject(j, "resumed", r->resumed);
    cJSON_AddNumberToObject(j, "measured", r->measured);
    cJSON_AddNumberToObject(j, "steps", r->steps);
    add_time(j, "e2e_best_s", r->e2e_best_s);
    add_time(j, "e2e_default_s", r->e2e_default_s);
    cJSON *ts = cJSON_AddArrayToObject(j, "tasks");
    for (int k = 0; k < m->ntasks; k++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", m->calls[m->tasks[k].call].name);
        cJSON_AddNumberToObject(t, "weight", m->tasks[k].weight);
        cJSON_AddNumberToObject(t, "calls", m->tasks[k].ncalls);
        cJSON_AddNumberToObject(t, "trials", r->tasks[k].trials);
        cJSON_AddNumberToObject(t, "rounds", r->tasks[k].rounds);
        add_time(t, "best_s", r->tasks[k].best_s);
        add_time(t, "default_s", r->tasks[k].default_s);
        cJSON_AddBoolToObject(t, "terminated", r->tasks[k].terminated);
        cJSON_AddItemToArray(ts, t);
    }
    char *s = cJSON_PrintUnformatted(j);
    printf("%s\n", s ? s : "{}");
    free(s);
    cJSON_Delete(j);
}

int cmd_tune_model(const char *path, const loom_tune_opts *o, const char *scheduler, int json, int quiet,
                   const cli_inputs *in, int other)
{
    loom_model_tune_opts mo = loom_model_tune_defaults();
    if (in->nspecs || in->nparams || other) {
        fprintf(stderr, "loom tune: %s with a model: its task lines carry their own --data and --param "
                        "(--plans and --pin are for one workload)\n",
                in->nspecs || in->nparams ? "--data/--param" : "--plans/--pin");
        return EXIT_BADINPUT;
    }
    if (scheduler && loom_task_scheduler_parse(scheduler, &mo.scheduler)) {
        fprintf(stderr, "loom tune: unknown task scheduler '%s' (gradient, round-robin)\n", scheduler);
        return EXIT_BADINPUT;
    }
    loom_model *m = NULL;
    if (load_model("tune", path, &m))
        return EXIT_BADINPUT;
    mo.tune = *o;
    mo.trials = o->trials;
    cli_progress ps = {.tty = isatty(2), .quiet = quiet, .last = -1e9};
    mo.progress = show_model_progress;
    mo.progress_ctx = &ps;
    static loom_target tg;
    loom_error err;
    loom_error_clear(&err);
    int rc = EXIT_BADINPUT;
    loom_model_tune_result r;
    memset(&r, 0, sizeof r);
    if (loom_target_open(o->target, o->run.build.cc, o->run.build.cflags, &tg, &err)) {
        cli_print_err("tune", &err);
        goto out;
    }
    mo.tune.target_handle = &tg;
    loom_status st = cli_model_tune_fn(m, &mo, &r, &err);
    if (ps.tty && !quiet)
        fputc('\n', stderr);
    if (st) {
        cli_print_err("tune", &err);
        rc = st == LOOM_ERR_NOMEM || st == LOOM_ERR_RUN ? EXIT_WRONG : EXIT_BADINPUT;
        goto out;
    }
    if (json)
        print_model_json(m, &mo, &r);
    else
        print_model_summary(m, &mo, &r);
    rc = isfinite(r.e2e_best_s) ? 0 : EXIT_WRONG;
out:
    loom_model_tune_result_free(&r);
    loom_model_free(m);
    return rc;
}

/* ---- loom run MODEL ------------------------------------------------------- */

static void print_run_report(const loom_model *m, const loom_model_run_opts *o, const loom_model_run_result *r)
{
    printf("model %s (%s): forward pass of %d call%s (%d task%s); %d kernel%s from %s, the rest default\n",
           m->name, m->path, m->ncalls, m->ncalls == 1 ? "" : "s", m->ntasks, m->ntasks == 1 ? "" : "s",
           r->from_records, r->from_records == 1 ? "" : "s", o->db_dir ? o->db_dir : "no database");
    printf("  %-20s %5s %-18s %11s  %s\n", "call", "runs", "kernel", "latency", "check on its inputs");
    for (int k = 0; k < m->ncalls; k++) {
        const loom_model_call_run *c = &r->calls[k];
        char lat[32], kern[32];
        cli_human_time(c->latency_s, lat, sizeof lat);
        if (c->from_record)
            snprintf(kern, sizeof kern, "record line %d", c->record_line);
        else
            snprintf(kern, sizeof kern, "default");
        printf("  %-20s %5d %-18s %11s  ", m->calls[k].name, m->calls[k].runs, kern, lat);
        if (c->status == LOOM_OK)
            printf("%s (max relative error %.3g, tolerance %.3g)\n", c->correct ? "ok" : "WRONG", c->max_rel_err,
                   c->tol);
        else
            printf("FAILED %s: %s\n", loom_status_name(c->status), c->message);
        if (c->status == LOOM_OK && c->message[0])
            printf("  %-20s %s\n", "", c->message);
    }
    char e2e[32];
    cli_human_time(r->latency_s, e2e, sizeof e2e);
    printf("  end to end  %s (sum over calls of runs x median latency)\n", e2e);
    printf("  correct     %s (the model's %d output%s against the reference forward pass: max relative error "
           "%.3g, tolerance %.3g)\n",
           r->correct ? "yes" : "NO", m->noutputs, m->noutputs == 1 ? "" : "s", r->max_rel_err, r->tol);
}

static void print_run_json(const loom_model *m, const loom_model_run_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", m->name);
    add_time(j, "latency_s", r->latency_s);
    cJSON_AddBoolToObject(j, "correct", r->correct);
    cJSON_AddNumberToObject(j, "max_rel_err", isfinite(r->max_rel_err) ? r->max_rel_err : 1e308);
    cJSON_AddNumberToObject(j, "tol", r->tol);
    cJSON_AddNumberToObject(j, "from_records", r->from_records);
    cJSON *cs = cJSON_AddArrayToObject(j, "calls");
    for (int k = 0; k < m->ncalls; k++) {
        const loom_model_call_run *c = &r->calls[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", m->calls[k].name);
        cJSON_AddNumberToObject(o, "runs", m->calls[k].runs);
        cJSON_AddBoolToObject(o, "from_record", c->from_record);
        cJSON_AddStringToObject(o, "status", loom_status_name(c->status));
        add_time(o, "latency_s", c->latency_s);
        cJSON_AddBoolToObject(o, "correct", c->correct);
        cJSON_AddItemToArray(cs, o);
    }
    char *s = cJSON_PrintUnformatted(j);
    printf("%s\n", s ? s : "{}");
    free(s);
    cJSON_Delete(j);
}

static int parse_seconds(const char *flag, const char *val, double *out)
{
    char *end;
    double v = strtod(val, &end);
    if (end == val || *end || !(v > 0) || v > 1e6) {
        fprintf(stderr, "loom run: %s expects a positive number of seconds, got '%s'\n", flag, val);
        return EXIT_BADINPUT;
    }
    *out = v;
    return 0;
}

/* Parse `loom run MODEL`'s command line.  -1 to go on, else the exit code. */
static int run_model_parse(int argc, char **argv, loom_model_run_opts *o, const char **path, int *json)
{
    enum { DB, TARGET, MIN_TIME, TIME_LIMIT, JSON };
    static const cli_opt opts[] = {{"db", 0, 1, DB},
                                   {"target", 0, 1, TARGET},
                                   {"min-time", 0, 1, MIN_TIME},
                                   {"time-limit", 0, 1, TIME_LIMIT},
                                   {"json", 0, 0, JSON}};
    static cli_args args;
    static cli_inputs in;
    memset(&in, 0, sizeof in);
    cli_args_init(&args, "run", argc, argv, RUN_MODEL_HELP, opts, (int)(sizeof opts / sizeof *opts), &in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == DB)
            o->db_dir = val;
        else if (id == TARGET)
            o->target = val;
        else if (id == JSON)
            *json = 1;
        else if (id == MIN_TIME || id == TIME_LIMIT) {
            if (parse_seconds(a, val, id == MIN_TIME ? &o->run.measure.min_seconds : &o->run.measure.time_limit))
                return EXIT_BADINPUT;
        } else if (!*path) {
            *path = val;
        } else {
            fprintf(stderr, "loom run: more than one model ('%s' and '%s')\n", *path, val);
            return EXIT_BADINPUT;
        }
    }
    if (in.nspecs || in.nparams) {
        fprintf(stderr, "loom run: --data/--param with a model: its task lines carry their own\n");
        return EXIT_BADINPUT;
    }
    return -1;
}

int cmd_run_model(int argc, char **argv)
{
    loom_model_run_opts o = loom_model_run_defaults();
    const char *path = NULL;
    int json = 0;
    int rc = run_model_parse(argc, argv, &o, &path, &json);
    if (rc >= 0)
        return rc;
    loom_model *m = NULL;
    if (load_model("run", path, &m))
        return EXIT_BADINPUT;
    loom_model_run_result r;
    loom_error err;
    loom_error_clear(&err);
    if (loom_model_run(m, &o, &r, &err)) {
        cli_print_err("run", &err);
        loom_model_free(m);
        return EXIT_BADINPUT;
    }
    if (json)
        print_run_json(m, &r);
    else
        print_run_report(m, &o, &r);
    rc = r.correct ? 0 : EXIT_WRONG;
    loom_model_run_result_free(&r);
    loom_model_free(m);
    return rc;
}

/* ---- loom replay MODEL --emit-lib NAME --------------------------------------- */

static const char *REPLAY_MODEL_HELP =
    "usage: loom replay MODEL.model [--db DIR] --emit-lib NAME [--lib-dir DIR] [--target T]\n"
    "\n"
    "Ships a whole model as one C library (docs/models.md \"Shipping a model\"): every\n"
    "task's kernel -- its best record in DIR (the winner of the last re-measurement,\n"
    "as loom replay takes it), else its default schedule -- as NAME_TASK.c/.h, and\n"
    "NAME.c/.h whose entry NAME(...) runs the forward pass (every call in order, fed\n"
    "inputs taking their producers' outputs, intermediates allocated by the entry);\n"
    "all built into libNAME.so with -O3 -march=native -fopenmp.  The Python package\n"
    "loads it with loom.load_model.\n"
    "\n"
    "options:\n"
    "  --db DIR             the model's tuning database (loom tune MODEL.model --db DIR);\n"
    "                       a task without a record there ships its default schedule;\n"
    "                       without --db every task does\n"
    "  --emit-lib NAME      the library's name: a C identifier (NAME_TASK must fit in 40\n"
    "                       characters)\n"
    "  --lib-dir DIR        where to write (default: the current directory)\n"
    "  --target T           whose records to take, as loom tune took it (default cpu); the\n"
    "                       library is built for this CPU\n"
    "  -h, --help           this text\n"
    "\n"
    "exit codes: 0 written, 1 the build failed, 2 bad input\n";

int cmd_replay_model(int argc, char **argv)
{
    const char *path = NULL, *db = NULL, *name = NULL, *dir = ".", *target = "cpu";
    enum { DB, EMIT_LIB, LIB_DIR, TARGET };
    static const cli_opt opts[] = {
        {"db", 0, 1, DB}, {"emit-lib", 0, 1, EMIT_LIB}, {"lib-dir", 0, 1, LIB_DIR}, {"target", 0, 1, TARGET}};
    static cli_args args;
    static cli_inputs in;
    memset(&in, 0, sizeof in);
    cli_args_init(&args, "replay", argc, argv, REPLAY_MODEL_HELP, opts, (int)(sizeof opts / sizeof *opts), &in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == DB || id == EMIT_LIB || id == LIB_DIR || id == TARGET) {
            *(id == DB ? &db : id == EMIT_LIB ? &name : id == LIB_DIR ? &dir : &target) = val;
        } else if (!path) {
            path = val;
        } else {
            fprintf(stderr, "loom replay: more than one model ('%s' and '%s')\n", path, val);
            return EXIT_BADINPUT;
        }
    }
    if (!name || in.nspecs || in.nparams) {
        fprintf(stderr, "loom replay: %s (see loom replay MODEL.model --help)\n",
                !name ? "a model ships with --emit-lib NAME" : "--data/--param with a model: its task lines carry their own");
        return EXIT_BADINPUT;
    }
    if (cli_check_lib_name("replay", name, dir))
        return EXIT_BADINPUT;
    if (db && access(db, F_OK) != 0) {
        fprintf(stderr, "loom replay: %s: no such campaign directory\n", db);
        return EXIT_BADINPUT;
    }
    loom_model *m = NULL;
    if (load_model("replay", path, &m))
        return EXIT_BADINPUT;
    loom_model_ship_result r;
    loom_error err;
    loom_error_clear(&err);
    int rc = 0;
    if (loom_model_ship(m, db, target, name, dir, 1, &r, &err)) {
        cli_print_err("replay", &err);
        loom_model_free(m);
        return err.status == LOOM_ERR_BUILD || err.status == LOOM_ERR_NOMEM ? EXIT_WRONG : EXIT_BADINPUT;
    }
    printf("model %s (%s): %d task%s, %d from tuned records in %s, the rest default\n", m->name, m->path, m->ntasks,
           m->ntasks == 1 ? "" : "s", r.from_records, db ? db : "no database");
    for (int k = 0; k < m->ntasks; k++) {
        const loom_model_ship_task *t = &r.tasks[k];
        if (t->from_record)
            printf("  %-24s record line %d (%.6g s)\n", t->kernel, t->record_line, t->record_latency_s);
        else
            printf("  %-24s default%s%s\n", t->kernel, t->why_default[0] ? ": " : "", t->why_default);
    }
    printf("wrote %s/%s.c, %s/%s.h, the kernels' files and %s/lib%s.so (entry %s)\n", dir, name, dir, name, dir,
           name, name);
    loom_model_ship_result_free(&r);
    loom_model_free(m);
    return rc;
}
