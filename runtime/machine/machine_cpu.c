/* The CPU this process runs on as a target (machine.h): its fingerprint and
 * limits, read at call time.  Moved out of runtime/target/target_open.c so
 * that the lowering and the measurer, below the target handle, can fall back
 * to the CPU's limits. */
#include "machine.h"
#include "../../dsl/ir/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void loom_target_cpu_fingerprint(const char *cc, const char *cflags, char *buf, size_t n)
{
    uint64_t h = LOOM_FNV_OFFSET;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10)) {
                h = loom_fnv1a(h, line, strlen(line));
                break;
            }
        fclose(f);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    h = loom_fnv1a(h, &cores, sizeof cores);
    const char *env_cc = getenv("LOOM_CC"), *isa = getenv("LOOM_HOST_ISA");
    if (!cc)
        cc = env_cc ? env_cc : "cc";
    h = loom_fnv1a(h, cc, strlen(cc));
    if (cflags)
        h = loom_fnv1a(h, cflags, strlen(cflags));
    else if (isa && *isa) /* its kernels are built for that ISA */
        h = loom_fnv1a(h, isa, strlen(isa));
    snprintf(buf, n, "cpu:%016llx", (unsigned long long)h);
}

loom_limits loom_target_cpu_limits(void) { return loom_limits_host(); /* the CPU target's, detected now */ }

int loom_target_is_cpu(const loom_target *t) { return t && t->kind == LOOM_TARGET_CPU; }
