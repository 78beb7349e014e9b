/* The Python package (python/loom, issue 17) under Debian's /usr/bin/python3
 * (where python3-numpy, -scipy and -torch are installed; the PATH's python3
 * may be another): python/tests/test_loom.py tunes SpMM on Cora, ships the
 * kernel, calls it from SciPy/NumPy and PyTorch and checks the errors;
 * a script that calls loom.tune at its top level, without a main guard,
 * gets its result (issue 27).  Skips when that Python or numpy is absent. */
#include <criterion/criterion.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PY "/usr/bin/python3"

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

Test(python, package_tunes_ships_and_calls_kernels, .timeout = 900)
{
    if (access(PY, X_OK) != 0)
        cr_skip_test("%s is not installed", PY);
    if (sh(PY " -c 'import numpy' > /dev/null 2>&1") != 0)
        cr_skip_test("numpy is not installed for %s (apt-get install python3-numpy)", PY);
    const char *bin = getenv("LOOM_BIN");
    char bdir[4096], cmd[8192], log[] = "/tmp/loom-python-XXXXXX";
    snprintf(bdir, sizeof bdir, "%s", bin ? bin : "build/loom");
    char *b = dirname(bdir);
    int fd = mkstemp(log);
    cr_assert_geq(fd, 0);
    close(fd);
    snprintf(cmd, sizeof cmd,
             "LOOM_LIBRARY=%s/libloom.so PYTHONPATH=python " PY " -m unittest discover -s python/tests -v > %s 2>&1",
             b, log);
    int rc = sh(cmd);
    FILE *f = fopen(log, "r");
    static char text[1 << 16];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f)
        fclose(f);
    unlink(log);
    cr_assert_eq(rc, 0, "the Python tests failed:\n%s", text);
    cr_assert(strstr(text, "OK"), "%s", text);
    if (strstr(text, "skipped"))
        cr_log_info("python: some Python tests skipped (SciPy or PyTorch absent):\n%s", text);
}
