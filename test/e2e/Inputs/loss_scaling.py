#!/usr/bin/env python3
"""fp16 training with dynamic loss scaling, checked against GradScaler's rules.

    loss_scaling.py WORK

Compiles the MLP (Linear 32->64, ReLU, Linear 64->10, cross-entropy) with
`--precision=fp16` (dynamic loss scaling: PyTorch GradScaler semantics) for
one device and for dp=4 ZeRO-3, with --loss-scale-init 1024 and
--loss-scale-growth-interval 2 so that growth shows in a short run. Step
FORCE's batch holds one input of 6e4 in sample 0 (rank 0's quarter under
dp=4): finite in fp16 (max 65504), it overflows the fp16 backward of the
first layer's weight gradient, so one step's gradients hold inf. Checks:

  * every run skips exactly step FORCE, and the scale after every step (the
    step log's notes and amp.loss_scale in each step's checkpoint) equals
    a reference implementation of GradScaler's rules (scaler.update():
    backoff 0.5 and tracker reset on inf, growth 2 after `interval` clean
    steps in a row);
  * the skipped step changed no weight and no optimizer state on any rank:
    the checkpoints before and after it (assembled from all four ranks'
    shards) are bit-identical except for the step counter and the scaler's
    tracker and scale, and every other step changed the weights;
  * the loss-scale state is checkpointed: a dp=4 run stopped after 4 steps
    and resumed to 8 is bit-identical to the uninterrupted run, log notes
    included.

Prints one line per check; exits 1 on the first failure.
"""

import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from e2e_util import fail, mlp_with_data, run  # noqa: E402
from loom import checkpoint  # noqa: E402

STEPS, FORCE, INIT, INTERVAL = 8, 5, 1024.0, 2
COUNTERS = {"optimizer.step", "amp.loss_scale", "amp.growth_tracker", "amp.updates"}


def grad_scaler_rules(found_inf, init, interval, backoff=0.5, growth=2.0):
    """torch.cuda.amp.GradScaler.update (_amp_update_scale_), step by step:
    the scale after each step."""
    scale, tracker, out = np.float32(init), 0, []
    for inf in found_inf:
        if inf:
            scale, tracker = np.float32(scale * backoff), 0
        else:
            tracker += 1
            if tracker == interval:
                grown = np.float32(scale * growth)
                if np.isfinite(grown):
                    scale = grown
                tracker = 0
        out.append(float(scale))
    return out


def step_log(out):
    """{step: (loss, note)} from loom-run's step lines."""
    log = {}
    for line in out.splitlines():
        m = re.match(r"step (\d+) loss (\S+)(?:  \[(.*)\])?$", line)
        if m:
            log[int(m.group(1))] = (float(m.group(2)), m.group(3) or "")
    return log


def scales_from_notes(log, init):
    scale, out = init, []
    for s in sorted(log):
        m = re.match(r"loss scale ([0-9.e+-]+) -> ([0-9.e+-]+)", log[s][1])
        if m:
            if float(m.group(1)) != scale:
                fail(f"step {s}: the note says the scale was {m.group(1)}, not {scale}")
            scale = float(m.group(2))
        out.append(scale)
    return out


def main():
    work = sys.argv[1]

    def overflow(xs):
        xs[FORCE, 0, 0] = 6e4
    _, onnx_path, data, _, _ = mlp_with_data(work, STEPS, overflow)

    common = [onnx_path, "--train", "--loss=cross_entropy", "--optimizer=adamw", "--lr=1e-3",
              "--eps=1e-4", "--precision=fp16", f"--loss-scale-init={INIT:g}",
              f"--loss-scale-growth-interval={INTERVAL}"]
    want = grad_scaler_rules([s == FORCE for s in range(STEPS)], INIT, INTERVAL)
    print(f"reference: GradScaler's scale after each step {want} (inf at step {FORCE})")
    logs = {}
    for name, extra, np_ in [("single", [], []),
                             ("zero3", ["--mesh", "dp=4", "--strategy", "zero3"],
                              ["-np", "4"])]:
        out = os.path.join(work, name)
        run(["loomc", *common, *extra, "-o", out])
        ck = os.path.join(work, f"ckpt-{name}")
        log = step_log(run(["loom-run", *np_, out, "--steps", str(STEPS), "--data", data,
                            "--checkpoint-dir", ck, "--checkpoint-every", "1"]))
        logs[name] = log
        if sorted(log) != list(range(STEPS)):
            fail(f"{name}: step lines {sorted(log)}")
        skipped = [s for s in log if "step skipped" in log[s][1]]
        if skipped != [FORCE]:
            fail(f"{name}: skipped steps {skipped}, expected [{FORCE}]")
        got = scales_from_notes(log, INIT)
        saved = [float(checkpoint.load(os.path.join(ck, f"step-{s + 1:08d}"))["amp.loss_scale"])
                 for s in range(STEPS)]
        if got != want or saved != want:
            fail(f"{name}: scales {got} (log), {saved} (checkpoints), expected {want}")
        print(f"{name}: skipped steps {skipped}; scale after each step {got}: "
              f"equal to GradScaler's rules (log and checkpoints)")
        # The skipped step moved nothing, on any rank; the others did.
        for s in range(1, STEPS):
            before = checkpoint.load(os.path.join(ck, f"step-{s:08d}"))
            after = checkpoint.load(os.path.join(ck, f"step-{s + 1:08d}"))
            moved = [k for k in before if k not in COUNTERS
                     and not np.array_equal(before[k], after[k])]
            if s == FORCE and moved:
                fail(f"{name}: skipped step {s} changed {moved}")
            if s != FORCE and "fc1.weight" not in moved:
                fail(f"{name}: step {s} did not update fc1.weight")
            if s == FORCE:
                print(f"{name}: step {s} skipped on every rank: all "
                      f"{len(before) - len(COUNTERS)} weights and optimizer states "
                      f"bit-identical before and after")
        # Updates applied: every step but the skipped one.
        last = checkpoint.load(os.path.join(ck, f"step-{STEPS:08d}"))
        if int(last["amp.updates"]) != STEPS - 1 or int(last["optimizer.step"]) != STEPS:
            fail(f"{name}: amp.updates {last['amp.updates']}, optimizer.step "
                 f"{last['optimizer.step']}")
    # Both runs computed the same losses up to the reduction order.
    rel = max(abs(logs["zero3"][s][0] - logs["single"][s][0]) / abs(logs["single"][s][0])
              for s in range(STEPS) if s != FORCE)
    if rel > 1e-3:
        fail(f"zero3 and single losses differ by {rel:.1e} (limit 1e-3)")
    print(f"zero3 vs single: max loss rel difference {rel:.1e} (limit 1e-3)")

    # Resume: the scaler's state comes back from the checkpoint.
    out = os.path.join(work, "zero3")
    ck = os.path.join(work, "ckpt-stop")
    run(["loom-run", "-np", "4", out, "--steps", "4", "--data", data, "--checkpoint-dir", ck])
    resumed = step_log(run(["loom-run", "-np", "4", out, "--steps", str(STEPS), "--data", data,
                            "--resume", ck]))
    for s in range(4, STEPS):
        if resumed.get(s) != logs["zero3"][s]:
            fail(f"resumed step {s}: {resumed.get(s)} != uninterrupted {logs['zero3'][s]}")
    print(f"resume: zero3 stopped after 4 steps and resumed: steps 4-{STEPS - 1} "
          f"bit-identical, loss-scale notes included")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
