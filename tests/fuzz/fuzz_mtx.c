/* Fuzz the Matrix Market reader: parse; when it parses, build the tensor
 * in every format a file can fill (csr, csc, dcsr; dense when small), as
 * `--data A=FILE` does, and check the coordinates it returned. */
#include "../../runtime/data/dataset.h"
#include "fuzz_common.h"

static void build(const loom_coo *coo, loom_format_kind kind)
{
    loom_format f;
    loom_error err;
    if (loom_format_make(kind, 2, 0, &f, &err) != LOOM_OK)
        abort();
    int64_t dims[2] = {coo->nrows, coo->ncols};
    loom_tensor_abi t;
    if (fuzz_check(loom_tensor_from_coo(coo, &f, dims, &t, &err)) == LOOM_OK)
        loom_tensor_abi_free_arrays(&t);
}

int loom_fuzz_mtx(const uint8_t *data, size_t n)
{
    char *text = fuzz_text(data, n);
    if (!text)
        return 0;
    loom_coo coo;
    loom_error err;
    if (fuzz_check(loom_mtx_parse("fuzz.mtx", text, n, &coo, &err)) == LOOM_OK) {
        for (int64_t k = 0; k < coo.nnz; k++) {
            if (coo.row[k] < 0 || coo.row[k] >= coo.nrows || coo.col[k] < 0 ||
                coo.col[k] >= coo.ncols)
                abort(); /* an entry outside the matrix */
            if (k > 0 && (coo.row[k] < coo.row[k - 1] ||
                          (coo.row[k] == coo.row[k - 1] && coo.col[k] <= coo.col[k - 1])))
                abort(); /* not sorted by (row, col) without duplicates */
        }
        build(&coo, LOOM_FORMAT_CSR);
        build(&coo, LOOM_FORMAT_CSC);
        build(&coo, LOOM_FORMAT_DCSR);
        if (coo.nrows * coo.ncols <= (1 << 20))
            build(&coo, LOOM_FORMAT_DENSE);
        loom_coo_free(&coo);
    }
    free(text);
    return 0;
}

LOOM_FUZZ_ENTRY(loom_fuzz_mtx)
