/* loom: simulator internals shared by sim.c (LIR -> simulator form),
 * sim_exec.c (execution, the cycle model; its caches in sim_machine.h) and
 * the helpers beside them (sim_regs.c, sim_guard.c, sim_work.c).  Not a
 * public header. */
#ifndef LOOM_SIM_IMPL_H
#define LOOM_SIM_IMPL_H

#include <stdint.h>

#include "sim.h"

/* integer expression (float subexpressions never reach here) */
enum { SX_CONST = 0, SX_VAR, SX_LOAD, SX_BIN, SX_NEG, SX_NOT, SX_AFF };
#define SX_MAXTERM 4

typedef struct sx {
    int kind, op, var, buf, site;
    int64_t ival;
    int nterm;                 /* SX_AFF: ival + sum tc[k] * vars[tv[k]] */
    int tv[SX_MAXTERM];
    int64_t tc[SX_MAXTERM];
    struct sx *a, *b;
} sx;

/* The value of the integer LIR operator op (lir.h LIR_ADD ... LIR_OR) on a
 * and b, as the generated C computes it (a division by zero gives 0): the
 * one list of those operators, for sim.c's constant folding and
 * sim_exec.c's evaluation (which short-circuits && and || before calling
 * it). */
static inline int64_t loom__sim_int_op(int op, int64_t a, int64_t b)
{
    switch (op) {
    case LIR_ADD: return a + b;
    case LIR_SUB: return a - b;
    case LIR_MUL: return a * b;
    case LIR_DIV: return b ? a / b : 0;
    case LIR_MIN: return a < b ? a : b;
    case LIR_MAX: return a > b ? a : b;
    case LIR_LT: return a < b;
    case LIR_LE: return a <= b;
    case LIR_GT: return a > b;
    case LIR_GE: return a >= b;
    case LIR_EQ: return a == b;
    case LIR_NE: return a != b;
    case LIR_AND: return a && b;
    case LIR_OR: return a || b;
    }
    return 0;
}

/* fp32 lanes of t's vectors (sim.h "Vectors"), at least 1 */
static inline int64_t loom__sim_lanes(const loom_target *t)
{
    return t->vector_bits / 32 > 0 ? t->vector_bits / 32 : 1;
}

/* a memory access of a statement's float work */
typedef struct sacc {
    int buf, site;
    sx *index;
} sacc;

enum { SS_SEQ = 0, SS_FOR, SS_WHILE, SS_IF, SS_SETI, SS_WORK, SS_FILL, SS_NOP, SS_PREFETCH, SS_STREAM };

/* assignments and loops a loop's guard count may need, and the most runs
 * of equal counts it is split into (sim_guard.c) */
#define LOOM_SIM_GUARD_STEPS 8
#define LOOM_SIM_GUARD_RUNS 4

/* static costs of a statement or a vector loop's body (per execution) */
typedef struct scost {
    double fp;     /* FMA-pipe slots */
    double fadd;   /* of fp: adds, shuffles, min / max -- what the add pipes take (model 70) */
    double flops;  /* arithmetic FLOPs */
    double iops;   /* integer instructions */
    double loads, stores;
} scost;

typedef struct sst {
    int kind;
    int var;               /* FOR, SETI (-1 in a WORK, even one setting a float local) */
    sx *lo, *hi, *cond, *value;
    int loop_kind;         /* LIR_LOOP_*; FOR */
    int par_chunk;         /* LIR par_chunk: > 0 cyclic (modelled as blocks of 1) */
    int vec;               /* FOR: runs as vector code (vectorized, or auto-vectorized) */
    int unroll;            /* FOR unrolled */
    double inv_unroll;     /* FOR: 1.0 / unroll (loop overhead per iteration) */
    int has_red;           /* FOR vector with a scalar reduction: 1 a sum, 2 a max, 0 none */
    int fold_left;         /* FOR auto-vectorized (not VECTORIZED) with an in-order float sum in its
                              body: cc adds each vector's lanes to it one by one (sim.h "Vectors") */
    int has_par;           /* contains a PARALLEL loop (itself or below) */
    int pieces;            /* FOR vec: literal bounds whose trip is not a multiple of the lanes: cc
                              runs it as narrower vectors and scalars (sim.h "Vector pieces", model 39) */
    int sum_var;           /* FOR rt_pieces: the float local it sums into */
    int pair_sum;          /* FOR: a VECTORIZED sum of two iterations, emitted with safelen(2): cc runs it
                              as scalar code, the pair's FMAs a chain of their own and one add on the
                              sum's (sim.h "Vectors", model 55); the sum's float local + 1, else 0 */
    int rt_pieces;         /* FOR vec: a float sum over run-time bounds cc vectorizes itself: its
                              vectors, a half-width epilogue vector, then scalars (sim.h "Vectors",
                              model 53) */
    int peeled;            /* FOR vec: literal bounds, few vector iterations: cc unrolls it completely;
                              PREFETCH: a literal count of lines, as few (sim.h "Software prefetch") */
    int affine_body;       /* FOR vec: no control flow, every address affine in the vars */
    int vinner;            /* FOR vec: a loop in its body (sim.h "Outer-loop vectors", model 20) */
    int rt_bounds;         /* FOR: its bounds are not both literals (sim.h "Loop set-up", model 44) */
    int rt_inner;          /* FOR: its body holds a serial FOR of run-time bounds, not below another FOR */
    int inv_selects;       /* FOR vec: float min/max in the body invariant in the loop (sim.h) */
    double hoist_share;    /* SETI: the share of its cost charged per execution -- 1, or less when a
                              completely unrolled loop's copy hoists it out of rolled loops
                              (sim_hoist.c; sim.h "Hoisted copies", model 32) */
    int site;              /* FOR: loop-exit predictor; IF: branch predictor; PREFETCH: its ranges' stride (model 103) */
    int merge_var;         /* PREFETCH: the variable of the completely unrolled loop whose copies
                              prefetch one range each, back to back, merged into one (sim_hoist.c
                              "Merged prefetches", model 93); merge_trip > 1 then */
    int merge_trip;        /* PREFETCH: that loop's trip (copies), else 0 */
    int64_t merge_lo;      /* PREFETCH: that loop's first value: the copy that prefetches them all */
    int items_n;
    struct sst **items;    /* SEQ */
    struct sst *body, *els;
    /* WORK: loads then an optional store */
    int nacc;
    sacc *acc;
    int store_buf, store_site;
    int self_load;         /* WORK rmw 1: 1 + the index in acc of the load of the stored element
                              (0: none; sim.h "Independent chains", model 54) */
    int store_temp;        /* WORK: store_buf is a kernel-internal intermediate (LIR_BUF_TEMP: sim.h
                              "Independent chains", model 41) */
    int rmw;               /* WORK: 1 stores where it loads (an accumulation in memory), 2 a float
                              local updated from itself (in a register), 3 such a local summed in order
                              (var = var + x), 0 neither */
    sx *store_index;
    int fvar;              /* WORK rmw 2, 3: the float local it updates (sim.h "Latency chain", model 20) */
    int fill_buf;          /* FILL, PREFETCH, STREAM (its value: the first element's index) */
    int dense_scope;       /* FILL: every loop after it in its block has literal bounds (sim.h
                              "Independent chains", model 38) */
    int row_scope;         /* FILL: a loop of run-time bounds after it in its block (a CSR row's
                              workspace, model 56, or a pass over part of its columns, model 83;
                              sim.c mark_row_fills, sim.h "Independent chains") */
    int src_buf;           /* STREAM: the local buffer copied from */
    sx *fill_size;
    scost c;               /* this statement's own cost (not its children) */
    scost vbody;           /* FOR vec: whole body per vector iteration */
    int *vsites, nvsites;  /* FOR vec: memory sites in the body */
    /* FOR (serial, not vector): the if its body does all its work under
       (sim_guard.c; sim.h "Guarded iterations"; NULL when none), and the
       integer assignments and loops on the way down that the count of its
       passing iterations needs, in order; genum[k] 1: loop k is enumerated
       (the condition reads its variable), 0: its trip count multiplies */
    const struct sst *guard;
    const struct sst *gpath[LOOM_SIM_GUARD_STEPS];
    unsigned char genum[LOOM_SIM_GUARD_STEPS];
    int ngpath;
    int exposed_chunk;     /* FOR: c, for a loop cc keeps over [0, min(c, rest)) whose positions
                              accumulate into no workspace: its misses at a full chunk's boundary
                              are not learned (sim_chunk.c "Exposed chunk exits", model 65); else 0 */
    int exposed_ws;        /* FOR: c, for such a loop whose positions accumulate into a workspace
                              (model 100, sim_chunk.c); else 0 */
    int chunk_inner;       /* FOR: a PosSplit chunk's loop over [0, min(c, rest)): cc reloads an
                              intermediate's row at each of its instances (model 75) */
    int phase;             /* FOR: a packed panel's copy, counted as a phase of its own
                              (sim_phase.c "Phases", model 64; the outermost such loop swaps the counters) */
} sst;

typedef struct sbuf {
    uint64_t base;          /* virtual byte address */
    int64_t elems;          /* int buffers: readable length */
    const int32_t *ints;    /* POS/CRD data, else NULL */
    int local;              /* per-core copy (LOCAL) */
    int reg;                /* LOCAL that fits the vector register file: cc keeps it in registers */
    int64_t vecs;           /* LOCAL: its vectors */
    int spill_chain;        /* reg: a row workspace whose last vectors cc spills (model 37): an update
                               of a spilled vector waits a spill's round trip (sim.h "Register-resident
                               workspaces") */
    int over;               /* LOCAL larger than the register file whose FMAs per update outlast a
                               spill's round trip: a register tile of unrolled copies keeps part of it
                               (model 33, loom__sim_tile_pressure) */
    int64_t reg_elems;      /* reg: the elements below this index are in registers, the rest spilled
                               to the stack (model 33); its elems when none are */
    double spill_excess;    /* reg: model 81's cycles an update of a spilled vector adds (0: none) */
    double spill_chain_share; /* reg: model 97's round trip / the spilled vectors: an update's share of a k's chain */
    uint64_t bytes;         /* its size (LOCAL: one core's slot) */
    const char *name;
} sbuf;

/* sim.h "Vector pieces" (model 39): the lanes of the vector cc's code
 * handles at lane v0 of a loop of literal trip n on a target of V lanes --
 * vectors of the largest power of two <= min(n, V) while they fit, then
 * one vector of the largest power of two <= what is left (GCC's vectorized
 * epilogue), then single lanes. */
static inline int64_t loom__sim_piece(int64_t v0, int64_t n, int64_t V)
{
    int64_t m = 1;
    while (m * 2 <= V && m * 2 <= n)
        m *= 2;
    int64_t full = n / m * m;
    if (v0 < full)
        return m;
    int64_t e = 1, rest = n - full;
    while (e * 2 <= rest)
        e *= 2;
    return v0 < full + e ? e : 1;
}

/* sim.h "Vectors", model 53: the lanes of the vector cc's code handles at
 * lane v0 of an auto-vectorized float sum of run-time trip n on V lanes --
 * vectors of V while they fit, then (V >= 16) one vector of V / 2 when that
 * many are left, then single lanes (GCC 12 -O3's main loop, vectorized
 * epilogue and scalar remainder). */
static inline int64_t loom__sim_rt_piece(int64_t v0, int64_t n, int64_t V)
{
    int64_t full = n / V * V;
    if (v0 < full)
        return V;
    if (V >= 16 && n - full >= V / 2 && v0 < full + V / 2)
        return V / 2;
    return 1;
}

/* The number of such pieces of a loop of literal trip n. */
static inline int64_t loom__sim_pieces(int64_t n, int64_t V)
{
    int64_t k = 0;
    for (int64_t v = 0; v < n; k++)
        v += loom__sim_piece(v, n, V);
    return k;
}

/* Element idx of buffer B is in a register: a register-resident workspace,
 * below the vectors model 33 spills (sim.h "Register-resident workspaces"). */
static inline int loom__sim_in_register(const sbuf *B, int64_t idx)
{
    return B->reg && idx < B->reg_elems;
}

/* Model 81 (sim.h "Register-resident workspaces"): the cycles an update of
 * one of a tile's `spilled` spilled vectors costs after the core's other
 * work -- beyond LOOM_SIM_SPILL_FREE_VECTORS spilled vectors,
 * LOOM_SIM_SPILL_EXCESS_CYCLES times the square of the excess a k step,
 * shared by its updates (sbuf.spill_excess, set once per tile). */
static inline double loom__sim_spill_excess(int64_t spilled)
{
    int64_t e = spilled - LOOM_SIM_SPILL_FREE_VECTORS;
    return e > 0 ? LOOM_SIM_SPILL_EXCESS_CYCLES * (double)(e * e) / (double)spilled : 0;
}

typedef struct sprog {
    const lir_func *f;
    sst *root;
    sbuf *bufs;
    int nbufs, nvars, nsites;
    unsigned char *var_f32;   /* per var: float local (never evaluated) */
    void *pool_;              /* private: the allocation pool */
} sprog;

/* Build the simulator form of f on ds (arena-free: everything is in one
 * malloc'd pool freed by loom__sim_prog_free). */
loom_status loom__sim_prog_build(const lir_func *f, const loom_dataset *ds, const loom_target *t, sprog **out,
                           loom_error *err);
void loom__sim_prog_free(sprog *p);

/* Execute and fill the result; past deadline (loom_now_seconds(); <= 0:
 * none) stop with LOOM_ERR_TIMEOUT. */
loom_status loom__sim_exec(const sprog *p, const loom_target *t, double budget, double deadline, loom_sim_result *out,
                           loom_error *err);

/* sim_phase.c ("Phases", model 64): 1 when r, a loop built with its
 * body, copies packed panels (PackPanel's local copies: every store below it
 * into one, nothing but loops and integer lets beside them) on a target with
 * issue_chain_norm (which loom calibrate writes), else 0. */
int loom__sim_pack_phase(const sprog *p, const loom_target *t, const sst *r);

/* sim_chunk.c: mark r, the loop built from s with its body (peeled: model 63
 * made it copies), for models 64 (phase, loom__sim_pack_phase) and 65
 * (exposed_chunk, "Exposed chunk exits"); model 94 ("The exits of unrolled
 * run-time loops") sets its loop test per position, or makes a run-time
 * loop under an unroll pragma GCC leaves rolled a serial loop again. */
void loom__sim_mark_for(const sprog *p, const loom_target *t, const lir_stmt *s, sst *r, int peeled);

/* sim_chunk.c: the copies cc unrolls r (the serial loop built from s, its
 * body and rt_bounds set) into completely, else 0 (-1: out of memory) -- on
 * targets with issue_chain_norm (loom calibrate's).  Model 63 (sim.h
 * "Single iterations"): a PosSplit chunk [0, min(c, rest)) of at most
 * LOOM_SIM_PEEL_MAX_POSITIONS small positions.  Model 68 ("Unrolled
 * copies"; model 93): a loop of literal trip n, at most the target's
 * peel_times copies of a small body without a fill or an if, counting only
 * the statements that vary with the loop (nvars: the program's integer
 * variables).  Both: n times the body's size (peel_size) at most
 * LOOM_SIM_PEEL_MAX_INSTRUCTIONS. */
int64_t loom__sim_peeled_copies(const loom_target *t, const lir_stmt *s, const sst *r, int nvars);

/* sim_regs.c: register residency (sim.h "Register-resident workspaces").
 * The local workspaces that statement s (or one below it) stores to are not
 * register-resident (model 7: a vector loop over them only partly
 * unrolled). */
void loom__sim_spill_workspaces(sprog *p, const sst *s);
/* r, a loop cc unrolls completely (UNROLLED, constant trip <= its unroll;
 * otherwise nothing happens): a register-resident workspace its copies
 * update stays in registers only if its vectors and the loads the copies
 * share fit t's register file together, or its FMAs per update are slower
 * than a spilled accumulator's round trip; else it is charged as memory
 * (model 13).  0, or -1 out of memory. */
int loom__sim_tile_pressure(sprog *p, const loom_target *t, const sst *r);
/* sim_select.c: the float selects (min/max) of vector loop s's body that
 * are invariant in it -- cc unswitches the loop on each, a data-dependent
 * branch per loop instance (sim.h "Unswitched selects", model 5); -1 out
 * of memory. */
int loom__sim_invariant_selects(const lir_func *f, const lir_stmt *s);

/* Model 25 (sim.h "Register-resident workspaces"): a LOCAL workspace
 * accumulated at an index that reads the variable of a loop cc keeps rolled
 * (not a vector loop, not unrolled completely, more than one iteration)
 * inside the workspace's declaration is charged as memory: cc cannot name
 * its elements as registers.  Runs on f's statements before they are
 * built.  0, or -1 out of memory. */
int loom__sim_rolled_workspaces(sprog *p, const loom_target *t, const lir_func *f);

/* sim_shape.c: what a statement tree holds, for sim.c's build.  Each walks
 * s (NULL: an empty tree) and allocates nothing. */
/* 1 if s holds a float sum (WORK rmw 3) outside any loop or if */
int loom__sim_has_float_sum(const sst *s);
/* 1 if s holds only integer lets, float work and nothing else (no loop, if
 * or fill) */
int loom__sim_simple_body(const sst *s);
/* 1 if s stores to memory anywhere (a WORK with a store buffer) */
int loom__sim_body_stores(const sst *s);
/* The float local of the first float sum (WORK rmw 3) in a body without
 * loops or ifs; -1 when there is none (sim.h "Vectors", model 53) */
int loom__sim_float_sum_var(const sst *s);
/* Adds every statement's own cost in s to *k (both arms of ifs, loop bodies
 * once) and appends the memory sites of its float work to sites (*ns of
 * them, at most cap): a vector loop's whole-body figures. */
void loom__sim_body_cost(const sst *s, scost *k, int *sites, int *ns, int cap);
/* 1 if s is a simple body whose every integer expression is affine in the
 * variables */
int loom__sim_affine_body(const sst *s);
/* Appends the sites of s's integer loads (index data its bounds, conditions
 * and indices read) to sites (*ns of them, at most cap). */
void loom__sim_int_sites(const sst *s, int *sites, int *ns, int cap);
/* 1 if s holds a loop (sim.h "Outer-loop vectors") */
int loom__sim_has_loop(const sst *s);
/* sim_prefetch.c: a PREFETCH s's lines [a0, a1) (byte addresses) brought
 * in by core C, their stalls, late-prefetch slots and issue slots (sim.h
 * "Software prefetch", models 45, 102 and 103; "Late prefetches") */
struct simx;
struct core;
void loom__sim_prefetch_lines(struct simx *X, struct core *C, const sst *s, uint64_t a0, uint64_t a1);
/* 1 if every loop in s is a FOR of literal bounds (no while): sim.h
 * "Outer-loop vectors" (model 28) and a dense tile's fill ("Independent
 * chains", model 38) */
int loom__sim_loops_literal(const sst *s);
/* 1 if integer expression e reads a variable marked in on (sim_shape.c) */
int loom__sim_sx_reads(const sx *e, const unsigned char *on);

/* sim_hoist.c, model 32 (sim.h "Hoisted copies"): sets hoist_share of the
 * integer assignments below root that a completely unrolled loop's copies
 * compute from constants and values the rolled loops between do not
 * change: 1 / the product of those loops' literal trips.  Only on targets
 * with peel_times (loom calibrate's); 0, or -1 out of memory. */
int loom__sim_hoist_copies(sprog *p, const loom_target *t, sst *root);

/* sim_index.c, model 35 (sim.h "Address arithmetic"): walks s in program
 * order and marks in m (one byte per variable, zeroed by the caller) the
 * integer variables assigned a value that is not affine in induction
 * variables (1) -- it reads memory, uses an operator other than +, - and
 * *, or reads such a variable -- and those an index multiplies by a size,
 * a literal other than +-1, a dimension or a stored-entry count (2): cc
 * computes that product with an imul once per assignment.  var_f32 marks
 * the float locals, which are left alone. */
void loom__sim_mark_scaled(const lir_stmt *s, const unsigned char *var_f32, unsigned char *m);

/* sim_work.c: e's value under vars, reading index (POS/CRD) data of p
 * without touching the caches; *ok cleared (and 0 returned) when e reads
 * anything else, or any buffer when p is NULL.  The common forms inline,
 * as sim_exec.c's evaluation does; the rest recurse in the slow path. */
int64_t loom__sim_pure_eval_slow(const sprog *p, const int64_t *vars, const sx *e, int *ok);
static inline int64_t loom__sim_pure_eval(const sprog *p, const int64_t *vars, const sx *e, int *ok)
{
    if (e->kind == SX_AFF) {
        int64_t v = e->ival;
        for (int k = 0; k < e->nterm; k++)
            v += e->tc[k] * vars[e->tv[k]];
        return v;
    }
    if (e->kind == SX_VAR)
        return vars[e->var];
    if (e->kind == SX_CONST)
        return e->ival;
    return loom__sim_pure_eval_slow(p, vars, e, ok);
}
/* sim_work.c: the work of iteration v of loop s (variable var), sim.h
 * "Sampling" (model 21): 1, plus for the first loop at the top of its body
 * (after the integer assignments before it, evaluated into tmp, which
 * holds the other variables' values) the work of each of its iterations,
 * down to depth 2, where a loop counts 1 + its trip count: for a CSR row
 * loop 1 + the row's nonzeros times (1 + their inner trip), for a balanced
 * chunk loop its rows and their nonzeros.  -1 when a bound reads anything
 * but index data, the body holds control flow the count cannot follow, or
 * *left (evaluations allowed, counted down) runs out. */
double loom__sim_iter_work(const sprog *p, const sst *s, int var, int64_t v, int64_t *tmp, int64_t *left);

/* sim_guard.c: 1 if statement s (or one below it) sets variable v. */
int loom__sim_sets_var(const sst *s, int v);
/* sim_guard.c: guarded iterations (sim.h "Guarded iterations").  Sets
 * r->guard and r->gpath when r, a serial loop, does all its work under one
 * `if` without else (below integer assignments and serial loops) whose
 * condition, through pure integer expressions, reads r's variable and
 * otherwise only variables fixed during r; leaves r->guard NULL otherwise
 * (also when out of memory: the loop is then sampled whole). */
void loom__sim_find_guard(sst *r, int nvars);
/* For loop s with a guard, iterations q = 0 .. len - 1 at var = lo + q *
 * step (the current values of vars for the rest): counts each iteration's
 * passes of the guard (over the loops on the way down) and splits the
 * iterations into runs of equal counts, cut[0] = 0 < cut[1] < ... <
 * cut[n] = len (cut has room for LOOM_SIM_GUARD_RUNS + 1).  Returns n, 2
 * .. LOOM_SIM_GUARD_RUNS; 0 when the counts are all equal, take more runs,
 * or more than 2^16 evaluations.  vars is restored. */
int loom__sim_guard_runs(const sst *s, int64_t *vars, int var, int64_t lo, int64_t step, int64_t len, int64_t *cut);

#endif
