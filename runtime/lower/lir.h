/* loom: LIR, the loop-tree IR that lowering produces and that C code
 * generation, the simulator and feature extraction consume (DESIGN.md
 * "Runtime": for loops, lets, stores, allocations, guards).
 *
 * A lir_func is one kernel.  Nodes live in the function's arena and are
 * freed with it.  Locals are numbered (vars[]); buffers are the arrays of
 * the kernel ABI (a tensor's vals, pos[l], crd[l]) plus the values of
 * temporaries the kernel allocates.  Types are deliberately few: i64 for
 * indices and positions, f32 for values, bool for conditions.
 */
#ifndef LOOM_LIR_H
#define LOOM_LIR_H

#include <stddef.h>
#include <stdint.h>

#include "../../dsl/ir/op.h"
#include "../../dsl/ir/program.h"

typedef enum lir_type { LIR_I64 = 0, LIR_F32, LIR_BOOL } lir_type;

typedef enum lir_expr_kind {
    LIR_E_INT = 0,  /* ival */
    LIR_E_FLOAT,    /* fval (may be +-INFINITY) */
    LIR_E_VAR,      /* local vars[var] */
    LIR_E_DIM,      /* runtime size: tensor `tensor`, dimension `dim` */
    LIR_E_NNZ,      /* runtime stored-entry count of tensor `tensor` */
    LIR_E_LOAD,     /* buffers[buf][a] */
    LIR_E_BIN,      /* a op b */
    LIR_E_NEG,      /* -a */
    LIR_E_NOT,      /* !a */
    LIR_E_CALL      /* fn(a) or fn(a, b): b NULL for one operand */
} lir_expr_kind;

typedef enum lir_binop {
    LIR_ADD = 0, LIR_SUB, LIR_MUL, LIR_DIV, LIR_MIN, LIR_MAX,
    LIR_LT, LIR_LE, LIR_GT, LIR_GE, LIR_EQ, LIR_NE, LIR_AND, LIR_OR
} lir_binop;

/* A call's function: the id of an operator-table row lowered as a call
 * (dsl/ir/op.h, LOOM_OP_LOWER_CALL); C code generation prints the row's
 * c_template, the simulator charges its cost class. */
typedef int lir_fn;
enum { LIR_FN_EXP = LOOM_OP_EXP, LIR_FN_SQRT = LOOM_OP_SQRT };

typedef struct lir_expr {
    lir_expr_kind kind;
    lir_type type;
    int64_t ival;
    double fval;
    int var, buf, tensor, dim;
    lir_binop op;
    lir_fn fn;
    struct lir_expr *a, *b;
} lir_expr;

typedef enum lir_loop_kind {
    LIR_LOOP_SERIAL = 0,
    LIR_LOOP_PARALLEL,   /* OpenMP parallel for, static schedule */
    LIR_LOOP_VECTORIZED, /* omp simd */
    LIR_LOOP_UNROLLED    /* GCC unroll `unroll` */
} lir_loop_kind;

typedef enum lir_stmt_kind {
    LIR_S_SEQ = 0, /* body[0..nbody) in order */
    LIR_S_FOR,     /* for (var = lo; var < hi; var++) body */
    LIR_S_WHILE,   /* while (cond) body */
    LIR_S_IF,      /* if (cond) body [else els] */
    LIR_S_LET,     /* declare local var = value (scoped to the enclosing SEQ) */
    LIR_S_ASSIGN,  /* var = value */
    LIR_S_STORE,   /* buffers[buf][index] = value */
    LIR_S_FILL,    /* buffers[buf][0 .. size) = value */
    LIR_S_LOCAL,   /* declare local array buffers[buf] (LIR_BUF_LOCAL) in this scope */
    LIR_S_COMMENT, /* text, for readers of the generated C */
    LIR_S_PREFETCH, /* a software prefetch (a hint: no value, no fault) of the cache
                      lines of buffers[buf][index .. index + size) (issue 13) */
    LIR_S_STREAM,  /* buffers[buf][index .. index + size) = buffers[src][0 .. size)
                      with non-temporal stores (issue 13) */
    LIR_S_BARRIER  /* a compiler barrier with no effect at run time: an empty asm
                      statement, which keeps the C compiler from vectorizing the
                      loop holding it (issue 13) */
} lir_stmt_kind;

typedef struct lir_stmt {
    lir_stmt_kind kind;
    int var;                 /* FOR, LET, ASSIGN */
    lir_expr *lo, *hi;       /* FOR */
    lir_loop_kind loop_kind; /* FOR */
    int unroll;              /* FOR with LIR_LOOP_UNROLLED */
    int unroll_hint;         /* FOR: made LIR_LOOP_UNROLLED by an "unroll" annotation on a serial
                                loop (lower_ctx.c), which the lowering drops again where codegen
                                vectorizes the loop (loom_lir_is_simd_safe; lower.c drop_unroll_hints) */
    int par_chunk;           /* FOR with LIR_LOOP_PARALLEL: 0 = one contiguous block of
                                iterations per thread (schedule(static)); k > 0 = blocks of
                                k dealt out cyclically (schedule(static, k)), for loops
                                whose iterations carry unequal work (a causal mask) */
    int red_var;             /* FOR with LIR_LOOP_VECTORIZED: a scalar accumulator the
                                loop reduces into (simd reduction clause), or -1 */
    int red_max;             /* 1: that reduction is max, 0: sum */
    int nonempty;            /* FOR: the lowering knows hi > lo wherever the loop is reached (the inner
                                loop of a position split's chunk); codegen tells the compiler
                                (LOOM_NONEMPTY), which then keeps the loop's accumulators in registers
                                without a flag a vector (issue 29) */
    lir_expr *cond;          /* WHILE, IF */
    lir_expr *value;         /* LET, ASSIGN, STORE, FILL */
    int buf;                 /* STORE, FILL, PREFETCH, STREAM (destination) */
    int src;                 /* STREAM: the LOCAL buffer copied from */
    lir_expr *index;         /* STORE, PREFETCH, STREAM */
    lir_expr *size;          /* FILL, PREFETCH, STREAM (elements) */
    struct lir_stmt *body;   /* FOR, WHILE, IF: a SEQ */
    struct lir_stmt *els;    /* IF: a SEQ or NULL */
    struct lir_stmt **items; /* SEQ */
    int nitems, cap;         /* SEQ */
    const char *text;        /* COMMENT (arena copy) */
} lir_stmt;

typedef struct lir_var {
    char name[40];
    lir_type type;
} lir_var;

typedef enum lir_buf_kind {
    LIR_BUF_VALS = 0, /* tensor's values (inputs/outputs: from the ABI) */
    LIR_BUF_POS,      /* tensor's pos[level] */
    LIR_BUF_CRD,      /* tensor's crd[level] */
    LIR_BUF_TEMP,     /* values of a temporary, allocated by the kernel */
    LIR_BUF_LOCAL,    /* a small local array (a workspace) of local_elems floats */
    LIR_BUF_PARTIAL   /* RFactor partials of a tensor, allocated by the kernel (size) */
} lir_buf_kind;

typedef struct lir_buffer {
    char name[48];
    lir_buf_kind kind;
    int tensor;        /* program tensor index */
    int level;         /* POS, CRD */
    lir_type elem;     /* F32 for values, I64 for pos/crd (stored as int32) */
    lir_expr *size;    /* TEMP: element count to allocate */
    int64_t local_elems; /* LOCAL: constant element count */
    int written;       /* 1 if the kernel stores into it */
    int restrict_ptr;  /* LOCAL: emitted as an array NAME_ and a `float *restrict NAME` to it (a packed
                        * panel: read through the array, gcc 12 -O3 no longer keeps a register tile
                        * that reads it in registers; through the pointer it does, measured on GEMM) */
} lir_buffer;

typedef struct lir_arena_block lir_arena_block;

typedef struct lir_func {
    const loom_program *prog;
    int nvars, cap_vars;
    lir_var *vars;
    int nbufs, cap_bufs;
    lir_buffer *bufs;
    lir_stmt *body;              /* a SEQ: the whole kernel */
    lir_arena_block *arena;      /* private */
} lir_func;

/* Create an empty function for prog (body is an empty SEQ).  NULL on OOM. */
lir_func *loom_lir_func_new(const loom_program *prog);
void loom_lir_func_free(lir_func *f);

/* Arena allocation of zeroed bytes; NULL on OOM. */
void *loom_lir_alloc(lir_func *f, size_t n);

/* New local of the given type; the name is made unique by a suffix.
 * Returns its index, or -1 on OOM. */
int loom_lir_new_var(lir_func *f, const char *name, lir_type type);

/* The buffer of (kind, tensor, level), created on first request.
 * Returns its index, or -1 on OOM. */
int loom_lir_buffer_get(lir_func *f, lir_buf_kind kind, int tensor, int level);

/* Expression constructors (NULL on OOM; NULL operands propagate NULL). */
lir_expr *loom_lir_int(lir_func *f, int64_t v);
lir_expr *loom_lir_float(lir_func *f, double v);
lir_expr *loom_lir_var_ref(lir_func *f, int var);
lir_expr *loom_lir_dim(lir_func *f, int tensor, int dim);
lir_expr *loom_lir_nnz(lir_func *f, int tensor);
lir_expr *loom_lir_load(lir_func *f, int buf, lir_expr *index);
lir_expr *loom_lir_bin(lir_func *f, lir_binop op, lir_expr *a, lir_expr *b);
lir_expr *loom_lir_neg(lir_func *f, lir_expr *a);
lir_expr *loom_lir_not(lir_func *f, lir_expr *a);
lir_expr *loom_lir_call(lir_func *f, lir_fn fn, lir_expr *a);
/* A call of a two-operand row (b not NULL), or of a one-operand row (b NULL). */
lir_expr *loom_lir_call2(lir_func *f, lir_fn fn, lir_expr *a, lir_expr *b);

/* Statement constructors (NULL on OOM). */
lir_stmt *loom_lir_seq(lir_func *f);
/* Append s to seq; returns 0, or -1 on OOM / NULL s. */
int loom_lir_append(lir_func *f, lir_stmt *seq, lir_stmt *s);
lir_stmt *loom_lir_for(lir_func *f, int var, lir_expr *lo, lir_expr *hi, lir_loop_kind kind);
lir_stmt *loom_lir_while(lir_func *f, lir_expr *cond);
lir_stmt *loom_lir_if(lir_func *f, lir_expr *cond);
lir_stmt *loom_lir_let(lir_func *f, int var, lir_expr *value);
lir_stmt *loom_lir_assign(lir_func *f, int var, lir_expr *value);
lir_stmt *loom_lir_store(lir_func *f, int buf, lir_expr *index, lir_expr *value);
lir_stmt *loom_lir_fill(lir_func *f, int buf, lir_expr *size, lir_expr *value);
lir_stmt *loom_lir_comment(lir_func *f, const char *text);
/* Prefetch (read, keep in every cache level) the lines of
 * buffers[buf][index .. index + size): codegen emits __builtin_prefetch per
 * 64-byte line; the simulator brings the lines in without a stall. */
lir_stmt *loom_lir_prefetch(lir_func *f, int buf, lir_expr *index, lir_expr *size);
/* Copy buffers[src][0 .. size) (a LOCAL workspace) to buffers[buf][index ..
 * index + size) with non-temporal stores (issue 13, LOOM_ANN_STREAM):
 * codegen calls loom_stream_copy (ordinary stores up to the first aligned
 * vector and after the last, _mm512/_mm256/_mm_stream_ps between, by the
 * ISA the kernel is compiled for) and fences each thread's streaming stores
 * (sfence) before its parallel region ends; the simulator writes the lines
 * to memory without reading them.  NULL when out of memory or an argument
 * is missing. */
lir_stmt *loom_lir_stream(lir_func *f, int buf, lir_expr *index, int src, lir_expr *size);
/* An empty asm statement (codegen: `__asm__("");`, no operands, no
 * clobbers): nothing at run time, no instruction in the simulator, but GCC
 * does not vectorize a loop that holds one.  NULL when out of memory. */
lir_stmt *loom_lir_barrier(lir_func *f);
/* Declare the LOCAL buffer buf here (codegen: `float name[n];`). */
lir_stmt *loom_lir_local(lir_func *f, int buf);

/* 1 when s is a FOR that codegen writes as an explicit tree reduction
 * (codegen.c, tree_reduction): LIR_LOOP_VECTORIZED with an accumulator
 * (red_var >= 0), a body without loops or streaming stores, and bounds
 * that are constants of trip count >= 4 or 0 to a tensor's dimension (a
 * dense extent); 0 otherwise (a sparse row's positions, say: such a loop
 * keeps `omp simd reduction`, whose lanes GCC 12 combines one after
 * another, and which also vectorizes a short row's few iterations). */
int loom_lir_is_tree_reduction(const lir_stmt *s);

/* The trip count of FOR s when both bounds are integer literals; -1
 * otherwise (run-time bounds, a tensor's dimension, not a FOR). */
int64_t loom_lir_literal_trip(const lir_stmt *s);

/* 1 when s is a LIR_LOOP_VECTORIZED reduction (red_var >= 0) of literal
 * trip 2, which codegen emits with `safelen(2)` (GCC 12 then keeps two
 * scalar partial sums, not a masked vector and a lane sum each instance;
 * docs/schedule-language.md "Vectorized reductions are trees") and the
 * simulator, for a sum, runs as that scalar code (runtime/sim/sim.h
 * "Vectors", model 55). */
int loom_lir_is_pair_reduction(const lir_stmt *s);

/* 1 when a and b are the same expression tree (kinds, constants, variables,
 * buffers, operators; both NULL counts as equal). */
int loom_lir_expr_equal(const lir_expr *a, const lir_expr *b);

/* 1 when s is a SERIAL FOR that codegen marks `#pragma omp simd` (the loop
 * the simulator's "autovectorize" runs as vector code, runtime/sim/sim.h
 * "Vectors", made so in the compiled kernel too): bounds that are integer
 * constants of trip count >= 2, a body of lets, stores and comments only,
 * every store's index affine in the loop variable with stride 1 (each
 * iteration writes its own element, and a buffer is stored at one index),
 * every load's index invariant or of stride 1 (no gathers: those stay the
 * compiler's choice), every load of a buffer the loop stores to at the
 * index of that store (a read-modify-write of the same element), and no
 * assignment to a variable declared outside the body (a loop-carried
 * scalar, such as a sum).  Such a loop has no dependence between
 * iterations, which is what the pragma asserts.  Why: GCC 12 -O3
 * unrolls a short constant loop completely before its vectorizer runs, and
 * its basic-block vectorizer then gives up on a workspace row indexed by an
 * outer loop's variable ("can't determine dependence"): SpMM F = 128 tiled
 * [1, 2, 4, 16] on mbeacxc ran 16 scalar FMAs, loads and stores a stored
 * entry (1.44 ms on Emerald Rapids' AVX2 against 0.14 ms for [1, 2, 1, 64]),
 * where `omp simd` keeps the loop whole until it is vectorized.  f: the
 * function s belongs to (its variable count).  0 on out of memory. */
int loom_lir_is_simd_safe(const lir_func *f, const lir_stmt *s);

/* 1 when item i of SEQ seq (of function f) is a workspace's row loop: a
 * serial or unrolled FOR whose bounds read a pos array, directly or through
 * variables seq declares before it (a sparse row's positions, the chunks of
 * a position split), not known nonempty, whose body writes a LOCAL
 * buffer that an earlier item of seq declares, and whose later items (the
 * workspace's copy-out) read that buffer and write none.  Codegen then
 * writes `if (lo < hi) { loop (LOOM_NONEMPTY); copy-out } else { copy-out
 * }` -- the same computation, as an empty loop changes nothing.  Why: GCC
 * 12 keeps the workspace in registers inside the loop and, at the join of
 * the loop's exit with the path that skips it, stores them to the stack,
 * from which the copy-out reloads them; the row's output then waits for
 * that round trip.  With the copy-out reached only from the loop's exit it
 * stores the registers to the output (a streamed copy-out too, through
 * loom_stream_copy's aligned path, codegen_helpers.c).  On AMD Zen 4 (2
 * threads) SpMM F = 32 ran 147 -> 132 us on bcsstk16 (59 nonzeros a row)
 * and 9.9 -> 8.4 us on Cora (AVX-512, `loom run`); a plain copy-out's
 * PubMed F = 128 kernel on AVX2 828 -> 630 us (docs/simulator.md "A
 * workspace's round trip"). */
int loom_lir_workspace_row_loop(const lir_func *f, const lir_stmt *seq, int i);

/* Print the LIR as an indented tree (for `loom run --print-lir` and tests). */
void loom_lir_print(const lir_func *f, FILE *out);

#endif
