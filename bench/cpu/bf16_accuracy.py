#!/usr/bin/python3
"""--precision bf16 against f32 on YOLOv8n and PP-OCRv4 det / rec (issue 15, item 3).

  bench/cpu/bf16_accuracy.py STRATA MODELS_DIR PPOCR_ASSETS

Runs each model with `strata run` in f32, and in bf16 twice: on the bf16
kernels (vdpbf16ps, where the CPU has avx512_bf16) and on the f32 kernels
(STRATA_CPU_NO_BF16=1, the path of other CPUs and of strata before the
bf16 kernels).  Prints, against strata's f32 output, the max and mean
absolute error, and per model:
  - YOLOv8n: boxes of the f32 output that the bf16 output keeps (decode at
    score 0.25, per-class NMS at IoU 0.45, a box kept when the bf16 boxes
    hold one of its class at IoU >= 0.5: the rule of `strata quantize`'s
    report, written again here in NumPy);
  - PP-OCR det: pixels of the probability map on the other side of the
    0.3 threshold that the DB post-processing binarises at;
  - PP-OCR rec: time steps whose argmax character differs.
The fixture inputs are those of the CTest references (build/models).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(strata, model, inp, prec, env_extra):
    env = dict(os.environ, **env_extra)
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([strata, "run", "-q", model, "-i", inp, "-o", out, "--precision", prec, "--threads", "2"],
                       check=True, env=env, timeout=900)
        names = sorted(os.listdir(out))
        return np.load(os.path.join(out, names[0])).astype(np.float64)


def iou(a, b):
    x1, y1 = np.maximum(a[0], b[:, 0]), np.maximum(a[1], b[:, 1])
    x2, y2 = np.minimum(a[2], b[:, 2]), np.minimum(a[3], b[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = lambda r: (r[..., 2] - r[..., 0]) * (r[..., 3] - r[..., 1])
    return inter / (area(a) + area(b) - inter + 1e-12)


def yolo_boxes(out):
    """(4 + C, A) of one image -> [(x1, y1, x2, y2, cls)] after NMS"""
    cls = out[4:].argmax(0)
    score = out[4:].max(0)
    keep = score >= 0.25
    cx, cy, w, h = out[0][keep], out[1][keep], out[2][keep], out[3][keep]
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1)
    cls, score = cls[keep], score[keep]
    result = []
    for c in np.unique(cls):
        idx = np.where(cls == c)[0]
        idx = idx[np.argsort(-score[idx], kind="stable")]
        while idx.size:
            i = idx[0]
            result.append((boxes[i], c))
            if idx.size == 1:
                break
            rest = idx[1:]
            idx = rest[iou(boxes[i], boxes[rest]) < 0.45]
    return result


def kept(ref, got):
    used = [False] * len(got)
    n = 0
    for b, c in ref:
        for j, (g, gc) in enumerate(got):
            if not used[j] and gc == c and iou(b, g[None])[0] >= 0.5:
                used[j] = True
                n += 1
                break
    return n


def main():
    strata, models, assets = sys.argv[1:4]
    cases = [
        ("YOLOv8n 640x640", os.path.join(models, "yolo/yolov8n.onnx"),
         os.path.join(models, "yolo/yolov8n_640x640_b1_input.npy"), "yolo"),
        ("PP-OCRv4 det 640x640", os.path.join(assets, "ch_PP-OCRv4_det_infer.onnx"),
         os.path.join(models, "ppocr/det_640x640_input.npy"), "det"),
        ("PP-OCRv4 rec 48x320", os.path.join(assets, "ch_PP-OCRv4_rec_infer.onnx"),
         os.path.join(models, "ppocr/rec_48x320_input.npy"), "rec"),
    ]
    for name, model, inp, kind in cases:
        ref = run(strata, model, inp, "f32", {})
        for label, env in (("bf16 kernels", {"STRATA_CPU_NO_BF16": "0"}), ("f32 kernels", {"STRATA_CPU_NO_BF16": "1"})):
            got = run(strata, model, inp, "bf16", env)
            err = np.abs(got - ref)
            line = "%-22s bf16 on %-12s: max abs error %.4g, mean %.3g (f32 output: max |y| %.3g)" % (
                name, label, err.max(), err.mean(), np.abs(ref).max())
            if kind == "yolo":
                rb, gb = yolo_boxes(ref[0]), yolo_boxes(got[0])
                line += "; boxes kept %d of %d, %d extra" % (kept(rb, gb), len(rb), len(gb) - kept(rb, gb))
            elif kind == "det":
                flips = int(((ref > 0.3) != (got > 0.3)).sum())
                line += "; %d of %d pixels change side of 0.3" % (flips, ref.size)
            else:
                diff = int((ref.argmax(-1) != got.argmax(-1)).sum())
                line += "; %d of %d time steps change their argmax" % (diff, ref.shape[0] * ref.shape[1])
            print(line, flush=True)


if __name__ == "__main__":
    main()
