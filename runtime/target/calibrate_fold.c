/* Folding an earlier calibration of this CPU into a new one
 * (calibrate.h, loom_calibrate_run): the readings a target file keeps and
 * the rule that combines each pair. */
#include <stddef.h>
#include <string.h>

#include "calibrate_internal.h"

/* The readings a target file keeps (calibration.readings), and how two
 * calibrations of one CPU combine: KEEP_LEAST a time (the least disturbed
 * run is the fastest), KEEP_MOST a rate or bandwidth, SAME the
 * configuration (the two must agree, or nothing is folded), PER_LEVEL the
 * per-level figures (folded level by level where the working sets agree),
 * BRANCH the branch figures (kept together from the calibration whose
 * predictable branch ran fastest: their differences are the model's
 * figures), DERIVED read again by the caller from the folded sweep. */
enum { KEEP_LEAST, KEEP_MOST, SAME, PER_LEVEL, BRANCH, DERIVED };
typedef struct reading {
    const char *name;
    size_t off;
    int n, how;
} reading;
#define READING(f, n, how) {#f, offsetof(craw, f), n, how}
static const reading READINGS[] = {
    READING(clock_ns, 1, KEEP_LEAST),       READING(nlev, 1, SAME),
    READING(ws, NLEV, PER_LEVEL),           READING(lat_ns, NLEV, PER_LEVEL),
    READING(rd_bw, NLEV, PER_LEVEL),        READING(gat_ns, NLEV, PER_LEVEL),
    READING(gat_scalar_l1, 1, KEEP_LEAST),  READING(gat_auto_l1, 1, KEEP_LEAST),
    READING(gat_auto_scalar_l1, 1, KEEP_LEAST), READING(nsweep, 1, SAME),
    READING(sweep_ws, NSWEEP, SAME),        READING(sweep_lat, NSWEEP, KEEP_LEAST),
    READING(sweep_hi, NSWEEP, KEEP_MOST),   READING(llc_eff, 1, DERIVED),
    READING(st_bw, 1, KEEP_MOST),           READING(st_nt_bw, 1, KEEP_MOST),
    READING(st_nt_all, 1, KEEP_MOST),
    READING(triad1, 1, KEEP_MOST),          READING(triadn, 1, KEEP_MOST),
    READING(readn, 1, KEEP_MOST),           READING(fma, 3, KEEP_MOST),
    READING(fma_add, 1, KEEP_MOST),
    READING(omp_region, 1, KEEP_LEAST),     READING(omp_barrier, 1, KEEP_LEAST),
    READING(threads, 1, SAME),              READING(vbytes, 1, SAME),
    READING(issue_per_ns, 1, KEEP_MOST),    READING(br_random_ns, 1, BRANCH),
    READING(br_pred_ns, 1, BRANCH),         READING(br_mem_ns, NBRMEM, BRANCH),
    READING(stride_ns, NSTRIDE, KEEP_LEAST), READING(stride_rand_ns, NSTRIDE, KEEP_LEAST),
    READING(rob_pairs, NROB, SAME),         READING(rob_ns, NROB, KEEP_LEAST),
};
#define NREADINGS ((int)(sizeof READINGS / sizeof *READINGS))

static double *reading_at(craw *r, const reading *d) { return (double *)((char *)r + d->off); }

/* r's readings as a JSON object {name: number or [numbers]}. */
cJSON *loom__calib_readings_json(const craw *r)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < NREADINGS; i++) {
        const double *v = reading_at((craw *)r, &READINGS[i]);
        if (READINGS[i].n == 1)
            cJSON_AddNumberToObject(o, READINGS[i].name, v[0]);
        else
            cJSON_AddItemToObject(o, READINGS[i].name, cJSON_CreateDoubleArray(v, READINGS[i].n));
    }
    return o;
}

/* The readings and calibration count of the earlier target file text
 * `earlier` when it is a calibration of this CPU in this mode with every
 * reading: 1, else 0 (nothing to fold: another CPU or mode, an older
 * format, a file edited by hand). */
int loom__calib_earlier_readings(const char *earlier, const char *cpu, int quick, craw *e, int *count)
{
    cJSON *root = earlier ? cJSON_Parse(earlier) : NULL;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "cpu");
    const cJSON *cal = cJSON_GetObjectItemCaseSensitive(root, "calibration");
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(cal, "mode");
    const cJSON *rd = cJSON_GetObjectItemCaseSensitive(cal, "readings");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(cal, "calibrations");
    int ok = cJSON_IsString(c) && !strcmp(c->valuestring, cpu) && cJSON_IsString(mode) &&
             !strcmp(mode->valuestring, quick ? "quick" : "full") && cJSON_IsObject(rd);
    memset(e, 0, sizeof *e);
    for (int i = 0; ok && i < NREADINGS; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(rd, READINGS[i].name);
        double *dst = reading_at(e, &READINGS[i]);
        if (READINGS[i].n == 1) {
            ok = cJSON_IsNumber(v);
            if (ok)
                dst[0] = v->valuedouble;
        } else {
            ok = cJSON_IsArray(v) && cJSON_GetArraySize(v) == READINGS[i].n;
            for (int k = 0; ok && k < READINGS[i].n; k++) {
                const cJSON *x = cJSON_GetArrayItem(v, k);
                ok = cJSON_IsNumber(x);
                if (ok)
                    dst[k] = x->valuedouble;
            }
        }
    }
    *count = cJSON_IsNumber(n) && n->valuedouble >= 1 ? (int)n->valuedouble : 1;
    cJSON_Delete(root);
    return ok;
}

/* Fold the earlier readings e into this calibration's r (READINGS' rules);
 * 0 if the two measured different configurations (r unchanged). */
int loom__calib_fold(craw *r, const craw *e)
{
    for (int i = 0; i < NREADINGS; i++) {
        const reading *d = &READINGS[i];
        double *a = reading_at(r, d), *b = reading_at((craw *)e, d);
        for (int k = 0; d->how == SAME && k < d->n; k++)
            if (a[k] != b[k])
                return 0;
    }
    int use_e_branch = e->br_pred_ns > 0 && (r->br_pred_ns <= 0 || e->br_pred_ns < r->br_pred_ns);
    for (int i = 0; i < NREADINGS; i++) {
        const reading *d = &READINGS[i];
        double *a = reading_at(r, d), *b = reading_at((craw *)e, d);
        for (int k = 0; k < d->n; k++) {
            if (d->how == KEEP_LEAST && b[k] > 0 && (a[k] <= 0 || b[k] < a[k]))
                a[k] = b[k];
            else if (d->how == KEEP_MOST && b[k] > a[k])
                a[k] = b[k];
            else if (d->how == BRANCH && use_e_branch)
                a[k] = b[k];
        }
    }
    for (int l = 0; l <= (int)r->nlev && l < NLEV; l++) /* level by level, at the same working set */
        if (r->ws[l] == e->ws[l]) {
            if (e->lat_ns[l] > 0 && e->lat_ns[l] < r->lat_ns[l])
                r->lat_ns[l] = e->lat_ns[l];
            if (e->gat_ns[l] > 0 && e->gat_ns[l] < r->gat_ns[l])
                r->gat_ns[l] = e->gat_ns[l];
            if (e->rd_bw[l] > r->rd_bw[l])
                r->rd_bw[l] = e->rd_bw[l];
        }
    return 1;
}

