/* loom: the built-in transformation modules (private to modules/; the
 * registry registers them, module.h documents them). */
#ifndef LOOM_BUILTIN_H
#define LOOM_BUILTIN_H

#include "module.h"

/* Number of built-in modules, and module k with its name and one-line doc
 * (builtin.c's table: the one list of the built-ins). */
int loom__builtin_count(void);
loom_module_fn loom__builtin(int k, const char **name, const char **doc);

/* The first later stage that reads stage s's tensor, or -1. */

/* Keys of the loops of stage s for an "SSRSRS"-style structure: the level
 * each loop belongs to, then its current position.  Split children of a
 * variable tiled in n levels take the first n S (or R) levels of
 * `structure`; a loop not split takes the first level of its kind.
 * key[p] for the loop at position p. */
void loom__structure_keys(const loom_schedule *sch, int s, const char *structure, int64_t *key);

/* 1 when the loop at position p of stage s would vectorize legally as the
 * innermost loop: constant extent in 2..max_extent, not a compressed
 * coordinate loop, not a reduction carried through memory. */
int loom__vectorizable(const loom_schedule *sch, int s, int p, int64_t max_extent);

/* The loop position at which multi-level-tiling offers stage s a CacheWrite
 * workspace (the loop just outside the first reduction loop, for a dense
 * kernel output with a free loop inside it), or -1 when it offers none
 * (builtin.c; the default schedule asks it too). */
int loom__ws_candidate(const loom_schedule *sch, int s, const loom_limits *lim);

/* The default schedule's value of the register-tile decision of stage s
 * (builtin.c): 1 (a workspace), or LOOM_STREAM_ON (2: its copy-out
 * streamed) when the output is larger than lim->llc_bytes (not when that
 * size is unknown, 0).  The values are also the decision's indexes. */
int64_t loom__default_ws(const loom_schedule *sch, int s, const loom_limits *lim);

/* The default schedule's tiling (Scorch's _apply_tiling_heuristics): dense
 * loops that carry reuse and are longer than LOOM__SCORCH_MIN_TILED are
 * tiled by LOOM__SCORCH_TILE.  Shared by modules/default.c and the space's
 * default (builtin.c), which must build the same kernel.  Only longer
 * loops: a 32-wide accumulator of a 128-float row is 2 AVX-512 registers, a
 * latency-bound FMA chain (measured: half the speed of the untiled row at
 * F = 128). */
#define LOOM__SCORCH_TILE 32
#define LOOM__SCORCH_MIN_TILED 128

/* The tile of a dense free loop of extent e that the default tiles (the
 * default schedule and the space's default, which must agree): Scorch's
 * LOOM__SCORCH_TILE (or the largest divisor of e below it), loops up to
 * LOOM__SCORCH_MIN_TILED untiled; for a block with an epilogue chain
 * (loom_epilogue_chain: a temporary consumed elementwise, the pruned
 * autoencoder's Z_sum = W X, Z = Z_sum + b, Y = relu(Z); issue 30) the
 * register tile instead: the widest width that loom_register_tile fits in
 * lim's registers as one row (accumulators + operand vectors + 1
 * broadcast), loops up to that width untiled -- AVX-512 (16 lanes, 32
 * registers) 128 floats, AVX2 (8 lanes, 16 registers) 56 -> 32 floats of
 * B = 256.  Measured on the autoencoder's layers (one thread, AMD EPYC
 * AVX-512, shared machine, 2026-11-28): a 32-float row tile ran enc1 at
 * density 0.48 in 14.8 ms, 128 floats in 10.6 ms, 256 in 10.8 ms.  Returns
 * the tile; *min_tiled the longest loop left whole. */
int64_t loom__free_tile(const loom_schedule *sch, int s, const loom_limits *lim, int64_t e, int64_t *min_tiled);

/* The values of the epilogue decision (LOOM_ANN_EPILOGUE) stage s's
 * register tile offers: 0, then every k whose chain stage k is not inlined
 * (vals: room for LOOM_MAX_STMTS + 1); returns how many (1: only 0, no
 * decision to make).  The default takes the last (the longest epilogue). */
int loom__epilogue_values(const loom_schedule *sch, int s, int64_t *vals);

/* The largest divisor of e that is <= cap (>= 1; dense.c). */
int64_t loom__divisor_at_most(int64_t e, int64_t cap);

/* Parallel candidate: the outermost loop of stage s iterates a free index
 * with at most one sparse pattern driving it. */
int loom__parallelizable(const loom_schedule *sch, int s);

/* reverse-compute-location (modules/reverse_location.c): ReverseComputeAt
 * of a block's single elementwise consumer at one of its loops, or not. */
loom_status loom__reverse_compute_location(loom_schedule *sch, int block_rv, const loom_module_ctx *ctx,
                                           loom_error *err);
/* dot-partial-sums (modules/partial_sums.c): partial sums of a sampled
 * dot product's vectorized reduction loop, or not. */
loom_status loom__dot_partial_sums(loom_schedule *sch, int block_rv, const loom_module_ctx *ctx, loom_error *err);
/* fuse-producers (modules/fuse_producers.c): SampleFusionGroup on the
 * program's last block, then, per temporary, SampleComputeLocation inside
 * its consumer (fused edge) or at the root, and SampleLoopOrder of a fused
 * one with a reduction. */
loom_status loom__fuse_producers(loom_schedule *sch, int block_rv, const loom_module_ctx *ctx, loom_error *err);

/* attention-fusion (modules/fusion.c): SampleCategorical between the
 * unfused chain and RollingUpdate of every reduction of the chain. */
loom_status loom__attention_fusion(loom_schedule *sch, int block_rv, const loom_module_ctx *ctx, loom_error *err);

/* 1 when stage s belongs to a fused chain (rolled, the source of rolled
 * blocks, or a block computed at the rolled loop: the scores): the other
 * modules leave it as attention-fusion set it (the source only gets its
 * row loops parallel); 2 for a temporary the source
 * reads: it stays at the root (fuse-producers leaves it) but its loops are
 * scheduled as usual; 0 otherwise. */
int loom__fusion_claimed(const loom_schedule *sch, int s);

/* ---- dense contractions (modules/dense.c) ---------------------------- */

/* 1 when stage s is a dense contraction the dense space fits: at the root,
 * untiled serial loops of constant extent, every operand and the output
 * dense, a reduction, an output of order >= 2 whose last index is some
 * operand's last index (the vector loop); not a block of a fused chain. */
int loom__dense_applies(const loom_schedule *sch, int s);

/* The dense space on block b (stage s, loom__dense_applies): i, j (the
 * output's last two indices) tiled in 3 levels, the first reduced index k
 * in 2 (j and k by SamplePerfectTile, innermost j <= 4 vectors; i by two
 * SampleCategoricals, i.2 in 1..vector_registers / 2 and i.1 in 1, 2, ..
 * 64, i.0 inferred: i.2 need not divide the rows, issue 12), order batch.. i0 j0 k0 i1 j1 k1 i2 j2, CacheWrite at j1
 * (the register tile), Fuse(i0, j0) Parallel (with batch indices, e.g.
 * heads: the batch loops fused and parallel instead), i2 annotated unroll
 * (its tile RV), j2 vectorized.  i3/j3/k2 non-NULL: those decisions instead of
 * sampled ones (the default schedule).  Errors: the primitives'. */
loom_status loom__dense_schedule(loom_schedule *sch, int b, const loom_limits *lim, const int64_t *i3,
                                 const int64_t *j3, const int64_t *k2, loom_error *err);

/* The module form (multi-level-tiling dispatches to it). */
loom_status loom__dense_tiling(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err);

/* 1 when the dense space scheduled stage s already (a workspace, a
 * parallel loop, the innermost vectorized): parallel-vectorize-unroll leaves it. */
int loom__dense_owned(const loom_schedule *sch, int s);

/* The default schedule's tiles for a dense stage: the register tile with the
 * most useful accumulators that fits the register file (MR x NR, NR a
 * multiple of the lanes dividing its extent; MR scored by the rows it
 * computes that exist, nv x Ei / ceil(Ei / MR), so it need not divide), k.1
 * <= 256, j.1 x NR <= 128, i.1 (a power of two) x MR <= 64 while the
 * parallel level keeps >= 2 jobs per core; i3 = {ceil(Ei / (i.1 MR)), i.1,
 * MR}. */
void loom__dense_default_tiles(const loom_schedule *sch, int s, const loom_limits *lim, int64_t *i3, int64_t *j3,
                               int64_t *k2);

/* MetaSchedule's AddRFactor (metaschedule.md 7): 1 when stage s is a dense
 * reduction at the root with untiled loops, reading no temporary (a block
 * placed in it would refuse rfactor), whose free loops give fewer than
 * lim->cores iterations while its first reduced index has >= 2 x cores: a
 * dot product, the sum of a short matrix. */
int loom__dense_rfactor_applies(const loom_schedule *sch, int s, const loom_limits *lim);

/* Its module form: the first reduced loop split by SamplePerfectTile (2
 * levels), the outer tile moved outermost, RFactor'ed (each of its
 * iterations accumulates its own partial copy of the output, a combine loop
 * reduces them) and Parallel.  Errors: the primitives'. */
loom_status loom__dense_rfactor(loom_schedule *sch, int b, const loom_module_ctx *ctx, loom_error *err);

#endif
