/* loom: feature extraction for the cost model (DESIGN.md "Cost model").
 *
 * A lowered kernel (LIR) becomes one fixed-width row of D floats, the input
 * of the XGBoost model.  The features follow MetaSchedule's per-store
 * feature groups (TVM src/meta_schedule/feature_extractor/
 * per_store_feature.cc; Shao et al., NeurIPS 2022, and Ansor, Zheng et al.,
 * OSDI 2020, section 5.2) adapted to loom's LIR, plus sparse groups
 * (position loops, gathers, nonzeros per row, operational intensity:
 * AutoSparse, Lacouture et al. 2025).
 *
 * Stores.  A *store* is an LIR statement that computes a float: a STORE
 * into a buffer or an ASSIGN (LET) of a float local (a reduction
 * accumulator), whose value is not a constant (MetaSchedule also skips
 * stores of constants; FILLs are counted in the kernel group).  Each store
 * gets one vector of 72 raw values (below), computed in its loop nest: the
 * enclosing FOR/WHILE loops, each with an estimated trip count, and the
 * guards (IF) around it, each with an estimated probability.
 *
 * Trip counts.  Bounds are evaluated abstractly: every local has a mean
 * value and a linear part over the enclosing loops (coefficient per loop),
 * a loop variable is uniform over [lo, hi) at the means of its bounds, and
 * the trip count of a FOR is mean(hi) - mean(lo) (>= 0).  Sizes come from
 * the data statistics.  Position loops are data-dependent: pos[l][s] is
 * modelled as s * mean(entries per segment of level l), so a loop over
 * pos[q] .. pos[q+1] runs mean(entries per segment) times (nonzeros per row
 * for CSR), a position split's chunk loop ceil-free (len + f - 1) / f times
 * with its guard p < end passing len / (chunks * f) of the time; coordinates
 * crd[l][p] are uniform over the level's dimension.  A coiteration WHILE of
 * K lists of mean lengths len_k over a dimension of n runs
 * sum(len_k) - matches times, matches = prod(len_k) / n^(K-1) (independent
 * uniform patterns), and its "all coordinates equal" IF passes
 * matches / trips of the time.  A guard a < b (<=, >, >=) passes the
 * fraction of integer points of d = b - a, uniform over
 * mean(d) +- (sum over loops of |coef| * (trip - 1) / 2 + spread of the
 * gathered coordinates in it), that satisfy it: exact for split overhang
 * guards (E / (tiles * factor)) and position-split guards.
 *
 * Per-store vector (72 values; `sK.` names, K = slot):
 *  Group 1, arithmetic (MetaSchedule ArithOps), each weighted by the store's
 *   executions (product of trip counts x guard probability):
 *   flops (float ops: sum of the next five), f_addsub (+ - neg), f_mul,
 *   f_div, f_minmax (min, max, float comparisons), f_math (exp, sqrt),
 *   i_addsub, i_mul, i_div, i_cmp (integer comparisons, min, max), bool_op.
 *  Loop structure (MetaSchedule ForKindFeature, condensed): n_loops,
 *   n_reduce_loops (loops the written location does not vary with; for an
 *   accumulator, the loops opened after its declaration), inner_trip,
 *   vec_prod / par_prod (product of the trips of vectorized / parallel
 *   loops, 0 when there are none), unroll_max (largest unroll factor, at
 *   most the loop's trip; a factor of 0 in the LIR counts as 4, code
 *   generation's default), vec_pos / par_pos / unroll_pos: where such
 *   loops are, coded 0 none, 1 inner spatial, 2 middle spatial, 3 outer spatial, 4 inner
 *   reduce, 5 middle reduce, 6 outer reduce, 7 mixed (MetaSchedule's
 *   8-way one-hot as one ordinal).
 *  Group 2, buffers: the store's accesses (its loads and the written
 *   buffer; repeated accesses of one buffer merged), the 3 with the most
 *   bytes (ties: buffer order), each: access (0 read, 1 write, 2 both),
 *   bytes (accessed, with repeats), unique_bytes (footprint: elements
 *   reachable from the loops the index varies with, capped at the buffer's
 *   size), lines (64-byte cache lines touched, consecutive accesses of one
 *   line counted once, from the stride of the innermost loop the index
 *   varies with), unique_lines, stride (elements per iteration of that
 *   loop; through a gather: coefficient x mean coordinate gap of the
 *   gathered level), gather (1 if the index goes through a crd load),
 *   reuse_type, the first that applies: 1 loop-multiple-read (the innermost
 *   enclosing loop of trip > 1 that does not move the index), 2 read-modify-
 *   write (the store reads and writes the buffer), 3 gather reuse
 *   (gathered coordinates repeat across rows: accesses > unique), 0 none;
 *   reuse_dis_bytes (type 1: bytes all the store's accesses touch inside
 *   that loop, MetaSchedule's reuse distance; else 0), reuse_ct (type 1:
 *   the loop's trip; 2: 1; 3: accesses / unique elements).
 *  Group 3, arithmetic intensity curve (10 values): with loops added from
 *   the innermost outward, flops(d) and unique bytes(d) of the subtree;
 *   sample k = 1..10 is flops/bytes interpolated where log2 flops reaches
 *   k/10 of its total (MetaSchedule's curve).
 *  Group 4, allocation: alloc_kind of the written storage (0 tensor
 *   values, 1 temporary, 2 local workspace, 3 RFactor partials, 4 scalar
 *   accumulator), alloc_bytes, alloc_count (times it is allocated or
 *   initialised).
 *  Group 5, outer scope: outer_prod (product of the trips of all enclosing
 *   loops), execs (outer_prod x guard probability).
 *  Sparse: pos_loops (loops over pos[q]..pos[q+1]), coiter_loops (merge
 *   WHILE loops), possplit_loops (both loops of a position split),
 *   pos_trip (product of the trips of those loops), gathers (executions of
 *   loads whose index goes through a crd load), index_loads (executions of
 *   pos/crd loads on the way to the store and in it), guard_prob.
 *
 * Combining (the fixed row).  Stores are ranked by estimated work = flops
 * + bytes / 4 (element accesses), ties in LIR order; the top 3 fill slots
 * s0, s1, s2 (zeros when there are fewer stores).  Then "sum." features:
 * sums over all stores (flops, the float op kinds, int_ops, bool_op,
 * bytes_read, bytes_written, unique_bytes, unique_lines, gathers,
 * n_stores, execs) and the kernel's total index_loads.  Then "kernel."
 * features: n_nests (top-level loops), n_loops, temp_bytes / temp_count
 * (temporaries the kernel allocates), ws_bytes / ws_count (workspace
 * declarations: bytes of the largest, count), partial_bytes /
 * partial_count (RFactor), fill_bytes (bytes written by fills, with
 * repeats), par_loops, par_extent (largest trip of a parallel loop),
 * vec_loops, op_intensity (sum.flops / (sum over buffers of the largest
 * footprint any store has in it + bytes of the pos/crd arrays read)),
 * prefetch_bytes (bytes software prefetches cover, with repeats: a
 * "prefetch" annotation, issue 13), stream_bytes (bytes a workspace
 * copy-out writes with non-temporal stores, with repeats: a "stream"
 * annotation, issue 13).
 * Last "sp0." / "sp1.": the first two sparse tensors whose pos/crd the
 * kernel reads (tensor order): segments (rows), nnz, nnz_mean, nnz_max,
 * nnz_cv of entries per segment of the tensor's last sparse level
 * (nonzeros per row for CSR; per non-empty row for DCSR).
 *
 * D = 3 slots x 72 + 16 sums + 14 kernel + 2 x 5 sparse = 256.
 *
 * Scaling: counts, bytes, trips and ratios are log2(1 + x) (MetaSchedule's
 * slog); ordinal codes, flags, guard_prob and nnz_cv are raw.  Every value
 * is finite.
 *
 * Limits of the estimates: trip counts are means, so skewed rows (see
 * nnz_cv, nnz_max) are described, not modelled; a merge of two patterns
 * assumes they are independent (identical patterns match far more often);
 * band(w) loops are estimated at a middle row.
 */
#ifndef LOOM_FEATURES_H
#define LOOM_FEATURES_H

#include <stdint.h>

#include "../dsl/ir/error.h"
#include "../dsl/ir/limits.h"
#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/data/dataset.h"
#include "../runtime/lower/lir.h"

/* Statistics of one level of a tensor's storage. */
typedef struct loom_level_stats {
    loom_level_kind kind;   /* dense, compressed or range */
    int64_t extent;         /* size of the dimension the level stores */
    int64_t segments;       /* parent positions (rows for CSR's level 2) */
    int64_t entries;        /* positions of the level: pos[segments] when stored,
                               segments x extent for a dense level */
    double mean;            /* entries per segment (= extent for a dense level) */
    double max;             /* largest segment */
    double cv;              /* coefficient of variation of the segment lengths:
                               population standard deviation / mean (0 if mean is 0) */
} loom_level_stats;

typedef struct loom_tensor_stats {
    int sparse;             /* has a compressed or range level */
    int order;
    int64_t dims[LOOM_MAX_ORDER];
    int64_t nnz;            /* stored entries (prod(dims) for dense) */
    int row_level;          /* the last non-dense level (its segments are rows), -1 if dense */
    loom_level_stats level[LOOM_MAX_ORDER];
} loom_tensor_stats;

/* Statistics of a bound data set: plain data, computed once per campaign,
 * shared read-only by every extraction.  t[] is indexed like
 * program.tensors[]; sparse temporaries and outputs get their pattern
 * source's statistics (they share its pos/crd). */
typedef struct loom_data_stats {
    int ntensors;
    loom_tensor_stats t[LOOM_MAX_TENSORS];
} loom_data_stats;

/* Compute *out from ds (its program must be bound).  Segment statistics use
 * GSL (gsl_stats_mean, gsl_stats_max, gsl_stats_sd_with_fixed_mean).
 * Errors: LOOM_ERR_INVALID (ds or out NULL); LOOM_ERR_DATA (a pos array that
 * is not non-decreasing or does not start at 0: names the tensor and level);
 * LOOM_ERR_NOMEM. */
loom_status loom_data_stats_compute(const loom_dataset *ds, loom_data_stats *out, loom_error *err);

/* The fixed width D of every feature row (the same for every kernel). */
int loom_feature_count(void);

/* Stable name of feature k ("s0.flops", "s1.b0.bytes", "sum.bytes_read",
 * "kernel.par_extent", "sp0.nnz_cv"); NULL when k is out of [0, D).  The
 * string is static. */
const char *loom_feature_name(int k);

/* Index of the feature named `name`, or -1. */
int loom_feature_find(const char *name);

/* 1 if feature k is stored as log2(1 + x), 0 if raw (ordinals, flags,
 * probabilities, nnz_cv); 0 when k is out of range. */
int loom_feature_is_log(int k);

/* Features of one lowered kernel: out[0 .. D) (D = loom_feature_count()),
 * scaled as described above; deterministic and finite.  st holds the
 * statistics of the data the kernel runs on (loom_data_stats_compute on
 * the data set of f's program).  Thread-safe: no static mutable state; it
 * allocates scratch memory (freed before it returns).  Errors:
 * LOOM_ERR_INVALID (a NULL argument; st computed for a program with another
 * number of tensors); LOOM_ERR_UNSUPPORTED (loops nested deeper than 40);
 * LOOM_ERR_NOMEM.  On error out is zeroed. */
loom_status loom_features_extract(const lir_func *f, const loom_data_stats *st, float *out, loom_error *err);

/* The same features before scaling (counts, bytes and trips as estimated,
 * in double precision), for tests and inspection: out[0 .. D). */
loom_status loom_features_extract_raw(const lir_func *f, const loom_data_stats *st, double *out, loom_error *err);

/* Lower sch (loom_lower) and extract its features into out[0 .. D).
 * Errors: those of loom_lower, then those of loom_features_extract. */
loom_status loom_features_of_schedule(const loom_schedule *sch, const loom_data_stats *st, float *out,
                                      loom_error *err);

/* The same, lowered for a target: lim (the target handle's limits,
 * runtime/target/target.h; NULL: the CPU target's) as loom_lower_for takes
 * them, so the features describe the kernel that target runs.  Errors as
 * loom_features_of_schedule. */
loom_status loom_features_of_schedule_for(const loom_schedule *sch, const loom_limits *lim,
                                          const loom_data_stats *st, float *out, loom_error *err);

#endif
