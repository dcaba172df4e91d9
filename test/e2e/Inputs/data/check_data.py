#!/usr/bin/env python3
"""Training data: epochs, shuffling, per-rank reads, progress.

    check_data.py WORK

The MLP (from PyTorch) with a data file of 3 entries trained for 6 steps:

  wrap      the run equals (bit for bit) one on a file holding the 3
            entries twice: epochs wrap instead of failing;
  shuffle   with lr 1e-30 (below every weight's ulp) each step's loss names its entry: under --shuffle
            every epoch is a permutation of the 3 entries, not all epochs
            are in file order, and another seed gives another order;
  ranks     dp=4 ZeRO-3 with --shuffle equals one device with --shuffle
            (1e-5), each rank copies exactly a quarter of every entry it
            reads, and a shuffled run resumed from its step-3 checkpoint is
            bit-identical to the uninterrupted one;
  progress  --progress prints steps/s, samples/s and an ETA.
"""

import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Target", "ONNX", "Inputs"))
sys.path.insert(0, os.path.join(HERE, ".."))
from export_torch_models import MLP  # noqa: E402
from e2e_util import export_onnx, fail, losses, run  # noqa: E402

STEPS = 6


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((3, 8, 32)).astype(np.float32)
    ys = rng.integers(0, 10, size=(3, 8)).astype(np.int64)
    onnx_path = os.path.join(work, "model.onnx")
    export_onnx(MLP(), xs[0], onnx_path)
    three, six = os.path.join(work, "three"), os.path.join(work, "six")
    for d, reps in ((three, 1), (six, 2)):
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "x.npy"), np.concatenate([xs] * reps))
        np.save(os.path.join(d, "labels.npy"), np.concatenate([ys] * reps))
    common = [onnx_path, "--train", "--loss=cross_entropy"]
    arts = {}
    for name, extra in [("single", ["--optimizer=adamw", "--lr=1e-3"]),
                        ("frozen", ["--optimizer=sgd", "--lr=1e-30"]),
                        ("zero3", ["--optimizer=adamw", "--lr=1e-3", "--mesh", "dp=4",
                                   "--strategy", "zero3"])]:
        arts[name] = os.path.join(work, name)
        run(["loomc", *common, *extra, "-o", arts[name]])

    def train(name, data, *extra):
        np_ = ["-np", "4"] if name == "zero3" else []
        return run(["loom-run", *np_, arts[name], "--steps", str(STEPS), "--data", data,
                    *extra])

    out = train("single", three)
    wrapped, plain = losses(out), losses(train("single", six))
    if wrapped != plain:
        fail(f"3 entries wrapped {wrapped} != 6 entries {plain}")
    note = next(l for l in out.splitlines() if l.startswith("data:"))
    print(f"wrap: 6 steps on 3 entries equal 6 steps on the entries twice, bit for bit; {note}")

    fixed = losses(train("frozen", three))
    if fixed[:3] != fixed[3:] or len(set(fixed[:3])) != 3:
        fail(f"lr 1e-30 in file order should repeat 3 distinct losses: {fixed}")
    orders = {}
    for seed in (1, 2):
        got = losses(train("frozen", three, "--shuffle", "--seed", str(seed)))
        order = [fixed.index(l) if l in fixed[:3] else -1 for l in got]
        if sorted(order[:3]) != [0, 1, 2] or sorted(order[3:]) != [0, 1, 2]:
            fail(f"--shuffle --seed {seed}: epochs are not permutations: entries {order}")
        orders[seed] = order
    if all(o == [0, 1, 2, 0, 1, 2] for o in orders.values()) or orders[1] == orders[2]:
        fail(f"--shuffle changes nothing: {orders}")
    print(f"shuffle: every epoch a permutation of the 3 entries; entries read with seed 1 "
          f"{orders[1]}, seed 2 {orders[2]}")

    one = losses(train("single", three, "--shuffle", "--seed", "1"))
    out = train("zero3", three, "--shuffle", "--seed", "1", "--checkpoint-dir",
                os.path.join(work, "ckpt"), "--checkpoint-every", "3")
    many = losses(out)
    rel = max(abs(a - b) / abs(a) for a, b in zip(one, many))
    if len(many) != STEPS or rel > 1e-5:
        fail(f"zero3 shuffled {many} vs single {one}: {rel:.1e}")
    line = next(l for l in out.splitlines() if l.startswith("data read:"))
    per_rank = int(line.split("at most ")[1].split(" B ")[0])
    whole = int(line.split("of the ")[1].split(" B ")[0])
    if per_rank * 4 != whole:
        fail(f"each rank should copy a quarter of the entries it reads: {line}")
    resumed = losses(train("zero3", three, "--shuffle", "--seed", "1", "--resume",
                           os.path.join(work, "ckpt", "step-00000003")))
    if resumed != many[3:]:
        fail(f"shuffled resume {resumed} != {many[3:]}")
    print(f"ranks: zero3 dp=4 shuffled equals one device (max rel {rel:.1e}); {line}; "
          f"resumed at step 3 bit-identical")

    mis = os.path.join(work, "mismatched")
    os.makedirs(mis, exist_ok=True)
    np.save(os.path.join(mis, "x.npy"), xs)
    np.save(os.path.join(mis, "labels.npy"), ys[:2])
    r = subprocess.run(["loom-run", arts["single"], "--steps", "2", "--data", mis],
                       capture_output=True, text=True)
    if r.returncode == 0 or "every input's file needs the same number" not in r.stderr:
        fail(f"files of 3 and 2 entries were accepted: {r.stdout}{r.stderr}")
    print("mismatch: " + r.stderr.strip())

    out = train("single", three, "--progress", "0.000001")
    line = next((l for l in out.splitlines() if l.startswith("progress:")), None)
    if not line or "steps/s" not in line or "samples/s" not in line or "ETA" not in line:
        fail(f"no progress line:\n{out}")
    print(f"progress: {line}")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
