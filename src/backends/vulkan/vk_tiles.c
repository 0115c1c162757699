/*
 * vk_tiles.c — the tile and split-K choice of Vulkan's two tiled GEMMs,
 * Conv (conv.comp) and MatMul/Gemm (gemm.comp), the model OpenCL's
 * cl_tiles.c uses, on Vulkan's numbers.
 *
 * conv.comp (gemm.comp alike, with the 64x64 and 16x64 tiles only) runs 16 x 16 invocations that compute RM x RN outputs each,
 * so a tile is (16 RM) rows (output channels) x (16 RN) columns (output
 * positions), and K can be split into S ranges whose f32 partial sums
 * conv_splitk.comp (gemm_splitk.comp) adds in a fixed order.  A problem of M rows x N
 * columns x Z groups makes ceil(M/TM) ceil(N/TN) Z S work-groups, of
 * which `slots` = compute units x ST_VK_FILL run at once.  Its time is
 * the number of waves times one work-group's K walk, (steps + 2) x
 * (16 RM RN + 48): a step's products plus a fixed cost for its loads and
 * barriers; a split adds a second dispatch and the partial sums' traffic.
 * A 64x64 tile does the most work per load, but a small image with deep
 * K (YOLOv8's 20x20 head: M 80, N 400, K 2304) makes a dozen of them for
 * a GPU of 132 SMs, each walking 144 steps alone; smaller tiles and
 * splits give every SM work.
 *
 * Compute units: vulkan.c's d->cus (NVIDIA's SM count, a CPU device's
 * cores, else an assumed 128).  ST_VK_FILL is 4: a work-group is 256 invocations (8 warps)
 * with about 8.5 KB of shared memory, so an SM of NVIDIA's (64 warps,
 * 228 KB) holds several, and 4 a unit keeps the waves from being counted
 * as full while the device has room for more.
 *
 * Knobs, so that a GPU run can A/B the choice: STRATA_VULKAN_CONV_TILE
 * (64x64, 64x32, 32x64, 32x32, 16x64) and STRATA_VULKAN_CONV_SPLITK (a
 * count) force either part for Conv, STRATA_VULKAN_GEMM_TILE (64x64,
 * 16x64) and STRATA_VULKAN_GEMM_SPLITK for MatMul and Gemm;
 * STRATA_VULKAN_TILE_LOG=1 prints each choice to stderr when it is
 * recorded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_tiles.h"

#define ST_VK_FILL 4

const st_vk_tile st_vk_tiles[ST_VK_N_TILES] = {
    {4, 4, "64x64", ST_VKS_conv_f32, ST_VKS_conv_f16},
    {4, 2, "64x32", ST_VKS_conv_t64x32_f32, ST_VKS_conv_t64x32_f16},
    {2, 4, "32x64", ST_VKS_conv_t32x64_f32, ST_VKS_conv_t32x64_f16},
    {2, 2, "32x32", ST_VKS_conv_t32x32_f32, ST_VKS_conv_t32x32_f16},
    {1, 4, "16x64", ST_VKS_conv_s_f32, ST_VKS_conv_s_f16},
};

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

void st_vk_tile_choose(const st_vk_device *d, const char *op, unsigned allowed, int64_t M, int64_t N, int64_t K, int64_t Z,
                       int64_t max_splits, int *tile, int *splits)
{
    char name[64];
    snprintf(name, sizeof name, "STRATA_VULKAN_%s_TILE", op);
    const char *ft = getenv(name);
    snprintf(name, sizeof name, "STRATA_VULKAN_%s_SPLITK", op);
    const char *fs = getenv(name);
    int force_tile = -1;
    for (int t = 0; ft && t < ST_VK_N_TILES; t++)
        if (strcmp(ft, st_vk_tiles[t].name) == 0 && (allowed >> t & 1)) force_tile = t;
    int64_t force_split = fs ? atoll(fs) : 0;
    int64_t ksteps = cdiv(K > 0 ? K : 1, ST_VK_TILE_K);
    int64_t slots = (int64_t)(d->cus > 0 ? d->cus : 128) * ST_VK_FILL;
    if (max_splits < 1) max_splits = 1;
    double best = 0;
    bool first = true;
    *tile = 0;
    *splits = 1;
    for (int t = 0; t < ST_VK_N_TILES; t++) {
        if (!(allowed >> t & 1) || (force_tile >= 0 && t != force_tile)) continue;
        int rm = st_vk_tiles[t].rm, rn = st_vk_tiles[t].rn;
        int64_t base = cdiv(M, 16 * rm) * cdiv(N, 16 * rn) * Z;
        /* a split walks at least 4 steps (64 of K), 16 splits at most */
        int64_t s0 = 1, s1 = ksteps / 4 < 16 ? ksteps / 4 : 16;
        if (s1 < 1) s1 = 1;
        if (force_split > 0) s0 = s1 = force_split < ksteps ? force_split : ksteps;
        if (s1 > max_splits) s1 = max_splits;
        if (s0 > s1) s0 = s1;
        for (int64_t s = s0; s <= s1; s++) {
            int64_t steps = cdiv(ksteps, s), se = cdiv(ksteps, steps); /* no empty split */
            double cost = (double)cdiv(base * se, slots) * (double)(steps + 2) * (16.0 * rm * rn + 48);
            if (se > 1) cost += 2000 + (double)se * (double)(M * N * Z) / 500;
            if (first || cost < best) {
                first = false;
                best = cost;
                *tile = t;
                *splits = (int)se;
            }
        }
    }
}

int64_t st_vk_most_splits(const st_vk_device *d, int64_t plane, int64_t Z)
{
    if (plane < 1) plane = 1;
    int64_t most = (int64_t)d->max_groups[2] / (Z > 0 ? Z : 1);
    int64_t lim[3] = {INT32_MAX / plane, (int64_t)(d->max_range / 4) / plane, ((int64_t)64 << 20) / 4 / plane};
    for (int i = 0; i < 3; i++)
        if (lim[i] < most) most = lim[i];
    return most > 1 ? most : 1;
}

bool st_vk_tile_log(void)
{
    const char *e = getenv("STRATA_VULKAN_TILE_LOG");
    return e && atoi(e) > 0;
}
