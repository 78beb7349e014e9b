/* Small shared utilities (util.h). */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

uint64_t loom_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= LOOM_FNV_PRIME;
    }
    return h;
}

uint64_t loom_fnv1a_str(uint64_t h, const char *s)
{
    return loom_fnv1a(h, s, strlen(s));
}

uint64_t loom_fnv1a_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int k = 0; k < 8; k++)
        b[k] = (unsigned char)(v >> (8 * k));
    return loom_fnv1a(h, b, sizeof b);
}

/* Make room for `more` bytes plus the NUL; 0 on success. */
static int reserve(loom_strbuf *b, size_t more)
{
    if (b->oom)
        return -1;
    if (b->n + more + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

void loom_strbuf_put(loom_strbuf *b, const char *s, size_t len)
{
    if (reserve(b, len))
        return;
    memcpy(b->s + b->n, s, len);
    b->n += len;
    b->s[b->n] = '\0';
}

void loom_strbuf_puts(loom_strbuf *b, const char *s)
{
    loom_strbuf_put(b, s, strlen(s));
}

void loom_strbuf_printf(loom_strbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
        b->oom = 1;
        return;
    }
    if (b->s && b->n + (size_t)k < b->cap) {
        b->n += (size_t)k;
        return;
    }
    if (reserve(b, (size_t)k))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

int loom_read_stream(FILE *f, size_t max, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    size_t cap = 4096, n = 0;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        /* a regular file over the cap is refused from its size, before any
         * allocation (a 3 GB file under a capped address space must say
         * EFBIG, not ENOMEM) */
        if (max && (uintmax_t)st.st_size > (uintmax_t)max)
            return EFBIG;
        cap = (size_t)st.st_size + 1; /* one read, and one more to see the end */
    }
    char *buf = malloc(cap);
    if (!buf)
        return ENOMEM;
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                return ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - 1 - n, f);
        n += k;
        if (max && n > max) {
            free(buf);
            return EFBIG;
        }
        if (k == 0)
            break;
    }
    if (ferror(f)) {
        int e = errno ? errno : EIO;
        free(buf);
        return e;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

char *loom_format_double(char *buf, size_t n, double d)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    return buf;
}

double loom_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void loom_cache_dir(const char *sub, char *buf, size_t n)
{
    const char *e = getenv("LOOM_CACHE"), *home = getenv("HOME");
    const char *sep = sub && *sub ? "/" : "";
    sub = sub ? sub : "";
    if (e && *e)
        snprintf(buf, n, "%s%s%s", e, sep, sub);
    else if (home && *home)
        snprintf(buf, n, "%s/.cache/loom%s%s", home, sep, sub);
    else
        snprintf(buf, n, "/tmp/loom-cache%s%s", sep, sub);
}

/* ---- UTF-8 ------------------------------------------------------------------ */

/* Length of the well-formed sequence at s[0..n), or 0; *sub: the length of
 * its maximal ill-formed subpart (>= 1) when it is not well-formed. */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *sub)
{
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* the second byte's range (table 3-7) */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        *sub = 1;
        return 0;
    }
    size_t k = 1;
    for (; k < len && k < n; k++) {
        unsigned b = s[k];
        if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
            break;
    }
    if (k == len)
        return len;
    *sub = k;
    return 0;
}

size_t loom_utf8_check(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, sub;
    while (i < n) {
        size_t len = utf8_seq(u + i, n - i, &sub);
        if (!len)
            return i;
        i += len;
    }
    return n;
}

size_t loom_utf8_repair(loom_strbuf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, start = 0, bad = 0, sub;
    while (i < n) {
        size_t len = utf8_seq(u + i, n - i, &sub);
        if (len) {
            i += len;
            continue;
        }
        loom_strbuf_put(b, s + start, i - start);
        loom_strbuf_put(b, "\xEF\xBF\xBD", 3);
        bad++;
        i += sub;
        start = i;
    }
    loom_strbuf_put(b, s + start, n - start);
    return bad;
}

int loom_mkdir_p(const char *dir)
{
    char *p = strdup(dir ? dir : "");
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    for (char *s = p + 1; *s && !rc; s++)
        if (*s == '/') {
            *s = 0;
            rc = mkdir(p, 0777) && errno != EEXIST ? -1 : 0;
            *s = '/';
        }
    if (!rc && *p)
        rc = mkdir(p, 0777) && errno != EEXIST ? -1 : 0;
    int e = errno;
    free(p);
    errno = e;
    return rc;
}
