/* The C text of generated kernels' helpers (codegen_helpers.c), for
 * codegen.c: internal to runtime/lower. */
#ifndef LOOM_LOWER_CODEGEN_HELPERS_H
#define LOOM_LOWER_CODEGEN_HELPERS_H

/* loom_stream_zero, loom_stream_copy and loom_stream_fence, and the
 * LOOM_SW / LOOM_STREAM / LOOM_ZERO macros they use (x86 intrinsics;
 * plain loops elsewhere): printed into a kernel with a LIR_S_STREAM or a
 * streamed zero fill. */
extern const char loom__codegen_stream_helpers[];

/* LOOM_RL / LOOM_RW and the lane shuffles of codegen.c's tree reductions:
 * printed into a kernel with one. */
extern const char loom__codegen_tree_helpers[];

#endif
