/*
 * lower_tiles.h — the tile and split-K choice of the GPU backends' tiled
 * GEMMs (OpenCL's conv_gemm.cl and gemm.cl, Vulkan's conv.comp and
 * gemm.comp), made once here from the problem's sizes and the device's
 * compute units (lower_tiles.c says how).
 */
#ifndef ST_OPS_LOWER_TILES_H
#define ST_OPS_LOWER_TILES_H

#include <stdint.h>

/* The tiles both backends build: RM x RN outputs per invocation of a
 * 16 x 16 work-group, so 16 RM rows x 16 RN columns.  A backend's own
 * table of kernels lists them in this order. */
#define ST_N_TILES 5
typedef struct st_tile_shape {
    int rm, rn;
    const char *name; /* "64x64", "64x32", "32x64", "32x32", "16x64" */
} st_tile_shape;
extern const st_tile_shape st_tile_shapes[ST_N_TILES];

/* The index of the tile called `name`, or -1. */
int st_tile_index(const char *name);

typedef struct st_tile_problem {
    int64_t M, N, K, Z;     /* rows x columns of the product, its K, groups or batches */
    int k_step;             /* K per step of the kernels' walk (their TK) */
    int64_t slots;          /* work-groups resident at once: compute units x fill */
    unsigned allowed;       /* bit t: tile t is built (0: all) */
    int force_tile;         /* -1, or the tile to take */
    int64_t force_split;    /* 0, or the splits to take */
    int64_t max_splits;     /* the most splits the backend can hold (0: no limit) */
} st_tile_problem;

/* The tile (an index of st_tile_shapes) and the number of K splits (1:
 * none) with the lowest modelled time. */
void st_tile_choose(const st_tile_problem *q, int *tile, int *splits);

#endif
