#!/usr/bin/env python3
"""Trains the same model on one device and on an MPI mesh and compares.

    spmd_vs_single.py WORK --model mlp|block|stack --mesh dp=2,tp=2|none|choose --strategy S
                      [--steps 10] [--optimizer adamw|sgd] [--remat none|layers|full]

The model comes from PyTorch through ONNX (the MLP and the bias-free-QKV GPT
block of train_vs_pytorch.py, batch 8 and 4 (times --micro-batches: they split
it); `stack` is `--blocks` (3) such blocks,
whose repeated layers the planner coarsens). loomc builds the training
step twice, without a mesh and with `--mesh/--strategy`; loom-run trains the
first alone and the second with `-np` ranks on the same data. Prints the
plan, one line per step and a verdict; exits 1 when a step's loss differs by
more than 1e-5 relative or a final parameter by more than 1e-5 relative
(to the parameter's largest magnitude). `--remat` compiles the second
program with rematerialization (the first never has it); with `--mesh none`
the second runs on one rank, so the comparison is remat against none. With
`--mesh choose --ranks N` (and `--strategy auto`) the planner chooses the
mesh for the cluster's N devices.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from train_vs_pytorch import TrainBlock  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "Target",
                                "ONNX", "Inputs"))
from export_torch_models import MLP  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("work")
    p.add_argument("--model", default="mlp", choices=["mlp", "block", "stack"])
    p.add_argument("--mesh", required=True)
    p.add_argument("--strategy", required=True)
    p.add_argument("--ranks", type=int, default=0, help="--mesh choose: the cluster's devices")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--optimizer", default="adamw")
    p.add_argument("--micro-batches", type=int, default=1)
    p.add_argument("--spmd-micro-batches", type=int, default=None,
                   help="loomc --micro-batches of the distributed program (default: "
                        "--micro-batches, which sizes the batch); 0: the planner's choice")
    p.add_argument("--reference-micro-batches", action="store_true",
                   help="the single-device step splits the batch into the same "
                        "micro-batches (default: it steps on the whole batch)")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--cluster", default=None, help="--strategy auto: the cluster")
    p.add_argument("--remat", default=None, help="loomc --remat for the second program")
    p.add_argument("--memory-limit-gib", default=None, help="--strategy auto: the limit")
    p.add_argument("--blocks", type=int, default=3, help="--model stack: its blocks")
    p.add_argument("--schedule", default=None, help="loomc --schedule (pp meshes)")
    p.add_argument("--virtual-stages", type=int, default=1, help="loomc --virtual-stages")
    p.add_argument("--eps", default=None, help="loomc --eps (Adam's epsilon) on both sides")
    p.add_argument("--plan-stages", default=None, help="loomc --plan-stages (--mesh choose)")
    p.add_argument("--precision", default=None, help="loomc --precision on both sides")
    p.add_argument("--grad-compression", default=None,
                   help="loomc --grad-compression on both sides")
    a = p.parse_args()

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    # --micro-batches M splits the model's batch: a micro-batch keeps the
    # sizes above (8, 4), the model's batch is M of them.
    m, n = a.micro_batches, a.steps * a.micro_batches
    if a.model == "mlp":
        model = MLP()
        xs = rng.standard_normal((n, 8, 32)).astype(np.float32)
        ys = rng.integers(0, 10, size=(n, 8)).astype(np.int64)
        loss = "cross_entropy"
    else:
        model = TrainBlock() if a.model == "block" else torch.nn.Sequential(
            *[TrainBlock() for _ in range(a.blocks)])
        xs = rng.standard_normal((n, 4, 16, 64)).astype(np.float32)
        ys = rng.standard_normal((n, 4, 16, 64)).astype(np.float32)
        loss = "mse"
    xs = xs.reshape(a.steps, -1, *xs.shape[2:])
    ys = ys.reshape(a.steps, -1, *ys.shape[2:])
    os.makedirs(a.work, exist_ok=True)
    onnx_path = os.path.join(a.work, "model.onnx")
    torch.onnx.export(model, torch.from_numpy(xs[0]), onnx_path, opset_version=14,
                      input_names=["x"], output_names=["y"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    data = os.path.join(a.work, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), xs)
    np.save(os.path.join(data, "labels.npy"), ys)

    ranks = 1
    for axis in a.mesh.split(",") if a.mesh not in ("none", "choose") else []:
        ranks *= int(axis.split("=")[1])
    if a.mesh == "choose":
        if a.strategy != "auto" or a.ranks < 1:
            p.error("--mesh choose needs --strategy auto and --ranks N")
        ranks = a.ranks
    common = [onnx_path, "--train", f"--loss={loss}", f"--optimizer={a.optimizer}",
              "--lr=1e-3"]
    if a.optimizer == "sgd":
        common += ["--momentum=0.9"]
    if a.eps:
        common += [f"--eps={a.eps}"]
    if a.precision:
        common += [f"--precision={a.precision}"]
    if a.grad_compression:
        common += [f"--grad-compression={a.grad_compression}"]
    single, spmd = os.path.join(a.work, "single"), os.path.join(a.work, "spmd")
    # The reference is the step on the whole batch, without micro-batches
    # (or with the same ones: --reference-micro-batches).
    ref = [f"--micro-batches={a.micro_batches}"] if a.reference_micro_batches else []
    subprocess.run(["loomc", *common, *ref, "-o", single], check=True, capture_output=True)
    extra = ["--cluster", a.cluster] if a.cluster else []
    if a.spmd_micro_batches is not None:
        extra += [f"--micro-batches={a.spmd_micro_batches}"]
    elif a.micro_batches > 1:
        extra += [f"--micro-batches={a.micro_batches}"]
    if a.remat:
        extra += [f"--remat={a.remat}"]
    if a.schedule:
        extra += [f"--schedule={a.schedule}"]
    if a.virtual_stages > 1:
        extra += [f"--virtual-stages={a.virtual_stages}"]
    if a.plan_stages is not None:
        extra += [f"--plan-stages={a.plan_stages}"]
    if a.memory_limit_gib:
        extra += ["--memory-limit-gib", a.memory_limit_gib]
    if a.mesh == "choose":
        extra += ["--strategy", a.strategy]
    elif a.mesh != "none":
        extra += ["--mesh", a.mesh, "--strategy", a.strategy]
    plan = subprocess.run(["loomc", *common, *extra, "-o", spmd],
                          capture_output=True, text=True)
    if plan.returncode != 0:
        print(plan.stdout, plan.stderr)
        return 1
    print(plan.stdout, end="")

    def train(out, extra):
        r = subprocess.run(["loom-run", *extra, out, "--steps", str(a.steps), "--data", data],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            sys.exit(1)
        return [float(l.split()[3]) for l in r.stdout.splitlines() if l.startswith("step ")]

    # A step that unrolls its micro-batches (no pipeline) takes LLVM's -O2
    # minutes, -O0 seconds. Both sides run at the same level: after 10
    # AdamW steps -O0 and -O2 differ by up to 1e-4 in a weight (LLVM
    # contracts a * b + c into fused multiply-adds at -O2).
    opt = ["-O", "0"] if a.micro_batches > 1 else []
    one = train(single, opt)
    many = train(spmd, opt + (["-np", str(ranks)] if ranks > 1 else []))
    ok = len(one) == len(many) == a.steps
    worst = 0.0
    for s, (x, y) in enumerate(zip(one, many)):
        rel = abs(x - y) / max(abs(x), 1e-30)
        worst = max(worst, rel)
        print(f"step {s:2d}  single {x:.8e}  {ranks} ranks {y:.8e}  rel {rel:.1e}")
    ok &= worst <= a.rtol
    worst_param, where = 0.0, "-"
    for f in sorted(os.listdir(os.path.join(single, "params-final"))):
        x = np.load(os.path.join(single, "params-final", f))
        path = os.path.join(spmd, "params-final", f)
        if not os.path.exists(path):
            print(f"missing {path}")
            ok = False
            continue
        y = np.load(path)
        if x.shape != y.shape:
            print(f"{f}: shape {y.shape}, expected {x.shape}")
            ok = False
            continue
        rel = float(np.max(np.abs(x - y)) / max(np.max(np.abs(x)), 1e-30))
        if rel > worst_param:
            worst_param, where = rel, f
    ok &= worst_param <= a.rtol
    print(f"{'PASS' if ok else 'FAIL'}: {a.model} {a.strategy} on {a.mesh} ({ranks} ranks), "
          f"{a.steps} {a.optimizer} steps: max loss rel error {worst:.1e}, max parameter rel "
          f"error {worst_param:.1e} in {where} (limit {a.rtol:.0e})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
