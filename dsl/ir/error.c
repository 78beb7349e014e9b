#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

loom_status loom_error_set(loom_error *err, loom_status status, const char *file,
                           int line, int col, const char *fmt, ...)
{
    if (!err)
        return status;
    err->status = status;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    err->line = line;
    err->col = col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return status;
}

void loom_error_clear(loom_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

const char *loom_status_name(loom_status status)
{
    switch (status) {
    case LOOM_OK: return "ok";
    case LOOM_ERR_PARSE: return "parse error";
    case LOOM_ERR_SEMANTIC: return "semantic error";
    case LOOM_ERR_BIND: return "bind error";
    case LOOM_ERR_DATA: return "data error";
    case LOOM_ERR_IO: return "io error";
    case LOOM_ERR_NOMEM: return "out of memory";
    case LOOM_ERR_UNSUPPORTED: return "unsupported";
    case LOOM_ERR_INVALID: return "invalid argument";
    case LOOM_ERR_BUILD: return "build error";
    case LOOM_ERR_RUN: return "run error";
    case LOOM_ERR_TIMEOUT: return "timeout";
    case LOOM_ERR_WRONG: return "wrong result";
    }
    return "unknown error";
}

char *loom_error_format(const loom_error *err, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    if (!err) {
        snprintf(buf, n, "error: (no detail)");
        return buf;
    }
    if (err->file[0] && err->line > 0 && err->col > 0)
        snprintf(buf, n, "%s:%d:%d: error: %s", err->file, err->line, err->col, err->msg);
    else if (err->file[0] && err->line > 0)
        snprintf(buf, n, "%s:%d: error: %s", err->file, err->line, err->msg);
    else if (err->file[0])
        snprintf(buf, n, "%s: error: %s", err->file, err->msg);
    else
        snprintf(buf, n, "error: %s", err->msg);
    return buf;
}
