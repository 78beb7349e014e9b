/* The space's default (issue 13; modules/module.h loom_space_default): the
 * default schedule built inside the design space, every decision at its
 * default, so a campaign's first record is a trace of the space whose
 * decisions the mutators can move.  On every workload it must be the
 * kernel of modules/default.c (the same simulated cycles, instructions,
 * loads, stores and misses on a machine model), compute the right values,
 * and be a trace that replays to the same schedule. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../modules/module.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "fixture.h"

/* exact: the same simulated counts as modules/default.c's kernel; chain:
 * an attention chain, for which attention-fusion has no default (the space
 * has none); the others may differ only by a constant trip count the space
 * has where the default reads a dimension (an extent-1 tile loop left
 * around it: within 1% of the default's cycles). */
typedef struct wl_case {
    const char *workload;
    const char *args[4];
    int exact, chain, run;
} wl_case;

#define CORA500 "data/cora500_adj.mtx"
#define FEAT500 "data/cora500_features.mtx"

static const wl_case CASES[] = {
    {"workloads/spmm.loom", {"A=" CORA500, "F=16"}, 1, 0, 0},
    {"workloads/spmm.loom", {"A=" CORA500, "F=64"}, 1, 0, 1},
    {"workloads/spmm.loom", {"A=" CORA500, "F=256"}, 1, 0, 0},
    {"workloads/spmv.loom", {"A=" CORA500}, 1, 0, 0},
    {"workloads/spmv_bias.loom", {"A=" CORA500}, 1, 0, 0},
    {"workloads/spmv_sum.loom", {"A=" CORA500, "B=" CORA500}, 1, 0, 0},
    {"workloads/sddmm.loom", {"M=" CORA500, "D=64"}, 0, 0, 1},
    {"workloads/gcn.loom", {"A=" CORA500, "X=" FEAT500}, 1, 0, 0},
    {"workloads/gcn2.loom", {"A=" CORA500, "X=" FEAT500, "F=16", "C=8"}, 1, 0, 1},
    {"workloads/gcn2_norm.loom", {"A=" CORA500, "X=" FEAT500, "F=16", "C=8"}, 1, 0, 0},
    {"workloads/sage2.loom", {"A=" CORA500, "X=" FEAT500, "F=16", "C=8"}, 1, 0, 0},
    {"workloads/spadd.loom", {"A=" CORA500, "B=" CORA500}, 1, 0, 0},
    {"workloads/spsub.loom", {"A=" CORA500, "B=" CORA500}, 1, 0, 0},
    {"workloads/spmixed.loom", {"A=" CORA500, "B=" CORA500, "D=" CORA500}, 1, 0, 0},
    {"workloads/gemm.loom", {"M=128", "N=128", "K=128"}, 1, 0, 1},
    {"workloads/attention.loom", {"N=128"}, 0, 1, 0},
    {"workloads/attention_causal.loom", {"N=128"}, 0, 1, 0},
    {"workloads/attention_decode.loom", {"M=256"}, 0, 1, 0},
    {"workloads/sparse_attention.loom", {"A=" CORA500}, 0, 1, 0},
};

static void sim(const loom_schedule *sch, loom_dataset *ds, const loom_target *t, loom_sim_result *r)
{
    loom_error err;
    loom_error_clear(&err);
    lir_func *f = NULL;
    cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
    memset(r, 0, sizeof *r);
    cr_assert_eq(loom_sim_run(f, ds, t, r, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(f);
}

/* The default design space of the simulator, shaped by target spr-2c
 * (loaded into *t); free with loom_space_free, then loom_registry_free. */
static loom_space *sim_space(loom_target *t, loom_registry **reg)
{
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_target_load("spr-2c", t, &err), LOOM_OK, "%s", err.msg);
    loom_limits lim = loom_target_limits(t);
    *reg = loom_registry_new();
    loom_space *space = NULL;
    cr_assert_eq(loom_space_new(*reg, NULL, "sim", &space, &err), LOOM_OK, "%s", err.msg);
    loom_space_set_limits(space, &lim);
    return space;
}

/* The space's default of one case against modules/default.c's. */
static void check_case(const wl_case *k, const loom_space *space, const loom_target *t, loom_schedule *def,
                       loom_schedule *sd, loom_schedule *re)
{
    loom_error err;
    loom_error_clear(&err);
    const loom_limits *lim = loom_space_limits(space);
    int n = 0;
    while (n < 4 && k->args[n])
        n++;
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind(k->workload, k->args, n, 1, &ds);
    cr_assert_eq(loom_schedule_init(def, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_default_schedule_for(def, lim, &err), LOOM_OK, "%s: %s", k->workload, err.msg);
    loom_trace *tr = loom_trace_new();
    cr_assert_eq(loom_schedule_init(sd, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    sd->recorder = loom_trace_recorder;
    sd->recorder_ctx = tr;
    loom_status st = loom_space_default(space, sd, &err);
    sd->recorder = NULL;
    if (k->chain) {
        cr_assert_eq(st, LOOM_ERR_UNSUPPORTED, "%s: an attention chain has no default in the space (got %d: %s)",
                     k->workload, st, err.msg);
        cr_assert(strstr(err.msg, "module attention-fusion") && strstr(err.msg, "no default"), "%s", err.msg);
    } else {
        cr_assert_eq(st, LOOM_OK, "%s: %s", k->workload, err.msg);
        loom_violation v;
        cr_assert_eq(loom_validate(sd, lim, &v, &err), LOOM_OK, "%s: the space's default is invalid: %s",
                     k->workload, v.msg);
        /* a trace of the space: it replays, without an rng, to the same schedule */
        cr_assert_eq(loom_schedule_init(re, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_trace_replay(tr, re, NULL, &err), LOOM_OK, "%s: %s", k->workload, err.msg);
        cr_assert_eq(loom_schedule_hash(re), loom_schedule_hash(sd), "%s: the replay differs", k->workload);
        loom_sim_result rd, rs;
        sim(def, ds, t, &rd);
        sim(sd, ds, t, &rs);
        printf("space_default %-28s %-26s %s: default %.6g s, the space's %.6g s\n", k->workload,
               k->args[0] ? k->args[0] : "", n > 1 ? k->args[n - 1] : "", rd.latency_s, rs.latency_s);
        if (k->exact) {
            /* the simulator samples loops over its event budget
             * (runtime/sim/sim.h: a few tiles, scaled; inner loops too, which
             * result.sampled does not flag): the two lowerings of one schedule
             * may sample differently, so the figures agree within the
             * sampling's error, not to the cycle (they did before the dense
             * sampling of issue 26) */
            cr_assert(fabs(rs.cycles - rd.cycles) <= 0.02 * rd.cycles, "%s: %.17g cycles, the default %.17g",
                      k->workload, rs.cycles, rd.cycles);
            cr_assert_eq(rs.flops, rd.flops, "%s", k->workload);
        } else {
            cr_assert(rs.cycles <= rd.cycles * 1.01, "%s: %.17g cycles, the default %.17g", k->workload, rs.cycles,
                      rd.cycles);
            cr_assert_eq(rs.flops, rd.flops, "%s", k->workload);
        }
        if (k->run)
            fx_run_checked(sd, ds, k->workload); /* compiled and compared with the reference */
    }
    loom_trace_free(tr);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* Every workload: the space's default is a valid trace of the space that
 * replays, with the default's kernel (exactly, or within 1% where the space
 * has a constant trip count), or the workload is an attention chain that
 * has none. */
Test(space_default, is_the_default_kernel_on_every_workload, .timeout = 600)
{
    loom_target t;
    loom_registry *reg;
    loom_space *space = sim_space(&t, &reg);
    loom_schedule *def = malloc(sizeof *def), *sd = malloc(sizeof *sd), *re = malloc(sizeof *re);
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++)
        check_case(&CASES[c], space, &t, def, sd, re);
    free(def), free(sd), free(re);
    loom_space_free(space);
    loom_registry_free(reg);
}

/* The decision hook's defaults, each against its rule (module.h
 * loom_default_decider). */
Test(space_default, the_decider_takes_the_most_probable_decision)
{
    loom_error err;
    loom_error_clear(&err);
    const char *args[] = {"A=" CORA500, "F=96"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, "C", &b, &err), LOOM_OK);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK);
    int64_t d[LOOM_MAX_INST_IO];
    loom_inst p = {0};
    p.kind = LOOM_INST_SAMPLE_CATEGORICAL;
    p.nattrs = 4;
    const double probs[4] = {1, 3, 3, 2};
    memcpy(p.fattrs, probs, sizeof probs);
    cr_assert_eq(loom_default_decider(NULL, sch, 0, p.kind, &p, d), 1);
    cr_assert_eq(d[0], 1, "the first of the most probable: %lld", (long long)d[0]);
    /* the feature loop f (extent 96): 4 tiles, max innermost 64 -> the
     * largest divisor of 96 that fits, 48, the rest (2) outermost */
    int f = loops[n - 1];
    cr_assert_eq(loom_iter_extent(sch, 0, sch->rvs[f].iter), 96);
    p = (loom_inst){0};
    p.kind = LOOM_INST_SAMPLE_PERFECT_TILE;
    p.inputs[p.ninputs++] = f;
    p.attrs[0] = 4, p.attrs[1] = 64, p.nattrs = 2;
    cr_assert_eq(loom_default_decider(NULL, sch, 0, p.kind, &p, d), 4);
    cr_assert(d[0] == 2 && d[1] == 1 && d[2] == 1 && d[3] == 48, "[%lld %lld %lld %lld]", (long long)d[0],
              (long long)d[1], (long long)d[2], (long long)d[3]);
    p.attrs[1] = 128; /* fits whole */
    loom_default_decider(NULL, sch, 0, p.kind, &p, d);
    cr_assert(d[0] == 1 && d[3] == 96);
    p = (loom_inst){0};
    p.kind = LOOM_INST_SAMPLE_LOOP_ORDER;
    p.attrs[0] = 3, p.nattrs = 1;
    loom_default_decider(NULL, sch, 0, p.kind, &p, d);
    cr_assert_eq(d[0], 3, "the prior");
    p.kind = LOOM_INST_SAMPLE_COMPUTE_LOCATION;
    loom_default_decider(NULL, sch, 0, p.kind, &p, d);
    cr_assert_eq(d[0], LOOM_AT_ROOT);
    p.kind = LOOM_INST_SAMPLE_FUSION_GROUP;
    loom_default_decider(NULL, sch, 0, p.kind, &p, d);
    cr_assert_eq(d[0], 0, "no edge fused");
    free(sch);
    loom_program_free(prog);
    loom_dataset_free(ds);
}

/* A campaign's first record (the default schedule's) is the space's
 * default: the same structural hash as loom_space_default's schedule with
 * the target's limits, so its trace is one whose every decision the
 * mutators can move.  On an attention chain (no default in the space) it is
 * modules/default.c's schedule. */
#include <unistd.h>
#include "../search/database/database.h"
#include "../search/tune/tune.h"

static uint64_t first_record_hash(loom_program *prog, loom_dataset *ds, const char *db)
{
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = db;
    o.trials = 2;
    o.batch = 1;
    o.workload_name = "space-default";
    o.target = "sim:spr-2c";
    o.remeasure_rounds = 0;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    loom_db *d = NULL;
    cr_assert_eq(loom_db_open_readonly(db, stderr, &d, &err), LOOM_OK, "%s", err.msg);
    cr_assert_geq(loom_db_count(d), 1);
    uint64_t h = loom_db_record(d, 0)->schedule_hash;
    loom_db_close(d);
    return h;
}

static uint64_t built_hash(loom_program *prog, int in_space)
{
    loom_error err;
    loom_error_clear(&err);
    loom_target t;
    loom_registry *reg;
    loom_space *space = sim_space(&t, &reg);
    loom_limits lim = *loom_space_limits(space);
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    if (in_space)
        cr_assert_eq(loom_space_default(space, sch, &err), LOOM_OK, "%s", err.msg);
    else
        cr_assert_eq(loom_default_schedule_for(sch, &lim, &err), LOOM_OK, "%s", err.msg);
    uint64_t h = loom_schedule_hash(sch);
    free(sch);
    loom_space_free(space);
    loom_registry_free(reg);
    return h;
}

Test(space_default, a_campaign_starts_from_the_space_default, .timeout = 300)
{
    char dir[] = "/tmp/loom_space_default_XXXXXX", db[300];
    cr_assert_not_null(mkdtemp(dir));
    const char *args[] = {"A=" CORA500, "F=64"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    snprintf(db, sizeof db, "%s/spmm", dir);
    uint64_t h = first_record_hash(prog, ds, db);
    cr_assert_eq(h, built_hash(prog, 1), "the first record is not the space's default");
    cr_assert_neq(h, built_hash(prog, 0), "the space's default has modules/default.c's hash");
    loom_program_free(prog);
    loom_dataset_free(ds);

    const char *a2[] = {"N=64"};
    prog = fx_bind("workloads/attention.loom", a2, 1, 1, &ds);
    snprintf(db, sizeof db, "%s/attention", dir);
    cr_assert_eq(first_record_hash(prog, ds, db), built_hash(prog, 0), "attention: not modules/default.c's");
    char cmd[800];
    snprintf(cmd, sizeof cmd,
             "grep -q \"modules/default.c's, not the space's default (module attention-fusion, block O: no default\" "
             "%s/campaign.log",
             db);
    cr_assert_eq(system(cmd), 0, "the campaign log does not say why the default is not the space's");
    loom_program_free(prog);
    loom_dataset_free(ds);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
