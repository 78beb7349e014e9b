/* loom: the tuning database's file handling, private to search/database*.c
 * (see database.h): the campaign directory's writer lock and a line reader
 * with a length cap. */
#ifndef LOOM_DATABASE_INTERNAL_H
#define LOOM_DATABASE_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include "../dsl/error.h"

/* Take the writer lock of campaign directory `dir`: an fcntl(2) write lock
 * on DIR/lock (created if missing), which then holds the owner's pid as
 * text for people.  A POSIX record lock rather than flock(2): the kernel
 * drops it when the process dies (a killed campaign leaves no stale lock),
 * and forked children (measurements, compilers) do not inherit it, so a
 * measurement child that outlives a killed campaign does not keep the
 * directory locked.  Within one process the lock does not exclude a second
 * loom_db_open, and closing any descriptor of DIR/lock releases it.
 * On success *fd is the lock file's descriptor (close it to unlock).
 * Errors: LOOM_ERR_IO "DIR is in use: campaign pid P holds its lock
 * (DIR/lock) ..." when another process holds it; "cannot open DIR/lock: ..."
 * or "cannot lock DIR/lock: ..." otherwise. */
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

#endif
