/*
 * cl_tiles.c — the tile and split-K choice of OpenCL's two tiled GEMMs,
 * Conv (conv_gemm.cl) and MatMul/Gemm (gemm.cl): ops/lower_tiles.c's
 * model (Vulkan's too) on this device's compute units and fill, and the
 * per-command slot that keeps the choice and the partial sums' buffer.
 * The env knobs (opencl.c) force any part of it, so a GPU run can A/B
 * the choices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "graph/graph.h"

/* ops/lower_tiles.c's model on this device's compute units and fill. */
void st_cl_tile_choose(const st_cl_device *d, const st_cl_tiling *force, int64_t M, int64_t N, int64_t K, int64_t Z,
                       int *tile, int *splits)
{
    st_tile_problem q = {M, N, K, Z, ST_CL_TILE_K, (int64_t)(d->cus > 0 ? d->cus : 1) * (d->fill > 0 ? d->fill : 4), 0,
                         force->tile, force->splitk, 0};
    st_tile_choose(&q, tile, splits);
}

/* What a command keeps between runs (its slot). */
typedef struct tile_slot {
    int64_t key[4]; /* M, N, K, Z the choice was made for */
    int tile, splits;
    cl_mem part;    /* splits x Z x M x N floats, NULL when splits == 1 */
} tile_slot;

static void tile_slot_release(void *data)
{
    tile_slot *s = data;
    if (s->part) clReleaseMemObject(s->part);
    free(s);
}

st_status st_cl_tile_slot(st_cl_ctx *c, const st_cl_tiling *force, const st_node *node, int64_t M, int64_t N, int64_t K,
                          int64_t Z, int *tile, int *splits, cl_mem *part)
{
    tile_slot *sl = c->slot->data;
    int64_t key[4] = {M, N, K, Z};
    if (sl && memcmp(sl->key, key, sizeof key) != 0) {
        tile_slot_release(sl);
        c->slot->data = sl = NULL;
        c->slot->release = NULL;
    }
    if (!sl) {
        sl = calloc(1, sizeof *sl);
        if (!sl) return st_error(ST_ERR_NOMEM, "node '%s': out of memory for its tile choice", node->name);
        memcpy(sl->key, key, sizeof key);
        st_cl_tile_choose(c->dev, force, M, N, K, Z, &sl->tile, &sl->splits);
        if (sl->splits > 1) {
            cl_int err;
            size_t bytes = (size_t)(sl->splits * Z * M * N) * sizeof(float);
            sl->part = clCreateBuffer(c->dev->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
            if (err != CL_SUCCESS) {
                free(sl);
                return st_cl_check(err, "clCreateBuffer (split-K partial sums)");
            }
        }
        c->slot->data = sl;
        c->slot->release = tile_slot_release;
        if (c->dev->tile_log)
            fprintf(stderr, "strata: opencl %s '%s': M %lld, N %lld, K %lld, Z %lld: tile %s, split %d (%d compute units x %d)\n",
                    node->op_type, node->name, (long long)M, (long long)N, (long long)K, (long long)Z,
                    st_tile_shapes[sl->tile].name, sl->splits, c->dev->cus, c->dev->fill);
    }
    *tile = sl->tile;
    *splits = sl->splits;
    *part = sl->part;
    return ST_OK;
}
