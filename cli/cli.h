/* loom: helpers shared by the commands of the command-line tool (cli/).
 *
 * Exit codes: 0 success, 1 invalid / wrong / failed kernel, 2 bad input.
 * Every error goes to stderr prefixed "loom CMD: ".
 */
#ifndef LOOM_CLI_H
#define LOOM_CLI_H

#include <getopt.h>
#include <stdint.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/data/dataset.h"
#include "../traces/trace.h"
#include "../traces/validate.h"

#define EXIT_WRONG 1
#define EXIT_BADINPUT 2

/* The workload inputs every command takes: --data NAME=FILE, --param NAME=INT. */
typedef struct cli_inputs {
    loom_data_spec specs[LOOM_MAX_TENSORS];
    loom_param_spec params[LOOM_MAX_SIZES];
    int nspecs, nparams;
} cli_inputs;

/* Print "loom CMD: file:line:col: error: msg" to stderr. */
void cli_print_err(const char *cmd, const loom_error *err);

/* 1 if `flag` takes a value (--data, --param). */
int cli_is_input_flag(const char *flag);

/* Handle --data / --param with its value.  Returns 0, or EXIT_BADINPUT
 * after printing why. */
int cli_add_input(const char *cmd, const char *flag, const char *val, cli_inputs *in);

/* ---- option parsing shared by the commands (cli/args.c; getopt_long) ---- */

/* One option of a command: --name (and -short_name when not 0), with a
 * value when has_value (--name VALUE or --name=VALUE).  id is what
 * cli_next returns for it (>= 0). */
typedef struct cli_opt {
    const char *name;
    char short_name;
    int has_value;
    int id;
} cli_opt;

#define CLI_MAX_OPTS 48   /* options of one command */
#define CLI_MAX_ARGS 4096 /* arguments of one command line */

/* What cli_next returns besides an option's id. */
enum { CLI_END = -1, CLI_STOP = -2, CLI_ARG = -3 };

/* A command line being parsed (state for getopt_long, which is global:
 * one parse at a time). */
typedef struct cli_args {
    const char *cmd, *help;
    cli_inputs *in;
    int argc, toomany;
    int rest; /* > 0: getopt is done, av[rest..] are positional */
    char *av[CLI_MAX_ARGS + 2];
    struct option lo[CLI_MAX_OPTS + 4];
    int ids[CLI_MAX_OPTS + 4];
    char shorts[CLI_MAX_OPTS + 4];
    char shortopts[2 * CLI_MAX_OPTS + 8];
    char flag[72];
} cli_args;

/* Start parsing argv[0..argc) (the arguments after the command name) for
 * command `cmd` with its options opts[0..nopts) (nopts <= CLI_MAX_OPTS).
 * Every command also takes -h/--help (prints `help` to stdout) and, when
 * `in` is not NULL, --data NAME=FILE and --param NAME=INT (added to *in
 * with cli_add_input). */
void cli_args_init(cli_args *p, const char *cmd, int argc, char **argv, const char *help, const cli_opt *opts,
                   int nopts, cli_inputs *in);

/* The next item, in command-line order: an option's id with *flag its
 * name as "--name" and *val its value (NULL without one); CLI_ARG for a
 * positional argument (*val; every argument after "--" is positional);
 * CLI_END when done; CLI_STOP when the command must return *rc: 0 after
 * --help, EXIT_BADINPUT after printing "loom CMD: unknown option 'X' (see
 * loom CMD --help)" (also for an abbreviated long option: only exact names
 * are taken), "loom CMD: X needs a value (see loom CMD --help)", or
 * cli_add_input's message. */
int cli_next(cli_args *p, const char **flag, const char **val, int *rc);

/* Parse a non-negative integer (--seed) into *out.  Returns 0, or
 * EXIT_BADINPUT after printing "loom CMD: FLAG expects a non-negative
 * integer, got 'S'".  A flag with bounds uses cli_parse_range instead (one
 * message naming the bounds, not two that disagree). */
int cli_parse_u64(const char *cmd, const char *flag, const char *s, uint64_t *out);

/* Parse an integer in lo..hi into *out.  Returns 0, or EXIT_BADINPUT after
 * printing the one message "loom CMD: FLAG expects LO..HI[ WHAT], got 'S'"
 * (what: e.g. "rounds", or NULL) for anything else: a sign, a fraction, no
 * digits, a value out of range or over 2^64. */
int cli_parse_range(const char *cmd, const char *flag, const char *s, uint64_t lo, uint64_t hi, const char *what,
                    uint64_t *out);

/* Parse `workload` and, when bind is set, bind and load its data set
 * (seed: the dense generator's).  Returns 0 or EXIT_BADINPUT after
 * printing why; *ds is NULL when not bound. */
int cli_load_workload(const char *cmd, const char *workload, const cli_inputs *in, uint64_t seed, int bind,
                      loom_program **prog, loom_dataset **ds);

/* Read and parse a trace file.  Returns 0 or EXIT_BADINPUT after printing
 * why (I/O error; not valid JSON or a wrong document: the message names
 * the file and the $. path). */
int cli_load_trace(const char *cmd, const char *path, loom_trace **out);

/* The trace's "workload" hash must be the program's.  Returns 0 (also when
 * `force`: then a mismatch is only a warning) or EXIT_BADINPUT after a
 * message naming both hashes. */
int cli_check_hash(const char *cmd, const loom_trace *t, const char *trace_path, const loom_program *prog,
                   const char *workload, int force);

/* Outcome of cli_replay_validate. */
typedef enum cli_replay_result {
    CLI_REPLAY_VALID = 0,   /* replayed and valid */
    CLI_REPLAY_FAILED,      /* replay failed: err says why */
    CLI_REPLAY_INVALID,     /* replayed; the validator says *v */
    CLI_REPLAY_ERROR        /* the schedule could not be initialised: err */
} cli_replay_result;

/* Replay t on a fresh schedule of the (bound) program (no rng), then
 * validate with lim (the command's target handle's limits,
 * runtime/target/target.h).  *sch is the replayed schedule. */
cli_replay_result cli_replay_validate(const loom_trace *t, const loom_program *prog, const loom_limits *lim,
                                      loom_schedule *sch, loom_violation *v, loom_error *err);

/* Format "<rule>: <message>" of a violation (the message usually starts
 * with the rule already) into buf. */
const char *cli_violation_text(const loom_violation *v, char *buf, size_t n);

/* Build the registry (built-ins plus the shared objects so[0..nso)) and the
 * design space of `modules` (NULL: the libraries' modules, when there are
 * any, followed by the target's default list).  Returns 0, or EXIT_BADINPUT
 * after printing why (*reg and *space are then NULL). */
struct loom_registry;
struct loom_space;
int cli_make_space(const char *cmd, const char *modules, const char *target, const char *const *so, int nso,
                   struct loom_registry **reg, struct loom_space **space);

/* The whole file as a NUL-terminated string (malloc'd; the caller frees
 * it), or NULL with errno set; EFBIG for a file over CLI_MAX_TEXT_BYTES
 * (checked with fstat before reading; traces and workloads are KBs). */
#define CLI_MAX_TEXT_BYTES ((uint64_t)64 << 20)
char *cli_read_text(const char *path);

/* A latency for people: "12.3 us", "4.567 ms", "1.234 s", "-" when not
 * finite; into buf. */
void cli_human_time(double s, char *buf, size_t n);

/* A long run's progress line (tune, a model campaign): a terminal (tty)
 * gets a live line, a log one every 10 s and at the end; quiet none. */
typedef struct cli_progress {
    int tty, quiet;
    double last; /* loom_now_seconds() of the last line shown (-1e9: none yet) */
    int line_moves; /* the machine-state moves (loom_tune_progress.core_line_moves) already reported */
} cli_progress;

/* 1 when a progress line for done of total is due now (and then records
 * the time in p->last), 0 when it is to be skipped. */
int cli_progress_due(cli_progress *p, int done, int total);

/* --emit-lib NAME must be a C identifier (ship/ship.h loom_ship_name_ok)
 * and --lib-dir DIR a directory.  0, or EXIT_BADINPUT after a message. */
int cli_check_lib_name(const char *cmd, const char *name, const char *dir);

/* A --module PATH.so as dlopen must see it: the file must exist (else a
 * message saying what to give), and a name without a slash gets "./"
 * (dlopen would search the library path for it).  0, or EXIT_BADINPUT. */
int cli_module_path(const char *cmd, const char *path, char *out, size_t n);

/* `loom db DIR --plot OUT` (cmd_db_plot.c): draw the records of db's
 * largest (workload, target) group -- of workload *whash when not NULL --
 * with gnuplot into OUT (.png or .svg), keeping the script as OUT's stem +
 * ".gp".  0, or EXIT_BADINPUT after a message. */
struct loom_db;
int cli_db_plot(struct loom_db *db, const char *dir, const uint64_t *whash, const char *out);

/* `loom db DIR --fidelity` (cmd_db_fidelity.c): re-simulate the CPU-measured
 * trial records of `workload` (bound with *in) on the simulator target
 * `target` (NULL or "sim": the calibrated host) and print Spearman, top-1
 * regret and the median simulated / measured latency (json: one object);
 * records measured over max_slowdown x the best are dropped as stalled (0:
 * none dropped).  Also the pairs of records measured more than `apart`
 * times apart (a ratio > 1, e.g. 1.25) and the share of them the simulator
 * orders alike, a simulated tie counting half.
 * 0, or EXIT_BADINPUT after a message (no workload, a bad target, fewer
 * than 2 records that simulate). */
int cli_db_fidelity(struct loom_db *db, const char *dir, const char *workload, const cli_inputs *in,
                    const char *target, double max_slowdown, double apart, int json);

/* The commands. */
int cmd_show(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_db(int argc, char **argv);      /* cmd_db.c */
int cmd_calibrate(int argc, char **argv); /* cmd_calibrate.c */
int cmd_space(int argc, char **argv);
int cmd_tune(int argc, char **argv);     /* cmd_tune.c */
/* What `loom tune WORKLOAD` runs the campaign with (cmd_tune.c): loom_tune
 * (search/tune/tune.h).  build/loom-mpi (cli/mpi/main.c) sets its own: rank 0
 * adds the MPI runner, the other ranks serve measurements
 * (docs/distributed.md). */
struct loom_tune_opts;
struct loom_tune_result;
extern loom_status (*cli_tune_fn)(loom_program *prog, loom_dataset *ds, const struct loom_tune_opts *opts,
                                  struct loom_tune_result *res, loom_error *err);
int cmd_plan(int argc, char **argv);     /* cmd_plan.c */
int cmd_navigate(int argc, char **argv); /* cmd_navigate.c */
/* `loom tune --plans FILE` (cmd_plan.c): up to 4 valid draws of each plan's
 * design space (search/plan/plan.h), valid under lim (the campaign's
 * target's limits), as seed traces; 0 or an exit code (the
 * message printed).  Free with cli_plan_seeds_free. */
int cli_plan_seeds(const char *path, const loom_program *prog, const loom_limits *lim, loom_trace ***seeds, int *n);
void cli_plan_seeds_free(loom_trace **seeds, int n);
int cmd_replay(int argc, char **argv);   /* cmd_tune.c */

/* Whole models (cmd_model.c, docs/models.md).  cli_is_model_file: 1 when
 * path names a model file (it ends in ".model"); cli_names_model: 1 when
 * one of argv[0..argc) does (not an option). */
int cli_is_model_file(const char *path);
int cli_names_model(int argc, char **argv);
/* `loom tune MODEL.model` with the options loom tune parsed into *o
 * (o->trials, o->db_dir, ...), --task-scheduler (NULL: gradient); in: the
 * --data/--param given (refused: the model's lines carry them); other: 1
 * when --plans or --pin was given (refused).  Returns the exit code. */
struct loom_tune_opts;
int cmd_tune_model(const char *path, const struct loom_tune_opts *o, const char *scheduler, int json, int quiet,
                   const cli_inputs *in, int other);
/* What `loom tune MODEL.model` runs the campaign with (cmd_model.c):
 * loom_model_tune (search/model/model.h).  build/loom-mpi (cli/mpi/main.c)
 * sets its own, as for cli_tune_fn: rank 0 adds the MPI runner to every
 * task's campaign, the other ranks serve every task's measurements. */
struct loom_model;
struct loom_model_tune_opts;
struct loom_model_tune_result;
extern loom_status (*cli_model_tune_fn)(struct loom_model *m, const struct loom_model_tune_opts *opts,
                                        struct loom_model_tune_result *res, loom_error *err);
int cmd_run_model(int argc, char **argv); /* `loom run MODEL.model` */
int cmd_replay_model(int argc, char **argv); /* `loom replay MODEL.model --emit-lib NAME` */

/* The end of `loom tune` (cmd_tune_report.c): the campaign's summary on
 * stdout -- name is the workload's stem, failed the trials that failed --
 * as text, or as one JSON object (o: the options it ran with; overhead:
 * search + cost model over the total time). */
struct loom_tune_opts;
struct loom_tune_result;
void cli_tune_print_summary(const char *name, const struct loom_tune_result *r, int failed);
void cli_tune_print_json(const char *name, const struct loom_tune_opts *o, const struct loom_tune_result *r,
                         int failed, double overhead);

#endif
