/* loom: the tuning database's writer lock and line reader
 * (database_internal.h), its status names and the data fingerprint
 * (database.h). */
#include "database_internal.h"

#include "../../dsl/ir/util.h" /* loom_fnv1a, loom_tensor_data_hash */
#include "../../runtime/measure/build.h"
#include "database.h"

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

/* The pid holding a flock(2) write lock on the inode (dev, ino), from
 * /proc/locks ("1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF"); 0 when
 * unknown (no /proc, another pid namespace).  The device must match when
 * one line does (btrfs subvolumes report another st_dev than the locks
 * table); else the inode alone. */
static long flock_holder(dev_t dev, ino_t ino)
{
    FILE *f = fopen("/proc/locks", "re");
    if (!f)
        return 0;
    char line[256];
    long exact = 0, same_ino = 0;
    while (fgets(line, sizeof line, f)) {
        char type[16], mode[16];
        long pid;
        unsigned maj, min;
        unsigned long long in;
        if (strstr(line, "->") || sscanf(line, "%*d: %15s %*s %15s %ld %x:%x:%llu", type, mode, &pid, &maj, &min,
                                         &in) != 6)
            continue; /* a waiter, or a line of another shape */
        if (strcmp(type, "FLOCK") || strcmp(mode, "WRITE") || in != (unsigned long long)ino || pid <= 0)
            continue;
        if (maj == major(dev) && min == minor(dev))
            exact = pid;
        else
            same_ino = pid;
    }
    fclose(f);
    return exact ? exact : same_ino;
}

/* The lock is taken: "DIR is in use: process P holds its lock ...". */
static loom_status busy(const char *dir, long pid, loom_error *err)
{
    char who[48] = "another process";
    if (pid > 0)
        snprintf(who, sizeof who, "process %ld", pid);
    return loom_error_set(err, LOOM_ERR_IO, dir, 0, 0,
                          "%s is in use: %s holds its lock (a lock on the directory itself, released when that "
                          "process ends); two campaigns on one directory would measure the same candidates twice. "
                          "Wait for it to finish, or give another --db directory",
                          dir, who);
}

loom_status loom__db_lock(const char *dir, int *fd_out, loom_error *err)
{
    *fd_out = -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return loom_error_set(err, LOOM_ERR_IO, dir, 0, 0, "cannot open %s: %s", dir, strerror(errno));
    int rc;
    /* A campaign killed a moment ago may leave its measuring child holding
     * the lock (a forked child shares the open directory, and flock belongs
     * to it); that child dies of PR_SET_PDEATHSIG within milliseconds.  So
     * while the process that took the lock is gone (or unknown), wait up to 5 s. */
    for (int tries = 0;; tries++) {
        while ((rc = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR)
            ;
        if (rc == 0 || errno != EWOULDBLOCK || tries >= 250)
            break;
        struct stat hb;
        long holder = fstat(fd, &hb) == 0 ? flock_holder(hb.st_dev, hb.st_ino) : 0;
        /* /proc/locks shows no pid (0 or -1) once the process that took the
         * lock has died: wait for its children too */
        if (holder > 0 && (kill((pid_t)holder, 0) == 0 || errno != ESRCH)) {
            errno = EWOULDBLOCK;
            break;
        }
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
        errno = EWOULDBLOCK;
    }
    if (rc == 0) {
        *fd_out = fd;
        return LOOM_OK;
    }
    int e = errno;
    struct stat sb;
    long pid = e == EWOULDBLOCK && fstat(fd, &sb) == 0 ? flock_holder(sb.st_dev, sb.st_ino) : 0;
    close(fd);
    if (e == EWOULDBLOCK)
        return busy(dir, pid, err);
    return loom_error_set(err, LOOM_ERR_IO, dir, 0, 0,
                          "cannot lock %s: %s (the file system does not lock directories; give a --db directory "
                          "on a local file system)",
                          dir, strerror(e));
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
