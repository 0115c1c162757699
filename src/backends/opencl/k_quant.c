/*
 * k_quant.c — host side of QuantizeLinear and DequantizeLinear on OpenCL
 * (quant.cl), per tensor or per axis.
 *
 * Why on the device: a QDQ model that the OpenCL backend does not fuse
 * into int8 kernels runs as float convs between Q/DQ pairs; with Q/DQ on
 * the CPU every pair was two transfers (YOLOv8n QDQ: 417 transfers, 440
 * of 653 commands on the CPU).  The blocked form (opset 21, block_size)
 * stays on the CPU: accepts refuses it.
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/misc.h"

static int64_t lo_of(st_dtype t) { return t == ST_I8 ? -128 : t == ST_I16 ? -32768 : 0; }
static int64_t hi_of(st_dtype t) { return t == ST_I8 ? 127 : t == ST_I16 ? 32767 : t == ST_U16 ? 65535 : 255; }
static bool f32_family(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }
static bool int_type(st_dtype t) { return t == ST_U8 || t == ST_I8 || t == ST_U16 || t == ST_I16; }

static bool accepts_quant(const st_knode *n, char *why, size_t len, bool dequant)
{
    const st_quant_state *s = n->state;
    if (s->block > 0) return st_kernel_refuse(why, len, "blocked quantization (block_size %lld)", (long long)s->block);
    st_dtype x = n->views[0].dtype, y = n->views[n->n_in].dtype;
    bool ok = dequant ? (int_type(x) || x == ST_I32) && f32_family(y) : (f32_family(x) || x == ST_I32) && int_type(y);
    if (!ok) return st_kernel_refuse(why, len, "%s to %s", st_dtype_name(x), st_dtype_name(y));
    if (!f32_family(n->views[1].dtype)) return st_kernel_refuse(why, len, "a %s scale", st_dtype_name(n->views[1].dtype));
    return true;
}

static bool accepts_q(const st_knode *n, char *why, size_t len) { return accepts_quant(n, why, len, false); }
static bool accepts_dq(const st_knode *n, char *why, size_t len) { return accepts_quant(n, why, len, true); }

/* The scale or zero point v as a view of y's rank: its one dim on the
 * axis, 1 elsewhere (a per-tensor one is broadcast as it is). */
static st_view along(const st_view *v, const st_view *y, int axis)
{
    if (axis < 0) return *v;
    st_view r = *v;
    r.rank = y->rank;
    for (int d = 0; d < y->rank; d++) {
        r.sizes[d] = d == axis ? v->sizes[0] : 1;
        r.strides[d] = d == axis ? v->strides[0] : 0;
    }
    return r;
}

static st_status run_quant(const st_kctx *k, bool dequant)
{
    st_cl_ctx *c = k->dev;
    const st_quant_state *s = k->state;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    bool has_z = k->n_in > 2 && k->in[2].data;
    st_view sv = along(&k->views[1], y, s->axis), zv = along(has_z ? &k->views[2] : &k->views[1], y, s->axis);
    st_cl_td td[4];
    ST_TRY(st_cl_td_of(y, &td[0]));
    ST_TRY(st_cl_td_broadcast(x, y, &td[1]));
    ST_TRY(st_cl_td_broadcast(&sv, y, &td[2]));
    ST_TRY(st_cl_td_broadcast(&zv, y, &td[3]));
    st_cl_td_coalesce(td, 4);
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), sm = st_cl_mem(&k->views[1]);
    cl_mem zm = has_z ? st_cl_mem(&k->views[2]) : sm;
    size_t global[2];
    st_cl_grid(td, 4, global);
    cl_int dq = dequant, hz = has_z;
    cl_long lo = lo_of(y->dtype), hi = hi_of(y->dtype);
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_quant, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(td[0]), ST_CLA(xm), ST_CLA(td[1]), ST_CLA(sm), ST_CLA(td[2]),
                        ST_CLA(zm), ST_CLA(td[3]), ST_CLA(dq), ST_CLA(hz), ST_CLA(lo), ST_CLA(hi)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_quant, 12, args));
    return st_cl_run(c, kern, ST_CLK_quant, 2, global, NULL, true);
}

static st_status st_cl_quantize(const st_kctx *k) { return run_quant(k, false); }
static st_status st_cl_dequantize(const st_kctx *k) { return run_quant(k, true); }

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

const st_kernel st_cl_k_quant[] = {
    /* the dtypes accepts_quant takes (float64 stays on the CPU) */
    {"QuantizeLinear", "", ST_DT_FLOATS | ST_DT(ST_I32), st_cl_quantize, accepts_q, NULL, NULL},
    {"DequantizeLinear", "", ST_DT_ALL, st_cl_dequantize, accepts_dq, NULL, NULL},
    {NULL}
};
