/*
 * lower_tiles.c — the tile and split-K choice of the GPU backends' tiled
 * GEMMs, one model for OpenCL and Vulkan (each kernel family runs 16 x 16
 * invocations that compute RM x RN outputs each, and can split K into S
 * ranges whose f32 partial sums a second kernel adds in a fixed order).
 *
 * A rough model, deliberately simple: a problem of M rows x N columns x
 * Z groups makes ceil(M/TM) ceil(N/TN) Z S work-groups, of which `slots`
 * (compute units x resident work-groups per unit) run at once.  Its time
 * is the number of waves times one work-group's K walk, (steps + 2) x
 * (16 RM RN + 48): a step's products plus a fixed cost for its loads and
 * barriers; a split adds a second launch and the partial sums' traffic.
 * A 64x64 tile does the most work per load, but a small image with deep
 * K (a 20x20 YOLO head: M 80, N 400, K 2304) makes a dozen of them for a
 * GPU of 132 compute units, each walking 144 steps alone, so smaller
 * tiles and splits win there.  On an H200 this took YOLOv8n b1 on OpenCL
 * from 8.78 to about 2 ms (f32) and on Vulkan from 14.7 to 3.98 (f16).
 */
#include <string.h>

#include "ops/lower_tiles.h"

const st_tile_shape st_tile_shapes[ST_N_TILES] = {
    {4, 4, "64x64"}, {4, 2, "64x32"}, {2, 4, "32x64"}, {2, 2, "32x32"}, {1, 4, "16x64"},
};

int st_tile_index(const char *name)
{
    for (int i = 0; name && i < ST_N_TILES; i++)
        if (strcmp(name, st_tile_shapes[i].name) == 0) return i;
    return -1;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

void st_tile_choose(const st_tile_problem *q, int *tile, int *splits)
{
    int64_t ksteps = cdiv(q->K > 0 ? q->K : 1, q->k_step > 0 ? q->k_step : 16);
    int64_t slots = q->slots > 0 ? q->slots : 1;
    unsigned allowed = q->allowed ? q->allowed : (1u << ST_N_TILES) - 1;
    double best = 0;
    int found = 0;
    *tile = 0;
    *splits = 1;
    for (int t = 0; t < ST_N_TILES; t++) {
        if (!(allowed >> t & 1) || (q->force_tile >= 0 && t != q->force_tile)) continue;
        int rm = st_tile_shapes[t].rm, rn = st_tile_shapes[t].rn;
        int64_t base = cdiv(q->M, 16 * rm) * cdiv(q->N, 16 * rn) * q->Z;
        /* a split walks at least 4 steps (64 of K), 16 splits at most */
        int64_t s0 = 1, s1 = ksteps / 4 < 16 ? ksteps / 4 : 16;
        if (s1 < 1) s1 = 1;
        if (q->force_split > 0) s0 = s1 = q->force_split < ksteps ? q->force_split : ksteps;
        if (q->max_splits > 0 && s1 > q->max_splits) s1 = q->max_splits;
        if (s0 > s1) s0 = s1;
        for (int64_t s = s0; s <= s1; s++) {
            int64_t steps = cdiv(ksteps, s), se = cdiv(ksteps, steps); /* no empty split */
            double cost = (double)cdiv(base * se, slots) * (double)(steps + 2) * (16.0 * rm * rn + 48);
            if (se > 1) cost += 2000 + (double)se * (double)(q->M * q->N * q->Z) / 500;
            if (!found || cost < best) {
                found = 1;
                best = cost;
                *tile = t;
                *splits = (int)se;
            }
        }
    }
}
