#!/usr/bin/env python3
"""Cost-model benchmark: the planner's predictions against measured runs.

For each model (a GPT block and a 4-block stack from bench/planner/gpt.py at
hidden 128, f32, and a two-layer MLP 784 -> 512 -> 16 at batch 64, as
examples/mlp.mlir without its mesh) and each configuration on 4 CPU
ranks (or --ranks 2), compiles the training step with loomc and trains it
with loom-run (-np 4), then reports

  * predicted step time and per-device memory (loomc --plan-report=json,
    cluster cpu-local:4, whose measurement of this CPU is cached so plans are
    reproducible),
  * measured step time (loom-run --profile: the median over the steps after
    the first of the slowest rank's step time)
    and peak memory (loom-run: the largest rank's parameters, optimizer
    state, inputs, result buffers and temporaries' high-water mark),
  * their ratios, the Spearman rank correlation of predicted and measured
    step times over the priced configurations of each model, and whether the
    planner's own choice (auto, free mesh) measured fastest or within 10 %.

Configurations: --strategy auto on the fixed meshes dp=4, tp=4, dp=2,tp=2
and on the mesh the planner chooses, and the presets dp, tp, dp-tp and
zero3 (the planner prices presets as plans too). Each rank's BLAS runs on
one thread (a cpu-local device is one core). --ranks 2: the same on 2 ranks
(dp=2, tp=2, chosen; dp, tp, zero3), one rank per core on a 2-core machine.

First, `loom-run --calibrate -np N` measures this machine again (one core's
SGEMM and memory bandwidth, the executor's cost per op, what an all-reduce
adds to a step on N ranks and each rank's share of a core: cpu-local:N),
unless --no-calibrate.

  bench/cost-model/run.py [--steps 30] [--json out.json] [--models block,stack4,mlp]
                          [--no-calibrate] [--ranks 4|2]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(ROOT, "build", "bin")

CONFIGS = [("auto", "dp=4"), ("auto", "tp=4"), ("auto", "dp=2,tp=2"), ("auto", None),
           ("dp", "dp=4"), ("tp", "tp=4"), ("dp-tp", "dp=2,tp=2"), ("zero3", "dp=4")]
# --ranks 2: one rank per core on a 2-core machine (no mesh of two axes).
CONFIGS_2 = [("auto", "dp=2"), ("auto", "tp=2"), ("auto", None), ("dp", "dp=2"),
             ("tp", "tp=2"), ("zero3", "dp=2")]


MLP = """loom.parameter @"fc1.weight" : tensor<784x512xf32> trainable
loom.parameter @"fc2.weight" : tensor<512x16xf32> trainable
func.func @forward(%x: tensor<64x784xf32> {loom.name = "x"},
                   %labels: tensor<64xi64> {loom.name = "labels", loom.index_bound = 16},
                   %w1: tensor<784x512xf32> {loom.param = @"fc1.weight"},
                   %w2: tensor<512x16xf32> {loom.param = @"fc2.weight"}) -> tensor<f32> {
  %h = loom.dot_general %x, %w1 contracting_dims = [1] x [0] : (tensor<64x784xf32>, tensor<784x512xf32>) -> tensor<64x512xf32>
  %a = loom.relu %h : tensor<64x512xf32>
  %o = loom.dot_general %a, %w2 contracting_dims = [1] x [0] : (tensor<64x512xf32>, tensor<512x16xf32>) -> tensor<64x16xf32>
  %loss = loom.cross_entropy %o, %labels reduction = mean : (tensor<64x16xf32>, tensor<64xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
"""


def models(work, names):
    out = {}
    for name, layers in (("block", 1), ("stack4", 4)):
        if name not in names:
            continue
        path = os.path.join(work, name + ".mlir")
        with open(path, "w") as f:
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "planner", "gpt.py"),
                            "--layers", str(layers), "--hidden", "128", "--heads", "4",
                            "--seq", "32", "--batch", "16", "--vocab", "512", "--dtype", "f32"],
                           stdout=f, check=True)
        out[name] = path
    if "mlp" in names:
        out["mlp"] = os.path.join(work, "mlp.mlir")
        with open(out["mlp"], "w") as f:
            f.write(MLP)
    return out


# A cpu-local device is one core: each rank's BLAS runs on one thread.
ONE_CORE = dict(os.environ, OPENBLAS_NUM_THREADS="1")


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(" ".join(cmd) + "\n" + r.stdout[-2000:] + r.stderr[-2000:])
    return r.stdout


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for k, i in enumerate(order):
            r[i] = k
        return r
    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    if n < 2:
        return float("nan")
    d2 = sum((a - b) ** 2 for a, b in zip(rx, ry))
    return 1 - 6 * d2 / (n * (n * n - 1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--json", default=None)
    p.add_argument("--models", default="block,stack4,mlp")
    p.add_argument("--no-calibrate", action="store_true")
    p.add_argument("--ranks", type=int, default=4, choices=[2, 4])
    a = p.parse_args()
    if not a.no_calibrate:
        print(run([os.path.join(BIN, "loom-run"), "--calibrate", "-np", str(a.ranks)]),
              flush=True)
    work = tempfile.mkdtemp(prefix="loom-cost-model-")
    rows = []
    for model, path in models(work, a.models.split(",")).items():
        loss = ["--loss=none"]  # every model computes its own loss
        for strategy, mesh in (CONFIGS if a.ranks == 4 else CONFIGS_2):
            out = os.path.join(work, f"{model}-{strategy}-{mesh or 'free'}")
            cmd = [os.path.join(BIN, "loomc"), path, "--train", *loss, "--optimizer=adamw",
                   "--strategy", strategy, "--cluster", f"cpu-local:{a.ranks}", "-o", out]
            if mesh:
                cmd += ["--mesh", mesh]
            row = {"model": model, "strategy": strategy, "mesh": mesh or "chosen",
                   "free": mesh is None}
            try:
                plan = json.loads(run(cmd + ["--plan-report=json"]))
                row["mesh"] = plan["mesh"] if not mesh else mesh
                row["predicted_s"] = plan["step_s"]
                row["predicted_mem"] = plan["memory"]["total"]
                text = run([os.path.join(BIN, "loom-run"), out, "-np", str(a.ranks), "--steps",
                            str(a.steps), "--profile"], env=ONE_CORE)
            except RuntimeError as e:
                row["error"] = str(e).splitlines()[-1][:120]
                rows.append(row)
                print(f"{model:7s} {strategy:6s} {row['mesh']:10s} failed: {row['error']}")
                continue
            # The median over steps after the first (the slowest rank's
            # time per step, loom-run --profile): 4 ranks share 2 cores
            # here, and single steps stall when the OS runs another rank.
            steps = [float(ms) / 1e3 for ms in re.findall(r"^  step \d+: ([\d.]+) ms", text, re.M)]
            steps = steps[1:]
            row["measured_s"] = sorted(steps)[len(steps) // 2]
            peaks = [float(x) for x in re.findall(r"peak memory rank \d+: ([\d.]+) MiB", text)]
            row["measured_mem"] = max(peaks) * (1 << 20)
            rows.append(row)
            pred = f"{row['predicted_s'] * 1e3:8.2f} ms {row['predicted_mem'] / 2**20:6.2f} MiB"
            print(f"{model:7s} {strategy:6s} {row['mesh']:10s} predicted {pred}  measured "
                  f"{row['measured_s'] * 1e3:8.2f} ms {row['measured_mem'] / 2**20:6.2f} MiB",
                  flush=True)
    print()
    print("| model | strategy | mesh | predicted ms | measured ms | time ratio (meas/pred) "
          "| predicted MiB | measured MiB | memory ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "measured_s" not in r:
            print(f"| {r['model']} | {r['strategy']} | {r['mesh']} | failed: {r['error']} |||||")
            continue
        print(f"| {r['model']} | {r['strategy']} | {r['mesh']} | {r['predicted_s'] * 1e3:.2f} | "
              f"{r['measured_s'] * 1e3:.2f} | {r['measured_s'] / r['predicted_s']:.2f} | "
              f"{r['predicted_mem'] / 2**20:.2f} | {r['measured_mem'] / 2**20:.2f} | "
              f"{r['measured_mem'] / r['predicted_mem']:.2f} |")
    print()
    for model in dict.fromkeys(r["model"] for r in rows):
        measured = [r for r in rows if r["model"] == model and "measured_s" in r]
        fixed = [r for r in measured if not r["free"]]
        rho = spearman([r["predicted_s"] for r in fixed], [r["measured_s"] for r in fixed])
        line = (f"{model}: Spearman rank correlation of predicted and measured step times over "
                f"the fixed-mesh configurations {rho:.2f} (n={len(fixed)})")
        auto = next((r for r in measured if r["free"]), None)
        if auto and measured:
            best = min(measured, key=lambda r: r["measured_s"])
            line += (f"; the planner's choice ({auto['mesh']}) measured "
                     f"{auto['measured_s'] * 1e3:.2f} ms = {auto['measured_s'] / best['measured_s']:.2f}x "
                     f"the fastest ({best['strategy']} on {best['mesh']}, "
                     f"{best['measured_s'] * 1e3:.2f} ms)")
        print(line)
    priced = [r for r in rows if "measured_s" in r]
    within = lambda xs: sum(1 for x in xs if 0.67 <= x <= 1.5)
    print(f"time ratios within 0.67-1.5: "
          f"{within([r['measured_s'] / r['predicted_s'] for r in priced])} of {len(priced)}; "
          f"memory ratios: {within([r['measured_mem'] / r['predicted_mem'] for r in priced])} "
          f"of {len(priced)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
