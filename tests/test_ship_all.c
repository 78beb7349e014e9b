/* Every kind of workload shipped as a kernel library (ship/ship.h): the
 * default schedule of each is written with loom_ship_write, built, loaded,
 * and its ABI entry NAME_abi run on the bound data set is checked against
 * the reference interpreter (which shares no code with the lowering);
 * then one dimension changed makes it return 2 (the fixed sizes) without
 * running.  Covers temporaries (attention's S, m, P, l), range patterns
 * (causal, band), outputs on an input's pattern (SDDMM), assembled csr
 * outputs (spadd_csr, spgemm) and sparse features (GCN). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../modules/module.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/reference.h"
#include "../ship/ship.h"
#include "fixture.h"

#define CORA "A=data/cora500_adj.mtx"

typedef struct wl {
    const char *name, *file;
    const char *data[3], *params[3];
} wl;

static const wl WORKLOADS[] = {
    {"spmv", "workloads/spmv.loom", {CORA, NULL}, {NULL}},
    {"spmm", "workloads/spmm.loom", {CORA, NULL}, {"F=16", NULL}},
    {"sddmm", "workloads/sddmm.loom", {"M=data/cora500_adj.mtx", NULL}, {"D=8", NULL}},
    {"gcn", "workloads/gcn.loom", {CORA, "X=data/cora500_features.mtx", NULL}, {"F=8", NULL}},
    {"attention_causal", "workloads/attention_causal.loom", {NULL}, {"N=40", "D=8", NULL}},
    {"attention_band", "workloads/attention_band.loom", {NULL}, {"N=40", "D=8", NULL}},
    {"sparse_attention", "workloads/sparse_attention.loom", {CORA, NULL}, {"D=8", NULL}},
    {"spadd_csr", "workloads/spadd_csr.loom", {CORA, "B=data/cora500_adj.mtx", NULL}, {NULL}},
    {"spgemm", "workloads/spgemm.loom", {CORA, "B=data/cora500_adj.mtx", NULL}, {NULL}},
};
#define NWL (int)(sizeof WORKLOADS / sizeof *WORKLOADS)

Test(ship_all, every_kind_of_workload_ships_and_checks_its_sizes, .timeout = 600)
{
    char dir[] = "/tmp/loom-shipall-XXXXXX", cmd[4200];
    cr_assert_not_null(mkdtemp(dir));
    for (int w = 0; w < NWL; w++) {
        const wl *W = &WORKLOADS[w];
        fx_loaded L = fx_load(W->file, NULL, W->data, W->params, 1);
        loom_schedule *sch = malloc(sizeof *sch);
        loom_error err;
        loom_error_clear(&err);
        cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK, "%s: %s", W->name, err.msg);
        cr_assert_eq(loom_default_schedule(sch, &err), LOOM_OK, "%s: %s", W->name, err.msg);
        lir_func *f = NULL;
        cr_assert_eq(loom_lower(sch, &f, &err), LOOM_OK, "%s: %s", W->name, err.msg);
        char name[64];
        snprintf(name, sizeof name, "k_%s", W->name);
        cr_assert_eq(loom_ship_write(f, name, dir, "test_ship_all", 1, &err), LOOM_OK, "%s: %s", W->name, err.msg);
        loom_lir_func_free(f);
        snprintf(cmd, sizeof cmd, "%s/lib%s.so", dir, name);
        void *h = dlopen(cmd, RTLD_NOW | RTLD_LOCAL);
        cr_assert_not_null(h, "%s: %s", W->name, dlerror());
        char sym[96];
        snprintf(sym, sizeof sym, "%s_abi", name);
        int (*abi)(loom_tensor_abi *);
        void *p = dlsym(h, sym);
        cr_assert_not_null(p, "%s: no %s", W->name, sym);
        memcpy(&abi, &p, sizeof abi);
        cr_assert_null(dlsym(h, "loom_kernel"), "%s: the generic name is exported", W->name);

        loom_reference *ref = NULL;
        cr_assert_eq(loom_reference_run(L.ds, &ref, &err), LOOM_OK, "%s: %s", W->name, err.msg);
        loom_dataset_fill_outputs(L.ds, 12345.0f); /* the kernel must overwrite them */
        cr_assert_eq(abi(L.ds->t), 0, "%s: %s_abi failed", W->name, name);
        loom_check chk;
        loom_reference_check(L.ds, ref, &chk);
        cr_assert(chk.correct, "%s: wrong result (max rel err %g, tol %g)", W->name, chk.max_rel_err, chk.tol);
        /* one dimension off: refused before running */
        loom_tensor_abi *t0 = &L.ds->t[0];
        int d = t0->order - 1;
        t0->dims[d]++;
        cr_assert_eq(abi(L.ds->t), 2, "%s: a changed dimension was not refused", W->name);
        t0->dims[d]--;
        cr_log_info("%s: shipped, correct (max rel err %.2g)", W->name, chk.max_rel_err);
        loom_reference_free(ref);
        dlclose(h);
        free(sch);
        fx_unload(&L);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
