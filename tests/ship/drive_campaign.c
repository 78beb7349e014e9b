/* A C program driving a tuning campaign through the installed libloom.so
 * (built with `pkg-config --cflags --libs loom` only): SpMM on
 * data/cora500_adj.mtx, F = 64, on the simulator, 6 trials, with the user
 * module library given as argv[1] in the design space.
 * usage: drive_campaign MODULE.so DBDIR REPO_ROOT; prints "trials N" and
 * exits 0, or prints the error and exits 1. */
#include <stdio.h>
#include <string.h>

#include <runtime/data/dataset.h>
#include <search/tune/tune.h>

int main(int argc, char **argv)
{
    if (argc != 4)
        return fprintf(stderr, "usage: drive_campaign MODULE.so DBDIR REPO_ROOT\n"), 1;
    char wl[4096];
    snprintf(wl, sizeof wl, "%s/workloads/spmm.loom", argv[3]);
    loom_error err;
    loom_error_clear(&err);
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    loom_data_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.tensor, sizeof spec.tensor, "A");
    snprintf(spec.path, sizeof spec.path, "%s/data/cora500_adj.mtx", argv[3]);
    loom_param_spec par = {"F", 64};
    if (loom_program_parse_file(wl, &prog, &err) || loom_dataset_load(prog, &spec, 1, &par, 1, 1, &ds, &err))
        return fprintf(stderr, "load: %s\n", err.msg), 1;
    loom_tune_opts o = loom_tune_defaults();
    const char *libs[1] = {argv[1]};
    o.db_dir = argv[2];
    o.trials = 6;
    o.batch = 6;
    o.target = "sim";
    o.remeasure_rounds = 0;
    o.workload_name = "spmm";
    o.module_libs = libs;
    o.nmodule_libs = 1;
    loom_tune_result r;
    if (loom_tune(prog, ds, &o, &r, &err))
        return fprintf(stderr, "tune: %s\n", err.msg), 1;
    printf("trials %d\n", r.trials);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return r.trials == 6 ? 0 : 1;
}
