#!/usr/bin/python3
"""Transformer test models exported from PyTorch, with ONNX Runtime's
outputs as the reference (issue 15, item 5).

  encoder   token and position embeddings, 4 nn.TransformerEncoderLayer
            (d=256, 4 heads, feed-forward 1024, GELU, post-norm, batch
            first) and a final LayerNorm; inputs: token ids [B, T] (int64)
            and a padding mask [B, T] (bool, true = padding), the way
            nn.TransformerEncoder takes src_key_padding_mask
  decoder   2 GPT-style pre-norm blocks written out by hand (one fused QKV
            projection split in three, heads by view + transpose, scores
            q k^T / sqrt(d_head) with a causal mask built from the dynamic
            sequence length, softmax, tanh-approximated GELU), d=192, 6
            heads; input: hidden states [B, T, 192] (float32)

Batch and sequence length are dynamic in both.  The reference is ONNX
Runtime on the exported graph, not PyTorch: in eval mode PyTorch's
encoder fast path returns zeros at padded positions, which the exported
graph does not compute (padded rows attend over the unpadded keys like
any other row).

Writes into the output directory, per case and input set k:
  <case>.onnx                  the model (opset 17)
  <case>_<k>_input_<i>.npy     the inputs of set k (seeded; the padding
                               mask pads a random tail of each sequence
                               but the first)
  <case>_<k>_ref/<name>.npy    ONNX Runtime's outputs
and manifest.json: per case, its input sets with their shapes.

Usage: /usr/bin/python3 scripts/models/transformer.py --out DIR [--seed N]
"""
import argparse
import json
import math
import os
import subprocess

import numpy as np
import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = 1000
MAX_LEN = 1024


class Encoder(nn.Module):
    def __init__(self, d=256, heads=4, ff=1024, layers=4):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(MAX_LEN, d)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation="gelu", batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)

    def forward(self, ids, pad):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        h = self.tok(ids) + self.pos(pos)
        return self.norm(self.enc(h, src_key_padding_mask=pad))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x):
        B, T, C = x.shape
        dh = C // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.heads, dh).transpose(1, 2)
        k = k.view(B, T, self.heads, dh).transpose(1, 2)
        v = v.view(B, T, self.heads, dh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        i = torch.arange(T, device=x.device)
        causal = i.unsqueeze(0) > i.unsqueeze(1)  # [T, T]: key after query
        att = att.masked_fill(causal, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


class Decoder(nn.Module):
    def __init__(self, d=192, heads=6, layers=2):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.norm(x)


def encoder_inputs(rng, B, T):
    ids = rng.integers(0, VOCAB, size=(B, T)).astype(np.int64)
    pad = np.zeros((B, T), dtype=bool)
    for b in range(1, B):
        keep = int(rng.integers(T // 3, T))  # padding on a random tail
        pad[b, keep:] = True
    return [ids, pad]


def decoder_inputs(rng, B, T):
    return [rng.standard_normal((B, T, 192)).astype(np.float32)]


# case -> (module, input names, dynamic axes, export shapes, input sets (B, T))
CASES = {
    "encoder": (Encoder, ["ids", "pad"], {"ids": {0: "batch", 1: "seq"}, "pad": {0: "batch", 1: "seq"},
                                          "y": {0: "batch", 1: "seq"}},
                encoder_inputs, [(2, 77), (1, 512), (3, 19)]),
    "decoder": (Decoder, ["x"], {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}},
                decoder_inputs, [(1, 64), (2, 37), (1, 200)]),
}


def init_weights(model, gen):
    """Weights of a trained model's scale: normal, std 0.02 for linear
    layers (biases too, so none is zero), 0.1 for embeddings, LayerNorm
    gains 1 +- 0.1 and shifts +- 0.1."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(1.0 + 0.1 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
            elif isinstance(m, nn.Embedding):
                m.weight.copy_(0.1 * torch.randn(m.weight.shape, generator=gen))
            elif isinstance(m, (nn.Linear, nn.MultiheadAttention)):
                for p in m.parameters(recurse=False):
                    p.copy_(0.02 * torch.randn(p.shape, generator=gen))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=15)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest = {}
    for ci, (name, (cls, in_names, dyn, make_inputs, sets)) in enumerate(CASES.items()):
        gen = torch.Generator().manual_seed(args.seed + ci)
        model = cls().eval()
        init_weights(model, gen)
        rng = np.random.default_rng(args.seed + ci)
        example = [torch.from_numpy(a) for a in make_inputs(rng, *sets[0])]
        path = os.path.join(args.out, name + ".onnx")
        torch.onnx.export(model, tuple(example), path, opset_version=17, input_names=in_names, output_names=["y"],
                          dynamic_axes=dyn, do_constant_folding=True)
        manifest[name] = []
        for k, (B, T) in enumerate(sets):
            arrays = make_inputs(rng, B, T)
            files = []
            for i, a in enumerate(arrays):
                f = os.path.join(args.out, "%s_%d_input_%d.npy" % (name, k, i))
                np.save(f, a)
                files.append(os.path.basename(f))
            ref = os.path.join(args.out, "%s_%d_ref" % (name, k))
            os.makedirs(ref, exist_ok=True)
            subprocess.run(["node", os.path.join(ROOT, "scripts", "ort", "run.js"), path, ref] +
                           ["%s=%s" % (n, os.path.join(args.out, f)) for n, f in zip(in_names, files)], check=True)
            y = np.load(os.path.join(ref, "y.npy"))
            # the graph's own semantics, checked against PyTorch on the
            # rows the fast path leaves alone (unpadded positions)
            with torch.no_grad():
                t = model(*[torch.from_numpy(a) for a in arrays]).numpy()
            live = ~arrays[1] if name == "encoder" else np.ones(y.shape[:2], dtype=bool)
            err = float(np.abs(t[live] - y[live]).max())
            print(name, k, (B, T), "ORT vs PyTorch on unpadded rows: max |d| %.3g (max |y| %.3g)" % (err, np.abs(y).max()))
            assert err < 1e-3 * max(1.0, float(np.abs(y).max())), "ONNX Runtime and PyTorch disagree"
            manifest[name].append({"set": k, "batch": B, "seq": T, "inputs": files})
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
