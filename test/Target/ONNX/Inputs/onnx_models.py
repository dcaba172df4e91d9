#!/usr/bin/env python3
"""Writes small ONNX models for the importer's FileCheck tests.

    onnx_models.py OUT_DIR      writes OUT_DIR/<name>.onnx for every model

Models are built with onnx.helper (ONNX 1.12, Debian) so that each test sees
exactly the node, attributes and opset it checks. Malformed models for the
negative tests are written here too.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
MODELS = {}


def model(name):
    def register(fn):
        MODELS[name] = fn
        return fn
    return register


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def graph(nodes, inputs, outputs, inits=(), opset=17, name="g", check=True):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="loom-tests")
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    return m


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


# --- elementwise -----------------------------------------------------------

@model("add_broadcast")
def _():
    return graph([helper.make_node("Add", ["a", "b"], ["y"], name="add0")],
                 [vi("a", F, [2, 3, 4]), vi("b", F, [4])], [vi("y", F, [2, 3, 4])])


@model("pow_int_exponent")
def _():
    return graph([helper.make_node("Pow", ["x", "e"], ["y"])],
                 [vi("x", F, [3]), vi("e", I64, [3])], [vi("y", F, [3])])


@model("variadic_mean_max")
def _():
    return graph([helper.make_node("Mean", ["a", "b", "c"], ["m"]),
                  helper.make_node("Max", ["a", "b", "c"], ["x"])],
                 [vi("a", F, [3]), vi("b", F, [3]), vi("c", F, [1])],
                 [vi("m", F, [3]), vi("x", F, [3])])


@model("logic")
def _():
    B = TensorProto.BOOL
    return graph([helper.make_node("And", ["p", "q"], ["a"]),
                  helper.make_node("Or", ["p", "q"], ["o"]),
                  helper.make_node("Xor", ["p", "q"], ["x"]),
                  helper.make_node("Not", ["p"], ["n"])],
                 [vi("p", B, [4]), vi("q", B, [4])],
                 [vi("a", B, [4]), vi("o", B, [4]), vi("x", B, [4]), vi("n", B, [4])])


@model("activations")
def _():
    nodes = [helper.make_node("LeakyRelu", ["x"], ["l"], alpha=0.2),
             helper.make_node("HardSigmoid", ["x"], ["h"]),
             helper.make_node("Elu", ["x"], ["e"], alpha=2.0),
             helper.make_node("Clip", ["x", "lo", "hi"], ["c"]),
             helper.make_node("Softmax", ["x"], ["s"], axis=-1)]
    return graph(nodes, [vi("x", F, [2, 5])],
                 [vi(n, F, [2, 5]) for n in "lhecs"],
                 inits=[init("lo", np.float32(-1)), init("hi", np.float32(1))])


@model("cast")
def _():
    return graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT16)],
                 [vi("x", I64, [3])], [vi("y", TensorProto.FLOAT16, [3])])


# --- contractions and windows --------------------------------------------------

@model("gemm_trans")
def _():
    return graph([helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1,
                                   transB=1, alpha=2.0, beta=0.5)],
                 [vi("a", F, [4, 3]), vi("b", F, [5, 4]), vi("c", F, [5])],
                 [vi("y", F, [3, 5])])


@model("matmul_broadcast")
def _():
    return graph([helper.make_node("MatMul", ["a", "b"], ["y"])],
                 [vi("a", F, [2, 1, 3, 4]), vi("b", F, [5, 4, 6])],
                 [vi("y", F, [2, 5, 3, 6])])


@model("matmul_vector")
def _():
    return graph([helper.make_node("MatMul", ["v", "b"], ["y"])],
                 [vi("v", F, [4]), vi("b", F, [2, 4, 6])], [vi("y", F, [2, 6])])


@model("conv_same_bias")
def _():
    w = np.ones((8, 3, 3, 3), np.float32)
    return graph([helper.make_node("Conv", ["x", "w", "b"], ["y"], auto_pad="SAME_UPPER",
                                   strides=[2, 2])],
                 [vi("x", F, [1, 3, 7, 7])], [vi("y", F, [1, 8, 4, 4])],
                 inits=[init("w", w), init("b", np.zeros(8, np.float32))])


@model("conv1d_grouped")
def _():
    return graph([helper.make_node("Conv", ["x", "w"], ["y"], group=2, pads=[1, 1])],
                 [vi("x", F, [1, 4, 10]), vi("w", F, [6, 2, 3])], [vi("y", F, [1, 6, 10])])


@model("maxpool_ceil")
def _():
    return graph([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3],
                                   strides=[2, 2], ceil_mode=1)],
                 [vi("x", F, [1, 1, 4, 4])], [vi("y", F, [1, 1, 2, 2])])


@model("avgpool_global")
def _():
    return graph([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2],
                                   pads=[1, 1, 1, 1], count_include_pad=1),
                  helper.make_node("GlobalAveragePool", ["x"], ["g"])],
                 [vi("x", F, [1, 2, 4, 4])],
                 [vi("y", F, [1, 2, 5, 5]), vi("g", F, [1, 2, 1, 1])])


# --- normalization, dropout, losses --------------------------------------------------

@model("batchnorm_inference")
def _():
    c = np.ones(3, np.float32)
    return graph([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                                   epsilon=1e-3)],
                 [vi("x", F, [2, 3, 4, 4])], [vi("y", F, [2, 3, 4, 4])],
                 inits=[init(n, c) for n in "sbmv"], opset=15)


@model("batchnorm_training")
def _():
    c = np.ones(3, np.float32)
    return graph([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                                   ["y", "rm", "rv"], training_mode=1, momentum=0.8)],
                 [vi("x", F, [2, 3, 4])],
                 [vi("y", F, [2, 3, 4]), vi("rm", F, [3]), vi("rv", F, [3])],
                 inits=[init(n, c) for n in "sbmv"], opset=15)


@model("layernorm")
def _():
    return graph([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1,
                                   epsilon=1e-5)],
                 [vi("x", F, [2, 3, 8]), vi("g", F, [8]), vi("b", F, [8])],
                 [vi("y", F, [2, 3, 8])])


@model("layernorm_stats")
def _():
    return graph([helper.make_node("LayerNormalization", ["x", "g"], ["y", "mean", "inv"],
                                   axis=1)],
                 [vi("x", F, [2, 3, 8]), vi("g", F, [3, 8])],
                 [vi("y", F, [2, 3, 8]), vi("mean", F, [2, 1, 1]), vi("inv", F, [2, 1, 1])])


@model("dropout_training")
def _():
    B = TensorProto.BOOL
    return graph([helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=7)],
                 [vi("x", F, [4, 4])], [vi("y", F, [4, 4]), vi("mask", B, [4, 4])],
                 inits=[init("r", np.float32(0.25)), init("t", np.bool_(True))])


@model("dropout_inference")
def _():
    return graph([helper.make_node("Dropout", ["x"], ["y"])],
                 [vi("x", F, [4, 4])], [vi("y", F, [4, 4])])


@model("sce_loss")
def _():
    return graph([helper.make_node("SoftmaxCrossEntropyLoss", ["s", "l", "w"], ["loss", "logp"],
                                   reduction="mean", ignore_index=-1)],
                 [vi("s", F, [4, 5]), vi("l", I64, [4]), vi("w", F, [5])],
                 [vi("loss", F, []), vi("logp", F, [4, 5])])


@model("nll_loss")
def _():
    return graph([helper.make_node("NegativeLogLikelihoodLoss", ["p", "l"], ["loss"],
                                   reduction="none")],
                 [vi("p", F, [4, 5, 2]), vi("l", I64, [4, 2])], [vi("loss", F, [4, 2])])


# --- reductions ----------------------------------------------------------------

@model("reduce_sum_axes_input")
def _():
    return graph([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
                 [vi("x", F, [2, 3, 4])], [vi("y", F, [2])],
                 inits=[init("axes", np.array([-1, 1], np.int64))], opset=13)


@model("reduce_mean_attr")
def _():
    return graph([helper.make_node("ReduceMean", ["x"], ["y"], axes=[0])],
                 [vi("x", F, [2, 3])], [vi("y", F, [1, 3])], opset=13)


@model("reduce_logsumexp")
def _():
    return graph([helper.make_node("ReduceLogSumExp", ["x"], ["y"], axes=[1], keepdims=0),
                  helper.make_node("ReduceL2", ["x"], ["z"], axes=[1])],
                 [vi("x", F, [2, 3])], [vi("y", F, [2]), vi("z", F, [2, 1])], opset=13)


@model("reduce_noop")
def _():
    return graph([helper.make_node("ReduceSum", ["x", "axes"], ["y"], noop_with_empty_axes=1)],
                 [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
                 inits=[init("axes", np.array([], np.int64))], opset=13)


# --- data movement and folding -----------------------------------------------------

@model("reshape_zero_minus_one")
def _():
    return graph([helper.make_node("Reshape", ["x", "s"], ["y"])],
                 [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 12])],
                 inits=[init("s", np.array([0, -1], np.int64))])


@model("shape_chain")
def _():
    # What exporters emit for x.view(x.size(0), -1): folded to a constant.
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    return graph(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 12])],
                 inits=[init("zero", np.int64(0)), init("ax", np.array([0], np.int64)),
                        init("minus1", np.array([-1], np.int64))])


@model("constant_of_shape_range")
def _():
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["z"],
                              value=numpy_helper.from_array(np.array([2.5], np.float32))),
             helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=F),
             helper.make_node("Add", ["z", "rf"], ["y"])]
    return graph(nodes, [], [vi("y", F, [3, 4])],
                 inits=[init("shape", np.array([3, 4], np.int64)), init("start", np.int64(0)),
                        init("limit", np.int64(4)), init("delta", np.int64(1))])


@model("slice_negative_step")
def _():
    return graph([helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
                 [vi("x", F, [4, 6])], [vi("y", F, [4, 2])],
                 inits=[init("st", np.array([-1, 1], np.int64)),
                        init("en", np.array([-1000, 6], np.int64)),
                        init("ax", np.array([0, 1], np.int64)),
                        init("sp", np.array([-1, 3], np.int64))])


@model("split_squeeze")
def _():
    return graph([helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=1),
                  helper.make_node("Squeeze", ["a", "ax"], ["s"])],
                 [vi("x", F, [2, 4])], [vi("s", F, [2]), vi("b", F, [2, 3])],
                 inits=[init("sizes", np.array([1, 3], np.int64)),
                        init("ax", np.array([1], np.int64))])


@model("tile_expand_pad")
def _():
    return graph([helper.make_node("Tile", ["x", "r"], ["t"]),
                  helper.make_node("Expand", ["x", "shape"], ["e"]),
                  helper.make_node("Pad", ["x", "pads", "cv"], ["p"])],
                 [vi("x", F, [2, 3])],
                 [vi("t", F, [4, 3]), vi("e", F, [2, 2, 3]), vi("p", F, [3, 2])],
                 inits=[init("r", np.array([2, 1], np.int64)),
                        init("shape", np.array([2, 1, 1], np.int64)),
                        init("pads", np.array([1, 0, 0, -1], np.int64)),
                        init("cv", np.float32(9))])


@model("gather_embedding")
def _():
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    return graph([helper.make_node("Gather", ["table", "ids"], ["y"])],
                 [vi("ids", I64, [2, 3])], [vi("y", F, [2, 3, 4])],
                 inits=[init("table", table)])


@model("depth_to_space")
def _():
    return graph([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")],
                 [vi("x", F, [1, 8, 2, 3])], [vi("y", F, [1, 2, 4, 6])])


# --- parameters, opsets, options ------------------------------------------------------

@model("params")
def _():
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    return graph([helper.make_node("MatMul", ["x", "w"], ["h"]),
                  helper.make_node("Add", ["h", "b"], ["y"]),
                  helper.make_node("Gather", ["y", "idx"], ["z"], axis=1)],
                 [vi("x", F, [2, 3])], [vi("z", F, [2, 2])],
                 inits=[init("w", w), init("b", np.zeros(4, np.float32)),
                        init("idx", np.array([3, 0], np.int64))])


@model("opset6_softmax")
def _():
    # Opset < 13 Softmax flattens from `axis` (default 1): upgraded on import.
    return graph([helper.make_node("Softmax", ["x"], ["y"])],
                 [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4])], opset=6)


@model("symbolic_batch")
def _():
    return graph([helper.make_node("Relu", ["x"], ["y"])],
                 [vi("x", F, ["batch", 3])], [vi("y", F, ["batch", 3])])


@model("unsupported_op")
def _():
    return graph([helper.make_node("Det", ["x"], ["y"], name="det0")],
                 [vi("x", F, [3, 3])], [vi("y", F, [])])


@model("unsupported_attr")
def _():
    m = graph([helper.make_node("Relu", ["x"], ["y"], name="relu0")],
              [vi("x", F, [3])], [vi("y", F, [3])], check=False)
    m.graph.node[0].attribute.append(helper.make_attribute("fancy", 1))
    return m


@model("unsupported_pad_mode")
def _():
    return graph([helper.make_node("Pad", ["x", "pads"], ["y"], mode="mirror", name="pad0")],
                 [vi("x", F, [3, 3])], [vi("y", F, [3, 5])],
                 inits=[init("pads", np.array([0, 1, 0, 1], np.int64))])


@model("uint8_add")
def _():
    U8 = TensorProto.UINT8
    return graph([helper.make_node("Add", ["x", "y"], ["z"])],
                 [vi("x", U8, [3]), vi("y", U8, [3])], [vi("z", U8, [3])])


@model("string_input")
def _():
    S = TensorProto.STRING
    return graph([helper.make_node("Identity", ["x"], ["y"])],
                 [vi("x", S, [3])], [vi("y", S, [3])])


@model("maxpool_indices")
def _():
    return graph([helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2],
                                   strides=[2, 2], storage_order=1)],
                 [vi("x", F, [1, 1, 4, 4])],
                 [vi("y", F, [1, 1, 2, 2]), vi("i", I64, [1, 1, 2, 2])])


@model("missing_initializer")
def _():
    return graph([helper.make_node("Add", ["x", "w"], ["y"], name="add_w")],
                 [vi("x", F, [3])], [vi("y", F, [3])], check=False)


@model("shape_mismatch")
def _():
    return graph([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
                 [vi("a", F, [2, 3]), vi("b", F, [4, 5])], [vi("y", F, [2, 5])], check=False)


@model("unknown_opset")
def _():
    return graph([helper.make_node("Relu", ["x"], ["y"])],
                 [vi("x", F, [3])], [vi("y", F, [3])], opset=99, check=False)


@model("external_data")
def _():
    w = np.arange(64, dtype=np.float32).reshape(8, 8)
    return graph([helper.make_node("MatMul", ["x", "w"], ["y"])],
                 [vi("x", F, [2, 8])], [vi("y", F, [2, 8])], inits=[init("w", w)])

# --- training (ai.onnx.preview.training) ------------------------------------

TRAINING = "ai.onnx.preview.training"


def training_graph(nodes, inputs, outputs, default_opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    opsets = [helper.make_opsetid(TRAINING, 1)]
    if default_opset:
        opsets.insert(0, helper.make_opsetid("", default_opset))
    m = helper.make_model(g, opset_imports=opsets, producer_name="loom-tests")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


@model("gradient_matmul")
def _():
    # loss = sum(tanh(x @ w)); d loss / d w and d loss / d h (an intermediate).
    return training_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Tanh", ["h"], ["t"]),
         helper.make_node("ReduceSum", ["t"], ["loss"], keepdims=0),
         helper.make_node("Gradient", ["x", "w"], ["dw", "dh"], domain=TRAINING,
                          xs=["w", "h"], y="loss")],
        [vi("x", F, [2, 3]), vi("w", F, [3, 4])],
        [vi("loss", F, []), vi("dw", F, [3, 4]), vi("dh", F, [2, 4])])


@model("gradient_through_cast")
def _():
    return training_graph(
        [helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64),
         helper.make_node("Cast", ["i"], ["f"], to=F),
         helper.make_node("ReduceSum", ["f"], ["y"], keepdims=0),
         helper.make_node("Gradient", ["x"], ["dx"], domain=TRAINING, xs=["x"], y="y")],
        [vi("x", F, [3])], [vi("y", F, []), vi("dx", F, [3])])


@model("momentum_nesterov")
def _():
    return training_graph(
        [helper.make_node("Momentum", ["R", "T", "X", "G", "V"], ["X_new", "V_new"],
                          domain=TRAINING, alpha=0.9, beta=1.0, mode="nesterov",
                          norm_coefficient=0.01)],
        [vi("R", F, []), vi("T", I64, []), vi("X", F, [4]), vi("G", F, [4]), vi("V", F, [4])],
        [vi("X_new", F, [4]), vi("V_new", F, [4])], default_opset=0)


@model("momentum_bad_mode")
def _():
    return training_graph(
        [helper.make_node("Momentum", ["R", "T", "X", "G", "V"], ["X_new", "V_new"],
                          domain=TRAINING, alpha=0.9, beta=1.0, mode="heavy",
                          norm_coefficient=0.0)],
        [vi("R", F, []), vi("T", I64, []), vi("X", F, [4]), vi("G", F, [4]), vi("V", F, [4])],
        [vi("X_new", F, [4]), vi("V_new", F, [4])], default_opset=0)



def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, fn in MODELS.items():
        m = fn()
        path = os.path.join(out, name + ".onnx")
        if name == "external_data":
            onnx.save_model(m, path, save_as_external_data=True,
                            all_tensors_to_one_file=True, location="external_data.bin",
                            size_threshold=0)
            # A copy whose side file is missing.
            missing = onnx.load(path, load_external_data=False)
            for t in missing.graph.initializer:
                for entry in t.external_data:
                    if entry.key == "location":
                        entry.value = "missing.bin"
            onnx.save(missing, os.path.join(out, "external_missing.onnx"))
            continue
        onnx.save(m, path)
    # A truncated file.
    data = MODELS["add_broadcast"]().SerializeToString()
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])


if __name__ == "__main__":
    main()
