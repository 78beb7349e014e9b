/* loom: the tuning database -- one JSON Lines file per campaign directory
 * (see database.h). */
#include "database.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "../../runtime/measure/build.h"
#include "../../traces/trace.h"
#include "database_internal.h"


struct loom_db {
    char *dir;            /* as given */
    char *path;           /* DIR/records.jsonl */
    int fd;               /* O_RDWR | O_APPEND; -1 when read-only */
    int lockfd;           /* DIR itself, flock'ed (database_internal.h); -1 when read-only */
    loom_record **recs;   /* each malloc'd on its own, so pointers stay valid */
    int n, cap;
    int *set;             /* open addressing: record index + 1, 0 = empty */
    size_t setcap;        /* power of two (0 before the first record) */
    int nlines;           /* '\n' bytes in the file: complete lines */
    int skipped;          /* lines skipped at load */
    int repaired;         /* records kept after their invalid UTF-8 was replaced */
};

/* ---- the hash set of (workload, target, schedule) --------------------------- */

static uint64_t key_hash(uint64_t w, const char *target, uint64_t s)
{
    uint64_t h = loom_fnv1a(LOOM_FNV_OFFSET, &w, sizeof w);
    h = loom_fnv1a(h, &s, sizeof s);
    return loom_fnv1a(h, target, strlen(target));
}

static int key_equal(const loom_record *r, uint64_t w, const char *target, uint64_t s)
{
    return r->workload_hash == w && r->schedule_hash == s && !strcmp(r->target_fp, target);
}

/* Slot of the key, or of the empty slot where it would go. */
static size_t set_find(const loom_db *db, uint64_t w, const char *target, uint64_t s)
{
    size_t mask = db->setcap - 1, i = (size_t)key_hash(w, target, s) & mask;
    while (db->set[i] && !key_equal(db->recs[db->set[i] - 1], w, target, s))
        i = (i + 1) & mask;
    return i;
}

/* Make room for one more key (load factor <= 1/2).  0 or -1 (ENOMEM). */
static int set_reserve(loom_db *db)
{
    if ((size_t)(db->n + 1) * 2 <= db->setcap)
        return 0;
    size_t ncap = db->setcap ? db->setcap * 2 : 64;
    int *old = db->set;
    size_t oldcap = db->setcap;
    db->set = calloc(ncap, sizeof *db->set);
    if (!db->set) {
        db->set = old;
        return -1;
    }
    db->setcap = ncap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i]) {
            const loom_record *r = db->recs[old[i] - 1];
            db->set[set_find(db, r->workload_hash, r->target_fp, r->schedule_hash)] = old[i];
        }
    free(old);
    return 0;
}

/* Take ownership of r as the next record.  0 or -1 (ENOMEM; r not taken). */
static int db_add(loom_db *db, loom_record *r)
{
    if (db->n == db->cap) {
        int ncap = db->cap ? db->cap * 2 : 64;
        loom_record **nr = realloc(db->recs, (size_t)ncap * sizeof *nr);
        if (!nr)
            return -1;
        db->recs = nr;
        db->cap = ncap;
    }
    if (set_reserve(db))
        return -1;
    db->recs[db->n++] = r;
    size_t slot = set_find(db, r->workload_hash, r->target_fp, r->schedule_hash);
    if (!db->set[slot])
        db->set[slot] = db->n;
    return 0;
}

/* ---- open / load ------------------------------------------------------------ */

/* mkdir -p.  0 or -1 (errno set). */
static int mkdir_p(const char *path)
{
    size_t n = strlen(path);
    char *buf = strdup(path);
    if (!buf)
        return -1;
    int rc = 0;
    for (size_t k = 1; k <= n && !rc; k++) {
        if (buf[k] != '/' && buf[k] != 0)
            continue;
        char c = buf[k];
        buf[k] = 0;
        if (mkdir(buf, 0777) && errno != EEXIST)
            rc = -1;
        buf[k] = c;
    }
    free(buf);
    return rc;
}

static void warn_skip(loom_db *db, FILE *warn, int line, const char *why)
{
    db->skipped++;
    if (warn)
        fprintf(warn, "%s:%d: skipped: %s\n", db->path, line, why);
}

static int only_space(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
}

static loom_status parse_line(loom_db *db, FILE *warn, int lineno, const char *buf, size_t n, int has_nl,
                              loom_error *err);

/* Parse one line (n bytes, no '\n') into a record and keep it.  LOOM_OK
 * (kept or skipped with a warning) or LOOM_ERR_NOMEM. */
static loom_status load_line(loom_db *db, FILE *warn, int lineno, const char *buf, size_t n, int has_nl,
                             loom_error *err)
{
    /* ill-formed UTF-8 (a message written by an older loom): replaced by
       U+FFFD, so that every reader of the record can decode it */
    loom_strbuf fixed = {0};
    size_t bad_at = loom_utf8_check(buf, n), nbad = 0;
    if (bad_at < n) {
        nbad = loom_utf8_repair(&fixed, buf, n);
        if (fixed.oom) {
            free(fixed.s);
            return loom_error_set(err, LOOM_ERR_NOMEM, db->path, lineno, 0, "out of memory loading the database");
        }
        buf = fixed.s;
        n = fixed.n;
    }
    loom_status st = parse_line(db, warn, lineno, buf, n, has_nl, err);
    if (!st && nbad && db->n && db->recs[db->n - 1]->line == lineno) {
        db->repaired++;
        if (warn)
            fprintf(warn,
                    "%s:%d: repaired: invalid UTF-8 at byte %zu (%zu ill-formed sequence%s replaced by U+FFFD); "
                    "the record is kept\n",
                    db->path, lineno, bad_at + 1, nbad, nbad == 1 ? "" : "s");
    }
    free(fixed.s);
    return st;
}

/* load_line's parse of a line of valid UTF-8: kept (its line set) or
 * skipped with a warning; LOOM_OK, or LOOM_ERR_NOMEM. */
static loom_status parse_line(loom_db *db, FILE *warn, int lineno, const char *buf, size_t n, int has_nl,
                              loom_error *err)
{
    static const char TORN[] = "torn last line (no newline at the end of the file: the writer was killed mid-record)";
    char why[1400];
    if (only_space(buf, n)) {
        warn_skip(db, warn, lineno, has_nl ? "empty line" : TORN);
        return LOOM_OK;
    }
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(buf, n, &end, 0);
    if (!o || !only_space(end, n - (size_t)(end - buf))) {
        if (!has_nl)
            snprintf(why, sizeof why, "%s", TORN);
        else if (!o)
            snprintf(why, sizeof why, "not valid JSON near byte %zu%s", (size_t)(end ? end - buf : 0) + 1,
                     loom__json_too_deep(buf, n, (size_t)(end ? end - buf : 0))
                         ? ": nested deeper than the JSON reader's limit (cJSON's CJSON_NESTING_LIMIT, 1000 levels)"
                         : "");
        else
            snprintf(why, sizeof why, "not valid JSON: text after the object at byte %zu", (size_t)(end - buf) + 1);
        cJSON_Delete(o);
        warn_skip(db, warn, lineno, why);
        return LOOM_OK;
    }
    loom_record *r;
    int rc = loom__db_record_from_json(o, &r, why, sizeof why);
    cJSON_Delete(o);
    if (rc == -2 || (rc == 0 && db_add(db, r))) {
        if (rc == 0)
            loom__db_record_free(r);
        return loom_error_set(err, LOOM_ERR_NOMEM, db->path, lineno, 0, "out of memory loading the database");
    }
    if (rc) {
        warn_skip(db, warn, lineno, why);
        return LOOM_OK;
    }
    r->line = lineno;
    return LOOM_OK;
}

/* Load every line of db->path.  A line too long to keep (over
 * LOOM_DB_MAX_LINE, or no memory for it) is skipped with a warning naming
 * it, and the lines after it are read: getline's failure on such a line
 * used to end the load there, silently. */
static loom_status db_load(loom_db *db, FILE *warn, loom_error *err)
{
    FILE *f = fopen(db->path, "rb");
    if (!f)
        return loom_error_set(err, LOOM_ERR_IO, db->path, 0, 0, "cannot open %s: %s", db->path, strerror(errno));
    loom__lines *L = calloc(1, sizeof *L);
    if (!L) {
        fclose(f);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory loading the database");
    }
    L->f = f;
    L->max = LOOM_DB_MAX_LINE;
    int lineno = 0;
    loom_status st = LOOM_OK;
    for (;;) {
        const char *buf;
        size_t n;
        int has_nl;
        errno = 0;
        loom__line_status ls = loom__lines_next(L, &buf, &n, &has_nl);
        if (ls == LOOM__LINE_EOF)
            break;
        if (ls == LOOM__LINE_ERROR) {
            st = loom_error_set(err, LOOM_ERR_IO, db->path, lineno + 1, 0,
                                "cannot read %s at line %d: %s (the lines before it were read)", db->path,
                                lineno + 1, strerror(errno ? errno : EIO));
            break;
        }
        lineno++;
        db->nlines += has_nl;
        if (ls != LOOM__LINE_OK) {
            char why[200];
            snprintf(why, sizeof why, "a line of %zu bytes %s; the lines after it are read", n,
                     ls == LOOM__LINE_TOO_LONG ? "is longer than the reader's limit (LOOM_DB_MAX_LINE)"
                                               : "does not fit in memory");
            warn_skip(db, warn, lineno, why);
            continue;
        }
        if ((st = load_line(db, warn, lineno, buf, n, has_nl, err)))
            break;
    }
    free(L->buf);
    free(L);
    fclose(f);
    return st;
}

static loom_status db_open(const char *dir, int readonly, FILE *warn, loom_db **out, loom_error *err)
{
    *out = NULL;
    if (!dir || !*dir)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "loom_db_open: empty directory name");
    struct stat sb;
    if (stat(dir, &sb)) {
        if (errno != ENOENT || readonly)
            return loom_error_set(err, LOOM_ERR_IO, dir, 0, 0, "%s: %s", dir,
                                  errno == ENOENT ? "no such directory" : strerror(errno));
        if (mkdir_p(dir))
            return loom_error_set(err, LOOM_ERR_IO, dir, 0, 0, "cannot create directory %s: %s", dir, strerror(errno));
    } else if (!S_ISDIR(sb.st_mode)) {
        return loom_error_set(err, LOOM_ERR_IO, dir, 0, 0, "%s: not a directory", dir);
    }
    loom_db *db = calloc(1, sizeof *db);
    if (!db)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    db->fd = -1;
    db->lockfd = -1;
    size_t dl = strlen(dir);
    db->dir = strdup(dir);
    db->path = malloc(dl + sizeof "/" LOOM_DB_FILE);
    if (!db->dir || !db->path) {
        loom_db_close(db);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    }
    snprintf(db->path, dl + sizeof "/" LOOM_DB_FILE, "%s/%s", dir, LOOM_DB_FILE);
    if (readonly) {
        if (access(db->path, F_OK)) {
            loom_error_set(err, LOOM_ERR_IO, db->path, 0, 0, "%s has no %s: not a tuning database", dir, LOOM_DB_FILE);
            loom_db_close(db);
            return LOOM_ERR_IO;
        }
    } else {
        loom_status ls = loom__db_lock(dir, &db->lockfd, err);
        if (ls) {
            loom_db_close(db);
            return ls;
        }
        db->fd = open(db->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
        if (db->fd < 0) {
            loom_error_set(err, LOOM_ERR_IO, db->path, 0, 0, "cannot open %s: %s", db->path, strerror(errno));
            loom_db_close(db);
            return LOOM_ERR_IO;
        }
    }
    loom_status st = db_load(db, warn, err);
    if (st) {
        loom_db_close(db);
        return st;
    }
    *out = db;
    return LOOM_OK;
}

loom_status loom_db_open(const char *dir, FILE *warn, loom_db **out, loom_error *err)
{
    return db_open(dir, 0, warn, out, err);
}

loom_status loom_db_open_readonly(const char *dir, FILE *warn, loom_db **out, loom_error *err)
{
    return db_open(dir, 1, warn, out, err);
}

/* ---- append ----------------------------------------------------------------- */

/* A copy of s with its ill-formed UTF-8 replaced by U+FFFD into *out when
 * it has any (else *out NULL).  0, or -1 when out of memory. */
static int utf8_fixed(const char *s, char **out)
{
    *out = NULL;
    size_t n = s ? strlen(s) : 0;
    if (!s || loom_utf8_check(s, n) == n)
        return 0;
    loom_strbuf b = {0};
    loom_utf8_repair(&b, s, n);
    if (b.oom) {
        free(b.s);
        return -1;
    }
    *out = b.s;
    return 0;
}

static loom_status append_record(loom_db *db, const loom_record *rec, loom_error *err);

loom_status loom_db_append(loom_db *db, const loom_record *rec, loom_error *err)
{
    /* the strings that come from outside (a compiler's or a kernel's
       output, a file's text) as well-formed UTF-8: a JSON reader must be
       able to decode every line (issue 32) */
    loom_record clean = *rec;
    char *fix[4];
    const char **field[4] = {(const char **)&clean.message, (const char **)&clean.workload_name,
                             (const char **)&clean.workload_text, (const char **)&clean.target_fp};
    int oom = 0;
    for (int i = 0; i < 4; i++) {
        oom |= utf8_fixed(*field[i], &fix[i]);
        if (fix[i])
            *field[i] = fix[i];
    }
    loom_status st = oom ? loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "loom_db_append: out of memory")
                         : append_record(db, &clean, err);
    for (int i = 0; i < 4; i++)
        free(fix[i]);
    return st;
}

static loom_status append_record(loom_db *db, const loom_record *rec, loom_error *err)
{
    if (db->fd < 0)
        return loom_error_set(err, LOOM_ERR_INVALID, db->path, 0, 0,
                              "loom_db_append: the database was opened read-only");
    char *line, *tj;
    loom_status st = loom__db_record_to_line(rec, &line, &tj, err);
    if (st)
        return st;
    loom_record *copy = calloc(1, sizeof *copy);
    int oom = !copy;
    if (copy) {
        *copy = *rec;
        copy->trace_json = tj;
        tj = NULL;
        copy->workload_name = loom__db_dup_or_null(rec->workload_name, &oom);
        copy->workload_text = loom__db_dup_or_null(rec->workload_text, &oom);
        copy->data_fp = loom__db_dup_or_null(rec->data_fp, &oom);
        copy->target_fp = loom__db_dup_or_null(rec->target_fp, &oom);
        copy->message = loom__db_dup_or_null(rec->message ? rec->message : "", &oom);
        copy->samples = NULL;
        copy->pins_json = rec->pins_json ? loom__db_dup_or_null(rec->pins_json, &oom) : NULL;
        if (rec->nsamples > 0) {
            copy->samples = malloc(sizeof *copy->samples * (size_t)rec->nsamples);
            if (copy->samples)
                memcpy(copy->samples, rec->samples, sizeof *copy->samples * (size_t)rec->nsamples);
            else
                oom = 1;
        }
        if (!rec->nsamples)
            copy->load = NAN;
        if (!isfinite(copy->latency_s))
            copy->latency_s = INFINITY;
    }
    /* a torn last line (killed writer): end it first, in the same write */
    int torn = 0;
    struct stat sb;
    off_t before = -1;
    if (!oom && fstat(db->fd, &sb) == 0) {
        before = sb.st_size;
        char last;
        if (sb.st_size > 0 && pread(db->fd, &last, 1, sb.st_size - 1) == 1 && last != '\n')
            torn = 1;
    }
    size_t ll = strlen(line), total = ll + 1 + (size_t)torn;
    char *buf = oom ? NULL : malloc(total);
    if (!buf) {
        free(line);
        free(tj);
        loom__db_record_free(copy);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "loom_db_append: out of memory");
    }
    if (torn)
        buf[0] = '\n';
    memcpy(buf + torn, line, ll);
    buf[total - 1] = '\n';
    free(line);

    size_t done = 0;
    int e = 0;
    while (done < total) {
        ssize_t w = write(db->fd, buf + done, total - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            e = errno;
            break;
        }
        done += (size_t)w;
    }
    if (!e && fsync(db->fd))
        e = errno;
    if (e) {
        /* a full file system or a file size limit: cut the partial line
         * off again, so that the file holds whole records only */
        int cut = before >= 0 && done > 0 && ftruncate(db->fd, before) == 0;
        if (!cut)
            for (size_t i = 0; i < done; i++)
                db->nlines += buf[i] == '\n';
        free(buf);
        loom__db_record_free(copy);
        return loom_error_set(err, LOOM_ERR_IO, db->path, 0, 0, "cannot write %s: %s%s", db->path, strerror(e),
                              done == 0 || cut ? "" : " (a partial line was left, which the next load skips)");
    }
    for (size_t i = 0; i < done; i++)
        db->nlines += buf[i] == '\n';
    free(buf);
    copy->line = db->nlines;
    if (db_add(db, copy)) {
        loom__db_record_free(copy);
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0,
                              "loom_db_append: out of memory (the record was written to %s)", db->path);
    }
    return LOOM_OK;
}

/* ---- queries -------------------------------------------------------------- */

int loom_db_count(const loom_db *db)
{
    return db->n;
}

const loom_record *loom_db_record(const loom_db *db, int i)
{
    return i >= 0 && i < db->n ? db->recs[i] : NULL;
}

const char *loom_db_dir(const loom_db *db)
{
    return db->dir;
}

int loom_db_skipped(const loom_db *db)
{
    return db->skipped;
}

int loom_db_repaired(const loom_db *db)
{
    return db->repaired;
}

static int cmp_best(const void *pa, const void *pb)
{
    const loom_record *a = *(const loom_record *const *)pa, *b = *(const loom_record *const *)pb;
    int aok = a->status == LOOM_OK, bok = b->status == LOOM_OK;
    if (aok != bok)
        return aok ? -1 : 1;
    double ka = aok ? a->latency_s : a->time, kb = aok ? b->latency_s : b->time;
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

int loom_db_query(const loom_db *db, uint64_t workload_hash, const char *target_fp, const loom_record ***out)
{
    *out = NULL;
    int k = 0;
    for (int i = 0; i < db->n; i++)
        k += db->recs[i]->workload_hash == workload_hash && !strcmp(db->recs[i]->target_fp, target_fp);
    if (!k)
        return 0;
    const loom_record **v = malloc((size_t)k * sizeof *v);
    if (!v)
        return -1;
    k = 0;
    for (int i = 0; i < db->n; i++)
        if (db->recs[i]->workload_hash == workload_hash && !strcmp(db->recs[i]->target_fp, target_fp))
            v[k++] = db->recs[i];
    qsort(v, (size_t)k, sizeof *v, cmp_best);
    *out = v;
    return k;
}

const loom_record *loom_db_best(const loom_db *db, uint64_t workload_hash, const char *target_fp)
{
    const loom_record *best = NULL;
    for (int i = 0; i < db->n; i++) {
        const loom_record *r = db->recs[i];
        if (r->status == LOOM_OK && r->workload_hash == workload_hash && !strcmp(r->target_fp, target_fp) &&
            (!best || r->latency_s < best->latency_s))
            best = r;
    }
    return best;
}

int loom_db_has(const loom_db *db, uint64_t workload_hash, const char *target_fp, uint64_t schedule_hash)
{
    if (!db->setcap)
        return 0;
    return db->set[set_find(db, workload_hash, target_fp, schedule_hash)] != 0;
}

void loom_db_close(loom_db *db)
{
    if (!db)
        return;
    if (db->fd >= 0)
        close(db->fd);
    if (db->lockfd >= 0)
        close(db->lockfd);
    for (int i = 0; i < db->n; i++)
        loom__db_record_free(db->recs[i]);
    free(db->recs);
    free(db->set);
    free(db->dir);
    free(db->path);
    free(db);
}
