/* Where partial sums of a dot product may go (query.h,
 * LOOM_ANN_PARTIAL_SUMS; issue 13).  Read by the validator (rule
 * partial-sums), the lowering (runtime/lower/lower.c) and the module that
 * samples it (modules/partial_sums.c). */
#include <string.h>

#include "query.h"

int loom_partial_sums_ok(const loom_schedule *sch, int s, int p)
{
    const loom_stage *S = &sch->stages[s];
    const loom_stmt *st = &sch->prog->stmts[s];
    if (p != S->nloops - 1 || p < 0 || S->loops[p].kind != LOOM_LOOP_VECTORIZED || st->nvars == st->nfree ||
        S->rfactor_iter >= 0 || S->cache_iter >= 0 || S->compute_at == LOOM_AT_INLINE || S->rolling ||
        !loom_iter_reduces(sch, s, S->loops[p].iter))
        return 0;
    int64_t e = loom_iter_extent(sch, s, S->loops[p].iter);
    if (e < 1 || e > LOOM_MAX_PARTIAL_SUMS)
        return 0;
    int seen_red = 0;
    for (int q = 0; q < S->nloops; q++) {
        int red = loom_iter_reduces(sch, s, S->loops[q].iter);
        if (seen_red && !red)
            return 0; /* a free loop inside a reduction loop: no scalar accumulator */
        seen_red |= red;
    }
    return 1;
}

int loom_partial_sums_loop(const loom_schedule *sch, int s)
{
    const loom_stage *S = &sch->stages[s];
    for (int p = 0; p < S->nloops; p++)
        for (int k = 0; k < S->loops[p].nann; k++)
            if (!strcmp(S->loops[p].ann[k].key, LOOM_ANN_PARTIAL_SUMS) && S->loops[p].ann[k].value >= 1)
                return p;
    return -1;
}
