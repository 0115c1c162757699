/*
 * kernels.h — the Vulkan kernels and the kernel table they make up.
 *
 * Each is `st_status st_vk_<op>(const st_kctx *k)`: k->views are the
 * operands (a view's storage->dev is its st_vk_buffer, view.offset its
 * byte offset: rule 1, bound as buffer + offset), k->dev the command's
 * st_vk_ctx (vk_internal.h).  A kernel only records dispatches through
 * st_vk_dispatch, which places the barriers; it never waits.  Each family
 * file k_<family>.c ends with its table entries (st_vk_k_<family>[]);
 * table.c lists the families.
 */
#ifndef ST_VK_KERNELS_H
#define ST_VK_KERNELS_H

#include "ops/kernel.h"
#include "ops/op.h"

/* A mixed plan's transfer between the host arena and a device storage. */
st_status st_vk_transfer(const st_kctx *k);

extern const st_kernel st_vk_k_elementwise[], st_vk_k_shape[], st_vk_k_linalg[], st_vk_k_conv[], st_vk_k_rows[],
    st_vk_k_resize[];
extern const st_kernel_table st_vk_kernel_table;

#endif
