/* Traces: storage, recording, replay, equality and printing as C
 * (trace.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "../dsl/ir/util.h"

int loom_trace_output_kind(int kind)
{
    const loom_inst_kind *K = loom_inst_kind_at(kind);
    return K && K->out.rule != LOOM_OUT_NONE ? (int)K->out.kind : -1;
}

static char kind_letter(loom_rv_kind k)
{
    return k == LOOM_RV_BLOCK ? 'b' : k == LOOM_RV_LOOP ? 'l' : 'v';
}

const char *loom__trace_rv_name(const loom_trace *t, int rv, char *buf, size_t n)
{
    if (rv >= 0 && rv < t->nrvs)
        snprintf(buf, n, "%c%d", kind_letter(t->rv_kinds[rv]), rv);
    else
        snprintf(buf, n, "?%d", rv);
    return buf;
}

static const char *kind_name(int kind)
{
    const loom_inst_kind *K = loom_inst_kind_at(kind);
    return K ? K->name : "?";
}

/* ---- life cycle ------------------------------------------------------- */

loom_trace *loom_trace_new(void)
{
    return calloc(1, sizeof(loom_trace));
}

void loom_trace_free(loom_trace *t)
{
    if (!t)
        return;
    free(t->insts);
    free(t->rv_kinds);
    free(t->rec_map);
    free(t);
}

void loom_trace_clear(loom_trace *t)
{
    t->ninsts = 0;
    t->nrvs = 0;
    t->has_workload = 0;
    t->workload = 0;
    t->rec_status = LOOM_OK;
    t->rec_msg[0] = '\0';
    if (t->rec_map)
        for (int k = 0; k < LOOM_MAX_RVS; k++)
            t->rec_map[k] = -1;
}

static loom_status reserve(loom_trace *t, int ninsts, int nrvs, loom_error *err)
{
    if (ninsts > t->cap_insts) {
        int cap = t->cap_insts ? t->cap_insts : 16;
        while (cap < ninsts)
            cap *= 2;
        loom_inst *p = realloc(t->insts, sizeof(loom_inst) * (size_t)cap);
        if (!p)
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory growing a trace to %d instructions",
                                  cap);
        t->insts = p;
        t->cap_insts = cap;
    }
    if (nrvs > t->cap_rvs) {
        int cap = t->cap_rvs ? t->cap_rvs : 64;
        while (cap < nrvs)
            cap *= 2;
        loom_rv_kind *p = realloc(t->rv_kinds, sizeof(loom_rv_kind) * (size_t)cap);
        if (!p)
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory growing a trace to %d RVs", cap);
        t->rv_kinds = p;
        t->cap_rvs = cap;
    }
    return LOOM_OK;
}

loom_status loom_trace_reserve(loom_trace *t, int ninsts, int nrvs, loom_error *err)
{
    if (ninsts > t->cap_insts) {
        if (t->ninsts == 0) { /* nothing to keep: no realloc copying the old capacity's bytes */
            free(t->insts);
            t->insts = NULL;
            t->cap_insts = 0;
        }
        loom_inst *p = realloc(t->insts, sizeof(loom_inst) * (size_t)ninsts);
        if (!p)
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory reserving %d instructions", ninsts);
        t->insts = p;
        t->cap_insts = ninsts;
    }
    if (nrvs > t->cap_rvs) {
        loom_rv_kind *p = realloc(t->rv_kinds, sizeof(loom_rv_kind) * (size_t)nrvs);
        if (!p)
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory reserving %d RVs", nrvs);
        t->rv_kinds = p;
        t->cap_rvs = nrvs;
    }
    return LOOM_OK;
}

loom_status loom_trace_copy_into(loom_trace *t, const loom_trace *src, loom_error *err)
{
    loom_trace_clear(t);
    loom_status st = loom_trace_reserve(t, src->ninsts, src->nrvs, err);
    if (st)
        return st;
    if (src->ninsts)
        memcpy(t->insts, src->insts, sizeof(loom_inst) * (size_t)src->ninsts);
    if (src->nrvs)
        memcpy(t->rv_kinds, src->rv_kinds, sizeof(loom_rv_kind) * (size_t)src->nrvs);
    t->ninsts = src->ninsts;
    t->nrvs = src->nrvs;
    t->has_workload = src->has_workload;
    t->workload = src->workload;
    return LOOM_OK;
}

loom_status loom_trace_copy(const loom_trace *src, loom_trace **out, loom_error *err)
{
    *out = NULL;
    loom_trace *t = loom_trace_new();
    if (!t)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory copying a trace");
    loom_status st = loom_trace_copy_into(t, src, err);
    if (st) {
        loom_trace_free(t);
        return st;
    }
    *out = t;
    return LOOM_OK;
}

loom_status loom_trace_append(loom_trace *t, const loom_inst *inst, loom_error *err)
{
    const loom_inst_kind *K = loom_inst_kind_at(inst->kind);
    if (!K)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "instruction kind %d is not in the registry",
                              inst->kind);
    const char *name = K->name;
    int min_in = loom_inst_kind_min_inputs(K);
    if (inst->ninputs < min_in || inst->ninputs > K->max_args)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s takes %d..%d inputs, got %d", name, min_in,
                              K->max_args, inst->ninputs);
    if (inst->noutputs < 0 || inst->noutputs > LOOM_MAX_INST_IO || inst->nattrs < 0 ||
        inst->nattrs > LOOM_MAX_INST_IO || inst->ndecision < 0 || inst->ndecision > LOOM_MAX_INST_IO)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s: %d outputs, %d attrs, %d decision entries (max %d)",
                              name, inst->noutputs, inst->nattrs, inst->ndecision, LOOM_MAX_INST_IO);
    if (K->out.rule == LOOM_OUT_NONE && inst->noutputs)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s has no outputs, got %d", name, inst->noutputs);
    if (memchr(inst->sattr, '\0', sizeof inst->sattr) == NULL)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s: string attr is not terminated", name);
    for (int k = 0; k < inst->ninputs; k++) {
        int r = inst->inputs[k];
        if (r < 0 || r >= t->nrvs)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "%s: input %d is RV %d, which no earlier instruction defines (%d RVs so far)", name,
                                  k, r, t->nrvs);
        if (!(loom_inst_kind_arg_mask(K, k) & (1 << t->rv_kinds[r]))) {
            char nm[24];
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "%s: input %d (%s) has the wrong kind", name, k,
                                  loom__trace_rv_name(t, r, nm, sizeof nm));
        }
    }
    for (int k = 0; k < inst->noutputs; k++)
        if (inst->outputs[k] != t->nrvs + k)
            return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                                  "%s: output %d is RV %d, expected the next RV index %d", name, k, inst->outputs[k],
                                  t->nrvs + k);
    loom_status st = reserve(t, t->ninsts + 1, t->nrvs + inst->noutputs, err);
    if (st)
        return st;
    t->insts[t->ninsts++] = *inst;
    for (int k = 0; k < inst->noutputs; k++)
        t->rv_kinds[t->nrvs++] = K->out.kind;
    return LOOM_OK;
}

/* ---- recording -------------------------------------------------------- */

static void rec_fail(loom_trace *t, loom_status st, const char *msg)
{
    t->rec_status = st;
    snprintf(t->rec_msg, sizeof t->rec_msg, "recording instruction %d: %.200s", t->ninsts, msg);
}

/* The number of attrs[] entries of kind K when they are a fixed list of
 * integer fields (no constant arguments, no candidate list), else -1. */
static int fixed_int_attrs(const loom_inst_kind *K)
{
    if (!K || K->consts.from > 0)
        return -1;
    int n = 0;
    for (int f = 0; f < LOOM_INST_MAX_ATTRS; f++) {
        if (K->attrs[f].codec == LOOM_ATTR_INT_LIST)
            return -1;
        n += K->attrs[f].codec == LOOM_ATTR_INT;
    }
    return n;
}

void loom_trace_recorder(void *ctx, const loom_inst *inst)
{
    loom_trace *t = ctx;
    if (!t || t->rec_status != LOOM_OK)
        return;
    if (!t->rec_map) {
        t->rec_map = malloc(sizeof(int) * LOOM_MAX_RVS);
        if (!t->rec_map) {
            rec_fail(t, LOOM_ERR_NOMEM, "out of memory");
            return;
        }
        for (int k = 0; k < LOOM_MAX_RVS; k++)
            t->rec_map[k] = -1;
    }
    loom_inst x = *inst;
    char msg[200];
    for (int k = 0; k < inst->ninputs && k < LOOM_MAX_INST_IO; k++) {
        int r = inst->inputs[k];
        if (r < 0 || r >= LOOM_MAX_RVS || t->rec_map[r] < 0) {
            snprintf(msg, sizeof msg,
                     "%s: input %d is schedule RV %d, which was not defined by a recorded instruction (attach the "
                     "recorder right after loom_schedule_init)",
                     kind_name(inst->kind), k, r);
            rec_fail(t, LOOM_ERR_INVALID, msg);
            return;
        }
        x.inputs[k] = t->rec_map[r];
    }
    for (int k = 0; k < inst->noutputs && k < LOOM_MAX_INST_IO; k++)
        x.outputs[k] = t->nrvs + k;
    /* the contract's layout: a kind whose attrs are fixed integer fields
     * keeps that many (drop any extra attr a recorder adds, e.g. an integer
     * rendering of SampleLoopOrder's weight, which is fattrs[0]) */
    int keep = fixed_int_attrs(loom_inst_kind_at(inst->kind));
    if (keep >= 0 && x.nattrs > keep) {
        for (int k = keep; k < x.nattrs && k < LOOM_MAX_INST_IO; k++)
            x.attrs[k] = 0;
        x.nattrs = keep;
    }
    loom_error e;
    loom_error_clear(&e);
    loom_status st = loom_trace_append(t, &x, &e);
    if (st) {
        rec_fail(t, st, e.msg);
        return;
    }
    for (int k = 0; k < inst->noutputs; k++)
        if (inst->outputs[k] >= 0 && inst->outputs[k] < LOOM_MAX_RVS)
            t->rec_map[inst->outputs[k]] = x.outputs[k];
}

loom_status loom_trace_status(const loom_trace *t, loom_error *err)
{
    if (t->rec_status == LOOM_OK)
        return LOOM_OK;
    return loom_error_set(err, t->rec_status, NULL, 0, 0, "%s", t->rec_msg);
}

/* ---- replay ----------------------------------------------------------- */

static loom_status replay_fail(loom_error *err, loom_status st, int i, int kind, const char *msg)
{
    return loom_error_set(err, st, NULL, 0, 0, "instruction %d (%s): %s", i, kind_name(kind), msg);
}

loom_status loom_trace_replay(const loom_trace *t, loom_schedule *sch, const loom_decision *decisions,
                              loom_error *err)
{
    return loom_trace_replay_prefix(t, t->ninsts, sch, decisions, NULL, err);
}

loom_status loom_trace_replay_prefix(const loom_trace *t, int ninsts, loom_schedule *sch,
                                     const loom_decision *decisions, int *rv_map, loom_error *err)
{
    loom_status st = loom_trace_status(t, err);
    if (st)
        return st;
    if (sch->recorder == loom_trace_recorder && sch->recorder_ctx == (const void *)t)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "replaying a trace into itself: give the schedule another trace to record into");
    /* trace RV -> schedule RV; on the stack for every trace a schedule can
     * record (at most LOOM_MAX_RVS RVs) */
    int stack_map[LOOM_MAX_RVS];
    int *map = t->nrvs <= LOOM_MAX_RVS ? stack_map : malloc(sizeof(int) * (size_t)t->nrvs);
    if (!map)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory replaying a trace");
    for (int k = 0; k < t->nrvs; k++)
        map[k] = -1;
    char msg[256];
    /* The instruction handed to apply: only the parts its counts cover are
     * copied from the trace (a loom_inst is ~850 bytes, mostly unused
     * capacity); what lies past the counts is never read (dsl/schedule/inst.c). */
    loom_inst x;
    memset(&x, 0, sizeof x);
    st = LOOM_OK;
    if (ninsts < 0 || ninsts > t->ninsts)
        ninsts = t->ninsts;
    for (int i = 0; i < ninsts && !st; i++) {
        const loom_inst *in = &t->insts[i];
        const loom_inst_kind *K = loom_inst_kind_at(in->kind);
        if (!K) {
            st = replay_fail(err, LOOM_ERR_INVALID, i, in->kind, "not an instruction kind of this loom");
            break;
        }
        if (in->ninputs < 0 || in->ninputs > LOOM_MAX_INST_IO || in->noutputs < 0 ||
            in->noutputs > LOOM_MAX_INST_IO) {
            st = replay_fail(err, LOOM_ERR_INVALID, i, in->kind, "input or output count out of range");
            break;
        }
        x.kind = in->kind;
        x.ninputs = in->ninputs;
        x.noutputs = in->noutputs;
        x.nattrs = in->nattrs;
        x.ndecision = in->ndecision;
        /* element loops, a handful of entries each: GCC's inline expansion
         * of a variable-size memcpy here (rep movsq) was slower */
        for (int k = 0; k < in->noutputs; k++)
            x.outputs[k] = in->outputs[k];
        int na = in->nattrs < 0 ? 0 : in->nattrs > LOOM_MAX_INST_IO ? LOOM_MAX_INST_IO : in->nattrs;
        for (int k = 0; k < na; k++) {
            x.attrs[k] = in->attrs[k];
            x.fattrs[k] = in->fattrs[k];
        }
        int nd = in->ndecision < 0 ? 0 : in->ndecision > LOOM_MAX_INST_IO ? LOOM_MAX_INST_IO : in->ndecision;
        for (int k = 0; k < nd; k++)
            x.decision[k] = in->decision[k];
        memcpy(x.sattr, in->sattr, sizeof x.sattr);
        for (int k = 0; k < in->ninputs; k++) {
            int r = in->inputs[k];
            if (r < 0 || r >= t->nrvs || map[r] < 0) {
                snprintf(msg, sizeof msg, "input %d is RV %d, which no earlier instruction defines", k, r);
                st = replay_fail(err, LOOM_ERR_INVALID, i, in->kind, msg);
                break;
            }
            x.inputs[k] = map[r];
        }
        if (st)
            break;
        if (K->decision != LOOM_DECISION_NONE && decisions) {
            const loom_decision *d = &decisions[i];
            if (d->n > LOOM_MAX_INST_IO) {
                snprintf(msg, sizeof msg, "override decision has %d entries (max %d)", d->n, LOOM_MAX_INST_IO);
                st = replay_fail(err, LOOM_ERR_INVALID, i, in->kind, msg);
                break;
            }
            if (d->n > 0) {
                x.ndecision = d->n;
                memcpy(x.decision, d->v, sizeof(int64_t) * (size_t)d->n);
            } else if (d->n < 0)
                x.ndecision = 0;
        }
        int outs[LOOM_MAX_LOOPS + LOOM_MAX_STMTS + LOOM_MAX_INST_IO];
        int nout = 0;
        int64_t used[LOOM_MAX_INST_IO];
        loom_error e; /* cleared field by field: a memset of its 1.3 KB per instruction showed in profiles */
        e.status = LOOM_OK;
        e.file[0] = e.msg[0] = '\0';
        e.line = e.col = 0;
        loom_status s = loom_inst_apply(sch, &x, used, outs, &nout, &e);
        if (s) {
            st = replay_fail(err, s, i, in->kind, e.msg);
            break;
        }
        /* the recorder keeps at most LOOM_MAX_INST_IO outputs */
        if (nout != in->noutputs && !(in->noutputs == LOOM_MAX_INST_IO && nout > LOOM_MAX_INST_IO)) {
            snprintf(msg, sizeof msg, "produced %d outputs, the trace names %d", nout, in->noutputs);
            st = replay_fail(err, LOOM_ERR_INVALID, i, in->kind, msg);
            break;
        }
        for (int k = 0; k < in->noutputs; k++) {
            int r = in->outputs[k];
            if (r < 0 || r >= t->nrvs || outs[k] < 0 || outs[k] >= sch->nrvs ||
                (int)sch->rvs[outs[k]].kind != (int)t->rv_kinds[r]) {
                snprintf(msg, sizeof msg, "output %d (RV %d) does not match what the instruction produced", k, r);
                st = replay_fail(err, LOOM_ERR_INVALID, i, in->kind, msg);
                break;
            }
            map[r] = outs[k];
        }
    }
    if (rv_map)
        memcpy(rv_map, map, sizeof(int) * (size_t)t->nrvs);
    if (map != stack_map)
        free(map);
    return st;
}

/* ---- equality ----------------------------------------------------------- */

static int inst_equal(const loom_inst *a, const loom_inst *b)
{
    if (a->kind != b->kind || a->ninputs != b->ninputs || a->noutputs != b->noutputs || a->nattrs != b->nattrs ||
        a->ndecision != b->ndecision)
        return 0;
    for (int k = 0; k < a->ninputs; k++)
        if (a->inputs[k] != b->inputs[k])
            return 0;
    for (int k = 0; k < a->noutputs; k++)
        if (a->outputs[k] != b->outputs[k])
            return 0;
    for (int k = 0; k < a->nattrs; k++)
        if (a->attrs[k] != b->attrs[k] || a->fattrs[k] != b->fattrs[k])
            return 0;
    for (int k = 0; k < a->ndecision; k++)
        if (a->decision[k] != b->decision[k])
            return 0;
    return strncmp(a->sattr, b->sattr, sizeof a->sattr) == 0;
}

int loom_trace_equal(const loom_trace *a, const loom_trace *b)
{
    if (a->ninsts != b->ninsts || a->nrvs != b->nrvs)
        return 0;
    for (int k = 0; k < a->nrvs; k++)
        if (a->rv_kinds[k] != b->rv_kinds[k])
            return 0;
    for (int i = 0; i < a->ninsts; i++)
        if (!inst_equal(&a->insts[i], &b->insts[i]))
            return 0;
    return 1;
}

/* ---- printing as C ---------------------------------------------------- */

static void print_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(out, "\\%03o", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* Shortest %g text that reads back as the same double. */
static void print_double(FILE *out, double d)
{
    char s[48];
    fputs(loom_format_double(s, sizeof s, d), out);
}

static void print_rv_list(FILE *out, const loom_trace *t, const int *rvs, int n)
{
    char nm[24];
    for (int k = 0; k < n; k++)
        fprintf(out, "%s%s", k ? ", " : "", loom__trace_rv_name(t, rvs[k], nm, sizeof nm));
}

static void print_i64_list(FILE *out, const int64_t *v, int n)
{
    for (int k = 0; k < n; k++)
        fprintf(out, "%s%" PRId64, k ? ", " : "", v[k]);
}

/* Print a C call from the kind's template (dsl/schedule/inst.h, c_call). */
static void print_call(FILE *out, const loom_trace *t, const loom_inst *in, const char *tp)
{
    char nm[24];
    int na = in->nattrs < 0 ? 0 : in->nattrs > LOOM_MAX_INST_IO ? LOOM_MAX_INST_IO : in->nattrs;
    for (const char *p = tp; *p; p++) {
        if (*p != '%' || !p[1]) {
            fputc(*p, out);
            continue;
        }
        char c = *++p;
        int count = c == 'n';
        if (count)
            c = *++p;
        int k = p[1] >= '0' && p[1] <= '9' ? p[1] - '0' : 0;
        if ((c == 'i' || c == 'I' || c == 'a' || c == 'f') && p[1] >= '0' && p[1] <= '9')
            p++;
        switch (c) {
        case 'i':
            if (k < in->ninputs)
                fputs(loom__trace_rv_name(t, in->inputs[k], nm, sizeof nm), out);
            else
                fputs("-1", out);
            break;
        case 'I':
            if (count)
                fprintf(out, "%d", in->ninputs > k ? in->ninputs - k : 0);
            else if (k < in->ninputs)
                print_rv_list(out, t, in->inputs + k, in->ninputs - k);
            break;
        case 'A':
            if (count)
                fprintf(out, "%d", na);
            else
                print_i64_list(out, in->attrs, na);
            break;
        case 'a': fprintf(out, "%" PRId64, k < na ? in->attrs[k] : 0); break;
        case 'f': print_double(out, in->fattrs[k]); break;
        case 'F':
            for (int q = 0; q < na; q++) {
                fputs(q ? ", " : "", out);
                print_double(out, in->fattrs[q]);
            }
            break;
        case 's': print_string(out, in->sattr); break;
        default: fputc(c, out); break; /* %% */
        }
    }
}

static void print_inst(FILE *out, const loom_trace *t, const loom_inst *in)
{
    const loom_inst_kind *K = loom_inst_kind_at(in->kind);
    char nm[24];
    /* the left-hand side */
    if (in->noutputs == 1)
        fprintf(out, "int %s = ", loom__trace_rv_name(t, in->outputs[0], nm, sizeof nm));
    if (!K)
        fprintf(out, "/* unknown instruction kind %d */", in->kind);
    else
        print_call(out, t, in,
                   K->c_call_more && in->ninputs > loom_inst_kind_min_inputs(K) ? K->c_call_more : K->c_call);
    if (in->noutputs > 1) {
        fprintf(out, " -> ");
        print_rv_list(out, t, in->outputs, in->noutputs);
    }
    fputc(';', out);
    if (in->ndecision > 0) {
        fprintf(out, " /* decision: ");
        if (K && K->decision == LOOM_DECISION_PER_OUTPUT) {
            fputc('[', out);
            print_i64_list(out, in->decision, in->ndecision);
            fputc(']', out);
        } else
            print_i64_list(out, in->decision, in->ndecision);
        fprintf(out, " */");
    }
    fputc('\n', out);
}

void loom_trace_print_c(const loom_trace *t, const loom_program *prog, FILE *out)
{
    fprintf(out, "/* loom trace: %d instructions", t->ninsts);
    if (prog)
        fprintf(out, ", workload %016" PRIx64, loom_program_hash(prog));
    else if (t->has_workload)
        fprintf(out, ", workload %016" PRIx64, t->workload);
    fprintf(out, "; error checks elided, \"call -> a, b;\" binds the outputs in order */\n");
    if (t->rec_status)
        fprintf(out, "/* recording failed: %s */\n", t->rec_msg);
    for (int i = 0; i < t->ninsts; i++)
        print_inst(out, t, &t->insts[i]);
}

int loom_trace_sampler_inst(const loom_trace *t, int ordinal)
{
    for (int i = 0, j = 0; i < t->ninsts; i++)
        if (loom_inst_kind_is_sampler(t->insts[i].kind) && j++ == ordinal)
            return i;
    return -1;
}
