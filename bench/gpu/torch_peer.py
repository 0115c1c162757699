#!/usr/bin/env python3
"""The PyTorch peer for strata's GPU benchmark: YOLOv8n built by
scripts/models/yolo.py (same weights as the ONNX file strata runs), timed
with CUDA events on the GPU machine's PyTorch.

  torch_peer.py [--skip-compile]

Prints one line per configuration: eager f32/f16 at batch 1 and 32,
torch.compile mode="reduce-overhead" (CUDA graphs) f16 batch 1, and
mode="max-autotune-no-cudagraphs" f16 batch 32; then the machine's
measured device-to-device copy bandwidth and f16 matrix rate (the floors).
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "models"))
import yolo  # noqa: E402


def bench(fn, x, iters=200, warmup=20):
    for _ in range(warmup):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(x)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2], times[0]


def main():
    skip_compile = "--skip-compile" in sys.argv
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    base = yolo.build("v8n", 0).cuda().eval()
    for dtype, tag in ((torch.float32, "f32"), (torch.float16, "f16")):
        m = base.to(dtype)
        for b in (1, 32):
            x = torch.rand(b, 3, 640, 640, device="cuda", dtype=dtype)
            with torch.no_grad():
                med, mn = bench(m, x)
            print("torch %s eager %s batch %d: median %.3f ms, min %.3f ms" % (torch.__version__, tag, b, med, mn), flush=True)
    if not skip_compile:
        m = base.to(torch.float16)
        for mode, b in (("reduce-overhead", 1), ("max-autotune-no-cudagraphs", 32)):
            x = torch.rand(b, 3, 640, 640, device="cuda", dtype=torch.float16)
            t0 = time.time()
            c = torch.compile(m, mode=mode)
            with torch.no_grad():
                for _ in range(3):
                    c(x)
                torch.cuda.synchronize()
                compile_s = time.time() - t0
                med, mn = bench(c, x)
            print("torch.compile %s f16 batch %d: median %.3f ms, min %.3f ms (compile %.0f s)" % (mode, b, med, mn, compile_s),
                  flush=True)
    # floors: copy bandwidth (bytes read + written) and the f16 matrix rate
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    bcopy = torch.empty_like(a)
    med, _ = bench(lambda _: bcopy.copy_(a), None, iters=20, warmup=3)
    print("floor: device copy %.0f GB/s (read + write)" % (2 * n / med / 1e6))
    s = 8192
    p = torch.randn(s, s, device="cuda", dtype=torch.float16)
    q = torch.randn(s, s, device="cuda", dtype=torch.float16)
    med, _ = bench(lambda _: p @ q, None, iters=20, warmup=3)
    print("floor: f16 matmul %.0f TFLOP/s" % (2 * s ** 3 / med / 1e9))
    p, q = p.float(), q.float()
    med, _ = bench(lambda _: p @ q, None, iters=10, warmup=2)
    print("floor: f32 matmul %.1f TFLOP/s (no TF32)" % (2 * s ** 3 / med / 1e9))


if __name__ == "__main__":
    main()
