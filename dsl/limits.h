/* loom: a target's limits -- what the design space and the validator need
 * to know of the machine a schedule is for (DESIGN.md "The validator").
 * The host's come from loom_limits_host, a simulated target's from
 * loom_target_limits (runtime/target.h); modules read them through their
 * context (modules/module.h loom_module_ctx), the validator through its
 * argument (traces/validate.h). */
#ifndef LOOM_LIMITS_H
#define LOOM_LIMITS_H

#include <stdint.h>

typedef struct loom_limits {
    int vector_lanes;       /* fp32 lanes of the target's vectors (16 for AVX-512) */
    int max_vector_factor;  /* a vectorized loop may be this many vectors long */
    int cores;              /* threads the target runs */
    int64_t max_workspace_bytes; /* largest CacheWrite workspace (a local array) */
    int vector_registers;   /* architectural vector registers (16 for AVX2, 32 for AVX-512);
                             * 0 in a zero-initialised struct: readers take 16 then */
} loom_limits;

/* Limits of the machine loom runs on: 16 lanes when the CPU has AVX-512F,
 * 8 with AVX, else 4 (asked at run time, __builtin_cpu_supports); max_vector_factor 16; cores from sysconf; workspaces
 * up to 64 KiB (a local array on a thread's stack); 32 vector registers
 * with AVX-512 (zmm0-31), else 16 (ymm/xmm0-15: Intel SDM vol. 1, 15.1). */
loom_limits loom_limits_host(void);

#endif
