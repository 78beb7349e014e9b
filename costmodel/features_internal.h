/* loom: the feature table shared by features.c (extraction) and
 * features_table.c (names, scaling, data statistics).  Private to
 * costmodel/; features.h documents every feature. */
#ifndef LOOM_FEATURES_INTERNAL_H
#define LOOM_FEATURES_INTERNAL_H

#include <stdint.h>

#include "../runtime/lower/lir.h"
#include "features.h"

/* X(id, "name", is_log) for one buffer slot n of a store. */
#define LOOM_FEAT_BUF(X, n)                                                                                  \
    X(B##n##_ACCESS, "b" #n ".access", 0) X(B##n##_BYTES, "b" #n ".bytes", 1)                                 \
    X(B##n##_UNIQUE_BYTES, "b" #n ".unique_bytes", 1) X(B##n##_LINES, "b" #n ".lines", 1)                     \
    X(B##n##_UNIQUE_LINES, "b" #n ".unique_lines", 1) X(B##n##_STRIDE, "b" #n ".stride", 1)                   \
    X(B##n##_GATHER, "b" #n ".gather", 0) X(B##n##_REUSE_TYPE, "b" #n ".reuse_type", 0)                       \
    X(B##n##_REUSE_DIS_BYTES, "b" #n ".reuse_dis_bytes", 1) X(B##n##_REUSE_CT, "b" #n ".reuse_ct", 1)

#define LOOM_FEAT_AI(X)                                                                                      \
    X(AI0, "ai0", 1) X(AI1, "ai1", 1) X(AI2, "ai2", 1) X(AI3, "ai3", 1) X(AI4, "ai4", 1) X(AI5, "ai5", 1)        \
    X(AI6, "ai6", 1) X(AI7, "ai7", 1) X(AI8, "ai8", 1) X(AI9, "ai9", 1)

/* One store's vector. */
#define LOOM_FEAT_STORE(X)                                                                                   \
    X(FLOPS, "flops", 1) X(F_ADDSUB, "f_addsub", 1) X(F_MUL, "f_mul", 1) X(F_DIV, "f_div", 1)                   \
    X(F_MINMAX, "f_minmax", 1) X(F_MATH, "f_math", 1) X(I_ADDSUB, "i_addsub", 1) X(I_MUL, "i_mul", 1)           \
    X(I_DIV, "i_div", 1) X(I_CMP, "i_cmp", 1) X(BOOL_OP, "bool_op", 1)                                          \
    X(N_LOOPS, "n_loops", 1) X(N_REDUCE_LOOPS, "n_reduce_loops", 1) X(INNER_TRIP, "inner_trip", 1)              \
    X(VEC_PROD, "vec_prod", 1) X(VEC_POS, "vec_pos", 0) X(PAR_PROD, "par_prod", 1) X(PAR_POS, "par_pos", 0)     \
    X(UNROLL_MAX, "unroll_max", 1) X(UNROLL_POS, "unroll_pos", 0)                                               \
    LOOM_FEAT_BUF(X, 0) LOOM_FEAT_BUF(X, 1) LOOM_FEAT_BUF(X, 2)                                                 \
    LOOM_FEAT_AI(X)                                                                                          \
    X(ALLOC_KIND, "alloc_kind", 0) X(ALLOC_BYTES, "alloc_bytes", 1) X(ALLOC_COUNT, "alloc_count", 1)           \
    X(OUTER_PROD, "outer_prod", 1) X(EXECS, "execs", 1)                                                         \
    X(POS_LOOPS, "pos_loops", 1) X(COITER_LOOPS, "coiter_loops", 1) X(POSSPLIT_LOOPS, "possplit_loops", 1)      \
    X(POS_TRIP, "pos_trip", 1) X(GATHERS, "gathers", 1) X(INDEX_LOADS, "index_loads", 1)                        \
    X(GUARD_PROB, "guard_prob", 0)

/* Sums over all stores (and the kernel's index loads). */
#define LOOM_FEAT_SUM(X)                                                                                     \
    X(FLOPS, "flops", 1) X(F_ADDSUB, "f_addsub", 1) X(F_MUL, "f_mul", 1) X(F_DIV, "f_div", 1)                   \
    X(F_MINMAX, "f_minmax", 1) X(F_MATH, "f_math", 1) X(INT_OPS, "int_ops", 1) X(BOOL_OP, "bool_op", 1)         \
    X(BYTES_READ, "bytes_read", 1) X(BYTES_WRITTEN, "bytes_written", 1) X(UNIQUE_BYTES, "unique_bytes", 1)      \
    X(UNIQUE_LINES, "unique_lines", 1) X(GATHERS, "gathers", 1) X(INDEX_LOADS, "index_loads", 1)                \
    X(N_STORES, "n_stores", 1) X(EXECS, "execs", 1)

#define LOOM_FEAT_KERNEL(X)                                                                                  \
    X(N_NESTS, "n_nests", 1) X(N_LOOPS, "n_loops", 1) X(TEMP_BYTES, "temp_bytes", 1)                            \
    X(TEMP_COUNT, "temp_count", 1) X(WS_BYTES, "ws_bytes", 1) X(WS_COUNT, "ws_count", 1)                        \
    X(PARTIAL_BYTES, "partial_bytes", 1) X(PARTIAL_COUNT, "partial_count", 1) X(FILL_BYTES, "fill_bytes", 1)    \
    X(PAR_LOOPS, "par_loops", 1) X(PAR_EXTENT, "par_extent", 1) X(VEC_LOOPS, "vec_loops", 1)                    \
    X(OP_INTENSITY, "op_intensity", 1) X(PREFETCH_BYTES, "prefetch_bytes", 1)      \
    X(STREAM_BYTES, "stream_bytes", 1)

#define LOOM_FEAT_SPARSE(X)                                                                                  \
    X(SEGMENTS, "segments", 1) X(NNZ, "nnz", 1) X(NNZ_MEAN, "nnz_mean", 1) X(NNZ_MAX, "nnz_max", 1)             \
    X(NNZ_CV, "nnz_cv", 0)

#define LOOM_FEAT_ENUM_SF(id, nm, lg) SF_##id,
#define LOOM_FEAT_ENUM_SUM(id, nm, lg) SUM_##id,
#define LOOM_FEAT_ENUM_KF(id, nm, lg) KF_##id,
#define LOOM_FEAT_ENUM_SP(id, nm, lg) SP_##id,
enum { LOOM_FEAT_STORE(LOOM_FEAT_ENUM_SF) SF_COUNT_ };
enum { LOOM_FEAT_SUM(LOOM_FEAT_ENUM_SUM) SUMF_COUNT_ };
enum { LOOM_FEAT_KERNEL(LOOM_FEAT_ENUM_KF) KF_COUNT_ };
enum { LOOM_FEAT_SPARSE(LOOM_FEAT_ENUM_SP) SPF_COUNT_ };
#undef LOOM_FEAT_ENUM_SF
#undef LOOM_FEAT_ENUM_SUM
#undef LOOM_FEAT_ENUM_KF
#undef LOOM_FEAT_ENUM_SP

#define LOOM_FEAT_SLOTS 3     /* stores kept slot by slot */
#define LOOM_FEAT_BUFS 3      /* buffers kept per store */
#define LOOM_FEAT_SPARSE_OPS 2 /* sparse tensors described */
#define LOOM_FEAT_BUF_STRIDE (SF_B1_ACCESS - SF_B0_ACCESS)

/* Offsets of the groups in the row. */
#define LOOM_FEAT_OFF_SUM (LOOM_FEAT_SLOTS * SF_COUNT_)
#define LOOM_FEAT_OFF_KERNEL (LOOM_FEAT_OFF_SUM + SUMF_COUNT_)
#define LOOM_FEAT_OFF_SPARSE (LOOM_FEAT_OFF_KERNEL + KF_COUNT_)
#define LOOM_FEAT_D (LOOM_FEAT_OFF_SPARSE + LOOM_FEAT_SPARSE_OPS * SPF_COUNT_)

/* ---- extraction state (features.c, features_eval.c, features_store.c) ---- */

#define MAXL 40           /* loop levels tracked (masks are 64-bit) */
#define LINE_BYTES 64.0   /* MetaSchedule's cache_line_bytes default */
#define ELEM_BYTES 4.0    /* f32 values; pos/crd are int32 */
#define AI_SAMPLES 10

enum { AV_POS = 1, AV_CRD = 2 };

/* Abstract value of an integer expression: a mean, a linear part over the
 * enclosing loops (coef), and what it depends on nonlinearly. */
typedef struct aval {
    double mean;
    double half;      /* half-width of the nonlinear spread (gathered coordinates) */
    double gscale;    /* derivative with respect to a gathered coordinate */
    double ggap;      /* mean gap between consecutive coordinates of that level */
    uint64_t ndep;    /* loops it varies with nonlinearly (through loads, bounds) */
    uint64_t gat;     /* loops it varies with through a crd load */
    int flags;        /* AV_POS: derived from a pos load; AV_CRD: a gathered coordinate */
    double coef[MAXL];
} aval;

typedef struct level {
    double trip;
    lir_loop_kind kind;
    int unroll;
    int is_pos, is_possplit, is_while;
    double match;     /* WHILE: probability that the merged coordinates are equal */
} level;

typedef struct access {
    int buf;
    int rd, wr, gather;
    double bytes, unique, elems, lines, ulines, stride;
    uint64_t touch;
} access;

typedef struct store_rec {
    double v[SF_COUNT_];
    double work, bytes_read, bytes_written, unique_bytes, unique_lines;
    int order;
} store_rec;

typedef struct ctx {
    const lir_func *f;
    const loom_data_stats *st;
    loom_error *err;
    loom_status status;
    aval *vars;
    int *var_depth;
    double *var_execs;
    double *local_execs;   /* per buffer: executions of its LOCAL declaration */
    double *buf_unique;    /* per buffer: largest footprint of a store, bytes */
    char *buf_index_read;  /* per buffer: a pos/crd array the kernel reads */
    level lv[MAXL];
    double pre[MAXL + 1];  /* pre[d] = product of the trips of levels 0..d-1 */
    int depth;
    store_rec *stores;
    int nstores, cap_stores;
    access *acc;
    int nacc, cap_acc;
    double kern[KF_COUNT_];
    double index_loads;    /* kernel total, weighted */
} ctx;


int loom__feat_fail(ctx *c, loom_status s, const char *what);
double loom__feat_finite_or(double x, double d);
void loom__feat_av_const(aval *a, double m);
uint64_t loom__feat_av_mask(const ctx *c, const aval *a);
void loom__feat_av_scale(aval *a, double k);
void loom__feat_av_add(aval *a, const aval *b, double sign);
const loom_level_stats *loom__feat_buf_level(const ctx *c, const lir_buffer *b);
double loom__feat_buf_elems(ctx *c, int bi);
void loom__feat_eval(ctx *c, const lir_expr *e, aval *out);
double loom__feat_cond_prob(ctx *c, const lir_expr *e);
int loom__feat_index_loads(const ctx *c, const lir_expr *e);
int loom__feat_is_pos_load(const ctx *c, const lir_expr *e);
void loom__feat_count_ops(const lir_expr *e, double *v, double m);
int loom__feat_record_store(ctx *c, int buf, const lir_expr *index, int var, const lir_expr *value, double w,
                           double idxl);
void loom__feat_combine(ctx *c, double *out);

#endif
