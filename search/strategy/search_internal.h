/* loom: the search object and the helpers the built-in strategies share
 * (search.c, candidates.c, population.c, strategy_*.c).  Not installed. */
#ifndef LOOM_SEARCH_INTERNAL_H
#define LOOM_SEARCH_INTERNAL_H

#include <gsl/gsl_randist.h>
#include <pthread.h>

#include "strategy.h"

/* phases of one generate call, for seeding work items */
/* records the local model needs before it ranks local children */
enum { LOOM__LOCAL_MODEL_MIN = 8 };
/* local-model steps tried per parent: its optimum, then random halves */
enum { LOOM__LOCAL_MODEL_STEPS = 5 };

enum { LOOM__PH_BEST = 1, LOOM__PH_SAMPLE = 2, LOOM__PH_PICK = 3, LOOM__PH_PLAN = 4, LOOM__PH_LOCAL = 5, LOOM__PH_LOCAL_MODEL = 6, LOOM__PH_SCREEN = 7, LOOM__PH_GEN = 16 };

/* A set of 64-bit hashes (open addressing; hash 0 is stored as 1). */
typedef struct loom__hset {
    uint64_t *slot; /* 0 = empty */
    size_t cap, n;
} loom__hset;

int loom__hset_has(const loom__hset *s, uint64_t h);
int loom__hset_add(loom__hset *s, uint64_t h); /* 1 added, 0 present, -1 out of memory */

struct loom_search {
    loom_search_opts o;
    const loom_program *prog;
    loom_search_env env;
    const loom_search_strategy *strategy;
    void *state;                /* the strategy's */
    int threads;
    long calls;
    loom__hset handed;          /* hashes handed out as candidates */
    gsl_rng **rngs;             /* one per worker, reseeded per work item */
    loom_schedule **scratch;    /* one per worker */
    int (*trace_hint)[2];       /* per worker: the most instructions and RVs a fresh sample of it recorded, the
                                   room its next sample's trace reserves (memory only, never the draws) */
    pthread_mutex_t lock;       /* stats */
    /* traces and schedules the loop let go of, kept for its next candidates (loom__trace_take): reused memory
       is already mapped, where a fresh malloc of ~100 KB faulted its pages in again (issue 26) */
    /* the cost model's scores of this generate call by structural hash (the model does not change within a
       call, and a row's prediction does not depend on the other rows): a schedule scored again -- a child equal
       to its parent, two equal children -- is not featurised and predicted again (issue 26) */
    struct {
        uint64_t *key;          /* 0 = empty (hash 0 stored as 1) */
        double *val;
        size_t cap, n;
        long call;              /* the generate call they belong to */
    } scores;
    pthread_mutex_t pool_lock;
    loom_trace **tpool;
    loom_schedule **spool;
    int ntpool, nspool, pool_cap;
    loom_search_stats st;
    /* Where the last warm round's candidates came from (population.c; search.h local_share_won): their
       hashes, 1 in `model` for the cost model's picks, 0 for local exploration's; the best measured latency
       before that round (0: none); and whether the cost model's picks made that round's best measured
       schedule and improved on best_before. */
    struct {
        uint64_t *hash;
        unsigned char *model;
        int n, cap;
        double best_before;
        int model_won;
    } credit;
    const char *const *rules;
    int nrules;
};

/* The best measured traces (env.best_measured, init_measured_ratio of the
 * population), replayed and validated in parallel into pop[0..*npop).
 * Times go to st.sample_s. */
loom_status loom__replay_measured(loom_search *s, loom_candidate *pop, int *npop, loom_error *err);

/* Cost-model scores of c[0..n) into c[i].score (non-finite -> 0). */
loom_status loom__score_all(loom_search *s, loom_candidate *c, int n, loom_error *err);

/* A deep copy of src into dst (0), or -1 (dst zeroed) when out of memory;
 * its memory from s's pool (loom__trace_take). */
int loom__copy_candidate(loom_search *s, const loom_candidate *src, loom_candidate *dst);

/* An empty trace / an uninitialised schedule for a new candidate: one the
 * search let go of (loom__recycle), else a new one; NULL when out of
 * memory.  Thread-safe.  What a candidate holds never depends on which. */
loom_trace *loom__trace_take(loom_search *s);
loom_schedule *loom__schedule_take(loom_search *s);

/* Let go of t and sch (either may be NULL): kept for loom__trace_take /
 * loom__schedule_take while the pool holds fewer than pool_cap of each,
 * else freed.  Thread-safe. */
void loom__recycle_parts(loom_search *s, loom_trace *t, loom_schedule *sch);

/* loom__recycle_parts of c's trace and schedule; c is emptied. */
void loom__recycle(loom_search *s, loom_candidate *c);

/* The k best-scored distinct unmeasured candidates seen (a sorted array:
 * k <= ~100); owned copies. */
typedef struct loom__topk {
    int k, n;
    loom_candidate *c; /* best first */
    loom__hset seen;
} loom__topk;

void loom__topk_push(loom_search *s, loom__topk *h, const loom_candidate *c);

/* Mutator weights that make every sampling instruction of t that an
 * enabled kind of `base` can change equally likely: kind k weighs the
 * number of such instructions (pins kept from base). */
loom_mutator_weights loom__instruction_weights(const loom_trace *t, const loom_mutator_weights *base);

/* The batch: the heap's best (1 - eps of n), then random fresh samples (a
 * permutation seeded from (call, PH_PICK, salt)) up to n; all taken with
 * loom_search_take.  Moves what it picks out of h / fresh into out (a
 * fresh entry k with shared[k] set -- its trace and schedule belong to a
 * population member -- is deep-copied instead, and its slot emptied);
 * returns the count.  h and shared may be NULL. */
int loom__pick(loom_search *s, long call, int salt, loom__topk *h, double eps, loom_candidate *fresh,
               unsigned char *shared, int nfresh, int n, loom_candidate *out);

/* One generation of the population strategies. */
typedef struct loom__generation {
    loom_search *s;
    long call;
    int g;
    loom_candidate *pop;   /* parents */
    int npop;
    loom_candidate *kids;  /* kids[i].trace == NULL: no valid child */
    int *parent;           /* planned parent of kid i */
    int *copy;             /* NULL, or 1: kid i is a copy of its parent (no mutation) */
    int *copybuf;          /* npop ints plan may use as copy */
    gsl_ran_discrete_t *roulette; /* NULL, or a parent redrawn from it after a failed mutation */
    int by_instruction;    /* 1: mutate each sampling instruction equally likely (search.h) */
    /* the round's fresh samples (population.c): fresh[k] with shared[k] set is the same trace and
       schedule as population member pop[i] whose fresh_of[i] == k (no copy until pop[i] leaves) */
    loom_candidate *fresh;
    unsigned char *shared;
    int *fresh_of;
} loom__generation;

/* Free population member g->pop[i] (advance replaced it), or, when a
 * fresh sample shares it, hand it to that fresh entry; g->pop[i] is left
 * empty.  Every advance removes members this way, never by
 * loom_candidate_free. */
void loom__retire(loom__generation *g, int i);

/* How a population strategy differs: plan sets parent[] (and copy,
 * roulette) before the mutations; advance forms the next population from
 * the scored kids (and may change npop).  Kids it keeps it moves out of
 * g->kids; the driver frees the rest. */
typedef struct loom__population_ops {
    loom_status (*plan)(loom__generation *g, loom_error *err);
    loom_status (*advance)(loom__generation *g, loom_error *err);
    /* 1: loom's additions to the MetaSchedule loop (search.h, evolutionary):
     * local exploration of the best measured schedules, mutation by
     * instruction */
    int extended;
} loom__population_ops;

/* Option rows (search.h loom_search_option), for the strategies' tables. */
#define LOOM__OPT(name, field, kind, def, lo, hi, flag, doc)                                                        \
    {name, #field, offsetof(loom_search_opts, field), LOOM_OPTION_##kind, def, lo, hi, 0, {{0, 0}, {0, 0}}, flag, doc}
#define LOOM__OPT_END {0}

/* The options of the population loop (population.c), read by every
 * strategy built on loom__population_generate. */
extern const loom_search_option loom__population_options[];

/* The evolutionary loop the population strategies share (search.h):
 * measured + fresh population, warm-up picks, `generations` rounds of
 * plan / mutate / score / advance, then the batch from the top-k heap and
 * eps-greedy fresh samples. */
loom_status loom__population_generate(loom_search *s, const loom__population_ops *ops, long call, int n,
                                      loom_candidate *res, int *nout, loom_error *err);

/* Up to n distinct (by loom_schedule_hash) schedules of the design space sp
 * that loom_validate accepts under lim, from at most 20n draws of an
 * MT19937 generator seeded with `seed` (GSL): *m of them in schs[0..*m).
 * Slots of schs that are NULL are malloc'ed here (the caller frees every
 * non-NULL slot, drawn or not).  Used by the simulator pre-training of
 * campaigns (tune_pretrain.c) and of plan scores (plan_model.c).
 * Errors: LOOM_ERR_NOMEM. */
struct loom_space;
loom_status loom__draw_distinct_valid(const loom_program *prog, const struct loom_space *sp, const loom_limits *lim,
                                      unsigned long seed, int n, loom_schedule **schs, int *m, loom_error *err);

#endif
