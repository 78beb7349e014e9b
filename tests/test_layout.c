/* The source tree's layout rules (issue 15), checked on the build the suite
 * runs against: no file-level call cycle inside a folder
 * (scripts/check-cycles.sh), every symbol libloom.a exports prefixed loom_
 * (scripts/check-symbols.sh), no function outside cli/ longer than 150
 * lines (scripts/check-function-length.sh).  Each checker is also run on a
 * small planted violation, so that a checker that finds nothing cannot pass
 * for a tree without faults.  Run from the source root (make test does). */
#include <criterion/criterion.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The build directory: the one holding LOOM_BIN (default build/). */
static void build_dir(char *out, size_t n)
{
    const char *bin = getenv("LOOM_BIN");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", bin ? bin : "build/loom");
    snprintf(out, n, "%s", dirname(tmp));
}

/* Run cmd (stdout and stderr into out); its exit status, -1 if it did not exit. */
static int run(const char *cmd, char *out, size_t n)
{
    char full[8192];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert_not_null(p, "cannot run %s", cmd);
    size_t got = fread(out, 1, n - 1, p);
    out[got] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Compile dir/name.c (text) to dir/name.o. */
static void compile(const char *dir, const char *name, const char *text)
{
    char src[4096], cmd[8192], out[4096];
    snprintf(src, sizeof src, "%s/%s.c", dir, name);
    write_file(src, text);
    snprintf(cmd, sizeof cmd, "cc -std=c11 -c %s -o %s/%s.o", src, dir, name);
    cr_assert_eq(run(cmd, out, sizeof out), 0, "cc failed: %s", out);
}

static char out[1 << 16];

Test(layout, library_has_no_file_call_cycle_within_a_folder, .timeout = 120)
{
    char b[4096], cmd[8192];
    build_dir(b, sizeof b);
    snprintf(cmd, sizeof cmd, "scripts/check-cycles.sh %s/obj", b);
    cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
    /* it looked at the lowering's objects */
    snprintf(cmd, sizeof cmd, "%s/obj/runtime/lower/lower_loops.o", b);
    cr_assert_eq(access(cmd, R_OK), 0, "no object %s: the check saw no lowering", cmd);
}

Test(layout, cycle_checker_finds_a_planted_cycle_and_only_it, .timeout = 120)
{
    char tmp[] = "/tmp/loom-layout-XXXXXX", dir[4096], cmd[8192];
    cr_assert_not_null(mkdtemp(tmp));
    snprintf(dir, sizeof dir, "%s/obj/fold", tmp);
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    cr_assert_eq(system(cmd), 0);
    /* a -> b -> a is a cycle; c -> a is not part of it; d is alone */
    compile(dir, "a", "int b_f(int);\nint a_f(int x) { return x ? b_f(x - 1) : 0; }\n");
    compile(dir, "b", "int a_f(int);\nint b_f(int x) { return a_f(x); }\n");
    compile(dir, "c", "int a_f(int);\nint c_f(void) { return a_f(3); }\n");
    compile(dir, "d", "int d_f(void) { return 4; }\n");
    snprintf(cmd, sizeof cmd, "scripts/check-cycles.sh %s/obj", tmp);
    cr_assert_eq(run(cmd, out, sizeof out), 1, "a planted cycle passed: %s", out);
    cr_assert_not_null(strstr(out, "fold: a b\n"), "the cycle is not named as 'fold: a b': %s", out);
    cr_assert_not_null(strstr(out, "a -> b (b_f)"), "%s", out);
    cr_assert_not_null(strstr(out, "b -> a (a_f)"), "%s", out);
    cr_assert_null(strstr(out, "c -> a"), "c is not in the cycle: %s", out);
    /* break it (b no longer calls a): the same folder passes */
    compile(dir, "b", "int b_f(int x) { return x + 1; }\n");
    cr_assert_eq(run(cmd, out, sizeof out), 0, "no cycle is left, yet: %s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    cr_assert_eq(system(cmd), 0);
}

/* The role sub-folders of one folder (dsl/front, dsl/ir, ...) are layered
 * too: a sub-folder that calls one calling it back is a cycle, named by the
 * folder ("fold/ *: x y" without the space), though no file-level cycle exists. */
Test(layout, cycle_checker_finds_a_planted_subfolder_cycle, .timeout = 120)
{
    char tmp[] = "/tmp/loom-layout-XXXXXX", dx[1024], dy[1024], cmd[4096];
    cr_assert_not_null(mkdtemp(tmp));
    snprintf(dx, sizeof dx, "%s/obj/fold/x", tmp);
    snprintf(dy, sizeof dy, "%s/obj/fold/y", tmp);
    snprintf(cmd, sizeof cmd, "mkdir -p %s %s", dx, dy);
    cr_assert_eq(system(cmd), 0);
    /* x/a -> y/b, y/c -> x/d: no file calls one calling it back */
    compile(dx, "a", "int b_f(void);\nint a_f(void) { return b_f(); }\n");
    compile(dx, "d", "int d_f(void) { return 1; }\n");
    compile(dy, "b", "int b_f(void) { return 2; }\n");
    compile(dy, "c", "int d_f(void);\nint c_f(void) { return d_f(); }\n");
    snprintf(cmd, sizeof cmd, "scripts/check-cycles.sh %s/obj", tmp);
    cr_assert_eq(run(cmd, out, sizeof out), 1, "a planted sub-folder cycle passed: %s", out);
    cr_assert_not_null(strstr(out, "fold/*: x y\n"), "the cycle is not named as 'fold/*: x y': %s", out);
    cr_assert_not_null(strstr(out, "x -> y (b_f)"), "%s", out);
    cr_assert_not_null(strstr(out, "y -> x (d_f)"), "%s", out);
    /* y/c no longer calls x: layered, passes */
    compile(dy, "c", "int c_f(void) { return 3; }\n");
    cr_assert_eq(run(cmd, out, sizeof out), 0, "no cycle is left, yet: %s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    cr_assert_eq(system(cmd), 0);
}

Test(layout, exported_symbols_are_prefixed, .timeout = 120)
{
    char b[4096], cmd[8192];
    build_dir(b, sizeof b);
    snprintf(cmd, sizeof cmd, "scripts/check-symbols.sh %s/libloom.a", b);
    cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
}

Test(layout, symbol_checker_finds_an_unprefixed_symbol, .timeout = 120)
{
    char tmp[] = "/tmp/loom-layout-XXXXXX", cmd[8192];
    cr_assert_not_null(mkdtemp(tmp));
    compile(tmp, "good", "int loom_good(void) { return 1; }\nint loom__private(void) { return 2; }\n"
                         "static int helper(void) { return 3; }\nint loom_uses(void) { return helper(); }\n");
    compile(tmp, "bad", "int sim_thing(void) { return 4; }\nint loom_fine(void) { return 5; }\n");
    snprintf(cmd, sizeof cmd, "ar rcs %s/good.a %s/good.o && ar rcs %s/bad.a %s/good.o %s/bad.o", tmp, tmp, tmp, tmp,
             tmp);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "scripts/check-symbols.sh %s/good.a", tmp);
    cr_assert_eq(run(cmd, out, sizeof out), 0, "only prefixed (and static) symbols, yet: %s", out);
    snprintf(cmd, sizeof cmd, "scripts/check-symbols.sh %s/bad.a", tmp);
    cr_assert_eq(run(cmd, out, sizeof out), 1, "an unprefixed symbol passed: %s", out);
    cr_assert_not_null(strstr(out, "sim_thing (bad.o)"), "%s", out);
    cr_assert_null(strstr(out, "loom_fine"), "a prefixed symbol was reported: %s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    cr_assert_eq(system(cmd), 0);
}

Test(layout, no_function_outside_cli_over_150_lines, .timeout = 120)
{
    cr_assert_eq(run("scripts/check-function-length.sh .", out, sizeof out), 0, "%s", out);
}

Test(layout, length_checker_counts_brace_to_brace, .timeout = 120)
{
    char tmp[] = "/tmp/loom-layout-XXXXXX", path[4096], cmd[8192];
    cr_assert_not_null(mkdtemp(tmp));
    /* f: braces on lines 2 and 2 + 11 = 13 (12 statements, 13 lines); g: 10 */
    char src[4096] = "static int f(int x)\n{\n";
    for (int k = 0; k < 11; k++)
        strcat(src, "    x += 1;\n");
    strcat(src, "}\n\nint g(void)\n{\n");
    for (int k = 0; k < 8; k++)
        strcat(src, "    ;\n");
    strcat(src, "}\n");
    snprintf(path, sizeof path, "%s/x.c", tmp);
    write_file(path, src);
    snprintf(cmd, sizeof cmd, "scripts/check-function-length.sh %s 12", tmp);
    cr_assert_eq(run(cmd, out, sizeof out), 1, "a 13-line function passed a 12-line limit: %s", out);
    cr_assert_not_null(strstr(out, "x.c:2 f 13"), "%s", out);
    cr_assert_null(strstr(out, " g "), "g (10 lines) was reported: %s", out);
    snprintf(cmd, sizeof cmd, "scripts/check-function-length.sh %s 13", tmp);
    cr_assert_eq(run(cmd, out, sizeof out), 0, "13 lines is within a 13-line limit: %s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    cr_assert_eq(system(cmd), 0);
}
