/*
 * db_postprocess.h — text boxes from a DB (differentiable binarization)
 * text detector's probability map, as PP-OCR's detectors give it.
 *
 * The detector was trained to mark a text line shrunk towards its centre;
 * the boxes are recovered by: binarising the map, taking each 8-connected
 * region, its minimum-area rectangle (dropped when its short side is
 * under min_size), the mean probability inside that rectangle as its
 * score (dropped under box_thresh), and growing ("unclipping") the
 * rectangle by d = area * unclip_ratio / perimeter on every side, which
 * undoes the training-time shrink; a grown box whose short side is under
 * min_size + 2 is dropped too.
 *
 * Map coordinates put pixel centres at integers (pixel (x, y) is the
 * point (x, y)), as a contour of pixel indices would.
 */
#ifndef ST_VISION_DB_POSTPROCESS_H
#define ST_VISION_DB_POSTPROCESS_H

#include "strata.h"
#include "vision/geom.h"

typedef struct st_db_params {
    float bin_thresh;    /* a pixel is text when its probability is above this (0.3) */
    float box_thresh;    /* a box is kept when its mean probability is at least this (0.6) */
    float unclip_ratio;  /* how far to grow the shrunk region back (1.5) */
    float min_size;      /* shortest side a region may have, in map pixels (3) */
    int max_candidates;  /* regions looked at, in raster order of their first pixel (1000) */
} st_db_params;

/* A text box: corners top-left, top-right, bottom-right, bottom-left. */
typedef struct st_quad {
    st_pointf p[4];
    float score;
} st_quad;

void st_db_params_default(st_db_params *p);

/* Boxes in map coordinates, in raster order of their regions.  *out is
 * malloc'd (NULL when there are none). */
st_status st_db_boxes(const float *prob, int h, int w, const st_db_params *p, st_quad **out, int *n);

/* Map coordinates -> image coordinates: pixel centres scale as
 * (x + 0.5) * sx - 0.5, then every corner is clipped to [0, max_x] x [0, max_y]. */
void st_quads_map(st_quad *q, int n, float sx, float sy, float max_x, float max_y);

/* Reading order: top to bottom by centre; boxes whose centres lie within
 * half the smaller box's height of a line's first box belong to that
 * line, and a line reads left to right. */
void st_quads_sort(st_quad *q, int n);

#endif
