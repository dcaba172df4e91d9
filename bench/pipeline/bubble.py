#!/usr/bin/env python3
"""Measured against predicted pipeline bubble, 1F1B and ZB-H1.

A GPT-style stack (--blocks blocks of width --width, sequence --seq,
micro-batch --micro-batch, from PyTorch through ONNX) is compiled with
`loomc --mesh pp=P --strategy replicated --schedule S --micro-batches M`
and trained with `loom-run -np P --steps N --trace --profile` on seeded
synthetic data. For each schedule and M the benchmark reports the bubble
fraction (the idle share of each rank's time between the step's first and
last compute action, averaged over ranks and steps after the first):

  theory     1F1B (p-1)/(m+p-1); ZB-H1 (p-1)/(3m+p-1) (Qi et al. 2023,
             F = I = W)
  unit       the schedule simulated with unit times (F 1, B 2, I = W = 1):
             what loomc prints, and what the theory formulas give
  simulated  the same action lists simulated with each stage's mean
             measured F, B, I, W times and no transfer time
  measured   from the per-rank trace

and the ratio measured / simulated: what the runtime adds to the schedule
(transfers, waiting on them, per-action overhead). Two ranks by default:
this machine has two cores, and more ranks than cores would measure the
operating system's scheduler, not the pipeline.

  bench/pipeline/bubble.py [--ranks 2] [--micro-batches 4,8,16] [--json out.json]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e", "Inputs"))


def tool(name):
    return shutil.which(name) or os.path.join(ROOT, "build", "bin", name)


def export(path, a, m):
    # --micro-batches splits the model's batch: m micro-batches of
    # --micro-batch samples.
    import torch
    from train_vs_pytorch import TrainBlock
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[TrainBlock(d=a.width, heads=4, seq=a.seq)
                                  for _ in range(a.blocks)])
    x = torch.randn(a.micro_batch * m, a.seq, a.width)
    torch.onnx.export(model, x, path, opset_version=14, input_names=["x"],
                      output_names=["y"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)


def run_one(model, work, schedule, m, a):
    out = os.path.join(work, f"{schedule}-{m}")
    subprocess.run([tool("loomc"), model, "--train", "--loss=mse", "--optimizer=adamw",
                    "--mesh", f"pp={a.ranks}", "--strategy", "replicated",
                    f"--schedule={schedule}", f"--micro-batches={m}", "-o", out],
                   check=True, capture_output=True)
    trace = os.path.join(work, f"{schedule}-{m}.json")
    r = subprocess.run([tool("loom-run"), "-np", str(a.ranks), out, "--steps", str(a.steps),
                        "--trace", trace, "--profile"], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"loom-run failed:\n{r.stdout}\n{r.stderr}")
    measured = float(re.search(r"measured bubble fraction ([0-9.]+)", r.stdout).group(1))
    sim = re.search(r"in simulation: ([0-9.]+) with each stage's measured action times, "
                    r"([0-9.]+) with unit times", r.stdout)
    # Step time: the slowest rank's step span, steps after the first.
    spans = {}
    for e in json.load(open(trace))["traceEvents"]:
        if e.get("cat") == "step" and e["args"]["step"] > 0:
            s = e["args"]["step"]
            spans[s] = max(spans.get(s, 0), e["dur"])
    step = sum(spans.values()) / len(spans) / 1e3
    p = a.ranks
    theory = (p - 1) / (m + p - 1) if schedule == "1f1b" else (p - 1) / (3 * m + p - 1)
    return {"schedule": schedule, "ranks": p, "micro_batches": m, "theory": theory,
            "unit": float(sim.group(2)), "simulated": float(sim.group(1)),
            "measured": measured, "step_ms": step}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--micro-batches", default="4,8,16")
    p.add_argument("--schedules", default="1f1b,zb-h1")
    p.add_argument("--blocks", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="loom-bubble-")
    print(f"GPT-style stack: {a.blocks} blocks, width {a.width}, sequence {a.seq}, "
          f"micro-batch {a.micro_batch}; pp={a.ranks}, {a.steps} steps (the first left out)")
    print(f"{'schedule':8} {'m':>3} {'theory':>7} {'unit':>7} {'simulated':>9} "
          f"{'measured':>8} {'meas/sim':>8} {'step ms':>8}")
    rows = []
    for schedule in a.schedules.split(","):
        for m in (int(x) for x in a.micro_batches.split(",")):
            model = os.path.join(work, f"model-{m}.onnx")
            if not os.path.exists(model):
                export(model, a, m)
            r = run_one(model, work, schedule, m, a)
            rows.append(r)
            print(f"{schedule:8} {m:3d} {r['theory']:7.3f} {r['unit']:7.3f} "
                  f"{r['simulated']:9.3f} {r['measured']:8.3f} "
                  f"{r['measured'] / max(r['simulated'], 1e-9):8.2f} {r['step_ms']:8.1f}")
    by = {(r["schedule"], r["micro_batches"]): r for r in rows}
    for m in (int(x) for x in a.micro_batches.split(",")):
        if ("1f1b", m) in by and ("zb-h1", m) in by:
            one, zb = by[("1f1b", m)], by[("zb-h1", m)]
            print(f"m={m}: ZB-H1 / 1F1B bubble: measured {zb['measured'] / one['measured']:.2f}, "
                  f"simulated {zb['simulated'] / max(one['simulated'], 1e-9):.2f}; "
                  f"step time {zb['step_ms'] / one['step_ms']:.2f}")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
