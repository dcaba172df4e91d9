"""OUT/model.onnx: a small CNN head with a symbolic batch dimension, as
TensorFlow's exporter writes them (unk__N), and its input and ONNX
reference output for a batch of 3 in OUT/data (input_0.npy, output_0.npy;
the reference is numpy's)."""

import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out = sys.argv[1]
os.makedirs(os.path.join(out, "data"), exist_ok=True)
rng = np.random.default_rng(0)
w = rng.standard_normal((4, 8)).astype(np.float32)
b = rng.standard_normal((4,)).astype(np.float32)
nodes = [
    helper.make_node("Flatten", ["x"], ["f"], axis=1),
    helper.make_node("Gemm", ["f", "w", "b"], ["h"], transB=1),
    helper.make_node("Relu", ["h"], ["y"]),
]
graph = helper.make_graph(
    nodes, "head",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["unk__12", 2, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["unk__12", 4])],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
     os.path.join(out, "model.onnx"))
x = rng.standard_normal((3, 2, 4)).astype(np.float32)
np.save(os.path.join(out, "data", "input_0.npy"), x)
np.save(os.path.join(out, "data", "output_0.npy"),
        np.maximum(x.reshape(3, 8) @ w.T + b, 0).astype(np.float32))
np.save(os.path.join(out, "rank3.npy"), np.zeros((3, 8), np.float32))
np.save(os.path.join(out, "wrong.npy"), np.zeros((3, 2, 5), np.float32))
