#!/usr/bin/env python3
"""Compile time of a training step against depth, and what the cache saves.

    bench/compile.py [--build build] [--layers 1,2,4,8,16] [--d 256] [--split 300]

A stack of L pre-norm GPT blocks (test/Target/ONNX/Inputs/export_torch_models
Block: d model width, 4 heads, seq 64, batch 4), exported to ONNX and built
into an AdamW training step with `loomc` (timed: import, autodiff, planning,
writing the artifact), then run for one step by `loom-run`, which reports
its compile time (lowering and LLVM): first with `--no-cache` (what every
rank paid before the cache), then twice with the cache (the first run
compiles and stores the object, the second links it). Ratios are against
the shallowest stack measured in the same run; the issue's goal is
compile time linear in depth (96 layers in under a minute): the per-layer
column shows it (docs/benchmarks.md).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test",
                                "Target", "ONNX", "Inputs"))
from export_torch_models import Block  # noqa: E402


class Stack(nn.Module):
    def __init__(self, layers, d):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(d, 4, 64) for _ in range(layers)])

    def forward(self, x):
        return self.blocks(x)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


def compile_seconds(text):
    return float(re.search(r"compile ([0-9.]+) s", text).group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--layers", default="1,2,4,8,16")
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--split", type=int, default=300,
                   help="loom-run --split-functions (ops per function)")
    p.add_argument("--whole-max", type=int, default=8,
                   help="deepest stack also compiled as one function")
    a = p.parse_args()
    bin_dir = os.path.abspath(os.path.join(a.build, "bin"))
    work = tempfile.mkdtemp(prefix="loom-compile-")
    rows = []
    for layers in [int(x) for x in a.layers.split(",")]:
        torch.manual_seed(0)
        model = Stack(layers, a.d).eval()
        onnx_path = os.path.join(work, f"gpt{layers}.onnx")
        torch.onnx.export(model, torch.randn(4, 64, a.d), onnx_path, opset_version=14,
                          input_names=["x"], output_names=["y"])
        out = os.path.join(work, f"gpt{layers}")
        start = time.perf_counter()
        # --emit=mlir: loomc builds the artifact only (its default also
        # compiles the step and fills the cache this benchmark measures).
        run([os.path.join(bin_dir, "loomc"), onnx_path, "--train", "--loss=mse",
             "--optimizer=adamw", "--emit=mlir", "-o", out])
        loomc = time.perf_counter() - start
        step = [os.path.join(bin_dir, "loom-run"), out, "--steps", "1", "--data", "synthetic"]
        # The step as one function (before loom-split-functions), up to
        # --whole-max layers: it grows faster than linearly.
        whole = (compile_seconds(run(step + ["--no-cache", "--split-functions=0"]))
                 if layers <= a.whole_max else None)
        split = [f"--split-functions={a.split}"]
        fresh = compile_seconds(run(step + ["--no-cache"] + split))
        first = compile_seconds(run(step + split))
        cached_text = run(step + split)
        if "machine code from the cache" not in cached_text:
            sys.exit(f"{layers} layers: the second cached run did not use the cache")
        rows.append((layers, loomc, whole, fresh, first, compile_seconds(cached_text)))
        print(f"  {layers} layers done", file=sys.stderr)

    base = rows[0]
    print(f"GPT blocks d={a.d}, 4 heads, seq 64, batch 4, AdamW; one CPU process")
    print("| layers | loomc s | JIT compile s, one function | JIT compile s, split "
          f"({a.split} ops) | split x shallowest | split per layer s | split / one "
          "function | first cached run s | cached s | cached / split |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for layers, loomc, whole, fresh, first, cached in rows:
        whole_text = f"{whole:.2f}" if whole is not None else "-"
        ratio = f"{fresh / whole:.3f}" if whole is not None else "-"
        print(f"| {layers} | {loomc:.2f} | {whole_text} | {fresh:.2f} | "
              f"{fresh / base[3]:.2f} | {fresh / layers:.2f} | {ratio} | {first:.2f} | "
              f"{cached:.3f} | {cached / fresh:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
