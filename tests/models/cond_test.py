#!/usr/bin/python3
"""While loops run on the device or on the host (src/session/loop.c): the
fixtures of tests/models/cond_loop.py, checked against their float64
references, with the path each Loop took read from STRATA_LOOP_VERBOSE's
line.

  cond_test.py STRATA MODELS_DIR BACKEND check device|host
      every input set of every case: `strata check --sanitize --runs 3`
      (the runs bit-identical; y within 1e-4 absolute, everything else
      within 1e-5) and each run's Loop line: with `device`, a Loop of two
      iterations or more ran one on the host and the rest on the device,
      and the host waited twice in all (no per-iteration round trip); a
      shorter one, and every Loop with `host`, ran on the host with one
      wait per iteration.  The environment picks the path (STRATA_CUDA_COND,
      STRATA_CPU_LOOP).
  cond_test.py STRATA MODELS_DIR BACKEND same
      every input set run with the device path on and off (STRATA_CUDA_COND
      and STRATA_CPU_LOOP 1, then 0): the outputs bit-identical.

One line per check; exit 0 when all pass, 1 otherwise, 77 (skipped) when
the backend has no device here.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
LINE = re.compile(r"^strata: Loop '([^']*)': (\d+) iterations(.*)$", re.M)


def run(cmd, env=None, timeout=1200):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)


def no_device(r):
    t = r.stdout + r.stderr
    return "no OpenCL" in t or "no CUDA device" in t or "is not available" in t or "not built into" in t


def input_sets(d):
    """(case, index, [name=file], iterations) for every input set."""
    sets = []
    for model in sorted(glob.glob(os.path.join(d, "cond_*.onnx"))):
        case = os.path.basename(model)[:-5]
        for it_file in sorted(glob.glob(os.path.join(d, case + "_iters_*.txt"))):
            k = re.search(r"_iters_(\d+)\.txt$", it_file).group(1)
            ins = ["%s=%s" % (re.search(r"_input_%s_(\w+)\.npy$" % k, f).group(1), f)
                   for f in sorted(glob.glob(os.path.join(d, "%s_input_%s_*.npy" % (case, k))))]
            with open(it_file) as f:
                sets.append((case, k, ins, int(f.read())))
    return sets


def path_ok(line, n, expect):
    """Whether one Loop line says what expect asks for n iterations."""
    tail = line.group(3)
    if int(line.group(2)) != n:
        return False
    if expect == "device" and n >= 2:
        return tail.startswith(": 1 on the host, then %d " % (n - 1)) and tail.endswith("the host waited 2 times")
    return tail.startswith(" on the host, one at a time; the host waited %d times" % n)


def check(strata, d, backend, expect):
    fails = 0
    for case, k, ins, n in input_sets(d):
        cmd = [strata, "check", os.path.join(d, case + ".onnx"), "--ref-dir", os.path.join(d, "%s_ref_%s" % (case, k)),
               "--backend", backend, "--sanitize", "--runs", "3", "--atol", "1e-4" if case == "cond_count" else "1e-5"]
        for i in ins:
            cmd += ["-i", i]
        r = run(cmd, {"STRATA_LOOP_VERBOSE": "1"})
        if no_device(r):
            print("SKIP: " + (r.stdout + r.stderr).strip())
            return SKIP
        lines = list(LINE.finditer(r.stderr))
        good = r.returncode == 0 and "FAIL" not in r.stdout and "repeat: 3 runs, outputs bit-identical  PASS" in r.stdout
        # no iteration: the Loop folds away once its condition is known (no line)
        paths = not lines if n == 0 else len(lines) == 3 and all(path_ok(m, n, expect) for m in lines)
        what = lines[0].group(0)[len("strata: "):] if lines else "no Loop line: it folded away"
        print("cond check %s[%s] %s %s: %s (%s)" % (case, k, backend, expect, "PASS" if good and paths else "FAIL", what))
        if not good:
            print(r.stdout + r.stderr)
        fails += not (good and paths)
    return 1 if fails else 0


def same(strata, d, backend):
    fails = 0
    for case, k, ins, n in input_sets(d):
        outs = []
        with tempfile.TemporaryDirectory() as tmp:
            for on in ("1", "0"):
                o = os.path.join(tmp, on)
                os.makedirs(o)
                cmd = [strata, "run", os.path.join(d, case + ".onnx"), "--backend", backend, "-o", o, "-q"]
                for i in ins:
                    cmd += ["-i", i]
                r = run(cmd, {"STRATA_CUDA_COND": on, "STRATA_CPU_LOOP": on})
                if no_device(r):
                    print("SKIP: " + (r.stdout + r.stderr).strip())
                    return SKIP
                if r.returncode != 0:
                    print(r.stdout + r.stderr)
                    outs.append(None)
                    continue
                outs.append({f: open(os.path.join(o, f), "rb").read() for f in sorted(os.listdir(o))})
        ok = outs[0] is not None and outs[0] == outs[1] and len(outs[0]) > 0
        print("cond same %s[%s] %s (%d iterations): device and host paths %s" %
              (case, k, backend, n, "bit-identical PASS" if ok else "differ FAIL"))
        fails += not ok
    return 1 if fails else 0


def main():
    if len(sys.argv) < 5 or sys.argv[4] not in ("check", "same") or (sys.argv[4] == "check" and len(sys.argv) != 6):
        sys.exit("usage: cond_test.py STRATA MODELS_DIR BACKEND check device|host | same")
    strata, d, backend, mode = sys.argv[1:5]
    if not input_sets(d):
        print("FAIL: no cond_* input sets in %s" % d)
        return 1
    if mode == "check":
        return check(strata, d, backend, sys.argv[5])
    return same(strata, d, backend)


if __name__ == "__main__":
    sys.exit(main())
