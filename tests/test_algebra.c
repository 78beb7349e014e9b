/* The sparse algebra (docs/schedule-language.md "Sparse semantics") against
 * an oracle that shares no code with the reference interpreter or the
 * lowering: a dense evaluator written here that treats every tensor as a
 * dense array with zeros where nothing is stored, loops over every point of
 * every statement's index space, and applies the rules of the table in the
 * docs directly (a sum is present where either side is, a product where both
 * are, a function where every sparse tensor its arguments read is stored;
 * reductions run over present points only).
 *
 * Sparse inputs are random small matrices generated here (with empty rows
 * and columns); the oracle reads them from this file's own dense copies,
 * never from loom's storage arrays.  Each workload's reference result must
 * equal the oracle's (to 1e-9 relative), and the default schedule and the
 * naive loop nest compiled to C must match the reference (fx_run_checked).
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/reference.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "fixture.h"

/* ---- random sparse inputs ---------------------------------------------- */

typedef struct gen_mat {
    const char *name;  /* tensor name */
    int rows, cols;
    double density;
    double *dense;     /* rows x cols, zeros where not stored */
    unsigned char *st; /* stored flags */
    char path[256];
} gen_mat;

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* Random entries (values in [-2, 2), never 0) with row 1 and column 2 empty,
 * written as a Matrix Market file. */
static void gen(gen_mat *m, uint64_t seed)
{
    m->dense = calloc((size_t)m->rows * m->cols, sizeof(double));
    m->st = calloc((size_t)m->rows * m->cols, 1);
    cr_assert(m->dense && m->st);
    uint64_t s = seed * 7919 + 17;
    int nnz = 0;
    for (int i = 0; i < m->rows; i++)
        for (int j = 0; j < m->cols; j++) {
            double u = (double)(lcg(&s) % 1000000) / 1e6;
            if (i == 1 || j == 2 || u >= m->density)
                continue;
            double v = (double)(lcg(&s) % 4000) / 1000.0 - 2.0;
            if (v == 0)
                v = 0.5;
            m->dense[(size_t)i * m->cols + j] = v;
            m->st[(size_t)i * m->cols + j] = 1;
            nnz++;
        }
    snprintf(m->path, sizeof m->path, "/tmp/loom_algebra_%d_%s_%llu.mtx", (int)getpid(), m->name,
             (unsigned long long)seed);
    FILE *f = fopen(m->path, "w");
    cr_assert(f, "cannot write %s", m->path);
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", m->rows, m->cols, nnz);
    for (int i = 0; i < m->rows; i++)
        for (int j = 0; j < m->cols; j++)
            if (m->st[(size_t)i * m->cols + j])
                fprintf(f, "%d %d %.17g\n", i + 1, j + 1, m->dense[(size_t)i * m->cols + j]);
    fclose(f);
}

static void gen_free(gen_mat *m)
{
    unlink(m->path);
    free(m->dense);
    free(m->st);
}

/* ---- the dense-with-zeros oracle --------------------------------------- */

typedef struct oracle {
    const loom_program *prog;
    double *val[LOOM_MAX_TENSORS];          /* dense, row-major */
    unsigned char *st[LOOM_MAX_TENSORS];    /* stored / present flags */
    int64_t n[LOOM_MAX_TENSORS];
    int64_t dims[LOOM_MAX_TENSORS][LOOM_MAX_ORDER];
    int64_t x[LOOM_MAX_VARS];               /* the current point */
} oracle;

static int64_t o_index(const oracle *o, int t, const int *idx)
{
    int64_t p = 0;
    for (int d = 0; d < o->prog->tensors[t].order; d++)
        p = p * o->dims[t][d] + o->x[idx[d]];
    return p;
}

/* 1 if every sparse tensor read under e stores the point. */
static int o_all_stored(const oracle *o, int e)
{
    const loom_expr *x = &o->prog->exprs[e];
    if (x->kind == LOOM_EXPR_ACCESS)
        return o->st[x->tensor][o_index(o, x->tensor, x->idx)];
    if (x->kind == LOOM_EXPR_CONST)
        return 1;
    for (int k = 0; k < x->nargs; k++)
        if (!o_all_stored(o, x->args[k]))
            return 0;
    return 1;
}

static double o_eval(const oracle *o, int e, int *present)
{
    const loom_expr *x = &o->prog->exprs[e];
    int pa = 1, pb = 1;
    double a = 0, b = 0;
    *present = 1;
    if (x->kind != LOOM_EXPR_CONST && x->kind != LOOM_EXPR_ACCESS && x->kind != LOOM_EXPR_CALL) {
        a = o_eval(o, x->args[0], &pa);
        if (x->nargs > 1)
            b = o_eval(o, x->args[1], &pb);
    }
    switch (x->kind) {
    case LOOM_EXPR_CONST:
        return x->value;
    case LOOM_EXPR_ACCESS: {
        int64_t p = o_index(o, x->tensor, x->idx);
        *present = o->st[x->tensor][p];
        return *present ? o->val[x->tensor][p] : 0.0;
    }
    case LOOM_EXPR_NEG:
        *present = pa;
        return -a;
    case LOOM_EXPR_ADD:
        *present = pa || pb;
        return a + b;
    case LOOM_EXPR_SUB:
        *present = pa || pb;
        return a - b;
    case LOOM_EXPR_MUL:
        *present = pa && pb;
        return *present ? a * b : 0.0;
    case LOOM_EXPR_DIV:
        *present = pa && pb;
        return *present ? a / b : 0.0;
    case LOOM_EXPR_CALL: {
        *present = o_all_stored(o, e);
        if (!*present)
            return 0.0;
        a = o_eval(o, x->args[0], &pa);
        if (x->nargs > 1)
            b = o_eval(o, x->args[1], &pb);
        switch (x->fn) {
        case LOOM_FN_EXP: return exp(a);
        case LOOM_FN_SQRT: return sqrt(a);
        case LOOM_FN_RELU: return a > 0 ? a : 0.0;
        case LOOM_FN_MAX: return a > b ? a : b;
        case LOOM_FN_MIN: return a < b ? a : b;
        }
    }
    }
    cr_assert_fail("oracle: unknown expression kind %d", (int)x->kind);
    return NAN;
}

/* Is (i, j) stored in a causal/band pattern?  From the definition. */
static int o_in_range(const loom_format *f, int64_t i, int64_t j)
{
    if (f->kind == LOOM_FORMAT_CAUSAL)
        return j <= i;
    return j >= i - f->band_width && j <= i + f->band_width;
}

/* Fill the oracle's inputs: sparse ones from gens (by name), dense ones from
 * the data set's generated values, patterns from their definition. */
static void o_init(oracle *o, const loom_program *prog, const loom_dataset *ds, gen_mat *g, int ng)
{
    memset(o, 0, sizeof *o);
    o->prog = prog;
    for (int t = 0; t < prog->ntensors; t++) {
        const loom_tensor *T = &prog->tensors[t];
        int64_t n = 1;
        for (int d = 0; d < T->order; d++)
            n *= o->dims[t][d] = loom_program_dim(prog, t, d);
        o->n[t] = n;
        o->val[t] = calloc((size_t)(n ? n : 1), sizeof(double));
        o->st[t] = calloc((size_t)(n ? n : 1), 1);
        cr_assert(o->val[t] && o->st[t]);
        if (T->role != LOOM_TENSOR_INPUT)
            continue;
        if (!loom_tensor_is_sparse(prog, t)) {
            for (int64_t k = 0; k < n; k++) {
                o->val[t][k] = ds->t[t].vals[k];
                o->st[t][k] = 1;
            }
        } else if (T->is_pattern) {
            for (int64_t i = 0; i < o->dims[t][0]; i++)
                for (int64_t j = 0; j < o->dims[t][1]; j++)
                    if (o_in_range(&T->format, i, j)) {
                        o->val[t][i * o->dims[t][1] + j] = 1.0;
                        o->st[t][i * o->dims[t][1] + j] = 1;
                    }
        } else {
            int found = 0;
            for (int k = 0; k < ng; k++)
                if (!strcmp(g[k].name, T->name)) {
                    cr_assert_eq(n, (int64_t)g[k].rows * g[k].cols);
                    for (int64_t q = 0; q < n; q++) {
                        o->val[t][q] = (float)g[k].dense[q]; /* loom reads values as float */
                        o->st[t][q] = g[k].st[q];
                    }
                    found = 1;
                }
            cr_assert(found, "oracle: no generated data for %s", T->name);
        }
    }
}

/* Run every statement over its full index space. */
static void o_run(oracle *o)
{
    const loom_program *prog = o->prog;
    for (int s = 0; s < prog->nstmts; s++) {
        const loom_stmt *st = &prog->stmts[s];
        int t = st->lhs;
        double ident = st->op == LOOM_ASSIGN_MAX ? -INFINITY : 0.0;
        /* a computed sparse tensor is present where its pattern stores */
        int src = prog->tensors[t].pattern_of;
        for (int64_t k = 0; k < o->n[t]; k++) {
            o->val[t][k] = ident;
            o->st[t][k] = src >= 0 && src != t ? o->st[src][k] : 1;
        }
        int64_t ext[LOOM_MAX_STMT_VARS];
        int64_t total = 1;
        for (int k = 0; k < st->nvars; k++)
            total *= ext[k] = loom_program_var_extent(prog, st->vars[k]);
        for (int64_t q = 0; q < total; q++) {
            int64_t r = q;
            for (int k = st->nvars - 1; k >= 0; k--) {
                o->x[st->vars[k]] = r % ext[k];
                r /= ext[k];
            }
            int present;
            double v = o_eval(o, st->rhs, &present);
            if (!present)
                continue;
            int64_t p = o_index(o, t, st->lhs_idx);
            cr_assert(o->st[t][p], "oracle: statement %d reaches an unstored entry of its lhs", s);
            if (st->op == LOOM_ASSIGN_MAX)
                o->val[t][p] = v > o->val[t][p] ? v : o->val[t][p];
            else
                o->val[t][p] += v;
        }
    }
}

static void o_free(oracle *o)
{
    for (int t = 0; t < LOOM_MAX_TENSORS; t++) {
        free(o->val[t]);
        free(o->st[t]);
    }
}

static int close_to(double got, double want, double scale)
{
    if (isinf(want) || isinf(got))
        return got == want;
    return fabs(got - want) <= 1e-9 * (fabs(want) > scale ? fabs(want) : scale);
}

/* The reference's outputs equal the oracle's; a sparse output is compared at
 * its stored positions (found through the data set's pos/crd, csr only) and
 * must be zero in the oracle elsewhere. */
static void compare(const oracle *o, const loom_dataset *ds, const loom_reference *ref, const char *what)
{
    const loom_program *prog = o->prog;
    for (int t = 0; t < prog->ntensors; t++) {
        if (prog->tensors[t].role != LOOM_TENSOR_OUTPUT)
            continue;
        double scale = 1e-6;
        for (int64_t k = 0; k < o->n[t]; k++)
            if (isfinite(o->val[t][k]) && fabs(o->val[t][k]) > scale)
                scale = fabs(o->val[t][k]);
        if (!loom_tensor_is_sparse(prog, t)) {
            cr_assert_eq(ref->nvals[t], o->n[t]);
            for (int64_t k = 0; k < o->n[t]; k++)
                cr_assert(close_to(ref->vals[t][k], o->val[t][k], scale),
                          "%s: %s[%lld]: reference %.17g, dense oracle %.17g", what,
                          prog->tensors[t].name, (long long)k, ref->vals[t][k], o->val[t][k]);
            continue;
        }
        const loom_tensor_abi *a = &ds->t[t];
        cr_assert_eq(prog->tensors[t].format.kind, LOOM_FORMAT_CSR);
        unsigned char *seen = calloc((size_t)o->n[t], 1);
        int64_t cols = o->dims[t][1];
        for (int64_t i = 0; i < o->dims[t][0]; i++)
            for (int32_t q = a->pos[1][i]; q < a->pos[1][i + 1]; q++) {
                int64_t k = i * cols + a->crd[1][q];
                seen[k] = 1;
                cr_assert(close_to(ref->vals[t][q], o->val[t][k], scale),
                          "%s: %s(%lld, %d): reference %.17g, dense oracle %.17g", what,
                          prog->tensors[t].name, (long long)i, a->crd[1][q], ref->vals[t][q], o->val[t][k]);
            }
        for (int64_t k = 0; k < o->n[t]; k++)
            cr_assert(seen[k] || o->val[t][k] == 0.0, "%s: %s[%lld] = %g off the output's pattern", what,
                      prog->tensors[t].name, (long long)k, o->val[t][k]);
        free(seen);
    }
}

/* Load `text` with generated sparse inputs g[0..ng), check the reference
 * against the oracle, then (run != 0) the default schedule and the naive
 * nest compiled and run against the reference. */
static void check(const char *what, const char *text, gen_mat *g, int ng, const char *const *params, int run)
{
    const char *data[LOOM_MAX_TENSORS + 1];
    char buf[LOOM_MAX_TENSORS][300];
    for (int k = 0; k < ng; k++) {
        gen(&g[k], (uint64_t)(k + 1) * 31 + (uint64_t)ng);
        snprintf(buf[k], sizeof buf[k], "%s=%s", g[k].name, g[k].path);
        data[k] = buf[k];
    }
    data[ng] = NULL;
    fx_loaded L = fx_load(NULL, text, data, params, 7);
    loom_error err;
    loom_error_clear(&err);
    loom_reference *ref = NULL;
    cr_assert_eq(loom_reference_run(L.ds, &ref, &err), LOOM_OK, "%s: reference: %s", what, err.msg);
    oracle *o = calloc(1, sizeof *o);
    cr_assert(o);
    o_init(o, L.prog, L.ds, g, ng);
    o_run(o);
    compare(o, L.ds, ref, what);
    o_free(o);
    free(o);
    loom_reference_free(ref);
    if (run) {
        loom_schedule *sch = calloc(1, sizeof *sch);
        cr_assert(sch);
        cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_default_schedule(sch, &err), LOOM_OK, "%s: default schedule: %s", what, err.msg);
        fx_run_checked(sch, L.ds, what);
        cr_assert_eq(loom_schedule_naive(sch, L.prog, 0, &err), LOOM_OK, "%s: naive: %s", what, err.msg);
        fx_run_checked(sch, L.ds, what);
        free(sch);
    }
    fx_unload(&L);
    for (int k = 0; k < ng; k++)
        gen_free(&g[k]);
}

#define MAT(n, r, c, d) {n, r, c, d, NULL, NULL, {0}}

Test(algebra, spadd)
{
    gen_mat g[] = {MAT("A", 13, 17, 0.3), MAT("B", 13, 17, 0.25)};
    check("spadd", "tensor A(N, M) csr\ntensor B(N, M) csr\ntensor C(N, M) dense output\n"
                   "C(i, j) = A(i, j) + B(i, j)\n", g, 2, NULL, 1);
}

Test(algebra, spsub)
{
    gen_mat g[] = {MAT("A", 11, 9, 0.3), MAT("B", 11, 9, 0.4)};
    check("spsub", "tensor A(N, M) csr\ntensor B(N, M) csr\ntensor C(N, M) dense output\n"
                   "C(i, j) = A(i, j) - B(i, j)\n", g, 2, NULL, 1);
}

/* csr + csc: no loop order is concordant with both, so only the reference */
Test(algebra, spadd_csr_csc)
{
    gen_mat g[] = {MAT("A", 8, 10, 0.3), MAT("B", 8, 10, 0.3)};
    check("spadd_csc", "tensor A(N, M) csr\ntensor B(N, M) csc\ntensor C(N, M) dense output\n"
                       "C(i, j) = A(i, j) + B(i, j)\n", g, 2, NULL, 0);
}

Test(algebra, spmv_of_sum)
{
    gen_mat g[] = {MAT("A", 14, 12, 0.2), MAT("B", 14, 12, 0.3)};
    check("spmv_sum", "tensor A(N, K) csr\ntensor B(N, K) csr\ntensor x(K) dense\ntensor y(N) dense output\n"
                      "y(i) = (A(i, k) + B(i, k)) * x(k)\n", g, 2, NULL, 1);
}

Test(algebra, mixed_lattice)
{
    gen_mat g[] = {MAT("A", 12, 15, 0.4), MAT("B", 12, 15, 0.4), MAT("D", 12, 15, 0.2)};
    check("spmixed", "tensor A(N, M) csr\ntensor B(N, M) csr\ntensor D(N, M) csr\ntensor C(N, M) dense output\n"
                     "C(i, j) = A(i, j) * B(i, j) + D(i, j)\n", g, 3, NULL, 1);
}

/* Sparse outputs whose pattern is assembled (a union, a product): the
 * reference and the kernels store at the assembled positions; the oracle
 * is compared there and must be zero elsewhere (compare). */
Test(algebra, spadd_csr_output)
{
    gen_mat g[] = {MAT("A", 13, 17, 0.3), MAT("B", 13, 17, 0.25)};
    check("spadd_csr", "tensor A(N, M) csr\ntensor B(N, M) csr\ntensor C(N, M) csr output\n"
                       "C(i, j) = A(i, j) + B(i, j)\n", g, 2, NULL, 1);
}

Test(algebra, spgemm_csr_output)
{
    gen_mat g[] = {MAT("A", 12, 14, 0.2), MAT("B", 14, 11, 0.2)};
    check("spgemm", "tensor A(N, K) csr\ntensor B(K, M) csr\ntensor C(N, M) csr output\n"
                    "C(i, j) += A(i, k) * B(k, j)\n", g, 2, NULL, 1);
}

/* y = A x + b: the bias is summed with every point of the row's k domain
 * under the statement's reduction, which makes the domain dense in k. */
Test(algebra, spmv_dense_bias)
{
    gen_mat g[] = {MAT("A", 10, 8, 0.3)};
    check("spmv_bias", "tensor A(N, K) csr\ntensor x(K) dense\ntensor b(N) dense\ntensor y(N) dense output\n"
                       "y(i) = A(i, k) * x(k) + b(i)\n", g, 1, NULL, 1);
}

Test(algebra, workloads_products)
{
    const char *f16[] = {"F=5", NULL}, *d8[] = {"D=4", NULL};
    gen_mat g1[] = {MAT("A", 11, 13, 0.3)};
    check("spmm", "tensor A(N, K) csr\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
                  "C(i, f) += A(i, k) * B(k, f)\n", g1, 1, f16, 0);
    gen_mat g2[] = {MAT("M", 9, 12, 0.3)};
    check("sddmm", "tensor M(N, L) csr\ntensor Q(N, D) dense\ntensor K(L, D) dense\ntensor S(N, L) csr output\n"
                   "S(i, j) = M(i, j) * Q(i, d) * K(j, d)\n", g2, 1, d8, 0);
}

Test(algebra, attention_masks)
{
    const char *d4[] = {"D=4", NULL};
    gen_mat g[] = {MAT("A", 12, 12, 0.3)};
    check("sparse_attention", "tensor A(N, N) csr\ntensor Q(N, D) dense\ntensor K(N, D) dense\n"
                              "tensor V(N, D) dense\ntensor O(N, D) dense output\n"
                              "S(i, j)  = A(i, j) * Q(i, d) * K(j, d) * 0.125\n"
                              "m(i)   max= S(i, j)\n"
                              "P(i, j)  = exp(S(i, j) - m(i))\n"
                              "l(i)    += P(i, j)\n"
                              "O(i, e) += P(i, j) * V(j, e) / l(i)\n", g, 1, d4, 0);
    const char *p[] = {"N=9", "D=3", NULL};
    check("attention_causal", "tensor Q(N, D) dense\ntensor K(N, D) dense\ntensor V(N, D) dense\n"
                              "tensor W(N, N) causal\ntensor O(N, D) dense output\n"
                              "S(i, j)  = W(i, j) * Q(i, d) * K(j, d) * 0.125\n"
                              "m(i)   max= S(i, j)\n"
                              "P(i, j)  = exp(S(i, j) - m(i))\n"
                              "l(i)    += P(i, j)\n"
                              "O(i, e) += P(i, j) * V(j, e) / l(i)\n", NULL, 0, p, 0);
}

/* The simulator runs the union merge's loops as lowered: one add per point
 * of the union of Cora and its shifted copy (the reference counts those
 * points by its own enumeration), two FLOPs per point of (A and B) or D. */
Test(algebra, simulated_union_flops)
{
    const char *data[] = {"A=data/cora500_adj.mtx", "B=tests/data/cora500_shift.mtx", "D=data/cora500_adj.mtx", NULL};
    static const char *const text[2] = {
        "tensor A(N, M) csr\ntensor B(N, M) csr\ntensor C(N, M) dense output\nC(i, j) = A(i, j) + B(i, j)\n",
        "tensor A(N, M) csr\ntensor B(N, M) csr\ntensor D(N, M) csr\ntensor C(N, M) dense output\n"
        "C(i, j) = A(i, j) * B(i, j) + D(i, j)\n"};
    for (int w = 0; w < 2; w++) {
        const char *d3[] = {data[0], data[1], w ? data[2] : NULL, NULL};
        fx_loaded L = fx_load(NULL, text[w], d3, NULL, 1);
        loom_error err;
        loom_reference *ref = NULL;
        cr_assert_eq(loom_reference_run(L.ds, &ref, &err), LOOM_OK, "%s", err.msg);
        loom_schedule *sch = calloc(1, sizeof *sch);
        lir_func *f = NULL;
        cr_assert_eq(loom_schedule_naive(sch, L.prog, 1, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s", err.msg);
        loom_target t;
        cr_assert_eq(loom_target_host(&t, &err), LOOM_OK, "%s", err.msg);
        loom_sim_result r;
        cr_assert_eq(loom_sim_run(f, L.ds, &t, &r, &err), LOOM_OK, "%s", err.msg);
        cr_assert_gt(ref->stmt_points[0], w ? 2049 : 2050, "the union holds each operand");
        cr_expect_eq(r.flops, (double)(w + 1) * (double)ref->stmt_points[0], "flops %g for %lld points", r.flops,
                     (long long)ref->stmt_points[0]);
        loom_lir_func_free(f);
        free(sch);
        loom_reference_free(ref);
        fx_unload(&L);
    }
}
