#!/usr/bin/env python3
"""serve_gpu.py STRATA MODELS OUT [BACKEND] — `strata serve` on the GPU
machine (issue 27), Python's standard library only (that machine may have
neither requests nor numpy nor wrk).

1. Correctness: YOLOv8n and PP-OCR rec served on BACKEND (cuda), one
   random input each as binary tensor data; every output element compared
   with `strata run --backend BACKEND` on the same input (the same library
   and device: within 1e-4 + 1e-4 |ref|, which allows a batch's different
   kernel choice; alone a request runs exactly strata run's plan).
2. Batching: 8 concurrent requests of different inputs for the batching
   rec model; each answer compared with its own strata run; /metrics must
   show fewer runs than requests.
3. Load: http.client threads (closed loop, as wrk does), 1, 8 and 64
   clients for SECONDS each, batching off and on, both models: req/s,
   p50, p99, failed requests, mean batch; and `strata bench` for the
   overhead.  A Markdown table on stdout and in OUT/serve_gpu.md.
The exit status is 0 only when every check passed and no request failed.
"""
import http.client
import json
import os
import random
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

STRATA, MODELS, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
BACKEND = sys.argv[4] if len(sys.argv) > 4 else "cuda"
SECONDS = float(os.environ.get("SECONDS_PER_RUN", "10"))
CLIENTS = [int(c) for c in os.environ.get("CLIENTS", "1,8,64").split(",")]
MODEL_FILES = {"yolo": (os.path.join(MODELS, "yolo", "yolov8n.onnx"), "images", (1, 3, 640, 640), "output0"),
               "rec": (os.path.join(MODELS, "ppocr", "ch_PP-OCRv4_rec_infer.onnx"), "x", (1, 3, 48, 320),
                       "softmax_11.tmp_0")}
failures = []


def prod(s):
    n = 1
    for d in s:
        n *= d
    return n


def npy_write(path, shape, floats):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join("%d, " % d for d in shape)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(floats), *floats))


def npy_read(path):
    with open(path, "rb") as f:
        data = f.read()
    hl = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hl].decode()
    assert "'<f4'" in header, header
    shape = tuple(int(x) for x in re.search(r"\(([^)]*)\)", header).group(1).replace(",", " ").split())
    return shape, struct.unpack("<%df" % prod(shape), data[10 + hl:])


def post(port, path, body, headers, timeout=600):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict(r.getheaders()), data


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", path)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data.decode()


def binary_request(inp, shape, floats):
    h = json.dumps({"inputs": [{"name": inp, "datatype": "FP32", "shape": list(shape),
                                "parameters": {"binary_data_size": 4 * len(floats)}}],
                    "parameters": {"binary_data_output": True}}).encode()
    return h + struct.pack("<%df" % len(floats), *floats), {"Inference-Header-Content-Length": str(len(h))}


def decode(headers, data):
    hl = int(headers.get("Inference-Header-Content-Length", len(data)))
    out = json.loads(data[:hl])["outputs"][0]
    n = out["parameters"]["binary_data_size"] // 4
    return tuple(out["shape"]), struct.unpack("<%df" % n, data[hl:hl + 4 * n])


def compare(what, got, ref):
    (gs, gv), (rs, rv) = got, ref
    if gs != rs:
        failures.append("%s: shape %s, strata run %s" % (what, gs, rs))
        return
    worst = max(abs(a - b) - 1e-4 * abs(b) for a, b in zip(gv, rv))
    ok = worst <= 1e-4
    print("%s %s: %d elements, worst |diff| - 1e-4|ref| = %.2e" % ("PASS" if ok else "FAIL", what, len(gv), worst))
    if not ok:
        failures.append(what)


def strata_run(tmp, model, inp, shape, floats, out_name, tag):
    x = os.path.join(tmp, tag + ".npy")
    npy_write(x, shape, floats)
    d = os.path.join(tmp, tag + "_ref")
    os.makedirs(d, exist_ok=True)
    subprocess.run([STRATA, "run", model, "-i", "%s=%s" % (inp, x), "-o", d, "-q", "--backend", BACKEND], check=True,
                   timeout=600)
    return npy_read(os.path.join(d, re.sub(r"[^A-Za-z0-9._-]", "_", out_name) + ".npy")), x


def load(port, name, body, headers, clients, seconds):
    lat, failed, stop = [], [0], time.time() + seconds
    lock = threading.Lock()

    def client():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        while time.time() < stop:
            t0 = time.time()
            try:
                c.request("POST", "/v2/models/%s/infer" % name, body=body, headers=headers)
                r = c.getresponse()
                r.read()
                ok = r.status == 200
            except Exception:
                ok = False
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            with lock:
                if ok:
                    lat.append((time.time() - t0) * 1000)
                else:
                    failed[0] += 1
        c.close()

    ts = [threading.Thread(target=client) for _ in range(clients)]
    t0 = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.time() - t0  # includes the requests in flight at the deadline, which finish
    lat.sort()
    pick = (lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]) if lat else (lambda q: float("nan"))
    return {"rps": len(lat) / wall, "p50": pick(0.5), "p99": pick(0.99), "n": len(lat), "failed": failed[0]}


def metric(text, name, model):
    m = re.search(r'^%s\{model="%s",version="1"\} ([\d.e+]+)$' % (name, model), text, re.M)
    return float(m.group(1)) if m else 0.0


def main():
    tmp = tempfile.mkdtemp(prefix="serve-gpu-")
    repo = os.path.join(tmp, "repo")
    for m, (path, _, _, _) in MODEL_FILES.items():
        for name, cfg in ((m, {"max_batch": 1}), (m + "_b", {"max_batch": 8, "max_delay_us": 2000})):
            os.makedirs(os.path.join(repo, name, "1"))
            os.symlink(os.path.abspath(path), os.path.join(repo, name, "1", "model.onnx"))
            cfg["backend"] = BACKEND
            with open(os.path.join(repo, name, "config.json"), "w") as f:
                json.dump(cfg, f)
    srv = subprocess.Popen([STRATA, "serve", repo, "--port", "0", "--max-connections", "512"], stdout=subprocess.PIPE,
                           stderr=open(os.path.join(OUT, "serve_gpu_server.log"), "w"), text=True)
    line = srv.stdout.readline()
    print(line.strip())
    port = int(re.search(r":(\d+) \(", line).group(1))
    rng = random.Random(27)
    rows = []
    try:
        inputs = {}
        for m, (path, inp, shape, out) in MODEL_FILES.items():
            floats = [rng.uniform(0, 1) for _ in range(prod(shape))]
            ref, xpath = strata_run(tmp, path, inp, shape, floats, out, m)
            body, headers = binary_request(inp, shape, floats)
            inputs[m] = (body, headers, xpath)
            for name in (m, m + "_b"):
                st, h, data = post(port, "/v2/models/%s/infer" % name, body, headers)
                if st != 200:
                    failures.append("%s: HTTP %d %s" % (name, st, data[:300]))
                    continue
                compare("%s served on %s against strata run" % (name, BACKEND), decode(h, data), ref)
        # batching: 8 concurrent different inputs, each checked against its own strata run
        path, inp, shape, out = MODEL_FILES["rec"]
        cases = []
        for i in range(8):
            floats = [rng.uniform(0, 1) for _ in range(prod(shape))]
            cases.append((binary_request(inp, shape, floats), strata_run(tmp, path, inp, shape, floats, out, "b%d" % i)[0]))
        before = get(port, "/metrics")[1]
        res = [None] * 8
        ts = [threading.Thread(target=lambda i=i: res.__setitem__(i, post(port, "/v2/models/rec_b/infer", *cases[i][0])))
              for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for i in range(8):
            st, h, data = res[i]
            if st != 200:
                failures.append("batch request %d: HTTP %d" % (i, st))
            else:
                compare("batched request %d against its own strata run" % i, decode(h, data), cases[i][1])
        after = get(port, "/metrics")[1]
        runs = metric(after, "strata_inference_batches_total", "rec_b") - metric(before, "strata_inference_batches_total", "rec_b")
        print("%s batching: %d runs for 8 concurrent requests" % ("PASS" if runs < 8 else "FAIL", runs))
        if runs >= 8:
            failures.append("batching: %d runs for 8 requests" % runs)
        # load
        for m, (path, inp, shape, out) in MODEL_FILES.items():
            body, headers, xpath = inputs[m]
            b = subprocess.run([STRATA, "bench", path, "-i", "%s=%s" % (inp, xpath), "--runs", "50", "--backend",
                                BACKEND, "--json"], capture_output=True, text=True, timeout=900)
            bench = json.loads(b.stdout)["median_ms"] if b.returncode == 0 else float("nan")
            for name, batching in ((m, "off"), (m + "_b", "on")):
                load(port, name, body, headers, 8, 3)  # warm: the plans of the batch sizes it will see
                for c in CLIENTS:
                    m0 = get(port, "/metrics")[1]
                    r = load(port, name, body, headers, c, SECONDS)
                    m1 = get(port, "/metrics")[1]
                    n = metric(m1, "strata_inference_batches_total", name) - metric(m0, "strata_inference_batches_total", name)
                    rows.append((m, batching, c, r["rps"], r["p50"], r["p99"], r["n"], r["failed"],
                                 (metric(m1, "strata_inference_batch_size_sum", name) -
                                  metric(m0, "strata_inference_batch_size_sum", name)) / max(1, n), bench))
                    print("load %s batching %s %d clients: %.1f req/s p50 %.1f ms p99 %.1f ms n %d failed %d" %
                          (m, batching, c, r["rps"], r["p50"], r["p99"], r["n"], r["failed"]), flush=True)
                    if r["failed"]:
                        failures.append("%s %d clients: %d failed requests" % (name, c, r["failed"]))
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            rc = srv.wait(timeout=120)
        except subprocess.TimeoutExpired:
            srv.kill()
            rc = -9
        if rc != 0:
            failures.append("server exit %d after SIGTERM" % rc)
    table = ["| model | batching | clients | req/s | p50 ms | p99 ms | requests | failed | mean batch | strata bench ms |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    table += ["| %s | %s | %d | %.1f | %.1f | %.1f | %d | %d | %.2f | %.2f |" % r for r in rows]
    text = "\n".join(table)
    print(text)
    with open(os.path.join(OUT, "serve_gpu.md"), "w") as f:
        f.write(text + "\n")
    print("serve_gpu: %s" % ("all passed" if not failures else "FAILED: " + "; ".join(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
