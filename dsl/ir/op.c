/* loom: the operator table (see op.h). */
#include "op.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static double ev_exp(const double *a) { return exp(a[0]); }
static double ev_sqrt(const double *a) { return sqrt(a[0]); }
static double ev_relu(const double *a) { return fmax(a[0], 0.0); }
static double ev_max(const double *a) { return fmax(a[0], a[1]); }
static double ev_min(const double *a) { return fmin(a[0], a[1]); }
static double ev_neg(const double *a) { return -a[0]; }
static double ev_add(const double *a) { return a[0] + a[1]; }
static double ev_sub(const double *a) { return a[0] - a[1]; }
static double ev_mul(const double *a) { return a[0] * a[1]; }
static double ev_div(const double *a) { return a[0] / a[1]; }

#define CALL1(n, ev, lw, k, tpl, cost) {n, NULL, LOOM_OP_CALL, 1, 4, ev, lw, k, tpl, cost, LOOM_OP_SPARSE_MASK, 0}
#define CALL2(n, ev, lw) {n, NULL, LOOM_OP_CALL, 2, 4, ev, lw, 0, NULL, LOOM_OP_COST_FP, LOOM_OP_SPARSE_MASK, 0}
#define INFIX(n, s, p, ev, lw, sp, g) {n, s, LOOM_OP_INFIX, 2, p, ev, lw, 0, NULL, LOOM_OP_COST_FP, sp, g}

/* The built-ins, in id order (op.h). */
static const loom_op_row BUILTIN[LOOM_OP_NBUILTIN] = {
    CALL1("exp", ev_exp, LOOM_OP_LOWER_CALL, 0, "expf($0)", LOOM_OP_COST_EXP),
    CALL1("sqrt", ev_sqrt, LOOM_OP_LOWER_CALL, 0, "sqrtf($0)", LOOM_OP_COST_DIV),
    CALL1("relu", ev_relu, LOOM_OP_LOWER_MAX, 0.0, NULL, LOOM_OP_COST_FP),
    CALL2("max", ev_max, LOOM_OP_LOWER_MAX),
    CALL2("min", ev_min, LOOM_OP_LOWER_MIN),
    {"neg", "-", LOOM_OP_PREFIX, 1, 3, ev_neg, LOOM_OP_LOWER_NEG, 0, NULL, LOOM_OP_COST_FP, LOOM_OP_SPARSE_KEEP, 0},
    INFIX("add", "+", 1, ev_add, LOOM_OP_LOWER_ADD, LOOM_OP_SPARSE_UNION, 0),
    INFIX("sub", "-", 1, ev_sub, LOOM_OP_LOWER_SUB, LOOM_OP_SPARSE_UNION, 0),
    INFIX("mul", "*", 2, ev_mul, LOOM_OP_LOWER_MUL, LOOM_OP_SPARSE_INTERSECT, 0),
    INFIX("div", "/", 2, ev_div, LOOM_OP_LOWER_DIV, LOOM_OP_SPARSE_INTERSECT, 1),
};

/* Registered rows, with their own copies of the strings. */
typedef struct reg_row {
    loom_op_row row;
    char name[LOOM_MAX_NAME];
    char tpl[LOOM_OP_TEMPLATE_MAX];
} reg_row;
static reg_row g_reg[LOOM_OP_CAPACITY - LOOM_OP_NBUILTIN];
static int g_nreg;

const loom_op_row *loom_op_get(int id)
{
    if (id >= 0 && id < LOOM_OP_NBUILTIN)
        return &BUILTIN[id];
    if (id >= LOOM_OP_NBUILTIN && id < LOOM_OP_NBUILTIN + g_nreg)
        return &g_reg[id - LOOM_OP_NBUILTIN].row;
    return NULL;
}

int loom_op_count(void) { return LOOM_OP_NBUILTIN + g_nreg; }

int loom_op_id(const loom_op_row *r)
{
    if (r >= BUILTIN && r < BUILTIN + LOOM_OP_NBUILTIN)
        return (int)(r - BUILTIN);
    for (int k = 0; k < g_nreg; k++)
        if (r == &g_reg[k].row)
            return LOOM_OP_NBUILTIN + k;
    return -1;
}

const loom_op_row *loom_op_of_expr(const loom_expr *x)
{
    if (!x)
        return NULL;
    switch (x->kind) {
    case LOOM_EXPR_NEG: return &BUILTIN[LOOM_OP_NEG];
    case LOOM_EXPR_ADD: return &BUILTIN[LOOM_OP_ADD];
    case LOOM_EXPR_SUB: return &BUILTIN[LOOM_OP_SUB];
    case LOOM_EXPR_MUL: return &BUILTIN[LOOM_OP_MUL];
    case LOOM_EXPR_DIV: return &BUILTIN[LOOM_OP_DIV];
    case LOOM_EXPR_CALL: {
        const loom_op_row *r = loom_op_get((int)x->fn);
        return r && r->form == LOOM_OP_CALL ? r : NULL;
    }
    default: return NULL;
    }
}

const loom_op_row *loom_op_find_call(const char *name)
{
    for (int id = 0; name && id < loom_op_count(); id++) {
        const loom_op_row *r = loom_op_get(id);
        if (r->form == LOOM_OP_CALL && strcmp(r->name, name) == 0)
            return r;
    }
    return NULL;
}

const loom_op_row *loom_op_find_symbol(loom_op_form form, const char *s, size_t n, int prec)
{
    for (int id = 0; s && id < loom_op_count(); id++) {
        const loom_op_row *r = loom_op_get(id);
        if (r->form == form && r->symbol && (prec == 0 || r->prec == prec) && strlen(r->symbol) == n &&
            memcmp(r->symbol, s, n) == 0)
            return r;
    }
    return NULL;
}

loom_expr_kind loom_op_expr_kind(const loom_op_row *r)
{
    int id = loom_op_id(r);
    return id >= LOOM_OP_NEG && id <= LOOM_OP_DIV ? (loom_expr_kind)(LOOM_EXPR_NEG + (id - LOOM_OP_NEG))
                                                   : LOOM_EXPR_CALL;
}

static int is_ident(const char *s)
{
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return 0;
    return 1;
}

#define BAD(...) loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, __VA_ARGS__)

/* The C template of a LOOM_OP_LOWER_CALL row: $0 (and $1 for arity 2) only, $0 used. */
static loom_status check_template(const loom_op_row *r, loom_error *err)
{
    if (!r->c_template)
        return BAD("operator %s: lowered as a call (LOOM_OP_LOWER_CALL) but c_template is NULL", r->name);
    if (strlen(r->c_template) >= LOOM_OP_TEMPLATE_MAX)
        return BAD("operator %s: c_template is longer than %d bytes", r->name, LOOM_OP_TEMPLATE_MAX - 1);
    int uses0 = 0;
    for (const char *p = r->c_template; *p; p++) {
        if (*p != '$')
            continue;
        if (p[1] != '0' && !(p[1] == '1' && r->arity == 2))
            return BAD("operator %s: c_template `%s` has a `$` that is not $0%s", r->name, r->c_template,
                       r->arity == 2 ? " or $1" : " (the operator takes one operand)");
        uses0 |= p[1] == '0';
        p++;
    }
    if (!uses0)
        return BAD("operator %s: c_template `%s` never uses its operand $0", r->name, r->c_template);
    return LOOM_OK;
}

static loom_status check_row(const loom_op_row *r, loom_error *err)
{
    if (!r)
        return BAD("loom_op_register: row is NULL");
    if (!is_ident(r->name) || strlen(r->name) >= LOOM_MAX_NAME)
        return BAD("operator name `%s` is not an identifier of at most %d characters",
                   r->name ? r->name : "(null)", LOOM_MAX_NAME - 1);
    for (int id = 0; id < loom_op_count(); id++)
        if (strcmp(loom_op_get(id)->name, r->name) == 0)
            return BAD("operator %s is already in the table", r->name);
    if (r->form != LOOM_OP_CALL)
        return BAD("operator %s: only call-form rows (LOOM_OP_CALL) can be registered; the lexer's "
                   "symbols are fixed", r->name);
    if (r->arity != 1 && r->arity != 2)
        return BAD("operator %s: arity %d, expected 1 or 2", r->name, r->arity);
    if (!r->eval)
        return BAD("operator %s: eval is NULL (the reference interpreter needs it)", r->name);
    if ((int)r->lower < LOOM_OP_LOWER_CALL || r->lower > LOOM_OP_LOWER_MAX)
        return BAD("operator %s: lower %d is not a loom_op_lowering", r->name, (int)r->lower);
    if (r->lower == LOOM_OP_LOWER_NEG && r->arity != 1)
        return BAD("operator %s: LOOM_OP_LOWER_NEG takes one operand, the row has %d", r->name, r->arity);
    if ((int)r->cost < LOOM_OP_COST_FP || r->cost > LOOM_OP_COST_EXP)
        return BAD("operator %s: cost %d is not a loom_op_cost", r->name, (int)r->cost);
    if ((int)r->sparsity < LOOM_OP_SPARSE_UNION || r->sparsity > LOOM_OP_SPARSE_MASK)
        return BAD("operator %s: sparsity %d is not a loom_op_sparsity", r->name, (int)r->sparsity);
    if (r->sparsity == LOOM_OP_SPARSE_KEEP && r->arity != 1)
        return BAD("operator %s: LOOM_OP_SPARSE_KEEP is a rule for one operand, the row has %d", r->name,
                   r->arity);
    if (r->lower == LOOM_OP_LOWER_CALL)
        return check_template(r, err);
    return LOOM_OK;
}

loom_status loom_op_register(const loom_op_row *row, int *id, loom_error *err)
{
    loom_status rc = check_row(row, err);
    if (rc != LOOM_OK)
        return rc;
    if (LOOM_OP_NBUILTIN + g_nreg >= LOOM_OP_CAPACITY)
        return BAD("operator %s: the operator table is full (%d rows)", row->name, LOOM_OP_CAPACITY);
    reg_row *s = &g_reg[g_nreg];
    s->row = *row;
    snprintf(s->name, sizeof s->name, "%s", row->name);
    s->row.name = s->name;
    s->row.symbol = NULL;
    s->row.prec = 4;
    if (row->c_template) {
        snprintf(s->tpl, sizeof s->tpl, "%s", row->c_template);
        s->row.c_template = s->tpl;
    }
    if (id)
        *id = LOOM_OP_NBUILTIN + g_nreg;
    g_nreg++;
    return LOOM_OK;
}

void loom_op_reset(void) { g_nreg = 0; }
