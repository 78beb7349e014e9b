/* loom: the end of a campaign -- its best schedules and the default
 * schedule measured again, interleaved, several rounds (tune.h
 * loom_tune_remeasure; issue 12: a campaign's best is the minimum over
 * many noisy measurements, so it is biased low). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/lower/lower.h"
#include "../../runtime/measure/batch.h"
#include "../../traces/trace.h"
#include "../navigate/navigate.h"
#include "tune_internal.h"

typedef struct entry {
    loom_schedule *sch;  /* owned */
    char *trace_json;    /* owned */
    uint64_t hash;
    double sampled;      /* the campaign's figure for it */
    double sampled_at;   /* when that record was measured (unix seconds) */
    int rank;            /* 1.. among the records, 0: the default only */
    int is_default;
    int is_naive;        /* the naive loop nest: measured, not recorded, never the winner */
    int eligible;        /* may be the campaign's result: carries every pin (unpinned: 1) */
    double *samples;     /* one per round, INFINITY: that round failed */
    int stalled;         /* rounds whose figure runtime/measure flagged unreliable (stalls) */
    double wall_s;       /* seconds its measurements took over the rounds (loom_measurement.total_seconds) */
    double line[LOOM_TUNE_MAX_ROUNDS]; /* the core-to-core figure of each round measured (0s left out) */
    int nline;
    loom_tune_remeasured sum;
} entry;

static void entry_free(entry *e)
{
    free(e->sch);
    free(e->trace_json);
    free(e->samples);
}

/* The best ok trial records of this workload, data and target, distinct
 * schedules that still replay, at most max, into e.  Returns the count. */
static int pick_top(tune_ctx *c, entry *e, int max)
{
    const loom_record **recs = NULL;
    int n = loom_db_query(c->db, c->whash, c->target_fp, &recs);
    char dfp[17];
    snprintf(dfp, sizeof dfp, "%016llx", (unsigned long long)c->dfp);
    int m = 0;
    for (int i = 0; i < n && m < max; i++) {
        const loom_record *r = recs[i];
        if (r->status != LOOM_OK || r->nsamples || strcmp(r->data_fp, dfp))
            continue;
        int dup = 0;
        for (int j = 0; j < m; j++)
            dup |= e[j].hash == r->schedule_hash;
        loom_trace *t = NULL;
        loom_error er;
        if (dup || loom_trace_from_json(r->trace_json, NULL, &t, &er))
            continue;
        if (c->o->pins && !loom_pins_hold(c->o->pins, t)) { /* an earlier, unpinned campaign's record */
            loom_trace_free(t);
            continue;
        }
        loom_schedule *s = malloc(sizeof *s);
        char *tj = strdup(r->trace_json);
        if (s && tj && !loom_schedule_init(s, c->prog, NULL, &er) && !loom_trace_replay(t, s, NULL, &er)) {
            memset(&e[m], 0, sizeof e[m]);
            e[m].sch = s;
            e[m].trace_json = tj;
            e[m].hash = r->schedule_hash;
            e[m].sampled = r->latency_s;
            e[m].sampled_at = r->time;
            e[m].rank = m + 1;
            e[m].eligible = 1;
            m++;
        } else {
            free(s);
            free(tj);
        }
        loom_trace_free(t);
    }
    free(recs);
    return m;
}

void loom__tune_control_pick(tune_ctx *c, loom__tune_control *ctl)
{
    memset(ctl, 0, sizeof *ctl);
    if (c->simulated || c->o->no_round_control)
        return;
    entry e[1];
    if (pick_top(c, e, 1) == 1) {
        ctl->sch = e[0].sch;
        ctl->hash = e[0].hash;
        ctl->recorded_s = e[0].sampled;
        ctl->recorded_at = e[0].sampled_at;
        free(e[0].trace_json);
    }
}

void loom__tune_control_free(loom__tune_control *ctl)
{
    free(ctl->sch);
    ctl->sch = NULL;
}

double loom__tune_record_latency(tune_ctx *c, uint64_t h)
{
    char dfp[17];
    snprintf(dfp, sizeof dfp, "%016llx", (unsigned long long)c->dfp);
    double best = INFINITY;
    for (int i = 0; i < loom_db_count(c->db); i++) {
        const loom_record *r = loom_db_record(c->db, i);
        if (r->schedule_hash == h && r->status == LOOM_OK && !r->nsamples && r->workload_hash == c->whash &&
            !strcmp(r->target_fp, c->target_fp) && !strcmp(r->data_fp, dfp) && r->latency_s < best)
            best = r->latency_s;
    }
    return best;
}

/* Add the default schedule: mark it among e[0..m) or append it.  The new
 * count. */
static int add_default(tune_ctx *c, entry *e, int m)
{
    loom_candidate def;
    loom_error er;
    if (loom__tune_default(c, &def, &er)) {
        loom__tune_log(c, "re-measurement: no default schedule: %s", er.msg);
        return m;
    }
    int eligible = !c->o->pins || loom_pins_hold(c->o->pins, def.trace);
    for (int j = 0; j < m; j++)
        if (e[j].hash == def.hash) {
            e[j].is_default = 1;
            loom_candidate_free(&def);
            return m;
        }
    char *tj = NULL;
    if (loom_trace_to_json(def.trace, c->prog, &tj) != LOOM_OK) {
        loom_candidate_free(&def);
        return m;
    }
    memset(&e[m], 0, sizeof e[m]);
    e[m].sch = def.sch;
    def.sch = NULL;
    e[m].trace_json = tj;
    e[m].hash = def.hash;
    e[m].is_default = 1;
    e[m].eligible = eligible;
    e[m].sampled =
        isfinite(c->res->default_latency_s) ? c->res->default_latency_s : loom__tune_record_latency(c, def.hash);
    loom_candidate_free(&def);
    return m + 1;
}

/* The naive loop nest as e[m] (measured in the rounds, never recorded).
 * The new count (m when it cannot be built). */
static int add_naive(tune_ctx *c, entry *e, int m)
{
    loom_schedule *s = malloc(sizeof *s);
    loom_error er;
    if (!s || loom_schedule_naive(s, c->prog, 0, &er) != LOOM_OK) {
        free(s);
        return m;
    }
    memset(&e[m], 0, sizeof e[m]);
    e[m].sch = s;
    e[m].is_naive = 1;
    e[m].sampled = c->res->naive_latency_s;
    return m + 1;
}

/* Rounds r0..R-1 over e[0..m) (their samples[r0..R)), the order rotated
 * by one each round (no schedule is always measured first, right after the
 * compilers or the previous round). */
static loom_status rounds(tune_ctx *c, entry *e, int m, int r0, int R, loom_error *err)
{
    loom_measure_candidate *order = malloc(sizeof *order * (size_t)m);
    int *idx = malloc(sizeof *idx * (size_t)m);
    loom_runner_result *rr = malloc(sizeof *rr * (size_t)m);
    loom_status st = order && idx && rr ? LOOM_OK : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    for (int r = r0; r < R && !st; r++) {
        for (int k = 0; k < m; k++) {
            idx[k] = (k + r) % m;
            order[k] = (loom_measure_candidate){e[idx[k]].sch, NULL};
        }
        loom_runner_opts ro = {.chunk = 16, .jobs = c->simulated ? 1 : c->threads};
        loom_batch_stats bs;
        st = loom_runner_run(c->runner, order, m, &ro, rr, &bs, err);
        c->compile_s += c->simulated ? 0 : bs.lower_s + bs.build_s;
        c->measure_s += c->simulated ? bs.lower_s + bs.measure_s : bs.measure_s;
        for (int k = 0; k < m && !st; k++) {
            e[idx[k]].samples[r] = rr[k].status == LOOM_OK ? rr[k].latency_s : INFINITY;
            e[idx[k]].stalled += rr[k].unreliable;
            e[idx[k]].wall_s += rr[k].m.total_seconds;
            if (rr[k].m.core_line_ns > 0 && e[idx[k]].nline < LOOM_TUNE_MAX_ROUNDS)
                e[idx[k]].line[e[idx[k]].nline++] = rr[k].m.core_line_ns;
        }
    }
    free(order), free(idx), free(rr);
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The p-quantile of sorted v[0..k), linear between order statistics
 * (Hyndman and Fan's type 7, R's default); INFINITY when k is 0. */
static double quantile(const double *v, int k, double p)
{
    if (k <= 0)
        return INFINITY;
    double h = (k - 1) * p;
    int i = (int)h;
    return i + 1 < k ? v[i] + (h - i) * (v[i + 1] - v[i]) : v[k - 1];
}

/* min, quartiles, median, max over the successful rounds of e. */
static void summarise(entry *e, int R)
{
    double v[LOOM_TUNE_MAX_ROUNDS];
    int k = 0;
    for (int r = 0; r < R; r++)
        if (isfinite(e->samples[r]))
            v[k++] = e->samples[r];
    qsort(v, (size_t)k, sizeof v[0], cmp_double);
    loom_tune_remeasured *s = &e->sum;
    s->schedule = e->hash;
    s->is_default = e->is_default;
    s->eligible = e->eligible;
    s->rank = e->rank;
    s->sampled_s = e->sampled;
    s->rounds = R;
    s->failed_rounds = R - k;
    s->min_s = k ? v[0] : INFINITY;
    s->max_s = k ? v[k - 1] : INFINITY;
    s->median_s = !k ? INFINITY : k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
    s->q1_s = quantile(v, k, 0.25);
    s->q3_s = quantile(v, k, 0.75);
}

int loom_tune_decisive_fits(double first_s, double decisive_s, int made, int R, double budget_s)
{
    if (R <= 0 || made < R)
        return 0;
    if (!(budget_s > 0))
        return 1;
    double pace = (first_s + decisive_s) / made; /* seconds a round, every round so far */
    return decisive_s + R * pace <= budget_s;
}

int loom_tune_contested(const loom_tune_remeasured *s, int n)
{
    const loom_tune_remeasured *w = NULL, *d = NULL;
    for (int k = 0; k < n; k++) {
        if (!s[k].eligible)
            continue;
        if (s[k].is_default)
            d = &s[k];
        if (isfinite(s[k].median_s) && (!w || s[k].median_s < w->median_s))
            w = &s[k];
    }
    if (!w || !d || w == d || !isfinite(d->median_s) || !(w->median_s < d->median_s))
        return 0;
    int nw = w->rounds - w->failed_rounds, nd = d->rounds - d->failed_rounds;
    if (nw < 1 || nd < 1)
        return 0;
    /* the notches: median +- 1.58 IQR / sqrt(n) (McGill, Tukey and Larsen 1978) */
    double hw = 1.58 * (w->q3_s - w->q1_s) / sqrt((double)nw), hd = 1.58 * (d->q3_s - d->q1_s) / sqrt((double)nd);
    return w->median_s + hw >= d->median_s - hd;
}

/* Append e's re-measurement record.  0, or -1 (c->append_status set). */
static int append(tune_ctx *c, const entry *e, int winner, double load, int cores, double when)
{
    char dfp[17], msg[128] = "";
    const loom_tune_remeasured *s = &e->sum;
    if (s->failed_rounds)
        snprintf(msg, sizeof msg, "re-measurement: %d of %d rounds failed", s->failed_rounds, s->rounds);
    loom_record r;
    loom__tune_record_init(c, &r, dfp);
    r.trace_json = e->trace_json;
    r.schedule_hash = e->hash;
    r.status = isfinite(s->median_s) ? LOOM_OK : LOOM_ERR_RUN;
    r.latency_s = s->median_s;
    r.flops = c->ref->flops;
    r.message = msg;
    r.time = when;
    r.nsamples = s->rounds;
    r.samples = e->samples;
    r.is_default = e->is_default;
    r.is_winner = winner;
    r.load = load;
    r.cores = cores;
    r.pins_json = c->pins_json; /* the campaign's pins (replay filters by them) */
    r.core_line_ns = loom__tune_median(e->line, e->nline);
    loom_error er;
    loom_error_clear(&er);
    if (loom_db_append(c->db, &r, &er) == LOOM_OK)
        return 0;
    c->append_status = er.status ? er.status : LOOM_ERR_IO;
    snprintf(c->append_msg, sizeof c->append_msg, "%s", er.msg);
    c->stop = 1;
    return -1;
}

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->sum.median_s != y->sum.median_s)
        return x->sum.median_s < y->sum.median_s ? -1 : 1;
    int unranked = (x->rank == 0) - (y->rank == 0); /* rank 0 sorts last */
    if (unranked)
        return unranked;
    return x->rank - y->rank;
}

/* The campaign figure of e against its re-measured spread: the ratio
 * (>= 1) when it lies outside [min, max] by more than LOOM_TUNE_WINDOW_TOL,
 * else 0. */
static double window_shift(const entry *e)
{
    const loom_tune_remeasured *s = &e->sum;
    if (!isfinite(e->sampled) || !(e->sampled > 0) || !isfinite(s->min_s) || !(s->median_s > 0))
        return 0;
    if (e->sampled > s->max_s * (1 + LOOM_TUNE_WINDOW_TOL))
        return e->sampled / s->median_s;
    if (e->sampled * (1 + LOOM_TUNE_WINDOW_TOL) < s->min_s)
        return s->median_s / e->sampled;
    return 0;
}

/* Flags of res from the sorted e[0..m) with winner w (may be NULL). */
static void judge(tune_ctx *c, const entry *e, int m, const entry *w, int R)
{
    loom_tune_result *res = c->res;
    for (int k = 0; k < m; k++) {
        double r = c->simulated ? 0 : window_shift(&e[k]);
        if (r > 0) {
            res->window_changed++;
            if (r > res->window_ratio)
                res->window_ratio = r;
        }
        if (!e[k].is_default || !w)
            continue;
        if (w == &e[k])
            res->best_is_default = 1;
        else if (!e[k].eligible && e[k].sum.median_s < w->sum.median_s)
            res->default_faster = 1;
        else if (e[k].eligible && R > 1 && isfinite(e[k].sum.min_s) && w->sum.max_s >= e[k].sum.min_s)
            res->undecided = 1; /* their spreads overlap */
    }
    /* a round runtime/measure flagged unreliable (its threads were
     * descheduled in most runs) cannot rank schedules: the summary says so */
    if (res->stalled_rounds && w && !w->is_default)
        res->undecided = 1;
}

/* On a loaded machine (res->noisy) the winner by median w must also beat
 * the default's fastest round, or the default is the winner: load only
 * adds time, and it adds more to some schedules than to others (an OpenMP
 * kernel whose threads wait at a barrier for a descheduled peer loses a
 * time slice, ~4-8 ms, where a serial one loses nothing), so a median
 * taken under load can crown a schedule 20x slower on a quiet machine
 * (issue 26).  Nor can it win on rounds runtime/measure flagged stalled
 * (its own or the default's): a stalled figure is a time slice, not the
 * kernel -- the tuneguard test saw a winner at 7.988 ms beat the default's
 * 7.992 ms, both stalled, and re-measure 1.5x slower than the default on
 * the quiet machine.  Sets res->undecided when it overrules.  The winner. */
static const entry *loaded_guard(tune_ctx *c, const entry *e, int m, const entry *w)
{
    if (!c->res->noisy || !w || w->is_default)
        return w;
    for (int k = 0; k < m; k++)
        if (e[k].is_default && e[k].eligible && isfinite(e[k].sum.median_s) &&
            (!(w->sum.min_s < e[k].sum.min_s) || w->stalled || e[k].stalled)) {
            c->res->undecided = 1;
            c->res->load_guard = 1;
            return &e[k];
        }
    return w;
}

/* Results into c->res and c's best; the log line.  e[0..m) are the
 * recorded schedules (sorted here), naive (may be NULL) the naive nest. */
static const entry *report(tune_ctx *c, entry *e, int m, const entry *naive, int R, double load, int cores)
{
    loom_tune_result *res = c->res;
    qsort(e, (size_t)m, sizeof *e, cmp_entry);
    res->remeasure_rounds = R;
    res->nremeasured = m;
    res->load_avg = load;
    res->cores = cores;
    res->sampled_best_latency_s = c->best_latency;
    res->sampled_default_latency_s = res->default_latency_s;
    double sampled_min = INFINITY;
    const entry *w = NULL; /* the winner: lowest median among the eligible, the default included */
    for (int k = 0; k < m; k++) {
        res->remeasured[k] = e[k].sum;
        if (e[k].rank > 0 && e[k].eligible && e[k].sampled < sampled_min)
            sampled_min = e[k].sampled;
        if (e[k].is_default) {
            res->sampled_default_latency_s = e[k].sampled;
            res->default_latency_s = e[k].sum.median_s;
        }
        if (!w && e[k].eligible && isfinite(e[k].sum.median_s))
            w = &e[k];
        if (isfinite(e[k].sum.min_s) && e[k].sum.max_s > 2 * e[k].sum.min_s)
            res->noisy = 1;
        res->stalled_rounds += e[k].stalled;
    }
    if (naive)
        res->stalled_rounds += naive->stalled;
    if (res->stalled_rounds)
        res->noisy = 1; /* so loaded_guard holds the winner to the default's fastest round */
    if (isfinite(load) && cores > 0 && load > cores)
        res->noisy = 1;
    w = loaded_guard(c, e, m, w);
    if (naive && isfinite(naive->sum.median_s)) {
        res->naive_latency_s = naive->sum.median_s;
        res->naive_remeasured = 1;
    }
    if (!isfinite(res->sampled_best_latency_s))
        res->sampled_best_latency_s = sampled_min; /* loom_tune_remeasure: no campaign ran */
    judge(c, e, m, w, R);
    res->best_latency_s = res->sampled_best_latency_s;
    if (w) {
        res->remeasured[w - e].chosen = 1;
        res->best_latency_s = w->sum.median_s;
        char *tj = strdup(w->trace_json);
        if (tj) {
            free(c->best_json);
            c->best_json = tj;
        }
        if (!(c->best_flops > 0))
            c->best_flops = c->ref->flops;
        if (w->sch && R > 0)
            res->best_1thread_s = loom__tune_measure_one_thread(c, w->sch);
    }
    loom__tune_log(c,
                   "re-measured %d schedules x %d rounds, interleaved%s: best %016llx median %.6g s (min %.6g, max "
                   "%.6g; sampled %.6g s), default median %.6g s (%s %.6g s), naive median %.6g s; "
                   "load %.2f on %d cores%s%s",
                   m, R, res->reused ? " (read back: recent)" : "", w ? (unsigned long long)w->hash : 0ull,
                   res->best_latency_s, w ? w->sum.min_s : NAN, w ? w->sum.max_s : NAN, res->sampled_best_latency_s,
                   res->default_latency_s, c->model ? "sampled in this run" : "its trial record",
                   res->sampled_default_latency_s, res->naive_latency_s, load, cores,
                   res->noisy ? " (noisy: figures are suspect)" : "",
                   res->undecided ? " (the best's and the default's spreads overlap: the lower median is reported)" : "");
    if (res->window_changed)
        loom__tune_log(c,
                       "%d schedules' campaign figures lie outside their re-measured spread (up to %.2fx): the "
                       "machine's capacity changed between the campaign and the re-measurement",
                       res->window_changed, res->window_ratio);
    return w;
}

/* The last re-measurement of this workload, data and target when it is
 * recent: made after every trial record, with R rounds and the same pins.
 * NULL otherwise. */
static const loom_record *recent_remeasure(tune_ctx *c, int R)
{
    char dfp[17];
    snprintf(dfp, sizeof dfp, "%016llx", (unsigned long long)c->dfp);
    const loom_record *last = NULL;
    int last_trial = 0;
    for (int i = 0; i < loom_db_count(c->db); i++) {
        const loom_record *r = loom_db_record(c->db, i);
        if (r->workload_hash != c->whash || strcmp(r->target_fp, c->target_fp) || strcmp(r->data_fp, dfp))
            continue;
        if (!r->nsamples)
            last_trial = r->line > last_trial ? r->line : last_trial;
        else if (!last || r->line > last->line)
            last = r;
    }
    if (!last || last->line < last_trial || last->nsamples < R || last->nsamples % R ||
        last->nsamples > R * LOOM_TUNE_DECISIVE_ROUNDS) /* R rounds, or with decisive ones (tune.h) */
        return NULL;
    if ((last->pins_json == NULL) != (c->pins_json == NULL) ||
        (c->pins_json && strcmp(last->pins_json, c->pins_json)))
        return NULL;
    return last;
}

/* e[0..) from the records of the re-measurement `last` (same time): their
 * traces replayed, their rounds read back.  The count. */
static int read_back(tune_ctx *c, const loom_record *last, entry *e, int max)
{
    int m = 0;
    for (int i = 0; i < loom_db_count(c->db) && m < max; i++) {
        const loom_record *r = loom_db_record(c->db, i);
        if (r->nsamples != last->nsamples || r->time != last->time || r->workload_hash != c->whash ||
            strcmp(r->target_fp, c->target_fp) || strcmp(r->data_fp, last->data_fp))
            continue;
        loom_trace *t = NULL;
        loom_error er;
        loom_schedule *s = malloc(sizeof *s);
        entry *x = &e[m];
        memset(x, 0, sizeof *x);
        x->samples = malloc(sizeof(double) * (size_t)r->nsamples);
        x->trace_json = strdup(r->trace_json);
        if (!s || !x->samples || !x->trace_json || loom_trace_from_json(r->trace_json, NULL, &t, &er) ||
            loom_schedule_init(s, c->prog, NULL, &er) || loom_trace_replay(t, s, NULL, &er)) {
            free(s);
            entry_free(x);
            loom_trace_free(t);
            continue;
        }
        x->sch = s;
        x->hash = r->schedule_hash;
        x->is_default = r->is_default;
        x->eligible = !c->o->pins || loom_pins_hold(c->o->pins, t);
        x->sampled = x->is_default && isfinite(c->res->default_latency_s) ? c->res->default_latency_s
                                                                           : loom__tune_record_latency(c, x->hash);
        memcpy(x->samples, r->samples, sizeof(double) * (size_t)r->nsamples);
        if (r->core_line_ns > 0)
            x->line[x->nline++] = r->core_line_ns;
        loom_trace_free(t);
        m++;
    }
    /* ranks: among the records, by campaign figure */
    for (int k = 0; k < m; k++) {
        e[k].rank = isfinite(loom__tune_record_latency(c, e[k].hash)) ? 1 : 0;
        for (int j = 0; j < m && e[k].rank; j++)
            e[k].rank += j != k && e[j].sampled < e[k].sampled && isfinite(loom__tune_record_latency(c, e[j].hash));
    }
    return m;
}

/* 1 when e[0..m)'s summaries are contested (loom_tune_contested). */
static int entries_contested(const entry *e, int m)
{
    loom_tune_remeasured s[LOOM_TUNE_REMEASURE_TOP + 1];
    int n = 0;
    for (int k = 0; k < m && n < LOOM_TUNE_REMEASURE_TOP + 1; k++)
        s[n++] = e[k].sum;
    return loom_tune_contested(s, n);
}

/* Make *R fresh rounds over e[0..m) (the naive nest at e[m] when
 * has_naive, in the first *R only), then while the lowest median and the
 * default are contested, *R more over e[0..m) up to
 * LOOM_TUNE_DECISIVE_ROUNDS x *R (tune.h); *R becomes the rounds made.
 * Summaries in e[k].sum. */
static loom_status remeasure_fresh(tune_ctx *c, entry *e, int m, int has_naive, int *R, double *load, int *cores,
                                   loom_error *err)
{
    loom_status st = LOOM_OK;
    int R0 = *R, cap = c->simulated ? R0 : R0 * LOOM_TUNE_DECISIVE_ROUNDS; /* a simulation is deterministic */
    if (cap > LOOM_TUNE_MAX_ROUNDS)
        cap = LOOM_TUNE_MAX_ROUNDS;
    for (int k = 0; k < m + has_naive && !st; k++) {
        e[k].samples = malloc(sizeof(double) * (size_t)(k < m ? cap : R0));
        if (!e[k].samples)
            st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    double t0 = loom_now_seconds();
    if (!st)
        st = rounds(c, e, m + has_naive, 0, R0, err);
    if (st)
        return st;
    int made = R0;
    double first_s = loom_now_seconds() - t0, decisive_s = 0, budget = c->o->remeasure_budget_s;
    if (has_naive) { /* decisive rounds do not re-run the naive nest: its share of the first rounds is not their pace */
        double all = 0;
        for (int k = 0; k <= m; k++)
            all += e[k].wall_s;
        if (all > 0)
            first_s *= (all - e[m].wall_s) / all;
    }
    for (int k = 0; k < m + has_naive; k++)
        summarise(&e[k], R0);
    while (made + R0 <= cap && !c->stop && entries_contested(e, m)) { /* decisive rounds (tune.h) */
        if (!loom_tune_decisive_fits(first_s, decisive_s, made, R0, budget)) {
            loom__tune_log(c, "re-measurement: after %d rounds the lowest median and the default's cannot be told "
                              "apart, but %d more rounds (about %.1f s) would pass the decisive rounds' budget of "
                              "%g s (--remeasure-budget): stopping",
                           made, R0, R0 * (first_s + decisive_s) / made, budget);
            break;
        }
        loom__tune_log(c, "re-measurement: after %d rounds the lowest median and the default's cannot be told apart "
                          "(their notches overlap): %d more rounds",
                       made, R0);
        double t1 = loom_now_seconds();
        st = rounds(c, e, m, made, made + R0, err);
        if (st)
            return st;
        decisive_s += loom_now_seconds() - t1;
        made += R0;
        for (int k = 0; k < m; k++)
            summarise(&e[k], made);
    }
    *R = made;
    double la;
    if (!c->simulated) { /* a simulation does not depend on the machine's load */
        if (getloadavg(&la, 1) == 1)
            *load = la;
        *cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    }
    return LOOM_OK;
}

/* Append the re-measurement records of e[0..m), winner w marked. */
static void append_all(tune_ctx *c, const entry *e, int m, const entry *w, double load, int cores)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double when = c->simulated ? (double)(c->ok + c->failed + 1) : (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    for (int k = 0; k < m && !c->stop; k++)
        if (e[k].eligible) /* a pinned campaign's default is measured for comparison, not recorded: every
                              record of a pinned campaign carries the pins (docs/navigation.md) */
            append(c, &e[k], w == &e[k], load, cores, when);
}

loom_status loom__tune_remeasure(tune_ctx *c, loom_error *err)
{
    int R = c->o->remeasure_rounds;
    if (R <= 0 || c->stop)
        return LOOM_OK;
    if (R > LOOM_TUNE_MAX_ROUNDS)
        R = LOOM_TUNE_MAX_ROUNDS;
    if (c->simulated)
        R = 1; /* the simulation is deterministic */
    entry e[LOOM_TUNE_REMEASURE_TOP + 2];
    const loom_record *last = c->o->remeasure_again ? NULL : recent_remeasure(c, R);
    loom_status st = LOOM_OK;
    double load = NAN;
    int cores = 0, m = 0, has_naive = 0;
    if (last) { /* read back: a finished campaign rerun does not grow its database */
        m = read_back(c, last, e, LOOM_TUNE_REMEASURE_TOP + 1);
        c->res->reused = m > 0;
        load = last->load;
        cores = last->cores;
        R = last->nsamples; /* with its decisive rounds */
        for (int k = 0; k < m; k++)
            summarise(&e[k], R);
    }
    if (!c->res->reused) {
        m = pick_top(c, e, LOOM_TUNE_REMEASURE_TOP);
        m = add_default(c, e, m);
        has_naive = m > 0 && add_naive(c, e, m) > m;
        st = m > 0 ? remeasure_fresh(c, e, m, has_naive, &R, &load, &cores, err) : LOOM_OK;
    }
    entry naive = has_naive ? e[m] : (entry){0};
    if (!st && m > 0 && !c->stop) {
        const entry *w = report(c, e, m, has_naive ? &naive : NULL, R, load, cores);
        if (!c->res->reused)
            append_all(c, e, m, w, load, cores);
    }
    for (int k = 0; k < m + has_naive; k++)
        entry_free(&e[k]);
    return st;
}
