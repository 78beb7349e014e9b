/* loom benchmark: fused attention (RollingUpdate, issue 7) against unfused
 * attention -- loom's, and an unfused OpenBLAS implementation (sgemm Q K^T,
 * a row softmax, sgemm P V: ../shared/research/attention.md section 3.3) --
 * at H x N x D = 12 x 512 x 64 and 1 x 4096 x 64, causal and not, and
 * against ggml's CPU flash attention (ggml_flash_attn_ext, built from
 * source by bench/build_ggml.sh when the source can be found:
 * ggml_attention.h), with the fraction of the machine's fp32 FMA peak
 * (roofline.h: ISA, vector width and registers detected at run time).
 *
 * FLOPs are Neptune's model (attention.md section 4): 4 N^2 D per head, and
 * 2 N (N + 1) D per causal head; GFLOP/s = FLOPs / median latency.  Every
 * kernel reported, OpenBLAS's too, is checked against loom's reference
 * interpreter on the same data (a wrong kernel is marked NO and a tuning
 * record whose output was wrong is a failed record, never a best).
 *
 * Two tables:
 *  - tuned (issue 7's figures): per case two tuning campaigns (loom_tune,
 *    search/tune/tune.h) on the case's data, each in a fresh database directory:
 *      "all": the target's default design space, whose attention-fusion
 *        module samples unfused (0) or fused RollingUpdate (1); reported:
 *        its best *fused* record (one whose trace, replayed, has a rolled
 *        stage) and whether its overall best is fused;
 *      "unfused": the default module list without attention-fusion;
 *        reported: its best record ("tuned unfused").
 *    Each campaign's 3 fastest candidates by its own samples are replayed
 *    and measured again, interleaved with ggml and OpenBLAS, in --rounds
 *    rounds (default 3) with the same measurement options as the other
 *    columns (and checked again); every kernel's figure is its best median
 *    over the rounds and the tuned figure the best candidate's; the
 *    campaigns themselves measure with small budgets (--min-seconds,
 *    --time-limit) so that the 4096 unfused kernels (~1 s a run) keep a
 *    campaign within minutes.
 *  - hand (comparable with the earlier figures in bench/README.md):
 *      fused: P inlined, S computed at m's key loop (one dot product per
 *        score), l and O rolled into that loop (RollingUpdate), the row
 *        loop parallel -- written by hand;
 *      unfused: loom_default_build (the default schedule: Scorch's
 *         heuristic, modules/default.c's, since the space has no default
 *         for an attention chain), every block
 *        stored at the root.
 * The causal cases use the single-head causal workload (a causal pattern
 * is 2-D, so heads are separate kernels): a 12-head figure is the 1-head
 * latency x 12, the same GFLOP/s; the campaigns of that case tune the
 * 1 x 512 x 64 causal kernel.  The OpenBLAS causal baseline computes the
 * full products and masks the softmax (the usual unfused practice), but is
 * credited with the causal FLOPs only.
 *
 * OpenMP/OpenBLAS and fork: loom measures kernels in forked children, so
 * the roofline and OpenBLAS run in forked children too (bench_spmm.c).
 * Usage: see USAGE below.
 */
#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "openblas_core.h"

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../runtime/measure/pipeline.h"
#include "../search/database/database.h"
#include "../search/tune/tune.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "../runtime/machine/machine.h"
#include "common.h"
#include "blas_attention.h"
#include "ggml_attention.h"
#include "roofline.h"

static const char *MH_DENSE = "param H = 12\nparam N = 512\nparam D = 64\n"
                              "tensor Q(H, N, D) dense\ntensor K(H, N, D) dense\ntensor V(H, N, D) dense\n"
                              "tensor O(H, N, D) dense output\n"
                              "S(h, i, j) = Q(h, i, d) * K(h, j, d) * 0.125\n"
                              "m(h, i) max= S(h, i, j)\n"
                              "P(h, i, j) = exp(S(h, i, j) - m(h, i))\n"
                              "l(h, i) += P(h, i, j)\n"
                              "O(h, i, e) += P(h, i, j) * V(h, j, e) / l(h, i)\n";
static const char *ONE_DENSE = "param N = 4096\nparam D = 64\n"
                               "tensor Q(N, D) dense\ntensor K(N, D) dense\ntensor V(N, D) dense\n"
                               "tensor O(N, D) dense output\n"
                               "S(i, j) = Q(i, d) * K(j, d) * 0.125\n"
                               "m(i) max= S(i, j)\n"
                               "P(i, j) = exp(S(i, j) - m(i))\n"
                               "l(i) += P(i, j)\n"
                               "O(i, e) += P(i, j) * V(j, e) / l(i)\n";
static const char *ONE_CAUSAL = "param N = 4096\nparam D = 64\n"
                                "tensor Q(N, D) dense\ntensor K(N, D) dense\ntensor V(N, D) dense\n"
                                "tensor W(N, N) causal\ntensor O(N, D) dense output\n"
                                "S(i, j) = W(i, j) * Q(i, d) * K(j, d) * 0.125\n"
                                "m(i) max= S(i, j)\n"
                                "P(i, j) = exp(S(i, j) - m(i))\n"
                                "l(i) += P(i, j)\n"
                                "O(i, e) += P(i, j) * V(j, e) / l(i)\n";

/* ---- options ---------------------------------------------------------------- */

static const char *USAGE =
    "usage: bench_attention [options]\n"
    "  --quick            1 x 1024 instead of 1 x 4096, and 16 trials per campaign\n"
    "  --trials N         records per tuning campaign (default 48; --quick 16)\n"
    "  --no-tune          no campaigns: only the hand-written fused schedule, loom's\n"
    "                     default schedule and OpenBLAS (the earlier table)\n"
    "  --rounds N         final interleaved rounds: each campaign's 3 fastest candidates,\n"
    "                     ggml and OpenBLAS measured again N times, best median kept (default 3)\n"
    "  --keep-db DIR      keep the campaigns' databases in DIR/<case>-{all,unfused}\n"
    "                     (a directory that already holds records resumes them);\n"
    "                     default: a fresh directory under $TMPDIR, removed at the end\n"
    "  --min-seconds S    campaigns: timed kernel seconds per candidate (default 0.05)\n"
    "  --time-limit S     campaigns: seconds per candidate's child (default 10)\n"
    "  -h, --help         this text\n"
    "Progress (one line per campaign, live on a terminal) goes to stderr.\n";

/* Candidates per campaign measured again at the end (final_rounds). */
#define TOPK 3

typedef struct bench_args {
    int quick, tune, trials, rounds;
    const char *keep_db;
    double min_seconds, time_limit;
} bench_args;

/* ---- results ------------------------------------------------------------------- */

typedef struct kernel_fig {
    double lat; /* seconds for the whole case (x heads_factor); 0: no figure */
    int ok;     /* checked against the reference */
} kernel_fig;

typedef struct campaign_fig {
    int ran;                    /* loom_tune returned LOOM_OK */
    int trials, measured, failed, ok, fused_ok;
    int best_is_fused;          /* the campaign's best ok record is fused */
    double best_rec_s;          /* its latency as the campaign measured it (per kernel) */
    double fused_rec_s;         /* the best fused record's, INFINITY if none */
    double wall_s;
} campaign_fig;

typedef struct case_fig {
    char label[64];
    double flops; /* of the whole case */
    double tref;  /* reference interpreter seconds */
    kernel_fig hand, dflt, blas, tfused, tunf, ggml;
    double blas_split_lat[2]; /* OpenBLAS threaded / split latencies (0: none) */
    campaign_fig all, unf;
} case_fig;

static double gflops(const case_fig *c, const kernel_fig *k)
{
    return k->lat > 0 ? c->flops / k->lat / 1e9 : 0;
}

/* ---- schedules ------------------------------------------------------------------- */

static int fused_schedule(loom_schedule *sch, loom_error *err)
{
    int m, S, P, l, O, loops[LOOM_MAX_LOOPS], n, sl[LOOM_MAX_LOOPS], ns, order[LOOM_MAX_LOOPS], k = 0;
    if (loom_get_block(sch, "m", &m, err) || loom_get_block(sch, "S", &S, err) || loom_get_block(sch, "P", &P, err) ||
        loom_get_block(sch, "l", &l, err) || loom_get_block(sch, "O", &O, err) ||
        loom_get_loops(sch, m, loops, &n, err) || loom_parallel(sch, loops[0], err) ||
        loom_get_loops(sch, S, sl, &ns, err))
        return -1;
    for (int red = 0; red < 2; red++) /* S's reduction innermost: one dot product per score */
        for (int q = 0; q < ns; q++)
            if (loom_iter_reduces(sch, sch->rvs[S].stage, sch->rvs[sl[q]].iter) == red)
                order[k++] = sl[q];
    return loom_reorder(sch, order, ns, err) || loom_compute_at(sch, S, loops[n - 1], err) ||
                   loom_compute_inline(sch, P, err) || loom_rolling_update(sch, l, loops[n - 1], -1, err) ||
                   loom_rolling_update(sch, O, loops[n - 1], -1, err)
               ? -1
               : 0;
}

/* 1 when some stage of the schedule is rolled into another's reduction loop
 * (RollingUpdate): the fused kernel. */
static int is_fused(const loom_schedule *sch)
{
    for (int s = 0; s < sch->nstages; s++)
        if (sch->stages[s].rolling)
            return 1;
    return 0;
}

/* A schedule of prog from a trace (JSON text); NULL with err filled when it
 * does not replay.  Caller frees. */
static loom_schedule *replay_json(const loom_program *prog, const char *json, loom_error *err)
{
    loom_trace *t = NULL;
    loom_schedule *sch = malloc(sizeof *sch);
    if (!sch) {
        loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        return NULL;
    }
    if (loom_trace_from_json(json, "record", &t, err) || loom_schedule_init(sch, prog, NULL, err) ||
        loom_trace_replay(t, sch, NULL, err)) {
        loom_trace_free(t);
        free(sch);
        return NULL;
    }
    loom_trace_free(t);
    return sch;
}

/* Validate and measure sch on the case's data (its outputs checked). */
static void measure_schedule(const char *label, const char *what, const loom_schedule *sch, loom_dataset *ds,
                             const loom_reference *ref, const loom_run_opts *o, int64_t heads_factor,
                             kernel_fig *out)
{
    loom_error err;
    loom_error_clear(&err);
    loom_limits cpu = loom_target_cpu_limits(); /* the CPU the bench runs on */
    loom_violation vio;
    loom_run_result res;
    memset(out, 0, sizeof *out);
    if (loom_validate(sch, &cpu, &vio, &err) != LOOM_OK || loom_pipeline_run_schedule(sch, ds, ref, o, &res, &err)) {
        fprintf(stderr, "%s: %s: %s\n", label, what, err.msg);
        return;
    }
    if (res.status != LOOM_OK) { /* including a wrong output: LOOM_ERR_WRONG */
        fprintf(stderr, "%s: %s: %s\n", label, what, res.message);
        return;
    }
    out->lat = res.latency_s * (double)heads_factor;
    out->ok = res.correct;
}

/* ---- tuning campaigns ----------------------------------------------------------- */

typedef struct progress_ctx {
    const char *label, *which;
    int tty;
    double last;
} progress_ctx;

static void show_progress(void *ctx, const loom_tune_progress *p)
{
    progress_ctx *pc = ctx;
    double t = loom_now_seconds();
    /* a terminal gets a live line; a log a line every 30 s */
    if (!pc->tty && (p->done < p->total ? t - pc->last < 30 : 1))
        return;
    pc->last = t;
    fprintf(stderr, "%s%s [%s]: trials %d/%d, ok %d, failed %d, best %.3f ms, %.0f s%s", pc->tty ? "\r\033[K" : "",
            pc->label, pc->which, p->done, p->total, p->valid, p->failed,
            isfinite(p->best_latency_s) ? 1e3 * p->best_latency_s : 0.0, p->elapsed_s, pc->tty ? "" : "\n");
    fflush(stderr);
}

/* The default cpu module list without attention-fusion. */
static void unfused_modules(char *buf, size_t n)
{
    const char *all = loom_default_modules("cpu");
    buf[0] = '\0';
    while (all && *all) {
        size_t len = strcspn(all, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), all);
        char *s = name;
        while (*s == ' ')
            s++;
        for (char *e = s + strlen(s); e > s && e[-1] == ' ';)
            *--e = '\0';
        if (*s && strcmp(s, "attention-fusion")) {
            size_t l = strlen(buf);
            snprintf(buf + l, n - l, "%s%s", l ? "," : "", s);
        }
        all += len + (all[len] == ',');
    }
}

/* Run one campaign in `dir` and summarise its records of this workload,
 * data and target.  *best (may be NULL) receives the trace JSON (malloc'd)
 * of the best record, *best_fused that of the best fused record. */
/* One campaign; top[0..*ntop) receive (caller frees) the traces of its
 * TOPK fastest ok records by the campaign's own samples -- fused ones only
 * when fused_only -- for the final interleaved rounds. */
static void campaign(const char *label, const char *which, const char *dir, const char *modules,
                     loom_program *prog, loom_dataset *ds, const char *text, const bench_args *a,
                     campaign_fig *cf, int fused_only, char **top, int *ntop)
{
    memset(cf, 0, sizeof *cf);
    cf->best_rec_s = cf->fused_rec_s = INFINITY;
    *ntop = 0;
    loom_tune_opts o = loom_tune_defaults();
    o.db_dir = dir;
    o.trials = a->trials;
    o.modules = modules;
    o.workload_name = "attention";
    o.workload_text = text;
    o.run.measure.min_seconds = a->min_seconds;
    o.run.measure.min_repeats = 3;
    o.run.measure.time_limit = a->time_limit;
    progress_ctx pc = {label, which, isatty(2), loom_now_seconds()};
    fprintf(stderr, "%s [%s]: campaign of %d trials in %s\n", label, which, a->trials, dir);
    o.progress = show_progress;
    o.progress_ctx = &pc;
    loom_tune_result r;
    loom_error err;
    loom_error_clear(&err);
    loom_status st = loom_tune(prog, ds, &o, &r, &err);
    if (pc.tty)
        fputc('\n', stderr);
    if (st) {
        fprintf(stderr, "%s [%s]: campaign failed: %s\n", label, which, err.msg);
        return;
    }
    cf->ran = 1;
    cf->trials = r.trials;
    cf->measured = r.measured;
    cf->wall_s = r.total_s;
    for (int s = 1; s < 16; s++)
        cf->failed += r.failed_by_status[s];
    loom_db *db = NULL;
    const loom_record **recs = NULL;
    if (loom_db_open_readonly(dir, stderr, &db, &err)) {
        fprintf(stderr, "%s [%s]: %s\n", label, which, err.msg);
        return;
    }
    char dfp[17];
    snprintf(dfp, sizeof dfp, "%016llx", (unsigned long long)loom_data_fingerprint(ds));
    int n = loom_db_query(db, loom_program_hash(prog), r.target_fp, &recs);
    for (int i = 0; i < n; i++) { /* best first */
        const loom_record *rec = recs[i];
        if (rec->status != LOOM_OK || !rec->data_fp || strcmp(rec->data_fp, dfp) || rec->nsamples)
            continue; /* nsamples: a re-measurement record, not a trial */
        loom_schedule *sch = replay_json(prog, rec->trace_json, &err);
        if (!sch) {
            fprintf(stderr, "%s [%s]: record at line %d does not replay: %s\n", label, which, rec->line, err.msg);
            continue;
        }
        int fused = is_fused(sch);
        free(sch);
        if (cf->ok++ == 0) {
            cf->best_is_fused = fused;
            cf->best_rec_s = rec->latency_s;
        }
        if (fused && cf->fused_ok++ == 0)
            cf->fused_rec_s = rec->latency_s;
        if ((fused || !fused_only) && *ntop < TOPK)
            top[(*ntop)++] = strdup(rec->trace_json);
    }
    free(recs);
    loom_db_close(db);
    fprintf(stderr,
            "%s [%s]: %d trials (%d measured now, %d failed), %d ok of which %d fused; best %.3f ms per kernel (%s)",
            label, which, cf->trials, cf->measured, cf->failed, cf->ok, cf->fused_ok,
            isfinite(cf->best_rec_s) ? 1e3 * cf->best_rec_s : 0.0, cf->best_is_fused ? "fused" : "unfused");
    if (isfinite(cf->fused_rec_s))
        fprintf(stderr, ", best fused %.3f ms", 1e3 * cf->fused_rec_s);
    fprintf(stderr, "; %.0f s\n", cf->wall_s);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* ---- peers and the final rounds ---------------------------------------------------- */

/* Keep the faster of two figures of one kernel (the best median over rounds). */
static void keep_best(kernel_fig *k, double lat, int ok)
{
    if (lat > 0 && (k->lat == 0 || (ok && !k->ok) || (ok == k->ok && lat < k->lat))) {
        k->lat = lat;
        k->ok = ok;
    }
}

/* OpenBLAS, both parallelisations (blas_attention.h), each checked; c->blas keeps
 * the faster correct one, c->blas_split_lat each one's best so far. */
static void measure_blas(const char *label, blas_job *J, loom_dataset *ds, const loom_reference *ref,
                         int64_t heads_factor, case_fig *c)
{
    for (int split = 0; split < 2; split++) {
        double bl = 0;
        J->split = split;
        loom_dataset_fill_outputs(ds, 0.0f);
        if (loom_bench_run_in_child(loom_bench_blas_child, J, &bl, 1) != 0) {
            fprintf(stderr, "%s: OpenBLAS (%s): the measuring child failed\n", label, split ? "split" : "threaded");
            continue;
        }
        loom_check chk;
        loom_reference_check(ds, ref, &chk);
        double lat = bl * (double)heads_factor;
        if (c->blas_split_lat[split] == 0 || lat < c->blas_split_lat[split])
            c->blas_split_lat[split] = lat;
        if (!chk.correct)
            fprintf(stderr, "%s: OpenBLAS (%s): WRONG (max rel err %g)\n", label, split ? "split" : "threaded",
                    chk.max_rel_err);
        keep_best(&c->blas, lat, chk.correct); /* a wrong one is reported, marked NO */
    }
}

/* ggml's flash attention in a child, checked; out keeps the best figure.
 * The child also reports how many CPUs ggml's threads had on average (its
 * CPU time over wall time).  ggml's threads meet at spinning barriers, so
 * two of them sharing one CPU wait a time slice at every barrier: on
 * 2026-12-01 the 12 x 512 x 64 causal case read 4.5 GFLOP/s in this child
 * against 57 in bench/ggml_repeat.c.  Below 0.7 CPUs a thread the figure
 * is reported on stderr and measured once more after a pause (the best of
 * the two is kept). */
static void measure_ggml(const char *label, ggml_attn_job *G, loom_dataset *ds, const loom_reference *ref,
                         int64_t heads_factor, kernel_fig *out)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        double gl[3] = {0, 0, 0};
        loom_dataset_fill_outputs(ds, 0.0f);
        if (loom_bench_run_in_child(loom_bench_ggml_child, G, gl, 3) != 0) {
            fprintf(stderr, "%s: ggml: the measuring child failed\n", label);
            return;
        }
        loom_check chk;
        loom_reference_check(ds, ref, &chk);
        if (!chk.correct)
            fprintf(stderr, "%s: ggml: WRONG (max rel err %g)\n", label, chk.max_rel_err);
        keep_best(out, gl[0] * (double)heads_factor, chk.correct);
        if (!(gl[2] >= 2 && gl[1] < 0.7 * gl[2]))
            return;
        fprintf(stderr,
                "%s: ggml: its %.0f threads had %.2f CPUs on average (CPU time / wall time): %.3f ms a run%s\n",
                label, gl[2], gl[1], 1e3 * gl[0], attempt ? "" : "; measured again after a pause");
        usleep(500000);
    }
}

/* The tuned figures: the campaigns' TOPK fastest candidates by their own
 * samples (fused ones of the "all" campaign, any of the unfused one) and the
 * two peers, measured again in `rounds` interleaved rounds; each kernel's
 * figure is its best median over the rounds (the peers' include their first
 * measurement), and "tuned fused" / "tuned unfused" is the best candidate's.
 * One window of the sampled best alone read 1 x 4096 x 64 at 21.4 ms where
 * loom tune's own interleaved re-measurement of that campaign read 15.3 ms
 * (2026-11-28): a single window of one candidate is not a figure. */
static void final_rounds(const char *label, const loom_program *prog, loom_dataset *ds, const loom_reference *ref,
                         const loom_run_opts *o, int64_t heads_factor, int rounds, char *top[2][TOPK],
                         const int ntop[2], blas_job *J, ggml_attn_job *G, case_fig *c)
{
    loom_schedule *sch[2][TOPK] = {{NULL}};
    kernel_fig fig[2][TOPK];
    memset(fig, 0, sizeof fig);
    const char *what[2] = {"tuned fused", "tuned unfused"};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < ntop[k]; i++) {
            loom_error err;
            loom_error_clear(&err);
            sch[k][i] = replay_json(prog, top[k][i], &err);
            if (!sch[k][i])
                fprintf(stderr, "%s: %s candidate %d: %s\n", label, what[k], i + 1, err.msg);
            else if (k == 1 && is_fused(sch[k][i])) { /* cannot happen without attention-fusion */
                fprintf(stderr, "%s: the unfused campaign's candidate %d is fused: not reported\n", label, i + 1);
                free(sch[k][i]);
                sch[k][i] = NULL;
            }
        }
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < ntop[k]; i++)
                if (sch[k][i]) {
                    kernel_fig one;
                    measure_schedule(label, what[k], sch[k][i], ds, ref, o, heads_factor, &one);
                    keep_best(&fig[k][i], one.lat, one.ok);
                }
        measure_blas(label, J, ds, ref, heads_factor, c);
        if (G)
            measure_ggml(label, G, ds, ref, heads_factor, &c->ggml);
    }
    kernel_fig *out[2] = {&c->tfused, &c->tunf};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < ntop[k]; i++) {
            if (fig[k][i].lat > 0)
                fprintf(stderr, "%s: %s candidate %d: best of %d rounds %.3f ms for the case%s\n", label, what[k],
                        i + 1, rounds, 1e3 * fig[k][i].lat, fig[k][i].ok ? "" : " (WRONG)");
            keep_best(out[k], fig[k][i].lat, fig[k][i].ok);
            free(sch[k][i]);
        }
}

/* ---- one case ------------------------------------------------------------ */

static void bench_case(const char *label, const char *slug, const char *text, int64_t H, int64_t N, int64_t D,
                       int causal, int64_t heads_factor, const bench_args *a, const char *dbroot, case_fig *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->label, sizeof c->label, "%s", label);
    loom_program *prog = NULL;
    loom_error err;
    loom_error_clear(&err);
    loom_param_spec ps[1];
    snprintf(ps[0].name, sizeof ps[0].name, "N");
    ps[0].value = N;
    loom_dataset *ds = NULL;
    if (loom_program_parse_string(text, label, &prog, &err) ||
        loom_dataset_load(prog, NULL, 0, ps, 1, 7, &ds, &err)) {
        fprintf(stderr, "%s: %s\n", label, err.msg);
        loom_program_free(prog);
        return;
    }
    double t0 = loom_now_seconds();
    loom_reference *ref = NULL;
    if (loom_reference_run(ds, &ref, &err)) {
        fprintf(stderr, "%s: reference: %s\n", label, err.msg);
        loom_dataset_free(ds);
        loom_program_free(prog);
        return;
    }
    c->tref = loom_now_seconds() - t0;
    c->flops = (causal ? 2.0 * N * (N + 1) * D : 4.0 * N * N * D) * (double)(H * heads_factor);
    loom_run_opts o = loom_run_defaults();
    o.measure.min_seconds = 0.3;
    o.measure.min_repeats = 3;
    o.measure.time_limit = 600;
    for (int v = 0; v < 2; v++) { /* the hand-written fused schedule and loom's default */
        loom_schedule *sch = malloc(sizeof *sch);
        int st = !sch || loom_schedule_init(sch, prog, NULL, &err) != LOOM_OK;
        if (!st)
            st = v == 0 ? fused_schedule(sch, &err) : (loom_default_build(NULL, NULL, sch, NULL, &err) != LOOM_OK);
        if (st)
            fprintf(stderr, "%s: %s: %s\n", label, v ? "default" : "hand fused", err.msg);
        else
            measure_schedule(label, v ? "default" : "hand fused", sch, ds, ref, &o, heads_factor,
                             v ? &c->dflt : &c->hand);
        free(sch);
    }
    /* OpenBLAS on the same inputs, its output checked like loom's */
    blas_job J = {H, N, D, causal, NULL, NULL, NULL, NULL, 0};
    for (int t = 0; t < prog->ntensors; t++) {
        const char *nm = prog->tensors[t].name;
        if (!strcmp(nm, "Q"))
            J.Q = ds->t[t].vals;
        if (!strcmp(nm, "K"))
            J.K = ds->t[t].vals;
        if (!strcmp(nm, "V"))
            J.V = ds->t[t].vals;
        if (!strcmp(nm, "O"))
            J.O = ds->t[t].vals;
    }
    /* both parallelisations; the faster correct one is the baseline */
    measure_blas(label, &J, ds, ref, heads_factor, c);
    /* ggml's flash attention (ggml_attention.h) on the same inputs, checked */
    int ggml_ok = loom_bench_ggml_available(NULL);
    ggml_attn_job G = {H, N, D, causal, 0.125f, J.Q, J.K, J.V, J.O};
    if (ggml_ok)
        measure_ggml(label, &G, ds, ref, heads_factor, &c->ggml);
    if (a->tune) {
        char dir[2][1200], mods[512];
        unfused_modules(mods, sizeof mods);
        snprintf(dir[0], sizeof dir[0], "%s/%s-all", dbroot, slug);
        snprintf(dir[1], sizeof dir[1], "%s/%s-unfused", dbroot, slug);
        char *top[2][TOPK];
        int ntop[2];
        campaign(label, "all modules", dir[0], NULL, prog, ds, text, a, &c->all, 1, top[0], &ntop[0]);
        campaign(label, "unfused", dir[1], mods, prog, ds, text, a, &c->unf, 0, top[1], &ntop[1]);
        final_rounds(label, prog, ds, ref, &o, heads_factor, a->rounds, top, ntop, &J, ggml_ok ? &G : NULL, c);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < ntop[k]; i++)
                free(top[k][i]);
    }
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(prog);
}

/* ---- output ------------------------------------------------------------------ */

static void fig_cell(char *buf, size_t n, const case_fig *c, const kernel_fig *k)
{
    if (k->lat > 0)
        snprintf(buf, n, "%.2f%s", gflops(c, k), k->ok ? "" : " WRONG");
    else
        snprintf(buf, n, "-");
}

static void pct_cell(char *buf, size_t n, double g, double peak)
{
    if (g > 0 && peak > 0)
        snprintf(buf, n, "%.1f%%", 100 * g / peak);
    else
        snprintf(buf, n, "-");
}

static void ratio_cell(char *buf, size_t n, double a, double b)
{
    if (a > 0 && b > 0)
        snprintf(buf, n, "%.2fx", a / b);
    else
        snprintf(buf, n, "-");
}

static void print_tuned(const case_fig *cs, int ncase, double peak, int trials)
{
    printf("Tuned (issue 7): per case a %d-trial campaign over the default design space (\"all\": attention-fusion\n"
           "samples unfused or fused) and one without attention-fusion (\"unfused\"); \"tuned fused\" is the all\n"
           "campaign's best fused record, \"tuned unfused\" the unfused campaign's best: each campaign's 3 fastest\n"
           "candidates by its own samples, ggml and OpenBLAS measured again in interleaved rounds, each kernel's best\n"
           "median kept, the best candidate reported.\n"
           "Goal (issue 12): fused >= 1.3x ggml (or >= 2.5x OpenBLAS without ggml) and >= 60%% of peak (non-causal).\n\n",
           trials);
    printf("| %-22s | %11s | %6s | %13s | %6s | %9s | %6s | %9s | %6s | %7s | %7s | %7s | %8s | %14s | %13s |\n",
           "H x N x D", "tuned fused", "% peak", "tuned unfused", "% peak", "OpenBLAS", "% peak", "ggml", "% peak",
           "vs ggml", "vs BLAS", "vs unf", "all best", "all n/fail/fus", "unf. n/fail");
    printf("|------------------------|-------------|--------|---------------|--------|-----------|--------|-----------|"
           "--------|---------|---------|---------|----------|----------------|---------------|\n");
    for (int i = 0; i < ncase; i++) {
        const case_fig *c = &cs[i];
        double gf = gflops(c, &c->tfused), gu = gflops(c, &c->tunf), gb = gflops(c, &c->blas),
               gg = gflops(c, &c->ggml);
        char f[32], fp[16], u[32], up[16], b[32], bp[16], rb[16], ru[16], ab[16], at[32], ut[32], g[32], gp[16],
            rg[16];
        fig_cell(g, sizeof g, c, &c->ggml);
        pct_cell(gp, sizeof gp, gg, peak);
        ratio_cell(rg, sizeof rg, gf, gg);
        fig_cell(f, sizeof f, c, &c->tfused);
        pct_cell(fp, sizeof fp, gf, peak);
        fig_cell(u, sizeof u, c, &c->tunf);
        pct_cell(up, sizeof up, gu, peak);
        fig_cell(b, sizeof b, c, &c->blas);
        pct_cell(bp, sizeof bp, gb, peak);
        ratio_cell(rb, sizeof rb, gf, gb);
        ratio_cell(ru, sizeof ru, gf, gu);
        snprintf(ab, sizeof ab, "%s", !c->all.ran || !c->all.ok ? "-" : c->all.best_is_fused ? "fused" : "unfused");
        if (c->all.ran)
            snprintf(at, sizeof at, "%d/%d/%d", c->all.trials, c->all.failed, c->all.fused_ok);
        else
            snprintf(at, sizeof at, "not run");
        if (c->unf.ran)
            snprintf(ut, sizeof ut, "%d/%d", c->unf.trials, c->unf.failed);
        else
            snprintf(ut, sizeof ut, "not run");
        printf("| %-22s | %11s | %6s | %13s | %6s | %9s | %6s | %9s | %6s | %7s | %7s | %7s | %8s | %14s | %13s |\n",
               c->label, f, fp, u, up, b, bp, g, gp, rg, rb, ru, ab, at, ut);
    }
    printf("\nvs ggml, vs BLAS, vs unf: tuned fused / ggml, / OpenBLAS, / tuned unfused.  all best: whether the all\n"
           "campaign's fastest record is fused.  n/fail/fus: the campaign's records (trials run) / failed ones (build\n"
           "error, crash, time limit, wrong output) / successful fused ones.  Campaign wall time, s (all + unfused):");
    for (int i = 0; i < ncase; i++)
        printf("%s %s %.0f + %.0f", i ? ";" : "", cs[i].label, cs[i].all.wall_s, cs[i].unf.wall_s);
    printf("\n\n");
}

static void print_hand(const case_fig *cs, int ncase, double peak)
{
    printf("Hand-written (as in bench/README.md): fused = RollingUpdate hand schedule, unfused = loom's default "
           "schedule\n\n");
    printf("| %-22s | %9s | %6s | %9s | %6s | %9s | %6s | %9s | %6s | %7s | %6s | %6s | %7s | %6s |\n", "H x N x D",
           "fused", "ok", "unfused", "ok", "OpenBLAS", "ok", "ggml", "ok", "% peak", "vs unf", "vs BLAS", "vs ggml",
           "ref s");
    printf("|%s|\n", "------------------------|-----------|--------|-----------|--------|-----------|--------|---------"
                     "--|--------|---------|--------|--------|---------|--------");
    for (int i = 0; i < ncase; i++) {
        const case_fig *c = &cs[i];
        double gf = gflops(c, &c->hand), gu = gflops(c, &c->dflt), gb = gflops(c, &c->blas), gg = gflops(c, &c->ggml);
        printf("| %-22s | %9.2f | %6s | %9.2f | %6s | %9.2f | %6s | %9.2f | %6s | %6.1f%% | %5.2fx | %5.2fx | %6.2fx | "
               "%6.1f |\n",
               c->label, gf, c->hand.ok ? "yes" : "NO", gu, c->dflt.ok ? "yes" : "NO", gb, c->blas.ok ? "yes" : "NO",
               gg, c->ggml.lat > 0 ? (c->ggml.ok ? "yes" : "NO") : "-", peak > 0 ? 100 * gf / peak : 0,
               gu > 0 ? gf / gu : 0, gb > 0 ? gf / gb : 0, gg > 0 ? gf / gg : 0, c->tref);
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    loom_bench_openblas_core(argv); /* may run the program again (openblas_core.h) */
    bench_args a = {0, 1, 0, 3, NULL, 0.05, 10};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int val = !strcmp(s, "--trials") || !strcmp(s, "--keep-db") || !strcmp(s, "--min-seconds") ||
                  !strcmp(s, "--time-limit") || !strcmp(s, "--rounds");
        if (val && i + 1 >= argc) {
            fprintf(stderr, "bench_attention: %s needs a value\n%s", s, USAGE);
            return 2;
        }
        char *end = NULL;
        if (!strcmp(s, "--quick")) {
            a.quick = 1;
        } else if (!strcmp(s, "--no-tune")) {
            a.tune = 0;
        } else if (!strcmp(s, "--trials")) {
            long t = strtol(argv[++i], &end, 10);
            if (*end || t < 1 || t > 100000) {
                fprintf(stderr, "bench_attention: --trials expects 1..100000, got '%s'\n", argv[i]);
                return 2;
            }
            a.trials = (int)t;
        } else if (!strcmp(s, "--rounds")) {
            long t = strtol(argv[++i], &end, 10);
            if (*end || t < 1 || t > 100) {
                fprintf(stderr, "bench_attention: --rounds expects 1..100, got '%s'\n", argv[i]);
                return 2;
            }
            a.rounds = (int)t;
        } else if (!strcmp(s, "--keep-db")) {
            a.keep_db = argv[++i];
        } else if (!strcmp(s, "--min-seconds") || !strcmp(s, "--time-limit")) {
            double x = strtod(argv[++i], &end);
            if (*end || !(x > 0)) {
                fprintf(stderr, "bench_attention: %s expects seconds > 0, got '%s'\n", s, argv[i]);
                return 2;
            }
            *(!strcmp(s, "--min-seconds") ? &a.min_seconds : &a.time_limit) = x;
        } else if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_attention: unknown argument '%s'\n%s", s, USAGE);
            return 2;
        }
    }
    if (!a.trials)
        a.trials = a.quick ? 16 : 48;
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    char dbroot[1024] = "";
    if (a.tune && a.keep_db) {
        snprintf(dbroot, sizeof dbroot, "%s", a.keep_db);
    } else if (a.tune) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dbroot, sizeof dbroot, "%s/loom-bench-attention-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dbroot)) {
            fprintf(stderr, "bench_attention: cannot create %s: %s\n", dbroot, strerror(errno));
            return 1;
        }
    }
    double rf[4] = {0, 0, 0, 0}; /* bandwidth, peak, threads, status */
    if (loom_bench_run_in_child(loom_bench_roofline_child, NULL, rf, 4) != 0)
        fprintf(stderr, "bench_attention: roofline failed\n");
    const char *ggml_what = NULL;
    loom_bench_ggml_available(&ggml_what);
    printf("fp32 FMA peak %.1f GFLOP/s (%d threads, %s: %d-bit vectors, %d vector registers, detected at run time); "
           "OpenBLAS %s; %s\n",
           rf[1], (int)rf[2], loom_bench_roofline_isa(), loom_bench_roofline_vector_bits(),
           loom_bench_roofline_registers(), loom_bench_openblas_note(), ggml_what);
    printf("ggml: ggml_flash_attn_ext, fp32 Q K V, F32 precision, an F16 0/-inf mask when causal, one graph over "
           "all heads, its own thread pool on every core (OMP_NUM_THREADS threads when set); its output checked like loom's\n");
    printf("GFLOP/s = Neptune's FLOPs (4 N^2 D per head, causal 2 N (N+1) D) / median latency (>= 0.3 s of runs; "
           "tuned, ggml and OpenBLAS: the best median of %d interleaved rounds after the campaigns); "
           "every kernel reported was checked against the reference interpreter (WRONG / NO otherwise)\n",
           a.tune ? a.rounds : 1);
    if (a.tune)
        printf("campaigns: %d trials each, candidates measured with min %.2f s of runs and a %.0f s limit, "
               "databases in %s%s\n",
               a.trials, a.min_seconds, a.time_limit, dbroot, a.keep_db ? "" : " (removed at the end)");
    printf("\n");
    fflush(stdout);
    int64_t big = a.quick ? 1024 : 4096;
    char l3[64], l4[64], s3[64], s4[64];
    snprintf(l3, sizeof l3, "1 x %lld x 64", (long long)big);
    snprintf(l4, sizeof l4, "1 x %lld x 64 causal", (long long)big);
    snprintf(s3, sizeof s3, "1x%lldx64", (long long)big);
    snprintf(s4, sizeof s4, "1x%lldx64-causal", (long long)big);
    case_fig cs[4];
    bench_case("12 x 512 x 64", "12x512x64", MH_DENSE, 12, 512, 64, 0, 1, &a, dbroot, &cs[0]);
    bench_case("12 x 512 x 64 causal", "12x512x64-causal", ONE_CAUSAL, 1, 512, 64, 1, 12, &a, dbroot, &cs[1]);
    bench_case(l3, s3, ONE_DENSE, 1, big, 64, 0, 1, &a, dbroot, &cs[2]);
    bench_case(l4, s4, ONE_CAUSAL, 1, big, 64, 1, 1, &a, dbroot, &cs[3]);
    /* the peak again: a measurement that lost a core to another process
     * reads low (117 instead of ~230 GFLOP/s seen once); keep the larger */
    double rf2[4] = {0, 0, 0, 0};
    if (loom_bench_run_in_child(loom_bench_roofline_child, NULL, rf2, 4) == 0) {
        printf("fp32 FMA peak measured again at the end: %.1f GFLOP/s; the %% peak columns use %.1f\n\n", rf2[1],
               rf2[1] > rf[1] ? rf2[1] : rf[1]);
        if (rf2[1] > rf[1])
            rf[1] = rf2[1];
    }
    if (a.tune)
        print_tuned(cs, 4, rf[1], a.trials);
    print_hand(cs, 4, rf[1]);
    printf("OpenBLAS column: the faster correct one of two unfused implementations, GFLOP/s (threaded = per head\n"
           "a threaded sgemm Q K^T, an OpenMP row softmax, a threaded sgemm P V; split = OpenMP threads over (head,\n"
           "half of the query rows), each with single-threaded sgemm on its own slice of S):");
    for (int i = 0; i < 4; i++) {
        const case_fig *c = &cs[i];
        double g0 = c->blas_split_lat[0] > 0 ? c->flops / c->blas_split_lat[0] / 1e9 : 0;
        double g1 = c->blas_split_lat[1] > 0 ? c->flops / c->blas_split_lat[1] / 1e9 : 0;
        printf("%s %s: threaded %.1f, split %.1f", i ? ";" : "", c->label, g0, g1);
    }
    printf("\n");
    if (a.tune && !a.keep_db && nftw(dbroot, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "bench_attention: could not remove %s: %s\n", dbroot, strerror(errno));
    return 0;
}
