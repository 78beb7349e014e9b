/* loom: a target's limits -- what the design space and the validator need
 * to know of the machine a schedule is for (DESIGN.md "The validator").
 * The host's come from loom_limits_host, a simulated target's from
 * loom_target_limits (runtime/machine/machine.h); modules read them through their
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
    int vector_registers;   /* architectural vector registers (32 with AVX-512,
                               16 with AVX/AVX2 and SSE); 0: not known, read as
                               loom_limits_registers says */
    int fma;                /* 1: fused multiply-add in the vector unit */
    int64_t llc_bytes;      /* bytes of the last-level cache, whole chip; 0: not
                               known (the default then never streams an output) */
} loom_limits;

/* Limits of the machine loom runs on, detected when called (not when libloom
 * was compiled: it is built without -march): with GCC's
 * __builtin_cpu_supports (cpuid), avx512f -> 16 lanes and 32 vector
 * registers; avx or avx2 -> 8 lanes, 16 registers; else 4 lanes, 16
 * registers (SSE's xmm0-15 on x86-64); fma from "fma" or "avx512f"
 * (Intel SDM vol. 1, 15.1 and 14.1: AVX-512 has zmm0-31, AVX ymm0-15).
 * Other architectures: 4 lanes, 16 registers, fma 0.  max_vector_factor
 * 16; cores from sysconf; workspaces up to 64 KiB (a local array on a
 * thread's stack); llc_bytes the highest cache level's size from
 * /sys/devices/system/cpu/cpu0/cache (Linux), else glibc's sysconf, else 0.  LOOM_HOST_ISA=avx512|avx2|sse (an environment variable)
 * forces the vector fields, e.g. to test a narrower machine's shapes. */
loom_limits loom_limits_host(void);

/* The host's ISA as the limits above see it: "AVX-512", "AVX2", "AVX",
 * "SSE" (a static string). */
const char *loom_limits_host_isa(void);

/* The vector registers of l: l->vector_registers when > 0, else 32 for
 * 16 lanes or more and 16 below (limits filled before the field existed). */
int loom_limits_registers(const loom_limits *l);

/* A register tile: `rows` rows of `width` fp32 accumulators each (a BR x
 * BC score block, or BR rows of an output slice), updated by an FMA per
 * accumulator vector from one loaded operand row (width floats, shared by
 * the rows) and one broadcast value per row.  It fits l's register file
 * when rows x ceil(width / lanes) accumulators + ceil(width / lanes)
 * operand vectors + 1 broadcast <= loom_limits_registers(l) (the
 * accounting of a BLAS micro-kernel: Low et al., "Analytical modeling is
 * enough for high-performance BLIS", TOMS 2016, section 4).  When it does
 * not, the tile is cut: *chunk = the widest divisor of width that is a
 * multiple of min(lanes, width) and fits with all rows, else one vector
 * (min(lanes, width), or width when no multiple divides it) and *row_group
 * = the largest divisor of rows that fits with it (at least 1).  Without a
 * cut *row_group = rows, *chunk = width.  Returns 1 when the tile was cut,
 * 0 when it fits whole; rows, width >= 1. */
int loom_register_tile(const loom_limits *l, int64_t rows, int64_t width, int64_t *row_group, int64_t *chunk);

/* Accumulator vectors + operand vectors + 1 of a rows x width tile on l. */
int64_t loom_register_tile_cost(const loom_limits *l, int64_t rows, int64_t width);

#endif
