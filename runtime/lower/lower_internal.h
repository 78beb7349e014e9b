/* Private to runtime/lower/lower.c, lower_loops.c and lower_ctx.c: the state of
 * lowering one statement and the helpers the files share.  Three layers,
 * each calling only the ones below it (scripts/check-cycles.sh):
 *   lower.c       drives a statement (expressions, accumulators, placement,
 *                 the nest); installs c->inner;
 *   lower_loops.c emits its loops (dense, position and merged levels, range
 *                 bounds, guards) and CacheWrite workspaces; reaches the
 *                 body of a loop through c->inner;
 *   lower_ctx.c   the context's leaf helpers (out of memory, extents, range
 *                 bounds, group positions, identity, loop notes). */
#ifndef LOOM_LOWER_INTERNAL_H
#define LOOM_LOWER_INTERNAL_H

#include "lower.h"
#include "../../dsl/schedule/query.h"
#include "../../dsl/ir/domain.h"

#define MAXG (LOOM_MAX_EXPRS)

/* A group of operands that share positions: same pattern root and the same
 * index variable at every level. */
typedef struct group {
    int root;                      /* tensor owning the pos/crd arrays */
    int nlevels;
    int var[LOOM_MAX_ORDER];       /* program var per level */
    int pos[LOOM_MAX_ORDER];       /* LIR local: position at level l, -1 unbound */
    int lo[LOOM_MAX_ORDER];        /* LIR local: lo of a range level */
} group;

typedef struct lctx {
    const loom_program *prog;
    const loom_schedule *sch;
    lir_func *f;
    loom_error *err;
    int si;                        /* statement (= stage) index */
    const loom_stmt *st;
    const loom_stage *S;
    int ngroups;
    group g[LOOM_MAX_EXPRS / 2 + 2];
    int vmap[LOOM_MAX_VARS];       /* index var substitution while inside an inlined
                                      producer's expression (identity otherwise) */
    int lhs_group;                 /* -1 when the lhs is dense */
    int xv[LOOM_MAX_VARS];         /* LIR local of a program index var, -1 unbound */
    int xclamp[LOOM_MAX_VARS];     /* 1 + LIR local of min(x, extent - 1), which dense
                                      operand reads use for an index whose register
                                      tile overhangs its extent inside a CacheWrite
                                      workspace (loom__lw_iter_bound); 0: none */
    int itv[LOOM_MAX_ITERS];       /* LIR local holding an iter's value, -1 unbound */
    int pos_start[LOOM_MAX_ITERS]; /* POS outer iter: LIR locals of its range start/end */
    int pos_end[LOOM_MAX_ITERS];
    int fixed[LOOM_MAX_VARS];      /* placed stage: LIR local giving an index its value
                                      from the location, -1 when it iterates */
    int skip[LOOM_MAX_LOOPS];      /* placed stage: the loop is not emitted (fixed index) */
    int *emitted;                  /* per stage: 1 once lowered (shared by all contexts) */
    int scalar_acc, has_red, last_free_depth;
    int ws_depth;                  /* CacheWrite: position of the workspace loop, -1 */
    int ws_buf, ws_active, lhs_buf_global;
    int ws_accum;                  /* 1: a reduction loop is outside the workspace
                                      loop, so the copy-out accumulates into the
                                      output (filled with the identity first) */
    int ws_base[LOOM_MAX_ORDER];   /* LIR locals: the output coordinate of local 0 */
    int64_t ws_ext[LOOM_MAX_ORDER];/* local extent per output dimension */
    int ws_guard[LOOM_MAX_ORDER];  /* 1: base + local may pass the extent */
    int epi_k;                     /* LOOM_ANN_EPILOGUE: the copy-out evaluates the first
                                      epi_k stages of epi_chain and stores the last
                                      one's value (dsl/schedule/epilogue.c); 0 none */
    int epi_chain[LOOM_MAX_STMTS];
    int epi_tensor, epi_var;       /* while lowering it: reads of epi_tensor are the
                                      LIR local epi_var (the value just computed) */
    int pack_depth;                /* PackPanel: position of the pack loop, -1 */
    int pack_active, pack_buf, pack_n;
    int pack_var[LOOM_MAX_ORDER];  /* the packed operand's index vars */
    int pack_base[LOOM_MAX_ORDER]; /* LIR locals: the panel's first coordinate */
    int64_t pack_ext[LOOM_MAX_ORDER];
    int64_t pack_nr;               /* > 0: the panel is in the register tile's vector
                                      order, [last index / nr][others][nr] (nr =
                                      the last index's innermost tile) */
    int pack_tile0, pack_tile1;    /* the last index's tiles inside the pack loop,
                                      [pack_tile0, pack_tile1) without the innermost */
    int rf_iter;                   /* RFactor: the reduction loop's iter, -1 */
    int rf_buf;                    /* its partials buffer */
    int acc;                       /* LIR local of the scalar accumulator */
    int psum_depth;                /* LOOM_ANN_PARTIAL_SUMS: the innermost (vectorized
                                      reduction) loop updating psum_buf[its value]
                                      instead of acc; -1 none */
    int psum_buf;                  /* its local array of psum_ext partial sums */
    int64_t psum_ext;
    int lhs_buf;
    loom_status status;
    /* Lower the loops below depth d into seq, then the body (lower.c's; set by
     * the context's creator).  lower_loops.c opens a loop and calls this for
     * its body: a callback, so that the loop layer does not call back into
     * the statement layer above it. */
    int (*inner)(struct lctx *c, int d, lir_stmt *seq);
    /* The epilogue of a workspace copy-out (c->epi_k > 0; lower.c's, as
     * inner): with gvar[d] the LIR locals of the output coordinates and val
     * the complete reduction value, append to body the chain's values and
     * the store of the last one. */
    int (*epilogue)(struct lctx *c, lir_stmt *body, lir_expr *val, const int *gvar);
    /* union coiteration (lower_merge.c): the statement's domain over its
     * operand groups (dsl/ir/domain.h); union_mode when it is not the plain
     * intersection of every group */
    int union_mode;
    loom_domain dom;
    int has[MAXG / 2 + 2];         /* LIR local (bool): group present at the point; -1 always */
    int nuval;                     /* guarded value locals made for the current body */
    int uval_g[MAXG / 2 + 2], uval_t[MAXG / 2 + 2], uval_v[MAXG / 2 + 2];
    lir_stmt *pre;                 /* where guarded values are computed (before the body's store) */
} lctx;

/* The format of group gi's pattern root. */
static inline const loom_format *group_format(const lctx *c, int gi) { return &c->prog->tensors[c->g[gi].root].format; }

/* ---- lower_ctx.c ---- */

/* Bind the positions of the groups whose level is driven by index x (seq: where the lets go). */
int loom__lw_bind_positions(lctx *c, int x, lir_stmt *seq);
/* Set (once) and return LOOM_ERR_NOMEM. */
loom_status loom__lw_fail_nomem(lctx *c);
/* The reduction's identity (0, or -INFINITY for max=). */
lir_expr *loom__lw_identity(lctx *c);
/* The elements of tensor t: nnz for a sparse one, the product of its
 * dimensions for a dense one (lower_ctx.c). */
lir_expr *loom__lw_tensor_size(lctx *c, int t);
/* What the output needs before statement c's nest, appended to target
 * (lower_output.c): an rfactor's partials filled with the identity (and
 * c->lhs_buf switched to them); else, when the nest accumulates through
 * memory or skips elements, the output -- for a block placed at a loop, its
 * slice there -- filled with it.  Returns c->status (LOOM_ERR_SEMANTIC
 * compute-at-accumulates where a placed block's slice cannot be reset). */
int loom__lw_init_output(lctx *c, lir_stmt *target);
/* Record loop d of the stage on its LIR loop (simd reduction, unroll factor, unroll annotation). */
void loom__lw_note_loop(lctx *c, int d, lir_stmt *loop);
/* The position of group gi at level l - 1 (0 at level 0). */
lir_expr *loom__lw_parent_pos(lctx *c, int gi, int l);
/* Lo and hi of a range (causal, band) level l of group gi. */
void loom__lw_range_bounds(lctx *c, int gi, int l, lir_expr **lo, lir_expr **hi);
/* The extent of index variable v as an LIR expression. */
lir_expr *loom__lw_var_extent(lctx *c, int v);
/* The part of index v that the loops inside loop position L iterate (a
 * workspace's, a packed panel's or a prefetched row's span): *ext, *base its
 * first coordinate, *overhang, *outside.  Returns 0, or -1 when the loops
 * inside are not the innermost tiles of one split (lower_ctx.c). */
int loom__lw_region_dim(lctx *c, int L, int v, lir_expr **base, int64_t *ext_out, int *overhang, int *outside_out);

/* ---- lower_balance.c (called by lower_loops.c) ---- */

/* The "balance" chunk count of loop d (0: none). */
int64_t loom__lw_balance_chunks(const lctx *c, int d);
/* Open the parallel loop over K equal-nonzero chunks of the rows (index x,
 * loop d) in *seq, make *seq its body, and give the chunk's row range in
 * *lo, *hi.  Errors: balance-rows (loop d is not a CSR-like row loop). */
int loom__lw_balanced_rows(lctx *c, int d, int x, int64_t K, lir_stmt **seq, lir_expr **lo, lir_expr **hi);

/* ---- lower_prefetch.c (called by lower_loops.c) ---- */

/* In body (of loop d over the positions, local posv, of level l of the
 * group rooted at tensor root): the prefetch of the dense row the entry
 * "prefetch" positions ahead gathers, when loop d is so annotated (and,
 * inside a CacheWrite workspace, a compiler barrier: LIR_S_BARRIER); nothing
 * otherwise.  Errors: prefetch-gather (loop d is not such a loop). */
int loom__lw_prefetch(lctx *c, int d, int root, int l, int posv, lir_stmt *body);

/* ---- lower_loops.c ---- */

/* Bind index x to v (with an optional guard), advancing *seq into the guarded body. */
int loom__lw_bind_var(lctx *c, int x, lir_expr *v, lir_expr *extra_guard, lir_stmt **seq);
/* Open `if (cond)` in *seq and make *seq its body (cond NULL: nothing). */
int loom__lw_guard_into(lctx *c, lir_expr *cond, lir_stmt **seq);
/* The guard of an overhanging split/fused tile, into *seq. */
int loom__lw_iter_bound(lctx *c, int it, lir_stmt **seq);
/* Emit a position-split loop (outer chunks or inner positions) at depth d. */
int loom__lw_lower_pos_loop(lctx *c, int d, lir_stmt *seq, int it, lir_loop_kind kind);
/* Emit the loop of index x at depth d: dense, position, range or merged levels. */
int loom__lw_lower_var_loop(lctx *c, int d, lir_stmt *seq, int x, lir_loop_kind kind);
/* lower.c's helpers for lower_merge.c: the group of an access, inlining. */
int loom__lw_group_for(lctx *c, int t, const int *idx);
int loom__lw_inlined(const lctx *c, int t);
void loom__lw_mapped_idx(const lctx *c, const loom_expr *E, int *idx);
const loom_stmt *loom__lw_enter_inline(lctx *c, const loom_expr *E, int *saved);
void loom__lw_leave_inline(lctx *c, const loom_stmt *ps, int n, const int *saved);
/* The domain (dsl/ir/domain.h) of expression e over operand groups, through
 * inlined producers (collect_groups has made every group). */
void loom__lw_domain_of(lctx *c, int e, loom_domain *d);
/* Union mode: where every sparse access under e is stored (a function's
 * mask), and where e is present by the algebra, as conditions on the
 * presence flags; NULL when always. */
lir_expr *loom__lw_all_present(lctx *c, int e);
lir_expr *loom__lw_present(lctx *c, int e);
/* Union mode: the statement's domain over groups (lower.c computes it) and
 * the checks that lowering can merge it: every group's only non-dense level
 * is its last one, compressed.  Errors: union-coiteration-format. */
int loom__lw_union_begin(lctx *c);
/* Union mode: emit the merge of the compressed levels C[k] (at level Cl[k])
 * of index x at depth d: a while loop over the union of their coordinates,
 * or a dense loop with a cursor per level when a union term does not
 * constrain x; the rest of the nest (loom__lw_inner) runs where the
 * domain's condition holds. */
int loom__lw_union_loop(lctx *c, int d, lir_stmt *seq, int x, lir_loop_kind kind, const int *C, const int *Cl,
                        int nC, int nR);
/* Union mode: the value of tensor t through group gi at the point, 0 where
 * the group does not store it (a guarded local computed into c->pre). */
lir_expr *loom__lw_union_value(lctx *c, int gi, int t, lir_expr *load);
/* Union mode: `val` where cond holds, else 0 (a guarded local in c->pre);
 * cond NULL means always. */
lir_expr *loom__lw_union_guard(lctx *c, lir_expr *cond, lir_expr *val);

/* CacheWrite: open the workspace (declare, zero) at the workspace loop. */
int loom__lw_ws_begin(lctx *c, lir_stmt **seq);
/* PackPanel: copy the packed operand's panel into its local buffer at the
 * start of the pack loop's body (seq) and read it from there until
 * pack_active is cleared; loom__lw_pack_index: the local index of an access. */
int loom__lw_pack_begin(lctx *c, lir_stmt *seq);
lir_expr *loom__lw_pack_index(lctx *c, const int *idx);
/* CacheWrite: copy the workspace out to the output (with an epilogue,
 * c->epi_k > 0: the chain's last tensor, through c->epilogue). */
int loom__lw_ws_end(lctx *c, lir_stmt *seq);

#endif
