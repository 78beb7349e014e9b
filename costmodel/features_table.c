/* loom: feature names and scaling (the table of features.h), and the data
 * statistics the extraction uses. */
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "features.h"
#include "features_internal.h"

typedef struct feat_entry {
    const char *name;
    unsigned char is_log;
} feat_entry;

#define S0_(id, nm, lg) {"s0." nm, lg},
#define S1_(id, nm, lg) {"s1." nm, lg},
#define S2_(id, nm, lg) {"s2." nm, lg},
#define SUM_(id, nm, lg) {"sum." nm, lg},
#define KER_(id, nm, lg) {"kernel." nm, lg},
#define SP0_(id, nm, lg) {"sp0." nm, lg},
#define SP1_(id, nm, lg) {"sp1." nm, lg},

static const feat_entry feat_table[] = {
    LOOM_FEAT_STORE(S0_) LOOM_FEAT_STORE(S1_) LOOM_FEAT_STORE(S2_) LOOM_FEAT_SUM(SUM_) LOOM_FEAT_KERNEL(KER_)
        LOOM_FEAT_SPARSE(SP0_) LOOM_FEAT_SPARSE(SP1_)};

_Static_assert(sizeof feat_table / sizeof feat_table[0] == LOOM_FEAT_D, "feature table and layout agree");
_Static_assert(LOOM_FEAT_SLOTS == 3 && LOOM_FEAT_SPARSE_OPS == 2, "the table spells out 3 slots and 2 sparse tensors");

int loom_feature_count(void)
{
    return LOOM_FEAT_D;
}

const char *loom_feature_name(int k)
{
    return k >= 0 && k < LOOM_FEAT_D ? feat_table[k].name : NULL;
}

int loom_feature_is_log(int k)
{
    return k >= 0 && k < LOOM_FEAT_D ? feat_table[k].is_log : 0;
}

int loom_feature_find(const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k < LOOM_FEAT_D; k++)
        if (strcmp(feat_table[k].name, name) == 0)
            return k;
    return -1;
}

/* ---- data statistics ------------------------------------------------ */

static loom_status level_stats(const loom_program *prog, int t, const loom_tensor_abi *a, int l, int64_t nparent,
                               loom_level_stats *ls, double *scratch, loom_error *err)
{
    const int32_t *pos = a->pos[l];
    if (nparent <= 0 || !pos) {
        ls->segments = nparent > 0 ? nparent : 0;
        return LOOM_OK;
    }
    if (pos[0] != 0)
        return loom_error_set(err, LOOM_ERR_DATA, prog->path, 0, 0,
                              "tensor %s level %d: pos[0] is %d, expected 0 (a malformed compressed level)",
                              prog->tensors[t].name, l + 1, (int)pos[0]);
    for (int64_t s = 0; s < nparent; s++) {
        if (pos[s + 1] < pos[s])
            return loom_error_set(err, LOOM_ERR_DATA, prog->path, 0, 0,
                                  "tensor %s level %d: pos[%lld] = %d < pos[%lld] = %d (pos must not decrease)",
                                  prog->tensors[t].name, l + 1, (long long)s + 1, (int)pos[s + 1], (long long)s,
                                  (int)pos[s]);
        scratch[s] = (double)(pos[s + 1] - pos[s]);
    }
    ls->segments = nparent;
    ls->entries = pos[nparent];
    ls->mean = gsl_stats_mean(scratch, 1, (size_t)nparent);
    ls->max = gsl_stats_max(scratch, 1, (size_t)nparent);
    double sd = nparent > 1 ? gsl_stats_sd_with_fixed_mean(scratch, 1, (size_t)nparent, ls->mean) : 0.0;
    ls->cv = ls->mean > 0 ? sd / ls->mean : 0.0;
    return LOOM_OK;
}

loom_status loom_data_stats_compute(const loom_dataset *ds, loom_data_stats *out, loom_error *err)
{
    if (!ds || !out || !ds->prog)
        return loom_error_set(err, LOOM_ERR_INVALID, NULL, 0, 0,
                              "loom_data_stats_compute: the data set and the output must not be NULL");
    memset(out, 0, sizeof *out);
    const loom_program *prog = ds->prog;
    out->ntensors = prog->ntensors;
    for (int t = 0; t < prog->ntensors; t++) {
        const loom_tensor *T = &prog->tensors[t];
        const loom_tensor_abi *a = &ds->t[t];
        loom_tensor_stats *ts = &out->t[t];
        ts->order = T->order;
        ts->row_level = -1;
        ts->sparse = loom_tensor_is_sparse(prog, t);
        double dense_n = 1;
        for (int d = 0; d < T->order && d < LOOM_MAX_ORDER; d++) {
            ts->dims[d] = a->dims[d] > 0 ? a->dims[d] : loom_program_dim(prog, t, d);
            dense_n *= (double)ts->dims[d];
        }
        ts->nnz = ts->sparse ? a->nnz : (int64_t)dense_n;
        /* walk the levels: parent positions of level l = positions of level l-1 */
        int64_t nparent = 1;
        for (int l = 0; l < T->format.nlevels && l < LOOM_MAX_ORDER; l++) {
            loom_level_stats *ls = &ts->level[l];
            int mode = T->format.mode[l];
            ls->kind = T->format.level[l];
            ls->extent = mode >= 0 && mode < LOOM_MAX_ORDER ? ts->dims[mode] : 0;
            if (ls->kind == LOOM_LEVEL_DENSE || !a->pos[l]) {
                ls->mean = ls->max = (double)ls->extent;
                ls->cv = 0;
                ls->segments = nparent;
                ls->entries = nparent * ls->extent;
                nparent = ls->entries;
                continue;
            }
            ts->row_level = l;
            double *scratch = malloc((size_t)(nparent > 0 ? nparent : 1) * sizeof *scratch);
            if (!scratch)
                return loom_error_set(err, LOOM_ERR_NOMEM, NULL, 0, 0, "out of memory for data statistics");
            loom_status s = level_stats(prog, t, a, l, nparent, ls, scratch, err);
            free(scratch);
            if (s)
                return s;
            nparent = ls->entries;
        }
        if (ts->sparse && ts->row_level >= 0)
            ts->nnz = ts->level[ts->row_level].entries;
    }
    return LOOM_OK;
}
