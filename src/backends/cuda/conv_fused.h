/*
 * conv_fused.h — a channels-last f16/bf16 Conv with its bias, ReLU or
 * SiLU, and a residual Add (and an activation after it) as one cuDNN
 * operation graph (conv_fused.cu).  k_conv.cu describes
 * the problem, builds the plan on a command's first run and runs it after.
 */
#ifndef ST_CUDA_CONV_FUSED_H
#define ST_CUDA_CONV_FUSED_H

#include <cudnn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include "core/status.h"
#include "core/dtype.h"
}

enum { ST_CF_NONE, ST_CF_RELU, ST_CF_SILU };

/* The problem in cuDNN's terms: dims [N, C, H, W] and element strides of
 * X and Y (channels-last), the window, the dtype, whether a bias is
 * added and the activation.  W is KRSC, packed; the bias is [K]. */
typedef struct st_cf_problem {
    int64_t xdims[4], xstrides[4], ydims[4], ystrides[4];
    int64_t kh, kw, strides[2], dilations[2], pre[2], post[2];
    st_dtype dtype;
    bool has_b;
    int act;                         /* ST_CF_*, after the bias */
    bool has_r;                      /* a residual R of Y's dims added after act */
    int64_t rstrides[4];
    int act2;                        /* ST_CF_*, after the residual */
    int64_t align[5];                /* X, W, B, Y, R: the byte alignment promised to cuDNN */
} st_cf_problem;

typedef struct st_cf_plan st_cf_plan;

/* STRATA_CUDA_CONV_FUSED: 0 off (ST_CF_OFF); unset, 1 or all (the name an
 * earlier version gave it) every conv that fits (ST_CF_ON); noswish: as ON
 * but not SiLU convs (ST_CF_NOSWISH, to tell causes apart) */
enum { ST_CF_OFF, ST_CF_ON, ST_CF_NOSWISH };
int st_cf_mode(void);
enum { ST_CF_MAX_CANDS = 6 };
/* The graph and the first max_cands engine configs of cuDNN's heuristic
 * (mode A) that build it, keep f32 accumulation and need at most
 * ws_limit bytes of workspace (at >= 0: only the config at that position
 * of the heuristic's list); the first of them is chosen.  An error (and
 * *out NULL) when none builds. */
st_status st_cf_build(cudnnHandle_t h, const st_cf_problem *q, size_t ws_limit, int at, int max_cands, st_cf_plan **out);
size_t st_cf_workspace(const st_cf_plan *p);
/* The candidates built, candidate i's position in the heuristic's list
 * (what a tuning cache keeps), and making candidate i the one that runs. */
int st_cf_candidates(const st_cf_plan *p);
int st_cf_candidate_at(const st_cf_plan *p, int i);
void st_cf_choose(st_cf_plan *p, int i);
/* The largest power of two up to 16 that divides p: the alignment a
 * plan built for p promises; a later run whose operands have less needs
 * a new plan. */
int64_t st_cf_align(const void *p);
/* Whether these operands have the alignment the plan was built for. */
bool st_cf_fits(const st_cf_plan *p, const void *x, const void *w, const void *b, const void *y, const void *r);
/* Enqueues the fused conv on h's stream (r NULL without a residual). */
st_status st_cf_run(cudnnHandle_t h, const st_cf_plan *p, const void *x, const void *w, const void *b, void *y, const void *r,
                    void *ws);
void st_cf_free(st_cf_plan *p);

#endif
