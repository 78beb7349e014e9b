/* Which OpenBLAS kernels a benchmark's peer runs (bench/, header only: it
 * calls OpenBLAS's openblas_get_corename, so only the benches that link
 * OpenBLAS include it). */
#ifndef LOOM_BENCH_OPENBLAS_CORE_H
#define LOOM_BENCH_OPENBLAS_CORE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

char *openblas_get_corename(void);

/* Call first in main().  Debian's OpenBLAS is built DYNAMIC_ARCH: it picks
 * its kernels by the CPU when the library loads, reading
 * OPENBLAS_CORETYPE first.  Two cases make it pick kernels that do not
 * stand for this host, and this sets the core type and runs the program
 * again (execv of /proc/self/exe, argv unchanged):
 *  - LOOM_HOST_ISA=avx2 (or sse): loom's kernels are built without
 *    AVX-512 (runtime/measure/build.h), so OpenBLAS is held to the same
 *    ISA: Haswell (Nehalem).
 *  - a CPU OpenBLAS does not know: 0.3.21 falls back to its generic
 *    Prescott (SSE3) kernels on an Emerald Rapids Xeon (family 6 model
 *    207), a peer several times weaker than the host.  When the detected
 *    core is one of those pre-AVX2 names and the CPU has AVX-512 (F, VL,
 *    BW, DQ) it gets SkylakeX, with AVX2 and FMA Haswell.
 * An OPENBLAS_CORETYPE already set is kept (a benchmark's own command
 * unsets the environment's, docs/README of bench/).  On return,
 * loom_bench_openblas_note() says what was chosen and why.  Nothing
 * happens off x86-64. */
static inline void loom_bench_openblas_core(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE"))
        return;
    const char *want = NULL, *isa = getenv("LOOM_HOST_ISA");
    if (isa && !strcmp(isa, "avx2"))
        want = "Haswell";
    else if (isa && !strcmp(isa, "sse"))
        want = "Nehalem";
#if defined(__x86_64__)
    else {
        static const char *const generic[] = {"Unknown", "Katmai",  "Coppermine", "Northwood", "Prescott", "Banias",
                                              "Atom",    "Core2",   "Penryn",     "Dunnington", "Nehalem",  NULL};
        const char *core = openblas_get_corename();
        int is_generic = 0;
        for (int i = 0; core && generic[i]; i++)
            is_generic |= !strcasecmp(core, generic[i]);
        __builtin_cpu_init();
        if (is_generic && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
            want = "SkylakeX";
        else if (is_generic && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            want = "Haswell";
        if (want)
            setenv("LOOM_BENCH_OPENBLAS_DETECTED", core, 1);
    }
#endif
    if (!want)
        return;
    setenv("OPENBLAS_CORETYPE", want, 1);
    setenv("LOOM_BENCH_OPENBLAS_SET", want, 1);
    fflush(NULL);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "%s: cannot run again with OPENBLAS_CORETYPE=%s; OpenBLAS keeps its own choice\n", argv[0], want);
    unsetenv("LOOM_BENCH_OPENBLAS_SET");
}

/* What loom_bench_openblas_core chose, for a benchmark's header line:
 * "SkylakeX (set by the bench: OpenBLAS detected Prescott on this host)",
 * or the core OpenBLAS picked itself.  A static buffer. */
static inline const char *loom_bench_openblas_note(void)
{
    static char buf[256];
    const char *set = getenv("LOOM_BENCH_OPENBLAS_SET"), *det = getenv("LOOM_BENCH_OPENBLAS_DETECTED");
    if (set && det)
        snprintf(buf, sizeof buf, "%s kernels (OPENBLAS_CORETYPE set by the bench: OpenBLAS detected %s on this host)",
                 openblas_get_corename(), det);
    else if (set)
        snprintf(buf, sizeof buf, "%s kernels (OPENBLAS_CORETYPE set by the bench for LOOM_HOST_ISA)",
                 openblas_get_corename());
    else
        snprintf(buf, sizeof buf, "%s kernels", openblas_get_corename());
    return buf;
}

#endif
