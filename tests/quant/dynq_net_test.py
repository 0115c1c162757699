#!/usr/bin/python3
"""A dynamically quantized conv net, end to end on a GPU backend.

  dynq_net_test.py STRATA BACKEND WORKDIR

The net is written in the form ONNX Runtime's quantize_dynamic gives a
float model (and the zoo's isnet_quint8 has, 119 times): per conv,
DynamicQuantizeLinear(x) -> ConvInteger(x_q, w_u8, x_zp, w_zp) -> Cast ->
Mul(x_scale * w_scale) -> Add(bias); per MatMul, DynamicQuantizeLinear ->
MatMulInteger -> Cast -> Mul.  Around them Relu, MaxPool, a nearest
Resize and a Concat, as in a U-Net; 5 convs (strided, dilated, grouped,
1x1) and one MatMulInteger head, random uint8 weights with zero points,
an input of 1x3x67x45 (odd sizes).

Checks: `strata inspect --plan --backend BACKEND` places the 12 integer
ops on the device (on OpenCL every command: 0 on the CPU, 0 transfers,
and the run is --no-fallback), and the outputs of `strata run
--backend BACKEND --sanitize` equal the CPU backend's bit for bit (every
op here is exact or one correctly rounded f32 operation, and the integer
ops are bit-identical; a last-bit difference anywhere would move a
DynamicQuantizeLinear step and show).  Prints the placement counts.
Exits 77 (skipped) when the backend has no device here.
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SKIP = 77


def build(path, rng):
    nodes, inits = [], []

    def init(name, a):
        inits.append(numpy_helper.from_array(a, name))
        return name

    def qconv(x, name, cin, cout, k, stride=1, pad=0, dil=1, group=1):
        w = rng.integers(0, 256, size=(cout, cin // group, k, k)).astype(np.uint8)
        init(name + "_w", w)
        init(name + "_wz", np.array(rng.integers(100, 156), np.uint8))
        init(name + "_ws", np.array(rng.uniform(0.002, 0.01), np.float32))
        init(name + "_b", rng.normal(0, 0.1, size=(1, cout, 1, 1)).astype(np.float32))
        nodes.extend([
            helper.make_node("DynamicQuantizeLinear", [x], [name + "_xq", name + "_xs", name + "_xz"]),
            helper.make_node("Mul", [name + "_xs", name + "_ws"], [name + "_s"]),
            helper.make_node("ConvInteger", [name + "_xq", name + "_w", name + "_xz", name + "_wz"], [name + "_i"],
                             kernel_shape=[k, k], pads=[pad] * 4, strides=[stride] * 2, dilations=[dil] * 2, group=group),
            helper.make_node("Cast", [name + "_i"], [name + "_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [name + "_f", name + "_s"], [name + "_m"]),
            helper.make_node("Add", [name + "_m", name + "_b"], [name + "_y"]),
        ])
        return name + "_y"

    def relu(x):
        nodes.append(helper.make_node("Relu", [x], [x + "_r"]))
        return x + "_r"

    e1 = relu(qconv("input", "c1", 3, 16, 3, stride=2, pad=1))          # 34x23
    e2 = relu(qconv(e1, "c2", 16, 16, 3, pad=1, group=4))
    nodes.append(helper.make_node("MaxPool", [e2], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1))  # 17x12
    d = relu(qconv("p", "c3", 16, 24, 3, pad=2, dil=2))
    init("scales", np.array([1, 1, 2, 2], np.float32))
    nodes.append(helper.make_node("Resize", [d, "", "scales"], ["u"], mode="nearest"))   # 34x24
    nodes.append(helper.make_node("Slice", ["u", "st", "en", "ax"], ["us"]))
    init("st", np.array([0], np.int64))
    init("en", np.array([23], np.int64))
    init("ax", np.array([3], np.int64))
    nodes.append(helper.make_node("Concat", ["us", e2], ["cat"], axis=1))
    f = relu(qconv("cat", "c4", 40, 8, 1))
    o = qconv(f, "c5", 8, 1, 3, pad=1)
    # a MatMulInteger head over the features' rows: [1, 8, 34, 23] @ [23, 5]
    init("mw", rng.integers(0, 256, size=(23, 5)).astype(np.uint8))
    init("mwz", np.array(131, np.uint8))
    init("mws", np.array(0.004, np.float32))
    nodes.extend([
        helper.make_node("DynamicQuantizeLinear", [f], ["mq", "ms", "mz"]),
        helper.make_node("MatMulInteger", ["mq", "mw", "mz", "mwz"], ["mi"]),
        helper.make_node("Cast", ["mi"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["ms", "mws"], ["mss"]),
        helper.make_node("Mul", ["mf", "mss"], ["head"]),
    ])
    g = helper.make_graph(nodes, "dynq_net", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 67, 45])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, [1, 1, 34, 23]),
                           helper.make_tensor_value_info("head", TensorProto.FLOAT, [1, 8, 34, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return [o, "head"]


def run(strata, model, xin, outdir, names, extra):
    os.makedirs(outdir, exist_ok=True)
    for n in names:
        if os.path.exists(os.path.join(outdir, n + ".npy")):
            os.remove(os.path.join(outdir, n + ".npy"))  # poison: a stale output must not pass
    r = subprocess.run([strata, "run", model, "-i", "input=" + xin, "-o", outdir, "-q"] + extra,
                       capture_output=True, text=True, timeout=600)
    outs = {n: np.load(os.path.join(outdir, n + ".npy")) if r.returncode == 0 else None for n in names}
    return r, outs


def main():
    strata, backend, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20261202)
    model = os.path.join(work, "dynq_net.onnx")
    names = build(model, rng)
    xin = os.path.join(work, "dynq_net_input.npy")
    np.save(xin, rng.uniform(-0.5, 0.5, size=(1, 3, 67, 45)).astype(np.float32))
    r = subprocess.run([strata, "inspect", model, "--plan", "--backend", backend, "-i", "input=" + xin],
                       capture_output=True, text=True, timeout=600)
    t = r.stdout + r.stderr
    if "no OpenCL" in t or "no CUDA device" in t or "is not available" in t or "not built into" in t:
        print("SKIP: " + t.strip().splitlines()[-1])
        return SKIP
    m = re.search(r"devices: (\d+) commands on (\w+), (\d+) on (\w+) \(fallback\); (\d+) transfers", t)
    if r.returncode != 0 or not m:
        print("FAIL: inspect: " + t.strip()[-2000:])
        return 1
    dev, cpu, xfers = int(m.group(1)), int(m.group(3)), int(m.group(5))
    print("placement on %s: %d commands on the device, %d on the CPU, %d transfers" % (backend, dev, cpu, xfers))
    # the integer ops on the device always; on OpenCL (checked on PoCL)
    # everything else too
    placed = re.findall(r"^\s+exec\s+(\S+)\s+(\S+)\s+@(\w+)", t, re.M)
    ints = [(op, name, d) for op, name, d in placed if op in ("DynamicQuantizeLinear", "ConvInteger", "MatMulInteger")]
    off = [name for op, name, d in ints if d != backend]
    print("integer ops: %d of %d on %s%s" % (len(ints) - len(off), len(ints), backend, (" (on the CPU: %s)" % ", ".join(off)) if off else ""))
    ok = len(ints) == 12 and not off and (backend != "opencl" or (cpu == 0 and xfers == 0))
    rd, devo = run(strata, model, xin, os.path.join(work, "dynq_net_" + backend), names,
                   ["--backend", backend, "--sanitize"] + (["--no-fallback"] if backend == "opencl" else []))
    rc, cpuo = run(strata, model, xin, os.path.join(work, "dynq_net_cpu"), names, ["--backend", "cpu"])
    for n in names:
        d, c = devo[n], cpuo[n]
        if d is None or c is None:
            print("%s: no output: %s" % (n, (rd.stdout + rd.stderr + rc.stderr).strip()[-2000:]))
            ok = False
            continue
        same = d.shape == c.shape and np.array_equal(d.view(np.uint32), c.view(np.uint32))
        print("output %-6s %s: %s vs CPU %s (max |d| %g, max |cpu| %g)" % (n, backend, d.shape, "identical" if same else "DIFFERENT",
                                                                        float(np.abs(d.astype(np.float64) - c).max()) if d.shape == c.shape else -1,
                                                                        float(np.abs(c).max())))
        ok &= same
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
