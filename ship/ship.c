/* Shipping a tuned kernel as a named C library (ship.h). */
#include "ship.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../dsl/ir/util.h"
#include "../runtime/lower/kernel_abi.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/machine/machine.h"
#include "../runtime/measure/build.h"

typedef loom_strbuf sbuf;
#define sb_printf loom_strbuf_printf

static const char *c_keywords[] = {"auto", "break", "case", "char", "const", "continue", "default", "do",
                                   "double", "else", "enum", "extern", "float", "for", "goto", "if", "inline",
                                   "int", "long", "register", "restrict", "return", "short", "signed", "sizeof",
                                   "static", "struct", "switch", "typedef", "union", "unsigned", "void",
                                   "volatile", "while", "main", "_Bool", "_Complex", "_Imaginary", NULL};

int loom_ship_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 1 || n > 40 || !strncmp(name, "loom_", 5))
        return 0;
    for (size_t k = 0; k < n; k++) {
        char c = name[k];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(k > 0 && c >= '0' && c <= '9'))
            return 0;
    }
    for (int k = 0; c_keywords[k]; k++)
        if (!strcmp(name, c_keywords[k]))
            return 0;
    return 1;
}

/* ---- facts about the program's tensors -------------------------------- */

static int64_t dim_of(const loom_program *p, int t, int d) { return p->sizes[p->tensors[t].dim_size[d]].value; }

static int is_sparse(const loom_tensor *T)
{
    for (int l = 0; l < T->format.nlevels; l++)
        if (T->format.level[l] != LOOM_LEVEL_DENSE)
            return 1;
    return 0;
}

/* A range pattern the entry point builds itself (causal, band inputs). */
static int is_range_input(const loom_tensor *T)
{
    return T->role == LOOM_TENSOR_INPUT && (T->format.kind == LOOM_FORMAT_CAUSAL || T->format.kind == LOOM_FORMAT_BAND);
}

/* The tensor's pattern comes from the caller's arrays (1), from another
 * tensor (0: temporaries and outputs sharing a pattern), or it is dense (-1). */
static int own_pattern(const loom_tensor *T, int t)
{
    if (!is_sparse(T))
        return -1;
    if (T->role == LOOM_TENSOR_INPUT || T->pattern_of == t || T->pattern_of < 0)
        return 1;
    return 0;
}

static const char *role_name(loom_tensor_role r)
{
    return r == LOOM_TENSOR_INPUT ? "input" : r == LOOM_TENSOR_OUTPUT ? "output" : "temporary";
}

static const char *level_name(loom_level_kind k)
{
    return k == LOOM_LEVEL_DENSE ? "dense" : k == LOOM_LEVEL_COMPRESSED ? "compressed" : "range";
}

/* The typed entry's arguments of tensor t, as "type name" pairs (or just
 * names when names_only), separated by ", ".  Returns how many. */
static int tensor_args(sbuf *b, const loom_program *p, int t, int names_only, int *first)
{
    const loom_tensor *T = &p->tensors[t];
    if (T->role == LOOM_TENSOR_TEMP || is_range_input(T))
        return 0;
    int n = 0;
    if (own_pattern(T, t) == 1)
        for (int l = 0; l < T->format.nlevels; l++)
            if (T->format.level[l] != LOOM_LEVEL_DENSE) {
                sb_printf(b, "%s%s%s_pos%d, %s%s_crd%d", *first ? "" : ", ", names_only ? "" : "const int32_t *",
                          T->name, l, names_only ? "" : "const int32_t *", T->name, l);
                *first = 0;
                n += 2;
            }
    if (!T->is_pattern) {
        sb_printf(b, "%s%s%s_vals", *first ? "" : ", ",
                  names_only ? "" : T->role == LOOM_TENSOR_OUTPUT ? "float *" : "const float *", T->name);
        *first = 0;
        n++;
    }
    return n;
}

/* The typed entry's parameter for size s: its name, or "size_NAME" when
 * the name is a C keyword or one of the entry's own locals. */
static const char *size_param(const loom_program *p, int s, char *buf, size_t n)
{
    static const char *locals[] = {"t", "own", "nown", "rc", "k", "d", "q", "nr", "nc", "tot", "lo", "hi",
                                   "pp", "cc", "i", "j", "l", "out", NULL};
    const char *nm = p->sizes[s].name;
    int clash = 0;
    for (int k = 0; locals[k] && !clash; k++)
        clash = !strcmp(nm, locals[k]);
    for (int k = 0; c_keywords[k] && !clash; k++)
        clash = !strcmp(nm, c_keywords[k]);
    snprintf(buf, n, "%s%s", clash ? "size_" : "", nm);
    return buf;
}

static void typed_prototype(sbuf *b, const loom_program *p, const char *name)
{
    sb_printf(b, "int %s(", name);
    int first = 1;
    char pn[64];
    for (int s = 0; s < p->nsizes; s++) {
        sb_printf(b, "%sint64_t %s", first ? "" : ", ", size_param(p, s, pn, sizeof pn));
        first = 0;
    }
    for (int t = 0; t < p->ntensors; t++)
        tensor_args(b, p, t, 0, &first);
    if (first)
        sb_printf(b, "void");
    sb_printf(b, ")");
}

/* ---- the signature (JSON) ---------------------------------------------- */

static void json_str(sbuf *b, const char *s)
{
    sb_printf(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            sb_printf(b, "\\%c", c);
        else if (c < 0x20)
            sb_printf(b, "\\u%04x", c);
        else
            sb_printf(b, "%c", c);
    }
    sb_printf(b, "\"");
}

static void signature(sbuf *b, const lir_func *f, const char *name)
{
    const loom_program *p = f->prog;
    sb_printf(b, "{\"name\": ");
    json_str(b, name);
    sb_printf(b, ", \"abi_version\": 1, \"workload\": ");
    json_str(b, p->path);
    sb_printf(b, ", \"workload_hash\": \"%016llx\", \"sizes\": [", (unsigned long long)loom_program_hash(p));
    for (int s = 0; s < p->nsizes; s++) {
        sb_printf(b, "%s{\"name\": \"%s\", \"value\": %lld, \"origin\": ", s ? ", " : "", p->sizes[s].name,
                  (long long)p->sizes[s].value);
        json_str(b, p->sizes[s].origin);
        sb_printf(b, "}");
    }
    sb_printf(b, "], \"tensors\": [");
    for (int t = 0; t < p->ntensors; t++) {
        const loom_tensor *T = &p->tensors[t];
        sb_printf(b, "%s{\"name\": \"%s\", \"index\": %d, \"role\": \"%s\", \"format\": \"%s\", \"pattern\": %s, "
                     "\"dims\": [",
                  t ? ", " : "", T->name, t, role_name(T->role), is_sparse(T) ? loom_format_name(T->format.kind) : "dense",
                  T->is_pattern ? "true" : "false");
        for (int d = 0; d < T->order; d++)
            sb_printf(b, "%s%lld", d ? ", " : "", (long long)dim_of(p, t, d));
        sb_printf(b, "], \"levels\": [");
        for (int l = 0; l < T->format.nlevels; l++)
            sb_printf(b, "%s\"%s\"", l ? ", " : "", level_name(T->format.level[l]));
        sb_printf(b, "], \"modes\": [");
        for (int l = 0; l < T->format.nlevels; l++)
            sb_printf(b, "%s%d", l ? ", " : "", T->format.mode[l]);
        sb_printf(b, "], \"nbatch\": %d, \"pattern_of\": %d, \"caller_pattern\": %s, \"args\": [", T->nbatch,
                  T->pattern_of, own_pattern(T, t) == 1 && !is_range_input(T) ? "true" : "false");
        sbuf a = {0};
        int first = 1;
        tensor_args(&a, p, t, 1, &first);
        if (a.s) { /* "A_pos1, A_crd1, A_vals" -> JSON strings */
            char *s = a.s, *tok;
            int k = 0;
            while ((tok = strsep(&s, ",")) != NULL) {
                while (*tok == ' ')
                    tok++;
                sb_printf(b, "%s\"%s\"", k++ ? ", " : "", tok);
            }
        }
        free(a.s);
        sb_printf(b, "]}");
    }
    sb_printf(b, "], \"allocates\": [");
    int k = 0;
    for (int i = 0; i < f->nbufs; i++)
        if (f->bufs[i].kind == LIR_BUF_TEMP || f->bufs[i].kind == LIR_BUF_PARTIAL)
            sb_printf(b, "%s\"%s\"", k++ ? ", " : "", f->bufs[i].name);
    sb_printf(b, "]}");
}

/* s as a C string literal's contents */
static void c_escape(sbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            sb_printf(b, "\\%c", *s);
        else
            sb_printf(b, "%c", *s);
    }
}

/* ---- the C file's entry points ------------------------------------------ */

static void abi_entry(sbuf *b, const loom_program *p, const char *name)
{
    int nt = p->ntensors;
    sb_printf(b, "static const int32_t %s__order[%d] = {", name, nt);
    for (int t = 0; t < nt; t++)
        sb_printf(b, "%s%d", t ? ", " : "", p->tensors[t].order);
    sb_printf(b, "};\nstatic const int64_t %s__dims[%d][LOOM_ABI_MAX_ORDER] = {", name, nt);
    for (int t = 0; t < nt; t++) {
        sb_printf(b, "%s{", t ? ", " : "");
        for (int d = 0; d < LOOM_ABI_MAX_ORDER; d++)
            sb_printf(b, "%s%lld", d ? ", " : "", d < p->tensors[t].order ? (long long)dim_of(p, t, d) : 0LL);
        sb_printf(b, "}");
    }
    sb_printf(b, "};\n\n");
    sb_printf(b, "LOOM_SHIP_EXPORT int %s_abi(loom_tensor_abi *t)\n{\n", name);
    sb_printf(b, "    if (!t)\n        return 3;\n");
    sb_printf(b, "    /* the kernel is specialised to these sizes (split factors, trip counts) */\n");
    sb_printf(b, "    for (int k = 0; k < %d; k++) {\n", nt);
    sb_printf(b, "        if (t[k].order != %s__order[k])\n            return 2;\n", name);
    sb_printf(b, "        for (int d = 0; d < t[k].order; d++)\n");
    sb_printf(b, "            if (t[k].dims[d] != %s__dims[k][d])\n                return 2;\n    }\n", name);
    for (int t = 0; t < nt; t++) {
        const loom_tensor *T = &p->tensors[t];
        for (int l = 0; l < T->format.nlevels; l++)
            if (T->format.level[l] != LOOM_LEVEL_DENSE)
                sb_printf(b, "    if (!t[%d].pos[%d] || !t[%d].crd[%d])\n        return 3;\n", t, l, t, l);
        if (T->role != LOOM_TENSOR_TEMP && !T->is_pattern)
            sb_printf(b, "    if (!t[%d].vals)\n        return 3;\n", t);
    }
    sb_printf(b, "    return %s__kernel(t) ? 1 : 0;\n}\n\n", name);
}

/* Fill t[k] of the typed entry from the caller's arrays (inputs, outputs). */
static void fill_declared(sbuf *b, const loom_program *p, int t)
{
    const loom_tensor *T = &p->tensors[t];
    const loom_format *F = &T->format;
    if (is_range_input(T)) { /* build the pattern: it depends on the (fixed) sizes only */
        sb_printf(b, "    {\n        const int64_t nr = %lld, nc = %lld;\n        int64_t tot = 0, lo, hi;\n",
                  (long long)dim_of(p, t, F->mode[0]), (long long)dim_of(p, t, F->mode[1]));
        if (F->kind == LOOM_FORMAT_CAUSAL)
            sb_printf(b, "#define LOOM_SHIP_RANGE(i) (lo = 0, hi = (i) + 1 < nc ? (i) + 1 : nc)\n");
        else
            sb_printf(b, "#define LOOM_SHIP_RANGE(i) (lo = (i) - %d > 0 ? (i) - %d : 0, hi = (i) + %d + 1 < nc ? (i) + %d + 1 : nc)\n",
                      F->band_width, F->band_width, F->band_width, F->band_width);
        sb_printf(b, "        for (int64_t i = 0; i < nr; i++) {\n            LOOM_SHIP_RANGE(i);\n"
                     "            tot += hi > lo ? hi - lo : 0;\n        }\n");
        sb_printf(b, "        int32_t *pp = malloc(sizeof(int32_t) * (size_t)(nr + 1)), *cc = malloc(sizeof(int32_t) * "
                     "(size_t)(tot + 1));\n");
        sb_printf(b, "        own[nown++] = pp;\n        own[nown++] = cc;\n");
        sb_printf(b, "        if (!pp || !cc) {\n            rc = 1;\n            goto out;\n        }\n");
        sb_printf(b, "        int64_t q = 0;\n        pp[0] = 0;\n        for (int64_t i = 0; i < nr; i++) {\n"
                     "            LOOM_SHIP_RANGE(i);\n            for (int64_t j = lo; j < hi; j++)\n"
                     "                cc[q++] = (int32_t)j;\n            pp[i + 1] = (int32_t)q;\n        }\n");
        sb_printf(b, "#undef LOOM_SHIP_RANGE\n        t[%d].pos[1] = pp;\n        t[%d].crd[1] = cc;\n"
                     "        t[%d].nnz = tot;\n    }\n", t, t, t);
        return;
    }
    if (own_pattern(T, t) == 1) {
        for (int l = 0; l < F->nlevels; l++)
            if (F->level[l] != LOOM_LEVEL_DENSE)
                sb_printf(b, "    t[%d].pos[%d] = (int32_t *)%s_pos%d;\n    t[%d].crd[%d] = (int32_t *)%s_crd%d;\n", t,
                          l, T->name, l, t, l, T->name, l);
        /* stored entries: walk the levels from the root (positions of the last level) */
        sb_printf(b, "    {\n        int64_t q = 1;\n");
        for (int l = 0; l < F->nlevels; l++)
            if (F->level[l] == LOOM_LEVEL_DENSE)
                sb_printf(b, "        q *= %lld;\n", (long long)dim_of(p, t, F->mode[l]));
            else
                sb_printf(b, "        q = t[%d].pos[%d][q];\n", t, l);
        sb_printf(b, "        t[%d].nnz = q;\n    }\n", t);
    } else if (own_pattern(T, t) < 0) {
        int64_t n = 1;
        for (int d = 0; d < T->order; d++)
            n *= dim_of(p, t, d);
        sb_printf(b, "    t[%d].nnz = %lld;\n", t, (long long)n);
    }
    if (!T->is_pattern && T->role != LOOM_TENSOR_TEMP)
        sb_printf(b, "    t[%d].vals = (float *)%s_vals;\n", t, T->name);
}

/* Temporaries and outputs sharing another tensor's pattern (after it). */
static void fill_shared(sbuf *b, const loom_program *p, int t)
{
    const loom_tensor *T = &p->tensors[t];
    int s = T->pattern_of;
    int64_t batch = 1;
    for (int d = 0; d < T->nbatch - p->tensors[s].nbatch; d++)
        batch *= dim_of(p, t, d);
    sb_printf(b, "    for (int l = 0; l < LOOM_ABI_MAX_ORDER; l++) {\n        t[%d].pos[l] = t[%d].pos[l];\n"
                 "        t[%d].crd[l] = t[%d].crd[l];\n    }\n    t[%d].nnz = t[%d].nnz * %lld;\n",
              t, s, t, s, t, s, (long long)batch);
    if (T->role == LOOM_TENSOR_OUTPUT && !T->is_pattern)
        sb_printf(b, "    t[%d].vals = %s_vals;\n", t, T->name);
}

static void typed_entry(sbuf *b, const loom_program *p, const char *name)
{
    int nt = p->ntensors;
    sb_printf(b, "LOOM_SHIP_EXPORT ");
    typed_prototype(b, p, name);
    sb_printf(b, "\n{\n");
    if (p->nsizes) {
        sb_printf(b, "    if (");
        char pn[64];
        for (int s = 0; s < p->nsizes; s++)
            sb_printf(b, "%s%s != %lld", s ? " || " : "", size_param(p, s, pn, sizeof pn),
                      (long long)p->sizes[s].value);
        sb_printf(b, ")\n        return 2;\n");
    }
    sbuf names = {0};
    int first = 1;
    for (int t = 0; t < nt; t++)
        tensor_args(&names, p, t, 1, &first);
    if (names.s) {
        sb_printf(b, "    if (");
        char *s = names.s, *tok;
        int k = 0;
        while ((tok = strsep(&s, ",")) != NULL) {
            while (*tok == ' ')
                tok++;
            sb_printf(b, "%s!%s", k++ ? " || " : "", tok);
        }
        sb_printf(b, ")\n        return 3;\n");
    }
    free(names.s);
    sb_printf(b, "    loom_tensor_abi t[%d];\n    void *own[%d];\n    int nown = 0, rc = 0;\n", nt, 2 * nt + 1);
    sb_printf(b, "    memset(t, 0, sizeof t);\n    for (int k = 0; k < %d; k++) {\n        t[k].order = %s__order[k];\n"
                 "        for (int d = 0; d < LOOM_ABI_MAX_ORDER; d++)\n            t[k].dims[d] = %s__dims[k][d];\n    }\n",
              nt, name, name);
    /* declared tensors and dense temporaries first, then shared patterns in dependency order */
    int done[LOOM_MAX_TENSORS] = {0};
    for (int t = 0; t < nt; t++)
        if (own_pattern(&p->tensors[t], t) != 0) {
            fill_declared(b, p, t);
            done[t] = 1;
        }
    for (int pass = 0; pass < nt; pass++)
        for (int t = 0; t < nt; t++) {
            int s = p->tensors[t].pattern_of;
            if (!done[t] && s >= 0 && s < nt && done[s]) {
                fill_shared(b, p, t);
                done[t] = 1;
            }
        }
    sb_printf(b, "    rc = %s_abi(t);\n", name);
    sb_printf(b, "    goto out;\nout:\n    for (int k = 0; k < nown; k++)\n        free(own[k]);\n    return rc;\n}\n");
}

static void sig_decl(sbuf *b, const char *name, const char *sig)
{
    sb_printf(b, "LOOM_SHIP_EXPORT const char %s_signature[] = \"", name);
    c_escape(b, sig);
    sb_printf(b, "\";\n\n");
}
/* ---- the header -------------------------------------------------------- */

static void dims_text(sbuf *b, const loom_program *p, int t)
{
    const loom_tensor *T = &p->tensors[t];
    for (int d = 0; d < T->order; d++)
        sb_printf(b, "%s%lld", d ? " x " : "", (long long)dim_of(p, t, d));
    sb_printf(b, " (");
    for (int d = 0; d < T->order; d++)
        sb_printf(b, "%s%s", d ? " x " : "", p->sizes[T->dim_size[d]].name);
    sb_printf(b, ")");
}

static void header_tensor(sbuf *b, const loom_program *p, int t)
{
    const loom_tensor *T = &p->tensors[t];
    const loom_format *F = &T->format;
    int sp = is_sparse(T);
    sb_printf(b, " *   %s: %s, %s, ", T->name, role_name(T->role), sp ? loom_format_name(F->kind) : "dense row-major");
    dims_text(b, p, t);
    if (T->role == LOOM_TENSOR_TEMP) {
        sb_printf(b, "; allocated by the kernel, no argument\n");
        return;
    }
    sb_printf(b, "; %s\n", T->role == LOOM_TENSOR_INPUT ? "read only" : "its values are written (every stored entry)");
    if (is_range_input(T)) {
        sb_printf(b, " *       no argument: a %s pattern (value 1 where stored), built by the typed entry\n",
                  loom_format_name(F->kind));
        return;
    }
    if (own_pattern(T, t) == 1) {
        int64_t parents = 1;
        int known = 1;
        for (int l = 0; l < F->nlevels; l++) {
            if (F->level[l] == LOOM_LEVEL_DENSE) {
                parents *= dim_of(p, t, F->mode[l]);
                continue;
            }
            if (known)
                sb_printf(b, " *       %s_pos%d: int32[%lld], level %d (dimension %d) positions%s\n", T->name, l,
                          (long long)parents + 1, l, F->mode[l], T->role == LOOM_TENSOR_OUTPUT ? " (read)" : "");
            else
                sb_printf(b, " *       %s_pos%d: int32[stored entries of level %d + 1], level %d positions\n", T->name,
                          l, l - 1, l);
            sb_printf(b, " *       %s_crd%d: int32[%s_pos%d[last]], coordinates of dimension %d, ascending within "
                         "each parent, no duplicates%s\n",
                      T->name, l, T->name, l, F->mode[l], T->role == LOOM_TENSOR_OUTPUT ? " (read)" : "");
            known = 0;
        }
        if (!T->is_pattern)
            sb_printf(b, " *       %s_vals: float[stored entries], in position order\n", T->name);
    } else if (own_pattern(T, t) == 0) {
        sb_printf(b, " *       %s_vals: float[stored entries of %s's pattern], in %s's position order\n", T->name,
                  p->tensors[T->pattern_of].name, p->tensors[T->pattern_of].name);
    } else {
        int64_t n = 1;
        for (int d = 0; d < T->order; d++)
            n *= dim_of(p, t, d);
        sb_printf(b, " *       %s_vals: float[%lld], row-major\n", T->name, (long long)n);
    }
}

static void header(sbuf *b, const lir_func *f, const char *name, const char *origin)
{
    const loom_program *p = f->prog;
    sb_printf(b, "/* %s.h -- a kernel tuned by loom (issue 17; ship/ship.h).\n", name);
    if (origin)
        sb_printf(b, " * %s\n", origin);
    sb_printf(b, " * Workload %s, hash %016llx.  Built for this machine (-march=native) by\n"
                 " *     cc %s\n"
                 " *        %s.c -o lib%s.so -lm\n"
                 " * Link a program with -L. -l%s (libgomp comes with it: OpenMP is a dependency).\n *\n",
              p->path, (unsigned long long)loom_program_hash(p), loom_ship_cflags(), name, name, name);
    sb_printf(b, " * Sizes: fixed; the schedule is specialised to them (split factors and trip counts\n"
                 " * are baked in), and both entries return 2 when one differs:\n");
    for (int s = 0; s < p->nsizes; s++)
        sb_printf(b, " *   %s = %lld  (%s)\n", p->sizes[s].name, (long long)p->sizes[s].value, p->sizes[s].origin);
    sb_printf(b, " * From the data: the sparse patterns (pos, crd) and so the number of stored entries.\n *\n");
    sb_printf(b, " * Tensors, in the order of the typed entry's arguments (after the sizes) and of\n"
                 " * the ABI entry's t[] (the program's tensor table; temporaries last):\n");
    for (int t = 0; t < p->ntensors; t++)
        header_tensor(b, p, t);
    int k = 0;
    for (int i = 0; i < f->nbufs; i++)
        if (f->bufs[i].kind == LIR_BUF_TEMP || f->bufs[i].kind == LIR_BUF_PARTIAL)
            sb_printf(b, "%s%s", k++ ? ", " : " * Temporaries: each call allocates (aligned_alloc, on 64 bytes) and frees ", f->bufs[i].name);
    sb_printf(b, "%s", k ? ".\n" : " * Temporaries: none allocated.\n");
    sb_printf(b, " *\n * Returns 0 done, 1 out of memory (a temporary), 2 a size differs from the fixed ones,\n"
                 " * 3 a required array is NULL.  Input patterns are trusted (not checked): pos ascending,\n"
                 " * crd within its dimension.\n"
                 " * Thread-safety: no global state; calls on different outputs may run concurrently.\n"
                 " * Each call runs OpenMP parallel loops (OMP_NUM_THREADS threads; nested calls from\n"
                 " * several threads each start a team).\n */\n");
    sb_printf(b, "#ifndef %s_LOOM_KERNEL_H\n#define %s_LOOM_KERNEL_H\n\n", name, name);
    sb_printf(b, "%s\n", loom_kernel_abi_text);
    sb_printf(b, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n#define %s_NTENSORS %d\n\n", name, p->ntensors);
    sb_printf(b, "/* The typed entry: sizes, then the arrays above. */\n");
    typed_prototype(b, p, name);
    sb_printf(b, ";\n\n/* The generic entry: t[%d] in tensor-table order, dims filled (runtime/lower/kernel_abi.h). */\n"
                 "int %s_abi(loom_tensor_abi *t);\n\n"
                 "/* The facts above as JSON (name, sizes, tensors with role, format, dims, levels, args). */\n"
                 "extern const char %s_signature[];\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n",
              p->ntensors, name, name);
}

/* ---- sources, files, build --------------------------------------------- */

/* The kernel's C with its entry point made file-local: a static prototype
 * before the definition, and the ABI-version constant renamed per library. */
static char *kernel_source(const lir_func *f, const char *name, loom_error *err)
{
    char entry[64], *src = NULL;
    snprintf(entry, sizeof entry, "%s__kernel", name);
    if (loom_codegen_c(f, entry, &src, err))
        return NULL;
    sbuf b = {0};
    char def[96];
    snprintf(def, sizeof def, "\nint %s(loom_tensor_abi *loom_t)", entry);
    const char *at = strstr(src, def);
    const char *ver = "\nconst int loom_kernel_abi_version = LOOM_ABI_VERSION;";
    const char *vat = strstr(src, ver);
    const char *cur = src;
    if (vat && (!at || vat < at)) {
        loom_strbuf_put(&b, cur, (size_t)(vat - cur));
        sb_printf(&b, "\nLOOM_SHIP_EXPORT const int %s_abi_version = LOOM_ABI_VERSION;", name);
        cur = vat + strlen(ver);
    }
    if (at) {
        loom_strbuf_put(&b, cur, (size_t)(at - cur) + 1);
        sb_printf(&b, "static int %s(loom_tensor_abi *loom_t);\n", entry);
        cur = at + 1;
    }
    loom_strbuf_puts(&b, cur);
    free(src);
    if (b.oom) {
        free(b.s);
        loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory generating C");
        return NULL;
    }
    return b.s;
}

loom_status loom_ship_sources(const lir_func *f, const char *name, const char *origin, char **c_src, char **h_src,
                              char **sig_json, loom_error *err)
{
    *c_src = *h_src = *sig_json = NULL;
    if (!loom_ship_name_ok(name))
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "'%s' cannot name a kernel library: use a C identifier of 1..40 characters, not a C "
                              "keyword, not starting with loom_",
                              name ? name : "(null)");
    const loom_program *p = f->prog;
    for (int s = 0; s < p->nsizes; s++)
        if (!p->sizes[s].bound)
            return loom_error_set(err, LOOM_ERR_INVALID, p->path, p->sizes[s].line, 0,
                                  "size %s is not bound: bind the program before shipping", p->sizes[s].name);
    sbuf sig = {0}, c = {0}, h = {0};
    signature(&sig, f, name);
    char *kern = sig.oom ? NULL : kernel_source(f, name, err);
    if (!kern) {
        free(sig.s);
        return err->status ? err->status : loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    sb_printf(&c, "/* %s.c -- a kernel tuned by loom; its header %s.h documents the entry points.\n", name, name);
    if (origin)
        sb_printf(&c, " * %s\n", origin);
    sb_printf(&c, " * Build: cc %s %s.c -o lib%s.so "
                  "-lm */\n#if defined(__GNUC__)\n#define LOOM_SHIP_EXPORT __attribute__((visibility(\"default\")))\n"
                  "#else\n#define LOOM_SHIP_EXPORT\n#endif\n",
              loom_ship_cflags(), name, name);
    loom_strbuf_puts(&c, kern);
    free(kern);
    sb_printf(&c, "\n/* ---- the shipped entry points (ship/ship.c) ---- */\n\n");
    sig_decl(&c, name, sig.s ? sig.s : "");
    abi_entry(&c, p, name);
    typed_entry(&c, p, name);
    header(&h, f, name, origin);
    if (sig.oom || c.oom || h.oom) {
        free(sig.s);
        free(c.s);
        free(h.s);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory generating the kernel library");
    }
    *c_src = c.s;
    *h_src = h.s;
    *sig_json = sig.s;
    return LOOM_OK;
}

loom_status loom_ship_write_text(const char *path, const char *text, loom_error *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *fp = fopen(tmp, "w");
    if (!fp)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot write: %s", strerror(errno));
    int ok = fputs(text, fp) >= 0;
    ok = (fclose(fp) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot write: %s", strerror(e));
    }
    return LOOM_OK;
}

const char *loom_ship_cflags(void)
{
    static char flags[512];
    loom_limits host = loom_target_cpu_limits(); /* the CPU the kernel runs on; honours LOOM_HOST_ISA */
    snprintf(flags, sizeof flags, "%s -fvisibility=hidden", loom_build_default_cflags(host.vector_lanes * 32));
    return flags;
}

/* cc ... -o so c_paths... -lm, its output captured into err on failure. */
loom_status loom_ship_build(const char *const *c_paths, int n_c, const char *so_path, loom_error *err)
{
    const char *cc = getenv("CC");
    if (!cc || !*cc || strchr(cc, ' '))
        cc = "cc";
    if (n_c < 1 || n_c > 256)
        return loom_error_set(err, LOOM_ERR_INVALID, so_path, 0, 0, "%d C files to build (1..256)", n_c);
    const char *c_path = c_paths[0];
    /* the flags loom measures with (loom_ship_cflags): -std=c11 alone forbids
     * contracting a*b+c into an FMA (25% slower dense kernels), GCC's tuning
     * prefers 256-bit vectors without -mprefer-vector-width=512 */
    char flags[512];
    snprintf(flags, sizeof flags, "%s", loom_ship_cflags());
    char *argv[256 + 64] = {(char *)cc};
    int na = 1;
    char *save = NULL;
    for (char *tok = strtok_r(flags, " ", &save); tok && na < 48; tok = strtok_r(NULL, " ", &save))
        argv[na++] = tok;
    argv[na++] = "-o";
    argv[na++] = (char *)so_path;
    for (int k = 0; k < n_c; k++)
        argv[na++] = (char *)c_paths[k];
    argv[na++] = "-lm";
    argv[na] = NULL;
    int fd[2];
    if (pipe(fd))
        return loom_error_set(err, LOOM_ERR_BUILD, c_path, 0, 0, "cannot start the compiler: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return loom_error_set(err, LOOM_ERR_BUILD, c_path, 0, 0, "cannot start the compiler: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        execvp(cc, argv);
        _exit(127);
    }
    close(fd[1]);
    char out[1024];
    size_t n = 0;
    ssize_t r;
    char sink[512];
    while ((r = read(fd[0], n < sizeof out - 1 ? out + n : sink, n < sizeof out - 1 ? sizeof out - 1 - n : sizeof sink)) > 0
           || (r < 0 && errno == EINTR))
        if (r > 0 && n < sizeof out - 1)
            n += (size_t)r;
    out[n] = 0;
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        return loom_error_set(err, LOOM_ERR_BUILD, c_path, 0, 0, "%s failed (%s %d): %s", cc,
                              WIFEXITED(status) ? "exit status" : "signal",
                              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                              n ? out : "no output; is a C compiler with OpenMP installed?");
    return LOOM_OK;
}

loom_status loom_ship_write(const lir_func *f, const char *name, const char *dir, const char *origin, int build,
                            loom_error *err)
{
    char *c = NULL, *h = NULL, *sig = NULL;
    loom_status st = loom_ship_sources(f, name, origin, &c, &h, &sig, err);
    if (st)
        return st;
    char cp[4200], hp[4200], sp[4200];
    snprintf(cp, sizeof cp, "%s/%s.c", dir, name);
    snprintf(hp, sizeof hp, "%s/%s.h", dir, name);
    snprintf(sp, sizeof sp, "%s/lib%s.so", dir, name);
    const char *cps[1] = {cp};
    if (!(st = loom_ship_write_text(cp, c, err)) && !(st = loom_ship_write_text(hp, h, err)) && build)
        st = loom_ship_build(cps, 1, sp, err);
    free(c);
    free(h);
    free(sig);
    return st;
}
