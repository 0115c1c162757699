"""What the `strata serve` tests share: a tiny two-input model made with
onnx's helper (so its reference is numpy in float64), a repository on
disk, and a server started on a free loopback port (--port 0: the server
picks one and prints it) that is always stopped, with a bound on every
wait."""
import os
import re
import signal
import subprocess
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OCR_MODELS = os.path.join(ROOT, "node_modules", "@gutenye", "ocr-models", "assets")

# the tiny model: y = x @ W + b (FP32 [N, 4] -> [N, 3]), z = k * 3 (INT64 [N, 2])
RNG = np.random.default_rng(27)
W = RNG.uniform(-1, 1, (4, 3)).astype(np.float32)
B = RNG.uniform(-1, 1, (3,)).astype(np.float32)


def tiny_reference(x, k):
    y = (x.astype(np.float64) @ W.astype(np.float64) + B.astype(np.float64))
    return y, k * 3


def make_tiny_model(path):
    from onnx import TensorProto, helper, numpy_helper, save
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Add", ["xw", "B"], ["y"]),
             helper.make_node("Mul", ["k", "three"], ["z"])]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("k", TensorProto.INT64, ["batch", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("z", TensorProto.INT64, ["batch", 2])],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B"),
         numpy_helper.from_array(np.array(3, dtype=np.int64), "three")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    os.makedirs(os.path.dirname(path), exist_ok=True)
    save(model, path)


def make_repo(root, models):
    """models: {name: (onnx path or None for the tiny model, config dict or None)}"""
    for name, (src, config) in models.items():
        d = os.path.join(root, name, "1")
        os.makedirs(d, exist_ok=True)
        dst = os.path.join(d, "model.onnx")
        if src is None:
            make_tiny_model(dst)
        else:
            os.symlink(os.path.abspath(src), dst)
        if config is not None:
            import json
            with open(os.path.join(root, name, "config.json"), "w") as f:
                json.dump(config, f)


class Server:
    """strata serve REPO --port 0 ..., as a context manager."""

    def __init__(self, strata, repo, *args, wrapper=(), env=None):
        self.cmd = list(wrapper) + [strata, "serve", repo, "--port", "0"] + list(args)
        self.env = env
        self.proc = None
        self.url = None
        self.stderr = ""

    def __enter__(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=self.env)
        line = self.proc.stdout.readline()  # the server prints it once listening, or exits
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.proc.kill()
            out, err = self.proc.communicate(timeout=30)
            raise AssertionError("strata serve did not start: %r %s" % (line, err))
        self.url = "http://127.0.0.1:%s" % m.group(1)
        return self

    def stop(self, timeout=120):
        """SIGTERM, then the exit status (and stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, self.stderr = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, self.stderr = self.proc.communicate()
            raise AssertionError("strata serve did not stop within %ds of SIGTERM" % timeout)
        return self.proc.returncode

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.stop()


def session():
    import requests
    s = requests.Session()
    s.trust_env = False  # loopback only: never a proxy from the environment
    return s


def wait_until(cond, timeout=30, what="condition"):
    t = time.time() + timeout
    while time.time() < t:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)
