/*
 * test_postprocess.c — the vision library's pre- and post-processing on
 * synthetic inputs whose answers are known by construction:
 *   letterbox     plans, and coordinates that go to the model input and back
 *   yolo decode   hand-built YOLOv8 (N, 4+C, A) and YOLOv5 (N, A, 5+C)
 *                 outputs with planted boxes; shapes that are neither
 *   nms           overlap within a class, across classes, IoU edge cases
 *   geometry      hulls and minimum-area rectangles of rotated rectangles
 *   db            probability maps with planted text regions: found, grown
 *                 by the unclip distance, weak and thin ones dropped, sorted
 *   ctc           keys files, repeats, blanks, the space class, scores
 *   warp          perspective crops of a linear ramp, quarter turns
 *   images        PNG round trip, and every kind of bad file refused
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "stb_image_write.h"
#include "strata.h"
#include "vision/ctc.h"
#include "vision/db_postprocess.h"
#include "vision/geom.h"
#include "vision/image.h"
#include "vision/letterbox.h"
#include "vision/nms.h"
#include "vision/warp.h"
#include "vision/yolo_decode.h"

#define NEAR(a, b, tol) (fabs((double)(a) - (double)(b)) <= (tol))

/* ---- letterbox ---- */

static void test_letterbox(void)
{
    st_letterbox lb;
    st_letterbox_plan(1280, 720, 640, 640, &lb);
    CHECK(lb.new_w == 640 && lb.new_h == 360 && lb.pad_x == 0 && lb.pad_y == 140);
    st_letterbox_plan(300, 600, 640, 640, &lb);
    CHECK(lb.new_w == 320 && lb.new_h == 640 && lb.pad_x == 160 && lb.pad_y == 0);
    st_letterbox_plan(5000, 2, 640, 640, &lb); /* a sliver keeps at least one row */
    CHECK(lb.new_w == 640 && lb.new_h == 1 && lb.pad_y == 319);

    /* random sizes: a point goes to the input and back unchanged, the
     * image's corners land on the scaled image's corners */
    test_rng r = {7};
    for (int t = 0; t < 500; t++) {
        int sw = (int)rng_range(&r, 1, 4000), sh = (int)rng_range(&r, 1, 4000);
        int dw = 32 * (int)rng_range(&r, 1, 40), dh = 32 * (int)rng_range(&r, 1, 40);
        st_letterbox_plan(sw, sh, dw, dh, &lb);
        CHECKF(lb.new_w >= 1 && lb.new_w <= dw && lb.new_h >= 1 && lb.new_h <= dh, "%dx%d -> %dx%d", sw, sh, dw, dh);
        CHECK(lb.pad_x >= 0 && lb.pad_x + lb.new_w <= dw && lb.pad_y >= 0 && lb.pad_y + lb.new_h <= dh);
        float x = (float)(rng_u32(&r) % 1000) / 1000 * sw, y = (float)(rng_u32(&r) % 1000) / 1000 * sh, x0 = x, y0 = y;
        st_letterbox_to_dst(&lb, &x, &y);
        st_letterbox_to_src(&lb, &x, &y);
        CHECKF(NEAR(x, x0, 1e-3 * sw) && NEAR(y, y0, 1e-3 * sh), "(%g,%g) came back as (%g,%g)", x0, y0, x, y);
        float cx = (float)sw, cy = (float)sh;
        st_letterbox_to_dst(&lb, &cx, &cy);
        CHECK(NEAR(cx, lb.pad_x + lb.new_w, 1e-2) && NEAR(cy, lb.pad_y + lb.new_h, 1e-2));
    }

    /* a box in the padding and past the edge is clipped to the image */
    st_letterbox_plan(1280, 720, 640, 640, &lb);
    float x1 = -20, y1 = 100, x2 = 700, y2 = 320;
    st_letterbox_box_to_src(&lb, &x1, &y1, &x2, &y2);
    CHECK(x1 == 0 && y1 == 0 && x2 == 1280 && NEAR(y2, 360, 1e-3));
    float nx1 = NAN, ny1 = 10, nx2 = 20, ny2 = NAN;
    st_letterbox_box_to_src(&lb, &nx1, &ny1, &nx2, &ny2);
    CHECK(nx1 == 0 && ny2 == 0);

    /* the tensor: grey padding, the image's values in [0, 1] in between */
    st_image im;
    CHECK(st_image_alloc(&im, 4, 2) == ST_OK);
    memset(im.px, 255, 4 * 2 * 3);
    st_letterbox_plan(4, 2, 8, 8, &lb);
    float t[3 * 8 * 8];
    CHECK(st_letterbox_image(&im, &lb, t) == ST_OK);
    CHECK(lb.pad_y == 2 && lb.new_h == 4);
    CHECK(NEAR(t[0], 114.0 / 255, 1e-6) && NEAR(t[3 * 8 + 3], 1.0, 1e-6) && NEAR(t[2 * 64 + 7 * 8], 114.0 / 255, 1e-6));
    st_image_free(&im);
}

/* ---- YOLO decoding ---- */

typedef struct planted {
    float cx, cy, w, h;
    int cls;
    float score;
} planted;

static const planted plant[] = {
    {20, 24, 10, 8, 2, 0.90f},
    {40, 12, 16, 20, 0, 0.60f},
    {50, 50, 6, 6, 1, 0.30f},
};
#define N_PLANT 3

static void find_planted(const st_box *b, int n, float conf, const char *what)
{
    int want = 0;
    for (int p = 0; p < N_PLANT; p++) {
        if (!(plant[p].score > conf)) continue;
        want++;
        int hit = 0;
        for (int i = 0; i < n; i++)
            if (b[i].cls == plant[p].cls && NEAR(b[i].score, plant[p].score, 1e-5) &&
                NEAR(b[i].x1, plant[p].cx - plant[p].w / 2, 1e-4) && NEAR(b[i].y1, plant[p].cy - plant[p].h / 2, 1e-4) &&
                NEAR(b[i].x2, plant[p].cx + plant[p].w / 2, 1e-4) && NEAR(b[i].y2, plant[p].cy + plant[p].h / 2, 1e-4))
                hit++;
        CHECKF(hit == 1, "%s: planted box %d found %d times", what, p, hit);
    }
    CHECKF(n == want, "%s: %d boxes decoded, %d planted above %g", what, n, want, conf);
}

static void test_yolo(void)
{
    const int H = 64, W = 64, C = 3;
    int64_t A = st_yolo_cells(H, W, 0);
    CHECK(A == 64 + 16 + 4);
    CHECK(st_yolo_cells(640, 640, 0) == 8400 && st_yolo_cells(640, 640, 1) == 8500 && st_yolo_cells(480, 640, 0) == 6300);

    /* v8: (1, 4 + C, A), column per anchor; background scores 0.1 */
    float *v8 = malloc(sizeof(float) * (4 + C) * A);
    for (int64_t i = 0; i < (4 + C) * A; i++) v8[i] = 0.1f;
    for (int p = 0; p < N_PLANT; p++) {
        int64_t a = 5 + 17 * p;
        v8[0 * A + a] = plant[p].cx, v8[1 * A + a] = plant[p].cy, v8[2 * A + a] = plant[p].w, v8[3 * A + a] = plant[p].h;
        v8[(4 + plant[p].cls) * A + a] = plant[p].score;
    }
    v8[4 * A + 70] = NAN; /* a NaN score is no detection */
    int64_t d8[3] = {1, 4 + C, A};
    st_yolo_format f;
    CHECK(st_yolo_format_of(3, d8, H, W, &f) == ST_OK && f.layout == ST_YOLO_V8 && f.n_classes == C && f.n_anchors == A);
    st_box boxes[512];
    find_planted(boxes, st_yolo_decode(v8, &f, 0.25f, boxes), 0.25f, "v8");
    /* under the background score every anchor is a candidate, the NaN one too (its other classes score 0.1) */
    CHECK(st_yolo_decode(v8, &f, 0.05f, boxes) == A);

    /* v5: (1, 3A, 5 + C), row per anchor; score = objectness * class */
    int64_t A5 = 3 * A;
    float *v5 = calloc((size_t)(A5 * (5 + C)), sizeof(float));
    for (int64_t i = 0; i < A5; i++) v5[i * (5 + C) + 4] = 0.2f, v5[i * (5 + C) + 5] = 0.9f; /* 0.18 < conf */
    for (int p = 0; p < N_PLANT; p++) {
        float *r = v5 + (int64_t)(11 + 40 * p) * (5 + C);
        r[0] = plant[p].cx, r[1] = plant[p].cy, r[2] = plant[p].w, r[3] = plant[p].h;
        r[4] = 0.5f;
        r[5] = 0;
        r[5 + plant[p].cls] = plant[p].score * 2; /* 0.5 * 2s = s */
    }
    int64_t d5[3] = {1, A5, 5 + C};
    CHECK(st_yolo_format_of(3, d5, H, W, &f) == ST_OK && f.layout == ST_YOLO_V5 && f.n_classes == C && f.n_anchors == A5);
    find_planted(boxes, st_yolo_decode(v5, &f, 0.25f, boxes), 0.25f, "v5");

    /* shapes that are neither are refused by shape, with the shape in the message */
    int64_t e2e[3] = {1, 300, 6}, rank2[2] = {1, 84}, off[3] = {1, 84, 8401};
    CHECK(st_yolo_format_of(3, e2e, 640, 640, &f) == ST_ERR_SHAPE);
    CHECK_MSG(st_last_error(), "(1, 300, 6)");
    CHECK(st_yolo_format_of(2, rank2, 640, 640, &f) == ST_ERR_SHAPE);
    CHECK(st_yolo_format_of(3, off, 640, 640, &f) == ST_ERR_SHAPE);
    /* tiny inputs: the v8 anchor count is below 4 + C, still told apart */
    int64_t tiny[3] = {1, 84, st_yolo_cells(32, 32, 0)};
    CHECK(st_yolo_format_of(3, tiny, 32, 32, &f) == ST_OK && f.layout == ST_YOLO_V8 && f.n_classes == 80);
    free(v8);
    free(v5);
}

/* ---- NMS ---- */

static void test_nms(void)
{
    st_box a = {0, 0, 10, 10, 0.9f, 0}, b = {5, 0, 15, 10, 0.8f, 0};
    CHECK(NEAR(st_box_iou(&a, &b), 50.0 / 150, 1e-6));
    st_box touch = {10, 0, 20, 10, 0.5f, 0}, empty = {3, 3, 3, 3, 0.5f, 0};
    CHECK(st_box_iou(&a, &touch) == 0);             /* sharing an edge is no overlap */
    CHECK(st_box_iou(&a, &a) == 1);
    CHECK(st_box_iou(&empty, &empty) == 0);         /* no union: 0, not NaN */
    CHECK(st_box_iou(&a, &empty) == 0);

    /* one class: the weaker overlapping box goes, a distant one stays */
    st_box s1[] = {{5, 0, 15, 10, 0.8f, 0}, {0, 0, 10, 10, 0.9f, 0}, {50, 50, 60, 60, 0.7f, 0}};
    int n = st_nms(s1, 3, 0.3f, true, 300);
    CHECK(n == 2 && s1[0].score == 0.9f && s1[1].score == 0.7f);
    /* the same boxes of different classes all stay when class-aware ... */
    st_box s2[] = {{0, 0, 10, 10, 0.9f, 0}, {5, 0, 15, 10, 0.8f, 1}, {1, 1, 10, 10, 0.7f, 2}};
    CHECK(st_nms(s2, 3, 0.3f, true, 300) == 3);
    /* ... and not when agnostic */
    st_box s3[] = {{0, 0, 10, 10, 0.9f, 0}, {5, 0, 15, 10, 0.8f, 1}, {1, 1, 10, 10, 0.7f, 2}};
    CHECK(st_nms(s3, 3, 0.3f, false, 300) == 1);
    /* IoU exactly at the threshold is kept: only "greater than" suppresses */
    st_box s4[] = {{0, 0, 10, 10, 0.9f, 0}, {5, 0, 15, 10, 0.8f, 0}};
    CHECK(st_nms(s4, 2, 50.0f / 150.0f, true, 300) == 2);
    st_box s5[] = {{0, 0, 10, 10, 0.9f, 0}, {5, 0, 15, 10, 0.8f, 0}};
    CHECK(st_nms(s5, 2, 0.33f, true, 300) == 1);
    /* a chain: A suppresses B, B would have suppressed C, C stays */
    st_box s6[] = {{0, 0, 10, 10, 0.9f, 0}, {4, 0, 14, 10, 0.8f, 0}, {8, 0, 18, 10, 0.7f, 0}};
    n = st_nms(s6, 3, 0.4f, true, 300);
    CHECK(n == 2 && s6[0].score == 0.9f && s6[1].score == 0.7f);
    /* max_keep bounds the result; NaN scores sort last */
    st_box s7[] = {{0, 0, 1, 1, NAN, 0}, {0, 10, 1, 11, 0.5f, 0}, {0, 20, 1, 21, 0.6f, 0}, {0, 30, 1, 31, 0.7f, 0}};
    n = st_nms(s7, 4, 0.5f, true, 2);
    CHECK(n == 2 && s7[0].score == 0.7f && s7[1].score == 0.6f);
    /* equal scores: the order is by position, whatever the input order */
    st_box e1[] = {{0, 20, 5, 25, 0.5f, 0}, {0, 0, 5, 5, 0.5f, 0}}, e2[] = {{0, 0, 5, 5, 0.5f, 0}, {0, 20, 5, 25, 0.5f, 0}};
    st_boxes_sort(e1, 2);
    st_boxes_sort(e2, 2);
    CHECK(!memcmp(e1, e2, sizeof e1) && e1[0].y1 == 0);
    CHECK(st_nms(NULL, 0, 0.5f, true, 300) == 0);
}

/* ---- geometry ---- */

static void test_geom(void)
{
    /* a 40 x 10 rectangle turned by 20 degrees, as a dense point grid */
    st_pointf pts[41 * 11], hull[2 * 41 * 11];
    double ang = 20 * M_PI / 180, c = cos(ang), s = sin(ang);
    int n = 0;
    for (int i = 0; i <= 40; i++)
        for (int j = 0; j <= 10; j++) {
            double u = i - 20.0, v = j - 5.0;
            pts[n++] = (st_pointf){(float)(100 + u * c - v * s), (float)(50 + u * s + v * c)};
        }
    int nh = st_convex_hull(pts, n, hull);
    /* four corners, and maybe a few edge points that float rounding
     * pushed a hair outwards; never an interior point */
    CHECKF(nh >= 4 && nh <= 2 * (40 + 10), "hull of %d points", nh);
    st_rrect r = st_min_area_rect(hull, nh);
    CHECKF(NEAR(r.w, 40, 1e-3) && NEAR(r.h, 10, 1e-3), "w %g h %g", r.w, r.h);
    CHECK(NEAR(r.cx, 100, 1e-3) && NEAR(r.cy, 50, 1e-3));
    CHECK(NEAR(r.ux, c, 1e-5) && NEAR(r.uy, s, 1e-5));
    st_pointf q[4];
    st_rrect_corners(&r, q);
    /* top-left is the corner before the width, above the height */
    CHECK(NEAR(q[0].x, 100 - 20 * c + 5 * s, 1e-3) && NEAR(q[0].y, 50 - 20 * s - 5 * c, 1e-3));
    CHECK(NEAR(q[2].x, 100 + 20 * c - 5 * s, 1e-3) && NEAR(q[2].y, 50 + 20 * s + 5 * c, 1e-3));

    /* a tall rectangle: the width axis stays near x, so w < h */
    st_pointf t[4] = {{0, 0}, {6, 0}, {6, 30}, {0, 30}};
    nh = st_convex_hull(t, 4, hull);
    r = st_min_area_rect(hull, nh);
    CHECK(NEAR(r.w, 6, 1e-5) && NEAR(r.h, 30, 1e-5) && NEAR(r.ux, 1, 1e-6));
    /* degenerate inputs: collinear, one point */
    st_pointf line[3] = {{0, 0}, {5, 5}, {10, 10}};
    nh = st_convex_hull(line, 3, hull);
    CHECK(nh == 2);
    r = st_min_area_rect(hull, nh);
    CHECK(NEAR(r.w * r.h, 0, 1e-6) && NEAR(fmax(r.w, r.h), sqrt(200), 1e-4));
    st_pointf one = {3, 4};
    nh = st_convex_hull(&one, 1, hull);
    r = st_min_area_rect(hull, nh);
    CHECK(nh == 1 && r.w == 0 && r.h == 0 && r.cx == 3 && r.cy == 4);
}

/* ---- DB post-processing ---- */

/* Probability p at every pixel whose centre lies in the rectangle with
 * centre (cx, cy), size w x h (from centre to centre), turned by deg. */
static void plant_rect(float *map, int mh, int mw, float cx, float cy, float w, float h, float deg, float p)
{
    double a = deg * M_PI / 180, c = cos(a), s = sin(a);
    for (int y = 0; y < mh; y++)
        for (int x = 0; x < mw; x++) {
            double dx = x - cx, dy = y - cy, u = dx * c + dy * s, v = -dx * s + dy * c;
            if (fabs(u) <= w / 2 + 1e-6 && fabs(v) <= h / 2 + 1e-6) map[y * mw + x] = p;
        }
}

static double unclip_grow(double w, double h) { return w * h * 1.5 / (2 * (w + h)); }

static void test_db(void)
{
    const int MH = 120, MW = 240;
    float *map = calloc((size_t)MH * MW, sizeof(float));
    /* line 1: two words of different heights; line 2: a long line turned
     * by 5 degrees; a weak region (mean 0.4 < 0.6) and a thin one (2 px) */
    plant_rect(map, MH, MW, 140, 20, 60, 12, 0, 0.9f);  /* right word, pixels 110..170 x 14..26 */
    plant_rect(map, MH, MW, 40, 21, 40, 16, 0, 0.8f);   /* left word, a bit lower and taller */
    plant_rect(map, MH, MW, 110, 70, 150, 14, 5, 0.95f);
    plant_rect(map, MH, MW, 30, 105, 30, 8, 0, 0.4f);
    plant_rect(map, MH, MW, 150, 105, 60, 2, 0, 0.9f);
    st_db_params p;
    st_db_params_default(&p);
    st_quad *q;
    int n;
    CHECK(st_db_boxes(map, MH, MW, &p, &q, &n) == ST_OK);
    CHECKF(n == 3, "%d boxes", n);
    if (n == 3) {
        st_quads_sort(q, n);
        /* reading order: left word, right word, then the long line */
        CHECK(q[0].p[0].x < 30 && q[1].p[0].x > 100 && q[2].p[0].y > 40);
        /* the right word: centres 110..170 x 14..26 -> 60 x 12, grown by d a side */
        double d = unclip_grow(60, 12);
        CHECKF(NEAR(q[1].p[0].x, 110 - d, 1e-3) && NEAR(q[1].p[0].y, 14 - d, 1e-3), "tl (%g,%g), want (%g,%g)", q[1].p[0].x,
               q[1].p[0].y, 110 - d, 14 - d);
        CHECK(NEAR(q[1].p[2].x, 170 + d, 1e-3) && NEAR(q[1].p[2].y, 26 + d, 1e-3));
        CHECK(NEAR(q[1].score, 0.9, 1e-5));
        d = unclip_grow(40, 16);
        CHECK(NEAR(q[0].p[1].x - q[0].p[0].x, 40 + 2 * d, 1e-3) && NEAR(q[0].p[3].y - q[0].p[0].y, 16 + 2 * d, 1e-3));
        /* the turned line: its angle, and a size within a pixel of the
         * planted one grown (the pixel grid rounds the region's edges) */
        float w = hypotf(q[2].p[1].x - q[2].p[0].x, q[2].p[1].y - q[2].p[0].y);
        float h = hypotf(q[2].p[3].x - q[2].p[0].x, q[2].p[3].y - q[2].p[0].y);
        float deg = atan2f(q[2].p[1].y - q[2].p[0].y, q[2].p[1].x - q[2].p[0].x) * 180 / (float)M_PI;
        d = unclip_grow(150, 14);
        CHECKF(NEAR(deg, 5, 0.5) && NEAR(w, 150 + 2 * d, 1.5) && NEAR(h, 14 + 2 * d, 1.5), "deg %g w %g h %g", deg, w, h);
        CHECK(NEAR(q[2].score, 0.95, 1e-5));

        /* to image coordinates: twice the size, clipped */
        st_quads_map(q, n, 2, 2, 479, 239);
        d = unclip_grow(60, 12);
        CHECK(NEAR(q[1].p[0].x, (110 - d + 0.5) * 2 - 0.5, 1e-3));
    }
    free(q);
    /* nothing above the threshold, and a bad size */
    memset(map, 0, sizeof(float) * MH * MW);
    CHECK(st_db_boxes(map, MH, MW, &p, &q, &n) == ST_OK && n == 0 && !q);
    CHECK(st_db_boxes(map, 0, MW, &p, &q, &n) == ST_ERR_INVALID_ARG);
    /* a map full of text is one region the size of the map */
    for (int i = 0; i < MH * MW; i++) map[i] = 1;
    CHECK(st_db_boxes(map, MH, MW, &p, &q, &n) == ST_OK && n == 1);
    free(q);
    free(map);

    /* sorting on its own: two lines given bottom-up and right to left */
    st_quad s[4];
    float xs[4] = {300, 10, 200, 20}, ys[4] = {100, 102, 10, 12};
    for (int i = 0; i < 4; i++) {
        st_rrect r = {xs[i] + 40, ys[i] + 10, 80, 20, 1, 0};
        st_rrect_corners(&r, s[i].p);
        s[i].score = (float)i;
    }
    st_quads_sort(s, 4);
    CHECK(s[0].score == 3 && s[1].score == 2 && s[2].score == 1 && s[3].score == 0);
}

/* ---- CTC ---- */

static void test_ctc(void)
{
    st_charset cs;
    const char keys[] = "a\r\nb\nc"; /* CRLF, and no final newline */
    CHECK(st_charset_parse(keys, strlen(keys), "keys", &cs) == ST_OK);
    CHECK(cs.n == 5 && !strcmp(cs.chars[0], "") && !strcmp(cs.chars[1], "a") && !strcmp(cs.chars[3], "c") &&
          !strcmp(cs.chars[4], " "));
    /* steps: a a _ a b b ' ' c _ _ c -> "aab cc" (the blank splits the c's) */
    int seq[] = {1, 1, 0, 1, 2, 2, 4, 3, 0, 0, 3};
    int T = (int)(sizeof seq / sizeof seq[0]);
    float probs[11 * 5];
    double want = 0;
    int kept = 0;
    for (int t = 0; t < T; t++) {
        float top = 0.5f + 0.04f * t;
        for (int c = 0; c < 5; c++) probs[t * 5 + c] = c == seq[t] ? top : (1 - top) / 4;
        if (seq[t] && (t == 0 || seq[t - 1] != seq[t])) want += top, kept++;
    }
    char *text;
    float score;
    CHECK(st_ctc_greedy(probs, T, 5, &cs, &text, &score) == ST_OK);
    CHECKF(text && !strcmp(text, "aab cc"), "got \"%s\"", text ? text : "(null)");
    CHECK(NEAR(score, want / kept, 1e-6));
    free(text);
    /* all blanks: empty text, score 0 */
    for (int t = 0; t < T; t++)
        for (int c = 0; c < 5; c++) probs[t * 5 + c] = c == 0 ? 0.9f : 0.025f;
    CHECK(st_ctc_greedy(probs, T, 5, &cs, &text, &score) == ST_OK && !strcmp(text, "") && score == 0);
    free(text);
    /* a model whose class count disagrees with the keys */
    CHECK(st_ctc_greedy(probs, T, 4, &cs, &text, &score) == ST_ERR_SHAPE);
    CHECK_MSG(st_last_error(), "keys file");
    st_charset_free(&cs);
    /* multi-byte characters; empty lines and empty files are refused */
    const char cjk[] = "\xe4\xb8\xad\n\xe6\x96\x87\n";
    CHECK(st_charset_parse(cjk, strlen(cjk), "cjk", &cs) == ST_OK && cs.n == 4 && !strcmp(cs.chars[2], "\xe6\x96\x87"));
    st_charset_free(&cs);
    CHECK(st_charset_parse("a\n\nb\n", 5, "gap", &cs) == ST_ERR_INVALID_ARG);
    CHECK_MSG(st_last_error(), "line 2");
    CHECK(st_charset_parse("", 0, "empty", &cs) == ST_ERR_INVALID_ARG);
}

/* ---- warps ---- */

static void test_warp(void)
{
    /* a ramp r = 2x, g = 2y: bilinear sampling is exact on it */
    st_image im, out;
    CHECK(st_image_alloc(&im, 100, 80) == ST_OK);
    for (int y = 0; y < 80; y++)
        for (int x = 0; x < 100; x++) {
            uint8_t *p = im.px + (y * 100 + x) * 3;
            p[0] = (uint8_t)(2 * x), p[1] = (uint8_t)(2 * y), p[2] = 7;
        }
    st_pointf q[4] = {{10, 20}, {30, 20}, {30, 30}, {10, 30}};
    CHECK(st_warp_quad(&im, q, &out) == ST_OK);
    CHECK(out.w == 20 && out.h == 10);
    int bad = 0;
    for (int j = 0; j < out.h; j++)
        for (int i = 0; i < out.w; i++) {
            const uint8_t *p = out.px + (j * out.w + i) * 3;
            /* strip pixel (i, j) samples the point (10 + i + 0.5, 20 + j + 0.5) */
            if (p[0] != 21 + 2 * i || p[1] != 41 + 2 * j || p[2] != 7) bad++;
        }
    CHECK(bad == 0);
    st_image_free(&out);
    /* a quad turned a quarter reads the ramp sideways: going along the
     * strip's width walks up the image */
    st_pointf r[4] = {{20, 60}, {20, 40}, {30, 40}, {30, 60}};
    CHECK(st_warp_quad(&im, r, &out) == ST_OK && out.w == 20 && out.h == 10);
    CHECK(out.px[1] > out.px[(out.w - 1) * 3 + 1] && out.px[0] < out.px[((out.h - 1) * out.w) * 3]);
    st_image_free(&out);
    /* degenerate quads are refused, not divided by zero */
    st_pointf flat[4] = {{10, 10}, {20, 10}, {30, 10}, {40, 10}};
    CHECK(st_warp_quad(&im, flat, &out) == ST_ERR_INVALID_ARG);
    st_pointf dot[4] = {{10, 10}, {10, 10}, {10, 10}, {10, 10}};
    CHECK(st_warp_quad(&im, dot, &out) == ST_ERR_INVALID_ARG);
    st_image_free(&im);

    /* quarter and half turns of a 3 x 2 image */
    CHECK(st_image_alloc(&im, 3, 2) == ST_OK);
    for (int i = 0; i < 6; i++) im.px[3 * i] = (uint8_t)i; /* 0 1 2 / 3 4 5 */
    CHECK(st_image_rotate90(&im, &out) == ST_OK && out.w == 2 && out.h == 3);
    /* counter-clockwise: rows become 2 5 / 1 4 / 0 3 */
    uint8_t want90[6] = {2, 5, 1, 4, 0, 3};
    for (int i = 0; i < 6; i++) CHECK(out.px[3 * i] == want90[i]);
    st_image_free(&out);
    st_image_rotate180(&im);
    for (int i = 0; i < 6; i++) CHECK(im.px[3 * i] == 5 - i);
    st_image_free(&im);
}

/* ---- image files ---- */

static char dir[] = "/tmp/strata_vision_XXXXXX";

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(b, 1, n, f);
        fclose(f);
    }
}

static void *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

static void jpeg_sink(void *ctx, void *data, int size)
{
    FILE *f = ctx;
    fwrite(data, 1, (size_t)size, f);
}

static void test_images(void)
{
    char png[512], bad[512], jpg[512];
    snprintf(png, sizeof png, "%s/a.png", dir);
    snprintf(bad, sizeof bad, "%s/bad.png", dir);
    snprintf(jpg, sizeof jpg, "%s/a.jpg", dir);
    st_image im, back;
    CHECK(st_image_alloc(&im, 37, 23) == ST_OK);
    for (int i = 0; i < 37 * 23 * 3; i++) im.px[i] = (uint8_t)(i * 7);
    CHECK(st_image_save_png(png, &im) == ST_OK);
    CHECK(st_image_load(png, &back) == ST_OK && back.w == 37 && back.h == 23 && !memcmp(back.px, im.px, 37 * 23 * 3));
    st_image_free(&back);

    size_t n;
    uint8_t *b = read_bytes(png, &n);
    /* cut anywhere: never a picture, always a message naming the file */
    int refused = 0, cuts = 0;
    for (size_t cut = 0; b && cut < n; cut += cut < 64 ? 1 : 97, cuts++) {
        write_bytes(bad, b, cut);
        if (st_image_load(bad, &back) != ST_OK && strstr(st_last_error(), bad)) refused++;
        else st_image_free(&back);
    }
    CHECKF(refused == cuts, "%d of %d truncated PNGs refused", refused, cuts);
    write_bytes(bad, b, n - 20);
    CHECK(st_image_load(bad, &back) == ST_ERR_IO);
    CHECK_MSG(st_last_error(), "truncated");
    /* a damaged body (the header intact) is refused too */
    if (b && n > 80) {
        for (size_t i = 60; i < n - 20; i++) b[i] ^= 0x5A;
        write_bytes(bad, b, n);
        CHECK(st_image_load(bad, &back) != ST_OK);
    }
    free(b);

    /* a JPEG reads; one cut short is refused */
    FILE *f = fopen(jpg, "wb");
    CHECK(f && stbi_write_jpg_to_func(jpeg_sink, f, im.w, im.h, 3, im.px, 90));
    if (f) fclose(f);
    CHECK(st_image_load(jpg, &back) == ST_OK && back.w == 37 && back.h == 23);
    st_image_free(&back);
    b = read_bytes(jpg, &n);
    refused = cuts = 0;
    for (size_t cut = 0; b && cut < n; cut += cut < 64 ? 1 : 53, cuts++) {
        write_bytes(bad, b, cut);
        if (st_image_load(bad, &back) != ST_OK) refused++;
        else st_image_free(&back);
    }
    CHECKF(refused == cuts, "%d of %d truncated JPEGs refused", refused, cuts);
    free(b);

    /* not an image, an empty file, a missing file, a directory */
    write_bytes(bad, "hello, this is text\n", 20);
    CHECK(st_image_load(bad, &back) == ST_ERR_INVALID_ARG);
    CHECK_MSG(st_last_error(), "not a PNG, JPEG or BMP image");
    write_bytes(bad, "", 0);
    CHECK(st_image_load(bad, &back) != ST_OK);
    CHECK(st_image_load("/nonexistent/x.png", &back) == ST_ERR_IO);
    CHECK(st_image_load(dir, &back) == ST_ERR_IO);
    /* a PNG header claiming 100000 x 100000 pixels is refused before decoding */
    static const uint8_t huge[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                   0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0, 8, 2, 0, 0, 0, 0, 0, 0, 0,
                                   0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    write_bytes(bad, huge, sizeof huge);
    CHECK(st_image_load(bad, &back) != ST_OK);
    /* writing into a missing directory fails and leaves nothing */
    CHECK(st_image_save_png("/nonexistent/dir/out.png", &im) == ST_ERR_IO);
    CHECK(st_image_alloc(&back, 0, 5) == ST_ERR_INVALID_ARG && st_image_alloc(&back, 40000, 2) == ST_ERR_INVALID_ARG);
    unlink(png);
    unlink(bad);
    unlink(jpg);
    st_image_free(&im);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    test_letterbox();
    test_yolo();
    test_nms();
    test_geom();
    test_db();
    test_ctc();
    test_warp();
    test_images();
    rmdir(dir);
    return check_exit("test_postprocess");
}
