/* loom: the reference evaluator -- a direct interpreter of the Program in
 * double precision (see reference.h).
 *
 * Deliberately independent of lowering and code generation: it reads only
 * the Program and the data set's arrays.  It implements the algebra
 * (docs/schedule-language.md "Sparse semantics", dsl/ir/domain.h): a statement
 * iterates the domain of its right-hand side, a union of terms, each the
 * intersection of some sparse accesses (`A*B + C`: {A, B} and {C}).  For
 * each term in turn:
 *
 *   1. the term's sparse accesses are walked one after the other, in source
 *      order, level by level through their storage; a level whose index
 *      variable is not bound yet is iterated (binding it), a level whose
 *      variable is already bound (by an earlier access or an earlier level
 *      of the same access) is looked up (binary search in crd for
 *      compressed levels, a bounds test for range levels);
 *   2. the statement's variables still unbound are looped densely over
 *      their extents;
 *   3. at each full point the accesses outside the term are looked up, a
 *      point an earlier term holds is skipped (it was counted there), and
 *      the right-hand side is evaluated in double with unstored entries as
 *      zeros (and functions only where their sparse arguments are stored),
 *      then reduced into the left-hand side element (sum for `=` and `+=`,
 *      max for `max=`).
 *
 * Threads: each term's outermost loop is split between threads by the
 * value of its variable (thread t takes the values v with v % n == t) when
 * that variable indexes the left-hand side, so every left-hand-side
 * element is written by one thread only and receives its contributions in
 * the sequential order: the result is bit-identical for any thread count.
 * An outermost loop over a reduction variable is run by thread 0 alone;
 * terms run one after the other.
 *
 * Range levels (causal, band) use bounds computed here from the format (not
 * the data set's helper) and the data set's materialised pos array for the
 * position of the first stored entry of a row; the two are checked against
 * each other before evaluation.
 */
#include "reference.h"

#include "../../dsl/ir/domain.h"
#include "../../dsl/ir/op.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- how the reference reads one tensor ------------------------------ */

typedef struct ref_view {
    int sparse;                  /* values at stored positions only */
    int order;
    int64_t dims[LOOM_MAX_ORDER];
    loom_format fmt;             /* layout of the storage (the pattern source's) */
    const int32_t *pos[LOOM_MAX_ORDER];
    const int32_t *crd[LOOM_MAX_ORDER];
    int64_t nvals;               /* stored positions (sparse) or prod(dims) */
    int nbatch;                  /* leading dense batch dimensions (loom_tensor.nbatch) */
    int64_t pat_nvals;           /* stored positions of one batch copy of the pattern */
} ref_view;

/* Stored columns [lo, hi) of a range level whose parent coordinate is i. */
static void ref_bounds(const loom_format *f, int64_t i, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b = n;
    if (f->kind == LOOM_FORMAT_CAUSAL) {
        a = 0;
        b = i + 1 < n ? i + 1 : n;
    } else if (f->kind == LOOM_FORMAT_BAND) {
        int64_t w = f->band_width;
        a = i - w > 0 ? i - w : 0;
        b = i + w + 1 < n ? i + w + 1 : n;
    }
    if (b < a)
        b = a;
    *lo = a;
    *hi = b;
}

/* Follow pattern_of to the tensor that owns the pos/crd arrays. */
static int ref_pattern_source(const loom_program *prog, int t)
{
    int s = t;
    for (int steps = 0; steps <= LOOM_MAX_TENSORS; steps++) {
        int p = prog->tensors[s].pattern_of;
        if (p < 0 || p == s || p >= prog->ntensors)
            return s;
        s = p;
    }
    return -1; /* a cycle */
}

/* Fill *v for tensor t and check the storage arrays are well formed (so
 * that enumeration never reads out of bounds). */
static loom_status ref_view_make(const loom_dataset *ds, int t, ref_view *v, loom_error *err)
{
    const loom_program *prog = ds->prog;
    const loom_tensor *T = &prog->tensors[t];
    memset(v, 0, sizeof *v);
    v->order = T->order;
    for (int d = 0; d < T->order; d++) {
        v->dims[d] = loom_program_dim(prog, t, d);
        if (v->dims[d] < 0)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "reference: tensor %s has a negative dimension %d",
                                  T->name, d);
    }
    v->sparse = T->pattern_of >= 0 || loom_tensor_is_sparse(prog, t);
    if (!v->sparse) {
        int64_t n = 1;
        for (int d = 0; d < T->order; d++)
            n *= v->dims[d];
        v->nvals = n;
        return LOOM_OK;
    }

    int src = T->pattern_of >= 0 ? ref_pattern_source(prog, t) : t;
    if (src < 0)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "reference: tensor %s: pattern_of forms a cycle", T->name);
    const loom_tensor *S = &prog->tensors[src];
    /* T may keep S's pattern below nb dense batch dimensions (issue 14);
       its format then has S's levels on its own dimension numbers */
    int nb = T->nbatch - S->nbatch;
    v->fmt = nb > 0 ? T->format : S->format;
    v->nbatch = nb > 0 ? nb : 0;
    if (nb < 0 || S->order + nb != T->order || S->format.nlevels + nb != T->order ||
        v->fmt.nlevels != S->format.nlevels)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, NULL, 0, 0,
                              "reference: tensor %s takes its pattern from %s of another order",
                              T->name, S->name);
    for (int d = 0; d < S->order; d++)
        if (loom_program_dim(prog, src, d) != v->dims[d + nb])
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "reference: tensor %s dimension %d differs from its pattern %s",
                                  T->name, d, S->name);

    /* Walk the levels, checking every pos/crd entry used. */
    const loom_tensor_abi *a = &ds->t[src];
    int64_t npos = 1; /* positions at the parent level */
    for (int l = 0; l < v->fmt.nlevels; l++) {
        int m = v->fmt.mode[l];
        if (m < 0 || m >= T->order)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "reference: tensor %s: bad mode %d at level %d", S->name, m, l);
        int64_t n = v->dims[m];
        switch (v->fmt.level[l]) {
        case LOOM_LEVEL_DENSE:
            npos *= n;
            break;
        case LOOM_LEVEL_COMPRESSED:
        case LOOM_LEVEL_RANGE: {
            const int32_t *p = a->pos[l], *c = a->crd[l];
            if (!p || (!c && v->fmt.level[l] == LOOM_LEVEL_COMPRESSED))
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                      "reference: tensor %s: level %d has no pos/crd arrays",
                                      S->name, l);
            if (p[0] != 0)
                return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                      "reference: tensor %s: pos[%d][0] = %d, expected 0",
                                      S->name, l, (int)p[0]);
            for (int64_t q = 0; q < npos; q++) {
                if (p[q + 1] < p[q])
                    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                          "reference: tensor %s: pos[%d] decreases at %lld",
                                          S->name, l, (long long)q);
                if (v->fmt.level[l] == LOOM_LEVEL_COMPRESSED) {
                    for (int64_t k = p[q]; k < p[q + 1]; k++)
                        if (c[k] < 0 || c[k] >= n || (k > p[q] && c[k] <= c[k - 1]))
                            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                                  "reference: tensor %s: crd[%d][%lld] = %d out of "
                                                  "range or not ascending",
                                                  S->name, l, (long long)k, (int)c[k]);
                } else {
                    /* range levels sit under a dense level 0: the parent
                     * position is the parent coordinate */
                    if (l == 0 || v->fmt.level[l - 1] != LOOM_LEVEL_DENSE || l != 1)
                        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, NULL, 0, 0,
                                              "reference: tensor %s: range level %d not under "
                                              "a dense level 0", S->name, l);
                    int64_t lo, hi;
                    ref_bounds(&v->fmt, q, n, &lo, &hi);
                    if (p[q + 1] - p[q] != hi - lo)
                        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                              "reference: tensor %s: row %lld stores %d entries, "
                                              "its %s bounds [%lld, %lld) say %lld",
                                              S->name, (long long)q, (int)(p[q + 1] - p[q]),
                                              loom_format_name(v->fmt.kind), (long long)lo,
                                              (long long)hi, (long long)(hi - lo));
                }
            }
            npos = p[npos];
            break;
        }
        default:
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, NULL, 0, 0,
                                  "reference: tensor %s: unknown level kind %d", S->name,
                                  (int)v->fmt.level[l]);
        }
        v->pos[l] = a->pos[l];
        v->crd[l] = a->crd[l];
    }
    v->pat_nvals = npos;
    v->nvals = npos;
    for (int d = 0; d < v->nbatch; d++)
        v->nvals *= v->dims[d];
    return LOOM_OK;
}

/* ---- evaluating one statement ---------------------------------------- */

typedef struct ref_ctx {
    const loom_program *prog;
    loom_reference *ref;
    const ref_view *views;
    const loom_stmt *st;
    int nsp;                        /* sparse accesses of the rhs */
    int sp[LOOM_MAX_EXPRS];         /* their expression indices, in source order */
    int64_t bind[LOOM_MAX_VARS];
    unsigned char bound[LOOM_MAX_VARS];
    int64_t acc_pos[LOOM_MAX_EXPRS]; /* value position of each sparse access */
    double *lhs;
    int64_t *count;                 /* points per lhs element (reducing statements) */
    int64_t points;
    loom_status status;
    loom_error *err;
    /* the right-hand side's domain (dsl/ir/domain.h): a union of terms, each
     * enumerated in turn by the walk above; a point of term k is skipped
     * when an earlier term holds it too */
    loom_domain dom;
    int natoms;
    int atom_expr[LOOM_DOMAIN_MAX_ATOMS];
    int term;                       /* the term being enumerated */
    /* the thread split (file comment): this thread's index and the count;
     * par_armed until the term's outermost loop is reached */
    int par_tid, par_n, par_armed;
    unsigned char lhs_var[LOOM_MAX_VARS]; /* 1: the variable indexes the lhs */
} ref_ctx;

/* At a loop over var: whether this thread runs it at all (0: skip the whole
 * loop), and in *split whether its iterations are split by value. */
static int ref_par_enter(ref_ctx *c, int var, int *split)
{
    *split = 0;
    if (!c->par_armed)
        return 1;
    c->par_armed = 0;
    if (c->lhs_var[var]) {
        *split = c->par_n > 1;
        return 1;
    }
    return c->par_tid == 0;
}

/* Whether this thread takes the iteration binding value x. */
static int ref_par_mine(const ref_ctx *c, int split, int64_t x)
{
    return !split || x % c->par_n == c->par_tid;
}

/* Row-major position of a dense tensor's element at the bound coordinates. */
static int64_t ref_dense_pos(const ref_ctx *c, const ref_view *v, const int *idx)
{
    int64_t p = 0;
    for (int d = 0; d < v->order; d++)
        p = p * v->dims[d] + c->bind[idx[d]];
    return p;
}

/* Position of child coordinate x under parent position p at level l of a
 * sparse view (coords gives the coordinate of every dimension, needed for
 * the parent coordinate of range levels); -1 if not stored. */
static int64_t ref_child(const ref_view *v, int l, int64_t p, int64_t x, const int64_t *coords)
{
    int m = v->fmt.mode[l];
    int64_t n = v->dims[m];
    switch (v->fmt.level[l]) {
    case LOOM_LEVEL_DENSE:
        return (x >= 0 && x < n) ? p * n + x : -1;
    case LOOM_LEVEL_COMPRESSED: {
        int64_t lo = v->pos[l][p], hi = v->pos[l][p + 1];
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (v->crd[l][mid] < x)
                lo = mid + 1;
            else
                hi = mid;
        }
        return (lo < v->pos[l][p + 1] && v->crd[l][lo] == x) ? lo : -1;
    }
    case LOOM_LEVEL_RANGE: {
        int64_t a, b;
        ref_bounds(&v->fmt, coords[v->fmt.mode[l - 1]], n, &a, &b);
        return (x >= a && x < b) ? v->pos[l][p] + (x - a) : -1;
    }
    }
    return -1;
}

/* Offset of the batch copy of a sparse view's pattern at the bound
 * coordinates of its leading batch dimensions (0 without any). */
static int64_t ref_batch_offset(const ref_ctx *c, const ref_view *v, const int *idx)
{
    int64_t b = 0;
    for (int d = 0; d < v->nbatch; d++)
        b = b * v->dims[d] + c->bind[idx[d]];
    return b * v->pat_nvals;
}

/* Position of the element of sparse view v at the bound coordinates, or -1. */
static int64_t ref_sparse_pos(const ref_ctx *c, const ref_view *v, const int *idx)
{
    int64_t coords[LOOM_MAX_ORDER];
    for (int d = 0; d < v->order; d++)
        coords[d] = c->bind[idx[d]];
    int64_t p = 0;
    for (int l = 0; l < v->fmt.nlevels && p >= 0; l++)
        p = ref_child(v, l, p, coords[v->fmt.mode[l]], coords);
    return p >= 0 ? p + ref_batch_offset(c, v, idx) : p;
}

/* ---- the algebra at one point (docs "Sparse semantics") ---------------
 *
 * Every sparse access has its position in acc_pos (-1: not stored there).
 * A subexpression is *present* where its domain (dsl/ir/domain.h) holds the
 * point, and an absent one is a zero: an unstored entry is 0, a product
 * or quotient is present where both operands are, a sum or difference
 * where either is, and a function (exp, sqrt, relu, max, min) where every
 * sparse access of its arguments is stored (the mask rule). */

/* 1 if every sparse access under e is stored at the point. */
static int ref_all_stored(const ref_ctx *c, int e)
{
    const loom_expr *x = &c->prog->exprs[e];
    if (x->kind == LOOM_EXPR_ACCESS)
        return !c->views[x->tensor].sparse || c->acc_pos[e] >= 0;
    if (x->kind == LOOM_EXPR_CONST)
        return 1;
    for (int k = 0; k < x->nargs && k < 2; k++)
        if (!ref_all_stored(c, x->args[k]))
            return 0;
    return 1;
}

static double ref_eval(ref_ctx *c, int e, int *present);

/* An operator, by its row (dsl/ir/op.h): the value from the row's eval over
 * the operands in double, its presence from the row's sparsity rule (an
 * absent operand reads 0). */
static double ref_op(ref_ctx *c, int e, int *present)
{
    const loom_expr *x = &c->prog->exprs[e];
    const loom_op_row *r = loom_op_of_expr(x);
    if (!r)
        return NAN;
    if (r->sparsity == LOOM_OP_SPARSE_MASK && !ref_all_stored(c, e)) {
        *present = 0;
        return 0.0;
    }
    double v[2] = {0.0, 0.0};
    int p[2] = {1, 1};
    for (int k = 0; k < r->arity && k < x->nargs && k < 2; k++)
        v[k] = ref_eval(c, x->args[k], &p[k]);
    switch (r->sparsity) {
    case LOOM_OP_SPARSE_UNION: *present = p[0] || p[1]; break;
    case LOOM_OP_SPARSE_INTERSECT: *present = p[0] && p[1]; break;
    case LOOM_OP_SPARSE_KEEP: *present = p[0]; break;
    case LOOM_OP_SPARSE_MASK: *present = 1; break;
    }
    if (!*present && r->sparsity == LOOM_OP_SPARSE_INTERSECT)
        return 0.0;
    return r->eval(v);
}

static double ref_eval(ref_ctx *c, int e, int *present)
{
    const loom_expr *x = &c->prog->exprs[e];
    *present = 1;
    switch (x->kind) {
    case LOOM_EXPR_CONST:
        return x->value;
    case LOOM_EXPR_ACCESS: {
        const ref_view *v = &c->views[x->tensor];
        int64_t p = v->sparse ? c->acc_pos[e] : ref_dense_pos(c, v, x->idx);
        if (p < 0) {
            *present = 0;
            return 0.0;
        }
        if (v->sparse)
            p += ref_batch_offset(c, v, x->idx);
        const double *vals = c->ref->vals[x->tensor];
        return vals ? vals[p] : 1.0;
    }
    default:
        return ref_op(c, e, present);
    }
}

/* At a full point of term c->term: look up the accesses the walk did not
 * position (those outside the term) and say whether an earlier term holds
 * the point (then it was counted there). */
static int ref_seen_earlier(ref_ctx *c)
{
    uint64_t in = c->dom.term[c->term], stored = 0;
    for (int a = 0; a < c->natoms; a++) {
        int e = c->atom_expr[a];
        if (!(in >> a & 1)) {
            const loom_expr *x = &c->prog->exprs[e];
            c->acc_pos[e] = ref_sparse_pos(c, &c->views[x->tensor], x->idx);
        }
        if (c->acc_pos[e] >= 0)
            stored |= (uint64_t)1 << a;
    }
    for (int k = 0; k < c->term; k++)
        if ((c->dom.term[k] & stored) == c->dom.term[k])
            return 1;
    return 0;
}

/* One full point: evaluate and reduce into the lhs. */
static void ref_point(ref_ctx *c)
{
    const loom_stmt *st = c->st;
    const ref_view *lv = &c->views[st->lhs];
    if (c->par_armed && c->par_tid != 0) /* a term without loops: thread 0's */
        return;
    if (ref_seen_earlier(c))
        return;
    int64_t p = lv->sparse ? ref_sparse_pos(c, lv, st->lhs_idx) : ref_dense_pos(c, lv, st->lhs_idx);
    if (p < 0) {
        if (c->status == LOOM_OK)
            c->status = loom_error_set(c->err, LOOM_ERR_UNSUPPORTED, c->prog->path, st->line, 0,
                                       "reference: statement `%s` reaches a point not stored in "
                                       "the pattern of its sparse left-hand side %s",
                                       st->text, c->prog->tensors[st->lhs].name);
        return;
    }
    int present;
    double v = ref_eval(c, st->rhs, &present);
    if (!present) /* cannot happen: the domain's points are present */
        return;
    if (st->op == LOOM_ASSIGN_MAX) {
        if (v > c->lhs[p] || isnan(v))
            c->lhs[p] = v;
    } else {
        c->lhs[p] += v;
    }
    c->points++;
    if (c->count)
        c->count[p]++;
}

/* Step 2: loop the statement's variables not bound by sparse accesses. */
static void ref_dense_loops(ref_ctx *c, int k)
{
    if (c->status != LOOM_OK)
        return;
    while (k < c->st->nvars && c->bound[c->st->vars[k]])
        k++;
    if (k == c->st->nvars) {
        ref_point(c);
        return;
    }
    int v = c->st->vars[k], split;
    if (!ref_par_enter(c, v, &split))
        return;
    int64_t n = loom_program_var_extent(c->prog, v);
    c->bound[v] = 1;
    for (int64_t x = 0; x < n && c->status == LOOM_OK; x++) {
        if (!ref_par_mine(c, split, x))
            continue;
        c->bind[v] = x;
        ref_dense_loops(c, k + 1);
    }
    c->bound[v] = 0;
}

/* Step 1: walk level l of sparse access k below parent position p. */
static void ref_sparse_walk(ref_ctx *c, int k, int l, int64_t p)
{
    if (c->status != LOOM_OK)
        return;
    if (k == c->nsp) {
        ref_dense_loops(c, 0);
        return;
    }
    const loom_expr *x = &c->prog->exprs[c->sp[k]];
    const ref_view *v = &c->views[x->tensor];
    if (l == v->fmt.nlevels) {
        c->acc_pos[c->sp[k]] = p;
        ref_sparse_walk(c, k + 1, 0, 0);
        return;
    }
    int m = v->fmt.mode[l];
    int var = x->idx[m];
    int64_t coords[LOOM_MAX_ORDER] = {0};
    for (int d = 0; d < v->order; d++)
        if (c->bound[x->idx[d]])
            coords[d] = c->bind[x->idx[d]];

    if (c->bound[var]) { /* look the coordinate up */
        int64_t q = ref_child(v, l, p, c->bind[var], coords);
        if (q >= 0)
            ref_sparse_walk(c, k, l + 1, q);
        return;
    }
    int split;
    if (!ref_par_enter(c, var, &split))
        return;
    c->bound[var] = 1;
    switch (v->fmt.level[l]) {
    case LOOM_LEVEL_DENSE: {
        int64_t n = v->dims[m];
        for (int64_t i = 0; i < n; i++) {
            if (!ref_par_mine(c, split, i))
                continue;
            c->bind[var] = i;
            ref_sparse_walk(c, k, l + 1, p * n + i);
        }
        break;
    }
    case LOOM_LEVEL_COMPRESSED:
        for (int64_t q = v->pos[l][p]; q < v->pos[l][p + 1]; q++) {
            if (!ref_par_mine(c, split, v->crd[l][q]))
                continue;
            c->bind[var] = v->crd[l][q];
            ref_sparse_walk(c, k, l + 1, q);
        }
        break;
    case LOOM_LEVEL_RANGE: {
        int64_t a, b;
        ref_bounds(&v->fmt, coords[v->fmt.mode[l - 1]], v->dims[m], &a, &b);
        for (int64_t j = a; j < b; j++) {
            if (!ref_par_mine(c, split, j))
                continue;
            c->bind[var] = j;
            ref_sparse_walk(c, k, l + 1, v->pos[l][p] + (j - a));
        }
        break;
    }
    }
    c->bound[var] = 0;
}

static void ref_sparse_walk(ref_ctx *c, int k, int l, int64_t p);

/* One thread's share of term c->term (the thread split, file comment). */
static void *ref_term_thread(void *arg)
{
    ref_ctx *c = arg;
    c->nsp = 0;
    for (int a = 0; a < c->natoms; a++)
        if (c->dom.term[c->term] >> a & 1)
            c->sp[c->nsp++] = c->atom_expr[a];
    c->par_armed = 1;
    ref_sparse_walk(c, 0, 0, 0);
    return NULL;
}

/* Threads for the reference: $LOOM_REFERENCE_THREADS when set (>= 1), else
 * the online cores; at most 16. */
static int ref_threads(void)
{
    const char *env = getenv("LOOM_REFERENCE_THREADS");
    long n = env && atol(env) > 0 ? atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

/* Run term c->term on n threads (copies of c); the points add up into c,
 * and the first failing thread's error (by index) becomes c's. */
static void ref_run_term(ref_ctx *c, int n)
{
    ref_ctx *w = malloc((size_t)n * sizeof *w);
    loom_error *we = calloc((size_t)n, sizeof *we);
    pthread_t *th = malloc((size_t)n * sizeof *th);
    int *started = calloc((size_t)n, sizeof *started);
    if (!w || !we || !th || !started)
        n = 0;
    for (int t = 0; t < n; t++) {
        w[t] = *c;
        w[t].par_tid = t;
        w[t].par_n = n;
        w[t].points = 0;
        w[t].err = &we[t];
        started[t] = t > 0 && pthread_create(&th[t], NULL, ref_term_thread, &w[t]) == 0;
    }
    for (int t = 0; t < n; t++)
        if (t == 0 || !started[t]) { /* thread 0, and any that could not start, run here */
            ref_term_thread(&w[t]);
        }
    for (int t = 1; t < n; t++)
        if (started[t])
            pthread_join(th[t], NULL);
    for (int t = 0; t < n; t++) {
        c->points += w[t].points;
        if (w[t].status != LOOM_OK && c->status == LOOM_OK) {
            c->status = w[t].status;
            if (c->err)
                *c->err = we[t];
        }
    }
    if (n == 0 && c->status == LOOM_OK)
        c->status = loom_error_set(c->err, LOOM_ERR_NOMEM, NULL, 0, 0, "reference: out of memory");
    free(w);
    free(we);
    free(th);
    free(started);
}

/* Enumerate the statement's domain: each union term in turn, driving by the
 * storage of its sparse accesses (the walk above intersects them), each
 * term split between threads. */
static loom_status ref_walk_domain(ref_ctx *c)
{
    loom_status rc = loom_expr_domain(c->prog, c->st->rhs, &c->dom, c->atom_expr, &c->natoms, c->err);
    if (rc != LOOM_OK)
        return rc;
    for (int k = 0; k < c->st->nfree; k++) /* the free variables: the lhs's */
        if (c->st->vars[k] >= 0 && c->st->vars[k] < LOOM_MAX_VARS)
            c->lhs_var[c->st->vars[k]] = 1;
    int n = ref_threads();
    for (c->term = 0; c->term < c->dom.nterms && c->status == LOOM_OK; c->term++)
        ref_run_term(c, n);
    return c->status;
}

/* Check every access of statement s uses variables whose extents match the
 * dimensions they index (so positions stay in bounds). */
static loom_status ref_check_extents(const loom_program *prog, const ref_view *views, int s,
                                     loom_error *err)
{
    const loom_stmt *st = &prog->stmts[s];
    /* lhs */
    for (int d = 0; d < views[st->lhs].order; d++) {
        int v = st->lhs_idx[d];
        if (v < 0 || v >= prog->nvars || loom_program_var_extent(prog, v) != views[st->lhs].dims[d])
            return loom_error_set(err, LOOM_ERR_INVALID, prog->path, st->line, 0,
                                  "reference: statement `%s`: index %d of %s does not match "
                                  "its dimension", st->text, d, prog->tensors[st->lhs].name);
    }
    /* rhs: walk the tree with an explicit stack */
    int stack[LOOM_MAX_EXPRS], n = 0;
    stack[n++] = st->rhs;
    while (n > 0) {
        int e = stack[--n];
        if (e < 0 || e >= prog->nexprs)
            return loom_error_set(err, LOOM_ERR_INVALID, prog->path, st->line, 0,
                                  "reference: statement `%s`: bad expression index", st->text);
        const loom_expr *x = &prog->exprs[e];
        if (x->kind == LOOM_EXPR_ACCESS) {
            const ref_view *tv = &views[x->tensor];
            if (x->nidx != tv->order)
                return loom_error_set(err, LOOM_ERR_INVALID, prog->path, x->line, x->col,
                                      "reference: access to %s has %d indices, the tensor %d",
                                      prog->tensors[x->tensor].name, x->nidx, tv->order);
            for (int d = 0; d < x->nidx; d++) {
                int v = x->idx[d];
                if (v < 0 || v >= prog->nvars || loom_program_var_extent(prog, v) != tv->dims[d])
                    return loom_error_set(err, LOOM_ERR_INVALID, prog->path, x->line, x->col,
                                          "reference: index %d of %s does not match its "
                                          "dimension (%lld)", d, prog->tensors[x->tensor].name,
                                          (long long)tv->dims[d]);
            }
        } else if (x->kind != LOOM_EXPR_CONST) {
            for (int k = 0; k < x->nargs && k < 2; k++) {
                if (n >= LOOM_MAX_EXPRS)
                    return loom_error_set(err, LOOM_ERR_INVALID, prog->path, st->line, 0,
                                          "reference: expression too deep");
                stack[n++] = x->args[k];
            }
        }
    }
    return LOOM_OK;
}

static loom_status ref_run_stmt(const loom_dataset *ds, loom_reference *ref, const ref_view *views,
                                int s, loom_error *err)
{
    const loom_program *prog = ds->prog;
    const loom_stmt *st = &prog->stmts[s];
    loom_status rc = ref_check_extents(prog, views, s, err);
    if (rc != LOOM_OK)
        return rc;

    int t = st->lhs;
    int64_t n = views[t].nvals;
    free(ref->vals[t]);
    ref->vals[t] = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!ref->vals[t])
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "reference: out of memory");
    ref->nvals[t] = n;
    double ident = st->op == LOOM_ASSIGN_MAX ? -INFINITY : 0.0;
    for (int64_t i = 0; i < n; i++)
        ref->vals[t][i] = ident;

    int reduces = st->nvars > st->nfree;
    ref_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "reference: out of memory");
    c->prog = prog;
    c->ref = ref;
    c->views = views;
    c->st = st;
    c->lhs = ref->vals[t];
    c->err = err;
    c->status = LOOM_OK;
    if (reduces) {
        c->count = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
        if (!c->count) {
            free(c);
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "reference: out of memory");
        }
    }
    rc = ref_walk_domain(c);
    if (rc != LOOM_OK) {
        free(c->count);
        free(c);
        return rc;
    }

    rc = c->status;
    if (rc == LOOM_OK) {
        ref->stmt_points[s] = c->points;
        ref->stmt_flops[s] =
            (double)c->points * (double)(loom_expr_flops(prog, st->rhs) + (reduces ? 1 : 0));
        ref->flops += ref->stmt_flops[s];
        if (reduces)
            for (int64_t i = 0; i < n; i++)
                if (c->count[i] > ref->max_reduction_len)
                    ref->max_reduction_len = c->count[i];
    }
    free(c->count);
    free(c);
    return rc;
}

/* ---- public ------------------------------------------------------------ */

loom_status loom_reference_run(const loom_dataset *ds, loom_reference **out, loom_error *err)
{
    if (out)
        *out = NULL;
    if (!ds || !ds->prog || !out)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "reference: no data set or no result pointer");
    const loom_program *prog = ds->prog;
    if (prog->ntensors > LOOM_MAX_TENSORS || prog->nstmts > LOOM_MAX_STMTS)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "reference: program exceeds its table capacities");

    loom_reference *ref = calloc(1, sizeof *ref);
    ref_view *views = calloc(LOOM_MAX_TENSORS, sizeof *views);
    if (!ref || !views) {
        free(ref);
        free(views);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "reference: out of memory");
    }
    ref->ntensors = prog->ntensors;

    loom_status rc = LOOM_OK;
    for (int t = 0; t < prog->ntensors && rc == LOOM_OK; t++)
        rc = ref_view_make(ds, t, &views[t], err);

    /* Inputs: copy the float values into doubles. */
    for (int t = 0; t < prog->ntensors && rc == LOOM_OK; t++) {
        const loom_tensor *T = &prog->tensors[t];
        if (T->role != LOOM_TENSOR_INPUT)
            continue;
        ref->nvals[t] = views[t].nvals;
        const float *src = ds->t[t].vals;
        if (T->is_pattern || !src) {
            if (!views[t].sparse) {
                rc = loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                    "reference: dense input %s has no values", T->name);
                break;
            }
            ref->vals[t] = NULL; /* value 1 where stored */
            continue;
        }
        int64_t n = views[t].nvals;
        ref->vals[t] = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
        if (!ref->vals[t]) {
            rc = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "reference: out of memory");
            break;
        }
        for (int64_t i = 0; i < n; i++)
            ref->vals[t][i] = (double)src[i];
    }

    for (int s = 0; s < prog->nstmts && rc == LOOM_OK; s++)
        rc = ref_run_stmt(ds, ref, views, s, err);

    /* A computed tensor no statement assigns (the parser forbids it) stays
     * at the sum identity, so the checker still has something to compare. */
    for (int t = 0; t < prog->ntensors && rc == LOOM_OK; t++) {
        if (prog->tensors[t].role == LOOM_TENSOR_INPUT || ref->vals[t])
            continue;
        int64_t n = views[t].nvals;
        ref->vals[t] = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
        if (!ref->vals[t])
            rc = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "reference: out of memory");
        ref->nvals[t] = n;
    }

    free(views);
    if (rc != LOOM_OK) {
        loom_reference_free(ref);
        return rc;
    }
    *out = ref;
    return LOOM_OK;
}

void loom_reference_free(loom_reference *ref)
{
    if (!ref)
        return;
    for (int t = 0; t < LOOM_MAX_TENSORS; t++)
        free(ref->vals[t]);
    free(ref);
}

void loom_reference_check(const loom_dataset *ds, const loom_reference *ref, loom_check *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    out->correct = 1;
    out->worst_tensor = -1;
    out->worst_index = -1;
    int64_t L = ref ? ref->max_reduction_len : 0;
    double tol = 1e-5 + 4.0 * ldexp(1.0, -24) * (double)L;
    out->tol = tol < 1e-2 ? tol : 1e-2;
    if (!ds || !ds->prog || !ref) {
        out->correct = 0;
        out->max_rel_err = INFINITY;
        return;
    }
    const loom_program *prog = ds->prog;
    for (int t = 0; t < prog->ntensors && t < ref->ntensors; t++) {
        if (prog->tensors[t].role != LOOM_TENSOR_OUTPUT)
            continue;
        const float *got = ds->t[t].vals;
        const double *want = ref->vals[t];
        int64_t n = ref->nvals[t];
        if (!got || !want || ds->t[t].nnz != n) {
            /* nothing comparable: an output missing on either side */
            out->correct = 0;
            out->max_rel_err = INFINITY;
            out->worst_tensor = t;
            out->worst_index = 0;
            out->worst_got = got && n > 0 ? got[0] : NAN;
            out->worst_want = want && n > 0 ? want[0] : NAN;
            continue;
        }
        /* Near-zero elements are results of cancellation (a sum of mixed-sign
         * terms), whose fp32 error scales with the terms, not the result:
         * measure them against the output's root-mean-square instead. */
        double maxabs = 0.0, sumsq = 0.0;
        int64_t nfin = 0;
        for (int64_t i = 0; i < n; i++)
            if (isfinite(want[i])) {
                if (fabs(want[i]) > maxabs)
                    maxabs = fabs(want[i]);
                sumsq += want[i] * want[i];
                nfin++;
            }
        double rms = nfin ? sqrt(sumsq / (double)nfin) : 0.0;
        double floor_ = 1e-3 * maxabs;
        if (0.1 * rms > floor_)
            floor_ = 0.1 * rms;
        if (floor_ < 1e-30)
            floor_ = 1e-30;
        for (int64_t i = 0; i < n; i++) {
            double g = got[i], w = want[i], rel;
            if (isnan(g) || isnan(w))
                rel = INFINITY;
            else if (isinf(g) || isinf(w))
                rel = (g == w) ? 0.0 : INFINITY;
            else {
                double den = fabs(w) > floor_ ? fabs(w) : floor_;
                rel = fabs(g - w) / den;
            }
            if (!(rel <= out->tol))
                out->correct = 0;
            if (out->worst_tensor < 0 || rel > out->max_rel_err) {
                out->max_rel_err = rel;
                out->worst_tensor = t;
                out->worst_index = i;
                out->worst_got = g;
                out->worst_want = w;
            }
        }
    }
}
