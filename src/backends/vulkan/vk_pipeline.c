/*
 * vk_pipeline.c — the compute pipelines: one per shader of
 * src/backends/vulkan/shaders, compiled to SPIR-V by glslc at build time
 * and embedded (st_vk_spirv.h, made by cmake/embed_spirv.cmake), made on
 * first use, and a pipeline cache on disk.
 *
 * All pipelines share one layout: a push-descriptor set of ST_VK_MAX_BIND
 * storage buffers (binding 0 the command's parameter block, the others
 * its operands), so a dispatch pushes exactly the (buffer, offset, range)
 * of the views it touches and nothing is allocated per dispatch.
 *
 * The cache: the driver's VkPipelineCache data (whose header carries the
 * vendor, device and pipelineCacheUUID, so the driver itself refuses data
 * of another device or driver) under $XDG_CACHE_HOME/strata/vulkan, else
 * ~/.cache/strata/vulkan (without a home, $TMPDIR or /tmp, under
 * strata-<uid>/vulkan), one file per device name and pipelineCacheUUID
 * and hash of the embedded SPIR-V.  Written to a temporary name and
 * renamed, so a concurrent process never reads half a file.
 * STRATA_VULKAN_CACHE=0 turns it off.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/vulkan/vk_internal.h"
#include "core/cache_dir.h"
#include "core/status.h"
#include "vulkan/st_vk_spirv.h"

const char *const st_vks_names[ST_VKS_COUNT] = {
#define ST_VKS_NAME(n, f) #n,
    ST_VK_SHADER_LIST(ST_VKS_NAME)
#undef ST_VKS_NAME
};

static const int needs[ST_VKS_COUNT] = {
#define ST_VKS_NEEDS(n, f) f,
    ST_VK_SHADER_LIST(ST_VKS_NEEDS)
#undef ST_VKS_NEEDS
};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The cache file's path, or false when caching is off or has no place. */
static bool cache_path(const st_vk_device *d, char *out, size_t cap)
{
    char dir[4000];
    if (!st_cache_dir("vulkan", "STRATA_VULKAN_CACHE", dir, sizeof dir)) return false;
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < ST_VKS_COUNT; i++) h = fnv1a(h, st_vk_spirv[i].code, st_vk_spirv[i].size);
    h = fnv1a(h, d->name, strlen(d->name));
    h = fnv1a(h, d->driver, strlen(d->driver));
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", d->uuid[i]);
    snprintf(out, cap, "%s/%s-%016llx.bin", dir, uuid, (unsigned long long)h);
    return true;
}

_Static_assert(sizeof st_vk_spirv / sizeof *st_vk_spirv == ST_VKS_COUNT, "one SPIR-V module per shader");

st_status st_vk_pipelines_init(st_vk_device *d)
{
    for (int i = 0; i < ST_VKS_COUNT; i++) /* CMakeLists.txt's list in vk_internal.h's order */
        if (strcmp(st_vk_spirv[i].name, st_vks_names[i]) != 0)
            return st_error(ST_ERR_INTERNAL, "vulkan: embedded shader %d is %s, expected %s", i, st_vk_spirv[i].name,
                            st_vks_names[i]);
    VkDescriptorSetLayoutBinding b[ST_VK_MAX_BIND];
    for (int i = 0; i < ST_VK_MAX_BIND; i++)
        b[i] = (VkDescriptorSetLayoutBinding){(uint32_t)i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo sl = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, NULL,
                                          VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR, ST_VK_MAX_BIND, b};
    ST_TRY(st_vk_check(vkCreateDescriptorSetLayout(d->dev, &sl, NULL, &d->set_layout), "vkCreateDescriptorSetLayout"));
    VkPipelineLayoutCreateInfo pl = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 1, &d->set_layout, 0, NULL};
    ST_TRY(st_vk_check(vkCreatePipelineLayout(d->dev, &pl, NULL, &d->layout), "vkCreatePipelineLayout"));
    /* the cache: what the last process saved, when the driver takes it */
    char path[4200];
    void *data = NULL;
    size_t n = 0;
    if (cache_path(d, path, sizeof path)) {
        FILE *f = fopen(path, "rb");
        if (f) {
            if (fseek(f, 0, SEEK_END) == 0) {
                long len = ftell(f);
                if (len > 0 && len < (1l << 30) && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)len))) {
                    if (fread(data, 1, (size_t)len, f) == (size_t)len) n = (size_t)len;
                }
            }
            fclose(f);
        }
    }
    VkPipelineCacheCreateInfo ci = {VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO, NULL, 0, n, n ? data : NULL};
    VkResult r = vkCreatePipelineCache(d->dev, &ci, NULL, &d->cache);
    if (r != VK_SUCCESS && n) { /* refused data: start empty */
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = vkCreatePipelineCache(d->dev, &ci, NULL, &d->cache);
    }
    free(data);
    return st_vk_check(r, "vkCreatePipelineCache");
}

void st_vk_cache_save(st_vk_device *d)
{
    char path[4200], tmp[4300];
    pthread_mutex_lock(&d->pipe_lock);
    bool dirty = d->cache_dirty;
    d->cache_dirty = false;
    pthread_mutex_unlock(&d->pipe_lock);
    if (!dirty || !d->cache || !cache_path(d, path, sizeof path)) return;
    size_t n = 0;
    if (vkGetPipelineCacheData(d->dev, d->cache, &n, NULL) != VK_SUCCESS || !n) return;
    void *data = malloc(n);
    if (!data) return;
    if (vkGetPipelineCacheData(d->dev, d->cache, &n, data) == VK_SUCCESS) {
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        if (f) {
            bool ok = fwrite(data, 1, n, f) == n;
            ok = fclose(f) == 0 && ok;
            if (!ok || rename(tmp, path) != 0) unlink(tmp);
        }
    }
    free(data);
}

st_status st_vk_pipeline(st_vk_device *d, st_vks id, VkPipeline *out)
{
    if (d->pipes[id]) { /* set once, never changed: a racy read sees NULL or the pipeline */
        *out = d->pipes[id];
        return ST_OK;
    }
    if ((needs[id] & ST_VK_NEED_16) && !d->f16)
        return st_error(ST_ERR_INTERNAL, "vulkan: shader %s needs shaderFloat16 and 16-bit storage, which '%s' lacks",
                        st_vks_names[id], d->name);
    if ((needs[id] & ST_VK_NEED_8) && !d->b8)
        return st_error(ST_ERR_INTERNAL, "vulkan: shader %s needs 8-bit storage, which '%s' lacks", st_vks_names[id],
                        d->name);
    if ((needs[id] & ST_VK_NEED_CM) && !d->coopmat)
        return st_error(ST_ERR_INTERNAL, "vulkan: shader %s needs cooperative matrices, which '%s' lacks (%s)", st_vks_names[id],
                        d->name, d->coopmat_why);
    pthread_mutex_lock(&d->pipe_lock);
    st_status r = ST_OK;
    if (!d->pipes[id]) {
        /* SPIR-V words must be 4-byte aligned: copy out of the byte array */
        uint32_t *code = malloc(st_vk_spirv[id].size);
        VkShaderModule m = VK_NULL_HANDLE;
        if (!code) r = st_error(ST_ERR_NOMEM, "out of memory loading shader %s", st_vks_names[id]);
        if (r == ST_OK) {
            memcpy(code, st_vk_spirv[id].code, st_vk_spirv[id].size);
            VkShaderModuleCreateInfo mi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, st_vk_spirv[id].size, code};
            r = st_vk_check(vkCreateShaderModule(d->dev, &mi, NULL, &m), "vkCreateShaderModule");
        }
        if (r == ST_OK) {
            VkComputePipelineCreateInfo pi = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, NULL, 0,
                                              {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0,
                                               VK_SHADER_STAGE_COMPUTE_BIT, m, "main", NULL},
                                              d->layout, VK_NULL_HANDLE, -1};
            VkPipeline p;
            r = st_vk_check(vkCreateComputePipelines(d->dev, d->cache, 1, &pi, NULL, &p), "vkCreateComputePipelines");
            if (r == ST_OK) {
                d->pipes[id] = p;
                d->cache_dirty = true;
            } else {
                st_error_prefix(r, "shader %s: ", st_vks_names[id]);
            }
        }
        if (m) vkDestroyShaderModule(d->dev, m, NULL);
        free(code);
    }
    *out = d->pipes[id];
    pthread_mutex_unlock(&d->pipe_lock);
    return r;
}

void st_vk_pipelines_free(st_vk_device *d)
{
    st_vk_cache_save(d);
    for (int i = 0; i < ST_VKS_COUNT; i++)
        if (d->pipes[i]) vkDestroyPipeline(d->dev, d->pipes[i], NULL);
    if (d->cache) vkDestroyPipelineCache(d->dev, d->cache, NULL);
    if (d->layout) vkDestroyPipelineLayout(d->dev, d->layout, NULL);
    if (d->set_layout) vkDestroyDescriptorSetLayout(d->dev, d->set_layout, NULL);
}
