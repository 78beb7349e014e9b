/* loom benchmark (issue 13): how many distinct valid schedules a design
 * space has, for the search-efficiency table (bench_search_sim.sh).
 *
 *   bench_space_count WORKLOAD.loom [NAME=VALUE ...] [--draws N] [--target T]
 *
 * NAME=VALUE binds a tensor to a .mtx file (a value with '/' or ending in
 * .mtx) or sets a parameter.  Draws N schedules (default 100000) of the
 * default module list for target T (default sim:spr-2c, its limits), the
 * generator gsl mt19937 seeded 1; every draw that the validator passes is
 * keyed by its structural schedule hash (loom_schedule_hash: what the
 * tuning database calls a distinct schedule).  Prints the distinct valid
 * schedules observed (a lower bound of the space's size), how many were
 * seen once (f1) and twice (f2), and Chao's estimate of the total,
 * S + f1^2 / (2 f2) (Chao, Scand. J. Statistics 11, 1984: a lower-bound
 * estimator of the number of classes from the frequencies of the rare ones;
 * the draws are not uniform over schedules, so the true count is at least
 * the observed one and likely above Chao's).  Run from the repository
 * root. */
#include <gsl/gsl_rng.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../runtime/data/dataset.h"
#include "../runtime/target/target.h"
#include "../traces/validate.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_space_count WORKLOAD.loom [NAME=VALUE ...] [--draws N] [--target T]\n");
        return 2;
    }
    loom_error err;
    loom_error_clear(&err);
    loom_data_spec specs[LOOM_MAX_TENSORS];
    loom_param_spec params[LOOM_MAX_SIZES];
    memset(specs, 0, sizeof specs);
    memset(params, 0, sizeof params);
    int ns = 0, np = 0;
    long draws = 100000;
    const char *tname = "sim:spr-2c";
    for (int k = 2; k < argc; k++) {
        const char *a = argv[k], *eq = strchr(a, '=');
        if (!strcmp(a, "--draws") && k + 1 < argc) {
            draws = atol(argv[++k]);
            continue;
        }
        if (!strcmp(a, "--target") && k + 1 < argc) {
            tname = argv[++k];
            continue;
        }
        if (!eq || ns >= LOOM_MAX_TENSORS || np >= LOOM_MAX_SIZES) {
            fprintf(stderr, "bench_space_count: '%s' is not NAME=VALUE\n", a);
            return 2;
        }
        size_t vl = strlen(eq + 1);
        if (strchr(eq + 1, '/') || (vl > 4 && !strcmp(eq + 1 + vl - 4, ".mtx"))) {
            snprintf(specs[ns].tensor, sizeof specs[ns].tensor, "%.*s", (int)(eq - a), a);
            snprintf(specs[ns].path, sizeof specs[ns].path, "%s", eq + 1);
            ns++;
        } else {
            snprintf(params[np].name, sizeof params[np].name, "%.*s", (int)(eq - a), a);
            params[np].value = atoll(eq + 1);
            np++;
        }
    }
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    loom_target t;
    const char *tn = strncmp(tname, "sim:", 4) ? tname : tname + 4;
    if (loom_program_parse_file(argv[1], &prog, &err) || loom_dataset_load(prog, specs, ns, params, np, 42, &ds, &err) ||
        loom_target_load(tn, &t, &err)) {
        fprintf(stderr, "bench_space_count: %s\n", err.msg);
        return 2;
    }
    loom_limits lim = loom_target_limits(&t);
    loom_registry *reg = loom_registry_new();
    loom_space *space = NULL;
    if (!reg || loom_space_new(reg, NULL, "sim", &space, &err)) {
        fprintf(stderr, "bench_space_count: %s\n", err.msg);
        return 2;
    }
    loom_space_set_limits(space, &lim);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    loom_schedule *sch = malloc(sizeof *sch);
    uint64_t *h = malloc(sizeof *h * (size_t)(draws > 0 ? draws : 1));
    if (!rng || !sch || !h)
        return 2;
    long nvalid = 0;
    for (long d = 0; d < draws; d++) {
        loom_violation v;
        if (loom_schedule_init(sch, prog, rng, &err) || loom_space_apply(space, sch, &err) ||
            loom_validate(sch, &lim, &v, NULL) != LOOM_OK)
            continue;
        h[nvalid++] = loom_schedule_hash(sch);
    }
    qsort(h, (size_t)nvalid, sizeof *h, cmp_u64);
    long S = 0, f1 = 0, f2 = 0;
    for (long i = 0; i < nvalid;) {
        long j = i;
        while (j < nvalid && h[j] == h[i])
            j++;
        S++;
        f1 += j - i == 1;
        f2 += j - i == 2;
        i = j;
    }
    double chao = f2 > 0 ? S + (double)f1 * f1 / (2.0 * f2) : S + (double)f1 * (f1 - 1) / 2.0;
    printf("%s: %ld draws, %ld valid; distinct valid schedules observed %ld (f1 %ld, f2 %ld); Chao1 estimate %.0f\n",
           argv[1], draws, nvalid, S, f1, f2, chao);
    free(h);
    free(sch);
    gsl_rng_free(rng);
    loom_space_free(space);
    loom_registry_free(reg);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return 0;
}
