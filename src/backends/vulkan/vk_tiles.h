/*
 * vk_tiles.h — the tile and split-K choice of Vulkan's tiled Conv and
 * MatMul/Gemm (vk_tiles.c says how it is made).
 */
#ifndef ST_VK_TILES_H
#define ST_VK_TILES_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/vulkan/vk_internal.h"
#include "ops/lower_tiles.h"

#define ST_VK_TILE_K 16 /* K per step: tile.glsl's TK */
#define ST_VK_N_TILES ST_N_TILES

/* conv.comp's two shader variants for each tile of ops/lower_tiles.h's
 * st_tile_shapes (in its order: RM x RN outputs per invocation of a
 * 16 x 16 work-group).  gemm.comp is built with tiles 0 and 4 (64x64,
 * 16x64) only. */
typedef struct st_vk_tile {
    st_vks f32, f16;
} st_vk_tile;

extern const st_vk_tile st_vk_tiles[ST_VK_N_TILES];

#define ST_VK_TILES_ALL 0x1fu
#define ST_VK_TILES_GEMM 0x11u /* 64x64, 16x64 */

/* The tile (index into st_tile_shapes and st_vk_tiles, one of the bits of `allowed`) and the
 * number of K splits (1: none, at most max_splits) for M rows x N columns
 * x K x Z groups or batches on d, for a kernel that walks K k_step at a
 * time (ST_VK_TILE_K, or conv_cm.comp's ST_VK_CM_TK); op ("CONV",
 * "GEMM") names the env knobs that force them. */
void st_vk_tile_choose(const st_vk_device *d, const char *op, unsigned allowed, int k_step, int64_t M, int64_t N, int64_t K,
                       int64_t Z, int64_t max_splits, int *tile, int *splits);
/* The most splits of a problem with `plane` outputs and Z work-group
 * layers besides: the z work-group count, the partial sums' int32 index,
 * the storage-buffer range and 64 MiB of scratch (a split pays off only
 * for few outputs anyway). */
int64_t st_vk_most_splits(const st_vk_device *d, int64_t plane, int64_t Z);
/* STRATA_VULKAN_TILE_LOG=1: print each choice. */
bool st_vk_tile_log(void);

#endif
