#!/usr/bin/env python3
"""strings_test.py — string tensors through `strata run` and `strata check`
(.npy string arrays, src/io/npy_str.c), against ONNX Runtime.

    strings_test.py STRATA ROOT

Models with string inputs and outputs are built with onnx's helper:
StringNormalizer (case change, stop words, Unicode), TfIdfVectorizer on
strings (n-grams, TF-IDF weights), a Cast from strings to float and one to
strings, and a model with a string and a float input together.  Inputs are
drawn at random from a vocabulary (with non-ASCII words) and written by
NumPy as '<U', '|S' (ASCII vocabularies only) and object arrays of str
(np.save's pickle), also in Fortran order.  ONNX Runtime (scripts/ort/run.js,
'<U' inputs) gives the reference outputs.  For every input form:
`strata run` must write outputs NumPy loads as equal to ORT's (strings
exactly, floats within 1e-6), and `strata check --ref-dir` against ORT's
files must pass.  Then the one-line refusals: an object array holding an
int or None, a pickle that is not an array, a string file for a float input,
a float file for a string input, a string input without -i.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper

STRATA, ROOT = sys.argv[1], sys.argv[2]
RUN_JS = os.path.join(ROOT, "scripts/ort/run.js")
rng = np.random.default_rng(28)
fails = []

VOCAB = ["the", "Cat", "sat", "ON", "mat", "and", "dog", "Straße", "ÉCOLE", "naïve", "日本", "a", "", "zebra"]
# ONNX Runtime builds the attribute's C++ locale, and en_US.UTF-8 (the
# default) is not installed on a bare Debian; C.UTF-8 always is
LOCALE = "C.UTF-8"


def model(path, nodes, inputs, outputs, opset=17, ml=False):
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "strings", [vi(n, t, s) for n, t, s in inputs], [vi(n, t, None) for n, t in outputs])
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("ai.onnx.ml", 3)] if ml else [])
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 8

    onnx.save(m, path)


def words(shape, vocab=VOCAB):
    return np.array(rng.choice(vocab, size=shape), dtype=str).reshape(shape)


def save_forms(d, name, a):
    """a (a '<U' array) as every form NumPy writes strings in."""
    forms = {"U": a, "O": a.astype(object)}
    if all(s.isascii() for s in a.ravel()):
        forms["S"] = a.astype(bytes)
    if a.ndim >= 2:
        forms["UF"] = np.asfortranarray(a)
        forms["OF"] = np.asfortranarray(a.astype(object))
    paths = {}
    for k, v in forms.items():
        p = os.path.join(d, f"{name}_{k}.npy")
        np.save(p, v, allow_pickle=True)
        paths[k] = p
    return paths


def strata(*args):
    return subprocess.run([STRATA, *args], capture_output=True, text=True, timeout=120)


def check_case(name, model_path, inputs, d):
    """inputs: input name -> '<U' array (strings) or numeric array."""
    feeds, forms = {}, {}
    for n, a in inputs.items():
        if a.dtype.kind == "U":
            forms[n] = save_forms(d, f"{name}_{n}", a)
            feeds[n] = forms[n]["U"]
        else:
            p = os.path.join(d, f"{name}_{n}.npy")
            np.save(p, a)
            feeds[n] = p
            forms[n] = {"U": p}
    ref = os.path.join(d, f"{name}_ref")
    os.makedirs(ref)
    r = subprocess.run(["node", RUN_JS, model_path, ref, *[f"{n}={p}" for n, p in feeds.items()]], capture_output=True,
                       text=True, timeout=120)
    if r.returncode:
        fails.append(f"{name}: ORT failed: {r.stderr.strip()}")
        return
    all_forms = sorted({k for f in forms.values() for k in f})
    for form in all_forms:
        args = []
        for n, f in forms.items():
            args += ["-i", f"{n}={f.get(form, f['U'])}"]
        out = os.path.join(d, f"{name}_{form}_out")
        os.makedirs(out)
        r = strata("run", model_path, *args, "-o", out, "-q")
        if r.returncode:
            fails.append(f"{name} [{form}]: strata run failed: {r.stderr.strip()}")
            continue
        for fn in sorted(os.listdir(ref)):
            want = np.load(os.path.join(ref, fn))
            got = np.load(os.path.join(out, fn))  # no allow_pickle: strata writes '<U', never objects
            if want.dtype.kind == "U":
                ok = got.dtype.kind == "U" and got.shape == want.shape and (got == want).all()
            else:
                ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-6)
            if not ok:
                fails.append(f"{name} [{form}] {fn}: strata {got.dtype}{got.shape} {got.ravel()[:6]} "
                             f"vs ORT {want.dtype}{want.shape} {want.ravel()[:6]}")
        r = strata("check", model_path, *args, "--ref-dir", ref, "-q")
        if r.returncode or "PASS" not in r.stdout.splitlines()[-1]:
            fails.append(f"{name} [{form}]: strata check: {r.stdout.strip()} {r.stderr.strip()}")
    print(f"{name}: {', '.join(all_forms)} against ORT checked")


def refusal(what, args, want):
    r = strata(*args)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    if r.returncode != 1 or len(lines) != 1 or not lines[0].startswith("strata: ") or want not in lines[0]:
        fails.append(f"{what}: exit {r.returncode}, stderr {r.stderr.strip()!r} (wanted one line with {want!r})")
    else:
        print(f"{what}: {lines[0]}")


def main():
    with tempfile.TemporaryDirectory() as d:
        # StringNormalizer: upper case, stop words dropped (case-insensitive), a [1, N] input
        p = os.path.join(d, "norm.onnx")
        model(p, [helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER", is_case_sensitive=0, locale=LOCALE,
                                   stopwords=["the", "and"])], [("x", TP.STRING, [1, 12])], [("y", TP.STRING)])
        check_case("string_normalizer", p, {"x": words((1, 12))}, d)
        # StringNormalizer, lower case, 1-D
        p = os.path.join(d, "norm_lower.onnx")
        model(p, [helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="LOWER", locale=LOCALE)], [("x", TP.STRING, [9])],
              [("y", TP.STRING)])
        check_case("string_normalizer_lower", p, {"x": words(9)}, d)
        # TfIdfVectorizer on strings: unigrams and bigrams, TFIDF weights, [2, 10]
        pool = ["the", "Cat", "sat", "ON", "mat", "dog"]
        p = os.path.join(d, "tfidf.onnx")
        model(p, [helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TFIDF", min_gram_length=1, max_gram_length=2,
                                   max_skip_count=1, ngram_counts=[0, 4], ngram_indexes=list(range(7)),
                                   pool_strings=["the", "Cat", "sat", "mat", "the", "Cat", "Cat", "sat", "sat", "ON"],
                                   weights=[0.5, 1.25, 2.0, 0.75, 3.0, 1.5, 0.25])],
              [("x", TP.STRING, [2, 10])], [("y", TP.FLOAT)], opset=9)
        check_case("tfidf", p, {"x": words((2, 10), pool)}, d)
        # Cast from strings to float, and floats to strings, with a float input beside
        p = os.path.join(d, "cast.onnx")
        model(p, [helper.make_node("Cast", ["s"], ["f"], to=TP.FLOAT), helper.make_node("Add", ["f", "z"], ["sum"]),
                  helper.make_node("Cast", ["z"], ["zs"], to=TP.STRING)],
              [("s", TP.STRING, [3, 4]), ("z", TP.FLOAT, [3, 4])], [("sum", TP.FLOAT), ("zs", TP.STRING)])
        nums = np.array([f"{v:.6g}" for v in rng.uniform(-50, 50, 12)]).reshape(3, 4)
        check_case("cast", p, {"s": nums, "z": (rng.integers(-40, 40, (3, 4)) / 8).astype(np.float32)}, d)

        # refusals, each one line
        norm = os.path.join(d, "norm_lower.onnx")
        bad = os.path.join(d, "bad_int.npy")
        np.save(bad, np.array(["a", 3, "b", "c", "d", "e", "f", "g", "h"], dtype=object), allow_pickle=True)
        refusal("object array with an int", ["run", norm, "-i", bad, "-o", d], "element 1 is an int, not a str")
        np.save(bad, np.array(["a", None, "b", "c", "d", "e", "f", "g", "h"], dtype=object), allow_pickle=True)
        refusal("object array with None", ["run", norm, "-i", bad, "-o", d], "element 1 is None, not a str")
        with open(bad, "wb") as f:  # a pickle of a dict where the array should be
            import pickle
            hdr = "{'descr': '|O', 'fortran_order': False, 'shape': (9,), }"
            hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
            f.write(b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode() + pickle.dumps({"a": 1}, 3))
        refusal("a pickled dict", ["run", norm, "-i", bad, "-o", d], "outside what strata reads")
        np.save(bad, words((3, 4)))
        refusal("strings for a float input", ["run", os.path.join(d, "cast.onnx"), "-i", f"s={bad}", "-i", f"z={bad}",
                                              "-o", d], "the file holds strings, but input 'z' is float32")
        np.save(bad, np.zeros(9, np.float32))
        refusal("floats for a string input", ["run", norm, "-i", bad, "-o", d], "holds strings, but the file holds float32")
        refusal("a string input without -i", ["run", norm, "-o", d], "input 'x' holds strings; give it with -i")
    for f in fails:
        print("FAIL:", f)
    print("PASS" if not fails else f"FAIL: {len(fails)}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
