/*
 * table.c — the Vulkan backend's kernel table: one entry list per family
 * file.  An op with no entry here runs on the CPU in a mixed plan
 * (plan/place.c), or is refused with --no-fallback.  No caps: the passes
 * that rewrite plans for other backends' fused kernels leave Vulkan's
 * graphs as written.
 */
#include "backends/vulkan/kernels.h"

static const st_kernel *const FAMILIES[] = {
    st_vk_k_elementwise, st_vk_k_shape, st_vk_k_linalg, st_vk_k_conv, st_vk_k_rows, st_vk_k_resize,
};

const st_kernel_table st_vk_kernel_table = {
    "vulkan",
    0,
    (int)(sizeof FAMILIES / sizeof *FAMILIES),
    FAMILIES,
};
