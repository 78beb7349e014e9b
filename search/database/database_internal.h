/* loom: the tuning database's file handling, private to search/database*.c
 * (see database.h): the campaign directory's writer lock, a line reader
 * with a length cap, and one record <-> one JSON line (database_record.c). */
#ifndef LOOM_DATABASE_INTERNAL_H
#define LOOM_DATABASE_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include "../../dsl/ir/error.h"
#include "database.h"

struct cJSON;

/* Take the writer lock of campaign directory `dir`: flock(2) LOCK_EX on
 * the directory itself, so no file an operator may remove as stale (the
 * old DIR/lock) can let a second campaign in (issue 33).  The kernel drops
 * it when its last descriptor closes: a killed campaign leaves no stale
 * lock.  The descriptor is O_CLOEXEC, so compilers do not hold it;
 * measurement children forked without exec share it, but they die with
 * the campaign (PR_SET_PDEATHSIG, runtime/measure/measure.c).  A flock is
 * per open file description: a second loom_db_open in the same process is
 * refused too, and opening and closing other descriptors of the directory
 * or its files does not release it (an fcntl lock would be released).
 * The holder's pid comes from /proc/locks.
 * On success *fd is the directory's descriptor (close it to unlock).
 * Errors: LOOM_ERR_IO "DIR is in use: process P holds its lock (a lock on
 * the directory itself ...) ..." ("another process" when /proc/locks does
 * not say); "cannot open DIR: ..."; "cannot lock DIR: ... (the file system
 * does not lock directories ...)" (e.g. NFS, where flock is emulated with
 * fcntl locks that need a file open for writing). */
loom_status loom__db_lock(const char *dir, int *fd, loom_error *err);

/* Reads a file line by line, keeping at most `max` bytes of a line in
 * memory (getline would grow its buffer to the whole line, and its failure
 * on a line too long for the memory looks like the end of the file). */
typedef struct loom__lines {
    FILE *f;
    size_t max;          /* longest line kept, '\n' included */
    char *buf;           /* the current line (not NUL-terminated) */
    size_t cap;
    char chunk[65536];   /* read-ahead */
    size_t pos, len;
} loom__lines;

typedef enum {
    LOOM__LINE_EOF = 0,      /* no more bytes */
    LOOM__LINE_OK = 1,       /* *line, *len (without the '\n'), *has_nl */
    LOOM__LINE_TOO_LONG = 2, /* a line over `max` bytes: consumed, *len its length */
    LOOM__LINE_NOMEM = 3,    /* no memory for the line: consumed, *len its length */
    LOOM__LINE_ERROR = -1    /* read error (errno set) */
} loom__line_status;

/* The next line of L->f.  A skipped line (too long, no memory) is still
 * consumed up to its '\n', so the next call starts at the following line. */
loom__line_status loom__lines_next(loom__lines *L, const char **line, size_t *len, int *has_nl);

/* Free a record made by loom__db_record_from_json or copied by the
 * database (every string and the samples); NULL is a no-op. */
void loom__db_record_free(loom_record *r);

/* strdup(s), NULL for NULL; sets *oom = 1 when the copy fails. */
char *loom__db_dup_or_null(const char *s, int *oom);

/* Build a record (malloc'd, loom__db_record_free) from a parsed line of
 * the database file.  0; -1 with why (n bytes: "field 'x': what was
 * expected") when the line is not a valid record; -2 out of memory. */
int loom__db_record_from_json(const struct cJSON *o, loom_record **out, char *why, size_t n);

/* Check rec and serialise it as one line of JSON (no '\n').  *line and
 * *trace_out (the canonical trace text) are malloc'd, the caller's.
 * Errors: LOOM_ERR_INVALID "loom_db_append: ..." (a missing or malformed
 * field -- fingerprints, latency, status, pins, samples -- or a trace_json
 * that is not a trace: the message says which); LOOM_ERR_NOMEM. */
loom_status loom__db_record_to_line(const loom_record *rec, char **line, char **trace_out, loom_error *err);

#endif
