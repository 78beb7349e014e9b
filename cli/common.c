/* loom: helpers shared by the commands (see cli.h). */
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "../dsl/ir/util.h"
#include "../ship/ship.h"

void cli_print_err(const char *cmd, const loom_error *err)
{
    char buf[1600];
    fprintf(stderr, "loom %s: %s\n", cmd, loom_error_format(err, buf, sizeof buf));
}

int cli_is_input_flag(const char *flag)
{
    return !strcmp(flag, "--data") || !strcmp(flag, "--param");
}

static int split_assign(const char *cmd, const char *arg, const char *flag, char *name, size_t nn,
                        const char **value)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) {
        fprintf(stderr, "loom %s: %s expects NAME=VALUE, got '%s'\n", cmd, flag, arg);
        return -1;
    }
    if ((size_t)(eq - arg) >= nn) {
        fprintf(stderr, "loom %s: %s: name too long in '%s'\n", cmd, flag, arg);
        return -1;
    }
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = 0;
    *value = eq + 1;
    return 0;
}

int cli_add_input(const char *cmd, const char *flag, const char *val, cli_inputs *in)
{
    if (!strcmp(flag, "--data")) {
        if (in->nspecs == LOOM_MAX_TENSORS) {
            fprintf(stderr, "loom %s: too many --data\n", cmd);
            return EXIT_BADINPUT;
        }
        loom_data_spec *s = &in->specs[in->nspecs];
        const char *file;
        if (split_assign(cmd, val, "--data", s->tensor, sizeof s->tensor, &file))
            return EXIT_BADINPUT;
        if (strlen(file) >= sizeof s->path) {
            fprintf(stderr, "loom %s: --data: path too long in '%s'\n", cmd, val);
            return EXIT_BADINPUT;
        }
        snprintf(s->path, sizeof s->path, "%s", file);
        in->nspecs++;
        return 0;
    }
    if (in->nparams == LOOM_MAX_SIZES) {
        fprintf(stderr, "loom %s: too many --param\n", cmd);
        return EXIT_BADINPUT;
    }
    loom_param_spec *p = &in->params[in->nparams];
    const char *v;
    if (split_assign(cmd, val, "--param", p->name, sizeof p->name, &v))
        return EXIT_BADINPUT;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x <= 0) {
        fprintf(stderr, "loom %s: --param %s expects a positive integer, got '%s'\n", cmd, p->name, v);
        return EXIT_BADINPUT;
    }
    p->value = x;
    in->nparams++;
    return 0;
}

/* A decimal integer without sign into *out: 0, or -1. */
static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    *out = x;
    return 0;
}

int cli_parse_u64(const char *cmd, const char *flag, const char *s, uint64_t *out)
{
    if (parse_u64(s, out)) {
        fprintf(stderr, "loom %s: %s expects a non-negative integer, got '%s'\n", cmd, flag, s);
        return EXIT_BADINPUT;
    }
    return 0;
}

int cli_parse_range(const char *cmd, const char *flag, const char *s, uint64_t lo, uint64_t hi, const char *what,
                    uint64_t *out)
{
    uint64_t v;
    if (parse_u64(s, &v) || v < lo || v > hi) {
        fprintf(stderr, "loom %s: %s expects %" PRIu64 "..%" PRIu64 "%s%s, got '%s'\n", cmd, flag, lo, hi,
                what ? " " : "", what ? what : "", s);
        return EXIT_BADINPUT;
    }
    *out = v;
    return 0;
}

int cli_load_workload(const char *cmd, const char *workload, const cli_inputs *in, uint64_t seed, int bind,
                      loom_program **prog, loom_dataset **ds)
{
    loom_error err;
    loom_error_clear(&err);
    *prog = NULL;
    *ds = NULL;
    if (loom_program_parse_file(workload, prog, &err)) {
        cli_print_err(cmd, &err);
        return EXIT_BADINPUT;
    }
    if (!bind)
        return 0;
    if (loom_dataset_load(*prog, in->specs, in->nspecs, in->params, in->nparams, seed, ds, &err)) {
        cli_print_err(cmd, &err);
        loom_program_free(*prog);
        *prog = NULL;
        return EXIT_BADINPUT;
    }
    return 0;
}

char *cli_read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf;
    size_t len;
    int e = loom_read_stream(f, (size_t)CLI_MAX_TEXT_BYTES, &buf, &len);
    fclose(f);
    if (e)
        errno = e;
    return buf;
}

int cli_load_trace(const char *cmd, const char *path, loom_trace **out)
{
    *out = NULL;
    errno = 0;
    char *text = cli_read_text(path);
    if (!text) {
        if (errno == EFBIG)
            fprintf(stderr, "loom %s: trace %s is larger than %d MiB, the limit on trace files: not a trace\n",
                    cmd, path, (int)(CLI_MAX_TEXT_BYTES >> 20));
        else
            fprintf(stderr, "loom %s: cannot read trace %s: %s\n", cmd, path, strerror(errno ? errno : EIO));
        return EXIT_BADINPUT;
    }
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_trace_from_json(text, path, out, &err);
    free(text);
    if (st) {
        cli_print_err(cmd, &err);
        return EXIT_BADINPUT;
    }
    return 0;
}

int cli_check_hash(const char *cmd, const loom_trace *t, const char *trace_path, const loom_program *prog,
                   const char *workload, int force)
{
    uint64_t h = loom_program_hash(prog);
    if (!t->has_workload || t->workload == h || t->workload == loom_program_text_hash(prog->source))
        return 0; /* the text hash: a trace recorded by an older loom */
    fprintf(stderr,
            "loom %s: %s: trace was recorded for workload hash %016" PRIx64 ", but %s has hash %016" PRIx64
            "%s\n",
            cmd, trace_path, t->workload, workload, h,
            force ? " (--force: replaying anyway)" : "; give the workload it was recorded for, or --force");
    return force ? 0 : EXIT_BADINPUT;
}

cli_replay_result cli_replay_validate(const loom_trace *t, const loom_program *prog, const loom_limits *lim,
                                      loom_schedule *sch, loom_violation *v, loom_error *err)
{
    if (loom_schedule_init(sch, prog, NULL, err))
        return CLI_REPLAY_ERROR;
    if (loom_trace_replay(t, sch, NULL, err))
        return CLI_REPLAY_FAILED;
    if (loom_validate(sch, lim, v, NULL))
        return CLI_REPLAY_INVALID;
    return CLI_REPLAY_VALID;
}

const char *cli_violation_text(const loom_violation *v, char *buf, size_t n)
{
    size_t rl = strlen(v->rule);
    if (rl && !strncmp(v->msg, v->rule, rl) && v->msg[rl] == ':')
        snprintf(buf, n, "%s", v->msg);
    else
        snprintf(buf, n, "%s: %s", v->rule, v->msg);
    return buf;
}

void cli_human_time(double s, char *buf, size_t n)
{
    if (!isfinite(s))
        snprintf(buf, n, "-");
    else if (s < 1e-3)
        snprintf(buf, n, "%.1f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, n, "%.3f ms", s * 1e3);
    else
        snprintf(buf, n, "%.3f s", s);
}

int cli_check_lib_name(const char *cmd, const char *name, const char *dir)
{
    if (!loom_ship_name_ok(name)) {
        fprintf(stderr, "loom %s: --emit-lib '%s': a kernel library is named by a C identifier of 1..40 characters "
                        "(not a C keyword, not starting with loom_), e.g. --emit-lib spmm_cora\n", cmd, name);
        return EXIT_BADINPUT;
    }
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "loom %s: --lib-dir %s: not a directory (create it first)\n", cmd, dir);
        return EXIT_BADINPUT;
    }
    return 0;
}

int cli_module_path(const char *cmd, const char *path, char *out, size_t n)
{
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "loom %s: --module %s: no such file (give the path of a shared object built as "
                        "docs/modules.md says, e.g. --module ./build/mymodules.so)\n", cmd, path);
        return EXIT_BADINPUT;
    }
    /* dlopen searches the library path for a name without a slash; a file
     * named on the command line is meant as a path */
    if ((size_t)snprintf(out, n, "%s%s", strchr(path, '/') ? "" : "./", path) >= n) {
        fprintf(stderr, "loom %s: --module %s: path too long\n", cmd, path);
        return EXIT_BADINPUT;
    }
    return 0;
}

int cli_progress_due(cli_progress *p, int done, int total)
{
    if (p->quiet)
        return 0;
    double now = loom_now_seconds();
    if (!p->tty && done < total && now - p->last < 10)
        return 0;
    p->last = now;
    return 1;
}
