#!/usr/bin/env python3
"""The GPU suite's models, built on the GPU machine with random weights
(nothing is downloaded) and exported to ONNX (opset 17) beside the inputs
both runtimes are timed on.

  suite_models.py OUTDIR [--cases a,b,...]

Writes OUTDIR/CASE.onnx, OUTDIR/CASE_b{1,32}_{NAME}.npy (the inputs, f32
or int64) and OUTDIR/CASE.json ({inputs: [names], batch dim}).  The torch
modules are rebuilt from the same seed by build(case) for the peer.
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "models"))

CASES = ("yolov8n", "resnet50", "convnext_tiny", "vit_small", "bert4")
# other architectures, by --cases only: depthwise stride-2 convs,
# squeeze-excite, hard-swish (timm, 224x224)
EXTRA_TIMM = ("mobilenetv3_large_100", "efficientnet_b0")
BATCHES = (1, 32)


def build(case):
    """(module in eval mode on the CPU, f32; input names; example-input maker)."""
    torch.manual_seed(0)
    if case == "yolov8n":
        import yolo
        m = yolo.build("v8n", 0)
        return m.eval(), ["images"], lambda b, g: [torch.from_numpy(g.random((b, 3, 640, 640), dtype=np.float32))]
    if case in ("resnet50", "convnext_tiny", "vit_small") or case in EXTRA_TIMM:
        import timm
        name = {"vit_small": "vit_small_patch16_224"}.get(case, case)
        m = timm.create_model(name, pretrained=False)
        return m.eval(), ["x"], lambda b, g: [torch.from_numpy(g.standard_normal((b, 3, 224, 224), dtype=np.float32))]
    if case == "bert4":
        from transformers import BertConfig, BertModel
        cfg = BertConfig(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024,
                         vocab_size=30522, max_position_embeddings=512)
        m = BertModel(cfg)

        def inputs(b, g):
            ids = torch.from_numpy(g.integers(0, cfg.vocab_size, (b, 128), dtype=np.int64))
            mask = torch.ones(b, 128, dtype=torch.int64)
            mask[:, 96:] = torch.from_numpy(g.integers(0, 2, (b, 32), dtype=np.int64))
            return [ids, mask]
        return m.eval(), ["input_ids", "attention_mask"], inputs
    raise SystemExit("unknown case " + case)


class FirstOutput(torch.nn.Module):
    """BertModel returns a ModelOutput; the suite times last_hidden_state."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, *a):
        y = self.m(*a)
        return y[0] if isinstance(y, (tuple, list)) or hasattr(y, "last_hidden_state") else y


def export(case, out):
    m, names, make = build(case)
    m = FirstOutput(m) if case == "bert4" else m
    g = np.random.default_rng(1)
    ex = make(2, g)
    path = os.path.join(out, case + ".onnx")
    dyn = {n: {0: "batch"} for n in names}
    dyn["y"] = {0: "batch"}
    kw = dict(input_names=names, output_names=["y"], dynamic_axes=dyn, opset_version=17, do_constant_folding=True)
    with torch.no_grad():
        try:
            torch.onnx.export(m, tuple(ex), path, dynamo=False, **kw)
        except TypeError:
            torch.onnx.export(m, tuple(ex), path, **kw)
    for b in BATCHES:
        xs = make(b, np.random.default_rng(100 + b))
        for n, x in zip(names, xs):
            np.save(os.path.join(out, "%s_b%d_%s.npy" % (case, b, n)), x.numpy())
    with open(os.path.join(out, case + ".json"), "w") as f:
        json.dump({"inputs": names}, f)


def main():
    out = sys.argv[1]
    cases = CASES
    if "--cases" in sys.argv:
        cases = sys.argv[sys.argv.index("--cases") + 1].split(",")
    os.makedirs(out, exist_ok=True)
    for c in cases:
        export(c, out)
        print("exported", c, os.path.getsize(os.path.join(out, c + ".onnx")) // 1000, "kB", flush=True)


if __name__ == "__main__":
    main()
