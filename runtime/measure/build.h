/* loom: compiling generated C and loading it.
 *
 * Generated kernels are compiled with the system C compiler
 * (`cc -O3 -march=native -fopenmp -fPIC -shared`, DESIGN.md "Runtime") into
 * shared objects kept in a cache directory named by the 64-bit FNV-1a hash
 * of (source text, compiler command line), so the same kernel is compiled
 * once.  Cache writes go to a temporary name and are renamed into place, so
 * concurrent builds and a killed process never leave a torn object.
 */
#ifndef LOOM_BUILD_H
#define LOOM_BUILD_H

#include <stdint.h>

#include "../../dsl/ir/error.h"
#include "../../dsl/ir/util.h" /* loom_fnv1a, used with the build cache */
#include "../lower/kernel_abi.h"

typedef struct loom_build_opts {
    const char *cc;         /* compiler; NULL: $LOOM_CC, else "cc" */
    const char *cflags;     /* NULL: loom_build_default_cflags(the CPU target's vector bits,
                               loom_target_cpu_limits: LOOM_HOST_ISA=avx2 gives 256) */
    const char *cache_dir;  /* NULL: loom_cache_dir(NULL) (dsl/ir/util.h): $LOOM_CACHE, else
                               "$HOME/.cache/loom", else "/tmp/loom-cache" */
    int keep_source;        /* 1: keep the .c file beside the object */
} loom_build_opts;

typedef struct loom_module {
    void *handle;           /* dlopen handle */
    loom_kernel_fn fn;      /* the entry point */
    char so_path[1024];     /* the shared object in the cache */
    uint64_t hash;          /* cache key */
    int cached;             /* 1 if no compile was needed */
    double compile_seconds; /* wall time of the compiler run (0 if cached) */
} loom_module;

/* The compiler kernels are built with when loom_build_opts.cc is NULL:
 * $LOOM_CC when set and not empty, else "cc" (a static string or the
 * environment's; not to be freed). */
const char *loom_build_cc(void);

/* The compiler flags kernels are built with on a machine whose vector unit
 * is vector_bits wide (a target's "vector_bits"; the host's from
 * loom_limits_host, which LOOM_HOST_ISA overrides): "-O3 -march=native
 * -ffp-contract=fast -fno-math-errno -fopenmp -fPIC -shared -std=c11", and
 * on x86-64 with vector_bits >= 512 also -mprefer-vector-width=512 (GCC's
 * tuning for recent Intel cores prefers 256-bit vectors even with AVX-512;
 * measured: SpMM went from 0.86x to parity with Eigen's 512-bit kernel);
 * 256..511 adds -mno-avx512f (an AVX2 kernel, also on an AVX-512 host, so
 * LOOM_HOST_ISA=avx2 measures what an AVX2 machine would run), below 256
 * -mno-avx (SSE only); below 512 also -mmemset-strategy and
 * -mmemcpy-strategy, so that fills and copies of a known size up to 2 KiB are
 * loops of vector stores (GCC 12 otherwise fills a 128-byte workspace with
 * `rep stosq`: runtime/measure/build.c, issue 29), and for 256..511
 * -mmove-max=256 -mstore-max=256, so those loops move 32 bytes at a time,
 * not 16 (Cora SpMM F=32 6% faster at the median).  -ffp-contract=fast lets
 * -std=c11 fuse a*b+c into an FMA; -fno-math-errno lets GCC inline sqrtf and
 * use libmvec's vector expf.
 * Returns a static string (not to be freed); never NULL. */
const char *loom_build_default_cflags(int vector_bits);

/* Compile `source` (a complete C file) unless cached, dlopen it and look up
 * `entry`.  The compiler's diagnostics (first 4 KiB) go into err->msg on
 * failure.  Errors: LOOM_ERR_BUILD (compiler failed or was killed: the
 * message has its exit status and output), LOOM_ERR_IO (cache directory not
 * writable), LOOM_ERR_RUN (dlopen/dlsym failed, with dlerror()),
 * LOOM_ERR_NOMEM.  opts may be NULL for the defaults.  On success *out is
 * filled; release with loom_module_close. */
loom_status loom_build(const char *source, const char *entry, const loom_build_opts *opts,
                       loom_module *out, loom_error *err);

void loom_module_close(loom_module *m);

#endif
