#!/usr/bin/env python3
"""torch.compile's columns of the GPU suite, compiled in parallel and timed
one at a time, on the GPU machine after suite.py has exported its inputs.

  compile_peer.py DIR CASE[,CASE...] [--batch 32] [--mode max-autotune-no-cudagraphs]
                  [--budget SECONDS] [--cpus N] [--save DIR] [--load DIR]

max-autotune compiles one model for minutes, mostly on the CPU (Triton
builds, the autotuner's candidates), so one model after another does not
fit a 10-minute GPU call.  Here:
  1. every case is compiled at once, each in its own process with its own
     inductor cache (TORCHINDUCTOR_CACHE_DIR), and run three times; the
     autotuner's timings overlap other processes' work then, which can
     make its choices worse for PyTorch, never better;
  2. then, one process at a time, each case is compiled again from its
     cache (graph, kernels and autotune choices are hits) and timed alone,
     as suite_peer.py times eager (median of 100 runs after 10).
A case whose first phase does not end within --budget seconds is reported
with an error, not timed.

A CNN's max-autotune compile can outlast what one call leaves, so caches
can travel between calls: --save DIR writes each case's cache (finished or cut off)
as DIR/inductor_CASE_bB.tar.xz (in 15 MiB pieces .partNN when larger:
under $OUT, files of up to 16 MiB come back), and --load DIR
unpacks those found there before compiling (a carried folder), so the
second call's first phase is mostly cache hits.  --cpus N gives each
process N compile threads (default: the CPUs shared among the cases).  Prints one JSON row per case:
  {"case", "precision", "batch", "peer", "ms", "min_ms", "compile_s", "recompile_s"} or {..., "error"}.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def one(d, case, b, mode, timed):
    """The child: compile CASE at batch b, run it, time it when asked."""
    import torch
    sys.path.insert(0, HERE)
    import suite_models
    from suite_peer import bench, load_inputs
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    m, names, _ = suite_models.build(case)
    m = m.cuda().half()
    xs = load_inputs(d, case, b, names, torch.float16)
    t0 = time.time()
    c = torch.compile(m, mode=mode)
    with torch.no_grad():
        for _ in range(3):
            c(*xs)
        torch.cuda.synchronize()
        cs = time.time() - t0
        res = dict(case=case, precision="f16", batch=b, peer="torch-compile " + mode, compile_s=cs)
        if timed:
            res["ms"], res["min_ms"] = bench(lambda: c(*xs))
    print(json.dumps(res), flush=True)


def main():
    if "--one" in sys.argv:
        i = sys.argv.index("--one")
        d, case, b, mode = sys.argv[i + 1], sys.argv[i + 2], int(sys.argv[i + 3]), sys.argv[i + 4]
        one(d, case, b, mode, "--timed" in sys.argv)
        return
    d, cases = sys.argv[1], sys.argv[2].split(",")
    b, mode = int(arg("--batch", "32")), arg("--mode", "max-autotune-no-cudagraphs")
    budget = float(arg("--budget", "360"))
    cpus = os.cpu_count() or 8
    threads = int(arg("--cpus", str(max(2, cpus // len(cases)))))
    load, save = arg("--load", None), arg("--save", None)
    procs = {}
    for case in cases:
        name = "inductor_%s_b%d" % (case, b)
        parts = sorted(glob.glob(os.path.join(load, name + ".tar.xz*"))) if load else []
        if parts:  # one file, or the pieces save() split it into
            cat = subprocess.Popen(["cat"] + parts, stdout=subprocess.PIPE)
            subprocess.run(["tar", "-C", "/tmp", "-xJf", "-"], stdin=cat.stdout, check=False)
            cat.wait()
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR="/tmp/" + name, TORCHINDUCTOR_COMPILE_THREADS=str(threads),
                   PYTHONUNBUFFERED="1")
        procs[case] = (subprocess.Popen([sys.executable, __file__, "--one", d, case, str(b), mode], env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True), env)
    t0 = time.time()
    first = {}
    for case, (p, env) in procs.items():
        first[case] = {}
        try:
            o, e = p.communicate(timeout=max(1.0, budget - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the compile workers too
            p.communicate()
            o, e = "", ""
            first[case] = dict(error="not compiled within %.0f s" % budget)
        if "error" not in first[case]:
            rows = [json.loads(line) for line in o.splitlines() if line.startswith("{")]
            first[case] = rows[0] if rows and p.returncode == 0 else dict(error=(e or o).strip()[-300:])
        # a cut-off compile's cache is saved too: its Triton kernels and
        # autotune choices are kept as they finish, so the next call goes on
        if save and os.path.isdir("/tmp/inductor_%s_b%d" % (case, b)):
            os.makedirs(save, exist_ok=True)
            name = "inductor_%s_b%d" % (case, b)
            f = os.path.join(save, name + ".tar.xz")
            subprocess.run(["tar", "-C", "/tmp", "-cJf", f, name], check=False)
            # a call returns files of at most 16 MiB: larger ones go in pieces
            if os.path.exists(f) and os.path.getsize(f) > 15 * 2**20:
                subprocess.run(["split", "-b", "15m", "-d", f, f + ".part"], check=False)
                os.remove(f)
    for case, (p, env) in procs.items():
        base = dict(case=case, precision="f16", batch=b, peer="torch-compile " + mode)
        if "error" in first[case]:
            print(json.dumps(dict(base, **first[case])), flush=True)
            continue
        r = subprocess.run([sys.executable, __file__, "--one", d, case, str(b), mode, "--timed"], env=env,
                           capture_output=True, text=True, timeout=600)
        rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        if r.returncode != 0 or not rows:
            print(json.dumps(dict(base, error=(r.stderr or r.stdout).strip()[-300:])), flush=True)
            continue
        row = dict(rows[0], compile_s=first[case]["compile_s"], recompile_s=rows[0]["compile_s"])
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
