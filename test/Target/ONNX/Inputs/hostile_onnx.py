#!/usr/bin/env python3
"""Regression inputs from scripts/fuzz/onnx-mutants.py: the mutants of ONNX's
node test models that crashed loom-translate --import-onnx, rebuilt from the
originals (hostile_onnx.py OUT_DIR).
"""
import os
import sys

import onnx

DATA = "/usr/lib/python3/dist-packages/onnx/backend/test/data/node"
out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def load(name):
    return onnx.load(os.path.join(DATA, name, "model.onnx"))


# Every node removed: the graph output names a value nothing produces
# (crashed ONNX's version converter).
m = load("test_acos")
del m.graph.node[:]
onnx.save(m, os.path.join(out, "empty-graph.onnx"))

# A negative dimension on a graph input (ConvTranspose kept building after
# the slice that could not be built).
m = load("test_convtranspose_with_kernel")
m.graph.input[0].type.tensor_type.shape.dim[3].dim_value = -3
onnx.save(m, os.path.join(out, "negative-dim.onnx"))

# Gemm's B dropped: C becomes B, whose sizes do not pair with A's (the
# contraction that could not be built was used).
m = load("test_gemm_alpha")
del m.graph.node[0].input[1]
onnx.save(m, os.path.join(out, "gemm-mismatch.onnx"))

# MaxUnpool's indices dropped: output_shape becomes the indices (ONNX's own
# shape inference reads past them).
m = load("test_maxunpool_export_with_output_shape")
del m.graph.node[0].input[1]
onnx.save(m, os.path.join(out, "maxunpool-indices.onnx"))

# A dimension of 2^40 (ONNX's pooling shape inference looped over it for
# minutes).
m = load("test_maxpool_2d_precomputed_same_upper")
m.graph.input[0].type.tensor_type.shape.dim[2].dim_value = 1 << 40
onnx.save(m, os.path.join(out, "huge-dim.onnx"))

# Convolutions and pools with a zero stride or mismatched ranks (ONNX's own
# shape inference divided by zero or indexed past the shapes).
m = load("test_maxpool_2d_strides")
for a in m.graph.node[0].attribute:
    if a.name == "strides":
        a.ints[1] = 0
onnx.save(m, os.path.join(out, "zero-stride.onnx"))
m = load("test_convinteger_without_padding")
del m.graph.input[0].type.tensor_type.shape.dim[-1]
onnx.save(m, os.path.join(out, "conv-ranks.onnx"))

# LayerNormalization's axis outside its input's rank (ONNX's own shape
# inference indexed by it).
m = load("test_layer_normalization_4d_axis_negative_4")
del m.graph.input[0].type.tensor_type.shape.dim[-1]
onnx.save(m, os.path.join(out, "axis-range.onnx"))

# Dimensions each within range whose product is 2^90 elements.
m = load("test_acos")
for d in m.graph.input[0].type.tensor_type.shape.dim:
    d.dim_value = 1 << 30
onnx.save(m, os.path.join(out, "many-elements.onnx"))

# Work proportional to a size from the file (libFuzzer, 2026-11-26): the
# importer builds constant index lists (a kernel reversed for
# ConvTranspose, Resize's source rows, a Slice with negative steps), at
# most 2^24 indices each; Resize's sizes are computed in double and checked.
# (Outputs get symbolic sizes: ONNX's inference of the real ones must not
# clash with the test model's.)


def symbolic(value):
    for i, d in enumerate(value.type.tensor_type.shape.dim):
        d.Clear()
        d.dim_param = "d%d" % i


m = load("test_convtranspose")
m.graph.input[1].type.tensor_type.shape.dim[2].dim_value = 1 << 25
symbolic(m.graph.output[0])
onnx.save(m, os.path.join(out, "convtranspose-long-kernel.onnx"))
for name, scale in (("resize-scale-1e30", 1e30), ("resize-scale-1e7", 1e7)):
    m = load("test_resize_upsample_scales_nearest")
    del m.graph.input[1:]
    m.graph.initializer.extend([onnx.helper.make_tensor(
        "scales", onnx.TensorProto.FLOAT, [4], [1.0, 1.0, scale, 1.0])])
    symbolic(m.graph.output[0])
    onnx.save(m, os.path.join(out, name + ".onnx"))
h = onnx.helper
ints = lambda name, v: h.make_tensor(name, onnx.TensorProto.INT64, [1], [v])
g = h.make_graph(
    [h.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
    "slice", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT,
                                       [(1 << 31) - 1, 2])],
    [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["a", "b"])],
    [ints("starts", -1), ints("ends", -(1 << 63)), ints("axes", 0),
     ints("steps", -1)])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]),
          os.path.join(out, "slice-negative-step-long.onnx"))

# OneHot's depth from a tensor: 1e30 (undefined as an integer) and a depth
# whose index list would be 2^40 long.
for name, depth in (("onehot-depth-1e30", 1e30), ("onehot-depth-2p40", 2.0 ** 40)):
    g = h.make_graph(
        [h.make_node("OneHot", ["indices", "depth", "values"], ["y"])],
        "onehot", [h.make_tensor_value_info("indices", onnx.TensorProto.INT64, [3])],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["a", "b"])],
        [h.make_tensor("depth", onnx.TensorProto.FLOAT, [], [depth]),
         h.make_tensor("values", onnx.TensorProto.FLOAT, [2], [0.0, 1.0])])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]),
              os.path.join(out, name + ".onnx"))

# A graph input of rank 100,000 (every dimension 1) and an initializer of
# rank 65: the rank a value declares is at most 64.
g = h.make_graph(
    [h.make_node("Relu", ["x"], ["y"])], "rank",
    [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1] * 100000)],
    [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]),
          os.path.join(out, "input-rank-100000.onnx"))
g = h.make_graph(
    [h.make_node("Add", ["x", "w"], ["y"])], "rank",
    [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
    [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
    [h.make_tensor("w", onnx.TensorProto.FLOAT, [1] * 65, [1.0])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]),
          os.path.join(out, "initializer-rank-65.onnx"))

# An Expand whose target shape is derived: Reshape(Shape(x), [100000]),
# then Concat. ONNX's inference gives its output rank 100,000 (and with
# 2^30 it ran until the kernel killed it: test/Fuzz/replay.test), so what
# inference gives is checked as declared values are.
g = h.make_graph(
    [h.make_node("Shape", ["x"], ["s"]),
     h.make_node("Reshape", ["s", "target"], ["n"]),
     h.make_node("Concat", ["n"], ["t"], axis=0),
     h.make_node("Expand", ["x", "t"], ["y"]),
     h.make_node("Shape", ["y"], ["r"])], "derived",
    [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])],
    [h.make_tensor_value_info("r", onnx.TensorProto.INT64, ["n"])],
    [h.make_tensor("target", onnx.TensorProto.INT64, [1], [100000])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]),
          os.path.join(out, "derived-rank-100000.onnx"))
