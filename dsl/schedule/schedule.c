/* The Schedule state, getters and loop transformations (schedule.h). */
#include <stdio.h>
#include <string.h>

#include "schedule_internal.h"
#include "../ir/util.h"

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

void loom_inst_record(loom_schedule *sch, int kind, loom_inst *inst)
{
    if (!sch->recorder)
        return;
    inst->kind = kind;
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

/* ---- the stage's fields (schedule.h LOOM_STAGE_FIELDS) ---------------- */

#define FIELD_ROW(name, kind, init, identity, doc)                                                                   \
    {#name, offsetof(loom_stage, name), LOOM_FIELD_##kind, init, LOOM_FIELD_##identity, doc},
static const loom_stage_field FIELDS[] = {LOOM_STAGE_FIELDS(FIELD_ROW)};
#undef FIELD_ROW
#define NFIELDS ((int)(sizeof FIELDS / sizeof *FIELDS))
#define INT_FIELD(name, kind, init, identity, doc)                                                                   \
    _Static_assert(sizeof(((loom_stage *)0)->name) == sizeof(int), "stage field " #name " must be an int");
LOOM_STAGE_FIELDS(INT_FIELD)
#undef INT_FIELD

int loom_stage_field_count(void)
{
    return NFIELDS;
}

const loom_stage_field *loom_stage_field_at(int k)
{
    return k >= 0 && k < NFIELDS ? &FIELDS[k] : NULL;
}

/* ---- state ----------------------------------------------------------- */

loom_status loom_schedule_init(loom_schedule *sch, const loom_program *prog, void *rng, loom_error *err)
{
    for (int z = 0; z < prog->nsizes; z++)
        if (!prog->sizes[z].bound)
            return loom_error_set(err, LOOM_ERR_INVALID, prog->path, prog->sizes[z].line, 0,
                                  "size %s is not bound: bind the program's sizes before scheduling it",
                                  prog->sizes[z].name);
    /* Clear only what a schedule of this program uses -- the header, its
     * nstmts stages (whole, so every stage field starts at 0) and the RV
     * count -- not the whole ~100 KB struct: the stages past nstages and the
     * RV slots past nrvs are never read (replay inits a schedule per trace,
     * bench/bench_replay.c). */
    memset(sch, 0, offsetof(loom_schedule, stages));
    memset(sch->stages, 0, sizeof(loom_stage) * (size_t)prog->nstmts);
    sch->nrvs = 0;
    sch->prog = prog;
    sch->rng = rng;
    sch->nstages = prog->nstmts;
    for (int s = 0; s < prog->nstmts; s++) {
        loom_stage *S = &sch->stages[s];
        S->stmt = s;
        for (int f = 0; f < NFIELDS; f++)
            *loom_stage_field_ptr(S, &FIELDS[f]) = FIELDS[f].init;
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
    if (dst == src)
        return;
    /* the header and the nstages stages in use, then the nrvs RVs in use */
    memcpy(dst, src, offsetof(loom_schedule, stages) + sizeof(loom_stage) * (size_t)src->nstages);
    dst->nrvs = src->nrvs;
    memcpy(dst->rvs, src->rvs, sizeof(loom_rv) * (size_t)src->nrvs);
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

int loom__access_compressed_at(const loom_program *prog, int t, const int *idx, int v)
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
        return loom__access_compressed_at(prog, E->tensor, E->idx, v);
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    for (int k = 0; k < E->nargs; k++)
        if (expr_compressed_at(prog, E->args[k], v))
            return 1;
    return 0;
}

int loom_iter_reduces(const loom_schedule *sch, int s, int it)
{
    const loom_iter *I = &sch->stages[s].iters[it];
    switch (I->kind) {
    case LOOM_ITER_VAR:
    case LOOM_ITER_POS: return sch->prog->vars[I->var].reduced;
    case LOOM_ITER_SPLIT: return loom_iter_reduces(sch, s, I->parent);
    case LOOM_ITER_FUSE: return loom_iter_reduces(sch, s, I->a) || loom_iter_reduces(sch, s, I->b);
    }
    return 0;
}

int loom_var_is_compressed(const loom_schedule *sch, int stage, int v)
{
    const loom_program *prog = sch->prog;
    const loom_stmt *st = &prog->stmts[sch->stages[stage].stmt];
    return expr_compressed_at(prog, st->rhs, v) || loom__access_compressed_at(prog, st->lhs, st->lhs_idx, v);
}

static uint64_t mix(uint64_t h, int64_t v)
{
    return loom_fnv1a_u64(h, (uint64_t)v);
}

uint64_t loom_schedule_hash(const loom_schedule *sch)
{
    uint64_t h = LOOM_FNV_OFFSET;
    h = mix(h, sch->nstages);
    for (int s = 0; s < sch->nstages; s++) {
        const loom_stage *S = &sch->stages[s];
        for (int f = 0; f < NFIELDS; f++) {
            int x = loom_stage_field_get(S, &FIELDS[f]);
            if (FIELDS[f].identity == LOOM_FIELD_HASHED || (FIELDS[f].identity == LOOM_FIELD_HASHED_SET &&
                                                            x != FIELDS[f].init))
                h = mix(h, x);
        }
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
        for (int f = 0; f < NFIELDS; f++)
            if (FIELDS[f].identity != LOOM_FIELD_NOT_HASHED &&
                loom_stage_field_get(A, &FIELDS[f]) != loom_stage_field_get(B, &FIELDS[f]))
                return 0;
        if (A->niters != B->niters || A->nloops != B->nloops || A->nann != B->nann)
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
            loom_inst_record(sch, LOOM_INST_GET_BLOCK, &inst);
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
    loom_inst_record(sch, LOOM_INST_GET_LOOPS, &inst);
    return LOOM_OK;
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
        int rel = producers ? loom_expr_reads(prog, prog->stmts[s].rhs, prog->stmts[o].lhs)
                            : loom_expr_reads(prog, prog->stmts[o].rhs, prog->stmts[s].lhs);
        if (!rel)
            continue;
        int rv = loom__new_rv(sch, LOOM_RV_BLOCK, o, -1, 0, err);
        if (rv < 0)
            return LOOM_ERR_INVALID;
        block_rvs[(*n)++] = rv;
        if (inst.noutputs < LOOM_MAX_INST_IO)
            inst.outputs[inst.noutputs++] = rv;
    }
    loom_inst_record(sch, producers ? LOOM_INST_GET_PRODUCERS : LOOM_INST_GET_CONSUMERS, &inst);
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

