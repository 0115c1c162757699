/*
 * letterbox.h — fitting an image into a model's fixed input without
 * distorting it, and mapping coordinates back.
 *
 * The image is scaled by one factor so it fits dst_w x dst_h, centred, and
 * the border is filled with grey 114/255 (what the YOLO family was trained
 * with).  Coordinates here are continuous, with pixel edges at integers: a
 * box [0, w] x [0, h] covers the whole image.
 */
#ifndef ST_VISION_LETTERBOX_H
#define ST_VISION_LETTERBOX_H

#include "strata.h"
#include "vision/image.h"

typedef struct st_letterbox {
    int src_w, src_h;   /* the original image */
    int dst_w, dst_h;   /* the model input */
    int new_w, new_h;   /* the scaled image inside it */
    int pad_x, pad_y;   /* where the scaled image starts */
} st_letterbox;

/* Plans the fit; every size must be positive. */
void st_letterbox_plan(int src_w, int src_h, int dst_w, int dst_h, st_letterbox *lb);

/* Writes the 3 x dst_h x dst_w tensor, values in [0, 1]. */
st_status st_letterbox_image(const st_image *src, const st_letterbox *lb, float *chw);

/* A point of the model input -> the original image (not clipped), and back. */
void st_letterbox_to_src(const st_letterbox *lb, float *x, float *y);
void st_letterbox_to_dst(const st_letterbox *lb, float *x, float *y);

/* A box of the model input -> the original image, clipped to it. */
void st_letterbox_box_to_src(const st_letterbox *lb, float *x1, float *y1, float *x2, float *y2);

#endif
