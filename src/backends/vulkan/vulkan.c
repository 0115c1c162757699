/*
 * vulkan.c — the Vulkan backend: choosing a device, storages, and host <->
 * storage copies.
 *
 * Device choice: every physical device of Vulkan 1.3 with
 * VK_KHR_push_descriptor and a compute queue, discrete GPUs first, then
 * integrated, virtual and CPU devices (lavapipe); session option `device`
 * indexes that list, STRATA_VULKAN_DEVICE=D picks device D of the
 * driver's own order.
 *
 * Rule 1: each storage is exactly one VkBuffer bound to its own
 * VkDeviceMemory at offset 0 (vk_internal.h says how views are bound).
 * Rule 2: a VkBuffer is a handle, so each storage also gets a range in a
 * synthetic, process-wide Vulkan address space (disjoint ranges with a
 * guard gap), registered in the address index like OpenCL's.
 *
 * Host access (rule 4): the caller (exec/access.c) has already waited for
 * the timeline-semaphore values of the commands whose footprints overlap
 * the bytes.  Where device memory is host-visible and coherent (lavapipe,
 * integrated GPUs) the copy maps only that byte range of the storage's
 * memory; elsewhere it goes through a staging buffer and a copy command
 * on the device's queue, waited for with a fence.  The host arena of a
 * mixed plan (host_alloc) is a VkBuffer in host-visible coherent memory,
 * mapped for its lifetime, so CPU kernels read and write it in place and
 * transfers are vkCmdCopyBuffer between two buffers of the DAG.
 *
 * Validation: STRATA_VULKAN_VALIDATION=1 loads VK_LAYER_KHRONOS_validation
 * with synchronization validation on; every message it sends is printed
 * ("vulkan validation: ...") and counted, and a run that saw one fails
 * (st_vk_validation_errors), so a test cannot pass over a message.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/vulkan/vk_internal.h"
#include "backends/vulkan/kernels.h"
#include "backends/vulkan/vk_coopmat.h"
#include "backends/vulkan/vk_tiles.h"
#include "core/fault.h"
#include "core/status.h"

#define ST_VK_MAX_DEVICES 16
#define ST_VK_ADDR_BASE ((uint64_t)3 << 44)
#define ST_VK_ADDR_GAP ((uint64_t)1 << 16)

static st_vk_device *devices[ST_VK_MAX_DEVICES];
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t next_addr = ST_VK_ADDR_BASE;
static atomic_long validation_messages;
static st_backend_kind vk_kind; /* the registry's number, set by open */

const char *st_vk_result_name(VkResult r)
{
    switch (r) {
#define E(x) \
    case x: return #x;
        E(VK_SUCCESS) E(VK_NOT_READY) E(VK_TIMEOUT) E(VK_INCOMPLETE) E(VK_ERROR_OUT_OF_HOST_MEMORY)
        E(VK_ERROR_OUT_OF_DEVICE_MEMORY) E(VK_ERROR_INITIALIZATION_FAILED) E(VK_ERROR_DEVICE_LOST)
        E(VK_ERROR_MEMORY_MAP_FAILED) E(VK_ERROR_LAYER_NOT_PRESENT) E(VK_ERROR_EXTENSION_NOT_PRESENT)
        E(VK_ERROR_FEATURE_NOT_PRESENT) E(VK_ERROR_INCOMPATIBLE_DRIVER) E(VK_ERROR_TOO_MANY_OBJECTS)
        E(VK_ERROR_FORMAT_NOT_SUPPORTED) E(VK_ERROR_UNKNOWN) E(VK_ERROR_INVALID_SHADER_NV)
#undef E
    default: break;
    }
    return "VK_ERROR_OTHER";
}

st_status st_vk_check(VkResult r, const char *what)
{
    if (r == VK_SUCCESS) return ST_OK;
    st_status code = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? ST_ERR_NOMEM : ST_ERR_BACKEND;
    return st_error(code, "vulkan: %s: %s (%d)", what, st_vk_result_name(r), (int)r);
}

long st_vk_validation_errors(void) { return atomic_load(&validation_messages); }

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)type;
    (void)user;
    if (sev < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
    atomic_fetch_add(&validation_messages, 1);
    fprintf(stderr, "vulkan validation: %s\n", data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

static st_vk_device *vd(st_backend *b) { return (st_vk_device *)b; }

/* ---- storages ---- */

void st_vk_buffer_free(st_vk_device *d, st_vk_buffer *vb)
{
    if (!vb) return;
    if (vb->map) vkUnmapMemory(d->dev, vb->mem);
    if (vb->buf) vkDestroyBuffer(d->dev, vb->buf, NULL);
    if (vb->mem) vkFreeMemory(d->dev, vb->mem, NULL);
    free(vb);
}

/* A buffer of size bytes in memory type `type`, mapped when map. */
static st_status buffer_make(st_vk_device *d, uint64_t size, uint32_t type, bool map, const char *label, st_vk_buffer **out)
{
    st_vk_buffer *vb = calloc(1, sizeof *vb);
    if (!vb) return st_error(ST_ERR_NOMEM, "out of memory allocating storage '%s'", label);
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, (size + 3) & ~(uint64_t)3,
                             VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
    VkResult r = st_fault_hit(ST_FAULT_DEVICE_ALLOC, label, size) ? VK_ERROR_OUT_OF_DEVICE_MEMORY
                                                                   : vkCreateBuffer(d->dev, &bi, NULL, &vb->buf);
    VkMemoryRequirements req = {0};
    if (r == VK_SUCCESS) {
        vkGetBufferMemoryRequirements(d->dev, vb->buf, &req);
        if (!(req.memoryTypeBits & (1u << type))) r = VK_ERROR_FEATURE_NOT_PRESENT;
    }
    if (r == VK_SUCCESS) {
        VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, req.size, type};
        r = vkAllocateMemory(d->dev, &ai, NULL, &vb->mem);
    }
    if (r == VK_SUCCESS) r = vkBindBufferMemory(d->dev, vb->buf, vb->mem, 0);
    if (r == VK_SUCCESS && map) r = vkMapMemory(d->dev, vb->mem, 0, VK_WHOLE_SIZE, 0, &vb->map);
    if (r != VK_SUCCESS) {
        st_vk_buffer_free(d, vb);
        bool nomem = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
        return st_error(nomem ? ST_ERR_NOMEM : ST_ERR_BACKEND, "vulkan: cannot allocate %llu bytes for %s on '%s': %s (%d)",
                        (unsigned long long)size, label, d->name, st_vk_result_name(r), (int)r);
    }
    *out = vb;
    return ST_OK;
}

st_status st_vk_host_buffer(st_vk_device *d, uint64_t size, const char *label, st_vk_buffer **out)
{
    return buffer_make(d, size, d->host_type, true, label, out);
}

static void storage_free(st_backend *b, st_storage *s)
{
    st_storage_index_remove(s);
    st_vk_buffer_free(vd(b), s->dev);
    free(s);
}

static st_status storage_new(st_backend *b, uint64_t size, const char *label, bool host, st_storage **out)
{
    st_vk_device *d = vd(b);
    st_storage *s = calloc(1, sizeof *s);
    if (!s) return st_error(ST_ERR_NOMEM, "out of memory allocating storage '%s'", label);
    st_vk_buffer *vb = NULL;
    if (size) {
        st_status r = buffer_make(d, size, host ? d->host_type : d->dev_type, host, label, &vb);
        if (r != ST_OK) {
            free(s);
            return r;
        }
    }
    atomic_init(&s->refs, 1);
    s->backend = b;
    s->free_fn = storage_free;
    s->space = b->kind;
    s->size = size;
    s->dev = vb;
    s->host = host && vb ? vb->map : NULL;
    s->addr = atomic_fetch_add(&next_addr, (size + ST_VK_ADDR_GAP - 1) / ST_VK_ADDR_GAP * ST_VK_ADDR_GAP + ST_VK_ADDR_GAP);
    snprintf(s->label, sizeof s->label, "%s", label);
    st_storage_index_add(s);
    *out = s;
    return ST_OK;
}

static st_status storage_alloc(st_backend *b, uint64_t size, const char *label, st_storage **out)
{
    return storage_new(b, size, label, false, out);
}

static st_status host_alloc(st_backend *b, uint64_t size, const char *label, st_storage **out)
{
    return storage_new(b, size, label, true, out);
}

static st_status range_ok(const st_storage *s, uint64_t off, uint64_t n, const char *what)
{
    if (off > s->size || n > s->size - off)
        return st_error(ST_ERR_INTERNAL, "vulkan: %s of %llu bytes at %llu outside storage '%s' (%llu bytes)", what,
                        (unsigned long long)n, (unsigned long long)off, s->label, (unsigned long long)s->size);
    return ST_OK;
}

/* One copy between a storage's range and a staging buffer on the queue,
 * waited for (device memory the host cannot map). */
static st_status staged_copy(st_vk_device *d, st_storage *s, uint64_t off, st_vk_buffer *stage, uint64_t n, bool to_stage)
{
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkCommandPoolCreateInfo pi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                  d->queue_family};
    st_status r = st_vk_check(vkCreateCommandPool(d->dev, &pi, NULL, &pool), "vkCreateCommandPool");
    if (r == ST_OK) {
        VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool,
                                          VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        r = st_vk_check(vkAllocateCommandBuffers(d->dev, &ai, &cb), "vkAllocateCommandBuffers");
    }
    if (r == ST_OK) {
        VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0};
        r = st_vk_check(vkCreateFence(d->dev, &fi, NULL, &fence), "vkCreateFence");
    }
    if (r == ST_OK) {
        VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                       VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
        vkBeginCommandBuffer(cb, &bi);
        VkBufferCopy c = {to_stage ? off : 0, to_stage ? 0 : off, n};
        VkBuffer sb = ((st_vk_buffer *)s->dev)->buf;
        vkCmdCopyBuffer(cb, to_stage ? sb : stage->buf, to_stage ? stage->buf : sb, 1, &c);
        VkMemoryBarrier2 mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER_2, NULL, VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
                               VK_ACCESS_2_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT};
        VkDependencyInfo di = {VK_STRUCTURE_TYPE_DEPENDENCY_INFO, NULL, 0, 1, &mb, 0, NULL, 0, NULL};
        vkCmdPipelineBarrier2(cb, &di);
        r = st_vk_check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    }
    if (r == ST_OK) {
        VkCommandBufferSubmitInfo cbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO, NULL, cb, 0};
        VkSubmitInfo2 si = {VK_STRUCTURE_TYPE_SUBMIT_INFO_2, NULL, 0, 0, NULL, 1, &cbi, 0, NULL};
        pthread_mutex_lock(&d->queue_lock);
        r = st_vk_check(vkQueueSubmit2(d->queue, 1, &si, fence), "vkQueueSubmit2 (host copy)");
        pthread_mutex_unlock(&d->queue_lock);
    }
    if (r == ST_OK) r = st_vk_check(vkWaitForFences(d->dev, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    if (fence) vkDestroyFence(d->dev, fence, NULL);
    if (pool) vkDestroyCommandPool(d->dev, pool, NULL);
    return r;
}

/* Copies n bytes between host memory and a storage's bytes at off. */
static st_status host_copy(st_backend *b, st_storage *s, uint64_t off, void *host, uint64_t n, bool to_host, int fill)
{
    st_vk_device *d = vd(b);
    ST_TRY(range_ok(s, off, n, to_host ? "read" : fill >= 0 ? "fill" : "write"));
    if (!n) return ST_OK;
    st_vk_buffer *vb = s->dev;
    if (vb->map || s->host) {
        char *p = (char *)vb->map + off;
        if (fill >= 0) memset(p, fill, n);
        else if (to_host) memcpy(host, p, n);
        else memcpy(p, host, n);
        return ST_OK;
    }
    if (d->host_visible) { /* map only the range touched */
        void *p = NULL;
        pthread_mutex_lock(&d->map_lock);
        st_status r = st_vk_check(vkMapMemory(d->dev, vb->mem, off, n, 0, &p), "vkMapMemory");
        if (r == ST_OK) {
            if (fill >= 0) memset(p, fill, n);
            else if (to_host) memcpy(host, p, n);
            else memcpy(p, host, n);
            vkUnmapMemory(d->dev, vb->mem);
        }
        pthread_mutex_unlock(&d->map_lock);
        return r;
    }
    st_vk_buffer *stage = NULL;
    ST_TRY(buffer_make(d, n, d->host_type, true, "staging", &stage));
    if (!to_host) {
        if (fill >= 0) memset(stage->map, fill, n);
        else memcpy(stage->map, host, n);
    }
    st_status r = staged_copy(d, s, off, stage, n, to_host);
    if (r == ST_OK && to_host) memcpy(host, stage->map, n);
    st_vk_buffer_free(d, stage);
    return r;
}

static st_status vk_write(st_backend *b, st_storage *s, uint64_t off, const void *src, uint64_t n)
{
    return host_copy(b, s, off, (void *)src, n, false, -1);
}

static st_status vk_read(st_backend *b, st_storage *s, uint64_t off, void *dst, uint64_t n)
{
    return host_copy(b, s, off, dst, n, true, -1);
}

static st_status vk_fill(st_backend *b, st_storage *s, uint64_t off, int byte, uint64_t n)
{
    return host_copy(b, s, off, NULL, n, false, byte & 0xff);
}

/* ---- devices ---- */

static bool env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static bool has_layer(const char *name)
{
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *p = calloc(n ? n : 1, sizeof *p);
    bool found = false;
    if (p && vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(p[i].layerName, name) == 0;
    free(p);
    return found;
}

/* The process's instance (one for every device). */
static VkInstance instance;
static VkDebugUtilsMessengerEXT messenger;
static bool validating;

static st_status instance_get(void)
{
    if (instance) return ST_OK;
    validating = env_on("STRATA_VULKAN_VALIDATION");
    const char *layer = "VK_LAYER_KHRONOS_validation";
    if (validating && !has_layer(layer))
        return st_error(ST_ERR_UNSUPPORTED, "vulkan: STRATA_VULKAN_VALIDATION is set but %s is not installed", layer);
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "strata", 1, "strata", 1, VK_API_VERSION_1_3};
    VkValidationFeatureEnableEXT en[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT vf = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, NULL, 1, en, 0, NULL};
    const char *ext[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, validating ? &vf : NULL, 0, &app,
                               validating ? 1u : 0u, validating ? &layer : NULL, validating ? 1u : 0u,
                               validating ? ext : NULL};
    VkResult r = vkCreateInstance(&ci, NULL, &instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED) {
        instance = VK_NULL_HANDLE;
        return st_error(ST_ERR_UNSUPPORTED, "vulkan: no Vulkan driver (vkCreateInstance: %s)", st_vk_result_name(r));
    }
    if (r != VK_SUCCESS) {
        instance = VK_NULL_HANDLE;
        return st_vk_check(r, "vkCreateInstance");
    }
    if (validating) {
        PFN_vkCreateDebugUtilsMessengerEXT make =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
        VkDebugUtilsMessengerCreateInfoEXT mi = {
            VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT, NULL, 0,
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            on_message, NULL};
        if (make) make(instance, &mi, NULL, &messenger);
    }
    return ST_OK;
}

bool st_vk_validating(void) { return validating; }

bool st_vk_device_ext(VkPhysicalDevice p, const char *name)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(p, NULL, &n, NULL);
    VkExtensionProperties *e = calloc(n ? n : 1, sizeof *e);
    bool found = false;
    if (e && vkEnumerateDeviceExtensionProperties(p, NULL, &n, e) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

static int type_rank(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
    }
}

/* The usable devices in choice order (see the header); the count. */
static int list_devices(VkPhysicalDevice *out, int max, char *why, size_t cap)
{
    uint32_t n = 0;
    if (vkEnumeratePhysicalDevices(instance, &n, NULL) != VK_SUCCESS || n == 0) {
        snprintf(why, cap, "no Vulkan device");
        return 0;
    }
    VkPhysicalDevice all[32];
    if (n > 32) n = 32;
    vkEnumeratePhysicalDevices(instance, &n, all);
    int k = 0;
    const char *env = getenv("STRATA_VULKAN_DEVICE");
    if (env && *env) {
        int want = atoi(env);
        if (want < 0 || want >= (int)n) {
            snprintf(why, cap, "STRATA_VULKAN_DEVICE=%s, but there are %u devices", env, n);
            return 0;
        }
        all[0] = all[want];
        n = 1;
    }
    for (int rank = 0; rank <= 4; rank++)
        for (uint32_t i = 0; i < n && k < max; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(all[i], &p);
            if (type_rank(p.deviceType) != rank) continue;
            if (p.apiVersion < VK_API_VERSION_1_3 || !st_vk_device_ext(all[i], VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME)) {
                snprintf(why, cap, "'%s' lacks Vulkan 1.3 or VK_KHR_push_descriptor", p.deviceName);
                continue;
            }
            out[k++] = all[i];
        }
    if (k == 0 && !why[0]) snprintf(why, cap, "no Vulkan 1.3 device");
    return k;
}

static st_status device_init(st_vk_device *d, VkPhysicalDevice phys)
{
    d->phys = phys;
    d->instance = instance;
    d->validation = validating;
    VkPhysicalDeviceVulkan12Properties p12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES, NULL};
    VkPhysicalDeviceProperties2 props = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &p12};
    vkGetPhysicalDeviceProperties2(phys, &props);
    snprintf(d->name, sizeof d->name, "%s", props.properties.deviceName);
    snprintf(d->driver, sizeof d->driver, "%s %s", p12.driverName, p12.driverInfo);
    memcpy(d->uuid, props.properties.pipelineCacheUUID, VK_UUID_SIZE);
    d->align = props.properties.limits.minStorageBufferOffsetAlignment;
    if (d->align < 4) d->align = 4;
    d->max_range = props.properties.limits.maxStorageBufferRange;
    d->ts_period = props.properties.limits.timestampPeriod;
    for (int i = 0; i < 3; i++) d->max_groups[i] = props.properties.limits.maxComputeWorkGroupCount[i];
    /* compute units: NVIDIA says how many SMs through VK_NV_shader_sm_builtins
     * (a property query, nothing to enable); other drivers report no such
     * count, so the tile choice assumes 128, a large discrete GPU's order,
     * which errs towards more, smaller work-groups: on a smaller GPU that
     * costs a few waves, where assuming too few would leave most of a
     * large one idle.  A CPU device (lavapipe) runs work-groups on its
     * threads, one per core, where many small work-groups and split K's
     * extra pass only cost: there the count is the cores */
    d->cus = 128;
    d->cus_from = "assumed";
    if (props.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        d->cus = n > 0 ? (uint32_t)n : 1;
        d->cus_from = "cores";
    }
    if (st_vk_device_ext(phys, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
        VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV,
                                                           NULL};
        VkPhysicalDeviceProperties2 p2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sm};
        vkGetPhysicalDeviceProperties2(phys, &p2);
        if (sm.shaderSMCount > 0) {
            d->cus = sm.shaderSMCount;
            d->cus_from = "SM count";
        }
    }
    const char *cus_env = getenv("STRATA_VULKAN_CUS");
    if (cus_env && atoi(cus_env) > 0) {
        d->cus = (uint32_t)atoi(cus_env);
        d->cus_from = "STRATA_VULKAN_CUS";
    }
    /* the one pipeline layout binds ST_VK_MAX_BIND storage buffers */
    if (props.properties.limits.maxPerStageDescriptorStorageBuffers < ST_VK_MAX_BIND)
        return st_error(ST_ERR_UNSUPPORTED, "vulkan: '%s' binds %u storage buffers a stage, strata's shaders need %d",
                        d->name, props.properties.limits.maxPerStageDescriptorStorageBuffers, ST_VK_MAX_BIND);
    /* features: timeline semaphores, synchronization2, f16 where the
     * device has both halves of it, and 8-bit storage for bool outputs
     * (without it, comparisons and IsNaN/IsInf run on the CPU);
     * STRATA_VULKAN_NO_F16=1 and STRATA_VULKAN_NO_B8=1 leave them off, to
     * test those fallbacks on a device that has them */
    VkPhysicalDeviceVulkan11Features f11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, NULL};
    VkPhysicalDeviceVulkan12Features f12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &f11};
    VkPhysicalDeviceVulkan13Features f13 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, &f12};
    VkPhysicalDeviceFeatures2 f = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f13};
    vkGetPhysicalDeviceFeatures2(phys, &f);
    if (!f12.timelineSemaphore || !f13.synchronization2)
        return st_error(ST_ERR_UNSUPPORTED, "vulkan: '%s' lacks timeline semaphores or synchronization2", d->name);
    const char *no16 = getenv("STRATA_VULKAN_NO_F16");
    d->f16 = f12.shaderFloat16 && f11.storageBuffer16BitAccess && !(no16 && strcmp(no16, "1") == 0);
    const char *no8 = getenv("STRATA_VULKAN_NO_B8");
    d->b8 = f12.storageBuffer8BitAccess && !(no8 && strcmp(no8, "1") == 0);
    VkPhysicalDeviceVulkan11Features e11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, NULL};
    VkPhysicalDeviceVulkan12Features e12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &e11};
    VkPhysicalDeviceVulkan13Features e13 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, &e12};
    VkPhysicalDeviceFeatures2 ef = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &e13};
    e12.timelineSemaphore = VK_TRUE;
    e13.synchronization2 = VK_TRUE;
    if (d->f16) {
        e12.shaderFloat16 = VK_TRUE;
        e11.storageBuffer16BitAccess = VK_TRUE;
    }
    if (d->b8) e12.storageBuffer8BitAccess = VK_TRUE;
    /* tensor cores for f16 convs, where the device has what conv_cm.comp
     * declares (vk_coopmat.c): the extension, its feature and the Vulkan
     * memory model, enabled only then */
    st_vk_cm_mode cm = st_vk_coopmat_mode(instance, phys, d->f16, &d->coopmat_n, d->coopmat_why, sizeof d->coopmat_why);
    d->coopmat = cm == ST_VK_CM_ON;
    d->coopmat_emu = cm == ST_VK_CM_EMULATED;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV ecm = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, NULL,
                                                       VK_TRUE, VK_FALSE};
    if (d->coopmat) {
        e12.vulkanMemoryModel = VK_TRUE;
        e11.pNext = &ecm;
    }
    if (st_vk_tile_log()) fprintf(stderr, "strata: vulkan '%s': %s\n", d->name, st_vk_coopmat_state(d));
    /* a compute queue */
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, NULL);
    VkQueueFamilyProperties qf[16];
    if (nq > 16) nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf);
    d->queue_family = UINT32_MAX;
    for (uint32_t i = 0; i < nq && d->queue_family == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) d->queue_family = i;
    if (d->queue_family == UINT32_MAX) return st_error(ST_ERR_UNSUPPORTED, "vulkan: '%s' has no compute queue", d->name);
    d->ts_bits = qf[d->queue_family].timestampValidBits;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, d->queue_family, 1, &prio};
    const char *ext[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME};
    VkDeviceCreateInfo di = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &ef, 0, 1, &qi, 0, NULL, d->coopmat ? 2u : 1u, ext, NULL};
    ST_TRY(st_vk_check(vkCreateDevice(phys, &di, NULL, &d->dev), "vkCreateDevice"));
    vkGetDeviceQueue(d->dev, d->queue_family, 0, &d->queue);
    d->push_descriptor = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(d->dev, "vkCmdPushDescriptorSetKHR");
    if (!d->push_descriptor) return st_error(ST_ERR_UNSUPPORTED, "vulkan: '%s': no vkCmdPushDescriptorSetKHR", d->name);
    /* memory types: storages in the first device-local type (host-visible
     * and coherent on lavapipe and UMA devices), host memory coherent */
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(phys, &mp);
    d->dev_type = d->host_type = UINT32_MAX;
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++) {
        VkMemoryPropertyFlags fl = mp.memoryTypes[i].propertyFlags;
        if (d->dev_type == UINT32_MAX && (fl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) d->dev_type = i;
        if ((fl & hv) == hv && (d->host_type == UINT32_MAX || (fl & VK_MEMORY_PROPERTY_HOST_CACHED_BIT))) d->host_type = i;
    }
    if (d->dev_type == UINT32_MAX) d->dev_type = d->host_type;
    if (d->host_type == UINT32_MAX) return st_error(ST_ERR_UNSUPPORTED, "vulkan: '%s' has no host-visible memory", d->name);
    d->host_visible = (mp.memoryTypes[d->dev_type].propertyFlags & hv) == hv;
    pthread_mutex_init(&d->queue_lock, NULL);
    pthread_mutex_init(&d->pipe_lock, NULL);
    pthread_mutex_init(&d->map_lock, NULL);
    ST_TRY(st_vk_pipelines_init(d));
    d->base.kind = vk_kind;
    d->base.name = "vulkan";
    d->base.storage_alloc = storage_alloc;
    d->base.storage_free = storage_free;
    d->base.write = vk_write;
    d->base.read = vk_read;
    d->base.fill = vk_fill;
    d->base.exec_create = st_vk_exec_create;
    d->base.kernels = &st_vk_kernel_table;
    d->base.transfer = st_vk_transfer;
    d->base.host_alloc = host_alloc;
    return ST_OK;
}

/* Saves the pipeline caches when the process ends (devices live as long
 * as the process, like the other backends'). */
static void at_exit(void)
{
    for (int i = 0; i < ST_VK_MAX_DEVICES; i++)
        if (devices[i]) st_vk_cache_save(devices[i]);
}

static st_backend *vulkan_open(st_backend_kind kind, int device)
{
    if (device < 0 || device >= ST_VK_MAX_DEVICES) {
        st_error(ST_ERR_INVALID_ARG, "vulkan: device %d is out of range", device);
        return NULL;
    }
    pthread_mutex_lock(&devices_lock);
    vk_kind = kind;
    st_vk_device *d = devices[device];
    if (!d && instance_get() == ST_OK) {
        VkPhysicalDevice list[ST_VK_MAX_DEVICES];
        char why[320] = "";
        int n = list_devices(list, ST_VK_MAX_DEVICES, why, sizeof why);
        if (n == 0) {
            st_error(ST_ERR_UNSUPPORTED, "vulkan: %s", why);
        } else if (device >= n) {
            st_error(ST_ERR_INVALID_ARG, "vulkan: device %d requested, %d present", device, n);
        } else if (!(d = calloc(1, sizeof *d))) {
            st_error(ST_ERR_NOMEM, "out of memory");
        } else if (device_init(d, list[device]) != ST_OK) {
            if (d->dev) {
                st_vk_pipelines_free(d);
                vkDestroyDevice(d->dev, NULL);
            }
            free(d);
            d = NULL;
        } else {
            static bool registered;
            if (!registered) atexit(at_exit);
            registered = true;
            d->ordinal = device;
            devices[device] = d;
        }
    }
    pthread_mutex_unlock(&devices_lock);
    return d ? &d->base : NULL;
}

static const st_backend_module vk_module = {ST_BACKEND_ABI, "vulkan", &st_vk_kernel_table, vulkan_open};

/* The registry's entry (backends/registry.c). */
const st_backend_module *st_vulkan_module(void) { return &vk_module; }
