/* Fuzz fusion plans (search/plan/plan.h, docs/plans.md): AutoSparse's plan JSON
 * read and checked against a fixed two-layer GCN (workloads/gcn2.loom's
 * statements, sizes bound without data); an accepted plan is costed. */
#include "../../search/plan/plan.h"
#include "fuzz_common.h"

static const char GCN2[] = "param F = 4\nparam C = 3\ntensor A(N, N) csr\ntensor X(N, G) csr\n"
                           "tensor W1(G, F) dense\ntensor W2(F, C) dense\ntensor H2(N, C) dense output\n"
                           "T1(i, f) = X(i, g) * W1(g, f)\nZ1(i, f) = A(i, j) * T1(j, f)\nH1(i, f) = relu(Z1(i, f))\n"
                           "T2(i, c) = H1(i, f) * W2(f, c)\nH2(i, c) = A(i, j) * T2(j, c)\n";

int loom_fuzz_plan(const uint8_t *data, size_t n)
{
    static loom_program *prog;
    static loom_plan_ctx ctx;
    static int ready;
    loom_error err;
    if (!ready) {
        if (loom_program_parse_string(GCN2, "gcn2.loom", &prog, &err) != LOOM_OK ||
            loom_program_bind_size(prog, "N", 5, "--param", &err) != LOOM_OK ||
            loom_program_bind_size(prog, "G", 6, "--param", &err) != LOOM_OK ||
            loom_program_finish_binding(prog, &err) != LOOM_OK ||
            fuzz_check(loom_plan_ctx_init(&ctx, prog, NULL, NULL, NULL, &err)) != LOOM_OK)
            abort(); /* the fixed program must load */
        ready = 1;
    }
    char *text = fuzz_text(data, n);
    if (!text)
        return 0;
    loom_plan *plans = NULL;
    int np = 0;
    if (fuzz_check(loom_plan_parse(&ctx, text, "fuzz.json", &plans, &np, &err)) == LOOM_OK) {
        for (int k = 0; k < np; k++)
            if (plans[k].ngroups < 1 || plans[k].mask < 0 || plans[k].mask >= ((int64_t)1 << ctx.nedges))
                abort(); /* an accepted plan is a partition over the offered edges */
        free(plans);
    } else if (plans)
        abort(); /* a refused input leaves nothing allocated */
    free(text);
    return 0;
}

LOOM_FUZZ_ENTRY(loom_fuzz_plan)
