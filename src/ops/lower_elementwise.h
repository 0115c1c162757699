/*
 * lower_elementwise.h — the geometry of an elementwise walk, lowered once
 * for every backend: up to ST_LEW_OPS operands (operand 0 the output, the
 * inputs' strides broadcast into its shape) over one shape, with
 *   - the dims ordered by operand 0's strides, largest first (a stable
 *     order: equal strides keep theirs), so a channels-last output is
 *     walked along its contiguous channels;
 *   - unit dims dropped and neighbours merged where they are contiguous
 *     with each other in every operand (st_iter_init's rule), so a dense
 *     tensor is one row;
 *   - the fast-path class the merged shape falls in.
 * Read by CUDA's st_walk (backends/cuda/common.cuh: every elementwise
 * launch, the row kernels of ew_rows.cuh, the strided copies), by the
 * CPU's elementwise kernels (backends/cpu/k_elementwise.c: its rows, the
 * vector Cast, the transposed unary) and by OpenCL's
 * (backends/opencl/k_elementwise.c: its descriptors and grid) and
 * Vulkan's (backends/vulkan/k_elementwise.c).  Why here: each backend
 * broadcast, ordered and merged dims its own way, so a fast path chosen on
 * one device could rest on geometry another device computed differently.
 *
 * Only sizes and strides are read, never data or offsets: an operand's
 * own element offset stays with the backend that binds it.
 */
#ifndef ST_OPS_LOWER_ELEMENTWISE_H
#define ST_OPS_LOWER_ELEMENTWISE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/view.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ST_LEW_OPS 4   /* output, condition and two values: Where */

typedef enum st_lew_class {
    /* one row of n elements at unit stride in every operand: all dense in
     * one layout (any one: two channels-last tensors are), or n == 1 */
    ST_LEW_CONTIGUOUS,
    /* the same, but some inputs (bit k of bcast) are a single element
     * read again for every output element (stride 0) */
    ST_LEW_SCALAR_BROADCAST,
    /* two dims [rows, cols], unit stride along cols in every operand;
     * the inputs of bcast repeat one row (stride 0 along rows: a bias),
     * the rest are dense (stride cols) */
    ST_LEW_ROW_BROADCAST,
    /* anything else: a strided or transposed operand, a broadcast along
     * an inner dim, more than two dims left after merging */
    ST_LEW_GENERAL
} st_lew_class;

typedef struct st_lower_ew {
    int rank;                           /* >= 1 (a single element is [1], strides 0) */
    int nops;
    st_lew_class cls;
    unsigned bcast;                     /* SCALAR / ROW_BROADCAST: bit k, operand k repeats */
    int64_t n;                          /* elements; 0: nothing to do */
    int64_t sizes[ST_MAX_RANK];
    int64_t strides[ST_LEW_OPS][ST_MAX_RANK]; /* elements, per operand */
} st_lower_ew;

/* The walk of nops operands with strides[k] over sizes[0..rank), as they
 * are (already broadcast).  rank <= ST_MAX_RANK, nops <= ST_LEW_OPS. */
void st_lower_ew_make(st_lower_ew *w, int rank, const int64_t *sizes, int nops, const int64_t *const *strides);

/* x's strides in the shape of a rank-yrank tensor it broadcasts to (numpy:
 * right-aligned, 0 on x's size-1 dims and on the dims x lacks). */
void st_lower_ew_bcast(int xrank, const int64_t *xsizes, const int64_t *xstrides, int yrank, int64_t *out);

/* An elementwise node's walk: y (operand 0) and n_in inputs broadcast
 * into y's shape (operands 1..n_in), as kernel operands or as views. */
void st_lower_ew_operands(st_lower_ew *w, const st_operand *y, int n_in, const st_operand *const *in);
void st_lower_ew_views(st_lower_ew *w, const st_view *y, int n_in, const st_view *const *in);

/* An iterator over w's rows (core/view.h); false when w is empty. */
bool st_lower_ew_iter(const st_lower_ew *w, st_iter *it);

#ifdef __cplusplus
}
#endif

#endif
