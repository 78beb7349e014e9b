/* loom: what a search strategy may use of the search object (search.h
 * "loom_search_strategy"; one strategy per file, search/strategy_*.c).
 *
 * A strategy's generate call fills out[0..n) with new candidates.  The
 * building blocks below keep every strategy's candidates deterministic in
 * the seed (each work item draws from its own generator, seeded from
 * (seed, call, phase, item): see loom_search_rng) and distinct (a candidate
 * is handed out through loom_search_take, which refuses what was measured
 * or handed out before).
 */
#ifndef LOOM_SEARCH_STRATEGY_H
#define LOOM_SEARCH_STRATEGY_H

#include <gsl/gsl_rng.h>

#include "search.h"

/* The search's options and environment (as given to loom_search_new). */
const loom_search_opts *loom_search_options(const loom_search *s);
const loom_search_env *loom_search_environment(const loom_search *s);

/* The search's worker thread count (>= 1). */
int loom_search_threads(const loom_search *s);

/* Worker `worker`'s generator, reseeded for work item i of phase `phase`
 * of generate call `call` (loom_seed_mix of the search seed and the three).
 * Owned by the search; valid until the next call for the same worker. */
gsl_rng *loom_search_rng(loom_search *s, int worker, long call, int phase, int i);

/* n fresh samples of the design space on the search's threads, sample i
 * seeded from (call, phase, i); the valid ones (replayed, validated against
 * the options' limits) are moved to out[0..m) and m returned; out[m..n) are
 * zeroed.  The caller owns out[0..m) (loom_candidate_free).  Counts go to
 * the stats.  Returns -1 (err set) when a worker thread cannot start. */
int loom_search_sample(loom_search *s, long call, int phase, int n, loom_candidate *out, loom_error *err);

/* 1 when c may be handed out (not measured, not handed out before): c's
 * hash is then marked handed out and the caller moves c into its batch;
 * else 0 and nothing changes. */
int loom_search_take(loom_search *s, const loom_candidate *c);

/* The counters, for a strategy to update (not thread-safe). */
loom_search_stats *loom_search_stats_mut(loom_search *s);

#endif
