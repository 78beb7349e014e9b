/* Helpers shared by the tuning database's test files (db_fixture.c).
 * Each fails the current Criterion test on an error it cannot go on from. */
#ifndef LOOM_TEST_DB_FIXTURE_H
#define LOOM_TEST_DB_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../search/database/database.h"

#define FMT(buf, ...) cr_assert_lt(snprintf(buf, sizeof buf, __VA_ARGS__), (int)sizeof buf, "%s: too long", #buf)

/* the data fingerprint db_rec_make's records carry */
extern const char *const DB_DATA_FP;

/* a fresh /tmp/loom-db-XXXXXX into buf (n bytes) */
void db_make_tmpdir(char *buf, size_t n);
/* rm -rf dir; fails the test when that fails */
void db_remove_tree(const char *dir);
/* the whole file, malloc'd and NUL-terminated (its length in *len when len
 * is not NULL); the caller frees */
char *db_read_all(const char *path, size_t *len);
/* path := text[0..n) */
void db_write_all(const char *path, const char *text, size_t n);
/* DIR/records.jsonl into buf (n bytes) */
void db_records_path(const char *dir, char *buf, size_t n);
/* a trace in loom_trace_to_json's format (GetBlock, GetLoops, a tile
 * sampler and a Split) recorded for workload w, in a static buffer */
const char *db_trace_text(uint64_t w, int tile);
/* a record with borrowed strings (trace_json points to db_trace_text's
 * static buffer: copy before the next call) */
loom_record db_rec_make(uint64_t w, const char *target, uint64_t sched, loom_status st, double lat, double time,
                        const char *msg);
/* open dir with its warnings written to a memory stream (*warn, *warnbuf,
 * *warnlen; the caller closes and frees) */
loom_db *db_open_ok(const char *dir, char **warnbuf, size_t *warnlen, FILE **warn);
/* open quietly; the warnings text in *warnings (the caller frees) */
loom_db *db_open_warn(const char *dir, char **warnings);
/* append r, failing the test on an error */
void db_append_ok(loom_db *db, const loom_record *r);
/* newlines in s */
int db_count_lines(const char *s);
/* line k (1-based) of text, malloc'd, or NULL */
char *db_nth_line(const char *text, int k);

#endif
