#!/usr/bin/python3
"""Models whose plans on a GPU backend are mixed: ops the GPU kernel tables
have (Conv, elementwise, MatMul, Softmax, Concat) around ops they lack
(CumSum, TopK, GatherElements), so that values cross between the device
and the CPU in both directions, through views (a chunk) and into a Concat
whose other input is written in place.  PyTorch's outputs are the
reference.

Writes into the output directory, per case:
  <case>.onnx              the model (opset 17)
  <case>_input_0.npy       a random input (normal, seeded)
  <case>_ref/<name>.npy    PyTorch's outputs, named as the ONNX outputs

Usage: /usr/bin/python3 scripts/models/mixed.py --out DIR [--seed N]
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class TopkCumsum(nn.Module):
    """GPU -> CPU (CumSum of a chunk) -> GPU (Concat with the other chunk,
    Conv) -> CPU (TopK, GatherElements) -> GPU (elementwise, MatMul,
    Softmax); the TopK indices are a graph output on the host."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.proj = nn.Parameter(torch.randn(8, 12) * 0.3)

    def forward(self, x):
        y = F.silu(self.conv1(x))
        a, b = y.chunk(2, dim=1)
        c = torch.cumsum(a, dim=3)
        d = torch.cat([c, b], dim=1)
        e = self.conv2(d)
        f = e.flatten(2)
        v, idx = f.topk(8, dim=2)
        g = torch.gather(f, 2, idx)
        h = (v + g) * 0.5
        return torch.softmax(h @ self.proj, dim=-1), idx


CASES = {"topk_cumsum": (TopkCumsum, [1, 3, 16, 16])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest = {}
    for i, (name, (cls, shape)) in enumerate(CASES.items()):
        torch.manual_seed(args.seed + i)
        model = cls().eval()
        x = torch.randn(*shape)
        with torch.no_grad():
            outs = model(x)
        path = os.path.join(args.out, name + ".onnx")
        out_names = ["y%d" % k for k in range(len(outs))]
        torch.onnx.export(model, (x,), path, opset_version=17, input_names=["x"], output_names=out_names)
        np.save(os.path.join(args.out, name + "_input_0.npy"), x.numpy())
        ref = os.path.join(args.out, name + "_ref")
        os.makedirs(ref, exist_ok=True)
        for n, t in zip(out_names, outs):
            np.save(os.path.join(ref, n + ".npy"), t.numpy())
        manifest[name] = {"inputs": [name + "_input_0.npy"], "outputs": out_names}
        print("mixed:", name, [tuple(t.shape) for t in outs])
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
