#!/usr/bin/env python3
"""The QDQ YOLOv8n (strata quantize) at 320x320 on a seeded random input: ONNX
Runtime's CPU provider (Python) against strata on the CPU and on the given GPU
backends, plain and under --sanitize.  Prints max and mean |d| and how many
elements are off by more than 0.5 (the output's quantization step is about 2).

  qdq_yolo.py STRATA MODEL BACKEND...

Each backend fuses the model's Q/DQ groups into integer kernels (ST_CAP_QDQ:
passes/fuse_qdq.c); the GPU runs use --no-fallback, so every fused op runs on
the device, and `strata inspect --plan` must show the SiLU chains fused (else
the line says "NOT FUSED").  Against strata's CPU output: identical bytes, or
the largest |d| (the integer part is the same math; the float tail after the
last DequantizeLinear, the box decoding, may round an ulp apart on another
device: expected then at most ~1e-6 of max |ref|, far below one step of 2).
Exits 1 if a GPU run failed, was not fused, or has an element off from the
CPU's by more than 1e-4 of max |ref|.
"""
import os, re, subprocess, sys
import numpy as np, onnxruntime as ort
S, model, backends = sys.argv[1], sys.argv[2], sys.argv[3:]
x = np.random.default_rng(7).random((1, 3, 320, 320), dtype=np.float32)
np.save("/tmp/qx.npy", x)
ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"images": x})[0]
cpu, bad = None, 0
for b in ["cpu"] + backends:
    gpu = ["--no-fallback"] if b != "cpu" else []
    plan = subprocess.run([S, "inspect", model, "-i", "images=/tmp/qx.npy", "--plan", "--backend", b] + gpu, capture_output=True, text=True)
    fused = plan.returncode == 0 and re.search(r"fused +Sigmoid", plan.stdout) is not None and \
        re.search(r"exec +Conv .*\n +-> \S+ float32", plan.stdout) is None
    for extra in ([], ["--sanitize"]):
        out = "/tmp/q_%s%s" % (b, "_san" if extra else "")
        os.makedirs(out, exist_ok=True)
        if os.path.exists(out + "/output0.npy"):
            os.remove(out + "/output0.npy")  # poison: a stale output must not pass
        r = subprocess.run([S, "run", model, "-i", "images=/tmp/qx.npy", "-o", out, "--backend", b, "-q"] + gpu + extra, capture_output=True, text=True)
        if r.returncode:
            print("qdq %s %s: FAIL %s" % (b, extra, r.stderr.strip()[-300:]))
            bad += b != "cpu"
            continue
        y = np.load(out + "/output0.npy")
        d = np.abs(y - ref)
        line = "qdq yolov8n 320 %s %s: %s, max|ref| %.1f max|d| %.4g mean|d| %.3g, elements off by > 0.5: %d of %d" % (
            b, " ".join(extra), "fused" if fused else "NOT FUSED", np.abs(ref).max(), d.max(), d.mean(), int((d > 0.5).sum()), d.size)
        if b == "cpu" and not extra:
            cpu = y
        elif cpu is not None:
            dc = float(np.abs(y.astype(np.float64) - cpu).max())
            same = np.array_equal(y.view(np.uint8), cpu.view(np.uint8))
            line += "; vs strata CPU: %s" % ("identical bytes" if same else "max|d| %.3g" % dc)
            if b != "cpu" and (not fused or dc > 1e-4 * np.abs(ref).max()):
                line = "FAIL " + line
                bad += 1
        print(line)
sys.exit(1 if bad else 0)
