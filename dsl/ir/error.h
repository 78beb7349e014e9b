/* loom: status codes and the error record every fallible function fills.
 *
 * Convention (DESIGN.md "Conventions"): a function that can fail returns a
 * loom_status and, when it is not LOOM_OK, fills the caller's loom_error with
 * the file, line and column the problem is in (when there is one) and a
 * message that says what was expected or what to do.  Nothing below cli/
 * calls exit() or abort().
 */
#ifndef LOOM_ERROR_H
#define LOOM_ERROR_H

#include <stddef.h>

typedef enum loom_status {
    LOOM_OK = 0,
    LOOM_ERR_PARSE,       /* malformed workload text (syntax) */
    LOOM_ERR_SEMANTIC,    /* well-formed workload without a meaning */
    LOOM_ERR_BIND,        /* sizes or data do not bind to the workload */
    LOOM_ERR_DATA,        /* malformed data file (Matrix Market, ...) */
    LOOM_ERR_IO,          /* a file could not be read or written */
    LOOM_ERR_NOMEM,       /* allocation failed */
    LOOM_ERR_UNSUPPORTED, /* legal, but loom cannot lower it (yet) */
    LOOM_ERR_INVALID,     /* an argument is out of its documented range */
    LOOM_ERR_BUILD,       /* the C compiler rejected generated code */
    LOOM_ERR_RUN,         /* a kernel crashed or returned an error */
    LOOM_ERR_TIMEOUT,     /* a kernel exceeded its time limit */
    LOOM_ERR_WRONG        /* a kernel's output differs from the reference */
} loom_status;

typedef struct loom_error {
    loom_status status;
    char file[256];   /* "" when the error is not about a file */
    int line;         /* 1-based; 0 when unknown */
    int col;          /* 1-based; 0 when unknown */
    char msg[1024];   /* the problem and, where possible, what to do */
} loom_error;

/* Fill `err` (when not NULL) and return `status`.  `file` may be NULL.
 * The message is printf-formatted and truncated to fit. */
loom_status loom_error_set(loom_error *err, loom_status status, const char *file,
                           int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Reset `err` to LOOM_OK with empty fields. */
void loom_error_clear(loom_error *err);

/* Stable lower-case name of a status: "ok", "parse error", "semantic error",
 * "bind error", "data error", "io error", "out of memory", "unsupported",
 * "invalid argument", "build error", "run error", "timeout", "wrong result". */
const char *loom_status_name(loom_status status);

/* Format as "file:line:col: error: msg" (parts that are unknown are left
 * out) into buf of size n; returns buf. */
char *loom_error_format(const loom_error *err, char *buf, size_t n);

#endif
