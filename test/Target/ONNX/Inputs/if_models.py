#!/usr/bin/env python3
"""OUT/<name>/model.onnx: models with an ONNX If whose branches read the
enclosing graph's x (then: x * 2 - 1; else: relu(x) + w, w an initializer
of the else branch), with inputs and the outputs numpy computes in
OUT/<name>/data[_false]:

  if_data:   cond a graph input (known only when the model runs), both
             branches [3, 4]: data (cond true) and data_false (cond false)
  if_known:  cond an initializer (false): only the else branch is imported
  if_shapes: cond a graph input, branches of shapes [3, 4] and [12]: refused
"""
import os
import sys

import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper, save

F = TensorProto.FLOAT
B = TensorProto.BOOL


def branches(else_shape=(3, 4)):
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    then = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["t0"]),
         helper.make_node("Sub", ["t0", "one"], ["then_out"])],
        "then", [], [helper.make_tensor_value_info("then_out", F, [3, 4])],
        initializer=[two, one])
    w = numpy_helper.from_array(np.linspace(-1, 1, 4).astype(np.float32), "w")
    nodes = [helper.make_node("Relu", ["x"], ["e0"]),
             helper.make_node("Add", ["e0", "w"], ["e1"])]
    inits = [w]
    if tuple(else_shape) != (3, 4):
        inits.append(numpy_helper.from_array(np.array(else_shape, np.int64), "flat"))
        nodes.append(helper.make_node("Reshape", ["e1", "flat"], ["else_out"]))
    else:
        nodes[-1].output[0] = "else_out"
    other = helper.make_graph(nodes, "else", [],
                              [helper.make_tensor_value_info("else_out", F, list(else_shape))],
                              initializer=inits)
    return then, other


def write(out, name, cond_input, else_shape=(3, 4)):
    then, other = branches(else_shape)
    inputs = [helper.make_tensor_value_info("x", F, [3, 4])]
    inits = []
    if cond_input:
        inputs.append(helper.make_tensor_value_info("cond", B, []))
    else:
        inits.append(numpy_helper.from_array(np.array(False), "cond"))
    node = helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)
    g = helper.make_graph([node], name, inputs,
                          [helper.make_tensor_value_info("y", F, [3, 4])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    if tuple(else_shape) == (3, 4):
        checker.check_model(m)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    save(m, os.path.join(d, "model.onnx"))
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    w = np.linspace(-1, 1, 4).astype(np.float32)
    for tag, c in (("data", True), ("data_false", False)):
        if not cond_input and c:
            continue
        dd = os.path.join(d, tag if cond_input else "data")
        os.makedirs(dd, exist_ok=True)
        np.save(os.path.join(dd, "input_0.npy"), x)
        if cond_input:
            np.save(os.path.join(dd, "input_1.npy"), np.array(c))
        y = x * 2 - 1 if c else np.maximum(x, 0) + w
        np.save(os.path.join(dd, "output_0.npy"), y.astype(np.float32))


out = sys.argv[1]
write(out, "if_data", True)
write(out, "if_known", False)
write(out, "if_shapes", True, else_shape=(12,))
