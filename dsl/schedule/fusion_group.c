/* SampleFusionGroup (DESIGN.md "Instructions"; schedule.h "fusion
 * groups"): which producer -> consumer edges of the program are fused.
 *
 * Source: AutoSparse (Lacouture et al., "LLM-Guided Autoscheduling for
 * Large-Scale Sparse Machine Learning", 2025; ../shared/research): fusion
 * groups are a first-class choice, made before the loop orders, and the
 * compiler offers only the legal ones -- no fusion that needs random access
 * into compressed storage, none that needs an order the consumer cannot
 * give.  loom states legality through its own placement primitives: an edge
 * p -> c is offered when p writes a temporary that c alone reads and, on
 * the schedule as it stands (fresh when the fuse-producers module samples
 * it), SampleComputeLocation would offer p a place inside c (inlined, or at
 * one of c's loops: loom_compute_location_candidates, whose loops stop at
 * c's first reduction loop and whose compute-at needs c to read p at
 * indices its loops give, i.e. no access into p that c's order cannot
 * give).  Any subset of the offered edges is a decision: each temporary has
 * one consumer, so the fused edges form a forest and its trees are the
 * groups.  A program with a max= reduction (a softmax chain) is left to
 * attention-fusion: no edge is offered and no stage is constrained.
 */
#include <string.h>

#include <gsl/gsl_rng.h>

#include "query.h"
#include "schedule_internal.h"

static int has_max_chain(const loom_program *prog)
{
    for (int s = 0; s < prog->nstmts; s++)
        if (prog->stmts[s].op == LOOM_ASSIGN_MAX)
            return 1;
    return 0;
}

/* The stages reading stage p's tensor directly (not looking through
 * inlined stages): count, and the first in *first. */
static int direct_readers(const loom_schedule *sch, int p, int *first)
{
    const loom_program *prog = sch->prog;
    int n = 0;
    *first = -1;
    for (int r = p + 1; r < sch->nstages; r++)
        if (loom_expr_reads(prog, prog->stmts[r].rhs, prog->stmts[p].lhs)) {
            if (n++ == 0)
                *first = r;
        }
    return n;
}

/* Does placing p at loop k of c compute a slice of p, not all of it: is
 * some dimension of p indexed by a variable of c's loops 0..k? */
static int slices(const loom_schedule *sch, int p, int c, int k)
{
    int map[LOOM_MAX_ORDER];
    if (loom_compute_at_map(sch, p, c, map) != 0)
        return 0;
    const loom_stage *C = &sch->stages[c];
    int order = sch->prog->tensors[sch->prog->stmts[p].lhs].order;
    for (int q = 0; q <= k && q < C->nloops; q++) {
        int v = loom_iter_var(C, C->loops[q].iter);
        for (int d = 0; d < order; d++)
            if (v >= 0 && map[d] == v)
                return 1;
    }
    return 0;
}

int loom_fusion_edge_legal(const loom_schedule *sch, int p, int *consumer, char *why, size_t n)
{
    const loom_program *prog = sch->prog;
    char dummy[8];
    if (!why) {
        why = dummy;
        n = sizeof dummy;
    }
    why[0] = 0;
    *consumer = -1;
    if (p < 0 || p >= sch->nstages)
        return -1;
    const loom_tensor *T = &prog->tensors[prog->stmts[p].lhs];
    if (T->role != LOOM_TENSOR_TEMP || has_max_chain(prog))
        return -1;
    int c, nr = direct_readers(sch, p, &c);
    if (nr == 0)
        return -1;
    *consumer = c;
    if (nr > 1) {
        snprintf(why, n, "%s is read by %d operators: fusing it into one would recompute or reorder it for the others",
                 T->name, nr);
        return 0;
    }
    int64_t cand[2 + LOOM_MAX_LOOPS];
    int nc = loom__location_candidates(sch, p, cand);
    for (int k = 0; k < nc; k++)
        if (cand[k] == LOOM_AT_INLINE || (cand[k] >= 0 && slices(sch, p, c, (int)cand[k])))
            return 1;
    const char *cn = prog->tensors[prog->stmts[c].lhs].name;
    snprintf(why, n,
             "%s cannot be placed inside %s: %s reads it only through indices its loops above its reductions do not "
             "give (e.g. a gather through a compressed index), so every iteration would recompute all of %s",
             T->name, cn, cn, T->name);
    return 0;
}

int loom_fusion_edges(const loom_schedule *sch, int *producers, int *consumers, int *nconstrained)
{
    int n = 0, nk = 0;
    for (int p = 0; p < sch->nstages; p++) {
        int c, legal = loom_fusion_edge_legal(sch, p, &c, NULL, 0);
        if (legal < 0)
            continue;
        nk++;
        if (legal == 1) {
            producers[n] = p;
            consumers[n] = c;
            n++;
        }
    }
    if (nconstrained)
        *nconstrained = nk;
    return n;
}

loom_status loom_sample_fusion_group(loom_schedule *sch, int block_rv, const int64_t *decision,
                                     int64_t *decision_out, int *out_expr_rv, loom_error *err)
{
    int s;
    loom_status st = loom__block_stage(sch, block_rv, &s, err);
    if (st)
        return st;
    int prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS];
    int n = loom_fusion_edges(sch, prod, cons, NULL);
    int64_t all = n >= 62 ? INT64_MAX : ((int64_t)1 << n) - 1, mask, asked[LOOM_MAX_INST_IO];
    decision = loom__ask_decider(sch, decision, LOOM_INST_SAMPLE_FUSION_GROUP, block_rv, NULL, NULL, 0, asked);
    if (decision) {
        mask = decision[0] < 0 ? 0 : decision[0] & all; /* repair: the edges that exist */
    } else {
        if (!sch->rng)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "sampling needs a random generator");
        mask = 0;
        for (int k = 0; k < n; k++) /* each offered edge fused with probability 1/2 */
            if (gsl_rng_uniform_int((gsl_rng *)sch->rng, 2))
                mask |= (int64_t)1 << k;
    }
    int rv = loom__new_rv(sch, LOOM_RV_EXPR, -1, -1, mask, err);
    if (rv < 0)
        return LOOM_ERR_INVALID;
    /* every temporary with a consumer is constrained: fused (an offered edge
     * in the mask) or kept at the root */
    for (int p = 0; p < sch->nstages; p++) {
        int c;
        if (loom_fusion_edge_legal(sch, p, &c, NULL, 0) >= 0)
            sch->stages[p].fuse = LOOM_FUSE_NO;
    }
    for (int k = 0; k < n; k++)
        if (mask >> k & 1)
            sch->stages[prod[k]].fuse = LOOM_FUSE_YES;
    *out_expr_rv = rv;
    if (decision_out)
        decision_out[0] = mask;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    inst.outputs[inst.noutputs++] = rv;
    inst.decision[0] = mask;
    inst.ndecision = 1;
    loom_inst_record(sch, LOOM_INST_SAMPLE_FUSION_GROUP, &inst);
    return LOOM_OK;
}
