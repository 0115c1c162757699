/*
 * fuzz_loader.c — libFuzzer target: the ONNX loader on arbitrary bytes.
 *
 * st_model_load_memory must either return a model whose every input and
 * output can be described, or fail with a message; never crash, leak or
 * read out of bounds.  External data resolves against a scratch directory
 * holding one 64-byte file (w.bin), so the path checks and the reader run
 * too, without any input being able to reach a real file outside it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strata.h"

static char scratch[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(scratch, sizeof scratch, "/tmp/strata_fuzz_loader_XXXXXX");
    if (!mkdtemp(scratch)) abort();
    char path[128];
    snprintf(path, sizeof path, "%s/w.bin", scratch);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    for (int i = 0; i < 64; i++) fputc(i, f);
    fclose(f);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    st_model *m = NULL;
    if (st_model_load_memory(data, size, scratch, &m) != ST_OK) {
        /* a failure always explains itself */
        if (!st_last_error() || !*st_last_error()) abort();
        return 0;
    }
    st_value_info info;
    for (int i = 0; i < st_model_input_count(m); i++)
        if (st_model_input_info(m, i, &info) != ST_OK || !info.name) abort();
    for (int i = 0; i < st_model_output_count(m); i++)
        if (st_model_output_info(m, i, &info) != ST_OK || !info.name) abort();
    st_model_free(m);
    return 0;
}
