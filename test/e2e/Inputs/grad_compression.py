#!/usr/bin/env python3
"""Gradient compression (loomc --grad-compression=fp16|bf16) checked by hand.

    grad_compression.py WORK

The MLP (Linear 32->64, ReLU, Linear 64->10, cross-entropy) on a batch of 8:

  by hand   dp=2 data parallel, one SGD step (lr 0.1) with each compression:
            PyTorch computes each rank's partial gradient (its 4 samples'
            share of the mean loss), casts it to fp16 (or bf16), adds the two
            in that type, as the compressed all-reduce does, and takes the
            step. Loom's weights equal that to rounding of the f32 partials
            (most elements bit-identical), and differ from the uncompressed
            step by the compression's rounding.
  bytes     dp=4 ZeRO-3 with and without fp16 compression: the planner's
            report prices the gradient reductions at half the bytes, and the
            run's profile measures half the reduce-scatter buffer bytes; the
            weights' all-gathers are unchanged in both.
  converge  dp=4 AdamW for 20 steps: the compressed run's losses stay
            within 1e-3 relative of the uncompressed run's.

Prints one line per check; exits 1 on the first failure.
"""

import os
import re
import sys

import numpy as np
import torch
import torch.nn.functional as F

from e2e_util import compiler, fail, losses, mlp_with_data, run  # noqa: E402

STEPS, LR = 20, 0.1


def hand_step(model, x, y, compression):
    """One dp=2 SGD step with the gradient all-reduce done by hand."""
    partial = []
    for r in range(2):
        model.zero_grad()
        part = slice(4 * r, 4 * r + 4)
        # Rank r's share of the mean over all 8 samples.
        loss = F.cross_entropy(model(x[part]), y[part], reduction="sum") / 8
        loss.backward()
        partial.append({n: p.grad.detach().clone() for n, p in model.named_parameters()})
    out = {}
    for n, p in model.named_parameters():
        if compression == "none":
            g = partial[0][n] + partial[1][n]
        else:
            low = torch.float16 if compression == "fp16" else torch.bfloat16
            g = (partial[0][n].to(low) + partial[1][n].to(low)).float()
        out[n] = (p.detach() - LR * g).numpy()
    return out


def collective_bytes(profile, kind):
    m = re.search(rf"{kind} over \[dp\]\s+(\d+) calls\s+(\d+) B", profile)
    return int(m.group(2)) if m else 0


def main():
    work = sys.argv[1]
    model, onnx_path, data, xs, ys = mlp_with_data(work, STEPS)
    compile_ = compiler(onnx_path, work)

    # By hand: one SGD step on dp=2.
    x, y = torch.from_numpy(xs[0]), torch.from_numpy(ys[0])
    refs = {c: hand_step(model, x, y, c) for c in ("none", "fp16", "bf16")}
    for c in ("fp16", "bf16"):
        out, _ = compile_(f"dp2-{c}", "--optimizer=sgd", f"--lr={LR}", "--mesh", "dp=2",
                          "--strategy", "dp", f"--grad-compression={c}")
        pout = os.path.join(work, f"params-{c}")
        run(["loom-run", "-np", "2", out, "--steps", "1", "--data", data, "--params-out", pout])
        worst_hand = worst_plain = 0.0
        same = total = 0
        for n, want in refs[c].items():
            got = np.load(os.path.join(pout, n + ".npy"))
            worst_hand = max(worst_hand, float(np.max(np.abs(got - want))))
            worst_plain = max(worst_plain, float(np.max(np.abs(got - refs["none"][n]))))
            same += int(np.sum(got == want))
            total += got.size
        # A partial within f32 rounding of PyTorch's may round to the
        # neighbouring 16-bit value: one ulp of the gradient (2^-10 relative
        # for fp16, 2^-7 for bf16) times the learning rate.
        ulp = 2.0 ** (-10 if c == "fp16" else -7)
        grad_max = max(float(np.max(np.abs(refs["none"][n] - p.detach().numpy())))
                       for n, p in model.named_parameters()) / LR
        limit = 2 * LR * ulp * grad_max
        if worst_hand > limit or same < 0.95 * total or worst_plain == 0.0:
            fail(f"{c}: {worst_hand:.2e} from casting by hand (limit {limit:.1e}), "
                 f"{same}/{total} identical, {worst_plain:.2e} from uncompressed")
        print(f"by hand: {c} dp=2 SGD step: {same}/{total} weights bit-identical to casting "
              f"each rank's gradient by hand, max difference {worst_hand:.1e} (limit "
              f"{limit:.1e}); {worst_plain:.1e} from the uncompressed step")

    # Bytes: ZeRO-3 on dp=4, planned and measured.
    plans, profiles, runs = {}, {}, {}
    for c in ("none", "fp16"):
        out, plan = compile_(f"zero3-{c}", "--optimizer=adamw", "--lr=1e-3", "--mesh", "dp=4",
                             "--strategy", "zero3", f"--grad-compression={c}", report=True)
        plans[c] = plan
        text = run(["loom-run", "-np", "4", out, "--steps", str(STEPS), "--data", data,
                    "--profile"])
        profiles[c], runs[c] = text, losses(text)

    def planned(c, kind):
        return sum(x["bytes"] * x["count"] for x in plans[c]["collectives"] if x["kind"] == kind)

    rs_plan = planned("fp16", "reduce_scatter") / planned("none", "reduce_scatter")
    ag_plan = planned("fp16", "all_gather") / planned("none", "all_gather")
    rs_run = (collective_bytes(profiles["fp16"], "reduce_scatter") /
              collective_bytes(profiles["none"], "reduce_scatter"))
    ag_run = (collective_bytes(profiles["fp16"], "all_gather") /
              collective_bytes(profiles["none"], "all_gather"))
    if rs_plan != 0.5 or rs_run != 0.5 or ag_plan != 1.0 or ag_run != 1.0:
        fail(f"reduce-scatter bytes x{rs_plan} planned, x{rs_run} measured; all-gather "
             f"x{ag_plan} planned, x{ag_run} measured")
    print(f"bytes: zero3 dp=4 fp16: gradient reduce-scatter bytes x{rs_plan} planned, "
          f"x{rs_run} measured ({planned('fp16', 'reduce_scatter')} vs "
          f"{planned('none', 'reduce_scatter')} B per step in the plan); weight all-gathers "
          f"x{ag_plan} planned, x{ag_run} measured")

    # Converge: the compressed losses follow the uncompressed ones.
    rel = max(abs(a - b) / abs(b) for a, b in zip(runs["fp16"], runs["none"]))
    if len(runs["fp16"]) != STEPS or rel > 1e-3:
        fail(f"converge: fp16 losses {runs['fp16']} vs {runs['none']}")
    print(f"converge: zero3 dp=4 AdamW {STEPS} steps: fp16-compressed losses within "
          f"{rel:.1e} of uncompressed (limit 1e-3), final {runs['fp16'][-1]:.6f} vs "
          f"{runs['none'][-1]:.6f}")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
