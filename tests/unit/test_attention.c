/*
 * test_attention.c — the CPU's FusedAttention kernel (k_attention.c)
 * against a float64 reference of softmax(mask(scale(Q K^T))) V.
 *
 * Random inputs (uniform in [-1, 1], so scores stay near what a trained
 * model's do), every output element compared within 1e-5 + 1e-5 |ref|;
 * outputs are poisoned first, and the gaps of a strided output must keep
 * the poison.  Cases: an additive mask broadcast over heads with -inf
 * entries and one fully masked row (NaN, as the unfused Softmax gives),
 * K^T as a transposed view (packed by the kernel), a padded and a
 * transposed output; a causal mask through Where with fill -inf, both
 * polarities; sequence lengths that are not multiples of 16, one long
 * enough for several row blocks, dh and dv wider than the GPU kernels'
 * tiles, and a single query row.  The same
 * binary runs as unit_attention_portable with STRATA_CPU_NO_AVX512=1
 * (the st_sgemm path).  The layout form the fusion pass plans for
 * nn.MultiheadAttention on the CPU (heads split out of a QKV slice by
 * strides, Q's scale, the output written through its Reshape) has its
 * own cases, on the CPU's kernel only (the GPU kernels are not given it).
 *
 * `test_attention opencl` and `test_attention cuda` run the same cases
 * on that backend's kernel (backends/opencl/attention.cl,
 * backends/cuda/k_attention.cu): each operand in its own device storage
 * at a byte offset of 64 (views that do not start at the base), the
 * output storage poisoned by an upload, the kernel enqueued with a
 * hand-made context, the output read back whole.  They exit 77 (skipped)
 * where the backend has no device.  `test_attention cpu f16` runs the
 * f16 cases on the CPU's kernel (f16 operands widened to f32 copies).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "check.h"
#include "core/dtype.h"
#include "ops/kernel.h"
#include "ops/linalg.h"
#ifdef ST_TEST_OPENCL
#include "backends/opencl/cl_internal.h"
#endif
#ifdef ST_TEST_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_ctx.h"
#endif

#define POISON 12345.0f

static float frand(test_rng *r) { return (float)((double)rng_u32(r) / 4294967296.0 * 2.0 - 1.0); }

typedef struct acase {
    const char *name;
    int lead;                     /* number of leading dims */
    int64_t ld[2];                /* their sizes */
    int64_t tq, tk, dh, dv;
    int scale_kind;
    float scale;
    int mask_kind;                /* ST_ATT_MASK_* */
    int mrank;                    /* mask rank (its dims: 1 where mbcast says so) */
    unsigned mbcast;              /* bit d: the mask's dim d (of the scores' rank) is 1 */
    float fill;
    bool fill_when;
    bool out_transposed;          /* else rows padded by 3 */
    bool full_row_masked;         /* ADD: row 1 of the first head all -inf */
    bool kt_packed;               /* K^T stored as itself [.., dh, tk], else a transposed view of K */
} acase;

/* `test_attention cuda f16` (or cpu f16): the operands, the additive mask and the
 * output in f16 (the inputs rounded first, so the reference sees what the
 * kernel sees); CUDA's tensor-core kernel takes the cases with dh = dv of
 * 32, 64 or 128, its general one the others. */
static bool g_f16;

static float round_f16(float x) { return st_f16_to_f32(st_f32_to_f16(x)); }

/* A host copy of n floats in the test's dtype (f16 when g_f16). */
static void *dev_copy(const float *x, int64_t n)
{
    if (!g_f16) {
        float *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
        memcpy(c, x, (size_t)n * sizeof *c);
        return c;
    }
    uint16_t *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
    for (int64_t i = 0; i < n; i++) h[i] = st_f32_to_f16(x[i]);
    return h;
}

/* Where the operands' views start in their device storages. */
#define DEV_PAD 64

static const st_kernel *find_kernel(st_backend_kind kind)
{
    const st_kernel_table *t = st_backend_kernels(kind);
    for (int i = 0; t && i < st_kernel_count(t); i++) {
        const st_kernel *k = st_kernel_at(t, i);
        if (!strcmp(k->op, "FusedAttention")) return k;
    }
    return NULL;
}

static void set_op(st_operand *o, void *data, st_dtype dt, int rank, const int64_t *sizes, const int64_t *strides)
{
    memset(o, 0, sizeof *o);
    o->data = data;
    o->dtype = dt;
    o->rank = rank;
    for (int d = 0; d < rank; d++) {
        o->sizes[d] = sizes[d];
        o->strides[d] = strides[d];
    }
}

/* Runs kern on dev with kc's operands (host data, host layouts) moved
 * into device storages, one per operand, each view starting DEV_PAD
 * bytes in; bytes[i] is operand i's host extent (the output last), and
 * the output's device storage starts as out_host (the poison), whose
 * whole extent is read back into it. */
static st_status run_on_device(st_backend *dev, const st_kernel *kern, st_kctx *kc, const size_t *bytes, void *out_host)
{
    int n = kc->n_in + kc->n_out;
    st_storage *sto[5] = {0};
    st_view views[5];
    st_operand ops[5];
    st_status st = ST_OK;
    for (int i = 0; i < n && st == ST_OK; i++) {
        const st_operand *src = i < kc->n_in ? &kc->in[i] : &kc->out[0];
        size_t b = i < kc->n_in ? bytes[i] : bytes[4];
        st = dev->storage_alloc(dev, DEV_PAD + b, "attention test", &sto[i]);
        if (st == ST_OK && b) st = dev->write(dev, sto[i], DEV_PAD, src->data, b);
        if (st != ST_OK) break;
        memset(&views[i], 0, sizeof views[i]);
        views[i].storage = sto[i];
        views[i].offset = DEV_PAD;
        views[i].dtype = src->dtype;
        views[i].rank = src->rank;
        ops[i] = *src;
        ops[i].data = sto[i]->dev ? (char *)sto[i]->dev + DEV_PAD : NULL;
        for (int d = 0; d < src->rank; d++) {
            views[i].sizes[d] = src->sizes[d];
            views[i].strides[d] = src->strides[d];
        }
    }
    st_kctx k = *kc;
    k.in = ops;
    k.out = &ops[kc->n_in];
    k.views = views;
#ifdef ST_TEST_OPENCL
    if (st == ST_OK && dev->kind == ST_BACKEND_OPENCL) {
        st_cl_device *d = (st_cl_device *)dev;
        cl_int err;
        cl_command_queue q = clCreateCommandQueue(d->context, d->device, 0, &err);
        cl_kernel kernels[ST_CLK_COUNT] = {0};
        st_cl_ctx c = {0};
        c.dev = d;
        c.queue = q;
        c.kernels = kernels;
        k.dev = &c;
        st = st_cl_check(err, "clCreateCommandQueue");
        if (st == ST_OK) st = kern->run(&k);
        if (st == ST_OK) st = st_cl_check(clFinish(q), "clFinish");
        for (int i = 0; i < c.n_tails; i++) clReleaseEvent(c.tails[i]);
        free(c.tails);
        for (int i = 0; i < ST_CLK_COUNT; i++)
            if (kernels[i]) clReleaseKernel(kernels[i]);
        if (q) clReleaseCommandQueue(q);
    }
#endif
#ifdef ST_TEST_CUDA
    if (st == ST_OK && dev->kind == ST_BACKEND_CUDA) {
        /* the default stream; the uploads ran on the backend's copy
         * stream, so wait for the whole device before and after */
        st_cuda_ctx c = {0};
        k.dev = &c;
        if (cudaDeviceSynchronize() != cudaSuccess) st = st_error(ST_ERR_BACKEND, "cuda: the uploads failed");
        if (st == ST_OK) st = kern->run(&k);
        cudaError_t e = cudaDeviceSynchronize();
        if (st == ST_OK && e != cudaSuccess) st = st_error(ST_ERR_BACKEND, "cuda: the kernel failed: %s", cudaGetErrorString(e));
    }
#endif
    if (st == ST_OK && bytes[4]) st = dev->read(dev, sto[n - 1], DEV_PAD, out_host, bytes[4]);
    for (int i = 0; i < n; i++)
        if (sto[i]) dev->storage_free(dev, sto[i]);
    return st;
}

static void run_case(st_backend *dev, const st_kernel *kern, test_rng *rng, const acase *c)
{
    int r = c->lead + 2;
    int64_t nb = 1;
    for (int d = 0; d < c->lead; d++) nb *= c->ld[d];
    int64_t tq = c->tq, tk = c->tk, dh = c->dh, dv = c->dv;
    float *q = malloc((size_t)(nb * tq * dh) * sizeof *q), *k = malloc((size_t)(nb * tk * dh) * sizeof *k);
    float *v = malloc((size_t)(nb * tk * dv) * sizeof *v);
    for (int64_t i = 0; i < nb * tq * dh; i++) q[i] = frand(rng) * 2.0f;
    for (int64_t i = 0; i < nb * tk * dh; i++) k[i] = frand(rng) * 2.0f;
    for (int64_t i = 0; i < nb * tk * dv; i++) v[i] = frand(rng);
    if (g_f16) {
        for (int64_t i = 0; i < nb * tq * dh; i++) q[i] = round_f16(q[i]);
        for (int64_t i = 0; i < nb * tk * dh; i++) k[i] = round_f16(k[i]);
        for (int64_t i = 0; i < nb * tk * dv; i++) v[i] = round_f16(v[i]);
    }
    st_dtype dt = g_f16 ? ST_F16 : ST_F32;
    size_t es = g_f16 ? 2 : 4;
    /* K as the kernel reads it: K itself, or K^T packed */
    float *kx = k;
    if (c->kt_packed) {
        kx = malloc((size_t)(nb * tk * dh) * sizeof *kx);
        for (int64_t b = 0; b < nb; b++)
            for (int64_t j = 0; j < tk; j++)
                for (int64_t p = 0; p < dh; p++) kx[b * tk * dh + p * tk + j] = k[b * tk * dh + j * dh + p];
    }
    void *qd = dev_copy(q, nb * tq * dh), *kd = dev_copy(kx, nb * tk * dh), *vd = dev_copy(v, nb * tk * dv);
    /* operands: Q and V contiguous, KT a transposed view of K [.., tk, dh] */
    int64_t qs[4], ks[4], vs[4], sz[4];
    st_operand in[4], out;
    for (int d = 0; d < c->lead; d++) sz[d] = c->ld[d];
    int64_t st_q = tq * dh, st_k = tk * dh, st_v = tk * dv;
    for (int d = c->lead - 1, m = 1; d >= 0; m *= (int)c->ld[d], d--) {
        qs[d] = st_q * m;
        ks[d] = st_k * m;
        vs[d] = st_v * m;
    }
    sz[r - 2] = tq;
    sz[r - 1] = dh;
    qs[r - 2] = dh;
    qs[r - 1] = 1;
    set_op(&in[0], qd, dt, r, sz, qs);
    sz[r - 2] = dh;
    sz[r - 1] = tk;
    ks[r - 2] = c->kt_packed ? tk : 1;
    ks[r - 1] = c->kt_packed ? 1 : dh;
    set_op(&in[1], kd, dt, r, sz, ks);
    sz[r - 2] = tk;
    sz[r - 1] = dv;
    vs[r - 2] = dv;
    vs[r - 1] = 1;
    set_op(&in[2], vd, dt, r, sz, vs);
    /* the mask: the scores' shape with the broadcast dims 1, right-aligned */
    int64_t ssz[4], msz[4], mst[4], mn = 1;
    for (int d = 0; d < c->lead; d++) ssz[d] = c->ld[d];
    ssz[r - 2] = tq;
    ssz[r - 1] = tk;
    int mr = c->mask_kind ? c->mrank : 0;
    for (int d = 0; d < mr; d++) msz[d] = (c->mbcast >> (r - mr + d)) & 1 ? 1 : ssz[r - mr + d];
    for (int d = mr - 1; d >= 0; d--) {
        mst[d] = mn;
        mn *= msz[d];
    }
    float *mf = NULL;
    void *md = NULL;
    uint8_t *mb = NULL;
    if (c->mask_kind == ST_ATT_MASK_ADD) {
        mf = malloc((size_t)mn * sizeof *mf);
        for (int64_t i = 0; i < mn; i++) mf[i] = rng_u32(rng) % 4 == 0 ? -INFINITY : frand(rng);
        if (c->full_row_masked)
            for (int64_t j = 0; j < tk; j++) mf[1 * mst[mr - 2] + j * mst[mr - 1]] = -INFINITY;
        if (g_f16)
            for (int64_t i = 0; i < mn; i++) mf[i] = round_f16(mf[i]);
        md = dev_copy(mf, mn);
        set_op(&in[3], md, dt, mr, msz, mst);
    } else if (c->mask_kind == ST_ATT_MASK_WHERE) {
        /* causal: key j after query i (offset so the last query sees all keys) */
        mb = malloc((size_t)mn);
        for (int64_t i = 0; i < mn; i++) {
            int64_t row = (i / mst[mr - 2]) % msz[mr - 2], col = i % msz[mr - 1];
            bool later = col > row + (tk - tq);
            mb[i] = (uint8_t)(c->fill_when ? later : !later);
        }
        set_op(&in[3], mb, ST_BOOL, mr, msz, mst);
    }
    /* the output, poisoned: rows padded by 3, or stored transposed */
    int64_t osz[4], ost[4], orow = c->out_transposed ? tq : dv + 3, oslab = c->out_transposed ? dv * tq : tq * (dv + 3);
    for (int d = 0; d < c->lead; d++) osz[d] = c->ld[d];
    for (int d = c->lead - 1, m = 1; d >= 0; m *= (int)c->ld[d], d--) ost[d] = oslab * m;
    osz[r - 2] = tq;
    osz[r - 1] = dv;
    ost[r - 2] = c->out_transposed ? 1 : orow;
    ost[r - 1] = c->out_transposed ? orow : 1;
    float *o = malloc((size_t)(nb * oslab) * sizeof *o);
    for (int64_t i = 0; i < nb * oslab; i++) o[i] = POISON;
    void *od = dev_copy(o, nb * oslab);
    const float poison = g_f16 ? round_f16(POISON) : POISON;
    set_op(&out, od, dt, r, osz, ost);

    st_attention_state s = {c->scale_kind, c->scale, c->mask_kind, c->fill, c->fill_when};
    st_node node = {0};
    node.name = (char *)c->name;
    node.op_type = (char *)"FusedAttention";
    node.domain = (char *)"ai.strata";
    st_kctx kc = {0};
    kc.node = &node;
    kc.state = &s;
    kc.n_in = c->mask_kind ? 4 : 3;
    kc.n_out = 1;
    kc.in = in;
    kc.out = &out;
    size_t bytes[5] = {(size_t)(nb * tq * dh) * es, (size_t)(nb * tk * dh) * es, (size_t)(nb * tk * dv) * es,
                       (size_t)mn * (mf ? es : 1), (size_t)(nb * oslab) * es};
    st_status st = dev ? run_on_device(dev, kern, &kc, bytes, od) : kern->run(&kc);
    CHECKF(st == ST_OK, "%s: %s", c->name, st_last_error());
    for (int64_t i = 0; i < nb * oslab; i++) o[i] = g_f16 ? st_f16_to_f32(((const uint16_t *)od)[i]) : ((const float *)od)[i];
    /* f16: the output rounds to 11 bits and P goes to the tensor cores in f16 */
    const double tol = g_f16 ? 2e-3 : 1e-5;

    /* the float64 reference, every element */
    double *sc = malloc((size_t)(tk > 0 ? tk : 1) * sizeof *sc);
    long bad = 0, nan_rows = 0;
    double worst = 0;
    for (int64_t b = 0; b < nb; b++) {
        int64_t idx[2] = {c->lead > 1 ? b / c->ld[1] : b, c->lead > 1 ? b % c->ld[1] : 0};
        for (int64_t i = 0; i < tq; i++) {
            double mx = -INFINITY;
            for (int64_t j = 0; j < tk; j++) {
                double acc = 0;
                for (int64_t p = 0; p < dh; p++) acc += (double)q[b * st_q + i * dh + p] * k[b * st_k + j * dh + p];
                if (c->scale_kind == ST_ATT_SCALE_MUL) acc *= c->scale;
                if (c->scale_kind == ST_ATT_SCALE_DIV) acc /= c->scale;
                if (c->mask_kind) {
                    int64_t full[4], mo = 0;
                    for (int d = 0; d < c->lead; d++) full[d] = idx[d];
                    full[r - 2] = i;
                    full[r - 1] = j;
                    for (int d = 0; d < mr; d++) mo += (msz[d] == 1 ? 0 : full[r - mr + d]) * mst[d];
                    if (c->mask_kind == ST_ATT_MASK_ADD) acc += mf[mo];
                    else if ((mb[mo] != 0) == c->fill_when) acc = c->fill;
                }
                sc[j] = acc;
                if (acc > mx || isnan(acc)) mx = acc;
            }
            double sum = 0;
            for (int64_t j = 0; j < tk; j++) sum += sc[j] = exp(sc[j] - mx);
            bool nan_row = isnan(sum);
            nan_rows += nan_row;
            for (int64_t cc = 0; cc < dv; cc++) {
                double ref = 0;
                for (int64_t j = 0; j < tk; j++) ref += sc[j] / sum * v[b * st_v + j * dv + cc];
                float got = o[b * oslab + i * ost[r - 2] + cc * ost[r - 1]];
                bool ok = nan_row ? isnan(got) : fabs(got - ref) <= tol + tol * fabs(ref);
                if (!nan_row && fabs(got - ref) > worst) worst = fabs(got - ref);
                if (!ok && bad++ < 5)
                    fprintf(stderr, "%s: [%lld, %lld, %lld] = %.9g, reference %.9g\n", c->name, (long long)b, (long long)i,
                            (long long)cc, got, ref);
            }
        }
    }
    /* the gaps of the padded output are untouched */
    if (!c->out_transposed)
        for (int64_t b = 0; b < nb; b++)
            for (int64_t i = 0; i < tq; i++)
                for (int64_t g = dv; g < dv + 3; g++)
                    if (o[b * oslab + i * orow + g] != poison && bad++ < 5) fprintf(stderr, "%s: gap written\n", c->name);
    CHECKF(bad == 0, "%s: %ld elements wrong", c->name, bad);
    if (c->full_row_masked) CHECKF(nan_rows > 0, "%s: the fully masked row was not tested", c->name);
    printf("%-28s max |d| %.2e, %ld NaN rows\n", c->name, worst, nan_rows);
    free(sc);
    free(q);
    free(k);
    free(v);
    free(mf);
    free(mb);
    free(o);
    free(md);
    free(od);
    free(qd);
    free(kd);
    free(vd);
    if (kx != k) free(kx);
}

/* The layout form (linalg.h's st_att_layout) as passes/fuse_attention.c
 * plans nn.MultiheadAttention: Q, K and V are the three [T, B, H*d]
 * slices of one QKV buffer [T, B, 3*H*d] (row stride 3*H*d + pad), split
 * into heads by the layouts (Q's and V's [B, H, T, d], K's [B, H, d, T]),
 * Q divided by a constant first, the padding mask [B*H, 1, T] split into
 * [B, H, 1, T], and the output written through its layout into
 * [T*B, H*dv] rows padded by 5 (the gaps must keep the poison). */
static void set_lay(st_att_layout *l, const int8_t *from, const int64_t *size, const int8_t *perm)
{
    l->n = 4;
    for (int k = 0; k < 4; k++) {
        l->from[k] = from[k];
        l->size[k] = size[k];
        l->perm[k] = perm[k];
    }
}

static void run_heads_case(const st_kernel *kern, test_rng *rng, const char *name, int64_t b, int64_t h, int64_t t,
                           int64_t d, bool mask_rank3)
{
    int64_t dm = h * d, row = 3 * dm + 7, pad = 5, orow = dm + pad;
    float qdiv = 8.0f;
    float *qkv = malloc((size_t)(t * b * row) * sizeof *qkv);
    for (int64_t i = 0; i < t * b * row; i++) qkv[i] = frand(rng) * 2.0f;
    float *mf = malloc((size_t)(b * h * t) * sizeof *mf);
    /* padding: sequence s has its last s*3 keys masked */
    for (int64_t bh = 0; bh < b * h; bh++)
        for (int64_t j = 0; j < t; j++) mf[bh * t + j] = j >= t - (bh / h) * 3 ? -INFINITY : 0.0f;
    float *o = malloc((size_t)(t * b * orow) * sizeof *o);
    for (int64_t i = 0; i < t * b * orow; i++) o[i] = POISON;
    st_operand in[4], out;
    int64_t ssz[3] = {t, b, dm}, sst[3] = {b * row, row, 1};
    for (int k = 0; k < 3; k++) set_op(&in[k], qkv + k * dm, ST_F32, 3, ssz, sst);
    int64_t msz3[3] = {b * h, 1, t}, mst3[3] = {t, t, 1}, msz2[2] = {1, t}, mst2[2] = {t, 1};
    /* a rank-2 mask is one row for every head (the first sequence's) */
    if (mask_rank3) set_op(&in[3], mf, ST_F32, 3, msz3, mst3);
    else set_op(&in[3], mf, ST_F32, 2, msz2, mst2);
    int64_t osz[2] = {t * b, dm}, ost[2] = {orow, 1};
    set_op(&out, o, ST_F32, 2, osz, ost);

    st_attention_state s = {ST_ATT_SCALE_NONE, 1.0f, ST_ATT_MASK_ADD, 0, false};
    s.q_scale_kind = ST_ATT_SCALE_DIV;
    s.q_scale = qdiv;
    const int8_t from_s[4] = {0, 1, 2, 2}, perm_qv[4] = {1, 2, 0, 3}, perm_k[4] = {1, 2, 3, 0};
    const int64_t size_s[4] = {t, b, h, d};
    set_lay(&s.lay[ST_ATT_Q], from_s, size_s, perm_qv);
    set_lay(&s.lay[ST_ATT_KT], from_s, size_s, perm_k);
    set_lay(&s.lay[ST_ATT_V], from_s, size_s, perm_qv);
    const int8_t from_o[4] = {0, 0, 1, 1}, ident[4] = {0, 1, 2, 3}, from_m[4] = {0, 0, 1, 2};
    set_lay(&s.lay[ST_ATT_OUT], from_o, size_s, perm_qv);
    const int64_t size_m[4] = {b, h, 1, t};
    if (mask_rank3) set_lay(&s.lay[ST_ATT_MASK], from_m, size_m, ident);
    st_node node = {0};
    node.name = (char *)name;
    st_kctx kc = {0};
    kc.node = &node;
    kc.state = &s;
    kc.n_in = 4;
    kc.n_out = 1;
    kc.in = in;
    kc.out = &out;
    st_status st = kern->run(&kc);
    CHECKF(st == ST_OK, "%s: %s", name, st_last_error());

    double *sc = malloc((size_t)t * sizeof *sc);
    long bad = 0;
    double worst = 0;
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t hi = 0; hi < h; hi++)
            for (int64_t i = 0; i < t; i++) {
                const float *mrow = mf + (mask_rank3 ? (bi * h + hi) * t : 0);
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < t; j++) {
                    double acc = 0;
                    for (int64_t p = 0; p < d; p++)
                        acc += (double)qkv[(i * b + bi) * row + hi * d + p] / qdiv * qkv[(j * b + bi) * row + dm + hi * d + p];
                    sc[j] = acc + mrow[j];
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int64_t j = 0; j < t; j++) sum += sc[j] = exp(sc[j] - mx);
                for (int64_t c = 0; c < d; c++) {
                    double ref = 0;
                    for (int64_t j = 0; j < t; j++) ref += sc[j] / sum * qkv[(j * b + bi) * row + 2 * dm + hi * d + c];
                    float got = o[(i * b + bi) * orow + hi * d + c];
                    if (fabs(got - ref) > worst) worst = fabs(got - ref);
                    if (!(fabs(got - ref) <= 1e-5 + 1e-5 * fabs(ref)) && bad++ < 5)
                        fprintf(stderr, "%s: [b %lld, h %lld, %lld, %lld] = %.9g, reference %.9g\n", name, (long long)bi,
                                (long long)hi, (long long)i, (long long)c, got, ref);
                }
            }
    for (int64_t r = 0; r < t * b; r++)
        for (int64_t g = dm; g < orow; g++)
            if (o[r * orow + g] != POISON && bad++ < 5) fprintf(stderr, "%s: gap written\n", name);
    CHECKF(bad == 0, "%s: %ld elements wrong", name, bad);
    printf("%-28s max |d| %.2e\n", name, worst);

    /* an operand that does not fit its layout is refused, not read */
    in[0].sizes[2] = dm - 1;
    CHECKF(kern->run(&kc) != ST_OK, "%s: a mismatched layout was accepted", name);
    free(sc);
    free(qkv);
    free(mf);
    free(o);
}

int main(int argc, char **argv)
{
    /* the CPU's kernel, or a device backend's (argv[1]: opencl or cuda) */
    st_backend *dev = NULL;
    st_backend_kind kind = ST_BACKEND_CPU;
    if (argc > 1) {
        kind = !strcmp(argv[1], "opencl") ? ST_BACKEND_OPENCL : !strcmp(argv[1], "cuda") ? ST_BACKEND_CUDA : ST_BACKEND_CPU;
        g_f16 = argc > 2 && !strcmp(argv[2], "f16");
        bool cpu = !strcmp(argv[1], "cpu");
        if ((kind == ST_BACKEND_CPU && !cpu) || (argc > 2 && (!g_f16 || kind == ST_BACKEND_OPENCL)) || (cpu && !g_f16)) {
            fprintf(stderr, "usage: test_attention [opencl|cuda [f16]|cpu f16]\n");
            return 2;
        }
    }
    if (kind != ST_BACKEND_CPU) {
#ifndef ST_TEST_OPENCL
        if (kind == ST_BACKEND_OPENCL) {
            printf("SKIP: built without OpenCL\n");
            return 77;
        }
#endif
#ifndef ST_TEST_CUDA
        if (kind == ST_BACKEND_CUDA) {
            printf("SKIP: built without CUDA\n");
            return 77;
        }
#endif
        dev = st_backend_get(kind, 0);
        if (!dev) {
            printf("SKIP: %s\n", st_last_error());
            return 77;
        }
    }
    const st_kernel *kern = find_kernel(kind);
    CHECK(kern != NULL);
    if (!kern) return check_exit("attention");
    test_rng rng = {0x5eed0a77u};
    const acase cases[] = {
        /* nn.MultiheadAttention's shape: [B*H, T, T] scores, the padding
         * mask [B*H, 1, T] here as [2, 3, 1, 37] broadcast over queries */
        {"add_bcast_19x37", 2, {2, 3}, 19, 37, 24, 20, ST_ATT_SCALE_NONE, 1.0f, ST_ATT_MASK_ADD, 4, 1u << 2, 0, 0, false,
         false},
        /* per-row mask broadcast over the first dim, one row fully masked */
        {"add_rows_masked_row", 2, {2, 3}, 19, 37, 24, 20, ST_ATT_SCALE_DIV, 4.8989795f, ST_ATT_MASK_ADD, 3, 1u << 1, 0,
         0, true, true},
        /* GPT's causal mask: Where(C, -inf, S * 1/sqrt(dh)), 33 tokens */
        {"where_causal_33", 2, {2, 2}, 33, 33, 16, 16, ST_ATT_SCALE_MUL, 0.25f, ST_ATT_MASK_WHERE, 2, 0, -INFINITY, true,
         false, false},
        /* Where(C, S, f): f where C is false, a finite fill */
        {"where_keep_23", 1, {3, 1}, 23, 29, 8, 12, ST_ATT_SCALE_NONE, 1.0f, ST_ATT_MASK_WHERE, 2, 0, -1e4f, false, true,
         false},
        /* several row blocks (32768 / 300 rows each) */
        {"long_300x301", 1, {2, 1}, 300, 301, 64, 64, ST_ATT_SCALE_DIV, 8.0f, ST_ATT_MASK_NONE, 0, 0, 0, 0, false, false},
        /* a full-size mask, dh and dv past the GPU kernels' tiles (32 of
         * dh, 64 columns) and more queries than one GPU block of 64 */
        {"wide_70x40_dh72_dv80", 1, {2, 1}, 70, 40, 72, 80, ST_ATT_SCALE_MUL, 0.125f, ST_ATT_MASK_ADD, 3, 0, 0, 0, true,
         false},
        /* one query row (a decoder's next token) */
        {"one_row", 1, {4, 1}, 1, 45, 32, 32, ST_ATT_SCALE_MUL, 0.17677669f, ST_ATT_MASK_WHERE, 2, 0, -INFINITY, true,
         false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(dev, kern, &rng, &cases[i]);
    /* the tensor-core kernel's shapes: ViT-S/16 (6 heads, 197 tokens, K^T
     * made by the export's Mul, so packed), BERT's padding mask over 128
     * keys, dh 128 with a causal mask, and tiles cut by Tq and Tk */
    const acase flash[] = {
        {"vit_197_h6_dh64_kt_packed", 2, {2, 6}, 197, 197, 64, 64, ST_ATT_SCALE_MUL, 0.125f, ST_ATT_MASK_NONE, 0, 0, 0,
         0, false, false, true},
        {"bert_128_pad_mask", 2, {3, 4}, 128, 128, 64, 64, ST_ATT_SCALE_DIV, 8.0f, ST_ATT_MASK_ADD, 4, 1u << 1 | 1u << 2,
         0, 0, false, false, false},
        {"dh128_causal_65x130", 1, {3, 1}, 65, 130, 128, 128, ST_ATT_SCALE_MUL, 0.088388f, ST_ATT_MASK_WHERE, 2, 0,
         -INFINITY, true, true, false, false},
        {"dh32_kt_packed_masked_row", 1, {2, 1}, 77, 77, 32, 32, ST_ATT_SCALE_NONE, 1.0f, ST_ATT_MASK_ADD, 3, 0, 0, 0,
         false, true, true},
    };
    if (g_f16)
        for (size_t i = 0; i < sizeof flash / sizeof *flash; i++) run_case(dev, kern, &rng, &flash[i]);
    /* the layout form, which only the CPU's plans make: the encoder's
     * 2 x 77 (4 heads of 64); 300 tokens for several row blocks */
    if (kind == ST_BACKEND_CPU) {
        run_heads_case(kern, &rng, "heads_2x77_h4", 2, 4, 77, 64, true);
        run_heads_case(kern, &rng, "heads_1x300_h3_mask2", 1, 3, 300, 32, false);
        run_heads_case(kern, &rng, "heads_3x19_h2", 3, 2, 19, 24, true);
    }
    return check_exit("attention");
}
