/* loom: transformation modules, design spaces and the default schedule
 * (DESIGN.md "Transformation modules"; docs/modules.md walks through
 * writing one).
 *
 * A transformation module is a named C function applied to one block of a
 * Schedule: it analyses the block and calls sampling instructions and
 * primitives (dsl/schedule/schedule.h).  Modules never fork the design space: every
 * choice is a sampling instruction, so a design space -- an ordered list of
 * modules -- is one probabilistic program, and every run of it records a
 * trace that replays (traces/trace.h) and whose decisions search can mutate.
 *
 * Order.  loom_space_apply visits the blocks consumers first (the last
 * statement first: MetaSchedule's PostOrderApply pops blocks from the end of
 * its list) and applies every module of the list to a block before moving to
 * the block before it.  So when a producer samples its compute location, its
 * consumer's loops are final (a location at a loop that a later split removes
 * would be lost).  A module reads the schedule as the instructions before it
 * left it (the block's sampled location and loop order); a trace records the
 * instructions that resulted, so it replays exactly, and a mutated decision
 * may leave a later instruction unfit -- the validator says which rule.
 *
 * Thread safety: registries are read-only once built; modules keep no state
 * outside their ctx, so loom_space_apply may run on distinct schedules in
 * several threads at once.
 *
 * A user module is a shared object exporting
 *     int loom_module_init(loom_registry *r);
 * that registers its modules with loom_registry_add and returns 0 (any other
 * value is reported as a failed initialisation).  Build it against an
 * installed loom (`make install PREFIX=DIR`; `pkg-config --cflags --libs
 * loom`) and load it with `loom sample --module path.so`.
 */
#ifndef LOOM_MODULE_H
#define LOOM_MODULE_H

#include <stdio.h>

#include "../dsl/ir/error.h"
#include "../dsl/schedule/query.h"
#include "../dsl/ir/limits.h"
#include "../dsl/schedule/schedule.h"

/* What a module is called with besides the schedule: the target's limits
 * (the space's, loom_space_set_limits: vector lanes, cores, workspace
 * size; a module shapes its choices by them, never by the host's), the
 * pointer given to loom_registry_add, and whether the space's default is
 * being built (loom_space_default): then a module whose default choice of
 * a decision is not the most probable candidate passes that choice as the
 * sampler's decision (it is recorded like a drawn one, so search can
 * mutate it); every other sampler gets the most probable candidate from
 * loom_space_default's decision hook.  A module none of whose choices is
 * the default schedule's for a block returns LOOM_ERR_UNSUPPORTED ("no
 * default: ..."; attention-fusion on an attention chain): the space then
 * has no default for that program. */
typedef struct loom_module_ctx {
    const loom_limits *limits; /* never NULL */
    void *user;                /* loom_registry_add's ctx, not owned */
    int defaults;              /* 1: loom_space_default is building the space's default */
} loom_module_ctx;

/* A module: transform block `block_rv` (a BlockRV of sch) with primitives
 * and sampling instructions.  Returns LOOM_OK, or the error of the first
 * primitive that failed (err filled).  A module that does not apply to a
 * block returns LOOM_OK without recording anything. */
typedef loom_status (*loom_module_fn)(loom_schedule *sch, int block_rv, const loom_module_ctx *ctx, loom_error *err);

typedef struct loom_registry loom_registry; /* module names -> modules */
typedef struct loom_space loom_space;       /* an ordered list of modules */

/* ---- the registry ----------------------------------------------------- */

/* A new registry holding the built-in modules (below).  NULL when out of
 * memory.  Free with loom_registry_free. */
loom_registry *loom_registry_new(void);

/* Free a registry (NULL is fine) and close the shared objects it loaded.
 * Spaces made from it must be freed first. */
void loom_registry_free(loom_registry *r);

/* Register `fn` under `name` (1..63 characters of [a-z0-9_-]); ctx is passed
 * to every call (as loom_module_ctx.user) and is not owned.  Errors: LOOM_ERR_INVALID (bad name, NULL
 * fn, a name already registered), LOOM_ERR_NOMEM. */
loom_status loom_registry_add(loom_registry *r, const char *name, loom_module_fn fn, void *ctx, loom_error *err);

/* dlopen the shared object at so_path and call its
 * `int loom_module_init(loom_registry *)`.  The object stays open until the
 * registry is freed.  Errors: LOOM_ERR_IO (dlopen failed: dlerror's text),
 * LOOM_ERR_INVALID (no loom_module_init symbol; it returned nonzero; it
 * registered nothing). */
loom_status loom_registry_load(loom_registry *r, const char *so_path, loom_error *err);

/* Number of modules, and the name of module k (registration order: the
 * built-ins first).  NULL when k is out of range. */
int loom_registry_count(const loom_registry *r);
const char *loom_registry_name(const loom_registry *r, int k);

/* The one-line doc of module k: a built-in's (modules/builtin.c's table,
 * the one list of the built-ins), NULL for a user module's or k out of
 * range. */
const char *loom_registry_doc(const loom_registry *r, int k);

/* Print the registry to `out` as `loom space --list` does: a line
 * "module NAME  DOC" per module in registration order, then "default cpu
 * LIST" and "default sim LIST" (loom_default_modules).  Returns 0, or -1
 * when writing failed (errno set). */
int loom_registry_print(const loom_registry *r, FILE *out);

/* The module named `name`: 0 and *fn, *ctx set; -1 if there is none. */
int loom_registry_find(const loom_registry *r, const char *name, loom_module_fn *fn, void **ctx);

/* The default module list of a target kind ("cpu" or "sim"), as a
 * comma-separated string; NULL for an unknown kind.  `loom space --list`
 * prints both (loom_registry_print); they are currently the same (the
 * simulator will get its own). */
const char *loom_default_modules(const char *target_kind);

/* ---- design spaces ---------------------------------------------------- */

/* A design space from `names` (comma-separated module names, spaces
 * ignored) or, when names is NULL, the default list of target_kind (NULL:
 * "cpu"), with the CPU target's limits (runtime/machine/machine.h
 * loom_target_cpu_limits; loom_space_set_limits gives the command's target's).
 * The space refers to the registry, which must outlive it.
 * Errors: LOOM_ERR_INVALID (an unknown module: the message lists the known
 * ones; an empty list; an unknown target kind), LOOM_ERR_NOMEM. */
loom_status loom_space_new(const loom_registry *r, const char *names, const char *target_kind, loom_space **out,
                           loom_error *err);

/* Free a space (NULL is fine). */
void loom_space_free(loom_space *s);

/* Number of modules of the space and the name of module k. */
int loom_space_count(const loom_space *s);
const char *loom_space_module(const loom_space *s, int k);

/* The limits of the target the space shapes schedules for: copied into
 * the space and handed to every module by loom_space_apply (a space for
 * `--target sim:wide-64c` is shaped by that machine's 64 cores and vector
 * width, not by the host's). */
void loom_space_set_limits(loom_space *s, const loom_limits *lim);
const loom_limits *loom_space_limits(const loom_space *s);

/* Apply the design space to a freshly initialised schedule (which has an
 * rng and, when the caller wants a trace, a recorder): for every block,
 * consumers first, every module in list order (see "Order" above), each
 * called with the space's limits (loom_space_set_limits).
 * Errors: the first module error, its message prefixed with
 * "module NAME, block B: ". */
loom_status loom_space_apply(const loom_space *s, loom_schedule *sch, loom_error *err);

/* The space's default (issue 13): the space applied with every decision
 * at its default instead of drawn, so the default schedule of a campaign
 * is a trace of the space whose decisions the mutators can move (a
 * schedule built outside the space -- modules/default.c -- offers them
 * only its loop order).  Modules are called with ctx.defaults = 1 (the
 * built-ins then pass the choices of loom_default_schedule: Scorch's
 * workspace, streamed when the output exceeds the last-level cache;
 * Scorch's tiles -- whole feature rows up to 128, else 32 wide; the dense
 * space's default tiles); every other sampler gets the default of
 * loom_default_decider.  The result is the kernel of
 * loom_default_schedule_for (tests/test_space_default.c compares their
 * simulated counts on every workload) but not the same trace, nor the same
 * structural hash (extent-1 tiles stay in the schedule).  sch must be
 * freshly initialised; its rng is not used (NULL is fine) and its decision
 * hook is restored on return.  Errors: those of loom_space_apply, among
 * them LOOM_ERR_UNSUPPORTED when a module has no default for a block
 * (loom_module_ctx); the result is not validated (the caller does:
 * loom_validate). */
loom_status loom_space_default(const loom_space *s, loom_schedule *sch, loom_error *err);

/* The decision hook (dsl/schedule/schedule.h loom_decider_fn) of loom_space_default:
 * every sampler its most probable decision -- SampleCategorical the
 * candidate of the highest probability (the first of equals);
 * SampleLoopOrder its prior; SampleComputeLocation the root (-1; the
 * sampler repairs it to its first candidate in a fusion group);
 * SampleFusionGroup no fused edge (0); SamplePerfectTile the whole extent
 * in one tile -- the innermost, when it fits max_innermost, else the
 * largest divisor of the extent that does, the rest outermost (a
 * data-dependent extent: [0 (inferred), 1, .., 1]).  ctx is unused.
 * Returns the number of decisions written (always > 0). */
int loom_default_decider(void *ctx, const loom_schedule *sch, int ordinal, int kind, const loom_inst *proto,
                         int64_t *decision);

/* ---- the default schedule (modules/default.c) ------------------------- */

/* The deterministic default schedule, no search and no rng (Scorch, Yan et
 * al. CGO 2026, section "scheduling"; ../shared/research/sparse.md Part 1b):
 * every block at the root; Scorch's loop order (a SampleLoopOrder whose
 * decision is its prior, so the trace replays without an rng and search can
 * mutate it); dense index variables that carry reuse and are longer than
 * 128 split by 32 (the outer tile after the outermost loop, the inner tile
 * innermost); Scorch's output workspace (CacheWrite of a kernel output at
 * the loop where multi-level-tiling would offer one, its free loops split
 * [1, extent]; copied out with streaming stores when the output is larger
 * than lim->llc_bytes); the outer free loop parallel; the innermost loop
 * vectorized when its extent is constant and fits the target (a longer
 * 128-float row stays one loop: a 32-wide tile of it was a latency-bound
 * chain of 2 AVX-512 accumulators).  A campaign starts from the same
 * kernel built inside its design space (loom_space_default).  The
 * optional steps (the workspace, the tiling, then the vectorization) are
 * dropped while the schedule does not pass the validator with the host's
 * limits (loom_default_schedule_for: a target's).  A dense contraction
 * (every operand dense, a reduction, an output of order >= 2: GEMM, X.W)
 * instead gets the dense space's kernel with decided tiles (modules/dense.c:
 * the register tile with the most accumulators that fits the target's
 * vector registers, accumulated through CacheWrite, outer tiles fused and
 * parallel, the tile's rows unrolled and its columns vectorized).  sch must be freshly
 * initialised (loom_schedule_init; rng may be NULL); when sch->recorder is
 * set the schedule is recorded as a trace.  Errors: LOOM_ERR_SEMANTIC when
 * no variant validates (the validator's message), primitive errors.
 * This is modules/default.c's builder, the fallback of "the default
 * schedule" that loom run, tune, bench/ and navigation use
 * (loom_default_build below); on GCN its first statement keeps a loop
 * bound read from W's dims where the space's default has a constant 16. */
loom_status loom_default_schedule(loom_schedule *sch, loom_error *err);

/* The same for the target with limits `lim` (parallel extents by its cores,
 * vector width by its lanes, validated with them); lim NULL: the CPU
 * target's (runtime/machine/machine.h loom_target_cpu_limits). */
loom_status loom_default_schedule_for(loom_schedule *sch, const loom_limits *lim, loom_error *err);

/* ---- "the default schedule" (modules/default_build.c) ------------------ */

/* What loom_default_build built. */
typedef struct loom_default_info {
    int in_space;        /* 1: the space's default (loom_space_default), a trace
                            of the space; 0: modules/default.c's schedule
                            (loom_default_schedule_for) */
    char why_not[1024];  /* in_space 0: why not the space's default -- the
                            module's error ("module attention-fusion, block
                            O: no default: ...") or "the space's default is
                            invalid: " and the validator's message; else "" */
    loom_limits limits;  /* the target's limits it was shaped and validated by */
} loom_default_info;

/* "The default schedule" of sch->prog on a target: the one `loom run`
 * measures without --trace, a campaign measures as its baseline and
 * records first, bench/ compares against and navigation's all-default
 * sketch is (docs/modules.md "The default schedule"; issue 32).  It is the
 * space's default (loom_space_default) when that applies and passes the
 * validator with the space's limits, else modules/default.c's schedule
 * (loom_default_schedule_for) with those limits; info (NULL is fine) says
 * which, why, and the limits.
 *   space  the design space whose default it is, with the target's limits
 *          (loom_space_set_limits); not owned.  NULL: the built-in modules'
 *          default list (loom_default_modules("cpu"), the same as "sim's")
 *          shaped by `lim`, made and freed here (a registry and a space per
 *          call: keep a space to build many).
 *   lim    only with space NULL: the target's limits; NULL: the CPU
 *          target's (runtime/machine/machine.h loom_target_cpu_limits).
 *   sch    freshly initialised (loom_schedule_init; its rng is not used);
 *          when sch->recorder is set only the schedule kept is recorded
 *          (the space's default is tried on a scratch schedule first) --
 *          the caller checks its recorder (loom_trace_status).  Its
 *          decision hook is left as it was.
 * Deterministic: the same program, space and limits give the same trace.
 * Errors: LOOM_ERR_INVALID (both space and lim given); LOOM_ERR_NOMEM;
 * loom_schedule_init's (an unbound size); loom_default_schedule_for's when
 * the fallback is taken (LOOM_ERR_SEMANTIC "no default schedule
 * validates: ...", a primitive's error).  The space's own failure is not
 * an error: it is info->why_not. */
loom_status loom_default_build(const loom_space *space, const loom_limits *lim, loom_schedule *sch,
                               loom_default_info *info, loom_error *err);

/* ---- analysis used by the modules (modules/analysis.c) ---------------- */

/* Scorch's loop-order ranking of the index variables of statement `stmt`
 * (select_loop_order / init_loop_order, sparse.md Part 1b): a variable is
 * a sparse filter when it indexes a compressed or range level of an operand
 * and a dense level of another operand or is absent from some operand; it
 * scores 1 - 0.0014^(its sparse levels), others 0; variables sort by
 * descending score, then by their mean level position over the accesses
 * (outer levels first), then by their order in the statement.  rank[x] for
 * each program index variable x of the statement (0 = outermost); entries
 * of other statements are left alone.  The greedy push with Scorch's fitted
 * cost model is not applied (the search explores the other orders). */
void loom_scorch_rank(const loom_program *prog, int stmt, int *rank);

/* 1 when index var x of statement `stmt` indexes a compressed or range
 * level of some tensor the statement reads. */
int loom_var_is_sparse(const loom_program *prog, int stmt, int x);

/* 1 when var x carries reuse (Scorch's tiling candidates,
 * _select_index_vars_to_tile): some tensor the statement reads is not
 * indexed by every variable of the statement, but is indexed by x; and x is
 * not sparse. */
int loom_var_carries_reuse(const loom_program *prog, int stmt, int x);

/* loom_single_driver (the tensor whose compressed level drives a variable,
 * PosSplit's argument) is in dsl/schedule/query.h, included above. */

/* Among the legal loop orders of `stage` (loom_legal_loop_orders, at most
 * the first 4096), the one whose sequence of keys is lexicographically
 * smallest, where key[p] is the key of the loop now at position p (a
 * topological sort of the concordance constraints with the keys as
 * priority, as Scorch's apply_mode_order_constraints).  Writes the order
 * (positions in the current loop list) to order[] and returns its index in
 * the enumeration; -1 when no legal order exists or out of memory. */
int loom_closest_legal_order(const loom_schedule *sch, int stage, const int64_t *key, int *order);

/* Scorch's loop order of stage s (loom_scorch_rank made concordant with
 * loom_closest_legal_order, ties kept in the current order): written to
 * order[] as loom_closest_legal_order does; returns its index in
 * loom_legal_loop_orders' enumeration (SampleLoopOrder's prior), -1 when
 * the stage has no loops or no legal order. */
int loom_scorch_order(const loom_schedule *sch, int s, int *order);

/* The index variable of the outermost loop of Scorch's order of stage s
 * (loom_scorch_rank made concordant with loom_closest_legal_order); -1 when
 * the stage has no loops or no legal order. */
int loom_scorch_outermost(const loom_schedule *sch, int s);

/* ---- printing (modules/space_print.c) --------------------------------- */

/* Print the design space of a bound program as the C calls of one draw
 * (rng seeded with `seed`), each sampling instruction shown as a hole with
 * its number of choices, then an estimate of the space's size: the product
 * of the choices of every sampling instruction, averaged in log10 over
 * `draws` draws (the instruction list depends on earlier decisions).
 * Errors: those of loom_space_apply, LOOM_ERR_NOMEM. */
loom_status loom_space_print(const loom_space *s, const loom_program *prog, unsigned long seed, int draws,
                             FILE *out, loom_error *err);

#endif
