"""Writes a stack of layers that pass two values to the next layer (a
two-stream network: h' = relu(h W) + g, g' = tanh(g V)), so that a
pipeline boundary sends two messages per micro-batch each way.

usage: two_stream.py OUT.onnx [--layers N] [--batch B] [--width D]"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--layers", type=int, default=4)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--width", type=int, default=32)
a = p.parse_args()
rng = np.random.default_rng(0)
d = a.width
inits, nodes = [], []


def weight(name):
    inits.append(numpy_helper.from_array(
        (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32), name))
    return name


nodes.append(helper.make_node("MatMul", ["x", weight("w_in")], ["h0"], name="in/MatMul"))
nodes.append(helper.make_node("Sigmoid", ["h0"], ["g0"], name="in/Sigmoid"))
h, g = "h0", "g0"
for i in range(a.layers):
    n = f"/{i}"
    nodes += [
        helper.make_node("MatMul", [h, weight(f"w{i}")], [f"hm{i}"], name=n + "/MatMul"),
        helper.make_node("Relu", [f"hm{i}"], [f"hr{i}"], name=n + "/Relu"),
        helper.make_node("Add", [f"hr{i}", g], [f"h{i + 1}"], name=n + "/Add"),
        helper.make_node("MatMul", [g, weight(f"v{i}")], [f"gm{i}"], name=n + "/MatMul_1"),
        helper.make_node("Tanh", [f"gm{i}"], [f"g{i + 1}"], name=n + "/Tanh"),
    ]
    h, g = f"h{i + 1}", f"g{i + 1}"
nodes.append(helper.make_node("Add", [h, g], ["y"], name="out/Add"))
graph = helper.make_graph(
    nodes, "two_stream",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [a.batch, d])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [a.batch, d])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, a.out)
