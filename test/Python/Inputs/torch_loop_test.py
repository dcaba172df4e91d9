#!/usr/bin/env python3
"""What a training loop does around optimizer.step(), given to loom.compile:
gradient clipping (grad_clip=max_norm: torch.nn.utils.clip_grad_norm_) and a
learning-rate scheduler (lr_scheduler=CosineAnnealingLR), against the same
PyTorch loop: 6 AdamW steps of an MLP (the cosine over 4 steps, then rising
again as PyTorch's does), every loss and the final parameters within 1e-5.
Unsupported schedulers are errors naming them.

    torch_loop_test.py WORK_DIR
"""

import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import loom  # noqa: E402


def main():
    work = sys.argv[1]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    steps = 6
    xs = torch.randn(steps, 32, 8) * 4
    ys = torch.randn(steps, 32, 4) * 4
    ref = copy.deepcopy(model)
    opt = torch.optim.AdamW(ref.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    want = []
    for x, y in zip(xs, ys):
        opt.zero_grad()
        loss = nn.functional.mse_loss(ref(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
        opt.step()
        sched.step()
        want.append(loss.item())
    ok = True
    opt2 = torch.optim.AdamW(model.parameters(), lr=0.05)
    art = loom.compile(model, nn.functional.mse_loss, opt2, (xs[0], ys[0]),
                       out=os.path.join(work, "loop"), grad_clip=0.5,
                       lr_scheduler=torch.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=4))
    got = art.train((xs, ys), steps=steps)
    state = art.load_state_dict()
    rel = max(abs(a - b) / abs(b) for a, b in zip(got, want))
    diff = max(float((state[k] - v).abs().max()) for k, v in ref.named_parameters())
    good = rel < 1e-5 and diff < 1e-5
    ok &= good
    print(f"{'PASS' if good else 'FAIL'} clip+cosine: losses "
          f"{', '.join(f'{v:.5f}' for v in got)} vs PyTorch {', '.join(f'{v:.5f}' for v in want)} "
          f"({rel:.1e}); parameters within {diff:.1e}", flush=True)
    # Without clipping the same run differs: the clip is applied.
    m2 = copy.deepcopy(model)
    art2 = loom.compile(m2, nn.functional.mse_loss, torch.optim.AdamW(m2.parameters(), lr=0.05),
                        (xs[0], ys[0]), out=os.path.join(work, "noclip"))
    plain = art2.train((xs, ys), steps=steps)
    differs = max(abs(a - b) for a, b in zip(plain, got)) > 1e-4
    ok &= differs
    print(f"{'PASS' if differs else 'FAIL'} the flags change the run: losses without them "
          f"{', '.join(f'{v:.5f}' for v in plain)}", flush=True)
    for name, make in (("StepLR", lambda o: torch.optim.lr_scheduler.StepLR(o, 2)),
                       ("eta_min", lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 4, eta_min=1e-3))):
        o = torch.optim.AdamW(model.parameters(), lr=0.05)
        try:
            loom.compile(model, nn.functional.mse_loss, o, (xs[0], ys[0]),
                         out=os.path.join(work, name), lr_scheduler=make(o))
            print(f"FAIL {name}: accepted", flush=True)
            ok = False
        except loom.LoomError as e:
            print(f"PASS refused {name}: {e}", flush=True)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
