#!/usr/bin/python3
"""YOLOv5n, YOLOv8n and YOLO11n rebuilt in PyTorch from their published layer
tables, with seeded random weights and BatchNorm statistics, exported to ONNX
(opset 17) with PyTorch's own outputs as the reference.

Written here from the published architecture descriptions (layer tables,
block definitions); no code from another project. Parameter counts are
asserted against the published model summaries, both as built and with every
Conv+BN fused (BN weight+bias 2c -> conv bias c):

             as built     fused        quoted
  yolov5n    1,872,157    1,867,405    1,867,405 (fused: YOLOv5's summary after 'Fusing layers')
  yolov8n    3,157,200    3,151,904    3,157,200 (as built)
  yolo11n    2,624,080    2,616,248    2,624,080 (as built)

Buffers (BN running statistics, v5's anchors) are never counted; the DFL's
fixed 1x16 conv weight is a frozen nn.Parameter and is counted, as published
(3,157,200 parameters = 3,157,184 trainable + 16).

Every model takes "images" (N, 3, H, W), float32 in [0, 1), H and W multiples
of 32, and gives "output0":
  yolov8n, yolo11n  (N, 84, A)  rows: cx, cy, w, h in pixels, 80 class scores
  yolov5n           (N, A, 85)  cols: cx, cy, w, h in pixels, objectness, 80 scores
with A = the anchor count (8400 for v8/11 at 640x640, 25200 for v5). Batch,
height and width are dynamic axes, so one file serves every case.

The output directory gets, per model:
  <model>.onnx
  <model>_<case>_input.npy     random input, uniform [0, 1), seeded
  <model>_<case>_output0.npy   PyTorch's float32 CPU output for it
where <case> is HxW_bN (e.g. 640x640_b1), one per size x batch, and
manifest.json lists them with the parameter counts. Each float32 output is
asserted to be within F64_ATOL (5e-4, max abs) of the same model run in
float64, so the reference is accurate to well under the 0.002 a runtime is
held to; the random weights are drawn to make that hold (see randomize).

Usage:
  /usr/bin/python3 scripts/models/yolo.py --out DIR [--models v5n,v8n,11n]
      [--sizes 640x640,480x640] [--batch 1,2] [--seed 0]

Importable: build(name, seed) -> nn.Module (eval mode) gives the same model
with the same weights as the exported file, for benchmarks.
(Debian's /usr/bin/python3 with python3-torch; the python3 first on PATH lacks torch.)
"""
import argparse
import copy
import json
import math
import os
import warnings
import zlib

if __name__ == "__main__":
    # Run as a script: one thread everywhere, set before torch loads its BLAS
    # (OpenBLAS fixes its thread count, and so its summation order, at load),
    # so that the reference files are byte-identical run to run on a machine
    # whatever its core count or environment. Importing leaves this alone.
    for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_v] = "1"

import numpy as np
import torch
import torch.nn as nn

OPSET = 17
NC = 80

# ---------------------------------------------------------------- blocks


class Conv(nn.Module):
    """Conv2d (no bias) + BatchNorm2d + SiLU; 'same' padding by default."""

    def __init__(self, c1, c2, k=1, s=1, p=None, g=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2 if p is None else p, groups=g, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU() if act else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


def DWConv(c1, c2, k=1, s=1, act=True):
    """Depthwise Conv block: groups = gcd(c1, c2)."""
    return Conv(c1, c2, k, s, g=math.gcd(c1, c2), act=act)


class Bottleneck(nn.Module):
    """cv1 (k[0]) -> cv2 (k[1]), residual when shortcut and c1 == c2."""

    def __init__(self, c1, c2, shortcut=True, k=(3, 3), e=0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, k[0], 1)
        self.cv2 = Conv(c_, c2, k[1], 1)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """CSP with 3 convs (YOLOv5): cv3(cat(m(cv1(x)), cv2(x)))."""

    def __init__(self, c1, c2, n=1, shortcut=True, e=0.5, k=(1, 3)):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c1, c_, 1, 1)
        self.cv3 = Conv(2 * c_, c2, 1)
        self.m = nn.Sequential(*(Bottleneck(c_, c_, shortcut, k=k, e=1.0) for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class C3k(C3):
    """C3 whose bottlenecks are 3x3-3x3 (YOLO11)."""

    def __init__(self, c1, c2, n=2, shortcut=True, e=0.5):
        super().__init__(c1, c2, n, shortcut, e, k=(3, 3))


class C2f(nn.Module):
    """1x1 conv, chunk(2) on channels, n bottlenecks chained on the last chunk,
    concat of all the pieces, 1x1 conv. This is the Split -> Concat pattern."""

    def __init__(self, c1, c2, n=1, shortcut=False, e=0.5):
        super().__init__()
        self.c = int(c2 * e)
        self.cv1 = Conv(c1, 2 * self.c, 1, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(self._block(shortcut) for _ in range(n))

    def _block(self, shortcut):
        return Bottleneck(self.c, self.c, shortcut, k=(3, 3), e=1.0)

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class C3k2(C2f):
    """C2f whose blocks are C3k (c3k) or e=0.5 bottlenecks (YOLO11)."""

    def __init__(self, c1, c2, n=1, c3k=False, e=0.5, shortcut=True):
        self.c3k = c3k
        super().__init__(c1, c2, n, shortcut, e)

    def _block(self, shortcut):
        if self.c3k:
            return C3k(self.c, self.c, 2, shortcut)
        return Bottleneck(self.c, self.c, shortcut)


class SPPF(nn.Module):
    """1x1 conv, three chained 5x5 stride-1 max pools, concat of all four, 1x1 conv."""

    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c_ * 4, c2, 1, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class Attention(nn.Module):
    """Multi-head self-attention over the H*W positions, with a 3x3 depthwise
    positional conv on v. key_dim = head_dim * attn_ratio."""

    def __init__(self, dim, num_heads, attn_ratio=0.5):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.key_dim = int(self.head_dim * attn_ratio)
        self.scale = self.key_dim ** -0.5
        h = dim + self.key_dim * num_heads * 2
        self.qkv = Conv(dim, h, 1, act=False)
        self.proj = Conv(dim, dim, 1, act=False)
        self.pe = Conv(dim, dim, 3, 1, g=dim, act=False)

    def forward(self, x):
        b, c, h, w = x.shape
        n = h * w
        qkv = self.qkv(x)
        q, k, v = qkv.view(b, self.num_heads, self.key_dim * 2 + self.head_dim, n).split(
            [self.key_dim, self.key_dim, self.head_dim], dim=2)
        attn = ((q.transpose(-2, -1) @ k) * self.scale).softmax(dim=-1)
        x = (v @ attn.transpose(-2, -1)).view(b, c, h, w) + self.pe(v.reshape(b, c, h, w))
        return self.proj(x)


class PSABlock(nn.Module):
    def __init__(self, c, num_heads):
        super().__init__()
        self.attn = Attention(c, num_heads, attn_ratio=0.5)
        self.ffn = nn.Sequential(Conv(c, c * 2, 1), Conv(c * 2, c, 1, act=False))

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.ffn(x)


class C2PSA(nn.Module):
    """1x1 conv, split in two halves, PSA blocks on the second, concat, 1x1 conv."""

    def __init__(self, c1, c2, n=1, e=0.5):
        super().__init__()
        assert c1 == c2
        self.c = int(c1 * e)
        self.cv1 = Conv(c1, 2 * self.c, 1, 1)
        self.cv2 = Conv(2 * self.c, c1, 1)
        self.m = nn.Sequential(*(PSABlock(self.c, num_heads=self.c // 64) for _ in range(n)))

    def forward(self, x):
        a, b = self.cv1(x).split((self.c, self.c), dim=1)
        return self.cv2(torch.cat((a, self.m(b)), 1))


class Upsample(nn.Module):
    def forward(self, x):
        return nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")


class Concat(nn.Module):
    def forward(self, xs):
        return torch.cat(xs, 1)


# ---------------------------------------------------------------- heads


class DFL(nn.Module):
    """Distribution focal loss decode: softmax over reg_max bins, expectation
    through a fixed 1x1 conv with weights 0..reg_max-1. The weight is a frozen
    nn.Parameter, so it is in model.parameters() as in the published count."""

    def __init__(self, c1=16):
        super().__init__()
        self.c1 = c1
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(c1, dtype=torch.float32).view(1, c1, 1, 1)

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


def _grid(h, w, like):
    """(xv, yv) integer cell coordinates, (h, w) each, from traced sizes so the
    exported graph computes them with Range for any input size."""
    ys = torch.arange(h, dtype=like.dtype, device=like.device)
    xs = torch.arange(w, dtype=like.dtype, device=like.device)
    yv, xv = torch.meshgrid(ys, xs, indexing="ij")
    return xv, yv


class DetectV8(nn.Module):
    """Anchor-free decoupled head (YOLOv8; YOLO11 with dw=True, whose class
    branch uses depthwise 3x3 + 1x1 pairs)."""

    def __init__(self, nc, ch, strides=(8, 16, 32), dw=False, reg_max=16):
        super().__init__()
        self.nc, self.reg_max, self.strides = nc, reg_max, tuple(strides)
        self.no = nc + 4 * reg_max
        c2 = max(16, ch[0] // 4, reg_max * 4)
        c3 = max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList(
            nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1)) for x in ch)
        if dw:
            self.cv3 = nn.ModuleList(
                nn.Sequential(nn.Sequential(DWConv(x, x, 3), Conv(x, c3, 1)),
                              nn.Sequential(DWConv(c3, c3, 3), Conv(c3, c3, 1)),
                              nn.Conv2d(c3, nc, 1)) for x in ch)
        else:
            self.cv3 = nn.ModuleList(
                nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, nc, 1)) for x in ch)
        self.dfl = DFL(reg_max)

    def forward(self, xs):
        b = xs[0].shape[0]
        feats, anchors, strides = [], [], []
        for i, x in enumerate(xs):
            _, _, h, w = x.shape
            feats.append(torch.cat((self.cv2[i](x), self.cv3[i](x)), 1).view(b, self.no, -1))
            xv, yv = _grid(h, w, x)
            pts = torch.stack((xv, yv), 0).view(2, -1) + 0.5   # anchor centres, in cells
            anchors.append(pts)
            strides.append(torch.full_like(pts[:1], float(self.strides[i])))
        y = torch.cat(feats, 2)
        anchors = torch.cat(anchors, 1).unsqueeze(0)            # (1, 2, A)
        stride = torch.cat(strides, 1).unsqueeze(0)             # (1, 1, A)
        box, cls = y.split((4 * self.reg_max, self.nc), 1)
        lt, rb = self.dfl(box).chunk(2, 1)                       # distances, in cells
        x1y1, x2y2 = anchors - lt, anchors + rb
        dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * stride
        return torch.cat((dbox, cls.sigmoid()), 1)


class DetectV5(nn.Module):
    """Anchor-based head (YOLOv5): per level a 1x1 conv to na*(nc+5), sigmoid,
    xy = (2s - 0.5 + grid) * stride, wh = (2s)^2 * anchor (pixels)."""

    def __init__(self, nc, ch, anchors, strides=(8, 16, 32)):
        super().__init__()
        self.nc, self.no, self.na = nc, nc + 5, len(anchors[0]) // 2
        self.strides = tuple(strides)
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)
        # Buffer, not a parameter: the published count leaves anchors out.
        self.register_buffer("anchors", torch.tensor(anchors, dtype=torch.float32).view(len(ch), self.na, 2))

    def forward(self, xs):
        z = []
        for i, x in enumerate(xs):
            x = self.m[i](x)
            b, _, h, w = x.shape
            x = x.view(b, self.na, self.no, h, w).permute(0, 1, 3, 4, 2)
            xv, yv = _grid(h, w, x)
            grid = torch.stack((xv, yv), 2).view(1, 1, h, w, 2)
            xy, wh, conf = x.sigmoid().split((2, 2, self.nc + 1), 4)
            xy = (xy * 2 - 0.5 + grid) * float(self.strides[i])
            wh = (wh * 2) ** 2 * self.anchors[i].view(1, self.na, 1, 1, 2)
            z.append(torch.cat((xy, wh, conf), 4).view(b, -1, self.no))
        return torch.cat(z, 1)


# ---------------------------------------------------------------- models


class Model(nn.Module):
    """Layers run in table order; 'from' is -1 (previous) or a list of indices."""

    def __init__(self, table):
        super().__init__()
        self.froms = [f for f, _ in table]
        self.layers = nn.ModuleList(m for _, m in table)

    def forward(self, x):
        y = []
        for f, m in zip(self.froms, self.layers):
            if f != -1:
                x = [y[-1] if j == -1 else y[j] for j in f]
            x = m(x)
            y.append(x)
        return x


def yolov8n(nc=NC):
    # depth 0.33 (3 -> 1, 6 -> 2), width 0.25 (64 -> 16 ... 1024 -> 256)
    return Model([
        (-1, Conv(3, 16, 3, 2)),            # 0  P1/2
        (-1, Conv(16, 32, 3, 2)),           # 1  P2/4
        (-1, C2f(32, 32, 1, True)),         # 2
        (-1, Conv(32, 64, 3, 2)),           # 3  P3/8
        (-1, C2f(64, 64, 2, True)),         # 4
        (-1, Conv(64, 128, 3, 2)),          # 5  P4/16
        (-1, C2f(128, 128, 2, True)),       # 6
        (-1, Conv(128, 256, 3, 2)),         # 7  P5/32
        (-1, C2f(256, 256, 1, True)),       # 8
        (-1, SPPF(256, 256, 5)),            # 9
        (-1, Upsample()),                   # 10
        ([-1, 6], Concat()),                # 11
        (-1, C2f(384, 128, 1)),             # 12
        (-1, Upsample()),                   # 13
        ([-1, 4], Concat()),                # 14
        (-1, C2f(192, 64, 1)),              # 15 P3 out
        (-1, Conv(64, 64, 3, 2)),           # 16
        ([-1, 12], Concat()),               # 17
        (-1, C2f(192, 128, 1)),             # 18 P4 out
        (-1, Conv(128, 128, 3, 2)),         # 19
        ([-1, 9], Concat()),                # 20
        (-1, C2f(384, 256, 1)),             # 21 P5 out
        ([15, 18, 21], DetectV8(nc, (64, 128, 256))),
    ])


def yolo11n(nc=NC):
    # depth 0.50 (2 -> 1), width 0.25, max channels 1024
    return Model([
        (-1, Conv(3, 16, 3, 2)),                    # 0  P1/2
        (-1, Conv(16, 32, 3, 2)),                   # 1  P2/4
        (-1, C3k2(32, 64, 1, False, 0.25)),         # 2
        (-1, Conv(64, 64, 3, 2)),                   # 3  P3/8
        (-1, C3k2(64, 128, 1, False, 0.25)),        # 4
        (-1, Conv(128, 128, 3, 2)),                 # 5  P4/16
        (-1, C3k2(128, 128, 1, True)),              # 6
        (-1, Conv(128, 256, 3, 2)),                 # 7  P5/32
        (-1, C3k2(256, 256, 1, True)),              # 8
        (-1, SPPF(256, 256, 5)),                    # 9
        (-1, C2PSA(256, 256, 1)),                   # 10
        (-1, Upsample()),                           # 11
        ([-1, 6], Concat()),                        # 12
        (-1, C3k2(384, 128, 1, False)),             # 13
        (-1, Upsample()),                           # 14
        ([-1, 4], Concat()),                        # 15
        (-1, C3k2(256, 64, 1, False)),              # 16 P3 out
        (-1, Conv(64, 64, 3, 2)),                   # 17
        ([-1, 13], Concat()),                       # 18
        (-1, C3k2(192, 128, 1, False)),             # 19 P4 out
        (-1, Conv(128, 128, 3, 2)),                 # 20
        ([-1, 10], Concat()),                       # 21
        (-1, C3k2(384, 256, 1, True)),              # 22 P5 out
        ([16, 19, 22], DetectV8(nc, (64, 128, 256), dw=True)),
    ])


V5_ANCHORS = ([10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119], [116, 90, 156, 198, 373, 326])


def yolov5n(nc=NC):
    # v6+ layout; depth 0.33 (3 -> 1, 6 -> 2, 9 -> 3), width 0.25
    return Model([
        (-1, Conv(3, 16, 6, 2, 2)),                 # 0  P1/2
        (-1, Conv(16, 32, 3, 2)),                   # 1  P2/4
        (-1, C3(32, 32, 1)),                        # 2
        (-1, Conv(32, 64, 3, 2)),                   # 3  P3/8
        (-1, C3(64, 64, 2)),                        # 4
        (-1, Conv(64, 128, 3, 2)),                  # 5  P4/16
        (-1, C3(128, 128, 3)),                      # 6
        (-1, Conv(128, 256, 3, 2)),                 # 7  P5/32
        (-1, C3(256, 256, 1)),                      # 8
        (-1, SPPF(256, 256, 5)),                    # 9
        (-1, Conv(256, 128, 1, 1)),                 # 10
        (-1, Upsample()),                           # 11
        ([-1, 6], Concat()),                        # 12
        (-1, C3(256, 128, 1, False)),               # 13
        (-1, Conv(128, 64, 1, 1)),                  # 14
        (-1, Upsample()),                           # 15
        ([-1, 4], Concat()),                        # 16
        (-1, C3(128, 64, 1, False)),                # 17 P3 out
        (-1, Conv(64, 64, 3, 2)),                   # 18
        ([-1, 14], Concat()),                       # 19
        (-1, C3(128, 128, 1, False)),               # 20 P4 out
        (-1, Conv(128, 128, 3, 2)),                 # 21
        ([-1, 10], Concat()),                       # 22
        (-1, C3(256, 256, 1, False)),               # 23 P5 out
        ([17, 20, 23], DetectV5(nc, (64, 128, 256), V5_ANCHORS)),
    ])


# name -> (builder, file stem, published count as built, published count with
# every Conv+BN fused into one biased conv, which of the two is "the" number)
MODELS = {
    "v5n": (yolov5n, "yolov5n", 1_872_157, 1_867_405, "fused"),
    "v8n": (yolov8n, "yolov8n", 3_157_200, 3_151_904, "unfused"),
    "11n": (yolo11n, "yolo11n", 2_624_080, 2_616_248, "unfused"),
}


def count_params(model, fused=False):
    """As the published summaries count: every nn.Parameter, trainable or
    frozen (the DFL's 16 weights), no buffers (BN running statistics, v5's
    anchors). fused=True counts as after Conv+BN fusion, as YOLOv5's quoted
    1,867,405 does: each BN's weight and bias (2c) become the conv's bias (c)."""
    n = sum(p.numel() for p in model.parameters())
    if fused:
        n -= sum(m.num_features for m in model.modules() if isinstance(m, nn.BatchNorm2d))
    return n


def published_counts(key):
    _, _, unfused, fused, main = MODELS[key]
    return {"unfused": unfused, "fused": fused, "quoted": fused if main == "fused" else unfused}


# ---------------------------------------------------------------- weights


# Conditioning of the random models. PyTorch's float32 output is the
# reference, so it must itself be accurate: main() asserts that it is within
# F64_ATOL (4x under the 0.002 a runtime is held to) of the same model run in
# float64, on every case it writes. Float32 rounding enters each layer at
# ~2e-7 of the activations' spread and reaches the head's last convs at a few
# 1e-6 (rms); what the output makes of that is set by two things, both chosen
# here at the source:
#  - whether the backbone amplifies it, and whether the BN statistics set at
#    320x320 still hold at 640x640 (BN_GAIN, see randomize), and
#  - how far the head's last 1x1 convs spread their outputs (HEAD_STD): the
#    decode scales a box logit's error by up to ~stride * 16 (v8/11: the DFL
#    expectation over 16 bins) or by ~the anchor size (v5: (2 sigmoid)^2 *
#    anchor), as it scales the logit's spread; so a box output's max float32
#    error comes out at 1-3e-5 of how far that output moves across anchors,
#    and the box spread is what the budget allows: a few percent of the size.
BN_GAIN = (0.2, 0.4)       # BatchNorm weight, uniform in this range
HEAD_STD = {               # std over anchors of the final 1x1 convs' outputs, bias excluded
    "cls": 1.0,            # class and objectness logits (scores spread over (0, 1))
    "v8_box": 0.2,         # v8 / 11 DFL logits (16 per box side)
    "v5_xy": 0.2,          # v5 xy logits
    "v5_wh": 0.03,         # v5 wh logits
}
ATTN_QK_GAIN = 3.0         # extra BN weight on C2PSA's q and k: attention logits std ~1, not uniform
HEAD_BIAS_STD = 0.5        # per-channel mean of the final convs' outputs, N(0, this)
F64_ATOL = 5e-4            # float32 reference vs float64, max abs, asserted per case


def _head_targets(det):
    """{final 1x1 conv of the Detect head: per-output-channel target std}."""
    f64 = torch.float64
    out = {}
    if isinstance(det, DetectV8):
        for box, cls in zip(det.cv2, det.cv3):
            out[box[-1]] = torch.full((box[-1].out_channels,), HEAD_STD["v8_box"], dtype=f64)
            out[cls[-1]] = torch.full((cls[-1].out_channels,), HEAD_STD["cls"], dtype=f64)
    else:
        for conv in det.m:
            t = torch.full((det.na, det.no), HEAD_STD["cls"], dtype=f64)
            t[:, 0:2] = HEAD_STD["v5_xy"]
            t[:, 2:4] = HEAD_STD["v5_wh"]
            out[conv] = t.view(-1)
    return out


@torch.no_grad()
def randomize(model, seed):
    """Seeded random weights and BatchNorm statistics, drawn in module order
    from a private generator (independent of torch's global RNG), then
    calibrated by one float64 pass over a seeded batch of 4 random 320x320
    images.

    Conv weights are N(0, 1/fan_in). Each BN gets weight U(BN_GAIN), bias
    N(0, 0.3), and running statistics scaled to the activations it meets:
    mean = measured mean + N(0, 0.3) measured std, variance = measured
    variance times U(1, 2). So every pre-activation has std 0.14-0.4 per
    channel around a mean of about N(0, 0.3): SiLU's slope varies from ~0.2 to
    ~0.8 across it (the net is clearly nonlinear) but rarely reaches its
    asymptote of 1. With BN weights U(0.5, 1), as first written, it did: rare
    large excursions passed at slope ~1 while the typical signal the
    statistics were set on passed at ~0.5, so they grew layer over layer. At
    640x640 the deep layers' variance then came out up to 2x (yolov8n) and
    4-60x (yolo11n, varying with the random input) the calibrated one, and
    float32 vs float64 differed by up to 4.9e-3 (yolov8n), 1.4e-2 (yolov5n)
    and 1.8e-2 (yolo11n). With U(0.2, 0.4) each BN's input variance stays at
    0.5-1.3x its running variance at every size and input tried.

    C2PSA's q and k channels get ATTN_QK_GAIN times that BN weight: they meet
    only each other, in the attention logits, with no activation in between;
    without it the logits would have std ~0.17 and the attention would be
    nearly uniform, a weak test of its softmax. With it: std ~0.8-1.1.

    The Detect head's final 1x1 convs are calibrated the same way, as a
    trained head is moderate: each output channel's weights are scaled so its
    bias-free output has std HEAD_STD over the calibration batch, and its bias
    set so the channel's mean is N(0, HEAD_BIAS_STD). Class and objectness
    logits have std ~1.1 (scores spread over (0, 1): ~98% in (0.05, 0.95));
    box logits are smaller, as the decode amplifies them (see HEAD_STD): box
    w, h move across the anchors of one level (and anchor shape) by 2-4% of
    the size (2.5-18 px) in v8/11, by 1-6% (up to 14 px) in v5.
    Float64 keeps the float32 weights and statistics the same on any machine
    and thread count."""
    gen = torch.Generator().manual_seed(seed)
    perturb = {}
    for name, m in model.named_modules():
        if isinstance(m, nn.Conv2d) and not name.endswith("dfl.conv"):
            fan_in = m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
            m.weight.copy_(torch.randn(m.weight.shape, generator=gen, dtype=torch.float64) * fan_in ** -0.5)
            if m.bias is not None:
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen, dtype=torch.float64) * HEAD_BIAS_STD)
        elif isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            lo, hi = BN_GAIN
            m.weight.copy_(torch.rand(c, generator=gen, dtype=torch.float64) * (hi - lo) + lo)
            m.bias.copy_(torch.randn(c, generator=gen, dtype=torch.float64) * 0.3)
            perturb[m] = (torch.randn(c, generator=gen, dtype=torch.float64) * 0.3,
                          torch.rand(c, generator=gen, dtype=torch.float64) + 1.0)

    # q and k only meet each other in the attention logits (no activation):
    # with BN_GAIN alone the logits would have std ~0.17 and the attention
    # would be nearly uniform, a weak test of its softmax axis.
    for a in model.modules():
        if isinstance(a, Attention):
            a.qkv.bn.weight.view(a.num_heads, -1)[:, :2 * a.key_dim] *= ATTN_QK_GAIN

    def calibrate(m, inputs):
        x = inputs[0]
        mean = x.mean(dim=(0, 2, 3))
        var = x.var(dim=(0, 2, 3), unbiased=False)
        dm, fv = perturb[m]
        m.running_mean.copy_(mean + dm * var.sqrt())
        m.running_var.copy_(var * fv)

    # The only biased convs are the head's final ones; their drawn bias is the
    # target mean. Record the bias-free output's statistics, rescale after.
    targets = _head_targets(model.layers[-1])
    assert set(targets) == {m for m in model.modules() if isinstance(m, nn.Conv2d) and m.bias is not None}
    stats = {}

    def measure(m, inputs, out):
        f = out - m.bias.view(1, -1, 1, 1)
        stats[m] = (f.mean(dim=(0, 2, 3)), f.std(dim=(0, 2, 3), unbiased=False))

    hooks = [m.register_forward_pre_hook(calibrate) for m in perturb]
    hooks += [m.register_forward_hook(measure) for m in targets]
    model.double().eval()
    images = torch.rand(4, 3, 320, 320, generator=gen, dtype=torch.float64)
    model(images)   # eval mode: each BN uses the statistics its hook just set
    for h in hooks:
        h.remove()
    for m, std in targets.items():
        mean, sd = stats[m]
        g = std / sd
        m.weight.mul_(g.view(-1, 1, 1, 1))
        m.bias.sub_(mean * g)
    model.float()


def _key(name):
    return {v[1]: k for k, v in MODELS.items()}.get(name, name)


def build(name, seed=0):
    """The model `name` (v5n, v8n, 11n; or yolov5n, yolov8n, yolo11n) with
    seeded random weights, in eval mode, float32 on CPU; the same weights the
    exported file has for the same seed."""
    key = _key(name)
    model = MODELS[key][0]()
    pub = published_counts(key)
    for kind, fused in (("unfused", False), ("fused", True)):
        n = count_params(model, fused)
        assert n == pub[kind], "%s: %d parameters (%s), published %d" % (name, n, kind, pub[kind])
    randomize(model, seed * 1000 + zlib.crc32(key.encode()) % 1000)
    return model.eval()


# ---------------------------------------------------------------- export


def export(model, path, v5):
    """torch.onnx.export at opset 17 with batch, height and width dynamic;
    the grids are traced from the input's shape, so they become Range ops."""
    import onnx
    dummy = torch.zeros(1, 3, 320, 320)
    out_axes = {0: "batch", 1: "anchors"} if v5 else {0: "batch", 2: "anchors"}
    with warnings.catch_warnings():
        # The exporter warns about shape inference of prim::Constant; the
        # graph is still right (checked below and against PyTorch's outputs).
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (dummy,), path, opset_version=OPSET, do_constant_folding=True,
                          input_names=["images"], output_names=["output0"],
                          dynamic_axes={"images": {0: "batch", 2: "height", 3: "width"},
                                        "output0": out_axes})
    # The exporter's shape inference loses the static row/column count of
    # output0 (it names it 'Concatoutput0_dim_N'); write the known value in the
    # declared output type. Nothing else in the file changes.
    m = onnx.load(path)
    dim = m.graph.output[0].type.tensor_type.shape.dim[2 if v5 else 1]
    dim.Clear()
    dim.dim_value = NC + 5 if v5 else NC + 4
    onnx.save(m, path)


def check_onnx(path, v5, n_split_blocks):
    """onnx.checker, then the graph facts the tests lean on; returns a summary.
    n_split_blocks: how many C2f / C3k2 / C2PSA blocks the model has; each
    must show up as a Split or Slice feeding a Concat."""
    import onnx
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    ops = [n.op_type for n in m.graph.node]
    producer = {o: n for n in m.graph.node for o in n.output}
    # The C2f / C3k2 / C2PSA pattern: a Split (or Slice; PyTorch exports
    # chunk as Slices) whose outputs feed a Concat. v5 has none of these
    # blocks; its Detect's split -> cat counts there.
    split_to_concat = 0
    for n in m.graph.node:
        if n.op_type == "Concat" and any(i in producer and producer[i].op_type in ("Split", "Slice")
                                         for i in n.input):
            split_to_concat += 1
    assert split_to_concat >= max(n_split_blocks, 1), \
        "%s: %d Split/Slice -> Concat, expected %d" % (path, split_to_concat, n_split_blocks)
    # Dynamic shapes: grids come from Range over the input size, never a
    # folded constant of one size.
    assert ops.count("Range") >= 6, "%s: grids not computed from the input size" % path
    for init in m.graph.initializer:
        assert not any(d in (6400, 8400, 19200, 25200) for d in init.dims), \
            "%s: initializer %s %s looks like a size-specific grid" % (path, init.name, list(init.dims))
    ins = [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in m.graph.input]
    outs = [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in m.graph.output]
    want = [["batch", 3, "height", "width"]], [["batch", "anchors", NC + 5] if v5 else ["batch", NC + 4, "anchors"]]
    assert (ins, outs) == want, "%s: declared shapes %s %s" % (path, ins, outs)
    # Conv+BN folded on export: the weights in the file are exactly the fused
    # parameter count (plus v5's 18 anchor constants).
    n_init = sum(math.prod(i.dims) for i in m.graph.initializer)
    assert "BatchNormalization" not in ops, "%s: BatchNormalization left unfused" % path
    hist = {}
    for o in ops:
        hist[o] = hist.get(o, 0) + 1
    return {"nodes": len(ops), "split_to_concat": split_to_concat, "ops": hist,
            "inputs": ins, "outputs": outs, "initializer_elements": n_init}


def output_stats(y, v5):
    """(for box w and h in each group of anchors, (std, std / mean) across the
    group; the fraction of the scores in (0.05, 0.95)). The groups: v8/11 one
    per stride, v5 one per stride and anchor shape. So the spread says how far
    the head moves boxes, not how sizes differ between levels or anchors."""
    n, _, _ = y.shape
    rows = y.reshape(-1, NC + 5) if v5 else y.transpose(0, 2, 1).reshape(-1, NC + 4)
    # Anchors come level by level (v5: anchor shape by anchor shape within
    # a level), each group a contiguous run in the per-image order.
    a = y.shape[1] if v5 else y.shape[2]
    per = rows.reshape(n, a, -1)
    # Sizes of the groups from the anchor count: A = k * (hw/64 + hw/256 + hw/1024).
    k = 3 if v5 else 1
    hw = a * 1024 // (21 * k)
    sizes = [hw // 64, hw // 256, hw // 1024]
    stds, off = [], 0
    for s in sizes:
        for _ in range(k):
            g = per[:, off:off + s, 2:4]
            stds += [(float(g[..., i].std()), float(g[..., i].std() / g[..., i].mean())) for i in (0, 1)]
            off += s
    assert off == a
    scores = rows[:, 4:]
    return stds, float(((scores > 0.05) & (scores < 0.95)).mean())


def make_input(seed, key, case, shape):
    rng = np.random.default_rng([seed, zlib.crc32(key.encode()), zlib.crc32(case.encode())])
    return rng.random(shape, dtype=np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="v5n,v8n,11n")
    ap.add_argument("--sizes", default="640x640,480x640", help="HxW list")
    ap.add_argument("--batch", default="1,2")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    # One thread (see the top of the file): 1 vs 2 threads differ by ~3e-6
    # of the output's scale. The weights, inputs and ONNX files do not depend
    # on it (the BN calibration runs in float64).
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",") if s]
    batches = [int(b) for b in args.batch.split(",") if b]
    for h, w in sizes:
        assert h % 32 == 0 and w % 32 == 0, "sizes must be multiples of 32: %dx%d" % (h, w)

    manifest = {}
    for key in args.models.split(","):
        key = _key(key)
        stem = MODELS[key][1]
        model = build(key, args.seed)
        pub = published_counts(key)
        n, nf = count_params(model), count_params(model, fused=True)
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        v5 = key == "v5n"
        path = os.path.join(args.out, stem + ".onnx")
        export(model, path, v5)
        info = check_onnx(path, v5, sum(isinstance(m, (C2f, C2PSA)) for m in model.modules()))
        anchors = model.layers[-1].anchors.numel() if v5 else 0
        assert info["initializer_elements"] == nf + anchors, \
            "%s: %d weights in the file, %d fused parameters" % (path, info["initializer_elements"], nf)
        model64 = copy.deepcopy(model).double()
        cases = []
        for h, w in sizes:
            for b in batches:
                case = "%dx%d_b%d" % (h, w, b)
                x = make_input(args.seed, key, case, (b, 3, h, w))
                with torch.no_grad():
                    y = model(torch.from_numpy(x)).numpy()
                    y64 = model64(torch.from_numpy(x).double()).numpy()
                assert np.isfinite(y).all()
                err = float(np.abs(y - y64).max())
                spread, mid = output_stats(y, v5)
                px, rel = [p for p, _ in spread], [r for _, r in spread]
                fin, fout = "%s_%s_input.npy" % (stem, case), "%s_%s_output0.npy" % (stem, case)
                np.save(os.path.join(args.out, fin), x)
                np.save(os.path.join(args.out, fout), y)
                cases.append({"case": case, "input": fin, "output0": fout, "shape": list(y.shape),
                              "f32_vs_f64_max_abs": err})
                print("  %-8s %-12s output0 %-16s min %9.3f max %9.3f | f32 vs f64 max abs %.2e | "
                      "box w,h std in a level %.1f-%.1f px, %.1f-%.1f%% | scores in (0.05, 0.95) %.2f" %
                      (stem, case, tuple(y.shape), y.min(), y.max(), err, min(px), max(px),
                       100 * min(rel), 100 * max(rel), mid))
                assert err <= F64_ATOL, "%s %s: float32 output is %.2e from float64, over %.0e" % (
                    stem, case, err, F64_ATOL)
                assert min(rel) > 0.005, "%s %s: boxes barely vary" % (stem, case)
                assert 0.5 < mid, "%s %s: class scores saturated" % (stem, case)
        size = os.path.getsize(path)
        # Conv+BN fold on export, so the file is ~4 bytes per fused parameter.
        assert size < 15_000_000, "%s: %d bytes" % (path, size)
        manifest[stem] = {"model": stem + ".onnx", "params": n, "params_fused": nf, "trainable": trainable,
                          "published": pub, "onnx_bytes": size, "seed": args.seed,
                          "nodes": info["nodes"], "split_to_concat": info["split_to_concat"],
                          "ops": info["ops"], "cases": cases}
        print("%-8s params %s (fused %s, trainable %s; published quoted %s)  onnx %.2f MB (%d bytes), "
              "%d nodes, %d Split/Slice->Concat, inputs %s outputs %s" %
              (stem, format(n, ","), format(nf, ","), format(trainable, ","), format(pub["quoted"], ","),
               size / 1e6, size,
               info["nodes"], info["split_to_concat"], info["inputs"], info["outputs"]))
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
