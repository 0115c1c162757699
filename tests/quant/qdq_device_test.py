#!/usr/bin/python3
"""QuantizeLinear / DequantizeLinear on a GPU backend, against a NumPy
reference and against the CPU backend.

  qdq_device_test.py STRATA BACKEND WORKDIR

Each case is a one-node model (per tensor and per axis; u8 and i8 out;
u8, i8 and i32 in; x read through a Transpose view, so the kernel sees
strides) run with `--backend BACKEND --no-fallback --sanitize`, so the
device's own kernel runs (a fallback would be a refusal here).  Inputs
are random and include what decides an integer: exact ties x = (k + 0.5)
* scale (half to even), values far past the range (saturation), NaN (to
the zero point) and +-inf.

Reference: NumPy in float32, the spec's arithmetic: rint(x / scale) +
zero point, saturated; (x - zero point) * scale.  Tolerance: integers
exactly; DequantizeLinear's floats exactly too (one rounding of a product
of two floats), and the device bit-identical with the CPU backend.
Outputs are poisoned first (a stale .npy is deleted before each run).
Exits 77 (skipped) when the backend has no device here.

Then the fused form: tests/quant/qdq_model.py's QDQ model (Conv per
channel and per tensor with SiLU tables in the epilogue, Split, a residual
Add, a Sigmoid gate's own table times the other half, a Concat of
different scales, MaxPool, Resize, MatMul per column, two Gemm heads with
int32 biases) on two seeds, which the backend's QDQ fusion turns into
QLinearConv, QLinearLookup, QLinearAdd, QLinearMul, QLinearConcat and
QLinearMatMul.  Run with --no-fallback (every fused op on the device; the
plan, `strata inspect --plan`, must show the SiLU chains fused and no
Conv, MatMul or Gemm writing floats, so the fusion did happen), it must
give the CPU backend's bytes in its integer-derived outputs (logits, head,
head2: the same integer math, DequantizeLinear exact) and the Softmax
tail within 1e-6 (a float op, rounded by the device's exp).  Against ONNX
Runtime (when node and onnxruntime-node are here): the integer-derived
outputs within one quantization step (fuse_qdq.c's header: an int32 sum
requantized once may round a boundary value the other way).
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SKIP = 77
NP = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8, TensorProto.INT32: np.int32,
      TensorProto.FLOAT: np.float32}


def model(op, x_type, shape, perm, scale, zp, axis, out_type, path):
    """Transpose(x, perm) -> op, with scale / zero point as initializers."""
    inits = [numpy_helper.from_array(scale, "s")]
    ins = ["xt", "s"]
    if zp is not None:
        inits.append(numpy_helper.from_array(zp, "z"))
        ins.append("z")
    kw = {} if axis is None else {"axis": axis}
    tshape = [shape[p] for p in perm]
    g = helper.make_graph([helper.make_node("Transpose", ["x"], ["xt"], perm=perm),
                           helper.make_node(op, ins, ["y"], **kw)], "g",
                          [helper.make_tensor_value_info("x", x_type, shape)],
                          [helper.make_tensor_value_info("y", out_type, tshape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def ref_quant(x, scale, zp, axis, dtype):
    info = np.iinfo(dtype)
    s, z = scale, (zp.astype(np.int64) if zp is not None else np.zeros_like(scale, dtype=np.int64))
    if axis is not None:
        shp = [1] * x.ndim
        shp[axis] = -1
        s, z = s.reshape(shp), z.reshape(shp)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        v = (x.astype(np.float32) / s.astype(np.float32)).astype(np.float32)
        r = np.rint(v)
    r = np.where(np.isnan(r), 0, r)
    r = np.clip(r, -1e12, 1e12).astype(np.int64) + z
    return np.clip(r, info.min, info.max).astype(dtype)


def ref_dequant(x, scale, zp, axis):
    s, z = scale, (zp.astype(np.int64) if zp is not None else np.zeros_like(scale, dtype=np.int64))
    if axis is not None:
        shp = [1] * x.ndim
        shp[axis] = -1
        s, z = s.reshape(shp), z.reshape(shp)
    return ((x.astype(np.int64) - z).astype(np.float32) * s.astype(np.float32)).astype(np.float32)


def run(strata, path, xfile, outdir, extra):
    y = os.path.join(outdir, "y.npy")
    os.makedirs(outdir, exist_ok=True)
    if os.path.exists(y):
        os.remove(y)  # poison: a stale output must not pass
    r = subprocess.run([strata, "run", path, "-i", "x=" + xfile, "-o", outdir] + extra,
                       capture_output=True, text=True, timeout=600)
    return r, (np.load(y) if r.returncode == 0 and os.path.exists(y) else None)


def main():
    strata, backend, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20261201)
    cases = []
    # QuantizeLinear: per tensor u8, per axis i8 (axis 1 of the transposed x), no zero point
    for name, out_t, axis, has_z in (("q_tensor_u8", TensorProto.UINT8, None, True),
                                     ("q_axis_i8", TensorProto.INT8, 1, True),
                                     ("q_axis_nozp_u8", TensorProto.UINT8, 1, False)):   # no zero point: u8
        shape, perm = [3, 5, 7, 6], [0, 3, 1, 2]          # transposed: [3, 6, 5, 7]
        c = 6 if axis is not None else 1
        scale = rng.uniform(0.01, 0.2, size=c).astype(np.float32)
        if axis is None:
            scale = scale.reshape(())
        dt = NP[out_t]
        zp = (rng.integers(np.iinfo(dt).min // 2, np.iinfo(dt).max // 2, size=scale.shape).astype(dt)
              if has_z else None)
        x = rng.normal(0, 8, size=shape).astype(np.float32)
        xt = x.transpose(perm)
        # exact ties on a quarter of the elements: (k + 0.5) * scale, representable
        sb = np.broadcast_to(scale.reshape([1, -1, 1, 1]) if axis is not None else scale, xt.shape)
        k = rng.integers(-40, 40, size=xt.shape)
        tie = ((k + 0.5) * sb).astype(np.float32)
        exact = (tie / sb.astype(np.float32)).astype(np.float32) == (k + 0.5)
        pick = (rng.random(xt.shape) < 0.25) & exact
        xt = np.where(pick, tie, xt)
        xt[0, 0, 0, :4] = [np.nan, np.inf, -np.inf, 1e30]
        x = np.ascontiguousarray(xt.transpose(np.argsort(perm)))
        cases.append((name, "QuantizeLinear", TensorProto.FLOAT, shape, perm, scale, zp, axis, out_t, x,
                      ref_quant(xt, scale, zp, axis, dt), int(pick.sum())))
    # DequantizeLinear: per axis i8 (axis 0), per tensor u8, i32 with no zero point
    for name, in_t, axis, has_z in (("dq_axis_i8", TensorProto.INT8, 0, True),
                                    ("dq_tensor_u8", TensorProto.UINT8, None, True),
                                    ("dq_tensor_i32", TensorProto.INT32, None, False)):
        shape, perm = [4, 9, 10], [2, 0, 1]               # transposed: [10, 4, 9]
        c = 10 if axis is not None else 1
        scale = rng.uniform(0.001, 0.5, size=c).astype(np.float32)
        if axis is None:
            scale = scale.reshape(())
        dt = NP[in_t]
        info = np.iinfo(dt) if in_t != TensorProto.INT32 else np.iinfo(np.int16)
        zp = rng.integers(info.min // 2, info.max // 2, size=scale.shape).astype(dt) if has_z else None
        x = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dt)
        xt = x.transpose(perm)
        cases.append((name, "DequantizeLinear", in_t, shape, perm, scale, zp, axis, TensorProto.FLOAT, x,
                      ref_dequant(xt, scale, zp, axis), 0))
    failed = 0
    for name, op, x_t, shape, perm, scale, zp, axis, out_t, x, ref, ties in cases:
        path = os.path.join(work, name + ".onnx")
        model(op, x_t, shape, perm, scale, zp, axis, out_t, path)
        xfile = os.path.join(work, name + "_x.npy")
        np.save(xfile, x)
        r, dev = run(strata, path, xfile, os.path.join(work, name, backend), ["--backend", backend, "--no-fallback", "--sanitize"])
        t = r.stdout + r.stderr
        if "no OpenCL" in t or "no CUDA device" in t or "is not available" in t or "not built into" in t:
            print("SKIP: " + t.strip())
            return SKIP
        _, cpu = run(strata, path, xfile, os.path.join(work, name, "cpu"), ["--backend", "cpu"])
        ok = dev is not None and cpu is not None and dev.dtype == ref.dtype and dev.shape == ref.shape
        if ok:
            dev, cpu, ref = (np.ascontiguousarray(a) for a in (dev, cpu, ref))
            same_ref = np.array_equal(dev.view(np.uint8), ref.view(np.uint8))
            same_cpu = np.array_equal(dev.view(np.uint8), cpu.view(np.uint8))
            ok = same_ref and same_cpu
            worst = np.abs(dev.astype(np.float64) - ref.astype(np.float64)).max()
            print("%-16s %s %s: %d elements (%d exact ties), vs NumPy %s (max |d| %g), vs CPU %s"
                  % (name, op, backend, ref.size, ties, "identical" if same_ref else "DIFFERENT", worst,
                     "identical" if same_cpu else "DIFFERENT"))
        else:
            print("%-16s FAIL: %s" % (name, t.strip() or "no output"))
        failed += not ok
    print("%d of %d cases failed" % (failed, len(cases)))
    failed += fused_cases(strata, backend, work)
    return 1 if failed else 0


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_model(strata, path, xfile, outdir, names, extra):
    """Runs PATH on XFILE into OUTDIR (stale outputs deleted first)."""
    os.makedirs(outdir, exist_ok=True)
    for n in names:
        if os.path.exists(os.path.join(outdir, n + ".npy")):
            os.remove(os.path.join(outdir, n + ".npy"))
    r = subprocess.run([strata, "run", path, "-i", "x=" + xfile, "-o", outdir, "-q"] + extra, capture_output=True, text=True, timeout=600)
    if r.returncode:
        return r, None
    return r, {n: np.load(os.path.join(outdir, n + ".npy")) for n in names}


def fused_cases(strata, backend, work):
    names = ["y", "logits", "head", "head2"]
    failed = 0
    ort_js = os.path.join(ROOT, "scripts", "ort", "run.js")
    for seed in (3, 7):
        path = os.path.join(work, "qdq_model_%d.onnx" % seed)
        subprocess.run([sys.executable, os.path.join(ROOT, "tests", "quant", "qdq_model.py"), path, str(seed)], check=True)
        xfile = path.replace(".onnx", "_x.npy")
        tag = "qdq_model seed %d %s" % (seed, backend)
        plan = subprocess.run([strata, "inspect", path, "-i", "x=" + xfile, "--plan", "--backend", backend, "--no-fallback"], capture_output=True,
                              text=True, timeout=600)
        # fused: the SiLU chains went into tables, and no conv, matmul or
        # gemm writes a float tensor (the plan names the model's ops)
        fused = plan.returncode == 0 and re.search(r"fused +Sigmoid", plan.stdout) is not None and \
            re.search(r"exec +(Conv|MatMul|Gemm) .*\n +-> \S+ float32", plan.stdout) is None
        r, dev = run_model(strata, path, xfile, os.path.join(work, "fused_%d_%s" % (seed, backend)), names,
                           ["--backend", backend, "--no-fallback", "--sanitize"])
        _, cpu = run_model(strata, path, xfile, os.path.join(work, "fused_%d_cpu" % seed), names, ["--backend", "cpu"])
        if dev is None or cpu is None or not fused:
            print("%s FAIL: %s" % (tag, (r.stdout + r.stderr).strip() or ("not fused: " + (plan.stdout + plan.stderr)[-2000:])))
            failed += 1
            continue
        same = all(np.array_equal(dev[n], cpu[n]) for n in ("logits", "head", "head2"))
        dy = float(np.abs(dev["y"].astype(np.float64) - cpu["y"]).max())
        ok = same and dy <= 1e-6
        line = "%s: fused, logits and heads vs CPU %s, y max|d| vs CPU %.3g" % (tag, "identical" if same else "DIFFERENT", dy)
        ort_dir = os.path.join(work, "fused_%d_ort" % seed)
        os.makedirs(ort_dir, exist_ok=True)
        o = subprocess.run(["node", ort_js, path, ort_dir, xfile], capture_output=True, text=True, timeout=600) \
            if os.path.exists(ort_js) and shutil.which("node") else None
        if o is not None and o.returncode == 0:
            for n in ("logits", "head", "head2"):
                ref = np.load(os.path.join(ort_dir, n + ".npy"))
                step = float(np.diff(np.unique(ref)).min()) if np.unique(ref).size > 1 else 1.0
                d = np.abs(dev[n].astype(np.float64) - ref)
                line += ", %s vs ORT max|d| %.3g (%d of %d off, step %.3g)" % (n, d.max(), int((d > 0).sum()), d.size, step)
                ok = ok and d.max() <= step * 1.0001
        else:
            line += ", ORT not run"
        print(("" if ok else "FAIL ") + line)
        failed += not ok
    return failed


if __name__ == "__main__":
    sys.exit(main())
