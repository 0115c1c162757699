/*
 * gemm_s8_vnni.c — the int8 GEMM core's AVX-512 VNNI kernels (see
 * gemm_s8.h).  Only these functions carry the target attribute; they run
 * after st_gemm_s8_fast() has checked the CPU, so one binary runs
 * everywhere.
 *
 * The micro-kernel keeps an MR x (16 * NV) tile of C in int32 registers:
 * 8 x 48 is 24 accumulators.  Per quad of k it loads NV vectors of the B
 * panel (16 columns x 4 bytes each), broadcasts 4 bytes of each row of the
 * packed A (one sequential 32-byte stream) and issues MR * NV vpdpbusd:
 * 24 per 11 loads, which keeps both of a core's 512-bit integer
 * multiply-add pipes fed.  Narrower instances (NV 2 or 1, 4 or 1 rows)
 * finish a row of a conv without padding it to 48 columns and keep a
 * matrix-vector product from computing 8 rows for 1.  Columns past n are
 * loaded masked (zero) and never stored.
 *
 * The epilogue runs on the registers before the one store (gemm_s8.h):
 * corrections in int32, then int32, u8/s8 or f32 out.  A u8/s8 output
 * through a lookup table (a conv with its fused activation, nearly every
 * conv of a quantized YOLO) looks its 16 bytes up with two vpermi2b where
 * the CPU has AVX-512 VBMI, instead of a 16-element gather: the gather
 * cost about as much as the main loop of a conv with 16 or 32 input
 * channels.  vpermi2b is written as inline asm, so these functions need
 * no VBMI target attribute and still run on VNNI CPUs without VBMI
 * (Cascade Lake), which keep the gather.
 */
#include <immintrin.h>
#include <pthread.h>
#include <string.h>

#include "backends/cpu/gemm_s8_kern.h"

#define ST_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define ST_UNROLL _Pragma("GCC unroll 8")

static inline __mmask16 mask_of(int64_t left) { return (__mmask16)(left >= 16 ? 0xffff : left <= 0 ? 0 : (1u << left) - 1); }

static inline int32_t load32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* A column array's 16 values from j: a plain load for a full vector (the
 * epilogue's common case), masked for the last columns. */
__attribute__((always_inline)) ST_VNNI static inline __m512i col_i32(const int32_t *p, __mmask16 mk)
{
    return mk == 0xffff ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi32(mk, p);
}

__attribute__((always_inline)) ST_VNNI static inline __m512 col_f32(const float *p, __mmask16 mk)
{
    return mk == 0xffff ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(mk, p);
}

/* The table lookup of bytes: vpermi2b takes an index's low 7 bits into
 * the 128 bytes of two registers, so one lookup per half of the table and
 * the index's top bit picks (the lanes past 16 are don't-cares). */
__attribute__((always_inline)) ST_VNNI static inline __m128i lut_bytes(__m128i q, const __m512i *tab)
{
    __m512i lo = _mm512_castsi128_si512(q), hi = lo;
    __asm__("vpermi2b %2, %1, %0" : "+v"(lo) : "v"(tab[0]), "v"(tab[1]));
    __asm__("vpermi2b %2, %1, %0" : "+v"(hi) : "v"(tab[2]), "v"(tab[3]));
    __mmask64 top = _mm512_movepi8_mask(_mm512_castsi128_si512(q));
    return _mm512_castsi512_si128(_mm512_mask_blend_epi8(top, lo, hi));
}

/* One vector (16 columns) of row i through the epilogue, stored at c.
 * Full vectors store unmasked: masked stores, byte-masked ones above all,
 * take several times longer on some cores (AMD Zen: a byte-masked store
 * made a quantize loop 4x slower). */
__attribute__((always_inline)) ST_VNNI static inline void epi_store(__m512i t, const st_s8_epi *e, int64_t i, int64_t j,
                                                                    __mmask16 mk, char *c, const __m512i *tab)
{
    bool full = mk == 0xffff;
    if (e->row_add) t = _mm512_add_epi32(t, _mm512_set1_epi32(e->row_add[i]));
    if (e->col_add) t = _mm512_add_epi32(t, col_i32(e->col_add + j, mk));
    if (e->row_mul) t = _mm512_add_epi32(t, _mm512_mullo_epi32(_mm512_set1_epi32(e->row_mul[i]), col_i32(e->col_mul + j, mk)));
    if (e->row_mul2)
        t = _mm512_add_epi32(t, _mm512_mullo_epi32(_mm512_set1_epi32(e->row_mul2[i]), col_i32(e->col_mul2 + j, mk)));
    if (e->out == ST_S8_OUT_I32) {
        if (full && e->stream && ((uintptr_t)c & 63) == 0) _mm512_stream_si512((void *)c, t);
        else if (full) _mm512_storeu_si512(c, t);
        else _mm512_mask_storeu_epi32(c, mk, t);
        return;
    }
    __m512 s;
    if (e->row_scale && e->col_scale) s = _mm512_mul_ps(_mm512_set1_ps(e->row_scale[i]), col_f32(e->col_scale + j, mk));
    else if (e->row_scale) s = _mm512_set1_ps(e->row_scale[i]);
    else if (e->col_scale) s = col_f32(e->col_scale + j, mk);
    else s = _mm512_set1_ps(1.0f);
    if (e->div != 0.0f) s = _mm512_div_ps(s, _mm512_set1_ps(e->div));
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(t), s);
    if (e->out == ST_S8_OUT_F32) {
        if (e->row_bias) f = _mm512_add_ps(f, _mm512_set1_ps(e->row_bias[i]));
        if (e->col_bias) f = _mm512_add_ps(f, col_f32(e->col_bias + j, mk));
        if (full && e->stream && ((uintptr_t)c & 63) == 0) _mm512_stream_ps((float *)c, f);
        else if (full) _mm512_storeu_ps(c, f);
        else _mm512_mask_storeu_ps(c, mk, f);
        return;
    }
    int32_t lo = e->out == ST_S8_OUT_U8 ? 0 : -128, hi = e->out == ST_S8_OUT_U8 ? 255 : 127;
    f = _mm512_roundscale_ps(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    f = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(f, f, _CMP_ORD_Q), f); /* NaN -> 0, as the scalar form */
    f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps((float)(lo - e->zero_point))), _mm512_set1_ps((float)(hi - e->zero_point)));
    __m512i qi = _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(e->zero_point));
    /* every lane is in the type's range here, masked ones included */
    if (e->lut && !tab) qi = _mm512_i32gather_epi32(_mm512_and_si512(qi, _mm512_set1_epi32(255)), e->lut, 4);
    __m128i q = _mm512_cvtepi32_epi8(qi);
    if (e->lut && tab) q = lut_bytes(q, tab);
    if (full) _mm_storeu_si128((__m128i *)c, q);
    else _mm_mask_storeu_epi8(c, mk, q);
}

/*
 * One MRR x (16 * NV) tile: rows (1..MRR) stored, nv columns (at most
 * 16 * NV).  a: the packed block (quad q, row r at a[q * MR * 4 + r * 4]);
 * b: the panel, quad q at b + off[q].  AU: A's bytes are the unsigned
 * operand of vpdpbusd (B's the signed one), else the other way round.
 */
__attribute__((always_inline)) ST_VNNI static inline void
ukernel(const int NV, const int MRR, const bool AU, int64_t kq, const uint8_t *a, const uint8_t *b, const int64_t *off,
        int rows, int nv, char *c, int64_t ldc, size_t es, const st_s8_epi *e, int64_t i0, int64_t j0, const uint8_t *lut8)
{
    __mmask16 mk[3];
    ST_UNROLL
    for (int v = 0; v < 3; v++) mk[v] = mask_of(nv - 16 * v);
    __m512i acc[8][3];
    ST_UNROLL
    for (int r = 0; r < MRR; r++)
        ST_UNROLL
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_si512();
    if (nv == 16 * NV) {
        for (int64_t q = 0; q < kq; q++) {
            const uint8_t *bq = b + off[q], *aq = a + q * ST_S8_MR * 4;
            __m512i bv[3];
            ST_UNROLL
            for (int v = 0; v < NV; v++) bv[v] = _mm512_loadu_si512(bq + 64 * v);
            ST_UNROLL
            for (int r = 0; r < MRR; r++) {
                __m512i x = _mm512_set1_epi32(load32(aq + 4 * r));
                ST_UNROLL
                for (int v = 0; v < NV; v++)
                    acc[r][v] = AU ? _mm512_dpbusd_epi32(acc[r][v], x, bv[v]) : _mm512_dpbusd_epi32(acc[r][v], bv[v], x);
            }
        }
    } else {
        for (int64_t q = 0; q < kq; q++) {
            const uint8_t *bq = b + off[q], *aq = a + q * ST_S8_MR * 4;
            __m512i bv[3];
            ST_UNROLL
            for (int v = 0; v < NV; v++) bv[v] = _mm512_maskz_loadu_epi32(mk[v], bq + 64 * v);
            ST_UNROLL
            for (int r = 0; r < MRR; r++) {
                __m512i x = _mm512_set1_epi32(load32(aq + 4 * r));
                ST_UNROLL
                for (int v = 0; v < NV; v++)
                    acc[r][v] = AU ? _mm512_dpbusd_epi32(acc[r][v], x, bv[v]) : _mm512_dpbusd_epi32(acc[r][v], bv[v], x);
            }
        }
    }
    __m512i tab[4];
    if (lut8)
        for (int h = 0; h < 4; h++) tab[h] = _mm512_load_si512(lut8 + 64 * h);
    ST_UNROLL
    for (int r = 0; r < MRR; r++) {
        if (r >= rows) break;
        ST_UNROLL
        for (int v = 0; v < NV; v++)
            epi_store(acc[r][v], e, i0 + r, j0 + 16 * v, mk[v], c + (r * ldc + 16 * v) * (int64_t)es, lut8 ? tab : NULL);
    }
}

typedef void (*kern_fn)(int64_t kq, const uint8_t *a, const uint8_t *b, const int64_t *off, int rows, int nv, char *c,
                        int64_t ldc, size_t es, const st_s8_epi *e, int64_t i0, int64_t j0, const uint8_t *lut8);

#define KDEF(NV, MRR, AU)                                                                                              \
    ST_VNNI static void k_##NV##_##MRR##_##AU(int64_t kq, const uint8_t *a, const uint8_t *b, const int64_t *off,     \
                                              int rows, int nv, char *c, int64_t ldc, size_t es, const st_s8_epi *e,  \
                                              int64_t i0, int64_t j0, const uint8_t *lut8)                            \
    {                                                                                                                  \
        ukernel(NV, MRR, AU, kq, a, b, off, rows, nv, c, ldc, es, e, i0, j0, lut8);                                    \
    }
#define KDEF_NV(NV) KDEF(NV, 8, 0) KDEF(NV, 8, 1) KDEF(NV, 4, 0) KDEF(NV, 4, 1) KDEF(NV, 1, 0) KDEF(NV, 1, 1)
KDEF_NV(1)
KDEF_NV(2)
KDEF_NV(3)

/* [a_unsigned][nv - 1][rows: 8, 4, 1] */
static const kern_fn KERNS[2][3][3] = {
    {{k_1_8_0, k_1_4_0, k_1_1_0}, {k_2_8_0, k_2_4_0, k_2_1_0}, {k_3_8_0, k_3_4_0, k_3_1_0}},
    {{k_1_8_1, k_1_4_1, k_1_1_1}, {k_2_8_1, k_2_4_1, k_2_1_1}, {k_3_8_1, k_3_4_1, k_3_1_1}},
};

/* Panels outer, row blocks inner: a panel of B stays in L1 while every
 * row block of A streams past it.  Where B's columns are linear (a conv's
 * staged rows: panel == NR * 4) a chunk may start anywhere, and a last
 * 49 to 64 columns run as 32 + the rest rather than 48 + a 16-column
 * chunk: the 1-vector kernel issues a load per vpdpbusd and ran at half
 * the rate (11% of a 256-wide conv's time for 1/16 of its columns). */
static pthread_once_t vbmi_once = PTHREAD_ONCE_INIT;
static bool vbmi_ok;

static void vbmi_probe(void) { vbmi_ok = __builtin_cpu_supports("avx512vbmi"); }

ST_VNNI static void lut_to_bytes(const int32_t *lut, uint8_t *lut8)
{
    for (int h = 0; h < 16; h++)
        _mm_store_si128((__m128i *)(lut8 + 16 * h), _mm512_cvtepi32_epi8(_mm512_loadu_si512(lut + 16 * h)));
}

void st_s8_block_vnni(const uint8_t *a, bool a_unsigned, const st_s8_b *b, int64_t kq, int64_t m, int64_t n, void *c,
                      int64_t ldc, const st_s8_epi *e)
{
    size_t es = st_s8_out_size(e->out);
    /* the lookup table as bytes (its entries are the output type's stored
     * bytes, as the gather form's truncation takes them) */
    uint8_t lut8[256] __attribute__((aligned(64)));
    const uint8_t *l8 = NULL;
    if (e->lut && (e->out == ST_S8_OUT_U8 || e->out == ST_S8_OUT_S8)) {
        pthread_once(&vbmi_once, vbmi_probe);
        if (vbmi_ok) {
            lut_to_bytes(e->lut, lut8);
            l8 = lut8;
        }
    }
    bool linear = b->panel == ST_S8_NR * 4;
    for (int64_t j = 0, w; j < n; j += w) {
        w = n - j < ST_S8_NR ? n - j : ST_S8_NR;
        if (linear && n - j > ST_S8_NR && n - j <= ST_S8_NR + 16) w = 32;
        int nv = (int)w;
        int nvi = nv > 32 ? 2 : nv > 16 ? 1 : 0;
        const uint8_t *panel = linear ? b->base + j * 4 : b->base + (j / ST_S8_NR) * b->panel;
        for (int64_t i = 0; i < m; i += ST_S8_MR) {
            int rows = (int)(m - i < ST_S8_MR ? m - i : ST_S8_MR);
            int ri = rows > 4 ? 0 : rows > 1 ? 1 : 2;
            KERNS[a_unsigned][nvi][ri](kq, a + (i / ST_S8_MR) * kq * ST_S8_MR * 4, panel, b->off, rows, nv,
                                       (char *)c + (i * ldc + j) * (int64_t)es, ldc, es, e, i, j, l8);
        }
    }
    /* streaming stores are weakly ordered: drain them before the task
     * reports its outputs done */
    if (e->stream) _mm_sfence();
}

/* Three vectors of a panel at a time: three independent chains cover
 * vpdpbusd's latency. */
ST_VNNI void st_s8_colsums_vnni(const st_s8_b *b, bool b_unsigned, int64_t kq, int64_t n, int32_t *sums)
{
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t j = 0; j < n; j += ST_S8_NR) {
        const uint8_t *panel = b->base + (j / ST_S8_NR) * b->panel;
        __mmask16 mk[3];
        __m512i acc[3];
        for (int v = 0; v < 3; v++) {
            mk[v] = mask_of(n - j - 16 * v);
            acc[v] = _mm512_setzero_si512();
        }
        for (int64_t q = 0; q < kq; q++)
            for (int v = 0; v < 3; v++) {
                __m512i x = _mm512_maskz_loadu_epi32(mk[v], panel + b->off[q] + 64 * v);
                acc[v] = b_unsigned ? _mm512_dpbusd_epi32(acc[v], x, ones) : _mm512_dpbusd_epi32(acc[v], ones, x);
            }
        for (int v = 0; v < 3; v++) _mm512_mask_storeu_epi32(sums + j + 16 * v, mk[v], acc[v]);
    }
}
