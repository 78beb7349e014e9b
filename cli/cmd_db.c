/* loom: `loom db DIR` -- the tuning records of a campaign directory per
 * workload and target, best first (DESIGN.md "Database"; search/database/database.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../search/database/database.h"
#include "cli.h"

static const char *DB_HELP =
    "usage: loom db DIR [options]\n"
    "\n"
    "Reads the tuning database of a campaign directory (DIR/records.jsonl, one\n"
    "tuning record per line) and prints, per workload and target, a header with the\n"
    "record counts by status, then the records best first: ok records by latency,\n"
    "fastest first, then failed ones by the time they were measured.  Each row:\n"
    "rank, latency (median per run), GFLOP/s (when the record has a FLOP count),\n"
    "status, schedule hash, when it was measured (local time), file line, and the\n"
    "message (truncated).  When the campaign ended with a re-measurement (loom tune\n"
    "--remeasure), its figures come first: per schedule the median of the rounds with\n"
    "(min, median, max), and a warning when the machine was loaded or the spread\n"
    "is over 2x.  A torn or malformed line is skipped with a warning on\n"
    "stderr naming it.  Nothing is written.\n"
    "\n"
    "options:\n"
    "  --workload W.loom    only the records of this workload (by its hash)\n"
    "  --limit N            at most N records per workload and target (default 10;\n"
    "                       0 shows all)\n"
    "  --json               print one JSON object instead: dir, records, skipped, and\n"
    "                       groups[] with workload, workload_name, target, count,\n"
    "                       counts (by status), data (fingerprints), and records[]\n"
    "                       (rank, line, schedule, status, latency_s, flops, gflops,\n"
    "                       compile_s, message, time, data) best first, and\n"
    "                       remeasured[] (schedule, default, min_s, median_s, max_s,\n"
    "                       samples, load, cores, line)\n"
    "  --plot FILE.png|svg  draw the campaign instead (gnuplot): every trial's latency,\n"
    "                       the best so far, the default schedule as a line and the\n"
    "                       failures marked, for the workload/target group with the most\n"
    "                       records (or --workload's), on a log axis labelled at 1, 2, 5\n"
    "                       x 10^k us, titled with the target's name and the trials\n"
    "                       drawn; the gnuplot script with the data is kept beside it\n"
    "                       as FILE.gp\n"
    "  --fidelity           with --workload W.loom and its --data/--param: re-simulate\n"
    "                       every CPU-measured trial record of the workload on that\n"
    "                       data (one per schedule) and print how well the simulator\n"
    "                       stands for the CPU: Spearman(simulated, measured), top-1\n"
    "                       regret (measured latency of the simulator's favourite /\n"
    "                       the measured best) and the median simulated / measured;\n"
    "                       --json: those as one object with rows[] (schedule, line,\n"
    "                       measured_s, simulated_s).  Measured figures carry the load\n"
    "                       the campaign ran under (bench/fidelity.sh, docs/simulator.md)\n"
    "                       and the machine's state: the records' core-to-core round trip\n"
    "                       (10th-90th percentile; JSON core_line_p10_ns, _p90_ns,\n"
    "                       states_differ), with a warning when they differ 2.5x\n"
    "  --apart PCT          --fidelity also counts the pairs of records measured more than\n"
    "                       PCT% apart (default 25, 1..1000) and the share of them the\n"
    "                       simulator orders alike: the order a measurement can judge\n"
    "                       where most records lie within its noise (docs/simulator.md)\n"
    "  --max-slowdown X     --fidelity leaves out records whose measurement flagged itself\n"
    "                       unreliable (\"figure unreliable\": stalled runs) and records\n"
    "                       measured over X times the best (default 20; 0 keeps all): on a\n"
    "                       loaded machine a kernel whose OpenMP thread was descheduled\n"
    "                       measures a scheduler quantum\n"
    "  --target T           the simulator target of --fidelity: sim (default: the\n"
    "                       calibrated host, loom calibrate), sim:NAME, FILE.json\n"
    "  -h, --help           this text\n"
    "\n"
    "statuses: ok, build-error, run-error (the kernel crashed), timeout, wrong (wrong\n"
    "          result), lower-error (cannot be lowered), invalid, and others\n"
    "exit codes: 0 printed (also when lines were skipped or nothing matched),\n"
    "            2 bad input (no such directory, not a tuning database, bad options,\n"
    "            a bad --workload)\n";

/* A (workload, target) group, represented by its first record. */
typedef struct group {
    const loom_record *first;
} group;

static int cmp_group(const void *pa, const void *pb)
{
    const loom_record *a = ((const group *)pa)->first, *b = ((const group *)pb)->first;
    int c = strcmp(a->workload_name, b->workload_name);
    if (c)
        return c;
    if (a->workload_hash != b->workload_hash)
        return a->workload_hash < b->workload_hash ? -1 : 1;
    return strcmp(a->target_fp, b->target_fp);
}

/* Status names in the order the header lists them. */
static const loom_status ORDER[] = {LOOM_OK,          LOOM_ERR_BUILD, LOOM_ERR_RUN,   LOOM_ERR_TIMEOUT,
                                    LOOM_ERR_WRONG,   LOOM_ERR_UNSUPPORTED, LOOM_ERR_INVALID, LOOM_ERR_PARSE,
                                    LOOM_ERR_BIND,    LOOM_ERR_DATA,  LOOM_ERR_IO,    LOOM_ERR_NOMEM};
#define NORDER (int)(sizeof ORDER / sizeof ORDER[0])

static int status_slot(loom_status s)
{
    const char *name = loom_record_status_name(s);
    for (int i = 0; i < NORDER; i++)
        if (!strcmp(loom_record_status_name(ORDER[i]), name))
            return i;
    return NORDER; /* unknown */
}

static void when(double t, char *buf, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!localtime_r(&tt, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, n, "%.0f", t);
}

/* The message on one line, at most `max` bytes (cut at a UTF-8 boundary,
 * "..." appended when cut). */
static void short_message(const char *m, char *buf, size_t max)
{
    size_t n = strlen(m), k = n < max ? n : max;
    while (k < n && k > 0 && ((unsigned char)m[k] & 0xC0) == 0x80)
        k--;
    for (size_t i = 0; i < k; i++)
        buf[i] = ((unsigned char)m[i] < 0x20) ? ' ' : m[i];
    buf[k] = 0;
    if (k < n)
        strcat(buf, "...");
}

static double gflops(const loom_record *r)
{
    return r->flops > 0 && isfinite(r->latency_s) && r->latency_s > 0 ? r->flops / r->latency_s / 1e9 : -1;
}

/* The latest re-measurement of a group (loom_tune_remeasure): the
 * re-measurement records with the time and data of the last one in the
 * file, best first (v is best first).  Moves them to out[], returns their
 * count; the trial records stay in v (compacted), *k updated. */
static int split_remeasured(const loom_record **v, int *k, const loom_record **out)
{
    const loom_record *last = NULL;
    for (int i = 0; i < *k; i++)
        if (v[i]->nsamples && (!last || v[i]->line > last->line))
            last = v[i];
    int m = 0, t = 0;
    for (int i = 0; i < *k; i++) {
        if (!v[i]->nsamples)
            v[t++] = v[i];
        else if (v[i]->time == last->time && !strcmp(v[i]->data_fp, last->data_fp))
            out[m++] = v[i];
    }
    *k = t;
    return m;
}

static void minmax(const loom_record *r, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < r->nsamples; i++)
        if (isfinite(r->samples[i])) {
            *lo = r->samples[i] < *lo ? r->samples[i] : *lo;
            *hi = r->samples[i] > *hi ? r->samples[i] : *hi;
        }
}

static void print_remeasured(const loom_record **re, int m)
{
    if (!m)
        return;
    const loom_record *f = re[0];
    char t[64];
    when(f->time, t, sizeof t);
    printf("  re-measured %s: %d schedules (the campaign's best and the default), %d round%s interleaved", t, m,
           f->nsamples, f->nsamples == 1 ? "" : "s");
    if (isfinite(f->load))
        printf(", load average %.2f on %d cores", f->load, f->cores);
    printf("\n");
    int noisy = isfinite(f->load) && f->cores > 0 && f->load > f->cores;
    for (int i = 0; i < m; i++) {
        double lo, hi;
        minmax(re[i], &lo, &hi);
        char a[32], b[32], c[32];
        cli_human_time(lo, a, sizeof a);
        cli_human_time(re[i]->latency_s, b, sizeof b);
        cli_human_time(hi, c, sizeof c);
        noisy |= isfinite(lo) && hi > 2 * lo;
        printf("  %4d  %-10s  (min %s, median %s, max %s)  %016" PRIx64 "  line %d%s%s%s%s\n", i + 1, b, a, b, c,
               re[i]->schedule_hash, re[i]->line, re[i]->is_default ? "  default" : "",
               re[i]->is_winner ? "  chosen" : "", *re[i]->message ? "  " : "", re[i]->message);
    }
    if (noisy)
        printf("  WARNING  the machine was loaded or a schedule's slowest round was over 2x its fastest: these "
               "timings are suspect\n");
    printf("  trials (the campaign's measurements; each latency the median of one measurement):\n");
}

static void print_group(const loom_record **v, int k, int limit)
{
    const loom_record **re = malloc(sizeof *re * (size_t)(k ? k : 1));
    int m = re ? split_remeasured(v, &k, re) : 0;
    if (!k) {
        free(re);
        return;
    }
    const loom_record *f = v[0];
    int counts[NORDER + 1] = {0};
    int ndata = 0;
    const char *data = f->data_fp;
    for (int i = 0; i < k; i++) {
        counts[status_slot(v[i]->status)]++;
        if (strcmp(v[i]->data_fp, data))
            ndata = 1;
    }
    printf("%s (workload %016" PRIx64 ") on %s, data %s: %d record%s:", f->workload_name, f->workload_hash,
           f->target_fp, ndata ? "several data sets" : data, k, k == 1 ? "" : "s");
    const char *sep = " ";
    for (int s = 0; s <= NORDER; s++)
        if (counts[s]) {
            printf("%s%d %s", sep, counts[s], s < NORDER ? loom_record_status_name(ORDER[s]) : "unknown");
            sep = ", ";
        }
    printf("\n");
    print_remeasured(re, m);
    free(re);
    printf("  %4s  %-10s  %8s  %-11s  %-16s  %-19s  %6s  %s\n", "rank", "latency", "GFLOP/s", "status", "schedule",
           "measured", "line", "message");
    int shown = limit > 0 && limit < k ? limit : k;
    for (int i = 0; i < shown; i++) {
        const loom_record *r = v[i];
        char lat[32], gf[32], t[64], msg[128];
        cli_human_time(r->latency_s, lat, sizeof lat);
        double g = gflops(r);
        if (g >= 0)
            snprintf(gf, sizeof gf, "%.2f", g);
        else
            snprintf(gf, sizeof gf, "-");
        when(r->time, t, sizeof t);
        short_message(r->message, msg, 72);
        printf("  %4d  %-10s  %8s  %-11s  %016" PRIx64 "  %-19s  %6d%s%s\n", i + 1, lat, gf,
               loom_record_status_name(r->status), r->schedule_hash, t, r->line, *msg ? "  " : "", msg);
    }
    if (shown < k)
        printf("  ... %d more (--limit 0 shows all)\n", k - shown);
}

static cJSON *remeasured_json(const loom_record **re, int m)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < m; i++) {
        const loom_record *r = re[i];
        cJSON *o = cJSON_CreateObject();
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, r->schedule_hash);
        cJSON_AddStringToObject(o, "schedule", hex);
        cJSON_AddBoolToObject(o, "default", r->is_default);
        cJSON_AddBoolToObject(o, "winner", r->is_winner);
        cJSON_AddNumberToObject(o, "line", r->line);
        double lo, hi;
        minmax(r, &lo, &hi);
        const double v[3] = {lo, r->latency_s, hi};
        const char *key[3] = {"min_s", "median_s", "max_s"};
        for (int j = 0; j < 3; j++)
            isfinite(v[j]) ? cJSON_AddNumberToObject(o, key[j], v[j]) : cJSON_AddNullToObject(o, key[j]);
        cJSON *sa = cJSON_AddArrayToObject(o, "samples");
        for (int j = 0; j < r->nsamples; j++)
            cJSON_AddItemToArray(sa, isfinite(r->samples[j]) ? cJSON_CreateNumber(r->samples[j]) : cJSON_CreateNull());
        isfinite(r->load) ? cJSON_AddNumberToObject(o, "load", r->load) : cJSON_AddNullToObject(o, "load");
        cJSON_AddNumberToObject(o, "cores", r->cores);
        cJSON_AddStringToObject(o, "message", r->message);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *group_json(const loom_record **v, int k, int limit)
{
    const loom_record **re = malloc(sizeof *re * (size_t)(k ? k : 1));
    int m = re ? split_remeasured(v, &k, re) : 0;
    cJSON *rej = remeasured_json(re, m);
    free(re);
    if (!k) {
        cJSON_Delete(rej);
        return NULL;
    }
    const loom_record *f = v[0];
    char hex[17];
    cJSON *g = cJSON_CreateObject();
    snprintf(hex, sizeof hex, "%016" PRIx64, f->workload_hash);
    cJSON_AddStringToObject(g, "workload", hex);
    cJSON_AddStringToObject(g, "workload_name", f->workload_name);
    cJSON_AddStringToObject(g, "target", f->target_fp);
    cJSON_AddNumberToObject(g, "count", k);
    cJSON *counts = cJSON_AddObjectToObject(g, "counts");
    cJSON *data = cJSON_AddArrayToObject(g, "data");
    for (int i = 0; i < k; i++) {
        const char *name = loom_record_status_name(v[i]->status);
        cJSON *c = cJSON_GetObjectItemCaseSensitive(counts, name);
        if (c)
            cJSON_SetNumberValue(c, c->valuedouble + 1);
        else
            cJSON_AddNumberToObject(counts, name, 1);
        int seen = 0;
        cJSON *d;
        cJSON_ArrayForEach(d, data) seen |= !strcmp(d->valuestring, v[i]->data_fp);
        if (!seen)
            cJSON_AddItemToArray(data, cJSON_CreateString(v[i]->data_fp));
    }
    cJSON_AddItemToObject(g, "remeasured", rej);
    cJSON *recs = cJSON_AddArrayToObject(g, "records");
    int shown = limit > 0 && limit < k ? limit : k;
    for (int i = 0; i < shown; i++) {
        const loom_record *r = v[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "rank", i + 1);
        cJSON_AddNumberToObject(o, "line", r->line);
        snprintf(hex, sizeof hex, "%016" PRIx64, r->schedule_hash);
        cJSON_AddStringToObject(o, "schedule", hex);
        cJSON_AddStringToObject(o, "status", loom_record_status_name(r->status));
        if (isfinite(r->latency_s))
            cJSON_AddNumberToObject(o, "latency_s", r->latency_s);
        else
            cJSON_AddNullToObject(o, "latency_s");
        cJSON_AddNumberToObject(o, "flops", r->flops);
        double gf = gflops(r);
        if (gf >= 0)
            cJSON_AddNumberToObject(o, "gflops", gf);
        else
            cJSON_AddNullToObject(o, "gflops");
        cJSON_AddNumberToObject(o, "compile_s", r->compile_s);
        cJSON_AddStringToObject(o, "message", r->message);
        cJSON_AddNumberToObject(o, "time", r->time);
        cJSON_AddStringToObject(o, "data", r->data_fp);
        cJSON_AddItemToArray(recs, o);
    }
    return g;
}

/* The hash of the workload file (0, or EXIT_BADINPUT after a message). */
static int workload_hash(const char *workload, uint64_t *whash)
{
    loom_program *prog = NULL;
    loom_error perr;
    loom_error_clear(&perr);
    if (loom_program_parse_file(workload, &prog, &perr)) {
        cli_print_err("db", &perr);
        return EXIT_BADINPUT;
    }
    *whash = loom_program_hash(prog);
    loom_program_free(prog);
    return 0;
}

int cmd_db(int argc, char **argv)
{
    const char *dir = NULL, *workload = NULL, *plot = NULL, *target = NULL;
    int json = 0, fidelity = 0;
    uint64_t max_slowdown = 20, apart_pct = 25;
    uint64_t limit = 10;
    enum { WORKLOAD, LIMIT, JSON, PLOT, FIDELITY, TARGET, SLOW, APART };
    static const cli_opt opts[] = {{"workload", 0, 1, WORKLOAD}, {"limit", 0, 1, LIMIT},       {"json", 0, 0, JSON},
                                   {"plot", 0, 1, PLOT},         {"fidelity", 0, 0, FIDELITY}, {"target", 0, 1, TARGET},
                                   {"max-slowdown", 0, 1, SLOW}, {"apart", 0, 1, APART}};
    static cli_args args;
    static cli_inputs in;
    memset(&in, 0, sizeof in);
    cli_args_init(&args, "db", argc, argv, DB_HELP, opts, (int)(sizeof opts / sizeof *opts), &in);
    const char *a, *val;
    int id, prc;
    while ((id = cli_next(&args, &a, &val, &prc)) != CLI_END) {
        if (id == CLI_STOP)
            return prc;
        if (id == LIMIT) {
            if (cli_parse_u64("db", "--limit", val, &limit))
                return EXIT_BADINPUT;
            if (limit > 1000000000)
                limit = 0;
        } else if (id == WORKLOAD) {
            if (workload) {
                fprintf(stderr, "loom db: --workload given twice\n");
                return EXIT_BADINPUT;
            }
            workload = val;
        } else if (id == JSON) {
            json = 1;
        } else if (id == PLOT) {
            plot = val;
        } else if (id == FIDELITY) {
            fidelity = 1;
        } else if (id == TARGET) {
            target = val;
        } else if (id == SLOW || id == APART) {
            if (id == SLOW ? cli_parse_range("db", "--max-slowdown", val, 0, 1000000, NULL, &max_slowdown)
                           : cli_parse_range("db", "--apart", val, 1, 1000, "percent", &apart_pct))
                return EXIT_BADINPUT;
        } else if (!dir) {
            dir = val;
        } else {
            fprintf(stderr, "loom db: more than one directory ('%s' and '%s')\n", dir, val);
            return EXIT_BADINPUT;
        }
    }
    if (!dir) {
        fprintf(stderr, "loom db: no directory given\n%s", DB_HELP);
        return EXIT_BADINPUT;
    }
    uint64_t whash = 0;
    if (workload && workload_hash(workload, &whash))
        return EXIT_BADINPUT;

    loom_error err;
    loom_error_clear(&err);
    loom_db *db = NULL;
    if (loom_db_open_readonly(dir, stderr, &db, &err)) {
        fprintf(stderr, "loom db: %s\n", err.msg);
        return EXIT_BADINPUT;
    }
    if (fidelity) {
        int prc2 = cli_db_fidelity(db, dir, workload, &in, target, (double)max_slowdown,
                                   1 + (double)apart_pct / 100, json);
        loom_db_close(db);
        return prc2;
    }
    if (plot) {
        int prc2 = cli_db_plot(db, dir, workload ? &whash : NULL, plot);
        loom_db_close(db);
        return prc2;
    }
    int n = loom_db_count(db), ng = 0, rc = 0;
    group *groups = malloc((size_t)(n ? n : 1) * sizeof *groups);
    if (!groups) {
        fprintf(stderr, "loom db: out of memory\n");
        loom_db_close(db);
        return EXIT_BADINPUT;
    }
    /* distinct (workload, target), O(records x groups): groups are few */
    for (int i = 0; i < n; i++) {
        const loom_record *r = loom_db_record(db, i);
        if (workload && r->workload_hash != whash)
            continue;
        int g = 0;
        while (g < ng && !(groups[g].first->workload_hash == r->workload_hash &&
                           !strcmp(groups[g].first->target_fp, r->target_fp)))
            g++;
        if (g == ng)
            groups[ng++].first = r;
    }
    qsort(groups, (size_t)ng, sizeof *groups, cmp_group);

    cJSON *root = NULL, *jgroups = NULL;
    if (json) {
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "dir", dir);
        cJSON_AddNumberToObject(root, "records", n);
        cJSON_AddNumberToObject(root, "skipped", loom_db_skipped(db));
        jgroups = cJSON_AddArrayToObject(root, "groups");
    } else {
        printf("%s: %d record%s", dir, n, n == 1 ? "" : "s");
        if (loom_db_skipped(db))
            printf(" (%d line%s skipped)", loom_db_skipped(db), loom_db_skipped(db) == 1 ? "" : "s");
        if (workload)
            printf("; %d workload/target group%s of %s (workload %016" PRIx64 ")\n", ng, ng == 1 ? "" : "s",
                   workload, whash);
        else
            printf(" in %d workload/target group%s\n", ng, ng == 1 ? "" : "s");
    }
    for (int g = 0; g < ng; g++) {
        const loom_record **v = NULL;
        int k = loom_db_query(db, groups[g].first->workload_hash, groups[g].first->target_fp, &v);
        if (k < 0) {
            fprintf(stderr, "loom db: out of memory\n");
            rc = EXIT_BADINPUT;
            break;
        }
        if (json) {
            cJSON *gj = group_json(v, k, (int)limit);
            if (gj)
                cJSON_AddItemToArray(jgroups, gj);
        } else {
            printf("\n");
            print_group(v, k, (int)limit);
        }
        free(v);
    }
    if (json && !rc) {
        char *txt = cJSON_Print(root);
        if (txt)
            puts(txt);
        else {
            fprintf(stderr, "loom db: out of memory\n");
            rc = EXIT_BADINPUT;
        }
        free(txt);
    }
    cJSON_Delete(root);
    free(groups);
    loom_db_close(db);
    if (!rc && fflush(stdout)) {
        fprintf(stderr, "loom db: cannot write the output: %s\n", strerror(errno));
        rc = EXIT_BADINPUT;
    }
    return rc;
}
