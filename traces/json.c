/* Traces as JSON (trace.h; DESIGN.md "Traces"; MetaSchedule's
 * Trace::AsJSON / ApplyJSONToSchedule).  Writing is a small hand emitter (so
 * the spacing is DESIGN.md's and stable); reading uses cJSON and checks the
 * document completely, naming the JSON path of the first problem.
 *
 * Per kind, the JSON layout (inputs / attrs) is:
 *   GetBlock            []                      ["C"]
 *   GetLoops            ["b0"]                  []
 *   GetProducers        ["b0"]                  []
 *   GetConsumers        ["b0"]                  []
 *   Split               ["l3", "v4", "v5"]      []      or ["l3", 4, 0]: constant factors
 *   Fuse                ["l1", "l2", ...]       []
 *   Reorder             ["l2", "l1", ...]       []
 *   PosSplit            ["l2", "v5" or 8]       ["A"]
 *   Parallel/Vectorize  ["l6"]                  []
 *   Unroll              ["l7"]                  [4]
 *   Annotate            ["l6", "v9" or 1]       ["key"]
 *   SamplePerfectTile   ["l3"]                  [n, max_innermost]
 *   SampleCategorical   []                      [[candidates...], [probs...]]
 *   SampleLoopOrder     ["b0"]                  [prior, prior_weight]
 *   ComputeInline       ["b0"]                  []
 *   SampleComputeLocation ["b0"]                []      decision: -2 inline, -1 root
 *   ComputeAt           ["b0", "l5"] or ["b0", "l5", "v6"]   []
 *   CacheWrite          ["b0", "l5"]            []
 *   RFactor             ["l5"]                  []
 *   ReverseComputeAt    ["b1", "l5"]            []
 *   RollingUpdate       ["b3", "l5"] or ["b3", "l5", "v6"]   []
 *   SplitKUpdate        ["b3", "l5", "v7" or 4]  []
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "../dsl/util.h"

#define JSON_MAX_INT 9007199254740992.0 /* 2^53: integers beyond are not exact in JSON */

/* ---- writing ----------------------------------------------------------- */

/* The shared growable buffer (dsl/util.h) under this file's short names. */
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

static void put_inst(sbuf *b, const loom_trace *t, const loom_inst *in)
{
    const loom_inst_kind *K = loom_inst_kind_at(in->kind);
    const char *name = K ? K->name : "?";
    puts_(b, "[");
    put_str(b, name);
    /* inputs */
    puts_(b, ", [");
    int is_sk = !strcmp(name, "SplitKUpdate");
    int constant_inputs = !strcmp(name, "Split") || !strcmp(name, "PosSplit") || !strcmp(name, "Annotate") || is_sk;
    for (int k = 0; k < in->ninputs; k++) {
        if (k)
            puts_(b, ", ");
        put_rv(b, t, in->inputs[k]);
    }
    if (constant_inputs && in->ninputs == (is_sk ? 2 : 1))
        for (int k = 0; k < in->nattrs; k++)
            putf(b, ", %" PRId64, in->attrs[k]);
    /* attrs */
    puts_(b, "], [");
    if (!strcmp(name, "GetBlock") || !strcmp(name, "PosSplit") || !strcmp(name, "Annotate"))
        put_str(b, in->sattr);
    else if (!strcmp(name, "SampleCategorical")) {
        puts_(b, "[");
        for (int k = 0; k < in->nattrs; k++)
            putf(b, "%s%" PRId64, k ? ", " : "", in->attrs[k]);
        puts_(b, "], [");
        for (int k = 0; k < in->nattrs; k++) {
            if (k)
                puts_(b, ", ");
            put_double(b, in->fattrs[k]);
        }
        puts_(b, "]");
    } else if (!strcmp(name, "SampleLoopOrder")) {
        putf(b, "%" PRId64 ", ", in->nattrs ? in->attrs[0] : -1);
        put_double(b, in->fattrs[0]);
    } else if (!constant_inputs)
        for (int k = 0; k < in->nattrs; k++)
            putf(b, "%s%" PRId64, k ? ", " : "", in->attrs[k]);
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
        if (!K || !K->has_decision || in->ndecision <= 0)
            continue;
        putf(&b, "%s[%d, ", first ? "" : ", ", i);
        first = 0;
        if (!strcmp(K->name, "SamplePerfectTile")) {
            puts_(&b, "[");
            for (int k = 0; k < in->ndecision; k++)
                putf(&b, "%s%" PRId64, k ? ", " : "", in->decision[k]);
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
    case LOOM__ARG_BLOCK: return "a block";
    case LOOM__ARG_LOOP: return "a loop";
    case LOOM__ARG_EXPR: return "an integer";
    case LOOM__ARG_BLOCK | LOOM__ARG_LOOP: return "a block or a loop";
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

/* One instruction: $.insts[i]. */
static loom_status read_inst(rd *r, const cJSON *j, int i)
{
    char path[96];
    int n;
    snprintf(path, sizeof path, "$.insts[%d]", i);
    loom_status st = want_array(r, j, path, 4, 4, &n);
    if (st)
        return st;
    const cJSON *jk = cJSON_GetArrayItem(j, 0), *jin = cJSON_GetArrayItem(j, 1), *jat = cJSON_GetArrayItem(j, 2),
                *jout = cJSON_GetArrayItem(j, 3);
    snprintf(path, sizeof path, "$.insts[%d][0]", i);
    if (!cJSON_IsString(jk))
        return bad(r, path, "expected an instruction kind name, got %s", jtype(jk));
    int kind = loom_inst_kind_find(jk->valuestring);
    const loom__sig *sig = loom__trace_sig(kind);
    if (kind < 0 || !sig)
        return unknown_kind(r, path, jk->valuestring);
    const char *name = sig->name;
    int is_split = !strcmp(name, "Split"), is_pos = !strcmp(name, "PosSplit"), is_ann = !strcmp(name, "Annotate");

    loom_inst in;
    memset(&in, 0, sizeof in);
    in.kind = kind;

    /* inputs */
    snprintf(path, sizeof path, "$.insts[%d][1]", i);
    int nin;
    int min_in = sig->min_in, max_in = sig->max_in;
    if (is_split)
        min_in = 3;
    int is_sk = !strcmp(name, "SplitKUpdate");
    if (is_pos || is_ann)
        min_in = 2;
    if (is_sk)
        min_in = max_in = 3;
    if ((st = want_array(r, jin, path, min_in, max_in, &nin)))
        return st;
    int nconst = 0;
    for (int k = 0; k < nin; k++) {
        const cJSON *x = cJSON_GetArrayItem(jin, k);
        snprintf(path, sizeof path, "$.insts[%d][1][%d]", i, k);
        int may_be_const = (k >= 1 && (is_split || is_pos || is_ann)) || (is_sk && k == 2);
        if (may_be_const && cJSON_IsNumber(x)) {
            int64_t v;
            if (!jint(x, &v))
                return bad(r, path, "a constant %s must be an integer, got %g", is_ann ? "value" : "factor",
                           x->valuedouble);
            if (!is_ann && (v < (is_pos || is_sk ? 1 : -1) || v > INT32_MAX))
                return bad(r, path, "a constant factor must be in %d..%d (Split: 0 or -1 = inferred), got %" PRId64,
                           is_pos ? 1 : -1, INT32_MAX, v);
            if (is_split && k > 1 && nconst == 0)
                return bad(r, path, "Split factors must be all integer RVs or all constants, not a mix");
            in.attrs[in.nattrs++] = v;
            nconst++;
            continue;
        }
        if (may_be_const && !cJSON_IsString(x))
            return bad(r, path, "expected an RV name or an integer, got %s", jtype(x));
        if (is_split && nconst > 0)
            return bad(r, path, "Split factors must be all integer RVs or all constants, not a mix");
        int mask = k == 0 ? sig->first_in : sig->rest_in;
        int rv = -1;
        if ((st = want_rv(r, x, path, mask, name, k, &rv)))
            return st;
        in.inputs[in.ninputs++] = rv;
    }

    /* attrs */
    snprintf(path, sizeof path, "$.insts[%d][2]", i);
    int nat;
    int64_t v;
    char ap[112];
    if (!strcmp(name, "GetBlock") || is_pos || is_ann) {
        if ((st = want_array(r, jat, path, 1, 1, &nat)))
            return st;
        snprintf(ap, sizeof ap, "%s[0]", path);
        size_t maxlen = is_ann ? sizeof(((loom_annotation *)0)->key) - 1 : LOOM_MAX_NAME - 1;
        if ((st = want_name(r, cJSON_GetArrayItem(jat, 0), ap, maxlen, is_ann ? "the annotation key" : "the tensor name",
                            in.sattr)))
            return st;
    } else if (!strcmp(name, "Unroll")) {
        if ((st = want_array(r, jat, path, 1, 1, &nat)))
            return st;
        snprintf(ap, sizeof ap, "%s[0]", path);
        if ((st = want_int(r, cJSON_GetArrayItem(jat, 0), ap, 1, 1 << 20, "the unroll factor", &v)))
            return st;
        in.attrs[in.nattrs++] = v;
    } else if (!strcmp(name, "SamplePerfectTile")) {
        if ((st = want_array(r, jat, path, 2, 2, &nat)))
            return st;
        snprintf(ap, sizeof ap, "%s[0]", path);
        if ((st = want_int(r, cJSON_GetArrayItem(jat, 0), ap, 1, LOOM_MAX_INST_IO, "n", &v)))
            return st;
        in.attrs[in.nattrs++] = v;
        snprintf(ap, sizeof ap, "%s[1]", path);
        if ((st = want_int(r, cJSON_GetArrayItem(jat, 1), ap, -1, INT32_MAX, "max_innermost", &v)))
            return st;
        if (v == 0)
            return bad(r, ap, "max_innermost must be -1 (no limit) or positive, got 0");
        in.attrs[in.nattrs++] = v;
    } else if (!strcmp(name, "SampleCategorical")) {
        if ((st = want_array(r, jat, path, 2, 2, &nat)))
            return st;
        int nc, np;
        snprintf(ap, sizeof ap, "%s[0]", path);
        const cJSON *jc = cJSON_GetArrayItem(jat, 0), *jp = cJSON_GetArrayItem(jat, 1);
        if ((st = want_array(r, jc, ap, 1, LOOM_MAX_INST_IO, &nc)))
            return st;
        for (int k = 0; k < nc; k++) {
            char cp[128];
            snprintf(cp, sizeof cp, "%s[%d]", ap, k);
            if (!jint(cJSON_GetArrayItem(jc, k), &v))
                return bad(r, cp, "a candidate must be an integer, got %s", jtype(cJSON_GetArrayItem(jc, k)));
            in.attrs[in.nattrs++] = v;
        }
        snprintf(ap, sizeof ap, "%s[1]", path);
        if ((st = want_array(r, jp, ap, nc, nc, &np)))
            return st;
        for (int k = 0; k < np; k++) {
            char cp[128];
            snprintf(cp, sizeof cp, "%s[%d]", ap, k);
            const cJSON *x = cJSON_GetArrayItem(jp, k);
            if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0)
                return bad(r, cp, "a probability must be a non-negative number, got %s", jtype(x));
            in.fattrs[k] = x->valuedouble;
        }
    } else if (!strcmp(name, "SampleLoopOrder")) {
        if ((st = want_array(r, jat, path, 2, 2, &nat)))
            return st;
        snprintf(ap, sizeof ap, "%s[0]", path);
        if ((st = want_int(r, cJSON_GetArrayItem(jat, 0), ap, -1, INT32_MAX, "the prior", &v)))
            return st;
        in.attrs[in.nattrs++] = v;
        snprintf(ap, sizeof ap, "%s[1]", path);
        const cJSON *x = cJSON_GetArrayItem(jat, 1);
        if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
            return bad(r, ap, "the prior weight must be a number, got %s", jtype(x));
        in.fattrs[0] = x->valuedouble;
    } else {
        if ((st = want_array(r, jat, path, 0, 0, &nat)))
            return st;
    }

    /* outputs */
    snprintf(path, sizeof path, "$.insts[%d][3]", i);
    int want_min = 0, want_max = 0;
    if (sig->out_kind >= 0)
        want_min = want_max = 1;
    if (!strcmp(name, "GetLoops") || !strcmp(name, "GetProducers") || !strcmp(name, "GetConsumers")) {
        want_min = 0;
        want_max = LOOM_MAX_INST_IO;
    } else if (is_split)
        want_min = want_max = nin - 1;
    else if (is_pos)
        want_min = want_max = 2;
    else if (!strcmp(name, "SamplePerfectTile"))
        want_min = want_max = (int)in.attrs[0];
    int nout;
    if (!cJSON_IsArray(jout))
        return bad(r, path, "expected an array of output names, got %s", jtype(jout));
    nout = cJSON_GetArraySize(jout);
    if (nout < want_min || nout > want_max) {
        if (want_min == want_max)
            return bad(r, path, "%s here has %d output%s, got %d", name, want_min, want_min == 1 ? "" : "s", nout);
        return bad(r, path, "%s has %d..%d outputs, got %d", name, want_min, want_max, nout);
    }
    for (int k = 0; k < nout; k++) {
        const cJSON *x = cJSON_GetArrayItem(jout, k);
        snprintf(path, sizeof path, "$.insts[%d][3][%d]", i, k);
        char expect[24];
        snprintf(expect, sizeof expect, "%c%d", letter((loom_rv_kind)sig->out_kind), r->t->nrvs + k);
        if (!cJSON_IsString(x))
            return bad(r, path, "expected the output name '%s', got %s", expect, jtype(x));
        if (strcmp(x->valuestring, expect) != 0)
            return bad(r, path,
                       "expected output name '%s', got '%s' (RVs are named in definition order with one counter: "
                       "b block, l loop, v integer)",
                       expect, x->valuestring);
        in.outputs[in.noutputs++] = r->t->nrvs + k;
    }
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
        if (!K->has_decision)
            return bad(r, path, "instruction %" PRId64 " (%s) takes no decision", idx, K->name);
        if (in->ndecision)
            return bad(r, path, "a second decision for instruction %" PRId64 " (%s)", idx, K->name);
        snprintf(path, sizeof path, "$.decisions[%d][1]", d);
        const cJSON *jv = cJSON_GetArrayItem(x, 1);
        if (!strcmp(K->name, "SamplePerfectTile")) {
            int ok = cJSON_IsArray(jv);
            int nt = ok ? cJSON_GetArraySize(jv) : 0;
            for (int k = 0; ok && k < nt; k++)
                ok = jint(cJSON_GetArrayItem(jv, k), &in->decision[k < LOOM_MAX_INST_IO ? k : 0]);
            if (!ok)
                return bad(r, path, "decision for SamplePerfectTile must be an array of integers");
            if (nt != in->attrs[0])
                return bad(r, path, "decision for SamplePerfectTile has %d tiles, instruction %" PRId64
                           " has n = %" PRId64, nt, idx, in->attrs[0]);
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
                              len == 0 ? ": the text is empty"
                              : pos + 1 >= len ? ": the text ends early (truncated?)"
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
