/* loom: queries and printing of the Program IR (see program.h). */
#include "program.h"
#include "op.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int loom_program_find_tensor(const loom_program *prog, const char *name)
{
    if (!prog || !name)
        return -1;
    for (int t = 0; t < prog->ntensors && t < LOOM_MAX_TENSORS; t++)
        if (strcmp(prog->tensors[t].name, name) == 0)
            return t;
    return -1;
}

int loom_program_find_size(const loom_program *prog, const char *name)
{
    if (!prog || !name)
        return -1;
    for (int s = 0; s < prog->nsizes && s < LOOM_MAX_SIZES; s++)
        if (strcmp(prog->sizes[s].name, name) == 0)
            return s;
    return -1;
}

const char *loom_format_name(loom_format_kind kind)
{
    switch (kind) {
    case LOOM_FORMAT_DENSE: return "dense";
    case LOOM_FORMAT_CSR: return "csr";
    case LOOM_FORMAT_DCSR: return "dcsr";
    case LOOM_FORMAT_CSC: return "csc";
    case LOOM_FORMAT_CAUSAL: return "causal";
    case LOOM_FORMAT_BAND: return "band";
    }
    return "unknown";
}

const char *loom_level_kind_name(loom_level_kind kind)
{
    switch (kind) {
    case LOOM_LEVEL_DENSE: return "dense";
    case LOOM_LEVEL_COMPRESSED: return "compressed";
    case LOOM_LEVEL_RANGE: return "range";
    }
    return "unknown";
}

loom_status loom_format_make(loom_format_kind kind, int order, int band_width,
                             loom_format *f, loom_error *err)
{
    if (!f)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_format_make: no format to fill");
    if (order < 0 || order > LOOM_MAX_ORDER)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "a tensor has 0 to %d dimensions, not %d", LOOM_MAX_ORDER,
                              order);
    if ((int)kind < (int)LOOM_FORMAT_DENSE || (int)kind > (int)LOOM_FORMAT_BAND)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0, "unknown format kind %d",
                              (int)kind);
    if (kind != LOOM_FORMAT_DENSE && order != 2)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "format %s needs a tensor with 2 dimensions, not %d",
                              loom_format_name(kind), order);
    if (kind == LOOM_FORMAT_BAND && band_width < 0)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "band width must be >= 0, not %d", band_width);
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->band_width = kind == LOOM_FORMAT_BAND ? band_width : 0;
    f->nlevels = order;
    for (int l = 0; l < order; l++) {
        f->level[l] = LOOM_LEVEL_DENSE;
        f->mode[l] = l;
    }
    switch (kind) {
    case LOOM_FORMAT_DENSE:
        break;
    case LOOM_FORMAT_CSR:
        f->level[1] = LOOM_LEVEL_COMPRESSED;
        break;
    case LOOM_FORMAT_DCSR:
        f->level[0] = LOOM_LEVEL_COMPRESSED;
        f->level[1] = LOOM_LEVEL_COMPRESSED;
        break;
    case LOOM_FORMAT_CSC:
        f->level[1] = LOOM_LEVEL_COMPRESSED;
        f->mode[0] = 1;
        f->mode[1] = 0;
        break;
    case LOOM_FORMAT_CAUSAL:
    case LOOM_FORMAT_BAND:
        f->level[1] = LOOM_LEVEL_RANGE;
        break;
    }
    return LOOM_OK;
}

int loom_tensor_is_sparse(const loom_program *prog, int t)
{
    if (!prog || t < 0 || t >= prog->ntensors || t >= LOOM_MAX_TENSORS)
        return 0;
    const loom_format *f = &prog->tensors[t].format;
    for (int l = 0; l < f->nlevels && l < LOOM_MAX_ORDER; l++)
        if (f->level[l] == LOOM_LEVEL_COMPRESSED || f->level[l] == LOOM_LEVEL_RANGE)
            return 1;
    return 0;
}

static int flops_rec(const loom_program *prog, int e, int depth)
{
    if (e < 0 || e >= prog->nexprs || e >= LOOM_MAX_EXPRS || depth > LOOM_MAX_EXPRS)
        return 0;
    const loom_expr *x = &prog->exprs[e];
    if (x->kind == LOOM_EXPR_CONST || x->kind == LOOM_EXPR_ACCESS)
        return 0;
    int n = 1; /* every operator row counts one (op.h) */
    for (int a = 0; a < x->nargs && a < 2; a++)
        n += flops_rec(prog, x->args[a], depth + 1);
    return n;
}

int loom_expr_flops(const loom_program *prog, int e)
{
    if (!prog)
        return 0;
    return flops_rec(prog, e, 0);
}

/* ---- printing --------------------------------------------------------- */

/* The precedence of x for printing: its operator row's (op.h), 4 for leaves. */
static int expr_prec(const loom_expr *x)
{
    const loom_op_row *r = loom_op_of_expr(x);
    return r ? r->prec : 4;
}

static const char *var_name(const loom_program *prog, int v)
{
    if (v < 0 || v >= prog->nvars || v >= LOOM_MAX_VARS)
        return "?";
    return prog->vars[v].name;
}

/* Print a constant so that it reads back to the same double. */
static void print_const(double v, FILE *out)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, out);
}

static void print_expr(const loom_program *prog, int e, int ctx, int right, int depth, FILE *out);

/* An operator expression, by its row: prefix, infix or call syntax. */
static void print_op(const loom_program *prog, const loom_expr *x, int p, int depth, FILE *out)
{
    const loom_op_row *r = loom_op_of_expr(x);
    if (r && r->form == LOOM_OP_PREFIX) {
        fputs(r->symbol, out);
        print_expr(prog, x->args[0], p, 0, depth + 1, out);
    } else if (r && r->form == LOOM_OP_INFIX) {
        print_expr(prog, x->args[0], p, 0, depth + 1, out);
        fprintf(out, " %s ", r->symbol);
        print_expr(prog, x->args[1], p, 1, depth + 1, out);
    } else {
        fprintf(out, "%s(", r ? r->name : "?");
        for (int a = 0; a < x->nargs && a < 2; a++) {
            if (a)
                fputs(", ", out);
            print_expr(prog, x->args[a], 0, 0, depth + 1, out);
        }
        fputc(')', out);
    }
}

static void print_expr(const loom_program *prog, int e, int ctx, int right, int depth,
                       FILE *out)
{
    if (e < 0 || e >= prog->nexprs || e >= LOOM_MAX_EXPRS || depth > LOOM_MAX_EXPRS) {
        fputs("?", out);
        return;
    }
    const loom_expr *x = &prog->exprs[e];
    int p = expr_prec(x);
    int paren = p < ctx || (right && p == ctx && p <= 2);
    if (paren)
        fputc('(', out);
    switch (x->kind) {
    case LOOM_EXPR_CONST:
        print_const(x->value, out);
        break;
    case LOOM_EXPR_ACCESS: {
        const char *tn = x->tensor >= 0 && x->tensor < prog->ntensors &&
                                 x->tensor < LOOM_MAX_TENSORS
                             ? prog->tensors[x->tensor].name
                             : "?";
        fprintf(out, "%s(", tn);
        for (int k = 0; k < x->nidx && k < LOOM_MAX_ORDER; k++)
            fprintf(out, "%s%s", k ? ", " : "", var_name(prog, x->idx[k]));
        fputc(')', out);
        break;
    }
    default:
        print_op(prog, x, p, depth, out);
        break;
    }
    if (paren)
        fputc(')', out);
}

static void print_dims(const loom_program *prog, const loom_tensor *t, FILE *out)
{
    fputc('(', out);
    for (int d = 0; d < t->order && d < LOOM_MAX_ORDER; d++) {
        int s = t->dim_size[d];
        fprintf(out, "%s%s", d ? ", " : "",
                s >= 0 && s < prog->nsizes && s < LOOM_MAX_SIZES ? prog->sizes[s].name : "?");
    }
    fputc(')', out);
}

static void print_format(const loom_format *f, FILE *out)
{
    if (f->kind == LOOM_FORMAT_BAND)
        fprintf(out, "band(%d)", f->band_width);
    else
        fputs(loom_format_name(f->kind), out);
}

void loom_program_print(const loom_program *prog, FILE *out)
{
    if (!prog || !out)
        return;
    if (prog->path[0])
        fprintf(out, "# %s\n", prog->path);
    for (int s = 0; s < prog->nsizes && s < LOOM_MAX_SIZES; s++)
        if (prog->sizes[s].is_param)
            fprintf(out, "param %s = %lld\n", prog->sizes[s].name,
                    (long long)prog->sizes[s].def_value);
    for (int t = 0; t < prog->ntensors && t < LOOM_MAX_TENSORS; t++) {
        const loom_tensor *tt = &prog->tensors[t];
        if (tt->role == LOOM_TENSOR_TEMP)
            continue;
        fprintf(out, "tensor %s", tt->name);
        print_dims(prog, tt, out);
        fputc(' ', out);
        print_format(&tt->format, out);
        if (tt->role == LOOM_TENSOR_OUTPUT)
            fputs(" output", out);
        if (tt->pattern_of >= 0 && tt->pattern_of != t && tt->pattern_of < prog->ntensors)
            fprintf(out, "   # pattern of %s", prog->tensors[tt->pattern_of].name);
        fputc('\n', out);
    }
    for (int i = 0; i < prog->nstmts && i < LOOM_MAX_STMTS; i++) {
        const loom_stmt *st = &prog->stmts[i];
        if (st->lhs < 0 || st->lhs >= prog->ntensors || st->lhs >= LOOM_MAX_TENSORS)
            continue;
        const loom_tensor *lt = &prog->tensors[st->lhs];
        if (lt->role == LOOM_TENSOR_TEMP) {
            fprintf(out, "# temporary %s", lt->name);
            print_dims(prog, lt, out);
            fputs(": ", out);
            print_format(&lt->format, out);
            if (lt->nbatch > 0)
                fprintf(out, " below %d dense batch dimension%s", lt->nbatch, lt->nbatch == 1 ? "" : "s");
            if (lt->pattern_of >= 0 && lt->pattern_of < prog->ntensors)
                fprintf(out, ", pattern of %s", prog->tensors[lt->pattern_of].name);
            fputs(lt->format_inferred ? " (inferred)\n" : "\n", out);
        }
        fprintf(out, "%s(", lt->name);
        for (int k = 0; k < lt->order && k < LOOM_MAX_ORDER; k++)
            fprintf(out, "%s%s", k ? ", " : "", var_name(prog, st->lhs_idx[k]));
        fputs(st->op == LOOM_ASSIGN_SET   ? ") = "
              : st->op == LOOM_ASSIGN_ADD ? ") += "
                                          : ") max= ",
              out);
        print_expr(prog, st->rhs, 0, 0, 0, out);
        fputc('\n', out);
    }
}

int loom_expr_reads(const loom_program *prog, int e, int t)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return E->tensor == t;
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    for (int k = 0; k < E->nargs; k++)
        if (loom_expr_reads(prog, E->args[k], t))
            return 1;
    return 0;
}

void loom_program_free(loom_program *prog)
{
    free(prog);
}
