/* The operator table (dsl/ir/op.h, issue 28): an operator added by one row
 * at run time goes through every stage -- parsing and printing, the sparse
 * domain algebra, the reference interpreter, lowering, C code generation
 * (the kernel is built and run here) and the simulator.
 *
 * The test-only row is `square` (x * x, f(0) = 0, so it keeps its operand's
 * sparse domain: LOOM_OP_SPARSE_KEEP).  The kernel's outputs are checked
 * against a computation in this file that shares no code with the lowering
 * or the reference: it reads the sparse matrix from this file's own
 * triplets (the ones it wrote to the Matrix Market file) and the dense
 * vector from the data set's input values.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/ir/domain.h"
#include "../dsl/ir/op.h"
#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/build.h"
#include "../runtime/measure/reference.h"
#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"
#include "fixture.h"

static double ev_square(const double *a) { return a[0] * a[0]; }

static const loom_op_row SQUARE = {
    .name = "square",
    .form = LOOM_OP_CALL,
    .arity = 1,
    .eval = ev_square,
    .lower = LOOM_OP_LOWER_CALL,
    .c_template = "($0 * $0)",
    .cost = LOOM_OP_COST_FP,
    .sparsity = LOOM_OP_SPARSE_KEEP,
};

static int register_square(void)
{
    loom_error err;
    loom_error_clear(&err);
    int id = -1;
    cr_assert_eq(loom_op_register(&SQUARE, &id, &err), LOOM_OK, "%s", err.msg);
    cr_assert_geq(id, LOOM_OP_NBUILTIN);
    cr_assert_eq(loom_op_get(id), loom_op_find_call("square"));
    return id;
}

/* ---- a small sparse matrix, written by this file ------------------------ */

enum { ROWS = 37, COLS = 29, MAXNZ = ROWS * COLS };

typedef struct mat {
    int n, r[MAXNZ], c[MAXNZ];
    double v[MAXNZ];
    char path[128];
} mat;

/* Random entries in [-2, 2) (never 0) at about a fifth of the positions,
 * row 3 empty; seed varies the pattern. */
static void mat_write(mat *m, unsigned seed, const char *tag)
{
    uint64_t s = seed * 2654435761u + 1;
    m->n = 0;
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            if (i == 3 || (s >> 33) % 5)
                continue;
            m->r[m->n] = i;
            m->c[m->n] = j;
            m->v[m->n] = (double)((s >> 40) % 4000) / 1000.0 - 2.0;
            if (m->v[m->n] == 0.0)
                m->v[m->n] = 0.25;
            m->n++;
        }
    snprintf(m->path, sizeof m->path, "/tmp/loom_optable_%d_%s.mtx", (int)getpid(), tag);
    FILE *f = fopen(m->path, "w");
    cr_assert_not_null(f, "cannot write %s", m->path);
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", ROWS, COLS, m->n);
    for (int k = 0; k < m->n; k++)
        fprintf(f, "%d %d %.9g\n", m->r[k] + 1, m->c[k] + 1, m->v[k]);
    fclose(f);
}

/* A's entry (i, j) as loom stores it (a float), 0 when not stored. */
static double mat_at(const mat *m, int i, int j)
{
    for (int k = 0; k < m->n; k++)
        if (m->r[k] == i && m->c[k] == j)
            return (float)m->v[k];
    return 0.0;
}

/* A and B written with seeds sa and sb, loaded with `text` (seed: the dense inputs'). */
typedef struct two {
    mat a, b;
    char da[160], db[160];
    fx_loaded L;
} two;

static void two_load(two *t, unsigned sa, unsigned sb, const char *text, uint64_t seed)
{
    mat_write(&t->a, sa, "A2");
    mat_write(&t->b, sb, "B2");
    snprintf(t->da, sizeof t->da, "A=%s", t->a.path);
    snprintf(t->db, sizeof t->db, "B=%s", t->b.path);
    const char *data[] = {t->da, t->db, NULL};
    t->L = fx_load(NULL, text, data, NULL, seed);
}

static void two_free(two *t)
{
    fx_unload(&t->L);
    unlink(t->a.path);
    unlink(t->b.path);
}

/* ---- registration ------------------------------------------------------- */

Test(optable, builtins_are_rows_in_id_order)
{
    cr_assert_eq(loom_op_count(), LOOM_OP_NBUILTIN);
    cr_assert_str_eq(loom_op_get(LOOM_OP_EXP)->name, "exp");
    cr_assert_eq(loom_op_find_call("max"), loom_op_get(LOOM_FN_MAX));
    cr_assert_eq(loom_op_find_symbol(LOOM_OP_INFIX, "/", 1, 0), loom_op_get(LOOM_OP_DIV));
    cr_assert_eq(loom_op_find_symbol(LOOM_OP_PREFIX, "-", 1, 0), loom_op_get(LOOM_OP_NEG));
    cr_assert_eq(loom_op_find_symbol(LOOM_OP_INFIX, "-", 1, 2), NULL, "- is an infix of precedence 1, not 2");
    cr_assert_eq(loom_op_expr_kind(loom_op_get(LOOM_OP_SUB)), LOOM_EXPR_SUB);
    cr_assert_eq(loom_op_expr_kind(loom_op_get(LOOM_OP_SQRT)), LOOM_EXPR_CALL);
    cr_assert_null(loom_op_get(LOOM_OP_NBUILTIN), "no registered row yet");
}

/* Every documented error of loom_op_register, each naming the problem. */
Test(optable, register_refuses_bad_rows)
{
    loom_error err;
    struct {
        loom_op_row row;
        const char *says;
    } bad[] = {
        {{.name = "exp"}, "already"},
        {{.name = "2x"}, "identifier"},
        {{.name = ""}, "identifier"},
        {{.name = NULL}, "identifier"},
        {{.name = "sq", .form = LOOM_OP_INFIX, .symbol = "%", .arity = 2}, "call-form"},
        {{.name = "sq", .arity = 3}, "arity"},
        {{.name = "sq", .arity = 1}, "eval"},
        {{.name = "sq", .arity = 1, .eval = ev_square, .lower = (loom_op_lowering)99}, "lower"},
        {{.name = "sq", .arity = 2, .eval = ev_square, .lower = LOOM_OP_LOWER_NEG}, "NEG"},
        {{.name = "sq", .arity = 1, .eval = ev_square}, "c_template is NULL"},
        {{.name = "sq", .arity = 1, .eval = ev_square, .c_template = "($1 * $0)"}, "not $0"},
        {{.name = "sq", .arity = 1, .eval = ev_square, .c_template = "1.0f"}, "never uses"},
        {{.name = "sq", .arity = 1, .eval = ev_square, .c_template = "$0", .cost = (loom_op_cost)7}, "cost"},
        {{.name = "sq", .arity = 2, .eval = ev_square, .c_template = "$0", .sparsity = LOOM_OP_SPARSE_KEEP},
         "one operand"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        loom_error_clear(&err);
        cr_assert_eq(loom_op_register(&bad[k].row, NULL, &err), LOOM_ERR_INVALID, "row %zu was accepted", k);
        cr_assert_not_null(strstr(err.msg, bad[k].says), "row %zu: '%s' does not say '%s'", k, err.msg, bad[k].says);
    }
    loom_error_clear(&err);
    cr_assert_eq(loom_op_register(NULL, NULL, &err), LOOM_ERR_INVALID);
    cr_assert_eq(loom_op_count(), LOOM_OP_NBUILTIN, "a refused row is not added");
    register_square();
    loom_error_clear(&err);
    cr_assert_eq(loom_op_register(&SQUARE, NULL, &err), LOOM_ERR_INVALID, "square twice");
    int n = loom_op_count();
    loom_op_row r = SQUARE;
    char name[16];
    int rc = LOOM_OK;
    for (int k = 0; rc == LOOM_OK && k < LOOM_OP_CAPACITY; k++) {
        snprintf(name, sizeof name, "sq%d", k);
        r.name = name;
        rc = loom_op_register(&r, NULL, &err);
    }
    cr_assert_eq(rc, LOOM_ERR_INVALID);
    cr_assert_not_null(strstr(err.msg, "full"), "%s", err.msg);
    cr_assert_eq(loom_op_count(), LOOM_OP_CAPACITY, "%d rows before, %d after", n, loom_op_count());
    loom_op_reset();
    cr_assert_eq(loom_op_count(), LOOM_OP_NBUILTIN);
}

/* The workload hash names a registered row, so it does not depend on the
 * order rows were registered in (their ids do). */
Test(optable, workload_hash_names_registered_rows)
{
    const char *text = "tensor A(N) dense\ntensor y(N) dense output\ny(i) = square(A(i))\n";
    loom_error err;
    loom_program *p[2] = {NULL, NULL};
    uint64_t h[2];
    int id[2];
    for (int k = 0; k < 2; k++) {
        loom_op_reset();
        loom_op_row cube = SQUARE;
        cube.name = "cube";
        if (k)
            cr_assert_eq(loom_op_register(&cube, NULL, &err), LOOM_OK, "%s", err.msg);
        id[k] = register_square();
        cr_assert_eq(loom_program_parse_string(text, "<hash>", &p[k], &err), LOOM_OK, "%s", err.msg);
        h[k] = loom_program_hash(p[k]);
        loom_program_free(p[k]);
    }
    cr_assert_neq(id[0], id[1]);
    cr_assert_eq(h[0], h[1], "the hash changed with the registration order");
    loom_op_reset();
    cr_assert_neq(loom_program_parse_string(text, "<hash>", &p[0], &err), LOOM_OK, "square is gone");
    cr_assert_not_null(strstr(err.msg, "square"), "%s", err.msg);
}

/* ---- the sparsity rule --------------------------------------------------- */

/* square(0) = 0: square keeps its operand's domain -- a sparse access stays
 * its one atom, and over a sum the union of two terms stays (where exp,
 * under the mask rule, is evaluated only where both store); a temporary
 * square(A) takes A's pattern. */
Test(optable, square_keeps_the_sparse_domain)
{
    register_square();
    two w;
    two_load(&w, 1, 2,
             "tensor A(N, M) csr\ntensor B(N, M) csr\ntensor Y(N, M) dense output\n"
             "tensor Z(N, M) dense output\ntensor W(N, M) dense output\n"
             "Y(i, j) = square(A(i, j) + B(i, j))\nZ(i, j) = exp(A(i, j) + B(i, j))\n"
             "T(i, j) = square(A(i, j))\nW(i, j) = T(i, j) * 2\n",
             3);
    fx_loaded L = w.L;
    loom_domain d;
    int acc[LOOM_DOMAIN_MAX_ATOMS], n = 0;
    loom_error err;
    cr_assert_eq(loom_expr_domain(L.prog, L.prog->stmts[0].rhs, &d, acc, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_assert_eq(d.nterms, 2, "square(A + B) is the union A or B");
    cr_assert_eq(loom_expr_domain(L.prog, L.prog->stmts[1].rhs, &d, acc, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(d.nterms, 1, "exp(A + B) is masked: A and B");
    cr_assert_eq(d.term[0], 3u);
    int t = loom_program_find_tensor(L.prog, "T"), A = loom_program_find_tensor(L.prog, "A");
    cr_assert_geq(t, 0);
    cr_assert(loom_tensor_is_sparse(L.prog, t), "square(A) is inferred sparse");
    cr_assert_eq(L.prog->tensors[t].pattern_of, A, "with A's pattern");
    two_free(&w);
}

/* ---- one workload through every stage ----------------------------------- */

static void check_close(double got, double want, const char *what, int i)
{
    cr_assert(fabs(got - want) <= 1e-4 * (fabs(want) > 1 ? fabs(want) : 1), "%s[%d]: %.9g, expected %.9g", what, i,
              got, want);
}

/* The default schedule of L's program, lowered to *fo (the caller frees it).
 * With want (not NULL): first the schedule through the measuring pipeline
 * against the reference, then the C (*csrc, the caller frees it) built and
 * run here on L's data set, its output y checked against want[0 .. ROWS).
 * (In this order: a process that has run an OpenMP kernel must not fork to
 * measure -- libgomp's threads do not survive a fork -- so once a kernel
 * has run here, later calls pass want NULL.) */
static void build_and_run(fx_loaded *L, int y, const double *want, lir_func **fo, char **csrc)
{
    loom_error err;
    loom_error_clear(&err);
    loom_schedule *sch = calloc(1, sizeof *sch);
    cr_assert_not_null(sch);
    cr_assert_eq(loom_schedule_init(sch, L->prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_default_schedule(sch, &err), LOOM_OK, "%s", err.msg);
    if (want)
        fx_run_checked(sch, L->ds, "square workload against the reference");
    cr_assert_eq(loom_lower(sch, fo, &err), LOOM_OK, "lower: %s", err.msg);
    free(sch);
    *csrc = NULL;
    if (!want)
        return;
    cr_assert_eq(loom_codegen_c(*fo, "loom_kernel", csrc, &err), LOOM_OK, "codegen: %s", err.msg);
    loom_module m;
    cr_assert_eq(loom_build(*csrc, "loom_kernel", NULL, &m, &err), LOOM_OK, "build: %s", err.msg);
    loom_dataset_fill_outputs(L->ds, 0.0f);
    cr_assert_eq(m.fn(L->ds->t), 0, "the kernel failed");
    for (int i = 0; i < ROWS; i++)
        check_close(L->ds->t[y].vals[i], want[i], "kernel y", i);
    loom_module_close(&m);
}

/* y(i) = square(A(i, j)) * x(j), A sparse: parse and print, reference,
 * kernel and simulator; the simulator counts one more FLOP per stored entry
 * than for A(i, j) * x(j) (the call; that one is only lowered, checked by
 * the reference and simulated). */
Test(optable, square_runs_through_every_stage, .timeout = 120)
{
    register_square();
    mat a;
    mat_write(&a, 5, "A");
    char da[160];
    snprintf(da, sizeof da, "A=%s", a.path);
    const char *data[] = {da, NULL};
    static const char *text[2] = {
        "tensor A(N, M) csr\ntensor x(M) dense\ntensor y(N) dense output\ny(i) = square(A(i, j)) * x(j)\n",
        "tensor A(N, M) csr\ntensor x(M) dense\ntensor y(N) dense output\ny(i) = A(i, j) * x(j)\n"};
    double flops[2];
    for (int w = 0; w < 2; w++) {
        fx_loaded L = fx_load(NULL, text[w], data, NULL, 11);
        int y = loom_program_find_tensor(L.prog, "y"), x = loom_program_find_tensor(L.prog, "x");
        if (w == 0) {
            char *buf = NULL;
            size_t len = 0;
            FILE *ms = open_memstream(&buf, &len);
            loom_program_print(L.prog, ms);
            fclose(ms);
            cr_assert_not_null(strstr(buf, "square(A(i, j)) * x(j)"), "printed: %s", buf);
            free(buf);
        }
        /* this file's own y: the triplets it wrote, x as loaded */
        double want[ROWS] = {0};
        const float *xv = L.ds->t[x].vals;
        for (int k = 0; k < a.n; k++) {
            double v = (float)a.v[k];
            want[a.r[k]] += (w == 0 ? v * v : v) * xv[a.c[k]];
        }
        loom_error err;
        loom_reference *ref = NULL;
        cr_assert_eq(loom_reference_run(L.ds, &ref, &err), LOOM_OK, "%s", err.msg);
        for (int i = 0; i < ROWS; i++)
            check_close(ref->vals[y][i], want[i], "reference y", i);
        loom_reference_free(ref);
        lir_func *f = NULL;
        char *src = NULL;
        build_and_run(&L, y, w == 0 ? want : NULL, &f, &src);
        if (w == 0) { /* a call of the row in LIR, its template in C */
            char *buf = NULL;
            size_t len = 0;
            FILE *ms = open_memstream(&buf, &len);
            loom_lir_print(f, ms);
            fclose(ms);
            cr_assert_not_null(strstr(buf, "square("), "LIR: %s", buf);
            free(buf);
            const char *ld = strstr(src, "(A_vals[");
            cr_assert_not_null(ld, "no read of A in the C: %s", src);
            char sq[128];
            int n = (int)strcspn(ld + 1, "]");
            snprintf(sq, sizeof sq, "(%.*s] * %.*s])", n, ld + 1, n, ld + 1);
            cr_assert_not_null(strstr(src, sq), "no %s (the template ($0 * $0)) in the C: %s", sq, src);
        }
        loom_target t;
        cr_assert_eq(loom_target_load("targets/spr-2c.json", &t, &err), LOOM_OK, "%s", err.msg);
        loom_sim_result r;
        cr_assert_eq(loom_sim_run(f, L.ds, &t, &r, &err), LOOM_OK, "sim: %s", err.msg);
        cr_assert(isfinite(r.latency_s) && r.latency_s > 0, "simulated latency %g", r.latency_s);
        flops[w] = r.flops;
        free(src);
        loom_lir_func_free(f);
        fx_unload(&L);
    }
    cr_expect_eq(flops[0] - flops[1], (double)a.n, "simulated FLOPs %g with square, %g without, %d entries",
                 flops[0], flops[1], a.n);
    unlink(a.path);
}

/* Union coiteration with the row: y(i) = square(A(i, j) + B(i, j)) * x(j)
 * sums over the union of A's and B's entries (square keeps the union; no
 * presence guard is needed, square(0) = 0). */
Test(optable, square_over_a_union, .timeout = 120)
{
    register_square();
    two w;
    two_load(&w, 7, 8,
             "tensor A(N, M) csr\ntensor B(N, M) csr\ntensor x(M) dense\ntensor y(N) dense output\n"
             "y(i) = square(A(i, j) + B(i, j)) * x(j)\n",
             13);
    fx_loaded L = w.L;
    int y = loom_program_find_tensor(L.prog, "y"), x = loom_program_find_tensor(L.prog, "x");
    const float *xv = L.ds->t[x].vals;
    double want[ROWS] = {0};
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++) {
            double s = mat_at(&w.a, i, j) + mat_at(&w.b, i, j);
            want[i] += s * s * xv[j];
        }
    lir_func *f = NULL;
    char *src = NULL;
    build_and_run(&L, y, want, &f, &src);
    free(src);
    loom_lir_func_free(f);
    two_free(&w);
}
