/*
 * sweep.h — what the kernel sweep's case generators (sweep_cases.c) hand
 * the driver (kernel_sweep.c): one node's operands, attributes, output
 * dtypes and, where one is written, a float64 reference.
 *
 * A generator describes the node's operands in their logical shapes; the
 * driver decides how each reaches the node (a packed graph input, or a
 * Slice with an offset and a step and a Transpose of a bigger one, which
 * the planner lowers to a strided view), whether the output is written
 * into a view of a Concat, draws the data, and runs it.
 */
#ifndef ST_TEST_SWEEP_H
#define ST_TEST_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "onnx_pb.h"
#include "strata.h"

#define KC_MAX_IN 6
#define KC_MAX_RANK 6

typedef struct kc_rng {
    uint64_t s;
} kc_rng;

uint64_t kc_next(kc_rng *r);
int kc_int(kc_rng *r, int lo, int hi);          /* uniform in [lo, hi] */
double kc_unif(kc_rng *r, double lo, double hi);

typedef struct kc_in {
    st_dtype dt;
    int rank;                   /* -1: an omitted optional input */
    int64_t dims[KC_MAX_RANK];
    double lo, hi;              /* the range random data is drawn from */
    bool integral;              /* whole numbers only (comparisons, ints) */
    bool nonzero;               /* no zeros (divisors) */
    bool specials;              /* some NaN and +-Inf (IsNaN, IsInf) */
    bool wide;                  /* uint64: half the values drawn around 2^63 (orders that must be unsigned) */
    bool constant;              /* an initializer (axes, Clip's bounds): packed, never a view */
    const double *values;       /* constant: its values (count = numel) */
} kc_in;

typedef struct kc_case {
    const char *op, *domain;
    int opset;
    int n_in;
    kc_in in[KC_MAX_IN];
    pb_buf attrs;               /* AttributeProtos (field 5 of the NodeProto) */
    st_dtype out_dt;            /* output 0's dtype (the one compared) */
    int n_out;                  /* outputs the node has (the rest are left unread) */
    int out_pick;               /* the output compared (TopK's indices: 1), described by out_dt / out_dims */
    /* The float64 reference of the compared output: in[i] packed in the operand's
     * logical shape, as the dtype holds it; out packed in out_dims. */
    int out_rank;
    int64_t out_dims[KC_MAX_RANK];
    void (*ref)(const struct kc_case *c, const double *const *in, double *out);
    double ref_atol, ref_rtol;  /* for f32; the driver widens them for 16-bit floats */
    double cpu_scale;           /* widens the CPU-vs-device tolerance (long sums) */
    int ip[8];                  /* the generator's parameters, for ref */
    double dp[4];
    char note[96];              /* attributes worth printing with a failure */
} kc_case;

/* Fills c for the entry's op with type-operand dtype dt; false when the
 * op has no generator (or none for dt). */
typedef bool (*kc_gen_fn)(kc_rng *r, st_dtype dt, kc_case *c);
kc_gen_fn kc_generator(const char *domain, const char *op);

int64_t kc_numel(int rank, const int64_t *dims);

#endif
