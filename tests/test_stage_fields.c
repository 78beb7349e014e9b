/* A stage's state described once (dsl/schedule/schedule.h LOOM_STAGE_FIELDS):
 * init, hash, equality and remapping go over the field table, so a field
 * described there is covered by all four. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../dsl/schedule/schedule.h"

static loom_schedule *fresh(loom_program **prog)
{
    loom_error err;
    cr_assert_eq(loom_program_parse_file("workloads/spmm.loom", prog, &err), LOOM_OK, "%s", err.msg);
    for (int z = 0; z < (*prog)->nsizes; z++)
        if (!(*prog)->sizes[z].bound)
            cr_assert_eq(loom_program_bind_size(*prog, (*prog)->sizes[z].name, 64, "test", &err), LOOM_OK);
    cr_assert_eq(loom_program_finish_binding(*prog, &err), LOOM_OK, "%s", err.msg);
    loom_schedule *s = malloc(sizeof *s);
    cr_assert_eq(loom_schedule_init(s, *prog, NULL, &err), LOOM_OK, "%s", err.msg);
    return s;
}

Test(stage_fields, the_table_describes_every_scalar_field_once)
{
    int n = loom_stage_field_count();
    cr_assert_geq(n, 11);
    cr_assert_null(loom_stage_field_at(n));
    for (int f = 0; f < n; f++) {
        const loom_stage_field *F = loom_stage_field_at(f);
        cr_assert(F->name && F->doc && F->doc[0], "row %d", f);
        cr_assert(F->offset > offsetof(loom_stage, stmt) && F->offset < offsetof(loom_stage, niters), "%s", F->name);
        for (int g = 0; g < f; g++)
            cr_assert_neq(loom_stage_field_at(g)->offset, F->offset, "%s described twice", F->name);
    }
    /* the rows cover every int between stmt and niters */
    cr_assert_eq((size_t)n * sizeof(int), offsetof(loom_stage, niters) - offsetof(loom_stage, stmt) - sizeof(int));
}

Test(stage_fields, init_sets_every_field_to_its_initial_value)
{
    loom_program *p;
    loom_schedule *s = fresh(&p);
    for (int st = 0; st < s->nstages; st++)
        for (int f = 0; f < loom_stage_field_count(); f++) {
            const loom_stage_field *F = loom_stage_field_at(f);
            cr_assert_eq(loom_stage_field_get(&s->stages[st], F), F->init, "stage %d field %s", st, F->name);
        }
    free(s);
    loom_program_free(p);
}

/* Two schedules differing in any one described field hash and compare
 * differently, unless the row says the field is not the structure. */
Test(stage_fields, hash_and_equality_cover_every_field)
{
    loom_program *p;
    loom_schedule *a = fresh(&p), *b = malloc(sizeof *b);
    uint64_t h0 = loom_schedule_hash(a);
    for (int f = 0; f < loom_stage_field_count(); f++) {
        const loom_stage_field *F = loom_stage_field_at(f);
        for (int delta = 1; delta <= 2; delta++) {
            loom_schedule_copy(b, a);
            cr_assert(loom_schedule_equal(a, b));
            *loom_stage_field_ptr(&b->stages[0], F) = F->init + delta;
            if (F->identity == LOOM_FIELD_NOT_HASHED) {
                cr_assert(loom_schedule_equal(a, b), "%s is not the structure", F->name);
                cr_assert_eq(loom_schedule_hash(b), h0, "%s is not hashed", F->name);
            } else {
                cr_assert_not(loom_schedule_equal(a, b), "field %s is not compared", F->name);
                cr_assert_neq(loom_schedule_hash(b), h0, "field %s is not hashed", F->name);
            }
        }
    }
    free(a);
    free(b);
    loom_program_free(p);
}

/* Remapping: a field holding an iter of its stage follows its loop when the
 * loop is split (to the inner tile, which binds the same index innermost). */
Test(stage_fields, own_iter_fields_follow_a_split_loop)
{
    loom_program *p;
    loom_schedule *s = fresh(&p);
    loom_error err;
    int blk, l[LOOM_MAX_LOOPS], nl, out[4];
    cr_assert_eq(loom_get_block(s, "C", &blk, &err), LOOM_OK, "%s", err.msg);
    cr_assert_eq(loom_get_loops(s, blk, l, &nl, &err), LOOM_OK, "%s", err.msg);
    int st = s->rvs[blk].stage, last = l[nl - 1], it = s->rvs[last].iter;
    int nown = 0;
    for (int f = 0; f < loom_stage_field_count(); f++)
        if (loom_stage_field_at(f)->kind == LOOM_FIELD_OWN_ITER) {
            *loom_stage_field_ptr(&s->stages[st], loom_stage_field_at(f)) = it;
            nown++;
        }
    cr_assert_geq(nown, 3, "cache_iter, rfactor_iter, pack_iter");
    int64_t factors[2] = {0, 4};
    cr_assert_eq(loom_split(s, last, 2, NULL, factors, out, &err), LOOM_OK, "%s", err.msg);
    int inner = s->rvs[out[1]].iter;
    cr_assert_neq(inner, it);
    for (int f = 0; f < loom_stage_field_count(); f++) {
        const loom_stage_field *F = loom_stage_field_at(f);
        if (F->kind == LOOM_FIELD_OWN_ITER)
            cr_assert_eq(loom_stage_field_get(&s->stages[st], F), inner, "%s did not follow the split", F->name);
    }
    free(s);
    loom_program_free(p);
}
