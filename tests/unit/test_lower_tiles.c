/*
 * test_lower_tiles.c — the GPU tile and split-K choice (src/ops/lower_tiles.c)
 * that OpenCL's and Vulkan's tiled Conv and MatMul/Gemm launch by.
 *
 * Why a unit test: the choice decides how many work-groups a GPU gets
 * (YOLOv8n b1 on an H200: OpenCL 8.78 -> 2 ms, Vulkan 14.7 -> 3.98), and it
 * runs here only on PoCL's and lavapipe's few compute units, where it
 * rarely splits.  So on thousands of random problems, with the compute
 * units of an H200 and of small devices:
 *   - the choice is the lowest cost among every (tile, splits) the rules
 *     allow, each cost counted here from the work-groups themselves (waves
 *     of `slots`, one K walk per wave, a split's second launch and its
 *     partial sums), ties to the first tile and the fewest splits;
 *   - no split is empty: splits = ceil(ksteps / ceil(ksteps / splits));
 *   - forced tiles and splits, the allowed set and the split limit hold;
 * and two anchors: YOLOv8's 20x20 detection-head conv (M 80, N 400,
 * K 2304) splits K on 132 compute units, and a batch-32 stage conv with
 * 100k columns takes the 64x64 tile unsplit.
 */
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "ops/lower_tiles.h"

static int64_t up(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The model's time for tile t and s requested splits, from first
 * principles, and the splits it really makes (*eff). */
static double cost_of(const st_tile_problem *q, int t, int64_t s, int64_t *eff)
{
    int64_t ksteps = up(q->K > 0 ? q->K : 1, q->k_step);
    int64_t per = up(ksteps, s); /* K steps a split walks */
    int64_t splits = up(ksteps, per);
    int64_t tm = 16 * st_tile_shapes[t].rm, tn = 16 * st_tile_shapes[t].rn;
    int64_t groups = up(q->M, tm) * up(q->N, tn) * q->Z * splits;
    int64_t waves = up(groups, q->slots);
    double c = (double)waves * (double)(per + 2) * (16.0 * st_tile_shapes[t].rm * st_tile_shapes[t].rn + 48);
    if (splits > 1) c += 2000 + (double)splits * (double)(q->M * q->N * q->Z) / 500;
    *eff = splits;
    return c;
}

/* The reference choice: every allowed tile, every split count from 1 to
 * min(16, ksteps / 4, max_splits) (the forced one alone when forced). */
static void reference(const st_tile_problem *q, int *tile, int *splits)
{
    int64_t ksteps = up(q->K > 0 ? q->K : 1, q->k_step);
    double best = -1;
    for (int t = 0; t < ST_N_TILES; t++) {
        if (q->allowed && !(q->allowed >> t & 1)) continue;
        if (q->force_tile >= 0 && t != q->force_tile) continue;
        int64_t hi = ksteps / 4 < 16 ? ksteps / 4 : 16, lo = 1;
        if (hi < 1) hi = 1;
        if (q->force_split > 0) lo = hi = q->force_split < ksteps ? q->force_split : ksteps;
        if (q->max_splits > 0 && hi > q->max_splits) hi = q->max_splits;
        if (lo > hi) lo = hi;
        for (int64_t s = lo; s <= hi; s++) {
            int64_t eff;
            double c = cost_of(q, t, s, &eff);
            if (best < 0 || c < best) {
                best = c;
                *tile = t;
                *splits = (int)eff;
            }
        }
    }
}

int main(void)
{
    test_rng r = {0x5eed7115};
    const int64_t cus[] = {132, 128, 2, 8, 24, 80};
    for (int i = 0; i < 20000; i++) {
        st_tile_problem q = {0};
        q.M = rng_range(&r, 1, 1024);
        q.N = rng_range(&r, 1, 1 << rng_range(&r, 4, 18));
        q.K = rng_range(&r, 1, 1 << rng_range(&r, 2, 14));
        q.Z = rng_range(&r, 1, 4);
        q.k_step = 16;
        q.slots = cus[rng_range(&r, 0, 5)] * 4;
        q.allowed = rng_range(&r, 0, 3) == 0 ? 0x11u : 0;
        q.force_tile = rng_range(&r, 0, 9) == 0 ? (int)rng_range(&r, 0, ST_N_TILES - 1) : -1;
        if (q.allowed && q.force_tile >= 0 && !(q.allowed >> q.force_tile & 1)) q.force_tile = -1;
        q.force_split = rng_range(&r, 0, 9) == 0 ? rng_range(&r, 1, 20) : 0;
        q.max_splits = rng_range(&r, 0, 4) == 0 ? rng_range(&r, 1, 6) : 0;
        int tile = -1, splits = -1, want_tile = -1, want_splits = -1;
        st_tile_choose(&q, &tile, &splits);
        reference(&q, &want_tile, &want_splits);
        CHECKF(tile == want_tile && splits == want_splits, "M %lld N %lld K %lld Z %lld slots %lld: got %d/%d, want %d/%d",
               (long long)q.M, (long long)q.N, (long long)q.K, (long long)q.Z, (long long)q.slots, tile, splits, want_tile,
               want_splits);
        int64_t ksteps = up(q.K, q.k_step);
        CHECK(splits >= 1 && up(ksteps, up(ksteps, splits)) == splits);
        if (q.force_tile >= 0) CHECK(tile == q.force_tile);
        if (q.allowed) CHECK(q.allowed >> tile & 1);
        if (q.max_splits > 0) CHECK(splits <= q.max_splits);
    }
    /* YOLOv8's 20x20 head on an H200: a dozen 64x64 tiles would each walk
     * 144 K steps alone, so the choice splits K */
    st_tile_problem head = {80, 400, 2304, 1, 16, 132 * 4, 0, -1, 0, 0};
    int tile, splits;
    st_tile_choose(&head, &tile, &splits);
    CHECKF(splits > 1, "head: tile %s, %d splits", st_tile_shapes[tile].name, splits);
    /* a batch-32 conv with 100k output columns fills the GPU unsplit */
    st_tile_problem big = {128, 102400, 1152, 1, 16, 132 * 4, 0, -1, 0, 0};
    st_tile_choose(&big, &tile, &splits);
    CHECKF(tile == 0 && splits == 1, "big: tile %s, %d splits", st_tile_shapes[tile].name, splits);
    CHECK(st_tile_index("32x64") == 2 && st_tile_index("16x64") == 4 && st_tile_index("8x8") < 0 && st_tile_index(NULL) < 0);
    return check_exit("lower_tiles");
}
