#!/usr/bin/env python3
"""Gradient compression benchmark: bytes sent and convergence vs uncompressed.

    bench/compression.py [--build build] [--steps 200] [--ranks 4]
                         [--strategy dp|zero3]

An MLP (256 -> 512 -> 512 -> 10, ReLU) learns a fixed random teacher's
labels with AdamW (lr 1e-3), batch 64, data parallel over --ranks CPU ranks
(mpirun), once uncompressed and once with each --grad-compression. For each
run: the gradient-reduction bytes per step as the planner reports them
(all-reduce and reduce-scatter, per device) and as the run's --profile
measures them (buffer bytes, all ranks), the loss of the last 10 steps, and
the ratio of both to the uncompressed run, measured in the same invocation.
Exits 1 if a compressed run's final loss is more than --tolerance (relative)
above the uncompressed one's.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "e2e", "Inputs"))
from e2e_util import export_with_data  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512),
                                 nn.ReLU(), nn.Linear(512, 10))

    def forward(self, x):
        return self.net(x)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--strategy", default="dp", choices=["dp", "zero3"])
    p.add_argument("--tolerance", type=float, default=0.02)
    a = p.parse_args()
    bin_dir = os.path.abspath(os.path.join(a.build, "bin"))
    work = tempfile.mkdtemp(prefix="loom-compression-")

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    teacher = rng.standard_normal((256, 10)).astype(np.float32)
    xs = rng.standard_normal((a.steps, 64, 256)).astype(np.float32)
    ys = np.argmax(xs @ teacher, axis=-1).astype(np.int64)
    onnx_path, data = export_with_data(Net(), xs, ys, work)

    rows = []
    for c in ("none", "fp16", "bf16"):
        out = os.path.join(work, c)
        text = run([os.path.join(bin_dir, "loomc"), onnx_path, "--train",
                    "--loss=cross_entropy", "--optimizer=adamw", "--lr=1e-3", "--mesh",
                    f"dp={a.ranks}", "--strategy", a.strategy, f"--grad-compression={c}",
                    "--plan-report=json", "-o", out])
        plan = json.loads(text[text.index("{"):text.rindex("}") + 1])
        planned = sum(x["bytes"] * x["count"] for x in plan["collectives"]
                      if x["kind"] in ("all_reduce", "reduce_scatter"))
        log = run([os.path.join(bin_dir, "loom-run"), "-np", str(a.ranks), out, "--steps",
                   str(a.steps), "--data", data, "--profile"])
        measured = sum(int(m.group(1)) for m in re.finditer(
            r"(?:all_reduce|reduce_scatter) over \[dp\]\s+\d+ calls\s+(\d+) B", log))
        losses = [float(l.split()[3]) for l in log.splitlines() if l.startswith("step ")]
        rows.append((c, planned, measured / a.steps, losses[0], float(np.mean(losses[-10:]))))

    base = rows[0]
    print(f"MLP 256-512-512-10, batch 64, AdamW, {a.strategy} on {a.ranks} CPU ranks, "
          f"{a.steps} steps")
    print("| compression | reduced bytes/step, planned (per device) | ratio | measured "
          "(buffers, all ranks) | ratio | first loss | last-10 loss | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    ok = True
    for c, planned, measured, first, last in rows:
        print(f"| {c} | {planned:.0f} | {planned / base[1]:.3f} | {measured:.0f} | "
              f"{measured / base[2]:.3f} | {first:.4f} | {last:.4f} | {last / base[4]:.4f} |")
        ok &= last <= base[4] * (1 + a.tolerance)
    print(f"{'PASS' if ok else 'FAIL'}: compressed final losses within {a.tolerance:.0%} "
          f"of uncompressed ({base[4]:.4f})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
