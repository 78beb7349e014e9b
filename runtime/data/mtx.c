/* loom: Matrix Market reader (coordinate format).
 *
 * The whole file is read into one buffer (at most loom_mtx_max_bytes()) and
 * parsed line by line in place by loom_mtx_parse (each '\n' becomes a NUL,
 * so strtoll/strtod never cross a line); entries
 * are collected as 64-bit (row, col) keys, radix-sorted when they are not
 * already in order, and duplicates summed.
 */
#include "dataset.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

typedef struct mtx_entry {
    uint64_t key; /* (row << 32) | col, 0-based */
    double val;
} mtx_entry;

typedef struct mtx_cursor {
    char *p, *end;
    int line; /* number of the line last returned */
} mtx_cursor;

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static char *skip_ws(char *s)
{
    while (is_ws(*s))
        s++;
    return s;
}

/* Next line, NUL-terminated in place, or NULL at the end of the buffer. */
static char *next_line(mtx_cursor *c)
{
    if (c->p >= c->end)
        return NULL;
    char *s = c->p;
    char *nl = memchr(s, '\n', (size_t)(c->end - s));
    if (nl) {
        *nl = '\0';
        c->p = nl + 1;
    } else {
        c->p = c->end; /* the buffer has a NUL at end */
    }
    c->line++;
    return s;
}

static int is_blank(const char *s)
{
    while (is_ws(*s))
        s++;
    return *s == '\0';
}

/* Parse one integer token at *s (leading blanks skipped); the token must end
 * at a blank or the end of the line.  Returns 1 and advances *s on success. */
static int parse_i64(char **s, int64_t *v)
{
    char *p = skip_ws(*s);
    if (*p == '\0')
        return 0;
    char *e;
    errno = 0;
    long long x = strtoll(p, &e, 10);
    if (e == p || errno == ERANGE || (*e != '\0' && !is_ws(*e)))
        return 0;
    *v = x;
    *s = e;
    return 1;
}

/* Copy the token starting at s (up to 40 chars) into buf for messages. */
static const char *token_text(const char *s, char *buf, size_t n)
{
    size_t i = 0;
    while (s[i] && !is_ws(s[i]) && i + 1 < n && i < 40) {
        buf[i] = s[i];
        i++;
    }
    buf[i] = '\0';
    return buf;
}

/* Read the whole file into a NUL-terminated buffer.  Refuses, before reading
 * it, a file larger than LOOM_MTX_MAX_BYTES, and stops after the first block
 * when the file does not start with the Matrix Market banner (so a large
 * file of something else is not read whole just to be refused). */
/* The cap on a Matrix Market file's size: LOOM_MTX_MAX_BYTES, or the
 * environment variable of that name when it holds a positive integer. */
uint64_t loom_mtx_max_bytes(void)
{
    const char *e = getenv("LOOM_MTX_MAX_BYTES");
    if (e && *e) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(e, &end, 10);
        if (!errno && *end == '\0' && v > 0 && e[0] != '-')
            return v;
    }
    return LOOM_MTX_MAX_BYTES;
}

static loom_status read_file(const char *path, char **buf_out, size_t *len_out, loom_error *err)
{
    const uint64_t max_bytes = loom_mtx_max_bytes();
    FILE *f = fopen(path, "rb");
    if (!f)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot open %s: %s", path,
                              strerror(errno));
    size_t cap = 1 << 16;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        if ((uint64_t)st.st_size > max_bytes) {
            fclose(f);
            return loom_error_set(err, LOOM_ERR_DATA, path, 0, 0,
                                  "%s is %lld bytes, more than the %llu-byte limit on Matrix "
                                  "Market files (LOOM_MTX_MAX_BYTES: int32 positions cap a "
                                  "matrix at 2^31 entries); split or sample the matrix",
                                  path, (long long)st.st_size,
                                  (unsigned long long)max_bytes);
        }
        cap = (size_t)st.st_size + 1;
    }
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0,
                              "cannot allocate %zu bytes to read %s", cap, path);
    }
    size_t len = 0;
    int checked = 0;
    loom_status rc = LOOM_OK;
    for (;;) {
        if (len + 1 >= cap) {
            size_t ncap = cap * 2;
            if (cap > max_bytes) { /* a pipe or a file that grew */
                rc = loom_error_set(err, LOOM_ERR_DATA, path, 0, 0,
                                    "%s holds more than the %llu-byte limit on Matrix Market "
                                    "files (LOOM_MTX_MAX_BYTES)", path,
                                    (unsigned long long)max_bytes);
                break;
            }
            char *nb = realloc(buf, ncap);
            if (!nb) {
                rc = loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0,
                                    "cannot allocate %zu bytes to read %s", ncap, path);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        size_t want = cap - 1 - len;
        if (!checked && want > 4096)
            want = 4096; /* the first block alone, to check the banner */
        size_t n = fread(buf + len, 1, want, f);
        len += n;
        if (!checked && (len >= 14 || n == 0)) {
            checked = 1;
            if (len >= 14 && strncasecmp(buf, "%%MatrixMarket", 14) != 0)
                break; /* loom_mtx_parse says what is wrong with line 1 */
        }
        if (n == 0) {
            if (ferror(f)) {
                int e = errno;
                rc = loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot read %s: %s", path,
                                    strerror(e ? e : EIO));
            }
            break;
        }
    }
    fclose(f);
    if (rc != LOOM_OK) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *buf_out = buf;
    *len_out = len;
    return LOOM_OK;
}

/* LSD radix sort on the key, skipping bytes that are the same in all keys. */
static int radix_sort(mtx_entry *a, size_t n)
{
    mtx_entry *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp)
        return -1;
    mtx_entry *src = a, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        size_t count[256] = {0};
        for (size_t i = 0; i < n; i++)
            count[(src[i].key >> shift) & 0xff]++;
        if (count[(src[0].key >> shift) & 0xff] == n)
            continue; /* every key has this byte: the pass would not move anything */
        size_t sum = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i].key >> shift) & 0xff]++] = src[i];
        mtx_entry *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    free(tmp);
    return 0;
}

static const char *banner_usage =
    "expected '%%MatrixMarket matrix coordinate <real|integer|pattern> <general|symmetric>'";

static loom_status parse_banner(const char *path, char *line, int *is_pattern, int *is_symmetric,
                                loom_error *err)
{
    if (strncasecmp(line, "%%MatrixMarket", 14) != 0)
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0,
                              "missing Matrix Market banner: the first line must be "
                              "'%%%%MatrixMarket matrix coordinate <real|integer|pattern> "
                              "<general|symmetric>'");
    char *s = line + 14;
    if (*s != '\0' && !is_ws(*s))
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0, "bad banner '%.80s': %s", line,
                              banner_usage);
    char *tok[5];
    int ntok = 0;
    for (;;) {
        s = skip_ws(s);
        if (*s == '\0')
            break;
        if (ntok == 5)
            break;
        tok[ntok++] = s;
        while (*s && !is_ws(*s))
            s++;
        if (*s)
            *s++ = '\0';
    }
    if (ntok != 4)
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0,
                              "bad banner: %d words after %%%%MatrixMarket, %s",
                              ntok, banner_usage);
    if (strcasecmp(tok[0], "matrix") != 0)
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0,
                              "bad banner: object '%s' is not supported, %s", tok[0],
                              banner_usage);
    if (strcasecmp(tok[1], "array") == 0)
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0,
                              "the array (dense) format is not supported: only the coordinate "
                              "format is read; convert the file to coordinate format");
    if (strcasecmp(tok[1], "coordinate") != 0)
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0,
                              "bad banner: unknown format '%s', %s", tok[1], banner_usage);
    if (strcasecmp(tok[2], "complex") == 0)
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0,
                              "complex matrices are not supported (fields: real, integer, "
                              "pattern)");
    if (strcasecmp(tok[2], "pattern") == 0)
        *is_pattern = 1;
    else if (strcasecmp(tok[2], "real") == 0 || strcasecmp(tok[2], "integer") == 0 ||
             strcasecmp(tok[2], "double") == 0)
        *is_pattern = 0;
    else
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0,
                              "bad banner: unknown field '%s', %s", tok[2], banner_usage);
    if (strcasecmp(tok[3], "general") == 0)
        *is_symmetric = 0;
    else if (strcasecmp(tok[3], "symmetric") == 0)
        *is_symmetric = 1;
    else if (strcasecmp(tok[3], "skew-symmetric") == 0 || strcasecmp(tok[3], "hermitian") == 0)
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0,
                              "%s matrices are not supported: only general and symmetric",
                              tok[3]);
    else
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0,
                              "bad banner: unknown symmetry '%s', %s", tok[3], banner_usage);
    return LOOM_OK;
}

static loom_status parse_index(const char *path, int line, char **s, const char *what,
                               int64_t bound, int is_pattern, int64_t *out, loom_error *err)
{
    char *p = skip_ws(*s);
    if (!parse_i64(s, out)) {
        char tb[48];
        if (*p == '\0')
            return loom_error_set(err, LOOM_ERR_DATA, path, line, 0,
                                  "entry line ends before the %s index: expected %s", what,
                                  is_pattern ? "'row col'" : "'row col value'");
        return loom_error_set(err, LOOM_ERR_DATA, path, line, 0,
                              "bad %s index '%s': expected an integer (%s)", what,
                              token_text(p, tb, sizeof tb),
                              is_pattern ? "'row col'" : "'row col value'");
    }
    if (*out < 1 || *out > bound)
        return loom_error_set(err, LOOM_ERR_DATA, path, line, 0,
                              "%s index %lld out of range 1..%lld", what, (long long)*out,
                              (long long)bound);
    return LOOM_OK;
}

/* What the header (banner and size line) says. */
typedef struct mtx_header {
    int is_pattern, is_symmetric;
    int size_line; /* its line number */
    int64_t nrows, ncols, nnz;
} mtx_header;

/* Next line that is neither a comment nor blank, or NULL at the end. */
static char *next_content_line(mtx_cursor *c)
{
    char *line;
    do {
        line = next_line(c);
    } while (line && (line[0] == '%' || is_blank(line)));
    return line;
}

/* Banner, comments, size line; checks the sizes against int32 positions and
 * nnz against the bytes left in the file. */
static loom_status parse_header(const char *path, mtx_cursor *c, mtx_header *h, loom_error *err)
{
    char *line = next_line(c);
    if (!line || (c->p >= c->end && is_blank(line)))
        return loom_error_set(err, LOOM_ERR_DATA, path, 1, 0, "empty file: %s", banner_usage);
    loom_status st = parse_banner(path, line, &h->is_pattern, &h->is_symmetric, err);
    if (st != LOOM_OK)
        return st;
    line = next_content_line(c);
    if (!line)
        return loom_error_set(err, LOOM_ERR_DATA, path, c->line + 1, 0,
                              "file ends before the size line 'rows cols nnz'");
    h->size_line = c->line;
    char *s = line;
    if (!parse_i64(&s, &h->nrows) || !parse_i64(&s, &h->ncols) || !parse_i64(&s, &h->nnz) ||
        !is_blank(s))
        return loom_error_set(err, LOOM_ERR_DATA, path, c->line, 0,
                              "bad size line '%.80s': expected 'rows cols nnz' "
                              "(three integers)", line);
    long long nr = h->nrows, nc = h->ncols, nnz = h->nnz;
    if (nr <= 0 || nc <= 0 || nnz < 0)
        return loom_error_set(err, LOOM_ERR_DATA, path, c->line, 0,
                              "bad size line: rows %lld, cols %lld, nnz %lld; rows and cols "
                              "must be positive and nnz must not be negative", nr, nc, nnz);
    if (nr > INT32_MAX || nc > INT32_MAX || nnz > INT32_MAX)
        return loom_error_set(err, LOOM_ERR_DATA, path, c->line, 0,
                              "size %lld x %lld with %lld entries does not fit int32 "
                              "coordinates and positions (the kernel ABI's limit: at most "
                              "%d rows, columns and entries)", nr, nc, nnz, INT32_MAX);
    if (h->is_symmetric && nr != nc)
        return loom_error_set(err, LOOM_ERR_DATA, path, c->line, 0,
                              "a symmetric matrix must be square, not %lld x %lld", nr, nc);
    /* every entry takes at least 4 bytes ("1 1\n"; 3 for the last one) */
    size_t left = (size_t)(c->end - c->p);
    if ((uint64_t)nnz > (left + 1) / 4)
        return loom_error_set(err, LOOM_ERR_DATA, path, c->line, 0,
                              "the size line declares %lld entries, but only %zu bytes follow "
                              "it: an entry takes at least 4 bytes, so the file holds at most "
                              "%zu (a wrong size line or a truncated file)", nnz, left,
                              (left + 1) / 4);
    return LOOM_OK;
}

/* The value token of a real/integer entry at *s. */
static loom_status parse_value(const char *path, int line, char **s, double *v, loom_error *err)
{
    char *p = skip_ws(*s);
    if (*p == '\0')
        return loom_error_set(err, LOOM_ERR_DATA, path, line, 0,
                              "missing value: expected 'row col value'");
    char *e;
    *v = strtod(p, &e);
    char tb[48];
    if (e == p || (*e != '\0' && !is_ws(*e)))
        return loom_error_set(err, LOOM_ERR_DATA, path, line, 0,
                              "non-numeric value '%s': expected 'row col value'",
                              token_text(p, tb, sizeof tb));
    if (!isfinite(*v) || fabs(*v) > FLT_MAX)
        return loom_error_set(err, LOOM_ERR_DATA, path, line, 0,
                              "value '%s' is not a finite single-precision number",
                              token_text(p, tb, sizeof tb));
    *s = e;
    return LOOM_OK;
}

/* One entry line into *e; *offdiag says whether a symmetric file's entry
 * has a mirror. */
static loom_status parse_entry(const char *path, const mtx_header *h, int line, char *s,
                               mtx_entry *e, int *offdiag, loom_error *err)
{
    int64_t r, col;
    loom_status st = parse_index(path, line, &s, "row", h->nrows, h->is_pattern, &r, err);
    if (st == LOOM_OK)
        st = parse_index(path, line, &s, "column", h->ncols, h->is_pattern, &col, err);
    if (st != LOOM_OK)
        return st;
    double v = 1.0;
    if (!h->is_pattern && (st = parse_value(path, line, &s, &v, err)) != LOOM_OK)
        return st;
    s = skip_ws(s);
    if (*s != '\0') {
        char tb[48];
        return loom_error_set(err, LOOM_ERR_DATA, path, line, 0,
                              "unexpected text '%s' after the entry: expected %s",
                              token_text(s, tb, sizeof tb),
                              h->is_pattern ? "'row col' (pattern file)" : "'row col value'");
    }
    if (h->is_symmetric && col > r)
        return loom_error_set(err, LOOM_ERR_DATA, path, line, 0,
                              "entry (%lld, %lld) is above the diagonal: a symmetric file "
                              "stores only the lower triangle (row >= col)",
                              (long long)r, (long long)col);
    e->key = ((uint64_t)(r - 1) << 32) | (uint64_t)(col - 1);
    e->val = v;
    *offdiag = h->is_symmetric && r != col;
    return LOOM_OK;
}

/* The h->nnz entry lines, then nothing but comments and blanks.  *ents gets
 * h->nnz entries (malloc'd), *noff the number of mirrored ones. */
static loom_status parse_entries(const char *path, mtx_cursor *c, const mtx_header *h,
                                 mtx_entry **ents_out, size_t *noff_out, loom_error *err)
{
    /* parse_header bounded nnz by the bytes in the file */
    mtx_entry *ents = malloc((h->nnz ? (size_t)h->nnz : 1) * sizeof *ents);
    if (!ents)
        return loom_error_set(err, LOOM_ERR_NOMEM, path, h->size_line, 0,
                              "cannot allocate %lld entries", (long long)h->nnz);
    size_t noff = 0;
    loom_status st = LOOM_OK;
    for (int64_t k = 0; k < h->nnz; k++) {
        char *line = next_content_line(c);
        if (!line) {
            st = loom_error_set(err, LOOM_ERR_DATA, path, c->line + 1, 0,
                                "file ends after %lld of %lld entries", (long long)k,
                                (long long)h->nnz);
            break;
        }
        int off = 0;
        st = parse_entry(path, h, c->line, line, &ents[k], &off, err);
        if (st != LOOM_OK)
            break;
        noff += (size_t)off;
    }
    if (st == LOOM_OK && next_content_line(c) != NULL)
        st = loom_error_set(err, LOOM_ERR_DATA, path, c->line, 0,
                            "too many entries: the size line (line %d) declares %lld, "
                            "but the file holds more",
                            h->size_line, (long long)h->nnz);
    if (st != LOOM_OK) {
        free(ents);
        return st;
    }
    *ents_out = ents;
    *noff_out = noff;
    return LOOM_OK;
}

/* Append the mirror of every off-diagonal entry of a symmetric file. */
static loom_status expand_symmetric(const char *path, const mtx_header *h, mtx_entry **ents,
                                    size_t *n, size_t noff, loom_error *err)
{
    size_t total = *n + noff;
    if (total > (size_t)INT32_MAX)
        return loom_error_set(err, LOOM_ERR_DATA, path, h->size_line, 0,
                              "%zu entries after expanding the symmetric half: more than "
                              "int32 positions allow", total);
    mtx_entry *ne = realloc(*ents, total * sizeof *ne);
    if (!ne)
        return loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0, "cannot allocate %zu entries",
                              total);
    size_t m = *n;
    for (size_t i = 0; i < *n; i++) {
        uint64_t r = ne[i].key >> 32, col = ne[i].key & 0xffffffffu;
        if (r != col) {
            ne[m].key = (col << 32) | r;
            ne[m].val = ne[i].val;
            m++;
        }
    }
    *ents = ne;
    *n = total;
    return LOOM_OK;
}

/* Sort by (row, col), sum duplicates, and fill out's arrays. */
static loom_status sort_into_coo(const char *path, mtx_entry *ents, size_t n, loom_coo *out,
                                 loom_error *err)
{
    int sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        if (ents[i].key < ents[i - 1].key)
            sorted = 0;
    if (!sorted && radix_sort(ents, n) != 0)
        return loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0, "cannot allocate %zu entries", n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && ents[m - 1].key == ents[i].key)
            ents[m - 1].val += ents[i].val;
        else
            ents[m++] = ents[i];
    }
    out->row = malloc((m ? m : 1) * sizeof(int32_t));
    out->col = malloc((m ? m : 1) * sizeof(int32_t));
    out->val = malloc((m ? m : 1) * sizeof(float));
    if (!out->row || !out->col || !out->val) {
        loom_coo_free(out);
        return loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0, "cannot allocate %zu entries", m);
    }
    for (size_t i = 0; i < m; i++) {
        out->row[i] = (int32_t)(ents[i].key >> 32);
        out->col[i] = (int32_t)(ents[i].key & 0xffffffffu);
        out->val[i] = (float)ents[i].val;
    }
    out->nnz = (int64_t)m;
    return LOOM_OK;
}

loom_status loom_mtx_parse(const char *name, char *buf, size_t len, loom_coo *out,
                           loom_error *err)
{
    if (!out || !buf)
        return loom_error_set(err, LOOM_ERR_INVALID, name, 0, 0,
                              "loom_mtx_parse: NULL argument");
    memset(out, 0, sizeof *out);
    const char *nul = memchr(buf, '\0', len);
    if (nul) {
        int line = 1;
        for (const char *q = buf; q < nul; q++)
            line += *q == '\n';
        return loom_error_set(err, LOOM_ERR_DATA, name, line, 0,
                              "byte %zu is a NUL: not a Matrix Market text file",
                              (size_t)(nul - buf) + 1);
    }
    mtx_cursor c = {buf, buf + len, 0};
    mtx_header h = {0};
    mtx_entry *ents = NULL;
    size_t noff = 0;
    loom_status st = parse_header(name, &c, &h, err);
    if (st == LOOM_OK)
        st = parse_entries(name, &c, &h, &ents, &noff, err);
    if (st != LOOM_OK)
        return st;
    size_t n = (size_t)h.nnz;
    if (noff > 0)
        st = expand_symmetric(name, &h, &ents, &n, noff, err);
    if (st == LOOM_OK)
        st = sort_into_coo(name, ents, n, out, err);
    free(ents);
    if (st != LOOM_OK)
        return st;
    out->nrows = h.nrows;
    out->ncols = h.ncols;
    out->is_pattern = h.is_pattern;
    out->is_symmetric = h.is_symmetric;
    return LOOM_OK;
}

loom_status loom_mtx_read(const char *path, loom_coo *out, loom_error *err)
{
    if (!out || !path)
        return loom_error_set(err, LOOM_ERR_INVALID, path, 0, 0,
                              "loom_mtx_read: NULL argument");
    memset(out, 0, sizeof *out);
    char *buf = NULL;
    size_t len = 0;
    loom_status st = read_file(path, &buf, &len, err);
    if (st != LOOM_OK)
        return st;
    st = loom_mtx_parse(path, buf, len, out, err);
    free(buf);
    return st;
}

void loom_coo_free(loom_coo *coo)
{
    if (!coo)
        return;
    free(coo->row);
    free(coo->col);
    free(coo->val);
    memset(coo, 0, sizeof *coo);
}
