/* geom.c — convex hull, minimum-area rectangle, corners. */
#include "vision/geom.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

static int cmp_pt(const void *pa, const void *pb)
{
    const st_pointf *a = pa, *b = pb;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    return (a->y > b->y) - (a->y < b->y);
}

static double cross(st_pointf o, st_pointf a, st_pointf b)
{
    return ((double)a.x - o.x) * ((double)b.y - o.y) - ((double)a.y - o.y) * ((double)b.x - o.x);
}

/* Andrew's monotone chain: sort, then a lower and an upper chain that only
 * ever turn one way. */
int st_convex_hull(st_pointf *pts, int n, st_pointf *hull)
{
    if (n <= 0) return 0;
    qsort(pts, (size_t)n, sizeof *pts, cmp_pt);
    int u = 0; /* distinct points */
    for (int i = 0; i < n; i++)
        if (!u || pts[i].x != pts[u - 1].x || pts[i].y != pts[u - 1].y) pts[u++] = pts[i];
    if (u <= 2) {
        for (int i = 0; i < u; i++) hull[i] = pts[i];
        return u;
    }
    int k = 0;
    for (int i = 0; i < u; i++) {
        while (k >= 2 && cross(hull[k - 2], hull[k - 1], pts[i]) <= 0) k--;
        hull[k++] = pts[i];
    }
    for (int i = u - 2, lo = k + 1; i >= 0; i--) {
        while (k >= lo && cross(hull[k - 2], hull[k - 1], pts[i]) <= 0) k--;
        hull[k++] = pts[i];
    }
    return k - 1; /* the last point repeats the first */
}

/* Picks, among +-e and +-n (e, n perpendicular unit vectors), the one
 * closest to the +x axis as the width direction. */
static void width_axis(double ex, double ey, double *ux, double *uy)
{
    double cand[4][2] = {{ex, ey}, {-ex, -ey}, {-ey, ex}, {ey, -ex}};
    int best = 0;
    for (int i = 1; i < 4; i++) {
        /* larger x wins; at exactly 45 degrees the one pointing up (y < 0)
         * wins, so the choice never depends on the order of the hull */
        if (cand[i][0] > cand[best][0] + 1e-12 ||
            (fabs(cand[i][0] - cand[best][0]) <= 1e-12 && cand[i][1] < cand[best][1]))
            best = i;
    }
    *ux = cand[best][0];
    *uy = cand[best][1];
}

/* Extents of the points projected on u and on v = (-uy, ux). */
static void extents(const st_pointf *p, int n, double ux, double uy, double *lo_u, double *hi_u, double *lo_v,
                    double *hi_v)
{
    *lo_u = *lo_v = INFINITY;
    *hi_u = *hi_v = -INFINITY;
    for (int i = 0; i < n; i++) {
        double a = p[i].x * ux + p[i].y * uy, b = -p[i].x * uy + p[i].y * ux;
        if (a < *lo_u) *lo_u = a;
        if (a > *hi_u) *hi_u = a;
        if (b < *lo_v) *lo_v = b;
        if (b > *hi_v) *hi_v = b;
    }
}

st_rrect st_min_area_rect(const st_pointf *hull, int n)
{
    st_rrect r = {0, 0, 0, 0, 1, 0};
    if (n <= 0) return r;
    double bx = 1, by = 0, best = 0;
    bool found = false;
    /* every hull edge's direction; a single point gets the x axis */
    for (int i = 0; i < (n > 1 ? n : 1); i++) {
        double ex = 1, ey = 0;
        if (n > 1) {
            st_pointf a = hull[i], b = hull[(i + 1) % n];
            double dx = (double)b.x - a.x, dy = (double)b.y - a.y, len = hypot(dx, dy);
            if (len == 0) continue;
            ex = dx / len;
            ey = dy / len;
        }
        double ux, uy, lu, hu, lv, hv;
        width_axis(ex, ey, &ux, &uy);
        extents(hull, n, ux, uy, &lu, &hu, &lv, &hv);
        double area = (hu - lu) * (hv - lv);
        /* a strictly smaller area wins; among equal ones (a rectangle's two
         * edge directions) the first edge, by the fixed hull order */
        if (!found || area < best - 1e-9 * (best > 1 ? best : 1)) best = area, bx = ux, by = uy, found = true;
    }
    double lu, hu, lv, hv;
    extents(hull, n, bx, by, &lu, &hu, &lv, &hv);
    double mu = (lu + hu) / 2, mv = (lv + hv) / 2;
    r.cx = (float)(mu * bx - mv * by);
    r.cy = (float)(mu * by + mv * bx);
    r.w = (float)(hu - lu);
    r.h = (float)(hv - lv);
    r.ux = (float)bx;
    r.uy = (float)by;
    return r;
}

void st_rrect_corners(const st_rrect *r, st_pointf c[4])
{
    double ax = r->ux * r->w / 2.0, ay = r->uy * r->w / 2.0;   /* half width along u */
    double bx = -r->uy * r->h / 2.0, by = r->ux * r->h / 2.0;  /* half height along v (down) */
    c[0] = (st_pointf){(float)(r->cx - ax - bx), (float)(r->cy - ay - by)};
    c[1] = (st_pointf){(float)(r->cx + ax - bx), (float)(r->cy + ay - by)};
    c[2] = (st_pointf){(float)(r->cx + ax + bx), (float)(r->cy + ay + by)};
    c[3] = (st_pointf){(float)(r->cx - ax + bx), (float)(r->cy - ay + by)};
}

int st_rrect_contains(const st_rrect *r, float x, float y, float eps)
{
    double dx = (double)x - r->cx, dy = (double)y - r->cy;
    double a = dx * r->ux + dy * r->uy, b = -dx * r->uy + dy * r->ux;
    return fabs(a) <= r->w / 2.0 + eps && fabs(b) <= r->h / 2.0 + eps;
}
