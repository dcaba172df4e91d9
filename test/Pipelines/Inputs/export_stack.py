"""Writes a stack of 4 GPT blocks (train_vs_pytorch.TrainBlock: hidden 64,
4 heads, sequence 16) as ONNX, for a batch of 16: a model whose repeated
layers the planner can cut into pipeline stages.

    export_stack.py OUT.onnx
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "e2e", "Inputs"))
from train_vs_pytorch import TrainBlock  # noqa: E402


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[TrainBlock() for _ in range(4)])
    torch.onnx.export(model, torch.randn(16, 16, 64), sys.argv[1], opset_version=14,
                      input_names=["x"], output_names=["y"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)


if __name__ == "__main__":
    main()
