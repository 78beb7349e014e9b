/* Machine models: JSON files, the host machine, fingerprints, limits (see machine.h). */
#include "machine.h"
#include "machine_internal.h"
#include "../../dsl/ir/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int loom_target_default_registers(int vector_bits) { return vector_bits >= 512 ? 32 : 16; }

void loom_target_defaults(loom_target *t)
{
    t->issue_width = t->issue_width > 0 ? t->issue_width : 4;
    t->load_ports = t->load_ports > 0 ? t->load_ports : 2;
    t->store_ports = t->store_ports > 0 ? t->store_ports : 1;
    t->mlp = 6;
    t->overlap = 0.75;
    t->gather_cycles_per_lane = 1.0;
    t->masked_lane_cycles = 0.5;
    t->exp_cycles = 8;
    t->div_cycles = 4;
    t->branch_miss_cycles = 12;
    t->parallel_overhead_ns = 1500;
    t->autovectorize = 1;
    t->max_vector_factor = 16;
    t->max_workspace_bytes = 65536;
}

/* ---- JSON reading with paths in messages ---- */

typedef struct jctx {
    const char *file;
    loom_error *err;
} jctx;

static loom_status bad(jctx *c, const char *path, const char *what)
{
    return loom_error_set(c->err, LOOM_ERR_DATA, c->file, 0, 0, "%s: %s: %s", c->file, path, what);
}

static loom_status check_keys(jctx *c, const cJSON *obj, const char *path, const char *const *allowed)
{
    char p[256], w[160];
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (int k = 0; allowed[k] && !ok; k++)
            ok = it->string && !strcmp(it->string, allowed[k]);
        if (!ok) {
            snprintf(p, sizeof p, "%s.%s", path, it->string ? it->string : "?");
            snprintf(w, sizeof w, "unknown key (expected one of:");
            for (int k = 0; allowed[k]; k++) {
                size_t l = strlen(w);
                snprintf(w + l, sizeof w - l, " %s", allowed[k]);
            }
            size_t l = strlen(w);
            snprintf(w + l, sizeof w - l, ")");
            return bad(c, p, w);
        }
    }
    return LOOM_OK;
}

/* A number at obj.key; required or not (*out untouched when absent).
 * integer: must be integral; lo/hi: inclusive range. */
static loom_status get_num(jctx *c, const cJSON *obj, const char *path, const char *key, int required, int integer,
                           double lo, double hi, double *out)
{
    char p[256], w[160];
    snprintf(p, sizeof p, "%s.%s", path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    const char *kind = integer ? (lo > 0 ? "a positive integer" : "a non-negative integer")
                               : (lo > 0 ? "a positive number" : "a non-negative number");
    if (!v) {
        if (!required)
            return LOOM_OK;
        snprintf(w, sizeof w, "missing; expected %s", kind);
        return bad(c, p, w);
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d < lo || d > hi || (integer && d != floor(d))) {
        if (cJSON_IsNumber(v) && d >= lo && (!integer || d == floor(d)))
            snprintf(w, sizeof w, "expected %s at most %.17g", kind, hi);
        else
            snprintf(w, sizeof w, "expected %s", kind);
        return bad(c, p, w);
    }
    *out = d;
    return LOOM_OK;
}

/* $.model.branch_memory: [[branches, fraction], ...] (machine.h) */
static loom_status get_branch_memory(jctx *c, const cJSON *mod, loom_target *t)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(mod, "branch_memory");
    if (!a)
        return LOOM_OK;
    char p[256];
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1 || cJSON_GetArraySize(a) > LOOM_TARGET_MAX_BRANCH_POINTS) {
        snprintf(p, sizeof p, "expected an array of 1 to %d [branches, fraction] pairs", LOOM_TARGET_MAX_BRANCH_POINTS);
        return bad(c, "$.model.branch_memory", p);
    }
    int k = 0;
    for (const cJSON *e = a->child; e; e = e->next, k++) {
        snprintf(p, sizeof p, "$.model.branch_memory[%d]", k);
        const cJSON *m = cJSON_GetArrayItem(e, 0), *f = cJSON_GetArrayItem(e, 1);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsNumber(m) || !cJSON_IsNumber(f))
            return bad(c, p, "expected a pair [branches, fraction] of numbers");
        if (!(m->valuedouble >= 1 && m->valuedouble <= 1e15))
            return bad(c, p, "branches must be at least 1");
        if (!(f->valuedouble >= 0 && f->valuedouble <= 1))
            return bad(c, p, "the fraction must be in [0, 1]");
        if (k > 0 && !(m->valuedouble > t->branch_memory[k - 1][0]))
            return bad(c, p, "branches must be ascending");
        t->branch_memory[k][0] = m->valuedouble;
        t->branch_memory[k][1] = f->valuedouble;
    }
    t->nbranch_memory = k;
    return LOOM_OK;
}

static loom_status get_bool(jctx *c, const cJSON *obj, const char *path, const char *key, int required, int *out)
{
    char p[256];
    snprintf(p, sizeof p, "%s.%s", path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return required ? bad(c, p, "missing; expected true or false") : LOOM_OK;
    if (!cJSON_IsBool(v))
        return bad(c, p, "expected true or false");
    *out = cJSON_IsTrue(v);
    return LOOM_OK;
}

static loom_status get_str(jctx *c, const cJSON *obj, const char *path, const char *key, int required, char *out,
                           size_t n)
{
    char p[256], w[160];
    snprintf(p, sizeof p, "%s.%s", path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return required ? bad(c, p, "missing; expected a string") : LOOM_OK;
    if (!cJSON_IsString(v) || (required && !v->valuestring[0]))
        return bad(c, p, "expected a non-empty string");
    if (strlen(v->valuestring) >= n) {
        snprintf(w, sizeof w, "longer than %zu characters", n - 1);
        return bad(c, p, w);
    }
    snprintf(out, n, "%s", v->valuestring);
    return LOOM_OK;
}

#define TRY LOOM_TRY /* dsl/ir/util.h */

/* The "model" object of a target file (the model parameters; machine.h's
 * file format), into t over its defaults; NULL: none. */
static loom_status parse_model(jctx *c, const cJSON *mod, loom_target *t)
{
    static const char *const modkeys[] = {"mlp",          "overlap",       "gather_cycles_per_lane",
                                          "masked_lane_cycles", "exp_cycles", "div_cycles",
                                          "branch_miss_cycles", "parallel_overhead_ns", "autovectorize",
                                          "warm_caches", "branch_memory", "shared_load_copies",
                                          "shared_load_fixed", "peel_times", "issue_chain_norm", "stream_lines",
                                          "stride_prefetch_lines", "page_bytes", "core_transfer_ns", "reorder_window",
                                          "sample_budget", NULL};
    if (!mod)
        return LOOM_OK;
    if (!cJSON_IsObject(mod))
        return bad(c, "$.model", "expected an object");
    TRY(check_keys(c, mod, "$.model", modkeys));
    double d;
    TRY(get_num(c, mod, "$.model", "mlp", 0, 0, 1, 1024, &t->mlp));
    TRY(get_num(c, mod, "$.model", "overlap", 0, 0, 0, 1, &t->overlap));
    TRY(get_num(c, mod, "$.model", "gather_cycles_per_lane", 0, 0, 0, 1e4, &t->gather_cycles_per_lane));
    TRY(get_num(c, mod, "$.model", "masked_lane_cycles", 0, 0, 0, 1e4, &t->masked_lane_cycles));
    TRY(get_num(c, mod, "$.model", "exp_cycles", 0, 0, 0, 1e4, &t->exp_cycles));
    TRY(get_num(c, mod, "$.model", "div_cycles", 0, 0, 0, 1e4, &t->div_cycles));
    TRY(get_num(c, mod, "$.model", "branch_miss_cycles", 0, 0, 0, 1e4, &t->branch_miss_cycles));
    TRY(get_num(c, mod, "$.model", "parallel_overhead_ns", 0, 0, 0, 1e9, &t->parallel_overhead_ns));
    TRY(get_bool(c, mod, "$.model", "autovectorize", 0, &t->autovectorize));
    TRY(get_bool(c, mod, "$.model", "warm_caches", 0, &t->warm_caches));
    d = t->shared_load_copies;
    TRY(get_num(c, mod, "$.model", "shared_load_copies", 0, 1, 0, 64, &d));
    t->shared_load_copies = (int)d;
    TRY(get_bool(c, mod, "$.model", "shared_load_fixed", 0, &t->shared_load_fixed));
    d = t->peel_times;
    TRY(get_num(c, mod, "$.model", "peel_times", 0, 1, 0, 1024, &d));
    t->peel_times = (int)d;
    d = t->stream_lines;
    TRY(get_num(c, mod, "$.model", "stream_lines", 0, 1, 0, 64, &d));
    t->stream_lines = (int)d;
    d = t->stride_prefetch_lines;
    TRY(get_num(c, mod, "$.model", "stride_prefetch_lines", 0, 1, 0, 1 << 20, &d));
    t->stride_prefetch_lines = (int)d;
    d = t->page_bytes;
    TRY(get_num(c, mod, "$.model", "page_bytes", 0, 1, 0, 1 << 30, &d));
    if (d > 0 && (d < 512 || ((int64_t)d & ((int64_t)d - 1)) != 0))
        return bad(c, "$.model.page_bytes", "a page size is 0 (virtual indexing) or a power of two of at least 512 bytes");
    t->page_bytes = (int)d;
    TRY(get_num(c, mod, "$.model", "core_transfer_ns", 0, 0, 0, 1e5, &t->core_transfer_ns));
    TRY(get_num(c, mod, "$.model", "reorder_window", 0, 0, 0, 1e5, &t->reorder_window));
    if (t->reorder_window > 0 && t->reorder_window < 16)
        return bad(c, "$.model.reorder_window", "a reorder window is 0 (the simulator's default) or at least 16 instructions");
    TRY(get_num(c, mod, "$.model", "sample_budget", 0, 0, 0, 1e12, &t->sample_budget));
    if (t->sample_budget > 0 && t->sample_budget < 1000)
        return bad(c, "$.model.sample_budget", "a budget is 0 (the default) or at least 1000 events");
    TRY(get_num(c, mod, "$.model", "issue_chain_norm", 0, 0, 0, 64, &t->issue_chain_norm));
    if (t->issue_chain_norm > 0 && t->issue_chain_norm < 1)
        return bad(c, "$.model.issue_chain_norm", "a norm's p is 0 (the max) or at least 1");
    TRY(get_branch_memory(c, mod, t));
    return LOOM_OK;
}

static loom_status parse_obj(jctx *c, const cJSON *root, loom_target *t)
{
    static const char *const top[] = {"name",       "description", "cores",       "vector_bits", "vector_registers",
                                      "fma",        "fma_units",   "fadd_units",  "narrow_fma_units", "ghz", "issue_width",
                                      "load_ports", "store_ports", "caches",      "memory",      "model",
                                      "limits",     "cpu",         "calibration", NULL};
    static const char *const ckeys[] = {"name",   "size",      "assoc",     "line", "latency",
                                        "shared", "miss_cost", "bandwidth", NULL};
    static const char *const mkeys[] = {"bandwidth", "core_bandwidth", "nt_bandwidth", "latency_ns", "miss_cost_ns",
                                        NULL};
    static const char *const lkeys[] = {"max_vector_factor", "max_workspace_bytes", NULL};
    if (!cJSON_IsObject(root))
        return bad(c, "$", "expected a JSON object");
    TRY(check_keys(c, root, "$", top));
    memset(t, 0, sizeof *t);
    double d;
    TRY(get_str(c, root, "$", "name", 1, t->name, sizeof t->name));
    TRY(get_str(c, root, "$", "description", 0, t->description, sizeof t->description));
    TRY(get_str(c, root, "$", "cpu", 0, t->cpu, sizeof t->cpu));
    const cJSON *cal = cJSON_GetObjectItemCaseSensitive(root, "calibration");
    if (cal && !cJSON_IsObject(cal))
        return bad(c, "$.calibration", "expected an object (the figures of loom calibrate)");
    TRY(get_num(c, root, "$", "cores", 1, 1, 1, 4096, &d));
    t->cores = (int)d;
    TRY(get_num(c, root, "$", "vector_bits", 1, 1, 32, 65536, &d));
    t->vector_bits = (int)d;
    if (t->vector_bits % 32)
        return bad(c, "$.vector_bits", "expected a multiple of 32 (fp32 lanes)");
    d = loom_target_default_registers(t->vector_bits);
    TRY(get_num(c, root, "$", "vector_registers", 0, 1, 1, 256, &d));
    if (d < 4)
        return bad(c, "$.vector_registers", "expected at least 4 (a register tile needs accumulators, an operand "
                                            "and a broadcast)");
    t->vector_registers = (int)d;
    t->fma = 1;
    TRY(get_bool(c, root, "$", "fma", 0, &t->fma));
    TRY(get_num(c, root, "$", "fma_units", 1, 1, 1, 64, &d));
    t->fma_units = (int)d;
    d = 0;
    TRY(get_num(c, root, "$", "fadd_units", 0, 1, 0, 64, &d));
    t->fadd_units = (int)d;
    d = 0;
    TRY(get_num(c, root, "$", "narrow_fma_units", 0, 1, 0, 64, &d));
    t->narrow_fma_units = (int)d;
    TRY(get_num(c, root, "$", "ghz", 1, 0, 1e-3, 1000, &d));
    t->ghz = d;
    d = 4;
    TRY(get_num(c, root, "$", "issue_width", 0, 1, 1, 64, &d));
    t->issue_width = (int)d;
    d = 2;
    TRY(get_num(c, root, "$", "load_ports", 0, 1, 1, 64, &d));
    t->load_ports = (int)d;
    d = 1;
    TRY(get_num(c, root, "$", "store_ports", 0, 1, 1, 64, &d));
    t->store_ports = (int)d;
    loom_target_defaults(t);

    const cJSON *caches = cJSON_GetObjectItemCaseSensitive(root, "caches");
    if (!caches)
        return bad(c, "$.caches", "missing; expected an array of 1 to 4 cache levels");
    if (!cJSON_IsArray(caches) || cJSON_GetArraySize(caches) < 1 ||
        cJSON_GetArraySize(caches) > LOOM_TARGET_MAX_CACHES)
        return bad(c, "$.caches", "expected an array of 1 to 4 cache levels");
    int k = 0;
    for (const cJSON *cl = caches->child; cl; cl = cl->next, k++) {
        char p[64];
        snprintf(p, sizeof p, "$.caches[%d]", k);
        if (!cJSON_IsObject(cl))
            return bad(c, p, "expected an object");
        TRY(check_keys(c, cl, p, ckeys));
        loom_cache_level *L = &t->caches[k];
        snprintf(L->name, sizeof L->name, "L%d", k + 1);
        TRY(get_str(c, cl, p, "name", 0, L->name, sizeof L->name));
        TRY(get_num(c, cl, p, "size", 1, 1, 1, 1e15, &d));
        L->size = (long long)d;
        TRY(get_num(c, cl, p, "assoc", 1, 1, 1, 1024, &d));
        L->assoc = (int)d;
        TRY(get_num(c, cl, p, "line", 1, 1, 4, 4096, &d));
        L->line = (int)d;
        TRY(get_num(c, cl, p, "latency", 1, 1, 0, 100000, &d));
        L->latency = (int)d;
        TRY(get_bool(c, cl, p, "shared", 1, &L->shared));
        TRY(get_num(c, cl, p, "miss_cost", 0, 0, 0, 1e6, &L->miss_cost));
        TRY(get_num(c, cl, p, "bandwidth", 0, 0, 0, 1e16, &L->bandwidth));
        char q[80];
        if (L->line & (L->line - 1)) {
            snprintf(q, sizeof q, "%s.line", p);
            return bad(c, q, "expected a power of two");
        }
        long long per = (long long)L->line * L->assoc;
        if (L->size % per) {
            snprintf(q, sizeof q, "%s.size", p);
            return bad(c, q, "expected a multiple of line * assoc (a whole number of sets)");
        }
        if (k > 0 && L->line != t->caches[0].line) {
            snprintf(q, sizeof q, "%s.line", p);
            return bad(c, q, "expected the same line size as $.caches[0]");
        }
        if (k > 0 && t->caches[k - 1].shared && !L->shared) {
            snprintf(q, sizeof q, "%s.shared", p);
            return bad(c, q, "a private level cannot follow a shared one");
        }
    }
    t->ncaches = k;

    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(root, "memory");
    if (!mem || !cJSON_IsObject(mem))
        return bad(c, "$.memory", mem ? "expected an object" : "missing; expected an object");
    TRY(check_keys(c, mem, "$.memory", mkeys));
    TRY(get_num(c, mem, "$.memory", "bandwidth", 1, 0, 1, 1e16, &t->mem_bandwidth));
    t->core_bandwidth = t->mem_bandwidth;
    TRY(get_num(c, mem, "$.memory", "core_bandwidth", 0, 0, 1, 1e16, &t->core_bandwidth));
    TRY(get_num(c, mem, "$.memory", "nt_bandwidth", 0, 0, 1, 1e16, &t->mem_nt_bandwidth));
    TRY(get_num(c, mem, "$.memory", "latency_ns", 1, 0, 0, 1e6, &t->mem_latency_ns));
    TRY(get_num(c, mem, "$.memory", "miss_cost_ns", 0, 0, 0, 1e6, &t->mem_miss_cost_ns));

    TRY(parse_model(c, cJSON_GetObjectItemCaseSensitive(root, "model"), t));
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(root, "limits");
    if (lim) {
        if (!cJSON_IsObject(lim))
            return bad(c, "$.limits", "expected an object");
        TRY(check_keys(c, lim, "$.limits", lkeys));
        d = t->max_vector_factor;
        TRY(get_num(c, lim, "$.limits", "max_vector_factor", 0, 1, 1, 4096, &d));
        t->max_vector_factor = (int)d;
        d = (double)t->max_workspace_bytes;
        TRY(get_num(c, lim, "$.limits", "max_workspace_bytes", 0, 1, 0, 1e15, &d));
        t->max_workspace_bytes = (long long)d;
    }
    return LOOM_OK;
}

loom_status loom_target_parse(const char *json, const char *file, loom_target *out, loom_error *err)
{
    jctx c = {file ? file : "<target>", err};
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) {
        int line = 1;
        for (const char *p = json; end && p < end; p++)
            line += *p == '\n';
        return loom_error_set(err, LOOM_ERR_DATA, c.file, line, 0, "%s:%d: not valid JSON (near \"%.20s\")", c.file,
                              line, end ? end : "");
    }
    loom_target t;
    loom_status st = parse_obj(&c, root, &t);
    cJSON_Delete(root);
    if (st != LOOM_OK)
        return st;
    snprintf(t.source, sizeof t.source, "%s", c.file);
    loom__target_finish_sim(&t);
    *out = t;
    return LOOM_OK;
}

/* ---- host ---- */

static long long read_sys_size(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    char b[64] = "";
    char *ok = fgets(b, sizeof b, fp);
    fclose(fp);
    if (!ok)
        return -1;
    char *end;
    long long v = strtoll(b, &end, 10);
    if (*end == 'K')
        v *= 1024;
    else if (*end == 'M')
        v *= 1024 * 1024;
    return v;
}

static int read_sys_str(const char *path, char *out, size_t n)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    char *ok = fgets(out, (int)n, fp);
    fclose(fp);
    if (!ok)
        return -1;
    out[strcspn(out, "\n")] = 0;
    return 0;
}

/* Caches from glibc's sysconf (cpuid) when sysfs has none (some VMs):
 * L1d, L2, L3; an unknown associativity (0) is taken as 16 ways (the size
 * is rounded down to whole sets), L3 is shared when there are 2+ cores. */
static void host_caches_sysconf(loom_target *t)
{
#ifdef _SC_LEVEL1_DCACHE_SIZE
    static const int names[3][3] = {{_SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL1_DCACHE_ASSOC, _SC_LEVEL1_DCACHE_LINESIZE},
                                    {_SC_LEVEL2_CACHE_SIZE, _SC_LEVEL2_CACHE_ASSOC, _SC_LEVEL2_CACHE_LINESIZE},
                                    {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL3_CACHE_ASSOC, _SC_LEVEL3_CACHE_LINESIZE}};
    static const int lat[3] = {5, 16, 60};
    for (int i = 0; i < 3; i++) {
        long size = sysconf(names[i][0]), assoc = sysconf(names[i][1]), line = sysconf(names[i][2]);
        if (size <= 0 || line <= 0 || (line & (line - 1)) || (t->ncaches && line != t->caches[0].line))
            break;
        loom_cache_level L;
        memset(&L, 0, sizeof L);
        snprintf(L.name, sizeof L.name, i ? "L%d" : "L%dd", i + 1);
        L.assoc = assoc > 0 ? (int)assoc : 16;
        L.line = (int)line;
        L.size = size - size % ((long)L.line * L.assoc);
        L.latency = lat[i];
        L.shared = i == 2 && t->cores > 1;
        if (L.size <= 0)
            break;
        t->caches[t->ncaches++] = L;
    }
#else
    (void)t;
#endif
}

loom_status loom_target_host(loom_target *out, loom_error *err)
{
    (void)err;
    loom_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "host");
    snprintf(t.source, sizeof t.source, "host");
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    t.cores = nc > 0 ? (int)nc : 1;
    loom_limits hl = loom_target_cpu_limits(); /* run-time detection (cpuid): dsl/ir/limits.h loom_limits_host */
    t.vector_bits = hl.vector_lanes * 32;
    t.vector_registers = hl.vector_registers;
    t.fma = hl.fma;
    t.fma_units = hl.fma ? 2 : 1;
    t.ghz = 0;
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (fp) {
        char line[8192];
        int got_model = 0;
        double mhz = 0;
        while (fgets(line, sizeof line, fp)) {
            if (!got_model && !strncmp(line, "model name", 10)) {
                got_model = 1;
                const char *c = strchr(line, ':');
                if (c) {
                    snprintf(t.description, sizeof t.description, "%s", c + 2);
                    t.description[strcspn(t.description, "\n")] = 0;
                }
                const char *at = strstr(line, "@ ");
                if (at)
                    t.ghz = atof(at + 2);
            } else if (mhz == 0 && !strncmp(line, "cpu MHz", 7)) {
                const char *c = strchr(line, ':');
                if (c)
                    mhz = atof(c + 1);
            }
        }
        fclose(fp);
        if (t.ghz <= 0 && mhz > 0)
            t.ghz = round(mhz / 100.0) / 10.0;
    }
    if (t.ghz <= 0)
        t.ghz = 2.0;
    static const int lat_by_level[] = {0, 5, 16, 60, 80};
    for (int i = 0; i < 8 && t.ncaches < LOOM_TARGET_MAX_CACHES; i++) {
        char p[128], type[32], shared[64];
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (read_sys_str(p, type, sizeof type))
            break;
        if (!strcmp(type, "Instruction"))
            continue;
        loom_cache_level L;
        memset(&L, 0, sizeof L);
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        long long level = read_sys_size(p);
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        L.size = read_sys_size(p);
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/ways_of_associativity", i);
        L.assoc = (int)read_sys_size(p);
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/coherency_line_size", i);
        L.line = (int)read_sys_size(p);
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
        L.shared = !read_sys_str(p, shared, sizeof shared) && (strchr(shared, ',') || strchr(shared, '-'));
        if (level < 1 || L.size <= 0 || L.assoc <= 0 || L.line <= 0 || (L.line & (L.line - 1)))
            continue;
        if (L.size % ((long long)L.line * L.assoc))
            L.size -= L.size % ((long long)L.line * L.assoc);
        if (t.ncaches && (t.caches[t.ncaches - 1].shared && !L.shared))
            L.shared = 1;
        if (t.ncaches && L.line != t.caches[0].line)
            continue;
        snprintf(L.name, sizeof L.name, "L%d%s", (int)(level % 10), level == 1 ? "d" : "");
        L.latency = lat_by_level[level < 4 ? level : 4];
        t.caches[t.ncaches++] = L;
    }
    if (t.ncaches == 0)
        host_caches_sysconf(&t);
    if (t.ncaches == 0) {
        loom_cache_level d[3] = {{"L1d", 32768, 8, 64, 5, 0, 0, 0}, {"L2", 1048576, 16, 64, 16, 0, 0, 0},
                                 {"L3", 33554432, 16, 64, 60, 1, 0, 0}};
        memcpy(t.caches, d, sizeof d);
        t.ncaches = 3;
    }
    t.issue_width = 4;
    t.load_ports = 2;
    t.store_ports = 1;
    loom_target_defaults(&t);
    t.core_bandwidth = 12e9;
    t.mem_bandwidth = t.cores >= 2 ? 24e9 : 12e9;
    t.mem_latency_ns = 110;
    loom__target_finish_sim(&t);
    *out = t;
    return LOOM_OK;
}

/* ---- fingerprint and limits ---- */

void loom__target_finish_sim(loom_target *t)
{
    t->kind = LOOM_TARGET_SIM;
    t->limits = loom_target_limits(t);
    loom_target_fingerprint(t, t->fingerprint, sizeof t->fingerprint);
}

void loom_target_fingerprint(const loom_target *t, char *buf, size_t n)
{
    char s[2048];
    int k = snprintf(s, sizeof s,
                     "%s|%d|%d|%d|%.17g|%d|%d|%d|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g|%."
                     "17g|%d|%d|%lld|",
                     t->name, t->cores, t->vector_bits, t->fma_units, t->ghz, t->issue_width, t->load_ports,
                     t->store_ports, t->mem_bandwidth, t->core_bandwidth, t->mem_latency_ns, t->mlp, t->overlap,
                     t->gather_cycles_per_lane, t->masked_lane_cycles, t->exp_cycles, t->div_cycles,
                     t->branch_miss_cycles, t->parallel_overhead_ns, t->autovectorize, t->max_vector_factor,
                     t->max_workspace_bytes);
    for (int i = 0; i < t->ncaches && k > 0 && (size_t)k < sizeof s; i++) {
        const loom_cache_level *L = &t->caches[i];
        k += snprintf(s + k, sizeof s - (size_t)k, "%s,%lld,%d,%d,%d,%d|", L->name, L->size, L->assoc, L->line,
                      L->latency, L->shared);
    }
    if (k > 0 && (size_t)k < sizeof s &&
        t->vector_registers > 0 &&
        (t->vector_registers != loom_target_default_registers(t->vector_bits) || !t->fma))
        k += snprintf(s + k, sizeof s - (size_t)k, "vregs=%d,fma=%d|", t->vector_registers, t->fma);
    /* the calibrated model's keys (calibrate.h) enter only when set, so
     * older targets keep their fingerprints */
    for (int i = 0; i < t->ncaches && k > 0 && (size_t)k < sizeof s; i++)
        if (t->caches[i].miss_cost > 0)
            k += snprintf(s + k, sizeof s - (size_t)k, "mc%d=%.17g|", i, t->caches[i].miss_cost);
    for (int i = 0; i < t->ncaches && k > 0 && (size_t)k < sizeof s; i++)
        if (t->caches[i].bandwidth > 0)
            k += snprintf(s + k, sizeof s - (size_t)k, "bw%d=%.17g|", i, t->caches[i].bandwidth);
    if (k > 0 && (size_t)k < sizeof s && (t->mem_miss_cost_ns > 0 || t->warm_caches))
        k += snprintf(s + k, sizeof s - (size_t)k, "mmc=%.17g,warm=%d|", t->mem_miss_cost_ns, t->warm_caches);
    if (k > 0 && (size_t)k < sizeof s && t->shared_load_copies > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "slc=%d|", t->shared_load_copies);
    if (k > 0 && (size_t)k < sizeof s && t->shared_load_fixed)
        k += snprintf(s + k, sizeof s - (size_t)k, "slf|");
    if (k > 0 && (size_t)k < sizeof s && t->peel_times > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "peel=%d|", t->peel_times);
    if (k > 0 && (size_t)k < sizeof s && t->fadd_units > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "fadd=%d|", t->fadd_units);
    if (k > 0 && (size_t)k < sizeof s && t->mem_nt_bandwidth > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "ntbw=%.17g|", t->mem_nt_bandwidth);
    if (k > 0 && (size_t)k < sizeof s && t->narrow_fma_units > t->fma_units)
        k += snprintf(s + k, sizeof s - (size_t)k, "nfma=%d|", t->narrow_fma_units);
    if (k > 0 && (size_t)k < sizeof s && t->issue_chain_norm > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "icn=%.17g|", t->issue_chain_norm);
    if (k > 0 && (size_t)k < sizeof s && t->stream_lines > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "stream=%d|", t->stream_lines);
    if (k > 0 && (size_t)k < sizeof s && t->stride_prefetch_lines > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "spf=%d|", t->stride_prefetch_lines);
    if (k > 0 && (size_t)k < sizeof s && t->page_bytes > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "pg=%d|", t->page_bytes);
    if (k > 0 && (size_t)k < sizeof s && t->core_transfer_ns > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "ctx=%.17g|", t->core_transfer_ns);
    if (k > 0 && (size_t)k < sizeof s && t->reorder_window > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "rob=%.17g|", t->reorder_window);
    if (k > 0 && (size_t)k < sizeof s && t->sample_budget > 0)
        k += snprintf(s + k, sizeof s - (size_t)k, "sb=%.17g|", t->sample_budget);
    for (int i = 0; i < t->nbranch_memory && k > 0 && (size_t)k < sizeof s; i++)
        k += snprintf(s + k, sizeof s - (size_t)k, "bm=%.17g,%.17g|", t->branch_memory[i][0], t->branch_memory[i][1]);
    uint64_t h = loom_fnv1a_str(LOOM_FNV_OFFSET, s);
    snprintf(buf, n, "sim:%s:%016llx", t->name, (unsigned long long)h);
}

loom_limits loom_target_limits(const loom_target *t)
{
    loom_limits l;
    memset(&l, 0, sizeof l); /* the padding too: limits are compared whole (as loom_limits_host's) */
    l.vector_lanes = t->vector_bits / 32 > 0 ? t->vector_bits / 32 : 1;
    l.max_vector_factor = t->max_vector_factor;
    l.cores = t->cores;
    l.max_workspace_bytes = t->max_workspace_bytes;
    l.vector_registers = t->vector_registers > 0 ? t->vector_registers : loom_target_default_registers(t->vector_bits);
    l.fma = t->fma;
    /* the last (outermost) cache level, for the whole chip */
    l.llc_bytes = 0;
    if (t->ncaches > 0) {
        const loom_cache_level *c = &t->caches[t->ncaches - 1];
        l.llc_bytes = (int64_t)c->size * (c->shared ? 1 : (t->cores > 0 ? t->cores : 1));
    }
    return l;
}
