/* The model file's lines (model.h): model, task, feed, output. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../dsl/ir/util.h"
#include "model_internal.h"

int loom__model_resolve(const char *dir, const char *path, char *out, size_t n)
{
    int w = path[0] == '/' || !dir[0] ? snprintf(out, n, "%s", path) : snprintf(out, n, "%s/%s", dir, path);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static int is_ident(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

/* NAME=VALUE into name (n bytes) and *value; -1 when malformed. */
static int split_assign(const char *arg, char *name, size_t n, const char **value)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1] || (size_t)(eq - arg) >= n)
        return -1;
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = 0;
    *value = eq + 1;
    return 0;
}

/* A positive decimal integer <= max; -1 otherwise. */
static long long parse_count(const char *s, long long max)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || !isdigit((unsigned char)*s) || v < 1 || v > max)
        return -1;
    return v;
}

/* One option of a task line at words[*k] (its value the next word). */
static loom_status task_option(loom_model_call *c, const loom__model_line *L, const char *dir, int *k,
                               loom_error *err)
{
    const char *opt = L->words[*k];
    if (strcmp(opt, "--data") && strcmp(opt, "--param") && strcmp(opt, "-p") && strcmp(opt, "--runs"))
        return loom__model_err(L, LOOM_ERR_PARSE, err,
                               "task %s: unknown option '%s' (a task takes --data TENSOR=FILE.mtx, --param SIZE=INT "
                               "or -p SIZE=INT, and --runs N)",
                               c->name, opt);
    if (*k + 1 >= L->nwords)
        return loom__model_err(L, LOOM_ERR_PARSE, err, "task %s: %s expects a value", c->name, opt);
    const char *val = L->words[++*k], *v;
    if (!strcmp(opt, "--runs")) {
        long long r = parse_count(val, LOOM_MODEL_MAX_RUNS);
        if (r < 0)
            return loom__model_err(L, LOOM_ERR_PARSE, err, "task %s: --runs expects 1..%d, got '%s'", c->name,
                                   LOOM_MODEL_MAX_RUNS, val);
        c->runs = (int)r;
    } else if (!strcmp(opt, "--data")) {
        if (c->ndata == LOOM_MAX_TENSORS)
            return loom__model_err(L, LOOM_ERR_PARSE, err, "task %s: more than %d --data", c->name, LOOM_MAX_TENSORS);
        loom_data_spec *s = &c->data[c->ndata];
        if (split_assign(val, s->tensor, sizeof s->tensor, &v))
            return loom__model_err(L, LOOM_ERR_PARSE, err, "task %s: --data expects TENSOR=FILE, got '%s'", c->name, val);
        if (loom__model_resolve(dir, v, s->path, sizeof s->path))
            return loom__model_err(L, LOOM_ERR_PARSE, err, "task %s: --data: path too long in '%s'", c->name, val);
        c->ndata++;
    } else {
        if (c->nparams == LOOM_MAX_SIZES)
            return loom__model_err(L, LOOM_ERR_PARSE, err, "task %s: more than %d --param", c->name, LOOM_MAX_SIZES);
        loom_param_spec *p = &c->params[c->nparams];
        long long x;
        if (split_assign(val, p->name, sizeof p->name, &v) || (x = parse_count(v, INT64_MAX)) < 0)
            return loom__model_err(L, LOOM_ERR_PARSE, err, "task %s: %s expects SIZE=INT (a positive integer), got '%s'",
                                   c->name, opt, val);
        p->value = x;
        c->nparams++;
    }
    return LOOM_OK;
}

/* task NAME WORKLOAD.loom [options] */
static loom_status parse_task(loom_model *m, const loom__model_line *L, const char *dir, uint64_t seed,
                              loom_error *err)
{
    if (L->nwords < 3)
        return loom__model_err(L, LOOM_ERR_PARSE, err, "task expects NAME WORKLOAD.loom [options]");
    const char *name = L->words[1];
    if (!is_ident(name) || strlen(name) >= LOOM_MAX_NAME)
        return loom__model_err(L, LOOM_ERR_PARSE, err, "task name '%s' is not an identifier of at most %d characters",
                               name, LOOM_MAX_NAME - 1);
    for (int k = 0; k < m->ncalls; k++)
        if (!strcmp(m->calls[k].name, name))
            return loom__model_err(L, LOOM_ERR_PARSE, err, "task %s is already declared at line %d", name,
                                   m->calls[k].line);
    if (m->ncalls == LOOM_MODEL_MAX_CALLS)
        return loom__model_err(L, LOOM_ERR_PARSE, err, "more than %d tasks", LOOM_MODEL_MAX_CALLS);
    loom_model_call *c = &m->calls[m->ncalls];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->runs = 1;
    c->line = L->line;
    if (loom__model_resolve(dir, L->words[2], c->workload, sizeof c->workload))
        return loom__model_err(L, LOOM_ERR_PARSE, err, "task %s: workload path too long", name);
    for (int k = 3; k < L->nwords; k++) {
        loom_status st = task_option(c, L, dir, &k, err);
        if (st)
            return st;
    }
    m->ncalls++; /* owned by m from here, also when binding fails */
    return loom__model_bind(c, L, seed, err);
}

/* 1: a feed from p into q keeps every value in place: the same shape, or
 * a reshape of the dimensions after the first (the same first dimension and
 * as many elements, both row-major: N x 256 into N x 8 x 32 splits each row
 * into heads, as torch's view does in nn.MultiheadAttention). */
static int same_rows_and_count(const loom_tensor_abi *p, const loom_tensor_abi *q)
{
    if (p->order < 1 || q->order < 1 || p->dims[0] != q->dims[0])
        return 0;
    int64_t np = 1, nq = 1;
    for (int d = 1; d < p->order; d++)
        np *= p->dims[d];
    for (int d = 1; d < q->order; d++)
        nq *= q->dims[d];
    return np == nq;
}

/* feed A.X -> B.Y */
static loom_status parse_feed(loom_model *m, const loom__model_line *L, loom_error *err)
{
    if (L->nwords != 4 || strcmp(L->words[2], "->"))
        return loom__model_err(L, LOOM_ERR_PARSE, err, "feed expects TASK.TENSOR -> TASK.TENSOR");
    loom_model_feed f = {.line = L->line};
    if ((f.src_tensor = loom__model_tensor(m, L->words[1], L, &f.src, err)) < 0 ||
        (f.dst_tensor = loom__model_tensor(m, L->words[3], L, &f.dst, err)) < 0)
        return err->status;
    const loom_model_call *a = &m->calls[f.src], *b = &m->calls[f.dst];
    const loom_tensor *x = &a->prog->tensors[f.src_tensor], *y = &b->prog->tensors[f.dst_tensor];
    if (f.dst <= f.src)
        return loom__model_err(L, LOOM_ERR_SEMANTIC, err,
                               "feed %s -> %s: task %s does not run after task %s (tasks run in file order)",
                               L->words[1], L->words[3], b->name, a->name);
    if (x->role != LOOM_TENSOR_OUTPUT)
        return loom__model_err(L, LOOM_ERR_SEMANTIC, err, "feed: %s is not an output of task %s", L->words[1], a->name);
    if (y->role != LOOM_TENSOR_INPUT)
        return loom__model_err(L, LOOM_ERR_SEMANTIC, err, "feed: %s is not an input of task %s", L->words[3], b->name);
    for (int k = 0; k < b->ndata; k++)
        if (!strcmp(b->data[k].tensor, y->name))
            return loom__model_err(L, LOOM_ERR_SEMANTIC, err, "feed: %s is given by --data %s=%s on line %d",
                                   L->words[3], y->name, b->data[k].path, b->line);
    for (int k = 0; k < m->nfeeds; k++)
        if (m->feeds[k].dst == f.dst && m->feeds[k].dst_tensor == f.dst_tensor)
            return loom__model_err(L, LOOM_ERR_SEMANTIC, err, "feed: %s is already fed on line %d", L->words[3],
                                   m->feeds[k].line);
    if (loom_tensor_is_sparse(a->prog, f.src_tensor) || loom_tensor_is_sparse(b->prog, f.dst_tensor))
        return loom__model_err(L, LOOM_ERR_SEMANTIC, err, "feed %s -> %s: only dense tensors can be fed", L->words[1],
                               L->words[3]);
    const loom_tensor_abi *p = &a->ds->t[f.src_tensor], *q = &b->ds->t[f.dst_tensor];
    if (!same_rows_and_count(p, q)) {
        char sp[96] = "", sq[96] = "";
        for (int d = 0; d < p->order; d++)
            snprintf(sp + strlen(sp), sizeof sp - strlen(sp), "%s%lld", d ? "x" : "", (long long)p->dims[d]);
        for (int d = 0; d < q->order; d++)
            snprintf(sq + strlen(sq), sizeof sq - strlen(sq), "%s%lld", d ? "x" : "", (long long)q->dims[d]);
        return loom__model_err(L, LOOM_ERR_SEMANTIC, err, "feed: shapes differ: %s is %s, %s is %s (a feed keeps the first dimension and the element count)", L->words[1], sp,
                               L->words[3], sq);
    }
    m->feeds[m->nfeeds++] = f;
    return LOOM_OK;
}

/* output A.X */
static loom_status parse_output(loom_model *m, const loom__model_line *L, loom_error *err)
{
    if (L->nwords != 2)
        return loom__model_err(L, LOOM_ERR_PARSE, err, "output expects TASK.TENSOR");
    loom_model_output o = {.line = L->line};
    if ((o.tensor = loom__model_tensor(m, L->words[1], L, &o.call, err)) < 0)
        return err->status;
    if (m->calls[o.call].prog->tensors[o.tensor].role != LOOM_TENSOR_OUTPUT)
        return loom__model_err(L, LOOM_ERR_SEMANTIC, err, "output: %s is not an output of task %s", L->words[1],
                               m->calls[o.call].name);
    for (int k = 0; k < m->noutputs; k++)
        if (m->outputs[k].call == o.call && m->outputs[k].tensor == o.tensor)
            return loom__model_err(L, LOOM_ERR_SEMANTIC, err, "output %s is already named on line %d", L->words[1],
                                   m->outputs[k].line);
    m->outputs[m->noutputs++] = o;
    return LOOM_OK;
}

/* Split a line into words (its comment cut: '#' at its start or after a
 * space).  -1 when it has too many. */
static int split_words(char *s, loom__model_line *L)
{
    L->nwords = 0;
    for (char *p = s; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            *p++ = 0;
        if (!*p || *p == '#')
            break;
        if (L->nwords == LOOM__MODEL_MAX_WORDS)
            return -1;
        L->words[L->nwords++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r')
            p++;
    }
    return 0;
}

static loom_status parse_line(loom_model *m, char *text, loom__model_line *L, const char *dir, uint64_t seed,
                              int *named, loom_error *err)
{
    if (split_words(text, L))
        return loom__model_err(L, LOOM_ERR_PARSE, err, "more than %d words on one line", LOOM__MODEL_MAX_WORDS);
    if (L->nwords == 0)
        return LOOM_OK;
    const char *kw = L->words[0];
    if (!strcmp(kw, "task"))
        return parse_task(m, L, dir, seed, err);
    if (!strcmp(kw, "feed"))
        return parse_feed(m, L, err);
    if (!strcmp(kw, "output"))
        return parse_output(m, L, err);
    if (strcmp(kw, "model"))
        return loom__model_err(L, LOOM_ERR_PARSE, err, "unknown keyword '%s' (a line is model, task, feed or output)",
                               kw);
    if (L->nwords != 2 || strlen(L->words[1]) >= sizeof m->name)
        return loom__model_err(L, LOOM_ERR_PARSE, err, "model expects one NAME (at most %d characters)",
                               (int)sizeof m->name - 1);
    if ((*named)++)
        return loom__model_err(L, LOOM_ERR_PARSE, err, "model is named twice");
    snprintf(m->name, sizeof m->name, "%s", L->words[1]);
    return LOOM_OK;
}

/* Read and parse every line of text (len bytes) into m. */
static loom_status parse_text(loom_model *m, char *text, size_t len, uint64_t seed, loom_error *err)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", m->path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        dir[0] = 0;
    loom__model_line L = {.path = m->path};
    int named = 0;
    for (char *p = text; p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        char *end = nl ? nl : text + len;
        L.line++;
        if (end - p + 1 > LOOM_MODEL_MAX_LINE)
            return loom__model_err(&L, LOOM_ERR_PARSE, err, "line longer than %d bytes", LOOM_MODEL_MAX_LINE);
        if (memchr(p, 0, (size_t)(end - p)))
            return loom__model_err(&L, LOOM_ERR_PARSE, err, "a NUL byte: not a text file");
        *end = 0;
        loom_status st = parse_line(m, p, &L, dir, seed, &named, err);
        if (st)
            return st;
        p = end + 1;
    }
    if (m->ncalls == 0)
        return loom_error_set(err, LOOM_ERR_PARSE, m->path, L.line, 0, "no task: a model needs at least one task line");
    return LOOM_OK;
}

/* The file's stem ("gcn2" from "models/gcn2.model"). */
static void stem(const char *path, char *out, size_t n)
{
    const char *b = strrchr(path, '/');
    snprintf(out, n, "%s", b ? b + 1 : path);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = 0;
}

loom_status loom_model_load(const char *path, uint64_t seed, loom_model **out, loom_error *err)
{
    *out = NULL;
    loom_model *m = calloc(1, sizeof *m);
    if (m) {
        m->calls = calloc(LOOM_MODEL_MAX_CALLS, sizeof *m->calls);
        m->feeds = calloc(LOOM_MODEL_MAX_CALLS * LOOM_MAX_TENSORS, sizeof *m->feeds);
        m->outputs = calloc(LOOM_MODEL_MAX_CALLS * LOOM_MAX_TENSORS, sizeof *m->outputs);
    }
    if (!m || !m->calls || !m->feeds || !m->outputs) {
        loom_model_free(m);
        return loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0, "out of memory");
    }
    snprintf(m->path, sizeof m->path, "%s", path);
    stem(path, m->name, sizeof m->name);
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0;
    int e = f ? loom_read_stream(f, (size_t)LOOM_MODEL_MAX_LINE * 65536, &text, &len) : errno;
    if (f)
        fclose(f);
    loom_status st = e ? loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot read the model file: %s", strerror(e))
                       : parse_text(m, text, len, seed, err);
    free(text);
    if (!st)
        st = loom__model_finish(m, err);
    if (st) {
        loom_model_free(m);
        return st;
    }
    *out = m;
    return LOOM_OK;
}
