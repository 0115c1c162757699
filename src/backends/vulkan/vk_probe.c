/*
 * vk_probe.c — `strata probe --backend vulkan`: the seed report's alias
 * experiment on this machine's Vulkan device, as a diagnostic.
 *
 * The report found that a second buffer object over a parent's memory is
 * not ordered against work on the parent.  On Vulkan the alias is a
 * second VkBuffer bound to the same VkDeviceMemory, and a runtime that
 * tracks hazards per buffer object puts no barrier between a write
 * through the alias and a read through the parent.  Each run here fills a
 * parent buffer's tail with one dispatch and copies the whole parent out
 * with the next, in one command buffer, and counts the runs where the copy
 * saw stale data:
 *   (a) the write goes through an alias VkBuffer over the tail, no
 *       barrier (a per-buffer tracker sees two unrelated buffers);
 *   (b) the write goes through the parent at a descriptor offset (how
 *       strata binds every view), no barrier;
 *   (c) as (b), with strata's barrier: a VkBufferMemoryBarrier2 over
 *       exactly the tail's bytes.
 * With STRATA_VULKAN_VALIDATION=1 it also counts the synchronization
 * validation messages each row caused.  This is the one place strata
 * makes a second VkBuffer over a storage's memory, on purpose; the probe
 * measures and never fails on a stale count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_coopmat.h"
#include "backends/vulkan/vk_internal.h"
#include "core/status.h"

long st_vk_validation_errors(void);

typedef struct probe {
    st_vk_device *d;
    VkPipeline copy;
    st_vk_buffer *src, *dst, *params;
    VkBuffer parent, alias;
    VkDeviceMemory mem;
    uint32_t n, half;           /* floats; the tail is [n - half, n) */
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkFence fence;
} probe;

/* copy.comp's parameters for n 4-byte elements, both contiguous from 0 */
static void copy_params(int32_t *p, uint32_t n)
{
    memset(p, 0, (1 + 2 * ST_VK_TD) * sizeof *p);
    p[0] = (int32_t)n;
    for (int k = 0; k < 2; k++) {
        int32_t *td = p + 1 + k * ST_VK_TD;
        td[1] = 1;
        td[2] = (int32_t)n;
        td[10] = 1;
    }
}

static void bind_push(probe *p, VkBuffer y, VkDeviceSize yoff, VkDeviceSize yn, VkBuffer x, VkDeviceSize xoff,
                      VkDeviceSize xn, VkDeviceSize poff)
{
    VkDescriptorBufferInfo bi[3] = {{p->params->buf, poff, (1 + 2 * ST_VK_TD) * 4}, {y, yoff, yn}, {x, xoff, xn}};
    VkWriteDescriptorSet w[3];
    for (int i = 0; i < 3; i++)
        w[i] = (VkWriteDescriptorSet){VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, VK_NULL_HANDLE, (uint32_t)i, 0, 1,
                                      VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, NULL, &bi[i], NULL};
    p->d->push_descriptor(p->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->d->layout, 0, 3, w);
}

/* One run of pattern row (0 a, 1 b, 2 c); 1 if the copy saw stale data. */
static int run_once(probe *p, int row, float v, st_status *err)
{
    uint64_t bytes = (uint64_t)p->n * 4, tail = (uint64_t)(p->n - p->half) * 4, hb = (uint64_t)p->half * 4;
    float *s = p->src->map;
    for (uint32_t i = 0; i < p->half; i++) s[i] = v + (float)i;
    memset(p->dst->map, 0, bytes);
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
                                   NULL};
    vkResetCommandBuffer(p->cb, 0);
    vkBeginCommandBuffer(p->cb, &bi);
    /* zero the parent, visible to both dispatches */
    vkCmdFillBuffer(p->cb, p->parent, 0, bytes, 0);
    VkMemoryBarrier2 mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER_2, NULL, VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT | VK_PIPELINE_STAGE_2_HOST_BIT,
                           VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_HOST_WRITE_BIT, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                           VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT};
    VkDependencyInfo di = {VK_STRUCTURE_TYPE_DEPENDENCY_INFO, NULL, 0, 1, &mb, 0, NULL, 0, NULL};
    vkCmdPipelineBarrier2(p->cb, &di);
    vkCmdBindPipeline(p->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->copy);
    /* the write: src -> the tail, through the alias or the parent at an offset */
    if (row == 0) bind_push(p, p->alias, 0, hb, p->src->buf, 0, hb, 0);
    else bind_push(p, p->parent, tail, hb, p->src->buf, 0, hb, 0);
    vkCmdDispatch(p->cb, (p->half + 255) / 256, 1, 1);
    if (row == 2) {
        VkBufferMemoryBarrier2 bb = {VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2, NULL, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                     VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                     VK_ACCESS_2_SHADER_STORAGE_READ_BIT, VK_QUEUE_FAMILY_IGNORED, VK_QUEUE_FAMILY_IGNORED,
                                     p->parent, tail, hb};
        VkDependencyInfo bd = {VK_STRUCTURE_TYPE_DEPENDENCY_INFO, NULL, 0, 0, NULL, 1, &bb, 0, NULL};
        vkCmdPipelineBarrier2(p->cb, &bd);
    }
    /* the read: the whole parent -> dst */
    bind_push(p, p->dst->buf, 0, bytes, p->parent, 0, bytes, 256);
    vkCmdDispatch(p->cb, (p->n + 255) / 256, 1, 1);
    VkMemoryBarrier2 hm = {VK_STRUCTURE_TYPE_MEMORY_BARRIER_2, NULL, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                           VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT, VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT};
    di.pMemoryBarriers = &hm;
    vkCmdPipelineBarrier2(p->cb, &di);
    vkEndCommandBuffer(p->cb);
    VkCommandBufferSubmitInfo cbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO, NULL, p->cb, 0};
    VkSubmitInfo2 si = {VK_STRUCTURE_TYPE_SUBMIT_INFO_2, NULL, 0, 0, NULL, 1, &cbi, 0, NULL};
    vkResetFences(p->d->dev, 1, &p->fence);
    pthread_mutex_lock(&p->d->queue_lock);
    *err = st_vk_check(vkQueueSubmit2(p->d->queue, 1, &si, p->fence), "vkQueueSubmit2 (probe)");
    pthread_mutex_unlock(&p->d->queue_lock);
    if (*err == ST_OK) *err = st_vk_check(vkWaitForFences(p->d->dev, 1, &p->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    if (*err != ST_OK) return -1;
    const float *out = p->dst->map;
    for (uint32_t i = 0; i < p->half; i++)
        if (out[p->n - p->half + i] != v + (float)i) return 1;
    return 0;
}

int st_vk_probe(st_backend *b, int runs)
{
    st_vk_device *d = (st_vk_device *)b;
    probe p = {d};
    p.n = 1u << 20;
    p.half = p.n / 2;
    uint64_t bytes = (uint64_t)p.n * 4;
    st_status r = st_vk_pipeline(d, ST_VKS_copy32, &p.copy);
    if (r == ST_OK) r = st_vk_host_buffer(d, bytes, "probe source", &p.src);
    if (r == ST_OK) r = st_vk_host_buffer(d, bytes, "probe destination", &p.dst);
    if (r == ST_OK) r = st_vk_host_buffer(d, 4096, "probe parameters", &p.params);
    /* the parent and its alias: two VkBuffers over one VkDeviceMemory */
    VkBufferCreateInfo ci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, bytes,
                             VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, VK_SHARING_MODE_EXCLUSIVE,
                             0, NULL};
    if (r == ST_OK) r = st_vk_check(vkCreateBuffer(d->dev, &ci, NULL, &p.parent), "vkCreateBuffer (parent)");
    ci.size = bytes / 2;
    if (r == ST_OK) r = st_vk_check(vkCreateBuffer(d->dev, &ci, NULL, &p.alias), "vkCreateBuffer (alias)");
    VkMemoryRequirements req = {0};
    if (r == ST_OK) {
        vkGetBufferMemoryRequirements(d->dev, p.parent, &req);
        VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, req.size, d->dev_type};
        r = st_vk_check(vkAllocateMemory(d->dev, &ai, NULL, &p.mem), "vkAllocateMemory (probe)");
    }
    if (r == ST_OK) r = st_vk_check(vkBindBufferMemory(d->dev, p.parent, p.mem, 0), "vkBindBufferMemory (parent)");
    if (r == ST_OK) r = st_vk_check(vkBindBufferMemory(d->dev, p.alias, p.mem, bytes / 2), "vkBindBufferMemory (alias)");
    VkCommandPoolCreateInfo pi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL,
                                  VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, d->queue_family};
    if (r == ST_OK) r = st_vk_check(vkCreateCommandPool(d->dev, &pi, NULL, &p.pool), "vkCreateCommandPool");
    if (r == ST_OK) {
        VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, p.pool,
                                          VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        r = st_vk_check(vkAllocateCommandBuffers(d->dev, &ai, &p.cb), "vkAllocateCommandBuffers");
    }
    VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0};
    if (r == ST_OK) r = st_vk_check(vkCreateFence(d->dev, &fi, NULL, &p.fence), "vkCreateFence");
    if (r == ST_OK) {
        copy_params(p.params->map, p.half);
        copy_params((int32_t *)((char *)p.params->map + 256), p.n);
        printf("strata probe on Vulkan '%s' (%s): %d runs of a %u-float write to a buffer's tail, then a copy of the "
               "whole buffer, in one command buffer\n",
               d->name, d->driver, runs, p.half);
        printf("(%s)\n", st_vk_coopmat_state(d));
        static const char *rows[3] = {"(a) write through an alias VkBuffer, no barrier      ",
                                      "(b) write through the parent at an offset, no barrier",
                                      "(c) (b) with strata's range barrier                   "};
        for (int row = 0; row < 3 && r == ST_OK; row++) {
            long before = st_vk_validation_errors();
            int stale = 0;
            for (int k = 0; k < runs && r == ST_OK; k++) {
                int x = run_once(&p, row, (float)(k + 1), &r);
                if (x > 0) stale++;
            }
            long msgs = st_vk_validation_errors() - before;
            if (r == ST_OK)
                printf("%s  stale %d / %d%s\n", rows[row], stale, runs,
                       d->validation ? (msgs ? "  (synchronization validation: reported)" : "  (synchronization validation: silent)")
                                     : "");
        }
        if (r == ST_OK)
            printf("A stale count of 0 means this device happened to order the dispatches; only (c) is ordered by the API.\n");
    }
    if (p.fence) vkDestroyFence(d->dev, p.fence, NULL);
    if (p.pool) vkDestroyCommandPool(d->dev, p.pool, NULL);
    if (p.alias) vkDestroyBuffer(d->dev, p.alias, NULL);
    if (p.parent) vkDestroyBuffer(d->dev, p.parent, NULL);
    if (p.mem) vkFreeMemory(d->dev, p.mem, NULL);
    st_vk_buffer_free(d, p.src);
    st_vk_buffer_free(d, p.dst);
    st_vk_buffer_free(d, p.params);
    return r == ST_OK ? 0 : -1;
}
