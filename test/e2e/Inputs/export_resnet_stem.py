#!/usr/bin/env python3
"""A ResNet's stem and first block at test size, exported for training.

    export_resnet_stem.py OUT_DIR      writes OUT_DIR/resnet_stem.onnx and
                                       OUT_DIR/resnet_stem_wide.onnx

torchvision's ResNet layers in small: a 7x7 stride-2 convolution (padding
3), batch norm in training mode (batch statistics), ReLU, a 3x3 stride-2
max pool with padding 1 (overlapping windows: an input element can be the
maximum of up to four), one BasicBlock (two 3x3 convolutions with batch
norm and the residual), global average pooling and a linear head. Batch 4
of 3x32x32, 8 channels: the CUDA pipeline's GEMM convolutions, gathered
max-pool gradient and two-stage channel statistics all occur. The wide
variant (batch 8 of 3x64x64, 32 channels) is large enough for the first
batch norm's statistics to take the batch as parallel threads and three
stages (loom-gpu-split-reductions: 32 channels x 8 images x 128 lanes).
"""
import os
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


class Stem(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.conv1 = nn.Conv2d(3, c, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.conv3 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(c)
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        y = self.bn3(self.conv3(F.relu(self.bn2(self.conv2(x)))))
        x = F.relu(x + y)
        return self.fc(x.mean((2, 3)))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    warnings.filterwarnings("ignore")
    for name, c, shape in (("resnet_stem", 8, (4, 3, 32, 32)),
                           ("resnet_stem_wide", 32, (8, 3, 64, 64))):
        model = Stem(c).train()
        torch.onnx.export(model, torch.randn(*shape), os.path.join(out, name + ".onnx"),
                          opset_version=14, input_names=["x"], output_names=["y"],
                          do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING)


if __name__ == "__main__":
    main()
