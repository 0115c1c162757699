/*
 * vk_coopmat.h — Vulkan's tensor-core path for f16 convs: whether the
 * device can run conv_cm.comp (cooperative matrices through
 * VK_NV_cooperative_matrix) and which convs take it (vk_coopmat.c says
 * how both are decided).
 */
#ifndef ST_VK_COOPMAT_H
#define ST_VK_COOPMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "backends/vulkan/vk_internal.h"

/* conv_cm.comp's block: TM x TN outputs a work-group, K TK a step */
#define ST_VK_CM_TM 64
#define ST_VK_CM_TN 64
#define ST_VK_CM_TK 32

/* What conv_cm.comp runs as on a device. */
typedef enum st_vk_cm_mode {
    ST_VK_CM_OFF,      /* not at all: every conv takes conv.comp */
    ST_VK_CM_ON,       /* on cooperative matrices */
    ST_VK_CM_EMULATED, /* STRATA_VULKAN_COOPMAT=emulate: conv_cm_emu, scalar products in place of the
                          fragments, for testing the rest of the shader where there are none */
} st_vk_cm_mode;

/* ST_VK_CM_ON when phys can run conv_cm.comp: VK_NV_cooperative_matrix
 * with its feature, a 16x16x16 or 16x8x16 f16 x f16 + f32 subgroup shape
 * in compute shaders (*frag_n: 16 or 8, which build runs), the SPIR-V's other needs (f16 = shaderFloat16 and 16-bit
 * storage, the Vulkan memory model, subgroups of 32 with gl_SubgroupID,
 * the shared memory), and STRATA_VULKAN_COOPMAT neither 0 nor emulate.
 * Then device creation must enable the extension, the cooperativeMatrix
 * feature and vulkanMemoryModel.  Otherwise why says what is missing. */
st_vk_cm_mode st_vk_coopmat_mode(VkInstance inst, VkPhysicalDevice phys, bool f16, uint32_t *frag_n, char *why, size_t cap);

/* NULL when a conv of mg output channels a group and depth K in the
 * given precision takes conv_cm.comp on d, else why not. */
const char *st_vk_coopmat_refusal(const st_vk_device *d, bool f16, int32_t mg, int64_t K);

/* One line on whether d's f16 convs take conv_cm.comp, and why not
 * (STRATA_VULKAN_TILE_LOG, strata probe). */
const char *st_vk_coopmat_state(st_vk_device *d);

#endif
