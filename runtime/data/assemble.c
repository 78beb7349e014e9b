/* The symbolic pass of TACO's assemble (Kjolstad et al., OOPSLA 2017,
 * section 6) for a csr output whose pattern no operand gives
 * (dsl/ir/domain.h, loom_assembly): row by row, the union over the domain's
 * terms of either an operand's row (`A(i,j) + B(i,j)`) or the symbolic
 * product of A's row with B's rows (SpGEMM: every j of B(k, :) for k stored
 * in A(i, :)), marked in a per-row array and sorted.  The kernel is then the
 * numeric pass: it merges with the output's row like with an operand's. */
#include "dataset.h"
#include "../../dsl/ir/domain.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

loom_status loom__assemble_csr(const loom_dataset *ds, int t, int32_t **pos_out, int32_t **crd_out, int64_t *nnz_out,
                               loom_error *err);

loom_status loom__assemble_csr(const loom_dataset *ds, int t, int32_t **pos_out, int32_t **crd_out, int64_t *nnz_out,
                               loom_error *err)
{
    const loom_program *prog = ds->prog;
    const loom_tensor *T = &prog->tensors[t];
    loom_assembly plan;
    loom_status rc = loom__assembly_plan(prog, T->def_stmt, &plan, err);
    if (rc != LOOM_OK)
        return rc;
    int64_t rows = ds->t[t].dims[0], cols = ds->t[t].dims[1];
    int32_t *pos = calloc((size_t)rows + 1, sizeof *pos);
    int64_t *mark = malloc((size_t)(cols > 0 ? cols : 1) * sizeof *mark);
    int32_t *row = malloc((size_t)(cols > 0 ? cols : 1) * sizeof *row);
    int64_t cap = 1024, nnz = 0;
    int32_t *crd = malloc((size_t)cap * sizeof *crd);
    if (!pos || !mark || !row || !crd) {
        free(pos), free(mark), free(row), free(crd);
        return loom_error_set(err, LOOM_ERR_NOMEM, prog->path, T->line, 0, "assembling %s: out of memory", T->name);
    }
    for (int64_t j = 0; j < cols; j++)
        mark[j] = -1;
    for (int64_t i = 0; i < rows; i++) {
        int64_t n = 0;
#define MARK(j)                                                                                                        \
    do {                                                                                                               \
        int32_t j_ = (j);                                                                                              \
        if (j_ >= 0 && j_ < cols && mark[j_] != i) {                                                                   \
            mark[j_] = i;                                                                                              \
            row[n++] = j_;                                                                                             \
        }                                                                                                              \
    } while (0)
        for (int k = 0; k < plan.nterms; k++) {
            if (plan.row[k] >= 0) {
                const loom_tensor_abi *a = &ds->t[prog->exprs[plan.row[k]].tensor];
                for (int32_t q = a->pos[1][i]; q < a->pos[1][i + 1]; q++)
                    MARK(a->crd[1][q]);
            } else {
                const loom_tensor_abi *a = &ds->t[prog->exprs[plan.left[k]].tensor];
                const loom_tensor_abi *b = &ds->t[prog->exprs[plan.right[k]].tensor];
                for (int32_t q = a->pos[1][i]; q < a->pos[1][i + 1]; q++) {
                    int32_t kk = a->crd[1][q];
                    for (int32_t r = b->pos[1][kk]; r < b->pos[1][kk + 1]; r++)
                        MARK(b->crd[1][r]);
                }
            }
        }
#undef MARK
        qsort(row, (size_t)n, sizeof *row, cmp_i32);
        if (nnz + n >= INT32_MAX) {
            free(pos), free(mark), free(row), free(crd);
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, prog->path, T->line, 0,
                                  "assembling %s: more than 2^31 stored entries", T->name);
        }
        if (nnz + n > cap) {
            while (nnz + n > cap)
                cap *= 2;
            int32_t *c2 = realloc(crd, (size_t)cap * sizeof *crd);
            if (!c2) {
                free(pos), free(mark), free(row), free(crd);
                return loom_error_set(err, LOOM_ERR_NOMEM, prog->path, T->line, 0, "assembling %s: out of memory",
                                      T->name);
            }
            crd = c2;
        }
        memcpy(crd + nnz, row, (size_t)n * sizeof *row);
        nnz += n;
        pos[i + 1] = (int32_t)nnz;
    }
    free(mark);
    free(row);
    *pos_out = pos;
    *crd_out = crd;
    *nnz_out = nnz;
    return LOOM_OK;
}
