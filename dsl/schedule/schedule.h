/* loom: the Schedule -- a Program plus one stage per statement, the
 * primitives that transform it, and the sampling instructions that are the
 * holes of a probabilistic schedule program (DESIGN.md "Schedule
 * representation", "Instructions"; MetaSchedule, Shao et al. NeurIPS 2022,
 * section 3; TACO's provenance graph for split/fuse/pos, Senanayake et al.
 * OOPSLA 2020).
 *
 * A loom_schedule is plain data (fixed capacities, no pointers into
 * itself), so a copy is one memcpy; the program and the random generator
 * are referenced, not owned.
 *
 * Stages.  Stage s is statement s's block.  Its *iters* are the nodes of a
 * provenance graph, append-only, identified by their index (a stable id):
 *   VAR    - one per index variable of the statement, created with the stage;
 *   SPLIT  - child k (0 = outermost) of splitting iter `parent` into n parts,
 *            with a constant extent `factor` (0: inferred = ceil(E / product
 *            of the other factors); at most one child is inferred);
 *   FUSE   - the fusion of iters a (outer) and b (inner): extent Ea * Eb;
 *   POS    - child k of splitting the *position space* of the compressed
 *            level that drives index variable `var` (TACO's pos): the outer
 *            child's extent is data-dependent (ceil(len / factor)), the inner
 *            one `factor`; the coordinate is crd[p], the last tile guarded.
 * Its *loops* are the current leaves, outermost first, each with a kind.
 *
 * Random variables.  Every primitive takes and returns RVs: indices into the
 * schedule's RV table (one counter for all kinds, as MetaSchedule's trace
 * names b0 l1 v2 ...): a BlockRV names a stage, a LoopRV a (stage, iter),
 * an ExprRV an integer value.
 *
 * Tracing.  When `recorder` is set, every primitive that succeeds calls it
 * with a loom_inst describing the call (kind, input RVs, attrs, output RVs,
 * decision), so traces/ can record a trace without this layer knowing it.
 *
 * Errors.  A primitive that cannot apply returns LOOM_ERR_INVALID (a bad RV
 * or argument) or LOOM_ERR_SEMANTIC (an illegal transformation) with a
 * reason naming the loop and the rule (e.g. "split-sparse-coordinate: ..."),
 * and leaves the schedule unchanged.  Nothing aborts.
 */
#ifndef LOOM_SCHEDULE_H
#define LOOM_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "../ir/error.h"
#include "../ir/program.h"

#define LOOM_MAX_ITERS 48      /* provenance nodes per stage */
#define LOOM_MAX_LOOPS 24      /* loops per stage */
#define LOOM_MAX_RVS 512       /* random variables per schedule */
#define LOOM_MAX_INST_IO 24    /* inputs / outputs / attrs / decision entries per instruction
                                  (== LOOM_MAX_LOOPS: GetLoops and Reorder name every loop) */
#define LOOM_MAX_ANN 6         /* annotations per loop (a rolled loop has 4: tiles and vector shape) */
#define LOOM_SAMPLE_MAX_ORDERS 4096 /* SampleLoopOrder enumerates at most this many legal orders */

typedef enum loom_loop_kind {
    LOOM_LOOP_SERIAL = 0,
    LOOM_LOOP_PARALLEL,   /* OpenMP parallel for */
    LOOM_LOOP_VECTORIZED, /* omp simd */
    LOOM_LOOP_UNROLLED    /* GCC unroll */
} loom_loop_kind;

typedef enum loom_iter_kind { LOOM_ITER_VAR = 0, LOOM_ITER_SPLIT, LOOM_ITER_FUSE, LOOM_ITER_POS } loom_iter_kind;

typedef struct loom_iter {
    loom_iter_kind kind;
    int var;          /* VAR, POS: program index variable */
    int parent;       /* SPLIT: iter split; -1 otherwise */
    int a, b;         /* FUSE: the outer and inner iters fused; -1 otherwise */
    int tensor;       /* POS: tensor whose compressed level drives `var` */
    int index;        /* SPLIT, POS: child index, 0 = outermost */
    int nparts;       /* SPLIT, POS: number of children of that split */
    int64_t factor;   /* SPLIT, POS: constant extent; 0 = inferred / data-dependent */
    int first_child;  /* iter id of child 0 once split (children are consecutive); -1 */
    int fused_into;   /* iter id of the FUSE that consumed it; -1 */
} loom_iter;

typedef struct loom_annotation {
    char key[24];
    int64_t value;
} loom_annotation;

typedef struct loom_loop {
    int iter;                 /* the leaf iter this loop iterates */
    loom_loop_kind kind;
    int unroll;               /* with LOOM_LOOP_UNROLLED: the unroll factor */
    int nann;
    loom_annotation ann[LOOM_MAX_ANN];
} loom_loop;

/* Compute locations of a stage (MetaSchedule's SampleComputeLocation
 * decisions): at the root of the kernel, inlined into its consumers, or at a
 * loop of a later stage (ComputeAt). */
#define LOOM_AT_ROOT (-1)
#define LOOM_AT_INLINE (-2)
#define LOOM_AT_LOOP 1        /* at_stage's loop over iter at_iter */

/* ---- a stage's state, described once ---------------------------------- */

/* What a scalar field of a stage holds (loom_stage_field.kind): what
 * remapping does with it when loops are split or fused. */
typedef enum loom_stage_field_kind {
    LOOM_FIELD_VALUE = 0,   /* a number, a flag or an enum: never remapped */
    LOOM_FIELD_OWN_ITER,    /* an iter of this stage (-1: none): follows its loop when the loop is split or fused
                               (to the loop that binds the same indices innermost) */
    LOOM_FIELD_AT_ITER,     /* an iter of the stage at_stage names, while compute_at is LOOM_AT_LOOP: follows
                               that stage's loop likewise */
    LOOM_FIELD_STAGE,       /* a stage index (-1: none) */
    LOOM_FIELD_TENSOR,      /* a program tensor index (-1: none) */
} loom_stage_field_kind;

/* Whether a field is part of a schedule's identity (loom_schedule_hash,
 * loom_schedule_equal). */
typedef enum loom_stage_field_identity {
    LOOM_FIELD_HASHED = 0,  /* hashed and compared */
    LOOM_FIELD_HASHED_SET,  /* compared; hashed only when not at its initial value, so the hashes recorded before
                               the field existed stay (tuning databases key records by them): a new field's choice */
    LOOM_FIELD_NOT_HASHED,  /* neither: not the schedule's structure (nothing the lowering reads) */
} loom_stage_field_identity;

/* The scalar fields of a stage, one row each (every field an int):
 *   X(name, kind, initial value, identity, doc)
 * loom_schedule_init, loom_schedule_hash, loom_schedule_equal and the loop
 * transformations' remapping go over these rows (loom_stage_field_at), in
 * this order; adding a primitive's schedule state is one row here.  The
 * iters, loops and annotations of a stage are its arrays, below. */
#define LOOM_STAGE_FIELDS(X)                                                                                        \
    X(compute_at, VALUE, LOOM_AT_ROOT, HASHED, "LOOM_AT_ROOT, LOOM_AT_INLINE or LOOM_AT_LOOP")                       \
    X(at_stage, STAGE, -1, HASHED, "LOOM_AT_LOOP: the stage whose loop the block is placed at")                     \
    X(at_iter, AT_ITER, -1, HASHED, "LOOM_AT_LOOP: that loop's iter (in at_stage)")                                 \
    X(at_after, VALUE, 0, HASHED,                                                                                   \
      "LOOM_AT_LOOP: 0 computed at the start of each iteration (ComputeAt, a producer), 1 at its end "              \
      "(ReverseComputeAt, a consumer)")                                                                            \
    X(cache_iter, OWN_ITER, -1, HASHED, "CacheWrite: the iter of the loop holding the output's workspace, -1")     \
    X(rfactor_iter, OWN_ITER, -1, HASHED,                                                                           \
      "RFactor: the reduction loop's iter whose iterations keep private partials, -1")                              \
    X(rolling, VALUE, 0, HASHED,                                                                                    \
      "RollingUpdate: 1 when this reduction runs inside the reduction loop of the block it is placed at "          \
      "(at_stage, at_iter, at_after = 1), its partial rescaled whenever that block's running max changes")         \
    X(splitk, VALUE, 0, HASHED,                                                                                     \
      "SplitKUpdate on a source of rolled blocks: its rolled loop runs as splitk chunks with their own partials, " \
      "merged by a combine loop; 0")                                                                               \
    X(pack_iter, OWN_ITER, -1, HASHED_SET,                                                                          \
      "PackPanel: the iter of the loop at whose iterations an operand's panel is copied into a contiguous local "  \
      "buffer, -1")                                                                                                \
    X(pack_tensor, TENSOR, -1, HASHED_SET, "PackPanel: the packed operand, -1")                                     \
    X(fuse, VALUE, LOOM_FUSE_FREE, NOT_HASHED,                                                                      \
      "SampleFusionGroup: LOOM_FUSE_FREE (no group decided, any location), LOOM_FUSE_YES (fused into its "         \
      "consumer: inlined or at its loop), LOOM_FUSE_NO (kept at the root); it constrains later samplers, the "     \
      "placement it leads to is the structure")

#define LOOM__STAGE_MEMBER(name, kind, init, identity, doc) int name;

typedef struct loom_stage {
    int stmt;                 /* == the stage's index */
    LOOM_STAGE_FIELDS(LOOM__STAGE_MEMBER) /* compute_at, at_stage, ...: the rows above */
    int niters;
    loom_iter iters[LOOM_MAX_ITERS];
    int nloops;
    loom_loop loops[LOOM_MAX_LOOPS];
    int nann;                 /* block annotations */
    loom_annotation ann[LOOM_MAX_ANN];
} loom_stage;

/* One row of LOOM_STAGE_FIELDS. */
typedef struct loom_stage_field {
    const char *name;
    size_t offset;            /* of the int in loom_stage */
    loom_stage_field_kind kind;
    int init;                 /* its value in a fresh schedule (loom_schedule_init) */
    loom_stage_field_identity identity;
    const char *doc;
} loom_stage_field;

/* Number of rows and row k (NULL out of range), in LOOM_STAGE_FIELDS order. */
int loom_stage_field_count(void);
const loom_stage_field *loom_stage_field_at(int k);

/* The field F of stage S. */
static inline int *loom_stage_field_ptr(loom_stage *S, const loom_stage_field *F)
{
    return (int *)((char *)S + F->offset);
}
static inline int loom_stage_field_get(const loom_stage *S, const loom_stage_field *F)
{
    return *(const int *)((const char *)S + F->offset);
}

typedef enum loom_rv_kind { LOOM_RV_BLOCK = 0, LOOM_RV_LOOP, LOOM_RV_EXPR } loom_rv_kind;

typedef struct loom_rv {
    loom_rv_kind kind;
    int stage;        /* BLOCK, LOOP */
    int iter;         /* LOOP: the iter (stable even when loops move) */
    int64_t value;    /* EXPR */
} loom_rv;

/* One recorded instruction.  Inputs and outputs are RV indices; attrs are
 * integers (and one string attr for names and annotation keys). */
typedef struct loom_inst {
    int kind;                          /* index into the instruction registry */
    int ninputs, noutputs, nattrs, ndecision;
    int inputs[LOOM_MAX_INST_IO];
    int outputs[LOOM_MAX_INST_IO];
    int64_t attrs[LOOM_MAX_INST_IO];
    double fattrs[LOOM_MAX_INST_IO];   /* SampleCategorical probabilities */
    char sattr[LOOM_MAX_NAME];         /* GetBlock name, Annotate key */
    int64_t decision[LOOM_MAX_INST_IO];
} loom_inst;

typedef void (*loom_recorder_fn)(void *ctx, const loom_inst *inst);

/* The decision hook (search/navigate/navigate.h: navigation and pinned decisions).
 * Every sampling primitive called without a decision first counts itself
 * (sch->nsampled, 0 for the first sampler since loom_schedule_init) and,
 * when sch->decider is set, calls it with that ordinal, its kind
 * (LOOM_INST_SAMPLE_*) and `proto`: its inputs (the loop or block RV) and
 * attrs as it would record them (SamplePerfectTile [n, max_innermost],
 * SampleCategorical its candidates, SampleLoopOrder [prior]), before it
 * draws; the schedule is as the instructions before it left it.  A return
 * n > 0 makes decision[0..n) the sampler's decision (taken as a replayed
 * one: repaired when it does not fit); 0 draws as usual. */
typedef struct loom_schedule loom_schedule;
typedef int (*loom_decider_fn)(void *ctx, const loom_schedule *sch, int ordinal, int kind, const loom_inst *proto,
                               int64_t *decision);

typedef struct loom_schedule {
    const loom_program *prog;          /* bound program: sizes known */
    void *rng;                         /* gsl_rng *, not owned; NULL: sampling fails */
    loom_recorder_fn recorder;         /* NULL: not traced */
    void *recorder_ctx;
    loom_decider_fn decider;           /* NULL: samplers draw (see loom_decider_fn) */
    void *decider_ctx;
    int nsampled;                      /* samplers called without a decision so far */
    int nstages;
    loom_stage stages[LOOM_MAX_STMTS];
    int nrvs;
    loom_rv rvs[LOOM_MAX_RVS];
} loom_schedule;

/* ---- state ---------------------------------------------------------- */

/* Initialise *sch for a bound program: one stage per statement, one VAR
 * iter per index variable, the loops in the order of the statement's vars
 * (free first), all serial.  `rng` may be NULL.  Only the header, the
 * program's stages and the RV count are written (stages past nstages and RV
 * slots past nrvs keep whatever was there and are never read), so it is
 * cheap enough to call once per replayed trace.  Errors: LOOM_ERR_INVALID
 * when the program is not bound (a size without a value). */
loom_status loom_schedule_init(loom_schedule *sch, const loom_program *prog, void *rng, loom_error *err);

/* Bytes of *sch that matter (copy this many for a full copy). */
size_t loom_schedule_size(const loom_schedule *sch);

/* Copy src into dst: the used part only (the header, src's nstages stages
 * and its nrvs RVs); dst's stages and RV slots past those are left as they
 * were, since nothing reads them.  dst == src is a no-op. */
void loom_schedule_copy(loom_schedule *dst, const loom_schedule *src);

/* Static extent of an iter: > 0 when known at schedule time (dense sizes
 * and constant factors), 0 when data-dependent (position spaces, an iter
 * derived from one).  For a VAR driven by a compressed level this is the
 * dense size of the dimension. */
int64_t loom_iter_extent(const loom_schedule *sch, int stage, int iter);

/* 1 if index var v of `stage` is driven by a compressed level of some
 * sparse operand (its loop is a position loop), else 0. */
int loom_var_is_compressed(const loom_schedule *sch, int stage, int v);

/* 1 if loop iter `it` of stage s derives from a reduced index variable
 * (through splits; a fused loop if either source does). */
int loom_iter_reduces(const loom_schedule *sch, int s, int it);

/* Structural hash of the schedule (stages, iters, loops, kinds,
 * annotations; not the RV table): equal schedules hash equal, so search can
 * deduplicate candidates.  FNV-1a 64. */
uint64_t loom_schedule_hash(const loom_schedule *sch);

/* Structural equality (what the hash covers). */
int loom_schedule_equal(const loom_schedule *a, const loom_schedule *b);

/* Name of a loop for messages and printing: the var name with a suffix per
 * split level ("i", "i.0", "i.1", "k.p0", "f.fused.j"), into buf. */
const char *loom_iter_name(const loom_schedule *sch, int stage, int iter, char *buf, size_t n);

/* Print the stages as a loop outline ("for i.0 in 0..85 parallel ...").*/
void loom_schedule_print(const loom_schedule *sch, FILE *out);

/* ---- getters (pure) ------------------------------------------------- */

/* BlockRV of the stage computing tensor `name`.  Errors: LOOM_ERR_INVALID
 * "no block computes tensor X (blocks: ...)". */
loom_status loom_get_block(loom_schedule *sch, const char *name, int *block_rv, loom_error *err);

/* LoopRVs of the block's loops, outermost first (*n receives the count;
 * loop_rvs must hold LOOM_MAX_LOOPS). */
loom_status loom_get_loops(loom_schedule *sch, int block_rv, int *loop_rvs, int *n, loom_error *err);

/* BlockRVs of the stages that produce a tensor this block reads /
 * that read the tensor this block writes. */
loom_status loom_get_producers(loom_schedule *sch, int block_rv, int *block_rvs, int *n, loom_error *err);
loom_status loom_get_consumers(loom_schedule *sch, int block_rv, int *block_rvs, int *n, loom_error *err);

/* ---- loop transformations ------------------------------------------- */

/* Split a loop into n loops with extents factors[] (ExprRVs or, when
 * factor_rvs is NULL, the constants in `factors`); at most one factor may be
 * 0/-1 (inferred).  Legal on loops with a static extent that are not driven
 * by a compressed level (use loom_pos_split there: rule
 * `split-sparse-coordinate`), and not on either tile of a position split
 * (rule `split-position-chunk`: choose the chunk size instead).  A split that does not divide the extent
 * exactly is guarded in the generated code.  Outputs n LoopRVs. */
loom_status loom_split(loom_schedule *sch, int loop_rv, int n, const int *factor_rvs, const int64_t *factors,
                       int *out_loop_rvs, loom_error *err);

/* Fuse adjacent loops (outer to inner, n >= 2) with static extents into
 * one.  Rule `fuse-not-adjacent`, `fuse-dynamic-extent`. */
loom_status loom_fuse(loom_schedule *sch, const int *loop_rvs, int n, int *out_loop_rv, loom_error *err);

/* Reorder: the given loops of one block take, in the given order, the
 * positions those loops occupy now.  Legality of sparse traversal is the
 * validator's (rule `discordant-traversal`). Errors: duplicate loops, loops
 * of different blocks. */
loom_status loom_reorder(loom_schedule *sch, const int *loop_rvs, int n, loom_error *err);

/* Split the position space of the compressed level of `tensor` that drives
 * the loop's index (TACO's pos + split): outer loop over chunks of `factor`
 * stored entries, inner over the entries of a chunk.  Rules
 * `pos-on-dense-level` (the loop's index is not driven by tensor's
 * compressed level), `pos-split-coiteration` (several patterns merge at
 * that index).  factor 0 is the whole row (issue 13: the default's
 * unsplit position loop inside the design space): the outer loop runs once
 * per segment (the lowering emits no loop for it unless it is given a kind)
 * and the inner one over the whole segment (a data-dependent extent).
 * Errors: LOOM_ERR_INVALID for a negative factor.  Outputs 2 LoopRVs. */
loom_status loom_pos_split(loom_schedule *sch, int loop_rv, const char *tensor, int64_t factor, int factor_rv,
                           int *out_loop_rvs, loom_error *err);

/* Loop kinds.  Parallel/vectorize legality (races, innermost, constant
 * extent, target width) is the validator's. */
loom_status loom_parallel(loom_schedule *sch, int loop_rv, loom_error *err);
loom_status loom_vectorize(loom_schedule *sch, int loop_rv, loom_error *err);
loom_status loom_unroll(loom_schedule *sch, int loop_rv, int factor, loom_error *err);

/* Annotate a loop (or, with a BlockRV, a block) with key = value (value an
 * ExprRV when value_rv >= 0, else the constant).  Replaces an existing key. */
loom_status loom_annotate(loom_schedule *sch, int rv, const char *key, int value_rv, int64_t value, loom_error *err);

/* ---- placement ------------------------------------------------------- */

/* ComputeInline: the block's values are no longer stored; every consumer
 * evaluates the block's right-hand side where it reads the tensor (indices
 * substituted).  Rules: `inline-reduction` (the block reduces: its value at
 * a point is not an expression of that point), `inline-output` (the tensor
 * is an output), `inline-no-consumer`.  The block's loops are ignored from
 * then on. */
loom_status loom_compute_inline(loom_schedule *sch, int block_rv, loom_error *err);

/* ComputeAt (MetaSchedule's compute_at): compute the block inside the loop
 * of a later block (its consumer, or a block that consumes what it feeds).
 * At each iteration of that loop the block computes the slice that is
 * needed there: its dimensions that map, through the reads of the blocks
 * placed there, to indices bound by the loop and the loops around it are
 * fixed, the others run in full, so a reader placed there always finds what
 * it reads.  Rules here: `compute-at-order` (the loop's block does not come
 * after this one); the validator checks the rest (producer-coverage,
 * compute-at-accumulates, compute-at-race).  Errors: LOOM_ERR_INVALID (a
 * bad BlockRV or LoopRV), LOOM_ERR_SEMANTIC (the rules above, and
 * `compute-at-reads`: readers placed there read the block at different
 * indices); the schedule is unchanged on error.  Records "ComputeAt"
 * [block, loop].  Same as loom_compute_at_if(sch, block_rv, loop_rv, -1,
 * err). */
loom_status loom_compute_at(loom_schedule *sch, int block_rv, int loop_rv, loom_error *err);

/* ComputeAt with an enable input, like RollingUpdate's: enable_rv -1
 * always places the block (loom_compute_at); an ExprRV (a
 * SampleCategorical's output) whose value is 0 makes the call a no-op that
 * is still recorded, so a sampled decision switches the placement on and
 * off on replay while the instruction list stays the same (modules never
 * branch the design space; MetaSchedule's mutators change decisions only).
 * A nonzero value places the block as loom_compute_at does.  The block and
 * loop RVs are resolved (and their errors returned) in both cases; with
 * value 0 no placement rule is checked.  Errors: those of loom_compute_at,
 * and LOOM_ERR_INVALID when enable_rv is not an ExprRV.  Records
 * "ComputeAt" [block, loop, enable] (or [block, loop] when enable_rv < 0). */
loom_status loom_compute_at_if(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv, loom_error *err);

/* ReverseComputeAt (MetaSchedule's reverse_compute_at): compute the block
 * (a consumer) inside the loop of an earlier block it reads (its
 * producer), at the end of each iteration, once the producer's slice for
 * that iteration is complete: the block's indices that read the producer at
 * indices bound by the loop are fixed, the others run in full.  Rules here:
 * `reverse-compute-at-order` (the loop's block does not come before this
 * one), `reverse-compute-at-reads` (the block does not read that block's
 * tensor, or reads it at different indices).  The validator checks
 * `reverse-coverage` and `compute-at-race`. */
loom_status loom_reverse_compute_at(loom_schedule *sch, int block_rv, int loop_rv, loom_error *err);

/* ReverseComputeAt with an enable input: an ExprRV enable_rv of value 0
 * makes it a no-op that is still recorded (a sampled switch, as
 * loom_compute_at_if: the reverse-compute-location module draws it, so a
 * mutated decision places or unplaces the block on replay without changing
 * the instruction list); enable_rv < 0 is loom_reverse_compute_at.
 * Errors: those of loom_reverse_compute_at, and LOOM_ERR_INVALID for an
 * enable_rv that is not an ExprRV of this schedule. */
loom_status loom_reverse_compute_at_if(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv,
                                       loom_error *err);

/* For stage p placed at stage c (or to be): map[d] = the index var of c
 * that p's dimension d takes at that location (through the read of p in c,
 * or through readers of p placed at the same location), -1 when none.
 * Returns 0, or -1 when some reader reads p with different indices. */
int loom_compute_at_map(const loom_schedule *sch, int p, int c, int *map);

/* Do the parallel loops around stage p's placement give each thread its own
 * slice of p?  For every parallel loop at or outside p's location -- in
 * p's consumer, and in each block that consumer is placed in, up the chain
 * of ComputeAt placements -- some index the loop runs over must be bound
 * there (every loop over it at or outside the location) and fix one of p's
 * indices down the chain (an index is fixed when its consumer's index is).
 * A block placed where this fails is recomputed whole by every thread: a
 * block that resets and accumulates its slice through memory there races
 * (the validator's compute-at-race).  Returns 1 (also for a block at the
 * root), or 0 with the first such loop's stage and loop position in *stage
 * and *loop (either may be NULL). */
int loom_placed_slices_split(const loom_schedule *sch, int p, int *stage, int *loop);

/* CacheWrite (DESIGN.md "workspace"): inside the block's own loop `loop`,
 * the block accumulates into a small local workspace holding what one
 * iteration of that loop writes (the output's dimensions iterated inside
 * it), initialised to the reduction's identity at the start of each
 * iteration and copied out to the output at its end -- Scorch's SpMM
 * structure (a register tile of the output row).  When a reduction loop
 * is outside the workspace loop (a K-blocked GEMM register tile), the
 * output is filled with the identity first and each copy-out adds (or,
 * for max=, maxes) its partial into it.  Rules here:
 * `cache-write-sparse` (a sparse output: its positions are shared with an
 * operand already), `cache-write-fused` (an output index iterated by a
 * fused loop).  The validator checks `cache-write-partial` (the
 * workspace loop is a reduction loop) and `workspace-too-large`.  The
 * workspace follows its loop through later splits and fusions. */
loom_status loom_cache_write(loom_schedule *sch, int block_rv, int loop_rv, loom_error *err);

/* CacheWrite with an enable input (issue 13: the register tile as a
 * sampled decision), as loom_compute_at_if: enable_rv -1 is
 * loom_cache_write; an ExprRV whose value is 0 makes the call a recorded
 * no-op (the block and loop RVs are still resolved, no rule is checked), so
 * a mutated decision switches the workspace on and off on replay.  Errors:
 * those of loom_cache_write, LOOM_ERR_INVALID when enable_rv is not an
 * ExprRV.  Records "CacheWrite" [block, loop, enable]. */
loom_status loom_cache_write_if(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv, loom_error *err);

/* PackPanel (issue 12; TVM's cache_read of an operand, GotoBLAS's packed
 * panel): at the start of each iteration of `loop` (a loop of the block),
 * the part of operand `tensor` that the iterations inside read -- per
 * index, one value when its loops are all outside, else the innermost
 * tiles' extent (as CacheWrite's workspace) -- is copied into a contiguous
 * local buffer (row-major over those local extents, or, when the last
 * index has two or more tiles inside the loop, in the register tile's
 * vector order [last / nr][other indices][nr], nr its innermost tile: the
 * register tile then streams it contiguously; rows of an overhanging tile
 * copied from the last row), and the block reads the operand from it.
 * For B(k, j) of a GEMM at k.0: the k.1 x (j.1 x j.2) panel, rows of
 * j.1 x NR floats instead of N.  Errors: LOOM_ERR_INVALID (the loop is not
 * the block's, bad RVs), `pack-panel-tensor` (LOOM_ERR_SEMANTIC: tensor is
 * not a dense input the block reads with plain index variables, or it is
 * the block's output).  The validator checks `pack-panel-loop` (the loop is
 * gone, or an index is iterated both outside and inside it by tiles that
 * are not the innermost ones of one split) and `pack-panel-too-large` (the
 * panel over LOOM_MAX_PACK_BYTES).  enable_rv as loom_cache_write_if (-1:
 * always; an ExprRV of value 0: recorded, no change).  One packed operand
 * per block: a second call replaces the first.  Records "PackPanel"
 * [block, loop(, enable)] with sattr = the tensor's name. */
loom_status loom_pack_panel(loom_schedule *sch, int block_rv, int loop_rv, const char *tensor, int enable_rv,
                            loom_error *err);

/* The most bytes a packed panel may hold: it lives on the stack of the
 * thread running the loop (gcc's OpenMP threads have 2 MiB or more). */
#define LOOM_MAX_PACK_BYTES ((int64_t)1 << 20)

/* Elements of stage s's packed panel, or -1 when it has none, its loop is
 * gone, or its region is not expressible (rule pack-panel-loop). */
int64_t loom_pack_panel_elems(const loom_schedule *sch, int s);

/* RFactor (TVM's rfactor, as a lowering choice): each iteration of the
 * reduction loop `loop` accumulates into its own partial copy of the output;
 * a combine loop then reduces the partials into the output.  The loop may
 * then be parallel (the validator's parallel-reduction rule exempts it).
 * Rules: `rfactor-not-reduction` (the loop iterates a free index),
 * `rfactor-dynamic-extent` (its extent is data-dependent: split it first),
 * `rfactor-sparse-output`.  It follows its loop through later splits (the
 * innermost tile) and fusions. */
loom_status loom_rfactor(loom_schedule *sch, int loop_rv, loom_error *err);

/* ---- reduction fusion (dsl/schedule/rolling.c; Neptune, Zhao et al. 2025, 4.1) --- */

/* The correction rule of a rolling update.  The source m is a max=
 * reduction over loop j; the rolled block r reduces (with + or max) an
 * operand f(x_j, m) over the same index.  Inlined temporaries are expanded,
 * so r's operand is a tree over inputs, stored tensors, m and the other
 * reductions rolled into the same loop.  The rule, by cases on f:
 *   - f independent of m: c = 1;
 *   - f = exp(e) with e = e0 + a * m, e0 independent of m and a a constant
 *     (a sum/difference of such terms, m scaled by constants):
 *     f(x, m_new) = exp(a * (m_new - m_old)) * f(x, m_old), so
 *     c = exp(a * (m_new - m_old)) (softmax: a = -1, c = exp(m_old - m_new));
 *   - products of such terms multiply their corrections (their a add up);
 *     a quotient by an m-independent term or by such an exp divides them;
 *     a sum of terms with the same correction keeps it;
 *   - a quotient by a block that reduces with += and is rolled into the same
 *     loop (softmax's l) is deferred: r accumulates the numerator and is
 *     divided by that block's final value after the loop (left as it is
 *     where that value is 0: an empty row, where the reference sums nothing).
 * c is always positive (an exp), so it commutes with max= as well as +=.
 * Anything else has no correction and is refused, with the reason: m as a
 * factor or an operand outside exp (e.g. max over exp(x) * m: m_new/m_old
 * may be negative or 0), an exp of a non-linear function of m, a sum of
 * terms with different corrections, a function other than exp of m.
 * The source is m; divisors lists the deferred divisor stages. */
typedef struct loom_rolling_rule {
    int source;                    /* stage of the running max m */
    double coef;                   /* a: c(m_old, m_new) = exp(a * (m_new - m_old)) */
    int ndiv;
    int div[LOOM_MAX_STMTS];       /* deferred divisor stages (rolled, +=) */
} loom_rolling_rule;

/* Derive the correction of rolling stage r into the reduction of stage m
 * (the rule above), treating the stages whose `rolling` flag is set and
 * that are placed at the same loop as rolled.  Errors: LOOM_ERR_SEMANTIC
 * `rolling-update-no-correction: <reason>`. */
loom_status loom_rolling_correction(const loom_schedule *sch, int r, int m, loom_rolling_rule *out,
                                    loom_error *err);

/* RollingUpdate (Neptune's rolling update; FlashAttention's online softmax):
 * move reduction block `block` (r) into loop `loop` of an earlier block m
 * (its source: a max= reduction whose operand r reads, directly or through
 * inlined blocks), so both run in one loop; whenever m's running value
 * grows, r's partial is rescaled by the correction of
 * loom_rolling_correction, and a division by a rolled block is deferred to
 * after the loop.  The loop must be m's innermost loop, iterate m's one
 * reduced index (dense, a causal/band range, or a compressed level: then
 * it is a position loop over the mask's stored entries), and not be split;
 * r reduces over exactly one index.  Rules: `rolling-update-source` (m is
 * not a max= reduction over the loop, or r does not read m),
 * `rolling-update-loop` (not m's innermost reduction loop, or split),
 * `rolling-update-reads-later` (r reads a block computed after m that is
 * neither inlined nor rolled into the same loop: inline it first, or roll
 * it first), `rolling-update-no-correction` (the rule above).
 * enable_rv: -1, or an ExprRV (a SampleCategorical's output) whose value 0
 * makes the call a no-op, so a sampled decision switches the fusion on and
 * off on replay (modules never branch the design space; MetaSchedule).
 * Records "RollingUpdate" [block, loop] or [block, loop, enable]. */
loom_status loom_rolling_update(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv, loom_error *err);

/* SplitKUpdate (Neptune's split-K update; FlashDecoding, Dao et al. 2023):
 * the rolled loop `loop` of source block `block` (a block that others are
 * rolled into, see loom_rolling_update) runs as `factor` chunks of about
 * equal length (of the row's dense range, causal/band range, or stored
 * positions), each with its own running max and partials of the rolled
 * blocks; a combine loop then merges the chunks with the same correction:
 * M = max_c m_c, r = sum_c (or max_c) r_c * exp(a * (M - m_c)), chunks
 * that saw no entry skipped.  `loop` may then be Parallel (the chunks are
 * independent; the validator's parallel-reduction rule exempts it), with
 * the row loops serial.  factor = 1 removes the split.  The factor is the
 * constant `factor` or, when factor_rv >= 0, that ExprRV's value (a sampled
 * factor).  The chunk count takes effect while blocks are rolled into the
 * loop (so a sampled fusion switch may turn the rolling off and leave this
 * call harmless).  Rules: `split-k-source` (the loop is not the block's
 * innermost unsplit reduction loop, or the block is not a max= reduction
 * over one index), `split-k-factor` (factor not in 1..256).  Records
 * "SplitKUpdate" [block, loop, v] or [block, loop] with attrs [factor]. */
loom_status loom_split_k_update(loom_schedule *sch, int block_rv, int loop_rv, int factor_rv, int64_t factor,
                                loom_error *err);

/* Elements of stage s's workspace (its static size), or -1 when it has
 * none or an index inside it has a data-dependent extent. */
int64_t loom_workspace_elems(const loom_schedule *sch, int s);

/* 1 if loom_compute_inline would succeed on stage s. */
int loom_can_inline(const loom_schedule *sch, int stage);

/* ---- sampling (the holes) ------------------------------------------- */

/* SamplePerfectTile (MetaSchedule, sampling.cc): n tile sizes whose product
 * is the loop's extent, drawn by distributing each prime factor's exponent
 * with stars and bars, rejecting draws whose innermost tile exceeds
 * max_innermost (-1: no limit).  For a data-dependent extent, tiles are
 * powers of two (1..max_innermost) with the outermost inferred (0).
 * With `decision` non-NULL the tiles are taken from it and repaired if they
 * no longer tile the extent (inner to outer: a tile that does not divide
 * the rest becomes the rest; the outermost takes what remains).  The used
 * decision is written back to decision_out (may be NULL).  Outputs n
 * ExprRVs.  Errors: no rng and no decision; n out of 1..LOOM_MAX_INST_IO. */
loom_status loom_sample_perfect_tile(loom_schedule *sch, int loop_rv, int n, int max_innermost,
                                     const int64_t *decision, int64_t *decision_out, int *out_expr_rvs,
                                     loom_error *err);

/* SampleCategorical: an index drawn with probabilities probs[] (they need
 * not sum to 1); the output ExprRV is candidates[index].  A decision out of
 * range is an error (not repaired, as in MetaSchedule). */
loom_status loom_sample_categorical(loom_schedule *sch, int n, const int64_t *candidates, const double *probs,
                                    const int64_t *decision, int64_t *decision_out, int *out_expr_rv,
                                    loom_error *err);

/* The legal loop orders of a block (AutoSparse): permutations of its loops
 * that traverse every sparse operand concordantly (a compressed or range
 * level only inside its parent level's loops) and keep split children in
 * their relative order.  Enumerated in lexicographic order of the current
 * loops' positions; at most `max` written (orders[k][i] = position in the
 * current loop list of the loop placed i-th).  Returns the count. */
int loom_legal_loop_orders(const loom_schedule *sch, int stage, int (*orders)[LOOM_MAX_LOOPS], int max);

/* SampleLoopOrder: choose one of the legal orders (uniformly, or with
 * `prior` index given probability prior_weight when prior >= 0) and apply
 * it as a reorder.  Decision = the index into the enumeration; an index out
 * of range on replay is repaired to the nearest legal one (the last).
 * Outputs one ExprRV (the index). */
loom_status loom_sample_loop_order(loom_schedule *sch, int block_rv, int prior, double prior_weight,
                                   const int64_t *decision, int64_t *decision_out, int *out_expr_rv,
                                   loom_error *err);

/* SampleComputeLocation (MetaSchedule, sampling.cc): choose uniformly
 * among the block's candidate locations -- -2 (inline) when loom_can_inline,
 * -1 (root) always, k >= 0 for loop k of the block's first consumer, from
 * the outermost down to its first reduction loop, and only where every
 * other reader of the block already runs inside that loop (Honeybee's
 * strong soundness: a location no reader could see is never offered) --
 * and apply it (unlike MetaSchedule, which returns a
 * LoopRV for a separate ComputeAt, loom samples and places in one
 * instruction so a trace stays valid under mutation).  On replay a decision
 * that is no longer legal is repaired the MetaSchedule way: the nearest
 * earlier candidate, else root.  A block rolled into a loop (RollingUpdate)
 * keeps its place: the decision is drawn and recorded, nothing moves.
 * Outputs one ExprRV (the decision). */
loom_status loom_sample_compute_location(loom_schedule *sch, int block_rv, const int64_t *decision,
                                         int64_t *decision_out, int *out_expr_rv, loom_error *err);

/* The candidate locations SampleComputeLocation would choose among for
 * stage s now, in its order (inline, root, consumer loops outermost
 * first): written to cand (room for 2 + LOOM_MAX_LOOPS), count returned.
 * The compute-location mutator uses it to propose a different one. */
int loom_compute_location_candidates(const loom_schedule *sch, int s, int64_t *cand);

/* ---- fusion groups (dsl/schedule/fusion_group.c; AutoSparse) -------------------- */

#define LOOM_FUSE_FREE 0
#define LOOM_FUSE_YES 1
#define LOOM_FUSE_NO 2

/* Is the edge from stage p to its consumer offered to SampleFusionGroup?
 * Returns -1 when p has no edge to decide (not a temporary, no reader, or
 * a program with a max= chain, which attention-fusion owns); 0 when p is
 * a temporary whose fusion is not legal (read by several operators, or no
 * place inside its consumer: the reason goes to why[0..n), may be NULL);
 * 1 when it is offered.  *consumer = p's first reader (-1 when none).
 * Legal means SampleComputeLocation would offer p, as the schedule stands,
 * a place inside its consumer other than the root (inlined or at one of
 * its loops above its first reduction loop). */
int loom_fusion_edge_legal(const loom_schedule *sch, int p, int *consumer, char *why, size_t n);

/* The offered edges in program order of the producers: producers[k] ->
 * consumers[k] (room for LOOM_MAX_STMTS each); returns their count.
 * *nconstrained (may be NULL) = the temporaries SampleFusionGroup
 * constrains (those with loom_fusion_edge_legal >= 0). */
int loom_fusion_edges(const loom_schedule *sch, int *producers, int *consumers, int *nconstrained);

/* SampleFusionGroup(block) (AutoSparse's fusion groups; DESIGN.md): the
 * decision is a bit mask over the offered edges (loom_fusion_edges, bit k
 * = edge k fused), drawn with each bit 1/2 (or `decision`, repaired to the
 * edges that exist on replay).  It sets every constrained temporary's
 * `fuse`: LOOM_FUSE_YES for the fused edges' producers, LOOM_FUSE_NO for
 * the rest; SampleComputeLocation then offers a fused producer only places
 * inside its consumer and an unfused one only the root, and the validator
 * (`fusion-group`) checks the placements agree.  The block is the one the
 * module runs on (the program's last); outputs one ExprRV (the mask).
 * Errors: LOOM_ERR_INVALID (a bad BlockRV, no random generator, too many
 * RVs).  Records "SampleFusionGroup" [block], decision [mask]. */
loom_status loom_sample_fusion_group(loom_schedule *sch, int block_rv, const int64_t *decision,
                                     int64_t *decision_out, int *out_expr_rv, loom_error *err);

/* ---- the instruction registry (dsl/schedule/inst.h, dsl/schedule/inst.c) ---------------- */

/* Included last: the kinds' traits refer to the types above. */
#include "inst.h"

#endif
