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
So the integer part is checked bit for bit on its own: a copy of the model
whose outputs also include every 8-bit tensor that enters the float tail
(the QuantizeLinear results whose DequantizeLinear feeds a float op with no
QuantizeLinear after it: 18 in YOLOv8n) must give the CPU's bytes in each
of them (needs the onnx package; skipped without it).
Exits 1 if a GPU run failed, was not fused, has an element off from the
CPU's by more than 1e-4 of max |ref|, or an integer tensor that differs.
"""
import os, re, subprocess, sys
import numpy as np, onnxruntime as ort
S, model, backends = sys.argv[1], sys.argv[2], sys.argv[3:]
x = np.random.default_rng(7).random((1, 3, 320, 320), dtype=np.float32)
np.save("/tmp/qx.npy", x)
ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"images": x})[0]
cpu, bad = None, 0


def int_variant(path):
    """MODEL with the 8-bit tensors entering the float tail as outputs, or None."""
    try:
        import onnx
        from onnx import helper, TensorProto
    except ImportError:
        return None
    m = onnx.load(path)
    cons = {}
    for n in m.graph.node:
        for i in n.input:
            cons.setdefault(i, []).append(n)
    tail = set()
    for q in (n for n in m.graph.node if n.op_type == "QuantizeLinear"):
        for d in (c for c in cons.get(q.output[0], []) if c.op_type == "DequantizeLinear"):
            for c in cons.get(d.output[0], []):
                if c.op_type != "QuantizeLinear" and not any(x.op_type == "QuantizeLinear" for o in c.output for x in cons.get(o, [])):
                    tail.add(q.output[0])
    for t in sorted(tail):
        m.graph.output.append(helper.make_tensor_value_info(t, TensorProto.UINT8, None))
    out = "/tmp/qdq_yolo_int.onnx"
    onnx.save(m, out)
    return out


def int_outputs(b, path, extra):
    out = "/tmp/qi_%s" % b
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    r = subprocess.run([S, "run", path, "-i", "images=/tmp/qx.npy", "-o", out, "--backend", b, "-q"] + extra, capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()[-300:]
    return {f: np.load(os.path.join(out, f)) for f in os.listdir(out) if f != "output0.npy"}, ""


ints = int_variant(model)
cpu_ints = int_outputs("cpu", ints, [])[0] if ints else None
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
    if b == "cpu":
        continue
    if not ints or cpu_ints is None:
        print("qdq yolov8n 320 %s: integer tensors not checked (no onnx package, or the CPU run failed)" % b)
        continue
    got, err = int_outputs(b, ints, gpu)
    diff = [f for f in cpu_ints if got is None or f not in got or not np.array_equal(got[f], cpu_ints[f])]
    n = sum(a.size for a in cpu_ints.values())
    print("%sqdq yolov8n 320 %s: %d of %d integer tensors entering the float tail (%d elements) identical to the CPU's%s" % (
        "FAIL " if diff else "", b, len(cpu_ints) - len(diff), len(cpu_ints), n, (": " + err) if err else ""))
    bad += bool(diff)
sys.exit(1 if bad else 0)
