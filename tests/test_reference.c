/* Tests of the reference evaluator (runtime/measure/reference.c).
 *
 * Every expected value is computed by hand in the comments from the small
 * fixtures under tests/data/ref_*.mtx, and asserted to 1e-12 (the reference
 * computes in double from float inputs that are exact small numbers).
 * Tests run from the repository root (as `make test` does).
 */
#include <criterion/criterion.h>

#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../dsl/ir/program.h"
#include "../dsl/ir/util.h"
#include "../runtime/data/dataset.h"
#include "../runtime/measure/reference.h"

#define EPS 1e-12

typedef struct fx {
    loom_program *prog;
    loom_dataset *ds;
    loom_reference *ref;
} fx;

static void fx_load(fx *f, const char *text, const loom_data_spec *specs, int nspecs,
                    const loom_param_spec *params, int nparams)
{
    loom_error err;
    loom_error_clear(&err);
    memset(f, 0, sizeof *f);
    loom_status rc = loom_program_parse_string(text, "test.loom", &f->prog, &err);
    cr_assert_eq(rc, LOOM_OK, "parse: %s", err.msg);
    rc = loom_dataset_load(f->prog, specs, nspecs, params, nparams, 42, &f->ds, &err);
    cr_assert_eq(rc, LOOM_OK, "dataset: %s", err.msg);
}

static void fx_load_file(fx *f, const char *path, const loom_data_spec *specs, int nspecs,
                         const loom_param_spec *params, int nparams)
{
    loom_error err;
    loom_error_clear(&err);
    memset(f, 0, sizeof *f);
    loom_status rc = loom_program_parse_file(path, &f->prog, &err);
    cr_assert_eq(rc, LOOM_OK, "parse %s: %s", path, err.msg);
    rc = loom_dataset_load(f->prog, specs, nspecs, params, nparams, 42, &f->ds, &err);
    cr_assert_eq(rc, LOOM_OK, "dataset: %s", err.msg);
}

static void fx_run(fx *f)
{
    loom_error err;
    loom_error_clear(&err);
    loom_reference_free(f->ref);
    f->ref = NULL;
    loom_status rc = loom_reference_run(f->ds, &f->ref, &err);
    cr_assert_eq(rc, LOOM_OK, "reference: %s", err.msg);
    cr_assert_not_null(f->ref);
}

static void fx_free(fx *f)
{
    loom_reference_free(f->ref);
    loom_dataset_free(f->ds);
    loom_program_free(f->prog);
    memset(f, 0, sizeof *f);
}

static int tid(const fx *f, const char *name)
{
    int t = loom_program_find_tensor(f->prog, name);
    cr_assert_geq(t, 0, "no tensor %s", name);
    return t;
}

/* Overwrite a dense input's values. */
static void set_dense(fx *f, const char *name, const float *v, int64_t n)
{
    int t = tid(f, name);
    int64_t size = 1;
    for (int d = 0; d < f->prog->tensors[t].order; d++)
        size *= loom_program_dim(f->prog, t, d);
    cr_assert_eq(size, n, "%s has %lld elements, test gives %lld", name, (long long)size,
                 (long long)n);
    cr_assert_not_null(f->ds->t[t].vals);
    memcpy(f->ds->t[t].vals, v, (size_t)n * sizeof(float));
}

static const double *rv(const fx *f, const char *name, int64_t n)
{
    int t = tid(f, name);
    cr_assert_eq(f->ref->nvals[t], n, "%s: %lld values, expected %lld", name,
                 (long long)f->ref->nvals[t], (long long)n);
    cr_assert_not_null(f->ref->vals[t]);
    return f->ref->vals[t];
}

static void expect_vals(const fx *f, const char *name, const double *want, int64_t n)
{
    const double *got = rv(f, name, n);
    for (int64_t i = 0; i < n; i++) {
        if (isinf(want[i]))
            cr_expect(got[i] == want[i], "%s[%lld] = %g, expected %g", name, (long long)i,
                      got[i], want[i]);
        else
            cr_expect(fabs(got[i] - want[i]) <= EPS, "%s[%lld] = %.17g, expected %.17g", name,
                      (long long)i, got[i], want[i]);
    }
}

/* Copy the reference's outputs into the data set's float outputs. */
static void copy_outputs(fx *f)
{
    for (int t = 0; t < f->prog->ntensors; t++) {
        if (f->prog->tensors[t].role != LOOM_TENSOR_OUTPUT)
            continue;
        cr_assert_eq(f->ds->t[t].nnz, f->ref->nvals[t]);
        for (int64_t i = 0; i < f->ref->nvals[t]; i++)
            f->ds->t[t].vals[i] = (float)f->ref->vals[t][i];
    }
}

static const char *SPMV = "tensor A(N, K) csr\n"
                          "tensor x(K) dense\n"
                          "tensor y(N) dense output\n"
                          "y(i) = A(i, k) * x(k)\n";

/* A = [1 0 2; 0 0 0; 0 3 0] (ref_spmv3), x = (1, 2, 3):
 * y = (1*1 + 2*3, 0, 3*2) = (7, 0, 6).  3 points, 2 flops each (mul + add);
 * longest reduction: row 0 with 2 entries. */
Test(reference, spmv_empty_row)
{
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_spmv3.mtx"}};
    fx_load(&f, SPMV, s, 1, NULL, 0);
    set_dense(&f, "x", (const float[]){1, 2, 3}, 3);
    fx_run(&f);
    expect_vals(&f, "y", (const double[]){7, 0, 6}, 3);
    cr_expect_eq(f.ref->stmt_points[0], 3);
    cr_expect(fabs(f.ref->flops - 6.0) <= EPS, "flops %g", f.ref->flops);
    cr_expect_eq(f.ref->max_reduction_len, 2);
    /* the input is copied to double */
    expect_vals(&f, "x", (const double[]){1, 2, 3}, 3);
    fx_free(&f);
}

/* The same SpMV with A stored as dcsr (row 1 absent from level 0) and csc. */
static void spmv_format(const char *fmt)
{
    char text[512];
    snprintf(text, sizeof text,
             "tensor A(N, K) %s\ntensor x(K) dense\ntensor y(N) dense output\n"
             "y(i) = A(i, k) * x(k)\n", fmt);
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_spmv3.mtx"}};
    fx_load(&f, text, s, 1, NULL, 0);
    set_dense(&f, "x", (const float[]){1, 2, 3}, 3);
    fx_run(&f);
    expect_vals(&f, "y", (const double[]){7, 0, 6}, 3);
    cr_expect_eq(f.ref->stmt_points[0], 3);
    cr_expect_eq(f.ref->max_reduction_len, 2);
    fx_free(&f);
}

Test(reference, spmv_dcsr) { spmv_format("dcsr"); }
Test(reference, spmv_csc) { spmv_format("csc"); }

static const char *SPMM_FMT = "param F = 64\n"
                              "tensor A(N, K) %s\n"
                              "tensor B(K, F) dense\n"
                              "tensor C(N, F) dense output\n"
                              "C(i, f) += A(i, k) * B(k, f)\n";

/* A = [1 0 2 0; 0 0 0 3; 4 5 0 6] (ref_a34), F = 2 by --param,
 * B = [1 2; 3 4; 5 6; 7 8]:
 *   C row 0 = 1*(1,2) + 2*(5,6)           = (11, 14)
 *   C row 1 = 3*(7,8)                     = (21, 24)
 *   C row 2 = 4*(1,2) + 5*(3,4) + 6*(7,8) = (61, 76)
 * points = nnz * F = 12, flops = 2 * nnz * F = 24, longest row: 3. */
static void spmm_format(const char *fmt)
{
    char text[512];
    snprintf(text, sizeof text, SPMM_FMT, fmt);
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_a34.mtx"}};
    loom_param_spec p[] = {{"F", 2}};
    fx_load(&f, text, s, 1, p, 1);
    set_dense(&f, "B", (const float[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    fx_run(&f);
    expect_vals(&f, "C", (const double[]){11, 14, 21, 24, 61, 76}, 6);
    cr_expect_eq(f.ref->stmt_points[0], 12);
    cr_expect(fabs(f.ref->stmt_flops[0] - 24.0) <= EPS, "stmt flops %g", f.ref->stmt_flops[0]);
    cr_expect(fabs(f.ref->flops - 24.0) <= EPS, "flops %g", f.ref->flops);
    cr_expect_eq(f.ref->max_reduction_len, 3);
    /* sparse input values are copied in position order */
    int a = tid(&f, "A");
    cr_expect_eq(f.ref->nvals[a], 6);
    fx_free(&f);
}

Test(reference, spmm_csr) { spmm_format("csr"); }
Test(reference, spmm_csc) { spmm_format("csc"); }
Test(reference, spmm_dcsr) { spmm_format("dcsr"); }

/* SDDMM, D = 2: M = ref_a34, Q = [1 0; 0 1; 1 1], K = [1 2; 3 4; 5 6; 7 8].
 * S(i,j) = M(i,j) * <Q(i), K(j)> at M's stored entries, in position order:
 *   (0,0) 1*(1)      = 1     (0,2) 2*(5)     = 10
 *   (1,3) 3*(8)      = 24
 *   (2,0) 4*(1+2)    = 12    (2,1) 5*(3+4)   = 35    (2,3) 6*(7+8) = 90
 * 12 points (6 entries x D); flops = 12 * (2 muls + 1 add) = 36. */
Test(reference, sddmm_stored_only)
{
    fx f;
    loom_data_spec s[] = {{"M", "tests/data/ref_a34.mtx"}};
    loom_param_spec p[] = {{"D", 2}};
    fx_load_file(&f, "workloads/sddmm.loom", s, 1, p, 1);
    set_dense(&f, "Q", (const float[]){1, 0, 0, 1, 1, 1}, 6);
    set_dense(&f, "K", (const float[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    fx_run(&f);
    expect_vals(&f, "S", (const double[]){1, 10, 24, 12, 35, 90}, 6);
    cr_expect_eq(f.ref->stmt_points[0], 12);
    cr_expect(fabs(f.ref->flops - 36.0) <= EPS, "flops %g", f.ref->flops);
    cr_expect_eq(f.ref->max_reduction_len, 2);
    /* the checker accepts the exact values at the output's positions */
    copy_outputs(&f);
    loom_check c;
    loom_reference_check(f.ds, f.ref, &c);
    cr_expect(c.correct);
    fx_free(&f);
}

/* max= over rows of ref_max3: row 0 = {-2, 7} -> 7; row 1 empty -> -inf
 * (the identity: no point reaches it); row 2 = {-3} -> -3 (a single entry,
 * not max(-3, 0)). */
Test(reference, max_row_reduction)
{
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_max3.mtx"}};
    fx_load(&f,
            "tensor A(N, K) csr\n"
            "tensor m(N) dense output\n"
            "m(i) max= A(i, j)\n",
            s, 1, NULL, 0);
    fx_run(&f);
    expect_vals(&f, "m", (const double[]){7, -INFINITY, -3}, 3);
    cr_expect_eq(f.ref->stmt_points[0], 3);
    cr_expect_eq(f.ref->max_reduction_len, 2);
    /* -inf in the kernel's output matches -inf in the reference */
    copy_outputs(&f);
    loom_check c;
    loom_reference_check(f.ds, f.ref, &c);
    cr_expect(c.correct, "rel %g at %lld", c.max_rel_err, (long long)c.worst_index);
    cr_expect_eq(c.max_rel_err, 0.0);
    /* ... but +inf or a finite number there does not */
    int m = tid(&f, "m");
    f.ds->t[m].vals[1] = INFINITY;
    loom_reference_check(f.ds, f.ref, &c);
    cr_expect_not(c.correct);
    cr_expect_eq(c.worst_tensor, m);
    cr_expect_eq(c.worst_index, 1);
    f.ds->t[m].vals[1] = -1e30f;
    loom_reference_check(f.ds, f.ref, &c);
    cr_expect_not(c.correct);
    cr_expect_eq(c.worst_index, 1);
    fx_free(&f);
}

/* The algebra (docs "Sparse semantics"): a product intersects, a sum unites.
 * A = ref_a34 = [1 0 2 0; 0 0 0 3; 4 5 0 6]
 * B = ref_b34 = [10 20 0 0; 0 0 0 30; 0 0 40 50]
 * common entries: (0,0), (1,3), (2,3); union: 3 + 1 + 4 = 8 entries.
 *   y = A .* B summed by row = (1*10, 3*30, 6*50) = (10, 90, 300)
 *   z = A + B summed by row over the union = (1+2+10+20, 3+30, 4+5+6+40+50)
 *     = (33, 33, 105), the longest reduction 4 (row 2)
 *   w = A .* B + A: domain (A and B) or A = A: (10+1+2, 90+3, 300+4+5+6)
 *     = (13, 93, 315), 2 + 1 + 3 = 6 points  */
static void intersect(const char *fmt_b)
{
    char text[512];
    snprintf(text, sizeof text,
             "tensor A(N, K) csr\ntensor B(N, K) %s\n"
             "tensor y(N) dense output\ntensor z(N) dense output\ntensor w(N) dense output\n"
             "y(i) = A(i, j) * B(i, j)\n"
             "z(i) = A(i, j) + B(i, j)\n"
             "w(i) = A(i, j) * B(i, j) + A(i, j)\n", fmt_b);
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_a34.mtx"}, {"B", "tests/data/ref_b34.mtx"}};
    fx_load(&f, text, s, 2, NULL, 0);
    fx_run(&f);
    expect_vals(&f, "y", (const double[]){10, 90, 300}, 3);
    expect_vals(&f, "z", (const double[]){33, 33, 105}, 3);
    expect_vals(&f, "w", (const double[]){13, 93, 315}, 3);
    cr_expect_eq(f.ref->stmt_points[0], 3);
    cr_expect_eq(f.ref->stmt_points[1], 8);
    cr_expect_eq(f.ref->stmt_points[2], 6);
    cr_expect_eq(f.ref->max_reduction_len, 4);
    fx_free(&f);
}

Test(reference, algebra_csr_csr) { intersect("csr"); }
Test(reference, algebra_csr_csc) { intersect("csc"); }
Test(reference, algebra_csr_dcsr) { intersect("dcsr"); }

/* The mask rule: a function sees only the entries its sparse arguments store,
 * and max= reduces over the domain only.  With A, B as above:
 *   e(i) = sum_j exp(A(i,j) - B(i,j)) over the common entries only:
 *          (exp(1-10), exp(3-30), exp(6-50))
 *   m(i) max= A(i,j) - B(i,j) over the union: row 0 max(1-10, -20, 2) = 2,
 *          row 1: 3-30 = -27, row 2: max(4, 5, -40, 6-50) = 5  */
Test(reference, mask_rule)
{
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_a34.mtx"}, {"B", "tests/data/ref_b34.mtx"}};
    fx_load(&f, "tensor A(N, K) csr\ntensor B(N, K) csr\n"
                "tensor e(N) dense output\ntensor m(N) dense output\n"
                "e(i) = exp(A(i, j) - B(i, j))\n"
                "m(i) max= A(i, j) - B(i, j)\n", s, 2, NULL, 0);
    fx_run(&f);
    expect_vals(&f, "e", (const double[]){exp(-9.0), exp(-27.0), exp(-44.0)}, 3);
    expect_vals(&f, "m", (const double[]){2, -27, 5}, 3);
    fx_free(&f);
}

/* A second sparse access that binds a new variable is walked, not scanned:
 * A = ref_spmv3 = [1 0 2; 0 0 0; 0 3 0], B = ref_a34 (row sums 3, 3, 15):
 *   y(i) = sum_j sum_k A(i,j) B(j,k) = (1*3 + 2*15, 0, 3*3) = (33, 0, 9)
 * points: A(0,0) x 2 + A(0,2) x 3 + A(2,1) x 1 = 6; y(0) gets 5 of them. */
Test(reference, chained_sparse_accesses)
{
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_spmv3.mtx"}, {"B", "tests/data/ref_a34.mtx"}};
    fx_load(&f,
            "tensor A(N, K) csr\ntensor B(K, M) csr\ntensor y(N) dense output\n"
            "y(i) = A(i, j) * B(j, k)\n",
            s, 2, NULL, 0);
    fx_run(&f);
    expect_vals(&f, "y", (const double[]){33, 0, 9}, 3);
    cr_expect_eq(f.ref->stmt_points[0], 6);
    cr_expect_eq(f.ref->max_reduction_len, 5);
    fx_free(&f);
}

/* GCN with a temporary: X = ref_a34, W = [1 2; 3 4; 5 6; 7 8] (F = 2):
 *   T = X W = [11 14; 21 24; 61 76]       (as in spmm)
 *   H = A T with A = ref_spmv3 = [1 0 2; 0 0 0; 0 3 0]
 *     = [1*11 + 2*61, 1*14 + 2*76; 0 0; 3*21, 3*24] = [133 166; 0 0; 63 72]
 * flops = 2*6*2 + 2*3*2 = 36. */
Test(reference, gcn_temporary)
{
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_spmv3.mtx"}, {"X", "tests/data/ref_a34.mtx"}};
    loom_param_spec p[] = {{"F", 2}};
    fx_load_file(&f, "workloads/gcn.loom", s, 2, p, 1);
    set_dense(&f, "W", (const float[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    fx_run(&f);
    expect_vals(&f, "T", (const double[]){11, 14, 21, 24, 61, 76}, 6);
    expect_vals(&f, "H", (const double[]){133, 166, 0, 0, 63, 72}, 6);
    cr_expect_eq(f.ref->stmt_points[0], 12);
    cr_expect_eq(f.ref->stmt_points[1], 6);
    cr_expect(fabs(f.ref->flops - 36.0) <= EPS, "flops %g", f.ref->flops);
    cr_expect_eq(f.ref->max_reduction_len, 3);
    fx_free(&f);
}

/* GAT-style sparse attention on ref_graph3 (pattern: values 1), D = 1,
 * Q = (8, 8, 8) so S(i,j) = 8 * K(j) * 0.125 = K(j); K = (0, k1, k2) with
 * k1 = (float)ln 2, k2 = (float)ln 3; V = (3, 6, 9).
 *   row 0 sees {0, 1}: m = k1, P = (e^-k1, 1), l = e^-k1 + 1,
 *                      O = (3 e^-k1 + 6) / l        (= 5 for exact ln 2)
 *   row 1 sees {0, 2}: m = k2, P = (e^-k2, 1), l = e^-k2 + 1,
 *                      O = (3 e^-k2 + 9) / l        (= 7.5 for exact ln 3)
 *   row 2 sees {2}:    m = k2, P = (1), l = 1, O = 9 */
Test(reference, sparse_attention_graph3)
{
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_graph3.mtx"}};
    loom_param_spec p[] = {{"D", 1}};
    fx_load_file(&f, "workloads/sparse_attention.loom", s, 1, p, 1);
    float k1 = (float)log(2.0), k2 = (float)log(3.0);
    set_dense(&f, "Q", (const float[]){8, 8, 8}, 3);
    set_dense(&f, "K", (const float[]){0, k1, k2}, 3);
    set_dense(&f, "V", (const float[]){3, 6, 9}, 3);
    fx_run(&f);
    double e1 = exp(-(double)k1), e2 = exp(-(double)k2);
    expect_vals(&f, "S", (const double[]){0, k1, 0, k2, k2}, 5);
    expect_vals(&f, "m", (const double[]){k1, k2, k2}, 3);
    expect_vals(&f, "P", (const double[]){e1, 1, e2, 1, 1}, 5);
    expect_vals(&f, "l", (const double[]){e1 + 1, e2 + 1, 1}, 3);
    double o0 = (3 * e1 + 6) / (e1 + 1), o1 = (3 * e2 + 9) / (e2 + 1);
    expect_vals(&f, "O", (const double[]){o0, o1, 9}, 3);
    cr_expect(fabs(o0 - 5.0) < 1e-6 && fabs(o1 - 7.5) < 1e-6, "O = %g %g", o0, o1);
    /* every statement runs over the 5 stored entries (x D = 1) */
    for (int st = 0; st < 5; st++)
        cr_expect_eq(f.ref->stmt_points[st], 5, "statement %d: %lld points", st,
                     (long long)f.ref->stmt_points[st]);
    /* flops: S 5*(3 muls + 1 add) + m 5*1 + P 5*2 + l 5*1 + O 5*(2 + 1) = 55 */
    cr_expect(fabs(f.ref->flops - 55.0) <= EPS, "flops %g", f.ref->flops);
    fx_free(&f);
}

/* Causal attention, N = 3, D = 1, Q = K = V = (1, 2, 4):
 * S(i,j) = Q(i) K(j) / 8 for j <= i.
 *   row 0: O = V(0) = 1
 *   row 1: S = (2/8, 4/8), P = (e^-0.25, 1): O = (e^-0.25 + 2) / (e^-0.25 + 1)
 *   row 2: S = (4/8, 1, 2), P = (e^-1.5, e^-1, 1):
 *          O = (e^-1.5 + 2 e^-1 + 4) / (e^-1.5 + e^-1 + 1)  */
Test(reference, causal_attention_n3)
{
    fx f;
    loom_param_spec p[] = {{"N", 3}, {"D", 1}};
    fx_load_file(&f, "workloads/attention_causal.loom", NULL, 0, p, 2);
    const float qkv[] = {1, 2, 4};
    set_dense(&f, "Q", qkv, 3);
    set_dense(&f, "K", qkv, 3);
    set_dense(&f, "V", qkv, 3);
    fx_run(&f);
    double a = exp(-0.25), b = exp(-1.5), c = exp(-1.0);
    expect_vals(&f, "S", (const double[]){0.125, 0.25, 0.5, 0.5, 1, 2}, 6);
    expect_vals(&f, "m", (const double[]){0.125, 0.5, 2}, 3);
    expect_vals(&f, "O", (const double[]){1, (a + 2) / (a + 1), (b + 2 * c + 4) / (b + c + 1)},
                3);
    for (int st = 0; st < 5; st++)
        cr_expect_eq(f.ref->stmt_points[st], 6, "statement %d: %lld points", st,
                     (long long)f.ref->stmt_points[st]);
    cr_expect_eq(f.ref->max_reduction_len, 3);
    cr_expect_eq(tid(&f, "W") >= 0 && f.ref->vals[tid(&f, "W")] == NULL, 1,
                 "a pattern tensor has no values");
    fx_free(&f);
}

/* band(0): each query sees only itself, so P = 1, l = 1 and O = V exactly
 * (whatever the generated Q, K, V are). */
Test(reference, band0_attention_is_v)
{
    fx f;
    loom_param_spec p[] = {{"N", 5}, {"D", 3}};
    fx_load(&f,
            "param N = 256\nparam D = 64\n"
            "tensor Q(N, D) dense\ntensor K(N, D) dense\ntensor V(N, D) dense\n"
            "tensor W(N, N) band(0)\ntensor O(N, D) dense output\n"
            "S(i, j)  = W(i, j) * Q(i, d) * K(j, d) * 0.125\n"
            "m(i)   max= S(i, j)\n"
            "P(i, j)  = exp(S(i, j) - m(i))\n"
            "l(i)    += P(i, j)\n"
            "O(i, e) += P(i, j) * V(j, e) / l(i)\n",
            NULL, 0, p, 2);
    fx_run(&f);
    int v = tid(&f, "V");
    const double *o = rv(&f, "O", 15);
    for (int i = 0; i < 15; i++)
        cr_expect(fabs(o[i] - (double)f.ds->t[v].vals[i]) <= EPS, "O[%d] = %g, V = %g", i, o[i],
                  (double)f.ds->t[v].vals[i]);
    expect_vals(&f, "l", (const double[]){1, 1, 1, 1, 1}, 5);
    cr_expect_eq(f.ref->stmt_points[0], 15); /* 5 diagonal entries x D */
    cr_expect_eq(f.ref->stmt_points[4], 15); /* 5 entries x D (e) */
    fx_free(&f);
}

/* Dense attention without a mask: N = 2, D = 1, Q = (0, 8), K = (1, 2),
 * V = (10, 20).  S = Q K^T / 8 = [0 0; 1 2].
 *   row 0: P = (1, 1), O = 15;  row 1: P = (e^-1, 1), O = (10 e^-1 + 20)/(e^-1 + 1) */
Test(reference, dense_attention_n2)
{
    fx f;
    loom_param_spec p[] = {{"N", 2}, {"D", 1}};
    fx_load_file(&f, "workloads/attention.loom", NULL, 0, p, 2);
    set_dense(&f, "Q", (const float[]){0, 8}, 2);
    set_dense(&f, "K", (const float[]){1, 2}, 2);
    set_dense(&f, "V", (const float[]){10, 20}, 2);
    fx_run(&f);
    double e = exp(-1.0);
    expect_vals(&f, "S", (const double[]){0, 0, 1, 2}, 4);
    expect_vals(&f, "O", (const double[]){15, (10 * e + 20) / (e + 1)}, 2);
    cr_expect_eq(f.ref->stmt_points[0], 4);
    fx_free(&f);
}

/* Functions and operators: relu, sqrt, max, min, neg, sub, div on
 * x = (-4, 9):  y = relu(x) + sqrt(max(x, 0)) - min(x, 1) / 2 + -x
 *   x=-4: 0 + 0 - (-4)/2 + 4 = 6
 *   x= 9: 9 + 3 - 1/2 - 9   = 2.5 */
Test(reference, functions)
{
    fx f;
    fx_load(&f,
            "param N = 2\ntensor x(N) dense\ntensor y(N) dense output\n"
            "y(i) = relu(x(i)) + sqrt(max(x(i), 0)) - min(x(i), 1) / 2 + -x(i)\n",
            NULL, 0, NULL, 0);
    set_dense(&f, "x", (const float[]){-4, 9}, 2);
    fx_run(&f);
    expect_vals(&f, "y", (const double[]){6, 2.5}, 2);
    cr_expect_eq(f.ref->max_reduction_len, 0);
    fx_free(&f);
}

/* A corrupt data set is reported, not read out of bounds: a column index
 * past the end of A, then a decreasing pos array. */
Test(reference, corrupt_dataset_is_an_error)
{
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_spmv3.mtx"}};
    fx_load(&f, SPMV, s, 1, NULL, 0);
    int A = tid(&f, "A");
    loom_error err;
    loom_error_clear(&err);
    int32_t saved = f.ds->t[A].crd[1][0];
    f.ds->t[A].crd[1][0] = 99;
    cr_expect_eq(loom_reference_run(f.ds, &f.ref, &err), LOOM_ERR_INVALID);
    cr_expect_null(f.ref);
    cr_expect(strstr(err.msg, "crd") != NULL, "message: %s", err.msg);
    f.ds->t[A].crd[1][0] = saved;
    f.ds->t[A].pos[1][2] = 0; /* pos = (0, 2, 0, 3) */
    cr_expect_eq(loom_reference_run(f.ds, &f.ref, &err), LOOM_ERR_INVALID);
    cr_expect_null(f.ref);
    fx_free(&f);
}

/* ---- the checker ------------------------------------------------------- */

Test(reference, check_exact_perturbed_nan)
{
    fx f;
    char text[512];
    snprintf(text, sizeof text, SPMM_FMT, "csr");
    loom_data_spec s[] = {{"A", "tests/data/ref_a34.mtx"}};
    loom_param_spec p[] = {{"F", 2}};
    fx_load(&f, text, s, 1, p, 1);
    set_dense(&f, "B", (const float[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    fx_run(&f);
    int C = tid(&f, "C");
    loom_check c;

    /* an exact copy passes; tol = 1e-5 + 4 * 2^-24 * 3 */
    copy_outputs(&f);
    loom_reference_check(f.ds, f.ref, &c);
    cr_expect(c.correct);
    cr_expect_eq(c.max_rel_err, 0.0);
    cr_expect(fabs(c.tol - (1e-5 + 12.0 / 16777216.0)) <= 1e-18, "tol %g", c.tol);

    /* C[3] = 24 -> 24.5: rel = 0.5 / 24 */
    f.ds->t[C].vals[3] = 24.5f;
    loom_reference_check(f.ds, f.ref, &c);
    cr_expect_not(c.correct);
    cr_expect_eq(c.worst_tensor, C);
    cr_expect_eq(c.worst_index, 3);
    cr_expect(fabs(c.max_rel_err - 0.5 / 24) <= EPS, "rel %g", c.max_rel_err);
    cr_expect_eq(c.worst_got, 24.5);
    cr_expect_eq(c.worst_want, 24.0);

    /* within tolerance: 61 -> 61 * (1 + 2^-23) (one ulp) passes */
    copy_outputs(&f);
    f.ds->t[C].vals[4] = nextafterf(61.0f, 100.0f);
    loom_reference_check(f.ds, f.ref, &c);
    cr_expect(c.correct, "rel %g tol %g", c.max_rel_err, c.tol);
    cr_expect_eq(c.worst_index, 4);

    /* NaN never matches */
    copy_outputs(&f);
    f.ds->t[C].vals[0] = NAN;
    loom_reference_check(f.ds, f.ref, &c);
    cr_expect_not(c.correct);
    cr_expect_eq(c.worst_index, 0);
    cr_expect(isinf(c.max_rel_err));
    fx_free(&f);
}

/* The floor for near-zero elements: max(1e-3 * max|ref|, 0.1 * rms(ref)).
 * y = (7, 0, 6): rms = sqrt(85 / 3), floor = 0.1 * rms = 0.5323 (> 7e-3). */
Test(reference, check_floor_near_zero)
{
    fx f;
    loom_data_spec s[] = {{"A", "tests/data/ref_spmv3.mtx"}};
    fx_load(&f, SPMV, s, 1, NULL, 0);
    set_dense(&f, "x", (const float[]){1, 2, 3}, 3);
    fx_run(&f);
    int y = tid(&f, "y");
    copy_outputs(&f);
    loom_check c;
    double floor_ = 0.1 * sqrt(85.0 / 3.0);
    f.ds->t[y].vals[1] = 7e-9f; /* rel = 7e-9 / 0.53 = 1.3e-8 < tol */
    loom_reference_check(f.ds, f.ref, &c);
    cr_expect(c.correct, "rel %g", c.max_rel_err);
    cr_expect(fabs(c.max_rel_err - (double)7e-9f / floor_) <= 1e-15, "rel %g", c.max_rel_err);
    f.ds->t[y].vals[1] = 7e-4f; /* rel = 1.3e-3 > tol */
    loom_reference_check(f.ds, f.ref, &c);
    cr_expect_not(c.correct);
    cr_expect_eq(c.worst_index, 1);
    cr_expect(fabs(c.max_rel_err - (double)7e-4f / floor_) <= 1e-12, "rel %g", c.max_rel_err);
    fx_free(&f);
}

/* ---- real data --------------------------------------------------------- */

/* SpMM on Cora, F = 64: flops = 2 * nnz * F exactly; the longest reduction
 * is the largest row degree (counted here from the file, not the data set). */
Test(reference, cora_spmm_flops, .timeout = 120)
{
    loom_coo coo;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_mtx_read("data/cora_adj.mtx", &coo, &err), LOOM_OK, "%s", err.msg);
    int64_t deg_max = 0, run = 0;
    for (int64_t k = 0; k < coo.nnz; k++) {
        run = (k > 0 && coo.row[k] == coo.row[k - 1]) ? run + 1 : 1;
        if (run > deg_max)
            deg_max = run;
    }
    int64_t nnz = coo.nnz;
    loom_coo_free(&coo);
    cr_assert_eq(nnz, 10556);

    fx f;
    loom_data_spec s[] = {{"A", "data/cora_adj.mtx"}};
    loom_param_spec p[] = {{"F", 64}};
    fx_load_file(&f, "workloads/spmm.loom", s, 1, p, 1);
    double t0 = loom_now_seconds();
    fx_run(&f);
    double t1 = loom_now_seconds();
    cr_log_info("reference Cora SpMM F=64: %.3f s", t1 - t0);
    cr_expect(fabs(f.ref->flops - 2.0 * 10556 * 64) <= EPS, "flops %g", f.ref->flops);
    cr_expect_eq(f.ref->stmt_points[0], 10556 * 64);
    cr_expect_eq(f.ref->max_reduction_len, deg_max);
    /* spot check one output: C(0, f) = sum of B(k, f) over row 0's neighbours
     * (A is a pattern: values 1) */
    int A = tid(&f, "A"), B = tid(&f, "B"), C = tid(&f, "C");
    for (int fi = 0; fi < 64; fi += 21) {
        double want = 0;
        for (int32_t q = f.ds->t[A].pos[1][0]; q < f.ds->t[A].pos[1][1]; q++)
            want += f.ds->t[B].vals[f.ds->t[A].crd[1][q] * 64 + fi];
        cr_expect(fabs(f.ref->vals[C][fi] - want) <= 1e-9, "C(0,%d) = %g, expected %g", fi,
                  f.ref->vals[C][fi], want);
    }
    fx_free(&f);
}

/* Sparse attention on Cora, D = 64: runs, every statement iterates nnz
 * (x D for S and O) points, and each row of P sums to l with max entry 1. */
Test(reference, cora_sparse_attention, .timeout = 120)
{
    fx f;
    loom_data_spec s[] = {{"A", "data/cora_adj.mtx"}};
    fx_load_file(&f, "workloads/sparse_attention.loom", s, 1, NULL, 0);
    double t0 = loom_now_seconds();
    fx_run(&f);
    double t1 = loom_now_seconds();
    cr_log_info("reference Cora sparse attention D=64: %.3f s", t1 - t0);
    cr_expect_eq(f.ref->stmt_points[0], 10556 * 64);
    cr_expect_eq(f.ref->stmt_points[1], 10556);
    cr_expect_eq(f.ref->stmt_points[2], 10556);
    cr_expect_eq(f.ref->stmt_points[3], 10556);
    cr_expect_eq(f.ref->stmt_points[4], 10556 * 64);
    int A = tid(&f, "A");
    const double *P = rv(&f, "P", 10556);
    const double *l = rv(&f, "l", 2708);
    for (int i = 0; i < 2708; i++) {
        double sum = 0, mx = 0;
        for (int32_t q = f.ds->t[A].pos[1][i]; q < f.ds->t[A].pos[1][i + 1]; q++) {
            sum += P[q];
            mx = P[q] > mx ? P[q] : mx;
        }
        if (f.ds->t[A].pos[1][i + 1] > f.ds->t[A].pos[1][i]) {
            cr_expect(fabs(sum - l[i]) <= 1e-12 * l[i], "row %d", i);
            cr_expect_eq(mx, 1.0, "row %d: max P %g", i, mx);
        } else {
            cr_expect_eq(l[i], 0.0, "empty row %d", i);
        }
    }
    fx_free(&f);
}

/* GCN on Cora (X: 2708 x 1433 csr bag of words), F = 16:
 * flops = 2 * F * (nnz(X) + nnz(A)). */
Test(reference, cora_gcn_flops, .timeout = 120)
{
    fx f;
    loom_data_spec s[] = {{"A", "data/cora_adj.mtx"}, {"X", "data/cora_features.mtx"}};
    fx_load_file(&f, "workloads/gcn.loom", s, 2, NULL, 0);
    fx_run(&f);
    cr_expect(fabs(f.ref->flops - 2.0 * 16 * (49216 + 10556)) <= EPS, "flops %g", f.ref->flops);
    fx_free(&f);
}

/* The thread split (reference.c's file comment) must not change a bit of the
 * result: every workload below -- unions (spadd, spmv_sum), a reduction
 * variable outermost after a sparse walk (sddmm, gcn2_norm), max= and a
 * range pattern (causal attention), SpGEMM's sparse lhs, a csc operand
 * whose outermost loop is a reduction, a scalar total -- evaluated with 1
 * and with 3 threads gives the same values, points, FLOPs and reduction
 * length. */
static loom_reference *ref_with_threads(fx *f, const char *threads)
{
    setenv("LOOM_REFERENCE_THREADS", threads, 1);
    loom_reference *r = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_reference_run(f->ds, &r, &err), LOOM_OK, "%s", err.msg);
    unsetenv("LOOM_REFERENCE_THREADS");
    return r;
}

Test(reference, thread_count_does_not_change_the_result, .timeout = 120)
{
    static const struct {
        const char *file;
        const char *text; /* a program given as text (file names it) */
        loom_data_spec data[2];
        int ndata;
        loom_param_spec params[2];
        int nparams;
    } cases[] = {
        {.file = "workloads/spadd.loom", .data = {{"A", "data/cora500_adj.mtx"}, {"B", "data/cora500_adj.mtx"}},
         .ndata = 2},
        {.file = "workloads/spmv_sum.loom", .data = {{"A", "data/cora500_adj.mtx"}, {"B", "data/cora500_adj.mtx"}},
         .ndata = 2},
        {.file = "workloads/sddmm.loom", .data = {{"M", "data/cora500_adj.mtx"}}, .ndata = 1,
         .params = {{"D", 16}}, .nparams = 1},
        {.file = "workloads/gcn2_norm.loom",
         .data = {{"A", "data/cora500_adj.mtx"}, {"X", "data/cora500_features.mtx"}}, .ndata = 2,
         .params = {{"F", 16}, {"C", 7}}, .nparams = 2},
        {.file = "workloads/attention_causal.loom", .params = {{"N", 96}}, .nparams = 1},
        {.file = "workloads/spgemm.loom", .data = {{"A", "data/cora500_adj.mtx"}, {"B", "data/cora500_adj.mtx"}},
         .ndata = 2},
        /* column-major A: the walk's outermost loop is the reduction variable k
         * (thread 0 alone); the scalar total has no lhs variable at all */
        {.file = "csc SpMM and a total",
         .text = "param F = 8\ntensor A(N, K) csc\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
                 "tensor t() dense output\nC(i, f) = A(i, k) * exp(B(k, f))\nt() = A(i, k) * exp(B(k, f))\n",
         .data = {{"A", "data/cora500_adj.mtx"}}, .ndata = 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fx f;
        if (cases[k].text)
            fx_load(&f, cases[k].text, cases[k].data, cases[k].ndata, cases[k].params, cases[k].nparams);
        else
            fx_load_file(&f, cases[k].file, cases[k].data, cases[k].ndata, cases[k].params, cases[k].nparams);
        loom_reference *one = ref_with_threads(&f, "1"), *three = ref_with_threads(&f, "3");
        cr_expect_eq(one->flops, three->flops, "%s: flops", cases[k].file);
        cr_expect_eq(one->max_reduction_len, three->max_reduction_len, "%s", cases[k].file);
        int64_t points = 0;
        for (int s = 0; s < f.prog->nstmts; s++) {
            cr_expect_eq(one->stmt_points[s], three->stmt_points[s], "%s: statement %d", cases[k].file, s);
            points += one->stmt_points[s];
        }
        cr_expect_gt(points, 0, "%s: no points evaluated", cases[k].file);
        for (int t = 0; t < f.prog->ntensors; t++) {
            cr_assert_eq(one->nvals[t], three->nvals[t], "%s: tensor %d", cases[k].file, t);
            if (one->vals[t] && one->nvals[t] > 0)
                cr_expect(memcmp(one->vals[t], three->vals[t], (size_t)one->nvals[t] * sizeof(double)) == 0,
                          "%s: tensor %s differs between 1 and 3 threads", cases[k].file,
                          f.prog->tensors[t].name);
        }
        loom_reference_free(one);
        loom_reference_free(three);
        fx_free(&f);
    }
}

/* loom_reference_run_cached: a miss computes and writes the file, a hit
 * reads back the same outputs, counts and FLOPs bit for bit; a corrupted or
 * truncated file is a miss (recomputed, rewritten), and other input data
 * (another seed) is another key. */
static loom_reference *ref_cached(fx *f, const char *dir, int want_hit)
{
    loom_reference *r = NULL;
    loom_error err;
    loom_error_clear(&err);
    int hit = -1;
    cr_assert_eq(loom_reference_run_cached(f->ds, dir, &hit, &r, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(hit, want_hit, "cache %s, expected a %s", hit ? "hit" : "miss", want_hit ? "hit" : "miss");
    return r;
}

static void ref_expect_same_outputs(const fx *f, const loom_reference *a, const loom_reference *b)
{
    cr_expect_eq(a->flops, b->flops);
    cr_expect_eq(a->max_reduction_len, b->max_reduction_len);
    for (int s = 0; s < f->prog->nstmts; s++)
        cr_expect_eq(a->stmt_points[s], b->stmt_points[s]);
    for (int t = 0; t < f->prog->ntensors; t++) {
        cr_expect_eq(a->nvals[t], b->nvals[t]);
        if (f->prog->tensors[t].role == LOOM_TENSOR_TEMP)
            continue;
        cr_assert((a->vals[t] == NULL) == (b->vals[t] == NULL), "tensor %s", f->prog->tensors[t].name);
        if (a->vals[t])
            cr_expect(memcmp(a->vals[t], b->vals[t], (size_t)a->nvals[t] * sizeof(double)) == 0,
                      "tensor %s differs", f->prog->tensors[t].name);
    }
}

/* The single file in dir (there is one key per test step). */
static void ref_cache_file(const char *dir, char *path, size_t n)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/*.bin", dir);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    cr_assert_not_null(fgets(path, (int)n, p), "no cache file in %s", dir);
    path[strcspn(path, "\n")] = 0;
    pclose(p);
}

Test(reference, disk_cache_hits_misses_and_corruption, .timeout = 120)
{
    char dir[] = "/tmp/loom-refcache-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    fx f;
    loom_data_spec s[] = {{"M", "data/cora500_adj.mtx"}};
    loom_param_spec p[] = {{"D", 16}};
    fx_load_file(&f, "workloads/sddmm.loom", s, 1, p, 1);
    fx_run(&f); /* the interpreter, no cache */
    loom_reference *miss = ref_cached(&f, dir, 0), *hit = ref_cached(&f, dir, 1);
    ref_expect_same_outputs(&f, f.ref, miss);
    ref_expect_same_outputs(&f, f.ref, hit);
    /* outputs written as a kernel would (fp32 of the computed reference) pass the cached one's check */
    int S = tid(&f, "S");
    for (int64_t i = 0; i < f.ds->t[S].nnz; i++)
        f.ds->t[S].vals[i] = (float)f.ref->vals[S][i];
    loom_check ck;
    loom_reference_check(f.ds, hit, &ck);
    cr_expect(ck.correct, "a cached reference checks like the computed one (worst %g)", ck.max_rel_err);

    /* flip one byte in the middle: the checksum refuses it, the file is rewritten */
    char path[512];
    ref_cache_file(dir, path, sizeof path);
    FILE *fp = fopen(path, "r+b");
    cr_assert_not_null(fp);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, size / 2, SEEK_SET);
    int c = fgetc(fp);
    fseek(fp, size / 2, SEEK_SET);
    fputc(c ^ 0x10, fp);
    fclose(fp);
    loom_reference *fixed = ref_cached(&f, dir, 0), *again = ref_cached(&f, dir, 1);
    ref_expect_same_outputs(&f, f.ref, fixed);
    ref_expect_same_outputs(&f, f.ref, again);
    /* a truncated file is a miss too */
    cr_assert_eq(truncate(path, size - 9), 0);
    loom_reference *cut = ref_cached(&f, dir, 0);
    ref_expect_same_outputs(&f, f.ref, cut);

    /* other values of the same shape: another key, a miss */
    fx g;
    loom_program *prog2 = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_program_parse_file("workloads/sddmm.loom", &prog2, &err), LOOM_OK, "%s", err.msg);
    memset(&g, 0, sizeof g);
    g.prog = prog2;
    cr_assert_eq(loom_dataset_load(prog2, s, 1, p, 1, 43, &g.ds, &err), LOOM_OK, "%s", err.msg);
    loom_reference *other = ref_cached(&g, dir, 0);
    cr_expect(memcmp(other->vals[tid(&g, "S")], miss->vals[tid(&f, "S")],
                     (size_t)miss->nvals[tid(&f, "S")] * sizeof(double)) != 0,
              "seed 43's outputs equal seed 42's: the key ignored the values");
    loom_reference *mine = ref_cached(&f, dir, 1);
    ref_expect_same_outputs(&f, f.ref, mine);

    loom_reference *all[] = {miss, hit, fixed, again, cut, other, mine};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        loom_reference_free(all[k]);
    fx_free(&g);
    fx_free(&f);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}
