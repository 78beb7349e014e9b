/* Internal to the trace validator (validate.c, validate_placement.c): what
 * the two files share.  Not a public header (`make install` leaves *_impl.h
 * out). */
#ifndef LOOM_VALIDATE_IMPL_H
#define LOOM_VALIDATE_IMPL_H

#include "validate.h"

/* Fill *v (may be NULL) with rule, stage, loop and the printf-formatted
 * message "RULE: ...", set err to LOOM_ERR_SEMANTIC with the same message;
 * returns LOOM_ERR_SEMANTIC. */
loom_status loom__violate(loom_violation *v, loom_error *err, const char *rule, int stage, int loop,
                          const char *fmt, ...) __attribute__((format(printf, 6, 7)));
#define violate loom__violate

/* The placement rules of block p (validate_placement.c): compute-at-lost,
 * producer-coverage, compute-at-accumulates, compute-at-race,
 * reverse-coverage and rolling-update.  LOOM_OK, or LOOM_ERR_SEMANTIC with
 * *v and err naming the first rule broken. */
loom_status loom__check_placement(const loom_schedule *sch, int p, loom_violation *v, loom_error *err);

/* The fusion-group rule of block p: a fused edge's producer inside its
 * consumer, an unfused edge's producer at the root.  As above. */
loom_status loom__check_fusion_group(const loom_schedule *sch, int p, loom_violation *v, loom_error *err);

#endif
