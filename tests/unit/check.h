/*
 * check.h — the unit tests' assert helper and random numbers.
 *
 * CHECK(expr) records a failure (file:line and the expression) and goes on,
 * so one run reports every broken case; check_exit() turns the count into
 * the exit status CTest reads.  Output is capped so an exhaustive loop that
 * fails everywhere stays readable.  Random inputs come from a fixed-seed
 * generator, so a failure reproduces exactly.
 */
#ifndef ST_TEST_CHECK_H
#define ST_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static long check_failures, check_total;

#ifndef CHECK_MAX_PRINTED
#define CHECK_MAX_PRINTED 60
#endif

static inline int check_print_ok(void) { return check_failures <= CHECK_MAX_PRINTED; }

#define CHECK(expr) CHECKF(expr, "%s", "")

/* CHECK with a printf-style note after the expression */
#define CHECKF(expr, ...)                                                     \
    do {                                                                      \
        check_total++;                                                        \
        if (!(expr)) {                                                        \
            check_failures++;                                                 \
            if (check_print_ok()) {                                           \
                fprintf(stderr, "%s:%d: CHECK failed: %s  ", __FILE__, __LINE__, #expr); \
                fprintf(stderr, __VA_ARGS__);                                 \
                fputc('\n', stderr);                                          \
            }                                                                 \
        }                                                                     \
    } while (0)

/* The message contains needle. */
#define CHECK_MSG(msg, needle)                                                \
    CHECKF(strstr((msg), (needle)) != NULL, "message \"%s\" lacks \"%s\"", (msg), (needle))

static inline int check_exit(const char *name)
{
    if (check_failures > CHECK_MAX_PRINTED)
        fprintf(stderr, "(%ld more failures not printed)\n", check_failures - CHECK_MAX_PRINTED);
    printf("%s: %ld checks, %ld failed\n", name, check_total, check_failures);
    return check_failures ? 1 : 0;
}

/* splitmix64: small, fast, and good enough to draw test inputs */
typedef struct test_rng {
    uint64_t s;
} test_rng;

static inline uint64_t rng_u64(test_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint32_t rng_u32(test_rng *r) { return (uint32_t)(rng_u64(r) >> 32); }

/* uniform in [lo, hi], both inclusive */
static inline int64_t rng_range(test_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_u64(r) % (uint64_t)(hi - lo + 1));
}

#endif
