/* loom: runtime/target's private helpers (target.c, target_open.c). */
#ifndef LOOM_TARGET_INTERNAL_H
#define LOOM_TARGET_INTERNAL_H

#include "target.h"

/* Make t (a parsed or detected machine model) a simulated target handle:
 * kind LOOM_TARGET_SIM, limits loom_target_limits(t), fingerprint
 * loom_target_fingerprint(t). */
void loom__target_finish_sim(loom_target *t);

#endif
