#!/usr/bin/env python3
"""Float64 models keep float64's precision through loom.compile.

    torch_float64_test.py WORK_DIR

A BatchNorm1d and a LayerNorm on data whose variance is about their
epsilon (1e-5), and a constant (1/3) in the forward, in float64: every
parameter after one SGD step equals PyTorch float64's to 1e-12 of the
tensor's largest element or 1 (the loss to the 9 digits loom-run prints). With epsilons held as float32 attributes (9.99999974e-6) and
constants printed with 9 digits, as before, the normalizations differ by
about 1e-9. Prints PASS/FAIL; exits 1 on a failure.
"""

import copy
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import loom  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.bn = nn.BatchNorm1d(6)
        self.ln = nn.LayerNorm(6)

    def forward(self, x):
        return self.ln(self.bn(self.fc(x)) * (1.0 / 3.0))


def main():
    torch.manual_seed(0)
    model = Net().double().train()
    with torch.no_grad():  # outputs of fc with a variance of about 1e-5
        model.fc.weight.mul_(3e-3)
        model.fc.bias.zero_()
    x = torch.randn(16, 6, dtype=torch.float64)
    y = torch.randn(16, 6, dtype=torch.float64)
    ref = copy.deepcopy(model)
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    loss = nn.functional.mse_loss(ref(x), y)
    loss.backward()
    opt.step()
    art = loom.compile(model, nn.functional.mse_loss, torch.optim.SGD(model.parameters(), lr=0.1),
                       (x, y), out=os.path.join(sys.argv[1], "f64"))
    got = art.train((x[None], y[None]), steps=1)[0]
    state = art.load_state_dict()
    # The loss as loom-run prints it (9 digits); the parameters exactly.
    rel = abs(got - loss.item()) / abs(loss.item())
    # fc.bias gets a gradient of rounding noise only (the batch norm
    # removes the mean): the scale is at least 1.
    worst, where = max((float((state[k] - v).abs().max() / max(float(v.abs().max()), 1.0)), k)
                       for k, v in ref.named_parameters())
    ok = rel < 1e-8 and worst < 1e-12
    print(f"{'PASS' if ok else 'FAIL'} float64: loss {got!r} vs PyTorch {loss.item()!r} "
          f"({rel:.1e} relative), parameters within {worst:.1e} of each tensor's largest "
          f"(worst {where}) after one SGD step")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
