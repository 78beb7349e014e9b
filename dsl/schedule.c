/* The Schedule state, getters and loop transformations (schedule.h). */
#include <stdio.h>
#include <string.h>

#include "schedule_internal.h"

/* ---- helpers ------------------------------------------------------- */

int loom__new_rv(loom_schedule *sch, loom_rv_kind kind, int stage, int iter, int64_t value, loom_error *err)
{
    if (sch->nrvs >= LOOM_MAX_RVS) {
        loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                       "too many random variables (%d): the schedule program is too long", LOOM_MAX_RVS);
        return -1;
    }
    loom_rv *r = &sch->rvs[sch->nrvs];
    r->kind = kind;
    r->stage = stage;
    r->iter = iter;
    r->value = value;
    return sch->nrvs++;
}

static const char *rv_kind_name(loom_rv_kind k)
{
    return k == LOOM_RV_BLOCK ? "a block" : k == LOOM_RV_LOOP ? "a loop" : "an integer";
}

static loom_status check_rv(const loom_schedule *sch, int rv, loom_rv_kind want, loom_error *err)
{
    if (rv < 0 || rv >= sch->nrvs)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "random variable %d does not exist (have %d)", rv,
                              sch->nrvs);
    if (sch->rvs[rv].kind != want)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "random variable %d is %s, expected %s", rv,
                              rv_kind_name(sch->rvs[rv].kind), rv_kind_name(want));
    return LOOM_OK;
}

loom_status loom__loop_pos(const loom_schedule *sch, int loop_rv, int *stage, int *pos, loom_error *err)
{
    loom_status st = check_rv(sch, loop_rv, LOOM_RV_LOOP, err);
    if (st)
        return st;
    const loom_rv *r = &sch->rvs[loop_rv];
    const loom_stage *S = &sch->stages[r->stage];
    for (int p = 0; p < S->nloops; p++)
        if (S->loops[p].iter == r->iter) {
            *stage = r->stage;
            *pos = p;
            return LOOM_OK;
        }
    char nm[64];
    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                          "loop %s of block %s no longer exists (it was split or fused)",
                          loom_iter_name(sch, r->stage, r->iter, nm, sizeof nm),
                          sch->prog->tensors[sch->prog->stmts[r->stage].lhs].name);
}

loom_status loom__block_stage(const loom_schedule *sch, int block_rv, int *stage, loom_error *err)
{
    loom_status st = check_rv(sch, block_rv, LOOM_RV_BLOCK, err);
    if (st)
        return st;
    *stage = sch->rvs[block_rv].stage;
    return LOOM_OK;
}

loom_status loom__expr_value(const loom_schedule *sch, int expr_rv, int64_t *value, loom_error *err)
{
    loom_status st = check_rv(sch, expr_rv, LOOM_RV_EXPR, err);
    if (st)
        return st;
    *value = sch->rvs[expr_rv].value;
    return LOOM_OK;
}

void loom__record(loom_schedule *sch, const char *name, loom_inst *inst)
{
    if (!sch->recorder)
        return;
    inst->kind = loom_inst_kind_find(name);
    sch->recorder(sch->recorder_ctx, inst);
}

/* ---- default order --------------------------------------------------- */

static void appearance(const loom_program *prog, int e, int *order, int *n)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        for (int d = 0; d < E->nidx; d++) {
            int seen = 0;
            for (int k = 0; k < *n; k++)
                seen |= order[k] == E->idx[d];
            if (!seen && *n < LOOM_MAX_STMT_VARS)
                order[(*n)++] = E->idx[d];
        }
        return;
    }
    if (E->kind == LOOM_EXPR_CONST)
        return;
    for (int k = 0; k < E->nargs; k++)
        appearance(prog, E->args[k], order, n);
}

/* before[b][a] = 1: slot a must precede slot b (a sparse level's parent) */
static void access_edges(const loom_program *prog, int t, const int *idx, int before[][LOOM_MAX_STMT_VARS],
                         const int *slot)
{
    const loom_tensor *T = &prog->tensors[t];
    if (!loom_tensor_is_sparse(prog, t))
        return;
    for (int l = 1; l < T->format.nlevels; l++) {
        if (T->format.level[l] == LOOM_LEVEL_DENSE)
            continue;
        int a = slot[idx[T->format.mode[l - 1]]], b = slot[idx[T->format.mode[l]]];
        before[b][a] = 1;
    }
}

static void expr_edges(const loom_program *prog, int e, int before[][LOOM_MAX_STMT_VARS], const int *slot)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        access_edges(prog, E->tensor, E->idx, before, slot);
        return;
    }
    if (E->kind == LOOM_EXPR_CONST)
        return;
    for (int k = 0; k < E->nargs; k++)
        expr_edges(prog, E->args[k], before, slot);
}

loom_status loom__default_order(const loom_program *prog, int s, int *out, int *nout, loom_error *err)
{
    const loom_stmt *st = &prog->stmts[s];
    int order[LOOM_MAX_STMT_VARS], n = 0;
    appearance(prog, st->rhs, order, &n);
    for (int k = 0; k < st->nfree; k++) {
        int seen = 0;
        for (int j = 0; j < n; j++)
            seen |= order[j] == st->vars[k];
        if (!seen && n < LOOM_MAX_STMT_VARS)
            order[n++] = st->vars[k];
    }
    int slot[LOOM_MAX_VARS] = {0};
    for (int k = 0; k < n; k++)
        slot[order[k]] = k;
    int before[LOOM_MAX_STMT_VARS][LOOM_MAX_STMT_VARS];
    memset(before, 0, sizeof before);
    expr_edges(prog, st->rhs, before, slot);
    access_edges(prog, st->lhs, st->lhs_idx, before, slot);
    int placed[LOOM_MAX_STMT_VARS] = {0};
    for (int pos = 0; pos < n; pos++) {
        int pick = -1;
        for (int k = 0; k < n && pick < 0; k++) {
            if (placed[k])
                continue;
            int ready = 1;
            for (int j = 0; j < n; j++)
                if (before[k][j] && !placed[j])
                    ready = 0;
            if (ready)
                pick = k;
        }
        if (pick < 0)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, prog->path, st->line, 0,
                                  "discordant-traversal: no loop order of `%s` traverses every sparse operand in its "
                                  "level order (their level orders form a cycle); declare one of them csc (or csr) "
                                  "so their orders agree",
                                  st->text);
        placed[pick] = 1;
        out[pos] = order[pick];
    }
    *nout = n;
    return LOOM_OK;
}

/* ---- state ----------------------------------------------------------- */

loom_status loom_schedule_init(loom_schedule *sch, const loom_program *prog, void *rng, loom_error *err)
{
    for (int z = 0; z < prog->nsizes; z++)
        if (!prog->sizes[z].bound)
            return loom_error_set(err, LOOM_ERR_INVALID, prog->path, prog->sizes[z].line, 0,
                                  "size %s is not bound: bind the program's sizes before scheduling it",
                                  prog->sizes[z].name);
    memset(sch, 0, sizeof *sch);
    sch->prog = prog;
    sch->rng = rng;
    sch->nstages = prog->nstmts;
    for (int s = 0; s < prog->nstmts; s++) {
        loom_stage *S = &sch->stages[s];
        S->stmt = s;
        S->compute_at = LOOM_AT_ROOT;
        S->at_stage = S->at_iter = -1;
        int order[LOOM_MAX_STMT_VARS], n = 0;
        loom_status st = loom__default_order(prog, s, order, &n, err);
        if (st)
            return st;
        for (int k = 0; k < n; k++) {
            loom_iter *it = &S->iters[S->niters];
            it->kind = LOOM_ITER_VAR;
            it->var = order[k];
            it->parent = it->a = it->b = it->tensor = -1;
            it->first_child = it->fused_into = -1;
            S->loops[S->nloops].iter = S->niters;
            S->loops[S->nloops].kind = LOOM_LOOP_SERIAL;
            S->niters++;
            S->nloops++;
        }
    }
    return LOOM_OK;
}

size_t loom_schedule_size(const loom_schedule *sch)
{
    return offsetof(loom_schedule, rvs) + (size_t)sch->nrvs * sizeof(loom_rv);
}

void loom_schedule_copy(loom_schedule *dst, const loom_schedule *src)
{
    memcpy(dst, src, loom_schedule_size(src));
}

int64_t loom_iter_extent(const loom_schedule *sch, int stage, int iter)
{
    const loom_stage *S = &sch->stages[stage];
    if (iter < 0 || iter >= S->niters)
        return 0;
    const loom_iter *it = &S->iters[iter];
    switch (it->kind) {
    case LOOM_ITER_VAR: return loom_program_var_extent(sch->prog, it->var);
    case LOOM_ITER_SPLIT: {
        if (it->factor > 0)
            return it->factor;
        int64_t E = loom_iter_extent(sch, stage, it->parent);
        if (E <= 0)
            return 0;
        const loom_iter *p = &S->iters[it->parent];
        int64_t prod = 1;
        for (int k = 0; k < it->nparts; k++) {
            const loom_iter *c = &S->iters[p->first_child + k];
            if (c != it)
                prod *= c->factor;
        }
        return (E + prod - 1) / prod;
    }
    case LOOM_ITER_FUSE: {
        int64_t a = loom_iter_extent(sch, stage, it->a), b = loom_iter_extent(sch, stage, it->b);
        return a > 0 && b > 0 ? a * b : 0;
    }
    case LOOM_ITER_POS: return it->factor;
    }
    return 0;
}

static int access_has_compressed_at(const loom_program *prog, int t, const int *idx, int v)
{
    const loom_tensor *T = &prog->tensors[t];
    for (int l = 0; l < T->format.nlevels; l++)
        if (T->format.level[l] == LOOM_LEVEL_COMPRESSED && idx[T->format.mode[l]] == v)
            return 1;
    return 0;
}

static int expr_compressed_at(const loom_program *prog, int e, int v)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return access_has_compressed_at(prog, E->tensor, E->idx, v);
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    for (int k = 0; k < E->nargs; k++)
        if (expr_compressed_at(prog, E->args[k], v))
            return 1;
    return 0;
}

int loom_var_is_compressed(const loom_schedule *sch, int stage, int v)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[sch->stages[stage].stmt];
    return expr_compressed_at(prog, st->rhs, v) || access_has_compressed_at(prog, st->lhs, st->lhs_idx, v);
}

static uint64_t mix(uint64_t h, int64_t v)
{
    for (int k = 0; k < 8; k++) {
        h ^= (uint64_t)((v >> (8 * k)) & 0xff);
        h *= 0x100000001b3ULL;
    }
    return h;
}

uint64_t loom_schedule_hash(const loom_schedule *sch)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = mix(h, sch->nstages);
    for (int s = 0; s < sch->nstages; s++) {
        const loom_stage *S = &sch->stages[s];
        h = mix(h, S->compute_at);
        h = mix(h, S->at_stage);
        h = mix(h, S->at_iter);
        h = mix(h, S->niters);
        for (int i = 0; i < S->niters; i++) {
            const loom_iter *it = &S->iters[i];
            h = mix(h, it->kind);
            h = mix(h, it->var);
            h = mix(h, it->parent);
            h = mix(h, it->a);
            h = mix(h, it->b);
            h = mix(h, it->tensor);
            h = mix(h, it->index);
            h = mix(h, it->nparts);
            h = mix(h, it->factor);
        }
        h = mix(h, S->nloops);
        for (int p = 0; p < S->nloops; p++) {
            const loom_loop *L = &S->loops[p];
            h = mix(h, L->iter);
            h = mix(h, L->kind);
            h = mix(h, L->unroll);
            h = mix(h, L->nann);
            for (int a = 0; a < L->nann; a++) {
                for (const char *c = L->ann[a].key; *c; c++)
                    h = mix(h, *c);
                h = mix(h, L->ann[a].value);
            }
        }
        h = mix(h, S->nann);
        for (int a = 0; a < S->nann; a++) {
            for (const char *c = S->ann[a].key; *c; c++)
                h = mix(h, *c);
            h = mix(h, S->ann[a].value);
        }
    }
    return h;
}

int loom_schedule_equal(const loom_schedule *a, const loom_schedule *b)
{
    if (a->nstages != b->nstages)
        return 0;
    for (int s = 0; s < a->nstages; s++) {
        const loom_stage *A = &a->stages[s], *B = &b->stages[s];
        if (A->compute_at != B->compute_at || A->at_stage != B->at_stage || A->at_iter != B->at_iter ||
            A->niters != B->niters || A->nloops != B->nloops ||
            A->nann != B->nann)
            return 0;
        for (int i = 0; i < A->niters; i++) {
            const loom_iter *x = &A->iters[i], *y = &B->iters[i];
            if (x->kind != y->kind || x->var != y->var || x->parent != y->parent || x->a != y->a || x->b != y->b ||
                x->tensor != y->tensor || x->index != y->index || x->nparts != y->nparts || x->factor != y->factor)
                return 0;
        }
        for (int p = 0; p < A->nloops; p++) {
            const loom_loop *x = &A->loops[p], *y = &B->loops[p];
            if (x->iter != y->iter || x->kind != y->kind || x->unroll != y->unroll || x->nann != y->nann)
                return 0;
            for (int k = 0; k < x->nann; k++)
                if (strcmp(x->ann[k].key, y->ann[k].key) || x->ann[k].value != y->ann[k].value)
                    return 0;
        }
        for (int k = 0; k < A->nann; k++)
            if (strcmp(A->ann[k].key, B->ann[k].key) || A->ann[k].value != B->ann[k].value)
                return 0;
    }
    return 1;
}

const char *loom_iter_name(const loom_schedule *sch, int stage, int iter, char *buf, size_t n)
{
    const loom_stage *S = &sch->stages[stage];
    if (iter < 0 || iter >= S->niters) {
        snprintf(buf, n, "?");
        return buf;
    }
    const loom_iter *it = &S->iters[iter];
    char a[64], b[64];
    switch (it->kind) {
    case LOOM_ITER_VAR: snprintf(buf, n, "%s", sch->prog->vars[it->var].name); break;
    case LOOM_ITER_SPLIT:
        snprintf(buf, n, "%s.%d", loom_iter_name(sch, stage, it->parent, a, sizeof a), it->index);
        break;
    case LOOM_ITER_FUSE:
        snprintf(buf, n, "%s_%s.fused", loom_iter_name(sch, stage, it->a, a, sizeof a),
                 loom_iter_name(sch, stage, it->b, b, sizeof b));
        break;
    case LOOM_ITER_POS: snprintf(buf, n, "%s.p%d", sch->prog->vars[it->var].name, it->index); break;
    }
    return buf;
}

void loom_schedule_print(const loom_schedule *sch, FILE *out)
{
    static const char *kinds[] = {"", " parallel", " vectorized", " unrolled"};
    for (int s = 0; s < sch->nstages; s++) {
        const loom_stage *S = &sch->stages[s];
        fprintf(out, "block %s: %s%s\n", sch->prog->tensors[sch->prog->stmts[s].lhs].name, sch->prog->stmts[s].text,
                S->compute_at == LOOM_AT_INLINE ? "  (inlined)" : "");
        if (S->compute_at == LOOM_AT_INLINE)
            continue;
        for (int p = 0; p < S->nloops; p++) {
            char nm[64];
            int64_t e = loom_iter_extent(sch, s, S->loops[p].iter);
            fprintf(out, "%*sfor %s in ", 2 * (p + 1), "", loom_iter_name(sch, s, S->loops[p].iter, nm, sizeof nm));
            if (e > 0)
                fprintf(out, "0..%lld", (long long)e);
            else
                fprintf(out, "(data-dependent)");
            fprintf(out, "%s\n", kinds[S->loops[p].kind]);
        }
    }
}

/* ---- getters ----------------------------------------------------------- */

loom_status loom_get_block(loom_schedule *sch, const char *name, int *block_rv, loom_error *err)
{
    const loom_program *prog = sch->prog;
    for (int s = 0; s < sch->nstages; s++)
        if (strcmp(prog->tensors[prog->stmts[s].lhs].name, name) == 0) {
            int rv = loom__new_rv(sch, LOOM_RV_BLOCK, s, -1, 0, err);
            if (rv < 0)
                return LOOM_ERR_INVALID;
            *block_rv = rv;
            loom_inst inst = {0};
            snprintf(inst.sattr, sizeof inst.sattr, "%s", name);
            inst.noutputs = 1;
            inst.outputs[0] = rv;
            loom__record(sch, "GetBlock", &inst);
            return LOOM_OK;
        }
    char list[256] = "";
    for (int s = 0; s < sch->nstages; s++) {
        size_t k = strlen(list);
        snprintf(list + k, sizeof list - k, "%s%s", s ? ", " : "", prog->tensors[prog->stmts[s].lhs].name);
    }
    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "no block computes tensor %s (blocks: %s)", name, list);
}

loom_status loom_get_loops(loom_schedule *sch, int block_rv, int *loop_rvs, int *n, loom_error *err)
{
    int s;
    loom_status st = loom__block_stage(sch, block_rv, &s, err);
    if (st)
        return st;
    const loom_stage *S = &sch->stages[s];
    if (sch->nrvs + S->nloops > LOOM_MAX_RVS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many random variables (%d)", LOOM_MAX_RVS);
    loom_inst inst = {0};
    inst.ninputs = 1;
    inst.inputs[0] = block_rv;
    for (int p = 0; p < S->nloops; p++) {
        loop_rvs[p] = loom__new_rv(sch, LOOM_RV_LOOP, s, S->loops[p].iter, 0, err);
        if (p < LOOM_MAX_INST_IO)
            inst.outputs[inst.noutputs++] = loop_rvs[p];
    }
    *n = S->nloops;
    loom__record(sch, "GetLoops", &inst);
    return LOOM_OK;
}

static int expr_reads(const loom_program *prog, int e, int t)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return E->tensor == t;
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    for (int k = 0; k < E->nargs; k++)
        if (expr_reads(prog, E->args[k], t))
            return 1;
    return 0;
}

static loom_status related(loom_schedule *sch, int block_rv, int producers, int *block_rvs, int *n,
                           loom_error *err)
{
    int s;
    loom_status st = loom__block_stage(sch, block_rv, &s, err);
    if (st)
        return st;
    const loom_program *prog = sch->prog;
    loom_inst inst = {0};
    inst.ninputs = 1;
    inst.inputs[0] = block_rv;
    *n = 0;
    for (int o = 0; o < sch->nstages; o++) {
        if (o == s)
            continue;
        int rel = producers ? expr_reads(prog, prog->stmts[s].rhs, prog->stmts[o].lhs)
                            : expr_reads(prog, prog->stmts[o].rhs, prog->stmts[s].lhs);
        if (!rel)
            continue;
        int rv = loom__new_rv(sch, LOOM_RV_BLOCK, o, -1, 0, err);
        if (rv < 0)
            return LOOM_ERR_INVALID;
        block_rvs[(*n)++] = rv;
        if (inst.noutputs < LOOM_MAX_INST_IO)
            inst.outputs[inst.noutputs++] = rv;
    }
    loom__record(sch, producers ? "GetProducers" : "GetConsumers", &inst);
    return LOOM_OK;
}

loom_status loom_get_producers(loom_schedule *sch, int block_rv, int *block_rvs, int *n, loom_error *err)
{
    return related(sch, block_rv, 1, block_rvs, n, err);
}

loom_status loom_get_consumers(loom_schedule *sch, int block_rv, int *block_rvs, int *n, loom_error *err)
{
    return related(sch, block_rv, 0, block_rvs, n, err);
}

/* ---- loop transformations -------------------------------------------- */

/* The VAR iter an iter derives from (through splits); -1 for fused iters. */
static int root_var(const loom_stage *S, int iter)
{
    while (iter >= 0) {
        const loom_iter *it = &S->iters[iter];
        if (it->kind == LOOM_ITER_VAR || it->kind == LOOM_ITER_POS)
            return it->var;
        if (it->kind == LOOM_ITER_FUSE)
            return -1;
        iter = it->parent;
    }
    return -1;
}

static int var_has_range(const loom_schedule *sch, int stage, int v);

/* Blocks placed inside a loop stay inside it when the loop is split or
 * fused (as in TVM, where compute_at moved them into its body): they follow
 * the loop that now binds the same indices innermost. */
static void follow_location(loom_schedule *sch, int stage, int old_iter, int new_iter)
{
    for (int q = 0; q < sch->nstages; q++) {
        loom_stage *Q = &sch->stages[q];
        if (Q->compute_at == LOOM_AT_LOOP && Q->at_stage == stage && Q->at_iter == old_iter)
            Q->at_iter = new_iter;
    }
}

loom_status loom_split(loom_schedule *sch, int loop_rv, int n, const int *factor_rvs, const int64_t *factors,
                       int *out_loop_rvs, loom_error *err)
{
    int s, pos;
    loom_status st = loom__loop_pos(sch, loop_rv, &s, &pos, err);
    if (st)
        return st;
    loom_stage *S = &sch->stages[s];
    int iter = S->loops[pos].iter;
    char nm[64];
    loom_iter_name(sch, s, iter, nm, sizeof nm);
    if (n < 2 || n > LOOM_MAX_INST_IO - 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "split of loop %s into %d parts: need 2..%d", nm, n,
                              LOOM_MAX_INST_IO - 1);
    const loom_iter *it = &S->iters[iter];
    if (it->kind == LOOM_ITER_VAR && loom_var_is_compressed(sch, s, it->var))
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "split-sparse-coordinate: loop %s iterates a compressed level's coordinates; split its "
                              "position space with PosSplit instead",
                              nm);
    int64_t E = loom_iter_extent(sch, s, iter);
    if (E <= 0)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "split-dynamic-extent: loop %s has a data-dependent extent; only its inner tile can be "
                              "split",
                              nm);
    if (S->niters + n > LOOM_MAX_ITERS || S->nloops + n - 1 > LOOM_MAX_LOOPS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many loops in block %s",
                              sch->prog->tensors[sch->prog->stmts[s].lhs].name);
    int64_t f[LOOM_MAX_INST_IO];
    int inferred = -1;
    for (int k = 0; k < n; k++) {
        if (factor_rvs) {
            st = loom__expr_value(sch, factor_rvs[k], &f[k], err);
            if (st)
                return st;
        } else
            f[k] = factors[k];
        if (f[k] <= 0) {
            if (inferred >= 0)
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                      "split of loop %s: only one factor may be inferred (factors %d and %d are not "
                                      "positive)",
                                      nm, inferred, k);
            inferred = k;
            f[k] = 0;
        }
    }
    for (int k = 0; k < n; k++)
        if (f[k] > E)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "split-factor-too-large: factor %lld of loop %s exceeds its extent %lld", (long long)f[k],
                                  nm, (long long)E);
    if (inferred < 0) {
        int64_t prod = 1; /* each factor <= E: stop before it can overflow */
        for (int k = 0; k < n && prod < E; k++)
            prod *= f[k];
        if (prod < E)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "split-too-small: factors of loop %s multiply to %lld < its extent %lld", nm,
                                  (long long)prod, (long long)E);
    }
    int first = S->niters;
    for (int k = 0; k < n; k++) {
        loom_iter *c = &S->iters[S->niters++];
        memset(c, 0, sizeof *c);
        c->kind = LOOM_ITER_SPLIT;
        c->var = root_var(S, iter);
        c->parent = iter;
        c->a = c->b = c->tensor = -1;
        c->index = k;
        c->nparts = n;
        c->factor = f[k];
        c->first_child = c->fused_into = -1;
    }
    S->iters[iter].first_child = first;
    follow_location(sch, s, iter, first + n - 1);
    memmove(&S->loops[pos + n], &S->loops[pos + 1], sizeof(loom_loop) * (size_t)(S->nloops - pos - 1));
    for (int k = 0; k < n; k++) {
        memset(&S->loops[pos + k], 0, sizeof(loom_loop));
        S->loops[pos + k].iter = first + k;
    }
    S->nloops += n - 1;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = loop_rv;
    for (int k = 0; k < n; k++) {
        if (factor_rvs)
            inst.inputs[inst.ninputs++] = factor_rvs[k];
        else
            inst.attrs[inst.nattrs++] = factors[k];
        out_loop_rvs[k] = loom__new_rv(sch, LOOM_RV_LOOP, s, first + k, 0, err);
        if (out_loop_rvs[k] < 0)
            return LOOM_ERR_INVALID;
        inst.outputs[inst.noutputs++] = out_loop_rvs[k];
    }
    loom__record(sch, "Split", &inst);
    return LOOM_OK;
}

static int range_at(const loom_program *prog, int t, const int *idx, int v)
{
    const loom_tensor *T = &prog->tensors[t];
    for (int l = 0; l < T->format.nlevels; l++)
        if (T->format.level[l] == LOOM_LEVEL_RANGE && idx[T->format.mode[l]] == v)
            return 1;
    return 0;
}

static int expr_range_at(const loom_program *prog, int e, int v)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS)
        return range_at(prog, E->tensor, E->idx, v);
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    for (int k = 0; k < E->nargs; k++)
        if (expr_range_at(prog, E->args[k], v))
            return 1;
    return 0;
}

static int var_has_range(const loom_schedule *sch, int stage, int v)
{
    const loom_stmt *st = &sch->prog->stmts[stage];
    return expr_range_at(sch->prog, st->rhs, v) || range_at(sch->prog, st->lhs, st->lhs_idx, v);
}

loom_status loom_fuse(loom_schedule *sch, const int *loop_rvs, int n, int *out_loop_rv, loom_error *err)
{
    if (n < 2 || n > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "fuse needs 2..%d loops, got %d", LOOM_MAX_INST_IO, n);
    int s0 = -1, pos0 = -1;
    for (int k = 0; k < n; k++) {
        int s, pos;
        loom_status st = loom__loop_pos(sch, loop_rvs[k], &s, &pos, err);
        if (st)
            return st;
        if (k == 0) {
            s0 = s;
            pos0 = pos;
        } else if (s != s0 || pos != pos0 + k)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "fuse-not-adjacent: fused loops must be adjacent, outer to inner, in one block");
    }
    loom_stage *S = &sch->stages[s0];
    for (int k = 0; k < n; k++) {
        int iter = S->loops[pos0 + k].iter;
        char nm[64];
        loom_iter_name(sch, s0, iter, nm, sizeof nm);
        int v = root_var(S, iter);
        if (S->iters[iter].kind == LOOM_ITER_POS || (v >= 0 && (loom_var_is_compressed(sch, s0, v) ||
                                                                 var_has_range(sch, s0, v))))
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "fuse-sparse: loop %s iterates a sparse level (compressed or masked); only dense "
                                  "loops can be fused",
                                  nm);
        if (loom_iter_extent(sch, s0, iter) <= 0)
            return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                                  "fuse-dynamic-extent: loop %s has a data-dependent extent", nm);
    }
    if (S->niters + n - 1 > LOOM_MAX_ITERS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many loops in block %s",
                              sch->prog->tensors[sch->prog->stmts[s0].lhs].name);
    int acc = S->loops[pos0].iter;
    for (int k = 1; k < n; k++) {
        int b = S->loops[pos0 + k].iter;
        loom_iter *f = &S->iters[S->niters];
        memset(f, 0, sizeof *f);
        f->kind = LOOM_ITER_FUSE;
        f->var = f->parent = f->tensor = -1;
        f->a = acc;
        f->b = b;
        f->first_child = f->fused_into = -1;
        S->iters[acc].fused_into = S->niters;
        S->iters[b].fused_into = S->niters;
        follow_location(sch, s0, acc, S->niters);
        follow_location(sch, s0, b, S->niters);
        acc = S->niters++;
    }
    memset(&S->loops[pos0], 0, sizeof(loom_loop));
    S->loops[pos0].iter = acc;
    memmove(&S->loops[pos0 + 1], &S->loops[pos0 + n], sizeof(loom_loop) * (size_t)(S->nloops - pos0 - n));
    S->nloops -= n - 1;
    int rv = loom__new_rv(sch, LOOM_RV_LOOP, s0, acc, 0, err);
    if (rv < 0)
        return LOOM_ERR_INVALID;
    *out_loop_rv = rv;
    loom_inst inst = {0};
    for (int k = 0; k < n; k++)
        inst.inputs[inst.ninputs++] = loop_rvs[k];
    inst.outputs[inst.noutputs++] = rv;
    loom__record(sch, "Fuse", &inst);
    return LOOM_OK;
}

loom_status loom_reorder(loom_schedule *sch, const int *loop_rvs, int n, loom_error *err)
{
    if (n < 1 || n > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "reorder needs 1..%d loops, got %d", LOOM_MAX_INST_IO,
                              n);
    int s0 = -1, pos[LOOM_MAX_LOOPS];
    for (int k = 0; k < n; k++) {
        int s;
        loom_status st = loom__loop_pos(sch, loop_rvs[k], &s, &pos[k], err);
        if (st)
            return st;
        if (k == 0)
            s0 = s;
        else if (s != s0)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "reorder: loops of different blocks");
        for (int j = 0; j < k; j++)
            if (pos[j] == pos[k])
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "reorder: loop given twice");
    }
    loom_stage *S = &sch->stages[s0];
    int slots[LOOM_MAX_LOOPS];
    memcpy(slots, pos, sizeof(int) * (size_t)n);
    for (int a = 1; a < n; a++) /* insertion sort of the occupied positions */
        for (int b = a; b > 0 && slots[b - 1] > slots[b]; b--) {
            int t = slots[b];
            slots[b] = slots[b - 1];
            slots[b - 1] = t;
        }
    loom_loop moved[LOOM_MAX_LOOPS];
    for (int k = 0; k < n; k++)
        moved[k] = S->loops[pos[k]];
    for (int k = 0; k < n; k++)
        S->loops[slots[k]] = moved[k];
    loom_inst inst = {0};
    for (int k = 0; k < n && k < LOOM_MAX_INST_IO; k++)
        inst.inputs[inst.ninputs++] = loop_rvs[k];
    loom__record(sch, "Reorder", &inst);
    return LOOM_OK;
}

loom_status loom_pos_split(loom_schedule *sch, int loop_rv, const char *tensor, int64_t factor, int factor_rv,
                           int *out_loop_rvs, loom_error *err)
{
    int s, pos;
    loom_status st = loom__loop_pos(sch, loop_rv, &s, &pos, err);
    if (st)
        return st;
    loom_stage *S = &sch->stages[s];
    int iter = S->loops[pos].iter;
    char nm[64];
    loom_iter_name(sch, s, iter, nm, sizeof nm);
    if (factor_rv >= 0) {
        st = loom__expr_value(sch, factor_rv, &factor, err);
        if (st)
            return st;
    }
    if (factor < 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "pos split of loop %s: factor %lld must be >= 1", nm,
                              (long long)factor);
    const loom_program *prog = sch->prog;
    int t = loom_program_find_tensor(prog, tensor);
    if (t < 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "pos split of loop %s: no tensor %s", nm, tensor);
    if (S->iters[iter].kind != LOOM_ITER_VAR)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "pos-on-split-loop: loop %s is already split; PosSplit applies to the loop of an index",
                              nm);
    int v = S->iters[iter].var;
    /* the tensor must be read (or written) with a compressed level at v */
    const loom_stmt *stm = &prog->stmts[s];
    int found = 0;
    int roots[LOOM_MAX_EXPRS / 4], nroots = 0;
    for (int e = 0; e < prog->nexprs; e++) {
        const loom_expr *E = &prog->exprs[e];
        if (E->kind != LOOM_EXPR_ACCESS || E->nidx == 0 || prog->vars[E->idx[0]].stmt != s)
            continue;
        if (!access_has_compressed_at(prog, E->tensor, E->idx, v))
            continue;
        int root = prog->tensors[E->tensor].pattern_of >= 0 ? prog->tensors[E->tensor].pattern_of : E->tensor;
        int seen = 0;
        for (int k = 0; k < nroots; k++)
            seen |= roots[k] == root;
        if (!seen && nroots < (int)(sizeof roots / sizeof *roots))
            roots[nroots++] = root;
        if (E->tensor == t)
            found = 1;
    }
    if (access_has_compressed_at(prog, stm->lhs, stm->lhs_idx, v) && stm->lhs == t)
        found = 1;
    if (!found)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "pos-on-dense-level: loop %s does not iterate a compressed level of %s; PosSplit needs "
                              "the loop of an index that %s stores compressed",
                              nm, tensor, tensor);
    if (nroots > 1)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "pos-split-coiteration: loop %s merges %d sparse patterns; the position space of one "
                              "of them does not cover the others",
                              nm, nroots);
    if (S->niters + 2 > LOOM_MAX_ITERS || S->nloops + 1 > LOOM_MAX_LOOPS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many loops in block %s",
                              prog->tensors[stm->lhs].name);
    int first = S->niters;
    for (int k = 0; k < 2; k++) {
        loom_iter *c = &S->iters[S->niters++];
        memset(c, 0, sizeof *c);
        c->kind = LOOM_ITER_POS;
        c->var = v;
        c->parent = iter;
        c->a = c->b = -1;
        c->tensor = t;
        c->index = k;
        c->nparts = 2;
        c->factor = k == 0 ? 0 : factor;
        c->first_child = c->fused_into = -1;
    }
    S->iters[iter].first_child = first;
    follow_location(sch, s, iter, first + 1);
    memmove(&S->loops[pos + 2], &S->loops[pos + 1], sizeof(loom_loop) * (size_t)(S->nloops - pos - 1));
    memset(&S->loops[pos], 0, 2 * sizeof(loom_loop));
    S->loops[pos].iter = first;
    S->loops[pos + 1].iter = first + 1;
    S->nloops++;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = loop_rv;
    if (factor_rv >= 0)
        inst.inputs[inst.ninputs++] = factor_rv;
    else
        inst.attrs[inst.nattrs++] = factor;
    snprintf(inst.sattr, sizeof inst.sattr, "%s", tensor);
    for (int k = 0; k < 2; k++) {
        out_loop_rvs[k] = loom__new_rv(sch, LOOM_RV_LOOP, s, first + k, 0, err);
        if (out_loop_rvs[k] < 0)
            return LOOM_ERR_INVALID;
        inst.outputs[inst.noutputs++] = out_loop_rvs[k];
    }
    loom__record(sch, "PosSplit", &inst);
    return LOOM_OK;
}

static loom_status set_kind(loom_schedule *sch, int loop_rv, loom_loop_kind kind, int unroll, const char *name,
                            loom_error *err)
{
    int s, pos;
    loom_status st = loom__loop_pos(sch, loop_rv, &s, &pos, err);
    if (st)
        return st;
    sch->stages[s].loops[pos].kind = kind;
    sch->stages[s].loops[pos].unroll = unroll;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = loop_rv;
    if (kind == LOOM_LOOP_UNROLLED)
        inst.attrs[inst.nattrs++] = unroll;
    loom__record(sch, name, &inst);
    return LOOM_OK;
}

loom_status loom_parallel(loom_schedule *sch, int loop_rv, loom_error *err)
{
    return set_kind(sch, loop_rv, LOOM_LOOP_PARALLEL, 0, "Parallel", err);
}

loom_status loom_vectorize(loom_schedule *sch, int loop_rv, loom_error *err)
{
    return set_kind(sch, loop_rv, LOOM_LOOP_VECTORIZED, 0, "Vectorize", err);
}

loom_status loom_unroll(loom_schedule *sch, int loop_rv, int factor, loom_error *err)
{
    if (factor < 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "unroll factor %d must be >= 1", factor);
    return set_kind(sch, loop_rv, LOOM_LOOP_UNROLLED, factor, "Unroll", err);
}

static loom_status put_ann(loom_annotation *ann, int *nann, const char *key, int64_t value, loom_error *err)
{
    for (int k = 0; k < *nann; k++)
        if (strcmp(ann[k].key, key) == 0) {
            ann[k].value = value;
            return LOOM_OK;
        }
    if (*nann >= LOOM_MAX_ANN)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "too many annotations (max %d)", LOOM_MAX_ANN);
    snprintf(ann[*nann].key, sizeof ann[*nann].key, "%s", key);
    ann[*nann].value = value;
    (*nann)++;
    return LOOM_OK;
}

loom_status loom_annotate(loom_schedule *sch, int rv, const char *key, int value_rv, int64_t value, loom_error *err)
{
    if (!key || !*key || strlen(key) >= sizeof(((loom_annotation *)0)->key))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "annotation key must be 1..%zu characters",
                              sizeof(((loom_annotation *)0)->key) - 1);
    loom_status st;
    if (value_rv >= 0 && (st = loom__expr_value(sch, value_rv, &value, err)))
        return st;
    if (rv < 0 || rv >= sch->nrvs)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "random variable %d does not exist", rv);
    if (sch->rvs[rv].kind == LOOM_RV_BLOCK) {
        loom_stage *S = &sch->stages[sch->rvs[rv].stage];
        st = put_ann(S->ann, &S->nann, key, value, err);
    } else {
        int s, pos;
        if ((st = loom__loop_pos(sch, rv, &s, &pos, err)))
            return st;
        loom_loop *L = &sch->stages[s].loops[pos];
        st = put_ann(L->ann, &L->nann, key, value, err);
    }
    if (st)
        return st;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = rv;
    if (value_rv >= 0)
        inst.inputs[inst.ninputs++] = value_rv;
    else
        inst.attrs[inst.nattrs++] = value;
    snprintf(inst.sattr, sizeof inst.sattr, "%s", key);
    loom__record(sch, "Annotate", &inst);
    return LOOM_OK;
}

/* ---- placement ------------------------------------------------------- */

static loom_status inline_check(const loom_schedule *sch, int s, loom_error *err)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[s];
    const char *name = prog->tensors[st->lhs].name;
    if (st->nvars > st->nfree)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "inline-reduction: block %s reduces over %s; only a block without a reduction can be "
                              "inlined",
                              name, prog->vars[st->vars[st->nfree]].name);
    if (prog->tensors[st->lhs].role != LOOM_TENSOR_TEMP)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "inline-output: %s is an output of the workload and must be stored", name);
    int consumers = 0;
    for (int o = 0; o < sch->nstages; o++)
        if (o != s && expr_reads(prog, prog->stmts[o].rhs, st->lhs))
            consumers++;
    if (!consumers)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0, "inline-no-consumer: no block reads %s", name);
    return LOOM_OK;
}

int loom_can_inline(const loom_schedule *sch, int stage)
{
    return sch->stages[stage].compute_at != LOOM_AT_INLINE && inline_check(sch, stage, NULL) == LOOM_OK;
}

loom_status loom_compute_inline(loom_schedule *sch, int block_rv, loom_error *err)
{
    int s;
    loom_status st = loom__block_stage(sch, block_rv, &s, err);
    if (st)
        return st;
    if ((st = inline_check(sch, s, err)))
        return st;
    sch->stages[s].compute_at = LOOM_AT_INLINE;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    loom__record(sch, "ComputeInline", &inst);
    return LOOM_OK;
}

/* The access of tensor t in expression e (first found), or -1; *count
 * receives how many accesses with different indices there are. */
static int find_access(const loom_program *prog, int e, int t, int *first, int *differ)
{
    const loom_expr *E = &prog->exprs[e];
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (E->tensor == t) {
            if (*first < 0)
                *first = e;
            else if (memcmp(prog->exprs[*first].idx, E->idx, sizeof E->idx) != 0)
                *differ = 1;
        }
        return *first;
    }
    if (E->kind != LOOM_EXPR_CONST)
        for (int k = 0; k < E->nargs; k++)
            find_access(prog, E->args[k], t, first, differ);
    return *first;
}

static int placed_at(const loom_schedule *sch, int r, int c)
{
    /* r is c itself, or placed (transitively) at a loop of c */
    for (int guard = 0; guard <= sch->nstages; guard++) {
        if (r == c)
            return 1;
        if (sch->stages[r].compute_at != LOOM_AT_LOOP)
            return 0;
        r = sch->stages[r].at_stage;
    }
    return 0;
}

int loom_compute_at_map(const loom_schedule *sch, int p, int c, int *map)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *ps = &prog->stmts[p];
    int order = prog->tensors[ps->lhs].order;
    for (int d = 0; d < order; d++)
        map[d] = -1;
    /* readers of p, latest first, so a chain maps through its nearest reader */
    for (int r = sch->nstages - 1; r > p; r--) {
        if (!placed_at(sch, r, c) && r != c)
            continue;
        int first = -1, differ = 0;
        find_access(prog, prog->stmts[r].rhs, ps->lhs, &first, &differ);
        if (first < 0)
            continue;
        if (differ)
            return -1;
        const loom_expr *E = &prog->exprs[first];
        int rmap[LOOM_MAX_ORDER];
        if (r == c) {
            for (int d = 0; d < order; d++)
                rmap[d] = E->idx[d];
        } else {
            /* r's own variables map to c's through r's placement */
            int inner[LOOM_MAX_ORDER];
            if (loom_compute_at_map(sch, r, c, inner) < 0)
                return -1;
            const loom_stmt *rs = &prog->stmts[r];
            for (int d = 0; d < order; d++) {
                rmap[d] = -1;
                for (int k = 0; k < prog->tensors[rs->lhs].order; k++)
                    if (rs->lhs_idx[k] == E->idx[d])
                        rmap[d] = inner[k];
            }
        }
        for (int d = 0; d < order; d++)
            if (map[d] < 0)
                map[d] = rmap[d];
    }
    return 0;
}

loom_status loom_compute_at(loom_schedule *sch, int block_rv, int loop_rv, loom_error *err)
{
    int p, c, pos;
    loom_status st = loom__block_stage(sch, block_rv, &p, err);
    if (!st)
        st = loom__loop_pos(sch, loop_rv, &c, &pos, err);
    if (st)
        return st;
    const loom_program *prog = sch->prog;
    if (c <= p)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "compute-at-order: block %s can only be computed inside a block that comes after it; "
                              "block %s does not",
                              prog->tensors[prog->stmts[p].lhs].name, prog->tensors[prog->stmts[c].lhs].name);
    int map[LOOM_MAX_ORDER];
    loom_stage save = sch->stages[p];
    sch->stages[p].compute_at = LOOM_AT_LOOP;
    sch->stages[p].at_stage = c;
    sch->stages[p].at_iter = sch->stages[c].loops[pos].iter;
    if (loom_compute_at_map(sch, p, c, map) < 0) {
        sch->stages[p] = save;
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "compute-at-reads: %s is read with different indices at that location; loom computes "
                              "one slice per location",
                              prog->tensors[prog->stmts[p].lhs].name);
    }
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    inst.inputs[inst.ninputs++] = loop_rv;
    loom__record(sch, "ComputeAt", &inst);
    return LOOM_OK;
}
