/* Tests of what the simulator charges for a kernel's stores to memory:
 * model 99's drain of non-temporal stores (runtime/sim/sim_cycles.c
 * nt_drain), on the Zen 4 host's calibration (tests/sim_targets.h) with
 * and without the nt_bandwidth loom calibrate writes since format 21. */
#include <criterion/criterion.h>
#include <math.h>

#include "../runtime/sim/sim.h"
#include "../runtime/target/target.h"

#include "sim_spmm.h"
#include "sim_targets.h"

/* Cora SpMM F = 32, the default-like schedule (nonzeros unsplit, F in one
 * vector loop, no balance), C's rows copied out of the workspace with
 * ordinary stores (cw 1) or non-temporal ones (cw 2), on tg */
static loom_sim_result cora_copy_out(int cw, const loom_target *tg)
{
    return spmm_run_cw("data/cora_adj.mtx", 0, "[1, 1, 1, 32]", cw, 0, 0, tg);
}

/* Model 99: Zen 4's non-temporal stores ran 27-28 GB/s pass after pass
 * (one thread or two), and Cora's streamed copy-out (C: 2708 x 32 floats,
 * 346,624 bytes) measured 12.6-12.8 us for most schedules -- the drain's
 * floor -- against 7.7-9.8 us with ordinary stores; the simulator, which
 * charged the lines at a core's read bandwidth, made the streamed kernel
 * 1.09-1.22x the other where it measured 1.25-1.65x.  With nt_bandwidth the
 * streamed kernel takes at least the drain of C's vectors (its rows' whole
 * vectors, not the unaligned heads and tails, which go through the caches)
 * and costs more than ordinary stores by more than before; ordinary stores
 * and a target without the figure simulate as before, bit for bit. */
Test(sim, a_streamed_copy_out_drains_at_the_non_temporal_rate)
{
    loom_target t = zen4_2c(1), tn = t;
    tn.mem_nt_bandwidth = 27.7e9;
    loom_sim_result o = cora_copy_out(1, &t), s = cora_copy_out(2, &t);
    loom_sim_result on = cora_copy_out(1, &tn), sn = cora_copy_out(2, &tn);
    cr_log_info("ordinary %.2f us, streamed %.2f us; with nt_bandwidth %.2f / %.2f us", o.latency_s * 1e6,
                s.latency_s * 1e6, on.latency_s * 1e6, sn.latency_s * 1e6);
    cr_expect_eq(on.latency_s, o.latency_s, "ordinary stores: %g s with nt_bandwidth, %g without", on.latency_s, o.latency_s);
    cr_expect_eq(on.cycles, o.cycles);
    double c_bytes = 2708.0 * 32 * 4, floor_s = 0.95 * c_bytes / tn.mem_nt_bandwidth;
    cr_expect_gt(sn.latency_s, floor_s, "streamed: %g s, below the drain of C's %g bytes at 27.7 GB/s (%g s)",
                 sn.latency_s, c_bytes, floor_s);
    cr_expect_lt(s.latency_s, floor_s, "without nt_bandwidth the streamed kernel ran under the drain: %g s", s.latency_s);
    cr_expect_gt(sn.latency_s / on.latency_s, 1.25, "streamed / ordinary %g with nt_bandwidth (measured 1.25-1.65)",
                 sn.latency_s / on.latency_s);
    cr_expect_lt(s.latency_s / o.latency_s, 1.25, "streamed / ordinary %g without", s.latency_s / o.latency_s);
    cr_expect_eq(cora_copy_out(2, &tn).latency_s, sn.latency_s, "not deterministic");
}

/* The drain is shared: a region whose cores both stream drains each core's
 * bytes at half the rate, so one core's work and stores run no faster than
 * its bytes at nt_bandwidth over the cores.  A kernel whose drain is well
 * under its work pays LOOM_SIM_NT_DRAIN_SHARE of it: doubling nt_bandwidth
 * (halving the drain) saves at most that share of the doubled drain. */
Test(sim, the_drain_adds_a_share_of_itself_to_a_longer_kernel)
{
    loom_target t = zen4_2c(1);
    t.mem_nt_bandwidth = 27.7e9;
    loom_sim_result a = cora_copy_out(2, &t);
    t.mem_nt_bandwidth = 4 * 27.7e9; /* a drain of about 3 us, under the kernel's work */
    loom_sim_result fast = cora_copy_out(2, &t);
    t.mem_nt_bandwidth = 8 * 27.7e9;
    loom_sim_result faster = cora_copy_out(2, &t);
    double c_bytes = 2708.0 * 32 * 4, d4 = c_bytes / (4 * 27.7e9), d8 = c_bytes / (8 * 27.7e9);
    cr_log_info("27.7 GB/s %.2f us, x4 %.2f us, x8 %.2f us", a.latency_s * 1e6, fast.latency_s * 1e6,
                faster.latency_s * 1e6);
    cr_expect_lt(fast.latency_s, a.latency_s);
    /* between x4 and x8 the drain halves and the kernel saves at most its share of the difference */
    double saved = fast.latency_s - faster.latency_s;
    cr_expect_gt(saved, 0, "a faster drain saves nothing: %g s", saved);
    cr_expect_lt(saved, 1.05 * LOOM_SIM_NT_DRAIN_SHARE * (d4 - d8), "saved %g s of a drain that fell by %g s", saved,
                 d4 - d8);
}
