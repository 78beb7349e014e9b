/* The target's vector shape (issue 12): detected at run time, read from
 * target files, and followed by the fused attention lowering.
 *
 *  - loom_limits_host / loom_target_host agree with /proc/cpuinfo's flags
 *    (avx512f -> 512 bits, 32 registers; avx2 -> 256, 16), whatever -march
 *    libloom was compiled with;
 *  - "vector_registers" and "fma" in a target file are parsed, defaulted
 *    from the vector width, and bad values refused naming the key;
 *  - loom_register_tile's cuts fit the register file and divide the tile;
 *  - the fused kernel shaped for an AVX2 target (zen3-2c: 8 lanes, 16
 *    registers) and for an AVX-512 one (spr-2c: 16, 32) both compile and
 *    match the reference interpreter (which shares no code with the
 *    lowering), and their register tiles and lane accumulators differ (read
 *    from the generated C); the AVX2 kernel runs here because generated C
 *    is compiled with -march=native on an AVX-512 host;
 *  - the attention-fusion module annotates its target's shape, and the
 *    validator refuses a schedule shaped for more registers than the
 *    target has (rule register-tile). */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/ir/limits.h"
#include "../dsl/schedule/query.h"
#include "../dsl/schedule/schedule.h"
#include "../modules/module.h"
#include "../runtime/lower/lower.h"
#include "../runtime/measure/pipeline.h"
#include "../runtime/target/target.h"
#include "../traces/validate.h"
#include "fixture.h"

/* The flags line of /proc/cpuinfo has ` name` (space-separated words). */
static int cpuinfo_has(const char *flag)
{
    FILE *fp = fopen("/proc/cpuinfo", "r");
    cr_assert_not_null(fp);
    char line[8192];
    int found = 0;
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, "flags", 5))
            continue;
        char *save = NULL;
        const char *c = strchr(line, ':');
        for (char *w = strtok_r((char *)(c ? c + 1 : line), " \n", &save); w; w = strtok_r(NULL, " \n", &save))
            found |= !strcmp(w, flag);
        break;
    }
    fclose(fp);
    return found;
}

Test(target_shape, host_detection_matches_cpuinfo)
{
    unsetenv("LOOM_HOST_ISA");
    loom_limits l = loom_limits_host();
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_host(&t, &err), LOOM_OK);
    int avx512 = cpuinfo_has("avx512f"), avx2 = cpuinfo_has("avx2"), fma = cpuinfo_has("fma");
    printf("target_shape: host %s: %d lanes, %d vector registers, fma %d (cpuinfo avx512f %d avx2 %d fma %d)\n",
           loom_limits_host_isa(), l.vector_lanes, l.vector_registers, l.fma, avx512, avx2, fma);
    if (avx512) {
        cr_expect_eq(l.vector_lanes, 16);
        cr_expect_eq(l.vector_registers, 32);
        cr_expect_str_eq(loom_limits_host_isa(), "AVX-512");
    } else if (avx2) {
        cr_expect_eq(l.vector_lanes, 8);
        cr_expect_eq(l.vector_registers, 16);
        cr_expect_str_eq(loom_limits_host_isa(), "AVX2");
    } else {
        cr_expect_leq(l.vector_lanes, 8);
        cr_expect_eq(l.vector_registers, 16);
    }
    cr_expect_eq(l.fma, fma || avx512);
    cr_expect_eq(t.vector_bits, 32 * l.vector_lanes, "the host target and the host limits agree");
    cr_expect_eq(t.vector_registers, l.vector_registers);
    cr_expect_eq(t.fma, l.fma);
    loom_limits tl = loom_target_limits(&t);
    cr_expect_eq(tl.vector_lanes, l.vector_lanes);
    cr_expect_eq(tl.vector_registers, l.vector_registers);
    /* the override, for a narrower machine's shapes */
    setenv("LOOM_HOST_ISA", "avx2", 1);
    loom_limits n = loom_limits_host();
    unsetenv("LOOM_HOST_ISA");
    cr_expect(n.vector_lanes == 8 && n.vector_registers == 16 && n.fma == 1);
}

#define HEAD "{\"name\": \"x\", \"cores\": 2, \"vector_bits\": %d, \"fma_units\": 2, \"ghz\": 2, %s"
#define TAIL "\"caches\": [{\"size\": 32768, \"assoc\": 8, \"line\": 64, \"latency\": 4, \"shared\": false}], " \
             "\"memory\": {\"bandwidth\": 2e10, \"latency_ns\": 100}}"

static loom_status parse_with(int bits, const char *extra, loom_target *t, loom_error *err)
{
    char json[1024];
    snprintf(json, sizeof json, HEAD TAIL, bits, extra);
    loom_error_clear(err);
    return loom_target_parse(json, "targets/x.json", t, err);
}

static void refused(int bits, const char *extra, const char *expect)
{
    loom_target t;
    loom_error err;
    cr_expect_eq(parse_with(bits, extra, &t, &err), LOOM_ERR_DATA, "accepted: %s", extra);
    cr_expect(strstr(err.msg, expect) != NULL, "message \"%s\" lacks \"%s\"", err.msg, expect);
    cr_expect(strncmp(err.msg, "targets/x.json", 14) == 0, "message \"%s\" does not name the file", err.msg);
}

Test(target_shape, vector_registers_in_target_files)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(parse_with(256, "\"vector_registers\": 16, \"fma\": false, ", &t, &err), LOOM_OK, "%s", err.msg);
    cr_expect_eq(t.vector_registers, 16);
    cr_expect_eq(t.fma, 0);
    loom_limits l = loom_target_limits(&t);
    cr_expect(l.vector_lanes == 8 && l.vector_registers == 16 && l.fma == 0);
    /* defaults from the width */
    cr_assert_eq(parse_with(512, "", &t, &err), LOOM_OK, "%s", err.msg);
    cr_expect(t.vector_registers == 32 && t.fma == 1);
    cr_assert_eq(parse_with(256, "", &t, &err), LOOM_OK, "%s", err.msg);
    cr_expect(t.vector_registers == 16 && t.fma == 1);
    /* a non-default register count changes the fingerprint, the default does not */
    loom_target a, b;
    char fa[96], fb[96];
    cr_assert_eq(parse_with(256, "", &a, &err), LOOM_OK);
    cr_assert_eq(parse_with(256, "\"vector_registers\": 16, ", &b, &err), LOOM_OK);
    loom_target_fingerprint(&a, fa, sizeof fa);
    loom_target_fingerprint(&b, fb, sizeof fb);
    cr_expect_str_eq(fa, fb);
    cr_assert_eq(parse_with(256, "\"vector_registers\": 32, ", &b, &err), LOOM_OK);
    loom_target_fingerprint(&b, fb, sizeof fb);
    cr_expect_str_neq(fa, fb);
    /* bad values */
    refused(512, "\"vector_registers\": 0, ", "$.vector_registers: expected a positive integer");
    refused(512, "\"vector_registers\": 2, ", "$.vector_registers: expected at least 4");
    refused(512, "\"vector_registers\": 16.5, ", "$.vector_registers: expected a positive integer");
    refused(512, "\"vector_registers\": \"32\", ", "$.vector_registers: expected a positive integer");
    refused(512, "\"vector_registers\": 4096, ", "$.vector_registers: expected a positive integer at most 256");
    refused(512, "\"fma\": 1, ", "$.fma: expected true or false");
    /* the shipped files */
    cr_assert_eq(loom_target_load("targets/zen3-2c.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_expect(t.vector_bits == 256 && t.vector_registers == 16 && t.fma == 1);
    cr_assert_eq(loom_target_load("targets/spr-2c.json", &t, &err), LOOM_OK, "%s", err.msg);
    cr_expect(t.vector_bits == 512 && t.vector_registers == 32 && t.fma == 1);
}

Test(target_shape, register_tiles_fit_the_register_file)
{
    const int shapes[][2] = {{4, 16}, {8, 16}, {16, 32}, {32, 32}};
    const int64_t rows[] = {1, 2, 3, 4, 8, 16, 32}, widths[] = {16, 32, 48, 64, 128, 256};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        loom_limits l = {.vector_lanes = shapes[s][0], .vector_registers = shapes[s][1]};
        for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
            for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
                int64_t rg, ch;
                int cut = loom_register_tile(&l, rows[r], widths[w], &rg, &ch);
                int64_t whole = loom_register_tile_cost(&l, rows[r], widths[w]);
                cr_expect_eq(cut, whole > shapes[s][1], "cut iff the whole tile does not fit");
                cr_expect(rg >= 1 && rows[r] % rg == 0 && ch >= 1 && widths[w] % ch == 0);
                cr_expect(ch % shapes[s][0] == 0 || ch == widths[w], "a chunk is whole vectors");
                /* the cut fits (one row of one vector always does with 4+ registers) */
                cr_expect_leq(loom_register_tile_cost(&l, rg, ch), shapes[s][1], "%d lanes %d regs: %lldx%lld -> %lldx%lld",
                              shapes[s][0], shapes[s][1], (long long)rows[r], (long long)widths[w], (long long)rg,
                              (long long)ch);
                if (!cut)
                    cr_expect(rg == rows[r] && ch == widths[w]);
            }
    }
}

/* ---- the fused kernel on two targets ----------------------------------- */

/* FlashAttention's schedule on attention.loom (as test_fusion_tile.c), the
 * rolled loop annotated with the tiles (0: none) and target t's shape. */
static void flash(loom_schedule *sch, int rt, int kt, const loom_limits *t)
{
    loom_error err;
    int m, S, P, l, O, loops[LOOM_MAX_LOOPS], n, sl[LOOM_MAX_LOOPS], ns, order[LOOM_MAX_LOOPS], k = 0;
    cr_assert_eq(loom_get_block(sch, "m", &m, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_block(sch, "S", &S, &err), LOOM_OK);
    cr_assert_eq(loom_get_block(sch, "P", &P, &err), LOOM_OK);
    cr_assert_eq(loom_get_block(sch, "l", &l, &err), LOOM_OK);
    cr_assert_eq(loom_get_block(sch, "O", &O, &err), LOOM_OK);
    cr_assert_eq(loom_get_loops(sch, m, loops, &n, &err), LOOM_OK);
    cr_assert_eq(loom_parallel(sch, loops[0], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(sch, S, sl, &ns, &err), LOOM_OK);
    int sstage = sch->rvs[S].stage;
    for (int red = 0; red < 2; red++)
        for (int q = 0; q < ns; q++)
            if (loom_iter_reduces(sch, sstage, sch->rvs[sl[q]].iter) == red)
                order[k++] = sl[q];
    cr_assert_eq(loom_reorder(sch, order, ns, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_compute_at(sch, S, loops[n - 1], &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_compute_inline(sch, P, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_rolling_update(sch, l, loops[n - 1], -1, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_rolling_update(sch, O, loops[n - 1], -1, &err), LOOM_OK, "%s", err.msg);
    if (rt)
        cr_assert_eq(loom_annotate(sch, loops[n - 1], LOOM_ANN_ROW_TILE, -1, rt, &err), LOOM_OK, "%s", err.msg);
    if (kt)
        cr_assert_eq(loom_annotate(sch, loops[n - 1], LOOM_ANN_KEY_TILE, -1, kt, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_annotate(sch, loops[n - 1], LOOM_ANN_VECTOR_LANES, -1, t->vector_lanes, &err), LOOM_OK);
    cr_assert_eq(loom_annotate(sch, loops[n - 1], LOOM_ANN_VECTOR_REGISTERS, -1, t->vector_registers, &err),
                 LOOM_OK);
}

static loom_limits limits_of(const char *name)
{
    loom_target t;
    loom_error err;
    cr_assert_eq(loom_target_load(name, &t, &err), LOOM_OK, "%s", err.msg);
    return loom_target_limits(&t);
}

/* Build and run sch (valid on lim), check it against the reference; the
 * generated C (caller frees). */
static char *checked_source(loom_schedule *sch, loom_dataset *ds, const loom_limits *lim, const char *what)
{
    loom_violation v;
    loom_error err;
    cr_assert_eq(loom_validate(sch, lim, &v, NULL), LOOM_OK, "%s: %s", what, v.msg);
    char *src = NULL;
    cr_assert_eq(loom_pipeline_schedule_source(sch, &src, &err), LOOM_OK, "%s: %s", what, err.msg);
    fx_run_checked(sch, ds, what);
    return src;
}

/* The size of the first local array declared as `float NAME...[n]` whose
 * name starts with prefix, -1 when none. */
static long local_array_size(const char *src, const char *prefix)
{
    char pat[64];
    snprintf(pat, sizeof pat, "float %s", prefix);
    const char *p = strstr(src, pat);
    if (!p)
        return -1;
    const char *b = strchr(p, '[');
    return b ? strtol(b + 1, NULL, 10) : -1;
}

static int count(const char *src, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(src, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(target_shape, fused_kernel_follows_the_target, .timeout = 300)
{
    const char *params[] = {"N=100", NULL};
    fx_loaded L = fx_load("workloads/attention.loom", NULL, NULL, params, 5);
    loom_limits avx2 = limits_of("zen3-2c"), avx512 = limits_of("spr-2c");
    cr_assert(avx2.vector_lanes == 8 && avx2.vector_registers == 16);
    cr_assert(avx512.vector_lanes == 16 && avx512.vector_registers == 32);
    loom_schedule *sch = malloc(sizeof *sch);
    loom_error err;
    char *src[2][2];
    const loom_limits *T[2] = {&avx2, &avx512};
    for (int t = 0; t < 2; t++)
        for (int tiled = 0; tiled < 2; tiled++) {
            char what[96];
            snprintf(what, sizeof what, "%s, %s", t ? "AVX-512 (spr-2c)" : "AVX2 (zen3-2c)",
                     tiled ? "tiled 16 x 32" : "untiled");
            cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK, "%s", err.msg);
            flash(sch, tiled ? 16 : 0, tiled ? 32 : 0, T[t]);
            src[t][tiled] = checked_source(sch, L.ds, T[t], what);
            const char *dump = getenv("LOOM_TEST_DUMP_DIR"); /* to read the kernels */
            if (dump) {
                char path[512];
                snprintf(path, sizeof path, "%s/fused_%s_%s.c", dump, t ? "avx512" : "avx2", tiled ? "tiled" : "untiled");
                FILE *fp = fopen(path, "w");
                if (fp) {
                    fputs(src[t][tiled], fp);
                    fclose(fp);
                }
            }
        }
    /* untiled: two vectors of lane accumulators for the dot product over
     * D = 64 (two FMA chains): 2 x 8 on AVX2, 2 x 16 on AVX-512 */
    long l2 = local_array_size(src[0][0], "lanes"), l5 = local_array_size(src[1][0], "lanes");
    cr_expect_eq(l2, 2 * avx2.vector_lanes, "AVX2: 2 x 8 lane accumulators (got %ld)", l2);
    cr_expect_eq(l5, 2 * avx512.vector_lanes, "AVX-512: 2 x 16 lane accumulators (got %ld)", l5);
    /* tiled 16 x 32: loom__fu_regtile_shape (lower_fusion_regtile.c) picks
     * the register tile with the fewest operand loads that fits the
     * target's registers.  AVX2 (8 lanes, 16 registers): the 32 keys are 4
     * vectors and a two-vector tile would need groups of >= 6 rows with
     * 2 x 6 + 3 <= 16 registers, which 16 rows cannot split into, so it
     * keeps one accumulator per row (GCC vectorizes each over the width) in
     * two row groups of 8 (loom_register_tile: 16 rows + 2 do not fit 16
     * registers).  AVX-512 (16 lanes, 32 registers): two row groups of 8
     * rows x 2 vectors -- each broadcast feeds two FMAs --, so 2 score
     * tiles of 16 accumulators, and O's 64 columns (4 vectors) in 2 chunks
     * of 2 vectors per row group: 4 output tiles of 16. */
    int64_t rg, ch;
    cr_assert_eq(loom_register_tile(&avx2, 16, avx2.vector_lanes, &rg, &ch), 1);
    cr_assert_eq(rg, 8);
    cr_expect_eq(count(src[0][1], "score register tile"), 2, "AVX2: not two row groups of the score tile in\n%s", src[0][1]);
    cr_expect_eq(count(src[0][1], "output register tile"), 2, "AVX2: not two row groups of O's tile");
    cr_expect_eq(count(src[0][1], "one vector each"), 4, "AVX2: not one vector per row");
    cr_expect_eq(count(src[0][1], "float sacc"), 16, "AVX2: 16 score accumulators");
    cr_expect_eq(count(src[0][1], "float oacc"), 16, "AVX2: 16 output accumulators");
    cr_expect_eq(count(src[1][1], "score register tile: rows 0-7 x 2 vectors"), 1, "AVX-512: score tile\n%s", src[1][1]);
    cr_expect_eq(count(src[1][1], "score register tile: rows 8-15 x 2 vectors"), 1, "AVX-512: score tile");
    cr_expect_eq(count(src[1][1], "output register tile"), 4, "AVX-512: O's tiles");
    cr_expect_eq(count(src[1][1], "float sacc"), 32, "AVX-512: 32 score accumulators");
    cr_expect_eq(count(src[1][1], "float oacc"), 64, "AVX-512: 64 output accumulators");
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 2; k++)
            free(src[t][k]);
    /* a schedule shaped for AVX-512 is refused on the AVX2 target */
    cr_assert_eq(loom_schedule_init(sch, L.prog, NULL, &err), LOOM_OK);
    flash(sch, 16, 32, &avx512);
    loom_violation v;
    cr_assert_eq(loom_validate(sch, &avx2, &v, NULL), LOOM_ERR_SEMANTIC);
    cr_expect_str_eq(v.rule, "register-tile", "%s", v.msg);
    cr_expect_eq(loom_validate(sch, &avx512, &v, NULL), LOOM_OK, "%s", v.msg);
    free(sch);
    fx_unload(&L);
}

/* The module writes its target's shape on the rolled loop. */
Test(target_shape, module_annotates_the_targets_shape, .timeout = 300)
{
    const char *params[] = {"N=64", NULL};
    fx_loaded L = fx_load("workloads/attention.loom", NULL, NULL, params, 5);
    const char *names[] = {"zen3-2c", "spr-2c"};
    for (int t = 0; t < 2; t++) {
        loom_limits lim = limits_of(names[t]);
        loom_registry *reg = loom_registry_new();
        loom_space *sp = NULL;
        loom_error err;
        cr_assert_eq(loom_space_new(reg, NULL, "cpu", &sp, &err), LOOM_OK, "%s", err.msg);
        loom_space_set_limits(sp, &lim);
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        loom_schedule *sch = malloc(sizeof *sch);
        int fused = 0;
        for (int d = 1; d <= 40; d++) {
            gsl_rng_set(rng, (unsigned long)d);
            cr_assert_eq(loom_schedule_init(sch, L.prog, rng, &err), LOOM_OK);
            cr_assert_eq(loom_space_apply(sp, sch, &err), LOOM_OK, "%s", err.msg);
            for (int s = 0; s < sch->nstages; s++) {
                const loom_stage *S = &sch->stages[s];
                for (int p = 0; p < S->nloops; p++) {
                    int64_t lanes = 0, regs = 0;
                    for (int k = 0; k < S->loops[p].nann; k++) {
                        if (!strcmp(S->loops[p].ann[k].key, LOOM_ANN_VECTOR_LANES))
                            lanes = S->loops[p].ann[k].value;
                        if (!strcmp(S->loops[p].ann[k].key, LOOM_ANN_VECTOR_REGISTERS))
                            regs = S->loops[p].ann[k].value;
                    }
                    if (!lanes && !regs)
                        continue;
                    fused++;
                    cr_expect_eq(lanes, lim.vector_lanes, "%s", names[t]);
                    cr_expect_eq(regs, lim.vector_registers, "%s", names[t]);
                }
            }
        }
        cr_expect_gt(fused, 0, "%s: no draw annotated a rolled loop", names[t]);
        free(sch);
        gsl_rng_free(rng);
        loom_space_free(sp);
        loom_registry_free(reg);
    }
    fx_unload(&L);
}
