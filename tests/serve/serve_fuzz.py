#!/usr/bin/python3
"""serve_fuzz.py STRATA [N] — bad requests against `strata serve`: JSON
truncated at every few bytes, random byte edits, wrong and invented
datatypes, huge, negative, fractional and over-ranked shapes, binary
sizes and header lengths that lie, deep nesting, bad escapes, odd paths
and methods, and raw non-HTTP bytes on the socket.  Seeded, so a failure
repeats.

Passes when every answer is a protocol error (4xx with a JSON "error"
body) or, for an edit that happens to leave a valid request, a 200 that
is correct; when no answer is a 5xx; when the server answers a health
check after each group; and when it stops cleanly on SIGTERM with
nothing on stderr from a sanitizer (CTest runs this in the ASan build
too: `scripts/sanitized_tests.sh asan -R serve`)."""
import json
import os
import random
import shutil
import socket
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_util import Server, make_repo, session, tiny_reference  # noqa: E402

STRATA = os.path.abspath(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else 300
R = random.Random(27)
DEADLINE = time.time() + 240  # every loop below is bounded in count and in time


def valid(n=2):
    x = np.array([[R.uniform(-1, 1) for _ in range(4)] for _ in range(n)], dtype=np.float32)
    k = np.array([[R.randint(-9, 9) for _ in range(2)] for _ in range(n)], dtype=np.int64)
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [n, 4], "data": x.ravel().tolist()},
                       {"name": "k", "datatype": "INT64", "shape": [n, 2], "data": k.ravel().tolist()}]}
    return body, x, k


def binary(n=2):
    body, x, k = valid(n)
    for inp, a in zip(body["inputs"], (x, k)):
        del inp["data"]
        inp["parameters"] = {"binary_data_size": a.nbytes}
    h = json.dumps(body).encode()
    return h, x.tobytes() + k.tobytes()


class Stats:
    def __init__(self):
        self.by_code = {}
        self.n = 0


def send(s, url, st, data, headers=None, method="POST", path="/v2/models/tiny/infer", expect_ok=None):
    if time.time() > DEADLINE:
        raise AssertionError("serve_fuzz: past its time bound")
    r = s.request(method, url + path, data=data, headers=headers or {}, timeout=30)
    st.n += 1
    st.by_code[r.status_code] = st.by_code.get(r.status_code, 0) + 1
    assert r.status_code < 500, "5xx for %r: %s" % (data[:200] if data else data, r.text[:300])
    if r.status_code >= 400:
        if method != "HEAD":
            assert r.headers.get("Content-Type") == "application/json", r.headers
            assert isinstance(r.json().get("error"), str), r.text
    elif expect_ok is not None:
        x, k = expect_ok
        out = json.loads(r.content[:int(r.headers.get("Inference-Header-Content-Length", len(r.content)))])
        assert out["outputs"][0]["name"] == "y"
    return r


def health(s, url):
    assert s.get(url + "/v2/health/live", timeout=30).status_code == 200, "the server stopped answering"


def main():
    tmp = tempfile.mkdtemp(prefix="strata-fuzz-")
    st = Stats()
    try:
        make_repo(os.path.join(tmp, "repo"), {"tiny": (None, {"max_batch": 4, "max_delay_us": 0}),
                                              "tinyn": (None, None)})
        with Server(STRATA, os.path.join(tmp, "repo"), "--max-body", "1048576") as srv:
            s, url = session(), srv.url
            # 1. truncated JSON, at every few bytes
            text = json.dumps(valid()[0]).encode()
            step = max(1, len(text) // N)
            for cut in range(0, len(text), step):
                send(s, url, st, text[:cut])
            health(s, url)
            # 2. random byte edits of a valid body
            for _ in range(N):
                b = bytearray(json.dumps(valid()[0]).encode())
                for _ in range(R.randint(1, 4)):
                    op, at = R.randint(0, 2), R.randrange(len(b))
                    if op == 0:
                        b[at] = R.randrange(256)
                    elif op == 1:
                        b.insert(at, R.choice(b'[]{}",:-.eE0\\u\x00\xff'))
                    else:
                        del b[at]
                send(s, url, st, bytes(b))
            health(s, url)
            # 3. datatypes
            for dt in ["FP64", "FP16", "BF16", "INT8", "UINT64", "BOOL", "BYTES", "fp32", "", "FP32\u0000", 7,
                       None, ["FP32"], "X" * 5000]:
                body = valid()[0]
                body["inputs"][R.randint(0, 1)]["datatype"] = dt
                send(s, url, st, json.dumps(body).encode())
            # 4. shapes
            for shape in [[1 << 62, 4], [2 ** 31, 4], [-1, 4], [0, 4], [1.5, 4], ["2", 4], [2], [2, 4, 1],
                          [2] * 9, [[2], [4]], [], None, "2,4", [2, 4.0000001], [1e308, 4], [5, 4]]:
                body = valid()[0]
                body["inputs"][0]["shape"] = shape
                send(s, url, st, json.dumps(body).encode())
            health(s, url)
            # 5. binary sizes and header lengths that lie
            h, raw = binary()
            for hl in [0, 1, len(h) - 1, len(h) + 1, len(h) + len(raw), len(h) + len(raw) + 1, 10 ** 30, -1,
                       "abc", "", "1 2", "0x10"]:
                send(s, url, st, h + raw, headers={"Inference-Header-Content-Length": str(hl)})
            for size in [0, 1, 31, 33, 10 ** 12, -32, 2 ** 64, 32.5, "32", None]:
                body = json.loads(h)
                body["inputs"][0]["parameters"]["binary_data_size"] = size
                hh = json.dumps(body).encode()
                send(s, url, st, hh + raw, headers={"Inference-Header-Content-Length": str(len(hh))})
            for cut in range(0, len(raw) + 1, 4):  # binary data cut short, or padded
                send(s, url, st, h + raw[:cut], headers={"Inference-Header-Content-Length": str(len(h))})
            send(s, url, st, h + raw + b"\0" * 7, headers={"Inference-Header-Content-Length": str(len(h))})
            health(s, url)
            # 6. nesting, strings, numbers
            for payload in [b"[" * 100000, b"{\"a\":" * 50000, b"\"" + b"\\u" * 1000, b"\"\\ud800\"",
                            b"\"\\udc00\\ud800\"", b"{\"inputs\": \"\\u0000\"}", b"1e99999", b"-", b"01",
                            b"{\"inputs\": [" + b"1," * 100000 + b"1]}", b"\xff\xfe\xfd", b"nul", b"{" + b" " * 1000,
                            b"{\"inputs\": [{\"name\": \"x\", \"data\": [" + b"[" * 70 + b"1" + b"]" * 70 + b"]}]}",
                            json.dumps({"inputs": [{"name": "x" * 100000}]}).encode(), b""]:
                send(s, url, st, payload)
            for values in [[1e39] * 8, ["a"] * 8, [None] * 8, [True] * 8, [[1, 2]] * 4, [{}] * 8]:
                body = valid()[0]
                body["inputs"][0]["data"] = values
                send(s, url, st, json.dumps(body).encode())
            body = valid()[0]
            body["inputs"][1]["data"] = [2 ** 63] * 4
            send(s, url, st, json.dumps(body).encode())
            body = valid()[0]
            body["inputs"].append(body["inputs"][0])
            send(s, url, st, json.dumps(body).encode())
            body = valid(9)[0]  # more rows than the model's max_batch
            send(s, url, st, json.dumps(body).encode())
            health(s, url)
            # 7. paths and methods
            for path in ["/v2/models/" + "a" * 300 + "/infer", "/v2/models/tiny/versions/99999999999999999999/infer",
                         "/v2/models/tiny/versions/-1/infer", "/v2/models/%00/infer", "/v2/models/tiny%2F..%2F/infer",
                         "/v2/models/\u00e9/infer", "/v2/" + "x/" * 20, "/v2/models/tiny/infer/extra",
                         "/v2/repository/models/..%2F..%2Fetc/load", "/v2/repository/models/.x/load",
                         "/v2/repository/models/a%2Fb/unload", "/" + "%" * 100, "/metrics/x"]:
                send(s, url, st, b"{}", path=path)
            for method in ["PUT", "DELETE", "PATCH", "GET", "HEAD"]:
                send(s, url, st, b"{}", method=method)
            # a body over --max-body: 413 before it is read
            send(s, url, st, b" " * (1048576 + 1))
            health(s, url)
            # 8. raw bytes, not HTTP
            host, port = url[len("http://"):].split(":")
            for junk in [b"\x00" * 100, b"GET / HTTP/9.9\r\n\r\n", b"POST /v2/models/tiny/infer HTTP/1.1\r\n"
                         b"Content-Length: -5\r\n\r\n", b"POST /v2/models/tiny/infer HTTP/1.1\r\nTransfer-Encoding: "
                         b"chunked\r\n\r\nfffffffffffffff\r\n", b"A" * 70000 + b"\r\n\r\n"]:
                with socket.create_connection((host, int(port)), timeout=10) as c:
                    c.sendall(junk)
                    c.shutdown(socket.SHUT_WR)
                    try:
                        while c.recv(65536):
                            pass
                    except (ConnectionResetError, socket.timeout):
                        pass
            health(s, url)
            # and the server still answers correctly
            body, x, k = valid(3)
            r = send(s, url, st, json.dumps(body).encode(), expect_ok=(x, k))
            out = r.json()["outputs"]
            y = np.array(out[0]["data"]).reshape(3, 3)
            assert np.abs(y - tiny_reference(x, k)[0]).max() <= 1e-5
            rc = srv.stop()
        bad = [ln for ln in srv.stderr.splitlines() if "Sanitizer" in ln or "runtime error" in ln]
        assert rc == 0 and not bad, "exit %d, stderr:\n%s" % (rc, srv.stderr[-3000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("serve_fuzz: %d bad requests, answers by status %s, no 5xx, no crash, clean exit" %
          (st.n, dict(sorted(st.by_code.items()))))


if __name__ == "__main__":
    main()
