/* Fuzz the .loom workload language: parse, bind sizes (defaults and a
 * --param-like binding of every size), print. */
#include <stdio.h>

#include "../../dsl/ir/program.h"
#include "fuzz_common.h"

int loom_fuzz_loom(const uint8_t *data, size_t n)
{
    char *text = fuzz_text(data, n);
    if (!text)
        return 0;
    loom_program *prog = NULL;
    loom_error err;
    if (fuzz_check(loom_program_parse_string(text, "fuzz.loom", &prog, &err)) == LOOM_OK) {
        for (int s = 0; s < prog->nsizes; s++)
            if (!prog->sizes[s].bound)
                (void)fuzz_check(loom_program_bind_size(prog, prog->sizes[s].name, 3 + s, "--param", &err));
        (void)fuzz_check(loom_program_finish_binding(prog, &err));
        (void)loom_program_hash(prog);
        FILE *devnull = fopen("/dev/null", "w");
        if (devnull) {
            loom_program_print(prog, devnull);
            fclose(devnull);
        }
        loom_program_free(prog);
    }
    free(text);
    return 0;
}

LOOM_FUZZ_ENTRY(loom_fuzz_loom)
