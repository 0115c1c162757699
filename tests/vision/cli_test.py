#!/usr/bin/python3
"""End-to-end tests of `strata detect` and `strata ocr` on the pictures
scripts/samples/render_sample.py renders.

  cli_test.py STRATA SAMPLES ocr
      `strata ocr` reads ocr_sample.png (and its JPEG copy) back exactly as
      ocr_sample.txt has it, line for line; --json gives the same lines with
      four-corner boxes inside the picture; -o writes a PNG of the
      picture's size; the picture turned upside down and a quarter reads
      back as ocr_sample_180.txt and ocr_sample_90.txt have it
  cli_test.py STRATA SAMPLES detect MODEL.onnx
      `strata detect` runs the model on scene.png and on the JPEG, exits 0,
      writes the PNG (-o), prints seven fields a line, --json parses and
      agrees with the text output, boxes lie inside the picture
  cli_test.py STRATA SAMPLES errors MODEL.onnx
      a missing file, a text file, a truncated PNG, an empty file: for both
      commands exactly one line on stderr starting "strata: ", exit status 1,
      nothing on stdout, no output file
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def png_size(path):
    """(width, height) from a PNG's IHDR, or None when it is not a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def ocr(strata, samples):
    want = open(os.path.join(samples, "ocr_sample.txt")).read().splitlines()
    size = png_size(os.path.join(samples, "ocr_sample.png"))
    with tempfile.TemporaryDirectory() as tmp:
        # turned pictures: the quarter turn of tall strips and the
        # orientation classifier must bring every line upright
        for name in ("ocr_sample_180", "ocr_sample_90"):
            img = os.path.join(samples, name + ".png")
            want_t = open(os.path.join(samples, name + ".txt")).read().splitlines()
            rc, so, se = run([strata, "ocr", img])
            print(f"ocr {name}.png:\n" + so, end="")
            got = [l.split("\t", 1)[1] if "\t" in l else l for l in so.splitlines()]
            check(rc == 0 and got == want_t, f"ocr {name}: exit {rc}, read {got}, want {want_t}: {se.strip()}")
        for name in ("ocr_sample.png", "ocr_sample.jpg"):
            img = os.path.join(samples, name)
            out = os.path.join(tmp, name + ".out.png")
            rc, so, se = run([strata, "ocr", img, "-o", out])
            check(rc == 0, f"ocr {name}: exit {rc}: {se.strip()}")
            got = [l.split("\t", 1)[1] if "\t" in l else l for l in so.splitlines()]
            print(f"ocr {name}:\n" + so, end="")
            check(got == want, f"ocr {name}: read {got}, want {want}")
            for l in so.splitlines():
                s = float(l.split("\t", 1)[0])
                check(0.5 <= s <= 1.0, f"ocr {name}: score {s} out of [0.5, 1]")
            check(os.path.exists(out) and png_size(out) == size, f"ocr {name}: -o wrote no PNG of size {size}")
            rc, so, se = run([strata, "ocr", img, "--json"])
            check(rc == 0, f"ocr --json {name}: exit {rc}: {se.strip()}")
            try:
                res = json.loads(so)
            except ValueError as e:
                check(False, f"ocr --json {name}: not JSON ({e}): {so!r}")
                continue
            check([r["text"] for r in res] == want, f"ocr --json {name}: texts {[r['text'] for r in res]}")
            for r in res:
                box = r["box"]
                check(len(box) == 4 and all(0 <= x <= size[0] and 0 <= y <= size[1] for x, y in box),
                      f"ocr --json {name}: box {box} outside the {size} picture")
        # the caption of the colour scene: small white text on green
        rc, so, se = run([strata, "ocr", os.path.join(samples, "scene.png")])
        got = [l.split("\t", 1)[1] for l in so.splitlines()]
        check(rc == 0 and got == ["strata detect"], f"ocr scene.png: exit {rc}, read {got}")
        # the classifier is optional: without it the upright sample reads the same
        rc, so, se = run([strata, "ocr", os.path.join(samples, "ocr_sample.png"), "--no-cls"])
        got = [l.split("\t", 1)[1] for l in so.splitlines()]
        check(rc == 0 and got == want, f"ocr --no-cls: exit {rc}, read {got}")


def detect(strata, samples, model):
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("scene.png", "ocr_sample.jpg"):
            img = os.path.join(samples, name)
            size = png_size(os.path.join(samples, name.replace(".jpg", ".png")))
            out = os.path.join(tmp, "det.png")
            rc, so, se = run([strata, "detect", model, img, "-o", out, "--conf", "0.25"])
            check(rc == 0, f"detect {name}: exit {rc}: {se.strip()}")
            check(os.path.exists(out) and png_size(out) == size, f"detect {name}: -o wrote no PNG of size {size}")
            lines = so.splitlines()
            print(f"detect {os.path.basename(model)} {name}: {len(lines)} boxes; first: {lines[:3]}")
            check(len(lines) <= 300, f"detect {name}: {len(lines)} boxes, more than 300")
            text_boxes = []
            for l in lines:
                f = l.split()
                check(len(f) == 7, f"detect {name}: line {l!r} has {len(f)} fields, not 7")
                if len(f) != 7:
                    continue
                cls, score, box = int(f[0]), float(f[2]), [float(v) for v in f[3:]]
                check(0.25 < score <= 1, f"detect {name}: score {score}")
                check(0 <= box[0] <= box[2] <= size[0] and 0 <= box[1] <= box[3] <= size[1], f"detect {name}: box {box}")
                text_boxes.append((cls, round(score, 4), box))
            rc, so, se = run([strata, "detect", model, img, "--json"])
            check(rc == 0, f"detect --json {name}: exit {rc}: {se.strip()}")
            try:
                res = json.loads(so)
            except ValueError as e:
                check(False, f"detect --json {name}: not JSON ({e})")
                continue
            check(isinstance(res, list) and len(res) == len(text_boxes), f"detect --json {name}: {len(res)} boxes vs {len(text_boxes)}")
            for r, t in zip(res, text_boxes):
                check(r["class"] == t[0] and abs(r["score"] - t[1]) < 1e-4 and
                      all(abs(a - b) < 0.06 for a, b in zip(r["box"], t[2])), f"detect --json {name}: {r} vs {t}")
                check(isinstance(r["name"], str), f"detect --json {name}: 80 classes, but no COCO name in {r}")
        # a wrong --size is refused; a fixed-size run at 320 works too
        rc, so, se = run([strata, "detect", model, os.path.join(samples, "scene.png"), "--size", "100"])
        check(rc == 1 and se.startswith("strata: ") and "--size" in se, f"detect --size 100: exit {rc}, {se!r}")
        rc, so, se = run([strata, "detect", model, os.path.join(samples, "scene.png"), "--size", "320", "--json"])
        check(rc == 0 and isinstance(json.loads(so or "null"), list), f"detect --size 320: exit {rc}, {se!r}")


def errors(strata, samples, model):
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "notes.png")
        with open(text, "w") as f:
            f.write("not a picture\n" * 10)
        trunc = os.path.join(tmp, "cut.png")
        data = open(os.path.join(samples, "ocr_sample.png"), "rb").read()
        with open(trunc, "wb") as f:
            f.write(data[: len(data) // 2])
        empty = os.path.join(tmp, "empty.jpg")
        open(empty, "wb").close()
        cases = {"missing": os.path.join(tmp, "nope.png"), "text": text, "truncated": trunc, "empty": empty,
                 "directory": tmp}
        for what, path in cases.items():
            for cmd in (["detect", model, path], ["ocr", path]):
                out = os.path.join(tmp, "out.png")
                rc, so, se = run([strata] + cmd + ["-o", out])
                lines = se.splitlines()
                check(rc == 1, f"{cmd[0]} {what}: exit {rc}, want 1")
                check(len(lines) == 1 and lines[0].startswith("strata: ") and path in lines[0],
                      f"{cmd[0]} {what}: stderr {se!r}, want one 'strata: ' line naming the file")
                check(so == "", f"{cmd[0]} {what}: printed {so!r}")
                check(not os.path.exists(out), f"{cmd[0]} {what}: left {out}")
                print(f"{cmd[0]} {what}: {se.strip()}")
        # a model that is not a detector: a clear message, no file
        out = os.path.join(tmp, "out.png")
        rc, so, se = run([strata, "detect", os.path.join(samples, "ocr_sample.png"), os.path.join(samples, "scene.png"), "-o", out])
        check(rc == 1 and se.startswith("strata: ") and not os.path.exists(out), f"detect with a PNG as model: exit {rc}, {se!r}")
        # missing arguments
        rc, so, se = run([strata, "detect", model])
        check(rc == 1 and se.startswith("strata: "), f"detect without an image: exit {rc}, {se!r}")
        rc, so, se = run([strata, "ocr"])
        check(rc == 1 and se.startswith("strata: "), f"ocr without an image: exit {rc}, {se!r}")
        rc, so, se = run([strata, "ocr", os.path.join(samples, "ocr_sample.png"), "--det", os.path.join(tmp, "none.onnx")])
        check(rc == 1 and se.startswith("strata: ") and "none.onnx" in se, f"ocr --det missing: exit {rc}, {se!r}")


def main():
    strata, samples, what = sys.argv[1], sys.argv[2], sys.argv[3]
    if what == "ocr":
        ocr(strata, samples)
    elif what == "detect":
        detect(strata, samples, sys.argv[4])
    elif what == "errors":
        errors(strata, samples, sys.argv[4])
    else:
        sys.exit(f"unknown test {what}")
    print("FAILED" if failures else "OK", f"({failures} failures)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
