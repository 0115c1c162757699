/*
 * lower_rownorm.h — GroupNormalization lowered once for every device
 * backend: x and y seen as [N, G, C / G, spatial...] (a split of the
 * channel axis that strides always express), the first `outer` = 2 dims
 * enumerating the normalised rows, with scale and bias per channel
 * (opset 21) or per group (before).  Read by the CUDA launch
 * (backends/cuda/k_rownorm.cu) and the OpenCL arguments
 * (backends/opencl/k_rownorm.c), whose accepts() share the rank check
 * too.  Why here: both host sides built this split, the subtle part of
 * the op, the same way twice.
 */
#ifndef ST_OPS_LOWER_ROWNORM_H
#define ST_OPS_LOWER_ROWNORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* operands of st_lower_rows.s */
enum { ST_LRN_X, ST_LRN_Y, ST_LRN_SCALE, ST_LRN_BIAS, ST_LRN_OPS };

/* One shape of `rank` dims whose first `outer` enumerate the rows; s[k]
 * are operand k's element strides over it (0 where broadcast). */
typedef struct st_lower_rows {
    int rank, outer;
    int64_t n[ST_MAX_RANK];
    int64_t s[ST_LRN_OPS][ST_MAX_RANK];
    int64_t rows, len;             /* the rows, and the elements of one */
} st_lower_rows;

/* k's GroupNormalization (state st_norm_state): inputs x, scale and, when
 * has_bias, bias; output y.  x's rank + 1 must not pass ST_MAX_RANK
 * (st_lrn_accepts_rank). */
void st_lower_group_norm(const st_kctx *k, bool has_bias, st_lower_rows *p);

/* LayerNormalization, InstanceNormalization, GroupNormalization: the
 * rank the row kernels take (InstanceNorm and GroupNorm at least 2, and
 * GroupNorm's split dim within ST_MAX_RANK). */
bool st_lrn_accepts_rank(const st_knode *n, char *why, size_t len);

#ifdef __cplusplus
}
#endif

#endif
