/* Tests of the simulator (runtime/sim/sim.h): hand-computable cases on tiny
 * targets, determinism, thread safety, and the sampling rule.  The bandwidth
 * terms (models 18, 19, 21, 27) are in test_sim_bandwidth.c, whole kernels'
 * rules in test_sim_kernels.c. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/ir/util.h"
#include "../modules/generic.h"
#include "../runtime/lower/lower.h"
#include "../runtime/sim/sim.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "../runtime/target/target.h"
#include "sim_fixture.h"

/* y[i] = x[i] * 2 over 4096 floats, serial: the loop is auto-vectorized
 * (256 vector iterations of 16 lanes).  L1: 4 KiB, 4 ways, 16 sets.
 *  - misses: x and y are 256 lines each, never reused: 512
 *  - lookups: one per element access: 8192
 *  - FLOPs: 4096
 *  - DRAM: 512 lines read, plus the dirty y lines evicted: x and y start
 *    4 KiB-aligned, so line k of both maps to set k mod 16; each set ends
 *    holding its last 2 x and 2 y lines, so 256 - 32 = 224 y lines were
 *    written back: (512 + 224) x 64 = 47104 bytes
 *  - compute: per vector iteration 1 FMA-pipe op, 1 load, 1 store, 1 loop
 *    op: max(256, 256, 256, 1024 / 4) = 256, plus one mispredicted loop
 *    exit (10): 266
 *  - memory: stall = 2 non-stream first misses x (4 + 100 ns x 1 GHz) / mlp 2
 *    = 104; bandwidth 47104 B / 64 B per cycle = 736: max = 736
 *  - core = 736 + (1 - 0.5) x 266 = 869 cycles; chip floor 368; serial. */
Test(sim, streaming_loop_exact)
{
    loom_target t;
    tiny_target(&t, 1, 4096, 4);
    kern k;
    load(&k, "param N = 4096\ntensor x(N) dense\ntensor y(N) dense output\ny(i) = x(i) * 2.0\n", NULL, NULL, 1);
    loom_sim_result r = sim(&k, &t);
    cr_expect_eq(r.misses[0], 512.0, "misses %g", r.misses[0]);
    cr_expect_eq(r.accesses[0], 8192.0, "accesses %g", r.accesses[0]);
    cr_expect_eq(r.flops, 4096.0, "flops %g", r.flops);
    cr_expect_eq(r.dram_bytes, 47104.0, "dram %g", r.dram_bytes);
    cr_expect_eq(r.loads, 256.0, "vector loads %g", r.loads);
    cr_expect_eq(r.stores, 256.0, "vector stores %g", r.stores);
    cr_expect_eq(r.compute_cycles, 266.0, "compute %g", r.compute_cycles);
    cr_expect_eq(r.memory_cycles, 736.0, "memory %g", r.memory_cycles);
    cr_expect_eq(r.cycles, 869.0, "cycles %g", r.cycles);
    cr_expect_float_eq(r.latency_s, 869e-9, 1e-15);
    cr_expect_eq(r.sampled, 0);
    cr_expect_eq(r.sample_fraction, 1.0);
    unload(&k);
}

/* The same loop with unlimited bandwidth, so the memory term is the stall
 * (sim.h "memory", model 7): x and y are each one run of 256 sequential
 * misses from memory, a level beyond the private ones, so the hardware
 * prefetcher takes the first 4 misses of each run to train: 2 x 4 stalls
 * of (4 + 100 ns x 1 GHz) / mlp 2 = 416 cycles (before model 7: only the
 * first miss of a run, 104). */
Test(sim, stream_trains_the_prefetcher)
{
    loom_target t;
    tiny_target(&t, 1, 4096, 4);
    t.mem_bandwidth = t.core_bandwidth = 1e15;
    kern k;
    load(&k, "param N = 4096\ntensor x(N) dense\ntensor y(N) dense output\ny(i) = x(i) * 2.0\n", NULL, NULL, 1);
    loom_sim_result r = sim(&k, &t);
    cr_expect_eq(r.misses[0], 512.0, "misses %g", r.misses[0]);
    cr_expect_eq(r.memory_cycles, 416.0, "memory %g", r.memory_cycles);
    unload(&k);
}

/* Model 61 (sim.h "Cycles"): on a calibrated target (issue_chain_norm) a
 * memory term set by the misses' stall overlaps the core's work by
 * LOOM_SIM_STALL_OVERLAP, one set by the DRAM bytes at the core's
 * bandwidth by the target's overlap (0.5).  The streaming loop above: at
 * the tiny target's bandwidth its memory term is the DRAM bytes (736
 * cycles, streaming_loop_exact), with unlimited bandwidth the stall of
 * the prefetcher's training misses (stream_trains_the_prefetcher). */
Test(sim, a_stall_overlaps_the_core_less_than_a_bandwidth_bound)
{
    loom_target t;
    tiny_target(&t, 1, 4096, 4);
    t.issue_chain_norm = 2;
    kern k;
    load(&k, "param N = 4096\ntensor x(N) dense\ntensor y(N) dense output\ny(i) = x(i) * 2.0\n", NULL, NULL, 1);
    loom_sim_result bw = sim(&k, &t);
    t.mem_bandwidth = t.core_bandwidth = 1e15;
    loom_sim_result st = sim(&k, &t);
    unload(&k);
    cr_expect_eq(bw.memory_cycles, 736.0, "the DRAM-bound memory term: %g cycles", bw.memory_cycles);
    cr_expect_lt(st.memory_cycles, bw.memory_cycles, "the stall-bound term %g, the DRAM-bound one %g",
                 st.memory_cycles, bw.memory_cycles);
    double c = bw.compute_cycles, m = bw.memory_cycles;
    cr_expect_float_eq(bw.cycles, fmax(c, m) + 0.5 * fmin(c, m), 1e-9 * bw.cycles,
                       "DRAM-bound: %g cycles, compute %g, memory %g", bw.cycles, c, m);
    c = st.compute_cycles, m = st.memory_cycles;
    cr_expect_gt(fmin(c, m), 0, "both terms count: compute %g, memory %g", c, m);
    cr_expect_float_eq(st.cycles, fmax(c, m) + (1 - LOOM_SIM_STALL_OVERLAP) * fmin(c, m), 1e-9 * st.cycles,
                       "stall-bound: %g cycles, compute %g, memory %g", st.cycles, c, m);
    cr_expect_gt(st.cycles, fmax(c, m) + 0.5 * fmin(c, m) + 1, "the stall overlaps less than the target's 0.5");
}

/* y[r] += x[i] * z[r], i outer (64), r inner (1000): x is 4 lines, y and z
 * 63 lines each (4000 bytes), all fitting a 32 KiB L1: after the fill of y
 * (63 lines, 63 lookups) every line misses exactly once however many times
 * it is reused: 130 misses for 64 x 1000 x 4 (x, z, y loaded, y stored)
 * + 63 lookups, and nothing is
 * evicted, so no write-back: DRAM = 130 x 64 bytes. */
Test(sim, perfect_reuse_exact)
{
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    kern k;
    load(&k,
         "param N = 64\nparam R = 1000\ntensor x(N) dense\ntensor z(R) dense\ntensor y(R) dense output\n"
         "y(r) += x(i) * z(r)\n",
         NULL, NULL, 1);
    loom_sim_result r = sim(&k, &t);
    cr_expect_eq(r.misses[0], 130.0, "misses %g", r.misses[0]);
    cr_expect_eq(r.accesses[0], 64.0 * 1000 * 4 + 63, "accesses %g", r.accesses[0]);
    cr_expect_eq(r.dram_bytes, 130.0 * 64, "dram %g", r.dram_bytes);
    cr_expect_eq(r.flops, 64.0 * 1000 * 2, "flops %g", r.flops);
    unload(&k);
}

static const char *heavy_mtx(const char *name, int nrows, int heavy)
{
    char *text = malloc(65536);
    int n = snprintf(text, 65536, "%%%%MatrixMarket matrix coordinate real general\n%d 1000 %d\n", nrows,
                     heavy + nrows - 1);
    for (int j = 0; j < heavy; j++)
        n += snprintf(text + n, (size_t)(65536 - n), "1 %d 1.0\n", j + 1);
    for (int i = 1; i < nrows; i++)
        n += snprintf(text + n, (size_t)(65536 - n), "%d %d 1.0\n", i + 1, i + 1);
    const char *p = write_tmp(name, text);
    free(text);
    return p;
}

/* SpMV with the outer loop parallel on 4 cores, 4 rows: row 0 holds 1000
 * entries, rows 1..3 one each.  Static chunks give one row per core, the
 * caches are private, and the chip bandwidth is not the limit, so the
 * kernel takes exactly as long as the heavy row alone (the same target and
 * a 1-row matrix with that row): its core's cycles plus the fork/join. */
Test(sim, parallel_heavy_row_exact)
{
    loom_target t;
    tiny_target(&t, 4, 32768, 8);
    t.mem_bandwidth = 1e15;
    const char *w = "tensor A(N, M) csr\ntensor x(M) dense\ntensor y(N) dense output\ny(i) += A(i, j) * x(j)\n";
    kern k4, k1;
    load(&k4, w, "A", heavy_mtx("heavy4.mtx", 4, 1000), 0);
    loom_sim_result r4 = sim(&k4, &t);
    load(&k1, w, "A", heavy_mtx("heavy1.mtx", 1, 1000), 0);
    loom_sim_result r1 = sim(&k1, &t);
    cr_expect_eq(r4.parallel_regions, 1);
    cr_expect_eq(r4.cycles, r1.cycles, "4 rows %g cycles, the heavy row alone %g", r4.cycles, r1.cycles);
    cr_expect_eq(r4.cycles, r4.core_cycles[0] + 1000.0, "cycles %g, heavy core %g", r4.cycles, r4.core_cycles[0]);
    for (int c = 1; c < 4; c++)
        cr_expect_lt(r4.core_cycles[c] * 5, r4.core_cycles[0], "core %d: %g vs %g", c, r4.core_cycles[c],
                     r4.core_cycles[0]);
    cr_expect_eq(r4.flops, 2.0 * 1003, "flops %g", r4.flops);
    unload(&k4);
    unload(&k1);
}

/* 400 x 400 rows of 1, 2, 1, 2, ... entries (a diagonal, and on odd rows
 * one more): a row loop's trip count differs from its previous one every
 * row, so each row's exit is a branch miss unlearned. */
static const char *alternating_mtx(void)
{
    char *text = malloc(65536);
    int n = snprintf(text, 65536, "%%%%MatrixMarket matrix coordinate real general\n400 400 600\n");
    for (int i = 0; i < 400; i++) {
        n += snprintf(text + n, (size_t)(65536 - n), "%d %d 1.0\n", i + 1, i + 1);
        if (i % 2)
            n += snprintf(text + n, (size_t)(65536 - n), "%d %d 1.0\n", i + 1, (i + 7) % 400 + 1);
    }
    const char *mtx = write_tmp("alternating.mtx", text);
    free(text);
    return mtx;
}

/* Branch memory (sim.h, models 8 and 58): serial SpMV over 400 rows of 1,
 * 2, 1, 2, ... entries, so the row loop's trip count differs from its
 * previous one every row: M misses unlearned.  A target whose predictor
 * leaves a quarter of the misses charges and counts M / 4, and its compute
 * is 3/4 M x branch_miss_cycles (10) shorter; points [[M, 0], [16 M, 1]]
 * interpolate in log to 1/2 at the key, LOOM_SIM_BRANCH_MEMORY_KEY (4) M. */
Test(sim, branch_memory_scales_the_misses)
{
    const char *mtx = alternating_mtx();
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    kern k;
    load(&k, "tensor A(N, M) csr\ntensor x(M) dense\ntensor y(N) dense output\ny(i) += A(i, j) * x(j)\n", "A", mtx,
         1);
    loom_sim_result r0 = sim(&k, &t);
    double m = r0.branch_misses;
    double nb = r0.branches;
    cr_assert_geq(m, 399, "every row's exit mispredicted: %g", m);
    cr_assert_geq(nb, 1000, "a guard per row and an iteration per entry: %g", nb);
    cr_assert_eq(LOOM_SIM_BRANCH_MEMORY_KEY, 4.0, "the points below assume the key is 4 misses");
    t.nbranch_memory = 1;
    t.branch_memory[0][0] = 1;
    t.branch_memory[0][1] = 0.25;
    loom_sim_result r1 = sim(&k, &t);
    cr_expect_float_eq(r1.branch_misses, 0.25 * m, 1e-9, "%g of %g", r1.branch_misses, m);
    cr_expect_float_eq(r0.compute_cycles - r1.compute_cycles, 0.75 * m * 10, 1e-6, "%g -> %g", r0.compute_cycles,
                       r1.compute_cycles);
    t.nbranch_memory = 2;
    t.branch_memory[0][0] = m;
    t.branch_memory[0][1] = 0;
    t.branch_memory[1][0] = 16 * m;
    t.branch_memory[1][1] = 1;
    loom_sim_result r2 = sim(&k, &t);
    cr_expect_float_eq(r2.branch_misses, 0.5 * m, 1e-6, "%g of %g", r2.branch_misses, m);
    unload(&k);
}

/* Model 58 (sim.h "Branch memory"): one predictor learns the whole
 * repeated kernel, so a core's misses left depend on its misses in every
 * region.  The alternating SpMV above as one parallel region on one core,
 * and twice over (z = A y after y = A x: two regions, each as many misses
 * as the first alone).  With the points [[4 M1, 0], [16 M1, 1]] (M1: the
 * single kernel's misses unlearned), the single kernel keeps none; the
 * double one, keyed at 4 M2 = 8 M1, keeps log(M2 / M1) / log 4 (about
 * half) of its M2 -- in both regions, though each alone would be keyed at
 * 4 M1 and keep none. */
Test(sim, branch_memory_is_keyed_by_the_whole_kernel)
{
    const char *mtx = alternating_mtx();
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    kern k1, k2;
    load(&k1, "tensor A(N, N) csr\ntensor x(N) dense\ntensor y(N) dense output\ny(i) += A(i, j) * x(j)\n", "A",
         mtx, 0);
    load(&k2,
         "tensor A(N, N) csr\ntensor x(N) dense\ntensor z(N) dense output\ny(i) = A(i, j) * x(j)\n"
         "z(i) = A(i, j) * y(j)\n",
         "A", mtx, 0);
    loom_sim_result a = sim(&k1, &t), b = sim(&k2, &t);
    double m1 = a.branch_misses, m2 = b.branch_misses;
    cr_assert_eq(a.parallel_regions, 1);
    cr_assert_eq(b.parallel_regions, 2, "one parallel region a statement: %d", b.parallel_regions);
    cr_assert_geq(m1, 399, "every row's exit mispredicted: %g", m1);
    cr_assert(m2 > 1.8 * m1 && m2 < 2.2 * m1, "two regions' misses %g, one region's %g", m2, m1);
    t.nbranch_memory = 2;
    t.branch_memory[0][0] = LOOM_SIM_BRANCH_MEMORY_KEY * m1;
    t.branch_memory[0][1] = 0;
    t.branch_memory[1][0] = 4 * LOOM_SIM_BRANCH_MEMORY_KEY * m1;
    t.branch_memory[1][1] = 1;
    loom_sim_result a1 = sim(&k1, &t), b1 = sim(&k2, &t);
    cr_expect_float_eq(a1.branch_misses, 0, 1e-9, "one region: %g left of %g", a1.branch_misses, m1);
    double left = log(m2 / m1) / log(4);
    cr_expect_float_eq(b1.branch_misses, left * m2, 1e-6, "two regions: %g left of %g (expected %g)",
                       b1.branch_misses, m2, left * m2);
    cr_expect_float_eq(b.compute_cycles - b1.compute_cycles, (1 - left) * m2 * t.branch_miss_cycles, 1e-6,
                       "learned misses save %g cycles", b.compute_cycles - b1.compute_cycles);
    unload(&k1);
    unload(&k2);
}

/* ---- real data: determinism, threads, sampling ---- */

/* workloads/spmm.loom at F = 16 over the matrix file mtx, its naive
 * schedule without a parallel loop, lowered. */
static void serial_spmm16(kern *k, const char *mtx)
{
    loom_error err;
    memset(k, 0, sizeof *k);
    cr_assert_eq(loom_program_parse_file("workloads/spmm.loom", &k->prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec spec;
    snprintf(spec.tensor, sizeof spec.tensor, "A");
    snprintf(spec.path, sizeof spec.path, "%s", mtx);
    loom_param_spec par = {"F", 16};
    cr_assert_eq(loom_dataset_load(k->prog, &spec, 1, &par, 1, 1, &k->ds, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *s = malloc(sizeof *s);
    cr_assert_eq(loom_schedule_naive(s, k->prog, 1, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_lower(s, &k->f, &err), LOOM_OK, "%s", err.msg);
    free(s);
}

static void cora_spmm(kern *k, int sampled_schedule)
{
    loom_error err;
    memset(k, 0, sizeof *k);
    cr_assert_eq(loom_program_parse_file("workloads/spmm.loom", &k->prog, &err), LOOM_OK, "%s", err.msg);
    loom_data_spec spec = {"A", "data/cora_adj.mtx"};
    loom_param_spec par = {"F", 16};
    cr_assert_eq(loom_dataset_load(k->prog, &spec, 1, &par, 1, 1, &k->ds, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *s = malloc(sizeof *s);
    if (!sampled_schedule) {
        cr_assert_eq(loom_schedule_naive(s, k->prog, 0, &err), LOOM_OK, "%s", err.msg);
    } else {
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, (unsigned long)sampled_schedule);
        loom_limits lim = loom_target_cpu_limits();
        loom_violation v;
        do {
            cr_assert_eq(loom_schedule_init(s, k->prog, rng, &err), LOOM_OK);
            cr_assert_eq(loom_generic_program(s, &err), LOOM_OK, "%s", err.msg);
        } while (loom_validate(s, &lim, &v, NULL) != LOOM_OK);
        gsl_rng_free(rng);
    }
    cr_assert_eq(loom_lower(s, &k->f, &err), LOOM_OK, "%s", err.msg);
    free(s);
}

Test(sim, deterministic_bytes)
{
    loom_target t = spr();
    for (int seed = 0; seed < 4; seed++) {
        kern k;
        cora_spmm(&k, seed);
        loom_sim_result a = sim(&k, &t), b = sim(&k, &t);
        cr_expect_eq(memcmp(&a, &b, sizeof a), 0, "schedule %d: two runs differ (%g vs %g)", seed, a.latency_s,
                     b.latency_s);
        cr_expect_gt(a.latency_s, 0);
        unload(&k);
    }
}

typedef struct job {
    kern *k;
    const loom_target *t;
    loom_sim_result r;
    loom_status st;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    loom_error err;
    j->st = loom_sim_run(j->k->f, j->k->ds, j->t, &j->r, &err);
    return NULL;
}

Test(sim, thread_safe)
{
    loom_target t = spr();
    kern k;
    cora_spmm(&k, 3);
    loom_sim_result ref = sim(&k, &t);
    job j[3];
    memset(j, 0, sizeof j);
    for (int i = 0; i < 3; i++) {
        j[i].k = &k;
        j[i].t = &t;
    }
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, run_job, &j[i]);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(j[i].st, LOOM_OK);
        cr_expect_eq(memcmp(&j[i].r, &ref, sizeof ref), 0, "thread %d differs", i);
    }
    unload(&k);
}

/* A budget far below the kernel's work samples it: said so, deterministic,
 * FLOPs scaled back to within 15% of the exact count (a systematic sample
 * of Cora's rows: the FLOPs of budgets 1/3 .. 1/11 of the events are within
 * 0.87-1.14 of the exact count, 0.91-1.08 before the dense loops were
 * sampled too), latency within 1.25x either way: 0.87x here with model 16's
 * first touches (sim.h "Sampling"), 1.44x with model 7's functional warming
 * alone (the sampled rows' first touches of B's rows all missed, as if no
 * skipped row had gathered them), 2.05x without either. */
Test(sim, sampling_rule)
{
    loom_target t = spr();
    kern k;
    cora_spmm(&k, 0);
    loom_sim_result full = sim(&k, &t), a, b;
    loom_error err;
    cr_assert_eq(full.sampled, 0);
    cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &t, full.events / 5, &a, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &t, full.events / 5, &b, &err), LOOM_OK, "%s", err.msg);
    cr_expect_eq(memcmp(&a, &b, sizeof a), 0);
    cr_expect_eq(a.sampled, 1);
    cr_expect_lt(a.sample_fraction, 0.5, "fraction %g", a.sample_fraction);
    cr_expect_gt(a.sample_fraction, 0.0);
    cr_expect_lt(a.events, full.events / 3, "events %g of %g", a.events, full.events);
    /* the skipped rows weighed by their work (model 21): the FLOPs within
       2% (0.2% when written; scaled by the rows' count they were 13% short) */
    cr_expect_lt(fabs(a.flops - full.flops), 0.02 * full.flops, "flops %g vs %g", a.flops, full.flops);
    /* the latency keeps the cold target's bias (sim.h "Known bias": the
       sampled blocks' first touches overcounted): 1.32x when written; the
       13% of FLOPs the count scale lost used to hide part of it (1.16x) */
    cr_expect_lt(a.latency_s, 1.4 * full.latency_s, "sampled %g s, full %g s", a.latency_s, full.latency_s);
    cr_expect_gt(a.latency_s, full.latency_s / 1.4, "sampled %g s, full %g s", a.latency_s, full.latency_s);
    char line[512];
    loom_sim_summary(&a, &t, line, sizeof line);
    cr_expect(strstr(line, "sampled") != NULL, "%s", line);
    unload(&k);
}

/* A deadline (loom_sim_run_until, the pre-training's time budget) never
 * changes what is simulated: a run that ends before it gives the same bits
 * as one without; a deadline already past stops the run with
 * LOOM_ERR_TIMEOUT and a zeroed result. */
Test(sim, deadline)
{
    loom_target t = spr();
    kern k;
    cora_spmm(&k, 2);
    loom_sim_result ref = sim(&k, &t), a, b;
    loom_error err;
    cr_assert_eq(loom_sim_run_until(k.f, k.ds, &t, 0, loom_now_seconds() + 3600, &a, &err), LOOM_OK, "%s", err.msg);
    cr_expect_eq(memcmp(&a, &ref, sizeof a), 0, "a distant deadline changed the result (%g vs %g s)", a.latency_s,
                 ref.latency_s);
    cr_assert_eq(loom_sim_run_until(k.f, k.ds, &t, 0, loom_now_seconds() - 1, &b, &err), LOOM_ERR_TIMEOUT);
    cr_expect_eq(b.latency_s, 0);
    cr_expect(strstr(err.msg, "deadline") != NULL, "%s", err.msg);
    unload(&k);
}

/* More cores and wider vectors: the wide target is faster on the same
 * kernel, and a parallel kernel is faster than its serial twin on 2 cores. */
Test(sim, targets_order)
{
    loom_target t = spr(), w;
    loom_error err;
    cr_assert_eq(loom_target_load("targets/wide-64c.json", &w, &err), LOOM_OK, "%s", err.msg);
    kern k;
    cora_spmm(&k, 0);
    loom_sim_result a = sim(&k, &t), b = sim(&k, &w);
    cr_expect_lt(b.latency_s, a.latency_s, "wide-64c %g s, spr-2c %g s", b.latency_s, a.latency_s);
    unload(&k);
}

/* ---- dense loops sampled (issue 26) ---- */

/* GEMM n x n x n, a schedule drawn from the generic program with seed
 * (0: the naive schedule, parallel) */
static void dense_gemm(kern *k, int n, int seed)
{
    loom_error err;
    memset(k, 0, sizeof *k);
    cr_assert_eq(loom_program_parse_file("workloads/gemm.loom", &k->prog, &err), LOOM_OK, "%s", err.msg);
    loom_param_spec par[3] = {{"M", n}, {"N", n}, {"K", n}};
    cr_assert_eq(loom_dataset_load(k->prog, NULL, 0, par, 3, 1, &k->ds, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *s = malloc(sizeof *s);
    if (!seed) {
        cr_assert_eq(loom_schedule_naive(s, k->prog, 0, &err), LOOM_OK, "%s", err.msg);
    } else {
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, (unsigned long)seed);
        loom_limits lim = loom_target_cpu_limits();
        loom_violation v;
        do {
            cr_assert_eq(loom_schedule_init(s, k->prog, rng, &err), LOOM_OK);
            cr_assert_eq(loom_generic_program(s, &err), LOOM_OK, "%s", err.msg);
        } while (loom_validate(s, &lim, &v, NULL) != LOOM_OK);
        gsl_rng_free(rng);
    }
    cr_assert_eq(loom_lower(s, &k->f, &err), LOOM_OK, "%s", err.msg);
    free(s);
}

/* A dense GEMM simulated with a budget of 1/40 of its events: its nested
 * loops are sampled (tiles, then iterations inside a tile), the work done
 * stays near the budget, and the latency is that of the full simulation
 * within 25% on each of 8 schedules (bench/bench_sim_budget measures the
 * same on GEMM 512^3 against the full simulation); pairs whose full
 * latencies differ by 1.5x or more keep their order. */
Test(sim, dense_sampling_keeps_ranking)
{
    loom_target t = spr();
    enum { NS = 8 };
    double full_lat[NS], samp_lat[NS];
    for (int i = 0; i < NS; i++) {
        kern k;
        dense_gemm(&k, 160, i);
        loom_sim_result full, a, b;
        loom_error err;
        cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &t, 1e15, &full, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(full.sampled, 0);
        double budget = full.events / 40;
        cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &t, budget, &a, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &t, budget, &b, &err), LOOM_OK, "%s", err.msg);
        cr_expect_eq(memcmp(&a, &b, sizeof a), 0, "schedule %d: sampled runs differ", i);
        cr_expect_eq(a.sampled, 1, "schedule %d", i);
        cr_expect_lt(a.events, 4 * budget, "schedule %d: %g events for a budget of %g", i, a.events, budget);
        cr_expect_lt(fabs(a.flops - full.flops), 0.1 * full.flops, "schedule %d: flops %g vs %g", i, a.flops,
                     full.flops);
        cr_expect_lt(fabs(a.latency_s / full.latency_s - 1), 0.25, "schedule %d: sampled %g s, full %g s", i,
                     a.latency_s, full.latency_s);
        full_lat[i] = full.latency_s;
        samp_lat[i] = a.latency_s;
        unload(&k);
    }
    for (int i = 0; i < NS; i++)
        for (int j = 0; j < NS; j++)
            if (full_lat[i] * 1.5 <= full_lat[j])
                cr_expect_lt(samp_lat[i], samp_lat[j], "schedules %d and %d: full %g < %g s, sampled %g vs %g s", i,
                             j, full_lat[i], full_lat[j], samp_lat[i], samp_lat[j]);
}

/* Unswitched selects (sim.h, model 5): T(i, f, c) = relu(Z(i, f)) W(f, c)
 * with c innermost (auto-vectorized, 16 lanes): the relu does not depend on
 * c, cc unswitches the c loop on it -- one unpredictable branch per c loop
 * instance, 8 x 4 = 32 of them, charged LOOM_SIM_SELECT_MISS_RATE each,
 * on top of the branch misses of the same nest without the relu. */
Test(sim, invariant_select_is_a_branch)
{
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    const char *head = "param I = 8\nparam F = 4\nparam C = 16\ntensor Z(I, F) dense\ntensor W(F, C) dense\n"
                       "tensor T(I, F, C) dense output\n";
    char a[512], b[512];
    snprintf(a, sizeof a, "%sT(i, f, c) = relu(Z(i, f)) * W(f, c)\n", head);
    snprintf(b, sizeof b, "%sT(i, f, c) = Z(i, f) * W(f, c)\n", head);
    kern ka, kb;
    load(&ka, a, NULL, NULL, 1);
    load(&kb, b, NULL, NULL, 1);
    loom_sim_result ra = sim(&ka, &t), rb = sim(&kb, &t);
    cr_expect_eq(ra.branch_misses - rb.branch_misses, 32 * LOOM_SIM_SELECT_MISS_RATE, "branch misses %g vs %g",
                 ra.branch_misses, rb.branch_misses);
    unload(&ka);
    unload(&kb);
}

/* Store forwarding (sim.h "Latency chain", model 5): SpMM C(i, f) +=
 * A(i, k) B(k, f), F = 16 (one vector), on one row of 1000 entries, naive
 * serial nest (no cache write: C's row is accumulated in memory): each of
 * the 999 accumulations after the first adds to the vector C[0, 0..15] the
 * previous one stored, waiting for its FMA (4 cycles, FP_LATENCY of
 * sim_exec.c) and its store forwarded to the load:
 * compute >= 999 x (4 + LOOM_SIM_STORE_FORWARD_CYCLES); without forwarding
 * the chain (3996) is below the nest's throughput (~4030) and the bound of
 * 999 x 5 fails. */
Test(sim, memory_accumulation_waits_for_store_forwarding)
{
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    kern k;
    load(&k,
         "param F = 16\ntensor A(M, K) csr\ntensor B(K, F) dense\ntensor C(M, F) dense output\n"
         "C(i, f) += A(i, k) * B(k, f)\n",
         "A", heavy_mtx("row.mtx", 1, 1000), 1);
    loom_sim_result r = sim(&k, &t);
    cr_expect_geq(r.compute_cycles, 999 * (4 + LOOM_SIM_STORE_FORWARD_CYCLES), "compute %g", r.compute_cycles);
    /* forwarding costs at least a cycle: the FMA latency alone is not the bound */
    cr_expect_gt(r.compute_cycles, 999 * (4 + 1), "compute %g", r.compute_cycles);
    unload(&k);
}

/* Model 14: a float sum in a loop cc auto-vectorizes without the schedule
 * vectorizing it (SDDMM's dot product, d not vectorized) keeps its order
 * (no -ffast-math): GCC 12 multiplies a vector of lanes, then adds them to
 * the sum one at a time (a shuffle and a scalar add each), so every row's
 * 64 adds wait for each other: >= 64 rows x 64 x FP_LATENCY (4) cycles of
 * chain.  Before model 14 the loop was charged as vector code with a chain
 * of one add per vector (4 vectors a row: 64 x 16 cycles).  The 180 us
 * SDDMM record of the Emerald Rapids table was simulated at 36.5 us, the
 * simulator's favourite; with the rule 459 us. */
Test(sim, autovectorized_float_sum_keeps_its_order)
{
    loom_target t;
    tiny_target(&t, 1, 32768, 8);
    kern k;
    load(&k,
         "param D = 64\nparam N = 64\ntensor X(N, D) dense\ntensor Y(N, D) dense\ntensor S(N) dense output\n"
         "S(i) += X(i, d) * Y(i, d)\n",
         NULL, NULL, 1);
    loom_sim_result r = sim(&k, &t);
    cr_expect_geq(r.compute_cycles, 64.0 * 64 * 4, "compute %g cycles", r.compute_cycles);
    cr_expect_float_eq(r.flops, 2.0 * 64 * 64, 0.5, "FLOPs %g", r.flops);
    unload(&k);
}

/* Functional warming (sim.h "Sampling", model 7): before a sampled block
 * whose predecessor was skipped, that block's iterations run with their
 * counters thrown away, so the sampled rows find in the caches the lines
 * the skipped rows of Cora (which share B's rows with them) brought in;
 * and a row of B a sampled block touches first counts as a compulsory miss
 * only while the run's compulsory misses stay within B's lines (model 16,
 * spr-2c starts cold).  On 4 schedules of Cora SpMM (F = 16) simulated
 * with a third of their events, the latency is within 1.15x of the whole
 * simulation (1.06-1.09x; 1.18-1.30x with the warm-up alone, 1.60-1.99x
 * with neither) and the L1 misses within 6%. */
Test(sim, sampling_warms_before_a_block)
{
    loom_target t = spr();
    for (int sch = 0; sch < 4; sch++) {
        kern k;
        cora_spmm(&k, sch);
        loom_sim_result full = sim(&k, &t), a;
        loom_error err;
        cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &t, full.events / 3, &a, &err), LOOM_OK, "%s", err.msg);
        cr_expect_eq(a.sampled, 1, "schedule %d", sch);
        double lat = a.latency_s / full.latency_s, l1 = a.misses[0] / full.misses[0];
        cr_expect(lat < 1.15 && lat > 0.9, "schedule %d: sampled / whole latency %.3f", sch, lat);
        cr_expect(fabs(l1 - 1) < 0.06, "schedule %d: sampled / whole L1 misses %.3f", sch, l1);
        unload(&k);
    }
}

/* Cora SpMM's data (440 KB) on two levels: 32 KB L1, a shared 768 KB last
 * level that holds all of it but not twice, so no prewarm: the run starts
 * cold either way, only model 16's rule differs, and the whole run's DRAM
 * bytes are its compulsory misses. */
static void small_llc_target(loom_target *t, int warm)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"name\": \"small-llc\", \"cores\": 1, \"vector_bits\": 512, \"fma_units\": 1, \"ghz\": 1.0,"
             " \"issue_width\": 4, \"load_ports\": 1, \"store_ports\": 1,"
             " \"caches\": [{\"name\": \"L1d\", \"size\": 32768, \"assoc\": 8, \"line\": 64, \"latency\": 4,"
             " \"shared\": false}, {\"name\": \"L2\", \"size\": 786432, \"assoc\": 16, \"line\": 64,"
             " \"latency\": 20, \"shared\": true}],"
             " \"memory\": {\"bandwidth\": 1.28e11, \"core_bandwidth\": 6.4e10, \"latency_ns\": 100},"
             " \"model\": {\"mlp\": 2, \"overlap\": 0.5, \"gather_cycles_per_lane\": 0, \"masked_lane_cycles\": 0,"
             " \"branch_miss_cycles\": 10, \"parallel_overhead_ns\": 1000, \"autovectorize\": true,"
             " \"warm_caches\": %s}}",
             warm ? "true" : "false");
    loom_error err;
    cr_assert_eq(loom_target_parse(json, "<small-llc>", t, &err), LOOM_OK, "%s", err.msg);
}

/* Model 16 (sim.h "Sampling"): lines a sampled block touches first.  Cold
 * caches: the whole run misses once on each line, so the sampled run's
 * DRAM bytes are the whole run's within 10% (442,995 against 441,984;
 * without the rule 579,126, 1.31x: every row of B a sampled block touched
 * first missed, as if no skipped row had gathered it).  Warm
 * caches: a first touch of B is found with the probability B's reuse
 * gives, so fewer DRAM bytes than cold; A's crd and vals (10,556 nonzeros,
 * 8 bytes each) are streamed, each line touched once, and stay cold.
 * Model 86: the warm-caches target's run also writes C (2,708 x 16 floats)
 * back to memory once, what the cold target's run leaves dirty in L2 when
 * it ends; those bytes aside.  Deterministic. */
Test(sim, sampled_first_touches)
{
    loom_target cold, warm;
    small_llc_target(&cold, 0);
    small_llc_target(&warm, 1);
    kern k;
    cora_spmm(&k, 0);
    loom_sim_result full, c, w, w2;
    loom_error err;
    cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &cold, 1e15, &full, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(full.sampled, 0);
    double budget = full.events / 5;
    cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &cold, budget, &c, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &warm, budget, &w, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &warm, budget, &w2, &err), LOOM_OK, "%s", err.msg);
    cr_expect_eq(memcmp(&w, &w2, sizeof w), 0);
    cr_expect(c.sampled && w.sampled);
    cr_expect_lt(fabs(c.dram_bytes / full.dram_bytes - 1), 0.1, "cold: sampled %g bytes, whole %g", c.dram_bytes,
                 full.dram_bytes);
    double c_out = 2708.0 * 16 * 4; /* model 86: C written back */
    cr_expect_lt(w.dram_bytes - c_out, 0.95 * c.dram_bytes, "warm %g bytes (C's write-back aside), cold %g",
                 w.dram_bytes - c_out, c.dram_bytes);
    cr_expect_geq(w.dram_bytes, 0.9 * 10556 * 8, "warm %g bytes", w.dram_bytes);
    unload(&k);
}

/* Model 22 (sim_machine.h "Shared pages"): y = 2 x over 512 x 512 floats on
 * spr-2c's two cores.  Parallel over the rows, each core stores to its own
 * 256 rows (2 KiB each): no page of y is stored to by both, and nothing is
 * charged.  Reordered and parallel over the columns, each core stores to
 * one half of every row, so every page of y is both cores'; the cores'
 * misses on y's lines (at least its 16,384 lines, each written once) are
 * transfers, and the run is slower by their stall.  On one core nothing is
 * shared; on a target without a streamer (stream_lines 0, as spr-2c is
 * written) the rule is off. */
static loom_sim_result sim_y2x(int by_columns, int cores, int streamer)
{
    kern k;
    loom_error err;
    memset(&k, 0, sizeof k);
    const char *w = write_tmp("y2x.loom", "param M = 512\nparam N = 512\ntensor x(M, N) dense\n"
                                          "tensor y(M, N) dense output\ny(i, j) = x(i, j) * 2.0\n");
    cr_assert_eq(loom_program_parse_file(w, &k.prog, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_dataset_load(k.prog, NULL, 0, NULL, 0, 1, &k.ds, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *s = malloc(sizeof *s);
    cr_assert_eq(loom_schedule_init(s, k.prog, NULL, &err), LOOM_OK, "%s", err.msg);
    int b, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(s, "y", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(s, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    if (by_columns) {
        int order[2] = {loops[1], loops[0]};
        cr_assert_eq(loom_reorder(s, order, 2, &err), LOOM_OK, "%s", err.msg);
    }
    cr_assert_eq(loom_parallel(s, by_columns ? loops[1] : loops[0], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_lower(s, &k.f, &err), LOOM_OK, "%s", err.msg);
    free(s);
    loom_target t = spr();
    t.cores = cores;
    t.stream_lines = streamer ? 8 : 0;
    loom_sim_result r = sim(&k, &t);
    unload(&k);
    return r;
}

Test(sim, pages_stored_by_two_cores_cost_transfers)
{
    loom_sim_result rows = sim_y2x(0, 2, 1), cols = sim_y2x(1, 2, 1), one = sim_y2x(1, 1, 1),
                    plain = sim_y2x(1, 2, 0);
    cr_expect_eq(rows.page_transfers, 0, "rows split: %g transfers", rows.page_transfers);
    cr_expect_geq(cols.page_transfers, 16384, "columns split: %g transfers", cols.page_transfers);
    cr_expect_leq(cols.page_transfers, cols.misses[0], "%g transfers, %g L1 misses", cols.page_transfers,
                  cols.misses[0]);
    cr_expect_eq(one.page_transfers, 0, "one core: %g transfers", one.page_transfers);
    cr_expect_eq(plain.page_transfers, 0, "no streamer in the target: %g transfers", plain.page_transfers);
    cr_expect_lt(plain.latency_s, cols.latency_s, "%g s without the rule, %g s with it", plain.latency_s,
                 cols.latency_s);
    /* the transfers' stall: spr-2c's L3 (no miss_cost) costs its latency over mlp a miss */
    loom_target t = spr();
    double per = LOOM_SIM_PAGE_TRANSFER_MISSES * t.caches[2].latency / t.mlp;
    cr_expect_gt(cols.memory_cycles, cols.page_transfers * per * 0.99, "memory %g cycles, transfers' stall %g",
                 cols.memory_cycles, cols.page_transfers * per);
}

/* sim.h "Cycles", diagnostics: LOOM_SIM_DUMP prints each core's terms of a
 * region on stderr and changes nothing.  y = 2x split by rows on two cores:
 * one parallel region, so two lines, and the region's cycles are the larger
 * core's plus the parallel region's overhead. */
Test(sim, dump_prints_each_cores_terms_and_changes_nothing)
{
    loom_sim_result plain = sim_y2x(0, 2, 1);
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    fflush(stderr);
    int saved = dup(2);
    cr_assert_geq(saved, 0);
    cr_assert_eq(dup2(fileno(log), 2), 2);
    setenv("LOOM_SIM_DUMP", "1", 1);
    loom_sim_result dumped = sim_y2x(0, 2, 1);
    unsetenv("LOOM_SIM_DUMP");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    cr_expect_eq(dumped.cycles, plain.cycles, "%.17g cycles dumped, %.17g without", dumped.cycles, plain.cycles);
    rewind(log);
    char line[512];
    int lines = 0;
    double most = 0;
    while (fgets(line, sizeof line, log)) {
        if (strncmp(line, "loom-sim-core ", 14) != 0)
            continue;
        int par = -1, core = -1;
        cr_assert_eq(sscanf(line, "loom-sim-core par=%d core=%d", &par, &core), 2, "%s", line);
        cr_expect_eq(par, 1, "%s", line);
        cr_expect_eq(core, lines, "%s", line);
        const char *c = strstr(line, " cyc=");
        cr_assert_not_null(c, "%s", line);
        most = fmax(most, atof(c + 5));
        lines++;
    }
    fclose(log);
    cr_expect_eq(lines, 2, "%d lines of terms", lines);
    loom_target t = spr();
    double want = most + t.parallel_overhead_ns * t.ghz;
    cr_expect(fabs(plain.cycles - want) <= 1e-5 * plain.cycles, "%.9g cycles, the larger core's plus overhead %.9g",
              plain.cycles, want);
}

/* Model 23 (sim.h "Hidden misses"): on a target with an issue/chain norm
 * (a calibrated host), a row loop's mispredicted exits cost only the miss
 * cycles past the latency chain still executing.  SpMM F = 16, serial, over
 * 2,000 rows of 1-16 nonzeros (a hash): one 16-lane accumulator a row, so
 * its chain (4 cycles a nonzero, 8.5 a row) outlasts the row exits' misses
 * (at most one a row) and hides them all: the kernel takes the same cycles
 * at 24.5 and at 0 cycles a miss.  The hand-written target (no norm) still
 * charges them. */
Test(sim, a_long_chain_hides_branch_misses_on_calibrated_targets)
{
    enum { N = 2000 };
    size_t cap = (size_t)N * 16 * 24 + 256, len = 0;
    char *mtx = malloc(cap);
    cr_assert_not_null(mtx);
    int nnz = 0, rl[N];
    for (int i = 0; i < N; i++) {
        uint64_t h = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
        rl[i] = 1 + (int)((h >> 40) % 16);
        nnz += rl[i];
    }
    len += (size_t)snprintf(mtx + len, cap - len, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", N,
                            N, nnz);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < rl[i]; j++)
            len += (size_t)snprintf(mtx + len, cap - len, "%d %d 1\n", i + 1, (i + 37 * j) % N + 1);
    const char *path = write_tmp("rows16.mtx", mtx);
    free(mtx);
    kern k;
    serial_spmm16(&k, path);
    loom_target cal = spr(), zero;
    cal.issue_chain_norm = 2;
    cal.branch_miss_cycles = 24.5;
    zero = cal;
    zero.branch_miss_cycles = 0;
    loom_sim_result with = sim(&k, &cal), none = sim(&k, &zero);
    cr_expect_gt(with.branch_misses, N / 4, "%g row-exit misses", with.branch_misses);
    cr_expect_float_eq(with.cycles, none.cycles, 1e-9 * none.cycles, "%.9g cycles with misses, %.9g without",
                       with.cycles, none.cycles);
    loom_target hand = spr(), hand0;
    hand.branch_miss_cycles = 24.5;
    hand0 = hand;
    hand0.branch_miss_cycles = 0;
    loom_sim_result hw = sim(&k, &hand), h0 = sim(&k, &hand0);
    /* at least half of each miss: the memory overlap halves compute added under a longer memory term */
    cr_expect_gt(hw.cycles - h0.cycles, 0.4 * hw.branch_misses * 24.5, "hand-written target: %g cycles for %g misses",
                 hw.cycles - h0.cycles, hw.branch_misses);
    unload(&k);
}

/* Model 21 (sim.h "Sampling"): a sampled loop's skipped iterations are
 * weighed by their work.  SpMM (F = 16, serial) over 4,096 rows of one
 * nonzero each but 1 in 256, drawn by a hash (16 rows), of 2,048: the long
 * rows hold 89% of the FLOPs.  With a fifth of the full run's events as the
 * budget the row loop is sampled; its FLOPs (2 x F a nonzero) come out
 * within 1% of the full run's (0.03% when written), where scaling the
 * skipped rows by their count was off by the share of long rows the
 * simulated blocks happened to hit (4.6% too many). */
Test(sim, sampling_weighs_iterations_by_work)
{
    enum { N = 4096, LONG = 2048 };
    size_t cap = (size_t)N * 24 + (size_t)N / 16 * LONG * 24 + 256, len = 0;
    char *mtx = malloc(cap);
    cr_assert_not_null(mtx);
    int nnz = 0, longs = 0;
    unsigned char is_long[N];
    for (int i = 0; i < N; i++) {
        uint64_t h = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
        is_long[i] = (h >> 56) == 0; /* 1 in 256 */
        longs += is_long[i];
        nnz += is_long[i] ? LONG : 1;
    }
    len += (size_t)snprintf(mtx + len, cap - len, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", N,
                            N, nnz);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < (is_long[i] ? LONG : 1); j++)
            len += (size_t)snprintf(mtx + len, cap - len, "%d %d 1\n", i + 1, (i + 7 * j) % N + 1);
    const char *path = write_tmp("skewed.mtx", mtx);
    free(mtx);
    cr_assert_gt(longs, 4, "the hash gives %d long rows", longs);
    kern k;
    serial_spmm16(&k, path);
    loom_error err;
    loom_target t = spr();
    loom_sim_result full, a;
    cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &t, 1e12, &full, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(full.sampled, 0);
    cr_expect_float_eq(full.flops, 2.0 * 16 * nnz, 0.5, "full run: %g FLOPs", full.flops);
    cr_assert_eq(loom_sim_run_budget(k.f, k.ds, &t, full.events / 5, &a, &err), LOOM_OK, "%s", err.msg);
    cr_expect_eq(a.sampled, 1);
    cr_expect_lt(fabs(a.flops / full.flops - 1), 0.01, "sampled %g FLOPs against %g", a.flops, full.flops);
    unload(&k);
}
