/* loom: `loom space` -- print a workload's design space (modules/module.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../modules/module.h"
#include "cli.h"

static const char *SPACE_HELP =
    "usage: loom space WORKLOAD.loom [options]\n"
    "\n"
    "Prints the workload's design space: the probabilistic schedule program that the\n"
    "transformation modules make of it, as the C calls of one draw, every sampling\n"
    "instruction marked as a HOLE with its number of choices (and the value drawn),\n"
    "then an estimate of the space's size (the product of every hole's choices,\n"
    "averaged in log10 over several draws, since an instruction list depends on\n"
    "earlier decisions).  Sizes come from the data and parameters.\n"
    "\n"
    "options:\n"
    "  --modules A,B,...    the modules, in order (default: the target's list)\n"
    "  --module PATH.so     load a shared object of user modules (repeatable)\n"
    "  --target KIND        cpu (default) or sim\n"
    "  --seed S             seed of the draws (default 1)\n"
    "  --draws N            draws for the size estimate (default 20, 1..10000)\n"
    "  --list               list the registered modules (name and what it does) and the\n"
    "                       default lists, and exit (docs/modules.md explains each)\n"
    "  --data NAME=FILE     read tensor NAME from a Matrix Market file (repeatable)\n"
    "  --param NAME=INT     bind size NAME (repeatable)\n"
    "  -h, --help           this text\n"
    "\n"
    "exit codes: 0 printed, 1 the space failed to apply, 2 bad input\n";

int cmd_space(int argc, char **argv)
{
    const char *workload = NULL, *modules = NULL, *target = "cpu", *so[16];
    static cli_inputs in;
    uint64_t seed = 1, draws = 20;
    int nso = 0, list = 0;
    memset(&in, 0, sizeof in);
    enum { MODULES, MODULE, TARGET, SEED, DRAWS, LIST };
    static const cli_opt opts[] = {
        {"modules", 0, 1, MODULES}, {"module", 0, 1, MODULE}, {"target", 0, 1, TARGET},
        {"seed", 0, 1, SEED},       {"draws", 0, 1, DRAWS},   {"list", 0, 0, LIST},
    };
    static cli_args args;
    cli_args_init(&args, "space", argc, argv, SPACE_HELP, opts, (int)(sizeof opts / sizeof *opts), &in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == MODULES) {
            modules = val;
        } else if (id == MODULE) {
            if (nso >= 16) {
                fprintf(stderr, "loom space: at most 16 --module libraries\n");
                return EXIT_BADINPUT;
            }
            so[nso++] = val;
        } else if (id == TARGET) {
            if (!loom_default_modules(val)) {
                fprintf(stderr, "loom space: --target expects cpu or sim, got '%s'\n", val);
                return EXIT_BADINPUT;
            }
            target = val;
        } else if (id == SEED) {
            if (cli_parse_u64("space", "--seed", val, &seed))
                return EXIT_BADINPUT;
        } else if (id == DRAWS) {
            if (cli_parse_range("space", "--draws", val, 1, 10000, NULL, &draws))
                return EXIT_BADINPUT;
        } else if (id == LIST) {
            list = 1;
        } else if (!workload) {
            workload = val;
        } else {
            fprintf(stderr, "loom space: more than one workload ('%s' and '%s')\n", workload, val);
            return EXIT_BADINPUT;
        }
    }
    (void)a;
    if (!workload && !list) {
        fprintf(stderr, "loom space: no workload given\n%s", SPACE_HELP);
        return EXIT_BADINPUT;
    }
    loom_registry *reg = NULL;
    loom_space *space = NULL;
    if (cli_make_space("space", modules, target, so, nso, &reg, &space))
        return EXIT_BADINPUT;
    int rc = 0;
    if (list) {
        if (loom_registry_print(reg, stdout)) {
            fprintf(stderr, "loom space: cannot write the output: %s\n", strerror(errno));
            rc = EXIT_BADINPUT;
        }
    } else {
        loom_program *prog = NULL;
        loom_dataset *ds = NULL;
        rc = cli_load_workload("space", workload, &in, 1, 1, &prog, &ds);
        if (!rc) {
            loom_error err;
            loom_error_clear(&err);
            if (loom_space_print(space, prog, (unsigned long)seed, (int)draws, stdout, &err)) {
                cli_print_err("space", &err);
                rc = EXIT_WRONG;
            }
        }
        loom_dataset_free(ds);
        loom_program_free(prog);
    }
    if (fflush(stdout)) {
        fprintf(stderr, "loom space: cannot write the output: %s\n", strerror(errno));
        rc = EXIT_BADINPUT;
    }
    loom_space_free(space);
    loom_registry_free(reg);
    return rc;
}
