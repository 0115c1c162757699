/*
 * warp.h — cutting a (possibly rotated or skewed) text box out of an
 * image as an upright strip, and quarter turns.
 */
#ifndef ST_VISION_WARP_H
#define ST_VISION_WARP_H

#include "strata.h"
#include "vision/geom.h"
#include "vision/image.h"

/* The strip under quad q (corners top-left, top-right, bottom-right,
 * bottom-left, pixel centres at integers): width the longer of the top and
 * bottom edges, height the longer of the left and right edges, filled by a
 * perspective map of the quad with bilinear sampling (edges repeat past the
 * border).  Fails on a degenerate quad (its corners on one line). */
st_status st_warp_quad(const st_image *src, const st_pointf q[4], st_image *out);

/* A quarter turn counter-clockwise (the top row becomes the left column,
 * read bottom to top). */
st_status st_image_rotate90(const st_image *src, st_image *out);

/* A half turn, in place. */
void st_image_rotate180(st_image *im);

#endif
