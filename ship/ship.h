/* loom: shipping a tuned kernel as a named C library (issue 17).
 *
 * A replayed schedule, lowered to LIR, becomes three files in a directory:
 *
 *   NAME.c       the generated kernel (runtime/lower/codegen.h, entry point
 *                renamed NAME__kernel and hidden) followed by two exported
 *                entry points and a signature string;
 *   NAME.h       the header: the entry points, one argument per array of
 *                every declared tensor in declaration order, what each array
 *                holds (shape, format, read or written), the sizes the kernel
 *                is specialised to, the temporaries it allocates, its return
 *                codes, thread-safety and the OpenMP dependency;
 *   libNAME.so   NAME.c built with `cc -O3 -march=native -fopenmp -fPIC
 *                -shared -fvisibility=hidden` (only the entry points and
 *                the signature are exported, so any number of shipped
 *                kernels link into one program).
 *
 * The entry points (NAME is the library's name):
 *
 *   int NAME(<sizes>, <arrays>);          typed: every size of the workload
 *       (int64_t, in the program's size order), then per declared tensor
 *       its arrays (compressed levels: pos, crd; then vals unless the tensor
 *       is a pattern); range-pattern inputs (causal, band) take no array
 *       (the entry builds them); temporaries take none (the kernel
 *       allocates them).
 *   int NAME_abi(loom_tensor_abi *t);     the generic ABI of
 *       runtime/lower/kernel_abi.h, t[] in the program's tensor table order
 *       (temporaries included, their dims filled).
 *   extern const char NAME_signature[];   the same facts as JSON (what the
 *       Python package reads: tensors, roles, formats, dims, levels).
 *
 * Size checks: the schedule was tuned for, and is specialised to, the sizes
 * the program was bound to (split factors and trip counts such as `f < 64`
 * are baked in).  Every dimension is therefore fixed: both entries return
 * LOOM_SHIP_ESIZE when a size (typed) or a tensor's order or dimension (ABI)
 * differs from the tuned one; only the sparse patterns (pos, crd and the
 * number of stored entries) come from the data.
 */
#ifndef LOOM_SHIP_H
#define LOOM_SHIP_H

#include "../dsl/ir/error.h"
#include "../runtime/lower/lir.h"

/* Return codes of a shipped kernel's entry points. */
#define LOOM_SHIP_OK 0
#define LOOM_SHIP_ENOMEM 1 /* a temporary or a pattern could not be allocated */
#define LOOM_SHIP_ESIZE 2  /* a size differs from the one the kernel was tuned for */
#define LOOM_SHIP_ENULL 3  /* a required array is NULL (or t is NULL) */

/* 1 when `name` can name a shipped kernel: a C identifier of 1..40
 * characters, not a C keyword, not starting with "loom_". */
int loom_ship_name_ok(const char *name);

/* The three texts of a shipped kernel for f (lowered from a schedule of a
 * bound program): the C file, the header and the signature JSON (the same
 * string the C file exports).  `origin` is a one-line comment put at the top
 * of both files (where the schedule came from; may be NULL).  Each *out is
 * malloc'd (the caller frees it).  Errors: LOOM_ERR_INVALID (a bad name, an
 * unbound size), LOOM_ERR_NOMEM. */
loom_status loom_ship_sources(const lir_func *f, const char *name, const char *origin, char **c_src, char **h_src,
                              char **sig_json, loom_error *err);

/* Write DIR/NAME.c and DIR/NAME.h and build DIR/libNAME.so (compiler: $CC,
 * else cc; the build is skipped when build_so is 0).  DIR must exist.
 * Errors: those of loom_ship_sources, LOOM_ERR_IO (a file cannot be
 * written), LOOM_ERR_BUILD (the compiler failed: its first output lines are
 * in the message). */
loom_status loom_ship_write(const lir_func *f, const char *name, const char *dir, const char *origin, int build_so,
                            loom_error *err);

/* Write text to path atomically (a temporary file renamed over it).
 * Errors: LOOM_ERR_IO (the message has strerror). */
loom_status loom_ship_write_text(const char *path, const char *text, loom_error *err);

/* Build the shared library so_path from the C files c_paths[0..n_c-1]
 * (1..256 of them) with the flags of loom_ship_write (compiler: $CC, else
 * cc; the directory of each C file is not added to the include path: the
 * files include each other's headers by the path they are given).  Errors:
 * LOOM_ERR_INVALID (n_c out of range), LOOM_ERR_BUILD (the compiler failed:
 * its first output lines are in the message). */
loom_status loom_ship_build(const char *const *c_paths, int n_c, const char *so_path, loom_error *err);

/* The compiler flags of loom_ship_build, without the compiler, files and
 * -lm: exactly the flags loom measures kernels with
 * (runtime/measure/build.h loom_build_default_cflags for the CPU target's
 * vector width, honouring LOOM_HOST_ISA) plus -fvisibility=hidden, so a
 * shipped kernel is the kernel that was measured (before 2026-11-28 the
 * shipped build lacked -mprefer-vector-width=512 and -fno-split-loops).
 * A static string; not owned by the caller. */
const char *loom_ship_cflags(void);

#endif
