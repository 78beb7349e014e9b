/* A square Matrix Market pattern as CSR for the standalone bench programs
 * (prefetch_distance.c, workspace_round_trip.c; no loom). */
#ifndef LOOM_BENCH_MTX_CSR_H
#define LOOM_BENCH_MTX_CSR_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int n, nnz;
    int *pos, *crd;
} csr;

/* A's pattern from a Matrix Market file (symmetric: both triangles), rows
 * sorted by column.  0 when the file is absent or not a coordinate matrix. */
static inline int read_mtx(const char *path, csr *a)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    char line[512];
    int sym = 0, r = 0, c = 0, e = 0;
    if (!fgets(line, sizeof line, fp) || !strstr(line, "coordinate")) {
        fclose(fp);
        return 0;
    }
    sym = strstr(line, "symmetric") != NULL;
    while (fgets(line, sizeof line, fp) && line[0] == '%')
        ;
    if (sscanf(line, "%d %d %d", &r, &c, &e) != 3 || r != c) {
        fclose(fp);
        return 0;
    }
    int *I = malloc(sizeof(int) * 2 * (size_t)e), *J = malloc(sizeof(int) * 2 * (size_t)e), m = 0;
    for (int k = 0; k < e && fgets(line, sizeof line, fp); k++) {
        int i, j;
        if (sscanf(line, "%d %d", &i, &j) != 2)
            continue;
        I[m] = i - 1, J[m++] = j - 1;
        if (sym && i != j)
            I[m] = j - 1, J[m++] = i - 1;
    }
    fclose(fp);
    a->n = r, a->nnz = m;
    a->pos = calloc((size_t)r + 1, sizeof(int));
    a->crd = malloc(sizeof(int) * (size_t)m);
    int *fill = calloc((size_t)r, sizeof(int));
    for (int k = 0; k < m; k++)
        a->pos[I[k] + 1]++;
    for (int i = 0; i < r; i++)
        a->pos[i + 1] += a->pos[i];
    for (int k = 0; k < m; k++)
        a->crd[a->pos[I[k]] + fill[I[k]]++] = J[k];
    for (int i = 0; i < r; i++) /* insertion sort of each row: rows are short */
        for (int p = a->pos[i] + 1; p < a->pos[i + 1]; p++)
            for (int q = p; q > a->pos[i] && a->crd[q - 1] > a->crd[q]; q--) {
                int t = a->crd[q];
                a->crd[q] = a->crd[q - 1], a->crd[q - 1] = t;
            }
    free(I), free(J), free(fill);
    return 1;
}

#endif
