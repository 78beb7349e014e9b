/* loom: the Program IR -- tensors, level formats, sizes, index variables and
 * statements of a `.loom` workload (DESIGN.md "The workload language").
 *
 * A loom_program is plain data with fixed capacities and no pointers, so it
 * can be copied with memcpy and compared with memcmp (the Schedule of later
 * layers keeps a pointer to one and never copies it).  Everything refers to
 * everything else by index: tensors[], sizes[], vars[], exprs[], stmts[].
 *
 * Sparse semantics (docs/schedule-language.md, dsl/ir/domain.h): an unstored
 * entry is a zero; a statement iterates the domain of its right-hand side
 * (products intersect their operands' patterns, sums unite them, functions
 * see the stored entries of the sparse tensors they read); reductions run
 * over the domain's points only.
 * Level formats per dimension: dense (0..n), compressed (pos/crd arrays),
 * range (lo(parent)..hi(parent), computed: causal, band).
 */
#ifndef LOOM_PROGRAM_H
#define LOOM_PROGRAM_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"

#define LOOM_MAX_ORDER 4      /* dimensions of one tensor */
#define LOOM_MAX_NAME 32      /* identifier length, including the NUL */
#define LOOM_MAX_TENSORS 32
#define LOOM_MAX_SIZES 32
#define LOOM_MAX_VARS 96      /* index variables, all statements together */
#define LOOM_MAX_STMT_VARS 8  /* index variables of one statement */
#define LOOM_MAX_EXPRS 512
#define LOOM_MAX_STMTS 16
#define LOOM_MAX_SOURCE 16384 /* bytes of workload text kept */

/* ---- level formats -------------------------------------------------- */

typedef enum loom_level_kind {
    LOOM_LEVEL_DENSE = 0,   /* coordinates 0..n-1, position = parent*n + i */
    LOOM_LEVEL_COMPRESSED,  /* pos[parent]..pos[parent+1] into crd[] */
    LOOM_LEVEL_RANGE        /* computed: lo(parent coord)..hi(parent coord) */
} loom_level_kind;

typedef enum loom_format_kind {
    LOOM_FORMAT_DENSE = 0, /* every level dense, row-major */
    LOOM_FORMAT_CSR,       /* (dense, compressed), mode order (0, 1) */
    LOOM_FORMAT_DCSR,      /* (compressed, compressed), mode order (0, 1) */
    LOOM_FORMAT_CSC,       /* (dense, compressed), mode order (1, 0) */
    LOOM_FORMAT_CAUSAL,    /* (dense, range): j in [0, min(i+1, ncols)) */
    LOOM_FORMAT_BAND       /* (dense, range): j in [max(0,i-w), min(ncols,i+w+1)) */
} loom_format_kind;

typedef struct loom_format {
    loom_format_kind kind;
    int band_width;                    /* w of band(w); 0 otherwise */
    int nlevels;                       /* == the tensor's order, less its batch
                                          dimensions (loom_tensor.nbatch) */
    loom_level_kind level[LOOM_MAX_ORDER];
    int mode[LOOM_MAX_ORDER];          /* level l stores dimension mode[l] */
} loom_format;

/* ---- tensors and sizes ---------------------------------------------- */

typedef enum loom_tensor_role {
    LOOM_TENSOR_INPUT = 0,  /* declared, not assigned: data or generated */
    LOOM_TENSOR_OUTPUT,     /* declared with `output`, assigned once */
    LOOM_TENSOR_TEMP        /* not declared, assigned once: allocated by the kernel */
} loom_tensor_role;

typedef struct loom_tensor {
    char name[LOOM_MAX_NAME];
    int order;                          /* 0..LOOM_MAX_ORDER */
    int dim_size[LOOM_MAX_ORDER];       /* index into program.sizes[] per dimension */
    loom_format format;
    loom_tensor_role role;
    int is_pattern;    /* causal/band: no values, the value is 1 where stored */
    int pattern_of;    /* sparse: the tensor whose pos/crd arrays this one uses
                          (itself for inputs; the pattern source for inferred
                          sparse temporaries and sparse outputs); -1 if dense */
    int format_inferred; /* 1 for temporaries: format came from inference */
    int nbatch;        /* sparse temporaries only: leading dense dimensions
                          0..nbatch-1 above the pattern's levels (issue 14:
                          S(h, i, j) = M(i, j) * ... is M's pattern for every
                          h).  format.level[] then describes dimensions
                          nbatch..order-1 (mode[] holds absolute dimension
                          numbers) and the element at batch coordinates b
                          (row-major over dims 0..nbatch-1) and pattern
                          position p is stored at b * nnz(pattern) + p.
                          0 for every other tensor. */
    int def_stmt;      /* statement that assigns it; -1 for inputs */
    int line;          /* line of its declaration or first assignment */
} loom_tensor;

typedef struct loom_size {
    char name[LOOM_MAX_NAME];
    int64_t value;      /* valid when bound */
    int bound;          /* 1 once a value is known */
    int is_param;       /* declared with `param NAME = INT` */
    int64_t def_value;  /* the param's default */
    int line;           /* line of the param declaration or first use */
    char origin[128];   /* how it was bound: "param default", "--param", "data A rows", ... */
} loom_size;

/* ---- index variables, expressions, statements ----------------------- */

/* An index variable belongs to one statement (the same letter in two
 * statements is two variables: `k` may range over different sizes). */
typedef struct loom_index_var {
    char name[LOOM_MAX_NAME];
    int stmt;          /* owning statement */
    int size;          /* index into sizes[]: the size of its first use */
    int reduced;       /* 1 if it is on the right and not on the left */
} loom_index_var;

/* Operators (NEG .. DIV) and calls each map to one row of the operator
 * table (dsl/ir/op.h: loom_op_of_expr). */
typedef enum loom_expr_kind {
    LOOM_EXPR_CONST = 0, /* value */
    LOOM_EXPR_ACCESS,    /* tensor(idx[0], ..., idx[nidx-1]) */
    LOOM_EXPR_NEG,       /* -args[0] */
    LOOM_EXPR_ADD,       /* args[0] + args[1] */
    LOOM_EXPR_SUB,
    LOOM_EXPR_MUL,
    LOOM_EXPR_DIV,
    LOOM_EXPR_CALL       /* fn(args[0] [, args[1]]) */
} loom_expr_kind;

/* A call's function: the id of a call-form row of the operator table
 * (dsl/ir/op.h), which says its name, arity, value, lowering, cost and
 * sparsity; the built-ins below, and rows registered at run time
 * (loom_op_register) with ids from LOOM_OP_NBUILTIN on. */
typedef enum loom_fn {
    LOOM_FN_EXP = 0, /* 1 argument */
    LOOM_FN_SQRT,    /* 1 argument */
    LOOM_FN_RELU,    /* 1 argument: max(x, 0) */
    LOOM_FN_MAX,     /* 2 arguments */
    LOOM_FN_MIN      /* 2 arguments */
} loom_fn;

typedef struct loom_expr {
    loom_expr_kind kind;
    double value;                 /* CONST */
    int tensor;                   /* ACCESS: index into tensors[] */
    int nidx;                     /* ACCESS: == tensors[tensor].order */
    int idx[LOOM_MAX_ORDER];      /* ACCESS: index var (into vars[]) per dimension */
    loom_fn fn;                   /* CALL */
    int nargs;                    /* operators and calls: 1 or 2 */
    int args[2];                  /* child expressions (into exprs[]) */
    int line, col;                /* where it starts in the source */
} loom_expr;

typedef enum loom_assign_op {
    LOOM_ASSIGN_SET = 0, /* `=`  : sum over reduced variables */
    LOOM_ASSIGN_ADD,     /* `+=` : sum over reduced variables (same meaning) */
    LOOM_ASSIGN_MAX      /* `max=`: max over reduced variables */
} loom_assign_op;

typedef struct loom_stmt {
    int lhs;                          /* tensor assigned */
    int lhs_idx[LOOM_MAX_ORDER];      /* index vars of the lhs, per dimension */
    loom_assign_op op;
    int rhs;                          /* root expression */
    int nvars;                        /* all index vars of the statement */
    int vars[LOOM_MAX_STMT_VARS];     /* free (lhs) vars first, in lhs order,
                                         then reduced vars in order of first
                                         appearance on the right */
    int nfree;                        /* vars[0..nfree) are free */
    int line;
    char text[256];                   /* the statement's source text */
} loom_stmt;

typedef struct loom_program {
    char path[256];                   /* file name used in messages */
    int ntensors;
    loom_tensor tensors[LOOM_MAX_TENSORS];
    int nsizes;
    loom_size sizes[LOOM_MAX_SIZES];
    int nvars;
    loom_index_var vars[LOOM_MAX_VARS];
    int nexprs;
    loom_expr exprs[LOOM_MAX_EXPRS];
    int nstmts;
    loom_stmt stmts[LOOM_MAX_STMTS];
    char source[LOOM_MAX_SOURCE];     /* the workload text (truncated if longer) */
} loom_program;

/* ---- parsing (dsl/front/parse.c) ------------------------------------------ */

/* Parse a workload file.  On success *out is a new program (free with
 * loom_program_free); params carry their defaults as bound values.
 * Errors: LOOM_ERR_IO (cannot read, names the file), LOOM_ERR_PARSE (syntax:
 * file, line, column, what was expected), LOOM_ERR_SEMANTIC (unknown tensor,
 * wrong arity, index used with inconsistent size symbols where both are
 * params with different defaults, reduction with no meaning, tensor assigned
 * twice, input assigned, temporary used before assignment, unsupported
 * sparse output pattern), LOOM_ERR_NOMEM. Never crashes on any input. */
loom_status loom_program_parse_file(const char *path, loom_program **out, loom_error *err);

/* Same, from a NUL-terminated string; `name` is used as the file name in
 * messages. */
loom_status loom_program_parse_string(const char *text, const char *name,
                                      loom_program **out, loom_error *err);

/* Free a program from the parser (NULL is fine). */
void loom_program_free(loom_program *prog);

/* ---- binding sizes (dsl/front/bind.c) ------------------------------------- */

/* Bind size `name` to `value` (> 0).  `origin` says where the value came
 * from ("--param", "data A rows", ...) and is used in later messages.
 * Errors: LOOM_ERR_BIND when there is no such size (the message lists the
 * sizes there are), when value <= 0 or > INT32_MAX (the kernel ABI's int32
 * coordinates), or when the size is already bound to a
 * different value by a source other than a param default (a param default
 * is simply overridden, and so is a value an earlier
 * loom_program_finish_binding derived, origin "from index ..."). */
loom_status loom_program_bind_size(loom_program *prog, const char *name, int64_t value,
                                   const char *origin, loom_error *err);

/* Finish binding: propagate values along index variables (an index used for
 * dimensions of sizes N and K forces N == K, so binding one binds the other),
 * then check that every size is bound and every index variable's uses agree.
 * Explicit bindings win over param defaults along an index (data binding N
 * overrides the default of a param tied to N); defaults fill what is left.
 * Derived values get the origin "from index k in line 5 (= K)" and are
 * recomputed on every call, so calling it again is harmless.
 * Errors: LOOM_ERR_BIND "size F never binds: give --param F=INT or data for a
 * tensor with a dimension of size F"; "index k in line 5 ranges over K = 1433
 * (B, dimension 1) and N = 2708 (A, dimension 2)". */
loom_status loom_program_finish_binding(loom_program *prog, loom_error *err);

/* Extent of index variable v (its size's value; 0 if unbound). */
int64_t loom_program_var_extent(const loom_program *prog, int v);

/* Extent of dimension d of tensor t (0 if unbound). */
int64_t loom_program_dim(const loom_program *prog, int t, int d);

/* ---- queries and printing (dsl/ir/program.c) --------------------------- */

/* Index of the tensor / size named `name`, or -1. */
int loom_program_find_tensor(const loom_program *prog, const char *name);
int loom_program_find_size(const loom_program *prog, const char *name);

/* Stable names: "dense", "csr", "dcsr", "csc", "causal", "band". */
const char *loom_format_name(loom_format_kind kind);
/* "dense", "compressed", "range". */
const char *loom_level_kind_name(loom_level_kind kind);

/* Fill *f with the level layout of a format of the given order
 * (order must be 2 for every kind but dense).  Returns LOOM_ERR_SEMANTIC
 * with a message in err when the order does not fit the format. */
loom_status loom_format_make(loom_format_kind kind, int order, int band_width,
                             loom_format *f, loom_error *err);

/* 1 if any level of tensor t is compressed or range. */
int loom_tensor_is_sparse(const loom_program *prog, int t);

/* Number of batch copies of tensor t's pattern: the product of its
 * nbatch leading dimensions (1 when nbatch is 0; 0 when one is unbound). */
int64_t loom_tensor_batch_count(const loom_program *prog, int t);

/* Number of floating-point operations one evaluation of expression e costs
 * (each operator and call counts 1 -- every row of the operator table,
 * dsl/ir/op.h; accesses and constants count 0). Used for FLOP counts. */
int loom_expr_flops(const loom_program *prog, int e);

/* 1 if expression e (an index into prog->exprs) reads tensor t anywhere in
 * it, else 0. */
int loom_expr_reads(const loom_program *prog, int e, int t);

/* Print the program back as `.loom` text with inferred formats as comments. */
void loom_program_print(const loom_program *prog, FILE *out);

/* ---- the workload hash (dsl/ir/hash.c) ---------------------------------- */

/* The workload hash, a workload's identity in traces and tuning records:
 * 64-bit FNV-1a (Fowler, Noll, Vo) over a canonical serialization of the
 * parsed program -- tensors (names, orders, sizes' names, formats, roles,
 * patterns), sizes (names, param defaults) and statements (lhs, operator,
 * expression trees with constants bit-exact, index variables by position in
 * their statement, not by name).  Comments, blank lines, spacing and the
 * names of index variables do not change it; the whole program counts, also
 * past the LOOM_MAX_SOURCE bytes of text the program keeps.  NULL hashes
 * as the FNV offset basis. */
uint64_t loom_program_hash(const loom_program *prog);

/* The workload hash loom used before the structural one: FNV-1a 64 of the
 * first LOOM_MAX_SOURCE - 1 bytes of the workload text.  Only to recognize
 * old traces and records; NULL hashes as the FNV offset basis. */
uint64_t loom_program_text_hash(const char *text);

/* A workload hash read from an old record or trace, brought up to date:
 * when `text` is given and `stored` is its legacy text hash, the structural
 * hash of the program parsed from `text` (memoized per thread for the last
 * text); otherwise, or when the text does not parse, `stored` unchanged. */
uint64_t loom_workload_hash_upgrade(uint64_t stored, const char *text);

#endif
