#!/usr/bin/env python3
"""Memory-bound kernels in GB/s against a device-to-device copy measured in
the same call (issue 24, item 1).

  bench/gpu/bandwidth.py [--strata PATH] [--backend cuda] [--precision f16]
                         [--units 16] [--runs 50] [--out DIR] [--cases a,b]

Each case is one memory-bound op at a shape the GPU suite's models run
(ViT-S/16 and ConvNeXt-T at batch 32, YOLOv8n's neck at batch 32), built
as two ONNX models: the op once, and the op chained UNITS times, each
link reading the last one's output.  strata's time per op is
(t(UNITS) - t(1)) / (UNITS - 1) from `strata bench` medians, so the
fixed cost of a run (launching the graph, binding inputs) drops out.  Its
bytes are what the op must move at the least: every full-size operand
read once and the output written once (a broadcast operand's few bytes
are left out).  GB/s = bytes / time; "of copy" divides that by the
bandwidth of torch's device copy (`dst.copy_(src)`, read + write) of the
same bytes, timed in this call; "torch" is the same op in PyTorch eager,
timed with CUDA events (on the CPU backend, wall clock), as a peer.

The target (issue 24): at least 70% of the copy's bandwidth.  Runs on any
backend; on the CPU it checks the script itself, not a GPU.
Prints a table and writes DIR/bandwidth.json.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


# (name, op, input shape, what the op needs): the shapes are the suite's
CASES = {
    # ViT-S/16 b32: tokens [32, 197, 384]
    "add_residual_vit": ("Add", (32, 197, 384), "full"),        # x + r, both full size
    "add_bias_vit": ("Add", (32, 197, 384), "lastdim"),         # x + b[384]
    "gelu_erf_vit": ("Erf", (32, 197, 1536), None),             # the MLP's widest activation
    "layernorm_vit": ("LayerNormalization", (32, 197, 384), None),
    "softmax_vit": ("Softmax", (32, 6, 197, 197), None),        # the attention scores
    "transpose_heads_vit": ("Transpose", (32, 197, 6, 64), None),  # [B,T,H,d] -> [B,H,T,d], read by a Neg
    # ConvNeXt-T b32, stage 1: [32, 96, 56, 56] and its channels-last twin
    "mul_channel_convnext": ("Mul", (32, 96, 56, 56), "channel"),  # x * s[96,1,1] (layer scale, NCHW)
    "layernorm_cl_convnext": ("LayerNormalization", (32, 56, 56, 96), None),
    # YOLOv8n b32 neck: [32, 64, 80, 80]
    "sigmoid_yolo": ("Sigmoid", (32, 64, 80, 80), None),
}


def link(op, kind, x, y, shape, i, inits):
    """Nodes computing y from x for one op of the chain; appends constants."""
    r = np.random.default_rng(i)
    if op in ("Add", "Mul"):
        cshape = shape if kind == "full" else (shape[-1],) if kind == "lastdim" else (shape[1], 1, 1)
        c = (r.standard_normal(cshape).astype(np.float32) * 0.01) + (1.0 if op == "Mul" else 0.0)
        inits.append(numpy_helper.from_array(c.astype(np.float32), "c%d" % i))
        return [helper.make_node(op, [x, "c%d" % i], [y])]
    if op == "LayerNormalization":
        inits.append(numpy_helper.from_array(np.ones(shape[-1], np.float32) + r.standard_normal(shape[-1]).astype(np.float32) * 0.1, "g%d" % i))
        inits.append(numpy_helper.from_array(r.standard_normal(shape[-1]).astype(np.float32) * 0.1, "b%d" % i))
        return [helper.make_node(op, [x, "g%d" % i, "b%d" % i], [y], axis=-1, epsilon=1e-5)]
    if op == "Softmax":
        return [helper.make_node(op, [x], [y], axis=-1)]
    if op == "Transpose":
        # (0, 2, 1, 3) is its own inverse, so the chain keeps its shape; the
        # Neg makes the strided view a kernel that reads it (a lone
        # Transpose can stay a view and move nothing)
        t = "t%d" % i
        return [helper.make_node("Transpose", [x], [t], perm=[0, 2, 1, 3]), helper.make_node("Neg", [t], [y])]
    return [helper.make_node(op, [x], [y])]


def model(case, units, path):
    op, shape, kind = CASES[case]
    nodes, inits = [], []
    cur = "x"
    for i in range(units):
        nxt = "y" if i == units - 1 else "v%d" % i
        nodes += link(op, kind, cur, nxt, shape, i, inits)
        cur = nxt
    out_shape = list(shape)
    if op == "Transpose" and units % 2:
        out_shape[1], out_shape[2] = out_shape[2], out_shape[1]
    g = helper.make_graph(nodes, case, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def op_bytes(case, elem):
    op, shape, kind = CASES[case]
    n = int(np.prod(shape))
    full_in = 2 if kind == "full" else 1
    return (full_in + 1) * n * elem


def strata_ms(strata, path, xpath, backend, prec, runs):
    cmd = [strata, "bench", path, "-i", "x=" + xpath, "--backend", backend, "--precision", prec, "--runs", str(runs),
           "--warmup", "5", "--json", "-q"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError((p.stderr or p.stdout).strip()[-300:])
    return json.loads(p.stdout.strip().splitlines()[-1])["median_ms"]


def timer(dev):
    """(start, stop -> ms) on the device's own clock where there is one."""
    if dev.type == "cuda":
        def run(fn, reps):
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
            fn()
            torch.cuda.synchronize()
            ts = []
            for _ in range(reps):
                ev[0].record()
                fn()
                ev[1].record()
                ev[1].synchronize()
                ts.append(ev[0].elapsed_time(ev[1]))
            return float(np.median(ts))
        return run

    def run(fn, reps):
        fn()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return float(np.median(ts))
    return run


def torch_op(case, dev, dtype):
    op, shape, kind = CASES[case]
    x = torch.randn(shape, device=dev, dtype=dtype)
    if op in ("Add", "Mul"):
        cshape = shape if kind == "full" else (shape[-1],) if kind == "lastdim" else (shape[1], 1, 1)
        c = torch.randn(cshape, device=dev, dtype=dtype)
        return (lambda: x + c) if op == "Add" else (lambda: x * c)
    if op == "LayerNormalization":
        ln = torch.nn.LayerNorm(shape[-1]).to(dev, dtype)
        return lambda: ln(x)
    if op == "Softmax":
        return lambda: torch.softmax(x, -1)
    if op == "Transpose":
        return lambda: torch.neg(x.transpose(1, 2))
    if op == "Erf":
        return lambda: torch.erf(x)
    return lambda: torch.sigmoid(x)


def main():
    strata = arg("--strata", os.environ.get("STRATA", "build/strata"))
    backend = arg("--backend", "cuda")
    prec = arg("--precision", "f16")
    units = int(arg("--units", "16"))
    runs = int(arg("--runs", "50"))
    out = arg("--out", os.environ.get("OUT", "/tmp"))
    cases = arg("--cases", ",".join(CASES)).split(",")
    dev = torch.device("cuda" if backend != "cpu" and torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if prec == "f16" and dev.type == "cuda" else torch.float32
    elem = 2 if prec in ("f16", "bf16") else 4
    run = timer(dev)
    rows = []
    work = tempfile.mkdtemp(prefix="st_bw_")
    print("%-24s %10s %9s %9s %8s %9s %9s" % ("case", "MB moved", "strata us", "GB/s", "of copy", "torch us", "torch GB/s"))
    for case in cases:
        nbytes = op_bytes(case, elem)
        # the copy: the same bytes, half read and half written
        src = torch.empty(nbytes // 2, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        copy_ms = run(lambda: dst.copy_(src), 20)
        copy_gbs = nbytes / copy_ms / 1e6
        del src, dst
        shape = CASES[case][1]
        xpath = os.path.join(work, case + "_x.npy")
        np.save(xpath, np.random.default_rng(7).standard_normal(shape).astype(np.float32))
        try:
            t = {}
            for u in (1, units):
                path = os.path.join(work, "%s_%d.onnx" % (case, u))
                model(case, u, path)
                t[u] = strata_ms(strata, path, xpath, backend, prec, runs)
            per = (t[units] - t[1]) / (units - 1)
            err = None
        except RuntimeError as e:
            per, err = float("nan"), str(e)
        fn = torch_op(case, dev, dtype)
        with torch.no_grad():
            tor = run(fn, 20)
        gbs = nbytes / per / 1e6 if per > 0 else float("nan")
        row = dict(case=case, backend=backend, precision=prec, bytes=nbytes, strata_us=per * 1e3, strata_gbs=gbs,
                   copy_gbs=copy_gbs, of_copy=gbs / copy_gbs, torch_us=tor * 1e3, torch_gbs=nbytes / tor / 1e6,
                   strata_run_ms={str(k): v for k, v in t.items()} if err is None else None, error=err)
        rows.append(row)
        print("%-24s %10.1f %9.1f %9.0f %7.0f%% %9.1f %9.0f%s" % (
            case, nbytes / 1e6, row["strata_us"], gbs, 100 * row["of_copy"], row["torch_us"], row["torch_gbs"],
            "  " + err if err else ""), flush=True)
    with open(os.path.join(out, "bandwidth.json"), "w") as f:
        json.dump({"units": units, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
