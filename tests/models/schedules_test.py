#!/usr/bin/python3
"""Random schedules must not change a model's outputs by a single bit.

  schedules_test.py STRATA MODEL N SHAPE [SHAPE...]

Draws seeded random inputs of the given shapes (e.g. 1x3x320x320), runs the
model once with the default schedule on one thread, then N times with
--schedule random (ready commands in a seeded random order, completions
released late) on two threads with the sanitizer on, and compares every
output file byte for byte.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(strata, model, inputs, out, extra):
    args = [strata, "run", "-q", model, "-o", out] + sum((["-i", f] for f in inputs), []) + extra
    r = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if r.returncode:
        print(r.stderr)
        sys.exit(1)
    res = {}
    for f in sorted(os.listdir(out)):
        with open(os.path.join(out, f), "rb") as fh:
            res[f] = fh.read()
    return res


def main():
    strata, model, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[4:]]
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = []
        for k, s in enumerate(shapes):
            f = os.path.join(tmp, "in%d.npy" % k)
            np.save(f, rng.uniform(-1, 1, s).astype(np.float32))
            inputs.append(f)
        base_dir = os.path.join(tmp, "base")
        os.mkdir(base_dir)
        base = run(strata, model, inputs, base_dir, ["--threads", "1"])
        for seed in range(1, n + 1):
            d = os.path.join(tmp, "s%d" % seed)
            os.mkdir(d)
            got = run(strata, model, inputs, d, ["--schedule", "random", "--seed", str(seed), "--threads", "2", "--sanitize"])
            if got != base:
                print("FAIL: random schedule %d changed the outputs of %s" % (seed, model))
                sys.exit(1)
    print("%s: %d random schedules, outputs bit-identical to the default schedule" % (os.path.basename(model), n))


if __name__ == "__main__":
    main()
