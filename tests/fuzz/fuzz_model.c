/* Fuzz model files (search/model/model.h, docs/models.md): the input is
 * written to DIR/fuzz.model, in a folder that also holds a small workload
 * (w.loom, SpMM with F = 2) and its data (a.mtx, 4 x 4), so relative paths
 * in the input reach them.  An accepted model is consistent (every call in
 * a task, weights the sum of runs, feeds between earlier and later calls);
 * a refused one names the model file and leaves nothing allocated. */
#include <stdio.h>
#include <unistd.h>

#include "../../search/model/model.h"
#include "fuzz_common.h"

static const char W[] = "param F = 2\ntensor A(N, K) csr\ntensor B(K, F) dense\ntensor C(N, F) dense output\n"
                        "C(i, f) += A(i, k) * B(k, f)\n";
static const char A[] = "%%MatrixMarket matrix coordinate real general\n4 4 5\n1 1 1\n2 3 2\n3 2 3\n4 4 4\n1 4 5\n";

static void put(const char *dir, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0)
        abort();
    fclose(f);
}

/* The model's invariants; aborts on a broken one. */
static void check_model(const loom_model *m)
{
    if (m->ncalls < 1 || m->ntasks < 1 || m->ntasks > m->ncalls)
        abort();
    long runs = 0, weight = 0;
    for (int k = 0; k < m->ncalls; k++) {
        if (m->calls[k].task < 0 || m->calls[k].task >= m->ntasks || m->calls[k].runs < 1 || !m->calls[k].ds)
            abort();
        runs += m->calls[k].runs;
    }
    for (int t = 0; t < m->ntasks; t++)
        weight += m->tasks[t].weight;
    for (int f = 0; f < m->nfeeds; f++)
        if (m->feeds[f].src >= m->feeds[f].dst)
            abort();
    if (runs != weight)
        abort();
}

static char dir[64];

/* The folder and its three files, at exit. */
static void cleanup(void)
{
    const char *names[] = {"w.loom", "a.mtx", "fuzz.model"};
    char path[128];
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        unlink(path);
    }
    rmdir(dir);
}

int loom_fuzz_model(const uint8_t *data, size_t n)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/loom-fuzz-model-XXXXXX");
        if (!mkdtemp(dir))
            abort();
        put(dir, "w.loom", W);
        put(dir, "a.mtx", A);
        atexit(cleanup);
    }
    char path[128];
    snprintf(path, sizeof path, "%s/fuzz.model", dir);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n))
        abort();
    fclose(f);
    loom_model *m = NULL;
    loom_error err;
    if (fuzz_check(loom_model_load(path, 1, &m, &err)) == LOOM_OK)
        check_model(m);
    else if (m || strcmp(err.file, path))
        abort(); /* a refused model leaves nothing and names the file */
    loom_model_free(m);
    return 0;
}

LOOM_FUZZ_ENTRY(loom_fuzz_model)
