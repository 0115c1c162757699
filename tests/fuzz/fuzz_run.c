/*
 * fuzz_run.c — libFuzzer target: load a model from arbitrary bytes and,
 * if it loads, create a session and run it once.
 *
 * Every input gets small random data (floats in [-1, 1), integers in
 * [0, 10), bools), every symbolic dim is 2 and an input of unknown rank is
 * a vector of 2.  The session has a 64 MB memory limit and one thread; its
 * precision and the sanitizer are picked from a hash of the bytes, so an
 * input always replays the same way.  Every output is read back whole.
 * Nothing may crash, leak, read out of bounds or hit undefined behaviour;
 * with STRATA_FUZZ_STRICT=1 in the environment an ST_ERR_INTERNAL ("a bug
 * in strata") aborts too.  STRATA_FUZZ_PRECISION (f32, f16, bf16) and
 * STRATA_FUZZ_SANITIZE (0, 1) fix those two for every input, to replay a
 * corpus at each setting.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "strata.h"

#define MEMORY_LIMIT (64u << 20)
#define INPUT_MAX_BYTES (1u << 20)   /* per input: larger inputs are not run */

static int strict;
static int force_precision = -1; /* STRATA_FUZZ_PRECISION: f32, f16 or bf16 for every input */
static int force_sanitize = -1;  /* STRATA_FUZZ_SANITIZE: 0 or 1 for every input */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *e = getenv("STRATA_FUZZ_STRICT");
    strict = e && *e && *e != '0';
    /* replaying a corpus at one precision or sanitizer setting (every
     * seed model at f16, say) rather than the one its hash picks */
    const char *p = getenv("STRATA_FUZZ_PRECISION");
    if (p && *p) force_precision = !strcmp(p, "f16") ? ST_F16 : !strcmp(p, "bf16") ? ST_BF16 : ST_F32;
    const char *z = getenv("STRATA_FUZZ_SANITIZE");
    if (z && *z) force_sanitize = *z != '0';
    return 0;
}

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void check(st_status s)
{
    if (s == ST_ERR_INTERNAL && strict) {
        fprintf(stderr, "fuzz_run: ST_ERR_INTERNAL: %s\n", st_last_error());
        abort();
    }
}

/* Binds random data to every input; false: the run is skipped. */
static bool bind_inputs(const st_model *m, st_session *s, uint64_t *rng)
{
    for (int i = 0; i < st_model_input_count(m); i++) {
        st_value_info info;
        if (st_model_input_info(m, i, &info) != ST_OK) abort();
        int rank = info.rank < 0 ? 1 : info.rank;
        int64_t dims[ST_MAX_RANK];
        size_t numel = 1, es = st_dtype_size(info.dtype);
        for (int d = 0; d < rank; d++) {
            dims[d] = info.rank < 0 || info.dims[d] < 0 ? 2 : info.dims[d];
            if (dims[d] && numel > INPUT_MAX_BYTES / (size_t)dims[d]) return false;
            numel *= (size_t)dims[d];
        }
        /* strings take st_session_set_input_strings, not numbers */
        if (!es || numel * es > INPUT_MAX_BYTES || info.dtype == ST_STRING) return false;
        unsigned char *buf = malloc(numel * es + 1);
        if (!buf) abort();
        for (size_t k = 0; k < numel; k++) {
            uint64_t r = next(rng);
            void *p = buf + k * es;
            if (st_dtype_is_float(info.dtype)) st_store_f64(info.dtype, p, (double)(r >> 11) * 0x1p-53 * 2.0 - 1.0);
            else if (info.dtype == ST_BOOL) st_store_i64(info.dtype, p, (int64_t)(r & 1));
            else st_store_i64(info.dtype, p, (int64_t)(r % 10));
        }
        st_status r = st_session_set_input_checked(s, info.name, info.dtype, rank, dims, buf, numel * es);
        free(buf);
        check(r);
        if (r != ST_OK) return false;
    }
    return true;
}

static void read_outputs(const st_model *m, st_session *s)
{
    for (int i = 0; i < st_model_output_count(m); i++) {
        st_value_info info;
        if (st_model_output_info(m, i, &info) != ST_OK) abort();
        st_tensor *t;
        st_status r = st_session_output(s, info.name, &t);
        check(r);
        if (r != ST_OK) continue;
        st_dtype dt = st_tensor_dtype(t);
        int64_t numel = st_tensor_numel(t);
        if (numel < 0 || (uint64_t)numel * st_dtype_size(dt) > 2ull * MEMORY_LIMIT) abort();
        size_t bytes = (size_t)numel * st_dtype_size(dt);
        void *buf = malloc(bytes + 1);
        if (!buf) abort();
        check(st_tensor_read(t, dt, buf, bytes));
        free(buf);
        st_tensor_free(t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    st_model *m = NULL;
    if (st_model_load_memory(data, size, NULL, &m) != ST_OK) return 0;
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the bytes */
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ull;
    st_session_options o;
    st_session_options_init(&o);
    o.threads = 1;
    o.memory_limit = MEMORY_LIMIT;
    o.precision = h % 4 == 0 ? ST_F16 : h % 4 == 1 ? ST_BF16 : ST_F32;
    o.sanitize = (int)((h >> 2) & 1);
    if (force_precision >= 0) o.precision = (st_dtype)force_precision;
    if (force_sanitize >= 0) o.sanitize = force_sanitize;
    st_session *s = NULL;
    st_status r = st_session_create(m, &o, &s);
    check(r);
    if (r == ST_OK) {
        uint64_t rng = h;
        if (bind_inputs(m, s, &rng)) {
            r = st_session_run(s);
            check(r);
            if (r == ST_OK) {
                r = st_session_wait(s);
                check(r);
                if (r == ST_OK) read_outputs(m, s);
            }
        }
        st_session_free(s);
    }
    st_model_free(m);
    return 0;
}
