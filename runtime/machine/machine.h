/* loom: the machine model of a target -- what a target handle carries and
 * the simulator runs on (DESIGN.md "Runtime": "Targets are JSON: cores,
 * vector bits, cache sizes and line, bandwidth, frequency"): its JSON form
 * (loom_target_parse), the host's model detected (loom_target_host), the
 * fingerprint and the validator limits of a model, and the CPU target's
 * limits and fingerprint.  It sits below the lowering, the measurer and the
 * simulator, which read it (runtime/README.md); opening a handle by spec or
 * name and the calibrated host are above the measurer, in runtime/target/
 * (target.h loom_target_open, loom_target_load; calibrate.h).
 *
 * A target file (targets/NAME.json) is one JSON object:
 *
 *   {
 *     "name": "spr-2c",                  short name, <= 63 characters
 *     "description": "...",              optional, free text (not hashed)
 *     "cpu": "AMD EPYC (family ...)",     optional (not hashed): the CPU a calibrated
 *                                         target was measured on (calibrate.h)
 *     "calibration": {...},               optional (not read): loom calibrate's date,
 *                                         mode, seconds and per figure its value,
 *                                         unit and source (the microbenchmark)
 *     "cores": 2,                         threads a parallel loop is split over
 *     "vector_bits": 512,                 SIMD width (fp32 lanes = bits / 32)
 *     "vector_registers": 32,             optional: architectural vector registers
 *                                         (4 to 256; default 32 when vector_bits
 *                                         >= 512, else 16: AVX-512's zmm0-31,
 *                                         AVX2's ymm0-15); the fused lowering's
 *                                         register tiles are sized to fit them
 *     "fma": true,                        optional (default true): the vector unit
 *                                         has fused multiply-add
 *     "fma_units": 2,                     vector FMA pipes per core
 *     "fadd_units": 0,                    optional: vector pipes beside them that take
 *                                         adds, shuffles and min / max but no FMA or
 *                                         multiply (AMD Zen: 2; Intel's AVX-512 cores:
 *                                         0, their adds share the FMA ports; loom
 *                                         calibrate measures it; runtime/sim/sim.h
 *                                         "Cycles", model 70)
 *     "narrow_fma_units": 0,              optional: FMAs a cycle of vectors at most half
 *                                         the native width, when more than fma_units
 *                                         (AMD Zen 4, whose 512-bit operations take both
 *                                         256-bit pipes: 2 ymm FMAs a cycle against 1 zmm;
 *                                         0 or absent: the same as fma_units; loom
 *                                         calibrate measures it; runtime/sim/sim.h
 *                                         "Cycles", model 92)
 *     "ghz": 2.1,                         clock (cycles per ns)
 *     "issue_width": 4,                   instructions a core retires per cycle
 *     "load_ports": 2, "store_ports": 1,  memory instructions per cycle
 *     "caches": [                         innermost first, at most 4 levels
 *       {"name": "L1d", "size": 49152, "assoc": 12, "line": 64,
 *        "latency": 5, "shared": false}, ...
 *     ],                                  optional per level: "miss_cost": cycles one
 *                                         core spends per independent (not streamed)
 *                                         access that hits the level, overlap included
 *                                         (loom calibrate: the measured gathered-element
 *                                         time); without it latency / mlp; and
 *                                         "bandwidth": bytes/s the level serves one core
 *                                         (a private level past L1; loom calibrate: its
 *                                         sequential load bandwidth; runtime/sim/sim.h
 *                                         "Level bandwidth", model 19); without it none                                  size/line/assoc: sets = size/(line*assoc)
 *                                         must be a positive integer; one line
 *                                         size for every level; shared levels
 *                                         follow private ones
 *     "memory": {"bandwidth": 2.5e10,     DRAM bytes/s for the whole chip
 *                "core_bandwidth": 1.2e10, bytes/s one core can pull alone
 *                "nt_bandwidth": 2.8e10,   optional: bytes/s of non-temporal stores, whole chip
 *                                         (loom calibrate; runtime/sim/sim_cycles.c, model 99)
 *                "latency_ns": 110,
 *                "miss_cost_ns": 7.7},     optional: as miss_cost for memory, in ns
 *                                         (without it (last latency + latency_ns) / mlp)
 *     "model": {                          the simulator's tunable parameters
 *       "mlp": 6,                         cache misses a core overlaps (memory-level parallelism)
 *       "overlap": 0.75,                  fraction of min(compute, memory) hidden by the other
 *       "gather_cycles_per_lane": 1.0,    extra load-port cycles per gathered lane
 *       "masked_lane_cycles": 0.5,        extra cycles per inactive lane of a vector iteration
 *       "exp_cycles": 8,                  FMA-pipe cycles of one exp()
 *       "div_cycles": 4,                  FMA-pipe cycles of one divide or sqrt
 *       "branch_miss_cycles": 12,         a mispredicted data-dependent branch
 *       "parallel_overhead_ns": 1500,     fork/join of one parallel region
 *       "autovectorize": true,            innermost serial loops of constant extent
 *                                         with no control flow run as vector code
 *                                         (what cc -O3 does)
 *       "shared_load_copies": 0,          optional: GCC's Zen tuning (loom calibrate finds it):
 *                                         a vector load that k copies of a completely
 *                                         unrolled loop share stays in a register only
 *                                         when k >= this + the load's vectors per copy,
 *                                         those vectors counted up to 2 (model 48);
 *                                         below, cc folds it into every copy's FMA
 *                                         (runtime/sim/sim.h "Unrolled copies", model 13);
 *                                         0: always in a register
 *       "shared_load_fixed": false,       optional: true when the copies needed do not
 *                                         grow with the load's vectors: k >= this alone
 *                                         (GCC's generic tuning: 4 at zmm, 3 at ymm;
 *                                         model 14)
 *       "peel_times": 0,                  optional: the most vector iterations of a loop with
 *                                         literal bounds cc unrolls completely, which then
 *                                         cost no loop op (GCC's max-completely-peel-times,
 *                                         16; loom calibrate sets it; runtime/sim/sim.h
 *                                         "Vectors", model 15); 0: never
 *       "issue_chain_norm": 0,            optional: p >= 1 of the norm that combines a core's
 *                                         issue-slot bound and its latency chain,
 *                                         (issue^p + chain^p)^(1/p) (runtime/sim/sim.h
 *                                         "Cycles", model 15; loom calibrate sets 2, fitted
 *                                         on Emerald Rapids' re-measured campaign records);
 *                                         0: the longer of the two, as before model 15
 *       "stream_lines": 0,                optional: lines the L2 streamer fetches ahead of
 *                                         an ascending run of misses, within its 4 KiB page,
 *                                         into the last private level (runtime/sim/sim.h
 *                                         "Streamer", model 18; loom calibrate sets 8);
 *                                         0: no look-ahead, as before model 18
 *       "stride_prefetch_lines": 0,       optional: the largest stride, in lines, at which
 *                                         the core's stride prefetcher follows a load site
 *                                         whose misses keep a constant distance: such a miss
 *                                         costs no stall (runtime/sim/sim.h "Stride
 *                                         prefetch", model 49; loom calibrate measures it
 *                                         with strided pointer chases); 0: none
 *       "page_bytes": 0,                  optional: the bytes of the pages the kernel's
 *                                         buffers are mapped with; a cache level whose sets
 *                                         span more than a page indexes them by the page's
 *                                         physical frame, which the simulator stands in for
 *                                         with a hash of the page number (runtime/sim/
 *                                         sim_machine.h "Physical indexing", model 66; loom
 *                                         calibrate writes the base page size); 0: sets
 *                                         indexed by the virtual address, as before model 66
 *       "core_transfer_ns": 0,            optional: the time a cache line another core
 *                                         modified takes to reach this one, ns (half the
 *                                         round trip of a line two threads pass back and
 *                                         forth; runtime/sim/sim_cycles.c "Core-to-core
 *                                         lines", model 67; loom calibrate measures it);
 *                                         0: such a line is an ordinary shared-level access
 *       "reorder_window": 0,              optional: the instructions a core keeps in flight
 *                                         behind a stalled one, its reorder buffer's entries
 *                                         (runtime/sim/sim.h "Independent chains", model 82;
 *                                         loom calibrate measures it with two pointer chases
 *                                         and fillers between them); 0:
 *                                         LOOM_SIM_REORDER_WINDOW_INSTRUCTIONS (512)
 *       "sample_budget": 0,               optional: the events (statements executed plus
 *                                         memory accesses) a simulation runs before it
 *                                         samples (runtime/sim/sim.h "Sampling"; loom
 *                                         calibrate sets 5e6, model 21); 0:
 *                                         LOOM_SIM_EVENT_BUDGET (2.5e6)
 *       "warm_caches": false,             the kernel starts with the data of a previous
 *                                         run in the caches, as repeated measurement runs
 *                                         do (runtime/sim/sim_machine.h "Warm caches"; calibrated
 *                                         host targets set it)
 *       "branch_memory": [[1024, 0.12], ...]
 *                                         optional, up to LOOM_TARGET_MAX_BRANCH_POINTS
 *                                         [branches, fraction] pairs, branches ascending
 *                                         and >= 1, fraction in [0, 1]: of a kernel run
 *                                         again and again on the same data whose core
 *                                         executes `branches` conditional branches per
 *                                         run, the fraction of its data-dependent misses
 *                                         (as the simulator's predictors count them) that
 *                                         still miss once the branch predictor has
 *                                         learned the repeated sequence
 *                                         (runtime/sim/sim.h "Branch memory"; loom
 *                                         calibrate measures it); without it every miss
 *                                         counts
 *     },
 *     "limits": {"max_vector_factor": 16, "max_workspace_bytes": 65536}
 *   }
 *
 * Every key of "model" and "limits" is optional (the defaults above); the
 * others are required.  Unknown keys are errors (they are usually typos).
 */
#ifndef LOOM_MACHINE_H
#define LOOM_MACHINE_H

#include <stddef.h>
#include <stdint.h>

#include "../../dsl/ir/error.h"
#include "../../dsl/ir/limits.h"

#define LOOM_TARGET_MAX_CACHES 4
#define LOOM_TARGET_MAX_BRANCH_POINTS 8
/* A target file is a few hundred bytes; one over this is refused unread. */
#define LOOM_TARGET_MAX_BYTES ((size_t)1 << 20)

typedef struct loom_cache_level {
    char name[16];
    long long size;      /* bytes */
    int assoc;           /* ways */
    int line;            /* bytes */
    int latency;         /* cycles from a load issue to data, on a hit at this level */
    int shared;          /* 1: one instance for all cores, 0: one per core */
    double miss_cost;    /* cycles one core spends per independent (non-stream) access that hits
                            here, memory-level parallelism included; 0: latency / mlp */
    double bandwidth;    /* bytes/s this level serves one core (a private level past L1); 0: no bound */
} loom_cache_level;

/* What a target handle runs on (loom_target_open).  A third kind, a remote
 * measurement worker (issue 31), will be LOOM_TARGET_REMOTE: its limits and
 * fingerprint are the worker's, sent back when it is opened. */
typedef enum loom_target_kind {
    LOOM_TARGET_SIM = 0,       /* a simulated machine model (loom_target_load; the zero value, so
                                  targets filled by loom_target_load/parse/host stay simulated) */
    LOOM_TARGET_CPU = 1        /* this machine's CPU: kernels compiled and measured here */
} loom_target_kind;

typedef struct loom_target {
    char name[64];
    char description[512];
    char cpu[160];             /* the CPU a calibrated target was measured on ("" otherwise) */
    int cores;
    int vector_bits;
    int vector_registers;      /* architectural vector registers */
    int fma;                   /* 1: vector fused multiply-add */
    int fma_units;
    int fadd_units;            /* 0, or vector pipes for adds and shuffles beside the FMA pipes */
    int narrow_fma_units;      /* 0, or FMAs a cycle of vectors of at most half the native width when
                                  more than fma_units (Zen 4: 2 ymm against 1 zmm; model 92) */
    double ghz;
    int issue_width;
    int load_ports, store_ports;
    int ncaches;
    loom_cache_level caches[LOOM_TARGET_MAX_CACHES];
    double mem_bandwidth;      /* bytes/s, whole chip */
    double core_bandwidth;     /* bytes/s, one core */
    double mem_nt_bandwidth;   /* bytes/s, whole chip, of non-temporal stores (0: not modelled; model 99) */
    double mem_latency_ns;
    double mem_miss_cost_ns;   /* as miss_cost for an access that goes to memory, ns; 0: (last level's
                                  latency + latency_ns) / mlp */
    /* model parameters (see the file format above and runtime/sim/sim.h) */
    double mlp, overlap, gather_cycles_per_lane, masked_lane_cycles, exp_cycles, div_cycles,
        branch_miss_cycles, parallel_overhead_ns;
    int autovectorize;
    int shared_load_copies;    /* 0, or the copies beyond a shared load's vectors (up to
                                  LOOM_TARGET_SHARED_LOAD_MAX_VECTORS) cc needs to keep it in a register
                                  (the file format above) */
    int shared_load_fixed;     /* 1: shared_load_copies alone, not plus the load's vectors */
    int peel_times;            /* 0, or the vector iterations cc unrolls completely (file format above) */
    double issue_chain_norm;   /* 0 (the max), or p of the issue/chain norm (file format above) */
    int stream_lines;          /* 0, or the lines the L2 streamer fetches ahead (file format above) */
    int stride_prefetch_lines; /* 0, or the largest stride the stride prefetcher follows (file format above) */
    int page_bytes;            /* 0, or the page size physically indexed levels hash (file format above) */
    double core_transfer_ns;   /* 0, or a modified line's trip to another core, ns (file format above) */
    double reorder_window;     /* 0, or the reorder buffer's instructions (file format above) */
    double sample_budget;      /* 0 (LOOM_SIM_EVENT_BUDGET), or the events simulated before sampling */
    int warm_caches;           /* 1: the kernel runs with the data of a previous run cached */
    int nbranch_memory;        /* points of branch_memory (0: every miss counts) */
    double branch_memory[LOOM_TARGET_MAX_BRANCH_POINTS][2]; /* [branches per run, fraction of misses left] */
    /* validator limits */
    int max_vector_factor;
    long long max_workspace_bytes;
    char source[512];          /* the file it was read from, or "host" */
    /* the handle (runtime/target/target.h loom_target_open; loom_target_load
     * and loom_target_parse also fill them for a simulated target): */
    loom_target_kind kind;
    loom_limits limits;        /* what validation, the design space and the lowering use: the CPU's
                                  (loom_limits_host) or loom_target_limits of the model */
    char fingerprint[128];     /* what records carry: "cpu:<16 hex>" (loom_target_cpu_fingerprint)
                                  or "sim:<name>:<16 hex>" (loom_target_fingerprint) */
} loom_target;

/* The fingerprint of this machine's CPU as a target: "cpu:<16 hex>", the
 * FNV-1a 64 hash of the CPU model name (/proc/cpuinfo), the online core
 * count, the compiler (cc; NULL: $LOOM_CC, else "cc") and its flags
 * (cflags; NULL: $LOOM_HOST_ISA when set, since kernels are then built for
 * that ISA).  Truncated to n bytes. */
void loom_target_cpu_fingerprint(const char *cc, const char *cflags, char *buf, size_t n);

/* The limits of this machine's CPU target -- what loom_target_open("cpu")
 * carries in `limits` (dsl/ir/limits.h loom_limits_host: detected at call
 * time) -- without building the rest of the handle.  For the few places
 * that fall back to the CPU when handed no target: loom_lower (NULL
 * limits), a design space before loom_space_set_limits, the default
 * schedule without limits, loom_search_defaults.  Everything that has a
 * target uses its handle's limits instead. */
loom_limits loom_target_cpu_limits(void);

/* 1 when t is measured on this machine's CPU (kind LOOM_TARGET_CPU), 0 when
 * simulated. */
int loom_target_is_cpu(const loom_target *t);

/* Parse a target from JSON text; `file` names it in messages.  Errors as
 * loom_target_load's LOOM_ERR_DATA. */
loom_status loom_target_parse(const char *json, const char *file, loom_target *out, loom_error *err);

/* The machine loom runs on, read at call time: cores from
 * sysconf(_SC_NPROCESSORS_ONLN); vector bits, vector registers and fma from
 * loom_limits_host's run-time detection (dsl/ir/limits.h: avx512f 512 bits and
 * 32 registers, avx/avx2 256 and 16, else 128 and 16); fma_units 2 with
 * fma else 1; ghz from the model name's "@ x.xxGHz", else /proc/cpuinfo "cpu
 * MHz" rounded to 0.1 GHz, else 2.0; caches from
 * /sys/devices/system/cpu/cpu0/cache/index* (data and unified levels:
 * size, ways, line, shared when shared_cpu_list names more than one cpu).
 * Not measured (documented defaults, the spr-2c values): cache latencies
 * (L1 5, L2 16, L3 60 cycles, by level), memory bandwidth 12 GB/s per core
 * (24 GB/s for 2 or more cores, bench/README's triad), latency 110 ns, and
 * every model parameter.  When sysfs has no cache directory (some VMs) the
 * caches come from
 * sysconf(_SC_LEVEL1_DCACHE_SIZE ...) (glibc, cpuid; unknown ways: 16),
 * and only without those from 32 KiB/1 MiB/32 MiB caches when
 * sysfs has none.  Errors: none today (LOOM_OK always); kept fallible. */
loom_status loom_target_host(loom_target *out, loom_error *err);

/* The vector registers of a target without "vector_registers": 32 when
 * vector_bits >= 512, else 16. */
int loom_target_default_registers(int vector_bits);

/* Fill the defaults of the optional keys (model, limits) into t. */
void loom_target_defaults(loom_target *t);

/* "sim:<name>:<16 hex>" where the hex is the FNV-1a 64 hash of every field
 * that affects simulation (not description or source), printed with %.17g,
 * so equal targets give equal fingerprints on every machine.  The vector
 * registers and fma enter the hash only when they differ from their
 * defaults for the vector width (loom_target_default_registers, fma 1), so
 * fingerprints from before those fields existed stay the same.  Truncated
 * to n. */
void loom_target_fingerprint(const loom_target *t, char *buf, size_t n);

/* Validator limits of t: lanes = vector_bits / 32, max_vector_factor,
 * cores, max_workspace_bytes, vector_registers, fma. */
loom_limits loom_target_limits(const loom_target *t);

/* The most vectors of a shared load that raise the copies GCC's Zen tuning
 * needs to keep it in a register (model 48): read from GCC 12's assembly of
 * GEMM micro-kernels under -mtune=znver3 (rows x B's vectors, AVX-512 and
 * AVX2): 2-4 rows fold B and 5-10 rows keep it in registers at 2 vectors and
 * at 4 alike, where 3 + 4 said 7 (docs/simulator.md "Model 48"). */
#define LOOM_TARGET_SHARED_LOAD_MAX_VECTORS 2

/* 1 when cc folds a vector load that `copies` copies of a completely
 * unrolled loop share, `vectors` vectors a copy, into each copy's FMA instead
 * of keeping it in a register: copies < shared_load_copies + min(vectors,
 * LOOM_TARGET_SHARED_LOAD_MAX_VECTORS), or < shared_load_copies alone when
 * shared_load_fixed ("shared_load_copies" above; runtime/sim/sim.h "Unrolled
 * copies").  0 when the target has no shared_load_copies. */
static inline int loom_target_folds_shared_load(const loom_target *t, int64_t copies, int64_t vectors)
{
    int64_t v = vectors < LOOM_TARGET_SHARED_LOAD_MAX_VECTORS ? vectors : LOOM_TARGET_SHARED_LOAD_MAX_VECTORS;
    return t->shared_load_copies > 0 && copies < t->shared_load_copies + (t->shared_load_fixed ? 0 : v);
}

#endif
