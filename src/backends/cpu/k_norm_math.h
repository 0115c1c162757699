/*
 * k_norm_math.h — the row math of k_norm.c, written once for both compute
 * types.  k_norm.c includes it twice: with T = float (f32, f16 and bf16
 * compute in f32) and with T = double (f64), SFX(name) naming each copy
 * and EXP_NEG (exp of x <= 0), MAX_ROW, LOG, SQRT, POW, FABS, STORE the
 * matching functions, NORM_VEC the storage class of the loop functions
 * (cloned for AVX-512 in the f32 copy).  It is a
 * template, not a header: no include guard, on purpose.
 *
 * Sums run in NORM_LANES independent lanes (vectorisable, and closer to
 * a pairwise sum than one running total), folded in a fixed order.  Every
 * row function reads all of x before it writes y where that matters, but
 * the caller still never passes the same memory as x and y.
 */

NORM_VEC T SFX(sum)(const T *v, int64_t n)
{
    T l[NORM_LANES] = {0};
    int64_t i = 0, m = n - n % NORM_LANES;
    for (; i < m; i += NORM_LANES)
        for (int q = 0; q < NORM_LANES; q++) l[q] += v[i + q];
    T s = 0;
    for (; i < n; i++) s += v[i];
    for (int q = 0; q < NORM_LANES; q++) s += l[q];
    return s;
}

NORM_VEC T SFX(sum_abs)(const T *v, int64_t n)
{
    T l[NORM_LANES] = {0};
    int64_t i = 0, m = n - n % NORM_LANES;
    for (; i < m; i += NORM_LANES)
        for (int q = 0; q < NORM_LANES; q++) l[q] += FABS(v[i + q]);
    T s = 0;
    for (; i < n; i++) s += FABS(v[i]);
    for (int q = 0; q < NORM_LANES; q++) s += l[q];
    return s;
}

/* Sum of (v - c)^2: the second pass of a two-pass variance. */
NORM_VEC T SFX(sum_sq_dev)(const T *v, int64_t n, T c)
{
    T l[NORM_LANES] = {0};
    int64_t i = 0, m = n - n % NORM_LANES;
    for (; i < m; i += NORM_LANES)
        for (int q = 0; q < NORM_LANES; q++) l[q] += (v[i + q] - c) * (v[i + q] - c);
    T s = 0;
    for (; i < n; i++) s += (v[i] - c) * (v[i] - c);
    for (int q = 0; q < NORM_LANES; q++) s += l[q];
    return s;
}

/* Sum of exp(v - shift), shift the max of v. */
NORM_VEC T SFX(sum_exp)(const T *v, int64_t n, T shift)
{
    T l[NORM_LANES] = {0};
    int64_t i = 0, m = n - n % NORM_LANES;
    for (; i < m; i += NORM_LANES)
        for (int q = 0; q < NORM_LANES; q++) l[q] += EXP_NEG(v[i + q] - shift);
    T s = 0;
    for (; i < n; i++) s += EXP_NEG(v[i] - shift);
    for (int q = 0; q < NORM_LANES; q++) s += l[q];
    return s;
}

NORM_VEC void SFX(softmax)(const T *x, T *y, int64_t n, int kind)
{
    if (n == 0) return;
    if (kind == ST_N_HARDMAX) {
        /* the first max wins (a NaN beats everything), as numpy's argmax */
        int64_t best = 0;
        for (int64_t i = 1; i < n && x[best] == x[best]; i++)
            if (x[i] > x[best] || x[i] != x[i]) best = i;
        for (int64_t i = 0; i < n; i++) y[i] = 0;
        y[best] = 1;
        return;
    }
    T mx = MAX_ROW(x, n); /* NaN anywhere: NaN, so the row turns NaN as in numpy */
    if (kind == ST_N_LOG_SOFTMAX) {
        T lse = mx + LOG(SFX(sum_exp)(x, n, mx));
        for (int64_t i = 0; i < n; i++) y[i] = x[i] - lse;
        return;
    }
    for (int64_t i = 0; i < n; i++) y[i] = EXP_NEG(x[i] - mx);
    T inv = (T)1 / SFX(sum)(y, n);
    for (int64_t i = 0; i < n; i++) y[i] *= inv;
}

/* One row of any kind: x in, y out, both packed; o is the row's number and
 * offs its operands' offsets (for the per-row outputs of LayerNorm). */
static void SFX(row)(const norm_job *j, int64_t o, const int64_t *offs, const T *x, T *y)
{
    const st_norm_state *s = j->s;
    int64_t n = j->r.row_len, i;
    switch (s->kind) {
    case ST_N_SOFTMAX:
    case ST_N_LOG_SOFTMAX:
    case ST_N_HARDMAX: SFX(softmax)(x, y, n, s->kind); break;
    case ST_N_LAYER_NORM: {
        const T *sc = j->scale, *bi = j->bias;
        T mean = SFX(sum)(x, n) / (T)n;
        T inv = (T)1 / SQRT(SFX(sum_sq_dev)(x, n, mean) / (T)n + (T)s->epsilon);
        if (bi)
            for (i = 0; i < n; i++) y[i] = (x[i] - mean) * inv * sc[i] + bi[i];
        else
            for (i = 0; i < n; i++) y[i] = (x[i] - mean) * inv * sc[i];
        if (j->mean) STORE(j->mean->dtype, (char *)j->mean->data + offs[2] * (int64_t)st_dtype_size(j->mean->dtype), mean);
        if (j->inv) STORE(j->inv->dtype, (char *)j->inv->data + offs[3] * (int64_t)st_dtype_size(j->inv->dtype), inv);
        break;
    }
    case ST_N_BATCH_NORM: {
        /* scale and bias hold the folded affine map of each channel */
        int64_t g = o % j->groups;
        T a = ((const T *)j->scale)[g], b = ((const T *)j->bias)[g];
        for (i = 0; i < n; i++) y[i] = x[i] * a + b;
        break;
    }
    case ST_N_INSTANCE_NORM: {
        int64_t g = o % j->groups;
        T mean = SFX(sum)(x, n) / (T)n;
        T inv = (T)1 / SQRT(SFX(sum_sq_dev)(x, n, mean) / (T)n + (T)s->epsilon);
        T a = inv * ((const T *)j->scale)[g], b = ((const T *)j->bias)[g];
        for (i = 0; i < n; i++) y[i] = (x[i] - mean) * a + b;
        break;
    }
    case ST_N_GROUP_NORM: {
        /* the row is group g: its cg channels of n / cg elements each,
         * with scale and bias per channel (k_norm.c spreads per-group
         * ones) */
        int64_t g = o % j->groups, cg = j->cg, per = cg ? n / cg : 0;
        T mean = SFX(sum)(x, n) / (T)n;
        T inv = (T)1 / SQRT(SFX(sum_sq_dev)(x, n, mean) / (T)n + (T)s->epsilon);
        const T *sc = (const T *)j->scale + g * cg, *bi = (const T *)j->bias + g * cg;
        for (int64_t k = 0; k < cg; k++) {
            T a = inv * sc[k], b = bi[k];
            for (i = k * per; i < (k + 1) * per; i++) y[i] = (x[i] - mean) * a + b;
        }
        break;
    }
    case ST_N_LP_NORM: {
        T norm = s->p == 1 ? SFX(sum_abs)(x, n) : SQRT(SFX(sum_sq_dev)(x, n, 0));
        for (i = 0; i < n; i++) y[i] = x[i] / norm;
        break;
    }
    case ST_N_MVN: {
        T mean = SFX(sum)(x, n) / (T)n;
        T d = SQRT(SFX(sum_sq_dev)(x, n, mean) / (T)n) + (T)s->epsilon;
        for (i = 0; i < n; i++) y[i] = (x[i] - mean) / d;
        break;
    }
    case ST_N_LRN: {
        /* window [c - floor((size-1)/2), c + ceil((size-1)/2)], clipped */
        int64_t lo = (s->size - 1) / 2, hi = s->size - 1 - lo;
        T k = (T)s->alpha / (T)s->size;
        for (int64_t c = 0; c < n; c++) {
            int64_t a = c - lo > 0 ? c - lo : 0, b = c + hi < n - 1 ? c + hi : n - 1;
            T sq = 0;
            for (int64_t q = a; q <= b; q++) sq += x[q] * x[q];
            y[c] = x[c] / POW((T)s->bias + k * sq, (T)s->beta);
        }
        break;
    }
    }
}
