/*
 * draw.h — drawing boxes and outlines into an RGB image.  Everything is
 * clipped to the image, so any coordinates (even NaN) are safe.
 */
#ifndef ST_VISION_DRAW_H
#define ST_VISION_DRAW_H

#include <stdint.h>

#include "vision/geom.h"
#include "vision/image.h"

typedef struct st_rgb {
    uint8_t r, g, b;
} st_rgb;

/* A colour per class index: evenly spread hues, full saturation, so
 * neighbouring indices differ clearly. */
st_rgb st_palette(int i);

/* Fills pixels x0 <= x < x1, y0 <= y < y1. */
void st_draw_fill(st_image *im, int x0, int y0, int x1, int y1, st_rgb c);

/* The outline of the box [x1, x2] x [y1, y2] (continuous coordinates,
 * pixel edges at integers), `thickness` pixels wide, drawn inside it. */
void st_draw_box(st_image *im, float x1, float y1, float x2, float y2, int thickness, st_rgb c);

/* A segment between pixel centres a and b, `thickness` pixels wide. */
void st_draw_line(st_image *im, st_pointf a, st_pointf b, int thickness, st_rgb c);

/* A closed polygon's edges. */
void st_draw_polygon(st_image *im, const st_pointf *p, int n, int thickness, st_rgb c);

#endif
