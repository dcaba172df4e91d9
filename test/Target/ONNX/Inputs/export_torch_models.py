#!/usr/bin/env python3
"""Exports an MLP, a GPT-style transformer block and a small CNN from PyTorch
(Debian's 1.13) to ONNX opset 14, as users do:

    export_torch_models.py OUT_DIR

Opset 14 has no LayerNormalization or Gelu: the exporter writes them as
ReduceMean/Sub/Pow/Sqrt/Div and Erf patterns, which the importer must take as
they come.
"""

import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Block(nn.Module):
    """Pre-norm GPT block: causal self-attention and a GELU MLP."""

    def __init__(self, d=64, heads=4, seq=16):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.heads)
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2)
        self.fc = nn.Linear(16 * 3 * 3, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    models = {
        "mlp": (MLP(), torch.randn(8, 32)),
        "transformer_block": (Block(), torch.randn(2, 16, 64)),
        "cnn": (CNN(), torch.randn(4, 1, 14, 14)),
    }
    for name, (module, example) in models.items():
        module.eval()
        torch.onnx.export(module, example, os.path.join(out, name + ".onnx"),
                          opset_version=14, input_names=["x"], output_names=["y"])


if __name__ == "__main__":
    main()
