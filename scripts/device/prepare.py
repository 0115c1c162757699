#!/usr/bin/env python3
"""Inputs and references for the GPU runs, made on the GPU machine itself
(its python3 has torch, onnxruntime and numpy), so only the ONNX files
have to travel there.

  prepare.py MODELS OUT

MODELS holds seed/ (small, carried with its PyTorch references), yolo/*.onnx
and ppocr/*.onnx.  OUT gets the layout scripts/device/cuda_tests.sh reads:
  OUT/seed -> MODELS/seed
  OUT/yolo/<model>.onnx, <model>_<case>_input.npy, <model>_<case>_output0.npy
      references from scripts/models/yolo.py's build() in PyTorch, f32 on
      the CPU, for the same seeded weights and inputs as the generator's
  OUT/ppocr/<case>_input.npy, <case>_ref/<output>.npy
      synthetic pages as scripts/models/ppocr.py draws them, references
      from onnxruntime (CPU)
"""
import os
import shutil
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "models"))


def main():
    models, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(out, "yolo"), exist_ok=True)
    os.makedirs(os.path.join(out, "ppocr"), exist_ok=True)
    if not os.path.exists(os.path.join(out, "seed")):
        os.symlink(os.path.abspath(os.path.join(models, "seed")), os.path.join(out, "seed"))

    import torch
    import yolo
    torch.set_num_threads(1)
    for key, stem in (("v8n", "yolov8n"), ("11n", "yolo11n"), ("v5n", "yolov5n")):
        if not os.path.exists(os.path.join(models, "yolo", stem + ".onnx")):
            continue  # not carried this time
        shutil.copy(os.path.join(models, "yolo", stem + ".onnx"), os.path.join(out, "yolo"))
        model = yolo.build(key, 0)
        for case, shape in (("640x640_b1", (1, 3, 640, 640)), ("480x640_b2", (2, 3, 480, 640))):
            x = yolo.make_input(0, yolo._key(key), case, shape)
            with torch.no_grad():
                y = model(torch.from_numpy(x)).numpy()
            np.save(os.path.join(out, "yolo", "%s_%s_input.npy" % (stem, case)), x)
            np.save(os.path.join(out, "yolo", "%s_%s_output0.npy" % (stem, case)), y)
            print("yolo reference", stem, case, y.shape, flush=True)

    import onnxruntime as ort
    import ppocr
    for i, (case, (model, shape)) in enumerate(ppocr.CASES.items()):
        path = os.path.join(models, "ppocr", ppocr.MODELS[model])
        x = ppocr.synthetic_page(np.random.default_rng(100 * 0 + i), shape)
        np.save(os.path.join(out, "ppocr", case + "_input.npy"), x)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        ys = sess.run(None, {sess.get_inputs()[0].name: x})
        ref = os.path.join(out, "ppocr", case + "_ref")
        os.makedirs(ref, exist_ok=True)
        for o, y in zip(sess.get_outputs(), ys):
            name = "".join(c if c.isalnum() or c in "._-" else "_" for c in o.name)
            np.save(os.path.join(ref, name + ".npy"), y)
        print("ppocr reference", case, [y.shape for y in ys], flush=True)


if __name__ == "__main__":
    main()
