/* A target's limits (limits.h). */
#include "limits.h"

#include <unistd.h>

loom_limits loom_limits_host(void)
{
    loom_limits l;
    l.vector_registers = 16;
#if defined(__AVX512F__)
    l.vector_lanes = 16;
    l.vector_registers = 32;
#elif defined(__AVX__)
    l.vector_lanes = 8;
#else
    l.vector_lanes = 4;
#endif
    l.max_vector_factor = 16;
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    l.cores = c > 0 ? (int)c : 1;
    l.max_workspace_bytes = 64 * 1024;
    return l;
}
