/* loom: the built-in transformation modules (private to modules/; the
 * registry registers them, module.h documents them). */
#ifndef LOOM_BUILTIN_H
#define LOOM_BUILTIN_H

#include "module.h"

/* Number of built-in modules, and module k with its name. */
int loom__builtin_count(void);
loom_module_fn loom__builtin(int k, const char **name);

/* The first later stage that reads stage s's tensor, or -1. */
int loom__first_consumer(const loom_program *prog, int s);

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

/* Parallel candidate: the outermost loop of stage s iterates a free index
 * with at most one sparse pattern driving it. */
int loom__parallelizable(const loom_schedule *sch, int s);

/* fuse-producers (modules/fuse_producers.c): SampleFusionGroup on the
 * program's last block, then SampleComputeLocation of each temporary
 * inside its consumer (fused edge) or at the root. */
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

#endif
