#!/usr/bin/env python3
"""Training a model held in bf16 or f16 (examples/mlp.mlir retyped).

    low_precision.py WORK

Compiles the MLP in f32, bf16 and f16 (AdamW; f16 with eps 1e-4, since
1e-8 is 0 in f16 and loomc refuses it), trains each 5 steps on the same
seeded synthetic data and requires finite losses, bf16's within 2% of
f32's at every step (pure low-precision training: parameters, optimizer
state and compute in the model's type; fp32 master weights are not
implemented yet, and pure f16 Adam drifts from f32: see below).
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MLP = os.path.join(HERE, "..", "..", "..", "examples", "mlp.mlir")


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    text = open(MLP).read()
    runs = {}
    for dtype, extra in (("f32", []), ("bf16", []), ("f32-eps", ["--eps=1e-4"]),
                         ("f16", ["--eps=1e-4"])):
        model = os.path.join(work, f"mlp-{dtype}.mlir")
        open(model, "w").write(text.replace("f32", dtype.split("-")[0]))
        out = os.path.join(work, dtype)
        subprocess.run(["loomc", model, "--train", "--loss=none", "--optimizer=adamw",
                        "--lr=1e-3", "--strategy", "none", *extra, "-o", out],
                       check=True, capture_output=True)
        r = subprocess.run(["loom-run", out, "--steps", "5", "--seed", "3"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: {dtype}: {r.stdout}{r.stderr}")
            return 1
        runs[dtype] = [float(l.split()[3]) for l in r.stdout.splitlines()
                       if l.startswith("step ")]
    ok = True
    for dtype, ref in (("bf16", "f32"), ("f16", "f32-eps")):
        rel = max(abs(a - b) / abs(a) for a, b in zip(runs[ref], runs[dtype]))
        # Pure f16 Adam only has to stay finite: its second moment (g^2
        # times 1 - beta2) underflows f16, so it drifts from f32 (25% in 5
        # steps here); fp32 master state is the fix, not implemented yet.
        ok &= len(runs[dtype]) == 5 and all(abs(l) < 1e30 for l in runs[dtype])
        if dtype == "bf16":
            ok &= rel <= 0.02
        print(f"{dtype}: 5 steps, losses {' '.join(f'{l:.4f}' for l in runs[dtype])}; "
              f"max rel difference from f32 (eps {'1e-4' if dtype == 'f16' else '1e-8'}) "
              f"{rel:.1e}" + (" (limit 2e-2)" if dtype == "bf16" else " (finite: no limit)"))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
