/* loom: data-set internals shared by dataset.c and limits.c (not installed). */
#ifndef LOOM_DATASET_INTERNAL_H
#define LOOM_DATASET_INTERNAL_H

#include "dataset.h"

/* Before anything is allocated: the bytes every tensor of the bound program
 * will take (inputs from coo[t] when has_file[t], generated, computed
 * patterns, outputs), checked against loom_data_max_bytes(), every computed
 * pattern against int32 positions, and every file's position arrays against
 * loom_pos_array_check.  path[t] names the file of tensor t.  Errors:
 * LOOM_ERR_BIND / LOOM_ERR_DATA naming the tensor, its sizes and where each
 * came from (--param, the data file), and the limit. */
loom_status loom__dataset_plan(const loom_program *prog, const loom_coo *coo, const int *has_file,
                               const char *const *path, loom_error *err);

#endif
