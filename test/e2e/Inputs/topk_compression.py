#!/usr/bin/env python3
"""Top-k gradient compression with error feedback checked from the outside.

    topk_compression.py WORK

The MLP (Linear 32->64, ReLU, Linear 64->10, cross-entropy) on batches of 8,
with --grad-compression=topk:RATIO:

  by hand   dp=2 SGD (lr 0.1), 3 steps, topk:0.1: PyTorch computes each
            rank's partial gradient, adds the rank's residual, keeps the
            ceil(0.1 n) entries of largest magnitude (ties to the lower
            position), sums what both ranks send and steps; the rest is the
            rank's new residual. Loom's weights and its error-feedback state
            (every rank's residual, stacked) equal that.
  bytes     dp=4 data parallel: the plan prices the top-k exchange (all-
            gathers of positions and values) instead of the all-reduce, and
            the run's profile measures the same bytes.
  converge  dp=4 SGD, 10 epochs of 20 batches: the mean loss of the last
            epoch with topk:0.1 (topk:0.01) is within x1.25 (x2) of the
            uncompressed run's, which itself halves the first epoch's.
  resume    3 steps, checkpoint, resume to 6 equals 6 uninterrupted steps bit
            for bit (the residuals are in the checkpoint); resuming under a
            mesh of another size, or from a checkpoint without residuals, is
            refused naming the residual.

Prints one line per check; exits 1 on the first failure.
"""

import math
import os
import re
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

from e2e_util import compiler, fail, losses, mlp_with_data, run  # noqa: E402

LR, RATIO, BATCHES, EPOCHS = 0.1, 0.1, 20, 10


def top_k(acc, k):
    """Positions of the k entries of largest magnitude, ties to the lower
    position, ascending (loom.top_k_indices)."""
    order = np.argsort(-np.abs(acc), kind="stable")[:k]
    return np.sort(order)


def hand_steps(model, xs, ys, steps, ranks=2):
    """`steps` SGD steps on dp=`ranks` with top-k error feedback; the final
    weights and each weight's residuals stacked in rank order."""
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    residual = {n: [np.zeros(p.numel(), np.float32) for _ in range(ranks)]
                for n, p in params.items()}
    per = xs.shape[1] // ranks
    for s in range(steps):
        x, y = torch.from_numpy(xs[s]), torch.from_numpy(ys[s])
        partial = []
        for r in range(ranks):
            with torch.no_grad():
                for n, p in model.named_parameters():
                    p.copy_(params[n])
            model.zero_grad()
            part = slice(per * r, per * (r + 1))
            loss = F.cross_entropy(model(x[part]), y[part], reduction="sum") / xs.shape[1]
            loss.backward()
            partial.append({n: p.grad.detach().numpy().reshape(-1).copy()
                            for n, p in model.named_parameters()})
        for n, p in params.items():
            total = np.zeros(p.numel(), np.float32)
            k = min(p.numel(), max(1, math.ceil(RATIO * p.numel())))
            for r in range(ranks):
                acc = partial[r][n] + residual[n][r]
                idx = top_k(acc, k)
                total[idx] += acc[idx]
                sent = np.zeros_like(acc)
                sent[idx] = acc[idx]
                residual[n][r] = acc - sent
            params[n] = p - LR * torch.from_numpy(total.reshape(p.shape))
    stacked = {n: np.concatenate([r.reshape(params[n].shape) for r in residual[n]])
               for n in params}
    return {n: p.numpy() for n, p in params.items()}, stacked


def sent_per_step(text, ranks, steps):
    """Bytes each device sends per step by the profile (buffer bytes summed
    over ranks and steps): an all-reduce sends 2(n-1)/n of its buffer, an
    all-gather n-1 times its input."""
    total = 0.0
    for kind, b in re.findall(r"(all_gather|all_reduce) over \[dp\]\s+\d+ calls\s+(\d+) B", text):
        share = 2 * (ranks - 1) / ranks if kind == "all_reduce" else ranks - 1
        total += share * int(b)
    return total / (ranks * steps)


def main():
    work = sys.argv[1]
    model, onnx_path, data, xs, ys = mlp_with_data(work, BATCHES)
    compile_ = compiler(onnx_path, work)

    # By hand: 3 dp=2 SGD steps.
    want, want_res = hand_steps(model, xs, ys, 3)
    out, _ = compile_("dp2", "--optimizer=sgd", f"--lr={LR}", "--mesh", "dp=2",
                      "--strategy", "dp", f"--grad-compression=topk:{RATIO}")
    pout, sout = os.path.join(work, "dp2-params"), os.path.join(out, "optimizer-final")
    run(["loom-run", "-np", "2", out, "--steps", "3", "--data", data, "--params-out", pout])
    worst = worst_res = 0.0
    for n, w in want.items():
        got = np.load(os.path.join(pout, n + ".npy"))
        res = np.load(os.path.join(sout, n + ".error_feedback.npy"))
        if res.shape != want_res[n].shape:
            fail(f"by hand: {n}.error_feedback has shape {res.shape}, expected "
                 f"{want_res[n].shape} (both ranks' residuals stacked)")
        worst = max(worst, float(np.max(np.abs(got - w))))
        worst_res = max(worst_res, float(np.max(np.abs(res - want_res[n]))))
    moved = max(float(np.max(np.abs(want[n] - p.detach().numpy())))
                for n, p in model.named_parameters())
    if worst > 1e-5 or worst_res > 1e-5 or moved == 0:
        fail(f"by hand: weights {worst:.2e}, residuals {worst_res:.2e} from the reference")
    print(f"by hand: topk:{RATIO} dp=2 SGD 3 steps: weights within {worst:.1e} and "
          f"residuals within {worst_res:.1e} of PyTorch with top-k error feedback "
          f"(limit 1e-5; the weights moved {moved:.2f})")

    # Bytes: dp=4, planned and measured, against the uncompressed all-reduce.
    plans, profiles, runs = {}, {}, {}
    for c in ("none", f"topk:{RATIO}", "topk:0.01"):
        out, plan = compile_(f"dp4-{c}".replace(":", "-"), "--optimizer=sgd", f"--lr={LR}",
                             "--mesh", "dp=4", "--strategy", "dp",
                             f"--grad-compression={c}", report=True)
        plans[c] = plan
        text = run(["loom-run", "-np", "4", out, "--steps", str(EPOCHS * BATCHES), "--data", data,
                    "--profile"])
        profiles[c], runs[c] = text, losses(text)

    def planned(c, kind):
        return sum(x["bytes"] * x["count"] for x in plans[c]["collectives"]
                   if x["kind"] == kind and x["axes"] == "[dp]")

    base_plan = planned("none", "all_reduce")
    base_run = sent_per_step(profiles["none"], 4, EPOCHS * BATCHES)
    if abs(base_plan - base_run) > 1e-6 * base_plan:
        fail(f"bytes: uncompressed: planned {base_plan} B, measured {base_run} B per step")
    for c in (f"topk:{RATIO}", "topk:0.01"):
        p = planned(c, "all_gather") + planned(c, "all_reduce")
        m = sent_per_step(profiles[c], 4, EPOCHS * BATCHES)
        if abs(p - m) > 1e-6 * p or not p < base_plan:
            fail(f"bytes: {c}: planned {p} B, measured {m} B per step (uncompressed "
                 f"{base_plan} planned, {base_run} measured)")
        print(f"bytes: dp=4 {c}: {p:.0f} B sent per device per step planned, {m:.0f} "
              f"measured; x{p / base_plan:.3f} of the uncompressed all-reduce "
              f"({base_plan:.0f} planned, {base_run:.0f} measured)")
    # Memory: the residual is optimizer state, planned and held.
    for c in ("none", f"topk:{RATIO}"):
        held = float(re.search(r"peak memory rank 0: .* optimizer state ([0-9.]+)",
                               profiles[c]).group(1))
        plan_mib = plans[c]["memory"]["optimizer"] / 2**20
        if abs(held - plan_mib) > 0.0006:
            fail(f"memory: {c}: optimizer state {plan_mib:.4f} MiB planned, {held} held")
    print(f"memory: dp=4 topk:{RATIO}: optimizer state (the residuals) "
          f"{plans[f'topk:{RATIO}']['memory']['optimizer']} B per device planned, as held "
          f"(uncompressed SGD: {plans['none']['memory']['optimizer']} B)")

    # Converge: the mean loss over the first and the last epoch.
    def epoch(c, e):
        return float(np.mean(runs[c][e * BATCHES:(e + 1) * BATCHES]))

    first, last = epoch("none", 0), epoch("none", EPOCHS - 1)
    if not last < 0.5 * first:
        fail(f"converge: the uncompressed run did not learn: {first} -> {last}")
    for c, factor in ((f"topk:{RATIO}", 1.25), ("topk:0.01", 2.0)):
        got = epoch(c, EPOCHS - 1)
        if len(runs[c]) != EPOCHS * BATCHES or not got < factor * last:
            fail(f"converge: {c}: last-epoch mean loss {got} vs uncompressed {last} (limit "
                 f"x{factor}), first epoch {first}; losses {runs[c]}")
        print(f"converge: dp=4 SGD {EPOCHS} epochs of {BATCHES} steps: {c} mean loss of the "
              f"last epoch {got:.4f} = x{got / last:.2f} of uncompressed {last:.4f} (limit "
              f"x{factor}; first epoch {first:.4f})")

    # Resume: the residuals are checkpointed.
    out, _ = compile_("resume", "--optimizer=sgd", f"--lr={LR}", "--momentum=0.9", "--mesh",
                      "dp=2", "--strategy", "dp", f"--grad-compression=topk:{RATIO}")
    full = os.path.join(work, "full")
    whole = losses(run(["loom-run", "-np", "2", out, "--steps", "6", "--data", data,
                        "--params-out", full]))
    ck = os.path.join(work, "ck")
    run(["loom-run", "-np", "2", out, "--steps", "3", "--data", data,
         "--checkpoint-dir", ck, "--checkpoint-every", "3"])
    resumed_dir = os.path.join(work, "resumed")
    resumed = losses(run(["loom-run", "-np", "2", out, "--steps", "6", "--data", data,
                          "--resume", ck, "--params-out", resumed_dir]))
    same = all(np.array_equal(np.load(os.path.join(full, f)),
                              np.load(os.path.join(resumed_dir, f)))
               for f in os.listdir(full))
    if resumed != whole[3:] or not same:
        fail(f"resume: losses {resumed} vs {whole[3:]}, parameters identical: {same}")
    print(f"resume: 3 steps + resume to 6 = 6 steps: losses {len(resumed)}/3 and final "
          "parameters bit-identical")
    other, _ = compile_("resume-dp4", "--optimizer=sgd", f"--lr={LR}", "--momentum=0.9",
                        "--mesh", "dp=4", "--strategy", "dp", f"--grad-compression=topk:{RATIO}")
    r = subprocess.run(["loom-run", "-np", "4", other, "--steps", "6", "--data", data,
                        "--resume", ck], capture_output=True, text=True)
    msg = (r.stdout + r.stderr).strip().splitlines()
    err = next((l for l in msg if "error_feedback" in l), None)
    if r.returncode == 0 or err is None:
        fail(f"resume under dp=4: exit {r.returncode}, output:\n" + "\n".join(msg))
    print(f"resume under dp=4: refused: {err.strip()}")
    # A checkpoint trained without compression has no residuals.
    plain, _ = compile_("plain", "--optimizer=sgd", f"--lr={LR}", "--momentum=0.9", "--mesh",
                        "dp=2", "--strategy", "dp")
    ck2 = os.path.join(work, "ck-plain")
    run(["loom-run", "-np", "2", plain, "--steps", "3", "--data", data,
         "--checkpoint-dir", ck2, "--checkpoint-every", "3"])
    r = subprocess.run(["loom-run", "-np", "2", out, "--steps", "6", "--data", data,
                        "--resume", ck2], capture_output=True, text=True)
    msg = (r.stdout + r.stderr).strip().splitlines()
    err = next((l for l in msg if "error_feedback" in l), None)
    if r.returncode == 0 or err is None:
        fail(f"resume of an uncompressed checkpoint: exit {r.returncode}, output:\n" +
             "\n".join(msg))
    print(f"resume of an uncompressed checkpoint: refused: {err.strip()}")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
