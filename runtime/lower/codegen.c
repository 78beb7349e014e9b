/* C code generation from LIR. */
#include "codegen.h"
#include "codegen_helpers.h"
#include "../../dsl/ir/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The output (the shared growable buffer, dsl/ir/util.h) and, while a tree
 * reduction's lane loop is emitted (for_stmt), the accumulator that stands
 * for one lane's partial there. */
typedef struct sbuf {
    loom_strbuf s;
    int lane_acc;          /* a scalar accumulator written as lane_acc_name_rp[lane], or -1 */
    const char *lane;      /* the lane variable's C name */
    int streams;           /* the file has non-temporal stores: zero fills use loom_stream_zero */
} sbuf;
#define sb_printf(b, ...) loom_strbuf_printf(&(b)->s, __VA_ARGS__)

static void indent(sbuf *b, int ind) { sb_printf(b, "%*s", 4 * ind, ""); }

static const char *c_keywords[] = {"auto", "break", "case", "char", "const", "continue", "default", "do",
                                   "double", "else", "enum", "extern", "float", "for", "goto", "if", "inline",
                                   "int", "long", "register", "restrict", "return", "short", "signed", "sizeof",
                                   "static", "struct", "switch", "typedef", "union", "unsigned", "void",
                                   "volatile", "while", "exp", "expf", "sqrt", "sqrtf", "free", "malloc",
                                   "aligned_alloc", "memset", "loom_t", "main", NULL};

static void plain_var_name(sbuf *b, const lir_func *f, int v)
{
    const char *n = f->vars[v].name;
    for (int k = 0; c_keywords[k]; k++)
        if (strcmp(n, c_keywords[k]) == 0) {
            sb_printf(b, "v_%s", n);
            return;
        }
    sb_printf(b, "%s", n);
}

/* A variable as the C code names it: inside a tree reduction's lane loop the
 * accumulator is its lane's partial. */
static void var_name(sbuf *b, const lir_func *f, int v)
{
    plain_var_name(b, f, v);
    if (v == b->lane_acc)
        sb_printf(b, "_rp[%s]", b->lane);
}

static void float_lit(sbuf *b, double v)
{
    if (isinf(v)) {
        sb_printf(b, "%sINFINITY", v < 0 ? "-" : "");
        return;
    }
    char t[64];
    snprintf(t, sizeof t, "%.9g", v);
    int has = strpbrk(t, ".eEn") != NULL;
    sb_printf(b, "%s%sf", t, has ? "" : ".0");
}

static void expr(sbuf *b, const lir_func *f, const lir_expr *e);

/* A call: its operator row's C template (dsl/ir/op.h), $0 and $1 the operands. */
static void call_expr(sbuf *b, const lir_func *f, const lir_expr *e)
{
    const loom_op_row *r = loom_op_get(e->fn);
    const char *t = r && r->c_template ? r->c_template : "$0";
    for (const char *p = t; *p; p++) {
        if (p[0] == '$' && (p[1] == '0' || (p[1] == '1' && e->b))) {
            expr(b, f, p[1] == '0' ? e->a : e->b);
            p++;
        } else {
            sb_printf(b, "%c", *p);
        }
    }
}

static void expr(sbuf *b, const lir_func *f, const lir_expr *e)
{
    static const char *ops[] = {"+", "-", "*", "/", "", "", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
    switch (e->kind) {
    case LIR_E_INT: sb_printf(b, "%lld", (long long)e->ival); break;
    case LIR_E_FLOAT: float_lit(b, e->fval); break;
    case LIR_E_VAR: var_name(b, f, e->var); break;
    case LIR_E_DIM: sb_printf(b, "%s_d%d", f->prog->tensors[e->tensor].name, e->dim); break;
    case LIR_E_NNZ: sb_printf(b, "%s_nnz", f->prog->tensors[e->tensor].name); break;
    case LIR_E_LOAD:
        sb_printf(b, "%s[", f->bufs[e->buf].name);
        expr(b, f, e->a);
        sb_printf(b, "]");
        break;
    case LIR_E_BIN:
        if (e->op == LIR_MIN || e->op == LIR_MAX) {
            sb_printf(b, "%s(", e->op == LIR_MIN ? "LOOM_MIN" : "LOOM_MAX");
            expr(b, f, e->a);
            sb_printf(b, ", ");
            expr(b, f, e->b);
            sb_printf(b, ")");
        } else {
            sb_printf(b, "(");
            expr(b, f, e->a);
            sb_printf(b, " %s ", ops[e->op]);
            expr(b, f, e->b);
            sb_printf(b, ")");
        }
        break;
    case LIR_E_NEG: sb_printf(b, "(-"); expr(b, f, e->a); sb_printf(b, ")"); break;
    case LIR_E_NOT: sb_printf(b, "(!"); expr(b, f, e->a); sb_printf(b, ")"); break;
    case LIR_E_CALL: call_expr(b, f, e); break;
    }
}

static const char *ctype(lir_type t) { return t == LIR_F32 ? "float" : t == LIR_BOOL ? "int" : "int64_t"; }

/* Does s (or a statement inside it) write with streaming stores? */
static int has_stream(const lir_stmt *s)
{
    if (!s)
        return 0;
    switch (s->kind) {
    case LIR_S_STREAM: return 1;
    case LIR_S_SEQ:
        for (int i = 0; i < s->nitems; i++)
            if (has_stream(s->items[i]))
                return 1;
        return 0;
    case LIR_S_FOR:
    case LIR_S_WHILE: return has_stream(s->body);
    case LIR_S_IF: return has_stream(s->body) || has_stream(s->els);
    default: return 0;
    }
}

static int func_has_stream(const lir_func *f) { return has_stream(f->body); }

/* Does a zero fill in a file that streams use loom_stream_zero rather than
 * memset?  Only a local workspace (a stack array) of more than
 * LOOM_STREAM_MEMSET_MAX_BYTES or of a size known only at run time: the
 * fills GCC may expand inline as `rep stos` between the non-temporal stores
 * of the rows around it (codegen_helpers.c).  A smaller workspace keeps
 * memset: GCC expands it as vector stores on every build (AVX-512: zmm
 * stores up to 256 bytes on Emerald Rapids, 512 on Zen 4; AVX2 and SSE:
 * build.c's vector_loop strategy up to 2 KiB), and SRA can keep the
 * workspace in registers, which loom_stream_zero's empty asm, taking its
 * address, forbids (every accumulation into it then a load, an add and a
 * store).  A kernel intermediate's or partials' fill (TEMP, PARTIAL) runs
 * once, before the statements, and keeps memset too: glibc's `rep stosb`
 * writes whole lines, where a loop of vector stores on one thread asks
 * for every line the other threads wrote in the previous call.  A gcn2
 * schedule on Cora streaming H2's 7-float rows, which loses both, measured
 * 1.35-1.64x the same schedule with ordinary stores (Zen 5, issue 29's
 * records, 2026-12-03: 134 against 104 us with the small workspaces kept,
 * 111 with the intermediates' fills too; tests/test_stream.c).  A fill
 * loom_stream_zero is for, of a literal size, is written under
 * `#if LOOM_MEMSET_VECTOR_BYTES >= size` as a memset, which loom's x86
 * flags define (runtime/measure/build.c; AVX-512's since 2026-12-06, when
 * Zen 4 ran PubMed's streamed 512-byte rows 1.5x slower through memory):
 * there a memset that size is
 * vector stores and the workspace can stay in registers (PubMed F = 128's
 * streamed rows, 512 bytes; tests/test_stream.c
 * workspace_fill_is_memset_under_vector_memset_flags). */
#define LOOM_STREAM_MEMSET_MAX_BYTES 256
static int stream_zero_fill(const lir_func *f, const lir_stmt *s)
{
    const lir_buffer *B = &f->bufs[s->buf];
    if (B->kind != LIR_BUF_LOCAL)
        return 0;
    return !s->size || s->size->kind != LIR_E_INT ||
           s->size->ival * (int64_t)sizeof(float) > LOOM_STREAM_MEMSET_MAX_BYTES;
}

static void stmt_in(sbuf *b, const lir_func *f, const lir_stmt *s, int ind, int fenced);

/* Does s (or a statement inside it) become a tree reduction? */
static int has_tree(const lir_stmt *s)
{
    if (!s)
        return 0;
    switch (s->kind) {
    case LIR_S_SEQ:
        for (int i = 0; i < s->nitems; i++)
            if (has_tree(s->items[i]))
                return 1;
        return 0;
    case LIR_S_FOR: return loom_lir_is_tree_reduction(s) || has_tree(s->body);
    case LIR_S_WHILE: return has_tree(s->body);
    case LIR_S_IF: return has_tree(s->body) || has_tree(s->els);
    default: return 0;
    }
}

/* A vectorized reduction loop over a dense extent -- constant bounds of
 * trip count T >= 4, or 0 to a dimension (then W = LOOM_RL) -- with a
 * loop-free body (issue 29; the rule is loom_lir_is_tree_reduction).  `#pragma omp simd reduction` leaves the combining of the
 * lanes to the compiler, and GCC 12 without -ffast-math adds them one after
 * another from the "simd array" it keeps: 16 dependent vaddss per loop
 * instance on AVX-512, for SDDMM D=64 as many adds as the 4 vector FMAs of
 * the dot product have lanes.  Here the lanes are explicit: W = LOOM_RW(T)
 * partials (the vector width in floats, or the largest power of two <= T,
 * at least 4), the loop in blocks of W lanes (an `omp simd` loop over the
 * lanes, the accumulator written as its lane's partial), a halving tree of
 * vector steps down to 4 lanes, those 4 combined in registers by shuffles
 * (loom_hsum4 / loom_hmax4: as an array GCC stores them and reloads each
 * lane, a store-forwarding stall), and the last T mod W iterations in
 * order.  Measured on SDDMM Cora D=64 (the default schedule, AVX-512 Zen 4,
 * 2 threads, interleaved runs): 53-68 us with the reduction clause, 34-37
 * us with this, 33-41 us with GCC's own tree under -fassociative-math --
 * which the build does not use: it would let GCC vectorize the reductions
 * a schedule keeps serial.  Reassociating a sum is what the reduction
 * clause already allowed. */
static void tree_reduction(sbuf *b, const lir_func *f, const lir_stmt *s, int ind, int fenced)
{
    /* names and bounds as text: the loop variable, the accumulator, the end, the lane count */
    sbuf name = {{0}, -1, NULL, 0}, acc = {{0}, -1, NULL, 0}, end = {{0}, -1, NULL, 0}, width = {{0}, -1, NULL, 0};
    plain_var_name(&name, f, s->var);
    plain_var_name(&acc, f, s->red_var);
    expr(&end, f, s->hi);
    if (s->hi->kind == LIR_E_INT)
        sb_printf(&width, "LOOM_RW(%lld)", (long long)(s->hi->ival - s->lo->ival));
    else
        sb_printf(&width, "LOOM_RL");
    if (name.s.oom || acc.s.oom || end.s.oom || width.s.oom || !name.s.s || !acc.s.s || !end.s.s || !width.s.s) {
        b->s.oom = 1;
    } else {
        const char *v = name.s.s, *a = acc.s.s, *hi = end.s.s, *W = width.s.s;
        char lane[64]; /* a LIR name has < 40 characters (lir_var), "v_" and "_rl" added */
        snprintf(lane, sizeof lane, "%s_rl", v);
        indent(b, ind);
        sb_printf(b, "{ /* %s: a tree reduction over %s lanes (codegen.c, tree_reduction) */\n", a, W);
        ind++;
        indent(b, ind);
        sb_printf(b, "float %s_rp[%s];\n", a, W);
        indent(b, ind);
        sb_printf(b, "#pragma omp simd\n");
        indent(b, ind);
        sb_printf(b, "for (int64_t %s = 0; %s < %s; %s++)\n", lane, lane, W, lane);
        indent(b, ind + 1);
        sb_printf(b, "%s_rp[%s] = %s;\n", a, lane, s->red_max ? "-INFINITY" : "0.0f");
        indent(b, ind);
        sb_printf(b, "int64_t %s_rb = %lld;\n", v, (long long)s->lo->ival);
        indent(b, ind);
        sb_printf(b, "for (; %s_rb + %s <= %s; %s_rb += %s) {\n", v, W, hi, v, W);
        indent(b, ind + 1);
        sb_printf(b, "#pragma omp simd\n");
        indent(b, ind + 1);
        sb_printf(b, "for (int64_t %s = 0; %s < %s; %s++) {\n", lane, lane, W, lane);
        indent(b, ind + 2);
        sb_printf(b, "int64_t %s = %s_rb + %s;\n", v, v, lane);
        int saved_acc = b->lane_acc;
        const char *saved_lane = b->lane;
        b->lane_acc = s->red_var;
        b->lane = lane;
        stmt_in(b, f, s->body, ind + 2, fenced);
        b->lane_acc = saved_acc;
        b->lane = saved_lane;
        indent(b, ind + 1);
        sb_printf(b, "}\n");
        indent(b, ind);
        sb_printf(b, "}\n");
        /* halve down to 4 lanes in vectors, then the 4 by shuffles */
        indent(b, ind);
        sb_printf(b, "for (int64_t %s_rw = %s / 2; %s_rw >= 4; %s_rw /= 2) {\n", v, W, v, v);
        indent(b, ind + 1);
        sb_printf(b, "#pragma omp simd\n");
        indent(b, ind + 1);
        sb_printf(b, "for (int64_t %s = 0; %s < %s_rw; %s++)\n", lane, lane, v, lane);
        indent(b, ind + 2);
        if (s->red_max)
            sb_printf(b, "%s_rp[%s] = LOOM_MAX(%s_rp[%s], %s_rp[%s + %s_rw]);\n", a, lane, a, lane, a, lane, v);
        else
            sb_printf(b, "%s_rp[%s] = (%s_rp[%s] + %s_rp[%s + %s_rw]);\n", a, lane, a, lane, a, lane, v);
        indent(b, ind);
        sb_printf(b, "}\n");
        indent(b, ind);
        if (s->red_max)
            sb_printf(b, "%s = LOOM_MAX(%s, loom_hmax4(%s_rp));\n", a, a, a);
        else
            sb_printf(b, "%s = (%s + loom_hsum4(%s_rp));\n", a, a, a);
        /* the last (trip count mod lanes) iterations, in order */
        indent(b, ind);
        sb_printf(b, "for (int64_t %s = %s_rb; %s < %s; %s++) {\n", v, v, v, hi, v);
        stmt_in(b, f, s->body, ind + 1, fenced);
        indent(b, ind);
        sb_printf(b, "}\n");
        ind--;
        indent(b, ind);
        sb_printf(b, "}\n");
    }
    free(name.s.s);
    free(acc.s.s);
    free(end.s.s);
    free(width.s.s);
}

/* 1 when expression e reads a variable marked in dep */
static int mentions(const lir_expr *e, const char *dep)
{
    if (!e)
        return 0;
    if (e->kind == LIR_E_VAR)
        return dep[e->var];
    return mentions(e->a, dep) || mentions(e->b, dep);
}

/* 1 when statement s (run in order) stores to memory -- a buffer other than a
 * local workspace -- at an index that reads no variable of dep, which holds the
 * enclosing loop's variable and gains every variable s defines from a marked
 * one: the loop adds into the same place of its output at every iteration */
static int accumulates_in_memory(const lir_func *f, const lir_stmt *s, char *dep)
{
    if (!s)
        return 0;
    switch (s->kind) {
    case LIR_S_STORE: return f->bufs[s->buf].kind != LIR_BUF_LOCAL && !mentions(s->index, dep);
    case LIR_S_LET:
    case LIR_S_ASSIGN: dep[s->var] |= (char)mentions(s->value, dep); return 0;
    case LIR_S_SEQ:
        for (int i = 0; i < s->nitems; i++)
            if (accumulates_in_memory(f, s->items[i], dep))
                return 1;
        return 0;
    case LIR_S_FOR:
        dep[s->var] |= (char)(mentions(s->lo, dep) || mentions(s->hi, dep));
        return accumulates_in_memory(f, s->body, dep);
    case LIR_S_WHILE: return accumulates_in_memory(f, s->body, dep);
    case LIR_S_IF: return accumulates_in_memory(f, s->body, dep) || accumulates_in_memory(f, s->els, dep);
    default: return 0;
    }
}

/* 1 when statement s (recursively) assigns variable v */
static int assigns(const lir_stmt *s, int v)
{
    if (!s)
        return 0;
    if (s->kind == LIR_S_ASSIGN || s->kind == LIR_S_FOR)
        if (s->var == v)
            return 1;
    for (int i = 0; s->kind == LIR_S_SEQ && i < s->nitems; i++)
        if (assigns(s->items[i], v))
            return 1;
    return assigns(s->body, v) || assigns(s->els, v);
}

/* 1 when a variable of f is named name + suffix (the offset form's names would hide it) */
static int named(const lir_func *f, const char *name, const char *suffix)
{
    size_t n = strlen(name);
    for (int v = 0; v < f->nvars; v++)
        if (strncmp(f->vars[v].name, name, n) == 0 && strcmp(f->vars[v].name + n, suffix) == 0)
            return 1;
    return 0;
}

/* A position loop: a serial or unrolled loop starting at a position read from
 * memory (coiteration over a level's pos/crd) whose body accumulates in memory
 * and leaves the position alone, with no variable named as the offset form's */
static int accumulating_position_loop(const lir_func *f, const lir_stmt *s, lir_loop_kind kind)
{
    if ((kind != LIR_LOOP_SERIAL && kind != LIR_LOOP_UNROLLED) || s->lo->kind != LIR_E_LOAD ||
        assigns(s->body, s->var))
        return 0;
    const char *v = f->vars[s->var].name;
    if (named(f, v, "_lo") || named(f, v, "_len") || named(f, v, "_at"))
        return 0;
    char *dep = calloc((size_t)f->nvars + 1, 1);
    if (!dep)
        return 0; /* the plain form is correct too */
    dep[s->var] = 1;
    int r = accumulates_in_memory(f, s->body, dep);
    free(dep);
    return r;
}

/* A loop's `for (...) {` line.  A serial loop evaluates its bound once.  A
 * position loop that accumulates in memory (accumulating_position_loop: gcn2's
 * T1 = X W1 adding into T1's row at every nonzero of X, an SpMM without a
 * workspace) counts an offset from its start and adds it: `for (p_lo =
 * pos[i], p_len = pos[i + 1] - p_lo, p_at = 0; p_at < p_len; p_at++) {
 * int64_t p = p_lo + p_at;`.  Why: from `p = pos[i]; p++` GCC 12 keeps p and
 * scales it in every address (`(%r8,%rax,4)`), from the offset it keeps 4 p, a
 * byte offset; the rest of the assembly is the same.  On AMD Zen 5
 * (full-width AVX-512) such a loop storing its row at every nonzero ran 1.26x
 * faster in the byte-offset form (Cora's features, F = 16, 1 thread: 40.3
 * against 32.0 us; Cora's adjacency 15.6 against 10.1 us; rows of 1-16
 * nonzeros in random order 2.1-2.3 against 4.7-5.0 cycles a nonzero,
 * bench/bench_branch_rows; the default schedules of gcn, gcn2 and sage2 on
 * Cora 0.90x, 0.96x and 0.93x the time on 2 threads).  With a register
 * workspace the form is no faster (30.8 against 31.4 us) and its 3 more
 * instructions a row cost Cora's short rows 5%, and a store at each position
 * (SDDMM) 2-3%: those keep the plain form (docs/schedule-language.md
 * "Position loops"). */
static void loop_header(sbuf *b, const lir_func *f, const lir_stmt *s, lir_loop_kind kind, int ind)
{
    indent(b, ind);
    if (accumulating_position_loop(f, s, kind)) {
        const char *v = f->vars[s->var].name; /* v_lo, v_len, v_at: never C keywords */
        sb_printf(b, "for (int64_t %s_lo = ", v);
        expr(b, f, s->lo);
        sb_printf(b, ", %s_len = %s", v, s->nonempty ? "LOOM_NONEMPTY(0, " : "");
        expr(b, f, s->hi);
        sb_printf(b, " - %s_lo%s, %s_at = 0; %s_at < %s_len; %s_at++) {\n", v, s->nonempty ? ")" : "", v, v, v, v);
        indent(b, ind + 1);
        sb_printf(b, "int64_t ");
        var_name(b, f, s->var);
        sb_printf(b, " = %s_lo + %s_at;\n", v, v);
        return;
    }
    sb_printf(b, "for (int64_t ");
    var_name(b, f, s->var);
    sb_printf(b, " = ");
    expr(b, f, s->lo);
    if (kind == LIR_LOOP_SERIAL) {
        /* evaluate the bound once */
        sb_printf(b, ", ");
        var_name(b, f, s->var);
        sb_printf(b, "_end = ");
        if (s->nonempty) { /* lir.h: GCC 12 otherwise guards each accumulator's store after the loop with a flag */
            sb_printf(b, "LOOM_NONEMPTY(");
            expr(b, f, s->lo);
            sb_printf(b, ", ");
        }
        expr(b, f, s->hi);
        sb_printf(b, s->nonempty ? "); " : "; ");
        var_name(b, f, s->var);
        sb_printf(b, " < ");
        var_name(b, f, s->var);
        sb_printf(b, "_end; ");
    } else {
        sb_printf(b, "; ");
        var_name(b, f, s->var);
        sb_printf(b, " < ");
        expr(b, f, s->hi);
        sb_printf(b, "; ");
    }
    var_name(b, f, s->var);
    sb_printf(b, "++) {\n");
}

/* A FOR statement (stmt_in's case); see stmt_in for `fenced`. */
static void for_stmt(sbuf *b, const lir_func *f, const lir_stmt *s, int ind, int fenced)
{
    if (loom_lir_is_tree_reduction(s)) {
        tree_reduction(b, f, s, ind, fenced);
        return;
    }
    int fence_after = 0;
    if (s->loop_kind == LIR_LOOP_PARALLEL && has_stream(s->body)) {
        /* every thread fences its own stores, even under a fenced serial loop */
        fenced = 1;
        fence_after = 2;
        indent(b, ind);
        sb_printf(b, "#pragma omp parallel\n");
        indent(b, ind);
        sb_printf(b, "{\n");
        ind++;
    } else if (!fenced && has_stream(s->body)) {
        fenced = 1;
        fence_after = 1;
    }
    /* a short dense loop GCC would otherwise unroll before vectorizing (lir.h loom_lir_is_simd_safe) */
    lir_loop_kind kind = s->loop_kind;
    if (kind == LIR_LOOP_SERIAL && loom_lir_is_simd_safe(f, s))
        kind = LIR_LOOP_VECTORIZED;
    switch (kind) {
    case LIR_LOOP_PARALLEL:
        indent(b, ind);
        if (fence_after == 2 && s->par_chunk > 0)
            sb_printf(b, "#pragma omp for schedule(static, %d) nowait\n", s->par_chunk);
        else if (fence_after == 2)
            sb_printf(b, "#pragma omp for schedule(static) nowait\n");
        else if (s->par_chunk > 0)
            sb_printf(b, "#pragma omp parallel for schedule(static, %d)\n", s->par_chunk);
        else
            sb_printf(b, "#pragma omp parallel for schedule(static)\n");
        break;
    case LIR_LOOP_VECTORIZED:
        indent(b, ind);
        sb_printf(b, "#pragma omp simd");
        /* a sum of two iterations: GCC 12 otherwise runs it as a masked vector of the full width and
           adds its lanes every instance; with safelen(2) it keeps two scalar partial sums (SpMV in
           position chunks of 2, Zen 5, 2 threads: the best schedule 0.60-0.89x the time on AVX-512,
           0.79-0.93x on AVX2, on bcsstk16, PubMed and Cora) */
        if (loom_lir_is_pair_reduction(s))
            sb_printf(b, " safelen(2)");
        if (s->red_var >= 0) {
            sb_printf(b, " reduction(%s:", s->red_max ? "max" : "+");
            var_name(b, f, s->red_var);
            sb_printf(b, ")");
        }
        sb_printf(b, "\n");
        break;
    case LIR_LOOP_UNROLLED: indent(b, ind); sb_printf(b, "#pragma GCC unroll %d\n", s->unroll > 0 ? s->unroll : 4); break;
    case LIR_LOOP_SERIAL: break;
    }
    loop_header(b, f, s, kind, ind);
    stmt_in(b, f, s->body, ind + 1, fenced);
    indent(b, ind);
    sb_printf(b, "}\n");
    if (fence_after) {
        indent(b, ind);
        sb_printf(b, "loom_stream_fence();\n");
    }
    if (fence_after == 2) {
        indent(b, ind - 1);
        sb_printf(b, "}\n");
    }
}

/* Items i.. of seq, item i a workspace's row loop (lir.h
 * loom_lir_workspace_row_loop): `if (lo < hi) { the loop, known nonempty;
 * the rest } else { the rest }`, so the copy-out follows only the loop */
static void guarded_row(sbuf *b, const lir_func *f, const lir_stmt *seq, int i, int ind, int fenced)
{
    lir_stmt loop = *seq->items[i];
    loop.nonempty = 1;
    indent(b, ind);
    sb_printf(b, "if (");
    expr(b, f, loop.lo);
    sb_printf(b, " < ");
    expr(b, f, loop.hi);
    sb_printf(b, ") {\n");
    if (loop.loop_kind == LIR_LOOP_UNROLLED) { /* the bound in the header's declarations: in its
                                                   condition GCC 12 drops the pragma */
        indent(b, ind + 1);
        sb_printf(b, "#pragma GCC unroll %d\n", loop.unroll > 0 ? loop.unroll : 4);
        loop.loop_kind = LIR_LOOP_SERIAL;
    }
    stmt_in(b, f, &loop, ind + 1, fenced);
    for (int k = i + 1; k < seq->nitems; k++)
        stmt_in(b, f, seq->items[k], ind + 1, fenced);
    indent(b, ind);
    sb_printf(b, "} else {\n");
    for (int k = i + 1; k < seq->nitems; k++)
        stmt_in(b, f, seq->items[k], ind + 1, fenced);
    indent(b, ind);
    sb_printf(b, "}\n");
}

/* One statement.  fenced: 1 when an enclosing loop already fences its
 * streaming stores (LIR_S_STREAM): a parallel loop holding one becomes
 * `omp parallel { omp for nowait ...; loom_stream_fence(); }` (each thread
 * orders its own non-temporal stores before the region's closing barrier;
 * also under a fenced serial loop), the outermost serial loop holding one is
 * followed by a fence (the thread that ran it), and a stream outside any
 * loop by one of its own. */
static void stmt_in(sbuf *b, const lir_func *f, const lir_stmt *s, int ind, int fenced)
{
    switch (s->kind) {
    case LIR_S_SEQ:
        for (int i = 0; i < s->nitems; i++) {
            if (loom_lir_workspace_row_loop(f, s, i)) {
                guarded_row(b, f, s, i, ind, fenced);
                return;
            }
            stmt_in(b, f, s->items[i], ind, fenced);
        }
        return;
    case LIR_S_BARRIER:
        indent(b, ind);
        sb_printf(b, "__asm__(\"\"); /* keeps GCC from vectorizing this loop (issue 13) */\n");
        return;
    case LIR_S_COMMENT:
        indent(b, ind);
        sb_printf(b, "/* ");
        for (const char *p = s->text; *p; p++) /* never close the comment early */
            sb_printf(b, "%c", (p[0] == '*' && p[1] == '/') ? '+' : *p);
        sb_printf(b, " */\n");
        return;
    case LIR_S_FOR:
        for_stmt(b, f, s, ind, fenced);
        return;
    case LIR_S_WHILE:
        indent(b, ind);
        sb_printf(b, "while (");
        expr(b, f, s->cond);
        sb_printf(b, ") {\n");
        stmt_in(b, f, s->body, ind + 1, fenced || has_stream(s->body));
        indent(b, ind);
        sb_printf(b, "}\n");
        if (!fenced && has_stream(s->body)) {
            indent(b, ind);
            sb_printf(b, "loom_stream_fence();\n");
        }
        return;
    case LIR_S_IF:
        indent(b, ind);
        sb_printf(b, "if (");
        expr(b, f, s->cond);
        sb_printf(b, ") {\n");
        stmt_in(b, f, s->body, ind + 1, fenced);
        indent(b, ind);
        if (s->els) {
            sb_printf(b, "} else {\n");
            stmt_in(b, f, s->els, ind + 1, fenced);
            indent(b, ind);
        }
        sb_printf(b, "}\n");
        return;
    case LIR_S_LET:
        indent(b, ind);
        sb_printf(b, "%s ", ctype(f->vars[s->var].type));
        var_name(b, f, s->var);
        sb_printf(b, " = ");
        expr(b, f, s->value);
        sb_printf(b, ";\n");
        return;
    case LIR_S_ASSIGN:
        indent(b, ind);
        var_name(b, f, s->var);
        sb_printf(b, " = ");
        expr(b, f, s->value);
        sb_printf(b, ";\n");
        return;
    case LIR_S_STORE:
        indent(b, ind);
        sb_printf(b, "%s[", f->bufs[s->buf].name);
        expr(b, f, s->index);
        sb_printf(b, "] = ");
        expr(b, f, s->value);
        sb_printf(b, ";\n");
        return;
    case LIR_S_STREAM:
        indent(b, ind);
        sb_printf(b, "loom_stream_copy(&%s[", f->bufs[s->buf].name);
        expr(b, f, s->index);
        sb_printf(b, "], %s, ", f->bufs[s->src].name);
        expr(b, f, s->size);
        sb_printf(b, ");%s\n", fenced ? "" : " loom_stream_fence();");
        return;
    case LIR_S_PREFETCH:
        /* one prefetch per 64-byte line (16 floats); a hint: it never faults */
        indent(b, ind);
        sb_printf(b, "for (int64_t pf_i = 0, pf_n = ");
        expr(b, f, s->size);
        sb_printf(b, "; pf_i < pf_n; pf_i += 16) __builtin_prefetch(&%s[", f->bufs[s->buf].name);
        expr(b, f, s->index);
        sb_printf(b, " + pf_i], 0, 3);\n");
        return;
    case LIR_S_LOCAL:
        indent(b, ind);
        if (f->bufs[s->buf].restrict_ptr) {
            sb_printf(b, "float %s_[%lld] __attribute__((aligned(64)));\n", f->bufs[s->buf].name,
                      (long long)f->bufs[s->buf].local_elems);
            indent(b, ind);
            sb_printf(b, "float *restrict %s = %s_;\n", f->bufs[s->buf].name, f->bufs[s->buf].name);
            return;
        }
        sb_printf(b, "float %s[%lld];\n", f->bufs[s->buf].name, (long long)f->bufs[s->buf].local_elems);
        return;
    case LIR_S_FILL: {
        indent(b, ind);
        int zero = s->value->kind == LIR_E_FLOAT && s->value->fval == 0.0 && !signbit(s->value->fval);
        if (zero && b->streams && stream_zero_fill(f, s)) {
            /* a literal size: memset where loom's flags make a memset that size
               vector stores (build.c LOOM_MEMSET_VECTOR_BYTES), so SRA can keep the
               workspace in registers; loom_stream_zero everywhere else */
            long long bytes = s->size && s->size->kind == LIR_E_INT ? s->size->ival * (long long)sizeof(float) : 0;
            if (bytes > 0) {
                sb_printf(b, "#if defined(LOOM_MEMSET_VECTOR_BYTES) && LOOM_MEMSET_VECTOR_BYTES >= %lld\n", bytes);
                indent(b, ind);
                sb_printf(b, "memset(%s, 0, sizeof(float) * (size_t)(%lld));\n", f->bufs[s->buf].name,
                          (long long)s->size->ival);
                indent(b, ind);
                sb_printf(b, "#else\n");
                indent(b, ind);
            }
            sb_printf(b, "loom_stream_zero(%s, ", f->bufs[s->buf].name);
            expr(b, f, s->size);
            sb_printf(b, ");\n");
            if (bytes > 0) {
                indent(b, ind);
                sb_printf(b, "#endif\n");
            }
        } else if (zero) {
            sb_printf(b, "memset(%s, 0, sizeof(float) * (size_t)(", f->bufs[s->buf].name);
            expr(b, f, s->size);
            sb_printf(b, "));\n");
        } else {
            sb_printf(b, "for (int64_t fill_i = 0, fill_n = ");
            expr(b, f, s->size);
            sb_printf(b, "; fill_i < fill_n; fill_i++) %s[fill_i] = ", f->bufs[s->buf].name);
            expr(b, f, s->value);
            sb_printf(b, ";\n");
        }
        return;
    }
    }
}

static void stmt(sbuf *b, const lir_func *f, const lir_stmt *s, int ind) { stmt_in(b, f, s, ind, 0); }

static void prelude(sbuf *b, const loom_program *p, int streams, int trees)
{
    sb_printf(b, "/* Generated by loom from %s.  Workload hash %016llx.\n", p->path,
              (unsigned long long)loom_program_hash(p));
    /* the flags loom builds with (runtime/measure/build.c): without -ffp-contract=fast, -std=c11 forbids
     * FMAs (measured: GEMM 1024^3 on AVX2 at 0.58x OpenBLAS instead of 0.77x unpacked) */
    sb_printf(b, " * Build: cc -O3 -march=native -ffp-contract=fast -fno-math-errno -fopenmp -fPIC -shared -std=c11 "
                 "this.c -lm\n * (loom adds -mno-avx512f for an AVX2 target, -mprefer-vector-width=512 for AVX-512)");
    if (streams) /* stream_zero_fill: the fills a memset under these flags keeps in registers */
        sb_printf(b, "\n * This kernel streams: on x86 loom also adds\n"
                     " * -mmemset-strategy=vector_loop:2048:noalign,libcall:-1:noalign"
                     " -DLOOM_MEMSET_VECTOR_BYTES=2048,\n * under which its workspaces' zero fills are memsets");
    sb_printf(b, " */\n");
    sb_printf(b, "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n\n");
    /* glibc declares libmvec's vector expf only under -ffast-math (bits/math-vector.h), which would also
     * assume no infinities; the same declaration here lets `omp simd` loops call _ZGVeN16v_expf. */
    sb_printf(b, "#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__FAST_MATH__)\n"
                 "__attribute__((__simd__(\"notinbranch\"))) float expf(float);\n#endif\n\n");
    sb_printf(b, "%s\n", loom_kernel_abi_text);
    sb_printf(b, "#define LOOM_MIN(a, b) ((a) < (b) ? (a) : (b))\n#define LOOM_MAX(a, b) ((a) > (b) ? (a) : (b))\n");
    /* a loop bound hi the lowering knows exceeds lo (lir.h nonempty): said to the compiler, GCC 12 keeps
       a position chunk's accumulators in registers without a flag a vector saying whether the loop ran
       (PubMed F = 128, Zen 5: the chunked schedules 0.91-0.94x the time) */
    sb_printf(b, "#define LOOM_NONEMPTY(lo, hi) __extension__({ int64_t loom_hi_ = (hi); "
                 "if (loom_hi_ <= (lo)) __builtin_unreachable(); loom_hi_; })\n\n");
    if (trees)
        sb_printf(b, "%s", loom__codegen_tree_helpers);
    sb_printf(b, "const int loom_kernel_abi_version = LOOM_ABI_VERSION;\n\n");
    if (streams)
        sb_printf(b, "%s", loom__codegen_stream_helpers);
}

static void function(sbuf *b, const lir_func *f, const char *entry)
{
    const loom_program *p = f->prog;
    sb_printf(b, "int %s(loom_tensor_abi *loom_t)\n{\n", entry);
    /* sizes */
    for (int t = 0; t < p->ntensors; t++) {
        const loom_tensor *T = &p->tensors[t];
        for (int d = 0; d < T->order; d++)
            sb_printf(b, "    const int64_t %s_d%d = loom_t[%d].dims[%d];\n", T->name, d, t, d);
        sb_printf(b, "    const int64_t %s_nnz = loom_t[%d].nnz;\n", T->name, t);
        sb_printf(b, "    (void)%s_nnz;\n", T->name);
    }
    /* ABI buffers */
    for (int i = 0; i < f->nbufs; i++) {
        const lir_buffer *bu = &f->bufs[i];
        switch (bu->kind) {
        case LIR_BUF_VALS:
            sb_printf(b, "    %sfloat *restrict %s = loom_t[%d].vals;\n", bu->written ? "" : "const ", bu->name,
                      bu->tensor);
            break;
        case LIR_BUF_POS:
            sb_printf(b, "    const int32_t *restrict %s = loom_t[%d].pos[%d];\n", bu->name, bu->tensor, bu->level);
            break;
        case LIR_BUF_CRD:
            sb_printf(b, "    const int32_t *restrict %s = loom_t[%d].crd[%d];\n", bu->name, bu->tensor, bu->level);
            break;
        case LIR_BUF_TEMP:
        case LIR_BUF_PARTIAL:
        case LIR_BUF_LOCAL: break;
        }
    }
    /* temporaries */
    int ntemp = 0;
    for (int i = 0; i < f->nbufs; i++) {
        const lir_buffer *bu = &f->bufs[i];
        if (bu->kind != LIR_BUF_TEMP && bu->kind != LIR_BUF_PARTIAL)
            continue;
        /* on a cache line, as the dataset's arrays (runtime/data/dataset.h
           LOOM_DATA_ALIGN); aligned_alloc wants a multiple of the alignment:
           the size plus one float (as before), rounded up */
        sb_printf(b, "    float *restrict %s = aligned_alloc(64, (sizeof(float) * (size_t)(", bu->name);
        expr(b, f, bu->size);
        sb_printf(b, ") + 4 + 63) / 64 * 64);\n");
        ntemp++;
    }
    if (ntemp) {
        sb_printf(b, "    if (");
        int k = 0;
        for (int i = 0; i < f->nbufs; i++)
            if (f->bufs[i].kind == LIR_BUF_TEMP || f->bufs[i].kind == LIR_BUF_PARTIAL)
                sb_printf(b, "%s!%s", k++ ? " || " : "", f->bufs[i].name);
        sb_printf(b, ") {\n");
        for (int i = 0; i < f->nbufs; i++)
            if (f->bufs[i].kind == LIR_BUF_TEMP || f->bufs[i].kind == LIR_BUF_PARTIAL)
                sb_printf(b, "        free(%s);\n", f->bufs[i].name);
        sb_printf(b, "        return 1;\n    }\n");
    }
    sb_printf(b, "\n");
    stmt(b, f, f->body, 1);
    sb_printf(b, "\n");
    for (int i = 0; i < f->nbufs; i++)
        if (f->bufs[i].kind == LIR_BUF_TEMP || f->bufs[i].kind == LIR_BUF_PARTIAL)
            sb_printf(b, "    free(%s);\n", f->bufs[i].name);
    sb_printf(b, "    return 0;\n}\n");
}

loom_status loom_codegen_c(const lir_func *f, const char *entry, char **out, loom_error *err)
{
    return loom_codegen_c_batch(&f, 1, entry ? &entry : NULL, out, err);
}

loom_status loom_codegen_c_batch(const lir_func *const *fs, int n, const char *const *entries, char **out,
                                 loom_error *err)
{
    sbuf b = {{0}, -1, NULL, 0};
    *out = NULL;
    if (n < 1)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "no kernel to generate");
    int streams = 0, trees = 0;
    for (int k = 0; k < n; k++) {
        streams |= func_has_stream(fs[k]);
        trees |= has_tree(fs[k]->body);
    }
    b.streams = streams;
    prelude(&b, fs[0]->prog, streams, trees);
    for (int k = 0; k < n; k++) {
        function(&b, fs[k], entries ? entries[k] : "loom_kernel");
        sb_printf(&b, "\n");
    }
    if (b.s.oom) {
        free(b.s.s);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory generating C");
    }
    *out = b.s.s;
    return LOOM_OK;
}
