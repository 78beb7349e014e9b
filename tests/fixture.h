/* Shared test helpers: parse a workload and bind it to data. */
#ifndef LOOM_TEST_FIXTURE_H
#define LOOM_TEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "../dsl/ir/limits.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/data/dataset.h"

/* Parse `workload` and bind it: args[0..n) are "NAME=FILE" (a tensor read
 * from a Matrix Market file: the value contains '/' or ends in ".mtx") or
 * "NAME=INT" (a size); NULL entries are skipped.  `seed` seeds the dense
 * generator.  Fails the current Criterion test with the loader's message
 * on any error.  The caller frees *ds (loom_dataset_free) and the returned
 * program (loom_program_free). */
loom_program *fx_bind(const char *workload, const char *const *args, int n, uint64_t seed, loom_dataset **ds);

/* A program (from the file `path`, or when path is NULL from the source
 * `text`) bound to data: data[] and params[] are NULL-terminated lists of
 * "TENSOR=FILE.mtx" and "SIZE=INT"; `seed` seeds the dense generator.
 * Fails the current test on any error.  Free with fx_unload. */
typedef struct fx_loaded {
    loom_program *prog;
    loom_dataset *ds;
} fx_loaded;

fx_loaded fx_load(const char *path, const char *text, const char *const *data, const char *const *params,
                  uint64_t seed);
void fx_unload(fx_loaded *L);

/* Number of rolled stages (RollingUpdate) of a schedule: > 0 when fused. */
int fx_rolled_stages(const loom_schedule *sch);

/* Compile and run sch on ds briefly (2 ms of runs, 60 s limit) and fail the
 * current test, naming `what`, unless it runs and matches the reference. */
void fx_run_checked(const loom_schedule *sch, loom_dataset *ds, const char *what);
/* The same, the kernel built with cflags (NULL: loom's defaults for the host). */
void fx_run_checked_cflags(const loom_schedule *sch, loom_dataset *ds, const char *cflags, const char *what);

/* The whole file at path, NUL-terminated (malloc'd; the caller frees it);
 * fails the current test when it cannot be read. */
char *fx_slurp(const char *path);

/* This CPU target's limits (loom_target_cpu_limits, read at each call) in
 * a static buffer: what a test passes to loom_validate when it checks a
 * schedule for the machine it runs on (the validator has no default). */
const loom_limits *fx_cpu_limits(void);

/* A fresh directory /tmp/loom-TAG-XXXXXX (mkdtemp) written into dir (n
 * bytes); fails the current test when it cannot be made.  For a suite's
 * .init; fx_rmtree removes it in .fini. */
void fx_tmpdir(char *dir, size_t n, const char *tag);

/* rm -rf dir (a directory fx_tmpdir made); a note on stderr when that
 * fails, never a test failure. */
void fx_rmtree(const char *dir);

#endif
