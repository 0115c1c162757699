/*
 * k_rownorm.cu — GroupNormalization on CUDA: x and y seen as
 * [N, G, C / G, spatial...] (a split of the channel axis that strides
 * always express), one block per (n, g) row that sums the row (mean),
 * then the squared deviations (variance: two passes, never
 * E[x^2] - E[x]^2), then writes y = (x - mean) / sqrt(var + eps) * scale +
 * bias, scale and bias per channel (opset 21) or per group (before).
 * The logic is backends/opencl/rownorm.cl's, which the node tests check on
 * PoCL, and so is the split: ops/lower_rownorm.c makes it for both
 * (LayerNorm and InstanceNorm have their kernels in k_norm.cu).
 */
#include "backends/cuda/common.cuh"
extern "C" {
#include "ops/norm.h"
}
#include "ops/lower_rownorm.h"

#define RN_THREADS 256

struct rownorm_p {
    int rank, outer;
    int64_t n[ST_MAX_RANK];
    int64_t s[4][ST_MAX_RANK];   /* x, y, scale, bias */
    st_dtype dt[4];
    float eps;
};

__device__ float rn_sum(float *red, float v)
{
    int lid = threadIdx.x;
    red[lid] = v;
    __syncthreads();
    for (int h = RN_THREADS / 2; h > 0; h >>= 1) {
        if (lid < h) red[lid] += red[lid + h];
        __syncthreads();
    }
    float t = red[0];
    __syncthreads();
    return t;
}

__device__ __forceinline__ void rn_inner(const rownorm_p &p, int64_t j, int64_t *o)
{
    o[0] = o[1] = o[2] = o[3] = 0;
    for (int d = p.rank - 1; d >= p.outer; d--) {
        int64_t r = j % p.n[d];
        j /= p.n[d];
        for (int k = 0; k < 4; k++) o[k] += r * p.s[k][d];
    }
}

__global__ void rownorm_kernel(rownorm_p p, void *y, const void *x, const void *sc, const void *bi)
{
    __shared__ float red[RN_THREADS];
    int64_t row = blockIdx.x, lid = threadIdx.x, len = 1, base[4] = {0, 0, 0, 0};
    for (int d = p.outer; d < p.rank; d++) len *= p.n[d];
    int64_t r = row;
    for (int d = p.outer - 1; d >= 0; d--) {
        int64_t c = r % p.n[d];
        r /= p.n[d];
        for (int k = 0; k < 4; k++) base[k] += c * p.s[k][d];
    }
    float acc = 0.0f;
    for (int64_t j = lid; j < len; j += RN_THREADS) {
        int64_t o[4];
        rn_inner(p, j, o);
        acc += st_ldf(p.dt[0], x, base[0] + o[0]);
    }
    float mu = rn_sum(red, acc) / (float)len;
    acc = 0.0f;
    for (int64_t j = lid; j < len; j += RN_THREADS) {
        int64_t o[4];
        rn_inner(p, j, o);
        float dv = st_ldf(p.dt[0], x, base[0] + o[0]) - mu;
        acc += dv * dv;
    }
    float is = 1.0f / sqrtf(rn_sum(red, acc) / (float)len + p.eps);
    for (int64_t j = lid; j < len; j += RN_THREADS) {
        int64_t o[4];
        rn_inner(p, j, o);
        float v = (st_ldf(p.dt[0], x, base[0] + o[0]) - mu) * is * st_ldf(p.dt[2], sc, base[2] + o[2]);
        if (bi) v += st_ldf(p.dt[3], bi, base[3] + o[3]);
        st_stf(p.dt[1], y, base[1] + o[1], v);
    }
}

static st_status cuda_group_norm(const st_kctx *k)
{
    const st_norm_state *s = (const st_norm_state *)k->state;
    const st_operand *x = &k->in[0], *sc = &k->in[1], *y = &k->out[0];
    const st_operand *bi = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    st_lower_rows r;
    st_lower_group_norm(k, bi != NULL, &r);
    rownorm_p p;
    memset(&p, 0, sizeof p);
    p.eps = s->epsilon;
    p.dt[0] = x->dtype;
    p.dt[1] = y->dtype;
    p.dt[2] = sc->dtype;
    p.dt[3] = bi ? bi->dtype : ST_F32;
    p.rank = r.rank;
    p.outer = r.outer;
    for (int d = 0; d < r.rank; d++) {
        p.n[d] = r.n[d];
        for (int o = 0; o < ST_LRN_OPS; o++) p.s[o][d] = r.s[o][d];
    }
    int64_t rows = r.rows;
    if (rows == 0) return ST_OK;
    if (r.len == 0) return st_error(ST_ERR_INTERNAL, "node '%s': normalising an empty row", k->node->name);
    rownorm_kernel<<<(unsigned)rows, RN_THREADS, 0, st_stream(k)>>>(p, y->data, x->data, sc->data, bi ? bi->data : NULL);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

static bool group_norm_accepts(const st_knode *n, char *why, size_t len)
{
    if (!st_lrn_accepts_rank(n, why, len)) return false;
    int64_t rows = n->views[0].sizes[0] * ((const st_norm_state *)n->state)->size;
    if (rows > 0x7fffffff) return st_kernel_refuse(why, len, "GroupNormalization of %lld rows", (long long)rows);
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        st_dtype t = n->views[i].dtype;
        if (n->views[i].rank >= 0 && t != ST_F32 && t != ST_F16 && t != ST_BF16)
            return st_kernel_refuse(why, len, "GroupNormalization of %s data", st_dtype_name(t));
    }
    return true;
}

extern "C" const st_kernel st_cuda_k_rownorm[] = {
    {"GroupNormalization", "", ST_DT_FLOATS, cuda_group_norm, group_norm_accepts, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
