/*
 * gemm_s8.c — the int8 GEMM core's packing, its portable kernel, the
 * dispatch to the VNNI kernels (gemm_s8_vnni.c) and the threaded product of
 * plain matrices (see gemm_s8.h for the layouts and the arithmetic).
 *
 * The portable kernel walks the same packed layouts as the VNNI one and
 * sums in uint32 (wrapping, like vpdpbusd), then runs the same epilogue in
 * scalar code; it is what CPUs without AVX-512 VNNI and the
 * STRATA_CPU_NO_AVX512=1 test runs use.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/gemm_s8.h"
#include "backends/cpu/gemm_s8_kern.h"

static pthread_once_t s8_once = PTHREAD_ONCE_INIT;
static bool s8_ok;

static void s8_probe(void)
{
    const char *off = getenv("STRATA_CPU_NO_AVX512");
    s8_ok = !(off && *off && strcmp(off, "0") != 0) && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
}

bool st_gemm_s8_fast(void)
{
    pthread_once(&s8_once, s8_probe);
    return s8_ok;
}

/* aligned_alloc wants a multiple of the alignment, and never 0 bytes here */
static void *alloc64(size_t bytes) { return aligned_alloc(64, bytes ? (bytes + 63) / 64 * 64 : 64); }

static inline int32_t byte_val(uint8_t v, bool is_unsigned) { return is_unsigned ? (int32_t)v : (int32_t)(int8_t)v; }

/* ---- packing ---- */

static st_s8_packed *packed_new(st_dtype type, bool b_side, int64_t n, int64_t k, size_t bytes)
{
    st_s8_packed *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->type = type;
    p->b_side = b_side;
    p->n = n;
    p->k = k;
    p->kq = (k + 3) / 4;
    p->bytes = bytes;
    p->data = alloc64(bytes);
    p->sums = malloc((size_t)(n > 0 ? n : 1) * sizeof *p->sums);
    if (!p->data || !p->sums) {
        st_gemm_s8_packed_free(p);
        return NULL;
    }
    memset(p->data, 0, bytes);
    return p;
}

void st_gemm_s8_packed_free(st_s8_packed *p)
{
    if (!p) return;
    free(p->data);
    free(p->sums);
    free(p);
}

st_s8_packed *st_gemm_s8_pack_a(const void *a, st_dtype type, int64_t m, int64_t per_group, int64_t rs,
                                const int64_t *koff, int64_t k)
{
    if (per_group < 1) per_group = 1;
    int64_t groups = m / per_group, gblocks = (per_group + ST_S8_MR - 1) / ST_S8_MR, kq = (k + 3) / 4;
    st_s8_packed *p = packed_new(type, false, m, k, (size_t)(groups * gblocks * kq) * ST_S8_MR * 4);
    if (!p) return NULL;
    p->groups = groups;
    p->per_group = per_group;
    bool u = type == ST_U8;
    const uint8_t *src = a;
    for (int64_t i = 0; i < m; i++) {
        int64_t g = i / per_group, r = i % per_group, blk = g * gblocks + r / ST_S8_MR;
        uint8_t *d = p->data + blk * kq * ST_S8_MR * 4 + (r % ST_S8_MR) * 4;
        uint32_t sum = 0;
        for (int64_t q = 0; q < k; q++) {
            if (koff[q] < 0) continue;
            uint8_t v = src[i * rs + koff[q]];
            d[(q / 4) * ST_S8_MR * 4 + q % 4] = v;
            sum += (uint32_t)byte_val(v, u);
        }
        p->sums[i] = (int32_t)sum;
    }
    return p;
}

st_s8_packed *st_gemm_s8_pack_b(const void *b, st_dtype type, int64_t k, int64_t n, int64_t rs, int64_t cs)
{
    int64_t kq = (k + 3) / 4, panels = (n + ST_S8_NR - 1) / ST_S8_NR;
    st_s8_packed *p = packed_new(type, true, n, k, (size_t)panels * st_gemm_s8_panel_bytes(kq));
    if (!p) return NULL;
    p->groups = 1;
    p->per_group = n;
    bool u = type == ST_U8;
    const uint8_t *src = b;
    for (int64_t j = 0; j < n; j++) {
        uint8_t *d = p->data + (j / ST_S8_NR) * st_gemm_s8_panel_bytes(kq) + (j % ST_S8_NR) * 4;
        uint32_t sum = 0;
        for (int64_t q = 0; q < k; q++) {
            uint8_t v = src[q * rs + j * cs];
            d[(q / 4) * ST_S8_NR * 4 + q % 4] = v;
            sum += (uint32_t)byte_val(v, u);
        }
        p->sums[j] = (int32_t)sum;
    }
    return p;
}

/* ---- the portable kernel and epilogue ---- */

void st_s8_epi_scalar(const st_s8_epi *e, int64_t i, int64_t j, uint32_t d, void *c)
{
    if (e->row_add) d += (uint32_t)e->row_add[i];
    if (e->col_add) d += (uint32_t)e->col_add[j];
    if (e->row_mul) d += (uint32_t)e->row_mul[i] * (uint32_t)e->col_mul[j];
    if (e->row_mul2) d += (uint32_t)e->row_mul2[i] * (uint32_t)e->col_mul2[j];
    int32_t v = (int32_t)d;
    if (e->out == ST_S8_OUT_I32) {
        *(int32_t *)c = v;
        return;
    }
    float s = e->row_scale ? (e->col_scale ? e->row_scale[i] * e->col_scale[j] : e->row_scale[i])
                           : (e->col_scale ? e->col_scale[j] : 1.0f);
    if (e->div != 0.0f) s = s / e->div;
    float f = (float)v * s;
    if (e->out == ST_S8_OUT_F32) {
        if (e->row_bias) f = f + e->row_bias[i];
        if (e->col_bias) f = f + e->col_bias[j];
        *(float *)c = f;
        return;
    }
    int32_t lo = e->out == ST_S8_OUT_U8 ? 0 : -128, hi = e->out == ST_S8_OUT_U8 ? 255 : 127;
    float r = isnan(f) ? 0.0f : rintf(f);
    float flo = (float)(lo - e->zero_point), fhi = (float)(hi - e->zero_point);
    r = r < flo ? flo : r > fhi ? fhi : r;
    int32_t q = (int32_t)r + e->zero_point;
    if (e->lut) q = e->lut[q & 255];
    if (e->out == ST_S8_OUT_U8) *(uint8_t *)c = (uint8_t)q;
    else *(int8_t *)c = (int8_t)q;
}

size_t st_s8_out_size(st_s8_out o) { return o == ST_S8_OUT_U8 || o == ST_S8_OUT_S8 ? 1 : 4; }

static void block_scalar(const uint8_t *a, bool au, const st_s8_b *b, int64_t kq, int64_t m, int64_t n, void *c,
                         int64_t ldc, const st_s8_epi *e)
{
    size_t es = st_s8_out_size(e->out);
    for (int64_t i = 0; i < m; i++) {
        const uint8_t *ar = a + (i / ST_S8_MR) * kq * ST_S8_MR * 4 + (i % ST_S8_MR) * 4;
        for (int64_t j = 0; j < n; j++) {
            const uint8_t *bc = b->base + (j / ST_S8_NR) * b->panel + (j % ST_S8_NR) * 4;
            uint32_t d = 0;
            for (int64_t q = 0; q < kq; q++) {
                const uint8_t *x = ar + q * ST_S8_MR * 4, *y = bc + b->off[q];
                for (int t = 0; t < 4; t++) d += (uint32_t)(byte_val(x[t], au) * byte_val(y[t], !au));
            }
            st_s8_epi_scalar(e, i, j, d, (char *)c + (i * ldc + j) * (int64_t)es);
        }
    }
}

void st_gemm_s8_block(const uint8_t *a, bool a_unsigned, const st_s8_b *b, int64_t kq, int64_t m, int64_t n, void *c,
                      int64_t ldc, const st_s8_epi *e)
{
    if (m <= 0 || n <= 0) return;
    if (st_gemm_s8_fast()) st_s8_block_vnni(a, a_unsigned, b, kq, m, n, c, ldc, e);
    else block_scalar(a, a_unsigned, b, kq, m, n, c, ldc, e);
}

void st_gemm_s8_colsums(const st_s8_b *b, bool b_unsigned, int64_t kq, int64_t n, int32_t *sums)
{
    if (n <= 0) return;
    if (st_gemm_s8_fast()) {
        st_s8_colsums_vnni(b, b_unsigned, kq, n, sums);
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        const uint8_t *bc = b->base + (j / ST_S8_NR) * b->panel + (j % ST_S8_NR) * 4;
        uint32_t s = 0;
        for (int64_t q = 0; q < kq; q++)
            for (int t = 0; t < 4; t++) s += (uint32_t)byte_val(bc[b->off[q] + t], b_unsigned);
        sums[j] = (int32_t)s;
    }
}

/* ---- the product of plain matrices ---- */

/* A tile of C per task: 8 row blocks by 4 panels (64 x 192), a panel of B
 * reused by 8 row blocks from L1.  A is packed once, before the tiles,
 * in blocks of the same 64 rows.  Fixed: the split depends on the shape
 * only. */
#define RUN_MC (8 * ST_S8_MR)
#define RUN_NC (4 * ST_S8_NR)

typedef struct run_job {
    const st_s8_gemm *g;
    bool flip, a_unsigned;
    int32_t shift;          /* added to A's values and zero points by the flip */
    int64_t mtasks, ntasks, kq;
    const int64_t *off;     /* q * NR * 4 */
    uint8_t *apack;         /* all of A, packed */
    int32_t *rsum;          /* A's row sums, stored values */
    st_status err;
} run_job;

static inline int32_t zp_at(const int32_t *z, int64_t step, int64_t i) { return z ? z[i * step] : 0; }

/* Packs rows [i0, i0 + RUN_MC) of A, flipped when A's type is B's, and
 * sums them; quads past k stay 0 (the buffer starts zeroed). */
static void pack_task(void *arg, int64_t t)
{
    run_job *j = arg;
    const st_s8_gemm *g = j->g;
    int64_t i0 = t * RUN_MC, mc = g->m - i0 < RUN_MC ? g->m - i0 : RUN_MC, K = g->k, kq = j->kq;
    const uint8_t *src = g->a;
    uint8_t fx = j->flip ? 0x80 : 0;
    for (int64_t r = i0; r < i0 + mc; r++) {
        uint8_t *d = j->apack + (r / ST_S8_MR) * kq * ST_S8_MR * 4 + (r % ST_S8_MR) * 4;
        const uint8_t *ar = src + r * g->a_rs;
        uint32_t s = 0;
        if (g->a_cs == 1) {
            int64_t q = 0;
            for (; q + 4 <= K; q += 4) {
                uint32_t w;
                memcpy(&w, ar + q, 4);
                w ^= fx * 0x01010101u;
                memcpy(d + q * ST_S8_MR, &w, 4);
            }
            for (; q < K; q++) d[(q / 4) * ST_S8_MR * 4 + q % 4] = (uint8_t)(ar[q] ^ fx);
            if (j->a_unsigned)
                for (int64_t p = 0; p < K; p++) s += (uint8_t)(ar[p] ^ fx);
            else
                for (int64_t p = 0; p < K; p++) s += (uint32_t)(int32_t)(int8_t)(ar[p] ^ fx);
        } else {
            for (int64_t q = 0; q < K; q++) {
                uint8_t v = (uint8_t)(ar[q * g->a_cs] ^ fx);
                d[(q / 4) * ST_S8_MR * 4 + q % 4] = v;
                s += (uint32_t)byte_val(v, j->a_unsigned);
            }
        }
        j->rsum[r] = (int32_t)s;
    }
}

static void run_task(void *arg, int64_t t)
{
    run_job *j = arg;
    const st_s8_gemm *g = j->g;
    int64_t i0 = (t / j->ntasks) * RUN_MC, c0 = (t % j->ntasks) * RUN_NC;
    int64_t mc = g->m - i0 < RUN_MC ? g->m - i0 : RUN_MC, nc = g->n - c0 < RUN_NC ? g->n - c0 : RUN_NC;
    int64_t kq = j->kq, K = g->k;
    size_t es = st_s8_out_size(g->out);
    bool direct = g->c_cs == 1;
    size_t ints = (size_t)(3 * mc + 4 * nc);
    int32_t *buf = alloc64(ints * sizeof(int32_t) + (direct ? 0 : (size_t)(mc * nc) * es));
    if (!buf) {
        j->err = ST_ERR_NOMEM;
        return;
    }
    const int32_t *rsum = j->rsum + i0;
    int32_t *rowa = buf, *rowm = rowa + mc, *rowm2 = rowm + mc;
    int32_t *cola = rowm2 + mc, *colm2 = cola + nc, *zbv = colm2 + nc;
    void *tmp = direct ? NULL : (void *)(zbv + nc);
    /* C = D - zb' rsA' - za' csB' + K za' zb' (gemm_s8.h), zero points in
     * the stored domain: za' = za + shift, zb' = zb; uint32 wraps like the
     * int32 result. */
    bool a_per = g->a_zp && g->a_zp_step, b_per = g->b_zp && g->b_zp_step;
    uint32_t uk = (uint32_t)K;
    const int32_t *cs = g->b->sums + c0;
    st_s8_epi e = {0};
    for (int64_t c = 0; c < nc; c++) zbv[c] = zp_at(g->b_zp, g->b_zp_step, c0 + c);
    if (!a_per) {
        uint32_t za = (uint32_t)(zp_at(g->a_zp, 0, 0) + j->shift);
        for (int64_t c = 0; c < nc; c++) cola[c] = (int32_t)(za * (uk * (uint32_t)zbv[c] - (uint32_t)cs[c]));
        e.col_add = cola;
        if (!b_per) {
            for (int64_t r = 0; r < mc; r++) rowa[r] = (int32_t)(0u - (uint32_t)zbv[0] * (uint32_t)rsum[r]);
            e.row_add = rowa;
        } else {
            for (int64_t r = 0; r < mc; r++) rowm[r] = (int32_t)(0u - (uint32_t)rsum[r]);
            e.row_mul = rowm;
            e.col_mul = zbv;
        }
    } else {
        for (int64_t r = 0; r < mc; r++) rowm2[r] = zp_at(g->a_zp, g->a_zp_step, i0 + r) + j->shift;
        e.row_mul2 = rowm2;
        for (int64_t c = 0; c < nc; c++) colm2[c] = (int32_t)(uk * (uint32_t)zbv[c] - (uint32_t)cs[c]);
        e.col_mul2 = colm2;
        for (int64_t r = 0; r < mc; r++) rowm[r] = (int32_t)(0u - (uint32_t)rsum[r]);
        e.row_mul = rowm;
        e.col_mul = zbv;
    }
    if (g->col_int) {
        if (!e.col_add) memset(cola, 0, (size_t)nc * sizeof *cola);
        for (int64_t c = 0; c < nc; c++) cola[c] = (int32_t)((uint32_t)cola[c] + (uint32_t)g->col_int[c0 + c]);
        e.col_add = cola;
    }
    e.out = g->out;
    e.row_scale = g->row_scale ? g->row_scale + i0 : NULL;
    e.col_scale = g->col_scale ? g->col_scale + c0 : NULL;
    e.div = g->div;
    e.zero_point = g->zero_point;
    e.row_bias = g->row_bias ? g->row_bias + i0 : NULL;
    e.col_bias = g->col_bias ? g->col_bias + c0 : NULL;
    st_s8_b b = {g->b->data + (c0 / ST_S8_NR) * st_gemm_s8_panel_bytes(kq), j->off, (int64_t)st_gemm_s8_panel_bytes(kq)};
    const uint8_t *a = j->apack + (i0 / ST_S8_MR) * kq * ST_S8_MR * 4;
    if (direct) {
        char *c = (char *)g->c + (i0 * g->c_rs + c0) * (int64_t)es;
        st_gemm_s8_block(a, j->a_unsigned, &b, kq, mc, nc, c, g->c_rs, &e);
    } else {
        st_gemm_s8_block(a, j->a_unsigned, &b, kq, mc, nc, tmp, nc, &e);
        for (int64_t r = 0; r < mc; r++)
            for (int64_t c = 0; c < nc; c++)
                memcpy((char *)g->c + ((i0 + r) * g->c_rs + (c0 + c) * g->c_cs) * (int64_t)es,
                       (const char *)tmp + (r * nc + c) * (int64_t)es, es);
    }
    free(buf);
}

st_status st_gemm_s8_run(st_pool *pool, const st_s8_gemm *g)
{
    if (g->m <= 0 || g->n <= 0) return ST_OK;
    run_job j = {0};
    j.g = g;
    j.flip = (g->a_type == ST_U8) == (g->b->type == ST_U8);
    j.a_unsigned = (g->a_type == ST_U8) != j.flip;
    j.shift = !j.flip ? 0 : g->a_type == ST_U8 ? -128 : 128;
    j.mtasks = (g->m + RUN_MC - 1) / RUN_MC;
    j.ntasks = (g->n + RUN_NC - 1) / RUN_NC;
    j.kq = g->b->kq;
    size_t apack = (size_t)((g->m + ST_S8_MR - 1) / ST_S8_MR) * (size_t)j.kq * ST_S8_MR * 4;
    int64_t *off = malloc((size_t)(j.kq > 0 ? j.kq : 1) * sizeof *off);
    j.apack = alloc64(apack + (size_t)g->m * sizeof(int32_t));
    if (!off || !j.apack) {
        free(off);
        free(j.apack);
        return st_error(ST_ERR_NOMEM, "out of memory in an int8 GEMM");
    }
    memset(j.apack, 0, apack);
    j.rsum = (int32_t *)(j.apack + apack);
    for (int64_t q = 0; q < j.kq; q++) off[q] = q * ST_S8_NR * 4;
    j.off = off;
    st_parallel_for(pool, j.mtasks, pack_task, &j);
    st_parallel_for(pool, j.mtasks * j.ntasks, run_task, &j);
    free(off);
    free(j.apack);
    if (j.err != ST_OK) return st_error(j.err, "out of memory in an int8 GEMM");
    return ST_OK;
}
