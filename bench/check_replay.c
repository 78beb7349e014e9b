/* bench/check_replay: load a kernel compiled outside loom (from the C file
 * `loom replay --emit-c` wrote), run it on a workload's data and compare
 * with loom's reference interpreter.
 *
 *   check_replay KERNEL.so WORKLOAD.loom [--data NAME=FILE]... [--param NAME=INT]...
 *
 * Prints "correct" (max relative error, tolerance) and exits 0, or prints
 * the worst element and exits 1; 2 on bad input. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/data/dataset.h"
#include "../runtime/measure/reference.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: check_replay KERNEL.so WORKLOAD.loom [--data NAME=FILE]... [--param NAME=INT]...\n");
        return 2;
    }
    loom_data_spec specs[LOOM_MAX_TENSORS];
    loom_param_spec params[LOOM_MAX_SIZES];
    int ns = 0, np = 0;
    memset(specs, 0, sizeof specs);
    memset(params, 0, sizeof params);
    for (int i = 3; i + 1 < argc; i += 2) {
        const char *eq = strchr(argv[i + 1], '=');
        if (!eq || (strcmp(argv[i], "--data") && strcmp(argv[i], "--param"))) {
            fprintf(stderr, "check_replay: bad argument %s %s\n", argv[i], argv[i + 1]);
            return 2;
        }
        if (!strcmp(argv[i], "--data") && ns < LOOM_MAX_TENSORS) {
            snprintf(specs[ns].tensor, sizeof specs[ns].tensor, "%.*s", (int)(eq - argv[i + 1]), argv[i + 1]);
            snprintf(specs[ns].path, sizeof specs[ns].path, "%s", eq + 1);
            ns++;
        } else if (np < LOOM_MAX_SIZES) {
            snprintf(params[np].name, sizeof params[np].name, "%.*s", (int)(eq - argv[i + 1]), argv[i + 1]);
            params[np].value = atoll(eq + 1);
            np++;
        }
    }
    loom_error err;
    loom_error_clear(&err);
    loom_program *prog = NULL;
    loom_dataset *ds = NULL;
    loom_reference *ref = NULL;
    if (loom_program_parse_file(argv[2], &prog, &err) ||
        loom_dataset_load(prog, specs, ns, params, np, 1, &ds, &err) || loom_reference_run(ds, &ref, &err)) {
        fprintf(stderr, "check_replay: %s\n", err.msg);
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    loom_kernel_fn fn = h ? (loom_kernel_fn)(uintptr_t)dlsym(h, "loom_kernel") : NULL;
    if (!fn) {
        fprintf(stderr, "check_replay: %s: %s\n", argv[1], dlerror());
        return 2;
    }
    loom_dataset_fill_outputs(ds, 777.0f);
    if (fn(ds->t) != 0) {
        fprintf(stderr, "check_replay: the kernel returned an error\n");
        return 1;
    }
    loom_check chk;
    loom_reference_check(ds, ref, &chk);
    if (chk.correct)
        printf("correct (max relative error %.3g, tolerance %.3g)\n", chk.max_rel_err, chk.tol);
    else
        printf("WRONG: element %lld = %.9g, reference %.9g (relative error %.3g > %.3g)\n", (long long)chk.worst_index,
               chk.worst_got, chk.worst_want, chk.max_rel_err, chk.tol);
    return chk.correct ? 0 : 1;
}
