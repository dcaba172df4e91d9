#!/usr/bin/env python3
"""Rematerialization lowers the memory a step really holds, as planned.

    remat_memory.py WORK [--layers 4] [--steps 2]

Exports a stack of LAYERS GPT blocks (train_vs_pytorch.TrainBlock, batch 4
x 16 x 64) from PyTorch, plans it with loomc on one device (--mesh dp=1
--strategy auto) twice, with --remat=none and --remat=layers, trains each
for a few steps with loom-run and compares:

- measured: loom-run's "peak memory" line, the temporaries' high-water mark
  (every buffer the compiled step allocated: activations and gradients);
- predicted: the plan's activations + gradients (--plan-report=json).

Prints one line per program and a verdict; exits 1 unless remat lowers the
measured peak and every measured/predicted ratio lies in [0.67, 1.5].
"""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from train_vs_pytorch import TrainBlock  # noqa: E402

MIB = 1 << 20


def main():
    p = argparse.ArgumentParser()
    p.add_argument("work")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--steps", type=int, default=2)
    a = p.parse_args()
    torch.manual_seed(0)
    os.makedirs(a.work, exist_ok=True)
    model = torch.nn.Sequential(*[TrainBlock() for _ in range(a.layers)])
    x = torch.randn(4, 16, 64)
    onnx_path = os.path.join(a.work, "model.onnx")
    torch.onnx.export(model, x, onnx_path, opset_version=14, input_names=["x"],
                      output_names=["y"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    rows = {}
    for remat in ["none", "layers"]:
        out = os.path.join(a.work, remat)
        plan = subprocess.run(
            ["loomc", onnx_path, "--train", "--loss=mse", "--optimizer=sgd", "--lr=1e-3",
             "--mesh", "dp=1", "--strategy", "auto", f"--remat={remat}",
             "--plan-report=json", "-o", out], capture_output=True, text=True)
        if plan.returncode != 0:
            print(plan.stdout, plan.stderr)
            return 1
        report = json.loads(plan.stdout)
        predicted = report["memory"]["activations"] + report["memory"]["gradients"]
        run = subprocess.run(["loom-run", out, "--steps", str(a.steps)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout, run.stderr)
            return 1
        m = re.search(r"peak memory rank 0: ([\d.]+) MiB = .* temporaries ([\d.]+)", run.stdout)
        if not m:
            print("no peak memory line in:\n" + run.stdout)
            return 1
        measured = float(m.group(2)) * MIB
        recomputed = open(os.path.join(out, "train.mlir")).read().count("loom.recomputed")
        rows[remat] = (measured, predicted)
        print(f"remat {remat:6s}: {recomputed:3d} recomputed ops, peak {m.group(1)} MiB, "
              f"temporaries measured {measured / MIB:.3f} MiB, predicted activations + "
              f"gradients {predicted / MIB:.3f} MiB, ratio {measured / predicted:.2f}")
    (m0, p0), (m1, p1) = rows["none"], rows["layers"]
    ok = m1 < m0 and all(0.67 <= m / p <= 1.5 for m, p in rows.values())
    print(f"{'PASS' if ok else 'FAIL'}: {a.layers} layers, remat lowers the measured "
          f"temporaries {m0 / MIB:.3f} -> {m1 / MIB:.3f} MiB ({m1 / m0:.2f}x; predicted "
          f"{p1 / p0:.2f}x)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
