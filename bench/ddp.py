#!/usr/bin/env python3
"""Data-parallel step against PyTorch DDP (gloo), same machine, same run.

    bench/ddp.py [--build build] [--ranks 4] [--steps 10] [--models mlp,block]
                 [--repeat 3]

Models (AdamW, MSE loss against random targets, f32, bench/forward.py's):
  mlp:   4 Linear layers of width 1024 with ReLU, global batch 256
  block: a GPT-style pre-norm transformer block, d=512, 8 heads, seq 128,
         global batch 8

Each rank trains on its share of the global batch (global batch / ranks
rows), one thread per rank (a 2-core machine with 4 ranks shares its cores,
as issue 42's goal states it):

  * PyTorch: DistributedDataParallel over gloo (its reducer all-reduces 25 MiB
    buckets in a background thread while the backward pass runs), and DDP
    with ZeroRedundancyOptimizer (optimizer state split over the ranks);
  * Loom: loomc --mesh dp=N --strategy dp --cluster cpu-local:N (gradient
    buckets started during the backward pass where the planner prices that
    faster with this machine's calibration: loom-overlap-collectives), the
    same with --overlap=false (every collective blocks), and --strategy
    zero3. The "started" column says whether the dp program overlaps.

Step time: PyTorch's mean over the timed steps after 2 warm-up steps on the
slowest rank; Loom's loom-run `s/step` (after compilation); each the median
of --repeat interleaved runs. Prints seconds per step and the ratios Loom /
PyTorch (lower is better).
"""

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from forward import MLP, Block  # noqa: E402

MODELS = {"mlp": (lambda: MLP(), (256, 1024), (256, 1024)),
          "block": (lambda: Block(), (8, 128, 512), (8, 128, 512))}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_rank(rank, ranks, port, name, data, steps, zero, out):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=ranks)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(MODELS[name][0]())
    if zero:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW,
                                      lr=1e-4)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    xs, ys = np.load(os.path.join(data, "x.npy")), np.load(os.path.join(data, "labels.npy"))
    rows = xs.shape[1] // ranks

    def step(i):
        x = torch.from_numpy(xs[i, rank * rows:(rank + 1) * rows])
        y = torch.from_numpy(ys[i, rank * rows:(rank + 1) * rows])
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()

    for i in range(2):
        step(i)
    dist.barrier()
    start = time.perf_counter()
    for i in range(steps):
        step(2 + i)
    seconds = torch.tensor([(time.perf_counter() - start) / steps])
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    if rank == 0:
        with open(out, "w") as f:
            f.write(f"{seconds.item()}\n")
    dist.destroy_process_group()


def torch_seconds(name, ranks, data, steps, zero, work):
    out = os.path.join(work, f"torch-{name}-{zero}.txt")
    mp.spawn(torch_rank, args=(ranks, free_port(), name, data, steps, zero, out),
             nprocs=ranks, join=True)
    return float(open(out).read())


def loom_seconds(tools, onnx, data, work, ranks, steps, strategy, *flags):
    """Seconds per step, and whether the program starts collectives early."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = os.path.join(work, f"loom-{strategy}-{'-'.join(flags) or 'default'}")
    subprocess.run([os.path.join(tools, "loomc"), onnx, "--train", "--loss=mse",
                    "--optimizer=adamw", "--lr=1e-4", "--mesh", f"dp={ranks}",
                    "--cluster", f"cpu-local:{ranks}",
                    "--strategy", strategy, *flags, "-o", out],
                   check=True, capture_output=True, env=env)
    run = subprocess.run([os.path.join(tools, "loom-run"), "-np", str(ranks), out,
                          "--steps", str(steps + 2), "--data", data],
                         check=True, capture_output=True, text=True, env=env).stdout
    m = re.search(r"trained \d+ steps in [\d.]+ s \(([\d.]+) s/step", run)
    if not m:
        sys.exit(f"bench/ddp.py: loom-run printed no step time:\n{run}")
    started = "{loom.async}" in open(os.path.join(out, "train.mlir")).read()
    return float(m.group(1)), started


def main():
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR", "build"))
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--models", default="mlp,block")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    tools = os.path.join(a.build, "bin")
    rng = np.random.default_rng(0)
    print(f"ranks: {a.ranks} (one thread each) on {os.cpu_count()} cores, steps: {a.steps}")
    print(f"{'model':6} {'DDP s':>8} {'loom dp s':>10} {'ratio':>6} {'started':>7} {'blocking s':>11} "
          f"{'ratio':>6} {'DDP+ZeRO s':>11} {'loom zero3 s':>13} {'ratio':>6}")
    for name in a.models.split(","):
        make, shape, out_shape = MODELS[name]
        with tempfile.TemporaryDirectory() as work:
            data = os.path.join(work, "data")
            os.makedirs(data)
            xs = rng.standard_normal((a.steps + 2, *shape)).astype(np.float32)
            ys = rng.standard_normal((a.steps + 2, *out_shape)).astype(np.float32)
            np.save(os.path.join(data, "x.npy"), xs)
            np.save(os.path.join(data, "labels.npy"), ys)
            onnx = os.path.join(work, "model.onnx")
            torch.manual_seed(0)
            torch.onnx.export(make(), torch.from_numpy(xs[0]), onnx, opset_version=14,
                              input_names=["x"], output_names=["y"],
                              do_constant_folding=False,
                              training=torch.onnx.TrainingMode.TRAINING)
            # Interleaved repetitions, each configuration's median: this
            # machine's step times vary by 10-20 % from run to run.
            runs = {k: [] for k in ("ddp", "zero", "over", "block", "z3")}
            for _ in range(a.repeat):
                runs["ddp"].append(torch_seconds(name, a.ranks, data, a.steps, False, work))
                runs["zero"].append(torch_seconds(name, a.ranks, data, a.steps, True, work))
                t, started = loom_seconds(tools, onnx, data, work, a.ranks, a.steps, "dp")
                runs["over"].append(t)
                runs["block"].append(loom_seconds(tools, onnx, data, work, a.ranks, a.steps,
                                                  "dp", "--overlap=false")[0])
                runs["z3"].append(loom_seconds(tools, onnx, data, work, a.ranks, a.steps,
                                               "zero3")[0])
            ddp, zero, over, block, z3 = (float(np.median(runs[k]))
                                          for k in ("ddp", "zero", "over", "block", "z3"))
            print(f"{name:6} {ddp:8.4f} {over:10.4f} {over / ddp:6.2f} {'yes' if started else 'no':>7} "
                  f"{block:11.4f} {block / ddp:6.2f} {zero:11.4f} {z3:13.4f} {z3 / zero:6.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
