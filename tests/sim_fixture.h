/* Shared by the simulator's tests (tests/test_sim.c, tests/test_sim_kernels.c):
 * a hand-computable target, a scratch directory for workload files, and
 * the Sapphire Rapids model of targets/. */
#ifndef LOOM_TESTS_SIM_FIXTURE_H
#define LOOM_TESTS_SIM_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "../runtime/target/target.h"
#include "fixture.h"

/* A one-core target whose model parameters make the arithmetic easy:
 * 1 GHz, one FMA pipe, one load and one store port, issue width 4, 512-bit
 * vectors (16 lanes), one private L1 level. */
static inline void tiny_target(loom_target *t, int cores, long long l1_bytes, int assoc)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"name\": \"tiny\", \"cores\": %d, \"vector_bits\": 512, \"fma_units\": 1, \"ghz\": 1.0,"
             " \"issue_width\": 4, \"load_ports\": 1, \"store_ports\": 1,"
             " \"caches\": [{\"name\": \"L1d\", \"size\": %lld, \"assoc\": %d, \"line\": 64, \"latency\": 4,"
             " \"shared\": false}],"
             " \"memory\": {\"bandwidth\": 1.28e11, \"core_bandwidth\": 6.4e10, \"latency_ns\": 100},"
             " \"model\": {\"mlp\": 2, \"overlap\": 0.5, \"gather_cycles_per_lane\": 0, \"masked_lane_cycles\": 0,"
             " \"branch_miss_cycles\": 10, \"parallel_overhead_ns\": 1000, \"autovectorize\": true}}",
             cores, l1_bytes, assoc);
    loom_error err;
    cr_assert_eq(loom_target_parse(json, "<tiny>", t, &err), LOOM_OK, "%s", err.msg);
}

static char tmpdir[256];

/* the test process removes its directory when it exits */
static void rm_tmpdir(void)
{
    if (tmpdir[0])
        fx_rmtree(tmpdir);
}

static inline const char *write_tmp(const char *name, const char *text)
{
    static char path[8][512];
    static int k;
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/loom-test-sim-XXXXXX");
        cr_assert_not_null(mkdtemp(tmpdir));
        atexit(rm_tmpdir);
    }
    char *p = path[k++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "w");
    cr_assert_not_null(fp);
    fputs(text, fp);
    fclose(fp);
    return p;
}

static inline loom_target spr(void)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_load("targets/spr-2c.json", &t, &err), LOOM_OK, "%s", err.msg);
    return t;
}

#endif
