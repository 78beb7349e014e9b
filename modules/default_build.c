/* "The default schedule" of a workload on a target (module.h:
 * loom_default_build; docs/modules.md "The default schedule"): the design
 * space's default (registry.c, loom_space_default) when it is a valid trace
 * of the space, else modules/default.c's schedule, both shaped and validated
 * by the target's limits.  One function, so that `loom run`, a campaign's
 * baseline and first record, bench/ and navigation all mean the same
 * kernel (issue 32: `loom run` built modules/default.c's while a campaign
 * built the space's, and the two GCN kernels measured 2.8x apart). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"
#include "../traces/validate.h"

/* Whether the space's default of prog applies and validates with the
 * space's limits, built on a scratch schedule so that a caller's recorder
 * sees only the schedule kept: *ok 1, or 0 with why_not (n bytes) saying
 * why not.  Returns LOOM_OK, or LOOM_ERR_NOMEM / loom_schedule_init's error
 * (the fallback would meet them too). */
static loom_status space_default_valid(const loom_space *space, const loom_program *prog, int *ok, char *why_not,
                                       size_t n, loom_error *err)
{
    *ok = 0;
    loom_schedule *scratch = malloc(sizeof *scratch);
    if (!scratch)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = loom_schedule_init(scratch, prog, NULL, err);
    if (!st) {
        loom_error e;
        loom_error_clear(&e);
        loom_violation v;
        loom_status ds = loom_space_default(space, scratch, &e);
        if (ds == LOOM_ERR_NOMEM)
            st = loom_error_set(err, ds, NULL, 0, 0, "%s", e.msg);
        else if (ds)
            snprintf(why_not, n, "%s", e.msg);
        else if (loom_validate(scratch, loom_space_limits(space), &v, NULL) != LOOM_OK)
            snprintf(why_not, n, "the space's default is invalid: %s", v.msg);
        else
            *ok = 1;
    }
    free(scratch);
    return st;
}

loom_status loom_default_build(const loom_space *space, const loom_limits *lim, loom_schedule *sch,
                               loom_default_info *info, loom_error *err)
{
    loom_default_info local;
    if (!info)
        info = &local;
    memset(info, 0, sizeof *info);
    if (space && lim)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_default_build: give the target's limits to the space (loom_space_set_limits), "
                              "not both a space and limits");
    loom_registry *reg = NULL;
    loom_space *own = NULL;
    loom_status st = LOOM_OK;
    if (!space) { /* the built-in modules' default list */
        reg = loom_registry_new();
        if (!reg)
            return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
        st = loom_space_new(reg, NULL, "cpu", &own, err);
        if (!st && lim)
            loom_space_set_limits(own, lim);
        space = own;
    }
    if (!st) {
        info->limits = *loom_space_limits(space);
        st = space_default_valid(space, sch->prog, &info->in_space, info->why_not, sizeof info->why_not, err);
    }
    if (!st)
        st = info->in_space ? loom_space_default(space, sch, err)
                            : loom_default_schedule_for(sch, &info->limits, err);
    loom_space_free(own);
    loom_registry_free(reg);
    return st;
}
