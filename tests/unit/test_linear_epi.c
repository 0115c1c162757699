/*
 * test_linear_epi.c — the fused epilogues of a transformer's linear layers
 * and residual norms on the CPU, against float64 references:
 *
 *   MatMul with a fused per-column bias and activation (st_matmul_state's
 *   bias and act, set by passes/fuse_matmul.c): y = act(A W + b), with W
 *   constant and packed by the kernel's prepare (the GEMM's epilogue) and
 *   without (the tile epilogue after st_sgemm); A rank 3, contiguous or a
 *   transposed view (as nn.MultiheadAttention's input projection reads
 *   it); GELU (exact and tanh), ReLU, Tanh (no vector form: applied after
 *   the GEMM) and none; k across the GEMM's k blocks; one row (the
 *   matrix-vector path);
 *   Gemm whose C is a per-column bias ([n] or [1, n], beta 1 and 0.5),
 *   now added in the epilogue, a full C as before, and a fused ReLU;
 *   AddLayerNormalization (passes/fuse_add_norm.c): LN(x + r) with r a
 *   transposed view, with and without the sum as a second output;
 *   f16 and bf16 MatMul with a fused bias and activation (a CUDA plan's
 *   node that fell back to the CPU), against float64 within 2e-3 +
 *   3e-3 |ref| (8x for bf16).
 *
 * Inputs are uniform random (weights scaled by 1/sqrt(k), as a trained
 * layer's keep sums near 1), outputs are poisoned first, and every element
 * is compared with the float64 result within 1e-5 + 1e-5 |ref| (the
 * transformer fixtures' tolerance against ONNX Runtime).  Beyond that:
 * the fused MatMul gives the same bits with and without prepacked weights,
 * and the same bits as the unfused ops (the product, then an f32 add of
 * the bias, then the activation as the Gelu/Relu kernels compute it); the
 * AddLayerNormalization's sum output is exactly x + r in f32 and its Y the
 * same bits as LayerNormalization on that sum.  Runs as unit_linear_epi
 * and, with STRATA_CPU_NO_AVX512=1 (the portable GEMM), as
 * unit_linear_epi_portable.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "check.h"
#include "ops/kernel.h"
#include "ops/linalg.h"
#include "ops/norm.h"

#define POISON 12345.0f

static float frand(test_rng *r) { return (float)((double)rng_u32(r) / 4294967296.0 * 2.0 - 1.0); }

static const st_kernel *find_kernel(const char *op, const char *domain)
{
    const st_kernel_table *t = st_backend_kernels(ST_BACKEND_CPU);
    for (int i = 0; t && i < st_kernel_count(t); i++) {
        const st_kernel *k = st_kernel_at(t, i);
        if (!strcmp(k->op, op) && !strcmp(k->domain, domain)) return k;
    }
    return NULL;
}

static void set_op(st_operand *o, void *data, int rank, const int64_t *sizes, const int64_t *strides)
{
    memset(o, 0, sizeof *o);
    o->data = data;
    o->dtype = ST_F32;
    o->rank = rank;
    for (int d = 0; d < rank; d++) {
        o->sizes[d] = sizes[d];
        o->strides[d] = strides[d];
    }
}

static double act_ref(int act, double x)
{
    switch (act ? act - 1 : -1) {
    case ST_U_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case ST_U_GELU_TANH: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case ST_U_RELU: return x > 0 ? x : 0;
    case ST_U_TANH: return tanh(x);
    default: return x;
    }
}

static const char *act_name(int act)
{
    switch (act ? act - 1 : -1) {
    case ST_U_GELU: return "gelu";
    case ST_U_GELU_TANH: return "gelu_tanh";
    case ST_U_RELU: return "relu";
    case ST_U_TANH: return "tanh";
    default: return "none";
    }
}

/* One run of the CPU MatMul kernel: y [b, t, n] = A W (+ epilogue of s),
 * W [k, n] packed by prepare when prepack. */
static st_status run_matmul(const st_kernel *kern, const st_matmul_state *s, const st_operand *a, const float *w,
                            int64_t k, int64_t n, float *y, int64_t rows_b, int64_t rows_t, bool prepack)
{
    st_operand in[2], out;
    int64_t wsz[2] = {k, n}, wst[2] = {n, 1};
    set_op(&in[0], a->data, a->rank, a->sizes, a->strides);
    set_op(&in[1], (void *)w, 2, wsz, wst);
    int64_t ysz[3] = {rows_b, rows_t, n}, yst[3] = {rows_t * n, n, 1};
    set_op(&out, y, 3, ysz, yst);
    st_node node = {0};
    node.name = (char *)"linear";
    node.op_type = (char *)"MatMul";
    node.domain = (char *)"";
    void *priv = NULL;
    if (prepack && kern->prepare) {
        st_view views[3];
        st_view_init(&views[0], ST_F32, a->rank, a->sizes);
        st_view_init(&views[1], ST_F32, 2, wsz);
        st_view_init(&views[2], ST_F32, 3, ysz);
        const void *data[2] = {NULL, w};
        st_knode kn = {&node, NULL, s, 2, 1, views, data, NULL, NULL};
        st_status st = kern->prepare(&kn, &priv);
        if (st != ST_OK) return st;
    }
    st_kctx kc = {0};
    kc.node = &node;
    kc.state = s;
    kc.n_in = 2;
    kc.n_out = 1;
    kc.in = in;
    kc.out = &out;
    kc.priv = priv;
    st_status st = kern->run(&kc);
    if (kern->release) kern->release(priv);
    return st;
}

static long bits_differ(const float *x, const float *y, int64_t n)
{
    long d = 0;
    for (int64_t i = 0; i < n; i++) d += memcmp(&x[i], &y[i], sizeof *x) != 0;
    return d;
}

/* y = act(A W + b) for A [bt, tt, k] (transposed: stored as [tt, bt, k]). */
static void matmul_case(const st_kernel *kern, test_rng *rng, int64_t bt, int64_t tt, int64_t k, int64_t n, int act,
                        bool transposed, bool bias)
{
    int64_t m = bt * tt;
    float *a = malloc((size_t)(m * k) * sizeof *a), *w = malloc((size_t)(k * n) * sizeof *w);
    float *b = malloc((size_t)n * sizeof *b);
    float *y1 = malloc((size_t)(m * n) * sizeof *y1), *y2 = malloc((size_t)(m * n) * sizeof *y2);
    float *y0 = malloc((size_t)(m * n) * sizeof *y0);
    float sw = 1.0f / sqrtf((float)k);
    for (int64_t i = 0; i < m * k; i++) a[i] = frand(rng) * 2.0f;
    for (int64_t i = 0; i < k * n; i++) w[i] = frand(rng) * sw;
    for (int64_t i = 0; i < n; i++) b[i] = frand(rng);
    /* A [bt, tt, k]: element (i, t, p) at a[(i * tt + t) * k + p], or a
     * transposed view of [tt, bt, k] */
    int64_t asz[3] = {bt, tt, k}, ast[3];
    if (transposed) {
        ast[0] = k;
        ast[1] = bt * k;
    } else {
        ast[0] = tt * k;
        ast[1] = k;
    }
    ast[2] = 1;
    st_operand ao;
    set_op(&ao, a, 3, asz, ast);
    st_matmul_state s = {0}, plain = {0};
    s.alpha = plain.alpha = 1.0f;
    s.bias = bias ? b : NULL;
    s.n_bias = bias ? n : 0;
    s.act.act = act;
    for (int64_t i = 0; i < m * n; i++) y0[i] = y1[i] = y2[i] = POISON;
    char name[96];
    snprintf(name, sizeof name, "matmul %lldx%lldx%lldx%lld %s%s%s", (long long)bt, (long long)tt, (long long)k,
             (long long)n, act_name(act), bias ? " bias" : "", transposed ? " A^T view" : "");
    CHECKF(run_matmul(kern, &s, &ao, w, k, n, y1, bt, tt, true) == ST_OK, "%s: %s", name, st_last_error());
    CHECKF(run_matmul(kern, &s, &ao, w, k, n, y2, bt, tt, false) == ST_OK, "%s: %s", name, st_last_error());
    CHECKF(run_matmul(kern, &plain, &ao, w, k, n, y0, bt, tt, true) == ST_OK, "%s: %s", name, st_last_error());
    /* the unfused ops: an f32 add, then the activation as its kernel runs it */
    st_epilogue e = {act, 0.0f, 0.0f};
    for (int64_t i = 0; i < m; i++) {
        float *r = y0 + i * n;
        if (bias)
            for (int64_t j = 0; j < n; j++) r[j] += b[j];
        if (act && !((act - 1 == ST_U_GELU) && st_vec_act(&e, r, r, n))) st_epilogue_f32(&e, r, n);
    }
    long d12 = bits_differ(y1, y2, m * n), d10 = bits_differ(y1, y0, m * n), bad = 0;
    CHECKF(d12 == 0, "%s: %ld elements differ between prepacked and per-call weights", name, d12);
    CHECKF(d10 == 0, "%s: %ld elements differ from the unfused ops", name, d10);
    double worst = 0;
    for (int64_t i = 0; i < bt; i++)
        for (int64_t t = 0; t < tt; t++)
            for (int64_t j = 0; j < n; j++) {
                const float *ar = a + i * ast[0] + t * ast[1];
                double acc = bias ? b[j] : 0.0;
                for (int64_t p = 0; p < k; p++) acc += (double)ar[p] * w[p * n + j];
                double ref = act_ref(act, acc);
                float got = y1[(i * tt + t) * n + j];
                double dd = fabs(got - ref);
                if (dd > worst) worst = dd;
                if (!(dd <= 1e-5 + 1e-5 * fabs(ref)) && bad++ < 5)
                    fprintf(stderr, "%s: [%lld, %lld, %lld] = %.9g, reference %.9g\n", name, (long long)i, (long long)t,
                            (long long)j, got, ref);
            }
    CHECKF(bad == 0, "%s: %ld elements wrong", name, bad);
    printf("%-52s max |d| %.2e\n", name, worst);
    free(a);
    free(w);
    free(b);
    free(y0);
    free(y1);
    free(y2);
}

/* A 16-bit MatMul with a fused bias and activation on the CPU: a plan made
 * for CUDA (ST_CAP_MATMUL_EPI_LP) whose node fell back.  y = act(A W + b),
 * A [bt, tt, k], every operand in dt; each element against float64 within
 * 2e-3 + 3e-3 |ref| (three roundings to f16, 2^-11 relative each; bf16
 * 8x that). */
static void matmul_lowp_case(const st_kernel *kern, test_rng *rng, st_dtype dt, int64_t bt, int64_t tt, int64_t k, int64_t n, int act)
{
    int64_t m = bt * tt;
    float *a = malloc((size_t)(m * k) * sizeof *a), *w = malloc((size_t)(k * n) * sizeof *w), *b = malloc((size_t)n * sizeof *b);
    float *y = malloc((size_t)(m * n) * sizeof *y);
    uint16_t *a16 = malloc((size_t)(m * k) * 2), *w16 = malloc((size_t)(k * n) * 2), *y16 = malloc((size_t)(m * n) * 2);
    float sw = 1.0f / sqrtf((float)k);
    for (int64_t i = 0; i < m * k; i++) a[i] = frand(rng) * 2.0f;
    for (int64_t i = 0; i < k * n; i++) w[i] = frand(rng) * sw;
    for (int64_t i = 0; i < n; i++) b[i] = frand(rng);
    /* the operands as the kernel sees them, and their exact values back */
    st_convert(dt, a16, ST_F32, a, (size_t)(m * k));
    st_convert(ST_F32, a, dt, a16, (size_t)(m * k));
    st_convert(dt, w16, ST_F32, w, (size_t)(k * n));
    st_convert(ST_F32, w, dt, w16, (size_t)(k * n));
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        st_convert(dt, &h, ST_F32, &b[i], 1);
        st_convert(ST_F32, &b[i], dt, &h, 1);
    }
    for (int64_t i = 0; i < m * n; i++) y[i] = POISON;
    st_convert(dt, y16, ST_F32, y, (size_t)(m * n));
    st_operand in[2], out;
    int64_t asz[3] = {bt, tt, k}, ast[3] = {tt * k, k, 1}, wsz[2] = {k, n}, wst[2] = {n, 1};
    int64_t ysz[3] = {bt, tt, n}, yst[3] = {tt * n, n, 1};
    set_op(&in[0], a16, 3, asz, ast);
    set_op(&in[1], w16, 2, wsz, wst);
    set_op(&out, y16, 3, ysz, yst);
    in[0].dtype = in[1].dtype = out.dtype = dt;
    st_matmul_state s = {0};
    s.alpha = 1.0f;
    s.bias = b;
    s.n_bias = n;
    s.act.act = act;
    st_node node = {0};
    node.name = (char *)"linear16";
    node.op_type = (char *)"MatMul";
    node.domain = (char *)"";
    st_kctx kc = {0};
    kc.node = &node;
    kc.state = &s;
    kc.n_in = 2;
    kc.n_out = 1;
    kc.in = in;
    kc.out = &out;
    char name[96];
    snprintf(name, sizeof name, "matmul %s %lldx%lldx%lldx%lld %s bias", st_dtype_name(dt), (long long)bt, (long long)tt,
             (long long)k, (long long)n, act_name(act));
    CHECKF(kern->run(&kc) == ST_OK, "%s: %s", name, st_last_error());
    st_convert(ST_F32, y, dt, y16, (size_t)(m * n));
    double worst = 0, rel = dt == ST_BF16 ? 8.0 : 1.0;
    long bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = b[j];
            for (int64_t p = 0; p < k; p++) acc += (double)a[i * k + p] * w[p * n + j];
            double ref = act_ref(act, acc), dd = fabs(y[i * n + j] - ref);
            if (dd > worst) worst = dd;
            if (!(dd <= rel * (2e-3 + 3e-3 * fabs(ref))) && bad++ < 5)
                fprintf(stderr, "%s: [%lld, %lld] = %.6g, reference %.6g\n", name, (long long)i, (long long)j, y[i * n + j], ref);
        }
    CHECKF(bad == 0, "%s: %ld elements wrong", name, bad);
    printf("%-52s max |d| %.2e\n", name, worst);
    free(a);
    free(w);
    free(b);
    free(y);
    free(a16);
    free(w16);
    free(y16);
}

/* Gemm y [m, n] = alpha A B^T + beta C (+ act), B [n, k] constant. */
static void gemm_case(const st_kernel *kern, test_rng *rng, int64_t m, int64_t n, int64_t k, int c_rank, float beta,
                      int act)
{
    float *a = malloc((size_t)(m * k) * sizeof *a), *w = malloc((size_t)(n * k) * sizeof *w);
    float *c = malloc((size_t)(m * n) * sizeof *c), *y = malloc((size_t)(m * n) * sizeof *y);
    float sw = 1.0f / sqrtf((float)k);
    for (int64_t i = 0; i < m * k; i++) a[i] = frand(rng) * 2.0f;
    for (int64_t i = 0; i < n * k; i++) w[i] = frand(rng) * sw;
    for (int64_t i = 0; i < m * n; i++) c[i] = frand(rng);
    for (int64_t i = 0; i < m * n; i++) y[i] = POISON;
    st_operand in[3], out;
    int64_t asz[2] = {m, k}, ast[2] = {k, 1}, wsz[2] = {n, k}, wst[2] = {k, 1}, ysz[2] = {m, n}, yst[2] = {n, 1};
    set_op(&in[0], a, 2, asz, ast);
    set_op(&in[1], w, 2, wsz, wst);
    /* C: [n], [1, n] or [m, n] */
    int64_t csz[2] = {c_rank == 3 ? m : 1, n}, cst[2] = {n, 1};
    if (c_rank == 1) set_op(&in[2], c, 1, csz + 1, cst + 1);
    else set_op(&in[2], c, 2, csz, cst);
    set_op(&out, y, 2, ysz, yst);
    st_matmul_state s = {0};
    s.trans_b = true;
    s.alpha = 1.0f;
    s.beta = beta;
    s.act.act = act;
    st_node node = {0};
    node.name = (char *)"gemm";
    node.op_type = (char *)"Gemm";
    node.domain = (char *)"";
    st_view views[4];
    st_view_init(&views[0], ST_F32, 2, asz);
    st_view_init(&views[1], ST_F32, 2, wsz);
    st_view_init(&views[2], ST_F32, in[2].rank, in[2].sizes);
    st_view_init(&views[3], ST_F32, 2, ysz);
    const void *data[3] = {NULL, w, c};
    st_knode kn = {&node, NULL, &s, 3, 1, views, data, NULL, NULL};
    void *priv = NULL;
    char name[96];
    snprintf(name, sizeof name, "gemm %lldx%lldx%lld C rank %d%s beta %g %s", (long long)m, (long long)n, (long long)k,
             c_rank == 3 ? 2 : c_rank, c_rank == 3 ? " (full)" : "", beta, act_name(act));
    CHECKF(!kern->prepare || kern->prepare(&kn, &priv) == ST_OK, "%s: %s", name, st_last_error());
    st_kctx kc = {0};
    kc.node = &node;
    kc.state = &s;
    kc.n_in = 3;
    kc.n_out = 1;
    kc.in = in;
    kc.out = &out;
    kc.priv = priv;
    CHECKF(kern->run(&kc) == ST_OK, "%s: %s", name, st_last_error());
    if (kern->release) kern->release(priv);
    long bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = (double)beta * c[c_rank == 3 ? i * n + j : j];
            for (int64_t p = 0; p < k; p++) acc += (double)a[i * k + p] * w[j * k + p];
            double ref = act_ref(act, acc), dd = fabs(y[i * n + j] - ref);
            if (dd > worst) worst = dd;
            if (!(dd <= 1e-5 + 1e-5 * fabs(ref)) && bad++ < 5)
                fprintf(stderr, "%s: [%lld, %lld] = %.9g, reference %.9g\n", name, (long long)i, (long long)j,
                        y[i * n + j], ref);
        }
    CHECKF(bad == 0, "%s: %ld elements wrong", name, bad);
    printf("%-52s max |d| %.2e\n", name, worst);
    free(a);
    free(w);
    free(c);
    free(y);
}

/* LN(x + r) over the last dim of [bt, tt, d], r a transposed view of
 * [tt, bt, d]; the sum as output 1 when with_sum. */
static void add_norm_case(const st_kernel *aln, const st_kernel *ln, test_rng *rng, int64_t bt, int64_t tt, int64_t d,
                          bool with_sum, bool with_bias)
{
    int64_t m = bt * tt;
    float *x = malloc((size_t)(m * d) * sizeof *x), *r = malloc((size_t)(m * d) * sizeof *r);
    float *sc = malloc((size_t)d * sizeof *sc), *bi = malloc((size_t)d * sizeof *bi);
    float *y = malloc((size_t)(m * d) * sizeof *y), *sum = malloc((size_t)(m * d) * sizeof *sum);
    float *s2 = malloc((size_t)(m * d) * sizeof *s2), *y2 = malloc((size_t)(m * d) * sizeof *y2);
    for (int64_t i = 0; i < m * d; i++) x[i] = frand(rng) * 3.0f + 0.5f, r[i] = frand(rng);
    for (int64_t i = 0; i < d; i++) sc[i] = frand(rng) + 1.0f, bi[i] = frand(rng);
    for (int64_t i = 0; i < m * d; i++) y[i] = sum[i] = y2[i] = POISON;
    int64_t sz[3] = {bt, tt, d}, cst[3] = {tt * d, d, 1}, rst[3] = {d, bt * d, 1}, psz[1] = {d}, pst[1] = {1};
    st_operand in[4], out[2];
    set_op(&in[0], x, 3, sz, cst);
    set_op(&in[1], r, 3, sz, rst);
    set_op(&in[2], sc, 1, psz, pst);
    set_op(&in[3], bi, 1, psz, pst);
    set_op(&out[0], y, 3, sz, cst);
    set_op(&out[1], sum, 3, sz, cst);
    st_norm_state s = {0};
    s.kind = ST_N_LAYER_NORM;
    s.axis = 2;
    s.mask = 1u << 2;
    s.epsilon = 1e-5f;
    s.residual = true;
    st_node node = {0};
    node.name = (char *)"add_norm";
    node.op_type = (char *)"AddLayerNormalization";
    node.domain = (char *)"ai.strata";
    st_kctx kc = {0};
    kc.node = &node;
    kc.state = &s;
    kc.n_in = with_bias ? 4 : 3;
    kc.n_out = with_sum ? 2 : 1;
    kc.in = in;
    kc.out = out;
    char name[96];
    snprintf(name, sizeof name, "add+layernorm %lldx%lldx%lld%s%s", (long long)bt, (long long)tt, (long long)d,
             with_sum ? " +sum" : "", with_bias ? " +B" : "");
    CHECKF(aln->run(&kc) == ST_OK, "%s: %s", name, st_last_error());
    /* the unfused ops: the f32 sum, then LayerNormalization of it */
    for (int64_t i = 0; i < bt; i++)
        for (int64_t t = 0; t < tt; t++)
            for (int64_t j = 0; j < d; j++)
                s2[(i * tt + t) * d + j] = x[(i * tt + t) * d + j] + r[(t * bt + i) * d + j];
    st_norm_state ls = s;
    ls.residual = false;
    st_operand lin[3], lout;
    set_op(&lin[0], s2, 3, sz, cst);
    lin[1] = in[2];
    lin[2] = in[3];
    set_op(&lout, y2, 3, sz, cst);
    st_kctx lk = kc;
    lk.state = &ls;
    lk.n_in = with_bias ? 3 : 2;
    lk.n_out = 1;
    lk.in = lin;
    lk.out = &lout;
    CHECKF(ln->run(&lk) == ST_OK, "%s (unfused): %s", name, st_last_error());
    long dy = bits_differ(y, y2, m * d), ds = with_sum ? bits_differ(sum, s2, m * d) : 0, bad = 0;
    CHECKF(dy == 0, "%s: %ld elements differ from LayerNormalization of the sum", name, dy);
    CHECKF(ds == 0, "%s: %ld sums differ from x + r in f32", name, ds);
    if (!with_sum)
        for (int64_t i = 0; i < m * d; i++)
            if (sum[i] != POISON && bad++ < 3) fprintf(stderr, "%s: the absent sum output was written\n", name);
    double worst = 0;
    for (int64_t o = 0; o < m; o++) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < d; j++) mean += (double)s2[o * d + j];
        mean /= (double)d;
        for (int64_t j = 0; j < d; j++) var += ((double)s2[o * d + j] - mean) * ((double)s2[o * d + j] - mean);
        var /= (double)d;
        double inv = 1.0 / sqrt(var + 1e-5);
        for (int64_t j = 0; j < d; j++) {
            double ref = ((double)s2[o * d + j] - mean) * inv * sc[j] + (with_bias ? bi[j] : 0.0);
            double dd = fabs(y[o * d + j] - ref);
            if (dd > worst) worst = dd;
            if (!(dd <= 1e-5 + 1e-5 * fabs(ref)) && bad++ < 5)
                fprintf(stderr, "%s: [%lld, %lld] = %.9g, reference %.9g\n", name, (long long)o, (long long)j,
                        y[o * d + j], ref);
        }
    }
    CHECKF(bad == 0, "%s: %ld elements wrong", name, bad);
    printf("%-52s max |d| %.2e\n", name, worst);
    free(x);
    free(r);
    free(sc);
    free(bi);
    free(y);
    free(sum);
    free(s2);
    free(y2);
}

int main(void)
{
    const st_kernel *mm = find_kernel("MatMul", ""), *gemm = find_kernel("Gemm", "");
    const st_kernel *aln = find_kernel("AddLayerNormalization", "ai.strata"), *ln = find_kernel("LayerNormalization", "");
    CHECK(mm && gemm && aln && ln);
    if (!mm || !gemm || !aln || !ln) return check_exit("test_linear_epi");
    test_rng rng = {20261202};
    const int GELU = ST_U_GELU + 1, GELU_T = ST_U_GELU_TANH + 1, RELU = ST_U_RELU + 1, TANH = ST_U_TANH + 1;
    /* the encoder's shapes (2 x 77 tokens, d 256, feed-forward 1024) */
    matmul_case(mm, &rng, 2, 77, 256, 1024, GELU, false, true);
    matmul_case(mm, &rng, 77, 2, 256, 768, 0, true, true);
    matmul_case(mm, &rng, 2, 77, 1024, 256, 0, false, true);
    /* k across blocks, n not a multiple of 48 or 16, other activations */
    matmul_case(mm, &rng, 3, 13, 600, 77, GELU, true, true);
    matmul_case(mm, &rng, 1, 37, 300, 100, GELU_T, false, true);
    matmul_case(mm, &rng, 2, 9, 64, 50, RELU, false, true);
    matmul_case(mm, &rng, 2, 9, 64, 50, TANH, true, true);
    matmul_case(mm, &rng, 2, 9, 64, 50, GELU, false, false);
    /* one row: the matrix-vector path */
    matmul_case(mm, &rng, 1, 1, 256, 300, GELU, false, true);
    /* 16-bit products: the CPU fallback of a CUDA plan's fused MatMul */
    matmul_lowp_case(mm, &rng, ST_F16, 2, 33, 96, 80, GELU);
    matmul_lowp_case(mm, &rng, ST_F16, 1, 20, 64, 48, 0);
    matmul_lowp_case(mm, &rng, ST_BF16, 2, 9, 64, 40, RELU);
    gemm_case(gemm, &rng, 154, 256, 256, 1, 1.0f, 0);
    gemm_case(gemm, &rng, 37, 100, 300, 2, 0.5f, 0);
    gemm_case(gemm, &rng, 37, 100, 64, 3, 1.0f, 0);
    gemm_case(gemm, &rng, 20, 70, 64, 1, 1.0f, RELU);
    gemm_case(gemm, &rng, 1, 70, 64, 1, 1.0f, GELU);
    add_norm_case(aln, ln, &rng, 2, 77, 256, false, true);
    add_norm_case(aln, ln, &rng, 3, 5, 100, true, true);
    add_norm_case(aln, ln, &rng, 1, 7, 33, true, false);
    return check_exit("test_linear_epi");
}
