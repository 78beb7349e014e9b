/* The trace validator (validate.h): the per-loop rules, the rule table and
 * registered rules, and the entry points; the placement rules are
 * validate_placement.c, violation reports validate_violation.c. */
#include "validate_impl.h"
#include "../dsl/ir/domain.h"

#include "../dsl/schedule/query.h"

/* Shared queries (dsl/schedule/query.h) under the names check_stage uses. */
#define loom__stage_has_rolled(sch, s) loom_stage_rolled_into(sch, s, -1)
#define derives loom_iter_derives_from

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct loom__sp_access {
    int tensor, root;
    int idx[LOOM_MAX_ORDER];
} sp_access;

static void collect(const loom_program *prog, int e, sp_access *acc, int *n)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (*n < LOOM_MAX_EXPRS && loom_tensor_is_sparse(prog, E->tensor)) {
            acc[*n].tensor = E->tensor;
            acc[*n].root = prog->tensors[E->tensor].pattern_of >= 0 ? prog->tensors[E->tensor].pattern_of : E->tensor;
            memcpy(acc[*n].idx, E->idx, sizeof acc[*n].idx);
            (*n)++;
        }
        return;
    }
    if (E->kind == LOOM_EXPR_CONST)
        return;
    for (int k = 0; k < E->nargs; k++)
        collect(prog, E->args[k], acc, n);
}

/* One block's checks share this (validate.h). */
typedef loom_rule_ctx stage_ctx;

/* loop names are formatted only for a violation (validate runs once per
 * replayed candidate, and most pass) */
#define LOOP_NAME loom_iter_name(sch, s, L->iter, nm, sizeof nm)

/* discordant-traversal, pos-order */
static loom_status check_order(const stage_ctx *c)
{
    const loom_schedule *sch = c->sch;
    const loom_program *prog = sch->prog;
    const loom_stage *S = c->S;
    int s = c->s;
    const char *block = c->block;
    loom_violation *v = c->v;
    loom_error *err = c->err;
    char nm[64], nm2[64];
    const sp_access *acc = c->acc;
    int nacc = c->nacc;
    /* discordant-traversal */
    for (int a = 0; a < nacc; a++) {
        const loom_format *F = &prog->tensors[acc[a].tensor].format;
        for (int l = 1; l < F->nlevels; l++) {
            if (F->level[l] == LOOM_LEVEL_DENSE)
                continue;
            int parent = acc[a].idx[F->mode[l - 1]], child = acc[a].idx[F->mode[l]];
            int last_parent = -1, first_child = S->nloops;
            for (int p = 0; p < S->nloops; p++) {
                if (derives(S, S->loops[p].iter, parent))
                    last_parent = p;
                if (derives(S, S->loops[p].iter, child) && p < first_child)
                    first_child = p;
            }
            if (first_child < last_parent)
                return violate(v, err, "discordant-traversal", s, first_child,
                               "in block %s, loop %s iterates %s's %s level %d (index %s) outside loop %s of its "
                               "parent level (index %s): compressed storage cannot be accessed at random; move %s "
                               "inside %s",
                               block, loom_iter_name(sch, s, S->loops[first_child].iter, nm, sizeof nm),
                               prog->tensors[acc[a].tensor].name, loom_level_kind_name(F->level[l]), l + 1,
                               prog->vars[child].name, loom_iter_name(sch, s, S->loops[last_parent].iter, nm2, sizeof nm2),
                               prog->vars[parent].name, nm, nm2);
        }
    }

    /* pos-order, pos-whole-row-outer */
    for (int p = 0; p < S->nloops; p++) {
        const loom_iter *I = &S->iters[S->loops[p].iter];
        /* the outer loop of a whole-row position split (factor 0) runs once
         * per segment: a kind on it (parallel, vectorized, unrolled) has
         * nothing to act on and is refused */
        if (I->kind == LOOM_ITER_POS && I->index == 0 && S->iters[S->iters[I->parent].first_child + 1].factor == 0 &&
            (S->loops[p].kind != LOOM_LOOP_SERIAL || S->loops[p].nann > 0))
            return violate(v, err, "pos-whole-row-outer", s, p,
                           "in block %s, loop %s is the outer loop of a whole-row position split (chunk 0: one "
                           "iteration per row); give the kind or annotation to the row loop or the inner loop",
                           block, loom_iter_name(sch, s, S->loops[p].iter, nm, sizeof nm));
        if (I->kind != LOOM_ITER_POS || I->index != 1)
            continue;
        int outer = S->iters[I->parent].first_child;
        for (int q = p + 1; q < S->nloops; q++)
            if (S->loops[q].iter == outer)
                return violate(v, err, "pos-order", s, p,
                               "in block %s, the inner loop %s of a position split is outside its outer loop",
                               block, loom_iter_name(sch, s, S->loops[p].iter, nm, sizeof nm));
    }

    return LOOM_OK;
}

/* parallel-reduction, parallel-coiteration, nested-parallel */
static loom_status check_parallel(const stage_ctx *c)
{
    const loom_schedule *sch = c->sch;
    const loom_program *prog = sch->prog;
    const loom_stage *S = c->S;
    int s = c->s;
    const char *block = c->block;
    loom_violation *v = c->v;
    loom_error *err = c->err;
    char nm[64], nm2[64];
    const sp_access *acc = c->acc;
    int nacc = c->nacc;
    const loom_limits *lim = c->lim;
    /* parallel rules */
    int par_seen = -1;
    for (int p = 0; p < S->nloops; p++) {
        const loom_loop *L = &S->loops[p];
        if (L->kind != LOOM_LOOP_PARALLEL)
            continue;
        if (loom_iter_reduces(sch, (int)(S - sch->stages), L->iter) && L->iter != S->rfactor_iter &&
            !(S->splitk > 1 && p == S->nloops - 1 && loom__stage_has_rolled(sch, (int)(S - sch->stages))))
            return violate(v, err, "parallel-reduction", s, p,
                           "in block %s, parallel loop %s reduces into %s: its iterations race on the same "
                           "elements; parallelize a loop over a left-hand-side index instead",
                           block, LOOP_NAME, block);
        const loom_iter *I = &S->iters[L->iter];
        if (I->kind == LOOM_ITER_VAR) {
            int roots[LOOM_MAX_TENSORS], nroots = 0;
            for (int a = 0; a < nacc; a++) {
                const loom_format *F = &prog->tensors[acc[a].tensor].format;
                for (int l = 0; l < F->nlevels; l++)
                    if (F->level[l] == LOOM_LEVEL_COMPRESSED && acc[a].idx[F->mode[l]] == I->var) {
                        int seen = 0;
                        for (int k = 0; k < nroots; k++)
                            seen |= roots[k] == acc[a].root;
                        if (!seen && nroots < LOOM_MAX_TENSORS)
                            roots[nroots++] = acc[a].root;
                    }
            }
            if (nroots > 1 || (nroots == 1 && loom__stmt_is_union(prog, s)))
                return violate(v, err, "parallel-coiteration", s, p,
                               "in block %s, parallel loop %s merges %d sparse patterns (a while loop); parallelize "
                               "an enclosing loop",
                               block, LOOP_NAME, nroots);
        }
        if (par_seen >= 0)
            return violate(v, err, "nested-parallel", s, p,
                           "in block %s, parallel loop %s is inside parallel loop %s: nested parallel regions "
                           "oversubscribe the %d cores; keep one parallel loop (fuse them first)",
                           block, LOOP_NAME, loom_iter_name(sch, s, S->loops[par_seen].iter, nm2, sizeof nm2),
                           lim->cores);
        par_seen = p;
    }

    return LOOM_OK;
}

/* balance-rows: a "balance" annotation (a balanced row partition, issue
 * 13) only on a parallel, outermost row loop of a CSR-like operand, at the
 * root (a block placed in another's loop runs inside that loop's
 * region) */
static loom_status check_balance(const stage_ctx *c)
{
    const loom_stage *S = c->S;
    char nm[64];
    for (int p = 0; p < S->nloops; p++)
        for (int a = 0; a < S->loops[p].nann; a++) {
            const loom_annotation *A = &S->loops[p].ann[a];
            if (strcmp(A->key, LOOM_ANN_BALANCE) || A->value <= 0)
                continue;
            if (S->loops[p].kind != LOOM_LOOP_PARALLEL || S->compute_at != LOOM_AT_ROOT ||
                loom_balance_tensor(c->sch, c->s, p) < 0)
                return violate(c->v, c->err, "balance-rows", c->s, p,
                               "in block %s, loop %s has a balanced row partition (balance = %lld) but is not a "
                               "parallel outermost loop over the rows of a CSR-like operand at the root",
                               c->block, loom_iter_name(c->sch, c->s, S->loops[p].iter, nm, sizeof nm),
                               (long long)A->value);
        }
    return LOOM_OK;
}

/* vectorize-not-innermost, -dynamic-extent, -carried-reduction, -too-wide */
static loom_status check_vectorize(const stage_ctx *c)
{
    const loom_schedule *sch = c->sch;
    const loom_stage *S = c->S;
    int s = c->s;
    const char *block = c->block;
    loom_violation *v = c->v;
    loom_error *err = c->err;
    char nm[64];
    const loom_limits *lim = c->lim;
    /* vectorize rules */
    for (int p = 0; p < S->nloops; p++) {
        const loom_loop *L = &S->loops[p];
        if (L->kind != LOOM_LOOP_VECTORIZED)
            continue;
        if (p != S->nloops - 1)
            return violate(v, err, "vectorize-not-innermost", s, p,
                           "in block %s, vectorized loop %s is not the innermost loop (%d loops inside it)", block,
                           LOOP_NAME, S->nloops - 1 - p);
        int64_t e = loom_iter_extent(sch, s, L->iter);
        const loom_iter *I = &S->iters[L->iter];
        int dynamic = e <= 0 || (I->kind == LOOM_ITER_VAR && loom_var_is_compressed(sch, s, I->var));
        if (dynamic)
            return violate(v, err, "vectorize-dynamic-extent", s, p,
                           "in block %s, vectorized loop %s has a data-dependent extent; split it (or its "
                           "position space) and vectorize a constant inner tile",
                           block, LOOP_NAME);
        if (loom_iter_reduces(sch, (int)(S - sch->stages), L->iter) && S->rfactor_iter >= 0 && L->iter != S->rfactor_iter)
            return violate(v, err, "vectorize-carried-reduction", s, p,
                           "in block %s, vectorized loop %s reduces into an rfactor partial through memory, a "
                           "dependence between lanes; vectorize the rfactor loop or a free loop",
                           block, LOOP_NAME);
        if (loom_iter_reduces(sch, (int)(S - sch->stages), L->iter)) {
            /* a reduced loop vectorizes only into a scalar accumulator: every
             * reduced loop must be inside every free loop */
            int last_free = -1, first_red = S->nloops;
            for (int q = 0; q < S->nloops; q++) {
                if (loom_iter_reduces(sch, (int)(S - sch->stages), S->loops[q].iter)) {
                    if (q < first_red)
                        first_red = q;
                } else
                    last_free = q;
            }
            if (first_red < last_free)
                return violate(v, err, "vectorize-carried-reduction", s, p,
                               "in block %s, vectorized loop %s reduces into %s through memory (a free loop is "
                               "inside a reduction loop), a dependence between lanes; vectorize a free loop or "
                               "move the reduction loops innermost",
                               block, LOOP_NAME, block);
        }
        int64_t limit = (int64_t)lim->vector_lanes * lim->max_vector_factor;
        if (e > limit)
            return violate(v, err, "vectorize-too-wide", s, p,
                           "in block %s, vectorized loop %s has %lld iterations, more than the target's %lld "
                           "(%d lanes x %d); split it first",
                           block, LOOP_NAME, (long long)e, (long long)limit, lim->vector_lanes, lim->max_vector_factor);
    }

    return LOOM_OK;
}

/* cache-write-partial, workspace-too-large, workspace-spills */
static loom_status check_workspace(const stage_ctx *c)
{
    const loom_schedule *sch = c->sch;
    const loom_stage *S = c->S;
    int s = c->s;
    const char *block = c->block;
    loom_violation *v = c->v;
    loom_error *err = c->err;
    char nm[64];
    const loom_limits *lim = c->lim;
    /* workspaces */
    if (S->cache_iter >= 0) {
        int L = -1;
        for (int p = 0; p < S->nloops; p++)
            if (S->loops[p].iter == S->cache_iter)
                L = p;
        /* a reduction loop outside the workspace loop is fine: the copy-out
         * then adds each partial into the output (a K-blocked tile) */
        if (L < 0 || loom_iter_reduces(sch, s, S->loops[L].iter))
            return violate(v, err, "cache-write-partial", s, L,
                           "in block %s, the workspace loop %s; a workspace is copied out at the end of each "
                           "iteration of its loop, so put it at a free (output) loop",
                           block, L < 0 ? "no longer exists" : "is a reduction loop");
        if (!loom_workspace_split_ok(sch, s, L))
            return violate(v, err, "cache-write-split", s, L,
                           "in block %s, the workspace at loop %s has an output index iterated both outside and "
                           "inside it by loops that are not the innermost tiles of one split",
                           block, loom_iter_name(sch, s, S->cache_iter, nm, sizeof nm));
        int64_t elems = loom_workspace_elems(sch, s);
        if (elems < 0 || elems * 4 > lim->max_workspace_bytes)
            return violate(v, err, "workspace-too-large", s, L,
                           "in block %s, the workspace at loop %s holds %s%lld bytes, more than the target's %lld; "
                           "put the workspace at a deeper loop or split the loops inside it",
                           block, loom_iter_name(sch, s, S->cache_iter, nm, sizeof nm),
                           elems < 0 ? "a data-dependent number of elements, not " : "",
                           (long long)(elems < 0 ? 0 : elems * 4), (long long)lim->max_workspace_bytes);
        /* the register tile of a temporary's reduction (offered for its
         * epilogue, issue 30): its accumulators and the broadcast nonzero
         * in the target's vector registers (the nonzero loop's FMAs take
         * the dense row from memory), else gcc spills the tile and every
         * nonzero loads and stores it again */
        int regs = loom_limits_registers(lim), lanes = lim->vector_lanes > 0 ? lim->vector_lanes : 1;
        if (sch->prog->tensors[sch->prog->stmts[s].lhs].role == LOOM_TENSOR_TEMP && (elems + lanes - 1) / lanes + 1 > regs)
            return violate(v, err, "workspace-spills", s, L,
                           "in block %s, the register tile at loop %s holds %lld floats: %lld vectors of %d lanes "
                           "and a broadcast need more than the target's %d vector registers; split the loops "
                           "inside it so at most %lld floats remain",
                           block, loom_iter_name(sch, s, S->cache_iter, nm, sizeof nm), (long long)elems,
                           (long long)((elems + lanes - 1) / lanes), lanes, regs, (long long)(regs - 1) * lanes);
    }
    return LOOM_OK;
}

/* register-tile: a loop's vector shape annotations (the fused lowering's
 * register tiles, dsl/schedule/query.h) ask for more than the target has */
static loom_status check_register_tile(const stage_ctx *c)
{
    const loom_stage *S = c->S;
    const loom_limits *lim = c->lim;
    int regs = loom_limits_registers(lim);
    char nm[64];
    for (int p = 0; p < S->nloops; p++) {
        const loom_loop *L = &S->loops[p];
        int64_t lanes = 0, vregs = 0;
        for (int k = 0; k < L->nann; k++) {
            if (!strcmp(L->ann[k].key, LOOM_ANN_VECTOR_LANES))
                lanes = L->ann[k].value;
            if (!strcmp(L->ann[k].key, LOOM_ANN_VECTOR_REGISTERS))
                vregs = L->ann[k].value;
        }
        if (lanes > lim->vector_lanes || vregs > regs || (lanes && lanes < 1) || (vregs && vregs < 4))
            return violate(c->v, c->err, "register-tile", c->s, p,
                           "in block %s, loop %s is shaped for %lld-lane vectors and %lld vector registers; the "
                           "target has %d lanes and %d registers, so its register tiles would spill: sample the "
                           "schedule for this target",
                           c->block, loom_iter_name(c->sch, c->s, L->iter, nm, sizeof nm), (long long)lanes,
                           (long long)vregs, lim->vector_lanes, regs);
    }
    return LOOM_OK;
}

/* pack-panel-loop, pack-panel-too-large (PackPanel, dsl/schedule/pack.c) */
static loom_status check_pack(const stage_ctx *c)
{
    const loom_stage *S = c->S;
    if (S->pack_iter < 0)
        return LOOM_OK;
    const char *t = c->sch->prog->tensors[S->pack_tensor].name;
    char nm[64];
    int L = loom_loop_of_iter(S, S->pack_iter), fused_inside = 0;
    for (int p = L + 1; L >= 0 && p < S->nloops; p++)
        fused_inside |= loom_iter_var(S, S->loops[p].iter) < 0;
    int64_t elems = loom_pack_panel_elems(c->sch, c->s);
    if (L < 0 || fused_inside || elems < 0)
        return violate(c->v, c->err, "pack-panel-loop", c->s, L,
                       "in block %s, the panel of %s packed at loop %s %s; pack at a loop whose inner loops iterate "
                       "each of %s's indices by the innermost tiles of one split (or not at all)",
                       c->block, t, L < 0 ? "(gone)" : loom_iter_name(c->sch, c->s, S->pack_iter, nm, sizeof nm),
                       L < 0            ? "no longer exists"
                       : fused_inside   ? "has a fused loop inside it"
                                        : "has an index iterated outside and inside it by tiles that are not the "
                                          "innermost ones, or a data-dependent extent",
                       t);
    if (elems * 4 > LOOM_MAX_PACK_BYTES)
        return violate(c->v, c->err, "pack-panel-too-large", c->s, L,
                       "in block %s, the panel of %s packed at loop %s holds %lld bytes, more than %lld (it lives on "
                       "the thread's stack); pack at a deeper loop or tile the loops inside it",
                       c->block, t, loom_iter_name(c->sch, c->s, S->pack_iter, nm, sizeof nm), (long long)(elems * 4),
                       (long long)LOOM_MAX_PACK_BYTES);
    return LOOM_OK;
}

/* prefetch-gather: a "prefetch" annotation (issue 13) only on a serial loop
 * over the positions of a compressed last level that gathers rows of a
 * dense input (loom_prefetch_tensor), in a block the loop lowering emits
 * (not inlined, not rolled into a fused chain) */
static loom_status check_prefetch(const stage_ctx *c)
{
    const loom_stage *S = c->S;
    char nm[64];
    for (int p = 0; p < S->nloops; p++)
        for (int a = 0; a < S->loops[p].nann; a++) {
            const loom_annotation *A = &S->loops[p].ann[a];
            if (strcmp(A->key, LOOM_ANN_PREFETCH) || A->value <= 0)
                continue;
            if (S->loops[p].kind != LOOM_LOOP_SERIAL || S->compute_at == LOOM_AT_INLINE || S->rolling ||
                loom_prefetch_tensor(c->sch, c->s, p) < 0)
                return violate(c->v, c->err, "prefetch-gather", c->s, p,
                               "in block %s, loop %s prefetches %lld entries ahead but is not a serial loop over "
                               "the positions of a compressed last level whose coordinate indexes the rows of a "
                               "dense input: put the prefetch on the nonzero loop",
                               c->block, loom_iter_name(c->sch, c->s, S->loops[p].iter, nm, sizeof nm),
                               (long long)A->value);
        }
    return LOOM_OK;
}

/* stream-store: a "stream" annotation (issue 13, LOOM_ANN_STREAM) only on
 * the loop of the block's CacheWrite workspace, with no reduction loop
 * outside it (else the copy-out reads and adds into the output: each
 * element is written more than once and streaming it evicts a line that is
 * read again), in a block at the root that the loop lowering emits, and
 * with no reader of its output placed at one of its loops (a consumer there --
 * reverse-compute-location's relu of GCN2 -- reads the row right after the
 * non-temporal store sent it towards memory: measured on the Zen 4 host,
 * Cora GCN2's aggregation with its relu computed per row ran 1,137 us on
 * one thread streamed, the same loop's FMA work ~100 us) */
static loom_status check_stream(const stage_ctx *c)
{
    const loom_stage *S = c->S;
    char nm[64];
    for (int p = 0; p < S->nloops; p++)
        for (int a = 0; a < S->loops[p].nann; a++) {
            const loom_annotation *A = &S->loops[p].ann[a];
            if (strcmp(A->key, LOOM_ANN_STREAM) || A->value < LOOM_STREAM_ON)
                continue;
            const char *why = NULL;
            if (S->compute_at != LOOM_AT_ROOT || S->rolling)
                why = "the block is not at the root";
            else if (S->cache_iter < 0 || S->loops[p].iter != S->cache_iter)
                why = "the loop holds no CacheWrite workspace";
            for (int q = 0; !why && q < p; q++)
                if (loom_iter_reduces(c->sch, c->s, S->loops[q].iter))
                    why = "a reduction loop outside it adds each partial into the output (written more than once)";
            int readers[LOOM_MAX_STMTS], nr = why ? 0 : loom_stage_readers(c->sch, c->s, readers);
            for (int k = 0; !why && k < nr; k++)
                if (c->sch->stages[readers[k]].compute_at == LOOM_AT_LOOP && c->sch->stages[readers[k]].at_stage == c->s)
                    why = "a block placed at one of its loops reads the output right after the non-temporal store";
            if (why)
                return violate(c->v, c->err, "stream-store", c->s, p,
                               "in block %s, loop %s asks for a streaming (non-temporal) copy-out but %s: stream "
                               "only the workspace of an output written once, at its workspace loop",
                               c->block, loom_iter_name(c->sch, c->s, S->loops[p].iter, nm, sizeof nm), why);
        }
    return LOOM_OK;
}

/* epilogue: an "epilogue" annotation (issue 30) on a workspace loop asks
 * for k stages of the block's epilogue chain that its copy-out can
 * evaluate (loom_epilogue_stages: no reduction outside the workspace loop,
 * k <= the chain's length, the k-th stage not inlined) */
static loom_status check_epilogue(const stage_ctx *c)
{
    int chain[LOOM_MAX_STMTS];
    int want = loom_epilogue_value(c->sch, c->s);
    if (want <= 0 || loom_epilogue_stages(c->sch, c->s, chain) > 0)
        return LOOM_OK;
    int n = loom_epilogue_chain(c->sch, c->s, chain);
    return violate(c->v, c->err, "epilogue", c->s, loom_loop_of_iter(c->S, c->S->cache_iter),
                   "in block %s, the workspace's copy-out is asked to evaluate %d consumer stage%s but its epilogue "
                   "chain has %d%s; ask for fewer, end the chain at a stage that is not inlined, or put the "
                   "workspace outside every reduction loop",
                   c->block, want, want == 1 ? "" : "s", n,
                   n >= want && c->sch->stages[chain[want - 1]].compute_at == LOOM_AT_INLINE
                       ? " (its last asked stage is inlined: nothing to store into)"
                       : " (or a reduction loop is outside the workspace loop)");
}

/* partial-sums: a "partial_sums" annotation (issue 13) only on the
 * innermost, vectorized reduction loop of constant extent of a scalar dot
 * product (loom_partial_sums_ok), at most one per block */
static loom_status check_partial_sums(const stage_ctx *c)
{
    const loom_stage *S = c->S;
    char nm[64];
    for (int p = 0; p < S->nloops; p++)
        for (int a = 0; a < S->loops[p].nann; a++) {
            const loom_annotation *A = &S->loops[p].ann[a];
            if (strcmp(A->key, LOOM_ANN_PARTIAL_SUMS) || A->value <= 0)
                continue;
            if (!loom_partial_sums_ok(c->sch, c->s, p))
                return violate(c->v, c->err, "partial-sums", c->s, p,
                               "in block %s, loop %s keeps partial sums but is not the innermost, vectorized "
                               "reduction loop (constant extent 1..%d) of a block that accumulates each output "
                               "element in a scalar (no rfactor, no workspace): put them on that loop",
                               c->block, loom_iter_name(c->sch, c->s, S->loops[p].iter, nm, sizeof nm),
                               LOOM_MAX_PARTIAL_SUMS);
        }
    return LOOM_OK;
}

#undef LOOP_NAME


/* ---- the rule table (validate.h) ----------------------------------------- */

static loom_status rule_fusion_group(const loom_rule_ctx *c)
{
    return loom__check_fusion_group(c->sch, c->s, c->v, c->err);
}

static loom_status rule_placed(const loom_rule_ctx *c)
{
    return loom__check_placement(c->sch, c->s, c->v, c->err);
}

/* One row per rule, in checking order (validate.h): name, scope, check,
 * one-line doc.  Rows naming the same check stand together. */
#define RULES(X)                                                                                                      \
    X("fusion-group", BLOCK, rule_fusion_group,                                                                      \
      "a schedule breaks its SampleFusionGroup: a fused edge's producer is not inside its consumer (inlined or at "  \
      "one of its loops), or an unfused edge's producer is not at the root")                                         \
    X("discordant-traversal", LOOPS, check_order,                                                                   \
      "a compressed or range level of an operand is iterated by a loop outside the loops of its parent level's "     \
      "index (random access into compressed storage)")                                                              \
    X("pos-order", LOOPS, check_order, "the inner loop of a position split is outside its outer loop")               \
    X("pos-whole-row-outer", LOOPS, check_order,                                                                    \
      "the outer loop of a whole-row position split (chunk 0: one iteration per row) has a kind or an annotation")   \
    X("parallel-reduction", LOOPS, check_parallel,                                                                  \
      "a parallel loop derives from a reduced index (a race on the output), unless it is the block's rfactor loop "  \
      "or a split-K loop with blocks rolled into it")                                                               \
    X("parallel-coiteration", LOOPS, check_parallel,                                                                \
      "a parallel loop must merge several sparse patterns (a while loop, not a for)")                                \
    X("nested-parallel", LOOPS, check_parallel,                                                                     \
      "a parallel loop inside another parallel loop of the same block, or of the block it is placed in (also "       \
      "reported by the placement check)")                                                                           \
    X("vectorize-not-innermost", LOOPS, check_vectorize, "a vectorized loop that is not the innermost")              \
    X("vectorize-dynamic-extent", LOOPS, check_vectorize, "a vectorized loop whose extent is not constant")          \
    X("vectorize-carried-reduction", LOOPS, check_vectorize,                                                        \
      "a vectorized reduced loop whose statement reduces through memory (a free loop inside a reduction loop, or "   \
      "into an rfactor partial), not into a scalar accumulator")                                                    \
    X("vectorize-too-wide", LOOPS, check_vectorize,                                                                 \
      "a vectorized loop longer than the target's limit (lanes x max_vector_factor)")                                \
    X("cache-write-partial", LOOPS, check_workspace,                                                                \
      "a workspace loop that is itself a reduction loop, or that no longer exists")                                  \
    X("cache-write-split", LOOPS, check_workspace,                                                                  \
      "an output index iterated both outside and inside the workspace loop, but not as the innermost tiles of one "  \
      "split")                                                                                                      \
    X("workspace-too-large", LOOPS, check_workspace,                                                                \
      "a workspace larger than the target allows, or of data-dependent size")                                        \
    X("workspace-spills", LOOPS, check_workspace,                                                                   \
      "the register tile (workspace) of a temporary's reduction whose accumulator vectors and a broadcast exceed "  \
      "the target's vector registers")                                                                              \
    X("balance-rows", LOOPS, check_balance,                                                                         \
      "a balance annotation (balanced row partition) on a loop that is not the parallel outermost row loop of a "    \
      "CSR-like operand at the root")                                                                               \
    X("register-tile", LOOPS, check_register_tile,                                                                  \
      "a loop annotated with a vector shape (vector_lanes, vector_registers) wider or with more registers than the " \
      "target's")                                                                                                   \
    X("pack-panel-loop", LOOPS, check_pack,                                                                         \
      "a PackPanel loop that no longer exists, has a fused loop inside it, or has an index of the packed operand "   \
      "iterated outside and inside it by tiles that are not the innermost ones (or a data-dependent extent)")        \
    X("pack-panel-too-large", LOOPS, check_pack,                                                                    \
      "a packed panel larger than LOOM_MAX_PACK_BYTES (it lives on the thread's stack)")                             \
    X("prefetch-gather", LOOPS, check_prefetch,                                                                     \
      "a prefetch annotation on a loop that is not a serial loop over the positions of a compressed last level "     \
      "gathering rows of a dense input, or in an inlined or rolled block")                                          \
    X("partial-sums", LOOPS, check_partial_sums,                                                                    \
      "a partial_sums annotation on a loop that is not the innermost, vectorized reduction loop of constant extent " \
      "(<= LOOM_MAX_PARTIAL_SUMS) of a block accumulating each output element in a scalar")                          \
    X("stream-store", LOOPS, check_stream,                                                                          \
      "a stream annotation on a loop that does not hold the block's CacheWrite workspace, with a reduction loop "    \
      "outside that loop, in an inlined, rolled or non-root block, or with a reader of its output placed at its loops")\
    X("epilogue", LOOPS, check_epilogue,                                                                            \
      "an epilogue annotation on a workspace loop asking for more consumer stages than the copy-out can evaluate "   \
      "(loom_epilogue_stages), or with a reduction loop outside the workspace loop")                                \
    X("compute-at-lost", PLACED, rule_placed, "a block placed at a loop that no longer exists")                      \
    X("producer-coverage", PLACED, rule_placed,                                                                     \
      "a block computed one slice at a time inside a loop is read by a block outside that loop")                     \
    X("compute-at-accumulates", PLACED, rule_placed,                                                                \
      "a placed sparse block that reduces through memory (its recomputed slices would add up; a dense one's "        \
      "slice is reset where it is placed)")                                                                         \
    X("compute-at-race", PLACED, rule_placed,                                                                       \
      "a placed block inside a parallel loop that does not index it (every thread writes the same slice), or a "     \
      "dense one reducing through memory inside a parallel loop, its consumer's or further out, that does not fix "  \
      "one of its indices (threads would reset and add into the same slice)")                                       \
    X("reverse-coverage", PLACED, rule_placed,                                                                      \
      "a consumer computed inside its producer's loop where the producer's slice is not complete, that reads what "  \
      "is computed later, or whose reduction index (or a split or fused loop of it) the location fixes")             \
    X("rolling-update", PLACED, rule_placed,                                                                        \
      "a rolled block (RollingUpdate) whose loop is no longer its source's innermost unsplit reduction loop at the " \
      "root, or whose correction no longer holds")

#define ROW(name, scope, check, doc) {name, LOOM_RULE_##scope, check, doc},
#define NAME(name, scope, check, doc) name,
static const loom_validate_rule builtin_rules[] = {RULES(ROW)};
#define NBUILTIN ((int)(sizeof builtin_rules / sizeof *builtin_rules))
/* loom_validator_rules' array: the built-in names, then the registered ones */
static const char *rule_names[LOOM_VALIDATE_MAX_RULES] = {RULES(NAME)};
#undef ROW
#undef NAME
_Static_assert(sizeof builtin_rules / sizeof *builtin_rules + LOOM_VALIDATE_MAX_REGISTERED <= LOOM_VALIDATE_MAX_RULES,
               "LOOM_VALIDATE_MAX_RULES is too small");

static loom_validate_rule registered_rules[LOOM_VALIDATE_MAX_REGISTERED];
static int nregistered; /* rows [0, nregistered) are complete: read with acquire */
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

int loom_validate_rule_count(void)
{
    return NBUILTIN + __atomic_load_n(&nregistered, __ATOMIC_ACQUIRE);
}

const loom_validate_rule *loom_validate_rule_at(int k)
{
    if (k >= 0 && k < NBUILTIN)
        return &builtin_rules[k];
    if (k >= NBUILTIN && k < loom_validate_rule_count())
        return &registered_rules[k - NBUILTIN];
    return NULL;
}

const char *const *loom_validator_rules(int *n)
{
    *n = loom_validate_rule_count();
    return rule_names;
}

static int rule_name_ok(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len >= sizeof(((loom_violation *)0)->rule))
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '-'))
            return 0;
    return 1;
}

static loom_status check_new_rule(const loom_validate_rule *R, loom_error *err)
{
    if (!R)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_validate_register_rule: NULL rule");
    if (!rule_name_ok(R->name))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "validator rule name '%s' must have 1..31 characters of [a-z0-9-]",
                              R->name ? R->name : "(null)");
    if (!R->check || !R->doc || !R->doc[0])
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "validator rule %s needs a check and a doc line",
                              R->name);
    if (R->scope < LOOM_RULE_BLOCK || R->scope > LOOM_RULE_PLACED)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "validator rule %s: scope %d is not a loom_rule_scope",
                              R->name, (int)R->scope);
    for (int k = 0; k < loom_validate_rule_count(); k++)
        if (!strcmp(loom_validate_rule_at(k)->name, R->name))
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "validator rule %s exists already", R->name);
    return LOOM_OK;
}

loom_status loom_validate_register_rule(const loom_validate_rule *R, loom_error *err)
{
    pthread_mutex_lock(&register_lock);
    loom_status st = check_new_rule(R, err);
    int n = nregistered;
    if (!st && n >= LOOM_VALIDATE_MAX_REGISTERED)
        st = loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                            "cannot register validator rule %s: %d are registered already (LOOM_VALIDATE_MAX_REGISTERED)",
                            R->name, n);
    if (!st) {
        registered_rules[n] = *R;
        rule_names[NBUILTIN + n] = R->name;
        __atomic_store_n(&nregistered, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&register_lock);
    return st;
}

int loom_validate_print_rules(FILE *out)
{
    static const char *scope[] = {"every block", "loop nests", "placed blocks"};
    for (int k = 0; k < loom_validate_rule_count(); k++) {
        const loom_validate_rule *R = loom_validate_rule_at(k);
        if (fprintf(out, "%-28s %-13s %s\n", R->name, scope[R->scope], R->doc) < 0)
            return -1;
    }
    return fflush(out) ? -1 : 0;
}

static int in_scope(loom_rule_scope scope, const loom_stage *S)
{
    return scope == LOOM_RULE_BLOCK || (scope == LOOM_RULE_LOOPS && S->compute_at != LOOM_AT_INLINE) ||
           (scope == LOOM_RULE_PLACED && S->compute_at == LOOM_AT_LOOP);
}

/* Every rule of the table on stage s, in table order; a check shared by
 * adjacent rows runs once. */
static loom_status check_block(const loom_schedule *sch, int s, const loom_limits *lim, loom_violation *v,
                               loom_error *err)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[s];
    static __thread sp_access acc[LOOM_MAX_EXPRS];
    int nacc = 0;
    collect(prog, st->rhs, acc, &nacc);
    if (loom_tensor_is_sparse(prog, st->lhs) && nacc < LOOM_MAX_EXPRS) {
        acc[nacc].tensor = st->lhs;
        acc[nacc].root = prog->tensors[st->lhs].pattern_of;
        memcpy(acc[nacc].idx, st->lhs_idx, sizeof acc[nacc].idx);
        nacc++;
    }
    loom_rule_ctx c = {.sch = sch, .S = &sch->stages[s], .s = s, .block = prog->tensors[st->lhs].name,
                       .lim = lim, .v = v, .err = err, .acc = acc, .nacc = nacc};
    loom_rule_check_fn last = NULL;
    int n = loom_validate_rule_count();
    for (int k = 0; k < n; k++) {
        const loom_validate_rule *R = loom_validate_rule_at(k);
        if (R->check == last)
            continue;
        last = R->check;
        loom_status r = in_scope(R->scope, c.S) ? R->check(&c) : LOOM_OK;
        if (r)
            return r;
    }
    return LOOM_OK;
}

/* lim NULL: the caller gave no target's limits (validate.h: no default). */
static loom_status no_limits(const char *fn, loom_violation *v, loom_error *err)
{
    const char *msg = "no limits given: pass the target's (loom_target.limits; this CPU's: "
                      "loom_target_cpu_limits)";
    if (v) {
        v->rule[0] = 0;
        snprintf(v->msg, sizeof v->msg, "%s: %s", fn, msg);
        v->stage = v->loop = -1;
    }
    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s: %s", fn, msg);
}

loom_status loom_validate_stage(const loom_schedule *sch, int s, const loom_limits *lim, loom_violation *v,
                                loom_error *err)
{
    if (!lim)
        return no_limits("loom_validate_stage", v, err);
    return check_block(sch, s, lim, v, err);
}

loom_status loom_validate(const loom_schedule *sch, const loom_limits *lim, loom_violation *v, loom_error *err)
{
    if (!lim)
        return no_limits("loom_validate", v, err);
    for (int s = 0; s < sch->nstages; s++) {
        loom_status st = check_block(sch, s, lim, v, err);
        if (st)
            return st;
    }
    if (v) {
        v->rule[0] = 0;
        v->msg[0] = 0;
        v->stage = v->loop = -1;
    }
    return LOOM_OK;
}
