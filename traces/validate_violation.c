/* The trace validator's violation reports (validate_impl.h loom__violate,
 * validate.h loom_rule_violate): below validate.c and validate_placement.c,
 * which both report through it. */
#include "validate_impl.h"

#include <stdarg.h>
#include <stdio.h>

static loom_status vviolate(loom_violation *v, loom_error *err, const char *rule, int stage, int loop,
                            const char *fmt, va_list ap)
{
    loom_violation tmp;
    if (!v)
        v = &tmp;
    snprintf(v->rule, sizeof v->rule, "%s", rule);
    v->stage = stage;
    v->loop = loop;
    char body[448];
    vsnprintf(body, sizeof body, fmt, ap);
    snprintf(v->msg, sizeof v->msg, "%s: %s", rule, body);
    loom_error_set(err, LOOM_ERR_SEMANTIC, NULL, 0, 0, "%s", v->msg);
    return LOOM_ERR_SEMANTIC;
}

loom_status loom__violate(loom_violation *v, loom_error *err, const char *rule, int stage, int loop,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    loom_status st = vviolate(v, err, rule, stage, loop, fmt, ap);
    va_end(ap);
    return st;
}

loom_status loom_rule_violate(const loom_rule_ctx *c, const char *rule, int loop, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    loom_status st = vviolate(c->v, c->err, rule, c->s, loop, fmt, ap);
    va_end(ap);
    return st;
}
