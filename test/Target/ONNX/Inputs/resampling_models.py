#!/usr/bin/env python3
"""Writes the Resize / Upsample / ConvTranspose models of resampling.test,
one directory each with model.onnx and input_<i>.npy; their output_0.npy
came from ONNX Runtime (scripts/ort-reference.js), not from this script.

    resampling_models.py DIR
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
rng = np.random.default_rng(3)


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
                                        for n, a in inputs],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT,
                                                         [f"{o}{i}" for i in range(inputs[0][1].ndim)])
                           for o in outputs],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (_, a) in enumerate(inputs):
        np.save(os.path.join(d, f"input_{i}.npy"), a)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


x = f32(1, 2, 3, 5)
# Resize with scales (opset 13: X, roi, scales): every coordinate mode with
# its usual rounding, up and down.
for transform, rounding, scales in [
        ("asymmetric", "floor", [1, 1, 2, 2]),
        ("half_pixel", "round_prefer_floor", [1, 1, 2.5, 1.6]),
        ("pytorch_half_pixel", "round_prefer_ceil", [1, 1, 0.67, 2]),
        ("align_corners", "round_prefer_floor", [1, 1, 3, 0.6]),
        ("tf_half_pixel_for_nn", "ceil", [1, 1, 1.5, 1.5])]:
    save(f"resize_{transform}", [
        helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                         coordinate_transformation_mode=transform, nearest_mode=rounding)],
        [("x", x)], ["y"], [("scales", np.array(scales, np.float32))])
# Resize with sizes, and opset-9 Upsample (PaddleOCR, older exporters).
save("resize_sizes", [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest")],
     [("x", x)], ["y"], [("sizes", np.array([1, 2, 7, 4], np.int64))])
save("upsample_opset9", [helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")],
     [("x", x)], ["y"], [("scales", np.array([1, 1, 2, 3], np.float32))], opset=9)

# ConvTranspose: PP-OCR's 2x2 stride-2 upsampling, then strides with
# overlap, pads (also asymmetric), output_padding, dilation, 1-D and bias.
for name, xs, ws, attrs, bias in [
        ("convt_k2s2", (1, 4, 3, 5), (4, 3, 2, 2), dict(strides=[2, 2]), False),
        ("convt_overlap", (2, 3, 4, 4), (3, 2, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1]), True),
        ("convt_outpad", (1, 2, 5, 4), (2, 3, 3, 2), dict(strides=[3, 2], pads=[0, 1, 2, 0],
                                                          output_padding=[1, 1]), True),
        ("convt_dilated", (1, 2, 4, 4), (2, 2, 3, 3), dict(dilations=[2, 1], pads=[2, 0, 1, 0]), False),
        ("convt_1d", (2, 3, 6), (3, 4, 4), dict(strides=[3], pads=[1, 2]), True)]:
    inits = [("w", f32(*ws))]
    ins = ["x", "w"]
    if bias:
        inits.append(("b", f32(ws[1])))
        ins.append("b")
    save(name, [helper.make_node("ConvTranspose", ins, ["y"], **attrs)],
         [("x", f32(*xs))], ["y"], inits)
