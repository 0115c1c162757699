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
    /* the kernels get them as floats (an ONNX float attribute) */
    if (!strcmp(n, "LeakyRelu")) c->dp[0] = (float)0.01;
    if (!strcmp(n, "HardSigmoid")) c->dp[0] = (float)0.2, c->dp[1] = 0.5;
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
        c->in[k].wide = few;   /* uint64 across 2^63: the order must be unsigned */
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
    /* bounds drawn per case (quarter steps, exact in every float type),
     * so a kernel that reads a bound from the wrong place, or keeps one
     * from another case, fails.  One case in four has min > max, where
     * newer ONNX says max wins (ONNX 1.12 leaves it open): every backend
     * clamps to min first, then to max, as the reference does */
    static double bounds[2];
    if (is_float(dt)) {
        bounds[0] = -0.25 * kc_int(r, 1, 12);
        bounds[1] = 0.25 * kc_int(r, 1, 12);
    } else {
        bounds[0] = is_unsigned(dt) ? kc_int(r, 0, 5) : kc_int(r, -20, 0);
        bounds[1] = kc_int(r, 6, 30);
    }
    if (kc_int(r, 0, 3) == 0) {
        double t = bounds[0];
        bounds[0] = bounds[1];
        bounds[1] = t;
    }
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
    char lo[32] = "absent", hi[32] = "absent";
    if (which & 1) snprintf(lo, sizeof lo, "%g%s", bounds[0], c->in[1].constant ? " const" : "");
    if (which & 2) snprintf(hi, sizeof hi, "%g%s", bounds[1], c->in[2].constant ? " const" : "");
    snprintf(c->note, sizeof c->note, "min %s, max %s", lo, hi);
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
            else if (!strcmp(op, "ReduceProd") && !is_float(x->dt))
                /* integers wrap: multiply modulo 2^64 (the driver wraps to the dtype) */
                out[o] = (double)(int64_t)((uint64_t)(int64_t)out[o] * (uint64_t)(int64_t)v);
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
    set_in(c, 0, dt, rank, dims, positive ? 0.7 : -3, positive ? 1.4 : 3);
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


/* ---- more layout ops: Slice, Reshape and friends, Split, Gather ----- */

static void ref_slice(const kc_case *c, const double *const *in, double *out)
{
    /* ip[0..r): start per dim, ip[r..2r): step per dim */
    const kc_in *x = &c->in[0];
    int r = x->rank;
    int64_t xs[KC_MAX_RANK], s = 1;
    for (int d = r - 1; d >= 0; d--) xs[d] = s, s *= x->dims[d];
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t f = 0; f < n; f++) {
        int64_t rem = f, src = 0;
        for (int d = r - 1; d >= 0; d--) {
            src += (c->ip[d] + (rem % c->out_dims[d]) * c->ip[r + d]) * xs[d];
            rem /= c->out_dims[d];
        }
        out[f] = in[0][src];
    }
}

static bool gen_slice(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK], out[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    if (rank > 3) return false;   /* ip holds 2 * rank */
    set_in(c, 0, dt, rank, dims, -5, 5);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    static double v[4][KC_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        int step = kc_int(r, 0, 2) ? 1 : (kc_int(r, 0, 1) ? 2 : -1);
        int64_t start = kc_int(r, 0, (int)dims[d] - 1), len;
        if (step > 0) len = 1 + kc_int(r, 0, (int)((dims[d] - 1 - start) / step));
        else len = 1 + kc_int(r, 0, (int)start);
        v[0][d] = (double)start;
        v[1][d] = step > 0 ? (double)(start + (len - 1) * step + 1) : (double)(start + (len - 1) * step - 1);
        if (step < 0 && start + (len - 1) * step - 1 < 0) v[1][d] = -(double)dims[d] - 1;   /* past the front */
        v[2][d] = d;
        v[3][d] = step;
        out[d] = len;
        c->ip[d] = (int)start;
        c->ip[rank + d] = step;
    }
    int64_t rk = rank;
    for (int k = 0; k < 4; k++) {
        set_in(c, 1 + k, ST_I64, 1, &rk, 0, 0);
        c->in[1 + k].constant = true;
        c->in[1 + k].values = v[k];
    }
    set_out(c, dt, rank, out);
    c->ref = ref_slice;
    return true;
}

static bool gen_reshape(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK], out[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims), orank = 0;
    set_in(c, 0, dt, rank, dims, -5, 5);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    const char *op = c->op;
    static double v[KC_MAX_RANK];
    int64_t n = kc_numel(rank, dims);
    if (!strcmp(op, "Reshape")) {
        /* split n into a random factorization */
        int64_t rest = n;
        while (rest > 1 && orank < 3) {
            int64_t f = 1;
            for (int64_t k = 2; k <= rest; k++)
                if (rest % k == 0 && kc_int(r, 0, 1)) { f = k; break; }
            if (f == 1) break;
            out[orank++] = f;
            rest /= f;
        }
        out[orank++] = rest;
        for (int d = 0; d < orank; d++) v[d] = (double)out[d];
        if (kc_int(r, 0, 1)) v[kc_int(r, 0, orank - 1)] = -1;
        int64_t ro = orank;
        set_in(c, 1, ST_I64, 1, &ro, 0, 0);
        c->in[1].constant = true;
        c->in[1].values = v;
    } else if (!strcmp(op, "Flatten")) {
        int axis = kc_int(r, 0, rank);
        pb_attr_int(&c->attrs, "axis", axis);
        out[0] = kc_numel(axis, dims);
        out[1] = n / out[0];
        orank = 2;
    } else if (!strcmp(op, "Unsqueeze")) {
        int at = kc_int(r, 0, rank);
        for (int d = 0, k = 0; d <= rank; d++) out[orank++] = d == at ? 1 : dims[k++];
        v[0] = at;
        int64_t one = 1;
        set_in(c, 1, ST_I64, 1, &one, 0, 0);
        c->in[1].constant = true;
        c->in[1].values = v;
    } else {   /* Squeeze: the size-1 dims, given or all */
        int n_ax = 0;
        for (int d = 0; d < rank; d++)
            if (dims[d] == 1) v[n_ax++] = d;
            else out[orank++] = dims[d];
        if (n_ax && kc_int(r, 0, 1)) {
            int64_t na = n_ax;
            set_in(c, 1, ST_I64, 1, &na, 0, 0);
            c->in[1].constant = true;
            c->in[1].values = v;
        }
    }
    set_out(c, dt, orank, out);
    c->ref = ref_identity;
    return true;
}

static bool gen_split(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    int axis = kc_int(r, 0, rank - 1);
    if (dims[axis] < 2) dims[axis] = kc_int(r, 2, 6);
    set_in(c, 0, dt, rank, dims, -5, 5);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    static double v[2];
    v[0] = (double)kc_int(r, 1, (int)dims[axis] - 1);
    v[1] = (double)dims[axis] - v[0];
    int64_t two = 2;
    set_in(c, 1, ST_I64, 1, &two, 0, 0);
    c->in[1].constant = true;
    c->in[1].values = v;
    pb_attr_int(&c->attrs, "axis", axis);
    c->n_out = 2;   /* output 0 is compared */
    int64_t out[KC_MAX_RANK];
    memcpy(out, dims, sizeof out);
    out[axis] = (int64_t)v[0];
    set_out(c, dt, rank, out);
    /* output 0 is the Slice [0, v0) on axis */
    for (int d = 0; d < rank; d++) c->ip[d] = 0, c->ip[rank + d] = 1;
    c->ref = rank <= 3 ? ref_slice : NULL;
    return true;
}

static void ref_gather(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0], *ix = &c->in[1];
    int axis = c->ip[0];
    int64_t outer = kc_numel(axis, x->dims), inner = kc_numel(x->rank - axis - 1, x->dims + axis + 1);
    int64_t ni = kc_numel(ix->rank, ix->dims), n = x->dims[axis];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t k = (int64_t)in[1][j];
            if (k < 0) k += n;
            for (int64_t i = 0; i < inner; i++) out[(o * ni + j) * inner + i] = in[0][(o * n + k) * inner + i];
        }
}

static bool gen_gather(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK], idims[KC_MAX_RANK], out[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 3, dims);
    int axis = kc_int(r, 0, rank - 1);
    set_in(c, 0, dt, rank, dims, -5, 5);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    int irank = kc_int(r, 0, 2);
    for (int d = 0; d < irank; d++) idims[d] = kc_int(r, 1, 4);
    set_in(c, 1, kc_int(r, 0, 1) ? ST_I64 : ST_I32, irank, idims, -(double)dims[axis], (double)dims[axis] - 1);
    c->in[1].integral = true;
    pb_attr_int(&c->attrs, "axis", axis);
    int orank = 0;
    for (int d = 0; d < axis; d++) out[orank++] = dims[d];
    for (int d = 0; d < irank; d++) out[orank++] = idims[d];
    for (int d = axis + 1; d < rank; d++) out[orank++] = dims[d];
    set_out(c, dt, orank, out);
    c->ip[0] = axis;
    snprintf(c->note, sizeof c->note, "axis=%d", axis);
    c->ref = ref_gather;
    return true;
}

/* ---- normalizations and pools over NCHW ------------------------------ */

static void ref_batchnorm(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int64_t C = x->dims[1], inner = kc_numel(x->rank - 2, x->dims + 2), N = x->dims[0];
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t at = (n * C + ch) * inner + i;
                out[at] = (in[0][at] - in[3][ch]) / sqrt(in[4][ch] + c->dp[0]) * in[1][ch] + in[2][ch];
            }
}

static bool gen_batchnorm(kc_rng *r, st_dtype dt, kc_case *c)
{
    if (!is_float(dt)) return false;
    int64_t dims[KC_MAX_RANK];
    int rank = kc_int(r, 2, 4);
    for (int d = 0; d < rank; d++) dims[d] = kc_int(r, 1, d == rank - 1 ? 20 : 5);
    set_in(c, 0, dt, rank, dims, -3, 3);
    int64_t C = dims[1];
    for (int k = 1; k < 5; k++) {
        set_in(c, k, dt, 1, &C, k == 4 ? 0.2 : -1, k == 4 ? 2 : 1);
        c->in[k].constant = false;
    }
    c->dp[0] = (float)(kc_int(r, 0, 1) ? 1e-5 : 1e-3);   /* the attribute is a float */
    pb_attr_float(&c->attrs, "epsilon", (float)c->dp[0]);
    set_out(c, dt, rank, dims);
    c->ref = ref_batchnorm;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-5;
    return true;
}

static void ref_layernorm(const kc_case *c, const double *const *in, double *out)
{
    /* ip[0]: the first normalized axis; InstanceNormalization: axis 2,
     * scale and bias per channel (ip[1]) */
    const kc_in *x = &c->in[0];
    int axis = c->ip[0];
    int64_t outer = kc_numel(axis, x->dims), n = kc_numel(x->rank - axis, x->dims + axis);
    int64_t C = x->rank > 1 ? x->dims[1] : 1;
    for (int64_t o = 0; o < outer; o++) {
        const double *p = in[0] + o * n;
        double m = 0, v = 0;
        for (int64_t i = 0; i < n; i++) m += p[i];
        m /= (double)n;
        for (int64_t i = 0; i < n; i++) v += (p[i] - m) * (p[i] - m);
        v /= (double)n;
        double inv = 1 / sqrt(v + c->dp[0]);
        for (int64_t i = 0; i < n; i++) {
            int64_t k = c->ip[1] ? o % C : i;
            double sc = in[1][c->ip[1] ? k : bcast_index(i, x->rank - axis, x->dims + axis, c->in[1].rank, c->in[1].dims)];
            double b = c->n_in > 2 && c->in[2].rank >= 0
                           ? in[2][c->ip[1] ? k : bcast_index(i, x->rank - axis, x->dims + axis, c->in[2].rank, c->in[2].dims)]
                           : 0;
            out[o * n + i] = (p[i] - m) * inv * sc + b;
        }
    }
}

static bool gen_layernorm(kc_rng *r, st_dtype dt, kc_case *c)
{
    if (!is_float(dt)) return false;
    int64_t dims[KC_MAX_RANK];
    bool inst = !strcmp(c->op, "InstanceNormalization");
    int rank = rand_shape(r, inst ? 3 : 1, 4, dims);
    set_in(c, 0, dt, rank, dims, -3, 3);
    int axis = inst ? 2 : kc_int(r, 0, rank - 1);
    if (!inst && kc_int(r, 0, 1)) axis = rank - 1;
    c->ip[0] = axis;
    c->ip[1] = inst;
    if (inst) {
        int64_t C = dims[1];
        set_in(c, 1, dt, 1, &C, -1, 1);
        set_in(c, 2, dt, 1, &C, -1, 1);
    } else {
        set_in(c, 1, dt, rank - axis, dims + axis, -1, 1);
        if (kc_int(r, 0, 1)) set_in(c, 2, dt, rank - axis, dims + axis, -1, 1);
        pb_attr_int(&c->attrs, "axis", kc_int(r, 0, 1) ? axis : axis - rank);
        c->n_out = 1;
    }
    c->dp[0] = (float)(kc_int(r, 0, 1) ? 1e-5 : 1e-2);   /* the attribute is a float */
    pb_attr_float(&c->attrs, "epsilon", (float)c->dp[0]);
    set_out(c, dt, rank, dims);
    snprintf(c->note, sizeof c->note, "axis=%d eps=%g", axis, c->dp[0]);
    c->ref = ref_layernorm;
    c->ref_atol = 1e-4;
    c->ref_rtol = 1e-4;
    return true;
}

static void ref_pool(const kc_case *c, const double *const *in, double *out)
{
    /* NCHW; ip: kh, kw, sh, sw, pad top, pad left, max?, count_include_pad */
    const kc_in *x = &c->in[0];
    int64_t NC = x->dims[0] * x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t OH = c->out_dims[2], OW = c->out_dims[3];
    int kh = c->ip[0], kw = c->ip[1], sh = c->ip[2], sw = c->ip[3], pt = c->ip[4], pl = c->ip[5], mx = c->ip[6];
    for (int64_t q = 0; q < NC; q++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double acc = mx ? -INFINITY : 0;
                int cnt = 0;
                for (int i = 0; i < kh; i++)
                    for (int j = 0; j < kw; j++) {
                        int64_t h = oh * sh - pt + i, w = ow * sw - pl + j;
                        if (h < 0 || h >= H || w < 0 || w >= W) {
                            if (c->ip[7]) cnt++;
                            continue;
                        }
                        double v = in[0][(q * H + h) * W + w];
                        acc = mx ? fmax(acc, v) : acc + v;
                        cnt++;
                    }
                out[(q * OH + oh) * OW + ow] = mx ? acc : acc / cnt;
            }
}

static bool gen_pool(kc_rng *r, st_dtype dt, kc_case *c)
{
    bool global = !strncmp(c->op, "Global", 6), mx = strstr(c->op, "Max") != NULL;
    int64_t dims[4] = {kc_int(r, 1, 2), kc_int(r, 1, 5), kc_int(r, 1, 12), kc_int(r, 1, 12)};
    set_in(c, 0, dt, 4, dims, -3, 3);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    int kh = (int)dims[2], kw = (int)dims[3], sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
    if (!global) {
        kh = kc_int(r, 1, (int)(dims[2] < 4 ? dims[2] : 4));
        kw = kc_int(r, 1, (int)(dims[3] < 4 ? dims[3] : 4));
        sh = kc_int(r, 1, 2), sw = kc_int(r, 1, 2);
        if (kc_int(r, 0, 1)) pt = kc_int(r, 0, kh - 1), pl = kc_int(r, 0, kw - 1), pb = kc_int(r, 0, kh - 1), pr = kc_int(r, 0, kw - 1);
        int64_t k[2] = {kh, kw}, st[2] = {sh, sw}, pads[4] = {pt, pl, pb, pr};
        pb_attr_ints(&c->attrs, "kernel_shape", k, 2);
        pb_attr_ints(&c->attrs, "strides", st, 2);
        pb_attr_ints(&c->attrs, "pads", pads, 4);
        if (!mx && (pt || pl || pb || pr) && kc_int(r, 0, 1)) {
            pb_attr_int(&c->attrs, "count_include_pad", 1);
            c->ip[7] = 1;
        }
    }
    int64_t out[4] = {dims[0], dims[1], (dims[2] + pt + pb - kh) / sh + 1, (dims[3] + pl + pr - kw) / sw + 1};
    set_out(c, dt, 4, out);
    c->ip[0] = kh, c->ip[1] = kw, c->ip[2] = sh, c->ip[3] = sw, c->ip[4] = pt, c->ip[5] = pl, c->ip[6] = mx;
    snprintf(c->note, sizeof c->note, "kernel %dx%d stride %d,%d pads %d,%d,%d,%d%s", kh, kw, sh, sw, pt, pl, pb, pr,
             c->ip[7] ? " count_include_pad" : "");
    c->ref = ref_pool;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-5;
    return true;
}

static void ref_conv(const kc_case *c, const double *const *in, double *out)
{
    /* NCHW, weights [M, C/g, kh, kw]; ip: kh, kw, sh, sw, pt, pl, group, dilation */
    const kc_in *x = &c->in[0];
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t M = c->out_dims[1], OH = c->out_dims[2], OW = c->out_dims[3];
    int kh = c->ip[0], kw = c->ip[1], sh = c->ip[2], sw = c->ip[3], pt = c->ip[4], pl = c->ip[5], g = c->ip[6], dl = c->ip[7];
    int64_t cg = C / g, mg = M / g;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double s = c->n_in > 2 ? in[2][m] : 0;
                    int64_t grp = m / mg;
                    for (int64_t ci = 0; ci < cg; ci++)
                        for (int i = 0; i < kh; i++)
                            for (int j = 0; j < kw; j++) {
                                int64_t h = oh * sh - pt + i * dl, w = ow * sw - pl + j * dl;
                                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                                s += in[0][((n * C + grp * cg + ci) * H + h) * W + w] *
                                     in[1][((m * cg + ci) * kh + i) * kw + j];
                            }
                    out[((n * M + m) * OH + oh) * OW + ow] = s;
                }
}

static bool gen_conv(kc_rng *r, st_dtype dt, kc_case *c)
{
    if (!is_float(dt)) return false;
    int g = kc_int(r, 0, 2) ? 1 : kc_int(r, 1, 3);
    int64_t C = g * kc_int(r, 1, 4), M = g * kc_int(r, 1, 4);
    if (kc_int(r, 0, 4) == 0) C = M = g = kc_int(r, 2, 6);   /* depthwise */
    else if (kc_int(r, 0, 3) == 0) M = g * kc_int(r, 16, 21); /* >= 16 per group: a GPU's implicit GEMM */
    int64_t dims[4] = {kc_int(r, 1, 2), C, kc_int(r, 3, 14), kc_int(r, 3, 14)};
    int kh = kc_int(r, 1, 3), kw = kc_int(r, 1, 3), sh = kc_int(r, 1, 2), sw = kc_int(r, 1, 2), dl = kc_int(r, 0, 3) ? 1 : 2;
    int pt = kc_int(r, 0, kh - 1), pl = kc_int(r, 0, kw - 1), pb = kc_int(r, 0, kh - 1), pr = kc_int(r, 0, kw - 1);
    int64_t ekh = (kh - 1) * dl + 1, ekw = (kw - 1) * dl + 1;
    if (dims[2] + pt + pb < ekh || dims[3] + pl + pr < ekw) return false;
    int64_t w[4] = {M, C / g, kh, kw};
    set_in(c, 0, dt, 4, dims, -1, 1);
    set_in(c, 1, dt, 4, w, -1, 1);
    c->in[1].constant = kc_int(r, 0, 1);   /* constant weights are prepacked on the CPU */
    static double wv[4096], bv[64];
    if (c->in[1].constant) {
        if (kc_numel(4, w) > 4096) return false;
        for (int64_t i = 0; i < kc_numel(4, w); i++) wv[i] = kc_unif(r, -1, 1);
        c->in[1].values = wv;
    }
    if (kc_int(r, 0, 1)) {
        set_in(c, 2, dt, 1, &M, -1, 1);
        c->in[2].constant = c->in[1].constant;
        for (int64_t i = 0; i < M; i++) bv[i] = kc_unif(r, -1, 1);
        c->in[2].values = bv;
    }
    int64_t k[2] = {kh, kw}, st[2] = {sh, sw}, pads[4] = {pt, pl, pb, pr}, dil[2] = {dl, dl};
    pb_attr_ints(&c->attrs, "kernel_shape", k, 2);
    pb_attr_ints(&c->attrs, "strides", st, 2);
    pb_attr_ints(&c->attrs, "pads", pads, 4);
    pb_attr_ints(&c->attrs, "dilations", dil, 2);
    pb_attr_int(&c->attrs, "group", g);
    int64_t out[4] = {dims[0], M, (dims[2] + pt + pb - ekh) / sh + 1, (dims[3] + pl + pr - ekw) / sw + 1};
    set_out(c, dt, 4, out);
    c->ip[0] = kh, c->ip[1] = kw, c->ip[2] = sh, c->ip[3] = sw, c->ip[4] = pt, c->ip[5] = pl, c->ip[6] = g, c->ip[7] = dl;
    snprintf(c->note, sizeof c->note, "kernel %dx%d stride %d,%d pads %d,%d,%d,%d group %d dilation %d", kh, kw, sh, sw, pt,
             pl, pb, pr, g, dl);
    c->ref = ref_conv;
    c->ref_atol = 1e-4;
    c->ref_rtol = 1e-4;
    c->cpu_scale = 4;
    return true;
}

static void ref_pad(const kc_case *c, const double *const *in, double *out)
{
    /* ip[0..r): pad before per dim; ip[7]: mode 0 constant, 1 reflect, 2 edge */
    const kc_in *x = &c->in[0];
    int r = x->rank;
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t f = 0; f < n; f++) {
        int64_t rem = f, src = 0, s = 1;
        bool outside = false;
        for (int d = r - 1; d >= 0; d--) {
            int64_t i = rem % c->out_dims[d] - c->ip[d], D = x->dims[d];
            rem /= c->out_dims[d];
            if (i < 0 || i >= D) {
                if (c->ip[7] == 0) outside = true;
                else if (c->ip[7] == 2) i = i < 0 ? 0 : D - 1;
                else {
                    int64_t period = 2 * (D - 1);
                    if (period == 0) i = 0;
                    else {
                        i = ((i % period) + period) % period;
                        if (i >= D) i = period - i;
                    }
                }
            }
            src += i * s;
            s *= D;
        }
        out[f] = outside ? c->dp[0] : in[0][src];
    }
}

static bool gen_pad(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK], out[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    set_in(c, 0, dt, rank, dims, -5, 5);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    int mode = kc_int(r, 0, 2);
    static const char *const MODES[] = {"constant", "reflect", "edge"};
    pb_attr_string(&c->attrs, "mode", MODES[mode]);
    static double pads[2 * KC_MAX_RANK], cv;
    for (int d = 0; d < rank; d++) {
        int lim = mode == 1 ? (int)dims[d] - 1 : 3;
        int a = kc_int(r, 0, lim), b = kc_int(r, 0, lim);
        pads[d] = a, pads[rank + d] = b;
        out[d] = dims[d] + a + b;
        c->ip[d] = a;
    }
    int64_t np = 2 * rank;
    set_in(c, 1, ST_I64, 1, &np, 0, 0);
    c->in[1].constant = true;
    c->in[1].values = pads;
    c->ip[7] = mode;
    c->dp[0] = 0;
    if (mode == 0 && kc_int(r, 0, 1)) {
        cv = dt == ST_BOOL ? 1 : 2;
        set_in(c, 2, dt, 0, dims, 0, 0);
        c->in[2].constant = true;
        c->in[2].values = &cv;
        c->dp[0] = cv;
    }
    set_out(c, dt, rank, out);
    snprintf(c->note, sizeof c->note, "mode=%s", MODES[mode]);
    c->ref = ref_pad;
    return true;
}

/* ---- QuantizeLinear, DequantizeLinear (per tensor) ------------------ */

static void ref_quant(const kc_case *c, const double *const *in, double *out)
{
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    double sc = in[1][0], zp = c->n_in > 2 ? in[2][0] : 0;
    bool q = !strcmp(c->op, "QuantizeLinear");
    double lo = c->out_dt == ST_U8 ? 0 : -128, hi = c->out_dt == ST_U8 ? 255 : 127;
    for (int64_t i = 0; i < n; i++) out[i] = q ? fmin(hi, fmax(lo, nearbyint(in[0][i] / sc) + zp)) : (in[0][i] - zp) * sc;
}

static bool gen_quant(kc_rng *r, st_dtype dt, kc_case *c)
{
    bool q = !strcmp(c->op, "QuantizeLinear");
    if (q ? !is_float(dt) : (dt != ST_U8 && dt != ST_I8)) return false;
    st_dtype qt = q ? (kc_int(r, 0, 1) ? ST_U8 : ST_I8) : dt;
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 0, 4, dims);
    if (q) set_in(c, 0, dt, rank, dims, -3, 3);
    else set_in(c, 0, dt, rank, dims, qt == ST_U8 ? 0 : -128, qt == ST_U8 ? 255 : 127);
    static double sv, zv;
    sv = 0.03125 * kc_int(r, 1, 4);   /* exact in every float dtype: rounding ties stay ties */
    zv = qt == ST_U8 ? kc_int(r, 0, 255) : kc_int(r, -20, 20);
    st_dtype ft = q ? dt : ST_F32;
    set_in(c, 1, ft, 0, dims, 0, 0);
    c->in[1].constant = kc_int(r, 0, 1);
    c->in[1].lo = c->in[1].hi = sv;
    c->in[1].values = &sv;
    if (kc_int(r, 0, 2) || qt == ST_I8) {
        set_in(c, 2, qt, 0, dims, 0, 0);
        c->in[2].constant = c->in[1].constant;
        c->in[2].lo = c->in[2].hi = zv;
        c->in[2].values = &zv;
    }
    set_out(c, q ? qt : ST_F32, rank, dims);
    snprintf(c->note, sizeof c->note, "scale %g zero point %g%s", sv, zv, c->in[1].constant ? " const" : "");
    c->ref = ref_quant;
    c->ref_atol = q ? 1 : 1e-5;   /* a tie may round either way after a float division */
    c->ref_rtol = q ? 0 : 1e-6;
    return true;
}

/* ---- ArgMax, ArgMin, Hardmax ---------------------------------------- */

static void ref_arg(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int axis = c->ip[0];
    bool hard = !strcmp(c->op, "Hardmax"), mx = hard || strstr(c->op, "Max") != NULL, last = c->ip[1];
    int64_t outer = kc_numel(axis, x->dims), n = x->dims[axis], inner = kc_numel(x->rank - axis - 1, x->dims + axis + 1);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t best = 0;
            for (int64_t k = 1; k < n; k++) {
                double v = in[0][(o * n + k) * inner + i], b = in[0][(o * n + best) * inner + i];
                if (mx ? (v > b || (last && v == b)) : (v < b || (last && v == b))) best = k;
            }
            if (hard)
                for (int64_t k = 0; k < n; k++) out[(o * n + k) * inner + i] = k == best;
            else
                out[o * inner + i] = (double)best;
        }
}

static bool gen_arg(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK], out[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    set_in(c, 0, dt, rank, dims, -4, 4);
    c->in[0].integral = true;   /* ties happen: select_last_index matters */
    c->in[0].wide = true;       /* uint64 across 2^63, ordered unsigned */
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    int axis = kc_int(r, 0, rank - 1);
    c->ip[0] = axis;
    bool hard = !strcmp(c->op, "Hardmax");
    pb_attr_int(&c->attrs, "axis", axis);
    if (hard) {
        set_out(c, dt, rank, dims);
    } else {
        int keep = kc_int(r, 0, 1), orank = 0;
        pb_attr_int(&c->attrs, "keepdims", keep);
        c->ip[1] = kc_int(r, 0, 1);
        if (c->ip[1]) pb_attr_int(&c->attrs, "select_last_index", 1);
        for (int d = 0; d < rank; d++)
            if (d != axis) out[orank++] = dims[d];
            else if (keep) out[orank++] = 1;
        set_out(c, ST_I64, orank, out);
    }
    snprintf(c->note, sizeof c->note, "axis=%d%s", axis, c->ip[1] ? " select_last_index" : "");
    c->ref = ref_arg;
    return true;
}


/* ---- LpNormalization, MeanVarianceNormalization, LRN, Resize -------- */

static void ref_lpnorm(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int axis = c->ip[0], p = c->ip[1];
    int64_t outer = kc_numel(axis, x->dims), n = x->dims[axis], inner = kc_numel(x->rank - axis - 1, x->dims + axis + 1);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double s = 0;
            for (int64_t k = 0; k < n; k++) {
                double v = in[0][(o * n + k) * inner + i];
                s += p == 1 ? fabs(v) : v * v;
            }
            if (p == 2) s = sqrt(s);
            for (int64_t k = 0; k < n; k++) out[(o * n + k) * inner + i] = s == 0 ? 0 : in[0][(o * n + k) * inner + i] / s;
        }
}

static bool gen_lpnorm(kc_rng *r, st_dtype dt, kc_case *c)
{
    if (!is_float(dt)) return false;
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    set_in(c, 0, dt, rank, dims, -3, 3);
    int axis = kc_int(r, 0, rank - 1);
    c->ip[0] = axis;
    c->ip[1] = kc_int(r, 1, 2);
    pb_attr_int(&c->attrs, "axis", kc_int(r, 0, 1) ? axis : axis - rank);
    pb_attr_int(&c->attrs, "p", c->ip[1]);
    set_out(c, dt, rank, dims);
    snprintf(c->note, sizeof c->note, "axis=%d p=%d", axis, c->ip[1]);
    c->ref = ref_lpnorm;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-5;
    return true;
}

static void ref_mvn(const kc_case *c, const double *const *in, double *out)
{
    /* the default axes [0, 2, 3] of a 4-d input: statistics per channel */
    const kc_in *x = &c->in[0];
    int64_t N = x->dims[0], C = x->dims[1], HW = x->dims[2] * x->dims[3], cnt = N * HW;
    for (int64_t ch = 0; ch < C; ch++) {
        double m = 0, v = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < HW; i++) m += in[0][(n * C + ch) * HW + i];
        m /= (double)cnt;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < HW; i++) {
                double d = in[0][(n * C + ch) * HW + i] - m;
                v += d * d;
            }
        v /= (double)cnt;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < HW; i++) out[(n * C + ch) * HW + i] = (in[0][(n * C + ch) * HW + i] - m) / (sqrt(v) + 1e-9);
    }
}

static bool gen_mvn(kc_rng *r, st_dtype dt, kc_case *c)
{
    if (!is_float(dt)) return false;
    int64_t dims[4] = {kc_int(r, 1, 3), kc_int(r, 1, 4), kc_int(r, 1, 6), kc_int(r, 2, 9)};
    set_in(c, 0, dt, 4, dims, -3, 3);
    set_out(c, dt, 4, dims);
    c->ref = ref_mvn;
    c->ref_atol = 1e-4;
    c->ref_rtol = 1e-4;
    return true;
}

static void ref_lrn(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int64_t N = x->dims[0], C = x->dims[1], HW = kc_numel(x->rank - 2, x->dims + 2);
    int size = c->ip[0];
    /* as the kernel gets them: float attributes */
    double alpha = (float)c->dp[0], beta = (float)c->dp[1], bias = (float)c->dp[2];
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t i = 0; i < HW; i++) {
                double sq = 0;
                for (int64_t k = ch - (size - 1) / 2; k <= ch + size / 2; k++)
                    if (k >= 0 && k < C) sq += in[0][(n * C + k) * HW + i] * in[0][(n * C + k) * HW + i];
                out[(n * C + ch) * HW + i] = in[0][(n * C + ch) * HW + i] / pow(bias + alpha / size * sq, beta);
            }
}

static bool gen_lrn(kc_rng *r, st_dtype dt, kc_case *c)
{
    if (!is_float(dt)) return false;
    int64_t dims[4] = {kc_int(r, 1, 2), kc_int(r, 1, 8), kc_int(r, 1, 5), kc_int(r, 1, 7)};
    set_in(c, 0, dt, 4, dims, -2, 2);
    c->ip[0] = 2 * kc_int(r, 0, 2) + 1;
    c->dp[0] = (float)kc_unif(r, 1e-4, 0.5);
    c->dp[1] = (float)kc_unif(r, 0.5, 0.9);
    c->dp[2] = (float)kc_unif(r, 0.5, 2);
    pb_attr_int(&c->attrs, "size", c->ip[0]);
    pb_attr_float(&c->attrs, "alpha", (float)c->dp[0]);
    pb_attr_float(&c->attrs, "beta", (float)c->dp[1]);
    pb_attr_float(&c->attrs, "bias", (float)c->dp[2]);
    set_out(c, dt, 4, dims);
    snprintf(c->note, sizeof c->note, "size=%d alpha=%g beta=%g bias=%g", c->ip[0], c->dp[0], c->dp[1], c->dp[2]);
    c->ref = ref_lrn;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-5;
    return true;
}

static double resize_src(const kc_case *c, int64_t o, int64_t in_len, double scale, int64_t *i0, int64_t *i1)
{
    if (!c->ip[0]) {   /* nearest, asymmetric, floor */
        int64_t k = (int64_t)floor((double)o / scale);
        *i0 = *i1 = k < in_len ? k : in_len - 1;
        return 0;
    }
    double x = ((double)o + 0.5) / scale - 0.5;   /* linear, half_pixel, clamped */
    if (x < 0) x = 0;
    if (x > (double)(in_len - 1)) x = (double)(in_len - 1);
    *i0 = (int64_t)floor(x);
    *i1 = *i0 + 1 < in_len ? *i0 + 1 : in_len - 1;
    return x - (double)*i0;
}

static void ref_resize(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int64_t NC = x->dims[0] * x->dims[1], H = x->dims[2], W = x->dims[3], OH = c->out_dims[2], OW = c->out_dims[3];
    for (int64_t q = 0; q < NC; q++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t h0, h1, w0, w1;
                double fh = resize_src(c, oh, H, c->dp[0], &h0, &h1), fw = resize_src(c, ow, W, c->dp[1], &w0, &w1);
                const double *p = in[0] + q * H * W;
                double top = p[h0 * W + w0] * (1 - fw) + p[h0 * W + w1] * fw;
                double bot = p[h1 * W + w0] * (1 - fw) + p[h1 * W + w1] * fw;
                out[(q * OH + oh) * OW + ow] = top * (1 - fh) + bot * fh;
            }
}

static bool gen_resize(kc_rng *r, st_dtype dt, kc_case *c)
{
    static const double SC[] = {0.5, 1, 1.5, 2, 3};
    static double scales[4];
    int64_t dims[4] = {kc_int(r, 1, 2), kc_int(r, 1, 3), kc_int(r, 1, 9), kc_int(r, 1, 9)};
    set_in(c, 0, dt, 4, dims, -3, 3);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    c->ip[0] = is_float(dt) ? kc_int(r, 0, 1) : 0;   /* linear on floats only */
    scales[0] = scales[1] = 1;
    scales[2] = SC[kc_int(r, 0, 4)];
    scales[3] = SC[kc_int(r, 0, 4)];
    c->dp[0] = scales[2];
    c->dp[1] = scales[3];
    int64_t out[4] = {dims[0], dims[1], (int64_t)floor((double)dims[2] * scales[2]), (int64_t)floor((double)dims[3] * scales[3])};
    if (out[2] < 1 || out[3] < 1) return false;
    set_in(c, 1, ST_F32, 0, dims, 0, 0);
    c->in[1].rank = -1;   /* roi: absent */
    int64_t four = 4;
    set_in(c, 2, ST_F32, 1, &four, 0, 0);
    c->in[2].constant = true;
    c->in[2].values = scales;
    pb_attr_string(&c->attrs, "mode", c->ip[0] ? "linear" : "nearest");
    pb_attr_string(&c->attrs, "coordinate_transformation_mode", c->ip[0] ? "half_pixel" : "asymmetric");
    if (!c->ip[0]) pb_attr_string(&c->attrs, "nearest_mode", "floor");
    set_out(c, dt, 4, out);
    snprintf(c->note, sizeof c->note, "%s, scales %g x %g", c->ip[0] ? "linear half_pixel" : "nearest asymmetric floor",
             scales[2], scales[3]);
    c->ref = ref_resize;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-5;
    return true;
}


/* Upsample (opset 7: scales an attribute; 9: a constant input; the op is
 * gone from opset 10), which predates coordinate_transformation_mode: the
 * source coordinate is asymmetric, o / scale, and nearest takes its floor
 * (every scale is at least 1).  Linear is multilinear over every axis,
 * the upper neighbour clamped to the last element; ip[0] the mode. */
static void ref_upsample(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int rank = x->rank;
    int64_t n = kc_numel(c->out_rank, c->out_dims);
    for (int64_t f = 0; f < n; f++) {
        int64_t i0[KC_MAX_RANK], i1[KC_MAX_RANK], rem = f;
        double fr[KC_MAX_RANK];
        for (int d = rank - 1; d >= 0; d--) {
            int64_t o = rem % c->out_dims[d], len = x->dims[d];
            rem /= c->out_dims[d];
            double src = (double)o / c->dp[d];
            i0[d] = (int64_t)floor(src);
            if (i0[d] > len - 1) i0[d] = len - 1;
            i1[d] = i0[d] + 1 < len ? i0[d] + 1 : len - 1;
            fr[d] = c->ip[0] ? src - (double)i0[d] : 0;
        }
        double acc = 0;
        for (int corner = 0; corner < (1 << rank); corner++) {
            double w = 1;
            int64_t idx = 0;
            for (int d = 0; d < rank; d++) {
                bool up = (corner >> d) & 1;
                w *= up ? fr[d] : 1 - fr[d];
                idx = idx * x->dims[d] + (up ? i1[d] : i0[d]);
            }
            if (w != 0) acc += w * in[0][idx];
        }
        out[f] = acc;
    }
}

static bool gen_upsample(kc_rng *r, st_dtype dt, kc_case *c)
{
    static const double SC[] = {1, 1.5, 2, 3};
    static double scales[KC_MAX_RANK];
    int64_t dims[KC_MAX_RANK], out[KC_MAX_RANK];
    int rank = kc_int(r, 2, 4);
    for (int d = 0; d < rank; d++) {
        dims[d] = d < rank - 2 ? kc_int(r, 1, 3) : kc_int(r, 1, 9);
        /* the last two axes scaled as a feature map's; now and then a
         * leading one too, which some backends leave to the CPU */
        scales[d] = d >= rank - 2 || kc_int(r, 0, 5) == 0 ? SC[kc_int(r, 0, 3)] : 1;
        out[d] = (int64_t)floor((double)dims[d] * scales[d]);
        c->dp[d] = scales[d];
    }
    set_in(c, 0, dt, rank, dims, -3, 3);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    c->ip[0] = is_float(dt) ? kc_int(r, 0, 1) : 0;   /* linear on floats only */
    c->opset = kc_int(r, 0, 1) ? 9 : 7;
    if (c->opset == 9) {
        int64_t nr = rank;
        set_in(c, 1, ST_F32, 1, &nr, 0, 0);
        c->in[1].constant = true;
        c->in[1].values = scales;
    } else {
        float fs[KC_MAX_RANK];
        for (int d = 0; d < rank; d++) fs[d] = (float)scales[d];
        pb_attr_floats(&c->attrs, "scales", fs, rank);
    }
    pb_attr_string(&c->attrs, "mode", c->ip[0] ? "linear" : "nearest");
    set_out(c, dt, rank, out);
    int at = snprintf(c->note, sizeof c->note, "opset %d, %s, scales", c->opset, c->ip[0] ? "linear" : "nearest");
    for (int d = 0; d < rank && at < (int)sizeof c->note; d++)
        at += snprintf(c->note + at, sizeof c->note - (size_t)at, "%s%g", d ? " x " : " ", scales[d]);
    c->ref = ref_upsample;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-5;
    return true;
}


static void ref_conv_transpose(const kc_case *c, const double *const *in, double *out)
{
    /* NCHW, weights [C, M, kh, kw] (group 1); ip: kh, kw, sh, sw, pt, pl */
    const kc_in *x = &c->in[0];
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t M = c->out_dims[1], OH = c->out_dims[2], OW = c->out_dims[3];
    int kh = c->ip[0], kw = c->ip[1], sh = c->ip[2], sw = c->ip[3], pt = c->ip[4], pl = c->ip[5];
    for (int64_t f = 0; f < kc_numel(4, c->out_dims); f++) out[f] = c->n_in > 2 ? in[2][(f / (OH * OW)) % M] : 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    double v = in[0][((n * C + ch) * H + h) * W + w];
                    for (int64_t m = 0; m < M; m++)
                        for (int i = 0; i < kh; i++)
                            for (int j = 0; j < kw; j++) {
                                int64_t oh = h * sh - pt + i, ow = w * sw - pl + j;
                                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                                out[((n * M + m) * OH + oh) * OW + ow] += v * in[1][((ch * M + m) * kh + i) * kw + j];
                            }
                }
}

static bool gen_conv_transpose(kc_rng *r, st_dtype dt, kc_case *c)
{
    if (!is_float(dt)) return false;
    int64_t C = kc_int(r, 1, 4), M = kc_int(r, 1, 4);
    int64_t dims[4] = {kc_int(r, 1, 2), C, kc_int(r, 1, 7), kc_int(r, 1, 7)};
    int kh = kc_int(r, 1, 3), kw = kc_int(r, 1, 3), sh = kc_int(r, 1, 2), sw = kc_int(r, 1, 2);
    int pt = kc_int(r, 0, kh - 1), pl = kc_int(r, 0, kw - 1), pb = kc_int(r, 0, kh - 1), pr = kc_int(r, 0, kw - 1);
    int64_t out[4] = {dims[0], M, (dims[2] - 1) * sh - pt - pb + kh, (dims[3] - 1) * sw - pl - pr + kw};
    if (out[2] < 1 || out[3] < 1) return false;
    int64_t w[4] = {C, M, kh, kw};
    set_in(c, 0, dt, 4, dims, -1, 1);
    set_in(c, 1, dt, 4, w, -1, 1);
    if (kc_int(r, 0, 1)) set_in(c, 2, dt, 1, &M, -1, 1);
    int64_t k[2] = {kh, kw}, st[2] = {sh, sw}, pads[4] = {pt, pl, pb, pr};
    pb_attr_ints(&c->attrs, "kernel_shape", k, 2);
    pb_attr_ints(&c->attrs, "strides", st, 2);
    pb_attr_ints(&c->attrs, "pads", pads, 4);
    set_out(c, dt, 4, out);
    c->ip[0] = kh, c->ip[1] = kw, c->ip[2] = sh, c->ip[3] = sw, c->ip[4] = pt, c->ip[5] = pl;
    snprintf(c->note, sizeof c->note, "kernel %dx%d stride %d,%d pads %d,%d,%d,%d", kh, kw, sh, sw, pt, pl, pb, pr);
    c->ref = ref_conv_transpose;
    c->ref_atol = 1e-4;
    c->ref_rtol = 1e-4;
    c->cpu_scale = 4;
    return true;
}

/* ---- the index family: OneHot, Trilu, CumSum, TopK, Einsum, the element
 * gathers and the scatters (their rules: ops/index_math.h, checked here
 * from the ONNX spec's text) ----------------------------------------- */

static void unravel(int64_t f, int rank, const int64_t *dims, int64_t *idx)
{
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = f % dims[d];
        f /= dims[d];
    }
}

static int64_t ravel(int rank, const int64_t *dims, const int64_t *idx)
{
    int64_t f = 0;
    for (int d = 0; d < rank; d++) f = f * dims[d] + idx[d];
    return f;
}

/* An index value v on an axis of dim: negative counts from the end. */
static int64_t wrap_index(double v, int64_t dim) { return v < 0 ? (int64_t)v + dim : (int64_t)v; }

/* A constant int64 input i of n values, kept in store (which outlives the run). */
static void const_ints(kc_case *c, int i, st_dtype dt, int rank, int64_t n, double *store)
{
    int64_t dims[1] = {n};
    set_in(c, i, dt, rank, dims, 0, 0);
    c->in[i].constant = true;
    c->in[i].values = store;
}

static void ref_one_hot(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *ix = &c->in[0];
    int axis = c->ip[0];
    int64_t depth = c->ip[1], n = kc_numel(c->out_rank, c->out_dims), idx[KC_MAX_RANK], at[KC_MAX_RANK];
    for (int64_t f = 0; f < n; f++) {
        unravel(f, c->out_rank, c->out_dims, idx);
        for (int d = 0, e = 0; d < c->out_rank; d++)
            if (d != axis) at[e++] = idx[d];
        /* the index cast to int64 (truncation); a negative one counts from the end */
        double v = trunc(in[0][ravel(ix->rank, ix->dims, at)]);
        if (v < 0) v += (double)depth;
        out[f] = v == (double)idx[axis] ? in[2][1] : in[2][0];
    }
}

static bool gen_one_hot(kc_rng *r, st_dtype dt, kc_case *c)
{
    static const st_dtype VT[] = {ST_F32, ST_I64, ST_I32, ST_F16, ST_U8, ST_BOOL, ST_I8};
    static double depth_v, vals[2];
    int64_t dims[KC_MAX_RANK], out[KC_MAX_RANK];
    int rank = rand_shape(r, 0, 3, dims);
    int64_t depth = kc_int(r, 1, 7);
    /* out-of-range indices (all off) on both sides; unsigned types only reach the top */
    set_in(c, 0, dt, rank, dims, is_unsigned(dt) ? 0 : -(double)depth - 1, (double)depth);
    c->in[0].integral = !is_float(dt) || kc_int(r, 0, 1);
    depth_v = (double)depth;
    const_ints(c, 1, kc_int(r, 0, 1) ? ST_I64 : ST_F32, kc_int(r, 0, 1), 1, &depth_v);
    st_dtype vt = VT[kc_int(r, 0, (int)(sizeof VT / sizeof *VT) - 1)];
    vals[0] = vt == ST_BOOL ? 0 : kc_int(r, -3, 0);
    vals[1] = vt == ST_BOOL ? 1 : kc_int(r, 1, 5);
    if (vt == ST_U8) vals[0] = 0;
    int64_t two = 2;
    /* [off, on]: constant, or a graph input drawn like any other */
    set_in(c, 2, vt, 1, &two, vt == ST_U8 ? 0 : -3, 5);
    c->in[2].integral = true;
    c->in[2].constant = kc_int(r, 0, 1);
    c->in[2].values = vals;
    int axis = kc_int(r, 0, rank);
    pb_attr_int(&c->attrs, "axis", kc_int(r, 0, 1) ? axis : axis - rank - 1);
    for (int d = 0, e = 0; d <= rank; d++) out[d] = d == axis ? depth : dims[e++];
    set_out(c, vt, rank + 1, out);
    c->ip[0] = axis;
    c->ip[1] = (int)depth;
    snprintf(c->note, sizeof c->note, "axis=%d depth=%lld values %s", axis, (long long)depth, st_dtype_name(vt));
    c->ref = ref_one_hot;
    return true;
}

static void ref_trilu(const kc_case *c, const double *const *in, double *out)
{
    int r = c->out_rank;
    int64_t n = kc_numel(r, c->out_dims), idx[KC_MAX_RANK];
    double k = c->n_in > 1 ? in[1][0] : 0;
    for (int64_t f = 0; f < n; f++) {
        unravel(f, r, c->out_dims, idx);
        double diff = (double)(idx[r - 1] - idx[r - 2]);   /* column - row */
        out[f] = (c->ip[0] ? diff >= k : diff <= k) ? in[0][f] : 0;
    }
}

static bool gen_trilu(kc_rng *r, st_dtype dt, kc_case *c)
{
    static double kv;
    int64_t dims[KC_MAX_RANK];
    int rank = kc_int(r, 2, 4);
    for (int d = 0; d < rank; d++) dims[d] = kc_int(r, 1, d >= rank - 2 ? 9 : 3);
    set_in(c, 0, dt, rank, dims, -5, 5);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    int upper = kc_int(r, 0, 1);
    pb_attr_int(&c->attrs, "upper", upper);
    int kind = kc_int(r, 0, 5);   /* 0: no k; 5: far past the matrix, where i + k would overflow unclamped */
    kv = kind == 5 ? (kc_int(r, 0, 1) ? 1 : -1) * ldexp(1, 62) : kc_int(r, -10, 10);
    if (kind) {
        set_in(c, 1, ST_I64, kc_int(r, 0, 1), (const int64_t[]){1}, kv, kv);
        c->in[1].integral = true;
        c->in[1].constant = kc_int(r, 0, 1);
        c->in[1].values = &kv;
    }
    set_out(c, dt, rank, dims);
    c->ip[0] = upper;
    snprintf(c->note, sizeof c->note, "upper=%d k=%s%.0f", upper, kind ? "" : "absent ", kind ? kv : 0.0);
    c->ref = ref_trilu;
    return true;
}

static void ref_cumsum(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int axis = c->ip[0], ex = c->ip[1], rev = c->ip[2];
    int64_t n = x->dims[axis], outer = kc_numel(axis, x->dims), inner = kc_numel(x->rank - axis - 1, x->dims + axis + 1);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = 0;
            for (int64_t s = 0; s < n; s++) {
                int64_t k = rev ? n - 1 - s : s, at = (o * n + k) * inner + i;
                if (!ex) acc += in[0][at];
                out[at] = acc;
                if (ex) acc += in[0][at];
            }
        }
}

static bool gen_cumsum(kc_rng *r, st_dtype dt, kc_case *c)
{
    static double av;
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 4, dims);
    set_in(c, 0, dt, rank, dims, -4, 4);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    c->in[0].integral = !is_float(dt) || kc_int(r, 0, 1);   /* whole numbers: exact sums, so any order */
    int axis = kc_int(r, 0, rank - 1);
    av = kc_int(r, 0, 1) ? axis : axis - rank;
    /* the axis as a constant, or a graph input read at run time */
    set_in(c, 1, kc_int(r, 0, 1) ? ST_I64 : ST_I32, kc_int(r, 0, 1), (const int64_t[]){1}, av, av);
    c->in[1].integral = true;
    c->in[1].constant = kc_int(r, 0, 1);
    c->in[1].values = &av;
    c->ip[0] = axis;
    c->ip[1] = kc_int(r, 0, 1);
    c->ip[2] = kc_int(r, 0, 1);
    if (c->ip[1]) pb_attr_int(&c->attrs, "exclusive", 1);
    if (c->ip[2]) pb_attr_int(&c->attrs, "reverse", 1);
    set_out(c, dt, rank, dims);
    snprintf(c->note, sizeof c->note, "axis=%.0f%s exclusive=%d reverse=%d", av, c->in[1].constant ? " const" : "", c->ip[1], c->ip[2]);
    c->ref = ref_cumsum;
    c->ref_atol = 1e-4;
    c->ref_rtol = 1e-4;
    c->cpu_scale = 10;
    return true;
}

static void ref_topk(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0];
    int axis = c->ip[0], largest = c->ip[2];
    int64_t k = c->ip[1], n = x->dims[axis], outer = kc_numel(axis, x->dims), inner = kc_numel(x->rank - axis - 1, x->dims + axis + 1);
    int64_t order[200];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const double *v = in[0] + o * n * inner + i;
            /* the spec: sorted by value (largest or smallest first), an
             * equal value's lower index first; insertion keeps that */
            for (int64_t a = 0; a < n; a++) {
                int64_t b = a;
                while (b > 0 && (largest ? v[a * inner] > v[order[b - 1] * inner] : v[a * inner] < v[order[b - 1] * inner])) {
                    order[b] = order[b - 1];
                    b--;
                }
                order[b] = a;
            }
            for (int64_t j = 0; j < k; j++)
                out[(o * k + j) * inner + i] = c->out_pick ? (double)order[j] : v[order[j] * inner];
        }
}

static bool gen_topk(kc_rng *r, st_dtype dt, kc_case *c)
{
    static double kv;
    int64_t dims[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 3, dims);
    int axis = kc_int(r, 0, rank - 1);
    if (dims[axis] > 150) dims[axis] = 150;
    set_in(c, 0, dt, rank, dims, -4, 4);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    c->in[0].integral = true;   /* ties: the lower index comes first */
    c->in[0].wide = true;       /* uint64 ordered as unsigned */
    if (dt == ST_F64 && kc_int(r, 0, 1)) {
        /* distinct in float64, equal in float32: an order computed in f32 ties them */
        c->in[0].integral = false;
        c->in[0].lo = 1, c->in[0].hi = 1 + 1e-9;
    }
    int64_t k = kc_int(r, 1, (int)dims[axis]);
    kv = (double)k;
    const_ints(c, 1, ST_I64, 1, 1, &kv);
    int largest = kc_int(r, 0, 1);
    pb_attr_int(&c->attrs, "axis", kc_int(r, 0, 1) ? axis : axis - rank);
    pb_attr_int(&c->attrs, "largest", largest);
    c->n_out = 2;
    c->out_pick = kc_int(r, 0, 1);
    int64_t out[KC_MAX_RANK];
    memcpy(out, dims, sizeof out);
    out[axis] = k;
    set_out(c, c->out_pick ? ST_I64 : dt, rank, out);
    c->ip[0] = axis;
    c->ip[1] = (int)k;
    c->ip[2] = largest;
    snprintf(c->note, sizeof c->note, "axis=%d k=%lld largest=%d, output %s", axis, (long long)k, largest,
             c->out_pick ? "Indices" : "Values");
    c->ref = ref_topk;
    return true;
}

/* Einsum: equations over labels a-z, each label's extent drawn per case. */
static const char *const EINSUMS[] = {"ij,jk->ik", "bij,bjk->bik", "ii->i", "ij->ji", "ij->", "i,i->", "ij,j->i",
                                      "bhqd,bhkd->bhqk", "i,j->ij", "iij->j", "ij,jk,kl->il", "ijk->kji", "ii->", "ij,ij->ij"};

static void ref_einsum(const kc_case *c, const double *const *in, double *out)
{
    const char *eq = EINSUMS[c->ip[0]], *arrow = strstr(eq, "->");
    int64_t size[26] = {0}, val[26];
    int labels[26], nl = 0;
    for (const char *p = eq; *p; p++)
        if (*p >= 'a' && *p <= 'z' && !size[*p - 'a']) {
            size[*p - 'a'] = c->ip[1 + (*p - 'a') % 6];
            labels[nl++] = *p - 'a';
        }
    int64_t total = 1, on = kc_numel(c->out_rank, c->out_dims);
    for (int l = 0; l < nl; l++) total *= size[labels[l]];
    for (int64_t f = 0; f < on; f++) out[f] = 0;
    /* every assignment of the labels: the product of the inputs there, into the output's element */
    for (int64_t t = 0; t < total; t++) {
        int64_t rem = t;
        for (int l = nl - 1; l >= 0; l--) {
            val[labels[l]] = rem % size[labels[l]];
            rem /= size[labels[l]];
        }
        double prod = 1;
        const char *p = eq;
        for (int i = 0; i < c->n_in; i++) {
            int64_t idx[KC_MAX_RANK];
            int d = 0;
            for (; *p && *p != ',' && p < arrow; p++) idx[d++] = val[*p - 'a'];
            p++;
            prod *= in[i][ravel(d, c->in[i].dims, idx)];
        }
        int64_t idx[KC_MAX_RANK];
        int d = 0;
        for (const char *q = arrow + 2; *q; q++) idx[d++] = val[*q - 'a'];
        out[ravel(d, c->out_dims, idx)] += prod;
    }
}

static bool gen_einsum(kc_rng *r, st_dtype dt, kc_case *c)
{
    if (dt == ST_BOOL) return false;
    int which = kc_int(r, 0, (int)(sizeof EINSUMS / sizeof *EINSUMS) - 1);
    const char *eq = EINSUMS[which], *arrow = strstr(eq, "->");
    for (int l = 0; l < 6; l++) c->ip[1 + l] = kc_int(r, 1, 5);   /* label a + 6j has extent ip[1 + j % 6] */
    double lo = -2, hi = 2;
    if (!is_float(dt)) lo = is_unsigned(dt) ? 0 : -3, hi = 3;
    const char *p = eq;
    for (int i = 0; p < arrow; i++) {
        int64_t dims[KC_MAX_RANK];
        int d = 0;
        for (; *p != ',' && p < arrow; p++) dims[d++] = c->ip[1 + (*p - 'a') % 6];
        set_in(c, i, dt, d, dims, lo, hi);
        p++;
    }
    int64_t out[KC_MAX_RANK];
    int orank = 0;
    for (const char *q = arrow + 2; *q; q++) out[orank++] = c->ip[1 + (*q - 'a') % 6];
    pb_attr_string(&c->attrs, "equation", eq);
    set_out(c, dt, orank, out);
    c->ip[0] = which;
    snprintf(c->note, sizeof c->note, "equation %s", eq);
    c->ref = ref_einsum;
    c->ref_atol = 1e-4;
    c->ref_rtol = 1e-4;
    c->cpu_scale = 10;
    return true;
}

/* ScatterElements, ScatterND: the reduction (opset 18 names all four),
 * and where the values come from. */
static const char *const REDS[] = {"none", "add", "mul", "max", "min"};

static double reduce_ref(int red, double a, double b, st_dtype dt)
{
    switch (red) {
    case 1: return a + b;
    case 2: return is_float(dt) ? a * b : (double)(int64_t)((uint64_t)(int64_t)a * (uint64_t)(int64_t)b);
    case 3: return b > a ? b : a;
    case 4: return b < a ? b : a;
    default: return b;
    }
}

/* Data and updates for reduction red: products stay small, max / min
 * draw uint64 across 2^63, float64 values any (a sum in f32 shows). */
static void scatter_values(kc_case *c, int red, st_dtype dt)
{
    for (int i = 0; i < 3; i += 2) {
        if (!is_float(dt)) int_range(dt, &c->in[i].lo, &c->in[i].hi);
        if (red == 2) c->in[i].lo = is_unsigned(dt) ? 1 : -2, c->in[i].hi = 2, c->in[i].integral = true;
        c->in[i].wide = red >= 3;
    }
}

static void ref_scatter_elements(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0], *ix = &c->in[1];
    int axis = c->ip[0], red = c->ip[1];
    int64_t n = kc_numel(x->rank, x->dims), ni = kc_numel(ix->rank, ix->dims), idx[KC_MAX_RANK];
    for (int64_t f = 0; f < n; f++) out[f] = in[0][f];
    /* the spec's loop, in the indices' row-major order (duplicates: in that order) */
    for (int64_t j = 0; j < ni; j++) {
        unravel(j, ix->rank, ix->dims, idx);
        idx[axis] = wrap_index(in[1][j], x->dims[axis]);
        int64_t at = ravel(x->rank, x->dims, idx);
        out[at] = reduce_ref(red, out[at], in[2][j], x->dt);
    }
}

static bool gen_scatter_elements(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK], idims[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 3, dims);
    int axis = kc_int(r, 0, rank - 1);
    for (int d = 0; d < rank; d++) idims[d] = d == axis ? kc_int(r, 1, 4) : kc_int(r, 1, (int)dims[d]);
    int red = dt == ST_BOOL ? 0 : kc_int(r, 0, 4);
    set_in(c, 0, dt, rank, dims, -4, 4);
    set_in(c, 1, kc_int(r, 0, 1) ? ST_I64 : ST_I32, rank, idims, -(double)dims[axis], (double)dims[axis] - 1);
    c->in[1].integral = true;
    set_in(c, 2, dt, rank, idims, -4, 4);
    scatter_values(c, red, dt);
    pb_attr_int(&c->attrs, "axis", kc_int(r, 0, 1) ? axis : axis - rank);
    if (red) pb_attr_string(&c->attrs, "reduction", REDS[red]);
    c->opset = 18;
    set_out(c, dt, rank, dims);
    c->ip[0] = axis;
    c->ip[1] = red;
    snprintf(c->note, sizeof c->note, "axis=%d reduction=%s", axis, REDS[red]);
    c->ref = ref_scatter_elements;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-5;
    return true;
}

/* GatherND / ScatterND share a shape: data [batch b, D x m, slice...],
 * indices [batch b, tuples..., m] (every indexed dim D long, so one range
 * holds every index). */
typedef struct nd_shape {
    int b, m, rank, irank, tup;
    int64_t dims[KC_MAX_RANK], idims[KC_MAX_RANK];
} nd_shape;

static void draw_nd(kc_rng *r, nd_shape *s, int max_b)
{
    s->b = kc_int(r, 0, max_b);
    s->m = kc_int(r, 1, 2);
    int slice = kc_int(r, 0, 2);
    s->rank = s->b + s->m + slice;
    int64_t D = kc_int(r, 1, 5);
    for (int d = 0; d < s->rank; d++) s->dims[d] = d >= s->b && d < s->b + s->m ? D : kc_int(r, 1, 4);
    s->tup = kc_int(r, 0, 2);
    s->irank = s->b + s->tup + 1;
    for (int d = 0; d < s->b; d++) s->idims[d] = s->dims[d];
    for (int d = 0; d < s->tup; d++) s->idims[s->b + d] = kc_int(r, 1, 3);
    s->idims[s->irank - 1] = s->m;
}

/* The data element of tuple t (indices row t) and slice element e, for
 * batch index bi (all in row-major numbering). */
static int64_t nd_at(const nd_shape *s, const double *ix, int64_t t, int64_t bi, int64_t e)
{
    int64_t idx[KC_MAX_RANK];
    unravel(bi, s->b, s->dims, idx);
    for (int j = 0; j < s->m; j++) idx[s->b + j] = wrap_index(ix[t * s->m + j], s->dims[s->b + j]);
    unravel(e, s->rank - s->b - s->m, s->dims + s->b + s->m, idx + s->b + s->m);
    return ravel(s->rank, s->dims, idx);
}

static void nd_of(const kc_case *c, nd_shape *s)
{
    memset(s, 0, sizeof *s);
    s->b = c->ip[0];
    s->m = c->ip[1];
    s->rank = c->in[0].rank;
    s->irank = c->in[1].rank;
    s->tup = s->irank - s->b - 1;
    memcpy(s->dims, c->in[0].dims, sizeof s->dims);
    memcpy(s->idims, c->in[1].dims, sizeof s->idims);
}

static void ref_scatter_nd(const kc_case *c, const double *const *in, double *out)
{
    nd_shape s;
    nd_of(c, &s);
    int64_t n = kc_numel(s.rank, s.dims), tuples = kc_numel(s.irank - 1, s.idims);
    int64_t slice = kc_numel(s.rank - s.m, s.dims + s.m);
    for (int64_t f = 0; f < n; f++) out[f] = in[0][f];
    for (int64_t t = 0; t < tuples; t++)
        for (int64_t e = 0; e < slice; e++) {
            int64_t at = nd_at(&s, in[1], t, 0, e);
            out[at] = reduce_ref(c->ip[2], out[at], in[2][t * slice + e], c->in[0].dt);
        }
}

static bool gen_scatter_nd(kc_rng *r, st_dtype dt, kc_case *c)
{
    nd_shape s;
    draw_nd(r, &s, 0);
    int red = dt == ST_BOOL ? 0 : kc_int(r, 0, 4);
    set_in(c, 0, dt, s.rank, s.dims, -4, 4);
    set_in(c, 1, ST_I64, s.irank, s.idims, -(double)s.dims[0], (double)s.dims[0] - 1);
    c->in[1].integral = true;
    int64_t udims[KC_MAX_RANK];
    int urank = 0;
    for (int d = 0; d < s.irank - 1; d++) udims[urank++] = s.idims[d];
    for (int d = s.m; d < s.rank; d++) udims[urank++] = s.dims[d];
    set_in(c, 2, dt, urank, udims, -4, 4);
    scatter_values(c, red, dt);
    if (red) pb_attr_string(&c->attrs, "reduction", REDS[red]);
    c->opset = 18;
    set_out(c, dt, s.rank, s.dims);
    c->ip[0] = 0;
    c->ip[1] = s.m;
    c->ip[2] = red;
    snprintf(c->note, sizeof c->note, "depth %d, %d tuple dims, reduction=%s", s.m, s.tup, REDS[red]);
    c->ref = ref_scatter_nd;
    c->ref_atol = 1e-5;
    c->ref_rtol = 1e-5;
    return true;
}

static void ref_gather_nd(const kc_case *c, const double *const *in, double *out)
{
    nd_shape s;
    nd_of(c, &s);
    int64_t batch = kc_numel(s.b, s.dims), tuples = kc_numel(s.tup, s.idims + s.b);
    int64_t slice = kc_numel(s.rank - s.b - s.m, s.dims + s.b + s.m);
    for (int64_t bi = 0; bi < batch; bi++)
        for (int64_t t = 0; t < tuples; t++)
            for (int64_t e = 0; e < slice; e++)
                out[(bi * tuples + t) * slice + e] = in[0][nd_at(&s, in[1], bi * tuples + t, bi, e)];
}

static bool gen_gather_nd(kc_rng *r, st_dtype dt, kc_case *c)
{
    nd_shape s;
    draw_nd(r, &s, 1);
    set_in(c, 0, dt, s.rank, s.dims, -4, 4);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    int64_t D = s.dims[s.b];
    set_in(c, 1, ST_I64, s.irank, s.idims, -(double)D, (double)D - 1);
    c->in[1].integral = true;
    if (s.b) pb_attr_int(&c->attrs, "batch_dims", s.b);
    int64_t out[KC_MAX_RANK];
    int orank = 0;
    for (int d = 0; d < s.irank - 1; d++) out[orank++] = s.idims[d];
    for (int d = s.b + s.m; d < s.rank; d++) out[orank++] = s.dims[d];
    set_out(c, dt, orank, out);
    c->ip[0] = s.b;
    c->ip[1] = s.m;
    snprintf(c->note, sizeof c->note, "batch_dims=%d depth %d", s.b, s.m);
    c->ref = ref_gather_nd;
    return true;
}

static void ref_gather_elements(const kc_case *c, const double *const *in, double *out)
{
    const kc_in *x = &c->in[0], *ix = &c->in[1];
    int axis = c->ip[0];
    int64_t ni = kc_numel(ix->rank, ix->dims), idx[KC_MAX_RANK];
    for (int64_t j = 0; j < ni; j++) {
        unravel(j, ix->rank, ix->dims, idx);
        idx[axis] = wrap_index(in[1][j], x->dims[axis]);
        out[j] = in[0][ravel(x->rank, x->dims, idx)];
    }
}

static bool gen_gather_elements(kc_rng *r, st_dtype dt, kc_case *c)
{
    int64_t dims[KC_MAX_RANK], idims[KC_MAX_RANK];
    int rank = rand_shape(r, 1, 3, dims);
    int axis = kc_int(r, 0, rank - 1);
    for (int d = 0; d < rank; d++) idims[d] = d == axis ? kc_int(r, 1, 5) : kc_int(r, 1, (int)dims[d]);
    set_in(c, 0, dt, rank, dims, -4, 4);
    if (!is_float(dt)) int_range(dt, &c->in[0].lo, &c->in[0].hi);
    set_in(c, 1, kc_int(r, 0, 1) ? ST_I64 : ST_I32, rank, idims, -(double)dims[axis], (double)dims[axis] - 1);
    c->in[1].integral = true;
    pb_attr_int(&c->attrs, "axis", kc_int(r, 0, 1) ? axis : axis - rank);
    set_out(c, dt, rank, idims);
    c->ip[0] = axis;
    snprintf(c->note, sizeof c->note, "axis=%d", axis);
    c->ref = ref_gather_elements;
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
    {"", "Slice", gen_slice},
    {"", "Reshape", gen_reshape},
    {"", "Flatten", gen_reshape},
    {"", "Squeeze", gen_reshape},
    {"", "Unsqueeze", gen_reshape},
    {"", "Split", gen_split},
    {"", "Gather", gen_gather},
    {"", "BatchNormalization", gen_batchnorm},
    {"", "LayerNormalization", gen_layernorm},
    {"", "InstanceNormalization", gen_layernorm},
    {"", "MaxPool", gen_pool},
    {"", "AveragePool", gen_pool},
    {"", "GlobalMaxPool", gen_pool},
    {"", "GlobalAveragePool", gen_pool},
    {"", "Conv", gen_conv},
    {"", "Pad", gen_pad},
    {"", "QuantizeLinear", gen_quant},
    {"", "DequantizeLinear", gen_quant},
    {"", "ArgMax", gen_arg},
    {"", "ArgMin", gen_arg},
    {"", "Hardmax", gen_arg},
    {"", "LpNormalization", gen_lpnorm},
    {"", "MeanVarianceNormalization", gen_mvn},
    {"", "LRN", gen_lrn},
    {"", "Resize", gen_resize},
    {"", "Upsample", gen_upsample},
    {"", "ConvTranspose", gen_conv_transpose},
    {"", "OneHot", gen_one_hot},
    {"", "Trilu", gen_trilu},
    {"", "CumSum", gen_cumsum},
    {"", "TopK", gen_topk},
    {"", "Einsum", gen_einsum},
    {"", "ScatterElements", gen_scatter_elements},
    {"", "ScatterND", gen_scatter_nd},
    {"", "GatherND", gen_gather_nd},
    {"", "GatherElements", gen_gather_elements},
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
