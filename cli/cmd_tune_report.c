/* loom: the end of `loom tune` -- the campaign's summary, as text or as
 * JSON (cli.h cli_tune_print_summary, cli_tune_print_json); the command
 * itself is in cmd_tune.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../search/tune/tune.h"
#include "cli.h"

static void spread(const loom_tune_remeasured *m, char *buf, size_t n)
{
    char a[32], b[32], c[32];
    cli_human_time(m->min_s, a, sizeof a);
    cli_human_time(m->median_s, b, sizeof b);
    cli_human_time(m->max_s, c, sizeof c);
    snprintf(buf, n, "min %s, median %s, max %s over %d round%s%s", a, b, c, m->rounds, m->rounds == 1 ? "" : "s",
             m->failed_rounds ? ", some failed" : "");
}

/* What the summary's figures mean: reused, pins, undecided, windows. */
static void print_verdict(const loom_tune_result *r)
{
    if (r->reused)
        printf("  (the last re-measurement is recent -- no trial since -- so it was read back, not made again; "
               "--remeasure-again makes a new one)\n");
    if (r->pinned)
        printf("  pinned   the best carries the %d pinned decision%s%s\n", r->pinned, r->pinned == 1 ? "" : "s",
               r->default_faster ? "; the unpinned default re-measured faster (shown above, never returned)" : "");
    if (r->load_guard)
        printf("  NOTE     the machine was loaded while re-measuring: the schedule with the lowest median did not "
               "beat the default's fastest round, or its or the default's rounds stalled, so the default schedule "
               "is reported; re-measure on a quiet machine (--remeasure-again)\n");
    else if (r->undecided)
        printf("  NOTE     the best's and the default's re-measured spreads overlap: the machine could not tell "
               "them apart; reported: the %s (the lower median)\n",
               r->best_is_default ? "default schedule" : "best schedule");
    if (r->window_changed)
        printf("  WARNING  %d schedule%s' campaign figures lie outside their re-measured spread (up to %.2fx): the "
               "machine's capacity changed between the campaign and the re-measurement; compare the re-measured "
               "figures only\n",
               r->window_changed, r->window_changed == 1 ? "" : "s", r->window_ratio);
}

void cli_tune_print_summary(const char *name, const loom_tune_result *r, int failed)
{
    char b[32], d[32], nv[32], sp[160], smp[32];
    cli_human_time(r->best_latency_s, b, sizeof b);
    cli_human_time(r->default_latency_s, d, sizeof d);
    cli_human_time(r->naive_latency_s, nv, sizeof nv);
    printf("%s: %d trials (%d resumed, %d measured now, %d failed, %ld invalid traces rejected)\n", name, r->trials,
           r->resumed, r->measured, failed, r->invalid);
    const loom_tune_remeasured *best = NULL, *def = NULL; /* the final choice: not always the first by median */
    for (int k = 0; k < r->nremeasured; k++) {
        if (r->remeasured[k].is_default)
            def = &r->remeasured[k];
        if (r->remeasured[k].chosen)
            best = &r->remeasured[k];
    }
    if (best) {
        spread(best, sp, sizeof sp);
        cli_human_time(r->sampled_best_latency_s, smp, sizeof smp);
        printf("  best     %s  (%s; %.2f GFLOP/s; the campaign's sampled minimum was %s)\n", b, sp, r->best_gflops,
               smp);
    } else {
        printf("  best     %s  (%.2f GFLOP/s; sampled minimum, not re-measured)\n", b, r->best_gflops);
    }
    double x = isfinite(r->best_latency_s) && isfinite(r->default_latency_s) ? r->default_latency_s / r->best_latency_s
                                                                              : 0.0;
    if (isfinite(r->best_1thread_s)) {
        char one[32];
        cli_human_time(r->best_1thread_s, one, sizeof one);
        printf("  best     %s  on one thread (one measurement; all %d cores give %.3gx)\n", one, r->cores,
               r->best_1thread_s / r->best_latency_s);
    }
    const char *pinned = r->pinned ? "unpinned, for comparison only; " : "";
    if (def) {
        spread(def, sp, sizeof sp);
        printf("  default  %s  (%s%s; best is %.2fx faster)\n", d, pinned, sp, x);
    } else {
        printf("  default  %s  (%sbest is %.2fx faster)\n", d, pinned, x);
    }
    printf("  naive    %s  (%s; best is %.2fx faster)\n", nv,
           r->naive_remeasured ? "median of the same interleaved rounds" : "one measurement at the campaign's start",
           isfinite(r->best_latency_s) && isfinite(r->naive_latency_s) ? r->naive_latency_s / r->best_latency_s : 0.0);
    print_verdict(r);
    if (r->remeasure_rounds) {
        printf("  re-measured %d schedules (the best %d distinct and the default), %d round%s interleaved", r->nremeasured,
               LOOM_TUNE_REMEASURE_TOP, r->remeasure_rounds, r->remeasure_rounds == 1 ? "" : "s");
        if (isfinite(r->load_avg))
            printf("; load average %.2f on %d cores", r->load_avg, r->cores);
        printf("\n");
    }
    if (r->stalled_trials)
        printf("  WARNING  %d trial figure%s stalled (runtime/measure's stall check: threads descheduled in most "
               "timed runs); their records say so\n",
               r->stalled_trials, r->stalled_trials == 1 ? "" : "s");
    if (r->drifted_rounds)
        printf("  WARNING  %d search round%s ran on a slower host (its control, the best earlier schedule, re-ran "
               ">= %.2fx its record; at most %.2fx): their records are kept out of the cost model; campaign.log "
               "names them\n",
               r->drifted_rounds, r->drifted_rounds == 1 ? "" : "s", LOOM_TUNE_DRIFT_RATIO, r->max_drift);
    if (r->core_line_max_ns > 0 && !r->core_line_moves)
        printf("  machine  a cache line between two cores took %.0f-%.0f ns a round trip over the campaign (the "
               "machine's state; docs/tuning.md)\n",
               r->core_line_min_ns, r->core_line_max_ns);
    if (r->core_line_moves)
        printf("  WARNING  the machine's state moved %d time%s: a cache line between two cores took %.0f-%.0f ns a "
               "round trip over the campaign (a VM's vCPUs placed elsewhere); records measured in different states "
               "are not comparable when the kernel's threads share data (each record keeps its core_line_ns)\n",
               r->core_line_moves, r->core_line_moves == 1 ? "" : "s", r->core_line_min_ns, r->core_line_max_ns);
    if (r->stalled_rounds)
        printf("  WARNING  %d re-measurement round%s stalled (the kernel's threads were descheduled in most timed "
               "runs: runtime/measure's stall check): the machine is too loaded to tell schedules apart\n",
               r->stalled_rounds, r->stalled_rounds == 1 ? "" : "s");
    if (r->noisy)
        printf("  WARNING  the machine was loaded (load average %.2f on %d cores) or a schedule's slowest round was "
               "over 2x its fastest: these timings are suspect; tune on a quiet machine\n",
               r->load_avg, r->cores);
}

/* , "remeasure": {...} of the JSON summary */
static void print_remeasured_json(const loom_tune_result *r)
{
    printf(", \"remeasure\": {\"rounds\": %d, \"load\": ", r->remeasure_rounds);
    isfinite(r->load_avg) ? printf("%.3f", r->load_avg) : printf("null");
    printf(", \"stalled_rounds\": %d, \"stalled_trials\": %d", r->stalled_rounds, r->stalled_trials);
    printf(", \"drifted_rounds\": %d, \"max_drift\": %.4g", r->drifted_rounds, r->max_drift);
    printf(", \"core_line_min_ns\": %.4g, \"core_line_max_ns\": %.4g, \"core_line_moves\": %d", r->core_line_min_ns,
           r->core_line_max_ns, r->core_line_moves);
    printf(", \"load_guard\": %s", r->load_guard ? "true" : "false");
    printf(", \"cores\": %d, \"noisy\": %s, \"undecided\": %s, \"window_changed\": %d, \"reused\": %s, "
           "\"best_is_default\": %s, \"pinned\": %d, \"default_faster\": %s, \"naive_remeasured\": %s, "
           "\"best_1thread_s\": ",
           r->cores, r->noisy ? "true" : "false", r->undecided ? "true" : "false", r->window_changed,
           r->reused ? "true" : "false", r->best_is_default ? "true" : "false", r->pinned,
           r->default_faster ? "true" : "false", r->naive_remeasured ? "true" : "false");
    isfinite(r->best_1thread_s) ? printf("%.9g", r->best_1thread_s) : printf("null");
    printf(", \"schedules\": [");
    for (int k = 0; k < r->nremeasured; k++) {
        const loom_tune_remeasured *m = &r->remeasured[k];
        printf("%s{\"schedule\": \"%016llx\", \"rank\": %d, \"default\": %s, \"chosen\": %s, \"eligible\": %s",
               k ? ", " : "", (unsigned long long)m->schedule, m->rank, m->is_default ? "true" : "false",
               m->chosen ? "true" : "false", m->eligible ? "true" : "false");
        const double v[4] = {m->sampled_s, m->min_s, m->median_s, m->max_s};
        const char *key[4] = {"sampled_s", "min_s", "median_s", "max_s"};
        for (int i = 0; i < 4; i++)
            isfinite(v[i]) ? printf(", \"%s\": %.9g", key[i], v[i]) : printf(", \"%s\": null", key[i]);
        printf(", \"failed_rounds\": %d}", m->failed_rounds);
    }
    printf("]}");
}

/* The --json summary: one object on one line. */
void cli_tune_print_json(const char *name, const loom_tune_opts *o, const loom_tune_result *r, int failed,
                       double overhead)
{
    printf("{\"workload\": \"%s\", \"target\": \"%s\", \"strategy\": \"%s\", \"trials\": %d, \"resumed\": %d, "
           "\"measured\": %d, ",
           name, r->target_fp, loom_strategy_name(o->search.strategy), r->trials, r->resumed, r->measured);
    printf("\"best_latency_s\": ");
    isfinite(r->best_latency_s) ? printf("%.9g", r->best_latency_s) : printf("null");
    printf(", \"best_gflops\": %.6g, \"default_latency_s\": ", r->best_gflops);
    isfinite(r->default_latency_s) ? printf("%.9g", r->default_latency_s) : printf("null");
    printf(", \"sampled_best_latency_s\": ");
    isfinite(r->sampled_best_latency_s) ? printf("%.9g", r->sampled_best_latency_s) : printf("null");
    print_remeasured_json(r);
    printf(", \"naive_latency_s\": ");
    isfinite(r->naive_latency_s) ? printf("%.9g", r->naive_latency_s) : printf("null");
    printf(", \"failed\": {");
    int first = 1;
    for (int s = 1; s < 16; s++)
        if (r->failed_by_status[s]) {
            printf("%s\"%s\": %d", first ? "" : ", ", loom_status_name(s), r->failed_by_status[s]);
            first = 0;
        }
    printf("}, \"failed_total\": %d, \"invalid\": %ld, \"best_trace\": ", failed, r->invalid);
    r->best_trace[0] ? printf("\"%s\"", r->best_trace) : printf("null");
    printf(", \"seconds\": {\"total\": %.3f, \"search\": %.3f, \"cost_model\": %.3f, \"compile\": %.3f, "
           "\"measure\": %.3f}, \"search_overhead\": %.4f}\n",
           r->total_s, r->search_s, r->costmodel_s, r->compile_s, r->measure_s, overhead);
}

/* --module PATH.so: the next of o's (at most 16) module libraries. */
