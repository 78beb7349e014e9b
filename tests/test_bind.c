/* Tests of size binding (dsl/front/bind.c).  Run from the repository root. */
#include <criterion/criterion.h>

#include <string.h>

#include "../dsl/ir/program.h"

static loom_program *bload(const char *path)
{
    loom_program *p = NULL;
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_parse_file(path, &p, &e), LOOM_OK, "%s: %s", path, e.msg);
    return p;
}

static loom_program *bload_str(const char *text)
{
    loom_program *p = NULL;
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_parse_string(text, "b.loom", &p, &e), LOOM_OK, "%s", e.msg);
    return p;
}

static int stmt_var(const loom_program *p, int stmt, const char *name)
{
    for (int k = 0; k < p->stmts[stmt].nvars; k++)
        if (strcmp(p->vars[p->stmts[stmt].vars[k]].name, name) == 0)
            return p->stmts[stmt].vars[k];
    cr_assert_fail("no var %s in statement %d", name, stmt);
    return -1;
}

static int64_t size_value(const loom_program *p, const char *name)
{
    int s = loom_program_find_size(p, name);
    cr_assert_geq(s, 0, "no size %s", name);
    return p->sizes[s].bound ? p->sizes[s].value : -1;
}

Test(bind, spmm_from_data_and_param_override)
{
    loom_program *p = bload("workloads/spmm.loom");
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_bind_size(p, "N", 2708, "data A rows", &e), LOOM_OK, "%s", e.msg);
    cr_assert_eq(loom_program_bind_size(p, "K", 1433, "data A cols", &e), LOOM_OK, "%s", e.msg);
    cr_assert_eq(loom_program_finish_binding(p, &e), LOOM_OK, "%s", e.msg);
    int k = stmt_var(p, 0, "k"), f = stmt_var(p, 0, "f"), i = stmt_var(p, 0, "i");
    cr_assert_eq(loom_program_var_extent(p, k), 1433);
    cr_assert_eq(loom_program_var_extent(p, i), 2708);
    cr_assert_eq(loom_program_var_extent(p, f), 64);
    int C = loom_program_find_tensor(p, "C"), B = loom_program_find_tensor(p, "B");
    cr_assert_eq(loom_program_dim(p, C, 0), 2708);
    cr_assert_eq(loom_program_dim(p, C, 1), 64);
    cr_assert_eq(loom_program_dim(p, B, 0), 1433);
    cr_assert_str_eq(p->sizes[loom_program_find_size(p, "F")].origin, "param default");
    cr_assert_str_eq(p->sizes[loom_program_find_size(p, "N")].origin, "data A rows");
    /* --param overrides a param default silently */
    cr_assert_eq(loom_program_bind_size(p, "F", 128, "--param", &e), LOOM_OK, "%s", e.msg);
    cr_assert_eq(loom_program_finish_binding(p, &e), LOOM_OK, "%s", e.msg);
    cr_assert_eq(loom_program_var_extent(p, f), 128);
    cr_assert_eq(loom_program_dim(p, C, 1), 128);
    cr_assert_str_eq(p->sizes[loom_program_find_size(p, "F")].origin, "--param");
    /* out of range queries */
    cr_assert_eq(loom_program_var_extent(p, -1), 0);
    cr_assert_eq(loom_program_var_extent(p, 999), 0);
    cr_assert_eq(loom_program_dim(p, C, 2), 0);
    cr_assert_eq(loom_program_dim(p, 99, 0), 0);
    loom_program_free(p);
}

Test(bind, unbound_extent_is_zero)
{
    loom_program *p = bload("workloads/spmm.loom");
    cr_assert_eq(loom_program_var_extent(p, stmt_var(p, 0, "k")), 0);
    cr_assert_eq(loom_program_var_extent(p, stmt_var(p, 0, "f")), 64);
    loom_program_free(p);
}

Test(bind, unbound_size_error)
{
    loom_program *p = bload("workloads/spmm.loom");
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_bind_size(p, "N", 10, "data A rows", &e), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(p, &e), LOOM_ERR_BIND);
    cr_assert_str_eq(e.msg, "size K never binds: give --param K=INT or data for a tensor with a "
                            "dimension of size K");
    cr_assert_str_eq(e.file, "workloads/spmm.loom");
    cr_assert_eq(e.line, 3);
    loom_program_free(p);
}

#define TIED "tensor A(N, K) csr\ntensor B(M, F) dense\ntensor C(N, F) dense output\n" \
             "C(i, f) += A(i, k) * B(k, f)\n"

Test(bind, mismatch_through_index)
{
    loom_program *p = bload_str(TIED);
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_bind_size(p, "N", 2708, "data A rows", &e), LOOM_OK);
    cr_assert_eq(loom_program_bind_size(p, "K", 1433, "data A cols", &e), LOOM_OK);
    cr_assert_eq(loom_program_bind_size(p, "M", 2708, "data B rows", &e), LOOM_OK);
    cr_assert_eq(loom_program_bind_size(p, "F", 16, "data B cols", &e), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(p, &e), LOOM_ERR_BIND);
    cr_assert_eq(e.line, 4);
    cr_assert_not_null(strstr(e.msg, "index k in line 4 ranges over K = 1433 (A, dimension 2) "
                                     "and M = 2708 (B, dimension 1)"),
                       "%s", e.msg);
    cr_assert_not_null(strstr(e.msg, "data B rows"), "%s", e.msg);
    loom_program_free(p);
}

Test(bind, propagation_and_idempotence)
{
    loom_program *p = bload_str(TIED);
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_bind_size(p, "N", 30, "data A rows", &e), LOOM_OK);
    cr_assert_eq(loom_program_bind_size(p, "K", 20, "data A cols", &e), LOOM_OK);
    cr_assert_eq(loom_program_bind_size(p, "F", 5, "--param", &e), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(p, &e), LOOM_OK, "%s", e.msg);
    int M = loom_program_find_size(p, "M");
    cr_assert_eq(p->sizes[M].value, 20);
    cr_assert_str_eq(p->sizes[M].origin, "from index k in line 4 (= K)");
    /* a second call changes nothing */
    loom_program before;
    memcpy(&before, p, sizeof before);
    cr_assert_eq(loom_program_finish_binding(p, &e), LOOM_OK, "%s", e.msg);
    cr_assert_eq(memcmp(&before, p, sizeof before), 0);
    /* an explicit binding replaces a derived one, and then disagrees */
    cr_assert_eq(loom_program_bind_size(p, "M", 21, "data B rows", &e), LOOM_OK, "%s", e.msg);
    cr_assert_eq(loom_program_finish_binding(p, &e), LOOM_ERR_BIND);
    cr_assert_not_null(strstr(e.msg, "ranges over K = 20 (A, dimension 2) and M = 21"), "%s", e.msg);
    loom_program_free(p);
}

Test(bind, data_overrides_param_default_through_index)
{
    loom_program *p = bload_str("param N = 256\ntensor A(N, N) csr\ntensor x(M) dense\n"
                                "tensor y(N) dense output\ny(i) = A(i, k) * x(k)\n");
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_bind_size(p, "M", 100, "data x rows", &e), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(p, &e), LOOM_OK, "%s", e.msg);
    cr_assert_eq(size_value(p, "N"), 100);
    cr_assert_eq(loom_program_var_extent(p, stmt_var(p, 0, "i")), 100);
    loom_program_free(p);

    /* without data the default flows the other way */
    p = bload_str("param N = 256\ntensor A(N, N) csr\ntensor x(M) dense\n"
                  "tensor y(N) dense output\ny(i) = A(i, k) * x(k)\n");
    cr_assert_eq(loom_program_finish_binding(p, &e), LOOM_OK, "%s", e.msg);
    cr_assert_eq(size_value(p, "M"), 256);
    loom_program_free(p);
}

Test(bind, chain_through_statements)
{
    /* gcn: N, G from data; F default; T's dims follow */
    loom_program *p = bload("workloads/gcn.loom");
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_bind_size(p, "N", 2708, "data A rows", &e), LOOM_OK);
    cr_assert_eq(loom_program_bind_size(p, "G", 1433, "data X cols", &e), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(p, &e), LOOM_OK, "%s", e.msg);
    int T = loom_program_find_tensor(p, "T");
    cr_assert_eq(loom_program_dim(p, T, 0), 2708);
    cr_assert_eq(loom_program_dim(p, T, 1), 16);
    cr_assert_eq(loom_program_var_extent(p, stmt_var(p, 0, "g")), 1433);
    cr_assert_eq(loom_program_var_extent(p, stmt_var(p, 1, "j")), 2708);
    loom_program_free(p);
}

Test(bind, bind_size_errors)
{
    loom_program *p = bload("workloads/spmm.loom");
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_bind_size(p, "Q", 3, "--param", &e), LOOM_ERR_BIND);
    cr_assert_not_null(strstr(e.msg, "no size named 'Q'"), "%s", e.msg);
    cr_assert_not_null(strstr(e.msg, "F, N, K"), "%s", e.msg);
    cr_assert_eq(loom_program_bind_size(p, "N", 0, "--param", &e), LOOM_ERR_BIND);
    cr_assert_not_null(strstr(e.msg, "positive"), "%s", e.msg);
    cr_assert_eq(loom_program_bind_size(p, "N", -5, "--param", &e), LOOM_ERR_BIND);
    cr_assert_eq(loom_program_bind_size(p, "N", 10, "data A rows", &e), LOOM_OK);
    cr_assert_eq(loom_program_bind_size(p, "N", 10, "--param", &e), LOOM_OK);
    cr_assert_str_eq(p->sizes[loom_program_find_size(p, "N")].origin, "data A rows");
    cr_assert_eq(loom_program_bind_size(p, "N", 20, "--param", &e), LOOM_ERR_BIND);
    cr_assert_not_null(strstr(e.msg, "already 10 (data A rows)"), "%s", e.msg);
    cr_assert_eq(size_value(p, "N"), 10);
    cr_assert_eq(loom_program_bind_size(NULL, "N", 20, "--param", &e), LOOM_ERR_INVALID);
    cr_assert_eq(loom_program_finish_binding(NULL, &e), LOOM_ERR_INVALID);
    loom_program_free(p);
}
