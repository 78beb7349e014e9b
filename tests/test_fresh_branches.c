/* Structural coverage of the evolutionary strategy's first batch (search.h
 * fresh_share, env.foreign_hash; issue 26): on the simulator, an attention
 * campaign -- whose default is modules/default.c's unfused chain, not a
 * trace of the design space -- measures fused (rolling-update) schedules
 * in round 0, and a GEMM campaign's round 0 holds packed-panel and
 * unpacked schedules.  Deterministic (the simulator), a few seconds. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../search/database/database.h"
#include "../search/strategy/search.h"
#include "../search/tune/tune.h"
#include "../traces/trace.h"
#include "fixture.h"

typedef struct round0 {
    int n, fused, packed, unpacked, default_fused;
    int key_clash;  /* records with one branch key, one fused and one not */
    char *log;
} round0;

static int packed_stages(const loom_schedule *sch)
{
    int n = 0;
    for (int q = 0; q < sch->nstages; q++)
        n += sch->stages[q].pack_iter >= 0;
    return n;
}

/* A campaign of `trials` in dir on sim:spr-2c, batch `batch`, two search
 * threads, no pre-training or re-measurement: what both helpers below run. */
static loom_tune_opts sim_opts(const char *dir, int trials, int batch)
{
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.trials = trials;
    o.batch = batch;
    o.target = "sim:spr-2c";
    o.search.threads = 2;
    o.pretrain = 0;
    o.remeasure_rounds = 0;
    return o;
}

/* A 1 + batch trial campaign (the default, then round 0) of `workload`
 * with params on sim:spr-2c, its records replayed: how many of round 0's
 * are fused / packed / unpacked, and the campaign log. */
static round0 campaign(const char *workload, const char *const *params, int np, int batch, double fresh_cold)
{
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind(workload, params, np, 1, &ds);
    char tmpl[] = "/tmp/loom-test-fresh-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    loom_tune_opts o = sim_opts(dir, 1 + batch, batch);
    o.search.population = 128;
    o.search.fresh_share_cold = fresh_cold;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    round0 z = {0};
    char path[300];
    snprintf(path, sizeof path, "%s/campaign.log", dir);
    z.log = fx_slurp(path);
    loom_db *db = NULL;
    cr_assert_eq(loom_db_open_readonly(dir, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_db_count(db), 1 + batch, "%s", z.log);
    uint64_t keys[64];
    int fk[64];
    cr_assert_leq(batch, 63);
    for (int i = 0; i < loom_db_count(db); i++) {
        const loom_record *rec = loom_db_record(db, i);
        loom_trace *t = NULL;
        loom_schedule sch;
        cr_assert_eq(loom_trace_from_json(rec->trace_json, "record", &t, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_schedule_init(&sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_trace_replay(t, &sch, NULL, &err), LOOM_OK, "%s", err.msg);
        int fused = fx_rolled_stages(&sch) > 0, packed = packed_stages(&sch) > 0;
        keys[i] = loom_search_branch_key(&sch);
        fk[i] = fused;
        for (int j = 0; j < i; j++)
            z.key_clash += keys[j] == keys[i] && fk[j] != fused;
        if (i == 0) {
            z.default_fused = fused; /* the first record of a fresh database is the default */
        } else {
            z.n++;
            z.fused += fused;
            z.packed += packed;
            z.unpacked += !packed;
        }
        loom_trace_free(t);
    }
    loom_db_close(db);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return z;
}

/* The attention default is modules/default.c's unfused chain (the log says
 * so), so round 0 is all fresh samples, one per structural branch: the
 * fused ones among them.  Before, round 0 was 16 one-decision mutants of
 * that chain and none was fused. */
Test(fresh_branches, attention_round0_measures_fused_schedules, .timeout = 120)
{
    const char *params[] = {"N=64", "D=32"};
    round0 z = campaign("workloads/attention.loom", params, 2, 8, 0); /* the default share: none */
    cr_assert(strstr(z.log, "the default schedule is modules/default.c's"), "%s", z.log);
    cr_assert_not(z.default_fused);
    cr_assert_eq(z.n, 8);
    cr_assert_geq(z.fused, 1, "no fused schedule in round 0 (%d records):\n%s", z.n, z.log);
    cr_assert_lt(z.fused, z.n, "round 0 holds no unfused branch:\n%s", z.log);
    cr_assert_eq(z.key_clash, 0, "a fused and an unfused schedule share a structural branch key");
    cr_assert(strstr(z.log, "0 local children of the best measured (0 mutants, 0 crossovers, 0 local-model steps); "
                            "8 fresh samples, one per structural branch"),
              "%s", z.log);
    free(z.log);
}

/* GEMM's default is in the space (a packed panel); with fresh_share_cold
 * 1/8, round 0 is 7 one-decision mutants and one fresh sample of another
 * branch, and holds packed and unpacked schedules. */
Test(fresh_branches, gemm_round0_holds_packed_and_unpacked, .timeout = 120)
{
    const char *params[] = {"M=64", "N=64", "K=64"};
    round0 z = campaign("workloads/gemm.loom", params, 3, 8, 0.125); /* one slot of 8 */
    cr_assert_eq(z.n, 8);
    cr_assert_geq(z.packed, 1, "no packed-panel schedule in round 0:\n%s", z.log);
    cr_assert_geq(z.unpacked, 1, "no unpacked schedule in round 0:\n%s", z.log);
    cr_assert(strstr(z.log, "7 local children of the best measured"), "%s", z.log);
    cr_assert(strstr(z.log, "1 fresh samples, one per structural branch"), "%s", z.log);
    free(z.log);
}


/* A foreign default that is still the fastest after round 0 is a parent of
 * round 1 (search.h foreign_parent).  Twelve heads of 20 x 64 on
 * sim:spr-2c: the default's unfused chain simulates at 55.8 us, round 0's
 * draws at 72.6 us and slower (at 64 x 64, since simulator model 20 counts
 * the fused register tiles' inner loops, a fused draw beats the default:
 * 188 us against 389 us, and this test's premise is gone), and every schedule of the
 * space's own draws carries attention-fusion's decision, so only a mutant
 * of the default has its instruction list.  With the option round 1 holds
 * such mutants; without it, none. */
static int default_children(int foreign_parent, double *best0, double *def)
{
    char dir[256], wl[300];
    fx_tmpdir(dir, sizeof dir, "foreign-parent");
    snprintf(wl, sizeof wl, "%s/attention_h12.loom", dir);
    FILE *f = fopen(wl, "w");
    cr_assert_not_null(f);
    fputs("param H = 12\nparam N = 20\nparam D = 64\n"
          "tensor Q(H, N, D) dense\ntensor K(H, N, D) dense\ntensor V(H, N, D) dense\n"
          "tensor O(H, N, D) dense output\n"
          "S(h, i, j) = Q(h, i, d) * K(h, j, d) * 0.125\nm(h, i) max= S(h, i, j)\n"
          "P(h, i, j) = exp(S(h, i, j) - m(h, i))\nl(h, i) += P(h, i, j)\n"
          "O(h, i, e) += P(h, i, j) * V(h, j, e) / l(h, i)\n",
          f);
    fclose(f);
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind(wl, NULL, 0, 1, &ds);
    char db_dir[300];
    snprintf(db_dir, sizeof db_dir, "%s/db", dir);
    loom_tune_opts o = sim_opts(db_dir, 17, 8);
    o.search.foreign_parent = foreign_parent;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    loom_db *db = NULL;
    cr_assert_eq(loom_db_open_readonly(db_dir, NULL, &db, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_db_count(db), 17);
    loom_trace *t0 = NULL;
    cr_assert_eq(loom_trace_from_json(loom_db_record(db, 0)->trace_json, "record", &t0, &err), LOOM_OK);
    *def = loom_db_record(db, 0)->latency_s;
    *best0 = HUGE_VAL;
    for (int i = 1; i <= 8; i++)
        if (loom_db_record(db, i)->latency_s < *best0)
            *best0 = loom_db_record(db, i)->latency_s;
    int same = 0;
    for (int i = 9; i < 17; i++) {
        loom_trace *t = NULL;
        cr_assert_eq(loom_trace_from_json(loom_db_record(db, i)->trace_json, "record", &t, &err), LOOM_OK);
        int eq = t->ninsts == t0->ninsts;
        for (int k = 0; eq && k < t->ninsts; k++)
            eq = t->insts[k].kind == t0->insts[k].kind;
        same += eq;
        loom_trace_free(t);
    }
    loom_trace_free(t0);
    loom_db_close(db);
    fx_rmtree(dir);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return same;
}

Test(fresh_branches, a_foreign_default_still_fastest_is_a_parent, .timeout = 300)
{
    double best0, def;
    int with = default_children(1, &best0, &def);
    cr_assert_lt(def, best0, "the default (%.1f us) is not the fastest after round 0 (%.1f us)", def * 1e6,
                 best0 * 1e6);
    int without = default_children(0, &best0, &def);
    printf("foreign parent: round 1 holds %d mutants of the default with the option, %d without (default %.1f us, "
           "round 0's best %.1f us)\n",
           with, without, def * 1e6, best0 * 1e6);
    cr_assert_gt(with, 0);
    cr_assert_eq(without, 0);
}
