/* The deterministic default schedule (module.h: loom_default_schedule;
 * Scorch, sparse.md Part 1b: loop order, tiling by 32 where it carries
 * reuse, parallel outer loop, vectorized inner dense loop).  Scorch also
 * accumulates the output row in a workspace (CacheWrite), and so does
 * loom's default: at the loop multi-level-tiling would offer one at
 * (loom__ws_candidate).  It was left out while GCC 12 vectorized the
 * nonzero loop inside a workspace with gathers (1.5-2x slower than in
 * place); since the lowering's barrier stops that (lower_prefetch.c), the
 * whole-row workspace measured 1.5-3.8x faster than accumulating in place
 * for SpMM (loom run, AMD Zen 4, 2 threads, 2026-11-25; in place ->
 * workspace): Cora F = 32 28.9 -> 13.7 us, F = 128 102 -> 60 us; PubMed
 * 320 -> 140 us, 2.14 -> 0.86 ms; Facebook 0.90 -> 0.46 ms, 8.1 -> 2.9 ms;
 * bcsstk13 226 -> 59 us, 441 -> 220 us; 4elt 236 -> 91 us, 1.40 -> 0.42
 * ms; mbeacxc 151 -> 43 us, 346 -> 172 us.  When the output is larger
 * than the last-level cache (lim->llc_bytes) the workspace is copied out
 * with streaming stores (web-NotreDame at F = 128: C is 167 MB), which
 * saves the read-for-ownership of lines never read again.  A dense contraction (GEMM, X.W) gets the
 * dense space's register-tiled kernel instead (modules/dense.c), whose
 * workspace is a register tile: the form BLAS kernels have. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "../runtime/machine/machine.h"
#include "../traces/validate.h"

#define MAX_VECTORIZE 64

enum { USE_TILE = 2, USE_VECTOR = 4, USE_DENSE = 8, USE_WS = 16 };

static loom_status default_block(loom_schedule *sch, int s, int flags, const loom_limits *lim, loom_error *err)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[s];
    const loom_tensor *out = &prog->tensors[st->lhs];
    int b, loops[LOOM_MAX_LOOPS], n;
    loom_status rc = loom_get_block(sch, out->name, &b, err);
    if (rc)
        return rc;
    loom_stage *S = &sch->stages[s];
    if ((flags & USE_DENSE) && loom__dense_applies(sch, s)) {
        /* a dense contraction: the dense space's register-tiled kernel with
         * tiles chosen for the target (modules/dense.c) */
        int64_t i3[3], j3[3], k2[2];
        loom__dense_default_tiles(sch, s, lim, i3, j3, k2);
        return loom__dense_schedule(sch, b, lim, i3, j3, k2, err);
    }
    int first = loom_scorch_outermost(sch, s);

    /* Scorch's loop order, as a SampleLoopOrder decided by its prior */
    if (S->nloops >= 2) {
        int order[LOOM_MAX_LOOPS], v;
        int prior = loom_scorch_order(sch, s, order);
        if (prior < 0)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "discordant-traversal: block %s has no concordant loop order", out->name);
        int64_t decision = prior;
        rc = loom_sample_loop_order(sch, b, prior, 1.0, &decision, NULL, &v, err);
        if (rc)
            return rc;
    }
    rc = loom_get_loops(sch, b, loops, &n, err);
    if (rc)
        return rc;

    /* tile the dense variables that carry reuse by 32: outer tile outside,
     * inner tile innermost (Scorch's _select_index_vars_to_tile, add_tile) */
    if (flags & USE_TILE) {
        int tiled = 0;
        for (int k = 0; k < n && !rc; k++) {
            int x = S->iters[sch->rvs[loops[k]].iter].var;
            int64_t e = loom_iter_extent(sch, s, sch->rvs[loops[k]].iter), min_tiled;
            int64_t tile = loom__free_tile(sch, s, lim, e, &min_tiled); /* a register tile with an epilogue */
            if (x == first || loom_var_is_compressed(sch, s, x) || !loom_var_carries_reuse(prog, s, x) ||
                e <= min_tiled)
                continue;
            const int64_t f[2] = {0, tile};
            int o[2];
            rc = loom_split(sch, loops[k], 2, NULL, f, o, err);
            tiled = 1;
        }
        if (!rc && tiled) {
            int64_t key[LOOM_MAX_LOOPS];
            for (int p = 0; p < S->nloops; p++) {
                const loom_iter *I = &S->iters[S->loops[p].iter];
                int inner = I->kind == LOOM_ITER_SPLIT && I->index == 1;
                int level = inner ? 2 : loom_iter_reduces(sch, s, S->loops[p].iter) ? 1 : 0;
                key[p] = level * 64 + p;
            }
            int order[LOOM_MAX_LOOPS], perm[LOOM_MAX_LOOPS];
            rc = loom_get_loops(sch, b, loops, &n, err);
            if (!rc && loom_closest_legal_order(sch, s, key, order) >= 0) {
                for (int p = 0; p < n; p++)
                    perm[p] = loops[order[p]];
                rc = loom_reorder(sch, perm, n, err);
            }
        }
        if (!rc)
            rc = loom_get_loops(sch, b, loops, &n, err);
        if (rc)
            return rc;
    }

    if (flags & USE_WS) {
        int L = loom__ws_candidate(sch, s, lim);
        if (L >= 0) {
            int64_t v = loom__default_ws(sch, s, lim);
            /* the free loops inside the workspace split once as [1, extent]:
             * the lowering drops the extent-1 tile and emits the inner one
             * with a constant trip count, which lets GCC keep the row in
             * registers (a trip count read from the tensor's dims ran SpMM
             * on bcsstk13 at F = 32 3.8x slower) */
            for (int p = L + 1; p < n && !rc; p++) {
                int it = S->loops[p].iter;
                if (S->iters[it].kind == LOOM_ITER_VAR && !loom_iter_reduces(sch, s, it) &&
                    loom_iter_extent(sch, s, it) > 1) {
                    const int64_t f[2] = {1, 0};
                    int o[2];
                    rc = loom_split(sch, loops[p], 2, NULL, f, o, err);
                    if (!rc)
                        rc = loom_get_loops(sch, b, loops, &n, err);
                }
            }
            if (!rc)
                rc = loom_cache_write(sch, b, loops[L], err);
            if (!rc && v == LOOM_STREAM_ON)
                rc = loom_annotate(sch, loops[L], LOOM_ANN_STREAM, -1, v, err);
            /* the consumers of a temporary evaluated at the copy-out: the
             * longest epilogue (issue 30) */
            int64_t ev[LOOM_MAX_STMTS + 1];
            int m = loom__epilogue_values(sch, s, ev);
            if (!rc && m > 1)
                rc = loom_annotate(sch, loops[L], LOOM_ANN_EPILOGUE, -1, ev[m - 1], err);
            if (rc)
                return rc;
        }
    }
    if (loom__parallelizable(sch, s)) {
        rc = loom_parallel(sch, loops[0], err);
        if (rc)
            return rc;
    }
    int64_t width = (int64_t)lim->vector_lanes * lim->max_vector_factor;
    if ((flags & USE_VECTOR) && n > 1 && S->loops[n - 1].kind == LOOM_LOOP_SERIAL &&
        loom__vectorizable(sch, s, n - 1, width < MAX_VECTORIZE ? width : MAX_VECTORIZE))
        rc = loom_vectorize(sch, loops[n - 1], err);
    return rc;
}

static loom_status build(loom_schedule *sch, int flags, const loom_limits *lim, loom_error *err)
{
    for (int s = sch->nstages - 1; s >= 0; s--) {
        loom_status rc = default_block(sch, s, flags, lim, err);
        if (rc)
            return rc;
    }
    return LOOM_OK;
}

loom_status loom_default_schedule(loom_schedule *sch, loom_error *err)
{
    return loom_default_schedule_for(sch, NULL, err);
}

loom_status loom_default_schedule_for(loom_schedule *sch, const loom_limits *target, loom_error *err)
{
    static const int ATTEMPTS[] = {USE_DENSE | USE_WS | USE_TILE | USE_VECTOR, USE_DENSE | USE_TILE | USE_VECTOR,
                                   USE_TILE | USE_VECTOR, USE_VECTOR, 0};
    loom_limits lim = target ? *target : loom_target_cpu_limits();
    loom_schedule *scratch = malloc(sizeof *scratch);
    if (!scratch)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status rc = LOOM_OK;
    char why[sizeof err->msg] = "";
    for (size_t a = 0; a < sizeof ATTEMPTS / sizeof *ATTEMPTS; a++) {
        rc = loom_schedule_init(scratch, sch->prog, NULL, err);
        if (rc)
            break;
        loom_violation v;
        rc = build(scratch, ATTEMPTS[a], &lim, err);
        if (!rc && loom_validate(scratch, &lim, &v, NULL) != LOOM_OK) {
            snprintf(why, sizeof why, "%s", v.msg);
            rc = LOOM_ERR_SEMANTIC;
            continue;
        }
        if (rc) {
            snprintf(why, sizeof why, "%s", err->msg);
            continue;
        }
        /* valid: build it again on sch, which records it when traced */
        rc = build(sch, ATTEMPTS[a], &lim, err);
        free(scratch);
        return rc;
    }
    free(scratch);
    if (rc == LOOM_ERR_SEMANTIC || rc == LOOM_OK)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0, "no default schedule validates: %s", why);
    return rc;
}
