/* Fuzz target descriptions (the JSON files in targets/): parse, fingerprint. */
#include "../../runtime/target/target.h"
#include "fuzz_common.h"

int loom_fuzz_target(const uint8_t *data, size_t n)
{
    char *text = fuzz_text(data, n);
    if (!text)
        return 0;
    loom_target t;
    loom_error err;
    if (fuzz_check(loom_target_parse(text, "fuzz.json", &t, &err)) == LOOM_OK) {
        char fp[256];
        loom_target_fingerprint(&t, fp, sizeof fp);
    }
    free(text);
    return 0;
}

LOOM_FUZZ_ENTRY(loom_fuzz_target)
