/* loom: the reference evaluator.
 *
 * A direct interpreter of the Program over the data set, in double
 * precision, that shares no code with lowering or code generation: it is the
 * oracle every generated kernel is checked against.  It implements the
 * sparse algebra of docs/schedule-language.md "Sparse semantics" (TACO's
 * merge lattices: an unstored entry is a zero; products intersect, sums
 * unite; functions and reductions over a mask see its stored entries):
 * for each statement it enumerates the points of the right-hand side's
 * domain (dsl/ir/domain.h; each union term by driving one sparse operand's
 * stored entries and testing the others for membership), evaluates the
 * right-hand side and reduces into the left-hand side (sum for `=` and `+=`,
 * max for `max=`).  Elements of the left-hand side that no point reaches
 * keep the reduction's identity (0, or -inf for max=).
 *
 * Threads (pthreads): each statement's outermost loop is split between the
 * online cores (at most 16; $LOOM_REFERENCE_THREADS overrides) when its
 * variable indexes the left-hand side, so every left-hand-side element is
 * reduced by one thread in the sequential order: the result is
 * bit-identical whatever the thread count (tests/test_reference.c).  The
 * interpreter takes about 50 ns a point and thread: a 1 x 4096 x 64
 * attention (2.2 x 10^9 points) took 105 s on one thread (2026-11-28,
 * AMD Zen 5 class), which is why campaigns cache the result
 * (loom_reference_run_cached).
 */
#ifndef LOOM_REFERENCE_H
#define LOOM_REFERENCE_H

#include "../data/dataset.h"

typedef struct loom_reference {
    int ntensors;
    /* Values of every tensor in double: inputs copied from the data set,
     * outputs and temporaries computed.  vals[t] has nvals[t] entries, laid
     * out like the data set's (dense row-major; sparse in position order of
     * its pattern); NULL for pattern tensors (causal/band). */
    double *vals[LOOM_MAX_TENSORS];
    int64_t nvals[LOOM_MAX_TENSORS];
    double flops;              /* FLOPs of the program on this data:
                                  sum over statements of (iteration points)
                                  x (loom_expr_flops(rhs) + 1 if the statement
                                  reduces), counted from the actual nonzeros */
    double stmt_flops[LOOM_MAX_STMTS];
    int64_t stmt_points[LOOM_MAX_STMTS];  /* iteration points per statement */
    int64_t max_reduction_len;  /* largest number of points reduced into one
                                   element, over all statements */
} loom_reference;

/* Evaluate the whole program on ds.  On success *out is owned by the caller
 * (loom_reference_free).  Errors: LOOM_ERR_NOMEM; LOOM_ERR_UNSUPPORTED if a
 * tensor's format cannot be read (none today), if a statement's domain is
 * too complex (loom_expr_domain), or if it reaches a point its sparse
 * left-hand side does not store. */
loom_status loom_reference_run(const loom_dataset *ds, loom_reference **out, loom_error *err);

/* The interpreter's version: bump it with any change of what
 * loom_reference_run computes, so that cached references (below) of the
 * old interpreter are not read. */
#define LOOM_REFERENCE_VERSION 1

/* loom_reference_run with a disk cache: the outputs' values, the FLOP and
 * point counts and the reduction length of this program on these inputs are
 * read from cache_dir (NULL or "": loom_cache_dir("ref"), dsl/ir/util.h),
 * keyed by the workload hash, the sizes, every input's data and
 * LOOM_REFERENCE_VERSION, when a file there reads back exactly (checksummed);
 * otherwise the interpreter runs and its result is written there (temporary
 * file and rename; a cache that cannot be written is only a miss).  *hit
 * (may be NULL) says which.  A reference read from the cache has the
 * inputs' values (copied from ds) and the outputs', and no values of the
 * temporaries (vals NULL, nvals kept): enough for loom_reference_check and
 * the runners, not for code that reads temporaries.  The kernels of a
 * campaign are checked against the same numbers either way.  Errors: those
 * of loom_reference_run. */
loom_status loom_reference_run_cached(const loom_dataset *ds, const char *cache_dir, int *hit, loom_reference **out,
                                      loom_error *err);

void loom_reference_free(loom_reference *ref);

/* Result of comparing a kernel's outputs with the reference. */
typedef struct loom_check {
    int correct;             /* 1 when every output element is within tol */
    double max_rel_err;      /* max over outputs and elements of
                                |out - ref| / max(|ref|, 1e-3 * max|ref|, 0.1 * rms(ref), 1e-30)
                                over the finite reference values of that output
                                (near-zero results come from cancellation, whose
                                fp32 error scales with the output's magnitude);
                                +inf/-inf match only themselves; NaN never matches */
    double tol;              /* tolerance used: min(1e-2, 1e-5 + 4 * 2^-24 * L)
                                with L = max_reduction_len (fp32 summation error
                                grows at most linearly with the reduction length) */
    int worst_tensor;        /* tensor holding the worst element (-1 if none) */
    int64_t worst_index;     /* its index in vals */
    double worst_got, worst_want;
} loom_check;

/* Compare the float outputs in ds (tensors with role OUTPUT) with ref.
 * Never fails; fills *out. */
void loom_reference_check(const loom_dataset *ds, const loom_reference *ref, loom_check *out);

#endif
