#!/usr/bin/env python3
"""Planner benchmark with pipeline stages in the search.

For each model (GPT-style, hidden 12288, 96 heads, sequence 2048, AdamW;
bf16 weights, gradients and moments as the step holds them: 8 bytes per
parameter, or with --precision=bf16 f32 weights trained in bf16: fp32
master weights and moments, 16 bytes per parameter)
and cluster, plans the training step with

  loomc --strategy auto --plan-only --plan-stages=0 --micro-batches M
        --compare-megatron

once per micro-batch size b (the model's batch is the global batch, split
into M = global batch / b micro-batches), and
reports, for the best micro-batch size:

  * planning time (per loomc call, and summed over the micro-batch sizes),
  * Loom's choice: pp, the sub-mesh (dp, tp), M, schedule, remat, predicted
    step time and the largest stage's memory,
  * the best Megatron-style 3-D plan over every (pp, dp, tp <= 8) and every
    micro-batch size tried (layers split evenly, 1F1B, ZeRO-1), priced by
    the same cost model, and the ratio (goal <= 1.00).

  bench/planner/pipeline.py                   # GPT-3 175B on 1024 H100s
  bench/planner/pipeline.py --layers 12,24,48,96 --devices 64,512,1024

The micro-batch sizes tried are --micro-batch-sizes (default 8,16,32: SC21
trains GPT-3 with one sequence per data-parallel replica, i.e. b = dp).
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
sys.path.insert(0, HERE)
from run import cluster  # noqa: E402  (the same cluster names as the DP x TP benchmark)


def plan_one(loomc, work, layers, devices, b, global_batch, a):
    model = os.path.join(work, f"gpt{layers}-b{b}.mlir")
    with open(model, "w") as f:
        subprocess.run([sys.executable, os.path.join(HERE, "gpt.py"), "--layers", str(layers),
                        "--hidden", str(a.hidden), "--heads", str(a.heads), "--seq", str(a.seq),
                        "--batch", str(global_batch),
                        "--dtype", "f32" if a.precision else "bf16"], stdout=f, check=True)
    t0 = time.time()
    r = subprocess.run([loomc, model, "--train", "--loss=none", "--optimizer=adamw",
                        "--strategy", "auto", "--cluster", cluster(devices), "--plan-only",
                        "--plan-stages=0", f"--micro-batches={global_batch // b}",
                        "--compare-megatron", "--plan-report=json"]
                       + ([f"--precision={a.precision}"] if a.precision else [])
                       + ["-o", os.path.join(work, "out")], capture_output=True, text=True)
    wall = time.time() - t0
    if r.returncode != 0:
        return {"b": b, "wall_s": wall, "error": r.stderr.strip()[-300:]}
    return {"b": b, "wall_s": wall, "plan": json.loads(r.stdout)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", default="96")
    p.add_argument("--devices", default="1024")
    p.add_argument("--global-batch", type=int, default=1536)
    p.add_argument("--micro-batch-sizes", default="8,16,32")
    p.add_argument("--hidden", type=int, default=12288)
    p.add_argument("--heads", type=int, default=96)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--precision", default="",
                   help="bf16: f32 weights trained in bf16 (fp32 master weights and Adam "
                        "moments, 16 bytes per parameter, as Megatron's recipe); default: "
                        "bf16 weights, gradients and moments (8 bytes per parameter)")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    loomc = shutil.which("loomc") or os.path.join(ROOT, "build", "bin", "loomc")
    work = tempfile.mkdtemp(prefix="loom-pipeline-bench-")
    rows = []
    print(f"{'layers':>6} {'dev':>5} {'plan s':>12} {'Loom step':>10} {'mesh':>18} {'M':>4} "
          f"{'sched':>6} {'mem GiB':>8} {'Megatron':>10} {'3-D':>18} {'M':>4} {'ratio':>6}")
    for layers in [int(x) for x in a.layers.split(",")]:
        for devices in [int(x) for x in a.devices.split(",")]:
            runs = [plan_one(loomc, work, layers, devices, b, a.global_batch, a)
                    for b in (int(x) for x in a.micro_batch_sizes.split(","))
                    if a.global_batch % b == 0]
            ok = [r for r in runs if "plan" in r]
            row = {"layers": layers, "devices": devices, "runs": [
                {k: v for k, v in r.items() if k != "plan"} for r in runs]}
            if not ok:
                print(f"{layers:>6} {devices:>5} no plan fits: {runs[-1]['error']}")
                rows.append(row)
                continue
            best = min(ok, key=lambda r: r["plan"]["step_s"])
            plan = best["plan"]
            megs = [(m, r["b"]) for r in ok for m in r["plan"]["megatron"] if m["feasible"]]
            meg, mb = min(megs, key=lambda x: x[0]["step_s"]) if megs else (None, None)
            per_call = max(r["plan"]["solver"]["planning_s"] for r in ok)
            total = sum(r["plan"]["solver"]["planning_s"] for r in ok)
            pipe = plan["pipeline"]
            row.update({"planning_s_max_call": per_call, "planning_s_total": total,
                        "mesh": plan["mesh"], "micro_batches": pipe["micro_batches"],
                        "micro_batch_size": best["b"], "schedule": pipe["schedule"],
                        "remat": plan["remat"], "step_s": plan["step_s"],
                        "memory_bytes": plan["memory"]["total"], "first_layer": pipe["first_layer"],
                        "bubble": pipe["bubble"]})
            if meg:
                row.update({"megatron_mesh": meg["mesh"], "megatron_step_s": meg["step_s"],
                            "megatron_micro_batches": a.global_batch // mb,
                            "ratio": plan["step_s"] / meg["step_s"]})
            rows.append(row)
            print(f"{layers:>6} {devices:>5} {per_call:>5.1f}/{total:>5.1f} "
                  f"{plan['step_s']:>9.3f}s {plan['mesh']:>18} {pipe['micro_batches']:>4} "
                  f"{pipe['schedule']:>6} {plan['memory']['total'] / 2**30:>8.1f} "
                  + (f"{meg['step_s']:>9.3f}s {meg['mesh']:>18} {a.global_batch // mb:>4} "
                     f"{row['ratio']:>6.3f}" if meg else "  (no Megatron 3-D plan fits)"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
