/*
 * image.h — 8-bit RGB images: loading (PNG, JPEG, BMP through stb_image),
 * saving as PNG, resizing, and packing into the float CHW tensors models
 * take.
 *
 * Loading never trusts the file: the format is recognised by its magic
 * bytes, the dimensions are read and bounded before anything is decoded,
 * and a PNG or JPEG that ends early is refused rather than decoded into a
 * half-grey picture.  Every failure names the file (st_last_error()).
 */
#ifndef ST_VISION_IMAGE_H
#define ST_VISION_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "strata.h"

/* Largest side and pixel count an image may have: big enough for any
 * photograph or scan, small enough that a forged header cannot make us
 * allocate gigabytes. */
#define ST_IMAGE_MAX_SIDE 32768
#define ST_IMAGE_MAX_PIXELS (1u << 28)

typedef struct st_image {
    int w, h;        /* pixels */
    uint8_t *px;     /* w * h * 3 bytes, RGB, rows top to bottom */
} st_image;

/* A fresh w x h image (zeroed).  Fails on a size out of bounds. */
st_status st_image_alloc(st_image *im, int w, int h);
void st_image_free(st_image *im);

/* Decodes an image file in memory; `what` names it in messages.
 * Transparent pixels are composited over white, because text and logos
 * saved with alpha usually keep black (or garbage) under the transparency. */
st_status st_image_decode(const void *data, size_t size, const char *what, st_image *out);
st_status st_image_load(const char *path, st_image *out);

/* Writes a PNG through a temporary file and a rename, so a failure never
 * leaves a partial file at path. */
st_status st_image_save_png(const char *path, const st_image *im);

/* Resizes to w x h (stb_image_resize: a Mitchell filter going down, so
 * downscaled photos do not alias, Catmull-Rom going up). */
st_status st_image_resize(const st_image *src, int w, int h, st_image *out);

/* Writes a 3 x th x tw float tensor, channel planes R, G, B (or B, G, R
 * when bgr is set, for models trained on OpenCV's channel order): the
 * image placed with its top-left corner at (x0, y0), plane k's values
 * (px / 255 - mean[k]) / std[k], and `pad` wherever the image does not
 * reach.  Parts of the image outside the tensor are left out. */
void st_image_to_chw(const st_image *im, int x0, int y0, int tw, int th, const float mean[3], const float std[3],
                     float pad, int bgr, float *dst);

#endif
