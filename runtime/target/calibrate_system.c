/* The figures loom calibrate reads from the compiler and the operating
 * system rather than from a microbenchmark (calibrate.h): what cc tunes for
 * and the model keys that follow from it, and the page size the kernels'
 * buffers are mapped with; and loom__calib_fig, which adds any figure to
 * the target file (calibrate.c's measured ones too). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../measure/build.h"
#include "../measure/measure.h"
#include "calibrate_internal.h"

void loom__calib_fig(figs *g, const char *key, double v, const char *unit, const char *source)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "value", v);
    cJSON_AddStringToObject(o, "unit", unit);
    cJSON_AddStringToObject(o, "source", source);
    cJSON_AddItemToObject(g->obj, key, o);
}

/* What cc tunes kernels for (-march=native picks -mtune), into out ("" when
 * the compiler does not say: not GCC, or it failed). */
static void cc_tune(char *out, size_t n)
{
    out[0] = 0;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%.1024s -march=native -Q --help=target 2>/dev/null", loom_build_cc());
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        const char *k = strstr(line, "-mtune=");
        if (!k || out[0])
            continue;
        k += strlen("-mtune=");
        k += strspn(k, " \t");
        size_t len = strcspn(k, " \t\r\n");
        snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), k);
    }
    pclose(p);
}

/* shared_load_copies (machine.h; runtime/sim/sim.h "Unrolled copies"): GCC 12
 * tuning for AMD Zen (-mtune=znver1..4) folds a vector load that the copies
 * of a completely unrolled loop share into each copy's FMA unless there are
 * at least 3 + its vectors copies, the vectors counted up to 2 (the assembly
 * of GEMM micro-kernels of 2..10 rows x 1, 2 or 4 vectors, AVX2 and AVX-512,
 * docs/simulator.md models 13 and 48; machine.h);
 * tuned for Intel cores (icelake-server, sapphirerapids, skylake) it never
 * does.  -mtune=generic (what -march=native picks for a CPU GCC 12 does not
 * know, Emerald Rapids among them) folds it below 4 copies at 1, 2 and 4 zmm
 * alike, and below 3 at 1 and 2 ymm: shared_load_fixed, the threshold not
 * growing with the vectors (docs/simulator.md model 14). */
void loom__calib_map_compiler(loom_target *t, figs *g)
{
    char tune[64], src[320];
    cc_tune(tune, sizeof tune);
    int zen = !strncmp(tune, "znver", 5), generic = !strcmp(tune, "generic") && t->vector_bits >= 256;
    t->shared_load_copies = zen ? 3 : generic ? (t->vector_bits >= 512 ? 4 : 3) : 0;
    t->shared_load_fixed = generic;
    snprintf(src, sizeof src,
             "cc -march=native -Q --help=target: -mtune=%s; a shared vector load is folded into each FMA below "
             "3 + its vectors (up to 2) unrolled copies under GCC's Zen tuning, below 4 (zmm) or 3 (ymm) under its generic "
             "one (shared_load_fixed), else never (0)",
             tune[0] ? tune : "(not reported)");
    loom__calib_fig(g, "shared_load_copies", t->shared_load_copies, "copies", src);
    /* runtime/sim/sim.h "Vectors" and "Cycles" (model 15) */
    t->peel_times = 16;
    loom__calib_fig(g, "peel_times", t->peel_times, "vector iterations",
        "GCC's max-completely-peel-times default (GCC 12 manual, --param): a loop of literal bounds and at most "
        "this many iterations is unrolled completely");
    /* Model 85 (docs/simulator.md): 3, not model 15's 2 */
    t->issue_chain_norm = 3;
    loom__calib_fig(g, "issue_chain_norm", t->issue_chain_norm, "p",
        "not measured: fitted on the re-measured campaign records of Zen 4, both ISAs, two seeds (docs/simulator.md, "
        "model 85) over p = 2, 4 and 6 (Emerald Rapids' records chose 2 under model 15); an FMA chain with 0-12 "
        "independent instructions a link measured on Zen 4 runs at the longer of the chain and the issue, a max");
    /* runtime/sim/sim_machine.h "Streamer" (model 18) */
    t->stream_lines = 8;
    loom__calib_fig(g, "stream_lines", t->stream_lines, "lines",
        "not measured: the L2 streamer runs up to 20 lines ahead within a 4 KiB page (Intel 64 and IA-32 "
        "Architectures Optimization Reference Manual, the L2 streamer); 8 chosen over 1-16 on the re-measured "
        "campaign records of Emerald Rapids, both ISAs (docs/simulator.md, model 18)");
    /* runtime/sim/sim.h "Sampling" (model 21) */
    t->sample_budget = 5e6;
    loom__calib_fig(g, "sample_budget", t->sample_budget, "events",
        "not measured: 2x LOOM_SIM_EVENT_BUDGET, chosen on the re-measured campaign records of Emerald Rapids, "
        "both ISAs (docs/simulator.md, model 21): with the shared level's bandwidth the F = 128 graphs rank "
        "worse at 1x (more of their rows skipped), no better at 3.2x or 6.4x, which cost 1.6x and 3.2x the time");
}

/* runtime/sim/sim_machine.h "Physical indexing" (model 66): the base page
 * size the kernels' buffers are mapped with (loom allocates them with
 * aligned_alloc and never asks for huge pages), into t->page_bytes; the
 * source names the transparent-huge-page mode the kernel had. */
void loom__calib_map_pages(loom_target *t, figs *g)
{
    long pg = sysconf(_SC_PAGESIZE);
    char mode[32] = "unknown";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        char line[128];
        if (fgets(line, sizeof line, f)) {
            char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
            if (a && b && b - a - 1 < (long)sizeof mode) {
                memcpy(mode, a + 1, (size_t)(b - a - 1));
                mode[b - a - 1] = 0;
            }
        }
        fclose(f);
    }
    t->page_bytes = pg >= 512 && pg <= (1L << 30) && (pg & (pg - 1)) == 0 ? (int)pg : 0;
    char src[300];
    snprintf(src, sizeof src,
             "sysconf(_SC_PAGESIZE); transparent huge pages \"%s\" (/sys/kernel/mm/transparent_hugepage/enabled), "
             "and loom's buffers never ask for them: a level whose sets span more than a page is indexed by "
             "physical frames the simulator hashes",
             mode);
    loom__calib_fig(g, "page_bytes", t->page_bytes, "bytes", src);
}

/* runtime/sim/sim_cycles.c "Core-to-core lines" (model 67): a line another
 * core modified reaches this one in half a round trip of the probe's line
 * (measure.h loom_measure_core_line_ns: two threads on the first two CPUs
 * pass it back and forth); the median of five probes -- on a VM the figure
 * is the vCPUs' placement at the time (measure.h), and the median is the
 * state the calibration ran in, not its one best moment. */
void loom__calib_map_transfers(loom_target *t, figs *g)
{
    double ns[5];
    int n = 0;
    for (int i = 0; i < 5 && t->cores >= 2; i++) {
        double v = loom_measure_core_line_ns();
        if (v > 0)
            ns[n++] = v;
    }
    for (int i = 1; i < n; i++) /* insertion sort of at most 5 */
        for (int j = i; j > 0 && ns[j] < ns[j - 1]; j--) {
            double x = ns[j];
            ns[j] = ns[j - 1];
            ns[j - 1] = x;
        }
    double mid = n ? ns[n / 2] : 0;
    t->core_transfer_ns = mid > 0 ? round(mid / 2 * 10) / 10 : 0;
    loom__calib_fig(g, "core_transfer_ns", t->core_transfer_ns, "ns",
                    mid > 0 ? "half the median of 5 round trips of a cache line two threads on the first two CPUs pass "
                              "back and forth (loom_measure_core_line_ns): a line the other core modified, read; on a "
                              "VM it follows the vCPUs' placement at calibration time"
                            : "not measured: one core, or the probe gave up (a descheduled thread)");
}
