#!/usr/bin/env python3
"""Planner benchmark: planning time and plan quality for GPT-style models.

For each model (12/24/48/96 layers, hidden 12288, 96 heads, sequence 2048,
bf16, AdamW) and cluster (8, 64, 512, 1024 H100s), compiles the training step
with `loomc --strategy auto --plan-only --compare-megatron` and reports

  * the planning time (graph, candidates, every ILP; pricing the Megatron
    plans is reported apart),
  * Loom's predicted step time and mesh,
  * the best Megatron-style plan: every DP x TP factorization of the devices
    (tensor parallelism over the inner axis, `--strategy dp-tp`), with the best
    rematerialization level, priced by the same cost model,
  * their ratio (goal: <= 1.00 everywhere).

The global batch is one sequence per device (at least 8). Results go to stdout
as a table and, with --json, to a file.

  bench/planner/run.py [--layers 12,24,48,96] [--devices 8,64,512,1024]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def cluster(devices):
    if devices <= 8:
        return "h100-8x" if devices == 8 else f"h100-cluster:1x{devices}"
    return f"h100-cluster:{devices // 8}x8"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", default="12,24,48,96")
    p.add_argument("--devices", default="8,64,512,1024")
    p.add_argument("--hidden", type=int, default=12288)
    p.add_argument("--heads", type=int, default=96)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    loomc = shutil.which("loomc") or os.path.join(ROOT, "build", "bin", "loomc")
    work = tempfile.mkdtemp(prefix="loom-planner-bench-")
    rows = []
    print(f"{'layers':>6} {'devices':>7} {'plan s':>7} {'Loom step':>10} {'mesh':>14} "
          f"{'remat':>5} {'mem GiB':>8} {'Megatron':>10} {'DPxTP':>12} {'ratio':>6}")
    for layers in [int(x) for x in a.layers.split(",")]:
        for devices in [int(x) for x in a.devices.split(",")]:
            model = os.path.join(work, f"gpt{layers}-{devices}.mlir")
            with open(model, "w") as f:
                subprocess.run([sys.executable, os.path.join(HERE, "gpt.py"),
                                "--layers", str(layers), "--hidden", str(a.hidden),
                                "--heads", str(a.heads), "--seq", str(a.seq),
                                "--batch", str(max(8, devices))], stdout=f, check=True)
            t0 = time.time()
            r = subprocess.run([loomc, model, "--train", "--loss=none", "--optimizer=adamw",
                                "--strategy", "auto", "--cluster", cluster(devices),
                                "--plan-only", "--compare-megatron", "--plan-report=json",
                                "-o", os.path.join(work, "out")],
                               capture_output=True, text=True)
            wall = time.time() - t0
            row = {"layers": layers, "devices": devices, "cluster": cluster(devices),
                   "wall_s": wall}
            if r.returncode != 0:
                row["error"] = r.stderr.strip()
                rows.append(row)
                print(f"{layers:>6} {devices:>7} {wall:>7.1f}  no plan fits: "
                      f"{r.stderr.strip().split(': ', 2)[-1][:150]}...")
                continue
            plan = json.loads(r.stdout)
            meg = [m for m in plan["megatron"] if m["feasible"]]
            best = min(meg, key=lambda m: m["step_s"]) if meg else None
            row.update({"planning_s": plan["solver"]["planning_s"],
                        "ilp_s": plan["solver"]["ilp_s"],
                        "megatron_pricing_s": plan["solver"]["megatron_pricing_s"],
                        "step_s": plan["step_s"], "mesh": plan["mesh"],
                        "remat": plan["remat"], "memory": plan["memory"]["total"],
                        "megatron_best": best, "megatron": plan["megatron"],
                        "gap": plan["solver"]["gap"]})
            rows.append(row)
            ratio = plan["step_s"] / best["step_s"] if best else None
            print(f"{layers:>6} {devices:>7} {plan['solver']['planning_s']:>7.1f} "
                  f"{plan['step_s']:>9.3f}s {plan['mesh']:>14} {plan['remat'] * 100:>4.0f}% "
                  f"{plan['memory']['total'] / 2**30:>8.1f} "
                  + (f"{best['step_s']:>9.3f}s {best['mesh']:>12} {ratio:>6.3f}" if best
                     else "none fits (smallest: " + min(
                         (f"{m['memory_bytes'] / 2**30:.0f} GiB with {m['mesh']}"
                          for m in plan["megatron"]), key=lambda x: float(x.split()[0]))
                     + ")"), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    worse = [r for r in rows if r.get("megatron_best") and
             r["step_s"] > r["megatron_best"]["step_s"] * (1 + 1e-9)]
    slow = [r for r in rows if r.get("planning_s", 0) > 60]
    print(f"\n{len(rows)} configurations; Loom slower than the best Megatron plan in "
          f"{len(worse)}; planning over 60 s in {len(slow)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
