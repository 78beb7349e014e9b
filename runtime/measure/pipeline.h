/* loom: one fixed schedule end to end -- lower, generate C, build, measure,
 * check against the reference.  This is what `loom run` does, and what
 * benchmarks and tests call.  A layer above batch.h: a pipeline run is a
 * batch of one (loom_run_opts and loom_run_result are declared there).
 */
#ifndef LOOM_PIPELINE_H
#define LOOM_PIPELINE_H

#include "../../dsl/schedule/schedule.h"
#include "batch.h"

/* Generate the C source of the program's default loop nest (DESIGN.md:
 * loops in the order of the index variables, position loops for compressed
 * levels, computed bounds for causal/band; the outermost free loop parallel
 * unless `serial`).  *src is malloc'd; the caller frees it.
 * Errors: LOOM_ERR_UNSUPPORTED / LOOM_ERR_SEMANTIC with the reason (e.g. no
 * concordant loop order exists), LOOM_ERR_NOMEM. */
loom_status loom_pipeline_source(const loom_program *prog, int serial, char **src, loom_error *err);

/* The C source of a given schedule (lowered, generated).  *src is
 * malloc'd.  Errors: those of loom_lower, LOOM_ERR_NOMEM. */
loom_status loom_pipeline_schedule_source(const loom_schedule *sch, char **src, loom_error *err);

/* As loom_pipeline_run, for a given schedule of the data set's program. */
loom_status loom_pipeline_run_schedule(const loom_schedule *sch, loom_dataset *ds, const loom_reference *ref,
                                       const loom_run_opts *opts, loom_run_result *res, loom_error *err);

/* Generate, build, measure in a child process, and check the outputs.
 * `ref` may be NULL: the reference is then computed (and freed) here.
 * Returns LOOM_OK when a result was produced (res->status says whether the
 * kernel built, ran and was correct); another status with err filled only
 * when the pipeline itself could not run (e.g. lowering failed). */
loom_status loom_pipeline_run(const loom_program *prog, loom_dataset *ds, const loom_reference *ref,
                              const loom_run_opts *opts, loom_run_result *res, loom_error *err);

#endif
