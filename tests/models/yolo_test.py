#!/usr/bin/python3
"""YOLOv5n / YOLOv8n / YOLO11n (scripts/models/yolo.py) against PyTorch.

  yolo_test.py STRATA DIR MODEL CASE PRECISION [strata options...]

f32: every element of output0 within 0.002 of PyTorch's (absolute; the
seed report's bar, where the broken backend was off by 340 to 515).  The
generator asserts that PyTorch's own f32 output is within 5e-4 of f64, so
the reference is 4x tighter than this.

f16 and bf16 store every activation, and the output, in 16 bits (each op
accumulates in f32; bf16 convs multiply with vdpbf16ps where the CPU has
avx512_bf16, exactly as f32 would multiply bf16 values, and the
yolov8n_640x640_b1_bf16_f32kernels test runs the f32 kernels instead).  Box coordinates reach about 650 px and class scores lie
in (0, 1), so they are checked apart:
  - boxes: max error <= T * (largest |box| in the reference), where one
    rounding of the output alone costs up to u = 2^-9 (bf16) or 2^-12 (f16)
    of it; T allows about four units of roundoff u*2 per element for the
    chain of 60-odd layers: bf16 T = 1.5e-2, f16 T = 2.5e-3.
  - scores: max error <= 0.2 (bf16) / 0.03 (f16), and mean error <= 0.01
    (bf16) / 0.002 (f16): logit errors of a few bf16 units through a
    sigmoid, measured at about 0.07-0.14 max and 0.005 mean for bf16.
The tolerances hold the models to precision-sized errors while a view or
ordering bug (errors of hundreds of pixels, or scores of NaN) fails them.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

TOL = {"bf16": (1.5e-2, 0.2, 0.01), "f16": (2.5e-3, 0.03, 0.002)}


def main():
    strata, d, model, case, prec = sys.argv[1:6]
    extra = sys.argv[6:]
    inp = os.path.join(d, "%s_%s_input.npy" % (model, case))
    ref = np.load(os.path.join(d, "%s_%s_output0.npy" % (model, case)))
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([strata, "run", "-q", os.path.join(d, model + ".onnx"), "-i", inp, "-o", out,
                            "--precision", prec] + extra, capture_output=True, text=True, timeout=900)
        if r.returncode:
            print(r.stderr)
            sys.exit(1)
        got = np.load(os.path.join(out, "output0.npy"))
    if got.shape != ref.shape:
        print("FAIL: shape %s, reference %s" % (got.shape, ref.shape))
        sys.exit(1)
    if not np.isfinite(got).all():
        print("FAIL: %d non-finite values" % (~np.isfinite(got)).sum())
        sys.exit(1)
    err = np.abs(got.astype(np.float64) - ref)
    if prec == "f32":
        ok = err.max() <= 0.002
        print("%s %s f32: max abs error %.3g over %d elements (tolerance 0.002)  %s" %
              (model, case, err.max(), err.size, "PASS" if ok else "FAIL"))
        sys.exit(0 if ok else 1)
    # v8/11: (N, 4 + C, A); v5: (N, A, 5 + C) -> put the fields on axis 1
    if model == "yolov5n":
        err, ref = err.transpose(0, 2, 1), ref.transpose(0, 2, 1)
    box_err, score_err = err[:, :4], err[:, 4:]
    t_box, t_max, t_mean = TOL[prec]
    scale = np.abs(ref[:, :4]).max()
    ok = box_err.max() <= t_box * scale and score_err.max() <= t_max and score_err.mean() <= t_mean
    print("%s %s %s: boxes max error %.3g (%.3g of their scale %.0f, tolerance %.3g); scores max %.3g (tol %.3g), "
          "mean %.3g (tol %.3g)  %s" % (model, case, prec, box_err.max(), box_err.max() / scale, scale, t_box,
                                       score_err.max(), t_max, score_err.mean(), t_mean, "PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
