/* Tests of the .loom parser (dsl/front/parse.c) and the program queries
 * (dsl/ir/program.c).  Run from the repository root (paths "workloads/...").
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/ir/program.h"

static const char *const WORKLOADS[] = {
    "workloads/attention.loom", "workloads/attention_band.loom",
    "workloads/attention_causal.loom", "workloads/gcn.loom",
    "workloads/gemm.loom", "workloads/sddmm.loom",
    "workloads/sparse_attention.loom", "workloads/spmm.loom",
    "workloads/spmv.loom",
};
#define NWORKLOADS (sizeof WORKLOADS / sizeof WORKLOADS[0])

static loom_program *load(const char *path)
{
    loom_program *p = NULL;
    loom_error e;
    loom_error_clear(&e);
    loom_status st = loom_program_parse_file(path, &p, &e);
    cr_assert_eq(st, LOOM_OK, "%s: %s (line %d col %d)", path, e.msg, e.line, e.col);
    cr_assert_not_null(p);
    return p;
}

static loom_program *load_str(const char *text)
{
    loom_program *p = NULL;
    loom_error e;
    loom_error_clear(&e);
    loom_status st = loom_program_parse_string(text, "t.loom", &p, &e);
    cr_assert_eq(st, LOOM_OK, "%s (line %d col %d)", e.msg, e.line, e.col);
    return p;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int var_of(const loom_program *p, int stmt, const char *name)
{
    const loom_stmt *s = &p->stmts[stmt];
    for (int k = 0; k < s->nvars; k++)
        if (strcmp(p->vars[s->vars[k]].name, name) == 0)
            return s->vars[k];
    return -1;
}

/* ---- every workload parses, with the right structure ------------------ */

Test(parse, all_workloads_parse)
{
    for (size_t i = 0; i < NWORKLOADS; i++) {
        loom_program *p = load(WORKLOADS[i]);
        cr_assert_gt(p->nstmts, 0, "%s", WORKLOADS[i]);
        cr_assert_str_eq(p->path, WORKLOADS[i]);
        char *text = read_all(WORKLOADS[i]);
        cr_assert_str_eq(p->source, text, "source kept for %s", WORKLOADS[i]);
        free(text);
        loom_program_free(p);
    }
}

Test(parse, spmm_structure)
{
    loom_program *p = load("workloads/spmm.loom");
    cr_assert_eq(p->ntensors, 3);
    cr_assert_eq(p->nstmts, 1);
    int A = loom_program_find_tensor(p, "A"), B = loom_program_find_tensor(p, "B"),
        C = loom_program_find_tensor(p, "C");
    cr_assert_eq(A, 0);
    cr_assert_eq(B, 1);
    cr_assert_eq(C, 2);
    cr_assert_eq(loom_program_find_tensor(p, "Z"), -1);
    const loom_tensor *a = &p->tensors[A];
    cr_assert_eq(a->format.kind, LOOM_FORMAT_CSR);
    cr_assert_eq(a->format.nlevels, 2);
    cr_assert_eq(a->format.level[0], LOOM_LEVEL_DENSE);
    cr_assert_eq(a->format.level[1], LOOM_LEVEL_COMPRESSED);
    cr_assert_eq(a->format.mode[0], 0);
    cr_assert_eq(a->format.mode[1], 1);
    cr_assert_eq(a->role, LOOM_TENSOR_INPUT);
    cr_assert_eq(a->pattern_of, A);
    cr_assert_eq(a->def_stmt, -1);
    cr_assert_eq(a->line, 3);
    cr_assert(loom_tensor_is_sparse(p, A));
    cr_assert_not(loom_tensor_is_sparse(p, B));
    cr_assert_eq(p->tensors[B].pattern_of, -1);
    cr_assert_eq(p->tensors[C].role, LOOM_TENSOR_OUTPUT);
    cr_assert_eq(p->tensors[C].def_stmt, 0);
    /* sizes: F (param), N, K */
    int F = loom_program_find_size(p, "F"), N = loom_program_find_size(p, "N"),
        K = loom_program_find_size(p, "K");
    cr_assert(F >= 0 && N >= 0 && K >= 0);
    cr_assert_eq(p->sizes[F].is_param, 1);
    cr_assert_eq(p->sizes[F].bound, 1);
    cr_assert_eq(p->sizes[F].value, 64);
    cr_assert_eq(p->sizes[F].def_value, 64);
    cr_assert_str_eq(p->sizes[F].origin, "param default");
    cr_assert_eq(p->sizes[N].bound, 0);
    cr_assert_eq(a->dim_size[0], N);
    cr_assert_eq(a->dim_size[1], K);
    /* statement */
    const loom_stmt *s = &p->stmts[0];
    cr_assert_eq(s->lhs, C);
    cr_assert_eq(s->op, LOOM_ASSIGN_ADD);
    cr_assert_eq(s->nvars, 3);
    cr_assert_eq(s->nfree, 2);
    cr_assert_str_eq(p->vars[s->vars[0]].name, "i");
    cr_assert_str_eq(p->vars[s->vars[1]].name, "f");
    cr_assert_str_eq(p->vars[s->vars[2]].name, "k");
    cr_assert_eq(p->vars[s->vars[0]].reduced, 0);
    cr_assert_eq(p->vars[s->vars[1]].reduced, 0);
    cr_assert_eq(p->vars[s->vars[2]].reduced, 1);
    cr_assert_eq(p->vars[s->vars[2]].size, K);
    cr_assert_eq(p->vars[s->vars[1]].size, F);
    cr_assert_eq(p->vars[s->vars[0]].stmt, 0);
    cr_assert_eq(s->lhs_idx[0], s->vars[0]);
    cr_assert_eq(s->lhs_idx[1], s->vars[1]);
    cr_assert_eq(s->line, 6);
    cr_assert_str_eq(s->text, "C(i, f) += A(i, k) * B(k, f)");
    /* rhs = MUL(A(i,k), B(k,f)) */
    const loom_expr *r = &p->exprs[s->rhs];
    cr_assert_eq(r->kind, LOOM_EXPR_MUL);
    const loom_expr *l = &p->exprs[r->args[0]], *rr = &p->exprs[r->args[1]];
    cr_assert_eq(l->kind, LOOM_EXPR_ACCESS);
    cr_assert_eq(l->tensor, A);
    cr_assert_eq(l->nidx, 2);
    cr_assert_eq(l->idx[0], s->vars[0]);
    cr_assert_eq(l->idx[1], s->vars[2]);
    cr_assert_eq(rr->tensor, B);
    cr_assert_eq(l->line, 6);
    cr_assert_eq(l->col, 12);
    cr_assert_eq(loom_expr_flops(p, s->rhs), 1);
    loom_program_free(p);
}

Test(parse, attention_causal_inference)
{
    loom_program *p = load("workloads/attention_causal.loom");
    int W = loom_program_find_tensor(p, "W"), S = loom_program_find_tensor(p, "S"),
        m = loom_program_find_tensor(p, "m"), P = loom_program_find_tensor(p, "P"),
        l = loom_program_find_tensor(p, "l"), O = loom_program_find_tensor(p, "O");
    cr_assert(W >= 0 && S >= 0 && m >= 0 && P >= 0 && l >= 0 && O >= 0);
    cr_assert_eq(p->ntensors, 9);
    cr_assert_eq(p->nstmts, 5);
    cr_assert_eq(p->tensors[W].is_pattern, 1);
    cr_assert_eq(p->tensors[W].format.kind, LOOM_FORMAT_CAUSAL);
    cr_assert_eq(p->tensors[W].format.level[1], LOOM_LEVEL_RANGE);
    cr_assert_eq(p->tensors[W].pattern_of, W);
    /* S: inferred causal with W's pattern, a temporary with values */
    cr_assert_eq(p->tensors[S].role, LOOM_TENSOR_TEMP);
    cr_assert_eq(p->tensors[S].format.kind, LOOM_FORMAT_CAUSAL);
    cr_assert_eq(p->tensors[S].pattern_of, W);
    cr_assert_eq(p->tensors[S].is_pattern, 0);
    cr_assert_eq(p->tensors[S].format_inferred, 1);
    cr_assert_eq(p->tensors[S].def_stmt, 0);
    cr_assert_eq(p->tensors[S].line, 9);
    cr_assert_eq(p->tensors[S].order, 2);
    int N = loom_program_find_size(p, "N");
    cr_assert_eq(p->tensors[S].dim_size[0], N);
    cr_assert_eq(p->tensors[S].dim_size[1], N);
    /* m, l: reductions over the sparse dimension give dense vectors */
    cr_assert_eq(p->tensors[m].format.kind, LOOM_FORMAT_DENSE);
    cr_assert_eq(p->tensors[m].pattern_of, -1);
    cr_assert_eq(p->tensors[m].order, 1);
    cr_assert_eq(p->tensors[l].format.kind, LOOM_FORMAT_DENSE);
    /* P follows the chain S -> W */
    cr_assert_eq(p->tensors[P].format.kind, LOOM_FORMAT_CAUSAL);
    cr_assert_eq(p->tensors[P].pattern_of, W);
    cr_assert(loom_tensor_is_sparse(p, P));
    /* temporaries numbered in creation order, after the declarations */
    cr_assert_lt(O, S);
    cr_assert_lt(S, m);
    cr_assert_lt(m, P);
    cr_assert_lt(P, l);
    /* m(i) max= S(i, j): j reduced */
    cr_assert_eq(p->stmts[1].op, LOOM_ASSIGN_MAX);
    cr_assert_eq(p->stmts[1].nfree, 1);
    cr_assert_eq(p->stmts[1].nvars, 2);
    cr_assert_eq(p->vars[p->stmts[1].vars[1]].reduced, 1);
    /* the last statement: free i, e; reduced j */
    const loom_stmt *o = &p->stmts[4];
    cr_assert_eq(o->nfree, 2);
    cr_assert_eq(o->nvars, 3);
    cr_assert_str_eq(p->vars[o->vars[2]].name, "j");
    /* same letter in two statements is two variables */
    cr_assert_neq(var_of(p, 0, "i"), var_of(p, 1, "i"));
    cr_assert_eq(p->vars[var_of(p, 1, "i")].stmt, 1);
    /* flops: S = W*Q*K*0.125 -> 3, P = exp(S - m) -> 2 */
    cr_assert_eq(loom_expr_flops(p, p->stmts[0].rhs), 3);
    cr_assert_eq(loom_expr_flops(p, p->stmts[2].rhs), 2);
    cr_assert_eq(loom_expr_flops(p, p->stmts[4].rhs), 2);
    loom_program_free(p);
}

Test(parse, attention_dense_stays_dense)
{
    loom_program *p = load("workloads/attention.loom");
    for (int t = 0; t < p->ntensors; t++)
        cr_assert_not(loom_tensor_is_sparse(p, t), "%s", p->tensors[t].name);
    loom_program_free(p);
}

Test(parse, band_and_sparse_attention)
{
    loom_program *p = load("workloads/attention_band.loom");
    int W = loom_program_find_tensor(p, "W"), P = loom_program_find_tensor(p, "P");
    cr_assert_eq(p->tensors[W].format.kind, LOOM_FORMAT_BAND);
    cr_assert_eq(p->tensors[W].format.band_width, 32);
    cr_assert_eq(p->tensors[P].format.kind, LOOM_FORMAT_BAND);
    cr_assert_eq(p->tensors[P].format.band_width, 32);
    cr_assert_eq(p->tensors[P].pattern_of, W);
    loom_program_free(p);

    p = load("workloads/sparse_attention.loom");
    int A = loom_program_find_tensor(p, "A"), S = loom_program_find_tensor(p, "S");
    P = loom_program_find_tensor(p, "P");
    cr_assert_eq(p->tensors[S].format.kind, LOOM_FORMAT_CSR);
    cr_assert_eq(p->tensors[S].pattern_of, A);
    cr_assert_eq(p->tensors[P].pattern_of, A);
    cr_assert_eq(p->tensors[loom_program_find_tensor(p, "l")].pattern_of, -1);
    loom_program_free(p);
}

Test(parse, sddmm_output_pattern)
{
    loom_program *p = load("workloads/sddmm.loom");
    int M = loom_program_find_tensor(p, "M"), S = loom_program_find_tensor(p, "S");
    cr_assert_eq(p->tensors[S].role, LOOM_TENSOR_OUTPUT);
    cr_assert_eq(p->tensors[S].format.kind, LOOM_FORMAT_CSR);
    cr_assert_eq(p->tensors[S].pattern_of, M);
    cr_assert_eq(p->tensors[S].format_inferred, 0);
    cr_assert_eq(p->tensors[S].def_stmt, 0);
    loom_program_free(p);
}

Test(parse, gcn_temporary_dense)
{
    loom_program *p = load("workloads/gcn.loom");
    int T = loom_program_find_tensor(p, "T");
    cr_assert_eq(T, 4);
    cr_assert_eq(p->tensors[T].role, LOOM_TENSOR_TEMP);
    cr_assert_eq(p->tensors[T].format.kind, LOOM_FORMAT_DENSE);
    cr_assert_eq(p->tensors[T].pattern_of, -1);
    cr_assert_eq(p->tensors[T].def_stmt, 0);
    cr_assert_eq(p->tensors[T].dim_size[0], loom_program_find_size(p, "N"));
    cr_assert_eq(p->tensors[T].dim_size[1], loom_program_find_size(p, "F"));
    cr_assert_eq(p->tensors[loom_program_find_tensor(p, "X")].pattern_of, 1);
    loom_program_free(p);
}

Test(parse, gemm_and_spmv)
{
    loom_program *p = load("workloads/gemm.loom");
    cr_assert_eq(p->nsizes, 3);
    for (int s = 0; s < 3; s++)
        cr_assert_eq(p->sizes[s].value, 256);
    loom_program_free(p);
    p = load("workloads/spmv.loom");
    cr_assert_eq(p->tensors[1].order, 1);
    cr_assert_eq(p->stmts[0].op, LOOM_ASSIGN_SET);
    cr_assert_eq(p->stmts[0].nfree, 1);
    cr_assert_eq(p->stmts[0].nvars, 2);
    loom_program_free(p);
}

Test(parse, expressions_precedence_and_calls)
{
    loom_program *p = load_str("tensor A(N) dense\ntensor B(N) dense\ntensor y(N) dense output\n"
                               "y(i) = -exp(A(i)) / sqrt(B(i)) + max(A(i), 1e-3) - 2 * B(i) - .5\n");
    const loom_expr *x = p->exprs;
    const loom_expr *r = &x[p->stmts[0].rhs];
    /* ((( (-exp(A)) / sqrt(B) + max(A, 1e-3)) - 2 * B) - .5) */
    cr_assert_eq(r->kind, LOOM_EXPR_SUB);
    cr_assert_eq(x[r->args[1]].kind, LOOM_EXPR_CONST);
    cr_assert_float_eq(x[r->args[1]].value, 0.5, 1e-15);
    const loom_expr *l = &x[r->args[0]];
    cr_assert_eq(l->kind, LOOM_EXPR_SUB);
    cr_assert_eq(x[l->args[1]].kind, LOOM_EXPR_MUL);
    const loom_expr *add = &x[l->args[0]];
    cr_assert_eq(add->kind, LOOM_EXPR_ADD);
    const loom_expr *div = &x[add->args[0]];
    cr_assert_eq(div->kind, LOOM_EXPR_DIV);
    cr_assert_eq(x[div->args[0]].kind, LOOM_EXPR_NEG);
    cr_assert_eq(x[x[div->args[0]].args[0]].kind, LOOM_EXPR_CALL);
    cr_assert_eq(x[x[div->args[0]].args[0]].fn, LOOM_FN_EXP);
    const loom_expr *mx = &x[add->args[1]];
    cr_assert_eq(mx->kind, LOOM_EXPR_CALL);
    cr_assert_eq(mx->fn, LOOM_FN_MAX);
    cr_assert_eq(mx->nargs, 2);
    cr_assert_float_eq(x[mx->args[1]].value, 1e-3, 1e-18);
    /* neg, exp, /, sqrt, +, max, -, *, - */
    cr_assert_eq(loom_expr_flops(p, p->stmts[0].rhs), 9);
    loom_program_free(p);

    p = load_str("tensor A(N) dense\ntensor y(N) dense output\ny(i) = A(i) - (A(i) - A(i)) * relu(min(A(i), 2))\n");
    x = p->exprs;
    r = &x[p->stmts[0].rhs];
    cr_assert_eq(r->kind, LOOM_EXPR_SUB);
    cr_assert_eq(x[r->args[1]].kind, LOOM_EXPR_MUL);
    cr_assert_eq(x[x[r->args[1]].args[0]].kind, LOOM_EXPR_SUB);
    cr_assert_eq(x[x[r->args[1]].args[1]].fn, LOOM_FN_RELU);
    loom_program_free(p);
}

Test(parse, order_zero_and_max_with_space)
{
    loom_program *p = load_str("tensor A(N, M) dcsr\ntensor s() dense output\ns() max = A(i, j) # all\n");
    int s = loom_program_find_tensor(p, "s");
    cr_assert_eq(p->tensors[s].order, 0);
    cr_assert_eq(p->stmts[0].op, LOOM_ASSIGN_MAX);
    cr_assert_eq(p->stmts[0].nfree, 0);
    cr_assert_eq(p->stmts[0].nvars, 2);
    cr_assert_str_eq(p->stmts[0].text, "s() max = A(i, j)");
    int A = loom_program_find_tensor(p, "A");
    cr_assert_eq(p->tensors[A].format.level[0], LOOM_LEVEL_COMPRESSED);
    cr_assert_eq(p->tensors[A].format.level[1], LOOM_LEVEL_COMPRESSED);
    loom_program_free(p);
}

Test(parse, csc_inference_and_crlf)
{
    loom_program *p = load_str("tensor A(N, M) csc\r\ntensor B(N, M) dense\r\n"
                               "tensor C(N) dense output\r\nT(i, j) = A(i, j) * B(i, j)\r\n"
                               "U(j, i) = A(i, j)\r\nC(i) += T(i, j) + U(j, i)\r\n");
    int A = loom_program_find_tensor(p, "A"), T = loom_program_find_tensor(p, "T"),
        U = loom_program_find_tensor(p, "U");
    cr_assert_eq(p->tensors[A].format.mode[0], 1);
    cr_assert_eq(p->tensors[A].format.mode[1], 0);
    cr_assert_eq(p->tensors[T].format.kind, LOOM_FORMAT_CSC);
    cr_assert_eq(p->tensors[T].pattern_of, A);
    /* transposed indices: no pattern source, so dense */
    cr_assert_eq(p->tensors[U].format.kind, LOOM_FORMAT_DENSE);
    cr_assert_str_eq(p->stmts[0].text, "T(i, j) = A(i, j) * B(i, j)");
    loom_program_free(p);
}

/* ---- printing round-trips ---------------------------------------------- */

static void same_structure(const loom_program *a, const loom_program *b)
{
    cr_assert_eq(a->ntensors, b->ntensors);
    for (int t = 0; t < a->ntensors; t++) {
        const loom_tensor *x = &a->tensors[t], *y = &b->tensors[t];
        cr_assert_str_eq(x->name, y->name);
        cr_assert_eq(x->order, y->order);
        cr_assert_eq(memcmp(&x->format, &y->format, sizeof x->format), 0, "%s", x->name);
        cr_assert_eq(x->role, y->role);
        cr_assert_eq(x->is_pattern, y->is_pattern);
        cr_assert_eq(x->pattern_of, y->pattern_of);
        cr_assert_eq(x->format_inferred, y->format_inferred);
        cr_assert_eq(x->def_stmt, y->def_stmt);
        for (int d = 0; d < x->order; d++)
            cr_assert_str_eq(a->sizes[x->dim_size[d]].name, b->sizes[y->dim_size[d]].name);
    }
    cr_assert_eq(a->nsizes, b->nsizes);
    for (int s = 0; s < a->nsizes; s++) {
        int o = loom_program_find_size(b, a->sizes[s].name);
        cr_assert_geq(o, 0);
        cr_assert_eq(a->sizes[s].is_param, b->sizes[o].is_param);
        cr_assert_eq(a->sizes[s].def_value, b->sizes[o].def_value);
    }
    cr_assert_eq(a->nstmts, b->nstmts);
    cr_assert_eq(a->nvars, b->nvars);
    for (int v = 0; v < a->nvars; v++) {
        cr_assert_str_eq(a->vars[v].name, b->vars[v].name);
        cr_assert_eq(a->vars[v].stmt, b->vars[v].stmt);
        cr_assert_eq(a->vars[v].reduced, b->vars[v].reduced);
    }
    for (int s = 0; s < a->nstmts; s++) {
        const loom_stmt *x = &a->stmts[s], *y = &b->stmts[s];
        cr_assert_eq(x->lhs, y->lhs);
        cr_assert_eq(x->op, y->op);
        cr_assert_eq(x->rhs, y->rhs);
        cr_assert_eq(x->nvars, y->nvars);
        cr_assert_eq(x->nfree, y->nfree);
        for (int k = 0; k < x->nvars; k++)
            cr_assert_eq(x->vars[k], y->vars[k]);
    }
    cr_assert_eq(a->nexprs, b->nexprs);
    for (int e = 0; e < a->nexprs; e++) {
        const loom_expr *x = &a->exprs[e], *y = &b->exprs[e];
        cr_assert_eq(x->kind, y->kind, "expr %d", e);
        cr_assert_eq(x->value, y->value);
        cr_assert_eq(x->nargs, y->nargs);
        for (int k = 0; k < x->nargs; k++)
            cr_assert_eq(x->args[k], y->args[k]);
        if (x->kind == LOOM_EXPR_ACCESS) {
            cr_assert_eq(x->tensor, y->tensor);
            cr_assert_eq(x->nidx, y->nidx);
            for (int k = 0; k < x->nidx; k++)
                cr_assert_eq(x->idx[k], y->idx[k]);
        }
        if (x->kind == LOOM_EXPR_CALL)
            cr_assert_eq(x->fn, y->fn);
    }
}

static loom_program *reprint(const loom_program *p, char **textp)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    loom_program_print(p, f);
    fclose(f);
    loom_program *q = NULL;
    loom_error e;
    loom_error_clear(&e);
    loom_status st = loom_program_parse_string(text, "printed", &q, &e);
    cr_assert_eq(st, LOOM_OK, "reparse failed: %s (line %d col %d)\n%s", e.msg, e.line, e.col,
                 text);
    if (textp)
        *textp = text;
    else
        free(text);
    return q;
}

Test(parse, print_roundtrip)
{
    for (size_t i = 0; i < NWORKLOADS; i++) {
        loom_program *p = load(WORKLOADS[i]);
        char *text;
        loom_program *q = reprint(p, &text);
        same_structure(p, q);
        /* temporaries' inferred formats appear as comments */
        int S = loom_program_find_tensor(p, "S");
        if (S >= 0 && p->tensors[S].role == LOOM_TENSOR_TEMP &&
            p->tensors[S].format.kind == LOOM_FORMAT_CAUSAL)
            cr_assert_not_null(strstr(text, "# temporary S(N, N): causal, pattern of W"), "%s", text);
        free(text);
        loom_program_free(q);
        loom_program_free(p);
    }
    loom_program *p = load_str("tensor A(N) dense\ntensor y(N) dense output\n"
                               "y(i) = -(A(i) - A(i)) / (A(i) * (A(i) / 3)) - -A(i) + 0.1 - (1e-300 + 7)\n");
    loom_program *q = reprint(p, NULL);
    same_structure(p, q);
    loom_program_free(q);
    loom_program_free(p);
}

Test(parse, hash_is_structural)
{
    /* the workload hash is over the parsed program (tests/test_hash.c has
       the rest): a trailing space changes the text, not the program */
    const char *text = "tensor A(N) dense\ntensor y(N) dense output\ny(i) = A(i)\n";
    loom_program *p = load_str(text);
    loom_program *q = load_str("tensor A(N) dense\ntensor y(N) dense output\ny(i) = A(i) \n");
    cr_assert_eq(loom_program_hash(p), loom_program_hash(q));
    cr_assert_neq(loom_program_hash(p), loom_program_text_hash(text));
    loom_program *r = load_str("tensor A(N) dense\ntensor y(N) dense output\ny(i) = -A(i)\n");
    cr_assert_neq(loom_program_hash(p), loom_program_hash(r));
    loom_program_free(p);
    loom_program_free(q);
    loom_program_free(r);
}

Test(parse, names_and_formats)
{
    cr_assert_str_eq(loom_format_name(LOOM_FORMAT_DCSR), "dcsr");
    cr_assert_str_eq(loom_format_name(LOOM_FORMAT_BAND), "band");
    cr_assert_str_eq(loom_level_kind_name(LOOM_LEVEL_RANGE), "range");
    cr_assert_str_eq(loom_level_kind_name(LOOM_LEVEL_COMPRESSED), "compressed");
    loom_format f;
    loom_error e;
    cr_assert_eq(loom_format_make(LOOM_FORMAT_DENSE, 3, 0, &f, &e), LOOM_OK);
    cr_assert_eq(f.nlevels, 3);
    cr_assert_eq(f.mode[2], 2);
    cr_assert_eq(loom_format_make(LOOM_FORMAT_BAND, 2, 5, &f, &e), LOOM_OK);
    cr_assert_eq(f.band_width, 5);
    cr_assert_eq(f.level[1], LOOM_LEVEL_RANGE);
    cr_assert_eq(loom_format_make(LOOM_FORMAT_CSR, 3, 0, &f, &e), LOOM_ERR_SEMANTIC);
    cr_assert_not_null(strstr(e.msg, "2 dimensions"));
    cr_assert_eq(loom_format_make(LOOM_FORMAT_DENSE, 5, 0, &f, &e), LOOM_ERR_SEMANTIC);
    cr_assert_eq(loom_format_make(LOOM_FORMAT_BAND, 2, -1, &f, &e), LOOM_ERR_SEMANTIC);
}

/* ---- one test per error ------------------------------------------------ */

#define SPMM_HEAD "tensor A(N, K) csr\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"

static void expect_error(const char *text, loom_status status, int line, int col, const char *sub)
{
    loom_program *p = (loom_program *)0x1;
    loom_error e;
    loom_error_clear(&e);
    loom_status st = loom_program_parse_string(text, "bad.loom", &p, &e);
    cr_assert_eq(st, status, "status %s, want %s: %s", loom_status_name(st),
                 loom_status_name(status), e.msg);
    cr_assert_null(p, "no program on error");
    cr_assert_eq(e.status, status);
    cr_assert_str_eq(e.file, "bad.loom");
    cr_assert_eq(e.line, line, "line %d, want %d: %s", e.line, line, e.msg);
    cr_assert_eq(e.col, col, "col %d, want %d: %s", e.col, col, e.msg);
    cr_assert_not_null(strstr(e.msg, sub), "message '%s' lacks '%s'", e.msg, sub);
}

#define ERR_TEST(name, text, st, line, col, sub) \
    Test(parse_errors, name) { expect_error(text, st, line, col, sub); }

ERR_TEST(missing_paren, SPMM_HEAD "C(i, f += A(i, k) * B(k, f)\n", LOOM_ERR_PARSE, 4, 8,
         "')' after index list of C, found '+='")
ERR_TEST(unknown_format, "tensor A(N, K) csx\n", LOOM_ERR_PARSE, 1, 16,
         "unknown format 'csx' (expected dense, csr, dcsr, csc, causal, band(W))")
ERR_TEST(bad_band, "tensor A(N, K) band(x)\n", LOOM_ERR_PARSE, 1, 21, "band width")
ERR_TEST(format_order, "tensor x(N) csr\n", LOOM_ERR_SEMANTIC, 1, 13, "csr needs a tensor with 2 dimensions")
ERR_TEST(too_many_dims, "tensor x(A, B, C, D, E) dense\n", LOOM_ERR_SEMANTIC, 1, 22, "more than 4 dimensions")
ERR_TEST(unknown_tensor, SPMM_HEAD "C(i, f) += Z(i, k) * B(k, f)\n", LOOM_ERR_SEMANTIC, 4, 12,
         "unknown tensor 'Z': declare it with `tensor Z(...) FORMAT`")
ERR_TEST(temp_used_before_assigned,
         "tensor A(N, K) dense\ntensor C(N) dense output\nC(i) = T(i) * 2\nT(i) = A(i, k)\n",
         LOOM_ERR_SEMANTIC, 3, 8, "assigned later, in line 4")
ERR_TEST(declared_after_use,
         "tensor C(N) dense output\nC(i) = A(i)\ntensor A(N) dense\n",
         LOOM_ERR_SEMANTIC, 2, 8, "declared later, in line 3")
ERR_TEST(temp_reads_itself, "tensor A(N) dense\nT(i) = T(i) + A(i)\n", LOOM_ERR_SEMANTIC, 2, 8,
         "cannot read the tensor it defines")
ERR_TEST(output_read_before_assigned,
         "tensor A(N) dense\ntensor y(N) dense output\nT(i) = y(i) * A(i)\ny(i) = A(i)\n",
         LOOM_ERR_SEMANTIC, 3, 8, "read before it is assigned")
ERR_TEST(wrong_arity_rhs, SPMM_HEAD "C(i, f) += A(i) * B(k, f)\n", LOOM_ERR_SEMANTIC, 4, 12,
         "A has 2 dimensions but line 4 gives it 1 index")
ERR_TEST(wrong_arity_rhs_more, SPMM_HEAD "C(i, f) += A(i, k, f) * B(k, f)\n", LOOM_ERR_SEMANTIC, 4,
         12, "A has 2 dimensions but line 4 gives it more indices")
ERR_TEST(wrong_arity_lhs, SPMM_HEAD "C(i) += A(i, k) * B(k, f)\n", LOOM_ERR_SEMANTIC, 4, 1,
         "C has 2 dimensions but line 4 gives it 1 index")
ERR_TEST(tensor_declared_twice, "tensor A(N) dense\ntensor A(N) dense\n", LOOM_ERR_SEMANTIC, 2, 8,
         "tensor A is declared twice (first in line 1)")
ERR_TEST(param_declared_twice, "param N = 4\nparam N = 5\n", LOOM_ERR_SEMANTIC, 2, 7,
         "param N is declared twice (first in line 1)")
ERR_TEST(param_zero, "param N = 0\n", LOOM_ERR_SEMANTIC, 1, 11, "param N must be a positive integer")
ERR_TEST(param_float, "param N = 2.5\n", LOOM_ERR_SEMANTIC, 1, 11, "param N must be a positive integer")
ERR_TEST(param_negative, "param N = -3\n", LOOM_ERR_SEMANTIC, 1, 11, "positive integer")
ERR_TEST(param_not_number, "param N = M\n", LOOM_ERR_PARSE, 1, 11, "expected a positive integer value")
ERR_TEST(param_huge, "param N = 99999999999999999999999\n", LOOM_ERR_SEMANTIC, 1, 11, "too large")
ERR_TEST(assign_input, SPMM_HEAD "A(i, k) = B(k, i)\n", LOOM_ERR_SEMANTIC, 4, 1,
         "tensor A is an input (declared in line 1 without `output`)")
ERR_TEST(output_assigned_twice,
         SPMM_HEAD "C(i, f) += A(i, k) * B(k, f)\nC(i, f) += A(i, k) * B(k, f)\n",
         LOOM_ERR_SEMANTIC, 5, 1, "output C is assigned twice (lines 4 and 5)")
ERR_TEST(temp_assigned_twice,
         "tensor A(N) dense\ntensor C(N) dense output\nT(i) = A(i)\nT(i) = A(i)\nC(i) = T(i)\n",
         LOOM_ERR_SEMANTIC, 4, 1, "tensor T is assigned twice (lines 3 and 4)")
ERR_TEST(output_never_assigned, SPMM_HEAD "T(i, f) = A(i, k) * B(k, f)\n", LOOM_ERR_SEMANTIC, 3, 8,
         "output C is declared in line 3 but never assigned")
ERR_TEST(same_index_twice, "tensor A(N, N) dense\ntensor y(N) dense output\ny(i) = A(i, i)\n",
         LOOM_ERR_SEMANTIC, 3, 13, "index i appears twice in the access of A")
ERR_TEST(same_index_twice_lhs, "tensor A(N, N) dense\nT(i, i) = A(i, j)\n", LOOM_ERR_SEMANTIC, 2,
         6, "index i appears twice")
ERR_TEST(lhs_index_unused, SPMM_HEAD "C(i, f) = A(i, k)\n", LOOM_ERR_SEMANTIC, 4, 6,
         "index f on the left of line 4 appears on no tensor on the right, so it has no extent")
ERR_TEST(max_without_reduction, "tensor A(N) dense\ntensor y(N) dense output\ny(i) max= A(i)\n",
         LOOM_ERR_SEMANTIC, 3, 6,
         "reduction with no possible meaning: max= needs an index on the right that is not on the "
         "left")
ERR_TEST(constant_only, "tensor y() dense output\ny() = 3 * 2\n", LOOM_ERR_SEMANTIC, 2, 7,
         "reads no tensor")
ERR_TEST(params_disagree,
         "param N = 4\nparam K = 8\ntensor A(N, K) dense\ntensor B(N) dense\ntensor y(N) dense "
         "output\ny(i) = A(i, k) * B(k)\n",
         LOOM_ERR_SEMANTIC, 6, 20, "both are params with different defaults")
ERR_TEST(params_disagree_late,
         "tensor A(N, K) dense\ntensor B(N) dense\ntensor y(N) dense output\n"
         "y(i) = A(i, k) * B(k)\nparam N = 4\nparam K = 8\n",
         LOOM_ERR_SEMANTIC, 4, 18, "both are params with different defaults")
ERR_TEST(identifier_too_long, "tensor Aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa(N) dense\n",
         LOOM_ERR_PARSE, 1, 8, "is too long (at most 31 characters)")
ERR_TEST(text_after_statement, SPMM_HEAD "C(i, f) += A(i, k) * B(k, f) B\n", LOOM_ERR_PARSE, 4, 30,
         "expected an operator or end of line after the expression, found 'B'")
ERR_TEST(unbalanced_paren, SPMM_HEAD "C(i, f) += A(i, k) * B(k, f))\n", LOOM_ERR_PARSE, 4, 29,
         "unbalanced parentheses")
ERR_TEST(text_after_declaration, "tensor A(N) dense outptu\n", LOOM_ERR_PARSE, 1, 19,
         "expected `output` or end of line")
ERR_TEST(unterminated_input, SPMM_HEAD "C(i, f) += A(i, k", LOOM_ERR_PARSE, 4, 18,
         "found end of input")
ERR_TEST(unterminated_paren, SPMM_HEAD "C(i, f) += (A(i, k) * B(k, f)\n", LOOM_ERR_PARSE, 4, 30,
         "expected ')' to close the '(' at column 12, found end of line")
ERR_TEST(non_ascii, "tensor A(N) dense \xc3\xa9\n", LOOM_ERR_PARSE, 1, 19, "non-ASCII byte 0xc3")
ERR_TEST(unexpected_char, SPMM_HEAD "C(i, f) += A(i, k) $ B(k, f)\n", LOOM_ERR_PARSE, 4, 20,
         "unexpected character '$'")
ERR_TEST(malformed_number, SPMM_HEAD "C(i, f) += A(i, k) * 1e+\n", LOOM_ERR_PARSE, 4, 22,
         "malformed number")
ERR_TEST(index_as_value, SPMM_HEAD "C(i, f) += A(i, k) * k\n", LOOM_ERR_PARSE, 4, 23,
         "an index variable is not a value")
ERR_TEST(missing_operator, SPMM_HEAD "C(i, f) A(i, k) * B(k, f)\n", LOOM_ERR_PARSE, 4, 9,
         "expected '=', '+=' or 'max=' after the index list of C, found 'A'")
ERR_TEST(missing_expression, SPMM_HEAD "C(i, f) += A(i, k) *\n", LOOM_ERR_PARSE, 4, 21,
         "expected an expression (a number, a tensor access, a call or '('), found end of line")
ERR_TEST(tensor_without_name, "tensor 3(N) dense\n", LOOM_ERR_PARSE, 1, 8,
         "expected a tensor name after `tensor`")
ERR_TEST(param_without_name, "param = 3\n", LOOM_ERR_PARSE, 1, 7,
         "expected a size name after `param`")
ERR_TEST(bad_line_start, "(A)\n", LOOM_ERR_PARSE, 1, 1, "expected `param`, `tensor` or a statement")
ERR_TEST(call_arity, SPMM_HEAD "C(i, f) += exp(A(i, k), B(k, f))\n", LOOM_ERR_SEMANTIC, 4, 12,
         "exp takes 1 argument")
ERR_TEST(call_arity_max, SPMM_HEAD "C(i, f) += max(A(i, k)) * B(k, f)\n", LOOM_ERR_SEMANTIC, 4, 12,
         "max takes 2 arguments, not 1")
ERR_TEST(function_as_tensor, "tensor exp(N) dense\n", LOOM_ERR_SEMANTIC, 1, 8, "built-in function")
ERR_TEST(sparse_output_no_pattern,
         "tensor A(N, K) csr\ntensor B(K, F) dense\ntensor C(N, F) csr output\n"
         "C(i, f) += A(i, k) * B(k, f)\n",
         LOOM_ERR_SEMANTIC, 4, 1,
         "output C is declared csr but no sparse operand with indices (i, f) gives its pattern; "
         "loom computes sparse outputs only at the stored entries of such an operand "
         "(SDDMM-style); declare C dense")
ERR_TEST(sparse_output_wrong_format,
         "tensor M(N, L) csr\ntensor Q(N, D) dense\ntensor S(N, L) dcsr output\n"
         "S(i, j) = M(i, j) * Q(i, d)\n",
         LOOM_ERR_SEMANTIC, 4, 1, "its pattern comes from M, which is csr")
ERR_TEST(sparse_output_union,
         "tensor A(N, M) csr\ntensor B(N, M) dense\ntensor C(N, M) csr output\n"
         "C(i, j) = A(i, j) + B(i, j)\n",
         LOOM_ERR_SEMANTIC, 4, 1, "non-zero on the union of several patterns that loom cannot assemble")
ERR_TEST(sparse_output_union_dcsr,
         "tensor A(N, M) csr\ntensor B(N, M) csr\ntensor C(N, M) dcsr output\n"
         "C(i, j) = A(i, j) + B(i, j)\n",
         LOOM_ERR_SEMANTIC, 4, 1, "loom assembles a new pattern only for a csr output")

/* A csr output no operand's pattern holds is assembled: its pattern_of is
 * itself (a union, SpGEMM's product). */
Test(parse, assembled_outputs)
{
    loom_program *p = load_str("tensor A(N, M) csr\ntensor B(N, M) csr\ntensor C(N, M) csr output\n"
                               "C(i, j) = A(i, j) + B(i, j)\n");
    int C = loom_program_find_tensor(p, "C");
    cr_assert_eq(p->tensors[C].pattern_of, C);
    loom_program_free(p);
    p = load_str("tensor A(N, K) csr\ntensor B(K, M) csr\ntensor C(N, M) csr output\n"
                 "C(i, j) += A(i, k) * B(k, j)\n");
    C = loom_program_find_tensor(p, "C");
    cr_assert_eq(p->tensors[C].pattern_of, C);
    loom_program_free(p);
}

/* A sum's temporary is dense (its domain is a union); a product's, or a sum
 * inside a product with a common pattern, keeps the pattern. */
Test(parse, union_inference)
{
    loom_program *p = load_str("tensor A(N, M) csr\ntensor B(N, M) csr\ntensor y(N) dense output\n"
                               "T(i, j) = A(i, j) + B(i, j)\n"
                               "U(i, j) = A(i, j) * (B(i, j) + 1)\n"
                               "y(i) = T(i, j) + U(i, j)\n");
    int T = loom_program_find_tensor(p, "T"), U = loom_program_find_tensor(p, "U");
    int A = loom_program_find_tensor(p, "A");
    cr_assert_eq(p->tensors[T].pattern_of, -1);
    cr_assert_eq(p->tensors[T].format.kind, LOOM_FORMAT_DENSE);
    cr_assert_eq(p->tensors[U].pattern_of, A);
    cr_assert_eq(p->tensors[U].format.kind, LOOM_FORMAT_CSR);
    loom_program_free(p);
}

ERR_TEST(causal_output, "tensor W(N, N) causal output\n", LOOM_ERR_SEMANTIC, 1, 16,
         "a pattern (no values), so it can only be an input")
ERR_TEST(assign_causal_input, "tensor A(N, N) dense\ntensor W(N, N) causal\nW(i, j) = A(i, j)\n",
         LOOM_ERR_SEMANTIC, 3, 1, "tensor W is an input")
ERR_TEST(empty_workload, "# nothing here\n\n", LOOM_ERR_SEMANTIC, 3, 1, "no statements")
ERR_TEST(nested_too_deeply,
         SPMM_HEAD
         "C(i, f) += "
         "(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
         "(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
         "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((\n",
         LOOM_ERR_PARSE, 4, 212, "nested too deeply")

/* capacity errors need generated text */

Test(parse_errors, too_many_statements)
{
    char text[4096] = "tensor A(N) dense\n";
    for (int s = 0; s < LOOM_MAX_STMTS + 1; s++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "T%d(i) = A(i)\n", s);
    expect_error(text, LOOM_ERR_SEMANTIC, LOOM_MAX_STMTS + 2, 1, "too many statements");
}

Test(parse_errors, too_many_tensors)
{
    char text[4096] = "";
    for (int t = 0; t < LOOM_MAX_TENSORS + 1; t++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "tensor A%d(N) dense\n", t);
    expect_error(text, LOOM_ERR_SEMANTIC, LOOM_MAX_TENSORS + 1, 8, "too many tensors");
}

Test(parse_errors, too_many_sizes)
{
    char text[4096] = "tensor A(";
    for (int s = 0; s < 4; s++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%sS%d", s ? ", " : "", s);
    strcat(text, ") dense\n");
    for (int t = 0; t < 8; t++) {
        snprintf(text + strlen(text), sizeof text - strlen(text), "tensor B%d(", t);
        for (int s = 0; s < 4; s++)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%sS%d_%d", s ? ", " : "", t, s);
        strcat(text, ") dense\n");
    }
    /* 4 + 8 * 4 = 36 > 32 sizes: the 29th new size is the first too many */
    loom_program *p = NULL;
    loom_error e;
    cr_assert_eq(loom_program_parse_string(text, "bad.loom", &p, &e), LOOM_ERR_SEMANTIC);
    cr_assert_not_null(strstr(e.msg, "too many sizes"), "%s", e.msg);
    cr_assert_eq(e.line, 9);
    cr_assert_eq(e.col, 11);
    cr_assert_null(p);
}

Test(parse_errors, too_many_stmt_vars)
{
    expect_error("tensor A(N, N, N, N) dense\ntensor y() dense output\n"
                 "y() = A(a, b, c, d) * A(e, f, g, h) * A(i, j, k, l)\n",
                 LOOM_ERR_SEMANTIC, 3, 41, "too many index variables in one statement");
}

Test(parse_errors, too_many_exprs)
{
    size_t n = 64 + 12 * (LOOM_MAX_EXPRS + 10);
    char *text = malloc(n);
    strcpy(text, "tensor A(N) dense\ntensor y(N) dense output\ny(i) = A(i)");
    for (int k = 0; k < LOOM_MAX_EXPRS / 2 + 5; k++)
        strcat(text, " + A(i)");
    strcat(text, "\n");
    loom_program *p = NULL;
    loom_error e;
    cr_assert_eq(loom_program_parse_string(text, "bad.loom", &p, &e), LOOM_ERR_SEMANTIC);
    cr_assert_not_null(strstr(e.msg, "expressions are too large"), "%s", e.msg);
    cr_assert_eq(e.line, 3);
    cr_assert_null(p);
    free(text);
}

Test(parse_errors, io_error_names_file)
{
    loom_program *p = NULL;
    loom_error e;
    loom_error_clear(&e);
    cr_assert_eq(loom_program_parse_file("workloads/no_such_file.loom", &p, &e), LOOM_ERR_IO);
    cr_assert_null(p);
    cr_assert_not_null(strstr(e.msg, "workloads/no_such_file.loom"), "%s", e.msg);
    cr_assert_not_null(strstr(e.msg, "No such file or directory"), "%s", e.msg);
    cr_assert_eq(loom_program_parse_file("workloads", &p, &e), LOOM_ERR_IO);
    cr_assert_null(p);
}

Test(parse_errors, null_arguments)
{
    loom_program *p = NULL;
    loom_error e;
    cr_assert_eq(loom_program_parse_string(NULL, "x", &p, &e), LOOM_ERR_INVALID);
    cr_assert_eq(loom_program_parse_string("y(i) = A(i)", "x", NULL, &e), LOOM_ERR_INVALID);
    cr_assert_eq(loom_program_parse_string("x", "x", &p, NULL), LOOM_ERR_PARSE);
    loom_program_free(NULL);
}

/* ---- robustness ------------------------------------------------------- */

static unsigned long n_ok, n_fail;

static void parse_any(const char *text)
{
    loom_program *p = (loom_program *)0x1;
    loom_error e;
    loom_error_clear(&e);
    loom_status st = loom_program_parse_string(text, "fuzz.loom", &p, &e);
    if (st != LOOM_OK) {
        n_fail++;
        cr_assert_null(p);
        cr_assert_eq(e.status, st);
        cr_assert_gt(strlen(e.msg), 0, "empty message for: %s", text);
        cr_assert_geq(e.line, 1, "line %d for '%s' on: %s", e.line, e.msg, text);
        cr_assert_geq(e.col, 1);
        cr_assert_str_eq(e.file, "fuzz.loom");
        return;
    }
    n_ok++;
    cr_assert_not_null(p);
    cr_assert_gt(p->nstmts, 0);
    /* whatever parses prints back to something that parses the same */
    loom_program *q = reprint(p, NULL);
    cr_assert_eq(q->ntensors, p->ntensors);
    cr_assert_eq(q->nstmts, p->nstmts);
    cr_assert_eq(q->nexprs, p->nexprs);
    loom_program_free(q);
    loom_program_finish_binding(p, &e);
    loom_program_free(p);
}

Test(parse_robust, truncations_and_flips, .timeout = 120)
{
    static const char repl[] = {'(', ')', ',', '=', '+', '#', '\n', ' ', 'x', '9', '.', '-',
                                '*', 'i', 'A', '\x80', '\t', 'e'};
    for (size_t w = 0; w < NWORKLOADS; w++) {
        char *text = read_all(WORKLOADS[w]);
        size_t len = strlen(text);
        char *buf = malloc(len + 1);
        for (size_t cut = 0; cut <= len; cut++) {
            memcpy(buf, text, cut);
            buf[cut] = '\0';
            parse_any(buf);
        }
        unsigned seed = 12345u + (unsigned)w;
        for (size_t off = 0; off < len; off++) {
            for (size_t r = 0; r < sizeof repl; r++) {
                memcpy(buf, text, len + 1);
                buf[off] = repl[r];
                parse_any(buf);
            }
            /* and a deterministic pseudo-random second flip elsewhere */
            seed = seed * 1103515245u + 12345u;
            memcpy(buf, text, len + 1);
            buf[off] = (char)(1 + (seed >> 16) % 255);
            buf[(seed >> 8) % len] ^= (char)(1 + (seed >> 24) % 127);
            parse_any(buf);
        }
        free(buf);
        free(text);
    }
    cr_assert_gt(n_ok, 100);
    cr_assert_gt(n_fail, 1000);
}
