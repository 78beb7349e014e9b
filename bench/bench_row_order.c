/* SpMM F = 128's row workspace over a real matrix's
 * rows, in the matrix's own order and with each row's stored entries
 * shuffled -- the sixtieth session's reading of issue 29's two regrets
 * (docs/simulator.md "Model 61": mbeacxc's AVX2 records, where two passes
 * of 64 columns measured slower than the whole row of 128, which the
 * simulator ranks the other way).
 *
 * C = A B with B dense (columns x 128, every row 512 bytes), written as
 * loom's lowering writes it: a float workspace of 128 (GCC 12 unrolls it
 * completely and, built for 256-bit vectors, spills 2 of its 16 ymm) or
 * two passes of 64 over the same row of A (8 ymm each).  A's entries in a
 * row are sorted by column (CSR, as loom stores them) or shuffled within
 * the row (xorshift64, a fixed seed), which reads the same rows of B in
 * another order.  Prints, per order, the best of 20 runs of each form in
 * 3 rounds: microseconds, ns per stored entry and their ratio.  One thread.
 *
 * usage: bench_row_order MATRIX.mtx  (Matrix Market, read by loom's reader:
 *        symmetric files expanded; about 2 seconds for mbeacxc).  Links
 *        libloom for the reader only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../runtime/data/dataset.h"
#include "spmm_row_forms.h"

/* Reads `path` with loom's reader (runtime/data/dataset.h loom_mtx_read:
 * symmetric files expanded, errors naming the file and line) into CSR,
 * rows sorted by column as the reader leaves them; 0, or 1 with the
 * reader's message. */
static int read_mtx(const char *path, int *pm, int *pn, int *pnnz, int **ppos, int **pcrd)
{
    loom_coo coo;
    loom_error err;
    if (loom_mtx_read(path, &coo, &err) != LOOM_OK) {
        fprintf(stderr, "bench_row_order: %s\n", err.msg);
        return 1;
    }
    int m = (int)coo.nrows, nnz = (int)coo.nnz;
    int *pos = calloc((size_t)m + 1, sizeof(int)), *crd = malloc(sizeof(int) * (size_t)(nnz > 0 ? nnz : 1));
    if (!pos || !crd) {
        fprintf(stderr, "bench_row_order: out of memory\n");
        free(pos), free(crd), loom_coo_free(&coo);
        return 1;
    }
    for (int e = 0; e < nnz; e++) { /* sorted by (row, col): CSR in order */
        pos[coo.row[e] + 1]++;
        crd[e] = coo.col[e];
    }
    for (int i = 0; i < m; i++)
        pos[i + 1] += pos[i];
    *pm = m, *pn = (int)coo.ncols, *pnnz = nnz, *ppos = pos, *pcrd = crd;
    loom_coo_free(&coo);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench_row_order MATRIX.mtx\n");
        return 2;
    }
    int m, n, nnz, *pos, *crd;
    if (read_mtx(argv[1], &m, &n, &nnz, &pos, &crd))
        return 1;
    float *a = malloc(sizeof(float) * (size_t)nnz);
    float *B = aligned_alloc(64, sizeof(float) * (size_t)n * W), *C = aligned_alloc(64, sizeof(float) * (size_t)m * W);
    if (!a || !B || !C) {
        fprintf(stderr, "bench_row_order: out of memory\n");
        return 1;
    }
    for (int e = 0; e < nnz; e++)
        a[e] = 1e-3f * (float)(e % 7);
    for (int64_t i = 0; i < (int64_t)n * W; i++)
        B[i] = 1.0f;
    printf("%s: %d x %d, %d stored entries; B %d x %d floats (%.0f KB)\n", argv[1], m, n, nnz, n, W,
           (double)n * W * 4 / 1e3);
    for (int order = 0; order < 2; order++) {
        if (order == 1) { /* shuffle each row's entries (Fisher-Yates, xorshift64) */
            uint64_t x = 0x9E3779B97F4A7C15ULL;
            for (int i = 0; i < m; i++)
                for (int j = pos[i + 1] - 1; j > pos[i]; j--) {
                    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                    int q = pos[i] + (int)(x % (uint64_t)(j - pos[i] + 1)), t = crd[j];
                    crd[j] = crd[q], crd[q] = t;
                }
        }
        for (int round = 0; round < 3; round++) {
            double b1 = 1e30, b2 = 1e30;
            for (int k = 0; k < 20; k++) {
                double t0 = now();
                one_pass(pos, crd, a, B, C, m);
                double t1 = now();
                two_passes(pos, crd, a, B, C, m);
                double t2 = now();
                if (t1 - t0 < b1)
                    b1 = t1 - t0;
                if (t2 - t1 < b2)
                    b2 = t2 - t1;
            }
            printf("%-18s round %d: one pass of 128 %.1f us (%.2f ns a stored entry), two of 64 %.1f us (%.2f): "
                   "ratio %.3f (check %g)\n",
                   order ? "shuffled rows" : "the matrix's order", round, b1 * 1e6, b1 * 1e9 / nnz, b2 * 1e6,
                   b2 * 1e9 / nnz, b1 / b2, (double)C[3]);
        }
    }
    free(a), free(B), free(C), free(pos), free(crd);
    return 0;
}
