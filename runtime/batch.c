/* Running many schedules at once (batch.h). */
#include "batch.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "lower.h"

static void check_one(const loom_program *prog, loom_dataset *ds, const loom_reference *ref, loom_run_result *res)
{
    res->latency_s = res->m.latency;
    res->flops = ref->flops;
    res->gflops = res->latency_s > 0 ? res->flops / res->latency_s / 1e9 : 0;
    loom_check chk;
    loom_reference_check(ds, ref, &chk);
    res->correct = chk.correct;
    res->max_rel_err = chk.max_rel_err;
    res->tol = chk.tol;
    if (!chk.correct) {
        res->status = LOOM_ERR_WRONG;
        snprintf(res->message, sizeof res->message,
                 "wrong result: %s[%lld] = %.9g but the reference gives %.9g (relative error %.3g > %.3g)",
                 chk.worst_tensor >= 0 ? prog->tensors[chk.worst_tensor].name : "?", (long long)chk.worst_index,
                 chk.worst_got, chk.worst_want, chk.max_rel_err, chk.tol);
    }
}

loom_status loom_run_batch(const loom_schedule *const *schedules, int n, loom_dataset *ds,
                           const loom_reference *ref, const loom_run_opts *opts, int chunk,
                           loom_run_result *results, loom_error *err)
{
    loom_run_opts defaults = loom_run_defaults();
    if (!opts)
        opts = &defaults;
    if (chunk <= 0)
        chunk = 32;
    const loom_program *prog = ds->prog;
    lir_func **fs = calloc((size_t)chunk, sizeof *fs);
    char (*names)[32] = calloc((size_t)chunk, sizeof *names);
    const char **entries = calloc((size_t)chunk, sizeof *entries);
    int *which = calloc((size_t)chunk, sizeof *which);
    if (!fs || !names || !entries || !which) {
        free(fs), free(names), free(entries), free(which);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    loom_status status = LOOM_OK;
    for (int start = 0; start < n && !status; start += chunk) {
        int end = start + chunk < n ? start + chunk : n, m = 0;
        for (int k = start; k < end; k++) {
            loom_run_result *r = &results[k];
            memset(r, 0, sizeof *r);
            loom_error le;
            loom_error_clear(&le);
            loom_status st = loom_lower(schedules[k], &fs[m], &le);
            if (st) {
                r->status = st;
                snprintf(r->message, sizeof r->message, "%s", le.msg);
                continue;
            }
            snprintf(names[m], sizeof names[m], "loom_kernel_%d", k - start);
            entries[m] = names[m];
            which[m++] = k;
        }
        if (m == 0)
            continue;
        char *src = NULL;
        loom_error le;
        loom_error_clear(&le);
        loom_status st = loom_codegen_c_batch((const lir_func *const *)fs, m, entries, &src, &le);
        for (int j = 0; j < m; j++)
            lir_func_free(fs[j]);
        if (st) {
            status = loom_error_set(err, st, NULL, 0, 0, "%s", le.msg);
            break;
        }
        loom_module mod;
        st = loom_build(src, entries[0], &opts->build, &mod, &le);
        free(src);
        if (st) {
            for (int j = 0; j < m; j++) {
                results[which[j]].status = st;
                snprintf(results[which[j]].message, sizeof results[which[j]].message, "%s", le.msg);
            }
            continue;
        }
        for (int j = 0; j < m; j++) {
            loom_run_result *r = &results[which[j]];
            r->compile_seconds = mod.compile_seconds / m;
            r->cached = mod.cached;
            loom_kernel_fn fn = (loom_kernel_fn)(uintptr_t)dlsym(mod.handle, entries[j]);
            if (!fn) {
                r->status = LOOM_ERR_RUN;
                snprintf(r->message, sizeof r->message, "symbol %s missing from the batch object", entries[j]);
                continue;
            }
            loom_dataset_fill_outputs(ds, 12345.0f);
            if (loom_measure(fn, ds->t, &opts->measure, &r->m, err)) {
                status = LOOM_ERR_RUN;
                break;
            }
            if (r->m.status != LOOM_OK) {
                r->status = r->m.status;
                snprintf(r->message, sizeof r->message, "%s", r->m.message);
                continue;
            }
            check_one(prog, ds, ref, r);
        }
        loom_module_close(&mod);
    }
    free(fs), free(names), free(entries), free(which);
    return status;
}
