#!/usr/bin/env python3
"""Training-step benchmark: Loom's compiled @train_step vs PyTorch eager, same run.

    bench/train.py [--build build] [--threads N] [--steps S]

Models (trained with AdamW, MSE loss against random targets):
  mlp:      4 Linear layers of width 1024 with ReLU, batch 256 (bench/forward.py's)
  block:    a GPT-style pre-norm transformer block, d=512, 8 heads, seq 128,
            batch 8 (bench/forward.py's)
  resnet18: torchvision's, 10 classes, batch 32 of 3x32x32, batch norm in
            training mode
  mobilenetv2: torchvision's MobileNetV2 (depthwise convolutions), likewise

Loom: loomc builds the artifact, `loom-run DIR --steps S --data D` trains;
its own timer gives seconds per step after compilation. PyTorch: the usual
zero_grad / forward / backward / step loop, timed after 2 warm-up steps.
Both single process with the same thread setting. Prints seconds per step,
Loom's compile time and the ratio Loom / PyTorch (lower is better), and
Loom's step with libm's exp/erf/tanh instead of the vectorizable
polynomials (`loom-run --libm`) with the ratio of the two, and for
the CNNs their step with grouped (depthwise) convolutions as loop nests
(`--no-onednn-conv`) instead of oneDNN's convolution (ungrouped ones are
im2col GEMMs either way), and Loom's step with every loop on one thread
(`--serial-loops`) instead of its outermost parallel loops cut into
chunks for the rank's threads, with the ratio of the two. With
--precision bf16: Loom's --precision=bf16 against torch.autocast("cpu",
bfloat16), both with fp32 weights, and Loom's step with its bf16 products
widened for sgemm (LOOM_ONEDNN=0) instead of oneDNN's bf16 kernels, with
the ratio of the two. Prints the CPU model first.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import warnings
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from forward import MLP, Block  # noqa: E402


def torch_step_seconds(model, xs, ys, steps, precision="fp32"):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")
    def step(i):
        opt.zero_grad()
        with autocast:
            loss = F.mse_loss(model(torch.from_numpy(xs[i])), torch.from_numpy(ys[i]))
        loss.backward()
        opt.step()
    for i in range(2):
        step(i)
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    return (time.perf_counter() - start) / steps


def loom_step_seconds(tools, onnx_path, work, steps, threads, precision="fp32", extra=(),
                      env_extra=None):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), **(env_extra or {}))
    out = os.path.join(work, "out")
    subprocess.run([os.path.join(tools, "loomc"), onnx_path, "--train", "--loss=mse",
                    "--optimizer=adamw", "--lr=1e-4", f"--precision={precision}",
                    # The artifact only: loom-run's compile time is reported.
                    "--emit=mlir", "-o", out],
                   check=True, capture_output=True, env=env)
    run = subprocess.run([os.path.join(tools, "loom-run"), out, "--steps", str(steps),
                          "--data", os.path.join(work, "data"), *extra],
                         check=True, capture_output=True, text=True, env=env).stdout
    m = re.search(r"trained \d+ steps in ([\d.]+) s \(([\d.]+) s/step, compile ([\d.]+) s[,)]", run)
    if not m:
        sys.exit(f"bench/train.py: loom-run printed no step time:\n{run}")
    return float(m.group(2)), float(m.group(3))


def main():
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR", "build"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="bf16: loomc --precision=bf16 against torch.autocast(cpu, bf16)")
    a = p.parse_args()
    tools = os.path.join(a.build, "bin")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    import torchvision
    # name: (model, input shape, output shape)
    models = {"mlp": (MLP(), (256, 1024), (256, 1024)),
              "block": (Block(), (8, 128, 512), (8, 128, 512)),
              "resnet18": (torchvision.models.resnet18(num_classes=10), (32, 3, 32, 32),
                           (32, 10)),
              "mobilenetv2": (torchvision.models.mobilenet_v2(num_classes=10),
                              (32, 3, 32, 32), (32, 10))}
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), "unknown")
    print(f"cpu: {cpu}; threads: {a.threads}, steps: {a.steps}, precision: {a.precision}")
    bf16 = a.precision == "bf16"
    print(f"{'model':8} {'torch s/step':>13} {'loom s/step':>12} {'loom compile s':>15} {'ratio':>7}"
          f" {'loom --libm s/step':>19} {'polynomial / libm':>18}"
          f" {'loom --no-onednn-conv s/step':>29} {'oneDNN / loops':>15}"
          f" {'loom --serial-loops s/step':>27} {'threaded / serial':>18}"
          + (f" {'loom widened s/step':>20} {'oneDNN / widened':>17}" if bf16 else ""))
    for name, (model, shape, out_shape) in models.items():
        with tempfile.TemporaryDirectory() as work:
            xs = rng.standard_normal((a.steps + 2, *shape)).astype(np.float32)
            ys = rng.standard_normal((a.steps + 2, *out_shape)).astype(np.float32)
            data = os.path.join(work, "data")
            os.makedirs(data)
            np.save(os.path.join(data, "x.npy"), xs)
            np.save(os.path.join(data, "labels.npy"), ys)
            path = os.path.join(work, "model.onnx")
            torch.onnx.export(model, torch.from_numpy(xs[0]), path, opset_version=14,
                              input_names=["x"], output_names=["y"],
                              do_constant_folding=False,
                              training=torch.onnx.TrainingMode.TRAINING)
            loom, compile_s = loom_step_seconds(tools, path, work, a.steps, a.threads,
                                                a.precision)
            # The same step with libm's exp/erf/tanh (loom-approximate-math off).
            libm, _ = loom_step_seconds(tools, path, work, a.steps, a.threads, a.precision,
                                        ["--libm"])
            # Grouped convolutions as loop nests instead of oneDNN's.
            gemm = loom_step_seconds(tools, path, work, a.steps, a.threads, a.precision,
                                     ["--no-onednn-conv"])[0] \
                if name in ("resnet18", "mobilenetv2") else None
            # Every loop on the calling thread.
            serial = loom_step_seconds(tools, path, work, a.steps, a.threads, a.precision,
                                       ["--serial-loops"])[0]
            # bf16 products widened for OpenBLAS's sgemm instead of oneDNN.
            widened = loom_step_seconds(tools, path, work, a.steps, a.threads, a.precision,
                                        env_extra={"LOOM_ONEDNN": "0"})[0] if bf16 else None
            try:
                t = torch_step_seconds(model, xs, ys, a.steps, a.precision)
            except RuntimeError as e:  # e.g. torch 1.13 has no bf16 relu6 backward
                print(f"{name}: PyTorch's step failed: {str(e).splitlines()[0]}")
                t = float("nan")
            print(f"{name:8} {t:13.4f} {loom:12.4f} {compile_s:15.2f} {loom / t:7.2f}"
                  f" {libm:19.4f} {loom / libm:18.2f}"
                  + (f" {gemm:29.4f} {loom / gemm:15.2f}" if gemm else f" {'-':>29} {'-':>15}")
                  + f" {serial:27.4f} {loom / serial:18.2f}"
                  + (f" {widened:20.4f} {loom / widened:17.2f}" if bf16 else ""))


if __name__ == "__main__":
    main()
