/*
 * vk_coopmat.c — when Vulkan's f16 convs run on tensor cores
 * (conv_cm.comp, cooperative matrices through VK_NV_cooperative_matrix).
 *
 * The device: glslang marks conv_cm.comp's SPIR-V with the capabilities
 * CooperativeMatrixNV, Float16, StorageBuffer16BitAccess,
 * GroupNonUniform (gl_SubgroupID) and VulkanMemoryModel (its cooperative
 * loads and stores are non-private workgroup accesses), so the device
 * must have all of them, and a shape the shader is built for, 16x16x16
 * or 16x8x16 (conv_cm_n8) with f16 A and B and f32 C and D at subgroup
 * scope, in compute shaders.  The shader splits its 128 invocations into four subgroups of
 * 32 (each owns a 32 x 32 quarter of the block), so the subgroup size
 * must be 32, as NVIDIA's is.  A device without any of it (lavapipe,
 * AMD's and Intel's drivers, which have only VK_KHR_cooperative_matrix)
 * never creates the pipeline: a pipeline with a capability the device
 * lacks is invalid.  The KHR extension would widen this to those drivers
 * once Debian's glslang compiles GL_KHR_cooperative_matrix.
 *
 * The convs: f16, at least 16 output channels a group and a K of at
 * least 16.  Below that, more than half of each 16 x 16 fragment (its
 * rows, or its depth) would be padding, such convs are few and small
 * (a detector's last 1x1 over a handful of classes), and conv.comp's
 * scalar tile already fits them (its 16-row tile).  Depthwise-like convs
 * (fewer than 8 channels a group) keep conv_direct.comp.
 *
 * Opt-in for now: the tensor-core build has never run on hardware that
 * has cooperative matrices (the 2026-12-04 session lost its last H200
 * call), so unset or 0 keeps every conv on conv.comp; 1 turns the path
 * on where the device has it (n8: in 16x8x16 fragments where the driver
 * lists both, to test that build); emulate runs
 * conv_cm.comp's emulated build (scalar products in place of the
 * fragments) on any device with f16, so that CI on lavapipe tests the
 * shader's staging, epilogue and split.
 * STRATA_VULKAN_TILE_LOG=1 prints once whether it is on and why not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_coopmat.h"

/* conv_cm.comp's shared memory: the two f16 slices and the f32 tile,
 * with their rows' padding (SA_LD, SB_LD, SC_LD) */
#define CM_SHARED (ST_VK_CM_TM * (ST_VK_CM_TK + 8) * 2 + ST_VK_CM_TK * (ST_VK_CM_TN + 8) * 2 + ST_VK_CM_TM * (ST_VK_CM_TN + 4) * 4)

/* why = msg; 0: no fragment shape, the path is off */
static uint32_t refuse(char *why, size_t cap, const char *msg)
{
    snprintf(why, cap, "%s", msg);
    return 0;
}

static const char *type_name(VkComponentTypeNV t)
{
    switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_NV: return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_NV: return "f32";
    case VK_COMPONENT_TYPE_SINT8_NV: return "s8";
    case VK_COMPONENT_TYPE_SINT32_NV: return "s32";
    default: return "other";
    }
}

/* Whether shape pr is MxNxK = 16 x n x 16 with f16 A and B and f32 C and
 * D at subgroup scope. */
static bool is_shape(const VkCooperativeMatrixPropertiesNV *pr, uint32_t n)
{
    return pr->MSize == 16 && pr->NSize == n && pr->KSize == 16 && pr->AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
           pr->BType == VK_COMPONENT_TYPE_FLOAT16_NV && pr->CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
           pr->DType == VK_COMPONENT_TYPE_FLOAT32_NV && pr->scope == VK_SCOPE_SUBGROUP_NV;
}

/* The N of the fragment shape conv_cm.comp is built for that the driver
 * lists, N = first (16 or 8) if it does, else the other (the NV
 * extension's first drivers listed only N = 8); 0 when neither, and then
 * why names the shapes it has. */
static uint32_t shape_n(VkInstance inst, VkPhysicalDevice phys, uint32_t first, char *why, size_t cap)
{
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vkGetInstanceProcAddr(
            inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    uint32_t n = 0;
    if (!get || get(phys, &n, NULL) != VK_SUCCESS || n == 0) return refuse(why, cap, "the driver lists no cooperative matrix shape");
    VkCooperativeMatrixPropertiesNV *pr = calloc(n, sizeof *pr);
    if (!pr) return refuse(why, cap, "out of memory listing cooperative matrix shapes");
    for (uint32_t i = 0; i < n; i++) pr[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    uint32_t found = 0, order[2] = {first, first == 16 ? 8 : 16};
    if (get(phys, &n, pr) == VK_SUCCESS)
        for (int k = 0; k < 2 && !found; k++)
            for (uint32_t i = 0; i < n && !found; i++)
                if (is_shape(&pr[i], order[k])) found = order[k];
    if (!found) {
        int k = snprintf(why, cap, "no 16x16x16 or 16x8x16 f16*f16+f32 subgroup shape; the driver has");
        for (uint32_t i = 0; i < n && k > 0 && (size_t)k < cap; i++)
            k += snprintf(why + k, cap - (size_t)k, " %ux%ux%u %s*%s+%s%s", pr[i].MSize, pr[i].NSize, pr[i].KSize,
                          type_name(pr[i].AType), type_name(pr[i].BType), type_name(pr[i].CType),
                          pr[i].scope == VK_SCOPE_SUBGROUP_NV ? "" : " (not subgroup)");
    }
    free(pr);
    return found;
}

/* The fragment N (16 or 8) when the device has everything conv_cm.comp
 * declares and uses, else 0. */
static uint32_t supported(VkInstance inst, VkPhysicalDevice phys, uint32_t first, char *why, size_t cap)
{
    if (!st_vk_device_ext(phys, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) return refuse(why, cap, "no VK_NV_cooperative_matrix");
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, NULL};
    VkPhysicalDeviceVulkan12Features f12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &cm};
    VkPhysicalDeviceFeatures2 f = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12};
    vkGetPhysicalDeviceFeatures2(phys, &f);
    if (!cm.cooperativeMatrix) return refuse(why, cap, "the cooperativeMatrix feature is off");
    if (!f12.vulkanMemoryModel) return refuse(why, cap, "no vulkanMemoryModel (conv_cm.comp's SPIR-V declares it)");
    VkPhysicalDeviceCooperativeMatrixPropertiesNV cp = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV, NULL};
    VkPhysicalDeviceVulkan11Properties p11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES, &cp};
    VkPhysicalDeviceProperties2 p = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &p11};
    vkGetPhysicalDeviceProperties2(phys, &p);
    if (!(cp.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT))
        return refuse(why, cap, "no cooperative matrices in compute shaders");
    if (p11.subgroupSize != 32) {
        snprintf(why, cap, "subgroups of %u (the shader's four subgroups need 32)", p11.subgroupSize);
        return 0;
    }
    if (!(p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ||
        !(p11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT))
        return refuse(why, cap, "no basic subgroup operations in compute shaders (gl_SubgroupID)");
    if (p.properties.limits.maxComputeSharedMemorySize < CM_SHARED) {
        snprintf(why, cap, "%u bytes of shared memory, the shader needs %d", p.properties.limits.maxComputeSharedMemorySize,
                 CM_SHARED);
        return 0;
    }
    return shape_n(inst, phys, first, why, cap);
}

st_vk_cm_mode st_vk_coopmat_mode(VkInstance inst, VkPhysicalDevice phys, bool f16, uint32_t *frag_n, char *why, size_t cap)
{
    *frag_n = 0;
    const char *env = getenv("STRATA_VULKAN_COOPMAT");
    /* opt-in until it has run on a GPU with cooperative matrices (see the
     * header): lavapipe has none, and no H200 call reached it */
    const char *off = !env || strcmp(env, "0") == 0 ? "not yet checked on hardware: STRATA_VULKAN_COOPMAT=1 turns it on"
                      : !f16 ? "no shaderFloat16 and 16-bit storage" : NULL;
    if (off) {
        snprintf(why, cap, "%s", off);
        return ST_VK_CM_OFF;
    }
    if (env && strcmp(env, "emulate") == 0) {
        snprintf(why, cap, "STRATA_VULKAN_COOPMAT=emulate: conv_cm.comp with scalar products (a test of its indexing)");
        return ST_VK_CM_EMULATED;
    }
    *frag_n = supported(inst, phys, env && strcmp(env, "n8") == 0 ? 8 : 16, why, cap);
    return *frag_n ? ST_VK_CM_ON : ST_VK_CM_OFF;
}

const char *st_vk_coopmat_refusal(const st_vk_device *d, bool f16, int32_t mg, int64_t K)
{
    if (!d->coopmat && !d->coopmat_emu) return "off on this device";
    if (!f16) return "f32";
    if (mg < 16) return "fewer than 16 output channels a group";
    if (K < 16) return "K below 16";
    return NULL;
}

const char *st_vk_coopmat_state(st_vk_device *d)
{
    static _Thread_local char line[400];
    if (d->coopmat)
        snprintf(line, sizeof line,
                 "cooperative matrices on (16x%ux16 fragments): f16 convs of 16+ channels a group and K >= 16 take conv_cm.comp",
                 d->coopmat_n);
    else
        snprintf(line, sizeof line, "cooperative matrices off: %s", d->coopmat_why);
    return line;
}
