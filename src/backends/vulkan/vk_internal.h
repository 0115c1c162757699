/*
 * vk_internal.h — what the Vulkan backend's C files share: the device
 * object, the storage's buffer, the compute pipelines (one per embedded
 * SPIR-V shader), the barrier builder and the per-command context a kernel
 * records its dispatches through.
 *
 * Rule 1 on Vulkan: a storage is exactly one VkBuffer over one
 * VkDeviceMemory.  A view is bound as (that buffer, descriptor offset =
 * the view's first byte rounded down to minStorageBufferOffsetAlignment,
 * range = up to its last byte) and the shader gets the element offset of
 * the view's origin inside that range in its parameters.  No second
 * VkBuffer is ever made over a storage's memory (only `strata probe`
 * does, on purpose).  So the descriptor range is the view's extent, the
 * bytes Khronos synchronization validation sees each dispatch touch.
 *
 * Ordering is the executor's business (vk_exec.c, vk_barrier.c): a kernel
 * calls st_vk_dispatch, which asks the barrier builder which earlier
 * accesses of the same command buffer this dispatch's bindings must wait
 * for, records one vkCmdPipelineBarrier2 over exactly those byte ranges,
 * then the dispatch.  A kernel never waits on the host.
 */
#ifndef ST_VK_INTERNAL_H
#define ST_VK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "runtime/backend.h"
#include "core/view.h"
#include "ops/kernel.h"
#include "ops/lower_elementwise.h"

/* Every shader, one SPIR-V module each (cmake/embed_spirv.cmake embeds
 * them from src/backends/vulkan/shaders/, one per variant: _f16 ones need
 * shaderFloat16 and 16-bit storage; _b8_ ones write bool (1 byte an
 * element) and need 8-bit storage; _s_ ones are built with a 16-row
 * tile, _tRxC ones with an R x C one; conv_splitk_ and gemm_splitk_
 * add split K's partial sums).  The order is CMakeLists.txt's VK_SHADERS.
 * X(name, the ST_VK_NEED_ features it needs) */
#define ST_VK_NEED_16 1 /* shaderFloat16 + storageBuffer16BitAccess */
#define ST_VK_NEED_8 2  /* storageBuffer8BitAccess */
#define ST_VK_NEED_CM 4 /* cooperative matrices (vk_coopmat.c): never made elsewhere */
#define ST_VK_SHADER_LIST(X)  \
    X(copy32, 0)              \
    X(copy16, 1)              \
    X(unary_f32, 0)           \
    X(unary_f16, 1)           \
    X(binary_f32, 0)          \
    X(binary_f16, 1)          \
    X(gemm_f32, 0)            \
    X(gemm_f16, 1)            \
    X(conv_f32, 0)            \
    X(conv_f16, 1)            \
    X(pool_f32, 0)            \
    X(pool_f16, 1)            \
    X(softmax_f32, 0)         \
    X(softmax_f16, 1)         \
    X(reduce_f32, 0)          \
    X(reduce_f16, 1)          \
    X(norm_f32, 0)            \
    X(norm_f16, 1)            \
    X(resize_f32, 0)          \
    X(resize_f16, 1)          \
    X(affine_f32, 0)          \
    X(affine_f16, 1)          \
    X(gemm_s_f32, 0)          \
    X(gemm_s_f16, 1)          \
    X(conv_s_f32, 0)          \
    X(conv_s_f16, 1)          \
    X(conv_direct_f32, 0)     \
    X(conv_direct_f16, 1)     \
    X(unary_b8_f32, 2)        \
    X(unary_b8_f16, 3)        \
    X(binary_b8_f32, 2)       \
    X(binary_b8_f16, 3)       \
    X(affine_rt_f32, 0)       \
    X(affine_rt_f16, 1)       \
    X(unary_clip_rt_f32, 0)   \
    X(unary_clip_rt_f16, 1)   \
    X(conv_t64x32_f32, 0)     \
    X(conv_t64x32_f16, 1)     \
    X(conv_t32x64_f32, 0)     \
    X(conv_t32x64_f16, 1)     \
    X(conv_t32x32_f32, 0)     \
    X(conv_t32x32_f16, 1)     \
    X(conv_splitk_f32, 0)     \
    X(conv_splitk_f16, 1)     \
    X(gemm_splitk_f32, 0)     \
    X(gemm_splitk_f16, 1)     \
    X(conv_cm_f16, 5)         \
    X(conv_cm_emu_f16, 1)     \
    X(conv_cm_n8_f16, 5)

typedef enum st_vks {
#define ST_VKS_ENUM(n, f) ST_VKS_##n,
    ST_VK_SHADER_LIST(ST_VKS_ENUM)
#undef ST_VKS_ENUM
        ST_VKS_COUNT
} st_vks;

/* The most buffers one dispatch binds (binding 0 is the parameter block,
 * bindings 1.. the operands: BatchNormalization's output, input and four
 * run-time parameters are the most).  A device whose
 * maxPerStageDescriptorStorageBuffers is lower is refused at creation. */
#define ST_VK_MAX_BIND 7

typedef struct st_vk_device {
    st_backend base;
    int ordinal;
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t queue_family;
    pthread_mutex_t queue_lock;       /* the one queue: executors' and transfers' submits */
    bool f16;                         /* shaderFloat16 + storageBuffer16BitAccess */
    bool b8;                          /* storageBuffer8BitAccess: shaders write bool */
    bool coopmat;                     /* conv_cm.comp runs on cooperative matrices (vk_coopmat.c) */
    uint32_t coopmat_n;               /* in fragments of 16 x coopmat_n (16 or 8) */
    bool coopmat_emu;                 /* STRATA_VULKAN_COOPMAT=emulate: its scalar build runs instead */
    char coopmat_why[320];            /* if not, why */
    bool validation;                  /* the Khronos layer is on (STRATA_VULKAN_VALIDATION) */
    bool host_visible;                /* device memory is host-visible and coherent (lavapipe, UMA) */
    uint32_t dev_type, host_type;     /* memory type indices: storages, the host arena and params */
    uint64_t align;                   /* minStorageBufferOffsetAlignment */
    uint64_t max_range;               /* maxStorageBufferRange */
    uint32_t max_groups[3];
    /* compute units, for the tiled kernels' work-group counts (vk_tiles.c):
     * NVIDIA's SM count through VK_NV_shader_sm_builtins, a CPU device's
     * cores, else an assumed 128 (Vulkan reports no such count);
     * STRATA_VULKAN_CUS overrides */
    uint32_t cus;
    const char *cus_from;             /* "SM count", "cores", "assumed" or "STRATA_VULKAN_CUS" */
    uint32_t ts_bits;                 /* the queue's timestampValidBits; 0: no timestamps (no --profile times) */
    double ts_period;                 /* ns per timestamp tick */
    char name[256];
    char driver[128];
    uint8_t uuid[VK_UUID_SIZE];
    /* pipelines: one layout for all (a push-descriptor set of
     * ST_VK_MAX_BIND storage buffers), one pipeline per shader, made on
     * first use; the cache is loaded from and saved to disk (vk_pipeline.c) */
    pthread_mutex_t pipe_lock;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipelineCache cache;
    bool cache_dirty;
    VkPipeline pipes[ST_VKS_COUNT];
    PFN_vkCmdPushDescriptorSetKHR push_descriptor;
    pthread_mutex_t map_lock;         /* one vkMapMemory of a storage's memory at a time */
    VkDebugUtilsMessengerEXT messenger;
} st_vk_device;

/* What st_storage.dev points to. */
typedef struct st_vk_buffer {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;                        /* host storages: mapped for their lifetime */
} st_vk_buffer;

static inline VkBuffer st_vk_buf_of(const st_storage *s) { return s && s->dev ? ((st_vk_buffer *)s->dev)->buf : VK_NULL_HANDLE; }

/* A buffer in host-visible coherent memory, mapped (parameter blocks). */
st_status st_vk_host_buffer(st_vk_device *d, uint64_t size, const char *label, st_vk_buffer **out);
void st_vk_buffer_free(st_vk_device *d, st_vk_buffer *vb);

/* Whether physical device p has device extension name. */
bool st_vk_device_ext(VkPhysicalDevice p, const char *name);

/* ST_OK, or ST_ERR_BACKEND "vulkan: <what>: VK_xxx (code)". */
st_status st_vk_check(VkResult r, const char *what);
const char *st_vk_result_name(VkResult r);

/* The pipeline for a shader (made or taken from the cache once). */
st_status st_vk_pipeline(st_vk_device *d, st_vks id, VkPipeline *out);
/* Writes the pipeline cache to disk if it grew. */
void st_vk_cache_save(st_vk_device *d);
st_status st_vk_pipelines_init(st_vk_device *d);
void st_vk_pipelines_free(st_vk_device *d);
extern const char *const st_vks_names[ST_VKS_COUNT];

/* ---- the barrier builder (vk_barrier.c) ---- */

/* One buffer access of a recorded command: bytes [lo, hi) of storage s. */
typedef struct st_vk_access {
    const st_storage *s;
    int64_t lo, hi;
    int cmd;                          /* the DAG command that recorded it */
    bool write;
} st_vk_access;

/* A range a barrier covers, and whether earlier writes are in it. */
typedef struct st_vk_range {
    const st_storage *s;
    int64_t lo, hi;
    bool after_write;
} st_vk_range;

struct st_dag;

/* What one command buffer has recorded since its start that no barrier
 * has ordered yet, and the DAG that says which orderings are wanted. */
typedef struct st_vk_tracker {
    const struct st_dag *dag;
    const uint64_t *anc;              /* anc[c * words + p / 64] bit p: p is an ancestor of c */
    int words;
    bool whole;                       /* --hazard-mode storage: barriers over whole buffers */
    st_vk_access *acc;
    int n, cap;
    /* counts, for `STRATA_VULKAN_STATS` and tests */
    long barriers, ranges, edge_ranges, api_ranges, missed;
} st_vk_tracker;

/* The ancestors of every command of d as a bit matrix (free() it). */
st_status st_vk_ancestors(const struct st_dag *d, uint64_t **out, int *words);
/* The ranges a barrier before command cmd's next accesses acc[0..n) must
 * cover (into out, at most cap; returns the count, -1 when out is too
 * small), given what was recorded before; then marks those ranges as
 * ordered and records acc.  An earlier access that conflicts with acc is
 * waited for when its command is cmd itself or a DAG ancestor of cmd;
 * when it is neither and the DAG's footprints of the two commands do not
 * conflict, the overlap exists only because a descriptor covers a view's
 * extent (interleaved slots), and it is ordered too ("api" ranges); when
 * the footprints conflict but the DAG has no path, the DAG missed a hazard
 * (a coarse hazard mode) and no barrier is made: synchronization
 * validation and the sanitizer are the ones to report it. */
int st_vk_tracker_add(st_vk_tracker *t, int cmd, const st_vk_access *acc, int n, st_vk_range *out, int cap);
void st_vk_tracker_reset(st_vk_tracker *t);
void st_vk_tracker_free(st_vk_tracker *t);

/* ---- what kernels call ---- */

/* A recorder: the command buffer being recorded, its tracker and its
 * parameter blocks (vk_exec.c). */
typedef struct st_vk_rec st_vk_rec;

/* What a kernel function gets in k->dev. */
typedef struct st_vk_ctx {
    st_vk_device *dev;
    st_vk_rec *rec;
    int cmd;
} st_vk_ctx;

/* A view bound for a dispatch: its storage, the descriptor's byte range
 * and the element offset of the view's origin inside it. */
typedef struct st_vk_bind {
    const st_storage *s;
    int64_t lo, hi;                   /* descriptor range: lo aligned down */
    int32_t elem;                     /* the origin's element offset from lo */
    bool write;
} st_vk_bind;

/* v bound for reading or writing; ST_ERR_INTERNAL when v's origin is not
 * a whole number of elements past the aligned start. */
st_status st_vk_bind_view(const st_vk_ctx *c, const st_view *v, bool write, st_vk_bind *out);

/* The start most one-input kernels share: *n = output 0's elements and,
 * when there are any, output 0 bound as bind[0] (written) and input 0 as
 * bind[1] (read).  Callers return ST_OK at once when *n is 0. */
st_status st_vk_bind_yx(const st_kctx *k, st_vk_bind bind[2], int64_t *n);

/* Records a dispatch of shader id over groups[3] work-groups: the barrier
 * its bindings need (above), the parameter block p[0..np) at binding 0,
 * binds[i] at binding i + 1. */
st_status st_vk_dispatch(st_vk_ctx *c, st_vks id, const int32_t *p, int np, int n_bind, const st_vk_bind *binds,
                         const uint32_t groups[3]);

/* A 1-D grid of n work-items in work-groups of wg, folded into y when
 * it exceeds the x limit (shaders index gl_GlobalInvocationID.x +
 * gl_GlobalInvocationID.y * gl_NumWorkGroups.x * wg). */
void st_vk_grid1(const st_vk_ctx *c, int64_t n, uint32_t wg, uint32_t groups[3]);

/* An operand's descriptor for the shaders' parameter blocks (common.glsl
 * st_td): element offset, rank, sizes[8], strides[8] — 18 ints. */
#define ST_VK_TD 18
st_status st_vk_td(const st_view *v, int32_t elem, int32_t *td);
/* x's strides broadcast into y's shape (right-aligned, 0 on size-1 dims). */
st_status st_vk_td_broadcast(const st_view *x, const st_view *y, int32_t elem, int32_t *td);
/* Merges dims that step evenly in all n descriptors (same sizes). */
void st_vk_td_coalesce(int32_t *const *tds, int n);
/* The descriptors of y (tds[0], its element offset elem[0]) and n_in
 * inputs broadcast into its shape, as the elementwise walk ops/
 * lower_elementwise.h lowers (the CPU's, CUDA's and OpenCL's). */
void st_vk_td_walk(const st_view *y, int n_in, const st_view *const *in, const int32_t *elem, int32_t *const *tds);

/* Whether every dim and stride of v fits the shaders' int32 indexing. */
bool st_vk_fits(const st_view *v);

/* The accepts helpers: every operand f32 (or f16 on a device with it),
 * one dtype for all, int32-indexable. */
bool st_vk_accepts_float(const st_knode *n, char *why, size_t len);
/* A comparison's or a test's accepts: float inputs as st_vk_accepts_float
 * takes them, every output bool, and a device with 8-bit storage. */
bool st_vk_accepts_to_bool(const st_knode *n, char *why, size_t len);
/* f32 / f16 of the type operand: which shader variant. */
static inline bool st_vk_is_f16(const st_view *v) { return v->dtype == ST_F16; }

/* A scratch range of `bytes` private to the command being recorded (kept
 * by the executor per DAG and command, grown when a recording asks for
 * more), bound as out.  Only that command's dispatches touch it, and they
 * bind it like any operand, so the barrier builder orders them (its
 * accesses are the command's own); successive runs are ordered by the
 * timeline semaphore between submissions.  Split K's partial sums. */
st_status st_vk_scratch(st_vk_ctx *c, int64_t bytes, bool write, st_vk_bind *out);

/* Records a copy of n bytes between two storages' buffers (a transfer). */
st_status st_vk_copy_buffer(st_vk_ctx *c, const st_storage *src, int64_t src_off, const st_storage *dst, int64_t dst_off,
                            int64_t n);

st_status st_vk_exec_create(st_backend *b, const st_session_options *o, st_exec **out);

#endif
