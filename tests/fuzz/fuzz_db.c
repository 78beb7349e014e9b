/* Fuzz the tuning database's JSON Lines (DIR/records.jsonl): the input is
 * written as a campaign's records file and loaded read-only (as `loom db`
 * and `loom replay` do); every loaded record is then looked up the way the
 * tuner and `loom db` query it. */
#include <stdio.h>
#include <unistd.h>

#include "../../search/database/database.h"
#include "fuzz_common.h"

static char dir[64];
static char file[128];

static void cleanup(void)
{
    unlink(file);
    rmdir(dir);
}

static int setup(void)
{
    if (dir[0])
        return 0;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/loom-fuzz-db-XXXXXX", base && strlen(base) < 30 ? base : "/tmp");
    if (!mkdtemp(dir))
        abort(); /* the harness itself cannot run */
    snprintf(file, sizeof file, "%s/%s", dir, LOOM_DB_FILE);
    atexit(cleanup);
    return 0;
}

int loom_fuzz_db(const uint8_t *data, size_t n)
{
    setup();
    FILE *f = fopen(file, "wb");
    if (!f)
        return 0;
    size_t w = n ? fwrite(data, 1, n, f) : 0;
    if (fclose(f) != 0 || w != n)
        return 0;
    loom_db *db = NULL;
    loom_error err;
    FILE *devnull = fopen("/dev/null", "w");
    if (fuzz_check(loom_db_open_readonly(dir, devnull, &db, &err)) == LOOM_OK) {
        for (int i = 0; i < loom_db_count(db); i++) {
            const loom_record *r = loom_db_record(db, i);
            const loom_record **rs = NULL;
            int k = loom_db_query(db, r->workload_hash, r->target_fp, &rs);
            free(rs);
            (void)k;
            (void)loom_db_best(db, r->workload_hash, r->target_fp);
            (void)loom_db_has(db, r->workload_hash, r->target_fp, r->schedule_hash);
        }
        loom_db_close(db);
    }
    if (devnull)
        fclose(devnull);
    return 0;
}

LOOM_FUZZ_ENTRY(loom_fuzz_db)
