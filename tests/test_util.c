/* Tests for dsl/ir/util.c: FNV-1a, the string buffer, shortest doubles, the
 * clock.  Expected values come from the FNV reference vectors (IETF draft
 * draft-eastlake-fnv) or from independent recomputation here (snprintf,
 * strtod), never from the code under test. */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/ir/util.h"

Test(util, fnv1a_reference_vectors)
{
    cr_assert_eq(loom_fnv1a(LOOM_FNV_OFFSET, NULL, 0), 0xcbf29ce484222325ULL);
    cr_assert_eq(loom_fnv1a(LOOM_FNV_OFFSET, "a", 1), 0xaf63dc4c8601ec8cULL);
    cr_assert_eq(loom_fnv1a_str(LOOM_FNV_OFFSET, "foobar"), 0x85944171f73967e8ULL);
    cr_assert_eq(loom_fnv1a_str(loom_fnv1a_str(LOOM_FNV_OFFSET, "foo"), "bar"), 0x85944171f73967e8ULL);
}

/* The u64 form hashes the least significant byte first, whatever the host. */
Test(util, fnv1a_u64_is_little_endian_bytes)
{
    uint64_t vals[] = {0, 1, 0x0102030405060708ULL, (uint64_t)-1, (uint64_t)(int64_t)-42};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        unsigned char b[8];
        for (int k = 0; k < 8; k++)
            b[k] = (unsigned char)(vals[i] >> (8 * k));
        uint64_t h = 0x12345ULL;
        cr_assert_eq(loom_fnv1a_u64(h, vals[i]), loom_fnv1a(h, b, 8), "value %zu", i);
    }
}

Test(util, strbuf_grows_past_any_initial_capacity)
{
    loom_strbuf b = {0};
    char want[20000];
    size_t n = 0;
    for (int i = 0; i < 2000; i++) {
        char piece[32];
        int k = snprintf(piece, sizeof piece, "%d,", i * 7);
        memcpy(want + n, piece, (size_t)k);
        n += (size_t)k;
        if (i % 2)
            loom_strbuf_printf(&b, "%d,", i * 7);
        else
            loom_strbuf_puts(&b, piece);
    }
    want[n] = '\0';
    /* one long formatted piece, longer than the buffer's first allocation */
    char big[6000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    loom_strbuf_printf(&b, "[%s]", big);
    cr_assert_not(b.oom);
    cr_assert_eq(b.n, n + strlen(big) + 2);
    cr_assert_eq(strlen(b.s), b.n, "NUL-terminated at n");
    cr_assert_eq(memcmp(b.s, want, n), 0);
    cr_assert_eq(b.s[n], '[');
    cr_assert_eq(b.s[b.n - 1], ']');
    loom_strbuf_put(&b, "a\0b", 3); /* embedded NUL is copied */
    cr_assert_eq(b.n, n + strlen(big) + 5);
    cr_assert_eq(b.s[b.n - 2], '\0');
    cr_assert_eq(b.s[b.n - 1], 'b');
    free(b.s);
}

Test(util, strbuf_after_oom_appends_nothing)
{
    loom_strbuf b = {0};
    b.oom = 1;
    loom_strbuf_puts(&b, "abc");
    loom_strbuf_printf(&b, "%d", 5);
    cr_assert_null(b.s);
    cr_assert_eq(b.n, 0);
}

/* The result reads back exactly, and no shorter precision among 15..17 would. */
Test(util, format_double_is_shortest_exact)
{
    double vals[] = {0.0, -0.0, 1.0, 0.1, 1.0 / 3.0, 2.0 / 3.0, 1e-300, 123456789.123456789, 0.30000000000000004,
                     5e-324, 1.7976931348623157e308, -2.5};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        char got[32];
        loom_format_double(got, sizeof got, vals[i]);
        cr_assert_eq(strtod(got, NULL), vals[i], "%s does not read back", got);
        int prec = 15;
        char t[40];
        for (; prec < 17; prec++) {
            snprintf(t, sizeof t, "%.*g", prec, vals[i]);
            if (strtod(t, NULL) == vals[i])
                break;
        }
        snprintf(t, sizeof t, "%.*g", prec, vals[i]);
        cr_assert_str_eq(got, t, "value %zu", i);
    }
    char s[32];
    cr_assert_str_eq(loom_format_double(s, sizeof s, 0.1), "0.1");
    cr_assert_str_eq(loom_format_double(s, sizeof s, 0.30000000000000004), "0.30000000000000004");
    cr_assert_str_eq(loom_format_double(s, sizeof s, INFINITY), "inf");
}

static loom_status step(int fail, int *calls)
{
    (*calls)++;
    return fail ? LOOM_ERR_IO : LOOM_OK;
}

static loom_status two_steps(int fail_first, int *calls)
{
    LOOM_TRY(step(fail_first, calls));
    LOOM_TRY(step(0, calls));
    return LOOM_OK;
}

Test(util, try_returns_the_first_failure)
{
    int calls = 0;
    cr_assert_eq(two_steps(1, &calls), LOOM_ERR_IO);
    cr_assert_eq(calls, 1, "stops after the failing step");
    calls = 0;
    cr_assert_eq(two_steps(0, &calls), LOOM_OK);
    cr_assert_eq(calls, 2);
}

Test(util, clock_does_not_go_back)
{
    double t0 = loom_now_seconds();
    for (int i = 0; i < 1000; i++) {
        double t1 = loom_now_seconds();
        cr_assert_geq(t1, t0);
        t0 = t1;
    }
    cr_assert_gt(t0, 0.0);
}

/* The bytes come back exactly (NULs included), from a regular file (one
 * allocation of its size) and from a stream without a size (growth). */
Test(util, read_stream_returns_every_byte)
{
    size_t n = 100000;
    char *want = malloc(n);
    for (size_t i = 0; i < n; i++)
        want[i] = (char)(i * 131 % 251); /* includes NULs */
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(want, 1, n, f), n);
    rewind(f);
    char *got = NULL;
    size_t len = 0;
    cr_assert_eq(loom_read_stream(f, 0, &got, &len), 0);
    cr_assert_eq(len, n);
    cr_assert_eq(memcmp(got, want, n), 0);
    cr_assert_eq(got[n], '\0', "NUL-terminated");
    free(got);
    rewind(f);
    cr_assert_eq(loom_read_stream(f, n - 1, &got, &len), EFBIG, "one byte over the limit");
    cr_assert_null(got);
    rewind(f);
    cr_assert_eq(loom_read_stream(f, n, &got, &len), 0, "exactly the limit is fine");
    free(got);
    fclose(f);

    FILE *m = fmemopen(want, n, "rb"); /* no file descriptor: no size known */
    cr_assert_not_null(m);
    cr_assert_eq(loom_read_stream(m, 0, &got, &len), 0);
    cr_assert_eq(len, n);
    cr_assert_eq(memcmp(got, want, n), 0);
    free(got);
    fclose(m);
    free(want);
}

Test(util, read_stream_of_an_empty_file)
{
    FILE *f = tmpfile();
    char *got = NULL;
    size_t len = 7;
    cr_assert_eq(loom_read_stream(f, 0, &got, &len), 0);
    cr_assert_eq(len, 0);
    cr_assert_str_eq(got, "");
    free(got);
    fclose(f);
}

/* The Unicode Standard's table 3-7 and "U+FFFD substitution of maximal
 * subparts" (chapter 3.9): one U+FFFD per maximal ill-formed subpart. */
static void repaired(const char *in, const char *want, size_t nbad)
{
    loom_strbuf b = {0};
    size_t k = loom_utf8_repair(&b, in, strlen(in));
    cr_assert_not(b.oom);
    cr_assert_str_eq(b.s ? b.s : "", want, "repairing '%s'", in);
    cr_assert_eq(k, nbad, "'%s': %zu replacements, want %zu", in, k, nbad);
    cr_assert_eq(loom_utf8_check(b.s ? b.s : "", b.n), b.n);
    free(b.s);
}

Test(util, utf8_check_and_repair)
{
    const char *ok = "ascii \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf";
    cr_assert_eq(loom_utf8_check(ok, strlen(ok)), strlen(ok));
    repaired(ok, ok, 0);
    cr_assert_eq(loom_utf8_check("ab\xff", 3), 2);
    repaired("a\xff" "b", "a\xef\xbf\xbd" "b", 1);                     /* never a lead byte */
    repaired("\xe2\x82", "\xef\xbf\xbd", 1);                           /* truncated: one subpart */
    repaired("\xe2\x82" "x", "\xef\xbf\xbd" "x", 1);
    repaired("\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd", 2);               /* overlong '/' */
    repaired("\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 3); /* a surrogate */
    repaired("\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 4); /* above U+10FFFF */
    repaired("\x80", "\xef\xbf\xbd", 1);                               /* a lone continuation byte */
    repaired("", "", 0);
}

/* The one cache directory rule (the kernel cache, the calibrated host, the
 * simulation cache): $LOOM_CACHE, else $HOME/.cache/loom, else
 * /tmp/loom-cache, with the sub-folder appended when given.  Criterion runs
 * each test in its own process, so the environment changes stay here. */
Test(util, cache_dir_follows_loom_cache_then_home_then_tmp)
{
    char b[256];
    setenv("LOOM_CACHE", "/x/c", 1);
    setenv("HOME", "/h", 1);
    loom_cache_dir("sim", b, sizeof b);
    cr_assert_str_eq(b, "/x/c/sim");
    loom_cache_dir(NULL, b, sizeof b);
    cr_assert_str_eq(b, "/x/c");
    setenv("LOOM_CACHE", "", 1); /* empty: not set */
    loom_cache_dir("targets", b, sizeof b);
    cr_assert_str_eq(b, "/h/.cache/loom/targets");
    unsetenv("LOOM_CACHE");
    unsetenv("HOME");
    loom_cache_dir("", b, sizeof b);
    cr_assert_str_eq(b, "/tmp/loom-cache");
    loom_cache_dir("sim", b, 8);
    cr_assert_eq(strlen(b), 7, "truncated to the buffer: %s", b);
}
