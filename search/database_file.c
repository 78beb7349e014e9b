/* loom: the tuning database's writer lock and line reader
 * (database_internal.h), its status names and the data fingerprint
 * (database.h). */
#include "database_internal.h"

#include "../dsl/util.h" /* loom_fnv1a, loom_tensor_data_hash */
#include "../runtime/measure/build.h"
#include "database.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

loom_status loom__db_lock(const char *dir, int *fd_out, loom_error *err)
{
    *fd_out = -1;
    size_t n = strlen(dir) + sizeof "/lock";
    char *path = malloc(n);
    if (!path)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    snprintf(path, n, "%s/lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot open %s: %s", path, strerror(errno));
        free(path);
        return LOOM_ERR_IO;
    }
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, F_SETLK, &fl) != 0) {
        int e = errno;
        if (e != EACCES && e != EAGAIN) {
            loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot lock %s: %s", path, strerror(e));
        } else {
            /* who holds it: the kernel knows; the file says it too (the
             * holder may not have written it yet) */
            long pid = 0;
            struct flock q;
            memset(&q, 0, sizeof q);
            q.l_type = F_WRLCK;
            q.l_whence = SEEK_SET;
            if (fcntl(fd, F_GETLK, &q) == 0 && q.l_type != F_UNLCK)
                pid = (long)q.l_pid;
            if (pid <= 0) {
                char txt[32] = "";
                ssize_t r = pread(fd, txt, sizeof txt - 1, 0);
                if (r > 0)
                    pid = strtol(txt, NULL, 10);
            }
            char who[48] = "another process";
            if (pid > 0)
                snprintf(who, sizeof who, "process %ld", pid);
            loom_error_set(err, LOOM_ERR_IO, path, 0, 0,
                           "%s is in use: %s holds its lock (%s); two campaigns on one directory would measure "
                           "the same candidates twice. Wait for it to finish, or give another --db directory",
                           dir, who, path);
        }
        close(fd);
        free(path);
        return LOOM_ERR_IO;
    }
    char txt[32];
    int len = snprintf(txt, sizeof txt, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0 && pwrite(fd, txt, (size_t)len, 0) != len) {
        /* the pid is for people only; the lock is what counts */
    }
    free(path);
    *fd_out = fd;
    return LOOM_OK;
}

/* Keep `take` more bytes of the line (n kept so far).  0, or -1 (ENOMEM). */
static int keep(loom__lines *L, size_t n, const char *p, size_t take)
{
    if (n + take > L->cap) {
        size_t nc = L->cap ? L->cap : 4096;
        while (nc < n + take)
            nc *= 2;
        char *nb = realloc(L->buf, nc);
        if (!nb)
            return -1;
        L->buf = nb;
        L->cap = nc;
    }
    memcpy(L->buf + n, p, take);
    return 0;
}

loom__line_status loom__lines_next(loom__lines *L, const char **line, size_t *len, int *has_nl)
{
    size_t n = 0, total = 0;
    int skip = 0; /* 0, LOOM__LINE_TOO_LONG or LOOM__LINE_NOMEM */
    *has_nl = 0;
    for (;;) {
        if (L->pos == L->len) {
            L->pos = 0;
            L->len = fread(L->chunk, 1, sizeof L->chunk, L->f);
            if (L->len == 0) {
                if (ferror(L->f))
                    return LOOM__LINE_ERROR;
                if (total == 0)
                    return LOOM__LINE_EOF;
                break; /* a last line without '\n' */
            }
        }
        const char *p = L->chunk + L->pos;
        size_t avail = L->len - L->pos;
        const char *nl = memchr(p, '\n', avail);
        size_t take = nl ? (size_t)(nl - p) + 1 : avail;
        total += take;
        if (!skip) {
            if (total > L->max)
                skip = LOOM__LINE_TOO_LONG;
            else if (keep(L, n, p, take))
                skip = LOOM__LINE_NOMEM;
            else
                n += take;
        }
        L->pos += take;
        if (nl) {
            *has_nl = 1;
            break;
        }
    }
    if (skip) {
        *line = NULL;
        *len = total - (size_t)*has_nl;
        return (loom__line_status)skip;
    }
    *line = L->buf;
    *len = n - (size_t)*has_nl;
    return LOOM__LINE_OK;
}

/* ---- status names ------------------------------------------------------- */

static const struct {
    loom_status st;
    const char *name;
} STATUS_NAMES[] = {
    {LOOM_OK, "ok"},
    {LOOM_ERR_BUILD, "build-error"},
    {LOOM_ERR_RUN, "run-error"},
    {LOOM_ERR_TIMEOUT, "timeout"},
    {LOOM_ERR_WRONG, "wrong"},
    {LOOM_ERR_UNSUPPORTED, "lower-error"}, /* first: what "lower-error" parses to */
    {LOOM_ERR_SEMANTIC, "lower-error"},
    {LOOM_ERR_INVALID, "invalid"},
    {LOOM_ERR_PARSE, "parse-error"},
    {LOOM_ERR_BIND, "bind-error"},
    {LOOM_ERR_DATA, "data-error"},
    {LOOM_ERR_IO, "io-error"},
    {LOOM_ERR_NOMEM, "nomem"},
};
#define NSTATUS (int)(sizeof STATUS_NAMES / sizeof STATUS_NAMES[0])

const char *loom_record_status_name(loom_status s)
{
    for (int i = 0; i < NSTATUS; i++)
        if (STATUS_NAMES[i].st == s)
            return STATUS_NAMES[i].name;
    return "unknown";
}

int loom_record_status_parse(const char *name, loom_status *out)
{
    for (int i = 0; i < NSTATUS; i++)
        if (!strcmp(STATUS_NAMES[i].name, name)) {
            *out = STATUS_NAMES[i].st;
            return 0;
        }
    return -1;
}

/* ---- data fingerprint --------------------------------------------------------- */

uint64_t loom_data_fingerprint(const loom_dataset *ds)
{
    const loom_program *prog = ds->prog;
    uint64_t h = LOOM_FNV_OFFSET;
    for (int s = 0; s < prog->nsizes; s++) {
        h = loom_fnv1a(h, prog->sizes[s].name, strlen(prog->sizes[s].name) + 1);
        int64_t v = prog->sizes[s].value;
        h = loom_fnv1a(h, &v, sizeof v);
    }
    for (int t = 0; t < prog->ntensors && t < ds->ntensors; t++) {
        if (prog->tensors[t].role != LOOM_TENSOR_INPUT)
            continue;
        const loom_tensor_abi *a = &ds->t[t];
        const loom_format *f = &prog->tensors[t].format;
        int32_t hdr[2] = {t, a->order};
        h = loom_fnv1a(h, hdr, sizeof hdr);
        h = loom_tensor_data_hash(h, a, f);
    }
    return h;
}
