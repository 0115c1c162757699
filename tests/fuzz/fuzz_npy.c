/*
 * fuzz_npy.c — libFuzzer target: the .npy reader (st_npy_parse) on
 * arbitrary bytes.  A parse either fails with a message or yields a
 * tensor whose byte count matches its dtype and shape, every byte of
 * which can be read.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/dtype.h"
#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    st_npy n;
    if (st_npy_parse(data, size, "fuzz.npy", &n) != ST_OK) {
        if (!st_last_error() || !*st_last_error()) abort();
        return 0;
    }
    size_t numel = 1;
    for (int i = 0; i < n.rank; i++) numel *= (size_t)n.dims[i];
    if (n.rank < 0 || n.rank > ST_MAX_RANK || n.bytes != numel * st_dtype_size(n.dtype) || !n.data) abort();
    /* touch every byte, so ASan sees a short buffer */
    volatile unsigned char sum = 0;
    for (size_t i = 0; i < n.bytes; i++) sum ^= ((const unsigned char *)n.data)[i];
    (void)sum;
    st_npy_free(&n);
    return 0;
}
