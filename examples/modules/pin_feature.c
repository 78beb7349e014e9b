/* An example user module for loom (docs/modules.md): "pin-feature-vector"
 * splits the loop over a free dense index variable named `f` (SpMM's and
 * GCN's feature dimension) so that its inner tile is a multiple of the
 * target's vector width: a SampleCategorical over {W, 2W, 4W} (W = fp32
 * lanes of the host) chooses the inner extent, so search can mutate it and
 * every trace records it.  The outer extent is inferred (a one-candidate
 * SampleCategorical of 0 gives Split the ExprRV it needs).
 *
 * Build against an installed loom:
 *   cc -shared -fPIC pin_feature.c -o pin_feature.so $(pkg-config --cflags --libs loom)
 * Use:
 *   loom sample workloads/spmm.loom --data A=data/cora_adj.mtx --count 10 --out /tmp/t \
 *        --module ./pin_feature.so
 */
#include <string.h>

#include <modules/module.h>
#include <traces/validate.h>

static loom_status pin_feature_vector(loom_schedule *sch, int block_rv, const loom_module_ctx *ctx,
                                      loom_error *err)
{
    int s = sch->rvs[block_rv].stage;
    const loom_stage *S = &sch->stages[s];
    const loom_program *prog = sch->prog;
    if (S->compute_at != LOOM_AT_ROOT)
        return LOOM_OK; /* inlined or computed inside another block: leave it */
    int64_t lanes = ctx->limits->vector_lanes; /* the target's, not the host's */
    for (int p = 0; p < S->nloops; p++) {
        const loom_iter *I = &S->iters[S->loops[p].iter];
        if (I->kind != LOOM_ITER_VAR || strcmp(prog->vars[I->var].name, "f") || prog->vars[I->var].reduced)
            continue;
        int64_t extent = loom_iter_extent(sch, s, S->loops[p].iter);
        if (extent < 2 * lanes || extent % lanes)
            continue;
        int loops[LOOM_MAX_LOOPS], n, outer, inner, tiles[2];
        const int64_t zero[1] = {0}, cand[3] = {lanes, 2 * lanes, 4 * lanes};
        const double one[1] = {1}, probs[3] = {1, 1, 1};
        loom_status rc = loom_get_loops(sch, block_rv, loops, &n, err);
        if (!rc)
            rc = loom_sample_categorical(sch, 1, zero, one, NULL, NULL, &outer, err);
        if (!rc)
            rc = loom_sample_categorical(sch, 3, cand, probs, NULL, NULL, &inner, err);
        if (rc)
            return rc;
        int factors[2] = {outer, inner};
        return loom_split(sch, loops[p], 2, factors, NULL, tiles, err);
    }
    return LOOM_OK;
}

/* Called by loom_registry_load (loom sample --module): register the module. */
int loom_module_init(loom_registry *r)
{
    loom_error err;
    return loom_registry_add(r, "pin-feature-vector", pin_feature_vector, NULL, &err) != LOOM_OK;
}
