/* The random strategy (search.h): fresh samples of the design space
 * (MetaSchedule's ReplayTrace) until n new ones, at most 100 rounds without
 * progress. */
#include "search_internal.h"

#include <stdlib.h>

static loom_status generate(loom_search *s, void *state, long call, int n, loom_candidate *out, int *nout,
                            loom_error *err)
{
    (void)state;
    int m = 0, fails = 0, round = 0;
    int want = n * 2 > 16 ? n * 2 : 16;
    loom_candidate *buf = calloc((size_t)want, sizeof *buf);
    if (!buf)
        return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory");
    loom_status st = LOOM_OK;
    while (m < n && fails < 100) {
        int got = loom_search_sample(s, call, LOOM__PH_SAMPLE + 100 * round++, want, buf, err);
        if (got < 0) {
            st = LOOM_ERR_RUN;
            break;
        }
        int before = m;
        for (int i = 0; i < got; i++) {
            if (m < n && loom_search_take(s, &buf[i]))
                out[m++] = buf[i];
            else
                loom_candidate_free(&buf[i]);
        }
        if (m == before)
            fails++;
    }
    free(buf);
    *nout = m;
    return st;
}

const loom_search_strategy loom__strategy_random = {
    .name = "random",
    .needs_model = 0,
    .generate = generate,
    .doc = "fresh samples of the design space (MetaSchedule's ReplayTrace); no options",
};
