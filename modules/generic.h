/* loom: a generic random schedule program over the primitives.
 *
 * A design space without analysis, kept as a stress test of the schedule
 * language: tests/test_property.c and bench/bench_replay.c draw from it
 * (`loom sample` draws from the real design spaces, module.h).  For every
 * block, consumers first (MetaSchedule's post-order apply: a block samples
 * its location once its consumer's loops are final):
 *   b = GetBlock; SampleComputeLocation(b) (inline, root or a loop of its first consumer; an inlined
 *   block stops here); loops = GetLoops(b)
 *   for each loop: a position loop over a single compressed pattern gets
 *     v = SampleCategorical([1, 2, 4, 8, 16, 32]) and PosSplit(loop, A, v);
 *     a loop with a static extent > 1 gets v0, v1 = SamplePerfectTile(loop,
 *     2, 64) and Split(loop, v0, v1)
 *   SampleLoopOrder(b) (prior: the current order, weight 0.5)
 *   loops = GetLoops(b); Parallel(outermost) when it iterates a free index
 *   and the block is not placed inside a consumer's loop;
 *   Vectorize(innermost) when its extent is static and at most 64 and it
 *   does not carry a reduction through memory.
 * The last two look at the schedule as the samples left it: a trace of this
 * program is a fixed instruction list whose decisions search mutates, and a
 * mutated decision can make it invalid (the validator says why).
 */
#ifndef LOOM_GENERIC_H
#define LOOM_GENERIC_H

#include "../dsl/schedule/query.h"
#include "../dsl/schedule/schedule.h"

/* Apply the program to every block of sch (which needs an rng).  Errors: the
 * first primitive or sampler error, with the block named. */
loom_status loom_generic_program(loom_schedule *sch, loom_error *err);

#endif
