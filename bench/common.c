/* Shared code of the loom benchmarks (common.h). */
#include "common.h"
#include "roofline.h"

#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int loom_bench_run_in_child(loom_bench_child_fn fn, void *arg, double *out, int nout)
{
    if (nout < 1 || nout > LOOM_BENCH_CHILD_MAX_OUT)
        return -1;
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        double buf[LOOM_BENCH_CHILD_MAX_OUT] = {0};
        fn(arg, buf, nout);
        ssize_t want = (ssize_t)(sizeof(double) * (size_t)nout);
        ssize_t w = write(fd[1], buf, (size_t)want);
        _exit(w == want ? 0 : 1);
    }
    close(fd[1]);
    size_t want = sizeof(double) * (size_t)nout, got = 0;
    char *p = (char *)out;
    while (got < want) {
        ssize_t r = read(fd[0], p + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return got == want && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

void loom_bench_roofline_child(void *arg, double *out, int nout)
{
    (void)arg;
    if (nout < 4)
        return;
    double bw = 0, peak = 0;
    int rc = loom_bench_roofline(0, &bw, &peak);
    out[0] = bw;
    out[1] = peak;
    out[2] = loom_bench_roofline_threads();
    out[3] = rc;
}
