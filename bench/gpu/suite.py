#!/usr/bin/env python3
"""The GPU benchmark suite: strata against PyTorch eager and torch.compile
on YOLOv8n, ResNet-50, ConvNeXt-T, ViT-S/16 and a 4-layer BERT, f16, batch
1 and 32, on the GPU machine in one call (bench/gpu/suite.sh runs it).

  suite.py [--cases a,b] [--compile none|b1|b32|both|par] [--compile-budget S]
           [--compile-save DIR] [--compile-load DIR] [--out DIR]
           [--backends cuda[,opencl]] [--profile CASE:BATCH,...]

For each case: the ONNX export and inputs (suite_models.py), strata's f32
output at batch 1 against PyTorch's f32 output (max|d| / max|ref|, the
issue's bar 1e-3), `strata bench` f16 at batch 1 and 32, the peer's
times (suite_peer.py; with --compile par, torch.compile at b32 for all cases
at once after the loop, compile_peer.py), and the floors: the model's FLOPs (PyTorch's flop
counter) over the measured f16 matrix rate, and its fewest bytes (weights
in f16, inputs and output once) over the measured copy bandwidth.
Memory: strata's peak_bytes from `strata bench --json` (st_memory_usage:
every device storage and workspace the process held at most: weights,
arena, inputs, outputs) beside the peer's torch.cuda.memory_allocated()
before the runs (weights, inputs) plus max_memory_allocated() over them.
Neither counts the CUDA context or the libraries' own state.
Writes OUT/latest.json, rows {case, precision, batch, strata_ms, peer,
peer_ms, strata_peak_bytes, peer_held_bytes, strata_first_ms (the time
to the first result: load, plan, first run), date, commit, ...}, and
prints a table last.
"""
import datetime
import json
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import suite_models  # noqa: E402

STRATA = os.environ.get("STRATA", os.path.join(ROOT, ".device", "bin", "strata"))


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def sh(cmd, timeout=600):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def strata_inputs(d, case, b):
    names = json.load(open(os.path.join(d, case + ".json")))["inputs"]
    out = []
    for n in names:
        out += ["-i", "%s=%s" % (n, os.path.join(d, "%s_b%d_%s.npy" % (case, b, n)))]
    return out


def strata_bench(d, case, b, backend, prec, runs, extra=()):
    cmd = [STRATA, "bench", os.path.join(d, case + ".onnx"), *strata_inputs(d, case, b), "--backend", backend,
           "--precision", prec, "--runs", str(runs), "--warmup", "10", "--json", "-q", *extra]
    rc, out, err = sh(cmd)
    if rc != 0:
        return {"error": (err or out).strip()[-300:]}
    j = json.loads(out.strip().splitlines()[-1])
    return j


def floors():
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    for _ in range(3):
        b.copy_(a)
    ts = []
    for _ in range(10):
        ev[0].record()
        b.copy_(a)
        ev[1].record()
        ev[1].synchronize()
        ts.append(ev[0].elapsed_time(ev[1]))
    bw = 2 * n / sorted(ts)[5] / 1e6  # GB/s, read + write
    del a, b
    s = 8192
    p = torch.randn(s, s, device="cuda", dtype=torch.float16)
    q = torch.randn(s, s, device="cuda", dtype=torch.float16)
    for _ in range(3):
        p @ q
    ts = []
    for _ in range(10):
        ev[0].record()
        p @ q
        ev[1].record()
        ev[1].synchronize()
        ts.append(ev[0].elapsed_time(ev[1]))
    tf = 2 * s ** 3 / sorted(ts)[5] / 1e9  # TFLOP/s
    return bw, tf


def model_floor(case, b, bw, tf):
    """(GFLOP, MB, floor ms) of one f16 run at batch b."""
    from torch.utils.flop_counter import FlopCounterMode
    m, names, make = suite_models.build(case)
    m = m.cuda().half()
    xs = [x.cuda().half() if x.is_floating_point() else x.cuda() for x in make(b, np.random.default_rng(5))]
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        y = m(*xs)
    y = y[0] if isinstance(y, (tuple, list)) else getattr(y, "last_hidden_state", y)
    flops = fc.get_total_flops()
    nbytes = sum(p.numel() * 2 for p in m.parameters()) + sum(x.numel() * x.element_size() for x in xs) + y.numel() * 2
    return flops / 1e9, nbytes / 1e6, max(flops / (tf * 1e12), nbytes / (bw * 1e9)) * 1e3


def check_out(d, case, backend, prec="f32", b=1):
    """strata's output at batch b against PyTorch's f32 one: max|d| / max|ref|."""
    out = "/tmp/suite_out_%s_%s_%s_b%d" % (case, backend, prec, b)
    os.makedirs(out, exist_ok=True)
    cmd = [STRATA, "run", os.path.join(d, case + ".onnx"), *strata_inputs(d, case, b), "--backend", backend,
           "--precision", prec, "-o", out, "-q"]
    rc, o, e = sh(cmd)
    if rc != 0:
        return None, (e or o).strip()[-300:]
    if not os.path.exists(os.path.join(d, "%s_b%d_ref.npy" % (case, b))):
        return None, "no batch %d reference" % b
    ref = np.load(os.path.join(d, "%s_b%d_ref.npy" % (case, b))).astype(np.float64)
    got = np.load(os.path.join(out, "y.npy")).astype(np.float64)
    if got.shape != ref.shape:
        return None, "shape %s against %s" % (got.shape, ref.shape)
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30)), ""


HEADER = "%-14s %-6s %3s %-7s %9s %-38s %9s %6s %8s %9s %9s" % ("case", "prec", "b", "backend", "strata", "peer", "peer ms", "ratio",
                                                               "floor", "strata MB", "peer MB")


def row_line(r):
    ratio = r["strata_ms"] / r["peer_ms"] if r.get("strata_ms") and r.get("peer_ms") else float("nan")
    return "%-14s %-6s %3d %-7s %9s %-38s %9s %6.2f %8.3f %9s %9s" % (
        r["case"], r["precision"], r["batch"], r["backend"],
        "%.3f" % r["strata_ms"] if r.get("strata_ms") else "ERR", (r.get("peer") or "-")[:38],
        "%.3f" % r["peer_ms"] if r.get("peer_ms") else "-", ratio, r["floor_ms"],
        "%.0f" % (r["strata_peak_bytes"] / 1e6) if r.get("strata_peak_bytes") else "-",
        "%.0f" % (r["peer_held_bytes"] / 1e6) if r.get("peer_held_bytes") else "-")


def save(out_dir, bw, tf, rows):
    with open(os.path.join(out_dir, "latest.json"), "w") as f:
        json.dump({"floors": {"copy_gbps": bw, "f16_tflops": tf}, "rows": rows}, f, indent=1)


def main():
    cases = arg("--cases", ",".join(suite_models.CASES)).split(",")
    comp = arg("--compile", "both")
    out_dir = arg("--out", os.environ.get("OUT", "/tmp"))
    backends = arg("--backends", "cuda").split(",")
    d = "/tmp/suite"
    os.makedirs(d, exist_ok=True)
    commit = os.environ.get("STRATA_COMMIT", "")
    date = datetime.date.today().isoformat()
    bw, tf = floors()
    print("floor: device copy %.0f GB/s (read + write), f16 matmul %.0f TFLOP/s" % (bw, tf), flush=True)
    rows = []
    done_rows = 0
    for case in cases:
        rc, o, e = sh([sys.executable, os.path.join(HERE, "suite_models.py"), d, "--cases", case], timeout=900)
        if rc != 0:
            print("export %s failed: %s" % (case, e[-500:]), flush=True)
            continue
        # par: eager here; torch.compile at b32 for every case together after the loop (compile_peer.py)
        rc, o, e = sh([sys.executable, os.path.join(HERE, "suite_peer.py"), d, case, "--compile",
                       "none" if comp == "par" else comp, "--ref"], timeout=1800)
        peer = [json.loads(line) for line in o.splitlines() if line.startswith("{")]
        if rc != 0:
            print("peer %s: %s" % (case, e[-500:]), flush=True)
        for backend in backends:
            err, why = check_out(d, case, backend)
            err16, why16 = check_out(d, case, backend, "f16")
            bb = max(suite_models.BATCHES)
            errb, whyb = check_out(d, case, backend, "f16", bb)
            fmt = lambda e: "%.2e" % e if e is not None else "-"
            print("%s %s max|d|/max|ref|: b1 f32 %s %s, b1 f16 %s %s, b%d f16 %s %s" % (
                case, backend, fmt(err), why, fmt(err16), why16, bb, fmt(errb), whyb), flush=True)
            for b in suite_models.BATCHES:
                sb = strata_bench(d, case, b, backend, "f16", 50 if b == 32 else 200)
                gf, mb, fl = model_floor(case, b, bw, tf)
                base = dict(case=case, precision="f16", batch=b, backend=backend, strata_ms=sb.get("median_ms"),
                            strata_peak_bytes=sb.get("peak_bytes"), strata_first_ms=sb.get("first_result_ms"),
                            strata_error=sb.get("error"), f32_rel_err=err, f16_rel_err=err16, f16_batched_rel_err=errb, gflop=gf, min_mb=mb, floor_ms=fl,
                            date=date, commit=commit)
                for p in peer:
                    if p.get("batch") == b and "ms" in p:
                        # the peer's whole footprint: what it held before the
                        # runs (weights, inputs) and the most the runs added
                        held = (p.get("peak_bytes") or 0) + (p.get("base_bytes") or 0) if "base_bytes" in p else None
                        r = dict(base, peer=p["peer"], peer_ms=p["ms"], peer_peak_bytes=p.get("peak_bytes"), peer_held_bytes=held,
                                 compile_s=p.get("compile_s"))
                        rows.append(r)
                if not any(p.get("batch") == b and "ms" in p for p in peer):
                    rows.append(dict(base, peer=None, peer_ms=None))
        # each case's rows as soon as they are measured, so a call cut
        # short by its time limit still reports the cases it finished
        for r in rows[done_rows:]:
            print("row " + row_line(r), flush=True)
        done_rows = len(rows)
        save(out_dir, bw, tf, rows)
    if comp == "par":
        done = [c for c in cases if any(r["case"] == c for r in rows)]
        rc, o, e = sh([sys.executable, os.path.join(HERE, "compile_peer.py"), d, ",".join(done), "--batch",
                       str(max(suite_models.BATCHES)), "--budget", arg("--compile-budget", "360"),
                       *(["--save", arg("--compile-save", "")] if "--compile-save" in sys.argv else []),
                       *(["--load", arg("--compile-load", "")] if "--compile-load" in sys.argv else [])], timeout=3600)
        for line in o.splitlines():
            if not line.startswith("{"):
                continue
            p = json.loads(line)
            print("compile %s" % line, flush=True)
            base = next((r for r in rows if r["case"] == p["case"] and r["batch"] == p["batch"]), None)
            if base and "ms" in p:
                rows.append(dict(base, peer=p["peer"], peer_ms=p["ms"], peer_peak_bytes=None, peer_held_bytes=None,
                                 compile_s=p.get("compile_s")))
        if rc != 0:
            print("compile_peer: %s" % e[-500:], flush=True)
    save(out_dir, bw, tf, rows)
    print("\n" + HEADER)
    for r in rows:
        print(row_line(r))


if __name__ == "__main__":
    main()
