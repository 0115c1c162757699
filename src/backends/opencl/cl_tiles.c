/*
 * cl_tiles.c — the tile and split-K choice shared by OpenCL's two tiled
 * GEMMs, Conv (conv_gemm.cl) and MatMul/Gemm (gemm.cl).  Both run 16x16
 * work-items that compute RM x RN outputs each, so a tile is (16 RM) rows
 * x (16 RN) columns, and both can split K into S ranges whose partial
 * sums a second kernel adds.
 *
 * The choice is a rough model, deliberately simple: a problem of M rows x
 * N columns x Z batches makes ceil(M/TM) ceil(N/TN) Z S work-groups, of
 * which `slots` = compute units x fill run at once.  Its time is the
 * number of waves times one work-group's K walk, (steps + 2) x (16 RM RN
 * + 48): a step's products plus a fixed cost for its loads and barriers;
 * a split adds a second launch and the partial sums' traffic.  A 64x64
 * tile does the most work per load, but a small image with deep K (a
 * 20x20 YOLO head, K = 2304) makes a dozen of them for a GPU of 132
 * compute units, so smaller tiles and splits win there.  The env knobs
 * (opencl.c) force any part of it, so a GPU run can A/B the choices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "graph/graph.h"

const st_cl_tile st_cl_tiles[ST_CL_N_TILES] = {
    {4, 4, "64x64"}, {4, 2, "64x32"}, {2, 4, "32x64"}, {2, 2, "32x32"}, {1, 4, "16x64"},
};

int st_cl_tile_index(const char *name)
{
    for (int i = 0; i < ST_CL_N_TILES; i++)
        if (strcmp(name, st_cl_tiles[i].name) == 0) return i;
    return -1;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

void st_cl_tile_choose(const st_cl_device *d, const st_cl_tiling *force, int64_t M, int64_t N, int64_t K, int64_t Z,
                       int *tile, int *splits)
{
    int64_t ksteps = cdiv(K > 0 ? K : 1, ST_CL_TILE_K);
    int64_t slots = (int64_t)(d->cus > 0 ? d->cus : 1) * (d->fill > 0 ? d->fill : 4);
    double best = 0;
    bool first = true;
    *tile = 0;
    *splits = 1;
    for (int t = 0; t < ST_CL_N_TILES; t++) {
        if (force->tile >= 0 && t != force->tile) continue;
        int rm = st_cl_tiles[t].rm, rn = st_cl_tiles[t].rn;
        int64_t base = cdiv(M, 16 * rm) * cdiv(N, 16 * rn) * Z;
        /* a split walks at least 4 steps (64 of K), 16 splits at most */
        int64_t s0 = 1, s1 = ksteps / 4 < 16 ? ksteps / 4 : 16;
        if (s1 < 1) s1 = 1;
        if (force->splitk > 0) s0 = s1 = force->splitk < ksteps ? force->splitk : ksteps;
        for (int64_t s = s0; s <= s1; s++) {
            int64_t steps = cdiv(ksteps, s), se = cdiv(ksteps, steps); /* no empty split */
            double cost = (double)cdiv(base * se, slots) * (double)(steps + 2) * (16.0 * rm * rn + 48);
            if (se > 1) cost += 2000 + (double)se * (double)(M * N * Z) / 500;
            if (first || cost < best) {
                first = false;
                best = cost;
                *tile = t;
                *splits = (int)se;
            }
        }
    }
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
                    st_cl_tiles[sl->tile].name, sl->splits, c->dev->cus, c->dev->fill);
    }
    *tile = sl->tile;
    *splits = sl->splits;
    *part = sl->part;
    return ST_OK;
}
