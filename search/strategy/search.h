/* loom: search strategies -- where measure candidates come from (DESIGN.md
 * "Search"; MetaSchedule's SearchStrategy interface: generate a batch of
 * measure candidates, then take their results).
 *
 * Three strategies behind one interface (a table, loom_search_strategy
 * below; one file each, search/strategy_*.c):
 *
 *   evolutionary (default): MetaSchedule's EvolutionarySearch loop
 *     (evolutionary_search.cc, see ../shared/research/metaschedule.md
 *     section 4) with a real Metropolis-Hastings step.  Each call to
 *     loom_search_generate builds a population of `population` traces: the
 *     best measured ones (init_measured_ratio of it, replayed) plus fresh
 *     samples of the design space; then `generations` rounds in which every
 *     member is a Markov chain: a mutator proposes a child (mutator.h),
 *     the cost model scores the children, and each child replaces its
 *     parent with probability min(1, exp((s' - s) / T)) (Metropolis et al.
 *     1953; Hastings 1970; symmetric proposals assumed).  T is annealed
 *     geometrically: T_g = t0 * t_decay^g for generation g = 0, 1, ...
 *     (defaults t0 = 0.05, t_decay = 0.5: scores are predicted normalised
 *     throughputs in [0, 1], so at g = 0 a child 0.05 worse is accepted
 *     with probability 1/e, at g = 3 with e^-8).  Every scored candidate
 *     that is not measured yet enters a top-k heap; the batch is the heap's
 *     best (1 - eps_greedy) plus eps_greedy random fresh samples, all
 *     distinct by structural hash (loom_schedule_hash) and never measured
 *     before.  While the cost model is untrained (env.model_ready) the
 *     whole batch is fresh samples and the generations are skipped: a
 *     random model's ranking is noise, and evolving against it is not
 *     neutral -- the heap holds one copy per distinct schedule, so a
 *     branch of the design space with few distinct schedules (a fused
 *     attention chain ignores most of the unfused branch's tiling
 *     decisions) is drowned by a branch with many; fresh samples keep the
 *     design space's own probabilities (the module's SampleCategorical
 *     weights).  A deviation from MetaSchedule, which evolves against its
 *     random warm-up model.
 *     Two additions to that loop (docs/tuning.md): most of each batch
 *     is local exploration of the best measured schedules -- their
 *     crossovers and one-decision mutants, ranked by an additive model of
 *     the measured latencies over the decisions (local_model.h) -- and
 *     the chains mutate every sampling instruction with equal odds
 *     (mutate_by_instruction).  Both off, it is the loop above.
 *   metaschedule: the same loop exactly as MetaSchedule does it: parents
 *     drawn by roulette on their scores, mutated with probability
 *     mutate_prob (else copied, once per parent and generation), the child
 *     kept if it replays and validates (no score test, no temperature).
 *   random: fresh samples of the design space (MetaSchedule's ReplayTrace).
 *
 * Defaults are MetaSchedule's (population 512, init_measured_ratio 0.2,
 * init_min_unmeasured 50, max_fail_count 5, 4 generations, mutate_prob
 * 0.85, genetic_max_fail_count 10, eps_greedy 0.05).
 *
 * Parallelism and determinism.  Sampling, mutation, replay, validation and
 * scoring run on `threads` pthreads.  The random stream of work item i of
 * phase p of call c is its own GSL generator seeded from (seed, c, p, i),
 * so the candidates depend on the seed only, never on thread timing.
 */
#ifndef LOOM_SEARCH_H
#define LOOM_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "../../traces/trace.h"
#include "../../traces/validate.h"
#include "mutator.h"

/* The built-in strategies: their indices in the strategy table (below).
 * A strategy registered with loom_strategy_register gets the next index;
 * loom_search_opts.strategy holds any index of the table. */
typedef enum loom_strategy_kind {
    LOOM_STRATEGY_EVOLUTIONARY = 0,
    LOOM_STRATEGY_METASCHEDULE,
    LOOM_STRATEGY_RANDOM
} loom_strategy_kind;

/* The name of strategy k ("evolutionary", "metaschedule", "random", or a
 * registered one's); NULL when k is not in the table. */
const char *loom_strategy_name(loom_strategy_kind k);

/* The index of the strategy called `name`, or -1 when none is. */
int loom_strategy_find(const char *name);

/* The known names, comma-separated in table order ("evolutionary,
 * metaschedule, random"), into buf (truncated to n - 1 characters). For
 * error messages. */
void loom_strategy_list(char *buf, size_t n);

/* ---- strategy options: one row per option ------------------------------ */

/* How an option's value is given and checked (loom_search_option.kind). */
typedef enum loom_option_kind {
    LOOM_OPTION_INT = 0,   /* an int field in lo..hi */
    LOOM_OPTION_REAL,      /* a double field in lo..hi (lo itself excluded when lo_open) */
    LOOM_OPTION_SHARE,     /* a double field in [0, 1] */
    LOOM_OPTION_BOOL,      /* an int field, 0 or 1 */
    LOOM_OPTION_CHOICE,    /* an int field: the value of one of the words in choices */
} loom_option_kind;

typedef struct loom_option_choice {
    const char *word;      /* as --NAME takes it */
    int value;
} loom_option_choice;

/* One option of a strategy: a field of loom_search_opts, its default, its
 * range and its doc.  A list of them ends with a row whose name is NULL. */
typedef struct loom_search_option {
    const char *name;      /* "local-share": `loom tune --local-share` when flag */
    const char *field;     /* the loom_search_opts member, "local_share" */
    size_t offset;         /* offsetof(loom_search_opts, member) */
    loom_option_kind kind;
    double def;            /* the default (loom_search_defaults) */
    double lo, hi;         /* INT, REAL: the range loom_search_new accepts */
    int lo_open;           /* REAL: lo itself is refused */
    loom_option_choice choices[2]; /* CHOICE */
    int flag;              /* 1: `loom tune --NAME VALUE` sets it (0: set by the library caller only, or a flag
                              loom tune parses itself: --population, --generations) */
    const char *doc;       /* one line */
} loom_search_option;

typedef struct loom_search_opts loom_search_opts;

/* The value of option R in *o, as a double (ints converted). */
double loom_search_option_get(const loom_search_opts *o, const loom_search_option *R);

/* Set option R of *o to x (an int option takes (int)x).  No range check:
 * loom_search_new checks. */
void loom_search_option_set(loom_search_opts *o, const loom_search_option *R, double x);

/* 1 when x is a value option R accepts (its range, 0/1, one of its choices' values). */
int loom_search_option_ok(const loom_search_option *R, double x);

/* A search strategy (MetaSchedule's SearchStrategy): one file each,
 * search/strategy_*.c; search/strategy/strategy.h holds what a strategy may use of
 * the search object. */
typedef struct loom_search loom_search;
typedef struct loom_candidate loom_candidate;
typedef struct loom_search_strategy {
    const char *name;     /* as --strategy takes it; unique */
    int needs_model;      /* 1: the environment must have a cost model (score) */
    /* Per-search state, made by loom_search_new; NULL: no state. */
    loom_status (*init)(loom_search *s, void **state, loom_error *err);
    /* Up to n new candidates into out[0..*nout) (out is zeroed, n > 0),
     * each handed out with loom_search_take; call is the number of earlier
     * generate calls (for seeding).  On error the search frees out[0..*nout). */
    loom_status (*generate)(loom_search *s, void *state, long call, int n, loom_candidate *out, int *nout,
                            loom_error *err);
    /* Frees init's state; NULL: none. */
    void (*free)(void *state);
    const char *doc;      /* one line (loom tune --help); NULL: none */
    /* The options it reads, as lists of rows (each ending with a NULL
     * name), the list of lists ending with NULL; NULL: none.  Their rows
     * give loom_search_defaults its values and loom_search_new its checks;
     * `loom tune --help` and docs/tuning.md list them per strategy.  A list
     * may be shared (the population loop's, by evolutionary and
     * metaschedule). */
    const loom_search_option *const *options;
} loom_search_strategy;

/* Number of strategies in the table, and strategy k (NULL out of range). */
int loom_strategy_count(void);
const loom_search_strategy *loom_strategy_get(int k);

/* Append a strategy to the table (kept by pointer: it must outlive every
 * search that uses it); *k receives its index.  Not thread-safe: register
 * before any search starts.  Errors: LOOM_ERR_INVALID (no name or no
 * generate, or the name is taken), LOOM_ERR_NOMEM (the table holds 16). */
loom_status loom_strategy_register(const loom_search_strategy *st, int *k, loom_error *err);

struct loom_search_opts {
    loom_strategy_kind strategy;
    uint64_t seed;
    int population;             /* 512 */
    double init_measured_ratio; /* 0.2 */
    int init_min_unmeasured;    /* 50 */
    int max_fail_count;         /* 5 sampling rounds without a valid sample */
    int generations;            /* 4 */
    double mutate_prob;         /* 0.85 (metaschedule) */
    int genetic_max_fail_count; /* 10 */
    double eps_greedy;          /* 0.05 */
    double t0, t_decay;         /* 0.05, 0.5 (evolutionary) */
    /* Local exploration (evolutionary only; docs/tuning.md "Local
     * exploration").  The first round(share x n) of a batch of n are
     * children of the best local_parents measured schedules: crossovers of
     * two of them (share local_crossover; mutator.h loom_crossover_trace)
     * or one-decision mutants of one (every sampling instruction equally
     * likely), never measured or handed out before.  With local_model and
     * at least 8 measured records of the best one's trace structure (and
     * an env.best_measured_latency), the local model (local_model.h) is
     * fitted on them: its own optimum near each parent and random halves
     * of it join local_pool x (the slots) children drawn as above, and the
     * predicted fastest fill the slots (a decision value no record has is
     * predicted average).  Without the model the slots take the children
     * in draw order.  The cost model does not rank them: near
     * the measured optimum its ranking measured worse than draw order.
     * share is local_share once the local model is fitted (or when
     * local_model is 0), local_share_cold before (local_share 0 turns
     * local exploration off, whatever local_share_cold): by default round 0 (the
     * default schedule alone measured) is one-decision mutants of the
     * default, a screening design from which the local model's first
     * combined step comes, but for the fresh branches (fresh_share_cold
     * below, taken out of this share); later rounds leave 1/8 of the batch to the
     * cost model's chains, 3/4 after a round they won (local_share_won
     * below), and a round whose best has fewer distinct valid children
     * than slots leaves the rest to them too.  Measured on bench_search_sim.sh (6 seeds,
     * geometric mean trials to 95%; local_share / local_share_cold):
     * 0.75 / 0.75 24.7, 1 / 0.75 23.5, 0.875 / 0.75 23.6, 1 / 0.5 27.3,
     * 1 / 1 21.4, 0.75 / 1 21.9, 0.875 / 1 21.3 (docs/tuning.md, fifth
     * run). */
    double local_share;         /* 0.875 (0: none, the MetaSchedule loop) */
    double local_share_cold;    /* 1 */
    /* The local share of a warm round (the local model fitted) that
     * follows one whose best measured candidate was one of the cost
     * model's picks and faster than every schedule of the space measured
     * before that round (a foreign default, env.foreign_hash, is not one:
     * it is no parent of local exploration either): the cost model found
     * a better region than the neighbourhood
     * of the best, so it gets more of the batch while it keeps doing so
     * (local_share again once a round's best is local, or improves
     * nothing).  An adaptive operator allocation in the manner of
     * Thierens' adaptive pursuit (GECCO 2005), with two operators and the
     * round's best as the reward.  The credit is kept in the search
     * object: a resumed campaign starts from local_share.  Measured on
     * bench/bench_suite.sh (128 trials, six seeds; docs/tuning.md "The cost
     * model's share after it won a round"): 0.875 (off) -> 0.25 took
     * trials to 95% GEMM 11.6 -> 10.9 and SAGE2 103.6 -> 101.6, the other
     * families unchanged; 0.5 the same but SAGE2. */
    double local_share_won;     /* 0.25 */
    /* A foreign default (env.foreign_hash: modules/default.c's schedule,
     * not a trace of the space, as for attention) is no parent of local
     * exploration in round 0, whose local slots are fresh branch samples
     * (fresh_share above).  From round 1 on, while it is still the fastest
     * measured schedule, it is the first parent: its one-decision mutants
     * (new tiles of its own chain: valid schedules, measured as any other)
     * are the nearest candidates to the best one.  On sim:spr-2c attention
     * 12 x 64 x 64 every schedule within 95% of the best known is such a
     * mutant (the default 389 us, the best known 380 us; the space's own
     * draws, all carrying attention-fusion's decision, are 401 us at best
     * there).  Where the space beats the default in round 0 (the CPU's
     * 12 x 512 x 64, causal, band) nothing changes.  Measured on
     * bench/bench_suite.sh (128 trials, six seeds; docs/tuning.md "A
     * foreign default as a parent"): attention 9.7 -> 4.9 trials to 95%
     * (12 x 64 x 64 81-129 -> 20-44), band and causal unchanged. */
    int foreign_parent;         /* 1 */
    /* Structural coverage (evolutionary only; docs/tuning.md "Fresh
     * branches").  Of every batch, round(fresh_share x n) slots (taken
     * from the local share) are fresh samples of the design space picked
     * one per structural branch (loom_search_branch_key: which stages are
     * inlined, computed at which stage, rolled into a running max, packed,
     * cached, split-K or rfactored), the branches with the fewest measured
     * records first, each branch's samples in draw order; in a cold round
     * (the local share is local_share_cold) fresh_share_cold instead.
     * When the only measured schedules are outside the design space
     * (env.foreign_hash: modules/default.c's default, as for attention),
     * every local slot is such a fresh sample: mutants of a schedule the
     * space cannot express never reach its other branches (a 48-trial
     * attention campaign measured 0 fused schedules that way). */
    double fresh_share;         /* 0 */
    double fresh_share_cold;    /* 0: 0.125 (2 of 16) measured worse on SpMM (Cora F = 128, PubMed
                                   F = 128 and 32: 16 -> 33, 16 -> 33, 17 -> 21 trials to 95%) and
                                   better on no case of bench/bench_suite.sh (docs/tuning.md, suite
                                   of 2026-11-28); the foreign-default rule above is on whatever
                                   the share */
    int local_parents;          /* 4 */
    double local_crossover;     /* 0.5 */
    int local_model;            /* 1 */
    int local_pool;             /* 8 */
    /* With a trained cost model, the fresh branch samples above (fresh_share,
     * and every local slot while the only measured schedule is a foreign
     * default) are taken from each branch in the model's order, its highest
     * score first, instead of in draw order.  Only the attention chains'
     * campaigns (a foreign default) draw such samples by default.  Measured
     * on bench/bench_suite.sh (128 trials, twelve seeds of band and causal,
     * six of attention; docs/tuning.md "Screening"): trials to 95% band
     * 57.5 -> 28.1, causal 89.9 -> 70.7, attention 1.9 -> 1.4. */
    int fresh_rank;             /* 1 */
    /* Screening (evolutionary only): once the local model is fitted, this
     * share of the local slots (round(local_screen x slots)) goes to
     * one-decision mutants of the best measured schedule that set a
     * decision to a value no fitted record holds (which ones:
     * local_screen_rank below), and the rest to the children the local
     * model ranks first.  The model
     * predicts an unseen value as average, so without this share its
     * optimum only ever combines values measured already: a decision no
     * round varied (a prefetch distance, an unroll factor) stays at the
     * parent's value for the whole campaign.  Measured on
     * bench/bench_suite.sh (128 trials, batch 16; docs/tuning.md
     * "Screening"): 0 -> 0.25 took trials to 95% from 12.4 to 12.0 over 6
     * seeds, sooner or the same on every family (GCN2 53.2 -> 40.9, SAGE2
     * 102.3 -> 96.5 over 12 seeds); 0.5 was later on GCN2 and GEMM. */
    double local_screen;        /* 0.25 */
    /* With a trained (pre-trained) cost model, screening draws
     * local_pool x its slots of such mutants and takes the ones the cost
     * model scores highest (ties: fewest-varied instruction, then draw
     * order); 0, or without a trained model: fewest-varied instruction
     * first, then draw order.  Which unseen value to try is a question
     * about the whole space, the one the model was trained on; near the
     * optimum its ranking of measured neighbours was no better than
     * chance (local_model above).  Measured on
     * bench/bench_suite.sh (128 trials; docs/tuning.md "Screening in the
     * cost model's order"): trials to 95% SAGE2 96.5 -> 82.4, GCN2 43.7 ->
     * 43.3, GEMM 9.1 -> 8.5 (twelve seeds), the other families unchanged
     * (six seeds); the score only as a tie-break inside the fewest-varied
     * tier was later on GEMM (9.1 -> 9.5). */
    int local_screen_rank;      /* 1 */
    /* In a cold round (the local model not fitted yet, as round 0) with a
     * trained cost model (pre-training, env.model_ready), local_pool x
     * (the slots) children are drawn and the cost model's predicted
     * fastest fill the slots, in its order; 0: draw order.  Off by
     * default: on bench/bench_suite.sh pre-trained (docs/tuning.md, "Suite
     * for defaults with pre-training") it reached 95% sooner on SDDMM
     * (11.7 -> 2.2-3.4 trials) and later on GEMM, band, causal and GCN2. */
    int local_cold_rank;        /* 0 */
    /* In a cold round with a trained cost model, the local part (the
     * children and fresh branch samples, the same ones as without it) is
     * measured in the cost model's order, its predicted fastest first, and
     * the model's own picks of the round before it; 0: draw order, the
     * local part first.  The round measures the same set either way: only
     * how soon within the round a good schedule is measured depends on it.
     * On by default: on bench/bench_suite.sh, 128 trials (docs/tuning.md,
     * "Suite for defaults, 128 trials"), trials to 95% 19.1 -> 13.5
     * (geometric mean), sooner or the same on every family. */
    int local_cold_order;       /* 1 */
    /* Evolutionary only: 1 = a chain's mutation picks the instruction to
     * change uniformly among the trace's sampling instructions (each kind
     * weighted by its count in the trace), instead of kind by kind with
     * the `mutators` weights (MetaSchedule's, made for dense spaces of
     * tile sizes: in loom's sparse spaces most decisions are
     * categoricals). */
    int mutate_by_instruction;  /* 1 */
    int threads;                /* 0: online cores */
    loom_mutator_weights mutators;
    loom_limits limits;         /* for the validator: the target's (a campaign sets its target
                                   handle's, search/tune/tune.h) */
};

/* MetaSchedule's defaults (above): every built-in strategy's option rows'
 * defaults; seed 1, the evolutionary strategy, the CPU target's limits
 * (runtime/machine/machine.h loom_target_cpu_limits), CPU mutator weights. */
loom_search_opts loom_search_defaults(void);

/* What the search needs from its caller (the tuner). Every function may be
 * called from several threads at once except where noted. */
typedef struct loom_search_env {
    void *ctx;
    /* Run the design space on a freshly initialised schedule that has an
     * rng and a recorder (every choice a sampling instruction). */
    loom_status (*sample)(void *ctx, loom_schedule *sch, loom_error *err);
    /* Scores (higher = predicted faster) of n valid schedules.  Called from
     * one thread at a time. */
    loom_status (*score)(void *ctx, const loom_schedule *const *schs, int n, double *scores, loom_error *err);
    /* 1 if a schedule with this structural hash was measured already. */
    int (*is_measured)(void *ctx, uint64_t hash);
    /* Up to k best measured traces, best first: *out receives a malloc'd
     * array of traces the search frees (loom_trace_free and free).  Called
     * from one thread.  May be NULL. */
    int (*best_measured)(void *ctx, int k, loom_trace ***out);
    /* As best_measured, and *lat a malloc'd array (the search frees it) of
     * each trace's measured latency in seconds.  Used instead of
     * best_measured when set.  May be NULL: the evolutionary strategy's
     * local model (search.h local_model) is then never fitted. */
    int (*best_measured_latency)(void *ctx, int k, loom_trace ***out, double **lat);
    /* 0 while the cost model is in its warm-up (untrained: its scores are
     * random), else 1.  Called from one thread.  May be NULL (always 1).
     * During warm-up the evolutionary and metaschedule strategies pick the
     * batch from the fresh samples in draw order (eps-greedy's random
     * picks, as if eps_greedy were 1) and skip the generations, evolving
     * only when the fresh samples hold fewer than n new schedules. */
    int (*model_ready)(void *ctx);
    /* The structural hash (loom_schedule_hash) of a measured schedule that
     * is not a trace of the design space (the campaign's default when it
     * is modules/default.c's), or 0: local exploration does not take it
     * as a parent (search.h fresh_share). */
    uint64_t foreign_hash;
} loom_search_env;

/* One measure candidate: a valid schedule, its trace and score. */
struct loom_candidate {
    loom_trace *trace;     /* owned */
    loom_schedule *sch;    /* owned (malloc'd) */
    uint64_t hash;         /* loom_schedule_hash(sch) */
    double score;          /* the cost model's, when scored */
    double latency_s;      /* measured seconds (a replayed measured trace), else 0 */
};

void loom_candidate_free(loom_candidate *c);   /* frees the members, not c */

/* Counters across the search's life. */
typedef struct loom_search_stats {
    long sampled, sample_invalid, sample_failed;   /* fresh samples */
    long mutated, mutate_invalid, mutate_failed;   /* mutation attempts */
    long accepted, rejected;                       /* MH decisions */
    long scored;
    long warmup_picked;                            /* batch members picked fresh in warm-up */
    long local_mutants, local_crossovers;          /* batch members from local exploration */
    long local_model_steps;                        /* ... of them the local model's own optimum (or half of it) */
    long local_screened;                           /* ... of the mutants, screening ones (local_screen) */
    long screen_ranked;                            /* rounds whose screening mutants the cost model ordered */
    long fresh_ranked;                             /* rounds whose fresh branch samples the cost model ranked */
    long local_model_fits;                         /* rounds whose local children the local model ranked */
    long local_cold_ranked;                        /* cold rounds whose local children the cost model ranked */
    long model_won_rounds;                         /* warm rounds after one the cost model's picks won (local_share_won) */
    long fresh_branch_picks;                       /* batch members picked fresh, one per structural branch */
    long fresh_branches;                           /* distinct branches seen among those rounds' fresh samples (sum) */
    long invalid_by_rule[LOOM_VALIDATE_MAX_RULES];  /* indexed as loom_validator_rules */
    double sample_s, mutate_s, score_s;            /* wall seconds in each phase */
} loom_search_stats;

/* A new search for a bound program with strategy o->strategy.  Errors:
 * LOOM_ERR_INVALID (bad options or env, a strategy not in the table),
 * LOOM_ERR_NOMEM, the strategy's init error. */
loom_status loom_search_new(const loom_search_opts *o, const loom_program *prog, const loom_search_env *env,
                            loom_search **out, loom_error *err);
void loom_search_free(loom_search *s);

/* Up to n new measure candidates (valid, distinct, not measured and not
 * handed out before).  *out is a malloc'd array of *nout candidates; the
 * caller frees each with loom_candidate_free, then the array.  *nout == 0
 * means the design space yields nothing new (the caller counts empty
 * rounds; MetaSchedule stops after 5).  Errors: LOOM_ERR_NOMEM, a scoring
 * failure, LOOM_ERR_RUN when a worker thread cannot start. */
loom_status loom_search_generate(loom_search *s, int n, loom_candidate **out, int *nout, loom_error *err);

const loom_search_stats *loom_search_get_stats(const loom_search *s);

/* The structural branch of a schedule: a hash of, per stage, where it is
 * computed (root, inlined, or at which stage's loop, before or after),
 * whether it keeps a workspace (CacheWrite), a packed panel (PackPanel:
 * which operand), rfactor partials, a rolling update (RollingUpdate), a
 * split-K factor above 1 and its fusion-group decision -- not tiles, loop
 * orders or annotations.  Fused and unfused attention, two fusion groups
 * of a GNN layer, a packed and an unpacked GEMM differ; two tilings of one
 * branch do not.  Never 0. */
uint64_t loom_search_branch_key(const loom_schedule *sch);

/* The Metropolis-Hastings acceptance test: 1 when u < min(1, exp((s_new -
 * s_old) / T)), for u uniform in [0, 1); T <= 0 accepts only s_new >=
 * s_old. */
int loom_mh_accept(double s_old, double s_new, double T, double u);

/* The annealed temperature of generation g: t0 * t_decay^g. */
double loom_mh_temperature(const loom_search_opts *o, int g);

/* Run fn(ctx, i, worker) for i in [0, n) on `threads` pthreads (<= 1:
 * inline).  Worker ids are 0..threads-1.  Returns LOOM_OK, or
 * LOOM_ERR_RUN when no thread could start. */
loom_status loom_parallel_for(int n, int threads, void (*fn)(void *ctx, int i, int worker), void *ctx,
                              loom_error *err);

/* A 64-bit seed for work item (a, b, c) of a campaign seeded `seed`
 * (SplitMix64 finaliser; Steele, Lea, Flood, OOPSLA 2014). */
uint64_t loom_seed_mix(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);

#endif
