/* image.c — loading, saving, resizing and tensor packing of RGB images. */
#include "vision/image.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/status.h"
#include "stb_image.h"
#include "stb_image_resize.h"
#include "stb_image_write.h"

static bool size_ok(int w, int h)
{
    return w > 0 && h > 0 && w <= ST_IMAGE_MAX_SIDE && h <= ST_IMAGE_MAX_SIDE &&
           (uint64_t)w * (uint64_t)h <= ST_IMAGE_MAX_PIXELS;
}

st_status st_image_alloc(st_image *im, int w, int h)
{
    im->w = im->h = 0;
    im->px = NULL;
    if (!size_ok(w, h))
        return st_error(ST_ERR_INVALID_ARG, "image size %dx%d is out of range (1 to %d per side, %u pixels)", w, h,
                        ST_IMAGE_MAX_SIDE, ST_IMAGE_MAX_PIXELS);
    im->px = calloc((size_t)w * (size_t)h, 3);
    if (!im->px) return st_error(ST_ERR_NOMEM, "out of memory for a %dx%d image", w, h);
    im->w = w;
    im->h = h;
    return ST_OK;
}

void st_image_free(st_image *im)
{
    if (!im) return;
    free(im->px);
    im->px = NULL;
    im->w = im->h = 0;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* A PNG is complete when its chunk chain reaches IEND inside the file.
 * stb_image alone would decode some truncated files into a partly blank
 * picture; a cut download should be an error, not a silent wrong answer. */
static bool png_complete(const uint8_t *b, size_t n)
{
    size_t pos = 8;
    while (n - pos >= 12) {
        uint32_t len = be32(b + pos);
        if (len > n - pos - 12) return false;
        if (!memcmp(b + pos + 4, "IEND", 4)) return true;
        pos += 12 + (size_t)len;
    }
    return false;
}

/* A JPEG is complete when its marker structure reaches EOI: segments are
 * skipped by their lengths (so a thumbnail's EOI inside APP1 does not
 * count), entropy-coded data by scanning for a marker that is not a
 * stuffed 0xFF00 or a restart marker. */
static bool jpeg_complete(const uint8_t *b, size_t n)
{
    size_t pos = 2;
    for (;;) {
        if (pos >= n || b[pos] != 0xFF) return false;
        while (pos < n && b[pos] == 0xFF) pos++; /* fill bytes */
        if (pos >= n) return false;
        uint8_t m = b[pos++];
        if (m == 0xD9) return true;
        if ((m >= 0xD0 && m <= 0xD7) || m == 0x01) continue; /* no length */
        if (n - pos < 2) return false;
        size_t len = (size_t)b[pos] << 8 | b[pos + 1];
        if (len < 2 || len > n - pos) return false;
        pos += len;
        if (m == 0xDA) { /* start of scan: entropy-coded data follows */
            for (;;) {
                if (n - pos < 2) return false;
                if (b[pos] == 0xFF && b[pos + 1] != 0x00 && b[pos + 1] != 0xFF && !(b[pos + 1] >= 0xD0 && b[pos + 1] <= 0xD7))
                    break;
                pos++;
            }
        }
    }
}

st_status st_image_decode(const void *data, size_t size, const char *what, st_image *out)
{
    const uint8_t *b = data;
    out->w = out->h = 0;
    out->px = NULL;
    if (!size) return st_error(ST_ERR_INVALID_ARG, "'%s' is empty, not an image", what);
    bool png = size >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8);
    bool jpeg = size >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF;
    bool bmp = size >= 2 && b[0] == 'B' && b[1] == 'M';
    /* By magic bytes only: stb_image also guesses at TGA, which has no
     * magic, and would take some text files for pictures. */
    if (!png && !jpeg && !bmp) return st_error(ST_ERR_INVALID_ARG, "'%s' is not a PNG, JPEG or BMP image", what);
    const char *kind = png ? "PNG" : jpeg ? "JPEG" : "BMP";
    if ((png && !png_complete(b, size)) || (jpeg && !jpeg_complete(b, size)))
        return st_error(ST_ERR_IO, "'%s' is a truncated or corrupt %s file (it ends before its last %s)", what, kind,
                        png ? "chunk" : "marker");
    /* a BMP states its file size in its header (bytes 2..5) */
    if (bmp && (size < 14 || (uint32_t)(b[2] | b[3] << 8 | b[4] << 16 | (uint32_t)b[5] << 24) > size))
        return st_error(ST_ERR_IO, "'%s' is a truncated BMP file (shorter than its header says)", what);
    if (size > INT_MAX) return st_error(ST_ERR_INVALID_ARG, "'%s' is too large (%zu bytes)", what, size);
    int w, h, comp;
    if (!stbi_info_from_memory(b, (int)size, &w, &h, &comp))
        return st_error(ST_ERR_IO, "'%s' is a corrupt %s file (%s)", what, kind, stbi_failure_reason());
    /* bounded before decoding, so a forged header cannot ask for a huge buffer */
    if (!size_ok(w, h))
        return st_error(ST_ERR_INVALID_ARG, "'%s' is %dx%d pixels; strata reads images up to %d pixels a side and %u in all",
                        what, w, h, ST_IMAGE_MAX_SIDE, ST_IMAGE_MAX_PIXELS);
    int dw, dh;
    stbi_uc *rgba = stbi_load_from_memory(b, (int)size, &dw, &dh, &comp, 4);
    if (!rgba) return st_error(ST_ERR_IO, "'%s' is a corrupt %s file (%s)", what, kind, stbi_failure_reason());
    st_status r = st_image_alloc(out, dw, dh);
    if (r != ST_OK) {
        stbi_image_free(rgba);
        return st_error_prefix(r, "'%s': ", what);
    }
    size_t n = (size_t)dw * (size_t)dh;
    for (size_t i = 0; i < n; i++) {
        const stbi_uc *p = rgba + 4 * i;
        unsigned a = p[3];
        for (int c = 0; c < 3; c++) out->px[3 * i + c] = (uint8_t)((p[c] * a + 255u * (255u - a) + 127u) / 255u);
    }
    stbi_image_free(rgba);
    return ST_OK;
}

st_status st_image_load(const char *path, st_image *out)
{
    void *data;
    size_t size;
    out->w = out->h = 0;
    out->px = NULL;
    st_status r = st_file_read(path, &data, &size);
    if (r != ST_OK) return r;
    r = st_image_decode(data, size, path, out);
    free(data);
    return r;
}

typedef struct png_sink {
    FILE *f;
    int err; /* the first write's errno, 0 while all is well */
} png_sink;

static void png_write(void *ctx, void *data, int size)
{
    png_sink *s = ctx;
    if (!s->err && size > 0 && fwrite(data, 1, (size_t)size, s->f) != (size_t)size) s->err = errno ? errno : EIO;
}

st_status st_image_save_png(const char *path, const st_image *im)
{
    if (!im->px || !size_ok(im->w, im->h)) return st_error(ST_ERR_INVALID_ARG, "cannot write '%s': empty image", path);
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp) return st_error(ST_ERR_NOMEM, "out of memory writing '%s'", path);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        st_status r = st_error(ST_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        free(tmp);
        return r;
    }
    (void)fchmod(fd, 0644); /* mkstemp makes 0600; an output picture should be readable */
    png_sink s = {fdopen(fd, "wb"), 0};
    if (!s.f) {
        close(fd);
        unlink(tmp);
        free(tmp);
        return st_error(ST_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    int ok = stbi_write_png_to_func(png_write, &s, im->w, im->h, 3, im->px, im->w * 3);
    if (fclose(s.f) != 0 && !s.err) s.err = errno;
    if (ok && !s.err && rename(tmp, path) != 0) s.err = errno;
    if (!ok || s.err) {
        unlink(tmp);
        free(tmp);
        return st_error(ST_ERR_IO, "cannot write '%s': %s", path, ok ? strerror(s.err) : "PNG encoding failed");
    }
    free(tmp);
    return ST_OK;
}

st_status st_image_resize(const st_image *src, int w, int h, st_image *out)
{
    st_status r = st_image_alloc(out, w, h);
    if (r != ST_OK) return r;
    if (!stbir_resize_uint8(src->px, src->w, src->h, 0, out->px, w, h, 0, 3)) {
        st_image_free(out);
        return st_error(ST_ERR_NOMEM, "resizing a %dx%d image to %dx%d failed", src->w, src->h, w, h);
    }
    return ST_OK;
}

void st_image_to_chw(const st_image *im, int x0, int y0, int tw, int th, const float mean[3], const float std[3],
                     float pad, int bgr, float *dst)
{
    size_t plane = (size_t)tw * (size_t)th;
    for (int k = 0; k < 3; k++) {
        int c = bgr ? 2 - k : k; /* the pixel channel plane k holds */
        /* one multiply-add per value: (p / 255 - m) / s = p * a + b */
        float a = 1.0f / (255.0f * std[k]), b = -mean[k] / std[k];
        float *d = dst + (size_t)k * plane;
        for (int y = 0; y < th; y++) {
            float *row = d + (size_t)y * (size_t)tw;
            int iy = y - y0;
            if (iy < 0 || iy >= im->h) {
                for (int x = 0; x < tw; x++) row[x] = pad;
                continue;
            }
            const uint8_t *s = im->px + (size_t)iy * (size_t)im->w * 3 + c;
            for (int x = 0; x < tw; x++) {
                int ix = x - x0;
                row[x] = ix >= 0 && ix < im->w ? (float)s[3 * ix] * a + b : pad;
            }
        }
    }
}
