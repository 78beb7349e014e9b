/* Tests for runtime/measure/build.c: compiling, caching and loading kernels. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../dsl/ir/program.h"
#include "../dsl/schedule/schedule.h"
#include "../runtime/lower/codegen.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/build.h"

/* ---- helpers -------------------------------------------------------------- */

static char tmpdir_[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir_, sizeof tmpdir_, "/tmp/loom-test-build-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir_), "mkdtemp: %s", strerror(errno));
}

/* rm -r of a directory tree (small, test-only). */
static void rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_rf(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void cleanup_tmpdir(void)
{
    if (tmpdir_[0])
        rm_rf(tmpdir_);
}

/* Count directory entries whose name ends with `suffix` ("" = all). */
static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    size_t ls = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t l = strlen(e->d_name);
        if (l >= ls && !strcmp(e->d_name + l - ls, suffix))
            n++;
    }
    closedir(d);
    return n;
}

static loom_build_opts opts_in(const char *dir)
{
    loom_build_opts o;
    memset(&o, 0, sizeof o);
    o.cache_dir = dir;
    return o;
}

/* Generated code inlines the ABI header; a test only needs the signature. */
#define KERNEL_PREFIX                                                        \
    "#include <stdint.h>\n"                                                  \
    "typedef struct loom_tensor_abi {\n"                                     \
    "    int32_t order; int32_t pad_; int64_t dims[4];\n"                    \
    "    int32_t *pos[4]; int32_t *crd[4]; float *vals; int64_t nnz;\n"      \
    "} loom_tensor_abi;\n"

static const char *k42_src = KERNEL_PREFIX
    "const int loom_kernel_abi_version = 1;\n"
    "int loom_kernel(loom_tensor_abi *t) { t[0].vals[0] = 42.0f; return 0; }\n";

static loom_tensor_abi one_float_tensor(float *v)
{
    loom_tensor_abi t;
    memset(&t, 0, sizeof t);
    t.order = 1;
    t.dims[0] = 1;
    t.vals = v;
    t.nnz = 1;
    return t;
}

TestSuite(build, .init = make_tmpdir, .fini = cleanup_tmpdir);

/* ---- FNV-1a ---------------------------------------------------------------- */

Test(build, fnv1a_known_vectors)
{
    cr_assert_eq(loom_fnv1a(LOOM_FNV_OFFSET, "", 0), 0xcbf29ce484222325ULL);
    cr_assert_eq(loom_fnv1a(LOOM_FNV_OFFSET, "a", 1), 0xaf63dc4c8601ec8cULL);
    cr_assert_eq(loom_fnv1a(LOOM_FNV_OFFSET, "foobar", 6), 0x85944171f73967e8ULL);
    /* Continuing from a previous hash equals hashing the concatenation. */
    uint64_t h = loom_fnv1a(LOOM_FNV_OFFSET, "foo", 3);
    cr_assert_eq(loom_fnv1a(h, "bar", 3), 0x85944171f73967e8ULL);
}

/* ---- building and loading -------------------------------------------------- */

Test(build, compiles_loads_and_runs)
{
    loom_build_opts o = opts_in(tmpdir_);
    loom_module m;
    loom_error err;
    loom_error_clear(&err);
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_not_null(m.handle);
    cr_assert_not_null(m.fn);
    cr_assert_eq(m.cached, 0);
    cr_assert_gt(m.compile_seconds, 0.0);

    char expect[512];
    snprintf(expect, sizeof expect, "%s/%016llx.so", tmpdir_, (unsigned long long)m.hash);
    cr_assert_str_eq(m.so_path, expect);
    struct stat st;
    cr_assert_eq(stat(m.so_path, &st), 0);

    float v = 0;
    loom_tensor_abi t = one_float_tensor(&v);
    cr_assert_eq(m.fn(&t), 0);
    cr_assert_float_eq(v, 42.0f, 0.0f);

    /* Only the object is left: no temporary sources or objects. */
    cr_assert_eq(count_files(tmpdir_, ""), 1);
    cr_assert_eq(count_files(tmpdir_, ".c"), 0);
    loom_module_close(&m);
    cr_assert_null(m.handle);
    cr_assert_null(m.fn);
}

Test(build, second_build_is_cached)
{
    loom_build_opts o = opts_in(tmpdir_);
    loom_module a, b;
    loom_error err;
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &a, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(a.cached, 0);
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(b.cached, 1);
    cr_assert_eq(b.compile_seconds, 0.0);
    cr_assert_eq(a.hash, b.hash);
    cr_assert_str_eq(a.so_path, b.so_path);
    float v = 0;
    loom_tensor_abi t = one_float_tensor(&v);
    cr_assert_eq(b.fn(&t), 0);
    cr_assert_float_eq(v, 42.0f, 0.0f);
    loom_module_close(&b);
    loom_module_close(&a);
}

Test(build, key_depends_on_source_and_flags)
{
    loom_build_opts o = opts_in(tmpdir_);
    loom_module a, b, c;
    loom_error err;
    const char *other = KERNEL_PREFIX
        "int loom_kernel(loom_tensor_abi *t) { t[0].vals[0] = 7.0f; return 0; }\n";
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &a, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_build(other, "loom_kernel", &o, &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_neq(a.hash, b.hash);
    cr_assert_neq(a.handle, b.handle);
    float v = 0;
    loom_tensor_abi t = one_float_tensor(&v);
    cr_assert_eq(b.fn(&t), 0);
    cr_assert_float_eq(v, 7.0f, 0.0f);
    cr_assert_eq(a.fn(&t), 0);
    cr_assert_float_eq(v, 42.0f, 0.0f);

    o.cflags = "-O1 -fPIC -shared -std=c11";
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &c, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(c.cached, 0);
    cr_assert_neq(c.hash, a.hash);
    cr_assert_eq(count_files(tmpdir_, ".so"), 3);
    loom_module_close(&a);
    loom_module_close(&b);
    loom_module_close(&c);
}

Test(build, syntax_error_is_build_error)
{
    loom_build_opts o = opts_in(tmpdir_);
    loom_module m;
    loom_error err;
    loom_error_clear(&err);
    const char *bad = "int loom_kernel(void *t) { return 0 }\n"; /* missing ';' */
    cr_assert_eq(loom_build(bad, "loom_kernel", &o, &m, &err), LOOM_ERR_BUILD);
    cr_assert_eq(err.status, LOOM_ERR_BUILD);
    cr_assert_not_null(strstr(err.msg, "exited with status"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "error"), "%s", err.msg);
    cr_assert_null(m.handle);
    /* Nothing is cached and no temporaries remain. */
    cr_assert_eq(count_files(tmpdir_, ""), 0);
    /* Not cached: the failure repeats. */
    cr_assert_eq(loom_build(bad, "loom_kernel", &o, &m, &err), LOOM_ERR_BUILD);
}

Test(build, missing_compiler_is_build_error)
{
    loom_build_opts o = opts_in(tmpdir_);
    o.cc = "loom-no-such-compiler-xyz";
    loom_module m;
    loom_error err;
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &m, &err), LOOM_ERR_BUILD);
    cr_assert_not_null(strstr(err.msg, "loom-no-such-compiler-xyz"), "%s", err.msg);
    cr_assert_eq(count_files(tmpdir_, ""), 0);
}

Test(build, loom_cc_environment_selects_compiler)
{
    loom_build_opts o = opts_in(tmpdir_);
    setenv("LOOM_CC", "loom-no-such-compiler-env", 1);
    loom_module m;
    loom_error err;
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &m, &err), LOOM_ERR_BUILD);
    cr_assert_not_null(strstr(err.msg, "loom-no-such-compiler-env"), "%s", err.msg);
    unsetenv("LOOM_CC");
}

Test(build, missing_entry_is_run_error)
{
    loom_build_opts o = opts_in(tmpdir_);
    loom_module m;
    loom_error err;
    cr_assert_eq(loom_build(k42_src, "no_such_entry", &o, &m, &err), LOOM_ERR_RUN);
    cr_assert_not_null(strstr(err.msg, "no_such_entry"), "%s", err.msg);
    cr_assert_null(m.handle);
    cr_assert_null(m.fn);
}

Test(build, abi_mismatch_is_refused)
{
    loom_build_opts o = opts_in(tmpdir_);
    loom_module m;
    loom_error err;
    const char *src = KERNEL_PREFIX
        "const int loom_kernel_abi_version = 99;\n"
        "int loom_kernel(loom_tensor_abi *t) { (void)t; return 0; }\n";
    cr_assert_eq(loom_build(src, "loom_kernel", &o, &m, &err), LOOM_ERR_RUN);
    cr_assert_not_null(strstr(err.msg, "ABI"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "99"), "%s", err.msg);
    cr_assert_null(m.handle);
    /* Also when the object comes from the cache. */
    cr_assert_eq(loom_build(src, "loom_kernel", &o, &m, &err), LOOM_ERR_RUN);
    cr_assert_not_null(strstr(err.msg, "ABI"), "%s", err.msg);
}

Test(build, keep_source_keeps_the_c_file)
{
    loom_build_opts o = opts_in(tmpdir_);
    o.keep_source = 1;
    loom_module m;
    loom_error err;
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &m, &err), LOOM_OK, "%s", err.msg);
    char path[512];
    snprintf(path, sizeof path, "%s/%016llx.c", tmpdir_, (unsigned long long)m.hash);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s not kept", path);
    char buf[2048];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    cr_assert_str_eq(buf, k42_src);
    cr_assert_eq(count_files(tmpdir_, ""), 2);
    loom_module_close(&m);
}

Test(build, creates_nested_cache_dir)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/a/b/c/", tmpdir_);
    loom_build_opts o = opts_in(dir);
    loom_module m;
    loom_error err;
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &m, &err), LOOM_OK, "%s", err.msg);
    snprintf(dir, sizeof dir, "%s/a/b/c", tmpdir_);
    cr_assert_eq(count_files(dir, ".so"), 1);
    loom_module_close(&m);
}

Test(build, loom_cache_environment_is_used)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/envcache", tmpdir_);
    setenv("LOOM_CACHE", dir, 1);
    loom_module m;
    loom_error err;
    loom_build_opts o;
    memset(&o, 0, sizeof o);
    o.cflags = "-O1 -fPIC -shared -std=c11";
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(strncmp(m.so_path, dir, strlen(dir)), 0, "%s", m.so_path);
    cr_assert_eq(count_files(dir, ".so"), 1);
    loom_module_close(&m);
    unsetenv("LOOM_CACHE");
}

Test(build, unusable_cache_dir_is_io_error)
{
    char file[512], dir[600];
    snprintf(file, sizeof file, "%s/plainfile", tmpdir_);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/sub", file); /* a directory under a file */
    loom_build_opts o = opts_in(dir);
    loom_module m;
    loom_error err;
    cr_assert_eq(loom_build(k42_src, "loom_kernel", &o, &m, &err), LOOM_ERR_IO);
    cr_assert_eq(err.status, LOOM_ERR_IO);
}

Test(build, openmp_kernel_builds_with_default_flags)
{
    loom_build_opts o = opts_in(tmpdir_);
    loom_module m;
    loom_error err;
    const char *src = KERNEL_PREFIX
        "#include <math.h>\n"
        "const int loom_kernel_abi_version = 1;\n"
        "int loom_kernel(loom_tensor_abi *t) {\n"
        "#pragma omp parallel for\n"
        "  for (int64_t i = 0; i < t[0].dims[0]; i++) t[0].vals[i] = sqrtf((float)(i * i));\n"
        "  return 0;\n"
        "}\n";
    cr_assert_eq(loom_build(src, "loom_kernel", &o, &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_not_null(m.fn);
    /* Not run here: OpenMP in the test process would break later forks.
     * Not closed either: unloading libgomp makes LeakSanitizer report the
     * allocations of its constructor (not ours) as leaks. */
}

/* ---- concurrency ------------------------------------------------------------- */

typedef struct job {
    const char *src;
    float expect;
    loom_status st;
    float got;
    char msg[1024];
} job;

static void *build_job(void *p)
{
    job *j = p;
    loom_build_opts o = opts_in(tmpdir_);
    o.cflags = "-O1 -fPIC -shared -std=c11";
    loom_module m;
    loom_error err;
    loom_error_clear(&err);
    j->st = loom_build(j->src, "loom_kernel", &o, &m, &err);
    snprintf(j->msg, sizeof j->msg, "%s", err.msg);
    if (j->st == LOOM_OK) {
        float v = 0;
        loom_tensor_abi t = one_float_tensor(&v);
        m.fn(&t);
        j->got = v;
        loom_module_close(&m);
    }
    return NULL;
}

Test(build, concurrent_builds_from_threads)
{
    enum { N = 8 };
    static char srcs[N][512];
    job jobs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        /* Pairs of threads build the same source at the same time. */
        snprintf(srcs[i], sizeof srcs[i],
                 KERNEL_PREFIX "int loom_kernel(loom_tensor_abi *t) { t[0].vals[0] = %d.0f; return 0; }\n",
                 i / 2);
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].src = srcs[i];
        jobs[i].expect = (float)(i / 2);
    }
    for (int i = 0; i < N; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, build_job, &jobs[i]), 0);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(jobs[i].st, LOOM_OK, "job %d: %s", i, jobs[i].msg);
        cr_assert_float_eq(jobs[i].got, jobs[i].expect, 0.0f, "job %d", i);
    }
    cr_assert_eq(count_files(tmpdir_, ".so"), N / 2);
    cr_assert_eq(count_files(tmpdir_, ""), N / 2);
}

/* Issue 12: the kernel flags follow the vector unit the target names, so an
 * AVX2 target measured on an AVX-512 host runs AVX2 code. */
Test(build, default_cflags_follow_the_vector_width)
{
    const char *f512 = loom_build_default_cflags(512), *f256 = loom_build_default_cflags(256);
    const char *f128 = loom_build_default_cflags(128);
    cr_assert(strstr(f512, "-O3") && strstr(f256, "-O3") && strstr(f128, "-O3"));
    cr_assert(strstr(f256, "-fopenmp") && strstr(f128, "-ffp-contract=fast"));
#if defined(__x86_64__)
    cr_assert(strstr(f256, "-mno-avx512f"), "avx2 flags: %s", f256);
    cr_assert_null(strstr(f256, "-mprefer-vector-width=512"), "avx2 flags: %s", f256);
    cr_assert(strstr(f128, "-mno-avx "), "sse flags: %s", f128);
    cr_assert_null(strstr(f512, "-mno-avx"), "avx512 flags: %s", f512);
    cr_assert(strstr(f512, "-mprefer-vector-width=512"), "avx512 flags: %s", f512);
#endif
}

/* The defaults (no cflags) follow LOOM_HOST_ISA: an avx2 override compiles a
 * kernel without AVX-512, so the kernel's code has no zmm register. */
Test(build, host_isa_override_compiles_without_avx512)
{
#if defined(__x86_64__)
    setenv("LOOM_HOST_ISA", "avx2", 1);
    loom_build_opts o = {0};
    o.cache_dir = tmpdir_;
    const char *src = "void f(float *restrict a, const float *restrict b) {\n"
                      "  for (int i = 0; i < 1024; i++) a[i] += 2.0f * b[i];\n}\n";
    loom_module m;
    loom_error e;
    loom_error_clear(&e);
    loom_status st = loom_build(src, "f", &o, &m, &e);
    unsetenv("LOOM_HOST_ISA");
    cr_assert_eq(st, LOOM_OK, "%s", e.msg);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "objdump -d %s | grep -c zmm", m.so_path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    int zmm = -1;
    cr_assert_eq(fscanf(p, "%d", &zmm), 1);
    pclose(p);
    cr_assert_eq(zmm, 0, "an avx2 kernel uses zmm registers");
    loom_module_close(&m);
#endif
}

/* Write src to TMPDIR/name.c and compile it to assembly with the default
 * flags for vector_bits; asm_ receives the .s path.  Skips the test when cc
 * cannot run. */
static void compile_to_asm(const char *name, const char *src, int vector_bits, char *asm_, size_t n)
{
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/%s.c", tmpdir_, name);
    snprintf(asm_, n, "%s/%s.s", tmpdir_, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc %s -S %s -o %s 2>/dev/null", loom_build_default_cflags(vector_bits), path, asm_);
    if (system(cmd) != 0)
        cr_skip_test("cc -S failed (no compiler?)");
}

/* Scalar and packed single-precision multiplies and FMAs in an assembly file. */
static void count_multiplies(const char *asm_, int *scalar, int *vector)
{
    char line[512];
    FILE *f = fopen(asm_, "r");
    cr_assert_not_null(f);
    *scalar = *vector = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "mulss\t") || strstr(line, "fmadd132ss") || strstr(line, "fmadd213ss") ||
            strstr(line, "fmadd231ss"))
            (*scalar)++;
        if (strstr(line, "mulps\t") || strstr(line, "fmadd132ps") || strstr(line, "fmadd213ps") ||
            strstr(line, "fmadd231ps"))
            (*vector)++;
    }
    fclose(f);
}

/* A register workspace as runtime/lower/codegen.c writes it (CacheWrite of
 * SpMM's output row, 32 floats): zero-filled with memset, accumulated over
 * the row's nonzeros, copied out.  GCC 12 with -mno-avx512f on a Zen 4 host
 * expands the 128-byte memset as `rep stosq` (tens of cycles to start: Cora
 * SpMM F=32 ran 34.0 us instead of 17.7 us) and calls memset / memcpy from
 * 256 bytes.  Compiled to assembly with the default AVX-512, AVX2 and SSE
 * flags (AVX-512's since 2026-12-06: runtime/measure/build.c), and
 * for 32 to 512 floats, the kernel must contain no string instruction and no
 * call: every fill and copy is vector stores (issue 29), and under the AVX2
 * flags 32-byte ones: GCC's vector_loop moves 16 bytes at a time without
 * -mmove-max=256 -mstore-max=256 (8 xmm loads and 8 stores for a 32-float
 * copy-out; checked with GCC 12 on Emerald Rapids).  Without the
 * -mmemset-strategy / -mmemcpy-strategy flags this fails (checked with GCC 12
 * on an AMD EPYC Zen 4 host). */
static const char *workspace_src_fmt =
    "#include <stdint.h>\n#include <string.h>\n"
    "void k(int64_t n, const int *pos, const int *crd, const float *a, const float *b, float *c) {\n"
    "  for (int64_t i = 0; i < n; i++) {\n"
    "    float ws[%d];\n"
    "    memset(ws, 0, sizeof(float) * (size_t)(%d));\n"
    "    for (int64_t p = pos[i]; p < pos[i + 1]; p++) {\n"
    "      int64_t k = crd[p];\n"
    "      __asm__(\"\");\n"
    "      #pragma omp simd\n"
    "      for (int64_t f = 0; f < %d; f++) ws[f] = ws[f] + a[p] * b[k * %d + f];\n"
    "    }\n"
    "    #pragma omp simd\n"
    "    for (int64_t f = 0; f < %d; f++) c[i * %d + f] = ws[f];\n"
    "  }\n"
    "}\n";

Test(build, workspace_fill_and_copy_are_vector_stores)
{
#if !defined(__x86_64__)
    cr_skip_test("assembly check written for x86-64");
#endif
    static const int widths[] = {512, 256, 128};
    static const int floats[] = {32, 64, 128, 512};
    char src[2048], asm_[512], line[512];
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
        for (size_t n = 0; n < sizeof floats / sizeof *floats; n++) {
            int F = floats[n];
            snprintf(src, sizeof src, workspace_src_fmt, F, F, F, F, F, F);
            const char *cflags = loom_build_default_cflags(widths[w]);
            compile_to_asm("ws", src, widths[w], asm_, sizeof asm_);
            FILE *f = fopen(asm_, "r");
            cr_assert_not_null(f);
            int string_ops = 0, calls = 0, vector_stores = 0, narrow_moves = 0;
            while (fgets(line, sizeof line, f)) {
                /* a 16-byte move of a fill or copy under the AVX2 flags (-mmove-max=256) */
                if (widths[w] == 256 && strstr(line, "%xmm") &&
                    (strstr(line, "\tvmovdqa\t") || strstr(line, "\tvmovdqu\t") || strstr(line, "\tvmovaps\t") ||
                     strstr(line, "\tvmovups\t")))
                    narrow_moves++;
                if (strstr(line, "rep stos") || strstr(line, "rep movs"))
                    string_ops++;
                if (strstr(line, "memset") || strstr(line, "memcpy"))
                    calls++;
                if (strstr(line, "\tvmov") || strstr(line, "\tmovaps") || strstr(line, "\tmovups") ||
                    strstr(line, "\tmovdq"))
                    vector_stores++;
            }
            fclose(f);
            cr_assert_eq(string_ops, 0, "%d floats, %d-bit flags: the workspace is filled or copied with a "
                         "string instruction (flags: %s)", F, widths[w], cflags);
            cr_assert_eq(calls, 0, "%d floats, %d-bit flags: the workspace is filled or copied by a library "
                         "call (flags: %s)", F, widths[w], cflags);
            cr_assert_gt(vector_stores, 0, "%d floats, %d-bit flags: no vector move at all", F, widths[w]);
            cr_assert_eq(narrow_moves, 0, "%d floats, 256-bit flags: the workspace is filled or copied 16 bytes at a "
                         "time (flags: %s)", F, cflags);
        }
}

/* The balanced-chunk pattern of runtime/lower/lower_balance.c (an `omp simd`
 * sum reduction inside chunked row loops with a last-chunk fixup on the chunk
 * index).  GCC 12's -fsplit-loops (on at -O3) splits the chunk loop at the
 * fixup and vectorizes the reduction in only one copy; the other keeps a
 * scalar multiply chain (issue 29: SDDMM balance=2 ran 2.2x slower).  Compiled
 * to assembly with the default flags, the kernel must contain no scalar
 * single-precision multiply.  Without -fno-split-loops in the flags this fails
 * (checked with GCC 12, x86-64 AVX-512 host). */
static const char balanced_src[] =
    "#include <stdint.h>\n"
    "void k(int64_t n, const int *pos, const int *crd, const float *v, const float *q,\n"
    "       const float *kk, float *s) {\n"
    "  #pragma omp parallel for schedule(static)\n"
    "  for (int64_t c = 0; c < 2; c++) {\n"
    "    int64_t nnz = pos[n], lo = 0, hi = n, rlo, rhi;\n"
    "    while (lo < hi) { int64_t m = (lo + hi) / 2; if (pos[m] < c * nnz / 2) lo = m + 1; else hi = m; }\n"
    "    rlo = lo; lo = 0; hi = n;\n"
    "    while (lo < hi) { int64_t m = (lo + hi) / 2; if (pos[m] < (c + 1) * nnz / 2) lo = m + 1; else hi = m; }\n"
    "    rhi = lo;\n"
    "    if (c + 1 >= 2) { rhi = n; }\n"
    "    for (int64_t i = rlo; i < rhi; i++)\n"
    "      for (int64_t p = pos[i]; p < pos[i + 1]; p++) {\n"
    "        int64_t j = crd[p]; float acc = 0.0f;\n"
    "        #pragma omp simd reduction(+:acc)\n"
    "        for (int64_t d = 0; d < 64; d++) acc = acc + v[p] * q[i * 64 + d] * kk[j * 64 + d];\n"
    "        s[p] = acc;\n"
    "      }\n"
    "  }\n"
    "}\n";

Test(build, balanced_reduction_vectorized_in_every_copy)
{
#if !defined(__x86_64__)
    cr_skip_test("assembly check written for x86-64");
#endif
    char asm_[512];
    const char *cflags = loom_build_default_cflags(512);
    compile_to_asm("bal", balanced_src, 512, asm_, sizeof asm_);
    int scalar_mul, vector_mul;
    count_multiplies(asm_, &scalar_mul, &vector_mul);
    cr_assert_gt(vector_mul, 0, "the reduction was not vectorized at all (flags: %s)", cflags);
    cr_assert_eq(scalar_mul, 0, "%d scalar multiplies: a copy of the balanced loop was left "
                 "unvectorized (flags: %s)", scalar_mul, cflags);
}

/* A row workspace in the form codegen prints it (a balanced row split, the
 * row guarded by its emptiness, the workspace zero-filled by memset and
 * copied out by an `omp simd` loop; runtime/lower/codegen.c guarded_row).
 * GCC 12's loop distribution turns the copy-out into a memcpy from the
 * workspace's stack array, so every row stores the registers that held the
 * workspace to the stack, dead once the memcpy is expanded back into moves
 * from them (issue 29: Cora SpMM F = 32 ran up to 12% slower).  Compiled to
 * assembly with the default flags, at 512 and 256 bits, the parallel
 * region's function must store no vector to the stack.  Without
 * -fno-tree-loop-distribute-patterns this fails (GCC 12, Zen 4: 2 zmm
 * stores at 512 bits, 4 ymm at 256). */
static const char row_workspace_src[] =
    "#include <stdint.h>\n"
    "#include <string.h>\n"
    "void k(int64_t n, const int *pos, const int *crd, const float *v, const float *b, float *c) {\n"
    "  #pragma omp parallel for schedule(static)\n"
    "  for (int64_t ch = 0; ch < 2; ch++) {\n"
    "    int64_t nnz = pos[n], lo = 0, hi = n, rlo, rhi;\n"
    "    while (lo < hi) { int64_t m = (lo + hi) / 2; if (pos[m] < ch * nnz / 2) lo = m + 1; else hi = m; }\n"
    "    rlo = lo; lo = 0; hi = n;\n"
    "    while (lo < hi) { int64_t m = (lo + hi) / 2; if (pos[m] < (ch + 1) * nnz / 2) lo = m + 1; else hi = m; }\n"
    "    rhi = lo;\n"
    "    if (ch + 1 >= 2) { rhi = n; }\n"
    "    for (int64_t i = rlo; i < rhi; i++) {\n"
    "      float ws[32];\n"
    "      memset(ws, 0, sizeof ws);\n"
    "      int64_t p0 = pos[i], p1 = pos[i + 1];\n"
    "      if (p0 < p1) {\n"
    "        for (int64_t p = p0; p < p1; p++) {\n"
    "          int64_t j = crd[p];\n"
    "          __asm__(\"\");\n"
    "          #pragma omp simd\n"
    "          for (int64_t f = 0; f < 32; f++) ws[f] = ws[f] + v[p] * b[j * 32 + f];\n"
    "        }\n"
    "        #pragma omp simd\n"
    "        for (int64_t f = 0; f < 32; f++) c[i * 32 + f] = ws[f];\n"
    "      } else {\n"
    "        #pragma omp simd\n"
    "        for (int64_t f = 0; f < 32; f++) c[i * 32 + f] = ws[f];\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

/* ymm and zmm registers stored to the stack (`(%rsp)` or `(%rbp)`
 * addresses) in the body of function fn of an assembly file. */
static int stack_vector_stores(const char *asm_, const char *fn)
{
    char line[512], label[128];
    snprintf(label, sizeof label, "%s:", fn);
    FILE *f = fopen(asm_, "r");
    cr_assert_not_null(f);
    int in = 0, n = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, label, strlen(label)))
            in = 1;
        else if (in && strstr(line, ".size"))
            in = 0;
        const char *r = strstr(line, "mm");
        if (in && strstr(line, "\tvmov") && r && r > line && strchr("yz", r[-1]) &&
            (strstr(line, "(%rsp)") || strstr(line, "(%rbp)")) && strchr(line, ',') < strstr(line, "(%r"))
            n++;
    }
    fclose(f);
    return n;
}

Test(build, row_workspace_copy_out_stores_nothing_to_the_stack)
{
#if !defined(__x86_64__)
    cr_skip_test("assembly check written for x86-64");
#endif
    static const int widths[2] = {512, 256};
    for (int w = 0; w < 2; w++) {
        char asm_[512], name[32];
        snprintf(name, sizeof name, "rws%d", widths[w]);
        compile_to_asm(name, row_workspace_src, widths[w], asm_, sizeof asm_);
        int vector_mul, scalar_mul;
        count_multiplies(asm_, &scalar_mul, &vector_mul);
        cr_assert_gt(vector_mul, 0, "%d-bit flags: the row loop was not vectorized", widths[w]);
        int n = stack_vector_stores(asm_, "k._omp_fn.0");
        cr_assert_eq(n, 0, "%d-bit flags: %d vector stores to the stack in the parallel region: the "
                     "workspace's copy-out went through memory (flags: %s)", widths[w], n,
                     loom_build_default_cflags(widths[w]));
    }
}

/* runtime/lower/lower_ctx.c loom__lw_note_loop (issue 29): a loop around an
 * `omp simd reduction` is never given `#pragma GCC unroll`.  GCC 12 unrolls
 * such a loop before it vectorizes, and the reduction's copies stay scalar
 * (SDDMM D=64 with d split 2 x 32 and the outer part unrolled: 3.9x the time
 * of the unsplit schedule).  Here a dot product per row, S(i) = Q(i, d) K(i,
 * d), d split 2 x 32, the inner part vectorized, the outer unrolled 2: its
 * generated C, compiled to assembly with the default AVX-512 flags, must
 * multiply in vectors and never in scalars.  With the pragma emitted this
 * fails (checked with GCC 12 on an AMD EPYC Zen 4 host). */
/* The generated C of a reduction per row over N = D = 64, S(i) op= Q(i, d)
 * K(i, d) (op "+" a dot product, "max" its largest term), d split 2 x 32 and
 * the inner part vectorized (a constant trip count); with unrolled, the
 * outer part unrolled 2. */
static char *dot_kernel_source(const char *op, int unrolled)
{
    loom_error err;
    loom_program *prog;
    char text[256];
    snprintf(text, sizeof text,
             "param N = 64\nparam D = 64\ntensor Q(N, D) dense\ntensor K(N, D) dense\n"
             "tensor S(N) dense output\nS(i) %s= Q(i, d) * K(i, d)\n", op);
    cr_assert_eq(loom_program_parse_string(text, "dot.loom", &prog, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *s = malloc(sizeof *s);
    cr_assert_eq(loom_schedule_naive(s, prog, 1, &err), LOOM_OK, "%s", err.msg);
    int b, loops[8], n = 8, parts[2];
    cr_assert_eq(loom_get_block(s, "S", &b, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(s, b, loops, &n, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    static const int64_t factors[2] = {2, 32};
    cr_assert_eq(loom_split(s, loops[1], 2, NULL, factors, parts, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_vectorize(s, parts[1], &err), LOOM_OK, "%s", err.msg);
    if (unrolled)
        cr_assert_eq(loom_unroll(s, parts[0], 2, &err), LOOM_OK, "%s", err.msg);
    lir_func *f;
    cr_assert_eq(loom_lower(s, &f, &err), LOOM_OK, "%s", err.msg);
    char *c = NULL;
    cr_assert_eq(loom_codegen_c(f, "loom_kernel", &c, &err), LOOM_OK, "%s", err.msg);
    loom_lir_func_free(f);
    free(s);
    loom_program_free(prog);
    return c;
}

Test(build, reduction_under_an_unrolled_loop_stays_vectorized)
{
#if !defined(__x86_64__)
    cr_skip_test("assembly check written for x86-64");
#endif
    char *c = dot_kernel_source("+", 1);
    char asm_[512];
    const char *cflags = loom_build_default_cflags(512);
    compile_to_asm("dot", c, 512, asm_, sizeof asm_);
    free(c);
    int scalar_mul, vector_mul;
    count_multiplies(asm_, &scalar_mul, &vector_mul);
    cr_assert_gt(vector_mul, 0, "the reduction was not vectorized at all (flags: %s)", cflags);
    cr_assert_eq(scalar_mul, 0, "%d scalar multiplies: the reduction under the unrolled loop stayed scalar", scalar_mul);
}

/* runtime/lower/codegen.c tree_reduction (issue 29): a vectorized sum or
 * max of constant trip count combines its lanes in a tree.  Left to `omp
 * simd reduction`, GCC 12 adds the lanes one after another: 16 dependent
 * scalar adds (vaddss) per dot product with AVX-512, 8 with AVX2 -- SDDMM
 * Cora D=64 ran 53-68 us that way and 34-37 us with the tree.  And the last
 * 4 lanes, combined as array elements, are stored and reloaded one by one
 * (a store-forwarding stall; loom_hsum4 / loom_hmax4 keep them in a
 * register).  The kernels (D = 64 split 2 x 32, the 32 vectorized) compiled
 * to assembly with the default AVX-512 and AVX2 flags must combine in
 * vectors, with at most 2 scalar adds (maxes): the tree's result into the
 * accumulator and one GCC may keep.  With the reduction clause or the
 * scalar 4-lane step this fails (checked with GCC 12 on an AMD EPYC Zen 4
 * host: 16 / 8 vaddss with the clause, 4 vmaxss from the array). */
Test(build, vector_reductions_combine_their_lanes_in_a_tree)
{
#if !defined(__x86_64__)
    cr_skip_test("assembly check written for x86-64");
#endif
    static const char *ops[2] = {"+", "max"}, *scalar[2] = {"addss\t", "maxss\t"}, *vector[2] = {"addps\t", "maxps\t"};
    static const char *helper[2] = {"loom_hsum4(", "loom_hmax4("};
    static const int widths[2] = {512, 256};
    for (int o = 0; o < 2; o++) {
        char *c = dot_kernel_source(ops[o], 0);
        cr_assert(strstr(c, helper[o]) != NULL, "the %s reduction was not written as a tree:\n%s", ops[o], c);
        for (int w = 0; w < 2; w++) {
            char asm_[512], name[32], line[512];
            snprintf(name, sizeof name, "tree%d%d", o, widths[w]);
            compile_to_asm(name, c, widths[w], asm_, sizeof asm_);
            FILE *f = fopen(asm_, "r");
            cr_assert_not_null(f);
            int nscalar = 0, nvector = 0;
            while (fgets(line, sizeof line, f)) {
                nscalar += strstr(line, scalar[o]) != NULL;
                nvector += strstr(line, vector[o]) != NULL;
            }
            fclose(f);
            cr_assert_gt(nvector, 0, "%s: no vector %s: the lanes were not combined in vectors (%d-bit flags: %s)",
                         ops[o], vector[o], widths[w], loom_build_default_cflags(widths[w]));
            cr_assert_leq(nscalar, 2, "%s: %d scalar %s: the lanes are combined one after another (%d-bit flags: %s)",
                          ops[o], nscalar, scalar[o], widths[w], loom_build_default_cflags(widths[w]));
        }
        free(c);
    }
}
