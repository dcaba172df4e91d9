#!/usr/bin/env python3
"""OUT/<name>/model.onnx: ONNX Scan and Loop models, with inputs and the
outputs numpy computes in OUT/<name>/data:

  scan_axes:  Scan over x [2, 5, 3] along axis 1, read in reverse
              (scan_input_directions 1), carrying a running sum s [2, 3]
              and a running product p [2, 3]; scan outputs the sum along
              output axis 1 written in reverse (scan_output_directions 1)
              and tanh(s * w) with w an initializer of the body, along
              axis 0
  loop_known: Loop with trip count 4 and condition true (initializers),
              carrying y [3]: y_out = y * 0.5 + x[i] with x a graph input
              [4, 3] read through the iteration number; scan output y_out
  loop_cond:  the condition a graph input: refused unless specialized
  loop_data:  the body's condition computed from data: refused
"""
import os
import sys

import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper, save

F = TensorProto.FLOAT


def write(out, name, model, inputs, outputs):
    checker.check_model(model)
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    save(model, os.path.join(d, "model.onnx"))
    for i, v in enumerate(inputs):
        np.save(os.path.join(d, "data", f"input_{i}.npy"), v)
    for i, v in enumerate(outputs):
        np.save(os.path.join(d, "data", f"output_{i}.npy"), v.astype(np.float32))


def model(nodes, name, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def scan_axes(out, rng):
    w = rng.standard_normal((2, 3)).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Mul", ["p_in", "x_t"], ["p_out"]),
         helper.make_node("Identity", ["s_out"], ["y1"]),
         helper.make_node("Mul", ["s_out", "w"], ["sw"]),
         helper.make_node("Tanh", ["sw"], ["y2"])],
        "body",
        [helper.make_tensor_value_info(n, F, [2, 3]) for n in ("s_in", "p_in", "x_t")],
        [helper.make_tensor_value_info(n, F, [2, 3]) for n in ("s_out", "p_out", "y1", "y2")],
        initializer=[numpy_helper.from_array(w, "w")])
    node = helper.make_node("Scan", ["s0", "p0", "x"], ["s", "p", "ys", "zs"], body=body,
                            num_scan_inputs=1, scan_input_axes=[1],
                            scan_input_directions=[1], scan_output_axes=[1, 0],
                            scan_output_directions=[1, 0])
    m = model([node], "scan_axes",
              [helper.make_tensor_value_info("s0", F, [2, 3]),
               helper.make_tensor_value_info("p0", F, [2, 3]),
               helper.make_tensor_value_info("x", F, [2, 5, 3])],
              [helper.make_tensor_value_info("s", F, [2, 3]),
               helper.make_tensor_value_info("p", F, [2, 3]),
               helper.make_tensor_value_info("ys", F, [2, 5, 3]),
               helper.make_tensor_value_info("zs", F, [5, 2, 3])], opset=16)
    s0 = rng.standard_normal((2, 3)).astype(np.float32)
    p0 = rng.standard_normal((2, 3)).astype(np.float32)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    s, p = s0.copy(), p0.copy()
    ys, zs = np.zeros((2, 5, 3)), np.zeros((5, 2, 3))
    for t in range(5):
        xt = x[:, 4 - t]          # read in reverse
        s = s + xt
        p = p * xt
        ys[:, 4 - t] = s          # written in reverse along axis 1
        zs[t] = np.tanh(s * w)    # forward along axis 0
    write(out, "scan_axes", m, [s0, p0, x], [s, p, ys, zs])


def loop_body(cond_out_node):
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    nodes = [helper.make_node("Unsqueeze", ["i", "zero_axis"], ["i1"]),
             helper.make_node("Add", ["i", "one"], ["i_end"]),
             helper.make_node("Unsqueeze", ["i_end", "zero_axis"], ["i2"]),
             helper.make_node("Slice", ["x", "i1", "i2"], ["x_row"]),
             helper.make_node("Squeeze", ["x_row", "zero_axis"], ["x_i"]),
             helper.make_node("Mul", ["y_in", "half"], ["y_half"]),
             helper.make_node("Add", ["y_half", "x_i"], ["y_out"]),
             helper.make_node("Identity", ["y_out"], ["scan_out"]),
             cond_out_node]
    inits = [half, numpy_helper.from_array(np.array([0], np.int64), "zero_axis"),
             numpy_helper.from_array(np.array(1, np.int64), "one")]
    return helper.make_graph(
        nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", F, [3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_out", F, [3]),
         helper.make_tensor_value_info("scan_out", F, [3])],
        initializer=inits)


def loop(out, rng, name, cond_input=False, data_cond=False):
    cond_node = (helper.make_node("ReduceMax", ["y_out"], ["y_max"], keepdims=0)
                 if data_cond else helper.make_node("Identity", ["c_in"], ["c_out"]))
    body = loop_body(cond_node)
    if data_cond:
        body.node.append(helper.make_node("Less", ["y_max", "ten"], ["c_out"]))
        body.initializer.append(numpy_helper.from_array(np.array(10.0, np.float32), "ten"))
    inputs = [helper.make_tensor_value_info("x", F, [4, 3]),
              helper.make_tensor_value_info("y0", F, [3])]
    inits = [numpy_helper.from_array(np.array(4, np.int64), "trips")]
    if cond_input:
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    else:
        inits.append(numpy_helper.from_array(np.array(True), "cond"))
    node = helper.make_node("Loop", ["trips", "cond", "y0"], ["y", "ys"], body=body)
    m = model([node], name, inputs,
              [helper.make_tensor_value_info("y", F, [3]),
               helper.make_tensor_value_info("ys", F, [4, 3])], inits)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y0 = rng.standard_normal(3).astype(np.float32)
    y, ys = y0.copy(), []
    for i in range(4):
        y = y * 0.5 + x[i]
        ys.append(y)
    data = [x, y0] + ([np.array(True)] if cond_input else [])
    write(out, name, m, data, [y, np.stack(ys)])


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(0)
    scan_axes(out, rng)
    loop(out, rng, "loop_known")
    loop(out, rng, "loop_cond", cond_input=True)
    loop(out, rng, "loop_data", data_cond=True)


if __name__ == "__main__":
    main()
