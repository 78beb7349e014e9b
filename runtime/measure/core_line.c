/* loom: the core-to-core cache line probe (measure.h loom_measure_core_line_ns).
 *
 * Two threads, each pinned to one of the first two CPUs the process may
 * run on, pass a counter in one cache line back and forth: each waits
 * until the line holds its turn, then writes the other's.  Every hand-over
 * moves the line from one core's private cache to the other's, so a round
 * trip is two such transfers -- the latency a kernel's thread pays when it
 * reads a row the other thread wrote in the previous parallel region. */
#include "measure.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <pthread.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define WARM_TRIPS 64
#define BATCH_TRIPS 256
#define BATCHES 5
#define PROBE_SECONDS 0.05 /* a probe that has not finished by then (a descheduled thread) gives up */

typedef struct probe {
    _Alignas(64) volatile int turn; /* 2 i: the first thread's i-th turn; 2 i + 1: the second's */
    char pad_[60];
    int stop;                       /* set by either thread past the deadline (atomic accesses) */
    double deadline;
    int total;                      /* turns of each thread */
    double batch_s[BATCHES];        /* seconds per round trip of each timed batch (first thread) */
} probe;

/* Wait until p->turn == want; 0, or -1 once the probe gave up. */
static int wait_turn(probe *p, int want)
{
    for (unsigned spins = 1;; spins++) {
        if (__atomic_load_n(&p->turn, __ATOMIC_ACQUIRE) == want)
            return 0;
        if ((spins & 1023) == 0 &&
            (__atomic_load_n(&p->stop, __ATOMIC_RELAXED) || loom_now_seconds() > p->deadline)) {
            __atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
            return -1;
        }
    }
}

static void *first(void *arg)
{
    probe *p = arg;
    double t0 = 0;
    for (int i = 0; i < p->total; i++) {
        int b = i - WARM_TRIPS;
        if (b >= 0 && b % BATCH_TRIPS == 0)
            t0 = loom_now_seconds();
        if (wait_turn(p, 2 * i))
            return NULL;
        __atomic_store_n(&p->turn, 2 * i + 1, __ATOMIC_RELEASE);
        if (b >= 0 && b % BATCH_TRIPS == BATCH_TRIPS - 1)
            /* this batch: BATCH_TRIPS hand-overs to the second thread and BATCH_TRIPS - 1 back */
            p->batch_s[b / BATCH_TRIPS] = (loom_now_seconds() - t0) / (BATCH_TRIPS - 0.5);
    }
    return NULL;
}

static void *second(void *arg)
{
    probe *p = arg;
    for (int i = 0; i < p->total; i++) {
        if (wait_turn(p, 2 * i + 1))
            return NULL;
        __atomic_store_n(&p->turn, 2 * i + 2, __ATOMIC_RELEASE);
    }
    return NULL;
}

double loom_measure_core_line_ns(void)
{
#ifdef __linux__
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return 0;
    int cpu[2], n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &allowed))
            cpu[n++] = c;
    if (n < 2)
        return 0;
    probe *p = aligned_alloc(64, sizeof(probe));
    if (!p)
        return 0;
    memset(p, 0, sizeof *p);
    p->total = WARM_TRIPS + BATCHES * BATCH_TRIPS;
    p->deadline = loom_now_seconds() + PROBE_SECONDS;
    pthread_t th[2];
    int made = 0, ok = 1;
    void *(*fn[2])(void *) = {first, second};
    for (int k = 0; k < 2 && ok; k++) {
        pthread_attr_t at;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu[k], &one);
        ok = pthread_attr_init(&at) == 0;
        if (ok) {
            ok = pthread_attr_setaffinity_np(&at, sizeof one, &one) == 0 && pthread_create(&th[k], &at, fn[k], p) == 0;
            pthread_attr_destroy(&at);
        }
        made += ok;
    }
    if (!ok)
        __atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
    for (int k = 0; k < made; k++)
        pthread_join(th[k], NULL);
    double ns = 0;
    if (ok && !__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
        gsl_sort(p->batch_s, 1, BATCHES);
        ns = round(gsl_stats_median_from_sorted_data(p->batch_s, 1, BATCHES) * 1e10) / 10; /* 0.1 ns */
    }
    free(p);
    return ns;
#else
    return 0;
#endif
}

int loom_measure_core_line_moved(double first_ns, double now_ns)
{
    if (!(first_ns > 0) || !(now_ns > 0))
        return 0;
    return now_ns > LOOM_CORE_LINE_MOVED * first_ns || first_ns > LOOM_CORE_LINE_MOVED * now_ns;
}
