/* The strategy table (search.h loom_search_strategy, issue 15): a strategy
 * appended to the table runs a campaign end to end through the same paths
 * as the built-in ones, and an unknown name or index is refused with a
 * message that lists the known strategies. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../search/database/database.h"
#include "../search/strategy/strategy.h"
#include "../search/tune/tune.h"
#include "fixture.h"

/* A strategy written outside search/: each generate call takes the first
 * new fresh samples in draw order; its state counts the calls. */
typedef struct first_state {
    int calls;
    int *freed; /* set to 1 by free */
} first_state;

static int freed_flag;

static loom_status first_init(loom_search *s, void **state, loom_error *err)
{
    (void)s;
    first_state *f = calloc(1, sizeof *f);
    if (!f)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    f->freed = &freed_flag;
    *state = f;
    return LOOM_OK;
}

static loom_status first_generate(loom_search *s, void *state, long call, int n, loom_candidate *out, int *nout,
                                  loom_error *err)
{
    first_state *f = state;
    f->calls++;
    int want = 4 * n, m = 0;
    loom_candidate *buf = calloc((size_t)want, sizeof *buf);
    if (!buf)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int round = 0; round < 8 && m < n; round++) {
        int got = loom_search_sample(s, call, 2 + 100 * round, want, buf, err);
        if (got < 0) {
            free(buf);
            *nout = m;
            return LOOM_ERR_RUN;
        }
        for (int i = 0; i < got; i++) {
            if (m < n && loom_search_take(s, &buf[i]))
                out[m++] = buf[i];
            else
                loom_candidate_free(&buf[i]);
        }
    }
    free(buf);
    *nout = m;
    return LOOM_OK;
}

static void first_free(void *state)
{
    first_state *f = state;
    *f->freed = 1;
    free(f);
}

static const loom_search_strategy first_fresh = {
    .name = "first-fresh",
    .needs_model = 0,
    .init = first_init,
    .generate = first_generate,
    .free = first_free,
};

Test(strategy, table_holds_the_builtins_in_kind_order)
{
    cr_assert_geq(loom_strategy_count(), 3);
    cr_assert_str_eq(loom_strategy_name(LOOM_STRATEGY_EVOLUTIONARY), "evolutionary");
    cr_assert_str_eq(loom_strategy_name(LOOM_STRATEGY_METASCHEDULE), "metaschedule");
    cr_assert_str_eq(loom_strategy_name(LOOM_STRATEGY_RANDOM), "random");
    cr_assert_eq(loom_strategy_find("random"), LOOM_STRATEGY_RANDOM);
    cr_assert_eq(loom_strategy_find("annealing"), -1);
    cr_assert_null(loom_strategy_name((loom_strategy_kind)loom_strategy_count()));
    cr_assert_null(loom_strategy_name((loom_strategy_kind)-1));
    char known[256];
    loom_strategy_list(known, sizeof known);
    cr_assert_str_eq(known, "evolutionary, metaschedule, random");
    char small[8];
    loom_strategy_list(small, sizeof small);
    cr_assert_eq(strlen(small), 7, "truncated to the buffer");
}

Test(strategy, an_appended_strategy_runs_a_campaign, .timeout = 300)
{
    loom_error err;
    loom_error_clear(&err);
    int n0 = loom_strategy_count(), k = -1;
    cr_assert_eq(loom_strategy_register(&first_fresh, &k, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(k, n0, "appended after the built-in ones");
    cr_assert_eq(loom_strategy_count(), n0 + 1);
    cr_assert_eq(loom_strategy_find("first-fresh"), k);
    char known[256];
    loom_strategy_list(known, sizeof known);
    cr_assert_str_eq(known, "evolutionary, metaschedule, random, first-fresh");
    /* a second strategy of the same name is refused */
    cr_assert_eq(loom_strategy_register(&first_fresh, NULL, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "first-fresh"), "%s", err.msg);

    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    char tmpl[] = "/tmp/loom-test-strategy-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    char db[300];
    snprintf(db, sizeof db, "%s/db", dir);
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = db;
    o.trials = 20;
    o.remeasure_rounds = 0; /* the records are the trials only */
    o.batch = 5;
    o.target = "sim";
    o.workload_name = "spmm";
    o.search.strategy = (loom_strategy_kind)k;
    o.search.threads = 2;
    o.no_default_trial = 1; /* every record comes from the strategy */
    loom_tune_result r;
    freed_flag = 0;
    cr_assert_eq(loom_tune(prog, ds, &o, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(r.trials, 20, "%d trials", r.trials);
    cr_assert_eq(r.measured, 20);
    cr_assert_eq(freed_flag, 1, "the strategy's state was freed with the search");
    /* the records are distinct schedules, and the campaign log names the strategy */
    loom_db *d = NULL;
    cr_assert_eq(loom_db_open(db, NULL, &d, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_db_count(d), 20);
    for (int i = 0; i < loom_db_count(d); i++)
        for (int j = 0; j < i; j++)
            cr_assert_neq(loom_db_record(d, i)->schedule_hash, loom_db_record(d, j)->schedule_hash);
    loom_db_close(d);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "grep -q 'strategy first-fresh' %s/campaign.log", db);
    cr_assert_eq(system(cmd), 0, "campaign.log names the strategy");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

static loom_status never_sample(void *ctx, loom_schedule *sch, loom_error *err)
{
    (void)ctx, (void)sch;
    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "not called");
}

static int never_measured(void *ctx, uint64_t h)
{
    (void)ctx, (void)h;
    return 0;
}

Test(strategy, an_index_outside_the_table_is_refused)
{
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_search_opts o = loom_search_defaults();
    o.strategy = (loom_strategy_kind)loom_strategy_count();
    loom_search_env env = {.sample = never_sample, .is_measured = never_measured};
    loom_search *s = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_search_new(&o, prog, &env, &s, &err), LOOM_ERR_INVALID);
    cr_assert_null(s);
    cr_assert(strstr(err.msg, "evolutionary, metaschedule, random"), "%s", err.msg);
    /* random needs no cost model; the population strategies do */
    o.strategy = LOOM_STRATEGY_RANDOM;
    cr_assert_eq(loom_search_new(&o, prog, &env, &s, &err), LOOM_OK, "%s", err.msg);
    loom_search_free(s);
    o.strategy = LOOM_STRATEGY_EVOLUTIONARY;
    cr_assert_eq(loom_search_new(&o, prog, &env, &s, &err), LOOM_ERR_INVALID);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

Test(strategy, the_cli_lists_the_known_names)
{
    const char *bin = getenv("LOOM_BIN") ? getenv("LOOM_BIN") : "build/loom";
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "%s tune workloads/spmm.loom --data A=data/cora500_adj.mtx --trials 4 --db /tmp/loom-never-made "
             "--strategy annealing 2>&1 | grep -q \"unknown strategy 'annealing' (evolutionary, metaschedule, "
             "random)\"",
             bin);
    cr_assert_eq(system(cmd), 0, "the refusal lists the known strategies");
    snprintf(cmd, sizeof cmd,
             "%s tune workloads/spmm.loom --data A=data/cora500_adj.mtx --trials 4 --db /tmp/loom-never-made "
             "--strategy annealing >/dev/null 2>&1",
             bin);
    int rc = system(cmd);
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "exit 2 (bad input), got %d", rc);
}

static loom_status zero_score(void *ctx, const loom_schedule *const *schs, int n, double *scores, loom_error *err)
{
    (void)ctx, (void)schs, (void)err;
    for (int i = 0; i < n; i++)
        scores[i] = 0;
    return LOOM_OK;
}

/* Each strategy's options are rows (search.h loom_search_option): their
 * defaults are loom_search_defaults (MetaSchedule's, and loom's evolutionary
 * additions, as before the rows), loom_search_new checks each row's range
 * for the strategy that reads it, and `loom tune --help` and
 * docs/tuning.md list every option loom tune takes as a flag. */
Test(strategy, options_are_rows_with_defaults_ranges_and_docs)
{
    loom_search_opts o = loom_search_defaults();
    cr_assert_eq(o.population, 512);
    cr_assert_eq(o.generations, 4);
    cr_assert_float_eq(o.eps_greedy, 0.05, 1e-12);
    cr_assert_float_eq(o.mutate_prob, 0.85, 1e-12);
    cr_assert_float_eq(o.t_decay, 0.5, 1e-12);
    cr_assert_float_eq(o.local_share, 0.875, 1e-12);
    cr_assert_eq(o.local_pool, 8);
    cr_assert_eq(o.mutate_by_instruction, 1);
    char *doc = fx_slurp("docs/tuning.md");
    const char *bin = getenv("LOOM_BIN") ? getenv("LOOM_BIN") : "build/loom";
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s tune --help", bin);
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    static char help[1 << 16];
    size_t hl = fread(help, 1, sizeof help - 1, p);
    help[hl] = 0;
    cr_assert_eq(pclose(p), 0);
    int nrows = 0;
    for (int k = 0; k < loom_strategy_count(); k++) {
        const loom_search_strategy *st = loom_strategy_get(k);
        char head[64];
        snprintf(head, sizeof head, "  %s: ", st->name);
        cr_assert(st->doc && strstr(help, head), "loom tune --help does not describe strategy %s", st->name);
        for (int l = 0; st->options && st->options[l]; l++)
            for (const loom_search_option *R = st->options[l]; R->name; R++, nrows++) {
                cr_assert(R->doc && R->doc[0] && R->field, "row %s", R->name);
                cr_assert(loom_search_option_ok(R, R->def), "%s's default is out of its range", R->name);
                cr_assert_float_eq(loom_search_option_get(&o, R), R->def, 1e-12, "%s", R->field);
                char want[64];
                snprintf(want, sizeof want, R->flag ? "--%s " : "%s ", R->flag ? R->name : R->field);
                cr_assert(strstr(help, want), "loom tune --help does not list %s", want);
                snprintf(want, sizeof want, "--%s", R->name);
                cr_assert(!R->flag || strstr(doc, want), "docs/tuning.md does not name %s", want);
                if (!R->flag)
                    continue;
                /* and loom tune takes it: with 24 rows a 25th was once dropped without a word
                   (cli/cmd_tune.c MAX_STRATEGY_FLAGS), its flag "unknown" */
                snprintf(cmd, sizeof cmd, "%s tune workloads/spmm.loom --trials 4 --%s not-a-value --db "
                         "/tmp/loom-never-made 2>&1", bin, R->name);
                FILE *q = popen(cmd, "r");
                cr_assert(q);
                char out[4096];
                size_t ol = fread(out, 1, sizeof out - 1, q);
                out[ol] = 0;
                pclose(q);
                cr_assert(strstr(out, want) && !strstr(out, "unknown option"), "loom tune refuses %s: %s", want, out);
            }
    }
    cr_assert_geq(nrows, 19);
    free(doc);
    /* a range from a row, checked for the strategy that reads it */
    const char *args[] = {"A=data/cora500_adj.mtx", "F=16"};
    loom_dataset *ds = NULL;
    loom_program *prog = fx_bind("workloads/spmm.loom", args, 2, 1, &ds);
    loom_search_env env = {.sample = never_sample, .is_measured = never_measured, .score = zero_score};
    loom_search *s = NULL;
    loom_error err;
    o.local_pool = 65;
    o.strategy = LOOM_STRATEGY_RANDOM; /* random reads no local_pool */
    cr_assert_eq(loom_search_new(&o, prog, &env, &s, &err), LOOM_OK, "%s", err.msg);
    loom_search_free(s);
    o.strategy = LOOM_STRATEGY_EVOLUTIONARY;
    cr_assert_eq(loom_search_new(&o, prog, &env, &s, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "local_pool") && strstr(err.msg, "1..64"), "%s", err.msg);
    o.strategy = LOOM_STRATEGY_METASCHEDULE; /* metaschedule does not either */
    cr_assert_eq(loom_search_new(&o, prog, &env, &s, &err), LOOM_OK, "%s", err.msg);
    loom_search_free(s);
    loom_dataset_free(ds);
    loom_program_free(prog);
}
