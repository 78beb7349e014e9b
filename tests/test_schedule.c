/* Schedule primitives, lowered, compiled, run on Cora and checked against
 * the reference: every transformation must keep the result. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dsl/schedule/schedule.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/pipeline.h"

#include "schedule_fixture.h"

Test(schedule, spmm_split_feature_loop_and_vectorize)
{
    fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", "F=64");
    int l[LOOM_MAX_LOOPS], out[4];
    loom_error err;
    loops(fx, "C", l); /* i, k, f */
    int64_t fac[2] = {0, 16};
    cr_assert_eq(loom_split(&fx->sch, l[2], 2, NULL, fac, out, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_vectorize(&fx->sch, out[1], &err), LOOM_OK);
    cr_assert_eq(loom_parallel(&fx->sch, l[0], &err), LOOM_OK);
    cr_assert_eq(loom_iter_extent(&fx->sch, 0, fx->sch.stages[0].loops[2].iter), 4, "64 / 16 = 4 outer tiles");
    char *src = source(fx);
    cr_assert(strstr(src, "#pragma omp simd") != NULL, "%s", src);
    free(src);
    expect_correct(fx, "spmm f split 4x16, vectorized");
    teardown(fx);
}

Test(schedule, split_that_overhangs_is_guarded)
{
    fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", "F=20");
    int l[LOOM_MAX_LOOPS], out[4];
    loom_error err;
    loops(fx, "C", l);
    int64_t fac[3] = {0, 3, 4}; /* 20 -> 2 x 3 x 4 = 24 > 20 */
    cr_assert_eq(loom_split(&fx->sch, l[2], 3, NULL, fac, out, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_iter_extent(&fx->sch, 0, fx->sch.stages[0].loops[2].iter), 2);
    /* and a split of the row loop, reordered: f tiles outside the rows */
    int i_split[2];
    int64_t fi[2] = {0, 64};
    cr_assert_eq(loom_split(&fx->sch, l[0], 2, NULL, fi, i_split, &err), LOOM_OK, "%s", err.msg);
    int order[4] = {out[0], i_split[0], i_split[1], l[1]}; /* f.0, i.0, i.1, k, f.1, f.2 */
    cr_assert_eq(loom_reorder(&fx->sch, order, 4, &err), LOOM_OK, "%s", err.msg);
    char *src = source(fx);
    cr_assert(strstr(src, "< 20)") != NULL, "overhanging tiles are guarded:\n%s", src);
    free(src);
    expect_correct(fx, "spmm overhanging split");
    teardown(fx);
}

Test(schedule, split_compressed_coordinate_is_refused)
{
    fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", "F=8");
    int l[LOOM_MAX_LOOPS], out[2];
    loom_error err;
    loops(fx, "C", l);
    int64_t fac[2] = {0, 8};
    cr_assert_eq(loom_split(&fx->sch, l[1], 2, NULL, fac, out, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "split-sparse-coordinate") != NULL, "%s", err.msg);
    teardown(fx);
}

/* A tile of a position split cannot be split again (lowering binds the
 * position from exactly two tiles); the refusal names the rule, and the
 * schedule is unchanged. */
Test(schedule, split_of_a_position_tile_is_refused)
{
    fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", "F=8");
    int l[LOOM_MAX_LOOPS], p[2], out[2];
    loom_error err;
    loops(fx, "C", l);
    cr_assert_eq(loom_pos_split(&fx->sch, l[1], "A", 16, -1, p, &err), LOOM_OK, "%s", err.msg);
    uint64_t before = loom_schedule_hash(&fx->sch);
    int64_t fac[2] = {2, 8};
    cr_assert_eq(loom_split(&fx->sch, p[1], 2, NULL, fac, out, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "split-position-chunk") != NULL, "%s", err.msg);
    cr_assert_eq(loom_schedule_hash(&fx->sch), before);
    teardown(fx);
}

Test(schedule, spmm_pos_split_over_nonzeros)
{
    fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", "F=8");
    int l[LOOM_MAX_LOOPS], out[2];
    loom_error err;
    loops(fx, "C", l);
    cr_assert_eq(loom_pos_split(&fx->sch, l[1], "A", 4, -1, out, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(fx->sch.stages[0].nloops, 4);
    cr_assert_eq(loom_iter_extent(&fx->sch, 0, fx->sch.stages[0].loops[1].iter), 0, "chunks are data-dependent");
    cr_assert_eq(loom_iter_extent(&fx->sch, 0, fx->sch.stages[0].loops[2].iter), 4);
    expect_correct(fx, "spmm pos split 4");
    teardown(fx);
}

/* A 10 x 16 matrix of rows of 0-12 nonzeros (empty rows, rows shorter
 * than, equal to and longer than a chunk of 4) into a temporary file made
 * from template path (mkstemp); row r's k-th nonzero in column
 * (r * a + k * b) mod 16. */
static void write_rows_of_every_length(char *path, int a, int b)
{
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *mtx = fdopen(fd, "w");
    static const int len[] = {0, 1, 3, 4, 5, 8, 9, 0, 12, 2};
    int rows = (int)(sizeof len / sizeof len[0]), nnz = 0;
    for (int r = 0; r < rows; r++)
        nnz += len[r];
    fprintf(mtx, "%%%%MatrixMarket matrix coordinate real general\n%d 16 %d\n", rows, nnz);
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < len[r]; k++)
            fprintf(mtx, "%d %d %g\n", r + 1, (r * a + k * b) % 16 + 1, 0.5 + r - 0.25 * k);
    fclose(mtx);
}

/* SpMM (F = 16) on write_rows_of_every_length(path, a, b), its nonzero
 * loop split into position chunks of chunk; C's loops into l. */
static fixture *spmm_in_position_chunks(char *path, int a, int b, int chunk, int *l)
{
    write_rows_of_every_length(path, a, b);
    char data[64];
    snprintf(data, sizeof data, "A=%s", path);
    fixture *fx = setup("workloads/spmm.loom", data, "F=16");
    int out[2];
    loom_error err;
    loops(fx, "C", l);
    cr_assert_eq(loom_pos_split(&fx->sch, l[1], "A", chunk, -1, out, &err), LOOM_OK, "%s", err.msg);
    return fx;
}

/* A serial position chunk tells the compiler it holds a position
 * (lir.h nonempty, codegen's LOOM_NONEMPTY): rows of every length against
 * the chunk of 4 -- empty rows (no chunk), a short last chunk, exact
 * multiples -- run correctly, and a vectorized chunk, whose lanes past the
 * row are guarded instead, carries no such promise. */
Test(schedule, a_serial_position_chunk_is_promised_nonempty)
{
    char path[] = "/tmp/loom-test-rowsXXXXXX";
    int l[LOOM_MAX_LOOPS];
    loom_error err;
    fixture *fx = spmm_in_position_chunks(path, 5, 1, 4, l);
    char *src = source(fx);
    cr_assert(strstr(src, "k_p1_end = LOOM_NONEMPTY(0, LOOM_MIN(4, ") != NULL, "%s", src);
    free(src);
    expect_correct(fx, "spmm pos split 4, rows of 0-12 nonzeros");
    loops(fx, "C", l);
    cr_assert_eq(loom_vectorize(&fx->sch, l[2], &err), LOOM_OK, "%s", err.msg);
    src = source(fx);
    cr_assert(strstr(src, "LOOM_NONEMPTY(0") == NULL, "a vectorized chunk is guarded, not promised:\n%s", src);
    free(src);
    expect_correct(fx, "spmm pos split 4 vectorized, rows of 0-12 nonzeros");
    teardown(fx);
    unlink(path);
}

/* A position loop that adds into its output in memory at every position
 * counts an offset from the row's start (codegen.c
 * accumulating_position_loop: GCC 12 then keeps a byte offset, which ran
 * 2.1-2.3 cycles a nonzero on Zen 5 where the scaled index ran 4.7-5.0,
 * bench/bench_branch_rows): SpMM without a workspace on rows of 0-12
 * nonzeros prints it and runs correctly, empty rows included; with a row
 * workspace (CacheWrite) the loop adds into registers and keeps the plain
 * form. */
Test(schedule, a_position_loop_accumulating_in_memory_counts_an_offset)
{
    char path[] = "/tmp/loom-test-rowsXXXXXX";
    write_rows_of_every_length(path, 3, 5);
    char data[64];
    snprintf(data, sizeof data, "A=%s", path);
    fixture *fx = setup("workloads/spmm.loom", data, "F=16");
    char *src = source(fx);
    cr_assert(strstr(src, "_len = A2_pos[") != NULL && strstr(src, "_at = 0; ") != NULL, "%s", src);
    cr_assert(strstr(src, "_end = A2_pos[") == NULL, "the plain form too:\n%s", src);
    free(src);
    expect_correct(fx, "spmm accumulating in C, rows of 0-12 nonzeros");
    int l[LOOM_MAX_LOOPS], b;
    loom_error err;
    loops(fx, "C", l);
    cr_assert_eq(loom_get_block(&fx->sch, "C", &b, &err), LOOM_OK);
    cr_assert_eq(loom_cache_write(&fx->sch, b, l[0], &err), LOOM_OK, "%s", err.msg);
    src = source(fx);
    /* guarded by the row's emptiness test, its bound said nonempty (lir.h loom_lir_workspace_row_loop) */
    cr_assert(strstr(src, "_end = LOOM_NONEMPTY(A2_pos[") != NULL && strstr(src, "_at = 0; ") == NULL,
              "a workspace's loop keeps the plain form:\n%s", src);
    cr_assert(strstr(src, "if (A2_pos[pA1] < A2_pos[(pA1 + 1)]) {") != NULL, "the row's guard:\n%s", src);
    free(src);
    expect_correct(fx, "spmm with a row workspace, rows of 0-12 nonzeros");
    teardown(fx);
    unlink(path);
}

/* Chunks of one position are never short: their loop runs [0, 1) with no
 * min against what is left of the row (GCC 12 kept a test, a branch and a
 * flag a nonzero for the min in an unrolled chunk loop), and the chunk loop
 * runs over the row's positions themselves -- correct on rows of 0-12
 * nonzeros, rolled and unrolled. */
Test(schedule, position_chunks_of_one_are_a_single_iteration)
{
    char path[] = "/tmp/loom-test-rows1XXXXXX";
    int l[LOOM_MAX_LOOPS];
    loom_error err;
    fixture *fx = spmm_in_position_chunks(path, 7, 3, 1, l);
    char *src = source(fx);
    cr_assert(strstr(src, "k_p1_end = 1;") != NULL, "%s", src);
    cr_assert(strstr(src, "LOOM_MIN(1,") == NULL && strstr(src, "/ 1)") == NULL, "%s", src);
    free(src);
    expect_correct(fx, "spmm pos split 1, rows of 0-12 nonzeros");
    loops(fx, "C", l);
    cr_assert_eq(loom_unroll(&fx->sch, l[2], 4, &err), LOOM_OK, "%s", err.msg);
    src = source(fx);
    cr_assert(strstr(src, "k_p1 < 1;") != NULL, "an unrolled chunk of one runs [0, 1):\n%s", src);
    free(src);
    expect_correct(fx, "spmm pos split 1 unrolled, rows of 0-12 nonzeros");
    teardown(fx);
    unlink(path);
}

Test(schedule, pos_split_needs_a_compressed_level)
{
    fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", "F=8");
    int l[LOOM_MAX_LOOPS], out[2];
    loom_error err;
    loops(fx, "C", l);
    cr_assert_eq(loom_pos_split(&fx->sch, l[2], "A", 4, -1, out, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "pos-on-dense-level") != NULL, "%s", err.msg);
    cr_assert_eq(fx->sch.stages[0].nloops, 3, "a refused primitive leaves the schedule unchanged");
    teardown(fx);
}

/* codegen.c tree_reduction: W lanes (the vector width in floats; for a
 * constant trip count T below it, the largest power of two <= T, at least
 * 4), whole blocks of them, then the last T mod W iterations in order.
 * SDDMM's d vectorized whole (the bound is Q's dimension: W is the vector
 * width, and D < W runs entirely in the tail) and split 2 x D/2 with the
 * inner part vectorized (a constant trip count; 3 is below the smallest
 * tree and keeps the reduction clause), for trip counts that leave a tail
 * on every vector width and exact ones: each kernel agrees with the
 * reference interpreter. */
Test(schedule, sddmm_tree_reduction_every_trip_count)
{
    static const int64_t dims[] = {3, 4, 5, 6, 12, 20, 37, 64};
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++)
        for (int split = 0; split < 2; split++) {
            int64_t D = dims[k];
            if (split && D % 2)
                continue;
            char param[32], what[64];
            snprintf(param, sizeof param, "D=%lld", (long long)D);
            snprintf(what, sizeof what, "D=%lld%s", (long long)D, split ? " split 2 x D/2" : "");
            fixture *fx = setup("workloads/sddmm.loom", "M=data/cora_adj.mtx", param);
            int l[LOOM_MAX_LOOPS], parts[2];
            loom_error err;
            loops(fx, "S", l); /* i, j, d */
            int v = l[2];
            if (split) {
                int64_t fac[2] = {2, D / 2};
                cr_assert_eq(loom_split(&fx->sch, l[2], 2, NULL, fac, parts, &err), LOOM_OK, "%s", err.msg);
                v = parts[1];
            }
            cr_assert_eq(loom_vectorize(&fx->sch, v, &err), LOOM_OK, "%s", err.msg);
            char *src = source(fx);
            int tree = strstr(src, "loom_hsum4(acc_S_rp)") != NULL, want = !split || D / 2 >= 4;
            cr_assert_eq(tree, want, "%s: %s", what, tree ? "a tree below 4 lanes" : "no tree");
            free(src);
            expect_correct(fx, what);
            teardown(fx);
        }
}

/* Vectorized loops too short for a vector (lower.c drop_unit_vectors,
 * codegen.c safelen(2)): d split [D, 1] with its loop of one vectorized is
 * emitted without `omp simd` (the C compiler vectorizes the loop around
 * when it can); a sum of two iterations -- d split [D/2, 2], or SpMV's
 * positions in chunks of 2 -- carries safelen(2); each kernel agrees with
 * the reference interpreter. */
Test(schedule, vector_loops_of_one_and_two_iterations)
{
    fixture *fx = setup("workloads/sddmm.loom", "M=data/cora_adj.mtx", "D=64");
    int l[LOOM_MAX_LOOPS], parts[2];
    loom_error err;
    loops(fx, "S", l); /* i, j, d */
    int64_t one[2] = {64, 1};
    cr_assert_eq(loom_split(&fx->sch, l[2], 2, NULL, one, parts, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_vectorize(&fx->sch, parts[1], &err), LOOM_OK, "%s", err.msg);
    char *src = source(fx);
    cr_assert(strstr(src, "omp simd") == NULL, "a vector loop of one iteration keeps no pragma:\n%s", src);
    cr_assert(strstr(src, "d_1_end = 1;") != NULL, "it is a serial loop of one:\n%s", src);
    free(src);
    expect_correct(fx, "sddmm d split [64, 1], the 1 vectorized");
    teardown(fx);

    fx = setup("workloads/sddmm.loom", "M=data/cora_adj.mtx", "D=8");
    loops(fx, "S", l);
    int64_t two[2] = {4, 2};
    cr_assert_eq(loom_split(&fx->sch, l[2], 2, NULL, two, parts, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_vectorize(&fx->sch, parts[1], &err), LOOM_OK, "%s", err.msg);
    src = source(fx);
    cr_assert(strstr(src, "#pragma omp simd safelen(2) reduction(+:acc_S)") != NULL, "%s", src);
    free(src);
    expect_correct(fx, "sddmm d split [4, 2], the 2 vectorized");
    teardown(fx);

    fx = setup("workloads/spmv.loom", "A=data/cora_adj.mtx", NULL);
    loops(fx, "y", l); /* i, k */
    cr_assert_eq(loom_pos_split(&fx->sch, l[1], "A", 2, -1, parts, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_vectorize(&fx->sch, parts[1], &err), LOOM_OK, "%s", err.msg);
    src = source(fx);
    cr_assert(strstr(src, "#pragma omp simd safelen(2) reduction(+:acc_y)") != NULL, "%s", src);
    free(src);
    expect_correct(fx, "spmv in position chunks of 2, vectorized");
    teardown(fx);
}

/* The same for a max (a tree of LOOM_MAX, no identity but -INFINITY):
 * every row's largest entry of a dense matrix with negative values, over a
 * trip count with a tail. */
Test(schedule, max_tree_reduction_matches_the_reference)
{
    char path[] = "/tmp/loom_max_treeXXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    static const char prog[] = "param N = 50\nparam D = 21\ntensor Q(N, D) dense\ntensor S(N) dense output\n"
                               "S(i) max= Q(i, d) - 2.0\n";
    cr_assert_eq(write(fd, prog, sizeof prog - 1), (ssize_t)(sizeof prog - 1));
    close(fd);
    fixture *fx = setup(path, NULL, NULL);
    int l[LOOM_MAX_LOOPS];
    loom_error err;
    loops(fx, "S", l); /* i, d */
    cr_assert_eq(loom_vectorize(&fx->sch, l[1], &err), LOOM_OK, "%s", err.msg);
    char *src = source(fx);
    cr_assert(strstr(src, "loom_hmax4(") != NULL, "a vectorized max of constant trip count is a tree:\n%s", src);
    free(src);
    expect_correct(fx, "max over 21");
    teardown(fx);
    unlink(path);
}

Test(schedule, sddmm_vectorized_reduction_and_fused_dense_loops)
{
    fixture *fx = setup("workloads/sddmm.loom", "M=data/cora_adj.mtx", "D=32");
    int l[LOOM_MAX_LOOPS];
    loom_error err;
    loops(fx, "S", l); /* i, j, d */
    cr_assert_eq(loom_vectorize(&fx->sch, l[2], &err), LOOM_OK);
    char *src = source(fx);
    cr_assert(strstr(src, "loom_hsum4(acc_S_rp)") != NULL,
              "a vectorized sum of constant trip count is a tree over its accumulator's lanes:\n%s", src);
    free(src);
    expect_correct(fx, "sddmm simd reduction");
    teardown(fx);

    fx = setup("workloads/gemm.loom", NULL, "M=40");
    loops(fx, "C", l); /* i, k, j */
    int order[3] = {l[0], l[2], l[1]};
    cr_assert_eq(loom_reorder(&fx->sch, order, 3, &err), LOOM_OK); /* i, j, k */
    int fused;
    int ij[2] = {l[0], l[2]};
    cr_assert_eq(loom_fuse(&fx->sch, ij, 2, &fused, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_iter_extent(&fx->sch, 0, fx->sch.stages[0].loops[0].iter), 40 * 256);
    cr_assert_eq(loom_parallel(&fx->sch, fused, &err), LOOM_OK);
    expect_correct(fx, "gemm fused i*j parallel");
    teardown(fx);
}

Test(schedule, fuse_of_sparse_loop_is_refused)
{
    fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", "F=8");
    int l[LOOM_MAX_LOOPS], fused;
    loom_error err;
    loops(fx, "C", l);
    int ik[2] = {l[0], l[1]};
    cr_assert_eq(loom_fuse(&fx->sch, ik, 2, &fused, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "fuse-sparse") != NULL, "%s", err.msg);
    int ifl[2] = {l[0], l[2]};
    cr_assert_eq(loom_fuse(&fx->sch, ifl, 2, &fused, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "fuse-not-adjacent") != NULL, "%s", err.msg);
    teardown(fx);
}

Test(schedule, causal_attention_tiled_rows_and_keys)
{
    fixture *fx = setup("workloads/attention_causal.loom", NULL, "N=100");
    loom_error err;
    /* tile the key loop j of S (a range level) and the query loop i of O */
    int l[LOOM_MAX_LOOPS], out[2];
    loops(fx, "S", l); /* i, j, d */
    int64_t fj[2] = {0, 16};
    cr_assert_eq(loom_split(&fx->sch, l[1], 2, NULL, fj, out, &err), LOOM_OK, "%s", err.msg);
    loops(fx, "O", l); /* i, j, e */
    int64_t fi[2] = {0, 8};
    cr_assert_eq(loom_split(&fx->sch, l[0], 2, NULL, fi, out, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_parallel(&fx->sch, out[0], &err), LOOM_OK);
    expect_correct(fx, "causal attention with tiles");
    teardown(fx);
}

Test(schedule, copy_hash_and_equality)
{
    fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", "F=8");
    loom_schedule *b = malloc(sizeof *b);
    loom_schedule_copy(b, &fx->sch);
    cr_assert(loom_schedule_equal(b, &fx->sch));
    cr_assert_eq(loom_schedule_hash(b), loom_schedule_hash(&fx->sch));
    int l[LOOM_MAX_LOOPS];
    loom_error err;
    loops(fx, "C", l);
    cr_assert_eq(loom_unroll(&fx->sch, l[2], 4, &err), LOOM_OK);
    cr_assert_not(loom_schedule_equal(b, &fx->sch));
    cr_assert_neq(loom_schedule_hash(b), loom_schedule_hash(&fx->sch));
    free(b);
    teardown(fx);
}

Test(schedule, inline_softmax_numerator_in_attention)
{
    const char *w[] = {"workloads/attention.loom", "workloads/attention_causal.loom",
                       "workloads/sparse_attention.loom"};
    const char *d[] = {NULL, NULL, "A=data/cora_adj.mtx"};
    const char *p[] = {"N=48", "N=48", "D=16"};
    for (int k = 0; k < 3; k++) {
        fixture *fx = setup(w[k], d[k], p[k]);
        loom_error err;
        int b;
        cr_assert_eq(loom_get_block(&fx->sch, "P", &b, &err), LOOM_OK);
        cr_assert(loom_can_inline(&fx->sch, fx->sch.rvs[b].stage));
        cr_assert_eq(loom_compute_inline(&fx->sch, b, &err), LOOM_OK, "%s", err.msg);
        char *src = source(fx);
        cr_assert(strstr(src, "P_vals") == NULL, "%s: P is no longer stored:\n%s", w[k], src);
        cr_assert(strstr(src, "expf(") != NULL);
        free(src);
        expect_correct(fx, w[k]);
        teardown(fx);
    }
}

Test(schedule, inline_refusals)
{
    fixture *fx = setup("workloads/attention.loom", NULL, "N=16");
    loom_error err;
    int b;
    cr_assert_eq(loom_get_block(&fx->sch, "S", &b, &err), LOOM_OK);
    cr_assert_eq(loom_compute_inline(&fx->sch, b, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "inline-reduction") != NULL, "%s", err.msg);
    cr_assert_eq(fx->sch.stages[fx->sch.rvs[b].stage].compute_at, LOOM_AT_ROOT, "refused: unchanged");
    teardown(fx);
    /* an elementwise output cannot be inlined either: it must be stored */
    loom_program *prog = NULL;
    cr_assert_eq(loom_program_parse_string("param N = 8\ntensor X(N) dense\ntensor Y(N) dense output\n"
                                           "T(i) = X(i) * 2\nY(i) = exp(T(i))\n",
                                           "<inline>", &prog, &err),
                 LOOM_OK, "%s", err.msg);
    loom_schedule *sch = malloc(sizeof *sch);
    cr_assert_eq(loom_schedule_init(sch, prog, NULL, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "Y", &b, &err), LOOM_OK);
    cr_assert_eq(loom_compute_inline(sch, b, &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "inline-output") != NULL, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "T", &b, &err), LOOM_OK);
    cr_assert_eq(loom_compute_inline(sch, b, &err), LOOM_OK, "%s", err.msg);
    free(sch);
    loom_program_free(prog);
}

Test(schedule, sample_compute_location_candidates_and_repair)
{
    fixture *fx = setup("workloads/attention.loom", NULL, "N=16");
    loom_error err;
    int bp, bs, v;
    cr_assert_eq(loom_get_block(&fx->sch, "P", &bp, &err), LOOM_OK);
    cr_assert_eq(loom_get_block(&fx->sch, "S", &bs, &err), LOOM_OK);
    /* S reduces: root is its only location, whatever the decision says */
    int64_t want = LOOM_AT_INLINE, used = 0;
    cr_assert_eq(loom_sample_compute_location(&fx->sch, bs, &want, &used, &v, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(used, LOOM_AT_ROOT, "an illegal inline is repaired to root");
    cr_assert_eq(fx->sch.rvs[v].value, LOOM_AT_ROOT);
    /* P can be inlined: the decision is kept */
    cr_assert_eq(loom_sample_compute_location(&fx->sch, bp, &want, &used, &v, &err), LOOM_OK);
    cr_assert_eq(used, LOOM_AT_INLINE);
    cr_assert_eq(fx->sch.stages[fx->sch.rvs[bp].stage].compute_at, LOOM_AT_INLINE);
    /* S's first consumer is m, but P reads S too and runs at the root: no
     * loop of m is offered (P could not see S there), so 3 is repaired to
     * the nearest earlier candidate, root */
    int64_t at3 = 3;
    cr_assert_eq(loom_sample_compute_location(&fx->sch, bs, &at3, &used, &v, &err), LOOM_OK);
    cr_assert_eq(used, LOOM_AT_ROOT);
    teardown(fx);

    /* C's only reader R has loops (i, f), both free: candidates 0 and 1, and
     * 3 is repaired to 1 */
    fx = setup("tests/data/spmm_relu.loom", "A=data/cora_adj.mtx", NULL);
    int bc;
    cr_assert_eq(loom_get_block(&fx->sch, "C", &bc, &err), LOOM_OK);
    cr_assert_eq(loom_sample_compute_location(&fx->sch, bc, &at3, &used, &v, &err), LOOM_OK);
    cr_assert_eq(used, 1);
    const loom_stage *C = &fx->sch.stages[0];
    cr_assert_eq(C->compute_at, LOOM_AT_LOOP);
    cr_assert_eq(C->at_stage, 1, "R is C's consumer");
    cr_assert_eq(C->at_iter, fx->sch.stages[1].loops[1].iter);
    teardown(fx);
}

/* Scorch's SpMM: for i, f.0: ws[16] = 0; for p in row i: for f.1: ws += a * B;
 * C[i, f.0 tile] = ws.  And a whole-row workspace at i. */
Test(schedule, cache_write_spmm_register_tile)
{
    const char *F[] = {"F=64", "F=20"}; /* 20: the last tile overhangs */
    for (int k = 0; k < 2; k++) {
        fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", F[k]);
        int l[LOOM_MAX_LOOPS], t[2], b;
        loom_error err;
        loops(fx, "C", l); /* i, k, f */
        int64_t fac[2] = {0, 16};
        cr_assert_eq(loom_split(&fx->sch, l[2], 2, NULL, fac, t, &err), LOOM_OK, "%s", err.msg);
        int o2[4] = {l[0], t[0], l[1], t[1]};
        cr_assert_eq(loom_reorder(&fx->sch, o2, 4, &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_get_block(&fx->sch, "C", &b, &err), LOOM_OK);
        cr_assert_eq(loom_cache_write(&fx->sch, b, t[0], &err), LOOM_OK, "%s", err.msg);
        cr_assert_eq(loom_vectorize(&fx->sch, t[1], &err), LOOM_OK);
        cr_assert_eq(loom_parallel(&fx->sch, l[0], &err), LOOM_OK);
        expect_valid(fx);
        char *src = source(fx);
        cr_assert(strstr(src, "float ws_C[16];") != NULL, "a 16-float workspace:\n%s", src);
        cr_assert(strstr(src, "memset(C_vals") == NULL, "no global fill:\n%s", src);
        free(src);
        expect_correct(fx, F[k]);
        teardown(fx);
    }
    fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", "F=32");
    int l[LOOM_MAX_LOOPS], b;
    loom_error err;
    loops(fx, "C", l);
    cr_assert_eq(loom_get_block(&fx->sch, "C", &b, &err), LOOM_OK);
    cr_assert_eq(loom_cache_write(&fx->sch, b, l[0], &err), LOOM_OK);
    expect_valid(fx);
    expect_correct(fx, "row workspace");
    cr_assert_eq(loom_workspace_elems(&fx->sch, 0), 32);
    teardown(fx);
}

Test(schedule, cache_write_refusals)
{
    fixture *fx = setup("workloads/sddmm.loom", "M=data/cora_adj.mtx", "D=8");
    int l[LOOM_MAX_LOOPS], b;
    loom_error err;
    loops(fx, "S", l);
    cr_assert_eq(loom_get_block(&fx->sch, "S", &b, &err), LOOM_OK);
    cr_assert_eq(loom_cache_write(&fx->sch, b, l[0], &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "cache-write-sparse") != NULL, "%s", err.msg);
    teardown(fx);
}

/* RFactor: the outer tile of a reduction keeps private partials, so it can
 * be the parallel loop; a combine loop reduces them. */
Test(schedule, rfactor_parallel_reduction)
{
    fixture *fx = setup("workloads/gemm.loom", NULL, "M=24");
    int l[LOOM_MAX_LOOPS], t[2];
    loom_error err;
    loops(fx, "C", l); /* i, k, j */
    int64_t fac[2] = {4, 0};
    cr_assert_eq(loom_split(&fx->sch, l[1], 2, NULL, fac, t, &err), LOOM_OK, "%s", err.msg); /* k.0 = 4 */
    int order[4] = {t[0], l[0], t[1], l[2]}; /* k.0, i, k.1, j */
    cr_assert_eq(loom_reorder(&fx->sch, order, 4, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_parallel(&fx->sch, t[0], &err), LOOM_OK);
    expect_rule(fx, "parallel-reduction"); /* a race without rfactor */
    cr_assert_eq(loom_rfactor(&fx->sch, t[0], &err), LOOM_OK, "%s", err.msg);
    expect_valid(fx);
    char *src = source(fx);
    cr_assert(strstr(src, "rfp_C") != NULL && strstr(src, "rf_acc") != NULL, "partials and a combine:\n%s", src);
    free(src);
    expect_correct(fx, "gemm rfactor k.0 parallel");
    teardown(fx);

    /* the softmax denominator l(i) += P(i, j) with j's outer tile rfactored */
    fx = setup("workloads/attention.loom", NULL, "N=40");
    loops(fx, "l", l); /* i, j */
    int64_t fj[2] = {0, 8};
    cr_assert_eq(loom_split(&fx->sch, l[1], 2, NULL, fj, t, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_rfactor(&fx->sch, t[0], &err), LOOM_OK, "%s", err.msg);
    expect_valid(fx);
    expect_correct(fx, "attention l rfactor");
    teardown(fx);
}

Test(schedule, rfactor_refusals)
{
    fixture *fx = setup("workloads/spmm.loom", "A=data/cora_adj.mtx", "F=8");
    int l[LOOM_MAX_LOOPS];
    loom_error err;
    loops(fx, "C", l); /* i, k, f */
    cr_assert_eq(loom_rfactor(&fx->sch, l[0], &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "rfactor-not-reduction") != NULL, "%s", err.msg);
    cr_assert_eq(loom_rfactor(&fx->sch, l[1], &err), LOOM_ERR_SEMANTIC); /* k: a position loop */
    cr_assert(strstr(err.msg, "rfactor-dynamic-extent") != NULL, "%s", err.msg);
    teardown(fx);
    fx = setup("workloads/sddmm.loom", "M=data/cora_adj.mtx", "D=8");
    loops(fx, "S", l); /* i, j, d */
    cr_assert_eq(loom_rfactor(&fx->sch, l[2], &err), LOOM_ERR_SEMANTIC);
    cr_assert(strstr(err.msg, "rfactor-sparse-output") != NULL, "%s", err.msg);
    teardown(fx);
}
