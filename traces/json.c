/* Traces as JSON (trace.h; DESIGN.md "Traces"; MetaSchedule's
 * Trace::AsJSON / ApplyJSONToSchedule).  Writing is a small hand emitter (so
 * the spacing is DESIGN.md's and stable); reading uses cJSON and checks the
 * document completely, naming the JSON path of the first problem.
 *
 * An instruction is [kind, inputs, attrs, outputs], each part as its kind's
 * row (dsl/schedule/inst.h) says: inputs RV names, the arguments that may be
 * constants as integers (then kept in attrs); attrs one element per attr
 * field, by its codec; outputs the next RV names.  Nothing here knows a kind
 * by name.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "../dsl/ir/util.h"

#define JSON_MAX_INT 9007199254740992.0 /* 2^53: integers beyond are not exact in JSON */

/* ---- writing ----------------------------------------------------------- */

/* The shared growable buffer (dsl/ir/util.h) under this file's short names. */
typedef loom_strbuf sbuf;
#define put loom_strbuf_put
#define puts_ loom_strbuf_puts
#define putf loom_strbuf_printf

static void put_str(sbuf *b, const char *s)
{
    puts_(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"')
            puts_(b, "\\\"");
        else if (c == '\\')
            puts_(b, "\\\\");
        else if (c < 0x20)
            putf(b, "\\u%04x", c);
        else
            put(b, (const char *)&c, 1);
    }
    puts_(b, "\"");
}

/* Shortest text that reads back as the same double. */
static void put_double(sbuf *b, double d)
{
    if (!isfinite(d)) {
        puts_(b, "null");
        return;
    }
    char s[48];
    puts_(b, loom_format_double(s, sizeof s, d));
}

static void put_rv(sbuf *b, const loom_trace *t, int rv)
{
    char nm[24];
    put_str(b, loom__trace_rv_name(t, rv, nm, sizeof nm));
}

static void put_i64_list(sbuf *b, const int64_t *v, int n)
{
    for (int k = 0; k < n; k++)
        putf(b, "%s%" PRId64, k ? ", " : "", v[k]);
}

/* The attr fields of an instruction of kind K, comma-separated. */
static void put_attrs(sbuf *b, const loom_inst_kind *K, const loom_inst *in)
{
    int ni = 0, nf = 0, na = in->nattrs < 0 ? 0 : in->nattrs > LOOM_MAX_INST_IO ? LOOM_MAX_INST_IO : in->nattrs;
    for (int f = 0; f < LOOM_INST_MAX_ATTRS && K->attrs[f].codec != LOOM_ATTR_END; f++) {
        if (f)
            puts_(b, ", ");
        switch (K->attrs[f].codec) {
        case LOOM_ATTR_NAME:
        case LOOM_ATTR_KEY: put_str(b, in->sattr); break;
        case LOOM_ATTR_INT: putf(b, "%" PRId64, ni < LOOM_MAX_INST_IO ? in->attrs[ni] : 0), ni++; break;
        case LOOM_ATTR_REAL: put_double(b, nf < LOOM_MAX_INST_IO ? in->fattrs[nf] : 0), nf++; break;
        case LOOM_ATTR_INT_LIST:
            puts_(b, "[");
            put_i64_list(b, in->attrs, na);
            puts_(b, "]");
            break;
        case LOOM_ATTR_PROB_LIST:
            puts_(b, "[");
            for (int k = 0; k < na; k++) {
                if (k)
                    puts_(b, ", ");
                put_double(b, in->fattrs[k]);
            }
            puts_(b, "]");
            break;
        default: break;
        }
    }
}

static void put_inst(sbuf *b, const loom_trace *t, const loom_inst *in)
{
    const loom_inst_kind *K = loom_inst_kind_at(in->kind);
    puts_(b, "[");
    put_str(b, K ? K->name : "?");
    /* inputs, then the constant arguments (kept in attrs) */
    puts_(b, ", [");
    for (int k = 0; k < in->ninputs; k++) {
        if (k)
            puts_(b, ", ");
        put_rv(b, t, in->inputs[k]);
    }
    if (K && K->consts.from > 0 && in->ninputs == K->consts.from)
        for (int k = 0; k < in->nattrs; k++)
            putf(b, ", %" PRId64, in->attrs[k]);
    puts_(b, "], [");
    if (K)
        put_attrs(b, K, in);
    /* outputs */
    puts_(b, "], [");
    for (int k = 0; k < in->noutputs; k++) {
        if (k)
            puts_(b, ", ");
        put_rv(b, t, in->outputs[k]);
    }
    puts_(b, "]]");
}

loom_status loom_trace_to_json(const loom_trace *t, const loom_program *prog, char **out)
{
    *out = NULL;
    if (t->rec_status)
        return t->rec_status;
    uint64_t h = prog ? loom_program_hash(prog) : t->has_workload ? t->workload : 0;
    sbuf b = {0};
    putf(&b, "{\"format\": \"loom-trace\", \"version\": 1, \"workload\": \"%016" PRIx64 "\", \"insts\": [", h);
    for (int i = 0; i < t->ninsts; i++) {
        if (i)
            puts_(&b, ", ");
        put_inst(&b, t, &t->insts[i]);
    }
    puts_(&b, "], \"decisions\": [");
    int first = 1;
    for (int i = 0; i < t->ninsts; i++) {
        const loom_inst *in = &t->insts[i];
        const loom_inst_kind *K = loom_inst_kind_at(in->kind);
        if (!K || K->decision == LOOM_DECISION_NONE || in->ndecision <= 0)
            continue;
        putf(&b, "%s[%d, ", first ? "" : ", ", i);
        first = 0;
        if (K->decision == LOOM_DECISION_PER_OUTPUT) {
            puts_(&b, "[");
            put_i64_list(&b, in->decision, in->ndecision);
            puts_(&b, "]]");
        } else
            putf(&b, "%" PRId64 "]", in->decision[0]);
    }
    puts_(&b, "]}");
    if (b.oom) {
        free(b.s);
        return LOOM_ERR_NOMEM;
    }
    *out = b.s;
    return LOOM_OK;
}

/* ---- reading ----------------------------------------------------------- */

typedef struct rd {
    const char *src;  /* file name for messages */
    loom_error *err;
    loom_trace *t;
} rd;

static loom_status bad(rd *r, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static loom_status bad(rd *r, const char *path, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return loom_error_set(r->err, LOOM_ERR_DATA, r->src, 0, 0, "%s: %s", path, msg);
}

static const char *jtype(const cJSON *j)
{
    if (!j)
        return "nothing";
    if (cJSON_IsString(j))
        return "a string";
    if (cJSON_IsNumber(j))
        return "a number";
    if (cJSON_IsArray(j))
        return "an array";
    if (cJSON_IsObject(j))
        return "an object";
    if (cJSON_IsBool(j))
        return "a boolean";
    if (cJSON_IsNull(j))
        return "null";
    return "an invalid value";
}

/* 1 if j is an integer that JSON represents exactly. */
static int jint(const cJSON *j, int64_t *v)
{
    if (!cJSON_IsNumber(j))
        return 0;
    double d = j->valuedouble;
    if (!isfinite(d) || d != floor(d) || fabs(d) > JSON_MAX_INT)
        return 0;
    *v = (int64_t)d;
    return 1;
}

static loom_status want_array(rd *r, const cJSON *j, const char *path, int min, int max, int *n)
{
    if (!cJSON_IsArray(j))
        return bad(r, path, "expected an array, got %s", jtype(j));
    *n = cJSON_GetArraySize(j);
    if (*n < min || *n > max) {
        if (min == max)
            return bad(r, path, "expected an array of %d elements, got %d", min, *n);
        return bad(r, path, "expected an array of %d..%d elements, got %d", min, max, *n);
    }
    return LOOM_OK;
}

static loom_status want_int(rd *r, const cJSON *j, const char *path, int64_t lo, int64_t hi, const char *what,
                            int64_t *v)
{
    if (!jint(j, v))
        return bad(r, path, "%s must be an integer, got %s", what, jtype(j));
    if (*v < lo || *v > hi)
        return bad(r, path, "%s %" PRId64 " is out of range %" PRId64 "..%" PRId64, what, *v, lo, hi);
    return LOOM_OK;
}

static loom_status want_name(rd *r, const cJSON *j, const char *path, size_t maxlen, const char *what, char *out)
{
    if (!cJSON_IsString(j))
        return bad(r, path, "%s must be a string, got %s", what, jtype(j));
    size_t n = strlen(j->valuestring);
    if (n == 0 || n > maxlen)
        return bad(r, path, "%s must have 1..%zu characters, got %zu", what, maxlen, n);
    memcpy(out, j->valuestring, n + 1);
    return LOOM_OK;
}

static const char *arg_name(int mask)
{
    switch (mask) {
    case LOOM_ARG_BLOCK: return "a block";
    case LOOM_ARG_LOOP: return "a loop";
    case LOOM_ARG_EXPR: return "an integer";
    case LOOM_ARG_BLOCK | LOOM_ARG_LOOP: return "a block or a loop";
    default: return "an RV";
    }
}

static const char *rv_kind_words(loom_rv_kind k)
{
    return k == LOOM_RV_BLOCK ? "block" : k == LOOM_RV_LOOP ? "loop" : "integer";
}

static char letter(loom_rv_kind k)
{
    return k == LOOM_RV_BLOCK ? 'b' : k == LOOM_RV_LOOP ? 'l' : 'v';
}

/* Parse "b12" / "l3" / "v4": letter and index; 0 if not an RV name. */
static int parse_rv_name(const char *s, char *let, int *idx)
{
    if ((s[0] != 'b' && s[0] != 'l' && s[0] != 'v') || s[1] < '0' || s[1] > '9' || (s[1] == '0' && s[2]))
        return 0;
    long v = 0;
    for (const char *p = s + 1; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000000)
            return 0;
        v = v * 10 + (*p - '0');
    }
    *let = s[0];
    *idx = (int)v;
    return 1;
}

/* An input RV name: defined, its letter agreeing with its kind, and of a
 * kind allowed by `mask`. */
static loom_status want_rv(rd *r, const cJSON *j, const char *path, int mask, const char *kind, int pos, int *rv)
{
    char let;
    int idx;
    if (!cJSON_IsString(j))
        return bad(r, path, "expected an RV name, got %s", jtype(j));
    if (!parse_rv_name(j->valuestring, &let, &idx))
        return bad(r, path, "'%s' is not an RV name (b, l or v followed by the RV's index, e.g. 'l3')",
                   j->valuestring);
    if (idx >= r->t->nrvs)
        return bad(r, path, "RV '%s' used before it is defined", j->valuestring);
    loom_rv_kind k = r->t->rv_kinds[idx];
    if (let != letter(k))
        return bad(r, path, "'%s' names RV %d, which is a %s ('%c%d')", j->valuestring, idx, rv_kind_words(k),
                   letter(k), idx);
    if (!(mask & (1 << k)))
        return bad(r, path, "input %d of %s must be %s, got %s RV '%s'", pos, kind, arg_name(mask),
                   rv_kind_words(k), j->valuestring);
    *rv = idx;
    return LOOM_OK;
}

/* Levenshtein distance, for "did you mean". */
static int edit_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na > 40 || nb > 40)
        return 99;
    int d[41][41];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c)
                c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c)
                c = d[i][j - 1] + 1;
            d[i][j] = c;
        }
    return d[na][nb];
}

static loom_status unknown_kind(rd *r, const char *path, const char *name)
{
    int best = -1, bestd = 3;
    for (int k = 0; k < loom_inst_kind_count(); k++) {
        int d = edit_distance(name, loom_inst_kind_at(k)->name);
        if (d < bestd) {
            bestd = d;
            best = k;
        }
    }
    if (best >= 0)
        return bad(r, path, "unknown instruction kind '%s' (did you mean '%s'?)", name, loom_inst_kind_at(best)->name);
    char list[512] = "";
    for (int k = 0; k < loom_inst_kind_count(); k++) {
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%s", k ? ", " : "", loom_inst_kind_at(k)->name);
    }
    return bad(r, path, "unknown instruction kind '%s' (known: %s)", name, list);
}

/* A constant argument at $.insts[i][1][k] into in->attrs. */
static loom_status read_const(rd *r, const loom_inst_kind *K, const cJSON *x, const char *path, int k, int nconst,
                              loom_inst *in)
{
    const loom_const_args *C = &K->consts;
    int64_t v;
    if (!jint(x, &v))
        return bad(r, path, "a constant %s must be an integer, got %g", C->what, x->valuedouble);
    if (v < C->lo || v > C->hi)
        return bad(r, path, "a constant %s must be in %" PRId64 "..%" PRId64 "%s, got %" PRId64, C->what, C->lo, C->hi,
                   C->note ? C->note : "", v);
    if (k > C->from && nconst == 0)
        return bad(r, path, "%s %ss must be all integer RVs or all constants, not a mix", K->name, C->what);
    in->attrs[in->nattrs++] = v;
    return LOOM_OK;
}

/* $.insts[i][1]: RV names, and constants where the kind takes them; *nargs
 * receives the number of arguments. */
static loom_status read_inputs(rd *r, const loom_inst_kind *K, const cJSON *jin, int i, loom_inst *in, int *nargs)
{
    char path[96];
    snprintf(path, sizeof path, "$.insts[%d][1]", i);
    loom_status st = want_array(r, jin, path, K->min_args, K->max_args, nargs);
    if (st)
        return st;
    int nconst = 0;
    for (int k = 0; k < *nargs; k++) {
        const cJSON *x = cJSON_GetArrayItem(jin, k);
        snprintf(path, sizeof path, "$.insts[%d][1][%d]", i, k);
        int may_be_const = K->consts.from > 0 && k >= K->consts.from;
        if (may_be_const && cJSON_IsNumber(x)) {
            if ((st = read_const(r, K, x, path, k, nconst, in)))
                return st;
            nconst++;
            continue;
        }
        if (may_be_const && !cJSON_IsString(x))
            return bad(r, path, "expected an RV name or an integer, got %s", jtype(x));
        if (nconst > 0)
            return bad(r, path, "%s %ss must be all integer RVs or all constants, not a mix", K->name, K->consts.what);
        int rv = -1;
        if ((st = want_rv(r, x, path, loom_inst_kind_arg_mask(K, k), K->name, k, &rv)))
            return st;
        in->inputs[in->ninputs++] = rv;
    }
    return LOOM_OK;
}

/* One attr field of kind K from x (at path) into in. */
static loom_status read_attr(rd *r, const loom_attr_field *A, const cJSON *x, const char *path, loom_inst *in,
                             int *nreal)
{
    loom_status st;
    int64_t v = 0;
    int n, np;
    char cp[160];
    switch (A->codec) {
    case LOOM_ATTR_NAME:
    case LOOM_ATTR_KEY:
        return want_name(r, x, path,
                         A->codec == LOOM_ATTR_KEY ? sizeof(((loom_annotation *)0)->key) - 1 : LOOM_MAX_NAME - 1,
                         A->what, in->sattr);
    case LOOM_ATTR_INT:
        if ((st = want_int(r, x, path, A->lo, A->hi, A->what, &v)))
            return st;
        if (A->nonzero && v == 0)
            return bad(r, path, "%s must not be 0 (-1: no limit)", A->what);
        in->attrs[in->nattrs++] = v;
        return LOOM_OK;
    case LOOM_ATTR_REAL:
        if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
            return bad(r, path, "%s must be a number, got %s", A->what, jtype(x));
        in->fattrs[(*nreal)++] = x->valuedouble;
        return LOOM_OK;
    case LOOM_ATTR_INT_LIST:
        if ((st = want_array(r, x, path, 1, LOOM_MAX_INST_IO, &n)))
            return st;
        for (int k = 0; k < n; k++) {
            snprintf(cp, sizeof cp, "%s[%d]", path, k);
            if (!jint(cJSON_GetArrayItem(x, k), &v))
                return bad(r, cp, "%s must be an integer, got %s", A->what, jtype(cJSON_GetArrayItem(x, k)));
            in->attrs[in->nattrs++] = v;
        }
        return LOOM_OK;
    case LOOM_ATTR_PROB_LIST:
        if ((st = want_array(r, x, path, in->nattrs, in->nattrs, &np)))
            return st;
        for (int k = 0; k < np; k++) {
            snprintf(cp, sizeof cp, "%s[%d]", path, k);
            const cJSON *y = cJSON_GetArrayItem(x, k);
            if (!cJSON_IsNumber(y) || !isfinite(y->valuedouble) || y->valuedouble < 0)
                return bad(r, cp, "%s must be a non-negative number, got %s", A->what, jtype(y));
            in->fattrs[k] = y->valuedouble;
        }
        return LOOM_OK;
    default: return bad(r, path, "attr field with an unknown codec %d", (int)A->codec);
    }
}

/* $.insts[i][2]: one element per attr field of the kind. */
static loom_status read_attrs(rd *r, const loom_inst_kind *K, const cJSON *jat, int i, loom_inst *in)
{
    char path[96], ap[112];
    int nf = 0, nat, nreal = 0;
    while (nf < LOOM_INST_MAX_ATTRS && K->attrs[nf].codec != LOOM_ATTR_END)
        nf++;
    snprintf(path, sizeof path, "$.insts[%d][2]", i);
    loom_status st = want_array(r, jat, path, nf, nf, &nat);
    for (int f = 0; !st && f < nf; f++) {
        snprintf(ap, sizeof ap, "%s[%d]", path, f);
        st = read_attr(r, &K->attrs[f], cJSON_GetArrayItem(jat, f), ap, in, &nreal);
    }
    return st;
}

/* $.insts[i][3]: the next RV names, as many as the kind's output rule says. */
static loom_status read_outputs(rd *r, const loom_inst_kind *K, const cJSON *jout, int i, int nargs, loom_inst *in)
{
    char path[96];
    snprintf(path, sizeof path, "$.insts[%d][3]", i);
    int want_min = 0, want_max = 0;
    switch (K->out.rule) {
    case LOOM_OUT_NONE: break;
    case LOOM_OUT_FIXED: want_min = want_max = K->out.n; break;
    case LOOM_OUT_ANY: want_max = LOOM_MAX_INST_IO; break;
    case LOOM_OUT_PER_ARG: want_min = want_max = nargs - 1; break;
    case LOOM_OUT_ATTR0: want_min = want_max = (int)in->attrs[0]; break;
    }
    if (!cJSON_IsArray(jout))
        return bad(r, path, "expected an array of output names, got %s", jtype(jout));
    int nout = cJSON_GetArraySize(jout);
    if (nout < want_min || nout > want_max) {
        if (want_min == want_max)
            return bad(r, path, "%s here has %d output%s, got %d", K->name, want_min, want_min == 1 ? "" : "s", nout);
        return bad(r, path, "%s has %d..%d outputs, got %d", K->name, want_min, want_max, nout);
    }
    for (int k = 0; k < nout; k++) {
        const cJSON *x = cJSON_GetArrayItem(jout, k);
        snprintf(path, sizeof path, "$.insts[%d][3][%d]", i, k);
        char expect[24];
        snprintf(expect, sizeof expect, "%c%d", letter(K->out.kind), r->t->nrvs + k);
        if (!cJSON_IsString(x))
            return bad(r, path, "expected the output name '%s', got %s", expect, jtype(x));
        if (strcmp(x->valuestring, expect) != 0)
            return bad(r, path,
                       "expected output name '%s', got '%s' (RVs are named in definition order with one counter: "
                       "b block, l loop, v integer)",
                       expect, x->valuestring);
        in->outputs[in->noutputs++] = r->t->nrvs + k;
    }
    return LOOM_OK;
}

/* One instruction: $.insts[i]. */
static loom_status read_inst(rd *r, const cJSON *j, int i)
{
    char path[96];
    int n;
    snprintf(path, sizeof path, "$.insts[%d]", i);
    loom_status st = want_array(r, j, path, 4, 4, &n);
    if (st)
        return st;
    const cJSON *jk = cJSON_GetArrayItem(j, 0);
    snprintf(path, sizeof path, "$.insts[%d][0]", i);
    if (!cJSON_IsString(jk))
        return bad(r, path, "expected an instruction kind name, got %s", jtype(jk));
    int kind = loom_inst_kind_find(jk->valuestring);
    const loom_inst_kind *K = loom_inst_kind_at(kind);
    if (!K)
        return unknown_kind(r, path, jk->valuestring);
    loom_inst in;
    memset(&in, 0, sizeof in);
    in.kind = kind;
    int nargs = 0;
    if ((st = read_inputs(r, K, cJSON_GetArrayItem(j, 1), i, &in, &nargs)) ||
        (st = read_attrs(r, K, cJSON_GetArrayItem(j, 2), i, &in)) ||
        (st = read_outputs(r, K, cJSON_GetArrayItem(j, 3), i, nargs, &in)))
        return st;
    loom_error e;
    loom_error_clear(&e);
    if ((st = loom_trace_append(r->t, &in, &e))) {
        snprintf(path, sizeof path, "$.insts[%d]", i);
        if (st == LOOM_ERR_NOMEM)
            return loom_error_set(r->err, st, r->src, 0, 0, "%s: %s", path, e.msg);
        return bad(r, path, "%s", e.msg);
    }
    return LOOM_OK;
}

static loom_status read_decisions(rd *r, const cJSON *jd)
{
    loom_trace *t = r->t;
    if (!jd)
        return bad(r, "$.decisions", "missing (expected an array of [instruction index, decision])");
    if (!cJSON_IsArray(jd))
        return bad(r, "$.decisions", "expected an array, got %s", jtype(jd));
    int nd = cJSON_GetArraySize(jd);
    for (int d = 0; d < nd; d++) {
        char path[64];
        int n;
        snprintf(path, sizeof path, "$.decisions[%d]", d);
        const cJSON *x = cJSON_GetArrayItem(jd, d);
        loom_status st = want_array(r, x, path, 2, 2, &n);
        if (st)
            return st;
        snprintf(path, sizeof path, "$.decisions[%d][0]", d);
        int64_t idx;
        const cJSON *ji = cJSON_GetArrayItem(x, 0);
        if (!jint(ji, &idx))
            return bad(r, path, "expected an instruction index, got %s", jtype(ji));
        if (idx < 0 || idx >= t->ninsts)
            return bad(r, path, "instruction %" PRId64 " does not exist (the trace has %d)", idx, t->ninsts);
        loom_inst *in = &t->insts[idx];
        const loom_inst_kind *K = loom_inst_kind_at(in->kind);
        if (K->decision == LOOM_DECISION_NONE)
            return bad(r, path, "instruction %" PRId64 " (%s) takes no decision", idx, K->name);
        if (in->ndecision)
            return bad(r, path, "a second decision for instruction %" PRId64 " (%s)", idx, K->name);
        snprintf(path, sizeof path, "$.decisions[%d][1]", d);
        const cJSON *jv = cJSON_GetArrayItem(x, 1);
        if (K->decision == LOOM_DECISION_PER_OUTPUT) {
            int ok = cJSON_IsArray(jv);
            int nt = ok ? cJSON_GetArraySize(jv) : 0;
            for (int k = 0; ok && k < nt; k++)
                ok = jint(cJSON_GetArrayItem(jv, k), &in->decision[k < LOOM_MAX_INST_IO ? k : 0]);
            if (!ok)
                return bad(r, path, "decision for %s must be an array of integers", K->name);
            if (nt != in->noutputs)
                return bad(r, path, "decision for %s has %d entries, instruction %" PRId64 " has %d outputs", K->name,
                           nt, idx, in->noutputs);
            in->ndecision = nt;
        } else {
            if (!jint(jv, &in->decision[0]))
                return bad(r, path, "decision for %s must be an integer (an index), got %s", K->name, jtype(jv));
            in->ndecision = 1;
        }
    }
    return LOOM_OK;
}

static loom_status read_doc(rd *r, const cJSON *root)
{
    if (!cJSON_IsObject(root))
        return bad(r, "$", "expected an object, got %s", jtype(root));
    const cJSON *jf = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!jf)
        return bad(r, "$.format", "missing (expected \"loom-trace\")");
    if (!cJSON_IsString(jf) || strcmp(jf->valuestring, "loom-trace") != 0) {
        if (cJSON_IsString(jf))
            return bad(r, "$.format", "expected \"loom-trace\", got \"%.100s\"", jf->valuestring);
        return bad(r, "$.format", "expected \"loom-trace\", got %s", jtype(jf));
    }
    const cJSON *jv = cJSON_GetObjectItemCaseSensitive(root, "version");
    int64_t ver;
    if (!jv)
        return bad(r, "$.version", "missing (expected 1)");
    if (!jint(jv, &ver))
        return bad(r, "$.version", "expected an integer, got %s", jtype(jv));
    if (ver != 1)
        return bad(r, "$.version", "unsupported version %" PRId64 " (this loom reads 1)", ver);
    const cJSON *jw = cJSON_GetObjectItemCaseSensitive(root, "workload");
    if (!jw)
        return bad(r, "$.workload", "missing (expected the workload hash, 16 hex digits)");
    if (!cJSON_IsString(jw))
        return bad(r, "$.workload", "expected a string of 16 hex digits, got %s", jtype(jw));
    const char *w = jw->valuestring;
    if (strlen(w) != 16 || strspn(w, "0123456789abcdefABCDEF") != 16)
        return bad(r, "$.workload", "expected 16 hex digits (the workload hash), got \"%.40s\"", w);
    r->t->workload = strtoull(w, NULL, 16);
    r->t->has_workload = 1;
    const cJSON *ji = cJSON_GetObjectItemCaseSensitive(root, "insts");
    if (!ji)
        return bad(r, "$.insts", "missing (expected an array of instructions)");
    if (!cJSON_IsArray(ji))
        return bad(r, "$.insts", "expected an array, got %s", jtype(ji));
    int i = 0;
    for (const cJSON *x = ji->child; x; x = x->next, i++) {
        loom_status st = read_inst(r, x, i);
        if (st)
            return st;
    }
    return read_decisions(r, cJSON_GetObjectItemCaseSensitive(root, "decisions"));
}

#define STR2(x) #x
#define STR(x) STR2(x)
/* the reason a nesting too deep is refused */
#define TOO_DEEP ": nested deeper than " STR(CJSON_NESTING_LIMIT) " levels, the JSON reader's limit (cJSON's CJSON_NESTING_LIMIT)"

int loom__json_too_deep(const char *text, size_t n, size_t pos)
{
    long depth = 0;
    int in_str = 0;
    for (size_t k = 0; k < n && k <= pos; k++) {
        char c = text[k];
        if (in_str) {
            if (c == '\\')
                k++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            depth++;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return depth > CJSON_NESTING_LIMIT;
}

loom_status loom_trace_from_json(const char *text, const char *source_name, loom_trace **out, loom_error *err)
{
    *out = NULL;
    if (!text)
        return loom_error_set(err, LOOM_ERR_INVALID, source_name, 0, 0, "no trace text (NULL)");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        size_t len = strlen(text);
        size_t pos = end && end >= text ? (size_t)(end - text) : 0;
        if (pos > len)
            pos = len;
        int line = 1, col = 1;
        for (size_t k = 0; k < pos; k++) {
            if (text[k] == '\n') {
                line++;
                col = 1;
            } else
                col++;
        }
        return loom_error_set(err, LOOM_ERR_PARSE, source_name, line, col,
                              "not valid JSON near byte %zu (line %d, column %d)%s", pos, line, col,
                              len == 0                                 ? ": the text is empty"
                              : loom__json_too_deep(text, len, pos)    ? TOO_DEEP
                              : pos + 1 >= len                         ? ": the text ends early (truncated?)"
                                                                       : "");
    }
    rd r = {source_name, err, loom_trace_new()};
    loom_status st;
    if (!r.t)
        st = loom_error_set(err, LOOM_ERR_NOMEM, source_name, 0, 0, "out of memory reading a trace");
    else
        st = read_doc(&r, root);
    cJSON_Delete(root);
    if (st) {
        loom_trace_free(r.t);
        return st;
    }
    *out = r.t;
    return LOOM_OK;
}
