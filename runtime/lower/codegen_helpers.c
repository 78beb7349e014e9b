/* The C text of the helpers a generated kernel defines when it uses them
 * (codegen.c prints them after the ABI): the streaming copy, zero fill and
 * fence of LIR_S_STREAM, and the lanes of a tree reduction. */
#include "codegen_helpers.h"

/* The streaming copy and fence of LIR_S_STREAM (issue 13): ordinary stores
 * up to the first address aligned to the vector width and after the last
 * whole vector, non-temporal vector stores between; the width is the ISA's
 * the kernel is compiled for (AVX-512, AVX, SSE; plain stores elsewhere).
 *
 * And the zero fill of a large workspace in a file that streams
 * (loom_stream_zero; which fills, stream_zero_fill): vector stores GCC
 * cannot merge into a memset.  GCC 12 expands a memset of a
 * few hundred bytes (a workspace row) as `rep stosq` (under -march=native
 * on Emerald Rapids and under generic tuning; not under Ice Lake's),
 * and a fast-string store waits for the non-temporal stores before it to
 * reach memory.  Measured on Emerald Rapids (2026-11-30, one thread, 10 MiB
 * of C): non-temporal stores 2.6 ns a line as a pure stream, 21 ns a line
 * with a 512-byte `rep stos` every 8 lines, 2.6 ns with the same zeros
 * stored by a vector loop; the PubMed F = 128 SpMM schedule that streams
 * its C ran 2.34 ms with memset, 1.04 ms without, against 1.26 ms for the
 * same schedule with ordinary stores (docs/simulator.md, "Non-temporal
 * stores and rep stos").  The empty asm makes the pointer opaque at each
 * vector, so the stores cannot be recognised as one memset.
 *
 * The copy's scalar head and tail carry the same empty asm: GCC 12 turns a
 * plain element-copy loop into a memcpy, and under the AVX2 / SSE flags'
 * -mmemcpy-strategy=vector_loop (runtime/measure/build.c) a copy that short
 * becomes a loop of one-byte moves -- 28 for a 7-float row, about 140
 * instructions.  A gcn2 schedule on Cora whose H2 rows (7 floats) stream
 * ran 208 us with it, 176 us without (the least of five interleaved runs
 * each; AVX2 flags, Emerald Rapids,
 * 2026-12-02; tests/test_stream.c copy_head_and_tail_are_element_moves).
 *
 * A copy of whole vectors to an aligned row takes its own loop first: with
 * n a literal GCC 12 then stores a guarded row's workspace registers (lir.h
 * loom_lir_workspace_row_loop) straight from the registers; behind the
 * alignment head its AVX2 code went through the stack (the AVX-512 build
 * versioned the head away).  Zen 4, 2 threads, a streamed SpMM F = 32
 * kernel of loom's in a standalone driver, the fastest of 200 runs: AVX2
 * bcsstk16 0.96x, Cora 0.87x, Facebook 0.93x; AVX-512 0.97-1.01x. */
const char loom__codegen_stream_helpers[] =
    "#if defined(__x86_64__) || defined(__i386__)\n#include <immintrin.h>\n#endif\n"
    "#if defined(__AVX512F__)\n#define LOOM_SW 16\n#define LOOM_STREAM(d, s) _mm512_stream_ps((d), _mm512_loadu_ps(s))\n"
    "#define LOOM_ZERO(d) _mm512_storeu_ps((d), _mm512_setzero_ps())\n"
    "#elif defined(__AVX__)\n#define LOOM_SW 8\n#define LOOM_STREAM(d, s) _mm256_stream_ps((d), _mm256_loadu_ps(s))\n"
    "#define LOOM_ZERO(d) _mm256_storeu_ps((d), _mm256_setzero_ps())\n"
    "#elif defined(__SSE__)\n#define LOOM_SW 4\n#define LOOM_STREAM(d, s) _mm_stream_ps((d), _mm_loadu_ps(s))\n"
    "#define LOOM_ZERO(d) _mm_storeu_ps((d), _mm_setzero_ps())\n"
    "#endif\n"
    "static inline void loom_stream_zero(float *d, int64_t n)\n{\n"
    "    int64_t i = 0;\n#ifdef LOOM_SW\n"
    "    for (; i + LOOM_SW <= n; i += LOOM_SW) {\n        LOOM_ZERO(d + i);\n        __asm__(\"\" : \"+r\"(d));\n    }\n"
    "#endif\n"
    "    for (; i < n; i++) {\n        d[i] = 0;\n        __asm__(\"\" : \"+r\"(d));\n    }\n}\n"
    "static inline void loom_stream_copy(float *restrict d, const float *restrict s, int64_t n)\n{\n"
    "    int64_t i = 0;\n#ifdef LOOM_SW\n"
    "    if (!((uintptr_t)d & (LOOM_SW * sizeof(float) - 1)) && n % LOOM_SW == 0) {\n"
    "        for (; i < n; i += LOOM_SW)\n            LOOM_STREAM(d + i, s + i);\n        return;\n    }\n"
    "    for (; i < n && ((uintptr_t)(d + i) & (LOOM_SW * sizeof(float) - 1)); i++) {\n        d[i] = s[i];\n        __asm__(\"\" : \"+r\"(d));\n    }\n"
    "    for (; i + LOOM_SW <= n; i += LOOM_SW)\n        LOOM_STREAM(d + i, s + i);\n#endif\n"
    "    for (; i < n; i++) {\n        d[i] = s[i];\n        __asm__(\"\" : \"+r\"(d));\n    }\n}\n"
    "static inline void loom_stream_fence(void)\n{\n#ifdef LOOM_SW\n    _mm_sfence();\n#endif\n}\n\n";

/* The lanes of a tree reduction (codegen.c tree_reduction): the vector width in
 * floats of the ISA the file is compiled for, for a shorter loop the
 * largest power of two it holds (at least 4); and the last 4 lanes combined
 * by shuffles in registers (GNU vector extensions: GCC >= 12 and clang have
 * __builtin_shufflevector), or in scalars elsewhere.  A max selects with
 * a vector compare and masks (C has no vector `?:`); GCC 12 makes it a
 * compare and a masked move.  As scalars from the array GCC stores the 4
 * lanes and reloads each (a store-forwarding stall, for sums and maxes). */
const char loom__codegen_tree_helpers[] =
    "#if defined(__AVX512F__)\n#define LOOM_RL 16\n#elif defined(__AVX__)\n#define LOOM_RL 8\n#else\n#define LOOM_RL 4\n"
    "#endif\n#define LOOM_RW(n) ((n) >= LOOM_RL ? LOOM_RL : (n) >= 8 ? 8 : 4)\n"
    "#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)\n"
    "typedef float loom_v4sf __attribute__((vector_size(16)));\n"
    "typedef int32_t loom_v4si __attribute__((vector_size(16)));\n"
    "static inline float loom_hsum4(const float *p)\n{\n    loom_v4sf v;\n    memcpy(&v, p, sizeof v);\n"
    "    v = v + __builtin_shufflevector(v, v, 2, 3, 0, 1);\n"
    "    v = v + __builtin_shufflevector(v, v, 1, 0, 3, 2);\n    return v[0];\n}\n"
    "static inline loom_v4sf loom_vmax4(loom_v4sf a, loom_v4sf b)\n{\n"
    "    loom_v4si m = a > b; /* LOOM_MAX lane by lane: a where a > b, else b */\n"
    "    return (loom_v4sf)((m & (loom_v4si)a) | (~m & (loom_v4si)b));\n}\n"
    "static inline float loom_hmax4(const float *p)\n{\n    loom_v4sf v;\n    memcpy(&v, p, sizeof v);\n"
    "    v = loom_vmax4(v, __builtin_shufflevector(v, v, 2, 3, 0, 1));\n"
    "    v = loom_vmax4(v, __builtin_shufflevector(v, v, 1, 0, 3, 2));\n    return v[0];\n}\n"
    "#else\nstatic inline float loom_hsum4(const float *p) { return (p[0] + p[2]) + (p[1] + p[3]); }\n"
    "static inline float loom_hmax4(const float *p) { return LOOM_MAX(LOOM_MAX(p[0], p[2]), LOOM_MAX(p[1], p[3])); }\n"
    "#endif\n\n";
