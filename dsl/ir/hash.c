/* The workload hash (program.h): structural, over the parsed program.
 *
 * FNV-1a 64 (Fowler, Noll, Vo; offset basis 0xcbf29ce484222325, prime
 * 0x100000001b3) over a canonical byte stream: every integer as 8 bytes
 * little-endian, every string as its length then its bytes, so no two
 * different programs serialize alike. */
#include "op.h"
#include "program.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a (dsl/ir/util.h): bytes, and integers as 8 bytes little-endian */
#define mix_bytes loom_fnv1a
#define mix_int(h, v) loom_fnv1a_u64(h, (uint64_t)(int64_t)(v))

static uint64_t mix_str(uint64_t h, const char *s)
{
    size_t n = strnlen(s, LOOM_MAX_NAME);
    return mix_bytes(mix_int(h, (int64_t)n), s, n);
}

/* Position of variable v among statement st's variables (-1 if absent). */
static int var_pos(const loom_stmt *st, int v)
{
    for (int k = 0; k < st->nvars && k < LOOM_MAX_STMT_VARS; k++)
        if (st->vars[k] == v)
            return k;
    return -1;
}

static uint64_t mix_expr(uint64_t h, const loom_program *prog, const loom_stmt *st, int e, int depth)
{
    if (e < 0 || e >= prog->nexprs || e >= LOOM_MAX_EXPRS || depth > LOOM_MAX_EXPRS)
        return mix_int(h, -1);
    const loom_expr *x = &prog->exprs[e];
    h = mix_int(h, x->kind);
    switch (x->kind) {
    case LOOM_EXPR_CONST: {
        uint64_t bits;
        memcpy(&bits, &x->value, sizeof bits);
        return mix_int(h, (int64_t)bits);
    }
    case LOOM_EXPR_ACCESS:
        h = mix_int(mix_int(h, x->tensor), x->nidx);
        for (int d = 0; d < x->nidx && d < LOOM_MAX_ORDER; d++)
            h = mix_int(h, var_pos(st, x->idx[d]));
        return h;
    case LOOM_EXPR_CALL: {
        /* a registered row by its name, not its id (the order of
         * loom_op_register calls differs between processes) */
        const loom_op_row *r = (int)x->fn >= LOOM_OP_NBUILTIN ? loom_op_get((int)x->fn) : NULL;
        h = r ? mix_str(h, r->name) : mix_int(h, x->fn);
    }
        /* fall through */
    default:
        h = mix_int(h, x->nargs);
        for (int a = 0; a < x->nargs && a < 2; a++)
            h = mix_expr(h, prog, st, x->args[a], depth + 1);
        return h;
    }
}

uint64_t loom_program_hash(const loom_program *prog)
{
    uint64_t h = LOOM_FNV_OFFSET;
    if (!prog)
        return h;
    h = mix_str(h, "loom-program/1");
    h = mix_int(h, prog->nsizes);
    for (int i = 0; i < prog->nsizes && i < LOOM_MAX_SIZES; i++) {
        const loom_size *z = &prog->sizes[i];
        h = mix_int(mix_str(h, z->name), z->is_param);
        h = mix_int(h, z->is_param ? z->def_value : 0);
    }
    h = mix_int(h, prog->ntensors);
    for (int t = 0; t < prog->ntensors && t < LOOM_MAX_TENSORS; t++) {
        const loom_tensor *T = &prog->tensors[t];
        h = mix_int(mix_str(h, T->name), T->order);
        for (int d = 0; d < T->order && d < LOOM_MAX_ORDER; d++)
            h = mix_int(h, T->dim_size[d]);
        h = mix_int(mix_int(h, T->format.kind), T->format.band_width);
        h = mix_int(h, T->format.nlevels);
        for (int l = 0; l < T->format.nlevels && l < LOOM_MAX_ORDER; l++)
            h = mix_int(mix_int(h, T->format.level[l]), T->format.mode[l]);
        h = mix_int(mix_int(h, T->role), T->is_pattern);
        h = mix_int(mix_int(h, T->pattern_of), T->def_stmt);
        h = mix_int(h, T->nbatch);
    }
    h = mix_int(h, prog->nstmts);
    for (int s = 0; s < prog->nstmts && s < LOOM_MAX_STMTS; s++) {
        const loom_stmt *st = &prog->stmts[s];
        h = mix_int(mix_int(h, st->lhs), st->op);
        h = mix_int(mix_int(h, st->nvars), st->nfree);
        for (int k = 0; k < st->nvars && k < LOOM_MAX_STMT_VARS; k++) {
            int v = st->vars[k];
            h = mix_int(h, v >= 0 && v < prog->nvars ? prog->vars[v].size : -1);
        }
        for (int k = 0; k < st->nfree && k < LOOM_MAX_ORDER; k++)
            h = mix_int(h, var_pos(st, st->lhs_idx[k]));
        h = mix_expr(h, prog, st, st->rhs, 0);
    }
    return h;
}

uint64_t loom_program_text_hash(const char *text)
{
    size_t n = 0;
    while (text && n < LOOM_MAX_SOURCE - 1 && text[n])
        n++;
    return loom_fnv1a(LOOM_FNV_OFFSET, text, n);
}
