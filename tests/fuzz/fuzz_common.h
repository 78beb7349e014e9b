/* loom fuzz harnesses: shared helpers (libFuzzer, see docs/fuzzing.md).
 *
 * Each tests/fuzz/fuzz_<format>.c defines LLVMFuzzerTestOneInput for one
 * input format; `make fuzz FUZZ_SECONDS=N` builds them with clang
 * -fsanitize=fuzzer,address,undefined against the library built with the
 * same sanitizers (build-fuzz/) and runs each for N seconds on its seed
 * corpus tests/fuzz/corpus/<format>/.  The same functions are replayed on
 * every saved crash input by tests/test_fuzz_regress.c (built with gcc, no
 * libFuzzer), so a harness must not depend on libFuzzer itself. */
#ifndef LOOM_FUZZ_COMMON_H
#define LOOM_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../dsl/ir/error.h"

/* data[0..n) as a malloc'd NUL-terminated string (NULL when out of memory). */
static inline char *fuzz_text(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    if (n)
        memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* Inputs are at most a few KB, so running out of memory on one means a
 * reader trusted a size it was told (the fuzzer's -malloc_limit_mb catches
 * the allocation itself; the regression test runs under an address-space
 * cap, where the allocation fails instead): abort on LOOM_ERR_NOMEM. */
static inline loom_status fuzz_check(loom_status st)
{
    if (st == LOOM_ERR_NOMEM)
        abort();
    return st;
}

/* The entry points, one per harness (the regression test calls them). */
int loom_fuzz_loom(const uint8_t *data, size_t n);
int loom_fuzz_trace(const uint8_t *data, size_t n);
int loom_fuzz_mtx(const uint8_t *data, size_t n);
int loom_fuzz_db(const uint8_t *data, size_t n);
int loom_fuzz_target(const uint8_t *data, size_t n);
int loom_fuzz_plan(const uint8_t *data, size_t n);
int loom_fuzz_model(const uint8_t *data, size_t n);

#ifdef LOOM_FUZZ_MAIN
/* Built as a libFuzzer target: the entry point of this file. */
#define LOOM_FUZZ_ENTRY(fn)                                                              \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);                         \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) { return fn(data, n); }
#else
#define LOOM_FUZZ_ENTRY(fn)
#endif

#endif
