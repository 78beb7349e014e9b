/* loom: small utilities every layer uses (the lowest layer: this header
 * includes only dsl/ir/error.h and the C library, so anything above may use it).
 *
 *   - 64-bit FNV-1a hashing (workload, schedule, data set, build-cache and
 *     target fingerprints);
 *   - a growable string buffer (the JSON writer, the C code generator);
 *   - reading a whole file into memory;
 *   - the shortest %g text of a double that reads back exactly;
 *   - LOOM_TRY, early return on a failed loom_status;
 *   - the monotonic clock.
 */
#ifndef LOOM_UTIL_H
#define LOOM_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

/* ---- FNV-1a ---------------------------------------------------------------
 * 64-bit FNV-1a of n bytes at data, continuing from h (start with
 * LOOM_FNV_OFFSET): for each byte, h ^= byte, h *= 0x100000001b3.  Chains:
 * loom_fnv1a(loom_fnv1a(h, a, na), b, nb) is the hash of a then b.  data may
 * be NULL when n is 0.  Source: Fowler, Noll, Vo; the IETF draft
 * draft-eastlake-fnv (offset basis 0xcbf29ce484222325, prime 2^40 + 2^8 +
 * 0xb3). */
#define LOOM_FNV_OFFSET 0xcbf29ce484222325ULL
#define LOOM_FNV_PRIME 0x100000001b3ULL
uint64_t loom_fnv1a(uint64_t h, const void *data, size_t n);

/* FNV-1a of the bytes of the NUL-terminated string s (not the NUL),
 * continuing from h. */
uint64_t loom_fnv1a_str(uint64_t h, const char *s);

/* FNV-1a of the 8 bytes of v, least significant first (the same on every
 * host), continuing from h. */
uint64_t loom_fnv1a_u64(uint64_t h, uint64_t v);

/* ---- growable string buffer -----------------------------------------------
 * Zero-initialize ({0}) to start; s is NULL until the first append, then
 * always NUL-terminated.  An allocation failure sets oom and makes every
 * later append a no-op (check oom once at the end).  The caller owns s and
 * frees it with free(). */
typedef struct loom_strbuf {
    char *s;      /* the text (NUL-terminated), NULL while empty */
    size_t n;     /* its length, without the NUL */
    size_t cap;   /* bytes allocated at s */
    int oom;      /* 1 once an allocation failed */
} loom_strbuf;

/* Append len bytes of s (which may contain NULs; it is copied). */
void loom_strbuf_put(loom_strbuf *b, const char *s, size_t len);

/* Append the NUL-terminated string s. */
void loom_strbuf_puts(loom_strbuf *b, const char *s);

/* Append printf-formatted text (any length).  A formatting error (vsnprintf
 * < 0) sets oom as well. */
void loom_strbuf_printf(loom_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- reading a whole file --------------------------------------------------
 * Read f (opened by the caller, who also closes it) to its end into a new
 * buffer: on success returns 0, *out (free() it) holds the *len bytes read
 * followed by a NUL (the bytes may contain NULs).  A regular file is read
 * into one allocation of its size; anything else grows by doubling.  On
 * failure *out is NULL and the result is an errno value: ENOMEM, EFBIG
 * (more than max bytes, or a regular file whose size says so, refused before
 * any allocation; max 0 means no limit), or the read error (errno
 * after ferror, EIO when that is 0). */
int loom_read_stream(FILE *f, size_t max, char **out, size_t *len);

/* ---- doubles as text ------------------------------------------------------
 * Write into buf (size n; 32 bytes hold any result) the shortest of d's
 * %.15g, %.16g and %.17g texts that strtod reads back as d (%.17g always
 * does, for a finite d: IEEE 754 binary64 needs at most 17 significant
 * digits).  Non-finite values print as printf's %g does ("inf", "nan").
 * Returns buf. */
char *loom_format_double(char *buf, size_t n, double d);

/* ---- error propagation ----------------------------------------------------
 * Evaluate x (a loom_status expression) once; return it from the enclosing
 * function when it is not LOOM_OK. */
#define LOOM_TRY(x)                \
    do {                           \
        loom_status st_ = (x);     \
        if (st_ != LOOM_OK)        \
            return st_;            \
    } while (0)

/* ---- UTF-8 ------------------------------------------------------------------
 * JSON text is UTF-8 (RFC 8259 section 8.1); cJSON copies the bytes of a
 * string without checking them, and a strict reader (Python's json, after
 * bytes.decode) refuses the whole document for one bad byte (issue 32: a
 * compiler message in Latin-1 made a database unreadable from Python).
 * Well-formed means the Unicode Standard's table 3-7: no overlong forms, no
 * surrogates (U+D800..U+DFFF), nothing above U+10FFFF. */

/* Offset of the first byte of s[0..n) that does not start a well-formed
 * UTF-8 sequence, or n when every sequence is well-formed. */
size_t loom_utf8_check(const char *s, size_t n);

/* Append s[0..n) to b with every ill-formed sequence replaced by U+FFFD
 * (EF BF BD; one per maximal ill-formed subpart, as the Unicode Standard's
 * "U+FFFD substitution of maximal subparts" recommends).  Returns the
 * number of replacements.  Bytes below 0x80 (ASCII, JSON's structure) are
 * kept as they are, so repairing a JSON line keeps its structure. */
size_t loom_utf8_repair(loom_strbuf *b, const char *s, size_t n);

/* ---- time -------------------------------------------------------------------
 * Seconds on the monotonic clock (clock_gettime(CLOCK_MONOTONIC)): only
 * differences mean anything (intervals, deadlines). */
double loom_now_seconds(void);

/* ---- the cache directory ----------------------------------------------------
 * Where loom caches what it computed, with sub appended as a sub-folder
 * (NULL or "": the directory itself): $LOOM_CACHE/sub when LOOM_CACHE is set
 * and not empty, else $HOME/.cache/loom/sub, else /tmp/loom-cache/sub.  The
 * kernel cache (runtime/measure/build.h), the calibrated host
 * ("targets", runtime/target/calibrate.h) and the simulation cache ("sim",
 * search/tune) all live there.  Nothing is created; truncated to n bytes. */
void loom_cache_dir(const char *sub, char *buf, size_t n);

/* mkdir -p: create dir and every missing parent (mode 0777 before the
 * umask).  Returns 0 when dir exists afterwards, else -1 with errno set
 * (ENOMEM included). */
int loom_mkdir_p(const char *dir);

#endif
