#!/usr/bin/env python3
"""The planner's device model against Loom's own measured GPU steps.

For each row of a bench/gpu measurement (measured-<device>-<date>.json,
written by scripts/gpu-check.sh --run with --bench), prices the same model
with `loomc --plan-only --plan-report=json` on one device of the device's
cluster model and prints predicted/measured step time (issue 41's goal:
0.8-1.25 for Loom's steps):

  bench/gpu/predict.py [measured.json ...]     (default: the newest per device)

The GPT rows are bench/planner/gpt.py's model (AdamW), the MLP and ResNet-18
rows bench/gpu/models.py's (bf16: --precision=bf16). Runs here, no GPU.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
# The device models the planner has (loomc --cluster), by measured device.
CLUSTERS = {"H100": "h100-cluster:1x1"}


def cluster_for(device):
    for key, cluster in CLUSTERS.items():
        if key in device:
            return cluster
    return None


def model_command(config, dtype, work):
    """loomc's arguments (before the plan flags) for a row's model."""
    if config.startswith("gpt-"):
        L, H, A, S, B = config[4:].split("x")
        path = os.path.join(work, f"{config}-{dtype}.mlir")
        with open(path, "w") as f:
            subprocess.run([PY, os.path.join(ROOT, "bench/planner/gpt.py"), "--layers", L,
                            "--hidden", H, "--heads", A, "--seq", S, "--batch", B,
                            "--dtype", dtype], stdout=f, check=True)
        return [path, "--train", "--loss=none", "--optimizer=adamw"]
    model = config.split("-")[0]
    onnx = os.path.join(work, model + ".onnx")
    if not os.path.exists(onnx):
        subprocess.run([PY, os.path.join(HERE, "models.py"), "export", model, work],
                       check=True, capture_output=True)
    spec = json.load(open(os.path.join(work, model + ".json")))
    return [onnx, "--train", "--loss=" + spec["loss"], *spec["flags"],
            *(["--precision=bf16"] if dtype == "bf16" else [])]


def main():
    files = sys.argv[1:] or sorted(
        f for f in glob.glob(os.path.join(HERE, "measured-*.json"))
        if os.path.basename(f).count("-") == 4)
    loomc = shutil.which("loomc") or os.path.join(ROOT, "build", "bin", "loomc")
    work = tempfile.mkdtemp(prefix="loom-gpu-predict-")
    ratios = []
    for path in files:
        m = json.load(open(path))
        cluster = cluster_for(m["device"])
        if not cluster:
            print(f"{os.path.basename(path)}: no device model for {m['device']}; skipped\n")
            continue
        print(f"{os.path.basename(path)}: {m['device']}, priced as --cluster {cluster}\n")
        print("| model | dtype | predicted ms | Loom measured ms | predicted / measured |")
        print("|---|---|---|---|---|")
        for r in m["rows"]:
            cmd = [loomc, *model_command(r["config"], r["dtype"], work), "--strategy", "auto",
                   "--cluster", cluster, "--plan-only", "--plan-report=json",
                   "-o", os.path.join(work, "out")]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode:
                print(f"| {r['config']} | {r['dtype']} | loomc failed: "
                      f"{out.stderr.strip()[-200:]} | | |")
                continue
            predicted = json.loads(out.stdout)["step_s"]
            ratio = predicted / r["loom_s"]
            ratios.append((ratio, r["config"], r["dtype"]))
            print(f"| {r['config']} | {r['dtype']} | {predicted * 1e3:.2f} | "
                  f"{r['loom_s'] * 1e3:.2f} | {ratio:.2f} |")
        print()
    inside = [x for x in ratios if 0.8 <= x[0] <= 1.25]
    print(f"{len(inside)} of {len(ratios)} within 0.8-1.25"
          + (": outside " + ", ".join(f"{c} {d} {r:.2f}" for r, c, d in ratios
                                     if not 0.8 <= r <= 1.25) if len(inside) < len(ratios) else ""))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
