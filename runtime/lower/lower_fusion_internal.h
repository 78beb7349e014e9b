/* Private to the fused-chain lowering (lower_fusion.h): the state of
 * lowering one fused reduction chain and the helpers its files share.
 * Layers, each calling only the ones below it (scripts/check-cycles.sh):
 *   lower_fusion.c       the chain: its loops, mask and rolled blocks, the
 *                        row's end (loom__lower_rolling);
 *   lower_fusion_tile.c  the FlashAttention-2 tiled form;
 *   lower_splitk.c       a row under split-K;
 *   lower_fusion_regtile.c  the tiled form's register tiles;
 *   lower_fusion_keys.c  the loop over the reduced index in blocks of keys;
 *   lower_fusion_util.c  errors, expression translation, accumulators, row
 *                        loops, chunk bounds. */
#ifndef LOOM_LOWER_FUSION_INTERNAL_H
#define LOOM_LOWER_FUSION_INTERNAL_H

#include "lower_fusion.h"
#include "../../dsl/ir/limits.h"

#define MAXV LOOM_MAX_VARS
#define MAX_SLICE 16384 /* floats of a rolled block's local accumulator */

typedef struct rolled {
    int s;
    loom_rolling_rule rule;
    int vm[MAXV];                   /* r's vars -> LIR locals (-1 unbound) */
    int nextra;
    int extra[LOOM_MAX_ORDER];      /* r's free vars that m does not fix */
    int64_t ext[LOOM_MAX_ORDER];
    int64_t nslice;
    int acc;                        /* scalar accumulator (nslice == 1) */
    int buf;                        /* local array (nslice > 1), else -1 */
} rolled;

typedef struct fctx {
    const loom_schedule *sch;
    const loom_program *prog;
    lir_func *f;
    loom_error *err;
    int m;
    const loom_stmt *ms;
    int jvar;
    int root, var0;                 /* mask driving j (-1: dense) and m's var at its level 0 */
    int posv;                       /* LIR local: position in root's level 1 */
    int xv[MAXV];                   /* m's vars -> LIR locals */
    int accm;
    int pp_val[LOOM_MAX_STMTS];     /* blocks computed at the loop: value local, -1 */
    int pp_at[LOOM_MAX_STMTS][LOOM_MAX_ORDER]; /* ... and the LIR locals of their lhs indices */
    int nr;
    rolled r[LOOM_MAX_STMTS];
    const rolled *cur;              /* translating r's operand: divisions to defer */
    int extra_locals[LOOM_MAX_ORDER], nextra_locals;
    int nhoist;                     /* hoisted sub-expressions of this j step (shared by */
    int hoist_e[32], hoist_var[32]; /* the rolled blocks: expf is not CSE'd by the compiler */
    int hoist_vm[32][MAXV];         /* under -fmath-errno) */
    int chunk;                      /* split-K: LIR local of the chunk index, -1 */
    int64_t nchunks;
    loom_limits vl;                 /* vector lanes and registers the register tiles fit:
                                       the rolled loop's vector_lanes / vector_registers
                                       annotations, else the target's (loom_lower_for) */
    int dot_lanes;                  /* lane accumulators of a dot product (a power of two) */
    int const_dims;                 /* 1: dense indices use the bound sizes, not the runtime
                                       dims (constant strides: GCC's outer-loop vectorization
                                       needs them) */
    loom_status status;
} fctx;

/* The tiled form's state (lower_fusion_tile.c, lower_fusion_regtile.c). */
#define MAX_FACTORS 16

typedef struct tile {
    int64_t BR, BC, ND;     /* rows per tile, keys per block, extent of d */
    int64_t sx_rg, sx_np;   /* the score block's register tile: rows per group and partial
                               sums over d */
    int64_t sx_nv, sx_u;    /* ... vectors per row and floats per vector (loom__fu_regtile_shape) */
    int64_t o_rg, o_n;      /* the output slice's register tile: rows per group, of a
                               slice of o_n (o_rg 0: no single-index slice, generic form) */
    int64_t o_nv, o_u;      /* ... vectors per row and floats per vector */
    int64_t Ni, Nj;         /* extents of the tiled row index and of j */
    int ivar;               /* m's tiled row variable (program var) */
    int sd;                 /* the score block's stage */
    int svar_m[MAXV];       /* S's vars -> m's vars (-1: S's reduced var d) */
    int dvar;               /* S's reduced var */
    int nq, qf[MAX_FACTORS];/* row-side factors (expressions) */
    int nk, kf[MAX_FACTORS];/* key-side factors */
    double cst;             /* product of the constants */
    int nouter, outer[LOOM_MAX_ORDER]; /* m's vars the key side reads besides j */
    int64_t outer_ext[LOOM_MAX_ORDER];
    int pack;               /* LIR buffer of the packed key side */
    int64_t ntj;            /* key blocks */
    /* LIR locals */
    int i0, nr, jb, r, jj, dl;
    int qs, sx, cand, rmax;
    int acc[LOOM_MAX_STMTS];
    int hblk[32], nhblk;
    lir_stmt *decls;        /* the tile's local arrays declared late */
} tile;

/* ---- lower_fusion_util.c ---- */

/* The statement defining tensor t, -1 for an input. */
int loom__fu_def_of(const fctx *c, int t);
/* 1 if tensor t's block is inlined into its consumers. */
int loom__fu_inlined(const fctx *c, int t);
/* The LIR buffer of tensor t's values (TEMP for a temporary). */
int loom__fu_values_buffer(fctx *c, int t);
/* The rolled block of stage s, or NULL. */
const rolled *loom__fu_rolled_of(const fctx *c, int s);
/* Row-major linear index of dense tensor t at the LIR locals locals[]. */
lir_expr *loom__fu_dense_index(fctx *c, int t, const int *locals);
/* Set and return LOOM_ERR_UNSUPPORTED ("rolling-update-layout: ..."), or
 * the status already set. */
loom_status loom__fu_unsupported(fctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Expression e under the variable map vm (LIR locals), deferred divisions of
 * c->cur dropped; NULL (status set, or OOM) on failure. */
lir_expr *loom__fu_tr(fctx *c, int e, const int *vm);
/* loom__fu_tr, with the sub-expressions that do not depend on the slice
 * loops computed once into locals appended to hoist (c->hoist_var). */
lir_expr *loom__fu_tr_hoist(fctx *c, int e, const int *vm, lir_stmt *hoist);
/* Append s to seq; -1 (status set) on OOM. */
int loom__fu_app(fctx *c, lir_stmt *seq, lir_stmt *s);
/* Set and return LOOM_ERR_NOMEM. */
loom_status loom__fu_nomem(fctx *c);
/* A LOCAL buffer of n floats with a unique name per key; -1 on OOM. */
int loom__fu_local_array(fctx *c, const char *prefix, int tensor, int key, int64_t n);
/* Declare the running max and the rolled blocks' accumulators in seq. */
int loom__fu_declare_accs(fctx *c, lir_stmt *seq, int key);
/* Open rolled block R's slice loops; the innermost body, *lidx its index. */
lir_stmt *loom__fu_slice_loops(fctx *c, rolled *R, lir_stmt *seq, lir_expr **lidx);
lir_expr *loom__fu_acc_ref(fctx *c, const rolled *R, lir_expr *lidx);
lir_stmt *loom__fu_acc_set(fctx *c, const rolled *R, lir_expr *lidx, lir_expr *v);
lir_expr *loom__fu_red_combine(fctx *c, loom_assign_op op, lir_expr *a, lir_expr *b);

/* Open the first n of the source's row loops into *seq (kinds kept);
 * *seq becomes the innermost body. */
int loom__fu_open_rows(fctx *c, lir_stmt **seq, int n);
/* [lo, hi) narrowed to chunk c->chunk of c->nchunks (split-K). */
int loom__fu_chunk_bounds(fctx *c, lir_stmt *seq, lir_expr *lo, lir_expr *hi, lir_expr **clo, lir_expr **chi);

/* ---- lower_fusion_regtile.c ---- */

/* The shape of a register tile over `rows` rows of `width` fp32
 * accumulators on l (vector lanes and registers): *u floats per vectorized
 * loop (two vectors per row: the lanes; one: width, GCC running its
 * vectors), *nv vectors per row and *rg rows per group (the last group of
 * a tile may be smaller).  One vector per row: loom_register_tile's row
 * group.  Two vectors per row (when the lanes divide width an even number
 * of times) replace it when rg x 2 accumulators + 2 operand vectors + 1
 * broadcast fit the registers, every group keeps at least 6 rows, and the
 * operand loads per reduction step -- one vector load per vector of every
 * group plus one broadcast per row and vector pair -- are fewer (ties:
 * fewer accumulators).  Measured on the attention kernels, one thread, CPU
 * time (machine shared; bench/README.md): on AVX-512 8 rows x 2 vectors
 * ran 1.10-1.32x the one-vector tiles of the same row and key tile on
 * 1 x 4096 and 12 x 512 x 64 (each broadcast feeds two FMAs); on AVX2 a
 * 12-row tile as 6 + 6 rows x 2 vectors 1.11-1.21x the best 8- and 16-row
 * tiles; groups of 4 rows x 2 vectors (AVX2) and 4 x 4 (AVX-512) ran at
 * 0.7x, GCC folding the operand vectors into the FMAs as memory operands,
 * hence the 6-row floor and at most two vectors.  rows, width >= 1. */
void loom__fu_regtile_shape(const loom_limits *l, int64_t rows, int64_t width, int64_t *rg, int64_t *nv, int64_t *u);

/* The score block Sx = Qs x Kp's block at key offset kb (an LIR local) as
 * a register tile, stored into T->sx. */
int loom__fu_sx_tile(fctx *c, const tile *T, lir_stmt *seq, int kb);
/* The full-block update of rolled block k's single-index slice as a
 * register tile (T->o_rg rows per group), into T->acc[k]. */
int loom__fu_o_tile(fctx *c, const tile *T, lir_stmt *seq, int k);

/* ---- lower_fusion_mask.c ---- */

/* 1 when a block a causal or band mask cuts may take the tiled fast path
 * with its masked scores at -inf: the chain has a mask (c->root), m reads
 * the score directly (direct), and every rolled block reduces with += an
 * operand that is 0 wherever the score is -inf (lower_fusion_mask.c says
 * which forms are). */
int loom__fu_masked_fast_ok(fctx *c, const tile *T, int direct);

/* ---- lower_fusion_keys.c ---- */

/* The loop over the reduced index (one chunk of it when c->chunk >= 0), in
 * blocks of keys. */
int loom__fu_j_loop(fctx *c, lir_stmt *seq);

/* ---- lower_fusion_tile.c, lower_splitk.c ---- */

/* lower_fusion_tile.c: the chain tiled by the rolled loop's "row_tile" /
 * "key_tile" annotations; *done = 0 (nothing emitted but maybe a comment
 * saying why) when there are none or the tiled form does not apply. */
int loom__fu_tiled(fctx *c, lir_stmt **seq, int *done);
/* lower_splitk.c: a row under split-K: the chunk loop (parallel when par),
 * then the combine loop into the row's accumulators. */
int loom__fu_split_k_row(fctx *c, lir_stmt *seq, int par);

#endif
