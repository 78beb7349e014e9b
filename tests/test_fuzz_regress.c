/* Fuzzing regressions (docs/fuzzing.md): every input in tests/fuzz/regress/
 * (named <format>-<what>, each one a crash, leak or over-limit allocation a
 * fuzzer found, or a hostile input of issue 14) and every seed of
 * tests/fuzz/corpus/<format>/ goes through the same harness function the
 * fuzzer runs (tests/fuzz/fuzz_<format>.c), here built with gcc.  The
 * harnesses abort on a broken invariant; the process runs with its address
 * space capped at 512 MiB (not under AddressSanitizer, whose shadow memory
 * needs terabytes of address space), so a reader that trusts a hostile size
 * fails its allocation instead of passing silently. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "fuzz/fuzz_common.h"

typedef int (*fuzz_fn)(const uint8_t *, size_t);

static const struct {
    const char *format;
    fuzz_fn fn;
} HARNESSES[] = {
    {"loom", loom_fuzz_loom}, {"trace", loom_fuzz_trace}, {"mtx", loom_fuzz_mtx},
    {"db", loom_fuzz_db},     {"target", loom_fuzz_target}, {"plan", loom_fuzz_plan},
    {"model", loom_fuzz_model},
};
#define NHARNESSES (int)(sizeof HARNESSES / sizeof HARNESSES[0])

static int noop(const uint8_t *data, size_t n)
{
    (void)data;
    (void)n;
    return 0;
}

static void cap_memory(void)
{
#if !defined(__SANITIZE_ADDRESS__)
    struct rlimit rl = {(rlim_t)512 << 20, (rlim_t)512 << 20};
    cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
#endif
}

/* Run fn on the file's bytes; returns 1 (the file ran). */
static int replay_file(const char *path, fuzz_fn fn)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    cr_assert(feof(f), "%s: larger than %zu bytes", path, sizeof buf);
    fclose(f);
    cr_assert_eq(fn(buf, n), 0, "%s", path);
    return 1;
}

/* Replay every regular file of dir whose name starts with prefix (NULL:
 * all) through fn; returns the count. */
static int replay_dir(const char *dir, const char *prefix, fuzz_fn fn)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        count += replay_file(path, fn);
    }
    closedir(d);
    return count;
}

Test(fuzz_regress, every_saved_input_runs_clean)
{
    cap_memory();
    int total = 0;
    for (int h = 0; h < NHARNESSES; h++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%s-", HARNESSES[h].format);
        total += replay_dir("tests/fuzz/regress", prefix, HARNESSES[h].fn);
    }
    /* every file is named after a harness: none is silently skipped */
    cr_assert_eq(replay_dir("tests/fuzz/regress", NULL, noop), total,
                 "a file in tests/fuzz/regress/ does not start with <format>-");
    cr_assert_gt(total, 0);
}

Test(fuzz_regress, every_seed_runs_clean)
{
    cap_memory();
    for (int h = 0; h < NHARNESSES; h++) {
        char dir[128];
        snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", HARNESSES[h].format);
        cr_assert_gt(replay_dir(dir, NULL, HARNESSES[h].fn), 0, "no seeds in %s", dir);
    }
}
