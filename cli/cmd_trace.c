/* loom: the trace commands -- show, validate, sample (DESIGN.md "Traces",
 * "The validator").  `loom run --trace` is in main.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <gsl/gsl_rng.h>

#include "../modules/module.h"
#include "../runtime/target/target.h"
#include "cli.h"

static const char *SHOW_HELP =
    "usage: loom show TRACE.json [options]\n"
    "\n"
    "Prints a trace as the C calls that would produce it, one instruction per line,\n"
    "samplers followed by their decision as a comment (MetaSchedule's AsPython, in C).\n"
    "\n"
    "options:\n"
    "  --workload W.loom    check the trace was recorded for this workload (its hash)\n"
    "                       and name the workload's hash in the header comment\n"
    "  --data NAME=FILE     with --workload: bind tensor NAME to a Matrix Market file\n"
    "                       (checks the data fits the workload; repeatable)\n"
    "  --param NAME=INT     with --workload: bind size NAME (repeatable)\n"
    "  --force              print even when the trace's workload hash differs\n"
    "  -h, --help           this text\n"
    "\n"
    "exit codes: 0 printed, 2 bad input (unreadable or malformed trace, bad workload,\n"
    "            a trace of another workload)\n";

static const char *VALIDATE_HELP =
    "usage: loom validate TRACE.json WORKLOAD.loom [options]\n"
    "       loom validate --rules\n"
    "\n"
    "Replays the trace on a fresh schedule of the workload (sizes bound from the data\n"
    "and parameters; recorded decisions, repaired where they no longer fit) and checks\n"
    "the whole schedule with the validator.  Prints \"valid\", or \"invalid: RULE: why\"\n"
    "(or \"invalid: replay failed: why\" when an instruction cannot apply).\n"
    "\n"
    "options:\n"
    "  --data NAME=FILE     read tensor NAME from a Matrix Market file (repeatable)\n"
    "  --param NAME=INT     bind size NAME (overrides a `param` default; repeatable)\n"
    "  --force              replay even when the trace's workload hash differs\n"
    "  --target T           whose limits the validator checks: cpu (default: this\n"
    "                       machine), sim, sim:NAME or FILE.json (a simulated model)\n"
    "  --rules              list the validator's rules, in checking order, one line each\n"
    "                       (name, the blocks it applies to, when it is violated), and exit\n"
    "  -h, --help           this text\n"
    "\n"
    "exit codes: 0 valid, 1 invalid (a validator rule, or the replay failed),\n"
    "            2 bad input (unreadable or malformed trace: the message names the\n"
    "            $. path in the document; bad workload or data; another workload's trace)\n";

static const char *SAMPLE_HELP =
    "usage: loom sample WORKLOAD.loom --count N --out DIR [options]\n"
    "\n"
    "Draws N schedules from the workload's design space (modules/module.h: the\n"
    "target's default transformation modules, or --modules), recording each as a\n"
    "trace, validates them, and writes the traces as JSON to\n"
    "DIR/trace-00000.json, DIR/trace-00001.json, ... (numbered by draw; each file is\n"
    "written to a temporary name and renamed).  Prints one summary line: draws, files\n"
    "written, valid, and invalid counts by validator rule.  The same seed, workload\n"
    "and sizes give byte-identical files.\n"
    "\n"
    "options:\n"
    "  --count N            number of draws (required, N >= 1)\n"
    "  --out DIR            output directory, created with its parents (required)\n"
    "  --seed S             seed of the sampler's mt19937 generator (default 1)\n"
    "  --modules A,B,...    the design space: these modules, in this order, on every\n"
    "                       block (default: the target's list; `loom space --list`\n"
    "                       lists the registered modules)\n"
    "  --module PATH.so     load a shared object of user modules (repeatable); without\n"
    "                       --modules, its modules run first, then the default list\n"
    "  --target KIND        cpu (default) or sim: which default module list\n"
    "  --valid-only         write only the valid traces (still N draws; a file keeps\n"
    "                       its draw number, so numbers may have gaps)\n"
    "  --data NAME=FILE     read tensor NAME from a Matrix Market file (repeatable)\n"
    "  --param NAME=INT     bind size NAME (overrides a `param` default; repeatable)\n"
    "  -h, --help           this text\n"
    "\n"
    "exit codes: 0 written, 1 some draw failed to sample, 2 bad input (workload, data,\n"
    "            options) or DIR cannot be written\n";

/* ---- loom show ------------------------------------------------------- */

int cmd_show(int argc, char **argv)
{
    const char *trace_path = NULL, *workload = NULL;
    static cli_inputs in;
    int force = 0;
    memset(&in, 0, sizeof in);
    enum { WORKLOAD, FORCE };
    static const cli_opt opts[] = {{"workload", 0, 1, WORKLOAD}, {"force", 0, 0, FORCE}};
    static cli_args args;
    cli_args_init(&args, "show", argc, argv, SHOW_HELP, opts, (int)(sizeof opts / sizeof *opts), &in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == WORKLOAD) {
            if (workload) {
                fprintf(stderr, "loom show: --workload given twice\n");
                return EXIT_BADINPUT;
            }
            workload = val;
        } else if (id == FORCE) {
            force = 1;
        } else if (!trace_path) {
            trace_path = val;
        } else {
            fprintf(stderr, "loom show: more than one trace ('%s' and '%s')\n", trace_path, val);
            return EXIT_BADINPUT;
        }
    }
    (void)a;
    if (!trace_path) {
        fprintf(stderr, "loom show: no trace given\n%s", SHOW_HELP);
        return EXIT_BADINPUT;
    }
    if (!workload && (in.nspecs || in.nparams)) {
        fprintf(stderr, "loom show: --data and --param need --workload\n");
        return EXIT_BADINPUT;
    }
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    loom_trace *t = NULL;
    int rc = cli_load_trace("show", trace_path, &t);
    if (!rc && workload)
        rc = cli_load_workload("show", workload, &in, 1, in.nspecs || in.nparams, &prog, &ds);
    if (!rc && prog)
        rc = cli_check_hash("show", t, trace_path, prog, workload, force);
    if (!rc) {
        /* loom_trace_print_c takes a NULL program (the trace's own hash);
         * with a mismatching --workload --force, keep the trace's hash */
        const loom_program *p = prog && t->workload == loom_program_hash(prog) ? prog : NULL;
        loom_trace_print_c(t, p, stdout);
        if (fflush(stdout)) {
            fprintf(stderr, "loom show: cannot write the output: %s\n", strerror(errno));
            rc = EXIT_BADINPUT;
        }
    }
    loom_trace_free(t);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return rc;
}

/* ---- loom validate ---------------------------------------------------- */

/* --rules: the validator's rule table (traces/validate.h), one line a rule. */
static int print_rules(void)
{
    if (loom_validate_print_rules(stdout)) {
        fprintf(stderr, "loom validate: cannot write the output: %s\n", strerror(errno));
        return EXIT_BADINPUT;
    }
    return 0;
}

int cmd_validate(int argc, char **argv)
{
    const char *trace_path = NULL, *workload = NULL, *target = "cpu";
    static cli_inputs in;
    int force = 0;
    memset(&in, 0, sizeof in);
    enum { FORCE, TARGET, RULES };
    static const cli_opt opts[] = {{"force", 0, 0, FORCE}, {"target", 0, 1, TARGET}, {"rules", 0, 0, RULES}};
    static cli_args args;
    cli_args_init(&args, "validate", argc, argv, VALIDATE_HELP, opts, 3, &in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == FORCE) {
            force = 1;
        } else if (id == TARGET) {
            target = val;
        } else if (id == RULES) {
            return print_rules();
        } else if (!trace_path) {
            trace_path = val;
        } else if (!workload) {
            workload = val;
        } else {
            fprintf(stderr, "loom validate: too many arguments ('%s'); expected TRACE.json WORKLOAD.loom\n", val);
            return EXIT_BADINPUT;
        }
    }
    (void)a;
    if (!trace_path || !workload) {
        fprintf(stderr, "loom validate: expected TRACE.json WORKLOAD.loom\n%s", VALIDATE_HELP);
        return EXIT_BADINPUT;
    }
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    loom_trace *t = NULL;
    loom_schedule *sch = NULL;
    loom_target tg; /* the target handle: its limits are the validator's */
    loom_error terr;
    if (loom_target_open(target, NULL, NULL, &tg, &terr)) {
        cli_print_err("validate", &terr);
        return EXIT_BADINPUT;
    }
    int rc = cli_load_trace("validate", trace_path, &t);
    if (!rc)
        rc = cli_load_workload("validate", workload, &in, 1, 1, &prog, &ds);
    if (!rc)
        rc = cli_check_hash("validate", t, trace_path, prog, workload, force);
    if (!rc) {
        sch = malloc(sizeof *sch);
        loom_error err;
        loom_error_clear(&err);
        loom_violation v;
        char buf[1200];
        if (!sch) {
            fprintf(stderr, "loom validate: out of memory\n");
            rc = EXIT_BADINPUT;
        } else {
            switch (cli_replay_validate(t, prog, &tg.limits, sch, &v, &err)) {
            case CLI_REPLAY_VALID:
                puts("valid");
                break;
            case CLI_REPLAY_FAILED:
                printf("invalid: replay failed: %s\n", err.msg);
                rc = EXIT_WRONG;
                break;
            case CLI_REPLAY_INVALID:
                printf("invalid: %s\n", cli_violation_text(&v, buf, sizeof buf));
                rc = EXIT_WRONG;
                break;
            case CLI_REPLAY_ERROR:
                cli_print_err("validate", &err);
                rc = EXIT_BADINPUT;
                break;
            }
        }
    }
    free(sch);
    loom_trace_free(t);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return rc;
}

/* ---- loom sample ------------------------------------------------------ */

/* mkdir -p.  0 or -1 (errno set). */
static int mkdir_p(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        errno = n ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t k = 1; k <= n; k++) {
        if (buf[k] != '/' && buf[k] != 0)
            continue;
        char c = buf[k];
        buf[k] = 0;
        if (mkdir(buf, 0777) && errno != EEXIST)
            return -1;
        buf[k] = c;
    }
    struct stat st;
    if (stat(path, &st))
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Write text to path atomically (a temporary file in the same directory,
 * then rename).  0 or -1 (errno set). */
static int write_atomic(const char *dir, const char *name, const char *text)
{
    char tmp[4352], dst[4352];
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%ld", dir, name, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    size_t len = strlen(text);
    int e = 0;
    errno = 0;
    if (fwrite(text, 1, len, f) != len || fputc('\n', f) == EOF)
        e = errno ? errno : EIO;
    if (fflush(f) && !e)
        e = errno ? errno : EIO;
    if (!e && fsync(fileno(f)))
        e = errno;
    if (fclose(f) && !e)
        e = errno ? errno : EIO;
    if (!e && rename(tmp, dst))
        e = errno;
    if (!e)
        return 0;
    unlink(tmp);
    errno = e ? e : EIO;
    return -1;
}

/* What `loom sample`'s options asked for. */
typedef struct {
    const char *workload, *outdir, *modules, *target, *so[16];
    uint64_t count, seed;
    int valid_only, nso;
} sample_args;

/* Parse `loom sample`'s command line.  Returns -1 to go on, or the exit
 * code to return (help printed, or bad usage). */
static int sample_parse(int argc, char **argv, sample_args *sa, cli_inputs *in)
{
    memset(sa, 0, sizeof *sa);
    sa->seed = 1;
    sa->target = "cpu";
    int have_count = 0;
    enum { COUNT, SEED, OUT, MODULES, MODULE, TARGET, VALID_ONLY };
    static const cli_opt opts[] = {
        {"count", 0, 1, COUNT},     {"seed", 0, 1, SEED},     {"out", 0, 1, OUT},
        {"modules", 0, 1, MODULES}, {"module", 0, 1, MODULE}, {"target", 0, 1, TARGET},
        {"valid-only", 0, 0, VALID_ONLY},
    };
    static cli_args args;
    cli_args_init(&args, "sample", argc, argv, SAMPLE_HELP, opts, (int)(sizeof opts / sizeof *opts), in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == COUNT) {
            if (cli_parse_range("sample", "--count", val, 1, 100000, NULL, &sa->count))
                return EXIT_BADINPUT;
            have_count = 1;
        } else if (id == SEED) {
            if (cli_parse_u64("sample", "--seed", val, &sa->seed))
                return EXIT_BADINPUT;
        } else if (id == OUT) {
            if (!*val || strlen(val) > 4000) {
                fprintf(stderr, "loom sample: --out expects a directory name\n");
                return EXIT_BADINPUT;
            }
            sa->outdir = val;
        } else if (id == MODULES) {
            sa->modules = val;
        } else if (id == MODULE) {
            if (sa->nso >= 16) {
                fprintf(stderr, "loom sample: at most 16 --module libraries\n");
                return EXIT_BADINPUT;
            }
            sa->so[sa->nso++] = val;
        } else if (id == TARGET) {
            if (!loom_default_modules(val)) {
                fprintf(stderr, "loom sample: --target expects cpu or sim, got '%s'\n", val);
                return EXIT_BADINPUT;
            }
            sa->target = val;
        } else if (id == VALID_ONLY) {
            sa->valid_only = 1;
        } else if (!sa->workload) {
            sa->workload = val;
        } else {
            fprintf(stderr, "loom sample: more than one workload ('%s' and '%s')\n", sa->workload, val);
            return EXIT_BADINPUT;
        }
    }
    (void)a;
    if (!sa->workload) {
        fprintf(stderr, "loom sample: no workload given\n%s", SAMPLE_HELP);
        return EXIT_BADINPUT;
    }
    if (!have_count || !sa->outdir) {
        fprintf(stderr, "loom sample: %s is required (see loom sample --help)\n", !have_count ? "--count" : "--out");
        return EXIT_BADINPUT;
    }
    return -1;
}

/* Counts of `loom sample`'s draws; by_rule[r] counts invalid draws by the
 * validator's rule r (by_rule[nrules]: a rule not in the list). */
typedef struct {
    long written, valid, invalid, failed;
    int nrules;
    const char *const *rules;
    int *by_rule;
} sample_counts;

/* Draw sa->count schedules from the space, validate each and write its trace
 * to sa->outdir.  Returns 0, or EXIT_BADINPUT after printing why (a draw
 * that fails to sample or serialise is counted in c->failed instead). */
static int sample_draws(const sample_args *sa, const loom_program *prog, const loom_space *space, sample_counts *c)
{
    int rc = EXIT_BADINPUT;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_trace *t = loom_trace_new();
    if (!rng || !sch || !t) {
        fprintf(stderr, "loom sample: out of memory\n");
        goto out;
    }
    gsl_rng_set(rng, (unsigned long)sa->seed);
    /* --target here names a module list (cpu or sim); the limits are this machine's CPU target's */
    loom_target tg;
    loom_error terr;
    if (loom_target_open("cpu", NULL, NULL, &tg, &terr)) {
        cli_print_err("sample", &terr);
        goto out;
    }
    const loom_limits lim = tg.limits;
    for (uint64_t k = 0; k < sa->count; k++) {
        loom_error err;
        loom_error_clear(&err);
        loom_trace_clear(t);
        if (loom_schedule_init(sch, prog, rng, &err)) {
            cli_print_err("sample", &err);
            goto out;
        }
        sch->recorder = loom_trace_recorder;
        sch->recorder_ctx = t;
        if (loom_space_apply(space, sch, &err) || loom_trace_status(t, &err)) {
            fprintf(stderr, "loom sample: draw %llu: %s\n", (unsigned long long)k, err.msg);
            c->failed++;
            continue;
        }
        loom_violation v;
        int ok = loom_validate(sch, &lim, &v, NULL) == LOOM_OK;
        if (ok) {
            c->valid++;
        } else {
            c->invalid++;
            int r = 0;
            while (r < c->nrules && strcmp(c->rules[r], v.rule))
                r++;
            c->by_rule[r]++;
        }
        if (sa->valid_only && !ok)
            continue;
        char *json = NULL;
        loom_status st = loom_trace_to_json(t, prog, &json);
        if (st) {
            loom_trace_status(t, &err);
            fprintf(stderr, "loom sample: draw %llu: cannot serialise the trace: %s\n", (unsigned long long)k,
                    st == LOOM_ERR_NOMEM ? "out of memory" : err.msg);
            free(json);
            c->failed++;
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "trace-%05llu.json", (unsigned long long)k);
        int wr = write_atomic(sa->outdir, name, json);
        free(json);
        if (wr) {
            fprintf(stderr, "loom sample: cannot write %s/%s: %s\n", sa->outdir, name, strerror(errno));
            goto out;
        }
        c->written++;
    }
    rc = 0;
out:
    loom_trace_free(t);
    free(sch);
    if (rng)
        gsl_rng_free(rng);
    return rc;
}

int cmd_sample(int argc, char **argv)
{
    static cli_inputs in;
    memset(&in, 0, sizeof in);
    sample_args sa;
    int rc = sample_parse(argc, argv, &sa, &in);
    if (rc >= 0)
        return rc;

    loom_registry *reg = NULL;
    loom_space *space = NULL;
    if (cli_make_space("sample", sa.modules, sa.target, sa.so, sa.nso, &reg, &space))
        return EXIT_BADINPUT;
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    sample_counts c = {0};
    rc = cli_load_workload("sample", sa.workload, &in, 1, 1, &prog, &ds);
    if (rc)
        goto out;
    rc = EXIT_BADINPUT;
    if (mkdir_p(sa.outdir)) {
        fprintf(stderr, "loom sample: cannot create directory %s: %s\n", sa.outdir, strerror(errno));
        goto out;
    }
    c.rules = loom_validator_rules(&c.nrules);
    c.by_rule = calloc((size_t)c.nrules + 1, sizeof *c.by_rule);
    if (!c.by_rule) {
        fprintf(stderr, "loom sample: out of memory\n");
        goto out;
    }
    if ((rc = sample_draws(&sa, prog, space, &c)))
        goto out;
    printf("sampled %llu traces of %s (seed %llu): %ld written to %s, %ld valid, %ld invalid",
           (unsigned long long)sa.count, sa.workload, (unsigned long long)sa.seed, c.written, sa.outdir, c.valid,
           c.invalid);
    if (c.invalid) {
        const char *sep = " (";
        for (int r = 0; r <= c.nrules; r++)
            if (c.by_rule[r]) {
                printf("%s%s %d", sep, r < c.nrules ? c.rules[r] : "other", c.by_rule[r]);
                sep = ", ";
            }
        printf(")");
    }
    if (c.failed)
        printf(", %ld failed to sample", c.failed);
    printf("\n");
    rc = c.failed ? EXIT_WRONG : 0;
out:
    free(c.by_rule);
    loom_dataset_free(ds);
    loom_program_free(prog);
    loom_space_free(space);
    loom_registry_free(reg);
    return rc;
}

int cli_make_space(const char *cmd, const char *modules, const char *target, const char *const *so, int nso,
                   loom_registry **reg, loom_space **space)
{
    loom_error err;
    loom_error_clear(&err);
    *space = NULL;
    *reg = loom_registry_new();
    if (!*reg) {
        fprintf(stderr, "loom %s: out of memory\n", cmd);
        return EXIT_BADINPUT;
    }
    int builtins = loom_registry_count(*reg);
    char path[4200];
    for (int k = 0; k < nso; k++)
        if (cli_module_path(cmd, so[k], path, sizeof path) || loom_registry_load(*reg, path, &err)) {
            if (err.msg[0])
                cli_print_err(cmd, &err);
            loom_registry_free(*reg);
            *reg = NULL;
            return EXIT_BADINPUT;
        }
    char list[2048];
    if (!modules && nso) {
        /* every module the libraries registered, then the default list (a
         * user module sees the blocks before the built-ins tile them) */
        list[0] = 0;
        for (int k = builtins; k < loom_registry_count(*reg); k++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s,", loom_registry_name(*reg, k));
        }
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s", loom_default_modules(target));
        modules = list;
    }
    if (loom_space_new(*reg, modules, target, space, &err)) {
        cli_print_err(cmd, &err);
        loom_registry_free(*reg);
        *reg = NULL;
        return EXIT_BADINPUT;
    }
    return 0;
}
