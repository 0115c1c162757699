/*
 * k_elementwise.c — the elementwise family on Vulkan (unary.comp,
 * binary.comp): the unary activations, Clip (constant bounds in the
 * parameter block, bounds computed at run time read by the shader), the
 * binary arithmetic ops and Mod with numpy broadcasting and any strides,
 * the variadic Sum/Max/Min/Mean as a chain of binary dispatches (Mean's
 * last one divides), and, where the device has 8-bit storage, the
 * comparisons and IsNaN/IsInf into bool (the shaders' _b8 variants).
 * Inputs f32, and f16 where the device has it (computing in f32, rounding
 * once at the store).  The descriptors are the elementwise walk of
 * ops/lower_elementwise.h (st_vk_td_walk), the other backends' geometry.
 *
 * The shader codes are codes.h's, not strata's st_unary numbers: the map
 * below is the one place they meet, and an op without a shader code has
 * no entry, so it runs on the CPU.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/kernels.h"
#include "backends/vulkan/shaders/codes.h"
#include "backends/vulkan/vk_internal.h"
#include "core/status.h"
#include "ops/elementwise.h"

/* strata's unary code -> the shaders' (0 none: not on Vulkan) */
int st_vk_unary_code(int code)
{
    switch (code) {
    case ST_U_RELU: return VK_U_RELU;
    case ST_U_SIGMOID: return VK_U_SIGMOID;
    case ST_U_TANH: return VK_U_TANH;
    case ST_U_EXP: return VK_U_EXP;
    case ST_U_LOG: return VK_U_LOG;
    case ST_U_SQRT: return VK_U_SQRT;
    case ST_U_NEG: return VK_U_NEG;
    case ST_U_ABS: return VK_U_ABS;
    case ST_U_RECIPROCAL: return VK_U_RECIPROCAL;
    case ST_U_FLOOR: return VK_U_FLOOR;
    case ST_U_CEIL: return VK_U_CEIL;
    case ST_U_ROUND: return VK_U_ROUND;
    case ST_U_ERF: return VK_U_ERF;
    case ST_U_SIN: return VK_U_SIN;
    case ST_U_COS: return VK_U_COS;
    case ST_U_LEAKY_RELU: return VK_U_LEAKY_RELU;
    case ST_U_HARD_SIGMOID: return VK_U_HARD_SIGMOID;
    case ST_U_HARD_SWISH: return VK_U_HARD_SWISH;
    case ST_U_ELU: return VK_U_ELU;
    case ST_U_SELU: return VK_U_SELU;
    case ST_U_SOFTPLUS: return VK_U_SOFTPLUS;
    case ST_U_SOFTSIGN: return VK_U_SOFTSIGN;
    case ST_U_SILU: return VK_U_SILU;
    case ST_U_GELU: return VK_U_GELU;
    case ST_U_GELU_TANH: return VK_U_GELU_TANH;
    case ST_U_CLIP: return VK_U_CLIP;
    case ST_U_MISH: return VK_U_MISH;
    case ST_U_SIGN: return VK_U_SIGN;
    case ST_U_TAN: return VK_U_TAN;
    case ST_U_ASIN: return VK_U_ASIN;
    case ST_U_ACOS: return VK_U_ACOS;
    case ST_U_ATAN: return VK_U_ATAN;
    case ST_U_SINH: return VK_U_SINH;
    case ST_U_COSH: return VK_U_COSH;
    case ST_U_ASINH: return VK_U_ASINH;
    case ST_U_ACOSH: return VK_U_ACOSH;
    case ST_U_ATANH: return VK_U_ATANH;
    case ST_U_CELU: return VK_U_CELU;
    case ST_U_THRESHOLDED_RELU: return VK_U_THRESHOLDED_RELU;
    }
    return 0;
}

/* IsNaN and IsInf: tests into bool, not activations another kernel could
 * fuse, so st_vk_unary_code leaves them out (vk_unary maps them) */
static bool is_test(int code) { return code == ST_U_ISNAN || code == ST_U_ISINF; }

/* strata's binary code -> binary.comp's (-1: not on Vulkan).  Mean is
 * ADD but for its last step (vk_variadic). */
static int binary_code(int code)
{
    switch (code) {
    case ST_B_ADD:
    case ST_B_MEAN: return VK_B_ADD;
    case ST_B_SUB: return VK_B_SUB;
    case ST_B_MUL: return VK_B_MUL;
    case ST_B_DIV: return VK_B_DIV;
    case ST_B_MAX: return VK_B_MAX;
    case ST_B_MIN: return VK_B_MIN;
    case ST_B_POW: return VK_B_POW;
    case ST_B_PRELU: return VK_B_PRELU;
    case ST_B_MOD: return VK_B_MOD;
    case ST_B_EQUAL: return VK_B_EQUAL;
    case ST_B_LESS: return VK_B_LESS;
    case ST_B_GREATER: return VK_B_GREATER;
    case ST_B_LESS_EQUAL: return VK_B_LESS_EQUAL;
    case ST_B_GREATER_EQUAL: return VK_B_GREATER_EQUAL;
    }
    return -1;
}

/* The ops whose output is bool: the _b8 shader variants write them. */
static bool to_bool(int vk_binary_code)
{
    return vk_binary_code >= VK_B_EQUAL && vk_binary_code <= VK_B_GREATER_EQUAL;
}

static int32_t fbits(float f)
{
    int32_t i;
    memcpy(&i, &f, 4);
    return i;
}

static st_status run_unary(const st_kctx *k, int code, float a, float b, float g)
{
    st_vk_ctx *c = k->dev;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int64_t n;
    st_vk_bind bind[2];
    ST_TRY(st_vk_bind_yx(k, bind, &n));
    if (n == 0) return ST_OK;
    int32_t p[5 + 2 * ST_VK_TD] = {(int32_t)n, code, fbits(a), fbits(b), fbits(g)};
    st_vk_td_walk(y, 1, (const st_view *[]){x}, (const int32_t[]){bind[0].elem, bind[1].elem},
                  (int32_t *const[]){p + 5, p + 5 + ST_VK_TD});
    uint32_t groups[3];
    st_vk_grid1(c, n, 256, groups);
    st_vks id = y->dtype == ST_BOOL ? (st_vk_is_f16(x) ? ST_VKS_unary_b8_f16 : ST_VKS_unary_b8_f32)
                                    : (st_vk_is_f16(y) ? ST_VKS_unary_f16 : ST_VKS_unary_f32);
    return st_vk_dispatch(c, id, p, (int)(sizeof p / sizeof *p), 2, bind, groups);
}

static st_status vk_unary(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    if (s->code == ST_U_ISNAN) return run_unary(k, VK_U_ISNAN, 0, 0, 0);
    /* IsInf: a and b say whether +inf and -inf count */
    if (s->code == ST_U_ISINF) return run_unary(k, VK_U_ISINF, s->detect_pos ? 1.0f : 0.0f, s->detect_neg ? 1.0f : 0.0f, 0);
    return run_unary(k, st_vk_unary_code(s->code), s->alpha, s->beta, s->gamma);
}

/* Clip: bounds from the attributes (opset < 11) or inputs (11 on).  A
 * constant one is read at plan time into priv; one computed at run time
 * (rt[k]) is bound and read by unary.comp's _clip_rt variant, so the
 * bounds never travel through the host.  An absent bound is infinite. */
typedef struct clip_priv {
    float lo, hi;
    bool rt[2];                 /* min, max computed at run time */
} clip_priv;

static float const_float(const st_knode *n, int i, float dflt)
{
    if (i >= n->n_in || n->views[i].rank < 0 || !n->data[i]) return dflt;
    if (n->views[i].dtype == ST_F32) return *(const float *)n->data[i];
    return st_f16_to_f32(*(const uint16_t *)n->data[i]);
}

static bool runtime_bound(const st_knode *n, int i)
{
    return i < n->n_in && n->views[i].rank >= 0 && !n->data[i];
}

static st_status clip_prepare(const st_knode *n, void **priv)
{
    const st_ew_state *s = n->state;
    clip_priv *cp = malloc(sizeof *cp);
    if (!cp) return st_error(ST_ERR_NOMEM, "node '%s' (Clip): out of memory for its bounds", n->node ? n->node->name : "?");
    bool legacy = n->n_in == 1;
    cp->lo = legacy ? s->alpha : const_float(n, 1, -INFINITY);
    cp->hi = legacy ? s->beta : const_float(n, 2, INFINITY);
    if (cp->lo < -3.402823466e38f) cp->lo = -INFINITY;
    if (cp->hi > 3.402823466e38f) cp->hi = INFINITY;
    cp->rt[0] = runtime_bound(n, 1);
    cp->rt[1] = runtime_bound(n, 2);
    *priv = cp;
    return ST_OK;
}

static void clip_release(void *priv) { free(priv); }

/* The shape rule has made every bound a one-element tensor of x's dtype;
 * st_vk_accepts_float checks that dtype is one the shaders have. */
static bool clip_accepts(const st_knode *n, char *why, size_t len)
{
    return st_vk_accepts_float(n, why, len);
}

static st_status vk_clip_rt(const st_kctx *k, const clip_priv *cp)
{
    st_vk_ctx *c = k->dev;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int64_t n;
    st_vk_bind bind[4];
    ST_TRY(st_vk_bind_yx(k, bind, &n));
    if (n == 0) return ST_OK;
    int32_t p[5 + 2 * ST_VK_TD] = {(int32_t)n, fbits(cp->lo), -1, -1, fbits(cp->hi)};
    for (int b = 0; b < 2; b++)
        if (cp->rt[b]) {
            ST_TRY(st_vk_bind_view(c, &k->views[1 + b], false, &bind[2 + b]));
            p[2 + b] = bind[2 + b].elem;
        }
    /* the shader reads both bindings' blocks: one not bound at run time
     * gets the other bound, and p says not to read it */
    if (!cp->rt[0]) bind[2] = bind[3];
    if (!cp->rt[1]) bind[3] = bind[2];
    st_vk_td_walk(y, 1, (const st_view *[]){x}, (const int32_t[]){bind[0].elem, bind[1].elem},
                  (int32_t *const[]){p + 5, p + 5 + ST_VK_TD});
    uint32_t groups[3];
    st_vk_grid1(c, n, 256, groups);
    return st_vk_dispatch(c, st_vk_is_f16(y) ? ST_VKS_unary_clip_rt_f16 : ST_VKS_unary_clip_rt_f32, p,
                          (int)(sizeof p / sizeof *p), 4, bind, groups);
}

static st_status vk_clip(const st_kctx *k)
{
    const clip_priv *cp = k->priv;
    if (cp->rt[0] || cp->rt[1]) return vk_clip_rt(k, cp);
    return run_unary(k, VK_U_CLIP, cp->lo, cp->hi, 0);
}

/* y = a op b; divisor: Mean's last step's (VK_B_MEAN_LAST), else 1. */
static st_status run_binary(st_vk_ctx *c, const st_view *a, const st_view *b, const st_view *y, int code, float divisor)
{
    int64_t n = st_view_numel(y);
    if (n == 0) return ST_OK;
    st_vk_bind bind[3];
    ST_TRY(st_vk_bind_view(c, y, true, &bind[0]));
    ST_TRY(st_vk_bind_view(c, a, false, &bind[1]));
    ST_TRY(st_vk_bind_view(c, b, false, &bind[2]));
    int32_t p[3 + 3 * ST_VK_TD] = {(int32_t)n, code, fbits(divisor)};
    st_vk_td_walk(y, 2, (const st_view *[]){a, b}, (const int32_t[]){bind[0].elem, bind[1].elem, bind[2].elem},
                  (int32_t *const[]){p + 3, p + 3 + ST_VK_TD, p + 3 + 2 * ST_VK_TD});
    uint32_t groups[3];
    st_vk_grid1(c, n, 256, groups);
    st_vks id = to_bool(code) ? (st_vk_is_f16(a) ? ST_VKS_binary_b8_f16 : ST_VKS_binary_b8_f32)
                              : (st_vk_is_f16(y) ? ST_VKS_binary_f16 : ST_VKS_binary_f32);
    return st_vk_dispatch(c, id, p, (int)(sizeof p / sizeof *p), 3, bind, groups);
}

static st_status vk_binary(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    st_view b = k->views[1];
    st_ew_legacy_b(s, &b.rank, b.sizes, b.strides);
    return run_binary(k->dev, &k->views[0], &b, &k->views[k->n_in], binary_code(s->code), 1.0f);
}

/* Sum/Max/Min/Mean: y = x0 op x1, then y = y op xi: each dispatch reads
 * what the one before wrote, and st_vk_dispatch orders them by a barrier.
 * Mean sums, and its last dispatch adds the last input and divides by
 * the count, so the sum is rounded to y's type once less. */
static st_status vk_variadic(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    const st_view *y = &k->views[k->n_in];
    int n = k->n_in;
    if (n == 1) return run_unary(k, VK_U_IDENTITY, 0, 0, 0);
    for (int i = 1; i < n; i++) {
        bool last_of_mean = s->code == ST_B_MEAN && i == n - 1;
        int code = last_of_mean ? VK_B_MEAN_LAST : binary_code(s->code);
        ST_TRY(run_binary(k->dev, i == 1 ? &k->views[0] : y, &k->views[i], y, code, last_of_mean ? (float)n : 1.0f));
    }
    return ST_OK;
}

static bool unary_accepts(const st_knode *n, char *why, size_t len)
{
    const st_ew_state *s = n->state;
    if (is_test(s->code)) return st_vk_accepts_to_bool(n, why, len);
    if (!st_vk_unary_code(s->code)) return st_kernel_refuse(why, len, "%s has no Vulkan shader", n->op->name);
    return st_vk_accepts_float(n, why, len);
}

static bool binary_accepts(const st_knode *n, char *why, size_t len)
{
    const st_ew_state *s = n->state;
    int code = binary_code(s->code);
    if (code < 0) return st_kernel_refuse(why, len, "%s has no Vulkan shader", n->op->name);
    /* the shape rule refuses float Mod with fmod=0 (ONNX asks fmod=1) */
    if (s->code == ST_B_MOD && !s->fmod) return st_kernel_refuse(why, len, "Mod with fmod=0 runs on the CPU");
    if (to_bool(code)) return st_vk_accepts_to_bool(n, why, len);
    return st_vk_accepts_float(n, why, len);
}

/* A variadic op writes y and reads it back: y must not overlap an input
 * (other than being the same view) and must be rank >= each input's. */
static bool variadic_accepts(const st_knode *n, char *why, size_t len)
{
    const st_ew_state *s = n->state;
    if (binary_code(s->code) < 0) return st_kernel_refuse(why, len, "%s runs on the CPU", n->op->name);
    return st_vk_accepts_float(n, why, len);
}

/* ---- the kernel table entries of this file (vulkan/table.c) ---- */

#define FL (ST_DT(ST_F32) | ST_DT(ST_F16))
/* BitShift's list takes floats, but it has no shader: no dtypes here, so
 * the README's table does not list an op that always falls back */
#define VK_BINARY_TYPES(code, types) ((code) == ST_B_SHIFT_LEFT ? 0 : (types) & FL)
#define UNARY_K(name, code, types, a, b, g) {#name, "", (types) & FL, vk_unary, unary_accepts, NULL, NULL},
#define BINARY_K(name, code, types, to_bool) \
    {#name, "", VK_BINARY_TYPES(ST_B_##code, types), vk_binary, binary_accepts, NULL, NULL},
#define VARIADIC_K(name, code, types) {#name, "", (types) & FL, vk_variadic, variadic_accepts, NULL, NULL},
const st_kernel st_vk_k_elementwise[] = {
    ST_UNARY_OPS(UNARY_K)
    ST_BINARY_OPS(BINARY_K)
    ST_VARIADIC_OPS(VARIADIC_K)
    {"Clip", "", FL, vk_clip, clip_accepts, clip_prepare, clip_release},
    {NULL}
};
