/* loom: the simulator's cache arrays -- a level's sets and ways, LRU order,
 * the tag bits the streamer marks -- and their lookups (sim_machine.h "Caches"
 * describes the hierarchy they make; "Physical indexing", model 66, the set
 * of a line).  Private to the simulator (included by sim_machine.h); not a
 * public header. */
#ifndef LOOM_SIM_CACHE_H
#define LOOM_SIM_CACHE_H

#include <stdint.h>
#include <stdlib.h>

#include "../machine/machine.h"

typedef struct cache {
    uint64_t nsets, mask;
    int ways, pow2;
    int page_shift;  /* "Physical indexing" (model 66): log2 of the lines a page holds, 0 = virtually indexed */
    uint64_t *tags;  /* (line + 1) << 1 | dirty; way 0 = most recent; only ways < used[set] are valid */
    uint16_t *used;  /* per set: ways filled so far (the rest are empty and never read) */
} cache;

/* page_bytes: the target's (0: virtual indexing) */
static inline int cache_init(cache *K, const loom_cache_level *L, int page_bytes)
{
    K->ways = L->assoc;
    K->nsets = (uint64_t)(L->size / ((long long)L->line * L->assoc));
    K->pow2 = (K->nsets & (K->nsets - 1)) == 0;
    K->mask = K->nsets - 1;
    K->page_shift = 0;
    if (page_bytes > L->line && K->nsets * (uint64_t)L->line > (uint64_t)page_bytes) /* "Physical indexing" */
        while (((int64_t)L->line << K->page_shift) < page_bytes)
            K->page_shift++;
    /* not zeroed: a large shared level (a 105 MiB L3 has 13.8 MB of tags)
     * is mostly untouched by one kernel, and zeroing it cost more than the
     * simulation of a small kernel; used[] says which ways hold lines */
    K->tags = malloc(K->nsets * (uint64_t)K->ways * sizeof(uint64_t));
    K->used = calloc(K->nsets, sizeof(uint16_t));
    return K->tags && K->used ? 0 : -1;
}

/* The set of a line (sim_machine.h "Physical indexing", model 66): a
 * physically indexed level hashes the page number (splitmix64's
 * finalizer, Steele, Lea and Flood, OOPSLA 2014) and keeps the line's
 * place in its page -- a stand-in for the frame the OS chose. */
static inline uint64_t cache_set(const cache *K, uint64_t line)
{
    if (K->page_shift) {
        uint64_t z = line >> K->page_shift;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        line = (z << K->page_shift) | (line & (((uint64_t)1 << K->page_shift) - 1));
    }
    return K->pow2 ? (line & K->mask) : (line % K->nsets);
}
/* A tag is (line + 1) << 1, bit 0 set when the line is dirty, bit 63 set
 * while a line the streamer brought into the last private level from a
 * shared one has not been used by a demand access (model 21), bit 62 with
 * it when the streamer brought the line from memory (model 29). */
#define TAG_PF ((uint64_t)1 << 63)
#define TAG_PFMEM ((uint64_t)1 << 62)
#define TAG_FLAGS ((uint64_t)1 | TAG_PF | TAG_PFMEM)
/* The most recent line of line's set in K (where a hit just moved it):
 * clear its TAG_PF and TAG_PFMEM; 0 when TAG_PF was not set, else 1, or 2
 * when TAG_PFMEM was set too. */
static inline int cache_take_pf(cache *K, uint64_t line)
{
    uint64_t set = cache_set(K, line);
    uint64_t *w = K->tags + set * (uint64_t)K->ways;
    if (!K->used[set] || !(w[0] & TAG_PF))
        return 0;
    int mem = (w[0] & TAG_PFMEM) != 0;
    w[0] &= ~(TAG_PF | TAG_PFMEM);
    return 1 + mem;
}
/* Mark the most recent line of line's set in K (just inserted) with
 * flags: TAG_PF, or TAG_PF | TAG_PFMEM. */
static inline void cache_mark_pf(cache *K, uint64_t line, uint64_t flags)
{
    uint64_t set = cache_set(K, line);
    K->tags[set * (uint64_t)K->ways] |= flags;
}
/* Look line up; on a miss insert it (LRU victim in *ev, 0 if none).
 * Returns 1 on a hit. */
static inline int cache_lookup(cache *K, uint64_t line, uint64_t dirty, uint64_t *ev)
{
    uint64_t set = cache_set(K, line);
    uint64_t *w = K->tags + set * (uint64_t)K->ways;
    int n = K->used[set];
    uint64_t tag = (line + 1) << 1;
    *ev = 0;
    if (n && (w[0] & ~TAG_FLAGS) == tag) {
        w[0] |= dirty;
        return 1;
    }
    for (int i = 1; i < n; i++)
        if ((w[i] & ~TAG_FLAGS) == tag) {
            uint64_t x = w[i] | dirty;
            for (int j = i; j > 0; j--)
                w[j] = w[j - 1];
            w[0] = x;
            return 1;
        }
    if (n == K->ways)
        *ev = w[--n];
    else
        K->used[set] = (uint16_t)(n + 1);
    for (int j = n; j > 0; j--)
        w[j] = w[j - 1];
    w[0] = tag | dirty;
    return 0;
}

/* Drop line from K if it holds it (its dirty bit too: a non-temporal
 * store overwrote the whole line in memory).  Returns 1 when it was there. */
static inline int cache_evict(cache *K, uint64_t line)
{
    uint64_t set = cache_set(K, line);
    uint64_t *w = K->tags + set * (uint64_t)K->ways;
    int n = K->used[set];
    uint64_t tag = (line + 1) << 1;
    for (int i = 0; i < n; i++)
        if ((w[i] & ~TAG_FLAGS) == tag) {
            for (int j = i; j + 1 < n; j++)
                w[j] = w[j + 1];
            K->used[set] = (uint16_t)(n - 1);
            return 1;
        }
    return 0;
}

#endif
