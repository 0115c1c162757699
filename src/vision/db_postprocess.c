/* db_postprocess.c — DB probability map -> text boxes. */
#include "vision/db_postprocess.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/status.h"

void st_db_params_default(st_db_params *p)
{
    *p = (st_db_params){0.3f, 0.6f, 1.5f, 3.0f, 1000};
}

/* Mean probability of the pixels whose centres lie in r (its edges
 * included, as a filled polygon would). */
static float rect_score(const float *prob, int h, int w, const st_rrect *r)
{
    st_pointf c[4];
    st_rrect_corners(r, c);
    float x0 = c[0].x, x1 = c[0].x, y0 = c[0].y, y1 = c[0].y;
    for (int i = 1; i < 4; i++) {
        x0 = fminf(x0, c[i].x), x1 = fmaxf(x1, c[i].x);
        y0 = fminf(y0, c[i].y), y1 = fmaxf(y1, c[i].y);
    }
    int xa = (int)fmaxf(0, floorf(x0)), xb = (int)fminf((float)(w - 1), ceilf(x1));
    int ya = (int)fmaxf(0, floorf(y0)), yb = (int)fminf((float)(h - 1), ceilf(y1));
    double sum = 0;
    long cnt = 0;
    for (int y = ya; y <= yb; y++)
        for (int x = xa; x <= xb; x++)
            if (st_rrect_contains(r, (float)x, (float)y, 1e-3f)) sum += prob[(size_t)y * (size_t)w + (size_t)x], cnt++;
    return cnt ? (float)(sum / (double)cnt) : 0.0f;
}

st_status st_db_boxes(const float *prob, int h, int w, const st_db_params *p, st_quad **out, int *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (h <= 0 || w <= 0 || (int64_t)h * w > INT_MAX / 2)
        return st_error(ST_ERR_INVALID_ARG, "text detection map of %dx%d is out of range", w, h);
    size_t hw = (size_t)h * (size_t)w;
    uint8_t *seen = calloc(hw, 1);
    int *queue = malloc(hw * sizeof *queue);          /* the region's pixels, in BFS order */
    int *rmin = malloc((size_t)h * sizeof *rmin);      /* leftmost and rightmost pixel per row */
    int *rmax = malloc((size_t)h * sizeof *rmax);
    st_pointf *pts = malloc((size_t)h * 2 * sizeof *pts);
    st_pointf *hull = malloc((size_t)h * 4 * sizeof *hull);
    st_quad *boxes = NULL;
    int nb = 0, cap = 0, regions = 0;
    st_status rc = ST_OK;
    if (!seen || !queue || !rmin || !rmax || !pts || !hull) {
        rc = st_error(ST_ERR_NOMEM, "out of memory for a %dx%d text detection map", w, h);
        goto done;
    }
    for (int y = 0; y < h; y++) rmin[y] = INT_MAX, rmax[y] = -1;
    for (size_t seed = 0; seed < hw && regions < p->max_candidates; seed++) {
        if (seen[seed] || !(prob[seed] > p->bin_thresh)) continue;
        regions++;
        /* breadth-first over the 8-connected region: an explicit queue,
         * so a huge region cannot overflow the call stack */
        size_t head = 0, tail = 0;
        queue[tail++] = (int)seed;
        seen[seed] = 1;
        int ylo = h, yhi = -1;
        while (head < tail) {
            int i = queue[head++], y = i / w, x = i % w;
            if (x < rmin[y]) rmin[y] = x;
            if (x > rmax[y]) rmax[y] = x;
            if (y < ylo) ylo = y;
            if (y > yhi) yhi = y;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int yy = y + dy, xx = x + dx;
                    if ((!dx && !dy) || yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                    size_t j = (size_t)yy * (size_t)w + (size_t)xx;
                    if (!seen[j] && prob[j] > p->bin_thresh) seen[j] = 1, queue[tail++] = (int)j;
                }
        }
        /* the hull of a region is the hull of each row's two end pixels */
        int np = 0;
        for (int y = ylo; y <= yhi; y++) {
            if (rmax[y] < 0) continue;
            pts[np++] = (st_pointf){(float)rmin[y], (float)y};
            if (rmax[y] != rmin[y]) pts[np++] = (st_pointf){(float)rmax[y], (float)y};
            rmin[y] = INT_MAX, rmax[y] = -1;
        }
        int nh = st_convex_hull(pts, np, hull);
        st_rrect r = st_min_area_rect(hull, nh);
        if (fminf(r.w, r.h) < p->min_size) continue;
        float score = rect_score(prob, h, w, &r);
        if (score < p->box_thresh) continue;
        double area = (double)r.w * r.h, perim = 2.0 * ((double)r.w + r.h);
        /* Offsetting a rectangle's edges outwards by d (with round joins,
         * as a polygon offsetter does) and taking the minimum-area
         * rectangle again gives the same rectangle grown by d a side. */
        float d = perim > 0 ? (float)(area * p->unclip_ratio / perim) : 0.0f;
        r.w += 2 * d;
        r.h += 2 * d;
        if (fminf(r.w, r.h) < p->min_size + 2) continue;
        if (nb == cap) {
            int ncap = cap ? 2 * cap : 16;
            st_quad *nbx = realloc(boxes, (size_t)ncap * sizeof *nbx);
            if (!nbx) {
                rc = st_error(ST_ERR_NOMEM, "out of memory for text boxes");
                goto done;
            }
            boxes = nbx, cap = ncap;
        }
        st_rrect_corners(&r, boxes[nb].p);
        boxes[nb++].score = score;
    }
done:
    free(seen);
    free(queue);
    free(rmin);
    free(rmax);
    free(pts);
    free(hull);
    if (rc != ST_OK) {
        free(boxes);
        return rc;
    }
    *out = boxes;
    *n_out = nb;
    return ST_OK;
}

static float clampf(float v, float lo, float hi) { return !(v >= lo) ? lo : v > hi ? hi : v; }

void st_quads_map(st_quad *q, int n, float sx, float sy, float max_x, float max_y)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) {
            q[i].p[k].x = clampf((q[i].p[k].x + 0.5f) * sx - 0.5f, 0, max_x);
            q[i].p[k].y = clampf((q[i].p[k].y + 0.5f) * sy - 0.5f, 0, max_y);
        }
}

static float quad_cy(const st_quad *q) { return (q->p[0].y + q->p[1].y + q->p[2].y + q->p[3].y) / 4; }
static float quad_h(const st_quad *q) { return hypotf(q->p[3].x - q->p[0].x, q->p[3].y - q->p[0].y); }
static float quad_x(const st_quad *q) { return (q->p[0].x + q->p[3].x) / 2; } /* the left edge */

static int cmp_cy(const void *pa, const void *pb)
{
    const st_quad *a = pa, *b = pb;
    float ya = quad_cy(a), yb = quad_cy(b);
    if (ya != yb) return ya < yb ? -1 : 1;
    float xa = quad_x(a), xb = quad_x(b);
    return (xa > xb) - (xa < xb);
}

void st_quads_sort(st_quad *q, int n)
{
    if (n < 2) return;
    qsort(q, (size_t)n, sizeof *q, cmp_cy);
    for (int i = 0; i < n;) {
        float cy = quad_cy(&q[i]), h = quad_h(&q[i]);
        int j = i + 1;
        while (j < n && fabsf(quad_cy(&q[j]) - cy) < 0.5f * fminf(h, quad_h(&q[j]))) j++;
        /* one line: insertion sort by the left edge (lines are short) */
        for (int a = i + 1; a < j; a++) {
            st_quad t = q[a];
            int b = a;
            while (b > i && quad_x(&q[b - 1]) > quad_x(&t)) q[b] = q[b - 1], b--;
            q[b] = t;
        }
        i = j;
    }
}
