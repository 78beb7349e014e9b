/* loom: runtime/machine's private helpers (machine.c). */
#ifndef LOOM_MACHINE_INTERNAL_H
#define LOOM_MACHINE_INTERNAL_H

#include "machine.h"

/* Make t (a parsed or detected machine model) a simulated target handle:
 * kind LOOM_TARGET_SIM, limits loom_target_limits(t), fingerprint
 * loom_target_fingerprint(t). */
void loom__target_finish_sim(loom_target *t);

#endif
