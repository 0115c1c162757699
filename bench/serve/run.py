#!/usr/bin/python3
"""bench/serve/run.py [--duration S] [--models yolo,rec] [--clients 1,8,64] [--rounds N] [--build DIR]

Load figures for `strata serve` (issue 27), printed as a Markdown table
for bench/RESULTS.md: YOLOv8n (1x3x640x640) and PP-OCRv4 rec (1x3x48x320)
served on loopback, batching off (max_batch 1) and on (max_batch 8,
max_delay_us 2000), driven by wrk with 1, 8 and 64 connections, each
request one image as binary tensor data with the output asked for as
binary; throughput, p50 and p99 latency, failed requests (non-2xx, socket
errors, timeouts) and the mean batch the server ran (its /metrics).  Then
`strata bench` on the same model and input, for the server's overhead:
p50 at 1 client minus bench's median.

Every request body and the models come from the checkout (build/models,
node_modules); the server binds 127.0.0.1 on a free port.  Takes about
(2 models x 2 x 3 x duration) plus start-up: ~4 minutes at 15 s.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "serve"))
from serve_util import OCR_MODELS, Server, make_repo  # noqa: E402

MODELS = {
    "yolo": ("YOLOv8n 640x640", os.path.join(ROOT, "build", "models", "yolo", "yolov8n.onnx"), "images",
             (1, 3, 640, 640)),
    "rec": ("PP-OCRv4 rec 48x320", os.path.join(OCR_MODELS, "ch_PP-OCRv4_rec_infer.onnx"), "x", (1, 3, 48, 320)),
}


def body(input_name, shape, path):
    x = np.random.default_rng(27).uniform(0, 1, shape).astype(np.float32)
    header = json.dumps({"inputs": [{"name": input_name, "datatype": "FP32", "shape": list(shape),
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "parameters": {"binary_data_output": True}}).encode()
    with open(path, "wb") as f:
        f.write(header + x.tobytes())
    np.save(path + ".npy", x)
    return len(header)


def lua(body_path, header_len, path):
    with open(path, "w") as f:
        f.write('local f = assert(io.open("%s", "rb"))\nwrk.body = f:read("*all")\nf:close()\n'
                'wrk.method = "POST"\nwrk.headers["Inference-Header-Content-Length"] = "%d"\n'
                'wrk.headers["Content-Type"] = "application/octet-stream"\n' % (body_path, header_len))


def ms(text):
    v, unit = re.match(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(v) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def wrk(url, script, clients, duration):
    cmd = ["wrk", "-t", str(min(clients, 4)), "-c", str(clients), "-d", "%ds" % duration, "--timeout", "120s",
           "--latency", "-s", script, url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 300).stdout
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    n = int(re.search(r"(\d+) requests in", out).group(1))
    errors = 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors += int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors += sum(map(int, m.groups())) if m else 0
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50": ms(lat["50"]),
            "p99": ms(lat["99"]), "requests": n, "failed": errors, "raw": out}


def metrics(url):
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url + "/metrics", timeout=30) as r:
        return r.read().decode()


def settle(url, timeout=600):
    """Waits until the server answers nothing but this metrics request: a
    run's last requests (wrk stops sending at its deadline; those queued
    then still finish) must not be timed in the next run."""
    t = time.time() + timeout
    while time.time() < t:
        if re.search(r"^strata_http_inflight_requests 1$", metrics(url), re.M):
            return
        time.sleep(0.2)
    raise SystemExit("the server did not settle within %d s" % timeout)


def batch_stats(text, model):
    def get(name):
        m = re.search(r'^%s\{model="%s",version="1"\} ([\d.e+]+)$' % (name, model), text, re.M)
        return float(m.group(1)) if m else 0.0
    return get("strata_inference_batch_size_sum"), get("strata_inference_batch_size_count")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--models", default="yolo,rec")
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    strata = os.path.join(a.build, "strata")
    tmp = tempfile.mkdtemp(prefix="strata-serve-bench-")
    repo = os.path.join(tmp, "repo")
    models = a.models.split(",")
    spec = {}
    for m in models:
        _, path, _, _ = MODELS[m]
        spec[m] = (path, {"max_batch": 1})
        spec[m + "_b"] = (path, {"max_batch": 8, "max_delay_us": 2000})
    make_repo(repo, spec)
    rows = []
    with Server(strata, repo, "--max-connections", "512") as srv:
        for m in models:
            title, path, inp, shape = MODELS[m]
            bpath = os.path.join(tmp, m + ".body")
            hl = body(inp, shape, bpath)
            bench = subprocess.run([strata, "bench", path, "-i", "%s=%s.npy" % (inp, bpath), "--runs", "20",
                                    "--json"], capture_output=True, text=True, timeout=900, check=True).stdout
            bench_ms = json.loads(bench)["median_ms"]
            for name, batching in ((m, "off"), (m + "_b", "on")):
                script = os.path.join(tmp, name + ".lua")
                lua(bpath, hl, script)
                url = srv.url + "/v2/models/%s/infer" % name
                # warm: the plans for the batch sizes the runs will see (a plan
                # per input shape, made on first use and cached)
                wrk(url, script, 8 if batching == "on" else 1, 4)
            # rounds alternate off and on, so a change in the machine's load
            # falls on both
            for rnd, name, batching, c in [(rnd, name, batching, c) for rnd in range(a.rounds)
                                           for name, batching in ((m, "off"), (m + "_b", "on"))
                                           for c in map(int, a.clients.split(","))]:
                script = os.path.join(tmp, name + ".lua")
                url = srv.url + "/v2/models/%s/infer" % name
                settle(srv.url)
                s0, n0 = batch_stats(metrics(srv.url), name)
                r = wrk(url, script, c, a.duration)
                settle(srv.url)
                s1, n1 = batch_stats(metrics(srv.url), name)
                r.update(model=title, batching=batching, clients=c, bench=bench_ms,
                         batch=(s1 - s0) / max(1, n1 - n0))
                rows.append(r)
                print("%s batching %s, %d clients: %.2f req/s, p50 %.1f ms, p99 %.1f ms, %d requests, %d failed, "
                      "mean batch %.2f (strata bench %.1f ms)" % (title, batching, c, r["rps"], r["p50"], r["p99"],
                                                                  r["requests"], r["failed"], r["batch"], bench_ms),
                      file=sys.stderr, flush=True)
        text = metrics(srv.url)
        rc = srv.stop()
    print("| model | batching | clients | req/s | p50 ms | p99 ms | requests | failed | mean batch | strata bench "
          "median ms | p50 - bench (1 client) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        over = "%.1f ms" % (r["p50"] - r["bench"]) if r["clients"] == 1 else ""
        print("| %s | %s | %d | %.2f | %.1f | %.1f | %d | %d | %.2f | %.1f | %s |" %
              (r["model"], r["batching"], r["clients"], r["rps"], r["p50"], r["p99"], r["requests"], r["failed"],
               r["batch"], r["bench"], over))
    fails = re.findall(r'^strata_inference_failures_total\{[^}]*\} (\d+)$', text, re.M)
    print("\nserver: inference failures %s, 5xx %s, exit %d" %
          (sum(map(int, fails)), re.search(r'code="5xx"\} (\d+)', text).group(1), rc))
    sys.exit(1 if any(r["failed"] for r in rows) or rc else 0)


if __name__ == "__main__":
    main()
