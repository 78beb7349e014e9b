/* The targets loom calibrate wrote on the hosts of issue 29 that the
 * simulator's tests stand on (tests/test_sim_cycles.c, test_sim_tiles.c): Zen 4's, with and
 * without AVX-512, and zen4_2c to parse one. */
#ifndef LOOM_TEST_SIM_TARGETS_H
#define LOOM_TEST_SIM_TARGETS_H

#include <criterion/criterion.h>

#include "../runtime/target/target.h"

/* The targets loom calibrate wrote on the Zen 4 host of issue 29's
 * sixty-ninth to seventy-third sessions (AMD EPYC family 25 model 17, 2
 * cores; AVX-512, and AVX2 under LOOM_HOST_ISA=avx2; the reorder window
 * as model 82 reads it; figures without their sources). */
static const char ZEN4_2C_AVX512[] =
    "{\"name\": \"zen4-2c-avx512\", \"cpu\": \"AMD EPYC (family 25, model 17, stepping 1), 512-bit ve"
    "ctors, 2 cores\", \"cores\": 2, \"vector_bits\": 512, \"vector_registers\": 32, \"fma\": true, "
    "\"fma_units\": 1, \"fadd_units\": 1, \"ghz\": 3.694, \"issue_width\": 4, \"load_ports\": 2, \"st"
    "ore_ports\": 1, \"caches\": [{\"name\": \"L1d\", \"size\": 32768, \"assoc\": 8, \"line\": 64, \""
    "latency\": 4, \"shared\": false}, {\"name\": \"L2\", \"size\": 1048576, \"assoc\": 8, \"line\": "
    "64, \"latency\": 14, \"shared\": false, \"miss_cost\": 1.88, \"bandwidth\": 115014000000}, {\"na"
    "me\": \"L3\", \"size\": 16777216, \"assoc\": 16, \"line\": 64, \"latency\": 48, \"shared\": true"
    ", \"miss_cost\": 2.61, \"bandwidth\": 98532000000}], \"memory\": {\"bandwidth\": 43880000000, \""
    "core_bandwidth\": 27182000000, \"latency_ns\": 152.7, \"miss_cost_ns\": 4.6}, \"model\": {\"mlp"
    "\": 32, \"overlap\": 0.5, \"gather_cycles_per_lane\": 1.19, \"masked_lane_cycles\": 2, \"exp_cyc"
    "les\": 8, \"div_cycles\": 4, \"branch_miss_cycles\": 21.2, \"parallel_overhead_ns\": 631, \"auto"
    "vectorize\": true, \"warm_caches\": true, \"shared_load_copies\": 3, \"peel_times\": 16, \"issue"
    "_chain_norm\": 2, \"stream_lines\": 8, \"stride_prefetch_lines\": 4097, \"page_bytes\": 4096, \""
    "core_transfer_ns\": 25.4, \"sample_budget\": 5000000, \"branch_memory\": [[4096, 0.135], [16384,"
    " 0.168], [65536, 0.192], [131072, 0.515], [262144, 0.913], [1048576, 1]], \"reorder_window\": 31"
    "4}, \"limits\": {\"max_vector_factor\": 16, \"max_workspace_bytes\": 65536}}";
static const char ZEN4_2C_AVX2[] =
    "{\"name\": \"zen4-2c-avx2\", \"cpu\": \"AMD EPYC (family 25, model 17, stepping 1), 256-bit vect"
    "ors (LOOM_HOST_ISA), 2 cores\", \"cores\": 2, \"vector_bits\": 256, \"vector_registers\": 16, \""
    "fma\": true, \"fma_units\": 2, \"fadd_units\": 1, \"ghz\": 3.694, \"issue_width\": 4, \"load_por"
    "ts\": 2, \"store_ports\": 1, \"caches\": [{\"name\": \"L1d\", \"size\": 32768, \"assoc\": 8, \"l"
    "ine\": 64, \"latency\": 4, \"shared\": false}, {\"name\": \"L2\", \"size\": 1048576, \"assoc\": "
    "8, \"line\": 64, \"latency\": 14, \"shared\": false, \"miss_cost\": 1.81, \"bandwidth\": 1174960"
    "00000}, {\"name\": \"L3\", \"size\": 16777216, \"assoc\": 16, \"line\": 64, \"latency\": 48, \"s"
    "hared\": true, \"miss_cost\": 3.93, \"bandwidth\": 94041000000}], \"memory\": {\"bandwidth\": 41"
    "444000000, \"core_bandwidth\": 32130000000, \"latency_ns\": 159.5, \"miss_cost_ns\": 4.53}, \"mo"
    "del\": {\"mlp\": 32, \"overlap\": 0.5, \"gather_cycles_per_lane\": 1.53, \"masked_lane_cycles\":"
    " 2, \"exp_cycles\": 8, \"div_cycles\": 4, \"branch_miss_cycles\": 21.1, \"parallel_overhead_ns\""
    ": 1282, \"autovectorize\": true, \"warm_caches\": true, \"shared_load_copies\": 3, \"peel_times"
    "\": 16, \"issue_chain_norm\": 2, \"stream_lines\": 8, \"stride_prefetch_lines\": 4097, \"page_by"
    "tes\": 4096, \"core_transfer_ns\": 30.4, \"sample_budget\": 5000000, \"branch_memory\": [[4096, "
    "0.235], [16384, 0.249], [65536, 0.467], [131072, 0.613], [262144, 0.866], [1048576, 1]], \"reord"
    "er_window\": 314}, \"limits\": {\"max_vector_factor\": 16, \"max_workspace_bytes\": 65536}}";

/* ZEN4_2C_AVX512 (avx512) or ZEN4_2C_AVX2 parsed. */
static inline loom_target zen4_2c(int avx512)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_parse(avx512 ? ZEN4_2C_AVX512 : ZEN4_2C_AVX2, "<zen4-2c>", &t, &err), LOOM_OK, "%s",
                 err.msg);
    return t;
}

#endif
