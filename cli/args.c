/* loom: the option parser the commands share (cli.h "option parsing"):
 * getopt_long in RETURN_IN_ORDER mode ("-" first in the short options), so
 * options and positional arguments come back in command-line order and the
 * first error is the first bad argument, as each command's hand-written
 * loop used to report. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum { ID_HELP = -100, ID_DATA = -101, ID_PARAM = -102 };

static void add(cli_args *p, int *n, const char *name, char short_name, int has_value, int id)
{
    p->lo[*n] = (struct option){name, has_value ? required_argument : no_argument, NULL, 256 + *n};
    p->ids[*n] = id;
    p->shorts[*n] = short_name;
    if (short_name) {
        size_t k = strlen(p->shortopts);
        p->shortopts[k++] = short_name;
        if (has_value)
            p->shortopts[k++] = ':';
        p->shortopts[k] = 0;
    }
    ++*n;
}

void cli_args_init(cli_args *p, const char *cmd, int argc, char **argv, const char *help, const cli_opt *opts,
                   int nopts, cli_inputs *in)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->help = help;
    p->in = in;
    p->toomany = argc > CLI_MAX_ARGS;
    p->argc = p->toomany ? 0 : argc;
    p->av[0] = (char *)cmd; /* getopt's argv[0] */
    for (int i = 0; i < p->argc; i++)
        p->av[i + 1] = argv[i];
    p->av[p->argc + 1] = NULL;
    /* "-": RETURN_IN_ORDER; ":": a missing value is ':' and getopt prints nothing */
    strcpy(p->shortopts, "-:");
    int n = 0;
    add(p, &n, "help", 'h', 0, ID_HELP);
    if (in) {
        add(p, &n, "data", 0, 1, ID_DATA);
        add(p, &n, "param", 0, 1, ID_PARAM);
    }
    for (int k = 0; k < nopts && k < CLI_MAX_OPTS; k++)
        add(p, &n, opts[k].name, opts[k].short_name, opts[k].has_value, opts[k].id);
    p->lo[n] = (struct option){0, 0, 0, 0};
    optind = 0; /* glibc: a full re-initialisation */
    opterr = 0;
}

static int bad(cli_args *p, int *rc, const char *fmt, const char *arg)
{
    fprintf(stderr, "loom %s: ", p->cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see loom %s --help)\n", p->cmd);
    *rc = EXIT_BADINPUT;
    return CLI_STOP;
}

int cli_next(cli_args *p, const char **flag, const char **val, int *rc)
{
    *flag = NULL;
    *val = NULL;
    *rc = 0;
    if (p->toomany) {
        fprintf(stderr, "loom %s: more than %d arguments\n", p->cmd, CLI_MAX_ARGS);
        *rc = EXIT_BADINPUT;
        return CLI_STOP;
    }
    for (;;) {
        if (p->rest > 0) { /* after "--": positional */
            if (p->rest > p->argc)
                return CLI_END;
            *val = p->av[p->rest++];
            return CLI_ARG;
        }
        int at = optind > 0 ? optind : 1; /* the element getopt is about to read */
        int li = -1;
        int c = getopt_long(p->argc + 1, p->av, p->shortopts, p->lo, &li);
        if (c == -1) {
            p->rest = optind > 0 ? optind : 1;
            continue;
        }
        const char *elem = p->av[at];
        if (c == 1) {
            *val = optarg;
            return CLI_ARG;
        }
        if (c == '?')
            return bad(p, rc, "unknown option '%s'", elem);
        if (c == ':')
            return bad(p, rc, "%s needs a value", elem);
        int k = -1;
        if (c >= 256) {
            k = c - 256;
            /* getopt_long takes unambiguous abbreviations; loom takes exact names */
            const char *nm = p->lo[k].name;
            size_t len = strlen(nm);
            if (strncmp(elem, "--", 2) || strncmp(elem + 2, nm, len) || (elem[2 + len] && elem[2 + len] != '='))
                return bad(p, rc, "unknown option '%s'", elem);
        } else {
            for (int j = 0; p->lo[j].name && k < 0; j++)
                if (p->shorts[j] == c)
                    k = j;
            /* a cluster (-qh) or a glued value is not a loom option */
            if (k >= 0 && (elem[0] != '-' || elem[1] != c || elem[2]))
                return bad(p, rc, "unknown option '%s'", elem);
        }
        if (k < 0)
            return bad(p, rc, "unknown option '%s'", elem);
        snprintf(p->flag, sizeof p->flag, "--%s", p->lo[k].name);
        int id = p->ids[k];
        if (id == ID_HELP) {
            fputs(p->help, stdout);
            return CLI_STOP;
        }
        if (id == ID_DATA || id == ID_PARAM) {
            if ((*rc = cli_add_input(p->cmd, id == ID_DATA ? "--data" : "--param", optarg, p->in)))
                return CLI_STOP;
            continue;
        }
        *flag = p->flag;
        *val = optarg;
        return id;
    }
}
