/* loom: Matrix Market reader (coordinate format).
 *
 * The whole file is read into one buffer and parsed line by line in place
 * (each '\n' becomes a NUL, so strtoll/strtod never cross a line); entries
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

static loom_status read_file(const char *path, char **buf_out, size_t *len_out, loom_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot open %s: %s", path,
                              strerror(errno));
    size_t cap = 1 << 20;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0,
                              "cannot allocate %zu bytes to read %s", cap, path);
    }
    size_t len = 0;
    for (;;) {
        if (len + 1 >= cap) {
            size_t ncap = cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                return loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0,
                                      "cannot allocate %zu bytes to read %s", ncap, path);
            }
            buf = nb;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - 1 - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                int e = errno;
                free(buf);
                fclose(f);
                return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "cannot read %s: %s", path,
                                      strerror(e ? e : EIO));
            }
            break;
        }
    }
    fclose(f);
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
    "expected '%%%%MatrixMarket matrix coordinate <real|integer|pattern> <general|symmetric>'";

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

    mtx_entry *ents = NULL;
    mtx_cursor c = {buf, buf + len, 0};
    char *line = next_line(&c);
    if (!line || (c.p >= c.end && is_blank(line))) {
        st = loom_error_set(err, LOOM_ERR_DATA, path, 1, 0,
                            "empty file: %s", banner_usage);
        goto fail;
    }
    int is_pattern = 0, is_symmetric = 0;
    st = parse_banner(path, line, &is_pattern, &is_symmetric, err);
    if (st != LOOM_OK)
        goto fail;

    /* size line, after comments and blank lines */
    do {
        line = next_line(&c);
    } while (line && (line[0] == '%' || is_blank(line)));
    if (!line) {
        st = loom_error_set(err, LOOM_ERR_DATA, path, c.line + 1, 0,
                            "file ends before the size line 'rows cols nnz'");
        goto fail;
    }
    int size_line = c.line;
    int64_t nrows, ncols, nnz;
    {
        char *s = line;
        if (!parse_i64(&s, &nrows) || !parse_i64(&s, &ncols) || !parse_i64(&s, &nnz) ||
            !is_blank(s)) {
            st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0,
                                "bad size line '%.80s': expected 'rows cols nnz' "
                                "(three integers)", line);
            goto fail;
        }
    }
    if (nrows <= 0 || ncols <= 0 || nnz < 0) {
        st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0,
                            "bad size line: rows %lld, cols %lld, nnz %lld; rows and cols "
                            "must be positive and nnz must not be negative",
                            (long long)nrows, (long long)ncols, (long long)nnz);
        goto fail;
    }
    if (nrows > INT32_MAX || ncols > INT32_MAX || nnz > INT32_MAX) {
        st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0,
                            "size %lld x %lld with %lld entries does not fit int32 "
                            "coordinates and positions", (long long)nrows, (long long)ncols,
                            (long long)nnz);
        goto fail;
    }
    if (is_symmetric && nrows != ncols) {
        st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0,
                            "a symmetric matrix must be square, not %lld x %lld",
                            (long long)nrows, (long long)ncols);
        goto fail;
    }

    /* every entry line takes at least 4 bytes ("1 1\n"), which bounds the
     * allocation for a size line that overstates nnz */
    size_t cap = (size_t)nnz;
    if (cap > len / 4 + 1)
        cap = len / 4 + 1;
    ents = malloc((cap ? cap : 1) * sizeof *ents);
    if (!ents) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, path, size_line, 0,
                            "cannot allocate %lld entries", (long long)nnz);
        goto fail;
    }
    size_t n = 0, noff = 0;
    for (int64_t k = 0; k < nnz; k++) {
        do {
            line = next_line(&c);
        } while (line && (line[0] == '%' || is_blank(line)));
        if (!line) {
            st = loom_error_set(err, LOOM_ERR_DATA, path, c.line + 1, 0,
                                "file ends after %lld of %lld entries", (long long)k,
                                (long long)nnz);
            goto fail;
        }
        char *s = line;
        int64_t r, col;
        st = parse_index(path, c.line, &s, "row", nrows, is_pattern, &r, err);
        if (st != LOOM_OK)
            goto fail;
        st = parse_index(path, c.line, &s, "column", ncols, is_pattern, &col, err);
        if (st != LOOM_OK)
            goto fail;
        double v = 1.0;
        if (!is_pattern) {
            char *p = skip_ws(s);
            if (*p == '\0') {
                st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0,
                                    "missing value: expected 'row col value'");
                goto fail;
            }
            char *e;
            v = strtod(p, &e);
            char tb[48];
            if (e == p || (*e != '\0' && !is_ws(*e))) {
                st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0,
                                    "non-numeric value '%s': expected 'row col value'",
                                    token_text(p, tb, sizeof tb));
                goto fail;
            }
            if (!isfinite(v) || fabs(v) > FLT_MAX) {
                st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0,
                                    "value '%s' is not a finite single-precision number",
                                    token_text(p, tb, sizeof tb));
                goto fail;
            }
            s = e;
        }
        s = skip_ws(s);
        if (*s != '\0') {
            char tb[48];
            st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0,
                                "unexpected text '%s' after the entry: expected %s",
                                token_text(s, tb, sizeof tb),
                                is_pattern ? "'row col' (pattern file)" : "'row col value'");
            goto fail;
        }
        if (is_symmetric && col > r) {
            st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0,
                                "entry (%lld, %lld) is above the diagonal: a symmetric file "
                                "stores only the lower triangle (row >= col)",
                                (long long)r, (long long)col);
            goto fail;
        }
        if (n == cap) { /* cannot happen given the 4-byte bound; stay safe */
            st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0, "too many entries");
            goto fail;
        }
        ents[n].key = ((uint64_t)(r - 1) << 32) | (uint64_t)(col - 1);
        ents[n].val = v;
        n++;
        if (is_symmetric && r != col)
            noff++;
    }
    while ((line = next_line(&c)) != NULL) {
        if (line[0] == '%' || is_blank(line))
            continue;
        st = loom_error_set(err, LOOM_ERR_DATA, path, c.line, 0,
                            "too many entries: the size line (line %d) declares %lld, "
                            "but the file holds more",
                            size_line, (long long)nnz);
        goto fail;
    }
    free(buf);
    buf = NULL;

    if (is_symmetric && noff > 0) {
        size_t total = n + noff;
        if (total > (size_t)INT32_MAX) {
            st = loom_error_set(err, LOOM_ERR_DATA, path, size_line, 0,
                                "%zu entries after expanding the symmetric half: more than "
                                "int32 positions allow", total);
            goto fail;
        }
        mtx_entry *ne = realloc(ents, total * sizeof *ents);
        if (!ne) {
            st = loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0,
                                "cannot allocate %zu entries", total);
            goto fail;
        }
        ents = ne;
        size_t m = n;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = ents[i].key >> 32, col = ents[i].key & 0xffffffffu;
            if (r != col) {
                ents[m].key = (col << 32) | r;
                ents[m].val = ents[i].val;
                m++;
            }
        }
        n = total;
    }

    int sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        if (ents[i].key < ents[i - 1].key)
            sorted = 0;
    if (!sorted && radix_sort(ents, n) != 0) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0, "cannot allocate %zu entries", n);
        goto fail;
    }
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
        st = loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0, "cannot allocate %zu entries", m);
        goto fail;
    }
    for (size_t i = 0; i < m; i++) {
        out->row[i] = (int32_t)(ents[i].key >> 32);
        out->col[i] = (int32_t)(ents[i].key & 0xffffffffu);
        out->val[i] = (float)ents[i].val;
    }
    out->nrows = nrows;
    out->ncols = ncols;
    out->nnz = (int64_t)m;
    out->is_pattern = is_pattern;
    out->is_symmetric = is_symmetric;
    free(ents);
    return LOOM_OK;

fail:
    free(ents);
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
