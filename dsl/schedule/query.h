/* loom: read-only questions about a program and its schedule, asked by the
 * primitives, the validator, the lowering and the modules alike (in TVM they
 * live in tir/analysis and tir/schedule/analysis).  Keeping one answer per
 * question keeps the layers from drifting apart: a primitive, the validator
 * and the lowering must agree on what a loop iterates.
 *
 * None of these allocate or fail; out-of-range arguments give the "none"
 * answer documented with each.
 */
#ifndef LOOM_QUERY_H
#define LOOM_QUERY_H

#include "../ir/program.h"
#include "schedule.h"

/* ---- annotation keys the lowering reads (Annotate's `key`) --------------- */

/* On a serial loop: unroll by the value when it is > 1 (MetaSchedule's
 * "meta_schedule.unroll_explicit"; runtime/lower/lower.c). */
#define LOOM_ANN_UNROLL "unroll"
/* On the loop a RollingUpdate chain is rolled into: the rows per block (Br)
 * and keys per block (Bc) of FlashAttention-2's tiling (Dao, 2023;
 * runtime/lower/lower_fusion_tile.c). */
#define LOOM_ANN_ROW_TILE "row_tile"
#define LOOM_ANN_KEY_TILE "key_tile"
/* On a parallel row loop (issue 13): run it as `value` chunks of about
 * equal stored entries rather than equal rows -- a balanced row partition
 * of the compressed level below the row index, found at run time by a
 * binary search of its pos array (merge-path SpMM's row split: Merrill and
 * Garland, SC 2016; the nnz-balanced rows of MKL's and GraphBLAS's
 * row-parallel kernels); 0 keeps OpenMP's equal rows.  Where it may go:
 * loom_balance_tensor. */
#define LOOM_ANN_BALANCE "balance"
/* On a loop over the positions of a compressed level (issue 13): software-
 * prefetch the row of the dense operand that the entry `value` positions
 * ahead will gather (B[crd[p + value], :] for SpMM), so its cache lines are
 * in flight while this entry's row is used (the prefetch of the indirect
 * stream in Ainsworth and Jones, CGO 2017; MKL's and ASpT's SpMM prefetch
 * the next B rows).  0: none.  Where it may go: loom_prefetch_tensor. */
#define LOOM_ANN_PREFETCH "prefetch"
/* On the loop holding a CacheWrite workspace (issue 13): a value of
 * LOOM_STREAM_ON (2) copies the workspace out with non-temporal (streaming)
 * stores, so the output's lines are written without being read first (no
 * read-for-ownership: at F = 128 on web-NotreDame, C's 167 MB are not
 * read).  Values 0 and 1 keep ordinary stores: the annotation takes the
 * register tile's three-way decision (multi-level-tiling: 0 no workspace,
 * 1 a workspace, 2 a streamed workspace) so one sampled value drives both
 * the CacheWrite and its copy-out, and no draw asks to stream a workspace
 * that is not there.  Only where each output element is written once
 * (validator rule stream-store); a workspace that is not one contiguous run
 * of the output keeps ordinary stores. */
#define LOOM_ANN_STREAM "stream"
#define LOOM_STREAM_ON 2
/* On the loop holding a CacheWrite workspace (issue 30): a value k >= 1
 * evaluates the first k stages of the block's epilogue chain
 * (loom_epilogue_chain: the elementwise statements that consume its
 * temporary one after another, as `Z = Z_sum + b; Y = relu(Z)`) in the
 * workspace's copy-out, where each element of the reduction is complete and
 * still in registers: the copy-out stores the k-th stage's value into that
 * stage's tensor, and the reduction's temporary and the chain's first k - 1
 * tensors are never stored (nor allocated).  TVM's ReverseComputeInline of
 * the consumers into the block, at the point of its cache write (the
 * epilogue fusion of BLAS and CUTLASS kernels: bias and activation applied
 * to the accumulator tile before its store).  0: none; inert on a loop
 * without a workspace (the register tile's own decision may switch it off).
 * Where it may go: loom_epilogue_stages (validator rule epilogue). */
#define LOOM_ANN_EPILOGUE "epilogue"
/* On the same loop: the vector lanes and vector registers of the target the
 * fused lowering shapes its register tiles for (the dot product's lane
 * accumulators, the score block's and the output slice's register tiles:
 * loom_register_tile, dsl/ir/limits.h, and their two-vector form,
 * runtime/lower/lower_fusion_internal.h).  Written by the attention-fusion
 * module from its target's limits; the validator refuses values above the
 * target's (rule register-tile); without them the lowering uses the
 * limits it is given (loom_lower_for; NULL: the CPU target's). */
/* On the innermost, vectorized reduction loop of a dot product (issue 13,
 * SDDMM): 1 accumulates into `extent` partial sums (a local array the
 * vectorized loop updates elementwise, one vector accumulator per lanes of
 * it, several when the loop is longer than the target's lanes), folded
 * once after the whole reduction; 0 keeps the scalar accumulator that the
 * vectorized loop reduces into at every pass (a horizontal reduction per
 * outer tile of the dot product).  Where it may go: loom_partial_sums_ok. */
#define LOOM_ANN_PARTIAL_SUMS "partial_sums"
/* The most partial sums (floats) LOOM_ANN_PARTIAL_SUMS keeps. */
#define LOOM_MAX_PARTIAL_SUMS 64
#define LOOM_ANN_VECTOR_LANES "vector_lanes"
#define LOOM_ANN_VECTOR_REGISTERS "vector_registers"

/* ---- loops and index variables ------------------------------------------- */

/* The program index variable that iter `it` of stage S iterates (a prog->vars
 * index): the VAR or POS iter's variable, reached through any chain of
 * splits (a tile of i iterates i).  -1 when it iterates several variables (a
 * FUSE iter or a split of one) and when it is out of range (< 0 or >=
 * S->niters). */
int loom_iter_var(const loom_stage *S, int it);

/* The tensor whose row partition a "balance" annotation on loop p of stage
 * s would use: loop p is the block's outermost loop, a VAR loop of index x
 * that is the dense first level (mode 0) of an operand whose second level
 * is compressed (CSR-like: pos[1] has one entry per row plus one), and x
 * has no range (causal, band) bounds.  The first such operand of the
 * statement (an access in the right-hand side), or -1. */
int loom_balance_tensor(const loom_schedule *sch, int s, int p);

/* The dense operand whose rows a "prefetch" annotation on loop p of stage s
 * would prefetch: loop p iterates the positions of a compressed level that
 * is the last level of its tensor's format (an unsplit loop of a compressed
 * index with one driving pattern, or the inner loop of its PosSplit), and an
 * input tensor stored dense is read on s's right-hand side with that index
 * as its first index (its row at that coordinate is contiguous).  The first
 * such tensor (prog->tensors index), or -1. */
int loom_prefetch_tensor(const loom_schedule *sch, int s, int p);

/* 1 when loop p of stage s may carry LOOM_ANN_PARTIAL_SUMS: it is the
 * stage's innermost loop, vectorized, a reduction loop of constant extent
 * 1..LOOM_MAX_PARTIAL_SUMS, every reduction loop of the stage is inside its
 * last free loop (the reduction accumulates in a scalar per output
 * element), and the stage has no RFactor, no workspace (CacheWrite) and is
 * not inlined or rolled.  Else 0. */
int loom_partial_sums_ok(const loom_schedule *sch, int s, int p);

/* The loop of stage s annotated LOOM_ANN_PARTIAL_SUMS with a value >= 1,
 * or -1 (dsl/schedule/psum.c). */
int loom_partial_sums_loop(const loom_schedule *sch, int s);

/* 1 when a workspace (CacheWrite) at loop position L of stage s can be
 * lowered: every output index is iterated either only outside loop L, or
 * only inside it, or by the tiles of one split (no nested split) of which
 * those inside L are the innermost ones (runtime/lower/lower_loops.c's
 * workspace; the validator's rule cache-write-split).  0 otherwise (also
 * for an out-of-range s or L). */
int loom_workspace_split_ok(const loom_schedule *sch, int s, int L);

/* The index variables of stage s's reads of tensor t (dsl/schedule/pack.c): count
 * (idx filled), or -1 when it does not read t or reads it at two different
 * index lists. */
int loom__pack_idx(const loom_program *prog, int s, int t, int *idx);

/* The same for any index variables vars[0..nvars) of stage s (a packed
 * operand's indices, PackPanel); s and L must be in range. */
int loom__region_split_ok(const loom_schedule *sch, int s, int L, const int *vars, int nvars);

/* 1 when iter `it` of stage S derives from index variable x through splits,
 * position splits and fusions (a fusion derives from both of its parts), 0
 * otherwise (also for an out-of-range it). */
int loom_iter_derives_from(const loom_stage *S, int it, int x);

/* The position (0 = outermost) of stage S's loop over iter `iter`, or -1
 * when no current loop iterates it (split, fused or position-split away). */
int loom_loop_of_iter(const loom_stage *S, int iter);

/* The position of the loop that binds split tile `it` of stage S: its own
 * loop, else (a tile fused into an outer loop, as the parallel i.0 x j.0 of
 * a GEMM) the loop at position <= L over the fusion it went into, when that
 * fusion is not fused further; -1 otherwise (a nested split).  Shared by
 * the workspace checks (loom_workspace_split_ok) and the lowering's
 * workspace regions (runtime/lower/lower_loops.c). */
int loom_tile_loop(const loom_stage *S, int it, int L);

/* ---- placement ------------------------------------------------------------ */

/* The stages that read stage s's tensor where it is used: the later stages
 * whose right-hand side reads it, where an inlined reader (ComputeInline)
 * is looked through to the stages that read it in turn (an inlined block
 * reads where its readers run).  Fills readers[] (room for LOOM_MAX_STMTS)
 * with the non-inlined ones in discovery order (worklist order: s's direct
 * readers by index, then those of each inlined reader); returns how many. */
/* The first statement after s whose right side reads s's tensor (its
 * first consumer, in program order); -1 when none does. */
int loom_first_consumer(const loom_program *prog, int s);

int loom_stage_readers(const loom_schedule *sch, int s, int *readers);

/* ---- epilogues (dsl/schedule/epilogue.c) ------------------------------- */

/* Stage s's epilogue chain: the stages c1, c2, ... (filled into chain[],
 * room for LOOM_MAX_STMTS) where c1 is the only reader of s's tensor, c2
 * the only reader of c1's, and so on while the tensor read is a temporary;
 * each is elementwise over its producer's tensor (no reduction, `=`, its
 * output dense and of the same order), reads that tensor exactly once at
 * its own output indices (the same coordinates), every other operand dense and written
 * before s (an input, or an earlier temporary), and it is at the root or
 * inlined (not placed at a loop, rolled or rfactored) with no block placed
 * at one of its loops (they are not emitted).  s itself must be at
 * the root with a dense output whose every element its loops reach (no
 * sparse operand iterates an output index with a non-dense level).  Returns
 * the chain's length (0 when none or for an out-of-range s). */
int loom_epilogue_chain(const loom_schedule *sch, int s, int *chain);

/* The LOOM_ANN_EPILOGUE value on stage s's workspace loop, 0 when none
 * (or no workspace). */
int loom_epilogue_value(const loom_schedule *sch, int s);

/* The number of chain stages stage s's copy-out evaluates (chain[] filled
 * as loom_epilogue_chain): 0 when the annotation is absent, 0 or inert;
 * -1 when it asks for what cannot be: a reduction loop outside the
 * workspace loop (each copy-out adds a partial: no element is complete),
 * more stages than the chain has, or a last stage that is inlined (it has
 * no tensor to store into).  The validator's rule epilogue refuses -1; the
 * lowering emits k >= 1. */
int loom_epilogue_stages(const loom_schedule *sch, int s, int *chain);

/* ---- RollingUpdate -------------------------------------------------------- */

/* 1 when some block is rolled into a loop of stage s (RollingUpdate put it
 * there: its `rolling` is set and at_stage == s) -- into the loop over iter
 * `iter` of s, or into any loop of s when iter < 0; 0 otherwise. */
int loom_stage_rolled_into(const loom_schedule *sch, int s, int iter);

/* ---- accesses --------------------------------------------------------------- */

/* The first access of tensor t in expression e (prog->exprs index), in
 * left-to-right order of the expression tree: its expr index, or -1 when e
 * does not read t. */
int loom_expr_find_access(const loom_program *prog, int e, int t);

/* The tensor whose compressed level drives index variable x in statement s
 * when exactly one sparse pattern does (PosSplit's tensor argument): among
 * the accesses on s's right-hand side with a compressed level indexed by x,
 * all share one pattern (a tensor and those declared `pattern_of` it); the
 * first such access's tensor is returned.  Range levels (causal, band)
 * indexed by x do not drive it: they only guard the loop, as in the lowering
 * and loom_pos_split.  -1 when no compressed level or several patterns
 * (a merge) are indexed by x. */
int loom_single_driver(const loom_program *prog, int s, int x);

#endif
