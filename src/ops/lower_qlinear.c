/*
 * lower_qlinear.c — the quantized elementwise ops' walks, parameters and
 * tables for the backends, and the checks the device accepts() share
 * (ops/lower_qlinear.h says why).
 */
#include <math.h>
#include <string.h>

#include "ops/lower_qlinear.h"
#include "ops/qlinear.h"

static bool is8(st_dtype t) { return t == ST_U8 || t == ST_I8; }

/* ---- walks ---- */

/* x's strides broadcast to the walk's shape: right-aligned, 0 where x has
 * size 1 or lacks the dim. */
static void bcast(const st_operand *x, const st_lql_walk *w, int64_t *s)
{
    int off = w->rank - x->rank;
    for (int d = 0; d < w->rank; d++) {
        int q = d - off;
        s[d] = q < 0 || x->sizes[q] == 1 ? 0 : x->strides[q];
    }
}

/* A walk over y's shape, with `sizes` (y's own, or a slot's) and inputs
 * a and b (b -1: none). */
static void walk_of(const st_kctx *k, const int64_t *sizes, int a, int b, st_lql_walk *w)
{
    const st_operand *y = &k->out[0];
    memset(w, 0, sizeof *w);
    w->rank = y->rank;
    w->count = 1;
    w->operand[ST_LQL_Y] = k->n_in;
    w->operand[ST_LQL_A] = a;
    w->operand[ST_LQL_B] = b;
    for (int d = 0; d < y->rank; d++) {
        w->n[d] = sizes[d];
        w->s[ST_LQL_Y][d] = y->strides[d];
        w->count *= sizes[d];
    }
    bcast(&k->in[a], w, w->s[ST_LQL_A]);
    if (b >= 0) bcast(&k->in[b], w, w->s[ST_LQL_B]);
}

void st_lower_qbinary_walk(const st_kctx *k, st_lql_walk *w) { walk_of(k, k->out[0].sizes, 0, 3, w); }

void st_lower_qunary_walk(const st_kctx *k, st_lql_walk *w) { walk_of(k, k->out[0].sizes, 0, -1, w); }

int st_lql_concat_count(int n_in) { return (n_in - 2) / 3; }

void st_lower_qconcat_walk(const st_kctx *k, int t, st_lql_walk *w)
{
    const st_qconcat_state *s = k->state;
    const st_operand *y = &k->out[0];
    int64_t at = 0, sizes[ST_MAX_RANK];
    for (int u = 0; u < t; u++) at += k->in[2 + 3 * u].sizes[s->axis];
    memcpy(sizes, y->sizes, sizeof sizes);
    sizes[s->axis] = k->in[2 + 3 * t].sizes[s->axis];
    walk_of(k, sizes, 2 + 3 * t, -1, w);
    w->y_off = at * y->strides[s->axis];
}

/* ---- parameters ---- */

static bool present(const st_knode *n, int i) { return i < n->n_in && n->views[i].rank >= 0; }

static float scale_of(const st_knode *n, int i) { return st_load_f32(n->views[i].dtype, n->data[i]); }

static int32_t zp_of(const st_knode *n, int i)
{
    return present(n, i) && n->data[i] ? (int32_t)st_load_i64(n->views[i].dtype, n->data[i]) : 0;
}

/* QuantizeLinear's rounding, as the CPU's q_round. */
static uint8_t q_round(float v, int32_t zp, bool u8)
{
    int32_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
    float r = isnan(v) ? 0.0f : rintf(v);
    if (r < (float)(lo - zp)) return (uint8_t)lo;
    if (r > (float)(hi - zp)) return (uint8_t)hi;
    return (uint8_t)((int32_t)r + zp);
}

void st_lower_qbinary_params(const st_knode *n, st_lql_binary *p)
{
    const st_qbinary_state *s = n->state;
    memset(p, 0, sizeof *p);
    p->sa = scale_of(n, 1);
    p->za = zp_of(n, 2);
    p->sb = scale_of(n, 4);
    p->zb = zp_of(n, 5);
    p->sc = scale_of(n, 6);
    p->zc = zp_of(n, 7);
    p->a_signed = n->views[0].dtype == ST_I8;
    p->c_signed = n->views[n->n_in].dtype == ST_I8;
    p->mul = s->op == ST_QL_MUL;
}

void st_lower_qlookup_table(const st_knode *n, uint8_t table[256])
{
    const st_qlut_state *s = n->state;
    for (int b = 0; b < 256; b++) table[b] = s->has_table ? s->table[b] : ((const uint8_t *)n->data[1])[b * n->views[1].strides[0]];
}

void st_lower_qconcat_table(const st_knode *n, int t, uint8_t table[256])
{
    bool yu = n->views[n->n_in].dtype == ST_U8;
    float ys = scale_of(n, 0);
    int32_t yz = zp_of(n, 1);
    int x = 2 + 3 * t;
    bool xu = n->views[x].dtype == ST_U8;
    float xs = scale_of(n, x + 1);
    int32_t xz = zp_of(n, x + 2);
    for (int b = 0; b < 256; b++) {
        int32_t v = xu ? b : (int32_t)(int8_t)(uint8_t)b;
        float f = (float)(v - xz) * xs;
        table[b] = q_round(f / ys, yz, yu);
    }
}

/* ---- accepts ---- */

/* Input i, when present, is a constant of the type it must have (f32
 * scale, 8-bit zero point). */
static bool const_param(const st_knode *n, int i, bool scale, char *why, size_t len)
{
    if (!present(n, i)) return scale ? st_kernel_refuse(why, len, "no scale at input %d", i) : true;
    if (!n->data[i]) return st_kernel_refuse(why, len, "a scale or zero point (input %d) computed at run time", i);
    st_dtype t = n->views[i].dtype;
    if (scale ? t != ST_F32 : !is8(t)) return st_kernel_refuse(why, len, "a %s scale or zero point (input %d)", st_dtype_name(t), i);
    return true;
}

/* which inputs are parameters (scales, zero points, a table), and which
 * of those are scales */
static bool binary_param(int i) { return i == 1 || i == 2 || i >= 4; }
static bool binary_scale(int i) { return i == 1 || i == 4 || i == 6; }
static bool lookup_param(int i) { return i == 1; }
static bool concat_param(int i) { return i < 2 || (i - 2) % 3 != 0; }
static bool concat_scale(int i) { return i == 0 || (i >= 2 && (i - 2) % 3 == 1); }

/* Every operand but the parameters is 8-bit. */
static bool bytes_only(const st_knode *n, bool (*param)(int), char *why, size_t len)
{
    for (int i = 0; i < n->n_in + n->n_out; i++)
        if (n->views[i].rank >= 0 && !(i < n->n_in && param(i)) && !is8(n->views[i].dtype))
            return st_kernel_refuse(why, len, "a %s operand %d", st_dtype_name(n->views[i].dtype), i);
    return true;
}

bool st_lql_accepts_binary(const st_knode *n, char *why, size_t len)
{
    if (n->n_in != 8 && n->n_in != 7) return st_kernel_refuse(why, len, "%d inputs", n->n_in);
    for (int i = 1; i < 8; i++)
        if (binary_param(i) && !const_param(n, i, binary_scale(i), why, len)) return false;
    return bytes_only(n, binary_param, why, len);
}

bool st_lql_accepts_lookup(const st_knode *n, char *why, size_t len)
{
    const st_qlut_state *s = n->state;
    if (s->kind != 2) return st_kernel_refuse(why, len, "QLinearSigmoid / QLinearLeakyRelu");
    if (!s->has_table && !(present(n, 1) && n->data[1])) return st_kernel_refuse(why, len, "a table computed at run time");
    return bytes_only(n, lookup_param, why, len);
}

bool st_lql_accepts_concat(const st_knode *n, char *why, size_t len)
{
    for (int i = 0; i < n->n_in; i++)
        if (concat_param(i) && !const_param(n, i, concat_scale(i), why, len)) return false;
    return bytes_only(n, concat_param, why, len);
}
