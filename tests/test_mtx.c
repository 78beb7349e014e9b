/* Tests of the Matrix Market reader (runtime/data/mtx.c) and of building tensors
 * in each level format from coordinates (runtime/data/dataset.c). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/data/dataset.h"

#define FIX(name) "tests/data/" name

static void read_ok(const char *path, loom_coo *coo)
{
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_mtx_read(path, coo, &err);
    cr_assert_eq(st, LOOM_OK, "%s: %s (line %d)", path, err.msg, err.line);
}

static void check_entry(const loom_coo *c, int k, int r, int col, float v)
{
    cr_assert_eq(c->row[k], r, "entry %d: row %d, expected %d", k, c->row[k], r);
    cr_assert_eq(c->col[k], col, "entry %d: col %d, expected %d", k, c->col[k], col);
    cr_assert_float_eq(c->val[k], v, 1e-6, "entry %d: value %g, expected %g", k, c->val[k], v);
}

static void expect_error(const char *path, loom_status status, int line, const char *substr)
{
    loom_coo coo;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_mtx_read(path, &coo, &err);
    cr_assert_eq(st, status, "%s: status %s, expected %s (%s)", path, loom_status_name(st),
                 loom_status_name(status), err.msg);
    cr_assert_eq(err.status, status);
    cr_assert_str_eq(err.file, path);
    cr_assert_eq(err.line, line, "%s: error on line %d, expected %d: %s", path, err.line, line,
                 err.msg);
    cr_assert(strstr(err.msg, substr) != NULL, "%s: message '%s' lacks '%s'", path, err.msg,
              substr);
}

/* Write `text` to a fresh temporary file; returns its path (static buffer). */
static const char *temp_mtx(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/loom_test_mtx_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp failed");
    size_t n = strlen(text);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

static void expect_error_text(const char *text, loom_status status, int line, const char *substr)
{
    const char *path = temp_mtx(text);
    expect_error(path, status, line, substr);
    unlink(path);
}

/* ---- good files --------------------------------------------------------- */

Test(mtx, general_real_with_comments)
{
    loom_coo c;
    read_ok(FIX("small_general.mtx"), &c);
    cr_assert_eq(c.nrows, 4);
    cr_assert_eq(c.ncols, 5);
    cr_assert_eq(c.nnz, 6);
    cr_assert_eq(c.is_pattern, 0);
    cr_assert_eq(c.is_symmetric, 0);
    check_entry(&c, 0, 0, 1, 1.0f);
    check_entry(&c, 1, 0, 4, 2.5f);
    check_entry(&c, 2, 2, 0, -3.0f);
    check_entry(&c, 3, 2, 2, 4.0f);
    check_entry(&c, 4, 2, 3, 5.25f);
    check_entry(&c, 5, 3, 4, 6.0f);
    loom_coo_free(&c);
    cr_assert_null(c.row);
}

Test(mtx, pattern_values_are_one)
{
    loom_coo c;
    read_ok(FIX("small_pattern.mtx"), &c); /* banner in mixed case */
    cr_assert_eq(c.is_pattern, 1);
    cr_assert_eq(c.nnz, 4);
    check_entry(&c, 0, 0, 0, 1.0f);
    check_entry(&c, 1, 1, 2, 1.0f);
    check_entry(&c, 2, 2, 0, 1.0f);
    check_entry(&c, 3, 2, 1, 1.0f);
    loom_coo_free(&c);
}

Test(mtx, symmetric_expanded)
{
    loom_coo c;
    read_ok(FIX("small_symmetric.mtx"), &c);
    cr_assert_eq(c.is_symmetric, 1);
    /* 5 stored: 2 diagonal + 3 off-diagonal mirrored */
    cr_assert_eq(c.nnz, 8);
    check_entry(&c, 0, 0, 0, 10);
    check_entry(&c, 1, 0, 1, 21);
    check_entry(&c, 2, 0, 3, 41);
    check_entry(&c, 3, 1, 0, 21);
    check_entry(&c, 4, 1, 2, 32);
    check_entry(&c, 5, 2, 1, 32);
    check_entry(&c, 6, 3, 0, 41);
    check_entry(&c, 7, 3, 3, 44);
    loom_coo_free(&c);
}

Test(mtx, duplicates_summed)
{
    loom_coo c;
    read_ok(FIX("small_dups.mtx"), &c);
    cr_assert_eq(c.nnz, 3);
    check_entry(&c, 0, 0, 2, -3.0f);
    check_entry(&c, 1, 1, 1, 4.0f);
    check_entry(&c, 2, 2, 0, 7.0f);
    loom_coo_free(&c);
}

Test(mtx, unsorted_input_sorted)
{
    loom_coo c;
    read_ok(FIX("small_unsorted.mtx"), &c);
    cr_assert_eq(c.nnz, 5);
    check_entry(&c, 0, 0, 0, 1);
    check_entry(&c, 1, 0, 1, 2);
    check_entry(&c, 2, 1, 0, 3);
    check_entry(&c, 3, 2, 1, 4);
    check_entry(&c, 4, 2, 3, 5);
    loom_coo_free(&c);
}

Test(mtx, crlf_and_no_final_newline)
{
    const char *path = temp_mtx("%%MatrixMarket matrix coordinate real general\r\n"
                                "% comment\r\n2 2 2\r\n1 1 1.5\r\n2 2 -2");
    loom_coo c;
    read_ok(path, &c);
    unlink(path);
    cr_assert_eq(c.nnz, 2);
    check_entry(&c, 0, 0, 0, 1.5f);
    check_entry(&c, 1, 1, 1, -2.0f);
    loom_coo_free(&c);
}

Test(mtx, zero_entries)
{
    const char *path = temp_mtx("%%MatrixMarket matrix coordinate real general\n3 2 0\n");
    loom_coo c;
    read_ok(path, &c);
    unlink(path);
    cr_assert_eq(c.nrows, 3);
    cr_assert_eq(c.ncols, 2);
    cr_assert_eq(c.nnz, 0);
    loom_coo_free(&c);
}

/* ---- malformed files ---------------------------------------------------- */

Test(mtx_bad, missing_file)
{
    expect_error(FIX("no_such_file.mtx"), LOOM_ERR_IO, 0, "No such file");
}

Test(mtx_bad, empty_file)
{
    expect_error(FIX("bad_empty.mtx"), LOOM_ERR_DATA, 1, "empty file");
}

Test(mtx_bad, missing_banner)
{
    expect_error(FIX("bad_no_banner.mtx"), LOOM_ERR_DATA, 1, "missing Matrix Market banner");
}

Test(mtx_bad, bad_banner)
{
    expect_error(FIX("bad_banner.mtx"), LOOM_ERR_DATA, 1, "bad banner");
}

Test(mtx_bad, bad_banner_field)
{
    expect_error_text("%%MatrixMarket matrix coordinate quaternion general\n1 1 0\n",
                      LOOM_ERR_DATA, 1, "unknown field 'quaternion'");
}

Test(mtx_bad, array_format)
{
    expect_error(FIX("bad_array.mtx"), LOOM_ERR_DATA, 1, "only the coordinate format is read");
}

Test(mtx_bad, complex_field)
{
    expect_error(FIX("bad_complex.mtx"), LOOM_ERR_DATA, 1, "complex matrices are not supported");
}

Test(mtx_bad, skew_symmetric)
{
    expect_error(FIX("bad_skew.mtx"), LOOM_ERR_DATA, 1,
                 "skew-symmetric matrices are not supported");
}

Test(mtx_bad, hermitian)
{
    expect_error_text("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", LOOM_ERR_DATA,
                      1, "hermitian matrices are not supported");
}

Test(mtx_bad, bad_size_line)
{
    expect_error(FIX("bad_size_line.mtx"), LOOM_ERR_DATA, 3, "bad size line");
}

Test(mtx_bad, size_line_not_numbers)
{
    expect_error_text("%%MatrixMarket matrix coordinate real general\n3 x3 1\n1 1 1\n",
                      LOOM_ERR_DATA, 2, "bad size line '3 x3 1'");
}

Test(mtx_bad, negative_size)
{
    expect_error(FIX("bad_negative_size.mtx"), LOOM_ERR_DATA, 2, "cols -2");
}

Test(mtx_bad, missing_size_line)
{
    expect_error_text("%%MatrixMarket matrix coordinate real general\n% only comments\n",
                      LOOM_ERR_DATA, 3, "file ends before the size line");
}

Test(mtx_bad, nnz_overflows_int32)
{
    expect_error_text("%%MatrixMarket matrix coordinate real general\n10 10 3000000000\n",
                      LOOM_ERR_DATA, 2, "does not fit int32");
}

Test(mtx_bad, symmetric_not_square)
{
    expect_error_text("%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n",
                      LOOM_ERR_DATA, 2, "must be square");
}

Test(mtx_bad, index_zero)
{
    expect_error(FIX("bad_index_zero.mtx"), LOOM_ERR_DATA, 4, "row index 0 out of range 1..3");
}

Test(mtx_bad, index_above_rows)
{
    expect_error(FIX("bad_index_range.mtx"), LOOM_ERR_DATA, 5, "row index 4 out of range 1..3");
}

Test(mtx_bad, column_above_cols)
{
    expect_error_text("%%MatrixMarket matrix coordinate real general\n3 2 1\n1 3 1\n",
                      LOOM_ERR_DATA, 3, "column index 3 out of range 1..2");
}

Test(mtx_bad, non_numeric_value)
{
    expect_error(FIX("bad_value.mtx"), LOOM_ERR_DATA, 4, "non-numeric value 'abc'");
}

Test(mtx_bad, value_with_junk_suffix)
{
    expect_error_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.5x\n",
                      LOOM_ERR_DATA, 3, "non-numeric value '1.5x'");
}

Test(mtx_bad, missing_value)
{
    expect_error_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1\n",
                      LOOM_ERR_DATA, 3, "missing value");
}

Test(mtx_bad, too_few_entries)
{
    expect_error(FIX("bad_too_few.mtx"), LOOM_ERR_DATA, 6, "file ends after 3 of 4 entries");
}

Test(mtx_bad, too_many_entries)
{
    expect_error(FIX("bad_too_many.mtx"), LOOM_ERR_DATA, 6, "too many entries");
}

Test(mtx_bad, upper_triangle_in_symmetric)
{
    expect_error(FIX("bad_upper.mtx"), LOOM_ERR_DATA, 5, "entry (1, 3) is above the diagonal");
}

Test(mtx_bad, trailing_garbage)
{
    expect_error(FIX("bad_trailing.mtx"), LOOM_ERR_DATA, 4, "unexpected text 'garbage'");
}

Test(mtx_bad, value_in_pattern_file)
{
    expect_error(FIX("bad_pattern_extra.mtx"), LOOM_ERR_DATA, 3, "unexpected text '1'");
}

/* ---- real data ---------------------------------------------------------- */

static void check_sorted_unique(const loom_coo *c)
{
    for (int64_t k = 0; k < c->nnz; k++) {
        cr_assert(c->row[k] >= 0 && c->row[k] < c->nrows);
        cr_assert(c->col[k] >= 0 && c->col[k] < c->ncols);
        if (k > 0)
            cr_assert(c->row[k] > c->row[k - 1] ||
                          (c->row[k] == c->row[k - 1] && c->col[k] > c->col[k - 1]),
                      "entries %lld and %lld not strictly sorted", (long long)k - 1,
                      (long long)k);
    }
}

Test(mtx_real, cora_adjacency)
{
    loom_coo c;
    read_ok("data/cora_adj.mtx", &c);
    cr_assert_eq(c.nrows, 2708);
    cr_assert_eq(c.ncols, 2708);
    cr_assert_eq(c.nnz, 10556);
    cr_assert_eq(c.is_pattern, 1);
    check_sorted_unique(&c);
    for (int64_t k = 0; k < c.nnz; k++)
        cr_assert_eq(c.val[k], 1.0f);
    loom_coo_free(&c);
}

Test(mtx_real, bcsstk13_symmetric)
{
    const char *path = "/work/shared/data/suitesparse/bcsstk13.mtx";
    if (access(path, R_OK) != 0)
        cr_skip_test("%s absent", path);
    loom_coo c;
    read_ok(path, &c);
    cr_assert_eq(c.nrows, 2003);
    cr_assert_eq(c.ncols, 2003);
    cr_assert_eq(c.nnz, 83883);
    cr_assert_eq(c.is_symmetric, 1);
    check_sorted_unique(&c);
    /* entries (1,1) and (2,1) of the file: 0-based (0,0), (0,1) mirrored, (1,0) */
    check_entry(&c, 0, 0, 0, 277281165.183f);
    cr_assert_eq(c.row[1], 0);
    cr_assert_eq(c.col[1], 1);
    cr_assert_float_eq(c.val[1], 3101923.80092f, 1.0f);
    /* the expansion is symmetric: row 1 starts with column 0 holding the same value */
    int64_t k = 0;
    while (c.row[k] < 1)
        k++;
    cr_assert_eq(c.col[k], 0);
    cr_assert_eq(c.val[k], c.val[1]);
    loom_coo_free(&c);
}

Test(mtx_real, web_notredame, .timeout = 60)
{
    const char *path = "/work/shared/data/web-NotreDame/web-NotreDame.mtx";
    if (access(path, R_OK) != 0)
        cr_skip_test("%s absent", path);
    loom_coo c;
    read_ok(path, &c);
    cr_assert_eq(c.nrows, 325729);
    cr_assert_eq(c.ncols, 325729);
    cr_assert_eq(c.nnz, 1497134);
    check_sorted_unique(&c);
    loom_coo_free(&c);
}

/* ---- tensors in each format from the 4 x 5 matrix ----------------------- *
 *      0 1   0 0 2.5
 *      0 0   0 0 0
 *     -3 0   4 5.25 0
 *      0 0   0 0 6                                                          */

static void build(loom_format_kind kind, loom_tensor_abi *t)
{
    loom_coo c;
    read_ok(FIX("small_general.mtx"), &c);
    loom_format f;
    loom_error err;
    cr_assert_eq(loom_format_make(kind, 2, 0, &f, &err), LOOM_OK, "%s", err.msg);
    int64_t dims[2] = {4, 5};
    cr_assert_eq(loom_tensor_from_coo(&c, &f, dims, t, &err), LOOM_OK, "%s", err.msg);
    loom_coo_free(&c);
    cr_assert_eq(t->order, 2);
    cr_assert_eq(t->dims[0], 4);
    cr_assert_eq(t->dims[1], 5);
}

#define ASSERT_I32(arr, ...)                                                                   \
    do {                                                                                       \
        const int32_t exp_[] = {__VA_ARGS__};                                                  \
        for (size_t i_ = 0; i_ < sizeof exp_ / sizeof exp_[0]; i_++)                           \
            cr_assert_eq((arr)[i_], exp_[i_], #arr "[%zu] = %d, expected %d", i_, (arr)[i_],  \
                         exp_[i_]);                                                            \
    } while (0)

#define ASSERT_F32(arr, ...)                                                                   \
    do {                                                                                       \
        const float exp_[] = {__VA_ARGS__};                                                    \
        for (size_t i_ = 0; i_ < sizeof exp_ / sizeof exp_[0]; i_++)                           \
            cr_assert_eq((arr)[i_], exp_[i_], #arr "[%zu] = %g, expected %g", i_, (arr)[i_],  \
                         exp_[i_]);                                                            \
    } while (0)

Test(formats, csr)
{
    loom_tensor_abi t;
    build(LOOM_FORMAT_CSR, &t);
    cr_assert_eq(t.nnz, 6);
    cr_assert_null(t.pos[0]);
    cr_assert_null(t.crd[0]);
    ASSERT_I32(t.pos[1], 0, 2, 2, 5, 6);
    ASSERT_I32(t.crd[1], 1, 4, 0, 2, 3, 4);
    ASSERT_F32(t.vals, 1, 2.5f, -3, 4, 5.25f, 6);
    loom_tensor_abi_free_arrays(&t);
    cr_assert_null(t.vals);
}

Test(formats, csc)
{
    loom_tensor_abi t;
    build(LOOM_FORMAT_CSC, &t);
    cr_assert_eq(t.nnz, 6);
    cr_assert_null(t.pos[0]);
    ASSERT_I32(t.pos[1], 0, 1, 2, 3, 4, 6);
    ASSERT_I32(t.crd[1], 2, 0, 2, 2, 0, 3);
    ASSERT_F32(t.vals, -3, 1, 4, 5.25f, 2.5f, 6);
    loom_tensor_abi_free_arrays(&t);
}

Test(formats, dcsr)
{
    loom_tensor_abi t;
    build(LOOM_FORMAT_DCSR, &t);
    cr_assert_eq(t.nnz, 6);
    ASSERT_I32(t.pos[0], 0, 3);
    ASSERT_I32(t.crd[0], 0, 2, 3);
    ASSERT_I32(t.pos[1], 0, 2, 5, 6);
    ASSERT_I32(t.crd[1], 1, 4, 0, 2, 3, 4);
    ASSERT_F32(t.vals, 1, 2.5f, -3, 4, 5.25f, 6);
    loom_tensor_abi_free_arrays(&t);
}

Test(formats, dense)
{
    loom_tensor_abi t;
    build(LOOM_FORMAT_DENSE, &t);
    cr_assert_eq(t.nnz, 20);
    for (int l = 0; l < LOOM_ABI_MAX_ORDER; l++) {
        cr_assert_null(t.pos[l]);
        cr_assert_null(t.crd[l]);
    }
    ASSERT_F32(t.vals, 0, 1, 0, 0, 2.5f, /**/ 0, 0, 0, 0, 0, /**/ -3, 0, 4, 5.25f, 0,
               /**/ 0, 0, 0, 0, 6);
    loom_tensor_abi_free_arrays(&t);
}

Test(formats, larger_dims_than_file)
{
    loom_coo c;
    read_ok(FIX("small_general.mtx"), &c);
    loom_format f;
    loom_error err;
    cr_assert_eq(loom_format_make(LOOM_FORMAT_CSR, 2, 0, &f, &err), LOOM_OK);
    int64_t small[2] = {3, 5};
    loom_tensor_abi t;
    cr_assert_eq(loom_tensor_from_coo(&c, &f, small, &t, &err), LOOM_ERR_INVALID);
    cr_assert(strstr(err.msg, "does not fit") != NULL, "%s", err.msg);
    loom_coo_free(&c);
}

Test(formats, range_formats_are_not_read)
{
    loom_coo c;
    read_ok(FIX("small_general.mtx"), &c);
    loom_format f;
    loom_error err;
    cr_assert_eq(loom_format_make(LOOM_FORMAT_CAUSAL, 2, 0, &f, &err), LOOM_OK);
    int64_t dims[2] = {4, 5};
    loom_tensor_abi t;
    cr_assert_eq(loom_tensor_from_coo(&c, &f, dims, &t, &err), LOOM_ERR_INVALID);
    loom_coo_free(&c);
}

Test(formats, causal_bounds)
{
    loom_format f;
    loom_error err;
    cr_assert_eq(loom_format_make(LOOM_FORMAT_CAUSAL, 2, 0, &f, &err), LOOM_OK);
    int64_t lo, hi;
    const int64_t exp_hi[4] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++) {
        loom_range_bounds(&f, i, 4, &lo, &hi);
        cr_assert_eq(lo, 0);
        cr_assert_eq(hi, exp_hi[i], "row %d: hi %lld", i, (long long)hi);
    }
    loom_range_bounds(&f, 5, 3, &lo, &hi); /* more rows than columns */
    cr_assert_eq(lo, 0);
    cr_assert_eq(hi, 3);
}

Test(formats, band_bounds)
{
    loom_format f;
    loom_error err;
    cr_assert_eq(loom_format_make(LOOM_FORMAT_BAND, 2, 1, &f, &err), LOOM_OK);
    cr_assert_eq(f.band_width, 1);
    const int64_t exp_lo[5] = {0, 0, 1, 2, 3}, exp_hi[5] = {2, 3, 4, 5, 5};
    for (int i = 0; i < 5; i++) {
        int64_t lo, hi;
        loom_range_bounds(&f, i, 5, &lo, &hi);
        cr_assert_eq(lo, exp_lo[i], "row %d: lo %lld", i, (long long)lo);
        cr_assert_eq(hi, exp_hi[i], "row %d: hi %lld", i, (long long)hi);
    }
}
