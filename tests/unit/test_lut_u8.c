/*
 * test_lut_u8.c — st_lut_u8 (src/backends/cpu/lut_u8.h) gives table[x]
 * for every byte.
 *
 * Random tables (each byte value's lookup is checked: indexes below and
 * above 128 take different halves of the vector form), random inputs,
 * lengths 0 to 300 and start offsets 0 to 63 so the masked tail and
 * unaligned rows run, the output poisoned first with a guard on each side
 * that must stay untouched, and one in-place call.  The reference is the
 * plain indexing.  CTest runs it as is and with STRATA_CPU_NO_AVX512=1.
 */
#include <stdlib.h>

#include "backends/cpu/lut_u8.h"
#include "check.h"

#define GUARD 64
#define POISON 0xa5

int main(void)
{
    test_rng rng = {15};
    uint8_t table[256], x[64 + 300], y[GUARD + 64 + 300 + GUARD];
    for (int round = 0; round < 8; round++) {
        for (int b = 0; b < 256; b++) table[b] = (uint8_t)rng_u32(&rng);
        for (int64_t n = 0; n <= 300; n++) {
            int64_t off = rng_range(&rng, 0, 63);
            for (int64_t i = 0; i < n; i++) x[off + i] = (uint8_t)rng_u32(&rng);
            memset(y, POISON, sizeof y);
            st_lut_u8(table, x + off, y + GUARD + off, n);
            for (int64_t i = 0; i < n; i++)
                CHECKF(y[GUARD + off + i] == table[x[off + i]], "n %lld, element %lld", (long long)n, (long long)i);
            for (int64_t i = 0; i < GUARD + off; i++) CHECKF(y[i] == POISON, "n %lld: wrote before the row", (long long)n);
            for (int64_t i = GUARD + off + n; i < (int64_t)sizeof y; i++)
                CHECKF(y[i] == POISON, "n %lld: wrote past the row", (long long)n);
        }
    }
    /* every index, in place */
    uint8_t all[256], want[256];
    for (int b = 0; b < 256; b++) {
        all[b] = (uint8_t)b;
        want[b] = table[b];
    }
    st_lut_u8(table, all, all, 256);
    CHECK(memcmp(all, want, 256) == 0);
    return check_exit("lut_u8");
}
