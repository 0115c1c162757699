/* letterbox.c — aspect-preserving fit into a model input, and its inverse. */
#include "vision/letterbox.h"

#include <math.h>

void st_letterbox_plan(int src_w, int src_h, int dst_w, int dst_h, st_letterbox *lb)
{
    double r = fmin((double)dst_w / src_w, (double)dst_h / src_h);
    int nw = (int)lround(src_w * r), nh = (int)lround(src_h * r);
    /* rounding may push the side that fits exactly past it, or a thin
     * image's short side to zero */
    nw = nw < 1 ? 1 : nw > dst_w ? dst_w : nw;
    nh = nh < 1 ? 1 : nh > dst_h ? dst_h : nh;
    *lb = (st_letterbox){src_w, src_h, dst_w, dst_h, nw, nh, (dst_w - nw) / 2, (dst_h - nh) / 2};
}

st_status st_letterbox_image(const st_image *src, const st_letterbox *lb, float *chw)
{
    static const float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
    st_image scaled;
    const st_image *im = src;
    if (lb->new_w != src->w || lb->new_h != src->h) {
        st_status r = st_image_resize(src, lb->new_w, lb->new_h, &scaled);
        if (r != ST_OK) return r;
        im = &scaled;
    }
    st_image_to_chw(im, lb->pad_x, lb->pad_y, lb->dst_w, lb->dst_h, mean, std, 114.0f / 255.0f, 0, chw);
    if (im == &scaled) st_image_free(&scaled);
    return ST_OK;
}

/* The two axes use their own exact factors (new_w / src_w, new_h / src_h),
 * not the one planned factor, because rounding made the scaled sides
 * integers: this way the image's far edge maps exactly to the far edge. */
void st_letterbox_to_src(const st_letterbox *lb, float *x, float *y)
{
    *x = (float)((*x - lb->pad_x) * ((double)lb->src_w / lb->new_w));
    *y = (float)((*y - lb->pad_y) * ((double)lb->src_h / lb->new_h));
}

void st_letterbox_to_dst(const st_letterbox *lb, float *x, float *y)
{
    *x = (float)(*x * ((double)lb->new_w / lb->src_w) + lb->pad_x);
    *y = (float)(*y * ((double)lb->new_h / lb->src_h) + lb->pad_y);
}

/* NaN goes to lo, so a broken model output cannot leave NaN coordinates */
static float clampf(float v, float lo, float hi) { return !(v >= lo) ? lo : v > hi ? hi : v; }

void st_letterbox_box_to_src(const st_letterbox *lb, float *x1, float *y1, float *x2, float *y2)
{
    st_letterbox_to_src(lb, x1, y1);
    st_letterbox_to_src(lb, x2, y2);
    *x1 = clampf(*x1, 0, (float)lb->src_w);
    *x2 = clampf(*x2, 0, (float)lb->src_w);
    *y1 = clampf(*y1, 0, (float)lb->src_h);
    *y2 = clampf(*y2, 0, (float)lb->src_h);
}
