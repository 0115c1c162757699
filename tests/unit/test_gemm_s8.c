/*
 * test_gemm_s8.c — the int8 GEMM core (src/backends/cpu/gemm_s8.h)
 * against a scalar int64 reference, every output element, exact equality.
 *
 * Random shapes (m, n, k off the block sizes, k = 1, m = 1, n = 1), the
 * four signedness combinations, zero points absent, per tensor and per
 * row / column with values at the types' extremes, the four outputs
 * (int32, u8, s8, f32), strided A and C, serial and on a pool of 2
 * threads, and a k long enough for the int32 sum to wrap; then whole
 * int8 convs (conv_s8.h) against a direct int64 conv.  CTest runs it
 * twice: as is (the VNNI kernels where the CPU has them) and with
 * STRATA_CPU_NO_AVX512=1 (the portable kernels).
 */
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/conv_s8.h"
#include "backends/cpu/gemm_s8.h"
#include "check.h"

static int64_t lo_of(st_dtype t) { return t == ST_I8 ? -128 : 0; }
static int64_t hi_of(st_dtype t) { return t == ST_I8 ? 127 : 255; }

static int64_t val(st_dtype t, uint8_t b) { return t == ST_I8 ? (int64_t)(int8_t)b : (int64_t)b; }

/* a value of type t: mostly uniform, sometimes an extreme */
static uint8_t draw(test_rng *r, st_dtype t)
{
    int64_t v;
    switch (rng_range(r, 0, 7)) {
    case 0: v = lo_of(t); break;
    case 1: v = hi_of(t); break;
    default: v = rng_range(r, lo_of(t), hi_of(t)); break;
    }
    return (uint8_t)v;
}

/* The reference epilogue: the ONNX formulas, written out independently. */
static void ref_out(const st_s8_gemm *g, int64_t i, int64_t j, int32_t v, void *dst)
{
    if (g->out == ST_S8_OUT_I32) {
        *(int32_t *)dst = v;
        return;
    }
    float s = 1.0f;
    if (g->row_scale && g->col_scale) s = g->row_scale[i] * g->col_scale[j];
    else if (g->row_scale) s = g->row_scale[i];
    else if (g->col_scale) s = g->col_scale[j];
    if (g->div != 0.0f) s /= g->div;
    float f = (float)v * s;
    if (g->out == ST_S8_OUT_F32) {
        if (g->row_bias) f += g->row_bias[i];
        if (g->col_bias) f += g->col_bias[j];
        *(float *)dst = f;
        return;
    }
    int64_t lo = g->out == ST_S8_OUT_U8 ? 0 : -128, hi = g->out == ST_S8_OUT_U8 ? 255 : 127;
    float r = isnan(f) ? 0.0f : nearbyintf(f);
    int64_t q;
    if (r < (float)(lo - g->zero_point)) q = lo;
    else if (r > (float)(hi - g->zero_point)) q = hi;
    else q = (int64_t)r + g->zero_point;
    if (g->out == ST_S8_OUT_U8) *(uint8_t *)dst = (uint8_t)q;
    else *(int8_t *)dst = (int8_t)q;
}

static size_t out_size(st_s8_out o) { return o == ST_S8_OUT_U8 || o == ST_S8_OUT_S8 ? 1 : 4; }

static int cases_run;

/* One product: draws everything, runs it with pool (NULL: serial), checks
 * every element. */
static void one_case(test_rng *rng, st_pool *pool, int64_t m, int64_t n, int64_t k, st_dtype at, st_dtype bt, int zp_mode,
                     st_s8_out out, bool strided)
{
    uint8_t *a = malloc((size_t)(m * k + 1)), *b = malloc((size_t)(k * n + 1));
    int32_t *za = malloc((size_t)(m + 1) * sizeof *za), *zb = malloc((size_t)(n + 1) * sizeof *zb);
    float *rs = malloc((size_t)(m + 1) * sizeof *rs), *cs = malloc((size_t)(n + 1) * sizeof *cs);
    float *rb = malloc((size_t)(m + 1) * sizeof *rb), *cb = malloc((size_t)(n + 1) * sizeof *cb);
    size_t es = out_size(out);
    int64_t c_rs = strided ? 1 : n + 3, c_cs = strided ? m : 1; /* strided: C column-major */
    size_t cbytes = (size_t)((strided ? m * n : m * (n + 3)) + 4) * es;
    char *c = malloc(cbytes), *want = malloc(es);
    if (!a || !b || !za || !zb || !rs || !cs || !rb || !cb || !c || !want) {
        CHECK(!"out of memory");
        return;
    }
    for (int64_t i = 0; i < m * k; i++) a[i] = draw(rng, at);
    for (int64_t i = 0; i < k * n; i++) b[i] = draw(rng, bt);
    /* zp_mode: 0 none, 1 per tensor, 2 per row of A, 3 per column of B, 4 both per row/column */
    for (int64_t i = 0; i < m; i++) za[i] = (int32_t)val(at, draw(rng, at));
    for (int64_t j = 0; j < n; j++) zb[j] = (int32_t)val(bt, draw(rng, bt));
    for (int64_t i = 0; i < m; i++) {
        rs[i] = (float)rng_range(rng, 1, 1000) * 1e-5f;
        rb[i] = (float)rng_range(rng, -1000, 1000) * 0.01f;
    }
    for (int64_t j = 0; j < n; j++) {
        cs[j] = (float)rng_range(rng, 1, 1000) * 1e-4f;
        cb[j] = (float)rng_range(rng, -1000, 1000) * 0.01f;
    }
    st_s8_packed *bp = st_gemm_s8_pack_b(b, bt, k, n, n, 1);
    CHECK(bp != NULL);
    if (!bp) return;
    st_s8_gemm g = {0};
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = a;
    g.a_type = at;
    /* strided: A read as the transpose of a [k, m] buffer */
    g.a_rs = strided ? 1 : k;
    g.a_cs = strided ? m : 1;
    g.b = bp;
    g.a_zp = zp_mode == 0 || zp_mode == 3 ? (zp_mode == 3 ? za : NULL) : za;
    g.a_zp_step = zp_mode == 2 || zp_mode == 4 ? 1 : 0;
    g.b_zp = zp_mode == 0 ? NULL : zb;
    g.b_zp_step = zp_mode == 3 || zp_mode == 4 ? 1 : 0;
    g.out = out;
    int sc = (int)rng_range(rng, 0, 3);
    g.row_scale = sc & 1 ? rs : NULL;
    g.col_scale = sc & 2 ? cs : NULL;
    /* a tiny divisor makes the scale infinite: 0 * inf is NaN, which quantizes to the zero point */
    static const float DIV[4] = {0.0f, 0.0f, 0.37f, 1e-40f};
    g.div = DIV[rng_range(rng, 0, 3)];
    g.zero_point = (int32_t)(out == ST_S8_OUT_S8 ? rng_range(rng, -128, 127) : rng_range(rng, 0, 255));
    if (rng_range(rng, 0, 1)) g.row_bias = rb;
    if (rng_range(rng, 0, 1)) g.col_bias = cb;
    g.c = c;
    g.c_rs = c_rs;
    g.c_cs = c_cs;
    memset(c, 0xa5, cbytes);
    st_status st = st_gemm_s8_run(pool, &g);
    CHECK(st == ST_OK);
    long bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t zai = g.a_zp ? g.a_zp[i * g.a_zp_step] : 0, zbj = g.b_zp ? g.b_zp[j * g.b_zp_step] : 0, acc = 0;
            for (int64_t p = 0; p < k; p++)
                acc += (val(at, a[i * g.a_rs + p * g.a_cs]) - zai) * (val(bt, b[p * n + j]) - zbj);
            ref_out(&g, i, j, (int32_t)(uint32_t)(uint64_t)acc, want);
            const char *got = c + (i * c_rs + j * c_cs) * (int64_t)es;
            if (memcmp(got, want, es) != 0) {
                if (bad++ < 3)
                    CHECKF(false, "m %lld n %lld k %lld A %s B %s zp %d out %d strided %d: (%lld, %lld)", (long long)m,
                           (long long)n, (long long)k, st_dtype_name(at), st_dtype_name(bt), zp_mode, (int)out, strided,
                           (long long)i, (long long)j);
            }
        }
    if (!bad) CHECK(true);
    /* padding of a row-major C is untouched */
    if (!strided && m > 0 && n > 0) CHECK((uint8_t)c[n * (int64_t)es] == 0xa5);
    cases_run++;
    st_gemm_s8_packed_free(bp);
    free(a), free(b), free(za), free(zb), free(rs), free(cs), free(rb), free(cb), free(c), free(want);
}

/* st_gemm_s8_pack_a and st_gemm_s8_block directly, B read through an
 * offset table (as a conv reads its staged input), plus the column sums. */
static void block_case(test_rng *rng, int64_t m, int64_t n, int64_t k, bool a_unsigned)
{
    st_dtype at = a_unsigned ? ST_U8 : ST_I8, bt = a_unsigned ? ST_I8 : ST_U8;
    int64_t kq = (k + 3) / 4, groups = rng_range(rng, 1, 3), mt = m * groups;
    uint8_t *a = malloc((size_t)(mt * k + 1));
    /* B: a "plane" of bytes; quad q of column j at plane + off[q] + 4 j */
    int64_t span = n * 4 + 64;
    uint8_t *plane = calloc((size_t)(kq * span + 64), 1);
    int64_t *koff = malloc((size_t)(k + 1) * sizeof *koff), *off = malloc((size_t)(kq + 1) * sizeof *off);
    int32_t *c = malloc((size_t)(m * n + 1) * sizeof *c), *sums = malloc((size_t)(n + 1) * sizeof *sums);
    if (!a || !plane || !koff || !off || !c || !sums) {
        CHECK(!"out of memory");
        return;
    }
    for (int64_t i = 0; i < mt * k; i++) a[i] = draw(rng, at);
    /* quads in reverse order of rows of the plane, with padding past k stored 0 */
    for (int64_t q = 0; q < kq; q++) off[q] = (kq - 1 - q) * span + 4 * rng_range(rng, 0, 8);
    for (int64_t q = 0; q < kq; q++)
        for (int64_t j = 0; j < n; j++)
            for (int t = 0; t < 4; t++) plane[off[q] + 4 * j + t] = 4 * q + t < k ? draw(rng, bt) : 0;
    for (int64_t p = 0; p < k; p++) koff[p] = p;
    st_s8_packed *ap = st_gemm_s8_pack_a(a, at, mt, m, k, koff, k);
    CHECK(ap != NULL);
    if (!ap) return;
    st_s8_b b = {plane, off, ST_S8_NR * 4};
    int64_t g = groups - 1, gblocks = (m + ST_S8_MR - 1) / ST_S8_MR;
    st_s8_epi e = {0};
    e.out = ST_S8_OUT_I32;
    st_gemm_s8_block(ap->data + g * gblocks * kq * ST_S8_MR * 4, a_unsigned, &b, kq, m, n, c, n, &e);
    st_gemm_s8_colsums(&b, !a_unsigned, kq, n, sums);
    long bad = 0;
    for (int64_t j = 0; j < n; j++) {
        int64_t cs = 0;
        for (int64_t p = 0; p < k; p++) cs += val(bt, plane[off[p / 4] + 4 * j + p % 4]);
        if (sums[j] != (int32_t)cs && bad++ < 3) CHECKF(false, "column sum %lld (m %lld n %lld k %lld)", (long long)j, (long long)m, (long long)n, (long long)k);
        for (int64_t i = 0; i < m; i++) {
            int64_t acc = 0;
            for (int64_t p = 0; p < k; p++) acc += val(at, a[(g * m + i) * k + p]) * val(bt, plane[off[p / 4] + 4 * j + p % 4]);
            if (c[i * n + j] != (int32_t)acc && bad++ < 3)
                CHECKF(false, "block (%lld, %lld) m %lld n %lld k %lld au %d", (long long)i, (long long)j, (long long)m,
                       (long long)n, (long long)k, a_unsigned);
        }
    }
    for (int64_t i = 0; i < m; i++) {
        int64_t rs = 0;
        for (int64_t p = 0; p < k; p++) rs += val(at, a[(g * m + i) * k + p]);
        if (ap->sums[g * m + i] != (int32_t)rs && bad++ < 3) CHECKF(false, "row sum %lld", (long long)i);
    }
    /* the same product requantized to u8 or s8 through a random lookup
     * table (a conv's fused activation: the VBMI byte lookup or the
     * gather), against the checked int32 result requantized as gemm_s8.h
     * defines it; the output poisoned first */
    if (!bad) {
        bool u8 = rng_range(rng, 0, 1) == 1;
        int32_t lut[256], lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
        for (int v = 0; v < 256; v++) lut[v] = (int32_t)rng_range(rng, lo, hi);
        float scale = 1.0f / (float)rng_range(rng, 50, 5000);
        st_s8_epi eq = {0};
        eq.out = u8 ? ST_S8_OUT_U8 : ST_S8_OUT_S8;
        eq.col_scale = NULL;
        eq.div = 0.0f;
        eq.zero_point = (int32_t)rng_range(rng, lo, hi);
        eq.lut = lut;
        float *rs = malloc((size_t)m * sizeof *rs);
        uint8_t *cq = malloc((size_t)(m * n + 1));
        if (!rs || !cq) {
            CHECK(!"out of memory");
            free(rs), free(cq);
        } else {
            for (int64_t i = 0; i < m; i++) rs[i] = scale;
            eq.row_scale = rs;
            memset(cq, 0xa5, (size_t)(m * n + 1));
            st_gemm_s8_block(ap->data + g * gblocks * kq * ST_S8_MR * 4, a_unsigned, &b, kq, m, n, cq, n, &eq);
            for (int64_t i = 0; i < m && bad < 3; i++)
                for (int64_t j = 0; j < n; j++) {
                    float f = rintf((float)c[i * n + j] * scale);
                    if (f < (float)(lo - eq.zero_point)) f = (float)(lo - eq.zero_point);
                    if (f > (float)(hi - eq.zero_point)) f = (float)(hi - eq.zero_point);
                    uint8_t want = (uint8_t)lut[(uint8_t)((int32_t)f + eq.zero_point)];
                    if (cq[i * n + j] != want && bad++ < 3)
                        CHECKF(false, "lut out (%lld, %lld) m %lld n %lld k %lld u8 %d: %d, want %d", (long long)i, (long long)j,
                               (long long)m, (long long)n, (long long)k, u8, cq[i * n + j], want);
                }
            CHECK(cq[m * n] == 0xa5);
            free(rs), free(cq);
        }
    }
    if (!bad) CHECK(true);
    st_gemm_s8_packed_free(ap);
    free(a), free(plane), free(koff), free(off), free(c), free(sums);
}

/* st_conv_s8 on its own: a random conv (1 to 3 spatial dims, strides,
 * dilations, pads, groups), X read through strides (a channel slice with
 * a gap between pixels), y written into a channel slice of a larger
 * tensor, every output type; against an int64 direct conv. */
static int convs_run;

static void conv_case(test_rng *rng, st_pool *pool)
{
    int nsp = (int)rng_range(rng, 1, 3);
    st_conv_s8_window win;
    memset(&win, 0, sizeof win);
    win.nsp = nsp;
    win.group = rng_range(rng, 1, 3);
    int64_t cg = rng_range(rng, 1, 9), mg = rng_range(rng, 1, 12), C = cg * win.group, M = mg * win.group;
    int64_t N = rng_range(rng, 1, 2), in[3], out[3], volx = 1, voly = 1, kv = 1;
    for (int i = 0; i < nsp; i++) {
        win.k[i] = rng_range(rng, 1, 3);
        win.s[i] = rng_range(rng, 1, 3);
        win.d[i] = rng_range(rng, 1, 2);
        win.pb[i] = rng_range(rng, 0, 2);
        in[i] = rng_range(rng, 1, nsp == 3 ? 7 : i == nsp - 1 ? 70 : 12);
        int64_t ext = (win.k[i] - 1) * win.d[i] + 1, pe = rng_range(rng, 0, 2);
        if (in[i] + win.pb[i] + pe < ext) in[i] = ext;
        out[i] = (in[i] + win.pb[i] + pe - ext) / win.s[i] + 1;
        volx *= in[i], voly *= out[i], kv *= win.k[i];
    }
    st_dtype xt = rng_range(rng, 0, 1) ? ST_U8 : ST_I8, wt = rng_range(rng, 0, 1) ? ST_U8 : ST_I8;
    static const st_s8_out O[4] = {ST_S8_OUT_I32, ST_S8_OUT_U8, ST_S8_OUT_S8, ST_S8_OUT_F32};
    st_s8_out o = O[rng_range(rng, 0, 3)];
    size_t es = out_size(o);
    /* x: [N, C + 1, in..., 2] with the last dim a gap, viewed as [N, C, in...] */
    st_operand x = {0}, w = {0}, y = {0};
    x.dtype = xt, x.rank = 2 + nsp, x.sizes[0] = N, x.sizes[1] = C;
    w.dtype = wt, w.rank = 2 + nsp, w.sizes[0] = M, w.sizes[1] = cg;
    y.rank = 2 + nsp, y.sizes[0] = N, y.sizes[1] = M;
    int64_t xs = 2, ws = 1, ys = 1;
    for (int i = nsp - 1; i >= 0; i--) {
        x.sizes[2 + i] = in[i], x.strides[2 + i] = xs, xs *= in[i];
        w.sizes[2 + i] = win.k[i], w.strides[2 + i] = ws, ws *= win.k[i];
        y.sizes[2 + i] = out[i], y.strides[2 + i] = ys, ys *= out[i];
    }
    x.strides[1] = xs, x.strides[0] = xs * (C + 1);
    w.strides[1] = ws, w.strides[0] = ws * cg;
    y.strides[1] = ys, y.strides[0] = ys * (M + 2); /* channels [1, M + 1) of M + 2 */
    uint8_t *xb = malloc((size_t)(N * (C + 1) * volx * 2)), *wb = malloc((size_t)(M * cg * kv));
    char *yb = malloc((size_t)(N * (M + 2) * voly) * es + 1), *want = malloc(es);
    int32_t *wz = malloc((size_t)M * sizeof *wz), *bias = malloc((size_t)M * sizeof *bias);
    float *scale = malloc((size_t)M * sizeof *scale), *fb = malloc((size_t)M * sizeof *fb);
    if (!xb || !wb || !yb || !want || !wz || !bias || !scale || !fb) {
        CHECK(!"out of memory");
        return;
    }
    for (int64_t i = 0; i < N * (C + 1) * volx * 2; i++) xb[i] = draw(rng, xt);
    for (int64_t i = 0; i < M * cg * kv; i++) wb[i] = draw(rng, wt);
    for (int64_t m = 0; m < M; m++) {
        wz[m] = (int32_t)val(wt, draw(rng, wt));
        bias[m] = (int32_t)rng_range(rng, -30000, 30000);
        scale[m] = (float)rng_range(rng, 1, 1000) * 1e-5f;
        fb[m] = (float)rng_range(rng, -100, 100) * 0.25f;
    }
    x.data = xb, w.data = wb, y.data = yb + y.strides[1] * (int64_t)es;
    y.dtype = o == ST_S8_OUT_I32 ? ST_I32 : o == ST_S8_OUT_U8 ? ST_U8 : o == ST_S8_OUT_S8 ? ST_I8 : ST_F32;
    st_s8_packed *wp = st_conv_s8_pack(&w, &win);
    CHECK(wp != NULL);
    if (!wp) return;
    st_conv_s8_args a = {0};
    a.win = &win, a.x = &x, a.x_zp = (int32_t)val(xt, draw(rng, xt)), a.w = wp, a.out = o, a.y = &y;
    int zm = (int)rng_range(rng, 0, 2);
    a.w_zp = zm ? wz : NULL, a.w_zp_step = zm == 2;
    if (o != ST_S8_OUT_I32) a.scale = scale;
    if (rng_range(rng, 0, 1)) a.bias = bias;
    if (o == ST_S8_OUT_F32 && rng_range(rng, 0, 1)) a.fbias = fb;
    a.y_zp = (int32_t)(o == ST_S8_OUT_S8 ? rng_range(rng, -128, 127) : rng_range(rng, 0, 255));
    memset(yb, 0x5a, (size_t)(N * (M + 2) * voly) * es);
    CHECK(st_conv_s8(pool, &a) == ST_OK);
    /* the reference: the gemm test's epilogue on an int64 direct conv */
    st_s8_gemm g = {0};
    g.out = o, g.row_scale = a.scale, g.row_bias = a.fbias, g.zero_point = a.y_zp;
    long bad = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t p = 0; p < voly; p++) {
                int64_t op[3] = {0, 0, 0}, r = p, acc = 0, gi = m / mg;
                for (int i = nsp - 1; i >= 0; i--) op[i] = r % out[i], r /= out[i];
                int64_t zw = a.w_zp ? a.w_zp[m * a.w_zp_step] : 0;
                for (int64_t c = 0; c < cg; c++)
                    for (int64_t t = 0; t < kv; t++) {
                        int64_t tr = t, xo = n * x.strides[0] + (gi * cg + c) * x.strides[1], wo = m * w.strides[0] + c * w.strides[1];
                        bool inside = true;
                        for (int i = nsp - 1; i >= 0; i--) {
                            int64_t ki = tr % win.k[i], pos = op[i] * win.s[i] - win.pb[i] + ki * win.d[i];
                            tr /= win.k[i];
                            if (pos < 0 || pos >= in[i]) inside = false;
                            xo += pos * x.strides[2 + i];
                            wo += ki * w.strides[2 + i];
                        }
                        int64_t xv = inside ? val(xt, xb[xo]) : a.x_zp;
                        acc += (xv - a.x_zp) * (val(wt, wb[wo]) - zw);
                    }
                if (a.bias) acc += a.bias[m];
                ref_out(&g, m, 0, (int32_t)(uint32_t)(uint64_t)acc, want);
                int64_t yo = n * y.strides[0] + m * y.strides[1];
                for (int i = 0; i < nsp; i++) yo += op[i] * y.strides[2 + i];
                if (memcmp((char *)y.data + yo * (int64_t)es, want, es) != 0 && bad++ < 3)
                    CHECKF(false, "conv nsp %d group %lld cg %lld mg %lld out %d: (%lld, %lld, %lld)", nsp, (long long)win.group,
                           (long long)cg, (long long)mg, (int)o, (long long)n, (long long)m, (long long)p);
            }
    /* channel 0 and M + 1 of the larger tensor are untouched */
    if ((uint8_t)yb[0] != 0x5a && bad++ < 3) CHECKF(false, "conv wrote outside y");
    if (!bad) CHECK(true);
    convs_run++;
    st_gemm_s8_packed_free(wp);
    free(xb), free(wb), free(yb), free(want), free(wz), free(bias), free(scale), free(fb);
}

/* A conv whose int32 / f32 output (36 MB) is large enough for streaming
 * stores: 3 -> 32 channels, 3x3, pad 1, at 272 x 1024. */
static void big_conv(st_pool *pool, bool f32)
{
    enum { C = 3, M = 32, H = 272, W = 1024 };
    st_operand x = {0}, w = {0}, y = {0};
    x.dtype = ST_U8, x.rank = 4, x.sizes[0] = 1, x.sizes[1] = C, x.sizes[2] = H, x.sizes[3] = W;
    w.dtype = ST_I8, w.rank = 4, w.sizes[0] = M, w.sizes[1] = C, w.sizes[2] = w.sizes[3] = 3;
    y.dtype = f32 ? ST_F32 : ST_I32, y.rank = 4, y.sizes[0] = 1, y.sizes[1] = M, y.sizes[2] = H, y.sizes[3] = W;
    st_strides_contiguous(4, x.sizes, x.strides);
    st_strides_contiguous(4, w.sizes, w.strides);
    st_strides_contiguous(4, y.sizes, y.strides);
    test_rng rng = {7 + f32};
    uint8_t *xb = malloc((size_t)C * H * W), *wb = malloc(M * C * 9);
    char *yb = aligned_alloc(64, (size_t)M * H * W * 4);
    float scale[M], fb[M];
    if (!xb || !wb || !yb) {
        CHECK(!"out of memory");
        return;
    }
    for (int64_t i = 0; i < (int64_t)C * H * W; i++) xb[i] = draw(&rng, ST_U8);
    for (int i = 0; i < M * C * 9; i++) wb[i] = draw(&rng, ST_I8);
    for (int m = 0; m < M; m++) scale[m] = (float)rng_range(&rng, 1, 100) * 1e-4f, fb[m] = (float)m - 10.5f;
    x.data = xb, w.data = wb, y.data = yb;
    st_conv_s8_window win = {2, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1};
    st_s8_packed *wp = st_conv_s8_pack(&w, &win);
    st_conv_s8_args a = {0};
    a.win = &win, a.x = &x, a.x_zp = 131, a.w = wp, a.y = &y;
    a.out = f32 ? ST_S8_OUT_F32 : ST_S8_OUT_I32;
    if (f32) a.scale = scale, a.fbias = fb;
    CHECK(wp && st_conv_s8(pool, &a) == ST_OK);
    st_s8_gemm g = {0};
    g.out = a.out, g.row_scale = a.scale, g.row_bias = a.fbias;
    long bad = 0;
    char want[4];
    for (int64_t m = 0; m < M; m++)
        for (int64_t oy = 0; oy < H; oy++)
            for (int64_t ox = 0; ox < W; ox++) {
                int64_t acc = 0;
                for (int64_t c = 0; c < C; c++)
                    for (int64_t ky = 0; ky < 3; ky++)
                        for (int64_t kx = 0; kx < 3; kx++) {
                            int64_t iy = oy + ky - 1, ix = ox + kx - 1;
                            int64_t xv = iy >= 0 && iy < H && ix >= 0 && ix < W ? xb[(c * H + iy) * W + ix] : 131;
                            acc += (xv - 131) * (int8_t)wb[((m * C + c) * 3 + ky) * 3 + kx];
                        }
                ref_out(&g, m, 0, (int32_t)acc, want);
                if (memcmp(yb + ((m * H + oy) * W + ox) * 4, want, 4) != 0 && bad++ < 3)
                    CHECKF(false, "big conv (f32 %d): (%lld, %lld, %lld)", f32, (long long)m, (long long)oy, (long long)ox);
            }
    if (!bad) CHECK(true);
    st_gemm_s8_packed_free(wp);
    free(xb), free(wb), free(yb);
}

int main(void)
{
    test_rng rng = {20261201};
    st_pool *pool2 = st_pool_create(2);
    CHECK(pool2 != NULL);
    static const st_dtype T[2] = {ST_U8, ST_I8};
    static const st_s8_out O[4] = {ST_S8_OUT_I32, ST_S8_OUT_U8, ST_S8_OUT_S8, ST_S8_OUT_F32};
    /* fixed edge shapes, then random ones */
    static const int64_t EDGE[][3] = {{1, 1, 1}, {1, 1, 4}, {8, 48, 4}, {9, 49, 5}, {7, 47, 3}, {1, 200, 33},
                                      {33, 1, 17}, {16, 16, 1}, {40, 100, 64}, {3, 5, 2}, {65, 193, 9}, {0, 5, 3}};
    for (size_t s = 0; s < sizeof EDGE / sizeof EDGE[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int zp = 0; zp < 5; zp++)
                    one_case(&rng, (s + zp) % 2 ? pool2 : NULL, EDGE[s][0], EDGE[s][1], EDGE[s][2], T[ta], T[tb], zp,
                             O[(s + zp + ta) % 4], false);
    for (int it = 0; it < 400; it++) {
        int64_t m = rng_range(&rng, 1, 70), n = rng_range(&rng, 1, 150), k = rng_range(&rng, 1, 80);
        one_case(&rng, it % 2 ? pool2 : NULL, m, n, k, T[rng_range(&rng, 0, 1)], T[rng_range(&rng, 0, 1)],
                 (int)rng_range(&rng, 0, 4), O[rng_range(&rng, 0, 3)], rng_range(&rng, 0, 3) == 0);
    }
    /* the int32 sum wraps: k * 255 * 255 > 2^31 */
    one_case(&rng, pool2, 3, 50, 40000, ST_U8, ST_U8, 0, ST_S8_OUT_I32, false);
    one_case(&rng, NULL, 2, 17, 70001, ST_I8, ST_I8, 4, ST_S8_OUT_I32, false);
    for (int it = 0; it < 60; it++)
        block_case(&rng, rng_range(&rng, 1, 40), rng_range(&rng, 1, 130), rng_range(&rng, 1, 70), it % 2);
    for (int it = 0; it < 150; it++) conv_case(&rng, it % 2 ? pool2 : NULL);
    big_conv(pool2, false);
    big_conv(NULL, true);
    st_pool_destroy(pool2);
    printf("gemm_s8: %d products, %d convs, kernels: %s\n", cases_run, convs_run, st_gemm_s8_fast() ? "VNNI" : "portable");
    return check_exit("test_gemm_s8");
}
