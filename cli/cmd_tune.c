/* loom: the tuning commands -- tune (a campaign) and replay (the best
 * record into a fixed schedule), DESIGN.md "Search", "Database". */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
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

loom_status (*cli_tune_fn)(loom_program *, loom_dataset *, const loom_tune_opts *, loom_tune_result *,
                           loom_error *) = loom_tune;
static const char *TUNE_HELP =
    "usage: loom tune WORKLOAD.loom --trials N --db DIR [options]\n"
    "       loom tune MODEL.model --trials N --db DIR [--task-scheduler S] [options]\n"
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
    "Across machines: `mpirun -np N build/loom-mpi tune ...` takes these options and\n"
    "spreads the measurements over MPI ranks (make mpi; docs/distributed.md).\n"
    "\n"
    "A MODEL file (NAME.model: a model's tasks -- .loom workloads with their data and\n"
    "parameters --, how often each runs per forward pass and the dataflow between them;\n"
    "docs/models.md) tunes the whole model: a task scheduler spends the N trials across\n"
    "its tasks in steps of --batch trials, each step a campaign of one task (resumed\n"
    "from its records); all tasks' records go to DIR, one line per step to\n"
    "DIR/model.log.  The progress line shows the task in hand and the model's estimated\n"
    "end-to-end latency (the sum of weight x best); the summary gives each task's best,\n"
    "default and share of the trials.  A killed model campaign resumes every task.\n"
    "  --task-scheduler S   gradient (default: MetaSchedule's gradient-based scheduler,\n"
    "                       alpha 0.2, window 3, after a round-robin warm-up) or\n"
    "                       round-robin.  Then run it: loom run MODEL.model --db DIR\n"
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
    "  --batch N            candidates per round (default 16)\n"
    "  --population N       population of the evolutionary and metaschedule strategies\n"
    "                       (default 512)\n"
    "  --generations N      generations of mutation per round (default 4; MetaSchedule's\n"
    "                       genetic_num_iters)\n"
    "  STRATEGY OPTIONS     the --strategy's own options: see \"strategies\" below\n"
    "  --threads N          search and compiler threads (default: online cores)\n"
    "  --time-limit SEC     per-kernel time limit (default 10)\n"
    "  --remeasure R        at the end, measure the best 5 schedules and the default\n"
    "                       again, interleaved, R rounds (default 5; 0: no); the\n"
    "                       summary reports their medians (min, median, max), the\n"
    "                       naive nest's in the same rounds, and the best's time on\n"
    "                       one thread.  The final choice is the lowest median, the\n"
    "                       default included: never slower than the default (with\n"
    "                       --pin: among schedules carrying every pin).  While the\n"
    "                       lowest median and the default's cannot be told apart\n"
    "                       (their medians' 95%% notches overlap), R more rounds, up\n"
    "                       to 4 x R in all (decisive rounds), while they fit the\n"
    "                       budget below.  A finished\n"
    "                       campaign rerun reads its last re-measurement back when\n"
    "                       no trial was recorded since (the file does not grow)\n"
    "  --remeasure-again    re-measure even then\n"
    "  --remeasure-budget S seconds the decisive rounds may add (default 60; 0: no\n"
    "                       limit): R more rounds start only when, at the pace of\n"
    "                       the rounds made so far, they end within it (the log\n"
    "                       says when it stopped them)\n"
    "  --no-round-control   do not re-run the best earlier schedule after each round on the\n"
    "                       CPU (by default a round whose control runs >= 1.4x its record\n"
    "                       ran on a slower host: logged, kept out of the cost model)\n"
    "  --pretrain N         before the first round, train the cost model on N distinct\n"
    "                       schedules simulated on the same data (default 128; 0: no),\n"
    "                       so the first batch is ranked by a model\n"
    "  --pretrain-budget S  seconds the --pretrain simulations may take (default 0.02 s a\n"
    "                       trial, at most 2; 0: no limit): schedules are simulated in\n"
    "                       order on every thread and none runs past S, the model trains\n"
    "                       on those finished (the same ones as without a limit when S\n"
    "                       is not reached)\n"
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
    "%s" /* the strategies and their options, from the strategy table (tune_help) */
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
    "OpenMP: cc -O3 -march=native -fopenmp -c FILE.  A whole model ships with\n"
    "loom replay MODEL.model --db DIR --emit-lib NAME (loom replay MODEL.model --help).\n"
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

static void show_progress(void *ctx, const loom_tune_progress *p)
{
    cli_progress *ps = ctx;
    if (p->core_line_moves > ps->line_moves && !ps->quiet) { /* said at once, whatever the line's pace */
        ps->line_moves = p->core_line_moves;
        if (p->core_line_moves % 2)
            fprintf(stderr,
                    "%sloom tune: the machine's state moved: a cache line between two cores takes %.0f ns a round "
                    "trip, %.0f ns at the campaign's start (a VM's vCPUs placed elsewhere?); kernels whose threads "
                    "share data measure differently from here -- --remeasure R compares the best together at the "
                    "end (docs/tuning.md \"The machine's state\")\n",
                    ps->tty ? "\r\033[K" : "", p->core_line_ns, p->core_line_ref_ns);
        else
            fprintf(stderr, "%sloom tune: the machine's state is back: a cache line between two cores takes %.0f ns a "
                            "round trip (%.0f ns at the campaign's start)\n",
                    ps->tty ? "\r\033[K" : "", p->core_line_ns, p->core_line_ref_ns);
    }
    if (!cli_progress_due(ps, p->done, p->total))
        return;
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
    const char *task_scheduler; /* --task-scheduler (a model only) */
    int json, quiet;
} tune_args;

/* ---- the strategies' options (search/strategy/search.h rows) --------------- */

#define MAX_STRATEGY_FLAGS 32
#define STRATEGY_FLAG 1000 /* cli_next's id of strategy flag k: STRATEGY_FLAG + k */

/* The option rows loom tune takes as --NAME, each once, in table order,
 * into rows[0..MAX_STRATEGY_FLAGS); returns how many there are, which may
 * be more (the caller refuses to run then: a row past the end used to be
 * dropped without a word, and its flag was "unknown"). */
static int strategy_flags(const loom_search_option **rows)
{
    int n = 0;
    for (int k = 0; k < loom_strategy_count(); k++) {
        const loom_search_option *const *L = loom_strategy_get(k)->options;
        for (int l = 0; L && L[l]; l++)
            for (const loom_search_option *R = L[l]; R->name; R++) {
                int seen = 0;
                for (int j = 0; j < n; j++)
                    seen |= rows[j] == R;
                if (R->flag && !seen) {
                    if (n < MAX_STRATEGY_FLAGS)
                        rows[n] = R;
                    n++;
                }
            }
    }
    return n;
}

/* --NAME VALUE of option row R into *so; 0, or -1 after printing why. */
static int parse_strategy_option(const loom_search_option *R, const char *flag, const char *val,
                                 loom_search_opts *so)
{
    char *end;
    double x = 0;
    uint64_t v;
    if (R->kind == LOOM_OPTION_SHARE || R->kind == LOOM_OPTION_REAL) {
        x = strtod(val, &end);
        if (end == val || *end || !loom_search_option_ok(R, x)) {
            if (R->kind == LOOM_OPTION_SHARE)
                fprintf(stderr, "loom tune: %s expects a share in [0, 1], got '%s'\n", flag, val);
            else
                fprintf(stderr, "loom tune: %s expects a number %s%g..%g, got '%s'\n", flag, R->lo_open ? "> " : "",
                        R->lo, R->hi, val);
            return -1;
        }
    } else if (R->kind == LOOM_OPTION_INT) {
        if (cli_parse_range("tune", flag, val, (uint64_t)R->lo, (uint64_t)R->hi, NULL, &v))
            return -1;
        x = (double)v;
    } else if (R->kind == LOOM_OPTION_BOOL) {
        if (strcmp(val, "0") && strcmp(val, "1")) {
            fprintf(stderr, "loom tune: %s expects 0 or 1, got '%s'\n", flag, val);
            return -1;
        }
        x = val[0] == '1';
    } else {
        int k = !strcmp(val, R->choices[0].word) ? 0 : !strcmp(val, R->choices[1].word) ? 1 : -1;
        if (k < 0) {
            fprintf(stderr, "loom tune: %s expects '%s' or '%s', got '%s'\n", flag, R->choices[0].word,
                    R->choices[1].word, val);
            return -1;
        }
        x = R->choices[k].value;
    }
    loom_search_option_set(so, R, x);
    return 0;
}

/* Append fmt to buf[*at..n), keeping it terminated. */
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = *at < n ? vsnprintf(buf + *at, n - *at, fmt, ap) : 0;
    va_end(ap);
    if (w > 0)
        *at = *at + (size_t)w < n ? *at + (size_t)w : n - 1;
}

/* Append text wrapped at 88 columns, continuation lines indented by
 * `indent` spaces, the first line starting at column `col`. */
static void append_wrapped(char *buf, size_t n, size_t *at, const char *text, int col, int indent)
{
    while (*text) {
        int len = (int)strlen(text), room = 88 - col;
        int cut = len <= room ? len : room;
        while (cut < len && cut > 0 && text[cut] != ' ')
            cut--;
        if (cut == 0)
            cut = len < room ? len : room;
        append(buf, n, at, "%.*s\n", cut, text);
        text += cut;
        while (*text == ' ')
            text++;
        if (*text)
            append(buf, n, at, "%*s", indent, "");
        col = indent;
    }
}

/* One option row of the help: "--name V" (a flag) or the library field,
 * its doc and default. */
static void help_option(char *buf, size_t n, size_t *at, const loom_search_option *R, int cli_flag)
{
    char def[48], head[48], text[640];
    if (R->kind == LOOM_OPTION_CHOICE)
        snprintf(def, sizeof def, "%s", R->choices[R->def == R->choices[0].value ? 0 : 1].word);
    else
        snprintf(def, sizeof def, "%g", R->def);
    if (cli_flag)
        snprintf(head, sizeof head, "--%s %s", R->name,
                 R->kind == LOOM_OPTION_INT ? "N" : R->kind == LOOM_OPTION_BOOL ? "0|1" :
                 R->kind == LOOM_OPTION_CHOICE ? "WORD" : "F");
    else
        snprintf(head, sizeof head, "%s", R->field);
    snprintf(text, sizeof text, "%s (default %s%s)", R->doc, def, cli_flag ? "" : "; library option only");
    append(buf, n, at, "    %-22s ", head);
    append_wrapped(buf, n, at, text, 27, 27);
}

/* The first strategy before k that reads option list L, or -1. */
static int shared_with(int k, const loom_search_option *L)
{
    for (int j = 0; j < k; j++)
        for (int l = 0; loom_strategy_get(j)->options && loom_strategy_get(j)->options[l]; l++)
            if (loom_strategy_get(j)->options[l] == L)
                return j;
    return -1;
}

/* TUNE_HELP with its strategies section: every strategy of the table, its
 * doc and its options from its rows. */
static const char *tune_help(void)
{
    static char sect[16384], help[32768];
    size_t at = 0;
    append(sect, sizeof sect, &at, "strategies (--strategy S) and their options (library options: loom_search_opts):\n");
    for (int k = 0; k < loom_strategy_count(); k++) {
        const loom_search_strategy *st = loom_strategy_get(k);
        append(sect, sizeof sect, &at, "  %s: ", st->name);
        append_wrapped(sect, sizeof sect, &at, st->doc ? st->doc : "", 4 + (int)strlen(st->name), 4);
        for (int l = 0; st->options && st->options[l]; l++) {
            int j = shared_with(k, st->options[l]);
            if (j >= 0) {
                const loom_search_option *R = st->options[l], *last = R;
                while (last[1].name)
                    last++;
                append(sect, sizeof sect, &at, "    the options it shares with %s, above (%s to %s)\n",
                       loom_strategy_get(j)->name, R->field, last->field);
                continue;
            }
            for (const loom_search_option *R = st->options[l]; R->name; R++)
                help_option(sect, sizeof sect, &at, R,
                            R->flag || !strcmp(R->name, "population") || !strcmp(R->name, "generations"));
        }
    }
    snprintf(help, sizeof help, TUNE_HELP, sect);
    return help;
}

/* Parse `loom tune`'s command line into *ta and *o.  Returns -1 to go on, or
 * the exit code to return (help printed, or bad usage). */
/* --NAME S for a time budget: seconds >= 0 (0: no limit), at most 1e6.  0
 * with *out set; 1 after saying what was wrong. */
static int parse_budget(const char *name, const char *val, double *out)
{
    char *end;
    double t = strtod(val, &end);
    if (end == val || *end || !(t >= 0) || t > 1e6) {
        fprintf(stderr, "loom tune: --%s expects seconds >= 0 (0: no limit), got '%s'\n", name, val);
        return 1;
    }
    *out = t;
    return 0;
}

static int tune_parse(int argc, char **argv, tune_args *ta, loom_tune_opts *o, cli_inputs *in)
{
    memset(ta, 0, sizeof *ta);
    uint64_t v;
    int have_trials = 0;
    enum { TRIALS, DB, TARGET, STRATEGY, MODULES, SEED, BATCH, POPULATION, GENERATIONS, THREADS, TIME_LIMIT, REMEASURE, JSON, QUIET,
           MODULE, PRETRAIN, PRETRAIN_TARGET, PRETRAIN_BUDGET, PLANS, PIN, TRANSFER, REMEASURE_AGAIN, REMEASURE_BUDGET, NO_ROUND_CONTROL,
           TASK_SCHEDULER };
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
        {"remeasure-budget", 0, 1, REMEASURE_BUDGET},
        {"task-scheduler", 0, 1, TASK_SCHEDULER}, {"no-round-control", 0, 0, NO_ROUND_CONTROL},
    };
    /* then the strategies' option flags, from their rows */
    static cli_opt all[CLI_MAX_OPTS];
    static const loom_search_option *rows[MAX_STRATEGY_FLAGS];
    int nfixed = (int)(sizeof opts / sizeof *opts), nrows = strategy_flags(rows);
    if (nrows > MAX_STRATEGY_FLAGS || nfixed + nrows > CLI_MAX_OPTS) {
        fprintf(stderr,
                "loom tune: internal limit: %d options (%d of the strategies), room for %d (%d) -- raise "
                "CLI_MAX_OPTS in cli/cli.h or MAX_STRATEGY_FLAGS in cli/cmd_tune.c\n",
                nfixed + nrows, nrows, CLI_MAX_OPTS, MAX_STRATEGY_FLAGS);
        return 70; /* EX_SOFTWARE */
    }
    memcpy(all, opts, sizeof opts);
    for (int k = 0; k < nrows; k++)
        all[nfixed + k] = (cli_opt){rows[k]->name, 0, 1, STRATEGY_FLAG + k};
    static cli_args args;
    cli_args_init(&args, "tune", argc, argv, tune_help(), all, nfixed + nrows, in);
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
            if (parse_budget("pretrain-budget", val, &o->pretrain_budget_s))
                return EXIT_BADINPUT;
        } else if (id == TRANSFER) {
            if (o->ntransfer >= 16) {
                fprintf(stderr, "loom tune: at most 16 --transfer directories\n");
                return EXIT_BADINPUT;
            }
            xfer[o->ntransfer++] = val;
            o->transfer_dirs = xfer;
        } else if (id == REMEASURE_AGAIN) {
            o->remeasure_again = 1;
        } else if (id == REMEASURE_BUDGET) {
            if (parse_budget("remeasure-budget", val, &o->remeasure_budget_s))
                return EXIT_BADINPUT;
        } else if (id == NO_ROUND_CONTROL) {
            o->no_round_control = 1;
        } else if (id == REMEASURE) {
            if (cli_parse_range("tune", a, val, 0, LOOM_TUNE_MAX_ROUNDS, "rounds", &v))
                return EXIT_BADINPUT;
            o->remeasure_rounds = (int)v;
        } else if (id >= STRATEGY_FLAG && id < STRATEGY_FLAG + nrows) {
            if (parse_strategy_option(rows[id - STRATEGY_FLAG], a, val, &o->search))
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
        } else if (id == TASK_SCHEDULER) {
            ta->task_scheduler = val;
        } else if (!ta->workload) {
            ta->workload = val;
        } else {
            fprintf(stderr, "loom tune: more than one workload ('%s' and '%s')\n", ta->workload, val);
            return EXIT_BADINPUT;
        }
    }
    if (!ta->workload) {
        fprintf(stderr, "loom tune: no workload given\n%s", tune_help());
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

/* The default --pretrain-budget (issue 26: pre-training and the cost model
 * within 10% of a campaign's wall time): 0.02 s a trial, at most 2 s.  The
 * quickest CPU campaigns of bench/bench_suite.sh --cpu spend about 0.4 s a
 * trial (a compile and a measurement; 48 SpMM trials on Cora in 20-21 s on
 * 2 cores, 2026-11-28), so pre-training stays near 5% of them; with a flat
 * 2 s it was 10.8% of the 48-trial bcsstk16 F = 32 campaign. */
static double pretrain_budget_default(int trials)
{
    double s = 0.02 * (trials > 0 ? trials : 1);
    return s < 2.0 ? s : 2.0;
}

int cmd_tune(int argc, char **argv)
{
    static cli_inputs in;
    memset(&in, 0, sizeof in);
    loom_tune_opts o = loom_tune_defaults();
    o.pretrain = 128; /* the CLI pre-trains by default (issue 13); the library's default is 0 */
    o.pretrain_budget_s = -1; /* not given: pretrain_budget_default below */
    tune_args ta;
    int rc = tune_parse(argc, argv, &ta, &o, &in);
    if (rc >= 0)
        return rc;
    if (o.pretrain_budget_s < 0)
        o.pretrain_budget_s = pretrain_budget_default(o.trials);
    if (cli_is_model_file(ta.workload)) /* a whole model: cmd_model.c */
        return cmd_tune_model(ta.workload, &o, ta.task_scheduler, ta.json, ta.quiet, &in, ta.plans || ta.pin);
    if (ta.task_scheduler) {
        fprintf(stderr, "loom tune: --task-scheduler is for a model (MODEL.model), not one workload\n");
        return EXIT_BADINPUT;
    }
    static loom_pins pins;
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    rc = cli_load_workload("tune", ta.workload, &in, 1, 1, &prog, &ds);
    if (rc)
        return rc;
    loom_trace **seeds = NULL;
    char *text = NULL;
    static loom_target tg; /* the campaign's target handle, opened once: the plans' seeds and loom_tune use it */
    loom_error terr;
    if (loom_target_open(o.target, o.run.build.cc, o.run.build.cflags, &tg, &terr)) {
        cli_print_err("tune", &terr);
        loom_dataset_free(ds);
        loom_program_free(prog);
        return EXIT_BADINPUT;
    }
    o.target_handle = &tg;
    if (ta.plans && (rc = cli_plan_seeds(ta.plans, prog, &tg.limits, &seeds, &o.nseeds)))
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
    cli_progress ps = {.tty = isatty(2), .quiet = ta.quiet, .last = -1e9};
    o.progress = show_progress;
    o.progress_ctx = &ps;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = cli_tune_fn(prog, ds, &o, &r, &err);
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
        cli_tune_print_json(name, &o, &r, failed, overhead);
    } else {
        cli_tune_print_summary(name, &r, failed);
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
    if (loom_lower_for(sch, &best.limits, &f, &err)) { /* the target's limits, as validated */
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
