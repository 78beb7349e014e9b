/* loom: compiling generated C and loading it (see build.h).
 *
 * Thread safety: there is no static mutable state.  Temporary files carry the
 * process and thread id, pipes are close-on-exec (so a compiler spawned by
 * another thread does not hold our pipe open), the compiler is started with
 * posix_spawnp (safe in a multi-threaded process) and reaped by its pid. */
#include "build.h"
#include "measure.h"

#include "../../dsl/ir/limits.h"
#include "../machine/machine.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pin_libgomp(void)
{
    /* absence is fine: a kernel without OpenMP does not need it */
    (void)dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
}

extern char **environ;

/* -ffp-contract=fast: -std=c11 otherwise forbids fusing a*b+c into an FMA.
 * -mprefer-vector-width=512: GCC's tuning for recent Intel cores prefers
 * 256-bit vectors even with AVX-512 (measured: SpMM went from 0.86x to
 * parity with Eigen's 512-bit FMA kernel).
 * -fno-math-errno: expf and sqrtf need not set errno, so GCC inlines sqrtf,
 * CSEs repeated expf calls and may use libmvec's vector expf in `omp simd`
 * loops (the fused attention kernels' exponentials, lower_fusion.c).
 * -fno-split-loops (issue 29): -O3's loop splitting cuts a balanced chunk
 * loop at the last-chunk fixup `if (i_chunk + 1 >= n) row_hi = M_d0`
 * (lower_balance.c) into two copies; GCC vectorizes the `omp simd`
 * reduction in only one of them, the other keeps the scalar "simd array"
 * form (a serial 64-add chain for SDDMM D=64).  Seen in the assembly of
 * sddmm-cora-D64 schedules with balance 2 (one-thread CPU time 2.2x the
 * same schedule without balance); with the flag both copies vectorize.
 * -fno-tree-loop-distribute-patterns (issue 29): GCC 12's loop distribution
 * turns some row workspaces' copy-out loops (`C[i, f] = ws[f]`, codegen.c)
 * into memcpy from the workspace's stack array; GCC keeps the workspace in
 * registers through the row's position loop (loop store motion) but then
 * stores every register to the array for the memcpy to read, and when the
 * memcpy is expanded back into vector moves from those registers the stores
 * stay: dead, one a vector a row (seen in the assembly of Cora SpMM F = 32
 * with a balanced row split, GCC 12, AVX-512: 2 zmm stores a row; the static
 * row split's copy-out was not distributed and had none).  With the flag
 * the copy-out stays a loop of vector moves from the registers.  Measured
 * with bench/trace_cputime.c --cflags-b on the 128 re-measured records of
 * each issue-29 case (2 threads, Zen 4, 2026-12-07), flag / without, median
 * over the records and the best record: AVX-512 Cora SpMM F = 32 0.992
 * (10% of the records 0.885 or less) / best 0.998, GCN2 0.996 / 0.956,
 * SDDMM 0.999 / 0.982, PubMed, bcsstk16, mbeacxc, Facebook F = 128 and GEMM
 * 512 0.999-1.000 / 0.997-1.009; AVX2 (LOOM_HOST_ISA=avx2) Cora 0.997 /
 * 0.929 (8.58 -> 7.97 us), GCN2 0.993 / 0.933, PubMed 0.996 / 0.990, the
 * others 0.999-1.000 / 0.994-1.011.  The explicit memset of a workspace is
 * a call in the C and keeps its -mmemset-strategy expansion.
 * -mmemset-strategy / -mmemcpy-strategy (AVX2 and SSE builds, issue 29):
 * GCC 12 turns a workspace's zero fill (codegen.c's memset) and, before
 * -fno-tree-loop-distribute-patterns (above), its copy-out loop into memset /
 * memcpy, and with -mno-avx512f on a Zen 4 host expands a
 * 128-byte memset as `rep stosq` and calls the library for 256 bytes and
 * more.  `rep stosq` has a start-up cost of tens of cycles: Cora SpMM F=32
 * with a 32-float register workspace ran 34.0 us with it and 17.7 us with
 * vector stores (2 threads, this repository's bench/fidelity_1t.py records).
 * The flags make every fill and copy of a known size up to 2 KiB a loop of
 * vector stores, and larger ones the library call they were.  Without
 * them GCC's own AVX-512 expansion is zmm stores up to 512 bytes on Zen 4,
 * up to 256 bytes on Emerald Rapids (`rep stosq` from 384); the flags moved
 * no workspace kernel beyond noise there (PubMed, Facebook and mbeacxc
 * F=128 SpMM, three runs each, 2026-11-30).  Since the sixty-ninth session
 * AVX-512 builds take them too (with -mmove-max=512 -mstore-max=512), so
 * that a streaming kernel's 512-byte workspace fill is a memset GCC keeps in
 * registers rather than codegen.c's loom_stream_zero, which keeps the row in
 * memory: on Zen 4 (AVX-512 on 256-bit halves) PubMed F = 128's streamed
 * schedules with a 128-float workspace ran 1.5-1.6x the same schedule
 * split into two 64-float halves (730-755 against 455 us, 2 threads;
 * 416-430 us with the memset; issue 29, 2026-12-06).
 * -mmove-max=256 -mstore-max=256 (AVX2 builds, GCC >= 12): the vector loops
 * those strategies expand move 16 bytes at a time by default, so a 32-float
 * workspace's copy-out took 8 xmm loads and 8 xmm stores a row where 4 ymm
 * of each do (GCC 12 assembly; bench/fidelity_ir.py, which compares the
 * simulator's instruction counts with callgrind's, found the 45
 * instructions a Cora row cost).  Measured with bench/trace_cputime.c
 * --cflags-b (both variants in the same interleaved rounds, 2 threads,
 * Emerald Rapids under LOOM_HOST_ISA=avx2, 2026-12-02), the median of
 * each case's 128 re-measured issue-29 records, flags / without: Cora SpMM
 * F=32 0.942 (its best schedule 15.0 -> 13.7 us), bcsstk16 0.994, PubMed
 * 0.992, mbeacxc 1.000, Facebook 0.997, SDDMM 1.009, GCN2 0.997, GEMM 512
 * 0.998, attention 12x512x64 1.002 and 1x4096x64 0.989; the same kernels
 * built twice without the flags gave 1.018.
 * -DLOOM_MEMSET_VECTOR_BYTES=2048 (with those flags): tells the generated C
 * that a memset of up to that many bytes is vector stores here, so a kernel
 * that streams (codegen.c stream_zero_fill) zeroes a workspace of a literal
 * size up to it with memset, which lets GCC keep the workspace in
 * registers, instead of loom_stream_zero, whose empty asm keeps it in memory
 * (a store and a load of every vector a row more: PubMed F = 128's streamed
 * schedules measured 1.04-1.08x the ordinary copy-out under the AVX2 flags
 * on Zen 5, 1.01-1.02x with the memset, those schedules 4-6% faster; issue 29,
 * 2026-12-05; AVX-512 builds since 2026-12-06, above).  Kernels built
 * with other flags (non-x86 hosts, shipped C built elsewhere) keep
 * loom_stream_zero. */
#define LOOM_STRINGOPS_X86 \
    "-mmemset-strategy=vector_loop:2048:noalign,libcall:-1:noalign " \
    "-mmemcpy-strategy=vector_loop:2048:noalign,libcall:-1:noalign -DLOOM_MEMSET_VECTOR_BYTES=2048"
#define LOOM_CFLAGS_TAIL "-ffp-contract=fast -fno-math-errno -fno-split-loops -fno-tree-loop-distribute-patterns"
#define LOOM_CFLAGS_END "-fopenmp -fPIC -shared -std=c11"
#if defined(__x86_64__)
#define LOOM_CFLAGS_512 \
    "-O3 -march=native " LOOM_CFLAGS_TAIL " -mprefer-vector-width=512 " LOOM_STRINGOPS_X86 " -mmove-max=512 -mstore-max=512 " LOOM_CFLAGS_END
#define LOOM_CFLAGS_256 \
    "-O3 -march=native -mno-avx512f " LOOM_CFLAGS_TAIL " " LOOM_STRINGOPS_X86 " -mmove-max=256 -mstore-max=256 " LOOM_CFLAGS_END
#define LOOM_CFLAGS_128 "-O3 -march=native -mno-avx " LOOM_CFLAGS_TAIL " " LOOM_STRINGOPS_X86 " " LOOM_CFLAGS_END
#else
#define LOOM_CFLAGS_512 "-O3 -march=native " LOOM_CFLAGS_TAIL " " LOOM_CFLAGS_END
#define LOOM_CFLAGS_256 LOOM_CFLAGS_512
#define LOOM_CFLAGS_128 LOOM_CFLAGS_512
#endif

const char *loom_build_cc(void)
{
    const char *e = getenv("LOOM_CC");
    return e && *e ? e : "cc";
}

const char *loom_build_default_cflags(int vector_bits)
{
    return vector_bits >= 512 ? LOOM_CFLAGS_512 : vector_bits >= 256 ? LOOM_CFLAGS_256 : LOOM_CFLAGS_128;
}

#define LOOM_DIAG_MAX 4096

/* mkdir -p: create every missing component of `path`. */
static int mkdir_p(const char *path)
{
    size_t n = strlen(path);
    char *buf = malloc(n + 1);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(buf, path, n + 1);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
                int e = errno;
                free(buf);
                errno = e;
                return -1;
            }
            *p = c;
            if (c == '\0')
                break;
        }
    }
    struct stat st;
    int rc = stat(buf, &st);
    int e = errno;
    free(buf);
    if (rc != 0) {
        errno = e;
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = write(fd, text + off, n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        off += (size_t)w;
    }
    if (close(fd) != 0)
        return -1;
    return 0;
}

/* Split `s` on whitespace, appending to argv (which has room). */
static size_t split_words(char *s, char **argv, size_t argc)
{
    char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')
            p++;
        if (!*p)
            break;
        argv[argc++] = p;
        while (*p && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' ||
                       *p == '\f'))
            p++;
        if (*p)
            *p++ = '\0';
    }
    return argc;
}

static size_t count_words(const char *s)
{
    size_t n = 0;
    int in = 0;
    for (; *s; s++) {
        int ws = (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f');
        if (!ws && !in)
            n++;
        in = !ws;
    }
    return n;
}

/* Run the compiler; on failure fill err (LOOM_ERR_BUILD / LOOM_ERR_NOMEM). */
static loom_status run_compiler(const char *cc, const char *cflags, const char *so_tmp,
                                const char *c_tmp, double *seconds, loom_error *err)
{
    char *words = NULL;
    char **argv = NULL;
    char *diag = NULL;
    loom_status st = LOOM_OK;
    int pfd[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    int fa_ok = 0;

    size_t lcc = strlen(cc), lfl = strlen(cflags);
    words = malloc(lcc + lfl + 2);
    argv = malloc((count_words(cc) + count_words(cflags) + 6) * sizeof *argv);
    diag = malloc(LOOM_DIAG_MAX + 1);
    if (!words || !argv || !diag) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory running the compiler");
        goto out;
    }
    memcpy(words, cc, lcc + 1);
    memcpy(words + lcc + 1, cflags, lfl + 1);
    size_t argc = split_words(words, argv, 0);
    if (argc == 0) {
        st = loom_error_set(err, LOOM_ERR_BUILD, NULL, 0, 0, "the compiler command is empty");
        goto out;
    }
    argc = split_words(words + lcc + 1, argv, argc);
    argv[argc++] = "-o";
    argv[argc++] = (char *)so_tmp;
    argv[argc++] = (char *)c_tmp;
    argv[argc++] = "-lm";
    argv[argc] = NULL;

    if (pipe2(pfd, O_CLOEXEC) != 0) {
        st = loom_error_set(err, LOOM_ERR_BUILD, NULL, 0, 0, "cannot create a pipe for the compiler: %s",
                            strerror(errno));
        goto out;
    }
    if (posix_spawn_file_actions_init(&fa) != 0) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory running the compiler");
        goto out;
    }
    fa_ok = 1;
    /* dup2 clears close-on-exec on the target, so stdout/stderr survive exec. */
    if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 1) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 2) != 0) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory running the compiler");
        goto out;
    }

    double t0 = loom_now_seconds();
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    close(pfd[1]);
    pfd[1] = -1;
    if (rc != 0) {
        st = loom_error_set(err, LOOM_ERR_BUILD, NULL, 0, 0,
                            "cannot run the C compiler '%s': %s (set LOOM_CC or install cc)", argv[0],
                            strerror(rc));
        goto out;
    }

    size_t dlen = 0;
    char sink[4096];
    for (;;) {
        char *dst = dlen < LOOM_DIAG_MAX ? diag + dlen : sink;
        size_t room = dlen < LOOM_DIAG_MAX ? LOOM_DIAG_MAX - dlen : sizeof sink;
        ssize_t r = read(pfd[0], dst, room);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (r == 0)
            break;
        if (dst != sink)
            dlen += (size_t)r;
    }
    diag[dlen] = '\0';

    int status = 0;
    pid_t w;
    do
        w = waitpid(pid, &status, 0);
    while (w < 0 && errno == EINTR);
    *seconds = loom_now_seconds() - t0;
    if (w < 0) {
        st = loom_error_set(err, LOOM_ERR_BUILD, NULL, 0, 0, "cannot wait for the compiler: %s",
                            strerror(errno));
        goto out;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        goto out;
    if (WIFSIGNALED(status))
        st = loom_error_set(err, LOOM_ERR_BUILD, NULL, 0, 0, "%s was killed by signal %d (%s):\n%s",
                            argv[0], WTERMSIG(status), strsignal(WTERMSIG(status)), diag);
    else
        st = loom_error_set(err, LOOM_ERR_BUILD, NULL, 0, 0, "%s exited with status %d:\n%s", argv[0],
                            WIFEXITED(status) ? WEXITSTATUS(status) : status, diag);

out:
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    if (pfd[0] >= 0)
        close(pfd[0]);
    if (pfd[1] >= 0)
        close(pfd[1]);
    free(words);
    free(argv);
    free(diag);
    return st;
}

static loom_status load_module(const char *so_path, const char *entry, loom_module *out,
                               loom_error *err)
{
    dlerror();
    /* Kernels use OpenMP.  Keep libgomp loaded for the life of the process
     * instead of loading and unloading it with every kernel: its constructor
     * runs once, and what it allocates stays reachable (no leak reports). */
    static pthread_once_t gomp_once = PTHREAD_ONCE_INIT;
    pthread_once(&gomp_once, pin_libgomp);
    void *h = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0, "cannot load %s: %s", so_path,
                              e ? e : "unknown dlopen error");
    }
    dlerror();
    const int *ver = dlsym(h, "loom_kernel_abi_version");
    if (ver && *ver != LOOM_ABI_VERSION) {
        int v = *ver;
        dlclose(h);
        return loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0,
                              "%s was built for kernel ABI version %d, but this loom uses ABI "
                              "version %d; regenerate the kernel",
                              so_path, v, LOOM_ABI_VERSION);
    }
    dlerror();
    void *sym = dlsym(h, entry);
    if (!sym) {
        const char *e = dlerror();
        loom_status st = loom_error_set(err, LOOM_ERR_RUN, NULL, 0, 0,
                                        "entry point '%s' not found in %s: %s", entry, so_path,
                                        e ? e : "symbol is NULL");
        dlclose(h);
        return st;
    }
    out->handle = h;
    /* POSIX dlsym idiom: convert the object pointer to a function pointer. */
    memcpy(&out->fn, &sym, sizeof out->fn);
    return LOOM_OK;
}

loom_status loom_build(const char *source, const char *entry, const loom_build_opts *opts,
                       loom_module *out, loom_error *err)
{
    if (!source || !entry || !out)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_build: source, entry and out must not be NULL");
    memset(out, 0, sizeof *out);

    const char *cc = opts && opts->cc ? opts->cc : loom_build_cc();
    const char *cflags = opts && opts->cflags ? opts->cflags : NULL;
    if (!cflags) {
        loom_limits host = loom_target_cpu_limits(); /* the CPU the kernel runs on; honours LOOM_HOST_ISA */
        cflags = loom_build_default_cflags(host.vector_lanes * 32);
    }

    char dir[1024];
    const char *cd = opts && opts->cache_dir ? opts->cache_dir : NULL;
    if (cd) {
        snprintf(dir, sizeof dir, "%s", cd);
    } else {
        loom_cache_dir(NULL, dir, sizeof dir);
    }
    if (!dir[0])
        return loom_error_set(err, LOOM_ERR_IO, NULL, 0, 0, "the cache directory name is empty");

    /* Cache key: source, compiler, flags and the kernel ABI. */
    char abi[32];
    snprintf(abi, sizeof abi, "abi %d", LOOM_ABI_VERSION);
    uint64_t h = LOOM_FNV_OFFSET;
    h = loom_fnv1a(h, source, strlen(source));
    h = loom_fnv1a(h, "", 1);
    h = loom_fnv1a(h, cc, strlen(cc));
    h = loom_fnv1a(h, "", 1);
    h = loom_fnv1a(h, cflags, strlen(cflags));
    h = loom_fnv1a(h, "", 1);
    h = loom_fnv1a(h, abi, strlen(abi));
    out->hash = h;

    if (mkdir_p(dir) != 0)
        return loom_error_set(err, LOOM_ERR_IO, dir, 0, 0,
                              "cannot create the kernel cache directory: %s (set LOOM_CACHE to a "
                              "writable directory)",
                              strerror(errno));

    char so_path[1024 + 32], so_tmp[1024 + 96], c_tmp[1024 + 96], c_keep[1024 + 32];
    long tid = (long)syscall(SYS_gettid);
    long pid = (long)getpid();
    int n1 = snprintf(so_path, sizeof so_path, "%s/%016llx.so", dir, (unsigned long long)h);
    int n2 = snprintf(so_tmp, sizeof so_tmp, "%s/%016llx.%ld.%ld.so", dir, (unsigned long long)h, pid, tid);
    int n3 = snprintf(c_tmp, sizeof c_tmp, "%s/%016llx.%ld.%ld.c", dir, (unsigned long long)h, pid, tid);
    int n4 = snprintf(c_keep, sizeof c_keep, "%s/%016llx.c", dir, (unsigned long long)h);
    if (n1 < 0 || (size_t)n1 >= sizeof out->so_path || (size_t)n2 >= sizeof so_tmp ||
        (size_t)n3 >= sizeof c_tmp || (size_t)n4 >= sizeof c_keep)
        return loom_error_set(err, LOOM_ERR_IO, NULL, 0, 0, "the cache directory path is too long: %s",
                              dir);
    memcpy(out->so_path, so_path, (size_t)n1 + 1);

    if (access(so_path, F_OK) == 0) {
        out->cached = 1;
        out->compile_seconds = 0;
        loom_status st = load_module(so_path, entry, out, err);
        if (st != LOOM_OK) {
            uint64_t keep = out->hash;
            memset(out, 0, sizeof *out);
            out->hash = keep;
        }
        return st;
    }

    if (write_file(c_tmp, source) != 0) {
        int e = errno;
        unlink(c_tmp);
        return loom_error_set(err, LOOM_ERR_IO, c_tmp, 0, 0,
                              "cannot write the kernel source into the cache: %s (set LOOM_CACHE to a "
                              "writable directory)",
                              strerror(e));
    }

    double secs = 0;
    loom_status st = run_compiler(cc, cflags, so_tmp, c_tmp, &secs, err);
    if (opts && opts->keep_source) {
        if (rename(c_tmp, c_keep) != 0)
            unlink(c_tmp);
    } else {
        unlink(c_tmp);
    }
    if (st != LOOM_OK) {
        unlink(so_tmp);
        memset(out, 0, sizeof *out);
        out->hash = h;
        return st;
    }
    if (rename(so_tmp, so_path) != 0) {
        int e = errno;
        unlink(so_tmp);
        memset(out, 0, sizeof *out);
        out->hash = h;
        return loom_error_set(err, LOOM_ERR_IO, so_path, 0, 0,
                              "cannot move the compiled kernel into the cache: %s", strerror(e));
    }
    out->cached = 0;
    out->compile_seconds = secs;
    st = load_module(so_path, entry, out, err);
    if (st != LOOM_OK) {
        memset(out, 0, sizeof *out);
        out->hash = h;
    }
    return st;
}

void loom_module_close(loom_module *m)
{
    if (!m)
        return;
    if (m->handle)
        dlclose(m->handle);
    memset(m, 0, sizeof *m);
}
