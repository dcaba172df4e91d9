#!/usr/bin/env python3
"""The H100 device model against an H100: predicted and measured step time
and memory of GPT training steps on one GPU.

The measurement comes from gpt_step.py run on an H100 (it needs a GPU, this
machine has none); its JSON output is kept here as measured-h100-<dtype>.json
with the device and PyTorch version it ran with. This script prices the same
models (bench/planner/gpt.py, AdamW) with `loomc --strategy auto --cluster
h100-cluster:1x1 --plan-only --plan-report=json` and prints, per model, the
predicted/measured ratios of step time and of peak memory.

  bench/h100/run.py [measured-h100-bf16.json measured-h100-f32.json ...]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    files = sys.argv[1:] or [os.path.join(HERE, f"measured-h100-{t}.json")
                             for t in ("bf16", "f32")]
    loomc = shutil.which("loomc") or os.path.join(ROOT, "build", "bin", "loomc")
    work = tempfile.mkdtemp(prefix="loom-h100-bench-")
    print("| dtype | layers x hidden x heads x seq x batch | predicted ms | measured ms "
          "| ratio | predicted GiB | measured GiB | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for path in files:
        m = json.load(open(path))
        for c in m["configs"]:
            model = os.path.join(work, "gpt.mlir")
            with open(model, "w") as f:
                subprocess.run([sys.executable, os.path.join(ROOT, "bench", "planner", "gpt.py"),
                                "--layers", str(c["layers"]), "--hidden", str(c["hidden"]),
                                "--heads", str(c["heads"]), "--seq", str(c["seq"]),
                                "--batch", str(c["batch"]), "--vocab", str(m["vocab"]),
                                "--dtype", m["dtype"]], stdout=f, check=True)
            r = subprocess.run([loomc, model, "--train", "--loss=none", "--optimizer=adamw",
                                "--strategy", "auto", "--cluster", "h100-cluster:1x1",
                                "--plan-only", "--plan-report=json",
                                "-o", os.path.join(work, "out")],
                               capture_output=True, text=True, check=True)
            p = json.loads(r.stdout)
            t, mem = p["step_s"] / c["step_s"], p["memory"]["total"] / c["peak_bytes"]
            ratios += [t, mem]
            print(f"| {m['dtype']} | {c['config']} | {p['step_s'] * 1e3:.2f} | "
                  f"{c['step_s'] * 1e3:.2f} | {t:.2f} | {p['memory']['total'] / 2**30:.2f} | "
                  f"{c['peak_bytes'] / 2**30:.2f} | {mem:.2f} |")
        print(f"\n{path}: measured on {m['device']} (PyTorch {m['torch']}); "
              f"streaming bandwidth {m['bandwidth'] / 1e12:.2f} TB/s; matrix products "
              f"{min(x['flops_per_s'] for x in m['matmul']) / 1e12:.0f}-"
              f"{max(x['flops_per_s'] for x in m['matmul']) / 1e12:.0f} TFLOP/s\n")
    inside = sum(0.67 <= r <= 1.5 for r in ratios)
    print(f"{inside} of {len(ratios)} ratios within 0.67-1.5")
    return 0 if inside == len(ratios) else 1


if __name__ == "__main__":
    sys.exit(main())
