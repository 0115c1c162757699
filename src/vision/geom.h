/*
 * geom.h — plane geometry for text boxes: convex hulls, minimum-area
 * rotated rectangles, and their corners in reading order.
 *
 * Image coordinates: x to the right, y down.
 */
#ifndef ST_VISION_GEOM_H
#define ST_VISION_GEOM_H

typedef struct st_pointf {
    float x, y;
} st_pointf;

/* A rotated rectangle.  (ux, uy) is the unit vector along its width, chosen
 * within 45 degrees of the x axis pointing right (ux > 0), so "width" is the
 * reading direction of a text line that is closer to horizontal than to
 * vertical; the height runs along (-uy, ux), pointing down. */
typedef struct st_rrect {
    float cx, cy;
    float w, h;
    float ux, uy;
} st_rrect;

/* Convex hull of n points, without collinear points; pts is sorted in
 * place and hull needs room for 2 * n points (the chains' scratch).
 * Returns the hull's size (fewer than three distinct points: those). */
int st_convex_hull(st_pointf *pts, int n, st_pointf *hull);

/* The smallest-area rectangle containing a convex polygon (a hull from
 * st_convex_hull): one of its sides lies along a hull edge, so each edge
 * is tried (rotating calipers without the incremental bookkeeping). */
st_rrect st_min_area_rect(const st_pointf *hull, int n);

/* Corners top-left, top-right, bottom-right, bottom-left. */
void st_rrect_corners(const st_rrect *r, st_pointf c[4]);

/* Point-in-rectangle test with a tolerance (eps >= 0 widens it). */
int st_rrect_contains(const st_rrect *r, float x, float y, float eps);

#endif
