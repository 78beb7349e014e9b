/* loom: the tuning database (DESIGN.md "Database").
 *
 * One JSON Lines file per campaign directory, DIR/records.jsonl.  Each line
 * is one self-contained tuning record -- a measured candidate: workload hash,
 * name and text, data fingerprint, target fingerprint, the trace that builds
 * the schedule, run seconds, status and message, the time it was measured.
 * The design follows MetaSchedule's JSONDatabase (TVM,
 * src/meta_schedule/database/json_database.cc: one tuning record per line,
 * queried per workload and target), made crash-safe: every record is
 * appended as one write(2) of one line, then fsync'ed; loading skips a torn
 * or malformed line with a warning naming it and never aborts.
 *
 * A line (keys in this order; unknown keys are ignored when loading):
 *   {"format":"loom-record","version":1,"workload":"<16 hex>",
 *    "workload_name":"spmm","workload_text":"...","data":"<16 hex>",
 *    "target":"cpu:...","schedule":"<16 hex>","status":"ok",
 *    "latency_s":1.5e-05,"flops":2.1e6,"compile_s":0.4,"message":"",
 *    "time":1714567890.25,"trace":{...loom_trace_to_json object...}}
 * workload_text is left out when the record had none; latency_s is null
 * when the candidate failed (INFINITY in memory).
 *
 * A campaign given an existing directory resumes: loom_db_has says which
 * candidates were measured already (they are never measured again) and
 * loom_db_query gives the measured traces to seed the population.
 *
 * A re-measurement record (loom_tune_remeasure, search/tune/tune.h) has one
 * more key before "trace":
 *    "remeasure":{"samples":[1.2e-05,1.3e-05,null],"default":false,
 *                 "load":0.42,"cores":2}
 * samples are the per-round latencies in seconds (null: that round
 * failed), latency_s their median; "default" marks the workload's default
 * schedule; load is the 1-minute load average then (null: unknown).  The
 * campaign's final choice has "winner":true before "default" (search/tune/tune.h
 * loom_tune_remeasure: not always the lowest median -- on a loaded machine
 * the default can be preferred); older records have no "winner".
 * Records without the key (every older database) are ordinary trials.
 *
 * A record of a pinned campaign (`loom tune --pin`, search/navigate/navigate.h) has
 * one more key before "trace", the campaign's pins (loom_pins_to_json):
 *    "pins":[{"sampler":0,"kind":3,"decision":[2]}]
 * every record of it carries them and its trace carries every pin (trials
 * and re-measurements alike; the unpinned default is re-measured for
 * comparison only, not recorded), so a reader (ship/replay.h) knows which
 * records of a directory the campaign may return.
 *
 * Not thread-safe: one thread at a time per loom_db (the tuner serialises
 * its appends).  One writer per directory: loom_db_open takes the
 * directory's lock (a flock on the directory itself, which no removed
 * file can undo) and refuses while another process, or another open in
 * this process, holds it (two campaigns on one directory measured the same
 * candidates twice, each not knowing the other's records); read-only opens
 * take no lock.
 */
#ifndef LOOM_DATABASE_H
#define LOOM_DATABASE_H

#include <stdint.h>
#include <stdio.h>

#include "../../dsl/ir/error.h"
#include "../../runtime/data/dataset.h"

/* File name of the records inside a campaign directory. */
#define LOOM_DB_FILE "records.jsonl"

/* The longest line loading keeps in memory, '\n' included (16 MiB; a
 * record is a few kB).  A longer line is skipped with a warning. */
#define LOOM_DB_MAX_LINE ((size_t)16 << 20)

/* Most rounds a re-measurement record holds. */
#define LOOM_DB_MAX_SAMPLES 1000

/* One tuning record (a measured candidate). */
typedef struct loom_record {
    uint64_t workload_hash;   /* loom_program_hash of the workload (dsl/ir/program.h) */
    char *workload_name;      /* e.g. "spmm" (file stem), owned */
    char *workload_text;      /* the .loom source text, owned (may be NULL on append: then omitted) */
    char *data_fp;            /* data fingerprint, 16 hex digits, owned */
    char *target_fp;          /* target fingerprint string, e.g. "cpu:3f2a...", owned */
    char *trace_json;         /* loom_trace_to_json text; stored in the line as a JSON OBJECT (not a string), owned */
    uint64_t schedule_hash;   /* loom_schedule_hash of the replayed schedule */
    double latency_s;         /* median seconds per run; INFINITY when failed (store null in JSON) */
    double flops;             /* FLOPs of one run (0 if unknown) */
    double compile_s;         /* compile seconds (0 if cached/unknown) */
    loom_status status;       /* LOOM_OK or the failure (dsl/ir/error.h); JSON: loom_record_status_name */
    char *message;            /* why it failed ("" when ok), owned */
    double time;              /* unix seconds when it was measured */
    int line;                 /* 1-based line in records.jsonl (filled on load and append) */
    /* a re-measurement record (JSON "remeasure"); nsamples 0: an ordinary trial */
    int nsamples;             /* 0..LOOM_DB_MAX_SAMPLES rounds */
    double *samples;          /* per-round seconds, INFINITY for a failed round; owned */
    int is_default;           /* 1: the workload's default schedule */
    int is_winner;            /* 1: the campaign's final choice in this re-measurement (JSON "winner") */
    double load;              /* 1-minute load average when re-measured; NAN: unknown */
    int cores;                /* online cores then (0: unknown) */
    char *pins_json;          /* the campaign's pinned decisions (JSON "pins", a JSON array, navigate.h
                                 loom_pins_to_json); NULL: an unpinned campaign.  Owned */
    double core_line_ns;      /* the machine's state when measured: a cache line's round trip between two
                                 cores, ns (runtime/measure/measure.h loom_measure_core_line_ns; a
                                 re-measurement record: the median over its rounds).  0: not measured
                                 (a simulator, one CPU, an older record); JSON "core_line_ns", written
                                 only when > 0 */
} loom_record;

typedef struct loom_db loom_db;

/* Open the campaign directory `dir` (created with its parents if missing,
 * and DIR/records.jsonl created empty if missing) and load every record in
 * file order.  A line that is not a valid record is skipped with one warning
 * line to `warn` (may be NULL: no warnings)
 *     "DIR/records.jsonl:LINE: skipped: <why>"
 * where <why> is "torn last line (no newline at the end of the file: the
 * writer was killed mid-record)", "not valid JSON near byte B" (with
 * ": nested deeper than the JSON reader's limit (cJSON's
 * CJSON_NESTING_LIMIT, 1000 levels)" when that is why), "empty
 * line", "expected a JSON object", "missing field 'trace'", "field
 * 'latency_s': expected a number or null, got a string", "field 'workload':
 * expected 16 hex digits", "field 'status': unknown status 'oops'", "field
 * 'format': expected \"loom-record\"", "field 'version': unsupported version
 * 2 (this loom reads 1)", "field 'trace': <loom_trace_from_json's message>",
 * "field 'latency_s': null, but the status is ok", and so on (every field is
 * type-checked and named).  A torn last line is repaired by the next append.
 * A line with ill-formed UTF-8 is repaired first (loom_db_repaired), so
 * that every string loaded is well-formed UTF-8.
 * "line of N bytes is longer than the reader's limit (LOOM_DB_MAX_LINE)"
 * and "does not fit in memory" name a line too long to keep; the lines
 * after it are read.
 * The directory's writer lock is taken first (flock(2) on the directory,
 * which the kernel releases when the process dies; held until
 * loom_db_close; search/database/database_internal.h).
 * On success *out is owned by the caller (loom_db_close).
 * Errors: LOOM_ERR_IO "DIR is in use: process P holds its lock (a lock on
 * the directory itself ...) ..." (another writer has it open: a running
 * campaign), "cannot lock DIR: ..." (a file system without directory
 * locks),
 * "cannot create directory DIR: ...", "DIR: not a directory", "cannot open
 * DIR/records.jsonl: ...", "cannot read DIR/records.jsonl at line L: ...";
 * LOOM_ERR_NOMEM. */
loom_status loom_db_open(const char *dir, FILE *warn, loom_db **out, loom_error *err);

/* Like loom_db_open, but read-only: nothing is created, loom_db_append
 * fails.  For viewers (`loom db`).  Errors: LOOM_ERR_IO "DIR: no such
 * directory", "DIR: not a directory", "DIR has no records.jsonl: not a
 * tuning database", a read error; LOOM_ERR_NOMEM. */
loom_status loom_db_open_readonly(const char *dir, FILE *warn, loom_db **out, loom_error *err);

/* Append one record as one line (a single write(2) on an O_APPEND file),
 * then fsync; also keep a deep copy in memory (its `line` filled; rec is
 * not changed, its strings stay the caller's).  If the file's last byte is
 * not '\n' (a torn last line from a killed writer), a '\n' is written first,
 * in the same write.  Required: workload_name, data_fp (16 hex digits),
 * target_fp (non-empty, no newline), trace_json (a JSON object that
 * loom_trace_from_json accepts); status LOOM_OK needs a finite latency_s
 * >= 0; flops, compile_s and time finite.  message NULL is stored as "",
 * workload_text NULL is left out.  Ill-formed UTF-8 in message,
 * workload_name, workload_text or target_fp (a compiler's message in
 * Latin-1) is written, and kept, with U+FFFD in its place (dsl/ir/util.h
 * loom_utf8_repair): every line is valid JSON text.  A non-finite latency_s is stored as null
 * (INFINITY when loaded).  nsamples > 0 (at most LOOM_DB_MAX_SAMPLES, with
 * samples >= 0 or INFINITY) writes the "remeasure" object.
 * A file size limit (RLIMIT_FSIZE, ulimit -f) raises SIGXFSZ, whose default
 * action kills the process mid-record: a program that wants the EFBIG error
 * below instead must ignore SIGXFSZ (signal(SIGXFSZ, SIG_IGN)), as the
 * loom command does; the library does not change signal dispositions.
 * Errors: LOOM_ERR_INVALID naming the bad field (nothing written), or "the
 * database was opened read-only"; LOOM_ERR_IO "cannot write
 * DIR/records.jsonl: ..." (write or fsync failed; the record is not kept in
 * memory; a partial line may be left, which the next load skips);
 * LOOM_ERR_NOMEM. */
loom_status loom_db_append(loom_db *db, const loom_record *rec, loom_error *err);

/* Number of records loaded and appended. */
int loom_db_count(const loom_db *db);

/* Record i (0 <= i < loom_db_count) in file order, or NULL when out of
 * range.  The pointer stays valid until loom_db_close (appends do not move
 * records). */
const loom_record *loom_db_record(const loom_db *db, int i);

/* The campaign directory as given to open (owned by db). */
const char *loom_db_dir(const loom_db *db);

/* Lines skipped (with a warning) when the database was loaded. */
int loom_db_skipped(const loom_db *db);

/* Records kept after their ill-formed UTF-8 was replaced by U+FFFD when
 * the database was loaded (each with one warning "DIR/records.jsonl:LINE:
 * repaired: invalid UTF-8 at byte B (K ill-formed sequences replaced by
 * U+FFFD); the record is kept"; an older loom wrote a compiler's message
 * as it came).  They are not among loom_db_skipped. */
int loom_db_repaired(const loom_db *db);

/* Records of (workload_hash, target_fp), best first: ok records by
 * latency ascending, then failed ones by time ascending (ties: file order).
 * Re-measurement records (nsamples > 0) are among them, by their median:
 * a caller that wants the campaign's trials skips them.
 * *out is a malloc'd array of pointers into db (caller frees the array
 * only; NULL when the count is 0).  Returns the count, or -1 when out of
 * memory (*out NULL).  O(records). */
int loom_db_query(const loom_db *db, uint64_t workload_hash, const char *target_fp, const loom_record ***out);

/* The fastest ok record of (workload_hash, target_fp), or NULL when there
 * is none.  O(records). */
const loom_record *loom_db_best(const loom_db *db, uint64_t workload_hash, const char *target_fp);

/* 1 if a record of (workload, target) with that schedule hash exists (any
 * status): such a candidate is never measured again; else 0.  O(1) on
 * average (an open-addressing hash set over every record). */
int loom_db_has(const loom_db *db, uint64_t workload_hash, const char *target_fp, uint64_t schedule_hash);

/* Free the database and every record in it (NULL is fine). */
void loom_db_close(loom_db *db);

/* The stable JSON name of a record's status: LOOM_OK "ok", LOOM_ERR_BUILD
 * "build-error", LOOM_ERR_RUN "run-error" (crash), LOOM_ERR_TIMEOUT
 * "timeout", LOOM_ERR_WRONG "wrong", LOOM_ERR_SEMANTIC and
 * LOOM_ERR_UNSUPPORTED "lower-error", LOOM_ERR_INVALID "invalid"; the
 * other statuses "parse-error", "bind-error", "data-error", "io-error",
 * "nomem"; "unknown" for a value outside the enum. */
const char *loom_record_status_name(loom_status s);

/* Inverse of loom_record_status_name ("lower-error" gives
 * LOOM_ERR_UNSUPPORTED).  Returns 0 and sets *out, or -1 for an unknown
 * name. */
int loom_record_status_parse(const char *name, loom_status *out);

/* 64-bit fingerprint of a bound data set: the program's sizes (names and
 * values), then per input tensor its index, order, dims, every compressed
 * or range level's pos/crd arrays and the values -- 64-bit FNV-1a
 * (dsl/ir/util.h loom_fnv1a; Fowler, Noll, Vo).  Equal data give equal
 * fingerprints; changing one value, coordinate or size changes it (up to
 * hash collisions).  Print as "%016" PRIx64 for loom_record.data_fp. */
uint64_t loom_data_fingerprint(const loom_dataset *ds);

#endif
