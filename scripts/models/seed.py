#!/usr/bin/python3
"""The seed report's failure patterns as small PyTorch modules, exported to
ONNX with PyTorch's own outputs as the reference.

Each case writes, into the output directory:
  <case>.onnx               the model (opset 17)
  <case>_input_<i>.npy      random inputs (normal, seeded; never all ones/zeros)
  <case>_ref/<name>.npy     PyTorch's float32 outputs, named as the ONNX outputs
and manifest.json lists, per case, the inputs, the outputs and what its plan
must show (which ops must be pure views, how many concats are in place).

Usage: /usr/bin/python3 scripts/models/seed.py --out DIR [--seed N]
(Debian's python3 with python3-torch; the python3 first on PATH lacks torch.)
"""
import argparse
import json
import os
import subprocess

import numpy as np
import torch
import torch.nn as nn


class LinearChunkLastDim(nn.Module):
    """The seed's first module: the second chunk on the last dim (offset 8,
    strides [16, 1], not packed) feeds another linear."""

    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(7, 16, bias=False)
        self.linear2 = nn.Linear(8, 5, bias=False)

    def forward(self, x):
        _, second = self.linear1(x).chunk(2, dim=-1)
        return self.linear2(second)


class LinearChunkFirstDim(nn.Module):
    """The seed's second module: the second chunk on dim 0 (offset 96
    elements, packed) feeds another linear."""

    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(7, 16, bias=False)
        self.linear2 = nn.Linear(16, 5, bias=False)

    def forward(self, x):
        _, second = self.linear1(x).chunk(2, dim=0)
        return self.linear2(second)


class Unbind(nn.Module):
    """unbind: every piece is read by a different op."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 4)

    def forward(self, x):
        a, b, c, d = self.linear(x).unbind(2)
        return torch.sigmoid(a), b * 2.0, torch.relu(c), d.transpose(0, 1) + 1.0


class UnevenSplitConcat(nn.Module):
    """An uneven split whose pieces are changed and concatenated again."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(5, 11)

    def forward(self, x):
        a, b, c = self.linear(x).split([2, 6, 3], dim=-1)
        return torch.cat([torch.sigmoid(c), a * 3.0, torch.tanh(b)], dim=-1)


class ConvBnSiLU(nn.Module):
    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1 = ConvBnSiLU(c, c, 3)
        self.cv2 = ConvBnSiLU(c, c, 3)

    def forward(self, x):
        return x + self.cv2(self.cv1(x))


class C2f(nn.Module):
    """YOLOv8's C2f: 1x1 conv, chunk(2) on channels, bottlenecks chained on
    the last chunk, concat of all, 1x1 conv.  The seed's failing pattern."""

    def __init__(self, c1=8, c2=16, n=2):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = ConvBnSiLU(c1, 2 * self.c, 1)
        self.cv2 = ConvBnSiLU((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class CatLastDimRead(nn.Module):
    """A last-dim concat of two linears that another op reads: the case the
    seed report left open (writes through non-packed views must reach the
    parent)."""

    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(6, 4)
        self.l2 = nn.Linear(6, 5)
        self.l3 = nn.Linear(9, 3)

    def forward(self, x):
        y = torch.cat([self.l1(x), self.l2(x)], dim=-1)
        return self.l3(y), torch.sigmoid(y)


class OffsetViewOutput(nn.Module):
    """A graph output that is an offset view of the last op's result."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(7, 12)

    def forward(self, x):
        y = self.linear(x)
        return y[:, 5:9], y[3:]


class NarrowTransposed(nn.Module):
    """A narrow of a transposed tensor, consumed by a matmul."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 10)
        self.w = nn.Parameter(torch.randn(4, 6))

    def forward(self, x):
        t = self.linear(x).transpose(0, 1)      # [10, 12]
        n = t.narrow(0, 3, 4)                    # rows 3..6 of the transpose
        return torch.matmul(n.transpose(0, 1), self.w)


class NestedConcat(nn.Module):
    """Concats of concats on two dims, every producer a computing op."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 3)
        self.b = nn.Linear(4, 5)
        self.c = nn.Linear(4, 8)

    def forward(self, x):
        inner = torch.cat([torch.relu(self.a(x)), torch.sigmoid(self.b(x))], dim=-1)   # [n, 8]
        outer = torch.cat([inner, torch.tanh(self.c(x))], dim=0)                        # [2n, 8]
        return torch.cat([outer * 2.0, outer + 1.0], dim=-1)                           # [2n, 16]


class DynamicMLP(nn.Module):
    """Not a seed pattern: a model with a symbolic batch dim and two
    branches of different cost, for the API tests (symbolic dims, host
    reads that wait by byte range, sessions on two threads)."""

    def __init__(self):
        super().__init__()
        self.heavy = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 16))
        self.light = nn.Linear(64, 24)

    def forward(self, x):
        h = self.heavy(x)
        l = self.light(x)
        return h, l[:, 8:]


# name -> (module, input shapes, plan expectations)
#   views: ops whose every node must be a pure view
#   concats_in_place: how many Concat nodes must have inputs placed in place
CASES = {
    "linear_chunk_last_dim": (LinearChunkLastDim, [(12, 7)], {"views": ["Slice", "Split"], "concats_in_place": 0}),
    "linear_chunk_first_dim": (LinearChunkFirstDim, [(12, 7)], {"views": ["Slice", "Split"], "concats_in_place": 0}),
    "unbind": (Unbind, [(2, 3, 6)], {"views": ["Split", "Squeeze", "Gather", "Transpose"], "concats_in_place": 0}),
    "uneven_split_concat": (UnevenSplitConcat, [(4, 5)], {"views": ["Split", "Slice"], "concats_in_place": 1}),
    "c2f": (C2f, [(1, 8, 10, 12)], {"views": ["Split", "Slice"], "concats_in_place": 1}),
    "cat_last_dim_read": (CatLastDimRead, [(5, 6)], {"views": [], "concats_in_place": 1}),
    "offset_view_output": (OffsetViewOutput, [(6, 7)], {"views": ["Slice"], "concats_in_place": 0}),
    "narrow_transposed": (NarrowTransposed, [(12, 8)], {"views": ["Transpose", "Slice"], "concats_in_place": 0}),
    "nested_concat": (NestedConcat, [(3, 4)], {"views": [], "concats_in_place": 3}),
}

# models that are not seed patterns: name -> (module, input shapes, dynamic input axes)
EXTRA = {
    "dynamic_mlp": (DynamicMLP, [(5, 64)], {0: "batch"}),
}


def randomize_bn(module, gen):
    """Random BatchNorm statistics, so eval-mode BN is not the identity."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=gen) * 0.1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest = {}
    for i, (name, (cls, shapes, expect)) in enumerate(CASES.items()):
        torch.manual_seed(args.seed * 1000 + i)
        gen = torch.Generator().manual_seed(args.seed * 1000 + i)
        model = cls().eval()
        with torch.no_grad():
            randomize_bn(model, gen)
        inputs = [torch.randn(*s, generator=gen) for s in shapes]
        with torch.no_grad():
            outs = model(*inputs)
        if isinstance(outs, torch.Tensor):
            outs = (outs,)
        in_names = ["x%d" % k if len(inputs) > 1 else "x" for k in range(len(inputs))]
        out_names = ["y%d" % k if len(outs) > 1 else "y" for k in range(len(outs))]
        path = os.path.join(args.out, name + ".onnx")
        torch.onnx.export(model, tuple(inputs), path, opset_version=17, input_names=in_names,
                          output_names=out_names, do_constant_folding=True)
        in_files = []
        for k, t in enumerate(inputs):
            f = "%s_input_%d.npy" % (name, k)
            np.save(os.path.join(args.out, f), t.numpy())
            in_files.append(f)
        ref_dir = name + "_ref"
        os.makedirs(os.path.join(args.out, ref_dir), exist_ok=True)
        for n, t in zip(out_names, outs):
            np.save(os.path.join(args.out, ref_dir, n + ".npy"), t.numpy())
        manifest[name] = {"model": name + ".onnx", "inputs": in_files, "ref_dir": ref_dir,
                          "outputs": out_names, "expect": expect}
    # ONNX Runtime's outputs too (onnxruntime-node, installed by setup.sh),
    # so the seed modules are checked against both PyTorch and ONNX Runtime
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name, m in manifest.items():
        ort_dir = os.path.join(args.out, name + "_ort")
        os.makedirs(ort_dir, exist_ok=True)
        subprocess.run(["node", os.path.join(root, "scripts", "ort", "run.js"), os.path.join(args.out, m["model"]), ort_dir]
                       + [os.path.join(args.out, f) for f in m["inputs"]], check=True, stdout=subprocess.DEVNULL)
        m["ort_dir"] = name + "_ort"
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    for i, (name, (cls, shapes, dyn)) in enumerate(EXTRA.items()):
        torch.manual_seed(args.seed * 1000 + 500 + i)
        gen = torch.Generator().manual_seed(args.seed * 1000 + 500 + i)
        model = cls().eval()
        inputs = [torch.randn(*s, generator=gen) for s in shapes]
        with torch.no_grad():
            outs = model(*inputs)
        torch.onnx.export(model, tuple(inputs), os.path.join(args.out, name + ".onnx"), opset_version=17,
                          input_names=["x"], output_names=["y%d" % k for k in range(len(outs))],
                          dynamic_axes={"x": dyn, **{"y%d" % k: {0: "batch"} for k in range(len(outs))}})
        np.save(os.path.join(args.out, name + "_input_0.npy"), inputs[0].numpy())
        for k, t in enumerate(outs):
            np.save(os.path.join(args.out, "%s_y%d.npy" % (name, k)), t.numpy())
    print("seed cases written to %s: %s" % (args.out, ", ".join(manifest)))


if __name__ == "__main__":
    main()
