/* The register tiles of the tiled fused lowering (lower_fusion_tile.c,
 * lower_fusion_internal.h): the score block Sx = Qs x Kp's key block and,
 * in full blocks, a rolled block's single-index slice (O's row of D).  Both
 * are emitted as a vectorized loop (over the keys; over the slice) one
 * vector wide whose body keeps one scalar accumulator per row and vector
 * of a row group (a row's vectors are x and x + one vector's width) and
 * runs the reduction (d; the block's keys) as an inner loop: GCC
 * vectorizes the outer loop of `omp simd` around the inner one, so every
 * accumulator is one vector register for the whole reduction, the key or
 * V vectors are loaded once per group and the row operand is a broadcast
 * shared by the row's vectors -- the shape of a BLAS micro-kernel (Goto &
 * van de Geijn 2008), rows x vectors.  An accumulator array updated in
 * place inside the vector loop (the earlier form) costs a load and a store
 * per FMA.  Rows per group and vectors per row: loom__fu_regtile_shape;
 * the groups and chunks of the width are unrolled here. */
#include <stdio.h>

#include "lower_fusion_internal.h"

#define MIN_ROWS2 6 /* rows of every group of a two-vector tile (lower_fusion_internal.h) */

static int64_t tile_loads(int64_t rows, int64_t nvec, int64_t g, int64_t v)
{
    return (rows + g - 1) / g * nvec + rows * (nvec / v);
}

void loom__fu_regtile_shape(const loom_limits *l, int64_t rows, int64_t width, int64_t *rg, int64_t *nv, int64_t *u)
{
    int64_t regs = loom_limits_registers(l), lanes = l->vector_lanes > 0 ? l->vector_lanes : 1, ch;
    *u = lanes < width && width % lanes == 0 ? lanes : width;
    int64_t nvec = width / *u;
    /* one vector per row: the largest divisor of rows that fits */
    loom_register_tile(l, rows, *u, rg, &ch);
    *nv = 1;
    int64_t best = tile_loads(rows, nvec, *rg, 1), bacc = *rg;
    for (int64_t g = MIN_ROWS2; nvec % 2 == 0 && g <= rows && 2 * g + 3 <= regs; g++) {
        int64_t last = rows % g, loads = tile_loads(rows, nvec, g, 2);
        if ((last == 0 || last >= MIN_ROWS2) && (loads < best || (loads == best && 2 * g < bacc))) {
            best = loads;
            bacc = 2 * g;
            *rg = g;
            *nv = 2;
        }
    }
    if (*nv == 1) /* one loop over the whole width: GCC runs its vectors */
        *u = width;
}

#define app loom__fu_app
#define tr_hoist loom__fu_tr_hoist

static lir_expr *V(fctx *c, int v) { return loom_lir_var_ref(c->f, v); }
static lir_expr *I(fctx *c, int64_t x) { return loom_lir_int(c->f, x); }
static lir_expr *B(fctx *c, lir_binop op, lir_expr *a, lir_expr *b) { return loom_lir_bin(c->f, op, a, b); }
static lir_expr *RJ(fctx *c, const tile *T) /* r * BC + jj */
{
    return B(c, LIR_ADD, B(c, LIR_MUL, V(c, T->r), I(c, T->BC)), V(c, T->jj));
}


/* row * stride + off + var, in the one-vector tile's form when off is 0 */
static lir_expr *at(fctx *c, int64_t row, int64_t stride, int64_t off, int var)
{
    if (off == 0)
        return B(c, LIR_ADD, B(c, LIR_MUL, I(c, row), I(c, stride)), V(c, var));
    return B(c, LIR_ADD, I(c, row * stride + off), V(c, var));
}

/* off + var (var alone when off is 0) */
static lir_expr *plus(fctx *c, int64_t off, int var) { return off ? B(c, LIR_ADD, I(c, off), V(c, var)) : V(c, var); }

/* The comment naming a register tile's rows (and vectors). */
static void tile_msg(char *msg, size_t n, const char *what, int64_t g0, int64_t rg, int64_t nv, int64_t c0)
{
    if (nv == 1)
        snprintf(msg, n, "%s register tile: rows %lld-%lld, one vector each", what, (long long)g0, (long long)(g0 + rg - 1));
    else
        snprintf(msg, n, "%s register tile: rows %lld-%lld x %lld vectors from %lld", what, (long long)g0,
                 (long long)(g0 + rg - 1), (long long)nv, (long long)c0);
}


/* The fast path of rolled block k's slice (one slice index, O's row of D)
 * for rows g0 .. g0 + rg - 1 and slice entries c0 .. c0 + nv * u - 1: a
 * vectorized loop over one vector's width (jv) whose body loads the
 * group's rg x nv accumulators into scalar locals, runs the block's keys
 * (each row's and vector's term in a one-iteration loop over r that binds
 * the row's i, running max, scores and exponentials, and the slice index
 * c0 + v u + jv) and stores them back.  GCC vectorizes the slice loop
 * around the key loop (outer-loop vectorization of `omp simd`), so each
 * accumulator is one vector register for the whole block and a key's
 * slice of V is loaded once per group. */
static int o_group(fctx *c, const tile *T, lir_stmt *seq, int k, int64_t g0, int64_t c0)
{
    lir_func *f = c->f;
    rolled *R = &c->r[k];
    int acc[64];
    int64_t rg = T->o_rg < T->BR - g0 ? T->o_rg : T->BR - g0, nv = T->o_nv, u = T->o_u;
    if (rg * nv > 64)
        return loom__fu_unsupported(c, "register tile of %lld x %lld", (long long)rg, (long long)nv);
    char msg[128];
    tile_msg(msg, sizeof msg, "output", g0, rg, nv, c0);
    if (app(c, seq, loom_lir_comment(f, msg)))
        return c->status;
    int ev = R->vm[R->extra[0]], jv = nv == 1 ? ev : loom_lir_new_var(f, "ev", LIR_I64); /* one vector: ev runs */
    lir_stmt *Le = jv < 0 ? NULL : loom_lir_for(f, jv, I(c, 0), I(c, u), LIR_LOOP_VECTORIZED);
    if (app(c, seq, Le))
        return c->status ? c->status : loom__fu_nomem(c);
    for (int64_t q = 0; q < rg * nv; q++) {
        acc[q] = loom_lir_new_var(f, "oacc", LIR_F32);
        lir_expr *ix = at(c, g0 + q / nv, T->o_n, c0 + q % nv * u, jv);
        if (acc[q] < 0 || app(c, Le->body, loom_lir_let(f, acc[q], loom_lir_load(f, T->acc[k], ix))))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    lir_stmt *kl = loom_lir_for(f, T->jj, I(c, 0), I(c, T->BC), LIR_LOOP_SERIAL);
    if (app(c, Le->body, kl) || app(c, kl->body, loom_lir_let(f, c->xv[c->jvar], B(c, LIR_ADD, V(c, T->jb), V(c, T->jj)))))
        return c->status ? c->status : loom__fu_nomem(c);
    for (int64_t q = 0; q < rg * nv; q++) {
        lir_stmt *Lr = loom_lir_for(f, T->r, I(c, g0 + q / nv), I(c, g0 + q / nv + 1), LIR_LOOP_SERIAL);
        lir_stmt *b = Lr ? Lr->body : NULL;
        if (app(c, kl->body, Lr) || app(c, b, loom_lir_let(f, c->xv[T->ivar], B(c, LIR_ADD, V(c, T->i0), V(c, T->r)))) ||
            app(c, b, loom_lir_let(f, c->accm, loom_lir_load(f, T->rmax, V(c, T->r)))) ||
            (nv > 1 && app(c, b, loom_lir_let(f, ev, B(c, LIR_ADD, I(c, c0 + q % nv * u), V(c, jv))))))
            return c->status ? c->status : loom__fu_nomem(c);
        for (int d = 0; d < c->m; d++)
            if (c->pp_val[d] >= 0 && app(c, b, loom_lir_let(f, c->pp_val[d], loom_lir_load(f, T->sx, RJ(c, T)))))
                return c->status;
        int nh = c->nhoist;
        for (int h = 0; h < nh; h++)
            if (app(c, b, loom_lir_let(f, c->hoist_var[h], loom_lir_load(f, T->hblk[h], RJ(c, T)))))
                return c->status;
        /* the term again for this row: its hoisted values are found, not
         * recomputed (anything new would be computed in this row's loop) */
        c->cur = R;
        c->const_dims = 1;
        lir_expr *term = tr_hoist(c, c->prog->stmts[R->s].rhs, R->vm, b);
        c->const_dims = 0;
        c->cur = NULL;
        c->nhoist = nh;
        if (c->status || !term ||
            app(c, b, loom_lir_assign(f, acc[q], loom__fu_red_combine(c, c->prog->stmts[R->s].op, V(c, acc[q]), term))))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    for (int64_t q = 0; q < rg * nv; q++) {
        lir_expr *ix = at(c, g0 + q / nv, T->o_n, c0 + q % nv * u, jv);
        if (app(c, Le->body, loom_lir_store(f, T->acc[k], ix, V(c, acc[q]))))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    return 0;
}

/* One tile per group of o_rg rows and chunk of o_nv vectors, unrolled
 * here: GCC does not vectorize the tile inside a loop over groups (its
 * rows' one-iteration loops then have symbolic bounds; measured: not
 * vectorized). */
int loom__fu_o_tile(fctx *c, const tile *T, lir_stmt *seq, int k)
{
    for (int64_t g0 = 0; g0 < T->BR; g0 += T->o_rg)
        for (int64_t c0 = 0; c0 < T->o_n; c0 += T->o_nv * T->o_u)
            if (o_group(c, T, seq, k, g0, c0))
                return c->status;
    return 0;
}

/* The score block Sx = Qs x (the key block of Kp) as a register tile: per
 * group of sx_rg rows and chunk of sx_nv vectors of keys, a vectorized loop
 * over one vector's width whose body keeps rows x vectors x sx_np scalar
 * accumulators over d (sx_np interleaved partial sums when the tile alone
 * gives too few independent FMA chains) and stores each score once.  GCC
 * vectorizes the key loop around the d loop (outer-loop vectorization of
 * `omp simd`), so every accumulator is one vector register, a key vector
 * of Kp is loaded once per group and a Qs value is broadcast per row
 * (Goto & van de Geijn 2008's micro-kernel).  An array accumulated in
 * place instead costs a load and a store per FMA. */
static int sx_group(fctx *c, const tile *T, lir_stmt *seq, int kb, int64_t g0, int64_t c0)
{
    lir_func *f = c->f;
    int64_t rg = T->sx_rg < T->BR - g0 ? T->sx_rg : T->BR - g0, np = T->sx_np, nv = T->sx_nv, u = T->sx_u;
    int acc[64], kv[16];
    if (rg * nv * np > 64 || nv * np > 16)
        return loom__fu_unsupported(c, "register tile of %lld x %lld x %lld", (long long)rg, (long long)nv, (long long)np);
    char msg[128];
    tile_msg(msg, sizeof msg, "score", g0, rg, nv, c0);
    if (app(c, seq, loom_lir_comment(f, msg)))
        return c->status;
    lir_stmt *Lj = loom_lir_for(f, T->jj, I(c, 0), I(c, u), LIR_LOOP_VECTORIZED);
    int dd = loom_lir_new_var(f, "dd", LIR_I64);
    lir_stmt *Ld = loom_lir_for(f, dd, I(c, 0), I(c, T->ND / np), LIR_LOOP_SERIAL);
    if (dd < 0 || app(c, seq, Lj))
        return c->status ? c->status : loom__fu_nomem(c);
    for (int64_t q = 0; q < rg * nv * np; q++) {
        acc[q] = loom_lir_new_var(f, "sacc", LIR_F32);
        if (acc[q] < 0 || app(c, Lj->body, loom_lir_let(f, acc[q], loom_lir_float(f, 0.0))))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    if (app(c, Lj->body, Ld))
        return c->status ? c->status : loom__fu_nomem(c);
    for (int64_t p = 0; p < np; p++) {
        for (int64_t v = 0; v < nv; v++) {
            lir_expr *d = B(c, LIR_ADD, B(c, LIR_MUL, V(c, dd), I(c, np)), I(c, p));
            int x = kv[v * np + p] = loom_lir_new_var(f, "kv", LIR_F32);
            lir_expr *key = plus(c, c0 + v * u, T->jj);
            lir_expr *ld = loom_lir_load(f, T->pack, B(c, LIR_ADD, B(c, LIR_ADD, V(c, kb), B(c, LIR_MUL, d, I(c, T->BC))), key));
            if (x < 0 || app(c, Ld->body, loom_lir_let(f, x, ld)))
                return c->status ? c->status : loom__fu_nomem(c);
        }
        for (int64_t q = 0; q < rg; q++)
            for (int64_t v = 0; v < nv; v++) {
                lir_expr *qv = loom_lir_load(f, T->qs, B(c, LIR_ADD, B(c, LIR_MUL, I(c, g0 + q), I(c, T->ND)),
                                                         B(c, LIR_ADD, B(c, LIR_MUL, V(c, dd), I(c, np)), I(c, p))));
                int a = acc[(q * nv + v) * np + p];
                if (app(c, Ld->body, loom_lir_assign(f, a, B(c, LIR_ADD, V(c, a), B(c, LIR_MUL, qv, V(c, kv[v * np + p]))))))
                    return c->status ? c->status : loom__fu_nomem(c);
            }
    }
    for (int64_t q = 0; q < rg * nv; q++) {
        lir_expr *sum = V(c, acc[q * np]);
        for (int64_t p = 1; p < np; p++)
            sum = B(c, LIR_ADD, sum, V(c, acc[q * np + p]));
        lir_expr *ix = at(c, g0 + q / nv, T->BC, c0 + q % nv * u, T->jj);
        if (app(c, Lj->body, loom_lir_store(f, T->sx, ix, sum)))
            return c->status ? c->status : loom__fu_nomem(c);
    }
    return 0;
}

int loom__fu_sx_tile(fctx *c, const tile *T, lir_stmt *seq, int kb)
{
    for (int64_t g0 = 0; g0 < T->BR; g0 += T->sx_rg)
        for (int64_t c0 = 0; c0 < T->BC; c0 += T->sx_nv * T->sx_u)
            if (sx_group(c, T, seq, kb, g0, c0))
                return c->status;
    return 0;
}
