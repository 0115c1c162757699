/*
 * cl_internal.h — what the OpenCL backend's C files share: the device
 * object, the program (all kernels of the .cl files here, built once
 * per device), the per-command context a kernel enqueues through, and the
 * small helpers that turn views into kernel arguments.
 *
 * Ordering is the executor's business (cl_exec.c): a kernel function gets
 * the events of its command's DAG predecessors and enqueues its work with
 * them as the wait list (st_cl_run), never waiting on the host itself.
 */
#ifndef ST_CL_INTERNAL_H
#define ST_CL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/backend.h"
#include "backends/opencl/kernels.h"
#include "ops/kernel.h"
#include "ops/lower_elementwise.h"
#include "ops/lower_tiles.h"
#include "core/view.h"

/* Every kernel of the program, by the name after "st_" in the .cl files. */
#define ST_CL_KERNEL_LIST(X) \
    X(unary)                 \
    X(binary)                \
    X(where)                 \
    X(quant)                 \
    X(dynq_range)            \
    X(dynq_params)           \
    X(dynq_apply)            \
    X(qmatmul)               \
    X(qconv)                 \
    X(qlut)                  \
    X(qbinary)               \
    X(copy)                  \
    X(gemm_t64x64)           \
    X(gemm_t64x32)           \
    X(gemm_t32x64)           \
    X(gemm_t32x32)           \
    X(gemm_t16x64)           \
    X(gemm_splitk)           \
    X(conv_gemm)             \
    X(conv_rows)             \
    X(conv_t64x64)           \
    X(conv_t64x64_f32)       \
    X(conv_t64x64_f16)       \
    X(conv_t64x64_bf16)      \
    X(conv_t64x32)           \
    X(conv_t64x32_f32)       \
    X(conv_t64x32_f16)       \
    X(conv_t64x32_bf16)      \
    X(conv_t32x64)           \
    X(conv_t32x64_f32)       \
    X(conv_t32x64_f16)       \
    X(conv_t32x64_bf16)      \
    X(conv_t32x32)           \
    X(conv_t32x32_f32)       \
    X(conv_t32x32_f16)       \
    X(conv_t32x32_bf16)      \
    X(conv_t16x64)           \
    X(conv_t16x64_f32)       \
    X(conv_t16x64_f16)       \
    X(conv_t16x64_bf16)      \
    X(conv_splitk)           \
    X(conv_direct)           \
    X(conv_affine)           \
    X(pool)                  \
    X(pool_global)           \
    X(conv_transpose)        \
    X(resize)                \
    X(pad)                   \
    X(softmax_serial)        \
    X(softmax_group)         \
    X(batchnorm)             \
    X(reduce)                \
    X(attention)             \
    X(gather_walk)           \
    X(scatter_nd)            \
    X(one_hot)               \
    X(range)                 \
    X(cumsum)                \
    X(argminmax)             \
    X(topk)                  \
    X(nonzero)               \
    X(einsum)                \
    X(gridsample)            \
    X(scatter_elements)      \
    X(gather_nd)             \
    X(trilu)                 \
    X(fill_diag)             \
    X(rnn)                   \
    X(rownorm)

typedef enum st_clk {
#define ST_CLK_ENUM(n) ST_CLK_##n,
    ST_CL_KERNEL_LIST(ST_CLK_ENUM)
#undef ST_CLK_ENUM
    ST_CLK_COUNT
} st_clk;

extern const char *const st_clk_names[ST_CLK_COUNT];

/* A forced tile (an index of st_tile_shapes) and K split; -1 and 0: the model's. */
typedef struct st_cl_tiling {
    int tile, splitk;
} st_cl_tiling;

typedef struct st_cl_device {
    st_backend base;
    int ordinal;
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue transfer;        /* in-order: host <-> storage copies and fills */
    pthread_mutex_t transfer_lock;
    bool out_of_order;                /* the device takes CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE */
    bool ooo_unsafe;                  /* ...but its driver is known to crash with one (see cl_exec.c) */
    bool conv_tiled;                  /* Conv as a local-memory tiled GEMM (GPUs), else st_conv_rows */
    bool conv_gemm64;                 /* ...by the fixed 64x64, 64-bit st_conv_gemm (STRATA_OPENCL_CONV=gemm64) */
    /* the tiled GEMMs' tile and split-K choice (cl_tiles.c) and its env overrides */
    int cus;                          /* compute units planned for */
    int fill;                         /* resident work-groups per compute unit */
    st_cl_tiling conv_force, gemm_force;
    bool tile_log;                    /* print each Conv's and GEMM's choice to stderr */
    bool conv_generic;                /* STRATA_OPENCL_CONV_GENERIC=1: tiled Conv's dtype-generic kernels (tests) */
    bool fp16, fp64, is_gpu;
    bool unified;                     /* host-unified memory (opencl.c): storages are mapped, not copied */
    bool exact_div;             /* -cl-fp32-correctly-rounded-divide-sqrt is offered */
    size_t max_wg;
    cl_uint addr_align;               /* CL_DEVICE_MEM_BASE_ADDR_ALIGN, bits */
    char name[256], vendor[128], version[128], driver[128], platform_name[128];
    /* the program: built (or loaded from the disk cache) on first use;
     * NULL until a build succeeds (a failed one is tried again) */
    pthread_mutex_t program_lock;
    cl_program program;
    bool program_cached;
    double program_seconds;
    /* cl_mem -> storage, for st_cl_resolve (sorted by handle value) */
    pthread_mutex_t mem_lock;
    struct st_cl_mem_entry *mems;
    int n_mems, cap_mems;
} st_cl_device;

/* A command's cached state (a device table of resize taps, ...): data and
 * the function that frees it, kept until the plan is forgotten. */
typedef struct st_cl_slot {
    void *data;
    void (*release)(void *data);
} st_cl_slot;

/* A slot's release function for a cl_mem. */
void st_cl_release_mem(void *mem);

/* What a kernel function gets in k->dev. */
typedef struct st_cl_ctx {
    st_cl_device *dev;
    cl_command_queue queue;
    cl_kernel *kernels;               /* the executor's, all created with it */
    const cl_event *wait;             /* the DAG predecessors' events */
    cl_uint n_wait;
    cl_event *tails;                  /* events the command's successors must wait for */
    int n_tails, cap_tails;
    st_cl_slot *slot;
    /* profiling: the command's first event, retained, for its start time */
    bool timed;
    cl_event first;
} st_cl_ctx;

/* ST_OK, or ST_ERR_BACKEND "opencl: <what>: CL_xxx (code)". */
st_status st_cl_check(cl_int err, const char *what);
const char *st_cl_error_name(cl_int err);

/* The program for dev (built or loaded once). */
st_status st_cl_program(st_cl_device *dev, cl_program *out);
/* The kernel for id, created from the program on first use. */
st_status st_cl_kernel(st_cl_ctx *c, st_clk id, cl_kernel *out);

/* Kernel arguments: a list of (size, pointer) pairs. */
typedef struct st_cl_arg {
    size_t size;
    const void *p;
} st_cl_arg;
#define ST_CLA(x) ((st_cl_arg){sizeof(x), &(x)})
st_status st_cl_set_args(cl_kernel k, st_clk id, int n, const st_cl_arg *args);

/* Enqueues k over global[dims].  local NULL: a fixed work-group shape of
 * 64, the global size rounded up (the kernel must ignore the work-items
 * past its data).  chain: after this command's earlier enqueues (a
 * sequence), else only after the predecessors (independent parts, joined
 * by a marker when the command ends). */
st_status st_cl_run(st_cl_ctx *c, cl_kernel k, st_clk id, cl_uint dims, const size_t *global, const size_t *local,
                    bool chain);

/* ---- operands as kernel arguments ---- */

/* A strided operand: element offset from the cl_mem's base, dtype, and
 * sizes/strides in elements.  All members are 8 bytes so the struct has
 * the same layout in C and in OpenCL C (common.cl's st_td). */
typedef struct st_cl_td {
    cl_long off;
    cl_long dt;
    cl_long rank;
    cl_long n[ST_MAX_RANK];
    cl_long s[ST_MAX_RANK];
} st_cl_td;

/* The cl_mem of a view (NULL for an omitted operand or an empty storage). */
static inline cl_mem st_cl_mem(const st_view *v) { return v->storage ? (cl_mem)v->storage->dev : NULL; }

/* v's descriptor; ST_ERR_INTERNAL if its byte offset is not a whole
 * number of elements (kernels index by element). */
st_status st_cl_td_of(const st_view *v, st_cl_td *td);
/* x's descriptor with y's shape: strides broadcast (right-aligned, 0 on
 * size-1 dims), as elementwise ops read their inputs. */
st_status st_cl_td_broadcast(const st_view *x, const st_view *y, st_cl_td *td);
/* Merges neighbouring dims that step evenly in all n descriptors (which
 * share tds[0]'s sizes) and drops unit dims: fewer divisions per element. */
void st_cl_td_coalesce(st_cl_td *tds, int n);
/* tds[0..w->nops) re-described as the elementwise walk w (ops/
 * lower_elementwise.h): each keeps its offset and dtype and takes the
 * walk's sizes and its own operand's strides. */
void st_cl_td_walk(const st_lower_ew *w, st_cl_td *tds);

/* y = x element by element in row-major order, converting dtypes (x may
 * have another shape of the same element count, or xtd: a descriptor of x
 * to use instead, e.g. broadcast into y's shape). */
st_status st_cl_copy_view(st_cl_ctx *c, const st_view *y, const st_view *x, const st_cl_td *xtd, bool chain);

/* The 2-D grid of an elementwise kernel over tds[0]'s shape (innermost
 * dim, rows); a rank-0 shape becomes [1] in all n descriptors. */
void st_cl_grid(st_cl_td *tds, int n, size_t global[2]);

/* Whether the device computes dt (f64 needs cl_khr_fp64). */
st_status st_cl_dtype_ok(const st_cl_ctx *c, st_dtype dt, const char *what);

/* ---- accepts helpers (the tables' entries, ops/kernel.h) ---- */

/* Refuses a node with a float64 operand on a device without cl_khr_fp64. */
bool st_cl_accepts_fp64(const st_knode *n, char *why, size_t len);
/* Refuses a node with an operand outside f32, f16 and bf16. */
bool st_cl_accepts_f32_family(const st_knode *n, char *why, size_t len);

/* The resolver of rule 2 for OpenCL (see opencl.c): a cl_mem (a storage's,
 * or a sub-buffer made by someone else over one) and a byte offset. */
st_storage *st_cl_resolve(st_backend *b, cl_mem m, uint64_t off, uint64_t *storage_off);

/* ---- the tiled GEMMs' tiles (cl_tiles.c) ---- */

/* The tiles are ops/lower_tiles.h's st_tile_shapes (16x16 work-items of
 * rm x rn outputs each; "64x32" is rows (output channels) x columns
 * (pixels)); the kernel tables list them in that order. */
#define ST_CL_N_TILES ST_N_TILES
#define ST_CL_TILE_K 16 /* K per step of every tile kernel */
#define ST_CL_TILE_NAMES "64x64, 64x32, 32x64, 32x32 or 16x64"
/* The tile and K split for an M x N x K product over Z batches. */
void st_cl_tile_choose(const st_cl_device *d, const st_cl_tiling *force, int64_t M, int64_t N, int64_t K, int64_t Z,
                       int *tile, int *splits);

/* The tile and split of the command c runs (made on its first run and
 * kept in its slot: the plan fixes the shapes, a different shape remakes
 * them), and the partial-sum buffer a split needs (splits x Z x M x N
 * floats; NULL for one split).  STRATA_OPENCL_TILE_LOG=1 prints the
 * choice once. */
st_status st_cl_tile_slot(st_cl_ctx *c, const st_cl_tiling *force, const st_node *node, int64_t M, int64_t N, int64_t K,
                          int64_t Z, int *tile, int *splits, cl_mem *part);

/* Runs k's Conv (1 or 2 spatial dims) through conv_gemm.cl and sets *ran;
 * leaves *ran false, enqueuing nothing, where an offset exceeds the
 * kernel's 32-bit math (k_conv_gemm.c). */
st_status st_cl_conv_tiled(const st_kctx *k, bool *ran);

st_status st_cl_exec_create(st_backend *b, const st_session_options *o, st_exec **out);

#endif
