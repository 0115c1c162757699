#!/usr/bin/python3
"""profile_test.py — strata's profiles (--profile, docs/profiling.md) are
valid Chrome-trace JSON that accounts for the run.

    profile_test.py check TRACE [MIN_COVERAGE]   check one trace file
    profile_test.py selftest                     the checker rejects broken traces
    profile_test.py synthetic TEST_PROFILE       the writer's trace of a made-up DAG (tests/unit/test_profile.c)
    profile_test.py cpu_yolo STRATA MODELS       YOLOv8n on the CPU (strata run, two workers)
    profile_test.py staged STRATA MODELS [B]     a staged plan: every stage's commands (B: backend, cpu)
    profile_test.py seed STRATA MODELS B         a seed case on backend B (check --runs 3)
    profile_test.py yolo STRATA MODELS B         YOLOv8n on B (OpenCL: 320x320), then 3 warmed-up runs
    profile_test.py mixed STRATA MODELS B        a mixed plan on B: transfers, host commands
    profile_test.py commands STRATA MODELS       bench and check take --profile; path errors
    profile_test.py dot STRATA MODELS            inspect --plan --dot is a graph of the DAG
    profile_test.py png STRATA MODELS            tools/trace_png.py draws a profile (77: no matplotlib)

What a trace must hold (check_trace): every slice ("ph": "X") has name,
ph, ts, dur, pid and tid, with dur > 0; slices of one thread do not
overlap (a viewer could not draw them); every flow start ("s") has
exactly one finish ("f") with its id, name and category, and each lies
inside a slice of its thread (the flow binds to it); every command's
slice names its op, device and the bytes and ranges it reads and writes;
the slices of a run lie inside the run's wall span (otherData.runs, the
device clock's conversion bound allowed), and their union covers at least
MIN_COVERAGE (0.9) of it.  Exit 77: no OpenCL, CUDA or Vulkan device (a skip).

Coverage is required of the YOLOv8n runs, whose commands take
milliseconds.  The seed and mixed cases' commands take microseconds on
the CPU and PoCL, where the time between two commands (a worker
descheduled on a busy machine, PoCL's 0.1 to 0.5 ms from one kernel's end
to the next one's start) is idle time no command owns; their coverage is
printed, not required.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

EPS = 0.0015  # us: ts and dur are printed to the nanosecond


class Bad(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Bad(msg)


def check_trace(t, min_coverage=0.9):
    """Checks trace t (parsed JSON); returns its figures or raises Bad."""
    need(isinstance(t, dict) and isinstance(t.get("traceEvents"), list), "no traceEvents list")
    meta = t.get("otherData")
    need(isinstance(meta, dict) and isinstance(meta.get("runs"), list), "no otherData.runs")
    ev = t["traceEvents"]
    sync = max([r.get("sync_error_us", 0) for r in meta["runs"]] + [0])
    slices = [e for e in ev if e.get("ph") == "X"]
    for e in slices:
        for k in ("name", "ph", "ts", "dur", "pid", "tid"):
            need(k in e, "slice without %s: %r" % (k, e))
        need(isinstance(e["name"], str) and e["name"], "slice with an empty name: %r" % e)
        need(all(isinstance(e[k], (int, float)) for k in ("ts", "dur", "pid", "tid")), "non-numeric field: %r" % e)
        need(e["dur"] > 0, "slice of no duration: %r" % e)
    # one thread's slices must not overlap, or a viewer draws them wrong
    # (device times of two runs may meet within the clock conversion bound)
    by_tid = {}
    for e in slices:
        by_tid.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
    for k, v in by_tid.items():
        v.sort()
        for a, b in zip(v, v[1:]):
            need(b[0] >= a[1] - EPS - sync, "slices %r and %r overlap on thread %r" % (a, b, k))

    def enclosing(e):
        for lo, hi, _ in by_tid.get((e["pid"], e["tid"]), []):
            if lo - EPS <= e["ts"] <= hi + EPS:
                return True
        return False
    # flows: every start has exactly one finish
    starts, finishes = {}, {}
    for e in ev:
        if e.get("ph") in ("s", "f"):
            for k in ("id", "ts", "pid", "tid", "name", "cat"):
                need(k in e, "flow event without %s: %r" % (k, e))
            d = starts if e["ph"] == "s" else finishes
            need(e["id"] not in d, "flow id %r has two '%s' events" % (e["id"], e["ph"]))
            d[e["id"]] = e
            need(enclosing(e), "flow event %r lies in no slice of its thread" % e)
    for i, s in starts.items():
        need(i in finishes, "flow %r starts (at %r) but never finishes" % (i, s["ts"]))
        f = finishes[i]
        need((s["name"], s["cat"]) == (f["name"], f["cat"]), "flow %r: start and finish differ: %r %r" % (i, s, f))
        need(f.get("bp") == "e", "flow %r's finish does not bind to its enclosing slice" % i)
        # the DAG is the executors' only ordering: a command starts after
        # its predecessors end (within the device clock's conversion bound)
        need(f["ts"] >= s["ts"] - sync - EPS, "flow %r (%s): the command at %.3f us started before its "
             "predecessor ended at %.3f us" % (i, s["name"], f["ts"], s["ts"]))
    for i in finishes:
        need(i in starts, "flow %r finishes but never starts" % i)
    commands = [e for e in slices if isinstance(e.get("args"), dict) and "command" in e["args"]]
    for e in commands:
        a = e["args"]
        for k in ("op", "device", "bytes_read", "bytes_written", "reads", "writes", "run", "stage"):
            need(k in a, "command slice %r has no %s" % (e["name"], k))
        need(a["device"] in ("cpu", "cuda", "opencl", "vulkan"), "unknown device %r" % a["device"])
    # runs: slices inside, and their union covers the wall time
    runs = meta["runs"]
    need(len(runs) == meta.get("runs_count", len(runs)), "otherData.runs_count disagrees")
    coverage = []
    for r in runs:
        lo, hi = r["begin_us"], r["end_us"]
        need(hi > lo, "run %r has no wall time" % r)
        tol = r.get("sync_error_us", 0) + EPS
        mine = [e for e in slices if e.get("args", {}).get("run") == r["run"] and e.get("cat") != "run"]
        need(mine, "run %d has no slices" % r["run"])
        n_cmd = sum(1 for e in mine if "command" in e["args"])
        need(n_cmd == r["commands"], "run %d: %d command slices, otherData says %d" % (r["run"], n_cmd, r["commands"]))
        iv = []
        for e in mine:
            a, b = e["ts"], e["ts"] + e["dur"]
            need(a >= lo - tol and b <= hi + tol, "slice %r [%.3f, %.3f] lies outside run %d [%.3f, %.3f]" %
                 (e["name"], a, b, r["run"], lo, hi))
            iv.append((max(a, lo), min(b, hi)))
        iv.sort()
        covered, end = 0.0, lo
        for a, b in iv:
            if b > end:
                covered += b - max(a, end)
                end = b
        cov = covered / (hi - lo)
        need(cov >= min_coverage, "run %d: the slices cover %.1f%% of its %.3f ms, under %.0f%%" %
             (r["run"], 100 * cov, (hi - lo) / 1e3, 100 * min_coverage))
        coverage.append(cov)
    return {"slices": len(slices), "commands": len(commands), "flows": len(starts), "runs": len(runs),
            "coverage": coverage, "threads": sorted({(e["pid"], e["tid"]) for e in slices}),
            "wall_ms": [(r["end_us"] - r["begin_us"]) / 1e3 for r in runs]}


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def thread_names(t):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in t["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "thread_name"}


def report(path, t, fig):
    print("%s: %d slices (%d commands), %d flows, %d run(s), coverage %s, wall %s ms" %
          (os.path.basename(path), fig["slices"], fig["commands"], fig["flows"], fig["runs"],
           ", ".join("%.1f%%" % (100 * c) for c in fig["coverage"]), ", ".join("%.2f" % w for w in fig["wall_ms"])))
    names = thread_names(t)
    print("  threads: " + "; ".join(names.get(k, str(k)) for k in fig["threads"]))


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


NO_DEVICE = ("no OpenCL", "no CUDA device available", "backend 'cuda' is not available", "no Vulkan")


def strata_ok(cmd):
    p = run(cmd)
    if p.returncode != 0 and any(m in p.stderr for m in NO_DEVICE):
        print("skipped: " + p.stderr.strip())
        sys.exit(77)
    need(p.returncode == 0, "%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return p


def selftest():
    """The checker must fail on what it exists to catch: a good trace
    passes, and each mutation of it is rejected."""
    good = {"traceEvents": [
        {"ph": "X", "name": "a", "cat": "Conv", "pid": 1, "tid": 1, "ts": 0.0, "dur": 5.0,
         "args": {"command": 0, "op": "Conv", "device": "cpu", "bytes_read": 1, "bytes_written": 1, "reads": [],
                  "writes": [], "run": 0, "stage": 0}},
        {"ph": "X", "name": "b", "cat": "Relu", "pid": 1, "tid": 2, "ts": 5.0, "dur": 4.5,
         "args": {"command": 1, "op": "Relu", "device": "cpu", "bytes_read": 1, "bytes_written": 1, "reads": [],
                  "writes": [], "run": 0, "stage": 0}},
        {"ph": "s", "name": "RAW", "cat": "dag", "id": 1, "pid": 1, "tid": 1, "ts": 4.999},
        {"ph": "f", "name": "RAW", "cat": "dag", "id": 1, "bp": "e", "pid": 1, "tid": 2, "ts": 5.0}],
        "otherData": {"runs": [{"run": 0, "begin_us": 0.0, "end_us": 10.0, "commands": 2, "sync_error_us": 0}]}}
    check_trace(good)
    mutations = {
        "an unmatched flow id": lambda t: t["traceEvents"][3].update(id=2),
        "a flow without its finish": lambda t: t["traceEvents"].pop(3),
        "a slice without dur": lambda t: t["traceEvents"][0].pop("dur"),
        "a slice without tid": lambda t: t["traceEvents"][1].pop("tid"),
        "a slice outside its run": lambda t: t["traceEvents"][1].update(dur=6.0),
        "coverage under 90%": lambda t: t["otherData"]["runs"][0].update(end_us=12.0),
        "overlapping slices on one thread": lambda t: t["traceEvents"][1].update(tid=1, ts=4.0),
        "a flow bound to no slice": lambda t: t["traceEvents"][2].update(tid=3),
        "a command started before its predecessor ended": lambda t: (t["traceEvents"][1].update(ts=4.0, dur=5.5),
                                                                    t["traceEvents"][3].update(ts=4.0)),
        "a command without its bytes": lambda t: t["traceEvents"][0]["args"].pop("bytes_read"),
    }
    for what, mutate in mutations.items():
        t = copy.deepcopy(good)
        mutate(t)
        try:
            check_trace(t)
        except Bad as e:
            print("rejected %s: %s" % (what, e))
            continue
        raise Bad("the checker accepted a trace with %s" % what)


def synthetic(binary):
    """tests/unit/test_profile.c's trace: overlapping commands of one queue
    on sub-threads, escaped names, the failed run left out."""
    d = tempfile.mkdtemp()
    trace = os.path.join(d, "synthetic.json")
    p = run([binary, trace])
    sys.stdout.write(p.stdout + p.stderr)
    need(p.returncode == 0, "test_profile failed")
    t = load(trace)
    fig = check_trace(t, 0)
    report(trace, t, fig)
    names = {e["name"] for e in t["traceEvents"] if e.get("ph") == "X"}
    need('conv "a"\\b' in names and "bad\ufffd\ufffd utf8 \u00e9" in names and "tab\there" in names,
         "names did not survive: %r" % names)
    need(len({e["tid"] for e in t["traceEvents"] if e.get("ph") == "X" and e.get("pid") == 2}) == 2,
         "three commands overlapping pairwise on one queue need two threads")


def cpu_yolo(strata, models):
    """YOLOv8n at 640x640 on the CPU, two workers as CI has."""
    d = tempfile.mkdtemp()
    trace = os.path.join(d, "yolov8n_cpu.json")
    y = os.path.join(models, "yolo")
    strata_ok([strata, "run", os.path.join(y, "yolov8n.onnx"), "-i", os.path.join(y, "yolov8n_640x640_b1_input.npy"),
               "-o", d, "-q", "--threads", "2", "--profile", trace])
    t = load(trace)
    fig = check_trace(t)
    report(trace, t, fig)
    cmds = [e for e in t["traceEvents"] if e.get("ph") == "X" and "command" in e.get("args", {})]
    need(all(e["args"]["device"] == "cpu" for e in cmds), "a CPU run has a non-CPU command")
    need(any(e["args"]["op"] == "Conv" for e in cmds), "no Conv in YOLOv8n's trace")
    need(len({e["tid"] for e in cmds}) == 2, "two workers, but commands ran on %d threads" % len({e["tid"] for e in cmds}))
    need(fig["flows"] > len(cmds) // 2, "YOLOv8n's DAG has more edges than %d" % fig["flows"])
    # a Concat written in place reads nothing of the inputs placed
    need(any(e["args"].get("waited_for") for e in cmds), "no command names the edge it waited for")


def commands_of(t):
    return [e for e in t["traceEvents"] if e.get("ph") == "X" and "command" in e.get("args", {})]


def device_seed(strata, models, backend):
    """A seed case, check --runs 3: three runs (on CUDA, with a profile,
    none replays a graph, and they still agree bit for bit)."""
    d = tempfile.mkdtemp()
    trace = os.path.join(d, "c2f_%s.json" % backend)
    s = os.path.join(models, "seed")
    p = strata_ok([strata, "check", os.path.join(s, "c2f.onnx"), "-i", os.path.join(s, "c2f_input_0.npy"),
                   "--ref-dir", os.path.join(s, "c2f_ref"), "--backend", backend, "--runs", "3", "--profile", trace])
    need("outputs bit-identical  PASS" in p.stdout, "c2f's runs differ: %s" % p.stdout)
    t = load(trace)
    fig = check_trace(t, 0)
    report(trace, t, fig)
    need(fig["runs"] == 3, "check --runs 3 recorded %d runs" % fig["runs"])
    cmds = commands_of(t)
    need(all(e["args"]["device"] == backend for e in cmds), "c2f ran off the %s device" % backend)
    need(all(e["pid"] == 2 for e in cmds), "device commands are not in the device's process")
    lane = "cuda stream" if backend == "cuda" else "%s queue" % backend
    names = thread_names(t)
    need(all(lane in names.get((e["pid"], e["tid"]), "") for e in cmds), "a command is not on a %s" % lane)


def device_yolo(strata, models, backend):
    """YOLOv8n on a device (OpenCL and Vulkan: 320x320, PoCL and lavapipe
    being slow; CUDA: the
    640x640 fixture): once the program caches are warm, the device's times,
    moved to the host clock, account for 90% of the run.  Then a few warmed-up runs, whose coverage is
    printed for the record."""
    d = tempfile.mkdtemp()
    trace = os.path.join(d, "yolov8n_%s.json" % backend)
    if backend in ("opencl", "vulkan"):
        inp = os.path.join(d, "x.npy")
        import numpy as np
        np.save(inp, np.random.default_rng(17).uniform(0, 1, (1, 3, 320, 320)).astype(np.float32))
    else:
        inp = os.path.join(models, "yolo", "yolov8n_640x640_b1_input.npy")
    model = os.path.join(models, "yolo", "yolov8n.onnx")
    # one run first, unprofiled, to fill the program caches: on a fresh
    # machine PoCL compiles each kernel at its first enqueue (per
    # work-group size), seconds that no device command accounts for
    strata_ok([strata, "run", model, "-i", inp, "-o", d, "-q", "--backend", backend])
    strata_ok([strata, "run", model, "-i", inp, "-o", d, "-q", "--backend", backend, "--profile", trace])
    t = load(trace)
    fig = check_trace(t)
    report(trace, t, fig)
    cmds = commands_of(t)
    need(all(e["args"]["device"] == backend for e in cmds), "YOLOv8n fell back to the CPU on %s" % backend)
    print("clock conversion bound: %.1f us" % t["otherData"]["runs"][0]["sync_error_us"])
    trace = os.path.join(d, "yolov8n_%s_bench.json" % backend)
    strata_ok([strata, "bench", model, "-i", inp, "--backend", backend, "--warmup", "1", "--runs", "3",
               "--profile", trace])
    t = load(trace)
    fig = check_trace(t, 0)
    report(trace, t, fig)


def device_mixed(strata, models, backend):
    """A mixed plan (ops the device lacks run on the CPU): its host
    commands and transfers on threads of their own.  On OpenCL twice: the
    copy path (STRATA_OPENCL_NO_ZERO_COPY=1), and the default, which on a
    host-unified device (PoCL) maps the device's memory for the host
    commands instead, so its trace has host commands and no transfers."""
    for zero_copy in ([False, True] if backend == "opencl" else [False]):
        if backend == "opencl":
            os.environ["STRATA_OPENCL_NO_ZERO_COPY"] = "0" if zero_copy else "1"
        d = tempfile.mkdtemp()
        trace = os.path.join(d, "mixed_%s.json" % backend)
        m = os.path.join(models, "mixed")
        model, inp = os.path.join(m, "topk_cumsum.onnx"), os.path.join(m, "topk_cumsum_input_0.npy")
        strata_ok([strata, "run", model, "-i", inp, "-o", d, "-q", "--backend", backend, "--profile", trace])
        t = load(trace)
        fig = check_trace(t, 0)
        report(trace, t, fig)
        names = thread_names(t)
        cmds = commands_of(t)
        host = [e for e in cmds if "host commands" in names.get((e["pid"], e["tid"]), "")]
        xfer = [e for e in cmds if "transfers" in names.get((e["pid"], e["tid"]), "")]
        need(host and all(e["args"]["device"] == "cpu" for e in host), "no host command on its own thread")
        shared = zero_copy and "zero-copy" in strata_ok([strata, "inspect", model, "--plan", "-i", inp, "--backend",
                                                         backend]).stdout
        if shared:
            need(not xfer and not any(e["args"]["op"] == "Transfer" for e in cmds), "a zero-copy plan made transfers")
        else:
            need(xfer and all(e["args"]["op"] == "Transfer" and "copy" in e["args"] for e in xfer),
                 "no transfer on its own thread")
        need(any(e["args"]["device"] == backend and e["args"]["op"] != "Transfer" for e in cmds), "no %s kernel" % backend)


def staged(strata, models, backend="cpu"):
    """if_score: an If on a computed score, so a run is two stages (plan/stage.c),
    7 commands and then the branch taken's 3; each stage's commands are
    there, after the session read the first stage's results."""
    d = tempfile.mkdtemp()
    trace = os.path.join(d, "staged.json")
    m = os.path.join(models, "staged")
    strata_ok([strata, "run", os.path.join(m, "if_score.onnx"), "-i", os.path.join(m, "if_score_input_0.npy"),
               "-o", d, "-q", "--backend", backend, "--profile", trace])
    t = load(trace)
    fig = check_trace(t, 0)
    report(trace, t, fig)
    r = t["otherData"]["runs"][0]
    need(r["stages"] == 2 and len(r["stage_commands"]) == 2, "if_score ran as %d stage(s), not 2" % r["stages"])
    cmds = [e for e in t["traceEvents"] if e.get("ph") == "X" and "command" in e.get("args", {})]
    for k, n in enumerate(r["stage_commands"]):
        got = sum(1 for e in cmds if e["args"]["stage"] == k)
        need(n > 0 and got == n, "stage %d: %d command slices for its %d commands" % (k, got, n))
    names = [e["name"] for e in t["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "session"]
    need("read stage results" in names, "the session's read of the first stage is not in the trace")
    print("stages: %s commands" % r["stage_commands"])


def commands(strata, models):
    d = tempfile.mkdtemp()
    s = os.path.join(models, "seed")
    model, inp = os.path.join(s, "c2f.onnx"), os.path.join(s, "c2f_input_0.npy")
    trace = os.path.join(d, "bench.json")
    strata_ok([strata, "bench", model, "-i", inp, "--runs", "4", "--warmup", "1", "--profile", trace])
    fig = check_trace(load(trace), 0)
    need(fig["runs"] == 5, "bench --warmup 1 --runs 4 recorded %d runs" % fig["runs"])
    trace = os.path.join(d, "check.json")
    strata_ok([strata, "check", model, "-i", inp, "--ref-dir", os.path.join(s, "c2f_ref"), "--profile", trace])
    check_trace(load(trace), 0)
    # a path that cannot be written: one line naming it, exit 1, no files
    for bad, what in ((os.path.join(d, "no_such_dir", "t.json"), "does not exist"), (d, "is a directory")):
        for cmd in (["run", model, "-i", inp, "-o", d], ["bench", model, "--runs", "1"]):
            before = set(os.listdir(d))
            p = run([strata] + cmd + ["--profile", bad])
            lines = p.stderr.strip().splitlines()
            need(p.returncode == 1, "%s --profile %s exited %d" % (cmd[0], bad, p.returncode))
            need(len(lines) == 1 and lines[0].startswith("strata: ") and bad in lines[0] and what in lines[0],
                 "%s --profile %s: expected one line naming the path, got %r" % (cmd[0], bad, p.stderr))
            need(set(os.listdir(d)) == before and not p.stdout, "%s --profile %s left files or output" % (cmd[0], bad))
    p = run([strata, "run", model, "--profile"])
    need(p.returncode == 1 and "needs a value" in p.stderr, "--profile without a value: %r" % p.stderr)
    print("bench, check and run take --profile; unwritable paths fail cleanly")


def dot(strata, models):
    d = tempfile.mkdtemp()
    s = os.path.join(models, "seed")
    out = os.path.join(d, "c2f.dot")
    p = strata_ok([strata, "inspect", os.path.join(s, "c2f.onnx"), "--plan", "--json", "--dot", out])
    plan = json.loads(p.stdout)
    text = open(out, encoding="utf-8").read()
    boxes = text.count("shape=box, style=\"rounded,filled\"")
    edges = sum(1 for line in text.splitlines() if "->" in line and "style=dotted" not in line)
    need(boxes == plan["commands"], "%d command boxes for %d commands" % (boxes, plan["commands"]))
    need(edges == plan["edges"], "%d solid edges for %d DAG edges" % (edges, plan["edges"]))
    need(("in place" in text) == bool(plan["concats_in_place"]), "in-place concats not shown")
    need("(view)" in text, "c2f's chunk views are not drawn")
    if os.path.exists("/usr/bin/dot"):
        r = run(["/usr/bin/dot", "-Tsvg", out])
        need(r.returncode == 0 and "<svg" in r.stdout, "dot rejects the graph: %s" % r.stderr)
    p = run([strata, "inspect", os.path.join(s, "c2f.onnx"), "--dot", out])
    need(p.returncode == 1 and "--plan" in p.stderr, "--dot without --plan: %r" % p.stderr)
    print("c2f: %d commands, %d DAG edges drawn" % (boxes, edges))


def png(strata, models):
    """tools/trace_png.py on a two-worker profile of a seed case: a PNG
    and the summary."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("skipped: no matplotlib (python3-matplotlib)")
        sys.exit(77)
    d = tempfile.mkdtemp()
    s = os.path.join(models, "seed")
    trace, out = os.path.join(d, "c2f.json"), os.path.join(d, "c2f.png")
    strata_ok([strata, "bench", os.path.join(s, "c2f.onnx"), "--threads", "2", "--warmup", "1", "--runs", "2",
               "--profile", trace])
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "trace_png.py")
    for which in ("1", "median", "all"):
        p = run([sys.executable, tool, trace, out, "--run", which])
        need(p.returncode == 0, "trace_png.py --run %s failed: %s" % (which, p.stderr.strip()[-400:]))
        with open(out, "rb") as f:
            need(f.read(8) == b"\x89PNG\r\n\x1a\n", "trace_png.py wrote no PNG")
        need("time per op:" in p.stdout and "critical path:" in p.stdout, "no summary: %r" % p.stdout)
    p = run([sys.executable, tool, trace, out, "--run", "9"])
    need(p.returncode != 0 and "no run 9" in p.stderr, "--run 9 of a 3-run trace: %r" % p.stderr)
    print(p.stdout.splitlines()[0] if p.stdout else "trace_png.py: PNG and summary for runs 1, median, all")


def main(argv):
    try:
        if argv[1] == "check":
            t = load(argv[2])
            fig = check_trace(t, float(argv[3]) if len(argv) > 3 else 0.9)
            report(argv[2], t, fig)
        elif argv[1] == "selftest":
            selftest()
        elif argv[1] == "synthetic":
            synthetic(argv[2])
        elif argv[1] in ("seed", "yolo", "mixed", "staged") and len(argv) > 4:
            {"seed": device_seed, "yolo": device_yolo, "mixed": device_mixed, "staged": staged}[argv[1]](
                argv[2], argv[3], argv[4])
        else:
            {"cpu_yolo": cpu_yolo, "staged": staged, "commands": commands, "dot": dot, "png": png}[argv[1]](
                argv[2], argv[3])
    except Bad as e:
        print("FAIL: %s" % e)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
