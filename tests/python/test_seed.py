"""The seed report's cases (and dynamic_mlp) through the Python package,
against PyTorch run here on fresh random inputs.

Each case's PyTorch module is rebuilt with the weights its ONNX file has
(scripts/models/seed.py seeds them; the rebuild is checked first against
the reference stored with the file), then fed inputs drawn now, and every
element of every output is compared, the session's fresh memory poisoned
by the sanitizer:
  f32:       |got - ref| <= 1e-5 + 1e-5 |ref|   (the seed harness's bar)
  f16, bf16: |got - ref| <= 1e-2 max|ref|        (relative to the output's scale)
"""
import json
import os

import numpy as np
import pytest
import torch

import strata

CASE_NAMES = ["linear_chunk_last_dim", "linear_chunk_first_dim", "unbind", "uneven_split_concat", "c2f",
              "cat_last_dim_read", "offset_view_output", "narrow_transposed", "nested_concat", "dynamic_mlp"]


def rebuild(name):
    """The module and input shapes scripts/models/seed.py exported for name
    (at its default --seed 0)."""
    import seed
    if name in seed.CASES:
        i = list(seed.CASES).index(name)
        cls, shapes, _ = seed.CASES[name]
        torch.manual_seed(i)
        gen = torch.Generator().manual_seed(i)
        model = cls().eval()
        with torch.no_grad():
            seed.randomize_bn(model, gen)
    else:
        i = list(seed.EXTRA).index(name)
        cls, shapes, _ = seed.EXTRA[name]
        torch.manual_seed(500 + i)
        model = cls().eval()
    return model, shapes


def torch_outputs(model, inputs):
    with torch.no_grad():
        out = model(*[torch.from_numpy(x) for x in inputs])
    return [t.numpy() for t in (out if isinstance(out, (tuple, list)) else (out,))]


def stored(models_dir, name):
    d = os.path.join(models_dir, "seed")
    if name == "dynamic_mlp":
        return [np.load(os.path.join(d, "dynamic_mlp_input_0.npy"))], \
            [np.load(os.path.join(d, "dynamic_mlp_y%d.npy" % k)) for k in range(2)]
    m = json.load(open(os.path.join(d, "manifest.json")))[name]
    return [np.load(os.path.join(d, f)) for f in m["inputs"]], \
        [np.load(os.path.join(d, m["ref_dir"], o + ".npy")) for o in m["outputs"]]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_against_pytorch(name, models_dir, root, rng):
    model, shapes = rebuild(name)
    ins, refs = stored(models_dir, name)
    for got, ref in zip(torch_outputs(model, ins), refs):
        assert np.array_equal(got, ref), "%s: the rebuilt PyTorch module is not the exported one" % name
    if name == "dynamic_mlp":   # its batch is symbolic: draw that too
        shapes = [(int(rng.integers(1, 10)),) + tuple(shapes[0][1:])]
    xs = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
    want = torch_outputs(model, xs)
    path = os.path.join(models_dir, "seed", name + ".onnx")
    for precision in ("f32", "f16", "bf16"):
        s = strata.Session(path, precision=precision, sanitize=True)
        got = s.run(None, {i.name: x for i, x in zip(s.inputs, xs)})
        assert len(got) == len(want)
        for o, g, w in zip(s.outputs, got, want):
            assert g.shape == w.shape, (o.name, g.shape, w.shape)
            err = np.abs(g.astype(np.float64) - w)
            if precision == "f32":
                bound = 1e-5 + 1e-5 * np.abs(w)
            else:
                bound = 1e-2 * np.abs(w).max()
            print("%s %s %s: %d elements, max abs error %.3g" % (name, precision, o.name, g.size, err.max()))
            assert np.all(err <= bound), "%s %s %s: %d elements out of tolerance, max abs error %.3g" % (
                name, precision, o.name, int(np.sum(~(err <= bound))), err.max())
