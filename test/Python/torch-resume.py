# loom.compile's artifact trains in pieces: 2 steps with a checkpoint, then
# resumed to 4 on 2 ranks, gives the losses and weights of 4 steps at once.
# RUN: rm -rf %t && %python %s %t | FileCheck %s

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import loom

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
xs, ys = torch.randn(4, 6, 8), torch.randint(0, 4, (4, 6))


def compile_(out, mesh=None):
    return loom.compile(model, F.cross_entropy, torch.optim.AdamW(model.parameters(), lr=1e-2),
                        (xs[0], ys[0]), mesh=mesh, strategy="dp" if mesh else None, out=out)


whole = compile_(sys.argv[1] + "/whole").train((xs, ys), steps=4)
art = compile_(sys.argv[1] + "/pieces", mesh="dp=2")
first = art.train((xs, ys), steps=2, checkpoint_every=2)
rest = art.train((xs, ys), steps=4, resume=True)
# CHECK: steps 4 = 2 + 2: True
print(f"steps {len(whole)} = {len(first)} + {len(rest)}:", len(first) == 2 and len(rest) == 2)
# CHECK: same losses: True
print("same losses:", all(abs(a - b) <= 1e-5 * abs(a) for a, b in zip(whole, first + rest)))
trained = art.load_state_dict()
# CHECK: trained weights differ from the initial: True
print("trained weights differ from the initial:",
      any((trained[k] - v).abs().max() > 1e-4 for k, v in model.state_dict().items()))
