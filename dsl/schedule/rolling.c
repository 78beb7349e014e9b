/* Reduction fusion (schedule.h): the correction rule of a rolling update
 * and the RollingUpdate primitive (Neptune, Zhao et al. 2025, section 4.1;
 * FlashAttention's online softmax, Dao et al. 2022, algorithm 1).
 *
 * Neptune derives the repair h symbolically (sympy) and proves that it
 * commutes with the reducer; loom instead recognises the forms the language
 * produces, by structural recursion over the operand (the cases are listed
 * in schedule.h), which needs no algebra system and answers in microseconds
 * (a trace is replayed thousands of times during search). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "schedule_internal.h"

typedef struct fac {
    double coef;              /* c = exp(coef * (m_new - m_old)) */
    int ndiv;
    int div[LOOM_MAX_STMTS];  /* deferred divisor stages */
} fac;

typedef struct actx {
    const loom_schedule *sch;
    int m, r;                 /* source and rolled stage */
    int later;                /* 1 when the failure is rolling-update-reads-later */
    int depth;
    char why[320];
} actx;

static const char *tname(const actx *a, int t) { return a->sch->prog->tensors[t].name; }

static int def_of(const actx *a, int t) { return a->sch->prog->tensors[t].def_stmt; }

/* Stage d (after m) is rolled into m's loop (not r itself). */
static int rolled(const actx *a, int d)
{
    const loom_stage *D = &a->sch->stages[d];
    return d != a->r && D->rolling && D->at_stage == a->m;
}

__attribute__((format(printf, 3, 4))) static int fail(actx *a, int later, const char *fmt, ...)
{
    if (!a->why[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->why, sizeof a->why, fmt, ap);
        va_end(ap);
        a->later = later;
    }
    return -1;
}

/* Classify an access of tensor t: 0 independent of m, 1 the source m,
 * 2 an inlined block after m (expand it), 3 a rolled block, -1 refused. */
static int classify(actx *a, int t)
{
    int d = def_of(a, t);
    if (d < 0 || d < a->m)
        return 0;
    if (d == a->m)
        return 1;
    if (a->sch->stages[d].compute_at == LOOM_AT_INLINE)
        return 2;
    if (rolled(a, d))
        return 3;
    return fail(a, 1,
                "the operand reads %s, which is computed after the source %s and is neither inlined nor rolled "
                "into the same loop; inline it (ComputeInline) or roll it first",
                tname(a, t), tname(a, a->sch->prog->stmts[a->m].lhs));
}

static int const_value(const loom_program *prog, int e, double *v)
{
    const loom_expr *E = &prog->exprs[e];
    double x, y;
    switch (E->kind) {
    case LOOM_EXPR_CONST: *v = E->value; return 1;
    case LOOM_EXPR_NEG:
        if (!const_value(prog, E->args[0], &x))
            return 0;
        *v = -x;
        return 1;
    case LOOM_EXPR_ADD:
    case LOOM_EXPR_SUB:
    case LOOM_EXPR_MUL:
    case LOOM_EXPR_DIV:
        if (!const_value(prog, E->args[0], &x) || !const_value(prog, E->args[1], &y))
            return 0;
        *v = E->kind == LOOM_EXPR_ADD ? x + y : E->kind == LOOM_EXPR_SUB ? x - y : E->kind == LOOM_EXPR_MUL ? x * y : x / y;
        return 1;
    default: return 0;
    }
}

/* e = e0 + (*coef) * m with e0 independent of m; -1 when not linear. */
static int linear(actx *a, int e, double *coef)
{
    const loom_program *prog = a->sch->prog;
    const loom_expr *E = &prog->exprs[e];
    double x = 0, y = 0, k;
    if (++a->depth > 64)
        return fail(a, 0, "the operand nests too deeply%s%s", "", "");
    int rc = 0;
    switch (E->kind) {
    case LOOM_EXPR_CONST: *coef = 0; break;
    case LOOM_EXPR_ACCESS:
        switch (classify(a, E->tensor)) {
        case 0: *coef = 0; break;
        case 1: *coef = 1; break;
        case 2: rc = linear(a, prog->stmts[def_of(a, E->tensor)].rhs, coef); break;
        case 3:
            rc = fail(a, 0, "exp(...) of rolled reduction %s has no multiplicative correction%s", tname(a, E->tensor),
                      "");
            break;
        default: rc = -1;
        }
        break;
    case LOOM_EXPR_NEG:
        rc = linear(a, E->args[0], &x);
        *coef = -x;
        break;
    case LOOM_EXPR_ADD:
    case LOOM_EXPR_SUB:
        rc = linear(a, E->args[0], &x) || linear(a, E->args[1], &y) ? -1 : 0;
        *coef = E->kind == LOOM_EXPR_ADD ? x + y : x - y;
        break;
    case LOOM_EXPR_MUL:
    case LOOM_EXPR_DIV:
        if (linear(a, E->args[0], &x) || linear(a, E->args[1], &y)) {
            rc = -1;
            break;
        }
        if (x == 0 && y == 0)
            *coef = 0;
        else if (y == 0 && const_value(prog, E->args[1], &k) && k != 0)
            *coef = E->kind == LOOM_EXPR_MUL ? x * k : x / k;
        else if (E->kind == LOOM_EXPR_MUL && x == 0 && const_value(prog, E->args[0], &k))
            *coef = y * k;
        else
            rc = fail(a, 0,
                      "inside exp(...), the running maximum %s is %s a non-constant term: the exponent is not "
                      "linear in it",
                      tname(a, prog->stmts[a->m].lhs), E->kind == LOOM_EXPR_MUL ? "multiplied by" : "divided by or into");
        break;
    case LOOM_EXPR_CALL:
        for (int k2 = 0; k2 < E->nargs && !rc; k2++) {
            rc = linear(a, E->args[k2], &x);
            if (!rc && x != 0)
                rc = fail(a, 0, "inside exp(...), a function other than +, -, * by a constant is applied to %s%s",
                          tname(a, prog->stmts[a->m].lhs), "");
        }
        *coef = 0;
        break;
    }
    a->depth--;
    return rc;
}

static int factor(actx *a, int e, fac *out)
{
    const loom_program *prog = a->sch->prog;
    const loom_expr *E = &prog->exprs[e];
    const char *mname = tname(a, prog->stmts[a->m].lhs);
    memset(out, 0, sizeof *out);
    if (++a->depth > 64)
        return fail(a, 0, "the operand nests too deeply%s%s", "", "");
    int rc = 0;
    fac x, y;
    switch (E->kind) {
    case LOOM_EXPR_CONST: break;
    case LOOM_EXPR_ACCESS:
        switch (classify(a, E->tensor)) {
        case 0: break;
        case 1:
            rc = fail(a, 0,
                      "the running maximum %s appears in the operand outside exp(. - %s) (e.g. as a factor): no "
                      "positive c(m_old, m_new) turns f(x, m_old) into f(x, m_new) (m_new / m_old may be "
                      "negative or 0)",
                      mname, mname);
            break;
        case 2: rc = factor(a, prog->stmts[def_of(a, E->tensor)].rhs, out); break;
        case 3:
            rc = fail(a, 0, "the operand multiplies by rolled reduction %s; only a division by it can be deferred%s",
                      tname(a, E->tensor), "");
            break;
        default: rc = -1;
        }
        break;
    case LOOM_EXPR_NEG: rc = factor(a, E->args[0], out); break;
    case LOOM_EXPR_MUL:
        if ((rc = factor(a, E->args[0], &x)) || (rc = factor(a, E->args[1], &y)))
            break;
        *out = x;
        out->coef += y.coef;
        for (int k = 0; k < y.ndiv && out->ndiv < LOOM_MAX_STMTS; k++)
            out->div[out->ndiv++] = y.div[k];
        break;
    case LOOM_EXPR_DIV: {
        if ((rc = factor(a, E->args[0], out)))
            break;
        const loom_expr *D = &prog->exprs[E->args[1]];
        if (D->kind == LOOM_EXPR_ACCESS && classify(a, D->tensor) == 3) {
            int d = def_of(a, D->tensor);
            if (prog->stmts[d].op == LOOM_ASSIGN_MAX)
                rc = fail(a, 0, "the operand divides by %s, a max= reduction: only a division by a += reduction is "
                                "deferred%s",
                          tname(a, D->tensor), "");
            else if (out->ndiv < LOOM_MAX_STMTS)
                out->div[out->ndiv++] = d;
            break;
        }
        if ((rc = factor(a, E->args[1], &y)))
            break;
        if (y.ndiv)
            rc = fail(a, 0, "the operand divides by a term containing a deferred division%s%s", "", "");
        out->coef -= y.coef;
        break;
    }
    case LOOM_EXPR_ADD:
    case LOOM_EXPR_SUB:
        if ((rc = factor(a, E->args[0], &x)) || (rc = factor(a, E->args[1], &y)))
            break;
        if (x.coef != y.coef || x.ndiv != y.ndiv || memcmp(x.div, y.div, sizeof(int) * (size_t)x.ndiv)) {
            rc = fail(a, 0,
                      "the operand adds terms with different corrections (one depends on %s differently from the "
                      "other): no single c(m_old, m_new) repairs their %s",
                      mname, E->kind == LOOM_EXPR_ADD ? "sum" : "difference");
            break;
        }
        *out = x;
        break;
    case LOOM_EXPR_CALL:
        if (E->fn == LOOM_FN_EXP) {
            rc = linear(a, E->args[0], &out->coef);
            break;
        }
        for (int k = 0; k < E->nargs && !rc; k++) {
            if ((rc = factor(a, E->args[k], &x)))
                break;
            if (x.coef != 0 || x.ndiv)
                rc = fail(a, 0, "a function other than exp is applied to a term that depends on %s%s", mname, "");
        }
        break;
    }
    a->depth--;
    return rc;
}

loom_status loom_rolling_correction(const loom_schedule *sch, int r, int m, loom_rolling_rule *out,
                                    loom_error *err)
{
    actx a;
    memset(&a, 0, sizeof a);
    a.sch = sch;
    a.m = m;
    a.r = r;
    fac f;
    memset(out, 0, sizeof *out);
    out->source = m;
    if (factor(&a, sch->prog->stmts[r].rhs, &f))
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0, "%s: block %s: %s",
                              a.later ? "rolling-update-reads-later" : "rolling-update-no-correction",
                              sch->prog->tensors[sch->prog->stmts[r].lhs].name, a.why);
    out->coef = f.coef;
    out->ndiv = f.ndiv;
    memcpy(out->div, f.div, sizeof f.div);
    return LOOM_OK;
}

/* 1 if expression e reads tensor t, looking through the blocks it reads. */
static int reads_through(const loom_schedule *sch, int e, int t, int depth)
{
    const loom_program *prog = sch->prog;
    const loom_expr *E = &prog->exprs[e];
    if (depth > 64)
        return 0;
    if (E->kind == LOOM_EXPR_ACCESS) {
        if (E->tensor == t)
            return 1;
        int d = prog->tensors[E->tensor].def_stmt; /* any block: inlining is checked later */
        return d >= 0 && reads_through(sch, prog->stmts[d].rhs, t, depth + 1);
    }
    if (E->kind == LOOM_EXPR_CONST)
        return 0;
    for (int k = 0; k < E->nargs; k++)
        if (reads_through(sch, E->args[k], t, depth + 1))
            return 1;
    return 0;
}

static void record(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv)
{
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    inst.inputs[inst.ninputs++] = loop_rv;
    if (enable_rv >= 0)
        inst.inputs[inst.ninputs++] = enable_rv;
    loom_inst_record(sch, LOOM_INST_ROLLING_UPDATE, &inst);
}

loom_status loom_rolling_update(loom_schedule *sch, int block_rv, int loop_rv, int enable_rv, loom_error *err)
{
    int r, m, pos;
    int64_t enable = 1;
    loom_status st = loom__block_stage(sch, block_rv, &r, err);
    if (!st)
        st = loom__loop_pos(sch, loop_rv, &m, &pos, err);
    if (!st && enable_rv >= 0)
        st = loom__expr_value(sch, enable_rv, &enable, err);
    if (st)
        return st;
    if (!enable) {
        record(sch, block_rv, loop_rv, enable_rv);
        return LOOM_OK;
    }
    const loom_program *prog = sch->prog;
    const loom_stmt *ms = &prog->stmts[m], *rs = &prog->stmts[r];
    const char *mn = prog->tensors[ms->lhs].name, *rn = prog->tensors[rs->lhs].name;
    loom_stage *M = &sch->stages[m], *R = &sch->stages[r];
    char nm[64];
    loom_iter_name(sch, m, M->loops[pos].iter, nm, sizeof nm);
    if (m >= r || ms->op != LOOM_ASSIGN_MAX || ms->nvars - ms->nfree != 1 || M->compute_at != LOOM_AT_ROOT)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "rolling-update-source: the loop's block %s must come before %s, be computed at the "
                              "root, and be a max= reduction over one index",
                              mn, rn);
    if (rs->nvars - rs->nfree != 1 || !reads_through(sch, rs->rhs, ms->lhs, 0))
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "rolling-update-source: block %s must reduce over one index and read %s (directly or "
                              "through inlined blocks)",
                              rn, mn);
    const loom_iter *I = &M->iters[M->loops[pos].iter];
    if (pos != M->nloops - 1 || I->kind != LOOM_ITER_VAR || I->var != ms->vars[ms->nfree] ||
        M->rfactor_iter >= 0 || M->cache_iter >= 0)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "rolling-update-loop: loop %s of block %s must be its innermost loop, iterate its "
                              "reduced index unsplit, and the block must have no rfactor or workspace",
                              nm, mn);
    if (R->compute_at != LOOM_AT_ROOT || R->rolling || R->rfactor_iter >= 0 || R->cache_iter >= 0)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "rolling-update-source: block %s must be at the root, without rfactor or workspace, "
                              "and not rolled already",
                              rn);
    loom_stage save = *R;
    R->rolling = 1;
    R->compute_at = LOOM_AT_LOOP;
    R->at_stage = m;
    R->at_iter = M->loops[pos].iter;
    R->at_after = 1;
    loom_rolling_rule rule;
    if ((st = loom_rolling_correction(sch, r, m, &rule, err))) {
        *R = save;
        return st;
    }
    record(sch, block_rv, loop_rv, enable_rv);
    return LOOM_OK;
}

loom_status loom_split_k_update(loom_schedule *sch, int block_rv, int loop_rv, int factor_rv, int64_t factor,
                                loom_error *err)
{
    int m, s2, pos;
    loom_status st = loom__block_stage(sch, block_rv, &m, err);
    if (!st)
        st = loom__loop_pos(sch, loop_rv, &s2, &pos, err);
    if (!st && factor_rv >= 0)
        st = loom__expr_value(sch, factor_rv, &factor, err);
    if (st)
        return st;
    const loom_program *prog = sch->prog;
    const char *mn = prog->tensors[prog->stmts[m].lhs].name;
    const loom_stmt *ms = &prog->stmts[m];
    const loom_stage *M = &sch->stages[m];
    const loom_iter *I = &M->iters[M->loops[pos].iter];
    if (s2 != m || ms->op != LOOM_ASSIGN_MAX || ms->nvars - ms->nfree != 1 || pos != M->nloops - 1 ||
        I->kind != LOOM_ITER_VAR || I->var != ms->vars[ms->nfree])
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "split-k-source: the loop must be the innermost, unsplit reduction loop of block %s, a "
                              "max= reduction over one index (the loop blocks are rolled into)",
                              mn);
    if (factor < 1 || factor > 256)
        return loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0,
                              "split-k-factor: %lld chunks; the factor must be 1..256", (long long)factor);
    sch->stages[m].splitk = factor > 1 ? (int)factor : 0;
    loom_inst inst = {0};
    inst.inputs[inst.ninputs++] = block_rv;
    inst.inputs[inst.ninputs++] = loop_rv;
    if (factor_rv >= 0)
        inst.inputs[inst.ninputs++] = factor_rv;
    else
        inst.attrs[inst.nattrs++] = factor;
    loom_inst_record(sch, LOOM_INST_SPLIT_K_UPDATE, &inst);
    return LOOM_OK;
}
