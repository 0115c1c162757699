#!/usr/bin/env python3
"""The QDQ YOLOv8n (strata quantize) at 320x320 on a seeded random input: ONNX
Runtime's CPU provider (Python) against strata on the CPU and on the given GPU
backends, plain and under --sanitize.  Prints max and mean |d| and how many
elements are off by more than 0.5 (the output's quantization step is about 2).

  qdq_yolo.py STRATA MODEL BACKEND...
"""
import subprocess, sys, numpy as np, onnxruntime as ort, os
S, model, backends = sys.argv[1], sys.argv[2], sys.argv[3:]
x = np.random.default_rng(7).random((1, 3, 320, 320), dtype=np.float32)
np.save("/tmp/qx.npy", x)
ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"images": x})[0]
for b in ["cpu"] + backends:
    for extra in ([], ["--sanitize"]):
        os.makedirs("/tmp/q_" + b, exist_ok=True)
        r = subprocess.run([S, "run", model, "-i", "images=/tmp/qx.npy", "-o", "/tmp/q_" + b, "--backend", b, "-q"] + extra, capture_output=True, text=True)
        if r.returncode:
            print("qdq %s %s: FAIL %s" % (b, extra, r.stderr.strip()[-300:])); continue
        y = np.load("/tmp/q_%s/output0.npy" % b)
        d = np.abs(y - ref)
        print("qdq yolov8n 320 %s %s: max|ref| %.1f max|d| %.4g mean|d| %.3g, elements off by > 1 quant step-ish (>0.5): %d of %d" % (b, " ".join(extra), np.abs(ref).max(), d.max(), d.mean(), int((d > 0.5).sum()), d.size))
