/* A target's limits (limits.h). */
#include "limits.h"

#include <unistd.h>

loom_limits loom_limits_host(void)
{
    loom_limits l;
    /* at run time: the library is built without -march=native */
    l.vector_registers = 16;
    l.vector_lanes = 4;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        l.vector_lanes = 16;
        l.vector_registers = 32;
    } else if (__builtin_cpu_supports("avx"))
        l.vector_lanes = 8;
#endif
    l.max_vector_factor = 16;
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    l.cores = c > 0 ? (int)c : 1;
    l.max_workspace_bytes = 64 * 1024;
    return l;
}
