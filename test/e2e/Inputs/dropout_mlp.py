#!/usr/bin/env python3
"""Writes a two-layer MLP with dropout (p = 0.25) between the layers as loom
IR, its weights drawn from a fixed seed: the model of micro-batch-split.test.
With --scale-input the hidden units are also scaled by a data input `scale`
of 64 values, which has no batch dimension (every micro-batch reads it
whole).

    dropout_mlp.py OUT.mlir [--scale-input]"""
import sys

import numpy as np


def dense(a):
    rows = ", ".join("[" + ", ".join(f"{v:.6e}" for v in row) + "]" for row in a)
    return f"dense<[{rows}]>"


def main():
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((32, 64)) * 0.2
    w2 = rng.standard_normal((64, 10)) * 0.2
    scaled = "--scale-input" in sys.argv[2:]
    scale_arg = ',\n                %scale: tensor<64xf32> {loom.name = "scale"}' if scaled else ""
    scale_op = ("  %as = loom.mul %a, %scale : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>\n"
                if scaled else "  %as = loom.relu %a : tensor<8x64xf32>\n")
    text = f"""loom.parameter @w1 : tensor<32x64xf32> = {dense(w1)} : tensor<32x64xf32> trainable
loom.parameter @w2 : tensor<64x10xf32> = {dense(w2)} : tensor<64x10xf32> trainable
func.func @main(%x: tensor<8x32xf32> {{loom.name = "x"}},
                %w1: tensor<32x64xf32> {{loom.param = @w1}},
                %w2: tensor<64x10xf32> {{loom.param = @w2}}{scale_arg}) -> tensor<8x10xf32> {{
  %seed = loom.constant dense<11> : tensor<i64>
  %h = loom.dot_general %x, %w1 contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  %a = loom.relu %h : tensor<8x64xf32>
{scale_op}  %d, %m = loom.dropout %as, %seed ratio = 0.25 : (tensor<8x64xf32>, tensor<i64>) -> (tensor<8x64xf32>, tensor<8x64xi1>)
  %o = loom.dot_general %d, %w2 contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x10xf32>) -> tensor<8x10xf32>
  return %o : tensor<8x10xf32>
}}
"""
    with open(sys.argv[1], "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
