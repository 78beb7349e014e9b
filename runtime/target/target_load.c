/* Targets by name or path (target.h loom_target_load); "host" is the
 * calibrated host (calibrate.h).  Kept apart from target.c so that
 * calibrate.c (which uses target.c's parser and host detection) sits
 * between them: target_load.c -> calibrate.c -> target.c. */
#include "target.h"
#include "calibrate.h"
#include "../../dsl/ir/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static loom_status load_file(const char *path, loom_target *out, loom_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "%s: cannot open target file: %s", path, strerror(errno));
    char *buf;
    size_t n;
    int rerr = loom_read_stream(fp, LOOM_TARGET_MAX_BYTES, &buf, &n);
    fclose(fp);
    if (rerr == EFBIG)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0,
                              "%s: larger than %zu KiB, the limit on target files: not a target", path,
                              LOOM_TARGET_MAX_BYTES >> 10);
    if (rerr == ENOMEM)
        return loom_error_set(err, LOOM_ERR_NOMEM, path, 0, 0, "%s: out of memory", path);
    if (rerr)
        return loom_error_set(err, LOOM_ERR_IO, path, 0, 0, "%s: read error", path);
    loom_status st = loom_target_parse(buf, path, out, err);
    free(buf);
    return st;
}

static int exists(const char *p) { return access(p, R_OK) == 0; }

/* "host": the calibrated model of this CPU (calibrate.h), measured on first
 * use; LOOM_CALIBRATE=off: the uncalibrated one (loom_target_host). */
static loom_status load_host(loom_target *out, loom_error *err)
{
    const char *mode = getenv("LOOM_CALIBRATE");
    if (mode && (!strcmp(mode, "off") || !strcmp(mode, "0")))
        return loom_target_host(out, err);
    char path[1100];
    loom_calibrate_path(path, sizeof path);
    if (access(path, F_OK) != 0) {
        loom_error e2;
        loom_error_clear(&e2);
        if (loom_calibrate_first_use(mode && !strcmp(mode, "quick"), &e2)) {
            fprintf(stderr, "loom: warning: calibration failed (%s); the simulator uses the uncalibrated host "
                            "model\n", e2.msg);
            return loom_target_host(out, err);
        }
    }
    return load_file(path, out, err);
}

loom_status loom_target_load(const char *path_or_name, loom_target *out, loom_error *err)
{
    if (!path_or_name || !*path_or_name)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0, "empty target name");
    const char *s = path_or_name;
    if (!strncmp(s, "sim:", 4))
        s += 4;
    if (!strcmp(s, "host"))
        return load_host(out, err);
    size_t len = strlen(s);
    if (strchr(s, '/') || (len > 5 && !strcmp(s + len - 5, ".json")))
        return load_file(s, out, err);
    char tried[3][PATH_MAX + 64];
    int nt = 0;
    const char *env = getenv("LOOM_TARGETS");
    if (env && *env)
        snprintf(tried[nt++], sizeof tried[0], "%s/%s.json", env, s);
    char exe[PATH_MAX];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (el > 0) {
        exe[el] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(tried[nt++], sizeof tried[0], "%s/../targets/%s.json", exe, s);
        }
    }
    snprintf(tried[nt++], sizeof tried[0], "targets/%s.json", s);
    for (int k = 0; k < nt; k++)
        if (exists(tried[k]))
            return load_file(tried[k], out, err);
    return loom_error_set(err, LOOM_ERR_IO, NULL, 0, 0,
                          "no target named '%s': looked for %s%s%s%s%s (set LOOM_TARGETS to the directory of "
                          "NAME.json files, or give a path)",
                          s, tried[0], nt > 1 ? ", " : "", nt > 1 ? tried[1] : "", nt > 2 ? ", " : "",
                          nt > 2 ? tried[2] : "");
}
