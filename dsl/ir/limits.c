/* A target's limits (limits.h). */
#include "limits.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ISA_SSE, ISA_AVX, ISA_AVX2, ISA_AVX512 };

static int host_isa(int *fma)
{
    const char *force = getenv("LOOM_HOST_ISA");
    if (force && *force) {
        *fma = strcmp(force, "sse") != 0;
        if (!strcmp(force, "avx512"))
            return ISA_AVX512;
        if (!strcmp(force, "avx2"))
            return ISA_AVX2;
        if (!strcmp(force, "sse"))
            return ISA_SSE;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    *fma = __builtin_cpu_supports("fma") || __builtin_cpu_supports("avx512f");
    if (__builtin_cpu_supports("avx512f"))
        return ISA_AVX512;
    if (__builtin_cpu_supports("avx2"))
        return ISA_AVX2;
    if (__builtin_cpu_supports("avx"))
        return ISA_AVX;
#else
    *fma = 0;
#endif
    return ISA_SSE;
}

/* The size of the highest cache level, as Linux reports it in
 * /sys/devices/system/cpu/cpu0/cache/indexN/{level,size} (what lscpu
 * reads); else glibc's sysconf (read from cpuid, which a virtual machine
 * may report for the whole host: 320 MiB on a 32 MiB guest); else 0. */
static int64_t host_llc_bytes(void)
{
    int64_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 8; i++) {
        char path[96];
        int level = 0;
        long long size = 0;
        char unit = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int ok = fscanf(f, "%d", &level) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!ok || !(f = fopen(path, "r")))
            continue;
        ok = fscanf(f, "%lld%c", &size, &unit) >= 1;
        fclose(f);
        if (!ok || size <= 0)
            continue;
        int64_t bytes = (int64_t)size * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1);
        if (level > best_level || (level == best_level && bytes > best)) {
            best_level = level;
            best = bytes;
        }
    }
    if (best > 0)
        return best;
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0)
        llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return llc > 0 ? llc : 0;
}

/* host_llc_bytes, read once per process: loom_limits_host is called on hot
 * paths (each lowering of a fused chain, each build, each validation
 * without limits), and the cache does not change while loom runs. */
static int64_t llc_once;
static pthread_once_t llc_flag = PTHREAD_ONCE_INIT;
static void read_llc(void) { llc_once = host_llc_bytes(); }

loom_limits loom_limits_host(void)
{
    loom_limits l;
    memset(&l, 0, sizeof l);
    int fma = 0, isa = host_isa(&fma);
    l.vector_lanes = isa == ISA_AVX512 ? 16 : isa == ISA_SSE ? 4 : 8;
    l.vector_registers = isa == ISA_AVX512 ? 32 : 16;
    l.fma = fma;
    l.max_vector_factor = 16;
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    l.cores = c > 0 ? (int)c : 1;
    l.max_workspace_bytes = 64 * 1024;
    pthread_once(&llc_flag, read_llc);
    l.llc_bytes = llc_once;
    return l;
}

const char *loom_limits_host_isa(void)
{
    int fma;
    static const char *const names[] = {"SSE", "AVX", "AVX2", "AVX-512"};
    return names[host_isa(&fma)];
}

int loom_limits_registers(const loom_limits *l)
{
    if (l->vector_registers > 0)
        return l->vector_registers;
    return l->vector_lanes >= 16 ? 32 : 16;
}

int64_t loom_register_tile_cost(const loom_limits *l, int64_t rows, int64_t width)
{
    int64_t lanes = l->vector_lanes > 0 ? l->vector_lanes : 1;
    int64_t nv = (width + lanes - 1) / lanes;
    return rows * nv + nv + 1;
}

int loom_register_tile(const loom_limits *l, int64_t rows, int64_t width, int64_t *row_group, int64_t *chunk)
{
    int64_t regs = loom_limits_registers(l);
    int64_t lanes = l->vector_lanes > 0 ? l->vector_lanes : 1;
    *row_group = rows;
    *chunk = width;
    if (loom_register_tile_cost(l, rows, width) <= regs)
        return 0;
    int64_t unit = lanes < width ? lanes : width;
    if (width % unit)
        unit = width;
    /* the widest chunk that fits with every row */
    for (int64_t c = width - unit; c >= unit; c -= unit)
        if (width % c == 0 && loom_register_tile_cost(l, rows, c) <= regs) {
            *chunk = c;
            return 1;
        }
    *chunk = unit;
    for (int64_t g = rows; g >= 1; g--)
        if (rows % g == 0 && (loom_register_tile_cost(l, g, unit) <= regs || g == 1)) {
            *row_group = g;
            break;
        }
    return 1;
}
