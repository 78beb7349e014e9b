/* The target handle of a command (target.h loom_target_open): the CPU this
 * process runs on, or a simulated machine model. */
#include "target.h"

#include <stdio.h>
#include <string.h>

/* "cpu": the host's model, its detected limits, the CPU fingerprint. */
static loom_status open_cpu(const char *cc, const char *cflags, const char *given_fp, loom_target *out,
                            loom_error *err)
{
    loom_status st = loom_target_host(out, err);
    if (st)
        return st;
    out->kind = LOOM_TARGET_CPU;
    out->limits = loom_target_cpu_limits();
    if (given_fp)
        snprintf(out->fingerprint, sizeof out->fingerprint, "%s", given_fp);
    else
        loom_target_cpu_fingerprint(cc, cflags, out->fingerprint, sizeof out->fingerprint);
    return LOOM_OK;
}

/* 1 when s (after "sim:") is "NAME:<16 hex>", a record's fingerprint; the
 * name's length goes to *nl. */
static int is_sim_fingerprint(const char *s, size_t *nl)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || strlen(colon + 1) != 16 || strspn(colon + 1, "0123456789abcdef") != 16)
        return 0;
    *nl = (size_t)(colon - s);
    return 1;
}

loom_status loom_target_open(const char *spec, const char *cc, const char *cflags, loom_target *out,
                             loom_error *err)
{
    if (!spec || !*spec || !strcmp(spec, "cpu"))
        return open_cpu(cc, cflags, NULL, out, err);
    if (!strncmp(spec, "cpu:", 4) && strlen(spec + 4) == 16 && strspn(spec + 4, "0123456789abcdef") == 16)
        return open_cpu(cc, cflags, spec, out, err);
    size_t len = strlen(spec), nl = 0;
    if (!strcmp(spec, "sim"))
        return loom_target_load("host", out, err);
    if (!strncmp(spec, "sim:", 4) && is_sim_fingerprint(spec + 4, &nl) && nl < 64) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)nl, spec + 4);
        loom_status st = loom_target_load(name, out, err);
        if (!st)
            snprintf(out->fingerprint, sizeof out->fingerprint, "%s", spec);
        return st;
    }
    if (!strncmp(spec, "sim:", 4) || (len > 5 && !strcmp(spec + len - 5, ".json")))
        return loom_target_load(spec, out, err);
    return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                          "unknown target '%s' (expected cpu, sim, sim:NAME, sim:FILE.json, FILE.json or a "
                          "fingerprint cpu:HEX / sim:NAME:HEX)",
                          spec);
}
