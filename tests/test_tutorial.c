/* The tutorial's doc test (issue 27): docs/tutorial.md's `sh` blocks are
 * extracted and run verbatim, in order, as one bash script (set -euo
 * pipefail) in a temporary directory whose build/, data/, workloads/,
 * targets/ and python/ are the checkout's (symbolic links), with TRIALS=2
 * (the tutorial's own variable for the campaign's budget).  A block right
 * after a line `<!-- doctest: skip (why) -->` is not run (the clone and
 * make).  Passes when every block exits 0 and the shipped kernel was called
 * from C and Python with correct results.  Skips without /usr/bin/python3
 * with numpy and scipy, or gnuplot. */
#include <criterion/criterion.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

#define TUTORIAL "docs/tutorial.md"

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Write tutorial text's runnable blocks to f as one script; returns how
 * many blocks were written, *skipped how many were marked skip. */
static int extract(const char *text, FILE *f, int *skipped)
{
    int blocks = 0, lineno = 1, skip_next = 0, in = 0;
    *skipped = 0;
    fprintf(f, "set -euo pipefail\n");
    for (const char *p = text; *p; lineno++) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (in && len == 3 && !strncmp(p, "```", 3)) {
            in = 0;
        } else if (in == 1) {
            fprintf(f, "%.*s\n", (int)len, p);
        } else if (!in && len == 5 && !strncmp(p, "```sh", 5)) {
            in = skip_next ? 2 : 1;
            *skipped += skip_next;
            if (in == 1)
                fprintf(f, "echo '== tutorial block %d (" TUTORIAL ":%d)' >&2\n", ++blocks, lineno);
            skip_next = 0;
        } else if (!in && len) {
            skip_next = !strncmp(p, "<!-- doctest: skip", 18);
        }
        p = e ? e + 1 : p + len;
    }
    cr_assert_eq(in, 0, TUTORIAL ": an unterminated ```sh block");
    return blocks;
}

Test(tutorial, every_command_runs_verbatim, .timeout = 600)
{
    if (sh("/usr/bin/python3 -c 'import numpy, scipy' > /dev/null 2>&1") != 0)
        cr_skip_test("/usr/bin/python3 with numpy and scipy is needed (apt-get install python3-scipy)");
    if (sh("command -v gnuplot > /dev/null 2>&1") != 0)
        cr_skip_test("gnuplot is not installed (apt-get install gnuplot-nox)");
    char *text = fx_slurp(TUTORIAL);
    cr_assert_not_null(text, "cannot read " TUTORIAL);
    char dir[] = "/tmp/loom-tutorial-XXXXXX", path[PATH_MAX + 64], root[PATH_MAX], bdir[PATH_MAX], cmd[4 * PATH_MAX + 512];
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_not_null(realpath(".", root));
    const char *bin = getenv("LOOM_BIN");
    snprintf(path, sizeof path, "%s", bin ? bin : "build/loom");
    cr_assert_not_null(realpath(dirname(path), bdir), "no build directory");
    snprintf(path, sizeof path, "%s/tutorial.sh", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    int skipped, blocks = extract(text, f, &skipped);
    fclose(f);
    cr_assert_geq(blocks, 6, "expected the tutorial's steps as sh blocks, found %d", blocks);
    cr_assert_eq(skipped, 1, "expected only the clone-and-make block skipped, %d were", skipped);
    const char *steps[] = {"build/loom tune ", "--trials ${TRIALS:-", "--emit-lib spmm_cora", "./spmm_main",
                           "/usr/bin/python3 spmm_call.py"};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
        cr_assert(strstr(text, steps[i]), TUTORIAL " lost its step '%s'", steps[i]);
    free(text);
    snprintf(cmd, sizeof cmd,
             "cd %s && ln -s %s build && for d in data workloads targets python; do ln -s %s/$d $d; done && "
             "TRIALS=2 bash tutorial.sh > tutorial.log 2>&1",
             dir, bdir, root);
    int rc = sh(cmd);
    snprintf(path, sizeof path, "%s/tutorial.log", dir);
    char *log = fx_slurp(path);
    cr_assert_not_null(log);
    size_t n = strlen(log);
    cr_assert_eq(rc, 0, "a tutorial block failed (the last '== tutorial block' line names it; the script is "
                        "%s/tutorial.sh):\n%s", dir, n > 6000 ? log + n - 6000 : log);
    cr_assert(strstr(log, "spmm: 2 trials"), "the campaign did not run 2 trials:\n%s", log);
    cr_assert(strstr(log, "largest relative error"), "the C program printed no check:\n%s", log);
    cr_assert(strstr(log, "C = A @ B, largest difference"), "the Python script printed no check:\n%s", log);
    free(log);
    snprintf(cmd, sizeof cmd, "test -s %s/out/libspmm_cora.so && test -s %s/spmm.svg", dir, dir);
    cr_assert_eq(sh(cmd), 0, "the tutorial's library or plot is missing in %s", dir);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sh(cmd);
}
