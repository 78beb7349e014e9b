/* Tests of targets (runtime/target/target.h): the shipped files, host detection,
 * fingerprints, limits, and the errors for bad files. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/target/target.h"

Test(target, shipped_files_load)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_load("targets/spr-2c.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_expect_str_eq(t.name, "spr-2c");
    cr_expect_eq(t.cores, 2);
    cr_expect_eq(t.vector_bits, 512);
    cr_expect_eq(t.ncaches, 3);
    cr_expect_eq(t.caches[0].size, 49152);
    cr_expect_eq(t.caches[2].shared, 1);
    /* by short name, from ./targets (tests run at the repository root) */
    unsetenv("LOOM_TARGETS");
    loom_target w;
    cr_assert_eq(loom_target_load("wide-64c", &w, &err), LOOM_OK, "%s", err.msg);
    cr_expect_eq(w.cores, 64);
    cr_expect_eq(w.vector_bits, 1024);
    cr_assert_eq(loom_target_load("sim:spr-2c", &w, &err), LOOM_OK, "%s", err.msg);
    cr_expect_str_eq(w.name, "spr-2c");
    /* $LOOM_TARGETS first */
    char dir[] = "/tmp/loom-test-target-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/mine.json", dir);
    FILE *fp = fopen(path, "w");
    fputs("{\"name\": \"mine\", \"cores\": 3, \"vector_bits\": 256, \"fma_units\": 1, \"ghz\": 3,"
          " \"caches\": [{\"size\": 32768, \"assoc\": 8, \"line\": 64, \"latency\": 4, \"shared\": false}],"
          " \"memory\": {\"bandwidth\": 1e10, \"latency_ns\": 90}}",
          fp);
    fclose(fp);
    setenv("LOOM_TARGETS", dir, 1);
    cr_assert_eq(loom_target_load("mine", &w, &err), LOOM_OK, "%s", err.msg);
    cr_expect_eq(w.cores, 3);
    cr_expect_eq(w.mlp, 6, "model defaults filled");
    cr_expect_eq(w.core_bandwidth, 1e10, "core bandwidth defaults to the chip's");
    unsetenv("LOOM_TARGETS");
    unlink(path);
    rmdir(dir);
}

Test(target, host_detected)
{
    loom_target t, h;
    loom_error err;
    cr_assert_eq(loom_target_host(&t, &err), LOOM_OK);
    cr_expect_eq(t.cores, (int)sysconf(_SC_NPROCESSORS_ONLN));
    cr_expect_geq(t.ncaches, 1);
    cr_expect_gt(t.caches[0].size, 0);
    cr_expect_gt(t.ghz, 0);
    cr_expect(t.vector_bits == 128 || t.vector_bits == 256 || t.vector_bits == 512);
    /* "host" is the uncalibrated model with LOOM_CALIBRATE=off (the
     * calibrated one: tests/test_calibrate.c) */
    setenv("LOOM_CALIBRATE", "off", 1);
    cr_assert_eq(loom_target_load("host", &h, &err), LOOM_OK);
    unsetenv("LOOM_CALIBRATE");
    char a[96], b[96];
    loom_target_fingerprint(&t, a, sizeof a);
    loom_target_fingerprint(&h, b, sizeof b);
    cr_expect_str_eq(a, b, "host detection is stable: %s vs %s", a, b);
}

Test(target, fingerprint_and_limits)
{
    loom_target t, u;
    loom_error err;
    cr_assert_eq(loom_target_load("targets/spr-2c.json", &t, &err), LOOM_OK, "%s", err.msg);
    char a[96], b[96];
    loom_target_fingerprint(&t, a, sizeof a);
    cr_expect_eq(strncmp(a, "sim:spr-2c:", 11), 0, "%s", a);
    cr_expect_eq(strlen(a), 11 + 16, "%s", a);
    cr_expect_eq(strspn(a + 11, "0123456789abcdef"), 16, "%s", a);
    u = t;
    snprintf(u.description, sizeof u.description, "another text");
    loom_target_fingerprint(&u, b, sizeof b);
    cr_expect_str_eq(a, b, "the description is not part of the fingerprint");
    u = t;
    u.caches[1].assoc = 8;
    loom_target_fingerprint(&u, b, sizeof b);
    cr_expect_str_neq(a, b, "a cache change changes the fingerprint");
    u = t;
    u.overlap = t.overlap + 0.25;
    loom_target_fingerprint(&u, b, sizeof b);
    cr_expect_str_neq(a, b, "a model parameter changes the fingerprint");
    loom_limits l = loom_target_limits(&t);
    cr_expect_eq(l.vector_lanes, 16);
    cr_expect_eq(l.cores, 2);
    cr_expect_eq(l.max_vector_factor, 16);
    cr_expect_eq(l.max_workspace_bytes, 65536);
}

static void bad(const char *json, const char *expect)
{
    loom_target t;
    loom_error err;
    loom_error_clear(&err);
    cr_expect_eq(loom_target_parse(json, "targets/x.json", &t, &err), LOOM_ERR_DATA, "accepted: %s", json);
    cr_expect(strstr(err.msg, expect) != NULL, "message \"%s\" lacks \"%s\"", err.msg, expect);
    cr_expect(strncmp(err.msg, "targets/x.json", 14) == 0, "message \"%s\" does not name the file", err.msg);
}

#define HEAD "{\"name\": \"x\", \"cores\": 2, \"vector_bits\": 512, \"fma_units\": 2, \"ghz\": 2, "
#define L1 "{\"size\": 49152, \"assoc\": 12, \"line\": 64, \"latency\": 5, \"shared\": false}"
#define MEM "\"memory\": {\"bandwidth\": 2e10, \"latency_ns\": 100}"

Test(target, bad_files)
{
    bad("{\"name\": ", "not valid JSON");
    bad("[1, 2]", "$: expected a JSON object");
    bad(HEAD "\"caches\": [" L1 ", {\"size\": \"big\", \"assoc\": 16, \"line\": 64, \"latency\": 16, \"shared\": "
             "false}], " MEM "}",
        "targets/x.json: $.caches[1].size: expected a positive integer");
    bad(HEAD "\"caches\": [" L1 ", {\"size\": -5, \"assoc\": 16, \"line\": 64, \"latency\": 16, \"shared\": "
             "false}], " MEM "}",
        "$.caches[1].size: expected a positive integer");
    bad(HEAD "\"caches\": [{\"size\": 50000, \"assoc\": 12, \"line\": 64, \"latency\": 5, \"shared\": false}], " MEM
             "}",
        "$.caches[0].size: expected a multiple of line * assoc");
    bad(HEAD "\"caches\": [" L1 "], \"memory\": {\"latency_ns\": 100}}", "$.memory.bandwidth: missing");
    bad(HEAD "\"caches\": [" L1 "], " MEM ", \"colours\": 3}", "$.colours: unknown key");
    bad(HEAD "\"caches\": [" L1 "], " MEM ", \"model\": {\"overlap\": 2}}", "$.model.overlap: expected");
    bad(HEAD "\"caches\": [], " MEM "}", "$.caches: expected an array of 1 to 4");
    bad("{\"name\": \"x\", \"cores\": 2.5, \"vector_bits\": 512, \"fma_units\": 2, \"ghz\": 2, \"caches\": [" L1
        "], " MEM "}",
        "$.cores: expected a positive integer");
    bad("{\"name\": \"x\", \"cores\": 2, \"vector_bits\": 500, \"fma_units\": 2, \"ghz\": 2, \"caches\": [" L1
        "], " MEM "}",
        "$.vector_bits: expected a multiple of 32");
    bad(HEAD "\"caches\": [{\"size\": 49152, \"assoc\": 12, \"line\": 64, \"latency\": 5, \"shared\": true}, "
             "{\"size\": 2097152, \"assoc\": 16, \"line\": 64, \"latency\": 16, \"shared\": false}], " MEM "}",
        "$.caches[1].shared: a private level cannot follow a shared one");
    bad(HEAD "\"caches\": [{\"size\": 49152, \"assoc\": 12, \"line\": 64, \"latency\": 5, \"shared\": \"no\"}], " MEM
             "}",
        "$.caches[0].shared: expected true or false");
}

Test(target, missing_name_and_file)
{
    loom_target t;
    loom_error err;
    cr_expect_eq(loom_target_load("no-such-target", &t, &err), LOOM_ERR_IO);
    cr_expect(strstr(err.msg, "no target named 'no-such-target'") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "targets/no-such-target.json") != NULL, "%s", err.msg);
    cr_expect_eq(loom_target_load("/nonexistent/t.json", &t, &err), LOOM_ERR_IO);
    cr_expect(strstr(err.msg, "/nonexistent/t.json") != NULL, "%s", err.msg);
}
