/*
 * sweep_cases.c — case generators for the kernel sweep, one per op kind,
 * each with a float64 reference written here from the ONNX operator
 * specs (libm in double; nothing shared with the kernels), so that the
 * CPU kernels are checked too and a device kernel that agrees with a
 * wrong CPU kernel still fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

uint64_t kc_next(kc_rng *r)
{
    /* splitmix64: a fixed seed gives the same cases on every machine */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int kc_int(kc_rng *r, int lo, int hi) { return lo + (int)(kc_next(r) % (uint64_t)(hi - lo + 1)); }

double kc_unif(kc_rng *r, double lo, double hi) { return lo + (hi - lo) * (double)(kc_next(r) >> 11) / 9007199254740992.0; }

int64_t kc_numel(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

static bool is_float(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16 || t == ST_F64; }
static bool is_unsigned(st_dtype t) { return t == ST_U8 || t == ST_U16 || t == ST_U32 || t == ST_U64; }

/* A shape of rank in [lo, hi]: small dims, and now and then a long last
 * dim so that vector paths and their tails run. */
static int rand_shape(kc_rng *r, int lo, int hi, int64_t *dims)
{
    int rank = kc_int(r, lo, hi);
    for (int i = 0; i < rank; i++) dims[i] = kc_int(r, 1, 6);
    if (rank && kc_int(r, 0, 3) == 0) dims[rank - 1] = kc_int(r, 9, 150);
    return rank;
}

/* An integer range that every dtype holds. */
static void int_range(st_dtype t, double *lo, double *hi)
{
    bool small = t == ST_I8 || t == ST_U8;   /* sums and products of a few stay in range */
    *lo = is_unsigned(t) ? 0 : small ? -10 : -60;
    *hi = small ? 10 : 60;
}

static void set_in(kc_case *c, int i, st_dtype dt, int rank, const int64_t *dims, double lo, double hi)
{
    kc_in *in = &c->in[i];
    memset(in, 0, sizeof *in);
    in->dt = dt;
    in->rank = rank;
    for (int d = 0; d < rank; d++) in->dims[d] = dims[d];
    in->lo = lo;
    in->hi = hi;
    in->integral = !is_float(dt);
    if (c->n_in < i + 1) c->n_in = i + 1;
}

static void set_out(kc_case *c, st_dtype dt, int rank, const int64_t *dims)
{
    c->out_dt = dt;
    c->out_rank = rank;
    for (int d = 0; d < rank; d++) c->out_dims[d] = dims[d];
    if (!c->n_out) c->n_out = 1;
}

/* Broadcasting: operand dims aligned from the right with out's. */
static int64_t bcast_index(int64_t flat, int out_rank, const int64_t *out, int rank, const int64_t *dims)
{
    int64_t idx = 0, stride = 1;
    for (int d = out_rank - 1; d >= 0; d--) {
        int64_t i = flat % out[d];
        flat /= out[d];
        int od = d - (out_rank - rank);
        if (od >= 0) {
            if (dims[od] != 1) idx += i * stride;
            stride *= dims[od];
        }
    }
    return idx;
}

/* A shape that broadcasts to out: some dims 1, maybe fewer dims. */
static int bcast_shape(kc_rng *r, int out_rank, const int64_t *out, int64_t *dims)
{
    int rank = out_rank;
    if (rank > 0 && kc_int(r, 0, 3) == 0) rank -= kc_int(r, 1, rank);
    for (int d = 0; d < rank; d++) {
        int64_t o = out[out_rank - rank + d];
        dims[d] = kc_int(r, 0, 3) == 0 ? 1 : o;
    }
    return rank;
}

/* ---- unary ---------------------------------------------------------- */

enum { U_BOOL_OUT = 1, U_SPECIALS = 2 };
typedef struct unary_def {
    const char *name;
    double lo, hi;          /* the domain drawn from */
    int flags;
} unary_def;

static const unary_def UNARY[] = {
    {"Relu", -3, 3, 0},        {"Sigmoid", -8, 8, 0},      {"Tanh", -4, 4, 0},        {"Exp", -5, 5, 0},
    {"Log", 0.01, 20, 0},      {"Sqrt", 0, 20, 0},         {"Neg", -3, 3, 0},         {"Abs", -3, 3, 0},
    {"Reciprocal", 0.2, 5, 0}, {"Floor", -5, 5, 0},        {"Ceil", -5, 5, 0},        {"Round", -5, 5, 0},
    {"Erf", -3, 3, 0},         {"Sin", -4, 4, 0},          {"Cos", -4, 4, 0},         {"Tan", -1.2, 1.2, 0},
    {"Asin", -0.99, 0.99, 0},  {"Acos", -0.99, 0.99, 0},   {"Atan", -4, 4, 0},        {"Sinh", -4, 4, 0},
    {"Cosh", -4, 4, 0},        {"Asinh", -4, 4, 0},        {"Acosh", 1.01, 8, 0},     {"Atanh", -0.95, 0.95, 0},
    {"Sign", -3, 3, 0},        {"LeakyRelu", -3, 3, 0},    {"HardSigmoid", -5, 5, 0}, {"HardSwish", -5, 5, 0},
    {"Elu", -3, 3, 0},         {"Selu", -3, 3, 0},         {"Celu", -3, 3, 0},        {"Softplus", -6, 6, 0},
    {"Softsign", -4, 4, 0},    {"ThresholdedRelu", -3, 3, 0}, {"Mish", -5, 5, 0},     {"Gelu", -4, 4, 0},
    {"Not", 0, 1, U_BOOL_OUT}, {"IsNaN", -3, 3, U_BOOL_OUT | U_SPECIALS},
    {"IsInf", -3, 3, U_BOOL_OUT | U_SPECIALS}, {"BitwiseNot", -60, 60, 0},
};

static double softplus(double x) { return x > 30 ? x : log1p(exp(x)); }

static double unary_ref(int which, double x, const double *p)
{
    const char *n = UNARY[which].name;
    double a = p[0], b = p[1], g = p[2];
    if (!strcmp(n, "Relu")) return x > 0 ? x : 0;
    if (!strcmp(n, "Sigmoid")) return 1 / (1 + exp(-x));
    if (!strcmp(n, "Tanh")) return tanh(x);
    if (!strcmp(n, "Exp")) return exp(x);
    if (!strcmp(n, "Log")) return log(x);
    if (!strcmp(n, "Sqrt")) return sqrt(x);
    if (!strcmp(n, "Neg")) return -x;
    if (!strcmp(n, "Abs")) return fabs(x);
    if (!strcmp(n, "Reciprocal")) return 1 / x;
    if (!strcmp(n, "Floor")) return floor(x);
    if (!strcmp(n, "Ceil")) return ceil(x);
    if (!strcmp(n, "Round")) return nearbyint(x);   /* halves to even, the default rounding mode */
    if (!strcmp(n, "Erf")) return erf(x);
    if (!strcmp(n, "Sin")) return sin(x);
    if (!strcmp(n, "Cos")) return cos(x);
    if (!strcmp(n, "Tan")) return tan(x);
    if (!strcmp(n, "Asin")) return asin(x);
    if (!strcmp(n, "Acos")) return acos(x);
    if (!strcmp(n, "Atan")) return atan(x);
    if (!strcmp(n, "Sinh")) return sinh(x);
    if (!strcmp(n, "Cosh")) return cosh(x);
    if (!strcmp(n, "Asinh")) return asinh(x);
    if (!strcmp(n, "Acosh")) return acosh(x);
    if (!strcmp(n, "Atanh")) return atanh(x);
    if (!strcmp(n, "Sign")) return (x > 0) - (x < 0);
    if (!strcmp(n, "LeakyRelu")) return x >= 0 ? x : a * x;
    if (!strcmp(n, "HardSigmoid")) return fmax(0, fmin(1, a * x + b));
    if (!strcmp(n, "HardSwish")) return x * fmax(0, fmin(1, x / 6 + 0.5));
    if (!strcmp(n, "Elu")) return x >= 0 ? x : a * (exp(x) - 1);
    if (!strcmp(n, "Selu")) return g * (x > 0 ? x : a * (exp(x) - 1));
    if (!strcmp(n, "Celu")) return fmax(0, x) + fmin(0, a * (exp(x / a) - 1));
    if (!strcmp(n, "Softplus")) return softplus(x);
    if (!strcmp(n, "Softsign")) return x / (1 + fabs(x));
    if (!strcmp(n, "ThresholdedRelu")) return x > a ? x : 0;
    if (!strcmp(n, "Mish")) return x * tanh(softplus(x));
    if (!strcmp(n, "Gelu")) return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    if (!strcmp(n, "Not")) return x == 0;
    if (!strcmp(n, "IsNaN")) return isnan(x) ? 1 : 0;
    if (!strcmp(n, "IsInf")) return isinf(x) ? 1 : 0;
    if (!strcmp(n, "BitwiseNot")) return -x - 1;     /* ~x in two's complement; unsigned wrap in the driver */
    return NAN;
}

static void ref_unary(const kc_case *c, const double *const *in, double *out)
{
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t i = 0; i < n; i++) out[i] = unary_ref(c->ip[0], in[0][i], c->dp);
}

static bool gen_unary(kc_rng *r, st_dtype dt, kc_case *c)
{
    int which = -1;
    for (int i = 0; i < (int)(sizeof UNARY / sizeof *UNARY); i++)
        if (!strcmp(UNARY[i].name, c->op)) which = i;
    if (which < 0) return false;
    const unary_def *u = &UNARY[which];
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 0, 4, dims);
    double lo = u->lo, hi = u->hi;
    if (!is_float(dt) && dt != ST_BOOL) int_range(dt, &lo, &hi);
    set_in(c, 0, dt, rank, dims, lo, hi);
    c->in[0].specials = (u->flags & U_SPECIALS) != 0;
    set_out(c, (u->flags & U_BOOL_OUT) ? ST_BOOL : dt, rank, dims);
    c->ip[0] = which;
    /* the attributes' defaults (ops/elementwise.h), or drawn ones */
    c->dp[0] = c->dp[1] = c->dp[2] = 0;
    const char *n = u->name;
    if (!strcmp(n, "LeakyRelu")) c->dp[0] = 0.01;
    if (!strcmp(n, "HardSigmoid")) c->dp[0] = 0.2, c->dp[1] = 0.5;
    if (!strcmp(n, "Elu") || !strcmp(n, "Celu") || !strcmp(n, "ThresholdedRelu")) c->dp[0] = 1;
    if (!strcmp(n, "Selu")) c->dp[0] = 1.67326319217681884765625, c->dp[2] = 1.05070102214813232421875;
    if (c->dp[0] != 0 && kc_int(r, 0, 1)) {
        float a = (float)kc_unif(r, 0.1, 1.5);
        pb_attr_float(&c->attrs, "alpha", a);
        c->dp[0] = a;
        snprintf(c->note, sizeof c->note, "alpha=%g", a);
    }
    if (!strcmp(n, "IsInf") && kc_int(r, 0, 2) == 0) {
        int neg = kc_int(r, 0, 1);
        pb_attr_int(&c->attrs, neg ? "detect_positive" : "detect_negative", 0);
        snprintf(c->note, sizeof c->note, "detect_%s=0", neg ? "positive" : "negative");
        c->ip[1] = neg ? 1 : 2;   /* which sign is no longer detected */
    }
    c->ref = ref_unary;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-5;
    return true;
}

static void ref_isinf_fix(const kc_case *c, const double *const *in, double *out)
{
    ref_unary(c, in, out);
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t i = 0; i < n; i++)
        if ((c->ip[1] == 1 && in[0][i] > 0) || (c->ip[1] == 2 && in[0][i] < 0)) out[i] = 0;
}

static bool gen_unary_any(kc_rng *r, st_dtype dt, kc_case *c)
{
    if (!gen_unary(r, dt, c)) return false;
    if (!strcmp(c->op, "IsInf") && c->ip[1]) c->ref = ref_isinf_fix;
    return true;
}

/* ---- binary and variadic -------------------------------------------- */

static double binary_ref(const char *n, double a, double b, const kc_case *c)
{
    bool fl = is_float(c->in[0].dt);
    if (!strcmp(n, "Add") || !strcmp(n, "Sum")) return a + b;
    if (!strcmp(n, "Sub")) return a - b;
    if (!strcmp(n, "Mul")) return a * b;
    if (!strcmp(n, "Div")) return fl ? a / b : trunc(a / b);
    if (!strcmp(n, "Pow")) return pow(a, b);
    if (!strcmp(n, "Mod")) {
        double m = fmod(a, b);
        if (!c->ip[1] && m != 0 && ((m < 0) != (b < 0))) m += b;   /* fmod=0: the divisor's sign */
        return m;
    }
    if (!strcmp(n, "Equal")) return a == b;
    if (!strcmp(n, "Less")) return a < b;
    if (!strcmp(n, "Greater")) return a > b;
    if (!strcmp(n, "LessOrEqual")) return a <= b;
    if (!strcmp(n, "GreaterOrEqual")) return a >= b;
    if (!strcmp(n, "And")) return (a != 0) && (b != 0);
    if (!strcmp(n, "Or")) return (a != 0) || (b != 0);
    if (!strcmp(n, "Xor")) return (a != 0) != (b != 0);
    if (!strcmp(n, "BitShift")) return c->ip[2] ? floor(a / ldexp(1, (int)b)) : a * ldexp(1, (int)b);
    if (!strcmp(n, "PRelu")) return a < 0 ? a * b : a;
    if (!strcmp(n, "Max")) return fmax(a, b);
    if (!strcmp(n, "Min")) return fmin(a, b);
    if (!strcmp(n, "Mean")) return a + b;
    int64_t x = (int64_t)a, y = (int64_t)b;
    if (!strcmp(n, "BitwiseAnd")) return (double)(x & y);
    if (!strcmp(n, "BitwiseOr")) return (double)(x | y);
    if (!strcmp(n, "BitwiseXor")) return (double)(x ^ y);
    return NAN;
}

static void ref_nary(const kc_case *c, const double *const *in, double *out)
{
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t i = 0; i < n; i++) {
        double acc = in[0][bcast_index(i, c->out_rank, c->out_dims, c->in[0].rank, c->in[0].dims)];
        for (int k = 1; k < c->n_in; k++) {
            double b = in[k][bcast_index(i, c->out_rank, c->out_dims, c->in[k].rank, c->in[k].dims)];
            acc = binary_ref(c->op, acc, b, c);
        }
        if (!strcmp(c->op, "Mean")) acc /= c->n_in;
        out[i] = acc;
    }
}

static bool gen_binary(kc_rng *r, st_dtype dt, kc_case *c)
{
    const char *n = c->op;
    bool variadic = !strcmp(n, "Sum") || !strcmp(n, "Max") || !strcmp(n, "Min") || !strcmp(n, "Mean");
    bool to_bool = !strcmp(n, "Equal") || !strcmp(n, "Less") || !strcmp(n, "Greater") || !strcmp(n, "LessOrEqual") ||
                   !strcmp(n, "GreaterOrEqual") || !strcmp(n, "And") || !strcmp(n, "Or") || !strcmp(n, "Xor");
    if (!strcmp(n, "BitShift") && !is_unsigned(dt)) return false;   /* ONNX: unsigned ints only */
    int64_t out[KC_MAX_RANK], dims[KC_MAX_RANK];
    int orank = rand_shape(r, 0, 4, out);
    int n_in = variadic ? kc_int(r, 1, 3) : 2;
    double lo = -4, hi = 4;
    if (!is_float(dt)) int_range(dt, &lo, &hi);
    /* the two sides of a comparison meet often when both are small whole numbers */
    bool few = to_bool || !strcmp(n, "Max") || !strcmp(n, "Min");
    for (int k = 0; k < n_in; k++) {
        int rank = (!strcmp(n, "PRelu") && k == 0) ? orank : bcast_shape(r, orank, out, dims);
        if (!strcmp(n, "PRelu") && k == 0) memcpy(dims, out, sizeof out);
        set_in(c, k, dt, rank, dims, lo, hi);
        if (few && dt != ST_BOOL) c->in[k].integral = true, c->in[k].lo = is_unsigned(dt) ? 0 : -3, c->in[k].hi = 3;
    }
    /* a broadcast that does not cover out would shrink it: make input 0 full-size
     * when none of the inputs has out's full shape in some dim */
    for (int d = 0; d < orank; d++) {
        bool ok = false;
        for (int k = 0; k < n_in; k++) {
            int od = d - (orank - c->in[k].rank);
            if (od >= 0 && c->in[k].dims[od] == out[d]) ok = true;
        }
        if (!ok) {
            c->in[0].rank = orank;
            memcpy(c->in[0].dims, out, sizeof out);
        }
    }
    if (!strcmp(n, "Div") || !strcmp(n, "Mod")) {
        c->in[1].nonzero = true;
        if (!is_float(dt)) c->in[1].lo = is_unsigned(dt) ? 1 : -9, c->in[1].hi = 9;
    }
    if (!strcmp(n, "Mod")) {
        c->ip[1] = is_float(dt) ? 1 : kc_int(r, 0, 1);   /* floats need fmod=1 */
        if (c->ip[1]) pb_attr_int(&c->attrs, "fmod", 1);
        snprintf(c->note, sizeof c->note, "fmod=%d", c->ip[1]);
        if (is_float(dt)) c->in[0].integral = c->in[1].integral = true;   /* fmod of float quotients is ill-conditioned */
    }
    if (!strcmp(n, "Pow")) {
        if (is_float(dt)) {
            c->in[0].lo = 0.1, c->in[0].hi = 3;
            c->in[1].lo = -2, c->in[1].hi = 2;
        } else {
            c->in[0].lo = is_unsigned(dt) ? 0 : -4, c->in[0].hi = 4;
            c->in[1].lo = 0, c->in[1].hi = 3;
        }
    }
    if (!strcmp(n, "BitShift")) {
        c->ip[2] = kc_int(r, 0, 1);
        pb_attr_string(&c->attrs, "direction", c->ip[2] ? "RIGHT" : "LEFT");
        snprintf(c->note, sizeof c->note, "direction=%s", c->ip[2] ? "RIGHT" : "LEFT");
        c->in[0].lo = 0, c->in[0].hi = 15;
        c->in[1].lo = 0, c->in[1].hi = 3;
    }
    if (!strncmp(n, "Bitwise", 7) && is_unsigned(dt)) c->in[0].lo = c->in[1].lo = 0;
    c->n_in = n_in;
    set_out(c, to_bool ? ST_BOOL : dt, orank, out);
    c->ref = ref_nary;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-5;
    return true;
}

/* ---- Where, Clip, Cast ---------------------------------------------- */

static void ref_where(const kc_case *c, const double *const *in, double *out)
{
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t i = 0; i < n; i++) {
        double s = in[0][bcast_index(i, c->out_rank, c->out_dims, c->in[0].rank, c->in[0].dims)];
        int k = s != 0 ? 1 : 2;
        out[i] = in[k][bcast_index(i, c->out_rank, c->out_dims, c->in[k].rank, c->in[k].dims)];
    }
}

static bool gen_where(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t out[KC_MAX_RANK], dims[KC_MAX_RANK];
    int orank = rand_shape(r, 1, 4, out);
    set_in(c, 0, ST_BOOL, orank, out, 0, 1);
    for (int k = 1; k < 3; k++) {
        int rank = bcast_shape(r, orank, out, dims);
        set_in(c, k, dt, rank, dims, -4, 4);
        if (!is_float(dt)) int_range(dt, &c->in[k].lo, &c->in[k].hi), c->in[k].integral = true;
    }
    set_out(c, dt, orank, out);
    c->ref = ref_where;
    c->ref_atol = c->ref_rtol = 0;
    return true;
}

static void ref_clip(const kc_case *c, const double *const *in, double *out)
{
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t i = 0; i < n; i++) {
        double v = in[0][i];
        if (c->in[1].rank >= 0) v = fmax(v, in[1][0]);
        if (c->in[2].rank >= 0) v = fmin(v, in[2][0]);
        out[i] = v;
    }
}

static bool gen_clip(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 0, 4, dims);
    set_in(c, 0, dt, rank, dims, -4, 4);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    int which = kc_int(r, 0, 3);   /* bit 0: min given, bit 1: max given */
    static double bounds[2];
    bounds[0] = is_float(dt) ? -1.5 : (is_unsigned(dt) ? 10 : -20);
    bounds[1] = is_float(dt) ? 2.25 : 30;
    for (int k = 0; k < 2; k++) {
        set_in(c, 1 + k, dt, 0, dims, 0, 0);
        if (which & (1 << k)) {
            c->in[1 + k].constant = kc_int(r, 0, 1);
            c->in[1 + k].lo = c->in[1 + k].hi = bounds[k];
            c->in[1 + k].values = &bounds[k];
        } else {
            c->in[1 + k].rank = -1;
        }
    }
    if (!(which & 2)) c->n_in = (which & 1) ? 2 : 1;
    set_out(c, dt, rank, dims);
    c->ref = ref_clip;
    c->ref_atol = c->ref_rtol = 0;
    snprintf(c->note, sizeof c->note, "min %s, max %s", (which & 1) ? "given" : "absent", (which & 2) ? "given" : "absent");
    return true;
}

static void ref_cast(const kc_case *c, const double *const *in, double *out)
{
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t i = 0; i < n; i++) {
        double v = in[0][i];
        if (c->out_dt == ST_BOOL) v = v != 0;
        else if (!is_float(c->out_dt)) v = trunc(v);
        out[i] = v;
    }
}

static bool gen_cast(kc_rng *r, st_dtype dt, kc_case *c)
{
    static const st_dtype TO[] = {ST_F32, ST_F16, ST_BF16, ST_F64, ST_I8, ST_U8, ST_I16, ST_I32, ST_I64, ST_BOOL, ST_U16, ST_U32};
    st_dtype to = TO[kc_int(r, 0, (int)(sizeof TO / sizeof *TO) - 1)];
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 0, 4, dims);
    /* values every target holds: out-of-range conversions are undefined in C */
    double lo = (is_unsigned(to) || is_unsigned(dt)) ? 0 : -100, hi = 100;
    if (dt == ST_BOOL) lo = 0, hi = 1;
    set_in(c, 0, dt, rank, dims, lo, hi);
    if (!strcmp(c->op, "CastLike")) {
        int64_t one = 1;
        set_in(c, 1, to, 1, &one, 0, 1);
        c->in[1].integral = true;
    } else {
        pb_attr_int(&c->attrs, "to", to);
    }
    set_out(c, to, rank, dims);
    snprintf(c->note, sizeof c->note, "to %s", st_dtype_name(to));
    c->ref = ref_cast;
    c->ref_atol = 0;
    c->ref_rtol = to == ST_F16 ? 1e-3 : to == ST_BF16 ? 8e-3 : 1e-7;
    return true;
}

/* ---- reductions, Softmax ------------------------------------------ */

static void ref_reduce(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int64_t on = kc_numel(c->out_rank, c->out_dims), n = kc_numel(x->rank, x->dims);
    const char *op = c->op;
    double init = !strcmp(op, "ReduceMax") ? -INFINITY : !strcmp(op, "ReduceMin") ? INFINITY : !strcmp(op, "ReduceProd") ? 1 : 0;
    for (int64_t i = 0; i < on; i++) out[i] = init;
    int64_t cnt = n / (on ? on : 1);
    double *mx = NULL;
    if (!strcmp(op, "ReduceLogSumExp")) {
        mx = malloc(sizeof *mx * (size_t)on);
        for (int64_t i = 0; i < on; i++) mx[i] = -INFINITY;
    }
    for (int pass = mx ? 0 : 1; pass < 2; pass++)
        for (int64_t f = 0; f < n; f++) {
            /* the output index: reduced dims dropped (ip[d] = 1 marks them) */
            int64_t rem = f, o = 0, stride = 1;
            for (int d = x->rank - 1; d >= 0; d--) {
                int64_t i = rem % x->dims[d];
                rem /= x->dims[d];
                if (!c->ip[d]) {
                    o += i * stride;
                    stride *= x->dims[d];
                }
            }
            double v = in[0][f];
            if (pass == 0) {
                mx[o] = fmax(mx[o], v);
                continue;
            }
            if (!strcmp(op, "ReduceSum") || !strcmp(op, "ReduceMean") || !strcmp(op, "ReduceLogSum")) out[o] += v;
            else if (!strcmp(op, "ReduceMax")) out[o] = fmax(out[o], v);
            else if (!strcmp(op, "ReduceMin")) out[o] = fmin(out[o], v);
            else if (!strcmp(op, "ReduceProd")) out[o] *= v;
            else if (!strcmp(op, "ReduceL1")) out[o] += fabs(v);
            else if (!strcmp(op, "ReduceL2") || !strcmp(op, "ReduceSumSquare")) out[o] += v * v;
            else if (mx) out[o] += exp(v - mx[o]);
        }
    for (int64_t i = 0; i < on; i++) {
        if (!strcmp(op, "ReduceMean")) out[i] /= (double)cnt;
        if (!strcmp(op, "ReduceL2")) out[i] = sqrt(out[i]);
        if (!strcmp(op, "ReduceLogSum")) out[i] = log(out[i]);
        if (mx) out[i] = log(out[i]) + mx[i];
    }
    free(mx);
}

static bool gen_reduce(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    const char *op = c->op;
    bool positive = !strcmp(op, "ReduceLogSum") || !strcmp(op, "ReduceProd");
    set_in(c, 0, dt, rank, dims, positive ? 0.5 : -3, positive ? 1.8 : 3);
    if (!is_float(dt)) {
        int_range(dt, &c->in[0].lo, &c->in[0].hi);
        if (!strcmp(op, "ReduceProd")) c->in[0].lo = is_unsigned(dt) ? 1 : -2, c->in[0].hi = 2;
        if (!strcmp(op, "ReduceLogSum")) c->in[0].lo = 1, c->in[0].hi = 5;
    }
    int64_t axes[KC_MAX_RANK];
    int n_axes = 0;
    for (int d = 0; d < rank; d++) {
        c->ip[d] = kc_int(r, 0, 1);
        if (c->ip[d]) axes[n_axes++] = kc_int(r, 0, 1) ? d : d - rank;
    }
    if (!n_axes) {   /* no axes: every dim */
        for (int d = 0; d < rank; d++) c->ip[d] = 1;
    }
    int keep = kc_int(r, 0, 1);
    pb_attr_int(&c->attrs, "keepdims", keep);
    if (n_axes) {
        {   /* opset 18 on: an input */
            static double av[KC_MAX_RANK];
            for (int i = 0; i < n_axes; i++) av[i] = (double)axes[i];
            int64_t na = n_axes;
            set_in(c, 1, ST_I64, 1, &na, 0, 0);
            c->in[1].constant = true;
            c->in[1].values = av;
        }
    }
    c->opset = 20;   /* ReduceMax and ReduceMin take bool from 20 */
    int64_t out[KC_MAX_RANK];
    int orank = 0, kept = 0;
    for (int d = 0; d < rank; d++) {
        if (!c->ip[d]) out[orank++] = dims[d];
        else if (keep) out[orank++] = 1, kept++;
    }
    (void)kept;
    set_out(c, dt, orank, out);
    /* the reference is computed on an output packed without kept dims,
     * which has the same element order */
    snprintf(c->note, sizeof c->note, "keepdims=%d, %d axes", keep, n_axes);
    c->ref = ref_reduce;
    c->ref_atol = 1e-4;
    c->ref_rtol = 1e-4;
    c->cpu_scale = 10;
    return true;
}

static void ref_softmax(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int axis = c->ip[0];
    int64_t inner = 1, outer = 1, n = x->dims[axis];
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const double *p = in[0] + o * n * inner + i;
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < n; k++) m = fmax(m, p[k * inner]);
            for (int64_t k = 0; k < n; k++) s += exp(p[k * inner] - m);
            for (int64_t k = 0; k < n; k++) {
                double v = p[k * inner] - m;
                out[o * n * inner + i + k * inner] = c->ip[1] ? v - log(s) : exp(v) / s;
            }
        }
}

static bool gen_softmax(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    set_in(c, 0, dt, rank, dims, -5, 5);
    int axis = kc_int(r, 0, rank - 1);
    if (kc_int(r, 0, 1)) axis = rank - 1;
    c->ip[0] = axis;
    c->ip[1] = !strcmp(c->op, "LogSoftmax");
    pb_attr_int(&c->attrs, "axis", kc_int(r, 0, 1) ? axis : axis - rank);
    set_out(c, dt, rank, dims);
    snprintf(c->note, sizeof c->note, "axis=%d", axis);
    c->ref = ref_softmax;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-4;
    return true;
}

/* ---- MatMul, Gemm --------------------------------------------------- */

static void ref_matmul(const kc_case *c, const double *const *in, double *out)
{
    /* ip: M, K, N; batch broadcast over out_dims[0 .. out_rank - 2) */
    int64_t M = c->ip[0], K = c->ip[1], N = c->ip[2];
    int br = c->out_rank - 2;
    int64_t batch = kc_numel(br, c->out_dims);
    for (int64_t b = 0; b < batch; b++) {
        int64_t ia = bcast_index(b, br, c->out_dims, c->in[0].rank - 2, c->in[0].dims);
        int64_t ib = bcast_index(b, br, c->out_dims, c->in[1].rank - 2, c->in[1].dims);
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) s += in[0][ia * M * K + m * K + k] * in[1][ib * K * N + k * N + n];
                out[b * M * N + m * N + n] = s;
            }
    }
}

static bool gen_matmul(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t M = kc_int(r, 1, 20), K = kc_int(r, 1, 40), N = kc_int(r, 1, 20);
    if (kc_int(r, 0, 3) == 0) K = kc_int(r, 64, 200);
    int64_t batch[KC_MAX_RANK] = {0}, a[KC_MAX_RANK] = {0}, b[KC_MAX_RANK] = {0};
    int br = kc_int(r, 0, 2);
    for (int d = 0; d < br; d++) batch[d] = kc_int(r, 1, 3);
    int ar = bcast_shape(r, br, batch, a), bra = bcast_shape(r, br, batch, b);
    /* out's batch dims must be reached by one of them */
    for (int d = 0; d < br; d++) {
        int da = d - (br - ar), db = d - (br - bra);
        if (!((da >= 0 && a[da] == batch[d]) || (db >= 0 && b[db] == batch[d]))) {
            ar = br;
            memcpy(a, batch, sizeof batch);
        }
    }
    a[ar] = M, a[ar + 1] = K;
    b[bra] = K, b[bra + 1] = N;
    set_in(c, 0, dt, ar + 2, a, -1, 1);
    set_in(c, 1, dt, bra + 2, b, -1, 1);
    if (!is_float(dt)) return false;
    int64_t out[KC_MAX_RANK];
    memcpy(out, batch, sizeof batch);
    out[br] = M, out[br + 1] = N;
    set_out(c, dt, br + 2, out);
    c->ip[0] = (int)M, c->ip[1] = (int)K, c->ip[2] = (int)N;
    snprintf(c->note, sizeof c->note, "M=%d K=%d N=%d", (int)M, (int)K, (int)N);
    c->ref = ref_matmul;
    c->ref_atol = 1e-5 * sqrt((double)K) * 4;
    c->ref_rtol = 1e-4;
    c->cpu_scale = sqrt((double)K);
    return true;
}

static void ref_gemm(const kc_case *c, const double *const *in, double *out)
{
    int64_t M = c->ip[0], K = c->ip[1], N = c->ip[2];
    int ta = c->ip[3], tb = c->ip[4];
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += in[0][ta ? k * M + m : m * K + k] * in[1][tb ? n * K + k : k * N + n];
            s *= c->dp[0];
            if (c->n_in > 2) {
                int64_t o = m * N + n;
                s += c->dp[1] * in[2][bcast_index(o, 2, c->out_dims, c->in[2].rank, c->in[2].dims)];
            }
            out[m * N + n] = s;
        }
}

static bool gen_gemm(kc_rng *r, st_dtype dt, kc_case *c)
{
    if (!is_float(dt)) return false;
    int64_t M = kc_int(r, 1, 20), K = kc_int(r, 1, 40), N = kc_int(r, 1, 20);
    int ta = kc_int(r, 0, 1), tb = kc_int(r, 0, 1);
    int64_t a[2] = {ta ? K : M, ta ? M : K}, b[2] = {tb ? N : K, tb ? K : N}, out[2] = {M, N}, cd[2];
    set_in(c, 0, dt, 2, a, -1, 1);
    set_in(c, 1, dt, 2, b, -1, 1);
    if (kc_int(r, 0, 2)) {
        int cr = bcast_shape(r, 2, out, cd);
        set_in(c, 2, dt, cr, cd, -1, 1);
    }
    c->dp[0] = kc_int(r, 0, 1) ? 1.0 : 0.75;
    c->dp[1] = kc_int(r, 0, 1) ? 1.0 : -0.5;
    if (ta) pb_attr_int(&c->attrs, "transA", 1);
    if (tb) pb_attr_int(&c->attrs, "transB", 1);
    if (c->dp[0] != 1) pb_attr_float(&c->attrs, "alpha", (float)c->dp[0]);
    if (c->dp[1] != 1) pb_attr_float(&c->attrs, "beta", (float)c->dp[1]);
    set_out(c, dt, 2, out);
    c->ip[0] = (int)M, c->ip[1] = (int)K, c->ip[2] = (int)N, c->ip[3] = ta, c->ip[4] = tb;
    snprintf(c->note, sizeof c->note, "M=%d K=%d N=%d transA=%d transB=%d C=%s", (int)M, (int)K, (int)N, ta, tb,
             c->n_in > 2 ? "yes" : "no");
    c->ref = ref_gemm;
    c->ref_atol = 1e-4;
    c->ref_rtol = 1e-4;
    c->cpu_scale = sqrt((double)K);
    return true;
}

/* ---- layout ops: Concat, Transpose, Identity ------------------------ */

static void ref_concat(const kc_case *c, const double *const *in, double *out)
{
    int axis = c->ip[0];
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= c->out_dims[d];
    for (int d = axis + 1; d < c->out_rank; d++) inner *= c->out_dims[d];
    int64_t at = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < c->n_in; k++) {
            int64_t n = c->in[k].dims[axis] * inner;
            for (int64_t i = 0; i < n; i++) out[at++] = in[k][o * n + i];
        }
}

static bool gen_concat(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    int axis = kc_int(r, 0, rank - 1), n = kc_int(r, 1, 3);
    int64_t total = 0;
    for (int k = 0; k < n; k++) {
        dims[axis] = kc_int(r, 1, 5);
        total += dims[axis];
        set_in(c, k, dt, rank, dims, -5, 5);
        if (!is_float(dt)) int_range(dt, &c->in[k].lo, &c->in[k].hi);
    }
    pb_attr_int(&c->attrs, "axis", kc_int(r, 0, 1) ? axis : axis - rank);
    dims[axis] = total;
    set_out(c, dt, rank, dims);
    c->ip[0] = axis;
    snprintf(c->note, sizeof c->note, "axis=%d, %d inputs", axis, n);
    c->ref = ref_concat;
    return true;
}

static void ref_transpose(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t f = 0; f < n; f++) {
        int64_t rem = f, src = 0;
        int64_t xs[KC_MAX_RANK];
        int64_t s = 1;
        for (int d = x->rank - 1; d >= 0; d--) xs[d] = s, s *= x->dims[d];
        for (int d = c->out_rank - 1; d >= 0; d--) {
            src += (rem % c->out_dims[d]) * xs[c->ip[d]];
            rem /= c->out_dims[d];
        }
        out[f] = in[0][src];
    }
}

static bool gen_transpose(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK], out[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    set_in(c, 0, dt, rank, dims, -5, 5);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    int64_t perm[KC_MAX_RANK] = {0};
    for (int d = 0; d < rank; d++) perm[d] = d;
    for (int d = rank - 1; d > 0; d--) {
        int j = kc_int(r, 0, d);
        int64_t t = perm[d];
        perm[d] = perm[j];
        perm[j] = t;
    }
    for (int d = 0; d < rank; d++) out[d] = dims[perm[d]], c->ip[d] = (int)perm[d];
    pb_attr_ints(&c->attrs, "perm", perm, rank);
    set_out(c, dt, rank, out);
    c->ref = ref_transpose;
    return true;
}

static void ref_identity(const kc_case *c, const double *const *in, double *out)
{
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t i = 0; i < n; i++) out[i] = in[0][i];
}

static bool gen_identity(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    set_in(c, 0, dt, rank, dims, -5, 5);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    set_out(c, dt, rank, dims);
    c->ref = ref_identity;
    return true;
}

/* ---- the generator table -------------------------------------------- */

typedef struct kc_gen_row {
    const char *domain, *op;
    kc_gen_fn gen;
} kc_gen_row;

static const kc_gen_row GENS[] = {
    {"", "Where", gen_where},
    {"", "Clip", gen_clip},
    {"", "Cast", gen_cast},
    {"", "CastLike", gen_cast},
    {"", "Softmax", gen_softmax},
    {"", "LogSoftmax", gen_softmax},
    {"", "MatMul", gen_matmul},
    {"", "Gemm", gen_gemm},
    {"", "Concat", gen_concat},
    {"", "Transpose", gen_transpose},
    {"", "Identity", gen_identity},
};

static const char *const BINARY[] = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less", "Greater",
                                     "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "BitShift", "PRelu",
                                     "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Sum", "Max", "Min", "Mean"};

kc_gen_fn kc_generator(const char *domain, const char *op)
{
    if (domain && *domain) return NULL;
    for (size_t i = 0; i < sizeof GENS / sizeof *GENS; i++)
        if (!strcmp(GENS[i].op, op)) return GENS[i].gen;
    for (size_t i = 0; i < sizeof UNARY / sizeof *UNARY; i++)
        if (!strcmp(UNARY[i].name, op)) return gen_unary_any;
    for (size_t i = 0; i < sizeof BINARY / sizeof *BINARY; i++)
        if (!strcmp(BINARY[i], op)) return gen_binary;
    if (!strncmp(op, "Reduce", 6)) return gen_reduce;
    return NULL;
}
