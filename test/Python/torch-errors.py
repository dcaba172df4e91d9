# loom.torch's errors name the aten op and the user's source line; loomc's
# come back as loom.LoomError with its message.
# RUN: rm -rf %t && %python %s %t | FileCheck %s

import sys

import torch
import torch.nn as nn

import loom
from loom.torch import UnsupportedOp, trace


class CumSum(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return torch.cumsum(x * self.w, 0)  # the line the error names


def loss_fn(out, y):
    return ((out - y) ** 2).mean()


x, y = torch.randn(4), torch.randn(4)
# CHECK: UnsupportedOp aten.cumsum.default
# CHECK-SAME: aten op aten.cumsum.default is not supported
# CHECK-SAME: torch-errors.py:20: `return torch.cumsum(x * self.w, 0)  # the line the error names`
try:
    trace(CumSum(), loss_fn, (x, y))
except UnsupportedOp as e:
    print("UnsupportedOp", e.op, str(e))

# CHECK: LoomError
# CHECK-SAME: also an error
class Detached(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return x * self.w.detach() * self.w  # also an error


try:
    loom.compile(Detached(), loss_fn, torch.optim.SGD(Detached().parameters(), lr=0.1),
                 (x, y), out=sys.argv[1] + "/detach")
except loom.LoomError as e:
    print("LoomError", e)

# A mesh whose devices the batch cannot be split over is loomc's error.
# CHECK: LoomError loomc failed:
# CHECK-SAME: needs a batch divisible by 3
class Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


m = Linear()
try:
    loom.compile(m, loss_fn, torch.optim.Adam(m.parameters()), (torch.randn(2, 4), torch.randn(2, 4)),
                 mesh="dp=3", strategy="dp", out=sys.argv[1] + "/dp3")
    print("compiled")
except loom.LoomError as e:
    print("LoomError", str(e).replace("\n", " ")[:300])

# Optimizers Loom does not run are named.
# CHECK: LoomError optimizer RMSprop is not supported (SGD, Adam and AdamW are)
try:
    loom.compile(m, loss_fn, torch.optim.RMSprop(m.parameters()), (torch.randn(2, 4), torch.randn(2, 4)),
                 out=sys.argv[1] + "/rms")
except loom.LoomError as e:
    print("LoomError", e)

# autodiff="pytorch" traces SGD only (1.13's Adam reads step.item()), and
# says which op's backward it cannot import yet.
# CHECK: LoomError loom.torch: autodiff='pytorch' traces torch.optim.SGD only, not AdamW
try:
    loom.compile(m, loss_fn, torch.optim.AdamW(m.parameters()), (torch.randn(2, 4), torch.randn(2, 4)),
                 autodiff="pytorch", out=sys.argv[1] + "/adamw")
except loom.LoomError as e:
    print("LoomError", e)


class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(x)


n = Normed()
# CHECK: LoomError loom.torch: result 1 of aten.native_batch_norm.default is not supported
# CHECK-SAME: use autodiff='loom'
try:
    loom.compile(n, loss_fn, torch.optim.SGD(n.parameters(), lr=0.1), (torch.randn(3, 4), torch.randn(3, 4)),
                 autodiff="pytorch", out=sys.argv[1] + "/bn")
except loom.LoomError as e:
    print("LoomError", e)
