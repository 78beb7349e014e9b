/* Tests for runtime/measure/measure.c: timing kernels in an isolated child. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../runtime/measure/build.h"
#include "../runtime/measure/measure.h"

/* ---- kernels (fork inherits them) ------------------------------------------- */

static int k_write(loom_tensor_abi *t)
{
    t[0].vals[0] += 1.0f; /* counts the calls */
    t[0].vals[1] = 42.0f;
    return 0;
}

static int k_null(loom_tensor_abi *t)
{
    (void)t;
    volatile int *volatile p = NULL;
    *p = 1;
    return 0;
}

static int k_forever(loom_tensor_abi *t)
{
    (void)t;
    volatile int spin = 1;
    while (spin) {
    }
    return 0;
}

static int k_ret7(loom_tensor_abi *t)
{
    (void)t;
    return 7;
}

static int k_abort(loom_tensor_abi *t)
{
    (void)t;
    abort();
}

static int k_sleep20(loom_tensor_abi *t)
{
    (void)t;
    struct timespec ts = {0, 20 * 1000 * 1000}, rem;
    while (nanosleep(&ts, &rem) != 0 && errno == EINTR)
        ts = rem;
    return 0;
}

/* Fails on its 3rd timed call (1 warm-up + 2 good ones before it). */
static int k_fail_third(loom_tensor_abi *t)
{
    t[0].vals[0] += 1.0f;
    return t[0].vals[0] >= 4.0f ? 5 : 0;
}

static int k_nop(loom_tensor_abi *t)
{
    (void)t;
    return 0;
}

/* ---- helpers ------------------------------------------------------------------ */

static float *shared_floats(size_t n)
{
    void *p = mmap(NULL, n * sizeof(float), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED, "mmap: %s", strerror(errno));
    memset(p, 0, n * sizeof(float));
    return p;
}

static loom_tensor_abi tensor_of(float *v, int64_t n)
{
    loom_tensor_abi t;
    memset(&t, 0, sizeof t);
    t.order = 1;
    t.dims[0] = n;
    t.vals = v;
    t.nnz = n;
    return t;
}

static loom_measure_opts quick(void)
{
    loom_measure_opts o = loom_measure_defaults();
    o.min_seconds = 0.01;
    o.time_limit = 20.0;
    return o;
}

static void assert_no_children(void)
{
    int st;
    errno = 0;
    pid_t w = waitpid(-1, &st, WNOHANG);
    cr_assert_eq(w, -1, "a child is left over (waitpid returned %d)", (int)w);
    cr_assert_eq(errno, ECHILD);
}

/* ---- tests -------------------------------------------------------------------- */

Test(measure, defaults)
{
    loom_measure_opts o = loom_measure_defaults();
    cr_assert_float_eq(o.min_seconds, 0.1, 1e-12);
    cr_assert_eq(o.min_repeats, 3);
    cr_assert_eq(o.max_repeats, 10000);
    cr_assert_eq(o.warmup, 1);
    cr_assert_float_eq(o.time_limit, 10.0, 1e-12);
}

Test(measure, normal_kernel)
{
    float *v = shared_floats(2);
    loom_tensor_abi t = tensor_of(v, 2);
    loom_measure_opts o = quick();
    o.min_repeats = 5;
    loom_measurement m;
    loom_error err;
    cr_assert_eq(loom_measure(k_write, &t, &o, &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(m.status, LOOM_OK, "%s", m.message);
    cr_assert_geq(m.repeats, 5);
    cr_assert_leq(m.repeats, o.max_repeats);
    cr_assert_geq(m.latency, m.min);
    cr_assert_leq(m.latency, m.max);
    cr_assert_geq(m.min, 0.0);
    cr_assert_gt(m.total_seconds, 0.0);
    cr_assert_eq(m.signal, 0);
    cr_assert_eq(m.exit_code, 0);
    /* The parent sees the outputs; every call (warm-up + timed) ran. */
    cr_assert_float_eq(v[1], 42.0f, 0.0f);
    cr_assert_float_eq(v[0], (float)(m.repeats + o.warmup), 0.0f);
    assert_no_children();
    munmap(v, 2 * sizeof(float));
}

Test(measure, null_options_use_defaults)
{
    float *v = shared_floats(2);
    loom_tensor_abi t = tensor_of(v, 2);
    loom_measurement m;
    loom_error err;
    cr_assert_eq(loom_measure(k_write, &t, NULL, &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(m.status, LOOM_OK, "%s", m.message);
    cr_assert_geq(m.repeats, 3);
    cr_assert_float_eq(v[0], (float)(m.repeats + 1), 0.0f);
    munmap(v, 2 * sizeof(float));
}

Test(measure, max_repeats_caps_the_runs)
{
    float *v = shared_floats(2);
    loom_tensor_abi t = tensor_of(v, 2);
    loom_measure_opts o = quick();
    o.min_seconds = 1000.0; /* never reached: max_repeats stops it */
    o.min_repeats = 3;
    o.max_repeats = 17;
    o.warmup = 2;
    loom_measurement m;
    cr_assert_eq(loom_measure(k_write, &t, &o, &m, NULL), LOOM_OK);
    cr_assert_eq(m.status, LOOM_OK, "%s", m.message);
    cr_assert_eq(m.repeats, 17);
    cr_assert_float_eq(v[0], 19.0f, 0.0f);
    munmap(v, 2 * sizeof(float));
}

Test(measure, segfault_is_reported_and_parent_survives)
{
    float *v = shared_floats(2);
    loom_tensor_abi t = tensor_of(v, 2);
    loom_measure_opts o = quick();
    loom_measurement m;
    loom_error err;
    cr_assert_eq(loom_measure(k_null, &t, &o, &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(m.status, LOOM_ERR_RUN);
    cr_assert_eq(m.signal, SIGSEGV, "signal %d: %s", m.signal, m.message);
    cr_assert_not_null(strstr(m.message, "SIGSEGV"), "%s", m.message);
    cr_assert_not_null(strstr(m.message, "crashed"), "%s", m.message);
    cr_assert_eq(m.repeats, 0);
    assert_no_children();

    /* The parent carries on and measures a good kernel. */
    cr_assert_eq(loom_measure(k_write, &t, &o, &m, &err), LOOM_OK);
    cr_assert_eq(m.status, LOOM_OK, "%s", m.message);
    cr_assert_float_eq(v[1], 42.0f, 0.0f);
    assert_no_children();
    munmap(v, 2 * sizeof(float));
}

Test(measure, infinite_loop_times_out)
{
    loom_tensor_abi t = tensor_of(NULL, 0);
    loom_measure_opts o = quick();
    o.time_limit = 0.5;
    loom_measurement m;
    double t0 = loom_now_seconds();
    cr_assert_eq(loom_measure(k_forever, &t, &o, &m, NULL), LOOM_OK);
    double took = loom_now_seconds() - t0;
    cr_assert_eq(m.status, LOOM_ERR_TIMEOUT, "%s", m.message);
    cr_assert_str_eq(m.message, "kernel exceeded the time limit of 0.5 s");
    cr_assert_geq(took, 0.5);
    cr_assert_lt(took, 5.0, "took %.2f s", took);
    cr_assert_geq(m.total_seconds, 0.5);
    assert_no_children();
}

Test(measure, nonzero_return_is_reported)
{
    loom_tensor_abi t = tensor_of(NULL, 0);
    loom_measurement m;
    cr_assert_eq(loom_measure(k_ret7, &t, NULL, &m, NULL), LOOM_OK);
    cr_assert_eq(m.status, LOOM_ERR_RUN);
    cr_assert_eq(m.exit_code, 7);
    cr_assert_eq(m.signal, 0);
    cr_assert_str_eq(m.message, "kernel returned 7");
    assert_no_children();
}

Test(measure, failure_after_some_runs_keeps_partial_data)
{
    float *v = shared_floats(1);
    loom_tensor_abi t = tensor_of(v, 1);
    loom_measure_opts o = quick();
    o.min_repeats = 10;
    loom_measurement m;
    cr_assert_eq(loom_measure(k_fail_third, &t, &o, &m, NULL), LOOM_OK);
    cr_assert_eq(m.status, LOOM_ERR_RUN);
    cr_assert_eq(m.exit_code, 5);
    cr_assert_eq(m.repeats, 2);
    munmap(v, sizeof(float));
}

Test(measure, abort_is_sigabrt)
{
    loom_tensor_abi t = tensor_of(NULL, 0);
    loom_measurement m;
    cr_assert_eq(loom_measure(k_abort, &t, NULL, &m, NULL), LOOM_OK);
    cr_assert_eq(m.status, LOOM_ERR_RUN);
    cr_assert_eq(m.signal, SIGABRT, "signal %d: %s", m.signal, m.message);
    cr_assert_not_null(strstr(m.message, "SIGABRT"), "%s", m.message);
    assert_no_children();
}

Test(measure, sleeping_kernel_latency)
{
    loom_tensor_abi t = tensor_of(NULL, 0);
    loom_measure_opts o = loom_measure_defaults();
    o.min_seconds = 0.1;
    o.time_limit = 30.0;
    loom_measurement m;
    cr_assert_eq(loom_measure(k_sleep20, &t, &o, &m, NULL), LOOM_OK);
    cr_assert_eq(m.status, LOOM_OK, "%s", m.message);
    cr_assert_geq(m.repeats, 3);
    cr_assert_geq(m.latency, 0.02);
    cr_assert_geq(m.min, 0.02);
    cr_assert_leq(m.latency, m.max);
    /* Runs stop once 0.1 s is reached, so the timed total covers it. */
    cr_assert_geq(m.latency * m.repeats, 0.02 * 3);
    cr_assert_geq(m.total_seconds, 0.02 * (m.repeats + 1));
}

Test(measure, buffered_output_is_not_duplicated)
{
    char path[] = "/tmp/loom-test-measure-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fputs("once\n", f); /* stays in the stdio buffer until flushed */
    loom_tensor_abi t = tensor_of(NULL, 0);
    loom_measurement m;
    loom_measure_opts o = quick();
    cr_assert_eq(loom_measure(k_nop, &t, &o, &m, NULL), LOOM_OK);
    cr_assert_eq(m.status, LOOM_OK, "%s", m.message);
    fclose(f);
    f = fopen(path, "r");
    char buf[64] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(path);
    cr_assert_eq(n, 5);
    cr_assert_str_eq(buf, "once\n");
}

static char omp_dir_[256];

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char p[512];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

Test(measure, openmp_kernel_in_child)
{
    snprintf(omp_dir_, sizeof omp_dir_, "/tmp/loom-test-omp-XXXXXX");
    cr_assert_not_null(mkdtemp(omp_dir_));
    const char *src =
        "#include <stdint.h>\n"
        "#include <omp.h>\n"
        "typedef struct loom_tensor_abi {\n"
        "    int32_t order; int32_t pad_; int64_t dims[4];\n"
        "    int32_t *pos[4]; int32_t *crd[4]; float *vals; int64_t nnz;\n"
        "} loom_tensor_abi;\n"
        "const int loom_kernel_abi_version = 1;\n"
        "int loom_kernel(loom_tensor_abi *t) {\n"
        "  int64_t n = t[0].dims[0];\n"
        "#pragma omp parallel for\n"
        "  for (int64_t i = 0; i < n - 1; i++) t[0].vals[i] = (float)(2 * i);\n"
        "  t[0].vals[n - 1] = (float)omp_get_max_threads();\n"
        "  return 0;\n"
        "}\n";
    loom_build_opts bo;
    memset(&bo, 0, sizeof bo);
    bo.cache_dir = omp_dir_;
    loom_module mod;
    loom_error err;
    cr_assert_eq(loom_build(src, "loom_kernel", &bo, &mod, &err), LOOM_OK, "%s", err.msg);

    enum { N = 100001 };
    float *v = shared_floats(N);
    loom_tensor_abi t = tensor_of(v, N);
    loom_measure_opts o = quick();
    loom_measurement m;
    cr_assert_eq(loom_measure(mod.fn, &t, &o, &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(m.status, LOOM_OK, "%s", m.message);
    cr_assert_geq(m.repeats, 3);
    int bad = 0;
    for (int i = 0; i < N - 1; i++)
        bad += v[i] != (float)(2 * i);
    cr_assert_eq(bad, 0, "%d outputs wrong", bad);
    cr_assert_geq(v[N - 1], 1.0f);
    /* Again: a second child also runs OpenMP fine. */
    memset(v, 0, N * sizeof(float));
    cr_assert_eq(loom_measure(mod.fn, &t, &o, &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(m.status, LOOM_OK, "%s", m.message);
    cr_assert_float_eq(v[N - 2], (float)(2 * (N - 2)), 0.0f);
    assert_no_children();
    /* mod stays loaded: unloading libgomp makes LeakSanitizer report the
     * allocations of its constructor (not ours) as leaks. */
    munmap(v, N * sizeof(float));
    rm_dir(omp_dir_);
}
