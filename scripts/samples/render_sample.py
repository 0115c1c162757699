#!/usr/bin/python3
"""Renders the sample pictures strata's vision tests read, so the project
needs no downloaded images.

  ocr_sample.png    three lines of printed English, black DejaVu Sans at
                    40 px on white, the lines tilted by -1.5, +1.2 and -0.7
                    degrees so the text boxes are not axis-aligned; ocr_sample.txt holds the lines, one each,
                    which `strata ocr` must read back exactly
  ocr_sample.jpg    the same picture as a JPEG (quality 92)
  ocr_sample_180.png  the picture upside down (the orientation classifier
                    must turn every line back; the lines then read bottom
                    line first, as ocr_sample_180.txt has them)
  ocr_sample_90.png the picture turned a quarter counter-clockwise (the
                    lines stand upright, read left to right: ocr_sample_90.txt)
  scene.png         a 640x480 colour scene (sky, ground, a few shapes and a
                    caption), something for `strata detect` to look at

Usage: /usr/bin/python3 scripts/samples/render_sample.py --out DIR
(Debian's python3 with python3-pil; the font is fonts-dejavu-core's.)
"""
import argparse
import os

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
LINES = ["strata runs ONNX models", "on CPUs and GPUs", "Hello, world 2026"]
TILTS = [-1.5, 1.2, -0.7]  # degrees, counter-clockwise


def render_line(text, font, angle):
    """One line on its own white canvas, turned by angle degrees."""
    left, top, right, bottom = font.getbbox(text)
    pad = 12
    im = Image.new("L", (right - left + 2 * pad, bottom - top + 2 * pad), 255)
    ImageDraw.Draw(im).text((pad - left, pad - top), text, font=font, fill=0)
    return im.rotate(angle, resample=Image.BICUBIC, expand=True, fillcolor=255)


def ocr_sample(out):
    font = ImageFont.truetype(FONT, 40)
    lines = [render_line(t, font, a) for t, a in zip(LINES, TILTS)]
    margin, gap = 48, 36
    w = max(l.width for l in lines) + 2 * margin
    h = sum(l.height for l in lines) + gap * (len(lines) - 1) + 2 * margin
    page = Image.new("L", (w, h), 255)
    y = margin
    for l in lines:
        page.paste(l, (margin, y))
        y += l.height + gap
    page = page.convert("RGB")
    page.save(os.path.join(out, "ocr_sample.png"))
    page.save(os.path.join(out, "ocr_sample.jpg"), quality=92)
    page.rotate(180).save(os.path.join(out, "ocr_sample_180.png"))
    page.rotate(90, expand=True).save(os.path.join(out, "ocr_sample_90.png"))
    for name, text in (("ocr_sample", LINES), ("ocr_sample_180", LINES[::-1]), ("ocr_sample_90", LINES)):
        with open(os.path.join(out, name + ".txt"), "w") as f:
            f.write("\n".join(text) + "\n")
    print("ocr_sample.png", page.size)


def scene(out):
    im = Image.new("RGB", (640, 480), (135, 190, 235))
    d = ImageDraw.Draw(im)
    d.rectangle((0, 330, 640, 480), fill=(90, 150, 70))
    d.ellipse((500, 40, 580, 120), fill=(250, 220, 80))
    d.rectangle((80, 220, 260, 340), fill=(180, 60, 50))          # a house
    d.polygon([(70, 220), (170, 150), (270, 220)], fill=(110, 60, 40))
    d.rectangle((150, 270, 190, 340), fill=(70, 45, 30))
    d.rounded_rectangle((330, 280, 520, 350), radius=18, fill=(40, 70, 160))  # a car
    for cx in (370, 480):
        d.ellipse((cx - 22, 330, cx + 22, 374), fill=(20, 20, 20))
    d.text((20, 440), "strata detect", font=ImageFont.truetype(FONT, 24), fill=(255, 255, 255))
    im.save(os.path.join(out, "scene.png"))
    print("scene.png", im.size)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    ocr_sample(args.out)
    scene(args.out)


if __name__ == "__main__":
    main()
