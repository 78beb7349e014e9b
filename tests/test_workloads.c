/* End to end: every workload lowered with its default loop nest, compiled,
 * run in a child process on real data (Cora; SuiteSparse matrices from
 * ../shared/data when present) and checked against the reference
 * interpreter.  Also: lowering rules that must hold on their own
 * (coiteration, mask guards, read-modify-write reductions, discordant
 * orders). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/ir/program.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/pipeline.h"

#define CORA "data/cora_adj.mtx"
#define CORA_X "data/cora_features.mtx"

static const char *shared_data(void)
{
    const char *e = getenv("LOOM_SHARED_DATA");
    return e ? e : "../shared/data";
}

typedef struct outcome {
    loom_status load;        /* parse + load */
    loom_run_result res;
    char msg[1200];
} outcome;

static loom_run_opts quick_opts(int serial)
{
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0.005;
    o.measure.min_repeats = 2;
    o.measure.time_limit = 60;
    o.serial = serial;
    return o;
}

static outcome run_prog(loom_program *prog, const char *const *data, const char *const *params, int serial)
{
    outcome oc;
    memset(&oc, 0, sizeof oc);
    loom_data_spec specs[8];
    loom_param_spec ps[8];
    int ns = 0, np = 0;
    for (; data && data[ns]; ns++) {
        const char *eq = strchr(data[ns], '=');
        snprintf(specs[ns].tensor, sizeof specs[ns].tensor, "%.*s", (int)(eq - data[ns]), data[ns]);
        snprintf(specs[ns].path, sizeof specs[ns].path, "%s", eq + 1);
    }
    for (; params && params[np]; np++) {
        const char *eq = strchr(params[np], '=');
        snprintf(ps[np].name, sizeof ps[np].name, "%.*s", (int)(eq - params[np]), params[np]);
        ps[np].value = atoll(eq + 1);
    }
    loom_error err;
    loom_error_clear(&err);
    loom_dataset *ds = NULL;
    oc.load = loom_dataset_load(prog, specs, ns, ps, np, 7, &ds, &err);
    if (oc.load) {
        loom_error_format(&err, oc.msg, sizeof oc.msg);
        return oc;
    }
    loom_run_opts o = quick_opts(serial);
    oc.load = loom_pipeline_run(prog, ds, NULL, &o, &oc.res, &err);
    if (oc.load)
        loom_error_format(&err, oc.msg, sizeof oc.msg);
    else
        snprintf(oc.msg, sizeof oc.msg, "%s", oc.res.message);
    loom_dataset_free(ds);
    return oc;
}

static outcome run_file(const char *path, const char *const *data, const char *const *params, int serial)
{
    loom_program *prog = NULL;
    loom_error err;
    loom_error_clear(&err);
    outcome oc;
    memset(&oc, 0, sizeof oc);
    oc.load = loom_program_parse_file(path, &prog, &err);
    if (oc.load) {
        loom_error_format(&err, oc.msg, sizeof oc.msg);
        return oc;
    }
    oc = run_prog(prog, data, params, serial);
    loom_program_free(prog);
    return oc;
}

static outcome run_text(const char *text, const char *const *data, const char *const *params, int serial)
{
    loom_program *prog = NULL;
    loom_error err;
    loom_error_clear(&err);
    outcome oc;
    memset(&oc, 0, sizeof oc);
    oc.load = loom_program_parse_string(text, "<test>", &prog, &err);
    if (oc.load) {
        loom_error_format(&err, oc.msg, sizeof oc.msg);
        return oc;
    }
    oc = run_prog(prog, data, params, serial);
    loom_program_free(prog);
    return oc;
}

static void expect_correct(outcome oc, const char *what)
{
    cr_assert_eq(oc.load, LOOM_OK, "%s: pipeline failed: %s", what, oc.msg);
    cr_assert_eq(oc.res.status, LOOM_OK, "%s: %s: %s", what, loom_status_name(oc.res.status), oc.msg);
    cr_assert(oc.res.correct, "%s: not correct (max rel err %g, tol %g)", what, oc.res.max_rel_err, oc.res.tol);
    cr_assert_gt(oc.res.latency_s, 0.0, "%s: no latency", what);
    cr_assert_gt(oc.res.flops, 0.0, "%s: no flops", what);
}

/* ---- every workload on Cora ------------------------------------------- */

Test(workloads, spmv_cora)
{
    const char *d[] = {"A=" CORA, NULL};
    outcome oc = run_file("workloads/spmv.loom", d, NULL, 0);
    expect_correct(oc, "spmv");
    cr_assert_eq(oc.res.flops, 2.0 * 10556, "spmv flops = 2 nnz");
}

Test(workloads, spmm_cora)
{
    const char *d[] = {"A=" CORA, NULL};
    const char *p[] = {"F=64", NULL};
    outcome oc = run_file("workloads/spmm.loom", d, p, 0);
    expect_correct(oc, "spmm");
    cr_assert_eq(oc.res.flops, 2.0 * 10556 * 64, "spmm flops = 2 nnz F");
}

Test(workloads, spmm_cora_serial_f7)
{
    /* an odd feature width: no vector-friendly extent */
    const char *d[] = {"A=" CORA, NULL};
    const char *p[] = {"F=7", NULL};
    expect_correct(run_file("workloads/spmm.loom", d, p, 1), "spmm F=7 serial");
}

Test(workloads, sddmm_cora)
{
    const char *d[] = {"M=" CORA, NULL};
    outcome oc = run_file("workloads/sddmm.loom", d, NULL, 0);
    expect_correct(oc, "sddmm");
    /* every operation the statement states, per iteration point (stored entry x d):
     * M*Q, *K and the sum */
    cr_assert_eq(oc.res.flops, 10556.0 * 64 * 3, "sddmm flops");
}

Test(workloads, gcn_cora)
{
    const char *d[] = {"A=" CORA, "X=" CORA_X, NULL};
    expect_correct(run_file("workloads/gcn.loom", d, NULL, 0), "gcn");
}

Test(workloads, gemm)
{
    const char *p[] = {"M=96", "N=80", "K=72", NULL};
    outcome oc = run_file("workloads/gemm.loom", NULL, p, 0);
    expect_correct(oc, "gemm");
    cr_assert_eq(oc.res.flops, 2.0 * 96 * 80 * 72);
}

Test(workloads, attention_dense)
{
    expect_correct(run_file("workloads/attention.loom", NULL, NULL, 0), "attention");
}

Test(workloads, attention_causal)
{
    expect_correct(run_file("workloads/attention_causal.loom", NULL, NULL, 0), "attention_causal");
}

Test(workloads, attention_band)
{
    expect_correct(run_file("workloads/attention_band.loom", NULL, NULL, 0), "attention_band");
}

Test(workloads, sparse_attention_cora)
{
    const char *d[] = {"A=" CORA, NULL};
    expect_correct(run_file("workloads/sparse_attention.loom", d, NULL, 0), "sparse_attention");
}

Test(workloads, attention_graph_mha_cora)
{
    const char *d[] = {"M=" CORA, NULL};
    expect_correct(run_file("workloads/attention_graph_mha.loom", d, NULL, 0), "attention_graph_mha");
}

/* ---- SuiteSparse matrices from the shared data, when present ----------- */

static void suitesparse_case(const char *name, const char *workload, const char *tensor, const char *param)
{
    char path[512], spec[600];
    snprintf(path, sizeof path, "%s/suitesparse/%s", shared_data(), name);
    if (access(path, R_OK) != 0)
        cr_skip_test("%s absent (shared data not here)", path);
    snprintf(spec, sizeof spec, "%s=%s", tensor, path);
    const char *d[] = {spec, NULL};
    const char *p[] = {param, NULL};
    char what[700];
    snprintf(what, sizeof what, "%s on %s", workload, name);
    expect_correct(run_file(workload, d, p, 0), what);
}

Test(suitesparse, spmm_bcsstk13) { suitesparse_case("bcsstk13.mtx", "workloads/spmm.loom", "A", "F=32"); }
Test(suitesparse, spmm_4elt) { suitesparse_case("4elt.mtx", "workloads/spmm.loom", "A", "F=32"); }
Test(suitesparse, spmv_mbeacxc) { suitesparse_case("mbeacxc.mtx", "workloads/spmv.loom", "A", NULL); }
Test(suitesparse, sddmm_bcspwr10) { suitesparse_case("bcspwr10.mtx", "workloads/sddmm.loom", "M", "D=16"); }
Test(suitesparse, sparse_attention_4elt)
{
    suitesparse_case("4elt.mtx", "workloads/sparse_attention.loom", "A", "D=16");
}

/* ---- lowering rules ----------------------------------------------------- */

Test(lowering, csc_and_dcsr_match_reference)
{
    const char *d[] = {"A=" CORA_X, NULL};
    const char *csc = "param F = 8\ntensor A(N, K) csc\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
                      "C(i, f) += A(i, k) * B(k, f)\n";
    const char *dcsr = "param F = 8\ntensor A(N, K) dcsr\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
                       "C(i, f) += A(i, k) * B(k, f)\n";
    expect_correct(run_text(csc, d, NULL, 0), "spmm csc");
    expect_correct(run_text(dcsr, d, NULL, 0), "spmm dcsr");
}

Test(lowering, coiteration_of_two_patterns)
{
    /* A csr and B dcsr over the same graph are two patterns: a merge loop */
    const char *text = "tensor A(N, N) csr\ntensor B(N, N) dcsr\ntensor x(N) dense\ntensor y(N) dense output\n"
                       "y(i) = A(i, j) * B(i, j) * x(j)\n";
    const char *d[] = {"A=" CORA, "B=" CORA, NULL};
    outcome oc = run_text(text, d, NULL, 0);
    expect_correct(oc, "coiteration");
    /* the intersection is the whole graph: 3 FLOPs + 1 add per edge */
    cr_assert_eq(oc.res.flops, 10556.0 * 3);
}

Test(lowering, graph_under_causal_mask)
{
    /* a compressed level drives j; the causal range becomes a guard */
    const char *text = "param F = 4\ntensor A(N, N) csr\ntensor W(N, N) causal\ntensor B(N, F) dense\n"
                       "tensor C(N, F) dense output\nC(i, f) += A(i, j) * W(i, j) * B(j, f)\n";
    const char *d[] = {"A=" CORA, NULL};
    outcome oc = run_text(text, d, NULL, 0);
    expect_correct(oc, "graph x causal");
    /* undirected graph without self loops: exactly half the edges have j < i */
    cr_assert_eq(oc.res.flops, 10556.0 / 2 * 4 * 3);
}

static loom_schedule *naive(const char *path, int serial, loom_program **prog)
{
    loom_error err;
    cr_assert_eq(loom_program_parse_file(path, prog, &err), LOOM_OK, "%s", err.msg);
    /* bind sizes without data: any positive values lower the same code */
    for (int z = 0; z < (*prog)->nsizes; z++)
        if (!(*prog)->sizes[z].bound)
            cr_assert_eq(loom_program_bind_size(*prog, (*prog)->sizes[z].name, 100, "test", &err), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(*prog, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_naive(sch, *prog, serial, &err), LOOM_OK, "%s", err.msg);
    return sch;
}

static char *source_of(const loom_schedule *sch, loom_status want, char *msg, size_t n)
{
    lir_func *f = NULL;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_lower(sch, &f, &err);
    snprintf(msg, n, "%s", err.msg);
    cr_assert_eq(st, want, "lowering gave %s: %s", loom_status_name(st), err.msg);
    if (st)
        return NULL;
    char *src = NULL;
    cr_assert_eq(loom_codegen_c(f, NULL, &src, &err), LOOM_OK);
    loom_lir_func_free(f);
    return src;
}

static int loop_rv(loom_schedule *sch, const char *block, int k)
{
    loom_error err;
    int b, loops[LOOM_MAX_LOOPS], n;
    cr_assert_eq(loom_get_block(sch, block, &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, b, loops, &n, &err), LOOM_OK);
    cr_assert_lt(k, n);
    return loops[k];
}

Test(lowering, reduction_outside_free_loop_is_read_modify_write)
{
    loom_program *prog = NULL;
    loom_schedule *sch = naive("workloads/spmm.loom", 1, &prog);
    char msg[1024];
    /* default order for SpMM is i, k, f (row-wise): k reduced outside f */
    const loom_stage *S = &sch->stages[0];
    cr_assert_str_eq(prog->vars[S->iters[S->loops[0].iter].var].name, "i");
    cr_assert_str_eq(prog->vars[S->iters[S->loops[1].iter].var].name, "k");
    cr_assert_str_eq(prog->vars[S->iters[S->loops[2].iter].var].name, "f");
    char *src = source_of(sch, LOOM_OK, msg, sizeof msg);
    cr_assert(strstr(src, "memset(C_vals") != NULL, "C must be zero-filled before accumulation:\n%s", src);
    cr_assert(strstr(src, "A2_pos[pA1]") != NULL, "a position loop over A's compressed level:\n%s", src);
    cr_assert(strstr(src, "#pragma omp") == NULL, "serial nest has no OpenMP pragma");
    free(src);
    /* the order i, f, k keeps the reduction innermost: scalar accumulator, no fill */
    int lk = loop_rv(sch, "C", 1), lf = loop_rv(sch, "C", 2);
    loom_error err;
    int order[2] = {lf, lk};
    cr_assert_eq(loom_reorder(sch, order, 2, &err), LOOM_OK, "%s", err.msg);
    src = source_of(sch, LOOM_OK, msg, sizeof msg);
    cr_assert(strstr(src, "memset(C_vals") == NULL, "no fill needed:\n%s", src);
    cr_assert(strstr(src, "float acc_C") != NULL, "scalar accumulator:\n%s", src);
    free(src);
    free(sch);
    loom_program_free(prog);
}

Test(lowering, discordant_order_is_refused)
{
    loom_program *prog = NULL;
    loom_schedule *sch = naive("workloads/spmm.loom", 1, &prog);
    loom_error err;
    char msg[1024];
    /* k (A's compressed level) outside i (its parent) */
    int order[2] = {loop_rv(sch, "C", 1), loop_rv(sch, "C", 0)};
    cr_assert_eq(loom_reorder(sch, order, 2, &err), LOOM_OK, "%s", err.msg);
    cr_assert_null(source_of(sch, LOOM_ERR_SEMANTIC, msg, sizeof msg));
    cr_assert(strstr(msg, "discordant-traversal") != NULL, "%s", msg);
    free(sch);
    loom_program_free(prog);
}

Test(lowering, cyclic_level_orders_have_no_concordant_nest)
{
    const char *text = "tensor A(N, N) csr\ntensor B(N, N) csr\ntensor y(N) dense output\n"
                       "y(i) = A(i, j) * B(j, i)\n";
    loom_program *prog = NULL;
    loom_error err;
    cr_assert_eq(loom_program_parse_string(text, "<cycle>", &prog, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_program_bind_size(prog, "N", 10, "test", &err), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(prog, &err), LOOM_OK);
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_naive(sch, prog, 0, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "discordant-traversal") != NULL, "%s", err.msg);
    cr_assert(strstr(err.msg, "csc") != NULL, "suggests a fix: %s", err.msg);
    free(sch);
    loom_program_free(prog);
}

Test(lowering, parallel_reduction_is_refused)
{
    loom_program *prog = NULL;
    loom_schedule *sch = naive("workloads/spmv.loom", 1, &prog);
    loom_error err;
    char msg[1024];
    cr_assert_eq(loom_parallel(sch, loop_rv(sch, "y", 1), &err), LOOM_OK); /* k: reduced */
    cr_assert_null(source_of(sch, LOOM_ERR_SEMANTIC, msg, sizeof msg));
    cr_assert(strstr(msg, "parallel-reduction") != NULL, "%s", msg);
    free(sch);
    loom_program_free(prog);
}

Test(lowering, causal_bounds_are_computed_not_tested)
{
    loom_program *prog = NULL;
    loom_error err;
    cr_assert_eq(loom_program_parse_file("workloads/attention_causal.loom", &prog, &err), LOOM_OK);
    char *src = NULL;
    cr_assert_eq(loom_pipeline_source(prog, 0, &src, &err), LOOM_OK, "%s", err.msg);
    /* the j loops run to min(i + 1, N): no per-element mask test */
    cr_assert(strstr(src, "LOOM_MIN((i + 1), W_d1)") != NULL, "computed causal bound:\n%s", src);
    cr_assert(strstr(src, " >= lo") == NULL, "no mask guards in causal attention:\n%s", src);
    cr_assert(strstr(src, "expf(") != NULL);
    free(src);
    loom_program_free(prog);
}
