#!/usr/bin/env python3
"""Forward-pass benchmark: Loom's compiled code vs PyTorch eager, same run.

    bench/forward.py [--build build] [--threads N] [--repeat R]

Models (exported from PyTorch 1.13 to ONNX, opset 14, eval mode):
  mlp:   4 Linear layers of width 1024 with ReLU, batch 256
  block: a GPT-style pre-norm transformer block, d=512, 8 heads, seq 128,
         batch 8 (causal attention, GELU MLP of width 2048)

Both run single-process with the same thread setting (OpenBLAS threads for
Loom, torch.set_num_threads for PyTorch). Prints wall and CPU time per
forward pass (CPU time shows how many cores each really used: Debian's
PyTorch runs oneDNN matmuls on every core even with one thread set) and the
wall-time ratio Loom / PyTorch (lower is better; the goal is <= 2.0).
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test",
                                "Target", "ONNX", "Inputs"))
from export_torch_models import Block as TestBlock  # noqa: E402


class MLP(nn.Module):
    def __init__(self, width=1024, layers=4):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(layers))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return x


def Block(d=512, heads=8, seq=128):
    """The pre-norm GPT block the tests export, at benchmark size."""
    return TestBlock(d, heads, seq)


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def time_torch(module, x, repeat):
    """Wall and CPU seconds per forward pass."""
    with torch.no_grad():
        for _ in range(3):
            module(x)
        cpu = cpu_seconds()
        start = time.perf_counter()
        for _ in range(repeat):
            module(x)
        return ((time.perf_counter() - start) / repeat,
                (cpu_seconds() - cpu) / repeat)


def time_loom(tools, onnx_path, x, repeat, threads, workdir):
    np.save(os.path.join(workdir, "input_0.npy"), x.numpy())
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    cmd = [os.path.join(tools, "loom-run"), onnx_path, "--input-dir", workdir,
           "--output-dir", workdir, "--output-format", "npy", f"--repeat={repeat}"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    m = re.search(r"compile ([0-9.]+) s, run ([0-9.]+) s per call .*cpu ([0-9.]+) s per call",
                  out)
    return (float(m.group(2)), float(m.group(3)), float(m.group(1)),
            np.load(os.path.join(workdir, "output_0.npy")))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR", "build"))
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    tools = os.path.join(os.path.abspath(args.build), "bin")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    models = {"mlp": (MLP(), torch.randn(256, 1024)),
              "block": (Block(), torch.randn(8, 128, 512))}
    print(f"threads: {args.threads}, repeat: {args.repeat}")
    print("time per forward pass (wall ms, and CPU ms over all threads)")
    print(f"{'model':<8}{'pytorch':>10}{'cpu':>8}{'loom':>10}{'cpu':>8}{'ratio':>8}"
          f"{'max abs diff':>14}{'compile s':>11}")
    worst = 0.0
    with tempfile.TemporaryDirectory() as d:
        for name, (module, x) in models.items():
            module.eval()
            path = os.path.join(d, name + ".onnx")
            torch.onnx.export(module, x, path, opset_version=14, input_names=["x"],
                              output_names=["y"])
            t_torch, cpu_torch = time_torch(module, x, args.repeat)
            t_loom, cpu_loom, compile_s, y = time_loom(tools, path, x, args.repeat,
                                                       args.threads, d)
            with torch.no_grad():
                ref = module(x).numpy()
            diff = float(np.max(np.abs(y - ref)))
            ratio = t_loom / t_torch
            worst = max(worst, ratio)
            print(f"{name:<8}{t_torch * 1e3:>10.2f}{cpu_torch * 1e3:>8.1f}{t_loom * 1e3:>10.2f}"
                  f"{cpu_loom * 1e3:>8.1f}{ratio:>8.2f}{diff:>14.2e}{compile_s:>11.2f}")
    print(f"worst ratio (Loom / PyTorch): {worst:.2f} (goal <= 2.00)")


if __name__ == "__main__":
    sys.exit(main())
