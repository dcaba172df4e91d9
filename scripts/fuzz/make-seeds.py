#!/usr/bin/env python3
"""Writes the seed inputs under test/Fuzz/corpus that are made rather than
copied: small ONNX models (one with external data in the harness's
weights.bin), .npy tensors for each reader of loom-fuzz-tensor, and
checkpoint manifests matching loom-fuzz-manifest's synthetic shard.
Rank-program manifests are copied from `loomc --emit=executable` output
given with --manifests. Run from the repository root."""
import argparse
import io
import json
import os
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = "test/Fuzz/corpus"


def write(harness, name, data):
    with open(os.path.join(ROOT, harness, name), "wb") as f:
        f.write(data)


def onnx_seeds():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    fc = numpy_helper.from_array(rng.standard_normal((4 * 4 * 4, 5)).astype(np.float32), "fc")
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p", "shape"], ["f"]),
        helper.make_node("Gemm", ["f", "fc"], ["y"]),
    ]
    g = helper.make_graph(nodes, "convnet",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
                          [w, fc, shape])
    write("onnx", "convnet.onnx", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())

    # An initializer in the harness's external file weights.bin (4096 bytes).
    ext = TensorProto(name="b", data_type=TensorProto.FLOAT, dims=[4, 8])
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "256"), ("length", "128")):
        e = ext.external_data.add()
        e.key, e.value = k, v
    nodes = [helper.make_node("MatMul", ["x", "b"], ["m"]),
             helper.make_node("Softmax", ["m"], ["y"], axis=-1)]
    g = helper.make_graph(nodes, "external",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                          [ext])
    write("onnx", "external.onnx", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())

    # Shape arithmetic the importer folds: Shape, Gather, Concat, Slice, Expand.
    idx = numpy_helper.from_array(np.array([0], np.int64), "idx")
    starts = numpy_helper.from_array(np.array([1], np.int64), "starts")
    ends = numpy_helper.from_array(np.array([3], np.int64), "ends")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "idx"], ["n"], axis=0),
        helper.make_node("Concat", ["n", "starts"], ["t"], axis=0),
        helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["sl"]),
        helper.make_node("Expand", ["sl", "t"], ["e"]),
        helper.make_node("Transpose", ["e"], ["y"], perm=[1, 0]),
    ]
    g = helper.make_graph(nodes, "shapes",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
                          [idx, starts, ends, axes])
    write("onnx", "shapes.onnx", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())


def npy(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def tensor_seeds():
    write("tensor", "npy-f32", b"\x00" + npy(np.arange(6, dtype=np.float32).reshape(2, 3)))
    write("tensor", "npy-bool", b"\x00" + npy(np.array([True, False, True])))
    write("tensor", "data-f32", b"\x02" + npy(np.arange(24, dtype=np.float32).reshape(4, 2, 3)))
    write("tensor", "data-f64", b"\x02" + npy(np.arange(12, dtype=np.float64).reshape(3, 4)))
    write("tensor", "rank-i64", b"\x03" + npy(np.arange(5, dtype=np.int64)))
    write("tensor", "rank-i32", b"\x03" + npy(np.arange(4, dtype=np.int32).reshape(2, 2)))
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2), "t")
    write("tensor", "pb-f32", b"\x01" + t.SerializeToString())


def checkpoint_seed():
    shard = bytes((i * 131 + 7) & 255 for i in range(4096))
    ints = lambda v: ",".join(map(str, v))  # noqa: E731

    def manifest(version):
        def piece(name, t, offset, block, byte_offset, nbytes):
            # Version 2's checksum starts with the piece's place
            # (docs/checkpoints.md); version 1's covers the bytes alone.
            header = f"{name}\n{t['dtype']}\n{ints(t['shape'])}\n{ints(offset)}\n" \
                     f"{ints(block)}\n1\n".encode()
            crc = zlib.crc32(shard[byte_offset:byte_offset + nbytes],
                             zlib.crc32(header) if version == 2 else 0)
            return {"file": "rank-00000.bin", "offset": offset, "block": block,
                    "byte_offset": byte_offset, "bytes": nbytes, "crc32": crc}
        w = {"dtype": "float32", "shape": [4, 8], "sharding": [["dp"], []],
             "trainable": True}
        w["pieces"] = [piece("w", w, [0, 0], [2, 8], 0, 64),
                       piece("w", w, [2, 0], [2, 8], 64, 64)]
        step = {"dtype": "int64", "shape": [3], "sharding": [], "trainable": False}
        step["pieces"] = [piece("step", step, [0], [3], 128, 24)]
        return {"format": "loom-checkpoint", "version": version, "step": 1, "seed": 0,
                "micro_batches": 1, "data": "synthetic", "mesh": {"ranks": 2},
                "tensors": {"w": w, "step": step}}
    write("manifest", "checkpoint.json", b"\x01" + json.dumps(manifest(1), indent=1).encode())
    write("manifest", "checkpoint-v2.json",
          b"\x01" + json.dumps(manifest(2), indent=1).encode())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--manifests", nargs="*", default=[],
                        help="train.manifest files of loomc --emit=executable")
    args = parser.parse_args()
    onnx_seeds()
    tensor_seeds()
    checkpoint_seed()
    for i, path in enumerate(args.manifests):
        with open(path, "rb") as f:
            write("manifest", f"program-{i}.manifest", b"\x00" + f.read())


if __name__ == "__main__":
    main()
