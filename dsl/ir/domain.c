/* loom: sparse domains of expressions (see domain.h). */
#include "domain.h"

#include <string.h>

void loom_domain_universe(loom_domain *d)
{
    memset(d, 0, sizeof *d);
    d->nterms = 1;
}

void loom_domain_atom(loom_domain *d, int atom)
{
    memset(d, 0, sizeof *d);
    d->nterms = 1;
    d->term[0] = atom >= 0 && atom < LOOM_DOMAIN_MAX_ATOMS ? (uint64_t)1 << atom : 0;
    if (atom < 0 || atom >= LOOM_DOMAIN_MAX_ATOMS)
        d->overflow = 1;
}

/* Add term t unless an existing term absorbs it; drop the terms it absorbs. */
static void add_term(loom_domain *d, uint64_t t)
{
    for (int k = 0; k < d->nterms; k++)
        if ((d->term[k] & t) == d->term[k])
            return; /* term k's atoms are a subset of t's: t's set is inside k's */
    int n = 0;
    for (int k = 0; k < d->nterms; k++)
        if ((d->term[k] & t) != t)
            d->term[n++] = d->term[k];
    d->nterms = n;
    if (d->nterms >= LOOM_DOMAIN_MAX_TERMS) {
        d->overflow = 1;
        return;
    }
    d->term[d->nterms++] = t;
}

void loom_domain_union(loom_domain *d, const loom_domain *o)
{
    d->overflow |= o->overflow;
    for (int k = 0; k < o->nterms; k++)
        add_term(d, o->term[k]);
}

void loom_domain_intersect(loom_domain *d, const loom_domain *o)
{
    loom_domain r;
    memset(&r, 0, sizeof r);
    r.overflow = d->overflow | o->overflow;
    for (int a = 0; a < d->nterms; a++)
        for (int b = 0; b < o->nterms; b++)
            add_term(&r, d->term[a] | o->term[b]);
    *d = r;
}

uint64_t loom_domain_atoms(const loom_domain *d)
{
    uint64_t m = 0;
    for (int k = 0; k < d->nterms; k++)
        m |= d->term[k];
    return m;
}

int loom_domain_is_intersection(const loom_domain *d, uint64_t all)
{
    return d->nterms == 1 && d->term[0] == all && !d->overflow;
}

void loom_domain_apply(loom_op_sparsity rule, const loom_domain *args, int nargs, uint64_t mask, int mask_ovf,
                       loom_domain *out)
{
    int ovf = mask_ovf;
    for (int k = 0; k < nargs; k++)
        ovf |= args[k].overflow;
    if (rule == LOOM_OP_SPARSE_MASK || nargs < 1) {
        loom_domain_universe(out);
        out->term[0] = mask;
        out->overflow = ovf;
        return;
    }
    *out = args[0];
    for (int k = 1; k < nargs && rule != LOOM_OP_SPARSE_KEEP; k++) {
        if (rule == LOOM_OP_SPARSE_UNION)
            loom_domain_union(out, &args[k]);
        else
            loom_domain_intersect(out, &args[k]);
    }
}

typedef struct dom_walk {
    const loom_program *prog;
    int *access_expr;
    int natoms;
    int too_many;
} dom_walk;

static void expr_domain(dom_walk *w, int e, loom_domain *out)
{
    const loom_expr *x = &w->prog->exprs[e];
    switch (x->kind) {
    case LOOM_EXPR_ACCESS: {
        const loom_tensor *T = &w->prog->tensors[x->tensor];
        if (T->pattern_of < 0 && !loom_tensor_is_sparse(w->prog, x->tensor)) {
            loom_domain_universe(out);
            return;
        }
        if (w->natoms >= LOOM_DOMAIN_MAX_ATOMS) {
            w->too_many = 1;
            loom_domain_universe(out);
            return;
        }
        w->access_expr[w->natoms] = e;
        loom_domain_atom(out, w->natoms++);
        return;
    }
    case LOOM_EXPR_NEG:
    case LOOM_EXPR_ADD:
    case LOOM_EXPR_SUB:
    case LOOM_EXPR_MUL:
    case LOOM_EXPR_DIV:
    case LOOM_EXPR_CALL: {
        const loom_op_row *r = loom_op_of_expr(x);
        loom_domain a[2];
        int first = w->natoms, n = x->nargs < 2 ? x->nargs : 2;
        for (int k = 0; k < n; k++)
            expr_domain(w, x->args[k], &a[k]);
        /* the mask: every atom met in the arguments (not the union's absorbed terms) */
        uint64_t m = 0;
        for (int k = first; k < w->natoms && k < LOOM_DOMAIN_MAX_ATOMS; k++)
            m |= (uint64_t)1 << k;
        loom_domain_apply(r ? r->sparsity : LOOM_OP_SPARSE_MASK, a, n, m, 0, out);
        return;
    }
    case LOOM_EXPR_CONST:
    default:
        loom_domain_universe(out);
        return;
    }
}

loom_status loom_expr_domain(const loom_program *prog, int e, loom_domain *out,
                             int access_expr[LOOM_DOMAIN_MAX_ATOMS], int *natoms, loom_error *err)
{
    dom_walk w = {prog, access_expr, 0, 0};
    expr_domain(&w, e, out);
    *natoms = w.natoms;
    if (w.too_many || out->overflow) {
        const loom_expr *x = &prog->exprs[e];
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, prog->path, x->line, x->col,
                              "the expression's sparse domain is too complex: more than %d sparse "
                              "accesses or more than %d union terms; split the statement into "
                              "several through temporaries",
                              LOOM_DOMAIN_MAX_ATOMS, LOOM_DOMAIN_MAX_TERMS);
    }
    return LOOM_OK;
}

int loom__stmt_is_union(const loom_program *prog, int s)
{
    if (!prog || s < 0 || s >= prog->nstmts)
        return 0;
    loom_domain d;
    int acc[LOOM_DOMAIN_MAX_ATOMS], n = 0;
    if (loom_expr_domain(prog, prog->stmts[s].rhs, &d, acc, &n, NULL) != LOOM_OK)
        return 0;
    uint64_t all = n >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1);
    return !loom_domain_is_intersection(&d, all);
}

static int is_csr_access(const loom_program *prog, const loom_expr *x)
{
    return x->kind == LOOM_EXPR_ACCESS && x->nidx == 2 && prog->tensors[x->tensor].format.kind == LOOM_FORMAT_CSR;
}

loom_status loom__assembly_plan(const loom_program *prog, int s, loom_assembly *out, loom_error *err)
{
    const loom_stmt *st = &prog->stmts[s];
    memset(out, 0, sizeof *out);
    loom_domain d;
    int acc[LOOM_DOMAIN_MAX_ATOMS], n = 0;
    loom_status rc = loom_expr_domain(prog, st->rhs, &d, acc, &n, err);
    if (rc != LOOM_OK)
        return rc;
    int vi = st->lhs_idx[0], vj = st->lhs_idx[1];
    out->nterms = d.nterms;
    for (int t = 0; t < d.nterms; t++) {
        out->row[t] = out->left[t] = out->right[t] = -1;
        for (int a = 0; a < n && out->row[t] < 0; a++) {
            const loom_expr *x = &prog->exprs[acc[a]];
            if ((d.term[t] >> a & 1) && is_csr_access(prog, x) && x->idx[0] == vi && x->idx[1] == vj)
                out->row[t] = acc[a];
        }
        for (int a = 0; a < n && out->row[t] < 0 && out->left[t] < 0; a++) {
            const loom_expr *x = &prog->exprs[acc[a]];
            if (!(d.term[t] >> a & 1) || !is_csr_access(prog, x) || x->idx[0] != vi || x->idx[1] == vj)
                continue;
            for (int b = 0; b < n; b++) {
                const loom_expr *y = &prog->exprs[acc[b]];
                if ((d.term[t] >> b & 1) && is_csr_access(prog, y) && y->idx[0] == x->idx[1] && y->idx[1] == vj &&
                    prog->vars[x->idx[1]].reduced) {
                    out->left[t] = acc[a];
                    out->right[t] = acc[b];
                    break;
                }
            }
        }
        if (out->row[t] < 0 && out->left[t] < 0)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, prog->path, st->line, 0,
                                  "cannot assemble the pattern of %s: a term of the right side's domain is "
                                  "neither a csr operand indexed (%s, %s) nor a product A(%s, k) * B(k, %s) of "
                                  "csr operands%s; declare %s dense",
                                  prog->tensors[st->lhs].name, prog->vars[vi].name, prog->vars[vj].name,
                                  prog->vars[vi].name, prog->vars[vj].name,
                                  d.term[t] ? "" : " (it is dense: a dense operand or a constant in a sum)",
                                  prog->tensors[st->lhs].name);
    }
    return LOOM_OK;
}

int loom__lhs_assembled_at(const loom_program *prog, int s, int v)
{
    if (!prog || s < 0 || s >= prog->nstmts)
        return 0;
    const loom_stmt *st = &prog->stmts[s];
    const loom_tensor *T = &prog->tensors[st->lhs];
    if (T->role != LOOM_TENSOR_OUTPUT || T->pattern_of != st->lhs)
        return 0;
    for (int l = 0; l < T->format.nlevels; l++)
        if (T->format.level[l] == LOOM_LEVEL_COMPRESSED && st->lhs_idx[T->format.mode[l]] == v)
            return 1;
    return 0;
}
