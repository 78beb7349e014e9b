/* loom: `loom db DIR --fidelity` -- how well the simulator ranks and
 * prices a CPU campaign's own schedules (issue 29). */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "../costmodel/model.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/measure.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "../search/database/database.h"
#include "cli.h"

typedef struct fid_row {
    uint64_t schedule;
    double measured, simulated;
    int line;
    int unreliable; /* its measurement flagged itself unreliable (runtime/measure: stalled runs) */
    double core_line; /* the machine's state when measured (database.h core_line_ns; 0: unknown) */
} fid_row;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Simulate record r's trace on t; INFINITY when it does not replay or lower. */
static double simulate(const loom_record *r, const loom_program *prog, const loom_dataset *ds, const loom_target *t)
{
    loom_trace *tr = NULL;
    loom_error e;
    loom_error_clear(&e);
    double lat = INFINITY;
    loom_schedule *sch = malloc(sizeof *sch);
    lir_func *f = NULL;
    loom_sim_result res;
    if (sch && !loom_trace_from_json(r->trace_json, NULL, &tr, &e) && !loom_schedule_init(sch, prog, NULL, &e)) {
        if (!loom_trace_replay(tr, sch, NULL, &e) && !loom_lower(sch, &f, &e) && !loom_sim_run(f, ds, t, &res, &e))
            lat = res.latency_s;
        loom_lir_func_free(f);
    }
    free(sch);
    loom_trace_free(tr);
    return lat;
}

/* The trial records of prog on ds measured on a CPU target, one per
 * schedule (the first), with their simulated latencies: *rows (malloc'd). */
static int collect(loom_db *db, const loom_program *prog, const loom_dataset *ds, const loom_target *t, fid_row **rows)
{
    char dfp[17];
    snprintf(dfp, sizeof dfp, "%016llx", (unsigned long long)loom_data_fingerprint(ds));
    uint64_t wh = loom_program_hash(prog);
    int n = loom_db_count(db), m = 0;
    *rows = malloc(sizeof **rows * (size_t)(n ? n : 1));
    if (!*rows)
        return -1;
    for (int i = 0; i < n; i++) {
        const loom_record *r = loom_db_record(db, i);
        if (r->workload_hash != wh || strcmp(r->data_fp, dfp) || strncmp(r->target_fp, "cpu:", 4) || r->nsamples ||
            r->status != LOOM_OK || !isfinite(r->latency_s))
            continue;
        int dup = 0;
        for (int k = 0; k < m && !dup; k++)
            dup = (*rows)[k].schedule == r->schedule_hash;
        if (dup)
            continue;
        double s = simulate(r, prog, ds, t);
        if (!isfinite(s))
            continue;
        int flagged = r->message && !strncmp(r->message, LOOM_MEASURE_UNRELIABLE, strlen(LOOM_MEASURE_UNRELIABLE));
        (*rows)[m++] = (fid_row){r->schedule_hash, r->latency_s, s, r->line, flagged, r->core_line_ns};
    }
    return m;
}

/* Drop the rows whose measurement flagged itself unreliable, then those
 * measured over max_slowdown x the best kept (stall figures of a loaded
 * machine: a descheduled OpenMP thread costs a scheduler quantum, ms);
 * max_slowdown <= 0 keeps every row.  Returns the rows kept (compacted in
 * place). */
static int drop_stalled(fid_row *rows, int m, double max_slowdown)
{
    if (max_slowdown <= 0)
        return m;
    int k = 0;
    for (int i = 0; i < m; i++)
        if (!rows[i].unreliable)
            rows[k++] = rows[i];
    m = k;
    double best = INFINITY;
    for (int i = 0; i < m; i++)
        best = fmin(best, rows[i].measured);
    k = 0;
    for (int i = 0; i < m; i++)
        if (rows[i].measured <= max_slowdown * best)
            rows[k++] = rows[i];
    return k;
}

typedef struct fid_figs {
    double spearman, regret, median_ratio, best_measured, fav_measured;
    int fav_line;
    double apart;            /* the measured ratio two records' latencies must exceed to count as a pair */
    long long pairs_apart;   /* pairs of records measured more than `apart` times apart */
    double pair_agreement;   /* the share of them the simulator orders alike (a simulated tie counts half) */
    double line_lo, line_hi; /* the 10th and 90th percentiles of the records' core-to-core figures (0: none
                                recorded); one state's single figures spread about 2x (60-166 ns on
                                2026-12-03), so the tails are left out */
} fid_figs;

/* Pairs of rows whose measured latencies differ by more than f->apart
 * times, and the share of those the simulator orders the same way: the
 * ranking a measurement can judge where most records lie within its noise
 * (docs/simulator.md, model 13). */
static void pairs_apart(const fid_row *rows, int m, fid_figs *f)
{
    long long n = 0;
    double agree = 0;
    for (int i = 0; i < m; i++)
        for (int j = i + 1; j < m; j++) {
            double lo = fmin(rows[i].measured, rows[j].measured), hi = fmax(rows[i].measured, rows[j].measured);
            if (!(hi > lo * f->apart))
                continue;
            n++;
            double d = (rows[i].simulated - rows[j].simulated) * (rows[i].measured - rows[j].measured);
            agree += d > 0 ? 1 : d == 0 ? 0.5 : 0;
        }
    f->pairs_apart = n;
    f->pair_agreement = n ? agree / (double)n : NAN;
}

static void figures(const fid_row *rows, int m, fid_figs *f)
{
    pairs_apart(rows, m, f);
    double *a = malloc(sizeof *a * (size_t)m), *b = malloc(sizeof *b * (size_t)m), *q = malloc(sizeof *q * (size_t)m);
    int fav = 0;
    f->best_measured = INFINITY;
    f->median_ratio = NAN;
    for (int i = 0; i < m && a && b && q; i++) {
        a[i] = rows[i].simulated;
        b[i] = rows[i].measured;
        q[i] = rows[i].simulated / rows[i].measured;
        if (rows[i].simulated < rows[fav].simulated)
            fav = i;
        f->best_measured = fmin(f->best_measured, rows[i].measured);
    }
    f->spearman = a && b ? loom_spearman(a, b, m) : NAN;
    f->fav_measured = rows[fav].measured;
    f->fav_line = rows[fav].line;
    f->regret = f->fav_measured / f->best_measured;
    if (q) {
        qsort(q, (size_t)m, sizeof *q, cmp_double);
        f->median_ratio = m % 2 ? q[m / 2] : 0.5 * (q[m / 2 - 1] + q[m / 2]);
    }
    f->line_lo = f->line_hi = 0;
    int nl = 0;
    for (int i = 0; i < m && q; i++) /* the median ratio is taken: q holds the figures now */
        if (rows[i].core_line > 0)
            q[nl++] = rows[i].core_line;
    if (nl) {
        gsl_sort(q, 1, (size_t)nl);
        f->line_lo = gsl_stats_quantile_from_sorted_data(q, 1, (size_t)nl, 0.1);
        f->line_hi = gsl_stats_quantile_from_sorted_data(q, 1, (size_t)nl, 0.9);
    }
    free(a);
    free(b);
    free(q);
}

static void print_json(const char *dir, const loom_target *t, const fid_row *rows, int m, int dropped,
                       const fid_figs *f)
{
    cJSON *o = cJSON_CreateObject();
    char fp[128];
    loom_target_fingerprint(t, fp, sizeof fp);
    cJSON_AddStringToObject(o, "dir", dir);
    cJSON_AddStringToObject(o, "target", fp);
    cJSON_AddStringToObject(o, "cpu", t->cpu);
    cJSON_AddNumberToObject(o, "records", m);
    cJSON_AddNumberToObject(o, "dropped_stalled", dropped);
    cJSON_AddNumberToObject(o, "spearman", f->spearman);
    cJSON_AddNumberToObject(o, "top1_regret", f->regret);
    cJSON_AddNumberToObject(o, "median_ratio", f->median_ratio);
    cJSON_AddNumberToObject(o, "apart", f->apart);
    cJSON_AddNumberToObject(o, "pairs_apart", (double)f->pairs_apart);
    cJSON_AddNumberToObject(o, "pair_agreement", f->pair_agreement);
    cJSON_AddNumberToObject(o, "best_measured_s", f->best_measured);
    cJSON_AddNumberToObject(o, "favourite_measured_s", f->fav_measured);
    cJSON_AddNumberToObject(o, "favourite_line", f->fav_line);
    if (f->line_lo > 0) {
        cJSON_AddNumberToObject(o, "core_line_p10_ns", f->line_lo);
        cJSON_AddNumberToObject(o, "core_line_p90_ns", f->line_hi);
    } else {
        cJSON_AddNullToObject(o, "core_line_p10_ns");
        cJSON_AddNullToObject(o, "core_line_p90_ns");
    }
    cJSON_AddBoolToObject(o, "states_differ", loom_measure_core_line_moved(f->line_lo, f->line_hi));
    cJSON *arr = cJSON_AddArrayToObject(o, "rows");
    for (int i = 0; i < m; i++) {
        cJSON *r = cJSON_CreateObject();
        char h[17];
        snprintf(h, sizeof h, "%016" PRIx64, rows[i].schedule);
        cJSON_AddStringToObject(r, "schedule", h);
        cJSON_AddNumberToObject(r, "line", rows[i].line);
        cJSON_AddNumberToObject(r, "measured_s", rows[i].measured);
        cJSON_AddNumberToObject(r, "simulated_s", rows[i].simulated);
        cJSON_AddItemToArray(arr, r);
    }
    char *txt = cJSON_Print(o);
    if (txt)
        puts(txt);
    free(txt);
    cJSON_Delete(o);
}

int cli_db_fidelity(struct loom_db *db, const char *dir, const char *workload, const cli_inputs *in,
                    const char *target, double max_slowdown, double apart, int json)
{
    if (!workload) {
        fprintf(stderr, "loom db: --fidelity needs --workload W.loom and its --data/--param (the records' data)\n");
        return EXIT_BADINPUT;
    }
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    if (cli_load_workload("db", workload, in, 1, 1, &prog, &ds))
        return EXIT_BADINPUT;
    const char *name = !target || !strcmp(target, "sim") ? "host" : !strncmp(target, "sim:", 4) ? target + 4 : target;
    loom_target t;
    loom_error err;
    loom_error_clear(&err);
    fid_row *rows = NULL;
    int rc = 0, m = -1, all = 0;
    if (loom_target_load(name, &t, &err)) {
        cli_print_err("db", &err);
        rc = EXIT_BADINPUT;
    } else if ((m = drop_stalled(rows, all = collect(db, prog, ds, &t, &rows), max_slowdown)) < 2) {
        fprintf(stderr, "loom db: %s: %s CPU-measured trial records of %s on this data that simulate (need 2)\n", dir,
                all < 0 ? "out of memory: no" : m <= 0 ? "no" : "only one", workload);
        rc = EXIT_BADINPUT;
    } else {
        fid_figs f;
        f.apart = apart;
        figures(rows, m, &f);
        if (json)
            print_json(dir, &t, rows, m, all - m, &f);
        else
            printf("%s: %d CPU-measured schedules of %s re-simulated on %s%s%s%s (%d left out as stalled: flagged "
                   "unreliable when measured, or measured over %gx the best; --max-slowdown 0 keeps all)\n"
                   "  Spearman(simulated, measured) %.3f\n"
                   "  top-1 regret %.2fx (the simulator's favourite, line %d, measured %.4g us; the best %.4g us)\n"
                   "  median simulated / measured %.2fx\n"
                   "  pairs measured over %.2fx apart: %lld, ordered alike by the simulator: %.1f%%\n",
                   dir, m, workload, t.name, t.cpu[0] ? " (" : "", t.cpu, t.cpu[0] ? ")" : "", all - m, max_slowdown,
                   f.spearman, f.regret,
                   f.fav_line, f.fav_measured * 1e6, f.best_measured * 1e6, f.median_ratio, f.apart, f.pairs_apart,
                   100 * f.pair_agreement);
        if (!json && f.line_lo > 0)
            printf("  machine state: a cache line between two cores took %.0f-%.0f ns a round trip over these "
                   "records (10th-90th percentile)%s\n",
                   f.line_lo, f.line_hi,
                   loom_measure_core_line_moved(f.line_lo, f.line_hi)
                       ? " -- WARNING: measured in different states (a VM's vCPUs moved), so a kernel whose "
                         "threads share data measured differently in each: the ranking mixes them"
                       : "");
    }
    free(rows);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return rc;
}
