/* Printing a design space with its holes and estimating its size
 * (module.h: loom_space_print; `loom space`). */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "../traces/trace.h"

typedef struct hole_ctx {
    loom_trace *t;
    const loom_schedule *sch;
    int cap;
    double *choices; /* per recorded instruction: its number of choices (0: not a sampler) */
    int n;
} hole_ctx;

/* Ordered n-tuples of positive integers with product e and last <= max_inner
 * (-1: any): SamplePerfectTile's choices. */
static double count_tilings(int64_t e, int n, int64_t max_inner)
{
    if (n == 1)
        return max_inner < 0 || e <= max_inner ? 1 : 0;
    double c = 0;
    for (int64_t d = 1; d <= e; d++)
        if (e % d == 0)
            c += count_tilings(e / d, n - 1, max_inner);
    return c;
}

static double choices(const loom_schedule *sch, const loom_inst *in)
{
    if (in->kind == LOOM_INST_SAMPLE_CATEGORICAL)
        return in->nattrs;
    if (in->kind == LOOM_INST_SAMPLE_PERFECT_TILE) {
        const loom_rv *r = &sch->rvs[in->inputs[0]];
        int64_t e = loom_iter_extent(sch, r->stage, r->iter);
        int n = (int)in->attrs[0];
        int64_t mx = in->attrs[1];
        if (e <= 0) /* data-dependent: powers of two up to max_innermost for the inner tiles */
            return pow(mx > 0 ? floor(log2((double)mx)) + 1 : 7, n - 1);
        /* the tiles are the loop's extent's; SamplePerfectTile draws the last
         * n-tuple as ordered: count them backwards (innermost bounded) */
        return count_tilings(e, n, mx);
    }
    if (in->kind == LOOM_INST_SAMPLE_LOOP_ORDER) {
        int s = sch->rvs[in->inputs[0]].stage;
        return loom_legal_loop_orders(sch, s, NULL, 4096);
    }
    if (in->kind == LOOM_INST_SAMPLE_FUSION_GROUP) {
        /* any subset of the offered edges */
        int prod[LOOM_MAX_STMTS], cons[LOOM_MAX_STMTS];
        return ldexp(1.0, loom_fusion_edges(sch, prod, cons, NULL));
    }
    if (in->kind == LOOM_INST_SAMPLE_COMPUTE_LOCATION) {
        /* at most: inline, root, the first consumer's loops before its first reduction */
        int s = sch->rvs[in->inputs[0]].stage;
        int c = loom_first_consumer(sch->prog, s), k = 0;
        double n = 1 + (loom_can_inline(sch, s) || sch->stages[s].compute_at == LOOM_AT_INLINE);
        if (c >= 0)
            while (k < sch->stages[c].nloops && !loom_iter_reduces(sch, c, sch->stages[c].loops[k].iter))
                k++;
        return n + k;
    }
    return 0;
}

static void recorder(void *vctx, const loom_inst *inst)
{
    hole_ctx *h = vctx;
    int before = h->t->ninsts;
    loom_trace_recorder(h->t, inst);
    if (h->t->ninsts == before)
        return;
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 256;
        double *c = realloc(h->choices, (size_t)cap * sizeof *c);
        if (!c)
            return;
        h->choices = c;
        h->cap = cap;
    }
    h->choices[h->n++] = inst->ndecision > 0 ? choices(h->sch, inst) : 0;
}

loom_status loom_space_print(const loom_space *s, const loom_program *prog, unsigned long seed, int draws,
                             FILE *out, loom_error *err)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    loom_schedule *sch = malloc(sizeof *sch);
    hole_ctx h = {0};
    h.t = loom_trace_new();
    char *text = NULL;
    size_t len = 0;
    loom_status rc = LOOM_OK;
    if (!rng || !sch || !h.t) {
        rc = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto done;
    }
    gsl_rng_set(rng, seed);
    if (draws < 1)
        draws = 1;
    double sum_log = 0, min_log = INFINITY, max_log = 0;
    int min_insts = 1 << 30, max_insts = 0, min_holes = 1 << 30, max_holes = 0;
    for (int d = 0; d < draws; d++) {
        loom_trace_clear(h.t);
        h.n = 0;
        rc = loom_schedule_init(sch, prog, rng, err);
        if (rc)
            goto done;
        sch->recorder = recorder;
        sch->recorder_ctx = &h;
        h.sch = sch;
        rc = loom_space_apply(s, sch, err);
        if (!rc)
            rc = loom_trace_status(h.t, err);
        if (rc)
            goto done;
        double lg = 0;
        int holes = 0;
        for (int k = 0; k < h.n; k++)
            if (h.choices[k] > 0) {
                lg += log10(h.choices[k]);
                holes++;
            }
        sum_log += lg;
        min_log = lg < min_log ? lg : min_log;
        max_log = lg > max_log ? lg : max_log;
        min_insts = h.t->ninsts < min_insts ? h.t->ninsts : min_insts;
        max_insts = h.t->ninsts > max_insts ? h.t->ninsts : max_insts;
        min_holes = holes < min_holes ? holes : min_holes;
        max_holes = holes > max_holes ? holes : max_holes;
        if (d > 0)
            continue;
        /* the program of the first draw, each sampler's decision shown as a hole */
        FILE *mem = open_memstream(&text, &len);
        if (!mem) {
            rc = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
            goto done;
        }
        loom_trace_print_c(h.t, prog, mem);
        fclose(mem);
        fprintf(out, "/* design space:");
        for (int k = 0; k < loom_space_count(s); k++)
            fprintf(out, "%s%s", k ? ", " : " ", loom_space_module(s, k));
        fprintf(out, " (blocks consumers first, every module on each block) */\n");
        char *line = text;
        int idx = -1; /* the first line is the trace's header comment */
        while (line && *line) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = 0;
            if (line[0] == '/' && line[1] == '*') {
                fprintf(out, "%s\n", line);
            } else {
                idx++;
                char *dec = strstr(line, " /* decision: ");
                if (dec && idx < h.n && h.choices[idx] > 0) {
                    *dec = 0;
                    char *val = dec + strlen(" /* decision: ");
                    char *end = strstr(val, " */");
                    if (end)
                        *end = 0;
                    fprintf(out, "%s /* HOLE: %.0f choices; drawn: %s */\n", line, h.choices[idx], val);
                } else
                    fprintf(out, "%s\n", line);
            }
            line = nl ? nl + 1 : NULL;
        }
    }
    fprintf(out,
            "/* size estimate: about 10^%.1f schedules (product of the choices of every hole; mean over %d draws, "
            "10^%.1f..10^%.1f); %d..%d instructions, %d..%d holes per draw */\n",
            sum_log / draws, draws, min_log, max_log, min_insts, max_insts, min_holes, max_holes);
done:
    free(text);
    free(h.choices);
    loom_trace_free(h.t);
    free(sch);
    if (rng)
        gsl_rng_free(rng);
    return rc;
}
