/* Fuzz trace JSON (loom show/validate/run --trace, the database's traces):
 * parse; when it parses, write it back as JSON, print it as C, and replay it
 * on two bound workloads (SpMM, attention) and run the validator on what each
 * replay built, as `loom validate --force` would. */
#include <stdio.h>

#include "../../dsl/ir/program.h"
#include "../../dsl/schedule/schedule.h"
#include "../../traces/trace.h"
#include "../../traces/validate.h"
#include "fuzz_common.h"

static const char *const workloads[2] = {
    "param F = 16\n"
    "tensor A(N, K) csr\n"
    "tensor B(K, F) dense\n"
    "tensor C(N, F) dense output\n"
    "C(i, f) += A(i, k) * B(k, f)\n",
    "param N = 64\n"
    "param D = 16\n"
    "tensor Q(N, D) dense\n"
    "tensor K(N, D) dense\n"
    "tensor V(N, D) dense\n"
    "tensor O(N, D) dense output\n"
    "S(i, j)  = Q(i, d) * K(j, d) * 0.125\n"
    "m(i)   max= S(i, j)\n"
    "P(i, j)  = exp(S(i, j) - m(i))\n"
    "l(i)    += P(i, j)\n"
    "O(i, e) += P(i, j) * V(j, e) / l(i)\n",
};

static loom_program *progs[2];
static loom_schedule *sch;

static int setup(void)
{
    if (sch)
        return 0;
    loom_error err;
    for (int i = 0; i < 2; i++) {
        if (loom_program_parse_string(workloads[i], i ? "attention.loom" : "spmm.loom", &progs[i],
                                      &err) != LOOM_OK)
            abort(); /* the harness itself is broken */
        if (i == 0 && (loom_program_bind_size(progs[0], "N", 48, "fuzz", &err) ||
                       loom_program_bind_size(progs[0], "K", 40, "fuzz", &err)))
            abort();
        if (loom_program_finish_binding(progs[i], &err) != LOOM_OK)
            abort();
    }
    sch = malloc(sizeof *sch);
    if (!sch)
        abort();
    return 0;
}

int loom_fuzz_trace(const uint8_t *data, size_t n)
{
    setup();
    char *text = fuzz_text(data, n);
    if (!text)
        return 0;
    loom_trace *t = NULL;
    loom_error err;
    if (fuzz_check(loom_trace_from_json(text, "fuzz.json", &t, &err)) == LOOM_OK) {
        for (int i = 0; i < 2; i++) {
            const loom_program *prog = progs[i];
            char *json = NULL;
            if (loom_trace_to_json(t, prog, &json) == LOOM_OK)
                free(json);
            FILE *devnull = fopen("/dev/null", "w");
            if (devnull) {
                loom_trace_print_c(t, prog, devnull);
                fclose(devnull);
            }
            if (loom_schedule_init(sch, prog, NULL, &err) == LOOM_OK &&
                loom_trace_replay(t, sch, NULL, &err) == LOOM_OK) {
                loom_limits lim = {16, 16, 2, 65536, 32, 1, 0};
                loom_violation v;
                (void)loom_validate(sch, &lim, &v, &err);
            }
        }
        loom_trace_free(t);
    }
    free(text);
    return 0;
}

LOOM_FUZZ_ENTRY(loom_fuzz_trace)
