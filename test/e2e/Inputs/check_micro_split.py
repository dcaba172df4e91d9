#!/usr/bin/env python3
"""A step of K micro-batches equals the step on the whole batch.

    check_micro_split.py NAME MODEL.onnx|MODEL.mlir LOSS K WORKDIR

Imports MODEL (ONNX; loom IR is read as is), adds LOSS and builds an SGD-momentum step twice with loom-opt:
once on the whole batch, once with the loss function made the template of
one of K micro-batches (loom-split-micro-batches) and K micro-batches per
step. Both train 3 steps on the same synthetic data (the split step's
input is the whole batch's, viewed as K consecutive micro-batches: the
same values). Losses must agree to 2e-6 relative and the parameters to
2e-6 absolute: f32 rounding, the sums being taken in another order. (Not
Adam: the attention's key bias has a gradient of exactly zero in exact
arithmetic (softmax ignores a constant per query), so its f32 gradient is
rounding noise, which Adam divides by its own size: +-lr per step either
way.)
Prints one line; exits 1 on a difference."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_util import fail, losses, run  # noqa: E402


def main():
    name, model, loss, k, work = sys.argv[1:6]
    os.makedirs(work, exist_ok=True)
    module = os.path.join(work, name + ".mlir")
    if model.endswith(".mlir"):
        module = model
    else:
        run(["loom-translate", "--import-onnx", model, "-o", module])
    outs = {}
    for count in ("1", k):
        art = os.path.join(work, f"{name}-{count}")
        os.makedirs(art, exist_ok=True)
        run(["loom-opt", module, "--loom-annotate-index-bounds",
             f"--loom-add-loss=loss={loss}",
             f"--loom-split-micro-batches=count={count}",
             f"--loom-build-train-step=optimizer=sgd lr=0.1 momentum=0.9 micro-batches={count}",
             "--canonicalize", "--cse", "-o", os.path.join(art, "train.mlir")])
        params = os.path.join(art, "params-out")
        text = run(["loom-run", art, "--steps", "3", "--data", "synthetic", "--no-cache",
                    "--params-out", params])
        outs[count] = (losses(text), {f: np.load(os.path.join(params, f))
                                      for f in sorted(os.listdir(params))})
    (l1, p1), (lk, pk) = outs["1"], outs[k]
    if len(l1) != 3 or len(lk) != 3:
        fail(f"{name}: expected 3 losses, got {l1} and {lk}")
    rel = max(abs(a - b) / abs(a) for a, b in zip(l1, lk))
    diff = max(float(np.max(np.abs(p1[f] - pk[f]))) for f in p1)
    if rel > 2e-6 or diff > 2e-6:
        fail(f"{name}: {k} micro-batches: losses {lk} vs {l1} ({rel:.1e}), "
             f"parameters {diff:.1e}")
    print(f"{name}: {k} micro-batches equal the whole batch: losses within {rel:.1e} "
          f"relative, parameters within {diff:.1e} ({len(p1)} tensors)")


if __name__ == "__main__":
    main()
