#!/usr/bin/env python3
"""Exports the MLP, GPT block and CNN of export_torch_models.py and writes,
for each, an input and PyTorch's own output (eval mode) as .npy:

    torch_reference.py OUT_DIR  ->  OUT_DIR/<model>.onnx, OUT_DIR/<model>/{input_0,output_0}.npy
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Target", "ONNX", "Inputs"))
from export_torch_models import CNN, MLP, Block  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1)
    models = {"mlp": (MLP(), torch.randn(8, 32)),
              "transformer_block": (Block(), torch.randn(2, 16, 64)),
              "cnn": (CNN(), torch.randn(4, 1, 14, 14))}
    for name, (module, x) in models.items():
        module.eval()
        torch.onnx.export(module, x, os.path.join(out, name + ".onnx"), opset_version=14,
                          input_names=["x"], output_names=["y"])
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "input_0.npy"), x.numpy())
        with torch.no_grad():
            np.save(os.path.join(d, "output_0.npy"), module(x).numpy())


if __name__ == "__main__":
    main()
