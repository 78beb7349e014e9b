/* The latency chain of a core's accumulations (sim.h "Latency chain",
 * models 4, 14 and 20; "Independent chains", model 26): an accumulation
 * into memory or into a float local adds the FP latency it waits for to
 * the core's chain counter, which sim_cycles.c turns into cycles; a
 * segment's first accumulation also waits for the loads it reads (model
 * 84, the core's load_lat). */
#include <math.h>

#include "sim_impl.h"
#include "sim_machine.h"

/* key's place in the LOOM_SIM_RMW_HISTORY history h (most recent first;
 * LOOM_SIM_RMW_HISTORY: not there), then key moved to its front */
static int history_depth(uint64_t *h, uint64_t key)
{
    int d = 0;
    while (d < LOOM_SIM_RMW_HISTORY && h[d] != key)
        d++;
    for (int j = d < LOOM_SIM_RMW_HISTORY ? d : LOOM_SIM_RMW_HISTORY - 1; j > 0; j--)
        h[j] = h[j - 1];
    h[0] = key;
    return d;
}

/* x more cycles on the chain of float local g (sim.h "Independent
 * chains", model 26): within an overlap group only the local's longest
 * segment counts. */
static void local_chain_add(core *C, fseg *g, double x)
{
    if (g->len == 0) /* model 84: a segment's first accumulation waits for its loads */
        x += C->load_lat;
    C->load_lat = 0;
    if (g->grp != C->grp) { /* a segment begun in an earlier group: what it added there stays */
        g->grp = C->grp;
        g->gmax = g->len;
    }
    g->len += x;
    if (g->len > g->gmax) {
        C->c.chain += g->len - g->gmax;
        g->gmax = g->len;
    }
}

/* A new overlap group begins when the core issued more than its
 * grp_window instructions, or (model 26, uncalibrated targets) mispredicted
 * a branch, since the current one began (or its counters restarted: a
 * region's flush). */
void loom__sim_chain_new_group(core *C)
{
    C->grp++;
    C->grp_bmiss = C->c.bmiss;
    C->grp_instr = C->c.fp + C->c.ld + C->c.st + C->c.iops;
}

/* The chain that follows does not wait for segment g's earlier ones
 * (models 26, 34 and 38).  row: a CSR row's workspace (model 56); model 62
 * (sim.h "Independent chains", calibrated targets): begun in a new group,
 * its segment still overlaps the share of the previous row's chain the
 * reorder window holds -- that chain's cycles times the window over the
 * instructions the row spanned, all of it for a row within the window --
 * and adds only what goes past it. */
static void segment_restart(core *C, fseg *g, int row)
{
    double instr = C->c.fp + C->c.ld + C->c.st + C->c.iops, tail = 0;
    if (row && !C->grp_cut_bmiss && g->len > 0 && instr > g->i0)
        tail = g->len * fmin(1, C->grp_window / (instr - g->i0));
    if ((C->grp_cut_bmiss && C->c.bmiss != C->grp_bmiss) || instr < C->grp_instr ||
        instr - C->grp_instr > C->grp_window)
        loom__sim_chain_new_group(C);
    if (g->grp != C->grp) {
        g->grp = C->grp;
        g->gmax = tail;
    }
    g->len = 0;
    g->i0 = instr;
}

/* Float local v assigned a value that does not read it (models 26, 34). */
void loom__sim_local_restart(core *C, int v)
{
    segment_restart(C, &C->fseg[v], 0);
}

/* LOCAL workspace b zeroed by a dense fill (model 38; row: a CSR row's,
 * model 56): its accumulations after it form a new segment of its chain. */
void loom__sim_workspace_restart(core *C, int b, int row)
{
    C->bseg[b].active = 1;
    segment_restart(C, &C->bseg[b], row);
}

/* An accumulation into memory at element i of its store buffer (s->rmw
 * 1): it waits for the previous accumulation to the same element -- one
 * FP_LATENCY (sim.h "Latency chain").  Model 14: the site remembers the
 * elements of its last LOOM_SIM_RMW_HISTORY accumulations, most recent
 * first; an element found d accumulations back is one of d chains that run
 * side by side (the rows of a GEMM micro-kernel, d = the unrolled copies),
 * so it adds FP_LATENCY / d.  In vector code only the instance's first
 * vector is compared (the instance's vectors are independent chains,
 * side by side).  A workspace a dense fill restarted (model 38) adds it to
 * the workspace's segment, not straight to the core's chain; so does, to
 * its site's segment, an accumulation into a kernel-internal intermediate
 * (model 41), or into any buffer in scalar code (model 52), whose segment
 * restarts at an element the site has not accumulated into lately.
 * Model 72: an intermediate's row cc keeps in a register across the loop
 * around the accumulation and stores every time (model 54) does so too:
 * its rows' segments overlap (model 59 summed them, for a code form the
 * lowering no longer prints; sim.h "Independent chains"). */
void loom__sim_accumulate(core *C, const sst *s, int64_t i, int in_registers)
{
    if (C->vmode && !C->vfirst)
        return;
    uint64_t key = (uint64_t)i + 1 + ((uint64_t)s->store_buf << 40);
    int d = history_depth(C->last_rmw + (size_t)s->store_site * LOOM_SIM_RMW_HISTORY, key);
    int ws = C->bseg && C->bseg[s->store_buf].active;
    fseg *site = C->sseg && (s->store_temp || !C->vmode) && !ws ? &C->sseg[s->store_site] : NULL; /* models 41, 52 */
    if (d >= LOOM_SIM_RMW_HISTORY) {
        if (site)
            segment_restart(C, site, 0);
        C->load_lat = 0;
        return;
    }
    /* through memory: the store forwards to the next load */
    double x = (FP_LATENCY + (in_registers ? 0 : LOOM_SIM_STORE_FORWARD_CYCLES)) / (d + 1);
    if (ws)
        local_chain_add(C, &C->bseg[s->store_buf], x);
    else if (site)
        local_chain_add(C, site, x);
    else {
        C->c.chain += x;
        C->load_lat = 0;
    }
}

/* An update of float local v from itself (sim.h "Latency chain"): it waits
 * for its previous update.  Model 20: the core remembers the locals of its
 * last LOOM_SIM_RMW_HISTORY such updates, most recent first; a local found
 * d updates back is one of d + 1 chains that run side by side (the
 * accumulators of a register tile kept in locals: attention's score and
 * output tiles), so it adds FP_LATENCY / (d + 1) -- to the local's
 * current segment (model 26, "Independent chains"). */
void loom__sim_accumulate_local(core *C, int v)
{
    int d = history_depth(C->flocal_hist, (uint64_t)v + 1);
    local_chain_add(C, &C->fseg[v], d < LOOM_SIM_RMW_HISTORY ? FP_LATENCY / (d + 1) : FP_LATENCY);
}

/* x more cycles on float local v's current segment (sim.h "Vectors",
 * model 53: an auto-vectorized sum's lanes added in order). */
void loom__sim_local_chain(core *C, int v, double x)
{
    local_chain_add(C, &C->fseg[v], x);
}
