#!/usr/bin/python3
"""Models for the int8 benchmarks (bench/cpu/quant_run.sh), with their inputs.

  quant_models.py OUTDIR [--size S]

convinteger_64c_256.onnx: one ConvInteger, 3x3 pad 1, 64 -> 64 channels at
  256x256, X u8 with a zero point, W s8 (symmetric, as ONNX Runtime's
  dynamic quantization stores weights), int32 out.
convinteger_u8u8_64c_256.onnx: the same with W u8 and a per-tensor W zero
  point (the u8 x u8 form: X flipped, a column-sum correction).
qseg_S.onnx: a small encoder-decoder segmentation net at SxS, dynamically
  quantized the way ONNX Runtime's quantize_dynamic writes a Conv: per conv
  DynamicQuantizeLinear(x) -> ConvInteger(xq, Wq, x_zero_point) ->
  Cast(float) -> Mul(x_scale * w_scale) -> Add(bias) -> Relu.  Convs:
  3->32 (S), 32->64 stride 2, 64->64 stride 2, 64->64 (S/4), nearest 2x up,
  64->32 (S/2), 2x up, 32->16 (S), 1x1 16->8 (S): about 20 GMAC at 1024.
fseg_S.onnx: the same net in f32 (Conv + Relu), for int8 against f32.
Weights are drawn with a fixed seed; inputs are random.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(2026)


def save(nodes, inputs, outputs, inits, path):
    g = helper.make_graph(nodes, os.path.basename(path), inputs, outputs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def convinteger(out, u8u8):
    c, hw = 64, 256
    w = RNG.integers(0, 256, size=(c, c, 3, 3)).astype(np.uint8) if u8u8 else \
        RNG.integers(-127, 128, size=(c, c, 3, 3)).astype(np.int8)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(118, np.uint8), "xz")]
    ins = ["x", "w", "xz"]
    if u8u8:
        inits.append(numpy_helper.from_array(np.array(131, np.uint8), "wz"))
        ins.append("wz")
    node = helper.make_node("ConvInteger", ins, ["y"], pads=[1, 1, 1, 1])
    name = "convinteger_u8u8_64c_256" if u8u8 else "convinteger_64c_256"
    save([node], [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, c, hw, hw])],
         [helper.make_tensor_value_info("y", TensorProto.INT32, None)], inits, os.path.join(out, name + ".onnx"))
    np.save(os.path.join(out, name + "_input.npy"), RNG.integers(0, 256, size=(1, c, hw, hw)).astype(np.uint8))


class Net:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, p):
        self.n += 1
        return "%s_%d" % (p, self.n)

    def init(self, p, arr):
        n = self.name(p)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def qconv(self, x, cin, cout, k, stride, relu=True):
        """ONNX Runtime's dynamic quantization of Conv(x, W, B) (+ Relu)."""
        w = RNG.normal(0, (2.0 / (cin * k * k)) ** 0.5, size=(cout, cin, k, k)).astype(np.float32)
        ws = np.float32(np.abs(w).max() / 127.0)
        wq = np.clip(np.rint(w / ws), -127, 127).astype(np.int8)
        b = RNG.normal(0, 0.1, size=cout).astype(np.float32)
        xq, xs, xz = self.name("xq"), self.name("xs"), self.name("xz")
        self.nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [xq, xs, xz]))
        y = self.name("yi")
        self.nodes.append(helper.make_node("ConvInteger", [xq, self.init("w", wq), xz], [y], pads=[k // 2] * 4,
                                           strides=[stride, stride]))
        yf, sc, ym, yb = self.name("yf"), self.name("sc"), self.name("ym"), self.name("yb")
        self.nodes.append(helper.make_node("Cast", [y], [yf], to=TensorProto.FLOAT))
        self.nodes.append(helper.make_node("Mul", [xs, self.init("ws", np.array(ws))], [sc]))
        self.nodes.append(helper.make_node("Mul", [yf, sc], [ym]))
        self.nodes.append(helper.make_node("Add", [ym, self.init("b", b.reshape(1, cout, 1, 1))], [yb]))
        if not relu:
            return yb
        r = self.name("relu")
        self.nodes.append(helper.make_node("Relu", [yb], [r]))
        return r

    def fconv(self, x, cin, cout, k, stride, relu=True):
        """The float Conv the quantized one stands for (same shapes)."""
        w = RNG.normal(0, (2.0 / (cin * k * k)) ** 0.5, size=(cout, cin, k, k)).astype(np.float32)
        b = RNG.normal(0, 0.1, size=cout).astype(np.float32)
        y = self.name("y")
        self.nodes.append(helper.make_node("Conv", [x, self.init("w", w), self.init("b", b)], [y], pads=[k // 2] * 4,
                                           strides=[stride, stride]))
        if not relu:
            return y
        r = self.name("relu")
        self.nodes.append(helper.make_node("Relu", [y], [r]))
        return r

    def up(self, x):
        y = self.name("up")
        self.nodes.append(helper.make_node("Resize", [x, "", self.init("scales", np.array([1, 1, 2, 2], np.float32))], [y],
                                           mode="nearest"))
        return y


def qseg(out, size, quantized=True):
    n = Net()
    conv = n.qconv if quantized else n.fconv
    x = "image"
    e1 = conv(x, 3, 32, 3, 1)
    e2 = conv(e1, 32, 64, 3, 2)
    e3 = conv(e2, 64, 64, 3, 2)
    m = conv(e3, 64, 64, 3, 1)
    d2 = conv(n.up(m), 64, 32, 3, 1)
    d1 = conv(n.up(d2), 32, 16, 3, 1)
    y = conv(d1, 16, 8, 1, 1, relu=False)
    n.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    name = ("qseg_%d" if quantized else "fseg_%d") % size
    save(n.nodes, [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, size, size])],
         [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)], n.inits, os.path.join(out, name + ".onnx"))
    np.save(os.path.join(out, name + "_input.npy"), RNG.uniform(-1, 1, size=(1, 3, size, size)).astype(np.float32))


def main():
    out = sys.argv[1]
    size = int(sys.argv[sys.argv.index("--size") + 1]) if "--size" in sys.argv else 1024
    os.makedirs(out, exist_ok=True)
    convinteger(out, False)
    convinteger(out, True)
    qseg(out, size)
    qseg(out, size, quantized=False)


if __name__ == "__main__":
    main()
