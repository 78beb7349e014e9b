/* loom: C99 code generation from LIR (DESIGN.md "Codegen": LIR -> C with
 * OpenMP pragmas: `parallel for`, `simd`, `GCC unroll`).
 *
 * The output is one self-contained C file: it inlines the kernel ABI
 * (kernel_abi.h), exports `loom_kernel_abi_version` and the entry point
 *     int <entry>(loom_tensor_abi *loom_t);
 * which returns 0, or 1 when a temporary could not be allocated.  It needs
 * only a C99 compiler, <math.h> and (for parallel loops) OpenMP.
 */
#ifndef LOOM_CODEGEN_H
#define LOOM_CODEGEN_H

#include "../../dsl/ir/error.h"
#include "lir.h"

/* Generate the C file for f with entry point `entry` (NULL: "loom_kernel").
 * *out is malloc'd (caller frees).  Errors: LOOM_ERR_NOMEM. */
loom_status loom_codegen_c(const lir_func *f, const char *entry, char **out, loom_error *err);

/* Several kernels in one C file (one prelude, entries[k] for fs[k]; entries
 * NULL: all "loom_kernel", which only makes sense for n == 1), so that many
 * candidates compile in one compiler run.  Errors: LOOM_ERR_INVALID (n < 1),
 * LOOM_ERR_NOMEM. */
loom_status loom_codegen_c_batch(const lir_func *const *fs, int n, const char *const *entries, char **out,
                                 loom_error *err);

/* The text of runtime/lower/kernel_abi.h as generated files inline it. */
extern const char loom_kernel_abi_text[];

#endif
