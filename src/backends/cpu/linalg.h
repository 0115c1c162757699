/* linalg.h — the CPU's strided f32 GEMM, shared by MatMul, Gemm and Conv. */
#ifndef ST_CPU_LINALG_H
#define ST_CPU_LINALG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/view.h"

/* An f32 matrix: element (i, j) at p[i * rs + j * cs], with cs == 1
 * (row-major) or rs == 1 (column-major), as BLAS takes them. */
typedef struct st_mat {
    const float *p;
    int64_t rows, cols, rs, cs;
} st_mat;

/* Dims rdim and cdim of o (either may be -1 for a unit dim), starting at
 * element offset base_off, as an f32 matrix; packs a copy into *owned when
 * the dtype or strides need it (free it after use). */
st_status st_mat_f32(const st_operand *o, int rdim, int cdim, int64_t base_off, st_mat *m, float **owned);
/* c[m, n] (row-major, ldc) = alpha * op(a) * op(b) + beta * c.
 * ST_ERR_NOMEM when the AVX-512 path cannot allocate its packed blocks:
 * the portable path would give other bits, and a run's result must not
 * depend on how much memory was free. */
st_status st_sgemm(const st_mat *a, bool ta, const st_mat *b, bool tb, float alpha, float beta, float *c, int64_t ldc,
              int64_t m, int64_t n, int64_t k);

#endif
