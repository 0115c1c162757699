/*
 * cmd_detect.c — `strata detect MODEL IMAGE`: object detection with a
 * YOLOv5, YOLOv8 or YOLO11 model, end to end: the image letterboxed into
 * the model input, the head's output decoded (the family told apart by the
 * output's shape), class-aware NMS, boxes mapped back onto the image,
 * printed as text or JSON, and drawn into a PNG copy with -o.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tool.h"
#include "vision/coco.h"
#include "vision/draw.h"
#include "vision/image.h"
#include "vision/letterbox.h"
#include "vision/nms.h"
#include "vision/text.h"
#include "vision/yolo_decode.h"

#define DETECT_MAX_DET 300     /* boxes kept after NMS */
#define DETECT_MAX_NMS 30000   /* best candidates NMS looks at; bounds its work */

/* The model input's height and width: its declared ones where fixed, else
 * --size (640 by default). */
static int input_size(const tool_opts *o, const st_model *m, int *h, int *w)
{
    st_value_info in;
    if (st_model_input_count(m) < 1 || st_model_input_info(m, 0, &in) != ST_OK) return tool_fail("%s: the model has no input", o->model);
    if (in.rank != 4 && in.rank != -1)
        return tool_fail("%s: input '%s' has %d dims; a detector takes an image batch (N, 3, H, W)", o->model, in.name, in.rank);
    if (in.rank == 4 && in.dims[1] >= 0 && in.dims[1] != 3)
        return tool_fail("%s: input '%s' has %lld channels; strata detect feeds RGB (3)", o->model, in.name, (long long)in.dims[1]);
    if (in.rank == 4 && in.dims[0] > 1)
        return tool_fail("%s: input '%s' has a fixed batch of %lld; strata detect feeds one image", o->model, in.name,
                         (long long)in.dims[0]);
    int side = o->size ? o->size : 640;
    *h = in.rank == 4 && in.dims[2] > 0 ? (int)in.dims[2] : side;
    *w = in.rank == 4 && in.dims[3] > 0 ? (int)in.dims[3] : side;
    if (o->size && (*h != side || *w != side) && !o->quiet)
        fprintf(stderr, "strata: note: %s takes a fixed %dx%d input; --size %d does not apply\n", o->model, *w, *h, side);
    if (*h > 8192 || *w > 8192) return tool_fail("%s: input size %dx%d is too large", o->model, *w, *h);
    return 0;
}

static void print_text(const st_box *b, int n, int n_classes)
{
    for (int i = 0; i < n; i++) {
        const char *name = n_classes == ST_COCO_CLASSES ? st_coco_name(b[i].cls) : NULL;
        char word[64];
        /* one word, so the line splits into the same seven fields for every class */
        snprintf(word, sizeof word, "%s", name ? name : "-");
        for (char *p = word; *p; p++)
            if (*p == ' ') *p = '_';
        printf("%d %s %.4f %.1f %.1f %.1f %.1f\n", b[i].cls, word, b[i].score, b[i].x1, b[i].y1, b[i].x2, b[i].y2);
    }
}

static void print_json(const st_box *b, int n, int n_classes)
{
    printf("[");
    for (int i = 0; i < n; i++) {
        const char *name = n_classes == ST_COCO_CLASSES ? st_coco_name(b[i].cls) : NULL;
        printf("%s\n  {\"class\": %d, \"name\": ", i ? "," : "", b[i].cls);
        if (name) tool_json_string(stdout, name);
        else printf("null");
        printf(", \"score\": %.4f, \"box\": [%.1f, %.1f, %.1f, %.1f]}", b[i].score, b[i].x1, b[i].y1, b[i].x2, b[i].y2);
    }
    printf("%s]\n", n ? "\n" : "");
}

/* The overlay: each box in its class colour with "name score" on top. */
static int draw_overlay(const tool_opts *o, st_image *im, const st_box *b, int n, int n_classes)
{
    st_font font;
    bool have_font = st_font_load(ST_DEFAULT_FONT, &font) == ST_OK;
    /* no font file draws boxes alone; no memory for one fails */
    if (!have_font && st_error_code() == ST_ERR_NOMEM) return tool_fail_st("");
    if (!have_font && !o->quiet) fprintf(stderr, "strata: note: %s; drawing boxes without labels\n", st_last_error());
    int lw = (int)lround((im->w + im->h) / 2.0 * 0.003);
    if (lw < 2) lw = 2;
    float px = (float)fmax(12.0, (im->w + im->h) / 2.0 * 0.025);
    /* lowest score first, so the best boxes end up on top */
    for (int i = n - 1; i >= 0; i--) {
        st_rgb c = st_palette(b[i].cls);
        st_draw_box(im, b[i].x1, b[i].y1, b[i].x2, b[i].y2, lw, c);
        if (!have_font) continue;
        const char *name = n_classes == ST_COCO_CLASSES ? st_coco_name(b[i].cls) : NULL;
        char label[96];
        if (name) snprintf(label, sizeof label, "%s %.2f", name, b[i].score);
        else snprintf(label, sizeof label, "class %d %.2f", b[i].cls, b[i].score);
        /* dark text on light colours, light on dark */
        double luma = 0.299 * c.r + 0.587 * c.g + 0.114 * c.b;
        st_rgb fg = luma > 140 ? (st_rgb){0, 0, 0} : (st_rgb){255, 255, 255};
        if (st_draw_label(im, &font, px, (int)floorf(b[i].x1), (int)floorf(b[i].y1), label, c, fg) != ST_OK) {
            st_font_free(&font);
            return tool_fail_st("");
        }
    }
    if (have_font) st_font_free(&font);
    if (st_image_save_png(o->out_path, im) != ST_OK) return tool_fail_st("");
    return 0;
}

int st_cmd_detect(int argc, char **argv)
{
    tool_opts o;
    if (tool_parse_vision(argc, argv, &o, 2)) return 1;
    if (o.n_args < 2) return tool_fail("detect needs a model and an image: strata detect MODEL IMAGE [-o OUT.png] [--json]");
    float conf = o.conf_set ? (float)o.conf : 0.25f, iou = o.iou_set ? (float)o.iou : 0.45f;
    const char *image_path = o.args[1];

    /* the image first: a bad file fails before the (slower) model load */
    st_image im;
    if (st_image_load(image_path, &im) != ST_OK) return tool_fail_st("");
    st_model *m = NULL;
    st_session *s = NULL;
    float *chw = NULL;
    st_box *boxes = NULL;
    st_npy out = {0};
    int rc = 0, in_h = 0, in_w = 0;
    if (st_model_load(o.model, &m) != ST_OK) {
        rc = tool_fail_st("");
        goto done;
    }
    if ((rc = input_size(&o, m, &in_h, &in_w))) goto done;
    if (tool_session_create(m, &o.so, &s) != ST_OK) {
        rc = tool_fail_st(o.model);
        goto done;
    }
    st_letterbox lb;
    st_letterbox_plan(im.w, im.h, in_w, in_h, &lb);
    chw = malloc((size_t)3 * in_h * in_w * sizeof *chw);
    if (!chw) {
        rc = tool_fail("out of memory for a %dx%d input", in_w, in_h);
        goto done;
    }
    if (st_letterbox_image(&im, &lb, chw) != ST_OK) {
        rc = tool_fail_st(image_path);
        goto done;
    }
    int64_t dims[4] = {1, 3, in_h, in_w};
    if ((rc = tool_infer_f32(m, s, o.model, 4, dims, chw, (size_t)3 * in_h * in_w * sizeof *chw, &out))) goto done;

    st_yolo_format f;
    if (st_yolo_format_of(out.rank, out.dims, in_h, in_w, &f) != ST_OK) {
        rc = tool_fail_st(o.model);
        goto done;
    }
    if (out.dims[0] != 1) {
        rc = tool_fail("%s: the output's batch is %lld for one image", o.model, (long long)out.dims[0]);
        goto done;
    }
    boxes = malloc((size_t)f.n_anchors * sizeof *boxes);
    if (!boxes) {
        rc = tool_fail("out of memory for %lld candidate boxes", (long long)f.n_anchors);
        goto done;
    }
    int n = st_yolo_decode(out.data, &f, conf, boxes);
    /* NMS over the best DETECT_MAX_NMS only: a useless model (or a picture
     * of noise) would otherwise make it quadratic in the anchor count */
    st_boxes_sort(boxes, n);
    if (n > DETECT_MAX_NMS) n = DETECT_MAX_NMS;
    n = st_nms(boxes, n, iou, true, DETECT_MAX_DET);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        st_box b = boxes[i];
        st_letterbox_box_to_src(&lb, &b.x1, &b.y1, &b.x2, &b.y2);
        /* a box wholly in the padding has nothing of the image left */
        if (b.x2 > b.x1 && b.y2 > b.y1) boxes[kept++] = b;
    }
    if (o.out_path && (rc = draw_overlay(&o, &im, boxes, kept, f.n_classes))) goto done;
    if (o.json) print_json(boxes, kept, f.n_classes);
    else print_text(boxes, kept, f.n_classes);
done:
    st_npy_free(&out);
    free(boxes);
    free(chw);
    st_session_free(s);
    st_model_free(m);
    st_image_free(&im);
    return rc;
}
