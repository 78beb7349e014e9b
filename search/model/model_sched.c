/* The task scheduler (model.h loom_task_scheduler_next): MetaSchedule's
 * gradient-based one and round-robin. */
#include <math.h>
#include <string.h>

#include "model.h"

const char *loom_task_scheduler_name(loom_task_scheduler_kind k)
{
    switch (k) {
    case LOOM_TASK_SCHEDULER_GRADIENT:
        return "gradient";
    case LOOM_TASK_SCHEDULER_ROUND_ROBIN:
        return "round-robin";
    }
    return NULL;
}

int loom_task_scheduler_parse(const char *name, loom_task_scheduler_kind *out)
{
    if (!strcmp(name, "gradient") || !strcmp(name, "gradient-based")) {
        *out = LOOM_TASK_SCHEDULER_GRADIENT;
        return 0;
    }
    if (!strcmp(name, "round-robin")) {
        *out = LOOM_TASK_SCHEDULER_ROUND_ROBIN;
        return 0;
    }
    return -1;
}

/* The alive task with the fewest rounds (ties: the lowest index); -1: none. */
static int fewest_rounds(const loom_task_state *t, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (!t[i].terminated && (best < 0 || t[i].rounds < t[best].rounds))
            best = i;
    return best;
}

/* splitmix64 (Steele, Lea, Flood, OOPSLA 2014): one draw from a seed. */
static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* gradient_based.cc's gradient of one task, times its weight. */
static double gradient(const loom_task_state *t, double alpha, int w)
{
    int n = t->rounds;
    if (n <= 0 || !isfinite(t->history[n - 1]))
        return -1e9;
    double best = t->history[n - 1];
    double g1 = n >= 1 + w ? (t->history[n - 1 - w] - best) / w : 0.0;
    double g2 = best / n;
    return (alpha * g1 + (1 - alpha) * g2) * t->weight;
}

int loom_task_scheduler_next(loom_task_scheduler_kind kind, const loom_task_state *tasks, int n, double alpha,
                             int window, uint64_t seed)
{
    int first = fewest_rounds(tasks, n);
    if (first < 0 || kind == LOOM_TASK_SCHEDULER_ROUND_ROBIN || tasks[first].rounds == 0)
        return first; /* none alive; round-robin; the warm-up */
    if (window < 1)
        window = 1;
    int arg = -1, alive = 0;
    double gmax = -INFINITY, gmin = INFINITY;
    for (int i = 0; i < n; i++) {
        if (tasks[i].terminated)
            continue;
        alive++;
        double g = gradient(&tasks[i], alpha, window);
        if (g > gmax)
            gmax = g, arg = i;
        if (g < gmin)
            gmin = g;
    }
    if (gmax != gmin)
        return arg;
    /* every gradient equal: a task drawn uniformly among the alive ones */
    int pick = (int)(mix(seed) % (uint64_t)alive);
    for (int i = 0; i < n; i++)
        if (!tasks[i].terminated && pick-- == 0)
            return i;
    return first;
}
