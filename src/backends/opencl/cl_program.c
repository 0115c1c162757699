/*
 * cl_program.c — the OpenCL program: every kernel of the .cl files in
 * src/backends/opencl, embedded into the library at build time (st_cl_source.h, made by
 * cmake/embed_opencl.cmake), built once per device and cached on disk.
 *
 * Building from source is slow on some drivers (seconds on PoCL, which
 * runs clang), so the device binary (CL_PROGRAM_BINARIES) is saved under
 * $XDG_CACHE_HOME/strata/opencl, else ~/.cache/strata/opencl (without a
 * home, $TMPDIR or /tmp, under strata-<uid>/opencl), in a file
 * named after a hash of everything that decides the binary: the source,
 * the build options, the platform, device name and version, and the
 * driver version.  The next process loads it with
 * clCreateProgramWithBinary.  A file that is short, has the wrong header
 * or checksum, or that the driver refuses, is ignored and rebuilt (and
 * overwritten).  Files are written to a temporary name and renamed, so a
 * concurrent process never reads half a file.  STRATA_OPENCL_CACHE=0
 * turns the cache off.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/opencl/cl_internal.h"
#include "core/cache_dir.h"
#include "core/fault.h"
#include "core/status.h"
#include "opencl/st_cl_source.h"

#define MAGIC "STCLBIN1"

const char *const st_clk_names[ST_CLK_COUNT] = {
#define ST_CLK_NAME(n) "st_" #n,
    ST_CL_KERNEL_LIST(ST_CLK_NAME)
#undef ST_CLK_NAME
};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) { return fnv1a(h, s, strlen(s) + 1); }

static void build_options(const st_cl_device *d, char *out, size_t cap)
{
    /* f16 needs no cl_khr_fp16: kernels load and store it with the core
     * vload_half / vstore_half_rte and compute in f32 */
    /* Division and sqrt correctly rounded where the device can: OpenCL
     * otherwise allows 2.5 ulp, and a quotient that lands on the other
     * side of a rounding boundary (DynamicQuantizeLinear's x / scale on
     * NVIDIA's OpenCL) gives a different integer than the CPU does. */
    snprintf(out, cap, "-cl-std=CL1.2%s%s", d->fp64 ? " -DST_FP64" : "",
             d->exact_div ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
}

/* 128 bits of key as 32 hex digits. */
static void cache_key(const st_cl_device *d, const char *options, char *hex)
{
    uint64_t h[2] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
    for (int k = 0; k < 2; k++) {
        h[k] = fnv1a(h[k], st_cl_source, sizeof st_cl_source);
        h[k] = fnv_str(h[k], options);
        h[k] = fnv_str(h[k], d->platform_name);
        h[k] = fnv_str(h[k], d->name);
        h[k] = fnv_str(h[k], d->vendor);
        h[k] = fnv_str(h[k], d->version);
        h[k] = fnv_str(h[k], d->driver);
        h[k] = fnv1a(h[k], &k, sizeof k);
    }
    snprintf(hex, 33, "%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);
}

/* The binary from path, checked; NULL if absent or corrupt. */
static unsigned char *cache_load(const char *path, const char *key, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char head[8 + 32 + 16];
    unsigned char *bin = NULL;
    if (fread(head, 1, sizeof head, f) == sizeof head && memcmp(head, MAGIC, 8) == 0 && memcmp(head + 8, key, 32) == 0) {
        uint64_t n, sum;
        memcpy(&n, head + 40, 8);
        memcpy(&sum, head + 48, 8);
        if (n > 0 && n < ((uint64_t)1 << 32)) {
            bin = malloc((size_t)n);
            if (bin && (fread(bin, 1, (size_t)n, f) != n || fgetc(f) != EOF || fnv1a(0xcbf29ce484222325ull, bin, (size_t)n) != sum)) {
                free(bin);
                bin = NULL;
            }
            if (bin) *len = (size_t)n;
        }
    }
    fclose(f);
    return bin;
}

static void cache_save(const char *path, const char *key, const unsigned char *bin, size_t n)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    uint64_t len = n, sum = fnv1a(0xcbf29ce484222325ull, bin, n);
    bool ok = fwrite(MAGIC, 1, 8, f) == 8 && fwrite(key, 1, 32, f) == 32 && fwrite(&len, 8, 1, f) == 1 &&
              fwrite(&sum, 8, 1, f) == 1 && fwrite(bin, 1, n, f) == n;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

static st_status build_log(st_cl_device *d, cl_program p, cl_int err, const char *what)
{
    size_t n = 0;
    clGetProgramBuildInfo(p, d->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = malloc(n + 1);
    if (log) {
        log[0] = 0;
        clGetProgramBuildInfo(p, d->device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
        log[n] = 0;
    }
    st_status s = st_error(ST_ERR_BACKEND, "opencl: %s for '%s': %s (%d)%s%.1500s", what, d->name, st_cl_error_name(err),
                           (int)err, log && *log ? "; build log: " : "", log ? log : "");
    free(log);
    return s;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* What a test's injected build failure compiles: the real source with a
 * line that stops the compiler, so the driver's own failure path runs
 * (and the build log says it was injected). */
static const char fault_line[] = "\n#error \"strata: a build failure injected by a test (core/fault.h)\"\n";

static st_status build(st_cl_device *d)
{
    char options[256], key[33], dir[4096], path[4200];
    build_options(d, options, sizeof options);
    cache_key(d, options, key);
    bool inject = st_fault_hit(ST_FAULT_CL_BUILD, d->name, 0);
    bool cached = !inject && st_cache_dir("opencl", "STRATA_OPENCL_CACHE", dir, sizeof dir);
    if (cached) snprintf(path, sizeof path, "%s/%s.bin", dir, key);
    double t0 = now();
    cl_int err;
    if (cached) {
        size_t n = 0;
        unsigned char *bin = cache_load(path, key, &n);
        if (bin) {
            const unsigned char *bins[1] = {bin};
            cl_int bstatus = CL_SUCCESS;
            cl_program p = clCreateProgramWithBinary(d->context, 1, &d->device, &n, bins, &bstatus, &err);
            free(bin);
            if (err == CL_SUCCESS && bstatus == CL_SUCCESS && clBuildProgram(p, 1, &d->device, options, NULL, NULL) == CL_SUCCESS) {
                d->program = p;
                d->program_cached = true;
                d->program_seconds = now() - t0;
                return ST_OK;
            }
            if (p) clReleaseProgram(p); /* refused: rebuild from source below */
        }
    }
    const char *srcs[2] = {st_cl_source, fault_line};
    size_t lens[2] = {sizeof st_cl_source - 1, sizeof fault_line - 1};
    cl_program p = clCreateProgramWithSource(d->context, inject ? 2 : 1, srcs, lens, &err);
    ST_TRY(st_cl_check(err, "clCreateProgramWithSource"));
    err = clBuildProgram(p, 1, &d->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        st_status s = build_log(d, p, err, "clBuildProgram");
        clReleaseProgram(p);
        return s;
    }
    d->program = p;
    d->program_seconds = now() - t0;
    if (cached) {
        size_t n = 0;
        if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) == CL_SUCCESS && n > 0) {
            unsigned char *bin = malloc(n);
            unsigned char *bins[1] = {bin};
            if (bin && clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
                cache_save(path, key, bin, n);
            free(bin);
        }
    }
    return ST_OK;
}

/* A build that failed is tried again by the next session: the failure
 * may have been the driver's want of memory, and a failed session must
 * not leave the device unusable for the rest of the process. */
st_status st_cl_program(st_cl_device *d, cl_program *out)
{
    pthread_mutex_lock(&d->program_lock);
    st_status s = d->program ? ST_OK : build(d);
    *out = d->program;
    pthread_mutex_unlock(&d->program_lock);
    return s;
}
