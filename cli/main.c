/* loom: the command-line tool.
 *
 *   loom run WORKLOAD.loom [--data NAME=FILE]... [--param NAME=INT]... [--json] ...
 *
 * Exit codes: 0 success (a correct kernel), 1 wrong result or failed kernel,
 * 2 bad input (usage, workload, data).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/program.h"
#include "../runtime/codegen.h"
#include "../runtime/dataset.h"
#include "../runtime/lower.h"
#include "../runtime/pipeline.h"
#include "../runtime/reference.h"

#define EXIT_WRONG 1
#define EXIT_BADINPUT 2

static const char *MAIN_HELP =
    "loom - find fast schedules for sparse and attention tensor programs\n"
    "\n"
    "usage: loom COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run WORKLOAD.loom    lower, compile, measure and check one schedule on real data\n"
    "\n"
    "options:\n"
    "  -h, --help           this text; `loom COMMAND --help` for a command's options\n"
    "  --version            print the version\n"
    "\n"
    "exit codes: 0 success, 1 wrong result or failed kernel, 2 bad input\n"
    "environment: LOOM_CACHE (compiled-kernel cache, default ~/.cache/loom), LOOM_CC (C compiler),\n"
    "             OMP_NUM_THREADS (threads of generated kernels)\n";

static const char *RUN_HELP =
    "usage: loom run WORKLOAD.loom [options]\n"
    "\n"
    "Lowers the workload's default loop nest (loops in the order the index variables\n"
    "appear, position loops over compressed levels, computed bounds for causal/band\n"
    "masks, the outermost free loop parallel) to C, compiles it (cc -O3 -march=native\n"
    "-fopenmp), measures it in an isolated child process and checks its outputs\n"
    "against a double-precision reference interpreter.\n"
    "\n"
    "options:\n"
    "  --data NAME=FILE     read tensor NAME from a Matrix Market file (repeatable);\n"
    "                       dense inputs without data are filled from a seeded generator\n"
    "  --param NAME=INT     bind size NAME (overrides a `param` default; repeatable)\n"
    "  --json               print one JSON object instead of the human report\n"
    "  --seed S             seed of the dense-input generator (default 1)\n"
    "  --serial             no parallel loop in the kernel\n"
    "  --min-time SEC       keep repeating until this much kernel time (default 0.1)\n"
    "  --time-limit SEC     kill the kernel after this long (default 10)\n"
    "  --emit-c FILE        also write the generated C to FILE\n"
    "  --print-lir          print the lowered loop tree\n"
    "  -h, --help           this text\n"
    "\n"
    "JSON fields: workload, workload_hash, status, message, correct, latency_s, flops,\n"
    "gflops, max_rel_err, tol, repeats, compile_s, cached, simulated, sizes, data_fingerprint.\n"
    "exit codes: 0 correct, 1 wrong result or failed kernel, 2 bad input\n";

static void print_err(const loom_error *err)
{
    char buf[1600];
    fprintf(stderr, "loom: %s\n", loom_error_format(err, buf, sizeof buf));
}

static int split_assign(const char *arg, const char *flag, char *name, size_t nn, const char **value)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) {
        fprintf(stderr, "loom: %s expects NAME=VALUE, got '%s'\n", flag, arg);
        return -1;
    }
    if ((size_t)(eq - arg) >= nn) {
        fprintf(stderr, "loom: %s: name too long in '%s'\n", flag, arg);
        return -1;
    }
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = 0;
    *value = eq + 1;
    return 0;
}

static int parse_double(const char *s, const char *flag, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0)) {
        fprintf(stderr, "loom: %s expects a positive number of seconds, got '%s'\n", flag, s);
        return -1;
    }
    *out = v;
    return 0;
}

static void human_time(double s, char *buf, size_t n)
{
    if (s < 1e-3)
        snprintf(buf, n, "%.1f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, n, "%.3f ms", s * 1e3);
    else
        snprintf(buf, n, "%.3f s", s);
}

static int cmd_run(int argc, char **argv)
{
    const char *workload = NULL, *emit_c = NULL;
    loom_data_spec specs[LOOM_MAX_TENSORS];
    loom_param_spec params[LOOM_MAX_SIZES];
    int nspecs = 0, nparams = 0, json = 0, print_lir = 0;
    uint64_t seed = 1;
    loom_run_opts opts = loom_run_defaults();

    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(RUN_HELP, stdout);
            return 0;
        }
        int takes = !strcmp(a, "--data") || !strcmp(a, "--param") || !strcmp(a, "--seed") ||
                    !strcmp(a, "--min-time") || !strcmp(a, "--time-limit") || !strcmp(a, "--emit-c");
        if (takes) {
            if (i + 1 >= argc) {
                fprintf(stderr, "loom run: %s needs a value (see loom run --help)\n", a);
                return EXIT_BADINPUT;
            }
            val = argv[++i];
        }
        if (!strcmp(a, "--data")) {
            if (nspecs == LOOM_MAX_TENSORS) {
                fprintf(stderr, "loom run: too many --data\n");
                return EXIT_BADINPUT;
            }
            const char *file;
            if (split_assign(val, "--data", specs[nspecs].tensor, sizeof specs[nspecs].tensor, &file))
                return EXIT_BADINPUT;
            snprintf(specs[nspecs].path, sizeof specs[nspecs].path, "%s", file);
            nspecs++;
        } else if (!strcmp(a, "--param")) {
            if (nparams == LOOM_MAX_SIZES) {
                fprintf(stderr, "loom run: too many --param\n");
                return EXIT_BADINPUT;
            }
            const char *v;
            if (split_assign(val, "--param", params[nparams].name, sizeof params[nparams].name, &v))
                return EXIT_BADINPUT;
            char *end;
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (errno || *end || x <= 0) {
                fprintf(stderr, "loom run: --param %s expects a positive integer, got '%s'\n", params[nparams].name, v);
                return EXIT_BADINPUT;
            }
            params[nparams++].value = x;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long x = strtoull(val, &end, 10);
            if (errno || *end || !*val) {
                fprintf(stderr, "loom run: --seed expects a non-negative integer, got '%s'\n", val);
                return EXIT_BADINPUT;
            }
            seed = x;
        } else if (!strcmp(a, "--min-time")) {
            if (parse_double(val, "--min-time", &opts.measure.min_seconds))
                return EXIT_BADINPUT;
        } else if (!strcmp(a, "--time-limit")) {
            if (parse_double(val, "--time-limit", &opts.measure.time_limit))
                return EXIT_BADINPUT;
        } else if (!strcmp(a, "--emit-c")) {
            emit_c = val;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--serial")) {
            opts.serial = 1;
        } else if (!strcmp(a, "--print-lir")) {
            print_lir = 1;
        } else if (a[0] == '-') {
            fprintf(stderr, "loom run: unknown option '%s' (see loom run --help)\n", a);
            return EXIT_BADINPUT;
        } else if (!workload) {
            workload = a;
        } else {
            fprintf(stderr, "loom run: more than one workload ('%s' and '%s')\n", workload, a);
            return EXIT_BADINPUT;
        }
    }
    if (!workload) {
        fprintf(stderr, "loom run: no workload given\n%s", RUN_HELP);
        return EXIT_BADINPUT;
    }

    loom_error err;
    loom_error_clear(&err);
    loom_program *prog = NULL;
    if (loom_program_parse_file(workload, &prog, &err)) {
        print_err(&err);
        return EXIT_BADINPUT;
    }
    loom_dataset *ds = NULL;
    if (loom_dataset_load(prog, specs, nspecs, params, nparams, seed, &ds, &err)) {
        print_err(&err);
        loom_program_free(prog);
        return EXIT_BADINPUT;
    }
    int rc = EXIT_BADINPUT;
    loom_reference *ref = NULL;
    char *src = NULL;
    if (emit_c || print_lir) {
        lir_func *f = NULL;
        loom_schedule *sch = malloc(sizeof *sch);
        if (!sch || loom_schedule_naive(sch, prog, opts.serial, &err) || loom_lower(sch, &f, &err)) {
            if (!sch)
                loom_error_set(&err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
            free(sch);
            print_err(&err);
            goto out;
        }
        free(sch);
        if (print_lir)
            lir_print(f, stdout);
        if (emit_c) {
            if (loom_codegen_c(f, "loom_kernel", &src, &err)) {
                lir_func_free(f);
                print_err(&err);
                goto out;
            }
            FILE *fp = fopen(emit_c, "w");
            if (!fp || fputs(src, fp) < 0 || fclose(fp)) {
                fprintf(stderr, "loom run: cannot write %s: %s\n", emit_c, strerror(errno));
                lir_func_free(f);
                goto out;
            }
        }
        lir_func_free(f);
    }
    if (loom_reference_run(ds, &ref, &err)) {
        print_err(&err);
        goto out;
    }
    loom_run_result res;
    if (loom_pipeline_run(prog, ds, ref, &opts, &res, &err)) {
        print_err(&err);
        goto out;
    }
    rc = res.status == LOOM_OK ? 0 : EXIT_WRONG;

    if (json) {
        cJSON *o = cJSON_CreateObject();
        char hash[32];
        snprintf(hash, sizeof hash, "%016llx", (unsigned long long)loom_program_hash(prog));
        cJSON_AddStringToObject(o, "workload", workload);
        cJSON_AddStringToObject(o, "workload_hash", hash);
        cJSON_AddStringToObject(o, "status", res.status == LOOM_OK ? "ok" : loom_status_name(res.status));
        cJSON_AddStringToObject(o, "message", res.message);
        cJSON_AddBoolToObject(o, "correct", res.status == LOOM_OK);
        if (res.latency_s > 0)
            cJSON_AddNumberToObject(o, "latency_s", res.latency_s);
        else
            cJSON_AddNullToObject(o, "latency_s");
        cJSON_AddNumberToObject(o, "flops", res.flops);
        cJSON_AddNumberToObject(o, "gflops", res.gflops);
        cJSON_AddNumberToObject(o, "max_rel_err", res.max_rel_err);
        cJSON_AddNumberToObject(o, "tol", res.tol);
        cJSON_AddNumberToObject(o, "repeats", res.m.repeats);
        cJSON_AddNumberToObject(o, "compile_s", res.compile_seconds);
        cJSON_AddBoolToObject(o, "cached", res.cached);
        cJSON_AddBoolToObject(o, "simulated", 0);
        cJSON *sizes = cJSON_AddObjectToObject(o, "sizes");
        for (int s = 0; s < prog->nsizes; s++)
            cJSON_AddNumberToObject(sizes, prog->sizes[s].name, (double)prog->sizes[s].value);
        snprintf(hash, sizeof hash, "%016llx", (unsigned long long)ds->fingerprint);
        cJSON_AddStringToObject(o, "data_fingerprint", hash);
        char *txt = cJSON_Print(o);
        if (txt)
            puts(txt);
        free(txt);
        cJSON_Delete(o);
    } else {
        char t[64];
        printf("workload   %s (hash %016llx)\n", workload, (unsigned long long)loom_program_hash(prog));
        for (int i = 0; i < nspecs; i++) {
            int ti = loom_program_find_tensor(prog, specs[i].tensor);
            printf("data       %s = %s (%lld x %lld, %lld stored)\n", specs[i].tensor, specs[i].path,
                   (long long)ds->t[ti].dims[0], (long long)ds->t[ti].dims[1], (long long)ds->t[ti].nnz);
        }
        printf("sizes     ");
        for (int s = 0; s < prog->nsizes; s++)
            printf(" %s = %lld%s", prog->sizes[s].name, (long long)prog->sizes[s].value, s + 1 < prog->nsizes ? "," : "");
        printf("\n");
        printf("kernel     default loop nest, %s; %s\n", opts.serial ? "serial" : "parallel outer loop",
               res.cached ? "compiled object from the cache" : "compiled now");
        if (res.status == LOOM_OK || res.status == LOOM_ERR_WRONG) {
            human_time(res.latency_s, t, sizeof t);
            printf("latency    %s (median of %d runs)\n", t, res.m.repeats);
            printf("flops      %.4g (from the actual nonzeros) -> %.3f GFLOP/s\n", res.flops, res.gflops);
            printf("correct    %s (max relative error %.3g, tolerance %.3g)\n", res.status == LOOM_OK ? "yes" : "NO",
                   res.max_rel_err, res.tol);
        }
        if (res.status != LOOM_OK)
            printf("failed     %s: %s\n", loom_status_name(res.status), res.message);
    }
out:
    free(src);
    loom_reference_free(ref);
    loom_dataset_free(ds);
    loom_program_free(prog);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(MAIN_HELP, stderr);
        return EXIT_BADINPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(MAIN_HELP, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        puts("loom 0.1.0");
        return 0;
    }
    if (!strcmp(cmd, "run"))
        return cmd_run(argc - 2, argv + 2);
    fprintf(stderr, "loom: unknown command '%s'\n\n%s", cmd, MAIN_HELP);
    return EXIT_BADINPUT;
}
