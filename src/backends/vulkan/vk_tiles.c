/*
 * vk_tiles.c — the tile and split-K choice of Vulkan's two tiled GEMMs,
 * Conv (conv.comp) and MatMul/Gemm (gemm.comp): ops/lower_tiles.c's model
 * (OpenCL's too) on Vulkan's numbers, and the shader built for each tile.
 *
 * conv.comp (gemm.comp alike, with the 64x64 and 16x64 tiles only) runs
 * 16 x 16 invocations that compute RM x RN outputs each, and K can be
 * split into S ranges whose f32 partial sums conv_splitk.comp
 * (gemm_splitk.comp) adds in a fixed order.
 *
 * Compute units: vulkan.c's d->cus (NVIDIA's SM count, a CPU device's
 * cores, else an assumed 128).  ST_VK_FILL is 4: a work-group is 256
 * invocations (8 warps) with about 8.5 KB of shared memory, so an SM of
 * NVIDIA's (64 warps, 228 KB) holds several, and 4 a unit keeps the
 * waves from being counted as full while the device has room for more.
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
    {ST_VKS_conv_f32, ST_VKS_conv_f16},                 /* 64x64 */
    {ST_VKS_conv_t64x32_f32, ST_VKS_conv_t64x32_f16},   /* 64x32 */
    {ST_VKS_conv_t32x64_f32, ST_VKS_conv_t32x64_f16},   /* 32x64 */
    {ST_VKS_conv_t32x32_f32, ST_VKS_conv_t32x32_f16},   /* 32x32 */
    {ST_VKS_conv_s_f32, ST_VKS_conv_s_f16},             /* 16x64 */
};

void st_vk_tile_choose(const st_vk_device *d, const char *op, unsigned allowed, int k_step, int64_t M, int64_t N, int64_t K,
                       int64_t Z, int64_t max_splits, int *tile, int *splits)
{
    char name[64];
    snprintf(name, sizeof name, "STRATA_VULKAN_%s_TILE", op);
    int force_tile = st_tile_index(getenv(name));
    if (force_tile >= 0 && !(allowed >> force_tile & 1)) force_tile = -1;
    snprintf(name, sizeof name, "STRATA_VULKAN_%s_SPLITK", op);
    const char *fs = getenv(name);
    st_tile_problem q = {M, N, K, Z, k_step, (int64_t)(d->cus > 0 ? d->cus : 128) * ST_VK_FILL, allowed, force_tile,
                         fs ? atoll(fs) : 0, max_splits < 1 ? 1 : max_splits};
    st_tile_choose(&q, tile, splits);
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
