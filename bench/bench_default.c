/* loom benchmark: how long the default schedule (modules/module.h,
 * loom_default_build) takes to produce, per workload (goal: under 10 ms),
 * and that it is valid.  Cora for the graph workloads (data/), parameter
 * defaults otherwise.  Each workload: parse and bind once, then produce the
 * schedule (loom_schedule_init + loom_default_build in the built-in
 * default space with the host's limits, made once, recorded as a trace)
 * repeatedly for at least 0.2 s; prints the median time per schedule,
 * which default it is (the space's, or modules/default.c's when the space
 * has none), its instruction count and its loops.
 *
 *   bench_default [--min-seconds S]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../modules/module.h"
#include "../dsl/ir/util.h"
#include "../runtime/data/dataset.h"
#include "../traces/trace.h"
#include "../traces/validate.h"
#include "../runtime/machine/machine.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct wl {
    const char *file, *data1, *data2;
} wl;

static const wl WORKLOADS[] = {
    {"workloads/spmv.loom", "A=data/cora_adj.mtx", NULL},
    {"workloads/spmm.loom", "A=data/cora_adj.mtx", NULL},
    {"workloads/sddmm.loom", "M=data/cora_adj.mtx", NULL},
    {"workloads/gcn.loom", "A=data/cora_adj.mtx", "X=data/cora_features.mtx"},
    {"workloads/gemm.loom", NULL, NULL},
    {"workloads/attention.loom", NULL, NULL},
    {"workloads/attention_causal.loom", NULL, NULL},
    {"workloads/attention_band.loom", NULL, NULL},
    {"workloads/sparse_attention.loom", "A=data/cora_adj.mtx", NULL},
};

int main(int argc, char **argv)
{
    double min_seconds = 0.2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc)
            min_seconds = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_default [--min-seconds S]\n");
            return 2;
        }
    }
    int worst_ok = 1;
    double worst = 0;
    loom_error serr;
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    if (!reg || loom_space_new(reg, NULL, "cpu", &space, &serr)) {
        fprintf(stderr, "bench_default: no default space\n");
        return 1;
    }
    printf("%-34s %10s %7s %6s %-9s  %s\n", "workload", "median", "insts", "valid", "default",
           "loops of the last statement");
    for (size_t w = 0; w < sizeof WORKLOADS / sizeof *WORKLOADS; w++) {
        loom_error err;
        loom_error_clear(&err);
        loom_program *prog = NULL;
        loom_dataset *ds = NULL;
        loom_data_spec specs[2];
        int ns = 0;
        const char *d[2] = {WORKLOADS[w].data1, WORKLOADS[w].data2};
        for (int k = 0; k < 2; k++)
            if (d[k]) {
                const char *eq = strchr(d[k], '=');
                snprintf(specs[ns].tensor, sizeof specs[ns].tensor, "%.*s", (int)(eq - d[k]), d[k]);
                snprintf(specs[ns].path, sizeof specs[ns].path, "%s", eq + 1);
                ns++;
            }
        if (loom_program_parse_file(WORKLOADS[w].file, &prog, &err) ||
            loom_dataset_load(prog, specs, ns, NULL, 0, 1, &ds, &err)) {
            fprintf(stderr, "bench_default: %s: %s\n", WORKLOADS[w].file, err.msg);
            return 1;
        }
        loom_schedule *sch = malloc(sizeof *sch);
        loom_trace *t = loom_trace_new();
        loom_default_info info;
        double times[4096];
        int n = 0;
        double start = loom_now_seconds();
        while (n < 4096 && (n < 5 || loom_now_seconds() - start < min_seconds)) {
            loom_trace_clear(t);
            double t0 = loom_now_seconds();
            loom_status rc = loom_schedule_init(sch, prog, NULL, &err);
            sch->recorder = loom_trace_recorder;
            sch->recorder_ctx = t;
            if (!rc)
                rc = loom_default_build(space, NULL, sch, &info, &err);
            times[n++] = loom_now_seconds() - t0;
            if (rc) {
                fprintf(stderr, "bench_default: %s: %s\n", WORKLOADS[w].file, err.msg);
                return 1;
            }
        }
        qsort(times, (size_t)n, sizeof *times, cmp_double);
        loom_limits cpu = loom_target_cpu_limits(); /* the CPU the bench runs on */
        loom_violation v;
        int valid = loom_validate(sch, &cpu, &v, NULL) == LOOM_OK;
        char loops[512] = "";
        int s = sch->nstages - 1;
        for (int p = 0; p < sch->stages[s].nloops; p++) {
            char nm[64];
            const loom_loop *L = &sch->stages[s].loops[p];
            size_t l = strlen(loops);
            snprintf(loops + l, sizeof loops - l, "%s%s%s", p ? " " : "", loom_iter_name(sch, s, L->iter, nm, sizeof nm),
                     L->kind == LOOM_LOOP_PARALLEL ? "(par)" : L->kind == LOOM_LOOP_VECTORIZED ? "(vec)" : "");
        }
        printf("%-34s %7.3f ms %7d %6s %-9s  %s%s\n", WORKLOADS[w].file, 1e3 * times[n / 2], t->ninsts,
               valid ? "yes" : "NO", info.in_space ? "space" : "default.c", loops, sch->stages[s].cache_iter >= 0 ? " + workspace" : "");
        if (times[n / 2] > worst)
            worst = times[n / 2];
        worst_ok &= valid;
        loom_trace_free(t);
        free(sch);
        loom_dataset_free(ds);
        loom_program_free(prog);
    }
    loom_space_free(space);
    loom_registry_free(reg);
    printf("slowest default schedule: %.3f ms (goal < 10 ms); all valid: %s\n", 1e3 * worst, worst_ok ? "yes" : "NO");
    return worst_ok ? 0 : 1;
}
