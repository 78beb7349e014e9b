/* loom kernel ABI: how generated kernels receive their tensors.
 *
 * This header is self-contained (C99, no loom includes) because generated C
 * files and shipped schedules include it.  A kernel is
 *
 *     int loom_kernel(loom_tensor_abi *t);
 *
 * where t[] has one entry per tensor of the workload, in the order of the
 * program's tensor table (declared tensors in declaration order, then
 * temporaries in order of first assignment).  It returns 0 on success and a
 * non-zero value when it could not run (e.g. a temporary could not be
 * allocated).
 *
 * Storage (TACO's level formats):
 *  - dims[d] is the size of dimension d (logical, in the tensor's own
 *    dimension order).
 *  - Per *level* l (storage order; the level stores dimension mode[l] of the
 *    format), pos[l] and crd[l]:
 *      dense level:      pos[l] = crd[l] = NULL;  position = parent * dims + i
 *      compressed level: pos[l] has (parent positions + 1) entries, the
 *                        children of parent position q are crd[l][pos[l][q]
 *                        .. pos[l][q+1]-1], sorted ascending, no duplicates
 *      range level:      (causal, band) pos[l] is materialised the same way
 *                        (so position = pos[l][q] + (j - lo(q))), and so is
 *                        crd[l], although kernels compute j from the bounds.
 *  - vals: dense tensors: prod(dims) floats, row-major; sparse tensors: one
 *    float per stored entry (nnz of them) in position order; NULL for
 *    pattern tensors (causal, band), whose value is 1 wherever stored.
 *  - nnz: stored entries (sparse), prod(dims) (dense).
 *
 * Temporaries: the kernel allocates their values itself; the harness only
 * fills their dims (and, for sparse temporaries, the pos/crd arrays of the
 * tensor whose pattern they share) and leaves vals NULL.
 *
 * Limits: coordinates and positions are int32, so nnz < 2^31.
 */
#ifndef LOOM_KERNEL_ABI_H
#define LOOM_KERNEL_ABI_H

#include <stdint.h>

#define LOOM_ABI_VERSION 1
#define LOOM_ABI_MAX_ORDER 4

typedef struct loom_tensor_abi {
    int32_t order;
    int32_t pad_;
    int64_t dims[LOOM_ABI_MAX_ORDER];
    int32_t *pos[LOOM_ABI_MAX_ORDER];
    int32_t *crd[LOOM_ABI_MAX_ORDER];
    float *vals;
    int64_t nnz;
} loom_tensor_abi;

typedef int (*loom_kernel_fn)(loom_tensor_abi *t);

/* Every generated kernel file also exports
 *     const int loom_kernel_abi_version = LOOM_ABI_VERSION;
 * so a loader can refuse an object built for another ABI. */

#endif
