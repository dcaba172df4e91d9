#!/usr/bin/env python3
"""The same training under three launchers: mpirun, torchrun-style plain
processes, and Slurm's srun.

    check_launchers.py WORK

Exports the MLP from PyTorch (as spmd_vs_single.py), compiles it for
dp=2,tp=2 (Megatron) and dp=4 ZeRO-3, trains each for 6 steps with
`loom-run -np 4` (mpirun: the MPI backend) and then with four plain
processes given RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR
and MASTER_PORT (the Gloo backend), and requires every loss and final
parameter to agree to 1e-6 relative. Then: four processes without
MASTER_ADDR are refused with a message saying what to set; three of four
ranks started fail within the timeout naming the rendezvous; and, where a
single-node Slurm cluster can be brought up here (slurm_cluster.sh), `srun
-n 4 loom-run` trains equal to mpirun too (else `SKIP slurm: <reason>`).
Exits 1 on the first failure.
"""

import os
import socket
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Target", "ONNX", "Inputs"))
from export_torch_models import MLP  # noqa: E402

STEPS = 6


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def losses(out):
    return [float(l.split()[3]) for l in out.splitlines() if l.startswith("step ")]


def params(d):
    return {f: np.load(os.path.join(d, f)) for f in sorted(os.listdir(d))}


def compare(label, ref, got):
    (l0, p0), (l1, p1) = ref, got
    if len(l0) != STEPS or len(l1) != STEPS:
        fail(f"{label}: {len(l1)} steps, expected {STEPS}")
    lerr = max(abs(a - b) / abs(a) for a, b in zip(l0, l1))
    perr = max(float(np.max(np.abs(p0[k] - p1[k])) / max(np.max(np.abs(p0[k])), 1e-30))
               for k in p0)
    if lerr > 1e-6 or perr > 1e-6:
        fail(f"{label}: loss {lerr:.1e}, parameters {perr:.1e} from mpirun (limit 1e-6)")
    print(f"{label}: {STEPS} steps equal to mpirun: max loss rel error {lerr:.1e}, "
          f"max parameter rel error {perr:.1e} (limit 1e-6)")


def plain(art, data, pout, ranks=4, started=None, env_extra=None, drop=()):
    """Starts `started` (default all) of `ranks` processes torchrun-style."""
    port = free_port()
    procs = []
    for r in (started if started is not None else range(ranks)):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), **(env_extra or {}))
        for k in drop:
            env.pop(k, None)
        for k in [k for k in env if k.startswith(("OMPI_", "PMIX_", "SLURM_"))]:
            env.pop(k)
        procs.append(subprocess.Popen(
            ["loom-run", art, "--steps", str(STEPS), "--data", data, "--params-out", pout,
             "--timeout", "10"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True))
    outs = [p.communicate(timeout=120)[0] for p in procs]
    return [p.returncode for p in procs], outs


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((STEPS, 8, 32)).astype(np.float32)
    ys = rng.integers(0, 10, size=(STEPS, 8)).astype(np.int64)
    onnx_path = os.path.join(work, "model.onnx")
    torch.onnx.export(MLP(), torch.from_numpy(xs[0]), onnx_path, opset_version=14,
                      input_names=["x"], output_names=["y"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), xs)
    np.save(os.path.join(data, "labels.npy"), ys)
    arts = {}
    for name, mesh, strategy in [("dptp", "dp=2,tp=2", "dp-tp"), ("zero3", "dp=4", "zero3")]:
        out = os.path.join(work, name)
        subprocess.run(["loomc", onnx_path, "--train", "--loss=cross_entropy",
                        "--optimizer=adamw", "--lr=1e-3", "--mesh", mesh, "--strategy",
                        strategy, "-o", out], check=True, capture_output=True)
        pout = os.path.join(work, f"params-{name}-mpirun")
        r = subprocess.run(["loom-run", "-np", "4", out, "--steps", str(STEPS), "--data", data,
                            "--params-out", pout], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"mpirun {name}: {r.stdout}{r.stderr}")
        arts[name] = (out, (losses(r.stdout), params(pout)))

    for name, (art, ref) in arts.items():
        pout = os.path.join(work, f"params-{name}-plain")
        codes, outs = plain(art, data, pout)
        if any(codes):
            fail(f"torchrun-style {name}: exit statuses {codes}:\n" + "\n".join(outs))
        compare(f"torchrun-style 4 processes, {name}", ref, (losses(outs[0]), params(pout)))

    # No rendezvous address: refused, saying what to set.
    codes, outs = plain(arts["dptp"][0], data, os.path.join(work, "p-x"),
                        drop=("MASTER_ADDR", "MASTER_PORT"))
    if not all(codes) or "needs MASTER_ADDR and MASTER_PORT" not in outs[0]:
        fail(f"without MASTER_ADDR: exit statuses {codes}:\n{outs[0]}")
    print("without MASTER_ADDR: " + next(l for l in outs[0].splitlines() if "MASTER_ADDR" in l))
    # Rank 3 never starts: the others fail within the 10 s timeout.
    start = time.monotonic()
    codes, outs = plain(arts["dptp"][0], data, os.path.join(work, "p-y"), started=[0, 1, 2])
    took = time.monotonic() - start
    if not all(codes) or took > 60 or "did every rank start" not in outs[0]:
        fail(f"a rank missing: exit statuses {codes} after {took:.0f} s:\n{outs[0]}")
    print(f"rank 3 missing: every started rank failed ({took:.0f} s, timeout 10 s): "
          + next(l for l in outs[0].splitlines() if "did every rank start" in l).split(": ", 1)[1])

    # Slurm.
    cluster = os.path.join(work, "slurm")
    r = subprocess.run([os.path.join(HERE, "slurm_cluster.sh"), "start", cluster],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(next((l for l in r.stdout.splitlines() if l.startswith("SKIP")),
                   f"SKIP slurm: slurm_cluster.sh failed: {r.stdout}{r.stderr}"))
        print("PASS")
        return 0
    try:
        env = dict(os.environ, SLURM_CONF=os.path.join(cluster, "slurm.conf"))
        for k in [k for k in env if k.startswith(("OMPI_", "PMIX_"))]:
            env.pop(k)
        art, ref = arts["dptp"]
        pout = os.path.join(work, "params-dptp-srun")
        s = subprocess.run(["srun", "-n", "4", "loom-run", art, "--steps", str(STEPS), "--data",
                            data, "--params-out", pout, "--timeout", "20"],
                           capture_output=True, text=True, env=env, timeout=180)
        if s.returncode != 0:
            fail(f"srun -n 4: exit {s.returncode}:\n{s.stdout}{s.stderr}")
        compare("slurm: srun -n 4 (gloo), dptp", ref, (losses(s.stdout), params(pout)))
    finally:
        subprocess.run([os.path.join(HERE, "slurm_cluster.sh"), "stop", cluster])
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
