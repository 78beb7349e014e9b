/* loom: the command-line tool.
 *
 *   loom run WORKLOAD.loom [--data NAME=FILE]... [--param NAME=INT]... [--trace T.json] [--json] ...
 *   loom show TRACE.json [--workload W.loom]            (cmd_trace.c)
 *   loom validate TRACE.json WORKLOAD.loom [--data ...]  (cmd_trace.c)
 *   loom sample WORKLOAD.loom --count N --out DIR ...    (cmd_trace.c)
 *   loom db DIR [--workload W.loom] [--json] [--limit N] [--plot F] [--fidelity] (cmd_db*.c)
 *   loom space WORKLOAD.loom [--modules a,b] ...          (cmd_space.c)
 *   loom tune WORKLOAD.loom --trials N --db DIR ...       (cmd_tune.c)
 *   loom replay --db DIR WORKLOAD.loom --emit-c FILE | --emit-lib NAME ...  (cmd_tune.c; ship/)
 *
 * Exit codes: 0 success (a correct kernel), 1 wrong result or failed kernel,
 * 2 bad input (usage, workload, data).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/ir/program.h"
#include "../dsl/ir/util.h"
#include "../modules/module.h"
#include "../runtime/lower/codegen.h"
#include "../ship/ship.h"
#include "../runtime/data/dataset.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/pipeline.h"
#include "../runtime/measure/reference.h"
#include "../runtime/sim/sim.h"
#include "../runtime/runner/runner.h"
#include "../runtime/target/target.h"
#include "../search/tune/tune.h"
#include "cli.h"

static const char *MAIN_HELP =
    "loom - find fast schedules for sparse and attention tensor programs\n"
    "\n"
    "usage: loom COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run WORKLOAD.loom    lower, compile, measure and check one schedule on real data\n"
    "                       (the default schedule, or a recorded trace with --trace)\n"
    "  show TRACE.json      print a trace as the C calls that would produce it\n"
    "  validate TRACE.json WORKLOAD.loom\n"
    "                       replay a trace and check it with the validator\n"
    "                       (--rules: list the validator's rules)\n"
    "  sample WORKLOAD.loom draw random schedules, write their traces as JSON\n"
    "  db DIR               print a campaign's tuning records per workload and target,\n"
    "                       best first (--plot FILE.png|svg: draw the campaign)\n"
    "  space WORKLOAD.loom  print the design space (C calls with holes) and its size\n"
    "  navigate WORKLOAD.loom\n"
    "                       schedule by navigation: fill the space's holes from menus of\n"
    "                       valid choices only (--json: a line protocol; docs/navigation.md)\n"
    "  tune WORKLOAD.loom --trials N --db DIR\n"
    "                       search for a fast schedule (a tuning campaign; resumable);\n"
    "                       tune MODEL.model: a whole model's tasks (docs/models.md)\n"
    "  replay --db DIR WORKLOAD.loom --emit-c FILE | --emit-lib NAME\n"
    "                       write the best tuned schedule as a standalone C file, or as\n"
    "                       a kernel library NAME.c, NAME.h, libNAME.so (docs/shipping.md);\n"
    "                       replay MODEL.model --emit-lib NAME: one library running the\n"
    "                       whole forward pass (docs/models.md)\n"
    "  calibrate            measure this host (a few seconds) into the simulator's model of\n"
    "                       it, cached per CPU (--show prints it; docs/simulator.md)\n"
    "  plan describe|score  fusion plans: the proposer's context as JSON; check and score\n"
    "                       plans handed in (AutoSparse's schema, docs/plans.md)\n"
    "\n"
    "options:\n"
    "  -h, --help           this text; `loom COMMAND --help` for a command's options\n"
    "  --version            print the version\n"
    "\n"
    "exit codes: 0 success, 1 wrong result, failed kernel or invalid trace, 2 bad input\n"
    "environment: LOOM_CACHE (compiled kernels and pre-training's simulated latencies; default\n"
    "             ~/.cache/loom, /tmp/loom-cache without $HOME; make test, demo and bench set\n"
    "             build/cache), LOOM_CC (C compiler),\n"
    "             OMP_NUM_THREADS (threads of generated kernels), LOOM_CALIBRATE (quick: a\n"
    "             first-use calibration in quick mode; off: the uncalibrated host model)\n";

static const char *RUN_HELP =
    "usage: loom run WORKLOAD.loom [options]\n"
    "       loom run MODEL.model [--db DIR] (a whole model's forward pass: loom run MODEL.model --help)\n"
    "\n"
    "Lowers the workload's default schedule -- the one a campaign measures as its\n"
    "baseline and records first: the design space's default for the target, shaped and\n"
    "validated by the target's limits, else (an attention chain) modules/default.c's\n"
    "Scorch heuristic; the report says which and why (modules/module.h\n"
    "loom_default_build, docs/modules.md \"The default schedule\") -- to C, compiles\n"
    "it (cc -O3 -march=native -ffp-contract=fast\n"
    "-fno-math-errno -fopenmp), measures it in an isolated child process and checks its\n"
    "outputs against a double-precision reference interpreter.  With --trace it runs\n"
    "the schedule a trace builds instead (replayed, then checked by the validator);\n"
    "with --naive the naive loop nest (loops in the order the index variables appear,\n"
    "the outermost free loop parallel).  Timed runs whose threads were descheduled\n"
    "(a loaded machine) are re-run; when half the counted runs stalled anyway the\n"
    "report says \"warning    figure unreliable: ...\" (JSON: \"unreliable\": true,\n"
    "\"stalled_runs\"); OMP_WAIT_POLICY=passive helps on a loaded machine\n"
    "(docs/tuning.md \"One measurement\").\n"
    "\n"
    "options:\n"
    "  --data NAME=FILE     read tensor NAME from a Matrix Market file (repeatable);\n"
    "                       dense inputs without data are filled from a seeded generator\n"
    "  --param NAME=INT     bind size NAME (overrides a `param` default; repeatable)\n"
    "  --json               print one JSON object instead of the human report\n"
    "  --seed S             seed of the dense-input generator (default 1)\n"
    "  --serial             no parallel loop in the kernel (not with --trace)\n"
    "  --naive              the naive loop nest instead of the default schedule\n"
    "  --trace FILE         run the schedule of a trace (JSON, e.g. from loom sample):\n"
    "                       its workload hash must match, it must replay and validate\n"
    "  --force              with --trace: run even when the workload hash differs\n"
    "  --min-time SEC       keep repeating until this much kernel time (default 0.1)\n"
    "  --time-limit SEC     kill the kernel after this long (default 10)\n"
    "  --target T           cpu (default: compile, run and check on this machine), or\n"
    "                       the simulator: sim (the host's model), sim:NAME\n"
    "                       (targets/NAME.json), sim:FILE.json or FILE.json; simulated\n"
    "                       runs print the simulated latency (no outputs are computed;\n"
    "                       with --json also the simulator's counters: cycles per core,\n"
    "                       instructions, loads, lookups and misses per cache level).\n"
    "                       The trace is validated, and every schedule lowered, with\n"
    "                       the target's limits\n"
    "  --emit-c FILE        also write the generated C to FILE\n"
    "  --emit-lib NAME      also write a named kernel library: NAME.c, NAME.h and the\n"
    "                       built libNAME.so (loom replay --help, docs/shipping.md)\n"
    "  --lib-dir DIR        where --emit-lib writes (default: the current directory)\n"
    "  --print-lir          print the lowered loop tree\n"
    "  -h, --help           this text\n"
    "\n"
    "JSON fields: workload, workload_hash, status, message, correct, latency_s, flops,\n"
    "gflops, max_rel_err, tol, repeats, stalled_runs, unreliable, core_line_ns (a cache line's\n"
    "round trip between two cores before the kernel ran, ns: the machine's state; null on one\n"
    "CPU), stall_check (run-queue:\n"
    "Linux's schedstat wait; cpu-time: getrusage), threads, cpu_s, runq_s (seconds per run,\n"
    "medians), compile_s, cached, simulated, sizes, data_fingerprint,\n"
    "trace (with --trace), and default (without --trace or --naive: schedule \"space\" or\n"
    "\"modules/default.c\", why_not_space, modules, target, limits).\n"
    "exit codes: 0 correct, 1 wrong result, failed kernel, or a trace that does not replay\n"
    "            or validate, 2 bad input (also a malformed trace or another workload's)\n";

static int parse_double(const char *s, const char *flag, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0)) {
        fprintf(stderr, "loom run: %s expects a positive number of seconds, got '%s'\n", flag, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* Which default `loom run` built (run_schedule): its target and how. */
typedef struct run_default {
    int built;             /* 1: the default schedule is run (no --trace, no --naive) */
    char target[200];      /* the target whose limits shaped it: "cpu:<hash>" or "sim:NAME:<hash>" */
    char modules[512];     /* the design space it is the default of */
    loom_default_info info;
} run_default;

/* `loom run --json`'s "default": which default, why, and the target's limits. */
static void json_default(cJSON *o, const run_default *d)
{
    if (!d || !d->built)
        return;
    cJSON *j = cJSON_AddObjectToObject(o, "default");
    cJSON_AddStringToObject(j, "schedule", d->info.in_space ? "space" : "modules/default.c");
    if (d->info.in_space)
        cJSON_AddNullToObject(j, "why_not_space");
    else
        cJSON_AddStringToObject(j, "why_not_space", d->info.why_not);
    cJSON_AddStringToObject(j, "modules", d->modules);
    cJSON_AddStringToObject(j, "target", d->target);
    const loom_limits *l = &d->info.limits;
    cJSON *lim = cJSON_AddObjectToObject(j, "limits");
    cJSON_AddNumberToObject(lim, "vector_lanes", l->vector_lanes);
    cJSON_AddNumberToObject(lim, "max_vector_factor", l->max_vector_factor);
    cJSON_AddNumberToObject(lim, "cores", l->cores);
    cJSON_AddNumberToObject(lim, "vector_registers", loom_limits_registers(l));
    cJSON_AddNumberToObject(lim, "max_workspace_bytes", (double)l->max_workspace_bytes);
    cJSON_AddNumberToObject(lim, "llc_bytes", (double)l->llc_bytes);
}

/* The human report's name of the default schedule: whose it is, why, and
 * the target whose limits shaped it. */
static const char *default_text(const run_default *d, char *buf, size_t n)
{
    if (d->info.in_space)
        snprintf(buf, n, "default schedule (the design space's default; limits of %s)", d->target);
    else
        snprintf(buf, n, "default schedule (modules/default.c's, not the space's: %s; limits of %s)",
                 d->info.why_not, d->target);
    return buf;
}

/* The start of `loom run --json`'s object: the workload, its hash, the trace
 * and which default schedule (def NULL or not built: none). */
static cJSON *json_head(const char *workload, const loom_program *prog, const char *trace_path, const run_default *def)
{
    cJSON *o = cJSON_CreateObject();
    char hash[32];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)loom_program_hash(prog));
    cJSON_AddStringToObject(o, "workload", workload);
    cJSON_AddStringToObject(o, "workload_hash", hash);
    if (trace_path)
        cJSON_AddStringToObject(o, "trace", trace_path);
    json_default(o, def);
    return o;
}

/* loom run --target sim...: the schedule through the target's simulator
 * runner (runtime/runner/runner.h: lowered with the target's limits,
 * simulated); a trace was validated with them already (run_schedule). */
static int run_simulated(const loom_target *tp, const char *workload, const loom_program *prog,
                         const loom_dataset *ds, const loom_schedule *tsch, int serial, int json,
                         const char *trace_path, const run_default *def)
{
    const loom_target t = *tp;
    loom_error err;
    loom_error_clear(&err);
    loom_schedule *naive = tsch ? NULL : malloc(sizeof *naive);
    const loom_schedule *use = tsch ? tsch : naive;
    loom_runner *runner = NULL;
    loom_runner_result *res = malloc(sizeof *res);
    int rc = EXIT_WRONG;
    if (!use || !res || (naive && loom_schedule_naive(naive, prog, serial, &err)) ||
        loom_runner_sim_new(tp, ds, NULL, &runner, &err)) {
        if (!use || !res)
            loom_error_set(&err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        cli_print_err("run", &err);
        goto out;
    }
    loom_status rs;
    loom_runner_run_one(runner, use, res, &rs);
    if (rs) {
        loom_error_set(&err, rs, prog->path, 0, 0, "%s", res->message);
        cli_print_err("run", &err);
        goto out;
    }
    const loom_sim_result r = res->sim;
    char fp[160], line[512];
    snprintf(fp, sizeof fp, "%s", t.fingerprint);
    loom_sim_summary(&r, &t, line, sizeof line);
    if (json) {
        cJSON *o = json_head(workload, prog, trace_path, def);
        cJSON_AddStringToObject(o, "status", "ok");
        cJSON_AddBoolToObject(o, "simulated", 1);
        cJSON_AddStringToObject(o, "target", fp);
        cJSON_AddNumberToObject(o, "latency_s", r.latency_s);
        cJSON_AddNumberToObject(o, "cycles", r.cycles);
        cJSON_AddNumberToObject(o, "flops", r.flops);
        cJSON_AddNumberToObject(o, "gflops", r.latency_s > 0 ? r.flops / r.latency_s / 1e9 : 0);
        cJSON_AddNumberToObject(o, "dram_bytes", r.dram_bytes);
        cJSON_AddBoolToObject(o, "sampled", r.sampled);
        cJSON_AddNumberToObject(o, "sample_fraction", r.sample_fraction);
        /* the simulator's counters (runtime/sim/sim.h loom_sim_result), for
           reading where a simulated latency comes from */
        cJSON *c = cJSON_AddObjectToObject(o, "counters");
        cJSON_AddNumberToObject(c, "compute_cycles", r.compute_cycles);
        cJSON_AddNumberToObject(c, "memory_cycles", r.memory_cycles);
        cJSON *cc = cJSON_AddArrayToObject(c, "core_cycles");
        for (int k = 0; k < r.cores && k < LOOM_SIM_MAX_CORES; k++)
            cJSON_AddItemToArray(cc, cJSON_CreateNumber(r.core_cycles[k]));
        cJSON_AddNumberToObject(c, "regions", r.regions);
        cJSON_AddNumberToObject(c, "parallel_regions", r.parallel_regions);
        cJSON_AddNumberToObject(c, "instructions", r.instructions);
        cJSON_AddNumberToObject(c, "loads", r.loads);
        cJSON_AddNumberToObject(c, "stores", r.stores);
        cJSON_AddNumberToObject(c, "gathers", r.gathers);
        cJSON_AddNumberToObject(c, "branches", r.branches);
        cJSON_AddNumberToObject(c, "branch_misses", r.branch_misses);
        cJSON_AddNumberToObject(c, "page_transfers", r.page_transfers);
        cJSON_AddNumberToObject(c, "events", r.events);
        cJSON *lv = cJSON_AddArrayToObject(c, "caches");
        for (int l = 0; l < t.ncaches && l < LOOM_TARGET_MAX_CACHES; l++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", t.caches[l].name);
            cJSON_AddNumberToObject(e, "accesses", r.accesses[l]);
            cJSON_AddNumberToObject(e, "misses", r.misses[l]);
            cJSON_AddItemToArray(lv, e);
        }
        char *txt = cJSON_Print(o);
        if (txt)
            puts(txt);
        free(txt);
        cJSON_Delete(o);
    } else {
        printf("workload   %s (hash %016llx)\n", workload, (unsigned long long)loom_program_hash(prog));
        char dt[1600];
        if (trace_path || !tsch)
            printf("schedule   %s\n", trace_path ? trace_path : "the naive loop nest");
        else
            printf("schedule   the %s\n", default_text(def, dt, sizeof dt));
        printf("target     %s (%s)\n", t.name, fp);
        printf("simulated  %s\n", line);
        if (r.sampled)
            printf("note       the data is too large to simulate whole: %.1f%% of the outer iterations were "
                   "simulated and scaled (runtime/sim/sim.h)\n",
                   100 * r.sample_fraction);
    }
    rc = 0;
out:
    loom_runner_free(runner);
    free(res);
    free(naive);
    (void)ds;
    return rc;
}

/* What `loom run`'s options asked for. */
typedef struct {
    const char *workload, *emit_c, *trace_path, *target, *emit_lib, *lib_dir;
    int json, print_lir, force, naive;
    uint64_t seed;
    loom_run_opts opts;      /* opts.limits: &tgt.limits */
    loom_target tgt;         /* the target handle (loom_target_open of `target`), chosen once */
    run_default def; /* filled by run_schedule */
} run_args;

/* Parse `loom run`'s command line into *ra and *in.  Returns -1 to go on, or
 * the exit code to return (help printed, or bad usage). */
static int run_parse(int argc, char **argv, run_args *ra, cli_inputs *in)
{
    memset(ra, 0, sizeof *ra);
    ra->target = "cpu";
    ra->lib_dir = ".";
    ra->seed = 1;
    ra->opts = loom_run_defaults();
    enum { SEED, MIN_TIME, TIME_LIMIT, EMIT_C, TRACE, TARGET, FORCE, JSON, SERIAL, NAIVE, PRINT_LIR, EMIT_LIB, LIB_DIR };
    static const cli_opt cli_opts[] = {
        {"seed", 0, 1, SEED},     {"min-time", 0, 1, MIN_TIME}, {"time-limit", 0, 1, TIME_LIMIT},
        {"emit-c", 0, 1, EMIT_C}, {"trace", 0, 1, TRACE},       {"target", 0, 1, TARGET},
        {"force", 0, 0, FORCE},   {"json", 0, 0, JSON},         {"serial", 0, 0, SERIAL},
        {"naive", 0, 0, NAIVE},   {"print-lir", 0, 0, PRINT_LIR}, {"emit-lib", 0, 1, EMIT_LIB},
        {"lib-dir", 0, 1, LIB_DIR},
    };
    static cli_args args;
    cli_args_init(&args, "run", argc, argv, RUN_HELP, cli_opts, (int)(sizeof cli_opts / sizeof *cli_opts), in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == SEED) {
            if (cli_parse_u64("run", "--seed", val, &ra->seed))
                return EXIT_BADINPUT;
        } else if (id == MIN_TIME || id == TIME_LIMIT) {
            if (parse_double(val, id == MIN_TIME ? "--min-time" : "--time-limit",
                             id == MIN_TIME ? &ra->opts.measure.min_seconds : &ra->opts.measure.time_limit))
                return EXIT_BADINPUT;
        } else if (id == EMIT_C) {
            ra->emit_c = val;
        } else if (id == EMIT_LIB) {
            ra->emit_lib = val;
        } else if (id == LIB_DIR) {
            ra->lib_dir = val;
        } else if (id == TRACE) {
            if (ra->trace_path) {
                fprintf(stderr, "loom run: --trace given twice\n");
                return EXIT_BADINPUT;
            }
            ra->trace_path = val;
        } else if (id == TARGET) {
            ra->target = val;
        } else if (id == FORCE || id == JSON || id == SERIAL || id == NAIVE || id == PRINT_LIR) {
            *(id == FORCE    ? &ra->force
              : id == JSON   ? &ra->json
              : id == SERIAL ? &ra->opts.serial
              : id == NAIVE  ? &ra->naive
                             : &ra->print_lir) = 1;
        } else if (!ra->workload) {
            ra->workload = val;
        } else {
            fprintf(stderr, "loom run: more than one workload ('%s' and '%s')\n", ra->workload, val);
            return EXIT_BADINPUT;
        }
    }
    (void)a;
    const char *bad = !ra->workload                        ? "no workload given\n%s"
                      : ra->trace_path && ra->opts.serial ? "--serial does not apply with --trace (the trace decides "
                                                            "which loops are parallel)\n"
                      : ra->naive && ra->trace_path       ? "--naive and --trace exclude each other\n"
                      : ra->force && !ra->trace_path      ? "--force only applies with --trace\n"
                                                          : NULL;
    if (bad) {
        fputs("loom run: ", stderr);
        fprintf(stderr, bad, RUN_HELP);
        return EXIT_BADINPUT;
    }
    return -1;
}

/* The design space of ra->tgt (kind "cpu" or "sim", as `loom tune`'s)
 * with the target's limits into *space, and ra->def's target and modules.
 * Returns 0, or the exit code (err filled). */
static int run_default_space(run_args *ra, const loom_registry *reg, loom_space **space, loom_error *err)
{
    int sim = ra->tgt.kind == LOOM_TARGET_SIM;
    snprintf(ra->def.target, sizeof ra->def.target, "%s", ra->tgt.fingerprint);
    if (loom_space_new(reg, NULL, sim ? "sim" : "cpu", space, err))
        return EXIT_BADINPUT;
    loom_space_set_limits(*space, &ra->tgt.limits);
    snprintf(ra->def.modules, sizeof ra->def.modules, "%s", loom_default_modules(sim ? "sim" : "cpu"));
    return 0;
}

/* The schedule `loom run` measures: the trace's (replayed and validated), the
 * default schedule, or NULL for the naive nest (*tsch stays NULL).  Returns 0,
 * or the exit code after printing why. */
static int run_schedule(run_args *ra, const loom_program *prog, loom_trace **trace, loom_schedule **tsch)
{
    loom_error err;
    loom_error_clear(&err);
    if (ra->trace_path) {
        if (cli_load_trace("run", ra->trace_path, trace) ||
            cli_check_hash("run", *trace, ra->trace_path, prog, ra->workload, ra->force))
            return EXIT_BADINPUT;
        *tsch = malloc(sizeof **tsch);
        if (!*tsch) {
            fprintf(stderr, "loom run: out of memory\n");
            return EXIT_BADINPUT;
        }
        loom_violation v;
        char buf[1200];
        switch (cli_replay_validate(*trace, prog, &ra->tgt.limits, *tsch, &v, &err)) {
        case CLI_REPLAY_VALID:
            return 0;
        case CLI_REPLAY_FAILED:
            fprintf(stderr, "loom run: %s: the trace does not replay: %s\n", ra->trace_path, err.msg);
            return EXIT_WRONG;
        case CLI_REPLAY_INVALID:
            fprintf(stderr, "loom run: %s: invalid schedule for target %s: %s\n", ra->trace_path, ra->tgt.name,
                    cli_violation_text(&v, buf, sizeof buf));
            return EXIT_WRONG;
        case CLI_REPLAY_ERROR:
            break;
        }
        cli_print_err("run", &err);
        return EXIT_BADINPUT;
    }
    if (ra->naive)
        return 0;
    /* the default schedule (modules/module.h loom_default_build): the
     * campaign's, in the target's design space with the target's limits */
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    *tsch = malloc(sizeof **tsch);
    int rc = 0;
    if (!reg || !*tsch)
        rc = EXIT_BADINPUT, loom_error_set(&err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    else if (!(rc = run_default_space(ra, reg, &space, &err)) &&
             (loom_schedule_init(*tsch, prog, NULL, &err) ||
              loom_default_build(space, NULL, *tsch, &ra->def.info, &err)))
        rc = EXIT_BADINPUT;
    ra->def.built = !rc;
    loom_space_free(space);
    loom_registry_free(reg);
    if (rc) {
        if (err.msg[0])
            cli_print_err("run", &err);
        return rc;
    }
    for (int s = 0; ra->opts.serial && s < (*tsch)->nstages; s++)
        for (int l = 0; l < (*tsch)->stages[s].nloops; l++)
            if ((*tsch)->stages[s].loops[l].kind == LOOM_LOOP_PARALLEL)
                (*tsch)->stages[s].loops[l].kind = LOOM_LOOP_SERIAL;
    return 0;
}

/* --emit-c, --emit-lib, --print-lir: lower the schedule (or the naive nest)
 * and write what was asked.  Returns 0, or -1 after printing why. */
static int run_emit(const run_args *ra, const loom_program *prog, const loom_schedule *tsch)
{
    if (ra->emit_lib && cli_check_lib_name("run", ra->emit_lib, ra->lib_dir))
        return -1;
    if (!ra->emit_c && !ra->print_lir && !ra->emit_lib)
        return 0;
    loom_error err;
    loom_error_clear(&err);
    lir_func *f = NULL;
    char *src = NULL;
    int rc = -1;
    loom_schedule *sch = tsch ? NULL : malloc(sizeof *sch);
    const loom_schedule *use = tsch ? tsch : sch;
    if (!use || (!tsch && loom_schedule_naive(sch, prog, ra->opts.serial, &err)) ||
        loom_lower_for(use, &ra->tgt.limits, &f, &err)) {
        if (!use)
            loom_error_set(&err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        cli_print_err("run", &err);
        goto out;
    }
    if (ra->print_lir)
        loom_lir_print(f, stdout);
    if (ra->emit_c) {
        if (loom_codegen_c(f, "loom_kernel", &src, &err)) {
            cli_print_err("run", &err);
            goto out;
        }
        FILE *fp = fopen(ra->emit_c, "w");
        int bad = !fp || fputs(src, fp) < 0;
        if (fp && fclose(fp))
            bad = 1;
        if (bad) {
            fprintf(stderr, "loom run: cannot write %s: %s\n", ra->emit_c, strerror(errno));
            goto out;
        }
    }
    if (ra->emit_lib && loom_ship_write(f, ra->emit_lib, ra->lib_dir,
                                        ra->trace_path ? ra->trace_path : "loom run: the default schedule", 1, &err)) {
        cli_print_err("run", &err);
        goto out;
    }
    rc = 0;
out:
    if (f)
        loom_lir_func_free(f);
    free(src);
    free(sch);
    return rc;
}

/* `loom run --json`'s object for a measured run. */
static void run_print_json(const run_args *ra, const loom_program *prog, const loom_dataset *ds,
                           const loom_run_result *res)
{
    cJSON *o = json_head(ra->workload, prog, ra->trace_path, &ra->def);
    cJSON_AddStringToObject(o, "status", res->status == LOOM_OK ? "ok" : loom_status_name(res->status));
    /* a compiler's message may be in another encoding: JSON is UTF-8 */
    loom_strbuf msg = {0};
    loom_utf8_repair(&msg, res->message, strlen(res->message));
    cJSON_AddStringToObject(o, "message", msg.s && !msg.oom ? msg.s : "");
    free(msg.s);
    cJSON_AddBoolToObject(o, "correct", res->status == LOOM_OK);
    if (res->latency_s > 0)
        cJSON_AddNumberToObject(o, "latency_s", res->latency_s);
    else
        cJSON_AddNullToObject(o, "latency_s");
    cJSON_AddNumberToObject(o, "flops", res->flops);
    cJSON_AddNumberToObject(o, "gflops", res->gflops);
    cJSON_AddNumberToObject(o, "max_rel_err", res->max_rel_err);
    cJSON_AddNumberToObject(o, "tol", res->tol);
    cJSON_AddNumberToObject(o, "repeats", res->m.repeats);
    cJSON_AddNumberToObject(o, "stalled_runs", res->m.stalled_runs);
    cJSON_AddStringToObject(o, "stall_check", res->m.runq_probe ? "run-queue" : "cpu-time");
    cJSON_AddNumberToObject(o, "threads", res->m.threads);
    cJSON_AddNumberToObject(o, "cpu_s", res->m.cpu_s);
    if (res->m.core_line_ns > 0)
        cJSON_AddNumberToObject(o, "core_line_ns", res->m.core_line_ns);
    else
        cJSON_AddNullToObject(o, "core_line_ns");
    if (res->m.runq_probe)
        cJSON_AddNumberToObject(o, "runq_s", res->m.runq_s);
    else
        cJSON_AddNullToObject(o, "runq_s");
    cJSON_AddBoolToObject(o, "unreliable", res->m.unreliable);
    cJSON_AddNumberToObject(o, "compile_s", res->compile_seconds);
    cJSON_AddBoolToObject(o, "cached", res->cached);
    cJSON_AddBoolToObject(o, "simulated", 0);
    cJSON *sizes = cJSON_AddObjectToObject(o, "sizes");
    for (int s = 0; s < prog->nsizes; s++)
        cJSON_AddNumberToObject(sizes, prog->sizes[s].name, (double)prog->sizes[s].value);
    char hash[32];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)ds->fingerprint);
    cJSON_AddStringToObject(o, "data_fingerprint", hash);
    char *txt = cJSON_Print(o);
    if (txt)
        puts(txt);
    free(txt);
    cJSON_Delete(o);
}

/* `loom run`'s human report for a measured run. */
static void run_print_human(const run_args *ra, const cli_inputs *in, const loom_program *prog,
                            const loom_dataset *ds, const loom_trace *trace, const loom_run_result *res)
{
    char t[64];
    printf("workload   %s (hash %016llx)\n", ra->workload, (unsigned long long)loom_program_hash(prog));
    for (int i = 0; i < in->nspecs; i++) {
        int ti = loom_program_find_tensor(prog, in->specs[i].tensor);
        printf("data       %s = %s (%lld x %lld, %lld stored)\n", in->specs[i].tensor, in->specs[i].path,
               (long long)ds->t[ti].dims[0], (long long)ds->t[ti].dims[1], (long long)ds->t[ti].nnz);
    }
    printf("sizes     ");
    for (int s = 0; s < prog->nsizes; s++)
        printf(" %s = %lld%s", prog->sizes[s].name, (long long)prog->sizes[s].value, s + 1 < prog->nsizes ? "," : "");
    printf("\n");
    char dt[1600];
    if (ra->trace_path)
        printf("kernel     trace %s (%d instructions, valid); %s\n", ra->trace_path, trace->ninsts,
               res->cached ? "compiled object from the cache" : "compiled now");
    else
        printf("kernel     %s, %s; %s\n", ra->naive ? "naive loop nest" : default_text(&ra->def, dt, sizeof dt),
               ra->opts.serial ? "serial" : "parallel outer loop",
               res->cached ? "compiled object from the cache" : "compiled now");
    if (res->status == LOOM_OK || res->status == LOOM_ERR_WRONG) {
        cli_human_time(res->latency_s, t, sizeof t);
        printf("latency    %s (median of %d runs)\n", t, res->m.repeats);
        if (res->m.unreliable)
            printf("warning    %s\n", res->m.message);
        if (res->m.core_line_ns > 0)
            printf("machine    a cache line between two cores: %.0f ns a round trip (the machine's state; "
                   "docs/tuning.md)\n",
                   res->m.core_line_ns);
        printf("flops      %.4g (from the actual nonzeros) -> %.3f GFLOP/s\n", res->flops, res->gflops);
        printf("correct    %s (max relative error %.3g, tolerance %.3g)\n", res->status == LOOM_OK ? "yes" : "NO",
               res->max_rel_err, res->tol);
    }
    if (res->status != LOOM_OK)
        printf("failed     %s: %s\n", loom_status_name(res->status), res->message);
}

static int cmd_run(int argc, char **argv)
{
    static cli_inputs in;
    memset(&in, 0, sizeof in);
    run_args ra;
    int rc = run_parse(argc, argv, &ra, &in);
    if (rc >= 0)
        return rc;

    loom_error err;
    loom_error_clear(&err);
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    if (loom_target_open(ra.target, ra.opts.build.cc, ra.opts.build.cflags, &ra.tgt, &err)) {
        cli_print_err("run", &err);
        return EXIT_BADINPUT;
    }
    ra.opts.limits = &ra.tgt.limits; /* the CPU's lowering: the target's limits */
    if (cli_load_workload("run", ra.workload, &in, ra.seed, 1, &prog, &ds))
        return EXIT_BADINPUT;
    rc = EXIT_BADINPUT;
    loom_reference *ref = NULL;
    loom_trace *trace = NULL;
    loom_schedule *tsch = NULL; /* the trace's or the default schedule; NULL: the naive nest */
    int src = run_schedule(&ra, prog, &trace, &tsch);
    if (src) {
        rc = src;
        goto out;
    }
    if (run_emit(&ra, prog, tsch))
        goto out;
    if (ra.tgt.kind == LOOM_TARGET_SIM) {
        rc = run_simulated(&ra.tgt, ra.workload, prog, ds, tsch, ra.opts.serial, ra.json, ra.trace_path, &ra.def);
        goto out;
    }
    if (loom_reference_run_cached(ds, NULL, NULL, &ref, &err)) {
        cli_print_err("run", &err);
        goto out;
    }
    loom_run_result res;
    loom_status pst = tsch ? loom_pipeline_run_schedule(tsch, ds, ref, &ra.opts, &res, &err)
                           : loom_pipeline_run(prog, ds, ref, &ra.opts, &res, &err);
    if (pst) {
        cli_print_err("run", &err);
        /* a valid trace's schedule that does not lower is a schedule problem */
        if (tsch)
            rc = EXIT_WRONG;
        goto out;
    }
    rc = res.status == LOOM_OK ? 0 : EXIT_WRONG;
    if (ra.json)
        run_print_json(&ra, prog, ds, &res);
    else
        run_print_human(&ra, &in, prog, ds, trace, &res);
out:
    free(tsch);
    loom_trace_free(trace);
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return rc;
}

int main(int argc, char **argv)
{
    /* A file size limit (ulimit -f) must make write(2) fail with EFBIG, which
     * loom_db_append reports and loom tune turns into "... K records are safe"
     * and exit 2, instead of SIGXFSZ killing the campaign without a word
     * mid-record (issue 33).  Ignored stays ignored in the compilers and
     * measurement children: they too see EFBIG, a failed record. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        fputs(MAIN_HELP, stderr);
        return EXIT_BADINPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(MAIN_HELP, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        puts("loom 0.1.0");
        return 0;
    }
    if (!strcmp(cmd, "run"))
        return cli_names_model(argc - 2, argv + 2) ? cmd_run_model(argc - 2, argv + 2) : cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "show"))
        return cmd_show(argc - 2, argv + 2);
    if (!strcmp(cmd, "validate"))
        return cmd_validate(argc - 2, argv + 2);
    if (!strcmp(cmd, "sample"))
        return cmd_sample(argc - 2, argv + 2);
    if (!strcmp(cmd, "db"))
        return cmd_db(argc - 2, argv + 2);
    if (!strcmp(cmd, "calibrate"))
        return cmd_calibrate(argc - 2, argv + 2);
    if (!strcmp(cmd, "space"))
        return cmd_space(argc - 2, argv + 2);
    if (!strcmp(cmd, "tune"))
        return cmd_tune(argc - 2, argv + 2);
    if (!strcmp(cmd, "replay"))
        return cli_names_model(argc - 2, argv + 2) ? cmd_replay_model(argc - 2, argv + 2) : cmd_replay(argc - 2, argv + 2);
    if (!strcmp(cmd, "plan"))
        return cmd_plan(argc - 2, argv + 2);
    if (!strcmp(cmd, "navigate"))
        return cmd_navigate(argc - 2, argv + 2);
    fprintf(stderr, "loom: unknown command '%s'\n\n%s", cmd, MAIN_HELP);
    return EXIT_BADINPUT;
}
