/* loom: the tuning commands -- tune (a campaign) and replay (the best
 * record into a fixed schedule), DESIGN.md "Search", "Database". */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../dsl/ir/util.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/target/target.h"
#include "../search/database/database.h"
#include "../search/navigate/navigate.h"
#include "../search/tune/tune.h"
#include "../ship/replay.h"
#include "../ship/ship.h"
#include "cli.h"

static const char *TUNE_HELP =
    "usage: loom tune WORKLOAD.loom --trials N --db DIR [options]\n"
    "\n"
    "Runs a tuning campaign: the design space's schedules are searched (evolutionary\n"
    "search with annealed Metropolis-Hastings on the cost model's scores), compiled\n"
    "in parallel, measured one at a time in an isolated child process with a time\n"
    "limit, and checked against the reference.  Every measured candidate is appended\n"
    "to DIR/records.jsonl the moment it is measured; a campaign given a directory\n"
    "that already holds records of this workload, data and target resumes: those\n"
    "count against --trials, seed the search, and are never measured again.\n"
    "A live progress line goes to stderr; DIR/campaign.log gets a line per batch and\n"
    "per cost-model retraining; the best trace is written to DIR/best-NAME.json.\n"
    "\n"
    "options:\n"
    "  --trials N           records wanted for this workload, data and target (required)\n"
    "  --db DIR             campaign directory (required; created if missing)\n"
    "  --data NAME=FILE     read tensor NAME from a Matrix Market file (repeatable)\n"
    "  --param NAME=INT     bind size NAME (repeatable)\n"
    "  --target T           cpu (default: measure on this machine), sim (the simulator\n"
    "                       with the host's model), sim:NAME (targets/NAME.json),\n"
    "                       sim:FILE.json or FILE.json\n"
    "  --strategy S         evolutionary (default), metaschedule, random\n"
    "  --modules a,b,c      the design space's transformation modules (default: the\n"
    "                       target's list; see loom space)\n"
    "  --module PATH.so     load a shared object of user modules (repeatable; a file\n"
    "                       name without a slash is taken in the current directory);\n"
    "                       without --modules its modules run first, then the default list\n"
    "  --seed S             campaign seed (default 1): same seed, same candidates\n"
    "  --batch N            candidates per round (default 64)\n"
    "  --population N       evolutionary population (default 512)\n"
    "  --generations N      generations of mutation per round (default 4; MetaSchedule's\n"
    "                       genetic_num_iters)\n"
    "  --local-share F      evolutionary: share of each batch that are children of the\n"
    "                       best measured schedules (default 0.875; 0: none, as MetaSchedule)\n"
    "  --local-share-cold F evolutionary: that share while the local model has too few\n"
    "                       records to be fitted, as in round 0 (default 1)\n"
    "  --fresh-share F      evolutionary: of that local share, the share of each batch\n"
    "                       that are fresh samples, one per structural branch (fused or\n"
    "                       not, fusion group, packed panel...; default 0)\n"
    "  --fresh-share-cold F evolutionary: the same in a cold round, as round 0 (default\n"
    "                       0); when the default is modules/default.c's, not the\n"
    "                       space's, round 0's local slots are all fresh samples\n"
    "  --local-parents K    evolutionary: those children's parents, the K best (default 4)\n"
    "  --local-crossover F  evolutionary: share of the children that are crossovers of two\n"
    "                       parents, the others one-decision mutants (default 0.5)\n"
    "  --local-model 0|1    evolutionary: rank the children by a model fitted on the\n"
    "                       measured records' decisions (default 1)\n"
    "  --local-pool K       evolutionary: children drawn per child kept when the local\n"
    "                       model ranks them (default 8)\n"
    "  --mutate-by M        evolutionary: 'instruction' (default: every sampling instruction\n"
    "                       equally likely to mutate) or 'kind' (the mutator weights)\n"
    "  --threads N          search and compiler threads (default: online cores)\n"
    "  --time-limit SEC     per-kernel time limit (default 10)\n"
    "  --remeasure R        at the end, measure the best 5 schedules and the default\n"
    "                       again, interleaved, R rounds (default 5; 0: no); the\n"
    "                       summary reports their medians (min, median, max), the\n"
    "                       naive nest's in the same rounds, and the best's time on\n"
    "                       one thread.  The final choice is the lowest median, the\n"
    "                       default included: never slower than the default (with\n"
    "                       --pin: among schedules carrying every pin).  A finished\n"
    "                       campaign rerun reads its last re-measurement back when\n"
    "                       no trial was recorded since (the file does not grow)\n"
    "  --remeasure-again    re-measure even then\n"
    "  --pretrain N         before the first round, train the cost model on N distinct\n"
    "                       schedules simulated on the same data (default 128; 0: no),\n"
    "                       so the first batch is ranked by a model\n"
    "  --pretrain-budget S  seconds the --pretrain simulations may take (default 2; 0: no\n"
    "                       limit): schedules are simulated in order on every thread and\n"
    "                       none runs past S, the model trains on those finished (the\n"
    "                       same ones as without a limit when S is not reached)\n"
    "  --pretrain-target T  the simulator target of --pretrain (default: the campaign's\n"
    "                       when simulated, else host: this CPU's calibrated model,\n"
    "                       loom calibrate)\n"
    "  --transfer DIR       also pre-train on DIR's records of this workload (an earlier\n"
    "                       campaign on other data or another target; repeatable, up to 16)\n"
    "  --json               print one JSON object at the end instead of the summary\n"
    "  --plans FILE         fusion plans (docs/plans.md) whose valid fills (up to 4 each)\n"
    "                       are measured first and seed the search\n"
    "  --pin TRACE          a partial trace (docs/navigation.md; `loom navigate`'s save):\n"
    "                       its pinned decisions stay fixed, the campaign explores only\n"
    "                       the other holes (a trace without \"pinned\" pins every decision);\n"
    "                       the result, best-*.json, replay and --emit-lib only take a\n"
    "                       record carrying every pin (the default: comparison only)\n"
    "  -q, --quiet          no progress line\n"
    "  -h, --help           this text\n"
    "\n"
    "Only one campaign at a time may use a directory: a second one refuses (exit 2)\n"
    "naming the process that holds its lock (a lock on the directory itself; removing\n"
    "files does not undo it).  When a record cannot be written (a full disk, a file\n"
    "size limit) the campaign stops, says how many records are safe in the file, and\n"
    "exits 2.\n"
    "\n"
    "exit codes: 0 finished (failed candidates are records, not errors), 1 no\n"
    "            candidate succeeded, 2 bad input, an unusable or busy campaign\n"
    "            directory, or a database write that failed\n";

static const char *REPLAY_HELP =
    "usage: loom replay --db DIR WORKLOAD.loom (--emit-c FILE | --emit-lib NAME) [options]\n"
    "\n"
    "Takes the best successful record of the workload, data and target in DIR (the\n"
    "winner of the campaign's last re-measurement, by median, when there is one),\n"
    "replays its trace into a fixed schedule, validates it, and writes it as one\n"
    "standalone C file (the kernel ABI header inlined; entry point\n"
    "`int loom_kernel(loom_tensor_abi *t)`) that compiles with any C11 compiler and\n"
    "OpenMP: cc -O3 -march=native -fopenmp -c FILE.\n"
    "\n"
    "options:\n"
    "  --db DIR             campaign directory (required)\n"
    "  --emit-c FILE        the C file to write\n"
    "  --emit-lib NAME      write a named kernel library: DIR/NAME.c, DIR/NAME.h (documents\n"
    "                       the entry points int NAME(sizes..., arrays...) and NAME_abi(t),\n"
    "                       shapes, formats, fixed sizes) and the built DIR/libNAME.so\n"
    "                       (NAME: a C identifier; see docs/shipping.md)\n"
    "  --lib-dir DIR        where --emit-lib writes (default: the current directory)\n"
    "  --emit-trace FILE    also write the best trace as JSON\n"
    "  --data NAME=FILE     the data the campaign tuned on (repeatable)\n"
    "  --param NAME=INT     its sizes (repeatable)\n"
    "  --target T           the campaign's target as loom tune took it (default cpu),\n"
    "                       or a target fingerprint as loom db prints it\n"
    "  --any-data           take the best record of the workload and target whatever\n"
    "                       data it was measured on\n"
    "  -h, --help           this text\n"
    "\n"
    "exit codes: 0 written, 1 no successful record, or its trace no longer replays\n"
    "            or validates, 2 bad input\n";

/* "spmm" from "workloads/spmm.loom" */
static void stem(const char *path, char *out, size_t n)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(out, n, "%s", b);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = '\0';
}

static void fmt_clock(double s, char *buf, size_t n)
{
    if (s < 0 || !isfinite(s)) {
        snprintf(buf, n, "?");
        return;
    }
    long t = (long)(s + 0.5);
    snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

typedef struct progress_state {
    int tty;
    int quiet;
    double last;
} progress_state;

static void show_progress(void *ctx, const loom_tune_progress *p)
{
    progress_state *ps = ctx;
    if (ps->quiet)
        return;
    double now = loom_now_seconds();
    /* a terminal gets a live line; a log gets a line every 10 s and at the end */
    if (!ps->tty && p->done < p->total && now - ps->last < 10)
        return;
    ps->last = now;
    char best[32], el[48], eta[48];
    cli_human_time(p->best_latency_s, best, sizeof best);
    fmt_clock(p->elapsed_s, el, sizeof el);
    fmt_clock(p->eta_s, eta, sizeof eta);
    fprintf(stderr, "%strials %d/%d  best %s (%.1f GFLOP/s)  ok %d  failed %d  invalid %ld  elapsed %s  eta %s%s",
            ps->tty ? "\r\033[K" : "", p->done, p->total, best, p->best_gflops, p->valid, p->failed, p->invalid, el,
            eta, ps->tty ? "" : "\n");
    fflush(stderr);
}

/* " (min A, median B, max C over R rounds)" for a re-measured schedule. */
static void spread(const loom_tune_remeasured *m, char *buf, size_t n)
{
    char a[32], b[32], c[32];
    cli_human_time(m->min_s, a, sizeof a);
    cli_human_time(m->median_s, b, sizeof b);
    cli_human_time(m->max_s, c, sizeof c);
    snprintf(buf, n, "min %s, median %s, max %s over %d round%s%s", a, b, c, m->rounds, m->rounds == 1 ? "" : "s",
             m->failed_rounds ? ", some failed" : "");
}

/* What the summary's figures mean: reused, pins, undecided, windows. */
static void print_verdict(const loom_tune_result *r)
{
    if (r->reused)
        printf("  (the last re-measurement is recent -- no trial since -- so it was read back, not made again; "
               "--remeasure-again makes a new one)\n");
    if (r->pinned)
        printf("  pinned   the best carries the %d pinned decision%s%s\n", r->pinned, r->pinned == 1 ? "" : "s",
               r->default_faster ? "; the unpinned default re-measured faster (shown above, never returned)" : "");
    if (r->undecided)
        printf("  NOTE     the best's and the default's re-measured spreads overlap: the machine could not tell "
               "them apart; reported: the %s (the lower median)\n",
               r->best_is_default ? "default schedule" : "best schedule");
    if (r->window_changed)
        printf("  WARNING  %d schedule%s' campaign figures lie outside their re-measured spread (up to %.2fx): the "
               "machine's capacity changed between the campaign and the re-measurement; compare the re-measured "
               "figures only\n",
               r->window_changed, r->window_changed == 1 ? "" : "s", r->window_ratio);
}

static void print_summary(const char *name, const loom_tune_result *r, int failed)
{
    char b[32], d[32], nv[32], sp[160], smp[32];
    cli_human_time(r->best_latency_s, b, sizeof b);
    cli_human_time(r->default_latency_s, d, sizeof d);
    cli_human_time(r->naive_latency_s, nv, sizeof nv);
    printf("%s: %d trials (%d resumed, %d measured now, %d failed, %ld invalid traces rejected)\n", name, r->trials,
           r->resumed, r->measured, failed, r->invalid);
    const loom_tune_remeasured *best = NULL, *def = NULL; /* the final choice: not always the first by median */
    for (int k = 0; k < r->nremeasured; k++) {
        if (r->remeasured[k].is_default)
            def = &r->remeasured[k];
        if (r->remeasured[k].chosen)
            best = &r->remeasured[k];
    }
    if (best) {
        spread(best, sp, sizeof sp);
        cli_human_time(r->sampled_best_latency_s, smp, sizeof smp);
        printf("  best     %s  (%s; %.2f GFLOP/s; the campaign's sampled minimum was %s)\n", b, sp, r->best_gflops,
               smp);
    } else {
        printf("  best     %s  (%.2f GFLOP/s; sampled minimum, not re-measured)\n", b, r->best_gflops);
    }
    double x = isfinite(r->best_latency_s) && isfinite(r->default_latency_s) ? r->default_latency_s / r->best_latency_s
                                                                              : 0.0;
    if (isfinite(r->best_1thread_s)) {
        char one[32];
        cli_human_time(r->best_1thread_s, one, sizeof one);
        printf("  best     %s  on one thread (one measurement; all %d cores give %.3gx)\n", one, r->cores,
               r->best_1thread_s / r->best_latency_s);
    }
    const char *pinned = r->pinned ? "unpinned, for comparison only; " : "";
    if (def) {
        spread(def, sp, sizeof sp);
        printf("  default  %s  (%s%s; best is %.2fx faster)\n", d, pinned, sp, x);
    } else {
        printf("  default  %s  (%sbest is %.2fx faster)\n", d, pinned, x);
    }
    printf("  naive    %s  (%s; best is %.2fx faster)\n", nv,
           r->naive_remeasured ? "median of the same interleaved rounds" : "one measurement at the campaign's start",
           isfinite(r->best_latency_s) && isfinite(r->naive_latency_s) ? r->naive_latency_s / r->best_latency_s : 0.0);
    print_verdict(r);
    if (r->remeasure_rounds) {
        printf("  re-measured %d schedules (the best %d distinct and the default), %d round%s interleaved", r->nremeasured,
               LOOM_TUNE_REMEASURE_TOP, r->remeasure_rounds, r->remeasure_rounds == 1 ? "" : "s");
        if (isfinite(r->load_avg))
            printf("; load average %.2f on %d cores", r->load_avg, r->cores);
        printf("\n");
    }
    if (r->stalled_trials)
        printf("  WARNING  %d trial figure%s stalled (runtime/measure's stall check: threads descheduled in most "
               "timed runs); their records say so\n",
               r->stalled_trials, r->stalled_trials == 1 ? "" : "s");
    if (r->stalled_rounds)
        printf("  WARNING  %d re-measurement round%s stalled (the kernel's threads were descheduled in most timed "
               "runs: runtime/measure's stall check): the machine is too loaded to tell schedules apart\n",
               r->stalled_rounds, r->stalled_rounds == 1 ? "" : "s");
    if (r->noisy)
        printf("  WARNING  the machine was loaded (load average %.2f on %d cores) or a schedule's slowest round was "
               "over 2x its fastest: these timings are suspect; tune on a quiet machine\n",
               r->load_avg, r->cores);
}

/* , "remeasure": {...} of the JSON summary */
static void print_remeasured_json(const loom_tune_result *r)
{
    printf(", \"remeasure\": {\"rounds\": %d, \"load\": ", r->remeasure_rounds);
    isfinite(r->load_avg) ? printf("%.3f", r->load_avg) : printf("null");
    printf(", \"stalled_rounds\": %d, \"stalled_trials\": %d", r->stalled_rounds, r->stalled_trials);
    printf(", \"cores\": %d, \"noisy\": %s, \"undecided\": %s, \"window_changed\": %d, \"reused\": %s, "
           "\"best_is_default\": %s, \"pinned\": %d, \"default_faster\": %s, \"naive_remeasured\": %s, "
           "\"best_1thread_s\": ",
           r->cores, r->noisy ? "true" : "false", r->undecided ? "true" : "false", r->window_changed,
           r->reused ? "true" : "false", r->best_is_default ? "true" : "false", r->pinned,
           r->default_faster ? "true" : "false", r->naive_remeasured ? "true" : "false");
    isfinite(r->best_1thread_s) ? printf("%.9g", r->best_1thread_s) : printf("null");
    printf(", \"schedules\": [");
    for (int k = 0; k < r->nremeasured; k++) {
        const loom_tune_remeasured *m = &r->remeasured[k];
        printf("%s{\"schedule\": \"%016llx\", \"rank\": %d, \"default\": %s, \"chosen\": %s, \"eligible\": %s",
               k ? ", " : "", (unsigned long long)m->schedule, m->rank, m->is_default ? "true" : "false",
               m->chosen ? "true" : "false", m->eligible ? "true" : "false");
        const double v[4] = {m->sampled_s, m->min_s, m->median_s, m->max_s};
        const char *key[4] = {"sampled_s", "min_s", "median_s", "max_s"};
        for (int i = 0; i < 4; i++)
            isfinite(v[i]) ? printf(", \"%s\": %.9g", key[i], v[i]) : printf(", \"%s\": null", key[i]);
        printf(", \"failed_rounds\": %d}", m->failed_rounds);
    }
    printf("]}");
}

/* The --json summary: one object on one line. */
static void print_json(const char *name, const loom_tune_opts *o, const loom_tune_result *r, int failed,
                       double overhead)
{
    printf("{\"workload\": \"%s\", \"target\": \"%s\", \"strategy\": \"%s\", \"trials\": %d, \"resumed\": %d, "
           "\"measured\": %d, ",
           name, r->target_fp, loom_strategy_name(o->search.strategy), r->trials, r->resumed, r->measured);
    printf("\"best_latency_s\": ");
    isfinite(r->best_latency_s) ? printf("%.9g", r->best_latency_s) : printf("null");
    printf(", \"best_gflops\": %.6g, \"default_latency_s\": ", r->best_gflops);
    isfinite(r->default_latency_s) ? printf("%.9g", r->default_latency_s) : printf("null");
    printf(", \"sampled_best_latency_s\": ");
    isfinite(r->sampled_best_latency_s) ? printf("%.9g", r->sampled_best_latency_s) : printf("null");
    print_remeasured_json(r);
    printf(", \"naive_latency_s\": ");
    isfinite(r->naive_latency_s) ? printf("%.9g", r->naive_latency_s) : printf("null");
    printf(", \"failed\": {");
    int first = 1;
    for (int s = 1; s < 16; s++)
        if (r->failed_by_status[s]) {
            printf("%s\"%s\": %d", first ? "" : ", ", loom_status_name(s), r->failed_by_status[s]);
            first = 0;
        }
    printf("}, \"failed_total\": %d, \"invalid\": %ld, \"best_trace\": ", failed, r->invalid);
    r->best_trace[0] ? printf("\"%s\"", r->best_trace) : printf("null");
    printf(", \"seconds\": {\"total\": %.3f, \"search\": %.3f, \"cost_model\": %.3f, \"compile\": %.3f, "
           "\"measure\": %.3f}, \"search_overhead\": %.4f}\n",
           r->total_s, r->search_s, r->costmodel_s, r->compile_s, r->measure_s, overhead);
}

/* --module PATH.so: the next of o's (at most 16) module libraries. */
static int add_module(const char *val, char libs[16][4200], const char **libp, loom_tune_opts *o)
{
    int n = o->nmodule_libs;
    if (n >= 16) {
        fprintf(stderr, "loom tune: at most 16 --module libraries\n");
        return EXIT_BADINPUT;
    }
    if (cli_module_path("tune", val, libs[n], sizeof libs[n]))
        return EXIT_BADINPUT;
    libp[n] = libs[n];
    o->module_libs = libp;
    o->nmodule_libs = n + 1;
    return 0;
}

/* What `loom tune`'s options asked for besides the library's options. */
typedef struct {
    const char *workload, *plans, *pin;
    int json, quiet;
} tune_args;

/* The evolutionary strategy's local-exploration options (search.h) */
enum { LOCAL_SHARE = 100, LOCAL_SHARE_COLD, FRESH_SHARE, FRESH_SHARE_COLD, LOCAL_PARENTS, LOCAL_CROSSOVER, LOCAL_POOL, LOCAL_MODEL, MUTATE_BY };

/* a share in [0, 1] into *d; 0, or -1 after printing why */
static int parse_share(const char *opt, const char *val, double *d)
{
    char *end;
    double x = strtod(val, &end);
    if (end == val || *end || !(x >= 0) || x > 1) {
        fprintf(stderr, "loom tune: --%s expects a share in [0, 1], got '%s'\n", opt, val);
        return -1;
    }
    *d = x;
    return 0;
}

/* One local-exploration option (id) into *so; 0, or -1 after printing why. */
static int tune_parse_local(int id, const char *val, loom_search_opts *so)
{
    uint64_t v;
    if (id == LOCAL_SHARE)
        return parse_share("local-share", val, &so->local_share);
    if (id == LOCAL_SHARE_COLD)
        return parse_share("local-share-cold", val, &so->local_share_cold);
    if (id == FRESH_SHARE)
        return parse_share("fresh-share", val, &so->fresh_share);
    if (id == FRESH_SHARE_COLD)
        return parse_share("fresh-share-cold", val, &so->fresh_share_cold);
    if (id == LOCAL_CROSSOVER)
        return parse_share("local-crossover", val, &so->local_crossover);
    if (id == LOCAL_PARENTS || id == LOCAL_POOL) {
        const char *name = id == LOCAL_PARENTS ? "--local-parents" : "--local-pool";
        int hi = id == LOCAL_PARENTS ? 1000 : 64;
        if (cli_parse_range("tune", name, val, 1, (uint64_t)hi, NULL, &v))
            return -1;
        *(id == LOCAL_PARENTS ? &so->local_parents : &so->local_pool) = (int)v;
        return 0;
    }
    if (id == LOCAL_MODEL) {
        if (strcmp(val, "0") && strcmp(val, "1")) {
            fprintf(stderr, "loom tune: --local-model expects 0 or 1, got '%s'\n", val);
            return -1;
        }
        so->local_model = val[0] == '1';
        return 0;
    }
    if (strcmp(val, "instruction") && strcmp(val, "kind")) {
        fprintf(stderr, "loom tune: --mutate-by expects 'instruction' or 'kind', got '%s'\n", val);
        return -1;
    }
    so->mutate_by_instruction = !strcmp(val, "instruction");
    return 0;
}

/* Parse `loom tune`'s command line into *ta and *o.  Returns -1 to go on, or
 * the exit code to return (help printed, or bad usage). */
static int tune_parse(int argc, char **argv, tune_args *ta, loom_tune_opts *o, cli_inputs *in)
{
    memset(ta, 0, sizeof *ta);
    uint64_t v;
    int have_trials = 0;
    enum { TRIALS, DB, TARGET, STRATEGY, MODULES, SEED, BATCH, POPULATION, GENERATIONS, THREADS, TIME_LIMIT, REMEASURE, JSON, QUIET,
           MODULE, PRETRAIN, PRETRAIN_TARGET, PRETRAIN_BUDGET, PLANS, PIN, TRANSFER, REMEASURE_AGAIN };
    static const char *xfer[16];
    static char libs[16][4200];
    static const char *libp[16];
    static const cli_opt opts[] = {
        {"trials", 0, 1, TRIALS},         {"db", 0, 1, DB},           {"target", 0, 1, TARGET},
        {"strategy", 0, 1, STRATEGY},     {"modules", 0, 1, MODULES}, {"seed", 0, 1, SEED},
        {"batch", 0, 1, BATCH},           {"population", 0, 1, POPULATION}, {"generations", 0, 1, GENERATIONS},
        {"threads", 0, 1, THREADS},       {"time-limit", 0, 1, TIME_LIMIT}, {"remeasure", 0, 1, REMEASURE},
        {"json", 0, 0, JSON},             {"quiet", 'q', 0, QUIET},   {"module", 0, 1, MODULE},
        {"pretrain", 0, 1, PRETRAIN},     {"pretrain-target", 0, 1, PRETRAIN_TARGET},
        {"pretrain-budget", 0, 1, PRETRAIN_BUDGET},
        {"plans", 0, 1, PLANS},           {"pin", 0, 1, PIN},
        {"transfer", 0, 1, TRANSFER},     {"remeasure-again", 0, 0, REMEASURE_AGAIN},
        {"local-share", 0, 1, LOCAL_SHARE}, {"local-share-cold", 0, 1, LOCAL_SHARE_COLD},
        {"fresh-share", 0, 1, FRESH_SHARE}, {"fresh-share-cold", 0, 1, FRESH_SHARE_COLD}, {"local-parents", 0, 1, LOCAL_PARENTS},
        {"mutate-by", 0, 1, MUTATE_BY},   {"local-crossover", 0, 1, LOCAL_CROSSOVER},
        {"local-pool", 0, 1, LOCAL_POOL}, {"local-model", 0, 1, LOCAL_MODEL},
    };
    static cli_args args;
    cli_args_init(&args, "tune", argc, argv, TUNE_HELP, opts, (int)(sizeof opts / sizeof *opts), in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == TRIALS) {
            if (cli_parse_range("tune", a, val, 1, 10000000, NULL, &v))
                return EXIT_BADINPUT;
            o->trials = (int)v;
            have_trials = 1;
        } else if (id == DB) {
            o->db_dir = val;
        } else if (id == TARGET) {
            o->target = val;
        } else if (id == STRATEGY) {
            int k = loom_strategy_find(val);
            if (k < 0) {
                char known[256];
                loom_strategy_list(known, sizeof known);
                fprintf(stderr, "loom tune: unknown strategy '%s' (%s)\n", val, known);
                return EXIT_BADINPUT;
            }
            o->search.strategy = (loom_strategy_kind)k;
        } else if (id == MODULES) {
            o->modules = val;
        } else if (id == MODULE) {
            if (add_module(val, libs, libp, o))
                return EXIT_BADINPUT;
        } else if (id == SEED) {
            if (cli_parse_u64("tune", a, val, &v))
                return EXIT_BADINPUT;
            o->search.seed = v;
        } else if (id == GENERATIONS) {
            if (cli_parse_range("tune", a, val, 0, 1000, NULL, &v))
                return EXIT_BADINPUT;
            o->search.generations = (int)v;
        } else if (id == BATCH || id == POPULATION || id == THREADS) {
            if (cli_parse_range("tune", a, val, 1, 100000, NULL, &v))
                return EXIT_BADINPUT;
            if (id == BATCH)
                o->batch = (int)v;
            else if (id == POPULATION)
                o->search.population = (int)v < 2 ? 2 : (int)v;
            else
                o->search.threads = (int)v;
        } else if (id == PRETRAIN) {
            if (cli_parse_range("tune", a, val, 0, 100000, "schedules", &v))
                return EXIT_BADINPUT;
            o->pretrain = (int)v;
        } else if (id == PRETRAIN_TARGET) {
            o->pretrain_target = val;
        } else if (id == PRETRAIN_BUDGET) {
            char *end;
            double t = strtod(val, &end);
            if (end == val || *end || !(t >= 0) || t > 1e6) {
                fprintf(stderr, "loom tune: --pretrain-budget expects seconds >= 0 (0: no limit), got '%s'\n", val);
                return EXIT_BADINPUT;
            }
            o->pretrain_budget_s = t;
        } else if (id == TRANSFER) {
            if (o->ntransfer >= 16) {
                fprintf(stderr, "loom tune: at most 16 --transfer directories\n");
                return EXIT_BADINPUT;
            }
            xfer[o->ntransfer++] = val;
            o->transfer_dirs = xfer;
        } else if (id == REMEASURE_AGAIN) {
            o->remeasure_again = 1;
        } else if (id == REMEASURE) {
            if (cli_parse_range("tune", a, val, 0, LOOM_TUNE_MAX_ROUNDS, "rounds", &v))
                return EXIT_BADINPUT;
            o->remeasure_rounds = (int)v;
        } else if (id >= LOCAL_SHARE && id <= MUTATE_BY) {
            if (tune_parse_local(id, val, &o->search))
                return EXIT_BADINPUT;
        } else if (id == TIME_LIMIT) {
            char *end;
            double t = strtod(val, &end);
            if (*end || !(t > 0)) {
                fprintf(stderr, "loom tune: --time-limit expects seconds > 0, got '%s'\n", val);
                return EXIT_BADINPUT;
            }
            o->run.measure.time_limit = t;
        } else if (id == JSON) {
            ta->json = 1;
        } else if (id == QUIET) {
            ta->quiet = 1;
        } else if (id == PLANS) {
            ta->plans = val;
        } else if (id == PIN) {
            ta->pin = val;
        } else if (!ta->workload) {
            ta->workload = val;
        } else {
            fprintf(stderr, "loom tune: more than one workload ('%s' and '%s')\n", ta->workload, val);
            return EXIT_BADINPUT;
        }
    }
    if (!ta->workload) {
        fprintf(stderr, "loom tune: no workload given\n%s", TUNE_HELP);
        return EXIT_BADINPUT;
    }
    if (!have_trials || !o->db_dir) {
        fprintf(stderr, "loom tune: %s is required (see loom tune --help)\n", !have_trials ? "--trials" : "--db");
        return EXIT_BADINPUT;
    }
    return -1;
}

/* --pin TRACE: read the partial trace into *pins and point o at it.
 * Returns 0, or -1 after printing why. */
static int tune_load_pin(const char *pin, const loom_program *prog, const char *workload, loom_pins *pins,
                         loom_tune_opts *o)
{
    loom_trace *pt = NULL;
    char *ptext = cli_read_text(pin);
    loom_error perr;
    loom_error_clear(&perr);
    if (!ptext)
        fprintf(stderr, "loom tune: cannot read --pin %s\n", pin);
    else if (loom_partial_trace_from_json(ptext, pin, &pt, pins, &perr))
        cli_print_err("tune", &perr);
    else if (cli_check_hash("tune", pt, pin, prog, workload, 0) == 0)
        o->pins = pins;
    free(ptext);
    loom_trace_free(pt);
    return o->pins ? 0 : -1;
}

int cmd_tune(int argc, char **argv)
{
    static cli_inputs in;
    memset(&in, 0, sizeof in);
    loom_tune_opts o = loom_tune_defaults();
    o.pretrain = 128; /* the CLI pre-trains by default (issue 13); the library's default is 0 */
    o.pretrain_budget_s = 2; /* issue 26: about 10% of the shortest 128-trial CPU campaign (SpMM, ~24 s) */
    tune_args ta;
    int rc = tune_parse(argc, argv, &ta, &o, &in);
    if (rc >= 0)
        return rc;
    static loom_pins pins;
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    rc = cli_load_workload("tune", ta.workload, &in, 1, 1, &prog, &ds);
    if (rc)
        return rc;
    loom_trace **seeds = NULL;
    char *text = NULL;
    if (ta.plans && (rc = cli_plan_seeds(ta.plans, prog, &seeds, &o.nseeds)))
        goto out;
    o.seeds = seeds;
    if (ta.pin && tune_load_pin(ta.pin, prog, ta.workload, &pins, &o)) {
        rc = EXIT_BADINPUT;
        goto out;
    }
    char name[256];
    stem(ta.workload, name, sizeof name);
    text = cli_read_text(ta.workload);
    o.workload_name = name;
    o.workload_text = text;
    progress_state ps = {.tty = isatty(2), .quiet = ta.quiet, .last = -1e9};
    o.progress = show_progress;
    o.progress_ctx = &ps;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_tune(prog, ds, &o, &r, &err);
    if (ps.tty && !ta.quiet)
        fputc('\n', stderr);
    if (st) {
        cli_print_err("tune", &err);
        rc = st == LOOM_ERR_NOMEM || st == LOOM_ERR_RUN ? EXIT_WRONG : EXIT_BADINPUT;
        goto out;
    }
    int failed = 0;
    for (int s = 1; s < 16; s++)
        failed += r.failed_by_status[s];
    double overhead = r.total_s > 0 ? (r.search_s + r.costmodel_s) / r.total_s : 0;
    if (ta.json) {
        print_json(name, &o, &r, failed, overhead);
    } else {
        print_summary(name, &r, failed);
        printf("  time     %.1f s: search %.1f s, cost model %.1f s, compile %.1f s, measure %.1f s (search "
               "overhead %.1f%%)\n",
               r.total_s, r.search_s, r.costmodel_s, r.compile_s, r.measure_s, 100 * overhead);
        if (r.retrains)
            printf("  model    %d retrainings; last: Spearman %.3f, top-k recall %.2f\n", r.retrains,
                   r.last_spearman, r.last_topk_recall);
        if (r.best_trace[0])
            printf("  trace    %s\n", r.best_trace);
    }
    rc = isfinite(r.best_latency_s) ? 0 : EXIT_WRONG;
out:
    cli_plan_seeds_free(seeds, o.nseeds);
    free(text);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return rc;
}

/* ---- loom replay ------------------------------------------------------------ */

static int write_file_atomic(const char *path, const char *text)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

int cmd_replay(int argc, char **argv)
{
    const char *workload = NULL, *dbdir = NULL, *emit_c = NULL, *emit_trace = NULL, *emit_lib = NULL;
    const char *target = "cpu", *lib_dir = ".";
    static cli_inputs in;
    memset(&in, 0, sizeof in);
    int any_data = 0;
    enum { DB, EMIT_C, EMIT_TRACE, EMIT_LIB, LIB_DIR, TARGET, ANY_DATA };
    static const cli_opt opts[] = {
        {"db", 0, 1, DB},         {"emit-c", 0, 1, EMIT_C},     {"emit-trace", 0, 1, EMIT_TRACE},
        {"emit-lib", 0, 1, EMIT_LIB}, {"lib-dir", 0, 1, LIB_DIR},
        {"target", 0, 1, TARGET}, {"any-data", 0, 0, ANY_DATA},
    };
    static cli_args args;
    cli_args_init(&args, "replay", argc, argv, REPLAY_HELP, opts, (int)(sizeof opts / sizeof *opts), &in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == DB) {
            dbdir = val;
        } else if (id == EMIT_C) {
            emit_c = val;
        } else if (id == EMIT_TRACE) {
            emit_trace = val;
        } else if (id == EMIT_LIB) {
            emit_lib = val;
        } else if (id == LIB_DIR) {
            lib_dir = val;
        } else if (id == TARGET) {
            target = val;
        } else if (id == ANY_DATA) {
            any_data = 1;
        } else if (!workload) {
            workload = val;
        } else {
            fprintf(stderr, "loom replay: more than one workload ('%s' and '%s')\n", workload, val);
            return EXIT_BADINPUT;
        }
    }
    if (!workload || !dbdir || (!emit_c && !emit_lib)) {
        fprintf(stderr, "loom replay: %s is required (see loom replay --help)\n",
                !workload ? "a workload" : !dbdir ? "--db" : "--emit-c or --emit-lib");
        return EXIT_BADINPUT;
    }
    if (emit_lib && cli_check_lib_name("replay", emit_lib, lib_dir))
        return EXIT_BADINPUT;
    if (access(dbdir, F_OK) != 0) {
        fprintf(stderr, "loom replay: %s: no such campaign directory\n", dbdir);
        return EXIT_BADINPUT;
    }
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    int rc = cli_load_workload("replay", workload, &in, 1, 1, &prog, &ds);
    if (rc)
        return rc;
    loom_error err;
    loom_error_clear(&err);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = NULL;
    lir_func *f = NULL;
    char *src = NULL;
    loom_ship_best_info best;
    if (!sch) {
        rc = EXIT_WRONG;
        goto out;
    }
    loom_status st = loom_ship_best(dbdir, prog, ds, target, any_data, sch, &t, &best, &err);
    if (st) {
        cli_print_err("replay", &err);
        rc = st == LOOM_ERR_WRONG ? EXIT_WRONG : EXIT_BADINPUT;
        goto out;
    }
    if (loom_lower(sch, &f, &err)) {
        cli_print_err("replay", &err);
        rc = EXIT_WRONG;
        goto out;
    }
    char origin[1400];
    snprintf(origin, sizeof origin, "loom replay: workload %s (%016llx), best record of %s (line %d): %.6g s on %s.",
             workload, (unsigned long long)loom_program_hash(prog), dbdir, best.line, best.latency_s, best.target_fp);
    if (emit_c && loom_codegen_c(f, "loom_kernel", &src, &err)) {
        cli_print_err("replay", &err);
        rc = EXIT_WRONG;
        goto out;
    }
    if (emit_c) {
        /* a header comment: where the schedule came from */
        size_t hl = strlen(src) + 2048;
        char *full = malloc(hl);
        if (!full) {
            rc = EXIT_WRONG;
            goto out;
        }
        snprintf(full, hl,
                 "/* %s\n * Build: cc -O3 -march=native -ffp-contract=fast -fno-math-errno -fopenmp -c this file; "
                 "entry: int loom_kernel(loom_tensor_abi *t). */\n%s",
                 origin, src);
        if (write_file_atomic(emit_c, full)) {
            fprintf(stderr, "loom replay: cannot write %s: %s\n", emit_c, strerror(errno));
            free(full);
            rc = EXIT_BADINPUT;
            goto out;
        }
        free(full);
    }
    if (emit_lib && loom_ship_write(f, emit_lib, lib_dir, origin, 1, &err)) {
        cli_print_err("replay", &err);
        rc = err.status == LOOM_ERR_BUILD ? EXIT_WRONG : EXIT_BADINPUT;
        goto out;
    }
    if (emit_trace) {
        char *j = NULL;
        if (loom_trace_to_json(t, prog, &j) || write_file_atomic(emit_trace, j)) {
            fprintf(stderr, "loom replay: cannot write %s\n", emit_trace);
            free(j);
            rc = EXIT_BADINPUT;
            goto out;
        }
        free(j);
    }
    printf("replayed the best record (line %d, %.6g s%s) into", best.line, best.latency_s,
           best.remeasured ? ", the re-measured median" : "");
    if (emit_c)
        printf(" %s", emit_c);
    if (emit_lib)
        printf("%s %s/%s.c, %s/%s.h and %s/lib%s.so", emit_c ? "," : "", lib_dir, emit_lib, lib_dir, emit_lib,
               lib_dir, emit_lib);
    if (emit_trace)
        printf(" and %s", emit_trace);
    printf("\n");
    rc = 0;
out:
    free(src);
    if (f)
        loom_lir_func_free(f);
    loom_trace_free(t);
    free(sch);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return rc;
}
