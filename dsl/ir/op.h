/* loom: the operator table -- one row per operator of the workload language
 * (issue 28, "one row per extension point").
 *
 * A row says everything loom needs to know about an operator: its surface
 * syntax for the parser (an infix or prefix symbol with a precedence, or a
 * call name) and for printing, its arity, the reference interpreter's
 * double-precision value, how lowering builds it in LIR (a LIR operator, or
 * a call that C code generation prints from a template), the simulator's
 * cost class, and its sparsity rule (dsl/ir/domain.h).  Every reader takes
 * the row, not a switch of its own: the parser (dsl/front/parse.c), program
 * printing and FLOP counts (program.c), the domain algebra (domain.c and the
 * lowering's union coiteration, runtime/lower/lower_merge.c), the reference
 * interpreter (runtime/measure/reference.c), the one expression translator
 * (runtime/lower/lower_expr.c), LIR printing, C code generation
 * (runtime/lower/codegen.c) and the simulator (runtime/sim/sim.c).  The
 * table lives here, below all of them; what is runtime-specific in a row is
 * data (a lowering kind, a C template, a cost class), never a call upward.
 *
 * Ids: the built-in calls keep the numbers of loom_fn (program.h: exp 0,
 * sqrt 1, relu 2, max 3, min 4), the operators - + - * / follow, and rows
 * registered at run time (loom_op_register) get the next ids.  A call
 * expression stores its row's id in loom_expr.fn; an operator expression
 * (LOOM_EXPR_NEG .. LOOM_EXPR_DIV) maps to its row by kind
 * (loom_op_of_expr).  The workload hash (hash.c) mixes a registered row's
 * name, not its id, so it does not depend on the order of registration.
 *
 * Adding an operator: one row in BUILTIN[] of op.c (a built-in) or one
 * loom_op_register call (at run time, e.g. from a test or a user module).
 * docs/design.md "Adding an operator" has the recipe.
 */
#ifndef LOOM_OP_H
#define LOOM_OP_H

#include "error.h"
#include "program.h"

#define LOOM_OP_CAPACITY 32      /* rows in the table, built-ins included */
#define LOOM_OP_TEMPLATE_MAX 128 /* bytes of a C template, NUL included */

#define LOOM_OP_PREC_INFIX_MAX 2 /* infix precedences are 1 .. this */

/* The built-in rows' ids. */
enum {
    LOOM_OP_EXP = LOOM_FN_EXP,
    LOOM_OP_SQRT = LOOM_FN_SQRT,
    LOOM_OP_RELU = LOOM_FN_RELU,
    LOOM_OP_MAX_FN = LOOM_FN_MAX,
    LOOM_OP_MIN_FN = LOOM_FN_MIN,
    LOOM_OP_NEG,
    LOOM_OP_ADD,
    LOOM_OP_SUB,
    LOOM_OP_MUL,
    LOOM_OP_DIV,
    LOOM_OP_NBUILTIN
};

typedef enum loom_op_form {
    LOOM_OP_CALL = 0, /* name(a) or name(a, b) */
    LOOM_OP_PREFIX,   /* symbol a (unary minus) */
    LOOM_OP_INFIX     /* a symbol b, left-associative */
} loom_op_form;

/* Where the result may be non-zero, given its operands' domains: TACO's
 * rules (Kjolstad et al., OOPSLA 2017, section 5) -- which operand's zeros
 * annihilate -- plus loom's mask rule (domain.h). */
typedef enum loom_op_sparsity {
    LOOM_OP_SPARSE_UNION = 0, /* f(0, 0) = 0 only: where either operand is (+, -) */
    LOOM_OP_SPARSE_INTERSECT, /* f(x, 0) = f(0, y) = 0: where both are (*, /) */
    LOOM_OP_SPARSE_KEEP,      /* unary, f(0) = 0: where its operand is (neg, a square) */
    LOOM_OP_SPARSE_MASK       /* evaluated only where every sparse tensor its
                                 arguments read stores an entry (exp, sqrt, relu,
                                 max, min: `exp(S - m)` over a masked S stays masked) */
} loom_op_sparsity;

/* How lowering builds the operator in LIR (runtime/lower/lir.h). */
typedef enum loom_op_lowering {
    LOOM_OP_LOWER_CALL = 0, /* a LIR call of this row: codegen prints c_template */
    LOOM_OP_LOWER_NEG,      /* LIR negation of the operand */
    LOOM_OP_LOWER_ADD,      /* LIR binary operators on the operands; a unary */
    LOOM_OP_LOWER_SUB,      /*   row's second operand is the constant */
    LOOM_OP_LOWER_MUL,      /*   lower_const (relu: max(x, 0)) */
    LOOM_OP_LOWER_DIV,
    LOOM_OP_LOWER_MIN,
    LOOM_OP_LOWER_MAX
} loom_op_lowering;

/* The simulator's cost class of a LIR call (runtime/sim/sim.c; the cycles
 * are the target model's: the JSON files of targets/). */
typedef enum loom_op_cost {
    LOOM_OP_COST_FP = 0, /* one floating-point operation (1 cycle of the FP port) */
    LOOM_OP_COST_DIV,    /* a division or square root: the target's div_cycles */
    LOOM_OP_COST_EXP     /* an exponential: the target's exp_cycles */
} loom_op_cost;

typedef struct loom_op_row {
    const char *name;       /* call name ("exp"), or a word for an operator ("add");
                               an identifier, unique in the table */
    const char *symbol;     /* PREFIX, INFIX: the token ("+"); NULL for a call */
    loom_op_form form;
    int arity;              /* 1 or 2 */
    int prec;               /* INFIX: 1 (+ -) or 2 (* /); PREFIX: 3; calls 4
                               (binds tighter as it grows; printing and parsing) */
    double (*eval)(const double *args); /* the reference's value, in double, of
                               args[0 .. arity); a pure function of them */
    loom_op_lowering lower;
    double lower_const;     /* a unary row lowered to a binary LIR operator: its
                               constant second operand */
    const char *c_template; /* LOOM_OP_LOWER_CALL: the C expression over float
                               operands, $0 and $1 standing for them ("expf($0)") */
    loom_op_cost cost;      /* LOOM_OP_LOWER_CALL: the simulator's cost class */
    loom_op_sparsity sparsity;
    int union_guard;        /* 1 when the value at an absent operand (read as 0)
                               can be non-zero although the rule says absent
                               (x / 0): union coiteration guards it by presence */
} loom_op_row;

/* Row `id`, or NULL when no row has that id.  The pointer stays valid for
 * the life of the process. */
const loom_op_row *loom_op_get(int id);

/* Number of rows (built-ins and registered); ids are 0 .. loom_op_count()-1. */
int loom_op_count(void);

/* The row of expression x: its kind's operator (NEG, ADD, SUB, MUL, DIV) or
 * its call (fn); NULL for constants, accesses and unknown calls. */
const loom_op_row *loom_op_of_expr(const loom_expr *x);

/* The id of row r of the table (r from loom_op_get/loom_op_of_expr), or -1. */
int loom_op_id(const loom_op_row *r);

/* The call-form row named `name` (NUL-terminated), or NULL. */
const loom_op_row *loom_op_find_call(const char *name);

/* The row of form `form` (PREFIX or INFIX) whose symbol is the n bytes at
 * s, with precedence prec (0: any), or NULL. */
const loom_op_row *loom_op_find_symbol(loom_op_form form, const char *s, size_t n, int prec);

/* The expression kind that carries row r: LOOM_EXPR_NEG .. LOOM_EXPR_DIV for
 * the built-in operators, LOOM_EXPR_CALL (with fn = its id) for a call. */
loom_expr_kind loom_op_expr_kind(const loom_op_row *r);

/* Add an operator by one row, at run time (not thread-safe: register before
 * parsing or lowering in other threads).  The row is copied (name and
 * template too); *id (when not NULL) receives its id, which a call
 * expression then carries in loom_expr.fn.  Only call-form rows can be
 * added: the lexer's symbols are fixed.  Errors, all LOOM_ERR_INVALID with
 * a message naming the field: row NULL; name NULL, empty, longer than
 * LOOM_MAX_NAME - 1 or not an identifier ([A-Za-z_][A-Za-z0-9_]*); a row
 * with that name already there; form not LOOM_OP_CALL; arity not 1 or 2;
 * eval NULL; lower out of range, or LOOM_OP_LOWER_CALL without a
 * c_template, a template longer than LOOM_OP_TEMPLATE_MAX - 1 bytes, or one
 * with a `$` not followed by 0 or by 1 (for arity 2) or that never uses $0;
 * a LOOM_OP_LOWER_NEG row of arity 2; cost or sparsity out of range;
 * LOOM_OP_SPARSE_KEEP with arity 2; the table full (LOOM_OP_CAPACITY rows). */
loom_status loom_op_register(const loom_op_row *row, int *id, loom_error *err);

/* Drop every registered row (the built-ins stay); for tests.  Programs that
 * use a dropped row must not be used afterwards. */
void loom_op_reset(void);

#endif
