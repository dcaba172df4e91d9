"""OUT/<name>/model.onnx: opset-9 models whose Softmax / LogSoftmax input
has a shape ONNX's shape inference cannot find (a Reshape to Shape(x)), so
ONNX's version converter refuses them, with their input and the opset-9
semantics computed by numpy (the input flattened to 2-D at `axis`) in
OUT/<name>/data."""

import os
import sys

import numpy as np
from onnx import TensorProto, helper, save


def legacy(x, axis, log):
    n = int(np.prod(x.shape[:axis]))
    flat = x.reshape(n, -1).astype(np.float64)
    shifted = flat - flat.max(axis=1, keepdims=True)
    s = np.exp(shifted).sum(axis=1, keepdims=True)
    out = shifted - np.log(s) if log else np.exp(shifted) / s
    return out.reshape(x.shape).astype(np.float32)


rng = np.random.default_rng(0)
for name, op, axis, shape in [("softmax_2d", "Softmax", 1, (3, 10)),
                              ("softmax_3d_axis1", "Softmax", 1, (2, 3, 4)),
                              ("logsoftmax_3d_axis2", "LogSoftmax", 2, (2, 3, 4))]:
    d = os.path.join(sys.argv[1], name)
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    dims = ["n"] + list(shape[1:])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Reshape", ["x", "s"], ["r"]),
             helper.make_node(op, ["r"], ["y"], axis=axis)]
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]),
         os.path.join(d, "model.onnx"))
    x = rng.standard_normal(shape).astype(np.float32) * 3
    np.save(os.path.join(d, "data", "input_0.npy"), x)
    np.save(os.path.join(d, "data", "output_0.npy"), legacy(x, axis, op == "LogSoftmax"))
