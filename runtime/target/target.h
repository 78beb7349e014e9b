/* loom: target handles -- the target of a command, opened once by spec
 * (loom_target_open) or name (loom_target_load): the CPU this process runs
 * on or a simulated machine model, with its limits and fingerprint.  The
 * model itself (struct loom_target, its JSON form, the host's detected
 * model, fingerprints, limits) is runtime/machine/machine.h, below the
 * lowering and the measurer; this layer sits above the measurer because
 * the calibrated host ("host", calibrate.h) is measured with its builder on
 * first use. */
#ifndef LOOM_TARGET_H
#define LOOM_TARGET_H

#include "../machine/machine.h"

/* Open the target of a command -- the one handle every consumer takes
 * (validation and the design space: t->limits; lowering: loom_lower_for
 * with t->limits; measuring: runtime/runner/runner.h; records:
 * t->fingerprint).  spec is
 *   "cpu"                 this machine's CPU: kind LOOM_TARGET_CPU, limits
 *                         loom_target_cpu_limits() (machine.h: the host's,
 *                         loom_limits_host), the machine model of
 *                         loom_target_host (so a simulator can still estimate
 *                         on it), fingerprint loom_target_cpu_fingerprint(cc,
 *                         cflags);
 *   "sim", "sim:NAME", "sim:FILE.json", "FILE.json"
 *                         a simulated model (loom_target_load; "sim" alone is
 *                         "sim:host", the host's model): kind LOOM_TARGET_SIM,
 *                         limits loom_target_limits, fingerprint
 *                         loom_target_fingerprint;
 *   "cpu:<hex>", "sim:NAME:<hex>"  a fingerprint as records carry it (`loom db`
 *                         prints them): the CPU, or the model NAME, whose own
 *                         fingerprint is then kept as given (a record's target
 *                         read back, e.g. by `loom replay`).
 * NULL or "" is "cpu".  cc and cflags (may be NULL: $LOOM_CC or "cc", and
 * the default flags) only enter the CPU's fingerprint.
 * Errors: LOOM_ERR_INVALID (an unknown spec: the message lists the forms);
 * those of loom_target_load. */
loom_status loom_target_open(const char *spec, const char *cc, const char *cflags, loom_target *out,
                             loom_error *err);

/* Load a target (target_load.c).  path_or_name is a JSON file path (it
 * contains a '/' or ends in ".json"), the word "host" -- the calibrated
 * model of this CPU: the cached
 * $LOOM_CACHE/targets/host-<fingerprint>.calN.json (N: the calibration's
 * format) of runtime/target/calibrate.h, measured on first use (one line on stderr
 * says so; LOOM_CALIBRATE=quick measures in quick mode, LOOM_CALIBRATE=off
 * gives loom_target_host's uncalibrated model; a failed calibration falls
 * back to it with a warning) --, or a short name
 * NAME looked up as NAME.json in, in order: $LOOM_TARGETS; the directory of
 * the running binary's ../targets (from /proc/self/exe); ./targets.  A
 * "sim:" prefix is accepted and ignored.  The result is a simulated
 * target handle: kind LOOM_TARGET_SIM, limits and fingerprint filled.
 * Errors: LOOM_ERR_IO (the file cannot be read, is larger than
 * LOOM_TARGET_MAX_BYTES, or no directory holds NAME.json: the message lists
 * where it looked); LOOM_ERR_NOMEM; LOOM_ERR_DATA with
 * err->file set and a message "FILE: $.json.path: what was expected" (not
 * JSON, a missing or unknown key, a value of the wrong type or out of
 * range, sets that are not a positive integer, mixed line sizes, a private
 * cache after a shared one). */
loom_status loom_target_load(const char *path_or_name, loom_target *out, loom_error *err);

#endif
