/* Links two kernel libraries shipped by `loom replay --emit-lib` (an SpMM
 * and an SDDMM tuned on data/cora500_adj.mtx, so N = K = L = 500, F = 16,
 * D = 8) and checks both against plain loops written here, on a random
 * pattern (patterns come from the data; only the sizes are fixed); then
 * that a wrong size, in either entry, and a NULL array are refused.
 * Prints "OK" and exits 0, or prints what is wrong and exits 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sddmm_t.h"
#include "spmm_t.h"

enum { N = 500, F = 16, D = 8, PER_ROW = 6 };

static unsigned long long rng = 88172645463325252ULL;
static unsigned next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}
static float uniform(void) { return (float)(next() % 20001) / 10000.0f - 1.0f; }

static int bad(const char *what, double err)
{
    printf("%s (max relative error %g)\n", what, err);
    return 1;
}

int main(void)
{
    static int32_t pos[N + 1], crd[N * PER_ROW];
    static float vals[N * PER_ROW], B[N * F], C[N * F], C2[N * F], Q[N * D], K[N * D], S[N * PER_ROW];
    static char used[N];
    int32_t nnz = 0;
    for (int i = 0; i < N; i++) { /* distinct sorted columns per row; some rows empty */
        memset(used, 0, sizeof used);
        int want = (int)(next() % (PER_ROW + 1));
        for (int k = 0; k < want; k++)
            used[next() % N] = 1;
        pos[i] = nnz;
        for (int j = 0; j < N; j++)
            if (used[j]) {
                crd[nnz] = j;
                vals[nnz++] = uniform();
            }
    }
    pos[N] = nnz;
    for (int k = 0; k < N * F; k++)
        B[k] = uniform();
    for (int k = 0; k < N * D; k++) {
        Q[k] = uniform();
        K[k] = uniform();
    }
    memset(C, 0x7f, sizeof C); /* the kernel must overwrite every entry */

    int rc = spmm_t(F, N, N, pos, crd, vals, B, C);
    if (rc)
        return printf("spmm_t returned %d\n", rc), 1;
    double err = 0;
    for (int i = 0; i < N; i++)
        for (int f = 0; f < F; f++) {
            double ref = 0;
            for (int p = pos[i]; p < pos[i + 1]; p++)
                ref += (double)vals[p] * B[crd[p] * F + f];
            double e = fabs(C[i * F + f] - ref) / (fabs(ref) > 1 ? fabs(ref) : 1);
            err = e > err ? e : err;
        }
    if (!(err < 1e-5))
        return bad("spmm_t differs from the reference", err);

    rc = sddmm_t(D, N, N, pos, crd, vals, Q, K, S);
    if (rc)
        return printf("sddmm_t returned %d\n", rc), 1;
    err = 0;
    for (int i = 0; i < N; i++)
        for (int p = pos[i]; p < pos[i + 1]; p++) {
            double ref = 0;
            for (int d = 0; d < D; d++)
                ref += (double)Q[i * D + d] * K[crd[p] * D + d];
            ref *= vals[p];
            double e = fabs(S[p] - ref) / (fabs(ref) > 1 ? fabs(ref) : 1);
            err = e > err ? e : err;
        }
    if (!(err < 1e-5))
        return bad("sddmm_t differs from the reference", err);

    /* the generic entry, same result */
    loom_tensor_abi t[spmm_t_NTENSORS];
    memset(t, 0, sizeof t);
    for (int k = 0; k < 3; k++)
        t[k].order = 2;
    t[0].dims[0] = t[0].dims[1] = N;
    t[0].pos[1] = pos;
    t[0].crd[1] = crd;
    t[0].vals = vals;
    t[0].nnz = nnz;
    t[1].dims[0] = N, t[1].dims[1] = F, t[1].vals = B, t[1].nnz = N * F;
    t[2].dims[0] = N, t[2].dims[1] = F, t[2].vals = C2, t[2].nnz = N * F;
    if ((rc = spmm_t_abi(t)) != 0)
        return printf("spmm_t_abi returned %d\n", rc), 1;
    if (memcmp(C, C2, sizeof C))
        return printf("spmm_t_abi and spmm_t differ\n"), 1;

    /* sizes are fixed: F = 8 on the F = 16 kernel is refused, not read out of bounds */
    if ((rc = spmm_t(F / 2, N, N, pos, crd, vals, B, C)) != 2)
        return printf("spmm_t with F = %d returned %d, expected 2\n", F / 2, rc), 1;
    t[1].dims[1] = t[2].dims[1] = F / 2;
    if ((rc = spmm_t_abi(t)) != 2)
        return printf("spmm_t_abi with F = %d returned %d, expected 2\n", F / 2, rc), 1;
    if ((rc = sddmm_t(D, N + 1, N, pos, crd, vals, Q, K, S)) != 2)
        return printf("sddmm_t with N + 1 returned %d, expected 2\n", rc), 1;
    if ((rc = sddmm_t(D, N, N, pos, NULL, vals, Q, K, S)) != 3)
        return printf("sddmm_t with a NULL crd returned %d, expected 3\n", rc), 1;
    if (strncmp(spmm_t_signature, "{\"name\": \"spmm_t\"", 17) || !strstr(sddmm_t_signature, "\"S\""))
        return printf("signatures: %.60s / %.60s\n", spmm_t_signature, sddmm_t_signature), 1;
    printf("OK\n");
    return 0;
}
