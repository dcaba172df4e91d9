#!/usr/bin/env python3
"""Dropout with p > 0 as users write it, traced by loom.compile and trained.

    torch_dropout_test.py WORK_DIR

torch 1.13 traces nn.Dropout / F.dropout on the CPU as empty_like +
bernoulli_(1 - p) + div_(1 - p) + mul, which loom.torch imports as Loom's
seeded dropout mask. PyTorch's random stream cannot be reproduced, so the
checks are exact where the mask is known and statistical where it is not:

* mask: y = dropout(x * w) with x = w = t = 1 (64 x 64) and the loss
  sum(y * t): the loss is (kept elements) / 0.75 exactly, the kept
  fraction is 0.75 within 4.4 standard deviations, and after one SGD step
  every weight is 1 (dropped) or 1 - lr / 0.75 (kept), as many kept as the
  loss counted: the backward pass used the forward's mask.
* fresh masks: after two steps the weights take three values (dropped
  twice, once, never), about 0.0625 / 0.375 / 0.5625 of them.
* data parallel: the same two steps on dp=2 (two ranks) give the same
  weights bit for bit (the mask is counter-based over the whole batch);
  an MLP with dropout under --micro-batches 2, dp=2 and both trains as one
  device does (1e-5 losses, 1e-6 weights).
* a real model: nn.TransformerEncoderLayer with its default dropout (0.1)
  and a linear head traces, trains 3 AdamW steps with finite losses, and
  its IR has the four dropouts (attention, two residuals, the
  feed-forward); on dp=2 and dp=2 x tp=2 its losses equal one device's
  (1e-5 relative: the same masks, gradients summed in another order).

Prints PASS/FAIL lines; exits 1 on a failure.
"""

import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import loom  # noqa: E402

N = 64
P = 0.25
LR = 0.1


class Drop(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(N, N))
        self.drop = nn.Dropout(P)

    def forward(self, x):
        return self.drop(x * self.w)


def loss_fn(y, t):
    return (y * t).sum()


def check(name, ok, detail):
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
    return ok


def weights_after(work, tag, steps, mesh=None):
    model = Drop().train()
    batch = (torch.ones(N, N), torch.ones(N, N))
    art = loom.compile(model, loss_fn, torch.optim.SGD(model.parameters(), lr=LR), batch,
                       out=os.path.join(work, tag), mesh=mesh, strategy="dp" if mesh else None)
    data = tuple(torch.stack([b] * steps) for b in batch)
    losses = art.train(data, steps=steps)
    return losses, art.load_state_dict()["w"].double().numpy(), art


def main():
    work = sys.argv[1]
    ok = True
    keep = 1 - P
    step = LR / keep

    losses, w, art = weights_after(work, "one", 1)
    text = open(os.path.join(work, "one", "source", "model.mlir")).read()
    ok &= check("traced", "loom.dropout" in text and "ratio = 2.5" in text,
                "nn.Dropout(0.25) imported as loom.dropout ratio 0.25"
                if "loom.dropout" in text else "no loom.dropout in the IR")
    kept_loss = losses[0] * keep
    n = N * N
    frac = kept_loss / n
    sigma = (keep * P / n) ** 0.5
    # The loss sums kept / 0.75 in float32: within 1e-5 of the count.
    ok &= check("mask", abs(kept_loss - round(kept_loss)) < 1e-5 * n and abs(frac - keep) < 4.4 * sigma,
                f"loss {losses[0]:.4f} = {kept_loss:.3f} kept / 0.75; kept fraction {frac:.4f} "
                f"(0.75 +- {4.4 * sigma:.4f})")
    dropped = np.isclose(w, 1.0, atol=1e-6)
    kept = np.isclose(w, 1.0 - step, atol=1e-6)
    ok &= check("backward mask", bool((dropped | kept).all()) and int(kept.sum()) == round(kept_loss),
                f"weights 1 ({int(dropped.sum())}) or 1 - lr/0.75 ({int(kept.sum())}), "
                f"{int((~(dropped | kept)).sum())} other; the forward kept {round(kept_loss)}")

    _, w2, _ = weights_after(work, "two", 2)
    counts = [int(np.isclose(w2, 1.0 - k * step, atol=1e-6).sum()) for k in range(3)]
    expect = [P * P, 2 * P * keep, keep * keep]
    ok &= check("fresh masks", sum(counts) == n and all(
        abs(c / n - e) < 0.05 for c, e in zip(counts, expect)),
        f"after 2 steps dropped twice/once/never: {counts} of {n} (expected about "
        f"{[round(e * n) for e in expect]})")

    _, wdp, _ = weights_after(work, "dp2", 2, mesh="dp=2")
    ok &= check("dp=2", np.array_equal(w2, wdp),
                "two ranks give the one device's weights bit for bit" if np.array_equal(w2, wdp)
                else f"differ in {int((w2 != wdp).sum())} weights")

    # An MLP with dropout: micro-batches (each draws its rows of the whole
    # batch's mask), dp=2 and both at once train as one device does.
    torch.manual_seed(0)
    xm, ym = torch.randn(64, 16), torch.randn(64, 4)

    def mlp(tag, mesh=None, extra=()):
        torch.manual_seed(1)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.3),
                              nn.Linear(32, 4)).train()
        art = loom.compile(model, nn.functional.mse_loss,
                           torch.optim.SGD(model.parameters(), lr=0.1), (xm, ym),
                           out=os.path.join(work, tag), mesh=mesh,
                           strategy="dp" if mesh else None, extra_args=extra)
        got = art.train((torch.stack([xm] * 2), torch.stack([ym] * 2)), steps=2)
        return got, art.load_state_dict()["0.weight"].double().numpy()
    base = mlp("mlp")
    for tag, mesh, extra in (("mlp-mb2", None, ("--micro-batches", "2")),
                             ("mlp-dp2", "dp=2", ()),
                             ("mlp-dp2-mb2", "dp=2", ("--micro-batches", "2"))):
        got = mlp(tag, mesh, extra)
        rel = max(abs(a - b) / abs(b) for a, b in zip(got[0], base[0]))
        diff = float(np.abs(got[1] - base[1]).max())
        ok &= check(tag, rel < 1e-5 and diff < 1e-6,
                    f"losses within {rel:.1e} and fc1.weight within {diff:.1e} of one device's")

    # nn.Dropout2d (whole channels; bernoulli_ with its default p = 0.5 on
    # an [N, C, 1, 1] new_empty): one device and dp=2 agree.
    xc, yc = torch.randn(8, 4, 6, 6), torch.randn(8, 2)

    def channels(tag, mesh=None):
        torch.manual_seed(1)
        model = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.Dropout2d(0.5),
                              nn.Flatten(), nn.Linear(144, 2)).train()
        art = loom.compile(model, nn.functional.mse_loss,
                           torch.optim.SGD(model.parameters(), lr=0.1), (xc, yc),
                           out=os.path.join(work, tag), mesh=mesh,
                           strategy="dp" if mesh else None)
        got = art.train((torch.stack([xc] * 2), torch.stack([yc] * 2)), steps=2)
        return got, art.load_state_dict()["0.weight"].double().numpy()
    one, two = channels("dropout2d"), channels("dropout2d-dp2", "dp=2")
    rel = max(abs(a - b) / abs(b) for a, b in zip(two[0], one[0]))
    diff = float(np.abs(two[1] - one[1]).max())
    ok &= check("dropout2d dp=2", rel < 1e-5 and diff < 1e-6,
                f"losses {', '.join(f'{v:.6f}' for v in one[0])}; dp=2 within {rel:.1e}, "
                f"conv weight within {diff:.1e}")

    torch.manual_seed(0)
    enc = nn.Sequential(nn.TransformerEncoderLayer(16, 2, 32, batch_first=True),
                        nn.Flatten(), nn.Linear(8 * 16, 4)).train()
    x = torch.randn(6, 8, 16)
    y = torch.randn(6, 4)
    art = loom.compile(enc, nn.functional.mse_loss, torch.optim.AdamW(enc.parameters(), lr=1e-3),
                       (x, y), out=os.path.join(work, "encoder"))
    text = open(os.path.join(work, "encoder", "source", "model.mlir")).read()
    drops = text.count("loom.dropout")
    losses = art.train((torch.stack([x] * 3), torch.stack([y] * 3)), steps=3)
    ok &= check("encoder", drops == 4 and all(np.isfinite(losses)),
                f"TransformerEncoderLayer(dropout=0.1): {drops} dropouts, losses "
                f"{', '.join(f'{v:.4f}' for v in losses)}")
    for mesh, strategy in (("dp=2", "dp"), ("dp=2,tp=2", "dp-tp")):
        tag = "encoder-" + mesh.replace("=", "").replace(",", "-")
        art = loom.compile(enc, nn.functional.mse_loss,
                           torch.optim.AdamW(enc.parameters(), lr=1e-3), (x, y),
                           out=os.path.join(work, tag), mesh=mesh, strategy=strategy)
        dist = art.train((torch.stack([x] * 3), torch.stack([y] * 3)), steps=3)
        rel = max(abs(a - b) / abs(b) for a, b in zip(dist, losses))
        ok &= check(f"encoder {mesh}", rel < 1e-5,
                    f"{strategy}: losses {', '.join(f'{v:.6f}' for v in dist)}, within "
                    f"{rel:.1e} of one device's (the same dropout masks)")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
