#!/usr/bin/python3
"""Tests of the seed report's failure patterns, driven through the strata
command line.  The cases and PyTorch references come from
scripts/models/seed.py (see its manifest.json).

  seed_test.py STRATA DIR check CASE [--precision P] [--sanitize] [--ort]
      strata check against PyTorch (or, with --ort, ONNX Runtime); f32 at
      atol 1e-5 + rtol 1e-5, f16/bf16 at 1e-2 of the output's largest
      magnitude (strata check's defaults).
  seed_test.py STRATA DIR plan CASE
      the plan shows the chunk/split/unbind/slice outputs as pure views and
      the expected number of concats written in place.
  seed_test.py STRATA DIR schedules CASE [N]
      N random schedules (late completion, 2 threads, sanitizer on) give
      outputs bit-identical to the default schedule.
  seed_test.py STRATA DIR hazard
      with --hazard-mode base-pointer (the seed's bug: a conflict is seen
      only between views that start at the same byte) the sanitizer reports
      violations, and random schedules produce wrong outputs; with the
      default byte ranges there is no violation.
"""
import json
import os
import subprocess
import sys
import tempfile


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def case_args(d, m):
    return [os.path.join(d, m["model"])] + sum((["-i", os.path.join(d, f)] for f in m["inputs"]), [])


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(strata, d, m, extra):
    ref = m["ref_dir"]
    if "--ort" in extra:  # against ONNX Runtime's outputs instead of PyTorch's
        extra = [e for e in extra if e != "--ort"]
        ref = m["ort_dir"]
    r = run([strata, "check"] + case_args(d, m) + ["--ref-dir", os.path.join(d, ref)] + extra)
    print(r.stdout + r.stderr)
    if r.returncode != 0:
        fail("strata check %s returned %d" % (" ".join(extra), r.returncode))
    for name in m["outputs"]:
        if not any(line.startswith(name + ":") and line.rstrip().endswith("PASS") for line in r.stdout.splitlines()):
            fail("output %s was not compared" % name)


def plan(strata, d, m):
    r = run([strata, "inspect"] + case_args(d, m) + ["--plan", "--json"])
    if r.returncode != 0:
        fail(r.stderr)
    p = json.loads(r.stdout)
    expect = m["expect"]
    seen_views = 0
    for n in p["nodes"]:
        if n["op"] in expect["views"] and n["kind"] != "folded":
            seen_views += 1
            if n["kind"] != "view":
                fail("node %s (%s) is '%s', expected a pure view" % (n["name"], n["op"], n["kind"]))
    if expect["views"] and not seen_views:
        fail("no node of %s in the plan" % expect["views"])
    placed = [n for n in p["nodes"] if n["op"] == "Concat" and n.get("inputs_in_place")]
    if len(placed) < expect["concats_in_place"]:
        fail("%d concats placed in place, expected %d" % (len(placed), expect["concats_in_place"]))
    for v in p["values"]:
        if v["kind"] == "view" and "view_of" not in v:
            fail("view %s has no base" % v["name"])
    print("plan: %d view nodes checked, %d concats in place, arena %d bytes (naive %d)" %
          (seen_views, len(placed), p["arena_bytes"], p["naive_bytes"]))


def outputs_of(strata, d, m, extra):
    with tempfile.TemporaryDirectory() as out:
        r = run([strata, "run", "-q"] + case_args(d, m) + ["-o", out] + extra)
        if r.returncode != 0:
            return None, r.stderr
        res = {}
        for f in sorted(os.listdir(out)):
            with open(os.path.join(out, f), "rb") as fh:
                res[f] = fh.read()
        return res, ""


def schedules(strata, d, m, n):
    base, err = outputs_of(strata, d, m, ["--threads", "1"])
    if base is None:
        fail(err)
    for seed in range(1, n + 1):
        got, err = outputs_of(strata, d, m, ["--schedule", "random", "--seed", str(seed), "--threads", "2", "--sanitize"])
        if got is None:
            fail("seed %d: %s" % (seed, err))
        if got != base:
            fail("random schedule with seed %d changed the outputs" % seed)
    print("%d random schedules: outputs bit-identical to the default schedule" % n)


def hazard(strata, d, manifest):
    violations, wrong = [], []
    for name, m in manifest.items():
        ok = run([strata, "check"] + case_args(d, m) + ["--ref-dir", os.path.join(d, m["ref_dir"]), "--sanitize"])
        if ok.returncode != 0:
            fail("%s: byte-range hazards with the sanitizer failed:\n%s%s" % (name, ok.stdout, ok.stderr))
        r = run([strata, "check"] + case_args(d, m) + ["--ref-dir", os.path.join(d, m["ref_dir"]),
                                                        "--sanitize", "--hazard-mode", "base-pointer"])
        if r.returncode != 0 and "sanitizer:" in r.stderr:
            violations.append(name)
            print("%s: base-pointer mode, sanitizer says: %s" % (name, r.stderr.strip()))
        for seed in range(1, 21):
            w = run([strata, "check"] + case_args(d, m) + ["--ref-dir", os.path.join(d, m["ref_dir"]),
                                                            "--hazard-mode", "base-pointer", "--schedule", "random",
                                                            "--seed", str(seed), "--threads", "1"])
            if w.returncode != 0:
                wrong.append(name)
                first = [ln for ln in w.stdout.splitlines() if "FAIL" in ln][:1]
                print("%s: base-pointer mode, random schedule seed %d gives wrong output: %s" % (name, seed, first))
                break
    print("base-pointer mode: sanitizer violations in %d of %d cases (%s); wrong outputs under random schedules in %d (%s)"
          % (len(violations), len(manifest), ", ".join(violations), len(wrong), ", ".join(wrong)))
    if not violations:
        fail("the sanitizer reported no violation in base-pointer mode")
    if not wrong:
        fail("no random schedule produced a wrong output in base-pointer mode")


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    strata, d, mode = sys.argv[1:4]
    manifest = json.load(open(os.path.join(d, "manifest.json")))
    if mode == "hazard":
        hazard(strata, d, manifest)
        return
    m = manifest[sys.argv[4]]
    if mode == "check":
        check(strata, d, m, sys.argv[5:])
    elif mode == "plan":
        plan(strata, d, m)
    elif mode == "schedules":
        schedules(strata, d, m, int(sys.argv[5]) if len(sys.argv) > 5 else 50)
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
