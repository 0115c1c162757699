#!/usr/bin/env python3
"""The PyTorch side of the GPU suite (bench/gpu/suite.sh), on the GPU
machine: for each case, the same module suite_models.py exported (same
seed, so the same weights), on the same .npy inputs.

  suite_peer.py DIR CASE [--compile none|b1|b32|both] [--ref]

Prints one JSON object per line:
  {"case", "precision", "batch", "peer", "ms", "min_ms", "peak_bytes", ...}
for eager f16 at batch 1 and 32, torch.compile reduce-overhead at b1 and
max-autotune-no-cudagraphs at b32 (with the compile time), and, with
--ref, writes DIR/CASE_b1_ref.npy and CASE_b32_ref.npy: the f32 eager output with TF32 off,
the reference strata's f32 output is checked against.
"""
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite_models  # noqa: E402


def bench(fn, iters=100, warmup=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2], times[0]


def load_inputs(d, case, b, names, dtype):
    xs = []
    for n in names:
        x = torch.from_numpy(np.load(os.path.join(d, "%s_b%d_%s.npy" % (case, b, n)))).cuda()
        xs.append(x.to(dtype) if x.is_floating_point() else x)
    return xs


def first(y):
    if isinstance(y, (tuple, list)):
        return y[0]
    return getattr(y, "last_hidden_state", y)


def row(**kw):
    print(json.dumps(kw), flush=True)


def main():
    d, case = sys.argv[1], sys.argv[2]
    comp = sys.argv[sys.argv.index("--compile") + 1] if "--compile" in sys.argv else "both"
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    m, names, _ = suite_models.build(case)
    m = m.cuda()
    if "--ref" in sys.argv:
        # batch 1 and the largest batch: strided views (a Split's chunks,
        # attention's heads) are packed only at batch 1, so the batched
        # run takes other kernels
        for b in (1, max(suite_models.BATCHES)):
            with torch.no_grad():
                y = first(m(*load_inputs(d, case, b, names, torch.float32)))
            np.save(os.path.join(d, "%s_b%d_ref.npy" % (case, b)), y.float().cpu().numpy())
    m = m.half()
    for b in suite_models.BATCHES:
        xs = load_inputs(d, case, b, names, torch.float16)
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        with torch.no_grad():
            med, mn = bench(lambda: m(*xs))
        row(case=case, precision="f16", batch=b, peer="torch-eager", ms=med, min_ms=mn,
            peak_bytes=torch.cuda.max_memory_allocated() - base, base_bytes=base, torch=torch.__version__)
    for b, mode in ((1, "reduce-overhead"), (32, "max-autotune-no-cudagraphs")):
        if comp not in ("both", "b%d" % b):
            continue
        xs = load_inputs(d, case, b, names, torch.float16)
        t0 = time.time()
        try:
            c = torch.compile(m, mode=mode)
            with torch.no_grad():
                for _ in range(3):
                    c(*xs)
                torch.cuda.synchronize()
                cs = time.time() - t0
                med, mn = bench(lambda: c(*xs))
        except Exception as e:  # a compile failure is a result, not a crash of the suite
            row(case=case, precision="f16", batch=b, peer="torch-compile " + mode, error=str(e)[:300])
            continue
        row(case=case, precision="f16", batch=b, peer="torch-compile " + mode, ms=med, min_ms=mn, compile_s=cs)


if __name__ == "__main__":
    main()
