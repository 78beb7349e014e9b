/* Tests of loom_dataset_load (runtime/data/dataset.c) on the shipped workloads
 * and the repository's copy of the Cora graph. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../runtime/data/dataset.h"

static loom_program *parse_file(const char *path)
{
    loom_program *p = NULL;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_program_parse_file(path, &p, &err);
    cr_assert_eq(st, LOOM_OK, "%s: %s", path, err.msg);
    return p;
}

static loom_program *parse_text(const char *text)
{
    loom_program *p = NULL;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_program_parse_string(text, "test.loom", &p, &err);
    cr_assert_eq(st, LOOM_OK, "test.loom:%d: %s", err.line, err.msg);
    return p;
}

static loom_data_spec spec(const char *tensor, const char *path)
{
    loom_data_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.tensor, sizeof s.tensor, "%s", tensor);
    snprintf(s.path, sizeof s.path, "%s", path);
    return s;
}

static loom_param_spec param(const char *name, int64_t value)
{
    loom_param_spec p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "%s", name);
    p.value = value;
    return p;
}

static loom_dataset *load_ok(loom_program *prog, const loom_data_spec *specs, int nspecs,
                             const loom_param_spec *params, int nparams, uint64_t seed)
{
    loom_dataset *ds = NULL;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_dataset_load(prog, specs, nspecs, params, nparams, seed, &ds, &err);
    cr_assert_eq(st, LOOM_OK, "load: %s: %s (%s:%d)", loom_status_name(st), err.msg, err.file,
                 err.line);
    cr_assert_not_null(ds);
    cr_assert_eq(ds->ntensors, prog->ntensors);
    cr_assert_eq(ds->prog, prog);
    return ds;
}

static void load_fails(loom_program *prog, const loom_data_spec *specs, int nspecs,
                       const loom_param_spec *params, int nparams, loom_status status,
                       const char *substr)
{
    loom_dataset *ds = (loom_dataset *)0x1;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_dataset_load(prog, specs, nspecs, params, nparams, 1, &ds, &err);
    cr_assert_eq(st, status, "status %s, expected %s: %s", loom_status_name(st),
                 loom_status_name(status), err.msg);
    cr_assert_null(ds);
    cr_assert(strstr(err.msg, substr) != NULL, "message '%s' lacks '%s'", err.msg, substr);
}

static int tensor(const loom_program *p, const char *name)
{
    int t = loom_program_find_tensor(p, name);
    cr_assert(t >= 0, "no tensor %s", name);
    return t;
}

static int64_t size_of(const loom_program *p, const char *name)
{
    int s = loom_program_find_size(p, name);
    cr_assert(s >= 0, "no size %s", name);
    cr_assert(p->sizes[s].bound, "size %s unbound", name);
    return p->sizes[s].value;
}

/* ---- SpMM on Cora ------------------------------------------------------- */

Test(dataset, spmm_cora)
{
    loom_program *prog = parse_file("workloads/spmm.loom");
    loom_data_spec s = spec("A", "data/cora_adj.mtx");
    loom_dataset *ds = load_ok(prog, &s, 1, NULL, 0, 7);
    cr_assert_eq(size_of(prog, "N"), 2708);
    cr_assert_eq(size_of(prog, "K"), 2708);
    cr_assert_eq(size_of(prog, "F"), 64);
    cr_assert_eq(ds->seed, 7);

    const loom_tensor_abi *A = &ds->t[tensor(prog, "A")];
    cr_assert_eq(A->order, 2);
    cr_assert_eq(A->dims[0], 2708);
    cr_assert_eq(A->dims[1], 2708);
    cr_assert_eq(A->nnz, 10556);
    cr_assert_null(A->pos[0]);
    cr_assert_eq(A->pos[1][0], 0);
    cr_assert_eq(A->pos[1][2708], 10556);
    for (int i = 0; i < 2708; i++)
        cr_assert(A->pos[1][i] <= A->pos[1][i + 1]);
    cr_assert_eq(A->vals[0], 1.0f);

    const loom_tensor_abi *B = &ds->t[tensor(prog, "B")];
    cr_assert_eq(B->dims[0], 2708);
    cr_assert_eq(B->dims[1], 64);
    cr_assert_eq(B->nnz, 2708 * 64);
    double sum = 0;
    float mn = 2, mx = -2;
    for (int64_t k = 0; k < B->nnz; k++) {
        cr_assert(B->vals[k] >= -1.0f && B->vals[k] < 1.0f, "B[%lld] = %g", (long long)k,
                  B->vals[k]);
        sum += B->vals[k];
        mn = B->vals[k] < mn ? B->vals[k] : mn;
        mx = B->vals[k] > mx ? B->vals[k] : mx;
    }
    /* uniform on [-1, 1): mean near 0, range close to the bounds */
    cr_assert(sum / (double)B->nnz < 0.02 && sum / (double)B->nnz > -0.02, "mean %g",
              sum / (double)B->nnz);
    cr_assert(mn < -0.99f && mx > 0.99f, "range [%g, %g]", mn, mx);

    const loom_tensor_abi *C = &ds->t[tensor(prog, "C")];
    cr_assert_eq(C->dims[0], 2708);
    cr_assert_eq(C->dims[1], 64);
    cr_assert_eq(C->nnz, 2708 * 64);
    for (int64_t k = 0; k < C->nnz; k++)
        cr_assert_eq(C->vals[k], 0.0f);
    cr_assert_neq(ds->fingerprint, 0);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

static loom_dataset *spmm_with_seed(loom_program **prog, uint64_t seed, const char *file)
{
    *prog = parse_file("workloads/spmm.loom");
    loom_data_spec s = spec("A", file);
    return load_ok(*prog, &s, 1, NULL, 0, seed);
}

Test(dataset, generator_is_deterministic)
{
    loom_program *p1, *p2, *p3;
    loom_dataset *d1 = spmm_with_seed(&p1, 42, "data/cora_adj.mtx");
    loom_dataset *d2 = spmm_with_seed(&p2, 42, "data/cora_adj.mtx");
    loom_dataset *d3 = spmm_with_seed(&p3, 43, "data/cora_adj.mtx");
    int b = tensor(p1, "B");
    size_t bytes = (size_t)d1->t[b].nnz * sizeof(float);
    cr_assert_eq(memcmp(d1->t[b].vals, d2->t[b].vals, bytes), 0, "same seed, different B");
    cr_assert_neq(memcmp(d1->t[b].vals, d3->t[b].vals, bytes), 0, "different seed, same B");
    cr_assert_eq(d1->fingerprint, d2->fingerprint);
    cr_assert_neq(d1->fingerprint, d3->fingerprint);
    loom_dataset_free(d1);
    loom_dataset_free(d2);
    loom_dataset_free(d3);
    loom_program_free(p1);
    loom_program_free(p2);
    loom_program_free(p3);
}

Test(dataset, fingerprint_depends_on_data)
{
    loom_program *p1, *p2;
    loom_dataset *d1 = spmm_with_seed(&p1, 5, "data/cora_adj.mtx");
    loom_dataset *d2 = spmm_with_seed(&p2, 5, "tests/data/small_general.mtx");
    cr_assert_neq(d1->fingerprint, d2->fingerprint);
    cr_assert_eq(d2->t[tensor(p2, "B")].dims[0], 5);
    loom_dataset_free(d1);
    loom_dataset_free(d2);
    loom_program_free(p1);
    loom_program_free(p2);
}

Test(dataset, param_overrides_default)
{
    loom_program *prog = parse_file("workloads/spmm.loom");
    loom_data_spec s = spec("A", "data/cora_adj.mtx");
    loom_param_spec f = param("F", 16);
    loom_dataset *ds = load_ok(prog, &s, 1, &f, 1, 1);
    cr_assert_eq(size_of(prog, "F"), 16);
    cr_assert_eq(ds->t[tensor(prog, "B")].dims[1], 16);
    cr_assert_eq(ds->t[tensor(prog, "C")].nnz, 2708 * 16);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* Every array a kernel reads starts on LOOM_DATA_ALIGN bytes (dataset.h):
 * generated dense inputs, dense and csr inputs read from files, the
 * shared outputs, and loom_tensor_from_coo's arrays. */
#define ALIGNED(p) ((uintptr_t)(const void *)(p) % LOOM_DATA_ALIGN == 0)
Test(dataset, arrays_start_on_a_cache_line)
{
    loom_program *prog = parse_file("workloads/gcn2.loom");
    loom_data_spec s[2] = {spec("A", "data/cora500_adj.mtx"), spec("X", "data/cora500_features.mtx")};
    loom_dataset *ds = load_ok(prog, s, 2, NULL, 0, 1);
    int nchecked = 0;
    for (int t = 0; t < prog->ntensors; t++) {
        const loom_tensor_abi *a = &ds->t[t];
        if (a->vals) {
            cr_assert(ALIGNED(a->vals), "tensor %s: vals at %p", prog->tensors[t].name, (void *)a->vals);
            nchecked++;
        }
        for (int l = 0; l < LOOM_ABI_MAX_ORDER; l++) {
            if (a->pos[l])
                cr_assert(ALIGNED(a->pos[l]), "tensor %s: pos[%d] at %p", prog->tensors[t].name, l, (void *)a->pos[l]);
            if (a->crd[l])
                cr_assert(ALIGNED(a->crd[l]), "tensor %s: crd[%d] at %p", prog->tensors[t].name, l, (void *)a->crd[l]);
        }
    }
    cr_assert_geq(nchecked, 4, "A, X, the weights and the output at least");
    loom_dataset_free(ds);
    loom_program_free(prog);
    /* generated dense inputs large enough for glibc to mmap them (1 MiB each) */
    prog = parse_file("workloads/attention.loom");
    loom_param_spec n = {.name = "N", .value = 4096};
    ds = load_ok(prog, NULL, 0, &n, 1, 1);
    for (int t = 0; t < prog->ntensors; t++)
        if (ds->t[t].vals)
            cr_assert(ALIGNED(ds->t[t].vals), "tensor %s: vals at %p", prog->tensors[t].name, (void *)ds->t[t].vals);
    loom_dataset_free(ds);
    loom_program_free(prog);
    /* loom_tensor_from_coo, dense and csr, odd sizes */
    int32_t row[3] = {0, 1, 2}, col[3] = {1, 0, 2};
    float val[3] = {1, 2, 3};
    loom_coo coo = {.nrows = 3, .ncols = 3, .nnz = 3, .row = row, .col = col, .val = val};
    int64_t dims[2] = {3, 3};
    loom_format fmt[2] = {{.kind = LOOM_FORMAT_DENSE}, {.kind = LOOM_FORMAT_CSR}};
    for (int k = 0; k < 2; k++) {
        loom_tensor_abi t;
        memset(&t, 0, sizeof t);
        loom_error err;
        loom_error_clear(&err);
        cr_assert_eq(loom_tensor_from_coo(&coo, &fmt[k], dims, &t, &err), LOOM_OK, "%s", err.msg);
        cr_assert(ALIGNED(t.vals));
        cr_assert(k == 0 || (ALIGNED(t.pos[1]) && ALIGNED(t.crd[1])));
        cr_assert_eq(t.vals[k == 0 ? 1 : 0], 1.0f, "the first entry, (0, 1)");
        cr_assert(k != 0 || (t.vals[0] == 0.0f && t.vals[8] == 3.0f), "dense: zeros where no entry, (2, 2) = 3");
        loom_tensor_abi_free_arrays(&t);
    }
}

Test(dataset, outputs_shared_with_children)
{
    loom_program *prog = parse_file("workloads/spmm.loom");
    loom_data_spec s = spec("A", "data/cora_adj.mtx");
    loom_dataset *ds = load_ok(prog, &s, 1, NULL, 0, 1);
    loom_tensor_abi *C = &ds->t[tensor(prog, "C")];
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        C->vals[0] = 42.0f;
        C->vals[C->nnz - 1] = -7.0f;
        _exit(0);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cr_assert_eq(C->vals[0], 42.0f);
    cr_assert_eq(C->vals[C->nnz - 1], -7.0f);
    loom_dataset_fill_outputs(ds, 3.5f);
    for (int64_t k = 0; k < C->nnz; k++)
        cr_assert_eq(C->vals[k], 3.5f);
    /* inputs are untouched by fill_outputs */
    cr_assert_eq(ds->t[tensor(prog, "A")].vals[0], 1.0f);
    loom_dataset_fill_outputs(ds, 0.0f);
    cr_assert_eq(C->vals[0], 0.0f);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* ---- SDDMM: sparse output sharing the mask's pattern -------------------- */

Test(dataset, sddmm_output_shares_pattern)
{
    loom_program *prog = parse_file("workloads/sddmm.loom");
    loom_data_spec s = spec("M", "data/cora_adj.mtx");
    loom_dataset *ds = load_ok(prog, &s, 1, NULL, 0, 3);
    cr_assert_eq(size_of(prog, "L"), 2708);
    const loom_tensor_abi *M = &ds->t[tensor(prog, "M")];
    const loom_tensor_abi *S = &ds->t[tensor(prog, "S")];
    cr_assert_eq(S->order, 2);
    cr_assert_eq(S->dims[0], 2708);
    cr_assert_eq(S->dims[1], 2708);
    cr_assert_eq(S->nnz, 10556);
    cr_assert_eq(S->pos[1], M->pos[1]);
    cr_assert_eq(S->crd[1], M->crd[1]);
    cr_assert_not_null(S->vals);
    cr_assert_neq(S->vals, M->vals);
    for (int64_t k = 0; k < S->nnz; k++)
        cr_assert_eq(S->vals[k], 0.0f);
    loom_dataset_fill_outputs(ds, 2.0f);
    cr_assert_eq(S->vals[S->nnz - 1], 2.0f);
    cr_assert_eq(M->vals[M->nnz - 1], 1.0f);
    cr_assert_eq(ds->t[tensor(prog, "Q")].dims[1], 64);
    loom_dataset_free(ds); /* ASan reports a double free if aliases were freed */
    loom_program_free(prog);
}

/* ---- attention: computed patterns and temporaries ----------------------- */

Test(dataset, attention_causal_pattern)
{
    loom_program *prog = parse_file("workloads/attention_causal.loom");
    loom_param_spec n = param("N", 4);
    loom_dataset *ds = load_ok(prog, NULL, 0, &n, 1, 9);
    const loom_tensor_abi *W = &ds->t[tensor(prog, "W")];
    cr_assert_eq(W->dims[0], 4);
    cr_assert_eq(W->dims[1], 4);
    cr_assert_eq(W->nnz, 10);
    cr_assert_null(W->vals);
    const int32_t pos[5] = {0, 1, 3, 6, 10};
    const int32_t crd[10] = {0, 0, 1, 0, 1, 2, 0, 1, 2, 3};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(W->pos[1][i], pos[i], "pos[%d] = %d", i, W->pos[1][i]);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(W->crd[1][i], crd[i], "crd[%d] = %d", i, W->crd[1][i]);

    int st = tensor(prog, "S");
    cr_assert_eq(prog->tensors[st].role, LOOM_TENSOR_TEMP);
    const loom_tensor_abi *S = &ds->t[st];
    cr_assert_eq(S->order, 2);
    cr_assert_eq(S->dims[0], 4);
    cr_assert_eq(S->dims[1], 4);
    cr_assert_eq(S->nnz, 10);
    cr_assert_eq(S->pos[1], W->pos[1]);
    cr_assert_eq(S->crd[1], W->crd[1]);
    cr_assert_null(S->vals);

    const loom_tensor_abi *m = &ds->t[tensor(prog, "m")];
    cr_assert_eq(m->order, 1);
    cr_assert_eq(m->dims[0], 4);
    cr_assert_eq(m->nnz, 4);
    cr_assert_null(m->vals);

    const loom_tensor_abi *O = &ds->t[tensor(prog, "O")];
    cr_assert_eq(O->nnz, 4 * 64);
    for (int64_t k = 0; k < O->nnz; k++)
        cr_assert_eq(O->vals[k], 0.0f);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

Test(dataset, band_pattern)
{
    loom_program *prog = parse_text("param N = 5\n"
                                    "tensor W(N, N) band(1)\n"
                                    "tensor Q(N, N) dense\n"
                                    "tensor O(N, N) dense output\n"
                                    "O(i, j) = W(i, j) * Q(i, j)\n");
    loom_dataset *ds = load_ok(prog, NULL, 0, NULL, 0, 1);
    const loom_tensor_abi *W = &ds->t[tensor(prog, "W")];
    cr_assert_eq(W->nnz, 13);
    cr_assert_null(W->vals);
    const int32_t pos[6] = {0, 2, 5, 8, 11, 13};
    const int32_t crd[13] = {0, 1, 0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(W->pos[1][i], pos[i], "pos[%d] = %d", i, W->pos[1][i]);
    for (int i = 0; i < 13; i++)
        cr_assert_eq(W->crd[1][i], crd[i], "crd[%d] = %d", i, W->crd[1][i]);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

Test(dataset, dense_and_dcsr_inputs_from_files)
{
    loom_program *prog = parse_text("tensor A(N, K) dense\n"
                                    "tensor B(N, K) dcsr\n"
                                    "tensor C(N, K) dense output\n"
                                    "C(i, k) = A(i, k) * B(i, k)\n");
    loom_data_spec s[2] = {spec("A", "tests/data/small_general.mtx"),
                           spec("B", "tests/data/small_general.mtx")};
    loom_dataset *ds = load_ok(prog, s, 2, NULL, 0, 1);
    const loom_tensor_abi *A = &ds->t[tensor(prog, "A")];
    cr_assert_eq(A->nnz, 20);
    cr_assert_eq(A->vals[1], 1.0f);
    cr_assert_eq(A->vals[12], 4.0f);
    cr_assert_eq(A->vals[5], 0.0f);
    const loom_tensor_abi *B = &ds->t[tensor(prog, "B")];
    cr_assert_eq(B->nnz, 6);
    cr_assert_eq(B->pos[0][1], 3);
    cr_assert_eq(B->crd[0][1], 2);
    cr_assert_eq(B->pos[1][3], 6);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* ---- errors -------------------------------------------------------------- */

Test(dataset_errors, unknown_tensor)
{
    loom_program *prog = parse_file("workloads/spmm.loom");
    loom_data_spec s = spec("X", "data/cora_adj.mtx");
    load_fails(prog, &s, 1, NULL, 0, LOOM_ERR_BIND, "no tensor X");
    loom_program_free(prog);
}

Test(dataset_errors, spec_for_output)
{
    loom_program *prog = parse_file("workloads/spmm.loom");
    loom_data_spec s[2] = {spec("A", "data/cora_adj.mtx"), spec("C", "data/cora_adj.mtx")};
    load_fails(prog, s, 2, NULL, 0, LOOM_ERR_BIND, "tensor C is an output");
    loom_program_free(prog);
}

Test(dataset_errors, spec_for_temporary)
{
    loom_program *prog = parse_file("workloads/attention_causal.loom");
    loom_data_spec s = spec("S", "data/cora_adj.mtx");
    load_fails(prog, &s, 1, NULL, 0, LOOM_ERR_BIND, "tensor S is a temporary");
    loom_program_free(prog);
}

Test(dataset_errors, spec_given_twice)
{
    loom_program *prog = parse_file("workloads/spmm.loom");
    loom_data_spec s[2] = {spec("A", "data/cora_adj.mtx"), spec("A", "data/cora_adj.mtx")};
    load_fails(prog, s, 2, NULL, 0, LOOM_ERR_BIND, "given data twice");
    loom_program_free(prog);
}

Test(dataset_errors, sparse_input_without_data)
{
    loom_program *prog = parse_file("workloads/spmm.loom");
    loom_param_spec p[2] = {param("N", 10), param("K", 10)};
    load_fails(prog, NULL, 0, p, 2, LOOM_ERR_BIND,
               "tensor A is csr and needs data: --data A=FILE.mtx");
    loom_program_free(prog);
}

Test(dataset_errors, file_shape_conflicts_with_bound_size)
{
    /* A binds N = K = 2708; X (4 x 5) then claims K = 4 */
    loom_program *prog = parse_text("tensor A(N, K) csr\n"
                                    "tensor X(K, G) csr\n"
                                    "tensor H(N, G) dense output\n"
                                    "H(i, g) += A(i, k) * X(k, g)\n");
    loom_data_spec s[2] = {spec("A", "data/cora_adj.mtx"),
                           spec("X", "tests/data/small_general.mtx")};
    load_fails(prog, s, 2, NULL, 0, LOOM_ERR_BIND, "data X rows");
    loom_program_free(prog);
}

Test(dataset_errors, square_tensor_from_rectangular_file)
{
    loom_program *prog = parse_text("tensor A(N, N) csr\n"
                                    "tensor x(N) dense\n"
                                    "tensor y(N) dense output\n"
                                    "y(i) = A(i, j) * x(j)\n");
    loom_data_spec s = spec("A", "tests/data/small_general.mtx");
    load_fails(prog, &s, 1, NULL, 0, LOOM_ERR_BIND, "data A cols");
    loom_program_free(prog);
}

Test(dataset_errors, vector_given_a_file)
{
    loom_program *prog = parse_file("workloads/spmv.loom");
    loom_data_spec s[2] = {spec("A", "data/cora_adj.mtx"), spec("x", "data/cora_adj.mtx")};
    load_fails(prog, s, 2, NULL, 0, LOOM_ERR_BIND, "only 2-D");
    loom_program_free(prog);
}

Test(dataset_errors, malformed_file_propagates)
{
    loom_program *prog = parse_file("workloads/spmm.loom");
    loom_data_spec s = spec("A", "tests/data/bad_value.mtx");
    loom_dataset *ds = NULL;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_dataset_load(prog, &s, 1, NULL, 0, 1, &ds, &err), LOOM_ERR_DATA);
    cr_assert_null(ds);
    cr_assert_str_eq(err.file, "tests/data/bad_value.mtx");
    cr_assert_eq(err.line, 4);
    loom_program_free(prog);
}

Test(dataset_errors, missing_file)
{
    loom_program *prog = parse_file("workloads/spmm.loom");
    loom_data_spec s = spec("A", "tests/data/does_not_exist.mtx");
    load_fails(prog, &s, 1, NULL, 0, LOOM_ERR_IO, "does_not_exist.mtx");
    loom_program_free(prog);
}
